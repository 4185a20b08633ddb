#include "seccomp_profile.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "deadline.h"
#include "log.h"

/* The compiled program and the seccomp(2) flags libseccomp would load it
 * with: the parent never holds a libseccomp filter. */
struct coil_seccomp_profile {
  struct sock_filter *insns;
  unsigned short n_insns;
  unsigned int flags;
};

/* How long libseccomp may take to turn linux.seccomp into BPF. Docker's
 * default profile takes milliseconds; some rule sets make libseccomp 2.5
 * loop for ever, and only a separate process can be stopped midway. */
#define COMPILE_DEADLINE_S 5

/* errnoRet travels in SECCOMP_RET_DATA, which is 16 bits wide. */
#define RET_DATA_MAX 0xffffu
#define SYSCALL_ARGS_MAX 6

struct action_name {
  const char *name;
  uint32_t action;
  bool takes_ret; /* errnoRet becomes the action's SECCOMP_RET_DATA */
};

static const struct action_name actions[] = {
    {"SCMP_ACT_KILL", SCMP_ACT_KILL, false},
    {"SCMP_ACT_KILL_THREAD", SCMP_ACT_KILL_THREAD, false},
    {"SCMP_ACT_KILL_PROCESS", SCMP_ACT_KILL_PROCESS, false},
    {"SCMP_ACT_TRAP", SCMP_ACT_TRAP, false},
    {"SCMP_ACT_ERRNO", SCMP_ACT_ERRNO(0), true},
    {"SCMP_ACT_TRACE", SCMP_ACT_TRACE(0), true},
    {"SCMP_ACT_ALLOW", SCMP_ACT_ALLOW, false},
    {"SCMP_ACT_LOG", SCMP_ACT_LOG, false},
};

/* Each flag is both a libseccomp attribute (which checks that the kernel
 * has it) and the seccomp(2) flag seccomp_load would pass for it. */
static const struct {
  const char *name;
  enum scmp_filter_attr attr;
  unsigned int flag;
} filter_flags[] = {
    {"SECCOMP_FILTER_FLAG_TSYNC", SCMP_FLTATR_CTL_TSYNC,
     SECCOMP_FILTER_FLAG_TSYNC},
    {"SECCOMP_FILTER_FLAG_LOG", SCMP_FLTATR_CTL_LOG, SECCOMP_FILTER_FLAG_LOG},
    {"SECCOMP_FILTER_FLAG_SPEC_ALLOW", SCMP_FLTATR_CTL_SSB,
     SECCOMP_FILTER_FLAG_SPEC_ALLOW},
};

