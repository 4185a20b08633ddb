/* The channel between `coil serve` and a tenant's template (a seqpacket
 * socket: the template's fd 1). Per job the server sends one struct
 * serve_job with four fds: one to read the code then the entry name from,
 * one to read the request JSON from (each a pipe already written and
 * closed, or a memfd when larger than a pipe's buffer), the write end of
 * the pipe that becomes the child's fd 1, and the template's end of a job
 * socketpair. On the job
 * socket the template answers with struct serve_job_reply messages: STARTED
 * with the child's pidfd attached, then ENDED with its wait status; a job
 * that needs no child (the gate refused the code, or a GATE job) gets ENDED
 * alone. The job socket closing without ENDED means the template failed. */
#ifndef COIL_SERVE_WIRE_H
#define COIL_SERVE_WIRE_H

#include <stdint.h>

enum serve_op {
  SERVE_OP_CALL = 1, /* gate (cached by digest), fork a child, run it */
  SERVE_OP_GATE = 2, /* gate only (register): ENDED 0, or 126 + envelope */
};

enum serve_fd { SERVE_FD_CODE, SERVE_FD_REQUEST, SERVE_FD_OUT, SERVE_FD_JOB };
#define SERVE_JOB_FDS 4

struct serve_job {
  uint32_t op;
  uint32_t code_len;  /* bytes of code before the entry name */
  uint32_t entry_len; /* bytes of entry name after it */
  uint32_t timeout_ms;
  uint32_t memory_mb;
  uint32_t output_bytes;
};

enum serve_reply_kind { SERVE_REPLY_STARTED = 1, SERVE_REPLY_ENDED = 2 };

struct serve_job_reply {
  int32_t kind;
  int32_t status;     /* ENDED: wait status (a GATE job: its exit code) */
  double cpu_seconds; /* ENDED: the child's user + system time */
  char digest[65];    /* sha256 hex of the code */
};

#endif
