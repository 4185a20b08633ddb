#include "python_mode.h"

#include <Python.h>
#include <errno.h>
#include <frameobject.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "audit.h"
#include "embed.h"
#include "exit_codes.h"
#include "gate.h"
#include "guest.h"
#include "layers.h"
#include "lockdown.h"
#include "log.h"
#include "protocol.h"

#define OUT_FD 1

static char alarm_message[128];

/* Both limits end the process from a signal handler: only async-signal-safe
 * calls, with messages prepared before the timer is armed. */
static void on_alarm(int sig) {
  (void)sig;
  protocol_write_error_raw(OUT_FD, "Timeout", alarm_message);
  _exit(PY_EXIT_TIMEOUT);
}

static void on_xcpu(int sig) {
  (void)sig;
  protocol_write_error_raw(OUT_FD, "CpuLimit", "CPU time limit reached");
  _exit(PY_EXIT_LIMIT);
}

static void __attribute__((noreturn))
fail(const struct python_ctx *c, const char *type, int code, const char *msg) {
  if (c->entry) {
    struct protocol_failure f = {.type = type, .message = msg};
    protocol_write_error(OUT_FD, &f, NULL, 0);
  } else {
    dprintf(2, "coil: %s: %s\n", type, msg);
  }
  _exit(code);
}

/* Ids, environment, fds, capabilities, no_new_privs: the process keeps
 * nothing it could use to undo the lockdown that follows. */
static int drop_process_privileges(const struct python_ctx *c,
                                   struct coil_error *err) {
  const struct coil_process *p = &c->cfg->process;
  bool caps_layer = layer_on(c->disabled, LAYER_CAPS);
  if (caps_layer && caps_switch_ids(p->uid, p->gid, NULL, 0, err) < 0)
    return -1;
  clearenv();
  syscall(SYS_close_range, 3, ~0U, 0);
  if (caps_layer) {
    struct coil_caps none = {.configured = true};
    if (caps_apply(&none, err) < 0)
      return -1;
  }
  /* Set even with the caps layer off (which keeps root and capabilities in
   * the user namespace): it takes no capability away, and Landlock insists
   * on it so a missed step cannot hide behind CAP_SYS_ADMIN. */
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    return coil_error_sys(err, errno, "prctl(PR_SET_NO_NEW_PRIVS)");
  if (layer_on(c->disabled, LAYER_RLIMITS) &&
      rlimits_apply(c->rlimits, err) < 0)
    return -1;
  return 0;
}

static int arm_timers(const struct python_ctx *c, struct coil_error *err) {
  snprintf(alarm_message, sizeof alarm_message,
           "wall-clock limit of %d s reached", c->timeout);
  struct sigaction sa = {.sa_handler = on_alarm};
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGALRM, &sa, NULL) < 0)
    return coil_error_sys(err, errno, "sigaction(SIGALRM)");
  sa.sa_handler = on_xcpu;
  if (sigaction(SIGXCPU, &sa, NULL) < 0)
    return coil_error_sys(err, errno, "sigaction(SIGXCPU)");
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, SIGALRM);
  sigaddset(&unblock, SIGXCPU);
  sigprocmask(SIG_UNBLOCK, &unblock, NULL);
  struct itimerval it = {.it_value = {.tv_sec = c->timeout}};
  if (setitimer(ITIMER_REAL, &it, NULL) < 0)
    return coil_error_sys(err, errno, "setitimer");
  return 0;
}

/* Line and column of the innermost frame of the user's code. */
static void user_location(PyObject *tb, const char *filename, int *line,
                          int *col) {
  *line = 0;
  *col = 0;
  for (PyTracebackObject *t = (PyTracebackObject *)tb;
       t && PyTraceBack_Check(t); t = t->tb_next) {
    PyCodeObject *code = PyFrame_GetCode(t->tb_frame);
    const char *fn = PyUnicode_AsUTF8(code->co_filename);
    if (fn && strcmp(fn, filename) == 0) {
      int l, cl, el, ec;
      if (PyCode_Addr2Location(code, t->tb_lasti, &l, &cl, &el, &ec)) {
        *line = l;
        *col = cl + 1;
      } else {
        *line = t->tb_lineno;
      }
    }
    Py_DECREF(code);
  }
  if (PyErr_Occurred())
    PyErr_Clear();
}

