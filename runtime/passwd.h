/* HOME for the container process, from the container's own /etc/passwd. */
#ifndef COIL_PASSWD_H
#define COIL_PASSWD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The home directory of the first passwd(5) line in text whose uid is uid,
 * into out; false when there is none (or it is empty or does not fit). */
bool passwd_home_in(const char *text, uid_t uid, char *out, size_t cap);

/* As runc: uid's home from /etc/passwd of the current root (the container's,
 * after pivot_root), opened without leaving that root; "/" when the file or
 * the entry is missing. */
void passwd_home(uid_t uid, char *out, size_t cap);

#endif
