/* create, start, run, kill, delete. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "cmd.h"
#include "container.h"
#include "deadline.h"
#include "log.h"
#include "python_exit.h"
#include "python_setup.h"
#include "signals.h"
#include "tty_proxy.h"

struct create_args {
  struct coil_create_opts o;
  bool detach;
  bool keep;
};

/* Options shared by create and run. */
static int parse_create_args(const char *name, int argc, char **argv,
                             struct create_args *a, bool is_run) {
  enum {
    OPT_PID_FILE = 256,
    OPT_KEEP,
    OPT_CONSOLE,
    OPT_NO_PIVOT,
    OPT_IGNORED,
    OPT_PRESERVE
  };
  static const struct option opts[] = {
      {"bundle", required_argument, NULL, 'b'},
      {"pid-file", required_argument, NULL, OPT_PID_FILE},
      {"console-socket", required_argument, NULL, OPT_CONSOLE},
      {"detach", no_argument, NULL, 'd'},
      {"keep", no_argument, NULL, OPT_KEEP},
      {"no-pivot", no_argument, NULL, OPT_NO_PIVOT},
      {"no-new-keyring", no_argument, NULL, OPT_IGNORED},
      {"preserve-fds", required_argument, NULL, OPT_PRESERVE},
      {NULL, 0, NULL, 0},
  };
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+b:d", opts, NULL)) != -1) {
    switch (c) {
    case 'b':
      a->o.bundle = optarg;
      break;
    case OPT_PID_FILE:
      a->o.pid_file = optarg;
      break;
    case OPT_CONSOLE:
      a->o.console_socket = optarg;
      break;
    case 'd':
      if (!is_run)
        return cmd_usage_error(name, "unknown option \"%s\"", argv[optind - 1]);
      a->detach = true;
      break;
    case OPT_KEEP:
      if (!is_run)
        return cmd_usage_error(name, "unknown option \"%s\"", argv[optind - 1]);
      a->keep = true;
      break;
    case OPT_NO_PIVOT:
      return cmd_usage_error(name, "--no-pivot: coil always uses pivot_root");
    case OPT_PRESERVE:
      if (strcmp(optarg, "0") != 0)
        return cmd_usage_error(name, "--preserve-fds: only 0 is supported");
      break;
    case OPT_IGNORED:
      break;
    default:
      return cmd_usage_error(name, "unknown or incomplete option \"%s\"",
                             argv[optind - 1]);
    }
  }
  if (optind != argc - 1)
    return cmd_usage_error(name, "expected exactly one container ID");
  a->o.id = argv[optind];
  return 0;
}

/* Commands that take only "ID". */
static int parse_id_only(const char *name, int argc, char **argv,
                         const char **id) {
  if (argc != 2 || argv[1][0] == '-')
    return cmd_usage_error(name, "expected exactly one container ID");
  *id = argv[1];
  return 0;
}

static int fail(const struct coil_error *err, int code) {
  log_error("%s", err->msg);
  return code;
}

/* Python sandbox mode is the payload coil offers every bundle: it takes
 * over those with a sandbox.python section. */
static void offer_python(struct coil_create_opts *o, struct python_setup *py,
                         const struct coil_py_override *ov) {
  *py = (struct python_setup){.ov = ov};
  o->prepare = python_setup_prepare;
  o->prepare_arg = py;
}

int cmd_create(const struct global_opts *g, int argc, char **argv) {
  struct create_args a = {.o.root = g->root,
                          .o.systemd_cgroup = g->systemd_cgroup};
  if (parse_create_args("create", argc, argv, &a, false) != 0)
    return EXIT_ERR;
  struct python_setup py;
  offer_python(&a.o, &py, NULL);
  struct coil_error err = {0};
  pid_t pid;
  int r = container_create(&a.o, &pid, &err);
  python_setup_free(&py);
  if (r < 0)
    return fail(&err, EXIT_ERR);
  return EXIT_OK;
}

int cmd_start(const struct global_opts *g, int argc, char **argv) {
  const char *id = NULL;
  if (parse_id_only("start", argc, argv, &id) != 0)
    return EXIT_ERR;
  struct coil_error err = {0};
  if (container_start(g->root, id, &err) < 0)
    return fail(&err, EXIT_ERR);
  return EXIT_OK;
}

