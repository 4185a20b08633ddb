/* coil py: run code in the default Python bundle without writing a config
 * or choosing an id. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "cmd.h"
#include "container.h"
#include "exe_seal.h"
#include "log.h"
#include "python_setup.h"
#include "readall.h"

#define CODE_MAX (256 << 10)
#define REQUEST_MAX (64 << 20)

/* The binary is the path coil was started from, not the sealed copy it
 * runs as. */
const char *cmd_default_bundle(char *buf, size_t cap) {
  const char *origin = exe_seal_origin();
  char exe[PATH_MAX];
  if (origin && strlen(origin) < sizeof exe) {
    strcpy(exe, origin);
    snprintf(buf, cap, "%s/bundles/python", dirname(exe));
    if (access(buf, F_OK) == 0)
      return buf;
  }
  return COIL_DATADIR "/bundles/python";
}

/* "256m", "1g", "65536" -> bytes in *out; otherwise why s is not a size.
 * Only digits and one suffix: strtoll alone would take " 1", "+1" and "-1",
 * and the suffix multiply is checked so it cannot overflow. */
static const char *parse_size(const char *s, long long *out) {
  static const char *const malformed =
      "expected a number with an optional k, m or g suffix";
  if (*s < '0' || *s > '9')
    return malformed;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  int shift = 0;
  switch (*end) {
  case '\0':
    break;
  case 'k':
  case 'K':
    shift = 10;
    break;
  case 'm':
  case 'M':
    shift = 20;
    break;
  case 'g':
  case 'G':
    shift = 30;
    break;
  default:
    return malformed;
  }
  if (shift && end[1])
    return malformed;
  if (errno == ERANGE || v > LLONG_MAX >> shift)
    return "too large";
  *out = v << shift;
  return NULL;
}

/* The request becomes the container's stdin through a memfd, so any size up
 * to the cap works without a writer process. */
static int request_to_stdin(const char *spec) {
  cleanup_free char *data = NULL;
  size_t len = 0;
  if (spec[0] == '@') {
    struct coil_error err;
    if (read_file_or_stdin(spec + 1, REQUEST_MAX, false, &data, &len, &err) <
        0) {
      log_error("py: --request: %s", err.msg);
      return -1;
    }
  } else {
    data = strdup(spec);
    len = data ? strlen(data) : 0;
  }
  cleanup_close int fd = memfd_create("coil-request", MFD_CLOEXEC);
  if (!data || fd < 0 || write(fd, data, len) != (ssize_t)len ||
      lseek(fd, 0, SEEK_SET) < 0 || dup2(fd, STDIN_FILENO) < 0) {
    log_error("py: --request: %s", strerror(errno));
    return -1;
  }
  return 0;
}

/* py's ids are "py-<pid of coil py>-<ns>". A killed coil py takes its
 * sandbox along (init's parent-death signal) but leaves the state directory
 * and cgroup: each coil py removes those of dead owners under its root.
 * Stopped only: a live container is never touched, and a reused pid just
 * leaves the directory for a later sweep. */
static void sweep_orphans(const char *root) {
  struct coil_container_info *l = NULL;
  size_t n = 0;
  struct coil_error err;
  if (container_list(root, &l, &n, &err) < 0)
    return;
  for (size_t i = 0; i < n; i++) {
    int owner, len = 0;
    if (sscanf(l[i].id, "py-%d-%*x%n", &owner, &len) != 1 ||
        l[i].id[len] != '\0' || owner <= 0 ||
        strcmp(l[i].status, "stopped") != 0 ||
        (owner != getpid() && (kill(owner, 0) == 0 || errno != ESRCH)))
      continue;
    log_debug("py: removing %s, left by a coil py that died", l[i].id);
    if (container_delete(root, l[i].id, true, &err) < 0 && err.err != ENOENT)
      log_warn("py: removing %s: %s", l[i].id, err.msg);
  }
  container_list_free(l, n);
}

int cmd_py(const struct global_opts *g, int argc, char **argv) {
  enum { OPT_ENTRY = 256, OPT_REQUEST, OPT_TIMEOUT, OPT_MEMORY };
  static const struct option opts[] = {
      {"bundle", required_argument, NULL, 'b'},
      {"entry", required_argument, NULL, OPT_ENTRY},
      {"request", required_argument, NULL, OPT_REQUEST},
      {"timeout", required_argument, NULL, OPT_TIMEOUT},
      {"memory", required_argument, NULL, OPT_MEMORY},
      {NULL, 0, NULL, 0},
  };
  char bundle_buf[PATH_MAX];
  const char *bundle = NULL, *code_arg = NULL, *request = NULL;
  struct coil_py_override ov = {0};
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+b:c:", opts, NULL)) != -1) {
    switch (c) {
    case 'b':
      bundle = optarg;
      break;
    case 'c':
      code_arg = optarg;
      break;
    case OPT_ENTRY:
      ov.entry = optarg;
      break;
    case OPT_REQUEST:
      request = optarg;
      break;
    case OPT_TIMEOUT: {
      /* digits only: atoi would take "5s" as 5 */
      char *end;
      long t = strtol(optarg, &end, 10);
      if (*optarg < '0' || *optarg > '9' || *end || t < 1 || t > 3600) {
        cmd_usage_error("py", "--timeout: expected 1..3600 seconds, got \"%s\"",
                        optarg);
        return EXIT_COIL_FAILED;
      }
      ov.timeout = (int)t;
      break;
    }
    case OPT_MEMORY: {
      const char *why = parse_size(optarg, &ov.memory);
      if (!why && ov.memory < (1 << 20))
        why = "expected a size of at least 1m";
      if (why) {
        cmd_usage_error("py", "--memory: %s, got \"%s\"", why, optarg);
        return EXIT_COIL_FAILED;
      }
      break;
    }
    default:
      cmd_usage_error("py", "unknown or incomplete option \"%s\"",
                      argv[optind - 1]);
      return EXIT_COIL_FAILED;
    }
  }
  if ((code_arg != NULL) == (optind < argc) || argc - optind > 1) {
    cmd_usage_error("py", "expected FILE or -c CODE");
    return EXIT_COIL_FAILED;
  }
  cleanup_free char *code = NULL;
  if (code_arg) {
    ov.code = code_arg;
    ov.code_len = strlen(code_arg);
    ov.code_name = "<string>";
  } else {
    size_t len = 0;
    struct coil_error err;
    if (read_file_or_stdin(argv[optind], CODE_MAX, false, &code, &len, &err) <
        0) {
      log_error("py: %s", err.msg);
      return EXIT_COIL_FAILED;
    }
    ov.code = code;
    ov.code_len = len;
    ov.code_name = strcmp(argv[optind], "-") == 0 ? "<stdin>" : argv[optind];
  }
  /* Handler mode when asked for by --entry or --request; a plain script
   * otherwise. */
  if (!ov.entry && !request)
    ov.script = true;
  if (!ov.entry && request)
    ov.entry = NULL; /* the bundle's entry */
  if (request && request_to_stdin(request) < 0)
    return EXIT_COIL_FAILED;
  sweep_orphans(g->root);
  char id[64];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(id, sizeof id, "py-%d-%lx", (int)getpid(),
           (unsigned long)ts.tv_nsec);
  struct coil_create_opts o = {
      .root = g->root,
      .systemd_cgroup = g->systemd_cgroup,
      .id = id,
      .bundle =
          bundle ? bundle : cmd_default_bundle(bundle_buf, sizeof bundle_buf)};
  return cmd_run_container(g, &o, &ov, false);
}
