/* coil serve: a warm, per-tenant Python sandbox behind a unix socket
 * (docs/serve.md). This file is the listener, the wire protocol and the
 * metrics; serve_pool.c owns tenants, templates and executions. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "cmd.h"
#include "json_tree.h"
#include "json_walk.h"
#include "log.h"
#include "readall.h"
#include "serve_config.h"
#include "serve_pool.h"

#define MAX_CONNECTIONS 1024

static struct serve_config config;
static struct serve_tenant *tenants;
static size_t n_tenants;
static _Atomic int connections;
/* The acceptor pool (acceptor()): the listening socket, the threads
 * waiting in accept. */
#define ACCEPTORS_IDLE_MAX 4
static int listen_fd = -1;
static _Atomic int acceptors_idle;
static _Atomic int active_requests;
static _Atomic bool draining;
static const char *server_bundle; /* the config's, or the default */

/* ---- metrics ----------------------------------------------------------- */

static const char *const outcomes[] = {
    "ok",        "Exception",     "Timeout",       "MemoryLimit",
    "CpuLimit",  "OutputLimit",   "GateViolation", "RequestError",
    "Signal",    "ProtocolError", "UnknownTenant", "UnknownHandler",
    "Forbidden", "Busy",          "Unavailable"};
#define N_OUTCOMES (sizeof outcomes / sizeof outcomes[0])
static const double buckets_ms[] = {0.5, 1,   2,   5,    10,   25,   50,
                                    100, 250, 500, 1000, 2500, 5000, 10000};
#define N_BUCKETS (sizeof buckets_ms / sizeof buckets_ms[0])

struct tenant_metrics {
  unsigned long long count[N_OUTCOMES];
  unsigned long long bucket[N_BUCKETS + 1]; /* last: +Inf */
  double sum_ms;
  unsigned long long observed;
};
static struct tenant_metrics *metrics;
static pthread_mutex_t metrics_mu = PTHREAD_MUTEX_INITIALIZER;

static void observe(size_t tenant, const char *type, double ms) {
  size_t o = 0;
  for (size_t i = 1; type && i < N_OUTCOMES; i++)
    if (strcmp(outcomes[i], type) == 0)
      o = i;
  if (type && o == 0)
    o = 1;
  pthread_mutex_lock(&metrics_mu);
  struct tenant_metrics *m = &metrics[tenant];
  m->count[o]++;
  size_t b = 0;
  while (b < N_BUCKETS && ms > buckets_ms[b])
    b++;
  m->bucket[b]++;
  m->sum_ms += ms;
  m->observed++;
  pthread_mutex_unlock(&metrics_mu);
}

static char *metrics_text(size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  if (!f)
    return NULL;
  pthread_mutex_lock(&metrics_mu);
  fputs("# HELP coil_serve_requests_total Executions by tenant and outcome.\n"
        "# TYPE coil_serve_requests_total counter\n",
        f);
  for (size_t t = 0; t < n_tenants; t++)
    for (size_t o = 0; o < N_OUTCOMES; o++)
      fprintf(f,
              "coil_serve_requests_total{tenant=\"%s\",outcome=\"%s\"} %llu\n",
              tenants[t].cfg->name, outcomes[o], metrics[t].count[o]);
  fputs("# HELP coil_serve_latency_seconds Call latency inside the server.\n"
        "# TYPE coil_serve_latency_seconds histogram\n",
        f);
  for (size_t t = 0; t < n_tenants; t++) {
    unsigned long long cum = 0;
    const char *name = tenants[t].cfg->name;
    for (size_t b = 0; b < N_BUCKETS; b++) {
      cum += metrics[t].bucket[b];
      fprintf(
          f,
          "coil_serve_latency_seconds_bucket{tenant=\"%s\",le=\"%g\"} %llu\n",
          name, buckets_ms[b] / 1000, cum);
    }
    cum += metrics[t].bucket[N_BUCKETS];
    fprintf(
        f,
        "coil_serve_latency_seconds_bucket{tenant=\"%s\",le=\"+Inf\"} %llu\n"
        "coil_serve_latency_seconds_sum{tenant=\"%s\"} %.6f\n"
        "coil_serve_latency_seconds_count{tenant=\"%s\"} %llu\n",
        name, cum, name, metrics[t].sum_ms / 1000, name, metrics[t].observed);
  }
  fputs("# HELP coil_serve_cpu_idle Whether the tenant's cgroup is in the "
        "CPU's idle class.\n"
        "# TYPE coil_serve_cpu_idle gauge\n",
        f);
  unsigned long long demotions;
  for (size_t t = 0; t < n_tenants; t++)
    fprintf(f, "coil_serve_cpu_idle{tenant=\"%s\"} %d\n",
            tenants[t].cfg->name,
            serve_tenant_cpu_idle(&tenants[t], &demotions));
  fputs("# HELP coil_serve_demotions_total Times the tenant was demoted to "
        "the CPU's idle class.\n"
        "# TYPE coil_serve_demotions_total counter\n",
        f);
  for (size_t t = 0; t < n_tenants; t++) {
    serve_tenant_cpu_idle(&tenants[t], &demotions);
    fprintf(f, "coil_serve_demotions_total{tenant=\"%s\"} %llu\n",
            tenants[t].cfg->name, demotions);
  }
  pthread_mutex_unlock(&metrics_mu);
  fclose(f);
  return buf;
}

