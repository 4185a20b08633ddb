/* The systemd cgroup driver's vocabulary (--systemd-cgroup): what a
 * "slice:prefix:name" linux.cgroupsPath names, and the unit properties the
 * container's limits become, as runc maps them. The bus calls that use them
 * are in systemd_bus.c. */
#ifndef COIL_CGROUP_SYSTEMD_H
#define COIL_CGROUP_SYSTEMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"

struct systemd_unit {
  char *slice; /* the parent slice, "system.slice" by default */
  char *unit;  /* "prefix-name.scope", or "name" when it ends in ".slice" */
  /* The unit's cgroup below a hierarchy's root, no leading '/':
   * "system.slice/coil-c1.scope". */
  char *path;
};

/* Parses linux.cgroupsPath "slice:prefix:name" (NULL or empty:
 * ":coil:<id>"). An empty slice is "system.slice", "-.slice" the root. */
int systemd_unit_parse(const char *cgroups_path, const char *id,
                       struct systemd_unit *u, struct coil_error *err);
void systemd_unit_free(struct systemd_unit *u);
bool systemd_unit_is_slice(const struct systemd_unit *u);

/* "a-b.slice" -> "a.slice/a-b.slice" (the root slice "-.slice" -> ""):
 * where systemd puts a slice's cgroup. */
int systemd_expand_slice(const char *slice, char **out, struct coil_error *err);

enum systemd_prop_type {
  SDP_U64,   /* D-Bus "t" */
  SDP_BOOL,  /* "b" */
  SDP_BYTES, /* "ay": a CPU or NUMA node bitmask */
};

struct systemd_prop {
  const char *name;
  enum systemd_prop_type type;
  uint64_t u64; /* SDP_U64, SDP_BOOL */
  unsigned char *bytes;
  size_t n_bytes;
};

#define SYSTEMD_MAX_PROPS 16

struct systemd_props {
  struct systemd_prop v[SYSTEMD_MAX_PROPS];
  size_t n;
};

/* The unit properties for the limits in res (res may be NULL), for a
 * cgroup v2 (v2) or v1 host; the limits systemd has no property for are
 * written to the cgroup files only. */
int systemd_resource_props(const struct coil_resources *res, bool v2,
                           struct systemd_props *out, struct coil_error *err);
void systemd_props_free(struct systemd_props *p);

#endif
