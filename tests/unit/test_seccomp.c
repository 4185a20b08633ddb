/* seccomp_profile: every validation error with its field, then the filters
 * against the real kernel in forked children (the test process itself stays
 * unfiltered). Runs as root. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "seccomp_profile.h"
#include "tap.h"
#include "testutil.h"

#define SYSCALLS(...)                                                          \
  .syscalls = (struct coil_seccomp_syscall[]){__VA_ARGS__},                    \
  .n_syscalls = sizeof((struct coil_seccomp_syscall[]){__VA_ARGS__}) /         \
                sizeof(struct coil_seccomp_syscall)
#define ARGS(...)                                                              \
  .args = (struct coil_seccomp_arg[]){__VA_ARGS__},                            \
  .n_args = sizeof((struct coil_seccomp_arg[]){__VA_ARGS__}) /                 \
            sizeof(struct coil_seccomp_arg)

/* A pid that cannot exist (above pid_max's ceiling of 2^22). */
#define NO_PID 0x7fffff38UL

/* ---- helpers ---------------------------------------------------------- */

static struct coil_seccomp_profile *build_ok(const struct coil_seccomp *cfg,
                                             const char *what) {
  struct coil_seccomp_profile *p = NULL;
  struct coil_error err = {0};
  int rc = seccomp_profile_build(cfg, &p, &err);
  ok(rc == 0 && p, "builds: %s", what);
  if (rc != 0)
    printf("#   error: %s\n", err.msg);
  return p;
}

/* ---- validation errors ------------------------------------------------ */

