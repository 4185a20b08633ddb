#include "regex_warm.h"

#include <marshal.h>

#include "embed.h"

/* sandbox/regex_warm.py as marshalled bytecode (build/gen/regex_warm.inc,
 * made by the Makefile like the gate's policy). */
static const unsigned char warm_src[] = {
#include "regex_warm.inc"
};

/* regex_warm.py's warm(), loaded once into a private dict. */
static PyObject *warm_fn;

static int warm_load(struct coil_error *err) {
  if (warm_fn)
    return 0;
  PyObject *code = PyMarshal_ReadObjectFromString((const char *)warm_src,
                                                  (Py_ssize_t)sizeof warm_src);
  PyObject *ns = code ? PyDict_New() : NULL;
  PyObject *r = NULL;
  if (ns && PyDict_SetItemString(ns, "__builtins__", PyEval_GetBuiltins()) == 0)
    r = PyEval_EvalCode(code, ns, ns);
  PyObject *fn = r ? PyDict_GetItemString(ns, "warm") : NULL;
  if (fn && PyCallable_Check(fn))
    warm_fn = Py_NewRef(fn);
  Py_XDECREF(r);
  Py_XDECREF(ns);
  Py_XDECREF(code);
  if (!warm_fn)
    return PyErr_Occurred() ? embed_py_error(err, "regex warm-up")
                            : coil_error_set(err, 0, "regex warm-up: no warm()");
  return 0;
}

int regex_warm(PyObject *src, struct coil_error *err) {
  if (warm_load(err) < 0)
    return -1;
  PyObject *r = PyObject_CallOneArg(warm_fn, src);
  long n = r ? PyLong_AsLong(r) : -1;
  Py_XDECREF(r);
  if (n < 0)
    return embed_py_error(err, "regex warm-up");
  return (int)n;
}
