/* landlock: both stages applied for real on the running kernel, each in a
 * forked child that then tries one operation and exits with its errno. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "landlock.h"
#include "tap.h"

#define LEN(a) (sizeof(a) / sizeof((a)[0]))
#define OUTSIDE "/etc/hostname"
#define CONTENT "hello"
/* A child exits with this when it could not apply Landlock; errnos are
 * smaller. */
#define APPLY_FAILED 250

/* The scratch tree the children see: dir/f (CONTENT) and dir/d/. */
static struct {
  char dir[64], file[96], sub[96], created[96], renamed[96];
  int listener;
  in_port_t port;
} sc;

enum { NONE = 0, STAGE1 = 1, STAGE2 = 2 };

/* ---- operations: 0 on success, else the errno ---------------------------- */

static int errno_or(int rc) { return rc < 0 ? errno : 0; }

static int close_ok(int fd) { return fd < 0 ? errno : (close(fd), 0); }

static int op_read_file(void) {
  char buf[16] = "";
  int fd = open(sc.file, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  return n == (ssize_t)strlen(CONTENT) && strcmp(buf, CONTENT) == 0 ? 0 : EIO;
}

/* Succeeds only if the listing shows both entries. */
static int op_list_dir(void) {
  DIR *d = opendir(sc.dir);
  if (!d)
    return errno;
  int seen = 0;
  for (struct dirent *e; (e = readdir(d));)
    seen += strcmp(e->d_name, "f") == 0 || strcmp(e->d_name, "d") == 0;
  closedir(d);
  return seen == 2 ? 0 : EIO;
}

static int op_write_file(void) {
  return close_ok(open(sc.file, O_WRONLY | O_CLOEXEC));
}

static int op_truncate(void) { return errno_or(truncate(sc.file, 0)); }

static int op_create(void) {
  return close_ok(
      open(sc.created, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
}

static int op_mkdir(void) {
  char path[128];
  snprintf(path, sizeof path, "%s/x", sc.sub);
  return errno_or(mkdir(path, 0700));
}

static int op_unlink(void) { return errno_or(unlink(sc.file)); }

static int op_rename(void) { return errno_or(rename(sc.file, sc.renamed)); }

static int op_read_outside(void) {
  return close_ok(open(OUTSIDE, O_RDONLY | O_CLOEXEC));
}

static int op_connect(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return errno;
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = sc.port,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int rc = errno_or(connect(fd, (struct sockaddr *)&a, sizeof a));
  close(fd);
  return rc;
}

static int op_kill_parent(void) { return errno_or(kill(getppid(), 0)); }

/* ---- children ------------------------------------------------------------ */

/* Applies the stages with the rule on path; prints why not on failure. */
static int apply(int stages, const char *path) {
  struct coil_error err = {0};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
    perror("# prctl");
    return -1;
  }
  if ((stages & STAGE1) && landlock_restrict_read_only(&path, 1, &err) < 0) {
    fprintf(stderr, "# %s\n", err.msg);
    return -1;
  }
  if ((stages & STAGE2) && landlock_deny_all(&err) < 0) {
    fprintf(stderr, "# %s\n", err.msg);
    return -1;
  }
  return 0;
}

/* The child's exit status: op's errno, APPLY_FAILED, or -1 if it died. */
static int run_op(int stages, const char *path, int (*op)(void)) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0)
    _exit(apply(stages, path) < 0 ? APPLY_FAILED : op());
  int status;
  if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
    return -1;
  return WEXITSTATUS(status);
}

/* Runs fn in a child with stderr captured: out gets what it logged, then the
 * error message it set. Returns 0 if fn succeeded, else non-zero. */
static int child_output(int (*fn)(struct coil_error *), char *out, size_t len) {
  int fds[2];
  out[0] = '\0';
  if (pipe(fds) < 0)
    return -1;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    struct coil_error err = {0};
    close(fds[0]);
    dup2(fds[1], STDERR_FILENO);
    int rc = fn(&err);
    ssize_t w = write(STDERR_FILENO, err.msg, strlen(err.msg));
    _exit(rc < 0 || w < 0);
  }
  close(fds[1]);
  size_t got = 0;
  ssize_t n;
  while (pid > 0 && got + 1 < len &&
         (n = read(fds[0], out + got, len - 1 - got)) > 0)
    got += (size_t)n;
  out[got] = '\0';
  close(fds[0]);
  int status;
  if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
    return -1;
  return WEXITSTATUS(status);
}

