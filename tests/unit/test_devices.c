/* device_policy.c: rules to the kernel's form, to v1 lines and to the v2
 * device program (run here by a small interpreter and checked against the
 * rules read plainly: the last matching rule decides each access bit). As
 * root, the program passes the kernel's verifier, and each layer alone, v1
 * devices cgroup or v2 program, denies an open in a cgroup made for it
 * below this process's own. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup_driver.h"
#include "device_policy.h"
#include "tap.h"

#define C(maj, min, acc, allow)                                                \
  { 'c', maj, min, acc, allow, DEV_SRC_CONFIG, 0 }
#define B(maj, min, acc, allow)                                                \
  { 'b', maj, min, acc, allow, DEV_SRC_CONFIG, 0 }
#define A(maj, min, acc, allow)                                                \
  { 'a', maj, min, acc, allow, DEV_SRC_CONFIG, 0 }
#define ANY DEV_ANY
#define R DEV_READ
#define W DEV_WRITE
#define M DEV_MKNOD

/* The v1 writes as one text, "deny:a|allow:c 1:3 rwm|...". */
static const char *v1_text(const struct dev_policy *p) {
  static char buf[4096];
  static struct coil_error err;
  struct dev_v1_write *w;
  size_t n;
  if (dev_policy_v1(p, &w, &n, &err) < 0)
    return err.msg;
  buf[0] = '\0';
  for (size_t i = 0; i < n; i++)
    snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s:%s",
             i ? "|" : "", w[i].file + strlen("devices."), w[i].line);
  free(w);
  return buf;
}

static const char *built(const struct dev_rule *rules, size_t n,
                         struct dev_policy *p) {
  static struct coil_error err;
  if (dev_policy_build(rules, n, p, &err) < 0)
    return err.msg;
  return v1_text(p);
}

/* The rules read plainly: for each requested bit the last rule matching the
 * device and holding the bit decides; none denies. */
static bool reference(const struct dev_rule *rules, size_t n, char type,
                      int64_t major, int64_t minor, unsigned access) {
  for (unsigned bit = 1; bit <= 4; bit <<= 1) {
    if (!(access & bit))
      continue;
    bool allow = false;
    for (size_t i = 0; i < n; i++) {
      const struct dev_rule *r = &rules[i];
      if ((r->type == 'a' || r->type == type) &&
          (r->major == ANY || r->major == major) &&
          (r->minor == ANY || r->minor == minor) && (r->access & bit))
        allow = r->allow;
    }
    if (!allow)
      return false;
  }
  return true;
}

/* Runs the subset of eBPF the generator emits; -1 on anything else. */
static int run_bpf(const struct bpf_insn *insn, size_t n, char type,
                   uint32_t major, uint32_t minor, unsigned access) {
  struct bpf_cgroup_dev_ctx ctx = {
      .access_type = access << 16 |
                     (type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR),
      .major = major,
      .minor = minor};
  uint64_t reg[11] = {0};
  for (size_t pc = 0; pc < n; pc++) {
    const struct bpf_insn *i = &insn[pc];
    uint32_t src = (BPF_SRC(i->code) == BPF_X) ? (uint32_t)reg[i->src_reg]
                                               : (uint32_t)i->imm;
    uint32_t dst = (uint32_t)reg[i->dst_reg];
    switch (i->code) {
    case BPF_LDX | BPF_MEM | BPF_W:
      if (i->src_reg != BPF_REG_1 || i->off < 0 ||
          (size_t)i->off + 4 > sizeof ctx)
        return -1;
      memcpy(&dst, (char *)&ctx + i->off, 4);
      reg[i->dst_reg] = dst;
      break;
    case BPF_ALU | BPF_MOV | BPF_X:
    case BPF_ALU | BPF_MOV | BPF_K:
      reg[i->dst_reg] = src;
      break;
    case BPF_ALU | BPF_RSH | BPF_K:
      reg[i->dst_reg] = dst >> src;
      break;
    case BPF_ALU | BPF_AND | BPF_K:
      reg[i->dst_reg] = dst & src;
      break;
    case BPF_JMP32 | BPF_JNE | BPF_K:
    case BPF_JMP32 | BPF_JNE | BPF_X:
      if (dst != src)
        pc += (size_t)i->off;
      break;
    case BPF_JMP32 | BPF_JEQ | BPF_K:
      if (dst == src)
        pc += (size_t)i->off;
      break;
    case BPF_JMP | BPF_EXIT:
      return (int)reg[BPF_REG_0];
    default:
      return -1;
    }
  }
  return -1;
}