/* ---- the raw text of one member --------------------------------------- */

/* The end of the JSON value starting at p (the document is valid JSON). */
static const char *skip_value(const char *p, const char *end) {
  if (*p == '"') {
    for (p++; p < end && *p != '"'; p++)
      if (*p == '\\')
        p++;
    return p + 1;
  }
  if (*p == '{' || *p == '[') {
    int depth = 0;
    for (; p < end; p++) {
      if (*p == '"') {
        p = skip_value(p, end) - 1;
      } else if (*p == '{' || *p == '[') {
        depth++;
      } else if (*p == '}' || *p == ']') {
        if (--depth == 0)
          return p + 1;
      }
    }
    return end;
  }
  while (p < end && !strchr(",}] \t\r\n", *p))
    p++;
  return p;
}

static const char *skip_ws(const char *p, const char *end) {
  while (p < end && strchr(" \t\r\n", *p))
    p++;
  return p;
}

/* The exact text of top-level member key, so a request reaches the handler
 * byte for byte as sent (the same strict parser as coil py reads it). */
static bool member_text(const char *doc, size_t len, const char *key,
                        const char **val, size_t *vlen) {
  const char *end = doc + len, *p = skip_ws(doc, end);
  if (p >= end || *p != '{')
    return false;
  p = skip_ws(p + 1, end);
  size_t klen = strlen(key);
  while (p < end && *p == '"') {
    const char *kend = skip_value(p, end);
    bool match =
        (size_t)(kend - p) == klen + 2 && memcmp(p + 1, key, klen) == 0;
    p = skip_ws(kend, end);
    p = skip_ws(p + 1, end); /* ':' */
    const char *vend = skip_value(p, end);
    if (match) {
      *val = p;
      *vlen = (size_t)(vend - p);
      return true;
    }
    p = skip_ws(vend, end);
    if (p < end && *p == ',')
      p = skip_ws(p + 1, end);
  }
  return false;
}

/* ---- requests ---------------------------------------------------------- */

struct conn {
  int fd;
  struct ucred peer;
};

static char *ok_text(const char *text) { return strdup(text); }

static struct serve_tenant *find_tenant(yajl_val req, size_t *index,
                                        char **answer) {
  yajl_val v = jw_get(req, "tenant");
  if (!v && n_tenants == 1) {
    *index = 0;
    return &tenants[0];
  }
  if (!v || !YAJL_IS_STRING(v)) {
    *answer = serve_error_envelope(
        "UnknownTenant", v ? "tenant: expected a string"
                           : "tenant: required when serving several tenants");
    return NULL;
  }
  for (size_t i = 0; i < n_tenants; i++)
    if (strcmp(tenants[i].cfg->name, v->u.string) == 0) {
      *index = i;
      return &tenants[i];
    }
  char msg[128];
  snprintf(msg, sizeof msg, "no tenant named \"%.64s\"", v->u.string);
  for (char *q = msg; *q; q++)
    if ((unsigned char)*q < 0x20)
      *q = '?';
  *answer = serve_error_envelope("UnknownTenant", msg);
  return NULL;
}

