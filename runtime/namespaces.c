#include "namespaces.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"

static const struct coil_namespace *find_ns(const struct coil_linux *l,
                                            int flag) {
  for (size_t i = 0; i < l->n_namespaces; i++)
    if (l->namespaces[i].clone_flag == flag)
      return &l->namespaces[i];
  return NULL;
}

bool namespaces_has(const struct coil_linux *l, int clone_flag) {
  return find_ns(l, clone_flag) != NULL;
}

bool namespaces_wants_new(const struct coil_linux *l, int clone_flag) {
  const struct coil_namespace *ns = find_ns(l, clone_flag);
  return ns && !ns->path;
}

int namespaces_clone_flags(const struct coil_linux *l) {
  int flags = 0;
  for (size_t i = 0; i < l->n_namespaces; i++)
    if (!l->namespaces[i].path &&
        l->namespaces[i].clone_flag != CLONE_NEWCGROUP)
      flags |= l->namespaces[i].clone_flag;
  return flags;
}

int namespaces_validate(const struct coil_linux *l, struct coil_error *err) {
  for (size_t i = 0; i < l->n_namespaces; i++) {
    const struct coil_namespace *ns = &l->namespaces[i];
    if (!ns->path)
      continue;
    cleanup_close int fd = open(ns->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return coil_error_sys(err, errno, "linux.namespaces[%zu].path: open %s",
                            i, ns->path);
    int type = ioctl(fd, NS_GET_NSTYPE);
    if (type < 0)
      return coil_error_set(err, EINVAL,
                            "linux.namespaces[%zu].path: %s is not a namespace",
                            i, ns->path);
    if (type != ns->clone_flag)
      return coil_error_set(
          err, EINVAL, "linux.namespaces[%zu].path: %s is not a %s namespace",
          i, ns->path, ns->type);
  }
  if (namespaces_wants_new(l, CLONE_NEWUSER) &&
      (l->n_uid_mappings == 0 || l->n_gid_mappings == 0))
    return coil_error_set(err, EINVAL,
                          "linux.uidMappings: a new user namespace needs "
                          "uidMappings and gidMappings");
  return 0;
}

static int join_one(const struct coil_namespace *ns, size_t i,
                    struct coil_error *err) {
  cleanup_close int fd = open(ns->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return coil_error_sys(err, errno, "linux.namespaces[%zu].path: open %s", i,
                          ns->path);
  if (setns(fd, ns->clone_flag) < 0)
    return coil_error_sys(err, errno, "linux.namespaces[%zu].path: setns %s", i,
                          ns->path);
  return 0;
}

int namespaces_join(const struct coil_linux *l, struct coil_error *err) {
  const struct coil_namespace *mnt = find_ns(l, CLONE_NEWNS);
  if (mnt && mnt->path)
    return join_one(mnt, (size_t)(mnt - l->namespaces), err);
  return 0;
}

const char *namespaces_user_path(const struct coil_linux *l) {
  const struct coil_namespace *user = find_ns(l, CLONE_NEWUSER);
  return user ? user->path : NULL;
}

/* /proc/self/ns entry that names the parent's current namespace of a type. */
static const char *self_ns_name(int flag) {
  switch (flag) {
  case CLONE_NEWNET:
    return "net";
  case CLONE_NEWIPC:
    return "ipc";
  case CLONE_NEWUTS:
    return "uts";
  case CLONE_NEWCGROUP:
    return "cgroup";
  case CLONE_NEWPID:
    return "pid_for_children";
  case CLONE_NEWTIME:
    return "time_for_children";
  default:
    return NULL;
  }
}

int namespaces_joins_runtimes(const struct coil_linux *l, int clone_flag,
                              bool *same, struct coil_error *err) {
  *same = false;
  const struct coil_namespace *ns = find_ns(l, clone_flag);
  const char *self = self_ns_name(clone_flag);
  if (!ns || !ns->path || !self)
    return 0;
  char cur[64];
  snprintf(cur, sizeof cur, "/proc/self/ns/%s", self);
  struct stat joined, own;
  if (stat(ns->path, &joined) < 0)
    return coil_error_sys(err, errno, "linux.namespaces: %s namespace %s",
                          ns->type, ns->path);
  if (stat(cur, &own) < 0)
    return coil_error_sys(err, errno, "stat %s", cur);
  *same = joined.st_dev == own.st_dev && joined.st_ino == own.st_ino;
  return 0;
}

int namespaces_parent_enter(const struct coil_linux *l, struct ns_saved *saved,
                            struct coil_error *err) {
  saved->n = 0;
  for (size_t i = 0; i < l->n_namespaces; i++) {
    const struct coil_namespace *ns = &l->namespaces[i];
    const char *self = self_ns_name(ns->clone_flag);
    if (!ns->path || !self)
      continue;
    char cur[64];
    snprintf(cur, sizeof cur, "/proc/self/ns/%s", self);
    int fd = open(cur, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      int e = errno;
      namespaces_parent_restore(saved, err);
      return coil_error_sys(err, e, "open %s", cur);
    }
    saved->fd[saved->n] = fd;
    saved->flag[saved->n++] = ns->clone_flag;
    if (join_one(ns, i, err) < 0) {
      struct coil_error ignored;
      namespaces_parent_restore(saved, &ignored);
      return -1;
    }
  }
  return 0;
}

int namespaces_parent_restore(struct ns_saved *saved, struct coil_error *err) {
  int r = 0;
  for (size_t i = saved->n; i-- > 0;) {
    if (setns(saved->fd[i], saved->flag[i]) < 0 && r == 0)
      r = coil_error_sys(err, errno, "setns back to the runtime's namespace");
    close(saved->fd[i]);
  }
  saved->n = 0;
  return r;
}

int namespaces_write_map(pid_t pid, const char *file, const char *field,
                         const struct coil_id_mapping *m, size_t n,
                         struct coil_error *err) {
  char buf[4096];
  size_t off = 0;
  for (size_t i = 0; i < n; i++) {
    int w = snprintf(buf + off, sizeof buf - off, "%u %u %u\n",
                     m[i].container_id, m[i].host_id, m[i].size);
    if (w < 0 || (size_t)w >= sizeof buf - off)
      return coil_error_set(err, E2BIG, "%s: too many mappings", field);
    off += (size_t)w;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/%s", pid, file);
  cleanup_close int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return coil_error_sys(err, errno, "%s: open %s", field, path);
  if (write(fd, buf, off) != (ssize_t)off)
    return coil_error_sys(err, errno, "%s: write %s", field, path);
  return 0;
}

int namespaces_write_id_maps(pid_t pid, const struct coil_linux *l,
                             struct coil_error *err) {
  if (!namespaces_wants_new(l, CLONE_NEWUSER))
    return 0;
  if (namespaces_write_map(pid, "uid_map", "linux.uidMappings", l->uid_mappings,
                           l->n_uid_mappings, err) < 0)
    return -1;
  return namespaces_write_map(pid, "gid_map", "linux.gidMappings",
                              l->gid_mappings, l->n_gid_mappings, err);
}

long namespaces_host_id(const struct coil_id_mapping *m, size_t n,
                        uint32_t id) {
  if (n == 0)
    return id;
  for (size_t i = 0; i < n; i++)
    if (id >= m[i].container_id && id - m[i].container_id < m[i].size)
      return (long)m[i].host_id + (id - m[i].container_id);
  return -1;
}
