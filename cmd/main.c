/* coil's entry point: global options, then one command from the table. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "exe_seal.h"
#include "log.h"
#include "version.h"

static const struct command commands[] = {
    {"create", cmd_create,
     "create [--bundle DIR] [--pid-file FILE] [--console-socket SOCK] ID",
     "create a container and leave its init waiting for start",
     "  -b, --bundle DIR          bundle directory (default: current "
     "directory)\n"
     "      --pid-file FILE       write init's pid to FILE\n"
     "      --console-socket SOCK send the pty master (process.terminal) over "
     "SOCK\n"},
    {"start", cmd_start, "start ID",
     "run the user process of a created container", ""},
    {"run", cmd_run,
     "run [--bundle DIR] [--pid-file FILE] [--detach] [--keep] "
     "[--console-socket SOCK] ID",
     "create, start and wait for a container; exits with its status",
     "  -b, --bundle DIR          bundle directory (default: current "
     "directory)\n"
     "      --pid-file FILE       write init's pid to FILE\n"
     "  -d, --detach              return after start instead of waiting\n"
     "      --keep                do not delete the container after it exits\n"
     "      --console-socket SOCK send the pty master (process.terminal) over "
     "SOCK\n"
     "With process.terminal and no --console-socket, run (not --detach) "
     "proxies the\n"
     "pty: the caller's terminal goes raw, SIGWINCH resizes the pty.\n"},
    {"state", cmd_state, "state ID", "print the container's OCI state JSON",
     ""},
    {"kill", cmd_kill, "kill [--all] ID [SIGNAL]",
     "send a signal (default SIGTERM) to the container's init",
     "  -a, --all                 signal every process in the container\n"
     "SIGNAL: a name with or without SIG (TERM, SIGKILL) or a number\n"},
    {"delete", cmd_delete, "delete [--force] ID",
     "remove a stopped container (and its cgroup); --force kills a live one",
     "  -f, --force               kill a running container first\n"},
    {"exec", cmd_exec,
     "exec [options] ID [--] COMMAND [ARG...] | exec [options] --process "
     "FILE ID",
     "run a new process in a running container; exits with its status",
     "  -p, --process FILE        the process (a runtime-spec process object) "
     "instead\n"
     "                            of the config's with the options below\n"
     "  -t, --tty                 allocate a pty (needs --console-socket)\n"
     "      --console-socket SOCK send the pty master over SOCK\n"
     "  -d, --detach              return once the process runs\n"
     "      --pid-file FILE       write the process's pid to FILE\n"
     "      --cwd DIR             working directory in the container\n"
     "  -e, --env NAME=VALUE      add (or replace) an environment variable\n"
     "  -u, --user UID[:GID]      run as UID (and GID)\n"
     "  -g, --additional-gids GID add a supplementary group\n"
     "  -c, --cap CAP             add CAP to the bounding, effective and "
     "permitted sets\n"
     "      --no-new-privs        set no_new_privs\n"
     "      --apparmor PROFILE    accepted; not applied (warns)\n"
     "      --process-label LABEL accepted; not applied (warns)\n"
     "      --preserve-fds N      pass fds 3 .. 3+N-1 on to the process\n"
     "      --ignore-paused       exec even into a paused container\n"
     "The container must be running. Unset options come from its config.json\n"
     "process, and seccomp from its linux.seccomp. Exit status: the process's\n"
     "(128+N when killed by signal N); 255 when it could not be started.\n"},
    {"pause", cmd_pause, "pause ID",
     "freeze every process of a created or running container (cgroup "
     "freezer)",
     ""},
    {"resume", cmd_resume, "resume ID",
     "thaw the processes of a paused container", ""},
    {"ps", cmd_ps, "ps [--format table|json] ID [PS-OPTIONS]",
     "list the container's processes",
     "  -f, --format table|json   table: ps PS-OPTIONS (default -ef) filtered "
     "to the\n"
     "                            container's pids; json: the array of its "
     "host pids\n"
     "Options after ID, -h too, are ps's: coil ps ID -eo pid,comm\n"},
    {"update", cmd_update, "update [--resources FILE|-] [LIMIT FLAGS] ID",
     "change a live container's cgroup limits",
     "  -r, --resources FILE|-    a linux.resources JSON object (runtime "
     "spec); '-':\n"
     "                            stdin. Device rules in it are not changed\n"
     "      --memory N            memory limit in bytes (64m, 1g; -1: "
     "unlimited)\n"
     "      --memory-reservation N  soft memory limit in bytes\n"
     "      --memory-swap N       memory+swap limit in bytes (-1: unlimited)\n"
     "      --pids-limit N        process limit (0 or -1: unlimited)\n"
     "      --cpu-shares N        relative cpu weight (also --cpu-share)\n"
     "      --cpu-quota N         cpu time in microseconds per period (-1: "
     "unlimited)\n"
     "      --cpu-period N        cpu period in microseconds\n"
     "      --cpuset-cpus S       cpus to run on, e.g. 0-1\n"
     "      --cpuset-mems S       memory nodes, e.g. 0\n"
     "Give either --resources or flags; limits not given stay as they are.\n"},
    {"events", cmd_events, "events [--stats] [--interval DURATION] ID",
     "print the container's cgroup stats and OOM kills as JSON lines",
     "      --stats               print one stats line and exit\n"
     "      --interval DURATION   time between stats lines (default 5s; "
     "250ms, 1m)\n"
     "Without --stats: a {\"type\":\"stats\",\"id\",\"data\"} line every "
     "interval and\n"
     "a {\"type\":\"oom\",\"id\"} line per OOM kill, until the container "
     "stops.\n"},
    {"list", cmd_list, "list [--format table|json] [-q]", "list containers",
     "  -f, --format table|json   output format (default: table)\n"
     "  -q, --quiet               print only the ids\n"},
    {"spec", cmd_spec, "spec [--bundle DIR] [--rootless]",
     "write a default config.json",
     "  -b, --bundle DIR          where to write config.json (default: .)\n"
     "      --rootless            a user namespace mapping root to your ids,\n"
     "                            no network namespace (as runc)\n"},
    {"features", cmd_features, "features",
     "print the features coil supports (JSON)", ""},
    {"py", cmd_py,
     "py [--bundle DIR] [--entry NAME] [--request JSON|@FILE] [--timeout S] "
     "[--memory SIZE] FILE|-c CODE",
     "run Python code in the sandbox bundle (default: the bundled one)",
     "  -b, --bundle DIR          Python bundle (default: bundles/python)\n"
     "      --entry NAME          handler mode: call NAME(request)\n"
     "      --request JSON|@FILE  the request (default: read from stdin in "
     "handler mode)\n"
     "      --timeout S           wall-clock limit in seconds (default: the "
     "bundle's, 5)\n"
     "      --memory SIZE         memory limit, e.g. 128m (default: the "
     "bundle's)\n"
     "  -c CODE                   run CODE instead of FILE (a FILE of '-' is "
     "stdin)\n"
     "Without --entry or --request the code runs as a script.\n"},
    {"serve", cmd_serve,
     "serve --socket PATH --config FILE [--metrics PATH|ADDR:PORT]",
     "serve warm per-tenant Python sandboxes on a unix socket",
     "      --socket PATH         the unix socket to listen on (mode 0600 "
     "unless\n"
     "                            the config's socket_mode says otherwise)\n"
     "      --config FILE         tenants and limits (JSON, docs/serve.md)\n"
     "      --metrics PATH|ADDR:PORT  Prometheus text on a unix socket or "
     "loopback\n"
     "SIGTERM drains and stops, SIGHUP reloads the config.\n"},
    {"call", cmd_call,
     "call --socket PATH [--tenant NAME] [--entry NAME] [--request "
     "JSON|@FILE] FILE|-c CODE",
     "run Python code through coil serve, answering as coil py does",
     "      --socket PATH         the server's socket\n"
     "      --tenant NAME         the tenant (default: the server's only "
     "one)\n"
     "      --entry NAME          handler mode: call NAME(request)\n"
     "      --request JSON|@FILE  the request (default: read from stdin)\n"
     "  -c CODE                   run CODE instead of FILE (a FILE of '-' is "
     "stdin)\n"},
    {"check", cmd_check, "check FILE",
     "run only the gate on FILE ('-': stdin) and print every violation",
     "Prints FILE:LINE:COL: message per violation; exit 0 clean, 126 "
     "rejected.\n"},
};

const struct command *cmd_find(const char *name) {
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(commands[i].name, name) == 0)
      return &commands[i];
  return NULL;
}

void cmd_print_help(const struct command *c) {
  printf("usage: coil [global options] %s\n\n%s\n", c->usage, c->summary);
  if (*c->help)
    printf("\noptions:\n%s", c->help);
  printf("  -h, --help                show this help\n");
}

/* What follows exec's ID is the process's own command line, so its help
 * is looked for only before the first operand. */
