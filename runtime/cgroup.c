/* The container's cgroups: which hierarchies the host has, where the
 * container's directory goes in each, making and removing those directories,
 * the limits v1 and v2 write alike, and the state.json form. The limits
 * whose files and units differ are the drivers' business (cgroup_v1.c,
 * cgroup_v2.c). */
#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_driver.h"
#include "cgroup_systemd.h"
#include "cleanup.h"
#include "log.h"
#include "readall.h"
#include "systemd_bus.h"

#define DEFAULT_FS_ROOT "/sys/fs/cgroup"
#define DEFAULT_PROC_SELF_CGROUP "/proc/self/cgroup"
/* Relative cgroupsPaths go below this directory of the launcher's cgroup. */
#define COIL_PARENT "coil"
#define SERIAL_TAG "coil-cgroup/1"
/* The entry naming the systemd unit, after the directories. */
#define UNIT_TAG "unit:"
/* Every container is placed under these, limits or not (memory also so an
 * OOM kill can be reported, the v1 freezer so pause can stop it; v2 needs
 * no controller for that); hugetlb only when hugepageLimits ask for it, v1
 * devices when there is a device policy to enforce, blkio (v2: io) when
 * blockIO limits ask for it. Other v1 hierarchies (name=systemd) are left
 * alone: coil neither limits through them nor owns them. */
#define CG_BASE                                                                \
  (CG_BIT(CG_MEMORY) | CG_BIT(CG_PIDS) | CG_BIT(CG_CPU) | CG_BIT(CG_CPUACCT) | \
   CG_BIT(CG_CPUSET) | CG_BIT(CG_FREEZER))
/* How long cgroup_destroy waits for dying tasks to leave (rmdir: EBUSY). */
#define DESTROY_WAIT_NS 1000000000L
#define DESTROY_POLL_NS 10000000L

const char *const cg_ctrl_names[CG_NCTRL] = {
    [CG_MEMORY] = "memory",   [CG_PIDS] = "pids",
    [CG_CPU] = "cpu",         [CG_CPUACCT] = "cpuacct",
    [CG_CPUSET] = "cpuset",   [CG_HUGETLB] = "hugetlb",
    [CG_DEVICES] = "devices", [CG_FREEZER] = "freezer",
    [CG_BLKIO] = "blkio",
};

_Static_assert(sizeof((struct coil_cgroup_join *)0)->tasks_fd / sizeof(int) >=
                   CG_MAX_DIRS,
               "a tasks fd for every hierarchy");

const char *cg_ctrl_v2_name(enum cg_ctrl c) {
  return c == CG_BLKIO ? "io" : cg_ctrl_names[c];
}

const char *const cg_blkio_throttle_fields[COIL_BLKIO_THROTTLE_COUNT] = {
    [COIL_BLKIO_READ_BPS] = "linux.resources.blockIO.throttleReadBpsDevice",
    [COIL_BLKIO_WRITE_BPS] = "linux.resources.blockIO.throttleWriteBpsDevice",
    [COIL_BLKIO_READ_IOPS] = "linux.resources.blockIO.throttleReadIOPSDevice",
    [COIL_BLKIO_WRITE_IOPS] = "linux.resources.blockIO.throttleWriteIOPSDevice",
};

void cg_device_rate(char *buf, size_t n, const struct coil_blkio_rate *r) {
  snprintf(buf, n, "%" PRId64 ":%" PRId64 " %" PRIu64, r->major, r->minor,
           r->rate);
}

static int no_memory(struct coil_error *err) {
  return coil_error_sys(err, ENOMEM, "cgroup");
}

static char *join(const char *dir, const char *name) {
  char *p;
  return asprintf(&p, "%s/%s", dir, name) < 0 ? NULL : p;
}

/* Control files are small; a cap keeps a fake tree's file from being huge. */
static int read_path(const char *path, char **out, struct coil_error *err) {
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return coil_error_sys(err, errno, "read %s", path);
  size_t len;
  if (read_all(fd, 1 << 20, false, out, &len, err) < 0)
    return coil_error_prefix(err, "read %s", path);
  while (len > 0 && ((*out)[len - 1] == '\n' || (*out)[len - 1] == ' '))
    (*out)[--len] = '\0';
  return 0;
}

int cg_read(const char *dir, const char *file, char **out,
            struct coil_error *err) {
  cleanup_free char *path = join(dir, file);
  if (!path)
    return no_memory(err);
  return read_path(path, out, err);
}

int cg_write(const char *dir, const char *file, const char *value, bool kernel,
             struct coil_error *err) {
  cleanup_free char *path = join(dir, file);
  if (!path)
    return no_memory(err);
  int flags = O_WRONLY | O_CLOEXEC | (kernel ? 0 : O_CREAT | O_TRUNC);
  cleanup_close int fd = open(path, flags, 0644);
  if (fd < 0)
    return coil_error_sys(err, errno, "write %s", path);
  size_t len = strlen(value);
  ssize_t n = write(fd, value, len);
  if (n < 0)
    return coil_error_sys(err, errno, "write %s", path);
  if ((size_t)n != len)
    return coil_error_set(err, EIO, "write %s: short write", path);
  return 0;
}

bool cg_has_file(const char *dir, const char *file) {
  cleanup_free char *path = join(dir, file);
  return path && access(path, F_OK) == 0;
}

int cg_set(const struct cg_dir *d, const char *field, const char *file,
           const char *value, struct coil_error *err) {
  if (cg_write(d->path, file, value, d->kernel, err) < 0)
    return coil_error_prefix(err, "%s", field);
  return 0;
}

int cg_cpu_idle(const struct cg_dir *d, const struct coil_resources *res,
                bool after, struct coil_error *err) {
  if (!res->has_cpu_idle || (res->cpu_idle == 1) != after)
    return 0;
  return cg_set(d, "linux.resources.cpu.idle", "cpu.idle",
                res->cpu_idle ? "1" : "0", err);
}

/* For each controller the first config field in res that needs it, NULL
 * where none does: the one place that says which field needs which. */
