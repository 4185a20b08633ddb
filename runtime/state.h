/* The state directory: <root>/<id>/ holds state.json (written atomically),
 * a copy of the bundle's config.json, and the start socket. Commands on one
 * id serialise on an flock of the directory.
 *
 * The root and each container directory must belong to the caller and be
 * writable by no one else: state names pids to signal, cgroups to remove
 * and hooks to run, so a directory someone else controls is refused. Once
 * open, everything is reached through the directory's fd, never by path. */
#ifndef COIL_STATE_H
#define COIL_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"
#include "id.h"

enum coil_status {
  COIL_STATUS_CREATING,
  COIL_STATUS_CREATED,
  COIL_STATUS_RUNNING,
  COIL_STATUS_STOPPED,
  /* created or running, with its cgroup frozen (a runc extension of the
   * runtime spec's statuses) */
  COIL_STATUS_PAUSED
};

struct coil_state {
  char *id;
  pid_t pid;
  unsigned long long pid_start; /* /proc/<pid>/stat starttime, against reuse */
  char *bundle;
  char *rootfs;
  char *created; /* RFC 3339 */
  bool started;
  /* CLOCK_BOOTTIME (ms) when start exec'd the process; 0 if unknown */
  long long started_boot_ms;
  /* create has not finished: the container may be half set up */
  bool creating;
  char *cgroup; /* cgroup_serialize() text, or NULL */
  /* the cgroup create was about to make (only while creating) */
  char *cgroup_planned;
};

/* An open container directory (and its root), checked as above. */
struct coil_state_dir {
  int root_fd;
  int fd;
  char name[COIL_ID_DIRNAME_MAX];
};
#define COIL_STATE_DIR_INIT                                                    \
  { .root_fd = -1, .fd = -1 }

/* Creates <root>/<id> holding `initial` as its state.json, locked; it
 * appears complete with the state file or not at all. Fails with EEXIST as
 * "container ... already exists". */
int state_dir_create(const char *root, const char *id,
                     const struct coil_state *initial, struct coil_state_dir *d,
                     struct coil_error *err);
/* Removes what creates killed before their directory got its name left
 * under root (create does this itself). */
void state_remove_abandoned(const char *root);
/* Opens an existing <root>/<id>; with lock, takes its lock first. */
int state_dir_open(const char *root, const char *id, bool lock,
                   struct coil_state_dir *d, struct coil_error *err);
/* The same by directory name (from state_list); never locks. */
int state_dir_open_name(const char *root, const char *name,
                        struct coil_state_dir *d, struct coil_error *err);
/* Removes the directory and its files. */
int state_dir_remove(struct coil_state_dir *d, struct coil_error *err);
void state_dir_close(struct coil_state_dir *d);
/* True when another process holds the directory's lock (d not locked). */
bool state_dir_busy(const struct coil_state_dir *d);

int state_write(int dirfd, const struct coil_state *st, struct coil_error *err);
/* Reads state.json; it must be id's (NULL: whichever id owns d's name). */
int state_read(const struct coil_state_dir *d, const char *id,
               struct coil_state **out, struct coil_error *err);
void state_free(struct coil_state *st);

/* Writes bytes to dirfd/name atomically (temp file + rename). */
int state_write_file(int dirfd, const char *name, const char *buf, size_t len,
                     struct coil_error *err);
/* Reads a regular file of the directory (not through a symlink). */
int state_read_file(int dirfd, const char *name, char **buf, size_t *len,
                    struct coil_error *err);

const char *state_status_name(enum coil_status s);

/* Start time of a live, non-zombie pid; 0 when gone. */
unsigned long long state_pid_start_time(pid_t pid);

/* Directory names of every container under root (sorted). */
int state_list(const char *root, char ***names, size_t *n,
               struct coil_error *err);

static inline void state_freep(struct coil_state **s) {
  if (*s)
    state_free(*s);
}
#define cleanup_state __attribute__((cleanup(state_freep)))
#define cleanup_state_dir __attribute__((cleanup(state_dir_close)))

#endif