static bool operand_ends_options(const struct command *c) {
  return c->fn == cmd_exec;
}

bool cmd_wants_help(const char *name, int argc, char **argv) {
  const struct command *c = cmd_find(name);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0 ||
        (operand_ends_options(c) && argv[i][0] != '-'))
      break;
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      cmd_print_help(c);
      return true;
    }
  }
  return false;
}

int cmd_usage_error(const char *name, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  log_error("%s: %s (see 'coil %s --help')", name, msg, name);
  return EXIT_ERR;
}

/* The commands whose container process (init, or exec's) is a clone of
 * this process. */
static bool spawns_init(const struct command *c) {
  return c->fn == cmd_create || c->fn == cmd_run || c->fn == cmd_py ||
         c->fn == cmd_exec || c->fn == cmd_serve;
}

/* The commands whose arguments after the ID belong to another program (ps's
 * options), so a -h there is theirs: they parse their own -h before the ID,
 * as runc does. */
static bool parses_own_help(const struct command *c) { return c->fn == cmd_ps; }

static void print_main_help(void) {
  printf("usage: coil [global options] COMMAND [options] [ARGS]\n\n"
         "coil runs OCI bundles (runc-compatible CLI).\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    printf("  %-10s %s\n", commands[i].name, commands[i].summary);
  printf("\nglobal options:\n"
         "      --root DIR            state directory (default: /run/coil)\n"
         "      --log FILE            also log to FILE\n"
         "      --log-format text|json  format of --log (default: text)\n"
         "      --debug               log debug messages\n"
         "      --systemd-cgroup      make cgroups as systemd units; "
         "linux.cgroupsPath\n"
         "                            is \"slice:prefix:name\"\n"
         "  -v, --version             print versions\n"
         "  -h, --help                show this help\n"
         "\n'coil COMMAND --help' shows a command's options.\n");
}

int main(int argc, char **argv) {
  struct global_opts g = {.root = "/run/coil"};
  const char *log_format = "text";
  enum {
    OPT_ROOT = 256,
    OPT_LOG,
    OPT_LOG_FORMAT,
    OPT_DEBUG,
    OPT_SYSTEMD,
    OPT_IGNORED
  };
  static const struct option opts[] = {
      {"root", required_argument, NULL, OPT_ROOT},
      {"log", required_argument, NULL, OPT_LOG},
      {"log-format", required_argument, NULL, OPT_LOG_FORMAT},
      {"debug", no_argument, NULL, OPT_DEBUG},
      {"systemd-cgroup", no_argument, NULL, OPT_SYSTEMD},
      {"rootless", required_argument, NULL, OPT_IGNORED},
      {"criu", required_argument, NULL, OPT_IGNORED},
      {"version", no_argument, NULL, 'v'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  /* The CLI never dies of a closed pipe; children reset this before exec. */
  signal(SIGPIPE, SIG_IGN);
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+vh", opts, NULL)) != -1) {
    switch (c) {
    case OPT_ROOT:
      g.root = optarg;
      break;
    case OPT_LOG:
      g.log = optarg;
      break;
    case OPT_LOG_FORMAT:
      log_format = optarg;
      break;
    case OPT_DEBUG:
      g.debug = true;
      break;
    case OPT_SYSTEMD:
      g.systemd_cgroup = true;
      break;
    case OPT_IGNORED:
      break;
    case 'v':
      print_versions();
      return EXIT_OK;
    case 'h':
      print_main_help();
      return EXIT_OK;
    default:
      log_error(
          "unknown or incomplete global option \"%s\" (see 'coil --help')",
          argv[optind - 1]);
      return EXIT_ERR;
    }
  }
  if (strcmp(log_format, "text") != 0 && strcmp(log_format, "json") != 0) {
    log_error("--log-format: expected text or json, got \"%s\"", log_format);
    return EXIT_ERR;
  }
  g.log_json = strcmp(log_format, "json") == 0;
  /* As runc: a log the caller asked for and cannot get is an error, not a
   * silent switch to stderr. */
  if (log_init(g.log, g.log_json, g.debug) < 0) {
    log_error("--log %s: cannot open: %s", g.log, strerror(errno));
    return EXIT_ERR;
  }
  if (optind >= argc) {
    print_main_help();
    return EXIT_ERR;
  }
  const struct command *cmd = cmd_find(argv[optind]);
  if (!cmd) {
    log_error("unknown command \"%s\" (see 'coil --help')", argv[optind]);
    return EXIT_ERR;
  }
  int cargc = argc - optind;
  char **cargv = argv + optind;
  if (!parses_own_help(cmd) && cmd_wants_help(cmd->name, cargc, cargv))
    return EXIT_OK;
  /* Before anything of the command runs: its init is a clone of this
   * process, so this process must not be the host's writable binary. */
  struct coil_error err;
  if (spawns_init(cmd) && exe_seal_ensure(argv, &err) < 0) {
    log_error("%s: %s", cmd->name, err.msg);
    return strcmp(cmd->name, "create") == 0 ? EXIT_ERR : EXIT_COIL_FAILED;
  }
  return cmd->fn(&g, cargc, cargv);
}
