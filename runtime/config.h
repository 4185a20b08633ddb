/* The bundle's config.json as typed structs (OCI runtime-spec 1.x subset plus
 * coil's `sandbox` extension). Parsed once, with yajl, in config.c.
 * Optional scalars carry a has_* flag; arrays are pointer + count.
 * Every string is owned by the struct and freed by config_free(). */
#ifndef COIL_CONFIG_H
#define COIL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* v[n] is always NULL (v itself may be NULL when n == 0), so args and env
 * can go to execve directly. */
struct coil_strv {
  char **v;
  size_t n;
};

struct coil_kv {
  char *key;
  char *value;
};

struct coil_rlimit {
  char *type; /* "RLIMIT_NOFILE"...; mapped to a resource by rlimits.c */
  uint64_t hard;
  uint64_t soft;
};

enum coil_cap_set {
  COIL_CAP_BOUNDING,
  COIL_CAP_EFFECTIVE,
  COIL_CAP_INHERITABLE,
  COIL_CAP_PERMITTED,
  COIL_CAP_AMBIENT,
  COIL_CAP_SET_COUNT
};

struct coil_process {
  bool terminal;
  bool has_console_size;
  uint32_t console_height, console_width;
  uint32_t uid, gid;
  bool has_umask;
  uint32_t umask;
  uint32_t *additional_gids;
  size_t n_additional_gids;
  struct coil_strv args;
  struct coil_strv env;
  char *cwd;
  bool has_capabilities;
  /* Each set present in the config has has_caps[set] = true. */
  bool has_caps[COIL_CAP_SET_COUNT];
  struct coil_strv caps[COIL_CAP_SET_COUNT];
  struct coil_rlimit *rlimits;
  size_t n_rlimits;
  bool no_new_privileges;
  bool has_oom_score_adj;
  int oom_score_adj;
  char *apparmor_profile;
  char *selinux_label;
};

struct coil_id_mapping {
  uint32_t container_id;
  uint32_t host_id;
  uint32_t size;
};

struct coil_mount {
  char *destination; /* required */
  char *type;        /* NULL when absent */
  char *source;      /* NULL when absent */
  struct coil_strv options;
  /* An id-mapped mount: file owners on the source as containerID show as
   * hostID (runtime-spec 1.1). */
  struct coil_id_mapping *uid_mappings, *gid_mappings;
  size_t n_uid_mappings, n_gid_mappings;
};

enum coil_hook_kind {
  COIL_HOOK_PRESTART,
  COIL_HOOK_CREATE_RUNTIME,
  COIL_HOOK_CREATE_CONTAINER,
  COIL_HOOK_START_CONTAINER,
  COIL_HOOK_POSTSTART,
  COIL_HOOK_POSTSTOP,
  COIL_HOOK_KIND_COUNT
};

struct coil_hook {
  char *path; /* required, absolute */
  struct coil_strv args;
  struct coil_strv env;
  bool has_env; /* absent: the hook inherits the runtime's environment */
  bool has_timeout;
  int timeout; /* seconds, > 0 */
};

struct coil_hook_list {
  struct coil_hook *items;
  size_t n;
};

struct coil_namespace {
  int clone_flag; /* CLONE_NEWPID, CLONE_NEWNET, ... */
  char *type;     /* as written: "pid", "network", ... */
  char *path;     /* NULL: create a new one */
};

struct coil_hugepage_limit {
  char *page_size; /* "2MB", "1GB" */
  uint64_t limit;
};

/* linux.resources.devices[i]: one device cgroup rule (device_policy.c). */
struct coil_device_rule {
  bool allow;
  char *type;                /* "a", "b" or "c"; NULL = "a" */
  bool has_major, has_minor; /* absent = any */
  int64_t major, minor;      /* -1 = any */
  char *access;              /* non-empty, of "rwm" */
};

/* linux.resources.blockIO.weightDevice[i]; a weight of 0 is unset. */
struct coil_blkio_weight_device {
  int64_t major, minor;
  int weight, leaf_weight;
};

/* linux.resources.blockIO.throttle*Device[i]: rate is bytes or I/Os per
 * second. */
struct coil_blkio_rate {
  int64_t major, minor;
  uint64_t rate;
};

enum coil_blkio_throttle {
  COIL_BLKIO_READ_BPS,
  COIL_BLKIO_WRITE_BPS,
  COIL_BLKIO_READ_IOPS,
  COIL_BLKIO_WRITE_IOPS,
  COIL_BLKIO_THROTTLE_COUNT
};

struct coil_resources {
  bool has_memory_limit, has_memory_reservation, has_memory_swap;
  int64_t memory_limit, memory_reservation, memory_swap; /* bytes; -1 = max */
  bool has_memory_kernel, has_memory_kernel_tcp, has_memory_swappiness;
  int64_t memory_kernel, memory_kernel_tcp; /* bytes; -1 = max */
  uint64_t memory_swappiness;               /* 0-100 */
  bool memory_disable_oom_killer;
  bool has_pids_limit;
  int64_t pids_limit; /* <= 0 = max */
  bool has_cpu_shares, has_cpu_quota, has_cpu_period, has_cpu_idle;
  uint64_t cpu_shares;
  int64_t cpu_quota; /* -1 = max */
  uint64_t cpu_period;
  int64_t cpu_idle; /* 1: the group runs only when nothing else wants it */
  char *cpu_cpus; /* "0-1" or NULL */
  char *cpu_mems;
  struct coil_hugepage_limit *hugepage_limits;
  size_t n_hugepage_limits;
  struct coil_device_rule *devices;
  size_t n_devices;
  int blkio_weight, blkio_leaf_weight; /* 0 = unset, as in runc */
  struct coil_blkio_weight_device *blkio_weight_devices;
  size_t n_blkio_weight_devices;
  struct coil_blkio_rate *blkio_throttle[COIL_BLKIO_THROTTLE_COUNT];
  size_t n_blkio_throttle[COIL_BLKIO_THROTTLE_COUNT];
  /* linux.resources.unified: cgroup v2 file name -> value, written last. */
  struct coil_kv *unified;
  size_t n_unified;
};

