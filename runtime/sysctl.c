#include "sysctl.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "namespaces.h"

static const char *const ipc_keys[] = {
    "kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.sem",
    "kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.shm_rmid_forced",
};

/* The namespace a key belongs to, or 0 when it is not namespaced. */
static int key_namespace(const char *key) {
  for (size_t i = 0; i < sizeof ipc_keys / sizeof ipc_keys[0]; i++)
    if (strcmp(key, ipc_keys[i]) == 0)
      return CLONE_NEWIPC;
  if (strncmp(key, "fs.mqueue.", 10) == 0)
    return CLONE_NEWIPC;
  if (strncmp(key, "net.", 4) == 0)
    return CLONE_NEWNET;
  return 0;
}

static const char *ns_name(int flag) {
  return flag == CLONE_NEWIPC ? "ipc" : "network";
}

/* "net.ipv4.ip_forward" or "net/ipv4/ip_forward" ->
 * "/proc/sys/net/ipv4/ip_forward". */
static int key_path(const char *key, char *out, size_t cap) {
  int n = snprintf(out, cap, "/proc/sys/%s", key);
  if (n < 0 || (size_t)n >= cap)
    return -1;
  for (char *p = out + 10; *p; p++)
    if (*p == '.')
      *p = '/';
  return strstr(out + 10, "//") || out[n - 1] == '/' ? -1 : 0;
}

int sysctl_validate(const struct coil_linux *l, struct coil_error *err) {
  for (size_t i = 0; i < l->n_sysctl; i++) {
    const char *key = l->sysctl[i].key;
    char normal[256];
    snprintf(normal, sizeof normal, "%s", key);
    for (char *p = normal; *p; p++)
      if (*p == '/')
        *p = '.';
    char path[512];
    if (!*key || strstr(key, "..") || key_path(normal, path, sizeof path) < 0)
      return coil_error_set(err, EINVAL, "linux.sysctl.%s: invalid key", key);
    /* As runc: the names have their own config fields, which a sysctl
     * would silently contradict. */
    if (strcmp(normal, "kernel.hostname") == 0 ||
        strcmp(normal, "kernel.domainname") == 0)
      return coil_error_set(err, EINVAL,
                            "linux.sysctl.%s: not allowed, set it with the "
                            "\"%s\" field",
                            key, normal + strlen("kernel."));
    int ns = key_namespace(normal);
    if (!ns)
      return coil_error_set(
          err, EPERM, "linux.sysctl.%s: not a namespaced sysctl, refused", key);
    /* The host's namespace, shared or joined by path, is not the
     * container's to change. One joined by path that is not coil's own is
     * the container's, as runc takes it: engines make it for the container
     * (podman's network, a pod's infra container). */
    bool host = !namespaces_has(l, ns);
    if (!host && namespaces_joins_runtimes(l, ns, &host, err) < 0)
      return coil_error_prefix(err, "linux.sysctl.%s", key);
    if (host)
      return coil_error_set(err, EPERM,
                            "linux.sysctl.%s: needs a %s namespace of the "
                            "container's own (linux.namespaces has none, or "
                            "joins the runtime's)",
                            key, ns_name(ns));
  }
  return 0;
}

int sysctl_apply(const struct coil_linux *l, struct coil_error *err) {
  for (size_t i = 0; i < l->n_sysctl; i++) {
    char normal[256], path[512];
    snprintf(normal, sizeof normal, "%s", l->sysctl[i].key);
    for (char *p = normal; *p; p++)
      if (*p == '/')
        *p = '.';
    if (key_path(normal, path, sizeof path) < 0)
      return coil_error_set(err, EINVAL, "linux.sysctl.%s: invalid key",
                            l->sysctl[i].key);
    cleanup_close int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
      return coil_error_sys(err, errno, "linux.sysctl.%s: open %s",
                            l->sysctl[i].key, path);
    const char *v = l->sysctl[i].value;
    if (write(fd, v, strlen(v)) < 0)
      return coil_error_sys(err, errno, "linux.sysctl.%s: write %s",
                            l->sysctl[i].key, path);
  }
  return 0;
}
