/* check: runs only the static gate on a file and lists every violation, so
 * users can lint a handler before they deploy it. */
#include <Python.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "cmd.h"
#include "embed.h"
#include "exit_codes.h"
#include "gate.h"
#include "log.h"
#include "readall.h"

int cmd_check(const struct global_opts *g, int argc, char **argv) {
  (void)g;
  int first = argc > 1 && strcmp(argv[1], "--") == 0 ? 2 : 1;
  if (argc - first != 1)
    return cmd_usage_error("check",
                           "expected exactly one FILE (or - for stdin)");
  const char *path = argv[first];
  const char *shown = strcmp(path, "-") == 0 ? "<stdin>" : path;

  struct gate_limits lim;
  gate_limits_default(&lim);
  struct coil_error err = {0};
  cleanup_free char *src = NULL;
  size_t len = 0;
  if (read_file_or_stdin(path, lim.max_source, true, &src, &len, &err) < 0) {
    log_error("check: %s", err.msg);
    return EXIT_ERR;
  }
  if (embed_init("/usr", &err) < 0) {
    log_error("check: %s", err.msg);
    return EXIT_ERR;
  }
  struct gate_result res;
  if (gate_check(src, len, shown, &lim, true, &res, &err) < 0) {
    log_error("check: %s", err.msg);
    return EXIT_ERR;
  }
  for (size_t i = 0; i < res.n; i++)
    printf("%s:%d:%d: %s\n", shown, res.v[i].line, res.v[i].col, res.v[i].msg);
  int rc = res.n ? PY_EXIT_GATE : EXIT_OK;
  gate_result_free(&res);
  /* The interpreter is left to die with the process: finalising costs
   * milliseconds and frees nothing the exit does not. */
  return fflush(stdout) == 0 ? rc : EXIT_ERR;
}
