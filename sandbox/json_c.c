/* json.loads / json.dumps in C (see json_c.h). The decoder follows
 * CPython 3.11's Modules/_json.c scanner (scan_once_unicode,
 * scanstring_unicode, _match_number_unicode) character for character, so
 * what is accepted, the values built and the error positions are Python's;
 * it reads the str's code points directly, so lone surrogates (escaped or
 * not) come out as Python's do. It is a hand-written scanner rather than
 * yajl: yajl rejects NaN/Infinity, turns a lone \uD800 into '?', and counts
 * positions in bytes. The encoder follows the C encoder (indent None) and
 * json.encoder._make_iterencode (indent given) with ensure_ascii=True. */
#include "json_c.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* ---- decoding ----------------------------------------------------------- */

struct scanner {
  PyObject *str;
  int kind;
  const void *data;
  Py_ssize_t len;
  int depth;
  bool strict;    /* json_c_parse_strict: RFC 8259 only */
  PyObject *memo; /* keys seen, so equal keys share one object */
  Py_UCS4 *buf;   /* unescaped text of the current string */
  Py_ssize_t cap; /* of buf, in code points */
};

#define READ(p, i) PyUnicode_READ((p)->kind, (p)->data, (i))
#define IS_WS(c) ((c) == ' ' || (c) == '\t' || (c) == '\n' || (c) == '\r')
#define IS_DIGIT(c) ((c) >= '0' && (c) <= '9')

/* JSONDecodeError's message, as a ValueError. */
static PyObject *decode_error(const struct scanner *p, const char *msg,
                              Py_ssize_t pos) {
  Py_ssize_t line = 1, last_nl = -1;
  for (Py_ssize_t i = 0; i < pos && i < p->len; i++)
    if (READ(p, i) == '\n') {
      line++;
      last_nl = i;
    }
  PyErr_Format(PyExc_ValueError, "%s: line %zd column %zd (char %zd)", msg,
               line, pos - last_nl, pos);
  return NULL;
}

static Py_ssize_t skip_ws(const struct scanner *p, Py_ssize_t i) {
  while (i < p->len && IS_WS(READ(p, i)))
    i++;
  return i;
}

/* n code points of unescaped text appended at *len. */
static int buf_room(struct scanner *p, Py_ssize_t len, Py_ssize_t n) {
  if (len + n <= p->cap)
    return 0;
  Py_ssize_t cap = p->cap ? p->cap : 64;
  while (cap < len + n) {
    if (cap > PY_SSIZE_T_MAX / 2 / (Py_ssize_t)sizeof(Py_UCS4)) {
      PyErr_NoMemory();
      return -1;
    }
    cap *= 2;
  }
  Py_UCS4 *b = PyMem_Realloc(p->buf, (size_t)cap * sizeof(Py_UCS4));
  if (!b) {
    PyErr_NoMemory();
    return -1;
  }
  p->buf = b;
  p->cap = cap;
  return 0;
}

static int append_chunk(struct scanner *p, Py_ssize_t *len, Py_ssize_t from,
                        Py_ssize_t to) {
  if (buf_room(p, *len, to - from + 1) < 0)
    return -1;
  for (Py_ssize_t i = from; i < to; i++)
    p->buf[(*len)++] = READ(p, i);
  return 0;
}

/* 4 hex digits at i, or -1. */
static long hex4(const struct scanner *p, Py_ssize_t i) {
  long v = 0;
  for (Py_ssize_t k = i; k < i + 4; k++) {
    Py_UCS4 d = READ(p, k);
    v <<= 4;
    if (d >= '0' && d <= '9')
      v |= d - '0';
    else if (d >= 'a' && d <= 'f')
      v |= d - 'a' + 10;
    else if (d >= 'A' && d <= 'F')
      v |= d - 'A' + 10;
    else
      return -1;
  }
  return v;
}

