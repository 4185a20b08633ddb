/* mountopts: option names to mount(2) flags, propagation and fs data. */
#include <errno.h>
#include <string.h>
#include <sys/mount.h>

#include "mountopts.h"
#include "tap.h"

/* Parses a NULL-terminated list of options for "mounts[0]". */
static int parse(struct coil_mount_opts *o, struct coil_error *err,
                 const char *const *opts) {
  size_t n = 0;
  while (opts[n])
    n++;
  struct coil_strv v = {(char **)opts, n};
  memset(o, 0, sizeof *o);
  return mountopts_parse(&v, "mounts[0]", o, err);
}

#define PARSE(o, err, ...)                                                     \
  parse(o, err, (const char *const[]){__VA_ARGS__, NULL})

static const struct {
  const char *name;
  unsigned long flag;
} set_names[] = {
    {"ro", MS_RDONLY},         {"nosuid", MS_NOSUID},
    {"nodev", MS_NODEV},       {"noexec", MS_NOEXEC},
    {"sync", MS_SYNCHRONOUS},  {"remount", MS_REMOUNT},
    {"mand", MS_MANDLOCK},     {"dirsync", MS_DIRSYNC},
    {"noatime", MS_NOATIME},   {"nodiratime", MS_NODIRATIME},
    {"relatime", MS_RELATIME}, {"strictatime", MS_STRICTATIME},
    {"lazytime", MS_LAZYTIME},
};

static const struct {
  const char *name;
  unsigned long flag;
} clear_names[] = {
    {"rw", MS_RDONLY},           {"suid", MS_NOSUID},
    {"dev", MS_NODEV},           {"exec", MS_NOEXEC},
    {"async", MS_SYNCHRONOUS},   {"atime", MS_NOATIME},
    {"diratime", MS_NODIRATIME}, {"norelatime", MS_RELATIME},
};

static const struct {
  const char *name;
  unsigned long prop;
} prop_names[] = {
    {"private", MS_PRIVATE},       {"rprivate", MS_PRIVATE | MS_REC},
    {"shared", MS_SHARED},         {"rshared", MS_SHARED | MS_REC},
    {"slave", MS_SLAVE},           {"rslave", MS_SLAVE | MS_REC},
    {"unbindable", MS_UNBINDABLE}, {"runbindable", MS_UNBINDABLE | MS_REC},
};

static void test_flags(void) {
  struct coil_mount_opts o;
  struct coil_error err = {0};
  for (size_t i = 0; i < sizeof set_names / sizeof set_names[0]; i++) {
    int rc = PARSE(&o, &err, set_names[i].name);
    ok(rc == 0 && o.flags == set_names[i].flag && o.clear == 0 && !o.data &&
           !o.bind && !o.propagation,
       "%s sets only its flag", set_names[i].name);
    mountopts_free(&o);
  }
  for (size_t i = 0; i < sizeof clear_names / sizeof clear_names[0]; i++) {
    int rc = PARSE(&o, &err, clear_names[i].name);
    ok(rc == 0 && o.clear == clear_names[i].flag && o.flags == 0 && !o.data,
       "%s clears its flag", clear_names[i].name);
    mountopts_free(&o);
  }

  PARSE(&o, &err, "ro", "rw");
  ok(o.flags == 0 && o.clear == MS_RDONLY, "ro then rw: rw wins");
  PARSE(&o, &err, "rw", "ro");
  ok(o.flags == MS_RDONLY && o.clear == 0, "rw then ro: ro wins");

  PARSE(&o, &err, "nosuid", "nodev", "noexec", "ro", "relatime");
  ok(o.flags == (MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY | MS_RELATIME),
     "several flags combine");
  ok(o.data == NULL, "no data without fs options");

  PARSE(&o, &err, "defaults", "");
  ok(o.flags == 0 && o.clear == 0 && o.data == NULL,
     "\"defaults\" and empty options are no-ops, not fs data");
}

