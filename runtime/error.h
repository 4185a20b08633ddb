/* Errors travel up as values: a failing function fills a coil_error and
 * returns -1; callers may prefix context; only cmd/ picks the exit code. */
#ifndef COIL_ERROR_H
#define COIL_ERROR_H

#include <stddef.h>

struct coil_error {
  int err;        /* errno of the failed operation, 0 if none */
  char msg[1024]; /* one line naming the field, path or syscall */
};

/* Sets the error and returns -1, so `return coil_error_set(...)` works. */
int coil_error_set(struct coil_error *e, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like coil_error_set but appends ": strerror(err)" when err != 0. */
int coil_error_sys(struct coil_error *e, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "context: " to an already-set message; returns -1. */
int coil_error_prefix(struct coil_error *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
