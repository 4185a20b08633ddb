#include "cgroup_mount.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "libmount_load.h"
#include "log.h"
#include "mountfd.h"

#define CGROUP_ROOT "/sys/fs/cgroup"

/* Set before any table exists: container creation loaded libmount. */
static const struct libmount_calls *lm;

static void table_unrefp(struct libmnt_table **tb) {
  if (*tb)
    lm->unref_table(*tb);
}
#define cleanup_table __attribute__((cleanup(table_unrefp)))

/* The flags of every mount made here: the options' own, never suid, dev or
 * exec files (as runc), read-only unless "rw" is given. */
static unsigned long mount_flags(const struct coil_mount_opts *o) {
  unsigned long f = o->flags | MS_NOSUID | MS_NODEV | MS_NOEXEC;
  if (!(o->clear & MS_RDONLY))
    f |= MS_RDONLY;
  return f & ~(unsigned long)(MS_BIND | MS_REMOUNT);
}

static int recursive_attrs(int mnt, const struct coil_mount_opts *o,
                           struct coil_error *err) {
  uint64_t set, clear;
  mountopts_recursive_attrs(o, &set, &clear);
  return mountfd_set_attr(mnt, true, set, clear, err);
}

/* A copy of the cgroup directory dir, with o's flags, onto target. */
static int bind_dir(const char *dir, int target,
                    const struct coil_mount_opts *o, struct coil_error *err) {
  cleanup_close int src = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (src < 0)
    return coil_error_sys(err, errno, "cgroup %s", dir);
  cleanup_close int tree = mountfd_clone(src, true, err);
  if (tree < 0 || mountfd_set_flags(tree, mount_flags(o), o->clear, err) < 0 ||
      mountfd_attach(tree, target, err) < 0)
    return coil_error_prefix(err, "bind cgroup %s", dir);
  return 0;
}

/* The host's mount point of the hierarchy holding dir, if it is one. */
static const char *hierarchy_of(struct libmnt_table *tb, const char *dir) {
  struct libmnt_fs *fs = lm->table_find_mountpoint(tb, dir, MNT_ITER_BACKWARD);
  const char *type = fs ? lm->fs_get_fstype(fs) : NULL;
  if (!type || (strcmp(type, "cgroup") && strcmp(type, "cgroup2")))
    return NULL;
  return lm->fs_get_target(fs);
}

/* "cpu,cpuacct" gets "cpu" and "cpuacct" symlinks beside it, as on the
 * host. */
static int comount_links(int tmpfs, const char *name, struct coil_error *err) {
  if (!strchr(name, ','))
    return 0;
  cleanup_free char *copy = strdup(name);
  if (!copy)
    return coil_error_sys(err, ENOMEM, "%s", name);
  char *save = NULL;
  for (char *c = strtok_r(copy, ",", &save); c; c = strtok_r(NULL, ",", &save))
    if (symlinkat(name, tmpfs, c) < 0 && errno != EEXIST)
      return coil_error_sys(err, errno, "symlink %s -> %s", c, name);
  return 0;
}

/* One hierarchy's directory on the tmpfs, named as on the host. */
static int add_hierarchy(int tmpfs, struct libmnt_table *tb, const char *dir,
                         const struct coil_mount_opts *o,
                         struct coil_error *err) {
  const char *mnt = hierarchy_of(tb, dir);
  if (!mnt) {
    log_debug("cgroup %s: not on a cgroup mount; left out", dir);
    return 0;
  }
  const char *name = strrchr(mnt, '/');
  name = name ? name + 1 : mnt;
  if (!*name)
    return 0;
  if (mkdirat(tmpfs, name, 0755) < 0 && errno != EEXIST)
    return coil_error_sys(err, errno, "mkdir %s", name);
  cleanup_close int target =
      openat(tmpfs, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (target < 0)
    return coil_error_sys(err, errno, "open %s", name);
  if (bind_dir(dir, target, o, err) < 0)
    return -1;
  return comount_links(tmpfs, name, err);
}

static bool on_cgroup2(const char *path) {
  struct statfs sb;
  return statfs(path, &sb) == 0 && sb.f_type == CGROUP2_SUPER_MAGIC;
}

static const char *unified_dir(const char *const *dirs, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (on_cgroup2(dirs[i]))
      return dirs[i];
  return NULL;
}

/* dir, the container's cgroup in the unified hierarchy, itself. */
static int mount_unified(int target, const struct coil_mount_opts *o,
                         const char *dir, struct coil_error *err) {
  cleanup_close int src = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (src < 0)
    return coil_error_sys(err, errno, "cgroup %s", dir);
  cleanup_close int tree = mountfd_clone(src, true, err);
  if (tree < 0 || mountfd_set_flags(tree, mount_flags(o), o->clear, err) < 0 ||
      recursive_attrs(tree, o, err) < 0 ||
      mountfd_attach(tree, target, err) < 0)
    return coil_error_prefix(err, "bind cgroup %s", dir);
  return mountfd_set_propagation(tree, o->propagation, err);
}

int cgroup_mount(int target, bool v2, const struct coil_mount_opts *o,
                 const char *const *dirs, size_t n, struct coil_error *err) {
  if (v2 || on_cgroup2(CGROUP_ROOT)) {
    const char *dir = unified_dir(dirs, n);
    if (dir)
      return mount_unified(target, o, dir, err);
    /* Never the cgroup coil runs in, nor the host's root. */
    log_warn("the container has no cgroup v2 directory of its own; its "
             "cgroup mount is an empty tmpfs");
    n = 0;
  }

  if (!(lm = libmount_calls(err)))
    return -1;
  cleanup_table struct libmnt_table *tb =
      lm->new_table_from_file("/proc/self/mountinfo");
  if (!tb)
    return coil_error_sys(err, errno, "read /proc/self/mountinfo");
  /* Writable until the hierarchies' directories are in place. */
  cleanup_close int tmpfs = mountfd_new_fs(
      "tmpfs", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755", err);
  if (tmpfs < 0 || mountfd_attach(tmpfs, target, err) < 0)
    return coil_error_prefix(err, "cgroup tmpfs");
  for (size_t i = 0; i < n; i++)
    if (add_hierarchy(tmpfs, tb, dirs[i], o, err) < 0)
      return -1;
  if (mountfd_set_flags(tmpfs, mount_flags(o), o->clear, err) < 0 ||
      recursive_attrs(tmpfs, o, err) < 0)
    return -1;
  return mountfd_set_propagation(tmpfs, o->propagation, err);
}
