/* caps: name parsing and its warnings, the config checks, then the sets
 * applied for real in forked children and read back from /proc. Runs as
 * root. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "caps.h"
#include "tap.h"
#include "testutil.h"

#define BIT(cap) (1ULL << (cap))

/* ---- helpers ---------------------------------------------------------- */

/* "Inh=.. Prm=.. Eff=.. Bnd=.. Amb=.." (hex) from a /proc/PID/status text. */
static void summarize_status(const char *status, char *out, size_t len) {
  static const char *const keys[] = {"Inh", "Prm", "Eff", "Bnd", "Amb"};
  size_t o = 0;
  out[0] = '\0';
  for (size_t k = 0; k < LEN(keys) && o < len; k++) {
    char key[16];
    snprintf(key, sizeof key, "\nCap%s:", keys[k]);
    const char *at = strstr(status, key);
    unsigned long long v = at ? strtoull(at + strlen(key), NULL, 16) : ~0ULL;
    o += (size_t)snprintf(out + o, len - o, "%s%s=%llx", k ? " " : "", keys[k],
                          v);
  }
}

static void own_caps(char *out, size_t len) {
  char status[8192] = "\n";
  FILE *f = fopen("/proc/self/status", "re");
  size_t n = f ? fread(status + 1, 1, sizeof status - 2, f) : 0;
  status[n + 1] = '\0';
  if (f)
    fclose(f);
  summarize_status(status, out, len);
}

static struct coil_process caps_process(void) {
  struct coil_process p = {.has_capabilities = true};
  for (int s = 0; s < COIL_CAP_SET_COUNT; s++)
    p.has_caps[s] = true;
  return p;
}

/* ---- parsing ------------------------------------------------------------ */

static void test_names(void) {
  static const struct {
    const char *name;
    int cap;
  } names[] = {
      {"CAP_CHOWN", 0},
      {"cap_net_raw", 13},
      {"Cap_Sys_Admin", 21},
      {"CAP_KILL", 5},
      {"CAP_NET_BIND_SERVICE", 10},
      {"CAP_SETPCAP", 8},
      {"CAP_SYS_RESOURCE", 24},
      {"CAP_AUDIT_READ", 37},
      {"CAP_PERFMON", 38},
      {"CAP_BPF", 39},
      {"CAP_CHECKPOINT_RESTORE", 40},
  };
  for (size_t i = 0; i < LEN(names); i++) {
    struct coil_process p = caps_process();
    p.caps[COIL_CAP_BOUNDING] =
        (struct coil_strv){.v = (char **)&names[i].name, .n = 1};
    struct coil_caps c;
    struct coil_error err = {0};
    int rc = caps_parse(&p, &c, &err);
    ok(rc == 0 && c.configured &&
           c.sets[COIL_CAP_BOUNDING] == BIT(names[i].cap),
       "%s is capability %d", names[i].name, names[i].cap);
  }

  struct coil_process none = {0};
  struct coil_caps c;
  memset(&c, 0xff, sizeof c);
  struct coil_error err = {0};
  int rc = caps_parse(&none, &c, &err);
  bool empty = true;
  for (int s = 0; s < COIL_CAP_SET_COUNT; s++)
    empty = empty && c.sets[s] == 0;
  ok(rc == 0 && !c.configured && empty,
     "without process.capabilities: not configured, all sets empty");
}

static void test_unknown(void) {
  /* cap_from_name alone would take all but the first: trailing text, a
   * number, a bare name. */
  static struct {
    enum coil_cap_set set;
    char *name;
    const char *want;
  } bad[] = {
      {COIL_CAP_BOUNDING, "CAP_FOO",
       "process.capabilities.bounding[2]: unknown capability \"CAP_FOO\""},
      {COIL_CAP_PERMITTED, "CAP_KILL+ep",
       "process.capabilities.permitted[2]: unknown capability "
       "\"CAP_KILL+ep\""},
      {COIL_CAP_AMBIENT, "12",
       "process.capabilities.ambient[2]: unknown capability \"12\""},
      {COIL_CAP_INHERITABLE, "chown",
       "process.capabilities.inheritable[2]: unknown capability \"chown\""},
      {COIL_CAP_EFFECTIVE, "CAP_TEST",
       "process.capabilities.effective[2]: unknown capability "
       "\"CAP_TEST\""},
  };
  for (size_t i = 0; i < LEN(bad); i++) {
    struct coil_process p = caps_process();
    p.caps[bad[i].set] =
        (struct coil_strv)STRV("CAP_CHOWN", "CAP_KILL", bad[i].name);
    struct coil_caps c;
    struct coil_error err = {0};
    int rc = caps_parse(&p, &c, &err);
    ok(rc == -1, "unknown name %s fails the parse", bad[i].name);
    is_str(err.msg, bad[i].want, "message names the field: %s", bad[i].name);
  }
}