static void first_fields(const struct coil_resources *res,
                         const char *first[CG_NCTRL]) {
  for (int c = 0; c < CG_NCTRL; c++)
    first[c] = NULL;
  if (!res)
    return;
  const struct {
    bool set;
    enum cg_ctrl ctrl;
    const char *field;
  } uses[] = {
      {res->has_memory_limit, CG_MEMORY, "linux.resources.memory.limit"},
      {res->has_memory_reservation, CG_MEMORY,
       "linux.resources.memory.reservation"},
      {res->has_memory_swap, CG_MEMORY, "linux.resources.memory.swap"},
      {res->has_memory_kernel, CG_MEMORY, "linux.resources.memory.kernel"},
      {res->has_memory_kernel_tcp, CG_MEMORY,
       "linux.resources.memory.kernelTCP"},
      {res->has_memory_swappiness, CG_MEMORY,
       "linux.resources.memory.swappiness"},
      {res->memory_disable_oom_killer, CG_MEMORY,
       "linux.resources.memory.disableOOMKiller"},
      {res->has_pids_limit, CG_PIDS, "linux.resources.pids.limit"},
      {res->has_cpu_shares, CG_CPU, "linux.resources.cpu.shares"},
      {res->has_cpu_quota, CG_CPU, "linux.resources.cpu.quota"},
      {res->has_cpu_period, CG_CPU, "linux.resources.cpu.period"},
      {res->has_cpu_idle, CG_CPU, "linux.resources.cpu.idle"},
      {res->cpu_cpus != NULL, CG_CPUSET, "linux.resources.cpu.cpus"},
      {res->cpu_mems != NULL, CG_CPUSET, "linux.resources.cpu.mems"},
      {res->n_hugepage_limits > 0, CG_HUGETLB,
       "linux.resources.hugepageLimits"},
  };
  for (size_t i = 0; i < sizeof uses / sizeof *uses; i++)
    if (uses[i].set && !first[uses[i].ctrl])
      first[uses[i].ctrl] = uses[i].field;
  if (!first[CG_BLKIO]) {
    if (res->blkio_weight || res->blkio_leaf_weight)
      first[CG_BLKIO] = res->blkio_weight
                            ? "linux.resources.blockIO.weight"
                            : "linux.resources.blockIO.leafWeight";
    else if (res->n_blkio_weight_devices)
      first[CG_BLKIO] = "linux.resources.blockIO.weightDevice";
    for (int t = 0; !first[CG_BLKIO] && t < COIL_BLKIO_THROTTLE_COUNT; t++)
      if (res->n_blkio_throttle[t])
        first[CG_BLKIO] = cg_blkio_throttle_fields[t];
  }
  /* A unified key "<controller>.<file>" needs that controller enabled. */
  for (size_t i = 0; i < res->n_unified; i++) {
    const char *key = res->unified[i].key;
    size_t len = strcspn(key, ".");
    for (int c = 0; c < CG_NCTRL; c++)
      if (!first[c] && key[len] == '.' && strlen(cg_ctrl_v2_name(c)) == len &&
          !strncmp(key, cg_ctrl_v2_name(c), len))
        first[c] = "linux.resources.unified";
  }
}

unsigned cg_needed(const struct coil_resources *res) {
  const char *first[CG_NCTRL];
  first_fields(res, first);
  unsigned n = 0;
  for (int c = 0; c < CG_NCTRL; c++)
    if (first[c])
      n |= CG_BIT(c);
  return n;
}

const char *cg_field(const struct coil_resources *res, enum cg_ctrl c) {
  const char *first[CG_NCTRL];
  first_fields(res, first);
  return c < CG_NCTRL && first[c] ? first[c] : "linux.resources";
}

/* linux.resources.unified, after everything else (so it wins, as in
 * runc): each key names a file of the container's own v2 cgroup, nothing
 * above or below it, and never one that is not there. */
static int apply_unified(const struct cg_dir *d,
                         const struct coil_resources *res,
                         struct coil_error *err) {
  for (size_t i = 0; i < res->n_unified; i++) {
    const char *key = res->unified[i].key;
    /* Named as the config parser names map keys, on one line. */
    char field[128];
    int n = snprintf(field, sizeof field - 2, "linux.resources.unified[\"");
    for (const char *k = key; *k && n < (int)sizeof field - 3; k++)
      field[n++] = *k == '"' || (unsigned char)*k < ' ' ? '?' : *k;
    memcpy(field + n, "\"]", 3);
    if (!*key || strchr(key, '/') || !strcmp(key, ".") || !strcmp(key, ".."))
      return coil_error_set(
          err, EINVAL, "%s: not a file name of the container's cgroup", field);
    if (!cg_has_file(d->path, key))
      return coil_error_set(err, ENOENT,
                            "%s: the container's cgroup %s has no such file "
                            "(is its controller enabled?)",
                            field, d->path);
    if (cg_set(d, field, key, res->unified[i].value, err) < 0)
      return -1;
  }
  return 0;
}

/* unified is for cgroup v2 alone: on a host with v1 controllers it is an
 * error unless empty, as in runc. */
static int check_unified(const struct coil_resources *res, bool pure_v2,
                         struct coil_error *err) {
  if (res && res->n_unified > 0 && !pure_v2)
    return coil_error_set(err, EINVAL,
                          "linux.resources.unified: needs a cgroup v2 host "
                          "(this one drives its controllers through v1)");
  return 0;
}

/* Writes the limits in res for the controllers in d->ctrls: memory and cpu
 * through d's driver, the others here, where v1 and v2 agree but for the
 * name of a hugepage limit's file. root is the hierarchy's root. */
static int apply_limits(const struct cg_dir *d, const char *root,
                        const struct coil_resources *res,
                        struct coil_error *err) {
  if (!res)
    return 0;
  if ((d->ctrls & CG_BIT(CG_MEMORY)) && d->drv->memory(d, root, res, err) < 0)
    return -1;
  if ((d->ctrls & CG_BIT(CG_PIDS)) && res->has_pids_limit) {
    char v[32] = "max";
    if (res->pids_limit > 0)
      snprintf(v, sizeof v, "%" PRId64, res->pids_limit);
    if (cg_set(d, "linux.resources.pids.limit", "pids.max", v, err) < 0)
      return -1;
  }
  if ((d->ctrls & CG_BIT(CG_CPU)) && d->drv->cpu(d, res, err) < 0)
    return -1;
  if (d->ctrls & CG_BIT(CG_CPUSET)) {
    if (res->cpu_cpus && cg_set(d, "linux.resources.cpu.cpus", "cpuset.cpus",
                                res->cpu_cpus, err) < 0)
      return -1;
    if (res->cpu_mems && cg_set(d, "linux.resources.cpu.mems", "cpuset.mems",
                                res->cpu_mems, err) < 0)
      return -1;
  }
  for (size_t i = 0;
       (d->ctrls & CG_BIT(CG_HUGETLB)) && i < res->n_hugepage_limits; i++) {
    char field[64], file[64], v[32];
    snprintf(field, sizeof field, "linux.resources.hugepageLimits[%zu].limit",
             i);
    snprintf(file, sizeof file, "hugetlb.%s.%s",
             res->hugepage_limits[i].page_size, d->drv->hugetlb_limit);
    snprintf(v, sizeof v, "%" PRIu64, res->hugepage_limits[i].limit);
    if (cg_set(d, field, file, v, err) < 0)
      return -1;
  }
  if ((d->ctrls & CG_BIT(CG_BLKIO)) && d->drv->blkio(d, res, err) < 0)
    return -1;
  return d->drv == &cg_driver_v2 ? apply_unified(d, res, err) : 0;
}

/* Components of p (after a leading '/') are non-empty and not "." or "..",
 * so a path cannot climb out of the hierarchy or alias another cgroup. */
