#include "serve_pool.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "answer_reader.h"
#include "cgroup.h"
#include "cgroup_stats.h"
#include "cleanup.h"
#include "container.h"
#include "exit_codes.h"
#include "fdpass.h"
#include "log.h"
#include "python_exit.h"
#include "python_load.h"
#include "serve_template.h"
#include "serve_wire.h"

/* After the deadline the child gets SIGKILL from here, as coil py's
 * watchdog does one second after the in-guest timer. */
#define GRACE_MS 1000
/* How long a template gets to start before the request is Unavailable. */
#define START_WAIT_S 30
/* The request cap of coil py, so both refuse the same requests. */
#define REQUEST_MAX (1 << 20)

struct serve_template {
  char id[96];
  pid_t pid;
  int ctrl;               /* the template's fd 1, a seqpacket socket */
  int pidfd;              /* readable once the template is gone */
  struct coil_cgroup *cg; /* the tenant's cgroup, or NULL */
  /* Its cgroup's OOM kill count when last read: the baseline of a job's,
   * read only for a child that died by SIGKILL (oom_killed_since). */
  _Atomic unsigned long long ooms;
  int refs; /* jobs using it */
  unsigned long served;
  struct timespec born;
  struct serve_template *next;
};

/* ---- the spawner ------------------------------------------------------- */

/* Containers are made by clone(2) of the calling process, which in a
 * multi-threaded process could copy a lock another thread holds; so one
 * single-threaded process, forked before any thread, makes and deletes the
 * templates. It is their parent: when serve dies it sees EOF and deletes
 * them all. */
enum spawn_op { SPAWN_START = 1, SPAWN_DELETE = 2 };

struct spawn_req {
  int op;
  char id[96];
  char bundle[4096];
  struct serve_template_opts opts;
  pid_t pid;
};

struct spawn_rep {
  int ok;
  pid_t pid;
  char msg[1024];
};

static int spawner_fd = -1;
static pid_t spawner_pid;
static pthread_mutex_t spawner_mu = PTHREAD_MUTEX_INITIALIZER;
static const char *state_root;

static int send_fd(int sock, const void *buf, size_t len, int fd) {
  return fdpass_send(sock, buf, len, &fd, fd >= 0, 0);
}

/* Receives one message; *fd gets the passed fd or -1. Returns its size. */
static ssize_t recv_fd(int sock, void *buf, size_t len, int *fd) {
  size_t n;
  return fdpass_recv(sock, buf, len, fd, 1, &n, 0);
}

struct spawned {
  char id[96];
  pid_t pid;
};

static void spawner_delete(const char *id, pid_t pid) {
  /* The template exits by itself once its channel is closed and its
   * children are done; a stuck one is killed with its container. */
  for (int i = 0; i < 300; i++) {
    if (waitpid(pid, NULL, WNOHANG) == pid) {
      pid = 0;
      break;
    }
    usleep(10000);
  }
  struct coil_error err = {0};
  if (container_delete(state_root, id, true, &err) < 0 && err.err != ENOENT)
    log_warn("serve: deleting template %s: %s", id, err.msg);
  if (pid > 0)
    waitpid(pid, NULL, 0);
}

static void __attribute__((noreturn)) spawner_main(int sock) {
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  struct spawned live[256] = {0};
  for (;;) {
    struct spawn_req q;
    int ignored_fd;
    ssize_t n = recv_fd(sock, &q, sizeof q, &ignored_fd);
    if (ignored_fd >= 0)
      close(ignored_fd);
    if (n != (ssize_t)sizeof q)
      break;
    struct spawn_rep r = {0};
    int ctrl = -1;
    if (q.op == SPAWN_START) {
      struct coil_error err = {0};
      /* Python is loaded here, in the spawner, before the first template is
       * cloned from it (python_load.h); once, then cached. */
      const struct python_api *py = python_load(&err);
      struct serve_template_setup s = {.opts = &q.opts};
      struct coil_create_opts o = {.root = state_root,
                                   .id = q.id,
                                   .bundle = q.bundle,
                                   .prepare = py ? py->serve_prepare : NULL,
                                   .prepare_arg = &s,
                                   .relay_fd = &ctrl};
      pid_t pid = 0;
      if (!py) {
        snprintf(r.msg, sizeof r.msg, "%s", err.msg);
      } else if (container_create(&o, &pid, &err) < 0) {
        snprintf(r.msg, sizeof r.msg, "%s", err.msg);
      } else if (container_start(state_root, q.id, &err) < 0) {
        snprintf(r.msg, sizeof r.msg, "%s", err.msg);
        close(ctrl);
        ctrl = -1;
        spawner_delete(q.id, pid);
      } else {
        r.ok = 1;
        r.pid = pid;
        for (size_t i = 0; i < 256; i++)
          if (!live[i].pid) {
            live[i].pid = pid;
            memcpy(live[i].id, q.id, sizeof live[i].id);
            break;
          }
      }
      if (py)
        py->serve_setup_free(&s);
    } else if (q.op == SPAWN_DELETE) {
      spawner_delete(q.id, q.pid);
      for (size_t i = 0; i < 256; i++)
        if (live[i].pid == q.pid)
          live[i].pid = 0;
      r.ok = 1;
    }
    int sent = send_fd(sock, &r, sizeof r, ctrl);
    if (ctrl >= 0)
      close(ctrl);
    if (sent < 0)
      break;
  }
  /* serve is gone: nothing may outlive it. */
  for (size_t i = 0; i < 256; i++)
    if (live[i].pid) {
      kill(live[i].pid, SIGKILL);
      spawner_delete(live[i].id, live[i].pid);
    }
  _exit(0);
}

