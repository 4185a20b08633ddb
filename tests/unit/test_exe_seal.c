/* exe_seal_ensure: a binary that is not protected re-executes itself from a
 * detached read-only bind mount of itself, or, where no such mount can be
 * made, from a sealed memfd copy; only the running binary decides, and the
 * caller's environment can neither skip the re-exec nor choose the origin it
 * reports. */
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exe_seal.h"
#include "tap.h"

#define REAL_ENV "TEST_EXE_SEAL_REAL"
/* Set in a child that re-executes inside a user namespace; the outcome
 * travels to the TAP-printing process in USERNS_RESULT_ENV. */
#define USERNS_ENV "TEST_EXE_SEAL_USERNS"
#define USERNS_RESULT_ENV "TEST_EXE_SEAL_USERNS_RESULT"
#define WANT_SEALS (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

static bool sealed_memfd(int fd) {
  int seals = fcntl(fd, F_GET_SEALS);
  struct stat sb;
  return seals >= 0 && (seals & WANT_SEALS) == WANT_SEALS &&
         fstat(fd, &sb) == 0 && (sb.st_mode & 0222) == 0;
}

static bool in_mountinfo(unsigned long long id) {
  FILE *f = fopen("/proc/self/mountinfo", "re");
  char line[4096];
  bool found = false;
  while (f && !found && fgets(line, sizeof line, f))
    found = strtoull(line, NULL, 10) == id;
  if (f)
    fclose(f);
  return found;
}

/* Read-only, and on a mount this process's namespace does not hold. */
static bool detached_readonly(int fd) {
  struct statvfs sv;
  struct statx sx;
  return fstatvfs(fd, &sv) == 0 && (sv.f_flag & ST_RDONLY) &&
         statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) == 0 &&
         (sx.stx_mask & STATX_MNT_ID) && !in_mountinfo(sx.stx_mnt_id);
}

/* A child that cannot mount (a fresh user namespace does not own our mount
 * namespace) re-executes too; "memfd" when it then runs from a sealed
 * copy. */
static const char *userns_child(char **argv) {
  pid_t pid = fork();
  if (pid == 0) {
    struct coil_error err = {0};
    if (unshare(CLONE_NEWUSER) < 0 || setenv(USERNS_ENV, "1", 1) < 0)
      _exit(3);
    exe_seal_ensure(argv, &err);
    _exit(4);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0)
    return "fork failed";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return "memfd";
  return WIFEXITED(status) && WEXITSTATUS(status) == 1 ? "not a sealed memfd"
                                                       : "no re-exec";
}

int main(int argc, char **argv) {
  (void)argc;
  struct coil_error err = {0};
  if (getenv(USERNS_ENV)) {
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    bool ok_ = exe_seal_ensure(argv, &err) == 0 && fd >= 0 && sealed_memfd(fd);
    _exit(ok_ ? 0 : 1);
  }
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
    setenv(USERNS_RESULT_ENV, userns_child(argv), 1);
    exe_seal_ensure(argv, &err);
    ok(0, "exe_seal_ensure re-executed the test: %s", err.msg);
    return tap_done();
  }

  ok(exe_seal_ensure(argv, &err) == 0, "in the re-executed test it returns: %s",
     err.msg);
  int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  struct stat self, orig;
  bool same = fd >= 0 && fstat(fd, &self) == 0 && stat(real, &orig) == 0 &&
              self.st_dev == orig.st_dev && self.st_ino == orig.st_ino;
  /* Host root may mount: the binary itself, not a copy, on a read-only
   * mount that no namespace holds. */
  ok(same && detached_readonly(fd),
     "/proc/self/exe is the binary on a detached read-only mount");
  ok(open("/proc/self/exe", O_WRONLY | O_CLOEXEC) < 0,
     "/proc/self/exe cannot be opened for writing");
  is_str(getenv(USERNS_RESULT_ENV), "memfd",
         "where it cannot mount, it runs from a sealed memfd copy");
  is_str(exe_seal_origin(), real,
         "the origin is the path it was started from, not the planted one");
  ok(getenv("COIL_EXE_ORIGIN") == NULL, "the variable is not passed on");
  if (fd >= 0)
    close(fd);
  return tap_done();
}
