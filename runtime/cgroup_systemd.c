/* "slice:prefix:name" and the unit properties of the systemd cgroup driver;
 * see cgroup_systemd.h. No bus here, so the unit tests need no systemd. */
#include "cgroup_systemd.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

#define DEFAULT_SLICE "system.slice"
#define DEFAULT_PREFIX "coil"
#define SLICE_SUFFIX ".slice"
/* systemd's longest unit name (UNIT_NAME_MAX - 1). */
#define UNIT_NAME_MAX 255
#define CPU_PERIOD_DEFAULT 100000 /* µs, the kernel's default */
/* systemd takes CPUQuotaPerSecUSec in 10 ms steps; runc rounds up to one. */
#define QUOTA_STEP 10000
/* A bitmask of more CPUs (or nodes) than this is surely a typo. */
#define CPUSET_MAX 8192

static int no_memory(struct coil_error *err) {
  return coil_error_sys(err, ENOMEM, "linux.cgroupsPath");
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && !strcmp(s + n - m, suffix);
}

/* The characters systemd takes in a unit name but for the escape
 * character '\\' (coil writes names into paths and its state as they
 * are) and ':' (the separator here). */
static bool unit_chars(const char *s) {
  return s[strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789_.-@")] == '\0';
}

int systemd_expand_slice(const char *slice, char **out,
                         struct coil_error *err) {
  *out = NULL;
  if (!ends_with(slice, SLICE_SUFFIX) || !unit_chars(slice) ||
      strlen(slice) > UNIT_NAME_MAX)
    return coil_error_set(err, EINVAL,
                          "linux.cgroupsPath: slice \"%s\" is not a slice unit "
                          "name (\"name.slice\", dashes for nesting)",
                          slice);
  if (!strcmp(slice, "-" SLICE_SUFFIX)) {
    *out = strdup("");
    return *out ? 0 : no_memory(err);
  }
  size_t stem = strlen(slice) - strlen(SLICE_SUFFIX);
  if (stem == 0 || slice[0] == '-' || slice[stem - 1] == '-' ||
      memmem(slice, stem, "--", 2))
    return coil_error_set(err, EINVAL,
                          "linux.cgroupsPath: slice \"%s\": empty name or "
                          "misplaced '-'",
                          slice);
  /* Each '-' in the stem closes a parent: "a-b.slice" is in "a.slice". */
  size_t parts = 1;
  for (size_t i = 0; i < stem; i++)
    parts += slice[i] == '-';
  size_t cap = parts * (stem + sizeof SLICE_SUFFIX + 1) + 1;
  char *p = malloc(cap);
  if (!p)
    return no_memory(err);
  size_t o = 0;
  for (size_t i = 0; i <= stem; i++)
    if (i == stem || slice[i] == '-')
      o += (size_t)snprintf(p + o, cap - o, "%s%.*s" SLICE_SUFFIX, o ? "/" : "",
                            (int)i, slice);
  *out = p;
  return 0;
}

void systemd_unit_free(struct systemd_unit *u) {
  free(u->slice);
  free(u->unit);
  free(u->path);
  *u = (struct systemd_unit){0};
}

bool systemd_unit_is_slice(const struct systemd_unit *u) {
  return ends_with(u->unit, SLICE_SUFFIX);
}

int systemd_unit_parse(const char *cgroups_path, const char *id,
                       struct systemd_unit *u, struct coil_error *err) {
  *u = (struct systemd_unit){0};
  const char *slice = "", *prefix = DEFAULT_PREFIX, *name = id;
  cleanup_free char *copy = NULL, *parent = NULL, *own = NULL;
  if (cgroups_path && *cgroups_path) {
    copy = strdup(cgroups_path);
    if (!copy)
      return no_memory(err);
    char *c1 = strchr(copy, ':');
    char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2 || strchr(c2 + 1, ':'))
      return coil_error_set(err, EINVAL,
                            "linux.cgroupsPath \"%s\": with --systemd-cgroup "
                            "expected \"slice:prefix:name\"",
                            cgroups_path);
    *c1 = *c2 = '\0';
    slice = copy;
    prefix = c1 + 1;
    name = c2 + 1;
  }
  if (!name || !*name || !unit_chars(prefix) || !unit_chars(name))
    return coil_error_set(err, EINVAL,
                          "linux.cgroupsPath \"%s\": the name must be "
                          "non-empty and prefix and name only letters, "
                          "digits and \"_.-@\"",
                          cgroups_path ? cgroups_path : "");
  /* As runc: "prefix-name.scope" even for an empty prefix. */
  int r = ends_with(name, SLICE_SUFFIX)
              ? asprintf(&u->unit, "%s", name)
              : asprintf(&u->unit, "%s-%s.scope", prefix, name);
  if (r < 0) {
    u->unit = NULL;
    return no_memory(err);
  }
  if (strlen(u->unit) > UNIT_NAME_MAX) {
    coil_error_set(err, EINVAL,
                   "linux.cgroupsPath: unit name \"%s\" is longer than %d",
                   u->unit, UNIT_NAME_MAX);
    goto fail;
  }
  u->slice = strdup(*slice ? slice : DEFAULT_SLICE);
  if (!u->slice) {
    no_memory(err);
    goto fail;
  }
  /* A slice unit's own name must expand as well (its parents are in it). */
  if (systemd_expand_slice(u->slice, &parent, err) < 0 ||
      (systemd_unit_is_slice(u) &&
       systemd_expand_slice(u->unit, &own, err) < 0))
    goto fail;
  if (asprintf(&u->path, "%s%s%s", parent, *parent ? "/" : "", u->unit) < 0) {
    u->path = NULL;
    no_memory(err);
    goto fail;
  }
  return 0;
fail:
  systemd_unit_free(u);
  return -1;
}