static const struct {
  const char *what;
  struct coil_seccomp cfg;
  const char *want;
} bad_profiles[] = {
    {"unknown default action",
     {.default_action = "SCMP_ACT_FOO"},
     "linux.seccomp.defaultAction: unknown action \"SCMP_ACT_FOO\""},
    {"missing default action",
     {.default_action = NULL},
     "linux.seccomp.defaultAction: missing"},
    {"notify as default action",
     {.default_action = "SCMP_ACT_NOTIFY"},
     "linux.seccomp.defaultAction: SCMP_ACT_NOTIFY is not supported (coil "
     "has no seccomp notification listener)"},
    {"action names are case-sensitive",
     {.default_action = "scmp_act_allow"},
     "linux.seccomp.defaultAction: unknown action \"scmp_act_allow\""},
    {"defaultErrnoRet with ALLOW",
     {.default_action = "SCMP_ACT_ALLOW",
      .has_default_errno_ret = true,
      .default_errno_ret = 1},
     "linux.seccomp.defaultErrnoRet: only valid with SCMP_ACT_ERRNO or "
     "SCMP_ACT_TRACE, not SCMP_ACT_ALLOW"},
    {"defaultErrnoRet beyond 16 bits",
     {.default_action = "SCMP_ACT_ERRNO",
      .has_default_errno_ret = true,
      .default_errno_ret = 70000},
     "linux.seccomp.defaultErrnoRet: 70000 out of range (0-65535)"},
    {"unknown rule action",
     {.default_action = "SCMP_ACT_ERRNO",
      SYSCALLS({.names = STRV("read"), .action = "SCMP_ACT_ALLOW"},
               {.names = STRV("write"), .action = "SCMP_ACT_ALLOW"},
               {.names = STRV("close"), .action = "SCMP_ACT_LOG"},
               {.names = STRV("open"), .action = "SCMP_ACT_FOO"})},
     "linux.seccomp.syscalls[3].action: unknown action \"SCMP_ACT_FOO\""},
    {"notify as rule action",
     {.default_action = "SCMP_ACT_ALLOW",
      SYSCALLS({.names = STRV("read"), .action = "SCMP_ACT_KILL"},
               {.names = STRV("write"), .action = "SCMP_ACT_NOTIFY"})},
     "linux.seccomp.syscalls[1].action: SCMP_ACT_NOTIFY is not supported "
     "(coil has no seccomp notification listener)"},
    {"missing rule action",
     {.default_action = "SCMP_ACT_ALLOW", SYSCALLS({.names = STRV("read")})},
     "linux.seccomp.syscalls[0].action: missing"},
    {"errnoRet with KILL_PROCESS",
     {.default_action = "SCMP_ACT_ALLOW",
      SYSCALLS({.names = STRV("read"),
                .action = "SCMP_ACT_KILL_PROCESS",
                .has_errno_ret = true,
                .errno_ret = 1})},
     "linux.seccomp.syscalls[0].errnoRet: only valid with SCMP_ACT_ERRNO or "
     "SCMP_ACT_TRACE, not SCMP_ACT_KILL_PROCESS"},
    {"errnoRet beyond 16 bits",
     {.default_action = "SCMP_ACT_ALLOW",
      SYSCALLS({.names = STRV("read"),
                .action = "SCMP_ACT_TRACE",
                .has_errno_ret = true,
                .errno_ret = 65536})},
     "linux.seccomp.syscalls[0].errnoRet: 65536 out of range (0-65535)"},
    {"rule without names",
     {.default_action = "SCMP_ACT_ALLOW",
      SYSCALLS({.names = {NULL, 0}, .action = "SCMP_ACT_KILL"})},
     "linux.seccomp.syscalls[0].names: empty"},
    {"unknown architecture",
     {.default_action = "SCMP_ACT_ALLOW",
      .architectures = STRV("SCMP_ARCH_VAX")},
     "linux.seccomp.architectures[0]: unknown architecture \"SCMP_ARCH_VAX\""},
    {"architecture without the SCMP_ARCH_ prefix",
     {.default_action = "SCMP_ACT_ALLOW",
      .architectures = STRV("SCMP_ARCH_X86_64", "x86")},
     "linux.seccomp.architectures[1]: unknown architecture \"x86\""},
    {"SCMP_ARCH_NATIVE is not an OCI architecture",
     {.default_action = "SCMP_ACT_ALLOW",
      .architectures = STRV("SCMP_ARCH_NATIVE")},
     "linux.seccomp.architectures[0]: unknown architecture "
     "\"SCMP_ARCH_NATIVE\""},
    {"unknown flag",
     {.default_action = "SCMP_ACT_ALLOW",
      .flags =
          STRV("SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_NEW_LISTENER")},
     "linux.seccomp.flags[1]: unknown flag "
     "\"SECCOMP_FILTER_FLAG_NEW_LISTENER\""},
    {"unknown operator",
     {.default_action = "SCMP_ACT_ALLOW",
      SYSCALLS({.names = STRV("personality"),
                .action = "SCMP_ACT_ERRNO",
                ARGS({.index = 0, .op = "SCMP_CMP_EQ"},
                     {.index = 1, .op = "SCMP_CMP_FOO"})})},
     "linux.seccomp.syscalls[0].args[1].op: unknown operator "
     "\"SCMP_CMP_FOO\""},
    {"argument index 6",
     {.default_action = "SCMP_ACT_ALLOW",
      SYSCALLS({.names = STRV("read"), .action = "SCMP_ACT_KILL"},
               {.names = STRV("mmap"),
                .action = "SCMP_ACT_ERRNO",
                ARGS({.index = 6, .op = "SCMP_CMP_EQ"})})},
     "linux.seccomp.syscalls[1].args[0].index: 6 out of range (0-5)"},
    /* Validated even though the rule is then dropped as redundant. */
    {"bad operator in a rule equal to the default",
     {.default_action = "SCMP_ACT_ALLOW",
      SYSCALLS({.names = STRV("read"),
                .action = "SCMP_ACT_ALLOW",
                ARGS({.index = 0, .op = "SCMP_CMP_BETWEEN"})})},
     "linux.seccomp.syscalls[0].args[0].op: unknown operator "
     "\"SCMP_CMP_BETWEEN\""},
};

static void test_errors(void) {
  for (size_t i = 0; i < LEN(bad_profiles); i++) {
    struct coil_seccomp_profile *p = (void *)1;
    struct coil_error err = {0};
    int rc = seccomp_profile_build(&bad_profiles[i].cfg, &p, &err);
    ok(rc == -1 && p == NULL, "rejected: %s", bad_profiles[i].what);
    is_str(err.msg, bad_profiles[i].want, "message: %s", bad_profiles[i].what);
  }
}

