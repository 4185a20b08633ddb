/* libmount loaded on first use; see libmount_load.h. */
#include "libmount_load.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>

#define LIBMOUNT "libmount.so.1"

static struct libmount_calls calls;
static void *handle;
static bool loaded;

const struct libmount_calls *libmount_calls(struct coil_error *err) {
  if (loaded)
    return &calls;
  void *h = dlopen(LIBMOUNT, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    coil_error_set(err, ENOENT, "cannot load " LIBMOUNT ": %s", dlerror());
    return NULL;
  }
#define LIBMOUNT_RESOLVE(f)                                                    \
  if (!(calls.f = (typeof(mnt_##f) *)dlsym(h, "mnt_" #f))) {                   \
    coil_error_set(err, ENOSYS, LIBMOUNT " has no mnt_" #f);                   \
    dlclose(h);                                                                \
    return NULL;                                                               \
  }
  LIBMOUNT_CALLS(LIBMOUNT_RESOLVE)
#undef LIBMOUNT_RESOLVE
  handle = h;
  loaded = true;
  return &calls;
}

void libmount_unload(void) {
  if (handle)
    dlclose(handle);
  handle = NULL;
  loaded = false;
  calls = (struct libmount_calls){0};
}
