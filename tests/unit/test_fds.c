/* fds_close_except: every fd but stdio and the kept ones is closed, also
 * when close_range(2) fails (made to by a real seccomp filter in a forked
 * child) and when /proc cannot be read either. Runs as root. */
#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fds.h"
#include "tap.h"
#include "testutil.h"

static bool is_open(int fd) { return fcntl(fd, F_GETFD) >= 0; }

/* Denies each named syscall with ENOSYS, as an old kernel would. */
static int deny(const char *const *names, size_t n) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx)
    return -1;
  int r = 0;
  for (size_t i = 0; i < n && r == 0; i++)
    r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS),
                         seccomp_syscall_resolve_name(names[i]), 0);
  if (r == 0)
    r = seccomp_load(ctx);
  seccomp_release(ctx);
  return r;
}

/* Child exit codes: which check failed. */
enum { OK, SETUP, CLOSE_RANGE_WORKS, CALL_FAILED, LEFT_OPEN, KEPT_CLOSED };

/* Opens fds up to a high number (above the soft limit it then lowers),
 * keeps two, and checks what is left. */
static int child(const char *const *denied, size_t n_denied) {
  int fds[8];
  for (size_t i = 0; i < LEN(fds); i++)
    if ((fds[i] = open("/dev/null", O_RDONLY)) < 0)
      return SETUP;
  if (dup2(fds[0], 200) < 0 || dup2(fds[0], 900) < 0)
    return SETUP;
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_max < 1000)
    return SETUP;
  rl.rlim_cur = 64;
  if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
    return SETUP;
  if (n_denied && deny(denied, n_denied) < 0)
    return SETUP;
  if (n_denied && syscall(SYS_close_range, 1000, 1000, 0) == 0)
    return CLOSE_RANGE_WORKS;
  int keep[] = {fds[3], 200, -1};
  struct coil_error err = {0};
  if (fds_close_except(keep, LEN(keep), &err) < 0)
    return CALL_FAILED;
  if (!is_open(0) || !is_open(1) || !is_open(2) || !is_open(fds[3]) ||
      !is_open(200))
    return KEPT_CLOSED;
  for (size_t i = 0; i < LEN(fds); i++)
    if (i != 3 && is_open(fds[i]))
      return LEFT_OPEN;
  if (is_open(900))
    return LEFT_OPEN;
  return OK;
}

static int run(const char *const *denied, size_t n_denied) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0)
    syscall(SYS_exit_group, child(denied, n_denied));
  int status;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
    return -1;
  return WEXITSTATUS(status);
}

int main(void) {
  int r = run(NULL, 0);
  ok(r == OK, "close_range works: all but stdio and the kept fds closed (%d)",
     r);
  static const char *const no_close_range[] = {"close_range"};
  r = run(no_close_range, LEN(no_close_range));
  ok(r == OK, "close_range ENOSYS: fds closed one by one via /proc (%d)", r);
  /* Without openat there is no /proc/self/fd to list either. */
  static const char *const no_proc[] = {"close_range", "openat", "open"};
  r = run(no_proc, LEN(no_proc));
  ok(r == OK,
     "close_range and /proc unavailable: every fd below the NOFILE hard "
     "limit tried (%d)",
     r);
  return tap_done();
}
