#include "serve_template.h"

#include <Python.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "caps.h"
#include "embed.h"
#include "exit_codes.h"
#include "fdpass.h"
#include "gate.h"
#include "guest.h"
#include "init.h"
#include "landlock.h"
#include "layers.h"
#include "libmount_load.h"
#include "lockdown.h"
#include "log.h"
#include "privileges.h"
#include "protocol.h"
#include "python_run.h"
#include "python_setup.h"
#include "readall.h"
#include "serve_prefault.h"
#include "serve_warm.h"
#include "serve_wire.h"

#define CTRL_FD 1
/* Gate results kept, by digest: registered handlers and recent inline code. */
#define CACHE_SLOTS 64
/* Children in flight at once; the server's per-tenant cap is lower. */
#define MAX_CHILDREN 256
/* A template learns the pages a request writes (serve_prefault.h) from
 * its first children, one at a time. */
#define LEARN_CHILDREN 4
/* The code file name in messages and tracebacks, as `coil py -c`. */
#define CODE_NAME "<string>"

static void serve_template_main(void *arg, int start_conn)
    __attribute__((noreturn));

int serve_template_prepare(void *arg, struct coil_config *cfg,
                           const char *bundle, const char *rootfs,
                           struct coil_payload *p, struct coil_error *err) {
  (void)bundle;
  struct serve_template_setup *s = arg;
  const struct serve_template_opts *o = s->opts;
  memset(p, 0, sizeof *p);
  if (!cfg->sandbox.has_python)
    return coil_error_set(err, EINVAL,
                          "sandbox.python: the bundle is not a Python "
                          "sandbox bundle");
  s->disabled = layers_disabled(&cfg->sandbox);
  layers_strip_config(cfg, s->disabled);
  cfg->process.no_new_privileges = true;
  /* One host id per tenant: container root is the tenant's uid, the only
   * id mapped, so a sandbox can reach nothing another tenant owns. */
  if (cfg->lnx.n_uid_mappings && cfg->lnx.n_gid_mappings) {
    cfg->lnx.uid_mappings[0] = (struct coil_id_mapping){0, o->uid, 1};
    cfg->lnx.gid_mappings[0] = (struct coil_id_mapping){0, o->gid, 1};
    cfg->lnx.n_uid_mappings = cfg->lnx.n_gid_mappings = 1;
    cfg->process.uid = cfg->process.gid = 0;
    cfg->process.n_additional_gids = 0;
  }
  struct coil_resources *r = &cfg->lnx.resources;
  if (o->memory > 0) {
    cfg->lnx.has_resources = r->has_memory_limit = r->has_memory_swap = true;
    r->memory_limit = r->memory_swap = o->memory;
  }
  if (o->pids > 0) {
    cfg->lnx.has_resources = r->has_pids_limit = true;
    r->pids_limit = o->pids;
  }
  if (o->cpus > 0) {
    cfg->lnx.has_resources = r->has_cpu_quota = r->has_cpu_period = true;
    r->cpu_period = 100000;
    r->cpu_quota = (int64_t)(o->cpus * 100000);
  }
  if (o->cpu_idle) {
    cfg->lnx.has_resources = r->has_cpu_idle = true;
    r->cpu_idle = 1;
  }
  /* The rlimits are each child's, not the template's: RLIMIT_NPROC 0 would
   * stop the template forking at all. */
  if (caps_parse(&cfg->process, &s->caps, err) < 0 ||
      rlimits_parse(&cfg->process, &s->rlimits, err) < 0)
    return -1;
  s->cpu_limit = o->cpu_seconds;
  for (size_t i = 0; i < s->rlimits.n; i++)
    if (s->rlimits.resource[i] == RLIMIT_CPU) {
      if (o->cpu_seconds > 0) {
        s->rlimits.lim[i].rlim_cur = (rlim_t)o->cpu_seconds;
        s->rlimits.lim[i].rlim_max = (rlim_t)o->cpu_seconds + 1;
      }
      s->cpu_limit = (int)s->rlimits.lim[i].rlim_cur;
    }
  for (size_t i = 0; i < cfg->process.n_rlimits; i++)
    free(cfg->process.rlimits[i].type);
  free(cfg->process.rlimits);
  cfg->process.rlimits = NULL;
  cfg->process.n_rlimits = 0;
  s->process = &cfg->process;
  bool mountns = layer_on(s->disabled, LAYER_MOUNTNS);
  if (asprintf(&s->prefix, "%s/usr", mountns ? "" : rootfs) < 0)
    s->prefix = NULL;
  s->readable_root = strdup(mountns ? "/" : rootfs);
  if (!s->prefix || !s->readable_root)
    return coil_error_sys(err, ENOMEM, "serve template");
  s->max_request = o->max_request;
  *p = (struct coil_payload){
      .run = serve_template_main,
      .arg = s,
      /* The template keeps its capabilities in its user namespace to make
       * each child's PID namespace; every child drops them. */
      .keep_ids_and_caps = true,
      .no_pivot = !mountns,
      .no_cgroup = !layer_on(s->disabled, LAYER_CGROUP),
      .own_seccomp = true,
      .relay_stdout = true,
      .relay_duplex = true,
      .proc_fd = true,
  };
  return 0;
}

