#include "embed.h"

#include <Python.h>
#include <stdio.h>
#include <wchar.h>

static int status_error(PyStatus st, const char *what, struct coil_error *err) {
  return coil_error_set(err, 0, "python: %s: %s%s%s", what,
                        st.func ? st.func : "", st.func ? ": " : "",
                        st.err_msg ? st.err_msg : "failed");
}

/* Every field below is set for a reason given in docs/gate.md, Embedding: no
 * environment, no site, no bytecode writes, no signal handlers, no $PATH
 * walk, a fixed module path, and the int-to-str digit limit. */
int embed_init(const char *prefix, struct coil_error *err) {
  PyPreConfig pre;
  PyPreConfig_InitIsolatedConfig(&pre);
  pre.utf8_mode = 1;
  PyStatus st = Py_PreInitialize(&pre);
  if (PyStatus_Exception(st))
    return status_error(st, "pre-initialise", err);

  wchar_t home[256], stdlib[300], dynload[320];
  swprintf(home, 256, L"%s", prefix);
  swprintf(stdlib, 300, L"%s/lib/python3.11", prefix);
  swprintf(dynload, 320, L"%s/lib/python3.11/lib-dynload", prefix);

  PyConfig c;
  PyConfig_InitIsolatedConfig(&c);
  c.site_import = 0;
  c.write_bytecode = 0;
  c.install_signal_handlers = 0;
  c.quiet = 1;
  c.pathconfig_warnings = 0;
  c.use_frozen_modules = 1;
  c._isolated_interpreter = 1;
  c.module_search_paths_set = 1;
  if (PyStatus_Exception(
          st = PyConfig_SetString(&c, &c.program_name, L"coil-init")) ||
      PyStatus_Exception(st = PyConfig_SetString(&c, &c.home, home)) ||
      PyStatus_Exception(
          st = PyConfig_SetString(&c, &c.executable, L"/usr/bin/coil-init")) ||
      PyStatus_Exception(
          st = PyConfig_SetString(&c, &c.check_hash_pycs_mode, L"never")) ||
      PyStatus_Exception(st = PyWideStringList_Append(
                             &c.xoptions, L"int_max_str_digits=4300")) ||
      /* Showing a warning imports warnings/linecache lazily, after lockdown. */
      PyStatus_Exception(
          st = PyWideStringList_Append(&c.warnoptions, L"ignore")) ||
      PyStatus_Exception(
          st = PyWideStringList_Append(&c.module_search_paths, stdlib)) ||
      PyStatus_Exception(
          st = PyWideStringList_Append(&c.module_search_paths, dynload))) {
    PyConfig_Clear(&c);
    return status_error(st, "configure", err);
  }
  st = Py_InitializeFromConfig(&c);
  PyConfig_Clear(&c);
  if (PyStatus_Exception(st))
    return status_error(st, "initialise", err);
  return 0;
}

int embed_py_error(struct coil_error *err, const char *what) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  PyObject *s = value ? PyObject_Str(value) : NULL;
  const char *msg = s ? PyUnicode_AsUTF8(s) : NULL;
  coil_error_set(err, 0, "%s: %s: %s", what,
                 type ? ((PyTypeObject *)type)->tp_name : "error",
                 msg ? msg : "(no message)");
  Py_XDECREF(s);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  PyErr_Clear();
  return -1;
}
