/* The container's init process: everything between clone and execve, in one
 * commented sequence (init.c). */
#ifndef COIL_INIT_H
#define COIL_INIT_H

#include <stdbool.h>

#include "caps.h"
#include "config.h"
#include "payload.h"
#include "rlimits.h"
#include "seccomp_profile.h"

struct coil_cgroup;
struct coil_cgroup_join;

struct init_ctx {
  const struct coil_config *cfg;
  const char *id;
  const char *bundle;
  const char *rootfs; /* absolute host path */
  int sync_fd;        /* init's end of the sync socketpair */
  int start_fd;       /* listening socket `coil start` connects to */
  int console_fd;     /* --console-socket connection, or -1 */
  const struct coil_caps *caps;
  const struct coil_rlimits *rlimits;
  const struct coil_seccomp_profile *seccomp; /* NULL without linux.seccomp */
  int out_fd;             /* becomes fd 1 (run's relay pipe), or -1 */
  bool skip_rootfs;       /* a payload without a mount namespace */
  bool keep_ids_and_caps; /* the payload's switch: no id or caps drop */
  bool proc_fd;           /* the payload's switch: see init_proc_fd() */
  payload_run_fn payload; /* runs instead of execve, or NULL */
  void *payload_arg;
  struct coil_cgroup_join *cgroup_join; /* v1 cgroups init moves itself into */
  const struct coil_cgroup *cgroup;     /* the container's cgroups, or NULL */
  const int *idmap_trees; /* per mount: id-mapped source copy or -1; or NULL */
};

/* For a payload that asked for it (payload.h: proc_fd), a detached,
 * read-only procfs of the container's PID namespace showing its processes
 * only (subset=pid), made before pivot_root while one may still be; -1 when
 * none could be made. Never in the container's mount tree. */
int init_proc_fd(void);

/* Runs in the cloned child; ends in execve or _exit, never returns. */
void init_main(const struct init_ctx *c) __attribute__((noreturn));

#endif
