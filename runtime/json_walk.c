#include "json_walk.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

/* ---- the path ---------------------------------------------------------- */

static size_t path_append(struct jw_walk *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static size_t path_append(struct jw_walk *w, const char *fmt, ...) {
  size_t mark = w->len;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(w->path + w->len, sizeof w->path - w->len, fmt, ap);
  va_end(ap);
  if (n > 0)
    w->len += (size_t)n < sizeof w->path - w->len ? (size_t)n
                                                  : sizeof w->path - w->len - 1;
  return mark;
}

static bool is_identifier(const char *s) {
  if (!isalpha((unsigned char)*s) && *s != '_')
    return false;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_')
      return false;
  return true;
}

const char *jw_printable(char *buf, size_t cap, const char *s) {
  size_t i = 0;
  for (; s[i] && i < cap - 1; i++) {
    unsigned char c = (unsigned char)s[i];
    buf[i] = (c < 0x20 || c == 0x7f || c == '"') ? '?' : (char)c;
  }
  buf[i] = '\0';
  if (s[i] && cap > 4)
    memcpy(buf + cap - 4, "...", 4);
  return buf;
}

size_t jw_push_key(struct jw_walk *w, const char *key) {
  if (is_identifier(key))
    return path_append(w, "%s%s", w->len ? "." : "", key);
  /* Keys like "net.ipv4.ip_forward" stay readable as ["..."]. */
  char safe[128];
  return path_append(w, "[\"%s\"]", jw_printable(safe, sizeof safe, key));
}

size_t jw_push_index(struct jw_walk *w, size_t i) {
  return path_append(w, "[%zu]", i);
}

void jw_pop(struct jw_walk *w, size_t mark) {
  w->len = mark;
  w->path[mark] = '\0';
}

int jw_fail(struct jw_walk *w, const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return coil_error_set(w->err, EINVAL, "%s: %s", w->len ? w->path : "(root)",
                        what);
}

static int fail_oom(struct jw_walk *w) {
  return coil_error_set(w->err, ENOMEM, "%s: out of memory",
                        w->len ? w->path : "(root)");
}

int jw_choice_index(const char *const *choices, const char *s) {
  for (int i = 0; choices[i]; i++)
    if (strcmp(choices[i], s) == 0)
      return i;
  return -1;
}

/* ---- scalars ----------------------------------------------------------- */

static int check_string(struct jw_walk *w, const struct jw_field *f,
                        const char *s) {
  char safe[128];
  /* On arrays JW_NONEMPTY is about the array, not its strings. */
  if ((f->flags & JW_NONEMPTY) && f->kind == JW_STR && !*s)
    return jw_fail(w, "must not be empty");
  if ((f->flags & JW_ABSOLUTE) && *s != '/')
    return jw_fail(w, "\"%s\" is not an absolute path",
                   jw_printable(safe, sizeof safe, s));
  if (f->choices && jw_choice_index(f->choices, s) < 0) {
    char list[256] = "";
    for (size_t i = 0, o = 0; f->choices[i] && o < sizeof list; i++)
      o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "",
                            f->choices[i]);
    return jw_fail(w, "\"%s\" is not one of: %s",
                   jw_printable(safe, sizeof safe, s), list);
  }
  return f->validate ? f->validate(w, s) : 0;
}

static int read_string(struct jw_walk *w, const struct jw_field *f, yajl_val v,
                       char **dst) {
  if (!YAJL_IS_STRING(v))
    return jw_fail(w, "expected string");
  if (check_string(w, f, v->u.string) < 0)
    return -1;
  *dst = strdup(v->u.string);
  return *dst ? 0 : fail_oom(w);
}

/* yajl flags a number as integer only when it fits long long (not even
 * LLONG_MIN does), so the literal decides: one without fraction or exponent is
 * an integer, converted with the range of the target type. "1.0" is not an
 * integer, as in Go's encoding/json. */
static bool is_integer_literal(const char *r) {
  if (*r == '-')
    r++;
  if (!*r)
    return false;
  for (; *r; r++)
    if (!isdigit((unsigned char)*r))
      return false;
  return true;
}

static int read_signed(struct jw_walk *w, const struct jw_field *f, yajl_val v,
                       int64_t *out) {
  if (!YAJL_IS_NUMBER(v) || !is_integer_literal(v->u.number.r))
    return jw_fail(w, "expected integer");
  errno = 0;
  long long n = strtoll(v->u.number.r, NULL, 10);
  if (errno == ERANGE || n < f->min || n > f->max)
    return jw_fail(w, "%s out of range [%" PRId64 ", %" PRId64 "]",
                   v->u.number.r, f->min, f->max);
  *out = n;
  return 0;
}

