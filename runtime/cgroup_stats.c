#include "cgroup_stats.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup_driver.h"
#include "cleanup.h"

const char *const cg_stats_cpuset_flags[8] = {
    "cpu_exclusive",   "mem_hardwall",       "mem_exclusive",
    "memory_migrate",  "memory_spread_page", "memory_spread_slab",
    "memory_pressure", "sched_load_balance"};

const char *const cg_stats_io_names[CG_IO_TABLES] = {
    "ioServiceBytesRecursive", "ioServicedRecursive", "ioQueueRecursive",
    "ioServiceTimeRecursive",  "ioWaitTimeRecursive", "ioMergedRecursive",
    "ioTimeRecursive",         "sectorsRecursive"};

static bool is_v2(const struct cg_dir *d) { return d->drv == &cg_driver_v2; }

/* dir/file as one number; "max" is unlimited; a missing or unreadable file
 * is 0. */
static unsigned long long read_u64(const char *dir, const char *file) {
  struct coil_error err;
  cleanup_free char *text = NULL;
  if (cg_read(dir, file, &text, &err) < 0)
    return 0;
  if (!strcmp(text, "max"))
    return CG_STATS_UNLIMITED;
  return strtoull(text, NULL, 10);
}

/* "name.suffix" of dir, for the v1 families memory.*, memory.memsw.*, ... */
static unsigned long long read_of(const char *dir, const char *prefix,
                                  const char *suffix) {
  char file[128];
  snprintf(file, sizeof file, "%s.%s", prefix, suffix);
  return read_u64(dir, file);
}

static int read_raw(const char *dir, struct coil_cgroup_stats *s,
                    struct coil_error *err) {
  cleanup_free char *text = NULL;
  if (cg_read(dir, "memory.stat", &text, err) < 0)
    return err->err == ENOENT ? 0 : -1;
  for (char *save, *line = strtok_r(text, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save)) {
    char *sp = strchr(line, ' ');
    if (!sp)
      continue;
    *sp = '\0';
    struct cg_stats_kv *v =
        reallocarray(s->memory.raw, s->memory.n_raw + 1, sizeof *v);
    if (!v)
      return coil_error_sys(err, ENOMEM, "memory.stat");
    s->memory.raw = v;
    char *key = strdup(line);
    if (!key)
      return coil_error_sys(err, ENOMEM, "memory.stat");
    v[s->memory.n_raw++] =
        (struct cg_stats_kv){.key = key, .value = strtoull(sp + 1, NULL, 10)};
  }
  return 0;
}

static unsigned long long raw_value(const struct coil_cgroup_stats *s,
                                    const char *key) {
  for (size_t i = 0; i < s->memory.n_raw; i++)
    if (!strcmp(s->memory.raw[i].key, key))
      return s->memory.raw[i].value;
  return 0;
}

static void v1_mem_entry(const char *dir, const char *prefix,
                         struct cg_stats_mem *m) {
  m->usage = read_of(dir, prefix, "usage_in_bytes");
  m->max = read_of(dir, prefix, "max_usage_in_bytes");
  m->failcnt = read_of(dir, prefix, "failcnt");
  m->limit = read_of(dir, prefix, "limit_in_bytes");
}

static int memory_stats(const struct cg_dir *d, struct coil_cgroup_stats *s,
                        struct coil_error *err) {
  if (read_raw(d->path, s, err) < 0)
    return -1;
  if (!is_v2(d)) {
    s->memory.cache = raw_value(s, "cache");
    v1_mem_entry(d->path, "memory", &s->memory.usage);
    v1_mem_entry(d->path, "memory.memsw", &s->memory.swap);
    v1_mem_entry(d->path, "memory.kmem", &s->memory.kernel);
    v1_mem_entry(d->path, "memory.kmem.tcp", &s->memory.kernel_tcp);
    return 0;
  }
  s->memory.cache = raw_value(s, "file");
  struct cg_stats_mem *u = &s->memory.usage, *w = &s->memory.swap;
  u->usage = read_u64(d->path, "memory.current");
  u->limit = read_u64(d->path, "memory.max");
  u->max = read_u64(d->path, "memory.peak");
  /* v2 counts swap alone; reported as memory+swap, as v1 does (and runc). */
  w->usage = read_u64(d->path, "memory.swap.current") + u->usage;
  w->limit = read_u64(d->path, "memory.swap.max");
  if (w->limit != CG_STATS_UNLIMITED && u->limit != CG_STATS_UNLIMITED)
    w->limit += u->limit;
  else
    w->limit = CG_STATS_UNLIMITED;
  return 0;
}

