#include "serve_config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "json_tree.h"
#include "json_walk.h"
#include "readall.h"

#define CONFIG_MAX (1 << 20)

typedef struct serve_tenant_config tenant_t;
typedef struct serve_limits limits_t;

/* A tenant name is part of container ids and metric labels. */
static int valid_name(struct jw_walk *w, const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 32)
    return jw_fail(w, "expected 1 to 32 characters");
  for (const char *p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
          (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
      return jw_fail(w, "only letters, digits, '_' and '-' are allowed");
  return 0;
}

#define POSITIVE(k, m, hi) JW_INTEGER(k, limits_t, m, JW_NO_OFF, 1, hi, 0)
static const struct jw_field limits_fields[] = {
    POSITIVE("timeout_ms", timeout_ms, 3600000),
    POSITIVE("max_timeout_ms", max_timeout_ms, 3600000),
    POSITIVE("memory_mb", memory_mb, 1 << 20),
    POSITIVE("max_memory_mb", max_memory_mb, 1 << 20),
    POSITIVE("output_bytes", output_bytes, 64 << 20),
    POSITIVE("max_output_bytes", max_output_bytes, 64 << 20),
    POSITIVE("cpu_seconds", cpu_seconds, 3600),
    POSITIVE("in_flight", in_flight, 256),
    JW_INTEGER("queue", limits_t, queue, JW_HAS(limits_t, has_queue), 0, 4096,
               0),
};

static int check_limits(struct jw_walk *w, yajl_val v, void *dst) {
  (void)v;
  limits_t *l = dst;
  if (l->max_timeout_ms && l->timeout_ms > l->max_timeout_ms)
    return jw_fail(w, "timeout_ms is above max_timeout_ms");
  if (l->max_memory_mb && l->memory_mb > l->max_memory_mb)
    return jw_fail(w, "memory_mb is above max_memory_mb");
  if (l->max_output_bytes && l->output_bytes > l->max_output_bytes)
    return jw_fail(w, "output_bytes is above max_output_bytes");
  return 0;
}
static const struct jw_object limits_obj =
    JW_TABLE(limits_t, limits_fields, check_limits);

static const struct jw_field allow_fields[] = {
    JW_UINT32S("uids", tenant_t, allow_uids, n_allow_uids),
    JW_UINT32S("gids", tenant_t, allow_gids, n_allow_gids),
};
static const struct jw_object allow_obj =
    JW_TABLE(tenant_t, allow_fields, NULL);

static const struct jw_field cgroup_fields[] = {
    JW_INT64("memory_mb", tenant_t, cgroup_memory_mb, JW_NO_OFF, 1, 0),
    JW_INT64("pids", tenant_t, cgroup_pids, JW_NO_OFF, 1, 0),
    JW_INTEGER("cpu_millis", tenant_t, cgroup_cpu_millis, JW_NO_OFF, 1, 1000000,
               0),
    JW_BOOLEAN("cpu_idle", tenant_t, cgroup_cpu_idle),
    JW_INTEGER("demote_seconds", tenant_t, demote_seconds,
               JW_HAS(tenant_t, has_demote_seconds), 0, 86400, 0),
    JW_INTEGER("demote_run_ms", tenant_t, demote_run_ms, JW_NO_OFF, 1,
               3600000, 0),
};
static const struct jw_object cgroup_obj =
    JW_TABLE(tenant_t, cgroup_fields, NULL);

static const struct jw_field recycle_fields[] = {
    JW_INTEGER("requests", tenant_t, recycle_requests, JW_NO_OFF, 1, INT32_MAX,
               0),
    JW_INTEGER("seconds", tenant_t, recycle_seconds, JW_NO_OFF, 1, 86400 * 365,
               0),
};
static const struct jw_object recycle_obj =
    JW_TABLE(tenant_t, recycle_fields, NULL);

static int check_tenant(struct jw_walk *w, yajl_val v, void *dst) {
  (void)v;
  tenant_t *t = dst;
  if (t->uid == 0 || t->gid == 0)
    return jw_fail(w, "uid and gid must not be 0 (root)");
  if (t->n_allow_uids == 0 && t->n_allow_gids == 0)
    return jw_fail(w, "allow: name at least one peer uid or gid");
  return 0;
}

static const struct jw_field tenant_fields[] = {
    JW_VALIDATED("name", tenant_t, name, JW_REQUIRED, valid_name),
    JW_UINT32("uid", tenant_t, uid, JW_NO_OFF, JW_REQUIRED),
    JW_UINT32("gid", tenant_t, gid, JW_NO_OFF, JW_REQUIRED),
    JW_STRING("bundle", tenant_t, bundle, JW_NONEMPTY),
    JW_FLAT("allow", JW_NO_OFF, JW_REQUIRED, &allow_obj),
    JW_NESTED("limits", tenant_t, limits, limits_t,
              JW_HAS(tenant_t, has_limits), 0, &limits_obj),
    JW_FLAT("cgroup", JW_HAS(tenant_t, has_cgroup), 0, &cgroup_obj),
    JW_FLAT("recycle", JW_HAS(tenant_t, has_recycle), 0, &recycle_obj),
};
static const struct jw_object tenant_obj =
    JW_TABLE(tenant_t, tenant_fields, check_tenant);

static int check_config(struct jw_walk *w, yajl_val v, void *dst) {
  (void)v;
  struct serve_config *c = dst;
  for (size_t i = 0; i < c->n_tenants; i++)
    for (size_t j = 0; j < i; j++) {
      const tenant_t *a = &c->tenants[i], *b = &c->tenants[j];
      size_t mark = jw_push_key(w, "tenants");
      jw_push_index(w, i);
      if (strcmp(a->name, b->name) == 0)
        return jw_fail(w, "name: \"%s\" is also tenants[%zu]'s", a->name, j);
      if (a->uid == b->uid || a->gid == b->gid)
        return jw_fail(w,
                       "uid/gid: shared with tenants[%zu]: each tenant needs "
                       "its own",
                       j);
      jw_pop(w, mark);
    }
  return 0;
}

static const struct jw_field config_fields[] = {
    JW_INTEGER("max_frame_bytes", struct serve_config, max_frame_bytes,
               JW_HAS(struct serve_config, has_max_frame_bytes), 64, 64 << 20,
               0),
    JW_STRING("bundle", struct serve_config, bundle, JW_NONEMPTY),
    JW_INTEGER("socket_mode", struct serve_config, socket_mode,
               JW_HAS(struct serve_config, has_socket_mode), 0, 0777, 0),
    JW_LIST("tenants", struct serve_config, tenants, n_tenants, tenant_t,
            JW_REQUIRED | JW_NONEMPTY, &tenant_obj),
};
static const struct jw_object config_obj =
    JW_TABLE(struct serve_config, config_fields, check_config);

static void defaults(struct serve_config *c) {
  if (!c->has_max_frame_bytes)
    c->max_frame_bytes = 2 << 20;
  if (!c->has_socket_mode)
    c->socket_mode = 0600;
  for (size_t i = 0; i < c->n_tenants; i++) {
    limits_t *l = &c->tenants[i].limits;
    /* Unset fields read as 0: the defaults of coil py. */
    if (!l->timeout_ms)
      l->timeout_ms = 5000;
    if (!l->max_timeout_ms)
      l->max_timeout_ms = l->timeout_ms > 30000 ? l->timeout_ms : 30000;
    if (!l->memory_mb)
      l->memory_mb = 256;
    if (!l->max_memory_mb)
      l->max_memory_mb = l->memory_mb;
    if (!l->output_bytes)
      l->output_bytes = 1 << 20;
    if (!l->max_output_bytes)
      l->max_output_bytes = l->output_bytes;
    if (!l->cpu_seconds)
      l->cpu_seconds = 1;
    if (!l->in_flight)
      l->in_flight = 4;
    if (!l->has_queue)
      l->queue = 64;
    if (!c->tenants[i].has_demote_seconds)
      c->tenants[i].demote_seconds = 30;
    if (!c->tenants[i].demote_run_ms)
      c->tenants[i].demote_run_ms = 200;
  }
}

int serve_config_load(const char *path, struct serve_config *out,
                      struct coil_error *err) {
  *out = (struct serve_config){0};
  cleanup_free char *buf = NULL;
  size_t len = 0;
  if (read_file_or_stdin(path, CONFIG_MAX, false, &buf, &len, err) < 0)
    return coil_error_prefix(err, "--config");
  char yerr[512] = "";
  yajl_val tree = json_tree_parse(buf, len, yerr, sizeof yerr, NULL);
  if (!tree) {
    for (char *p = yerr; *p; p++)
      if (*p == '\n')
        *p = ' ';
    return coil_error_set(err, EINVAL, "%s: invalid JSON: %s", path, yerr);
  }
  struct jw_walk w = {.err = err};
  int r = jw_read_object(&w, &config_obj, tree, out);
  yajl_tree_free(tree);
  if (r < 0) {
    coil_error_prefix(err, "%s", path);
    serve_config_free(out);
    return -1;
  }
  defaults(out);
  return 0;
}

void serve_config_free(struct serve_config *c) {
  jw_free_object(&config_obj, c);
  *c = (struct serve_config){0};
}
