/* The cgroup v1 driver: one hierarchy per mounted controller (or set of
 * co-mounted controllers), limits in the v1 file names and units. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_driver.h"
#include "cleanup.h"
#include "deadline.h"
#include "log.h"

/* A new v1 cpuset cgroup starts with empty cpuset.cpus and cpuset.mems, and
 * the kernel refuses tasks (ENOSPC) until both are set: inherit the
 * parent's. A level that existed may have been made an instant ago by a
 * concurrent create that has not filled it yet, so fill it too if empty. */
static int v1_init_level(struct cg_dir *d, const char *parent,
                         const char *child, bool created, bool below_base,
                         const struct coil_resources *res,
                         struct coil_error *err) {
  static const char *const files[] = {"cpuset.cpus", "cpuset.mems"};
  (void)res;
  (void)below_base;
  if (!(d->ctrls & CG_BIT(CG_CPUSET)))
    return 0;
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    if (!created) {
      cleanup_free char *cur = NULL;
      if (cg_read(child, files[i], &cur, err) == 0) {
        if (*cur)
          continue;
      } else if (err->err != ENOENT) {
        return -1;
      }
    }
    cleanup_free char *value = NULL;
    if (cg_read(parent, files[i], &value, err) < 0 ||
        cg_write(child, files[i], value, d->kernel, err) < 0)
      return -1;
  }
  return 0;
}

/* The kernel offers memory.memsw.* only with swap accounting
 * (CONFIG_MEMCG_SWAP and swapaccount=1); the hierarchy root shows it. */
static bool has_memsw(const char *root) {
  cleanup_free char *path = NULL;
  return asprintf(&path, "%s/memory.memsw.limit_in_bytes", root) >= 0 &&
         access(path, F_OK) == 0;
}

static int v1_swap(const struct cg_dir *d, const char *root,
                   const struct coil_resources *res, struct coil_error *err) {
  static bool warned_swap;
  if (!has_memsw(root)) {
    if (res->memory_swap != -1 && !warned_swap) {
      warned_swap = true;
      log_warn("linux.resources.memory.swap: %s has no "
               "memory.memsw.limit_in_bytes (no swap accounting; boot with "
               "swapaccount=1): swap is not limited",
               root);
    }
    return 0;
  }
  char v[32];
  snprintf(v, sizeof v, "%" PRId64, res->memory_swap);
  return cg_set(d, "linux.resources.memory.swap", "memory.memsw.limit_in_bytes",
                v, err);
}

/* The kernel keeps memory.memsw.limit_in_bytes >= memory.limit_in_bytes at
 * every write, so which goes first depends on where they move (an update
 * may raise both above the old memsw): memsw first when it will be no less
 * than the memory limit in force. */
static bool swap_first(const struct cg_dir *d, const struct coil_resources *res,
                       bool swap) {
  if (!swap || !res->has_memory_limit)
    return false;
  if (res->memory_swap == -1)
    return true;
  struct coil_error ignored;
  cleanup_free char *cur = NULL;
  if (cg_read(d->path, "memory.limit_in_bytes", &cur, &ignored) < 0)
    return false;
  return strtoull(cur, NULL, 10) <= (unsigned long long)res->memory_swap;
}

/* kernelTCP, swappiness and disableOOMKiller have v1 files, as runc writes
 * them; the kernel memory limit no longer does anything (Linux 5.16 made
 * memory.kmem.limit_in_bytes a no-op, 6.x drops it), so it is only warned
 * about, as runc ignores it. */
static int v1_memory_extras(const struct cg_dir *d,
                            const struct coil_resources *r,
                            struct coil_error *err) {
  static bool warned_kernel;
  char v[32];
  if (r->has_memory_kernel && !warned_kernel) {
    warned_kernel = true;
    log_warn("linux.resources.memory.kernel: ignored: the kernel no longer "
             "limits kernel memory on its own");
  }
  if (r->has_memory_kernel_tcp) {
    snprintf(v, sizeof v, "%" PRId64, r->memory_kernel_tcp);
    if (cg_set(d, "linux.resources.memory.kernelTCP",
               "memory.kmem.tcp.limit_in_bytes", v, err) < 0)
      return -1;
  }
  if (r->has_memory_swappiness) {
    snprintf(v, sizeof v, "%" PRIu64, r->memory_swappiness);
    if (cg_set(d, "linux.resources.memory.swappiness", "memory.swappiness", v,
               err) < 0)
      return -1;
  }
  if (r->memory_disable_oom_killer &&
      cg_set(d, "linux.resources.memory.disableOOMKiller", "memory.oom_control",
             "1", err) < 0)
    return -1;
  return 0;
}