static int without_nnp(struct coil_error *err) {
  const char *paths[] = {sc.dir};
  return landlock_restrict_read_only(paths, 1, err);
}

static int missing_path(struct coil_error *err) {
  const char *paths[] = {sc.dir, "/nonexistent/coil-landlock"};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    return coil_error_sys(err, errno, "prctl");
  return landlock_restrict_read_only(paths, LEN(paths), err);
}

/* What a seccomp filter makes landlock_create_ruleset fail with, to play a
 * kernel without Landlock (ENOSYS, EOPNOTSUPP) or a broken one. */
static int fake_errno;

/* Both stages, twice, under that filter; they must leave the process
 * unrestricted. */
static int without_landlock(struct coil_error *err) {
  const char *paths[] = {sc.dir};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    return coil_error_sys(err, errno, "prctl");
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  int rc = ctx ? seccomp_rule_add(ctx, SCMP_ACT_ERRNO((uint32_t)fake_errno),
                                  SCMP_SYS(landlock_create_ruleset), 0)
               : -ENOMEM;
  if (rc == 0)
    rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc < 0)
    return coil_error_sys(err, -rc, "seccomp");
  for (int i = 0; i < 2; i++)
    if (landlock_restrict_read_only(paths, 1, err) < 0 ||
        landlock_deny_all(err) < 0)
      return -1;
  if (op_read_outside() != 0)
    return coil_error_set(err, 0, "restricted anyway");
  return 0;
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
    n++;
  return n;
}

/* ---- scratch tree -------------------------------------------------------- */

static int setup(void) {
  strcpy(sc.dir, "/tmp/coil-landlock-XXXXXX");
  if (!mkdtemp(sc.dir))
    return -1;
  snprintf(sc.file, sizeof sc.file, "%s/f", sc.dir);
  snprintf(sc.sub, sizeof sc.sub, "%s/d", sc.dir);
  snprintf(sc.created, sizeof sc.created, "%s/new", sc.dir);
  snprintf(sc.renamed, sizeof sc.renamed, "%s/renamed", sc.dir);
  FILE *f = fopen(sc.file, "w");
  if (!f || fputs(CONTENT, f) < 0 || fclose(f) != 0 || mkdir(sc.sub, 0700) < 0)
    return -1;

  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  sc.listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sc.listener < 0 || bind(sc.listener, (struct sockaddr *)&a, alen) < 0 ||
      listen(sc.listener, 64) < 0 ||
      getsockname(sc.listener, (struct sockaddr *)&a, &alen) < 0)
    return -1;
  sc.port = a.sin_port;
  return 0;
}

static int remove_entry(const char *path, const struct stat *st, int type,
                        struct FTW *ftw) {
  (void)st, (void)type, (void)ftw;
  return remove(path);
}

static void teardown(void) {
  if (sc.listener > 0)
    close(sc.listener);
  if (sc.dir[0] && nftw(sc.dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS) < 0)
    perror("# nftw");
}

/* ---- the table ----------------------------------------------------------- */

