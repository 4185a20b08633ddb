#include "state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "cleanup.h"
#include "readall.h"

static int mkdir_p(const char *path, mode_t mode, struct coil_error *err) {
  cleanup_free char *copy = strdup(path);
  if (!copy)
    return coil_error_sys(err, ENOMEM, "mkdir %s", path);
  for (char *p = copy + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(copy, mode) < 0 && errno != EEXIST)
      return coil_error_sys(err, errno, "mkdir %s", copy);
    *p = '/';
  }
  if (mkdir(copy, mode) < 0 && errno != EEXIST)
    return coil_error_sys(err, errno, "mkdir %s", copy);
  return 0;
}

static int lock_dir(int fd, const char *what, struct coil_error *err) {
  while (flock(fd, LOCK_EX) < 0)
    if (errno != EINTR)
      return coil_error_sys(err, errno, "lock %s", what);
  return 0;
}

/* Someone else's directory, or one others may write to, could hold a
 * planted state: a pid to kill, cgroups to remove, hooks to run as us. */
static int check_trusted(int fd, const char *what, const char *path,
                         struct coil_error *err) {
  struct stat sb;
  if (fstat(fd, &sb) < 0)
    return coil_error_sys(err, errno, "%s %s: stat", what, path);
  if (!S_ISDIR(sb.st_mode))
    return coil_error_set(err, ENOTDIR, "%s %s: not a directory", what, path);
  if (sb.st_uid != geteuid())
    return coil_error_set(err, EPERM,
                          "%s %s: owned by uid %u, not by the caller (uid %u): "
                          "refusing to trust its state",
                          what, path, (unsigned)sb.st_uid, (unsigned)geteuid());
  if (sb.st_mode & (S_IWGRP | S_IWOTH))
    return coil_error_set(err, EPERM,
                          "%s %s: writable by group or others (mode %04o): "
                          "refusing to trust its state",
                          what, path, (unsigned)(sb.st_mode & 07777));
  return 0;
}

/* Opens (with create, first makes) the state root. A missing root is ENOENT
 * "container ... does not exist" for id, or plain ENOENT without one. */
static int open_root(const char *root, bool create, const char *id, int *out,
                     struct coil_error *err) {
  if (create && mkdir_p(root, 0700, err) < 0)
    return coil_error_prefix(err, "--root");
  int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT && id)
      return coil_error_set(err, ENOENT, "container \"%s\" does not exist", id);
    return coil_error_sys(err, errno, "--root %s", root);
  }
  if (check_trusted(fd, "--root", root, err) < 0) {
    close(fd);
    return -1;
  }
  *out = fd;
  return 0;
}