/* The value after "key " on a line of a flat-keyed file. */
static unsigned long long key_of(const char *text, const char *key) {
  size_t n = strlen(key);
  for (const char *l = text; l; l = strchr(l, '\n')) {
    if (*l == '\n')
      l++;
    if (!strncmp(l, key, n) && l[n] == ' ')
      return strtoull(l + n + 1, NULL, 10);
  }
  return 0;
}

static int push(unsigned long long **a, size_t n, unsigned long long v,
                struct coil_error *err) {
  unsigned long long *m = reallocarray(*a, n + 1, sizeof *m);
  if (!m)
    return coil_error_sys(err, ENOMEM, "cpuacct");
  *a = m;
  m[n] = v;
  return 0;
}

/* cpuacct.usage_all: a "cpu user system" header, then one line a cpu. */
static int percpu_split(const char *dir, struct coil_cgroup_stats *s,
                        struct coil_error *err) {
  cleanup_free char *text = NULL;
  if (cg_read(dir, "cpuacct.usage_all", &text, err) < 0)
    return 0;
  char *line = strchr(text, '\n');
  while (line && *++line) {
    unsigned long long cpu, user, sys;
    if (sscanf(line, "%llu %llu %llu", &cpu, &user, &sys) != 3)
      break;
    if (push(&s->cpu.percpu_user, s->cpu.n_percpu_split, user, err) < 0 ||
        push(&s->cpu.percpu_kernel, s->cpu.n_percpu_split, sys, err) < 0)
      return -1;
    s->cpu.n_percpu_split++;
    line = strchr(line, '\n');
  }
  return 0;
}

static int cpu_stats(const struct cg_dir *cpu, const struct cg_dir *acct,
                     struct coil_cgroup_stats *s, struct coil_error *err) {
  cleanup_free char *stat = NULL;
  if (cpu && cg_read(cpu->path, "cpu.stat", &stat, err) < 0 &&
      err->err != ENOENT)
    return -1;
  if (stat && is_v2(cpu)) {
    s->cpu.total = key_of(stat, "usage_usec") * 1000;
    s->cpu.user = key_of(stat, "user_usec") * 1000;
    s->cpu.kernel = key_of(stat, "system_usec") * 1000;
    s->cpu.periods = key_of(stat, "nr_periods");
    s->cpu.throttled_periods = key_of(stat, "nr_throttled");
    s->cpu.throttled_time = key_of(stat, "throttled_usec") * 1000;
    return 0;
  }
  if (stat) {
    s->cpu.periods = key_of(stat, "nr_periods");
    s->cpu.throttled_periods = key_of(stat, "nr_throttled");
    s->cpu.throttled_time = key_of(stat, "throttled_time");
  }
  if (!acct)
    return 0;
  s->cpu.total = read_u64(acct->path, "cpuacct.usage");
  cleanup_free char *ticks = NULL;
  if (cg_read(acct->path, "cpuacct.stat", &ticks, err) == 0) {
    /* cpuacct.stat counts USER_HZ ticks. */
    long hz = sysconf(_SC_CLK_TCK);
    unsigned long long ns = hz > 0 ? 1000000000ULL / (unsigned long long)hz : 0;
    s->cpu.user = key_of(ticks, "user") * ns;
    s->cpu.kernel = key_of(ticks, "system") * ns;
  }
  cleanup_free char *percpu = NULL;
  if (cg_read(acct->path, "cpuacct.usage_percpu", &percpu, err) == 0)
    for (char *p = percpu, *end;; p = end) {
      unsigned long long v = strtoull(p, &end, 10);
      if (end == p)
        break;
      if (push(&s->cpu.percpu, s->cpu.n_percpu, v, err) < 0)
        return -1;
      s->cpu.n_percpu++;
    }
  return percpu_split(acct->path, s, err);
}

