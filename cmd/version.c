#include "version.h"

#include <seccomp.h>
#include <stdio.h>
#include <yajl/yajl_version.h>

#include "log.h"
#include "oci_state.h"
#include "python_load.h"

void print_versions(void) {
  const struct scmp_version *sv = seccomp_version();
  printf("coil version %s\n", COIL_VERSION);
  printf("spec: %s\n", COIL_OCI_VERSION);
  printf("libseccomp: %u.%u.%u\n", sv->major, sv->minor, sv->micro);
  printf("yajl: %d\n", yajl_version());
  /* The libpython Python mode would run, which only its object links. */
  struct coil_error err;
  const struct python_api *py = python_load(&err);
  if (py)
    printf("python: %.*s\n", 6, py->python_version());
  else
    log_warn("python: %s", err.msg);
}