/* The string whose opening quote is at begin - 1. */
static PyObject *scan_string(struct scanner *p, Py_ssize_t begin,
                             Py_ssize_t *next) {
  Py_ssize_t len = p->len, end = begin, n = 0;
  bool escaped = false;
  for (;;) {
    Py_ssize_t i;
    Py_UCS4 d = 0;
    for (i = end; i < len; i++) {
      d = READ(p, i);
      if (d == '"' || d == '\\')
        break;
      if (d <= 0x1f)
        return decode_error(p, "Invalid control character at", i);
    }
    if (d != '"' && d != '\\')
      return decode_error(p, "Unterminated string starting at", begin - 1);
    if (d == '"') {
      *next = i + 1;
      if (!escaped)
        return PyUnicode_Substring(p->str, begin, i);
      if (append_chunk(p, &n, end, i) < 0)
        return NULL;
      return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, p->buf, n);
    }
    escaped = true;
    if (append_chunk(p, &n, end, i) < 0)
      return NULL;
    Py_ssize_t nx = i + 1;
    if (nx == len)
      return decode_error(p, "Unterminated string starting at", begin - 1);
    Py_UCS4 c = READ(p, nx);
    if (c != 'u') {
      end = nx + 1;
      switch (c) {
      case '"':
      case '\\':
      case '/':
        break;
      case 'b':
        c = '\b';
        break;
      case 'f':
        c = '\f';
        break;
      case 'n':
        c = '\n';
        break;
      case 'r':
        c = '\r';
        break;
      case 't':
        c = '\t';
        break;
      default:
        return decode_error(p, "Invalid \\escape", end - 2);
      }
    } else {
      nx++;
      end = nx + 4;
      if (end >= len)
        return decode_error(p, "Invalid \\uXXXX escape", nx - 1);
      long v = hex4(p, nx);
      if (v < 0)
        return decode_error(p, "Invalid \\uXXXX escape", end - 5);
      c = (Py_UCS4)v;
      if (Py_UNICODE_IS_HIGH_SURROGATE(c) && end + 6 < len &&
          READ(p, end) == '\\' && READ(p, end + 1) == 'u') {
        long v2 = hex4(p, end + 2);
        if (v2 < 0)
          return decode_error(p, "Invalid \\uXXXX escape", end + 1);
        if (Py_UNICODE_IS_LOW_SURROGATE((Py_UCS4)v2)) {
          c = Py_UNICODE_JOIN_SURROGATES(c, (Py_UCS4)v2);
          end += 6;
        }
      }
      if (p->strict && Py_UNICODE_IS_SURROGATE(c)) {
        char msg[64];
        snprintf(msg, sizeof msg, "Unpaired surrogate \\u%04x in string at",
                 (unsigned)c);
        return decode_error(p, msg, nx - 2);
      }
    }
    p->buf[n++] = c; /* room: append_chunk reserved one more */
  }
}

static PyObject *decode_number(const struct scanner *p, Py_ssize_t start,
                               Py_ssize_t end, bool is_float) {
  Py_ssize_t n = end - start;
  char small[32];
  char *s = n < (Py_ssize_t)sizeof small ? small : PyMem_Malloc((size_t)n + 1);
  if (!s)
    return PyErr_NoMemory();
  for (Py_ssize_t i = 0; i < n; i++)
    s[i] = (char)READ(p, start + i);
  s[n] = '\0';
  PyObject *r;
  if (is_float) {
    double d = PyOS_string_to_double(s, NULL, NULL);
    r = d == -1.0 && PyErr_Occurred() ? NULL : PyFloat_FromDouble(d);
  } else if (n <= 18) {
    long long v = 0;
    for (Py_ssize_t i = s[0] == '-'; i < n; i++)
      v = v * 10 + (s[i] - '0');
    r = PyLong_FromLongLong(s[0] == '-' ? -v : v);
  } else {
    r = PyLong_FromString(s, NULL, 10);
  }
  if (s != small)
    PyMem_Free(s);
  return r;
}

