/* Helpers the unit tests share: children run in a fork, their wait
 * status, a capability dropped, and stderr captured. Static inline, so each
 * test takes only what it uses. */
#ifndef COIL_TESTUTIL_H
#define COIL_TESTUTIL_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* The number of elements of array a. */
#define LEN(a) (sizeof(a) / sizeof((a)[0]))

/* A struct coil_strv initializer listing the given strings. */
#define STRV(...)                                                              \
  {                                                                            \
    .v = (char *[]){__VA_ARGS__},                                              \
    .n = sizeof((char *[]){__VA_ARGS__}) / sizeof(char *)                      \
  }

/* A child's body: writes what it found to out (len bytes), returns its exit
 * code. */
typedef int (*child_fn)(const void *arg, char *out, size_t len);

/* Reads fd until EOF or out is full; out ends with '\0'. */
static inline void read_fd(int fd, char *out, size_t len) {
  size_t got = 0;
  ssize_t n;
  while (got + 1 < len && (n = read(fd, out + got, len - 1 - got)) > 0)
    got += (size_t)n;
  out[got] = '\0';
}

/* Runs fn(arg) in a forked child and returns its wait status; what fn
 * wrote to out comes back in out. */
static inline int run_child(child_fn fn, const void *arg, char *out,
                            size_t len) {
  int fds[2];
  out[0] = '\0';
  if (pipe(fds) < 0)
    return -1;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    int code = fn(arg, out, len);
    if (write(fds[1], out, strlen(out)) < 0)
      code = 99;
    /* Not _exit: no atexit handlers or sanitizer leak check, and none of
     * the syscalls (sigaltstack, mmap) a sanitizer's _exit hook makes,
     * which a seccomp filter may forbid. */
    syscall(SYS_exit_group, code);
  }
  close(fds[1]);
  read_fd(fds[0], out, len);
  close(fds[0]);
  int status = -1;
  waitpid(pid, &status, 0);
  return status;
}

/* Whether a wait status says the child exited with code. */
static inline bool exited(int status, int code) {
  return WIFEXITED(status) && WEXITSTATUS(status) == code;
}

/* Whether a wait status says the child was killed by sig. */
static inline bool killed_by(int status, int sig) {
  return WIFSIGNALED(status) && WTERMSIG(status) == sig;
}

/* Clears cap from this process's effective set, and from its permitted set
 * too if permitted; 0, or -1 with errno set. */
static inline int drop_cap(cap_value_t cap, bool permitted) {
  cap_t c = cap_get_proc();
  int rc = -1;
  if (c && cap_set_flag(c, CAP_EFFECTIVE, 1, &cap, CAP_CLEAR) == 0 &&
      (!permitted || cap_set_flag(c, CAP_PERMITTED, 1, &cap, CAP_CLEAR) == 0))
    rc = cap_set_proc(c);
  cap_free(c);
  return rc;
}

/* Points fd 2 (where log_warn writes) at a memfd; returns the saved fd 2. */
static inline int capture_stderr(void) {
  fflush(stderr);
  int saved = dup(STDERR_FILENO);
  int fd = memfd_create("stderr", 0);
  dup2(fd, STDERR_FILENO);
  close(fd);
  return saved;
}

/* Puts what was captured since capture_stderr into out, restores fd 2. */
static inline void restore_stderr(int saved, char *out, size_t len) {
  lseek(STDERR_FILENO, 0, SEEK_SET);
  ssize_t n = read(STDERR_FILENO, out, len - 1);
  out[n > 0 ? n : 0] = '\0';
  dup2(saved, STDERR_FILENO);
  close(saved);
}

#endif