void systemd_props_free(struct systemd_props *p) {
  for (size_t i = 0; i < p->n; i++)
    free(p->v[i].bytes);
  p->n = 0;
}

static void add_u64(struct systemd_props *p, const char *name, uint64_t v) {
  p->v[p->n++] = (struct systemd_prop){.name = name, .type = SDP_U64, .u64 = v};
}

/* OCI's -1 (and for pids any value <= 0) is "no limit": systemd's
 * "infinity", UINT64_MAX. */
static uint64_t limit(int64_t v) { return v < 0 ? UINT64_MAX : (uint64_t)v; }

/* "0-3,8" -> a little-endian bitmask, byte k holding bits 8k..8k+7: the
 * form AllowedCPUs and AllowedMemoryNodes take. */
static int cpuset_bits(const char *field, const char *list,
                       struct systemd_props *p, const char *name,
                       struct coil_error *err) {
  unsigned char bits[CPUSET_MAX / 8] = {0};
  size_t used = 0;
  for (const char *s = list; *s;) {
    char *end;
    unsigned long lo = strtoul(s, &end, 10), hi = lo;
    if (end == s || *s == '-' || *s == '+')
      break;
    if (*end == '-') {
      s = end + 1;
      hi = strtoul(s, &end, 10);
      if (end == s || *s == '-' || *s == '+')
        break;
    }
    if (lo > hi || hi >= CPUSET_MAX)
      return coil_error_set(err, EINVAL,
                            "%s \"%s\": range %lu-%lu (at most %d)", field,
                            list, lo, hi, CPUSET_MAX - 1);
    for (unsigned long i = lo; i <= hi; i++)
      bits[i / 8] |= (unsigned char)(1u << (i % 8));
    if (hi / 8 + 1 > used)
      used = hi / 8 + 1;
    s = end;
    if (*s == ',' && s[1])
      s++;
    else if (*s)
      break;
    if (!*s) {
      unsigned char *copy = malloc(used);
      if (!copy)
        return coil_error_sys(err, ENOMEM, "%s", field);
      memcpy(copy, bits, used);
      p->v[p->n++] = (struct systemd_prop){
          .name = name, .type = SDP_BYTES, .bytes = copy, .n_bytes = used};
      return 0;
    }
  }
  return coil_error_set(
      err, EINVAL, "%s \"%s\": expected a list like \"0-3,8\"", field, list);
}

/* The same mapping runc's systemd drivers use, so a config gets the same
 * unit from either runtime. */
int systemd_resource_props(const struct coil_resources *res, bool v2,
                           struct systemd_props *out, struct coil_error *err) {
  *out = (struct systemd_props){0};
  if (!res)
    return 0;
  if (res->has_memory_limit)
    add_u64(out, v2 ? "MemoryMax" : "MemoryLimit", limit(res->memory_limit));
  if (v2 && res->has_memory_reservation)
    add_u64(out, "MemoryLow", limit(res->memory_reservation));
  /* OCI's swap is memory+swap, v2's swap alone; only a pair that converts
   * (the cgroup file write reports one that does not). */
  if (v2 && res->has_memory_swap && res->memory_swap != 0) {
    if (res->memory_swap == -1)
      add_u64(out, "MemorySwapMax", UINT64_MAX);
    else if (res->has_memory_limit && res->memory_limit >= 0 &&
             res->memory_swap >= res->memory_limit)
      add_u64(out, "MemorySwapMax",
              (uint64_t)(res->memory_swap - res->memory_limit));
  }
  if (res->has_pids_limit)
    add_u64(out, "TasksMax",
            res->pids_limit > 0 ? (uint64_t)res->pids_limit : UINT64_MAX);
  if (res->has_cpu_shares && res->cpu_shares) {
    if (v2) {
      /* v1 shares [2, 262144] onto v2 weights [1, 10000], as cgroup_v2.c. */
      uint64_t s = res->cpu_shares < 2        ? 2
                   : res->cpu_shares > 262144 ? 262144
                                              : res->cpu_shares;
      add_u64(out, "CPUWeight", 1 + ((s - 2) * 9999) / 262142);
    } else {
      add_u64(out, "CPUShares", res->cpu_shares);
    }
  }
  if (res->has_cpu_period && res->cpu_period)
    add_u64(out, "CPUQuotaPeriodUSec", res->cpu_period);
  if ((res->has_cpu_quota && res->cpu_quota != 0) ||
      (res->has_cpu_period && res->cpu_period)) {
    uint64_t per_sec = UINT64_MAX;
    if (res->has_cpu_quota && res->cpu_quota > 0) {
      uint64_t period = res->has_cpu_period && res->cpu_period
                            ? res->cpu_period
                            : CPU_PERIOD_DEFAULT;
      per_sec = (uint64_t)res->cpu_quota * 1000000 / period;
      if (per_sec % QUOTA_STEP)
        per_sec = (per_sec / QUOTA_STEP + 1) * QUOTA_STEP;
    }
    add_u64(out, "CPUQuotaPerSecUSec", per_sec);
  }
  if (v2 && res->cpu_cpus &&
      cpuset_bits("linux.resources.cpu.cpus", res->cpu_cpus, out, "AllowedCPUs",
                  err) < 0)
    goto fail;
  if (v2 && res->cpu_mems &&
      cpuset_bits("linux.resources.cpu.mems", res->cpu_mems, out,
                  "AllowedMemoryNodes", err) < 0)
    goto fail;
  return 0;
fail:
  systemd_props_free(out);
  return -1;
}
