/* rlimits: the name table, the parse errors, and setrlimit for real in
 * forked children. Runs as root; the EPERM cases drop CAP_SYS_RESOURCE in
 * the child first so they hold on any host. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/resource.h>

#include "rlimits.h"
#include "tap.h"
#include "testutil.h"

#define RLIMITS(...)                                                           \
  .rlimits = (struct coil_rlimit[]){__VA_ARGS__},                              \
  .n_rlimits =                                                                 \
      sizeof((struct coil_rlimit[]){__VA_ARGS__}) / sizeof(struct coil_rlimit)

/* ---- the name table ----------------------------------------------------- */

static void test_names(void) {
  static const struct {
    const char *name;
    int resource;
  } names[] = {
      {"RLIMIT_CPU", RLIMIT_CPU},
      {"RLIMIT_FSIZE", RLIMIT_FSIZE},
      {"RLIMIT_DATA", RLIMIT_DATA},
      {"RLIMIT_STACK", RLIMIT_STACK},
      {"RLIMIT_CORE", RLIMIT_CORE},
      {"RLIMIT_RSS", RLIMIT_RSS},
      {"RLIMIT_NPROC", RLIMIT_NPROC},
      {"RLIMIT_NOFILE", RLIMIT_NOFILE},
      {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},
      {"RLIMIT_AS", RLIMIT_AS},
      {"RLIMIT_LOCKS", RLIMIT_LOCKS},
      {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
      {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE},
      {"RLIMIT_NICE", RLIMIT_NICE},
      {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},
      {"RLIMIT_RTTIME", RLIMIT_RTTIME},
  };
  for (size_t i = 0; i < LEN(names); i++)
    ok(rlimits_resource(names[i].name) == names[i].resource, "%s is %d",
       names[i].name, names[i].resource);
  unsigned long long named = 0;
  for (size_t i = 0; i < LEN(names); i++) {
    int r = rlimits_resource(names[i].name);
    if (r >= 0 && r < RLIM_NLIMITS)
      named |= 1ull << r;
  }
  ok(named == (1ull << RLIM_NLIMITS) - 1,
     "every resource the kernel has is named (%#llx)", named);
  ok(rlimits_resource("RLIMIT_FOO") == -1, "unknown name: -1");
  ok(rlimits_resource("rlimit_nofile") == -1, "names are case-sensitive");
  ok(rlimits_resource("NOFILE") == -1, "the RLIMIT_ prefix is required");
}

/* ---- parsing ------------------------------------------------------------ */

static void test_parse(void) {
  struct coil_process p = {
      RLIMITS({.type = "RLIMIT_NOFILE", .soft = 100, .hard = 200},
              {.type = "RLIMIT_CORE", .soft = 0, .hard = 0},
              {.type = "RLIMIT_AS", .soft = UINT64_MAX, .hard = UINT64_MAX},
              {.type = "RLIMIT_CPU", .soft = 5, .hard = UINT64_MAX}),
  };
  struct coil_rlimits r;
  struct coil_error err = {0};
  int rc = rlimits_parse(&p, &r, &err);
  ok(rc == 0 && r.n == 4, "four limits parse");
  ok(r.resource[0] == RLIMIT_NOFILE && r.lim[0].rlim_cur == 100 &&
         r.lim[0].rlim_max == 200,
     "NOFILE 100/200, in config order");
  is_str(r.name[0], "RLIMIT_NOFILE", "the name is kept for messages");
  ok(r.resource[1] == RLIMIT_CORE && r.lim[1].rlim_cur == 0 &&
         r.lim[1].rlim_max == 0,
     "CORE 0/0");
  ok(r.lim[2].rlim_cur == RLIM_INFINITY && r.lim[2].rlim_max == RLIM_INFINITY,
     "UINT64_MAX is RLIM_INFINITY");
  ok(r.lim[3].rlim_cur == 5 && r.lim[3].rlim_max == RLIM_INFINITY,
     "finite soft under an infinite hard");

  struct coil_process none = {0};
  rc = rlimits_parse(&none, &r, &err);
  ok(rc == 0 && r.n == 0, "no rlimits: nothing to apply");
}

static void test_parse_errors(void) {
  const struct {
    const char *what;
    struct coil_process p;
    const char *want;
  } bad[] = {
      {"unknown type",
       {RLIMITS({.type = "RLIMIT_NOFILE", .soft = 1, .hard = 1},
                {.type = "RLIMIT_FOO", .soft = 1, .hard = 1})},
       "process.rlimits[1].type: unknown rlimit \"RLIMIT_FOO\""},
      {"missing type",
       {RLIMITS({.type = NULL, .soft = 1, .hard = 1})},
       "process.rlimits[0].type: missing"},
      {"duplicate",
       {RLIMITS({.type = "RLIMIT_NOFILE", .soft = 1, .hard = 1},
                {.type = "RLIMIT_CORE", .soft = 0, .hard = 0},
                {.type = "RLIMIT_NOFILE", .soft = 2, .hard = 2})},
       "process.rlimits[2].type: duplicate RLIMIT_NOFILE"},
      {"soft above hard",
       {RLIMITS({.type = "RLIMIT_NOFILE", .soft = 10, .hard = 5})},
       "process.rlimits[0]: soft limit 10 exceeds hard limit 5"},
      {"infinite soft above finite hard",
       {RLIMITS({.type = "RLIMIT_CORE", .soft = 0, .hard = 0},
                {.type = "RLIMIT_STACK", .soft = UINT64_MAX, .hard = 8192})},
       "process.rlimits[1]: soft limit unlimited exceeds hard limit 8192"},
  };
  for (size_t i = 0; i < LEN(bad); i++) {
    struct coil_rlimits r;
    struct coil_error err = {0};
    int rc = rlimits_parse(&bad[i].p, &r, &err);
    ok(rc == -1, "rejected: %s", bad[i].what);
    is_str(err.msg, bad[i].want, "message: %s", bad[i].what);
  }
}

/* ---- the kernel --------------------------------------------------------- */

static int child_apply(const void *arg, char *out, size_t len) {
  struct coil_error err = {0};
  if (rlimits_apply(arg, &err) < 0) {
    snprintf(out, len, "%s", err.msg);
    return 1;
  }
  struct rlimit nofile, core;
  getrlimit(RLIMIT_NOFILE, &nofile);
  getrlimit(RLIMIT_CORE, &core);
  snprintf(
      out, len, "NOFILE %llu/%llu CORE %llu/%llu",
      (unsigned long long)nofile.rlim_cur, (unsigned long long)nofile.rlim_max,
      (unsigned long long)core.rlim_cur, (unsigned long long)core.rlim_max);
  return 0;
}

static void test_apply(void) {
  struct coil_process p = {
      RLIMITS({.type = "RLIMIT_NOFILE", .soft = 100, .hard = 200},
              {.type = "RLIMIT_CORE", .soft = 0, .hard = 0}),
  };
  struct coil_rlimits r;
  struct coil_error err = {0};
  int rc = rlimits_parse(&p, &r, &err);
  ok(rc == 0, "parses NOFILE 100/200, CORE 0/0");
  char seen[1024];
  int st = run_child(child_apply, &r, seen, sizeof seen);
  ok(exited(st, 0), "applied in a child");
  is_str(seen, "NOFILE 100/200 CORE 0/0", "getrlimit reads them back");
}

/* Drops CAP_SYS_RESOURCE and sets NOFILE's hard limit to hard, so raising
 * it must fail whatever the host grants root. */
static int lower_and_apply(const struct coil_rlimits *r, rlim_t hard, char *out,
                           size_t len) {
  if (drop_cap(CAP_SYS_RESOURCE, false) < 0) {
    snprintf(out, len, "dropping CAP_SYS_RESOURCE: %s", strerror(errno));
    return 2;
  }
  struct rlimit low = {.rlim_cur = hard, .rlim_max = hard};
  if (setrlimit(RLIMIT_NOFILE, &low) < 0) {
    snprintf(out, len, "lowering NOFILE: %s", strerror(errno));
    return 2;
  }
  return child_apply(r, out, len);
}

static int child_raise(const void *arg, char *out, size_t len) {
  return lower_and_apply(arg, 300, out, len);
}

static void test_raise_hard(void) {
  struct coil_process p = {
      RLIMITS({.type = "RLIMIT_CORE", .soft = 0, .hard = 0},
              {.type = "RLIMIT_NOFILE", .soft = 100, .hard = 400}),
  };
  struct coil_rlimits r;
  struct coil_error err = {0};
  int rc = rlimits_parse(&p, &r, &err);
  ok(rc == 0, "parses NOFILE 100/400");
  char seen[1024];
  int st = run_child(child_raise, &r, seen, sizeof seen);
  ok(exited(st, 1), "raising the hard limit fails");
  is_str(seen,
         "process.rlimits[1]: setrlimit(RLIMIT_NOFILE): cannot raise the hard "
         "limit from 300 to 400 without CAP_SYS_RESOURCE",
         "the message names the field, the current hard limit and the cap");

  /* Within the current hard limit the same child succeeds. */
  p.rlimits[1].hard = 300;
  rc = rlimits_parse(&p, &r, &err);
  ok(rc == 0, "parses NOFILE 100/300");
  st = run_child(child_raise, &r, seen, sizeof seen);
  is_str(seen, "NOFILE 100/300 CORE 0/0",
         "lowering or keeping the hard limit needs no capability");

  /* fs.nr_open caps NOFILE even for CAP_SYS_RESOURCE; the message says so. */
  FILE *f = fopen("/proc/sys/fs/nr_open", "re");
  unsigned long long nr_open = 0;
  if (!f || fscanf(f, "%llu", &nr_open) != 1) {
    ok(0, "read /proc/sys/fs/nr_open");
  } else {
    p.rlimits[1].hard = nr_open + 1;
    rc = rlimits_parse(&p, &r, &err);
    st = run_child(child_raise, &r, seen, sizeof seen);
    char want[256];
    snprintf(want, sizeof want,
             "process.rlimits[1]: setrlimit(RLIMIT_NOFILE): hard limit %llu "
             "exceeds fs.nr_open (%llu)",
             nr_open + 1, nr_open);
    is_str(seen, want, "NOFILE above fs.nr_open is named as such");
  }
  if (f)
    fclose(f);
}

/* As the host gives it: where root lacks CAP_SYS_RESOURCE (our CI), one
 * above the current hard limit fails with the friendly message. */
static void test_host_hard(void) {
  cap_t c = cap_get_proc();
  cap_flag_value_t held = CAP_CLEAR;
  cap_get_flag(c, CAP_SYS_RESOURCE, CAP_EFFECTIVE, &held);
  cap_free(c);
  struct rlimit cur;
  getrlimit(RLIMIT_NOFILE, &cur);
  /* Our machines' root lacks CAP_SYS_RESOURCE (hard NOFILE 20000). */
  if (held == CAP_SET || cur.rlim_max == RLIM_INFINITY) {
    ok(0, "root lacks CAP_SYS_RESOURCE and has a finite hard NOFILE");
    return;
  }
  struct coil_process p = {
      RLIMITS({.type = "RLIMIT_NOFILE",
               .soft = cur.rlim_cur,
               .hard = (uint64_t)cur.rlim_max + 1}),
  };
  struct coil_rlimits r;
  struct coil_error err = {0};
  int rc = rlimits_parse(&p, &r, &err);
  ok(rc == 0, "parses NOFILE hard %llu", (unsigned long long)cur.rlim_max + 1);
  char seen[1024], want[256];
  run_child(child_apply, &r, seen, sizeof seen);
  snprintf(want, sizeof want,
           "process.rlimits[0]: setrlimit(RLIMIT_NOFILE): cannot raise the "
           "hard limit from %llu to %llu without CAP_SYS_RESOURCE",
           (unsigned long long)cur.rlim_max,
           (unsigned long long)cur.rlim_max + 1);
  is_str(seen, want, "host hard NOFILE cannot be raised");
  rc = rlimits_check(&r, &err);
  ok(rc < 0 && strcmp(err.msg, want) == 0,
     "create refuses it up front with the same message: %s", err.msg);
}

int main(void) {
  test_names();
  test_parse();
  test_parse_errors();
  test_apply();
  test_raise_hard();
  test_host_hard();
  return tap_done();
}
