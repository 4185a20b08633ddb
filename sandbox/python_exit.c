#include "python_exit.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "exit_codes.h"
#include "protocol_error.h"
#include "signals.h"

bool python_signal_ends_run(int sig) {
  switch (sig) {
  case SIGINT:
  case SIGTERM:
  case SIGHUP:
  case SIGQUIT:
  case SIGUSR1:
  case SIGUSR2:
    return true;
  default:
    return false;
  }
}

static void signal_verdict(int sig, struct python_verdict *v) {
  const char *name = signal_name(sig);
  v->type = "Signal";
  v->code = PY_EXIT_KILLED_BASE + sig;
  snprintf(v->message, sizeof v->message, "terminated by signal %d (%s)", sig,
           name ? name : "?");
}

/* The sandbox died without answering: why, and with which status. */
static void silent_death(const struct python_ctx *c, const struct python_end *e,
                         struct python_verdict *v) {
  v->type = "Exception";
  v->code = PY_EXIT_COIL;
  if (!WIFSIGNALED(e->status)) {
    snprintf(v->message, sizeof v->message,
             "sandbox exited with status %d before answering",
             WEXITSTATUS(e->status));
    return;
  }
  int sig = WTERMSIG(e->status);
  v->code = PY_EXIT_KILLED_BASE + sig;
  if (e->watchdog) {
    v->type = "Timeout";
    v->code = PY_EXIT_TIMEOUT;
    snprintf(v->message, sizeof v->message, "wall-clock limit of %d s reached",
             c->timeout);
  } else if (e->backstop) {
    signal_verdict(e->forwarded, v);
  } else if (e->forwarded && sig == e->forwarded) {
    signal_verdict(sig, v);
  } else if (sig == SIGKILL && e->oom_killed) {
    v->type = "MemoryLimit";
    snprintf(v->message, sizeof v->message,
             "memory limit reached (killed by the OOM killer)");
  } else if (sig == SIGKILL && c->cpu_limit && e->cpu_seconds >= c->cpu_limit) {
    v->type = "CpuLimit";
    snprintf(v->message, sizeof v->message, "CPU time limit of %d s reached",
             c->cpu_limit);
  } else if (sig == SIGSYS) {
    snprintf(v->message, sizeof v->message,
             "killed by seccomp: a system call outside the sandbox's "
             "allowlist");
  } else {
    snprintf(v->message, sizeof v->message, "sandbox killed by signal %d", sig);
  }
}

/* The error type of the envelope the sandbox wrote itself, when it is one
 * that ends a run from outside the user's code. */
static const char *limit_in(const char *head) {
  static const char *const types[] = {"Timeout", "MemoryLimit", "CpuLimit",
                                      "OutputLimit", "Signal"};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    char quoted[32];
    snprintf(quoted, sizeof quoted, "\"%s\"", types[i]);
    if (strstr(head, quoted))
      return types[i];
  }
  return NULL;
}

void python_classify(const struct python_ctx *c, const char *id,
                     const struct python_end *e, struct python_verdict *v) {
  *v = (struct python_verdict){0};
  bool handler = c->entry != NULL;
  bool exited = WIFEXITED(e->status);
  /* Script mode writes stdout only at the end, so output says nothing;
   * status 127 is init failing before the payload ran. */
  if ((!handler || e->relayed == 0) &&
      (e->watchdog || !exited || WEXITSTATUS(e->status) == 127)) {
    silent_death(c, e, v);
    v->envelope = handler;
    /* Script mode: the one line the sandbox would have written itself. */
    if (handler)
      snprintf(v->line, sizeof v->line, "container \"%s\": %s: %s", id, v->type,
               v->message);
    else
      snprintf(v->line, sizeof v->line, "%s: %s", v->type, v->message);
    return;
  }
  /* The sandbox answered itself (in script mode on stderr already). */
  if (exited) {
    v->code = WEXITSTATUS(e->status);
    v->type = handler ? limit_in(e->head) : NULL;
    if (v->type)
      snprintf(v->line, sizeof v->line, "container \"%s\": %s", id, v->type);
    return;
  }
  /* Killed after it answered. */
  int sig = WTERMSIG(e->status);
  v->code = PY_EXIT_KILLED_BASE + sig;
  if (sig == SIGKILL && e->oom_killed)
    snprintf(v->line, sizeof v->line,
             "container \"%s\" was killed by the OOM killer (memory limit "
             "reached)",
             id);
}

void python_verdict_envelope(int fd, const struct python_verdict *v) {
  protocol_write_error_raw(fd, v->type, v->message);
}

void python_setup_failed(int fd, const struct python_ctx *c, const char *msg) {
  if (!c->entry)
    return;
  struct protocol_failure f = {.type = "Exception", .message = msg};
  protocol_write_error(fd, &f, NULL, 0);
}
