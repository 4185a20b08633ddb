#!/bin/bash
# `make fuzz`'s body: runs each libFuzzer harness (build-fuzz/fuzz_NAME) for
# SECONDS seconds on its seeds (tests/fuzz/corpus/NAME) plus what earlier
# runs found (build-fuzz/corpus/NAME, kept between runs). A crash, leak or
# timeout fails the harness and leaves the input in tests/fuzz/crashes/.
# Ends with one line "fuzz: N passed, M failed"; exits 1 on any failure.
set -u
cd "$(dirname "$0")/../.."
SECONDS_EACH=${1:?usage: run.sh SECONDS NAME...}
shift
PASSED=0
FAILED=0
mkdir -p tests/fuzz/crashes

# Longest input per harness: above the largest seed, small enough that each
# run stays fast (the gate and configs cap their input far higher).
max_len() {
  case $1 in
  config) echo 16384 ;;
  *) echo 8192 ;;
  esac
}

for name in "$@"; do
  bin=build-fuzz/fuzz_$name
  work=build-fuzz/corpus/$name
  log=build-fuzz/fuzz_$name.log
  mkdir -p "$work"
  extra=()
  # Unknown syscall and capability names are warned about on stderr, once
  # per input: keep that out of the log (crash reports still get there).
  case $name in config | seccomp) extra+=(-close_fd_mask=2) ;; esac
  [ -f "tests/fuzz/$name.dict" ] && extra+=(-dict="tests/fuzz/$name.dict")
  echo "=== fuzz $name (${SECONDS_EACH}s)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$bin" -max_total_time="$SECONDS_EACH" -max_len="$(max_len "$name")" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="tests/fuzz/crashes/$name-" "${extra[@]}" \
    "$work" "tests/fuzz/corpus/$name" >"$log" 2>&1
  rc=$?
  grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log"
  if [ "$rc" -eq 0 ]; then
    PASSED=$((PASSED + 1))
    echo "fuzz: $name passed"
  else
    FAILED=$((FAILED + 1))
    tail -n 60 "$log"
    echo "fuzz: $name FAILED (exit $rc; input in tests/fuzz/crashes/, log in $log)"
  fi
done
echo "fuzz: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
