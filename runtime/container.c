#include "container.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "caps.h"
#include "cgroup.h"
#include "cleanup.h"
#include "config.h"
#include "deadline.h"
#include "device_policy.h"
#include "hooks.h"
#include "id.h"
#include "idmap_mount.h"
#include "init.h"
#include "libmount_load.h"
#include "log.h"
#include "mountopts.h"
#include "namespaces.h"
#include "oci_state.h"
#include "pidfile.h"
#include "rlimits.h"
#include "seccomp_profile.h"
#include "state.h"
#include "sync.h"
#include "sysctl.h"
#include "terminal.h"
#include "tty_proxy.h"

static void cgroup_freep(struct coil_cgroup **c) {
  if (*c)
    cgroup_free(*c);
}
#define cleanup_cgroup __attribute__((cleanup(cgroup_freep)))

static void seccomp_freep(struct coil_seccomp_profile **p) {
  if (*p)
    seccomp_profile_free(*p);
}

static void now_rfc3339(char *out, size_t cap) {
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  size_t n = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out + n, cap - n, ".%09ldZ", ts.tv_nsec);
}

/* Host LSM fields coil does not apply: say so rather than pretend. */
static void warn_lsm(const struct coil_config *cfg) {
  bool apparmor = access("/sys/kernel/security/apparmor", F_OK) == 0;
  bool selinux = access("/sys/fs/selinux/enforce", F_OK) == 0;
  if (cfg->process.apparmor_profile)
    log_warn("process.apparmorProfile: %s; ignored",
             apparmor ? "AppArmor profiles are not applied by coil"
                      : "the host has no AppArmor");
  if (cfg->process.selinux_label)
    log_warn("process.selinuxLabel: %s; ignored",
             selinux ? "SELinux labels are not applied by coil"
                     : "the host has no SELinux");
  if (cfg->lnx.mount_label)
    log_warn("linux.mountLabel: %s; ignored",
             selinux ? "SELinux labels are not applied by coil"
                     : "the host has no SELinux");
}

/* A container without a mount namespace of its own (none listed, or one
 * joined by path) shares its mounts with other processes, the host's when
 * it shares the runtime's: coil then mounts nothing and only chroots into
 * root.path. What cannot be had without a mount is refused; the mounts
 * list (which the default spec always has) is left out with a warning. */
static int shared_mount_ns_check(const struct coil_config *cfg,
                                 struct coil_error *err) {
  if (namespaces_wants_new(&cfg->lnx, CLONE_NEWNS))
    return 0;
  static const char why[] = "needs a mount namespace of the container's own "
                            "(a new \"mount\" in linux.namespaces)";
  if (cfg->root_readonly)
    return coil_error_set(err, EINVAL, "root.readonly: %s", why);
  if (cfg->lnx.masked_paths.n)
    return coil_error_set(err, EINVAL, "linux.maskedPaths: %s", why);
  if (cfg->lnx.readonly_paths.n)
    return coil_error_set(err, EINVAL, "linux.readonlyPaths: %s", why);
  if (cfg->n_mounts)
    log_warn("mounts: not mounted: the container shares its mount namespace, "
             "where coil changes nothing");
  if (cfg->lnx.n_devices)
    log_warn("linux.devices: not created: the container shares its mount "
             "namespace, where coil changes nothing");
  if (cfg->lnx.rootfs_propagation)
    log_warn("linux.rootfsPropagation: ignored: the container shares its "
             "mount namespace, where coil changes nothing");
  return 0;
}

/* Everything in the config that can be checked without side effects is
 * checked here, before any state, cgroup or process exists. */
static int validate_config(const struct coil_config *cfg,
                           const struct coil_create_opts *o, bool own_rootfs,
                           struct coil_error *err) {
  /* The runtime spec lets create go without a process (start must then
   * fail): init waits as usual and container_start refuses. */
  if (cfg->has_process && cfg->process.args.n == 0)
    return coil_error_set(err, EINVAL, "process.args: must not be empty");
  if (own_rootfs && shared_mount_ns_check(cfg, err) < 0)
    return -1;
  if (cfg->process.terminal && !o->console_socket && !o->terminal_fd)
    return coil_error_set(err, EINVAL,
                          "process.terminal: true needs --console-socket "
                          "(or a run that is not detached)");
  if (!cfg->process.terminal && o->console_socket)
    return coil_error_set(
        err, EINVAL, "--console-socket: given but process.terminal is false");
  if (namespaces_validate(&cfg->lnx, err) < 0 ||
      sysctl_validate(&cfg->lnx, err) < 0)
    return -1;
  /* Loaded here, from the host's filesystem, for init's mounts. */
  if (!libmount_calls(err))
    return -1;
  for (size_t i = 0; i < cfg->n_mounts; i++) {
    char field[32];
    snprintf(field, sizeof field, "mounts[%zu]", i);
    struct coil_mount_opts mo;
    if (mountopts_parse(&cfg->mounts[i].options, field, &mo, err) < 0)
      return -1;
    mountopts_free(&mo);
  }
  if (cfg->lnx.rootfs_propagation) {
    unsigned long flags;
    if (mountopts_propagation(cfg->lnx.rootfs_propagation, &flags) < 0)
      return coil_error_set(err, EINVAL,
                            "linux.rootfsPropagation: unknown \"%s\"",
                            cfg->lnx.rootfs_propagation);
  }
  warn_lsm(cfg);
  return 0;
}

static int resolve_rootfs(const struct coil_config *cfg, const char *bundle,
                          char **out, struct coil_error *err) {
  cleanup_free char *joined = NULL;
  if (cfg->root_path[0] == '/')
    joined = strdup(cfg->root_path);
  else if (asprintf(&joined, "%s/%s", bundle, cfg->root_path) < 0)
    joined = NULL;
  if (!joined)
    return coil_error_sys(err, ENOMEM, "root.path");
  char *real = realpath(joined, NULL);
  if (!real)
    return coil_error_sys(err, errno, "root.path: %s", joined);
  struct stat sb;
  if (stat(real, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
    free(real);
    return coil_error_set(err, ENOTDIR, "root.path: %s is not a directory",
                          joined);
  }
  *out = real;
  return 0;
}

/* The start socket's address goes through /proc/self/fd, so a long --root
 * or id never overflows sun_path. */
static struct sockaddr_un start_socket_addr(int dirfd) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  snprintf(addr.sun_path, sizeof addr.sun_path, "/proc/self/fd/%d/start.sock",
           dirfd);
  return addr;
}

