#include "exec_process.h"

#include <errno.h>
#include <fcntl.h>
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
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "cleanup.h"
#include "container.h"
#include "execpath.h"
#include "log.h"
#include "pidfile.h"
#include "privileges.h"
#include "seccomp_profile.h"
#include "sync.h"
#include "terminal.h"

/* Exit status of a setup step that failed (the error went to the parent). */
#define EXEC_SETUP_FAILED 255

/* The user namespace first, so the process holds every capability over the
 * namespaces it owns; the mount namespace last, as it moves root and cwd.
 * pid and time apply to children only: the joining process forks. */
static const struct {
  const char *name;
  int flag;
} ns_order[] = {
    {"user", CLONE_NEWUSER}, {"ipc", CLONE_NEWIPC}, {"uts", CLONE_NEWUTS},
    {"net", CLONE_NEWNET},   {"pid", CLONE_NEWPID}, {"cgroup", CLONE_NEWCGROUP},
    {"time", CLONE_NEWTIME}, {"mnt", CLONE_NEWNS},
};
#define NS_COUNT (sizeof ns_order / sizeof ns_order[0])

struct ns_set {
  int fd[NS_COUNT];
  size_t idx[NS_COUNT]; /* into ns_order */
  size_t n;
};

static void ns_set_close(struct ns_set *s) {
  for (size_t i = 0; i < s->n; i++)
    close(s->fd[i]);
  s->n = 0;
}

/* The namespaces of init that are not already ours (setns into one's own
 * user namespace fails; the others would be no-ops). A kernel without a
 * namespace type has no file for it. */