/* Signals `run` forwards to the container's init. */
static const int forwarded[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
                                SIGUSR1, SIGUSR2, SIGWINCH};

/* How long a Python sandbox may outlive a forwarded signal that ends the
 * run before coil kills it: its handler exits at once, this is a backstop. */
#define SIGNAL_BACKSTOP_MS 500

struct waited {
  int status;
  struct rusage ru;
  bool watchdog;  /* the parent's wall-clock kill fired */
  int forwarded;  /* the last forwarded signal that ends a Python run */
  bool backstop;  /* killed after outliving it */
  size_t relayed; /* bytes relayed from the container's fd 1 */
  char head[512]; /* the first relayed bytes: the envelope's error type */
};

static void relay_once(int *fd, struct waited *w) {
  char buf[65536];
  ssize_t r = read(*fd, buf, sizeof buf);
  if (r <= 0) {
    close(*fd);
    *fd = -1;
    return;
  }
  if (w->relayed < sizeof w->head - 1) {
    size_t take = sizeof w->head - 1 - w->relayed;
    if (take > (size_t)r)
      take = (size_t)r;
    memcpy(w->head + w->relayed, buf, take);
  }
  for (ssize_t off = 0; off < r;) {
    ssize_t n = write(STDOUT_FILENO, buf + off, (size_t)(r - off));
    if (n <= 0)
      break;
    off += n;
  }
  w->relayed += (size_t)r;
}

/* Without a pidfd or a signalfd, init's exit and pending signals are
 * checked this often. */
#define WAIT_CHECK_MS 10

/* Passes sig on to init; in Python mode a signal that ends the run also
 * arms the backstop, in case the sandbox does not obey it. With a proxied
 * terminal a SIGWINCH resizes its pty instead, whose kernel then signals
 * the container's foreground process group, as runc does. */
static void forward_signal(pid_t pid, int sig, bool python, struct waited *w,
                           long long *backstop, struct tty_proxy *tty) {
  if (tty && sig == SIGWINCH) {
    tty_proxy_resize(tty);
    return;
  }
  kill(pid, sig);
  if (python && python_signal_ends_run(sig)) {
    w->forwarded = sig;
    if (*backstop == DEADLINE_NONE)
      *backstop = deadline_after_ms(deadline_now_ms(), SIGNAL_BACKSTOP_MS);
  }
}

/* Waits for init, forwarding signals, relaying its fd 1 when piped or its
 * pty when tty is not NULL, and killing it when the watchdog (timeout_ms >
 * 0) runs out or, with python set, when it outlives a forwarded signal that
 * ends the run. A failing poll kills init rather than leaving it
 * unwatched. */
static void wait_container(pid_t pid, const sigset_t *set, int relay_fd,
                           struct tty_proxy *tty, long long timeout_ms,
                           bool python, struct waited *w) {
  cleanup_close int sfd = signalfd(-1, set, SFD_CLOEXEC);
  cleanup_close int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  long long deadline = deadline_after_ms(deadline_now_ms(), timeout_ms);
  long long backstop = DEADLINE_NONE;
  bool exited = false;
  while (!exited || relay_fd >= 0) {
    struct pollfd pf[5] = {{.fd = exited ? -1 : pidfd, .events = POLLIN},
                           {.fd = sfd, .events = POLLIN},
                           {.fd = relay_fd, .events = POLLIN},
                           {.fd = -1},
                           {.fd = -1}};
    if (tty)
      tty_proxy_pollfds(tty, pf + 3);
    long long next = backstop != DEADLINE_NONE &&
                             (deadline == DEADLINE_NONE || backstop < deadline)
                         ? backstop
                         : deadline;
    int cap = !exited && (pidfd < 0 || sfd < 0) ? WAIT_CHECK_MS : -1;
    int wait_ms = deadline_slice_ms(exited ? DEADLINE_NONE : next,
                                    deadline_now_ms(), cap);
    if (!exited && next != DEADLINE_NONE && wait_ms == 0) {
      kill(pid, SIGKILL);
      if (next == backstop)
        w->backstop = true;
      else
        w->watchdog = true;
      deadline = backstop = DEADLINE_NONE;
      continue;
    }
    if (poll(pf, tty ? 5 : 3, wait_ms) < 0 && errno != EINTR) {
      log_error("waiting for the container: poll: %s%s", strerror(errno),
                exited ? "" : "; killing it");
      if (!exited)
        kill(pid, SIGKILL);
      break;
    }
    if (pf[1].revents & POLLIN) {
      struct signalfd_siginfo si;
      if (read(sfd, &si, sizeof si) == sizeof si && !exited)
        forward_signal(pid, (int)si.ssi_signo, python, w, &backstop, tty);
    }
    if (sfd < 0) {
      const struct timespec now = {0, 0};
      int sig;
      while ((sig = sigtimedwait(set, NULL, &now)) > 0)
        if (!exited)
          forward_signal(pid, sig, python, w, &backstop, tty);
    }
    if (pf[2].revents & (POLLIN | POLLHUP))
      relay_once(&relay_fd, w);
    if (tty)
      tty_proxy_pump(tty, pf + 3);
    if (!exited && (pidfd < 0 || (pf[0].revents & POLLIN)) &&
        wait4(pid, &w->status, WNOHANG, &w->ru) == pid)
      exited = true;
  }
  if (relay_fd >= 0)
    close(relay_fd);
  if (!exited)
    while (wait4(pid, &w->status, 0, &w->ru) < 0 && errno == EINTR)
      ;
  if (tty)
    tty_proxy_drain(tty);
}

