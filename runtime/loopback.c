#include "loopback.h"

#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "cleanup.h"

int loopback_up(struct coil_error *err) {
  /* Any socket of the namespace carries the interface ioctls. */
  cleanup_close int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    return coil_error_sys(err, errno, "loopback: socket");
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
  if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
    return coil_error_sys(err, errno, "loopback: SIOCGIFFLAGS lo");
  if (ifr.ifr_flags & IFF_UP)
    return 0;
  ifr.ifr_flags |= IFF_UP;
  if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
    return coil_error_sys(err, errno, "loopback: bring lo up");
  return 0;
}