static void pids_stats(const struct cg_dir *d, struct coil_cgroup_stats *s) {
  s->pids.current = read_u64(d->path, "pids.current");
  s->pids.limit = read_u64(d->path, "pids.max");
  /* As runc: no limit is 0. */
  if (s->pids.limit == CG_STATS_UNLIMITED)
    s->pids.limit = 0;
}

/* Every page size the hugetlb controller has files for: v1
 * hugetlb.<size>.usage_in_bytes, v2 hugetlb.<size>.current. */
static void hugetlb_stats(const struct cg_dir *d, struct coil_cgroup_stats *s) {
  const char *suffix = is_v2(d) ? ".current" : ".usage_in_bytes";
  DIR *dir = opendir(d->path);
  if (!dir)
    return;
  for (struct dirent *e;
       (e = readdir(dir)) && s->n_hugetlb < CG_STATS_MAX_HUGETLB;) {
    const char *name = e->d_name;
    size_t n = strlen(name), sl = strlen(suffix);
    if (strncmp(name, "hugetlb.", 8) || n <= 8 + sl ||
        strcmp(name + n - sl, suffix))
      continue;
    size_t size_len = n - 8 - sl;
    struct cg_stats_hugetlb *h = &s->hugetlb[s->n_hugetlb];
    /* Skips hugetlb.<size>.rsvd.* (v2 reservations). */
    if (size_len >= sizeof h->size || memchr(name + 8, '.', size_len))
      continue;
    memcpy(h->size, name + 8, size_len);
    h->size[size_len] = '\0';
    char file[128];
    h->usage = read_u64(d->path, name);
    if (is_v2(d)) {
      snprintf(file, sizeof file, "hugetlb.%s.events", h->size);
      h->failcnt = cg_read_key(d, file, "max");
    } else {
      snprintf(file, sizeof file, "hugetlb.%s.max_usage_in_bytes", h->size);
      h->max = read_u64(d->path, file);
      snprintf(file, sizeof file, "hugetlb.%s.failcnt", h->size);
      h->failcnt = read_u64(d->path, file);
    }
    s->n_hugetlb++;
  }
  closedir(dir);
}

/* A cpu list ("0-3,6") as its numbers. */
static int expand_list(const char *dir, const char *file, unsigned **out,
                       size_t *n, struct coil_error *err) {
  cleanup_free char *text = NULL;
  if (cg_read(dir, file, &text, err) < 0)
    return err->err == ENOENT ? 0 : -1;
  for (char *p = text, *end; *p; p = end + (*end == ',')) {
    unsigned long lo = strtoul(p, &end, 10), hi = lo;
    if (end == p)
      break;
    if (*end == '-')
      hi = strtoul(end + 1, &end, 10);
    for (unsigned long v = lo; v <= hi && hi - lo < 65536; v++) {
      unsigned *a = reallocarray(*out, *n + 1, sizeof *a);
      if (!a)
        return coil_error_sys(err, ENOMEM, "%s", file);
      *out = a;
      a[(*n)++] = (unsigned)v;
    }
  }
  return 0;
}

static int io_add(struct coil_cgroup_stats *s, enum cg_stats_io t,
                  unsigned long long major, unsigned long long minor,
                  const char *op, unsigned long long value,
                  struct coil_error *err) {
  struct cg_stats_io_entry *e =
      reallocarray(s->io[t].e, s->io[t].n + 1, sizeof *e);
  if (!e)
    return coil_error_sys(err, ENOMEM, "%s", cg_stats_io_names[t]);
  s->io[t].e = e;
  e += s->io[t].n++;
  *e = (struct cg_stats_io_entry){
      .major = major, .minor = minor, .value = value};
  snprintf(e->op, sizeof e->op, "%s", op);
  return 0;
}

/* A v1 blkio file into table t, its lines "MAJ:MIN OP VALUE" or "MAJ:MIN
 * VALUE" ("Total N" left out): the entries read, 0 when the file is
 * missing or has none, -1 when a line is not of that shape (runc's
 * getBlkioStat). */