static const struct {
  const char *name;
  enum scmp_compare op;
} operators[] = {
    {"SCMP_CMP_NE", SCMP_CMP_NE},
    {"SCMP_CMP_LT", SCMP_CMP_LT},
    {"SCMP_CMP_LE", SCMP_CMP_LE},
    {"SCMP_CMP_EQ", SCMP_CMP_EQ},
    {"SCMP_CMP_GE", SCMP_CMP_GE},
    {"SCMP_CMP_GT", SCMP_CMP_GT},
    {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ},
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static void release_ctxp(scmp_filter_ctx *ctx) {
  if (*ctx)
    seccomp_release(*ctx);
}
#define cleanup_seccomp_ctx __attribute__((cleanup(release_ctxp)))

/* action_field/ret_field are the JSON paths of the action and its errnoRet,
 * for the default action and for each rule alike. */
static int resolve_action(const char *name, bool has_ret, uint32_t ret,
                          const char *action_field, const char *ret_field,
                          uint32_t *out, struct coil_error *err) {
  if (!name)
    return coil_error_set(err, EINVAL, "%s: missing", action_field);
  if (strcmp(name, "SCMP_ACT_NOTIFY") == 0)
    return coil_error_set(err, ENOTSUP,
                          "%s: SCMP_ACT_NOTIFY is not supported (coil has no "
                          "seccomp notification listener)",
                          action_field);
  const struct action_name *a = NULL;
  for (size_t i = 0; i < ARRAY_LEN(actions) && !a; i++)
    if (strcmp(name, actions[i].name) == 0)
      a = &actions[i];
  if (!a)
    return coil_error_set(err, EINVAL, "%s: unknown action \"%s\"",
                          action_field, name);
  if (!a->takes_ret) {
    /* The spec requires failing rather than dropping the value silently. */
    if (has_ret)
      return coil_error_set(err, EINVAL,
                            "%s: only valid with SCMP_ACT_ERRNO or "
                            "SCMP_ACT_TRACE, not %s",
                            ret_field, name);
    *out = a->action;
    return 0;
  }
  if (has_ret && ret > RET_DATA_MAX)
    return coil_error_set(err, ERANGE, "%s: %u out of range (0-%u)", ret_field,
                          ret, RET_DATA_MAX);
  /* EPERM when unset, as the spec says and runc does (for TRACE too). */
  *out = a->action | (has_ret ? ret : EPERM);
  return 0;
}

/* OCI names are "SCMP_ARCH_" + libseccomp's own name in upper case, so
 * libseccomp decides which architectures exist; 0 for none. */
static uint32_t arch_token(const char *name) {
  static const char prefix[] = "SCMP_ARCH_";
  char lower[32];
  if (strncmp(name, prefix, sizeof prefix - 1) != 0)
    return 0;
  const char *suffix = name + sizeof prefix - 1;
  size_t n = strlen(suffix);
  if (n >= sizeof lower)
    return 0;
  for (size_t k = 0; k <= n; k++)
    lower[k] = (char)tolower((unsigned char)suffix[k]);
  return seccomp_arch_resolve_name(lower);
}

void seccomp_profile_each_arch(void (*fn)(const char *name, void *arg),
                               void *arg) {
  /* The runtime spec's list; libseccomp has no call that lists its own. */
  static const char *const oci[] = {
      "SCMP_ARCH_X86",      "SCMP_ARCH_X86_64",      "SCMP_ARCH_X32",
      "SCMP_ARCH_ARM",      "SCMP_ARCH_AARCH64",     "SCMP_ARCH_MIPS",
      "SCMP_ARCH_MIPS64",   "SCMP_ARCH_MIPS64N32",   "SCMP_ARCH_MIPSEL",
      "SCMP_ARCH_MIPSEL64", "SCMP_ARCH_MIPSEL64N32", "SCMP_ARCH_PPC",
      "SCMP_ARCH_PPC64",    "SCMP_ARCH_PPC64LE",     "SCMP_ARCH_S390",
      "SCMP_ARCH_S390X",    "SCMP_ARCH_PARISC",      "SCMP_ARCH_PARISC64",
      "SCMP_ARCH_RISCV64",  "SCMP_ARCH_LOONGARCH64", "SCMP_ARCH_M68K",
      "SCMP_ARCH_SH",       "SCMP_ARCH_SHEB",
  };
  for (size_t i = 0; i < ARRAY_LEN(oci); i++)
    if (arch_token(oci[i]))
      fn(oci[i], arg);
}

void seccomp_profile_each_flag(void (*fn)(const char *name, void *arg),
                               void *arg) {
  for (size_t i = 0; i < ARRAY_LEN(filter_flags); i++)
    fn(filter_flags[i].name, arg);
}

static int add_arch(scmp_filter_ctx ctx, const char *name, size_t i,
                    struct coil_error *err) {
  uint32_t token = arch_token(name);
  if (token == 0)
    return coil_error_set(err, EINVAL,
                          "linux.seccomp.architectures[%zu]: unknown "
                          "architecture \"%s\"",
                          i, name);
  int rc = seccomp_arch_add(ctx, token);
  if (rc == -EDOM)
    return coil_error_set(err, EDOM,
                          "linux.seccomp.architectures[%zu]: %s has the other "
                          "byte order than the native architecture; one "
                          "filter cannot hold both",
                          i, name);
  /* The native architecture is in every new filter already. */
  if (rc < 0 && rc != -EEXIST)
    return coil_error_sys(err, -rc, "linux.seccomp.architectures[%zu]: %s", i,
                          name);
  return 0;
}

static int set_flag(scmp_filter_ctx ctx, const char *name, size_t i,
                    struct coil_error *err) {
  for (size_t k = 0; k < ARRAY_LEN(filter_flags); k++) {
    if (strcmp(name, filter_flags[k].name) != 0)
      continue;
    int rc = seccomp_attr_set(ctx, filter_flags[k].attr, 1);
    if (rc < 0)
      return coil_error_sys(err, -rc, "linux.seccomp.flags[%zu]: %s", i, name);
    return 0;
  }
  return coil_error_set(
      err, EINVAL, "linux.seccomp.flags[%zu]: unknown flag \"%s\"", i, name);
}

/* Fills cmp[] from the rule's args; *repeated says whether some argument
 * index occurs twice. */
static int parse_args(const struct coil_seccomp_syscall *s, const char *field,
                      struct scmp_arg_cmp *cmp, bool *repeated,
                      struct coil_error *err) {
  unsigned seen = 0;
  *repeated = false;
  for (size_t j = 0; j < s->n_args; j++) {
    const struct coil_seccomp_arg *a = &s->args[j];
    if (a->index >= SYSCALL_ARGS_MAX)
      return coil_error_set(err, EINVAL,
                            "%s.args[%zu].index: %u out of range (0-%d)", field,
                            j, a->index, SYSCALL_ARGS_MAX - 1);
    size_t k = 0;
    while (k < ARRAY_LEN(operators) &&
           !(a->op && strcmp(a->op, operators[k].name) == 0))
      k++;
    if (k == ARRAY_LEN(operators))
      return coil_error_set(err, EINVAL,
                            "%s.args[%zu].op: unknown operator \"%s\"", field,
                            j, a->op ? a->op : "");
    /* For MASKED_EQ libseccomp reads datum_a as the mask and datum_b as
     * the value, exactly the spec's value/valueTwo; other operators ignore
     * datum_b. */
    cmp[j] = (struct scmp_arg_cmp){.arg = a->index,
                                   .op = operators[k].op,
                                   .datum_a = a->value,
                                   .datum_b = a->value_two};
    if (seen & (1u << a->index))
      *repeated = true;
    seen |= 1u << a->index;
  }
  return 0;
}

/* libseccomp 2.5 refuses two comparisons of one argument in a rule
 * (EINVAL); runc then adds each comparison as a rule of its own, which ORs
 * them, and profiles written for runc rely on that. */
static int add_rule(scmp_filter_ctx ctx, uint32_t action, int nr,
                    const struct scmp_arg_cmp *cmp, size_t n, bool repeated) {
  if (!repeated)
    return seccomp_rule_add_array(ctx, action, nr, (unsigned)n, cmp);
  for (size_t j = 0; j < n; j++) {
    int rc = seccomp_rule_add_array(ctx, action, nr, 1, &cmp[j]);
    if (rc < 0)
      return rc;
  }
  return 0;
}

static int add_syscalls(scmp_filter_ctx ctx,
                        const struct coil_seccomp_syscall *s, size_t i,
                        uint32_t default_action, struct coil_error *err) {
  char field[64], action_field[80], ret_field[80];
  snprintf(field, sizeof field, "linux.seccomp.syscalls[%zu]", i);
  snprintf(action_field, sizeof action_field, "%s.action", field);
  snprintf(ret_field, sizeof ret_field, "%s.errnoRet", field);

  uint32_t action;
  if (resolve_action(s->action, s->has_errno_ret, s->errno_ret, action_field,
                     ret_field, &action, err) < 0)
    return -1;
  if (s->names.n == 0)
    return coil_error_set(err, EINVAL, "%s.names: empty", field);
  cleanup_free struct scmp_arg_cmp *cmp = NULL;
  if (s->n_args > 0) {
    cmp = calloc(s->n_args, sizeof *cmp);
    if (!cmp)
      return coil_error_sys(err, ENOMEM, "%s.args", field);
  }
  bool repeated;
  if (parse_args(s, field, cmp, &repeated, err) < 0)
    return -1;
  /* libseccomp rejects a rule that repeats the default action (EACCES);
   * it would change nothing anyway. */
  if (action == default_action)
    return 0;

  for (size_t k = 0; k < s->names.n; k++) {
    const char *name = s->names.v[k];
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) {
      /* Likely newer than this libseccomp; runc skips them too. */
      log_warn("%s.names[%zu]: unknown syscall \"%s\", ignored", field, k,
               name);
      continue;
    }
    int rc = add_rule(ctx, action, nr, cmp, s->n_args, repeated);
    if (rc < 0)
      return coil_error_sys(err, -rc, "%s: adding the rule for \"%s\"", field,
                            name);
  }
  return 0;
}