static int start_socket_listen(int dirfd, struct coil_error *err) {
  struct sockaddr_un addr = start_socket_addr(dirfd);
  cleanup_close int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    return coil_error_sys(err, errno, "start socket");
  if (bind(s, (struct sockaddr *)&addr, sizeof addr) < 0)
    return coil_error_sys(err, errno, "start socket: bind");
  if (listen(s, 1) < 0)
    return coil_error_sys(err, errno, "start socket: listen");
  return steal_fd(s);
}

static int write_oom_score_adj(pid_t pid, int value, struct coil_error *err) {
  char path[64], buf[16];
  snprintf(path, sizeof path, "/proc/%d/oom_score_adj", pid);
  int n = snprintf(buf, sizeof buf, "%d", value);
  cleanup_close int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, buf, (size_t)n) != n)
    return coil_error_sys(
        err, errno,
        "process.oomScoreAdj: write %d to %s (lowering it needs "
        "CAP_SYS_RESOURCE)",
        value, path);
  return 0;
}

static char *hook_state(const char *id, const char *status, pid_t pid,
                        const char *bundle, const struct coil_config *cfg) {
  struct coil_oci_state s = {
      .id = id, .status = status, .pid = pid, .bundle = bundle, .cfg = cfg};
  return oci_state_json(&s, false);
}

struct create_ctx {
  const struct coil_create_opts *o;
  struct coil_config *cfg;
  char *bundle;
  char *rootfs;
  struct coil_state_dir dir;
  int dirfd; /* dir.fd */
  struct coil_cgroup *cg;
  /* The systemd driver's cgroup is made once init exists (see spawn_init):
   * its arguments, and the state that then records it. */
  bool systemd_cgroup;
  const struct coil_resources *res;
  const struct dev_policy *devices;
  const char *cgroup_name;
  struct coil_state *st;
  char *cg_text; /* st->cgroup */
  /* Where the cgroup will be: what init, cloned before systemd made it,
   * shows in its cgroup mount (the same directories). */
  const struct coil_cgroup *cg_planned;
  pid_t pid;
  const struct coil_payload *payload; /* zeroed: process.args */
  int relay[2];                       /* run's envelope pipe, or -1s */
  int tty_master; /* the pty master for a foreground run, or -1 */
};

/* struct clone_args of clone3(2), from the kernel's uapi (glibc 2.36 has no
 * wrapper), and the flag that places the child into a v2 cgroup at birth. */
struct coil_clone_args {
  uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size,
      tls, set_tid, set_tid_size, cgroup;
};
#define COIL_CLONE_INTO_CGROUP 0x200000000ULL

/* A fork-like clone into new namespaces; with a v2 cgroup fd the child is
 * born in that cgroup (no migration), else *in_cgroup stays false. */
static pid_t clone_into_cgroup(int flags, int cgroup_fd, bool *in_cgroup) {
  if (cgroup_fd >= 0) {
    struct coil_clone_args a = {.flags =
                                    (uint64_t)flags | COIL_CLONE_INTO_CGROUP,
                                .exit_signal = SIGCHLD,
                                .cgroup = (uint64_t)cgroup_fd};
    pid_t pid = (pid_t)syscall(SYS_clone3, &a, sizeof a);
    if (pid >= 0) {
      *in_cgroup = true;
      return pid;
    }
    if (errno != ENOSYS && errno != E2BIG && errno != EINVAL)
      return -1;
  }
  return (pid_t)syscall(SYS_clone, (unsigned long)flags | SIGCHLD, 0, 0, 0, 0);
}

/* Joining a user namespace by path must come before the other namespaces
 * are created, so they belong to it; the parent must stay host root for the
 * cgroup and hooks, so a short-lived middle process joins and clones. The
 * parent is a subreaper, so init is reparented to it and `run` can reap it.
 * Returns 0 in init, its pid in the parent, -1 on failure. */
static pid_t clone_in_user_namespace(const char *path, int flags,
                                     struct coil_error *err) {
  cleanup_close int userfd = open(path, O_RDONLY | O_CLOEXEC);
  if (userfd < 0)
    return coil_error_sys(err, errno,
                          "linux.namespaces: open user namespace %s", path);
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0)
    return coil_error_sys(err, errno, "pipe");
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  pid_t mid = fork();
  if (mid < 0) {
    int e = errno;
    close(p[0]);
    close(p[1]);
    return coil_error_sys(err, e, "fork");
  }
  if (mid == 0) {
    close(p[0]);
    int result = -EINVAL;
    if (setns(userfd, CLONE_NEWUSER) < 0) {
      result = -errno;
    } else {
      pid_t c =
          (pid_t)syscall(SYS_clone, (unsigned long)flags | SIGCHLD, 0, 0, 0, 0);
      if (c == 0) {
        close(p[1]);
        return 0;
      }
      result = c < 0 ? -errno : c;
    }
    ssize_t w = write(p[1], &result, sizeof result);
    _exit(w == sizeof result ? 0 : 1);
  }
  close(p[1]);
  int result = -EPIPE;
  ssize_t r = read(p[0], &result, sizeof result);
  close(p[0]);
  waitpid(mid, NULL, 0);
  if (r != sizeof result || result < 0)
    return coil_error_sys(err, result < 0 ? -result : EPIPE,
                          "linux.namespaces: join user namespace %s and clone",
                          path);
  return result;
}

/* The runtime's id-mapped mounts for init (idmap_mount.h), closed in the
 * runtime once init has its copies. */
struct idmap_fds {
  int *fds;
  size_t n;
};

static void idmap_fds_release(struct idmap_fds *t) {
  if (t->fds)
    idmap_mounts_close(t->fds, t->n);
  free(t->fds);
  t->fds = NULL;
}

static int idmap_fds_prepare(const struct coil_config *cfg, struct idmap_fds *t,
                             struct coil_error *err) {
  if (!cfg->n_mounts)
    return 0;
  t->fds = calloc(cfg->n_mounts, sizeof *t->fds);
  if (!t->fds)
    return coil_error_sys(err, ENOMEM, "mounts");
  t->n = cfg->n_mounts;
  if (idmap_mounts_prepare(cfg, t->fds, err) < 0) {
    free(t->fds);
    t->fds = NULL;
    return -1;
  }
  return 0;
}

/* Records the container's new cgroup in its state, so delete finds it. */
static int record_cgroup(struct create_ctx *x, struct coil_error *err) {
  x->cg_text = cgroup_serialize(x->cg);
  if (!x->cg_text)
    return coil_error_sys(err, ENOMEM, "cgroup state");
  x->st->cgroup = x->cg_text;
  return state_write(x->dirfd, x->st, err);
}

/* systemd makes no empty scope: the unit is started holding init, which
 * waits for SYNC_GO, so its limits are in place before it runs anything. */