static int v1_io_file(const char *dir, const char *file, enum cg_stats_io t,
                      struct coil_cgroup_stats *s, struct coil_error *err) {
  cleanup_free char *text = NULL;
  if (cg_read(dir, file, &text, err) < 0)
    return err->err == ENOENT ? 0 : -1;
  size_t before = s->io[t].n;
  int n = 0;
  for (char *save, *line = strtok_r(text, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save)) {
    unsigned long long major, minor, value;
    char op[16];
    if (sscanf(line, "%llu:%llu %15s %llu", &major, &minor, op, &value) == 4) {
      if (io_add(s, t, major, minor, op, value, err) < 0)
        return -1;
    } else if (sscanf(line, "%llu:%llu %llu", &major, &minor, &value) == 3) {
      if (io_add(s, t, major, minor, "", value, err) < 0)
        return -1;
    } else if (strncmp(line, "Total ", 6) == 0) {
      continue;
    } else {
      s->io[t].n = before; /* none of a file that is not all of this shape */
      return coil_error_set(err, EINVAL,
                            "%s: a line that is not MAJ:MIN "
                            "[OP] VALUE: %s",
                            file, line);
    }
    n++;
  }
  return n;
}

/* v1: the first family of blkio files that has entries, as runc reads
 * them: bfq's with its debug files, bfq's, cfq's, the throttle's
 * recursive ones, the throttle's own. A family is taken from its first
 * file on, up to the first file that has nothing. */
static int v1_io_stats(const char *dir, struct coil_cgroup_stats *s,
                       struct coil_error *err) {
  struct io_file {
    const char *name; /* after the family's prefix */
    enum cg_stats_io t;
  };
  static const struct io_file all[] = {
      {"sectors_recursive", CG_IO_SECTORS},
      {"io_service_time_recursive", CG_IO_SERVICE_TIME},
      {"io_wait_time_recursive", CG_IO_WAIT_TIME},
      {"io_merged_recursive", CG_IO_MERGED},
      {"io_queued_recursive", CG_IO_QUEUED},
      {"time_recursive", CG_IO_TIME},
      {"io_serviced_recursive", CG_IO_SERVICED},
      {"io_service_bytes_recursive", CG_IO_SERVICE_BYTES},
      {NULL, 0}};
  static const struct io_file *const recursive = all + 6;
  static const struct io_file own[] = {
      {"io_serviced", CG_IO_SERVICED},
      {"io_service_bytes", CG_IO_SERVICE_BYTES},
      {NULL, 0}};
  static const struct {
    const char *prefix;
    const struct io_file *files;
  } families[] = {{"blkio.bfq.", all},
                  {"blkio.bfq.", recursive},
                  {"blkio.", all},
                  {"blkio.throttle.", recursive},
                  {"blkio.throttle.", own}};
  for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
    const struct io_file *x = families[f].files;
    char name[64];
    struct coil_error ignored;
    snprintf(name, sizeof name, "%s%s", families[f].prefix, x->name);
    if (v1_io_file(dir, name, x->t, s, &ignored) <= 0)
      continue; /* the next family */
    for (x++; x->name; x++) {
      snprintf(name, sizeof name, "%s%s", families[f].prefix, x->name);
      int n = v1_io_file(dir, name, x->t, s, err);
      if (n <= 0)
        return n;
    }
    return 0;
  }
  return 0;
}

/* v2's io.stat, "MAJ:MIN rbytes=N wbytes=N rios=N wios=N ...", in v1's
 * tables as runc maps it: bytes and I/Os read and written; the rest has
 * no v1 table. */
