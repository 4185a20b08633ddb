#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int coil_error_set(struct coil_error *e, int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  e->err = err;
  return -1;
}

int coil_error_sys(struct coil_error *e, int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  if (err != 0 && n >= 0 && (size_t)n < sizeof e->msg)
    snprintf(e->msg + n, sizeof e->msg - (size_t)n, ": %s", strerror(err));
  e->err = err;
  return -1;
}

int coil_error_prefix(struct coil_error *e, const char *fmt, ...) {
  char joined[2 * sizeof e->msg];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(joined, sizeof e->msg, fmt, ap);
  va_end(ap);
  if (n < 0)
    return -1;
  if ((size_t)n >= sizeof e->msg)
    n = (int)sizeof e->msg - 1;
  snprintf(joined + n, sizeof joined - (size_t)n, ": %s", e->msg);
  memcpy(e->msg, joined, sizeof e->msg - 1);
  e->msg[sizeof e->msg - 1] = '\0';
  return -1;
}
