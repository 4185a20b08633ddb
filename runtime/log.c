#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int log_fd = -1;
static bool log_json;
static bool log_debug_on;

int log_init(const char *path, bool json, bool debug) {
  log_json = json;
  log_debug_on = debug;
  if (!path)
    return 0;
  log_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  return log_fd < 0 ? -1 : 0;
}

void log_forget_file(void) { log_fd = -1; }

static const char *level_name(enum coil_log_level lvl) {
  switch (lvl) {
  case COIL_LOG_DEBUG:
    return "debug";
  case COIL_LOG_INFO:
    return "info";
  case COIL_LOG_WARN:
    return "warning";
  case COIL_LOG_ERROR:
    return "error";
  }
  return "error";
}

/* JSON string escaping for the message; control bytes become \u00XX. */
static size_t json_escape(char *out, size_t cap, const char *in) {
  size_t o = 0;
  for (const unsigned char *p = (const unsigned char *)in; *p && o + 7 < cap;
       p++) {
    if (*p == '"' || *p == '\\') {
      out[o++] = '\\';
      out[o++] = (char)*p;
    } else if (*p < 0x20) {
      o += (size_t)snprintf(out + o, cap - o, "\\u%04x", *p);
    } else {
      out[o++] = (char)*p;
    }
  }
  out[o] = '\0';
  return o;
}

static void write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t w = write(fd, buf, len);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return;
    }
    buf += w;
    len -= (size_t)w;
  }
}

void coil_log(enum coil_log_level lvl, const char *fmt, ...) {
  if (lvl == COIL_LOG_DEBUG && !log_debug_on)
    return;
  int saved = errno;
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);

  char line[4096];
  int n;
  if (lvl == COIL_LOG_DEBUG) {
    /* Debug lines carry a monotonic timestamp, so --debug shows where the
     * time of a run goes (process and pid prefix: init logs too). */
    struct timespec mono;
    clock_gettime(CLOCK_MONOTONIC, &mono);
    char stamped[sizeof msg + 64];
    snprintf(stamped, sizeof stamped, "[%ld.%03ld %d] %s",
             (long)mono.tv_sec % 1000, mono.tv_nsec / 1000000, (int)getpid(),
             msg);
    memcpy(msg, stamped, sizeof msg - 1);
    msg[sizeof msg - 1] = '\0';
  }
  if (lvl != COIL_LOG_INFO || log_fd < 0) {
    n = snprintf(line, sizeof line, "coil: %s%s%s\n",
                 lvl == COIL_LOG_ERROR ? "" : level_name(lvl),
                 lvl == COIL_LOG_ERROR ? "" : ": ", msg);
    if (n > 0)
      write_all(STDERR_FILENO, line,
                (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
  }
  if (log_fd >= 0) {
    struct timespec ts;
    struct tm tm;
    char when[64];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    if (log_json) {
      char esc[sizeof msg * 2];
      json_escape(esc, sizeof esc, msg);
      n = snprintf(line, sizeof line,
                   "{\"level\":\"%s\",\"msg\":\"%s\",\"time\":\"%s.%09ldZ\"}\n",
                   level_name(lvl), esc, when, ts.tv_nsec);
    } else {
      n = snprintf(line, sizeof line,
                   "time=\"%s.%09ldZ\" level=%s msg=\"%s\"\n", when, ts.tv_nsec,
                   level_name(lvl), msg);
    }
    if (n > 0)
      write_all(log_fd, line,
                (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
  }
  errno = saved;
}