static int check_components(const char *what, const char *p,
                            struct coil_error *err) {
  const char *s = p[0] == '/' ? p + 1 : p;
  if (!*s)
    return coil_error_set(err, EINVAL, "%s \"%s\": names no cgroup", what, p);
  for (;;) {
    size_t len = strcspn(s, "/");
    if (len == 0)
      return coil_error_set(err, EINVAL, "%s \"%s\": empty path component",
                            what, p);
    if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
      return coil_error_set(err, EINVAL,
                            "%s \"%s\": \".\" and \"..\" components are not "
                            "allowed",
                            what, p);
    if (!s[len])
      return 0;
    s += len + 1;
  }
}

static int check_cgroups_path(const char *what, const char *p,
                              struct coil_error *err) {
  /* The systemd driver's "slice:prefix:name" taken as a directory name
   * would surprise. */
  if (strchr(p, ':'))
    return coil_error_set(err, EINVAL,
                          "%s \"%s\": the systemd form \"slice:prefix:name\" "
                          "needs --systemd-cgroup; else give a cgroup path",
                          what, p);
  return check_components(what, p, err);
}

/* The page size becomes part of a file name: only "<digits>KB|MB|GB". */
static int check_hugepages(const struct coil_resources *res,
                           struct coil_error *err) {
  for (size_t i = 0; res && i < res->n_hugepage_limits; i++) {
    const char *s = res->hugepage_limits[i].page_size;
    size_t digits = s ? strspn(s, "0123456789") : 0;
    if (digits == 0 || digits > 10 ||
        (strcmp(s + digits, "KB") && strcmp(s + digits, "MB") &&
         strcmp(s + digits, "GB")))
      return coil_error_set(err, EINVAL,
                            "linux.resources.hugepageLimits[%zu].pageSize "
                            "\"%s\": expected a size like \"2MB\" or \"1GB\"",
                            i, s ? s : "");
  }
  return 0;
}

/* Controller names in a list separated by any of seps, as CG_BIT()s;
 * names coil does not use are skipped. */
static unsigned parse_ctrl_list(const char *list, const char *seps) {
  unsigned bits = 0;
  size_t len;
  for (const char *s = list; *s; s += len + (s[len] != '\0')) {
    len = strcspn(s, seps);
    for (int c = 0; c < CG_NCTRL; c++)
      if ((strlen(cg_ctrl_names[c]) == len &&
           !strncmp(s, cg_ctrl_names[c], len)) ||
          (strlen(cg_ctrl_v2_name(c)) == len &&
           !strncmp(s, cg_ctrl_v2_name(c), len)))
        bits |= CG_BIT(c);
  }
  return bits;
}

/* A plain directory tree (a test's fake cgroupfs) needs control files made
 * and removed by hand. When statfs fails the path is gone: nothing to do by
 * hand either way, so report the kernel case, which never unlinks. */
static bool on_cgroupfs(const char *path) {
  struct statfs sf;
  if (statfs(path, &sf) < 0)
    return true;
  return sf.f_type == CGROUP_SUPER_MAGIC || sf.f_type == CGROUP2_SUPER_MAGIC;
}

/* A mounted hierarchy of the host. */
struct cg_hier {
  const struct cg_driver *drv;
  unsigned ctrls;
  bool kernel;
  dev_t dev;
  ino_t ino;
  char *root;
};

struct cg_host {
  struct cg_hier h[CG_MAX_DIRS];
  size_t n;
};

static void host_free(struct cg_host *host) {
  for (size_t i = 0; i < host->n; i++)
    free(host->h[i].root);
}

static int add_hier(struct cg_host *host, const struct cg_driver *drv,
                    const char *root, unsigned ctrls, struct coil_error *err) {
  struct stat st;
  if (stat(root, &st) < 0)
    return coil_error_sys(err, errno, "stat %s", root);
  struct cg_hier *h = &host->h[host->n];
  *h = (struct cg_hier){.drv = drv,
                        .ctrls = ctrls,
                        .kernel = on_cgroupfs(root),
                        .dev = st.st_dev,
                        .ino = st.st_ino,
                        .root = strdup(root)};
  if (!h->root)
    return no_memory(err);
  host->n++;
  return 0;
}

/* Finds the hierarchies carrying the wanted controllers by the files they
 * have (so a plain directory tree passes for one): a controller listed in a
 * cgroup2 cgroup.controllers is driven through v2, else through its v1
 * mount. */
static int detect(const char *fs_root, unsigned wanted, struct cg_host *host,
                  struct coil_error *err) {
  cleanup_free char *list = NULL;
  if (cg_read(fs_root, "cgroup.controllers", &list, err) == 0)
    return add_hier(host, &cg_driver_v2, fs_root,
                    parse_ctrl_list(list, " ") & wanted, err);
  if (err->err != ENOENT)
    return -1;

  cleanup_free char *unified = join(fs_root, "unified");
  if (!unified)
    return no_memory(err);
  unsigned on_v2 = 0;
  if (cg_read(unified, "cgroup.controllers", &list, err) == 0) {
    on_v2 = parse_ctrl_list(list, " ");
    /* Joined even when none of coil's controllers is on it: the container
     * then has a v2 cgroup of its own (what its cgroup namespace shows as
     * "0::/", and what kill --all can rely on) instead of the launcher's. */
    if (add_hier(host, &cg_driver_v2, unified, on_v2 & wanted, err) < 0)
      return -1;
  } else if (err->err != ENOENT) {
    return -1;
  }

  for (int c = 0; c < CG_NCTRL; c++) {
    if (!(wanted & CG_BIT(c)) || (on_v2 & CG_BIT(c)))
      continue;
    cleanup_free char *dir = join(fs_root, cg_ctrl_names[c]);
    cleanup_free char *procs = dir ? join(dir, "cgroup.procs") : NULL;
    if (!procs)
      return no_memory(err);
    /* A mounted hierarchy has cgroup.procs; a bare mount point does not. */
    struct stat st;
    if (access(procs, F_OK) < 0 || stat(dir, &st) < 0)
      continue;
    /* Co-mounted controllers ("cpu,cpuacct", with cpu and cpuacct linking
     * to it) are one hierarchy and get one directory. */
    size_t i;
    for (i = 0; i < host->n; i++)
      if (host->h[i].drv == &cg_driver_v1 && host->h[i].dev == st.st_dev &&
          host->h[i].ino == st.st_ino)
        break;
    if (i < host->n)
      host->h[i].ctrls |= CG_BIT(c);
    else if (add_hier(host, &cg_driver_v1, dir, CG_BIT(c), err) < 0)
      return -1;
  }
  return 0;
}

/* This process's cgroup in hierarchy h, from the /proc/self/cgroup lines
 * "id:controllers:path": the line naming one of h's controllers (v1), or
 * the "0::path" line (v2). */