/* The filter as libseccomp holds it: everything checked, nothing
 * generated yet. */
static int build_ctx(const struct coil_seccomp *cfg, scmp_filter_ctx *out,
                     struct coil_error *err) {
  uint32_t default_action;
  if (resolve_action(cfg->default_action, cfg->has_default_errno_ret,
                     cfg->default_errno_ret, "linux.seccomp.defaultAction",
                     "linux.seccomp.defaultErrnoRet", &default_action, err) < 0)
    return -1;
  cleanup_seccomp_ctx scmp_filter_ctx ctx = seccomp_init(default_action);
  if (!ctx)
    return coil_error_set(err, EINVAL,
                          "linux.seccomp.defaultAction: libseccomp cannot "
                          "create a filter with %s",
                          cfg->default_action);

  /* coil sets no_new_privs itself when process.noNewPrivileges asks. */
  int rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
  if (rc < 0)
    return coil_error_sys(err, -rc, "linux.seccomp: setting filter attributes");

  for (size_t i = 0; i < cfg->architectures.n; i++)
    if (add_arch(ctx, cfg->architectures.v[i], i, err) < 0)
      return -1;
  for (size_t i = 0; i < cfg->flags.n; i++)
    if (set_flag(ctx, cfg->flags.v[i], i, err) < 0)
      return -1;
  for (size_t i = 0; i < cfg->n_syscalls; i++)
    if (add_syscalls(ctx, &cfg->syscalls[i], i, default_action, err) < 0)
      return -1;
  *out = steal_ptr(ctx);
  return 0;
}

