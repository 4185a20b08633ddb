/* linux.sysctl: only namespaced keys, and only when the container has its
 * own namespace for them (as runc enforces). */
#ifndef COIL_SYSCTL_H
#define COIL_SYSCTL_H

#include "config.h"
#include "error.h"

int sysctl_validate(const struct coil_linux *l, struct coil_error *err);
/* Writes each key under /proc/sys, from inside the container's namespaces. */
int sysctl_apply(const struct coil_linux *l, struct coil_error *err);

#endif