static int own_cgroup(const char *proc_path, const char *proc_text,
                      const struct cg_hier *h, char **out,
                      struct coil_error *err) {
  bool v2 = h->drv == &cg_driver_v2;
  for (const char *line = proc_text; *line;) {
    size_t len = strcspn(line, "\n");
    const char *c1 = memchr(line, ':', len);
    const char *c2 =
        c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
    if (c2) {
      cleanup_free char *ctrls = strndup(c1 + 1, (size_t)(c2 - c1 - 1));
      if (!ctrls)
        return no_memory(err);
      bool match = v2 ? (!*ctrls && c1 - line == 1 && line[0] == '0')
                      : (parse_ctrl_list(ctrls, ",") & h->ctrls) != 0;
      if (match && c2[1] == '/') {
        *out = strndup(c2 + 1, len - (size_t)(c2 + 1 - line));
        return *out ? 0 : no_memory(err);
      }
    }
    line += len + (line[len] != '\0');
  }
  return coil_error_set(err, ENOENT, "%s: no line for the cgroup hierarchy %s",
                        proc_path, h->root);
}

/* Unlinks the control files in a plain directory tree, as rmdir on a
 * cgroupfs drops them; not when there are subdirectories, since rmdir
 * refuses then anyway. Only names a cgroupfs uses, so nothing else a test
 * put there goes. */
static bool is_control_file(const char *name) {
  if (!strcmp(name, "tasks") || !strcmp(name, "notify_on_release") ||
      !strncmp(name, "cgroup.", 7))
    return true;
  for (int c = 0; c < CG_NCTRL; c++) {
    const char *names[] = {cg_ctrl_names[c], cg_ctrl_v2_name(c)};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
      size_t len = strlen(names[i]);
      if (!strncmp(name, names[i], len) && name[len] == '.')
        return true;
    }
  }
  return false;
}

static bool is_subdir(const char *dir, const struct dirent *e) {
  if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
    return false;
  if (e->d_type != DT_UNKNOWN)
    return e->d_type == DT_DIR;
  cleanup_free char *p = join(dir, e->d_name);
  struct stat st;
  return p && lstat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static void free_dirents(struct dirent **list, int n) {
  for (int i = 0; i < n; i++)
    free(list[i]);
  free(list);
}

static int unlink_control_files(const char *path) {
  struct dirent **list;
  int n = scandir(path, &list, NULL, NULL);
  if (n < 0)
    return -1;
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++)
    if (is_subdir(path, list[i])) {
      errno = ENOTEMPTY;
      rc = -1;
    }
  for (int i = 0; i < n && rc == 0; i++) {
    if (list[i]->d_type == DT_REG && is_control_file(list[i]->d_name)) {
      cleanup_free char *p = join(path, list[i]->d_name);
      if (p)
        unlink(p);
    }
  }
  free_dirents(list, n);
  return rc;
}

/* rmdir of a cgroup; errno as rmdir's. */
static int cg_rmdir(const char *path, bool kernel) {
  if (!kernel && unlink_control_files(path) < 0)
    return -1;
  return rmdir(path);
}

static bool before(const struct timespec *deadline) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec < deadline->tv_sec ||
         (now.tv_sec == deadline->tv_sec && now.tv_nsec < deadline->tv_nsec);
}

/* Calls fn(child, arg, err) for each cgroup right below dir, until one
 * fails. A cgroup that has vanished meanwhile has none. */
static int each_child(const char *dir,
                      int (*fn)(const char *child, void *arg,
                                struct coil_error *err),
                      void *arg, struct coil_error *err) {
  struct dirent **list;
  int n = scandir(dir, &list, NULL, NULL);
  if (n < 0)
    return errno == ENOENT ? 0 : coil_error_sys(err, errno, "read %s", dir);
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    if (!is_subdir(dir, list[i]))
      continue;
    cleanup_free char *child = join(dir, list[i]->d_name);
    rc = child ? fn(child, arg, err) : no_memory(err);
  }
  free_dirents(list, n);
  return rc;
}

/* remove_tree's arguments but the path, passed down by each_child. */
struct removal {
  bool kernel;
  const struct timespec *deadline;
};

/* Removes the container's cgroup and any sub-cgroups it made itself (it may
 * have had a cgroup namespace), depth first. On a cgroupfs rmdir says EBUSY
 * both for sub-cgroups and for tasks still exiting: look for sub-cgroups
 * once, then give the tasks until the deadline. */
static int remove_tree(const char *path, void *removal,
                       struct coil_error *err) {
  const struct removal *r = removal;
  bool looked = false;
  for (;;) {
    if (cg_rmdir(path, r->kernel) == 0 || errno == ENOENT)
      return 0;
    int e = errno;
    if ((e == EBUSY || e == ENOTEMPTY) && !looked) {
      looked = true;
      if (each_child(path, remove_tree, removal, err) < 0)
        return -1;
      continue;
    }
    if (e == EBUSY && before(r->deadline)) {
      nanosleep(&(struct timespec){.tv_nsec = DESTROY_POLL_NS}, NULL);
      continue;
    }
    return coil_error_sys(err, e, "rmdir %s", path);
  }
}

/* Removes up to `levels` ancestors of path that are left empty, nearest
 * first; one still in use (other containers' cgroups) ends the walk. */
static int remove_empty_ancestors(const char *path, unsigned levels,
                                  bool kernel, struct coil_error *err) {
  cleanup_free char *p = strdup(path);
  if (!p)
    return no_memory(err);
  for (unsigned i = 0; i < levels; i++) {
    char *slash = strrchr(p, '/');
    if (!slash || slash == p)
      break;
    *slash = '\0';
    if (cg_rmdir(p, kernel) == 0 || errno == ENOENT)
      continue;
    if (errno == EBUSY || errno == ENOTEMPTY)
      break;
    return coil_error_sys(err, errno, "rmdir %s", p);
  }
  return 0;
}

/* What a level removed under our feet looks like. */
static bool vanished(int e) { return e == ENOENT || e == ENODEV; }

/* Makes base/rel one level at a time; base must exist. Levels above the
 * last may exist already ("coil" is shared by containers); the last is the
 * container's own and must be new unless may_exist (systemd made it). Each
 * level is readied by the driver before the next. On failure removes the
 * levels it made. */
