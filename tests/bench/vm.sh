#!/bin/bash
# `make bench-vm`: runs inside the VM of tests/vm/run.sh, so the benchmark
# meets a pure cgroup v2 host (coil, crun and runc make their cgroups there,
# as on a v2 distribution) rather than this hybrid one. The VM shares this
# machine's root, so it runs the very binaries and bundle built here. Where
# the VM runs under qemu's emulation (TCG; run.sh prints which accelerator
# it got), every absolute time is several times the host's and means
# nothing: only the paired ratios (`vs bare`, the last line) compare.
# Fewer rounds than the host's bench by default, since emulation is slow;
# BENCH_* (see bench.py) are passed in by the Makefile.
set -euo pipefail
cd "$(dirname "$0")/../.."
export BENCH_ROUNDS=${BENCH_ROUNDS:-10}
export BENCH_WARMUP=${BENCH_WARMUP:-2}
export BENCH_RSS_RUNS=${BENCH_RSS_RUNS:-0}
export BENCH_TIMEOUT=${BENCH_TIMEOUT:-300}
echo "bench-vm: kernel $(uname -r); cgroup v2 controllers:" \
  "$(cat /sys/fs/cgroup/cgroup.subtree_control)" >&2
echo "bench-vm: absolute times are emulated when run.sh says tcg; compare" \
  "the ratios only" >&2
# coil py's default bundle limits CPU time; emulated, it needs more.
tests/vm/emulated_limits.sh
exec /usr/bin/python3 tests/bench/bench.py
