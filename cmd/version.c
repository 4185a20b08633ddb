#include "version.h"

#include <Python.h>
#include <seccomp.h>
#include <stdio.h>
#include <yajl/yajl_version.h>

#include "oci_state.h"

void print_versions(void) {
  const struct scmp_version *sv = seccomp_version();
  printf("coil version %s\n", COIL_VERSION);
  printf("spec: %s\n", COIL_OCI_VERSION);
  printf("libseccomp: %u.%u.%u\n", sv->major, sv->minor, sv->micro);
  printf("yajl: %d\n", yajl_version());
  /* Py_GetVersion needs no initialised interpreter. */
  printf("python: %.*s\n", 6, Py_GetVersion());
}
