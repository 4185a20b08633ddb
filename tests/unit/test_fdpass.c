/* fdpass: one message with its fds over a unix socket, as the console
 * socket and coil serve's jobs use it. */
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fdpass.h"
#include "tap.h"

static bool cloexec(int fd) { return (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0; }

/* A pipe's read end, the write end written "x" and closed. */
static int pipe_with_x(void) {
  int p[2];
  if (pipe(p) < 0 || write(p[1], "x", 1) != 1)
    return -1;
  close(p[1]);
  return p[0];
}

static bool reads_x(int fd) {
  char c = 0;
  return read(fd, &c, 1) == 1 && c == 'x';
}

static void test_message_and_fds(void) {
  int sv[2];
  ok(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0, "socketpair");
  int out[2] = {pipe_with_x(), pipe_with_x()};
  ok(fdpass_send(sv[0], "hello", 5, out, 2, 0) == 0, "sends 5 bytes and 2 fds");
  close(out[0]);
  close(out[1]);
  char buf[16] = "";
  int in[3];
  size_t n = 9;
  ok(fdpass_recv(sv[1], buf, sizeof buf, in, 3, &n, 0) == 5 &&
         memcmp(buf, "hello", 5) == 0,
     "receives the message");
  ok(n == 2 && in[2] == -1, "two fds came, the third slot is -1");
  ok(reads_x(in[0]) && reads_x(in[1]), "each fd is the pipe sent, in order");
  ok(cloexec(in[0]) && cloexec(in[1]), "received fds are close-on-exec");
  close(in[0]);
  close(in[1]);

  ok(fdpass_send(sv[0], "no fds", 6, NULL, 0, 0) == 0, "sends without fds");
  ok(fdpass_recv(sv[1], buf, sizeof buf, in, 1, &n, 0) == 6 && n == 0 &&
         in[0] == -1,
     "a message without fds gives none");

  /* More fds than the receiver takes: the rest are closed, not leaked. */
  int p[2];
  ok(pipe(p) == 0, "pipe");
  int many[3] = {p[1], p[1], p[1]};
  ok(fdpass_send(sv[0], "m", 1, many, 3, 0) == 0, "sends three fds");
  close(p[1]);
  ok(fdpass_recv(sv[1], buf, sizeof buf, in, 1, &n, 0) == 1 && n == 1,
     "takes one of three");
  close(in[0]);
  char c;
  ok(read(p[0], &c, 1) == 0, "the two not taken were closed (EOF)");
  close(p[0]);

  ok(fdpass_send(sv[0], "x", 1, many, FDPASS_MAX + 1, 0) < 0,
     "refuses more than FDPASS_MAX fds");
  close(sv[0]);
  ok(fdpass_recv(sv[1], buf, sizeof buf, in, 1, &n, 0) == 0 && n == 0,
     "end of stream is 0");
  close(sv[1]);
}

int main(void) {
  test_message_and_fds();
  return tap_done();
}
