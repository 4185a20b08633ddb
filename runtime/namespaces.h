/* linux.namespaces: which to create at clone, which to join by path, and the
 * user namespace's id maps (written by the parent). */
#ifndef COIL_NAMESPACES_H
#define COIL_NAMESPACES_H

#include <stdbool.h>
#include <sys/types.h>

#include "config.h"
#include "error.h"

/* CLONE_NEW* flags of namespaces to create at clone time. The cgroup
 * namespace is left out: init unshares it after joining its cgroup, so its
 * root is the container's cgroup. */
int namespaces_clone_flags(const struct coil_linux *l);
bool namespaces_wants_new(const struct coil_linux *l, int clone_flag);
bool namespaces_has(const struct coil_linux *l, int clone_flag);

/* Checks every path can be opened and is a namespace of its type, and that
 * a new user namespace has mappings. */
int namespaces_validate(const struct coil_linux *l, struct coil_error *err);

/* Joins namespaces given by path, user namespace first. The pid namespace
 * is skipped here: it is joined by the parent before clone. */
int namespaces_join(const struct coil_linux *l, struct coil_error *err);

/* Parent: setns into a configured pid namespace path so the child is born
 * in it. No-op without a path. */
int namespaces_join_pid_for_children(const struct coil_linux *l,
                                     struct coil_error *err);

/* Parent: writes /proc/<pid>/{uid_map,gid_map}. */
int namespaces_write_id_maps(pid_t pid, const struct coil_linux *l,
                             struct coil_error *err);

/* Host uid/gid that container id `id` maps to (id itself without a userns);
 * -1 when unmapped. */
long namespaces_host_id(const struct coil_id_mapping *m, size_t n, uint32_t id);

#endif
