/* coil serve's template: the regular expressions accepted handler code
 * writes as literals, compiled once per code version into the re module's
 * cache so that each child finds them there (regex_warm.py). Only literal
 * data is used; no user code runs. */
#ifndef COIL_REGEX_WARM_H
#define COIL_REGEX_WARM_H

#include <Python.h>

#include "error.h"

/* Compiles the literal patterns of the accepted source src (a str); the
 * number kept in re's cache, or -1 with err set. Needs the GIL and the re
 * module importable, in the trusted phase. */
int regex_warm(PyObject *src, struct coil_error *err);

#endif
