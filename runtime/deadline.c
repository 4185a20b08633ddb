#include "deadline.h"

#include <limits.h>
#include <time.h>

long long deadline_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

long long deadline_after_ms(long long now_ms, long long ms) {
  if (ms <= 0)
    return DEADLINE_NONE;
  if (now_ms > LLONG_MAX - ms)
    return LLONG_MAX;
  return now_ms + ms;
}

int deadline_slice_ms(long long deadline, long long now_ms, int cap_ms) {
  if (deadline < 0)
    return cap_ms < 0 ? -1 : cap_ms;
  long long left = deadline - now_ms;
  if (left <= 0)
    return 0;
  if (cap_ms >= 0 && left > cap_ms)
    return cap_ms;
  return left > INT_MAX ? INT_MAX : (int)left;
}
