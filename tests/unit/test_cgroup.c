/* cgroup.c and its drivers against fake cgroupfs trees (plain directories in
 * a temporary directory, v2 and hybrid), then once against the real kernel,
 * below this process's own cgroups, when run as root. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "cgroup_driver.h"
#include "device_policy.h"
#include "tap.h"

/* tap.h's ok() evaluates its condition twice: calls with effects go first,
 * into rc. */
static char tmp[64];

/* printf into one of a few rotating buffers, so several can be live. */
static const char *pf(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static const char *pf(const char *fmt, ...) {
  static char bufs[8][PATH_MAX];
  static int next;
  char *b = bufs[next++ % 8];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b, PATH_MAX, fmt, ap);
  va_end(ap);
  return b;
}

static void mkdirs(const char *path) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s", path);
  for (char *s = p + 1; *s; s++)
    if (*s == '/') {
      *s = '\0';
      mkdir(p, 0755);
      *s = '/';
    }
  mkdir(p, 0755);
}

static void put(const char *path, const char *content) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  *strrchr(dir, '/') = '\0';
  mkdirs(dir);
  FILE *f = fopen(path, "w");
  if (!f) {
    printf("# cannot write %s\n", path);
    return;
  }
  fputs(content, f);
  fclose(f);
}

/* A file's content without trailing newline, or NULL when unreadable. */
static const char *get(const char *path) {
  static char bufs[4][4096];
  static int next;
  char *b = bufs[next++ % 4];
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  size_t n = fread(b, 1, 4095, f);
  fclose(f);
  b[n] = '\0';
  while (n > 0 && b[n - 1] == '\n')
    b[--n] = '\0';
  return b;
}

