/* How a Python-mode run ended, seen from the parent (`coil run`/`coil py`),
 * and what to report. The sandbox answers for itself when it can; when it
 * dies without answering (an OOM or CPU kill, the watchdog, a signal) coil
 * answers in its place. cmd/ only prints the verdict and exits with it. */
#ifndef COIL_PYTHON_EXIT_H
#define COIL_PYTHON_EXIT_H

#include <stdbool.h>
#include <stddef.h>

#include "python_mode.h"

/* The signals run/py forward that end a Python run (not SIGWINCH). */
bool python_signal_ends_run(int sig);

struct python_end {
  int status;         /* wait status of the sandbox (the container's init) */
  double cpu_seconds; /* its user + system time */
  bool watchdog;      /* the parent's wall-clock kill fired */
  int forwarded;      /* the last signal forwarded that ends a run, or 0 */
  bool backstop;      /* SIGKILLed because it outlived that signal */
  bool oom_killed;    /* the cgroup's OOM killer struck */
  size_t relayed;     /* bytes the sandbox wrote to fd 1 */
  const char *head;   /* the first of them, NUL-terminated */
};

struct python_verdict {
  int code;          /* run/py's exit status */
  bool envelope;     /* handler mode, silent death: coil writes the envelope */
  const char *type;  /* error type: envelope and stderr; NULL: none */
  char message[256]; /* the envelope's message */
  char line[320];    /* one stderr line (without "coil: "), or "" */
};

void python_classify(const struct python_ctx *c, const char *id,
                     const struct python_end *e, struct python_verdict *v);

/* Writes the envelope of a verdict with envelope set. */
void python_verdict_envelope(int fd, const struct python_verdict *v);

/* Setting the sandbox up failed after the bundle was prepared (create or
 * start, with the message coil logs): a handler-mode caller still gets an
 * envelope. Writes nothing in script mode. */
void python_setup_failed(int fd, const struct python_ctx *c, const char *msg);

#endif