static PyObject *match_number(const struct scanner *p, Py_ssize_t start,
                              Py_ssize_t *next) {
  Py_ssize_t idx = start, end_idx = p->len - 1;
  bool is_float = false;
  if (READ(p, idx) == '-') {
    idx++;
    if (idx > end_idx)
      return decode_error(p, "Expecting value", start);
  }
  Py_UCS4 c = READ(p, idx);
  if (c >= '1' && c <= '9') {
    idx++;
    while (idx <= end_idx && IS_DIGIT(READ(p, idx)))
      idx++;
  } else if (c == '0') {
    idx++;
  } else {
    return decode_error(p, "Expecting value", start);
  }
  if (idx < end_idx && READ(p, idx) == '.' && IS_DIGIT(READ(p, idx + 1))) {
    is_float = true;
    idx += 2;
    while (idx <= end_idx && IS_DIGIT(READ(p, idx)))
      idx++;
  }
  if (idx < end_idx && (READ(p, idx) == 'e' || READ(p, idx) == 'E')) {
    Py_ssize_t e_start = idx;
    idx++;
    if (idx < end_idx && (READ(p, idx) == '-' || READ(p, idx) == '+'))
      idx++;
    while (idx <= end_idx && IS_DIGIT(READ(p, idx)))
      idx++;
    if (IS_DIGIT(READ(p, idx - 1)))
      is_float = true;
    else
      idx = e_start;
  }
  *next = idx;
  return decode_number(p, start, idx, is_float);
}

static bool matches(const struct scanner *p, Py_ssize_t i, const char *word) {
  size_t n = strlen(word);
  if (i + (Py_ssize_t)n > p->len)
    return false;
  for (size_t k = 0; k < n; k++)
    if (READ(p, i + (Py_ssize_t)k) != (Py_UCS4)(unsigned char)word[k])
      return false;
  return true;
}

static PyObject *scan_value(struct scanner *p, Py_ssize_t idx,
                            Py_ssize_t *next);

static PyObject *parse_object(struct scanner *p, Py_ssize_t idx,
                              Py_ssize_t *next) {
  Py_ssize_t end_idx = p->len - 1, nx;
  PyObject *dict = PyDict_New();
  if (!dict)
    return NULL;
  idx = skip_ws(p, idx);
  if (idx > end_idx || READ(p, idx) != '}') {
    for (;;) {
      if (idx > end_idx || READ(p, idx) != '"') {
        decode_error(p, "Expecting property name enclosed in double quotes",
                     idx);
        goto bail;
      }
      PyObject *key = scan_string(p, idx + 1, &nx);
      if (!key)
        goto bail;
      PyObject *memo = PyDict_SetDefault(p->memo, key, key); /* borrowed */
      Py_XINCREF(memo);
      Py_DECREF(key);
      if (!memo)
        goto bail;
      key = memo;
      idx = skip_ws(p, nx);
      if (idx > end_idx || READ(p, idx) != ':') {
        Py_DECREF(key);
        decode_error(p, "Expecting ':' delimiter", idx);
        goto bail;
      }
      idx = skip_ws(p, idx + 1);
      PyObject *val = scan_value(p, idx, &nx);
      int rc = val ? PyDict_SetItem(dict, key, val) : -1;
      Py_DECREF(key);
      Py_XDECREF(val);
      if (rc < 0)
        goto bail;
      idx = skip_ws(p, nx);
      if (idx <= end_idx && READ(p, idx) == '}')
        break;
      if (idx > end_idx || READ(p, idx) != ',') {
        decode_error(p, "Expecting ',' delimiter", idx);
        goto bail;
      }
      idx = skip_ws(p, idx + 1);
    }
  }
  *next = idx + 1;
  return dict;
bail:
  Py_DECREF(dict);
  return NULL;
}

