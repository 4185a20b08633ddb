#include "protocol.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>

#include "cleanup.h"
#include "json_c.h"
#include "readall.h"

/* Nesting deeper than this is refused before the (recursive) parser runs,
 * and in a result. */
#define MAX_DEPTH 128

/* Depth of arrays/objects outside strings, and no NUL bytes. */
static int prescan(const char *s, size_t len, struct coil_error *err) {
  int depth = 0;
  bool in_str = false;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (c == '\0')
      return coil_error_set(err, EINVAL, "request: NUL byte at offset %zu", i);
    if (in_str) {
      if (c == '\\')
        i++;
      else if (c == '"')
        in_str = false;
    } else if (c == '"') {
      in_str = true;
    } else if (c == '[' || c == '{') {
      if (++depth > MAX_DEPTH)
        return coil_error_set(err, EINVAL,
                              "request: nested deeper than %d at offset %zu",
                              MAX_DEPTH, i);
    } else if (c == ']' || c == '}') {
      depth--;
    }
  }
  return 0;
}

/* The request is strict UTF-8 JSON; string escapes decode exactly as
 * Python's json does (\u0000 included), except that NaN/Infinity and lone
 * surrogates are refused (json_c.h). Error messages give positions only:
 * nothing of the request is copied into the envelope. */
int protocol_read_request(int fd, size_t cap, PyObject **out,
                          struct coil_error *err) {
  cleanup_free char *buf = NULL;
  size_t len = 0;
  if (read_all(fd, cap, false, &buf, &len, err) < 0)
    return coil_error_prefix(err, "request");
  if (prescan(buf, len, err) < 0)
    return -1;
  PyObject *text = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)len, "strict");
  if (!text) {
    Py_ssize_t at = -1;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (value && PyErr_GivenExceptionMatches(value, PyExc_UnicodeDecodeError))
      PyUnicodeDecodeError_GetStart(value, &at);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_Clear();
    if (at < 0)
      return coil_error_set(err, EINVAL, "request: cannot decode as UTF-8");
    return coil_error_set(err, EINVAL, "request: not valid UTF-8 at byte %zd",
                          at);
  }
  *out = json_c_parse_strict(text);
  Py_DECREF(text);
  if (*out)
    return 0;
  bool invalid = PyErr_ExceptionMatches(PyExc_ValueError);
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyObject *msg = invalid && value ? PyObject_Str(value) : NULL;
  const char *txt = msg ? PyUnicode_AsUTF8(msg) : NULL;
  if (txt)
    coil_error_set(err, EINVAL, "request: invalid JSON: %s", txt);
  else
    coil_error_set(err, EINVAL, "request: cannot convert to Python values");
  Py_XDECREF(msg);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  PyErr_Clear();
  return -1;
}

