/* Private to cgroup*.c: what cgroup.c (hierarchies, paths, lifecycle) shares
 * with the two drivers (cgroup_v1.c, cgroup_v2.c: which files, which
 * values). */
#ifndef COIL_CGROUP_DRIVER_H
#define COIL_CGROUP_DRIVER_H

#include <stdbool.h>

#include "cgroup.h"
#include "device_policy.h"

enum cg_ctrl {
  CG_MEMORY,
  CG_PIDS,
  CG_CPU,
  CG_CPUACCT,
  CG_CPUSET,
  CG_HUGETLB,
  CG_DEVICES, /* v1 only; on v2 a device program does its work */
  CG_FREEZER, /* v1 only; every v2 cgroup has cgroup.freeze */
  CG_BLKIO,   /* v1 "blkio", v2 "io" */
  CG_NCTRL
};
#define CG_BIT(c) (1u << (c))

/* "memory", "pids", ...: the kernel's names, indexed by enum cg_ctrl; v1's
 * where v1 and v2 differ (also the name in the serialized state). */
extern const char *const cg_ctrl_names[CG_NCTRL];
/* The name in v2's cgroup.controllers and cgroup.subtree_control. */
const char *cg_ctrl_v2_name(enum cg_ctrl c);

struct cg_driver;

/* The container's cgroup in one hierarchy. */
struct cg_dir {
  const struct cg_driver *drv;
  unsigned ctrls;  /* CG_BIT()s of the controllers driven through this dir */
  unsigned levels; /* ancestors to remove as well when they are left empty */
  bool kernel;     /* on a kernel cgroupfs, not a test's plain directory tree */
  char *path;
};

/* At most one hierarchy per controller, plus the unified one. */
#define CG_MAX_DIRS (CG_NCTRL + 1)

struct coil_cgroup {
  struct cg_dir dirs[CG_MAX_DIRS];
  size_t n;
  /* The systemd unit that owns the directories (--systemd-cgroup), or
   * NULL: stopped at destroy, told of updates. */
  char *unit;
};

struct cg_driver {
  const char *name;     /* "v1" or "v2", as serialized */
  const char *oom_file; /* the memory file with the "oom_kill N" line */
  /* The last part of a hugepage limit's file, hugetlb.<size>.<this>. */
  const char *hugetlb_limit;
  /* Readies `child`, the next level below `parent` on the way to the
   * container's cgroup, before any task can join it. created: this call
   * made it (else it was there already). below_base: parent is below the
   * base the path starts from (the launcher's cgroup or the root). May drop
   * controllers from d->ctrls that no limit in res needs. */
  int (*init_level)(struct cg_dir *d, const char *parent, const char *child,
                    bool created, bool below_base,
                    const struct coil_resources *res, struct coil_error *err);
  /* Write the memory and the cpu limits in res, whose files and units differ
   * between v1 and v2; called only for a d that drives the controller. root
   * is the hierarchy's root directory. The rest is written in cgroup.c. */
  int (*memory)(const struct cg_dir *d, const char *root,
                const struct coil_resources *res, struct coil_error *err);
  int (*cpu)(const struct cg_dir *d, const struct coil_resources *res,
             struct coil_error *err);
  /* linux.resources.blockIO: v1's blkio files, v2's io.weight and io.max. */
  int (*blkio)(const struct cg_dir *d, const struct coil_resources *res,
               struct coil_error *err);
  /* Confine d's tasks to the devices p allows: v1 through the devices
   * controller (when d drives it), v2 by attaching a device program.
   * Called before any task is in d. */
  int (*devices)(const struct cg_dir *d, const struct dev_policy *p,
                 struct coil_error *err);
  /* Freezes (or thaws) every task in d and below, returning once the kernel
   * reports it done; frozen() reads which it is. v1: the freezer
   * controller's freezer.state, v2: cgroup.freeze and cgroup.events. */
  int (*freeze)(const struct cg_dir *d, bool frozen, struct coil_error *err);
  bool (*frozen)(const struct cg_dir *d);
};

extern const struct cg_driver cg_driver_v1;
extern const struct cg_driver cg_driver_v2;

/* Writes value to dir/file. In a plain directory tree (kernel == false) the
 * file is created, since no kernel makes control files there. */
int cg_write(const char *dir, const char *file, const char *value, bool kernel,
             struct coil_error *err);

/* cg_write, with err prefixed by the config field the value came from. */
int cg_set(const struct cg_dir *d, const char *field, const char *file,
           const char *value, struct coil_error *err);

/* cpu.idle, named the same in v1 and v2. The kernel refuses shares and
 * weights for an idle group, so leaving idle (0) is written before them
 * (after == false) and entering it (1) after them (after == true). */
int cg_cpu_idle(const struct cg_dir *d, const struct coil_resources *res,
                bool after, struct coil_error *err);

/* Reads dir/file whole into *out (malloc'd, trailing whitespace removed).
 * On failure err->err holds the errno (ENOENT: no such file). */
int cg_read(const char *dir, const char *file, char **out,
            struct coil_error *err);

/* The value of a "key N" line of a flat-keyed file of d (cgroup.events,
 * memory.events, ...), 0 when the file or the line is absent. */
unsigned long long cg_read_key(const struct cg_dir *d, const char *file,
                               const char *key);

/* Whether dir/file exists: which of two files a kernel offers. */
bool cg_has_file(const char *dir, const char *file);

/* The throttle files' values: "major:minor rate". */
void cg_device_rate(char *buf, size_t n, const struct coil_blkio_rate *r);

/* The config field of one blockIO throttle list, e.g.
 * "linux.resources.blockIO.throttleReadBpsDevice". */
extern const char *const cg_blkio_throttle_fields[COIL_BLKIO_THROTTLE_COUNT];

/* The directory that drives controller c, or NULL. */
const struct cg_dir *cg_find_dir(const struct coil_cgroup *cg, enum cg_ctrl c);

/* The controllers whose limits res sets (CG_BIT()s); res may be NULL. */
unsigned cg_needed(const struct coil_resources *res);

/* The first config field in res that needs controller c, for messages;
 * "linux.resources" when none does. */
const char *cg_field(const struct coil_resources *res, enum cg_ctrl c);

#endif