/* ---- name tables -------------------------------------------------------- */

static void test_tables(void) {
  /* libseccomp cannot mix byte orders in one filter (EDOM), as runc
   * finds too; the other half of the table must fail saying so. */
  static const struct {
    const char *name;
    bool little_endian;
  } arches[] = {
      {"SCMP_ARCH_X86", true},         {"SCMP_ARCH_X86_64", true},
      {"SCMP_ARCH_X32", true},         {"SCMP_ARCH_ARM", true},
      {"SCMP_ARCH_AARCH64", true},     {"SCMP_ARCH_MIPS", false},
      {"SCMP_ARCH_MIPS64", false},     {"SCMP_ARCH_MIPS64N32", false},
      {"SCMP_ARCH_MIPSEL", true},      {"SCMP_ARCH_MIPSEL64", true},
      {"SCMP_ARCH_MIPSEL64N32", true}, {"SCMP_ARCH_PPC", false},
      {"SCMP_ARCH_PPC64", false},      {"SCMP_ARCH_PPC64LE", true},
      {"SCMP_ARCH_S390", false},       {"SCMP_ARCH_S390X", false},
      {"SCMP_ARCH_PARISC", false},     {"SCMP_ARCH_PARISC64", false},
      {"SCMP_ARCH_RISCV64", true},
  };
  const bool native_le = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
  for (size_t i = 0; i < LEN(arches); i++) {
    struct coil_seccomp cfg = {
        .default_action = "SCMP_ACT_ALLOW",
        .architectures = {.v = (char **)&arches[i].name, .n = 1},
        SYSCALLS({.names = STRV("getcwd"), .action = "SCMP_ACT_ERRNO"}),
    };
    if (arches[i].little_endian == native_le) {
      seccomp_profile_free(build_ok(&cfg, arches[i].name));
      continue;
    }
    struct coil_seccomp_profile *p = NULL;
    struct coil_error err = {0};
    char want[256];
    snprintf(want, sizeof want,
             "linux.seccomp.architectures[0]: %s has the other byte order "
             "than the native architecture; one filter cannot hold both",
             arches[i].name);
    int rc = seccomp_profile_build(&cfg, &p, &err);
    ok(rc == -1 && !p, "other byte order rejected: %s", arches[i].name);
    is_str(err.msg, want, "message: %s", arches[i].name);
  }

  static const char *const flags[] = {"SECCOMP_FILTER_FLAG_TSYNC",
                                      "SECCOMP_FILTER_FLAG_LOG",
                                      "SECCOMP_FILTER_FLAG_SPEC_ALLOW"};
  for (size_t i = 0; i < LEN(flags); i++) {
    struct coil_seccomp cfg = {.default_action = "SCMP_ACT_ALLOW",
                               .flags = {.v = (char **)&flags[i], .n = 1}};
    seccomp_profile_free(build_ok(&cfg, flags[i]));
  }

  static const char *const actions[] = {
      "SCMP_ACT_KILL",  "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD",
      "SCMP_ACT_TRAP",  "SCMP_ACT_ERRNO",        "SCMP_ACT_TRACE",
      "SCMP_ACT_ALLOW", "SCMP_ACT_LOG",
  };
  for (size_t i = 0; i < LEN(actions); i++) {
    char what[80];
    struct coil_seccomp as_default = {.default_action = (char *)actions[i]};
    snprintf(what, sizeof what, "default action %s", actions[i]);
    seccomp_profile_free(build_ok(&as_default, what));

    struct coil_seccomp as_rule = {
        .default_action = "SCMP_ACT_ERRNO",
        .has_default_errno_ret = true,
        .default_errno_ret = 99,
        SYSCALLS({.names = STRV("getcwd"), .action = (char *)actions[i]}),
    };
    snprintf(what, sizeof what, "rule action %s", actions[i]);
    seccomp_profile_free(build_ok(&as_rule, what));
  }

  static const char *const ops[] = {
      "SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE",       "SCMP_CMP_EQ",
      "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_MASKED_EQ"};
  for (size_t i = 0; i < LEN(ops); i++) {
    struct coil_seccomp_arg arg = {
        .index = 1, .value = 3, .op = (char *)ops[i]};
    struct coil_seccomp cfg = {
        .default_action = "SCMP_ACT_ALLOW",
        SYSCALLS({.names = STRV("getpriority"),
                  .action = "SCMP_ACT_ERRNO",
                  .args = &arg,
                  .n_args = 1}),
    };
    seccomp_profile_free(build_ok(&cfg, ops[i]));
  }
}

