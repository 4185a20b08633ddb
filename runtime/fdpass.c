#include "fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

union fdpass_cmsg {
  char buf[CMSG_SPACE(sizeof(int) * FDPASS_MAX)];
  struct cmsghdr align;
};

int fdpass_send(int sock, const void *buf, size_t len, const int *fds, size_t n,
                int flags) {
  if (n > FDPASS_MAX) {
    errno = EINVAL;
    return -1;
  }
  struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
  union fdpass_cmsg u;
  memset(&u, 0, sizeof u);
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
  if (n) {
    m.msg_control = u.buf;
    m.msg_controllen = CMSG_SPACE(sizeof(int) * n);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * n);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
  }
  ssize_t w = sendmsg(sock, &m, flags | MSG_NOSIGNAL);
  if (w >= 0 && (size_t)w != len)
    errno = EMSGSIZE;
  return w >= 0 && (size_t)w == len ? 0 : -1;
}

ssize_t fdpass_recv(int sock, void *buf, size_t len, int *fds, size_t max,
                    size_t *n, int flags) {
  struct iovec iov = {.iov_base = buf, .iov_len = len};
  union fdpass_cmsg u;
  struct msghdr m = {.msg_iov = &iov,
                     .msg_iovlen = 1,
                     .msg_control = u.buf,
                     .msg_controllen = sizeof u.buf};
  for (size_t i = 0; i < max; i++)
    fds[i] = -1;
  *n = 0;
  ssize_t r;
  do
    r = recvmsg(sock, &m, flags | MSG_CMSG_CLOEXEC);
  while (r < 0 && errno == EINTR);
  struct cmsghdr *c = r >= 0 ? CMSG_FIRSTHDR(&m) : NULL;
  if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
    size_t got = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    int in[FDPASS_MAX];
    memcpy(in, CMSG_DATA(c),
           sizeof(int) * (got < FDPASS_MAX ? got : FDPASS_MAX));
    for (size_t i = 0; i < got && i < FDPASS_MAX; i++) {
      if (i < max)
        fds[i] = in[i];
      else
        close(in[i]);
    }
    *n = got < max ? got : max;
  }
  return r;
}
