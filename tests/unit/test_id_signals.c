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

/* A long id's directory name is no valid id, so a short id cannot alias
 * another container's state directory or cgroup. */
static void test_dirnames(void) {
  struct coil_error err;
  char out[COIL_ID_DIRNAME_MAX];
  id_dirname("abc", out);
  is_str(out, "abc", "a short id is its own directory name");
  ok(id_is_dirname("abc"), "a short id is a directory name");
  char long_id[COIL_ID_MAX + 1];
  memset(long_id, 'x', COIL_ID_MAX);
  long_id[COIL_ID_MAX] = '\0';
  id_dirname(long_id, out);
  ok(strlen(out) < COIL_ID_DIRNAME_MAX && strcmp(out, long_id) != 0,
     "a long id is hashed: %s", out);
  ok(id_validate(out, &err) < 0, "the hashed name is not a valid id");
  ok(id_is_dirname(out), "the hashed name is a directory name");
  char other[COIL_ID_DIRNAME_MAX];
  long_id[0] = 'y';
  id_dirname(long_id, other);
  ok(strcmp(out, other) != 0, "different long ids, different names");
  ok(!id_is_dirname("coil-id=xyz"), "a malformed hashed name is not one");
  ok(!id_is_dirname(".."), "\"..\" is not a directory name");
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
  test_dirnames();
  test_signals();
  return tap_done();
}
