/* Mounts made and changed through file descriptors (open_tree, fsmount,
 * mount_setattr, move_mount): a path is resolved once, to an fd, so a racer
 * that swaps paths afterwards can redirect neither the mount nor its
 * flags. */
#ifndef COIL_MOUNTFD_H
#define COIL_MOUNTFD_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

/* A detached copy of the mount at fd (from fd's dentry down), with all its
 * submounts when recursive: like the source of a bind or rbind. */
int mountfd_clone(int fd, bool recursive, struct coil_error *err);

/* A detached new mount of a filesystem, as mount(2) would make it: flags
 * are MS_* (the superblock's go to the filesystem, the per-mount ones onto
 * the mount), data the comma-separated filesystem options, each given to
 * fsconfig alone. */
int mountfd_new_fs(const char *type, const char *source, unsigned long flags,
                   const char *data, struct coil_error *err);

/* A detached, empty, read-only tmpfs (nosuid, nodev, noexec). */
int mountfd_empty_tmpfs(struct coil_error *err);

/* Sets the per-mount MS_* flags of set (ro, nosuid, nodev, noexec,
 * nosymfollow, atime) and clears those of clear, on the mount at mnt only;
 * other flags are kept. */
int mountfd_set_flags(int mnt, unsigned long set, unsigned long clear,
                      struct coil_error *err);

/* Sets the MOUNT_ATTR_* of set and clears those of clear on mnt and, when
 * recursive, on every mount below it. An atime mode in set needs
 * MOUNT_ATTR__ATIME in clear. */
int mountfd_set_attr(int mnt, bool recursive, uint64_t set, uint64_t clear,
                     struct coil_error *err);

/* Makes the detached mount mnt (and, when recursive, those below it) show
 * file owners through the id mappings of the user namespace userns_fd. */
int mountfd_idmap(int mnt, int userns_fd, bool recursive,
                  struct coil_error *err);

/* MS_SHARED, MS_SLAVE, MS_PRIVATE or MS_UNBINDABLE, with MS_REC for every
 * mount below mnt too; 0 changes nothing. */
int mountfd_set_propagation(int mnt, unsigned long prop,
                            struct coil_error *err);

/* Attaches the detached tree mnt on top of whatever target is. */
int mountfd_attach(int mnt, int target, struct coil_error *err);

#endif
