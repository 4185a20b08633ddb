/* events: the container's cgroup stats and OOM kills as runc prints them,
 * one JSON object a line. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>

#include "cgroup.h"
#include "cgroup_stats.h"
#include "cleanup.h"
#include "cmd.h"
#include "container.h"
#include "deadline.h"
#include "log.h"

/* How often the OOM counter is read between two stats lines. */
#define OOM_CHECK_MS 100

static void put_str(yajl_gen g, const char *s) {
  yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

/* A uint64 as a JSON number (yajl's integers are signed). */
static void put_u64(yajl_gen g, const char *key, unsigned long long v) {
  char num[24];
  int n = snprintf(num, sizeof num, "%llu", v);
  put_str(g, key);
  yajl_gen_number(g, num, (size_t)n);
}

/* Go's omitempty: a zero is left out. */
static void put_u64_nz(yajl_gen g, const char *key, unsigned long long v) {
  if (v)
    put_u64(g, key, v);
}

static void put_u64_array(yajl_gen g, const char *key,
                          const unsigned long long *v, size_t n) {
  if (!n)
    return;
  put_str(g, key);
  yajl_gen_array_open(g);
  for (size_t i = 0; i < n; i++) {
    char num[24];
    int len = snprintf(num, sizeof num, "%llu", v[i]);
    yajl_gen_number(g, num, (size_t)len);
  }
  yajl_gen_array_close(g);
}

static void put_uint_array(yajl_gen g, const char *key, const unsigned *v,
                           size_t n) {
  if (!n)
    return;
  put_str(g, key);
  yajl_gen_array_open(g);
  for (size_t i = 0; i < n; i++)
    yajl_gen_integer(g, v[i]);
  yajl_gen_array_close(g);
}

static void put_cpu(yajl_gen g, const struct coil_cgroup_stats *s) {
  put_str(g, "cpu");
  yajl_gen_map_open(g);
  put_str(g, "usage");
  yajl_gen_map_open(g);
  put_u64_nz(g, "total", s->cpu.total);
  put_u64_array(g, "percpu", s->cpu.percpu, s->cpu.n_percpu);
  put_u64_array(g, "percpu_kernel", s->cpu.percpu_kernel,
                s->cpu.n_percpu_split);
  put_u64_array(g, "percpu_user", s->cpu.percpu_user, s->cpu.n_percpu_split);
  put_u64(g, "kernel", s->cpu.kernel);
  put_u64(g, "user", s->cpu.user);
  yajl_gen_map_close(g);
  put_str(g, "throttling");
  yajl_gen_map_open(g);
  put_u64_nz(g, "periods", s->cpu.periods);
  put_u64_nz(g, "throttledPeriods", s->cpu.throttled_periods);
  put_u64_nz(g, "throttledTime", s->cpu.throttled_time);
  yajl_gen_map_close(g);
  yajl_gen_map_close(g);
}

static void put_cpuset(yajl_gen g, const struct coil_cgroup_stats *s) {
  put_str(g, "cpuset");
  yajl_gen_map_open(g);
  put_uint_array(g, "cpus", s->cpuset.cpus, s->cpuset.n_cpus);
  put_u64(g, cg_stats_cpuset_flags[0], s->cpuset.flags[0]);
  put_uint_array(g, "mems", s->cpuset.mems, s->cpuset.n_mems);
  for (size_t i = 1; i < 8; i++)
    put_u64(g, cg_stats_cpuset_flags[i], s->cpuset.flags[i]);
  put_str(g, "sched_relax_domain_level");
  yajl_gen_integer(g, s->cpuset.sched_relax_domain_level);
  yajl_gen_map_close(g);
}

static void put_mem_entry(yajl_gen g, const char *key,
                          const struct cg_stats_mem *m) {
  put_str(g, key);
  yajl_gen_map_open(g);
  put_u64(g, "limit", m->limit);
  put_u64_nz(g, "usage", m->usage);
  put_u64_nz(g, "max", m->max);
  put_u64(g, "failcnt", m->failcnt);
  yajl_gen_map_close(g);
}

static void put_memory(yajl_gen g, const struct coil_cgroup_stats *s) {
  put_str(g, "memory");
  yajl_gen_map_open(g);
  put_u64_nz(g, "cache", s->memory.cache);
  put_mem_entry(g, "usage", &s->memory.usage);
  put_mem_entry(g, "swap", &s->memory.swap);
  put_mem_entry(g, "kernel", &s->memory.kernel);
  put_mem_entry(g, "kernelTCP", &s->memory.kernel_tcp);
  if (s->memory.n_raw) {
    put_str(g, "raw");
    yajl_gen_map_open(g);
    for (size_t i = 0; i < s->memory.n_raw; i++)
      put_u64(g, s->memory.raw[i].key, s->memory.raw[i].value);
    yajl_gen_map_close(g);
  }
  yajl_gen_map_close(g);
}

/* runc's types.Blkio: each table with entries, each entry's zero fields
 * left out as Go's omitempty does. */
static void put_blkio(yajl_gen g, const struct coil_cgroup_stats *s) {
  put_str(g, "blkio");
  yajl_gen_map_open(g);
  for (size_t t = 0; t < CG_IO_TABLES; t++) {
    if (!s->io[t].n)
      continue;
    put_str(g, cg_stats_io_names[t]);
    yajl_gen_array_open(g);
    for (size_t i = 0; i < s->io[t].n; i++) {
      const struct cg_stats_io_entry *e = &s->io[t].e[i];
      yajl_gen_map_open(g);
      put_u64_nz(g, "major", e->major);
      put_u64_nz(g, "minor", e->minor);
      if (e->op[0]) {
        put_str(g, "op");
        put_str(g, e->op);
      }
      put_u64_nz(g, "value", e->value);
      yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
  }
  yajl_gen_map_close(g);
}

/* runc's types.Stats; coil drives no rdt or network controller, so those
 * are empty as in runc without them. */
static void put_stats(yajl_gen g, const struct coil_cgroup_stats *s) {
  yajl_gen_map_open(g);
  put_cpu(g, s);
  put_cpuset(g, s);
  put_memory(g, s);
  put_str(g, "pids");
  yajl_gen_map_open(g);
  put_u64_nz(g, "current", s->pids.current);
  put_u64_nz(g, "limit", s->pids.limit);
  yajl_gen_map_close(g);
  put_blkio(g, s);
  put_str(g, "hugetlb");
  yajl_gen_map_open(g);
  for (size_t i = 0; i < s->n_hugetlb; i++) {
    put_str(g, s->hugetlb[i].size);
    yajl_gen_map_open(g);
    put_u64_nz(g, "usage", s->hugetlb[i].usage);
    put_u64_nz(g, "max", s->hugetlb[i].max);
    put_u64(g, "failcnt", s->hugetlb[i].failcnt);
    yajl_gen_map_close(g);
  }
  yajl_gen_map_close(g);
  put_str(g, "intel_rdt");
  yajl_gen_map_open(g);
  yajl_gen_map_close(g);
  put_str(g, "network_interfaces");
  yajl_gen_null(g);
  yajl_gen_map_close(g);
}

/* Prints {"type":type,"id":id[,"data":stats]} and a newline. */
static int print_event(const char *type, const char *id,
                       const struct coil_cgroup_stats *s) {
  yajl_gen g = yajl_gen_alloc(NULL);
  if (!g)
    return -1;
  yajl_gen_map_open(g);
  put_str(g, "type");
  put_str(g, type);
  put_str(g, "id");
  put_str(g, id);
  if (s) {
    put_str(g, "data");
    put_stats(g, s);
  }
  yajl_gen_map_close(g);
  const unsigned char *buf;
  size_t len;
  int r = yajl_gen_get_buf(g, &buf, &len) == yajl_gen_status_ok &&
                  printf("%.*s\n", (int)len, (const char *)buf) > 0 &&
                  fflush(stdout) == 0
              ? 0
              : -1;
  yajl_gen_free(g);
  return r;
}

static int print_stats(const struct coil_cgroup *cg, const char *id,
                       struct coil_error *err) {
  struct coil_cgroup_stats s;
  if (cgroup_stats(cg, &s, err) < 0)
    return -1;
  int r = print_event("stats", id, &s);
  cgroup_stats_free(&s);
  if (r < 0)
    return coil_error_sys(err, errno ? errno : EIO, "events: write stdout");
  return 0;
}

/* A Go duration as runc's --interval takes it ("5s", "1m30s", "250ms",
 * "1.5h"), in milliseconds (rounded up, so a positive one is never 0). */
static int parse_duration(const char *s, long long *ms) {
  static const struct {
    const char *unit;
    double ms;
  } units[] = {{"ns", 1e-6}, {"us", 1e-3}, {"\xc2\xb5s", 1e-3}, {"ms", 1},
               {"s", 1e3},   {"m", 60e3},  {"h", 3600e3}};
  double total = 0;
  if (!strcmp(s, "0"))
    goto done;
  if (!*s)
    return -1;
  while (*s) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0 || *s == '-' || *s == '+')
      return -1;
    size_t best = 0, best_len = 0;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
      size_t n = strlen(units[i].unit);
      if (!strncmp(end, units[i].unit, n) && n > best_len) {
        best = i;
        best_len = n;
      }
    }
    if (!best_len)
      return -1;
    total += v * units[best].ms;
    s = end + best_len;
  }
