/* Container ids name a directory under --root, so they are checked before
 * they touch any path. */
#ifndef COIL_ID_H
#define COIL_ID_H

#include <stdbool.h>

#include "error.h"

#define COIL_ID_MAX 1024

/* Accepts 1..1024 bytes of [A-Za-z0-9_.+-], not "." or "..". */
int id_validate(const char *id, struct coil_error *err);

/* Directory name for an id (state dir, default cgroup): the id itself when
 * it fits comfortably in NAME_MAX, else "coil-id=" and a 128-bit hash of it.
 * '=' is not allowed in ids, so no id names another's directory; the real id
 * is kept in state.json and compared on every lookup. */
#define COIL_ID_DIRNAME_MAX 201
void id_dirname(const char *id, char out[COIL_ID_DIRNAME_MAX]);

/* True for a name id_dirname can return. */
bool id_is_dirname(const char *name);

#endif