static int create_systemd_cgroup(struct create_ctx *x, pid_t pid,
                                 struct coil_error *err) {
  struct coil_cgroup_env env = {.systemd = true, .pid = pid};
  if (cgroup_create(&env, x->cfg->lnx.cgroups_path, x->cgroup_name, x->res,
                    x->devices, &x->cg, err) < 0)
    return -1;
  return record_cgroup(x, err);
}

/* The parent's side of the setup handshake with init (see init.c). */
static int spawn_init(struct create_ctx *x, const struct coil_caps *caps,
                      const struct coil_rlimits *rl,
                      const struct coil_seccomp_profile *sp,
                      struct coil_error *err) {
  const struct coil_config *cfg = x->cfg;
  /* Init is born non-dumpable, so no container process (in a pid namespace
   * it shares) can open its /proc/PID/mem, fd or exe without
   * CAP_SYS_PTRACE over the host; its execve makes the user's process
   * dumpable again, and a Python sandbox stays as it is. */
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
    return coil_error_sys(err, errno, "prctl(PR_SET_DUMPABLE)");
  cleanup_close int console = -1;
  cleanup_close int tty_sock = -1;
  if (x->o->console_socket &&
      terminal_connect(x->o->console_socket, &console, err) < 0)
    return -1;
  if (x->o->terminal_fd && !x->o->console_socket && cfg->process.terminal) {
    int tv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, tv) < 0)
      return coil_error_sys(err, errno, "process.terminal: socketpair");
    tty_sock = tv[0];
    console = tv[1];
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
    return coil_error_sys(err, errno, "socketpair");
  cleanup_close int parent_end = sv[0];
  cleanup_close int child_end = sv[1];
  cleanup_close int start_fd = start_socket_listen(x->dirfd, err);
  if (start_fd < 0)
    return -1;
  __attribute__((cleanup(idmap_fds_release))) struct idmap_fds idmap = {0};
  if (idmap_fds_prepare(cfg, &idmap, err) < 0)
    return -1;
  struct coil_cgroup_join join = {.v2_fd = -1};
  if (x->cg && cgroup_join_prepare(x->cg, &join, err) < 0)
    return -1;
  struct ns_saved saved;
  if (namespaces_parent_enter(&cfg->lnx, &saved, err) < 0) {
    cgroup_join_close(&join);
    return -1;
  }
  int flags = namespaces_clone_flags(&cfg->lnx);
  bool born_in_cgroup = false;
  pid_t pid;
  if (namespaces_user_path(&cfg->lnx))
    pid = clone_in_user_namespace(namespaces_user_path(&cfg->lnx), flags, err);
  else
    pid = clone_into_cgroup(flags, join.v2_fd, &born_in_cgroup);
  if (pid == 0) {
    struct init_ctx ic = {.cfg = cfg,
                          .id = x->o->id,
                          .bundle = x->bundle,
                          .rootfs = x->rootfs,
                          .sync_fd = child_end,
                          .start_fd = start_fd,
                          .console_fd = console,
                          .caps = caps,
                          .rlimits = rl,
                          .seccomp = sp,
                          .out_fd = x->relay[1],
                          .skip_rootfs = x->payload->no_pivot,
                          .keep_ids_and_caps = x->payload->keep_ids_and_caps,
                          .proc_fd = x->payload->proc_fd,
                          .payload = x->payload->run,
                          .payload_arg = x->payload->arg,
                          .cgroup_join = &join,
                          .cgroup = x->cg ? x->cg : x->cg_planned,
                          .idmap_trees = idmap.fds};
    close(parent_end);
    if (x->relay[0] >= 0)
      close(x->relay[0]);
    init_main(&ic);
  }
  int clone_errno = errno;
  cgroup_join_close(&join);
  idmap_fds_release(&idmap);
  struct coil_error rerr;
  if (namespaces_parent_restore(&saved, &rerr) < 0) {
    if (pid > 0)
      x->pid = pid;
    *err = rerr;
    return -1;
  }
  /* err may hold a stale message of an earlier, handled failure: only the
   * user-namespace path sets it for the clone. */
  if (pid < 0)
    return namespaces_user_path(&cfg->lnx)
               ? -1
               : coil_error_sys(err, clone_errno, "clone");
  x->pid = pid;
  close(steal_fd(child_end));
  close(steal_fd(start_fd));
  if (console >= 0)
    close(steal_fd(console));

  char payload[32];
  snprintf(payload, sizeof payload, "%d", pid);
  /* Born in the v2 cgroup, init moves itself into the v1 ones; otherwise
   * (an old kernel, a joined user namespace) the parent moves it. */
  if (namespaces_write_id_maps(pid, &cfg->lnx, err) < 0 ||
      (x->cg && !born_in_cgroup && cgroup_enter(x->cg, pid, err) < 0) ||
      (x->systemd_cgroup && create_systemd_cgroup(x, pid, err) < 0))
    return -1;
  if (cfg->process.has_oom_score_adj &&
      write_oom_score_adj(pid, cfg->process.oom_score_adj, err) < 0)
    return -1;
  if (sync_send(parent_end, SYNC_GO, payload, err) < 0 ||
      sync_expect(parent_end, SYNC_HOOKS, NULL, 0, err) < 0)
    return -1;
  /* The runtime spec's statuses go by its lifecycle steps: "creating" is
   * step 2, making the environment; these hooks are steps 3 and 4, after
   * it, so "created" (as crun and runtime-tools' hooks_stdin; runc says
   * "creating"). */
  if (cfg->hooks[COIL_HOOK_PRESTART].n ||
      cfg->hooks[COIL_HOOK_CREATE_RUNTIME].n) {
    cleanup_free char *st =
        hook_state(x->o->id, "created", pid, x->bundle, cfg);
    if (hooks_run(cfg, COIL_HOOK_PRESTART, st ? st : "{}", err) < 0 ||
        hooks_run(cfg, COIL_HOOK_CREATE_RUNTIME, st ? st : "{}", err) < 0)
      return -1;
  }
  if (sync_send(parent_end, SYNC_HOOKS_DONE, NULL, err) < 0 ||
      sync_expect(parent_end, SYNC_READY, NULL, 0, err) < 0)
    return -1;
  /* Init sent the master before it reported ready. */
  if (tty_sock >= 0 && tty_receive_master(tty_sock, &x->tty_master, err) < 0)
    return -1;
  return 0;
}

/* Init runs setup inside its cgroup, so a memory limit below what setup
 * needs gets it OOM-killed before the program runs (the parent then sees
 * the socket end or reset); the cgroup is new, so any OOM kill it recorded
 * is init's, and the cause of whatever failed. */
