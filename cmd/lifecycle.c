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
#include "protocol.h"
#include "signals.h"

struct create_args {
  struct coil_create_opts o;
  bool detach;
};

/* Options shared by create and run. */
static int parse_create_args(const char *name, int argc, char **argv,
                             struct create_args *a, bool allow_detach) {
  enum {
    OPT_PID_FILE = 256,
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
      if (!allow_detach)
        return cmd_usage_error(name, "unknown option \"%s\"", argv[optind - 1]);
      a->detach = true;
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

int cmd_create(const struct global_opts *g, int argc, char **argv) {
  struct create_args a = {.o.root = g->root};
  if (parse_create_args("create", argc, argv, &a, false) != 0)
    return EXIT_ERR;
  struct coil_error err = {0};
  pid_t pid;
  if (container_create(&a.o, &pid, &err) < 0)
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

struct waited {
  int status;
  struct rusage ru;
  bool watchdog;  /* the parent's wall-clock kill fired */
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

/* Waits for init, forwarding signals, relaying its fd 1 when piped, and
 * killing it when the watchdog (timeout_ms > 0) runs out. A failing poll
 * kills init rather than leaving it unwatched. */
static void wait_container(pid_t pid, const sigset_t *set, int relay_fd,
                           long long timeout_ms, struct waited *w) {
  cleanup_close int sfd = signalfd(-1, set, SFD_CLOEXEC);
  cleanup_close int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  long long deadline = deadline_after_ms(deadline_now_ms(), timeout_ms);
  bool exited = false;
  while (!exited || relay_fd >= 0) {
    struct pollfd pf[3] = {{.fd = exited ? -1 : pidfd, .events = POLLIN},
                           {.fd = sfd, .events = POLLIN},
                           {.fd = relay_fd, .events = POLLIN}};
    int cap = !exited && (pidfd < 0 || sfd < 0) ? WAIT_CHECK_MS : -1;
    int wait_ms = deadline_slice_ms(exited ? DEADLINE_NONE : deadline,
                                    deadline_now_ms(), cap);
    if (!exited && deadline >= 0 && wait_ms == 0) {
      kill(pid, SIGKILL);
      w->watchdog = true;
      deadline = DEADLINE_NONE;
      continue;
    }
    if (poll(pf, 3, wait_ms) < 0 && errno != EINTR) {
      log_error("waiting for the container: poll: %s%s", strerror(errno),
                exited ? "" : "; killing it");
      if (!exited)
        kill(pid, SIGKILL);
      break;
    }
    if (pf[1].revents & POLLIN) {
      struct signalfd_siginfo si;
      if (read(sfd, &si, sizeof si) == sizeof si && !exited)
        kill(pid, (int)si.ssi_signo);
    }
    if (sfd < 0) {
      const struct timespec now = {0, 0};
      int sig;
      while ((sig = sigtimedwait(set, NULL, &now)) > 0)
        if (!exited)
          kill(pid, sig);
    }
    if (pf[2].revents & (POLLIN | POLLHUP))
      relay_once(&relay_fd, w);
    if (!exited && (pidfd < 0 || (pf[0].revents & POLLIN)) &&
        wait4(pid, &w->status, WNOHANG, &w->ru) == pid)
      exited = true;
  }
  if (relay_fd >= 0)
    close(relay_fd);
  if (!exited)
    while (wait4(pid, &w->status, 0, &w->ru) < 0 && errno == EINTR)
      ;
}

/* The sandbox died without answering: say why, as an envelope in handler
 * mode, and pick the exit code (DESIGN.md). */
static int report_silent_death(const char *id,
                               const struct coil_python_info *info,
                               const struct coil_limit_report *lim,
                               const struct waited *w) {
  const char *type = "Exception";
  char msg[256];
  int code = EXIT_COIL_FAILED;
  double cpu = (double)w->ru.ru_utime.tv_sec + (double)w->ru.ru_stime.tv_sec +
               (double)(w->ru.ru_utime.tv_usec + w->ru.ru_stime.tv_usec) / 1e6;
  if (WIFSIGNALED(w->status)) {
    int sig = WTERMSIG(w->status);
    code = 128 + sig;
    if (w->watchdog) {
      type = "Timeout";
      code = EXIT_TIMEOUT;
      snprintf(msg, sizeof msg, "wall-clock limit of %d s reached",
               info->timeout);
    } else if (sig == SIGKILL && lim->oom_killed) {
      type = "MemoryLimit";
      snprintf(msg, sizeof msg,
               "memory limit reached (killed by the OOM killer)");
    } else if (sig == SIGKILL && info->cpu_limit && cpu >= info->cpu_limit) {
      type = "CpuLimit";
      snprintf(msg, sizeof msg, "CPU time limit of %d s reached",
               info->cpu_limit);
    } else if (sig == SIGSYS) {
      snprintf(msg, sizeof msg,
               "killed by seccomp: a system call outside the "
               "sandbox's allowlist");
    } else {
      snprintf(msg, sizeof msg, "sandbox killed by signal %d", sig);
    }
  } else {
    snprintf(msg, sizeof msg, "sandbox exited with status %d before answering",
             WEXITSTATUS(w->status));
  }
  if (info->handler)
    protocol_write_error_raw(STDOUT_FILENO, type, msg);
  log_error("container \"%s\": %s: %s", id, type, msg);
  return code;
}

/* The container's status as run's exit code; limits it ran into are
 * reported, so an OOM kill or a refused fork is not a mystery. */
static int exit_code_of(const char *root, const char *id,
                        const struct coil_python_info *info,
                        const struct waited *w) {
  struct coil_limit_report lim;
  container_limits(root, id, &lim);
  if (lim.pids_limit_hits)
    log_error("container \"%s\" reached its pids limit (%llu forks refused)",
              id, lim.pids_limit_hits);
  if (info->python && (!info->handler || w->relayed == 0) &&
      (w->watchdog || !WIFEXITED(w->status) || WEXITSTATUS(w->status) == 127))
    return report_silent_death(id, info, &lim, w);
  /* The sandbox answered itself: limits it ran into still go to stderr. */
  static const char *const limit_types[] = {"Timeout", "MemoryLimit",
                                            "CpuLimit", "OutputLimit"};
  for (size_t i = 0;
       info->handler && i < sizeof limit_types / sizeof limit_types[0]; i++) {
    char quoted[32];
    snprintf(quoted, sizeof quoted, "\"%s\"", limit_types[i]);
    if (strstr(w->head, quoted))
      log_error("container \"%s\": %s", id, limit_types[i]);
  }
  if (WIFEXITED(w->status))
    return WEXITSTATUS(w->status);
  int sig = WTERMSIG(w->status);
  if (sig == SIGKILL && lim.oom_killed)
    log_error("container \"%s\" was killed by the OOM killer (memory limit "
              "reached)",
              id);
  return 128 + sig;
}

int cmd_run_container(const struct global_opts *g, struct coil_create_opts *o,
                      bool detach) {
  /* Block the forwarded signals before init exists, so none is lost;
   * init unblocks them just before execve. */
  sigset_t set;
  sigemptyset(&set);
  for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
    sigaddset(&set, forwarded[i]);
  struct coil_python_info info = {.relay_fd = -1};
  if (!detach) {
    sigprocmask(SIG_BLOCK, &set, NULL);
    o->info = &info;
  }
  struct coil_error err = {0};
  pid_t pid;
  if (container_create(o, &pid, &err) < 0)
    return fail(&err, EXIT_COIL_FAILED);
  if (container_start(g->root, o->id, &err) < 0) {
    log_error("%s", err.msg);
    struct coil_error derr;
    if (container_delete(g->root, o->id, true, &derr) < 0)
      log_error("%s", derr.msg);
    waitpid(pid, NULL, 0);
    if (info.relay_fd >= 0)
      close(info.relay_fd);
    return EXIT_COIL_FAILED;
  }
  if (detach)
    return EXIT_OK;
  log_debug("run %s: started", o->id);
  /* The watchdog backs up the in-guest timer: a second after it. */
  struct waited w = {0};
  wait_container(pid, &set, info.relay_fd,
                 info.timeout ? (info.timeout + 1) * 1000LL : 0, &w);
  log_debug("run %s: container exited", o->id);
  int code = exit_code_of(g->root, o->id, &info, &w);
  if (container_delete(g->root, o->id, true, &err) < 0) {
    log_error("%s", err.msg);
    return EXIT_COIL_FAILED;
  }
  log_debug("run %s: deleted", o->id);
  return code;
}

int cmd_run(const struct global_opts *g, int argc, char **argv) {
  struct create_args a = {.o.root = g->root};
  if (parse_create_args("run", argc, argv, &a, true) != 0)
    return EXIT_COIL_FAILED;
  return cmd_run_container(g, &a.o, a.detach);
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
