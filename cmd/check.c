/* check: runs only the static gate on a file and lists every violation, so
 * users can lint a handler before they deploy it. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "exit_codes.h"
#include "log.h"
#include "python_load.h"

int cmd_check(const struct global_opts *g, int argc, char **argv) {
  (void)g;
  int first = argc > 1 && strcmp(argv[1], "--") == 0 ? 2 : 1;
  if (argc - first != 1)
    return cmd_usage_error("check",
                           "expected exactly one FILE (or - for stdin)");
  const char *path = argv[first];
  const char *shown = strcmp(path, "-") == 0 ? "<stdin>" : path;

  struct coil_error err = {0};
  const struct python_api *py = python_load(&err);
  int violations = py ? py->lint(path, shown, &err) : -1;
  if (violations < 0) {
    log_error("check: %s", err.msg);
    return EXIT_ERR;
  }
  int rc = violations ? PY_EXIT_GATE : EXIT_OK;
  return fflush(stdout) == 0 ? rc : EXIT_ERR;
}
