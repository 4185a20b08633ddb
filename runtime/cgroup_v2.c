/* The cgroup v2 driver: one unified hierarchy, controllers passed down
 * through cgroup.subtree_control, limits in the v2 file names and units. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_driver.h"
#include "cleanup.h"
#include "deadline.h"
#include "log.h"

#define CPU_PERIOD_DEFAULT 100000 /* µs, the kernel's default */

/* Appends to list, " +name" style, each controller in avail (the
 * parent's cgroup.controllers) that list does not name yet; one that does
 * not fit is left out. */
static void add_available(char *list, size_t size, const char *avail) {
  size_t len;
  for (const char *s = avail; *s; s += len + (s[len] != '\0')) {
    len = strcspn(s, " \n");
    if (len == 0)
      continue;
    char one[64];
    if (len + 2 > sizeof one)
      continue;
    snprintf(one, sizeof one, "+%.*s", (int)len, s);
    bool named = false;
    size_t ol = strlen(one);
    for (const char *t = list; (t = strstr(t, one)); t += ol)
      named |= (t[ol] == ' ' || t[ol] == '\0');
    size_t used = strlen(list);
    if (!named && used + ol + 2 <= size)
      snprintf(list + used, size - used, "%s%s", used ? " " : "", one);
  }
}

/* A cgroup gets a controller only if its parent lists it in
 * cgroup.subtree_control: enable coil's at every level on the way down,
 * starting with the existing parent. Below the launcher's own cgroup (on
 * coil's levels and those of a cgroupsPath) every controller the parent
 * has is passed on too, as runc and crun do, so a container can enable
 * for its own children what its limits leave alone; the launcher's cgroup
 * is the host's and passes on only coil's. One write for all first; if
 * that fails, one at a time, keeping what the parent can give and failing
 * only for a controller some limit needs. */
static int v2_init_level(struct cg_dir *d, const char *parent,
                         const char *child, bool created, bool below_base,
                         const struct coil_resources *res,
                         struct coil_error *err) {
  (void)child;
  (void)created;
  char all[256] = "";
  for (int c = 0; c < CG_NCTRL; c++)
    if (d->ctrls & CG_BIT(c))
      snprintf(all + strlen(all), sizeof all - strlen(all), "%s+%s",
               *all ? " " : "", cg_ctrl_v2_name(c));
  size_t own_len = strlen(all);
  cleanup_free char *avail = NULL;
  struct coil_error none = {0};
  if (below_base && cg_read(parent, "cgroup.controllers", &avail, &none) == 0)
    add_available(all, sizeof all, avail);
  if (!*all ||
      cg_write(parent, "cgroup.subtree_control", all, d->kernel, err) == 0)
    return 0;

  unsigned needed = cg_needed(res);
  for (enum cg_ctrl c = 0; c < CG_NCTRL; c++) {
    if (!(d->ctrls & CG_BIT(c)))
      continue;
    char one[32];
    snprintf(one, sizeof one, "+%s", cg_ctrl_v2_name(c));
    if (cg_write(parent, "cgroup.subtree_control", one, d->kernel, err) == 0)
      continue;
    if (needed & CG_BIT(c)) {
      char why[sizeof err->msg];
      memcpy(why, err->msg, sizeof why);
      return coil_error_set(
          err, err->err, "%s: %s%s", cg_field(res, c), why,
          err->err == EBUSY
              ? " (a v2 cgroup with processes of its own cannot pass "
                "controllers on: give an absolute linux.cgroupsPath outside "
                "the launcher's cgroup)"
              : "");
    }
    log_debug("cgroup: no %s controller below %s: %s", cg_ctrl_v2_name(c),
              parent, err->msg);
    d->ctrls &= ~CG_BIT(c);
  }
  /* The others are a convenience for the container: skipped on failure. */
  for (const char *s = all + own_len; *(s += strspn(s, " "));) {
    size_t len = strcspn(s, " ");
    char one[64];
    snprintf(one, sizeof one, "%.*s", (int)len, s);
    s += len;
    if (cg_write(parent, "cgroup.subtree_control", one, d->kernel, &none) < 0)
      log_debug("cgroup: %s not passed on below %s: %s", one + 1, parent,
                none.msg);
  }
  return 0;
}

