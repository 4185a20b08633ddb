#include "readall.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cleanup.h"

int read_all(int fd, size_t cap, bool truncate, char **out, size_t *len,
             struct coil_error *err) {
  size_t n = 0, alloc = cap < 4096 ? cap + 1 : 4096;
  cleanup_free char *buf = malloc(alloc + 1);
  if (!buf)
    return coil_error_sys(err, ENOMEM, "read");
  for (;;) {
    if (n == alloc) {
      if (alloc > cap)
        break; /* holds cap + 1 bytes: over the cap */
      alloc = alloc * 2 > cap + 1 ? cap + 1 : alloc * 2;
      char *bigger = realloc(buf, alloc + 1);
      if (!bigger)
        return coil_error_sys(err, ENOMEM, "read");
      buf = bigger;
    }
    ssize_t r = read(fd, buf + n, alloc - n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return coil_error_sys(err, errno, "read");
    if (r == 0)
      break;
    n += (size_t)r;
  }
  if (n > cap && !truncate)
    return coil_error_set(err, EFBIG, "larger than %zu bytes", cap);
  buf[n] = '\0';
  *out = steal_ptr(buf);
  *len = n;
  return 0;
}

int read_file_or_stdin(const char *path, size_t cap, bool truncate, char **out,
                       size_t *len, struct coil_error *err) {
  bool is_stdin = strcmp(path, "-") == 0;
  int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return coil_error_sys(err, errno, "open %s", path);
  int r = read_all(fd, cap, truncate, out, len, err);
  if (!is_stdin)
    close(fd);
  return r < 0 ? coil_error_prefix(err, "%s", is_stdin ? "<stdin>" : path) : 0;
}

int read_exact(int fd, void *buf, size_t n) {
  for (size_t off = 0; off < n;) {
    ssize_t r = read(fd, (char *)buf + off, n - off);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return -1;
    off += (size_t)r;
  }
  return 0;
}

int write_frame(int fd, const void *buf, size_t n) {
  unsigned char hdr[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16),
                          (unsigned char)(n >> 8), (unsigned char)n};
  struct iovec iov[2] = {{hdr, 4}, {(void *)buf, n}};
  size_t total = 4 + n, done = 0;
  while (done < total) {
    ssize_t w = writev(fd, iov, 2);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    done += (size_t)w;
    for (int i = 0; i < 2; i++) {
      size_t k = (size_t)w < iov[i].iov_len ? (size_t)w : iov[i].iov_len;
      iov[i].iov_base = (char *)iov[i].iov_base + k;
      iov[i].iov_len -= k;
      w -= (ssize_t)k;
    }
  }
  return 0;
}
