#include "passwd.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "readall.h"

/* Enough for any real passwd file; a bigger one is read this far. */
#define PASSWD_MAX (4 << 20)

/* Field i (0-based) of a ':'-separated line ending at end, as [*s, *e). */
static bool field(const char *line, const char *end, int i, const char **s,
                  const char **e) {
  const char *p = line;
  for (; i > 0; i--) {
    p = memchr(p, ':', (size_t)(end - p));
    if (!p)
      return false;
    p++;
  }
  const char *q = memchr(p, ':', (size_t)(end - p));
  *s = p;
  *e = q ? q : end;
  return true;
}

static bool uid_is(const char *s, const char *e, uid_t uid) {
  if (s == e || e - s > 10)
    return false;
  unsigned long long v = 0;
  for (const char *p = s; p < e; p++) {
    if (*p < '0' || *p > '9')
      return false;
    v = v * 10 + (unsigned)(*p - '0');
  }
  return v == uid;
}

bool passwd_home_in(const char *text, uid_t uid, char *out, size_t cap) {
  for (const char *line = text; *line;) {
    const char *end = strchr(line, '\n');
    if (!end)
      end = line + strlen(line);
    const char *s, *e, *hs, *he;
    if (field(line, end, 2, &s, &e) && uid_is(s, e, uid) &&
        field(line, end, 5, &hs, &he)) {
      size_t n = (size_t)(he - hs);
      if (n == 0 || n >= cap)
        return false;
      memcpy(out, hs, n);
      out[n] = '\0';
      return true;
    }
    line = *end ? end + 1 : end;
  }
  return false;
}

void passwd_home(uid_t uid, char *out, size_t cap) {
  snprintf(out, cap, "/");
  cleanup_close int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0)
    return;
  /* Symlinks stay inside the root and magic links (/proc/PID/root) are
   * refused; O_NONBLOCK so a FIFO planted there cannot hang init. */
  struct open_how how = {
      .flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC,
      .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
  };
  cleanup_close int fd =
      (int)syscall(SYS_openat2, root, "etc/passwd", &how, sizeof how);
  struct stat sb;
  if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode))
    return;
  cleanup_free char *text = NULL;
  size_t len;
  struct coil_error ignored;
  if (read_all(fd, PASSWD_MAX, true, &text, &len, &ignored) < 0)
    return;
  passwd_home_in(text, uid, out, cap);
}
