/* Container id validation and signal names. */
#include <signal.h>
#include <string.h>

#include "id.h"
#include "signals.h"
#include "tap.h"

static void test_ids(void) {
  struct coil_error err;
  const char *good[] = {"a", "abc-123", "A_b.c+d", "..a", "x..y"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
    ok(id_validate(good[i], &err) == 0, "id \"%s\" accepted", good[i]);
  const char *bad[] = {"",  ".",   "..",   "../x", "a/b",
                       "/", "a b", "a\nb", "é",    "a:b"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int r = id_validate(bad[i], &err);
    ok(r < 0 && strstr(err.msg, "container id"), "bad id #%zu refused: %s", i,
       err.msg);
  }
  ok(id_validate(NULL, &err) < 0, "NULL id refused");
  char longest[COIL_ID_MAX + 2];
  memset(longest, 'a', sizeof longest);
  longest[COIL_ID_MAX] = '\0';
  ok(id_validate(longest, &err) == 0, "%d-byte id accepted", COIL_ID_MAX);
  longest[COIL_ID_MAX] = 'a';
  longest[COIL_ID_MAX + 1] = '\0';
  ok(id_validate(longest, &err) < 0 && strstr(err.msg, "longer than"),
     "%d-byte id refused", COIL_ID_MAX + 1);
}

static void test_signals(void) {
  struct coil_error err;
  struct {
    const char *in;
    int want;
  } good[] = {{"TERM", SIGTERM},
              {"SIGTERM", SIGTERM},
              {"term", SIGTERM},
              {"sigkill", SIGKILL},
              {"9", SIGKILL},
              {"15", SIGTERM},
              {"HUP", SIGHUP},
              {"SIGUSR1", SIGUSR1},
              {"WINCH", SIGWINCH},
              {"RTMIN", SIGRTMIN},
              {"RTMIN+2", SIGRTMIN + 2},
              {"SIGRTMAX-1", SIGRTMAX - 1},
              {"CHLD", SIGCHLD},
              {"IOT", SIGABRT}};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    int sig = -1;
    int r = signal_parse(good[i].in, &sig, &err);
    ok(r == 0 && sig == good[i].want, "signal \"%s\" = %d", good[i].in,
       good[i].want);
  }
  const char *bad[] = {"",   "FOO", "SIG",     "0",       "65",
                       "-1", "9x",  "RTMIN-1", "RTMAX+1", "99999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int sig;
    ok(signal_parse(bad[i], &sig, &err) < 0 && strstr(err.msg, "signal"),
       "signal \"%s\" refused: %s", bad[i], err.msg);
  }
  is_str(signal_name(SIGTERM), "SIGTERM", "name of 15");
  is_str(signal_name(SIGABRT), "SIGABRT", "name of 6");
  ok(signal_name(SIGRTMIN + 3) == NULL, "real-time signals have no fixed name");
}

int main(void) {
  test_ids();
  test_signals();
  return tap_done();
}