static int v1_memory(const struct cg_dir *d, const char *root,
                     const struct coil_resources *res, struct coil_error *err) {
  char v[32];
  /* OCI's swap is memory+swap, exactly what memsw limits; 0 means unset, as
   * in runc. An unlimited memory without a swap lifts memsw too (runc does
   * the same), since memsw may not stay below it. */
  struct coil_resources r = *res;
  if (r.has_memory_limit && r.memory_limit == -1 &&
      (!r.has_memory_swap || r.memory_swap == 0) && has_memsw(root)) {
    r.has_memory_swap = true;
    r.memory_swap = -1;
  }
  bool swap = r.has_memory_swap && r.memory_swap != 0;
  bool early = swap_first(d, &r, swap);
  if (early && v1_swap(d, root, &r, err) < 0)
    return -1;
  if (r.has_memory_limit) {
    snprintf(v, sizeof v, "%" PRId64, r.memory_limit);
    if (cg_set(d, "linux.resources.memory.limit", "memory.limit_in_bytes", v,
               err) < 0)
      return -1;
  }
  if (r.has_memory_reservation) {
    snprintf(v, sizeof v, "%" PRId64, r.memory_reservation);
    if (cg_set(d, "linux.resources.memory.reservation",
               "memory.soft_limit_in_bytes", v, err) < 0)
      return -1;
  }
  if (swap && !early && v1_swap(d, root, &r, err) < 0)
    return -1;
  return v1_memory_extras(d, &r, err);
}

static int v1_cpu(const struct cg_dir *d, const struct coil_resources *res,
                  struct coil_error *err) {
  char v[32];
  if (cg_cpu_idle(d, res, false, err) < 0)
    return -1;
  if (res->has_cpu_shares) {
    snprintf(v, sizeof v, "%" PRIu64, res->cpu_shares);
    if (cg_set(d, "linux.resources.cpu.shares", "cpu.shares", v, err) < 0)
      return -1;
  }
  /* The kernel checks the quota against the period in force: period first. */
  if (res->has_cpu_period) {
    snprintf(v, sizeof v, "%" PRIu64, res->cpu_period);
    if (cg_set(d, "linux.resources.cpu.period", "cpu.cfs_period_us", v, err) <
        0)
      return -1;
  }
  if (res->has_cpu_quota) {
    snprintf(v, sizeof v, "%" PRId64, res->cpu_quota > 0 ? res->cpu_quota : -1);
    if (cg_set(d, "linux.resources.cpu.quota", "cpu.cfs_quota_us", v, err) < 0)
      return -1;
  }
  return cg_cpu_idle(d, res, true, err);
}

/* A new v1 devices cgroup starts with its parent's list: "a" resets it to
 * the policy's default, then each exception goes in, one line per write
 * (the kernel parses one). */
static int v1_devices(const struct cg_dir *d, const struct dev_policy *p,
                      struct coil_error *err) {
  if (!(d->ctrls & CG_BIT(CG_DEVICES)))
    return 0;
  struct dev_v1_write *w;
  size_t n;
  if (dev_policy_v1(p, &w, &n, err) < 0)
    return -1;
  for (size_t i = 0; i < n; i++)
    if (cg_write(d->path, w[i].file, w[i].line, d->kernel, err) < 0) {
      coil_error_prefix(err, "linux.resources.devices: \"%s\"", w[i].line);
      free(w);
      return -1;
    }
  free(w);
  return 0;
}

/* A v1 freeze stays FREEZING until every task has reached the
 * refrigerator, which a busy host may take a while to schedule them to, and
 * may never get there while tasks keep forking: the state is polled this
 * often, and every THAW_EVERY the cgroup is thawed for a moment and frozen
 * anew, up to WAIT_MS in all. */
#define FREEZE_WAIT_MS 5000
#define FREEZE_THAW_EVERY_MS 500
#define FREEZE_POLL_NS 1000000L
#define FREEZE_THAW_NS 10000000L

static int v1_freeze(const struct cg_dir *d, bool frozen,
                     struct coil_error *err) {
  if (!(d->ctrls & CG_BIT(CG_FREEZER)))
    return coil_error_set(err, ENOTSUP, "%s: not a freezer cgroup", d->path);
  if (!frozen)
    return cg_write(d->path, "freezer.state", "THAWED", d->kernel, err);
  long long now = deadline_now_ms();
  long long deadline = deadline_after_ms(now, FREEZE_WAIT_MS);
  long long rethaw = deadline_after_ms(now, FREEZE_THAW_EVERY_MS);
  if (cg_write(d->path, "freezer.state", "FROZEN", d->kernel, err) < 0)
    return -1;
  for (;;) {
    cleanup_free char *state = NULL;
    if (cg_read(d->path, "freezer.state", &state, err) < 0)
      return -1;
    if (!strcmp(state, "FROZEN"))
      return 0;
    if (strcmp(state, "FREEZING"))
      return coil_error_set(err, EIO, "%s/freezer.state: \"%s\" while freezing",
                            d->path, state);
    now = deadline_now_ms();
    if (deadline_slice_ms(deadline, now, -1) == 0)
      break;
    if (deadline_slice_ms(rethaw, now, -1) == 0) {
      rethaw = deadline_after_ms(now, FREEZE_THAW_EVERY_MS);
      if (cg_write(d->path, "freezer.state", "THAWED", d->kernel, err) < 0)
        return -1;
      nanosleep(&(struct timespec){.tv_nsec = FREEZE_THAW_NS}, NULL);
      if (cg_write(d->path, "freezer.state", "FROZEN", d->kernel, err) < 0)
        return -1;
      continue;
    }
    nanosleep(&(struct timespec){.tv_nsec = FREEZE_POLL_NS}, NULL);
  }
  /* Left FREEZING, some tasks would be stopped and others not. */
  struct coil_error ignored;
  cg_write(d->path, "freezer.state", "THAWED", d->kernel, &ignored);
  return coil_error_set(err, EBUSY,
                        "%s/freezer.state: still FREEZING after %d ms (tasks "
                        "keep forking?); thawed again",
                        d->path, FREEZE_WAIT_MS);
}