/* The requests the kernel makes: mknod alone, or an open's read and/or
 * write (never mknod with either). */
static const unsigned requests[] = {DEV_MKNOD, DEV_READ, DEV_WRITE,
                                    DEV_READ | DEV_WRITE};

/* Every device and request of a grid: the program decides as the rules do. */
static void check_program(const char *what, const struct dev_rule *rules,
                          size_t n) {
  static const int64_t majors[] = {1, 4, 5, 7, 10, 136, 4095};
  static const int64_t minors[] = {0, 1, 3, 11, 232, 237, 99999};
  struct dev_policy p;
  struct coil_error err;
  if (dev_policy_build(rules, n, &p, &err) < 0) {
    ok(0, "%s: builds (%s)", what, err.msg);
    return;
  }
  struct bpf_insn *insn;
  size_t len;
  if (dev_policy_bpf(&p, &insn, &len, &err) < 0) {
    ok(0, "%s: program (%s)", what, err.msg);
    dev_policy_free(&p);
    return;
  }
  int wrong = 0;
  for (int t = 0; t < 2; t++)
    for (size_t a = 0; a < sizeof majors / sizeof *majors; a++)
      for (size_t b = 0; b < sizeof minors / sizeof *minors; b++)
        for (size_t q = 0; q < sizeof requests / sizeof *requests; q++) {
          unsigned acc = requests[q];
          char type = t ? 'b' : 'c';
          int got = run_bpf(insn, len, type, (uint32_t)majors[a],
                            (uint32_t)minors[b], acc);
          int want = reference(rules, n, type, majors[a], minors[b], acc);
          if (got != want && wrong++ < 3)
            printf("# %s: %c %lld:%lld access %u: program %d, rules %d\n", what,
                   type, (long long)majors[a], (long long)minors[b], acc, got,
                   want);
        }
  ok(wrong == 0, "%s: program decides as the rules (%d wrong)", what, wrong);
  free(insn);
  dev_policy_free(&p);
}

/* The rules dev_policy_for_config puts after a config's: runc's defaults
 * with 5:1. */
static const struct dev_rule defaults[] = {
    C(ANY, ANY, M, true),         B(ANY, ANY, M, true),
    C(1, 3, R | W | M, true),     C(1, 5, R | W | M, true),
    C(1, 7, R | W | M, true),     C(1, 8, R | W | M, true),
    C(1, 9, R | W | M, true),     C(5, 0, R | W | M, true),
    C(5, 1, R | W | M, true),     C(5, 2, R | W | M, true),
    C(136, ANY, R | W | M, true),
};
#define N_DEFAULTS (sizeof defaults / sizeof *defaults)
#define DEFAULT_V1                                                             \
  "allow:c *:* m|allow:b *:* m|allow:c 1:3 rwm|allow:c 1:5 rwm|"               \
  "allow:c 1:7 rwm|allow:c 1:8 rwm|allow:c 1:9 rwm|allow:c 5:0 rwm|"           \
  "allow:c 5:1 rwm|allow:c 5:2 rwm|allow:c 136:* rwm"

/* config's rules followed by the defaults, into out. */
static size_t with_defaults(const struct dev_rule *config, size_t n,
                            struct dev_rule *out) {
  if (n)
    memcpy(out, config, n * sizeof *out);
  memcpy(out + n, defaults, sizeof defaults);
  return n + N_DEFAULTS;
}

