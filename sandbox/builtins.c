/* The builtins user code runs with (docs/gate.md, Builtins): a fresh dict
 * holding exactly the allow list, never a copy of the builtins module (its
 * __loader__ is BuiltinImporter; without __build_class__ a class statement
 * fails even if the AST layer is bypassed). Builtin functions are wrapped in
 * the attribute-less proxy because len.__self__ is the builtins module;
 * types and exceptions cannot be wrapped and are limited by the AST layer.
 * Also here: print() into a bounded capture buffer (stdout carries the
 * response) and the __import__ shim (docs/gate.md, Import shim). */
#include "embed.h"
#include "guest.h"

#include <stdlib.h>
#include <string.h>

enum expose {
  AS_PROXY, /* a builtin function: wrapped */
  AS_IS,    /* a type or an exception class */
};

static const struct {
  const char *name;
  enum expose how;
} allowed[] = {
    {"abs", AS_PROXY},
    {"all", AS_PROXY},
    {"any", AS_PROXY},
    {"ascii", AS_PROXY},
    {"bin", AS_PROXY},
    {"callable", AS_PROXY},
    {"chr", AS_PROXY},
    {"divmod", AS_PROXY},
    {"hash", AS_PROXY},
    {"hex", AS_PROXY},
    {"isinstance", AS_PROXY},
    {"issubclass", AS_PROXY},
    {"iter", AS_PROXY},
    {"len", AS_PROXY},
    {"max", AS_PROXY},
    {"min", AS_PROXY},
    {"next", AS_PROXY},
    {"oct", AS_PROXY},
    {"ord", AS_PROXY},
    {"pow", AS_PROXY},
    {"repr", AS_PROXY},
    {"round", AS_PROXY},
    {"sorted", AS_PROXY},
    {"sum", AS_PROXY},
    {"bool", AS_IS},
    {"bytearray", AS_IS},
    {"bytes", AS_IS},
    {"complex", AS_IS},
    {"dict", AS_IS},
    {"enumerate", AS_IS},
    {"filter", AS_IS},
    {"float", AS_IS},
    {"frozenset", AS_IS},
    {"int", AS_IS},
    {"list", AS_IS},
    {"map", AS_IS},
    {"range", AS_IS},
    {"reversed", AS_IS},
    {"set", AS_IS},
    {"slice", AS_IS},
    {"str", AS_IS},
    {"tuple", AS_IS},
    {"zip", AS_IS},
    {"Exception", AS_IS},
    {"ArithmeticError", AS_IS},
    {"AssertionError", AS_IS},
    {"AttributeError", AS_IS},
    {"IndexError", AS_IS},
    {"KeyError", AS_IS},
    {"LookupError", AS_IS},
    {"NameError", AS_IS},
    {"NotImplementedError", AS_IS},
    {"OverflowError", AS_IS},
    {"RuntimeError", AS_IS},
    {"StopIteration", AS_IS},
    {"TypeError", AS_IS},
    {"UnicodeDecodeError", AS_IS},
    {"UnicodeEncodeError", AS_IS},
    {"UnicodeError", AS_IS},
    {"ValueError", AS_IS},
    {"ZeroDivisionError", AS_IS},
};

/* ---- print() capture ---------------------------------------------------- */

/* Default cap: the response envelope's stdout field (1 MiB). */
static struct {
  char *buf;
  size_t len, size; /* size: allocated bytes, room for the NUL */
  size_t cap;
  bool overflowed;
  void (*on_overflow)(const void *arg);
  const void *arg;
} out = {.cap = 1 << 20};

void guest_stdout_set_cap(size_t cap, void (*on_overflow)(const void *arg),
                          const void *arg) {
  out.cap = cap;
  out.len = 0;
  out.overflowed = false;
  out.on_overflow = on_overflow;
  out.arg = arg;
  if (out.buf)
    out.buf[0] = '\0';
}

const char *guest_stdout(size_t *len, bool *overflowed) {
  *len = out.len;
  *overflowed = out.overflowed;
  return out.buf ? out.buf : "";
}

/* Appends s; over the cap, keeps what fits, cut back to a UTF-8 boundary so
 * the captured text stays valid, and stops the print: dropping the rest
 * and carrying on would let `while True: print(s)` spin until the CPU limit
 * instead of ending as OutputLimit. */
