#include "serve_prefault.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "cleanup.h"
#include "readall.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* A handler writes a few hundred of its template's pages; a child that
 * wrote far more (a hostile one can) would make every later spare copy
 * them all, so what is learned stops here. */
#define PREFAULT_MAX_PAGES 1024
/* Larger mappings are reservations (ASan's shadow memory, say), not what
 * a request writes; their pagemap would take long to read. */
#define MAPPING_MAX ((uintptr_t)256 << 20)
/* /proc/PID/maps of a template: some seventy lines. */
#define MAPS_CAP (1 << 20)
/* pagemap entries read at once */
#define PAGEMAP_CHUNK 512
#define PM_PRESENT (1ULL << 63)
#define PM_EXCLUSIVE (1ULL << 56)

static uintptr_t pages[PREFAULT_MAX_PAGES]; /* sorted page addresses */
static size_t n_pages;

/* Whether a maps line is a private mapping a child can write: the heap,
 * the interpreter's arenas, the stack, libraries' data; not the kernel's
 * [vvar]/[vdso]/[vsyscall]. */
static bool writable_private(const char *line, uintptr_t *start,
                             uintptr_t *end) {
  char perms[5];
  int path_at = 0;
  if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s %*s %*s %*s %n", start, end,
             perms, &path_at) != 3)
    return false;
  if (perms[0] != 'r' || perms[1] != 'w' || perms[3] != 'p')
    return false;
  return !(path_at > 0 && strncmp(line + path_at, "[v", 2) == 0);
}

static void add_page(uintptr_t page) {
  if (n_pages == PREFAULT_MAX_PAGES)
    return;
  size_t lo = 0, hi = n_pages;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (pages[mid] < page)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < n_pages && pages[lo] == page)
    return;
  memmove(pages + lo + 1, pages + lo, (n_pages - lo) * sizeof *pages);
  pages[lo] = page;
  n_pages++;
}

static int maps_fd = -1, pagemap_fd = -1;

int prefault_open(int proc_fd) {
  char path[64];
  /* A process that is not dumpable sees its own /proc files owned by the
   * host's root. Dumpable for two opens: this process runs no user code,
   * and its children are cloned later, not dumpable. */
  if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
    return -1;
  snprintf(path, sizeof path, "%d/maps", (int)getpid());
  maps_fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
  snprintf(path, sizeof path, "%d/pagemap", (int)getpid());
  pagemap_fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
    _exit(127);
  if (maps_fd < 0 || pagemap_fd < 0) {
    prefault_close();
    return -1;
  }
  return 0;
}

void prefault_close(void) {
  if (maps_fd >= 0)
    close(maps_fd);
  if (pagemap_fd >= 0)
    close(pagemap_fd);
  maps_fd = pagemap_fd = -1;
}

/* The pages of [start, end) present and mapped by this process alone. */
static int learn_range(uintptr_t start, uintptr_t end, size_t page) {
  uint64_t e[PAGEMAP_CHUNK];
  for (uintptr_t at = start; at < end;) {
    size_t n = (end - at) / page;
    if (n > PAGEMAP_CHUNK)
      n = PAGEMAP_CHUNK;
    ssize_t got =
        pread(pagemap_fd, e, n * sizeof *e, (off_t)(at / page * sizeof *e));
    if (got <= 0)
      return -1;
    size_t k = (size_t)got / sizeof *e;
    for (size_t i = 0; i < k; i++)
      if ((e[i] & PM_PRESENT) && (e[i] & PM_EXCLUSIVE))
        add_page(at + i * page);
    at += k * page;
  }
  return 0;
}

long prefault_learn(void) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  cleanup_free char *maps = NULL;
  size_t len;
  struct coil_error err;
  if (maps_fd < 0 || lseek(maps_fd, 0, SEEK_SET) < 0 ||
      read_all(maps_fd, MAPS_CAP, false, &maps, &len, &err) < 0)
    return -1;
  for (char *line = maps; line && *line;) {
    char *next = strchr(line, '\n');
    if (next)
      *next++ = '\0';
    uintptr_t start, end;
    if (writable_private(line, &start, &end) && end - start <= MAPPING_MAX &&
        learn_range(start, end, page) < 0)
      return -1;
    line = next;
  }
  return (long)n_pages;
}

void prefault_apply(void) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  for (size_t i = 0; i < n_pages;) {
    size_t run = 1;
    while (i + run < n_pages && pages[i + run] == pages[i] + run * page)
      run++;
    /* A range unmapped since (EFAULT, ENOMEM) only goes without. */
    madvise((void *)pages[i], run * page, MADV_POPULATE_WRITE);
    i += run;
  }
}
