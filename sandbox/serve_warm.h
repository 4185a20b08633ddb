/* coil serve's template computes ahead, once, what every child would
 * otherwise compute again (serve_warm.py): the helpers' lazily built state,
 * and the regular expressions accepted code writes as literals, compiled
 * into the re module's cache. Trusted code on constant or literal data
 * only; no user code runs. Only speed depends on it. */
#ifndef COIL_SERVE_WARM_H
#define COIL_SERVE_WARM_H

#include <Python.h>

#include "error.h"

/* Calls the helpers names[0..n) once on constant input, as the user's
 * code would; the number of steps that failed (a helper missing from the
 * rootfs), or -1 with err set. Needs the GIL, after the helpers are
 * imported. */
int serve_warm_helpers(const char *const *names, size_t n,
                       struct coil_error *err);

/* Compiles the literal patterns of the accepted source src (a str); the
 * number kept in re's cache, or -1 with err set. Needs the GIL. */
int serve_warm_regexes(PyObject *src, struct coil_error *err);

#endif
