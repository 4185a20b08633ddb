/* Signal names as kill(1) and runc accept them. */
#ifndef COIL_SIGNALS_H
#define COIL_SIGNALS_H

#include "error.h"

/* "TERM", "SIGTERM", "term", "15", "RTMIN+2", "SIGRTMAX-1". */
int signal_parse(const char *s, int *sig, struct coil_error *err);

/* "SIGTERM" for 15; NULL when the number has no name. */
const char *signal_name(int sig);

#endif
