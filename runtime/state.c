#include "state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "cleanup.h"
#include "id.h"

char *state_path(const char *root, const char *id, const char *name) {
  char *p = NULL;
  char dir[COIL_ID_DIRNAME_MAX];
  id_dirname(id, dir);
  if (asprintf(&p, "%s/%s%s%s", root, dir, name ? "/" : "", name ? name : "") <
      0)
    return NULL;
  return p;
}

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

static int lock_dir(int fd, const char *path, struct coil_error *err) {
  while (flock(fd, LOCK_EX) < 0)
    if (errno != EINTR)
      return coil_error_sys(err, errno, "lock %s", path);
  return 0;
}

int state_dir_create(const char *root, const char *id, int *dirfd,
                     struct coil_error *err) {
  if (mkdir_p(root, 0700, err) < 0)
    return coil_error_prefix(err, "state root");
  cleanup_free char *dir = state_path(root, id, NULL);
  if (!dir)
    return coil_error_sys(err, ENOMEM, "state path");
  if (mkdir(dir, 0700) < 0) {
    if (errno == EEXIST)
      return coil_error_set(err, EEXIST, "container \"%s\" already exists", id);
    return coil_error_sys(err, errno, "mkdir %s", dir);
  }
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    rmdir(dir);
    return coil_error_sys(err, e, "open %s", dir);
  }
  if (lock_dir(fd, dir, err) < 0) {
    close(fd);
    rmdir(dir);
    return -1;
  }
  *dirfd = fd;
  return 0;
}

int state_dir_open(const char *root, const char *id, int *dirfd,
                   struct coil_error *err) {
  cleanup_free char *dir = state_path(root, id, NULL);
  if (!dir)
    return coil_error_sys(err, ENOMEM, "state path");
  cleanup_close int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return coil_error_set(err, ENOENT, "container \"%s\" does not exist", id);
    return coil_error_sys(err, errno, "open %s", dir);
  }
  if (lock_dir(fd, dir, err) < 0)
    return -1;
  /* A concurrent delete may have removed it while we waited for the lock. */
  if (faccessat(fd, "state.json", F_OK, 0) < 0)
    return coil_error_set(err, ENOENT, "container \"%s\" does not exist", id);
  *dirfd = steal_fd(fd);
  return 0;
}

int state_dir_remove(const char *root, const char *id, struct coil_error *err) {
  cleanup_free char *dir = state_path(root, id, NULL);
  if (!dir)
    return coil_error_sys(err, ENOMEM, "state path");
  DIR *d = opendir(dir);
  if (!d) {
    if (errno == ENOENT)
      return 0;
    return coil_error_sys(err, errno, "open %s", dir);
  }
  struct dirent *de;
  while ((de = readdir(d))) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    if (unlinkat(dirfd(d), de->d_name, 0) < 0 && errno != ENOENT) {
      int e = errno;
      closedir(d);
      return coil_error_sys(err, e, "remove %s/%s", dir, de->d_name);
    }
  }
  closedir(d);
  if (rmdir(dir) < 0 && errno != ENOENT)
    return coil_error_sys(err, errno, "rmdir %s", dir);
  return 0;
}

int state_write_file(int dirfd, const char *name, const char *buf, size_t len,
                     struct coil_error *err) {
  char tmp[256];
  snprintf(tmp, sizeof tmp, ".%s.tmp", name);
  cleanup_close int fd =
      openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return coil_error_sys(err, errno, "create %s", tmp);
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(fd, buf + off, len - off);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      int e = errno;
      unlinkat(dirfd, tmp, 0);
      return coil_error_sys(err, e, "write %s", tmp);
    }
    off += (size_t)w;
  }
  /* rename alone makes the update atomic for readers; --root is normally a
   * tmpfs, where fsync buys nothing. */
  if (renameat(dirfd, tmp, dirfd, name) < 0) {
    int e = errno;
    unlinkat(dirfd, tmp, 0);
    return coil_error_sys(err, e, "write %s", name);
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
  gen_str(g, "cgroup", st->cgroup);
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

int state_read(const char *root, const char *id, struct coil_state **out,
               struct coil_error *err) {
  cleanup_free char *path = state_path(root, id, "state.json");
  if (!path)
    return coil_error_sys(err, ENOMEM, "state path");
  cleanup_fclose FILE *f = fopen(path, "re");
  if (!f) {
    if (errno == ENOENT)
      return coil_error_set(err, ENOENT, "container \"%s\" does not exist", id);
    return coil_error_sys(err, errno, "open %s", path);
  }
  char buf[65536];
  size_t len = fread(buf, 1, sizeof buf - 1, f);
  buf[len] = '\0';
  char ebuf[256];
  yajl_val tree = yajl_tree_parse(buf, ebuf, sizeof ebuf);
  if (!tree || !YAJL_IS_OBJECT(tree)) {
    yajl_tree_free(tree);
    return coil_error_set(err, EINVAL, "%s: corrupt state file", path);
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
  const char *pid_path[] = {"pid", NULL};
  yajl_val v = yajl_tree_get(tree, pid_path, yajl_t_number);
  st->pid = v && YAJL_IS_INTEGER(v) ? (pid_t)YAJL_GET_INTEGER(v) : 0;
  cleanup_free char *start = tree_str(tree, "pidStart");
  st->pid_start = start ? strtoull(start, NULL, 10) : 0;
  const char *started_path[] = {"started", NULL};
  st->started = YAJL_IS_TRUE(yajl_tree_get(tree, started_path, yajl_t_true));
  yajl_tree_free(tree);
  if (!st->id || !st->bundle) {
    state_free(st);
    return coil_error_set(err, EINVAL, "%s: corrupt state file", path);
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

enum coil_status state_status(const struct coil_state *st) {
  unsigned long long now = state_pid_start_time(st->pid);
  if (now == 0 || now != st->pid_start)
    return COIL_STATUS_STOPPED;
  return st->started ? COIL_STATUS_RUNNING : COIL_STATUS_CREATED;
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
  }
  return "unknown";
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int state_list(const char *root, char ***ids, size_t *n,
               struct coil_error *err) {
  *ids = NULL;
  *n = 0;
  DIR *d = opendir(root);
  if (!d) {
    if (errno == ENOENT)
      return 0;
    return coil_error_sys(err, errno, "open %s", root);
  }
  struct dirent *de;
  size_t cap = 0;
  while ((de = readdir(d))) {
    struct coil_error ignored;
    if (id_validate(de->d_name, &ignored) < 0)
      continue;
    if (faccessat(dirfd(d), de->d_name, F_OK, 0) < 0)
      continue;
    if (*n == cap) {
      cap = cap ? cap * 2 : 16;
      char **grown = realloc(*ids, cap * sizeof **ids);
      if (!grown)
        break;
      *ids = grown;
    }
    (*ids)[(*n)++] = strdup(de->d_name);
  }
  closedir(d);
  if (*n)
    qsort(*ids, *n, sizeof **ids, cmp_str);
  return 0;
}
