#include "tmpcopy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"

/* Deeper trees would need more fds than a container may be given. */
#define MAX_DEPTH 128

static void closedirp(DIR **d) {
  if (*d)
    closedir(*d);
}
#define cleanup_closedir __attribute__((cleanup(closedirp)))

static int copy_tree_at(int src, int dst, const char *path, int depth,
                        struct coil_error *err);

/* Owner before mode: chown clears the set-id bits. */
static int copy_attrs(int fd, const struct stat *st) {
  struct timespec ts[2] = {st->st_atim, st->st_mtim};
  if (fchown(fd, st->st_uid, st->st_gid) < 0 ||
      fchmod(fd, st->st_mode & 07777) < 0 || futimens(fd, ts) < 0)
    return -1;
  return 0;
}

static int copy_data(int in, int out, off_t size) {
  while (size > 0) {
    ssize_t n = sendfile(out, in, NULL, (size_t)size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return n < 0 ? -1 : 0; /* a file that shrank meanwhile ends early */
    size -= n;
  }
  return 0;
}

static int copy_file(int src, int dst, const char *name, const char *path,
                     struct coil_error *err) {
  /* O_NONBLOCK: a fifo swapped in after the stat must not block the open. */
  cleanup_close int in =
      openat(src, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (in < 0 || fstat(in, &st) < 0)
    return coil_error_sys(err, errno, "tmpcopyup: open %s/%s", path, name);
  if (!S_ISREG(st.st_mode))
    return coil_error_set(err, EAGAIN, "tmpcopyup: %s/%s changed type", path,
                          name);
  cleanup_close int out = openat(
      dst, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (out < 0 || copy_data(in, out, st.st_size) < 0 || copy_attrs(out, &st) < 0)
    return coil_error_sys(err, errno, "tmpcopyup: copy %s/%s", path, name);
  return 0;
}

static int copy_dir(int src, int dst, const char *name, const char *path,
                    int depth, struct coil_error *err) {
  cleanup_free char *sub = NULL;
  if (asprintf(&sub, "%s/%s", path, name) < 0) {
    sub = NULL;
    return coil_error_sys(err, ENOMEM, "tmpcopyup");
  }
  if (depth >= MAX_DEPTH)
    return coil_error_set(err, ELOOP, "tmpcopyup: %s: nested too deep", sub);
  cleanup_close int in =
      openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (in < 0 || fstat(in, &st) < 0)
    return coil_error_sys(err, errno, "tmpcopyup: open %s", sub);
  if (mkdirat(dst, name, 0700) < 0)
    return coil_error_sys(err, errno, "tmpcopyup: mkdir %s", sub);
  cleanup_close int out =
      openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (out < 0)
    return coil_error_sys(err, errno, "tmpcopyup: open copy of %s", sub);
  if (copy_tree_at(in, out, sub, depth + 1, err) < 0)
    return -1;
  /* Last, so the copying inside changes neither mode nor times. */
  if (copy_attrs(out, &st) < 0)
    return coil_error_sys(err, errno, "tmpcopyup: attributes of %s", sub);
  return 0;
}

static int copy_symlink(int src, int dst, const char *name,
                        const struct stat *st, const char *path,
                        struct coil_error *err) {
  size_t size = (size_t)st->st_size + 1;
  cleanup_free char *target = malloc(size);
  if (!target)
    return coil_error_sys(err, ENOMEM, "tmpcopyup");
  ssize_t n = readlinkat(src, name, target, size);
  if (n < 0)
    return coil_error_sys(err, errno, "tmpcopyup: readlink %s/%s", path, name);
  if ((size_t)n >= size)
    return coil_error_set(err, EAGAIN, "tmpcopyup: %s/%s changed", path, name);
  target[n] = '\0';
  struct timespec ts[2] = {st->st_atim, st->st_mtim};
  if (symlinkat(target, dst, name) < 0 ||
      fchownat(dst, name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0 ||
      utimensat(dst, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
    return coil_error_sys(err, errno, "tmpcopyup: symlink %s/%s", path, name);
  return 0;
}

static int copy_node(int dst, const char *name, const struct stat *st,
                     const char *path, struct coil_error *err) {
  struct timespec ts[2] = {st->st_atim, st->st_mtim};
  if (mknodat(dst, name, st->st_mode & (S_IFMT | 0700), st->st_rdev) < 0 ||
      fchownat(dst, name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0 ||
      fchmodat(dst, name, st->st_mode & 07777, 0) < 0 ||
      utimensat(dst, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
    return coil_error_sys(err, errno, "tmpcopyup: mknod %s/%s", path, name);
  return 0;
}

static int copy_entry(int src, int dst, const char *name, const char *path,
                      int depth, struct coil_error *err) {
  struct stat st;
  if (fstatat(src, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return coil_error_sys(err, errno, "tmpcopyup: stat %s/%s", path, name);
  switch (st.st_mode & S_IFMT) {
  case S_IFREG:
    return copy_file(src, dst, name, path, err);
  case S_IFDIR:
    return copy_dir(src, dst, name, path, depth, err);
  case S_IFLNK:
    return copy_symlink(src, dst, name, &st, path, err);
  case S_IFIFO:
  case S_IFCHR:
  case S_IFBLK:
    return copy_node(dst, name, &st, path, err);
  default:
    return 0; /* a socket is no content: it needs its listener */
  }
}

static int copy_tree_at(int src, int dst, const char *path, int depth,
                        struct coil_error *err) {
  int fd = dup(src);
  if (fd < 0)
    return coil_error_sys(err, errno, "tmpcopyup: %s", path);
  cleanup_closedir DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return coil_error_sys(err, errno, "tmpcopyup: read %s", path);
  }
  struct dirent *e;
  errno = 0;
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    if (copy_entry(src, dst, e->d_name, path, depth, err) < 0)
      return -1;
    errno = 0;
  }
  if (errno)
    return coil_error_sys(err, errno, "tmpcopyup: read %s", path);
  return 0;
}

int tmpcopy_tree(int src, int dst, const char *path, struct coil_error *err) {
  return copy_tree_at(src, dst, strcmp(path, "/") ? path : "", 0, err);
}
