/* A JSON document as a yajl tree (struct yajl_val_s, freed with
 * yajl_tree_free), built from yajl's event parser. yajl_tree_parse grows
 * every array and object one element per realloc, which is quadratic when
 * realloc moves the block (always, under ASan): a 300k-element array took
 * minutes. Here element arrays grow geometrically. */
#ifndef COIL_JSON_TREE_H
#define COIL_JSON_TREE_H

#include <stddef.h>
#include <yajl/yajl_tree.h>

struct json_tree_stats {
  size_t grows; /* element arrays (re)allocated: O(log n) per container */
};

/* Parses buf (len bytes, no NUL needed) like yajl_tree_parse: the same tree,
 * the same verbose yajl message in errbuf on a syntax error ("parse error:
 * premature EOF ..."). NULL on failure; stats may be NULL. */
yajl_val json_tree_parse(const char *buf, size_t len, char *errbuf,
                         size_t errbuf_size, struct json_tree_stats *stats);

#endif
