/* The handler protocol's error envelope,
 *   {"ok": false, "error": {"type", "message", "line", "col"}, "stdout": ...}
 * written by the sandbox, or by coil in its place when it died without
 * answering; and the JSON writing both envelopes share (protocol.c writes
 * the success envelope). Needs no Python. */
#ifndef COIL_PROTOCOL_ERROR_H
#define COIL_PROTOCOL_ERROR_H

#include <stdbool.h>
#include <stddef.h>
#include <yajl/yajl_gen.h>

struct protocol_failure {
  const char *type; /* GateViolation, Exception, Timeout, ... */
  const char *message;
  const char *exception; /* Python exception class, or NULL */
  int line, col;         /* 0 when unknown */
};

/* Writes an error envelope; the message is cut between characters when
 * long and any byte that is not valid UTF-8 becomes U+FFFD, so the envelope
 * is always JSON. Never fails loudly. */
void protocol_write_error(int fd, const struct protocol_failure *f,
                          const char *out, size_t out_len);

/* Same, but only async-signal-safe calls (for timer and CPU signals). */
void protocol_write_error_raw(int fd, const char *type, const char *message);

/* A generator that refuses invalid UTF-8 in strings, or NULL. */
yajl_gen protocol_gen_new(void);

/* Adds the string s (a map key, or a value). */
void protocol_gen_key(yajl_gen g, const char *s);

/* Whether s[0..n) is strict UTF-8: no overlong forms, surrogates or code
 * points over U+10FFFF. */
bool protocol_utf8_valid(const char *s, size_t n);

/* Writes all of buf, retrying on EINTR; 0, or -1. */
int protocol_write_all(int fd, const unsigned char *buf, size_t len);
/* buf and a newline in one write (the reader wakes once for an envelope);
 * 0, or -1. */
int protocol_write_line(int fd, const unsigned char *buf, size_t len);

#endif
