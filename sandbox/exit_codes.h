/* Exit statuses of Python sandbox mode (docs/python.md): the sandbox and
 * the CLI agree on them. */
#ifndef COIL_EXIT_CODES_H
#define COIL_EXIT_CODES_H

#define PY_EXIT_RAISED 1        /* the user code raised */
#define PY_EXIT_TIMEOUT 124     /* wall clock */
#define PY_EXIT_COIL 125        /* coil itself failed, or a bad request */
#define PY_EXIT_GATE 126        /* the gate rejected the code (AST or audit) */
#define PY_EXIT_KILLED_BASE 128 /* + signal number */
#define PY_EXIT_LIMIT 137       /* memory or CPU limit (128 + SIGKILL) */

#endif
