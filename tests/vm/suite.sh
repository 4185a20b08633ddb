#!/bin/bash
# Runs inside the VM of tests/vm/run.sh: the integration tests whose subject
# differs on a pure cgroup v2 host (limits and OOM reporting, blockIO on the
# scratch disk and unified, the device BPF
# program, freeze, cgroup.kill, stats, the cgroup namespace and mount, exec
# joining the cgroup) and the Python sandbox's memory
# limit and attack tests.
# Ends with the runner's "N passed, M failed" line.
set -u
cd "$(dirname "$0")/../.." || exit 1
BIN=${1:-coil}
shift || true
if [ ! -f /sys/fs/cgroup/cgroup.controllers ] ||
  awk '$3 == "cgroup" { found = 1 } END { exit !found }' /proc/self/mounts; then
  echo "not ok 1 - /sys/fs/cgroup is not a pure cgroup v2 hierarchy"
  echo "0 passed, 1 failed"
  exit 1
fi
echo "# kernel $(uname -r); cgroup v2 controllers: $(cat /sys/fs/cgroup/cgroup.subtree_control)"

# Emulated CPUs are slower: the default bundle's CPU and wall-clock limits
# grow 4x in the VM (see the script).
tests/vm/emulated_limits.sh || exit 1

# The scratch disk of run.sh, for the blockIO tests' direct writes.
for s in /sys/block/*/serial; do
  [ "$(cat "$s" 2>/dev/null)" = coil-scratch ] || continue
  d=${s%/serial}
  export COIL_TEST_BLOCK_DEVICE=/dev/${d##*/}
done
if [ -z "${COIL_TEST_BLOCK_DEVICE:-}" ] || [ ! -b "$COIL_TEST_BLOCK_DEVICE" ]; then
  echo "not ok 1 - no scratch disk (serial coil-scratch) in the VM"
  echo "0 passed, 1 failed"
  exit 1
fi

# Of the serve demotion tests only the one a limit triggers: the other is
# timed for a CPU that runs a trivial execution well within 3 s, which an
# emulated VM beside a busy host does not.
ARGS=()
for k in test_cgroups.py test_blockio.py test_cgroup_v2.py test_devices.py \
  test_manage.py test_events.py \
  test_python_limit_memory test_python_attack_ \
  ::test_kill_all ::test_delete_force ::test_cgroup_namespace \
  ::test_pid_outside_the_cgroup ::test_cgroup_mount ::test_cgroup2_mount \
  ::test_exec_joins_init_cgroups ::test_serve_cpu_idle_tenant \
  ::test_serve_demotes_a_tenant_at_a_limit; do
  ARGS+=(-k "$k")
done
# Extra arguments pick the tests instead (tests/vm/run.sh -- tests/vm/suite.sh
# ./coil -k NAME), for working on one of them.
[ $# -eq 0 ] || ARGS=("$@")
# Every attack with the whole stack, and with the cgroup layer off (the
# host's run switches off every layer in turn).
export COIL_ATTACK_LAYERS=cgroup
exec /usr/bin/python3 tests/integration/run.py -v --coil "$PWD/$BIN" "${ARGS[@]}"
