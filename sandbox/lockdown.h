/* The two lockdown stages of Python mode. Filters and rulesets stack and
 * only tighten, so stage 2 is added on top of stage 1. */
#ifndef COIL_LOCKDOWN_H
#define COIL_LOCKDOWN_H

#include <linux/filter.h>
#include <stdbool.h>

#include "error.h"

/* coil serve's seccomp programs, compiled once in the template so that
 * each child only loads them: stage 2 with the job steps open, and the
 * filter that closes them (lockdown_stage2_before_job). */
struct lockdown_filters {
  struct sock_fprog stage2_job_steps, job_steps_closed;
};

struct lockdown_opts {
  bool landlock; /* the layer is on */
  bool seccomp;
  const char *readable_root; /* stage 1 Landlock: read-only beneath this */
  const struct lockdown_filters *compiled; /* serve's, for stage 2 */
  bool job_steps_open; /* set by lockdown_stage2_before_job */
};

/* Compiles serve's two programs into f (malloc'd): stage 2 with the job
 * steps open, and the filter that closes them. */
int lockdown_compile(struct lockdown_filters *f, struct coil_error *err);

/* Before the hostile source is parsed: Landlock read-only on the rootfs and
 * nothing else; seccomp denies (EPERM) the network, process creation,
 * privilege, mount, namespace, ptrace, bpf, keyring and io_uring families. */
int lockdown_stage1(const struct lockdown_opts *o, struct coil_error *err);

/* Before the user code runs: Landlock with no filesystem rights; a
 * default-deny seccomp allowlist of what the interpreter still needs,
 * killing the process on anything else. */
int lockdown_stage2(const struct lockdown_opts *o, struct coil_error *err);

/* Stage 2 for a serve child waiting for its job, with compiled filters
 * and no stage 1 (which stage 2 holds whole): Landlock with no filesystem
 * rights, and the stage 2 allowlist plus the few calls that taking and
 * arming a job make. lockdown_stage2 then only closes those calls, so the
 * user's code meets exactly stage 2, while the rest is done before the
 * request arrives. */
int lockdown_stage2_before_job(struct lockdown_opts *o, struct coil_error *err);

#endif