static void oom_during_setup(const struct coil_resources *res,
                             struct coil_error *err) {
  if (res && res->has_memory_limit && res->memory_limit >= 0)
    coil_error_set(err, ENOMEM,
                   "linux.resources.memory.limit: %lld bytes is too low: the "
                   "OOM killer killed container init during setup",
                   (long long)res->memory_limit);
  else
    coil_error_set(err, ENOMEM,
                   "the OOM killer killed container init during setup");
}

static void create_rollback(struct create_ctx *x) {
  struct coil_error ignored;
  if (x->pid > 0) {
    kill(x->pid, SIGKILL);
    waitpid(x->pid, NULL, 0);
  }
  if (x->cg && cgroup_destroy(x->cg, &ignored) < 0)
    log_warn("rollback: %s", ignored.msg);
  if (x->dir.fd >= 0 && state_dir_remove(&x->dir, &ignored) < 0)
    log_warn("rollback: %s", ignored.msg);
}

static int container_create_parsed(const struct coil_create_opts *o,
                                   struct coil_config *cfg, const char *raw,
                                   size_t raw_len, char *bundle, char *rootfs,
                                   const struct coil_payload *payload,
                                   pid_t *pid_out, struct coil_error *err);

int container_create(const struct coil_create_opts *o, pid_t *pid_out,
                     struct coil_error *err) {
  if (id_validate(o->id, err) < 0)
    return -1;
  cleanup_free char *bundle = realpath(o->bundle ? o->bundle : ".", NULL);
  if (!bundle)
    return coil_error_sys(err, errno, "--bundle %s",
                          o->bundle ? o->bundle : ".");
  cleanup_free char *config_path = NULL;
  if (asprintf(&config_path, "%s/config.json", bundle) < 0)
    return coil_error_sys(err, ENOMEM, "config path");
  cleanup_free char *raw = NULL;
  size_t raw_len = 0;
  if (config_read_file(config_path, &raw, &raw_len, err) < 0)
    return -1;
  cleanup_config struct coil_config *cfg = NULL;
  if (config_parse(raw, raw_len, &cfg, err) < 0 ||
      config_resolve_mount_sources(cfg, bundle, err) < 0)
    return -1;
  cleanup_free char *rootfs = NULL;
  if (resolve_rootfs(cfg, bundle, &rootfs, err) < 0)
    return -1;
  struct coil_payload payload = {0};
  if (o->prepare &&
      o->prepare(o->prepare_arg, cfg, bundle, rootfs, &payload, err) < 0)
    return -1;
  return container_create_parsed(o, cfg, raw, raw_len, bundle, rootfs, &payload,
                                 pid_out, err);
}

static int container_create_parsed(const struct coil_create_opts *o,
                                   struct coil_config *cfg, const char *raw,
                                   size_t raw_len, char *bundle, char *rootfs,
                                   const struct coil_payload *payload,
                                   pid_t *pid_out, struct coil_error *err) {
  if (validate_config(cfg, o, !payload->no_pivot, err) < 0)
    return -1;
  struct coil_caps caps;
  struct coil_rlimits rl;
  __attribute__((cleanup(seccomp_freep))) struct coil_seccomp_profile *sp =
      NULL;
  if (caps_parse(&cfg->process, &caps, err) < 0 ||
      rlimits_parse(&cfg->process, &rl, err) < 0 || rlimits_check(&rl, err) < 0)
    return -1;
  if (!payload->own_seccomp && cfg->lnx.has_seccomp &&
      seccomp_profile_build(&cfg->lnx.seccomp, &sp, err) < 0)
    return -1;
  /* Only the cgroup layer switched off (sandbox.disable) goes without. */
  bool cgroups = !payload->no_cgroup;
  struct dev_policy devices __attribute__((cleanup(dev_policy_free))) = {0};
  if (cgroups && dev_policy_for_config(&cfg->lnx, &devices, err) < 0)
    return -1;

  struct create_ctx x = {.o = o,
                         .dir = COIL_STATE_DIR_INIT,
                         .dirfd = -1,
                         .payload = payload,
                         .relay = {-1, -1},
                         .tty_master = -1};
  x.cfg = cfg;
  x.bundle = bundle;
  x.rootfs = rootfs;
  log_debug("create %s: bundle %s, rootfs %s, namespaces 0x%x", o->id, bundle,
            rootfs, (unsigned)namespaces_clone_flags(&cfg->lnx));
  char created[64];
  now_rfc3339(created, sizeof created);
  char cgroup_name[COIL_ID_DIRNAME_MAX];
  id_dirname(o->id, cgroup_name);
  const struct coil_resources *res =
      cfg->lnx.has_resources ? &cfg->lnx.resources : NULL;
  /* Until create finishes the state says "creating" and names what it is
   * about to make, so a create killed midway leaves nothing delete cannot
   * find. */
  cleanup_free char *planned = NULL;
  struct coil_cgroup_env cg_env = {.systemd = o->systemd_cgroup};
  cleanup_cgroup struct coil_cgroup *plan = NULL;
  if (cgroups) {
    if (cgroup_plan(&cg_env, cfg->lnx.cgroups_path, cgroup_name, res, &devices,
                    &plan, err) < 0)
      return -1;
    planned = cgroup_serialize(plan);
    if (!planned)
      return coil_error_sys(err, ENOMEM, "cgroup state");
  }
  struct coil_state st = {.id = (char *)o->id,
                          .bundle = bundle,
                          .rootfs = rootfs,
                          .created = created,
                          .creating = true,
                          .cgroup_planned = planned};
  if (state_dir_create(o->root, o->id, &st, &x.dir, err) < 0)
    return -1;
  x.dirfd = x.dir.fd;
  x.st = &st;
  x.systemd_cgroup = cgroups && o->systemd_cgroup;
  x.res = res;
  x.devices = &devices;
  x.cgroup_name = cgroup_name;
  x.cg_planned = plan;
  int r = state_write_file(x.dirfd, "config.json", raw, raw_len, err);
  if (r == 0 && cgroups && !x.systemd_cgroup) {
    r = cgroup_create(NULL, cfg->lnx.cgroups_path, cgroup_name, res, &devices,
                      &x.cg, err);
    if (r == 0)
      r = record_cgroup(&x, err);
  }
  if (r == 0 && payload->relay_stdout && o->relay_fd &&
      (payload->relay_duplex
           ? socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, x.relay)
           : pipe2(x.relay, O_CLOEXEC)) < 0)
    r = coil_error_sys(err, errno, "relay channel");
  if (r == 0)
    r = spawn_init(&x, &caps, &rl, sp, err);
  if (r < 0 && x.cg && cgroup_oom_killed(x.cg))
    oom_during_setup(res, err);
  if (x.relay[1] >= 0)
    close(x.relay[1]);
  if (r == 0) {
    log_debug("create %s: init is pid %d, cgroup %s", o->id, x.pid,
              x.cg_text ? x.cg_text : "-");
    st.pid = x.pid;
    st.pid_start = state_pid_start_time(x.pid);
    st.creating = false;
    r = state_write(x.dirfd, &st, err);
  }
  if (r == 0 && o->pid_file)
    r = pidfile_write(o->pid_file, x.pid, err);
  if (r < 0) {
    create_rollback(&x);
    if (x.relay[0] >= 0)
      close(x.relay[0]);
    if (x.tty_master >= 0)
      close(x.tty_master);
  } else {
    *pid_out = x.pid;
    if (o->relay_fd)
      *o->relay_fd = x.relay[0];
    if (x.tty_master >= 0)
      *o->terminal_fd = x.tty_master;
  }
  if (x.cg)
    cgroup_free(x.cg);
  free(x.cg_text);
  state_dir_close(&x.dir);
  return r;
}

