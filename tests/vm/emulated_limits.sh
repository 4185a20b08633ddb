#!/bin/bash
# Runs inside the VM of tests/vm/run.sh (suite.sh, tests/bench/vm.sh).
# Emulated CPUs are several times slower than the host's: the VM's copy of
# the default Python bundle (on the tmpfs overlay; the host's is untouched)
# gets 4x its CPU-time limit and wall clock, so that a verdict depends on what
# the code does, not on the emulator's speed. Tests' bundles copy it.
set -euo pipefail
cd "$(dirname "$0")/../.."
/usr/bin/python3 -c '
import json, sys
path = sys.argv[1]
with open(path) as f:
    cfg = json.load(f)
for r in cfg["process"]["rlimits"]:
    if r["type"] == "RLIMIT_CPU":
        r["soft"] *= 4
        r["hard"] *= 4
cfg["sandbox"]["python"]["timeout"] *= 4
with open(path, "w") as f:
    json.dump(cfg, f, indent=2)
' bundles/python/config.json