static int free_null_profile(const void *arg, char *out, size_t len) {
  (void)arg, (void)out, (void)len;
  seccomp_profile_free(NULL);
  return 0;
}

static void test_skips(void) {
  /* An unknown name is skipped with a warning; the rest of the rule stays. */
  struct coil_seccomp unknown = {
      .default_action = "SCMP_ACT_ALLOW",
      SYSCALLS({.names = STRV("getcwd"), .action = "SCMP_ACT_KILL"},
               {.names = STRV("getpid", "no_such_syscall"),
                .action = "SCMP_ACT_ERRNO"}),
  };
  char warned[512];
  int saved = capture_stderr();
  struct coil_seccomp_profile *p =
      build_ok(&unknown, "with an unknown syscall");
  restore_stderr(saved, warned, sizeof warned);
  is_str(warned,
         "coil: warning: linux.seccomp.syscalls[1].names[1]: unknown syscall "
         "\"no_such_syscall\", ignored\n",
         "unknown syscall name warns with its field");
  seccomp_profile_free(p);

  /* libseccomp refuses these (EACCES); coil drops them. */
  struct coil_seccomp redundant = {
      .default_action = "SCMP_ACT_ERRNO",
      SYSCALLS({.names = STRV("getcwd"),
                .action = "SCMP_ACT_ERRNO",
                .has_errno_ret = true,
                .errno_ret = EPERM},
               {.names = STRV("getpid"), .action = "SCMP_ACT_ALLOW"}),
  };
  seccomp_profile_free(
      build_ok(&redundant, "rule equal to the default action"));

  char out[8];
  int st = run_child(free_null_profile, NULL, out, sizeof out);
  ok(exited(st, 0), "seccomp_profile_free(NULL) is a no-op (status %#x)", st);
}

/* ---- the kernel --------------------------------------------------------- */

static int load(const struct coil_seccomp_profile *p, char *out, size_t len) {
  struct coil_error err = {0};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
    snprintf(out, len, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
    return -1;
  }
  if (seccomp_profile_load(p, &err) < 0) {
    snprintf(out, len, "load: %s", err.msg);
    return -1;
  }
  return 0;
}

/* "ok" or "-1/errno" of a call, for comparing what the child saw. */
static const char *outcome(long rc, int e, char *buf, size_t len) {
  if (rc == -1)
    snprintf(buf, len, "-1/%d", e);
  else
    snprintf(buf, len, "ok");
  return buf;
}

static int child_getcwd(const void *arg, char *out, size_t len) {
  if (load(arg, out, len) < 0)
    return 1;
  char cwd[PATH_MAX], a[16], b[16];
  errno = 0;
  long rc = getcwd(cwd, sizeof cwd) ? 0 : -1;
  int e = errno;
  long rc2 = syscall(SYS_getppid);
  snprintf(out, len, "getcwd %s, getppid %s", outcome(rc, e, a, sizeof a),
           outcome(rc2, errno, b, sizeof b));
  return 0;
}