void serve_template_setup_free(struct serve_template_setup *s) {
  free(s->prefix);
  free(s->readable_root);
  s->prefix = s->readable_root = NULL;
}

/* ---- the template process ---------------------------------------------- */

/* A gate result and, for accepted code, its globals: built once here, so
 * each child starts from its own copy-on-write image of them. */
struct cached {
  unsigned long gen; /* cache_gen when filled: spares forked since know it */
  char *code;        /* the source, compared byte for byte on lookup */
  size_t len;
  char digest[65];
  struct gate_result g;
  PyObject *globals;
  bool used;
};

struct child {
  pid_t pid;
  int job_fd;
};

static struct cached cache[CACHE_SLOTS];
static unsigned long cache_gen;
static size_t cache_next;
static struct child children[MAX_CHILDREN];
/* The learning child and the template's end of its socket, which the
 * child writes a byte to once it has answered and then waits on: it is
 * alive, sharing the template's pages, until the template closes this end. */
static struct {
  pid_t pid; /* 0: none */
  int sock;
} learner;
static bool learning; /* prefault_open succeeded, more to learn */
static int learners;  /* learning children handed a job */
static PyObject *sha256_fn;
static struct lockdown_filters filters; /* compiled once for every child */
/* Each child mounts an empty /tmp of its own only where an execution could
 * write one: with Landlock in force no child writes anywhere (stage 2
 * leaves no filesystem rights from before the request is read), so there
 * is nothing of a previous execution to hide and the mount and its
 * teardown are saved. */
static bool fresh_tmp;
/* A mount namespace of its own per child, where any of the three layers
 * that each stop a child mounting (no capabilities, seccomp, Landlock) is
 * off: with all three in force it would isolate nothing, and
 * its teardown waits for an expedited RCU grace period on every exit. */
static bool own_mountns;
/* Done once here for every child (privileges.h): the bounding set shed,
 * every signal disposition default. */
static bool bounding_dropped, dispositions_default;

static void __attribute__((noreturn)) die(const char *what, const char *msg) {
  dprintf(2, "coil: serve template: %s: %s\n", what, msg);
  _exit(PY_EXIT_COIL);
}

static int digest_of(const char *code, size_t len, char out[65]) {
  PyObject *b = PyBytes_FromStringAndSize(code, (Py_ssize_t)len);
  PyObject *h = b ? PyObject_CallOneArg(sha256_fn, b) : NULL;
  Py_XDECREF(b);
  PyObject *hex = h ? PyObject_CallMethod(h, "hexdigest", NULL) : NULL;
  const char *s = hex ? PyUnicode_AsUTF8(hex) : NULL;
  int r = s && strlen(s) == 64 ? 0 : -1;
  if (r == 0)
    memcpy(out, s, 65);
  Py_XDECREF(h);
  Py_XDECREF(hex);
  PyErr_Clear();
  return r;
}

/* Regular expressions the accepted code writes as literals, compiled into
 * re's cache for every child (serve_warm.h). Only speed depends on it. */