/* Paused means a freeze was asked of this cgroup itself, as runc reads it:
 * a task that joins a frozen cgroup (exec --ignore-paused) turns the state
 * back to FREEZING until it too is stopped, and an ancestor's freeze shows
 * FROZEN here without self_freezing. */
static bool v1_frozen(const struct cg_dir *d) {
  struct coil_error ignored;
  cleanup_free char *self = NULL;
  cleanup_free char *state = NULL;
  if (!(d->ctrls & CG_BIT(CG_FREEZER)))
    return false;
  if (cg_read(d->path, "freezer.self_freezing", &self, &ignored) == 0)
    return !strcmp(self, "1");
  return cg_read(d->path, "freezer.state", &state, &ignored) == 0 &&
         strcmp(state, "THAWED") != 0;
}

/* The blkio controller: the CFQ scheduler's blkio.weight files where the
 * kernel has them, else BFQ's blkio.bfq.weight ones (as runc picks), and the
 * throttle files. */
static int v1_blkio(const struct cg_dir *d, const struct coil_resources *res,
                    struct coil_error *err) {
  static const char *const throttle_files[COIL_BLKIO_THROTTLE_COUNT] = {
      [COIL_BLKIO_READ_BPS] = "blkio.throttle.read_bps_device",
      [COIL_BLKIO_WRITE_BPS] = "blkio.throttle.write_bps_device",
      [COIL_BLKIO_READ_IOPS] = "blkio.throttle.read_iops_device",
      [COIL_BLKIO_WRITE_IOPS] = "blkio.throttle.write_iops_device",
  };
  bool cfq = cg_has_file(d->path, "blkio.weight");
  char v[96], field[96];
  if (res->blkio_weight) {
    snprintf(v, sizeof v, "%d", res->blkio_weight);
    if (cg_set(d, "linux.resources.blockIO.weight",
               cfq ? "blkio.weight" : "blkio.bfq.weight", v, err) < 0)
      return -1;
  }
  if (res->blkio_leaf_weight) {
    snprintf(v, sizeof v, "%d", res->blkio_leaf_weight);
    if (cg_set(d, "linux.resources.blockIO.leafWeight", "blkio.leaf_weight", v,
               err) < 0)
      return -1;
  }
  for (size_t i = 0; i < res->n_blkio_weight_devices; i++) {
    const struct coil_blkio_weight_device *w = &res->blkio_weight_devices[i];
    if (w->weight) {
      snprintf(field, sizeof field,
               "linux.resources.blockIO.weightDevice[%zu].weight", i);
      snprintf(v, sizeof v, "%" PRId64 ":%" PRId64 " %d", w->major, w->minor,
               w->weight);
      if (cg_set(d, field,
                 cfq ? "blkio.weight_device" : "blkio.bfq.weight_device", v,
                 err) < 0)
        return -1;
    }
    if (w->leaf_weight) {
      snprintf(field, sizeof field,
               "linux.resources.blockIO.weightDevice[%zu].leafWeight", i);
      snprintf(v, sizeof v, "%" PRId64 ":%" PRId64 " %d", w->major, w->minor,
               w->leaf_weight);
      if (cg_set(d, field, "blkio.leaf_weight_device", v, err) < 0)
        return -1;
    }
  }
  for (int t = 0; t < COIL_BLKIO_THROTTLE_COUNT; t++)
    for (size_t i = 0; i < res->n_blkio_throttle[t]; i++) {
      snprintf(field, sizeof field, "%s[%zu]", cg_blkio_throttle_fields[t], i);
      cg_device_rate(v, sizeof v, &res->blkio_throttle[t][i]);
      if (cg_set(d, field, throttle_files[t], v, err) < 0)
        return -1;
    }
  return 0;
}

const struct cg_driver cg_driver_v1 = {
    .name = "v1",
    .oom_file = "memory.oom_control",
    .hugetlb_limit = "limit_in_bytes",
    .init_level = v1_init_level,
    .memory = v1_memory,
    .cpu = v1_cpu,
    .blkio = v1_blkio,
    .devices = v1_devices,
    .freeze = v1_freeze,
    .frozen = v1_frozen,
};
