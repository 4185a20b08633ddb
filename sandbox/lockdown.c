#include "lockdown.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "landlock.h"

/* Stage 1: families no step of interpreter start-up, the gate or the helper
 * imports uses. EPERM rather than a kill, so a probe during parsing fails
 * visibly instead of looking like a crash. */
static const char *const stage1_denied[] = {
    /* network */
    "socket",
    "socketpair",
    "connect",
    "bind",
    "listen",
    "accept",
    "accept4",
    /* process creation and execution */
    "fork",
    "vfork",
    "clone",
    "clone3",
    "execve",
    "execveat",
    /* privilege */
    "setuid",
    "setgid",
    "setreuid",
    "setregid",
    "setresuid",
    "setresgid",
    "setfsuid",
    "setfsgid",
    "setgroups",
    "capset",
    "personality",
    /* mounts and roots */
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    /* namespaces */
    "unshare",
    "setns",
    /* ptrace and cross-process access */
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    "pidfd_open",
    "process_madvise",
    /* bpf, perf, userfaultfd */
    "bpf",
    "perf_event_open",
    "userfaultfd",
    /* keyrings */
    "add_key",
    "request_key",
    "keyctl",
    /* io_uring */
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    /* the kernel itself */
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "syslog",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "sethostname",
    "setdomainname",
    "iopl",
    "ioperm",
    "name_to_handle_at",
    "open_by_handle_at",
    "lookup_dcookie",
    "vhangup",
    "nfsservctl",
};

/* Stage 2: everything is imported by now, so the interpreter needs only a
 * few calls (test_python_strace_after_lockdown traces a handler using every
 * helper): output, exit, and what allocation, time, signals and the
 * protocol's own reads need. Everything else kills the process. */
static const char *const stage2_allowed[] = {
    "read",
    "write",
    "close",
    "lseek",
    "fstat",
    "newfstatat",
    "mmap",
    "munmap",
    "mremap",
    "brk",
    "madvise",
    "futex",
    "getrandom",
    "clock_gettime",
    "rt_sigprocmask",
    "rt_sigreturn",
    "exit",
    "exit_group",
    "getpid",
    "gettid",
    /* harmless; the sanitizer runtime's exit path of the ASan build uses it */
    "sigaltstack",
};

/* What a serve child does between lockdown stage 2, loaded while it waits
 * for its job, and the user's code: take the job (its fds), install the
 * ending signals' handlers, arm the wall clock, lower RLIMIT_DATA and load
 * the filter that closes these calls again before the user's code runs. */
static const char *const job_steps[] = {
    "recvmsg",   "dup2",      "rt_sigaction", "setitimer",
    "prlimit64", "setrlimit", "seccomp",
};

static int add_rules(scmp_filter_ctx ctx, const char *const *names, size_t n,
                     uint32_t action, const char *stage,
                     struct coil_error *err) {
  for (size_t i = 0; i < n; i++) {
    int nr = seccomp_syscall_resolve_name(names[i]);
    if (nr == __NR_SCMP_ERROR)
      continue; /* not on this architecture */
    int r = seccomp_rule_add(ctx, action, nr, 0);
    if (r < 0)
      return coil_error_sys(err, -r, "lockdown %s: seccomp rule for %s", stage,
                            names[i]);
  }
  return 0;
}

static int load(scmp_filter_ctx ctx, const char *stage,
                struct coil_error *err) {
  int r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
  if (r == 0)
    r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_SSB, 1);
  if (r == 0)
    r = seccomp_load(ctx);
  seccomp_release(ctx);
  if (r < 0)
    return coil_error_sys(err, -r, "lockdown %s: load seccomp filter", stage);
  return 0;
}

/* A binary tree of syscall numbers instead of libseccomp's default linear
 * list: the kernel runs each program once per syscall number when it loads
 * it (the action cache, under the signal lock) and a serve child loads two,
 * so the load costs about log2 rather than n comparisons per number. */
static scmp_filter_ctx filter_init(uint32_t def_action) {
  scmp_filter_ctx ctx = seccomp_init(def_action);
  if (ctx && seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2) < 0) {
    seccomp_release(ctx);
    return NULL;
  }
  return ctx;
}

static scmp_filter_ctx stage1_filter(struct coil_error *err) {
  scmp_filter_ctx ctx = filter_init(SCMP_ACT_ALLOW);
  if (!ctx) {
    coil_error_set(err, ENOMEM, "lockdown stage 1: seccomp_init");
    return NULL;
  }
  if (add_rules(ctx, stage1_denied,
                sizeof stage1_denied / sizeof stage1_denied[0],
                SCMP_ACT_ERRNO(EPERM), "stage 1", err) < 0) {
    seccomp_release(ctx);
    return NULL;
  }
  return ctx;
}

