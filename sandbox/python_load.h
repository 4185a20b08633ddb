/* Loading coil-python.so (python_api.h), once per run and only in a run
 * that needs Python: Python mode's create, `coil check`, `coil --version`. */
#ifndef COIL_PYTHON_LOAD_H
#define COIL_PYTHON_LOAD_H

#include "error.h"
#include "python_api.h"

/* The object's table, loading it on the first call: from next to the binary
 * coil was started from (exe_seal_origin: a build tree), else from
 * ../lib/coil/ beside it (make install). Refused unless it is a regular
 * file owned by root or the caller and writable by neither group nor
 * others. Mapped from a handle nobody can make writable (exe_seal_handle),
 * as a container's init keeps it mapped. NULL with err naming the path. */
const struct python_api *python_load(struct coil_error *err);

#endif