static void warm_regexes(const struct gate_result *g, const char *code,
                         size_t len) {
  bool uses_re = false;
  for (size_t i = 0; i < g->n_helpers; i++)
    uses_re |= strcmp(g->helpers[i], "re") == 0;
  if (!uses_re || g->n > 0)
    return;
  PyObject *src = PyUnicode_DecodeUTF8(code, (Py_ssize_t)len, "strict");
  struct coil_error err = {0};
  int n = src ? serve_warm_regexes(src, &err) : -1;
  if (n < 0)
    log_debug("serve template: regex warm-up: %s",
              err.msg[0] ? err.msg : "source not UTF-8");
  else
    log_debug("serve template: %d literal regular expressions compiled", n);
  Py_XDECREF(src);
  PyErr_Clear();
}

/* The gate result for code, from the cache (the same bytes: no hashing per
 * request) or checked and compiled now; its digest in digest. */
static struct cached *gated(const struct serve_template_setup *s,
                            const char *code, size_t len, char digest[65],
                            struct coil_error *err) {
  for (size_t i = 0; i < CACHE_SLOTS; i++)
    if (cache[i].used && cache[i].len == len &&
        memcmp(cache[i].code, code, len) == 0) {
      memcpy(digest, cache[i].digest, 65);
      return &cache[i];
    }
  if (digest_of(code, len, digest) < 0)
    die("sha256", "failed");
  struct cached *c = &cache[cache_next];
  cache_next = (cache_next + 1) % CACHE_SLOTS;
  if (c->used) {
    gate_result_free(&c->g);
    Py_XDECREF(c->globals);
    free(c->code);
  }
  *c = (struct cached){0};
  struct gate_limits lim;
  gate_limits_default(&lim);
  if (gate_check(code, len, CODE_NAME, &lim, layer_on(s->disabled, LAYER_AST),
                 &c->g, err) < 0)
    return NULL;
  if (c->g.n == 0 &&
      python_run_globals(&c->g, s->disabled, &c->globals, err) < 0) {
    gate_result_free(&c->g);
    return NULL;
  }
  if (!(c->code = malloc(len ? len : 1))) {
    gate_result_free(&c->g);
    Py_XDECREF(c->globals);
    *c = (struct cached){0};
    coil_error_set(err, ENOMEM, "serve: code cache");
    return NULL;
  }
  memcpy(c->code, code, len);
  c->len = len;
  memcpy(c->digest, digest, 65);
  c->used = true;
  warm_regexes(&c->g, code, len);
  c->gen = ++cache_gen;
  return c;
}

static void send_reply(int fd, int kind, int status, const char *digest,
                       double cpu, int pass_fd) {
  struct serve_job_reply r = {
      .kind = kind, .status = status, .cpu_seconds = cpu};
  if (digest)
    memcpy(r.digest, digest, 65);
  /* The server may have given up on the job: that is no error here. */
  fdpass_send(fd, &r, sizeof r, &pass_fd, pass_fd >= 0, MSG_DONTWAIT);
}

/* ---- children ------------------------------------------------------------
 * Each child is cloned ahead of its request as one of the template's
 * *spares*: PID 1 of a fresh PID namespace, it does everything that depends
 * neither on the request nor on the job's limits (a fresh /tmp where one is
 * needed, the parent-death signal, the privilege drop of runtime/privileges.c,
 * lockdown stage 2 with the job's steps still open), then waits for
 * exactly one job on a socket of its own. The job brings the cache slot of
 * its code, its limits and entry, and its output and request fds; the
 * child then applies signals, timer and RLIMIT_DATA and python_run_finish
 * (helpers, request, the job's steps closed, the audit hook's deny phase,
 * the handler). A spare forked before its job's code
 * was cached is not used for it. A child never serves a second request.
 *
 * The template keeps SPARES of them. The one handed a job is replaced
 * once a child has ended, not at once: the clone and the new spare's
 * preparation would otherwise take a CPU while the job runs and its exit
 * and answer travel back (on a 2-CPU machine the answer's reader waited
 * behind them), whereas after the child's end they overlap the client's
 * own work between calls. Only a pool left with no spare for the newest
 * code is refilled at once. */

