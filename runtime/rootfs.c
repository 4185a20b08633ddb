#include "rootfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cgroup_mount.h"
#include "cleanup.h"
#include "libmount_load.h"
#include "log.h"
#include "mountfd.h"
#include "mountopts.h"
#include "tmpcopy.h"

/* The flags a bind can change; the rest belong to the superblock. */
#define PER_MOUNT_FLAGS                                                        \
  (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOSYMFOLLOW |             \
   MS_NOATIME | MS_NODIRATIME | MS_RELATIME | MS_STRICTATIME)

/* Not yet in glibc 2.36's headers; the same number on every architecture. */
#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif

#define FD_PATH_MAX 32

static void mountopts_freep(struct coil_mount_opts *o) { mountopts_free(o); }
#define cleanup_mountopts __attribute__((cleanup(mountopts_freep)))

/* How often a path walk that raced a host rename or mount is retried. */
#define OPENAT2_TRIES 128

/* Mounting onto the fd's magic link mounts exactly what openat2 resolved,
 * with no second path walk that a symlink swap could redirect. */
static const char *fd_path(char *buf, int fd) {
  snprintf(buf, FD_PATH_MAX, "/proc/self/fd/%d", fd);
  return buf;
}

/* Opens path inside the rootfs with every step confined to it: "..", and
 * absolute symlinks such as "etc -> /../../etc" resolve against the rootfs,
 * never the host. Magic links (/proc/self/root, once a proc is mounted in
 * the rootfs) would escape, so they are refused. */
static int open_in_root(int rootfd, const char *path, int flags) {
  struct open_how how = {
      .flags = (uint64_t)(flags | O_CLOEXEC),
      .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
  };
  /* EAGAIN: a rename or mount anywhere on the host raced a ".." step, and
   * the kernel would rather fail than risk a wrong answer; try again. */
  int fd, tries = 0;
  do
    fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof how);
  while (fd < 0 && errno == EAGAIN && ++tries < OPENAT2_TRIES);
  return fd;
}

/* "a/b/c" -> parent "a/b", leaf "c", pointing into the returned copy
 * (parent may be the literal "/"). */
static char *split_path(const char *path, const char **parent,
                        const char **leaf) {
  char *copy = strdup(path);
  if (!copy)
    return NULL;
  size_t len = strlen(copy);
  while (len > 1 && copy[len - 1] == '/')
    copy[--len] = '\0';
  char *slash = strrchr(copy, '/');
  if (!slash) {
    *parent = "/";
    *leaf = copy;
  } else {
    *slash = '\0';
    *parent = slash == copy ? "/" : copy;
    *leaf = slash + 1;
  }
  return copy;
}

/* As the kernel's own limit on symlinks in one path walk. */
#define MAX_DANGLING_LINKS 40

/* name in dir (whose path in the rootfs is dirpath) is a symlink to a
 * missing target: the path to create instead, as runc does, is its target,
 * read relative to dirpath, then rest. Every later step resolves it inside
 * the rootfs again, so an absolute or "../.." target stays in it. */
static char *dangling_target(int dir, const char *dirpath, const char *name,
                             const char *rest, struct coil_error *err) {
  char link[PATH_MAX];
  ssize_t n = readlinkat(dir, name, link, sizeof link - 1);
  if (n < 0) {
    coil_error_sys(err, errno, "%s/%s in rootfs: readlink", dirpath, name);
    return NULL;
  }
  link[n] = '\0';
  char *out = NULL;
  if (asprintf(&out, "%s/%s%s%s", link[0] == '/' ? "" : dirpath, link,
               *rest ? "/" : "", rest) < 0) {
    coil_error_sys(err, ENOMEM, "%s", name);
    return NULL;
  }
  return out;
}

static int too_many_links(const char *path, struct coil_error *err) {
  return coil_error_set(
      err, ELOOP, "%s in rootfs: too many levels of symbolic links", path);
}

static int mkdir_in_root_at(int rootfd, const char *path, int links,
                            struct coil_error *err);

/* mkdir -p inside the rootfs; returns an O_PATH fd of the directory. Each
 * prefix is resolved from the rootfs again, so a symlink met on the way is
 * followed inside the rootfs and the new directory is made where it leads,
 * even when its target is missing. */
static int mkdir_in_root(int rootfd, const char *path, struct coil_error *err) {
  return mkdir_in_root_at(rootfd, path, 0, err);
}

