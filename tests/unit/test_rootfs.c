/* rootfs against the real kernel. Each scenario runs in a forked child that
 * unshares its own namespaces (a user namespace mapping 0 -> 100000, or none
 * for the real-root variant); a grandchild, pid 1 of a new pid namespace,
 * prepares the rootfs, pivots into it, finalizes it and checks the result
 * from inside. Checks travel back over a pipe as "P text" / "F text" lines.
 * The host's mount table must come out unchanged. Needs root. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <linux/magic.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rootfs.h"
#include "tap.h"

#define HOST_ID 100000 /* container uid/gid 0 in the user namespace */

/* Sized so that gcc can prove no snprintf below truncates. */
struct env {
  char dir[128];     /* the scenario's scratch directory */
  char rootfs[192];  /* dir/rootfs */
  char hostdir[192]; /* dir/hostdir, bound read-only at /data */
  char hostfile[256];
  char locked[192]; /* dir/locked: a read-only tmpfs mounted before the user
                       namespace, so its flags are locked */
  char outside[64]; /* where a naive resolver would follow "dangle" */
};

struct scenario {
  const char *name;
  bool userns, netns, locked_src;
  void (*config)(struct coil_config *cfg, const struct env *e);
  void (*before_pivot)(const struct env *e); /* optional */
  void (*inside)(const struct env *e);       /* NULL when an error is due */
  const char *error;                         /* expected message part */
  int error_errno;
};

static char scratch[] = "/tmp/coil-test-rootfs-XXXXXX";

/* ---- the grandchild's side: checks written to the result pipe ---- */

static int report_fd = -1;

__attribute__((format(printf, 2, 3))) static void check(bool pass,
                                                        const char *fmt, ...) {
  char line[1024];
  va_list ap;
  line[0] = pass ? 'P' : 'F';
  line[1] = ' ';
  va_start(ap, fmt);
  vsnprintf(line + 2, sizeof line - 3, fmt, ap);
  va_end(ap);
  for (char *p = line; *p; p++)
    if (*p == '\n')
      *p = ' ';
  strcat(line, "\n");
  if (write(report_fd, line, strlen(line)) < 0)
    _exit(99);
}

static long fs_type(const char *path) {
  struct statfs sf;
  return statfs(path, &sf) == 0 ? (long)sf.f_type : -1;
}

static long long fs_bytes(const char *path) {
  struct statfs sf;
  return statfs(path, &sf) == 0 ? (long long)sf.f_blocks * sf.f_bsize : -1;
}

static unsigned long mnt_flags(const char *path) {
  struct statvfs sv;
  return statvfs(path, &sv) == 0 ? sv.f_flag : 0;
}

/* errno of an attempt to create a file, 0 when it worked. */
static int create_errno(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return errno;
  int rc = write(fd, "x", 1) == 1 ? 0 : errno;
  close(fd);
  return rc;
}

static int open_write_errno(const char *path) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return errno;
  close(fd);
  return 0;
}

static ssize_t read_all(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  if (n >= 0)
    buf[n] = '\0';
  return n;
}

static bool is_link_to(const char *path, const char *want) {
  char buf[PATH_MAX];
  ssize_t n = readlink(path, buf, sizeof buf - 1);
  if (n < 0)
    return false;
  buf[n] = '\0';
  return strcmp(buf, want) == 0;
}

static bool is_chr(const char *path, unsigned maj, unsigned min) {
  struct stat st;
  return lstat(path, &st) == 0 && S_ISCHR(st.st_mode) &&
         st.st_rdev == makedev(maj, min);
}

static int dir_entries(const char *path) {
  DIR *d = opendir(path);
  int n = 0;
  if (!d)
    return -1;
  for (struct dirent *de; (de = readdir(d));)
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
      n++;
  closedir(d);
  return n;
}

/* Whether the topmost mount at target is in a peer group. */
static bool is_shared(const char *target) {
  char line[1024];
  bool shared = false;
  FILE *f = fopen("/proc/self/mountinfo", "re");
  if (!f)
    return false;
  while (fgets(line, sizeof line, f)) {
    char root[256], point[256];
    if (sscanf(line, "%*d %*d %*s %255s %255s", root, point) == 2 &&
        strcmp(point, target) == 0)
      shared = strstr(line, " shared:") != NULL;
  }
  fclose(f);
  return shared;
}

