#!/bin/bash
# `make demo` (for now): a busybox-static bundle under tests/.build/demo,
# config.json from `./coil spec`, then `./coil run`. Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
COIL=${COIL_BIN:-$REPO/coil}
PY=/usr/bin/python3
DEMO=$REPO/tests/.build/demo
ROOT=$(mktemp -d /tmp/coil-demo-root-XXXXXX)
ID=demo-$$

cleanup() {
  "$COIL" --root "$ROOT" delete --force "$ID" >/dev/null 2>&1 || true
  rm -rf "$ROOT" "$DEMO"
}
trap cleanup EXIT

if [ "$(id -u)" != 0 ]; then
  echo "demo: coil needs root (namespaces, cgroups, mounts); run: sudo make demo" >&2
  exit 1
fi

echo "== building the busybox-static bundle in $DEMO"
rm -rf "$DEMO"
mkdir -p "$DEMO"
"$PY" - "$DEMO" <<'PYEOF'
import sys
sys.path.insert(0, "tests/integration")
import harness
print("   rootfs template:", harness.rootfs())
PYEOF
cp -a tests/.build/rootfs "$DEMO/rootfs"
rm -f "$DEMO/rootfs/.coil-rootfs-ok"

echo "== $COIL spec --bundle $DEMO"
"$COIL" spec --bundle "$DEMO"

"$PY" - "$DEMO" <<'PYEOF'
import json, os, sys
sys.path.insert(0, "tests/integration")
import harness
bundle = sys.argv[1]
cfg = harness.read_config(bundle)
cfg["process"]["terminal"] = False
cfg["process"]["args"] = ["sh", "-c",
    "echo hello from coil; hostname; id; cat /proc/self/uid_map"]
harness.write_config(bundle, cfg)
# With a user namespace, the rootfs belongs to the mapped container root.
m = harness._mapped_root(cfg)
if m:
    harness.chown_tree(os.path.join(bundle, "rootfs"), *m)
print("   process.args =", cfg["process"]["args"])
PYEOF

echo "== $COIL --root $ROOT run --bundle $DEMO $ID"
set +e
"$COIL" --root "$ROOT" run --bundle "$DEMO" "$ID"
rc=$?
set -e
echo "== exit status: $rc"
exit $rc