/* Reports the pending exception of user code and exits. */
static void __attribute__((noreturn))
report_exception(const struct python_ctx *c) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  const char *tname = type ? ((PyTypeObject *)type)->tp_name : "Exception";
  bool memory = type && PyErr_GivenExceptionMatches(type, PyExc_MemoryError);
  char msg[768];
  PyObject *s = value ? PyObject_Str(value) : NULL;
  const char *txt = s ? PyUnicode_AsUTF8(s) : NULL;
  if (!txt)
    PyErr_Clear();
  snprintf(msg, sizeof msg, "%s%s%s", tname, txt && *txt ? ": " : "",
           txt ? txt : "");
  int line, col;
  user_location(tb, c->code_name, &line, &col);
  size_t out_len;
  bool overflow;
  const char *out = guest_stdout(&out_len, &overflow);
  if (c->entry) {
    struct protocol_failure f = {.type = memory ? "MemoryLimit" : "Exception",
                                 .message =
                                     memory ? "memory limit reached" : msg,
                                 .exception = tname,
                                 .line = line,
                                 .col = col};
    protocol_write_error(OUT_FD, &f, out, out_len);
  } else {
    if (out_len && write(OUT_FD, out, out_len) < 0)
      _exit(PY_EXIT_COIL);
    dprintf(2, "%s:%d:%d: %s\n", c->code_name, line, col, msg);
  }
  _exit(memory ? PY_EXIT_LIMIT : PY_EXIT_RAISED);
}

static void __attribute__((noreturn))
report_violations(const struct python_ctx *c, const struct gate_result *g) {
  if (c->entry) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s%s", g->v[0].msg,
             g->n > 1 ? " (and more: run coil check)" : "");
    struct protocol_failure f = {.type = "GateViolation",
                                 .message = msg,
                                 .line = g->v[0].line,
                                 .col = g->v[0].col};
    protocol_write_error(OUT_FD, &f, NULL, 0);
  } else {
    for (size_t i = 0; i < g->n; i++)
      dprintf(2, "%s:%d:%d: %s\n", c->code_name, g->v[i].line, g->v[i].col,
              g->v[i].msg);
  }
  _exit(PY_EXIT_GATE);
}

static void __attribute__((noreturn))
report_output_limit(const struct python_ctx *c, const char *why) {
  struct protocol_failure f = {.type = "OutputLimit", .message = why};
  if (c->entry)
    protocol_write_error(OUT_FD, &f, NULL, 0);
  else
    dprintf(2, "coil: OutputLimit: %s\n", why);
  _exit(PY_EXIT_RAISED);
}

/* print() went over the output cap: the run ends inside that print, so
 * no user code runs on (an except clause cannot swallow it). */
static void output_overflow(const void *c) {
  report_output_limit(c, "print output over the output cap");
}

/* The user's code: module body, then entry(request), called from C so no
 * trusted Python frame sits above it. */
static void __attribute__((noreturn))
run_user_code(const struct python_ctx *c, PyObject *code, PyObject *globals,
              PyObject *request) {
  PyObject *r = PyEval_EvalCode(code, globals, globals);
  if (!r)
    report_exception(c);
  Py_DECREF(r);
  PyObject *result = NULL;
  if (c->entry) {
    PyObject *fn = PyDict_GetItemString(globals, c->entry);
    if (!fn || !PyFunction_Check(fn)) {
      char msg[300];
      snprintf(msg, sizeof msg,
               "entry '%s' is not a function defined by the code", c->entry);
      fail(c, "Exception", PY_EXIT_RAISED, msg);
    }
    result = PyObject_CallOneArg(fn, request);
    if (!result)
      report_exception(c);
  }
  size_t out_len;
  bool overflow;
  const char *out = guest_stdout(&out_len, &overflow);
  if (overflow)
    report_output_limit(c, "print output over the output cap");
  if (!c->entry) {
    if (out_len && write(OUT_FD, out, out_len) < 0)
      _exit(PY_EXIT_COIL);
    _exit(0);
  }
  struct coil_error err;
  if (protocol_write_result(OUT_FD, result, out, out_len, c->max_output, &err) <
      0) {
    if (err.err == EFBIG)
      report_output_limit(c, err.msg);
    fail(c, "Exception", PY_EXIT_RAISED, err.msg);
  }
  _exit(0);
}

