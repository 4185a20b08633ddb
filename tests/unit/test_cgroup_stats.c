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
  char state[256];
  snprintf(state, sizeof state,
           "coil-cgroup/1 v2:memory,pids,cpu,hugetlb,cpuset:1:%s", dir);
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

int main(void) {
  snprintf(tmp, sizeof tmp, "/tmp/coil-cgstats-XXXXXX");
  if (!mkdtemp(tmp)) {
    perror("mkdtemp");
    return 1;
  }
  test_v2();
  test_v1();
  nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  return tap_done();
}