/* A Python run's verdict (sandbox/python_exit.c), printed. */
static int python_exit_code(const char *id, const struct python_setup *py,
                            const struct coil_limit_report *lim,
                            const struct waited *w) {
  struct python_end e = {
      .status = w->status,
      .cpu_seconds =
          (double)w->ru.ru_utime.tv_sec + (double)w->ru.ru_stime.tv_sec +
          (double)(w->ru.ru_utime.tv_usec + w->ru.ru_stime.tv_usec) / 1e6,
      .watchdog = w->watchdog,
      .forwarded = w->forwarded,
      .backstop = w->backstop,
      .oom_killed = lim->oom_killed,
      .relayed = w->relayed,
      .head = w->head};
  struct python_verdict v;
  python_classify(&py->ctx, id, &e, &v);
  if (v.envelope)
    python_verdict_envelope(STDOUT_FILENO, &v);
  if (v.line[0])
    log_error("%s", v.line);
  return v.code;
}

/* The container's status as run's exit code; limits it ran into are
 * reported, so an OOM kill or a refused fork is not a mystery. */
static int exit_code_of(const char *root, const char *id,
                        const struct python_setup *py, const struct waited *w) {
  struct coil_limit_report lim;
  container_limits(root, id, &lim);
  if (lim.pids_limit_hits)
    log_error("container \"%s\" reached its pids limit (%llu forks refused)",
              id, lim.pids_limit_hits);
  if (py->active)
    return python_exit_code(id, py, &lim, w);
  if (WIFEXITED(w->status))
    return WEXITSTATUS(w->status);
  int sig = WTERMSIG(w->status);
  if (sig == SIGKILL && lim.oom_killed)
    log_error("container \"%s\" was killed by the OOM killer (memory limit "
              "reached)",
              id);
  return 128 + sig;
}

