/* Starting the embedded interpreter with the exact isolated configuration of
 * docs/gate.md, Embedding. */
#ifndef COIL_EMBED_H
#define COIL_EMBED_H

#include "error.h"

/* prefix: the directory holding lib/python3.11 ("/usr" inside the rootfs).
 * Call clearenv() before; installs nothing itself (the audit hook must be
 * added before this, so it sees initialisation). */
int embed_init(const char *prefix, struct coil_error *err);

/* Moves the pending Python exception into err ("what: Type: message"),
 * clears it, and returns -1. */
int embed_py_error(struct coil_error *err, const char *what);

#endif