static int out_append(const char *s, size_t n) {
  bool over = out.overflowed || n > out.cap - out.len;
  if (over && !out.overflowed) {
    n = out.cap - out.len;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
      n--;
  } else if (over) {
    n = 0;
  }
  if (out.len + n + 1 > out.size) {
    size_t size = out.size ? out.size : 256;
    while (size < out.len + n + 1)
      size *= 2;
    char *p = realloc(out.buf, size);
    if (!p) {
      PyErr_NoMemory();
      return -1;
    }
    out.buf = p;
    out.size = size;
  }
  memcpy(out.buf + out.len, s, n);
  out.len += n;
  out.buf[out.len] = '\0';
  if (!over)
    return 0;
  if (!out.overflowed) {
    out.overflowed = true;
    if (out.on_overflow)
      out.on_overflow(out.arg);
  }
  PyErr_Format(PyExc_RuntimeError, "print output over the %zu-byte output cap",
               out.cap);
  return -1;
}

/* Lone surrogates are escaped rather than fatal, so the capture is always
 * valid UTF-8 for the JSON envelope. */
static int out_append_str(PyObject *s) {
  PyObject *b = PyUnicode_AsEncodedString(s, "utf-8", "backslashreplace");
  if (!b)
    return -1;
  int rc = out_append(PyBytes_AS_STRING(b), (size_t)PyBytes_GET_SIZE(b));
  Py_DECREF(b);
  return rc;
}

static int text_arg(PyObject **v, const char *dflt, const char *what) {
  if (*v == NULL || *v == Py_None) {
    *v = PyUnicode_FromString(dflt);
    return *v ? 0 : -1;
  }
  if (!PyUnicode_Check(*v)) {
    PyErr_Format(PyExc_TypeError, "%s must be None or a string, not %s", what,
                 Py_TYPE(*v)->tp_name);
    return -1;
  }
  Py_INCREF(*v);
  return 0;
}

/* print(*objects, sep=' ', end='\n', flush=False); no file=. */
static PyObject *guest_print(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"sep", "end", "flush", NULL};
  (void)self;
  PyObject *sep = NULL, *end = NULL, *flush = NULL;
  PyObject *none = PyTuple_New(0);
  if (!none)
    return NULL;
  int parsed = PyArg_ParseTupleAndKeywords(none, kw, "|OOO:print", kwlist, &sep,
                                           &end, &flush);
  Py_DECREF(none);
  if (!parsed || text_arg(&sep, " ", "sep") < 0)
    return NULL;
  if (text_arg(&end, "\n", "end") < 0) {
    Py_DECREF(sep);
    return NULL;
  }
  int rc = 0;
  for (Py_ssize_t i = 0; rc == 0 && i < PyTuple_GET_SIZE(args); i++) {
    PyObject *s = PyObject_Str(PyTuple_GET_ITEM(args, i));
    rc = (s && (i == 0 || out_append_str(sep) == 0)) ? out_append_str(s) : -1;
    Py_XDECREF(s);
  }
  if (rc == 0)
    rc = out_append_str(end);
  Py_DECREF(sep);
  Py_DECREF(end);
  if (rc < 0)
    return NULL;
  Py_RETURN_NONE;
}

/* ---- the __import__ shim ------------------------------------------------ */

/* self is (helper map, fallback): fallback is the real __import__ when the
 * builtins layer is off, None otherwise. C code (PyImport_Import, e.g.
 * _datetime's strftime importing time) calls __import__ only for its side
 * effect and then reads sys.modules itself, so None is a sufficient answer
 * for a loaded module and never hands the module out. */
static PyObject *guest_import(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"name",     "globals", "locals",
                           "fromlist", "level",   NULL};
  PyObject *name, *globals = NULL, *locals = NULL, *fromlist = NULL;
  int level = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "U|OOOi:__import__", kwlist, &name,
                                   &globals, &locals, &fromlist, &level))
    return NULL;
  PyObject *map = PyTuple_GET_ITEM(self, 0);
  PyObject *fallback = PyTuple_GET_ITEM(self, 1);
  if (level == 0) {
    PyObject *ns = PyDict_GetItemWithError(map, name);
    if (ns) {
      /* `import urllib.parse` binds the top-level name, like real import. */
      bool top =
          !fromlist || fromlist == Py_None || PyObject_Length(fromlist) == 0;
      Py_ssize_t dot =
          PyUnicode_FindChar(name, '.', 0, PyUnicode_GET_LENGTH(name), 1);
      if (top && dot > 0) {
        PyObject *head = PyUnicode_Substring(name, 0, dot);
        ns = head ? PyDict_GetItemWithError(map, head) : NULL;
        Py_XDECREF(head);
        if (!ns) {
          if (!PyErr_Occurred())
            PyErr_SetString(PyExc_SystemError, "coil: helper map incomplete");
          return NULL;
        }
      }
      Py_INCREF(ns);
      return ns;
    }
    if (PyErr_Occurred())
      return NULL;
  }
  if (fallback != Py_None)
    return PyObject_Call(fallback, args, kw);
  int loaded = PyDict_Contains(PyImport_GetModuleDict(), name);
  if (loaded < 0)
    return NULL;
  if (loaded)
    Py_RETURN_NONE;
  PyErr_Format(PyExc_ImportError, "module '%U' is not available", name);
  return NULL;
}

