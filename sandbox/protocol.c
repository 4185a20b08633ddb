#include "protocol.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int protocol_write_result(int fd, PyObject *result, const char *out,
                          size_t out_len, size_t cap, struct coil_error *err) {
  yajl_gen g = protocol_gen_new();
  if (!g)
    return coil_error_sys(err, ENOMEM, "result");
  yajl_gen_map_open(g);
  protocol_gen_key(g, "ok");
  yajl_gen_bool(g, 1);
  protocol_gen_key(g, "result");
  int r = gen_value(g, result, 0, err);
  if (r == 0) {
    protocol_gen_key(g, "stdout");
    if (!protocol_utf8_valid(out, out_len) ||
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
  if (r == 0 && protocol_write_line(fd, buf, len) < 0)
    r = coil_error_sys(err, errno, "write result");
  yajl_gen_free(g);
  return r;
}
