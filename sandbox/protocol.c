#include "protocol.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "cleanup.h"
#include "readall.h"

/* Nesting deeper than this is refused before yajl builds (and recursively
 * frees) a tree. */
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

static PyObject *number_to_py(yajl_val v) {
  if (YAJL_IS_INTEGER(v))
    return PyLong_FromLongLong(YAJL_GET_INTEGER(v));
  const char *text = YAJL_GET_NUMBER(v);
  if (text && !strpbrk(text, ".eE"))
    return PyLong_FromString(text, NULL, 10);
  return PyFloat_FromDouble(YAJL_GET_DOUBLE(v));
}

static PyObject *to_py(yajl_val v) {
  switch (v->type) {
  case yajl_t_string:
    return PyUnicode_FromString(v->u.string);
  case yajl_t_number:
    return number_to_py(v);
  case yajl_t_true:
    Py_RETURN_TRUE;
  case yajl_t_false:
    Py_RETURN_FALSE;
  case yajl_t_null:
    Py_RETURN_NONE;
  case yajl_t_array: {
    PyObject *l = PyList_New((Py_ssize_t)v->u.array.len);
    for (size_t i = 0; l && i < v->u.array.len; i++) {
      PyObject *item = to_py(v->u.array.values[i]);
      if (!item) {
        Py_CLEAR(l);
        break;
      }
      PyList_SET_ITEM(l, (Py_ssize_t)i, item);
    }
    return l;
  }
  case yajl_t_object: {
    PyObject *d = PyDict_New();
    for (size_t i = 0; d && i < v->u.object.len; i++) {
      PyObject *val = to_py(v->u.object.values[i]);
      if (!val || PyDict_SetItemString(d, v->u.object.keys[i], val) < 0) {
        Py_XDECREF(val);
        Py_CLEAR(d);
        break;
      }
      Py_DECREF(val);
    }
    return d;
  }
  default:
    PyErr_SetString(PyExc_ValueError, "unsupported JSON value");
    return NULL;
  }
}

int protocol_read_request(int fd, size_t cap, PyObject **out,
                          struct coil_error *err) {
  cleanup_free char *buf = NULL;
  size_t len = 0;
  if (read_all(fd, cap, false, &buf, &len, err) < 0)
    return coil_error_prefix(err, "request");
  if (prescan(buf, len, err) < 0)
    return -1;
  char ebuf[256];
  yajl_val tree = yajl_tree_parse(buf, ebuf, sizeof ebuf);
  if (!tree) {
    for (char *p = ebuf; *p; p++)
      if (*p == '\n' || *p == '\r')
        *p = ' ';
    return coil_error_set(err, EINVAL, "request: invalid JSON: %s", ebuf);
  }
  *out = to_py(tree);
  yajl_tree_free(tree);
  if (!*out) {
    PyErr_Clear();
    return coil_error_set(err, EINVAL,
                          "request: cannot convert to Python values");
  }
  return 0;
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

static void put(yajl_gen g, const char *s) {
  yajl_gen_string(g, (const unsigned char *)s, strlen(s));
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
      return coil_error_set(err, EINVAL, "result: string is not valid UTF-8");
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
    if (yajl_gen_string(g, (const unsigned char *)out, out_len) !=
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

void protocol_write_error(int fd, const struct protocol_failure *f,
                          const char *out, size_t out_len) {
  yajl_gen g = new_gen();
  if (!g)
    return;
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", f->message ? f->message : "");
  yajl_gen_map_open(g);
  put(g, "ok");
  yajl_gen_bool(g, 0);
  put(g, "error");
  yajl_gen_map_open(g);
  put(g, "type");
  put(g, f->type);
  put(g, "message");
  if (yajl_gen_string(g, (const unsigned char *)msg, strlen(msg)) !=
      yajl_gen_status_ok)
    put(g, "(message is not valid UTF-8)");
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
    if (yajl_gen_string(g, (const unsigned char *)out, out_len) !=
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
  const char *parts[] = {"{\"ok\": false, \"error\": {\"type\": \"", type,
                         "\", \"message\": \"", message,
                         "\", \"line\": 0, \"col\": 0}}\n"};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    for (const char *p = parts[i]; *p && n < sizeof buf; p++)
      buf[n++] = *p;
  write_all(fd, (const unsigned char *)buf, n);
}