static PyMethodDef print_def = {"print",
                                (PyCFunction)(void (*)(void))guest_print,
                                METH_VARARGS | METH_KEYWORDS, NULL};
static PyMethodDef import_def = {"__import__",
                                 (PyCFunction)(void (*)(void))guest_import,
                                 METH_VARARGS | METH_KEYWORDS, NULL};

/* ---- the builtins dict and the globals ---------------------------------- */

static int set_proxied(PyObject *dict, PyMethodDef *def, PyObject *self,
                       const char *name) {
  PyObject *fn = PyCFunction_NewEx(def, self, NULL);
  PyObject *p = fn ? guest_proxy_new(fn, name, NULL) : NULL;
  Py_XDECREF(fn);
  int rc = p ? PyDict_SetItemString(dict, def->ml_name, p) : -1;
  Py_XDECREF(p);
  return rc;
}

static PyObject *restricted_dict(PyObject *real) {
  PyObject *d = PyDict_New();
  if (!d)
    return NULL;
  for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) {
    PyObject *v = PyDict_GetItemString(real, allowed[i].name);
    if (!v) {
      PyErr_Format(PyExc_LookupError, "builtin '%s' is missing",
                   allowed[i].name);
      goto fail;
    }
    PyObject *p = allowed[i].how == AS_PROXY
                      ? guest_proxy_new(v, allowed[i].name, NULL)
                      : (Py_INCREF(v), v);
    int rc = p ? PyDict_SetItemString(d, allowed[i].name, p) : -1;
    Py_XDECREF(p);
    if (rc < 0)
      goto fail;
  }
  return d;
fail:
  Py_DECREF(d);
  return NULL;
}

/* The builtins dict: the allow list, or (layer off) a copy of the real
 * module's dict; either way print captures and imports of helper names
 * give namespaces, never modules. */
static PyObject *builtins_new(PyObject *map, bool restricted) {
  /* The module's dict, not PyEval_GetBuiltins(): under a running frame
   * that would be the frame's (possibly restricted) builtins. */
  PyObject *mod = PyImport_AddModule("builtins");
  PyObject *real = mod ? PyModule_GetDict(mod) : NULL;
  if (!real)
    return NULL;
  PyObject *d = restricted ? restricted_dict(real) : PyDict_Copy(real);
  if (!d)
    return NULL;
  PyObject *fallback =
      restricted ? Py_None : PyDict_GetItemString(real, "__import__");
  PyObject *shim_self = fallback ? PyTuple_Pack(2, map, fallback) : NULL;
  int rc =
      shim_self ? set_proxied(d, &import_def, shim_self, "__import__") : -1;
  Py_XDECREF(shim_self);
  if (rc < 0 || set_proxied(d, &print_def, NULL, "print") < 0) {
    Py_DECREF(d);
    return NULL;
  }
  return d;
}

int guest_globals(const char *const *helpers, size_t n, bool restricted,
                  PyObject **globals, struct coil_error *err) {
  *globals = NULL;
  PyObject *map = guest_helpers_new(helpers, n, err);
  if (!map)
    return -1;
  PyObject *b = builtins_new(map, restricted);
  Py_DECREF(map);
  if (!b)
    return embed_py_error(err, "guest builtins");
  PyObject *main_name = PyUnicode_FromString("__main__");
  PyObject *g = main_name ? PyDict_New() : NULL;
  int rc = g ? PyDict_SetItemString(g, "__builtins__", b) : -1;
  if (rc == 0)
    rc = PyDict_SetItemString(g, "__name__", main_name);
  Py_DECREF(b);
  Py_XDECREF(main_name);
  if (rc < 0) {
    Py_XDECREF(g);
    return embed_py_error(err, "guest globals");
  }
  *globals = g;
  return 0;
}
