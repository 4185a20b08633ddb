/* The last steps before a container process runs its program, shared by
 * init (create/run) and exec: the environment, then the privilege drop in
 * one order, each step placed where it is still possible and cannot be
 * undone by a later one. */
#ifndef COIL_PRIVILEGES_H
#define COIL_PRIVILEGES_H

#include <stdbool.h>
#include <stddef.h>

#include "caps.h"
#include "config.h"
#include "error.h"
#include "rlimits.h"
#include "seccomp_profile.h"

struct privileges {
  const struct coil_process *p; /* ids, umask, cwd, no_new_privileges */
  const struct coil_caps *caps;
  const struct coil_rlimits *rlimits;
  const struct coil_seccomp_profile *seccomp; /* NULL without linux.seccomp */
  bool keep_ids_and_caps; /* a payload's switch: no id or caps drop */
  /* What an ancestor already did once for all its children (coil serve's
   * template): the bounding set is final (caps_drop_bounding), every signal
   * disposition is default (privileges_default_dispositions). Those steps
   * are then skipped; the signal mask is still emptied. */
  bool bounding_dropped;
  bool dispositions_default;
};

/* Right after joining or creating a user namespace: become its root, so
 * the setup's file access checks use a mapped id. Skipped when 0 is not
 * mapped. */
int privileges_become_ns_root(struct coil_error *err);

/* Replaces the environment with p->env; HOME from the current root's
 * passwd when env has none (as runc). */
int privileges_set_environment(const struct coil_process *p,
                               struct coil_error *err);

/* umask, every fd but stdio and keep closed, rlimits, ids, capabilities,
 * no_new_privs, default signal dispositions and an empty mask, then cwd.
 * The seccomp filter goes in here only when privileges_seccomp_first. */
int privileges_drop(const struct privileges *pv, const int *keep, size_t n_keep,
                    struct coil_error *err);

/* Every signal's disposition to default, the C library's own real-time
 * signals too when ignored; the mask is left alone. */
int privileges_default_dispositions(struct coil_error *err);

/* Without no_new_privs the kernel only accepts a seccomp filter from a
 * CAP_SYS_ADMIN holder: then privileges_drop loads it before the id switch,
 * otherwise the caller loads it as late as it can. */
bool privileges_seccomp_first(const struct privileges *pv);

#endif
