#include "hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "deadline.h"
#include "log.h"

#define HOOK_OUTPUT_MAX 2048
/* Without a pidfd the hook's exit is noticed by checking this often. */
#define HOOK_REAP_CHECK_MS 10

static void __attribute__((noreturn))
exec_hook(const struct coil_hook *h, int in_fd, int out_fd) {
  if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0)
    _exit(127);
  syscall(SYS_close_range, 3, ~0U, 0);
  signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  char *default_argv[] = {h->path, NULL};
  char *empty_env[] = {NULL};
  char **argv = h->args.n ? h->args.v : default_argv;
  /* As runc (Go's exec.Cmd with a nil Env): without "env" the hook gets
   * the runtime's own environment; an empty list means an empty one. */
  char **envp = !h->has_env ? environ : h->env.n ? h->env.v : empty_env;
  /* args/env arrays are NULL-terminated by the config parser's strv. */
  execve(h->path, argv, envp);
  dprintf(2, "exec %s: %s", h->path, strerror(errno));
  _exit(127);
}

struct hook_output {
  char text[HOOK_OUTPUT_MAX + 1];
  size_t len;
};

/* Collapses captured output to one line for the error message. */
static void one_line(char *s) {
  for (; *s; s++)
    if (*s == '\n' || *s == '\r')
      *s = ' ';
}

static void keep_output(struct hook_output *o, const char *buf, size_t n) {
  if (n > HOOK_OUTPUT_MAX - o->len)
    n = HOOK_OUTPUT_MAX - o->len;
  memcpy(o->text + o->len, buf, n);
  o->len += n;
}

/* Reads what the hook printed; closes *fd at end of file. */
static void read_output(int *fd, struct hook_output *o, bool drain) {
  char tmp[512];
  do {
    ssize_t r = read(*fd, tmp, sizeof tmp);
    if (r <= 0) {
      if (r == 0 || errno != EINTR) {
        close(*fd);
        *fd = -1;
      }
      return;
    }
    keep_output(o, tmp, (size_t)r);
  } while (drain);
}

static void kill_and_reap(pid_t pid, int *status) {
  kill(pid, SIGKILL);
  while (waitpid(pid, status, 0) < 0 && errno == EINTR)
    ;
}

/* Waits for the hook to exit, collecting its output, until the deadline.
 * pidfd may be -1 (pidfd_open failed): the exit is then checked every
 * HOOK_REAP_CHECK_MS. Returns 0 with the exit status in *status, or -1
 * with *timed_out or *sys_errno (poll/waitpid failure) set and the hook
 * possibly still running. */
static int wait_hook(pid_t pid, int pidfd, int *out_r, long long deadline,
                     struct hook_output *o, int *status, bool *timed_out,
                     int *sys_errno) {
  for (;;) {
    int slice = deadline_slice_ms(deadline, deadline_now_ms(),
                                  pidfd < 0 ? HOOK_REAP_CHECK_MS : -1);
    if (slice == 0) {
      *timed_out = true;
      return -1;
    }
    struct pollfd pf[2] = {{.fd = pidfd, .events = POLLIN},
                           {.fd = *out_r, .events = POLLIN}};
    int n = poll(pf, 2, slice);
    if (n < 0 && errno != EINTR) {
      *sys_errno = errno;
      return -1;
    }
    if (n > 0 && (pf[1].revents & (POLLIN | POLLHUP)))
      read_output(out_r, o, false);
    if (pidfd < 0 || (n > 0 && (pf[0].revents & POLLIN))) {
      pid_t r = waitpid(pid, status, WNOHANG);
      if (r == pid)
        return 0;
      if (r < 0 && errno != EINTR) {
        *sys_errno = errno;
        return -1;
      }
    }
  }
}

static int run_one(const struct coil_hook *h, const char *field,
                   const char *state_json, struct coil_error *err) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) < 0)
    return coil_error_sys(err, errno, "%s: pipe", field);
  if (pipe2(out, O_CLOEXEC) < 0) {
    int e = errno;
    close(in[0]);
    close(in[1]);
    return coil_error_sys(err, e, "%s: pipe", field);
  }
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(in[0]);
    close(in[1]);
    close(out[0]);
    close(out[1]);
    return coil_error_sys(err, e, "%s: fork", field);
  }
  if (pid == 0)
    exec_hook(h, in[0], out[1]);
  close(in[0]);
  close(out[1]);
  cleanup_close int in_w = in[1];
  cleanup_close int out_r = out[0];
  cleanup_close int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);

  /* The state is small; a hook that does not read it just gets EPIPE. */
  fcntl(in_w, F_SETFL, O_NONBLOCK);
  ssize_t ignored = write(in_w, state_json, strlen(state_json));
  (void)ignored;
  close(steal_fd(in_w));

  struct hook_output o = {.len = 0};
  long long deadline =
      h->has_timeout ? deadline_after_ms(deadline_now_ms(), h->timeout * 1000LL)
                     : DEADLINE_NONE;
  bool timed_out = false;
  int sys_errno = 0, status = 0;
  if (wait_hook(pid, pidfd, &out_r, deadline, &o, &status, &timed_out,
                &sys_errno) < 0) {
    kill_and_reap(pid, &status);
    if (timed_out)
      return coil_error_set(err, ETIMEDOUT, "%s (%s): timed out after %d s",
                            field, h->path, h->timeout);
    return coil_error_sys(err, sys_errno, "%s (%s): waiting for the hook",
                          field, h->path);
  }
  /* Collect what the hook printed before exiting, without waiting for a
   * process it left behind that still holds the pipe. */
  if (out_r >= 0 && fcntl(out_r, F_SETFL, O_NONBLOCK) == 0)
    read_output(&out_r, &o, true);
  o.text[o.len] = '\0';
  one_line(o.text);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return 0;
  if (WIFSIGNALED(status))
    return coil_error_set(err, ECHILD, "%s (%s): killed by signal %d%s%s",
                          field, h->path, WTERMSIG(status), o.len ? ": " : "",
                          o.text);
  return coil_error_set(err, ECHILD, "%s (%s): exited with status %d%s%s",
                        field, h->path, WEXITSTATUS(status), o.len ? ": " : "",
                        o.text);
}

int hooks_run(const struct coil_config *cfg, enum coil_hook_kind kind,
              const char *state_json, struct coil_error *err) {
  const struct coil_hook_list *l = &cfg->hooks[kind];
  for (size_t i = 0; i < l->n; i++) {
    char field[64];
    snprintf(field, sizeof field, "hooks.%s[%zu]", config_hook_name(kind), i);
    if (run_one(&l->items[i], field, state_json, err) < 0)
      return -1;
  }
  return 0;
}

void hooks_run_all(const struct coil_config *cfg, enum coil_hook_kind kind,
                   const char *state_json) {
  const struct coil_hook_list *l = &cfg->hooks[kind];
  for (size_t i = 0; i < l->n; i++) {
    char field[64];
    snprintf(field, sizeof field, "hooks.%s[%zu]", config_hook_name(kind), i);
    struct coil_error err;
    if (run_one(&l->items[i], field, state_json, &err) < 0)
      log_warn("%s", err.msg);
  }
}