static int load_state_config(int dirfd, struct coil_config **cfg,
                             struct coil_error *err) {
  cleanup_free char *raw = NULL;
  size_t len;
  if (state_read_file(dirfd, "config.json", &raw, &len, err) < 0)
    return -1;
  return config_parse(raw, len, cfg, err);
}

/* Connects to init's start socket; returns the fd or -1. */
static int start_socket_connect(int dirfd, struct coil_error *err) {
  struct sockaddr_un addr = start_socket_addr(dirfd);
  cleanup_close int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    return coil_error_sys(err, errno, "start socket");
  if (connect(s, (struct sockaddr *)&addr, sizeof addr) < 0)
    return coil_error_sys(err, errno, "start: connect to container init");
  return steal_fd(s);
}

/* Validates the id, opens (with lock, locks) the state directory and reads
 * the state. */
static int open_state(const char *root, const char *id, bool lock,
                      struct coil_state_dir *d, struct coil_state **st,
                      struct coil_error *err) {
  if (id_validate(id, err) < 0 || state_dir_open(root, id, lock, d, err) < 0)
    return -1;
  if (state_read(d, id, st, err) < 0) {
    state_dir_close(d);
    return -1;
  }
  return 0;
}

/* Whether the recorded pid is still the container's init: the same start
 * time and, when the container has a cgroup, a member of it in some
 * hierarchy, so a pid recycled (or named by a tampered state) is never
 * signalled, while an init a client moved to a cgroup of its own in one
 * hierarchy (as the runtime spec allows) is still the container's. */
static bool init_is_ours(const struct coil_state *st) {
  if (st->pid <= 0 || state_pid_start_time(st->pid) != st->pid_start)
    return false;
  if (!st->cgroup)
    return true;
  cleanup_cgroup struct coil_cgroup *cg = NULL;
  struct coil_error ignored;
  return cgroup_deserialize(st->cgroup, &cg, &ignored) == 0 &&
         cgroup_holds(cg, st->pid);
}

static bool is_frozen(const struct coil_state *st) {
  cleanup_cgroup struct coil_cgroup *cg = NULL;
  struct coil_error ignored;
  return st->cgroup && cgroup_deserialize(st->cgroup, &cg, &ignored) == 0 &&
         cgroup_frozen(cg);
}

/* A create that did not finish is "creating" while its creator still holds
 * the lock, else "stopped" with nothing running; locked: d is ours. */
static enum coil_status status_of(const struct coil_state_dir *d,
                                  const struct coil_state *st, bool locked) {
  if (st->creating)
    return !locked && state_dir_busy(d) ? COIL_STATUS_CREATING
                                        : COIL_STATUS_STOPPED;
  if (!init_is_ours(st))
    return COIL_STATUS_STOPPED;
  if (is_frozen(st))
    return COIL_STATUS_PAUSED;
  return st->started ? COIL_STATUS_RUNNING : COIL_STATUS_CREATED;
}

/* Whether s has a live init (its pid is shown in state and list). */
static bool is_live(enum coil_status s) {
  return s == COIL_STATUS_CREATED || s == COIL_STATUS_RUNNING ||
         s == COIL_STATUS_PAUSED;
}

static long long boot_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void stop_after_failed_poststart(const struct coil_state *st);

int container_start(const char *root, const char *id, struct coil_error *err) {
  cleanup_state_dir struct coil_state_dir d = COIL_STATE_DIR_INIT;
  cleanup_state struct coil_state *st = NULL;
  if (open_state(root, id, true, &d, &st, err) < 0)
    return -1;
  int dirfd = d.fd;
  enum coil_status s = status_of(&d, st, true);
  if (s != COIL_STATUS_CREATED)
    return coil_error_set(err, EINVAL,
                          "container \"%s\" is %s: only a created "
                          "container can be started",
                          id, state_status_name(s));
  cleanup_config struct coil_config *cfg = NULL;
  if (load_state_config(dirfd, &cfg, err) < 0)
    return -1;
  if (!cfg->has_process)
    return coil_error_set(err, EINVAL,
                          "start container \"%s\": its config has no "
                          "process to run (delete it with --force)",
                          id);
  cleanup_close int conn = start_socket_connect(dirfd, err);
  if (conn < 0)
    return -1;
  if (write(conn, "s", 1) != 1)
    return coil_error_sys(err, errno, "start: write to container init");
  char msg[1024];
  size_t len = 0;
  for (;;) {
    ssize_t r = read(conn, msg + len, sizeof msg - 1 - len);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0 || (len += (size_t)r) >= sizeof msg - 1)
      break;
  }
  msg[len] = '\0';
  if (len > 0)
    return coil_error_set(err, EIO, "start container \"%s\": %s", id, msg);
  log_debug("start %s: init %d exec'd process.args", id, st->pid);
  st->started = true;
  st->started_boot_ms = boot_ms();
  if (state_write(dirfd, st, err) < 0)
    return -1;
  if (cfg->hooks[COIL_HOOK_POSTSTART].n) {
    cleanup_free char *js = hook_state(id, "running", st->pid, st->bundle, cfg);
    if (hooks_run(cfg, COIL_HOOK_POSTSTART, js ? js : "{}", err) < 0) {
      stop_after_failed_poststart(st);
      return -1;
    }
  }
  return 0;
}

/* Ends in runc's words "container not running": containerd's shim and
 * other runc clients match that text to tell "already exited" from a
 * failed kill. */
static int not_running(const char *id, struct coil_error *err) {
  return coil_error_set(err, ESRCH, "container \"%s\": container not running",
                        id);
}

