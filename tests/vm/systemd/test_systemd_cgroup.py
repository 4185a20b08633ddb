"""The systemd cgroup driver (--systemd-cgroup) against a real systemd: run
by tests/vm/systemd_suite.sh in the VM of tests/vm/run.sh --systemd, where
systemd is PID 1 on a pure cgroup v2 hierarchy."""

import os
import subprocess
import time

from harness import (COIL, base_config, check, coil, describe, new_bundle,
                     new_id, new_root, state)

MiB = 1024 * 1024
CG = "/sys/fs/cgroup"


def _read(path):
    with open(path) as f:
        return f.read().strip()


def _show(unit, *props):
    """`systemctl show unit -p ...` as a dict."""
    r = subprocess.run(["systemctl", "show", unit] +
                       ["--property=" + p for p in props],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return dict(l.split("=", 1) for l in r.stdout.splitlines() if "=" in l)


def _gone(unit):
    return _show(unit, "LoadState")["LoadState"] == "not-found"


def _sd(*args, **kw):
    return coil("--systemd-cgroup", *args, **kw)


def test_scope_limits_update_pause_delete():
    """A slice:prefix:name path makes prefix-name.scope in the slice, holding
    init, with the limits as unit properties and in the cgroup files;
    update, pause and kill --all act on it; delete stops the unit."""
    root = new_root()
    cid = new_id()
    unit = "coiltest-%s.scope" % cid
    b = new_bundle(["sleep", "100"], linux={
        "cgroupsPath": "system.slice:coiltest:" + cid,
        "resources": {"memory": {"limit": 64 * MiB, "swap": 96 * MiB},
                      "pids": {"limit": 30},
                      "cpu": {"shares": 1024, "quota": 50000,
                              "period": 100000}}})
    check(_sd("create", "--bundle", b, cid, root=root))
    d = os.path.join(CG, "system.slice", unit)
    try:
        st = state(cid, root)
        props = _show(unit, "ActiveState", "Slice", "Delegate", "MemoryMax",
                      "MemorySwapMax", "TasksMax", "CPUWeight",
                      "CPUQuotaPerSecUSec", "ControlGroup")
        assert props == {
            "ActiveState": "active", "Slice": "system.slice",
            "Delegate": "yes", "MemoryMax": str(64 * MiB),
            "MemorySwapMax": str(32 * MiB), "TasksMax": "30",
            "CPUWeight": "39", "CPUQuotaPerSecUSec": "500ms",
            "ControlGroup": "/system.slice/" + unit}, props
        assert _read(os.path.join(d, "cgroup.procs")).split() == [
            str(st["pid"])]
        assert _read(os.path.join(d, "memory.max")) == str(64 * MiB)
        assert _read(os.path.join(d, "memory.swap.max")) == str(32 * MiB)
        assert _read(os.path.join(d, "pids.max")) == "30"
        assert _read(os.path.join(d, "cpu.max")) == "50000 100000"
        assert _read(os.path.join(d, "cpu.weight")) == "39"

        check(_sd("update", "--pids-limit", "20", "--memory", "48M", cid,
                  root=root))
        props = _show(unit, "TasksMax", "MemoryMax")
        assert props == {"TasksMax": "20", "MemoryMax": str(48 * MiB)}, props
        assert _read(os.path.join(d, "pids.max")) == "20"
        assert _read(os.path.join(d, "memory.max")) == str(48 * MiB)

        check(coil("start", cid, root=root))
        check(coil("pause", cid, root=root))
        assert _read(os.path.join(d, "cgroup.freeze")) == "1"
        assert state(cid, root)["status"] == "paused"
        check(coil("resume", cid, root=root))
        assert _read(os.path.join(d, "cgroup.freeze")) == "0"
        r = check(coil("ps", "--format", "json", cid, root=root))
        assert str(st["pid"]) in r.stdout, describe(r)
        check(coil("kill", "--all", cid, "KILL", root=root))
    finally:
        check(coil("delete", "--force", cid, root=root))
    assert _gone(unit), _show(unit, "LoadState", "ActiveState")
    assert not os.path.exists(d)


def test_nested_slice_and_run_to_exit():
    """A dashed slice nests (systemd makes the parents); the container's
    cgroup mount is its scope; a foreground run exits with the container's
    status; its scope ends with it, and delete of the kept container finds
    the unit gone."""
    root = new_root()
    cid = new_id()
    slice_ = "coiltest-%s.slice" % cid.replace("-", "")
    mounts = base_config([])["mounts"] + [
        {"destination": "/sys/fs/cgroup", "type": "cgroup",
         "source": "cgroup", "options": ["nosuid", "noexec"]}]
    b = new_bundle(["sh", "-c", "cat /proc/self/cgroup /sys/fs/cgroup/pids.max;"
                    " exit 7"], mounts=mounts, linux={
        "cgroupsPath": "%s:p:%s" % (slice_, cid),
        "resources": {"pids": {"limit": 25}},
        "namespaces": [{"type": t} for t in
                       ("pid", "mount", "ipc", "uts", "user", "network")]})
    try:
        r = _sd("run", "--keep", "--bundle", b, cid, root=root)
        assert r.returncode == 7, describe(r)
        want = "/coiltest.slice/%s/p-%s.scope" % (slice_, cid)
        assert r.stdout.split() == ["0::" + want, "25"], describe(r)
        assert "warning" not in r.stderr, describe(r)
        check(coil("delete", cid, root=root))
        assert _gone("p-%s.scope" % cid)
    finally:
        subprocess.run(["systemctl", "stop", slice_], timeout=30)


def test_unit_taken_fails_cleanly():
    """A second container asking for the same unit fails naming it; the
    first keeps its scope, the second leaves nothing."""
    root = new_root()
    first, second = new_id(), new_id()
    path = "system.slice:coiltest:" + first
    b = new_bundle(["sleep", "100"], linux={"cgroupsPath": path})
    check(_sd("create", "--bundle", b, first, root=root))
    try:
        r = _sd("create", "--bundle", b, second, root=root)
        assert r.returncode not in (0, None), describe(r)
        assert "coiltest-%s.scope" % first in r.stderr, describe(r)
        assert not os.path.exists(os.path.join(root, second)), describe(r)
        props = _show("coiltest-%s.scope" % first, "ActiveState")
        assert props["ActiveState"] == "active", props
    finally:
        check(coil("delete", "--force", first, root=root))


def test_limit_rejected_stops_the_unit():
    """A limit the kernel refuses once the unit is up (a CPU this VM does
    not have) fails the create with the field named, and the unit is
    stopped: nothing is left."""
    root = new_root()
    cid = new_id()
    unit = "coiltest-%s.scope" % cid
    b = new_bundle(["sleep", "100"], linux={
        "cgroupsPath": "system.slice:coiltest:" + cid,
        "resources": {"cpu": {"cpus": "1000"}}})
    r = _sd("create", "--bundle", b, cid, root=root)
    assert r.returncode not in (0, None), describe(r)
    assert "linux.resources.cpu.cpus" in r.stderr, describe(r)
    assert not os.path.exists(os.path.join(root, cid)), describe(r)
    assert _gone(unit), _show(unit, "LoadState", "ActiveState")
    assert not os.path.exists(os.path.join(CG, "system.slice", unit))


def test_containerd_systemd_cgroup():
    """containerd's SystemdCgroup path (ctr --runc-systemd-cgroup: the
    runc shim passes --systemd-cgroup and the slice:prefix:name path):
    the task runs in its scope, and removing it stops the unit."""
    from test_clients import IMAGE, Containerd

    c = Containerd()
    cid = new_id("ctr")
    unit = "coilctr-%s.scope" % cid
    r = c.ctr("run", "-d", "--runc-binary", COIL, "--runc-systemd-cgroup",
              "--cgroup", "system.slice:coilctr:" + cid, IMAGE, cid,
              "sleep", "1000")
    assert r.returncode == 0, describe(r)
    r = c.ctr("task", "ls")
    assert cid in r.stdout and "RUNNING" in r.stdout, r.stdout
    pid = next(l.split()[1] for l in r.stdout.splitlines() if cid in l)
    props = _show(unit, "ActiveState", "Slice")
    assert props == {"ActiveState": "active", "Slice": "system.slice"}, props
    procs = _read(os.path.join(CG, "system.slice", unit, "cgroup.procs"))
    assert procs.split() == [pid], procs
    assert c.ctr("task", "kill", "-s", "SIGKILL", cid).returncode == 0
    for _ in range(100):
        if "STOPPED" in c.ctr("task", "ls").stdout:
            break
        time.sleep(0.1)
    assert c.ctr("task", "rm", cid).returncode == 0
    assert c.ctr("container", "rm", cid).returncode == 0
    assert _gone(unit), _show(unit, "LoadState", "ActiveState")
