/* Replays the config fuzz harness's seeds (tests/fuzz/corpus/config) and every
 * input that once broke it (tests/fuzz/regressions/config), without libFuzzer:
 * see tests/fuzz/replay.c. */
#define FUZZ_NAME "config"
#include "../fuzz/fuzz_config.c"
#include "../fuzz/replay.c"
