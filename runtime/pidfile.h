/* --pid-file of create, run and exec. */
#ifndef COIL_PIDFILE_H
#define COIL_PIDFILE_H

#include <sys/types.h>

#include "error.h"

/* Writes pid to path the way runc does: never through a link planted at
 * the path or beside it. Errors name --pid-file. */
int pidfile_write(const char *path, pid_t pid, struct coil_error *err);

#endif
