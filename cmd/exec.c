/* exec: run a new process in a running container (runc's exec). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cleanup.h"
#include "cmd.h"
#include "exec_process.h"
#include "log.h"

/* Signals a foreground exec passes on to the process, as run does. */
static const int forwarded[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
                                SIGUSR1, SIGUSR2, SIGWINCH};

/* Waits for the process, passing the forwarded signals on; its exit code,
 * or 128 + the signal that killed it. */
static int wait_process(pid_t pid, const sigset_t *set) {
  for (;;) {
    int status;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0 && errno != EINTR) {
      log_error("exec: waitpid %d: %s", pid, strerror(errno));
      return EXIT_EXEC_FAILED;
    }
    int sig = sigwaitinfo(set, NULL);
    if (sig > 0 && sig != SIGCHLD)
      kill(pid, sig);
  }
}

static int parse_count(const char *s, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || end == s || v < 0 || v > 65536)
    return -1;
  *out = (int)v;
  return 0;
}

int cmd_exec(const struct global_opts *g, int argc, char **argv) {
  enum {
    OPT_CONSOLE = 256,
    OPT_PID_FILE,
    OPT_CWD,
    OPT_NO_NEW_PRIVS,
    OPT_APPARMOR,
    OPT_LABEL,
    OPT_PRESERVE,
    OPT_IGNORE_PAUSED,
    OPT_UNSUPPORTED,
  };
  static const struct option opts[] = {
      {"process", required_argument, NULL, 'p'},
      {"tty", no_argument, NULL, 't'},
      {"console-socket", required_argument, NULL, OPT_CONSOLE},
      {"detach", no_argument, NULL, 'd'},
      {"pid-file", required_argument, NULL, OPT_PID_FILE},
      {"cwd", required_argument, NULL, OPT_CWD},
      {"env", required_argument, NULL, 'e'},
      {"user", required_argument, NULL, 'u'},
      {"additional-gids", required_argument, NULL, 'g'},
      {"cap", required_argument, NULL, 'c'},
      {"no-new-privs", no_argument, NULL, OPT_NO_NEW_PRIVS},
      {"apparmor", required_argument, NULL, OPT_APPARMOR},
      {"process-label", required_argument, NULL, OPT_LABEL},
      {"preserve-fds", required_argument, NULL, OPT_PRESERVE},
      {"ignore-paused", no_argument, NULL, OPT_IGNORE_PAUSED},
      {"pidfd-socket", required_argument, NULL, OPT_UNSUPPORTED},
      {"cgroup", required_argument, NULL, OPT_UNSUPPORTED},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  /* Every repeatable option fits in argc slots. */
  cleanup_free const char **env = calloc((size_t)argc, sizeof *env);
  cleanup_free const char **gids = calloc((size_t)argc, sizeof *gids);
  cleanup_free const char **caps = calloc((size_t)argc, sizeof *caps);
  if (!env || !gids || !caps) {
    log_error("exec: out of memory");
    return EXIT_EXEC_FAILED;
  }
  struct exec_flags f = {.env = env, .gids = gids, .caps = caps};
  struct exec_launch l = {.root = g->root, .flags = &f};
  bool detach = false;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+p:tde:u:g:c:h", opts, NULL)) != -1) {
    switch (c) {
    case 'p':
      f.process_file = optarg;
      break;
    case 't':
      f.tty = true;
      break;
    case OPT_CONSOLE:
      l.console_socket = optarg;
      break;
    case 'd':
      detach = true;
      break;
    case OPT_PID_FILE:
      l.pid_file = optarg;
      break;
    case OPT_CWD:
      f.cwd = optarg;
      break;
    case 'e':
      env[f.n_env++] = optarg;
      break;
    case 'u':
      f.user = optarg;
      break;
    case 'g':
      gids[f.n_gids++] = optarg;
      break;
    case 'c':
      caps[f.n_caps++] = optarg;
      break;
    case OPT_NO_NEW_PRIVS:
      f.no_new_privs = true;
      break;
    case OPT_APPARMOR:
      f.apparmor = optarg;
      break;
    case OPT_LABEL:
      f.label = optarg;
      break;
    case OPT_PRESERVE:
      if (parse_count(optarg, &l.preserve_fds) < 0)
        return cmd_usage_error("exec",
                               "--preserve-fds \"%s\": expected a "
                               "count of fds",
                               optarg);
      break;
    case OPT_IGNORE_PAUSED:
      l.ignore_paused = true;
      break;
    case OPT_UNSUPPORTED:
      return cmd_usage_error("exec", "%s is not supported by coil",
                             argv[optind - 1]);
    case 'h':
      cmd_print_help(cmd_find("exec"));
      return EXIT_OK;
    default:
      return cmd_usage_error("exec", "unknown or incomplete option \"%s\"",
                             argv[optind - 1]);
    }
  }
  if (optind >= argc)
    return cmd_usage_error("exec", "expected a container ID");
  l.id = argv[optind++];
  /* As runc: "ID -- COMMAND" keeps the command's own options its own. */
  if (optind < argc && strcmp(argv[optind], "--") == 0)
    optind++;
  f.args = argv + optind;
  f.n_args = (size_t)(argc - optind);
  if (!f.process_file && f.n_args == 0)
    return cmd_usage_error("exec", "expected a command after the ID (or "
                                   "--process FILE)");

  /* Blocked before the process exists, so none is lost: it unblocks them
   * once its setup is done. */
  sigset_t set;
  sigemptyset(&set);
  if (!detach) {
    for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
      sigaddset(&set, forwarded[i]);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
  }
  struct coil_error err = {0};
  pid_t pid;
  if (exec_start(&l, &pid, &err) < 0) {
    log_error("exec: %s", err.msg);
    return EXIT_EXEC_FAILED;
  }
  log_debug("exec %s: process %d started", l.id, pid);
  return detach ? EXIT_OK : wait_process(pid, &set);
}
