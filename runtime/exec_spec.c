#include "exec_spec.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "log.h"

/* An id for setresuid/setresgid: (uint32_t)-1 means "unchanged" there. */
static bool parse_id(const char *s, size_t len, uint32_t *out) {
  if (len == 0 || len > 10)
    return false;
  uint64_t v = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      return false;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  if (v >= UINT32_MAX)
    return false;
  *out = (uint32_t)v;
  return true;
}

int exec_parse_user(const char *s, uint32_t *uid, uint32_t *gid,
                    struct coil_error *err) {
  const char *colon = strchr(s, ':');
  size_t ulen = colon ? (size_t)(colon - s) : strlen(s);
  uint32_t u, g = *gid;
  if (!parse_id(s, ulen, &u) ||
      (colon && !parse_id(colon + 1, strlen(colon + 1), &g)))
    return coil_error_set(err, EINVAL,
                          "--user \"%s\": expected UID[:GID], numbers below "
                          "4294967295",
                          s);
  *uid = u;
  *gid = g;
  return 0;
}

static int check_env(const char *kv, struct coil_error *err) {
  const char *eq = strchr(kv, '=');
  if (!eq || eq == kv)
    return coil_error_set(err, EINVAL, "--env \"%s\": expected NAME=VALUE", kv);
  return 0;
}

/* config env, then --env: putenv keeps the last value of a name, as runc. */
static int merge_env(const struct coil_process *cfg, const struct exec_flags *f,
                     struct exec_spec *s, struct coil_error *err) {
  for (size_t i = 0; i < f->n_env; i++)
    if (check_env(f->env[i], err) < 0)
      return -1;
  size_t n = cfg->env.n + f->n_env;
  s->env = calloc(n + 1, sizeof *s->env);
  if (!s->env)
    return coil_error_sys(err, ENOMEM, "--env");
  for (size_t i = 0; i < cfg->env.n; i++)
    s->env[i] = cfg->env.v[i];
  for (size_t i = 0; i < f->n_env; i++)
    s->env[cfg->env.n + i] = (char *)f->env[i];
  s->p.env = (struct coil_strv){.v = s->env, .n = n};
  return 0;
}

static int merge_gids(const struct coil_process *cfg,
                      const struct exec_flags *f, struct exec_spec *s,
                      struct coil_error *err) {
  if (f->n_gids == 0)
    return 0;
  size_t n = cfg->n_additional_gids + f->n_gids;
  s->gids = calloc(n, sizeof *s->gids);
  if (!s->gids)
    return coil_error_sys(err, ENOMEM, "--additional-gids");
  for (size_t i = 0; i < cfg->n_additional_gids; i++)
    s->gids[i] = cfg->additional_gids[i];
  for (size_t i = 0; i < f->n_gids; i++)
    if (!parse_id(f->gids[i], strlen(f->gids[i]),
                  &s->gids[cfg->n_additional_gids + i]))
      return coil_error_set(err, EINVAL,
                            "--additional-gids \"%s\": expected a number below "
                            "4294967295",
                            f->gids[i]);
  s->p.additional_gids = s->gids;
  s->p.n_additional_gids = n;
  return 0;
}

/* As runc: each --cap joins the bounding, effective and permitted sets,
 * and the ambient set when the config has an inheritable set holding it
 * (the kernel keeps ambient within inheritable). */
static int add_caps(const struct coil_process *cfg, const struct exec_flags *f,
                    struct coil_caps *caps, struct coil_error *err) {
  for (size_t i = 0; i < f->n_caps; i++) {
    int v = caps_number(f->caps[i]);
    if (v < 0)
      return coil_error_set(err, EINVAL, "--cap \"%s\": unknown capability",
                            f->caps[i]);
    uint64_t bit = 1ULL << v;
    caps->configured = true;
    caps->sets[COIL_CAP_BOUNDING] |= bit;
    caps->sets[COIL_CAP_EFFECTIVE] |= bit;
    caps->sets[COIL_CAP_PERMITTED] |= bit;
    if (cfg->has_caps[COIL_CAP_INHERITABLE] &&
        (caps->sets[COIL_CAP_INHERITABLE] & bit))
      caps->sets[COIL_CAP_AMBIENT] |= bit;
  }
  return 0;
}

static void warn_lsm(const char *field, const char *value, const char *what) {
  if (value)
    log_warn("%s \"%s\": %s are not applied by coil; ignored", field, value,
             what);
}

