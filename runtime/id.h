/* Container ids name a directory under --root, so they are checked before
 * they touch any path. */
#ifndef COIL_ID_H
#define COIL_ID_H

#include "error.h"

#define COIL_ID_MAX 1024

/* Accepts 1..1024 bytes of [A-Za-z0-9_.+-], not "." or "..". */
int id_validate(const char *id, struct coil_error *err);

#endif
