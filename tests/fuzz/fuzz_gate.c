/* The gate on arbitrary source: decode, size/node/depth limits, AST policy,
 * compile. Every input must end in a result (code or violations), never in
 * a gate failure, and a result must be one or the other. */
#include <Python.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"
#include "fuzz_py.h"
#include "gate.h"

static void check(int cond, const char *what, const struct coil_error *err) {
  if (!cond) {
    fprintf(stderr, "fuzz_gate: %s%s%s\n", what, err ? ": " : "",
            err ? err->msg : "");
    abort();
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  fuzz_py_start();
  /* The first call loads the embedded policy: not per-input memory. */
  struct gate_result r = {0};
  struct coil_error err = {0};
  check(gate_check("pass\n", 5, "<fuzz>", NULL, true, &r, &err) == 0,
        "gate on \"pass\"", &err);
  gate_result_free(&r);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct gate_result r = {0};
  struct coil_error err = {0};
  int rc = gate_check((const char *)data, size, "<fuzz>", NULL, true, &r, &err);
  check(rc == 0, "gate_check failed instead of reporting", &err);
  check((r.code != NULL) != (r.n > 0), "either code or violations", NULL);
  check(!PyErr_Occurred(), "no exception left pending", NULL);
  gate_result_free(&r);
  return 0;
}
