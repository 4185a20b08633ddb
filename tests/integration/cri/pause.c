/* The pod sandbox's init for tests/integration/test_cri.py, built with
 * gcc -static at test time into a one-file image: it holds the pod's
 * namespaces, reaps orphans, and exits on SIGINT or SIGTERM. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void quit(int sig) {
  (void)sig;
  _exit(0);
}

static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0)
    ;
}

int main(void) {
  struct sigaction q = {.sa_handler = quit};
  struct sigaction r = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP | SA_RESTART};
  if (sigaction(SIGINT, &q, NULL) || sigaction(SIGTERM, &q, NULL) ||
      sigaction(SIGCHLD, &r, NULL))
    return 1;
  for (;;)
    pause();
}
