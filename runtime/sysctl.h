/* linux.sysctl: only namespaced keys, and only when coil creates the
 * namespace they belong to (not one shared with the host or joined by path,
 * which belong to someone else). */
#ifndef COIL_SYSCTL_H
#define COIL_SYSCTL_H

#include "config.h"
#include "error.h"

int sysctl_validate(const struct coil_linux *l, struct coil_error *err);
/* Writes each key under /proc/sys, from inside the container's namespaces. */
int sysctl_apply(const struct coil_linux *l, struct coil_error *err);

#endif