int serve_pool_init(const char *root, struct coil_error *err) {
  state_root = root;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
    return coil_error_sys(err, errno, "serve: spawner socketpair");
  pid_t pid = fork();
  if (pid < 0)
    return coil_error_sys(err, errno, "serve: fork the spawner");
  if (pid == 0) {
    close(sv[0]);
    spawner_main(sv[1]);
  }
  close(sv[1]);
  spawner_fd = sv[0];
  spawner_pid = pid;
  return 0;
}

void serve_pool_finish(void) {
  if (spawner_fd < 0)
    return;
  close(spawner_fd);
  spawner_fd = -1;
  waitpid(spawner_pid, NULL, 0);
}

static int spawner_call(const struct spawn_req *q, struct spawn_rep *r,
                        int *fd) {
  pthread_mutex_lock(&spawner_mu);
  int ok = send_fd(spawner_fd, q, sizeof *q, -1) == 0 &&
           recv_fd(spawner_fd, r, sizeof *r, fd) == (ssize_t)sizeof *r;
  pthread_mutex_unlock(&spawner_mu);
  if (!ok)
    snprintf(r->msg, sizeof r->msg, "serve: the spawner is gone");
  return ok ? 0 : -1;
}

/* ---- templates --------------------------------------------------------- */

static double since(const struct timespec *t0) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - t0->tv_sec) +
         (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

static struct serve_template *template_start(struct serve_tenant *t, char *why,
                                             size_t cap) {
  const struct serve_tenant_config *c = t->cfg;
  struct spawn_req q = {.op = SPAWN_START};
  snprintf(q.id, sizeof q.id, "serve-%d-%s-%u", (int)getpid(), c->name,
           ++t->gen);
  snprintf(q.bundle, sizeof q.bundle, "%s", t->bundle);
  q.opts = (struct serve_template_opts){
      .uid = c->uid,
      .gid = c->gid,
      .memory = c->cgroup_memory_mb << 20,
      .pids = c->cgroup_pids,
      .cpus = c->cgroup_cpu_millis / 1000.0,
      .cpu_idle = c->cgroup_cpu_idle,
      .cpu_seconds = c->limits.cpu_seconds,
      .max_request = REQUEST_MAX,
  };
  struct spawn_rep r = {0};
  int ctrl = -1;
  if (spawner_call(&q, &r, &ctrl) < 0 || !r.ok || ctrl < 0) {
    snprintf(why, cap, "%s", r.msg[0] ? r.msg : "template did not start");
    if (ctrl >= 0)
      close(ctrl);
    return NULL;
  }
  struct serve_template *tm = calloc(1, sizeof *tm);
  /* Its cgroup tells an OOM kill from other SIGKILLs; without one (the
   * cgroup layer off) a pidfd alone. */
  struct coil_cgroup *cg = NULL;
  int pidfd = -1;
  struct coil_error werr;
  if (container_watch(state_root, q.id, &cg, &pidfd, &werr) < 0)
    pidfd = (int)syscall(SYS_pidfd_open, r.pid, 0);
  if (!tm || pidfd < 0) {
    snprintf(why, cap, "serve: pidfd_open: %s", strerror(errno));
    free(tm);
    close(ctrl);
    if (pidfd >= 0)
      close(pidfd);
    struct spawn_req d = {.op = SPAWN_DELETE, .pid = r.pid};
    memcpy(d.id, q.id, sizeof d.id);
    int ignored;
    spawner_call(&d, &r, &ignored);
    return NULL;
  }
  memcpy(tm->id, q.id, sizeof tm->id);
  tm->pid = r.pid;
  tm->ctrl = ctrl;
  tm->pidfd = pidfd;
  tm->cg = cg;
  tm->ooms = cg ? cgroup_oom_kills(cg) : 0;
  clock_gettime(CLOCK_MONOTONIC, &tm->born);
  log_debug("serve: tenant %s: template %s is pid %d", c->name, tm->id,
            (int)tm->pid);
  return tm;
}

static void template_delete(struct serve_template *tm) {
  close(tm->ctrl);
  close(tm->pidfd);
  if (tm->cg)
    cgroup_free(tm->cg);
  struct spawn_req q = {.op = SPAWN_DELETE, .pid = tm->pid};
  memcpy(q.id, tm->id, sizeof q.id);
  struct spawn_rep r;
  int ignored;
  spawner_call(&q, &r, &ignored);
  free(tm);
}

/* Under t->mu. */
static void retire(struct serve_tenant *t, struct serve_template *tm) {
  if (t->cur == tm)
    t->cur = NULL;
  tm->next = t->retired;
  t->retired = tm;
  pthread_cond_signal(&t->sup_cv);
}

void serve_tenant_recycle(struct serve_tenant *t) {
  pthread_mutex_lock(&t->mu);
  if (t->cur)
    retire(t, t->cur);
  pthread_mutex_unlock(&t->mu);
}

static bool gone(const struct serve_template *tm) {
  struct pollfd p = {.fd = tm->pidfd, .events = POLLIN};
  return poll(&p, 1, 0) > 0;
}

static _Atomic bool stopping_flag;

static long long now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static long long now_ms(void) { return now_us() / 1000; }

/* ---- the CPU class ----------------------------------------------------- */

/* An execution that meets a limit (CPU, wall clock, memory, output) or
 * still runs cgroup.demote_run_ms after it started puts its tenant's
 * cgroup in the CPU's idle class (cpu.idle) for cgroup.demote_seconds from
 * then: its floods then give way to every other tenant's calls, whose
 * processes would otherwise wait behind them whenever they wake on the CPU
 * a flood holds. A handler that answers in time never meets this. */

/* Under t->mu. */
static void write_cpu_class(struct serve_tenant *t, struct serve_template *tm,
                            bool idle) {
  if (!tm || !tm->cg || t->demote_failed)
    return;
  struct coil_resources r = {.has_cpu_idle = true, .cpu_idle = idle};
  struct coil_error err = {0};
  if (cgroup_update(tm->cg, &r, &err) < 0) {
    t->demote_failed = true;
    log_warn("serve: tenant %s: its CPU class stays as it is: %s",
             t->cfg->name, err.msg);
  }
}

static void demote(struct serve_tenant *t, struct serve_template *tm,
                   const char *why) {
  const struct serve_tenant_config *c = t->cfg;
  if (!c->demote_seconds || c->cgroup_cpu_idle)
    return;
  pthread_mutex_lock(&t->mu);
  t->demoted_until = now_ms() + c->demote_seconds * 1000LL;
  if (!t->demoted) {
    t->demoted = true;
    t->demotions++;
    write_cpu_class(t, tm, true);
    if (t->cur != tm)
      write_cpu_class(t, t->cur, true);
    log_warn("serve: tenant %s: in the CPU's idle class for %d s: %s",
             c->name, c->demote_seconds, why);
  }
  pthread_mutex_unlock(&t->mu);
}

bool serve_tenant_cpu_idle(struct serve_tenant *t,
                           unsigned long long *demotions) {
  pthread_mutex_lock(&t->mu);
  bool idle = t->cfg->cgroup_cpu_idle || (t->demoted && !t->demote_failed);
  *demotions = t->demotions;
  pthread_mutex_unlock(&t->mu);
  return idle;
}

/* Under t->mu, from the supervisor: back to the normal class once
 * demote_seconds passed without another cause. */
static void promote_when_due(struct serve_tenant *t) {
  if (!t->demoted || now_ms() < t->demoted_until)
    return;
  t->demoted = false;
  write_cpu_class(t, t->cur, false);
  log_info("serve: tenant %s: back in the CPU's normal class", t->cfg->name);
}

/* Owns t's templates: starts one when a job needs it, replaces it after
 * its requests/seconds or when it died, and deletes retired ones once no
 * job uses them. */
static void *supervise(void *arg) {
  struct serve_tenant *t = arg;
  const struct serve_tenant_config *c = t->cfg;
  pthread_mutex_lock(&t->mu);
  for (;;) {
    bool stopping = stopping_flag;
    promote_when_due(t);
    struct serve_template *cur = t->cur;
    if (cur &&
        (stopping || gone(cur) ||
         (c->recycle_seconds && since(&cur->born) >= c->recycle_seconds)))
      retire(t, cur);
    if (!t->cur && t->want_template && !stopping) {
      pthread_mutex_unlock(&t->mu);
      char why[1024] = "";
      struct serve_template *tm = template_start(t, why, sizeof why);
      pthread_mutex_lock(&t->mu);
      t->want_template = false;
      t->cur = tm;
      if (t->demoted)
        write_cpu_class(t, tm, true);
      snprintf(t->start_error, sizeof t->start_error, "%s", tm ? "" : why);
      if (!tm)
        log_error("serve: tenant %s: %s", c->name, why);
      pthread_cond_broadcast(&t->cv);
      continue;
    }
    struct serve_template **pp = &t->retired;
    bool freed = false;
    while (*pp) {
      struct serve_template *tm = *pp;
      if (tm->refs > 0) {
        pp = &tm->next;
        continue;
      }
      *pp = tm->next;
      pthread_mutex_unlock(&t->mu);
      template_delete(tm);
      pthread_mutex_lock(&t->mu);
      freed = true;
      break;
    }
    if (freed)
      continue;
    if (stopping && !t->cur && !t->retired)
      break;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 100 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&t->sup_cv, &t->mu, &ts);
  }
  pthread_mutex_unlock(&t->mu);
  return NULL;
}

