/* process.rlimits: names mapped and checked in the parent, applied in the
 * child with setrlimit. */
#ifndef COIL_RLIMITS_H
#define COIL_RLIMITS_H

#include <stddef.h>
#include <sys/resource.h>

#include "config.h"
#include "error.h"

struct coil_rlimits {
  size_t n;
  int resource[RLIM_NLIMITS];
  struct rlimit lim[RLIM_NLIMITS];
  char name[RLIM_NLIMITS][24];
};

/* Rejects unknown types, duplicates and soft > hard, naming
 * process.rlimits[i].type / .soft. */
int rlimits_parse(const struct coil_process *p, struct coil_rlimits *out,
                  struct coil_error *err);
/* In the parent: fails, naming the field, when a hard limit could not be
 * raised to the requested value, so create fails before anything exists. */
int rlimits_check(const struct coil_rlimits *r, struct coil_error *err);
int rlimits_apply(const struct coil_rlimits *r, struct coil_error *err);

/* RLIMIT_ name <-> number, for tests and messages. -1 when unknown. */
int rlimits_resource(const char *name);

#endif
