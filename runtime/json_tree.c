#include "json_tree.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

/* An array or object being read; it joins its parent when it closes, so on
 * failure every frame is a separate tree to free. */
struct frame {
  yajl_val v;
  size_t cap; /* allocated elements (and keys, for an object) */
  char *key;  /* object key waiting for its value */
};

struct builder {
  struct frame *stack;
  size_t depth, stack_cap;
  yajl_val root;
  bool oom;
  struct json_tree_stats *stats;
};

/* Room for one more element in f, doubling: amortised O(1) per element. */
static bool make_room(struct builder *b, struct frame *f) {
  bool obj = YAJL_IS_OBJECT(f->v);
  size_t len = obj ? f->v->u.object.len : f->v->u.array.len;
  if (len < f->cap)
    return true;
  size_t cap = f->cap ? f->cap * 2 : 8;
  if (obj) {
    const char **keys =
        reallocarray((void *)f->v->u.object.keys, cap, sizeof *keys);
    if (!keys)
      return false;
    f->v->u.object.keys = keys;
  }
  yajl_val **values = obj ? &f->v->u.object.values : &f->v->u.array.values;
  yajl_val *grown = reallocarray(*values, cap, sizeof *grown);
  if (!grown)
    return false;
  *values = grown;
  f->cap = cap;
  if (b->stats)
    b->stats->grows++;
  return true;
}

/* Hands v (owned) to the open container, or makes it the root. */
static int add(struct builder *b, yajl_val v) {
  if (!v) {
    b->oom = true;
    return 0;
  }
  if (b->depth == 0) {
    b->root = v;
    return 1;
  }
  struct frame *f = &b->stack[b->depth - 1];
  if (!make_room(b, f)) {
    yajl_tree_free(v);
    b->oom = true;
    return 0;
  }
  if (YAJL_IS_OBJECT(f->v)) {
    f->v->u.object.keys[f->v->u.object.len] = f->key;
    f->v->u.object.values[f->v->u.object.len++] = v;
    f->key = NULL;
  } else {
    f->v->u.array.values[f->v->u.array.len++] = v;
  }
  return 1;
}

static yajl_val new_value(yajl_type t) {
  yajl_val v = calloc(1, sizeof *v);
  if (v)
    v->type = t;
  return v;
}

static char *copy(const void *s, size_t len) {
  char *c = malloc(len + 1);
  if (c) {
    memcpy(c, s, len);
    c[len] = '\0';
  }
  return c;
}

static int on_null(void *ctx) { return add(ctx, new_value(yajl_t_null)); }

static int on_bool(void *ctx, int b) {
  return add(ctx, new_value(b ? yajl_t_true : yajl_t_false));
}

/* Keeps the literal (json_walk reads it) and, like yajl_tree, the values
 * it converts to exactly. */
static int on_number(void *ctx, const char *s, size_t len) {
  yajl_val v = new_value(yajl_t_number);
  char *r = v ? copy(s, len) : NULL;
  if (!r) {
    free(v);
    return add(ctx, NULL);
  }
  v->u.number.r = r;
  char *end;
  errno = 0;
  v->u.number.i = strtoll(r, &end, 10);
  if (errno == 0 && *end == '\0')
    v->u.number.flags |= YAJL_NUMBER_INT_VALID;
  errno = 0;
  v->u.number.d = strtod(r, &end);
  if (errno == 0 && *end == '\0')
    v->u.number.flags |= YAJL_NUMBER_DOUBLE_VALID;
  return add(ctx, v);
}

static int on_string(void *ctx, const unsigned char *s, size_t len) {
  yajl_val v = new_value(yajl_t_string);
  char *str = v ? copy(s, len) : NULL;
  if (!str) {
    free(v);
    return add(ctx, NULL);
  }
  v->u.string = str;
  return add(ctx, v);
}

static int on_key(void *ctx, const unsigned char *s, size_t len) {
  struct builder *b = ctx;
  struct frame *f = &b->stack[b->depth - 1];
  f->key = copy(s, len);
  b->oom = !f->key;
  return !b->oom;
}

static int open_container(struct builder *b, yajl_type t) {
  if (b->depth == b->stack_cap) {
    size_t cap = b->stack_cap ? b->stack_cap * 2 : 16;
    struct frame *s = reallocarray(b->stack, cap, sizeof *s);
    if (!s)
      return add(b, NULL);
    b->stack = s;
    b->stack_cap = cap;
  }
  yajl_val v = new_value(t);
  if (!v)
    return add(b, NULL);
  b->stack[b->depth++] = (struct frame){.v = v};
  return 1;
}

static int close_container(void *ctx) {
  struct builder *b = ctx;
  return add(b, b->stack[--b->depth].v);
}

static int on_start_map(void *ctx) {
  return open_container(ctx, yajl_t_object);
}

static int on_start_array(void *ctx) {
  return open_container(ctx, yajl_t_array);
}

static const yajl_callbacks callbacks = {
    .yajl_null = on_null,
    .yajl_boolean = on_bool,
    .yajl_number = on_number,
    .yajl_string = on_string,
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_key,
    .yajl_end_map = close_container,
    .yajl_start_array = on_start_array,
    .yajl_end_array = close_container,
};

yajl_val json_tree_parse(const char *buf, size_t len, char *errbuf,
                         size_t errbuf_size, struct json_tree_stats *stats) {
  struct builder b = {.stats = stats};
  if (errbuf_size)
    *errbuf = '\0';
  yajl_handle h = yajl_alloc(&callbacks, NULL, &b);
  if (!h) {
    snprintf(errbuf, errbuf_size, "out of memory");
    return NULL;
  }
  /* As yajl_tree_parse, so messages stay the same. */
  yajl_config(h, yajl_allow_comments, 1);
  const unsigned char *text = (const unsigned char *)buf;
  yajl_status st = yajl_parse(h, text, len);
  if (st == yajl_status_ok)
    st = yajl_complete_parse(h);
  if (st != yajl_status_ok) {
    if (b.oom) {
      snprintf(errbuf, errbuf_size, "out of memory");
    } else {
      unsigned char *msg = yajl_get_error(h, 1, text, len);
      snprintf(errbuf, errbuf_size, "%s", msg ? (char *)msg : "parse error");
      if (msg)
        yajl_free_error(h, msg);
    }
    for (size_t i = 0; i < b.depth; i++) {
      free(b.stack[i].key);
      yajl_tree_free(b.stack[i].v);
    }
    yajl_tree_free(b.root);
    b.root = NULL;
  }
  free(b.stack);
  yajl_free(h);
  return b.root;
}