int serve_tenant_start(struct serve_tenant *t, struct coil_error *err) {
  pthread_mutex_init(&t->mu, NULL);
  pthread_cond_init(&t->cv, NULL);
  pthread_cond_init(&t->slot_cv, NULL);
  pthread_cond_init(&t->sup_cv, NULL);
  int r = pthread_create(&t->supervisor, NULL, supervise, t);
  if (r != 0)
    return coil_error_sys(err, r, "serve: tenant %s: thread", t->cfg->name);
  /* Warm from the start: the first request should not pay for it. */
  pthread_mutex_lock(&t->mu);
  t->want_template = true;
  pthread_cond_signal(&t->sup_cv);
  pthread_mutex_unlock(&t->mu);
  return 0;
}

void serve_tenant_stop(struct serve_tenant *t) {
  stopping_flag = true;
  pthread_mutex_lock(&t->mu);
  pthread_cond_broadcast(&t->cv);
  pthread_cond_signal(&t->sup_cv);
  pthread_mutex_unlock(&t->mu);
  pthread_join(t->supervisor, NULL);
}

/* Takes a reference on the warm template, starting one if needed. */
static struct serve_template *acquire(struct serve_tenant *t, char *why,
                                      size_t cap) {
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += START_WAIT_S;
  pthread_mutex_lock(&t->mu);
  struct serve_template *tm = NULL;
  while (!stopping_flag) {
    if (t->cur && !gone(t->cur)) {
      tm = t->cur;
      tm->refs++;
      tm->served++;
      if (t->cfg->recycle_requests &&
          tm->served >= (unsigned long)t->cfg->recycle_requests)
        retire(t, tm);
      break;
    }
    if (t->cur)
      retire(t, t->cur);
    if (!t->want_template) {
      t->want_template = true;
      t->start_error[0] = '\0';
      pthread_cond_signal(&t->sup_cv);
    }
    if (pthread_cond_timedwait(&t->cv, &t->mu, &deadline) == ETIMEDOUT)
      break;
    if (!t->cur && !t->want_template && t->start_error[0])
      break;
  }
  if (!tm)
    snprintf(why, cap, "tenant %s has no template: %s", t->cfg->name,
             t->start_error[0] ? t->start_error : "not started in time");
  pthread_mutex_unlock(&t->mu);
  return tm;
}

