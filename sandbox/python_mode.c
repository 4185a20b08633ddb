#include "python_mode.h"

#include <Python.h>
#include <errno.h>
#include <frameobject.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
#include "memory_bound.h"
#include "protocol.h"
#include "python_run.h"
#include "signals.h"

#define OUT_FD 1

/* Read by the signal handlers: set before any of them is installed. */
static bool handler_mode;
static char alarm_message[128];
static char signal_message[NSIG][64];

/* The signals `coil run`/`coil py` forward that end the run (SIGWINCH is
 * forwarded too, and ignored). As PID 1 of its pid namespace the sandbox
 * would ignore them without a handler. */
static const int terminating[] = {SIGINT,  SIGTERM, SIGHUP,
                                  SIGQUIT, SIGUSR1, SIGUSR2};

/* A limit or signal that ends the run, from a signal handler: only
 * async-signal-safe calls, with the text prepared before the handler is
 * installed, and only write and exit_group, which lockdown stage 2 allows.
 * Handler mode answers with an envelope on fd 1, script mode with one
 * `coil: TYPE: message` line on stderr. */
static void report_raw(const char *type, const char *message) {
  if (handler_mode) {
    protocol_write_error_raw(OUT_FD, type, message);
    return;
  }
  char buf[256];
  size_t n = 0;
  const char *parts[] = {"coil: ", type, ": ", message, "\n"};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    for (const char *p = parts[i]; *p && n < sizeof buf; p++)
      buf[n++] = *p;
  for (size_t off = 0; off < n;) {
    ssize_t w = write(2, buf + off, n - off);
    if (w <= 0)
      return;
    off += (size_t)w;
  }
}

static void on_alarm(int sig) {
  (void)sig;
  report_raw("Timeout", alarm_message);
  _exit(PY_EXIT_TIMEOUT);
}

static void on_xcpu(int sig) {
  (void)sig;
  report_raw("CpuLimit", "CPU time limit reached");
  _exit(PY_EXIT_LIMIT);
}

/* A crash with the memory bound used up (memory_bound.h). */
static void on_memory_exhausted(void) {
  report_raw("MemoryLimit", "memory limit reached");
  _exit(PY_EXIT_LIMIT);
}

static void on_terminate(int sig) {
  report_raw("Signal", sig > 0 && sig < NSIG ? signal_message[sig] : "");
  _exit(PY_EXIT_KILLED_BASE + sig);
}

/* Every signal that ends the run, blocked in each handler so two of them
 * never write at once, and around the final answer so none writes after
 * it. */
static void ending_signals(sigset_t *set) {
  sigemptyset(set);
  sigaddset(set, SIGALRM);
  sigaddset(set, SIGXCPU);
  for (size_t i = 0; i < sizeof terminating / sizeof terminating[0]; i++)
    sigaddset(set, terminating[i]);
}

static void block_ending_signals(void) {
  sigset_t set;
  ending_signals(&set);
  sigprocmask(SIG_BLOCK, &set, NULL);
}

static int handle(int sig, void (*fn)(int), struct coil_error *err) {
  struct sigaction sa = {.sa_handler = fn};
  ending_signals(&sa.sa_mask);
  if (sigaction(sig, &sa, NULL) < 0)
    return coil_error_sys(err, errno, "sigaction(%d)", sig);
  return 0;
}

/* init left every disposition at its default and the mask empty. */
static int install_signal_handlers(const struct python_ctx *c,
                                   struct coil_error *err) {
  handler_mode = c->entry != NULL;
  if (c->timeout_ms && c->timeout_ms % 1000)
    snprintf(alarm_message, sizeof alarm_message,
             "wall-clock limit of %d ms reached", c->timeout_ms);
  else
    snprintf(alarm_message, sizeof alarm_message,
             "wall-clock limit of %d s reached",
             c->timeout_ms ? c->timeout_ms / 1000 : c->timeout);
  for (size_t i = 0; i < sizeof terminating / sizeof terminating[0]; i++) {
    int sig = terminating[i];
    const char *name = signal_name(sig);
    snprintf(signal_message[sig], sizeof signal_message[sig],
             "terminated by signal %d (%s)", sig, name ? name : "?");
    if (handle(sig, on_terminate, err) < 0)
      return -1;
  }
  if (handle(SIGALRM, on_alarm, err) < 0 || handle(SIGXCPU, on_xcpu, err) < 0)
    return -1;
  return 0;
}

static void (*after_answer)(void);

/* The answer is complete: the pipe closes before the exit, so its reader
 * can answer while this address space is still being torn down. */
static void __attribute__((noreturn)) answered(int code) {
  close(OUT_FD);
  if (after_answer)
    after_answer();
  _exit(code);
}

static void __attribute__((noreturn))
fail(const struct python_ctx *c, const char *type, int code, const char *msg) {
  block_ending_signals();
  if (c->entry) {
    struct protocol_failure f = {.type = type, .message = msg};
    protocol_write_error(OUT_FD, &f, NULL, 0);
  } else {
    dprintf(2, "coil: %s: %s\n", type, msg);
  }
  answered(code);
}

static int arm_timer(const struct python_ctx *c, struct coil_error *err) {
  struct itimerval it = {.it_value = {.tv_sec = c->timeout}};
  if (c->timeout_ms)
    it.it_value = (struct timeval){.tv_sec = c->timeout_ms / 1000,
                                   .tv_usec = c->timeout_ms % 1000 * 1000};
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
  block_ending_signals();
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
    if (memory)
      dprintf(2, "coil: MemoryLimit: memory limit reached\n");
    else
      dprintf(2, "%s:%d:%d: %s\n", c->code_name, line, col, msg);
  }
  answered(memory ? PY_EXIT_LIMIT : PY_EXIT_RAISED);
}