static void check_dev_null(void) {
  char buf[8];
  check(is_chr("/dev/null", 1, 3), "/dev/null is char device 1:3");
  int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  check(fd >= 0 && write(fd, "hello", 5) == 5 && read(fd, buf, sizeof buf) == 0,
        "/dev/null swallows writes and reads empty");
  if (fd >= 0)
    close(fd);
  fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
  check(fd >= 0 && read(fd, buf, 4) == 4 && !memcmp(buf, "\0\0\0\0", 4),
        "/dev/zero reads zeros");
  if (fd >= 0)
    close(fd);
  check(read_all("/dev/urandom", buf, sizeof buf) == sizeof buf - 1,
        "/dev/urandom reads");
  check(is_chr("/dev/full", 1, 7) && is_chr("/dev/random", 1, 8) &&
            is_chr("/dev/tty", 5, 0),
        "/dev/full, /dev/random, /dev/tty exist");
  check(is_link_to("/dev/fd", "/proc/self/fd") &&
            is_link_to("/dev/stdin", "/proc/self/fd/0") &&
            is_link_to("/dev/stdout", "/proc/self/fd/1") &&
            is_link_to("/dev/stderr", "/proc/self/fd/2"),
        "/dev/fd, stdin, stdout, stderr symlinks");
  check(is_link_to("/dev/ptmx", "pts/ptmx"), "/dev/ptmx -> pts/ptmx");
  check(fs_type("/dev/pts") == DEVPTS_SUPER_MAGIC, "/dev/pts is devpts");
  check(access("/dev/fd/0", F_OK) == 0, "/dev/fd resolves through /proc");
}

/* The checks every full scenario shares. */
static void check_inside(void) {
  char buf[64], cwd[PATH_MAX];
  struct stat st;

  check(getpid() == 1, "runs as pid 1 of its pid namespace");
  check(getcwd(cwd, sizeof cwd) && strcmp(cwd, "/") == 0, "cwd is / (got %s)",
        cwd);
  check(stat(scratch, &st) < 0 && errno == ENOENT,
        "the host's %s is out of sight: old root detached", scratch);
  check(fs_type("/proc") == PROC_SUPER_MAGIC &&
            access("/proc/self/stat", R_OK) == 0,
        "/proc is the container's procfs");

  check(fs_type("/tmp") == TMPFS_MAGIC, "/tmp is a tmpfs");
  check(fs_bytes("/tmp") == 1 << 20, "/tmp has size=1m (got %lld)",
        fs_bytes("/tmp"));
  check(create_errno("/tmp/file") == 0, "/tmp takes writes under a ro root");
  check(mkdir("/newdir", 0755) < 0 && errno == EROFS,
        "readonly root refuses mkdir /newdir");
  check(create_errno("/newfile") == EROFS, "readonly root refuses new files");

  check(read_all("/data/file.txt", buf, sizeof buf) > 0 &&
            strcmp(buf, "host data") == 0,
        "bind mount shows the host dir");
  check(open_write_errno("/data/file.txt") == EROFS,
        "ro bind refuses writes with EROFS");
  check(create_errno("/data/new") == EROFS, "ro bind refuses new files");
  check((mnt_flags("/data") & (ST_RDONLY | ST_NOSUID)) ==
            (ST_RDONLY | ST_NOSUID),
        "ro,nosuid set on the bind");
  check(read_all("/file.txt", buf, sizeof buf) > 0 &&
            strcmp(buf, "host data") == 0 &&
            open_write_errno("/file.txt") == EROFS,
        "a file bind-mounted read-only onto a created file");

  check(fs_type("/etc") == TMPFS_MAGIC && fs_bytes("/etc") == 64 << 10,
        "destination via symlink \"/../../etc\" landed on the rootfs's /etc");
  check(fs_bytes("/etc/inner") == 32 << 10,
        "a destination through that symlink lands inside too");
  check(fs_type("/deep/er/path") == TMPFS_MAGIC,
        "missing parents of a destination are created");
  check(is_shared("/deep/er/path"), "option \"shared\" made the mount shared");

  check(read_all("/secret.txt", buf, sizeof buf) == 0,
        "masked file reads empty");
  check(is_chr("/secret.txt", 1, 3) ||
            (stat("/secret.txt", &st) == 0 && st.st_rdev == makedev(1, 3)),
        "masked file is /dev/null");
  check(dir_entries("/secretdir") == 0, "masked dir is empty");
  check(create_errno("/secretdir/x") == EROFS, "masked dir is read-only");
  check(stat("/proc/timer_list", &st) == 0 && st.st_rdev == makedev(1, 3),
        "/proc/timer_list masked");
  check(access("/proc/acpi", F_OK) < 0 || dir_entries("/proc/acpi") == 0,
        "/proc/acpi masked (or absent)");
  check(create_errno("/rodir/x") == EROFS, "readonly path refuses writes");
  check(mnt_flags("/proc/sys") & ST_RDONLY, "/proc/sys is read-only");
  check_dev_null();

  check(fs_type("/sys") == SYSFS_MAGIC && (mnt_flags("/sys") & ST_RDONLY),
        "/sys is a read-only sysfs");
  check(fs_type("/sys/fs/cgroup") == SYSFS_MAGIC,
        "/sys is a fresh sysfs, not the host's tree with its submounts");
  check(stat("/dev/fuse", &st) == 0 && S_ISCHR(st.st_mode) &&
            st.st_rdev == makedev(10, 229),
        "configured device /dev/fuse 10:229");
}