static void release(struct serve_tenant *t, struct serve_template *tm,
                    bool broken) {
  pthread_mutex_lock(&t->mu);
  tm->refs--;
  if (broken && t->cur == tm)
    retire(t, tm);
  else if (t->cur != tm && tm->refs == 0)
    pthread_cond_signal(&t->sup_cv); /* a retired one to delete */
  pthread_mutex_unlock(&t->mu);
}

/* ---- one job ----------------------------------------------------------- */

static void json_quote(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p < 0x20)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

char *serve_error_envelope(const char *type, const char *message) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return NULL;
  fputs("{\"ok\":false,\"error\":{\"type\":", f);
  json_quote(f, type);
  fputs(",\"message\":", f);
  json_quote(f, message);
  fputs("}}", f);
  fclose(f);
  return buf;
}

/* An fd to read the bytes a then b from, to its end: a pipe when they fit
 * in its buffer (written without blocking, and cheaper to make than a
 * memfd, which takes the rest). */
static int bytes_fd(const char *name, const char *a, size_t alen, const char *b,
                    size_t blen) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) == 0) {
    int cap = fcntl(p[1], F_GETPIPE_SZ);
    bool fits = cap > 0 && alen + blen <= (size_t)cap;
    bool ok = fits && (!alen || write(p[1], a, alen) == (ssize_t)alen) &&
              (!blen || write(p[1], b, blen) == (ssize_t)blen);
    close(p[1]);
    if (ok)
      return p[0];
    close(p[0]);
    if (fits)
      return -1;
  }
  int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0)
    return -1;
  if ((alen && write(fd, a, alen) != (ssize_t)alen) ||
      (blen && write(fd, b, blen) != (ssize_t)blen) ||
      lseek(fd, 0, SEEK_SET) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

struct job_state {
  struct answer_reader rd; /* the child's output while it comes */
  char *out;               /* then the answer taken from it */
  size_t len;
  bool overflow;
  bool started, ended, watchdog, template_failed, oom_killed;
  int pidfd; /* the child's, from the STARTED reply, or -1 */
  int status;
  double cpu;
  char digest[65];
  long long deadline, hard;
  /* When the child, still running, demotes its tenant (0: not, or done). */
  long long demote_at;
  struct serve_tenant *t;
  struct serve_template *tm;
};

/* Sends the job; false when the template's channel is dead (no child can
 * have started: the caller may retry on a new template). */
static bool send_job(struct serve_template *tm, const struct serve_job *j,
                     const char *code, const char *entry, const char *request,
                     size_t request_len, int *out_r, int *job_s) {
  cleanup_close int code_fd =
      bytes_fd("coil-code", code, j->code_len, entry, j->entry_len);
  cleanup_close int req_fd =
      bytes_fd("coil-request", request, request_len, NULL, 0);
  int out[2] = {-1, -1}, js[2] = {-1, -1};
  if (code_fd < 0 || req_fd < 0 || pipe2(out, O_CLOEXEC) < 0 ||
      socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, js) < 0) {
    for (int i = 0; i < 2; i++) {
      if (out[i] >= 0)
        close(out[i]);
      if (js[i] >= 0)
        close(js[i]);
    }
    return false;
  }
  int fds[SERVE_JOB_FDS];
  fds[SERVE_FD_CODE] = code_fd;
  fds[SERVE_FD_REQUEST] = req_fd;
  fds[SERVE_FD_OUT] = out[1];
  fds[SERVE_FD_JOB] = js[1];
  bool ok = fdpass_send(tm->ctrl, j, sizeof *j, fds, SERVE_JOB_FDS, 0) == 0;
  close(out[1]);
  close(js[1]);
  if (!ok) {
    close(out[0]);
    close(js[0]);
    return false;
  }
  *out_r = out[0];
  *job_s = js[0];
  return true;
}

