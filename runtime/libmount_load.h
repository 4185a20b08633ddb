/* libmount, loaded on first use instead of linked: with libblkid,
 * libselinux (and its start-up probes) and libpcre2 it is most of what the
 * dynamic loader would map and relocate at every start, while only the
 * commands that build a container use it. Every entry has the type of the
 * libmount function it names. */
#ifndef COIL_LIBMOUNT_LOAD_H
#define COIL_LIBMOUNT_LOAD_H

#include <libmount.h>

#include "error.h"

#define LIBMOUNT_CALLS(X)                                                      \
  X(fs_get_fstype)                                                             \
  X(fs_get_target)                                                             \
  X(get_builtin_optmap)                                                        \
  X(new_table_from_file)                                                       \
  X(table_find_mountpoint)                                                     \
  X(unref_table)

#define LIBMOUNT_ENTRY(f) typeof(mnt_##f) *f;
struct libmount_calls {
  LIBMOUNT_CALLS(LIBMOUNT_ENTRY)
};
#undef LIBMOUNT_ENTRY

/* The calls, the library loaded the first time; NULL with err set when it
 * cannot be. Container creation loads it before init is cloned, so init
 * never opens a library from inside its own mount namespace. */
const struct libmount_calls *libmount_calls(struct coil_error *err);

/* Unmaps the library (and what it alone needed) from a process done with
 * it; the next libmount_calls loads it again. */
void libmount_unload(void);

#endif
