#include "terminal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdpass.h"

int terminal_connect(const char *path, int *fd, struct coil_error *err) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof addr.sun_path)
    return coil_error_set(err, ENAMETOOLONG,
                          "--console-socket %s: path too long", path);
  strcpy(addr.sun_path, path);
  cleanup_close int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    return coil_error_sys(err, errno, "--console-socket: socket");
  if (connect(s, (struct sockaddr *)&addr, sizeof addr) < 0)
    return coil_error_sys(err, errno, "--console-socket: connect %s", path);
  *fd = steal_fd(s);
  return 0;
}

static int send_fd(int sock, int fd, const char *name, struct coil_error *err) {
  if (fdpass_send(sock, name, strlen(name), &fd, 1, 0) < 0)
    return coil_error_sys(err, errno, "--console-socket: send pty master");
  return 0;
}

int terminal_setup(int sock, const struct coil_process *p, uid_t uid, gid_t gid,
                   struct coil_error *err) {
  cleanup_close int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0)
    return coil_error_sys(err, errno, "process.terminal: open /dev/ptmx");
  if (unlockpt(master) < 0)
    return coil_error_sys(err, errno, "process.terminal: unlockpt");
  char name[64];
  if (ptsname_r(master, name, sizeof name) != 0)
    return coil_error_sys(err, errno, "process.terminal: ptsname");
  if (p->has_console_size) {
    struct winsize ws = {.ws_row = (unsigned short)p->console_height,
                         .ws_col = (unsigned short)p->console_width};
    ioctl(master, TIOCSWINSZ, &ws);
  }
  cleanup_close int slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave < 0)
    return coil_error_sys(err, errno, "process.terminal: open %s", name);
  /* The slave is the container's own device, never the caller's stdio. */
  if (fchown(slave, uid, gid) < 0 && errno != EINVAL)
    return coil_error_sys(err, errno, "process.terminal: chown %s", name);
  if (send_fd(sock, master, name, err) < 0)
    return -1;
  if (ioctl(slave, TIOCSCTTY, 0) < 0)
    return coil_error_sys(err, errno, "process.terminal: TIOCSCTTY");
  for (int i = 0; i < 3; i++)
    if (dup2(slave, i) < 0)
      return coil_error_sys(err, errno, "process.terminal: dup2");
  return 0;
}
