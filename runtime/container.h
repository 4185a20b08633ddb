/* The lifecycle (runc semantics): create sets everything up and leaves init
 * blocked before execve; start releases it; kill signals; delete removes the
 * state, the cgroup and anything left running. */
#ifndef COIL_CONTAINER_H
#define COIL_CONTAINER_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "payload.h"
#include "state.h"

struct coil_create_opts {
  const char *root;
  const char *id;
  const char *bundle; /* NULL = current directory */
  const char *pid_file;
  const char *console_socket;
  /* The payload offered for the bundle (Python sandbox mode), or NULL. */
  payload_prepare_fn prepare;
  void *prepare_arg;
  /* run/py set this: when the payload relays stdout, the container's fd 1
   * becomes a pipe whose read end lands here (else -1), so the caller can
   * answer for a sandbox that dies without answering (OOM, CPU or
   * wall-clock kill). */
  int *relay_fd;
  /* A foreground run sets this: with process.terminal and no console
   * socket, the pty master init makes lands here for run to proxy
   * (runtime/tty_proxy.h), as runc does; else it is left alone. */
  int *terminal_fd;
  /* --systemd-cgroup: the cgroup is a systemd unit (runtime/cgroup.h). */
  bool systemd_cgroup;
};

/* On success *pid is init's host pid; the caller is its parent. */
int container_create(const struct coil_create_opts *o, pid_t *pid,
                     struct coil_error *err);
int container_start(const char *root, const char *id, struct coil_error *err);
int container_kill(const char *root, const char *id, int sig, bool all,
                   struct coil_error *err);
int container_delete(const char *root, const char *id, bool force,
                     struct coil_error *err);
/* Freezes (paused) or thaws every process of a created or running
 * container through its cgroup; resume needs a paused one. */
int container_pause(const char *root, const char *id, bool paused,
                    struct coil_error *err);
/* The host pids in the container's cgroup (malloc'd). */
int container_pids(const char *root, const char *id, pid_t **pids, size_t *n,
                   struct coil_error *err);
struct coil_cgroup;
/* For events: the cgroup of a created, running or paused container and a
 * pidfd of its init, readable once init has exited. */
int container_watch(const char *root, const char *id, struct coil_cgroup **cg,
                    int *pidfd, struct coil_error *err);
struct coil_resources;
/* Writes the limits res sets into a live container's cgroups. */
int container_update(const char *root, const char *id,
                     const struct coil_resources *res, struct coil_error *err);

struct coil_cgroup;
struct coil_config;
/* A container as exec sees it, read under the state lock (released on
 * return). For a live status (created, running, paused) pid and pidfd are
 * its init's, checked as kill checks them, and cfg is the stored config;
 * otherwise only status is set. */
struct coil_container_view {
  enum coil_status status;
  pid_t pid;
  int pidfd;
  struct coil_config *cfg;
  struct coil_cgroup *cgroup; /* NULL without one */
};
int container_view(const char *root, const char *id,
                   struct coil_container_view *v, struct coil_error *err);
void container_view_free(struct coil_container_view *v);

/* The OCI state JSON of one container (malloc'd). */
int container_state_json(const char *root, const char *id, bool pretty,
                         char **json, struct coil_error *err);

struct coil_container_info {
  char *id;
  pid_t pid;
  const char *status;
  char *bundle;
  char *created;
};
/* Every container under root, for `list`. */
int container_list(const char *root, struct coil_container_info **out,
                   size_t *n, struct coil_error *err);
void container_list_free(struct coil_container_info *l, size_t n);

/* What the container's cgroup recorded about its limits. */
struct coil_limit_report {
  bool oom_killed;
  unsigned long long pids_limit_hits; /* forks refused at pids.max */
};
void container_limits(const char *root, const char *id,
                      struct coil_limit_report *r);

#endif
