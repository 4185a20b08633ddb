#include "python_load.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "exe_seal.h"

/* COIL_PYTHON_OBJECT: the object's file name, one per build
 * (coil-python.so, coil-asan-python.so, ...), set by the Makefile. */

/* An ASan build must not report what the never-finalised interpreter holds
 * at exit (coil leaves with _exit or exit without Py_FinalizeEx): it is
 * referenced from pymalloc arenas, which LeakSanitizer does not scan. The
 * sanitizer reads this hook from the executable, not from a loaded object. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
  return "leak:libpython3.11.so\n";
}

static const struct python_api *loaded;

#define NOT_THERE (-2)

/* Opens the object at path and checks who may have changed it: loading
 * code as root from a file another user can write would hand that user
 * root. Checked on the open file, so a rename after the check changes
 * nothing. The fd; NOT_THERE when path does not exist; -1 with err. */
static int open_trusted(const char *path, struct coil_error *err) {
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT)
    return NOT_THERE;
  if (fd < 0)
    return coil_error_sys(err, errno, "open %s", path);
  struct stat sb;
  if (fstat(fd, &sb) < 0)
    return coil_error_sys(err, errno, "fstat %s", path);
  if (!S_ISREG(sb.st_mode))
    return coil_error_set(err, EINVAL, "%s is not a regular file", path);
  if (sb.st_uid != 0 && sb.st_uid != geteuid())
    return coil_error_set(err, EPERM,
                          "%s is owned by uid %u, neither root nor the "
                          "caller: refusing to load it",
                          path, (unsigned)sb.st_uid);
  if (sb.st_mode & (S_IWGRP | S_IWOTH))
    return coil_error_set(err, EPERM,
                          "%s is writable by %s (mode %04o): refusing to load "
                          "it",
                          path, sb.st_mode & S_IWOTH ? "others" : "its group",
                          (unsigned)(sb.st_mode & 07777));
  return steal_fd(fd);
}

/* The object beside the binary, else in ../lib/coil/ (path gets the one
 * found): a file that is there but fails the checks is an error, not a
 * reason to look further. */
static int find_object(char *path, size_t cap, struct coil_error *err) {
  const char *origin = exe_seal_origin();
  char dir[PATH_MAX];
  if (!origin || strlen(origin) >= sizeof dir)
    return coil_error_set(err, ENOENT,
                          "cannot tell where coil was started from, so not "
                          "where " COIL_PYTHON_OBJECT " is");
  strcpy(dir, origin);
  dirname(dir);
  char beside[PATH_MAX];
  snprintf(beside, sizeof beside, "%s/" COIL_PYTHON_OBJECT, dir);
  snprintf(path, cap, "%s", beside);
  int fd = open_trusted(path, err);
  if (fd != NOT_THERE)
    return fd;
  snprintf(path, cap, "%s/../lib/coil/" COIL_PYTHON_OBJECT, dir);
  fd = open_trusted(path, err);
  if (fd != NOT_THERE)
    return fd;
  return coil_error_set(err, ENOENT,
                        "Python support is not installed: neither %s nor %s "
                        "exists",
                        beside, path);
}

const struct python_api *python_load(struct coil_error *err) {
  if (loaded)
    return loaded;
  char path[PATH_MAX];
  cleanup_close int fd = find_object(path, sizeof path, err);
  if (fd < 0)
    return NULL;
  cleanup_close int handle = exe_seal_handle(fd, COIL_PYTHON_OBJECT, err);
  if (handle < 0) {
    coil_error_prefix(err, "%s", path);
    return NULL;
  }
  char at[64];
  snprintf(at, sizeof at, "/proc/self/fd/%d", handle);
  /* RTLD_GLOBAL: the stdlib's extension modules take libpython's symbols
   * from the global scope. RTLD_NOW: a missing symbol fails here, named. */
  void *h = dlopen(at, RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    coil_error_set(err, ENOEXEC, "load %s: %s", path, dlerror());
    return NULL;
  }
  const struct python_api *(*entry)(void) =
      (const struct python_api *(*)(void))dlsym(h, PYTHON_API_SYMBOL);
  const struct python_api *api = entry ? entry() : NULL;
  if (!api || api->size != sizeof *api || strcmp(api->version, COIL_VERSION)) {
    coil_error_set(err, ENOEXEC,
                   "%s is not the Python support of this coil (%s): "
                   "reinstall it with coil",
                   path, COIL_VERSION);
    return NULL;
  }
  loaded = api;
  return api;
}
