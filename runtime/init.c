#include "init.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cgroup.h"
#include "cleanup.h"
#include "execpath.h"
#include "fds.h"
#include "hooks.h"
#include "log.h"
#include "loopback.h"
#include "mountfd.h"
#include "namespaces.h"
#include "oci_state.h"
#include "pdeath.h"
#include "privileges.h"
#include "rootfs.h"
#include "sync.h"
#include "sysctl.h"
#include "terminal.h"

/* Exit status of init when setup fails before the user process exists. */
#define INIT_FAILED 127

static void __attribute__((noreturn))
fail_sync(int fd, struct coil_error *err) {
  struct coil_error ignored;
  sync_send(fd, SYNC_ERROR, err->msg, &ignored);
  _exit(INIT_FAILED);
}

static int payload_proc = -1;

int init_proc_fd(void) { return payload_proc; }

/* Only a speed-up depends on it (coil serve's templates): where the kernel
 * refuses, the payload goes without. */
static void open_payload_proc(void) {
  struct coil_error err = {0};
  payload_proc = mountfd_new_fs("proc", "proc",
                                MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                                "subset=pid", &err);
  if (payload_proc < 0)
    log_debug("init: no procfs for the payload: %s", err.msg);
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
 * use a mapped id. */
static int become_ns_root(const struct coil_linux *l, struct coil_error *err) {
  return namespaces_has(l, CLONE_NEWUSER) ? privileges_become_ns_root(err) : 0;
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

static struct privileges privileges_of(const struct init_ctx *c) {
  return (struct privileges){.p = &c->cfg->process,
                             .caps = c->caps,
                             .rlimits = c->rlimits,
                             .seccomp = c->seccomp,
                             .keep_ids_and_caps = c->keep_ids_and_caps};
}

/* The root of a container that shares its mount namespace: chroot, with
 * nothing mounted or moved. */
static int chroot_rootfs(const char *rootfs, struct coil_error *err) {
  if (chdir(rootfs) < 0)
    return coil_error_sys(err, errno, "root.path: chdir %s", rootfs);
  if (chroot(".") < 0)
    return coil_error_sys(err, errno, "root.path: chroot %s", rootfs);
  if (chdir("/") < 0)
    return coil_error_sys(err, errno, "root.path: chdir / after chroot");
  return 0;
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
  /* The runtime's id-mapped mounts stay open until rootfs_prepare. */
  size_t n_keep = 3 + (c->idmap_trees ? cfg->n_mounts : 0);
  cleanup_free int *keep = calloc(n_keep, sizeof *keep);
  if (!keep) {
    coil_error_set(&err, ENOMEM, "init: fds to keep");
    fail_sync(c->sync_fd, &err);
  }
  keep[0] = c->sync_fd;
  keep[1] = c->start_fd;
  keep[2] = c->console_fd;
  for (size_t i = 3; i < n_keep; i++)
    keep[i] = c->idmap_trees[i - 3];
  if (fds_close_except(keep, n_keep, &err) < 0)
    fail_sync(c->sync_fd, &err);

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

  /* A foreground Python run (fd 1 is run's relay pipe) dies with its coil:
   * no one else knows its id. The parent answering SYNC_HOOKS below proves
   * it outlived this. */
  if (c->payload && c->out_fd >= 0 && pdeath_arm(&err) < 0)
    fail_sync(sync_fd, &err);

  /* 4. Names, loopback and sysctls, from inside the new namespaces. */
  if (set_names(cfg, &err) < 0 ||
      (namespaces_wants_new(&cfg->lnx, CLONE_NEWNET) &&
       loopback_up(&err) < 0) ||
      sysctl_apply(&cfg->lnx, &err) < 0)
    fail_sync(sync_fd, &err);

  /* 5. The filesystem view: mounts and devices, still with the host root
   *    visible so bind sources and createContainer hooks resolve. Only in a
   *    mount namespace of the container's own: in a shared one (the
   *    runtime's, or one joined by path) every mount and the pivot would
   *    change what the other processes there see, so the container is only
   *    chrooted into its rootfs (validate_config refused what needs a
   *    mount). */
  bool own_mounts = namespaces_wants_new(&cfg->lnx, CLONE_NEWNS);
  struct coil_rootfs_opts ro = {
      .rootfs = c->rootfs, .userns = namespaces_has(&cfg->lnx, CLONE_NEWUSER)};
  ro.n_cgroup_dirs =
      cgroup_own_dirs(c->cgroup, ro.cgroup_dirs, ROOTFS_CGROUP_DIRS);
  ro.idmap_trees = c->idmap_trees;
  if (!c->skip_rootfs && own_mounts && rootfs_prepare(cfg, &ro, &err) < 0)
    fail_sync(sync_fd, &err);
  /* Made while the host's /proc is still in this mount namespace: the
   * kernel lets a new procfs be made only where one is fully visible. */
  if (c->proc_fd && own_mounts && namespaces_wants_new(&cfg->lnx, CLONE_NEWPID))
    open_payload_proc();
  log_debug("init: namespaces joined, mounts done");

  /* 6. prestart/createRuntime run in the runtime namespace (the parent),
   *    createContainer here, before pivot_root. */
  if (sync_send(sync_fd, SYNC_HOOKS, NULL, &err) < 0 ||
      sync_expect(sync_fd, SYNC_HOOKS_DONE, NULL, 0, &err) < 0)
    _exit(INIT_FAILED);
  if (cfg->hooks[COIL_HOOK_CREATE_CONTAINER].n) {
    /* Lifecycle step 5, after the environment exists: "created", as the
     * parent's hooks get. */
    cleanup_free char *st = state_for_hooks(c, host_pid, "created");
    if (hooks_run(cfg, COIL_HOOK_CREATE_CONTAINER, st ? st : "{}", &err) < 0)
      fail_sync(sync_fd, &err);
  }

  /* 7. pivot_root (chroot only in a shared mount namespace, as runc), then
   *    masked/read-only paths and the read-only root. */
  if (!c->skip_rootfs && own_mounts &&
      (rootfs_pivot(&ro, &err) < 0 ||
       (cfg->process.cwd && rootfs_make_cwd(cfg->process.cwd, &err) < 0) ||
       rootfs_finalize(cfg, &err) < 0))
    fail_sync(sync_fd, &err);
  if (!c->skip_rootfs && !own_mounts &&
      (chroot_rootfs(c->rootfs, &err) < 0 ||
       (cfg->process.cwd && rootfs_make_cwd(cfg->process.cwd, &err) < 0)))
    fail_sync(sync_fd, &err);

  /* As runc: a program that cannot run fails create, not start, so clients
   * see it where they look for it (podman: exit 127 or 126). */
  if (!c->payload && cfg->has_process &&
      execpath_check(&cfg->process, &err) < 0)
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

  /* 11. The environment, then the privilege drop both modes share (a
   *     payload only adds steps after it; only stdio and the start
   *     connection, close-on-exec, stay open). */
  struct privileges pv = privileges_of(c);
  if (privileges_set_environment(&cfg->process, &err) < 0 ||
      privileges_drop(&pv, (int[]){conn, payload_proc},
                      payload_proc >= 0 ? 2 : 1, &err) < 0)
    fail_start(conn, &err);
  if (pdeath_parent_gone(conn))
    _exit(INIT_FAILED);

  /* 12. seccomp as close to execve as possible, so the profile need not
   *     allow the steps above (a payload brings its own filter). */
  if (c->seccomp && !privileges_seccomp_first(&pv) &&
      seccomp_profile_load(c->seccomp, &err) < 0)
    fail_start(conn, &err);

  /* 13. startContainer hooks, as runc runs them: last before the user's
   *     code, with exactly its ids, capabilities, no_new_privs and seccomp
   *     filter, so a hook from the image gets nothing the process lacks. */
  if (cfg->hooks[COIL_HOOK_START_CONTAINER].n) {
    cleanup_free char *st = state_for_hooks(c, host_pid, "created");
    if (hooks_run(cfg, COIL_HOOK_START_CONTAINER, st ? st : "{}", &err) < 0)
      fail_start(conn, &err);
  }

  /* 14. A payload (Python sandbox mode) takes over from here; otherwise
   *     execve. The start connection is close-on-exec, so `coil start` sees
   *     EOF on success and our message on failure. */
  if (c->payload)
    c->payload(c->payload_arg, conn);
  execvp(cfg->process.args.v[0], cfg->process.args.v);
  coil_error_sys(&err, errno, "process.args[0]: exec %s",
                 cfg->process.args.v[0]);
  fail_start(conn, &err);
}