/* -1 is "max"; anything else goes as it is, for the kernel to judge. */
static void fmt_max(char *v, size_t n, int64_t x) {
  if (x == -1)
    snprintf(v, n, "max");
  else
    snprintf(v, n, "%" PRId64, x);
}

/* OCI's memory.swap is memory+swap (v1's memsw); v2 limits swap alone, so
 * write swap - limit, the conversion runc and crun use. -1 stays "max";
 * 0 means unset, as in runc. */
static int v2_swap(const struct cg_dir *d, const struct coil_resources *res,
                   struct coil_error *err) {
  static const char field[] = "linux.resources.memory.swap";
  char v[32] = "max";
  if (!res->has_memory_swap || res->memory_swap == 0)
    return 0;
  if (res->memory_swap != -1) {
    if (!res->has_memory_limit || res->memory_limit < 0)
      return coil_error_set(err, EINVAL,
                            "%s: on cgroup v2 a swap limit needs "
                            "linux.resources.memory.limit",
                            field);
    if (res->memory_swap < res->memory_limit)
      return coil_error_set(err, EINVAL,
                            "%s: %" PRId64 " is memory+swap and must be at "
                            "least linux.resources.memory.limit (%" PRId64 ")",
                            field, res->memory_swap, res->memory_limit);
    snprintf(v, sizeof v, "%" PRId64, res->memory_swap - res->memory_limit);
  }
  return cg_set(d, field, "memory.swap.max", v, err);
}

/* cgroup v2 has no file for these; runc ignores them there without a word,
 * coil says so (once each). */
static void v2_memory_unsupported(const struct coil_resources *res) {
  static bool warned[4];
  const struct {
    bool set;
    const char *field;
  } fields[] = {
      {res->has_memory_kernel, "kernel"},
      {res->has_memory_kernel_tcp, "kernelTCP"},
      {res->has_memory_swappiness, "swappiness"},
      {res->memory_disable_oom_killer, "disableOOMKiller"},
  };
  for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
    if (fields[i].set && !warned[i]) {
      warned[i] = true;
      log_warn("linux.resources.memory.%s: ignored: cgroup v2 has no such "
               "setting",
               fields[i].field);
    }
}

static int v2_memory(const struct cg_dir *d, const char *root,
                     const struct coil_resources *res, struct coil_error *err) {
  (void)root;
  char v[32];
  if (res->has_memory_limit) {
    fmt_max(v, sizeof v, res->memory_limit);
    if (cg_set(d, "linux.resources.memory.limit", "memory.max", v, err) < 0)
      return -1;
  }
  if (res->has_memory_reservation) {
    fmt_max(v, sizeof v, res->memory_reservation);
    if (cg_set(d, "linux.resources.memory.reservation", "memory.low", v, err) <
        0)
      return -1;
  }
  v2_memory_unsupported(res);
  return v2_swap(d, res, err);
}

/* v1 shares [2, 262144] map linearly onto v2 weights [1, 10000], the
 * formula runc and crun use, so a config gets the same share from either.
 * Out-of-range shares are clamped as the v1 kernel clamps them. */
static uint64_t shares_to_weight(uint64_t shares) {
  if (shares < 2)
    shares = 2;
  if (shares > 262144)
    shares = 262144;
  return 1 + ((shares - 2) * 9999) / 262142;
}

static int v2_cpu(const struct cg_dir *d, const struct coil_resources *res,
                  struct coil_error *err) {
  char v[64];
  if (cg_cpu_idle(d, res, false, err) < 0)
    return -1;
  if (res->has_cpu_shares) {
    snprintf(v, sizeof v, "%" PRIu64, shares_to_weight(res->cpu_shares));
    if (cg_set(d, "linux.resources.cpu.shares", "cpu.weight", v, err) < 0)
      return -1;
  }
  if (res->has_cpu_quota || res->has_cpu_period) {
    uint64_t period =
        res->has_cpu_period ? res->cpu_period : CPU_PERIOD_DEFAULT;
    if (res->has_cpu_quota && res->cpu_quota > 0)
      snprintf(v, sizeof v, "%" PRId64 " %" PRIu64, res->cpu_quota, period);
    else
      snprintf(v, sizeof v, "max %" PRIu64, period);
    if (cg_set(d,
               res->has_cpu_quota ? "linux.resources.cpu.quota"
                                  : "linux.resources.cpu.period",
               "cpu.max", v, err) < 0)
      return -1;
  }
  return cg_cpu_idle(d, res, true, err);
}