static const struct {
  const char *what;
  int stages;
  int (*op)(void);
  int want;    /* errno the op ends with, 0 for success */
  int min_abi; /* the kernel ABI that enforces it */
} cases[] = {
    /* Unrestricted first, so a later EACCES is Landlock's doing. */
    {"read the scratch file", NONE, op_read_file, 0, 0},
    {"list the scratch dir", NONE, op_list_dir, 0, 0},
    {"read " OUTSIDE, NONE, op_read_outside, 0, 0},
    {"connect to 127.0.0.1", NONE, op_connect, 0, 0},
    {"signal the parent", NONE, op_kill_parent, 0, 0},

    {"read the scratch file", STAGE1, op_read_file, 0, 1},
    {"list the scratch dir", STAGE1, op_list_dir, 0, 1},
    {"open the scratch file for writing", STAGE1, op_write_file, EACCES, 1},
    {"truncate the scratch file", STAGE1, op_truncate, EACCES, 1},
    {"create a file", STAGE1, op_create, EACCES, 1},
    {"create a subdirectory", STAGE1, op_mkdir, EACCES, 1},
    {"unlink the scratch file", STAGE1, op_unlink, EACCES, 1},
    {"rename the scratch file", STAGE1, op_rename, EACCES, 1},
    {"read " OUTSIDE, STAGE1, op_read_outside, EACCES, 1},
    {"connect to 127.0.0.1", STAGE1, op_connect, EACCES, 4},
    {"signal the parent", STAGE1, op_kill_parent, EPERM, 6},

    {"read the scratch file", STAGE1 | STAGE2, op_read_file, EACCES, 1},
    {"list the scratch dir", STAGE1 | STAGE2, op_list_dir, EACCES, 1},
    {"connect to 127.0.0.1", STAGE1 | STAGE2, op_connect, EACCES, 4},
    {"signal the parent", STAGE1 | STAGE2, op_kill_parent, EPERM, 6},
    {"read " OUTSIDE, STAGE2, op_read_outside, EACCES, 1},
};

static const char *outcome(int status) {
  if (status == 0)
    return "ok";
  if (status == APPLY_FAILED)
    return "landlock failed";
  const char *name = status > 0 ? strerrorname_np(status) : NULL;
  return name ? name : "died";
}

static const char *stage_name(int stages) {
  static const char *names[] = {"no landlock", "stage 1", "stage 2",
                                "stage 1 + 2"};
  return names[stages];
}

int main(void) {
  int abi = landlock_abi();
  ok(abi >= 1, "landlock_abi() = %d", abi);

  if (setup() < 0) {
    perror("# setup");
    teardown();
    return 1;
  }

  for (size_t i = 0; i < LEN(cases); i++) {
    /* Our kernels have ABI 7; an older one would weaken coil, so fail. */
    if (abi < cases[i].min_abi) {
      ok(0, "%s: %s needs Landlock ABI %d, the kernel has %d",
         stage_name(cases[i].stages), cases[i].what, cases[i].min_abi, abi);
      continue;
    }
    int got = run_op(cases[i].stages, sc.dir, cases[i].op);
    ok(got == cases[i].want, "%s: %s -> %s", stage_name(cases[i].stages),
       cases[i].what, outcome(cases[i].want));
    if (got != cases[i].want)
      printf("#   got %s\n", outcome(got));
  }

  /* A rule on a file grants READ_FILE alone (READ_DIR is directory-only). */
  ok(run_op(STAGE1, sc.file, op_read_file) == 0,
     "stage 1 on a file: the file reads");
  ok(run_op(STAGE1, sc.file, op_list_dir) == EACCES,
     "stage 1 on a file: its directory does not list");

  char out[4096];
  ok(child_output(without_nnp, out, sizeof out) != 0,
     "without no_new_privs: refused");
  is_str(out,
         "landlock: no_new_privs is not set; the caller must set "
         "PR_SET_NO_NEW_PRIVS before Landlock",
         "without no_new_privs: the message says so");
  ok(child_output(missing_path, out, sizeof out) != 0, "a missing path: fails");
  is_str(out, "landlock: /nonexistent/coil-landlock: No such file or directory",
         "a missing path: the message names it");

  static const int unsupported[] = {ENOSYS, EOPNOTSUPP};
  for (size_t i = 0; i < LEN(unsupported); i++) {
    fake_errno = unsupported[i];
    int rc = child_output(without_landlock, out, sizeof out);
    ok(rc == 0, "landlock failing with %s: both stages succeed, unrestricted",
       strerrorname_np(fake_errno));
    if (rc != 0)
      printf("#   %s\n", out);
    ok(count(out, "landlock: not supported by this kernel") == 1,
       "landlock failing with %s: warned once in four calls",
       strerrorname_np(fake_errno));
  }
  fake_errno = EPERM;
  ok(child_output(without_landlock, out, sizeof out) != 0,
     "landlock failing with EPERM: an error");
  is_str(out,
         "landlock: landlock_create_ruleset(VERSION): Operation not permitted",
         "landlock failing with EPERM: the message names the syscall");

  teardown();
  return tap_done();
}