static PyObject *parse_array(struct scanner *p, Py_ssize_t idx,
                             Py_ssize_t *next) {
  Py_ssize_t end_idx = p->len - 1, nx;
  PyObject *list = PyList_New(0);
  if (!list)
    return NULL;
  idx = skip_ws(p, idx);
  if (idx > end_idx || READ(p, idx) != ']') {
    for (;;) {
      PyObject *val = scan_value(p, idx, &nx);
      int rc = val ? PyList_Append(list, val) : -1;
      Py_XDECREF(val);
      if (rc < 0)
        goto bail;
      idx = skip_ws(p, nx);
      if (idx <= end_idx && READ(p, idx) == ']')
        break;
      if (idx > end_idx || READ(p, idx) != ',') {
        decode_error(p, "Expecting ',' delimiter", idx);
        goto bail;
      }
      idx = skip_ws(p, idx + 1);
    }
  }
  *next = idx + 1;
  return list;
bail:
  Py_DECREF(list);
  return NULL;
}

static PyObject *scan_value(struct scanner *p, Py_ssize_t idx,
                            Py_ssize_t *next) {
  if (idx >= p->len)
    return decode_error(p, "Expecting value", idx);
  switch (READ(p, idx)) {
  case '"':
    return scan_string(p, idx + 1, next);
  case '{':
  case '[': {
    if (p->depth >= JSON_C_MAX_DEPTH) {
      char msg[64];
      snprintf(msg, sizeof msg, "Nesting deeper than %d levels",
               JSON_C_MAX_DEPTH);
      return decode_error(p, msg, idx);
    }
    p->depth++;
    PyObject *r = READ(p, idx) == '{' ? parse_object(p, idx + 1, next)
                                      : parse_array(p, idx + 1, next);
    p->depth--;
    return r;
  }
  case 'n':
    if (matches(p, idx, "null")) {
      *next = idx + 4;
      Py_RETURN_NONE;
    }
    break;
  case 't':
    if (matches(p, idx, "true")) {
      *next = idx + 4;
      Py_RETURN_TRUE;
    }
    break;
  case 'f':
    if (matches(p, idx, "false")) {
      *next = idx + 5;
      Py_RETURN_FALSE;
    }
    break;
  case 'N':
    if (!p->strict && matches(p, idx, "NaN")) {
      *next = idx + 3;
      return PyFloat_FromDouble(Py_NAN);
    }
    break;
  case 'I':
    if (!p->strict && matches(p, idx, "Infinity")) {
      *next = idx + 8;
      return PyFloat_FromDouble(HUGE_VAL);
    }
    break;
  case '-':
    if (!p->strict && matches(p, idx, "-Infinity")) {
      *next = idx + 9;
      return PyFloat_FromDouble(-HUGE_VAL);
    }
    break;
  }
  return match_number(p, idx, next);
}

static PyObject *loads_str(PyObject *s, bool strict) {
  struct scanner p = {.str = s,
                      .strict = strict,
                      .kind = PyUnicode_KIND(s),
                      .data = PyUnicode_DATA(s),
                      .len = PyUnicode_GET_LENGTH(s)};
  p.memo = PyDict_New();
  if (!p.memo)
    return NULL;
  Py_ssize_t end;
  PyObject *r = scan_value(&p, skip_ws(&p, 0), &end);
  if (r) {
    end = skip_ws(&p, end);
    if (end != p.len) {
      Py_CLEAR(r);
      decode_error(&p, "Extra data", end);
    }
  }
  Py_DECREF(p.memo);
  PyMem_Free(p.buf);
  return r;
}

/* json.loads refuses a str that starts with a BOM (bytes lose one). */
static bool starts_with_bom(PyObject *s) {
  if (PyUnicode_GET_LENGTH(s) == 0 || PyUnicode_READ_CHAR(s, 0) != 0xFEFF)
    return false;
  PyErr_Format(PyExc_ValueError,
               "Unexpected UTF-8 BOM (decode using utf-8-sig): "
               "line 1 column 1 (char 0)");
  return true;
}

PyObject *json_c_parse_strict(PyObject *s) {
  return starts_with_bom(s) ? NULL : loads_str(s, true);
}

/* bytes as json.loads decodes them: json.detect_encoding, then the codec
 * with errors="surrogatepass", here the C decoders (no codec lookup). */
