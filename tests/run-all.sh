#!/bin/bash
# `make check`'s body (the binaries are built by make first): every unit test
# binary (TAP), then the integration suite, for the plain build and then the
# ASan+UBSan build, and for the plain build the cgroup v2 part inside a VM
# and the systemd cgroup driver's tests in a VM that boots systemd.
# COIL_TEST_VARIANTS=plain|asan|"plain asan" picks variants,
# COIL_TEST_PARTS=unit|integration|vm|"unit integration vm" picks the parts, and
# COIL_TEST_FILTER=SUBSTR runs only the integration tests whose name has it.
# Ends with exactly one line "N passed, M failed"; exits 1 on any failure.
set -u
cd "$(dirname "$0")/.." || exit 1
REPO=$PWD
PY=/usr/bin/python3 # Debian's python (has jsonschema), never a pyenv one
VARIANTS=${COIL_TEST_VARIANTS:-plain asan}
PARTS=${COIL_TEST_PARTS:-unit integration vm}
PASSED=0
FAILED=0
SUMMARY=()

# Runs one TAP producer; adds its ok / not ok lines to the totals. A binary
# that exits non-zero without reporting a failure counts as one failure.
run_tap() { # label cmd...
  local label=$1 out rc ok nok
  shift
  echo "=== $label"
  out=$(mktemp)
  "$@" 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  ok=$(grep -cE '^ok( |$)' "$out")
  nok=$(grep -cE '^not ok( |$)' "$out")
  rm -f "$out"
  if [ "$rc" -ne 0 ] && [ "$nok" -eq 0 ]; then
    echo "not ok - $label exited with status $rc without a failing test"
    nok=1
  fi
  if [ "$ok" -eq 0 ] && [ "$nok" -eq 0 ]; then
    echo "not ok - $label reported no tests"
    nok=1
  fi
  PASSED=$((PASSED + ok))
  FAILED=$((FAILED + nok))
  SUMMARY+=("$label: $ok passed, $nok failed")
}

# One binary per tests/unit/test_*.c; a missing one is a failure (make unit /
# make unit-asan builds them).
run_units() { # dir label
  local dir=$1 label=$2 src t
  for src in tests/unit/test_*.c; do
    t=$dir/tests/$(basename "$src" .c)
    if [ ! -x "$t" ]; then
      echo "not ok - $label unit: $t is missing (run make first)"
      FAILED=$((FAILED + 1))
      SUMMARY+=("$label unit: $t missing")
      continue
    fi
    run_tap "$label unit $(basename "$t")" "$t"
  done
}

run_integration() { # coil-binary label [run.py args...]
  local bin=$1 label=$2
  shift 2
  if [ ! -x "$bin" ]; then
    echo "not ok - $label: $bin is missing (run make first)"
    FAILED=$((FAILED + 1))
    SUMMARY+=("$label integration: $bin missing")
    return
  fi
  run_tap "$label integration ($bin)" env COIL_BIN="$REPO/$bin" \
    "$PY" tests/integration/run.py --coil "$REPO/$bin" "$@" \
    ${COIL_TEST_FILTER:+-k "$COIL_TEST_FILTER"}
}

# The cgroup v2 part of the suite inside a VM with a pure v2 hierarchy
# (tests/vm); this host's controllers are on v1. Plain build only: the
# emulated VM is slow, and the sanitizers find the same bugs on the host.
run_vm() { # coil-binary label
  local bin=$1 label=$2
  run_tap "$label vm: pure cgroup v2 ($bin)" tests/vm/run.sh -- tests/vm/suite.sh "$bin"
  run_tap "$label vm: systemd cgroup driver ($bin)" tests/vm/run.sh --systemd -- tests/vm/systemd_suite.sh "$bin"
}

# The VMs beside the plain integration suite: the emulated VM keeps about
# one CPU busy and touches nothing on this host that the suite's leak check
# looks at (mounts, cgroups, state, processes of its bundles), and the
# suite alone keeps the two CPUs only partly busy. The VMs' output is
# shown, and counted, after the suite's.
run_integration_and_vm() { # coil-binary label
  local bin=$1 label=$2 vm_out vm_pid
  if ! want_part vm; then
    want_part integration && run_integration "$bin" "$label"
    return
  fi
  if ! want_part integration; then
    run_vm "$bin" "$label"
    return
  fi
  local passed0=$PASSED failed0=$FAILED
  vm_out=$(mktemp)
  (run_vm "$bin" "$label" >"$vm_out" 2>&1
   printf '%s\n' "${SUMMARY[@]}" | tail -n 2 >"$vm_out.summary"
   echo "$PASSED $FAILED" >"$vm_out.counts") &
  vm_pid=$!
  run_integration "$bin" "$label"
  wait "$vm_pid"
  cat "$vm_out"
  if [ -s "$vm_out.counts" ]; then
    local p f
    read -r p f <"$vm_out.counts"
    PASSED=$((PASSED + p - passed0))
    FAILED=$((FAILED + f - failed0))
    mapfile -t -O "${#SUMMARY[@]}" SUMMARY <"$vm_out.summary"
  else
    echo "not ok - $label vm: the VM run ended without its counts"
    FAILED=$((FAILED + 1))
    SUMMARY+=("$label vm: ended without its counts")
  fi
  rm -f "$vm_out" "$vm_out.summary" "$vm_out.counts"
}

want_part() { # unit|integration|vm
  case " $PARTS " in *" $1 "*) return 0 ;; esac
  return 1
}

for p in $PARTS; do
  case $p in
  unit | integration | vm) ;;
  *)
    echo "not ok - unknown part '$p' in COIL_TEST_PARTS"
    FAILED=$((FAILED + 1))
    ;;
  esac
done

for v in $VARIANTS; do
  case $v in
  plain)
    want_part unit && run_units build plain
    run_integration_and_vm coil plain
    ;;
  asan)
    # Leaks are reported at exit of each coil command; abort_on_error turns
    # any finding into a failing command (and so a failing test).
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:exitcode=99:detect_stack_use_after_return=1:strict_string_checks=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    export LSAN_OPTIONS=${LSAN_OPTIONS:-}
    want_part unit && run_units build-asan asan
    # On the plain build only, to keep CI under 30 minutes on machines where
    # every sanitized process costs a tenth of a second more: tests that
    # reach coil's code by paths the rest of the suite drives directly under
    # the sanitizers. The client tests (podman, containerd, the CRI plugin)
    # and the OAST listener's go through an engine or the listener and spend
    # their time in it; the race loops, the attack matrix (each attack with
    # each layer off) and the load tests repeat, hundreds of times, commands
    # that the mount, device, layer and lifecycle tests run here once each.
    want_part integration && run_integration coil-asan asan \
      --skip test_clients.py --skip test_clients_more.py --skip test_cri.py \
      --skip test_oast.py --skip test_oast_serve.py --skip test_races.py \
      --skip test_python_security.py::test_python_attack_ \
      --skip test_faults.py::test_leak_script_short_run \
      --skip test_faults.py::test_100_racing_commands
    unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
    ;;
  *)
    echo "not ok - unknown variant '$v' in COIL_TEST_VARIANTS"
    FAILED=$((FAILED + 1))
    ;;
  esac
done

echo "=== summary"
for s in "${SUMMARY[@]}"; do echo "# $s"; done
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
