/* One message carrying file descriptors (SCM_RIGHTS) over a unix socket:
 * the console socket, coil serve's jobs and replies. */
#ifndef COIL_FDPASS_H
#define COIL_FDPASS_H

#include <stddef.h>
#include <sys/types.h>

/* The most fds one message carries here. */
#define FDPASS_MAX 4

/* Sends the len bytes of buf and the n fds of fds (n may be 0, at most
 * FDPASS_MAX) as one message, with sendmsg's flags plus MSG_NOSIGNAL;
 * 0 when all of it went, -1 with errno otherwise. */
int fdpass_send(int sock, const void *buf, size_t len, const int *fds, size_t n,
                int flags);

/* Receives one message into buf (at most len bytes) and its fds into fds
 * (at most max, close-on-exec; *n says how many came, the rest are -1),
 * with recvmsg's flags, EINTR retried. Its size (0 at end of stream), or
 * -1 with errno. */
ssize_t fdpass_recv(int sock, void *buf, size_t len, int *fds, size_t max,
                    size_t *n, int flags);

#endif