static void test_bind(void) {
  struct coil_mount_opts o;
  struct coil_error err = {0};

  PARSE(&o, &err, "bind");
  ok(o.bind && !o.recursive && o.flags == MS_BIND, "bind");
  PARSE(&o, &err, "rbind", "ro");
  ok(o.bind && o.recursive && o.flags == (MS_BIND | MS_RDONLY),
     "rbind is recursive; MS_REC is not in flags");
  /* Docker writes exactly this for a non-recursive volume. */
  PARSE(&o, &err, "bind", "rprivate");
  ok(o.bind && !o.recursive && o.propagation == (MS_PRIVATE | MS_REC),
     "bind,rprivate: the propagation is recursive, the bind is not");
  PARSE(&o, &err, "rbind", "private");
  ok(o.bind && o.recursive && o.propagation == MS_PRIVATE,
     "rbind,private: the bind is recursive, the propagation is not");
  /* As runc: flags accumulate, so rbind wins over bind in either order. */
  PARSE(&o, &err, "rbind", "bind");
  ok(o.bind && o.recursive, "rbind,bind is recursive");
  PARSE(&o, &err, "bind", "rbind");
  ok(o.bind && o.recursive, "bind,rbind is recursive");
}

static void test_recursive(void) {
  struct coil_mount_opts o;
  struct coil_error err = {0};
  int rc = PARSE(&o, &err, "rbind", "rro", "rnosuid", "rnodev", "rnoexec",
                 "rnosymfollow", "rnodiratime");
  ok(rc == 0 &&
         o.rec_set == (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
                       MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC |
                       MOUNT_ATTR_NOSYMFOLLOW | MOUNT_ATTR_NODIRATIME) &&
         o.rec_clear == 0 && !o.has_rec_atime && !o.data && o.flags == MS_BIND,
     "r-options set recursive attributes, not flags or data");
  rc = PARSE(&o, &err, "rro", "rrw", "rsuid", "rdev", "rexec", "rsymfollow",
             "rdiratime");
  ok(rc == 0 && o.rec_set == 0 &&
         o.rec_clear == (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
                         MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC |
                         MOUNT_ATTR_NOSYMFOLLOW | MOUNT_ATTR_NODIRATIME),
     "their negations clear them; the last one wins");
  static const struct {
    const char *name;
    uint64_t mode;
  } atimes[] = {{"rnoatime", MOUNT_ATTR_NOATIME},
                {"rstrictatime", MOUNT_ATTR_STRICTATIME},
                {"rrelatime", MOUNT_ATTR_RELATIME},
                {"ratime", MOUNT_ATTR_RELATIME},
                {"rnorelatime", MOUNT_ATTR_RELATIME},
                {"rnostrictatime", MOUNT_ATTR_RELATIME}};
  for (size_t i = 0; i < sizeof atimes / sizeof atimes[0]; i++) {
    rc = PARSE(&o, &err, "rnoatime", atimes[i].name);
    ok(rc == 0 && o.has_rec_atime && o.rec_atime == atimes[i].mode,
       "%s picks atime mode %#llx", atimes[i].name,
       (unsigned long long)atimes[i].mode);
  }
  uint64_t set, clear;
  PARSE(&o, &err, "rro", "rstrictatime");
  mountopts_recursive_attrs(&o, &set, &clear);
  ok(set == (MOUNT_ATTR_RDONLY | MOUNT_ATTR_STRICTATIME) &&
         clear == MOUNT_ATTR__ATIME,
     "an atime mode clears the old one: set %#llx clear %#llx",
     (unsigned long long)set, (unsigned long long)clear);
  rc = PARSE(&o, &err, "rbind", "idmap");
  ok(rc == 0 && o.idmap && !o.idmap_recursive && !o.data, "idmap");
  rc = PARSE(&o, &err, "rbind", "ridmap");
  ok(rc == 0 && o.idmap && o.idmap_recursive, "ridmap is recursive");
}

