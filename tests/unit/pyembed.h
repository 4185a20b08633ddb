/* Helpers the unit tests with an embedded interpreter share: starting it in
 * the isolated configuration of docs/gate.md (Embedding), and the pending
 * exception as text. Static inline, so each test takes only what it uses. */
#ifndef COIL_PYEMBED_H
#define COIL_PYEMBED_H

#include <Python.h>
#include <stdio.h>
#include <wchar.h>

/* Starts the interpreter isolated, in UTF-8 mode, without site, bytecode
 * writing or signal handlers; with PyConfig.home set to home unless it is
 * NULL. 0, or -1. */
static inline int pyembed_start(const wchar_t *home) {
  PyPreConfig pre;
  PyPreConfig_InitIsolatedConfig(&pre);
  pre.utf8_mode = 1;
  if (PyStatus_Exception(Py_PreInitialize(&pre)))
    return -1;
  PyConfig c;
  PyConfig_InitIsolatedConfig(&c);
  c.site_import = 0;
  c.write_bytecode = 0;
  c.install_signal_handlers = 0;
  PyStatus st = PyStatus_Ok();
  if (home)
    st = PyConfig_SetString(&c, &c.home, home);
  if (!PyStatus_Exception(st))
    st = Py_InitializeFromConfig(&c);
  PyConfig_Clear(&c);
  return PyStatus_Exception(st) ? -1 : 0;
}

/* Takes the pending exception and puts "Type: message" into why (len
 * bytes); the error indicator is clear after. */
static inline void pyembed_exc(char *why, size_t len) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  PyObject *s = value ? PyObject_Str(value) : NULL;
  snprintf(why, len, "%s: %s", type ? ((PyTypeObject *)type)->tp_name : "?",
           s ? PyUnicode_AsUTF8(s) : "?");
  Py_XDECREF(s);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  PyErr_Clear();
}

#endif
