"""pause, resume, ps and update on this host's cgroups (v1 freezer, memory
and pids controllers on this hybrid host; v2 when the host is unified)."""

import json
import os
import time

from harness import (check, coil, describe, new_bundle, new_id, new_root,
                     state, wait_status)

# A counter in the container's /tmp, read from the host through init's root.
COUNTER = 'i=0; while :; do i=$((i+1)); echo $i > /tmp/n; done'


def _started(args, **overrides):
    root = new_root()
    b = new_bundle(args, **overrides)
    cid = new_id()
    check(coil("create", "--bundle", b, cid, root=root))
    check(coil("start", cid, root=root))
    return root, cid, state(cid, root)["pid"]


def _count(pid):
    """The container's counter (None while it is being rewritten)."""
    try:
        with open("/proc/%d/root/tmp/n" % pid) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _wait_count(pid, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        n = _count(pid)
        if n:
            return n
        time.sleep(0.02)
    raise AssertionError("the counter never started")


def _advancing(pid, tries=50):
    """Whether the counter moves within tries * 20 ms."""
    first = _wait_count(pid)
    for _ in range(tries):
        time.sleep(0.02)
        n = _count(pid)
        if n is not None and n != first:
            return True
    return False


def _cgroup_of(pid, controller):
    """Host path of pid's cgroup in a v1 controller's hierarchy, or the
    unified one (controller "")."""
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if (controller and controller in ctrls.split(",")) or \
                    (not controller and not ctrls):
                base = "/sys/fs/cgroup/" + controller if controller else \
                    ("/sys/fs/cgroup/unified"
                     if os.path.isdir("/sys/fs/cgroup/unified")
                     else "/sys/fs/cgroup")
                return base + path
    raise AssertionError("pid %d has no %r cgroup" % (pid, controller))


def _alive(pid):
    """pid runs (a zombie waiting for its reaper does not)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _v1(controller):
    return os.path.exists("/sys/fs/cgroup/%s/cgroup.procs" % controller)


def _read(path):
    with open(path) as f:
        return f.read().strip()


def test_pause_stops_processes_and_resume_continues():
    root, cid, pid = _started(["sh", "-c", COUNTER])
    try:
        assert _advancing(pid), "the counter does not run"
        check(coil("pause", cid, root=root))
        st = state(cid, root)
        assert st["status"] == "paused" and st["pid"] == pid, st
        if _v1("freezer"):
            assert _read(os.path.join(_cgroup_of(pid, "freezer"),
                                      "freezer.state")) == "FROZEN"
        lst = json.loads(check(coil("list", "--format", "json",
                                    root=root)).stdout)
        assert [c["status"] for c in lst] == ["paused"], lst
        frozen_at = _count(pid)
        time.sleep(0.3)
        assert _count(pid) == frozen_at, "the counter moved while paused"
        check(coil("resume", cid, root=root))
        assert state(cid, root)["status"] == "running"
        assert _advancing(pid), "the counter did not resume"
    finally:
        check(coil("delete", "--force", cid, root=root))


def test_pause_errors():
    root, cid, pid = _started(["sleep", "100"])
    try:
        r = check(coil("resume", cid, root=root), 1)
        assert "not paused" in r.stderr and len(r.stderr.splitlines()) == 1, \
            describe(r)
        check(coil("pause", cid, root=root))
        r = check(coil("pause", cid, root=root), 1)
        assert "already" in r.stderr, describe(r)
        r = check(coil("delete", cid, root=root), 1)
        assert "paused" in r.stderr, describe(r)
        check(coil("resume", cid, root=root))
        check(coil("kill", cid, "KILL", root=root))
        wait_status(cid, root, "stopped")
        r = check(coil("pause", cid, root=root), 1)
        assert "stopped" in r.stderr and len(r.stderr.splitlines()) == 1, \
            describe(r)
        r = check(coil("pause", "no-such-container", root=root), 1)
        assert len(r.stderr.splitlines()) == 1, describe(r)
    finally:
        check(coil("delete", "--force", cid, root=root))


def test_delete_force_of_paused_container():
    # A child in the background too: both must be gone with the cgroups.
    root, cid, pid = _started(["sh", "-c", "sleep 100 & " + COUNTER])
    _wait_count(pid)
    dirs = [_cgroup_of(pid, c) for c in ("freezer", "memory", "pids")
            if _v1(c)] or [_cgroup_of(pid, "")]
    try:
        check(coil("pause", cid, root=root))
    finally:
        r = coil("delete", "--force", cid, root=root, timeout=20)
    check(r)
    assert not _alive(pid), "init survived"
    for d in dirs:
        assert not os.path.exists(d), "%s left after delete" % d
    assert check(coil("list", "-q", root=root)).stdout == ""


def test_kill_paused_container_with_sigkill():
    root, cid, pid = _started(["sh", "-c", COUNTER])
    try:
        check(coil("pause", cid, root=root))
        check(coil("kill", cid, "KILL", root=root))
        wait_status(cid, root, "stopped")
    finally:
        check(coil("delete", "--force", cid, root=root))


def test_ps_json_and_table():
    root, cid, pid = _started(["sh", "-c", "sleep 100 & sleep 200 & wait"])
    try:
        deadline = time.time() + 10
        while True:
            pids = json.loads(check(coil("ps", "--format", "json", cid,
                                         root=root)).stdout)
            if len(pids) == 3 or time.time() > deadline:
                break
            time.sleep(0.05)
        assert sorted(pids)[0] == pid and len(pids) == 3, pids
        out = check(coil("ps", cid, root=root)).stdout.splitlines()
        assert out[0].split()[1] == "PID", out
        assert sorted(int(line.split()[1]) for line in out[1:]) == \
            sorted(pids), out
        assert any("sleep 200" in line for line in out), out
        out = check(coil("ps", cid, "-eo", "pid,comm", root=root)).stdout
        rows = [line.split() for line in out.splitlines()]
        assert rows[0] == ["PID", "COMMAND"], rows
        assert sorted(r[1] for r in rows[1:]) == ["sh", "sleep", "sleep"], rows
        r = check(coil("ps", "--format", "yaml", cid, root=root), 1)
        assert "--format" in r.stderr, describe(r)
    finally:
        check(coil("delete", "--force", cid, root=root))


def test_ps_options_after_id_are_ps_options_even_h():
    """As runc: after the ID, -h is ps's (and ps -h without a terminal
    lists nothing, so ps fails); before it, coil's help."""
    root, cid, pid = _started(["sleep", "100"])
    try:
        r = check(coil("ps", cid, "-h", root=root), 1)
        assert "usage:" not in r.stdout, describe(r)
        assert "ps failed" in r.stderr, describe(r)
        out = check(coil("ps", cid, "-o", "pid", "-p", str(pid),
                         root=root)).stdout.split()
        assert out == ["PID", str(pid)], out
        r = check(coil("ps", "-h", cid, root=root))
        assert r.stdout.startswith("usage: coil [global options] ps"), \
            describe(r)
    finally:
        check(coil("delete", "--force", cid, root=root))


