#include "mountopts.h"

#include <errno.h>
#include <libmount.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "cleanup.h"

#define PROPAGATION_FLAGS (MS_SHARED | MS_SLAVE | MS_PRIVATE | MS_UNBINDABLE)

/* Option names runtimes accept that coil cannot honour: passing them to the
 * kernel as fs data would fail obscurely or, worse, be ignored by a
 * filesystem that accepts unknown options. Matched on the name before '='. */
static const struct {
  const char *name;
  const char *why;
} unsupported[] = {
    {"idmap", "id-mapped mounts are not supported"},
    {"ridmap", "id-mapped mounts are not supported"},
    {"tmpcopyup", "tmpfs copy-up is not supported"},
    {"copy-symlink", "crun's copy-symlink is not supported"},
    {"src-nofollow", "crun's src-nofollow is not supported"},
    {"dest-nofollow", "crun's dest-nofollow is not supported"},
    {"rro", "recursive mount attributes are not supported"},
    {"rrw", "recursive mount attributes are not supported"},
    {"rnosuid", "recursive mount attributes are not supported"},
    {"rsuid", "recursive mount attributes are not supported"},
    {"rnodev", "recursive mount attributes are not supported"},
    {"rdev", "recursive mount attributes are not supported"},
    {"rnoexec", "recursive mount attributes are not supported"},
    {"rexec", "recursive mount attributes are not supported"},
    {"rnoatime", "recursive mount attributes are not supported"},
    {"ratime", "recursive mount attributes are not supported"},
    {"rnodiratime", "recursive mount attributes are not supported"},
    {"rdiratime", "recursive mount attributes are not supported"},
    {"rrelatime", "recursive mount attributes are not supported"},
    {"rnorelatime", "recursive mount attributes are not supported"},
    {"rstrictatime", "recursive mount attributes are not supported"},
    {"rnostrictatime", "recursive mount attributes are not supported"},
    {"rnosymfollow", "recursive mount attributes are not supported"},
    {"rsymfollow", "recursive mount attributes are not supported"},
};

static const char *unsupported_reason(const char *opt) {
  size_t len = strcspn(opt, "=");
  for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++)
    if (strlen(unsupported[i].name) == len &&
        strncmp(unsupported[i].name, opt, len) == 0)
      return unsupported[i].why;
  return NULL;
}

/* libmount's Linux map has every VFS flag name, including rbind and the
 * r-prefixed propagation names (as MS_REC|flag). */
static const struct libmnt_optmap *linux_flag(const char *opt) {
  const struct libmnt_optmap *m = mnt_get_builtin_optmap(MNT_LINUX_MAP);
  for (; m && m->name; m++)
    if (strcmp(m->name, opt) == 0)
      return m;
  return NULL;
}

static int append_data(char **data, const char *opt) {
  size_t old = *data ? strlen(*data) : 0;
  char *p = realloc(*data, old + (old ? 1 : 0) + strlen(opt) + 1);
  if (!p)
    return -1;
  if (old)
    p[old++] = ',';
  strcpy(p + old, opt);
  *data = p;
  return 0;
}

/* One option; later options override earlier ones ("ro,rw" is rw), as with
 * mount(8). */
static void apply_flag(struct coil_mount_opts *o,
                       const struct libmnt_optmap *m) {
  unsigned long id = (unsigned long)m->id;
  if (id & PROPAGATION_FLAGS) {
    o->propagation = id;
  } else if (id & MS_BIND) {
    o->bind = true;
    o->recursive = (id & MS_REC) != 0;
    o->flags |= MS_BIND;
  } else if (m->mask & MNT_INVERT) {
    o->clear |= id;
    o->flags &= ~id;
  } else {
    o->flags |= id;
    o->clear &= ~id;
  }
}

int mountopts_parse(const struct coil_strv *options, const char *field,
                    struct coil_mount_opts *out, struct coil_error *err) {
  struct coil_mount_opts o = {0};
  cleanup_free char *data = NULL;

  for (size_t j = 0; j < options->n; j++) {
    const char *opt = options->v[j];
    const char *why;
    const struct libmnt_optmap *m;

    /* "defaults" means "no flags" to mount(8); as fs data it would fail. */
    if (opt[0] == '\0' || strcmp(opt, "defaults") == 0)
      continue;
    if ((why = unsupported_reason(opt)))
      return coil_error_set(err, EINVAL, "%s.options[%zu] (%s): %s", field, j,
                            opt, why);
    if ((m = linux_flag(opt))) {
      apply_flag(&o, m);
      continue;
    }
    /* Anything else is the filesystem's business; the kernel judges it. */
    if (append_data(&data, opt) < 0)
      return coil_error_sys(err, ENOMEM, "%s.options[%zu]", field, j);
  }
  o.data = steal_ptr(data);
  *out = o;
  return 0;
}

void mountopts_free(struct coil_mount_opts *o) {
  free(o->data);
  o->data = NULL;
}

int mountopts_propagation(const char *name, unsigned long *flags) {
  const struct libmnt_optmap *m = name ? linux_flag(name) : NULL;
  if (!m || !((unsigned long)m->id & PROPAGATION_FLAGS))
    return -1;
  *flags = (unsigned long)m->id;
  return 0;
}