static int make_dirs(struct cg_dir *d, const char *base, const char *rel,
                     bool may_exist, const struct coil_resources *res,
                     unsigned *made, struct coil_error *err) {
  cleanup_free char *full = join(base, rel);
  size_t nlev = 1;
  for (const char *p = rel; *p; p++)
    nlev += *p == '/';
  cleanup_free size_t *ends = calloc(nlev, sizeof *ends);
  cleanup_free bool *created = calloc(nlev, sizeof *created);
  if (!full || !ends || !created)
    return no_memory(err);
  size_t base_len = strlen(base);
  for (size_t k = base_len + 1, lev = 0; lev < nlev; k++)
    if (full[k] == '/' || !full[k])
      ends[lev++] = k;

  /* A concurrent cgroup_destroy may remove a "coil" it found empty just as
   * this makes or readies the next level in it (ENOENT, or ENODEV for a file
   * of a cgroup being removed): start over, a few times. */
  for (int attempt = 0;; attempt++) {
    bool retry = false;
    size_t lev;
    for (lev = 0; lev < nlev; lev++) {
      cleanup_free char *child = strndup(full, ends[lev]);
      cleanup_free char *parent = strndup(full, lev ? ends[lev - 1] : base_len);
      if (!child || !parent) {
        no_memory(err);
        break;
      }
      bool last = lev + 1 == nlev;
      created[lev] = mkdir(child, 0755) == 0;
      if (!created[lev] && errno == EEXIST && last && !may_exist) {
        coil_error_set(err, EEXIST, "cgroup %s already exists", child);
        break;
      }
      if (!created[lev] && vanished(errno) && lev > 0 && attempt < 3) {
        retry = true;
        break;
      }
      if (!created[lev] && errno != EEXIST) {
        coil_error_sys(err, errno, "mkdir %s", child);
        break;
      }
      if (d->drv->init_level(d, parent, child, created[lev], lev > 0, res,
                             err) < 0) {
        retry = vanished(err->err) && attempt < 3;
        lev++;
        break;
      }
    }
    if (lev == nlev && !retry) {
      *made = 0;
      for (lev = 0; lev < nlev; lev++)
        *made += created[lev];
      d->path = steal_ptr(full);
      return 0;
    }
    while (lev-- > 0) {
      if (!created[lev])
        continue;
      full[ends[lev]] = '\0';
      cg_rmdir(full, d->kernel);
      full[ends[lev]] = lev + 1 < nlev ? '/' : '\0';
      created[lev] = false;
    }
    if (!retry)
      return -1;
  }
}

/* What cgroup_create decides before it touches a cgroup: the hierarchies,
 * the path below each base and the launcher's own cgroups. */
struct cg_plan {
  struct cg_host host;
  const char *proc_path;
  char *proc_text;
  char *rel;
  unsigned depth;
  bool relative;
  struct systemd_unit unit; /* the systemd driver's, else zeroed */
};

static void plan_free(struct cg_plan *p) {
  host_free(&p->host);
  free(p->proc_text);
  free(p->rel);
  systemd_unit_free(&p->unit);
}

static int plan_paths(const struct coil_cgroup_env *env,
                      const char *cgroups_path, const char *id,
                      const struct coil_resources *res, bool devices,
                      struct cg_plan *p, struct coil_error *err) {
  const char *fs_root = env && env->fs_root ? env->fs_root : DEFAULT_FS_ROOT;
  p->proc_path = env && env->proc_self_cgroup ? env->proc_self_cgroup
                                              : DEFAULT_PROC_SELF_CGROUP;
  bool systemd = env && env->systemd;
  const char *path = cgroups_path ? cgroups_path : id;
  if (!path)
    return coil_error_set(err, EINVAL,
                          "cgroup: neither linux.cgroupsPath nor a container "
                          "id given");
  if (systemd) {
    /* The unit's cgroup, at the same place in every hierarchy. */
    if (systemd_unit_parse(cgroups_path, id, &p->unit, err) < 0)
      return -1;
  } else if (check_cgroups_path(cgroups_path ? "linux.cgroupsPath"
                                             : "container id",
                                path, err) < 0) {
    return -1;
  }
  if (check_hugepages(res, err) < 0)
    return -1;
  p->relative = !systemd && path[0] != '/';

  unsigned needed = cg_needed(res);
  unsigned wanted = CG_BASE | needed | (devices ? CG_BIT(CG_DEVICES) : 0);
  if (detect(fs_root, wanted, &p->host, err) < 0)
    return -1;
  if (p->host.n == 0)
    return coil_error_set(
        err, ENOENT,
        "no cgroup hierarchy under %s (no cgroup.controllers, "
        "no controller directories)",
        fs_root);
  if (check_unified(res, p->host.n == 1 && p->host.h[0].drv == &cg_driver_v2,
                    err) < 0)
    return -1;
  unsigned have = 0;
  for (size_t i = 0; i < p->host.n; i++)
    have |= p->host.h[i].ctrls;
  for (enum cg_ctrl c = 0; c < CG_NCTRL; c++)
    if (needed & ~have & CG_BIT(c))
      return coil_error_set(err, ENOENT,
                            "%s: the host has no %s cgroup controller (looked "
                            "under %s)",
                            cg_field(res, c), cg_ctrl_names[c], fs_root);
  /* Either layer confines on its own; without both nothing would. */
  bool has_v2 = false;
  for (size_t i = 0; i < p->host.n; i++)
    has_v2 |= p->host.h[i].drv == &cg_driver_v2;
  if (devices && !has_v2 && !(have & CG_BIT(CG_DEVICES)))
    return coil_error_set(err, ENOENT,
                          "linux.resources.devices: the host has neither a "
                          "devices cgroup controller nor cgroup2 under %s, so "
                          "device access cannot be confined",
                          fs_root);

  if (p->relative && read_path(p->proc_path, &p->proc_text, err) < 0)
    return -1;
  if (systemd)
    p->rel = strdup(p->unit.path);
  else if (asprintf(&p->rel, "%s%s", p->relative ? COIL_PARENT "/" : "",
                    p->relative ? path : path + 1) < 0)
    p->rel = NULL;
  if (!p->rel)
    return no_memory(err);
  for (const char *s = p->rel; *s; s++)
    p->depth += *s == '/';
  return 0;
}

/* The cgroup hierarchy i's container path goes under. */
static int plan_base(const struct cg_plan *p, size_t i, char **base,
                     struct coil_error *err) {
  const struct cg_hier *h = &p->host.h[i];
  cleanup_free char *own = NULL;
  if (p->relative && own_cgroup(p->proc_path, p->proc_text, h, &own, err) < 0)
    return -1;
  *base = own && own[1] ? join(h->root, own + 1) : strdup(h->root);
  return *base ? 0 : no_memory(err);
}

int cgroup_plan(const struct coil_cgroup_env *env, const char *cgroups_path,
                const char *id, const struct coil_resources *res,
                const struct dev_policy *devices, struct coil_cgroup **out,
                struct coil_error *err) {
  *out = NULL;
  struct cg_plan p __attribute__((cleanup(plan_free))) = {0};
  if (plan_paths(env, cgroups_path, id, res, devices != NULL, &p, err) < 0)
    return -1;
  struct coil_cgroup *cg = calloc(1, sizeof *cg);
  if (!cg)
    return no_memory(err);
  for (size_t i = 0; i < p.host.n; i++) {
    const struct cg_hier *h = &p.host.h[i];
    cleanup_free char *base = NULL;
    if (plan_base(&p, i, &base, err) < 0) {
      cgroup_free(cg);
      return -1;
    }
    struct cg_dir *d = &cg->dirs[cg->n++];
    /* Absolute paths: which levels a create would make is known only after
     * it, so the plan owns just the last. */
    *d = (struct cg_dir){.drv = h->drv,
                         .ctrls = h->ctrls,
                         .kernel = h->kernel,
                         .path = join(base, p.rel),
                         .levels = p.relative ? p.depth : 0};
    if (!d->path) {
      cgroup_free(cg);
      return no_memory(err);
    }
  }
  *out = cg;
  return 0;
}

/* The systemd driver's unit: started with the limits systemd has
 * properties for, holding pid; cg then names it. */
