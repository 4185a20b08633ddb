/* coil serve's configuration file (docs/serve.md, "Configuration"): the
 * tenants, their host ids, limits and who may use them. */
#ifndef COIL_SERVE_CONFIG_H
#define COIL_SERVE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct serve_limits {
  int timeout_ms, max_timeout_ms;     /* per execution */
  int memory_mb, max_memory_mb;       /* RLIMIT_DATA per execution */
  int output_bytes, max_output_bytes; /* envelope cap per execution */
  int cpu_seconds;                    /* RLIMIT_CPU per execution */
  int in_flight;                      /* executions at once */
  int queue;                          /* requests waiting beyond that */
  bool has_queue;
};

struct serve_tenant_config {
  char *name;
  uint32_t uid, gid;                 /* host ids its sandboxes run as */
  char *bundle;                      /* a Python bundle; NULL: the server's */
  uint32_t *allow_uids, *allow_gids; /* peers that may use it */
  size_t n_allow_uids, n_allow_gids;
  struct serve_limits limits;
  bool has_limits;
  int64_t cgroup_memory_mb, cgroup_pids; /* the tenant's aggregate, 0: bundle */
  int cgroup_cpu_millis;                 /* 1000 = one CPU, 0: bundle */
  bool cgroup_cpu_idle;                  /* CPU only when others idle */
  int demote_seconds; /* idle class after a limit or a long run; 0: never */
  bool has_demote_seconds;
  int demote_run_ms; /* what a long run is */
  bool has_cgroup;
  int recycle_requests, recycle_seconds; /* 0: never */
  bool has_recycle;
};

struct serve_config {
  int max_frame_bytes;
  bool has_max_frame_bytes;
  char *bundle;
  int socket_mode;
  bool has_socket_mode;
  struct serve_tenant_config *tenants;
  size_t n_tenants;
};

/* Reads and validates path; errors name the field ("tenants[1].uid: ..."). */
int serve_config_load(const char *path, struct serve_config *out,
                      struct coil_error *err);
void serve_config_free(struct serve_config *c);

#endif
