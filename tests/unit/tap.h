/* Minimal TAP producer for the C unit tests. */
#ifndef COIL_TAP_H
#define COIL_TAP_H

#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

#define ok(cond, ...)                                                          \
  do {                                                                         \
    int ok_pass_ = !!(cond);                                                   \
    ++tap_n;                                                                   \
    if (ok_pass_) {                                                            \
      printf("ok %d - ", tap_n);                                               \
    } else {                                                                   \
      ++tap_failed;                                                            \
      printf("not ok %d - ", tap_n);                                           \
    }                                                                          \
    printf(__VA_ARGS__);                                                       \
    printf("\n");                                                              \
    if (!ok_pass_)                                                             \
      printf("#   failed at %s:%d: %s\n", __FILE__, __LINE__, #cond);          \
  } while (0)

#define is_str(got, want, ...)                                                 \
  do {                                                                         \
    const char *g_ = (got), *w_ = (want);                                      \
    int same_ = (g_ && w_) ? strcmp(g_, w_) == 0 : g_ == w_;                   \
    ok(same_, __VA_ARGS__);                                                    \
    if (!same_)                                                                \
      printf("#   got: '%s'\n#   want: '%s'\n", g_ ? g_ : "(null)",            \
             w_ ? w_ : "(null)");                                              \
  } while (0)

static inline int tap_done(void) {
  printf("1..%d\n", tap_n);
  return tap_failed ? 1 : 0;
}

#endif
