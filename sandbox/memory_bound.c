#include "memory_bound.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "log.h"

#if defined(__SANITIZE_ADDRESS__)
#define MEMORY_BOUND_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEMORY_BOUND_ASAN 1
#endif
#endif

uint64_t memory_bound_of(const struct coil_linux *lnx) {
  const struct coil_resources *r = &lnx->resources;
  if (!lnx->has_resources || !r->has_memory_limit || r->memory_limit <= 0)
    return 0;
  return (uint64_t)r->memory_limit + MEMORY_BOUND_HEADROOM;
}

int memory_bound_apply(uint64_t limit, struct coil_error *err) {
  if (limit == 0)
    return 0;
#ifdef MEMORY_BOUND_ASAN
  (void)err;
  log_debug("python: RLIMIT_DATA of %llu bytes not applied in the ASan build",
            (unsigned long long)limit);
  return 0;
#else
  struct rlimit rl;
  if (getrlimit(RLIMIT_DATA, &rl) < 0)
    return coil_error_sys(err, errno, "getrlimit(RLIMIT_DATA)");
  if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > limit)
    rl.rlim_cur = limit;
  if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > limit)
    rl.rlim_max = limit;
  if (setrlimit(RLIMIT_DATA, &rl) < 0)
    return coil_error_sys(err, errno, "setrlimit(RLIMIT_DATA, %llu)",
                          (unsigned long long)limit);
  return 0;
#endif
}

#ifndef MEMORY_BOUND_ASAN
static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGABRT};
static void (*exhausted_fn)(void);

/* Async-signal-safe: one mmap probe. When it fits, the crash goes on under
 * the default action SA_RESETHAND restored: a fault re-executes and kills.
 * SIGABRT is raised again here, pending until the handler returns, because
 * abort()'s own next step is a sigaction, which lockdown stage 2 kills. (As
 * PID 1 of a pid namespace the sandbox ignores its own SIGABRT, so there
 * that kill is what ends it.) */
static void on_crash(int sig) {
  void *p = mmap(NULL, MEMORY_BOUND_PROBE, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED && errno == ENOMEM)
    exhausted_fn();
  if (p != MAP_FAILED)
    munmap(p, MEMORY_BOUND_PROBE);
  if (sig == SIGABRT)
    raise(SIGABRT);
}
#endif

int memory_bound_watch(uint64_t limit, void (*on_exhausted)(void),
                       struct coil_error *err) {
#ifdef MEMORY_BOUND_ASAN
  (void)limit;
  (void)on_exhausted;
  (void)err;
  return 0;
#else
  if (limit == 0)
    return 0;
  exhausted_fn = on_exhausted;
  struct sigaction sa = {.sa_handler = on_crash, .sa_flags = SA_RESETHAND};
  for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++)
    if (sigaction(crash_signals[i], &sa, NULL) < 0)
      return coil_error_sys(err, errno, "sigaction(%d)", crash_signals[i]);
  return 0;
#endif
}
