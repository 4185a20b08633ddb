#include "mountfd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mount.h>

#include "cleanup.h"

/* ENOSYS means a kernel older than the mount API these calls need. */
static int mount_api_error(struct coil_error *err, int e, const char *call) {
  if (e == ENOSYS)
    return coil_error_set(err, e,
                          "%s: the kernel lacks the file-descriptor mount API "
                          "(Linux 5.12 or later is needed)",
                          call);
  return coil_error_sys(err, e, "%s", call);
}

int mountfd_clone(int fd, bool recursive, struct coil_error *err) {
  unsigned int flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH;
  if (recursive)
    flags |= AT_RECURSIVE;
  int tree = open_tree(fd, "", flags);
  if (tree < 0)
    return mount_api_error(err, errno, "open_tree");
  return tree;
}

int mountfd_empty_tmpfs(struct coil_error *err) {
  cleanup_close int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
  if (fs < 0)
    return mount_api_error(err, errno, "fsopen tmpfs");
  if (fsconfig(fs, FSCONFIG_SET_STRING, "source", "tmpfs", 0) < 0 ||
      fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
    return coil_error_sys(err, errno, "create tmpfs");
  int mnt = fsmount(fs, FSMOUNT_CLOEXEC,
                    MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                        MOUNT_ATTR_NOEXEC);
  if (mnt < 0)
    return mount_api_error(err, errno, "fsmount tmpfs");
  return mnt;
}

static const struct {
  unsigned long ms;
  uint64_t attr;
} flag_attrs[] = {
    {MS_RDONLY, MOUNT_ATTR_RDONLY},
    {MS_NOSUID, MOUNT_ATTR_NOSUID},
    {MS_NODEV, MOUNT_ATTR_NODEV},
    {MS_NOEXEC, MOUNT_ATTR_NOEXEC},
    {MS_NOSYMFOLLOW, MOUNT_ATTR_NOSYMFOLLOW},
    {MS_NODIRATIME, MOUNT_ATTR_NODIRATIME},
};

/* The atime mode is one value: setting one replaces the current one. Clearing
 * one ("atime", "norelatime") without naming another keeps the current mode,
 * as a remount naming no atime flag did. */
static uint64_t atime_attr(unsigned long set) {
  if (set & MS_NOATIME)
    return MOUNT_ATTR_NOATIME;
  if (set & MS_STRICTATIME)
    return MOUNT_ATTR_STRICTATIME;
  return MOUNT_ATTR_RELATIME;
}

int mountfd_set_flags(int mnt, unsigned long set, unsigned long clear,
                      struct coil_error *err) {
  struct mount_attr attr = {0};
  clear &= ~set;
  for (size_t i = 0; i < sizeof flag_attrs / sizeof flag_attrs[0]; i++) {
    if (set & flag_attrs[i].ms)
      attr.attr_set |= flag_attrs[i].attr;
    else if (clear & flag_attrs[i].ms)
      attr.attr_clr |= flag_attrs[i].attr;
  }
  if (set & (MS_NOATIME | MS_STRICTATIME | MS_RELATIME)) {
    attr.attr_clr |= MOUNT_ATTR__ATIME;
    attr.attr_set |= atime_attr(set);
  }
  if (!attr.attr_set && !attr.attr_clr)
    return 0;
  if (mount_setattr(mnt, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0) {
    if (errno == EPERM)
      return coil_error_sys(err, EPERM,
                            "set mount flags (a mount inherited from a more "
                            "privileged namespace keeps its ro/nosuid/nodev/"
                            "noexec and atime flags)");
    return mount_api_error(err, errno, "set mount flags: mount_setattr");
  }
  return 0;
}

int mountfd_set_propagation(int mnt, unsigned long prop,
                            struct coil_error *err) {
  if (!prop)
    return 0;
  struct mount_attr attr = {.propagation = prop & ~(unsigned long)MS_REC};
  unsigned int flags = AT_EMPTY_PATH | ((prop & MS_REC) ? AT_RECURSIVE : 0);
  if (mount_setattr(mnt, "", flags, &attr, sizeof attr) < 0)
    return mount_api_error(err, errno, "set propagation: mount_setattr");
  return 0;
}

int mountfd_attach(int mnt, int target, struct coil_error *err) {
  if (move_mount(mnt, "", target, "",
                 MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
    return mount_api_error(err, errno, "move_mount");
  return 0;
}
