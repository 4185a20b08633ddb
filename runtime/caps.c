#include "caps.h"

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "log.h"

/* Capability numbers are below 64: the sets are uint64_t bit masks. */
#define CAP_NUMBERS 64

static const char *const set_names[COIL_CAP_SET_COUNT] = {
    [COIL_CAP_BOUNDING] = "bounding",       [COIL_CAP_EFFECTIVE] = "effective",
    [COIL_CAP_INHERITABLE] = "inheritable", [COIL_CAP_PERMITTED] = "permitted",
    [COIL_CAP_AMBIENT] = "ambient",
};

/* The sets capset(2) takes, and libcap's flag for each. */
static const struct {
  enum coil_cap_set set;
  cap_flag_t flag;
} proc_sets[] = {
    {COIL_CAP_EFFECTIVE, CAP_EFFECTIVE},
    {COIL_CAP_PERMITTED, CAP_PERMITTED},
    {COIL_CAP_INHERITABLE, CAP_INHERITABLE},
};

static void cap_freep(cap_t *c) {
  if (*c)
    cap_free(*c);
}
#define cleanup_cap __attribute__((cleanup(cap_freep)))

/* cap_from_name also accepts numbers and ignores trailing text such as
 * "cap_chown+ep", so a name counts only if it round-trips exactly. */
static int cap_lookup(const char *name) {
  cap_value_t v;
  if (strncasecmp(name, "CAP_", 4) != 0 || cap_from_name(name, &v) < 0)
    return -1;
  char *canon = cap_to_name(v);
  bool same = canon && strcasecmp(canon, name) == 0;
  cap_free(canon);
  return same ? v : -1;
}

/* "CAP_NET_RAW" for messages; libcap spells names in lower case. */
static const char *cap_upper(cap_value_t v, char *buf, size_t len) {
  char *name = cap_to_name(v);
  snprintf(buf, len, "%s", name ? name : "?");
  cap_free(name);
  for (char *c = buf; *c; c++)
    *c = (char)toupper((unsigned char)*c);
  return buf;
}

static int lowest_cap(uint64_t mask) { return __builtin_ctzll(mask); }

/* The kernel's capset rules as config checks, so they fail in the parent
 * with the field named instead of as EPERM in the child. */
static int check_subset(const struct coil_caps *c, enum coil_cap_set set,
                        enum coil_cap_set of, struct coil_error *err) {
  uint64_t extra = c->sets[set] & ~c->sets[of];
  if (!extra)
    return 0;
  char name[32];
  return coil_error_set(err, EINVAL,
                        "process.capabilities.%s: %s is not in "
                        "process.capabilities.%s",
                        set_names[set],
                        cap_upper(lowest_cap(extra), name, sizeof name),
                        set_names[of]);
}

void caps_each_name(void (*fn)(const char *name, void *arg), void *arg) {
  for (cap_value_t v = 0; v < CAP_NUMBERS; v++) {
    char name[32];
    /* libcap spells a number it has no name for as digits. */
    if (cap_lookup(cap_upper(v, name, sizeof name)) == v)
      fn(name, arg);
  }
}

int caps_number(const char *name) {
  int v = cap_lookup(name);
  return v >= 0 && v < cap_max_bits() && v < CAP_NUMBERS ? v : -1;
}

int caps_parse(const struct coil_process *p, struct coil_caps *out,
               struct coil_error *err) {
  memset(out, 0, sizeof *out);
  out->configured = p->has_capabilities;
  if (!p->has_capabilities)
    return 0;
  cap_value_t max = cap_max_bits();
  for (int set = 0; set < COIL_CAP_SET_COUNT; set++) {
    for (size_t i = 0; i < p->caps[set].n; i++) {
      const char *name = p->caps[set].v[i];
      int v = cap_lookup(name);
      /* The runtime spec: a value that cannot be mapped to the kernel
       * MUST be an error. A known name newer than the running kernel is
       * only warned about, as runc does. */
      if (v < 0)
        return coil_error_set(err, EINVAL,
                              "process.capabilities.%s[%zu]: unknown "
                              "capability \"%s\"",
                              set_names[set], i, name);
      if (v >= max || v >= CAP_NUMBERS) {
        log_warn("process.capabilities.%s[%zu]: %s is not supported by the "
                 "running kernel, ignored",
                 set_names[set], i, name);
        continue;
      }
      out->sets[set] |= 1ULL << v;
    }
  }
  if (check_subset(out, COIL_CAP_EFFECTIVE, COIL_CAP_PERMITTED, err) < 0 ||
      check_subset(out, COIL_CAP_AMBIENT, COIL_CAP_PERMITTED, err) < 0 ||
      check_subset(out, COIL_CAP_AMBIENT, COIL_CAP_INHERITABLE, err) < 0)
    return -1;
  return 0;
}

