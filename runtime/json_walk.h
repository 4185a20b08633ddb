/* Table-driven reading of a yajl tree into C structs. One table of jw_field
 * rows describes one JSON object: the key, the kind of value, where it goes.
 * The same table frees what reading allocated, so the two cannot drift apart.
 * Unknown keys are ignored (the OCI spec requires it); duplicate keys are
 * rejected. Errors name the JSON path: "process.args[2]: expected string". */
#ifndef COIL_JSON_WALK_H
#define COIL_JSON_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_tree.h>

#include "config.h"
#include "error.h"

enum jw_kind {
  JW_STR,    /* char * */
  JW_BOOL,   /* bool */
  JW_U32,    /* uint32_t */
  JW_INT,    /* int within [min, max] */
  JW_I64,    /* int64_t within [min, max] */
  JW_U64,    /* uint64_t, the full range */
  JW_STRV,   /* struct coil_strv */
  JW_U32V,   /* uint32_t *, count at n_off */
  JW_KV,     /* object of strings: struct coil_kv *, count at n_off */
  JW_OBJECT, /* nested object; its table's offsets are relative to base + off */
  JW_ARRAY,  /* array of objects: element pointer at off, count at n_off */
};

#define JW_REQUIRED 1u /* missing key is an error */
#define JW_ABSOLUTE 2u /* the string, or each string, starts with '/' */
#define JW_NONEMPTY 4u /* no empty string, no empty array */

#define JW_NO_OFF SIZE_MAX

struct jw_walk {
  struct coil_error *err;
  size_t len;
  char path[512]; /* JSON path of the value being read, "" at the root */
};

/* Cross-field rules of one object, run after its fields were read. The path
 * is the object's; v is the object itself. */
typedef int (*jw_check_fn)(struct jw_walk *w, yajl_val v, void *dst);

struct jw_object;

struct jw_field {
  const char *key;
  enum jw_kind kind;
  unsigned flags;
  size_t off;
  size_t has_off; /* bool set to true when the key is present, or JW_NO_OFF */
  size_t n_off;   /* size_t element count for JW_U32V, JW_KV, JW_ARRAY */
  int64_t min, max;
  const char *const *choices; /* NULL-terminated allowed strings, or NULL */
  const struct jw_object *obj;
  /* Extra rule for a JW_STR, run as the value is read; may be NULL. */
  int (*validate)(struct jw_walk *w, const char *s);
};

struct jw_object {
  size_t size; /* of one element, when read by JW_ARRAY */
  const struct jw_field *fields;
  size_t n_fields;
  jw_check_fn check; /* may be NULL */
};

/* Reads object v into base. On failure base holds whatever was read so far,
 * which jw_free_object() releases. */
int jw_read_object(struct jw_walk *w, const struct jw_object *o, yajl_val v,
                   void *base);
void jw_free_object(const struct jw_object *o, void *base);