/* What the template sends a spare, with [out, request] as SCM_RIGHTS. */
struct spare_job {
  uint32_t slot;
  uint32_t timeout_ms, memory_mb, output_bytes;
  char entry[256];
};

struct spare {
  pid_t pid; /* 0: none */
  int pidfd;
  int sock;           /* the template's end of the job socket */
  unsigned long gen;  /* cache generation at fork: slots up to it are known */
  bool learns;        /* reports when it has answered (learner, above) */
  unsigned long born; /* clones before it: the oldest is the readiest */
};

/* Two: one takes the next job while the other's replacement waits for a
 * child's end. While pages are learned, one (learner_done). */
#define SPARES 2
static struct spare spares[SPARES] = {
    [0 ... SPARES - 1] = {.pidfd = -1, .sock = -1}};
/* Running means (ms) of the template's quiet spells, from its last child's
 * end to the next job, and of its clones: the pool is refilled at a
 * child's end only where a clone fits the spell, or the next job would
 * wait for it (calls back to back). Otherwise only an empty pool is
 * refilled, at once. */
static double quiet_ms, clone_ms;
static double quiet_from; /* when the last child ended; 0: one is running */
static unsigned long clones;
/* A template left alone this long fills its pool whatever the means say. */
#define IDLE_FILL_MS 10
/* A spare died before its job (it could not drop its privileges, say): no
 * more are cloned ahead until the next job, which clones its own. */
static bool spares_failing;

/* Fractional: a clone takes a fraction of deadline_now_ms()'s unit. */
static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void mean_add(double *mean, double x) { *mean += (x - *mean) / 8; }

static void __attribute__((noreturn))
child_fail(int out, const char *type, const char *msg) {
  struct protocol_failure f = {.type = type, .message = msg};
  if (out >= 0)
    protocol_write_error(out, &f, NULL, 0);
  _exit(PY_EXIT_COIL);
}

/* The job from the template on fd 0; out and request become fds 1 and 0.
 * With block false, only a job already queued (to answer it with an
 * error); -1 when there is none. */
static int child_take_job(struct spare_job *j, bool block) {
  int fds[2];
  size_t n;
  if (fdpass_recv(0, j, sizeof *j, fds, 2, &n, block ? 0 : MSG_DONTWAIT) !=
          (ssize_t)sizeof *j ||
      n != 2)
    return -1;
  if (dup2(fds[0], 1) < 0 || dup2(fds[1], 0) < 0)
    _exit(PY_EXIT_COIL);
  close(fds[0]);
  close(fds[1]);
  j->entry[sizeof j->entry - 1] = '\0';
  return 0;
}

static int learn_fd = -1; /* a learning child's end of its job socket */

/* A learning child has answered: it says so and stays alive, its pages
 * readable, until the template has read them and closes its end. */
static void report_answered(void) {
  char b = 'a';
  if (write(learn_fd, &b, 1) == 1)
    while (read(learn_fd, &b, 1) > 0)
      ;
}

