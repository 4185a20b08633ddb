/* readall: length-prefixed frames as coil serve and coil call exchange them,
 * and exact reads across short reads and an early end of stream. */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "readall.h"
#include "tap.h"

struct reader {
  int fd;
  unsigned char hdr[4];
  char *body;
  size_t len;
  bool ok;
};

static void *read_frame(void *arg) {
  struct reader *r = arg;
  r->ok = read_exact(r->fd, r->hdr, 4) == 0;
  r->len = (size_t)r->hdr[0] << 24 | (size_t)r->hdr[1] << 16 |
           (size_t)r->hdr[2] << 8 | r->hdr[3];
  r->body = malloc(r->len + 1);
  r->ok = r->ok && r->body && read_exact(r->fd, r->body, r->len) == 0;
  return NULL;
}

static void test_frames(void) {
  int sv[2];
  ok(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
  ok(write_frame(sv[0], "hello", 5) == 0, "writes a small frame");
  struct reader r = {.fd = sv[1]};
  read_frame(&r);
  ok(r.ok && r.len == 5 && memcmp(r.body, "hello", 5) == 0,
     "header is the big-endian length, then the bytes");
  free(r.body);

  /* Larger than the socket buffer: writev returns short and resumes. */
  size_t big = 3u << 20;
  char *buf = malloc(big);
  for (size_t i = 0; i < big; i++)
    buf[i] = (char)(i * 31 + 7);
  r = (struct reader){.fd = sv[1]};
  pthread_t th;
  ok(pthread_create(&th, NULL, read_frame, &r) == 0, "reader thread");
  ok(write_frame(sv[0], buf, big) == 0, "writes a 3 MiB frame");
  pthread_join(th, NULL);
  ok(r.ok && r.len == big && memcmp(r.body, buf, big) == 0,
     "the large frame arrives whole and in order");
  free(r.body);
  free(buf);

  close(sv[0]);
  char c;
  ok(read_exact(sv[1], &c, 1) < 0, "read_exact at end of stream fails");
  ok(write_frame(sv[1], "x", 1) < 0, "write_frame to a closed peer fails");
  close(sv[1]);
}

int main(void) {
  /* As in serve and call: a closed peer is an error, not a signal. */
  signal(SIGPIPE, SIG_IGN);
  test_frames();
  return tap_done();
}
