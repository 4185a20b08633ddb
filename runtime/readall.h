/* Reading a whole file or pipe with a size cap (configs, code, requests,
 * cgroup files), and exact-length reads and length-prefixed frames (coil
 * serve's protocol). */
#ifndef COIL_READALL_H
#define COIL_READALL_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* Reads fd to its end into a NUL-terminated malloc'd buffer. More than cap
 * bytes is an EFBIG error "larger than CAP bytes", unless truncate: then the
 * first cap + 1 bytes come back and the caller judges the size itself.
 * Errors name no path: callers prefix it. */
int read_all(int fd, size_t cap, bool truncate, char **out, size_t *len,
             struct coil_error *err);

/* read_all of a file, or of stdin when path is "-"; errors name the path. */
int read_file_or_stdin(const char *path, size_t cap, bool truncate, char **out,
                       size_t *len, struct coil_error *err);

/* Exactly n bytes from fd, EINTR retried; -1 on an error or an early end
 * of stream. */
int read_exact(int fd, void *buf, size_t n);
/* A 4-byte big-endian length, then the n bytes, in one writev where the
 * socket takes it (the reader wakes once); -1 on an error. */
int write_frame(int fd, const void *buf, size_t n);

#endif
