/* Replays the gate fuzz harness's seeds (tests/fuzz/corpus/gate) and every
 * input that once broke it (tests/fuzz/regressions/gate), without libFuzzer:
 * see tests/fuzz/replay.c. */
#define FUZZ_NAME "gate"
#include "../fuzz/fuzz_gate.c"
#include "../fuzz/replay.c"
