/* Closing every inherited fd before the container's process runs, with a
 * fallback for kernels or seccomp profiles without close_range(2). */
#ifndef COIL_FDS_H
#define COIL_FDS_H

#include <stddef.h>

#include "error.h"

/* Closes every fd from 3 up except the n in keep (negative entries are
 * ignored). close_range(2) first; when it fails, each open fd is closed on
 * its own, found through /proc/self/fd or, without /proc, by trying every
 * number below the RLIMIT_NOFILE hard limit. Fails only when no way could
 * be sure that nothing else is left open. */
int fds_close_except(const int *keep, size_t n, struct coil_error *err);

#endif
