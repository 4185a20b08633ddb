#include "pdeath.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>

int pdeath_arm(struct coil_error *err) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
    return coil_error_sys(err, errno, "prctl(PR_SET_PDEATHSIG)");
  return 0;
}

bool pdeath_parent_gone(int conn) {
  int sig = 0;
  if (prctl(PR_GET_PDEATHSIG, &sig) < 0 || sig == 0)
    return false;
  struct pollfd p = {.fd = conn, .events = POLLRDHUP};
  return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR));
}
