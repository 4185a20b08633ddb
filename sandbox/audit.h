/* The C audit hook (gate layer G3): added before the interpreter starts, it
 * allows everything in the TRUSTED phase and denies every event once user
 * code may run. Python has no way to remove it; the phase is a C static. */
#ifndef COIL_AUDIT_H
#define COIL_AUDIT_H

#include <stdbool.h>

/* Must run before Py_InitializeFromConfig. On a hard event the process
 * exits after writing a GateViolation envelope to violation_fd (handler
 * mode) or a line to stderr (script mode). */
int audit_install(int violation_fd, bool handler_mode);

/* One way: TRUSTED -> USER. With enforce false (sandbox.disable: audit) the
 * hook stays permissive. */
void audit_enter_user_phase(bool enforce);

#endif
