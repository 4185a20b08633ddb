/* linux.sysctl: only namespaced keys, and only in a namespace of the
 * container's own: one coil creates, or one joined by path that is not the
 * namespace coil itself runs in (the host's). */
#ifndef COIL_SYSCTL_H
#define COIL_SYSCTL_H

#include "config.h"
#include "error.h"

int sysctl_validate(const struct coil_linux *l, struct coil_error *err);
/* Writes each key under /proc/sys, from inside the container's namespaces. */
int sysctl_apply(const struct coil_linux *l, struct coil_error *err);

#endif
