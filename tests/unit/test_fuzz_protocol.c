/* Replays the protocol fuzz harness's seeds (tests/fuzz/corpus/protocol) and
 * every input that once broke it (tests/fuzz/regressions/protocol), without
 * libFuzzer: see tests/fuzz/replay.c. */
#define FUZZ_NAME "protocol"
#include "../fuzz/fuzz_protocol.c"
#include "../fuzz/replay.c"
