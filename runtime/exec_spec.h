/* What `coil exec` runs: the runtime-spec process object of --process, or
 * the container's config.json process with the command line's changes,
 * merged the way runc merges them. */
#ifndef COIL_EXEC_SPEC_H
#define COIL_EXEC_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "caps.h"
#include "config.h"
#include "error.h"
#include "rlimits.h"

/* The command line, as given (strings are borrowed). */
struct exec_flags {
  const char *process_file; /* --process, or NULL */
  char **args;              /* the command; args[n_args] is NULL */
  size_t n_args;
  bool tty;
  const char *cwd;
  const char **env; /* --env K=V, appended: a later value wins */
  size_t n_env;
  const char *user; /* "UID[:GID]" */
  const char **gids;
  size_t n_gids;
  const char **caps;
  size_t n_caps;
  bool no_new_privs;
  const char *apparmor;
  const char *label;
};

struct exec_spec {
  struct coil_process p; /* what runs; borrows from the config and flags */
  struct coil_caps caps;
  struct coil_rlimits rlimits;
  /* owned */
  struct coil_process file;
  char **env;
  uint32_t *gids;
};

/* cfg: the container's config.json process. Errors name the flag or the
 * --process file's field. */
int exec_spec_build(const struct coil_process *cfg, const struct exec_flags *f,
                    struct exec_spec *out, struct coil_error *err);
void exec_spec_free(struct exec_spec *s);

/* "UID[:GID]" of --user; a missing GID leaves *gid as it is. */
int exec_parse_user(const char *s, uint32_t *uid, uint32_t *gid,
                    struct coil_error *err);

#endif
