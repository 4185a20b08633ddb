/* Device rules to the kernel's form, and that form to v1 lines and to a
 * cgroup v2 device program (device_policy.h). */
#include "device_policy.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* runc's defaults (and crun's, which add 5:1 as coil does): mknod of any
 * char or block node, so an image's /dev can be populated, and rwm of the
 * nodes every container expects. runc and crun also allow /dev/net/tun
 * (10:200); coil leaves it to a config rule or a linux.devices entry. */
static const struct dev_rule default_rules[] = {
    {'c', DEV_ANY, DEV_ANY, DEV_MKNOD, true, DEV_SRC_DEFAULT, 0},
    {'b', DEV_ANY, DEV_ANY, DEV_MKNOD, true, DEV_SRC_DEFAULT, 0},
    {'c', 1, 3, DEV_RWM, true, DEV_SRC_DEFAULT, 0},         /* null */
    {'c', 1, 5, DEV_RWM, true, DEV_SRC_DEFAULT, 0},         /* zero */
    {'c', 1, 7, DEV_RWM, true, DEV_SRC_DEFAULT, 0},         /* full */
    {'c', 1, 8, DEV_RWM, true, DEV_SRC_DEFAULT, 0},         /* random */
    {'c', 1, 9, DEV_RWM, true, DEV_SRC_DEFAULT, 0},         /* urandom */
    {'c', 5, 0, DEV_RWM, true, DEV_SRC_DEFAULT, 0},         /* tty */
    {'c', 5, 1, DEV_RWM, true, DEV_SRC_DEFAULT, 0},         /* console */
    {'c', 5, 2, DEV_RWM, true, DEV_SRC_DEFAULT, 0},         /* ptmx */
    {'c', 136, DEV_ANY, DEV_RWM, true, DEV_SRC_DEFAULT, 0}, /* pts */
};
#define N_DEFAULT (sizeof default_rules / sizeof default_rules[0])

static int no_memory(struct coil_error *err) {
  return coil_error_sys(err, ENOMEM, "device rules");
}

static unsigned parse_access(const char *s) {
  unsigned a = 0;
  for (; *s; s++)
    a |= *s == 'r'   ? DEV_READ
         : *s == 'w' ? DEV_WRITE
         : *s == 'm' ? DEV_MKNOD
                     : 0;
  return a;
}

/* A device number for a rule: absent or -1 is any; the kernel's are 32-bit
 * (the v1 parser and the program's context both). */
static int rule_number(bool has, int64_t v, const char *list, size_t i,
                       const char *key, int64_t *out, struct coil_error *err) {
  if (!has || v == -1) {
    *out = DEV_ANY;
    return 0;
  }
  if (v < 0 || v > UINT32_MAX)
    return coil_error_set(err, EINVAL,
                          "%s[%zu].%s: %" PRId64 " is not a device number",
                          list, i, key, v);
  *out = v;
  return 0;
}

static int rules_for_config(const struct coil_linux *l, struct dev_rule **out,
                            size_t *n, struct coil_error *err) {
  const struct coil_resources *res = l->has_resources ? &l->resources : NULL;
  size_t n_cfg = res ? res->n_devices : 0;
  struct dev_rule *v = calloc(n_cfg + N_DEFAULT + l->n_devices + 1, sizeof *v);
  if (!v)
    return no_memory(err);
  size_t k = 0;
  for (size_t i = 0; i < n_cfg; i++) {
    const struct coil_device_rule *c = &res->devices[i];
    struct dev_rule *r = &v[k++];
    *r = (struct dev_rule){.type = c->type ? c->type[0] : 'a',
                           .access = parse_access(c->access),
                           .allow = c->allow,
                           .src = DEV_SRC_CONFIG,
                           .idx = i};
    if (rule_number(c->has_major, c->major, "linux.resources.devices", i,
                    "major", &r->major, err) < 0 ||
        rule_number(c->has_minor, c->minor, "linux.resources.devices", i,
                    "minor", &r->minor, err) < 0) {
      free(v);
      return -1;
    }
  }
  for (size_t i = 0; i < N_DEFAULT; i++)
    v[k++] = default_rules[i];
  for (size_t i = 0; i < l->n_devices; i++) {
    const struct coil_device *d = &l->devices[i];
    /* A fifo is no device to the cgroup; "u" is an unbuffered char node. */
    if (!strcmp(d->type, "p"))
      continue;
    struct dev_rule *r = &v[k++];
    *r = (struct dev_rule){.type = d->type[0] == 'b' ? 'b' : 'c',
                           .access = DEV_RWM,
                           .allow = true,
                           .src = DEV_SRC_NODE,
                           .idx = i};
    if (rule_number(true, d->major, "linux.devices", i, "major", &r->major,
                    err) < 0 ||
        rule_number(true, d->minor, "linux.devices", i, "minor", &r->minor,
                    err) < 0) {
      free(v);
      return -1;
    }
  }
  *out = v;
  *n = k;
  return 0;
}