static int mkdir_in_root_at(int rootfd, const char *path, int links,
                            struct coil_error *err) {
  int fd = open_in_root(rootfd, path, O_PATH | O_DIRECTORY);
  if (fd >= 0)
    return fd;
  if (errno != ENOENT)
    return coil_error_sys(err, errno, "resolve %s in rootfs", path);

  cleanup_free char *buf = strdup(path);
  if (!buf)
    return coil_error_sys(err, ENOMEM, "%s", path);
  cleanup_close int dir = open_in_root(rootfd, "/", O_PATH | O_DIRECTORY);
  if (dir < 0)
    return coil_error_sys(err, errno, "open rootfs");
  char *p = buf;
  for (;;) {
    p += strspn(p, "/");
    if (!*p)
      break;
    char *end = p + strcspn(p, "/");
    char saved = *end;
    *end = '\0';
    int next = open_in_root(rootfd, buf, O_PATH | O_DIRECTORY);
    if (next < 0 && errno == ENOENT) {
      if (mkdirat(dir, p, 0755) < 0 && errno != EEXIST)
        return coil_error_sys(err, errno, "mkdir %s in rootfs", buf);
      next = open_in_root(rootfd, buf, O_PATH | O_DIRECTORY);
      if (next < 0 && errno == ENOENT) {
        if (++links > MAX_DANGLING_LINKS)
          return too_many_links(path, err);
        const char *parent = "";
        if (p > buf) {
          p[-1] = '\0';
          parent = buf;
        }
        cleanup_free char *redirect =
            dangling_target(dir, parent, p, saved ? end + 1 : "", err);
        if (!redirect)
          return -1;
        return mkdir_in_root_at(rootfd, redirect, links, err);
      }
    }
    if (next < 0)
      return coil_error_sys(err, errno, "resolve %s in rootfs", buf);
    close(dir);
    dir = next;
    *end = saved;
    p = end;
  }
  return steal_fd(dir);
}

static int open_target_at(int rootfd, const char *path, bool dir, int links,
                          struct coil_error *err);

/* O_PATH fd of a mount target inside the rootfs, created when missing (with
 * its parents): a directory, or an empty file to bind a non-directory on. A
 * symlink to a missing target is followed inside the rootfs and the target
 * is created, as runc does. */
static int open_target(int rootfd, const char *path, bool dir,
                       struct coil_error *err) {
  return open_target_at(rootfd, path, dir, 0, err);
}