def test_update_memory_and_pids():
    res = {"memory": {"limit": 64 << 20}, "pids": {"limit": 50}}
    root, cid, pid = _started(
        ["sh", "-c", "trap go=1 USR1; until [ -n \"$go\" ]; do sleep 0.05; "
         "done; sh -c 'for i in 1 2 3 4 5 6; do sleep 100 & done'; "
         "echo forked > /tmp/done; exec sleep 100"],
        linux={"resources": res})
    mem = _cgroup_of(pid, "memory") if _v1("memory") else _cgroup_of(pid, "")
    pids_dir = _cgroup_of(pid, "pids") if _v1("pids") else mem
    mem_file = "memory.limit_in_bytes" if _v1("memory") else "memory.max"
    try:
        assert _read(os.path.join(mem, mem_file)) == str(64 << 20)
        check(coil("update", "--memory", "96m", "--pids-limit", "4", cid,
                   root=root))
        assert _read(os.path.join(mem, mem_file)) == str(96 << 20)
        assert _read(os.path.join(pids_dir, "pids.max")) == "4"
        body = json.dumps({"memory": {"limit": 80 << 20}})
        check(coil("update", "--resources", "-", cid, root=root, input=body))
        assert _read(os.path.join(mem, mem_file)) == str(80 << 20)
        assert _read(os.path.join(pids_dir, "pids.max")) == "4", \
            "a limit not given changed"
        # A child shell forks six sleeps: with init, four pids are all the
        # container may have (the child shell fails at its fork limit).
        check(coil("kill", cid, "USR1", root=root))
        deadline = time.time() + 10
        while time.time() < deadline and \
                not os.path.exists("/proc/%d/root/tmp/done" % pid):
            time.sleep(0.05)
        n = len(json.loads(check(coil("ps", "--format", "json", cid,
                                      root=root)).stdout))
        assert 1 < n <= 4, "%d processes under a pids limit of 4" % n
        assert int(dict(line.split() for line in open(
            os.path.join(pids_dir, "pids.events")))["max"]) > 0
    finally:
        check(coil("delete", "--force", cid, root=root))