static bool peer_allowed(const struct serve_tenant_config *c,
                         const struct ucred *p) {
  for (size_t i = 0; i < c->n_allow_uids; i++)
    if (c->allow_uids[i] == p->uid)
      return true;
  for (size_t i = 0; i < c->n_allow_gids; i++)
    if (c->allow_gids[i] == p->gid)
      return true;
  return false;
}

static const char *string_member(yajl_val req, const char *key, bool *bad) {
  yajl_val v = jw_get(req, key);
  if (!v)
    return NULL;
  if (!YAJL_IS_STRING(v)) {
    *bad = true;
    return NULL;
  }
  return v->u.string;
}

/* Each limit the request asks for, clamped to the tenant's maximum. */
static const char *read_limits(yajl_val req, const struct serve_limits *tl,
                               struct serve_limits_req *out) {
  *out = (struct serve_limits_req){tl->timeout_ms, tl->memory_mb,
                                   tl->output_bytes};
  yajl_val l = jw_get(req, "limits");
  if (!l)
    return NULL;
  if (!YAJL_IS_OBJECT(l))
    return "limits: expected an object";
  struct {
    const char *key;
    int *dst;
    int max;
  } f[] = {{"timeout_ms", &out->timeout_ms, tl->max_timeout_ms},
           {"memory_mb", &out->memory_mb, tl->max_memory_mb},
           {"output_bytes", &out->output_bytes, tl->max_output_bytes}};
  for (size_t i = 0; i < 3; i++) {
    yajl_val v = jw_get(l, f[i].key);
    if (!v)
      continue;
    if (!YAJL_IS_INTEGER(v) || YAJL_GET_INTEGER(v) < 1)
      return "limits: timeout_ms, memory_mb and output_bytes must be positive "
             "integers";
    long long n = YAJL_GET_INTEGER(v);
    *f[i].dst = n > f[i].max ? f[i].max : (int)n;
  }
  return NULL;
}

static struct serve_handler *find_handler(struct serve_tenant *t,
                                          const char *name) {
  for (size_t i = 0; i < t->n_handlers; i++)
    if (strcmp(t->handlers[i].name, name) == 0)
      return &t->handlers[i];
  return NULL;
}

/* The tenant a request names, if this connection's peer may use it; else
 * NULL with the error's type and envelope. */
static struct serve_tenant *tenant_for(const struct conn *c, yajl_val req,
                                       size_t *tindex, const char **type,
                                       char **answer) {
  struct serve_tenant *t = find_tenant(req, tindex, answer);
  if (!t) {
    *type = "UnknownTenant";
    return NULL;
  }
  if (!peer_allowed(t->cfg, &c->peer)) {
    *type = "Forbidden";
    *answer =
        serve_error_envelope("Forbidden", "this peer may not use the tenant");
    return NULL;
  }
  return t;
}