static void test_propagation(void) {
  struct coil_mount_opts o;
  struct coil_error err = {0};
  for (size_t i = 0; i < sizeof prop_names / sizeof prop_names[0]; i++) {
    unsigned long f = 0;
    int rc = PARSE(&o, &err, prop_names[i].name);
    ok(rc == 0 && o.propagation == prop_names[i].prop && o.flags == 0 &&
           !o.bind && !o.data,
       "option %s -> propagation %#lx", prop_names[i].name, prop_names[i].prop);
    rc = mountopts_propagation(prop_names[i].name, &f);
    ok(rc == 0 && f == prop_names[i].prop, "rootfsPropagation %s",
       prop_names[i].name);
  }
  unsigned long f = 12345;
  ok(mountopts_propagation("bogus", &f) == -1 && f == 12345,
     "unknown rootfsPropagation is -1, flags untouched");
  ok(mountopts_propagation("ro", &f) == -1,
     "a non-propagation flag is not a rootfsPropagation");
  ok(mountopts_propagation(NULL, &f) == -1, "NULL rootfsPropagation is -1");

  PARSE(&o, &err, "shared", "rslave");
  ok(o.propagation == (MS_SLAVE | MS_REC), "the last propagation wins");
}

static void test_data(void) {
  struct coil_mount_opts o;
  struct coil_error err = {0};

  PARSE(&o, &err, "nosuid", "strictatime", "mode=755", "size=65536k");
  ok(o.flags == (MS_NOSUID | MS_STRICTATIME), "tmpfs /dev flags");
  is_str(o.data, "mode=755,size=65536k", "tmpfs data joined in order");
  mountopts_free(&o);
  ok(o.data == NULL, "mountopts_free clears data");

  PARSE(&o, &err, "nosuid", "noexec", "newinstance", "ptmxmode=0666",
        "mode=0620", "gid=5");
  ok(o.flags == (MS_NOSUID | MS_NOEXEC), "devpts flags");
  is_str(o.data, "newinstance,ptmxmode=0666,mode=0620,gid=5", "devpts data");
  mountopts_free(&o);

  PARSE(&o, &err, "size=65536k", "mode=755");
  is_str(o.data, "size=65536k,mode=755", "data only");
  mountopts_free(&o);

  PARSE(&o, &err, "lowerdir=/a:/b", "x-whatever", "ro");
  is_str(o.data, "lowerdir=/a:/b,x-whatever",
         "unknown names are fs data for the kernel to judge");
  ok(o.flags == MS_RDONLY, "flags beside unknown data");
  mountopts_free(&o);

  /* Option names are exact: prefixes of flag names are data. */
  PARSE(&o, &err, "r", "nosuidx");
  is_str(o.data, "r,nosuidx", "near-miss names are data");
  ok(o.flags == 0, "near-miss names set no flag");
  mountopts_free(&o);
}

static void test_tmpcopyup(void) {
  struct coil_mount_opts o;
  struct coil_error err = {0};
  PARSE(&o, &err, "size=1k", "tmpcopyup");
  ok(o.tmpcopyup, "tmpcopyup is parsed");
  is_str(o.data, "size=1k", "tmpcopyup is no filesystem data");
  mountopts_free(&o);
  PARSE(&o, &err, "size=1k");
  ok(!o.tmpcopyup, "no tmpcopyup unless asked");
  mountopts_free(&o);
}

static void test_unsupported(void) {
  static const char *const names[] = {"copy-symlink", "src-nofollow",
                                      "dest-nofollow"};
  struct coil_mount_opts o;
  struct coil_error err = {0};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    memset(&err, 0, sizeof err);
    int rc = PARSE(&o, &err, "rbind", "size=1k", names[i]);
    char want[128];
    snprintf(want, sizeof want, "mounts[0].options[2] (%s): ", names[i]);
    ok(rc == -1 && err.err == EINVAL &&
           strncmp(err.msg, want, strlen(want)) == 0,
       "%s is refused naming the option", names[i]);
    if (rc == 0)
      mountopts_free(&o);
  }
  /* A failure leaves *out alone and leaks the data so far (ASan checks). */
  char *bad[] = {"mode=1", "size=2", "ro", "copy-symlink"};
  struct coil_strv v = {bad, 4};
  o.flags = 42;
  o.data = NULL;
  ok(mountopts_parse(&v, "mounts[7]", &o, &err) == -1 && o.flags == 42 &&
         o.data == NULL,
     "no partial result on error");
  is_str(err.msg,
         "mounts[7].options[3] (copy-symlink): crun's copy-symlink is not "
         "supported",
         "the message names the field, the option and why");
}

int main(void) {
  test_flags();
  test_tmpcopyup();
  test_bind();
  test_recursive();
  test_propagation();
  test_data();
  test_unsupported();
  return tap_done();
}
