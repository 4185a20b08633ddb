/* The lifecycle (runc semantics): create sets everything up and leaves init
 * blocked before execve; start releases it; kill signals; delete removes the
 * state, the cgroup and anything left running. */
#ifndef COIL_CONTAINER_H
#define COIL_CONTAINER_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

/* `coil py`'s changes to a Python bundle's config. */
struct coil_py_override {
  const char *code; /* source (NULL: sandbox.python.code of the bundle) */
  size_t code_len;
  const char *code_name; /* for messages */
  const char *entry;     /* handler entry; NULL: the bundle's */
  bool script;           /* run as a script even if the bundle names an entry */
  int timeout;           /* seconds; 0: the bundle's */
  long long memory;      /* bytes; 0: the bundle's */
};

struct coil_create_opts {
  const char *root;
  const char *id;
  const char *bundle; /* NULL = current directory */
  const char *pid_file;
  const char *console_socket;
  const struct coil_py_override *py; /* NULL: the bundle as it is */
  /* run/py set this: in Python mode the container's fd 1 becomes a pipe the
   * caller relays, so it can write the envelope itself when the sandbox dies
   * without one (OOM, CPU or wall-clock kill). */
  struct coil_python_info *info;
};

struct coil_python_info {
  bool python;   /* the bundle runs in Python mode */
  bool handler;  /* handler mode (an envelope is due), not script mode */
  int relay_fd;  /* read end of the container's fd 1, or -1 */
  int timeout;   /* wall clock, seconds */
  int cpu_limit; /* RLIMIT_CPU soft limit in seconds, 0 = none */
};

/* On success *pid is init's host pid; the caller is its parent. */
int container_create(const struct coil_create_opts *o, pid_t *pid,
                     struct coil_error *err);
int container_start(const char *root, const char *id, struct coil_error *err);
int container_kill(const char *root, const char *id, int sig, bool all,
                   struct coil_error *err);
int container_delete(const char *root, const char *id, bool force,
                     struct coil_error *err);

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