static int start_unit(const struct cg_plan *p, const struct coil_resources *res,
                      pid_t pid, struct coil_cgroup *cg,
                      struct coil_error *err) {
  bool v2 = true;
  for (size_t i = 0; i < p->host.n; i++)
    v2 &= p->host.h[i].drv == &cg_driver_v2;
  struct systemd_props props __attribute__((cleanup(systemd_props_free))) = {0};
  if (systemd_resource_props(res, v2, &props, err) < 0)
    return -1;
  if (systemd_start_unit(&p->unit, systemd_unit_is_slice(&p->unit) ? 0 : pid,
                         &props, err) < 0)
    return -1;
  cg->unit = strdup(p->unit.unit);
  if (!cg->unit) {
    struct coil_error e;
    systemd_stop_unit(p->unit.unit, &e);
    return no_memory(err);
  }
  return 0;
}

int cgroup_create(const struct coil_cgroup_env *env, const char *cgroups_path,
                  const char *id, const struct coil_resources *res,
                  const struct dev_policy *devices, struct coil_cgroup **out,
                  struct coil_error *err) {
  *out = NULL;
  struct cg_plan p __attribute__((cleanup(plan_free))) = {0};
  if (plan_paths(env, cgroups_path, id, res, devices != NULL, &p, err) < 0)
    return -1;
  struct coil_cgroup *cg = calloc(1, sizeof *cg);
  if (!cg)
    return no_memory(err);
  bool systemd = env && env->systemd;
  if (systemd && start_unit(&p, res, env->pid, cg, err) < 0) {
    cgroup_free(cg);
    return -1;
  }
  for (size_t i = 0; i < p.host.n; i++) {
    const struct cg_hier *h = &p.host.h[i];
    struct cg_dir *d = &cg->dirs[cg->n];
    *d = (struct cg_dir){.drv = h->drv, .ctrls = h->ctrls, .kernel = h->kernel};
    cleanup_free char *base = NULL;
    if (plan_base(&p, i, &base, err) < 0)
      goto fail;
    unsigned made = 0;
    if (make_dirs(d, base, p.rel, systemd, res, &made, err) < 0)
      goto fail;
    /* Relative: everything from "coil" down is coil's, to remove once
     * empty. Absolute: only the levels this call made. */
    d->levels = p.relative ? p.depth : made ? made - 1 : 0;
    cg->n++;
  }
  /* systemd put pid in its own hierarchies only (a slice takes none). */
  if (systemd && cgroup_enter(cg, env->pid, err) < 0)
    goto fail;
  for (size_t i = 0; i < cg->n; i++)
    if (apply_limits(&cg->dirs[i], p.host.h[i].root, res, err) < 0 ||
        (devices && cg->dirs[i].drv->devices(&cg->dirs[i], devices, err) < 0))
      goto fail;
  *out = cg;
  return 0;

fail:;
  struct coil_error undo_err;
  if (cgroup_destroy(cg, &undo_err) < 0)
    log_warn("cgroup: undoing a failed create: %s", undo_err.msg);
  cgroup_free(cg);
  return -1;
}

int cgroup_enter(const struct coil_cgroup *cg, pid_t pid,
                 struct coil_error *err) {
  char value[24];
  snprintf(value, sizeof value, "%d", (int)pid);
  for (size_t i = 0; i < cg->n; i++)
    if (cg_write(cg->dirs[i].path, "cgroup.procs", value, cg->dirs[i].kernel,
                 err) < 0)
      return -1;
  return 0;
}

/* The first cgroup at or below dir (depth first) whose cgroup.procs lists
 * pid. */
struct pid_search {
  pid_t pid;
  char *found;
};

static int find_pid_dir(const char *dir, void *search, struct coil_error *err) {
  struct pid_search *s = search;
  if (s->found)
    return 0;
  cleanup_free char *text = NULL;
  if (cg_read(dir, "cgroup.procs", &text, err) < 0)
    return err->err == ENOENT ? 0 : -1;
  for (char *p = text; *p;) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p)
      break;
    if (v == s->pid) {
      s->found = strdup(dir);
      return s->found ? 0 : no_memory(err);
    }
    p = end + strspn(end, "\n");
  }
  return each_child(dir, find_pid_dir, s, err);
}

int cgroup_enter_exec(const struct coil_cgroup *cg, pid_t pid, pid_t init,
                      struct coil_error *err) {
  char value[24];
  snprintf(value, sizeof value, "%d", (int)pid);
  for (size_t i = 0; i < cg->n; i++) {
    const struct cg_dir *d = &cg->dirs[i];
    if (cg_write(d->path, "cgroup.procs", value, d->kernel, err) == 0)
      continue;
    if (err->err != EBUSY || d->drv != &cg_driver_v2)
      return -1;
    struct coil_error busy = *err;
    struct pid_search s = {.pid = init};
    if (find_pid_dir(d->path, &s, err) < 0)
      return -1;
    if (!s.found) {
      *err = busy;
      return -1;
    }
    int r = cg_write(s.found, "cgroup.procs", value, d->kernel, err);
    free(s.found);
    if (r < 0)
      return -1;
  }
  return 0;
}

int cgroup_join_prepare(const struct coil_cgroup *cg,
                        struct coil_cgroup_join *j, struct coil_error *err) {
  *j = (struct coil_cgroup_join){.v2_fd = -1};
  for (size_t i = 0; i < cg->n; i++) {
    const struct cg_dir *d = &cg->dirs[i];
    bool v2 = d->drv == &cg_driver_v2;
    cleanup_free char *path = v2 ? strdup(d->path) : join(d->path, "tasks");
    if (!path) {
      cgroup_join_close(j);
      return no_memory(err);
    }
    int fd = open(path, (v2 ? O_RDONLY | O_DIRECTORY : O_WRONLY) | O_CLOEXEC);
    if (fd < 0) {
      int e = errno;
      cgroup_join_close(j);
      return coil_error_sys(err, e, "open %s", path);
    }
    if (v2)
      j->v2_fd = fd;
    else
      j->tasks_fd[j->n_tasks++] = fd;
  }
  return 0;
}

int cgroup_join_self(struct coil_cgroup_join *j, struct coil_error *err) {
  int r = 0;
  for (size_t i = 0; i < j->n_tasks; i++)
    if (r == 0 && write(j->tasks_fd[i], "0", 1) != 1)
      r = coil_error_sys(err, errno, "join the container's v1 cgroups");
  cgroup_join_close(j);
  return r;
}

void cgroup_join_close(struct coil_cgroup_join *j) {
  for (size_t i = 0; i < j->n_tasks; i++)
    close(j->tasks_fd[i]);
  if (j->v2_fd >= 0)
    close(j->v2_fd);
  *j = (struct coil_cgroup_join){.v2_fd = -1};
}

static const struct cg_dir *find_dir(const struct coil_cgroup *cg,
                                     enum cg_ctrl c) {
  for (size_t i = 0; i < cg->n; i++)
    if (cg->dirs[i].ctrls & CG_BIT(c))
      return &cg->dirs[i];
  return NULL;
}

