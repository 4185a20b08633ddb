/* state, list, spec, features: commands that read or describe. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>

#include "caps.h"
#include "cleanup.h"
#include "cmd.h"
#include "container.h"
#include "log.h"
#include "oci_state.h"
#include "seccomp_profile.h"

int cmd_state(const struct global_opts *g, int argc, char **argv) {
  if (argc != 2 || argv[1][0] == '-')
    return cmd_usage_error("state", "expected exactly one container ID");
  struct coil_error err = {0};
  cleanup_free char *json = NULL;
  if (container_state_json(g->root, argv[1], true, &json, &err) < 0) {
    log_error("%s", err.msg);
    return EXIT_ERR;
  }
  fputs(json, stdout);
  return EXIT_OK;
}

static void gen_s(yajl_gen y, const char *s) {
  yajl_gen_string(y, (const unsigned char *)s, strlen(s));
}

static void print_list_json(const struct coil_container_info *l, size_t n) {
  yajl_gen y = yajl_gen_alloc(NULL);
  yajl_gen_array_open(y);
  for (size_t i = 0; i < n; i++) {
    yajl_gen_map_open(y);
    gen_s(y, "ociVersion");
    gen_s(y, COIL_OCI_VERSION);
    gen_s(y, "id");
    gen_s(y, l[i].id);
    gen_s(y, "pid");
    yajl_gen_integer(y, l[i].pid);
    gen_s(y, "status");
    gen_s(y, l[i].status);
    gen_s(y, "bundle");
    gen_s(y, l[i].bundle);
    gen_s(y, "created");
    gen_s(y, l[i].created ? l[i].created : "");
    yajl_gen_map_close(y);
  }
  yajl_gen_array_close(y);
  const unsigned char *buf;
  size_t len;
  yajl_gen_get_buf(y, &buf, &len);
  fwrite(buf, 1, len, stdout);
  fputc('\n', stdout);
  yajl_gen_free(y);
}

int cmd_list(const struct global_opts *g, int argc, char **argv) {
  static const struct option opts[] = {{"format", required_argument, NULL, 'f'},
                                       {"quiet", no_argument, NULL, 'q'},
                                       {NULL, 0, NULL, 0}};
  const char *format = "table";
  bool quiet = false;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+f:q", opts, NULL)) != -1) {
    if (c == 'f')
      format = optarg;
    else if (c == 'q')
      quiet = true;
    else
      return cmd_usage_error("list", "unknown or incomplete option \"%s\"",
                             argv[optind - 1]);
  }
  if (optind != argc)
    return cmd_usage_error("list", "takes no arguments");
  if (strcmp(format, "table") != 0 && strcmp(format, "json") != 0)
    return cmd_usage_error(
        "list", "--format: expected table or json, got \"%s\"", format);
  struct coil_error err = {0};
  struct coil_container_info *l = NULL;
  size_t n = 0;
  if (container_list(g->root, &l, &n, &err) < 0) {
    log_error("%s", err.msg);
    return EXIT_ERR;
  }
  if (quiet) {
    for (size_t i = 0; i < n; i++)
      printf("%s\n", l[i].id);
  } else if (strcmp(format, "json") == 0) {
    print_list_json(l, n);
  } else {
    printf("%-20s %-8s %-10s %-40s %s\n", "ID", "PID", "STATUS", "BUNDLE",
           "CREATED");
    for (size_t i = 0; i < n; i++)
      printf("%-20s %-8d %-10s %-40s %s\n", l[i].id, l[i].pid, l[i].status,
             l[i].bundle, l[i].created ? l[i].created : "");
  }
  container_list_free(l, n);
  return EXIT_OK;
}

/* A runnable default: like runc's, but without a terminal (so create and
 * run --detach need no console socket) and with a size-capped /tmp. The
 * namespaces go in at %s. */
