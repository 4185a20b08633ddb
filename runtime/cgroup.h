/* One interface over the cgroup v2 and v1 drivers. The driver is chosen per
 * controller by what the host offers: a controller listed in the unified
 * hierarchy's cgroup.controllers is driven through v2, otherwise through its
 * v1 mount (hybrid hosts: v1 controllers + cgroup2 at <root>/unified). */
#ifndef COIL_CGROUP_H
#define COIL_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "config.h"
#include "error.h"

struct coil_cgroup;

/* Where to look; tests point these at a fake tree. NULL fields take the
 * real defaults ("/sys/fs/cgroup", "/proc/self/cgroup"). */
struct coil_cgroup_env {
  const char *fs_root;
  const char *proc_self_cgroup;
  /* The systemd driver (--systemd-cgroup): cgroups_path is
   * "slice:prefix:name" and systemd makes the container's cgroup as a
   * transient unit; cgroup_create then starts the unit holding pid (a scope
   * cannot start empty) and moves pid into coil's other cgroups. */
  bool systemd;
  pid_t pid;
};

struct dev_policy;

/* Creates the container's cgroup in every hierarchy coil uses and writes the
 * limits. cgroups_path: absolute = used as given below each hierarchy root;
 * relative or NULL (then `id`) = nested under "coil/" inside the cgroup this
 * process is in, per controller. devices: confine the container to it (v1
 * devices controller and a v2 device program, whichever the host has; fails
 * if it has neither), or NULL. On failure nothing created is left behind. */
int cgroup_create(const struct coil_cgroup_env *env, const char *cgroups_path,
                  const char *id, const struct coil_resources *res,
                  const struct dev_policy *devices, struct coil_cgroup **out,
                  struct coil_error *err);

/* What cgroup_create with the same arguments would make, without making
 * it: recorded before the create, so a launcher killed midway leaves
 * cgroups its state names (cgroup_destroy ignores missing ones). */
int cgroup_plan(const struct coil_cgroup_env *env, const char *cgroups_path,
                const char *id, const struct coil_resources *res,
                const struct dev_policy *devices, struct coil_cgroup **out,
                struct coil_error *err);

/* Moves pid into the container's cgroup in every hierarchy. */
int cgroup_enter(const struct coil_cgroup *cg, pid_t pid,
                 struct coil_error *err);

/* cgroup_enter for a process joining a running container (exec): where
 * the container made its v2 cgroup a delegated parent (controllers enabled
 * for the cgroups it made below, so the kernel's "no internal processes"
 * rule keeps processes out of it, EBUSY), pid joins the cgroup init is in
 * below it, as runc's exec does. */
int cgroup_enter_exec(const struct coil_cgroup *cg, pid_t pid, pid_t init,
                      struct coil_error *err);

/* Joining without the migration wait. Moving a whole process takes the
 * kernel's global threadgroup lock, whose RCU grace period costs ~10 ms per
 * container; so init is born in the v2 cgroup (clone3 CLONE_INTO_CGROUP with
 * v2_fd) and moves its only thread into each v1 cgroup itself, by writing
 * "0" to the "tasks" files the (host root) parent opened for it. */
struct coil_cgroup_join {
  int v2_fd;        /* the v2 cgroup directory, or -1 */
  int tasks_fd[16]; /* one per v1 hierarchy */
  size_t n_tasks;
};
int cgroup_join_prepare(const struct coil_cgroup *cg,
                        struct coil_cgroup_join *j, struct coil_error *err);
/* In init, before anything else: moves the calling (single-threaded)
 * process into the v1 cgroups and closes the fds. */
int cgroup_join_self(struct coil_cgroup_join *j, struct coil_error *err);
void cgroup_join_close(struct coil_cgroup_join *j);

/* The container's own cgroup directories on the host's cgroup filesystems,
 * one per hierarchy (borrowed from cg): what its /sys/fs/cgroup shows. At
 * most max are stored; returns how many. */
size_t cgroup_own_dirs(const struct coil_cgroup *cg, const char **dirs,
                       size_t max);

/* The pids currently in the container's cgroup (for kill --all). */
int cgroup_pids(const struct coil_cgroup *cg, pid_t **pids, size_t *n,
                struct coil_error *err);

/* Whether pid is in the container's cgroup (or below it) in any of its
 * hierarchies: a client may move a process to its own cgroup in one. */
bool cgroup_holds(const struct coil_cgroup *cg, pid_t pid);

/* True when the memory controller recorded an OOM kill in this cgroup. */
bool cgroup_oom_killed(const struct coil_cgroup *cg);

/* How many forks the pids controller refused at its limit. */
unsigned long long cgroup_pids_limit_hits(const struct coil_cgroup *cg);

/* Freezes (frozen) or thaws every process in the container's cgroup,
 * returning once the kernel reports it done: the v1 freezer when the host
 * has one, else the v2 cgroup.freeze. */
int cgroup_freeze(const struct coil_cgroup *cg, bool frozen,
                  struct coil_error *err);
/* True while the container's cgroup is frozen. */
bool cgroup_frozen(const struct coil_cgroup *cg);

/* Writes the limits res sets into the existing cgroups (the rest stay as
 * they are); fails naming the field when the container has no cgroup of the
 * controller it needs. */
int cgroup_update(const struct coil_cgroup *cg,
                  const struct coil_resources *res, struct coil_error *err);

/* Removes every directory cgroup_create made (waits briefly for the
 * kernel to release dying tasks); also removes an empty "coil" parent. */
int cgroup_destroy(const struct coil_cgroup *cg, struct coil_error *err);

/* A one-line text form for state.json, and back. */
char *cgroup_serialize(const struct coil_cgroup *cg);
int cgroup_deserialize(const char *text, struct coil_cgroup **out,
                       struct coil_error *err);

void cgroup_free(struct coil_cgroup *cg);

#endif
