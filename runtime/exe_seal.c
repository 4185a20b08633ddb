#include "exe_seal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "mountfd.h"

/* Linux 6.3 uapi values glibc 2.36 does not define yet. */
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
#ifndef F_SEAL_EXEC
#define F_SEAL_EXEC 0x0020
#endif

/* Carries the original path across the re-exec; read only after the
 * running binary was verified protected, and only to find files next to
 * it. */
#define ORIGIN_ENV "COIL_EXE_ORIGIN"

/* With these no byte of the copy can change and no seal can be removed:
 * F_SEAL_WRITE already covers what F_SEAL_FUTURE_WRITE would add. */
#define REQUIRED_SEALS                                                         \
  (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

static char origin[PATH_MAX];
/* exe_seal_ensure found this process protected: its own path is a handle's,
 * and only what the unprotected coil passed on names the origin. */
static bool protected_run;

const char *exe_seal_origin(void) {
  if (!origin[0] && !protected_run) {
    ssize_t n = readlink("/proc/self/exe", origin, sizeof origin - 1);
    origin[n > 0 ? n : 0] = '\0';
  }
  return origin[0] ? origin : NULL;
}

static bool is_sealed(int fd) {
  int seals = fcntl(fd, F_GET_SEALS);
  return seals >= 0 && (seals & REQUIRED_SEALS) == REQUIRED_SEALS;
}

/* Whether the mount with this id is one of this process's mount namespace;
 * when that cannot be read, it counts as one (the safe answer). */
static bool mount_in_namespace(uint64_t id) {
  cleanup_fclose FILE *f = fopen("/proc/self/mountinfo", "re");
  if (!f)
    return true;
  cleanup_free char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    uint64_t mid;
    if (sscanf(line, "%" SCNu64, &mid) == 1 && mid == id)
      return true;
  }
  return false;
}

/* A read-only mount that no mount namespace holds: nobody can make it
 * writable again, as mount_setattr, a remount and open_tree all refuse a
 * mount outside the caller's namespace, and no path leads to it. A mount of
 * another namespace passes too; only a caller privileged enough to replace
 * coil outright can start it from one. */
static bool is_detached_readonly(int fd) {
  struct statvfs sv;
  struct statx sx;
  if (fstatvfs(fd, &sv) < 0 || !(sv.f_flag & ST_RDONLY))
    return false;
  if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) < 0 ||
      !(sx.stx_mask & STATX_MNT_ID))
    return false;
  return !mount_in_namespace(sx.stx_mnt_id);
}

/* A detached read-only bind mount of the binary, or -1 where the kernel
 * (before Linux 5.12) or the caller's privileges (a user namespace that
 * does not own our mount namespace) allow none. Once coil execs from it,
 * its fd closes on exec and the anonymous namespace holding the mount goes
 * with it. Checked as the re-executed coil will check it, so the two can
 * never disagree and loop. */
static int readonly_bind(int self) {
  struct coil_error ignored;
  cleanup_close int mnt = mountfd_clone(self, false, &ignored);
  if (mnt < 0 ||
      mountfd_set_flags(mnt, MS_RDONLY | MS_NOSUID | MS_NODEV, 0, &ignored) <
          0 ||
      !is_detached_readonly(mnt))
    return -1;
  return steal_fd(mnt);
}

/* A sealed memfd named name holding the bytes of src; returns its fd or -1
 * with err naming what. */
static int sealed_copy(int src, const char *name, const char *what,
                       struct coil_error *err) {
  struct stat sb;
  if (fstat(src, &sb) < 0)
    return coil_error_sys(err, errno, "%s: fstat", what);
  cleanup_close int fd =
      memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
  /* Before Linux 6.3 there is no MFD_EXEC: every memfd is executable. */
  if (fd < 0 && errno == EINVAL)
    fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return coil_error_sys(err, errno,
                          errno == EACCES
                              ? "%s: memfd_create (executable memfds are "
                                "refused: vm.memfd_noexec is 2)"
                              : "%s: memfd_create",
                          what);
  for (off_t done = 0; done < sb.st_size;) {
    ssize_t n = sendfile(fd, src, NULL, (size_t)(sb.st_size - done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return coil_error_sys(err, n < 0 ? errno : EIO, "%s: copy into a memfd",
                            what);
    done += n;
  }
  /* No write bit: a reopen through /proc/PID/exe by anyone but host root
   * fails before the seals are even asked. F_SEAL_EXEC (Linux 6.3) then
   * pins the mode; it must go in before F_SEAL_SEAL, and an older kernel's
   * EINVAL costs nothing the write seals need. */
  if (fchmod(fd, 0555) < 0)
    return coil_error_sys(err, errno, "%s: fchmod", what);
  (void)fcntl(fd, F_ADD_SEALS, F_SEAL_EXEC);
  if (fcntl(fd, F_ADD_SEALS, REQUIRED_SEALS) < 0)
    return coil_error_sys(err, errno, "%s: F_ADD_SEALS", what);
  return steal_fd(fd);
}

int exe_seal_ensure(char **argv, struct coil_error *err) {
  cleanup_close int self = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (self < 0)
    return coil_error_sys(err, errno, "sealed exe: open /proc/self/exe");
  if (is_sealed(self) || is_detached_readonly(self)) {
    protected_run = true;
    const char *o = getenv(ORIGIN_ENV);
    if (o && strlen(o) < sizeof origin)
      strcpy(origin, o);
    unsetenv(ORIGIN_ENV);
    /* The name ps shows stays the binary's, not "memfd:coil" or an fd
     * number. */
    const char *slash = strrchr(origin, '/');
    if (slash && slash[1])
      prctl(PR_SET_NAME, slash + 1);
    return 0;
  }
  ssize_t n = readlink("/proc/self/exe", origin, sizeof origin - 1);
  origin[n > 0 ? n : 0] = '\0';
  /* Whatever the caller put there is replaced by the real path. */
  if (origin[0] ? setenv(ORIGIN_ENV, origin, 1) : unsetenv(ORIGIN_ENV))
    return coil_error_sys(err, errno, "sealed exe: setenv");
  /* No copy where the kernel allows: the page cache's pages of the binary
   * are shared, and the 1.3 MB copy per start and per live init is saved. */
  cleanup_close int ro = readonly_bind(self);
  if (ro >= 0)
    execveat(ro, "", argv, environ, AT_EMPTY_PATH);
  cleanup_close int copy = sealed_copy(self, "coil", "sealed exe", err);
  if (copy >= 0) {
    fexecve(copy, argv, environ);
    coil_error_sys(err, errno, "sealed exe: re-execute from the memfd");
  }
  unsetenv(ORIGIN_ENV);
  return -1;
}

int exe_seal_handle(int fd, const char *name, struct coil_error *err) {
  int ro = readonly_bind(fd);
  if (ro >= 0)
    return ro;
  char what[128];
  snprintf(what, sizeof what, "sealed copy of %s", name);
  return sealed_copy(fd, name, what, err);
}