static const char default_spec[] =
    "{\n"
    "  \"ociVersion\": \"" COIL_OCI_VERSION "\",\n"
    "  \"process\": {\n"
    "    \"terminal\": false,\n"
    "    \"user\": {\"uid\": 0, \"gid\": 0},\n"
    "    \"args\": [\"sh\"],\n"
    "    \"env\": "
    "[\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\", "
    "\"TERM=xterm\"],\n"
    "    \"cwd\": \"/\",\n"
    "    \"capabilities\": {\n"
    "      \"bounding\": [\"CAP_AUDIT_WRITE\", \"CAP_KILL\", "
    "\"CAP_NET_BIND_SERVICE\"],\n"
    "      \"effective\": [\"CAP_AUDIT_WRITE\", \"CAP_KILL\", "
    "\"CAP_NET_BIND_SERVICE\"],\n"
    "      \"permitted\": [\"CAP_AUDIT_WRITE\", \"CAP_KILL\", "
    "\"CAP_NET_BIND_SERVICE\"]\n"
    "    },\n"
    "    \"rlimits\": [{\"type\": \"RLIMIT_NOFILE\", \"hard\": 1024, \"soft\": "
    "1024}],\n"
    "    \"noNewPrivileges\": true\n"
    "  },\n"
    "  \"root\": {\"path\": \"rootfs\", \"readonly\": true},\n"
    "  \"hostname\": \"coil\",\n"
    "  \"mounts\": [\n"
    "    {\"destination\": \"/proc\", \"type\": \"proc\", \"source\": "
    "\"proc\"},\n"
    "    {\"destination\": \"/dev\", \"type\": \"tmpfs\", \"source\": "
    "\"tmpfs\",\n"
    "     \"options\": [\"nosuid\", \"strictatime\", \"mode=755\", "
    "\"size=65536k\"]},\n"
    "    {\"destination\": \"/dev/pts\", \"type\": \"devpts\", \"source\": "
    "\"devpts\",\n"
    "     \"options\": [\"nosuid\", \"noexec\", \"newinstance\", "
    "\"ptmxmode=0666\", "
    "\"mode=0620\"]},\n"
    "    {\"destination\": \"/dev/shm\", \"type\": \"tmpfs\", \"source\": "
    "\"shm\",\n"
    "     \"options\": [\"nosuid\", \"noexec\", \"nodev\", \"mode=1777\", "
    "\"size=65536k\"]},\n"
    "    {\"destination\": \"/dev/mqueue\", \"type\": \"mqueue\", \"source\": "
    "\"mqueue\",\n"
    "     \"options\": [\"nosuid\", \"noexec\", \"nodev\"]},\n"
    "    {\"destination\": \"/tmp\", \"type\": \"tmpfs\", \"source\": "
    "\"tmpfs\",\n"
    "     \"options\": [\"nosuid\", \"nodev\", \"mode=1777\", "
    "\"size=65536k\"]}\n"
    "  ],\n"
    "  \"linux\": {\n"
    "%s"
    "    \"maskedPaths\": [\"/proc/acpi\", \"/proc/asound\", \"/proc/kcore\", "
    "\"/proc/keys\",\n"
    "      \"/proc/latency_stats\", \"/proc/timer_list\", "
    "\"/proc/timer_stats\",\n"
    "      \"/proc/sched_debug\", \"/sys/firmware\", \"/proc/scsi\"],\n"
    "    \"readonlyPaths\": [\"/proc/bus\", \"/proc/fs\", \"/proc/irq\", "
    "\"/proc/sys\",\n"
    "      \"/proc/sysrq-trigger\"]\n"
    "  }\n"
    "}\n";

static const char root_namespaces[] =
    "    \"namespaces\": [{\"type\": \"pid\"}, {\"type\": \"network\"}, "
    "{\"type\": \"ipc\"},\n"
    "                   {\"type\": \"uts\"}, {\"type\": \"mount\"}, "
    "{\"type\": \"cgroup\"}],\n";

/* As runc's spec --rootless: a user namespace mapping container root to the
 * caller's ids (one each, all an unprivileged user may map) and no network
 * namespace (its loopback only would be of no use; runc leaves it out
 * too). The default has no resources and no uid=/gid= mount options, which
 * runc also drops. */
static char *rootless_namespaces(void) {
  char *s = NULL;
  if (asprintf(&s,
               "    \"namespaces\": [{\"type\": \"pid\"}, {\"type\": "
               "\"ipc\"}, {\"type\": \"uts\"},\n"
               "                   {\"type\": \"mount\"}, {\"type\": "
               "\"cgroup\"}, {\"type\": \"user\"}],\n"
               "    \"uidMappings\": [{\"containerID\": 0, \"hostID\": %u, "
               "\"size\": 1}],\n"
               "    \"gidMappings\": [{\"containerID\": 0, \"hostID\": %u, "
               "\"size\": 1}],\n",
               (unsigned)geteuid(), (unsigned)getegid()) < 0)
    return NULL;
  return s;
}

int cmd_spec(const struct global_opts *g, int argc, char **argv) {
  (void)g;
  static const struct option opts[] = {{"bundle", required_argument, NULL, 'b'},
                                       {"rootless", no_argument, NULL, 'r'},
                                       {NULL, 0, NULL, 0}};
  const char *bundle = ".";
  bool rootless = false;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+b:", opts, NULL)) != -1) {
    if (c == 'b')
      bundle = optarg;
    else if (c == 'r')
      rootless = true;
    else
      return cmd_usage_error("spec", "unknown or incomplete option \"%s\"",
                             argv[optind - 1]);
  }
  if (optind != argc)
    return cmd_usage_error("spec", "takes no arguments");
  cleanup_free char *path = NULL;
  if (asprintf(&path, "%s/config.json", bundle) < 0)
    return EXIT_ERR;
  cleanup_close int fd =
      open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST)
      log_error("spec: %s exists; remove it first", path);
    else
      log_error("spec: create %s: %s", path, strerror(errno));
    return EXIT_ERR;
  }
  cleanup_free char *ns = rootless ? rootless_namespaces() : NULL;
  cleanup_free char *text = NULL;
  if ((rootless && !ns) ||
      asprintf(&text, default_spec, rootless ? ns : root_namespaces) < 0) {
    log_error("spec: out of memory");
    unlink(path);
    return EXIT_ERR;
  }
  size_t len = strlen(text);
  if (write(fd, text, len) != (ssize_t)len) {
    log_error("spec: write %s: %s", path, strerror(errno));
    unlink(path);
    return EXIT_ERR;
  }
  return EXIT_OK;
}