static char *op_call(const struct conn *c, yajl_val req, const char *doc,
                     size_t len, size_t *tindex, const char **type) {
  char *answer = NULL;
  struct serve_tenant *t = tenant_for(c, req, tindex, type, &answer);
  if (!t)
    return answer;
  bool bad = false;
  const char *handler = string_member(req, "handler", &bad);
  const char *code = string_member(req, "code", &bad);
  const char *entry = string_member(req, "entry", &bad);
  if (bad || (handler != NULL) == (code != NULL))
    return *type = "ProtocolError",
           serve_error_envelope("ProtocolError",
                                "call: give exactly one of \"handler\" or "
                                "\"code\" (strings), and \"entry\" as a "
                                "string");
  struct serve_limits_req lim;
  const char *why = read_limits(req, &t->cfg->limits, &lim);
  if (why)
    return *type = "ProtocolError", serve_error_envelope("ProtocolError", why);
  cleanup_free char *code_copy = NULL;
  size_t code_len = 0;
  if (handler) {
    pthread_mutex_lock(&t->mu);
    struct serve_handler *h = find_handler(t, handler);
    if (h) {
      code_copy = malloc(h->code_len + 1);
      if (code_copy) {
        memcpy(code_copy, h->code, h->code_len + 1);
        code_len = h->code_len;
      }
    }
    pthread_mutex_unlock(&t->mu);
    if (!h)
      return *type = "UnknownHandler",
             serve_error_envelope("UnknownHandler",
                                  "no handler of that name is registered");
    code = code_copy;
  } else {
    code_len = strlen(code);
  }
  const char *rq = "null";
  size_t rq_len = 4;
  if (!member_text(doc, len, "request", &rq, &rq_len)) {
    rq = "null";
    rq_len = 4;
  }
  struct serve_outcome out;
  serve_run(t, SERVE_JOB_CALL, code ? code : "", code_len,
            entry ? entry : "handle", rq, rq_len, &lim, &out);
  *type = out.type;
  return out.envelope;
}

static char *op_register(const struct conn *c, yajl_val req, size_t *tindex,
                         const char **type) {
  char *answer = NULL;
  struct serve_tenant *t = tenant_for(c, req, tindex, type, &answer);
  if (!t)
    return answer;
  bool bad = false;
  const char *name = string_member(req, "handler", &bad);
  const char *code = string_member(req, "code", &bad);
  if (bad || !name || !code || !*name || strlen(name) > 128)
    return *type = "ProtocolError",
           serve_error_envelope("ProtocolError",
                                "register: \"handler\" (1 to 128 characters) "
                                "and \"code\" must be strings");
  struct serve_limits_req lim = {t->cfg->limits.timeout_ms,
                                 t->cfg->limits.memory_mb,
                                 t->cfg->limits.output_bytes};
  struct serve_outcome out;
  size_t code_len = strlen(code);
  serve_run(t, SERVE_JOB_GATE, code, code_len, "handle", "null", 4, &lim, &out);
  *type = out.type;
  if (out.type)
    return out.envelope;
  free(out.envelope);
  struct serve_handler h = {
      .name = strdup(name), .code = strdup(code), .code_len = code_len};
  memcpy(h.digest, out.digest, sizeof h.digest);
  if (!h.name || !h.code) {
    free(h.name);
    free(h.code);
    return *type = "Unavailable",
           serve_error_envelope("Unavailable", "out of memory");
  }
  pthread_mutex_lock(&t->mu);
  struct serve_handler *old = find_handler(t, name);
  if (old) {
    free(old->name);
    free(old->code);
    *old = h;
  } else {
    struct serve_handler *n =
        realloc(t->handlers, (t->n_handlers + 1) * sizeof *n);
    if (n) {
      t->handlers = n;
      t->handlers[t->n_handlers++] = h;
    } else {
      free(h.name);
      free(h.code);
    }
  }
  pthread_mutex_unlock(&t->mu);
  char *buf = NULL;
  size_t blen;
  FILE *f = open_memstream(&buf, &blen);
  if (f) {
    fputs("{\"ok\":true,\"handler\":", f);
    /* the name came as valid JSON; quote it the same way errors are */
    char *q = serve_error_envelope("", name);
    const char *m = q ? strstr(q, "\"message\":") : NULL;
    if (m) {
      m += strlen("\"message\":");
      fwrite(m, 1, strlen(m) - 2, f);
    } else {
      fputs("\"\"", f);
    }
    free(q);
    fprintf(f, ",\"digest\":\"%s\"}", h.digest);
    fclose(f);
  }
  return buf;
}

