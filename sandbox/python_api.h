/* What coil calls in coil-python.so, the shared object that holds the
 * sandbox's code needing libpython (the sandbox/ files that include
 * Python.h). The executable does not link libpython: python_load.c maps the
 * object, and with it libpython, only into a run that needs Python, and the
 * object exports this one table. What the object calls in coil (the runtime,
 * logging, errors) it takes from the executable, so every runtime function
 * and its state exist once. */
#ifndef COIL_PYTHON_API_H
#define COIL_PYTHON_API_H

#include <stddef.h>

#include "error.h"
#include "payload.h"

struct serve_template_setup;

struct python_api {
  size_t size;         /* sizeof (struct python_api) in the object's build */
  const char *version; /* COIL_VERSION of the object's build */
  /* The payload of Python mode: python_mode_main (python_mode.h). */
  payload_run_fn mode_main;
  /* The version of the libpython the object runs ("3.11.2 (main, ...)"). */
  const char *(*python_version)(void);
  /* coil check: the gate alone on the file at path ("-": stdin), shown as
   * name; prints each violation as "NAME:LINE:COL: message" on stdout.
   * Returns how many there were, or -1 with err. */
  int (*lint)(const char *path, const char *name, struct coil_error *err);
  /* coil serve's per-tenant template (serve_template.h): its prepare step
   * and what frees the setup prepare filled. */
  payload_prepare_fn serve_prepare;
  void (*serve_setup_free)(struct serve_template_setup *s);
};

/* The object's one exported function, found by this name. */
#define PYTHON_API_SYMBOL "coil_python_api"
const struct python_api *coil_python_api(void);

#endif
