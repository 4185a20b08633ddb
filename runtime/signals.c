#include "signals.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct {
  const char *name;
  int sig;
} signal_table[] = {
    {"HUP", SIGHUP},       {"INT", SIGINT},       {"QUIT", SIGQUIT},
    {"ILL", SIGILL},       {"TRAP", SIGTRAP},     {"ABRT", SIGABRT},
    {"IOT", SIGIOT},       {"BUS", SIGBUS},       {"FPE", SIGFPE},
    {"KILL", SIGKILL},     {"USR1", SIGUSR1},     {"SEGV", SIGSEGV},
    {"USR2", SIGUSR2},     {"PIPE", SIGPIPE},     {"ALRM", SIGALRM},
    {"TERM", SIGTERM},     {"STKFLT", SIGSTKFLT}, {"CHLD", SIGCHLD},
    {"CLD", SIGCHLD},      {"CONT", SIGCONT},     {"STOP", SIGSTOP},
    {"TSTP", SIGTSTP},     {"TTIN", SIGTTIN},     {"TTOU", SIGTTOU},
    {"URG", SIGURG},       {"XCPU", SIGXCPU},     {"XFSZ", SIGXFSZ},
    {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF},     {"WINCH", SIGWINCH},
    {"IO", SIGIO},         {"POLL", SIGPOLL},     {"PWR", SIGPWR},
    {"SYS", SIGSYS},
};

static int parse_int(const char *s, int *out) {
  if (!*s)
    return -1;
  for (const char *p = s; *p; p++)
    if (!isdigit((unsigned char)*p))
      return -1;
  errno = 0;
  long v = strtol(s, NULL, 10);
  if (errno || v > 1000)
    return -1;
  *out = (int)v;
  return 0;
}

/* RTMIN, RTMIN+n, RTMAX, RTMAX-n. */
static int parse_rt(const char *s, int *sig) {
  int base, off = 0, dir;
  if (strncasecmp(s, "RTMIN", 5) == 0) {
    base = SIGRTMIN;
    dir = 1;
  } else if (strncasecmp(s, "RTMAX", 5) == 0) {
    base = SIGRTMAX;
    dir = -1;
  } else {
    return -1;
  }
  s += 5;
  if (*s) {
    if ((dir > 0 && *s != '+') || (dir < 0 && *s != '-'))
      return -1;
    if (parse_int(s + 1, &off) < 0)
      return -1;
  }
  int v = base + dir * off;
  if (v < SIGRTMIN || v > SIGRTMAX)
    return -1;
  *sig = v;
  return 0;
}

int signal_parse(const char *s, int *sig, struct coil_error *err) {
  if (!s || !*s)
    return coil_error_set(err, 0, "signal: must not be empty");
  int n;
  if (parse_int(s, &n) == 0) {
    if (n < 1 || n > SIGRTMAX)
      return coil_error_set(err, 0, "signal %s: out of range 1..%d", s,
                            SIGRTMAX);
    *sig = n;
    return 0;
  }
  const char *name = strncasecmp(s, "SIG", 3) == 0 ? s + 3 : s;
  for (size_t i = 0; i < sizeof signal_table / sizeof signal_table[0]; i++)
    if (strcasecmp(name, signal_table[i].name) == 0) {
      *sig = signal_table[i].sig;
      return 0;
    }
  if (parse_rt(name, sig) == 0)
    return 0;
  return coil_error_set(err, 0, "signal \"%s\": unknown signal", s);
}

const char *signal_name(int sig) {
  static char buf[16];
  for (size_t i = 0; i < sizeof signal_table / sizeof signal_table[0]; i++)
    if (signal_table[i].sig == sig) {
      strcpy(buf, "SIG");
      strcat(buf, signal_table[i].name);
      return buf;
    }
  return NULL;
}