static PyObject *decode_bytes(const unsigned char *b, Py_ssize_t n) {
  const char *s = (const char *)b;
  int bo;
  if (n >= 4 && ((b[0] == 0 && b[1] == 0 && b[2] == 0xFE && b[3] == 0xFF) ||
                 (b[0] == 0xFF && b[1] == 0xFE && b[2] == 0 && b[3] == 0))) {
    bo = 0; /* utf-32 with its BOM */
    return PyUnicode_DecodeUTF32(s, n, "surrogatepass", &bo);
  }
  if (n >= 2 &&
      ((b[0] == 0xFE && b[1] == 0xFF) || (b[0] == 0xFF && b[1] == 0xFE))) {
    bo = 0;
    return PyUnicode_DecodeUTF16(s, n, "surrogatepass", &bo);
  }
  if (n >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF)
    return PyUnicode_DecodeUTF8(s + 3, n - 3, "surrogatepass");
  if (n >= 4) {
    if (!b[0]) {
      bo = 1;
      return b[1] ? PyUnicode_DecodeUTF16(s, n, "surrogatepass", &bo)
                  : PyUnicode_DecodeUTF32(s, n, "surrogatepass", &bo);
    }
    if (!b[1]) {
      bo = -1;
      return b[2] || b[3] ? PyUnicode_DecodeUTF16(s, n, "surrogatepass", &bo)
                          : PyUnicode_DecodeUTF32(s, n, "surrogatepass", &bo);
    }
  } else if (n == 2) {
    if (!b[0]) {
      bo = 1;
      return PyUnicode_DecodeUTF16(s, n, "surrogatepass", &bo);
    }
    if (!b[1]) {
      bo = -1;
      return PyUnicode_DecodeUTF16(s, n, "surrogatepass", &bo);
    }
  }
  return PyUnicode_DecodeUTF8(s, n, "surrogatepass");
}

PyObject *json_c_loads(PyObject *self, PyObject *args, PyObject *kw) {
  (void)self;
  static char *kwlist[] = {"s", NULL};
  PyObject *s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O:loads", kwlist, &s))
    return NULL;
  if (PyUnicode_Check(s)) {
    /* only a str: bytes lose a UTF-8 BOM, and a second one is a value */
    return starts_with_bom(s) ? NULL : loads_str(s, false);
  }
  PyObject *str;
  if (PyBytes_Check(s))
    str = decode_bytes((const unsigned char *)PyBytes_AS_STRING(s),
                       PyBytes_GET_SIZE(s));
  else if (PyByteArray_Check(s))
    str = decode_bytes((const unsigned char *)PyByteArray_AS_STRING(s),
                       PyByteArray_GET_SIZE(s));
  else {
    PyObject *name = PyType_GetName(Py_TYPE(s));
    if (name) {
      PyErr_Format(PyExc_TypeError,
                   "the JSON object must be str, bytes or bytearray, not %U",
                   name);
      Py_DECREF(name);
    }
    return NULL;
  }
  if (!str)
    return NULL;
  PyObject *r = loads_str(str, false);
  Py_DECREF(str);
  return r;
}

/* ---- encoding ----------------------------------------------------------- */

struct encoder {
  char *out; /* UTF-8 (surrogatepass): ASCII but for a str indent */
  size_t len, cap;
  const char *indent; /* NULL: no indent */
  size_t indent_len;
  int sort_keys;
  int depth;
  PyObject *path[JSON_C_MAX_DEPTH]; /* containers being encoded */
};

static int reserve(struct encoder *e, size_t n) {
  if (e->cap - e->len >= n)
    return 0;
  size_t cap = e->cap ? e->cap : 256;
  while (cap - e->len < n) {
    if (cap > PY_SSIZE_T_MAX / 2) {
      PyErr_NoMemory();
      return -1;
    }
    cap *= 2;
  }
  char *out = PyMem_Realloc(e->out, cap);
  if (!out) {
    PyErr_NoMemory();
    return -1;
  }
  e->out = out;
  e->cap = cap;
  return 0;
}

static int put(struct encoder *e, const char *s, size_t n) {
  if (n == 0)
    return 0;
  if (reserve(e, n) < 0)
    return -1;
  memcpy(e->out + e->len, s, n);
  e->len += n;
  return 0;
}

