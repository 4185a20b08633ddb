/* `coil exec`: a new process in a running container, as runc starts one.
 * It joins every namespace of the container's init and its cgroups, then
 * takes the privilege drop init takes (privileges.c), with the
 * container's seccomp profile, and execs. */
#ifndef COIL_EXEC_PROCESS_H
#define COIL_EXEC_PROCESS_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "exec_spec.h"

struct exec_launch {
  const char *root;
  const char *id;
  const struct exec_flags *flags;
  const char *console_socket; /* receives the pty master (terminal) */
  const char *pid_file;
  int preserve_fds; /* fds 3 .. 3+N-1 are passed on */
  bool ignore_paused;
};

/* Returns once the process has exec'd its program (or failed to: then
 * nothing of it is left), with *pid its host pid, a child of the caller.
 * The caller blocks the signals it means to forward before the call: the
 * process unblocks them only after its setup. */
int exec_start(const struct exec_launch *l, pid_t *pid, struct coil_error *err);

#endif
