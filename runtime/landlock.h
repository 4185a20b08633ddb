/* Landlock, best effort across ABI versions: the ruleset handles every
 * access right the running kernel knows; on a kernel without Landlock coil
 * warns once and keeps every other layer. Rulesets stack and only tighten. */
#ifndef COIL_LANDLOCK_H
#define COIL_LANDLOCK_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* The kernel's Landlock ABI version, 0 when unavailable. */
int landlock_abi(void);

/* Stage 1: read-only access (read files, read dirs) beneath each of paths;
 * every other filesystem right is denied everywhere, and on ABI >= 4 TCP
 * bind/connect, on ABI >= 6 abstract unix sockets and signals outside the
 * domain. The caller has set no_new_privs. */
int landlock_restrict_read_only(const char *const *paths, size_t n,
                                struct coil_error *err);

/* Stage 2: no filesystem rights at all (plus the network/scope denials). */
int landlock_deny_all(struct coil_error *err);

#endif