static void test_consistency(void) {
  const struct {
    const char *what;
    struct coil_strv sets[COIL_CAP_SET_COUNT];
    const char *want;
  } bad[] = {
      {"effective outside permitted",
       {[COIL_CAP_EFFECTIVE] = STRV("CAP_CHOWN", "CAP_KILL"),
        [COIL_CAP_PERMITTED] = STRV("CAP_CHOWN")},
       "process.capabilities.effective: CAP_KILL is not in "
       "process.capabilities.permitted"},
      {"ambient outside inheritable",
       {[COIL_CAP_PERMITTED] = STRV("CAP_NET_BIND_SERVICE"),
        [COIL_CAP_AMBIENT] = STRV("CAP_NET_BIND_SERVICE")},
       "process.capabilities.ambient: CAP_NET_BIND_SERVICE is not in "
       "process.capabilities.inheritable"},
      {"ambient outside permitted",
       {[COIL_CAP_INHERITABLE] = STRV("CAP_NET_BIND_SERVICE"),
        [COIL_CAP_AMBIENT] = STRV("CAP_NET_BIND_SERVICE")},
       "process.capabilities.ambient: CAP_NET_BIND_SERVICE is not in "
       "process.capabilities.permitted"},
  };
  for (size_t i = 0; i < LEN(bad); i++) {
    struct coil_process p = caps_process();
    memcpy(p.caps, bad[i].sets, sizeof p.caps);
    struct coil_caps c;
    struct coil_error err = {0};
    int rc = caps_parse(&p, &c, &err);
    ok(rc == -1, "rejected: %s", bad[i].what);
    is_str(err.msg, bad[i].want, "message: %s", bad[i].what);
  }
}

/* ---- the kernel --------------------------------------------------------- */

static int child_apply(const void *arg, char *out, size_t len) {
  struct coil_error err = {0};
  if (caps_apply(arg, false, &err) < 0) {
    snprintf(out, len, "%s", err.msg);
    return 1;
  }
  own_caps(out, len);
  return 0;
}

/* CAP_CHOWN in every set, CAP_KILL too in the bounding set. */
static void parse_chown_everywhere(struct coil_caps *c) {
  struct coil_process p = caps_process();
  p.caps[COIL_CAP_BOUNDING] = (struct coil_strv)STRV("CAP_CHOWN", "CAP_KILL");
  struct coil_strv chown_only = STRV("cap_chown");
  for (int s = COIL_CAP_EFFECTIVE; s < COIL_CAP_SET_COUNT; s++)
    p.caps[s] = chown_only;
  struct coil_error err = {0};
  ok(caps_parse(&p, c, &err) == 0, "parses CAP_CHOWN everywhere");
}

static void test_apply(void) {
  struct coil_caps c;
  struct coil_error err = {0};
  int rc;
  parse_chown_everywhere(&c);
  char seen[2048];
  run_child(child_apply, &c, seen, sizeof seen);
  is_str(seen, "Inh=1 Prm=1 Eff=1 Bnd=21 Amb=1",
         "CAP_CHOWN in every set, CAP_KILL too in bounding");

  struct coil_caps none = {.configured = false};
  run_child(child_apply, &none, seen, sizeof seen);
  is_str(seen, "Inh=0 Prm=0 Eff=0 Bnd=0 Amb=0",
         "not configured: every set empty");

  /* Bounding-only configuration: the other sets are emptied. */
  struct coil_process b = {.has_capabilities = true};
  b.has_caps[COIL_CAP_BOUNDING] = true;
  b.caps[COIL_CAP_BOUNDING] = (struct coil_strv)STRV("CAP_SYS_ADMIN");
  rc = caps_parse(&b, &c, &err);
  ok(rc == 0, "parses a bounding-only set");
  run_child(child_apply, &c, seen, sizeof seen);
  is_str(seen, "Inh=0 Prm=0 Eff=0 Bnd=200000 Amb=0",
         "sets absent from the config are empty");
}

