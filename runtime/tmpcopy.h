/* The "tmpcopyup" of a tmpfs mount: what the directory it covers held in
 * the rootfs, copied into the new tmpfs before it is attached. */
#ifndef COIL_TMPCOPY_H
#define COIL_TMPCOPY_H

#include "error.h"

/* Copies the contents of the directory src into the directory dst: files,
 * directories, symlinks (as symlinks, never followed), fifos and device
 * nodes, with their modes, owners and times. Every name is opened relative
 * to its parent's fd with O_NOFOLLOW, so nothing outside src is read. path
 * names src in error messages. */
int tmpcopy_tree(int src, int dst, const char *path, struct coil_error *err);

#endif
