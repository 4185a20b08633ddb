/* process.args[0] checked at create, as runc does: a missing or
 * non-executable program fails create, with the words clients match. */
#ifndef COIL_EXECPATH_H
#define COIL_EXECPATH_H

#include "config.h"
#include "error.h"

/* Finds args[0] as execvp will (through the PATH of p->env, relative names
 * against p->cwd) in the current root. Errors read like runc's:
 * "exec /x: no such file or directory", "exec /x: permission denied",
 * "exec: \"x\": executable file not found in $PATH". */
int execpath_check(const struct coil_process *p, struct coil_error *err);

#endif
