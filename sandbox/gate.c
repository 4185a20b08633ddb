/* The static gate: C owns the bytes (size cap, strict UTF-8, NUL), the
 * embedded Python policy (gate_policy.py) owns parsing, the AST allowlist
 * and compiling the checked tree. See docs/gate.md, AST allowlist. */
#include "gate.h"
#include "embed.h"

#include <errno.h>
#include <marshal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Same order as the policy's HELPER_MEMBERS; checked when it loads. */
const char *const gate_helper_names[] = {
    "json",   "re",       "base64",    "hashlib",  "hmac",         "math",
    "struct", "binascii", "ipaddress", "datetime", "urllib.parse",
};
const size_t gate_n_helper_names =
    sizeof gate_helper_names / sizeof gate_helper_names[0];

/* sandbox/gate_policy.py as bytecode (build/gen/gate_policy.inc, made by
 * the Makefile): the policy compiled and marshalled at build time. */
static const unsigned char policy_src[] = {
#include "gate_policy.inc"
};

/* The policy's check(). Compiled and run once per process into a private
 * dict (never a module in sys.modules), then kept here: the interpreter is
 * never finalised and re-initialised by coil. */
static PyObject *policy_check;

static inline void py_decrefp(PyObject **p) { Py_XDECREF(*p); }
#define cleanup_py __attribute__((cleanup(py_decrefp)))

void gate_limits_default(struct gate_limits *l) {
  l->max_source = 64 * 1024;
  l->max_nodes = 20000;
  l->max_depth = 100;
}

void gate_result_free(struct gate_result *r) {
  free(r->v);
  for (size_t i = 0; i < r->n_helpers; i++)
    free(r->helpers[i]);
  free(r->helpers);
  Py_XDECREF(r->code);
  memset(r, 0, sizeof *r);
}

/* Copies at most cap-1 bytes of UTF-8 text, never cutting a character. */
static void copy_utf8(char *dst, size_t cap, const char *src) {
  size_t n = strlen(src);
  if (n >= cap) {
    n = cap - 1;
    while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
      n--;
  }
  memcpy(dst, src, n);
  dst[n] = '\0';
}

static int add_violation(struct gate_result *out, int line, int col,
                         struct coil_error *err, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int add_violation(struct gate_result *out, int line, int col,
                         struct coil_error *err, const char *fmt, ...) {
  struct gate_violation *v = realloc(out->v, (out->n + 1) * sizeof *v);
  if (!v)
    return coil_error_sys(err, ENOMEM, "gate: violation list");
  out->v = v;
  v += out->n++;
  v->line = line;
  v->col = col;
  char msg[sizeof v->msg * 2];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  copy_utf8(v->msg, sizeof v->msg, msg);
  return 0;
}

/* Line and 1-based character column of byte off, with the tokenizer's
 * notion of a line end (\n, \r\n, or a lone \r). */
static void byte_pos(const char *s, size_t len, size_t off, int *line,
                     int *col) {
  int l = 1, c = 1;
  for (size_t i = 0; i < off && i < len; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '\r' && i + 1 < len && s[i + 1] == '\n')
      continue;
    if (ch == '\n' || ch == '\r') {
      l++;
      c = 1;
    } else if ((ch & 0xC0) != 0x80) {
      c++;
    }
  }
  *line = l;
  *col = c;
}

/* Strict UTF-8 (no surrogates, no overlong forms) into *str, or a
 * violation at the first bad byte. */
static int decode_source(const char *src, size_t len, PyObject **str,
                         struct gate_result *out, struct coil_error *err) {
  *str = PyUnicode_DecodeUTF8(src, (Py_ssize_t)len, "strict");
  if (*str)
    return 0;
  if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
    return embed_py_error(err, "gate: decoding the source");
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  Py_ssize_t start = 0;
  int rc = value ? PyUnicodeDecodeError_GetStart(value, &start) : -1;
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  if (rc < 0)
    return embed_py_error(err, "gate: decoding the source");
  int line, col;
  byte_pos(src, len, (size_t)start, &line, &col);
  return add_violation(
      out, line, col, err,
      "the source is not valid UTF-8 (byte 0x%02x at offset %zd)",
      (unsigned char)src[start], start);
}

/* Every helper, for check_ast off: the code is not read, so any helper
 * may be imported. */
static int all_helpers(struct gate_result *out, struct coil_error *err) {
  out->helpers = calloc(gate_n_helper_names, sizeof *out->helpers);
  if (!out->helpers)
    return coil_error_sys(err, ENOMEM, "gate: helper list");
  for (; out->n_helpers < gate_n_helper_names; out->n_helpers++) {
    out->helpers[out->n_helpers] = strdup(gate_helper_names[out->n_helpers]);
    if (!out->helpers[out->n_helpers])
      return coil_error_sys(err, ENOMEM, "gate: helper list");
  }
  return 0;
}

/* The policy's HELPER_MEMBERS must name exactly gate_helper_names: the
 * runtime builds its namespaces from the C list. */
static int policy_helpers_match(PyObject *ns, struct coil_error *err) {
  PyObject *members = PyDict_GetItemString(ns, "HELPER_MEMBERS");
  bool same = members && PyDict_Check(members) &&
              PyDict_Size(members) == (Py_ssize_t)gate_n_helper_names;
  for (size_t i = 0; same && i < gate_n_helper_names; i++)
    same = PyDict_GetItemString(members, gate_helper_names[i]) != NULL;
  if (!same)
    return coil_error_set(err, 0,
                          "gate policy: HELPER_MEMBERS does not name exactly "
                          "the helpers of gate_helper_names");
  return 0;
}

