/* The CLI: global options, the command table, exit codes. Only cmd/ decides
 * how coil exits. */
#ifndef COIL_CMD_H
#define COIL_CMD_H

#include <stdbool.h>

/* Exit statuses (README "Exit codes"). */
enum {
  EXIT_OK = 0,
  EXIT_ERR = 1,           /* a command other than run failed */
  EXIT_TIMEOUT = 124,     /* run/py: the wall clock ran out */
  EXIT_COIL_FAILED = 125, /* run/py: coil itself failed */
  EXIT_EXEC_FAILED = 255, /* exec: no process was started (as runc) */
};

struct global_opts {
  const char *root;
  const char *log;
  bool log_json;
  bool debug;
  /* --systemd-cgroup: containers' cgroups are systemd units. */
  bool systemd_cgroup;
};

typedef int (*command_fn)(const struct global_opts *g, int argc, char **argv);

struct command {
  const char *name;
  command_fn fn;
  const char *usage;   /* "create [options] ID" */
  const char *summary; /* one line */
  const char *help;    /* option lines */
};

int cmd_create(const struct global_opts *g, int argc, char **argv);
int cmd_start(const struct global_opts *g, int argc, char **argv);
int cmd_run(const struct global_opts *g, int argc, char **argv);
int cmd_state(const struct global_opts *g, int argc, char **argv);
int cmd_kill(const struct global_opts *g, int argc, char **argv);
int cmd_delete(const struct global_opts *g, int argc, char **argv);
int cmd_list(const struct global_opts *g, int argc, char **argv);
int cmd_spec(const struct global_opts *g, int argc, char **argv);
int cmd_features(const struct global_opts *g, int argc, char **argv);
int cmd_py(const struct global_opts *g, int argc, char **argv);
int cmd_check(const struct global_opts *g, int argc, char **argv);
int cmd_serve(const struct global_opts *g, int argc, char **argv);
int cmd_call(const struct global_opts *g, int argc, char **argv);
int cmd_pause(const struct global_opts *g, int argc, char **argv);
int cmd_resume(const struct global_opts *g, int argc, char **argv);
int cmd_ps(const struct global_opts *g, int argc, char **argv);
int cmd_update(const struct global_opts *g, int argc, char **argv);
int cmd_events(const struct global_opts *g, int argc, char **argv);
int cmd_exec(const struct global_opts *g, int argc, char **argv);

struct coil_create_opts;
struct coil_py_override;
/* create + start + wait + delete, shared by run and py (ov: py's changes to
 * a Python bundle, or NULL). */
int cmd_run_container(const struct global_opts *g, struct coil_create_opts *o,
                      const struct coil_py_override *ov, bool detach);

/* The Python bundle `py` and `serve` use when none is given: next to the
 * binary in a source tree, else the installed one. */
const char *cmd_default_bundle(char *buf, size_t cap);

/* Prints the command's help to stdout. */
void cmd_print_help(const struct command *c);
const struct command *cmd_find(const char *name);

/* Shared option handling: true when argv asks for help (then prints it). */
bool cmd_wants_help(const char *name, int argc, char **argv);

/* Prints "coil <cmd>: <msg>"-style usage error; returns EXIT_ERR. */
int cmd_usage_error(const char *name, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
