#include "init.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/close_range.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup.h"
#include "cleanup.h"
#include "hooks.h"
#include "log.h"
#include "namespaces.h"
#include "oci_state.h"
#include "python_mode.h"
#include "rootfs.h"
#include "sync.h"
#include "sysctl.h"
#include "terminal.h"

/* Exit status of init when setup fails before the user process exists. */
#define INIT_FAILED 127

/* Closes every fd but stdio and the ones init still needs, so no host fd
 * (the state lock, the config file, the caller's other fds) survives. */
static void close_fds_except(const int *keep, size_t n) {
  unsigned int from = 3;
  for (;;) {
    unsigned int next = ~0U;
    for (size_t i = 0; i < n; i++)
      if (keep[i] >= (int)from && (unsigned int)keep[i] < next)
        next = (unsigned int)keep[i];
    if (next == ~0U) {
      syscall(SYS_close_range, from, ~0U, 0);
      return;
    }
    if (next > from)
      syscall(SYS_close_range, from, next - 1, 0);
    from = next + 1;
  }
}

static void __attribute__((noreturn))
fail_sync(int fd, struct coil_error *err) {
  struct coil_error ignored;
  sync_send(fd, SYNC_ERROR, err->msg, &ignored);
  _exit(INIT_FAILED);
}

/* After start, errors go back over the start connection. */
static void __attribute__((noreturn))
fail_start(int conn, struct coil_error *err) {
  ssize_t ignored = send(conn, err->msg, strlen(err->msg), MSG_NOSIGNAL);
  (void)ignored;
  _exit(INIT_FAILED);
}

static char *state_for_hooks(const struct init_ctx *c, pid_t host_pid,
                             const char *status) {
  struct coil_oci_state s = {.id = c->id,
                             .status = status,
                             .pid = host_pid,
                             .bundle = c->bundle,
                             .cfg = c->cfg};
  return oci_state_json(&s, false);
}

/* Become root of the new user namespace, so file access checks in the setup
 * use a mapped id. Skipped when 0 is not mapped. */
