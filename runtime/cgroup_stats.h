/* A container's resource usage, read from its cgroup files (v1 and v2,
 * per controller as the container's cgroup drives it), in the fields and
 * units of runc's `events` (libcontainer/types Stats): bytes, nanoseconds,
 * counts. */
#ifndef COIL_CGROUP_STATS_H
#define COIL_CGROUP_STATS_H

#include <stddef.h>

#include "cgroup.h"
#include "error.h"

/* An unlimited limit ("max" in v2). */
#define CG_STATS_UNLIMITED 18446744073709551615ULL

struct cg_stats_mem {
  unsigned long long limit, usage, max, failcnt;
};

struct cg_stats_kv {
  char *key;
  unsigned long long value;
};

struct cg_stats_hugetlb {
  char size[16]; /* "2MB", as in the file names */
  unsigned long long usage, max, failcnt;
};

#define CG_STATS_MAX_HUGETLB 8

/* runc's block I/O tables (BlkioStats), named by cg_stats_io_names. */
enum cg_stats_io {
  CG_IO_SERVICE_BYTES,
  CG_IO_SERVICED,
  CG_IO_QUEUED,
  CG_IO_SERVICE_TIME,
  CG_IO_WAIT_TIME,
  CG_IO_MERGED,
  CG_IO_TIME,
  CG_IO_SECTORS,
  CG_IO_TABLES
};

struct cg_stats_io_entry {
  unsigned long long major, minor, value;
  char op[16]; /* "Read", "Write", ...; empty in tables without one */
};

struct coil_cgroup_stats {
  struct {
    unsigned long long total, kernel, user; /* ns */
    unsigned long long *percpu;             /* ns per cpu (v1) */
    size_t n_percpu;
    unsigned long long *percpu_kernel, *percpu_user; /* v1 cpuacct.usage_all */
    size_t n_percpu_split;
    unsigned long long periods, throttled_periods, throttled_time; /* ns */
  } cpu;
  struct {
    unsigned long long cache;
    /* swap is memory+swap, as v1 counts it (v2's is converted). */
    struct cg_stats_mem usage, swap, kernel, kernel_tcp;
    struct cg_stats_kv *raw; /* memory.stat */
    size_t n_raw;
  } memory;
  struct {
    unsigned long long current, limit; /* limit 0: unlimited */
  } pids;
  struct cg_stats_hugetlb hugetlb[CG_STATS_MAX_HUGETLB];
  size_t n_hugetlb;
  struct {
    struct cg_stats_io_entry *e;
    size_t n;
  } io[CG_IO_TABLES];
  struct {
    unsigned *cpus, *mems;
    size_t n_cpus, n_mems;
    /* v1's cpuset flags, in runc's order (0 on v2). */
    unsigned long long flags[8];
    long long sched_relax_domain_level;
  } cpuset;
};

/* runc's JSON names of cpuset.flags[] and of the block I/O tables. */
extern const char *const cg_stats_cpuset_flags[8];
extern const char *const cg_stats_io_names[CG_IO_TABLES];

/* Fills s (free it with cgroup_stats_free) from every controller the
 * container's cgroup drives; a file a kernel lacks leaves its field 0. */
int cgroup_stats(const struct coil_cgroup *cg, struct coil_cgroup_stats *s,
                 struct coil_error *err);
void cgroup_stats_free(struct coil_cgroup_stats *s);

/* The OOM kills the memory controller counted in the cgroup so far. */
unsigned long long cgroup_oom_kills(const struct coil_cgroup *cg);

#endif