int seccomp_profile_export_unbounded(const struct coil_seccomp *cfg, int fd,
                                     struct coil_error *err) {
  cleanup_seccomp_ctx scmp_filter_ctx ctx = NULL;
  if (build_ctx(cfg, &ctx, err) < 0)
    return -1;
  int rc = seccomp_export_bpf(ctx, fd);
  if (rc < 0)
    return coil_error_sys(err, -rc, "linux.seccomp: exporting the filter");
  return 0;
}

/* The compiling child: the program on fd and exit 0, or the error's
 * message on fd and its errno as the exit status. */
static _Noreturn void compile_child(const struct coil_seccomp *cfg, int fd,
                                    pid_t parent) {
  /* Nobody would stop a looping libseccomp once coil is gone. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
    _exit(EPIPE);
  struct coil_error err = {0};
  if (seccomp_profile_export_unbounded(cfg, fd, &err) == 0)
    _exit(0);
  size_t len = strlen(err.msg);
  ssize_t w = write(fd, err.msg, len);
  (void)w;
  _exit(err.err > 0 && err.err < 126 ? err.err : EINVAL);
}

/* A BPF program has at most BPF_MAXINSNS instructions; more than this is
 * no program the kernel takes, nor an error message. */
#define CHILD_OUTPUT_MAX (2 * BPF_MAXINSNS * sizeof(struct sock_filter))

/* Reads the child's output until EOF; 0 at EOF, 1 when the deadline
 * passed, -1 on an error. */
static int read_until(int fd, long long deadline, char *buf, size_t *len,
                      struct coil_error *err) {
  for (;;) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n = poll(&p, 1, deadline_slice_ms(deadline, deadline_now_ms(), -1));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return coil_error_sys(err, errno, "linux.seccomp: poll");
    if (n == 0)
      return 1;
    if (*len == CHILD_OUTPUT_MAX)
      return coil_error_set(err, E2BIG,
                            "linux.seccomp: the compiled filter is larger than "
                            "the kernel takes (%d instructions)",
                            BPF_MAXINSNS);
    ssize_t r = read(fd, buf + *len, CHILD_OUTPUT_MAX - *len);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return coil_error_sys(err, errno, "linux.seccomp: reading the filter");
    if (r == 0)
      return 0;
    *len += (size_t)r;
  }
}

