/* The container's view of /sys/fs/cgroup for a "cgroup" mount: only its own
 * cgroups, never the host's tree around them. */
#ifndef COIL_CGROUP_MOUNT_H
#define COIL_CGROUP_MOUNT_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "mountopts.h"

/* Mounts onto target (an O_PATH fd in the rootfs) the container's cgroup
 * directories dirs (host paths, one per hierarchy), as runc does: for a
 * "cgroup2" mount (v2) or on a cgroup v2 host the unified one itself;
 * otherwise a tmpfs holding each
 * hierarchy under its host name ("memory", "cpu,cpuacct" with "cpu" and
 * "cpuacct" symlinks, "unified"). Bind mounts, so it works in a user
 * namespace and shows the same as a cgroup namespace's own mount would.
 * Read-only unless o says "rw"; o's other flags, recursive attributes and
 * propagation apply. */
int cgroup_mount(int target, bool v2, const struct coil_mount_opts *o,
                 const char *const *dirs, size_t n, struct coil_error *err);

#endif