static void test_errno_rule(void) {
  struct coil_seccomp cfg = {
      .default_action = "SCMP_ACT_ALLOW",
      SYSCALLS({.names = STRV("getcwd"),
                .action = "SCMP_ACT_ERRNO",
                .has_errno_ret = true,
                .errno_ret = 42}),
  };
  struct coil_seccomp_profile *p = build_ok(&cfg, "getcwd -> errno 42");
  if (!p)
    return;
  char seen[1024];
  int st = run_child(child_getcwd, p, seen, sizeof seen);
  ok(exited(st, 0), "child loaded the filter");
  is_str(seen, "getcwd -1/42, getppid ok", "getcwd fails with errnoRet 42");

  /* The same over three architectures: the native one is there already. */
  cfg.architectures = (struct coil_strv)STRV("SCMP_ARCH_X86_64",
                                             "SCMP_ARCH_X86", "SCMP_ARCH_X32");
  struct coil_seccomp_profile *multi = build_ok(&cfg, "x86_64 + x86 + x32");
  if (multi) {
    run_child(child_getcwd, multi, seen, sizeof seen);
    is_str(seen, "getcwd -1/42, getppid ok", "multi-arch filter works");
  }
  seccomp_profile_free(multi);

  /* errnoRet defaults to EPERM. */
  cfg.architectures = (struct coil_strv){NULL, 0};
  cfg.syscalls[0].has_errno_ret = false;
  struct coil_seccomp_profile *eperm = build_ok(&cfg, "getcwd -> ERRNO");
  if (eperm) {
    run_child(child_getcwd, eperm, seen, sizeof seen);
    is_str(seen, "getcwd -1/1, getppid ok", "errnoRet defaults to EPERM");
  }
  seccomp_profile_free(eperm);

  /* defaultErrnoRet: everything but the allowlist fails with it. */
  struct coil_seccomp deny = {
      .default_action = "SCMP_ACT_ERRNO",
      .has_default_errno_ret = true,
      .default_errno_ret = 77,
      SYSCALLS({.names = STRV("getppid", "write", "exit_group"),
                .action = "SCMP_ACT_ALLOW"}),
  };
  struct coil_seccomp_profile *d = build_ok(&deny, "default ERRNO(77)");
  if (d) {
    run_child(child_getcwd, d, seen, sizeof seen);
    is_str(seen, "getcwd -1/77, getppid ok", "defaultErrnoRet applies");
  }
  seccomp_profile_free(d);
  seccomp_profile_free(p);
}

static int child_args(const void *arg, char *out, size_t len) {
  if (load(arg, out, len) < 0)
    return 1;
  /* 0xffffffff only queries the persona; 0 is PER_LINUX, the default. */
  static const struct {
    long nr;
    unsigned long a0, a1;
  } calls[] = {
      {SYS_personality, 0xffffffffUL, 0},
      {SYS_personality, PER_LINUX, 0},
      {SYS_getpriority, PRIO_PROCESS, NO_PID},
      {SYS_getpriority, PRIO_PGRP, NO_PID},
      {SYS_getpriority, PRIO_PROCESS, 0},
      {SYS_getpriority, PRIO_USER, NO_PID + 1},
      {SYS_getpriority, PRIO_USER, NO_PID + 0x100},
      {SYS_getpriority, 7, 0},
      {SYS_getpriority, 8, 0},
      {SYS_getpriority, 9, 0},
  };
  size_t o = 0;
  for (size_t i = 0; i < LEN(calls) && o < len; i++) {
    char buf[16];
    errno = 0;
    long rc = syscall(calls[i].nr, calls[i].a0, calls[i].a1);
    o += (size_t)snprintf(out + o, len - o, "%s%s", i ? " " : "",
                          outcome(rc, errno, buf, sizeof buf));
  }
  return 0;
}

