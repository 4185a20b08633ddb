#include "layers.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

unsigned layers_disabled(const struct coil_sandbox *sb) {
  unsigned mask = 0;
  for (size_t i = 0; i < sb->disable.n; i++)
    for (int l = 0; l < LAYER_COUNT; l++)
      if (strcmp(sb->disable.v[i], coil_sandbox_layers[l]) == 0 &&
          !(mask & (1u << l))) {
        mask |= 1u << l;
        log_warn("sandbox.disable: the %s layer is OFF (for tests only; the "
                 "sandbox is weaker)",
                 coil_sandbox_layers[l]);
      }
  return mask;
}

static void drop_namespace(struct coil_linux *l, int flag) {
  for (size_t i = 0; i < l->n_namespaces; i++) {
    if (l->namespaces[i].clone_flag != flag)
      continue;
    free(l->namespaces[i].type);
    free(l->namespaces[i].path);
    memmove(&l->namespaces[i], &l->namespaces[i + 1],
            (l->n_namespaces - i - 1) * sizeof l->namespaces[0]);
    l->n_namespaces--;
    return;
  }
}

void layers_strip_config(struct coil_config *cfg, unsigned disabled) {
  static const struct {
    enum sandbox_layer layer;
    int flag;
  } ns_layers[] = {{LAYER_USERNS, CLONE_NEWUSER},
                   {LAYER_PIDNS, CLONE_NEWPID},
                   {LAYER_NETNS, CLONE_NEWNET},
                   {LAYER_MOUNTNS, CLONE_NEWNS}};
  for (size_t i = 0; i < sizeof ns_layers / sizeof ns_layers[0]; i++)
    if (!layer_on(disabled, ns_layers[i].layer))
      drop_namespace(&cfg->lnx, ns_layers[i].flag);
  if (!layer_on(disabled, LAYER_USERNS)) {
    /* The cgroup namespace needs no userns, but sysctls and ids then act on
     * the host: keep the process unprivileged through its configured uid. */
    cfg->lnx.n_uid_mappings = 0;
    cfg->lnx.n_gid_mappings = 0;
  }
  if (!layer_on(disabled, LAYER_CGROUP))
    cfg->lnx.has_resources = false;
  if (!layer_on(disabled, LAYER_RLIMITS)) {
    for (size_t i = 0; i < cfg->process.n_rlimits; i++)
      free(cfg->process.rlimits[i].type);
    free(cfg->process.rlimits);
    cfg->process.rlimits = NULL;
    cfg->process.n_rlimits = 0;
  }
}
