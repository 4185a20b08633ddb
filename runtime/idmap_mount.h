/* Id-mapped bind mounts (a mount's uidMappings/gidMappings, runc's "idmap"
 * and "ridmap" options). The kernel lets only a caller privileged over the
 * source's filesystem id-map it, so the runtime makes them on the host,
 * before init enters the container's user namespace; init attaches them. */
#ifndef COIL_IDMAP_MOUNT_H
#define COIL_IDMAP_MOUNT_H

#include "config.h"
#include "error.h"

/* trees[i] (for each of cfg->n_mounts) becomes a detached, id-mapped copy
 * of mounts[i]'s source, or -1 when that mount is not id-mapped. Fails
 * naming the mount (a mount that is not a bind, mappings missing, a
 * filesystem that cannot be id-mapped), with every fd closed. */
int idmap_mounts_prepare(const struct coil_config *cfg, int *trees,
                         struct coil_error *err);

/* Closes the n fds of trees that are open and sets them to -1. */
void idmap_mounts_close(int *trees, size_t n);

#endif
