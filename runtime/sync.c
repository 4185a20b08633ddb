#include "sync.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct sync_wire {
  unsigned char type;
  char payload[1023];
};

int sync_send(int fd, enum coil_sync_msg type, const char *payload,
              struct coil_error *err) {
  struct sync_wire w = {.type = (unsigned char)type};
  size_t len = 0;
  if (payload) {
    len = strnlen(payload, sizeof w.payload - 1);
    memcpy(w.payload, payload, len);
  }
  ssize_t r;
  do
    r = send(fd, &w, 1 + len, MSG_NOSIGNAL);
  while (r < 0 && errno == EINTR);
  if (r < 0)
    return coil_error_sys(err, errno, "sync: send");
  return 0;
}

int sync_recv(int fd, enum coil_sync_msg *type, char *payload, size_t cap,
              struct coil_error *err) {
  struct sync_wire w;
  ssize_t r;
  do
    r = recv(fd, &w, sizeof w, 0);
  while (r < 0 && errno == EINTR);
  if (r < 0)
    return coil_error_sys(err, errno, "sync: recv");
  if (r == 0)
    return coil_error_set(err, EPIPE, "container init exited during setup");
  *type = (enum coil_sync_msg)w.type;
  if (payload && cap) {
    size_t len = (size_t)r - 1 < cap - 1 ? (size_t)r - 1 : cap - 1;
    memcpy(payload, w.payload, len);
    payload[len] = '\0';
  }
  return 0;
}

int sync_expect(int fd, enum coil_sync_msg want, char *payload, size_t cap,
                struct coil_error *err) {
  enum coil_sync_msg got;
  char buf[1024];
  if (sync_recv(fd, &got, buf, sizeof buf, err) < 0)
    return -1;
  if (got == SYNC_ERROR)
    return coil_error_set(err, EIO, "%s", buf);
  if (got != want)
    return coil_error_set(err, EPROTO, "sync: unexpected message %d (want %d)",
                          (int)got, (int)want);
  if (payload && cap) {
    strncpy(payload, buf, cap - 1);
    payload[cap - 1] = '\0';
  }
  return 0;
}
