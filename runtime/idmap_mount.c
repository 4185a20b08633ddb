#include "idmap_mount.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "mountfd.h"
#include "mountopts.h"
#include "namespaces.h"

static void mountopts_freep(struct coil_mount_opts *o) { mountopts_free(o); }
#define cleanup_mountopts __attribute__((cleanup(mountopts_freep)))

/* A user namespace with m's mappings, held by an fd: a child is born into
 * it, given the maps, and exits once the namespace is open. */
static int mapped_userns(const struct coil_mount *m, struct coil_error *err) {
  int hold[2];
  if (pipe2(hold, O_CLOEXEC) < 0)
    return coil_error_sys(err, errno, "pipe");
  pid_t pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL,
                             NULL, NULL);
  if (pid == 0) {
    char b;
    close(hold[1]);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* Returns at the parent's close or death. */
    while (read(hold[0], &b, 1) < 0 && errno == EINTR)
      ;
    _exit(0);
  }
  close(hold[0]);
  int ns = -1;
  if (pid < 0) {
    coil_error_sys(err, errno, "clone a user namespace");
  } else if (namespaces_write_map(pid, "uid_map", "uidMappings",
                                  m->uid_mappings, m->n_uid_mappings,
                                  err) == 0 &&
             namespaces_write_map(pid, "gid_map", "gidMappings",
                                  m->gid_mappings, m->n_gid_mappings,
                                  err) == 0) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/ns/user", pid);
    ns = open(path, O_RDONLY | O_CLOEXEC);
    if (ns < 0)
      coil_error_sys(err, errno, "open %s", path);
  }
  close(hold[1]);
  if (pid > 0)
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
      ;
  return ns;
}

static bool wants_idmap(const struct coil_mount *m,
                        const struct coil_mount_opts *o) {
  return o->idmap || m->n_uid_mappings || m->n_gid_mappings;
}

/* The detached id-mapped copy of m's source. */
static int idmapped_tree(const struct coil_mount *m,
                         const struct coil_mount_opts *o,
                         struct coil_error *err) {
  if (!o->bind && !(m->type && strcmp(m->type, "bind") == 0))
    return coil_error_set(err, EINVAL, "id mappings apply to bind mounts only");
  if (!m->n_uid_mappings || !m->n_gid_mappings)
    return coil_error_set(err, EINVAL,
                          "an id-mapped mount needs both uidMappings and "
                          "gidMappings");
  if (!m->source)
    return coil_error_set(err, EINVAL, "bind mount without a source");
  cleanup_close int src = open(m->source, O_PATH | O_CLOEXEC);
  if (src < 0)
    return coil_error_sys(err, errno, "source %s", m->source);
  cleanup_close int userns = mapped_userns(m, err);
  if (userns < 0)
    return -1;
  cleanup_close int tree = mountfd_clone(src, o->recursive, err);
  if (tree < 0 || mountfd_idmap(tree, userns, o->idmap_recursive, err) < 0)
    return coil_error_prefix(err, "source %s", m->source);
  return steal_fd(tree);
}

int idmap_mounts_prepare(const struct coil_config *cfg, int *trees,
                         struct coil_error *err) {
  for (size_t i = 0; i < cfg->n_mounts; i++)
    trees[i] = -1;
  for (size_t i = 0; i < cfg->n_mounts; i++) {
    const struct coil_mount *m = &cfg->mounts[i];
    char field[32];
    cleanup_mountopts struct coil_mount_opts o = {0};
    snprintf(field, sizeof field, "mounts[%zu]", i);
    if (mountopts_parse(&m->options, field, &o, err) < 0)
      goto fail;
    if (!wants_idmap(m, &o))
      continue;
    trees[i] = idmapped_tree(m, &o, err);
    if (trees[i] < 0) {
      coil_error_prefix(err, "%s (%s)", field, m->destination);
      goto fail;
    }
  }
  return 0;
fail:
  idmap_mounts_close(trees, cfg->n_mounts);
  return -1;
}

void idmap_mounts_close(int *trees, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (trees[i] >= 0) {
      close(trees[i]);
      trees[i] = -1;
    }
}