static int read_u64(struct jw_walk *w, yajl_val v, uint64_t *out) {
  const char *r = YAJL_IS_NUMBER(v) ? v->u.number.r : "";
  if (!is_integer_literal(r))
    return jw_fail(w, "expected integer");
  errno = 0;
  unsigned long long n = strtoull(r, NULL, 10);
  /* strtoull negates "-5" silently; only "-0" is a non-negative literal. */
  if (errno == ERANGE || (*r == '-' && strcmp(r, "-0") != 0))
    return jw_fail(w, "%s out of range [0, %" PRIu64 "]", r, UINT64_MAX);
  *out = n;
  return 0;
}

static int read_bool(struct jw_walk *w, yajl_val v, bool *out) {
  if (!YAJL_IS_TRUE(v) && !YAJL_IS_FALSE(v))
    return jw_fail(w, "expected boolean");
  *out = YAJL_IS_TRUE(v);
  return 0;
}

/* ---- containers -------------------------------------------------------- */

static int cmp_keys(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* yajl keeps every duplicate and lookups would find the first, while most
 * JSON tools (Go's runc, Python's jsonschema) take the last: refuse rather
 * than read something else than what the operator's tools show. */
static int check_unique_keys(struct jw_walk *w, yajl_val v) {
  size_t n = v->u.object.len;
  if (n < 2)
    return 0;
  cleanup_free const char **keys = malloc(n * sizeof *keys);
  if (!keys)
    return fail_oom(w);
  memcpy(keys, v->u.object.keys, n * sizeof *keys);
  qsort(keys, n, sizeof *keys, cmp_keys);
  for (size_t i = 1; i < n; i++)
    if (strcmp(keys[i - 1], keys[i]) == 0) {
      jw_push_key(w, keys[i]);
      return jw_fail(w, "duplicate key");
    }
  return 0;
}

yajl_val jw_get(yajl_val v, const char *key) {
  for (size_t i = 0; i < v->u.object.len; i++)
    if (strcmp(v->u.object.keys[i], key) == 0)
      return v->u.object.values[i];
  return NULL;
}

static int read_kv(struct jw_walk *w, yajl_val v, struct coil_kv **dst,
                   size_t *n) {
  if (!YAJL_IS_OBJECT(v))
    return jw_fail(w, "expected object");
  if (check_unique_keys(w, v) < 0)
    return -1;
  if (v->u.object.len == 0)
    return 0;
  *dst = calloc(v->u.object.len, sizeof **dst);
  if (!*dst)
    return fail_oom(w);
  for (size_t i = 0; i < v->u.object.len; i++) {
    size_t mark = jw_push_key(w, v->u.object.keys[i]);
    yajl_val val = v->u.object.values[i];
    if (!YAJL_IS_STRING(val))
      return jw_fail(w, "expected string");
    struct coil_kv *kv = &(*dst)[(*n)++];
    kv->key = strdup(v->u.object.keys[i]);
    kv->value = strdup(val->u.string);
    if (!kv->key || !kv->value)
      return fail_oom(w);
    jw_pop(w, mark);
  }
  return 0;
}

/* Reads one array element into slot; the JW_*V and JW_ARRAY kinds differ
 * only in this. */
typedef int read_elem_fn(struct jw_walk *w, const struct jw_field *f,
                         yajl_val v, void *slot);

static int read_string_at(struct jw_walk *w, const struct jw_field *f,
                          yajl_val v, void *slot) {
  return read_string(w, f, v, slot);
}

static int read_u32(struct jw_walk *w, const struct jw_field *f, yajl_val v,
                    void *slot) {
  int64_t x;
  if (read_signed(w, f, v, &x) < 0)
    return -1;
  *(uint32_t *)slot = (uint32_t)x;
  return 0;
}

static int read_object_at(struct jw_walk *w, const struct jw_field *f,
                          yajl_val v, void *slot) {
  return jw_read_object(w, f->obj, v, slot);
}

/* Reads the array v into *items, elements of size bytes and spare zeroed
 * ones after them; an empty array without spare leaves *items alone. The
 * block is zeroed and *n set up front, so a failure half-way frees
 * cleanly. */
static int read_array(struct jw_walk *w, const struct jw_field *f, yajl_val v,
                      read_elem_fn *read_elem, size_t size, size_t spare,
                      char **items, size_t *n) {
  if (!YAJL_IS_ARRAY(v))
    return jw_fail(w, "expected array");
  size_t len = v->u.array.len;
  if ((f->flags & JW_NONEMPTY) && len == 0)
    return jw_fail(w, "must not be empty");
  if (len + spare == 0)
    return 0;
  *items = calloc(len + spare, size);
  if (!*items)
    return fail_oom(w);
  *n = len;
  for (size_t i = 0; i < len; i++) {
    size_t mark = jw_push_index(w, i);
    if (read_elem(w, f, v->u.array.values[i], *items + i * size) < 0)
      return -1;
    jw_pop(w, mark);
  }
  return 0;
}

/* ---- fields and objects ------------------------------------------------ */

static int read_value(struct jw_walk *w, const struct jw_field *f, yajl_val v,
                      char *base) {
  char *dst = base + f->off;
  size_t *n = f->n_off == JW_NO_OFF ? NULL : (size_t *)(base + f->n_off);
  int64_t x;
  switch (f->kind) {
  case JW_STR:
    return read_string(w, f, v, (char **)dst);
  case JW_BOOL:
    return read_bool(w, v, (bool *)dst);
  case JW_U32:
    return read_u32(w, f, v, dst);
  case JW_INT:
    if (read_signed(w, f, v, &x) < 0)
      return -1;
    *(int *)dst = (int)x;
    return 0;
  case JW_I64:
    return read_signed(w, f, v, (int64_t *)dst);
  case JW_U64:
    return read_u64(w, v, (uint64_t *)dst);
  case JW_STRV: {
    struct coil_strv *sv = (struct coil_strv *)dst;
    /* One spare slot: v[n] is NULL so args and env go to execve as they are. */
    return read_array(w, f, v, read_string_at, sizeof *sv->v, 1,
                      (char **)&sv->v, &sv->n);
  }
  case JW_U32V:
    return read_array(w, f, v, read_u32, sizeof(uint32_t), 0, (char **)dst, n);
  case JW_KV:
    return read_kv(w, v, (struct coil_kv **)dst, n);
  case JW_OBJECT:
    return jw_read_object(w, f->obj, v, dst);
  case JW_ARRAY:
    return read_array(w, f, v, read_object_at, f->obj->size, 0, (char **)dst,
                      n);
  }
  return jw_fail(w, "unsupported field kind");
}

int jw_read_object(struct jw_walk *w, const struct jw_object *o, yajl_val v,
                   void *base) {
  if (!YAJL_IS_OBJECT(v))
    return jw_fail(w, "expected object");
  if (check_unique_keys(w, v) < 0)
    return -1;
  for (size_t i = 0; i < o->n_fields; i++) {
    const struct jw_field *f = &o->fields[i];
    yajl_val fv = jw_get(v, f->key);
    size_t mark = jw_push_key(w, f->key);
    if (!fv) {
      if (f->flags & JW_REQUIRED)
        return jw_fail(w, "required");
    } else {
      if (read_value(w, f, fv, base) < 0)
        return -1;
      if (f->has_off != JW_NO_OFF)
        *((bool *)((char *)base + f->has_off)) = true;
    }
    jw_pop(w, mark);
  }
  return o->check ? o->check(w, v, base) : 0;
}

/* ---- freeing ----------------------------------------------------------- */

static void free_value(const struct jw_field *f, char *base) {
  char *p = base + f->off;
  size_t n = f->n_off == JW_NO_OFF ? 0 : *(size_t *)(base + f->n_off);
  switch (f->kind) {
  case JW_STR:
    free(*(char **)p);
    break;
  case JW_STRV: {
    struct coil_strv *sv = (struct coil_strv *)p;
    for (size_t i = 0; i < sv->n; i++)
      free(sv->v[i]);
    free(sv->v);
    break;
  }
  case JW_U32V:
    free(*(uint32_t **)p);
    break;
  case JW_KV: {
    struct coil_kv *kv = *(struct coil_kv **)p;
    for (size_t i = 0; i < n; i++) {
      free(kv[i].key);
      free(kv[i].value);
    }
    free(kv);
    break;
  }
  case JW_OBJECT:
    jw_free_object(f->obj, p);
    break;
  case JW_ARRAY: {
    char *items = *(char **)p;
    for (size_t i = 0; i < n; i++)
      jw_free_object(f->obj, items + i * f->obj->size);
    free(items);
    break;
  }
  case JW_BOOL:
  case JW_U32:
  case JW_INT:
  case JW_I64:
  case JW_U64:
    break;
  }
}

void jw_free_object(const struct jw_object *o, void *base) {
  for (size_t i = 0; i < o->n_fields; i++)
    free_value(&o->fields[i], base);
}