static void test_args(void) {
  struct coil_seccomp cfg = {
      .default_action = "SCMP_ACT_ALLOW",
      SYSCALLS(
          /* Single comparison. */
          {.names = STRV("personality"),
           .action = "SCMP_ACT_ERRNO",
           .has_errno_ret = true,
           .errno_ret = 43,
           ARGS({.index = 0, .value = 0xffffffff, .op = "SCMP_CMP_EQ"})},
          /* Two arguments: ANDed. */
          {.names = STRV("getpriority"),
           .action = "SCMP_ACT_ERRNO",
           .has_errno_ret = true,
           .errno_ret = 44,
           ARGS({.index = 0, .value = PRIO_PROCESS, .op = "SCMP_CMP_EQ"},
                {.index = 1, .value = NO_PID, .op = "SCMP_CMP_EQ"})},
          /* MASKED_EQ: value is the mask, valueTwo the datum. */
          {.names = STRV("getpriority"),
           .action = "SCMP_ACT_ERRNO",
           .has_errno_ret = true,
           .errno_ret = 45,
           ARGS({.index = 0, .value = PRIO_USER, .op = "SCMP_CMP_EQ"},
                {.index = 1,
                 .value = 0xff,
                 .value_two = (NO_PID + 1) & 0xff,
                 .op = "SCMP_CMP_MASKED_EQ"})},
          /* One argument compared twice: ORed, as runc does. */
          {.names = STRV("getpriority"),
           .action = "SCMP_ACT_ERRNO",
           .has_errno_ret = true,
           .errno_ret = 46,
           ARGS({.index = 0, .value = 7, .op = "SCMP_CMP_EQ"},
                {.index = 0, .value = 8, .op = "SCMP_CMP_EQ"})}),
  };
  struct coil_seccomp_profile *p = build_ok(&cfg, "argument rules");
  if (!p)
    return;
  char seen[1024];
  int st = run_child(child_args, p, seen, sizeof seen);
  ok(exited(st, 0), "child loaded the argument filter");
  is_str(seen,
         "-1/43 ok "          /* personality: only arg0 == 0xffffffff */
         "-1/44 -1/3 ok "     /* both args must match; else ESRCH or ok */
         "-1/45 -1/3 "        /* mask 0xff over who: 0x39 matches, 0x38 not */
         "-1/46 -1/46 -1/22", /* which 7 or 8; 9 is EINVAL */
         "each argument rule applies only to matching calls");
  seccomp_profile_free(p);
}

/* Leaves by itself: after the filter only the allowlist may run. */
static int child_allowlisted(const void *arg, char *out, size_t len) {
  if (load(arg, out, len) < 0)
    return 1;
  syscall(SYS_getppid);
  syscall(SYS_exit_group, 7);
  return 2;
}

static int child_forbidden(const void *arg, char *out, size_t len) {
  if (load(arg, out, len) < 0)
    return 1;
  syscall(SYS_getcwd, NULL, 0);
  syscall(SYS_exit_group, 0);
  return 2;
}

static void test_kill(void) {
  /* munmap/madvise/brk: in case the allocator trims after the load. */
  struct coil_seccomp cfg = {
      .default_action = "SCMP_ACT_KILL_PROCESS",
      SYSCALLS(
          {.names = STRV("exit_group", "getppid", "munmap", "madvise", "brk"),
           .action = "SCMP_ACT_ALLOW"}),
  };
  struct coil_seccomp_profile *p = build_ok(&cfg, "KILL_PROCESS allowlist");
  if (!p)
    return;
  char seen[1024];
  int st = run_child(child_allowlisted, p, seen, sizeof seen);
  ok(exited(st, 7), "allowlisted syscalls run (status 0x%x%s%s)", st,
     *seen ? ", " : "", seen);
  st = run_child(child_forbidden, p, seen, sizeof seen);
  ok(killed_by(st, SIGSYS),
     "a non-listed syscall kills with SIGSYS "
     "(status 0x%x%s%s)",
     st, *seen ? ", " : "", seen);
  seccomp_profile_free(p);

  struct coil_seccomp trap = {
      .default_action = "SCMP_ACT_ALLOW",
      SYSCALLS({.names = STRV("getcwd"), .action = "SCMP_ACT_TRAP"}),
  };
  p = build_ok(&trap, "TRAP rule");
  if (p) {
    st = run_child(child_forbidden, p, seen, sizeof seen);
    ok(killed_by(st, SIGSYS), "TRAP raises SIGSYS (status 0x%x)", st);
  }
  seccomp_profile_free(p);
}

static void read_ssb(char *buf, size_t len) {
  FILE *f = fopen("/proc/self/status", "re");
  char line[256];
  snprintf(buf, len, "(absent)");
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "Speculation_Store_Bypass:", 25) == 0) {
      snprintf(buf, len, "%s", line + 25 + strspn(line + 25, " \t"));
      buf[strcspn(buf, "\n")] = '\0';
    }
  if (f)
    fclose(f);
}