/* The blockIO weight 10-1000 onto io.weight's 1-10000, as runc and crun
 * convert it. */
static uint64_t blkio_to_io_weight(int weight) {
  return 1 + ((uint64_t)weight - 10) * 9999 / 990;
}

/* With the BFQ scheduler the cgroup has io.bfq.weight, which takes the
 * blockIO weights as they are, per device too; without it io.weight takes
 * the converted default weight, and per-device weights (which io.weight
 * takes only where blk-iocost is on) are left out with a warning, as runc
 * leaves them out. leafWeight has no v2 counterpart. io.max has one line
 * per device and limit. */
static int v2_blkio(const struct cg_dir *d, const struct coil_resources *res,
                    struct coil_error *err) {
  static const char *const io_max_keys[COIL_BLKIO_THROTTLE_COUNT] = {
      [COIL_BLKIO_READ_BPS] = "rbps",
      [COIL_BLKIO_WRITE_BPS] = "wbps",
      [COIL_BLKIO_READ_IOPS] = "riops",
      [COIL_BLKIO_WRITE_IOPS] = "wiops",
  };
  static bool warned_leaf, warned_device;
  bool bfq = cg_has_file(d->path, "io.bfq.weight");
  char v[96], field[96];
  if (res->blkio_weight) {
    if (bfq)
      snprintf(v, sizeof v, "%d", res->blkio_weight);
    else
      snprintf(v, sizeof v, "%" PRIu64, blkio_to_io_weight(res->blkio_weight));
    if (cg_set(d, "linux.resources.blockIO.weight",
               bfq ? "io.bfq.weight" : "io.weight", v, err) < 0)
      return -1;
  }
  bool leaf = res->blkio_leaf_weight != 0;
  for (size_t i = 0; i < res->n_blkio_weight_devices; i++) {
    const struct coil_blkio_weight_device *w = &res->blkio_weight_devices[i];
    leaf |= w->leaf_weight != 0;
    if (!w->weight)
      continue;
    if (!bfq) {
      if (!warned_device)
        log_warn("linux.resources.blockIO.weightDevice: ignored: %s has no "
                 "io.bfq.weight (the BFQ I/O scheduler)",
                 d->path);
      warned_device = true;
      break;
    }
    snprintf(field, sizeof field,
             "linux.resources.blockIO.weightDevice[%zu].weight", i);
    snprintf(v, sizeof v, "%" PRId64 ":%" PRId64 " %d", w->major, w->minor,
             w->weight);
    if (cg_set(d, field, "io.bfq.weight", v, err) < 0)
      return -1;
  }
  if (leaf && !warned_leaf) {
    warned_leaf = true;
    log_warn("linux.resources.blockIO.leafWeight: ignored: cgroup v2 has no "
             "such setting");
  }
  for (int t = 0; t < COIL_BLKIO_THROTTLE_COUNT; t++)
    for (size_t i = 0; i < res->n_blkio_throttle[t]; i++) {
      const struct coil_blkio_rate *r = &res->blkio_throttle[t][i];
      snprintf(field, sizeof field, "%s[%zu]", cg_blkio_throttle_fields[t], i);
      snprintf(v, sizeof v, "%" PRId64 ":%" PRId64 " %s=%" PRIu64, r->major,
               r->minor, io_max_keys[t], r->rate);
      if (cg_set(d, field, "io.max", v, err) < 0)
        return -1;
    }
  return 0;
}

static int bpf(int cmd, union bpf_attr *attr) {
  return (int)syscall(SYS_bpf, cmd, attr, sizeof *attr);
}

