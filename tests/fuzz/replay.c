/* A plain main for a harness, compiled with it by tests/unit/test_fuzz_NAME.c
 * (which defines FUZZ_NAME): feeds it every file of the given directories
 * (or files), one TAP line each, so make check replays the seed corpus and
 * every crash ever found without libFuzzer. A crash or a sanitizer report
 * ends the program, which the TAP runner counts as a failure. Defaults to
 * tests/fuzz/corpus/NAME and tests/fuzz/regressions/NAME (run from the
 * repository root, as tests/run-all.sh does). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "readall.h"

static int n_tests, n_failed;

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void replay_file(const char *path) {
  char *buf = NULL;
  size_t len = 0;
  struct coil_error err = {0};
  n_tests++;
  if (read_file_or_stdin(path, 1u << 20, false, &buf, &len, &err) < 0) {
    n_failed++;
    printf("not ok %d - %s: %s\n", n_tests, path, err.msg);
    return;
  }
  /* Twice: a harness must give the same answer for the same input. */
  LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
  LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
  free(buf);
  printf("ok %d - %s\n", n_tests, path);
  fflush(stdout);
}

static void replay_dir(const char *dir, int required) {
  DIR *d = opendir(dir);
  if (!d) {
    if (required || errno != ENOENT) {
      n_failed++;
      printf("not ok %d - %s: %s\n", ++n_tests, dir, strerror(errno));
    }
    return;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.')
      continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      char **grown = realloc(names, cap * sizeof *names);
      if (!grown)
        abort();
      names = grown;
    }
    if (!(names[n++] = strdup(de->d_name)))
      abort();
  }
  closedir(d);
  qsort(names, n, sizeof *names, cmp_names);
  for (size_t i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    replay_file(path);
    free(names[i]);
  }
  free(names);
}

static void replay(const char *path, int required) {
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISDIR(st.st_mode))
    replay_file(path);
  else
    replay_dir(path, required);
}

int main(int argc, char **argv) {
  LLVMFuzzerInitialize(&argc, &argv);
  if (argc > 1) {
    for (int i = 1; i < argc; i++)
      replay(argv[i], 1);
  } else {
    replay("tests/fuzz/corpus/" FUZZ_NAME, 1);
    replay("tests/fuzz/regressions/" FUZZ_NAME, 0);
  }
  printf("1..%d\n", n_tests);
  return n_failed ? 1 : 0;
}
