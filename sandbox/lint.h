/* `coil check`'s Python half: the static gate alone on a file. */
#ifndef COIL_LINT_H
#define COIL_LINT_H

#include "error.h"

/* Reads path ("-": stdin) up to the gate's source limit, starts the
 * interpreter (the host's /usr) and runs the gate on it; prints each
 * violation as "NAME:LINE:COL: message" on stdout. Returns how many there
 * were, or -1 with err. The interpreter is left to die with the process:
 * finalising costs milliseconds and frees nothing the exit does not. */
int lint_file(const char *path, const char *name, struct coil_error *err);

#endif