/* One name of a JSON list of strings; *first says whether it opens it. */
static void print_name(const char *name, void *first) {
  printf("%s\"%s\"", *(bool *)first ? "" : ", ", name);
  *(bool *)first = false;
}

int cmd_features(const struct global_opts *g, int argc, char **argv) {
  (void)g;
  (void)argv;
  if (argc != 1)
    return cmd_usage_error("features", "takes no arguments");
  fputs("{\n"
        "  \"ociVersionMin\": \"1.0.0\",\n"
        "  \"ociVersionMax\": \"" COIL_OCI_VERSION "\",\n"
        "  \"hooks\": [\"prestart\", \"createRuntime\", \"createContainer\", "
        "\"startContainer\", \"poststart\", \"poststop\"],\n"
        "  \"mountOptions\": [\"async\", \"atime\", \"bind\", \"defaults\", "
        "\"dev\", \"diratime\", \"dirsync\", \"exec\", \"idmap\", "
        "\"lazytime\", \"mand\", \"noatime\", \"nodev\", \"nodiratime\", "
        "\"noexec\", \"nolazytime\", \"nomand\", \"norelatime\", "
        "\"nostrictatime\", \"nosuid\", \"nosymfollow\", \"private\", "
        "\"ratime\", \"rbind\", \"rdev\", \"rdiratime\", \"relatime\", "
        "\"remount\", \"rexec\", \"ridmap\", \"rnoatime\", \"rnodev\", "
        "\"rnodiratime\", \"rnoexec\", \"rnorelatime\", \"rnostrictatime\", "
        "\"rnosuid\", \"rnosymfollow\", \"ro\", \"rprivate\", \"rrelatime\", "
        "\"rro\", \"rrw\", \"rshared\", \"rslave\", \"rstrictatime\", "
        "\"rsuid\", \"rsymfollow\", \"runbindable\", \"rw\", \"shared\", "
        "\"slave\", \"strictatime\", \"suid\", \"symfollow\", \"sync\", "
        "\"tmpcopyup\", \"unbindable\"],\n"
        "  \"linux\": {\n"
        "    \"capabilities\": [",
        stdout);
  bool first = true;
  caps_each_name(print_name, &first);
  fputs(
      "],\n"
      "    \"namespaces\": [\"cgroup\", \"ipc\", \"mount\", \"network\", "
      "\"pid\", "
      "\"user\", \"uts\"],\n"
      "    \"cgroup\": {\"v1\": true, \"v2\": true, \"systemd\": true, "
      "\"systemdUser\": false},\n"
      "    \"seccomp\": {\n"
      "      \"enabled\": true,\n"
      "      \"actions\": [\"SCMP_ACT_ALLOW\", \"SCMP_ACT_ERRNO\", "
      "\"SCMP_ACT_KILL\", "
      "\"SCMP_ACT_KILL_PROCESS\", \"SCMP_ACT_KILL_THREAD\", \"SCMP_ACT_LOG\", "
      "\"SCMP_ACT_TRACE\", \"SCMP_ACT_TRAP\"],\n"
      "      \"operators\": [\"SCMP_CMP_EQ\", \"SCMP_CMP_GE\", "
      "\"SCMP_CMP_GT\", "
      "\"SCMP_CMP_LE\", \"SCMP_CMP_LT\", \"SCMP_CMP_MASKED_EQ\", "
      "\"SCMP_CMP_NE\"],\n"
      "      \"archs\": [",
      stdout);
  first = true;
  seccomp_profile_each_arch(print_name, &first);
  fputs("],\n      \"knownFlags\": [", stdout);
  first = true;
  seccomp_profile_each_flag(print_name, &first);
  fputs("],\n      \"supportedFlags\": [", stdout);
  first = true;
  seccomp_profile_each_flag(print_name, &first);
  fputs("]\n"
        "    },\n"
        "    \"apparmor\": {\"enabled\": false},\n"
        "    \"selinux\": {\"enabled\": false},\n"
        "    \"mountExtensions\": {\"idmap\": {\"enabled\": true}}\n"
        "  },\n"
        "  \"annotations\": {\"org.coil.sandbox\": \"python\", "
        "\"org.coil.linux.resources.devices\": \"true\"}\n"
        "}\n",
        stdout);
  return EXIT_OK;
}
