#!/usr/bin/env bash
# `make bench`: one fresh execution of tests/bench/handler.py under coil, bare
# python3.11 (chroot'ed into the bundle's rootfs), bwrap, crun and runc.
# Prints a table; exits 0 whatever the numbers, nonzero if something failed.
# BENCH_ROUNDS (default 30), BENCH_WARMUP (3), BENCH_SEED, BENCH_TIMEOUT (60).
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ "$(id -u)" != 0 ]; then
  echo "bench: must run as root (chroot, namespaces, OCI runtimes)" >&2
  exit 1
fi
[ -x ./coil ] || { echo "bench: ./coil not built (make coil)" >&2; exit 1; }
if [ ! -d bundles/python/rootfs/usr/lib/python3.11 ]; then
  make -C bundles python
fi

# Bench-only tools: installed here when missing (CI does not run the bench).
# A runtime that still is not there is reported n/a by the driver.
missing=""
command -v bwrap >/dev/null 2>&1 || missing="$missing bubblewrap"
command -v crun >/dev/null 2>&1 || missing="$missing crun"
command -v runc >/dev/null 2>&1 || missing="$missing runc"
[ -x /usr/bin/python3.11 ] || missing="$missing python3.11-minimal"
if [ -n "$missing" ]; then
  echo "bench: installing:$missing" >&2
  export DEBIAN_FRONTEND=noninteractive
  # shellcheck disable=SC2086
  { apt-get update -q && apt-get install -y -q --no-install-recommends $missing; } \
    >/dev/null || echo "bench: apt-get failed; continuing without:$missing" >&2
fi

exec /usr/bin/python3 tests/bench/bench.py
