/* The steps of one handler run, shared by Python mode's init
 * (python_mode_main) and coil serve's per-request child
 * (serve_template.c), which has its interpreter, gate result and stage-1
 * lockdown from a template instead of building them itself. */
#ifndef COIL_PYTHON_RUN_H
#define COIL_PYTHON_RUN_H

#include "gate.h"
#include "lockdown.h"
#include "python_mode.h"

/* The signals that end the run and the in-guest wall clock; on failure an
 * envelope is written and the process exits. */
void python_run_arm(const struct python_ctx *c);

/* The helper namespaces g's code imports and a fresh globals dict for it
 * (trusted phase). */
int python_run_globals(const struct gate_result *g, unsigned disabled,
                       PyObject **globals, struct coil_error *err);

/* globals from python_run_globals (NULL: made here), the print() cap, the
 * request read from request_fd, lockdown stage 2, the audit hook's deny
 * phase, then the user's code and its envelope on fd 1. Ends in _exit. */
void python_run_finish(const struct python_ctx *c,
                       const struct lockdown_opts *lock,
                       const struct gate_result *g, PyObject *globals,
                       int request_fd) __attribute__((noreturn));

/* The GateViolation envelope for g (g->n > 0), as coil py writes it. */
void python_write_violation(int fd, const struct gate_result *g);

#endif
