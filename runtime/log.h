/* Warnings and errors to stderr and, with --log, to a file in runc's
 * text or json-lines format ({"level","msg","time"}). */
#ifndef COIL_LOG_H
#define COIL_LOG_H

#include <stdbool.h>

enum coil_log_level {
  COIL_LOG_DEBUG,
  COIL_LOG_INFO,
  COIL_LOG_WARN,
  COIL_LOG_ERROR
};

/* path may be NULL (stderr only). Returns -1 if the log file cannot be
 * opened; logging then goes to stderr only. */
int log_init(const char *path, bool json, bool debug);

/* Forgets the --log file without closing it: init calls this before it
 * closes every inherited fd, so a later log line can never land in an fd
 * that reused the number. */
void log_forget_file(void);

void coil_log(enum coil_log_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define log_debug(...) coil_log(COIL_LOG_DEBUG, __VA_ARGS__)
#define log_info(...) coil_log(COIL_LOG_INFO, __VA_ARGS__)
#define log_warn(...) coil_log(COIL_LOG_WARN, __VA_ARGS__)
#define log_error(...) coil_log(COIL_LOG_ERROR, __VA_ARGS__)

#endif
