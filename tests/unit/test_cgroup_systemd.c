/* The systemd cgroup driver's "slice:prefix:name" parsing, slice expansion
 * and unit property mapping (no bus needed), and the state form naming the
 * unit. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "cgroup_driver.h"
#include "cgroup_systemd.h"
#include "tap.h"

/* Parses path (id "c1"); "unit path slice" on success, else the error. */
static const char *parse(const char *path) {
  static char out[2048];
  struct systemd_unit u;
  struct coil_error err = {0};
  if (systemd_unit_parse(path, "c1", &u, &err) < 0) {
    snprintf(out, sizeof out, "error: %s", err.msg);
    return out;
  }
  snprintf(out, sizeof out, "%s %s %s", u.unit, u.path, u.slice);
  systemd_unit_free(&u);
  return out;
}

static void test_parse(void) {
  is_str(parse(NULL), "coil-c1.scope system.slice/coil-c1.scope system.slice",
         "no cgroupsPath: :coil:<id> in system.slice");
  is_str(parse(""), "coil-c1.scope system.slice/coil-c1.scope system.slice",
         "empty cgroupsPath: the default");
  is_str(parse(":cri-containerd:abc"),
         "cri-containerd-abc.scope system.slice/cri-containerd-abc.scope "
         "system.slice",
         "empty slice: system.slice");
  is_str(parse("kubepods-burstable-pod12.slice:cri-containerd:abc"),
         "cri-containerd-abc.scope kubepods.slice/kubepods-burstable.slice/"
         "kubepods-burstable-pod12.slice/cri-containerd-abc.scope "
         "kubepods-burstable-pod12.slice",
         "a nested slice expands to its parents");
  is_str(parse("-.slice:p:n"), "p-n.scope p-n.scope -.slice", "the root slice");
  is_str(parse("system.slice:p:my.slice"),
         "my.slice system.slice/my.slice system.slice",
         "a name ending in .slice makes a slice");
  is_str(parse("user.slice::n"), "-n.scope user.slice/-n.scope user.slice",
         "an empty prefix still joins with '-', as runc");

  const char *bad[] = {"a:b",           "a:b:c:d",        "system.slice:p:",
                       "notaslice:p:n", "a--b.slice:p:n", "-a.slice:p:n",
                       "a-.slice:p:n",  "a/b.slice:p:n",  "s.slice:p/q:n",
                       "s.slice:p:n\\x"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    const char *r = parse(bad[i]);
    ok(!strncmp(r, "error: linux.cgroupsPath", 24), "\"%s\" refused: %s",
       bad[i], r);
  }
  char longname[300];
  memset(longname, 'x', sizeof longname);
  memcpy(longname, "s.slice:p:", 10);
  longname[sizeof longname - 1] = '\0';
  ok(!strncmp(parse(longname), "error: linux.cgroupsPath", 24),
     "a unit name over 255 bytes is refused");
}

static const struct systemd_prop *find(const struct systemd_props *p,
                                       const char *name) {
  for (size_t i = 0; i < p->n; i++)
    if (!strcmp(p->v[i].name, name))
      return &p->v[i];
  return NULL;
}

static uint64_t u64_of(const struct systemd_props *p, const char *name) {
  const struct systemd_prop *v = find(p, name);
  return v && v->type == SDP_U64 ? v->u64 : 12345;
}

