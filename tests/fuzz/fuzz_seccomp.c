/* linux.seccomp: the input is the seccomp object, put into a minimal config
 * so mutations stay in the part under test; a config that parses is
 * compiled with libseccomp and exported as BPF, never loaded. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "fuzz.h"
#include "seccomp_profile.h"

static const char head[] =
    "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\"},"
    "\"linux\":{\"seccomp\":";
static const char tail[] = "}}";
static int devnull = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (devnull < 0)
    abort();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t len = sizeof head - 1 + size + sizeof tail - 1;
  char *doc = malloc(len);
  if (!doc)
    return 0;
  memcpy(doc, head, sizeof head - 1);
  memcpy(doc + sizeof head - 1, data, size);
  memcpy(doc + sizeof head - 1 + size, tail, sizeof tail - 1);

  struct coil_config *c = NULL;
  struct coil_error err = {0};
  if (config_parse(doc, len, &c, &err) == 0) {
    struct coil_seccomp_profile *p = NULL;
    if (c->has_linux && c->lnx.has_seccomp &&
        seccomp_profile_build(&c->lnx.seccomp, &p, &err) == 0) {
      seccomp_profile_export(p, devnull, &err);
      seccomp_profile_free(p);
    }
    config_free(c);
  }
  free(doc);
  return 0;
}