struct pid_list {
  pid_t *v;
  size_t n, cap;
};

/* Appends the pids of dir and of every cgroup below it to the pid_list.
 * A cgroup that vanishes meanwhile has none. */
static int collect_pids(const char *dir, void *pid_list,
                        struct coil_error *err) {
  struct pid_list *l = pid_list;
  cleanup_free char *text = NULL;
  if (cg_read(dir, "cgroup.procs", &text, err) < 0)
    return err->err == ENOENT ? 0 : -1;
  for (char *s = text; *s;) {
    char *end;
    long pid = strtol(s, &end, 10);
    if (end == s || pid <= 0)
      return coil_error_set(err, EINVAL, "%s/cgroup.procs: not a pid list",
                            dir);
    if (l->n == l->cap) {
      size_t cap = l->cap ? l->cap * 2 : 16;
      pid_t *v = reallocarray(l->v, cap, sizeof *v);
      if (!v)
        return no_memory(err);
      l->v = v;
      l->cap = cap;
    }
    l->v[l->n++] = (pid_t)pid;
    s = end + strspn(end, "\n");
  }
  return each_child(dir, collect_pids, l, err);
}

int cgroup_pids(const struct coil_cgroup *cg, pid_t **pids, size_t *n,
                struct coil_error *err) {
  *pids = NULL;
  *n = 0;
  /* Every hierarchy has every task; pids (else memory) is the one whose
   * limits a container is likeliest to be fighting. */
  const struct cg_dir *d = find_dir(cg, CG_PIDS);
  if (!d)
    d = find_dir(cg, CG_MEMORY);
  if (!d)
    d = &cg->dirs[0];
  struct pid_list l = {0};
  if (collect_pids(d->path, &l, err) < 0) {
    free(l.v);
    return -1;
  }
  *pids = l.v;
  *n = l.n;
  return 0;
}

bool cgroup_holds(const struct coil_cgroup *cg, pid_t pid) {
  for (size_t i = 0; i < cg->n; i++) {
    struct pid_list l = {0};
    struct coil_error ignored;
    bool found = false;
    if (collect_pids(cg->dirs[i].path, &l, &ignored) == 0)
      for (size_t k = 0; k < l.n && !found; k++)
        found = l.v[k] == pid;
    free(l.v);
    if (found)
      return true;
  }
  return false;
}

unsigned long long cg_read_key(const struct cg_dir *d, const char *file,
                               const char *key) {
  struct coil_error err;
  cleanup_free char *text = NULL;
  if (!d || cg_read(d->path, file, &text, &err) < 0)
    return 0;
  size_t klen = strlen(key);
  for (const char *line = text; line; line = strchr(line, '\n')) {
    if (*line == '\n')
      line++;
    if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
      return strtoull(line + klen + 1, NULL, 10);
  }
  return 0;
}

bool cgroup_oom_killed(const struct coil_cgroup *cg) {
  /* "oom_kill N": v1 memory.oom_control since Linux 4.13, v2 memory.events. */
  const struct cg_dir *d = find_dir(cg, CG_MEMORY);
  return d && cg_read_key(d, d->drv->oom_file, "oom_kill") > 0;
}

unsigned long long cgroup_pids_limit_hits(const struct coil_cgroup *cg) {
  /* "max N" of pids.events (v1 and v2): forks refused at pids.max. */
  return cg_read_key(find_dir(cg, CG_PIDS), "pids.events", "max");
}

/* Where the container is frozen: in the v1 freezer hierarchy when the
 * host mounts one, else in its v2 cgroup (which needs no controller for
 * it, so a container made before coil used the v1 freezer still has one). */
static const struct cg_dir *freezer_dir(const struct coil_cgroup *cg) {
  const struct cg_dir *d = find_dir(cg, CG_FREEZER);
  for (size_t i = 0; !d && i < cg->n; i++)
    if (cg->dirs[i].drv == &cg_driver_v2)
      d = &cg->dirs[i];
  return d;
}

int cgroup_freeze(const struct coil_cgroup *cg, bool frozen,
                  struct coil_error *err) {
  const struct cg_dir *d = freezer_dir(cg);
  if (!d)
    return coil_error_set(err, ENOTSUP,
                          "the container has no cgroup that can be frozen "
                          "(neither a v1 freezer hierarchy nor cgroup2)");
  return d->drv->freeze(d, frozen, err);
}

bool cgroup_frozen(const struct coil_cgroup *cg) {
  const struct cg_dir *d = freezer_dir(cg);
  return d && d->drv->frozen(d);
}

int cgroup_update(const struct coil_cgroup *cg,
                  const struct coil_resources *res, struct coil_error *err) {
  if (check_hugepages(res, err) < 0 ||
      check_unified(res, cg->n == 1 && cg->dirs[0].drv == &cg_driver_v2, err) <
          0)
    return -1;
  unsigned have = 0;
  for (size_t i = 0; i < cg->n; i++)
    have |= cg->dirs[i].ctrls;
  for (enum cg_ctrl c = 0; c < CG_NCTRL; c++)
    if (cg_needed(res) & ~have & CG_BIT(c))
      return coil_error_set(err, ENOENT,
                            "%s: the container has no %s cgroup (it is made "
                            "at create only when the host has the controller "
                            "or a limit needs it)",
                            cg_field(res, c), cg_ctrl_names[c]);
  if (cg->unit) {
    bool v2 = true;
    for (size_t i = 0; i < cg->n; i++)
      v2 &= cg->dirs[i].drv == &cg_driver_v2;
    struct systemd_props props
        __attribute__((cleanup(systemd_props_free))) = {0};
    if (systemd_resource_props(res, v2, &props, err) < 0 ||
        systemd_set_unit_properties(cg->unit, &props, err) < 0)
      return -1;
  }
  /* Each memory cgroup shows memory.memsw.* as its root does, so the
   * container's own directory tells whether swap is accounted. */
  for (size_t i = 0; i < cg->n; i++)
    if (apply_limits(&cg->dirs[i], cg->dirs[i].path, res, err) < 0)
      return -1;
  return 0;
}

int cgroup_destroy(const struct coil_cgroup *cg, struct coil_error *err) {
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_nsec += DESTROY_WAIT_NS;
  deadline.tv_sec += deadline.tv_nsec / 1000000000L;
  deadline.tv_nsec %= 1000000000L;

  int rc = 0;
  /* systemd removes its unit's directories; the rest are coil's. */
  if (cg->unit && systemd_stop_unit(cg->unit, err) < 0)
    rc = -1;
  for (size_t i = cg->n; i-- > 0;) {
    const struct cg_dir *d = &cg->dirs[i];
    struct coil_error e;
    struct removal r = {.kernel = d->kernel, .deadline = &deadline};
    if (remove_tree(d->path, &r, &e) < 0 ||
        remove_empty_ancestors(d->path, d->levels, d->kernel, &e) < 0) {
      /* Go on with the other hierarchies; report the first failure. */
      if (rc == 0)
        *err = e;
      rc = -1;
    }
  }
  return rc;
}