static int from_flags(const struct coil_process *cfg,
                      const struct exec_flags *f, struct exec_spec *s,
                      struct coil_error *err) {
  if (f->n_args == 0)
    return coil_error_set(err, EINVAL, "exec args cannot be empty");
  s->p = *cfg;
  s->p.args = (struct coil_strv){.v = f->args, .n = f->n_args};
  /* As runc: a terminal only when asked for on the command line. */
  s->p.terminal = f->tty;
  if (f->cwd) {
    if (f->cwd[0] != '/')
      return coil_error_set(err, EINVAL,
                            "--cwd \"%s\": must be an absolute path", f->cwd);
    s->p.cwd = (char *)f->cwd;
  }
  if (f->user && exec_parse_user(f->user, &s->p.uid, &s->p.gid, err) < 0)
    return -1;
  if (merge_env(cfg, f, s, err) < 0 || merge_gids(cfg, f, s, err) < 0)
    return -1;
  if (f->no_new_privs)
    s->p.no_new_privileges = true;
  warn_lsm("--apparmor", f->apparmor, "AppArmor profiles");
  warn_lsm("--process-label", f->label, "SELinux labels");
  if (caps_parse(&s->p, &s->caps, err) < 0 ||
      add_caps(cfg, f, &s->caps, err) < 0)
    return -1;
  return 0;
}

/* The flags --process replaces (runc ignores them there too). */
static void warn_ignored(const struct exec_flags *f) {
  const struct {
    bool given;
    const char *name;
  } flags[] = {{f->n_args > 0, "the command"},
               {f->tty, "--tty"},
               {f->cwd, "--cwd"},
               {f->n_env > 0, "--env"},
               {f->user, "--user"},
               {f->n_gids > 0, "--additional-gids"},
               {f->n_caps > 0, "--cap"},
               {f->no_new_privs, "--no-new-privs"},
               {f->apparmor, "--apparmor"},
               {f->label, "--process-label"}};
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
    if (flags[i].given)
      log_warn("exec: %s is ignored with --process", flags[i].name);
}

/* As runc: the file is the whole process; what it leaves out of
 * capabilities, rlimits and the LSM labels comes from the config. */
static int from_file(const struct coil_process *cfg, const struct exec_flags *f,
                     struct exec_spec *s, struct coil_error *err) {
  warn_ignored(f);
  cleanup_free char *buf = NULL;
  size_t len = 0;
  if (config_read_file(f->process_file, &buf, &len, err) < 0)
    return coil_error_prefix(err, "--process");
  cleanup_free char *name = NULL;
  if (asprintf(&name, "--process %s", f->process_file) < 0)
    return coil_error_sys(err, ENOMEM, "--process");
  if (config_parse_process(buf, len, name, &s->file, err) < 0)
    return -1;
  s->p = s->file;
  warn_lsm("process.apparmorProfile", s->p.apparmor_profile,
           "AppArmor profiles");
  warn_lsm("process.selinuxLabel", s->p.selinux_label, "SELinux labels");
  if (!s->p.has_capabilities) {
    s->p.has_capabilities = cfg->has_capabilities;
    memcpy(s->p.has_caps, cfg->has_caps, sizeof s->p.has_caps);
    memcpy(s->p.caps, cfg->caps, sizeof s->p.caps);
  }
  if (s->p.n_rlimits == 0) {
    s->p.rlimits = cfg->rlimits;
    s->p.n_rlimits = cfg->n_rlimits;
  }
  if (caps_parse(&s->p, &s->caps, err) < 0)
    return coil_error_prefix(err, "--process %s", f->process_file);
  return 0;
}

int exec_spec_build(const struct coil_process *cfg, const struct exec_flags *f,
                    struct exec_spec *out, struct coil_error *err) {
  *out = (struct exec_spec){0};
  int r = f->process_file ? from_file(cfg, f, out, err)
                          : from_flags(cfg, f, out, err);
  if (r == 0 && rlimits_parse(&out->p, &out->rlimits, err) < 0)
    r = f->process_file
            ? coil_error_prefix(err, "--process %s", f->process_file)
            : -1;
  if (r < 0)
    exec_spec_free(out);
  return r;
}

void exec_spec_free(struct exec_spec *s) {
  config_process_free(&s->file);
  free(s->env);
  free(s->gids);
  *s = (struct exec_spec){0};
}