/* The order is the security argument (issue 3, DESIGN.md): every step that
 * needs a privilege happens before the step that takes it away, and the
 * hostile source is only parsed once stage 1 is in force. */
void python_mode_main(const struct python_ctx *c) {
  struct coil_error err = {0};
  struct lockdown_opts lock = {.landlock =
                                   layer_on(c->disabled, LAYER_LANDLOCK),
                               .seccomp = layer_on(c->disabled, LAYER_SECCOMP),
                               .readable_root = c->readable_root};

  /* 1. ids, environment, fds, capabilities, no_new_privs, rlimits. */
  if (drop_process_privileges(c, &err) < 0)
    fail(c, "Exception", PY_EXIT_COIL, err.msg);
  log_debug("python: privileges dropped");
  /* 2. the in-guest wall clock and the CPU-limit signal. */
  if (arm_timers(c, &err) < 0)
    fail(c, "Exception", PY_EXIT_COIL, err.msg);
  /* 3. lockdown stage 1: read-only rootfs; dangerous syscall families off. */
  if (lockdown_stage1(&lock, &err) < 0)
    fail(c, "Exception", PY_EXIT_COIL, err.msg);
  log_debug("python: lockdown stage 1");
  /* 4. the audit hook, before the interpreter exists (trusted phase). */
  bool audit = layer_on(c->disabled, LAYER_AUDIT);
  if (audit && audit_install(OUT_FD, c->entry != NULL) < 0)
    fail(c, "Exception", PY_EXIT_COIL, "audit hook: PySys_AddAuditHook failed");
  /* 5. the interpreter, configured as gate-design.md 1.2 says. */
  if (embed_init(c->prefix, &err) < 0)
    fail(c, "Exception", PY_EXIT_COIL, err.msg);
  log_debug("python: interpreter initialised");
  /* 6. the gate: decode, cap, parse, check, compile the checked tree. */
  struct gate_limits lim;
  gate_limits_default(&lim);
  struct gate_result g = {0};
  if (gate_check(c->code, c->code_len, c->code_name, &lim,
                 layer_on(c->disabled, LAYER_AST), &g, &err) < 0)
    fail(c, "Exception", PY_EXIT_COIL, err.msg);
  if (g.n > 0)
    report_violations(c, &g);
  log_debug("python: gate passed");
  /* 7. only the helpers the code names, plus the fixed pre-import list. */
  PyObject *globals = NULL;
  int pre = guest_preimport((const char *const *)g.helpers, g.n_helpers,
                            g.uses_codecs, &err);
  log_debug("python: preimport done");
  if (pre < 0 ||
      guest_globals((const char *const *)g.helpers, g.n_helpers,
                    layer_on(c->disabled, LAYER_BUILTINS), &globals, &err) < 0)
    fail(c, "Exception", PY_EXIT_COIL, err.msg);
  guest_stdout_set_cap(c->max_output, output_overflow, c);
  log_debug("python: helpers imported");
  /* 8. the request, parsed in C. */
  PyObject *request = NULL;
  if (c->entry && protocol_read_request(0, c->max_request, &request, &err) < 0)
    fail(c, "RequestError", PY_EXIT_COIL, err.msg);
  /* 9. lockdown stage 2: no filesystem, a minimal syscall allowlist; then the
   *    audit hook denies everything. Nothing trusted runs in Python after. */
  if (lockdown_stage2(&lock, &err) < 0)
    fail(c, "Exception", PY_EXIT_COIL, err.msg);
  audit_enter_user_phase(audit);
  log_debug("python: lockdown stage 2");
  /* 10. the user's code. */
  run_user_code(c, g.code, globals, request);
}