static int open_namespaces(pid_t pid, struct ns_set *s,
                           struct coil_error *err) {
  s->n = 0;
  for (size_t i = 0; i < NS_COUNT; i++) {
    char path[64], self[64];
    snprintf(path, sizeof path, "/proc/%d/ns/%s", pid, ns_order[i].name);
    snprintf(self, sizeof self, "/proc/self/ns/%s", ns_order[i].name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int e = errno;
    if (fd < 0 && e == ENOENT && access(self, F_OK) < 0)
      continue;
    if (fd < 0) {
      ns_set_close(s);
      return coil_error_sys(err, e, "open %s", path);
    }
    struct stat theirs, ours;
    if (fstat(fd, &theirs) == 0 && stat(self, &ours) == 0 &&
        theirs.st_ino == ours.st_ino && theirs.st_dev == ours.st_dev) {
      close(fd);
      continue;
    }
    s->fd[s->n] = fd;
    s->idx[s->n++] = i;
  }
  return 0;
}

struct exec_ctx {
  const struct exec_launch *l;
  const struct exec_spec *spec;
  const struct coil_seccomp_profile *seccomp;
  struct ns_set ns;
  int sync_fd; /* the children's end */
  int console_fd;
};

static void __attribute__((noreturn))
fail_sync(int fd, struct coil_error *err) {
  struct coil_error ignored;
  sync_send(fd, SYNC_ERROR, err->msg, &ignored);
  _exit(EXEC_SETUP_FAILED);
}

/* The process itself, in every namespace of init: the same steps as init
 * from its step 8 on, without the start handshake and the hooks. */
static void __attribute__((noreturn)) exec_child(const struct exec_ctx *x) {
  struct coil_error err = {0};
  const struct coil_process *p = &x->spec->p;
  /* Its own session: the caller's terminal is never its controlling one. */
  setsid();
  if (x->console_fd >= 0) {
    if (terminal_setup(x->console_fd, p, p->uid, p->gid, &err) < 0)
      fail_sync(x->sync_fd, &err);
    close(x->console_fd);
  }
  struct privileges pv = {.p = p,
                          .caps = &x->spec->caps,
                          .rlimits = &x->spec->rlimits,
                          .seccomp = x->seccomp};
  size_t n_keep = 1 + (size_t)x->l->preserve_fds;
  int *keep = calloc(n_keep, sizeof *keep);
  if (!keep) {
    coil_error_sys(&err, ENOMEM, "--preserve-fds");
    fail_sync(x->sync_fd, &err);
  }
  keep[0] = x->sync_fd;
  for (int i = 0; i < x->l->preserve_fds; i++)
    keep[1 + i] = 3 + i;
  if (privileges_set_environment(p, &err) < 0 ||
      privileges_drop(&pv, keep, n_keep, &err) < 0)
    fail_sync(x->sync_fd, &err);
  free(keep);
  /* As runc: a program that cannot run is an error of exec itself, in the
   * words clients match (podman: 127, 126). */
  if (execpath_check(p, &err) < 0)
    fail_sync(x->sync_fd, &err);
  if (x->seccomp && !privileges_seccomp_first(&pv) &&
      seccomp_profile_load(x->seccomp, &err) < 0)
    fail_sync(x->sync_fd, &err);
  /* The sync socket is close-on-exec: the parent reads EOF on success. */
  execvp(p->args.v[0], p->args.v);
  coil_error_sys(&err, errno, "process.args[0]: exec %s", p->args.v[0]);
  fail_sync(x->sync_fd, &err);
}

/* Between coil and the process: joins the namespaces (setns of a pid or
 * time namespace only applies to children), then forks the process as a
 * sibling, a child of coil exec, and reports its pid. */
static void __attribute__((noreturn)) exec_middle(struct exec_ctx *x) {
  struct coil_error err = {0};
  log_forget_file();
  if (sync_expect(x->sync_fd, SYNC_GO, NULL, 0, &err) < 0)
    _exit(EXEC_SETUP_FAILED);
  for (size_t i = 0; i < x->ns.n; i++) {
    int flag = ns_order[x->ns.idx[i]].flag;
    if (setns(x->ns.fd[i], flag) < 0) {
      coil_error_sys(&err, errno, "setns into the container's %s namespace",
                     ns_order[x->ns.idx[i]].name);
      fail_sync(x->sync_fd, &err);
    }
    if (flag == CLONE_NEWUSER && privileges_become_ns_root(&err) < 0)
      fail_sync(x->sync_fd, &err);
  }
  ns_set_close(&x->ns);
  pid_t pid = (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
  if (pid == 0)
    exec_child(x);
  if (pid < 0) {
    coil_error_sys(&err, errno, "fork into the container's pid namespace");
    fail_sync(x->sync_fd, &err);
  }
  char msg[32];
  snprintf(msg, sizeof msg, "%d", pid);
  _exit(sync_send(x->sync_fd, SYNC_READY, msg, &err) < 0 ? EXEC_SETUP_FAILED
                                                         : 0);
}

static void reap(pid_t pid, bool kill_first) {
  if (kill_first)
    kill(pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
    ;
}

/* The parent's side: cgroups, then the handshake. */
static int spawn(struct exec_ctx *x, const struct coil_cgroup *cg, pid_t init,
                 pid_t *out, struct coil_error *err) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
    return coil_error_sys(err, errno, "socketpair");
  cleanup_close int parent_end = sv[0];
  x->sync_fd = sv[1];
  pid_t mid = fork();
  if (mid == 0) {
    close(parent_end);
    exec_middle(x);
  }
  int fork_errno = errno;
  close(x->sync_fd);
  if (mid < 0)
    return coil_error_sys(err, fork_errno, "fork");
  /* Into the cgroups before it joins anything, so all it forks is born
   * there. */
  if ((cg && cgroup_enter_exec(cg, mid, init, err) < 0) ||
      sync_send(parent_end, SYNC_GO, NULL, err) < 0) {
    reap(mid, true);
    return -1;
  }
  char msg[32];
  int r = sync_expect(parent_end, SYNC_READY, msg, sizeof msg, err);
  reap(mid, false);
  if (r < 0)
    return -1;
  pid_t pid = (pid_t)atoi(msg);
  enum coil_sync_msg got;
  char text[1024];
  struct coil_error rerr;
  if (sync_recv(parent_end, &got, text, sizeof text, &rerr) < 0) {
    if (rerr.err == EPIPE) {
      *out = pid;
      return 0;
    }
    *err = rerr;
  } else {
    coil_error_set(err, EIO, "%s", text);
  }
  reap(pid, true);
  return -1;
}

static void seccomp_freep(struct coil_seccomp_profile **p) {
  if (*p)
    seccomp_profile_free(*p);
}

/* As runc: exec needs a live init; unlike runc, not a created one, whose
 * namespaces are not finished until start. */
static int check_status(const struct exec_launch *l,
                        const struct coil_container_view *v,
                        struct coil_error *err) {
  switch (v->status) {
  case COIL_STATUS_RUNNING:
    return 0;
  case COIL_STATUS_PAUSED:
    if (l->ignore_paused)
      return 0;
    return coil_error_set(err, EBUSY,
                          "cannot exec in a paused container \"%s\" (use "
                          "--ignore-paused to override)",
                          l->id);
  case COIL_STATUS_CREATED:
    return coil_error_set(err, EINVAL,
                          "container \"%s\" is created, not running: start "
                          "it before exec",
                          l->id);
  default:
    return coil_error_set(err, ESRCH,
                          "cannot exec in a stopped container \"%s\"", l->id);
  }
}

static int check_terminal(const struct exec_launch *l,
                          const struct exec_spec *s, struct coil_error *err) {
  if (s->p.terminal && !l->console_socket)
    return coil_error_set(err, EINVAL,
                          "a terminal (--tty or process.terminal) needs "
                          "--console-socket (coil does not proxy a "
                          "terminal)");
  if (!s->p.terminal && l->console_socket)
    return coil_error_set(err, EINVAL,
                          "--console-socket: given but no terminal was asked "
                          "for (--tty or process.terminal)");
  return 0;
}

static bool init_gone(int pidfd) {
  struct pollfd pf = {.fd = pidfd, .events = POLLIN};
  return poll(&pf, 1, 0) != 0;
}

int exec_start(const struct exec_launch *l, pid_t *pid,
               struct coil_error *err) {
  struct coil_container_view v
      __attribute__((cleanup(container_view_free))) = {.pidfd = -1};
  if (container_view(l->root, l->id, &v, err) < 0)
    return -1;
  if (v.cfg && v.cfg->sandbox.has_python)
    return coil_error_set(err, ENOTSUP,
                          "container %s runs in Python sandbox mode; exec is "
                          "not supported",
                          l->id);
  if (check_status(l, &v, err) < 0)
    return -1;
  struct exec_spec spec __attribute__((cleanup(exec_spec_free))) = {0};
  if (exec_spec_build(&v.cfg->process, l->flags, &spec, err) < 0 ||
      check_terminal(l, &spec, err) < 0 ||
      rlimits_check(&spec.rlimits, err) < 0)
    return -1;
  __attribute__((cleanup(seccomp_freep))) struct coil_seccomp_profile *sp =
      NULL;
  if (v.cfg->lnx.has_seccomp &&
      seccomp_profile_build(&v.cfg->lnx.seccomp, &sp, err) < 0)
    return -1;
  struct exec_ctx x = {.l = l, .spec = &spec, .seccomp = sp, .console_fd = -1};
  if (open_namespaces(v.pid, &x.ns, err) < 0)
    return -1;
  int r = 0;
  /* The files opened are init's only if init was still there after. */
  if (init_gone(v.pidfd))
    r = coil_error_set(err, ESRCH, "cannot exec in a stopped container \"%s\"",
                       l->id);
  if (r == 0 && l->console_socket)
    r = terminal_connect(l->console_socket, &x.console_fd, err);
  /* Non-dumpable until its execve, as init: no container process can open
   * its /proc/PID/mem, fd or exe (the sealed coil) meanwhile. */
  if (r == 0 && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
    r = coil_error_sys(err, errno, "prctl(PR_SET_DUMPABLE)");
  if (r == 0)
    r = spawn(&x, v.cgroup, v.pid, pid, err);
  ns_set_close(&x.ns);
  if (x.console_fd >= 0)
    close(x.console_fd);
  if (r == 0 && l->pid_file && pidfile_write(l->pid_file, *pid, err) < 0) {
    reap(*pid, true);
    return -1;
  }
  return r;
}
