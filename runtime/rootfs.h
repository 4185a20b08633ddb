/* The container's filesystem view, built inside its new mount namespace:
 * config mounts in order, devices, pivot_root, masked and read-only paths. */
#ifndef COIL_ROOTFS_H
#define COIL_ROOTFS_H

#include <stdbool.h>

#include "config.h"
#include "error.h"

#define ROOTFS_CGROUP_DIRS 16

struct coil_rootfs_opts {
  const char *rootfs; /* absolute host path of root.path */
  bool userns;        /* in a new user namespace: bind devices, never mknod */
  /* The container's own cgroup directories (host paths, one per
   * hierarchy): all a "cgroup" mount shows. */
  const char *cgroup_dirs[ROOTFS_CGROUP_DIRS];
  size_t n_cgroup_dirs;
  /* Per mount, the runtime's detached id-mapped copy of its source or -1
   * (idmap_mount.h); NULL when no mount is id-mapped. */
  const int *idmap_trees;
};

/* Before pivot_root: makes / private (or rootfsPropagation), bind-mounts the
 * rootfs onto itself, applies cfg->mounts in order (destinations resolved
 * inside the rootfs, never through a symlink out of it), creates the default
 * and configured devices and /dev symlinks. */
int rootfs_prepare(const struct coil_config *cfg,
                   const struct coil_rootfs_opts *o, struct coil_error *err);

/* pivot_root into o->rootfs and detach the old root (never chroot). */
int rootfs_pivot(const struct coil_rootfs_opts *o, struct coil_error *err);

/* After pivot_root, before rootfs_finalize: mkdir -p of process.cwd (0755,
 * owned by the container's root) so the process can start there, as runc
 * does; symlinks on the way resolve inside the container's root. */
int rootfs_make_cwd(const char *cwd, struct coil_error *err);

/* After pivot_root: masked paths, read-only paths, rootfs propagation and
 * the read-only root remount. */
int rootfs_finalize(const struct coil_config *cfg, struct coil_error *err);

#endif