static void test_props(void) {
  struct coil_resources r = {0};
  struct systemd_props p;
  struct coil_error err = {0};
  int rc = systemd_resource_props(NULL, true, &p, &err);
  ok(rc == 0 && p.n == 0, "no resources: no properties");

  r.has_memory_limit = true;
  r.memory_limit = 64 << 20;
  r.has_memory_reservation = true;
  r.memory_reservation = 32 << 20;
  r.has_memory_swap = true;
  r.memory_swap = 96 << 20;
  r.has_pids_limit = true;
  r.pids_limit = 30;
  r.has_cpu_shares = true;
  r.cpu_shares = 1024;
  r.has_cpu_quota = true;
  r.cpu_quota = 12345;
  r.has_cpu_period = true;
  r.cpu_period = 100000;
  r.cpu_cpus = "0-1,9";
  r.cpu_mems = "0";
  rc = systemd_resource_props(&r, true, &p, &err);
  ok(rc == 0, "v2 mapping: %s", rc ? err.msg : "ok");
  ok(u64_of(&p, "MemoryMax") == 64 << 20, "v2: MemoryMax");
  ok(u64_of(&p, "MemoryLow") == 32 << 20, "v2: MemoryLow from reservation");
  ok(u64_of(&p, "MemorySwapMax") == 32 << 20,
     "v2: MemorySwapMax is swap - limit");
  ok(u64_of(&p, "TasksMax") == 30, "TasksMax");
  ok(u64_of(&p, "CPUWeight") == 39, "v2: shares 1024 -> CPUWeight 39");
  ok(u64_of(&p, "CPUQuotaPeriodUSec") == 100000, "CPUQuotaPeriodUSec");
  ok(u64_of(&p, "CPUQuotaPerSecUSec") == 130000,
     "CPUQuotaPerSecUSec rounded up to 10 ms");
  const struct systemd_prop *cpus = find(&p, "AllowedCPUs");
  ok(cpus && cpus->type == SDP_BYTES && cpus->n_bytes == 2 &&
         cpus->bytes[0] == 0x03 && cpus->bytes[1] == 0x02,
     "AllowedCPUs \"0-1,9\" is the little-endian mask 03 02");
  const struct systemd_prop *mems = find(&p, "AllowedMemoryNodes");
  ok(mems && mems->n_bytes == 1 && mems->bytes[0] == 0x01,
     "AllowedMemoryNodes");
  ok(!find(&p, "MemoryLimit") && !find(&p, "CPUShares"),
     "v2: no v1 properties");
  systemd_props_free(&p);

  rc = systemd_resource_props(&r, false, &p, &err);
  ok(rc == 0 && u64_of(&p, "MemoryLimit") == 64 << 20 &&
         u64_of(&p, "CPUShares") == 1024 && !find(&p, "MemoryMax") &&
         !find(&p, "MemorySwapMax") && !find(&p, "AllowedCPUs") &&
         !find(&p, "CPUWeight") && u64_of(&p, "TasksMax") == 30,
     "v1: MemoryLimit, CPUShares, TasksMax; no cpuset or swap property");
  systemd_props_free(&p);

  struct coil_resources unlimited = {.has_memory_limit = true,
                                     .memory_limit = -1,
                                     .has_pids_limit = true,
                                     .pids_limit = -1,
                                     .has_cpu_quota = true,
                                     .cpu_quota = -1};
  rc = systemd_resource_props(&unlimited, true, &p, &err);
  ok(rc == 0 && u64_of(&p, "MemoryMax") == UINT64_MAX &&
         u64_of(&p, "TasksMax") == UINT64_MAX &&
         u64_of(&p, "CPUQuotaPerSecUSec") == UINT64_MAX &&
         !find(&p, "CPUQuotaPeriodUSec"),
     "-1 is infinity; a quota without period sets no period");
  systemd_props_free(&p);

  const char *bad_sets[] = {"", "1-0", "a", "0,", "0-", "-1", "8192"};
  for (size_t i = 0; i < sizeof bad_sets / sizeof *bad_sets; i++) {
    struct coil_resources b = {.cpu_cpus = (char *)bad_sets[i]};
    rc = systemd_resource_props(&b, true, &p, &err);
    ok(rc < 0 && strstr(err.msg, "linux.resources.cpu.cpus") && p.n == 0,
       "cpus \"%s\" refused: %s", bad_sets[i], err.msg);
  }
}

static void test_state(void) {
  const char *text = "coil-cgroup/1 v2:memory,pids:0:/sys/fs/cgroup/"
                     "system.slice/p-n.scope unit:p-n.scope";
  struct coil_cgroup *cg = NULL;
  struct coil_error err = {0};
  int rc = cgroup_deserialize(text, &cg, &err);
  ok(rc == 0 && cg->unit && !strcmp(cg->unit, "p-n.scope") && cg->n == 1,
     "the state names the unit: %s", rc ? err.msg : "ok");
  char *again = rc == 0 ? cgroup_serialize(cg) : NULL;
  is_str(again, text, "and serializes back the same");
  free(again);
  cgroup_free(cg);
}

int main(void) {
  test_parse();
  test_props();
  test_state();
  return tap_done();
}