static void format_number(char *buf, size_t cap, int64_t v) {
  if (v == DEV_ANY)
    snprintf(buf, cap, "*");
  else
    snprintf(buf, cap, "%" PRId64, v);
}

/* "c 1:3 rwm": the kernel's v1 line, also used in messages. */
static void format_rule(char *buf, size_t cap, char type, int64_t major,
                        int64_t minor, unsigned access) {
  char ma[24], mi[24];
  format_number(ma, sizeof ma, major);
  format_number(mi, sizeof mi, minor);
  snprintf(buf, cap, "%c %s:%s %s%s%s", type, ma, mi,
           access & DEV_READ ? "r" : "", access & DEV_WRITE ? "w" : "",
           access & DEV_MKNOD ? "m" : "");
}

static void describe(char *buf, size_t cap, const struct dev_rule *r) {
  char text[64];
  switch (r->src) {
  case DEV_SRC_CONFIG:
    snprintf(buf, cap, "linux.resources.devices[%zu]", r->idx);
    break;
  case DEV_SRC_NODE:
    snprintf(buf, cap, "linux.devices[%zu]", r->idx);
    break;
  case DEV_SRC_DEFAULT:
    format_rule(text, sizeof text, r->type, r->major, r->minor, r->access);
    snprintf(buf, cap, "the default device rule \"%s\"", text);
    break;
  }
}

/* outer matches every device inner does. */
static bool num_covers(int64_t outer, int64_t inner) {
  return outer == DEV_ANY || outer == inner;
}
static bool covers(const struct dev_rule *outer, const struct dev_rule *inner) {
  return outer->type == inner->type && num_covers(outer->major, inner->major) &&
         num_covers(outer->minor, inner->minor);
}
/* Some device matches both. */
static bool num_meets(int64_t a, int64_t b) {
  return a == DEV_ANY || b == DEV_ANY || a == b;
}
static bool overlaps(const struct dev_rule *a, const struct dev_rule *b) {
  return a->type == b->type && num_meets(a->major, b->major) &&
         num_meets(a->minor, b->minor);
}

