/* pause, resume, ps, update: commands on a live container's cgroup. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "cmd.h"
#include "config.h"
#include "container.h"
#include "log.h"
#include "readall.h"

static int fail(const struct coil_error *err) {
  log_error("%s", err->msg);
  return EXIT_ERR;
}

static int pause_or_resume(const char *name, bool paused,
                           const struct global_opts *g, int argc, char **argv) {
  if (argc != 2 || argv[1][0] == '-')
    return cmd_usage_error(name, "expected exactly one container ID");
  struct coil_error err = {0};
  if (container_pause(g->root, argv[1], paused, &err) < 0)
    return fail(&err);
  return EXIT_OK;
}

int cmd_pause(const struct global_opts *g, int argc, char **argv) {
  return pause_or_resume("pause", true, g, argc, argv);
}

int cmd_resume(const struct global_opts *g, int argc, char **argv) {
  return pause_or_resume("resume", false, g, argc, argv);
}

/* ---- ps ------------------------------------------------------------------ */

/* The column of "PID" in ps's header line, or -1. */
static int pid_column(const char *header) {
  int col = 0;
  for (const char *s = header + strspn(header, " \t"); *s; col++) {
    size_t len = strcspn(s, " \t");
    if (len == 3 && !strncmp(s, "PID", 3))
      return col;
    s += len;
    s += strspn(s, " \t");
  }
  return -1;
}

/* The number in column col of a ps line, or -1. */
static long field_pid(const char *line, int col) {
  const char *s = line + strspn(line, " \t");
  for (int i = 0; i < col && *s; i++) {
    s += strcspn(s, " \t");
    s += strspn(s, " \t");
  }
  char *end;
  long v = strtol(s, &end, 10);
  return end == s || (*end && !isspace((unsigned char)*end)) ? -1 : v;
}

/* Runs ps with args, its stdout and stderr read together (as runc does). */
static int run_ps(char **args, char **out, struct coil_error *err) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0)
    return coil_error_sys(err, errno, "ps: pipe");
  pid_t pid = fork();
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    return coil_error_sys(err, errno, "ps: fork");
  }
  if (pid == 0) {
    dup2(p[1], STDOUT_FILENO);
    dup2(p[1], STDERR_FILENO);
    execvp("ps", args);
    dprintf(STDERR_FILENO, "exec ps: %s\n", strerror(errno));
    _exit(127);
  }
  close(p[1]);
  size_t len;
  int r = read_all(p[0], 64u << 20, false, out, &len, err);
  close(p[0]);
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (r < 0)
    return coil_error_prefix(err, "ps: read its output");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    char *nl;
    while ((nl = strchr(*out, '\n')))
      *nl = ' ';
    return coil_error_set(err, EIO, "ps failed (status %d): %s",
                          WIFEXITED(status) ? WEXITSTATUS(status) : -1, *out);
  }
  return 0;
}

static bool has_pid(const pid_t *pids, size_t n, long pid) {
  for (size_t i = 0; i < n; i++)
    if (pids[i] == pid)
      return true;
  return false;
}

/* ps's header, then only its lines about the container's pids. */
static int print_ps_table(const pid_t *pids, size_t n, int nargs, char **args,
                          struct coil_error *err) {
  char **full = calloc((size_t)nargs + 2, sizeof *full);
  if (!full)
    return coil_error_sys(err, ENOMEM, "ps");
  static char ps[] = "ps", def[] = "-ef";
  full[0] = ps;
  if (nargs == 0)
    full[1] = def;
  for (int i = 0; i < nargs; i++)
    full[i + 1] = args[i];
  cleanup_free char *out = NULL;
  int r = run_ps(full, &out, err);
  free(full);
  if (r < 0)
    return -1;
  char *save;
  char *header = strtok_r(out, "\n", &save);
  int col = header ? pid_column(header) : -1;
  if (col < 0)
    return coil_error_set(err, EINVAL, "ps: no PID column in ps's output");
  printf("%s\n", header);
  for (char *line; (line = strtok_r(NULL, "\n", &save));) {
    long pid = field_pid(line, col);
    if (pid < 0)
      return coil_error_set(err, EINVAL,
                            "ps: no pid in the PID column of "
                            "\"%s\"",
                            line);
    if (has_pid(pids, n, pid))
      printf("%s\n", line);
  }
  return 0;
}

