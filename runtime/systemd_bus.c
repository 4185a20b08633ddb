/* systemd's manager over the system bus; see systemd_bus.h. */
#include "systemd_bus.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <time.h>

#include "cleanup.h"

/* libsystemd is loaded only when the systemd cgroup driver talks to
 * systemd: it pulls in libgcrypt, liblzma, libzstd and more, which every
 * other command would map and relocate at start for nothing (systemd loads
 * its own optional libraries the same way). The header still types every
 * call: each entry has the type of the function it names. */
#define LIBSYSTEMD "libsystemd.so.0"
#define SD_BUS_CALLS(X)                                                        \
  X(call)                                                                      \
  X(call_method)                                                               \
  X(error_free)                                                                \
  X(error_has_name)                                                            \
  X(error_is_set)                                                              \
  X(flush_close_unref)                                                         \
  X(match_signal)                                                              \
  X(message_append)                                                            \
  X(message_append_array)                                                      \
  X(message_close_container)                                                   \
  X(message_new_method_call)                                                   \
  X(message_open_container)                                                    \
  X(message_read)                                                              \
  X(message_unref)                                                             \
  X(open_system)                                                               \
  X(process)                                                                   \
  X(slot_unref)                                                                \
  X(wait)
#define SD_BUS_ENTRY(f) typeof(sd_bus_##f) *f;
static struct { SD_BUS_CALLS(SD_BUS_ENTRY) } sd;
static bool sd_loaded;

