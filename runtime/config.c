/* config.json: the tables below are the accepted subset of the OCI runtime
 * spec plus coil's `sandbox` object (config.schema.json says the same in JSON
 * Schema; keep the two in step). json_walk.c reads and frees by them. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "json_tree.h"
#include "json_walk.h"
#include "readall.h"

#define CONFIG_MAX_SIZE (16u << 20)
/* Real configs nest about 6 deep; yajl frees its tree recursively and would
 * overflow the stack on a pathological file long before the size cap. */
#define CONFIG_MAX_DEPTH 64

typedef struct coil_config cfg_t;
typedef struct coil_process proc_t;
typedef struct coil_linux lnx_t;
typedef struct coil_resources res_t;
typedef struct coil_seccomp scmp_t;
typedef struct coil_seccomp_syscall sys_t;
typedef struct coil_seccomp_arg arg_t;

/* ---- process ----------------------------------------------------------- */

static const struct jw_field console_fields[] = {
    JW_UINT32("height", proc_t, console_height, JW_NO_OFF, JW_REQUIRED),
    JW_UINT32("width", proc_t, console_width, JW_NO_OFF, JW_REQUIRED),
};
static const struct jw_object console_obj =
    JW_TABLE(proc_t, console_fields, NULL);

static const struct jw_field user_fields[] = {
    JW_UINT32("uid", proc_t, uid, JW_NO_OFF, JW_REQUIRED),
    JW_UINT32("gid", proc_t, gid, JW_NO_OFF, JW_REQUIRED),
    JW_UINT32("umask", proc_t, umask, JW_HAS(proc_t, has_umask), 0),
    JW_UINT32S("additionalGids", proc_t, additional_gids, n_additional_gids),
};
static const struct jw_object user_obj = JW_TABLE(proc_t, user_fields, NULL);

#define CAP_SET(k, set)                                                        \
  [set] =                                                                      \
      JW_STRINGS(k, proc_t, caps[set], JW_HAS(proc_t, has_caps[set]), 0, NULL)
static const struct jw_field caps_fields[] = {
    CAP_SET("bounding", COIL_CAP_BOUNDING),
    CAP_SET("effective", COIL_CAP_EFFECTIVE),
    CAP_SET("inheritable", COIL_CAP_INHERITABLE),
    CAP_SET("permitted", COIL_CAP_PERMITTED),
    CAP_SET("ambient", COIL_CAP_AMBIENT),
};
static const struct jw_object caps_obj = JW_TABLE(proc_t, caps_fields, NULL);

/* Names (RLIMIT_*) are checked by rlimits.c, which owns the mapping. */
static const struct jw_field rlimit_fields[] = {
    JW_STRING("type", struct coil_rlimit, type, JW_REQUIRED),
    JW_UINT64("hard", struct coil_rlimit, hard, JW_NO_OFF, JW_REQUIRED),
    JW_UINT64("soft", struct coil_rlimit, soft, JW_NO_OFF, JW_REQUIRED),
};
static const struct jw_object rlimit_obj =
    JW_TABLE(struct coil_rlimit, rlimit_fields, NULL);

static const struct jw_field process_fields[] = {
    JW_BOOLEAN("terminal", proc_t, terminal),
    JW_FLAT("consoleSize", JW_HAS(proc_t, has_console_size), 0, &console_obj),
    JW_FLAT("user", JW_NO_OFF, 0, &user_obj),
    JW_STRINGS("args", proc_t, args, JW_NO_OFF, JW_REQUIRED | JW_NONEMPTY,
               NULL),
    JW_STRINGS("env", proc_t, env, JW_NO_OFF, 0, NULL),
    JW_STRING("cwd", proc_t, cwd, JW_REQUIRED | JW_ABSOLUTE),
    JW_FLAT("capabilities", JW_HAS(proc_t, has_capabilities), 0, &caps_obj),
    JW_LIST("rlimits", proc_t, rlimits, n_rlimits, struct coil_rlimit, 0,
            &rlimit_obj),
    JW_BOOLEAN("noNewPrivileges", proc_t, no_new_privileges),
    JW_INTEGER("oomScoreAdj", proc_t, oom_score_adj,
               JW_HAS(proc_t, has_oom_score_adj), -1000, 1000, 0),
    JW_STRING("apparmorProfile", proc_t, apparmor_profile, 0),
    JW_STRING("selinuxLabel", proc_t, selinux_label, 0),
};
static const struct jw_object process_obj =
    JW_TABLE(proc_t, process_fields, NULL);

