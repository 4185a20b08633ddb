/* sandbox.disable: the isolation layers a (trusted) bundle config may switch
 * off one at a time so tests can show every attack is still contained by the
 * others. Each switched-off layer is announced on stderr. */
#ifndef COIL_LAYERS_H
#define COIL_LAYERS_H

#include <stdbool.h>

#include "config.h"

enum sandbox_layer {
  LAYER_USERNS,
  LAYER_PIDNS,
  LAYER_NETNS,
  LAYER_MOUNTNS,
  LAYER_CGROUP,
  LAYER_RLIMITS,
  LAYER_RLIMIT_MEMORY,
  LAYER_CAPS,
  LAYER_LANDLOCK,
  LAYER_SECCOMP,
  LAYER_AUDIT,
  LAYER_BUILTINS,
  LAYER_AST,
  LAYER_COUNT
};
_Static_assert(LAYER_COUNT == COIL_SANDBOX_LAYERS,
               "a layer for each name of coil_sandbox_layers (config.h)");

/* Bitmask of disabled layers (bit = 1 << layer); warns once per layer. */
unsigned layers_disabled(const struct coil_sandbox *sb);

static inline bool layer_on(unsigned disabled, enum sandbox_layer l) {
  return !(disabled & (1u << l));
}

/* Removes what the disabled outer layers would set up from the config:
 * namespaces, cgroup resources and rlimits. The caps, mount namespace and
 * cgroup switches go to init through the payload (python_setup.c), the
 * in-process layers (rlimit-memory among them) are switched where they are
 * applied. */
void layers_strip_config(struct coil_config *cfg, unsigned disabled);

#endif