static bool exists(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

static int rm_one(const char *p, const struct stat *st, int flag,
                  struct FTW *ftw) {
  (void)st;
  (void)ftw;
  return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static void rm_rf(const char *path) {
  nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh fake tree: tmp/fs is the cgroup root, tmp/proc this process's
 * /proc/self/cgroup. */
static struct coil_cgroup_env fresh_env(void) {
  static char fs[PATH_MAX], proc[PATH_MAX];
  snprintf(fs, sizeof fs, "%s/fs", tmp);
  snprintf(proc, sizeof proc, "%s/proc", tmp);
  rm_rf(fs);
  mkdirs(fs);
  return (struct coil_cgroup_env){.fs_root = fs, .proc_self_cgroup = proc};
}

/* A fake v2 cgroup at dir: controllers, an empty subtree_control, procs. */
static void v2_cgroup(const char *dir, const char *controllers,
                      const char *procs) {
  put(pf("%s/cgroup.controllers", dir), controllers);
  put(pf("%s/cgroup.subtree_control", dir), "");
  put(pf("%s/cgroup.procs", dir), procs);
}

static struct coil_cgroup_env v2_tree(const char *controllers) {
  struct coil_cgroup_env env = fresh_env();
  const char *fs = env.fs_root;
  v2_cgroup(fs, controllers, "1\n");
  v2_cgroup(pf("%s/user.slice/x", fs), controllers, "100\n");
  put(env.proc_self_cgroup, "0::/user.slice/x\n");
  return env;
}

#define V2_ALL "cpuset cpu io memory hugetlb pids\n"

static bool has(const char *s, const char *part) {
  return s && strstr(s, part) != NULL;
}

/* Limits on memory (64 MiB, 32 MiB reserved, 96 MiB with swap), pids, cpu
 * shares, and a cpu quota of 50000 per period of 100000. */
static struct coil_resources mem_cpu_limits(int64_t pids, uint64_t shares) {
  return (struct coil_resources){
      .has_memory_limit = true,
      .memory_limit = 64 << 20,
      .has_memory_reservation = true,
      .memory_reservation = 32 << 20,
      .has_memory_swap = true,
      .memory_swap = 96 << 20,
      .has_pids_limit = true,
      .pids_limit = pids,
      .has_cpu_shares = true,
      .cpu_shares = shares,
      .has_cpu_quota = true,
      .cpu_quota = 50000,
      .has_cpu_period = true,
      .cpu_period = 100000,
  };
}

/* Destroys and frees a cgroup whose destruction is not under test. */
static void destroy_free(struct coil_cgroup *cg, struct coil_error *err) {
  cgroup_destroy(cg, err);
  cgroup_free(cg);
}

static void test_v2_full(void) {
  struct coil_cgroup_env env = v2_tree(V2_ALL);
  const char *fs = env.fs_root;
  char ps[] = "2MB";
  struct coil_hugepage_limit huge = {.page_size = ps, .limit = 4194304};
  char cpus[] = "0-1", mems[] = "0";
  struct coil_resources r = mem_cpu_limits(100, 1024);
  r.cpu_cpus = cpus;
  r.cpu_mems = mems;
  r.hugepage_limits = &huge;
  r.n_hugepage_limits = 1;
  struct coil_cgroup *cg = NULL;
  struct coil_error err = {0};
  int rc = cgroup_create(&env, NULL, "c1", &r, NULL, &cg, &err);
  ok(rc == 0, "v2: create with every limit (%s)", rc ? err.msg : "ok");
  if (rc)
    return;
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", pf("%s/user.slice/x/coil/c1", fs));
  ok(cg->n == 1 && !strcmp(cg->dirs[0].path, dir),
     "v2: NULL cgroupsPath -> <own cgroup>/coil/<id>");
  is_str(get(pf("%s/memory.max", dir)), "67108864", "v2: memory.max");
  is_str(get(pf("%s/memory.low", dir)), "33554432", "v2: memory.low");
  is_str(get(pf("%s/memory.swap.max", dir)), "33554432",
         "v2: memory.swap.max = swap - limit");
  is_str(get(pf("%s/pids.max", dir)), "100", "v2: pids.max");
  is_str(get(pf("%s/cpu.weight", dir)), "39", "v2: shares 1024 -> weight 39");
  is_str(get(pf("%s/cpu.max", dir)), "50000 100000", "v2: cpu.max");
  is_str(get(pf("%s/cpuset.cpus", dir)), "0-1", "v2: cpuset.cpus");
  is_str(get(pf("%s/cpuset.mems", dir)), "0", "v2: cpuset.mems");
  is_str(get(pf("%s/hugetlb.2MB.max", dir)), "4194304", "v2: hugetlb.2MB.max");
  is_str(get(pf("%s/user.slice/x/cgroup.subtree_control", fs)),
         "+memory +pids +cpu +cpuset +hugetlb",
         "v2: controllers enabled in the launcher's cgroup");
  is_str(get(pf("%s/user.slice/x/coil/cgroup.subtree_control", fs)),
         "+memory +pids +cpu +cpuset +hugetlb", "v2: ... and in coil/");
  is_str(get(pf("%s/cgroup.subtree_control", fs)), "",
         "v2: the root's subtree_control is left alone");
  ok(!exists(pf("%s/cgroup.subtree_control", dir)),
     "v2: nothing enabled in the container's own (leaf) cgroup");

  rc = cgroup_enter(cg, 4242, &err);
  ok(rc == 0, "v2: enter");
  is_str(get(pf("%s/cgroup.procs", dir)), "4242", "v2: pid in cgroup.procs");

  put(pf("%s/cgroup.procs", dir), "12\n34\n");
  put(pf("%s/sub/cgroup.procs", dir), "56\n");
  pid_t *pids = NULL;
  size_t n = 0;
  rc = cgroup_pids(cg, &pids, &n, &err);
  ok(rc == 0 && n == 3 && pids[0] == 12 && pids[1] == 34 && pids[2] == 56,
     "v2: pids of the cgroup and its sub-cgroups (n=%zu)", n);
  free(pids);

  ok(!cgroup_oom_killed(cg), "v2: no memory.events, no OOM");
  put(pf("%s/memory.events", dir), "low 0\nhigh 0\nmax 4\noom 1\noom_kill 0\n");
  ok(!cgroup_oom_killed(cg), "v2: oom_kill 0 is no OOM kill");
  put(pf("%s/memory.events", dir), "low 0\nhigh 0\nmax 4\noom 1\noom_kill 2\n");
  ok(cgroup_oom_killed(cg), "v2: oom_kill 2 in memory.events");

  char *s = cgroup_serialize(cg);
  ok(s && !strchr(s, '\n') && !strchr(s, '"') && !strchr(s, '\\'),
     "v2: serialized on one JSON-safe line: %s", s ? s : "(null)");
  struct coil_cgroup *back = NULL;
  rc = s ? cgroup_deserialize(s, &back, &err) : -1;
  char *s2 = rc == 0 ? cgroup_serialize(back) : NULL;
  is_str(s2, s, "v2: serialize -> deserialize -> serialize round trip");
  ok(rc == 0 && back->n == 1 && !strcmp(back->dirs[0].path, dir) &&
         back->dirs[0].drv == &cg_driver_v2 && back->dirs[0].levels == 1 &&
         back->dirs[0].ctrls == cg->dirs[0].ctrls,
     "v2: deserialized fields");
  free(s);
  free(s2);

  rc = cgroup_destroy(back ? back : cg, &err);
  ok(rc == 0, "v2: destroy (%s)", rc ? err.msg : "ok");
  ok(!exists(dir), "v2: container cgroup and its sub-cgroup removed");
  ok(!exists(pf("%s/user.slice/x/coil", fs)), "v2: empty coil/ removed");
  ok(exists(pf("%s/user.slice/x/cgroup.procs", fs)),
     "v2: the launcher's cgroup is left");
  rc = cgroup_destroy(cg, &err);
  ok(rc == 0, "v2: destroy again succeeds");
  cgroup_free(back);
  cgroup_free(cg);
}

static void test_v2_paths(void) {
  struct coil_cgroup_env env = v2_tree(V2_ALL);
  const char *fs = env.fs_root;
  struct coil_cgroup *cg = NULL;
  struct coil_error err = {0};

  int rc = cgroup_create(&env, "a/b", "ignored", NULL, NULL, &cg, &err);
  ok(rc == 0 && !strcmp(cg->dirs[0].path, pf("%s/user.slice/x/coil/a/b", fs)),
     "v2: relative cgroupsPath -> <own cgroup>/coil/<path> (%s)",
     rc ? err.msg : "ok");
  is_str(get(pf("%s/user.slice/x/coil/a/cgroup.subtree_control", fs)),
         "+memory +pids +cpu +cpuset",
         "v2: every level enabled; no hugetlb without hugepageLimits");
  if (rc == 0) {
    rc = cgroup_destroy(cg, &err);
    ok(rc == 0 && !exists(pf("%s/user.slice/x/coil", fs)),
       "v2: destroy removes a/b, a and coil");
    cgroup_free(cg);
  }

  rc = cgroup_create(&env, "/abs/c3", "ignored", NULL, NULL, &cg, &err);
  ok(rc == 0 && !strcmp(cg->dirs[0].path, pf("%s/abs/c3", fs)),
     "v2: absolute cgroupsPath -> <root>/<path> (%s)", rc ? err.msg : "ok");
  is_str(get(pf("%s/cgroup.subtree_control", fs)), "+memory +pids +cpu +cpuset",
         "v2: absolute: the root enables for the level made below it");
  is_str(get(pf("%s/abs/cgroup.subtree_control", fs)),
         "+memory +pids +cpu +cpuset", "v2: absolute: and abs/ for c3");
  if (rc == 0) {
    rc = cgroup_destroy(cg, &err);
    ok(rc == 0 && !exists(pf("%s/abs", fs)) &&
           exists(pf("%s/cgroup.procs", fs)),
       "v2: destroy removes c3 and the abs/ it made, not the root");
    cgroup_free(cg);
  }

  mkdirs(pf("%s/pre", fs));
  rc = cgroup_create(&env, "/pre/c4", "ignored", NULL, NULL, &cg, &err);
  ok(rc == 0, "v2: absolute below an existing cgroup (%s)",
     rc ? err.msg : "ok");
  if (rc == 0) {
    rc = cgroup_destroy(cg, &err);
    ok(rc == 0 && !exists(pf("%s/pre/c4", fs)) && exists(pf("%s/pre", fs)),
       "v2: destroy leaves the existing parent");
    cgroup_free(cg);
  }

  /* coil/ as the kernel shows it (what x passes on): below the launcher's
   * cgroup, everything coil/ has is passed on to the container. */
  v2_cgroup(pf("%s/user.slice/x/coil", fs), "cpuset cpu io memory hugetlb rdma",
            "");
  rc = cgroup_create(&env, NULL, "c5", NULL, NULL, &cg, &err);
  ok(rc == 0, "v2: below a coil/ offering more (%s)", rc ? err.msg : "ok");
  is_str(get(pf("%s/user.slice/x/coil/cgroup.subtree_control", fs)),
         "+memory +pids +cpu +cpuset +io +hugetlb +rdma",
         "v2: coil/ passes on every controller it has, coil's first");
  is_str(get(pf("%s/user.slice/x/cgroup.subtree_control", fs)),
         "+memory +pids +cpu +cpuset",
         "v2: the launcher's cgroup passes on only coil's");
  if (rc == 0) {
    rc = cgroup_destroy(cg, &err);
    ok(rc == 0, "v2: destroy c5 (%s)", rc ? err.msg : "ok");
    cgroup_free(cg);
  }
}

/* Creates "v" with r, returns the content of file in it, destroys it. */
static const char *v2_value(struct coil_cgroup_env *env,
                            const struct coil_resources *r, const char *file) {
  struct coil_cgroup *cg = NULL;
  struct coil_error err = {0};
  if (cgroup_create(env, NULL, "v", r, NULL, &cg, &err) < 0) {
    printf("# create: %s\n", err.msg);
    return NULL;
  }
  const char *v = get(pf("%s/%s", cg->dirs[0].path, file));
  cgroup_destroy(cg, &err);
  cgroup_free(cg);
  return v;
}

static void test_v2_values(void) {
  struct coil_cgroup_env env = v2_tree(V2_ALL);
  struct coil_resources r;

  r = (struct coil_resources){.has_pids_limit = true, .pids_limit = -1};
  is_str(v2_value(&env, &r, "pids.max"), "max", "v2: pids -1 -> max");
  r = (struct coil_resources){.has_pids_limit = true, .pids_limit = 0};
  is_str(v2_value(&env, &r, "pids.max"), "max", "v2: pids 0 -> max");
  r = (struct coil_resources){.has_memory_limit = true, .memory_limit = -1};
  is_str(v2_value(&env, &r, "memory.max"), "max", "v2: memory -1 -> max");
  r = (struct coil_resources){.has_memory_limit = true,
                              .memory_limit = 1 << 20,
                              .has_memory_swap = true,
                              .memory_swap = -1};
  is_str(v2_value(&env, &r, "memory.swap.max"), "max", "v2: swap -1 -> max");
  r = (struct coil_resources){.has_cpu_quota = true, .cpu_quota = -1};
  is_str(v2_value(&env, &r, "cpu.max"), "max 100000",
         "v2: quota -1 -> \"max 100000\"");
  r = (struct coil_resources){.has_cpu_quota = true, .cpu_quota = 20000};
  is_str(v2_value(&env, &r, "cpu.max"), "20000 100000",
         "v2: quota alone gets the default period");
  r = (struct coil_resources){.has_cpu_period = true, .cpu_period = 50000};
  is_str(v2_value(&env, &r, "cpu.max"), "max 50000", "v2: period alone");
  for (int idle = 0; idle <= 1; idle++) {
    r = (struct coil_resources){.has_cpu_idle = true,
                                .cpu_idle = idle,
                                .has_cpu_shares = true,
                                .cpu_shares = 1024};
    is_str(v2_value(&env, &r, "cpu.idle"), idle ? "1" : "0",
           "v2: cpu.idle %d", idle);
    is_str(v2_value(&env, &r, "cpu.weight"), "39",
           "v2: cpu.weight beside cpu.idle %d", idle);
  }
  static const struct {
    uint64_t shares;
    const char *weight;
  } w[] = {
      {2, "1"}, {1024, "39"}, {262144, "10000"}, {0, "1"}, {1000000, "10000"}};
  for (size_t i = 0; i < sizeof w / sizeof *w; i++) {
    r = (struct coil_resources){.has_cpu_shares = true,
                                .cpu_shares = w[i].shares};
    is_str(v2_value(&env, &r, "cpu.weight"), w[i].weight,
           "v2: shares %llu -> weight %s", (unsigned long long)w[i].shares,
           w[i].weight);
  }
}

static void test_v2_errors(void) {
  struct coil_cgroup_env env = v2_tree(V2_ALL);
  const char *fs = env.fs_root;
  struct coil_cgroup *cg = NULL;
  struct coil_error err = {0};

  static const char *const bad[] = {"a/../b", "../x", "/a/..", "a//b",
                                    "a/",     "/",    "",      "./a"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    err.msg[0] = '\0';
    int rc = cgroup_create(&env, bad[i], "id", NULL, NULL, &cg, &err);
    ok(rc < 0 && cg == NULL && has(err.msg, "linux.cgroupsPath"),
       "v2: cgroupsPath \"%s\" rejected: %s", bad[i], err.msg);
  }
  int rc = cgroup_create(&env, "system.slice:docker:abc", "id", NULL, NULL, &cg,
                         &err);
  ok(rc < 0 && has(err.msg, "linux.cgroupsPath") && has(err.msg, "systemd"),
     "v2: systemd slice form rejected: %s", err.msg);
  rc = cgroup_create(&env, NULL, "a/b/../../..", NULL, NULL, &cg, &err);
  ok(rc < 0 && has(err.msg, "container id"), "v2: bad id rejected: %s",
     err.msg);
  ok(!exists(pf("%s/user.slice/x/coil", fs)) && !exists(pf("%s/a", fs)),
     "v2: nothing created for rejected paths");

  /* swap < limit fails after the directories exist: all must go. */
  struct coil_resources r = {.has_memory_limit = true,
                             .memory_limit = 64 << 20,
                             .has_memory_swap = true,
                             .memory_swap = 32 << 20};
  rc = cgroup_create(&env, NULL, "rb", &r, NULL, &cg, &err);
  ok(rc < 0 && has(err.msg, "linux.resources.memory.swap"),
     "v2: swap below the memory limit fails: %s", err.msg);
  ok(!exists(pf("%s/user.slice/x/coil", fs)), "v2: rolled back completely");

  /* A write that fails: cgroup.subtree_control made a directory. */
  char stc[PATH_MAX];
  snprintf(stc, sizeof stc, "%s",
           pf("%s/user.slice/x/cgroup.subtree_control", fs));
  unlink(stc);
  mkdir(stc, 0755);
  r = (struct coil_resources){.has_memory_limit = true,
                              .memory_limit = 1 << 20};
  rc = cgroup_create(&env, NULL, "rb2", &r, NULL, &cg, &err);
  ok(rc < 0 && has(err.msg, "linux.resources.memory.limit") &&
         has(err.msg, "cgroup.subtree_control"),
     "v2: failed write names field and file: %s", err.msg);
  ok(!exists(pf("%s/user.slice/x/coil", fs)), "v2: rolled back completely");
  /* Without limits the controllers that cannot be enabled are dropped. */
  rc = cgroup_create(&env, NULL, "rb3", NULL, NULL, &cg, &err);
  char *s = rc == 0 ? cgroup_serialize(cg) : NULL;
  ok(rc == 0 && has(s, " v2:-:"),
     "v2: controllers nobody needs are dropped when they cannot be enabled: "
     "%s",
     s ? s : err.msg);
  free(s);
  if (rc == 0) {
    destroy_free(cg, &err);
  }
  rmdir(stc);
  put(stc, "");

  mkdirs(pf("%s/user.slice/x/coil/dup", fs));
  rc = cgroup_create(&env, NULL, "dup", NULL, NULL, &cg, &err);
  ok(rc < 0 && has(err.msg, "already exists"), "v2: existing cgroup: %s",
     err.msg);
  ok(exists(pf("%s/user.slice/x/coil/dup", fs)),
     "v2: the existing cgroup is not removed");
  rmdir(pf("%s/user.slice/x/coil/dup", fs));
  rmdir(pf("%s/user.slice/x/coil", fs));

  char ps[] = "2XB";
  struct coil_hugepage_limit huge = {.page_size = ps, .limit = 1};
  r = (struct coil_resources){.hugepage_limits = &huge, .n_hugepage_limits = 1};
  rc = cgroup_create(&env, NULL, "hp", &r, NULL, &cg, &err);
  ok(rc < 0 && has(err.msg, "hugepageLimits[0].pageSize"),
     "v2: bad page size: %s", err.msg);

  env = v2_tree("cpu memory\n");
  r = (struct coil_resources){.has_pids_limit = true, .pids_limit = 5};
  rc = cgroup_create(&env, NULL, "np", &r, NULL, &cg, &err);
  ok(rc < 0 && has(err.msg, "linux.resources.pids.limit") &&
         has(err.msg, "no pids"),
     "v2: limit for a controller the host lacks: %s", err.msg);
  ok(!exists(pf("%s/user.slice/x/coil", env.fs_root)), "v2: nothing created");

  struct coil_cgroup *back;
  static const char *const bad_state[] = {"",
                                          "coil-cgroup/1",
                                          "coil-cgroup/2 v2:-:0:/a/b",
                                          "coil-cgroup/1 v3:-:0:/a/b",
                                          "coil-cgroup/1 v2:bogus:0:/a/b",
                                          "coil-cgroup/1 v2:-:2:/a/b",
                                          "coil-cgroup/1 v2:-:0:a/b",
                                          "coil-cgroup/1 v2:-:0:/a/../b",
                                          "coil-cgroup/1 v2:-:0:/a%2",
                                          "coil-cgroup/1 v2:-:0:/a%00",
                                          "coil-cgroup/1 v2:-:/a"};
  for (size_t i = 0; i < sizeof bad_state / sizeof *bad_state; i++) {
    back = NULL;
    rc = cgroup_deserialize(bad_state[i], &back, &err);
    ok(rc < 0 && back == NULL, "deserialize rejects \"%s\": %s", bad_state[i],
       err.msg);
  }
  rc = cgroup_deserialize("coil-cgroup/1 v1:cpu,cpuacct:1:/x/a%20b%3Ac/y",
                          &back, &err);
  ok(rc == 0 && !strcmp(back->dirs[0].path, "/x/a b:c/y") &&
         back->dirs[0].ctrls == (CG_BIT(CG_CPU) | CG_BIT(CG_CPUACCT)),
     "deserialize decodes escapes and controller lists");
  if (rc == 0)
    cgroup_free(back);
}

static struct coil_cgroup_env hybrid_tree(bool comounted) {
  struct coil_cgroup_env env = fresh_env();
  const char *fs = env.fs_root;
  v2_cgroup(pf("%s/unified", fs), "hugetlb\n", "1\n");
  static const char *const v1_roots[] = {"memory", "pids", "cpuset", "devices",
                                         "systemd"};
  for (size_t i = 0; i < sizeof v1_roots / sizeof *v1_roots; i++)
    put(pf("%s/%s/cgroup.procs", fs, v1_roots[i]), "1\n");
  put(pf("%s/memory/memory.memsw.limit_in_bytes", fs), "9223372036854771712\n");
  put(pf("%s/memory/mem/x/cgroup.procs", fs), "100\n");
  put(pf("%s/cpuset/cpuset.cpus", fs), "0-3\n");
  put(pf("%s/cpuset/cpuset.mems", fs), "0\n");
  mkdirs(pf("%s/blkio", fs)); /* a bare mount point: no hierarchy */
  if (comounted) {
    put(pf("%s/cpu,cpuacct/cgroup.procs", fs), "1\n");
    if (symlink("cpu,cpuacct", pf("%s/cpu", fs)) < 0 ||
        symlink("cpu,cpuacct", pf("%s/cpuacct", fs)) < 0)
      ok(0, "hybrid: co-mounted symlinks: %s", strerror(errno));
  } else {
    put(pf("%s/cpu/cgroup.procs", fs), "1\n");
    put(pf("%s/cpuacct/cgroup.procs", fs), "1\n");
  }
  put(env.proc_self_cgroup,
      comounted ? "9:name=systemd:/\n8:pids:/\n5:devices:/\n4:memory:/mem/x\n"
                  "3:cpuset:/\n2:cpu,cpuacct:/\n0::/\n"
                : "9:name=systemd:/\n8:pids:/\n5:devices:/\n4:memory:/mem/x\n"
                  "3:cpuset:/\n2:cpuacct:/\n1:cpu:/\n0::/\n");
  return env;
}

/* Whether no coil/ is left in any hierarchy of a hybrid tree. */
static bool hybrid_coil_gone(const char *fs) {
  static const char *const h[] = {"unified", "pids", "cpu", "cpuacct",
                                  "cpuset"};
  bool gone = !exists(pf("%s/memory/mem/x/coil", fs));
  for (size_t i = 0; i < sizeof h / sizeof *h; i++)
    gone = gone && !exists(pf("%s/%s/coil", fs, h[i]));
  return gone;
}

static void test_hybrid(void) {
  struct coil_cgroup_env env = hybrid_tree(false);
  const char *fs = env.fs_root;
  struct coil_resources r = mem_cpu_limits(0, 512);
  struct coil_cgroup *cg = NULL;
  struct coil_error err = {0};
  int rc = cgroup_create(&env, NULL, "h1", &r, NULL, &cg, &err);
  ok(rc == 0, "hybrid: create (%s)", rc ? err.msg : "ok");
  if (rc)
    return;
  char mem[PATH_MAX];
  snprintf(mem, sizeof mem, "%s", pf("%s/memory/mem/x/coil/h1", fs));
  is_str(get(pf("%s/memory.limit_in_bytes", mem)), "67108864",
         "v1: memory.limit_in_bytes, below the memory cgroup of this process");
  is_str(get(pf("%s/memory.soft_limit_in_bytes", mem)), "33554432",
         "v1: memory.soft_limit_in_bytes");
  is_str(get(pf("%s/memory.memsw.limit_in_bytes", mem)), "100663296",
         "v1: memory.memsw.limit_in_bytes = memory+swap as given");
  is_str(get(pf("%s/pids/coil/h1/pids.max", fs)), "max", "v1: pids 0 -> max");
  is_str(get(pf("%s/cpu/coil/h1/cpu.shares", fs)), "512", "v1: cpu.shares");
  is_str(get(pf("%s/cpu/coil/h1/cpu.cfs_period_us", fs)), "100000",
         "v1: cpu.cfs_period_us");
  is_str(get(pf("%s/cpu/coil/h1/cpu.cfs_quota_us", fs)), "50000",
         "v1: cpu.cfs_quota_us");
  ok(exists(pf("%s/cpuacct/coil/h1", fs)), "v1: cpuacct cgroup made");
  is_str(get(pf("%s/cpuset/coil/cpuset.cpus", fs)), "0-3",
         "v1: cpuset.cpus copied into coil/");
  is_str(get(pf("%s/cpuset/coil/cpuset.mems", fs)), "0",
         "v1: cpuset.mems copied into coil/");
  is_str(get(pf("%s/cpuset/coil/h1/cpuset.cpus", fs)), "0-3",
         "v1: cpuset.cpus copied into the container's cgroup");
  is_str(get(pf("%s/cpuset/coil/h1/cpuset.mems", fs)), "0",
         "v1: cpuset.mems copied into the container's cgroup");
  ok(exists(pf("%s/unified/coil/h1", fs)), "hybrid: unified hierarchy joined");
  is_str(get(pf("%s/unified/cgroup.subtree_control", fs)), "",
         "hybrid: nothing enabled on unified without hugepageLimits");
  ok(!exists(pf("%s/devices/coil", fs)) && !exists(pf("%s/systemd/coil", fs)) &&
         !exists(pf("%s/blkio/coil", fs)),
     "hybrid: devices, name=systemd and a bare mount point left alone");
  ok(cg->n == 6,
     "hybrid: 6 hierarchies (unified, memory, pids, cpu, "
     "cpuacct, cpuset): %zu",
     cg->n);

  rc = cgroup_enter(cg, 777, &err);
  ok(rc == 0 && !strcmp(get(pf("%s/cgroup.procs", mem)), "777") &&
         !strcmp(get(pf("%s/cpuset/coil/h1/cgroup.procs", fs)), "777") &&
         !strcmp(get(pf("%s/unified/coil/h1/cgroup.procs", fs)), "777"),
     "hybrid: enter writes every hierarchy's cgroup.procs");
  pid_t *pids = NULL;
  size_t n = 0;
  put(pf("%s/pids/coil/h1/cgroup.procs", fs), "5\n");
  rc = cgroup_pids(cg, &pids, &n, &err);
  ok(rc == 0 && n == 1 && pids[0] == 5,
     "hybrid: pids read from the pids hierarchy");
  free(pids);

  put(pf("%s/memory.oom_control", mem),
      "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
  ok(!cgroup_oom_killed(cg), "v1: oom_kill 0");
  put(pf("%s/memory.oom_control", mem),
      "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n");
  ok(cgroup_oom_killed(cg), "v1: oom_kill 1 in memory.oom_control");

  char *s = cgroup_serialize(cg);
  struct coil_cgroup *back = NULL;
  rc = s ? cgroup_deserialize(s, &back, &err) : -1;
  char *s2 = rc == 0 ? cgroup_serialize(back) : NULL;
  is_str(s2, s, "hybrid: serialize round trip");
  free(s);
  free(s2);
  rc = cgroup_destroy(back ? back : cg, &err);
  ok(rc == 0, "hybrid: destroy (%s)", rc ? err.msg : "ok");
  ok(hybrid_coil_gone(fs) && exists(pf("%s/memory/mem/x", fs)),
     "hybrid: every coil/ removed, the launcher's cgroups left");
  cgroup_free(back);
  cgroup_free(cg);

  char cpus[] = "1", mems[] = "0";
  r = (struct coil_resources){.cpu_cpus = cpus,
                              .cpu_mems = mems,
                              .has_cpu_quota = true,
                              .cpu_quota = -1};
  rc = cgroup_create(&env, NULL, "h2", &r, NULL, &cg, &err);
  ok(rc == 0, "hybrid: create with cpuset limits (%s)", rc ? err.msg : "ok");
  if (rc == 0) {
    is_str(get(pf("%s/cpuset/coil/h2/cpuset.cpus", fs)), "1",
           "v1: cpuset.cpus from the config");
    is_str(get(pf("%s/cpuset/coil/cpuset.cpus", fs)), "0-3",
           "v1: coil/ keeps the parent's cpus");
    is_str(get(pf("%s/cpu/coil/h2/cpu.cfs_quota_us", fs)), "-1",
           "v1: quota -1 -> -1");
    destroy_free(cg, &err);
  }

  unlink(pf("%s/memory/memory.memsw.limit_in_bytes", fs));
  r = (struct coil_resources){.has_memory_limit = true,
                              .memory_limit = 1 << 20,
                              .has_memory_swap = true,
                              .memory_swap = 2 << 20};
  printf("# a warning about swap accounting is expected next\n");
  rc = cgroup_create(&env, NULL, "h3", &r, NULL, &cg, &err);
  ok(rc == 0 &&
         !exists(pf("%s/memory/mem/x/coil/h3/memory.memsw.limit_in_bytes", fs)),
     "v1: no swap accounting: swap skipped with a warning (%s)",
     rc ? err.msg : "ok");
  if (rc == 0) {
    destroy_free(cg, &err);
  }

  char ps[] = "2MB";
  struct coil_hugepage_limit huge = {.page_size = ps, .limit = 4194304};
  r = (struct coil_resources){.hugepage_limits = &huge, .n_hugepage_limits = 1};
  rc = cgroup_create(&env, NULL, "h4", &r, NULL, &cg, &err);
  ok(rc == 0, "hybrid: hugetlb through unified (%s)", rc ? err.msg : "ok");
  if (rc == 0) {
    is_str(get(pf("%s/unified/coil/h4/hugetlb.2MB.max", fs)), "4194304",
           "hybrid: hugetlb.2MB.max on unified");
    is_str(get(pf("%s/unified/cgroup.subtree_control", fs)), "+hugetlb",
           "hybrid: +hugetlb enabled on unified");
    destroy_free(cg, &err);
  }

  /* cpuset comes last: memory, pids, cpu, cpuacct, unified exist by then. */
  char cm[PATH_MAX];
  snprintf(cm, sizeof cm, "%s", pf("%s/cpuset/cpuset.mems", fs));
  unlink(cm);
  mkdir(cm, 0755);
  rc = cgroup_create(&env, NULL, "h5", NULL, NULL, &cg, &err);
  ok(rc < 0 && has(err.msg, "cpuset.mems"), "hybrid: failing cpuset copy: %s",
     err.msg);
  ok(hybrid_coil_gone(fs), "hybrid: rolled back in every hierarchy");
  rmdir(cm);

  env = hybrid_tree(true);
  fs = env.fs_root;
  rc = cgroup_create(&env, "/co", "ignored", NULL, NULL, &cg, &err);
  s = rc == 0 ? cgroup_serialize(cg) : NULL;
  ok(rc == 0 && has(s, "v1:cpu,cpuacct:0:") && cg->n == 5,
     "hybrid: co-mounted cpu,cpuacct is one hierarchy: %s", s ? s : err.msg);
  free(s);
  if (rc == 0) {
    ok(exists(pf("%s/cpu,cpuacct/co", fs)) && exists(pf("%s/memory/co", fs)),
       "hybrid: absolute path below each hierarchy root");
    rc = cgroup_destroy(cg, &err);
    ok(rc == 0 && !exists(pf("%s/cpu,cpuacct/co", fs)),
       "hybrid: co-mounted destroy");
    cgroup_free(cg);
  }

  r = (struct coil_resources){.hugepage_limits = &huge, .n_hugepage_limits = 1};
  put(pf("%s/unified/cgroup.controllers", fs), "\n");
  rc = cgroup_create(&env, NULL, "nh", &r, NULL, &cg, &err);
  ok(rc < 0 && has(err.msg, "linux.resources.hugepageLimits") &&
         has(err.msg, "no hugetlb"),
     "hybrid: hugepageLimits without hugetlb: %s", err.msg);
}

/* The plan recorded before a create names exactly what the create makes,
 * touches nothing, and destroying it when nothing was made is harmless. */
static void test_plan(void) {
  struct coil_cgroup_env env = hybrid_tree(false);
  const char *fs = env.fs_root;
  struct coil_resources r = mem_cpu_limits(0, 512);
  struct coil_cgroup *plan = NULL, *cg = NULL;
  struct coil_error err = {0};
  int rc = cgroup_plan(&env, NULL, "p1", &r, NULL, &plan, &err);
  ok(rc == 0, "plan: relative (%s)", rc ? err.msg : "ok");
  if (rc)
    return;
  ok(!exists(pf("%s/memory/mem/x/coil", fs)), "plan: makes no directory");
  ok(cgroup_destroy(plan, &err) == 0, "plan: destroying a plan not made");
  rc = cgroup_create(&env, NULL, "p1", &r, NULL, &cg, &err);
  char *planned = cgroup_serialize(plan);
  char *made = rc == 0 ? cgroup_serialize(cg) : NULL;
  ok(planned && made && strcmp(planned, made) == 0,
     "plan: names what create makes: %s", planned ? planned : "-");
  free(made);
  free(planned);
  if (rc == 0) {
    ok(cgroup_destroy(plan, &err) == 0 &&
           !exists(pf("%s/memory/mem/x/coil", fs)),
       "plan: destroying it removes what create made");
    cgroup_free(cg);
  }
  cgroup_free(plan);

  rc = cgroup_plan(&env, "/abs/p2", "ignored", NULL, NULL, &plan, &err);
  planned = rc == 0 ? cgroup_serialize(plan) : NULL;
  ok(has(planned, ":0:") && has(planned, "/memory/abs/p2"),
     "plan: absolute path, owning only its last level: %s",
     planned ? planned : err.msg);
  free(planned);
  cgroup_free(plan);
  ok(cgroup_plan(&env, "a/../..", "id", NULL, NULL, &plan, &err) < 0,
     "plan: checks the path as create does: %s", err.msg);
}

/* A device policy: the v1 devices cgroup is made and written (in a plain
 * tree each write replaces the file, so the last line is what remains);
 * a v2 directory that is no cgroup gets no program; a host with neither
 * refuses. */
static void test_devices_fake(void) {
  struct coil_cgroup_env env = hybrid_tree(false);
  const char *fs = env.fs_root;
  struct dev_rule rules[] = {
      {'c', 1, 3, DEV_READ | DEV_WRITE, true, DEV_SRC_CONFIG, 0},
      {'b', 7, DEV_ANY, DEV_READ, true, DEV_SRC_CONFIG, 1},
  };
  struct dev_policy p;
  struct coil_error err = {0};
  int rc = dev_policy_build(rules, 2, &p, &err);
  ok(rc == 0, "devices: policy (%s)", rc ? err.msg : "ok");
  if (rc)
    return;
  struct coil_cgroup *cg = NULL;
  rc = cgroup_create(&env, NULL, "d1", NULL, &p, &cg, &err);
  ok(rc == 0, "devices: hybrid create (%s)", rc ? err.msg : "ok");
  if (rc == 0) {
    is_str(get(pf("%s/devices/coil/d1/devices.deny", fs)), "a",
           "devices: v1 devices.deny reset to deny everything");
    is_str(get(pf("%s/devices/coil/d1/devices.allow", fs)), "b 7:* r",
           "devices: v1 devices.allow written, the last exception last");
    ok(cg->n == 7, "devices: the devices hierarchy joins the 6 others: %zu",
       cg->n);
    ok(exists(pf("%s/unified/coil/d1", fs)) &&
           !exists(pf("%s/unified/coil/d1/devices.allow", fs)),
       "devices: a plain v2 directory gets no files");
    destroy_free(cg, &err);
    ok(!exists(pf("%s/devices/coil", fs)),
       "devices: v1 devices cgroup removed");
  }

  env = fresh_env();
  put(pf("%s/memory/cgroup.procs", env.fs_root), "1\n");
  put(env.proc_self_cgroup, "4:memory:/\n");
  rc = cgroup_create(&env, NULL, "d2", NULL, &p, &cg, &err);
  ok(rc < 0 && has(err.msg, "linux.resources.devices") &&
         !exists(pf("%s/memory/coil", env.fs_root)),
     "devices: a host with neither layer refuses, leaving nothing (%s)",
     err.msg);
  dev_policy_free(&p);
}

/* pause/resume and update on a v2 tree: the files written, the waits for
 * cgroup.events, and limits not given left alone. */
static void test_v2_freeze_update(void) {
  struct coil_cgroup_env env = v2_tree(V2_ALL);
  struct coil_resources r = {.has_memory_limit = true,
                             .memory_limit = 64 << 20,
                             .has_pids_limit = true,
                             .pids_limit = 10};
  struct coil_cgroup *cg = NULL;
  struct coil_error err = {0};
  int rc = cgroup_create(&env, NULL, "f1", &r, NULL, &cg, &err);
  ok(rc == 0, "v2 freeze: create (%s)", rc ? err.msg : "ok");
  if (rc)
    return;
  const char *dir = cg->dirs[0].path;
  ok(!cgroup_frozen(cg), "v2: no cgroup.freeze written: not frozen");
  put(pf("%s/cgroup.events", dir), "populated 1\nfrozen 1\n");
  rc = cgroup_freeze(cg, true, &err);
  ok(rc == 0, "v2: freeze once cgroup.events says frozen 1 (%s)",
     rc ? err.msg : "ok");
  is_str(get(pf("%s/cgroup.freeze", dir)), "1", "v2: cgroup.freeze = 1");
  ok(cgroup_frozen(cg), "v2: cgroup.freeze 1 reads as frozen");
  put(pf("%s/cgroup.events", dir), "populated 1\nfrozen 0\n");
  ok(cgroup_frozen(cg),
     "v2: still frozen while a task that joined is on its way to stopping");
  rc = cgroup_freeze(cg, false, &err);
  ok(rc == 0, "v2: thaw (%s)", rc ? err.msg : "ok");
  is_str(get(pf("%s/cgroup.freeze", dir)), "0", "v2: cgroup.freeze = 0");
  ok(!cgroup_frozen(cg), "v2: cgroup.freeze 0 reads as thawed");

  struct coil_resources u = {.has_memory_limit = true,
                             .memory_limit = 96 << 20,
                             .has_cpu_quota = true,
                             .cpu_quota = 20000};
  rc = cgroup_update(cg, &u, &err);
  ok(rc == 0, "v2: update (%s)", rc ? err.msg : "ok");
  is_str(get(pf("%s/memory.max", dir)), "100663296", "v2 update: memory.max");
  is_str(get(pf("%s/cpu.max", dir)), "20000 100000", "v2 update: cpu.max");
  is_str(get(pf("%s/pids.max", dir)), "10",
         "v2 update: pids.max not given, left as it was");
  char ps[] = "2MB";
  struct coil_hugepage_limit huge = {.page_size = ps, .limit = 1};
  u = (struct coil_resources){.hugepage_limits = &huge, .n_hugepage_limits = 1};
  rc = cgroup_update(cg, &u, &err);
  ok(rc < 0 && has(err.msg, "linux.resources.hugepageLimits") &&
         has(err.msg, "no hugetlb cgroup"),
     "v2 update: a controller the container lacks is named: %s", err.msg);
  destroy_free(cg, &err);
}

/* The v1 freezer: made with the other hierarchies, FROZEN/THAWED written to
 * freezer.state; update writes v1 files. */
static void test_v1_freeze_update(void) {
  struct coil_cgroup_env env = hybrid_tree(false);
  const char *fs = env.fs_root;
  put(pf("%s/freezer/cgroup.procs", fs), "1\n");
  FILE *proc = fopen(env.proc_self_cgroup, "a");
  if (proc) {
    fputs("6:freezer:/\n", proc);
    fclose(proc);
  }
  struct coil_cgroup *cg = NULL;
  struct coil_error err = {0};
  int rc = cgroup_create(&env, NULL, "f2", NULL, NULL, &cg, &err);
  ok(rc == 0, "v1 freeze: create (%s)", rc ? err.msg : "ok");
  if (rc)
    return;
  char fz[PATH_MAX]; /* outlives pf()'s rotating buffers */
  snprintf(fz, sizeof fz, "%s/freezer/coil/f2", fs);
  ok(exists(fz), "v1: a freezer cgroup is made for every container");
  char *s = cgroup_serialize(cg);
  ok(has(s, "v1:freezer:1:"), "v1: the freezer dir is in the state: %s", s);
  free(s);
  rc = cgroup_freeze(cg, true, &err);
  ok(rc == 0, "v1: freeze (%s)", rc ? err.msg : "ok");
  is_str(get(pf("%s/freezer.state", fz)), "FROZEN", "v1: freezer.state");
  ok(cgroup_frozen(cg), "v1: FROZEN reads as frozen");
  ok(!exists(pf("%s/unified/coil/f2/cgroup.freeze", fs)),
     "v1: the v2 cgroup is not frozen as well");
  rc = cgroup_freeze(cg, false, &err);
  ok(rc == 0 && !cgroup_frozen(cg), "v1: thaw");
  is_str(get(pf("%s/freezer.state", fz)), "THAWED", "v1: freezer.state thawed");
  put(pf("%s/freezer.state", fz), "FREEZING");
  put(pf("%s/freezer.self_freezing", fz), "1");
  ok(cgroup_frozen(cg),
     "v1: FREEZING with self_freezing 1 (a task just joined) reads as frozen");
  put(pf("%s/freezer.state", fz), "FROZEN");
  put(pf("%s/freezer.self_freezing", fz), "0");
  ok(!cgroup_frozen(cg), "v1: frozen only by an ancestor is not paused");
  put(pf("%s/freezer.state", fz), "THAWED");
  unlink(pf("%s/freezer.self_freezing", fz));

  struct coil_resources u = {.has_memory_limit = true,
                             .memory_limit = 32 << 20,
                             .has_pids_limit = true,
                             .pids_limit = 7};
  rc = cgroup_update(cg, &u, &err);
  ok(rc == 0, "v1: update (%s)", rc ? err.msg : "ok");
  is_str(get(pf("%s/memory/mem/x/coil/f2/memory.limit_in_bytes", fs)),
         "33554432", "v1 update: memory.limit_in_bytes");
  is_str(get(pf("%s/pids/coil/f2/pids.max", fs)), "7", "v1 update: pids.max");
  destroy_free(cg, &err);
  ok(!exists(fz) && !exists(pf("%s/freezer/coil", fs)),
     "v1: destroy removes the freezer cgroup");
}

/* A blockIO with every field: weights, two devices, each throttle. */
static struct coil_blkio_weight_device blkio_wdev[] = {
    {.major = 8, .minor = 0, .weight = 200},
    {.major = 8, .minor = 16, .leaf_weight = 100}};
static struct coil_blkio_rate blkio_rates[COIL_BLKIO_THROTTLE_COUNT] = {
    {8, 0, 1048576}, {8, 0, 2097152}, {8, 0, 30}, {253, 1, 40}};

static struct coil_resources blkio_limits(void) {
  struct coil_resources r = {.blkio_weight = 500,
                             .blkio_leaf_weight = 300,
                             .blkio_weight_devices = blkio_wdev,
                             .n_blkio_weight_devices = 2};
  for (int t = 0; t < COIL_BLKIO_THROTTLE_COUNT; t++) {
    r.blkio_throttle[t] = &blkio_rates[t];
    r.n_blkio_throttle[t] = 1;
  }
  return r;
}

/* v2: io enabled on the way down, io.weight converted (io.bfq.weight as
 * given where it exists), io.max one line per limit; unified keys written
 * to files of the cgroup only. A fake file keeps the last write only. */
static void test_v2_blkio_unified(void) {
  struct coil_cgroup_env env = v2_tree(V2_ALL);
  const char *fs = env.fs_root;
  struct coil_resources r = blkio_limits();
  r.n_blkio_throttle[COIL_BLKIO_WRITE_IOPS] = 0;
  struct coil_cgroup *cg = NULL;
  struct coil_error err = {0};
  int rc = cgroup_create(&env, NULL, "b1", &r, NULL, &cg, &err);
  ok(rc == 0, "v2 blkio: create (%s)", rc ? err.msg : "ok");
  if (rc)
    return;
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", pf("%s/user.slice/x/coil/b1", fs));
  is_str(get(pf("%s/user.slice/x/coil/cgroup.subtree_control", fs)),
         "+memory +pids +cpu +cpuset +io", "v2 blkio: io enabled for it");
  is_str(get(pf("%s/io.weight", dir)), "4950",
         "v2 blkio: weight 500 -> io.weight 4950");
  is_str(get(pf("%s/io.max", dir)), "8:0 riops=30",
         "v2 blkio: io.max gets each throttle (the last: read iops)");
  ok(!exists(pf("%s/io.bfq.weight", dir)),
     "v2 blkio: no io.bfq.weight without BFQ (weightDevice left out)");
  char *s = cgroup_serialize(cg);
  ok(has(s, "blkio"), "v2 blkio: io is in the state: %s", s);
  struct coil_cgroup *back = NULL;
  rc = cgroup_deserialize(s, &back, &err);
  ok(rc == 0 && back && back->dirs[0].ctrls == cg->dirs[0].ctrls,
     "v2 blkio: the state reads back with io");
  if (back)
    cgroup_free(back);
  free(s);

  put(pf("%s/io.bfq.weight", dir), "");
  struct coil_resources u = {.blkio_weight = 500};
  rc = cgroup_update(cg, &u, &err);
  ok(rc == 0, "v2 blkio: update (%s)", rc ? err.msg : "ok");
  is_str(get(pf("%s/io.bfq.weight", dir)), "500",
         "v2 blkio: io.bfq.weight takes the weight as given");
  u = (struct coil_resources){.blkio_weight_devices = blkio_wdev,
                              .n_blkio_weight_devices = 1};
  rc = cgroup_update(cg, &u, &err);
  is_str(get(pf("%s/io.bfq.weight", dir)), "8:0 200",
         "v2 blkio: ... and the device weights");
  u = (struct coil_resources){.blkio_throttle[COIL_BLKIO_WRITE_IOPS] =
                                  &blkio_rates[3],
                              .n_blkio_throttle[COIL_BLKIO_WRITE_IOPS] = 1};
  rc = cgroup_update(cg, &u, &err);
  is_str(get(pf("%s/io.max", dir)), "253:1 wiops=40", "v2 blkio: wiops");

  put(pf("%s/memory.high", dir), "max");
  struct coil_kv kv[] = {{(char *)"memory.high", (char *)"1048576"},
                         {(char *)"pids.max", (char *)"9"}};
  u = (struct coil_resources){.unified = kv, .n_unified = 1};
  rc = cgroup_update(cg, &u, &err);
  ok(rc == 0, "v2 unified: update (%s)", rc ? err.msg : "ok");
  is_str(get(pf("%s/memory.high", dir)), "1048576",
         "v2 unified: the key's file gets the value");
  u = (struct coil_resources){.has_pids_limit = true,
                              .pids_limit = 5,
                              .unified = &kv[1],
                              .n_unified = 1};
  put(pf("%s/pids.max", dir), "max");
  rc = cgroup_update(cg, &u, &err);
  is_str(get(pf("%s/pids.max", dir)), "9",
         "v2 unified: written after the other limits, so it wins");
  static const struct {
    const char *key, *want;
  } bad[] = {
      {"memory.nope", "linux.resources.unified[\"memory.nope\"]: the "
                      "container's cgroup"},
      {"../pids.max", "linux.resources.unified[\"../pids.max\"]: not a file "
                      "name"},
      {"sub/pids.max", "linux.resources.unified[\"sub/pids.max\"]: not a"},
      {"..", "linux.resources.unified[\"..\"]: not a file name"},
      {"a\nb", "linux.resources.unified[\"a?b\"]: the container's cgroup"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct coil_kv one = {(char *)bad[i].key, (char *)"1"};
    u = (struct coil_resources){.unified = &one, .n_unified = 1};
    rc = cgroup_update(cg, &u, &err);
    ok(rc == -1 && has(err.msg, bad[i].want), "v2 unified: refuses %s (%s)",
       bad[i].key, rc ? err.msg : "accepted");
  }
  ok(!exists(pf("%s/memory.nope", dir)) &&
         !exists(pf("%s/user.slice/x/coil/pids.max", fs)),
     "v2 unified: nothing written for a refused key");
  destroy_free(cg, &err);
  ok(!exists(dir), "v2 blkio: destroy removes the cgroup with its io files");

  /* At create: a key that is no file of the new cgroup fails the create. */
  struct coil_kv missing = {(char *)"io.nope", (char *)"1"};
  u = (struct coil_resources){.unified = &missing, .n_unified = 1};
  rc = cgroup_create(&env, NULL, "b2", &u, NULL, &cg, &err);
  ok(rc == -1 && has(err.msg, "linux.resources.unified[\"io.nope\"]: "),
     "v2 unified: create fails naming the key (%s)", rc ? err.msg : "ok");
  ok(!exists(pf("%s/user.slice/x/coil", fs)),
     "v2 unified: ... and leaves nothing");
}

/* v1: the blkio hierarchy, joined only for blockIO limits; CFQ's files when
 * the kernel has them, else BFQ's; unified refused. */
static void test_v1_blkio(void) {
  struct coil_cgroup_env env = hybrid_tree(false);
  const char *fs = env.fs_root;
  struct coil_resources r = blkio_limits();
  struct coil_cgroup *cg = NULL;
  struct coil_error err = {0};
  int rc = cgroup_create(&env, NULL, "n1", &r, NULL, &cg, &err);
  ok(rc == -1 && has(err.msg, "linux.resources.blockIO.weight: the host has "
                              "no blkio cgroup controller"),
     "v1 blkio: no blkio hierarchy -> error naming the field (%s)",
     rc ? err.msg : "ok");
  put(pf("%s/blkio/cgroup.procs", fs), "1\n");
  FILE *proc = fopen(env.proc_self_cgroup, "a");
  if (proc) {
    fputs("7:blkio:/\n", proc);
    fclose(proc);
  }
  rc = cgroup_create(&env, NULL, "n1", NULL, NULL, &cg, &err);
  ok(rc == 0 && !exists(pf("%s/blkio/coil", fs)),
     "v1 blkio: not joined without blockIO limits");
  if (rc == 0)
    destroy_free(cg, &err);
  rc = cgroup_create(&env, NULL, "n1", &r, NULL, &cg, &err);
  ok(rc == 0, "v1 blkio: create (%s)", rc ? err.msg : "ok");
  if (rc)
    return;
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", pf("%s/blkio/coil/n1", fs));
  is_str(get(pf("%s/blkio.bfq.weight", dir)), "500",
         "v1: no blkio.weight (no CFQ): blkio.bfq.weight");
  is_str(get(pf("%s/blkio.bfq.weight_device", dir)), "8:0 200",
         "v1: ... and blkio.bfq.weight_device");
  put(pf("%s/blkio.weight", dir), "");
  struct coil_resources w = {.blkio_weight = 600,
                             .blkio_weight_devices = blkio_wdev,
                             .n_blkio_weight_devices = 1};
  rc = cgroup_update(cg, &w, &err);
  ok(rc == 0, "v1 blkio: update (%s)", rc ? err.msg : "ok");
  is_str(get(pf("%s/blkio.weight", dir)), "600",
         "v1: with CFQ's blkio.weight: the weight goes there");
  is_str(get(pf("%s/blkio.weight_device", dir)), "8:0 200",
         "v1: ... and blkio.weight_device");
  is_str(get(pf("%s/blkio.leaf_weight", dir)), "300", "v1: blkio.leaf_weight");
  is_str(get(pf("%s/blkio.leaf_weight_device", dir)), "8:16 100",
         "v1: blkio.leaf_weight_device");
  is_str(get(pf("%s/blkio.throttle.read_bps_device", dir)), "8:0 1048576",
         "v1: blkio.throttle.read_bps_device");
  is_str(get(pf("%s/blkio.throttle.write_bps_device", dir)), "8:0 2097152",
         "v1: blkio.throttle.write_bps_device");
  is_str(get(pf("%s/blkio.throttle.read_iops_device", dir)), "8:0 30",
         "v1: blkio.throttle.read_iops_device");
  is_str(get(pf("%s/blkio.throttle.write_iops_device", dir)), "253:1 40",
         "v1: blkio.throttle.write_iops_device");
  struct coil_kv kv = {(char *)"memory.high", (char *)"1"};
  struct coil_resources u = {.unified = &kv, .n_unified = 1};
  rc = cgroup_update(cg, &u, &err);
  ok(rc == -1 && has(err.msg, "linux.resources.unified: needs a cgroup v2"),
     "v1: unified refused (%s)", rc ? err.msg : "accepted");
  destroy_free(cg, &err);
  ok(!exists(dir) && !exists(pf("%s/blkio/coil", fs)),
     "v1 blkio: destroy removes the blkio cgroup");
  rc = cgroup_create(&env, NULL, "n2", &u, NULL, &cg, &err);
  ok(rc == -1 && has(err.msg, "linux.resources.unified: needs a cgroup v2"),
     "v1: create with unified fails (%s)", rc ? err.msg : "ok");
  ok(hybrid_coil_gone(fs) && !exists(pf("%s/blkio/coil", fs)),
     "v1: ... leaving nothing");
}

/* Below this process's own cgroups on the real host, cleaned up after. */
static void test_real(void) {
  if (geteuid() != 0 || (access("/sys/fs/cgroup/cgroup.controllers", F_OK) &&
                         access("/sys/fs/cgroup/memory/cgroup.procs", F_OK))) {
    ok(0, "the real cgroupfs test runs as root with a memory cgroup");
    return;
  }
  char id[64];
  snprintf(id, sizeof id, "unit-%d-%ld", (int)getpid(), (long)time(NULL));
  struct coil_resources r = {.has_memory_limit = true,
                             .memory_limit = 32 << 20,
                             .has_memory_swap = true,
                             .memory_swap = 32 << 20,
                             .has_pids_limit = true,
                             .pids_limit = 16};
  struct coil_cgroup *cg = NULL;
  struct coil_error err = {0};
  int rc = cgroup_create(NULL, NULL, id, &r, NULL, &cg, &err);
  ok(rc == 0, "real: create %s (%s)", id, rc ? err.msg : "ok");
  if (rc)
    return;
  const struct cg_dir *mem = NULL;
  for (size_t i = 0; i < cg->n; i++) {
    printf("# real: %s %s\n", cg->dirs[i].drv->name, cg->dirs[i].path);
    if (cg->dirs[i].ctrls & CG_BIT(CG_MEMORY))
      mem = &cg->dirs[i];
  }
  ok(mem && strstr(mem->path, "/coil/") && mem->kernel,
     "real: memory cgroup below coil/ on a cgroupfs");
  if (mem)
    is_str(get(pf("%s/%s", mem->path,
                  mem->drv == &cg_driver_v1 ? "memory.limit_in_bytes"
                                            : "memory.max")),
           "33554432", "real: memory limit reads back");

  int go[2];
  if (pipe(go) < 0)
    return;
  pid_t child = fork();
  if (child == 0) {
    char c;
    close(go[1]);
    if (read(go[0], &c, 1) != 1)
      _exit(3);
    size_t len = 128 << 20;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      _exit(2);
    for (size_t i = 0; i < len; i += 4096)
      p[i] = 1;
    _exit(0);
  }
  close(go[0]);
  rc = cgroup_enter(cg, child, &err);
  ok(rc == 0, "real: enter (%s)", rc ? err.msg : "ok");
  pid_t *pids = NULL;
  size_t n = 0;
  rc = cgroup_pids(cg, &pids, &n, &err);
  ok(rc == 0 && n == 1 && pids[0] == child,
     "real: cgroup_pids lists the child");
  free(pids);
  ok(!cgroup_oom_killed(cg), "real: no OOM kill yet");
  if (write(go[1], "x", 1) != 1)
    kill(child, SIGKILL);
  close(go[1]);
  int status = 0;
  waitpid(child, &status, 0);
  ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
     "real: 128 MiB in a 32 MiB cgroup is killed (status %#x)", status);
  ok(cgroup_oom_killed(cg), "real: the OOM kill is reported");

  rc = cgroup_destroy(cg, &err);
  ok(rc == 0, "real: destroy (%s)", rc ? err.msg : "ok");
  bool gone = true;
  for (size_t i = 0; i < cg->n; i++)
    gone = gone && !exists(cg->dirs[i].path);
  ok(gone, "real: every cgroup removed");
  rc = cgroup_destroy(cg, &err);
  ok(rc == 0, "real: destroy again succeeds");
  cgroup_free(cg);
}

int main(void) {
  snprintf(tmp, sizeof tmp, "/tmp/coil-cgroup-XXXXXX");
  if (!mkdtemp(tmp)) {
    perror("mkdtemp");
    return 1;
  }
  test_v2_full();
  test_v2_paths();
  test_v2_values();
  test_v2_errors();
  test_hybrid();
  test_plan();
  test_devices_fake();
  test_v2_freeze_update();
  test_v1_freeze_update();
  test_v2_blkio_unified();
  test_v1_blkio();
  test_real();
  rm_rf(tmp);
  return tap_done();
}