#define PUTS(e, lit) put(e, lit, sizeof lit - 1)

/* "\n" and the indent level times. */
static int newline(struct encoder *e, int level) {
  if ((size_t)level >
      (PY_SSIZE_T_MAX - 1) / (e->indent_len ? e->indent_len : 1)) {
    PyErr_NoMemory();
    return -1;
  }
  size_t n = 1 + (size_t)level * e->indent_len;
  if (reserve(e, n) < 0)
    return -1;
  e->out[e->len++] = '\n';
  for (int i = 0; i < level; i++) {
    memcpy(e->out + e->len, e->indent, e->indent_len);
    e->len += e->indent_len;
  }
  return 0;
}

static const char hexdigits[] = "0123456789abcdef";

static char *put_u(char *o, Py_UCS4 c) {
  *o++ = '\\';
  *o++ = 'u';
  *o++ = hexdigits[(c >> 12) & 0xf];
  *o++ = hexdigits[(c >> 8) & 0xf];
  *o++ = hexdigits[(c >> 4) & 0xf];
  *o++ = hexdigits[c & 0xf];
  return o;
}

#define S_CHAR(c) ((c) >= ' ' && (c) <= '~' && (c) != '\\' && (c) != '"')

/* json.encoder.encode_basestring_ascii. */
static int encode_str(struct encoder *e, PyObject *s) {
  int kind = PyUnicode_KIND(s);
  const void *data = PyUnicode_DATA(s);
  Py_ssize_t len = PyUnicode_GET_LENGTH(s);
  size_t n = 2;
  for (Py_ssize_t i = 0; i < len; i++) {
    Py_UCS4 c = PyUnicode_READ(kind, data, i);
    size_t d;
    if (S_CHAR(c))
      d = 1;
    else if (c == '\\' || c == '"' || c == '\b' || c == '\f' || c == '\n' ||
             c == '\r' || c == '\t')
      d = 2;
    else if (c >= 0x10000)
      d = 12;
    else
      d = 6;
    if (n > PY_SSIZE_T_MAX - d) {
      PyErr_NoMemory();
      return -1;
    }
    n += d;
  }
  if (reserve(e, n) < 0)
    return -1;
  char *o = e->out + e->len;
  *o++ = '"';
  for (Py_ssize_t i = 0; i < len; i++) {
    Py_UCS4 c = PyUnicode_READ(kind, data, i);
    if (S_CHAR(c)) {
      *o++ = (char)c;
      continue;
    }
    switch (c) {
    case '\\':
    case '"':
      *o++ = '\\';
      *o++ = (char)c;
      break;
    case '\b':
      *o++ = '\\';
      *o++ = 'b';
      break;
    case '\f':
      *o++ = '\\';
      *o++ = 'f';
      break;
    case '\n':
      *o++ = '\\';
      *o++ = 'n';
      break;
    case '\r':
      *o++ = '\\';
      *o++ = 'r';
      break;
    case '\t':
      *o++ = '\\';
      *o++ = 't';
      break;
    default:
      if (c >= 0x10000) {
        o = put_u(o, Py_UNICODE_HIGH_SURROGATE(c));
        c = Py_UNICODE_LOW_SURROGATE(c);
      }
      o = put_u(o, c);
    }
  }
  *o++ = '"';
  e->len = (size_t)(o - e->out);
  return 0;
}

