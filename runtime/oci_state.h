/* The runtime-spec State JSON, given to hooks on stdin and printed by
 * `coil state`. */
#ifndef COIL_OCI_STATE_H
#define COIL_OCI_STATE_H

#include <stdbool.h>
#include <sys/types.h>

#include "config.h"

#define COIL_OCI_VERSION "1.2.0"

struct coil_oci_state {
  const char *id;
  const char *status;
  pid_t pid; /* 0 when stopped */
  const char *bundle;
  const char *rootfs;  /* extension, as runc prints it; may be NULL */
  const char *created; /* extension; may be NULL */
  bool oom_killed;     /* extension: "oomKilled": true when set */
  unsigned long long pids_limit_hits; /* extension: "pidsLimitHits" when > 0 */
  const struct coil_config *cfg;      /* annotations; may be NULL */
};

/* Returns a malloc'd JSON document, or NULL on allocation failure. */
char *oci_state_json(const struct coil_oci_state *s, bool pretty);

#endif
