/* A mount's "options" array turned into mount(2) arguments with libmount's
 * Linux option map. Side-effect free: unit-tested without privileges. */
#ifndef COIL_MOUNTOPTS_H
#define COIL_MOUNTOPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "error.h"

struct coil_mount_opts {
  unsigned long flags;       /* MS_* except propagation and MS_REC of bind */
  unsigned long clear;       /* MS_* explicitly negated ("rw", "suid", ...) */
  unsigned long propagation; /* MS_SHARED|MS_SLAVE|MS_PRIVATE|MS_UNBINDABLE,
                                with MS_REC for "rshared" etc.; 0 = none */
  bool bind;                 /* "bind" or "rbind" */
  bool recursive; /* "rbind" given (Docker writes "bind","rprivate") */
  /* MOUNT_ATTR_* of the "rro"-style options, set on the mount and every
   * mount below it; rec_atime is one MOUNT_ATTR_ atime mode, valid when
   * has_rec_atime. */
  uint64_t rec_set, rec_clear, rec_atime;
  bool has_rec_atime;
  bool idmap;           /* "idmap" or "ridmap" */
  bool idmap_recursive; /* "ridmap" */
  bool tmpcopyup; /* a tmpfs starts with what the directory it covers held */
  char *data;     /* fs-specific options ("size=64k,mode=755"), or NULL */
};

/* field names the mount for error messages, e.g. "mounts[2]". */
int mountopts_parse(const struct coil_strv *options, const char *field,
                    struct coil_mount_opts *out, struct coil_error *err);
void mountopts_free(struct coil_mount_opts *o);

/* The MOUNT_ATTR_* to set and to clear (with AT_RECURSIVE) for o's
 * recursive options; an atime mode clears MOUNT_ATTR__ATIME first. */
void mountopts_recursive_attrs(const struct coil_mount_opts *o, uint64_t *set,
                               uint64_t *clear);

/* "rprivate" etc. (for linux.rootfsPropagation) to MS_* flags; -1 when unknown.
 */
int mountopts_propagation(const char *name, unsigned long *flags);

#endif