/* ---- mounts and hooks -------------------------------------------------- */

static const struct jw_field id_mapping_fields[] = {
    JW_UINT32("containerID", struct coil_id_mapping, container_id, JW_NO_OFF,
              JW_REQUIRED),
    JW_UINT32("hostID", struct coil_id_mapping, host_id, JW_NO_OFF,
              JW_REQUIRED),
    JW_UINT32("size", struct coil_id_mapping, size, JW_NO_OFF, JW_REQUIRED),
};
static const struct jw_object id_mapping_obj =
    JW_TABLE(struct coil_id_mapping, id_mapping_fields, NULL);

static const struct jw_field mount_fields[] = {
    JW_STRING("destination", struct coil_mount, destination,
              JW_REQUIRED | JW_ABSOLUTE),
    JW_STRING("type", struct coil_mount, type, 0),
    JW_STRING("source", struct coil_mount, source, 0),
    JW_STRINGS("options", struct coil_mount, options, JW_NO_OFF, 0, NULL),
    JW_LIST("uidMappings", struct coil_mount, uid_mappings, n_uid_mappings,
            struct coil_id_mapping, 0, &id_mapping_obj),
    JW_LIST("gidMappings", struct coil_mount, gid_mappings, n_gid_mappings,
            struct coil_id_mapping, 0, &id_mapping_obj),
};
static const struct jw_object mount_obj =
    JW_TABLE(struct coil_mount, mount_fields, NULL);

static const struct jw_field hook_fields[] = {
    JW_STRING("path", struct coil_hook, path, JW_REQUIRED | JW_ABSOLUTE),
    JW_STRINGS("args", struct coil_hook, args, JW_NO_OFF, 0, NULL),
    JW_STRINGS("env", struct coil_hook, env, JW_HAS(struct coil_hook, has_env),
               0, NULL),
    JW_INTEGER("timeout", struct coil_hook, timeout,
               JW_HAS(struct coil_hook, has_timeout), 1, INT_MAX, 0),
};
static const struct jw_object hook_obj =
    JW_TABLE(struct coil_hook, hook_fields, NULL);

/* Indexed by kind: config_hook_name() reads its keys. */
#define HOOK(k, kind)                                                          \
  [kind] = JW_LIST(k, cfg_t, hooks[kind].items, hooks[kind].n,                 \
                   struct coil_hook, 0, &hook_obj)
static const struct jw_field hooks_fields[] = {
    HOOK("prestart", COIL_HOOK_PRESTART),
    HOOK("createRuntime", COIL_HOOK_CREATE_RUNTIME),
    HOOK("createContainer", COIL_HOOK_CREATE_CONTAINER),
    HOOK("startContainer", COIL_HOOK_START_CONTAINER),
    HOOK("poststart", COIL_HOOK_POSTSTART),
    HOOK("poststop", COIL_HOOK_POSTSTOP),
};
_Static_assert(sizeof hooks_fields / sizeof hooks_fields[0] ==
                   COIL_HOOK_KIND_COUNT,
               "one hooks_fields row per hook kind");
static const struct jw_object hooks_obj = JW_TABLE(cfg_t, hooks_fields, NULL);

/* ---- linux: namespaces, id mappings, devices --------------------------- */

static const char *const ns_types[] = {"pid",  "network", "mount", "ipc", "uts",
                                       "user", "cgroup",  "time",  NULL};
static const int ns_flags[] = {CLONE_NEWPID,    CLONE_NEWNET, CLONE_NEWNS,
                               CLONE_NEWIPC,    CLONE_NEWUTS, CLONE_NEWUSER,
                               CLONE_NEWCGROUP, CLONE_NEWTIME};
_Static_assert(sizeof ns_flags / sizeof ns_flags[0] ==
                   sizeof ns_types / sizeof ns_types[0] - 1,
               "one clone flag per namespace type");

static int namespace_check(struct jw_walk *w, yajl_val v, void *dst) {
  (void)w;
  (void)v;
  struct coil_namespace *ns = dst;
  /* type is required and one of ns_types, so the index is valid. */
  ns->clone_flag = ns_flags[jw_choice_index(ns_types, ns->type)];
  return 0;
}

