#include "execpath.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* glibc's execvp searches this when PATH is unset. */
#define DEFAULT_PATH "/bin:/usr/bin"

/* 0, or the errno execve would most likely fail with. */
static int exec_errno(const char *path) {
  struct stat sb;
  if (stat(path, &sb) < 0)
    return errno;
  if (!S_ISREG(sb.st_mode))
    return EACCES;
  /* X_OK also fails on a noexec mount, as execve would. */
  if (faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) < 0)
    return errno;
  return 0;
}

/* strerror in the lower case Go (and so runc) prints, which podman and
 * others match to pick exit codes 127 and 126. */
static const char *lower_strerror(int e, char *buf, size_t cap) {
  snprintf(buf, cap, "%s", strerror(e));
  if (buf[0])
    buf[0] = (char)tolower((unsigned char)buf[0]);
  return buf;
}

/* dir/name, with a relative result taken against cwd. */
static bool join(char *out, size_t cap, const char *cwd, const char *dir,
                 size_t dir_len, const char *name) {
  int n;
  if (dir_len == 0)
    n = snprintf(out, cap, "%s/%s", cwd, name);
  else if (dir[0] == '/')
    n = snprintf(out, cap, "%.*s/%s", (int)dir_len, dir, name);
  else
    n = snprintf(out, cap, "%s/%.*s/%s", cwd, (int)dir_len, dir, name);
  return n > 0 && (size_t)n < cap;
}

static const char *path_of(const struct coil_strv *env) {
  const char *path = NULL;
  for (size_t i = 0; i < env->n; i++)
    if (strncmp(env->v[i], "PATH=", 5) == 0)
      path = env->v[i] + 5;
  return path ? path : DEFAULT_PATH;
}

int execpath_check(const struct coil_process *p, struct coil_error *err) {
  const char *name = p->args.v[0];
  const char *cwd = p->cwd ? p->cwd : "/";
  char buf[PATH_MAX], msg[128];
  if (!*name)
    return coil_error_set(err, ENOENT,
                          "process.args[0]: exec: \"\": executable file not "
                          "found in $PATH");
  if (strchr(name, '/')) {
    if (name[0] != '/' && !join(buf, sizeof buf, cwd, "", 0, name))
      return coil_error_set(err, ENAMETOOLONG, "process.args[0]: exec %s: %s",
                            name,
                            lower_strerror(ENAMETOOLONG, msg, sizeof msg));
    int e = exec_errno(name[0] == '/' ? name : buf);
    if (e)
      return coil_error_set(err, e, "process.args[0]: exec %s: %s", name,
                            lower_strerror(e, msg, sizeof msg));
    return 0;
  }
  /* As execvp: the first executable match wins; EACCES on the way is
   * reported when nothing matched. */
  bool denied = false;
  for (const char *dir = path_of(&p->env);;) {
    size_t len = strcspn(dir, ":");
    if (join(buf, sizeof buf, cwd, dir, len, name)) {
      int e = exec_errno(buf);
      if (e == 0)
        return 0;
      denied |= e == EACCES;
    }
    if (!dir[len])
      break;
    dir += len + 1;
  }
  if (denied)
    return coil_error_set(err, EACCES, "process.args[0]: exec %s: %s", name,
                          lower_strerror(EACCES, msg, sizeof msg));
  return coil_error_set(err, ENOENT,
                        "process.args[0]: exec: \"%s\": executable file not "
                        "found in $PATH",
                        name);
}
