#include "lint.h"

#include <Python.h>
#include <stdio.h>

#include "cleanup.h"
#include "embed.h"
#include "gate.h"
#include "readall.h"

int lint_file(const char *path, const char *name, struct coil_error *err) {
  struct gate_limits lim;
  gate_limits_default(&lim);
  cleanup_free char *src = NULL;
  size_t len = 0;
  if (read_file_or_stdin(path, lim.max_source, true, &src, &len, err) < 0 ||
      embed_init("/usr", err) < 0)
    return -1;
  struct gate_result res;
  if (gate_check(src, len, name, &lim, true, &res, err) < 0)
    return -1;
  for (size_t i = 0; i < res.n; i++)
    printf("%s:%d:%d: %s\n", name, res.v[i].line, res.v[i].col, res.v[i].msg);
  int n = (int)res.n;
  gate_result_free(&res);
  return n;
}