/* Rule key (of type 'c' or 'b') with r's verdict and access, into p. */
static int apply(struct dev_policy *p, const struct dev_rule *key,
                 const struct dev_rule *r, struct coil_error *err) {
  if (r->allow == p->default_allow) {
    /* Takes its bits back from the exceptions it covers. One it only
     * overlaps would still decide some of its devices. */
    size_t k = 0;
    for (size_t i = 0; i < p->n; i++) {
      struct dev_rule *e = &p->ex[i];
      if ((e->access & key->access) && overlaps(key, e)) {
        if (!covers(key, e)) {
          char who[96], ours[64], theirs[64];
          describe(who, sizeof who, r);
          format_rule(ours, sizeof ours, key->type, key->major, key->minor,
                      key->access);
          format_rule(theirs, sizeof theirs, e->type, e->major, e->minor,
                      e->access);
          return coil_error_set(err, EINVAL,
                                "%s: cannot %s \"%s\" within the earlier "
                                "wider rule \"%s\" (the devices cgroup cannot "
                                "express it)",
                                who, r->allow ? "allow" : "deny", ours, theirs);
        }
        e->access &= ~key->access;
      }
      if (e->access)
        p->ex[k++] = *e;
    }
    p->n = k;
    return 0;
  }
  /* A request is checked against one exception at a time: each gets the
   * read and write bits of the exceptions covering it, so bits granted by
   * different rules still add up for one device (an open asks for both).
   * Mknod is always asked alone, so a wider rule's m already answers it:
   * it is not copied, and each exception stays the rule as written (as
   * runc and crun write them, and as the conformance suite reads them). */
  unsigned access = key->access;
  for (size_t i = 0; i < p->n; i++)
    if (covers(&p->ex[i], key))
      access |= p->ex[i].access & ~DEV_MKNOD;
  bool exact = false;
  for (size_t i = 0; i < p->n; i++) {
    struct dev_rule *e = &p->ex[i];
    bool same = covers(e, key) && covers(key, e);
    if (same)
      e->access |= access;
    else if (covers(key, e))
      e->access |= key->access & ~DEV_MKNOD;
    exact |= same;
  }
  if (exact)
    return 0;
  struct dev_rule *grown = reallocarray(p->ex, p->n + 1, sizeof *grown);
  if (!grown)
    return no_memory(err);
  p->ex = grown;
  p->ex[p->n] = *key;
  p->ex[p->n].access = access;
  p->ex[p->n].allow = !p->default_allow;
  p->n++;
  return 0;
}

/* Everything allowed or denied, in p's representation: under the other
 * default, by a full exception for each type. */
static int reset(struct dev_policy *p, bool allow, struct coil_error *err) {
  p->n = 0;
  if (allow == p->default_allow)
    return 0;
  struct dev_rule *v = reallocarray(p->ex, 2, sizeof *v);
  if (!v)
    return no_memory(err);
  p->ex = v;
  static const char both[] = {'c', 'b'};
  for (size_t t = 0; t < 2; t++)
    p->ex[p->n++] = (struct dev_rule){.type = both[t],
                                      .major = DEV_ANY,
                                      .minor = DEV_ANY,
                                      .access = DEV_RWM,
                                      .allow = allow};
  return 0;
}

static int build(const struct dev_rule *rules, size_t n, bool default_allow,
                 struct dev_policy *out, struct coil_error *err) {
  *out = (struct dev_policy){.default_allow = default_allow};
  if (reset(out, false, err) < 0)
    return -1;
  for (size_t i = 0; i < n; i++) {
    const struct dev_rule *r = &rules[i];
    if (!r->access)
      continue;
    if (r->type == 'a' && r->major == DEV_ANY && r->minor == DEV_ANY &&
        r->access == DEV_RWM) {
      if (reset(out, r->allow, err) < 0)
        return -1;
      continue;
    }
    static const char both[] = {'c', 'b'};
    for (size_t t = 0; t < sizeof both; t++) {
      if (r->type != 'a' && r->type != both[t])
        continue;
      struct dev_rule key = *r;
      key.type = both[t];
      if (apply(out, &key, r, err) < 0)
        return -1;
    }
  }
  return 0;
}

int dev_policy_build(const struct dev_rule *rules, size_t n,
                     struct dev_policy *out, struct coil_error *err) {
  /* Default deny first: a v1 cgroup below a restricted parent can take no
   * other. A hole in a wildcard allow is a plain exception under default
   * allow (and the reverse), so a rule list one cannot express the other
   * may. */
  if (build(rules, n, false, out, err) == 0)
    return 0;
  dev_policy_free(out);
  struct coil_error second;
  if (build(rules, n, true, out, &second) == 0)
    return 0;
  dev_policy_free(out);
  return -1;
}

void dev_policy_free(struct dev_policy *p) {
  free(p->ex);
  *p = (struct dev_policy){0};
}

int dev_policy_for_config(const struct coil_linux *l, struct dev_policy *out,
                          struct coil_error *err) {
  *out = (struct dev_policy){0};
  struct dev_rule *rules = NULL;
  size_t n = 0;
  if (rules_for_config(l, &rules, &n, err) < 0)
    return -1;
  int r = dev_policy_build(rules, n, out, err);
  free(rules);
  return r;
}

