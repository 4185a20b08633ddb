/* Running from a protected handle on coil, so no container can reach the
 * host's binary, writable, through /proc/PID/exe (CVE-2019-5736): container
 * init is a clone of coil, and in Python sandbox mode it never execs. */
#ifndef COIL_EXE_SEAL_H
#define COIL_EXE_SEAL_H

#include <stdbool.h>

#include "error.h"

/* Returns 0 when /proc/self/exe is already protected: a read-only mount
 * that no mount namespace holds, or a sealed memfd. Otherwise re-executes
 * coil from such a handle with argv and the environment, and does not
 * return: from a detached read-only bind mount of the binary (no copy), or,
 * where the kernel or the caller's privileges allow no such mount, from a
 * sealed memfd copy. -1 with err when neither can be made. Only the running
 * binary's mount or seals decide: nothing in the environment can skip it. */
int exe_seal_ensure(char **argv, struct coil_error *err);

/* The path of the binary coil was started from, for files installed next
 * to it: remembered across the re-exec; in a process that never called
 * exe_seal_ensure, the running binary's own. NULL when unknown. */
const char *exe_seal_origin(void);

/* A handle on the file open at fd that nobody can make writable again, for
 * a file coil maps into a container's init: a detached read-only bind mount
 * of it or, where none can be made, a sealed memfd copy named name. Returns
 * the new fd (close-on-exec), or -1 with err. */
int exe_seal_handle(int fd, const char *name, struct coil_error *err);

#endif