static const struct jw_field namespace_fields[] = {
    JW_ENUM("type", struct coil_namespace, type, JW_REQUIRED, ns_types),
    JW_STRING("path", struct coil_namespace, path, JW_ABSOLUTE),
};
static const struct jw_object namespace_obj =
    JW_TABLE(struct coil_namespace, namespace_fields, namespace_check);

static const char *const device_types[] = {"c", "b", "u", "p", NULL};

/* The spec needs major and minor for every device but a fifo. */
static int device_check(struct jw_walk *w, yajl_val v, void *dst) {
  const struct coil_device *d = dst;
  static const char *const numbers[] = {"major", "minor"};
  if (strcmp(d->type, "p") == 0)
    return 0;
  for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++)
    if (!jw_get(v, numbers[i])) {
      jw_push_key(w, numbers[i]);
      return jw_fail(w, "required for type \"%s\"", d->type);
    }
  return 0;
}

static const struct jw_field device_fields[] = {
    JW_STRING("path", struct coil_device, path, JW_REQUIRED | JW_ABSOLUTE),
    JW_ENUM("type", struct coil_device, type, JW_REQUIRED, device_types),
    JW_INT64("major", struct coil_device, major, JW_NO_OFF, 0, 0),
    JW_INT64("minor", struct coil_device, minor, JW_NO_OFF, 0, 0),
    JW_UINT32("fileMode", struct coil_device, file_mode,
              JW_HAS(struct coil_device, has_file_mode), 0),
    JW_UINT32("uid", struct coil_device, uid,
              JW_HAS(struct coil_device, has_uid), 0),
    JW_UINT32("gid", struct coil_device, gid,
              JW_HAS(struct coil_device, has_gid), 0),
};
static const struct jw_object device_obj =
    JW_TABLE(struct coil_device, device_fields, device_check);

/* ---- linux.resources --------------------------------------------------- */

/* As runc: swappiness is a percentage. */
static int memory_check(struct jw_walk *w, yajl_val v, void *dst) {
  (void)v;
  const struct coil_resources *r = dst;
  if (r->has_memory_swappiness && r->memory_swappiness > 100) {
    jw_push_key(w, "swappiness");
    return jw_fail(w, "%" PRIu64 " is not in 0-100", r->memory_swappiness);
  }
  return 0;
}

/* -1 means unlimited for all byte counts. */
static const struct jw_field memory_fields[] = {
    JW_INT64("limit", res_t, memory_limit, JW_HAS(res_t, has_memory_limit), -1,
             0),
    JW_INT64("reservation", res_t, memory_reservation,
             JW_HAS(res_t, has_memory_reservation), -1, 0),
    JW_INT64("swap", res_t, memory_swap, JW_HAS(res_t, has_memory_swap), -1, 0),
    JW_INT64("kernel", res_t, memory_kernel, JW_HAS(res_t, has_memory_kernel),
             -1, 0),
    JW_INT64("kernelTCP", res_t, memory_kernel_tcp,
             JW_HAS(res_t, has_memory_kernel_tcp), -1, 0),
    JW_UINT64("swappiness", res_t, memory_swappiness,
              JW_HAS(res_t, has_memory_swappiness), 0),
    JW_BOOLEAN("disableOOMKiller", res_t, memory_disable_oom_killer),
};
static const struct jw_object memory_obj =
    JW_TABLE(res_t, memory_fields, memory_check);

static const struct jw_field pids_fields[] = {
    JW_INT64("limit", res_t, pids_limit, JW_HAS(res_t, has_pids_limit),
             INT64_MIN, JW_REQUIRED),
};
static const struct jw_object pids_obj = JW_TABLE(res_t, pids_fields, NULL);

static const struct jw_field cpu_fields[] = {
    JW_UINT64("shares", res_t, cpu_shares, JW_HAS(res_t, has_cpu_shares), 0),
    JW_INT64("quota", res_t, cpu_quota, JW_HAS(res_t, has_cpu_quota), -1, 0),
    JW_UINT64("period", res_t, cpu_period, JW_HAS(res_t, has_cpu_period), 0),
    JW_ROW("idle", JW_I64, 0, JW_OFF(res_t, cpu_idle, int64_t),
           JW_HAS(res_t, has_cpu_idle), JW_NO_OFF, 0, 1, NULL, NULL),
    JW_STRING("cpus", res_t, cpu_cpus, 0),
    JW_STRING("mems", res_t, cpu_mems, 0),
};
static const struct jw_object cpu_obj = JW_TABLE(res_t, cpu_fields, NULL);

