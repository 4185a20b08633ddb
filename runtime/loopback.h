/* The loopback interface of a network namespace the container gets. */
#ifndef COIL_LOOPBACK_H
#define COIL_LOOPBACK_H

#include "error.h"

/* Brings "lo" of the calling process's network namespace up: a new network
 * namespace starts with it down, and runc brings it up too. */
int loopback_up(struct coil_error *err);

#endif
