/* A foreground `run` of a process.terminal container without a console
 * socket: as runc, coil keeps the pty master init sends it and proxies the
 * caller's stdio to it. The caller's terminal (the first of stderr, stdout,
 * stdin that is one, else /dev/tty) goes into raw mode, so keys such as ^C
 * reach the container's line discipline, and gives the pty its size. */
#ifndef COIL_TTY_PROXY_H
#define COIL_TTY_PROXY_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <termios.h>

#include "error.h"

struct tty_proxy {
  int master;       /* the container's pty master (nonblocking) */
  int in;           /* the caller's stdin, -1 after its EOF */
  int host;         /* the caller's terminal, or -1 when it has none */
  bool host_opened; /* host is our own /dev/tty fd */
  bool raw;         /* saved holds the termios to restore */
  bool hung_up;     /* every slave fd closed: the master is not polled */
  struct termios saved;
  char pending[4096]; /* stdin bytes the master has not taken yet */
  size_t len, off;
};
#define TTY_PROXY_INIT                                                         \
  { .master = -1, .in = -1, .host = -1 }

/* Receives the pty master init sends over sock (SCM_RIGHTS). */
int tty_receive_master(int sock, int *master, struct coil_error *err);

/* Takes master; puts the caller's terminal in raw mode and copies its size
 * to the pty. Never fails for a caller without a terminal: then the pty
 * keeps process.consoleSize. */
int tty_proxy_start(struct tty_proxy *t, int master, struct coil_error *err);

/* SIGWINCH: the caller's terminal size to the pty. */
void tty_proxy_resize(struct tty_proxy *t);

/* Fills the two pollfds the proxy waits on (stdin, master). */
void tty_proxy_pollfds(const struct tty_proxy *t, struct pollfd pf[2]);

/* Moves what poll reported ready: stdin to master, master to stdout. */
void tty_proxy_pump(struct tty_proxy *t, const struct pollfd pf[2]);

/* After the process exited: copies what the pty still holds to stdout. */
void tty_proxy_drain(struct tty_proxy *t);

/* Restores the caller's terminal and closes the master; safe to call on a
 * TTY_PROXY_INIT or an already stopped proxy. */
void tty_proxy_stop(struct tty_proxy *t);

#endif
