/* coil py: run code in the default Python bundle without writing a config
 * or choosing an id. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
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
#include "log.h"

#define CODE_MAX (256 << 10)
#define REQUEST_MAX (64 << 20)

/* The default bundle: next to the binary in a source tree, else installed. */
static const char *default_bundle(char *buf, size_t cap) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    snprintf(buf, cap, "%s/bundles/python", dirname(exe));
    if (access(buf, F_OK) == 0)
      return buf;
  }
  return COIL_DATADIR "/bundles/python";
}

static int read_file(const char *path, size_t cap, char **out, size_t *len) {
  cleanup_close int fd =
      strcmp(path, "-") == 0 ? dup(0) : open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  size_t size = 0, alloc = 4096;
  cleanup_free char *buf = malloc(alloc + 1);
  while (buf) {
    if (size == alloc) {
      if (alloc > cap) {
        errno = EFBIG;
        return -1;
      }
      alloc *= 2;
      char *g = realloc(buf, alloc + 1);
      if (!g)
        return -1;
      buf = g;
    }
    ssize_t r = read(fd, buf + size, alloc - size);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return -1;
    if (r == 0)
      break;
    size += (size_t)r;
  }
  if (!buf)
    return -1;
  if (size > cap) {
    errno = EFBIG;
    return -1;
  }
  buf[size] = '\0';
  *len = size;
  *out = steal_ptr(buf);
  return 0;
}

/* "256m", "1g", "65536" -> bytes; -1 when malformed. */
static long long parse_size(const char *s) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || v <= 0 || end == s)
    return -1;
  switch (*end) {
  case '\0':
    return v;
  case 'k':
  case 'K':
    v <<= 10;
    break;
  case 'm':
  case 'M':
    v <<= 20;
    break;
  case 'g':
  case 'G':
    v <<= 30;
    break;
  default:
    return -1;
  }
  return end[1] ? -1 : v;
}

/* The request becomes the container's stdin through a memfd, so any size up
 * to the cap works without a writer process. */
static int request_to_stdin(const char *spec) {
  cleanup_free char *data = NULL;
  size_t len = 0;
  if (spec[0] == '@') {
    if (read_file(spec + 1, REQUEST_MAX, &data, &len) < 0) {
      log_error("py: --request %s: %s", spec + 1, strerror(errno));
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
    case OPT_TIMEOUT:
      ov.timeout = atoi(optarg);
      if (ov.timeout < 1 || ov.timeout > 3600) {
        cmd_usage_error("py", "--timeout: expected 1..3600 seconds, got \"%s\"",
                        optarg);
        return EXIT_COIL_FAILED;
      }
      break;
    case OPT_MEMORY:
      ov.memory = parse_size(optarg);
      if (ov.memory < (1 << 20)) {
        cmd_usage_error("py",
                        "--memory: expected a size of at least 1m, got \"%s\"",
                        optarg);
        return EXIT_COIL_FAILED;
      }
      break;
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
    if (read_file(argv[optind], CODE_MAX, &code, &len) < 0) {
      log_error("py: %s: %s", argv[optind], strerror(errno));
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
  char id[64];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(id, sizeof id, "py-%d-%lx", (int)getpid(),
           (unsigned long)ts.tv_nsec);
  struct coil_create_opts o = {
      .root = g->root,
      .id = id,
      .bundle = bundle ? bundle : default_bundle(bundle_buf, sizeof bundle_buf),
      .py = &ov};
  return cmd_run_container(g, &o, false);
}
