/* What every harness in tests/fuzz defines: libFuzzer's entry points. The
 * same sources link either with -fsanitize=fuzzer (make fuzz) or with
 * replay.c's main (make check replays the corpus and the regressions). */
#ifndef COIL_FUZZ_H
#define COIL_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
