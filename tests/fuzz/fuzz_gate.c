/* The gate on arbitrary source: decode, size/node/depth limits, AST policy,
 * compile. Every input must end in a result (code or violations), never in
 * a gate failure, and a result must be one or the other. */
#include <Python.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"
#include "fuzz_py.h"
#include "gate.h"

/* The policy runs as Python bytecode, which coverage instrumentation cannot
 * see: what it decided becomes extra coverage (libFuzzer reads this
 * section), one counter per distinct violation message with digits and
 * quoted names left out (so the rule and the node kind, not the place or
 * the identifier: those would make every mutation new) and per helper
 * imported, so the mutator keeps inputs that reach new rules. */
__attribute__((
    section("__libfuzzer_extra_counters"))) static uint8_t policy_seen[1 << 12];

static void feature(const char *salt, const char *s) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (const char *p = salt; *p; p++)
    h = (h ^ (unsigned char)*p) * 16777619u;
  bool quoted = false;
  for (; *s; s++) {
    if (*s == '\'')
      quoted = !quoted;
    else if (!quoted && (*s < '0' || *s > '9'))
      h = (h ^ (unsigned char)*s) * 16777619u;
  }
  policy_seen[h % sizeof policy_seen] = 1;
}

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
  for (size_t i = 0; i < r.n; i++)
    feature("v:", r.v[i].msg);
  for (size_t i = 0; i < r.n_helpers; i++)
    feature("h:", r.helpers[i]);
  feature("c:", r.code ? "compiled" : "refused");
  gate_result_free(&r);
  return 0;
}
