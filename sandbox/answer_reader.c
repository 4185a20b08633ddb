/* Collecting a sandboxed execution's answer (answer_reader.h). */
#include "answer_reader.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ENVELOPE_START "{\"ok\":"

ssize_t answer_read(struct answer_reader *a, int fd) {
  if (a->len == a->cap) {
    size_t ncap = a->cap ? a->cap * 2 : 4096;
    char *nb = realloc(a->buf, ncap + 1); /* + 1: answer_take's NUL */
    if (!nb) {
      a->eof = true;
      errno = ENOMEM;
      return -1;
    }
    a->buf = nb;
    a->cap = ncap;
  }
  ssize_t r = read(fd, a->buf + a->len, a->cap - a->len);
  if (r > 0) {
    a->line = a->line || memchr(a->buf + a->len, '\n', (size_t)r) != NULL;
    a->len += (size_t)r;
  } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
    a->eof = true;
  }
  return r;
}

static bool envelope_first(const struct answer_reader *a) {
  size_t n = strlen(ENVELOPE_START);
  return a->len >= n && memcmp(a->buf, ENVELOPE_START, n) == 0;
}

bool answer_final(const struct answer_reader *a) {
  return a->eof || (a->line && envelope_first(a));
}

char *answer_take(struct answer_reader *a, size_t *len) {
  char *s = a->buf;
  *len = 0;
  if (s) {
    char *nl = envelope_first(a) ? memchr(s, '\n', a->len) : NULL;
    *len = nl ? (size_t)(nl - s) : a->len;
    while (!nl && *len && s[*len - 1] == '\n')
      --*len;
    s[*len] = '\0';
  }
  *a = (struct answer_reader){0};
  return s;
}