static const struct jw_field hugepage_fields[] = {
    JW_STRING("pageSize", struct coil_hugepage_limit, page_size, JW_REQUIRED),
    JW_UINT64("limit", struct coil_hugepage_limit, limit, JW_NO_OFF,
              JW_REQUIRED),
};
static const struct jw_object hugepage_obj =
    JW_TABLE(struct coil_hugepage_limit, hugepage_fields, NULL);

static int check_device_access(struct jw_walk *w, const char *s) {
  char safe[32];
  if (s[strspn(s, "rwm")])
    return jw_fail(w, "\"%s\": expected letters of \"rwm\"",
                   jw_printable(safe, sizeof safe, s));
  return 0;
}

static const char *const device_rule_types[] = {"a", "b", "c", NULL};

/* allow and access are required as runc requires them; -1 is "any" too. */
static const struct jw_field device_rule_fields[] = {
    JW_ROW("allow", JW_BOOL, JW_REQUIRED,
           JW_OFF(struct coil_device_rule, allow, bool), JW_NO_OFF, JW_NO_OFF,
           0, 0, NULL, NULL),
    JW_ENUM("type", struct coil_device_rule, type, 0, device_rule_types),
    JW_INT64("major", struct coil_device_rule, major,
             JW_HAS(struct coil_device_rule, has_major), -1, 0),
    JW_INT64("minor", struct coil_device_rule, minor,
             JW_HAS(struct coil_device_rule, has_minor), -1, 0),
    JW_VALIDATED("access", struct coil_device_rule, access,
                 JW_REQUIRED | JW_NONEMPTY, check_device_access),
};
static const struct jw_object device_rule_obj =
    JW_TABLE(struct coil_device_rule, device_rule_fields, NULL);

/* Weights are 10-1000 in the spec; 0 is "unset" in runc, so it is here. */
static const struct jw_field blkio_weight_device_fields[] = {
    JW_INT64("major", struct coil_blkio_weight_device, major, JW_NO_OFF, 0,
             JW_REQUIRED),
    JW_INT64("minor", struct coil_blkio_weight_device, minor, JW_NO_OFF, 0,
             JW_REQUIRED),
    JW_INTEGER("weight", struct coil_blkio_weight_device, weight, JW_NO_OFF, 0,
               1000, 0),
    JW_INTEGER("leafWeight", struct coil_blkio_weight_device, leaf_weight,
               JW_NO_OFF, 0, 1000, 0),
};
static const struct jw_object blkio_weight_device_obj =
    JW_TABLE(struct coil_blkio_weight_device, blkio_weight_device_fields, NULL);

static const struct jw_field blkio_rate_fields[] = {
    JW_INT64("major", struct coil_blkio_rate, major, JW_NO_OFF, 0, JW_REQUIRED),
    JW_INT64("minor", struct coil_blkio_rate, minor, JW_NO_OFF, 0, JW_REQUIRED),
    JW_UINT64("rate", struct coil_blkio_rate, rate, JW_NO_OFF, JW_REQUIRED),
};
static const struct jw_object blkio_rate_obj =
    JW_TABLE(struct coil_blkio_rate, blkio_rate_fields, NULL);

#define BLKIO_THROTTLE(key, which)                                             \
  JW_LIST(key, res_t, blkio_throttle[which], n_blkio_throttle[which],          \
          struct coil_blkio_rate, 0, &blkio_rate_obj)

static const struct jw_field blkio_fields[] = {
    JW_INTEGER("weight", res_t, blkio_weight, JW_NO_OFF, 0, 1000, 0),
    JW_INTEGER("leafWeight", res_t, blkio_leaf_weight, JW_NO_OFF, 0, 1000, 0),
    JW_LIST("weightDevice", res_t, blkio_weight_devices, n_blkio_weight_devices,
            struct coil_blkio_weight_device, 0, &blkio_weight_device_obj),
    BLKIO_THROTTLE("throttleReadBpsDevice", COIL_BLKIO_READ_BPS),
    BLKIO_THROTTLE("throttleWriteBpsDevice", COIL_BLKIO_WRITE_BPS),
    BLKIO_THROTTLE("throttleReadIOPSDevice", COIL_BLKIO_READ_IOPS),
    BLKIO_THROTTLE("throttleWriteIOPSDevice", COIL_BLKIO_WRITE_IOPS),
};
static const struct jw_object blkio_obj = JW_TABLE(res_t, blkio_fields, NULL);

