/* Parent-death signal of a foreground Python run's init: `coil py` hands
 * out no id, so nobody could find its sandbox after coil py died. */
#ifndef COIL_PDEATH_H
#define COIL_PDEATH_H

#include <stdbool.h>

#include "error.h"

/* SIGKILL when the parent dies. Set it before a step that proves the
 * parent alive; the kernel clears it when the ids change (caps_switch_ids
 * restores it). */
int pdeath_arm(struct coil_error *err);

/* The signal is armed but conn, a connection to the parent, is closed at
 * the other end: the parent died while the signal was cleared. */
bool pdeath_parent_gone(int conn);

#endif
