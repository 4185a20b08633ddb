#include "memory_bound.h"

#include <errno.h>
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
