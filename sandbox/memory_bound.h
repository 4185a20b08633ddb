/* The second memory bound of Python mode: an RLIMIT_DATA derived from the
 * same memory setting as the cgroup limit, so that memory stays bounded
 * with the cgroup layer off and the two can never disagree. */
#ifndef COIL_MEMORY_BOUND_H
#define COIL_MEMORY_BOUND_H

#include <stdint.h>

#include "config.h"
#include "error.h"

/* Above the memory setting, for the interpreter's own private writable
 * memory (its heap, the pre-imported helpers, the request and the capture
 * buffer): about 7 MiB when the user code starts. File mappings such as
 * libpython's text do not count against RLIMIT_DATA. */
#define MEMORY_BOUND_HEADROOM (32LL << 20)

/* The RLIMIT_DATA for lnx's cgroup memory limit: the limit plus
 * MEMORY_BOUND_HEADROOM, or 0 (none) when lnx sets no limit. Call it on the
 * config the cgroup limit is taken from, with the overrides applied and
 * before the disabled layers are stripped. */
uint64_t memory_bound_of(const struct coil_linux *lnx);

/* In the sandbox, before the interpreter exists: lowers RLIMIT_DATA's soft
 * and hard limits to limit, never raising a lower one the bundle set.
 * limit 0 does nothing. Not applied in an AddressSanitizer build, whose
 * shadow and allocator reservations already count terabytes of private
 * writable memory: any limit would fail every later mmap. */
int memory_bound_apply(uint64_t limit, struct coil_error *err);

/* How close to the bound a crash counts as running out of memory: a
 * private writable mapping of this size no longer fits. */
#define MEMORY_BOUND_PROBE (4 << 20)

/* For a run under the bound (limit != 0): a crash (SIGSEGV, SIGBUS or
 * SIGABRT) with the bound nearly used up is an allocation that failed
 * where C code does not check (yajl's buffers) or gives up (the
 * interpreter's fatal errors): on_exhausted runs, from the signal handler,
 * and must not return. Any other crash keeps its signal. Not installed in
 * the ASan build, which has no bound and reports crashes itself. */
int memory_bound_watch(uint64_t limit, void (*on_exhausted)(void),
                       struct coil_error *err);

#endif
