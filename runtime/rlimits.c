#include "rlimits.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>

#include "cleanup.h"

static const struct {
  const char *name;
  int resource;
} rlimit_names[] = {
    {"RLIMIT_CPU", RLIMIT_CPU},
    {"RLIMIT_FSIZE", RLIMIT_FSIZE},
    {"RLIMIT_DATA", RLIMIT_DATA},
    {"RLIMIT_STACK", RLIMIT_STACK},
    {"RLIMIT_CORE", RLIMIT_CORE},
    {"RLIMIT_RSS", RLIMIT_RSS},
    {"RLIMIT_NPROC", RLIMIT_NPROC},
    {"RLIMIT_NOFILE", RLIMIT_NOFILE},
    {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},
    {"RLIMIT_AS", RLIMIT_AS},
    {"RLIMIT_LOCKS", RLIMIT_LOCKS},
    {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
    {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE},
    {"RLIMIT_NICE", RLIMIT_NICE},
    {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},
    {"RLIMIT_RTTIME", RLIMIT_RTTIME},
};

int rlimits_resource(const char *name) {
  for (size_t i = 0; i < sizeof rlimit_names / sizeof rlimit_names[0]; i++)
    if (strcmp(name, rlimit_names[i].name) == 0)
      return rlimit_names[i].resource;
  return -1;
}

/* The config writes "unlimited" as UINT64_MAX. */
static rlim_t to_rlim(uint64_t v) {
  return v == UINT64_MAX ? RLIM_INFINITY : (rlim_t)v;
}

static const char *limit_str(uint64_t v, char *buf, size_t len) {
  if (v == UINT64_MAX || v == (uint64_t)RLIM_INFINITY)
    snprintf(buf, len, "unlimited");
  else
    snprintf(buf, len, "%" PRIu64, v);
  return buf;
}

int rlimits_parse(const struct coil_process *p, struct coil_rlimits *out,
                  struct coil_error *err) {
  bool seen[RLIM_NLIMITS] = {false};
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < p->n_rlimits; i++) {
    const struct coil_rlimit *rl = &p->rlimits[i];
    if (!rl->type)
      return coil_error_set(err, EINVAL, "process.rlimits[%zu].type: missing",
                            i);
    int res = rlimits_resource(rl->type);
    if (res < 0)
      return coil_error_set(err, EINVAL,
                            "process.rlimits[%zu].type: unknown rlimit \"%s\"",
                            i, rl->type);
    if (seen[res])
      return coil_error_set(
          err, EINVAL, "process.rlimits[%zu].type: duplicate %s", i, rl->type);
    seen[res] = true;
    if (to_rlim(rl->soft) > to_rlim(rl->hard)) {
      char soft[24], hard[24];
      return coil_error_set(err, EINVAL,
                            "process.rlimits[%zu]: soft limit %s exceeds hard "
                            "limit %s",
                            i, limit_str(rl->soft, soft, sizeof soft),
                            limit_str(rl->hard, hard, sizeof hard));
    }
    /* Stored in config order, so index i here is process.rlimits[i]. */
    out->resource[out->n] = res;
    out->lim[out->n] = (struct rlimit){.rlim_cur = to_rlim(rl->soft),
                                       .rlim_max = to_rlim(rl->hard)};
    snprintf(out->name[out->n], sizeof out->name[out->n], "%s", rl->type);
    out->n++;
  }
  return 0;
}

/* NOFILE cannot go above fs.nr_open even with CAP_SYS_RESOURCE; 0 if the
 * value cannot be read. */
static uint64_t nr_open(void) {
  cleanup_fclose FILE *f = fopen("/proc/sys/fs/nr_open", "re");
  uint64_t v = 0;
  if (!f || fscanf(f, "%" SCNu64, &v) != 1)
    return 0;
  return v;
}

/* setrlimit's EPERM has two causes; say which one applies. */
static int eperm_error(const struct coil_rlimits *r, size_t i,
                       struct coil_error *err) {
  char want[24], have[24];
  uint64_t max = r->lim[i].rlim_max;
  limit_str(max, want, sizeof want);
  uint64_t open_max = r->resource[i] == RLIMIT_NOFILE ? nr_open() : 0;
  if (open_max && max > open_max)
    return coil_error_set(err, EPERM,
                          "process.rlimits[%zu]: setrlimit(%s): hard limit %s "
                          "exceeds fs.nr_open (%" PRIu64 ")",
                          i, r->name[i], want, open_max);
  struct rlimit cur;
  if (getrlimit(r->resource[i], &cur) == 0 && max > cur.rlim_max)
    return coil_error_set(err, EPERM,
                          "process.rlimits[%zu]: setrlimit(%s): cannot raise "
                          "the hard limit from %s to %s without "
                          "CAP_SYS_RESOURCE",
                          i, r->name[i],
                          limit_str(cur.rlim_max, have, sizeof have), want);
  return coil_error_sys(err, EPERM, "process.rlimits[%zu]: setrlimit(%s)", i,
                        r->name[i]);
}

/* True when this process may raise hard limits (CAP_SYS_RESOURCE effective
 * in the initial user namespace, which is where create runs). */
static bool can_raise_hard(void) {
  cap_t caps = cap_get_proc();
  cap_flag_value_t v = CAP_CLEAR;
  if (caps) {
    cap_get_flag(caps, CAP_SYS_RESOURCE, CAP_EFFECTIVE, &v);
    cap_free(caps);
  }
  return v == CAP_SET;
}

int rlimits_check(const struct coil_rlimits *r, struct coil_error *err) {
  bool privileged = can_raise_hard();
  for (size_t i = 0; i < r->n; i++) {
    struct rlimit cur;
    if (getrlimit(r->resource[i], &cur) < 0)
      continue;
    uint64_t open_max = r->resource[i] == RLIMIT_NOFILE ? nr_open() : 0;
    bool too_high = open_max && r->lim[i].rlim_max > open_max;
    if (too_high || (!privileged && r->lim[i].rlim_max > cur.rlim_max))
      return eperm_error(r, i, err);
  }
  return 0;
}

int rlimits_apply(const struct coil_rlimits *r, struct coil_error *err) {
  for (size_t i = 0; i < r->n; i++) {
    if (setrlimit(r->resource[i], &r->lim[i]) == 0)
      continue;
    if (errno == EPERM)
      return eperm_error(r, i, err);
    return coil_error_sys(err, errno, "process.rlimits[%zu]: setrlimit(%s)", i,
                          r->name[i]);
  }
  return 0;
}
