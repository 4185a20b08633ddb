#include "id.h"

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
    return coil_error_set(err, 0, "container id: longer than %d bytes", COIL_ID_MAX);
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
