/* coil call: coil py's command line and answers, executed by a running
 * coil serve (docs/serve.md), so one swaps for the other. */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "cmd.h"
#include "json_tree.h"
#include "log.h"
#include "readall.h"

#define CODE_MAX (256 << 10)
#define REQUEST_MAX (64 << 20)
#define ANSWER_MAX (64 << 20)

static void quote(FILE *f, const char *s, size_t n) {
  fputc('"', f);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

/* coil py's exit status for an envelope (docs/python.md, the table of
 * error types); the server's own errors are coil failing (125). */
static int exit_code_of(const char *env) {
  if (strncmp(env, "{\"ok\":true", 10) == 0)
    return EXIT_OK;
  const char *p = strstr(env, "\"error\":{\"type\":\"");
  if (!p)
    return EXIT_COIL_FAILED;
  p += strlen("\"error\":{\"type\":\"");
  static const struct {
    const char *type;
    int code;
  } map[] = {{"Exception\"", 1},       {"OutputLimit\"", 1},
             {"Timeout\"", 124},       {"RequestError\"", 125},
             {"GateViolation\"", 126}, {"MemoryLimit\"", 137},
             {"CpuLimit\"", 137}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strncmp(p, map[i].type, strlen(map[i].type)) == 0) {
      if (map[i].code != 1 || strncmp(p, "Exception", 9) != 0)
        return map[i].code;
      /* A silent death coil answered for: its status, as coil py exits. */
      const char *m = strstr(p, "\"message\":\"");
      int sig;
      if (m &&
          sscanf(m, "\"message\":\"sandbox killed by signal %d", &sig) == 1)
        return 128 + sig;
      if (m && strncmp(m, "\"message\":\"killed by seccomp", 28) == 0)
        return 128 + 31;
      if (m && strncmp(m, "\"message\":\"sandbox exited with status", 37) == 0)
        return EXIT_COIL_FAILED;
      return 1;
    }
  int sig;
  if (strncmp(p, "Signal\"", 7) == 0) {
    const char *m = strstr(p, "terminated by signal ");
    if (m && sscanf(m, "terminated by signal %d", &sig) == 1)
      return 128 + sig;
  }
  return EXIT_COIL_FAILED;
}

int cmd_call(const struct global_opts *g, int argc, char **argv) {
  (void)g;
  enum {
    OPT_SOCKET = 256,
    OPT_TENANT,
    OPT_ENTRY,
    OPT_REQUEST,
    OPT_TIMEOUT,
    OPT_MEMORY
  };
  static const struct option opts[] = {
      {"socket", required_argument, NULL, OPT_SOCKET},
      {"tenant", required_argument, NULL, OPT_TENANT},
      {"entry", required_argument, NULL, OPT_ENTRY},
      {"request", required_argument, NULL, OPT_REQUEST},
      {"timeout", required_argument, NULL, OPT_TIMEOUT},
      {"memory", required_argument, NULL, OPT_MEMORY},
      {NULL, 0, NULL, 0},
  };
  const char *sock = NULL, *tenant = NULL, *entry = NULL, *request = NULL,
             *code_arg = NULL;
  long timeout_s = 0, memory_mb = 0;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+c:", opts, NULL)) != -1) {
    char *end;
    switch (c) {
    case 'c':
      code_arg = optarg;
      break;
    case OPT_SOCKET:
      sock = optarg;
      break;
    case OPT_TENANT:
      tenant = optarg;
      break;
    case OPT_ENTRY:
      entry = optarg;
      break;
    case OPT_REQUEST:
      request = optarg;
      break;
    case OPT_TIMEOUT:
      timeout_s = strtol(optarg, &end, 10);
      if (*optarg < '0' || *optarg > '9' || *end || timeout_s < 1 ||
          timeout_s > 3600) {
        cmd_usage_error("call",
                        "--timeout: expected 1..3600 seconds, got "
                        "\"%s\"",
                        optarg);
        return EXIT_COIL_FAILED;
      }
      break;
    case OPT_MEMORY:
      memory_mb = strtol(optarg, &end, 10);
      if (*optarg < '0' || *optarg > '9' || memory_mb < 1 ||
          (*end && strcmp(end, "m") && strcmp(end, "M") && strcmp(end, "g") &&
           strcmp(end, "G")) ||
          memory_mb > (1 << 20)) {
        cmd_usage_error("call",
                        "--memory: expected a size in m or g, got "
                        "\"%s\"",
                        optarg);
        return EXIT_COIL_FAILED;
      }
      if (*end == 'g' || *end == 'G')
        memory_mb <<= 10;
      break;
    default:
      cmd_usage_error("call", "unknown or incomplete option \"%s\"",
                      argv[optind - 1]);
      return EXIT_COIL_FAILED;
    }
  }
  if (!sock) {
    cmd_usage_error("call", "--socket PATH is required");
    return EXIT_COIL_FAILED;
  }
  if ((code_arg != NULL) == (optind < argc) || argc - optind > 1) {
    cmd_usage_error("call", "expected FILE or -c CODE");
    return EXIT_COIL_FAILED;
  }
  struct coil_error err = {0};
  cleanup_free char *code = NULL, *req = NULL;
  size_t code_len = 0, req_len = 0;
  if (code_arg) {
    code = strdup(code_arg);
    code_len = code ? strlen(code) : 0;
  } else if (read_file_or_stdin(argv[optind], CODE_MAX, false, &code, &code_len,
                                &err) < 0) {
    log_error("call: %s", err.msg);
    return EXIT_COIL_FAILED;
  }
  /* As coil py: the request from --request, @FILE, or stdin. */
  const char *req_path =
      request ? (request[0] == '@' ? request + 1 : NULL) : "-";
  if (req_path) {
    if (read_file_or_stdin(req_path, REQUEST_MAX, false, &req, &req_len, &err) <
        0) {
      log_error("call: --request: %s", err.msg);
      return EXIT_COIL_FAILED;
    }
  } else {
    req = strdup(request);
    req_len = req ? strlen(req) : 0;
  }
  if (!code || !req) {
    log_error("call: out of memory");
    return EXIT_COIL_FAILED;
  }
  /* The request travels inside the frame, so it must be JSON; coil py's
   * own parser still reads it in the sandbox. */
  char yerr[256];
  yajl_val probe = json_tree_parse(req, req_len, yerr, sizeof yerr, NULL);
  if (!probe) {
    printf("{\"ok\":false,\"error\":{\"type\":\"RequestError\",\"message\":"
           "\"request: invalid JSON\"}}\n");
    return EXIT_COIL_FAILED;
  }
  yajl_tree_free(probe);
  cleanup_free char *frame = NULL;
  size_t frame_len = 0;
  FILE *f = open_memstream(&frame, &frame_len);
  if (!f)
    return EXIT_COIL_FAILED;
  fputs("{\"op\":\"call\"", f);
  if (tenant) {
    fputs(",\"tenant\":", f);
    quote(f, tenant, strlen(tenant));
  }
  fputs(",\"code\":", f);
  quote(f, code, code_len);
  fputs(",\"entry\":", f);
  quote(f, entry ? entry : "handle", strlen(entry ? entry : "handle"));
  fputs(",\"request\":", f);
  fwrite(req, 1, req_len, f);
  if (timeout_s || memory_mb) {
    fputs(",\"limits\":{", f);
    if (timeout_s)
      fprintf(f, "\"timeout_ms\":%ld%s", timeout_s * 1000,
              memory_mb ? "," : "");
    if (memory_mb)
      fprintf(f, "\"memory_mb\":%ld", memory_mb);
    fputc('}', f);
  }
  fputc('}', f);
  fclose(f);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(sock) >= sizeof a.sun_path) {
    log_error("call: --socket: path too long");
    return EXIT_COIL_FAILED;
  }
  strcpy(a.sun_path, sock);
  cleanup_close int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
    log_error("call: --socket: connect %s: %s", sock, strerror(errno));
    return EXIT_COIL_FAILED;
  }
  unsigned char hdr[4];
  if (write_frame(fd, frame, frame_len) < 0 || read_exact(fd, hdr, 4) < 0) {
    log_error("call: %s: the server closed the connection", sock);
    return EXIT_COIL_FAILED;
  }
  uint32_t n = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
               (uint32_t)hdr[2] << 8 | hdr[3];
  cleanup_free char *answer = n <= ANSWER_MAX ? malloc((size_t)n + 1) : NULL;
  if (!answer || read_exact(fd, answer, n) < 0) {
    log_error("call: %s: bad answer from the server", sock);
    return EXIT_COIL_FAILED;
  }
  answer[n] = '\0';
  printf("%s\n", answer);
  fflush(stdout);
  return exit_code_of(answer);
}
