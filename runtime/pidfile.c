#include "pidfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"

/* As runc: a fresh temp file beside the target (O_EXCL: a planted link
 * there is not followed), renamed over it (a link at the path itself is
 * replaced, not followed). */
int pidfile_write(const char *path, pid_t pid, struct coil_error *err) {
  cleanup_free char *copy = strdup(path);
  cleanup_free char *tmp = NULL;
  if (!copy)
    return coil_error_sys(err, ENOMEM, "--pid-file");
  char *slash = strrchr(copy, '/');
  const char *dir = slash ? (slash == copy ? "/" : copy) : ".";
  const char *base = slash ? slash + 1 : copy;
  if (slash)
    *slash = '\0';
  if (asprintf(&tmp, "%s/.%s.XXXXXX", dir, base) < 0)
    return coil_error_sys(err, ENOMEM, "--pid-file");
  cleanup_close int fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0)
    return coil_error_sys(err, errno, "--pid-file: create %s", tmp);
  char buf[32];
  int n = snprintf(buf, sizeof buf, "%d", pid);
  if (fchmod(fd, 0644) < 0 || write(fd, buf, (size_t)n) != n ||
      rename(tmp, path) < 0) {
    int e = errno;
    unlink(tmp);
    return coil_error_sys(err, e, "--pid-file: write %s", path);
  }
  return 0;
}
