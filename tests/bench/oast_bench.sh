#!/usr/bin/env bash
# `make bench` (second part): the OAST listener under dnsperf, handler
# answers through coil (a private coil serve by default) beside a static
# zone. See tests/bench/oast_bench.py for the environment
# (OAST_BENCH_SECONDS shortens a run, OAST_BENCH_BACKEND=py measures coil py).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "$(id -u)" != 0 ]; then
  echo "oast bench: must run as root (coil creates namespaces and cgroups)" >&2
  exit 1
fi
[ -x ./coil ] || { echo "oast bench: ./coil not built (make coil)" >&2; exit 1; }
if [ ! -d bundles/python/rootfs/usr/lib/python3.11 ]; then
  make -C bundles python
fi
exec /usr/bin/python3 tests/bench/oast_bench.py
