#!/bin/bash
# Runs inside the VM of tests/vm/run.sh --systemd: the systemd cgroup
# driver's tests (tests/vm/systemd), against systemd as PID 1. Ends with the
# runner's "N passed, M failed" line.
set -u
cd "$(dirname "$0")/../.." || exit 1
BIN=${1:-coil}
[ $# -eq 0 ] || shift
if [ "$(cat /proc/1/comm)" != systemd ] || [ ! -S /run/dbus/system_bus_socket ]; then
  echo "not ok 1 - PID 1 is not systemd with a system bus (run through tests/vm/run.sh --systemd)"
  echo "0 passed, 1 failed"
  exit 1
fi
# Test directories on a tmpfs: containerd's overlay snapshots cannot use the
# VM's overlay root (/tmp included) as their upper layer.
mkdir -p /run/coil-test-tmp && mount -t tmpfs -o mode=1777 coil-test-tmp /run/coil-test-tmp || exit 1
export COIL_TEST_TMP=/run/coil-test-tmp
echo "# systemd $(systemctl --version | head -1 | cut -d' ' -f2), up $(cut -d' ' -f1 /proc/uptime) s"
exec /usr/bin/python3 tests/integration/run.py --coil "$PWD/$BIN" --dir tests/vm/systemd "$@"