int dev_policy_v1(const struct dev_policy *p, struct dev_v1_write **out,
                  size_t *n, struct coil_error *err) {
  static const char deny[] = "devices.deny", allow[] = "devices.allow";
  struct dev_v1_write *w = calloc(p->n + 1, sizeof *w);
  if (!w)
    return no_memory(err);
  w[0].file = p->default_allow ? allow : deny;
  snprintf(w[0].line, sizeof w[0].line, "a");
  for (size_t i = 0; i < p->n; i++) {
    const struct dev_rule *e = &p->ex[i];
    w[i + 1].file = p->default_allow ? deny : allow;
    format_rule(w[i + 1].line, sizeof w[i + 1].line, e->type, e->major,
                e->minor, e->access);
  }
  *out = w;
  *n = p->n + 1;
  return 0;
}

/* ---- the cgroup v2 device program ---------------------------------------
 * r1 = context; r2 = device type, r3 = requested access, r4 = major,
 * r5 = minor; r0 = 1 allows, 0 denies. One block per exception, each
 * falling through to the next when it does not match. */

static struct bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off,
                            int32_t imm) {
  return (struct bpf_insn){
      .code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm};
}

/* Compares the low 32 bits, so majors and minors up to UINT32_MAX work. */
static struct bpf_insn jne_imm(uint8_t reg, uint32_t v) {
  return insn(BPF_JMP32 | BPF_JNE | BPF_K, reg, 0, 0, (int32_t)v);
}

static void add_verdict(struct bpf_insn *v, size_t *k, bool allow) {
  v[(*k)++] = insn(BPF_ALU | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, allow);
  v[(*k)++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

#define PROLOGUE_LEN 6
#define BLOCK_MAX 8

int dev_policy_bpf(const struct dev_policy *p, struct bpf_insn **out, size_t *n,
                   struct coil_error *err) {
  struct bpf_insn *v = calloc(PROLOGUE_LEN + BLOCK_MAX * p->n + 2, sizeof *v);
  if (!v)
    return no_memory(err);
  size_t k = 0;
  v[k++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1,
                offsetof(struct bpf_cgroup_dev_ctx, access_type), 0);
  v[k++] = insn(BPF_ALU | BPF_MOV | BPF_X, BPF_REG_3, BPF_REG_2, 0, 0);
  v[k++] = insn(BPF_ALU | BPF_RSH | BPF_K, BPF_REG_3, 0, 0, 16);
  v[k++] = insn(BPF_ALU | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff);
  v[k++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_4, BPF_REG_1,
                offsetof(struct bpf_cgroup_dev_ctx, major), 0);
  v[k++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_5, BPF_REG_1,
                offsetof(struct bpf_cgroup_dev_ctx, minor), 0);
  for (size_t i = 0; i < p->n; i++) {
    const struct dev_rule *e = &p->ex[i];
    size_t jumps[4], nj = 0;
    jumps[nj++] = k;
    v[k++] = jne_imm(BPF_REG_2,
                     e->type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR);
    if (e->major != DEV_ANY) {
      jumps[nj++] = k;
      v[k++] = jne_imm(BPF_REG_4, (uint32_t)e->major);
    }
    if (e->minor != DEV_ANY) {
      jumps[nj++] = k;
      v[k++] = jne_imm(BPF_REG_5, (uint32_t)e->minor);
    }
    v[k++] = insn(BPF_ALU | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_3, 0, 0);
    v[k++] =
        insn(BPF_ALU | BPF_AND | BPF_K, BPF_REG_1, 0, 0, (int32_t)e->access);
    jumps[nj++] = k;
    if (p->default_allow) /* deny when any requested bit is listed */
      v[k++] = insn(BPF_JMP32 | BPF_JEQ | BPF_K, BPF_REG_1, 0, 0, 0);
    else /* allow when every requested bit is */
      v[k++] = insn(BPF_JMP32 | BPF_JNE | BPF_X, BPF_REG_1, BPF_REG_3, 0, 0);
    add_verdict(v, &k, !p->default_allow);
    for (size_t j = 0; j < nj; j++)
      v[jumps[j]].off = (int16_t)(k - jumps[j] - 1);
  }
  add_verdict(v, &k, p->default_allow);
  *out = v;
  *n = k;
  return 0;
}