struct coil_seccomp_arg {
  uint32_t index;
  uint64_t value;
  uint64_t value_two;
  char *op; /* "SCMP_CMP_EQ", ... */
};

struct coil_seccomp_syscall {
  struct coil_strv names;
  char *action; /* "SCMP_ACT_ERRNO", ... */
  bool has_errno_ret;
  uint32_t errno_ret;
  struct coil_seccomp_arg *args;
  size_t n_args;
};

struct coil_seccomp {
  char *default_action; /* required */
  bool has_default_errno_ret;
  uint32_t default_errno_ret;
  struct coil_strv architectures; /* "SCMP_ARCH_X86_64", ... */
  struct coil_strv flags;         /* "SECCOMP_FILTER_FLAG_SPEC_ALLOW", ... */
  struct coil_seccomp_syscall *syscalls;
  size_t n_syscalls;
};

struct coil_device {
  char *path; /* required, absolute */
  char *type; /* "c", "b", "u", "p" */
  int64_t major, minor;
  bool has_file_mode, has_uid, has_gid;
  uint32_t file_mode, uid, gid;
};

struct coil_linux {
  struct coil_namespace *namespaces;
  size_t n_namespaces;
  struct coil_id_mapping *uid_mappings;
  size_t n_uid_mappings;
  struct coil_id_mapping *gid_mappings;
  size_t n_gid_mappings;
  struct coil_kv *sysctl;
  size_t n_sysctl;
  bool has_resources;
  struct coil_resources resources;
  char *cgroups_path;
  bool has_seccomp;
  struct coil_seccomp seccomp;
  char *rootfs_propagation;
  struct coil_strv masked_paths;
  struct coil_strv readonly_paths;
  struct coil_device *devices;
  size_t n_devices;
  char *mount_label;
};

/* The layers sandbox.disable may name, in the order of enum sandbox_layer
 * (sandbox/layers.h); NULL-terminated. */
#define COIL_SANDBOX_LAYERS 13
extern const char *const coil_sandbox_layers[COIL_SANDBOX_LAYERS + 1];

/* coil's extension object; the bundle config is trusted (operator-written). */
struct coil_sandbox {
  bool present;
  bool has_python;
  char *python_code;  /* sandbox.python.code */
  char *python_entry; /* sandbox.python.entry or NULL */
  bool has_timeout, has_max_request, has_max_output;
  int timeout;              /* sandbox.python.timeout: wall clock, seconds */
  int max_request;          /* sandbox.python.maxRequest: bytes */
  int max_output;           /* sandbox.python.maxOutput: bytes */
  struct coil_strv disable; /* layer names, validated by config.c */
};

struct coil_config {
  char *oci_version; /* required, must be 1.x */
  char *root_path;   /* root.path, required */
  bool root_readonly;
  bool has_process;
  struct coil_process process;
  char *hostname;
  char *domainname;
  struct coil_mount *mounts;
  size_t n_mounts;
  struct coil_hook_list hooks[COIL_HOOK_KIND_COUNT];
  struct coil_kv *annotations;
  size_t n_annotations;
  bool has_linux;
  struct coil_linux lnx; /* `linux` is a predefined macro under gnu11 */
  struct coil_sandbox sandbox;
};

/* Parses a config.json buffer. On failure *out is NULL and err names the JSON
 * path, e.g. "process.args[2]: expected string". */
int config_parse(const char *buf, size_t len, struct coil_config **out,
                 struct coil_error *err);
int config_parse_file(const char *path, struct coil_config **out,
                      struct coil_error *err);
void config_free(struct coil_config *c);

/* Parses a document holding one linux.resources object (update
 * --resources); name (the file, or "stdin") prefixes errors, which name
 * the field as "linux.resources.memory.limit". */
int config_parse_resources(const char *buf, size_t len, const char *name,
                           struct coil_resources *out, struct coil_error *err);
void config_resources_free(struct coil_resources *r);

/* Parses a document holding one runtime-spec process object (exec
 * --process); name (the file) prefixes errors, which name the field as
 * "process.args". */
int config_parse_process(const char *buf, size_t len, const char *name,
                         struct coil_process *out, struct coil_error *err);
void config_process_free(struct coil_process *p);

/* Makes a bind mount's relative mounts[].source absolute against the bundle
 * directory (an absolute path), as the runtime spec says: never against the
 * runtime's working directory. Other mounts' sources ("proc", "tmpfs") are
 * not paths and stay as written. */
int config_resolve_mount_sources(struct coil_config *c, const char *bundle,
                                 struct coil_error *err);

/* Reads a config file (size-capped) into a NUL-terminated buffer, for
 * callers that keep the raw bytes (create stores a copy in the state dir). */
int config_read_file(const char *path, char **out, size_t *len,
                     struct coil_error *err);

/* The JSON key of a hook kind, e.g. "createRuntime". */
const char *config_hook_name(enum coil_hook_kind k);

static inline void config_freep(struct coil_config **c) {
  if (*c)
    config_free(*c);
}
#define cleanup_config __attribute__((cleanup(config_freep)))

#endif
