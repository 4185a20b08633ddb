/* The parent's half of Python mode: the user's code read on the host, the
 * defaults and `coil py` overrides applied, the disabled layers stripped
 * from the config, and the payload init will run. */
#ifndef COIL_PYTHON_SETUP_H
#define COIL_PYTHON_SETUP_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "error.h"
#include "payload.h"
#include "python_mode.h"

#define PY_DEFAULT_TIMEOUT 5
#define PY_DEFAULT_MAX_REQUEST (1 << 20)
#define PY_DEFAULT_MAX_OUTPUT (1 << 20)
/* Read cap for the code file: above the gate's 64 KiB so the gate, not the
 * reader, reports an oversized source. */
#define PY_CODE_READ_MAX (256 << 10)

/* `coil py`'s changes to a Python bundle's config. */
struct coil_py_override {
  const char *code; /* source (NULL: sandbox.python.code of the bundle) */
  size_t code_len;
  const char *code_name; /* for messages */
  const char *entry;     /* handler entry; NULL: the bundle's */
  bool script;           /* run as a script even if the bundle names an entry */
  int timeout;           /* seconds; 0: the bundle's */
  long long memory;      /* bytes; 0: the bundle's */
};

struct python_setup {
  const struct coil_py_override *ov; /* in: coil py's changes, or NULL */
  bool active;                       /* out: the bundle is a Python bundle */
  struct python_ctx ctx;
  char *code;
  char *code_name;
  char *entry;
  char *prefix;
  char *readable_root;
};

/* A payload_prepare_fn (payload.h); arg is a struct python_setup whose ov
 * is set. For a bundle with sandbox.python it reads the code, applies the
 * overrides and layers to cfg and returns the payload; otherwise it leaves
 * the payload empty (and fails if ov asks for Python mode). */
int python_setup_prepare(void *arg, struct coil_config *cfg, const char *bundle,
                         const char *rootfs, struct coil_payload *p,
                         struct coil_error *err);
void python_setup_free(struct python_setup *s);

#endif