def test_update_errors():
    root, cid, pid = _started(["sleep", "100"])
    try:
        r = check(coil("update", "--resources", "-", cid, root=root,
                       input='{"memory": {"limit": "lots"}}'), 1)
        assert "linux.resources.memory.limit" in r.stderr and \
            len(r.stderr.splitlines()) == 1, describe(r)
        r = check(coil("update", "--memory", "12q", cid, root=root), 1)
        assert "--memory" in r.stderr, describe(r)
        r = check(coil("update", "--memory", "64m", "--resources", "-", cid,
                       root=root, input="{}"), 1)
        assert "not both" in r.stderr, describe(r)
        r = check(coil("update", cid, root=root), 1)
        assert "nothing to update" in r.stderr, describe(r)
        r = check(coil("update", "--resources", "-", cid, root=root,
                       input='{"hugepageLimits": [{"pageSize": "2MB", '
                             '"limit": 0}]}'), 1)
        assert "hugepageLimits" in r.stderr, describe(r)
        check(coil("kill", cid, "KILL", root=root))
        wait_status(cid, root, "stopped")
        r = check(coil("update", "--pids-limit", "10", cid, root=root), 1)
        assert "stopped" in r.stderr and len(r.stderr.splitlines()) == 1, \
            describe(r)
    finally:
        check(coil("delete", "--force", cid, root=root))


def test_update_raises_memory_and_swap_together():
    # memsw may never be below the memory limit, so raising both past the
    # old memsw works only with memsw written first (and lowering them only
    # with the memory limit first).
    if not _v1("memory") or not os.path.exists(
            "/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes"):
        return
    res = {"memory": {"limit": 64 << 20, "swap": 64 << 20}}
    root, cid, pid = _started(["sleep", "100"], linux={"resources": res})
    mem = _cgroup_of(pid, "memory")
    try:
        check(coil("update", "--memory", "128m", "--memory-swap", "256m", cid,
                   root=root))
        assert _read(os.path.join(mem, "memory.limit_in_bytes")) == \
            str(128 << 20)
        assert _read(os.path.join(mem, "memory.memsw.limit_in_bytes")) == \
            str(256 << 20)
        check(coil("update", "--memory", "32m", "--memory-swap", "48m", cid,
                   root=root))
        assert _read(os.path.join(mem, "memory.limit_in_bytes")) == \
            str(32 << 20)
        assert _read(os.path.join(mem, "memory.memsw.limit_in_bytes")) == \
            str(48 << 20)
        check(coil("update", "--memory", "-1", cid, root=root))
        assert int(_read(os.path.join(mem, "memory.memsw.limit_in_bytes"))) \
            > 1 << 40, "memsw not lifted with an unlimited memory"
    finally:
        check(coil("delete", "--force", cid, root=root))