static int open_container_dir(const char *root, struct coil_state_dir *d,
                              const char *id, struct coil_error *err) {
  d->fd = openat(d->root_fd, d->name,
                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (d->fd < 0) {
    if (errno == ENOENT)
      return coil_error_set(err, ENOENT, "container \"%s\" does not exist",
                            id ? id : d->name);
    return coil_error_sys(err, errno, "container directory %s/%s", root,
                          d->name);
  }
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", root, d->name);
  return check_trusted(d->fd, "container directory", path, err);
}

/* Empties and removes root_fd/name. */
static int remove_dir_at(int root_fd, const char *name, const char *what,
                         struct coil_error *err) {
  int fd =
      openat(root_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? 0 : coil_error_sys(err, errno, "open %s", what);
  DIR *dir = fdopendir(fd);
  if (!dir) {
    int e = errno;
    close(fd);
    return coil_error_sys(err, e, "open %s", what);
  }
  struct dirent *de;
  while ((de = readdir(dir))) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    if (unlinkat(fd, de->d_name, 0) < 0 && errno != ENOENT) {
      int e = errno;
      closedir(dir);
      return coil_error_sys(err, e, "remove %s/%s", what, de->d_name);
    }
  }
  closedir(dir);
  if (unlinkat(root_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
    return coil_error_sys(err, errno, "rmdir %s", what);
  return 0;
}

#define CREATING_PREFIX "~creating."
#define DELETING_PREFIX "~deleting."

/* "PREFIX<pid>.<sec>.<nsec>" of this process into buf. */
static void temp_name(const char *prefix, char *buf, size_t cap) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  snprintf(buf, cap, "%s%d.%lld.%ld", prefix, (int)getpid(),
           (long long)ts.tv_sec, ts.tv_nsec);
}

/* A create killed between its mkdir and its rename, or a delete killed
 * while emptying the directory, leaves a directory no id names: create and
 * delete --force remove those whose owner, the pid in the name, no longer
 * exists. */
static void remove_abandoned_at(int root_fd) {
  int fd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *dir = fd < 0 ? NULL : fdopendir(fd);
  if (!dir) {
    if (fd >= 0)
      close(fd);
    return;
  }
  static const char *const prefixes[] = {CREATING_PREFIX, DELETING_PREFIX};
  struct dirent *de;
  while ((de = readdir(dir))) {
    int pid = 0;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
      if (strncmp(de->d_name, prefixes[i], strlen(prefixes[i])) == 0 &&
          sscanf(de->d_name + strlen(prefixes[i]), "%d.", &pid) != 1)
        pid = 0;
    if (pid <= 0 || pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH)
      continue;
    struct coil_error ignored;
    remove_dir_at(root_fd, de->d_name, de->d_name, &ignored);
  }
  closedir(dir);
}

void state_remove_abandoned(const char *root) {
  int root_fd;
  struct coil_error ignored;
  if (open_root(root, false, NULL, &root_fd, &ignored) < 0)
    return;
  remove_abandoned_at(root_fd);
  close(root_fd);
}

int state_dir_create(const char *root, const char *id,
                     const struct coil_state *initial, struct coil_state_dir *d,
                     struct coil_error *err) {
  *d = (struct coil_state_dir)COIL_STATE_DIR_INIT;
  if (open_root(root, true, NULL, &d->root_fd, err) < 0)
    return -1;
  remove_abandoned_at(d->root_fd);
  id_dirname(id, d->name);
  /* Set up under a name no id can have, then renamed into place: a reader
   * never sees the directory without its state file or its lock. */
  char tmp[64];
  temp_name(CREATING_PREFIX, tmp, sizeof tmp);
  if (mkdirat(d->root_fd, tmp, 0700) < 0) {
    coil_error_sys(err, errno, "mkdir %s/%s", root, tmp);
    state_dir_close(d);
    return -1;
  }
  d->fd =
      openat(d->root_fd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (d->fd < 0)
    coil_error_sys(err, errno, "open %s/%s", root, tmp);
  if (d->fd < 0 || lock_dir(d->fd, tmp, err) < 0 ||
      state_write(d->fd, initial, err) < 0)
    goto undo;
  if (renameat2(d->root_fd, tmp, d->root_fd, d->name, RENAME_NOREPLACE) < 0) {
    if (errno == EEXIST || errno == ENOTEMPTY)
      coil_error_set(err, EEXIST, "container \"%s\" already exists", id);
    else
      coil_error_sys(err, errno, "rename %s/%s", root, tmp);
    goto undo;
  }
  return 0;

undo:;
  struct coil_error ignored;
  remove_dir_at(d->root_fd, tmp, tmp, &ignored);
  state_dir_close(d);
  return -1;
}

int state_dir_open(const char *root, const char *id, bool lock,
                   struct coil_state_dir *d, struct coil_error *err) {
  *d = (struct coil_state_dir)COIL_STATE_DIR_INIT;
  id_dirname(id, d->name);
  if (open_root(root, false, id, &d->root_fd, err) < 0 ||
      open_container_dir(root, d, id, err) < 0)
    goto fail;
  if (!lock)
    return 0;
  if (lock_dir(d->fd, d->name, err) < 0)
    goto fail;
  /* A concurrent delete may have removed it while we waited for the lock. */
  if (faccessat(d->fd, "state.json", F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
    coil_error_set(err, ENOENT, "container \"%s\" does not exist", id);
    goto fail;
  }
  return 0;

fail:
  state_dir_close(d);
  return -1;
}

int state_dir_open_name(const char *root, const char *name,
                        struct coil_state_dir *d, struct coil_error *err) {
  *d = (struct coil_state_dir)COIL_STATE_DIR_INIT;
  snprintf(d->name, sizeof d->name, "%s", name);
  if (open_root(root, false, NULL, &d->root_fd, err) < 0 ||
      open_container_dir(root, d, NULL, err) < 0) {
    state_dir_close(d);
    return -1;
  }
  return 0;
}

int state_dir_remove(struct coil_state_dir *d, struct coil_error *err) {
  /* Renamed away first: a delete killed while emptying it then leaves a
   * directory remove_abandoned_at() finds, not one without a state file
   * under the id, which no command could read or remove. */
  char tmp[64];
  temp_name(DELETING_PREFIX, tmp, sizeof tmp);
  if (renameat(d->root_fd, d->name, d->root_fd, tmp) < 0)
    return errno == ENOENT ? 0
                           : coil_error_sys(err, errno, "rename %s", d->name);
  return remove_dir_at(d->root_fd, tmp, d->name, err);
}

void state_dir_close(struct coil_state_dir *d) {
  if (d->fd >= 0)
    close(d->fd);
  if (d->root_fd >= 0)
    close(d->root_fd);
  d->fd = d->root_fd = -1;
}

bool state_dir_busy(const struct coil_state_dir *d) {
  if (flock(d->fd, LOCK_SH | LOCK_NB) < 0)
    return errno == EWOULDBLOCK;
  flock(d->fd, LOCK_UN);
  return false;
}

/* A failed write names the file's full path (a full or read-only --root
 * must be recognisable), found through the directory's fd. */
static int write_failed(int dirfd, const char *what, const char *name, int e,
                        struct coil_error *err) {
  char link[64], dir[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
  ssize_t n = readlink(link, dir, sizeof dir - 1);
  if (n <= 0)
    return coil_error_sys(err, e, "%s %s", what, name);
  dir[n] = '\0';
  return coil_error_sys(err, e, "%s %s/%s", what, dir, name);
}

int state_write_file(int dirfd, const char *name, const char *buf, size_t len,
                     struct coil_error *err) {
  char tmp[256];
  snprintf(tmp, sizeof tmp, ".%s.tmp", name);
  cleanup_close int fd = openat(
      dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return write_failed(dirfd, "create", tmp, errno, err);
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(fd, buf + off, len - off);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      int e = errno;
      unlinkat(dirfd, tmp, 0);
      return write_failed(dirfd, "write", tmp, e, err);
    }
    off += (size_t)w;
  }
  /* rename alone makes the update atomic for readers; --root is normally a
   * tmpfs, where fsync buys nothing. */
  if (renameat(dirfd, tmp, dirfd, name) < 0) {
    int e = errno;
    unlinkat(dirfd, tmp, 0);
    return write_failed(dirfd, "write", name, e, err);
  }
  return 0;
}

static void gen_str(yajl_gen g, const char *k, const char *v) {
  yajl_gen_string(g, (const unsigned char *)k, strlen(k));
  if (v)
    yajl_gen_string(g, (const unsigned char *)v, strlen(v));
  else
    yajl_gen_null(g);
}

static void gen_int(yajl_gen g, const char *k, long long v) {
  yajl_gen_string(g, (const unsigned char *)k, strlen(k));
  yajl_gen_integer(g, v);
}

int state_write(int dirfd, const struct coil_state *st,
                struct coil_error *err) {
  yajl_gen g = yajl_gen_alloc(NULL);
  if (!g)
    return coil_error_sys(err, ENOMEM, "state.json");
  yajl_gen_map_open(g);
  gen_str(g, "id", st->id);
  gen_int(g, "pid", st->pid);
  char start[32];
  snprintf(start, sizeof start, "%llu", st->pid_start);
  gen_str(g, "pidStart", start);
  gen_str(g, "bundle", st->bundle);
  gen_str(g, "rootfs", st->rootfs);
  gen_str(g, "created", st->created);
  yajl_gen_string(g, (const unsigned char *)"started", 7);
  yajl_gen_bool(g, st->started);
  if (st->started_boot_ms)
    gen_int(g, "startedBootMs", st->started_boot_ms);
  gen_str(g, "cgroup", st->cgroup);
  if (st->creating) {
    yajl_gen_string(g, (const unsigned char *)"creating", 8);
    yajl_gen_bool(g, 1);
    gen_str(g, "cgroupPlanned", st->cgroup_planned);
  }
  yajl_gen_map_close(g);
  const unsigned char *buf;
  size_t len;
  yajl_gen_get_buf(g, &buf, &len);
  int r = state_write_file(dirfd, "state.json", (const char *)buf, len, err);
  yajl_gen_free(g);
  return r;
}

static char *tree_str(yajl_val root, const char *key) {
  const char *path[] = {key, NULL};
  yajl_val v = yajl_tree_get(root, path, yajl_t_string);
  const char *s = v ? YAJL_GET_STRING(v) : NULL;
  return s ? strdup(s) : NULL;
}

int state_read_file(int dirfd, const char *name, char **buf, size_t *len,
                    struct coil_error *err) {
  cleanup_close int fd =
      openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return coil_error_sys(err, errno, "open %s", name);
  struct stat sb;
  if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode))
    return coil_error_set(err, EINVAL, "%s: not a regular file", name);
  if (read_all(fd, 1 << 22, false, buf, len, err) < 0)
    return coil_error_prefix(err, "%s", name);
  return 0;
}

int state_read(const struct coil_state_dir *d, const char *id,
               struct coil_state **out, struct coil_error *err) {
  cleanup_free char *buf = NULL;
  size_t len;
  if (state_read_file(d->fd, "state.json", &buf, &len, err) < 0) {
    if (err->err == ENOENT)
      return coil_error_set(err, ENOENT, "container \"%s\" does not exist",
                            id ? id : d->name);
    return -1;
  }
  char ebuf[256];
  yajl_val tree = yajl_tree_parse(buf, ebuf, sizeof ebuf);
  if (!tree || !YAJL_IS_OBJECT(tree)) {
    yajl_tree_free(tree);
    return coil_error_set(err, EINVAL, "%s/state.json: corrupt state file",
                          d->name);
  }
  struct coil_state *st = calloc(1, sizeof *st);
  if (!st) {
    yajl_tree_free(tree);
    return coil_error_sys(err, ENOMEM, "state");
  }
  st->id = tree_str(tree, "id");
  st->bundle = tree_str(tree, "bundle");
  st->rootfs = tree_str(tree, "rootfs");
  st->created = tree_str(tree, "created");
  st->cgroup = tree_str(tree, "cgroup");
  st->cgroup_planned = tree_str(tree, "cgroupPlanned");
  const char *pid_path[] = {"pid", NULL};
  yajl_val v = yajl_tree_get(tree, pid_path, yajl_t_number);
  st->pid = v && YAJL_IS_INTEGER(v) ? (pid_t)YAJL_GET_INTEGER(v) : 0;
  cleanup_free char *start = tree_str(tree, "pidStart");
  st->pid_start = start ? strtoull(start, NULL, 10) : 0;
  const char *started_path[] = {"started", NULL};
  st->started = YAJL_IS_TRUE(yajl_tree_get(tree, started_path, yajl_t_true));
  const char *boot_path[] = {"startedBootMs", NULL};
  v = yajl_tree_get(tree, boot_path, yajl_t_number);
  st->started_boot_ms = v && YAJL_IS_INTEGER(v) ? YAJL_GET_INTEGER(v) : 0;
  const char *creating_path[] = {"creating", NULL};
  st->creating = YAJL_IS_TRUE(yajl_tree_get(tree, creating_path, yajl_t_true));
  yajl_tree_free(tree);
  if (!st->id || !st->bundle) {
    state_free(st);
    return coil_error_set(err, EINVAL, "%s/state.json: corrupt state file",
                          d->name);
  }
  /* The directory must be this id's: another id's state is not ours. */
  char name[COIL_ID_DIRNAME_MAX];
  id_dirname(st->id, name);
  if ((id && strcmp(st->id, id) != 0) || strcmp(name, d->name) != 0) {
    state_free(st);
    return coil_error_set(err, ENOENT, "container \"%s\" does not exist",
                          id ? id : d->name);
  }
  *out = st;
  return 0;
}

void state_free(struct coil_state *st) {
  free(st->id);
  free(st->bundle);
  free(st->rootfs);
  free(st->created);
  free(st->cgroup);
  free(st->cgroup_planned);
  free(st);
}

unsigned long long state_pid_start_time(pid_t pid) {
  if (pid <= 0)
    return 0;
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  /* comm may contain spaces and parens: fields resume after the last ')'. */
  char *p = strrchr(buf, ')');
  if (!p || p[1] != ' ')
    return 0;
  char state = p[2];
  if (state == 'Z' || state == 'X')
    return 0;
  p += 2;
  for (int field = 3; field < 22; field++) {
    p = strchr(p, ' ');
    if (!p)
      return 0;
    p++;
  }
  return strtoull(p, NULL, 10);
}

const char *state_status_name(enum coil_status s) {
  switch (s) {
  case COIL_STATUS_CREATING:
    return "creating";
  case COIL_STATUS_CREATED:
    return "created";
  case COIL_STATUS_RUNNING:
    return "running";
  case COIL_STATUS_STOPPED:
    return "stopped";
  case COIL_STATUS_PAUSED:
    return "paused";
  }
  return "unknown";
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int state_list(const char *root, char ***names, size_t *n,
               struct coil_error *err) {
  *names = NULL;
  *n = 0;
  int root_fd;
  if (open_root(root, false, NULL, &root_fd, err) < 0)
    return err->err == ENOENT ? 0 : -1;
  DIR *d = fdopendir(root_fd);
  if (!d) {
    int e = errno;
    close(root_fd);
    return coil_error_sys(err, e, "open %s", root);
  }
  struct dirent *de;
  size_t cap = 0;
  while ((de = readdir(d))) {
    if (!id_is_dirname(de->d_name))
      continue;
    if (*n == cap) {
      cap = cap ? cap * 2 : 16;
      char **grown = realloc(*names, cap * sizeof **names);
      if (!grown)
        break;
      *names = grown;
    }
    (*names)[(*n)++] = strdup(de->d_name);
  }
  closedir(d);
  if (*n)
    qsort(*names, *n, sizeof **names, cmp_str);
  return 0;
}
