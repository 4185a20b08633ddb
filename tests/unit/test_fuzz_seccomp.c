/* Replays the seccomp fuzz harness's seeds (tests/fuzz/corpus/seccomp) and
 * every input that once broke it (tests/fuzz/regressions/seccomp), without
 * libFuzzer: see tests/fuzz/replay.c. */
#define FUZZ_NAME "seccomp"
#include "../fuzz/fuzz_seccomp.c"
#include "../fuzz/replay.c"