static char *op_remove(const struct conn *c, yajl_val req, size_t *tindex,
                       const char **type) {
  char *answer = NULL;
  struct serve_tenant *t = tenant_for(c, req, tindex, type, &answer);
  if (!t)
    return answer;
  bool bad = false;
  const char *name = string_member(req, "handler", &bad);
  if (bad || !name)
    return *type = "ProtocolError",
           serve_error_envelope("ProtocolError",
                                "remove: \"handler\" must be a string");
  pthread_mutex_lock(&t->mu);
  struct serve_handler *h = find_handler(t, name);
  if (h) {
    free(h->name);
    free(h->code);
    *h = t->handlers[--t->n_handlers];
  }
  pthread_mutex_unlock(&t->mu);
  if (!h)
    return *type = "UnknownHandler",
           serve_error_envelope("UnknownHandler",
                                "no handler of that name is registered");
  *type = NULL;
  return ok_text("{\"ok\":true}");
}

static double elapsed_ms(const struct timespec *t0) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - t0->tv_sec) * 1e3 +
         (double)(now.tv_nsec - t0->tv_nsec) / 1e6;
}

/* One frame in, one frame out; false closes the connection. */
static bool serve_frame(struct conn *c) {
  unsigned char hdr[4];
  if (read_exact(c->fd, hdr, 4) < 0)
    return false;
  uint32_t n = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
               (uint32_t)hdr[2] << 8 | hdr[3];
  char msg[160];
  if (n > (uint32_t)config.max_frame_bytes) {
    snprintf(msg, sizeof msg, "frame of %u bytes is over the limit of %d", n,
             config.max_frame_bytes);
    cleanup_free char *e = serve_error_envelope("ProtocolError", msg);
    if (e)
      write_frame(c->fd, e, strlen(e));
    return false;
  }
  cleanup_free char *doc = malloc((size_t)n + 1);
  if (!doc || read_exact(c->fd, doc, n) < 0)
    return false;
  doc[n] = '\0';
  atomic_fetch_add(&active_requests, 1);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  char yerr[256] = "";
  yajl_val req = memchr(doc, '\0', n)
                     ? NULL
                     : json_tree_parse(doc, n, yerr, sizeof yerr, NULL);
  char *answer = NULL;
  const char *type = NULL;
  size_t tindex = SIZE_MAX;
  bool keep = true;
  yajl_val op = req && YAJL_IS_OBJECT(req) ? jw_get(req, "op") : NULL;
  if (!req || !YAJL_IS_OBJECT(req)) {
    answer = serve_error_envelope("ProtocolError",
                                  "the frame is not one JSON object");
    type = "ProtocolError";
    keep = false;
  } else if (!op || !YAJL_IS_STRING(op)) {
    answer = serve_error_envelope("ProtocolError", "op: expected a string");
    type = "ProtocolError";
  } else if (strcmp(op->u.string, "ping") == 0) {
    answer = ok_text("{\"ok\":true}");
  } else if (draining) {
    answer = serve_error_envelope("Unavailable", "the server is shutting down");
    type = "Unavailable";
  } else if (strcmp(op->u.string, "call") == 0) {
    answer = op_call(c, req, doc, n, &tindex, &type);
  } else if (strcmp(op->u.string, "register") == 0) {
    answer = op_register(c, req, &tindex, &type);
  } else if (strcmp(op->u.string, "remove") == 0) {
    answer = op_remove(c, req, &tindex, &type);
  } else {
    answer = serve_error_envelope("ProtocolError",
                                  "op: expected call, register, remove or "
                                  "ping");
    type = "ProtocolError";
  }
  if (req)
    yajl_tree_free(req);
  double ms = elapsed_ms(&t0);
  if (tindex != SIZE_MAX) {
    observe(tindex, type, ms);
    if (type)
      log_warn("serve: tenant %s: %s (%.1f ms)", tenants[tindex].cfg->name,
               type, ms);
  }
  /* Any ProtocolError ends the connection: the client's framing or
   * requests cannot be trusted to be in step any more. */
  if (type && strcmp(type, "ProtocolError") == 0)
    keep = false;
  bool ok = answer && write_frame(c->fd, answer, strlen(answer)) == 0;
  free(answer);
  atomic_fetch_sub(&active_requests, 1);
  return ok && keep;
}

