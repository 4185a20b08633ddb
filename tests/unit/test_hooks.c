/* Hooks against the real kernel. The deadline arithmetic is checked as pure
 * functions; then, in forked children, a seccomp filter makes poll or
 * pidfd_open fail and hooks_run must still reap the hook and say what
 * happened: never report success while the hook runs, never hang. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <seccomp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>

#include "config.h"
#include "deadline.h"
#include "hooks.h"
#include "tap.h"
#include "testutil.h"

/* A child that hangs is killed by this alarm and the test fails. */
#define CHILD_ALARM_S 10

static void test_deadline(void) {
  ok(deadline_after_ms(1000, 0) == DEADLINE_NONE, "0 ms: no deadline");
  ok(deadline_after_ms(1000, -5) == DEADLINE_NONE, "negative: no deadline");
  ok(deadline_after_ms(1000, 2500) == 3500, "now + ms");
  ok(deadline_after_ms(1000, INT_MAX * 1000LL) == 1000 + INT_MAX * 1000LL,
     "INT_MAX seconds fit in 64 bits");
  ok(deadline_after_ms(LLONG_MAX - 10, 100) == LLONG_MAX, "saturates");

  ok(deadline_slice_ms(DEADLINE_NONE, 50, -1) == -1, "no deadline: block");
  ok(deadline_slice_ms(DEADLINE_NONE, 50, 10) == 10, "no deadline: the cap");
  ok(deadline_slice_ms(100, 100, -1) == 0, "deadline reached: 0");
  ok(deadline_slice_ms(100, 150, 10) == 0, "deadline passed: 0");
  ok(deadline_slice_ms(100, 40, -1) == 60, "time left");
  ok(deadline_slice_ms(100, 40, 10) == 10, "time left, capped");
  ok(deadline_slice_ms(100, 95, 10) == 5, "cap above the time left");
  long long far = deadline_after_ms(7, INT_MAX * 1000LL);
  ok(deadline_slice_ms(far, 7, -1) == INT_MAX,
     "INT_MAX s left: one INT_MAX ms slice, not a wrapped int");
  ok(deadline_slice_ms(7 + (1LL << 32) + 5, 7, -1) == INT_MAX,
     "2^32 + 5 ms left: INT_MAX, not 5");
  ok(deadline_slice_ms(LLONG_MAX, 0, 20) == 20, "far deadline, capped");
}

struct hook_case {
  const char *script; /* sh -c */
  int timeout;        /* 0: none */
  int fail_syscall;   /* made to fail with fail_errno; 0: none */
  int fail_errno;
};

/* This process's live or unreaped children, as a space-separated list. */
static void children(char *out, size_t len) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%ld/children",
           (long)syscall(SYS_gettid));
  out[0] = '\0';
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    read_fd(fd, out, len);
    close(fd);
  }
}

static int fail_syscall(int nr, int err) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx)
    return -1;
  int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO((unsigned)err), nr, 0);
  /* glibc's poll may be either system call. */
  if (r == 0 && nr == SCMP_SYS(poll))
    r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO((unsigned)err), SCMP_SYS(ppoll),
                         0);
  if (r == 0)
    r = seccomp_load(ctx);
  seccomp_release(ctx);
  return r;
}

/* Runs the case's hook as hooks.prestart[0]; out gets "rc=<r> left=<children>
 * msg=<error>", and the hooks it left running are killed. */