static int policy_load(struct coil_error *err) {
  if (policy_check)
    return 0;
  cleanup_py PyObject *code = PyMarshal_ReadObjectFromString(
      (const char *)policy_src, (Py_ssize_t)sizeof policy_src);
  if (!code)
    return embed_py_error(err, "gate policy");
  cleanup_py PyObject *ns = PyDict_New();
  if (!ns || PyDict_SetItemString(ns, "__builtins__", PyEval_GetBuiltins()) < 0)
    return embed_py_error(err, "gate policy");
  cleanup_py PyObject *r = PyEval_EvalCode(code, ns, ns);
  if (!r)
    return embed_py_error(err, "gate policy");
  if (policy_helpers_match(ns, err) < 0)
    return -1;
  PyObject *fn = PyDict_GetItemString(ns, "check");
  if (!fn || !PyCallable_Check(fn))
    return coil_error_set(err, 0, "gate policy: no check() function");
  policy_check = Py_NewRef(fn);
  return 0;
}

static Py_ssize_t ssize_limit(size_t v) {
  return v > (size_t)PY_SSIZE_T_MAX ? PY_SSIZE_T_MAX : (Py_ssize_t)v;
}

/* Copies the policy's (violations, helpers, code, uses_codecs) into out. */
static int take_result(PyObject *r, struct gate_result *out,
                       struct coil_error *err) {
  PyObject *viol, *helpers, *code;
  int codecs;
  if (!PyArg_ParseTuple(r, "O!O!Op;gate policy: check() result", &PyList_Type,
                        &viol, &PyList_Type, &helpers, &code, &codecs))
    return embed_py_error(err, "gate");
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(viol); i++) {
    int line, col;
    const char *msg;
    if (!PyArg_ParseTuple(PyList_GET_ITEM(viol, i),
                          "iis;gate policy: violation", &line, &col, &msg))
      return embed_py_error(err, "gate");
    if (add_violation(out, line, col, err, "%s", msg) < 0)
      return -1;
  }
  Py_ssize_t nh = PyList_GET_SIZE(helpers);
  if (nh > 0 && !(out->helpers = calloc((size_t)nh, sizeof *out->helpers)))
    return coil_error_sys(err, ENOMEM, "gate: helper list");
  for (Py_ssize_t i = 0; i < nh; i++) {
    const char *h = PyUnicode_AsUTF8(PyList_GET_ITEM(helpers, i));
    if (!h)
      return embed_py_error(err, "gate: helper name");
    out->helpers[out->n_helpers] = strdup(h);
    if (!out->helpers[out->n_helpers])
      return coil_error_sys(err, ENOMEM, "gate: helper list");
    out->n_helpers++;
  }
  if (code != Py_None) {
    if (!PyCode_Check(code) || out->n)
      return coil_error_set(err, 0, "gate policy: bad code object");
    out->code = Py_NewRef(code);
  }
  out->uses_codecs = codecs;
  return 0;
}

static int run_policy(PyObject *str, const char *filename,
                      const struct gate_limits *lim, bool check_ast,
                      struct gate_result *out, struct coil_error *err) {
  if (policy_load(err) < 0)
    return -1;
  cleanup_py PyObject *fname = PyUnicode_DecodeFSDefault(filename);
  if (!fname)
    return embed_py_error(err, "gate: file name");
  cleanup_py PyObject *r = PyObject_CallFunction(
      policy_check, "OOnnO", str, fname, ssize_limit(lim->max_nodes),
      ssize_limit(lim->max_depth), check_ast ? Py_True : Py_False);
  if (!r)
    return embed_py_error(err, "gate policy");
  if (take_result(r, out, err) < 0)
    return -1;
  return check_ast ? 0 : all_helpers(out, err);
}

static int gate_check_into(const char *src, size_t len, const char *filename,
                           const struct gate_limits *lim, bool check_ast,
                           struct gate_result *out, struct coil_error *err) {
  /* The cap comes first so that nothing scales with an oversized input. */
  if (len > lim->max_source)
    return add_violation(out, 0, 0, err, "the source is larger than %zu bytes",
                         lim->max_source);
  /* Python accepts a BOM in files but not in str input. */
  if (len >= 3 && memcmp(src, "\xEF\xBB\xBF", 3) == 0) {
    src += 3;
    len -= 3;
  }
  cleanup_py PyObject *str = NULL;
  if (decode_source(src, len, &str, out, err) < 0)
    return -1;
  const char *nul = memchr(src, '\0', len);
  if (nul) {
    int line, col;
    byte_pos(src, len, (size_t)(nul - src), &line, &col);
    if (add_violation(out, line, col, err, "the source contains a NUL byte") <
        0)
      return -1;
  }
  if (out->n)
    return 0;
  return run_policy(str, filename, lim, check_ast, out, err);
}

int gate_check(const char *src, size_t len, const char *filename,
               const struct gate_limits *lim, bool check_ast,
               struct gate_result *out, struct coil_error *err) {
  struct gate_limits defaults;
  if (!lim) {
    gate_limits_default(&defaults);
    lim = &defaults;
  }
  memset(out, 0, sizeof *out);
  if (gate_check_into(src, len, filename, lim, check_ast, out, err) < 0) {
    gate_result_free(out);
    return -1;
  }
  return 0;
}
