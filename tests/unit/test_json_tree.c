/* json_tree.c: the same tree as yajl_tree_parse, geometric growth (a 300k
 * element array must not take one realloc per element), no leak when the
 * document is cut off half-way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "json_tree.h"
#include "tap.h"

/* Structural equality of two yajl trees, number literals included. */
static int same_tree(yajl_val a, yajl_val b) {
  if (!a || !b || a->type != b->type)
    return a == b;
  switch (a->type) {
  case yajl_t_string:
    return strcmp(a->u.string, b->u.string) == 0;
  case yajl_t_number:
    return strcmp(a->u.number.r, b->u.number.r) == 0 &&
           a->u.number.flags == b->u.number.flags &&
           (!(a->u.number.flags & YAJL_NUMBER_INT_VALID) ||
            a->u.number.i == b->u.number.i);
  case yajl_t_object:
    if (a->u.object.len != b->u.object.len)
      return 0;
    for (size_t i = 0; i < a->u.object.len; i++)
      if (strcmp(a->u.object.keys[i], b->u.object.keys[i]) != 0 ||
          !same_tree(a->u.object.values[i], b->u.object.values[i]))
        return 0;
    return 1;
  case yajl_t_array:
    if (a->u.array.len != b->u.array.len)
      return 0;
    for (size_t i = 0; i < a->u.array.len; i++)
      if (!same_tree(a->u.array.values[i], b->u.array.values[i]))
        return 0;
    return 1;
  default:
    return 1;
  }
}

static void test_same_as_yajl_tree(void) {
  static const char *const docs[] = {
      "{}",
      "[]",
      "5",
      "\"s\"",
      "{\"a\":[1,2.5,-3e2,true,false,null,\"x\",{},[]],\"b\":{\"c\":"
      "\"\\u00e9\"}}",
      "{\"dup\":1,\"dup\":2}",
      "[9223372036854775807,9223372036854775808,-0,1e400]",
  };
  for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
    char e1[256], e2[256];
    yajl_val mine =
        json_tree_parse(docs[i], strlen(docs[i]), e1, sizeof e1, NULL);
    yajl_val theirs = yajl_tree_parse(docs[i], e2, sizeof e2);
    ok(mine && theirs && same_tree(mine, theirs), "same tree as yajl: %s",
       docs[i]);
    yajl_tree_free(mine);
    yajl_tree_free(theirs);
  }
}

static void test_errors(void) {
  static const struct {
    const char *doc, *want;
  } cases[] = {
      {"{\"a\":[1,{\"b\":", "parse error: premature EOF"},
      {"{\"a\":[1,{\"b\":\"x\"}", "parse error: premature EOF"},
      {"[1,]", "parse error: unallowed token"},
      {"{\"a\" 1}", "parse error: object key and value must be separated"},
      {"{} []", "parse error: trailing garbage"},
      {"[tru]", "lexical error: invalid string in json text."},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char e[512];
    yajl_val v =
        json_tree_parse(cases[i].doc, strlen(cases[i].doc), e, sizeof e, NULL);
    ok(!v && strncmp(e, cases[i].want, strlen(cases[i].want)) == 0, "%s: %s",
       cases[i].doc, cases[i].want);
    yajl_tree_free(v);
  }
  /* len, not a NUL, ends the document. */
  char e[256];
  yajl_val v = json_tree_parse("[1][2]", 3, e, sizeof e, NULL);
  ok(v && YAJL_IS_ARRAY(v) && v->u.array.len == 1, "reads only len bytes");
  yajl_tree_free(v);
}

#define BIG 300000

/* process.env with BIG entries: the config parser takes it (16 MiB cap). */
static char *big_config(size_t *len) {
  size_t cap = 64 + (size_t)BIG * 16, n = 0;
  char *s = malloc(cap);
  if (!s)
    return NULL;
  n += (size_t)snprintf(s + n, cap - n,
                        "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"r\"},"
                        "\"process\":{\"cwd\":\"/\",\"args\":[\"sh\"],"
                        "\"env\":[");
  for (int i = 0; i < BIG; i++)
    n += (size_t)snprintf(s + n, cap - n, "%s\"V%d=x\"", i ? "," : "", i);
  n += (size_t)snprintf(s + n, cap - n, "]}}");
  *len = n;
  return s;
}

static void test_big_array(void) {
  size_t len = 0;
  char *doc = big_config(&len);
  ok(doc != NULL, "built a %d-element config", BIG);
  if (!doc)
    return;
  struct json_tree_stats st = {0};
  char e[256];
  yajl_val v = json_tree_parse(doc, len, e, sizeof e, &st);
  ok(v != NULL, "parses %zu bytes", len);
  /* Doubling from 8: 16 grows for BIG elements, a few for the small
   * containers around; per-element growth would be BIG. */
  ok(st.grows <= 32, "%zu element-array allocations for %d elements", st.grows,
     BIG);
  yajl_tree_free(v);

  struct coil_config *c = NULL;
  struct coil_error err = {0};
  int r = config_parse(doc, len, &c, &err);
  ok(r == 0 && c && c->process.env.n == BIG && !c->process.env.v[BIG],
     "config_parse reads all %d env entries %s", BIG, r ? err.msg : "");
  config_free(c);
  free(doc);
}

int main(void) {
  test_same_as_yajl_tree();
  test_errors();
  test_big_array();
  return tap_done();
}