static int become_ns_root(const struct coil_linux *l, struct coil_error *err) {
  if (!namespaces_has(l, CLONE_NEWUSER))
    return 0;
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

static int set_names(const struct coil_config *cfg, struct coil_error *err) {
  bool own_uts = namespaces_wants_new(&cfg->lnx, CLONE_NEWUTS);
  if ((cfg->hostname || cfg->domainname) && !own_uts &&
      !namespaces_has(&cfg->lnx, CLONE_NEWUTS))
    return coil_error_set(err, EINVAL,
                          "hostname: needs the container's own uts namespace");
  if (cfg->hostname && sethostname(cfg->hostname, strlen(cfg->hostname)) < 0)
    return coil_error_sys(err, errno, "hostname: sethostname");
  if (cfg->domainname &&
      setdomainname(cfg->domainname, strlen(cfg->domainname)) < 0)
    return coil_error_sys(err, errno, "domainname: setdomainname");
  return 0;
}

static bool caps_have_sys_admin(const struct coil_caps *caps) {
  return caps->configured &&
         (caps->sets[COIL_CAP_EFFECTIVE] & (1ULL << CAP_SYS_ADMIN));
}

/* The privilege drop, in the order that keeps each step possible: rlimits
 * and ids while still privileged, capabilities after the id switch (KEEPCAPS
 * carries the permitted set across setuid), no_new_privs, and seccomp last
 * because it may forbid the syscalls above. Without no_new_privs the kernel
 * only accepts a filter from a CAP_SYS_ADMIN holder, so then it goes first. */
static int drop_privileges(const struct init_ctx *c, struct coil_error *err) {
  const struct coil_process *p = &c->cfg->process;
  bool seccomp_first =
      c->seccomp && !p->no_new_privileges && !caps_have_sys_admin(c->caps);

  umask(p->has_umask ? p->umask : 022);
  if (rlimits_apply(c->rlimits, err) < 0)
    return -1;
  if (seccomp_first && seccomp_profile_load(c->seccomp, err) < 0)
    return -1;
  if (caps_switch_ids(p->uid, p->gid, (const gid_t *)p->additional_gids,
                      p->n_additional_gids, err) < 0)
    return -1;
  if (caps_apply(c->caps, err) < 0)
    return -1;
  if (p->no_new_privileges && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    return coil_error_sys(err, errno, "process.noNewPrivileges: prctl");
  if (p->cwd && chdir(p->cwd) < 0)
    return coil_error_sys(err, errno, "process.cwd: chdir %s", p->cwd);
  if (c->seccomp && !seccomp_first && seccomp_profile_load(c->seccomp, err) < 0)
    return -1;
  return 0;
}

static int set_environment(const struct coil_process *p,
                           struct coil_error *err) {
  if (clearenv() != 0)
    return coil_error_set(err, ENOMEM, "process.env: clearenv");
  for (size_t i = 0; i < p->env.n; i++)
    if (putenv(p->env.v[i]) != 0)
      return coil_error_sys(err, errno, "process.env[%zu]: putenv", i);
  return 0;
}

static void reset_signals(void) {
  for (int s = 1; s < NSIG; s++)
    signal(s, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Waits for `coil start` (or `run`) to connect; returns the connection. */
static int wait_for_start(int start_fd, struct coil_error *err) {
  int conn;
  do
    conn = accept4(start_fd, NULL, NULL, SOCK_CLOEXEC);
  while (conn < 0 && errno == EINTR);
  if (conn < 0)
    return coil_error_sys(err, errno, "accept start request");
  char b;
  ssize_t r;
  do
    r = read(conn, &b, 1);
  while (r < 0 && errno == EINTR);
  close(start_fd);
  return conn;
}

void init_main(const struct init_ctx *c) {
  const struct coil_config *cfg = c->cfg;
  struct coil_error err = {0};
  int sync_fd = c->sync_fd;

  /* 1. Nothing of the host leaks in but the fds the protocol needs. If the
   *    parent dies during setup its end of the sync socket closes and init
   *    exits at the next step. */
  log_forget_file();
  /* 0. Into the container's v1 cgroups before anything else runs here. */
  if (c->cgroup_join && cgroup_join_self(c->cgroup_join, &err) < 0)
    fail_sync(c->sync_fd, &err);
  if (c->out_fd >= 0 &&
      (dup2(c->out_fd, STDOUT_FILENO) < 0 || close(c->out_fd) < 0))
    _exit(INIT_FAILED);
  int keep[] = {c->sync_fd, c->start_fd, c->console_fd};
  close_fds_except(keep, sizeof keep / sizeof keep[0]);

  /* 2. The parent has written the id maps and put us in the cgroup. */
  char payload[64];
  if (sync_expect(sync_fd, SYNC_GO, payload, sizeof payload, &err) < 0)
    _exit(INIT_FAILED);
  pid_t host_pid = (pid_t)atoi(payload);
  log_debug("init: ids mapped, in the cgroup");

  /* 3. Namespaces: root of our user namespace, join the ones given by path,
   *    then a cgroup namespace rooted at the container's cgroup. */
  if (become_ns_root(&cfg->lnx, &err) < 0 ||
      namespaces_join(&cfg->lnx, &err) < 0)
    fail_sync(sync_fd, &err);
  if (namespaces_wants_new(&cfg->lnx, CLONE_NEWCGROUP) &&
      unshare(CLONE_NEWCGROUP) < 0) {
    coil_error_sys(&err, errno, "linux.namespaces: unshare cgroup namespace");
    fail_sync(sync_fd, &err);
  }

  /* 4. Names and sysctls, written from inside the new namespaces. */
  if (set_names(cfg, &err) < 0 || sysctl_apply(&cfg->lnx, &err) < 0)
    fail_sync(sync_fd, &err);

  /* 5. The filesystem view: mounts and devices, still with the host root
   *    visible so bind sources and createContainer hooks resolve. */
  struct coil_rootfs_opts ro = {
      .rootfs = c->rootfs, .userns = namespaces_has(&cfg->lnx, CLONE_NEWUSER)};
  if (!c->skip_rootfs && rootfs_prepare(cfg, &ro, &err) < 0)
    fail_sync(sync_fd, &err);
  log_debug("init: namespaces joined, mounts done");

  /* 6. prestart/createRuntime run in the runtime namespace (the parent),
   *    createContainer here, before pivot_root. */
  if (sync_send(sync_fd, SYNC_HOOKS, NULL, &err) < 0 ||
      sync_expect(sync_fd, SYNC_HOOKS_DONE, NULL, 0, &err) < 0)
    _exit(INIT_FAILED);
  if (cfg->hooks[COIL_HOOK_CREATE_CONTAINER].n) {
    cleanup_free char *st = state_for_hooks(c, host_pid, "creating");
    if (hooks_run(cfg, COIL_HOOK_CREATE_CONTAINER, st ? st : "{}", &err) < 0)
      fail_sync(sync_fd, &err);
  }

  /* 7. pivot_root (never chroot), then masked/read-only paths and the
   *    read-only root. */
  if (!c->skip_rootfs &&
      (rootfs_pivot(&ro, &err) < 0 || rootfs_finalize(cfg, &err) < 0))
    fail_sync(sync_fd, &err);

  /* 8. Our own session, so the caller's terminal is never our controlling
   *    terminal; a pty of our own when asked for one. */
  setsid();
  if (c->console_fd >= 0) {
    if (terminal_setup(c->console_fd, &cfg->process, cfg->process.uid,
                       cfg->process.gid, &err) < 0)
      fail_sync(sync_fd, &err);
    close(c->console_fd);
  }

  log_debug("init: pivoted, ready");
  /* 9. Ready: from here the parent may exit. */
  if (sync_send(sync_fd, SYNC_READY, NULL, &err) < 0)
    _exit(INIT_FAILED);
  close(sync_fd);

  /* 10. Block until `coil start`; errors from here on go back to it. */
  int conn = wait_for_start(c->start_fd, &err);
  if (conn < 0)
    _exit(INIT_FAILED);
  log_debug("init: started");
  if (cfg->hooks[COIL_HOOK_START_CONTAINER].n) {
    cleanup_free char *st = state_for_hooks(c, host_pid, "created");
    if (hooks_run(cfg, COIL_HOOK_START_CONTAINER, st ? st : "{}", &err) < 0)
      fail_start(conn, &err);
  }

  /* In Python mode init becomes the gated interpreter (python_mode.c owns
   * the rest of the sequence); `start` has nothing more to wait for. */
  if (c->python) {
    close(conn);
    python_mode_main(c->python);
  }

  /* 11. Drop privileges (ids, capabilities, no_new_privs, seccomp last). */
  if (set_environment(&cfg->process, &err) < 0 || drop_privileges(c, &err) < 0)
    fail_start(conn, &err);

  /* 12. execve: the start connection is close-on-exec, so `coil start` sees
   *     EOF on success and our message on failure. */
  reset_signals();
  syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
  execvp(cfg->process.args.v[0], cfg->process.args.v);
  coil_error_sys(&err, errno, "process.args[0]: exec %s",
                 cfg->process.args.v[0]);
  fail_start(conn, &err);
}