static void kill_child(int pidfd) {
  if (pidfd >= 0)
    syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
}

/* The deadline at now: the child is killed once it passes; false once
 * the hard limit passed too (the template is taken for failed). */
static bool within_deadline(struct job_state *s, long long now) {
  if (!s->watchdog && !s->ended && now >= s->deadline) {
    s->watchdog = true;
    kill_child(s->pidfd);
  }
  if (now >= s->hard) {
    s->template_failed = !s->ended;
    return false;
  }
  return true;
}

/* One reply of the template's on job_s; false at the channel's end. */
static bool take_reply(int job_s, struct job_state *s) {
  struct serve_job_reply rep;
  int fd = -1;
  ssize_t r = recv_fd(job_s, &rep, sizeof rep, &fd);
  if (r != (ssize_t)sizeof rep) {
    if (fd >= 0)
      close(fd);
    if (!s->ended)
      s->template_failed = true;
    return false;
  }
  memcpy(s->digest, rep.digest, sizeof s->digest);
  s->digest[64] = '\0';
  if (rep.kind == SERVE_REPLY_STARTED && fd >= 0) {
    s->started = true;
    s->pidfd = fd;
    fd = -1;
    if (s->watchdog || s->overflow)
      kill_child(s->pidfd);
  } else if (rep.kind == SERVE_REPLY_ENDED) {
    s->ended = true;
    s->status = rep.status;
    s->cpu = rep.cpu_seconds;
  }
  if (fd >= 0)
    close(fd);
  return true;
}

/* The child's pidfd let go, the child killed first if it was not reaped. */
static void drop_child(struct job_state *s) {
  if (s->pidfd >= 0) {
    if (!s->ended)
      kill_child(s->pidfd);
    close(s->pidfd);
    s->pidfd = -1;
  }
}

/* Collects the child's output and the template's replies until both are
 * complete, killing the child at the deadline or over the output cap. With
 * early, it returns as soon as the child has started and written some
 * output that is final (answer_final): nothing the child or its exit
 * status does later can change the answer (python_classify reads the
 * output first), so only the reap is left, for the finisher. */