/* network and rdma: not enforced by coil, ignored. */
static const struct jw_field resources_fields[] = {
    JW_FLAT("memory", JW_NO_OFF, 0, &memory_obj),
    JW_FLAT("pids", JW_NO_OFF, 0, &pids_obj),
    JW_FLAT("cpu", JW_NO_OFF, 0, &cpu_obj),
    JW_LIST("hugepageLimits", res_t, hugepage_limits, n_hugepage_limits,
            struct coil_hugepage_limit, 0, &hugepage_obj),
    JW_LIST("devices", res_t, devices, n_devices, struct coil_device_rule, 0,
            &device_rule_obj),
    JW_FLAT("blockIO", JW_NO_OFF, 0, &blkio_obj),
    JW_MAP("unified", res_t, unified, n_unified),
};
static const struct jw_object resources_obj =
    JW_TABLE(res_t, resources_fields, NULL);

/* ---- linux.seccomp ----------------------------------------------------- */

/* Action, operator, architecture and flag names are checked by
 * seccomp_profile.c against what libseccomp knows. */
static const struct jw_field seccomp_arg_fields[] = {
    JW_UINT32("index", arg_t, index, JW_NO_OFF, JW_REQUIRED),
    JW_UINT64("value", arg_t, value, JW_NO_OFF, JW_REQUIRED),
    JW_UINT64("valueTwo", arg_t, value_two, JW_NO_OFF, 0),
    JW_STRING("op", arg_t, op, JW_REQUIRED),
};
static const struct jw_object seccomp_arg_obj =
    JW_TABLE(arg_t, seccomp_arg_fields, NULL);

static const struct jw_field syscall_fields[] = {
    JW_STRINGS("names", sys_t, names, JW_NO_OFF, JW_REQUIRED | JW_NONEMPTY,
               NULL),
    JW_STRING("action", sys_t, action, JW_REQUIRED),
    JW_UINT32("errnoRet", sys_t, errno_ret, JW_HAS(sys_t, has_errno_ret), 0),
    JW_LIST("args", sys_t, args, n_args, arg_t, 0, &seccomp_arg_obj),
};
static const struct jw_object syscall_obj =
    JW_TABLE(sys_t, syscall_fields, NULL);

static const struct jw_field seccomp_fields[] = {
    JW_STRING("defaultAction", scmp_t, default_action, JW_REQUIRED),
    JW_UINT32("defaultErrnoRet", scmp_t, default_errno_ret,
              JW_HAS(scmp_t, has_default_errno_ret), 0),
    JW_STRINGS("architectures", scmp_t, architectures, JW_NO_OFF, 0, NULL),
    JW_STRINGS("flags", scmp_t, flags, JW_NO_OFF, 0, NULL),
    JW_LIST("syscalls", scmp_t, syscalls, n_syscalls, sys_t, 0, &syscall_obj),
};
static const struct jw_object seccomp_obj =
    JW_TABLE(scmp_t, seccomp_fields, NULL);

/* ---- linux ------------------------------------------------------------- */

static const char *const propagations[] = {
    "shared", "slave",    "private",     "unbindable", "rshared",
    "rslave", "rprivate", "runbindable", NULL};

static int linux_check(struct jw_walk *w, yajl_val v, void *dst) {
  (void)v;
  const struct coil_linux *l = dst;
  for (size_t i = 1; i < l->n_namespaces; i++)
    for (size_t j = 0; j < i; j++)
      if (l->namespaces[i].clone_flag == l->namespaces[j].clone_flag) {
        jw_push_key(w, "namespaces");
        jw_push_index(w, i);
        jw_push_key(w, "type");
        return jw_fail(w, "duplicate namespace \"%s\"", l->namespaces[i].type);
      }
  return 0;
}