static int run_hook_case(const void *arg, char *out, size_t len) {
  const struct hook_case *c = arg;
  alarm(CHILD_ALARM_S);
  /* As in coil's main: a hook that exits before reading its state must
   * cost the writer EPIPE, not SIGPIPE. */
  signal(SIGPIPE, SIG_IGN);
  char json[1024], timeout[32] = "";
  if (c->timeout)
    snprintf(timeout, sizeof timeout, ",\"timeout\":%d", c->timeout);
  snprintf(json, sizeof json,
           "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\"},"
           "\"hooks\":{\"prestart\":[{\"path\":\"/bin/sh\","
           "\"args\":[\"sh\",\"-c\",\"%s\"]%s}]}}",
           c->script, timeout);
  struct coil_config *cfg = NULL;
  struct coil_error err = {0};
  if (config_parse(json, strlen(json), &cfg, &err) < 0) {
    snprintf(out, len, "config: %s", err.msg);
    return 2;
  }
  if (c->fail_syscall && fail_syscall(c->fail_syscall, c->fail_errno) < 0) {
    snprintf(out, len, "seccomp filter not loaded");
    return 2;
  }
  int r = hooks_run(cfg, COIL_HOOK_PRESTART, "{}", &err);
  char left[256];
  children(left, sizeof left);
  snprintf(out, len, "rc=%d left=%s msg=%s", r, left, r < 0 ? err.msg : "");
  for (char *p = left; *p;) {
    char *end;
    long pid = strtol(p, &end, 10);
    if (end == p)
      break;
    kill((pid_t)pid, SIGKILL);
    p = end;
  }
  return 0;
}

/* Runs a case; returns its report, or NULL (and fails) when the child did
 * not finish (a hang ends with the alarm). */
static const char *hook_case(const struct hook_case *c, const char *name) {
  static char out[1024];
  int status = run_child(run_hook_case, c, out, sizeof out);
  if (!exited(status, 0)) {
    ok(0, "%s: child finished (status 0x%x: %s)", name, status, out);
    return NULL;
  }
  printf("# %s: %s\n", name, out);
  return out;
}

static void test_poll_failure(void) {
  struct hook_case c = {.script = "exec sleep 30",
                        .fail_syscall = SCMP_SYS(poll),
                        .fail_errno = ENOMEM};
  const char *o = hook_case(&c, "poll fails");
  if (!o)
    return;
  ok(strstr(o, "rc=-1 ") != NULL, "poll failure: reported as a failure");
  ok(strstr(o, "left= ") != NULL, "poll failure: the hook is killed, reaped");
  ok(strstr(o, "msg=hooks.prestart[0] (/bin/sh): ") &&
         strstr(o, strerror(ENOMEM)),
     "poll failure: the error names the hook and the cause");
}

static void test_pidfd_failure(void) {
  struct hook_case c = {.script = "exit 0",
                        .fail_syscall = SCMP_SYS(pidfd_open),
                        .fail_errno = EMFILE};
  const char *o = hook_case(&c, "no pidfd, hook succeeds");
  if (o)
    ok(strstr(o, "rc=0 left= ") != NULL, "no pidfd: a hook's success is seen");

  c.script = "echo oops; exit 3";
  o = hook_case(&c, "no pidfd, hook fails");
  if (o)
    ok(strstr(o, "rc=-1 left= ") && strstr(o, "exited with status 3: oops"),
       "no pidfd: a hook's failure and output are seen");

  c.script = "exec sleep 30";
  c.timeout = 1;
  o = hook_case(&c, "no pidfd, hook times out");
  if (o)
    ok(strstr(o, "rc=-1 left= ") && strstr(o, "timed out after 1 s"),
       "no pidfd: the timeout still kills and reaps the hook");
}

static void test_huge_timeout(void) {
  struct hook_case c = {.script = "exit 0", .timeout = INT_MAX};
  const char *o = hook_case(&c, "timeout INT_MAX");
  if (o)
    ok(strstr(o, "rc=0 left= ") != NULL,
       "a timeout of INT_MAX seconds: the hook runs and succeeds");
  c.script = "exit 4";
  o = hook_case(&c, "timeout INT_MAX, failing hook");
  if (o)
    ok(strstr(o, "exited with status 4") != NULL,
       "a timeout of INT_MAX seconds: the hook's failure is seen");
}

int main(void) {
  test_deadline();
  test_poll_failure();
  test_pidfd_failure();
  test_huge_timeout();
  return tap_done();
}
