/* coil-python.so's table (python_api.h): the only symbol it exports. */
#include <Python.h>

#include "lint.h"
#include "python_api.h"
#include "python_mode.h"
#include "serve_template.h"

static const char *python_version(void) { return Py_GetVersion(); }

static const struct python_api api = {
    .size = sizeof api,
    .version = COIL_VERSION,
    .mode_main = python_mode_main,
    .python_version = python_version,
    .lint = lint_file,
    .serve_prepare = serve_template_prepare,
    .serve_setup_free = serve_template_setup_free,
};

__attribute__((visibility("default"))) const struct python_api *
coil_python_api(void) {
  return &api;
}
