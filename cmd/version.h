#ifndef COIL_VERSION_H
#define COIL_VERSION_H

/* `coil --version`: coil, the runtime-spec version and the linked libraries. */
void print_versions(void);

#endif
