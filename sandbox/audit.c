#include "audit.h"

#include <Python.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "exit_codes.h"

static volatile int user_phase;
static int violation_fd = -1;
static bool envelope; /* handler mode: answer with an envelope, else a line */

/* Benign code reaches these through codec lookups and strptime, so they
 * raise (catchable) instead of ending the process. */
static bool is_soft(const char *ev) {
  return strcmp(ev, "import") == 0 || strcmp(ev, "open") == 0;
}

/* Any other event in the user phase means someone is probing: answer with
 * one envelope and stop, so try/except loops cannot keep probing. The
 * message is built without calling back into Python. */
static void __attribute__((noreturn)) die_on_event(const char *ev) {
  char buf[512];
  char safe[128];
  size_t j = 0;
  for (size_t i = 0; ev[i] && j < sizeof safe - 1; i++)
    safe[j++] = (ev[i] == '"' || ev[i] == '\\' || (unsigned char)ev[i] < 0x20)
                    ? '?'
                    : ev[i];
  safe[j] = '\0';
  int n = envelope
              ? snprintf(buf, sizeof buf,
                         "{\"ok\":false,\"error\":{\"type\":"
                         "\"GateViolation\",\"message\":\"audit event "
                         "'%s' is not permitted\",\"line\":0,\"col\":0}}\n",
                         safe)
              : snprintf(buf, sizeof buf,
                         "coil: GateViolation: audit event '%s' is not "
                         "permitted\n",
                         safe);
  int fd = envelope ? violation_fd : 2;
  if (fd >= 0 && n > 0) {
    ssize_t w = write(fd, buf, (size_t)n);
    (void)w;
  }
  _exit(PY_EXIT_GATE);
}

static int coil_audit(const char *ev, PyObject *args, void *ud) {
  (void)args;
  (void)ud;
  if (!user_phase)
    return 0;
  if (is_soft(ev)) {
    PyErr_Format(PyExc_PermissionError, "coil: '%s' is not permitted", ev);
    return -1;
  }
  die_on_event(ev);
}

int audit_install(int fd, bool handler_mode) {
  violation_fd = fd;
  envelope = handler_mode;
  return PySys_AddAuditHook(coil_audit, NULL);
}

void audit_enter_user_phase(bool enforce) {
  if (enforce)
    user_phase = 1;
}