done:
  if (total > 1e15)
    return -1;
  *ms = (long long)total;
  if ((double)*ms < total)
    (*ms)++;
  return 0;
}

/* Stats every interval and an "oom" line per OOM kill, until init exits. */
static int stream(const struct coil_cgroup *cg, int pidfd, const char *id,
                  long long interval_ms) {
  unsigned long long ooms = cgroup_oom_kills(cg);
  long long next = deadline_after_ms(deadline_now_ms(), interval_ms);
  for (;;) {
    struct pollfd pf = {.fd = pidfd, .events = POLLIN};
    int wait = deadline_slice_ms(next, deadline_now_ms(), OOM_CHECK_MS);
    if (poll(&pf, 1, wait) < 0 && errno != EINTR) {
      log_error("events: poll: %s", strerror(errno));
      return EXIT_ERR;
    }
    /* Read after an exit too: an OOM kill of init ends the container. */
    for (unsigned long long n = cgroup_oom_kills(cg); ooms < n; ooms++)
      if (print_event("oom", id, NULL) < 0)
        return EXIT_ERR;
    if (pf.revents)
      return EXIT_OK;
    if (deadline_slice_ms(next, deadline_now_ms(), -1) == 0) {
      struct coil_error err = {0};
      /* As runc: a failed read is logged, the stream goes on. */
      if (print_stats(cg, id, &err) < 0) {
        if (err.err == EPIPE)
          return EXIT_ERR;
        log_error("%s", err.msg);
      }
      next = deadline_after_ms(deadline_now_ms(), interval_ms);
    }
  }
}

