#include "python_setup.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "layers.h"
#include "log.h"
#include "memory_bound.h"
#include "python_load.h"
#include "readall.h"

static int read_code(const char *bundle, const char *path, char **out,
                     size_t *len, struct coil_error *err) {
  cleanup_free char *full = NULL;
  if (asprintf(&full, "%s%s%s", path[0] == '/' ? "" : bundle,
               path[0] == '/' ? "" : "/", path) < 0)
    return coil_error_sys(err, ENOMEM, "sandbox.python.code");
  cleanup_close int fd = open(full, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return coil_error_sys(err, errno, "sandbox.python.code: open %s", full);
  struct stat sb;
  if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode))
    return coil_error_set(err, EINVAL, "sandbox.python.code: %s is not a file",
                          full);
  if (read_all(fd, PY_CODE_READ_MAX, false, out, len, err) < 0)
    return coil_error_prefix(err, "sandbox.python.code: %s", full);
  return 0;
}

static char *dup_bytes(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

static int cpu_limit_of(const struct coil_process *p) {
  for (size_t i = 0; i < p->n_rlimits; i++)
    if (strcmp(p->rlimits[i].type, "RLIMIT_CPU") == 0)
      return (int)p->rlimits[i].soft;
  return 0;
}

int python_setup_prepare(void *arg, struct coil_config *cfg, const char *bundle,
                         const char *rootfs, struct coil_payload *p,
                         struct coil_error *err) {
  struct python_setup *out = arg;
  const struct coil_py_override *ov = out->ov;
  memset(p, 0, sizeof *p);
  *out = (struct python_setup){.ov = ov};
  const struct coil_sandbox *sb = &cfg->sandbox;
  if (!sb->has_python)
    return ov ? coil_error_set(err, EINVAL,
                               "sandbox.python: the bundle is not a Python "
                               "sandbox bundle")
              : 0;
  /* Here, in the process init is cloned from: init inherits the mapping,
   * and after its pivot_root the host's path is gone. */
  const struct python_api *py = python_load(err);
  if (!py)
    return coil_error_prefix(err, "sandbox.python");
  size_t code_len = 0;
  if (ov && ov->code) {
    out->code = dup_bytes(ov->code, ov->code_len);
    code_len = ov->code_len;
    out->code_name = strdup(ov->code_name ? ov->code_name : "<string>");
  } else {
    if (read_code(bundle, sb->python_code, &out->code, &code_len, err) < 0)
      return -1;
    cleanup_free char *copy = strdup(sb->python_code);
    out->code_name = copy ? strdup(basename(copy)) : NULL;
  }
  const char *entry = sb->python_entry;
  if (ov && ov->entry)
    entry = ov->entry;
  if (ov && ov->script)
    entry = NULL;
  out->entry = entry ? strdup(entry) : NULL;
  if (ov && ov->memory > 0) {
    cfg->lnx.has_resources = true;
    cfg->lnx.resources.has_memory_limit = true;
    cfg->lnx.resources.memory_limit = ov->memory;
    /* No swap beyond the limit: the cap is the cap. */
    cfg->lnx.resources.has_memory_swap = true;
    cfg->lnx.resources.memory_swap = ov->memory;
  }
  unsigned disabled = layers_disabled(sb);
  /* From the memory limit the cgroup gets, before the cgroup layer's switch
   * strips it: the two bounds stay independent of each other's layer. */
  uint64_t memory_bound =
      layer_on(disabled, LAYER_RLIMIT_MEMORY) ? memory_bound_of(&cfg->lnx) : 0;
  layers_strip_config(cfg, disabled);
  /* Even with the caps layer off (root and capabilities kept in the user
   * namespace): it takes no capability away, and Landlock insists on it so
   * a missed step cannot hide behind CAP_SYS_ADMIN. */
  cfg->process.no_new_privileges = true;
  if (cfg->lnx.has_seccomp)
    log_warn("linux.seccomp: not loaded in Python mode; coil's two-stage "
             "filter applies");
  /* Without a mount namespace there is no pivot_root: the interpreter reads
   * the rootfs's stdlib by its host path and Landlock confines reads there. */
  bool mountns = layer_on(disabled, LAYER_MOUNTNS);
  if (asprintf(&out->prefix, "%s/usr", mountns ? "" : rootfs) < 0)
    out->prefix = NULL;
  out->readable_root = strdup(mountns ? "/" : rootfs);
  if (!out->code || !out->code_name || (entry && !out->entry) || !out->prefix ||
      !out->readable_root) {
    python_setup_free(out);
    return coil_error_sys(err, ENOMEM, "sandbox.python");
  }
  out->active = true;
  out->ctx = (struct python_ctx){
      .code = out->code,
      .code_len = code_len,
      .code_name = out->code_name,
      .entry = out->entry,
      .disabled = disabled,
      .prefix = out->prefix,
      .readable_root = out->readable_root,
      .timeout = ov && ov->timeout > 0 ? ov->timeout
                 : sb->has_timeout     ? sb->timeout
                                       : PY_DEFAULT_TIMEOUT,
      .cpu_limit = cpu_limit_of(&cfg->process),
      .memory_bound = memory_bound,
      .max_request = sb->has_max_request ? (size_t)sb->max_request
                                         : PY_DEFAULT_MAX_REQUEST,
      .max_output =
          sb->has_max_output ? (size_t)sb->max_output : PY_DEFAULT_MAX_OUTPUT,
  };
  *p = (struct coil_payload){
      .run = py->mode_main,
      .arg = &out->ctx,
      .keep_ids_and_caps = !layer_on(disabled, LAYER_CAPS),
      .no_pivot = !mountns,
      .no_cgroup = !layer_on(disabled, LAYER_CGROUP),
      .own_seccomp = true,
      .relay_stdout = true,
  };
  return 0;
}

void python_setup_free(struct python_setup *s) {
  free(s->code);
  free(s->code_name);
  free(s->entry);
  free(s->prefix);
  free(s->readable_root);
  *s = (struct python_setup){.ov = s->ov};
}
