/* The parent's half of Python mode: the user's code read on the host, the
 * defaults and `coil py` overrides applied, the disabled layers stripped
 * from the config, and the context init will run with. */
#ifndef COIL_PYTHON_SETUP_H
#define COIL_PYTHON_SETUP_H

#include "config.h"
#include "container.h"
#include "error.h"
#include "python_mode.h"

#define PY_DEFAULT_TIMEOUT 5
#define PY_DEFAULT_MAX_REQUEST (1 << 20)
#define PY_DEFAULT_MAX_OUTPUT (1 << 20)
/* Read cap for the code file: above the gate's 64 KiB so the gate, not the
 * reader, reports an oversized source. */
#define PY_CODE_READ_MAX (256 << 10)

struct python_setup {
  struct python_ctx ctx;
  char *code;
  char *code_name;
  char *entry;
  char *prefix;
  char *readable_root;
  bool pivot; /* the mountns layer is on: pivot_root into the rootfs */
};

/* cfg must have sandbox.python. Edits cfg (layers, memory override). */
int python_setup(struct coil_config *cfg, const char *bundle,
                 const char *rootfs, const struct coil_py_override *ov,
                 struct python_setup *out, struct coil_error *err);
void python_setup_free(struct python_setup *s);

#endif
