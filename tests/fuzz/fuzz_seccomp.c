/* linux.seccomp: the input is the seccomp object, put into a minimal config
 * so mutations stay in the part under test; a config that parses is
 * compiled with libseccomp and exported as BPF, never loaded, all in this
 * process (no deadline child) so the fuzzer sees the coverage. */
#include <fcntl.h>
#include <stdbool.h>
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

/* Debian 12's libseccomp (2.5.4) never finishes merging two rules for one
 * syscall that each compare two or more arguments when a later argument's
 * values differ in their high 32 bits (this fuzzer found it: two mmap rules,
 * arg 3 <= 1 and arg 5 == 1 or == 2^33). That is the library's loop, not
 * coil's code, so such profiles are left out here. */
static bool shares_multi_arg_syscall(const struct coil_seccomp *s) {
  for (size_t i = 0; i < s->n_syscalls; i++)
    for (size_t j = i + 1; s->syscalls[i].n_args >= 2 && j < s->n_syscalls; j++)
      for (size_t a = 0;
           s->syscalls[j].n_args >= 2 && a < s->syscalls[i].names.n; a++)
        for (size_t b = 0; b < s->syscalls[j].names.n; b++)
          if (strcmp(s->syscalls[i].names.v[a], s->syscalls[j].names.v[b]) == 0)
            return true;
  return false;
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
    if (c->has_linux && c->lnx.has_seccomp &&
        !shares_multi_arg_syscall(&c->lnx.seccomp))
      seccomp_profile_export_unbounded(&c->lnx.seccomp, devnull, &err);
    config_free(c);
  }
  free(doc);
  return 0;
}
