/* create, start, run, kill, delete. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "cmd.h"
#include "container.h"
#include "log.h"
#include "signals.h"

struct create_args {
  struct coil_create_opts o;
  bool detach;
};

/* Options shared by create and run. */
static int parse_create_args(const char *name, int argc, char **argv,
                             struct create_args *a, bool allow_detach) {
  enum { OPT_PID_FILE = 256, OPT_CONSOLE, OPT_NO_PIVOT, OPT_IGNORED, OPT_PRESERVE };
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
static int parse_id_only(const char *name, int argc, char **argv, const char **id) {
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
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

/* Waits for init, forwarding signals; returns its wait status. */
static int wait_forwarding(pid_t pid, const sigset_t *set) {
  cleanup_close int sfd = signalfd(-1, set, SFD_CLOEXEC);
  cleanup_close int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  int status = 0;
  for (;;) {
    struct pollfd pf[2] = {{.fd = pidfd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
    if (poll(pf, 2, -1) < 0 && errno != EINTR)
      break;
    if (pf[1].revents & POLLIN) {
      struct signalfd_siginfo si;
      if (read(sfd, &si, sizeof si) == sizeof si)
        kill(pid, (int)si.ssi_signo);
    }
    if (pf[0].revents & POLLIN) {
      if (waitpid(pid, &status, 0) == pid)
        return status;
    }
  }
  waitpid(pid, &status, 0);
  return status;
}

/* The container's status as run's exit code; limits it ran into are
 * reported, so an OOM kill or a refused fork is not a mystery. */
static int exit_code_of(const char *root, const char *id, int status) {
  struct coil_limit_report lim;
  container_limits(root, id, &lim);
  if (lim.pids_limit_hits)
    log_error("container \"%s\" reached its pids limit (%llu forks refused)", id,
              lim.pids_limit_hits);
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    if (sig == SIGKILL && lim.oom_killed)
      log_error("container \"%s\" was killed by the OOM killer (memory limit "
                "reached)",
                id);
    return 128 + sig;
  }
  return EXIT_COIL_FAILED;
}

int cmd_run(const struct global_opts *g, int argc, char **argv) {
  struct create_args a = {.o.root = g->root};
  if (parse_create_args("run", argc, argv, &a, true) != 0)
    return EXIT_COIL_FAILED;
  /* Block the forwarded signals before init exists, so none is lost;
   * init unblocks them just before execve. */
  sigset_t set, old;
  sigemptyset(&set);
  for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
    sigaddset(&set, forwarded[i]);
  if (!a.detach)
    sigprocmask(SIG_BLOCK, &set, &old);
  struct coil_error err = {0};
  pid_t pid;
  if (container_create(&a.o, &pid, &err) < 0)
    return fail(&err, EXIT_COIL_FAILED);
  if (container_start(g->root, a.o.id, &err) < 0) {
    log_error("%s", err.msg);
    struct coil_error derr;
    if (container_delete(g->root, a.o.id, true, &derr) < 0)
      log_error("%s", derr.msg);
    waitpid(pid, NULL, 0);
    return EXIT_COIL_FAILED;
  }
  if (a.detach)
    return EXIT_OK;
  int status = wait_forwarding(pid, &set);
  int code = exit_code_of(g->root, a.o.id, status);
  if (container_delete(g->root, a.o.id, true, &err) < 0) {
    log_error("%s", err.msg);
    return EXIT_COIL_FAILED;
  }
  return code;
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
      return cmd_usage_error("delete", "unknown option \"%s\"", argv[optind - 1]);
    force = true;
  }
  if (optind != argc - 1)
    return cmd_usage_error("delete", "expected exactly one container ID");
  struct coil_error err = {0};
  if (container_delete(g->root, argv[optind], force, &err) < 0) {
    /* As runc: deleting a container that does not exist is fine with --force. */
    if (force && err.err == ENOENT)
      return EXIT_OK;
    return fail(&err, EXIT_ERR);
  }
  return EXIT_OK;
}