/* Signals pid only if it is still the process recorded at create. */
static int signal_init(const struct coil_state *st, int sig,
                       struct coil_error *err) {
  cleanup_close int pidfd = (int)syscall(SYS_pidfd_open, st->pid, 0);
  if ((pidfd < 0 && errno == ESRCH) || !init_is_ours(st))
    return not_running(st->id, err);
  /* Without a pidfd (out of fds), the start time just read is what tells
   * the recorded init from a process that reused its pid. */
  long r = pidfd >= 0 ? syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0)
                      : kill(st->pid, sig);
  if (r < 0)
    return coil_error_sys(err, errno, "kill container \"%s\"", st->id);
  return 0;
}

/* How long after start a signal may wait for init to settle. */
#define JUST_STARTED_MS 2000
#define SETTLE_CHECK_MS 5

/* Whether init is not yet ready for sig: it is the init of a pid namespace,
 * which gets from outside only SIGKILL, SIGSTOP and the signals it catches,
 * blocks or ignores (any other is dropped, not left pending), and either
 * takes none of those ways, or has just begun to and is still running on
 * rather than waiting (a shell runs a trap between two commands, so a
 * signal caught before its `wait` is handled before what it waits for
 * starts). */
static bool init_unsettled(pid_t pid, int sig) {
  if (sig == SIGKILL || sig == SIGSTOP || sig <= 0 || sig > 64)
    return false;
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/status", pid);
  cleanup_fclose FILE *f = fopen(path, "re");
  if (!f)
    return false;
  char line[512];
  bool ns_init = false, running = false;
  unsigned long long taken = 0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "NSpid:", 6) == 0) {
      char *last = strrchr(line, '\t');
      ns_init = last && last != strchr(line, '\t') && atoi(last + 1) == 1;
    } else if (strncmp(line, "State:", 6) == 0) {
      running = line[6 + strspn(line + 6, " \t")] == 'R';
    } else if (strncmp(line, "SigBlk:", 7) == 0 ||
               strncmp(line, "SigIgn:", 7) == 0 ||
               strncmp(line, "SigCgt:", 7) == 0) {
      taken |= strtoull(line + 7, NULL, 16);
    }
  }
  return ns_init && (!(taken & (1ULL << (sig - 1))) || running);
}

/* A process just exec'd by start has had no time to install its handlers
 * (a shell's trap, a server's SIGTERM handler): a signal sent to it as the
 * init of its pid namespace would vanish although the container is
 * "running". As runc's kill is never lost that way (its init, not yet
 * exec'd, takes the signal), kill waits for init to settle, but only
 * within JUST_STARTED_MS of start: a program that never handles the signal
 * gets it (and drops it) at once after that. */
static void wait_until_settled(const struct coil_state *st, int sig) {
  /* A start time in the future is no state coil wrote: no wait. */
  if (!st->started || !st->started_boot_ms || st->started_boot_ms > boot_ms())
    return;
  long long until = st->started_boot_ms + JUST_STARTED_MS;
  while (boot_ms() < until && init_unsettled(st->pid, sig)) {
    struct timespec ts = {0, SETTLE_CHECK_MS * 1000000L};
    nanosleep(&ts, NULL);
  }
}

static int signal_all(const struct coil_cgroup *cg, int sig,
                      struct coil_error *err) {
  cleanup_free pid_t *pids = NULL;
  size_t n = 0;
  if (cgroup_pids(cg, &pids, &n, err) < 0)
    return -1;
  for (size_t i = 0; i < n; i++)
    if (kill(pids[i], sig) < 0 && errno != ESRCH)
      return coil_error_sys(err, errno, "kill %d", pids[i]);
  return 0;
}

int container_kill(const char *root, const char *id, int sig, bool all,
                   struct coil_error *err) {
  cleanup_state_dir struct coil_state_dir d = COIL_STATE_DIR_INIT;
  cleanup_state struct coil_state *st = NULL;
  if (open_state(root, id, true, &d, &st, err) < 0)
    return -1;
  enum coil_status s = status_of(&d, st, true);
  /* As runc, kill --all of a stopped container signals whatever is left in
   * its cgroup (often nothing) and succeeds: containerd's shim kills "all"
   * of a task whose init has exited before deleting it. */
  if (s == COIL_STATUS_STOPPED && !all)
    return not_running(id, err);
  cleanup_cgroup struct coil_cgroup *cg = NULL;
  if (st->cgroup && cgroup_deserialize(st->cgroup, &cg, err) < 0)
    return -1;
  if (s == COIL_STATUS_STOPPED)
    return cg ? signal_all(cg, sig, err) : 0;
  if (s == COIL_STATUS_RUNNING)
    wait_until_settled(st, sig);
  if ((all && cg ? signal_all(cg, sig, err) : signal_init(st, sig, err)) < 0)
    return -1;
  /* A frozen task takes its SIGKILL only once thawed (v1): as runc, thaw
   * a paused container for SIGKILL, and for SIGKILL only. */
  if (s == COIL_STATUS_PAUSED && sig == SIGKILL && cg)
    return cgroup_freeze(cg, false, err);
  return 0;
}

/* Without a pidfd, or when polling it fails, whether init is gone is
 * checked this often. */
#define GONE_CHECK_MS 10

/* Waits for a (possibly non-child) pid to exit, up to timeout_ms. */
static bool wait_gone(const struct coil_state *st, int timeout_ms) {
  cleanup_close int pidfd = (int)syscall(SYS_pidfd_open, st->pid, 0);
  if (pidfd < 0 && errno == ESRCH)
    return true;
  long long deadline = deadline_after_ms(deadline_now_ms(), timeout_ms);
  for (;;) {
    if (state_pid_start_time(st->pid) != st->pid_start)
      return true;
    int slice = deadline_slice_ms(deadline, deadline_now_ms(),
                                  pidfd < 0 ? GONE_CHECK_MS : -1);
    if (slice == 0)
      return false;
    if (pidfd < 0) {
      struct timespec ts = {0, slice * 1000000L};
      nanosleep(&ts, NULL);
      continue;
    }
    struct pollfd pf = {.fd = pidfd, .events = POLLIN};
    int n = poll(&pf, 1, slice);
    if (n > 0)
      return true;
    if (n < 0 && errno != EINTR)
      close(steal_fd(pidfd));
  }
}

/* As runc: a failed poststart hook fails start and kills the container's
 * init; what is left is a stopped container for delete (run deletes it). */
static void stop_after_failed_poststart(const struct coil_state *st) {
  struct coil_error ignored;
  if (signal_init(st, SIGKILL, &ignored) == 0 && !wait_gone(st, 10000))
    log_warn("container \"%s\": init did not exit after SIGKILL", st->id);
}

/* Kills whatever is left in the cgroup (containers without a pid namespace
 * can leave orphans behind init). */