static bool spawn_thread(void *(*fn)(void *), void *arg) {
  pthread_t th;
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&at, 256 << 10);
  bool ok = pthread_create(&th, &at, fn, arg) == 0;
  pthread_attr_destroy(&at);
  return ok;
}

/* One accepted connection, served until it closes; refused over the
 * connection cap. */
static void serve_connection(int fd) {
  struct conn c = {.fd = fd};
  socklen_t sl = sizeof c.peer;
  if (atomic_fetch_add(&connections, 1) < MAX_CONNECTIONS &&
      getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c.peer, &sl) == 0)
    while (serve_frame(&c))
      ;
  close(fd);
  atomic_fetch_sub(&connections, 1);
}

/* Connections are served by a pool of threads that each wait in accept(2)
 * on the socket, so a new connection is read by the thread the kernel
 * wakes, with no thread to start and no hand-off on its way. The pool
 * keeps a thread waiting (one that takes a connection starts another when
 * it was the last) and at most ACCEPTORS_IDLE_MAX. */
static void *acceptor(void *arg);

static bool start_acceptor(void) {
  atomic_fetch_add(&acceptors_idle, 1);
  if (spawn_thread(acceptor, NULL))
    return true;
  atomic_fetch_sub(&acceptors_idle, 1);
  return false;
}

static void *acceptor(void *arg) {
  (void)arg;
  for (;;) {
    int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
      if (atomic_load(&draining))
        break;
      /* Out of fds or memory for a moment: the backlog waits. */
      if (errno != EINTR && errno != ECONNABORTED)
        usleep(10000);
      continue;
    }
    if (atomic_fetch_sub(&acceptors_idle, 1) == 1)
      start_acceptor();
    serve_connection(fd);
    if (atomic_fetch_add(&acceptors_idle, 1) >= ACCEPTORS_IDLE_MAX) {
      atomic_fetch_sub(&acceptors_idle, 1);
      return NULL;
    }
  }
  atomic_fetch_sub(&acceptors_idle, 1);
  return NULL;
}

static void *metrics_connection(void *arg) {
  int fd = (int)(intptr_t)arg;
  /* Any request (an HTTP GET, or nothing) gets the text. */
  char ignored[1024];
  struct pollfd p = {.fd = fd, .events = POLLIN};
  if (poll(&p, 1, 1000) > 0) {
    ssize_t r = read(fd, ignored, sizeof ignored);
    (void)r;
  }
  size_t len = 0;
  cleanup_free char *text = metrics_text(&len);
  if (text) {
    dprintf(fd,
            "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
            "Content-Length: %zu\r\n\r\n",
            len);
    ssize_t w = write(fd, text, len);
    (void)w;
  }
  close(fd);
  return NULL;
}

/* ---- listening --------------------------------------------------------- */

