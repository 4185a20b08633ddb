/* The state directory: <root>/<id>/ holds state.json (written atomically),
 * a copy of the bundle's config.json, and the start socket. Commands on one
 * id serialise on an flock of the directory. */
#ifndef COIL_STATE_H
#define COIL_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

enum coil_status {
  COIL_STATUS_CREATING,
  COIL_STATUS_CREATED,
  COIL_STATUS_RUNNING,
  COIL_STATUS_STOPPED
};

struct coil_state {
  char *id;
  pid_t pid;
  unsigned long long pid_start; /* /proc/<pid>/stat starttime, against reuse */
  char *bundle;
  char *rootfs;
  char *created; /* RFC 3339 */
  bool started;
  char *cgroup; /* cgroup_serialize() text, or NULL */
};

/* Creates <root>/<id> (fails with EEXIST as "container ... already
 * exists") and returns its locked directory fd. */
int state_dir_create(const char *root, const char *id, int *dirfd,
                     struct coil_error *err);
/* Opens and exclusively locks an existing <root>/<id>. */
int state_dir_open(const char *root, const char *id, int *dirfd,
                   struct coil_error *err);
/* Removes <root>/<id> and its files. */
int state_dir_remove(const char *root, const char *id, struct coil_error *err);

/* Path of a file in the state dir (caller frees). */
char *state_path(const char *root, const char *id, const char *name);

int state_write(int dirfd, const struct coil_state *st, struct coil_error *err);
int state_read(const char *root, const char *id, struct coil_state **out,
               struct coil_error *err);
void state_free(struct coil_state *st);

/* Writes bytes to dirfd/name atomically (temp file + rename). */
int state_write_file(int dirfd, const char *name, const char *buf, size_t len,
                     struct coil_error *err);

/* created/running/stopped from the pid, its start time and `started`. */
enum coil_status state_status(const struct coil_state *st);
const char *state_status_name(enum coil_status s);

/* Start time of a live, non-zombie pid; 0 when gone. */
unsigned long long state_pid_start_time(pid_t pid);

/* Ids of every container under root (sorted). */
int state_list(const char *root, char ***ids, size_t *n,
               struct coil_error *err);

static inline void state_freep(struct coil_state **s) {
  if (*s)
    state_free(*s);
}
#define cleanup_state __attribute__((cleanup(state_freep)))

#endif
