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
#include <time.h>
#include <unistd.h>

#include "cleanup.h"

#define HOOK_OUTPUT_MAX 2048

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

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
  char **envp = h->env.n ? h->env.v : empty_env;
  /* args/env arrays are NULL-terminated by the config parser's strv. */
  execve(h->path, argv, envp);
  dprintf(2, "exec %s: %s", h->path, strerror(errno));
  _exit(127);
}

/* Collapses captured output to one line for the error message. */
static void one_line(char *s) {
  for (; *s; s++)
    if (*s == '\n' || *s == '\r')
      *s = ' ';
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

  char output[HOOK_OUTPUT_MAX + 1];
  size_t out_len = 0;
  long long deadline = h->has_timeout ? now_ms() + h->timeout * 1000LL : -1;
  bool timed_out = false;
  int status = 0;
  for (;;) {
    struct pollfd pf[2] = {{.fd = pidfd, .events = POLLIN},
                           {.fd = out_r, .events = POLLIN}};
    int wait_ms = -1;
    if (deadline >= 0) {
      long long left = deadline - now_ms();
      if (left <= 0) {
        timed_out = true;
        break;
      }
      wait_ms = (int)left;
    }
    int n = poll(pf, out_r >= 0 ? 2 : 1, wait_ms);
    if (n < 0 && errno != EINTR)
      break;
    if (out_r >= 0 && (pf[1].revents & (POLLIN | POLLHUP))) {
      char tmp[512];
      ssize_t r = read(out_r, tmp, sizeof tmp);
      if (r <= 0) {
        close(steal_fd(out_r));
      } else {
        size_t take = (size_t)r;
        if (take > HOOK_OUTPUT_MAX - out_len)
          take = HOOK_OUTPUT_MAX - out_len;
        memcpy(output + out_len, tmp, take);
        out_len += take;
      }
    }
    if (pf[0].revents & POLLIN) {
      if (waitpid(pid, &status, WNOHANG) == pid)
        break;
    }
  }
  if (timed_out) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return coil_error_set(err, ETIMEDOUT, "%s (%s): timed out after %d s",
                          field, h->path, h->timeout);
  }
  /* Collect what the hook printed before exiting. */
  while (out_r >= 0) {
    char tmp[512];
    ssize_t r = read(out_r, tmp, sizeof tmp);
    if (r <= 0)
      break;
    size_t take = (size_t)r;
    if (take > HOOK_OUTPUT_MAX - out_len)
      take = HOOK_OUTPUT_MAX - out_len;
    memcpy(output + out_len, tmp, take);
    out_len += take;
  }
  output[out_len] = '\0';
  one_line(output);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return 0;
  if (WIFSIGNALED(status))
    return coil_error_set(err, ECHILD, "%s (%s): killed by signal %d%s%s",
                          field, h->path, WTERMSIG(status), out_len ? ": " : "",
                          output);
  return coil_error_set(err, ECHILD, "%s (%s): exited with status %d%s%s",
                        field, h->path, WEXITSTATUS(status),
                        out_len ? ": " : "", output);
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
