#include "id.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int id_char_ok(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.' || c == '+';
}

int id_validate(const char *id, struct coil_error *err) {
  if (!id || !*id)
    return coil_error_set(err, 0, "container id: must not be empty");
  size_t len = strlen(id);
  if (len > COIL_ID_MAX)
    return coil_error_set(err, 0, "container id: longer than %d bytes",
                          COIL_ID_MAX);
  if (strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
    return coil_error_set(err, 0, "container id \"%s\": not a valid id", id);
  for (size_t i = 0; i < len; i++)
    if (!id_char_ok((unsigned char)id[i]))
      return coil_error_set(err, 0,
                            "container id: invalid byte 0x%02x at offset %zu "
                            "(allowed: letters, digits, _ . + -)",
                            (unsigned char)id[i], i);
  return 0;
}

#define HASHED_PREFIX "coil-id="

static uint64_t fnv1a64(const char *s, uint64_t h) {
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 0x100000001b3ULL;
  }
  return h;
}

void id_dirname(const char *id, char out[COIL_ID_DIRNAME_MAX]) {
  if (strlen(id) < COIL_ID_DIRNAME_MAX) {
    strcpy(out, id);
    return;
  }
  /* Two FNV-1a passes with different offsets: ids are chosen by the
   * caller, not an adversary, so collisions need only be improbable. */
  snprintf(out, COIL_ID_DIRNAME_MAX, HASHED_PREFIX "%016llx%016llx",
           (unsigned long long)fnv1a64(id, 0xcbf29ce484222325ULL),
           (unsigned long long)fnv1a64(id, 0x84222325cbf29ce4ULL));
}

bool id_is_dirname(const char *name) {
  size_t len = strlen(name), plen = strlen(HASHED_PREFIX);
  if (strncmp(name, HASHED_PREFIX, plen) == 0)
    return len == plen + 32 &&
           strspn(name + plen, "0123456789abcdef") == len - plen;
  struct coil_error ignored;
  return len < COIL_ID_DIRNAME_MAX && id_validate(name, &ignored) == 0;
}
