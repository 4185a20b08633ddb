/* The handler protocol's error envelope and the writing both envelopes
 * share (protocol_error.h). No Python: coil writes an envelope in the
 * sandbox's place without loading it. */
#include "protocol_error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int protocol_write_all(int fd, const unsigned char *buf, size_t len) {
  while (len > 0) {
    ssize_t w = write(fd, buf, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    buf += w;
    len -= (size_t)w;
  }
  return 0;
}

int protocol_write_line(int fd, const unsigned char *buf, size_t len) {
  unsigned char *line = malloc(len + 1);
  if (!line)
    return protocol_write_all(fd, buf, len) < 0 ||
                   protocol_write_all(fd, (const unsigned char *)"\n", 1) < 0
               ? -1
               : 0;
  memcpy(line, buf, len);
  line[len] = '\n';
  int r = protocol_write_all(fd, line, len + 1);
  free(line);
  return r;
}

/* Length of the valid UTF-8 sequence at s (n > 0 bytes left), or 0: no
 * overlong forms, surrogates or code points over U+10FFFF. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
  unsigned char c = s[0], lo = 0x80, hi = 0xBF;
  size_t len;
  if (c < 0x80)
    return 1;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    lo = c == 0xE0 ? 0xA0 : lo;
    hi = c == 0xED ? 0x9F : hi;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    lo = c == 0xF0 ? 0x90 : lo;
    hi = c == 0xF4 ? 0x8F : hi;
  } else {
    return 0;
  }
  if (n < len || s[1] < lo || s[1] > hi)
    return 0;
  for (size_t i = 2; i < len; i++)
    if ((s[i] & 0xC0) != 0x80)
      return 0;
  return len;
}

/* Print output is checked here, not by yajl_gen_validate_utf8 alone: that
 * lets encoded surrogates, overlong forms and code points over U+10FFFF
 * through, which a strict UTF-8 reader of the envelope refuses. */
bool protocol_utf8_valid(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  for (size_t k; n > 0; p += k, n -= k)
    if (!(k = utf8_seq(p, n)))
      return false;
  return true;
}

void protocol_gen_key(yajl_gen g, const char *s) {
  yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

yajl_gen protocol_gen_new(void) {
  yajl_gen g = yajl_gen_alloc(NULL);
  if (g) {
    yajl_gen_config(g, yajl_gen_validate_utf8, 1);
  }
  return g;
}

/* src into dst (cap bytes, NUL-terminated) as valid UTF-8: a byte that
 * starts no valid sequence becomes U+FFFD, and a message too long is cut
 * between characters. Error envelopes must stay JSON whatever text (an
 * exception's message, a truncated one) they are given. */
static void utf8_copy(char *dst, size_t cap, const char *src) {
  static const char repl[] = "\xEF\xBF\xBD";
  const unsigned char *s = (const unsigned char *)src;
  size_t left = strlen(src), n = 0;
  while (left > 0) {
    size_t k = utf8_seq(s, left);
    const char *from = k ? (const char *)s : repl;
    size_t len = k ? k : sizeof repl - 1;
    if (n + len >= cap)
      break;
    memcpy(dst + n, from, len);
    n += len;
    s += k ? k : 1;
    left -= k ? k : 1;
  }
  dst[n] = '\0';
}

void protocol_write_error(int fd, const struct protocol_failure *f,
                          const char *out, size_t out_len) {
  yajl_gen g = protocol_gen_new();
  if (!g)
    return;
  char msg[1024];
  utf8_copy(msg, sizeof msg, f->message ? f->message : "");
  yajl_gen_map_open(g);
  protocol_gen_key(g, "ok");
  yajl_gen_bool(g, 0);
  protocol_gen_key(g, "error");
  yajl_gen_map_open(g);
  protocol_gen_key(g, "type");
  protocol_gen_key(g, f->type);
  protocol_gen_key(g, "message");
  protocol_gen_key(g, msg);
  if (f->exception) {
    protocol_gen_key(g, "exception");
    protocol_gen_key(g, f->exception);
  }
  protocol_gen_key(g, "line");
  yajl_gen_integer(g, f->line);
  protocol_gen_key(g, "col");
  yajl_gen_integer(g, f->col);
  yajl_gen_map_close(g);
  if (out) {
    protocol_gen_key(g, "stdout");
    if (!protocol_utf8_valid(out, out_len) ||
        yajl_gen_string(g, (const unsigned char *)out, out_len) !=
            yajl_gen_status_ok)
      yajl_gen_null(g);
  }
  yajl_gen_map_close(g);
  const unsigned char *buf;
  size_t len = 0;
  if (yajl_gen_get_buf(g, &buf, &len) == yajl_gen_status_ok)
    protocol_write_line(fd, buf, len);
  yajl_gen_free(g);
}

void protocol_write_error_raw(int fd, const char *type, const char *message) {
  char buf[512];
  size_t n = 0;
  const char *parts[] = {"{\"ok\":false,\"error\":{\"type\":\"", type,
                         "\",\"message\":\"", message,
                         "\",\"line\":0,\"col\":0}}\n"};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    for (const char *p = parts[i]; *p && n < sizeof buf; p++)
      buf[n++] = *p;
  protocol_write_all(fd, (const unsigned char *)buf, n);
}