static void __attribute__((noreturn))
spare_main(const struct serve_template_setup *s, int sock, bool learns) {
  /* Before anything else writes: the pages children write, copied now
   * while no request waits (serve_prefault.h). */
  prefault_apply();
  /* fds 0 and 1 are the job socket until the job replaces them: the
   * template's control channel (fd 1) is not kept. */
  if (dup2(sock, 0) < 0 || dup2(sock, 1) < 0 ||
      (learns && (learn_fd = dup(sock)) < 0))
    _exit(PY_EXIT_COIL);
  close(sock);
  struct spare_job j;
  struct coil_error err = {0};
  /* An empty /tmp of its own: nothing a previous execution wrote there
   * (possible only with Landlock off) can be read. */
  if (fresh_tmp &&
      mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
            "size=16m,mode=1777") < 0)
    child_fail(child_take_job(&j, false) == 0 ? 1 : -1, "Exception",
               "serve: mount a fresh /tmp");
  struct privileges pv = {.p = s->process,
                          .caps = &s->caps,
                          .rlimits = &s->rlimits,
                          .keep_ids_and_caps =
                              !layer_on(s->disabled, LAYER_CAPS),
                          .bounding_dropped = bounding_dropped,
                          .dispositions_default = dispositions_default};
  /* Every fd but stdio and learn_fd is closed here: the template's maps
   * and pagemap (serve_prefault.c) and other children's sockets among
   * them. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 ||
      privileges_drop(&pv, &learn_fd, learn_fd >= 0, &err) < 0)
    child_fail(child_take_job(&j, false) == 0 ? 1 : -1, "Exception",
               err.msg[0] ? err.msg : strerror(errno));
  /* Stage 2 before the job, letting through exactly what the job's steps
   * use (receiving fds, signal handlers, a timer, lowering RLIMIT_DATA)
   * until python_run_finish closes them: the request waits for neither
   * ruleset nor filter. Stage 1 is not loaded: nothing runs between the
   * stages here, and stage 2 holds it whole (no filesystem rights under
   * read-only ones; a kill, which wins over stage 1's EPERM, for every
   * call stage 1 denies), so it would cost each child a ruleset and a
   * filter and stop nothing. */
  struct lockdown_opts lock = {.landlock =
                                   layer_on(s->disabled, LAYER_LANDLOCK),
                               .seccomp = layer_on(s->disabled, LAYER_SECCOMP),
                               .readable_root = s->readable_root,
                               .compiled = &filters};
  if (lockdown_stage2_before_job(&lock, &err) < 0)
    child_fail(child_take_job(&j, false) == 0 ? 1 : -1, "Exception", err.msg);
  if (child_take_job(&j, true) < 0)
    _exit(PY_EXIT_COIL);
  const struct cached *code = &cache[j.slot % CACHE_SLOTS];
  struct python_ctx c = {
      .code_name = CODE_NAME,
      .entry = j.entry,
      .disabled = s->disabled,
      .prefix = s->prefix,
      .readable_root = s->readable_root,
      .timeout = (int)((j.timeout_ms + 999) / 1000),
      .timeout_ms = (int)j.timeout_ms,
      .cpu_limit = s->cpu_limit,
      .max_request = s->max_request,
      .max_output = j.output_bytes,
      /* RLIMIT_DATA of this execution, applied by python_run_arm (not in
       * the ASan build: memory_bound.h). */
      .memory_bound = layer_on(s->disabled, LAYER_RLIMIT_MEMORY)
                          ? (uint64_t)j.memory_mb << 20
                          : 0,
      .after_answer = learn_fd >= 0 ? report_answered : NULL,
  };
  if (!code->used || code->g.n > 0)
    child_fail(1, "Exception", "serve: the job's code is not cached");
  python_run_arm(&c);
  python_run_finish(&c, &lock, &code->g, code->globals, 0);
}

static void spare_discard(struct spare *sp) {
  if (sp->pid)
    syscall(SYS_pidfd_send_signal, sp->pidfd, SIGKILL, NULL, 0);
  if (sp->pidfd >= 0)
    close(sp->pidfd);
  if (sp->sock >= 0)
    close(sp->sock);
  *sp = (struct spare){.pidfd = -1, .sock = -1};
}

static void spares_discard(void) {
  for (size_t i = 0; i < SPARES; i++)
    spare_discard(&spares[i]);
}

static size_t spares_alive(void) {
  size_t n = 0;
  for (size_t i = 0; i < SPARES; i++)
    n += spares[i].pid != 0;
  return n;
}

/* The oldest spare that knows every code cached up to generation gen, or
 * NULL: a newer one may still be preparing. */
static struct spare *spare_knowing(unsigned long gen) {
  struct spare *best = NULL;
  for (size_t i = 0; i < SPARES; i++)
    if (spares[i].pid && spares[i].gen >= gen &&
        (!best || spares[i].born < best->born))
      best = &spares[i];
  return best;
}

/* A new spare, in place of one that predates the newest code or in a free
 * slot; NULL when there is no such slot or it cannot be made (a job then
 * fails, the next one tries again). One killed is reaped by reap(). */
