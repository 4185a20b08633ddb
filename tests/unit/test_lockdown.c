/* lockdown: coil serve's compiled stage 2 lets each job step through while
 * a child waits for its job (lockdown_stage2_before_job), and the filter
 * lockdown_stage2 then loads kills every one of them, so the user's code
 * meets stage 2 exactly; what stage 2 allows otherwise stays allowed. The
 * list of steps here is this test's own: a step added to lockdown.c
 * without one here is not tested, one removed there fails here. */
#include <errno.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "lockdown.h"
#include "tap.h"
#include "testutil.h"

static struct lockdown_filters filters;

enum {
  STEP_RECVMSG,
  STEP_DUP2,
  STEP_SIGACTION,
  STEP_SETITIMER,
  STEP_PRLIMIT,
  STEP_SETRLIMIT,
  STEP_SECCOMP,
  N_STEPS
};

static const char *const step_names[N_STEPS] = {
    "recvmsg",   "dup2",      "rt_sigaction", "setitimer",
    "prlimit64", "setrlimit", "seccomp"};

struct job_case {
  int step;
  bool closed; /* the closing filter loaded before the step */
};

/* The step, made with arguments that change nothing. */
static void make_step(int step, const struct rlimit *core) {
  struct rlimit old;
  struct itimerval zero = {0};
  unsigned int allow = SECCOMP_RET_ALLOW;
  switch (step) {
  case STEP_RECVMSG:
    syscall(SYS_recvmsg, -1, NULL, 0);
    break;
  case STEP_DUP2:
    syscall(SYS_dup2, 2, 2);
    break;
  case STEP_SIGACTION:
    syscall(SYS_rt_sigaction, SIGUSR1, NULL, &old, 8);
    break;
  case STEP_SETITIMER:
    syscall(SYS_setitimer, ITIMER_VIRTUAL, &zero, NULL);
    break;
  case STEP_PRLIMIT:
    syscall(SYS_prlimit64, 0, RLIMIT_CORE, NULL, &old);
    break;
  case STEP_SETRLIMIT:
    syscall(SYS_setrlimit, RLIMIT_CORE, core);
    break;
  case STEP_SECCOMP:
    syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &allow);
    break;
  }
}

static int child_job_step(const void *arg, char *out, size_t len) {
  const struct job_case *c = arg;
  struct rlimit core;
  if (getrlimit(RLIMIT_CORE, &core) < 0 ||
      prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    return 2;
  struct lockdown_opts o = {.seccomp = true, .compiled = &filters};
  struct coil_error err = {0};
  if (lockdown_stage2_before_job(&o, &err) < 0 ||
      (c->closed && lockdown_stage2(&o, &err) < 0)) {
    snprintf(out, len, "%s", err.msg);
    return 3;
  }
  make_step(c->step, &core);
  return 0;
}

static void test_job_steps(void) {
  char seen[512];
  for (int i = 0; i < N_STEPS; i++) {
    struct job_case open = {.step = i}, closed = {.step = i, .closed = true};
    int st = run_child(child_job_step, &open, seen, sizeof seen);
    ok(exited(st, 0),
       "%s goes through while the child waits for its job "
       "(status 0x%x%s%s)",
       step_names[i], st, *seen ? ", " : "", seen);
    st = run_child(child_job_step, &closed, seen, sizeof seen);
    ok(killed_by(st, SIGSYS),
       "%s kills once the job steps are closed "
       "(status 0x%x%s%s)",
       step_names[i], st, *seen ? ", " : "", seen);
  }
}

int main(void) {
  struct coil_error err = {0};
  if (lockdown_compile(&filters, &err) < 0) {
    ok(0, "lockdown_compile: %s", err.msg);
    return tap_done();
  }
  test_job_steps();
  return tap_done();
}
