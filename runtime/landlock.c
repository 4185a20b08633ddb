#include "landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"

/* Debian 12's <linux/landlock.h> (Linux 6.1) stops at ABI 2, while the
 * kernels coil runs on know more; the values are fixed kernel ABI. */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#endif
#ifndef LANDLOCK_ACCESS_NET_CONNECT_TCP
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

/* The kernel's struct landlock_ruleset_attr as of ABI 6, under our own name
 * because an old header declares only its first field. An older kernel
 * accepts the larger struct as long as the fields it does not know are zero,
 * and best_effort_attr leaves them zero. */
struct ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

/* What each ABI version added. ABI 7 added only audit-logging flags, so it
 * needs no row. */
static const struct {
  int abi;
  uint64_t fs, net, scoped;
} abi_rights[] = {
    {1,
     LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
         LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |
         LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
         LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |
         LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |
         LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
         LANDLOCK_ACCESS_FS_MAKE_SYM,
     0, 0},
    {2, LANDLOCK_ACCESS_FS_REFER, 0, 0},
    {3, LANDLOCK_ACCESS_FS_TRUNCATE, 0, 0},
    {4, 0, LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP, 0},
    {5, LANDLOCK_ACCESS_FS_IOCTL_DEV, 0, 0},
    {6, 0, 0, LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL},
};

/* Stage 1 grants reading only. No EXECUTE: the Python sandbox never execs,
 * and loading extension modules needs only READ_FILE because Landlock's
 * EXECUTE governs execve, not mmap(PROT_EXEC). READ_DIR is a directory-only
 * right, which the kernel refuses in a rule on a file. */
#define READ_FILE_RIGHTS LANDLOCK_ACCESS_FS_READ_FILE
#define READ_DIR_RIGHTS                                                        \
  (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

/* The ABI version, or -1 with errno set. */
static long probe_abi(void) {
  return syscall(SYS_landlock_create_ruleset, NULL, 0,
                 LANDLOCK_CREATE_RULESET_VERSION);
}

int landlock_abi(void) {
  long abi = probe_abi();
  return abi < 0 ? 0 : (int)abi;
}

/* Every right the running kernel knows is handled, so none stays allowed by
 * default; rights of later ABIs than this table are left to the other
 * layers. */
static struct ruleset_attr best_effort_attr(int abi) {
  struct ruleset_attr attr = {0};
  for (size_t i = 0; i < sizeof abi_rights / sizeof abi_rights[0]; i++) {
    if (abi_rights[i].abi > abi)
      break;
    attr.handled_access_fs |= abi_rights[i].fs;
    attr.handled_access_net |= abi_rights[i].net;
    attr.scoped |= abi_rights[i].scoped;
  }
  return attr;
}

/* Without no_new_privs, restrict_self needs CAP_SYS_ADMIN, which coil's init
 * may still hold; the check keeps the privilege-drop order honest instead of
 * letting the capability paper over a missing step. */
static int check_no_new_privs(struct coil_error *err) {
  int nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
  if (nnp < 0)
    return coil_error_sys(err, errno, "landlock: prctl(PR_GET_NO_NEW_PRIVS)");
  if (nnp == 0)
    return coil_error_set(err, EPERM,
                          "landlock: no_new_privs is not set; the caller must "
                          "set PR_SET_NO_NEW_PRIVS before Landlock");
  return 0;
}

/* Stores a new ruleset fd in *fd and returns 0; leaves *fd at -1 and returns
 * 0 when the kernel has no Landlock (warning once per process); -1 on
 * failure. */
static int create_ruleset(int *fd, struct coil_error *err) {
  static bool warned;
  *fd = -1;
  if (check_no_new_privs(err) < 0)
    return -1;
  long abi = probe_abi();
  if (abi < 0) {
    /* ENOSYS: not built in; EOPNOTSUPP: built in but not enabled at boot. */
    if (errno != ENOSYS && errno != EOPNOTSUPP)
      return coil_error_sys(err, errno,
                            "landlock: landlock_create_ruleset(VERSION)");
    if (!warned)
      log_warn("landlock: not supported by this kernel (build with "
               "CONFIG_SECURITY_LANDLOCK=y and lsm=landlock); continuing "
               "with the other layers");
    warned = true;
    return 0;
  }
  struct ruleset_attr attr = best_effort_attr((int)abi);
  int rfd = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
  if (rfd < 0)
    return coil_error_sys(err, errno, "landlock: landlock_create_ruleset");
  *fd = rfd;
  return 0;
}

static int allow_read_beneath(int ruleset, const char *path,
                              struct coil_error *err) {
  cleanup_close int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0)
    return coil_error_sys(err, errno, "landlock: %s", path);
  struct stat st;
  if (fstat(fd, &st) < 0)
    return coil_error_sys(err, errno, "landlock: fstat %s", path);
  struct landlock_path_beneath_attr rule = {
      .allowed_access =
          S_ISDIR(st.st_mode) ? READ_DIR_RIGHTS : READ_FILE_RIGHTS,
      .parent_fd = fd,
  };
  if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule,
              0) < 0)
    return coil_error_sys(err, errno, "landlock: landlock_add_rule %s", path);
  return 0;
}

static int restrict_self(int ruleset, struct coil_error *err) {
  if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
    return coil_error_sys(err, errno, "landlock: landlock_restrict_self");
  return 0;
}

int landlock_restrict_read_only(const char *const *paths, size_t n,
                                struct coil_error *err) {
  cleanup_close int ruleset = -1;
  if (create_ruleset(&ruleset, err) < 0)
    return -1;
  if (ruleset < 0)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (allow_read_beneath(ruleset, paths[i], err) < 0)
      return -1;
  return restrict_self(ruleset, err);
}

int landlock_deny_all(struct coil_error *err) {
  cleanup_close int ruleset = -1;
  if (create_ruleset(&ruleset, err) < 0)
    return -1;
  if (ruleset < 0)
    return 0;
  return restrict_self(ruleset, err);
}
