/* Python sandbox mode: what the container's init does instead of execve. */
#ifndef COIL_PYTHON_MODE_H
#define COIL_PYTHON_MODE_H

#include <stdbool.h>
#include <stddef.h>

#include "caps.h"
#include "config.h"
#include "rlimits.h"

struct python_ctx {
  const struct coil_config *cfg;
  const char *code; /* the user's source, read on the host */
  size_t code_len;
  const char *code_name; /* for messages: "handler.py" */
  const char *entry;     /* NULL: script mode */
  unsigned disabled;     /* sandbox.disable bitmask (layers.h) */
  const struct coil_rlimits *rlimits;
  const char *prefix;        /* "/usr" inside the rootfs */
  const char *readable_root; /* stage-1 Landlock root: "/" after pivot_root */
  int timeout;               /* seconds */
  size_t max_request;
  size_t max_output;
};

/* Runs the whole sequence (python_mode.c) with fd 1 as the protocol channel
 * and fd 0 as the request; ends in _exit. */
void python_mode_main(const struct python_ctx *c) __attribute__((noreturn));

#endif