static int write_all(int fd, const unsigned char *buf, size_t len) {
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

static size_t utf8_seq(const unsigned char *s, size_t n);

/* Print output is checked here, not by yajl_gen_validate_utf8 alone: that
 * lets encoded surrogates, overlong forms and code points over U+10FFFF
 * through, which a strict UTF-8 reader of the envelope refuses. */
static bool utf8_valid(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  for (size_t k; n > 0; p += k, n -= k)
    if (!(k = utf8_seq(p, n)))
      return false;
  return true;
}

static void put(yajl_gen g, const char *s) {
  yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

/* The only str UTF-8 cannot encode holds a lone surrogate: refused by name
 * rather than replaced, as a request holding one is. */
static int lone_surrogate(PyObject *s, struct coil_error *err) {
  Py_UCS4 c = 0;
  Py_ssize_t i = 0;
  for (; i < PyUnicode_GET_LENGTH(s); i++)
    if (Py_UNICODE_IS_SURROGATE(c = PyUnicode_READ_CHAR(s, i)))
      break;
  return coil_error_set(err, EINVAL,
                        "result: a str holds the lone surrogate \\u%04x at "
                        "index %zd, which UTF-8 cannot encode",
                        (unsigned)c, i);
}

/* Plain JSON data only: exact builtin types (user code cannot define
 * classes), finite floats, str keys, bounded depth. */
static int gen_value(yajl_gen g, PyObject *o, int depth,
                     struct coil_error *err) {
  if (depth > MAX_DEPTH)
    return coil_error_set(err, EINVAL, "result: nested deeper than %d",
                          MAX_DEPTH);
  if (o == Py_None)
    return yajl_gen_null(g) == yajl_gen_status_ok ? 0 : -1;
  if (o == Py_True || o == Py_False)
    return yajl_gen_bool(g, o == Py_True) == yajl_gen_status_ok ? 0 : -1;
  if (PyLong_CheckExact(o)) {
    PyObject *s = PyObject_Str(o);
    if (!s) {
      PyErr_Clear();
      return coil_error_set(err, EINVAL,
                            "result: integer too large to serialise");
    }
    Py_ssize_t n;
    const char *txt = PyUnicode_AsUTF8AndSize(s, &n);
    int r = yajl_gen_number(g, txt, (size_t)n) == yajl_gen_status_ok ? 0 : -1;
    Py_DECREF(s);
    return r;
  }
  if (PyFloat_CheckExact(o)) {
    double d = PyFloat_AS_DOUBLE(o);
    if (!isfinite(d))
      return coil_error_set(err, EINVAL, "result: %s is not valid JSON",
                            isnan(d) ? "NaN" : "Infinity");
    return yajl_gen_double(g, d) == yajl_gen_status_ok ? 0 : -1;
  }
  if (PyUnicode_CheckExact(o)) {
    Py_ssize_t n;
    const char *txt = PyUnicode_AsUTF8AndSize(o, &n);
    if (!txt) {
      PyErr_Clear();
      return lone_surrogate(o, err);
    }
    return yajl_gen_string(g, (const unsigned char *)txt, (size_t)n) ==
                   yajl_gen_status_ok
               ? 0
               : -1;
  }
  if (PyList_CheckExact(o) || PyTuple_CheckExact(o)) {
    yajl_gen_array_open(g);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    for (Py_ssize_t i = 0; i < n; i++)
      if (gen_value(g, PySequence_Fast_GET_ITEM(o, i), depth + 1, err) < 0)
        return -1;
    yajl_gen_array_close(g);
    return 0;
  }
  if (PyDict_CheckExact(o)) {
    yajl_gen_map_open(g);
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(o, &pos, &k, &v)) {
      if (!PyUnicode_CheckExact(k))
        return coil_error_set(err, EINVAL,
                              "result: dict keys must be str, not %s",
                              Py_TYPE(k)->tp_name);
      if (gen_value(g, k, depth + 1, err) < 0 ||
          gen_value(g, v, depth + 1, err) < 0)
        return -1;
    }
    yajl_gen_map_close(g);
    return 0;
  }
  return coil_error_set(err, EINVAL, "result: %s is not JSON data",
                        Py_TYPE(o)->tp_name);
}

static yajl_gen new_gen(void) {
  yajl_gen g = yajl_gen_alloc(NULL);
  if (g) {
    yajl_gen_config(g, yajl_gen_validate_utf8, 1);
  }
  return g;
}

int protocol_write_result(int fd, PyObject *result, const char *out,
                          size_t out_len, size_t cap, struct coil_error *err) {
  yajl_gen g = new_gen();
  if (!g)
    return coil_error_sys(err, ENOMEM, "result");
  yajl_gen_map_open(g);
  put(g, "ok");
  yajl_gen_bool(g, 1);
  put(g, "result");
  int r = gen_value(g, result, 0, err);
  if (r == 0) {
    put(g, "stdout");
    if (!utf8_valid(out, out_len) ||
        yajl_gen_string(g, (const unsigned char *)out, out_len) !=
            yajl_gen_status_ok)
      r = coil_error_set(err, EINVAL, "print output is not valid UTF-8");
  }
  yajl_gen_map_close(g);
  const unsigned char *buf;
  size_t len = 0;
  yajl_gen_get_buf(g, &buf, &len);
  if (r == 0 && len > cap)
    r = coil_error_set(err, EFBIG,
                       "result: %zu bytes, over the %zu-byte output cap", len,
                       cap);
  if (r == 0 && (write_all(fd, buf, len) < 0 ||
                 write_all(fd, (const unsigned char *)"\n", 1) < 0))
    r = coil_error_sys(err, errno, "write result");
  yajl_gen_free(g);
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
  yajl_gen g = new_gen();
  if (!g)
    return;
  char msg[1024];
  utf8_copy(msg, sizeof msg, f->message ? f->message : "");
  yajl_gen_map_open(g);
  put(g, "ok");
  yajl_gen_bool(g, 0);
  put(g, "error");
  yajl_gen_map_open(g);
  put(g, "type");
  put(g, f->type);
  put(g, "message");
  put(g, msg);
  if (f->exception) {
    put(g, "exception");
    put(g, f->exception);
  }
  put(g, "line");
  yajl_gen_integer(g, f->line);
  put(g, "col");
  yajl_gen_integer(g, f->col);
  yajl_gen_map_close(g);
  if (out) {
    put(g, "stdout");
    if (!utf8_valid(out, out_len) ||
        yajl_gen_string(g, (const unsigned char *)out, out_len) !=
            yajl_gen_status_ok)
      yajl_gen_null(g);
  }
  yajl_gen_map_close(g);
  const unsigned char *buf;
  size_t len = 0;
  if (yajl_gen_get_buf(g, &buf, &len) == yajl_gen_status_ok) {
    write_all(fd, buf, len);
    write_all(fd, (const unsigned char *)"\n", 1);
  }
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
  write_all(fd, (const unsigned char *)buf, n);
}