/* A serve template: the bounding set dropped ahead, the other sets kept;
 * caps_apply in a later child then ends as it would have alone. */
static int child_bounding_ahead(const void *arg, char *out, size_t len) {
  struct coil_error err = {0};
  char start[256], ahead[256], after[256];
  own_caps(start, sizeof start);
  if (caps_drop_bounding(arg, &err) < 0) {
    snprintf(out, len, "%s", err.msg);
    return 1;
  }
  own_caps(ahead, sizeof ahead);
  if (caps_apply(arg, true, &err) < 0) {
    snprintf(out, len, "%s", err.msg);
    return 1;
  }
  own_caps(after, sizeof after);
  /* Permitted and effective as at the start: from "Prm=" to " Bnd=". */
  const char *a = strstr(start, "Prm="), *b = strstr(ahead, "Prm=");
  size_t n = (size_t)(strstr(start, " Bnd=") - a);
  snprintf(out, len, "%s %s | %s", strncmp(a, b, n) == 0 ? "kept" : "changed",
           strstr(ahead, "Bnd="), after);
  return 0;
}

static void test_drop_bounding_ahead(void) {
  struct coil_caps c;
  parse_chown_everywhere(&c);
  char seen[2048];
  run_child(child_bounding_ahead, &c, seen, sizeof seen);
  is_str(seen, "kept Bnd=21 Amb=0 | Inh=1 Prm=1 Eff=1 Bnd=21 Amb=1",
         "only the bounding set shrinks ahead; caps_apply then as alone");
}

/* The way init runs it: setuid to an unprivileged id with KEEPCAPS, apply,
 * execve. Only ambient capabilities survive the execve of a plain binary. */