static void collect(int out_r, int job_s, size_t out_cap, bool early,
                    struct job_state *s) {
  bool job_open = true, out_open = out_r >= 0;
  while (out_open || job_open) {
    if (early && s->started && s->rd.len > 0 && answer_final(&s->rd))
      return;
    long long now = now_ms();
    if (!within_deadline(s, now))
      break;
    long long until = s->watchdog ? s->hard : s->deadline;
    if (s->demote_at && s->demote_at < until)
      until = s->demote_at;
    struct pollfd p[2] = {{.fd = out_open ? out_r : -1, .events = POLLIN},
                          {.fd = job_open ? job_s : -1, .events = POLLIN}};
    int n = poll(p, 2, (int)(until - now));
    if (n < 0 && errno != EINTR)
      break;
    if (p[1].revents && !take_reply(job_s, s))
      job_open = false;
    if (p[0].revents && answer_read(&s->rd, out_r) > 0 && s->rd.len > out_cap &&
        !s->overflow) {
      s->overflow = true;
      kill_child(s->pidfd);
    }
    out_open = out_open && !s->rd.eof;
    if (s->demote_at && !s->ended && now_ms() >= s->demote_at) {
      s->demote_at = 0;
      char why[64];
      snprintf(why, sizeof why, "an execution ran past %d ms",
               s->t->cfg->demote_run_ms);
      demote(s->t, s->tm, why);
    }
  }
  drop_child(s);
}

/* Whether the tenant's cgroup counted an OOM kill since base, for a child
 * that died by SIGKILL with nothing else to explain it; only such a death
 * reads the counter, so no call pays for it on the way to its answer. A
 * kill counted for an earlier child that had already answered can make
 * this say yes, as another job's kill in flight at the same time could
 * already. */
static bool oom_killed_since(struct serve_template *tm, unsigned long long base,
                             const struct job_state *s) {
  if (!tm->cg || !s->ended || s->watchdog || s->overflow ||
      !WIFSIGNALED(s->status) || WTERMSIG(s->status) != SIGKILL)
    return false;
  unsigned long long now = cgroup_oom_kills(tm->cg);
  unsigned long long seen = atomic_load(&tm->ooms);
  while (seen < now && !atomic_compare_exchange_weak(&tm->ooms, &seen, now))
    ;
  return now > base;
}

/* The error type named by an envelope's text, or NULL for ok. */
static const char *type_of(const char *env) {
  static const char *const types[] = {
      "Exception",     "Timeout",       "MemoryLimit",    "CpuLimit",
      "OutputLimit",   "GateViolation", "RequestError",   "Signal",
      "ProtocolError", "UnknownTenant", "UnknownHandler", "Forbidden",
      "Busy",          "Unavailable"};
  if (strncmp(env, "{\"ok\":true", 10) == 0)
    return NULL;
  const char *p = strstr(env, "\"error\":{\"type\":\"");
  if (!p)
    return "Exception";
  p += strlen("\"error\":{\"type\":\"");
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    size_t n = strlen(types[i]);
    if (strncmp(p, types[i], n) == 0 && p[n] == '"')
      return types[i];
  }
  return "Exception";
}

/* A slot of the tenant's cap, waiting for one while the queue has room.
 * Each slot held by a child that has answered and is being reaped lends
 * the queue a place: that slot frees within the reap, and a client that
 * calls again as soon as it has its answer is not told Busy for it. */
static bool take_slot(struct serve_tenant *t) {
  pthread_mutex_lock(&t->mu);
  bool ok = true;
  if (t->in_flight >= t->cfg->limits.in_flight) {
    if (t->queued >= t->cfg->limits.queue + t->answered) {
      ok = false;
    } else {
      t->queued++;
      while (t->in_flight >= t->cfg->limits.in_flight)
        pthread_cond_wait(&t->slot_cv, &t->mu);
      t->queued--;
    }
  }
  if (ok)
    t->in_flight++;
  pthread_mutex_unlock(&t->mu);
  return ok;
}

static void give_slot(struct serve_tenant *t, bool answered) {
  pthread_mutex_lock(&t->mu);
  t->in_flight--;
  t->answered -= answered;
  pthread_cond_signal(&t->slot_cv); /* one slot: one waiter */
  pthread_mutex_unlock(&t->mu);
}

static void finish(struct serve_outcome *out, char *env, const char *type) {
  out->envelope = env ? env : strdup("{\"ok\":false}");
  out->type = env ? type : "Exception";
}

/* The rest of a job answered early: the child's reap, under the deadline
 * still, then its template reference and in-flight slot, so the tenant's
 * cap keeps counting the child until it is gone. One finisher thread,
 * started with the first such job, waits for all of them. */
struct finishing {
  struct serve_tenant *t;
  struct serve_template *tm;
  int job_s;
  struct job_state s;
  struct finishing *next;
};

static struct {
  pthread_mutex_t mu;
  struct finishing *head; /* pushed by callers, unlinked by the finisher */
  int wake;               /* eventfd: a job was pushed */
  bool started;
} fin = {.mu = PTHREAD_MUTEX_INITIALIZER, .wake = -1};

static void finished(struct finishing *f) {
  pthread_mutex_lock(&fin.mu);
  struct finishing **pp = &fin.head;
  while (*pp != f)
    pp = &(*pp)->next;
  *pp = f->next;
  pthread_mutex_unlock(&fin.mu);
  close(f->job_s);
  drop_child(&f->s);
  release(f->t, f->tm, f->s.template_failed);
  give_slot(f->t, true);
  free(f);
}

