/* memory_bound: the RLIMIT_DATA derived from the cgroup's memory setting,
 * applied for real in forked children, and the crash watch that turns a
 * crash with the bound used up into the MemoryLimit exit. The ASan build
 * compiles both out (memory_bound.h): there it checks that they leave the
 * process alone. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "memory_bound.h"
#include "tap.h"
#include "testutil.h"

#if defined(__SANITIZE_ADDRESS__)
#define ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN 1
#endif
#endif

#define MIB (1LL << 20)
#define EXHAUSTED 42

static void test_derived(void) {
  struct coil_linux l = {0};
  ok(memory_bound_of(&l) == 0, "no linux.resources: no bound");
  l.has_resources = true;
  ok(memory_bound_of(&l) == 0, "no memory limit: no bound");
  l.resources.has_memory_limit = true;
  l.resources.memory_limit = -1;
  ok(memory_bound_of(&l) == 0, "memory limit -1 (max): no bound");
  l.resources.memory_limit = 256 * MIB;
  ok(memory_bound_of(&l) == (uint64_t)(256 * MIB + MEMORY_BOUND_HEADROOM),
     "256 MiB: 256 MiB plus the headroom");
  l.has_resources = false;
  ok(memory_bound_of(&l) == 0, "resources switched off: no bound");
}

struct apply_case {
  rlim_t before; /* RLIMIT_DATA set first; RLIM_INFINITY: left alone */
  uint64_t limit;
};

static int child_apply(const void *arg, char *out, size_t len) {
  const struct apply_case *c = arg;
  if (c->before != RLIM_INFINITY) {
    struct rlimit rl = {c->before, c->before};
    if (setrlimit(RLIMIT_DATA, &rl) < 0)
      return 2;
  }
  struct coil_error err = {0};
  if (memory_bound_apply(c->limit, &err) < 0) {
    snprintf(out, len, "%s", err.msg);
    return 1;
  }
  struct rlimit rl;
  getrlimit(RLIMIT_DATA, &rl);
  snprintf(out, len, "%llu %llu", (unsigned long long)rl.rlim_cur,
           (unsigned long long)rl.rlim_max);
  return 0;
}

static void test_apply(void) {
  char seen[256], want[64];
  struct apply_case c = {RLIM_INFINITY, 0};
  int st = run_child(child_apply, &c, seen, sizeof seen);
  snprintf(want, sizeof want, "%llu %llu", (unsigned long long)RLIM_INFINITY,
           (unsigned long long)RLIM_INFINITY);
  ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "limit 0 applies (%s)", seen);
  is_str(seen, want, "limit 0 leaves RLIMIT_DATA unlimited");

  c = (struct apply_case){RLIM_INFINITY, 300 * MIB};
  st = run_child(child_apply, &c, seen, sizeof seen);
#ifdef ASAN
  is_str(seen, want, "ASan build: RLIMIT_DATA left unlimited");
#else
  snprintf(want, sizeof want, "%llu %llu", 300 * MIB, 300 * MIB);
  is_str(seen, want, "300 MiB: soft and hard limit set");
#endif

  c = (struct apply_case){100 * MIB, 300 * MIB};
  st = run_child(child_apply, &c, seen, sizeof seen);
  snprintf(want, sizeof want, "%llu %llu", 100 * MIB, 100 * MIB);
  ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a lower limit stays (%s)", seen);
  is_str(seen, want, "a lower RLIMIT_DATA the bundle set is never raised");
}

static void exhausted(void) { syscall(SYS_exit_group, EXHAUSTED); }

enum crash { CRASH_FAULT, CRASH_ABORT };

struct watch_case {
  bool fill; /* use the bound up first */
  enum crash how;
};

static int child_watch(const void *arg, char *out, size_t len) {
  const struct watch_case *c = arg;
  struct coil_error err = {0};
  if (memory_bound_apply(64 * MIB, &err) < 0 ||
      memory_bound_watch(64 * MIB, exhausted, &err) < 0) {
    snprintf(out, len, "%s", err.msg);
    return 1;
  }
  /* volatile: the compiler may drop a malloc whose result is unused */
  static void *volatile last;
  if (c->fill)
    for (size_t n = 0; n < 1024 && (last = malloc(1 << 20)); n++)
      ;
  if (c->how == CRASH_ABORT)
    abort();
  *(volatile char *)(uintptr_t)0 = 1;
  return 0;
}

static void test_watch(void) {
#ifdef ASAN
  char seen[256];
  struct coil_error err = {0};
  struct sigaction before, after;
  sigaction(SIGSEGV, NULL, &before);
  ok(memory_bound_watch(64 * MIB, exhausted, &err) == 0 &&
         sigaction(SIGSEGV, NULL, &after) == 0 &&
         after.sa_handler == before.sa_handler,
     "ASan build: the sanitizer keeps its own SIGSEGV handler");
  (void)seen;
  (void)child_watch;
#else
  char seen[256];
  struct watch_case c = {true, CRASH_FAULT};
  int st = run_child(child_watch, &c, seen, sizeof seen);
  ok(WIFEXITED(st) && WEXITSTATUS(st) == EXHAUSTED,
     "a fault with the bound used up is memory exhaustion (status %#x %s)", st,
     seen);
  c = (struct watch_case){true, CRASH_ABORT};
  st = run_child(child_watch, &c, seen, sizeof seen);
  ok(WIFEXITED(st) && WEXITSTATUS(st) == EXHAUSTED,
     "an abort with the bound used up is memory exhaustion (status %#x)", st);
  c = (struct watch_case){false, CRASH_FAULT};
  st = run_child(child_watch, &c, seen, sizeof seen);
  ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV,
     "a fault with memory to spare stays a SIGSEGV (status %#x)", st);
  c = (struct watch_case){false, CRASH_ABORT};
  st = run_child(child_watch, &c, seen, sizeof seen);
  ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
     "an abort with memory to spare stays a SIGABRT (status %#x)", st);
#endif
}

int main(void) {
  test_derived();
  test_apply();
  test_watch();
  return tap_done();
}