static int v2_io_stats(const char *dir, struct coil_cgroup_stats *s,
                       struct coil_error *err) {
  static const struct {
    const char *key, *op;
    enum cg_stats_io t;
  } keys[] = {{"rbytes", "Read", CG_IO_SERVICE_BYTES},
              {"wbytes", "Write", CG_IO_SERVICE_BYTES},
              {"rios", "Read", CG_IO_SERVICED},
              {"wios", "Write", CG_IO_SERVICED}};
  cleanup_free char *text = NULL;
  if (cg_read(dir, "io.stat", &text, err) < 0)
    return err->err == ENOENT ? 0 : -1;
  for (char *save, *line = strtok_r(text, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save)) {
    unsigned long long major, minor;
    int at;
    if (sscanf(line, "%llu:%llu%n", &major, &minor, &at) != 2)
      continue;
    for (char *sv, *kv = strtok_r(line + at, " ", &sv); kv;
         kv = strtok_r(NULL, " ", &sv)) {
      char *eq = strchr(kv, '=');
      if (!eq)
        continue;
      *eq = '\0';
      for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        if (!strcmp(kv, keys[k].key) &&
            io_add(s, keys[k].t, major, minor, keys[k].op,
                   strtoull(eq + 1, NULL, 10), err) < 0)
          return -1;
    }
  }
  return 0;
}

static int cpuset_stats(const struct cg_dir *d, struct coil_cgroup_stats *s,
                        struct coil_error *err) {
  bool v2 = is_v2(d);
  if (expand_list(d->path, v2 ? "cpuset.cpus.effective" : "cpuset.cpus",
                  &s->cpuset.cpus, &s->cpuset.n_cpus, err) < 0 ||
      expand_list(d->path, v2 ? "cpuset.mems.effective" : "cpuset.mems",
                  &s->cpuset.mems, &s->cpuset.n_mems, err) < 0)
    return -1;
  if (v2)
    return 0;
  for (size_t i = 0; i < 8; i++)
    s->cpuset.flags[i] = read_of(d->path, "cpuset", cg_stats_cpuset_flags[i]);
  cleanup_free char *lvl = NULL;
  if (cg_read(d->path, "cpuset.sched_relax_domain_level", &lvl, err) == 0)
    s->cpuset.sched_relax_domain_level = strtoll(lvl, NULL, 10);
  return 0;
}

int cgroup_stats(const struct coil_cgroup *cg, struct coil_cgroup_stats *s,
                 struct coil_error *err) {
  *s = (struct coil_cgroup_stats){0};
  const struct cg_dir *d;
  int r = 0;
  if ((d = cg_find_dir(cg, CG_MEMORY)))
    r = memory_stats(d, s, err);
  const struct cg_dir *cpu = cg_find_dir(cg, CG_CPU);
  /* Every v2 cgroup has cpu.stat's usage lines, cpu controller or not. */
  for (size_t i = 0; !cpu && i < cg->n; i++)
    if (is_v2(&cg->dirs[i]))
      cpu = &cg->dirs[i];
  if (r == 0)
    r = cpu_stats(cpu, cg_find_dir(cg, CG_CPUACCT), s, err);
  if (r == 0 && (d = cg_find_dir(cg, CG_PIDS)))
    pids_stats(d, s);
  if (r == 0 && (d = cg_find_dir(cg, CG_HUGETLB)))
    hugetlb_stats(d, s);
  if (r == 0 && (d = cg_find_dir(cg, CG_CPUSET)))
    r = cpuset_stats(d, s, err);
  if (r == 0 && (d = cg_find_dir(cg, CG_BLKIO)))
    r = is_v2(d) ? v2_io_stats(d->path, s, err) : v1_io_stats(d->path, s, err);
  if (r < 0)
    cgroup_stats_free(s);
  return r;
}

void cgroup_stats_free(struct coil_cgroup_stats *s) {
  for (size_t i = 0; i < s->memory.n_raw; i++)
    free(s->memory.raw[i].key);
  free(s->memory.raw);
  free(s->cpu.percpu);
  free(s->cpu.percpu_kernel);
  free(s->cpu.percpu_user);
  free(s->cpuset.cpus);
  free(s->cpuset.mems);
  for (size_t t = 0; t < CG_IO_TABLES; t++)
    free(s->io[t].e);
  *s = (struct coil_cgroup_stats){0};
}

unsigned long long cgroup_oom_kills(const struct coil_cgroup *cg) {
  const struct cg_dir *d = cg_find_dir(cg, CG_MEMORY);
  return d ? cg_read_key(d, d->drv->oom_file, "oom_kill") : 0;
}
