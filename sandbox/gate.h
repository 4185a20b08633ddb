/* The in-guest gate's static part: the user's source is decoded, size-capped,
 * parsed to an AST, checked against the allowlist policy (gate_policy.py,
 * embedded) and compiled from the checked tree. Runs in the TRUSTED phase of
 * an initialised interpreter, under lockdown stage 1. */
#ifndef COIL_GATE_H
#define COIL_GATE_H

#include <Python.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

struct gate_violation {
  int line; /* 1-based; 0 when not tied to a place */
  int col;  /* 1-based */
  char msg[256];
};

struct gate_limits {
  size_t max_source; /* bytes, default 64 KiB */
  size_t max_nodes;  /* default 20000 */
  size_t max_depth;  /* default 100 */
};

struct gate_result {
  struct gate_violation *v; /* every violation, in source order */
  size_t n;
  char **helpers; /* helper names the code imports ("json", "urllib.parse") */
  size_t n_helpers;
  PyObject *code;   /* compiled checked tree; NULL when n > 0 */
  bool uses_codecs; /* the code may look a codec up by name (encode, ...) */
};

/* Fills defaults (64 KiB, 20000 nodes, depth 100). */
void gate_limits_default(struct gate_limits *l);

/* Checks and compiles src. Violations (including syntax errors, bad UTF-8,
 * NUL bytes, size/node/depth limits) are returned in out->v with out->code
 * NULL and a 0 return; -1 only when the gate itself failed (err). With
 * check_ast false (sandbox.disable: ast) only decoding, size and compile
 * happen, and helpers lists every helper (the code was not read). lim NULL
 * means the defaults. Columns are 1-based characters. Needs the GIL, in the
 * TRUSTED phase: the first call loads the embedded policy. */
int gate_check(const char *src, size_t len, const char *filename,
               const struct gate_limits *lim, bool check_ast,
               struct gate_result *out, struct coil_error *err);
/* Needs the GIL (drops code). */
void gate_result_free(struct gate_result *r);

/* The helper names user code may import. */
extern const char *const gate_helper_names[];
extern const size_t gate_n_helper_names;

#endif
