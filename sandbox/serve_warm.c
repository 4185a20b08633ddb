#include "serve_warm.h"

#include <marshal.h>

#include "embed.h"
#include "guest.h"

/* sandbox/serve_warm.py as marshalled bytecode (build/gen/serve_warm.inc,
 * made by the Makefile like the gate's policy). */
static const unsigned char warm_src[] = {
#include "serve_warm.inc"
};

/* serve_warm.py's namespace, loaded once into a private dict. */
static PyObject *warm_ns;

static PyObject *warm_fn(const char *name, struct coil_error *err) {
  if (!warm_ns) {
    PyObject *code = PyMarshal_ReadObjectFromString(
        (const char *)warm_src, (Py_ssize_t)sizeof warm_src);
    PyObject *ns = code ? PyDict_New() : NULL;
    PyObject *r = NULL;
    if (ns &&
        PyDict_SetItemString(ns, "__builtins__", PyEval_GetBuiltins()) == 0)
      r = PyEval_EvalCode(code, ns, ns);
    if (r)
      warm_ns = Py_NewRef(ns);
    Py_XDECREF(r);
    Py_XDECREF(ns);
    Py_XDECREF(code);
    if (!warm_ns) {
      embed_py_error(err, "serve warm-up");
      return NULL;
    }
  }
  PyObject *fn = PyDict_GetItemString(warm_ns, name);
  if (!fn || !PyCallable_Check(fn))
    coil_error_set(err, 0, "serve warm-up: no %s()", name);
  return fn;
}

static int count_of(PyObject *r, struct coil_error *err) {
  long n = r ? PyLong_AsLong(r) : -1;
  Py_XDECREF(r);
  if (n < 0)
    return embed_py_error(err, "serve warm-up");
  return (int)n;
}

int serve_warm_helpers(const char *const *names, size_t n,
                       struct coil_error *err) {
  PyObject *fn = warm_fn("helpers", err);
  PyObject *map = fn ? guest_helpers_new(names, n, err) : NULL;
  if (!map)
    return -1;
  int failed = count_of(PyObject_CallOneArg(fn, map), err);
  Py_DECREF(map);
  return failed;
}

int serve_warm_regexes(PyObject *src, struct coil_error *err) {
  PyObject *fn = warm_fn("regexes", err);
  return fn ? count_of(PyObject_CallOneArg(fn, src), err) : -1;
}