static void inside_userns(const struct env *e) {
  (void)e;
  check_inside();
  check((mnt_flags("/locked") & (ST_RDONLY | ST_NOSUID)) ==
            (ST_RDONLY | ST_NOSUID),
        "nosuid on a locked ro mount kept it read-only");
}

static void inside_root(const struct env *e) {
  struct stat st;
  (void)e;
  check_inside();
  check(stat("/dev/fuse", &st) == 0 && (st.st_mode & 07777) == 0640 &&
            st.st_uid == 5 && st.st_gid == 6,
        "mknod device has fileMode 0640, uid 5, gid 6");
  check(is_shared("/"), "rootfsPropagation rshared applied to /");
}

static void inside_nonet(const struct env *e) {
  (void)e;
  check(fs_type("/sys") == SYSFS_MAGIC && (mnt_flags("/sys") & ST_RDONLY),
        "without a netns /sys falls back to the host's, read-only");
  check(create_errno("/sys/kernel/x") != 0, "fallback /sys refuses writes");
  check_dev_null();
}

static void before_pivot(const struct env *e) {
  char etc[PATH_MAX];
  snprintf(etc, sizeof etc, "%s/etc", e->rootfs);
  check(fs_type("/etc") != TMPFS_MAGIC, "the host's /etc was not mounted over");
  check(fs_type(etc) == TMPFS_MAGIC, "the rootfs's etc holds the mount");
}

static void run_container(const struct scenario *s, const struct env *e,
                          const struct coil_config *cfg) {
  struct coil_error err = {0};
  struct coil_rootfs_opts o = {.rootfs = e->rootfs, .userns = s->userns};
  const char *step = "rootfs_prepare";
  int rc = rootfs_prepare(cfg, &o, &err);
  if (rc == 0 && s->before_pivot)
    s->before_pivot(e);
  if (rc == 0) {
    step = "rootfs_pivot";
    rc = rootfs_pivot(&o, &err);
  }
  if (rc == 0) {
    step = "rootfs_finalize";
    rc = rootfs_finalize(cfg, &err);
  }
  if (s->error) {
    check(rc == -1 && strstr(err.msg, s->error) &&
              (!s->error_errno || err.err == s->error_errno),
          "fails: %s", rc ? err.msg : "(succeeded)");
    return;
  }
  check(rc == 0, "%s %s", step, rc ? err.msg : "");
  if (rc)
    return;
  s->inside(e);
}

/* ---- the middle child: namespaces ---- */

static int mount_locked_source(const struct env *e) {
  if (unshare(CLONE_NEWNS) < 0 ||
      mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
      mount("tmpfs", e->locked, "tmpfs", MS_RDONLY | MS_NOSUID,
            "mode=755,uid=100000,gid=100000") < 0)
    return -1;
  return 0;
}

