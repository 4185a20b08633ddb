/* process.terminal with --console-socket: init allocates a pty inside the
 * container and sends the master over the caller's unix socket with
 * SCM_RIGHTS, as runc does. */
#ifndef COIL_TERMINAL_H
#define COIL_TERMINAL_H

#include <sys/types.h>

#include "config.h"
#include "error.h"

/* Parent: connects to the console socket path. */
int terminal_connect(const char *path, int *fd, struct coil_error *err);

/* Init, after pivot_root: opens a pty from the container's /dev/ptmx, sends
 * the master over sock, makes the slave the controlling terminal and
 * stdin/stdout/stderr, owned by uid/gid. */
int terminal_setup(int sock, const struct coil_process *p, uid_t uid, gid_t gid,
                   struct coil_error *err);

#endif
