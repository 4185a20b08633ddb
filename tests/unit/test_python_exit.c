/* python_classify: how a Python run that ended is reported by run/py, for
 * each way it can end, in handler and script mode. */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "exit_codes.h"
#include "python_exit.h"
#include "tap.h"
#include "testutil.h"

#define KILLED(sig) (sig)
#define EXITED(code) ((code) << 8)

static const struct python_ctx handler = {
    .entry = "handle", .timeout = 5, .cpu_limit = 1};
static const struct python_ctx script = {.timeout = 5, .cpu_limit = 1};

static struct python_verdict classify(const struct python_ctx *c,
                                      struct python_end e) {
  struct python_verdict v;
  if (!e.head)
    e.head = "";
  python_classify(c, "t1", &e, &v);
  return v;
}

int main(void) {
  struct python_verdict v;

  v = classify(&handler, (struct python_end){.status = KILLED(SIGKILL),
                                             .forwarded = SIGTERM,
                                             .backstop = true});
  ok(v.code == 143 && v.envelope && strcmp(v.type, "Signal") == 0,
     "backstop kill after SIGTERM: Signal, 143, envelope by coil");
  is_str(v.message, "terminated by signal 15 (SIGTERM)", "its message");

  v = classify(&script, (struct python_end){.status = KILLED(SIGINT),
                                            .forwarded = SIGINT});
  ok(v.code == 130 && !v.envelope, "killed by the forwarded SIGINT: 130");
  is_str(v.line, "Signal: terminated by signal 2 (SIGINT)",
         "script mode: one `coil: TYPE: message` line, no envelope");

  v = classify(&handler,
               (struct python_end){.status = EXITED(143),
                                   .relayed = 10,
                                   .head = "{\"ok\": false, \"error\": "
                                           "{\"type\": \"Signal\""});
  ok(v.code == 143 && !v.envelope && v.type && strcmp(v.type, "Signal") == 0,
     "the sandbox answered the signal itself: its status, no second "
     "envelope, the type named on stderr");

  v = classify(&script, (struct python_end){.status = EXITED(143)});
  ok(v.code == 143 && !v.envelope && v.line[0] == '\0',
     "script mode answered itself: nothing more from coil");

  v = classify(&handler, (struct python_end){.status = KILLED(SIGKILL),
                                             .watchdog = true});
  ok(v.code == PY_EXIT_TIMEOUT && strcmp(v.type, "Timeout") == 0,
     "watchdog: Timeout, 124");

  v = classify(&script, (struct python_end){.status = KILLED(SIGKILL),
                                            .oom_killed = true});
  ok(v.code == PY_EXIT_LIMIT && !v.envelope &&
         strncmp(v.line, "MemoryLimit: ", 13) == 0,
     "OOM kill in script mode: MemoryLimit line, 137");

  v = classify(&handler, (struct python_end){.status = KILLED(SIGKILL),
                                             .cpu_seconds = 2.0});
  ok(v.code == PY_EXIT_LIMIT && strcmp(v.type, "CpuLimit") == 0,
     "hard CPU limit kill: CpuLimit, 137");

  v = classify(&handler, (struct python_end){.status = KILLED(SIGSYS)});
  ok(v.code == 128 + SIGSYS && strcmp(v.type, "Exception") == 0 &&
         strstr(v.message, "seccomp"),
     "seccomp kill: Exception, 159");

  v = classify(&handler, (struct python_end){.status = KILLED(SIGSEGV),
                                             .forwarded = SIGTERM});
  ok(v.code == 128 + SIGSEGV && strcmp(v.type, "Exception") == 0,
     "a crash after a forwarded signal is a crash: Exception, 139");
  return tap_done();
}
