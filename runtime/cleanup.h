/* Scope-bound release of fds and memory, so error paths cannot leak. */
#ifndef COIL_CLEANUP_H
#define COIL_CLEANUP_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void coil_freep(void *p) { free(*(void **)p); }
static inline void coil_closep(int *fd) {
  if (*fd >= 0)
    close(*fd);
}
static inline void coil_fclosep(FILE **f) {
  if (*f)
    fclose(*f);
}

#define cleanup_free __attribute__((cleanup(coil_freep)))
#define cleanup_close __attribute__((cleanup(coil_closep)))
#define cleanup_fclose __attribute__((cleanup(coil_fclosep)))

/* Hand ownership on: returns the value and disarms the cleanup. */
#define steal_ptr(p)                                                           \
  ({                                                                           \
    __typeof__(p) steal_tmp_ = (p);                                            \
    (p) = NULL;                                                                \
    steal_tmp_;                                                                \
  })
#define steal_fd(fd)                                                           \
  ({                                                                           \
    int steal_tmp_ = (fd);                                                     \
    (fd) = -1;                                                                 \
    steal_tmp_;                                                                \
  })

#endif