static int child_ssb(const void *arg, char *out, size_t len) {
  char before[64], after[64];
  read_ssb(before, sizeof before);
  if (load(arg, out, len) < 0)
    return 1;
  read_ssb(after, sizeof after);
  snprintf(out, len, "%s -> %s", before, after);
  return strcmp(before, after) == 0 ? 0 : 3;
}

static void test_flags(void) {
  struct coil_seccomp cfg = {
      .default_action = "SCMP_ACT_ALLOW",
      .flags = STRV("SECCOMP_FILTER_FLAG_SPEC_ALLOW"),
      SYSCALLS({.names = STRV("getcwd"),
                .action = "SCMP_ACT_ERRNO",
                .has_errno_ret = true,
                .errno_ret = 42}),
  };
  struct coil_seccomp_profile *p = build_ok(&cfg, "SPEC_ALLOW");
  char seen[1024];
  if (p) {
    int st = run_child(child_ssb, p, seen, sizeof seen);
    ok(exited(st, 0),
       "SPEC_ALLOW loads and leaves Speculation_Store_Bypass "
       "alone (%s)",
       seen);
  }
  seccomp_profile_free(p);

  cfg.flags = (struct coil_strv)STRV("SECCOMP_FILTER_FLAG_TSYNC",
                                     "SECCOMP_FILTER_FLAG_LOG");
  p = build_ok(&cfg, "TSYNC + LOG");
  if (p) {
    run_child(child_getcwd, p, seen, sizeof seen);
    is_str(seen, "getcwd -1/42, getppid ok", "TSYNC + LOG filter loads");
  }
  seccomp_profile_free(p);

  /* SCMP_ACT_LOG lets the call through. */
  cfg.flags = (struct coil_strv){NULL, 0};
  cfg.syscalls[0].action = "SCMP_ACT_LOG";
  cfg.syscalls[0].has_errno_ret = false;
  p = build_ok(&cfg, "LOG rule");
  if (p) {
    run_child(child_getcwd, p, seen, sizeof seen);
    is_str(seen, "getcwd ok, getppid ok", "SCMP_ACT_LOG allows the call");
  }
  seccomp_profile_free(p);
}

/* Without no_new_privs the kernel wants CAP_SYS_ADMIN: with it (root) the
 * load works, without it the message says why. */
static int child_no_nnp(const void *arg, char *out, size_t len) {
  struct coil_error err = {0};
  if (seccomp_profile_load(arg, &err) < 0) {
    snprintf(out, len, "%s", err.msg);
    return 1;
  }
  snprintf(out, len, "loaded");
  return 0;
}

static int child_no_nnp_no_admin(const void *arg, char *out, size_t len) {
  if (drop_cap(CAP_SYS_ADMIN, false) < 0) {
    snprintf(out, len, "dropping CAP_SYS_ADMIN: %s", strerror(errno));
    return 2;
  }
  return child_no_nnp(arg, out, len);
}

static void test_no_nnp(void) {
  struct coil_seccomp cfg = {
      .default_action = "SCMP_ACT_ALLOW",
      SYSCALLS({.names = STRV("getcwd"), .action = "SCMP_ACT_ERRNO"}),
  };
  struct coil_seccomp_profile *p = build_ok(&cfg, "profile for the NNP tests");
  if (!p)
    return;
  char seen[1024];
  run_child(child_no_nnp, p, seen, sizeof seen);
  is_str(seen, "loaded", "loads without no_new_privs given CAP_SYS_ADMIN");
  run_child(child_no_nnp_no_admin, p, seen, sizeof seen);
  is_str(seen,
         "linux.seccomp: seccomp(SECCOMP_SET_MODE_FILTER): Permission denied "
         "(without no_new_privs this needs CAP_SYS_ADMIN)",
         "without NNP and CAP_SYS_ADMIN the error says why");
  seccomp_profile_free(p);
}

int main(void) {
  test_errors();
  test_tables();
  test_skips();
  test_errno_rule();
  test_args();
  test_kill();
  test_flags();
  test_no_nnp();
  return tap_done();
}
