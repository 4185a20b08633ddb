/* The handler protocol: one JSON request read from stdin (size-capped),
 * parsed in C, and one JSON envelope written with write(2):
 *   {"ok": true, "result": ..., "stdout": "..."}
 *   {"ok": false, "error": {"type", "message", "line", "col"}, "stdout": ...}
 * JSON is handled in C (yajl) so a handler that does not import json never
 * pays for it, and no Python code runs for the protocol. */
#ifndef COIL_PROTOCOL_H
#define COIL_PROTOCOL_H

#include <Python.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* Reads all of fd (at most cap bytes) and parses it. Errors name the
 * problem ("request: larger than 1048576 bytes", "request: invalid JSON at
 * byte 12"). */
int protocol_read_request(int fd, size_t cap, PyObject **out,
                          struct coil_error *err);

/* Serialises result into a success envelope; fails (err, nothing written)
 * when result is not plain JSON data or the envelope would exceed cap. */
int protocol_write_result(int fd, PyObject *result, const char *out,
                          size_t out_len, size_t cap, struct coil_error *err);

struct protocol_failure {
  const char *type; /* GateViolation, Exception, Timeout, ... */
  const char *message;
  const char *exception; /* Python exception class, or NULL */
  int line, col;         /* 0 when unknown */
};

/* Writes an error envelope (truncating long messages); never fails loudly. */
void protocol_write_error(int fd, const struct protocol_failure *f,
                          const char *out, size_t out_len);

/* Same, but only async-signal-safe calls (for timer and CPU signals). */
void protocol_write_error_raw(int fd, const char *type, const char *message);

#endif
