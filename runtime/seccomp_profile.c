#include "seccomp_profile.h"

#include <ctype.h>
#include <errno.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "log.h"

struct coil_seccomp_profile {
  scmp_filter_ctx ctx;
};

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

static const struct {
  const char *name;
  enum scmp_filter_attr attr;
} filter_flags[] = {
    {"SECCOMP_FILTER_FLAG_TSYNC", SCMP_FLTATR_CTL_TSYNC},
    {"SECCOMP_FILTER_FLAG_LOG", SCMP_FLTATR_CTL_LOG},
    {"SECCOMP_FILTER_FLAG_SPEC_ALLOW", SCMP_FLTATR_CTL_SSB},
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
 * libseccomp decides which architectures exist. */
static int add_arch(scmp_filter_ctx ctx, const char *name, size_t i,
                    struct coil_error *err) {
  static const char prefix[] = "SCMP_ARCH_";
  char lower[32];
  uint32_t token = 0;
  if (strncmp(name, prefix, sizeof prefix - 1) == 0) {
    const char *suffix = name + sizeof prefix - 1;
    size_t n = strlen(suffix);
    if (n < sizeof lower) {
      for (size_t k = 0; k <= n; k++)
        lower[k] = (char)tolower((unsigned char)suffix[k]);
      token = seccomp_arch_resolve_name(lower);
    }
  }
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

int seccomp_profile_build(const struct coil_seccomp *cfg,
                          struct coil_seccomp_profile **out,
                          struct coil_error *err) {
  *out = NULL;
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

  /* coil sets no_new_privs itself when process.noNewPrivileges asks;
   * SYSRAWRC makes seccomp_load report the kernel's errno instead of
   * ECANCELED. */
  int rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
  if (rc == 0)
    rc = seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
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

  struct coil_seccomp_profile *p = calloc(1, sizeof *p);
  if (!p)
    return coil_error_sys(err, ENOMEM, "linux.seccomp");
  p->ctx = steal_ptr(ctx);
  *out = p;
  return 0;
}

int seccomp_profile_load(const struct coil_seccomp_profile *p,
                         struct coil_error *err) {
  int rc = seccomp_load(p->ctx);
  if (rc == -EACCES)
    return coil_error_set(err, EACCES,
                          "linux.seccomp: seccomp(SECCOMP_SET_MODE_FILTER): "
                          "%s (without no_new_privs this needs CAP_SYS_ADMIN)",
                          strerror(EACCES));
  if (rc < 0)
    return coil_error_sys(err, -rc,
                          "linux.seccomp: seccomp(SECCOMP_SET_MODE_FILTER)");
  return 0;
}

int seccomp_profile_export(const struct coil_seccomp_profile *p, int fd,
                           struct coil_error *err) {
  int rc = seccomp_export_bpf(p->ctx, fd);
  if (rc < 0)
    return coil_error_sys(err, -rc, "linux.seccomp: exporting the filter");
  return 0;
}

void seccomp_profile_free(struct coil_seccomp_profile *p) {
  if (!p)
    return;
  seccomp_release(p->ctx);
  free(p);
}