static const struct jw_field linux_fields[] = {
    JW_LIST("namespaces", lnx_t, namespaces, n_namespaces,
            struct coil_namespace, 0, &namespace_obj),
    JW_LIST("uidMappings", lnx_t, uid_mappings, n_uid_mappings,
            struct coil_id_mapping, 0, &id_mapping_obj),
    JW_LIST("gidMappings", lnx_t, gid_mappings, n_gid_mappings,
            struct coil_id_mapping, 0, &id_mapping_obj),
    JW_MAP("sysctl", lnx_t, sysctl, n_sysctl),
    JW_NESTED("resources", lnx_t, resources, res_t,
              JW_HAS(lnx_t, has_resources), 0, &resources_obj),
    JW_STRING("cgroupsPath", lnx_t, cgroups_path, 0),
    JW_NESTED("seccomp", lnx_t, seccomp, scmp_t, JW_HAS(lnx_t, has_seccomp), 0,
              &seccomp_obj),
    JW_ENUM("rootfsPropagation", lnx_t, rootfs_propagation, 0, propagations),
    JW_STRINGS("maskedPaths", lnx_t, masked_paths, JW_NO_OFF, JW_ABSOLUTE,
               NULL),
    JW_STRINGS("readonlyPaths", lnx_t, readonly_paths, JW_NO_OFF, JW_ABSOLUTE,
               NULL),
    JW_LIST("devices", lnx_t, devices, n_devices, struct coil_device, 0,
            &device_obj),
    JW_STRING("mountLabel", lnx_t, mount_label, 0),
};
static const struct jw_object linux_obj =
    JW_TABLE(lnx_t, linux_fields, linux_check);

/* ---- sandbox (coil's extension) ---------------------------------------- */

/* The layers a bundle may switch off one at a time (docs/design.md,
 * Layers). */
const char *const coil_sandbox_layers[COIL_SANDBOX_LAYERS + 1] = {
    "userns",  "pidns",         "netns", "mountns",  "cgroup",
    "rlimits", "rlimit-memory", "caps",  "landlock", "seccomp",
    "audit",   "builtins",      "ast",   NULL};

static const struct jw_field python_fields[] = {
    JW_STRING("code", struct coil_sandbox, python_code,
              JW_REQUIRED | JW_NONEMPTY),
    JW_STRING("entry", struct coil_sandbox, python_entry, JW_NONEMPTY),
    JW_INTEGER("timeout", struct coil_sandbox, timeout,
               JW_HAS(struct coil_sandbox, has_timeout), 1, 3600, 0),
    JW_INTEGER("maxRequest", struct coil_sandbox, max_request,
               JW_HAS(struct coil_sandbox, has_max_request), 2, 64 << 20, 0),
    JW_INTEGER("maxOutput", struct coil_sandbox, max_output,
               JW_HAS(struct coil_sandbox, has_max_output), 64, 64 << 20, 0),
};
static const struct jw_object python_obj =
    JW_TABLE(struct coil_sandbox, python_fields, NULL);

static const struct jw_field sandbox_fields[] = {
    JW_FLAT("python", JW_HAS(struct coil_sandbox, has_python), 0, &python_obj),
    JW_STRINGS("disable", struct coil_sandbox, disable, JW_NO_OFF, 0,
               coil_sandbox_layers),
};
static const struct jw_object sandbox_obj =
    JW_TABLE(struct coil_sandbox, sandbox_fields, NULL);

/* ---- the document ------------------------------------------------------ */

static int check_oci_version(struct jw_walk *w, const char *v) {
  char safe[64];
  if (strncmp(v, "1.", 2) != 0 || !isdigit((unsigned char)v[2]))
    return jw_fail(w, "unsupported version \"%s\", expected 1.x",
                   jw_printable(safe, sizeof safe, v));
  return 0;
}

static const struct jw_field root_fields[] = {
    JW_STRING("path", cfg_t, root_path, JW_REQUIRED | JW_NONEMPTY),
    JW_BOOLEAN("readonly", cfg_t, root_readonly),
};
static const struct jw_object root_obj = JW_TABLE(cfg_t, root_fields, NULL);