static struct spare *spare_fork(const struct serve_template_setup *s) {
  struct spare *sp = NULL;
  for (size_t i = 0; i < SPARES && !sp; i++)
    if (spares[i].pid && spares[i].gen < cache_gen)
      sp = &spares[i];
  for (size_t i = 0; i < SPARES && !sp; i++)
    if (!spares[i].pid)
      sp = &spares[i];
  if (!sp)
    return NULL;
  spare_discard(sp);
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
    return NULL;
  bool learns = learning && !learner.pid;
  double t0 = now_ms();
  PyOS_BeforeFork();
  unsigned long flags = CLONE_NEWPID | CLONE_PIDFD | SIGCHLD;
  if (own_mountns)
    flags |= CLONE_NEWNS;
  int pidfd = -1;
  pid_t pid = (pid_t)syscall(SYS_clone, flags, NULL, &pidfd, NULL, 0);
  if (pid == 0) {
    PyOS_AfterFork_Child();
    close(sv[0]);
    spare_main(s, sv[1], learns);
  }
  PyOS_AfterFork_Parent();
  mean_add(&clone_ms, now_ms() - t0);
  close(sv[1]);
  if (pid < 0) {
    close(sv[0]);
    return NULL;
  }
  *sp = (struct spare){.pid = pid,
                       .pidfd = pidfd,
                       .sock = sv[0],
                       .gen = cache_gen,
                       .learns = learns,
                       .born = clones++};
  return sp;
}

/* Whether the pool lacks a spare that knows every cached code: never while
 * a learning child runs or spares are failing, and one spare in all is
 * enough while pages are learned. */
static bool spares_short(void) {
  if (learner.pid || spares_failing)
    return false;
  size_t fresh = 0;
  for (size_t i = 0; i < SPARES; i++)
    fresh += spares[i].pid && spares[i].gen == cache_gen;
  return fresh < (learning ? 1 : SPARES);
}

/* One clone per call: the template takes no job while it clones. */
static void spares_fill(const struct serve_template_setup *s) {
  if (spares_short())
    spare_fork(s);
}

/* Hands the job to a spare that knows its code (a new one when none
 * does); the child's pidfd, owned by the caller, or -1. */
static int spawn(const struct serve_template_setup *s,
                 const struct serve_job *j, const char *entry,
                 const struct cached *g, const int *fds) {
  size_t slot = 0;
  while (slot < MAX_CHILDREN && children[slot].pid)
    slot++;
  if (slot == MAX_CHILDREN)
    return -1;
  struct spare *sp = spare_knowing(g->gen);
  if (!sp && !(sp = spare_fork(s)))
    return -1;
  struct spare_job sj = {.slot = (uint32_t)(g - cache),
                         .timeout_ms = j->timeout_ms,
                         .memory_mb = j->memory_mb,
                         .output_bytes = j->output_bytes};
  snprintf(sj.entry, sizeof sj.entry, "%s", entry);
  int pass[2] = {fds[SERVE_FD_OUT], fds[SERVE_FD_REQUEST]};
  /* A spare that died waiting (it could not drop its privileges) has
   * closed its end: the job fails as a child that cannot start. */
  if (fdpass_send(sp->sock, &sj, sizeof sj, pass, 2, 0) < 0) {
    spare_discard(sp);
    return -1;
  }
  children[slot] = (struct child){.pid = sp->pid, .job_fd = fds[SERVE_FD_JOB]};
  if (sp->learns) {
    learner.pid = sp->pid;
    learner.sock = sp->sock;
    sp->sock = -1;
    learners++;
  }
  int pidfd = sp->pidfd;
  sp->pidfd = -1;
  sp->pid = 0;
  spare_discard(sp);
  return pidfd;
}

