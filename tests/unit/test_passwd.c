/* HOME lookup in passwd(5) text: pure parsing, no files. */
#include <string.h>

#include "passwd.h"
#include "tap.h"

static const char *const text =
    "root:x:0:0:root:/root:/bin/sh\n"
    "+nis:::::/nis:\n"
    "short:x:7\n"
    "empty:x:8:8:e::/bin/sh\n"
    "user:x:1000:1000:User Name:/home/user:/bin/sh\n"
    "dup:x:1000:1000::/home/dup:/bin/sh\n"
    "big:x:4294967295:0::/big:/bin/sh\n"
    "last:x:42:42::/home/last";

static void test_lookup(void) {
  char out[64];
  ok(passwd_home_in(text, 0, out, sizeof out), "uid 0 found");
  is_str(out, "/root", "uid 0 home");
  ok(passwd_home_in(text, 1000, out, sizeof out), "uid 1000 found");
  is_str(out, "/home/user", "first entry of a uid wins");
  ok(passwd_home_in(text, 42, out, sizeof out), "last line without newline");
  is_str(out, "/home/last", "its home");
  ok(passwd_home_in(text, 4294967295U, out, sizeof out), "largest uid");
  is_str(out, "/big", "its home");
}

static void test_missing(void) {
  char out[8] = "keep";
  ok(!passwd_home_in(text, 5, out, sizeof out), "no such uid");
  ok(!passwd_home_in(text, 7, out, sizeof out), "line without a home field");
  ok(!passwd_home_in(text, 8, out, sizeof out), "empty home");
  ok(!passwd_home_in(text, 1000, out, 4), "home does not fit");
  is_str(out, "keep", "out untouched when not found");
  ok(!passwd_home_in("", 0, out, sizeof out), "empty file");
  ok(!passwd_home_in("root:x:00x:0::/r:\n", 0, out, sizeof out),
     "a uid with junk does not match");
  ok(!passwd_home_in("root:x::0::/r:\n", 0, out, sizeof out),
     "an empty uid does not match 0");
}

int main(void) {
  test_lookup();
  test_missing();
  return tap_done();
}