/* Serialized paths keep these bytes; others become %XX, so the text is one
 * line, splits on ' ' and ':', and is a JSON string as it is. */
static bool keeps(unsigned char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
         (ch >= '0' && ch <= '9') || strchr("/._-+=@,", ch) != NULL;
}

/* "coil-cgroup/1 <driver>:<controllers>:<levels>:<path> ...", e.g.
 * "coil-cgroup/1 v2:-:1:/sys/fs/cgroup/unified/coil/c1
 *  v1:memory:1:/sys/fs/cgroup/memory/coil/c1". */
char *cgroup_serialize(const struct coil_cgroup *cg) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return NULL;
  fputs(SERIAL_TAG, f);
  for (size_t i = 0; i < cg->n; i++) {
    const struct cg_dir *d = &cg->dirs[i];
    fprintf(f, " %s:", d->drv->name);
    const char *sep = "";
    for (int c = 0; c < CG_NCTRL; c++)
      if (d->ctrls & CG_BIT(c)) {
        fprintf(f, "%s%s", sep, cg_ctrl_names[c]);
        sep = ",";
      }
    fprintf(f, "%s:%u:", d->ctrls ? "" : "-", d->levels);
    for (const unsigned char *p = (const unsigned char *)d->path; *p; p++)
      if (keeps(*p))
        fputc(*p, f);
      else
        fprintf(f, "%%%02X", *p);
  }
  /* Unit names keep to keeps()'s bytes (cgroup_systemd.c checks). */
  if (cg->unit)
    fprintf(f, " " UNIT_TAG "%s", cg->unit);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

static int hex_digit(char ch) {
  if (ch >= '0' && ch <= '9')
    return ch - '0';
  if (ch >= 'A' && ch <= 'F')
    return ch - 'A' + 10;
  if (ch >= 'a' && ch <= 'f')
    return ch - 'a' + 10;
  return -1;
}

static int parse_entry(char *entry, struct cg_dir *d, struct coil_error *err) {
  char *f[4];
  f[0] = entry;
  for (int i = 1; i < 4; i++) {
    f[i] = strchr(f[i - 1], ':');
    if (!f[i])
      return coil_error_set(err, EINVAL,
                            "cgroup state \"%s\": expected "
                            "driver:controllers:levels:path",
                            entry);
    *f[i]++ = '\0';
  }
  if (!strcmp(f[0], "v1"))
    d->drv = &cg_driver_v1;
  else if (!strcmp(f[0], "v2"))
    d->drv = &cg_driver_v2;
  else
    return coil_error_set(err, EINVAL, "cgroup state: unknown driver \"%s\"",
                          f[0]);

  d->ctrls = 0;
  if (strcmp(f[1], "-")) {
    for (char *save, *name = strtok_r(f[1], ",", &save); name;
         name = strtok_r(NULL, ",", &save)) {
      unsigned bit = parse_ctrl_list(name, ",");
      if (!bit)
        return coil_error_set(err, EINVAL,
                              "cgroup state: unknown controller \"%s\"", name);
      d->ctrls |= bit;
    }
  }

  char *end;
  errno = 0;
  unsigned long levels = strtoul(f[2], &end, 10);
  if (end == f[2] || *end || errno || f[2][0] == '-' || levels > 64)
    return coil_error_set(err, EINVAL, "cgroup state: bad level count \"%s\"",
                          f[2]);
  d->levels = (unsigned)levels;

  size_t len = strlen(f[3]), o = 0;
  cleanup_free char *path = malloc(len + 1);
  if (!path)
    return no_memory(err);
  for (size_t i = 0; i < len; i++) {
    int hi, lo;
    if (f[3][i] != '%') {
      path[o++] = f[3][i];
    } else if (i + 2 < len && (hi = hex_digit(f[3][i + 1])) >= 0 &&
               (lo = hex_digit(f[3][i + 2])) >= 0 && (hi || lo)) {
      path[o++] = (char)(hi << 4 | lo);
      i += 2;
    } else {
      return coil_error_set(err, EINVAL, "cgroup state: bad escape in \"%s\"",
                            f[3]);
    }
  }
  path[o] = '\0';
  if (path[0] != '/')
    return coil_error_set(err, EINVAL, "cgroup state: \"%s\" is not absolute",
                          path);
  if (check_components("cgroup state path", path, err) < 0)
    return -1;
  unsigned comps = 0;
  for (const char *p = path; *p; p++)
    comps += *p == '/';
  if (d->levels >= comps)
    return coil_error_set(err, EINVAL,
                          "cgroup state: %u levels above %s is too many",
                          d->levels, path);
  d->kernel = on_cgroupfs(path);
  d->path = steal_ptr(path);
  return 0;
}

int cgroup_deserialize(const char *text, struct coil_cgroup **out,
                       struct coil_error *err) {
  *out = NULL;
  cleanup_free char *copy = strdup(text);
  struct coil_cgroup *cg = calloc(1, sizeof *cg);
  if (!copy || !cg) {
    free(cg);
    return no_memory(err);
  }
  char *save;
  char *tok = strtok_r(copy, " ", &save);
  if (!tok || strcmp(tok, SERIAL_TAG)) {
    free(cg);
    return coil_error_set(err, EINVAL,
                          "cgroup state: does not start with "
                          "\"%s\"",
                          SERIAL_TAG);
  }
  while ((tok = strtok_r(NULL, " ", &save))) {
    if (!strncmp(tok, UNIT_TAG, strlen(UNIT_TAG))) {
      free(cg->unit);
      cg->unit = strdup(tok + strlen(UNIT_TAG));
      if (!cg->unit) {
        cgroup_free(cg);
        return no_memory(err);
      }
      continue;
    }
    if (cg->n == CG_MAX_DIRS) {
      cgroup_free(cg);
      return coil_error_set(err, EINVAL, "cgroup state: too many entries");
    }
    if (parse_entry(tok, &cg->dirs[cg->n], err) < 0) {
      cgroup_free(cg);
      return -1;
    }
    cg->n++;
  }
  if (cg->n == 0) {
    free(cg);
    return coil_error_set(err, EINVAL, "cgroup state: no cgroup listed");
  }
  *out = cg;
  return 0;
}

size_t cgroup_own_dirs(const struct coil_cgroup *cg, const char **dirs,
                       size_t max) {
  size_t n = 0;
  for (size_t i = 0; cg && i < cg->n && n < max; i++)
    if (cg->dirs[i].kernel && cg->dirs[i].path)
      dirs[n++] = cg->dirs[i].path;
  return n;
}

void cgroup_free(struct coil_cgroup *cg) {
  if (!cg)
    return;
  for (size_t i = 0; i < CG_MAX_DIRS; i++)
    free(cg->dirs[i].path);
  free(cg->unit);
  free(cg);
}

const struct cg_dir *cg_find_dir(const struct coil_cgroup *cg, enum cg_ctrl c) {
  return find_dir(cg, c);
}