/* After setuid with PR_SET_KEEPCAPS the permitted set survives but the
 * effective set is empty, and dropping from the bounding set needs
 * CAP_SETPCAP effective: make effective = permitted first. This raises
 * nothing the process does not already hold. */
static int raise_effective(struct coil_error *err) {
  cleanup_cap cap_t cur = cap_get_proc();
  if (!cur)
    return coil_error_sys(err, errno, "process.capabilities: capget");
  if (cap_fill(cur, CAP_EFFECTIVE, CAP_PERMITTED) < 0 || cap_set_proc(cur) < 0)
    return coil_error_sys(
        err, errno, "process.capabilities: capset (effective = permitted)");
  return 0;
}

/* Capabilities already out of the bounding set are left alone: dropping
 * needs CAP_SETPCAP even for those. */
static int drop_bounding(uint64_t keep, struct coil_error *err) {
  for (cap_value_t v = 0; v < CAP_NUMBERS; v++) {
    int in = cap_get_bound(v);
    /* PR_CAPBSET_READ fails only with EINVAL, past the kernel's last
     * capability; numbers are dense, so every later one is past it too. */
    if (in < 0)
      return 0;
    if (in == 0 || (keep & (1ULL << v)) || cap_drop_bound(v) == 0)
      continue;
    int e = errno;
    char name[32];
    return coil_error_sys(
        err, e, "process.capabilities.bounding: prctl(PR_CAPBSET_DROP, %s)",
        cap_upper(v, name, sizeof name));
  }
  return 0;
}

static uint64_t proc_mask(cap_t c, cap_flag_t flag) {
  uint64_t mask = 0;
  cap_flag_value_t on;
  for (cap_value_t v = 0; v < CAP_NUMBERS; v++)
    if (cap_get_flag(c, v, flag, &on) == 0 && on == CAP_SET)
      mask |= 1ULL << v;
  return mask;
}

static uint64_t bounding_mask(void) {
  uint64_t mask = 0;
  for (cap_value_t v = 0; v < CAP_NUMBERS; v++)
    if (cap_get_bound(v) > 0)
      mask |= 1ULL << v;
  return mask;
}

/* capset(2) names no culprit: find the capability the kernel refused, by
 * its rules: the new permitted set within the old one, the new inheritable
 * set within the old one plus the bounding set and (without CAP_SETPCAP)
 * plus the old permitted set. */
static int capset_error(const uint64_t *sets, int e, struct coil_error *err) {
  cleanup_cap cap_t cur = cap_get_proc();
  if (e != EPERM || !cur)
    return coil_error_sys(err, e, "process.capabilities: capset");
  uint64_t held = proc_mask(cur, CAP_PERMITTED);
  uint64_t inh = proc_mask(cur, CAP_INHERITABLE);
  const struct {
    enum coil_cap_set set;
    uint64_t allowed;
    const char *why;
  } rules[] = {
      {COIL_CAP_PERMITTED, held, "coil's own permitted set"},
      {COIL_CAP_INHERITABLE, inh | bounding_mask(),
       "process.capabilities.bounding"},
      {COIL_CAP_INHERITABLE, inh | held, "coil's own permitted set"},
  };
  for (size_t k = 0; k < sizeof rules / sizeof rules[0]; k++) {
    uint64_t extra = sets[rules[k].set] & ~rules[k].allowed;
    char name[32];
    if (extra)
      return coil_error_set(
          err, e, "process.capabilities.%s: capset: %s is not in %s",
          set_names[rules[k].set],
          cap_upper(lowest_cap(extra), name, sizeof name), rules[k].why);
  }
  return coil_error_sys(err, e, "process.capabilities: capset");
}