static void test_config(void) {
  struct coil_linux l = {0};
  struct dev_policy p;
  struct coil_error err = {0};
  int rc = dev_policy_for_config(&l, &p, &err);
  ok(rc == 0, "no rules: builds (%s)", rc ? err.msg : "ok");
  is_str(v1_text(&p), "deny:a|" DEFAULT_V1,
         "no rules: deny all, then the default allowlist");
  dev_policy_free(&p);

  /* As runc: config rules first, defaults and linux.devices nodes after;
   * a fifo is no device; "u" is a char device. */
  char a[] = "a", c[] = "c", rwm[] = "rwm", r[] = "r";
  char tp[] = "p", tu[] = "u", tb[] = "b", path[] = "/dev/x";
  struct coil_device_rule cr[] = {
      {.allow = false, .access = rwm},
      {.allow = true, .type = c, .has_major = true, .major = 10, .access = r},
      {.allow = true,
       .type = a,
       .has_major = true,
       .major = -1,
       .has_minor = true,
       .minor = 4,
       .access = r},
  };
  struct coil_device nodes[] = {
      {.path = path, .type = tp},
      {.path = path, .type = tu, .major = 10, .minor = 200},
      {.path = path, .type = tb, .major = 7, .minor = 0},
  };
  l.has_resources = true;
  l.resources.devices = cr;
  l.resources.n_devices = 3;
  l.devices = nodes;
  l.n_devices = 3;
  rc = dev_policy_for_config(&l, &p, &err);
  ok(rc == 0, "config rules and nodes: builds (%s)", rc ? err.msg : "ok");
  is_str(v1_text(&p),
         "deny:a|allow:c 10:* r|allow:c *:4 r|allow:b *:4 r|allow:c *:* m|"
         "allow:b *:* m|"
         "allow:c 1:3 rwm|allow:c 1:5 rwm|allow:c 1:7 rwm|allow:c 1:8 rwm|"
         "allow:c 1:9 rwm|allow:c 5:0 rwm|allow:c 5:1 rwm|allow:c 5:2 rwm|"
         "allow:c 136:* rwm|allow:c 10:200 rwm|allow:b 7:0 rwm",
         "config rules, defaults, then linux.devices nodes");
  dev_policy_free(&p);

  cr[1].major = (int64_t)UINT32_MAX + 1;
  rc = dev_policy_for_config(&l, &p, &err);
  ok(rc < 0 && strstr(err.msg, "linux.resources.devices[1].major"),
     "a major beyond 32 bits is refused, naming the field (%s)", err.msg);
  cr[1].major = 10;
  nodes[2].minor = -5;
  rc = dev_policy_for_config(&l, &p, &err);
  ok(rc < 0 && strstr(err.msg, "linux.devices[2].minor"),
     "a negative node minor is refused, naming the field (%s)", err.msg);
}

static void test_build(void) {
  struct dev_policy p;
  struct dev_rule v[32];

  const struct dev_rule privileged[] = {A(ANY, ANY, R | W | M, true)};
  /* Default deny is tried first (a v1 cgroup below a restricted parent
   * takes no other), so "all" is an exception per type. */
  is_str(built(v, with_defaults(privileged, 1, v), &p),
         "deny:a|allow:c *:* rwm|allow:b *:* rwm|allow:c 1:3 rwm|"
         "allow:c 1:5 rwm|allow:c 1:7 rwm|allow:c 1:8 rwm|allow:c 1:9 rwm|"
         "allow:c 5:0 rwm|allow:c 5:1 rwm|allow:c 5:2 rwm|allow:c 136:* rwm",
         "allow all (docker --privileged): everything, as exceptions");
  dev_policy_free(&p);

  const struct dev_rule hole[] = {C(ANY, ANY, R | W, true),
                                  C(10, 232, R | W, false)};
  is_str(built(v, with_defaults(hole, 2, v), &p),
         "allow:a|deny:b *:* rw|deny:c 10:232 rw",
         "a deny after a wider allow: expressed under default allow");
  dev_policy_free(&p);

  const struct dev_rule after_allow_all[] = {A(ANY, ANY, R | W | M, true),
                                             A(ANY, ANY, W, false)};
  is_str(built(v, with_defaults(after_allow_all, 2, v), &p),
         "deny:a|allow:c *:* rm|allow:b *:* rm|allow:c 1:3 rwm|"
         "allow:c 1:5 rwm|allow:c 1:7 rwm|allow:c 1:8 rwm|allow:c 1:9 rwm|"
         "allow:c 5:0 rwm|allow:c 5:1 rwm|allow:c 5:2 rwm|allow:c 136:* rwm",
         "a partial wildcard deny takes only its bits");
  dev_policy_free(&p);

  const struct dev_rule narrowed[] = {C(1, 3, R | W | M, true),
                                      C(1, 3, W, false)};
  is_str(built(narrowed, 2, &p), "deny:a|allow:c 1:3 rm",
         "a later deny of the same device takes its bits back");
  dev_policy_free(&p);

  const struct dev_rule wider[] = {C(4, 1, W, true), C(4, ANY, R, true)};
  is_str(built(v, 0, &p), "deny:a", "no rules: deny all");
  dev_policy_free(&p);
  is_str(built(wider, 2, &p), "deny:a|allow:c 4:1 rw|allow:c 4:* r",
         "an exception gains the bits of a wider one, so r and w of one "
         "device add up");
  dev_policy_free(&p);

  struct coil_error err;
  const struct dev_rule punch[] = {
      C(10, ANY, R | W, true), {'c', 10, 232, R | W, false, DEV_SRC_CONFIG, 1}};
  ok(dev_policy_build(punch, 2, &p, &err) < 0 &&
         strstr(err.msg, "linux.resources.devices[1]") &&
         strstr(err.msg, "c 10:232 rw") && strstr(err.msg, "c 10:* rw"),
     "a hole in a wider rule, both ways inexpressible: refused (%s)", err.msg);
}