static void *finisher(void *arg) {
  (void)arg;
  struct pollfd *p = NULL;
  struct finishing **fs = NULL;
  size_t cap = 0;
  for (;;) {
    pthread_mutex_lock(&fin.mu);
    size_t n = 1;
    for (struct finishing *f = fin.head; f; f = f->next)
      n++;
    if (n > cap) {
      size_t ncap = n * 2;
      struct pollfd *np = realloc(p, ncap * sizeof *p);
      if (np)
        p = np;
      struct finishing **nfs = realloc(fs, ncap * sizeof *fs);
      if (nfs)
        fs = nfs;
      if (!np || !nfs) {
        pthread_mutex_unlock(&fin.mu);
        usleep(10000);
        continue;
      }
      cap = ncap;
    }
    long long until = -1;
    p[0] = (struct pollfd){.fd = fin.wake, .events = POLLIN};
    size_t i = 1;
    for (struct finishing *f = fin.head; f; f = f->next, i++) {
      fs[i] = f;
      p[i] = (struct pollfd){.fd = f->job_s, .events = POLLIN};
      long long d = f->s.watchdog ? f->s.hard : f->s.deadline;
      if (until < 0 || d < until)
        until = d;
    }
    pthread_mutex_unlock(&fin.mu);
    long long now = now_ms();
    int wait = until < 0 ? -1 : until > now ? (int)(until - now) : 0;
    if (poll(p, n, wait) < 0 && errno != EINTR)
      continue;
    if (p[0].revents) {
      uint64_t v;
      if (read(fin.wake, &v, sizeof v) < 0)
        v = 0;
    }
    now = now_ms();
    for (i = 1; i < n; i++) {
      struct finishing *f = fs[i];
      bool done = !within_deadline(&f->s, now) ||
                  (p[i].revents && !take_reply(f->job_s, &f->s)) || f->s.ended;
      if (done)
        finished(f);
    }
  }
  return NULL;
}

/* Hands the rest of the job to the finisher; false (the caller finishes
 * it) when there is none to be had. */
static bool finish_later(struct serve_tenant *t, struct serve_template *tm,
                         int job_s, const struct job_state *s) {
  struct finishing *f = malloc(sizeof *f);
  if (!f)
    return false;
  *f = (struct finishing){.t = t, .tm = tm, .job_s = job_s, .s = *s};
  f->s.out = NULL;
  pthread_mutex_lock(&fin.mu);
  if (!fin.started) {
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    fin.wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    fin.started =
        fin.wake >= 0 && pthread_create(&th, &at, finisher, NULL) == 0;
    pthread_attr_destroy(&at);
    if (!fin.started && fin.wake >= 0) {
      close(fin.wake);
      fin.wake = -1;
    }
  }
  bool ok = fin.started;
  if (ok) {
    pthread_mutex_lock(&t->mu);
    t->answered++;
    pthread_mutex_unlock(&t->mu);
    f->next = fin.head;
    fin.head = f;
  }
  pthread_mutex_unlock(&fin.mu);
  if (!ok) {
    free(f);
    return false;
  }
  uint64_t one = 1;
  if (write(fin.wake, &one, sizeof one) < 0)
    log_debug("serve: finisher wake-up: %s", strerror(errno));
  return true;
}

/* Busy answers of one tenant go out one per BUSY_PACE_US at the most: a
 * client that calls again at once, over the cap and the queue, waits
 * instead of spinning the server (and the machine its other tenants share)
 * on answers. Each waits BUSY_WAIT_MAX_US at the most, however many call. */
#define BUSY_PACE_US 1000
#define BUSY_WAIT_MAX_US 100000

static void busy_pace(struct serve_tenant *t) {
  long long now = now_us();
  pthread_mutex_lock(&t->mu);
  long long at = t->busy_at > now ? t->busy_at : now;
  if (at - now > BUSY_WAIT_MAX_US)
    at = now + BUSY_WAIT_MAX_US;
  t->busy_at = at + BUSY_PACE_US;
  pthread_mutex_unlock(&t->mu);
  struct timespec until = {.tv_sec = at / 1000000,
                           .tv_nsec = (long)(at % 1000000) * 1000};
  if (at > now)
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) ==
           EINTR)
      ;
}