/* Path bookkeeping for check functions: push returns a mark for jw_pop. */
size_t jw_push_key(struct jw_walk *w, const char *key);
size_t jw_push_index(struct jw_walk *w, size_t i);
void jw_pop(struct jw_walk *w, size_t mark);
/* Sets "<path>: <message>" and returns -1. */
int jw_fail(struct jw_walk *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* s for an error message: one line, no '"', at most cap - 1 bytes. */
const char *jw_printable(char *buf, size_t cap, const char *s);
/* The value of key in object v, or NULL. */
yajl_val jw_get(yajl_val v, const char *key);
/* Index of s in a NULL-terminated list, or -1. */
int jw_choice_index(const char *const *choices, const char *s);

/* Member offset, checked at compile time to have the type the kind expects. */
#define JW_OFF(T, m, type)                                                     \
  __builtin_choose_expr(                                                       \
      __builtin_types_compatible_p(__typeof__(((T *)0)->m), type),             \
      offsetof(T, m), (void)0)
#define JW_HAS(T, m) JW_OFF(T, m, bool)

#define JW_ROW(k, kind_, fl, off_, has_, n_, lo, hi, ch, o)                    \
  {                                                                            \
    .key = (k), .kind = (kind_), .flags = (fl), .off = (off_),                 \
    .has_off = (has_), .n_off = (n_), .min = (lo), .max = (hi),                \
    .choices = (ch), .obj = (o)                                                \
  }

#define JW_STRING(k, T, m, fl)                                                 \
  JW_ROW(k, JW_STR, fl, JW_OFF(T, m, char *), JW_NO_OFF, JW_NO_OFF, 0, 0,      \
         NULL, NULL)
#define JW_ENUM(k, T, m, fl, ch)                                               \
  JW_ROW(k, JW_STR, fl, JW_OFF(T, m, char *), JW_NO_OFF, JW_NO_OFF, 0, 0, ch,  \
         NULL)
#define JW_VALIDATED(k, T, m, fl, fn)                                          \
  {                                                                            \
    .key = (k), .kind = JW_STR, .flags = (fl), .off = JW_OFF(T, m, char *),    \
    .has_off = JW_NO_OFF, .n_off = JW_NO_OFF, .validate = (fn)                 \
  }
#define JW_BOOLEAN(k, T, m)                                                    \
  JW_ROW(k, JW_BOOL, 0, JW_OFF(T, m, bool), JW_NO_OFF, JW_NO_OFF, 0, 0, NULL,  \
         NULL)
#define JW_UINT32(k, T, m, has, fl)                                            \
  JW_ROW(k, JW_U32, fl, JW_OFF(T, m, uint32_t), has, JW_NO_OFF, 0, UINT32_MAX, \
         NULL, NULL)
#define JW_INTEGER(k, T, m, has, lo, hi, fl)                                   \
  JW_ROW(k, JW_INT, fl, JW_OFF(T, m, int), has, JW_NO_OFF, lo, hi, NULL, NULL)
#define JW_INT64(k, T, m, has, lo, fl)                                         \
  JW_ROW(k, JW_I64, fl, JW_OFF(T, m, int64_t), has, JW_NO_OFF, lo, INT64_MAX,  \
         NULL, NULL)
#define JW_UINT64(k, T, m, has, fl)                                            \
  JW_ROW(k, JW_U64, fl, JW_OFF(T, m, uint64_t), has, JW_NO_OFF, 0, 0, NULL,    \
         NULL)
#define JW_STRINGS(k, T, m, has, fl, ch)                                       \
  JW_ROW(k, JW_STRV, fl, JW_OFF(T, m, struct coil_strv), has, JW_NO_OFF, 0, 0, \
         ch, NULL)
#define JW_UINT32S(k, T, m, n)                                                 \
  JW_ROW(k, JW_U32V, 0, JW_OFF(T, m, uint32_t *), JW_NO_OFF,                   \
         JW_OFF(T, n, size_t), 0, UINT32_MAX, NULL, NULL)
#define JW_MAP(k, T, m, n)                                                     \
  JW_ROW(k, JW_KV, 0, JW_OFF(T, m, struct coil_kv *), JW_NO_OFF,               \
         JW_OFF(T, n, size_t), 0, 0, NULL, NULL)
/* An object stored in member m of type ST. */
#define JW_NESTED(k, T, m, ST, has, fl, o)                                     \
  JW_ROW(k, JW_OBJECT, fl, JW_OFF(T, m, ST), has, JW_NO_OFF, 0, 0, NULL, o)
/* An object whose fields live in the enclosing struct itself. */
#define JW_FLAT(k, has, fl, o)                                                 \
  JW_ROW(k, JW_OBJECT, fl, 0, has, JW_NO_OFF, 0, 0, NULL, o)
/* An array of objects: member m of type ET *, its count in member n. */
#define JW_LIST(k, T, m, n, ET, fl, o)                                         \
  JW_ROW(k, JW_ARRAY, fl, JW_OFF(T, m, ET *), JW_NO_OFF, JW_OFF(T, n, size_t), \
         0, 0, NULL, o)

#define JW_TABLE(ET, rows, check_)                                             \
  {                                                                            \
    .size = sizeof(ET), .fields = (rows),                                      \
    .n_fields = sizeof(rows) / sizeof((rows)[0]), .check = (check_)            \
  }

#endif