int cmd_events(const struct global_opts *g, int argc, char **argv) {
  enum { OPT_INTERVAL = 256, OPT_STATS };
  static const struct option opts[] = {
      {"interval", required_argument, NULL, OPT_INTERVAL},
      {"stats", no_argument, NULL, OPT_STATS},
      {NULL, 0, NULL, 0}};
  long long interval_ms = 5000;
  bool once = false;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (c == OPT_STATS) {
      once = true;
    } else if (c == OPT_INTERVAL) {
      if (parse_duration(optarg, &interval_ms) < 0)
        return cmd_usage_error("events",
                               "--interval: expected a duration such as 5s "
                               "or 250ms, got \"%s\"",
                               optarg);
      if (interval_ms <= 0)
        return cmd_usage_error("events", "--interval: must be greater than 0");
    } else {
      return cmd_usage_error("events", "unknown or incomplete option \"%s\"",
                             argv[optind - 1]);
    }
  }
  if (optind != argc - 1)
    return cmd_usage_error("events", "expected exactly one container ID");
  const char *id = argv[optind];
  struct coil_error err = {0};
  struct coil_cgroup *cg = NULL;
  int pidfd = -1;
  if (container_watch(g->root, id, &cg, &pidfd, &err) < 0) {
    log_error("%s", err.msg);
    return EXIT_ERR;
  }
  int code = EXIT_OK;
  if (!once) {
    code = stream(cg, pidfd, id, interval_ms);
  } else if (print_stats(cg, id, &err) < 0) {
    log_error("%s", err.msg);
    code = EXIT_ERR;
  }
  cgroup_free(cg);
  close(pidfd);
  return code;
}