static int child_ambient(const void *arg, char *out, size_t len) {
  struct coil_error err = {0};
  if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0 ||
      setresgid(65534, 65534, 65534) < 0 ||
      setresuid(65534, 65534, 65534) < 0) {
    snprintf(out, len, "dropping to 65534: %s", strerror(errno));
    return 2;
  }
  if (caps_apply(arg, false, &err) < 0) {
    snprintf(out, len, "%s", err.msg);
    return 1;
  }
  int fds[2];
  if (pipe(fds) < 0)
    return 3;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    execl("/bin/cat", "cat", "/proc/self/status", (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  char status[8192] = "\n";
  read_fd(fds[0], status + 1, sizeof status - 1);
  waitpid(pid, NULL, 0);
  summarize_status(status, out, len);
  return 0;
}

static void test_ambient(void) {
  struct coil_process p = caps_process();
  struct coil_strv bind_only = STRV("CAP_NET_BIND_SERVICE");
  for (int s = 0; s < COIL_CAP_SET_COUNT; s++)
    p.caps[s] = bind_only;
  struct coil_caps c;
  struct coil_error err = {0};
  int rc;
  rc = caps_parse(&p, &c, &err);
  ok(rc == 0, "parses CAP_NET_BIND_SERVICE everywhere");
  char seen[2048];
  run_child(child_ambient, &c, seen, sizeof seen);
  is_str(seen, "Inh=400 Prm=400 Eff=400 Bnd=400 Amb=400",
         "ambient CAP_NET_BIND_SERVICE survives setuid(65534) + execve");

  /* Without ambient the same execve ends with nothing. */
  p.caps[COIL_CAP_AMBIENT] = (struct coil_strv){NULL, 0};
  rc = caps_parse(&p, &c, &err);
  ok(rc == 0, "parses it without ambient");
  run_child(child_ambient, &c, seen, sizeof seen);
  is_str(seen, "Inh=400 Prm=0 Eff=0 Bnd=400 Amb=0",
         "without ambient the execve drops it");
}

struct apply_case {
  cap_value_t lose; /* taken from the child before caps_apply; -1: none */
  struct coil_caps caps;
};

static int child_apply_fails(const void *arg, char *out, size_t len) {
  const struct apply_case *a = arg;
  struct coil_error err = {0};
  if (a->lose >= 0 && drop_cap(a->lose, true) < 0) {
    snprintf(out, len, "losing cap %d: %s", a->lose, strerror(errno));
    return 2;
  }
  if (caps_apply(&a->caps, false, &err) == 0) {
    snprintf(out, len, "applied");
    return 0;
  }
  snprintf(out, len, "%s", err.msg);
  return 1;
}

static void test_apply_errors(void) {
  static const struct {
    const char *what;
    struct apply_case c;
    const char *want;
  } cases[] = {
      {"permitted beyond what coil holds",
       {CAP_SYS_RESOURCE,
        {true,
         {[COIL_CAP_BOUNDING] = BIT(CAP_CHOWN) | BIT(CAP_SYS_RESOURCE),
          [COIL_CAP_PERMITTED] = BIT(CAP_CHOWN) | BIT(CAP_SYS_RESOURCE)}}},
       "process.capabilities.permitted: capset: CAP_SYS_RESOURCE is not in "
       "coil's own permitted set"},
      {"inheritable outside bounding",
       {-1,
        {true,
         {[COIL_CAP_BOUNDING] = BIT(CAP_CHOWN),
          [COIL_CAP_INHERITABLE] = BIT(CAP_NET_ADMIN)}}},
       "process.capabilities.inheritable: capset: CAP_NET_ADMIN is not in "
       "process.capabilities.bounding"},
      {"bounding drop without CAP_SETPCAP",
       {CAP_SETPCAP, {true, {[COIL_CAP_BOUNDING] = 0}}},
       "process.capabilities.bounding: prctl(PR_CAPBSET_DROP, CAP_CHOWN): "
       "Operation not permitted"},
      /* caps_parse refuses this; caps_apply still names the field. */
      {"ambient outside inheritable",
       {-1,
        {true,
         {[COIL_CAP_BOUNDING] = BIT(CAP_KILL),
          [COIL_CAP_PERMITTED] = BIT(CAP_KILL),
          [COIL_CAP_AMBIENT] = BIT(CAP_KILL)}}},
       "process.capabilities.ambient: prctl(PR_CAP_AMBIENT_RAISE, CAP_KILL): "
       "Operation not permitted"},
  };
  for (size_t i = 0; i < LEN(cases); i++) {
    char seen[2048];
    int st = run_child(child_apply_fails, &cases[i].c, seen, sizeof seen);
    ok(exited(st, 1), "fails: %s", cases[i].what);
    is_str(seen, cases[i].want, "message: %s", cases[i].what);
  }
}

/* A second apply (say, a nested runtime's) finds the unwanted capabilities
 * gone already: the first one left no CAP_SETPCAP, and none is needed. */
static int child_reapply(const void *arg, char *out, size_t len) {
  struct coil_error err = {0};
  if (caps_apply(arg, false, &err) < 0 || caps_apply(arg, false, &err) < 0) {
    snprintf(out, len, "%s", err.msg);
    return 1;
  }
  own_caps(out, len);
  return 0;
}

static void test_reapply(void) {
  struct coil_caps c = {.configured = true,
                        .sets = {[COIL_CAP_BOUNDING] = BIT(CAP_CHOWN)}};
  char seen[2048];
  run_child(child_reapply, &c, seen, sizeof seen);
  is_str(seen, "Inh=0 Prm=0 Eff=0 Bnd=1 Amb=0",
         "re-applying a reduced bounding set needs no CAP_SETPCAP");
}

int main(void) {
  test_names();
  test_unknown();
  test_consistency();
  test_apply();
  test_ambient();
  test_drop_bounding_ahead();
  test_apply_errors();
  test_reapply();
  return tap_done();
}
