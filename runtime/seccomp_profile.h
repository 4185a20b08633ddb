/* linux.seccomp compiled with libseccomp. Built (and so validated and
 * compiled to BPF) in the parent before anything is created, loaded in the
 * child as the last step. */
#ifndef COIL_SECCOMP_PROFILE_H
#define COIL_SECCOMP_PROFILE_H

#include "config.h"
#include "error.h"

struct coil_seccomp_profile;

/* Errors name the field: "linux.seccomp.syscalls[3].action: unknown action
 * \"SCMP_ACT_FOO\"". Unknown syscall names are skipped with a warning, as
 * runc does (they may be newer than this libseccomp). libseccomp runs in a
 * child process that is killed when it takes longer than 5 s
 * ("linux.seccomp: compiling the filter took longer than 5 s (libseccomp)",
 * ETIMEDOUT): some rule sets make it loop for ever. */
int seccomp_profile_build(const struct coil_seccomp *cfg,
                          struct coil_seccomp_profile **out,
                          struct coil_error *err);
/* seccomp(2) with the flags seccomp_load would pass; no libseccomp. */
int seccomp_profile_load(const struct coil_seccomp_profile *p,
                         struct coil_error *err);
/* Builds and writes the BPF program to fd in this process, with no
 * deadline: what build's child runs, and what the fuzzer calls so its
 * coverage stays in one process. */
int seccomp_profile_export_unbounded(const struct coil_seccomp *cfg, int fd,
                                     struct coil_error *err);
void seccomp_profile_free(struct coil_seccomp_profile *p);
/* Calls fn with each linux.seccomp.architectures name this libseccomp
 * knows, and with each linux.seccomp.flags name coil knows. */
void seccomp_profile_each_arch(void (*fn)(const char *name, void *arg),
                               void *arg);
void seccomp_profile_each_flag(void (*fn)(const char *name, void *arg),
                               void *arg);

#endif
