/* coil serve's per-tenant template: a Python-mode container whose init,
 * instead of running one handler, initialises the interpreter once and then
 * forks one fresh child per request (runtime/serve_wire.h), each PID 1 of
 * its own PID namespace, which applies the per-execution limits and
 * lockdown and runs the handler. The template never runs user code. */
#ifndef COIL_SERVE_TEMPLATE_H
#define COIL_SERVE_TEMPLATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "caps.h"
#include "config.h"
#include "error.h"
#include "payload.h"
#include "rlimits.h"

/* What a tenant asks of its template. */
struct serve_template_opts {
  uid_t uid; /* host uid/gid the sandboxes run as */
  gid_t gid;
  int64_t memory;  /* tenant cgroup: bytes, 0 = the bundle's */
  int64_t pids;    /* 0 = the bundle's */
  double cpus;     /* CPUs worth of quota, 0 = the bundle's */
  bool cpu_idle;   /* the tenant's cgroup in the idle class */
  int cpu_seconds; /* RLIMIT_CPU soft limit per execution, 0 = the bundle's */
  size_t max_request;
};

struct serve_template_setup {
  const struct serve_template_opts *opts; /* in */
  /* out, filled by prepare, read by the template (a clone of this memory) */
  const struct coil_process *process;
  struct coil_caps caps;
  struct coil_rlimits rlimits;
  unsigned disabled;
  char *prefix;
  char *readable_root;
  int cpu_limit;
  size_t max_request;
};

/* A payload_prepare_fn (payload.h): arg is a struct serve_template_setup.
 * The bundle must be a Python bundle. Edits cfg: the id maps become the
 * tenant's single uid/gid, the cgroup limits the tenant's aggregate ones,
 * and the rlimits move from the template to its children. */
int serve_template_prepare(void *arg, struct coil_config *cfg,
                           const char *bundle, const char *rootfs,
                           struct coil_payload *p, struct coil_error *err);
void serve_template_setup_free(struct serve_template_setup *s);

#endif
