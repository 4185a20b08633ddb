#!/bin/bash
# Runs inside the VM of tests/vm/run.sh: the integration tests whose subject
# differs on a pure cgroup v2 host (limits and OOM reporting, the device BPF
# program, freeze, cgroup.kill, stats, the cgroup mount and namespace, exec
# joining the cgroup) and the Python sandbox's limit, layer and attack tests.
# Ends with the runner's "N passed, M failed" line.
set -u
cd "$(dirname "$0")/../.." || exit 1
BIN=${1:-coil}
if [ ! -f /sys/fs/cgroup/cgroup.controllers ] || awk '$3 == "cgroup" { found = 1 } END { exit !found }' /proc/self/mounts; then
  echo "not ok 1 - /sys/fs/cgroup is not a pure cgroup v2 hierarchy"
  echo "0 passed, 1 failed"
  exit 1
fi
echo "# kernel $(uname -r); cgroup v2 controllers: $(cat /sys/fs/cgroup/cgroup.subtree_control)"
ARGS=()
for k in test_cgroups.py test_devices.py test_manage.py test_events.py \
  test_python_limit_memory test_python_limit_cpu test_python_layers.py \
  test_python_security.py \
  ::test_kill_all ::test_killed_ ::test_delete_force ::test_cgroup_namespace \
  ::test_pid_outside_the_cgroup; do
  ARGS+=(-k "$k")
done
# Every attack with the whole stack, and with each layer off whose mechanism
# is the cgroup (the host's run switches off every layer).
export COIL_ATTACK_LAYERS=cgroup,rlimits
exec /usr/bin/python3 tests/integration/run.py --coil "$PWD/$BIN" "${ARGS[@]}"