static int take_program(struct coil_seccomp_profile *p, char *buf, size_t len,
                        struct coil_error *err) {
  size_t n = len / sizeof(struct sock_filter);
  if (len % sizeof(struct sock_filter) != 0 || n == 0)
    return coil_error_set(err, EPROTO,
                          "linux.seccomp: libseccomp returned %zu bytes, not "
                          "a BPF program",
                          len);
  if (n > BPF_MAXINSNS)
    return coil_error_set(err, E2BIG,
                          "linux.seccomp: the compiled filter has %zu "
                          "instructions, the kernel takes at most %d",
                          n, BPF_MAXINSNS);
  p->insns = (struct sock_filter *)buf;
  p->n_insns = (unsigned short)n;
  return 0;
}

/* What the child's end says went wrong: its message, else its status. */
static int child_failed(int status, const char *out, size_t len,
                        struct coil_error *err) {
  if (WIFEXITED(status) && len > 0 && memchr(out, 0, len) == NULL)
    return coil_error_set(err, WEXITSTATUS(status), "%.*s", (int)len, out);
  if (WIFSIGNALED(status))
    return coil_error_set(err, EIO,
                          "linux.seccomp: compiling the filter failed "
                          "(libseccomp killed by signal %d)",
                          WTERMSIG(status));
  return coil_error_set(err, EIO,
                        "linux.seccomp: compiling the filter failed "
                        "(exit status %d)",
                        WEXITSTATUS(status));
}

int seccomp_profile_build(const struct coil_seccomp *cfg,
                          struct coil_seccomp_profile **out,
                          struct coil_error *err) {
  *out = NULL;
  unsigned int flags = 0;
  for (size_t i = 0; i < cfg->flags.n; i++)
    for (size_t k = 0; k < ARRAY_LEN(filter_flags); k++)
      if (strcmp(cfg->flags.v[i], filter_flags[k].name) == 0)
        flags |= filter_flags[k].flag;

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) < 0)
    return coil_error_sys(err, errno, "linux.seccomp: pipe");
  cleanup_close int rd = fds[0];
  cleanup_close int wr = fds[1];
  long long deadline =
      deadline_after_ms(deadline_now_ms(), COMPILE_DEADLINE_S * 1000LL);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0)
    return coil_error_sys(err, errno, "linux.seccomp: fork");
  if (pid == 0)
    compile_child(cfg, wr, parent);
  close(steal_fd(wr));

  cleanup_free char *buf = malloc(CHILD_OUTPUT_MAX);
  size_t len = 0;
  int r = buf ? read_until(rd, deadline, buf, &len, err)
              : coil_error_sys(err, ENOMEM, "linux.seccomp");
  if (r != 0)
    kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (r < 0)
    return -1;
  if (r > 0)
    return coil_error_set(err, ETIMEDOUT,
                          "linux.seccomp: compiling the filter took longer "
                          "than %d s (libseccomp)",
                          COMPILE_DEADLINE_S);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return child_failed(status, buf, len, err);

  cleanup_free struct coil_seccomp_profile *p = calloc(1, sizeof *p);
  if (!p)
    return coil_error_sys(err, ENOMEM, "linux.seccomp");
  if (take_program(p, buf, len, err) < 0)
    return -1;
  buf = NULL;
  p->flags = flags;
  *out = steal_ptr(p);
  return 0;
}

int seccomp_profile_load(const struct coil_seccomp_profile *p,
                         struct coil_error *err) {
  struct sock_fprog prog = {.len = p->n_insns, .filter = p->insns};
  long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, p->flags, &prog);
  /* With TSYNC a positive result is the thread that could not follow. */
  if (rc > 0)
    return coil_error_set(err, ESRCH,
                          "linux.seccomp: seccomp(SECCOMP_SET_MODE_FILTER): "
                          "thread %ld cannot be synchronized",
                          rc);
  if (rc < 0 && errno == EACCES)
    return coil_error_set(err, EACCES,
                          "linux.seccomp: seccomp(SECCOMP_SET_MODE_FILTER): "
                          "%s (without no_new_privs this needs CAP_SYS_ADMIN)",
                          strerror(EACCES));
  if (rc < 0)
    return coil_error_sys(err, errno,
                          "linux.seccomp: seccomp(SECCOMP_SET_MODE_FILTER)");
  return 0;
}

void seccomp_profile_free(struct coil_seccomp_profile *p) {
  if (!p)
    return;
  free(p->insns);
  free(p);
}
