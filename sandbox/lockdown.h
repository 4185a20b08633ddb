/* The two lockdown stages of Python mode. Filters and rulesets stack and
 * only tighten, so stage 2 is added on top of stage 1. */
#ifndef COIL_LOCKDOWN_H
#define COIL_LOCKDOWN_H

#include <stdbool.h>

#include "error.h"

struct lockdown_opts {
  bool landlock; /* the layer is on */
  bool seccomp;
  const char *readable_root; /* stage 1 Landlock: read-only beneath this */
};

/* Before the hostile source is parsed: Landlock read-only on the rootfs and
 * nothing else; seccomp denies (EPERM) the network, process creation,
 * privilege, mount, namespace, ptrace, bpf, keyring and io_uring families. */
int lockdown_stage1(const struct lockdown_opts *o, struct coil_error *err);

/* Before the user code runs: Landlock with no filesystem rights; a
 * default-deny seccomp allowlist of what the interpreter still needs,
 * killing the process on anything else. */
int lockdown_stage2(const struct lockdown_opts *o, struct coil_error *err);

#endif