static void run_job(struct serve_tenant *t, enum serve_job_kind kind,
                    const char *code, size_t code_len, const char *entry,
                    const char *request, size_t request_len,
                    const struct serve_limits_req *lim,
                    struct serve_outcome *out) {
  *out = (struct serve_outcome){0};
  if (!take_slot(t)) {
    busy_pace(t);
    finish(out,
           serve_error_envelope("Busy", "the tenant's executions in flight "
                                        "and its queue are full"),
           "Busy");
    return;
  }
  struct serve_job j = {
      .op = kind == SERVE_JOB_GATE ? SERVE_OP_GATE : SERVE_OP_CALL,
      .code_len = (uint32_t)code_len,
      .entry_len = (uint32_t)strlen(entry),
      .timeout_ms = (uint32_t)lim->timeout_ms,
      .memory_mb = (uint32_t)lim->memory_mb,
      .output_bytes = (uint32_t)lim->output_bytes,
  };
  struct job_state s = {.pidfd = -1};
  char why[1100] = "";
  bool sent = false, early = false;
  struct serve_template *tm = NULL;
  int out_r = -1, job_s = -1;
  unsigned long long ooms = 0;
  /* A template that died since its last job is replaced, unseen by the
   * caller, as long as no child of it started the job. */
  for (int attempt = 0; attempt < 3; attempt++) {
    tm = acquire(t, why, sizeof why);
    if (!tm)
      break;
    ooms = atomic_load(&tm->ooms);
    sent = send_job(tm, &j, code, entry, request, request_len, &out_r, &job_s);
    if (sent) {
      long long now = now_ms();
      s.deadline = now + lim->timeout_ms + GRACE_MS;
      s.hard = s.deadline + 5000;
      if (t->cfg->demote_seconds && !t->cfg->cgroup_cpu_idle)
        s.demote_at = now + t->cfg->demote_run_ms;
      s.t = t;
      s.tm = tm;
      collect(out_r, job_s, (size_t)lim->output_bytes + 4096,
              kind == SERVE_JOB_CALL, &s);
      close(out_r);
      s.out = answer_take(&s.rd, &s.len);
      if (s.pidfd >= 0) {
        /* Answered early: the reap is left, here if no finisher takes it. */
        early = finish_later(t, tm, job_s, &s);
        if (early)
          break;
        collect(-1, job_s, 0, false, &s);
      }
      close(job_s);
      s.oom_killed = oom_killed_since(tm, ooms, &s);
    }
    bool failed = !sent || (s.template_failed && !s.started && !s.ended);
    release(t, tm, !sent || s.template_failed);
    if (!failed)
      break;
    free(s.out);
    s = (struct job_state){.pidfd = -1};
    sent = false;
    snprintf(why, sizeof why, "tenant %s: the template failed", t->cfg->name);
  }
  if (!early)
    give_slot(t, false);
  if (!sent) {
    finish(out, serve_error_envelope("Unavailable", why), "Unavailable");
    return;
  }
  memcpy(out->digest, s.digest, sizeof out->digest);
  if (s.template_failed && s.len == 0) {
    free(s.out);
    snprintf(why, sizeof why, "tenant %s: the template failed during the job",
             t->cfg->name);
    finish(out, serve_error_envelope("Unavailable", why), "Unavailable");
    return;
  }
  if (kind == SERVE_JOB_GATE && s.ended && s.status == 0) {
    free(s.out);
    finish(out, strdup("{\"ok\":true}"), NULL);
    return;
  }
  if (s.overflow) {
    free(s.out);
    finish(out,
           serve_error_envelope("OutputLimit",
                                "the envelope would exceed the output cap"),
           "OutputLimit");
    return;
  }
  struct python_ctx c = {.entry = entry,
                         .timeout = (lim->timeout_ms + 999) / 1000,
                         .timeout_ms = lim->timeout_ms,
                         .cpu_limit = t->cfg->limits.cpu_seconds};
  struct python_end e = {.status = s.status,
                         .cpu_seconds = s.cpu,
                         .watchdog = s.watchdog,
                         .oom_killed = s.oom_killed,
                         .relayed = s.len,
                         .head = s.out ? s.out : ""};
  struct python_verdict v;
  python_classify(&c, t->cfg->name, &e, &v);
  if (v.envelope || s.len == 0) {
    free(s.out);
    finish(out,
           serve_error_envelope(v.type ? v.type : "Exception",
                                v.message[0] ? v.message
                                             : "the sandbox did not answer"),
           v.type ? v.type : "Exception");
    return;
  }
  finish(out, s.out, type_of(s.out));
}

void serve_run(struct serve_tenant *t, enum serve_job_kind kind,
               const char *code, size_t code_len, const char *entry,
               const char *request, size_t request_len,
               const struct serve_limits_req *lim, struct serve_outcome *out) {
  run_job(t, kind, code, code_len, entry, request, request_len, lim, out);
  static const char *const limits[] = {"CpuLimit", "Timeout", "MemoryLimit",
                                       "OutputLimit"};
  for (size_t i = 0; out->type && i < sizeof limits / sizeof *limits; i++)
    if (strcmp(out->type, limits[i]) == 0) {
      char why[64];
      snprintf(why, sizeof why, "an execution ended %s", out->type);
      demote(t, NULL, why);
    }
}
