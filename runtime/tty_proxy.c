#include "tty_proxy.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fdpass.h"

int tty_receive_master(int sock, int *master, struct coil_error *err) {
  char name[64];
  size_t n;
  if (fdpass_recv(sock, name, sizeof name, master, 1, &n, 0) < 0)
    return coil_error_sys(err, errno, "process.terminal: receive pty master");
  if (n != 1)
    return coil_error_set(err, EPROTO,
                          "process.terminal: init sent no pty master");
  return 0;
}

/* As runc: the caller's streams may be redirected, so any of them that is a
 * terminal will do, and else the controlling terminal. */
static void find_host(struct tty_proxy *t) {
  static const int fds[] = {STDERR_FILENO, STDOUT_FILENO, STDIN_FILENO};
  for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
    if (isatty(fds[i])) {
      t->host = fds[i];
      return;
    }
  t->host = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  t->host_opened = t->host >= 0;
}

int tty_proxy_start(struct tty_proxy *t, int master, struct coil_error *err) {
  t->master = master;
  t->in = STDIN_FILENO;
  int fl = fcntl(master, F_GETFL);
  if (fl < 0 || fcntl(master, F_SETFL, fl | O_NONBLOCK) < 0)
    return coil_error_sys(err, errno, "process.terminal: pty master");
  find_host(t);
  if (t->host < 0)
    return 0;
  if (tcgetattr(t->host, &t->saved) == 0) {
    struct termios raw = t->saved;
    cfmakeraw(&raw);
    t->raw = tcsetattr(t->host, TCSANOW, &raw) == 0;
  }
  tty_proxy_resize(t);
  return 0;
}

void tty_proxy_resize(struct tty_proxy *t) {
  struct winsize ws;
  if (t->host >= 0 && t->master >= 0 && ioctl(t->host, TIOCGWINSZ, &ws) == 0)
    ioctl(t->master, TIOCSWINSZ, &ws);
}

void tty_proxy_pollfds(const struct tty_proxy *t, struct pollfd pf[2]) {
  bool pending = t->off < t->len;
  pf[0] = (struct pollfd){.fd = pending ? -1 : t->in, .events = POLLIN};
  pf[1] = (struct pollfd){.fd = t->hung_up ? -1 : t->master,
                          .events = POLLIN | (pending ? POLLOUT : 0)};
}

/* Writes all of buf to the caller's stdout (blocking, as the caller's
 * terminal or pipe paces the container); a closed one drops the rest. */
static void write_out(const char *buf, size_t n) {
  for (size_t off = 0; off < n;) {
    ssize_t w = write(STDOUT_FILENO, buf + off, n - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return;
    off += (size_t)w;
  }
}

/* One read of the master to stdout; false once it has nothing more now
 * (EAGAIN) or ever (EIO: every slave fd closed). */
static bool copy_out(struct tty_proxy *t) {
  char buf[16384];
  ssize_t r = read(t->master, buf, sizeof buf);
  if (r < 0 && errno == EINTR)
    return true;
  if (r <= 0)
    return false;
  write_out(buf, (size_t)r);
  return true;
}

static void copy_in(struct tty_proxy *t) {
  ssize_t r = read(t->in, t->pending, sizeof t->pending);
  if (r < 0 && errno == EINTR)
    return;
  /* As runc, stdin's end is not passed on: the process keeps its pty. */
  if (r <= 0) {
    t->in = -1;
    return;
  }
  t->len = (size_t)r;
  t->off = 0;
}

static void flush_in(struct tty_proxy *t) {
  ssize_t w = write(t->master, t->pending + t->off, t->len - t->off);
  if (w > 0)
    t->off += (size_t)w;
  else if (w < 0 && errno != EAGAIN && errno != EINTR)
    t->off = t->len;
}

void tty_proxy_pump(struct tty_proxy *t, const struct pollfd pf[2]) {
  if (pf[0].fd >= 0 && pf[0].revents)
    copy_in(t);
  if (pf[1].revents & POLLOUT)
    flush_in(t);
  if (pf[1].revents & POLLIN)
    copy_out(t);
  /* Hung up with nothing left to read: a master that would report POLLHUP
   * forever is not polled again (a process may close its stdio and live
   * on). */
  else if (pf[1].revents & (POLLHUP | POLLERR))
    t->hung_up = true;
}

void tty_proxy_drain(struct tty_proxy *t) {
  if (t->master < 0)
    return;
  while (copy_out(t))
    ;
}

void tty_proxy_stop(struct tty_proxy *t) {
  if (t->raw)
    tcsetattr(t->host, TCSANOW, &t->saved);
  t->raw = false;
  if (t->host_opened)
    close(t->host);
  t->host = -1;
  t->host_opened = false;
  if (t->master >= 0)
    close(t->master);
  t->master = -1;
}
