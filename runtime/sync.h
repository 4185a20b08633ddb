/* The parent <-> init message channel (a SOCK_SEQPACKET pair): one message
 * per step, so neither side can run ahead of the other. */
#ifndef COIL_SYNC_H
#define COIL_SYNC_H

#include <stddef.h>

#include "error.h"

enum coil_sync_msg {
  SYNC_GO =
      1,      /* parent -> init: ids mapped, cgroup joined; payload: host pid */
  SYNC_HOOKS, /* init -> parent: run prestart/createRuntime now */
  SYNC_HOOKS_DONE, /* parent -> init */
  SYNC_READY,      /* init -> parent: waiting for start */
  SYNC_ERROR,      /* either way: payload is the error message */
};

int sync_send(int fd, enum coil_sync_msg type, const char *payload,
              struct coil_error *err);
/* Receives one message; EOF is reported as an error "init exited". */
int sync_recv(int fd, enum coil_sync_msg *type, char *payload, size_t cap,
              struct coil_error *err);
/* Receives and requires `want`; a SYNC_ERROR becomes the error. */
int sync_expect(int fd, enum coil_sync_msg want, char *payload, size_t cap,
                struct coil_error *err);

#endif
