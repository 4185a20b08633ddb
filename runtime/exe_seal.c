#include "exe_seal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"

/* Linux 6.3 uapi values glibc 2.36 does not define yet. */
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
#ifndef F_SEAL_EXEC
#define F_SEAL_EXEC 0x0020
#endif

/* Carries the original path into the sealed copy; read only after the
 * copy's seals were verified, and only to find files next to the binary. */
#define ORIGIN_ENV "COIL_EXE_ORIGIN"

/* With these no byte of the copy can change and no seal can be removed:
 * F_SEAL_WRITE already covers what F_SEAL_FUTURE_WRITE would add. */
#define REQUIRED_SEALS                                                         \
  (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

static char origin[PATH_MAX];

const char *exe_seal_origin(void) { return origin[0] ? origin : NULL; }

static bool is_sealed(int fd) {
  int seals = fcntl(fd, F_GET_SEALS);
  return seals >= 0 && (seals & REQUIRED_SEALS) == REQUIRED_SEALS;
}

/* A sealed memfd holding the bytes of src; returns its fd or -1. */
static int sealed_copy(int src, struct coil_error *err) {
  struct stat sb;
  if (fstat(src, &sb) < 0)
    return coil_error_sys(err, errno, "sealed exe: fstat /proc/self/exe");
  cleanup_close int fd =
      memfd_create("coil", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
  /* Before Linux 6.3 there is no MFD_EXEC: every memfd is executable. */
  if (fd < 0 && errno == EINVAL)
    fd = memfd_create("coil", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return coil_error_sys(err, errno,
                          errno == EACCES
                              ? "sealed exe: memfd_create (executable memfds "
                                "are refused: vm.memfd_noexec is 2)"
                              : "sealed exe: memfd_create");
  for (off_t done = 0; done < sb.st_size;) {
    ssize_t n = sendfile(fd, src, NULL, (size_t)(sb.st_size - done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return coil_error_sys(err, n < 0 ? errno : EIO,
                            "sealed exe: copy /proc/self/exe into a memfd");
    done += n;
  }
  /* No write bit: a reopen through /proc/PID/exe by anyone but host root
   * fails before the seals are even asked. F_SEAL_EXEC (Linux 6.3) then
   * pins the mode; it must go in before F_SEAL_SEAL, and an older kernel's
   * EINVAL costs nothing the write seals need. */
  if (fchmod(fd, 0555) < 0)
    return coil_error_sys(err, errno, "sealed exe: fchmod");
  (void)fcntl(fd, F_ADD_SEALS, F_SEAL_EXEC);
  if (fcntl(fd, F_ADD_SEALS, REQUIRED_SEALS) < 0)
    return coil_error_sys(err, errno, "sealed exe: F_ADD_SEALS");
  return steal_fd(fd);
}

int exe_seal_ensure(char **argv, struct coil_error *err) {
  cleanup_close int self = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (self < 0)
    return coil_error_sys(err, errno, "sealed exe: open /proc/self/exe");
  if (is_sealed(self)) {
    const char *o = getenv(ORIGIN_ENV);
    if (o && strlen(o) < sizeof origin)
      strcpy(origin, o);
    unsetenv(ORIGIN_ENV);
    /* The name ps shows stays the binary's, not "memfd:coil". */
    const char *slash = strrchr(origin, '/');
    if (slash && slash[1])
      prctl(PR_SET_NAME, slash + 1);
    return 0;
  }
  ssize_t n = readlink("/proc/self/exe", origin, sizeof origin - 1);
  origin[n > 0 ? n : 0] = '\0';
  cleanup_close int copy = sealed_copy(self, err);
  if (copy < 0)
    return -1;
  /* Whatever the caller put there is replaced by the real path. */
  if (origin[0] ? setenv(ORIGIN_ENV, origin, 1) : unsetenv(ORIGIN_ENV))
    return coil_error_sys(err, errno, "sealed exe: setenv");
  fexecve(copy, argv, environ);
  int e = errno;
  unsetenv(ORIGIN_ENV);
  return coil_error_sys(err, e, "sealed exe: re-execute from the memfd");
}