/* cgroup v2 has no devices controller: the kernel asks the device programs
 * attached to the cgroup and its ancestors. ALLOW_MULTI keeps those of the
 * ancestors in force (all must allow) and lets a delegated parent attach
 * its own. The attachment holds the program; the cgroup's removal frees it.
 * A plain directory (a test's fake tree) cannot hold one. */
static int v2_devices(const struct cg_dir *d, const struct dev_policy *p,
                      struct coil_error *err) {
  static const char field[] = "linux.resources.devices";
  if (!d->kernel)
    return 0;
  struct bpf_insn *insns;
  size_t n;
  if (dev_policy_bpf(p, &insns, &n, err) < 0)
    return -1;
  union bpf_attr load = {
      .prog_type = BPF_PROG_TYPE_CGROUP_DEVICE,
      .insn_cnt = (uint32_t)n,
      .insns = (uint64_t)(uintptr_t)insns,
      .license = (uint64_t)(uintptr_t) "Apache-2.0",
      .expected_attach_type = BPF_CGROUP_DEVICE,
  };
  cleanup_close int prog = bpf(BPF_PROG_LOAD, &load);
  int load_errno = errno;
  free(insns);
  if (prog < 0)
    return coil_error_sys(err, load_errno, "%s: load the device program (bpf)",
                          field);
  cleanup_close int dir = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0)
    return coil_error_sys(err, errno, "%s: open %s", field, d->path);
  union bpf_attr attach = {
      .target_fd = (uint32_t)dir,
      .attach_bpf_fd = (uint32_t)prog,
      .attach_type = BPF_CGROUP_DEVICE,
      .attach_flags = BPF_F_ALLOW_MULTI,
  };
  if (bpf(BPF_PROG_ATTACH, &attach) < 0)
    return coil_error_sys(err, errno,
                          "%s: attach the device program to %s (bpf)", field,
                          d->path);
  return 0;
}

/* How long the kernel gets to report a freeze or thaw done; it waits for
 * each task to reach a safe point (a task in an uninterruptible sleep, say
 * on a hung NFS mount, may hold it up), polled this often. */
#define FREEZE_WAIT_MS 5000
#define FREEZE_POLL_NS 1000000L

static int v2_freeze(const struct cg_dir *d, bool frozen,
                     struct coil_error *err) {
  if (cg_write(d->path, "cgroup.freeze", frozen ? "1" : "0", d->kernel, err) <
      0)
    return -1;
  long long deadline = deadline_after_ms(deadline_now_ms(), FREEZE_WAIT_MS);
  while ((cg_read_key(d, "cgroup.events", "frozen") == 1) != frozen) {
    if (deadline_slice_ms(deadline, deadline_now_ms(), -1) == 0) {
      if (frozen) {
        struct coil_error ignored;
        cg_write(d->path, "cgroup.freeze", "0", d->kernel, &ignored);
      }
      return coil_error_set(err, ETIMEDOUT,
                            "%s/cgroup.events: not \"frozen %d\" %d ms after "
                            "writing cgroup.freeze%s",
                            d->path, frozen, FREEZE_WAIT_MS,
                            frozen ? "; thawed again" : "");
    }
    nanosleep(&(struct timespec){.tv_nsec = FREEZE_POLL_NS}, NULL);
  }
  return 0;
}

/* Paused means cgroup.freeze was set: cgroup.events says "frozen 0" again
 * while a task that joined the frozen cgroup is on its way to stopping. */
static bool v2_frozen(const struct cg_dir *d) {
  struct coil_error ignored;
  cleanup_free char *freeze = NULL;
  return cg_read(d->path, "cgroup.freeze", &freeze, &ignored) == 0 &&
         !strcmp(freeze, "1");
}

const struct cg_driver cg_driver_v2 = {
    .name = "v2",
    .oom_file = "memory.events",
    .hugetlb_limit = "max",
    .init_level = v2_init_level,
    .memory = v2_memory,
    .cpu = v2_cpu,
    .blkio = v2_blkio,
    .devices = v2_devices,
    .freeze = v2_freeze,
    .frozen = v2_frozen,
};
