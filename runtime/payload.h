/* A payload runs in the container's init instead of execve(process.args):
 * Python sandbox mode (sandbox/) is one. The runtime knows only this
 * interface; cmd/ chooses the payload, so runtime/ never includes a sandbox
 * header. */
#ifndef COIL_PAYLOAD_H
#define COIL_PAYLOAD_H

#include <stdbool.h>

#include "config.h"
#include "error.h"

/* Runs in init after the privilege drop both modes share (init.c), with the
 * start connection still open: the payload closes start_conn once it is
 * ready to answer for itself (`coil start` returns then), and never
 * returns. */
typedef void (*payload_run_fn)(void *arg, int start_conn)
    __attribute__((noreturn));

struct coil_payload {
  payload_run_fn run; /* NULL: no payload, process.args is executed */
  void *arg;
  bool keep_ids_and_caps; /* init neither switches ids nor drops caps */
  bool no_pivot;          /* no mount namespace and no pivot_root */
  bool no_cgroup;         /* no cgroup is created */
  bool own_seccomp;       /* linux.seccomp is not loaded: the payload's is */
  bool relay_stdout;      /* run/py relay init's fd 1 through a pipe */
  bool relay_duplex;      /* that relay is a seqpacket socketpair instead,
                           * a two-way channel (coil serve's templates) */
  bool proc_fd;           /* init_proc_fd(): a procfs of the container's
                           * PID namespace, for the payload's own use */
};

/* Called by create with the parsed config before anything exists. May edit
 * cfg; leaves *p zeroed when the bundle needs no payload. */
typedef int (*payload_prepare_fn)(void *arg, struct coil_config *cfg,
                                  const char *bundle, const char *rootfs,
                                  struct coil_payload *p,
                                  struct coil_error *err);

#endif
