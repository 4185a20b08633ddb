/* Which device nodes a container may open or create: the config's
 * linux.resources.devices rules, then the default allowlist, then the nodes
 * of linux.devices (the order runc uses), reduced to the form the kernel
 * enforces, and that form as v1 devices-cgroup lines and as a cgroup v2
 * BPF_PROG_TYPE_CGROUP_DEVICE program. Pure functions; the cgroup drivers
 * write and attach the results. */
#ifndef COIL_DEVICE_POLICY_H
#define COIL_DEVICE_POLICY_H

#include <linux/bpf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"

/* Access bits, the values of the kernel's BPF_DEVCG_ACC_*. */
#define DEV_MKNOD 1u
#define DEV_READ 2u
#define DEV_WRITE 4u
#define DEV_RWM (DEV_MKNOD | DEV_READ | DEV_WRITE)
#define DEV_ANY (-1) /* a wildcard major or minor */

enum dev_rule_src { DEV_SRC_CONFIG, DEV_SRC_DEFAULT, DEV_SRC_NODE };

struct dev_rule {
  char type;            /* 'a' (both), 'c' or 'b' */
  int64_t major, minor; /* or DEV_ANY */
  unsigned access;      /* DEV_* bits */
  bool allow;
  enum dev_rule_src src; /* where it came from, for messages */
  size_t idx;            /* its index in that list */
};

/* The kernel's form: a default for every device plus exceptions to it
 * (type 'c' or 'b'). Under default deny a request is allowed when one
 * exception matching the device holds every requested bit; under default
 * allow it is denied when one matching exception holds any of them. */
struct dev_policy {
  bool default_allow;
  struct dev_rule *ex;
  size_t n;
};

/* Evaluates rules in order, the last matching rule deciding each access bit,
 * from an implicit deny of everything; a full wildcard rule ("a", any
 * numbers, rwm) resets. Fails, naming the rule, when neither default can
 * express the result (a rule punching a hole into an earlier, wider rule of
 * the other verdict, and another doing the reverse); runc refuses these
 * too. */
int dev_policy_build(const struct dev_rule *rules, size_t n,
                     struct dev_policy *out, struct coil_error *err);
void dev_policy_free(struct dev_policy *p);

/* dev_policy_build of the rules in force for config l, in order: l's
 * resources.devices, the defaults, an rwm allow for each char or block node
 * of l's devices. */
int dev_policy_for_config(const struct coil_linux *l, struct dev_policy *out,
                          struct coil_error *err);

/* One write to a v1 devices cgroup: line goes to file. */
struct dev_v1_write {
  const char *file; /* "devices.deny" or "devices.allow" */
  char line[48];    /* "a", "c 1:3 rwm", "b *:* m" */
};

/* The writes that give a fresh v1 devices cgroup policy p: first "a" to the
 * file of the default, then each exception to the other. *out is malloc'd. */
int dev_policy_v1(const struct dev_policy *p, struct dev_v1_write **out,
                  size_t *n, struct coil_error *err);

/* The BPF_PROG_TYPE_CGROUP_DEVICE program that decides as p does. *out is
 * malloc'd. */
int dev_policy_bpf(const struct dev_policy *p, struct bpf_insn **out, size_t *n,
                   struct coil_error *err);

#endif