int cmd_ps(const struct global_opts *g, int argc, char **argv) {
  static const struct option opts[] = {{"format", required_argument, NULL, 'f'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  const char *format = "table";
  optind = 1;
  opterr = 0;
  int c;
  /* "+": options after the ID are ps's. */
  while ((c = getopt_long(argc, argv, "+f:h", opts, NULL)) != -1) {
    if (c == 'h') {
      cmd_print_help(cmd_find("ps"));
      return EXIT_OK;
    }
    if (c != 'f')
      return cmd_usage_error("ps", "unknown or incomplete option \"%s\"",
                             argv[optind - 1]);
    format = optarg;
  }
  if (optind >= argc)
    return cmd_usage_error("ps", "expected a container ID [ps options]");
  bool json = !strcmp(format, "json");
  if (!json && strcmp(format, "table"))
    return cmd_usage_error("ps", "--format: expected table or json, got \"%s\"",
                           format);
  const char *id = argv[optind];
  struct coil_error err = {0};
  cleanup_free pid_t *pids = NULL;
  size_t n = 0;
  if (container_pids(g->root, id, &pids, &n, &err) < 0)
    return fail(&err);
  if (json) {
    if (argc - optind > 1)
      return cmd_usage_error("ps", "--format json takes no ps options");
    fputc('[', stdout);
    for (size_t i = 0; i < n; i++)
      printf("%s%d", i ? "," : "", (int)pids[i]);
    fputs("]\n", stdout);
    return EXIT_OK;
  }
  if (print_ps_table(pids, n, argc - optind - 1, argv + optind + 1, &err) < 0)
    return fail(&err);
  return EXIT_OK;
}

/* ---- update -------------------------------------------------------------- */

/* A byte count as runc's update flags take it: "-1" (unlimited), or an
 * integer with an optional binary unit k, m, g, t or p (an "i" and a "b"
 * may follow: 64m, 64MiB, 64mb). */
static int parse_bytes(const char *flag, const char *s, int64_t *out) {
  if (!strcmp(s, "-1")) {
    *out = -1;
    return 0;
  }
  char *end;
  errno = 0;
  unsigned long long v = isdigit((unsigned char)*s) ? strtoull(s, &end, 10) : 0;
  if (!isdigit((unsigned char)*s) || errno)
    goto bad;
  int shift = 0;
  const char *u = strchr("kmgtp", tolower((unsigned char)*end));
  if (*end && u) {
    shift = 10 * (int)(u - "kmgtp" + 1);
    end++;
    if (tolower((unsigned char)*end) == 'i')
      end++;
  }
  if (tolower((unsigned char)*end) == 'b')
    end++;
  if (*end || v > (unsigned long long)INT64_MAX >> shift)
    goto bad;
  *out = (int64_t)(v << shift);
  return 0;
bad:
  return cmd_usage_error("update",
                         "%s: \"%s\" is not a byte count (e.g. 67108864, "
                         "64m, 1g, or -1 for unlimited)",
                         flag, s);
}

static int parse_int(const char *flag, const char *s, int64_t min,
                     int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end || errno || v < min)
    return cmd_usage_error("update", "%s: \"%s\" is not an integer >= %lld",
                           flag, s, (long long)min);
  *out = v;
  return 0;
}

/* The flags' limits, in config.json's terms. */
static int update_flag(int c, const char *arg, struct coil_resources *r,
                       char **cpus, char **mems) {
  int64_t v;
  switch (c) {
  case 'm':
    r->has_memory_limit = true;
    return parse_bytes("--memory", arg, &r->memory_limit);
  case 'R':
    r->has_memory_reservation = true;
    return parse_bytes("--memory-reservation", arg, &r->memory_reservation);
  case 'S':
    r->has_memory_swap = true;
    return parse_bytes("--memory-swap", arg, &r->memory_swap);
  case 'p':
    r->has_pids_limit = true;
    return parse_int("--pids-limit", arg, INT64_MIN, &r->pids_limit);
  case 's':
    r->has_cpu_shares = true;
    if (parse_int("--cpu-shares", arg, 0, &v) != 0)
      return EXIT_ERR;
    r->cpu_shares = (uint64_t)v;
    return 0;
  case 'q':
    r->has_cpu_quota = true;
    return parse_int("--cpu-quota", arg, -1, &r->cpu_quota);
  case 'P':
    r->has_cpu_period = true;
    if (parse_int("--cpu-period", arg, 0, &v) != 0)
      return EXIT_ERR;
    r->cpu_period = (uint64_t)v;
    return 0;
  case 'C':
    *cpus = (char *)arg;
    return 0;
  case 'M':
    *mems = (char *)arg;
    return 0;
  }
  return EXIT_ERR;
}

/* --resources FILE or "-": a linux.resources object, as runc reads it. */
static int read_resources(const char *path, struct coil_resources *r,
                          struct coil_error *err) {
  bool in = !strcmp(path, "-");
  cleanup_free char *buf = NULL;
  size_t len = 0;
  if (in) {
    if (read_all(STDIN_FILENO, 16u << 20, false, &buf, &len, err) < 0)
      return coil_error_prefix(err, "update --resources: stdin");
  } else if (config_read_file(path, &buf, &len, err) < 0) {
    return coil_error_prefix(err, "update --resources");
  }
  return config_parse_resources(buf, len, in ? "stdin" : path, r, err);
}

int cmd_update(const struct global_opts *g, int argc, char **argv) {
  static const struct option opts[] = {
      {"resources", required_argument, NULL, 'r'},
      {"memory", required_argument, NULL, 'm'},
      {"memory-reservation", required_argument, NULL, 'R'},
      {"memory-swap", required_argument, NULL, 'S'},
      {"pids-limit", required_argument, NULL, 'p'},
      {"cpu-shares", required_argument, NULL, 's'},
      {"cpu-share", required_argument, NULL, 's'}, /* runc's spelling */
      {"cpu-quota", required_argument, NULL, 'q'},
      {"cpu-period", required_argument, NULL, 'P'},
      {"cpuset-cpus", required_argument, NULL, 'C'},
      {"cpuset-mems", required_argument, NULL, 'M'},
      {NULL, 0, NULL, 0}};
  const char *resources = NULL;
  struct coil_resources flags = {0};
  char *cpus = NULL, *mems = NULL;
  bool any_flag = false;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+r:", opts, NULL)) != -1) {
    if (c == 'r') {
      resources = optarg;
      continue;
    }
    if (c == '?' || c == ':')
      return cmd_usage_error("update", "unknown or incomplete option \"%s\"",
                             argv[optind - 1]);
    if (update_flag(c, optarg, &flags, &cpus, &mems) != 0)
      return EXIT_ERR;
    any_flag = true;
  }
  if (optind != argc - 1)
    return cmd_usage_error("update", "expected exactly one container ID");
  /* runc ignores the flags when --resources is given; refusing says so. */
  if (resources && any_flag)
    return cmd_usage_error("update", "give either --resources or limit "
                                     "flags, not both");
  if (!resources && !any_flag)
    return cmd_usage_error("update", "nothing to update: give --resources "
                                     "FILE or a limit flag");
  struct coil_error err = {0};
  int code = EXIT_OK;
  if (resources) {
    struct coil_resources r;
    if (read_resources(resources, &r, &err) < 0)
      return fail(&err);
    /* Device rules stay as created (as in runc, which skips them). */
    if (container_update(g->root, argv[optind], &r, &err) < 0)
      code = fail(&err);
    config_resources_free(&r);
    return code;
  }
  flags.cpu_cpus = cpus;
  flags.cpu_mems = mems;
  if (container_update(g->root, argv[optind], &flags, &err) < 0)
    return fail(&err);
  return EXIT_OK;
}
