#include "oci_state.h"

#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>

static void put_str(yajl_gen g, const char *s) {
  yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

static void put_kv(yajl_gen g, const char *k, const char *v) {
  put_str(g, k);
  put_str(g, v);
}

char *oci_state_json(const struct coil_oci_state *s, bool pretty) {
  yajl_gen g = yajl_gen_alloc(NULL);
  if (!g)
    return NULL;
  yajl_gen_config(g, yajl_gen_beautify, pretty ? 1 : 0);
  yajl_gen_config(g, yajl_gen_indent_string, "  ");
  yajl_gen_map_open(g);
  put_kv(g, "ociVersion", COIL_OCI_VERSION);
  put_kv(g, "id", s->id);
  put_kv(g, "status", s->status);
  put_str(g, "pid");
  yajl_gen_integer(g, s->pid);
  put_kv(g, "bundle", s->bundle);
  if (s->rootfs)
    put_kv(g, "rootfs", s->rootfs);
  if (s->created)
    put_kv(g, "created", s->created);
  if (s->oom_killed) {
    put_str(g, "oomKilled");
    yajl_gen_bool(g, 1);
  }
  if (s->pids_limit_hits) {
    put_str(g, "pidsLimitHits");
    yajl_gen_integer(g, (long long)s->pids_limit_hits);
  }
  put_str(g, "annotations");
  yajl_gen_map_open(g);
  if (s->cfg)
    for (size_t i = 0; i < s->cfg->n_annotations; i++)
      put_kv(g, s->cfg->annotations[i].key, s->cfg->annotations[i].value);
  yajl_gen_map_close(g);
  yajl_gen_map_close(g);
  const unsigned char *buf;
  size_t len;
  yajl_gen_get_buf(g, &buf, &len);
  char *out = malloc(len + 2);
  if (out) {
    memcpy(out, buf, len);
    out[len] = '\0';
    if (pretty && (len == 0 || out[len - 1] != '\n'))
      strcat(out, "\n");
  }
  yajl_gen_free(g);
  return out;
}