static int set_proc(const uint64_t *sets, struct coil_error *err) {
  cleanup_cap cap_t caps = cap_init();
  if (!caps)
    return coil_error_sys(err, errno, "process.capabilities: cap_init");
  for (size_t k = 0; k < sizeof proc_sets / sizeof proc_sets[0]; k++) {
    for (cap_value_t v = 0; v < CAP_NUMBERS; v++) {
      if (!(sets[proc_sets[k].set] & (1ULL << v)))
        continue;
      if (cap_set_flag(caps, proc_sets[k].flag, 1, &v, CAP_SET) < 0) {
        int e = errno;
        char name[32];
        return coil_error_sys(err, e, "process.capabilities.%s: %s",
                              set_names[proc_sets[k].set],
                              cap_upper(v, name, sizeof name));
      }
    }
  }
  if (cap_set_proc(caps) < 0)
    return capset_error(sets, errno, err);
  return 0;
}

static int set_ambient(uint64_t ambient, struct coil_error *err) {
  /* One prctl: libcap's cap_reset_ambient first probes every capability
   * with PR_CAP_AMBIENT_IS_SET, about forty system calls per process. */
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
    return coil_error_sys(err, errno,
                          "process.capabilities.ambient: "
                          "prctl(PR_CAP_AMBIENT_CLEAR_ALL)");
  for (cap_value_t v = 0; v < CAP_NUMBERS; v++) {
    if (!(ambient & (1ULL << v)) || cap_set_ambient(v, CAP_SET) == 0)
      continue;
    int e = errno;
    char name[32];
    return coil_error_sys(err, e,
                          "process.capabilities.ambient: "
                          "prctl(PR_CAP_AMBIENT_RAISE, %s)",
                          cap_upper(v, name, sizeof name));
  }
  return 0;
}

static const uint64_t *configured_sets(const struct coil_caps *c) {
  static const uint64_t none[COIL_CAP_SET_COUNT];
  return c->configured ? c->sets : none;
}

int caps_drop_bounding(const struct coil_caps *c, struct coil_error *err) {
  if (raise_effective(err) < 0 ||
      drop_bounding(configured_sets(c)[COIL_CAP_BOUNDING], err) < 0)
    return -1;
  return 0;
}

int caps_apply(const struct coil_caps *c, bool bounding_dropped,
               struct coil_error *err) {
  const uint64_t *sets = configured_sets(c);
  if (raise_effective(err) < 0 ||
      (!bounding_dropped && drop_bounding(sets[COIL_CAP_BOUNDING], err) < 0) ||
      set_proc(sets, err) < 0)
    return -1;
  /* Last: the kernel only keeps ambient capabilities that are both
   * permitted and inheritable, so those sets must be final. */
  return set_ambient(sets[COIL_CAP_AMBIENT], err);
}

int caps_switch_ids(uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups,
                    struct coil_error *err) {
  /* The kernel clears the parent-death signal when the ids change. */
  int pdeath = 0;
  if (prctl(PR_GET_PDEATHSIG, &pdeath) < 0)
    return coil_error_sys(err, errno, "prctl(PR_GET_PDEATHSIG)");
  if (prctl(PR_SET_KEEPCAPS, 1) < 0)
    return coil_error_sys(err, errno, "prctl(PR_SET_KEEPCAPS)");
  if (setgroups(n_groups, groups) < 0)
    return coil_error_sys(err, errno, "process.user.additionalGids: setgroups");
  if (setresgid(gid, gid, gid) < 0)
    return coil_error_sys(err, errno, "process.user.gid: setresgid(%u)", gid);
  if (setresuid(uid, uid, uid) < 0)
    return coil_error_sys(err, errno, "process.user.uid: setresuid(%u)", uid);
  if (prctl(PR_SET_KEEPCAPS, 0) < 0)
    return coil_error_sys(err, errno, "prctl(PR_SET_KEEPCAPS)");
  if (pdeath && prctl(PR_SET_PDEATHSIG, pdeath) < 0)
    return coil_error_sys(err, errno, "prctl(PR_SET_PDEATHSIG)");
  return 0;
}