static const struct jw_field config_fields[] = {
    JW_VALIDATED("ociVersion", cfg_t, oci_version, JW_REQUIRED,
                 check_oci_version),
    JW_FLAT("root", JW_NO_OFF, JW_REQUIRED, &root_obj),
    JW_NESTED("process", cfg_t, process, proc_t, JW_HAS(cfg_t, has_process), 0,
              &process_obj),
    JW_STRING("hostname", cfg_t, hostname, 0),
    JW_STRING("domainname", cfg_t, domainname, 0),
    JW_LIST("mounts", cfg_t, mounts, n_mounts, struct coil_mount, 0,
            &mount_obj),
    JW_FLAT("hooks", JW_NO_OFF, 0, &hooks_obj),
    JW_MAP("annotations", cfg_t, annotations, n_annotations),
    JW_NESTED("linux", cfg_t, lnx, lnx_t, JW_HAS(cfg_t, has_linux), 0,
              &linux_obj),
    JW_NESTED("sandbox", cfg_t, sandbox, struct coil_sandbox,
              JW_HAS(cfg_t, sandbox.present), 0, &sandbox_obj),
};
static const struct jw_object config_obj = JW_TABLE(cfg_t, config_fields, NULL);

const char *config_hook_name(enum coil_hook_kind k) {
  return (unsigned)k < COIL_HOOK_KIND_COUNT ? hooks_fields[k].key : "unknown";
}

void config_free(struct coil_config *c) {
  if (!c)
    return;
  jw_free_object(&config_obj, c);
  free(c);
}

static int doc_error(struct coil_error *err, const char *name, const char *fmt,
                     ...) __attribute__((format(printf, 3, 4)));