/* keep: leave the stopped container for state and delete (run --keep). */
static int run_container(const struct global_opts *g,
                         struct coil_create_opts *o, struct python_setup *py,
                         bool detach, bool keep) {
  /* Block the forwarded signals before init exists, so none is lost;
   * init unblocks them when it drops its privileges. */
  sigset_t set;
  sigemptyset(&set);
  for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
    sigaddset(&set, forwarded[i]);
  int relay_fd = -1;
  int master = -1;
  if (!detach) {
    sigprocmask(SIG_BLOCK, &set, NULL);
    o->relay_fd = &relay_fd;
    o->terminal_fd = &master;
  }
  struct coil_error err = {0};
  pid_t pid;
  if (container_create(o, &pid, &err) < 0) {
    if (py->active)
      python_setup_failed(STDOUT_FILENO, &py->ctx, err.msg);
    return fail(&err, EXIT_COIL_FAILED);
  }
  /* Raw mode and the pty's size before the process runs; restored on
   * every way out below. */
  struct tty_proxy tty = TTY_PROXY_INIT;
  int r = master >= 0 ? tty_proxy_start(&tty, master, &err) : 0;
  if (r == 0)
    r = container_start(g->root, o->id, &err);
  if (r < 0) {
    tty_proxy_stop(&tty);
    log_error("%s", err.msg);
    if (py->active)
      python_setup_failed(STDOUT_FILENO, &py->ctx, err.msg);
    struct coil_error derr;
    if (container_delete(g->root, o->id, true, &derr) < 0)
      log_error("%s", derr.msg);
    waitpid(pid, NULL, 0);
    if (relay_fd >= 0)
      close(relay_fd);
    return EXIT_COIL_FAILED;
  }
  if (detach)
    return EXIT_OK;
  log_debug("run %s: started", o->id);
  /* The watchdog backs up the in-guest timer: a second after it. */
  struct waited w = {0};
  int timeout = py->active ? py->ctx.timeout : 0;
  wait_container(pid, &set, relay_fd, master >= 0 ? &tty : NULL,
                 timeout ? (timeout + 1) * 1000LL : 0, py->active, &w);
  tty_proxy_stop(&tty);
  log_debug("run %s: container exited", o->id);
  int code = exit_code_of(g->root, o->id, py, &w);
  if (keep)
    return code;
  if (container_delete(g->root, o->id, true, &err) < 0) {
    log_error("%s", err.msg);
    return EXIT_COIL_FAILED;
  }
  log_debug("run %s: deleted", o->id);
  return code;
}

static int offer_and_run(const struct global_opts *g,
                         struct coil_create_opts *o,
                         const struct coil_py_override *ov, bool detach,
                         bool keep) {
  struct python_setup py;
  offer_python(o, &py, ov);
  int code = run_container(g, o, &py, detach, keep);
  python_setup_free(&py);
  return code;
}

int cmd_run_container(const struct global_opts *g, struct coil_create_opts *o,
                      const struct coil_py_override *ov, bool detach) {
  return offer_and_run(g, o, ov, detach, false);
}

int cmd_run(const struct global_opts *g, int argc, char **argv) {
  struct create_args a = {.o.root = g->root,
                          .o.systemd_cgroup = g->systemd_cgroup};
  if (parse_create_args("run", argc, argv, &a, true) != 0)
    return EXIT_COIL_FAILED;
  return offer_and_run(g, &a.o, NULL, a.detach, a.keep);
}

int cmd_kill(const struct global_opts *g, int argc, char **argv) {
  static const struct option opts[] = {{"all", no_argument, NULL, 'a'},
                                       {NULL, 0, NULL, 0}};
  bool all = false;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+a", opts, NULL)) != -1) {
    if (c != 'a')
      return cmd_usage_error("kill", "unknown option \"%s\"", argv[optind - 1]);
    all = true;
  }
  if (optind >= argc || argc - optind > 2)
    return cmd_usage_error("kill", "expected ID [SIGNAL]");
  const char *id = argv[optind];
  struct coil_error err = {0};
  int sig = SIGTERM;
  if (argc - optind == 2 && signal_parse(argv[optind + 1], &sig, &err) < 0)
    return fail(&err, EXIT_ERR);
  if (container_kill(g->root, id, sig, all, &err) < 0)
    return fail(&err, EXIT_ERR);
  return EXIT_OK;
}

int cmd_delete(const struct global_opts *g, int argc, char **argv) {
  static const struct option opts[] = {{"force", no_argument, NULL, 'f'},
                                       {NULL, 0, NULL, 0}};
  bool force = false;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+f", opts, NULL)) != -1) {
    if (c != 'f')
      return cmd_usage_error("delete", "unknown option \"%s\"",
                             argv[optind - 1]);
    force = true;
  }
  if (optind != argc - 1)
    return cmd_usage_error("delete", "expected exactly one container ID");
  struct coil_error err = {0};
  if (container_delete(g->root, argv[optind], force, &err) < 0) {
    /* As runc: deleting a container that does not exist is fine with --force.
     */
    if (force && err.err == ENOENT)
      return EXIT_OK;
    return fail(&err, EXIT_ERR);
  }
  return EXIT_OK;
}
