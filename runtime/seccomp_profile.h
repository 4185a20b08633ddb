/* linux.seccomp compiled with libseccomp. Built (and so validated) in the
 * parent before anything is created, loaded in the child as the last step. */
#ifndef COIL_SECCOMP_PROFILE_H
#define COIL_SECCOMP_PROFILE_H

#include "config.h"
#include "error.h"

struct coil_seccomp_profile;

/* Errors name the field: "linux.seccomp.syscalls[3].action: unknown action
 * \"SCMP_ACT_FOO\"". Unknown syscall names are skipped with a warning, as
 * runc does (they may be newer than this libseccomp). */
int seccomp_profile_build(const struct coil_seccomp *cfg,
                          struct coil_seccomp_profile **out,
                          struct coil_error *err);
int seccomp_profile_load(const struct coil_seccomp_profile *p,
                         struct coil_error *err);
/* Writes the compiled BPF program to fd without loading it: what load would
 * install, for tests and the fuzzer. */
int seccomp_profile_export(const struct coil_seccomp_profile *p, int fd,
                           struct coil_error *err);
void seccomp_profile_free(struct coil_seccomp_profile *p);

#endif
