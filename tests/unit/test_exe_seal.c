/* exe_seal_ensure: a binary that is not a sealed memfd re-executes itself
 * from one; only the seals decide, and the caller's environment can neither
 * skip the copy nor choose the origin it reports. */
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exe_seal.h"
#include "tap.h"

#define REAL_ENV "TEST_EXE_SEAL_REAL"
#define WANT_SEALS (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

int main(int argc, char **argv) {
  (void)argc;
  struct coil_error err = {0};
  const char *real = getenv(REAL_ENV);
  if (!real) {
    /* First run, from the build tree: remember where, and plant the
     * variable the re-exec uses, as a caller trying to steer it would. */
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0) {
      ok(0, "readlink /proc/self/exe");
      return tap_done();
    }
    path[n] = '\0';
    setenv(REAL_ENV, path, 1);
    setenv("COIL_EXE_ORIGIN", "/planted/coil", 1);
    exe_seal_ensure(argv, &err);
    ok(0, "exe_seal_ensure re-executed the test: %s", err.msg);
    return tap_done();
  }

  ok(exe_seal_ensure(argv, &err) == 0, "in the copy it returns: %s", err.msg);
  int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  int seals = fd >= 0 ? fcntl(fd, F_GET_SEALS) : -1;
  ok(seals >= 0 && (seals & WANT_SEALS) == WANT_SEALS,
     "/proc/self/exe is a sealed memfd (seals %#x)", seals);
  struct stat sb;
  ok(fd >= 0 && fstat(fd, &sb) == 0 && (sb.st_mode & 0222) == 0,
     "the copy has no write bit");
  is_str(exe_seal_origin(), real,
         "the origin is the path it was started from, not the planted one");
  ok(getenv("COIL_EXE_ORIGIN") == NULL, "the variable is not passed on");
  if (fd >= 0)
    close(fd);
  return tap_done();
}
