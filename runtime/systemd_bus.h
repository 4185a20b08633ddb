/* The calls the systemd cgroup driver makes to systemd's manager over the
 * system bus (sd-bus): start, change and stop the container's transient
 * unit, each waiting for its job to finish. */
#ifndef COIL_SYSTEMD_BUS_H
#define COIL_SYSTEMD_BUS_H

#include <sys/types.h>

#include "cgroup_systemd.h"
#include "error.h"

/* Starts u as a transient unit with the properties props, holding pid (a
 * scope; a slice holds none, pass 0). Fails if the unit exists. */
int systemd_start_unit(const struct systemd_unit *u, pid_t pid,
                       const struct systemd_props *props,
                       struct coil_error *err);

/* Sets props on the running unit (runtime only, as runc does). */
int systemd_set_unit_properties(const char *unit,
                                const struct systemd_props *props,
                                struct coil_error *err);

/* Stops the unit; one systemd no longer knows is stopped already. */
int systemd_stop_unit(const char *unit, struct coil_error *err);

#endif