/* With job_steps, the allowlist also lets the job steps through. */
static scmp_filter_ctx stage2_filter(bool with_job_steps,
                                     struct coil_error *err) {
  scmp_filter_ctx ctx = filter_init(SCMP_ACT_KILL_PROCESS);
  if (!ctx) {
    coil_error_set(err, ENOMEM, "lockdown stage 2: seccomp_init");
    return NULL;
  }
  int nr_openat = seccomp_syscall_resolve_name("openat");
  int r = add_rules(ctx, stage2_allowed,
                    sizeof stage2_allowed / sizeof stage2_allowed[0],
                    SCMP_ACT_ALLOW, "stage 2", err);
  if (r == 0 && with_job_steps)
    r = add_rules(ctx, job_steps, sizeof job_steps / sizeof job_steps[0],
                  SCMP_ACT_ALLOW, "stage 2", err);
  /* A lazy import or codec lookup gets a clean error, not a kill. */
  if (r == 0 &&
      (r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), nr_openat, 0)) < 0)
    r = coil_error_sys(err, -r, "lockdown stage 2: seccomp rule for openat");
  /* abort() raising SIGABRT at itself: an interpreter that gives up after a
   * failed allocation then reaches the memory bound's crash watch
   * (memory_bound.h) instead of a seccomp kill. */
  const struct scmp_arg_cmp own_abort[] = {
      {.arg = 0, .op = SCMP_CMP_EQ, .datum_a = (scmp_datum_t)getpid()},
      {.arg = 2, .op = SCMP_CMP_EQ, .datum_a = SIGABRT}};
  if (r == 0 && (r = seccomp_rule_add_array(
                     ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 2, own_abort)) < 0)
    r = coil_error_sys(err, -r, "lockdown stage 2: seccomp rule for tgkill");
  if (r < 0) {
    seccomp_release(ctx);
    return NULL;
  }
  return ctx;
}

/* Everything allowed but the job steps, which kill as stage 2 would. */
static scmp_filter_ctx job_steps_filter(struct coil_error *err) {
  scmp_filter_ctx ctx = filter_init(SCMP_ACT_ALLOW);
  if (!ctx) {
    coil_error_set(err, ENOMEM, "lockdown job steps: seccomp_init");
    return NULL;
  }
  if (add_rules(ctx, job_steps, sizeof job_steps / sizeof job_steps[0],
                SCMP_ACT_KILL_PROCESS, "job steps", err) < 0) {
    seccomp_release(ctx);
    return NULL;
  }
  return ctx;
}

/* The program libseccomp would load, as load() sets it up. */
static int export(scmp_filter_ctx ctx, struct sock_fprog *prog,
                  struct coil_error *err) {
  int fd = memfd_create("coil-seccomp", MFD_CLOEXEC);
  struct stat st;
  int r = fd < 0 ? -errno : seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
  if (r == 0)
    r = seccomp_export_bpf(ctx, fd);
  if (r == 0 && (fstat(fd, &st) < 0 || st.st_size <= 0 ||
                 st.st_size % (off_t)sizeof(struct sock_filter) != 0))
    r = -EINVAL;
  if (r == 0 && !(prog->filter = malloc((size_t)st.st_size)))
    r = -ENOMEM;
  if (r == 0 && pread(fd, prog->filter, (size_t)st.st_size, 0) != st.st_size)
    r = -EIO;
  if (fd >= 0)
    close(fd);
  seccomp_release(ctx);
  if (r < 0)
    return coil_error_sys(err, -r, "lockdown: export a seccomp filter");
  prog->len = (unsigned short)(st.st_size / (off_t)sizeof(struct sock_filter));
  return 0;
}

int lockdown_compile(struct lockdown_filters *f, struct coil_error *err) {
  scmp_filter_ctx c2 = stage2_filter(true, err);
  if (!c2 || export(c2, &f->stage2_job_steps, err) < 0)
    return -1;
  scmp_filter_ctx c3 = job_steps_filter(err);
  if (!c3 || export(c3, &f->job_steps_closed, err) < 0)
    return -1;
  return 0;
}

/* A compiled program, with the flag load() asks libseccomp for
 * (SCMP_FLTATR_CTL_SSB: SECCOMP_FILTER_FLAG_SPEC_ALLOW) where the kernel
 * knows it. */
static int load_compiled(const struct sock_fprog *prog, const char *stage,
                         struct coil_error *err) {
  long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                   SECCOMP_FILTER_FLAG_SPEC_ALLOW, prog);
  if (r < 0 && errno == EINVAL)
    r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog);
  if (r < 0)
    return coil_error_sys(err, errno, "lockdown %s: load seccomp filter",
                          stage);
  return 0;
}

int lockdown_stage1(const struct lockdown_opts *o, struct coil_error *err) {
  if (o->landlock) {
    const char *paths[] = {o->readable_root};
    if (landlock_restrict_read_only(paths, 1, err) < 0)
      return -1;
  }
  if (!o->seccomp)
    return 0;
  scmp_filter_ctx ctx = stage1_filter(err);
  return ctx ? load(ctx, "stage 1", err) : -1;
}

int lockdown_stage2(const struct lockdown_opts *o, struct coil_error *err) {
  if (o->job_steps_open) {
    if (!o->seccomp)
      return 0;
    return load_compiled(&o->compiled->job_steps_closed, "job steps", err);
  }
  if (o->landlock && landlock_deny_all(err) < 0)
    return -1;
  if (!o->seccomp)
    return 0;
  scmp_filter_ctx ctx = stage2_filter(false, err);
  return ctx ? load(ctx, "stage 2", err) : -1;
}

int lockdown_stage2_before_job(struct lockdown_opts *o,
                               struct coil_error *err) {
  if (o->landlock && landlock_deny_all(err) < 0)
    return -1;
  if (o->seccomp &&
      load_compiled(&o->compiled->stage2_job_steps, "stage 2", err) < 0)
    return -1;
  o->job_steps_open = true;
  return 0;
}