static int open_target_at(int rootfd, const char *path, bool dir, int links,
                          struct coil_error *err) {
  int fd = open_in_root(rootfd, path, O_PATH);
  if (fd >= 0)
    return fd;
  if (errno != ENOENT)
    return coil_error_sys(err, errno, "resolve %s in rootfs", path);

  const char *parent, *leaf;
  cleanup_free char *copy = split_path(path, &parent, &leaf);
  if (!copy)
    return coil_error_sys(err, ENOMEM, "%s", path);
  cleanup_close int pfd = mkdir_in_root_at(rootfd, parent, links, err);
  if (pfd < 0)
    return -1;
  if (dir) {
    if (mkdirat(pfd, leaf, 0755) < 0 && errno != EEXIST)
      return coil_error_sys(err, errno, "mkdir %s in rootfs", path);
  } else {
    int f = openat(pfd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (f < 0 && errno != EEXIST)
      return coil_error_sys(err, errno, "create %s in rootfs", path);
    if (f >= 0)
      close(f);
  }
  fd = open_in_root(rootfd, path, O_PATH);
  if (fd < 0 && errno == ENOENT) {
    if (++links > MAX_DANGLING_LINKS)
      return too_many_links(path, err);
    cleanup_free char *redirect =
        dangling_target(pfd, strcmp(parent, "/") ? parent : "", leaf, "", err);
    if (!redirect)
      return -1;
    return open_target_at(rootfd, redirect, dir, links, err);
  }
  if (fd < 0)
    return coil_error_sys(err, errno, "resolve %s in rootfs", path);
  return fd;
}

/* The recursive attributes ("rro", "rnoatime", ...) of o on mnt and every
 * mount below it. */
static int set_recursive_attrs(int mnt, const struct coil_mount_opts *o,
                               struct coil_error *err) {
  uint64_t set, clear;
  mountopts_recursive_attrs(o, &set, &clear);
  return mountfd_set_attr(mnt, true, set, clear, err);
}

/* Attaches tree, a detached mount (a copy of a bind's source, or a new
 * filesystem), onto target. Flags and recursive attributes are set on the
 * detached tree before it is attached, propagation through its own fd
 * after: a path swapped meanwhile can neither leave the mount writable nor
 * move the flags onto another mount, and no path is resolved twice. */
static int attach_tree(int tree, int target, unsigned long set,
                       const struct coil_mount_opts *o,
                       struct coil_error *err) {
  if (mountfd_set_flags(tree, set & PER_MOUNT_FLAGS, o->clear, err) < 0 ||
      set_recursive_attrs(tree, o, err) < 0 ||
      mountfd_attach(tree, target, err) < 0)
    return -1;
  return mountfd_set_propagation(tree, o->propagation, err);
}

/* idmapped: the runtime's id-mapped copy of the source, or -1. */
static int mount_bind(int rootfd, const struct coil_mount *m,
                      const struct coil_mount_opts *o, int idmapped,
                      struct coil_error *err) {
  struct stat st;
  if (!m->source)
    return coil_error_set(err, EINVAL, "bind mount without a source");
  if (idmapped >= 0) {
    if (fstat(idmapped, &st) < 0)
      return coil_error_sys(err, errno, "source %s", m->source);
    cleanup_close int target =
        open_target(rootfd, m->destination, S_ISDIR(st.st_mode), err);
    if (target < 0 || attach_tree(idmapped, target, o->flags, o, err) < 0)
      return coil_error_prefix(err, "id-mapped bind %s", m->source);
    return 0;
  }
  cleanup_close int src = open(m->source, O_PATH | O_CLOEXEC);
  if (src < 0 || fstat(src, &st) < 0)
    return coil_error_sys(err, errno, "source %s", m->source);
  cleanup_close int target =
      open_target(rootfd, m->destination, S_ISDIR(st.st_mode), err);
  if (target < 0)
    return -1;
  cleanup_close int tree = mountfd_clone(src, o->recursive, err);
  if (tree < 0 && err->err == EINVAL && !o->recursive)
    return coil_error_prefix(err,
                             "bind %s (in a user namespace, a source with "
                             "mounts beneath it needs \"rbind\")",
                             m->source);
  if (tree < 0 || attach_tree(tree, target, o->flags, o, err) < 0)
    return coil_error_prefix(err, "bind %s", m->source);
  return 0;
}

/* sysfs may only be mounted in a user namespace that owns the network
 * namespace; without one, rootless runtimes show the host's /sys read-only. */
static int bind_host_sysfs(const struct coil_mount *m,
                           const struct coil_mount_opts *o, int target,
                           struct coil_error *err) {
  cleanup_close int sys = open("/sys", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (sys < 0)
    return coil_error_sys(err, errno, "open /sys");
  cleanup_close int tree = mountfd_clone(sys, true, err);
  if (tree < 0 || attach_tree(tree, target, o->flags | MS_RDONLY, o, err) < 0)
    return coil_error_prefix(err, "bind /sys");
  log_warn("%s: mounting sysfs is not permitted (no network namespace of "
           "the container's user namespace); bound the host's /sys "
           "read-only instead",
           m->destination);
  return 0;
}

/* As runc: a tmpfs keeps the mode of the directory it covers, so "mode="
 * of that directory goes first (a "mode=" in the options comes later and
 * wins); over a missing directory tmpfs's own default stays. *out is NULL
 * when nothing is added. */
static int tmpfs_data(int rootfd, const char *dest, const char *data,
                      char **out, struct coil_error *err) {
  *out = NULL;
  cleanup_close int fd = open_in_root(rootfd, dest, O_PATH);
  struct stat sb;
  if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISDIR(sb.st_mode))
    return 0;
  if (asprintf(out, "mode=%04o%s%s", (unsigned)(sb.st_mode & 07777),
               data ? "," : "", data ? data : "") < 0) {
    *out = NULL;
    return coil_error_sys(err, ENOMEM, "tmpfs options");
  }
  return 0;
}

static int mount_fs(int rootfd, const struct coil_mount *m,
                    const struct coil_mount_opts *o,
                    const struct coil_rootfs_opts *ro, struct coil_error *err) {
  char buf[FD_PATH_MAX];
  const char *type = m->type;
  /* Never a new cgroup filesystem: outside a cgroup namespace it would show
   * the host's whole tree, in a user namespace without one it is refused. */
  if (strcmp(type, "cgroup") == 0 || strcmp(type, "cgroup2") == 0) {
    cleanup_close int target = open_target(rootfd, m->destination, true, err);
    if (target < 0)
      return -1;
    return cgroup_mount(target, strcmp(type, "cgroup2") == 0, o,
                        ro->cgroup_dirs, ro->n_cgroup_dirs, err);
  }
  const char *source = m->source ? m->source : type;
  bool tmpfs = strcmp(type, "tmpfs") == 0;
  cleanup_free char *tmpfs_opts = NULL;
  if (tmpfs &&
      tmpfs_data(rootfd, m->destination, o->data, &tmpfs_opts, err) < 0)
    return -1;
  /* Opened before the tmpfs covers it; a missing or non-directory
   * destination has nothing to copy. As runc, other types ignore it. */
  cleanup_close int copy_from = -1;
  if (tmpfs && o->tmpcopyup) {
    copy_from = open_in_root(rootfd, m->destination, O_RDONLY | O_DIRECTORY);
    if (copy_from < 0 && errno != ENOENT && errno != ENOTDIR)
      return coil_error_sys(err, errno, "tmpcopyup: open %s in rootfs",
                            m->destination);
  }

  cleanup_close int target = open_target(rootfd, m->destination, true, err);
  if (target < 0)
    return -1;
  const char *data = tmpfs_opts ? tmpfs_opts : o->data;
  /* A remount changes the mount already there: no new mount to attach. */
  if (o->flags & MS_REMOUNT) {
    if (mount(source, fd_path(buf, target), type, o->flags, data) < 0)
      return coil_error_sys(err, errno, "remount %s", type);
    return 0;
  }
  /* A read-only tmpfs to copy into is made writable: the mount alone is
   * made read-only, when attached. */
  unsigned long fs_flags = copy_from >= 0 ? o->flags & ~MS_RDONLY : o->flags;
  cleanup_close int mnt = mountfd_new_fs(type, source, fs_flags, data, err);
  if (mnt < 0) {
    if (err->err == EPERM && strcmp(type, "sysfs") == 0)
      return bind_host_sysfs(m, o, target, err);
    return -1;
  }
  if (copy_from >= 0 && tmpcopy_tree(copy_from, mnt, m->destination, err) < 0)
    return -1;
  return attach_tree(mnt, target, o->flags, o, err);
}

static int apply_mount(int rootfd, const struct coil_mount *m, size_t i,
                       const struct coil_mount_opts *o,
                       const struct coil_rootfs_opts *ro,
                       struct coil_error *err) {
  bool idmap = o->idmap || m->n_uid_mappings || m->n_gid_mappings;
  int idmapped = ro->idmap_trees ? ro->idmap_trees[i] : -1;
  bool bind = o->bind || (m->type && strcmp(m->type, "bind") == 0);
  if (idmap && !bind)
    return coil_error_set(err, EINVAL, "id mappings apply to bind mounts only");
  if (idmap && idmapped < 0)
    return coil_error_set(err, EINVAL,
                          "id-mapped mount not prepared by the runtime");
  if (bind)
    return mount_bind(rootfd, m, o, idmapped, err);
  if (!m->type)
    return coil_error_set(err, EINVAL, "no type and no bind option");
  return mount_fs(rootfd, m, o, ro, err);
}

static int apply_mounts(int rootfd, const struct coil_config *cfg,
                        const struct coil_rootfs_opts *ro,
                        struct coil_error *err) {
  for (size_t i = 0; i < cfg->n_mounts; i++) {
    const struct coil_mount *m = &cfg->mounts[i];
    char field[32];
    cleanup_mountopts struct coil_mount_opts o = {0};
    snprintf(field, sizeof field, "mounts[%zu]", i);
    if (mountopts_parse(&m->options, field, &o, err) < 0)
      return -1;
    if (apply_mount(rootfd, m, i, &o, ro, err) < 0)
      return coil_error_prefix(err, "%s (%s)", field, m->destination);
  }
  return 0;
}

struct dev_spec {
  const char *path;
  mode_t type; /* S_IFCHR, S_IFBLK or S_IFIFO */
  unsigned int major, minor;
  mode_t mode;
  uid_t uid;
  gid_t gid;
};

static const struct dev_spec default_devices[] = {
    {"/dev/null", S_IFCHR, 1, 3, 0666, 0, 0},
    {"/dev/zero", S_IFCHR, 1, 5, 0666, 0, 0},
    {"/dev/full", S_IFCHR, 1, 7, 0666, 0, 0},
    {"/dev/random", S_IFCHR, 1, 8, 0666, 0, 0},
    {"/dev/urandom", S_IFCHR, 1, 9, 0666, 0, 0},
    {"/dev/tty", S_IFCHR, 5, 0, 0666, 0, 0},
};

static const struct {
  const char *name, *target;
} dev_links[] = {
    {"fd", "/proc/self/fd"},
    {"stdin", "/proc/self/fd/0"},
    {"stdout", "/proc/self/fd/1"},
    {"stderr", "/proc/self/fd/2"},
};

/* chmod of the inode fd refers to, never of a path: fchmodat2 takes an
 * O_PATH fd from Linux 6.6 on, older kernels chmod its /proc magic link. */
static int chmod_fd(int fd, mode_t mode) {
  char buf[FD_PATH_MAX];
  if (syscall(SYS_fchmodat2, fd, "", mode, AT_EMPTY_PATH) == 0)
    return 0;
  if (errno != ENOSYS)
    return -1;
  return chmod(fd_path(buf, fd), mode);
}

/* O_PATH fd of dir/leaf if it is still the node d describes: a racer that
 * shares the rootfs may have swapped it (for a symlink to a host file, say)
 * since it was made. */
static int open_node(int dir, const char *leaf, const struct dev_spec *d,
                     dev_t rdev, struct coil_error *err) {
  struct stat st;
  cleanup_close int fd = openat(dir, leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 || fstat(fd, &st) < 0)
    return coil_error_sys(err, errno, "open %s", d->path);
  if ((st.st_mode & S_IFMT) != d->type ||
      (d->type != S_IFIFO && st.st_rdev != rdev))
    return coil_error_set(err, EEXIST, "%s was replaced while being created",
                          d->path);
  return steal_fd(fd);
}

static int mknod_device(int rootfd, const struct dev_spec *d,
                        struct coil_error *err) {
  const char *parent, *leaf;
  cleanup_free char *copy = split_path(d->path, &parent, &leaf);
  if (!copy)
    return coil_error_sys(err, ENOMEM, "%s", d->path);
  cleanup_close int dir = mkdir_in_root(rootfd, parent, err);
  if (dir < 0)
    return -1;
  dev_t rdev = d->type == S_IFIFO ? 0 : makedev(d->major, d->minor);
  if (mknodat(dir, leaf, d->type | 0600, rdev) < 0) {
    struct stat st;
    if (errno != EEXIST)
      return coil_error_sys(err, errno, "mknod %s", d->path);
    if (fstatat(dir, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
      return coil_error_sys(err, errno, "stat %s", d->path);
    /* The image may ship a placeholder (often a regular file): replace it. */
    if ((st.st_mode & S_IFMT) != d->type || st.st_rdev != rdev) {
      if (unlinkat(dir, leaf, 0) < 0)
        return coil_error_sys(err, errno, "replace %s", d->path);
      if (mknodat(dir, leaf, d->type | 0600, rdev) < 0)
        return coil_error_sys(err, errno, "mknod %s", d->path);
    }
  }
  cleanup_close int node = open_node(dir, leaf, d, rdev, err);
  if (node < 0)
    return -1;
  /* Explicitly, so that the umask does not narrow the configured mode. */
  if (fchownat(node, "", d->uid, d->gid, AT_EMPTY_PATH) < 0)
    return coil_error_sys(err, errno, "chown %s", d->path);
  if (chmod_fd(node, d->mode & 07777) < 0)
    return coil_error_sys(err, errno, "chmod %s", d->path);
  return 0;
}

/* The host's node of d->path, as an O_PATH fd, if it is the device d. */
static int open_host_device(const struct dev_spec *d, struct coil_error *err) {
  struct stat st;
  cleanup_close int fd = open(d->path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 || fstat(fd, &st) < 0)
    return coil_error_sys(err, errno, "host device %s", d->path);
  if ((st.st_mode & S_IFMT) != d->type ||
      st.st_rdev != makedev(d->major, d->minor))
    return coil_error_set(err, EINVAL, "host %s is not device %u:%u", d->path,
                          d->major, d->minor);
  return steal_fd(fd);
}

/* Without CAP_MKNOD over the rootfs (a user namespace), the host's node of
 * the same path is bound onto an empty file instead. */
static int bind_device(int rootfd, const struct dev_spec *d, bool required,
                       struct coil_error *err) {
  cleanup_close int host = open_host_device(d, err);
  if (host < 0) {
    if (required)
      return -1;
    log_warn("%s; not created", err->msg);
    return 0;
  }
  cleanup_close int target = open_target(rootfd, d->path, false, err);
  if (target < 0)
    return -1;
  cleanup_close int tree = mountfd_clone(host, false, err);
  if (tree < 0 || mountfd_attach(tree, target, err) < 0)
    return coil_error_prefix(err, "bind %s", d->path);
  return 0;
}

static int create_device(int rootfd, const struct dev_spec *d, bool userns,
                         bool required, struct coil_error *err) {
  /* A fifo needs no privilege, so it is made even in a user namespace. */
  if (d->type == S_IFIFO || !userns) {
    if (mknod_device(rootfd, d, err) == 0)
      return 0;
    if (err->err != EPERM || d->type == S_IFIFO)
      return -1;
    log_debug("%s: mknod not permitted; binding the host's node", d->path);
  }
  return bind_device(rootfd, d, required, err);
}

static int device_spec(const struct coil_device *cd, struct dev_spec *d,
                       struct coil_error *err) {
  if (!cd->type)
    return coil_error_set(err, EINVAL, "missing type");
  if (strcmp(cd->type, "c") == 0 || strcmp(cd->type, "u") == 0)
    d->type = S_IFCHR;
  else if (strcmp(cd->type, "b") == 0)
    d->type = S_IFBLK;
  else if (strcmp(cd->type, "p") == 0)
    d->type = S_IFIFO;
  else
    return coil_error_set(err, EINVAL, "unknown type \"%s\"", cd->type);
  d->path = cd->path;
  d->major = (unsigned int)cd->major;
  d->minor = (unsigned int)cd->minor;
  d->mode = cd->has_file_mode ? cd->file_mode : 0666;
  d->uid = cd->has_uid ? cd->uid : 0;
  d->gid = cd->has_gid ? cd->gid : 0;
  return 0;
}

static bool configured_device(const struct coil_linux *lnx, const char *path) {
  for (size_t i = 0; i < lnx->n_devices; i++)
    if (lnx->devices[i].path && strcmp(lnx->devices[i].path, path) == 0)
      return true;
  return false;
}

static int create_devices(int rootfd, const struct coil_config *cfg,
                          bool userns, struct coil_error *err) {
  const struct coil_linux *lnx = &cfg->lnx;
  for (size_t i = 0; i < sizeof default_devices / sizeof default_devices[0];
       i++) {
    const struct dev_spec *d = &default_devices[i];
    if (!configured_device(lnx, d->path) &&
        create_device(rootfd, d, userns, false, err) < 0)
      return -1;
  }
  for (size_t i = 0; i < lnx->n_devices; i++) {
    struct dev_spec d;
    if (device_spec(&lnx->devices[i], &d, err) < 0 ||
        create_device(rootfd, &d, userns, true, err) < 0)
      return coil_error_prefix(err, "linux.devices[%zu] (%s)", i,
                               lnx->devices[i].path);
  }
  return 0;
}

static int create_dev_links(int rootfd, struct coil_error *err) {
  cleanup_close int dev = mkdir_in_root(rootfd, "/dev", err);
  if (dev < 0)
    return -1;
  for (size_t i = 0; i < sizeof dev_links / sizeof dev_links[0]; i++)
    if (symlinkat(dev_links[i].target, dev, dev_links[i].name) < 0 &&
        errno != EEXIST)
      return coil_error_sys(err, errno, "symlink /dev/%s", dev_links[i].name);
  /* The ptmx of the container's own devpts instance, if it has one. */
  cleanup_close int pts =
      open_in_root(rootfd, "/dev/pts", O_PATH | O_DIRECTORY);
  if (pts >= 0 && symlinkat("pts/ptmx", dev, "ptmx") < 0 && errno != EEXIST)
    return coil_error_sys(err, errno, "symlink /dev/ptmx");
  return 0;
}

static int root_propagation(const struct coil_config *cfg, unsigned long *prop,
                            struct coil_error *err) {
  const char *name = cfg->lnx.rootfs_propagation;
  *prop = 0;
  if (name && mountopts_propagation(name, prop) < 0)
    return coil_error_set(
        err, EINVAL, "linux.rootfsPropagation: unknown value \"%s\"", name);
  return 0;
}

/* Binding the rootfs from a shared mount would make the copy a peer (so
 * container mounts would propagate to the host, and pivot_root refuses a
 * shared parent), and from an unbindable one would fail: make the mount
 * that holds the rootfs private first. */
static int make_parent_private(const char *rootfs, struct coil_error *err) {
  cleanup_free char *real = realpath(rootfs, NULL);
  if (!real)
    return coil_error_sys(err, errno, "root.path %s", rootfs);
  const struct libmount_calls *mnt = libmount_calls(err);
  if (!mnt)
    return -1;
  struct libmnt_table *tb = mnt->new_table_from_file("/proc/self/mountinfo");
  if (!tb)
    return coil_error_sys(err, errno, "read /proc/self/mountinfo");
  struct libmnt_fs *fs =
      mnt->table_find_mountpoint(tb, real, MNT_ITER_BACKWARD);
  int rc = 0;
  if (!fs)
    rc = coil_error_set(err, ENOENT, "no mount holds %s", real);
  else if (mount(NULL, mnt->fs_get_target(fs), NULL, MS_PRIVATE, NULL) < 0)
    rc = coil_error_sys(err, errno, "make %s private", mnt->fs_get_target(fs));
  mnt->unref_table(tb);
  return rc;
}

int rootfs_prepare(const struct coil_config *cfg,
                   const struct coil_rootfs_opts *o, struct coil_error *err) {
  unsigned long prop;
  if (root_propagation(cfg, &prop, err) < 0)
    return -1;
  if (!prop)
    prop = MS_REC | MS_PRIVATE;
  /* Always recursive here: a host submount left shared would carry the
   * container's mounts back into the host. The value as given is applied to
   * the container's "/" after pivot_root. */
  if (mount(NULL, "/", NULL, prop | MS_REC, NULL) < 0)
    return coil_error_sys(
        err, errno, "make / %s",
        cfg->lnx.rootfs_propagation ? cfg->lnx.rootfs_propagation : "rprivate");
  if ((prop & (MS_SHARED | MS_UNBINDABLE)) &&
      make_parent_private(o->rootfs, err) < 0)
    return -1;
  /* pivot_root needs the new root to be a mount point. */
  if (mount(o->rootfs, o->rootfs, NULL, MS_BIND | MS_REC, NULL) < 0)
    return coil_error_sys(err, errno, "root.path %s: bind onto itself",
                          o->rootfs);
  /* Opened after the bind, so paths resolve in the new mount. */
  cleanup_close int rootfd = open(o->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (rootfd < 0)
    return coil_error_sys(err, errno, "root.path %s", o->rootfs);

  if (apply_mounts(rootfd, cfg, o, err) < 0 ||
      create_devices(rootfd, cfg, o->userns, err) < 0)
    return -1;
  if (create_dev_links(rootfd, err) < 0)
    return coil_error_prefix(err, "root.path %s", o->rootfs);
  return 0;
}

int rootfs_pivot(const struct coil_rootfs_opts *o, struct coil_error *err) {
  cleanup_close int oldroot = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (oldroot < 0)
    return coil_error_sys(err, errno, "open /");
  cleanup_close int newroot = open(o->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (newroot < 0)
    return coil_error_sys(err, errno, "root.path %s", o->rootfs);
  if (fchdir(newroot) < 0)
    return coil_error_sys(err, errno, "chdir %s", o->rootfs);
  /* new_root == put_old: the old root ends up stacked on the new one, so no
   * directory for it is needed in the rootfs. */
  if (syscall(SYS_pivot_root, ".", ".") < 0)
    return coil_error_sys(err, errno, "pivot_root %s", o->rootfs);
  if (fchdir(oldroot) < 0)
    return coil_error_sys(err, errno, "chdir to the old root");
  /* If / was made shared, detaching the old tree would propagate unmounts
   * of its submounts to the host's copies: cut it off first. */
  if (mount(NULL, ".", NULL, MS_SLAVE | MS_REC, NULL) < 0)
    return coil_error_sys(err, errno, "make the old root rslave");
  if (umount2(".", MNT_DETACH) < 0)
    return coil_error_sys(err, errno, "detach the old root");
  if (chdir("/") < 0)
    return coil_error_sys(err, errno, "chdir /");
  return 0;
}

/* The container's /dev/null as an O_PATH fd, if it is the null device. The
 * rootfs may be shared with a racer that swapped it for a symlink or another
 * file, which would then be bound over the masked paths, readable and
 * writable from the container. */
static int open_dev_null(int rootfd, struct coil_error *err) {
  struct stat st;
  cleanup_close int fd = open_in_root(rootfd, "/dev/null", O_PATH | O_NOFOLLOW);
  if (fd < 0 || fstat(fd, &st) < 0)
    return coil_error_sys(err, errno, "open /dev/null");
  if (!S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3))
    return coil_error_set(err, EINVAL,
                          "/dev/null is not the null device (char 1:3)");
  return steal_fd(fd);
}

int rootfs_make_cwd(const char *cwd, struct coil_error *err) {
  cleanup_close int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0)
    return coil_error_sys(err, errno, "process.cwd: open /");
  cleanup_close int fd = mkdir_in_root(root, cwd, err);
  if (fd < 0)
    return coil_error_prefix(err, "process.cwd (%s)", cwd);
  return 0;
}

/* A file shows /dev/null's nothing, a directory an empty read-only tmpfs.
 * The path is resolved once, inside the root; the mask goes onto that fd. */
static int mask_path(int rootfd, int *null, const char *path,
                     struct coil_error *err) {
  struct stat st;
  cleanup_close int target = open_in_root(rootfd, path, O_PATH);
  if (target < 0)
    return errno == ENOENT ? 0 : coil_error_sys(err, errno, "open");
  if (fstat(target, &st) < 0)
    return coil_error_sys(err, errno, "stat");
  cleanup_close int tree = -1;
  if (S_ISDIR(st.st_mode)) {
    tree = mountfd_empty_tmpfs(err);
  } else {
    if (*null < 0 && (*null = open_dev_null(rootfd, err)) < 0)
      return -1;
    tree = mountfd_clone(*null, false, err);
  }
  if (tree < 0)
    return -1;
  return mountfd_attach(tree, target, err);
}

static int readonly_path(int rootfd, const char *path, struct coil_error *err) {
  cleanup_close int target = open_in_root(rootfd, path, O_PATH);
  if (target < 0)
    return errno == ENOENT ? 0 : coil_error_sys(err, errno, "open");
  cleanup_close int tree = mountfd_clone(target, true, err);
  if (tree < 0)
    return -1;
  static const struct coil_mount_opts none;
  return attach_tree(tree, target, MS_RDONLY, &none, err);
}

int rootfs_finalize(const struct coil_config *cfg, struct coil_error *err) {
  const struct coil_linux *lnx = &cfg->lnx;
  cleanup_close int rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  cleanup_close int null = -1;
  if (rootfd < 0)
    return coil_error_sys(err, errno, "open /");
  for (size_t i = 0; i < lnx->masked_paths.n; i++)
    if (mask_path(rootfd, &null, lnx->masked_paths.v[i], err) < 0)
      return coil_error_prefix(err, "linux.maskedPaths[%zu] (%s)", i,
                               lnx->masked_paths.v[i]);
  for (size_t i = 0; i < lnx->readonly_paths.n; i++)
    if (readonly_path(rootfd, lnx->readonly_paths.v[i], err) < 0)
      return coil_error_prefix(err, "linux.readonlyPaths[%zu] (%s)", i,
                               lnx->readonly_paths.v[i]);

  unsigned long prop;
  if (root_propagation(cfg, &prop, err) < 0)
    return -1;
  /* rootfs_prepare made everything private already; applying "rprivate"
   * again would only override mounts that asked for another propagation. */
  if (prop && !(prop & MS_PRIVATE) &&
      mountfd_set_propagation(rootfd, prop, err) < 0)
    return coil_error_prefix(err, "linux.rootfsPropagation (%s)",
                             lnx->rootfs_propagation);
  if (cfg->root_readonly && mountfd_set_flags(rootfd, MS_RDONLY, 0, err) < 0)
    return coil_error_prefix(err, "root.readonly");
  return 0;
}