static int listen_unix(const char *path, int mode, struct coil_error *err) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof a.sun_path)
    return coil_error_set(err, ENAMETOOLONG, "--socket: %s: path too long",
                          path);
  strcpy(a.sun_path, path);
  struct stat st;
  if (lstat(path, &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return coil_error_set(err, EEXIST,
                            "--socket: %s exists and is not a socket", path);
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool live =
        probe >= 0 && connect(probe, (struct sockaddr *)&a, sizeof a) == 0;
    if (probe >= 0)
      close(probe);
    if (live)
      return coil_error_set(err, EADDRINUSE,
                            "--socket: %s: another server is listening", path);
    unlink(path);
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return coil_error_sys(err, errno, "--socket: socket");
  /* Bound and listening under a temporary name, with no access for others
   * until chmod sets mode, then renamed: a client that sees the path can
   * connect. */
  struct sockaddr_un tmp = a;
  if (snprintf(tmp.sun_path, sizeof tmp.sun_path, "%s.%d", path,
               (int)getpid()) >= (int)sizeof tmp.sun_path) {
    close(fd);
    return coil_error_set(err, ENAMETOOLONG, "--socket: %s: path too long",
                          path);
  }
  unlink(tmp.sun_path);
  mode_t old = umask(0177);
  int r = bind(fd, (struct sockaddr *)&tmp, sizeof tmp);
  umask(old);
  if (r < 0 || chmod(tmp.sun_path, (mode_t)mode) < 0 || listen(fd, 128) < 0 ||
      rename(tmp.sun_path, path) < 0) {
    int e = errno;
    close(fd);
    if (r == 0)
      unlink(tmp.sun_path);
    return coil_error_sys(err, e, "--socket: %s", path);
  }
  return fd;
}

/* PATH (a unix socket) or ADDR:PORT on loopback. */
static int listen_metrics(const char *spec, struct coil_error *err) {
  const char *colon = strrchr(spec, ':');
  if (spec[0] == '/' || !colon)
    return listen_unix(spec, 0600, err);
  char host[64];
  size_t hl = (size_t)(colon - spec);
  if (hl >= sizeof host)
    return coil_error_set(err, EINVAL, "--metrics: bad address %s", spec);
  memcpy(host, spec, hl);
  host[hl] = '\0';
  struct sockaddr_in a = {.sin_family = AF_INET};
  char *end;
  long port = strtol(colon + 1, &end, 10);
  if (inet_pton(AF_INET, host, &a.sin_addr) != 1 || *end || port < 1 ||
      port > 65535)
    return coil_error_set(err, EINVAL,
                          "--metrics: expected PATH or ADDR:PORT, "
                          "got \"%s\"",
                          spec);
  if ((ntohl(a.sin_addr.s_addr) >> 24) != 127)
    return coil_error_set(err, EINVAL,
                          "--metrics: %s is not a loopback address", host);
  a.sin_port = htons((uint16_t)port);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd < 0 ||
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
      bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 16) < 0) {
    int e = errno;
    if (fd >= 0)
      close(fd);
    return coil_error_sys(err, e, "--metrics: %s", spec);
  }
  return fd;
}

/* SIGHUP: the limits, peers and recycling of tenants that keep their name
 * and ids take effect, and their templates are replaced. */
static void reload(const char *path) {
  struct serve_config fresh;
  struct coil_error err = {0};
  if (serve_config_load(path, &fresh, &err) < 0) {
    log_error("serve: reload: %s (keeping the running configuration)", err.msg);
    return;
  }
  for (size_t i = 0; i < n_tenants; i++) {
    struct serve_tenant_config *old = tenants[i].cfg;
    for (size_t j = 0; j < fresh.n_tenants; j++) {
      struct serve_tenant_config *nw = &fresh.tenants[j];
      if (strcmp(nw->name, old->name) != 0)
        continue;
      pthread_mutex_lock(&tenants[i].mu);
      /* Swap the per-tenant values; the old ones are freed with fresh. */
      struct serve_tenant_config tmp = *old;
      *old = *nw;
      *nw = tmp;
      tenants[i].bundle = old->bundle ? old->bundle : server_bundle;
      /* The in-flight cap may have grown. */
      pthread_cond_broadcast(&tenants[i].slot_cv);
      pthread_mutex_unlock(&tenants[i].mu);
      serve_tenant_recycle(&tenants[i]);
    }
  }
  serve_config_free(&fresh);
  log_info("serve: configuration reloaded");
}