static void test_program(void) {
  struct dev_rule v[32];
  check_program("defaults", v, with_defaults(NULL, 0, v));
  const struct dev_rule deny_all[] = {A(ANY, ANY, R | W | M, false)};
  check_program("deny-all rule", v, with_defaults(deny_all, 1, v));
  const struct dev_rule privileged[] = {A(ANY, ANY, R | W | M, true)};
  check_program("allow all", v, with_defaults(privileged, 1, v));
  const struct dev_rule hole[] = {C(ANY, ANY, R | W, true),
                                  C(10, 232, R | W, false), B(7, 0, R, false)};
  check_program("hole under default allow", v, with_defaults(hole, 3, v));
  const struct dev_rule mixed[] = {A(ANY, ANY, R | W | M, false),
                                   C(10, 237, R | W, true),
                                   A(4, ANY, R, true),
                                   C(4, 1, W, true),
                                   C(1, 3, W, false),
                                   B(7, 0, R | W, true),
                                   C(4095, 99999, R, true)};
  check_program("mixed rules", mixed, 7);
  check_program("mixed rules and defaults", v, with_defaults(mixed, 7, v));
  const struct dev_rule partial[] = {A(ANY, ANY, R | W | M, true),
                                     A(ANY, ANY, W, false), C(1, ANY, W, true)};
  check_program("partial wildcards", v, with_defaults(partial, 3, v));
}

static int bpf_load(const struct dev_policy *p, char *log, size_t cap) {
  struct bpf_insn *insn;
  size_t n;
  struct coil_error err;
  if (dev_policy_bpf(p, &insn, &n, &err) < 0)
    return -1;
  union bpf_attr a = {.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE,
                      .insn_cnt = (uint32_t)n,
                      .insns = (uint64_t)(uintptr_t)insn,
                      .license = (uint64_t)(uintptr_t) "Apache-2.0",
                      .log_level = 1,
                      .log_buf = (uint64_t)(uintptr_t)log,
                      .log_size = (uint32_t)cap,
                      .expected_attach_type = BPF_CGROUP_DEVICE};
  int fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof a);
  free(insn);
  return fd;
}

static void test_verifier(void) {
  if (geteuid() != 0) {
    ok(0, "the verifier test runs as root");
    return;
  }
  struct dev_rule v[32];
  const struct dev_rule hole[] = {C(ANY, ANY, R | W, true),
                                  C(10, 232, R | W, false)};
  const struct {
    const char *what;
    const struct dev_rule *rules;
    size_t n;
  } cases[] = {{"defaults", NULL, 0}, {"default allow", hole, 2}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct dev_policy p;
    struct coil_error err;
    static char log[65536];
    log[0] = '\0';
    int fd = -1;
    if (dev_policy_build(v, with_defaults(cases[i].rules, cases[i].n, v), &p,
                         &err) == 0) {
      fd = bpf_load(&p, log, sizeof log);
      dev_policy_free(&p);
    }
    ok(fd >= 0, "verifier accepts the %s program (%s)", cases[i].what,
       fd >= 0 ? "ok" : strerror(errno));
    if (fd < 0)
      printf("# %.400s\n", log);
    else
      close(fd);
  }
}

