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

/* Whether the namespace of this type that l joins by path is the one coil
 * itself runs in (the host's, as a rule); false when l joins none. An
 * unreadable path is an error naming it. */
int namespaces_joins_runtimes(const struct coil_linux *l, int clone_flag,
                              bool *same, struct coil_error *err);

/* Checks every path can be opened and is a namespace of its type, and that
 * a new user namespace has mappings. */
int namespaces_validate(const struct coil_linux *l, struct coil_error *err);

/* Init: joins a mount namespace given by path (the user namespace, if any,
 * was joined before init was born). */
int namespaces_join(const struct coil_linux *l, struct coil_error *err);

/* The parent joins the network, ipc, uts, cgroup, time and (for its
 * children) pid namespaces given by path while it is still host root, so
 * init is born in them; namespaces_parent_restore puts the parent back. */
struct ns_saved {
  int fd[8];
  int flag[8];
  size_t n;
};
int namespaces_parent_enter(const struct coil_linux *l, struct ns_saved *saved,
                            struct coil_error *err);
/* Fails when the parent could not get back: it must not go on. */
int namespaces_parent_restore(struct ns_saved *saved, struct coil_error *err);

/* The user namespace path, or NULL. */
const char *namespaces_user_path(const struct coil_linux *l);

/* Writes one /proc/PID/{uid,gid}_map from mappings; errors name
 * `field`. */
int namespaces_write_map(pid_t pid, const char *file, const char *field,
                         const struct coil_id_mapping *m, size_t n,
                         struct coil_error *err);

/* Parent: writes /proc/<pid>/{uid_map,gid_map}. */
int namespaces_write_id_maps(pid_t pid, const struct coil_linux *l,
                             struct coil_error *err);

/* Host uid/gid that container id `id` maps to (id itself without a userns);
 * -1 when unmapped. */
long namespaces_host_id(const struct coil_id_mapping *m, size_t n, uint32_t id);

#endif
