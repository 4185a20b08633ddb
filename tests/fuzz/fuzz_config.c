/* config.json from a buffer: parse and validate, then the parent-side
 * checks create runs on a parsed config before anything exists (mount
 * options, rlimits, capabilities, sysctls, propagation), all free of side
 * effects. */
#include <stdio.h>

#include "caps.h"
#include "config.h"
#include "fuzz.h"
#include "mountopts.h"
#include "rlimits.h"
#include "sysctl.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

static void check_parsed(const struct coil_config *c) {
  struct coil_error err = {0};
  for (size_t i = 0; i < c->n_mounts; i++) {
    char field[32];
    snprintf(field, sizeof field, "mounts[%zu]", i);
    struct coil_mount_opts o = {0};
    if (mountopts_parse(&c->mounts[i].options, field, &o, &err) == 0)
      mountopts_free(&o);
  }
  if (c->has_process) {
    struct coil_rlimits rl;
    rlimits_parse(&c->process, &rl, &err);
    struct coil_caps caps;
    caps_parse(&c->process, &caps, &err);
  }
  if (c->has_linux) {
    sysctl_validate(&c->lnx, &err);
    unsigned long flags;
    if (c->lnx.rootfs_propagation)
      mountopts_propagation(c->lnx.rootfs_propagation, &flags);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct coil_config *c = NULL;
  struct coil_error err = {0};
  if (config_parse((const char *)data, size, &c, &err) == 0) {
    check_parsed(c);
    config_free(c);
  }
  return 0;
}
