#include "mountfd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

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

/* The filesystem's own explanation of a failed fsconfig, if it left one
 * ("e tmpfs: Bad value for 'size'"), else "". */
static const char *fs_message(int fs, char *buf, size_t len) {
  ssize_t n = read(fs, buf, len - 1);
  if (n <= 2 || buf[1] != ' ')
    return "";
  buf[n] = '\0';
  buf[strcspn(buf, "\n")] = '\0';
  return buf + 2;
}

static int fs_config(int fs, const char *type, const char *key,
                     const char *value, struct coil_error *err) {
  int rc = value ? fsconfig(fs, FSCONFIG_SET_STRING, key, value, 0)
                 : fsconfig(fs, FSCONFIG_SET_FLAG, key, NULL, 0);
  if (rc == 0)
    return 0;
  int e = errno;
  char msg[256];
  const char *why = fs_message(fs, msg, sizeof msg);
  return coil_error_sys(err, e, "%s option \"%s%s%s\"%s%s", type, key,
                        value ? "=" : "", value ? value : "", *why ? ": " : "",
                        why);
}

/* The superblock flags mount(2) takes, as the names fsconfig knows. */
static const struct {
  unsigned long ms;
  const char *name;
} sb_flags[] = {
    {MS_RDONLY, "ro"},         {MS_SYNCHRONOUS, "sync"},
    {MS_DIRSYNC, "dirsync"},   {MS_LAZYTIME, "lazytime"},
    {MS_MANDLOCK, "mand"},     {MS_I_VERSION, "iversion"},
    {MS_POSIXACL, "posixacl"},
};

/* "size=64k,mode=755,newinstance" one option at a time. */
static int fs_config_data(int fs, const char *type, const char *data,
                          struct coil_error *err) {
  cleanup_free char *copy = strdup(data);
  if (!copy)
    return coil_error_sys(err, ENOMEM, "%s options", type);
  char *save = NULL;
  for (char *opt = strtok_r(copy, ",", &save); opt;
       opt = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(opt, '=');
    if (eq)
      *eq++ = '\0';
    if (fs_config(fs, type, opt, eq, err) < 0)
      return -1;
  }
  return 0;
}

int mountfd_new_fs(const char *type, const char *source, unsigned long flags,
                   const char *data, struct coil_error *err) {
  cleanup_close int fs = fsopen(type, FSOPEN_CLOEXEC);
  if (fs < 0) {
    if (errno == ENODEV)
      return coil_error_set(
          err, ENODEV, "filesystem type \"%s\" is unknown to the kernel", type);
    return mount_api_error(err, errno, "fsopen");
  }
  if (source && fs_config(fs, type, "source", source, err) < 0)
    return -1;
  for (size_t i = 0; i < sizeof sb_flags / sizeof sb_flags[0]; i++)
    if ((flags & sb_flags[i].ms) &&
        fs_config(fs, type, sb_flags[i].name, NULL, err) < 0)
      return -1;
  if (data && *data && fs_config_data(fs, type, data, err) < 0)
    return -1;
  if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
    int e = errno;
    char msg[256];
    const char *why = fs_message(fs, msg, sizeof msg);
    return coil_error_sys(err, e, "create %s%s%s", type, *why ? ": " : "", why);
  }
  cleanup_close int mnt = fsmount(fs, FSMOUNT_CLOEXEC, 0);
  if (mnt < 0)
    return mount_api_error(err, errno, "fsmount");
  if (mountfd_set_flags(mnt, flags, 0, err) < 0)
    return -1;
  return steal_fd(mnt);
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

int mountfd_set_attr(int mnt, bool recursive, uint64_t set, uint64_t clear,
                     struct coil_error *err) {
  struct mount_attr attr = {.attr_set = set, .attr_clr = clear};
  if (!set && !clear)
    return 0;
  unsigned int flags = AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0);
  if (mount_setattr(mnt, "", flags, &attr, sizeof attr) < 0) {
    if (errno == EPERM)
      return coil_error_sys(err, EPERM,
                            "set recursive mount attributes (a mount "
                            "inherited from a more privileged namespace keeps "
                            "its ro/nosuid/nodev/noexec and atime flags)");
    return mount_api_error(err, errno, "mount_setattr");
  }
  return 0;
}

int mountfd_idmap(int mnt, int userns_fd, bool recursive,
                  struct coil_error *err) {
  struct mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP,
                            .userns_fd = (uint64_t)userns_fd};
  unsigned int flags = AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0);
  if (mount_setattr(mnt, "", flags, &attr, sizeof attr) == 0)
    return 0;
  if (errno == EINVAL)
    return coil_error_sys(err, EINVAL,
                          "id-mapped mount (the filesystem does not support "
                          "id mapping, or the source is id-mapped already)");
  return mount_api_error(err, errno, "id-mapped mount: mount_setattr");
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