static int sd_load(struct coil_error *err) {
  if (sd_loaded)
    return 0;
  void *h = dlopen(LIBSYSTEMD, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return coil_error_set(err, ENOENT,
                          "--systemd-cgroup: cannot load " LIBSYSTEMD
                          " (the systemd cgroup driver needs it): %s",
                          dlerror());
#define SD_BUS_RESOLVE(f)                                                      \
  if (!(sd.f = (typeof(sd_bus_##f) *)dlsym(h, "sd_bus_" #f)))                  \
    return coil_error_set(                                                     \
        err, ENOSYS, "--systemd-cgroup: " LIBSYSTEMD " has no sd_bus_" #f);
  SD_BUS_CALLS(SD_BUS_RESOLVE)
  sd_loaded = true;
  return 0;
}

#define DEST "org.freedesktop.systemd1"
#define PATH "/org/freedesktop/systemd1"
#define MANAGER DEST ".Manager"
/* How long a unit's start or stop job may take, as runc allows. */
#define JOB_TIMEOUT_US (30ULL * 1000000)

/* NULL-safe, as sd-bus's own are: each stays NULL when libsystemd could
 * not be loaded. */
static void bus_unrefp(sd_bus **b) {
  if (*b)
    sd.flush_close_unref(*b);
}
static void msg_unrefp(sd_bus_message **m) {
  if (*m)
    sd.message_unref(*m);
}
static void slot_unrefp(sd_bus_slot **s) {
  if (*s)
    sd.slot_unref(*s);
}
#define cleanup_bus __attribute__((cleanup(bus_unrefp)))
#define cleanup_msg __attribute__((cleanup(msg_unrefp)))
#define cleanup_slot __attribute__((cleanup(slot_unrefp)))

static const char *bus_address(void) {
  const char *a = getenv("DBUS_SYSTEM_BUS_ADDRESS");
  return a && *a ? a : "unix:path=/run/dbus/system_bus_socket";
}

static int bus_open(sd_bus **bus, struct coil_error *err) {
  if (sd_load(err) < 0)
    return -1;
  int r = sd.open_system(bus);
  if (r < 0)
    return coil_error_sys(err, -r,
                          "--systemd-cgroup: cannot reach systemd on the "
                          "system bus %s",
                          bus_address());
  return 0;
}

/* A failed call's error, naming the call and the unit. */
static int call_failed(const char *what, const char *unit, int r,
                       sd_bus_error *e, struct coil_error *err) {
  if (sd.error_is_set(e))
    coil_error_set(err, -r ? -r : EIO, "systemd %s %s: %s", what, unit,
                   e->message ? e->message : e->name);
  else
    coil_error_sys(err, -r, "systemd %s %s", what, unit);
  sd.error_free(e);
  return -1;
}

static int append_props(sd_bus_message *m, const struct systemd_props *p) {
  int r = 0;
  for (size_t i = 0; r >= 0 && i < p->n; i++) {
    const struct systemd_prop *v = &p->v[i];
    switch (v->type) {
    case SDP_U64:
      r = sd.message_append(m, "(sv)", v->name, "t", v->u64);
      break;
    case SDP_BOOL:
      r = sd.message_append(m, "(sv)", v->name, "b", (int)(v->u64 != 0));
      break;
    case SDP_BYTES:
      if ((r = sd.message_open_container(m, 'r', "sv")) >= 0 &&
          (r = sd.message_append(m, "s", v->name)) >= 0 &&
          (r = sd.message_open_container(m, 'v', "ay")) >= 0 &&
          (r = sd.message_append_array(m, 'y', v->bytes, v->n_bytes)) >= 0 &&
          (r = sd.message_close_container(m)) >= 0)
        r = sd.message_close_container(m);
      break;
    }
  }
  return r;
}

/* A job's end, told by the manager's JobRemoved signal. */
struct job_wait {
  const char *path; /* the job's object path, once the call returned it */
  bool done;
  char result[32]; /* "done" when it succeeded */
};

static int on_job_removed(sd_bus_message *m, void *userdata,
                          sd_bus_error *ret_error) {
  (void)ret_error;
  struct job_wait *w = userdata;
  uint32_t id;
  const char *path, *unit, *result;
  if (!w->path || sd.message_read(m, "uoss", &id, &path, &unit, &result) < 0)
    return 0;
  if (!strcmp(path, w->path)) {
    w->done = true;
    snprintf(w->result, sizeof w->result, "%s", result);
  }
  return 0;
}

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Sends m (a call that returns a job) and waits for the job to end. The
 * JobRemoved match is in place before the call, so a job that ends before
 * the reply arrives is not missed: its signal waits in the bus's queue. */
static int run_job(sd_bus *bus, sd_bus_message *m, const char *what,
                   const char *unit, sd_bus_error *e, struct coil_error *err) {
  cleanup_slot sd_bus_slot *slot = NULL;
  struct job_wait w = {0};
  int r = sd.match_signal(bus, &slot, DEST, PATH, MANAGER, "JobRemoved",
                          on_job_removed, &w);
  if (r < 0)
    return coil_error_sys(err, -r, "systemd %s %s: watch its job", what, unit);
  /* Job signals go out only to subscribed clients. */
  r = sd.call_method(bus, DEST, PATH, MANAGER, "Subscribe", e, NULL, "");
  if (r < 0 &&
      !sd.error_has_name(e, "org.freedesktop.systemd1.AlreadySubscribed"))
    return call_failed("Subscribe for", unit, r, e, err);
  sd.error_free(e);
  cleanup_msg sd_bus_message *reply = NULL;
  r = sd.call(bus, m, JOB_TIMEOUT_US, e, &reply);
  if (r < 0)
    return -1;
  if ((r = sd.message_read(reply, "o", &w.path)) < 0)
    return coil_error_sys(err, -r, "systemd %s %s: read the job", what, unit);
  uint64_t deadline = now_us() + JOB_TIMEOUT_US;
  while (!w.done) {
    r = sd.process(bus, NULL);
    if (r < 0)
      return coil_error_sys(err, -r, "systemd %s %s: wait for its job", what,
                            unit);
    if (r > 0)
      continue;
    uint64_t now = now_us();
    if (now >= deadline)
      return coil_error_set(err, ETIMEDOUT,
                            "systemd %s %s: its job %s did not finish in %llu "
                            "s",
                            what, unit, w.path, JOB_TIMEOUT_US / 1000000);
    r = sd.wait(bus, deadline - now);
    if (r < 0)
      return coil_error_sys(err, -r, "systemd %s %s: wait for its job", what,
                            unit);
  }
  if (strcmp(w.result, "done"))
    return coil_error_set(err, EIO, "systemd %s %s: job %s", what, unit,
                          w.result);
  return 0;
}

int systemd_start_unit(const struct systemd_unit *u, pid_t pid,
                       const struct systemd_props *props,
                       struct coil_error *err) {
  cleanup_bus sd_bus *bus = NULL;
  if (bus_open(&bus, err) < 0)
    return -1;
  cleanup_msg sd_bus_message *m = NULL;
  cleanup_free char *desc = NULL;
  if (asprintf(&desc, "coil container %s", u->unit) < 0)
    return coil_error_sys(err, ENOMEM, "systemd unit");
  int r = sd.message_new_method_call(bus, &m, DEST, PATH, MANAGER,
                                     "StartTransientUnit");
  if (r >= 0)
    r = sd.message_append(m, "ss", u->unit, "replace");
  if (r >= 0)
    r = sd.message_open_container(m, 'a', "(sv)");
  if (r >= 0)
    r = sd.message_append(m, "(sv)(sv)", "Description", "s", desc,
                          "DefaultDependencies", "b", 0);
  /* A slice names its parent through Wants=; a scope is put in one and
   * handed the subtree below it (Delegate=), as runc does. */
  if (r >= 0 && systemd_unit_is_slice(u))
    r = sd.message_append(m, "(sv)", "Wants", "as", 1, u->slice);
  else if (r >= 0)
    r = sd.message_append(m, "(sv)(sv)", "Slice", "s", u->slice, "Delegate",
                          "b", 1);
  if (r >= 0 && pid > 0)
    r = sd.message_append(m, "(sv)", "PIDs", "au", 1, (uint32_t)pid);
  /* Accounting on, so systemd enables every controller on the way down. */
  if (r >= 0)
    r = sd.message_append(m, "(sv)(sv)(sv)(sv)", "MemoryAccounting", "b", 1,
                          "CPUAccounting", "b", 1, "IOAccounting", "b", 1,
                          "TasksAccounting", "b", 1);
  if (r >= 0)
    r = append_props(m, props);
  if (r >= 0)
    r = sd.message_close_container(m);
  if (r >= 0)
    r = sd.message_append(m, "a(sa(sv))", 0);
  if (r < 0)
    return coil_error_sys(err, -r, "systemd StartTransientUnit %s: message",
                          u->unit);
  sd_bus_error e = SD_BUS_ERROR_NULL;
  if (run_job(bus, m, "StartTransientUnit", u->unit, &e, err) < 0)
    return sd.error_is_set(&e)
               ? call_failed("StartTransientUnit", u->unit, -EIO, &e, err)
               : -1;
  return 0;
}

int systemd_set_unit_properties(const char *unit,
                                const struct systemd_props *props,
                                struct coil_error *err) {
  if (props->n == 0)
    return 0;
  cleanup_bus sd_bus *bus = NULL;
  if (bus_open(&bus, err) < 0)
    return -1;
  cleanup_msg sd_bus_message *m = NULL;
  int r = sd.message_new_method_call(bus, &m, DEST, PATH, MANAGER,
                                     "SetUnitProperties");
  if (r >= 0)
    r = sd.message_append(m, "sb", unit, 1);
  if (r >= 0)
    r = sd.message_open_container(m, 'a', "(sv)");
  if (r >= 0)
    r = append_props(m, props);
  if (r >= 0)
    r = sd.message_close_container(m);
  if (r < 0)
    return coil_error_sys(err, -r, "systemd SetUnitProperties %s: message",
                          unit);
  sd_bus_error e = SD_BUS_ERROR_NULL;
  r = sd.call(bus, m, JOB_TIMEOUT_US, &e, NULL);
  if (r < 0)
    return call_failed("SetUnitProperties", unit, r, &e, err);
  return 0;
}

int systemd_stop_unit(const char *unit, struct coil_error *err) {
  cleanup_bus sd_bus *bus = NULL;
  if (bus_open(&bus, err) < 0)
    return -1;
  cleanup_msg sd_bus_message *m = NULL;
  int r = sd.message_new_method_call(bus, &m, DEST, PATH, MANAGER, "StopUnit");
  if (r >= 0)
    r = sd.message_append(m, "ss", unit, "replace");
  if (r < 0)
    return coil_error_sys(err, -r, "systemd StopUnit %s: message", unit);
  sd_bus_error e = SD_BUS_ERROR_NULL;
  if (run_job(bus, m, "StopUnit", unit, &e, err) < 0) {
    /* Gone already: a scope whose processes all exited is collected. */
    if (sd.error_has_name(&e, "org.freedesktop.systemd1.NoSuchUnit")) {
      sd.error_free(&e);
      return 0;
    }
    return sd.error_is_set(&e) ? call_failed("StopUnit", unit, -EIO, &e, err)
                               : -1;
  }
  /* A unit that failed stays listed until reset (runc does the same). */
  sd.call_method(bus, DEST, PATH, MANAGER, "ResetFailedUnit", NULL, NULL, "s",
                 unit);
  return 0;
}