int cmd_serve(const struct global_opts *g, int argc, char **argv) {
  static const struct option opts[] = {
      {"socket", required_argument, NULL, 's'},
      {"config", required_argument, NULL, 'c'},
      {"metrics", required_argument, NULL, 'm'},
      {NULL, 0, NULL, 0},
  };
  const char *sock_path = NULL, *config_path = NULL, *metrics_spec = NULL;
  optind = 1;
  opterr = 0;
  int ch;
  while ((ch = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
    switch (ch) {
    case 's':
      sock_path = optarg;
      break;
    case 'c':
      config_path = optarg;
      break;
    case 'm':
      metrics_spec = optarg;
      break;
    default:
      return cmd_usage_error("serve", "unknown or incomplete option \"%s\"",
                             argv[optind - 1]);
    }
  }
  if (!sock_path || !config_path || optind != argc)
    return cmd_usage_error("serve", "expected --socket PATH --config FILE");
  struct coil_error err = {0};
  if (serve_config_load(config_path, &config, &err) < 0) {
    log_error("serve: %s", err.msg);
    return EXIT_ERR;
  }
  static char bundle_buf[PATH_MAX];
  server_bundle = config.bundle
                      ? config.bundle
                      : cmd_default_bundle(bundle_buf, sizeof bundle_buf);
  n_tenants = config.n_tenants;
  tenants = calloc(n_tenants, sizeof *tenants);
  metrics = calloc(n_tenants, sizeof *metrics);
  if (!tenants || !metrics) {
    log_error("serve: out of memory");
    return EXIT_ERR;
  }
  for (size_t i = 0; i < n_tenants; i++) {
    tenants[i].cfg = &config.tenants[i];
    tenants[i].bundle =
        config.tenants[i].bundle ? config.tenants[i].bundle : server_bundle;
  }
  /* Signals arrive on a signalfd of the main thread: every thread inherits
   * the mask set here. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  signal(SIGPIPE, SIG_IGN);
  if (serve_pool_init(g->root, &err) < 0) {
    log_error("%s", err.msg);
    return EXIT_ERR;
  }
  sigprocmask(SIG_BLOCK, &set, NULL);
  int sfd = signalfd(-1, &set, SFD_CLOEXEC);
  int lfd = listen_unix(sock_path, config.socket_mode, &err);
  int mfd = lfd >= 0 && metrics_spec ? listen_metrics(metrics_spec, &err) : -1;
  if (sfd < 0 || lfd < 0 || (metrics_spec && mfd < 0)) {
    log_error("serve: %s", err.msg[0] ? err.msg : strerror(errno));
    if (lfd >= 0) {
      close(lfd);
      unlink(sock_path);
    }
    serve_pool_finish();
    return EXIT_ERR;
  }
  for (size_t i = 0; i < n_tenants; i++)
    if (serve_tenant_start(&tenants[i], &err) < 0) {
      log_error("%s", err.msg);
      return EXIT_ERR;
    }
  log_info("serve: listening on %s with %zu tenant(s)", sock_path, n_tenants);
  listen_fd = lfd;
  /* Not the idle count: a connection already waiting may have taken the
   * first thread by now. */
  if (!start_acceptor()) {
    log_error("serve: cannot start a thread to accept connections");
    return EXIT_ERR;
  }
  for (;;) {
    struct pollfd p[2] = {{.fd = sfd, .events = POLLIN},
                          {.fd = mfd, .events = POLLIN}};
    if (poll(p, 2, -1) < 0 && errno != EINTR)
      break;
    if (p[0].revents) {
      struct signalfd_siginfo si;
      if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGHUP) {
          reload(config_path);
          continue;
        }
        break;
      }
    }
    if (p[1].revents) {
      int fd = accept4(mfd, NULL, NULL, SOCK_CLOEXEC);
      if (fd >= 0 && !spawn_thread(metrics_connection, (void *)(intptr_t)fd))
        close(fd);
    }
  }
  /* Graceful: no new connections, requests in flight finish (new ones on
   * open connections get Unavailable), then the templates go. The
   * socket is shut down, not closed, which wakes every acceptor and keeps
   * its number from being reused under one still on its way to accept. */
  log_info("serve: shutting down");
  draining = true;
  shutdown(lfd, SHUT_RDWR);
  unlink(sock_path);
  if (mfd >= 0) {
    close(mfd);
    if (metrics_spec[0] == '/')
      unlink(metrics_spec);
  }
  int max_wait_ms = 0;
  for (size_t i = 0; i < n_tenants; i++)
    if (tenants[i].cfg->limits.max_timeout_ms > max_wait_ms)
      max_wait_ms = tenants[i].cfg->limits.max_timeout_ms;
  max_wait_ms += 3000;
  for (int waited = 0;
       atomic_load(&active_requests) > 0 && waited < max_wait_ms; waited += 10)
    usleep(10000);
  for (size_t i = 0; i < n_tenants; i++)
    serve_tenant_stop(&tenants[i]);
  serve_pool_finish();
  return EXIT_OK;
}
