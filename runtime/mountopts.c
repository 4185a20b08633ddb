#include "mountopts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "cleanup.h"
#include "libmount_load.h"

#define PROPAGATION_FLAGS (MS_SHARED | MS_SLAVE | MS_PRIVATE | MS_UNBINDABLE)

/* Option names runtimes accept that coil cannot honour: passing them to the
 * kernel as fs data would fail obscurely or, worse, be ignored by a
 * filesystem that accepts unknown options. Matched on the name before '='. */
static const struct {
  const char *name;
  const char *why;
} unsupported[] = {
    {"copy-symlink", "crun's copy-symlink is not supported"},
    {"src-nofollow", "crun's src-nofollow is not supported"},
    {"dest-nofollow", "crun's dest-nofollow is not supported"},
};

/* The recursive mount attributes of runtime-spec 1.1 (runc's list): set or
 * cleared with mount_setattr(AT_RECURSIVE) on the mount and all below it.
 * The atime options pick one mode; "ratime", "rnorelatime" and
 * "rnostrictatime" go back to the kernel's default, relatime. */
static const struct {
  const char *name;
  uint64_t attr;
  bool clear;
  bool atime;
} recursive_attrs[] = {
    {"rro", MOUNT_ATTR_RDONLY, false, false},
    {"rrw", MOUNT_ATTR_RDONLY, true, false},
    {"rnosuid", MOUNT_ATTR_NOSUID, false, false},
    {"rsuid", MOUNT_ATTR_NOSUID, true, false},
    {"rnodev", MOUNT_ATTR_NODEV, false, false},
    {"rdev", MOUNT_ATTR_NODEV, true, false},
    {"rnoexec", MOUNT_ATTR_NOEXEC, false, false},
    {"rexec", MOUNT_ATTR_NOEXEC, true, false},
    {"rnodiratime", MOUNT_ATTR_NODIRATIME, false, false},
    {"rdiratime", MOUNT_ATTR_NODIRATIME, true, false},
    {"rnosymfollow", MOUNT_ATTR_NOSYMFOLLOW, false, false},
    {"rsymfollow", MOUNT_ATTR_NOSYMFOLLOW, true, false},
    {"rnoatime", MOUNT_ATTR_NOATIME, false, true},
    {"rstrictatime", MOUNT_ATTR_STRICTATIME, false, true},
    {"rrelatime", MOUNT_ATTR_RELATIME, false, true},
    {"ratime", MOUNT_ATTR_RELATIME, false, true},
    {"rnorelatime", MOUNT_ATTR_RELATIME, false, true},
    {"rnostrictatime", MOUNT_ATTR_RELATIME, false, true},
};

/* Later options override earlier ones, as for the other flags. */
static bool apply_recursive(struct coil_mount_opts *o, const char *opt) {
  for (size_t i = 0; i < sizeof recursive_attrs / sizeof recursive_attrs[0];
       i++) {
    if (strcmp(recursive_attrs[i].name, opt) != 0)
      continue;
    uint64_t a = recursive_attrs[i].attr;
    if (recursive_attrs[i].atime) {
      o->rec_atime = a;
      o->has_rec_atime = true;
    } else if (recursive_attrs[i].clear) {
      o->rec_clear |= a;
      o->rec_set &= ~a;
    } else {
      o->rec_set |= a;
      o->rec_clear &= ~a;
    }
    return true;
  }
  return false;
}

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
static const struct libmnt_optmap *linux_flag(const struct libmount_calls *mnt,
                                              const char *opt) {
  const struct libmnt_optmap *m = mnt->get_builtin_optmap(MNT_LINUX_MAP);
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
    /* As runc: the flags accumulate, so "rbind" stays recursive whatever
     * "bind" comes before or after it. */
    o->bind = true;
    o->recursive = o->recursive || (id & MS_REC) != 0;
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
  const struct libmount_calls *mnt = libmount_calls(err);
  if (!mnt)
    return coil_error_prefix(err, "%s", field);

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
    if (apply_recursive(&o, opt))
      continue;
    if (strcmp(opt, "tmpcopyup") == 0) {
      o.tmpcopyup = true;
      continue;
    }
    if (strcmp(opt, "idmap") == 0 || strcmp(opt, "ridmap") == 0) {
      o.idmap = true;
      o.idmap_recursive = opt[0] == 'r';
      continue;
    }
    if ((m = linux_flag(mnt, opt))) {
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

void mountopts_recursive_attrs(const struct coil_mount_opts *o, uint64_t *set,
                               uint64_t *clear) {
  *set = o->rec_set;
  *clear = o->rec_clear;
  if (o->has_rec_atime) {
    *set |= o->rec_atime;
    *clear |= MOUNT_ATTR__ATIME;
  }
}

int mountopts_propagation(const char *name, unsigned long *flags) {
  struct coil_error err;
  const struct libmount_calls *mnt = libmount_calls(&err);
  const struct libmnt_optmap *m = name && mnt ? linux_flag(mnt, name) : NULL;
  if (!m || !((unsigned long)m->id & PROPAGATION_FLAGS))
    return -1;
  *flags = (unsigned long)m->id;
  return 0;
}
