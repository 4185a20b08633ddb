/* config.json from a buffer: parse and validate, then free. */
#include "config.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct coil_config *c = NULL;
  struct coil_error err = {0};
  if (config_parse((const char *)data, size, &c, &err) == 0)
    config_free(c);
  return 0;
}
