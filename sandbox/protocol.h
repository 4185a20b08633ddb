/* The handler protocol: one JSON request read from stdin (size-capped),
 * parsed in C, and one JSON envelope written with write(2):
 *   {"ok": true, "result": ..., "stdout": "..."}
 *   {"ok": false, "error": {"type", "message", "line", "col"}, "stdout": ...}
 * JSON is handled in C (the request by json_c.c's strict scanner, the
 * envelope by yajl) so a handler that does not import json never pays for
 * it, and no Python code runs for the protocol. */
#ifndef COIL_PROTOCOL_H
#define COIL_PROTOCOL_H

#include <Python.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "protocol_error.h"

/* Reads all of fd (at most cap bytes) and parses it: strict UTF-8 and RFC
 * 8259 JSON, strings exactly as Python's json decodes them (\u0000 kept),
 * a lone surrogate refused. Errors name the problem and where, never quoting
 * the input ("request: not valid UTF-8 at byte 7", "request: invalid JSON:
 * Expecting value: line 1 column 6 (char 5)"). */
int protocol_read_request(int fd, size_t cap, PyObject **out,
                          struct coil_error *err);

/* Serialises result into a success envelope; fails (err, nothing written)
 * when result is not plain JSON data, holds a str with a lone surrogate
 * (UTF-8 cannot encode it), or the envelope would exceed cap. */
int protocol_write_result(int fd, PyObject *result, const char *out,
                          size_t out_len, size_t cap, struct coil_error *err);

#endif
