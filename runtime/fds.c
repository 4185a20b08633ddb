#include "fds.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static bool kept(int fd, const int *keep, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (keep[i] == fd)
      return true;
  return false;
}

/* The gaps between the kept fds, each closed by one close_range call. */
static int close_ranges(const int *keep, size_t n) {
  unsigned int from = 3;
  for (;;) {
    unsigned int next = ~0U;
    for (size_t i = 0; i < n; i++)
      if (keep[i] >= (int)from && (unsigned int)keep[i] < next)
        next = (unsigned int)keep[i];
    unsigned int to = next == ~0U ? ~0U : next - 1;
    if (next > from && syscall(SYS_close_range, from, to, 0) < 0)
      return -1;
    if (next == ~0U)
      return 0;
    from = next + 1;
  }
}

/* The directory's own fd is skipped while reading and closed at the end;
 * closing entries while reading is safe because numbers are never reused
 * here (nothing opens fds meanwhile). */
static int close_listed(const int *keep, size_t n) {
  DIR *d = opendir("/proc/self/fd");
  if (!d)
    return -1;
  int self = dirfd(d);
  struct dirent *e;
  while ((e = readdir(d))) {
    char *end;
    long fd = strtol(e->d_name, &end, 10);
    if (*end || end == e->d_name || fd < 3 || fd == self ||
        kept((int)fd, keep, n))
      continue;
    close((int)fd);
  }
  closedir(d);
  return 0;
}

static int close_each_below_limit(const int *keep, size_t n,
                                  struct coil_error *err) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
    return coil_error_sys(err, errno, "close fds: getrlimit(RLIMIT_NOFILE)");
  /* The hard limit is never above fs.nr_open, so it bounds the fd table. */
  if (rl.rlim_max == RLIM_INFINITY)
    return coil_error_set(err, EMFILE,
                          "close fds: no close_range, no /proc and no "
                          "RLIMIT_NOFILE bound");
  for (rlim_t fd = 3; fd < rl.rlim_max; fd++)
    if (!kept((int)fd, keep, n))
      close((int)fd);
  return 0;
}

int fds_close_except(const int *keep, size_t n, struct coil_error *err) {
  if (close_ranges(keep, n) == 0)
    return 0;
  if (close_listed(keep, n) == 0)
    return 0;
  return close_each_below_limit(keep, n, err);
}
