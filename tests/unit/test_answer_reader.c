/* answer_reader: a sandboxed execution's answer is final at the newline of
 * its envelope line, with the child's end of the pipe still open, or at the
 * end of file; what follows the envelope line is not the answer, and output
 * that does not start with one is judged whole. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "answer_reader.h"
#include "tap.h"

/* Reads what p[0] holds now (non-blocking), as serve's collect does after
 * each poll. */
static void drain(struct answer_reader *a, int fd) {
  while (!a->eof && answer_read(a, fd) > 0)
    ;
}

static void test_line_with_writer_open(void) {
  int p[2];
  ok(pipe2(p, O_NONBLOCK) == 0, "pipe");
  struct answer_reader a = {0};
  const char *env = "{\"ok\":true,\"result\":1}";
  ok(write(p[1], env, strlen(env)) == (ssize_t)strlen(env), "half an answer");
  drain(&a, p[0]);
  ok(!answer_final(&a), "no newline and the writer open: not final");
  ok(write(p[1], "\n", 1) == 1, "the newline");
  drain(&a, p[0]);
  ok(answer_final(&a) && !a.eof,
     "final at the newline while the child still holds its end");
  size_t len;
  char *s = answer_take(&a, &len);
  is_str(s, env, "the answer is the line without its newline");
  ok(len == strlen(env), "its length");
  ok(a.buf == NULL && a.len == 0 && !a.line, "taking it empties the reader");
  free(s);
  close(p[0]);
  close(p[1]);
}

static void test_end_without_newline(void) {
  int p[2];
  ok(pipe2(p, O_NONBLOCK) == 0, "pipe");
  struct answer_reader a = {0};
  ok(write(p[1], "{\"ok\":", 6) == 6, "a cut envelope");
  close(p[1]);
  drain(&a, p[0]);
  ok(answer_final(&a) && a.eof && !a.line, "final at the end of file");
  size_t len;
  char *s = answer_take(&a, &len);
  is_str(s, "{\"ok\":", "all that came, for the classifier to judge");
  free(s);
  close(p[0]);
}

static void test_only_first_line(void) {
  int p[2];
  ok(pipe2(p, O_NONBLOCK) == 0, "pipe");
  struct answer_reader a = {0};
  const char *two = "{\"ok\":true,\"result\":1}\n{\"ok\":true,\"result\":2}\n";
  ok(write(p[1], two, strlen(two)) == (ssize_t)strlen(two), "two lines");
  close(p[1]);
  drain(&a, p[0]);
  size_t len;
  char *s = answer_take(&a, &len);
  is_str(s, "{\"ok\":true,\"result\":1}",
         "what follows the first line is not "
         "the answer");
  free(s);
  close(p[0]);
}

static void test_large_answer(void) {
  int p[2];
  ok(pipe2(p, O_NONBLOCK) == 0, "pipe");
  struct answer_reader a = {0};
  size_t big = 60000;
  char *buf = malloc(big + 1);
  memset(buf, 'x', big);
  memcpy(buf, "{\"ok\":", 6);
  buf[big] = '\n';
  ok(write(p[1], buf, big + 1) == (ssize_t)big + 1, "a 60 kB line");
  drain(&a, p[0]);
  size_t len;
  char *s = answer_take(&a, &len);
  ok(s && len == big && strspn(s + 6, "x") == big - 6 && s[big] == '\0',
     "arrives whole across the buffer's growth");
  free(s);
  free(buf);
  close(p[0]);
  close(p[1]);
}

static void test_raw_output_judged_whole(void) {
  int p[2];
  ok(pipe2(p, O_NONBLOCK) == 0, "pipe");
  struct answer_reader a = {0};
  const char *raw = "environ={}\n";
  ok(write(p[1], raw, strlen(raw)) == (ssize_t)strlen(raw),
     "a raw line first, as code past the layers could write");
  drain(&a, p[0]);
  ok(!answer_final(&a), "a line that is not an envelope: not final");
  const char *env = "{\"ok\":false}\n";
  ok(write(p[1], env, strlen(env)) == (ssize_t)strlen(env), "then one");
  close(p[1]);
  drain(&a, p[0]);
  ok(answer_final(&a), "final at the end of file");
  size_t len;
  char *s = answer_take(&a, &len);
  is_str(s, "environ={}\n{\"ok\":false}", "all of it, trailing newline cut");
  free(s);
  close(p[0]);
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
  test_large_answer();
  test_raw_output_judged_whole();
  test_nothing();
  return tap_done();
}
