/* Python sandbox mode: what the container's init does instead of execve. */
#ifndef COIL_PYTHON_MODE_H
#define COIL_PYTHON_MODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct python_ctx {
  const char *code; /* the user's source, read on the host */
  size_t code_len;
  const char *code_name;     /* for messages: "handler.py" */
  const char *entry;         /* NULL: script mode */
  unsigned disabled;         /* sandbox.disable bitmask (layers.h) */
  const char *prefix;        /* "/usr" inside the rootfs */
  const char *readable_root; /* stage-1 Landlock root: "/" after pivot_root */
  int timeout;               /* seconds */
  int timeout_ms;            /* when set, replaces timeout (coil serve) */
  int cpu_limit;             /* RLIMIT_CPU soft limit in seconds, 0 = none */
  uint64_t memory_bound;     /* RLIMIT_DATA (memory_bound.h), 0 = none */
  size_t max_request;
  size_t max_output;
  /* Called once the answer is complete (fd 1 closed), before the exit of
   * an answered run; NULL: none. Runs after the user's code, so it must
   * trust nothing in the interpreter. */
  void (*after_answer)(void);
};

/* The payload init runs (payload.h) after the shared privilege drop: arg is
 * a struct python_ctx. fd 1 is the protocol channel, fd 0 the request; ends
 * in _exit. */
void python_mode_main(void *arg, int start_conn) __attribute__((noreturn));

#endif
