/* coil serve's tenants: each one's warm template (a Python-mode container
 * made by a single-threaded spawner process, see serve_pool.c), its
 * registered handlers, its in-flight cap and queue, and one execution's
 * round trip through the template. */
#ifndef COIL_SERVE_POOL_H
#define COIL_SERVE_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "serve_config.h"

struct serve_handler {
  char *name;
  char *code;
  size_t code_len;
  char digest[65];
};

struct serve_template;

struct serve_tenant {
  struct serve_tenant_config *cfg;
  const char *bundle;
  pthread_mutex_t mu;
  pthread_cond_t cv;      /* the warm template changed: acquire's waiters */
  pthread_cond_t slot_cv; /* a slot was freed or the cap changed */
  pthread_cond_t sup_cv;  /* work for the supervisor */
  struct serve_handler *handlers;
  size_t n_handlers;
  struct serve_template *cur;     /* the warm template, or NULL */
  struct serve_template *retired; /* replaced, freed once idle */
  bool want_template;
  char start_error[1024]; /* why the last start failed, or "" */
  unsigned gen;
  int in_flight, queued;
  int answered;      /* slots of answered children not yet reaped */
  long long busy_at; /* CLOCK_MONOTONIC us before which no Busy goes out */
  /* Demoted to the CPU's idle class (cgroup.demote_seconds) until then
   * (CLOCK_MONOTONIC ms); demote_failed once its cgroup refused. */
  long long demoted_until;
  bool demoted, demote_failed;
  unsigned long long demotions;
  pthread_t supervisor;
};

/* Forks the spawner (before any thread exists: it clones containers, which
 * a multi-threaded process must not do). */
int serve_pool_init(const char *root, struct coil_error *err);
/* Starts each tenant's supervisor thread. */
int serve_tenant_start(struct serve_tenant *t, struct coil_error *err);
/* Retires the template and waits until every one is gone. */
void serve_tenant_stop(struct serve_tenant *t);
/* Retires the current template (on SIGHUP, or an anomaly). */
void serve_tenant_recycle(struct serve_tenant *t);
/* Whether t's cgroup is in the CPU's idle class now (demoted, or
 * cgroup.cpu_idle), and how many times it was demoted. */
bool serve_tenant_cpu_idle(struct serve_tenant *t,
                           unsigned long long *demotions);
/* Tells the spawner to finish (after every tenant stopped). */
void serve_pool_finish(void);

struct serve_limits_req {
  int timeout_ms, memory_mb, output_bytes;
};

struct serve_outcome {
  char *envelope;   /* malloc'd JSON object text */
  const char *type; /* error type, or NULL for ok */
  char digest[65];  /* of the code the job gated */
};

enum serve_job_kind { SERVE_JOB_CALL, SERVE_JOB_GATE };

/* Runs one job on t (an in-flight slot is taken and given back here):
 * CALL executes code's entry with request (JSON text) in a fresh child,
 * GATE only checks code. Always fills out->envelope. */
void serve_run(struct serve_tenant *t, enum serve_job_kind kind,
               const char *code, size_t code_len, const char *entry,
               const char *request, size_t request_len,
               const struct serve_limits_req *lim, struct serve_outcome *out);

/* An error envelope {"ok":false,"error":{"type":..,"message":..}}. */
char *serve_error_envelope(const char *type, const char *message);

#endif