static void reap(void) {
  for (;;) {
    int status;
    struct rusage ru;
    pid_t pid = wait4(-1, &status, WNOHANG, &ru);
    if (pid <= 0)
      return;
    for (size_t i = 0; i < SPARES; i++)
      if (pid == spares[i].pid) {
        spare_discard(&spares[i]);
        spares_failing = true;
      }
    for (size_t i = 0; i < MAX_CHILDREN; i++) {
      if (children[i].pid != pid)
        continue;
      double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                   (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
      send_reply(children[i].job_fd, SERVE_REPLY_ENDED, status, NULL, cpu, -1);
      close(children[i].job_fd);
      children[i] = (struct child){0};
    }
  }
}

static size_t live_children(void) {
  size_t n = 0;
  for (size_t i = 0; i < MAX_CHILDREN; i++)
    n += children[i].pid != 0;
  return n;
}

/* The learning child answered (a byte) or ended (end of file). Its
 * pages are learned if it answered while no spare shared all of the
 * template's memory. A child cloned before it may still share some of
 * the pages it wrote: they are missed, never added wrongly. The next
 * spare, held back while it ran, is made now. */
static void learner_done(const struct serve_template_setup *s,
                         bool open_channel) {
  char b;
  if (read(learner.sock, &b, 1) == 1 && !spares_alive())
    log_debug("serve template: %ld pages children write", prefault_learn());
  close(learner.sock);
  learner.pid = 0;
  if (learning && learners >= LEARN_CHILDREN) {
    learning = false;
    prefault_close();
  }
  if (open_channel)
    spares_fill(s);
}

/* One job from the server; false when the channel is closed. */
static bool serve_one(const struct serve_template_setup *s) {
  struct serve_job j;
  int fds[SERVE_JOB_FDS];
  size_t nfds;
  ssize_t n = fdpass_recv(CTRL_FD, &j, sizeof j, fds, SERVE_JOB_FDS, &nfds, 0);
  if (n == 0 || (n < 0 && errno != EAGAIN))
    return false;
  if (n < 0)
    return true;
  spares_failing = false;
  if (quiet_from > 0) {
    /* A spell of minutes counts as a long one, not as hundreds. */
    double spell = now_ms() - quiet_from;
    mean_add(&quiet_ms, spell < 4 * clone_ms ? spell : 4 * clone_ms);
    quiet_from = 0;
  }
  if (n != (ssize_t)sizeof j || nfds != SERVE_JOB_FDS ||
      j.code_len > PY_CODE_READ_MAX || j.entry_len > 255)
    die("channel", "malformed job");
  char *code = malloc((size_t)j.code_len + j.entry_len + 2);
  if (!code ||
      read_exact(fds[SERVE_FD_CODE], code, j.code_len + j.entry_len) < 0)
    die("job", "cannot read the code");
  char entry[256];
  memcpy(entry, code + j.code_len, j.entry_len);
  entry[j.entry_len] = '\0';
  code[j.code_len] = '\0';
  char digest[65];
  struct coil_error err = {0};
  struct cached *g = gated(s, code, j.code_len, digest, &err);
  free(code);
  int job_fd = fds[SERVE_FD_JOB];
  bool kept = false;
  if (!g) {
    struct protocol_failure f = {.type = "Exception", .message = err.msg};
    protocol_write_error(fds[SERVE_FD_OUT], &f, NULL, 0);
    send_reply(job_fd, SERVE_REPLY_ENDED, PY_EXIT_COIL << 8, digest, 0, -1);
  } else if (g->g.n > 0) {
    python_write_violation(fds[SERVE_FD_OUT], &g->g);
    send_reply(job_fd, SERVE_REPLY_ENDED, PY_EXIT_GATE << 8, digest, 0, -1);
  } else if (j.op == SERVE_OP_GATE) {
    send_reply(job_fd, SERVE_REPLY_ENDED, 0, digest, 0, -1);
  } else {
    int pidfd = spawn(s, &j, entry, g, fds);
    if (pidfd < 0) {
      struct protocol_failure f = {.type = "Exception",
                                   .message = "serve: cannot start a child"};
      protocol_write_error(fds[SERVE_FD_OUT], &f, NULL, 0);
      send_reply(job_fd, SERVE_REPLY_ENDED, PY_EXIT_COIL << 8, digest, 0, -1);
    } else {
      send_reply(job_fd, SERVE_REPLY_STARTED, 0, digest, 0, pidfd);
      close(pidfd);
      kept = true;
    }
  }
  /* Closed before the next spare is cloned: a copy of the output pipe in
   * the spare would hold back the server's end of file until the spare
   * closes its inherited fds. */
  for (int i = 0; i < SERVE_JOB_FDS; i++)
    if (i != SERVE_FD_JOB || !kept)
      close(fds[i]);
  /* The next job's child, made while this one runs when no other spare
   * is left, unless it would share the pages a learning child is writing;
   * otherwise once a child has ended (SPARES). */
  if (kept && !learner.pid && !spare_knowing(cache_gen))
    spare_fork(s);
  return true;
}

static void serve_template_main(void *arg, int start_conn) {
  const struct serve_template_setup *s = arg;
  struct coil_error err = {0};
  close(start_conn);
  /* The container is built: libmount and the three libraries it brought
   * would be twenty mappings in every child, each one copied by its clone
   * and torn down by its exit. */
  libmount_unload();
  int proc_fd = init_proc_fd();
  if (proc_fd >= 0) {
    learning = prefault_open(proc_fd) == 0;
    close(proc_fd);
  }
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0)
    die("signalfd", strerror(errno));
  /* No lockdown here: Landlock would forbid each child's /tmp mount and
   * seccomp its clone; every child loads stage 2 itself before it reads
   * the request (docs/serve.md, Security). */
  bool audit = layer_on(s->disabled, LAYER_AUDIT);
  if (audit && audit_install(1, true) < 0)
    die("audit hook", "PySys_AddAuditHook failed");
  if (embed_init(s->prefix, &err) < 0)
    die("interpreter", err.msg);
  /* Every helper and codec now, once: no child imports anything. */
  if (guest_preimport(gate_helper_names, gate_n_helper_names, true, &err) < 0)
    die("helpers", err.msg);
  int failed = serve_warm_helpers(gate_helper_names, gate_n_helper_names, &err);
  if (failed < 0)
    log_debug("serve template: helper warm-up: %s", err.msg);
  else
    log_debug("serve template: helper warm-up done, %d steps failed", failed);
  /* Every child would drop the same capabilities from its bounding set,
   * one prctl and credential copy each: drop them here once. */
  if (layer_on(s->disabled, LAYER_CAPS)) {
    if (caps_drop_bounding(&s->caps, &err) < 0)
      die("capabilities", err.msg);
    bounding_dropped = true;
  }
  bool landlock = layer_on(s->disabled, LAYER_LANDLOCK) && landlock_abi() > 0;
  fresh_tmp = layer_on(s->disabled, LAYER_MOUNTNS) && !landlock;
  own_mountns = layer_on(s->disabled, LAYER_MOUNTNS) &&
                !(landlock && layer_on(s->disabled, LAYER_SECCOMP) &&
                  layer_on(s->disabled, LAYER_CAPS));
  if (layer_on(s->disabled, LAYER_SECCOMP) &&
      lockdown_compile(&filters, &err) < 0)
    die("seccomp", err.msg);
  PyObject *mod = PyImport_ImportModule("_sha256");
  sha256_fn = mod ? PyObject_GetAttrString(mod, "sha256") : NULL;
  if (!sha256_fn)
    die("sha256", "cannot import _sha256");
  /* Last, once the interpreter has set its own (SIGINT, SIGPIPE, ...):
   * each child would reset the same sixty-odd dispositions. The mask, with
   * SIGCHLD blocked for the signalfd, stays. */
  if (privileges_default_dispositions(&err) < 0)
    die("signals", err.msg);
  dispositions_default = true;
  log_debug("serve template: ready");
  bool open_channel = true;
  while (open_channel || live_children()) {
    struct pollfd p[3] = {
        {.fd = sfd, .events = POLLIN},
        {.fd = open_channel ? CTRL_FD : -1, .events = POLLIN},
        {.fd = learner.pid ? learner.sock : -1, .events = POLLIN}};
    bool idle = open_channel && !live_children() && spares_short();
    int ready = poll(p, 3, idle ? IDLE_FILL_MS : -1);
    if (ready < 0 && errno != EINTR)
      die("poll", strerror(errno));
    if (ready == 0)
      spares_fill(s);
    if (p[2].revents)
      learner_done(s, open_channel);
    if (p[0].revents) {
      struct signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) > 0)
        ;
      reap();
      if (open_channel && !live_children()) {
        quiet_from = now_ms();
        if (quiet_ms > 2 * clone_ms)
          spares_fill(s);
      }
    }
    if (open_channel && p[1].revents && !(open_channel = serve_one(s)))
      spares_discard();
  }
  _exit(0);
}