/* float.__repr__, or NaN/Infinity/-Infinity. */
static int encode_float(struct encoder *e, PyObject *o, bool quoted) {
  double d = PyFloat_AS_DOUBLE(o);
  const char *q = quoted ? "\"" : "";
  size_t qn = quoted ? 1 : 0;
  if (!Py_IS_FINITE(d)) {
    const char *s = Py_IS_NAN(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity";
    return put(e, q, qn) < 0 || put(e, s, strlen(s)) < 0 || put(e, q, qn) < 0
               ? -1
               : 0;
  }
  char *s = PyOS_double_to_string(d, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
  if (!s)
    return -1;
  int rc = put(e, q, qn) < 0 || put(e, s, strlen(s)) < 0 || put(e, q, qn) < 0
               ? -1
               : 0;
  PyMem_Free(s);
  return rc;
}

/* int.__repr__ (int_max_str_digits applies). */
static int encode_int(struct encoder *e, PyObject *o, bool quoted) {
  int overflow;
  long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (v == -1 && PyErr_Occurred())
    return -1;
  if (!overflow) {
    char b[32];
    int n = snprintf(b, sizeof b, quoted ? "\"%lld\"" : "%lld", v);
    return put(e, b, (size_t)n);
  }
  PyObject *r = PyLong_Type.tp_repr(o);
  if (!r)
    return -1;
  Py_ssize_t n;
  const char *s = PyUnicode_AsUTF8AndSize(r, &n);
  int rc = !s || (quoted && PUTS(e, "\"") < 0) || put(e, s, (size_t)n) < 0 ||
                   (quoted && PUTS(e, "\"") < 0)
               ? -1
               : 0;
  Py_DECREF(r);
  return rc;
}

static int not_serializable(PyObject *o) {
  PyObject *name = PyType_GetName(Py_TYPE(o));
  if (name) {
    PyErr_Format(PyExc_TypeError, "Object of type %U is not JSON serializable",
                 name);
    Py_DECREF(name);
  }
  return -1;
}

/* A container enters the path; the nesting limit is where a cycle shows:
 * every cycle repeats a container on the path before it. */
static int enter(struct encoder *e, PyObject *o) {
  if (e->depth >= JSON_C_MAX_DEPTH) {
    for (int i = 0; i < e->depth; i++)
      if (e->path[i] == o) {
        PyErr_SetString(PyExc_ValueError, "Circular reference detected");
        return -1;
      }
    PyErr_Format(PyExc_ValueError, "Nesting deeper than %d levels",
                 JSON_C_MAX_DEPTH);
    return -1;
  }
  e->path[e->depth++] = o;
  return 0;
}

static int encode_obj(struct encoder *e, PyObject *o);

static int encode_list(struct encoder *e, PyObject *seq) {
  if (PySequence_Fast_GET_SIZE(seq) == 0)
    return PUTS(e, "[]");
  if (enter(e, seq) < 0 || PUTS(e, "[") < 0)
    return -1;
  int level = e->depth;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
    if (i > 0 && (e->indent ? PUTS(e, ",") : PUTS(e, ", ")) < 0)
      return -1;
    if (e->indent && newline(e, level) < 0)
      return -1;
    PyObject *v = PySequence_Fast_GET_ITEM(seq, i);
    Py_INCREF(v);
    int rc = encode_obj(e, v);
    Py_DECREF(v);
    if (rc < 0)
      return -1;
  }
  if (e->indent && newline(e, level - 1) < 0)
    return -1;
  e->depth--;
  return PUTS(e, "]");
}

/* A key as Python's encoder converts it. */
static int encode_key(struct encoder *e, PyObject *k) {
  if (PyUnicode_Check(k))
    return encode_str(e, k);
  if (PyFloat_Check(k))
    return encode_float(e, k, true);
  if (k == Py_True)
    return PUTS(e, "\"true\"");
  if (k == Py_False)
    return PUTS(e, "\"false\"");
  if (k == Py_None)
    return PUTS(e, "\"null\"");
  if (PyLong_Check(k))
    return encode_int(e, k, true);
  PyObject *name = PyType_GetName(Py_TYPE(k));
  if (name) {
    PyErr_Format(PyExc_TypeError,
                 "keys must be str, int, float, bool or None, not %U", name);
    Py_DECREF(name);
  }
  return -1;
}

static int encode_item(struct encoder *e, PyObject *k, PyObject *v, int level,
                       bool first) {
  if (!first && (e->indent ? PUTS(e, ",") : PUTS(e, ", ")) < 0)
    return -1;
  if (e->indent && newline(e, level) < 0)
    return -1;
  if (encode_key(e, k) < 0 || PUTS(e, ": ") < 0)
    return -1;
  return encode_obj(e, v);
}

static int encode_dict(struct encoder *e, PyObject *d) {
  if (PyDict_GET_SIZE(d) == 0)
    return PUTS(e, "{}");
  if (enter(e, d) < 0 || PUTS(e, "{") < 0)
    return -1;
  int level = e->depth;
  if (e->sort_keys) {
    PyObject *items = PyDict_Items(d);
    if (!items || PyList_Sort(items) < 0) {
      Py_XDECREF(items);
      return -1;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
      PyObject *kv = PyList_GET_ITEM(items, i);
      if (encode_item(e, PyTuple_GET_ITEM(kv, 0), PyTuple_GET_ITEM(kv, 1),
                      level, i == 0) < 0) {
        Py_DECREF(items);
        return -1;
      }
    }
    Py_DECREF(items);
  } else {
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    bool first = true;
    while (PyDict_Next(d, &pos, &k, &v)) {
      Py_INCREF(k);
      Py_INCREF(v);
      int rc = encode_item(e, k, v, level, first);
      Py_DECREF(k);
      Py_DECREF(v);
      if (rc < 0)
        return -1;
      first = false;
    }
  }
  if (e->indent && newline(e, level - 1) < 0)
    return -1;
  e->depth--;
  return PUTS(e, "}");
}

static int encode_obj(struct encoder *e, PyObject *o) {
  if (o == Py_None)
    return PUTS(e, "null");
  if (o == Py_True)
    return PUTS(e, "true");
  if (o == Py_False)
    return PUTS(e, "false");
  if (PyUnicode_Check(o))
    return encode_str(e, o);
  if (PyLong_Check(o))
    return encode_int(e, o, false);
  if (PyFloat_Check(o))
    return encode_float(e, o, false);
  if (PyList_Check(o) || PyTuple_Check(o))
    return encode_list(e, o);
  if (PyDict_Check(o))
    return encode_dict(e, o);
  return not_serializable(o);
}

PyObject *json_c_dumps(PyObject *self, PyObject *args, PyObject *kw) {
  (void)self;
  static char *kwlist[] = {"obj", "indent", "sort_keys", NULL};
  PyObject *obj, *indent = Py_None, *sort_keys = Py_False;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$OO:dumps", kwlist, &obj,
                                   &indent, &sort_keys))
    return NULL;
  struct encoder *e = PyMem_Calloc(1, sizeof *e);
  if (!e)
    return PyErr_NoMemory();
  PyObject *indent_bytes = NULL, *r = NULL;
  e->sort_keys = PyObject_IsTrue(sort_keys);
  if (e->sort_keys < 0)
    goto out;
  if (indent != Py_None) {
    /* JSONEncoder: a non-str indent is ' ' * indent */
    if (PyUnicode_Check(indent)) {
      indent_bytes =
          PyUnicode_AsEncodedString(indent, "utf-8", "surrogatepass");
    } else if (PyLong_Check(indent)) {
      Py_ssize_t n = PyNumber_AsSsize_t(indent, PyExc_OverflowError);
      if (n == -1 && PyErr_Occurred())
        goto out;
      indent_bytes = PyBytes_FromStringAndSize(NULL, n > 0 ? n : 0);
      if (indent_bytes)
        memset(PyBytes_AS_STRING(indent_bytes), ' ', n > 0 ? (size_t)n : 0);
    } else {
      PyErr_Format(PyExc_TypeError,
                   "can't multiply sequence by non-int of type '%s'",
                   Py_TYPE(indent)->tp_name);
      goto out;
    }
    if (!indent_bytes)
      goto out;
    e->indent = PyBytes_AS_STRING(indent_bytes);
    e->indent_len = (size_t)PyBytes_GET_SIZE(indent_bytes);
  }
  if (encode_obj(e, obj) == 0)
    r = PyUnicode_DecodeUTF8(e->out, (Py_ssize_t)e->len, "surrogatepass");
out:
  Py_XDECREF(indent_bytes);
  PyMem_Free(e->out);
  PyMem_Free(e);
  return r;
}
