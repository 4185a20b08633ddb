/* answer_reader: a sandboxed execution's answer is final at the newline of
 * its envelope line, with the child's end of the pipe still open, or at the
 * end of file; what follows the envelope line is not the answer, and output
 * that does not start with one is judged whole. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "answer_reader.h"
#include "tap.h"

struct seen {
  bool final, eof;
  char *answer; /* answer_take's */
  size_t len;
};

/* What the reader makes of the bytes a child wrote to its output, with
 * the child still holding its end or not; the reads are non-blocking, as
 * serve's collect reads only what poll said is there. */
static struct seen read_output(const char *bytes, size_t n, bool writer_open) {
  struct seen s = {0};
  int p[2];
  if (pipe2(p, O_NONBLOCK) < 0 || write(p[1], bytes, n) != (ssize_t)n)
    return s;
  if (!writer_open)
    close(p[1]);
  struct answer_reader a = {0};
  while (!a.eof && answer_read(&a, p[0]) > 0)
    ;
  s.final = answer_final(&a);
  s.eof = a.eof;
  s.answer = answer_take(&a, &s.len);
  ok(a.buf == NULL && a.len == 0 && !a.line, "taking empties the reader");
  close(p[0]);
  if (writer_open)
    close(p[1]);
  return s;
}

#define ENV "{\"ok\":true,\"result\":1}"

static void test_line_with_writer_open(void) {
  struct seen s = read_output(ENV, strlen(ENV), true);
  ok(!s.final, "half an envelope, the writer open: not final");
  free(s.answer);
  s = read_output(ENV "\n", strlen(ENV) + 1, true);
  ok(s.final && !s.eof,
     "final at the newline while the child still holds its end");
  is_str(s.answer, ENV, "the answer is the line without its newline");
  ok(s.len == strlen(ENV), "its length");
  free(s.answer);
}

static void test_end_without_newline(void) {
  struct seen s = read_output("{\"ok\":", 6, false);
  ok(s.final && s.eof, "a cut envelope: final at the end of file");
  is_str(s.answer, "{\"ok\":", "all that came, for the classifier to judge");
  free(s.answer);
}

static void test_only_first_line(void) {
  const char *two = ENV "\n{\"ok\":true,\"result\":2}\n";
  struct seen s = read_output(two, strlen(two), true);
  ok(s.final, "two envelope lines: final at the first");
  is_str(s.answer, ENV, "what follows the first line is not the answer");
  free(s.answer);
}

static void test_raw_output_judged_whole(void) {
  const char *raw = "environ={}\n";
  struct seen s = read_output(raw, strlen(raw), true);
  ok(!s.final, "a raw line first (code past the layers): not final");
  free(s.answer);
  const char *both = "environ={}\n{\"ok\":false}\n";
  s = read_output(both, strlen(both), false);
  ok(s.final, "final at the end of file");
  is_str(s.answer, "environ={}\n{\"ok\":false}",
         "all of it, the trailing newline cut");
  free(s.answer);
}

static void test_large_answer(void) {
  size_t big = 60000;
  char *buf = malloc(big + 1);
  memset(buf, 'x', big);
  memcpy(buf, "{\"ok\":", 6);
  buf[big] = '\n';
  struct seen s = read_output(buf, big + 1, true);
  ok(s.final && s.answer && s.len == big &&
         strspn(s.answer + 6, "x") == big - 6 && s.answer[big] == '\0',
     "a 60 kB line arrives whole across the buffer's growth");
  free(s.answer);
  free(buf);
}

static void test_nothing(void) {
  struct answer_reader a = {0};
  size_t len = 7;
  ok(answer_take(&a, &len) == NULL && len == 0, "nothing read: no answer");
}

int main(void) {
  test_line_with_writer_open();
  test_end_without_newline();
  test_only_first_line();
  test_raw_output_judged_whole();
  test_large_answer();
  test_nothing();
  return tap_done();
}