static void kill_leftovers(const struct coil_cgroup *cg) {
  for (int tries = 0; tries < 100; tries++) {
    cleanup_free pid_t *pids = NULL;
    size_t n = 0;
    struct coil_error ignored;
    if (cgroup_pids(cg, &pids, &n, &ignored) < 0 || n == 0)
      return;
    for (size_t i = 0; i < n; i++)
      kill(pids[i], SIGKILL);
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

int container_delete(const char *root, const char *id, bool force,
                     struct coil_error *err) {
  cleanup_state_dir struct coil_state_dir d = COIL_STATE_DIR_INIT;
  cleanup_state struct coil_state *st = NULL;
  if (force)
    state_remove_abandoned(root);
  if (open_state(root, id, true, &d, &st, err) < 0)
    return -1;
  cleanup_config struct coil_config *cfg = NULL;
  struct coil_error cerr;
  /* A create killed before it copied the config leaves none. */
  if (load_state_config(d.fd, &cfg, &cerr) < 0 && !st->creating)
    log_warn("delete: %s", cerr.msg);
  enum coil_status s = status_of(&d, st, true);
  log_debug("delete %s: status %s%s", id, state_status_name(s),
            force ? ", forced" : "");
  /* The runtime spec: deleting a container that is not stopped MUST fail;
   * a created one too (its init is waiting for start), unlike runc, which
   * kills it. Clients kill first or use --force (podman: delete --force;
   * containerd: kill, wait, delete). */
  if (s != COIL_STATUS_STOPPED && !force)
    return coil_error_set(err, EBUSY,
                          "container \"%s\" is %s: stop it first or use "
                          "delete --force",
                          id, state_status_name(s));
  /* A state whose cgroup does not parse still gets its init killed. */
  cleanup_cgroup struct coil_cgroup *cg = NULL;
  struct coil_error cg_err = {0};
  if (st->cgroup)
    cgroup_deserialize(st->cgroup, &cg, &cg_err);
  if (s != COIL_STATUS_STOPPED) {
    struct coil_error ignored;
    signal_init(st, SIGKILL, &ignored);
    /* Frozen, init would take the SIGKILL only once thawed (v1); paused
     * means the cgroup parsed. */
    if (s == COIL_STATUS_PAUSED && cg && cgroup_freeze(cg, false, err) < 0)
      return -1;
    if (!wait_gone(st, 10000))
      return coil_error_set(err, EBUSY, "container \"%s\": init did not exit",
                            id);
  }
  if (st->cgroup) {
    if (!cg) {
      *err = cg_err;
      return -1;
    }
    /* Left frozen by a pause whose init died since (a v2 SIGKILL works on
     * frozen tasks), the rest would not die either. */
    if (cgroup_frozen(cg) && cgroup_freeze(cg, false, err) < 0)
      return -1;
    kill_leftovers(cg);
    if (cgroup_destroy(cg, err) < 0)
      return -1;
  } else if (st->cgroup_planned) {
    /* Not known to have been made, so perhaps not ours: removed only if
     * there and empty, nothing in it is killed. */
    cleanup_cgroup struct coil_cgroup *planned = NULL;
    if (cgroup_deserialize(st->cgroup_planned, &planned, err) < 0 ||
        cgroup_destroy(planned, err) < 0)
      return -1;
  }
  /* Poststop pairs with a finished create (as the rollback of a failed one
   * runs no hooks either). */
  if (!st->creating && cfg && cfg->hooks[COIL_HOOK_POSTSTOP].n) {
    cleanup_free char *js = hook_state(id, "stopped", 0, st->bundle, cfg);
    hooks_run_all(cfg, COIL_HOOK_POSTSTOP, js ? js : "{}");
  }
  return state_dir_remove(&d, err);
}

/* The container's cgroup, for the commands that act on it: one with a live
 * init (not stopped, not half created). */
static int live_cgroup(const char *what, const struct coil_state_dir *d,
                       const struct coil_state *st, enum coil_status *s,
                       struct coil_cgroup **cg, struct coil_error *err) {
  *s = status_of(d, st, true);
  if (!is_live(*s))
    return coil_error_set(err, EINVAL, "%s: container \"%s\" is %s", what,
                          st->id, state_status_name(*s));
  if (!st->cgroup)
    return coil_error_set(err, ENOENT, "%s: container \"%s\" has no cgroup",
                          what, st->id);
  return cgroup_deserialize(st->cgroup, cg, err);
}

int container_pause(const char *root, const char *id, bool paused,
                    struct coil_error *err) {
  const char *what = paused ? "pause" : "resume";
  cleanup_state_dir struct coil_state_dir d = COIL_STATE_DIR_INIT;
  cleanup_state struct coil_state *st = NULL;
  cleanup_cgroup struct coil_cgroup *cg = NULL;
  enum coil_status s;
  if (open_state(root, id, true, &d, &st, err) < 0 ||
      live_cgroup(what, &d, st, &s, &cg, err) < 0)
    return -1;
  /* As runc: a created or running container can be paused, only a paused
   * one resumed. */
  if ((s == COIL_STATUS_PAUSED) == paused)
    return coil_error_set(err, EINVAL, "%s: container \"%s\" is %s%s", what, id,
                          state_status_name(s),
                          paused ? " already" : ", not paused");
  if (cgroup_freeze(cg, paused, err) < 0)
    return coil_error_prefix(err, "%s container \"%s\"", what, id);
  return 0;
}

int container_pids(const char *root, const char *id, pid_t **pids, size_t *n,
                   struct coil_error *err) {
  *pids = NULL;
  *n = 0;
  cleanup_state_dir struct coil_state_dir d = COIL_STATE_DIR_INIT;
  cleanup_state struct coil_state *st = NULL;
  cleanup_cgroup struct coil_cgroup *cg = NULL;
  if (open_state(root, id, false, &d, &st, err) < 0)
    return -1;
  /* A stopped container's cgroup is there (empty) until delete. */
  if (!st->cgroup)
    return coil_error_set(err, ENOENT, "ps: container \"%s\" has no cgroup",
                          id);
  if (cgroup_deserialize(st->cgroup, &cg, err) < 0)
    return -1;
  return cgroup_pids(cg, pids, n, err);
}

int container_watch(const char *root, const char *id, struct coil_cgroup **cg,
                    int *pidfd, struct coil_error *err) {
  *cg = NULL;
  *pidfd = -1;
  cleanup_state_dir struct coil_state_dir d = COIL_STATE_DIR_INIT;
  cleanup_state struct coil_state *st = NULL;
  if (open_state(root, id, false, &d, &st, err) < 0)
    return -1;
  /* Opened before the status check, which proves the pid still init's. */
  cleanup_close int fd =
      st->pid > 0 ? (int)syscall(SYS_pidfd_open, st->pid, 0) : -1;
  int fd_errno = errno;
  enum coil_status s;
  cleanup_cgroup struct coil_cgroup *c = NULL;
  if (live_cgroup("events", &d, st, &s, &c, err) < 0)
    return -1;
  if (fd < 0)
    return coil_error_sys(err, fd_errno, "events: pidfd_open %d", st->pid);
  *cg = steal_ptr(c);
  *pidfd = steal_fd(fd);
  return 0;
}

int container_update(const char *root, const char *id,
                     const struct coil_resources *res, struct coil_error *err) {
  cleanup_state_dir struct coil_state_dir d = COIL_STATE_DIR_INIT;
  cleanup_state struct coil_state *st = NULL;
  cleanup_cgroup struct coil_cgroup *cg = NULL;
  enum coil_status s;
  if (open_state(root, id, true, &d, &st, err) < 0 ||
      live_cgroup("update", &d, st, &s, &cg, err) < 0)
    return -1;
  if (cgroup_update(cg, res, err) < 0)
    return coil_error_prefix(err, "update container \"%s\"", id);
  return 0;
}

int container_view(const char *root, const char *id,
                   struct coil_container_view *v, struct coil_error *err) {
  *v = (struct coil_container_view){.pidfd = -1};
  cleanup_state_dir struct coil_state_dir d = COIL_STATE_DIR_INIT;
  cleanup_state struct coil_state *st = NULL;
  if (open_state(root, id, true, &d, &st, err) < 0)
    return -1;
  /* Opened before the check: when the check finds the recorded init, the
   * pidfd is that process and cannot come to name another. */
  cleanup_close int pidfd =
      st->pid > 0 ? (int)syscall(SYS_pidfd_open, st->pid, 0) : -1;
  v->status = status_of(&d, st, true);
  if (v->status == COIL_STATUS_CREATING)
    v->status = COIL_STATUS_STOPPED;
  if (!is_live(v->status))
    return 0;
  if (pidfd < 0)
    return coil_error_sys(err, errno, "container \"%s\": pidfd_open %d", id,
                          st->pid);
  if (load_state_config(d.fd, &v->cfg, err) < 0)
    return -1;
  if (st->cgroup && cgroup_deserialize(st->cgroup, &v->cgroup, err) < 0) {
    container_view_free(v);
    return -1;
  }
  v->pid = st->pid;
  v->pidfd = steal_fd(pidfd);
  return 0;
}

void container_view_free(struct coil_container_view *v) {
  if (v->cfg)
    config_free(v->cfg);
  if (v->cgroup)
    cgroup_free(v->cgroup);
  if (v->pidfd >= 0)
    close(v->pidfd);
  *v = (struct coil_container_view){.pidfd = -1};
}

static void limits_of(const struct coil_state *st,
                      struct coil_limit_report *r) {
  *r = (struct coil_limit_report){0};
  cleanup_cgroup struct coil_cgroup *cg = NULL;
  struct coil_error ignored;
  if (!st->cgroup || cgroup_deserialize(st->cgroup, &cg, &ignored) < 0)
    return;
  r->oom_killed = cgroup_oom_killed(cg);
  r->pids_limit_hits = cgroup_pids_limit_hits(cg);
}

void container_limits(const char *root, const char *id,
                      struct coil_limit_report *r) {
  *r = (struct coil_limit_report){0};
  cleanup_state_dir struct coil_state_dir d = COIL_STATE_DIR_INIT;
  cleanup_state struct coil_state *st = NULL;
  struct coil_error ignored;
  if (open_state(root, id, false, &d, &st, &ignored) == 0)
    limits_of(st, r);
}

int container_state_json(const char *root, const char *id, bool pretty,
                         char **json, struct coil_error *err) {
  cleanup_state_dir struct coil_state_dir d = COIL_STATE_DIR_INIT;
  cleanup_state struct coil_state *st = NULL;
  if (open_state(root, id, false, &d, &st, err) < 0)
    return -1;
  cleanup_config struct coil_config *cfg = NULL;
  struct coil_error cerr;
  if (load_state_config(d.fd, &cfg, &cerr) < 0 && !st->creating)
    log_warn("state: %s", cerr.msg);
  enum coil_status s = status_of(&d, st, false);
  struct coil_limit_report lim;
  limits_of(st, &lim);
  bool live = is_live(s);
  struct coil_oci_state os = {.id = st->id,
                              .status = state_status_name(s),
                              .pid = live ? st->pid : 0,
                              .bundle = st->bundle,
                              .rootfs = st->rootfs,
                              .created = st->created,
                              .oom_killed = lim.oom_killed,
                              .pids_limit_hits = lim.pids_limit_hits,
                              .cfg = cfg};
  *json = oci_state_json(&os, pretty);
  if (!*json)
    return coil_error_sys(err, ENOMEM, "state");
  return 0;
}

int container_list(const char *root, struct coil_container_info **out,
                   size_t *n, struct coil_error *err) {
  char **names = NULL;
  size_t nnames = 0;
  *out = NULL;
  *n = 0;
  if (state_list(root, &names, &nnames, err) < 0)
    return -1;
  struct coil_container_info *l = calloc(nnames ? nnames : 1, sizeof *l);
  if (!l) {
    for (size_t i = 0; i < nnames; i++)
      free(names[i]);
    free(names);
    return coil_error_sys(err, ENOMEM, "list");
  }
  size_t k = 0;
  for (size_t i = 0; i < nnames; i++) {
    struct coil_state_dir d = COIL_STATE_DIR_INIT;
    struct coil_state *st = NULL;
    struct coil_error lerr;
    if (names[i] && state_dir_open_name(root, names[i], &d, &lerr) == 0 &&
        state_read(&d, NULL, &st, &lerr) == 0) {
      enum coil_status s = status_of(&d, st, false);
      bool live = is_live(s);
      l[k].id = steal_ptr(st->id);
      l[k].pid = live ? st->pid : 0;
      l[k].status = state_status_name(s);
      l[k].bundle = steal_ptr(st->bundle);
      l[k].created = steal_ptr(st->created);
      k++;
      state_free(st);
    } else if (names[i] && lerr.err != ENOENT) {
      /* As runc: say which entry could not be read, list the others. */
      log_warn("list: %s", lerr.msg);
    }
    state_dir_close(&d);
    free(names[i]);
  }
  free(names);
  *out = l;
  *n = k;
  return 0;
}

void container_list_free(struct coil_container_info *l, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(l[i].id);
    free(l[i].bundle);
    free(l[i].created);
  }
  free(l);
}
