/* cgroup_stats.c against fake cgroup trees (plain directories): the v2 and
 * v1 files, their units and runc's conversions. */
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "cgroup_stats.h"
#include "tap.h"

static char tmp[64];

static void put(const char *dir, const char *file, const char *content) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  FILE *f = fopen(path, "w");
  if (!f) {
    printf("# cannot write %s\n", path);
    return;
  }
  fputs(content, f);
  fclose(f);
}

static int rm_one(const char *p, const struct stat *st, int flag,
                  struct FTW *ftw) {
  (void)st;
  (void)ftw;
  return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static struct coil_cgroup *load(const char *state) {
  struct coil_cgroup *cg = NULL;
  struct coil_error err;
  if (cgroup_deserialize(state, &cg, &err) < 0)
    printf("# %s\n", err.msg);
  return cg;
}

static unsigned long long raw(const struct coil_cgroup_stats *s,
                              const char *key) {
  for (size_t i = 0; i < s->memory.n_raw; i++)
    if (!strcmp(s->memory.raw[i].key, key))
      return s->memory.raw[i].value;
  return ~0ULL;
}

static void test_v2(void) {
  char dir[128];
  snprintf(dir, sizeof dir, "%s/v2", tmp);
  mkdir(dir, 0755);
  put(dir, "memory.stat", "anon 1000\nfile 4096\nkernel 77\n");
  put(dir, "memory.current", "123456\n");
  put(dir, "memory.max", "1048576\n");
  put(dir, "memory.peak", "200000\n");
  put(dir, "memory.swap.current", "10\n");
  put(dir, "memory.swap.max", "max\n");
  put(dir, "memory.events", "low 0\nhigh 0\nmax 9\noom 3\noom_kill 2\n");
  put(dir, "cpu.stat",
      "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n"
      "nr_periods 7\nnr_throttled 3\nthrottled_usec 40\n");
  put(dir, "pids.current", "4\n");
  put(dir, "pids.max", "max\n");
  put(dir, "hugetlb.2MB.current", "2097152\n");
  put(dir, "hugetlb.2MB.max", "max\n");
  put(dir, "hugetlb.2MB.events", "max 5\n");
  put(dir, "hugetlb.2MB.rsvd.current", "0\n");
  put(dir, "hugetlb.1GB.current", "0\n");
  put(dir, "hugetlb.1GB.events", "max 0\n");
  put(dir, "cpuset.cpus.effective", "0-2,5\n");
  put(dir, "cpuset.mems.effective", "0\n");
  put(dir, "io.stat",
      "8:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n"
      "253:1 rbytes=0 wbytes=512 rios=0 wios=1 dbytes=0 dios=0\n");
  char state[256];
  snprintf(state, sizeof state,
           "coil-cgroup/1 v2:memory,pids,cpu,hugetlb,cpuset,blkio:1:%s", dir);
  struct coil_cgroup *cg = load(state);
  ok(cg != NULL, "v2: state loads");
  if (!cg)
    return;
  struct coil_cgroup_stats s;
  struct coil_error err;
  int rc = cgroup_stats(cg, &s, &err);
  ok(rc == 0, "v2: stats read");
  ok(s.memory.usage.usage == 123456 && s.memory.usage.limit == 1048576 &&
         s.memory.usage.max == 200000,
     "v2: memory.current, memory.max, memory.peak");
  ok(s.memory.cache == 4096 && raw(&s, "anon") == 1000 &&
         raw(&s, "kernel") == 77 && s.memory.n_raw == 3,
     "v2: memory.stat as raw, cache is its file line");
  ok(s.memory.swap.usage == 123466 && s.memory.swap.limit == CG_STATS_UNLIMITED,
     "v2: swap reported as memory+swap, unlimited stays unlimited");
  ok(s.cpu.total == 1500000 && s.cpu.user == 1000000 && s.cpu.kernel == 500000,
     "v2: cpu.stat microseconds as nanoseconds");
  ok(s.cpu.periods == 7 && s.cpu.throttled_periods == 3 &&
         s.cpu.throttled_time == 40000,
     "v2: throttling");
  ok(s.pids.current == 4 && s.pids.limit == 0,
     "v2: pids, max is 0 as runc reports it");
  bool two = false, one = false;
  for (size_t i = 0; i < s.n_hugetlb; i++) {
    if (!strcmp(s.hugetlb[i].size, "2MB"))
      two = s.hugetlb[i].usage == 2097152 && s.hugetlb[i].failcnt == 5;
    if (!strcmp(s.hugetlb[i].size, "1GB"))
      one = s.hugetlb[i].usage == 0;
  }
  ok(s.n_hugetlb == 2 && two && one,
     "v2: hugetlb per page size, failcnt from events, rsvd left out");
  ok(s.cpuset.n_cpus == 4 && s.cpuset.cpus[0] == 0 && s.cpuset.cpus[2] == 2 &&
         s.cpuset.cpus[3] == 5 && s.cpuset.n_mems == 1,
     "v2: effective cpuset lists expanded");
  const struct cg_stats_io_entry *bytes = s.io[CG_IO_SERVICE_BYTES].e,
                                 *ios = s.io[CG_IO_SERVICED].e;
  ok(s.io[CG_IO_SERVICE_BYTES].n == 4 && s.io[CG_IO_SERVICED].n == 4 &&
         bytes[0].major == 8 && bytes[0].minor == 0 &&
         !strcmp(bytes[0].op, "Read") && bytes[0].value == 4096 &&
         !strcmp(bytes[1].op, "Write") && bytes[1].value == 8192 &&
         bytes[3].major == 253 && bytes[3].minor == 1 &&
         bytes[3].value == 512 && !strcmp(ios[1].op, "Write") &&
         ios[1].value == 2,
     "v2: io.stat's bytes and I/Os read and written, per device");
  ok(s.io[CG_IO_QUEUED].n == 0 && s.io[CG_IO_SECTORS].n == 0,
     "v2: no table io.stat has nothing for");
  ok(cgroup_oom_kills(cg) == 2, "v2: oom_kill of memory.events");
  cgroup_stats_free(&s);
  put(dir, "memory.swap.max", "1000\n");
  rc = cgroup_stats(cg, &s, &err);
  ok(rc == 0 && s.memory.swap.limit == 1049576,
     "v2: a swap limit is reported as memory+swap");
  cgroup_stats_free(&s);
  cgroup_free(cg);
}

static void test_v1(void) {
  char mem[128], cpu[128], acct[128], pids[128];
  snprintf(mem, sizeof mem, "%s/memory", tmp);
  snprintf(cpu, sizeof cpu, "%s/cpu", tmp);
  snprintf(acct, sizeof acct, "%s/cpuacct", tmp);
  snprintf(pids, sizeof pids, "%s/pids", tmp);
  mkdir(mem, 0755);
  mkdir(cpu, 0755);
  mkdir(acct, 0755);
  mkdir(pids, 0755);
  put(mem, "memory.stat", "cache 8192\nrss 4096\n");
  put(mem, "memory.usage_in_bytes", "300\n");
  put(mem, "memory.max_usage_in_bytes", "400\n");
  put(mem, "memory.failcnt", "2\n");
  put(mem, "memory.limit_in_bytes", "9223372036854771712\n");
  put(mem, "memory.memsw.usage_in_bytes", "310\n");
  put(mem, "memory.kmem.usage_in_bytes", "50\n");
  put(mem, "memory.oom_control",
      "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n");
  put(cpu, "cpu.stat", "nr_periods 2\nnr_throttled 1\nthrottled_time 99\n");
  put(acct, "cpuacct.usage", "5000\n");
  put(acct, "cpuacct.usage_percpu", "3000 2000 \n");
  put(acct, "cpuacct.usage_all", "cpu user system\n0 2000 1000\n1 1500 500\n");
  put(acct, "cpuacct.stat", "user 3\nsystem 1\n");
  put(pids, "pids.current", "2\n");
  put(pids, "pids.max", "64\n");
  char state[1024];
  snprintf(state, sizeof state,
           "coil-cgroup/1 v1:memory:1:%s v1:cpu:1:%s v1:cpuacct:1:%s "
           "v1:pids:1:%s",
           mem, cpu, acct, pids);
  struct coil_cgroup *cg = load(state);
  ok(cg != NULL, "v1: state loads");
  if (!cg)
    return;
  struct coil_cgroup_stats s;
  struct coil_error err;
  int rc = cgroup_stats(cg, &s, &err);
  ok(rc == 0, "v1: stats read");
  ok(s.memory.usage.usage == 300 && s.memory.usage.max == 400 &&
         s.memory.usage.failcnt == 2 &&
         s.memory.usage.limit == 9223372036854771712ULL,
     "v1: memory.* usage, max, failcnt, limit");
  ok(s.memory.swap.usage == 310 && s.memory.kernel.usage == 50 &&
         s.memory.cache == 8192,
     "v1: memsw, kmem, cache from memory.stat");
  long hz = sysconf(_SC_CLK_TCK);
  ok(s.cpu.total == 5000 &&
         s.cpu.user == 3 * (1000000000ULL / (unsigned long long)hz) &&
         s.cpu.kernel == 1000000000ULL / (unsigned long long)hz,
     "v1: cpuacct.usage, cpuacct.stat ticks as nanoseconds");
  ok(s.cpu.n_percpu == 2 && s.cpu.percpu[0] == 3000 && s.cpu.percpu[1] == 2000,
     "v1: cpuacct.usage_percpu");
  ok(s.cpu.n_percpu_split == 2 && s.cpu.percpu_user[1] == 1500 &&
         s.cpu.percpu_kernel[0] == 1000,
     "v1: cpuacct.usage_all split per cpu");
  ok(s.cpu.throttled_time == 99 && s.cpu.periods == 2,
     "v1: cpu.stat throttling (already nanoseconds)");
  ok(s.pids.current == 2 && s.pids.limit == 64, "v1: pids");
  ok(cgroup_oom_kills(cg) == 1, "v1: oom_kill of memory.oom_control");
  cgroup_stats_free(&s);
  cgroup_free(cg);
}

/* The v1 blkio files of one cgroup directory as stats, in a fresh dir. */
static struct coil_cgroup_stats *
v1_io(const char *name, const char *const *files, struct coil_cgroup_stats *s) {
  char dir[128], state[256];
  snprintf(dir, sizeof dir, "%s/%s", tmp, name);
  mkdir(dir, 0755);
  for (size_t i = 0; files[i]; i += 2)
    put(dir, files[i], files[i + 1]);
  snprintf(state, sizeof state, "coil-cgroup/1 v1:blkio:1:%s", dir);
  struct coil_cgroup *cg = load(state);
  struct coil_error err;
  int rc = cg ? cgroup_stats(cg, s, &err) : -1;
  cgroup_free(cg);
  return rc == 0 ? s : NULL;
}

#define BYTES_254                                                              \
  "254:0 Read 4096\n254:0 Write 512\n254:0 Sync 512\n254:0 Async 4096\n"       \
  "254:0 Discard 0\n254:0 Total 4608\nTotal 4608\n"

static void test_v1_io(void) {
  struct coil_cgroup_stats s;
  /* BFQ's files with nothing yet: the throttle's recursive ones. */
  const char *const throttle[] = {"blkio.bfq.io_serviced_recursive",
                                  "Total 0\n",
                                  "blkio.bfq.io_service_bytes_recursive",
                                  "Total 0\n",
                                  "blkio.throttle.io_serviced_recursive",
                                  "254:0 Read 1\n254:0 Write 1\nTotal 2\n",
                                  "blkio.throttle.io_service_bytes_recursive",
                                  BYTES_254,
                                  "blkio.throttle.io_service_bytes",
                                  "254:0 Read 1\nTotal 1\n",
                                  NULL};
  ok(v1_io("throttle", throttle, &s) != NULL, "v1 io: stats read");
  const struct cg_stats_io_entry *b = s.io[CG_IO_SERVICE_BYTES].e;
  ok(s.io[CG_IO_SERVICE_BYTES].n == 6 && b[0].major == 254 && b[0].minor == 0 &&
         !strcmp(b[0].op, "Read") && b[0].value == 4096 &&
         !strcmp(b[5].op, "Total") && b[5].value == 4608,
     "v1 io: each device line with its op, the last Total line left out");
  ok(s.io[CG_IO_SERVICED].n == 2 && s.io[CG_IO_SERVICED].e[1].value == 1,
     "v1 io: the family whose first file has entries (throttle, recursive)");
  cgroup_stats_free(&s);

  /* CFQ's family, with its files of lines without an op. */
  const char *const cfq[] = {"blkio.sectors_recursive",
                             "8:0 6792\n",
                             "blkio.io_service_time_recursive",
                             "8:0 Read 10\nTotal 10\n",
                             "blkio.io_wait_time_recursive",
                             "8:0 Read 20\nTotal 20\n",
                             "blkio.io_merged_recursive",
                             "8:0 Read 0\nTotal 0\n",
                             "blkio.io_queued_recursive",
                             "8:0 Read 0\nTotal 0\n",
                             "blkio.time_recursive",
                             "8:0 31\n",
                             "blkio.io_serviced_recursive",
                             "8:0 Read 2\nTotal 2\n",
                             "blkio.io_service_bytes_recursive",
                             "8:0 Read 8192\nTotal 8192\n",
                             "blkio.throttle.io_service_bytes_recursive",
                             BYTES_254,
                             NULL};
  ok(v1_io("cfq", cfq, &s) != NULL, "v1 io (cfq): stats read");
  ok(s.io[CG_IO_SECTORS].n == 1 && s.io[CG_IO_SECTORS].e[0].op[0] == '\0' &&
         s.io[CG_IO_SECTORS].e[0].value == 6792 &&
         s.io[CG_IO_TIME].e[0].value == 31,
     "v1 io (cfq): sectors and time, lines without an op");
  ok(s.io[CG_IO_SERVICE_BYTES].n == 1 &&
         s.io[CG_IO_SERVICE_BYTES].e[0].value == 8192 &&
         s.io[CG_IO_WAIT_TIME].e[0].value == 20,
     "v1 io (cfq): taken before the throttle's files, and only it");
  cgroup_stats_free(&s);

  /* A first file not of the shape: the next family. */
  const char *const odd[] = {"blkio.bfq.io_serviced_recursive",
                             "8:0 Read 2\ngarbage\n",
                             "blkio.throttle.io_serviced_recursive",
                             "254:0 Read 1\nTotal 1\n",
                             "blkio.throttle.io_service_bytes_recursive",
                             BYTES_254,
                             NULL};
  ok(v1_io("odd", odd, &s) != NULL && s.io[CG_IO_SERVICED].n == 1 &&
         s.io[CG_IO_SERVICED].e[0].major == 254,
     "v1 io: a family whose first file has a line of another shape is "
     "passed over, none of it kept");
  cgroup_stats_free(&s);
}

int main(void) {
  snprintf(tmp, sizeof tmp, "/tmp/coil-cgstats-XXXXXX");
  if (!mkdtemp(tmp)) {
    perror("mkdtemp");
    return 1;
  }
  test_v2();
  test_v1();
  test_v1_io();
  nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  return tap_done();
}
