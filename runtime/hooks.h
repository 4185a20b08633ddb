/* OCI hooks: each runs with the container state JSON on stdin; a timeout
 * kills it. Output is captured and quoted in the error on failure. */
#ifndef COIL_HOOKS_H
#define COIL_HOOKS_H

#include "config.h"
#include "error.h"

/* Runs every hook of `kind` in order; stops at the first failure. */
int hooks_run(const struct coil_config *cfg, enum coil_hook_kind kind,
              const char *state_json, struct coil_error *err);

/* Runs every hook of `kind`, each failure only a warning (poststop: the
 * runtime spec has the remaining hooks and the lifecycle go on). */
void hooks_run_all(const struct coil_config *cfg, enum coil_hook_kind kind,
                   const char *state_json);

#endif