static int doc_error(struct coil_error *err, const char *name, const char *fmt,
                     ...) {
  char what[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return coil_error_set(err, EINVAL, "%s%s%s", name ? name : "",
                        name ? ": " : "", what);
}

/* What yajl would take but a JSON tool would not read the same way: a NUL
 * byte (yajl stops there), "\u0000" (truncates the C string), comments (yajl's
 * tree parser allows them), and nesting deep enough to exhaust the stack. */
static int scan_document(const char *buf, size_t len, const char *name,
                         struct coil_error *err) {
  bool in_string = false, escaped = false, seen = false;
  size_t depth = 0;
  for (size_t i = 0; i < len; i++) {
    char c = buf[i];
    if (c == '\0')
      return doc_error(err, name, "invalid JSON: NUL byte at offset %zu", i);
    if (in_string) {
      if (escaped && c == 'u' && len - i > 4 && !memcmp(buf + i + 1, "0000", 4))
        return doc_error(err, name, "\\u0000 at offset %zu is not supported",
                         i - 1);
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '/')
      return doc_error(err, name, "invalid JSON: comment at offset %zu", i);
    else if ((c == '[' || c == '{') && ++depth > CONFIG_MAX_DEPTH)
      return doc_error(err, name, "nested deeper than %d levels at offset %zu",
                       CONFIG_MAX_DEPTH, i);
    else if ((c == ']' || c == '}') && depth > 0)
      depth--;
    seen = seen || !isspace((unsigned char)c);
  }
  if (!seen)
    return doc_error(err, name, "empty document, expected an object");
  return 0;
}

/* yajl's message spans three lines (text, excerpt, caret): make it one. */
static void one_line(char *s) {
  char *o = s;
  for (char *p = s; *p; p++) {
    bool space = isspace((unsigned char)*p) || iscntrl((unsigned char)*p);
    if (space && (o == s || o[-1] == ' '))
      continue;
    *o++ = space ? ' ' : *p;
  }
  while (o > s && o[-1] == ' ')
    o--;
  *o = '\0';
}

static void tree_freep(yajl_val *v) {
  if (*v)
    yajl_tree_free(*v);
}

/* The checked yajl tree of a document; name prefixes document-level
 * errors (NULL when the caller adds the file). */
static int parse_tree(const char *buf, size_t len, const char *name,
                      yajl_val *tree, struct coil_error *err) {
  if (scan_document(buf, len, name, err) < 0)
    return -1;
  char yerr[512] = "";
  *tree = json_tree_parse(buf, len, yerr, sizeof yerr, NULL);
  if (!*tree) {
    one_line(yerr);
    return doc_error(err, name, "invalid JSON: %s",
                     *yerr ? yerr : "parse error");
  }
  return 0;
}

static int parse_document(const char *buf, size_t len, const char *name,
                          struct coil_config **out, struct coil_error *err) {
  *out = NULL;
  __attribute__((cleanup(tree_freep))) yajl_val tree = NULL;
  if (parse_tree(buf, len, name, &tree, err) < 0)
    return -1;
  struct coil_config *c = calloc(1, sizeof *c);
  if (!c)
    return coil_error_set(err, ENOMEM, "config.json: out of memory");
  struct jw_walk w = {.err = err};
  if (jw_read_object(&w, &config_obj, tree, c) < 0) {
    config_free(c);
    return -1;
  }
  *out = c;
  return 0;
}

int config_parse_resources(const char *buf, size_t len, const char *name,
                           struct coil_resources *out, struct coil_error *err) {
  *out = (struct coil_resources){0};
  __attribute__((cleanup(tree_freep))) yajl_val tree = NULL;
  if (parse_tree(buf, len, name, &tree, err) < 0)
    return -1;
  /* Errors name the field as in config.json. */
  struct jw_walk w = {.err = err};
  jw_push_key(&w, "linux");
  jw_push_key(&w, "resources");
  if (jw_read_object(&w, &resources_obj, tree, out) < 0) {
    config_resources_free(out);
    return coil_error_prefix(err, "%s", name);
  }
  return 0;
}

void config_resources_free(struct coil_resources *r) {
  jw_free_object(&resources_obj, r);
  *r = (struct coil_resources){0};
}

int config_parse_process(const char *buf, size_t len, const char *name,
                         struct coil_process *out, struct coil_error *err) {
  *out = (struct coil_process){0};
  __attribute__((cleanup(tree_freep))) yajl_val tree = NULL;
  if (parse_tree(buf, len, name, &tree, err) < 0)
    return -1;
  /* Errors name the field as in config.json. */
  struct jw_walk w = {.err = err};
  jw_push_key(&w, "process");
  if (jw_read_object(&w, &process_obj, tree, out) < 0) {
    config_process_free(out);
    return coil_error_prefix(err, "%s", name);
  }
  return 0;
}

void config_process_free(struct coil_process *p) {
  jw_free_object(&process_obj, p);
  *p = (struct coil_process){0};
}

static bool mount_is_bind(const struct coil_mount *m) {
  if (m->type && strcmp(m->type, "bind") == 0)
    return true;
  for (size_t i = 0; i < m->options.n; i++)
    if (!strcmp(m->options.v[i], "bind") || !strcmp(m->options.v[i], "rbind"))
      return true;
  return false;
}

int config_resolve_mount_sources(struct coil_config *c, const char *bundle,
                                 struct coil_error *err) {
  for (size_t i = 0; i < c->n_mounts; i++) {
    struct coil_mount *m = &c->mounts[i];
    if (!m->source || !m->source[0] || m->source[0] == '/' || !mount_is_bind(m))
      continue;
    char *abs = NULL;
    if (asprintf(&abs, "%s/%s", bundle, m->source) < 0)
      return coil_error_sys(err, ENOMEM, "mounts[%zu].source", i);
    free(m->source);
    m->source = abs;
  }
  return 0;
}

int config_parse(const char *buf, size_t len, struct coil_config **out,
                 struct coil_error *err) {
  return parse_document(buf, len, "config.json", out, err);
}

/* Reads at most CONFIG_MAX_SIZE bytes; the file may change while read. */
int config_read_file(const char *path, char **out, size_t *len,
                     struct coil_error *err) {
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return coil_error_sys(err, errno, "open %s", path);
  struct stat st;
  if (fstat(fd, &st) < 0)
    return coil_error_sys(err, errno, "stat %s", path);
  if (!S_ISREG(st.st_mode))
    return coil_error_set(err, EINVAL, "%s: not a regular file", path);
  if (st.st_size > (off_t)CONFIG_MAX_SIZE)
    return coil_error_set(err, EFBIG, "%s: larger than %u MiB", path,
                          CONFIG_MAX_SIZE >> 20);
  if (read_all(fd, CONFIG_MAX_SIZE, false, out, len, err) < 0)
    return coil_error_prefix(err, "%s", path);
  return 0;
}

int config_parse_file(const char *path, struct coil_config **out,
                      struct coil_error *err) {
  *out = NULL;
  cleanup_free char *buf = NULL;
  size_t len = 0;
  if (config_read_file(path, &buf, &len, err) < 0)
    return -1;
  if (parse_document(buf, len, NULL, out, err) < 0)
    return coil_error_prefix(err, "%s", path);
  return 0;
}
