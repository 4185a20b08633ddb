/* The reading end of a sandboxed execution's answer. The envelope is one
 * line that starts {"ok": (protocol_write_line), so once such a line is
 * whole the answer is final and the reader need not wait for the end of
 * file: that comes only when the child gets to close its output, and the
 * write that woke the reader can have it run first. Output of any other
 * shape (raw writes to the output, which only code past the sandbox's
 * layers can make) is the answer whole, at the end of file. */
#ifndef COIL_ANSWER_READER_H
#define COIL_ANSWER_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct answer_reader {
  char *buf;
  size_t len, cap;
  bool line; /* a newline was read */
  bool eof;  /* the end of file, or a read that failed */
};

/* One read(2) from fd into a growing buffer: the bytes read, 0 at the end
 * of file, -1 with errno set (EINTR or EAGAIN: nothing happened; any other
 * error counts as the end). */
ssize_t answer_read(struct answer_reader *a, int fd);

/* Whether nothing the child writes later can change the answer. */
bool answer_final(const struct answer_reader *a);

/* The answer, taken from a: the envelope line without its newline, or all
 * that was read when the output does not start with one (trailing newlines
 * cut); NUL-terminated, owned by the caller, NULL when nothing was read. */
char *answer_take(struct answer_reader *a, size_t *len);

#endif