static void child(const struct scenario *s, const struct env *e,
                  const struct coil_config *cfg, int up, int down) {
  int flags = CLONE_NEWNS | CLONE_NEWPID;
  char c;
  if (s->userns)
    flags |= CLONE_NEWUSER;
  if (s->netns)
    flags |= CLONE_NEWNET;
  if (s->locked_src && mount_locked_source(e) < 0) {
    check(false, "set up the locked source: %s", strerror(errno));
    _exit(1);
  }
  if (unshare(flags) < 0) {
    check(false, "unshare: %s", strerror(errno));
    _exit(1);
  }
  if (s->userns) {
    /* The parent writes the id maps; then become the mapped root. */
    if (write(up, "u", 1) != 1 || read(down, &c, 1) != 1 ||
        setgroups(0, NULL) < 0 || setresgid(0, 0, 0) < 0 ||
        setresuid(0, 0, 0) < 0) {
      check(false, "enter the user namespace: %s", strerror(errno));
      _exit(1);
    }
  }
  pid_t pid = fork();
  if (pid == 0) {
    run_container(s, e, cfg);
    _exit(0);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) {
    check(false, "fork pid 1: %s", strerror(errno));
    _exit(1);
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

static int write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = write(fd, text, strlen(text));
  close(fd);
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int write_id_maps(pid_t pid) {
  char path[64], map[64];
  snprintf(map, sizeof map, "0 %d 65536\n", HOST_ID);
  snprintf(path, sizeof path, "/proc/%d/uid_map", (int)pid);
  if (write_file(path, map) < 0)
    return -1;
  snprintf(path, sizeof path, "/proc/%d/gid_map", (int)pid);
  return write_file(path, map);
}

/* ---- the parent: scratch trees, configs, results ---- */

static int write_new(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return -1;
  ssize_t n = write(fd, text, strlen(text));
  close(fd);
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int chown_entry(const char *path, const struct stat *st, int type,
                       struct FTW *ftw) {
  (void)st;
  (void)type;
  (void)ftw;
  return lchown(path, HOST_ID, HOST_ID);
}

static int remove_entry(const char *path, const struct stat *st, int type,
                        struct FTW *ftw) {
  (void)st;
  (void)ftw;
  return type == FTW_DP ? rmdir(path) : unlink(path);
}

static int make_tree(const struct scenario *s, struct env *e) {
  char p[PATH_MAX + 32];
  snprintf(e->dir, sizeof e->dir, "%s/%s", scratch, s->name);
  snprintf(e->rootfs, sizeof e->rootfs, "%s/rootfs", e->dir);
  snprintf(e->hostdir, sizeof e->hostdir, "%s/hostdir", e->dir);
  snprintf(e->hostfile, sizeof e->hostfile, "%s/file.txt", e->hostdir);
  snprintf(e->locked, sizeof e->locked, "%s/locked", e->dir);
  snprintf(e->outside, sizeof e->outside, "/coil-test-outside-%d",
           (int)getpid());

  static const char *const dirs[] = {"",
                                     "/rootfs",
                                     "/rootfs/etc",
                                     "/rootfs/secretdir",
                                     "/rootfs/rodir",
                                     "/hostdir",
                                     "/locked"};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    snprintf(p, sizeof p, "%s%s", e->dir, dirs[i]);
    if (mkdir(p, 0755) < 0)
      return -1;
  }
  if (write_new(e->hostfile, "host data") < 0)
    return -1;
  snprintf(p, sizeof p, "%s/secret.txt", e->rootfs);
  if (write_new(p, "top secret") < 0)
    return -1;
  snprintf(p, sizeof p, "%s/secretdir/inner", e->rootfs);
  if (write_new(p, "inner secret") < 0)
    return -1;
  snprintf(p, sizeof p, "%s/escape", e->rootfs);
  if (symlink("/../../etc", p) < 0)
    return -1;
  snprintf(p, sizeof p, "%s/dangle", e->rootfs);
  char target[PATH_MAX + 8];
  snprintf(target, sizeof target, "/../..%s", e->outside);
  if (symlink(target, p) < 0)
    return -1;
  if (s->userns && nftw(e->dir, chown_entry, 16, FTW_PHYS) < 0)
    return -1;
  return 0;
}

/* Option lists outlive the function that builds a config (a compound
 * literal would not), so they are copied into a static pool. */
static struct coil_strv strv(const char *const *opts) {
  static char *pool[256];
  static size_t used;
  struct coil_strv v = {pool + used, 0};
  while (opts[v.n] && used < sizeof pool / sizeof pool[0] - 1)
    pool[used++] = (char *)opts[v.n++];
  pool[used++] = NULL;
  return v;
}

#define STRV(...) strv((const char *const[]){__VA_ARGS__, NULL})
#define MOUNT(dst, typ, src, ...)                                              \
  ((struct coil_mount){.destination = (char *)(dst),                           \
                       .type = (char *)(typ),                                  \
                       .source = (char *)(src),                                \
                       .options = STRV(__VA_ARGS__)})

static struct coil_mount mounts[16];
static struct coil_device devices[2];
/* /proc/kcore is absent on some kernels: then it shows ENOENT is ignored. */
static char *masked[] = {"/secret.txt", "/secretdir",
                         "/proc/kcore", "/proc/timer_list",
                         "/proc/acpi",  "/proc/coil-missing"};
static char *readonly[] = {"/rodir", "/proc/sys", "/coil-missing"};

static void full_config(struct coil_config *cfg, const struct env *e) {
  size_t n = 0;
  mounts[n++] = MOUNT("/proc", "proc", "proc", "nosuid", "noexec", "nodev");
  mounts[n++] = MOUNT("/dev", "tmpfs", "tmpfs", "nosuid", "strictatime",
                      "mode=755", "size=65536k");
  mounts[n++] = MOUNT("/dev/pts", "devpts", "devpts", "nosuid", "noexec",
                      "newinstance", "ptmxmode=0666", "mode=0620", "gid=5");
  mounts[n++] =
      MOUNT("/sys", "sysfs", "sysfs", "nosuid", "noexec", "nodev", "ro");
  mounts[n++] = MOUNT("/tmp", "tmpfs", "tmpfs", "nosuid", "nodev", "size=1m",
                      "mode=1777");
  mounts[n++] =
      MOUNT("/data", "bind", e->hostdir, "rbind", "ro", "nosuid", "rprivate");
  mounts[n++] = MOUNT("/file.txt", "none", e->hostfile, "bind", "ro");
  mounts[n++] = MOUNT("/escape", "tmpfs", "tmpfs", "size=64k");
  mounts[n++] = MOUNT("/escape/inner", "tmpfs", "tmpfs", "size=32k");
  mounts[n++] = MOUNT("/deep/er/path", "tmpfs", "tmpfs", "size=64k", "shared");
  if (e->locked[0] && access(e->locked, F_OK) == 0)
    mounts[n++] = MOUNT("/locked", "bind", e->locked, "bind", "nosuid");
  cfg->mounts = mounts;
  cfg->n_mounts = n;
  devices[0] = (struct coil_device){.path = "/dev/fuse",
                                    .type = "c",
                                    .major = 10,
                                    .minor = 229,
                                    .has_file_mode = true,
                                    .file_mode = 0640,
                                    .has_uid = true,
                                    .uid = 5,
                                    .has_gid = true,
                                    .gid = 6};
  cfg->lnx.devices = devices;
  cfg->lnx.n_devices = 1;
  cfg->lnx.masked_paths = (struct coil_strv){masked, 6};
  cfg->lnx.readonly_paths = (struct coil_strv){readonly, 3};
  cfg->root_readonly = true;
  cfg->has_linux = true;
}

static void full_config_shared(struct coil_config *cfg, const struct env *e) {
  full_config(cfg, e);
  cfg->lnx.rootfs_propagation = "rshared";
}

static void nonet_config(struct coil_config *cfg, const struct env *e) {
  (void)e;
  size_t n = 0;
  mounts[n++] = MOUNT("/proc", "proc", "proc", "nosuid");
  mounts[n++] = MOUNT("/dev", "tmpfs", "tmpfs", "mode=755");
  mounts[n++] =
      MOUNT("/dev/pts", "devpts", "devpts", "newinstance", "ptmxmode=0666");
  mounts[n++] = MOUNT("/sys", "sysfs", "sysfs", "nosuid", "noexec", "nodev");
  cfg->mounts = mounts;
  cfg->n_mounts = n;
}

static void locked_rw_config(struct coil_config *cfg, const struct env *e) {
  mounts[0] = MOUNT("/locked", "bind", e->locked, "bind", "rw");
  cfg->mounts = mounts;
  cfg->n_mounts = 1;
}

static void locked_noatime_config(struct coil_config *cfg,
                                  const struct env *e) {
  mounts[0] = MOUNT("/locked", "bind", e->locked, "bind", "noatime");
  cfg->mounts = mounts;
  cfg->n_mounts = 1;
}

/* e->dir holds the locked tmpfs: a plain bind would uncover what it hides. */
static void bind_locked_children_config(struct coil_config *cfg,
                                        const struct env *e) {
  mounts[0] = MOUNT("/x", "bind", e->dir, "bind");
  cfg->mounts = mounts;
  cfg->n_mounts = 1;
}

static void missing_device_config(struct coil_config *cfg,
                                  const struct env *e) {
  (void)e;
  devices[0] = (struct coil_device){
      .path = "/dev/coil-missing", .type = "c", .major = 1, .minor = 3};
  cfg->lnx.devices = devices;
  cfg->lnx.n_devices = 1;
}

static void dangling_config(struct coil_config *cfg, const struct env *e) {
  (void)e;
  mounts[0] = MOUNT("/dangle/sub", "tmpfs", "tmpfs", "size=4k");
  cfg->mounts = mounts;
  cfg->n_mounts = 1;
}

/* As runc: the dangling symlink's target is made, inside the rootfs. */
static void inside_dangling(const struct env *e) {
  char sub[PATH_MAX];
  snprintf(sub, sizeof sub, "%s/sub", e->outside);
  check(fs_type(sub) == TMPFS_MAGIC, "%s holds the mount", sub);
}

static void idmap_config(struct coil_config *cfg, const struct env *e) {
  (void)e;
  mounts[0] = MOUNT("/x", "tmpfs", "tmpfs", "size=4k", "idmap");
  cfg->mounts = mounts;
  cfg->n_mounts = 1;
}

static void bad_type_config(struct coil_config *cfg, const struct env *e) {
  (void)e;
  mounts[0] = MOUNT("/x", "coil-nofs", "none", "size=4k");
  cfg->mounts = mounts;
  cfg->n_mounts = 1;
}

static void bad_propagation_config(struct coil_config *cfg,
                                   const struct env *e) {
  (void)e;
  cfg->lnx.rootfs_propagation = "sideways";
}

/* Devices made in the rootfs itself (no tmpfs on /dev), one masked file. */
static void swapped_null_config(struct coil_config *cfg, const struct env *e) {
  (void)e;
  mounts[0] = MOUNT("/proc", "proc", "proc", "nosuid");
  cfg->mounts = mounts;
  cfg->n_mounts = 1;
  cfg->lnx.masked_paths = (struct coil_strv){masked, 1};
  cfg->has_linux = true;
}

/* What a racer sharing the rootfs does between the devices and the masking:
 * /dev/null becomes a symlink to a file it can read and write. */
static void swap_dev_null(const struct env *e) {
  char null[PATH_MAX], secret[PATH_MAX];
  snprintf(null, sizeof null, "%s/dev/null", e->rootfs);
  snprintf(secret, sizeof secret, "%s/secret.txt", e->rootfs);
  check(unlink(null) == 0 && symlink("/secret.txt", null) == 0 &&
            chmod(secret, 0666) == 0,
        "/dev/null swapped for a symlink to /secret.txt");
}

static const struct scenario scenarios[] = {
    {.name = "userns",
     .userns = true,
     .netns = true,
     .locked_src = true,
     .config = full_config,
     .before_pivot = before_pivot,
     .inside = inside_userns},
    {.name = "root",
     .config = full_config_shared,
     .before_pivot = before_pivot,
     .inside = inside_root},
    {.name = "userns-nonet",
     .userns = true,
     .config = nonet_config,
     .inside = inside_nonet},
    {.name = "locked-rw",
     .userns = true,
     .locked_src = true,
     .config = locked_rw_config,
     .error_errno = EPERM,
     .error = "set mount flags (a mount inherited from a more privileged "
              "namespace"},
    {.name = "locked-noatime",
     .userns = true,
     .locked_src = true,
     .config = locked_noatime_config,
     .error_errno = EPERM,
     .error = "mounts[0] (/locked): bind "},
    {.name = "bind-locked-children",
     .userns = true,
     .locked_src = true,
     .config = bind_locked_children_config,
     .error_errno = EINVAL,
     .error = "needs \"rbind\"): open_tree: Invalid argument"},
    {.name = "missing-device",
     .userns = true,
     .config = missing_device_config,
     .error = "linux.devices[0] (/dev/coil-missing): host device "
              "/dev/coil-missing: No such file or directory"},
    {.name = "dangling",
     .userns = true,
     .config = dangling_config,
     .inside = inside_dangling},
    {.name = "idmap",
     .userns = true,
     .config = idmap_config,
     .error = "mounts[0] (/x): id mappings apply to bind mounts only"},
    {.name = "bad-type",
     .userns = true,
     .config = bad_type_config,
     .error = "mounts[0] (/x): filesystem type \"coil-nofs\" is unknown to "
              "the kernel"},
    {.name = "swapped-dev-null",
     .config = swapped_null_config,
     .before_pivot = swap_dev_null,
     .error = "linux.maskedPaths[0] (/secret.txt): /dev/null is not the null "
              "device (char 1:3)"},
    {.name = "bad-propagation",
     .config = bad_propagation_config,
     .error = "linux.rootfsPropagation: unknown value \"sideways\""},
};

static void report_lines(const char *name, char *buf) {
  for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
    ok(line[0] == 'P', "%s: %s", name, line + 2);
}

static void run_scenario(const struct scenario *s) {
  struct env e = {0};
  struct coil_config cfg = {0};
  int res[2], up[2], down[2];
  char buf[16384];
  size_t len = 0;

  if (make_tree(s, &e) < 0) {
    ok(false, "%s: scratch tree: %s", s->name, strerror(errno));
    return;
  }
  if (!s->locked_src)
    e.locked[0] = '\0';
  s->config(&cfg, &e);
  if (pipe2(res, O_CLOEXEC) < 0 || pipe2(up, O_CLOEXEC) < 0 ||
      pipe2(down, O_CLOEXEC) < 0) {
    ok(false, "%s: pipe: %s", s->name, strerror(errno));
    return;
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(res[0]);
    close(up[0]);
    close(down[1]);
    report_fd = res[1];
    child(s, &e, &cfg, up[1], down[0]);
  }
  close(res[1]);
  close(up[1]);
  close(down[0]);
  if (s->userns) {
    char c;
    bool mapped = read(up[0], &c, 1) == 1 && write_id_maps(pid) == 0;
    ok(mapped, "%s: id maps written", s->name);
    if (write(down[1], "m", 1) != 1)
      ok(false, "%s: release the child", s->name);
  }
  for (ssize_t n; (n = read(res[0], buf + len, sizeof buf - 1 - len)) > 0;)
    len += (size_t)n;
  buf[len] = '\0';
  close(res[0]);
  close(up[0]);
  close(down[1]);
  int status;
  waitpid(pid, &status, 0);
  report_lines(s->name, buf);
  ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
     "%s: exited cleanly (status %#x)", s->name, status);
  if (strcmp(s->name, "dangling") == 0) {
    char inside[PATH_MAX * 2];
    snprintf(inside, sizeof inside, "%s%s", e.rootfs, e.outside);
    ok(access(e.outside, F_OK) < 0 && access(inside, F_OK) == 0,
       "dangling: %s created in the rootfs, not on the host", e.outside);
  }
}

static char *read_mountinfo(void) {
  FILE *f = fopen("/proc/self/mountinfo", "re");
  char *text = NULL;
  size_t cap = 0;
  if (!f)
    return NULL;
  ssize_t n = getdelim(&text, &cap, '\0', f);
  fclose(f);
  if (n < 0) {
    free(text);
    return NULL;
  }
  return text;
}

/* Every line of after is in before: the host gained no mount. */
static void check_mountinfo(const char *before, char *after) {
  int added = 0;
  for (char *line = strtok(after, "\n"); line; line = strtok(NULL, "\n"))
    if (!strstr(before, line)) {
      printf("#   new host mount: %s\n", line);
      added++;
    }
  ok(added == 0, "the host's mountinfo has no new entries");
}

int main(void) {
  if (geteuid() != 0) {
    ok(0, "runs as root (mount namespaces, mknod, pivot_root)");
    return tap_done();
  }
  char *before = read_mountinfo();
  ok(before != NULL, "read the host's mountinfo");
  if (!mkdtemp(scratch) || chmod(scratch, 0755) < 0) {
    ok(false, "mkdtemp: %s", strerror(errno));
    return tap_done();
  }
  for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
    run_scenario(&scenarios[i]);

  char *after = read_mountinfo();
  if (before && after)
    check_mountinfo(before, after);
  free(before);
  free(after);
  bool removed = nftw(scratch, remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 &&
                 access(scratch, F_OK) < 0;
  ok(removed, "scratch tree removed");
  return tap_done();
}