void python_write_violation(int fd, const struct gate_result *g) {
  char msg[512];
  snprintf(msg, sizeof msg, "%s%s", g->v[0].msg,
           g->n > 1 ? " (and more: run coil check)" : "");
  struct protocol_failure f = {.type = "GateViolation",
                               .message = msg,
                               .line = g->v[0].line,
                               .col = g->v[0].col};
  protocol_write_error(fd, &f, NULL, 0);
}

static void __attribute__((noreturn))
report_violations(const struct python_ctx *c, const struct gate_result *g) {
  block_ending_signals();
  if (c->entry) {
    python_write_violation(OUT_FD, g);
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
  block_ending_signals();
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
  /* The answer is final: a signal arriving now cannot interleave with it. */
  block_ending_signals();
  if (!c->entry) {
    if (out_len && write(OUT_FD, out, out_len) < 0)
      _exit(PY_EXIT_COIL);
    answered(0);
  }
  struct coil_error err;
  if (protocol_write_result(OUT_FD, result, out, out_len, c->max_output, &err) <
      0) {
    if (err.err == EFBIG)
      report_output_limit(c, err.msg);
    fail(c, "Exception", PY_EXIT_RAISED, err.msg);
  }
  answered(0);
}

void python_run_arm(const struct python_ctx *c) {
  struct coil_error err = {0};
  if (install_signal_handlers(c, &err) < 0)
    fail(c, "Exception", PY_EXIT_COIL, err.msg);
  log_debug("python: signal handlers installed");
  /* The in-guest wall clock, and the second memory bound before the
   * interpreter allocates anything more. */
  if (arm_timer(c, &err) < 0 || memory_bound_apply(c->memory_bound, &err) < 0 ||
      memory_bound_watch(c->memory_bound, on_memory_exhausted, &err) < 0)
    fail(c, "Exception", PY_EXIT_COIL, err.msg);
}

int python_run_globals(const struct gate_result *g, unsigned disabled,
                       PyObject **globals, struct coil_error *err) {
  /* 7. only the helpers the code names, plus the fixed pre-import list. */
  *globals = NULL;
  int pre = guest_preimport((const char *const *)g->helpers, g->n_helpers,
                            g->uses_codecs, err);
  log_debug("python: preimport done");
  if (pre < 0 ||
      guest_globals((const char *const *)g->helpers, g->n_helpers,
                    layer_on(disabled, LAYER_BUILTINS), globals, err) < 0)
    return -1;
  return 0;
}

void python_run_finish(const struct python_ctx *c,
                       const struct lockdown_opts *lock,
                       const struct gate_result *g, PyObject *globals,
                       int request_fd) {
  struct coil_error err = {0};
  after_answer = c->after_answer;
  if (!globals && python_run_globals(g, c->disabled, &globals, &err) < 0)
    fail(c, "Exception", PY_EXIT_COIL, err.msg);
  guest_stdout_set_cap(c->max_output, output_overflow, c);
  log_debug("python: helpers imported");
  /* 8. the request, parsed in C. */
  PyObject *request = NULL;
  if (c->entry &&
      protocol_read_request(request_fd, c->max_request, &request, &err) < 0)
    fail(c, "RequestError", PY_EXIT_COIL, err.msg);
  /* 9. lockdown stage 2: no filesystem, a minimal syscall allowlist; then the
   *    audit hook denies everything. Nothing trusted runs in Python after. */
  if (lockdown_stage2(lock, &err) < 0)
    fail(c, "Exception", PY_EXIT_COIL, err.msg);
  audit_enter_user_phase(layer_on(c->disabled, LAYER_AUDIT));
  log_debug("python: lockdown stage 2");
  /* 10. the user's code. */
  run_user_code(c, g->code, globals, request);
}

/* Runs after init's privilege drop (ids, umask, rlimits, capabilities,
 * no_new_privs, signals, fds, cwd: init.c). The order is the security
 * argument (docs/design.md): every step that needs a privilege happens
 * before the step that takes it away, and the hostile source is only parsed
 * once stage 1 is in force. */
void python_mode_main(void *arg, int start_conn) {
  const struct python_ctx *c = arg;
  struct coil_error err = {0};
  struct lockdown_opts lock = {.landlock =
                                   layer_on(c->disabled, LAYER_LANDLOCK),
                               .seccomp = layer_on(c->disabled, LAYER_SECCOMP),
                               .readable_root = c->readable_root};

  /* 1. the signals that end the run, handled before `coil start` returns
   *    (start_conn closes), so no forwarded signal meets a default
   *    disposition, which PID 1 of a pid namespace ignores; 2. the in-guest
   *    wall clock. */
  python_run_arm(c);
  close(start_conn);
  /* 3. lockdown stage 1: read-only rootfs; dangerous syscall families off. */
  if (lockdown_stage1(&lock, &err) < 0)
    fail(c, "Exception", PY_EXIT_COIL, err.msg);
  log_debug("python: lockdown stage 1");
  /* 4. the audit hook, before the interpreter exists (trusted phase). */
  bool audit = layer_on(c->disabled, LAYER_AUDIT);
  if (audit && audit_install(OUT_FD, c->entry != NULL) < 0)
    fail(c, "Exception", PY_EXIT_COIL, "audit hook: PySys_AddAuditHook failed");
  /* 5. the interpreter, isolated and without signal handlers (embed.c). */
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
  /* 7-10. helpers, request, stage 2, the user's code. */
  python_run_finish(c, &lock, &g, NULL, 0);
}