/* This process's cgroup in a hierarchy ("0::" for v2, else the line naming
 * ctrl), as a directory below root. */
static bool own_dir(const char *root, const char *ctrl, char *out, size_t cap) {
  FILE *f = fopen("/proc/self/cgroup", "r");
  if (!f)
    return false;
  char line[512];
  bool found = false;
  while (!found && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2)
      continue;
    *c2 = '\0';
    bool match = ctrl ? !strcmp(c1 + 1, ctrl) : !strcmp(line, "0:");
    if (match) {
      snprintf(out, cap, "%s%s", root, strcmp(c2 + 1, "/") ? c2 + 1 : "");
      found = true;
    }
  }
  fclose(f);
  return found;
}

/* Forks a child that joins the cgroup by writing itself to join_file, then
 * opens /dev/null and /dev/zero for writing: 2 bits, set when each open
 * was refused with EPERM; -1 if the child could not join. */
static int denied_in(const char *join_file) {
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(join_file, O_WRONLY);
    if (fd < 0 || write(fd, "0", 1) != 1)
      _exit(255);
    close(fd);
    int bits = 0;
    static const char *const devs[] = {"/dev/null", "/dev/zero"};
    for (int i = 0; i < 2; i++) {
      fd = open(devs[i], O_WRONLY);
      if (fd < 0 && errno == EPERM)
        bits |= 1 << i;
      else if (fd >= 0)
        close(fd);
    }
    _exit(bits);
  }
  int status;
  if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
      WEXITSTATUS(status) == 255)
    return -1;
  return WEXITSTATUS(status);
}

/* One layer alone, the other left open (this process's cgroup in the other
 * hierarchy, the host's): a policy allowing /dev/null but not /dev/zero. */
static void test_layer(const char *what, const struct cg_driver *drv,
                       const char *root, const char *ctrl, const char *join) {
  char dir[PATH_MAX];
  if (access(root, F_OK) < 0 || !own_dir(root, ctrl, dir, sizeof dir - 64)) {
    ok(0, "%s: needs root and %s", what, root);
    return;
  }
  snprintf(dir + strlen(dir), 64, "/coil-unit-devices-%d", (int)getpid());
  if (mkdir(dir, 0755) < 0) {
    ok(0, "%s: mkdir %s: %s", what, dir, strerror(errno));
    return;
  }
  const struct dev_rule null_only[] = {C(1, 3, R | W, true)};
  struct dev_policy p;
  struct coil_error err = {0};
  struct cg_dir d = {
      .drv = drv, .ctrls = CG_BIT(CG_DEVICES), .kernel = true, .path = dir};
  char file[PATH_MAX];
  snprintf(file, sizeof file, "%s/%s", dir, join);
  ok(denied_in(file) == 0, "%s: both opens work before the policy", what);
  int rc = dev_policy_build(null_only, 1, &p, &err);
  if (rc == 0) {
    rc = drv->devices(&d, &p, &err);
    dev_policy_free(&p);
  }
  ok(rc == 0, "%s: applied (%s)", what, rc ? err.msg : "ok");
  is_str(rc == 0 ? (denied_in(file) == 2 ? "zero denied" : "not as expected")
                 : "not applied",
         "zero denied", "%s alone: /dev/zero EPERM, /dev/null still opens",
         what);
  if (rmdir(dir) < 0)
    printf("# rmdir %s: %s\n", dir, strerror(errno));
}

int main(void) {
  test_config();
  test_build();
  test_program();
  test_verifier();
  if (geteuid() != 0) {
    ok(0, "the layer tests run as root");
  } else {
    test_layer("v2 device program", &cg_driver_v2,
               access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0
                   ? "/sys/fs/cgroup"
                   : "/sys/fs/cgroup/unified",
               NULL, "cgroup.procs");
    if (access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0)
      printf("ok %d - # SKIP v1 devices layer: a pure cgroup2 host has none\n",
             ++tap_n);
    else
      test_layer("v1 devices cgroup", &cg_driver_v1, "/sys/fs/cgroup/devices",
                 "devices", "tasks");
  }
  return tap_done();
}
