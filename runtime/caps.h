/* process.capabilities through libcap: names parsed in the parent, the five
 * sets and the bounding set applied in the child. */
#ifndef COIL_CAPS_H
#define COIL_CAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "error.h"

struct coil_caps {
  bool configured;                   /* process.capabilities present */
  uint64_t sets[COIL_CAP_SET_COUNT]; /* bit n = capability number n */
};

/* An unknown name is an error naming its field; a known name the running
 * kernel does not have is skipped with a warning (runc does the same). */
int caps_parse(const struct coil_process *p, struct coil_caps *out,
               struct coil_error *err);

/* Calls fn with each name caps_parse knows ("CAP_CHOWN", ...), in number
 * order: the list `features` prints. */
void caps_each_name(void (*fn)(const char *name, void *arg), void *arg);

/* The number of a capability name ("CAP_NET_ADMIN", any case); -1 when
 * unknown or beyond what the running kernel has. */
int caps_number(const char *name);

/* Switches to uid/gid with exactly these supplementary groups, keeping the
 * permitted capabilities across the switch (PR_SET_KEEPCAPS) so that
 * caps_apply can still shape every set afterwards, and the parent-death
 * signal, which the kernel would clear. Errors name the process.user
 * field. */
int caps_switch_ids(uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups,
                    struct coil_error *err);

/* Drops the bounding set to sets[BOUNDING] (unless bounding_dropped: an
 * ancestor did, see caps_drop_bounding), then sets effective, permitted
 * and inheritable, then the ambient set. Without a configured set all
 * capabilities are dropped. */
int caps_apply(const struct coil_caps *c, bool bounding_dropped,
               struct coil_error *err);

/* caps_apply's bounding-set step alone, ahead of time: the bounding set
 * limits only what execve can grant, so a process that keeps working with
 * its effective set (a serve template) can shed it once for all the
 * children it forks, which inherit it and pass bounding_dropped. */
int caps_drop_bounding(const struct coil_caps *c, struct coil_error *err);

#endif
