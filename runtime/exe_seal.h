/* Running from a sealed copy of coil, so no container can reach the host's
 * binary through /proc/PID/exe (CVE-2019-5736): container init is a clone of
 * coil, and in Python sandbox mode it never execs. */
#ifndef COIL_EXE_SEAL_H
#define COIL_EXE_SEAL_H

#include <stdbool.h>

#include "error.h"

/* Returns 0 when /proc/self/exe is already a sealed memfd. Otherwise copies
 * it into one, seals it and re-executes it with argv and the environment,
 * and does not return; -1 with err when that fails. Only the seals of the
 * running binary decide: nothing in the environment can skip the copy. */
int exe_seal_ensure(char **argv, struct coil_error *err);

/* The path of the binary coil was started from: remembered across the
 * re-exec, for files installed next to it. NULL when unknown. */
const char *exe_seal_origin(void);

#endif
