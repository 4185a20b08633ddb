#include "privileges.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fds.h"
#include "passwd.h"

int privileges_set_environment(const struct coil_process *p,
                               struct coil_error *err) {
  if (clearenv() != 0)
    return coil_error_set(err, ENOMEM, "process.env: clearenv");
  /* putenv replaces: a name given twice keeps its last value, as runc. */
  for (size_t i = 0; i < p->env.n; i++)
    if (putenv(p->env.v[i]) != 0)
      return coil_error_sys(err, errno, "process.env[%zu]: putenv", i);
  /* As runc: HOME from the container's passwd entry when env has none;
   * read after the root is the container's and before the id switch. */
  if (!getenv("HOME")) {
    char home[PATH_MAX];
    passwd_home(p->uid, home, sizeof home);
    if (setenv("HOME", home, 1) < 0)
      return coil_error_sys(err, errno, "process.env: setenv HOME");
  }
  return 0;
}

int privileges_become_ns_root(struct coil_error *err) {
  /* EINVAL: 0 is not mapped (a joined namespace may not map it). */
  if (setresgid(0, 0, 0) < 0)
    return errno == EINVAL
               ? 0
               : coil_error_sys(err, errno,
                                "setresgid(0) in the user namespace");
  if (setresuid(0, 0, 0) < 0)
    return errno == EINVAL
               ? 0
               : coil_error_sys(err, errno,
                                "setresuid(0) in the user namespace");
  if (setgroups(0, NULL) < 0 && errno != EPERM)
    return coil_error_sys(err, errno, "setgroups in the user namespace");
  return 0;
}

static bool caps_have_sys_admin(const struct coil_caps *caps) {
  return caps->configured &&
         (caps->sets[COIL_CAP_EFFECTIVE] & (1ULL << CAP_SYS_ADMIN));
}

bool privileges_seccomp_first(const struct privileges *pv) {
  return pv->seccomp && !pv->p->no_new_privileges &&
         !caps_have_sys_admin(pv->caps);
}

/* struct sigaction as the rt_sigaction system call takes it. */
struct kernel_sigaction {
  void (*handler)(int);
  unsigned long flags;
  void (*restorer)(void);
  uint64_t mask;
};

/* The first real-time signal of the kernel; the C library keeps the
 * numbers from here up to SIGRTMIN for itself. */
#define KERNEL_SIGRTMIN 32

int privileges_default_dispositions(struct coil_error *err) {
  struct sigaction dfl = {.sa_handler = SIG_DFL};
  sigemptyset(&dfl.sa_mask);
  /* SIGKILL and SIGSTOP refuse: they cannot be caught anyway. */
  for (int s = 1; s < NSIG; s++)
    sigaction(s, &dfl, NULL);
  /* sigaction() refuses the C library's own signals, yet an ignored one is
   * inherited from the caller like any other: reset it through the kernel,
   * and only when ignored, so the library's handlers stay. */
  for (int s = KERNEL_SIGRTMIN; s < SIGRTMIN; s++) {
    struct kernel_sigaction old, kdfl = {.handler = SIG_DFL};
    if (syscall(SYS_rt_sigaction, s, NULL, &old, sizeof old.mask) == 0 &&
        old.handler == SIG_IGN &&
        syscall(SYS_rt_sigaction, s, &kdfl, NULL, sizeof kdfl.mask) < 0)
      return coil_error_sys(err, errno, "rt_sigaction(%d)", s);
  }
  return 0;
}

static int reset_signals(bool dispositions_default, struct coil_error *err) {
  if (!dispositions_default && privileges_default_dispositions(err) < 0)
    return -1;
  sigset_t none;
  sigemptyset(&none);
  if (sigprocmask(SIG_SETMASK, &none, NULL) < 0)
    return coil_error_sys(err, errno, "sigprocmask");
  return 0;
}

int privileges_drop(const struct privileges *pv, const int *keep, size_t n_keep,
                    struct coil_error *err) {
  const struct coil_process *p = pv->p;
  /* umask: it shapes only what the process creates, none of the below. */
  umask(p->has_umask ? p->umask : 022);
  /* fds: only stdio and the caller's (close-on-exec) survive; before
   * rlimits, which may lower the NOFILE bound of the fallback. */
  if (fds_close_except(keep, n_keep, err) < 0)
    return -1;
  /* rlimits while still privileged: raising a hard limit needs
   * CAP_SYS_RESOURCE, and the kernel checks RLIMIT_NPROC at the uid switch. */
  if (rlimits_apply(pv->rlimits, err) < 0)
    return -1;
  if (privileges_seccomp_first(pv) &&
      seccomp_profile_load(pv->seccomp, err) < 0)
    return -1;
  /* ids, then capabilities: setgroups/setresgid/setresuid need CAP_SETGID
   * and CAP_SETUID, and KEEPCAPS carries the permitted set across the
   * switch so caps_apply can shape every set afterwards. */
  if (!pv->keep_ids_and_caps &&
      (caps_switch_ids(p->uid, p->gid, (const gid_t *)p->additional_gids,
                       p->n_additional_gids, err) < 0 ||
       caps_apply(pv->caps, pv->bounding_dropped, err) < 0))
    return -1;
  /* no_new_privs once the capabilities are final, before any filter:
   * seccomp and Landlock need it from an unprivileged process. */
  if (p->no_new_privileges && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    return coil_error_sys(err, errno, "process.noNewPrivileges: prctl");
  /* signals: default dispositions and an empty mask. The parent blocked the
   * forwarded signals before clone so none is lost; they stay blocked until
   * every privileged step is done, and none of coil's state leaks on. */
  if (reset_signals(pv->dispositions_default, err) < 0)
    return -1;
  /* cwd last, as the container user: a directory that user cannot enter
   * fails here, as it would for the process. */
  if (p->cwd && chdir(p->cwd) < 0)
    return coil_error_sys(err, errno, "process.cwd: chdir %s", p->cwd);
  return 0;
}
