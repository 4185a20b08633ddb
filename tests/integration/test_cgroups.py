"""cgroup limits on this (hybrid: v1 controllers) host: placement, memory
(OOM kill reported), pids, cpu; removal on delete."""

import concurrent.futures
import json
import os
import re
import time

from harness import (cgroup_hierarchies, check, coil, describe, new_bundle,
                     new_id, new_root, run, sh, state, wait_status)

MiB = 1024 * 1024


def _hier(name):
    """(mount, our path) of the hierarchy holding controller `name`: on a
    pure cgroup v2 host the single unified one, whatever the name."""
    if not _v1():
        return cgroup_hierarchies()[0]
    for mnt, own in cgroup_hierarchies():
        if os.path.basename(mnt) == name:
            return mnt, own
    return None, None


def _own_cg(controller, *rest):
    """<hierarchy>/<this process's cgroup>/rest..."""
    mnt, own = _hier(controller)
    assert mnt, "no %s hierarchy" % controller
    return os.path.join(mnt, own.lstrip("/"), *rest)


def _read(path):
    with open(path) as f:
        return f.read().strip()


def _v1():
    return os.path.isdir("/sys/fs/cgroup/memory")


def test_cgroup_created_with_limits_and_removed():
    if not _v1():
        return _v2_cgroup_created()
    root = new_root()
    res = {"memory": {"limit": 64 * MiB, "swap": 64 * MiB},
           "pids": {"limit": 50},
           "cpu": {"shares": 512, "quota": 50000, "period": 100000}}
    b = new_bundle(["sleep", "100"], linux={"resources": res})
    cid = new_id()
    check(coil("create", "--bundle", b, cid, root=root))
    pid = state(cid, root)["pid"]
    mem = _own_cg("memory", "coil", cid)
    pids = _own_cg("pids", "coil", cid)
    cpu = _own_cg("cpu", "coil", cid)
    try:
        assert _read(os.path.join(mem, "memory.limit_in_bytes")) == \
            str(64 * MiB)
        assert _read(os.path.join(mem, "memory.memsw.limit_in_bytes")) == \
            str(64 * MiB)
        assert _read(os.path.join(pids, "pids.max")) == "50"
        assert _read(os.path.join(cpu, "cpu.shares")) == "512"
        assert _read(os.path.join(cpu, "cpu.cfs_quota_us")) == "50000"
        assert _read(os.path.join(cpu, "cpu.cfs_period_us")) == "100000"
        for d in (mem, pids, cpu):
            assert str(pid) in _read(os.path.join(d, "cgroup.procs")).split(), d
    finally:
        r = coil("delete", "--force", cid, root=root)
    check(r)
    for d in (mem, pids, cpu):
        assert not os.path.exists(d), "%s left after delete" % d


def _v2_cgroup_created():
    root = new_root()
    b = new_bundle(["sleep", "100"], linux={"resources": {
        "memory": {"limit": 64 * MiB, "swap": 96 * MiB},
        "pids": {"limit": 50},
        "cpu": {"shares": 512, "quota": 50000, "period": 100000}}})
    cid = new_id()
    check(coil("create", "--bundle", b, cid, root=root))
    d = _own_cg("", "coil", cid)
    try:
        assert _read(os.path.join(d, "memory.max")) == str(64 * MiB)
        # The spec's swap is memory+swap; v2's swap.max is swap alone.
        assert _read(os.path.join(d, "memory.swap.max")) == str(32 * MiB)
        assert _read(os.path.join(d, "pids.max")) == "50"
        assert _read(os.path.join(d, "cpu.max")) == "50000 100000"
        # runc's shares-to-weight conversion: 1 + (shares-2)*9999/262142.
        assert _read(os.path.join(d, "cpu.weight")) == "20"
    finally:
        check(coil("delete", "--force", cid, root=root))
    assert not os.path.exists(d)


def test_cpu_idle_set_and_updated():
    """linux.resources.cpu.idle: the group gets the CPU only when nothing
    else wants it. The kernel refuses shares for an idle group, so the
    order of the writes matters both ways, at create and at update."""
    root = new_root()
    b = new_bundle(["sleep", "100"], linux={"resources": {
        "cpu": {"shares": 512, "idle": 1}}})
    cid = new_id()
    check(coil("create", "--bundle", b, cid, root=root))
    d = _own_cg("cpu" if _v1() else "", "coil", cid)
    shares = "cpu.shares" if _v1() else "cpu.weight"
    try:
        assert _read(os.path.join(d, "cpu.idle")) == "1"
        check(coil("update", "--resources", "-", cid, root=root,
                   input=json.dumps({"cpu": {"idle": 0, "shares": 1024}})))
        assert _read(os.path.join(d, "cpu.idle")) == "0"
        assert _read(os.path.join(d, shares)) == ("1024" if _v1() else "39")
        check(coil("update", "--resources", "-", cid, root=root,
                   input=json.dumps({"cpu": {"shares": 256, "idle": 1}})))
        assert _read(os.path.join(d, "cpu.idle")) == "1"
        r = coil("update", "--resources", "-", cid, root=root,
                 input=json.dumps({"cpu": {"idle": 2}}))
        assert r.returncode != 0 and "cpu.idle: 2 out of range" in r.stderr, r
        assert _read(os.path.join(d, "cpu.idle")) == "1"
    finally:
        check(coil("delete", "--force", cid, root=root))
    assert not os.path.exists(d)


def _create_pids30(prefix):
    """Creates `sleep 100` with a pids limit of 30 at cgroupsPath
    prefix + its id, in a new root: (root, cid, the cgroupsPath)."""
    root = new_root()
    cid = new_id()
    path = prefix + cid
    b = new_bundle(["sleep", "100"], linux={"cgroupsPath": path,
                                            "resources": {"pids": {
                                                "limit": 30}}})
    check(coil("create", "--bundle", b, cid, root=root))
    return root, cid, path


def test_relative_cgroups_path():
    root, cid, rel = _create_pids30("rel-")
    d = _own_cg("pids", "coil", rel)
    try:
        assert _read(os.path.join(d, "pids.max")) == "30", d
    finally:
        check(coil("delete", "--force", cid, root=root))
    assert not os.path.exists(d)


def test_absolute_cgroups_path():
    root, cid, path = _create_pids30("/coil-abs-")
    mnt, _ = _hier("pids")
    d = os.path.join(mnt, path.lstrip("/"))
    try:
        pid = state(cid, root)["pid"]
        assert _read(os.path.join(d, "pids.max")) == "30", d
        assert str(pid) in _read(os.path.join(d, "cgroup.procs")).split()
    finally:
        check(coil("delete", "--force", cid, root=root))
    assert not os.path.exists(d)


def test_pids_limit_stops_fork_bomb():
    t0 = time.time()
    r = sh("i=0; while [ $i -lt 100 ]; do sleep 3 & i=$((i+1)); done; "
           "echo all-forked",
           linux={"resources": {"pids": {"limit": 20}}}, timeout=60)
    dt = time.time() - t0
    assert r.returncode not in (0, None), describe(r)
    assert "all-forked" not in r.stdout, describe(r)
    assert ("can't fork" in r.stderr or
            "Resource temporarily unavailable" in r.stderr), describe(r)
    assert dt < 30, dt
    # the host can still fork
    assert os.system("true") == 0


def test_pids_limit_allows_under_limit():
    r = check(sh("i=0; while [ $i -lt 5 ]; do sleep 0.2 & i=$((i+1)); done; "
                 "wait; echo all-done",
                 linux={"resources": {"pids": {"limit": 20}}}))
    assert "all-done" in r.stdout, describe(r)


HOG = ('x=$(head -c 100000000 /dev/zero | tr "\\0" a); '
       'echo "survived ${#x}"')


def _mem(limit=16 * MiB):
    return {"resources": {"memory": {"limit": limit, "swap": limit}}}


def test_memory_limit_oom_kill_reported_by_run():
    r = sh(HOG, linux=_mem(), timeout=60)
    assert r.returncode == 137, describe(r)
    assert "survived" not in r.stdout, describe(r)
    assert "OOM" in r.stderr, describe(r)


def test_memory_oom_in_state():
    root = new_root()
    b = new_bundle(["sh", "-c", HOG], linux=_mem())
    cid = new_id()
    check(coil("create", "--bundle", b, cid, root=root))
    check(coil("start", cid, root=root))
    st = wait_status(cid, root, "stopped", timeout=30)
    r = coil("state", cid, root=root)
    check(coil("delete", cid, root=root))
    assert st.get("oomKilled") is True, st
    assert "oomKilled" in r.stdout, describe(r)


def test_memory_enough_no_oom():
    root = new_root()
    b = new_bundle(["sh", "-c", 'x=$(head -c 1000000 /dev/zero | tr "\\0" a);'
                    ' echo "survived ${#x}"'], linux=_mem(64 * MiB))
    r = check(run(b, root=root))
    assert "survived 1000000" in r.stdout, describe(r)
    assert "OOM" not in r.stderr, describe(r)


def test_memory_limit_too_low_for_setup_named():
    # Init joins its cgroup first, so a limit below what setup needs gets it
    # OOM-killed before the program runs: the error names the limit (runc's
    # names it too), and nothing is left behind.
    root = new_root()
    b = new_bundle(["true"], linux=_mem(4096))
    for cmd, code in (("run", 125), ("create", 1)):
        r = coil(cmd, "--bundle", b, new_id(), root=root, timeout=60)
        assert r.returncode == code, describe(r)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, describe(r)
        assert "linux.resources.memory.limit" in lines[0], describe(r)
        assert "OOM" in lines[0], describe(r)
        assert os.listdir(root) == [], describe(r)


def _cpu_seconds(stderr):
    """user+sys from busybox `time` output."""
    tot = 0.0
    for k in ("user", "sys"):
        m = re.search(r"^%s\s+(\d+)m\s*([\d.]+)s" % k, stderr, re.M)
        assert m, stderr
        tot += int(m.group(1)) * 60 + float(m.group(2))
    m = re.search(r"^real\s+(\d+)m\s*([\d.]+)s", stderr, re.M)
    return tot, int(m.group(1)) * 60 + float(m.group(2))


CPU_LOOP = "time timeout 2 sh -c 'while :; do :; done'"


def test_cpu_quota():
    r = sh(CPU_LOOP, linux={"resources": {"cpu": {"quota": 10000,
                                                  "period": 100000}}})
    cpu, real = _cpu_seconds(r.stderr)
    assert real >= 1.8, describe(r)
    assert cpu < 0.6, "used %.2fs cpu in %.2fs with a 10%% quota\n%s" % (
        cpu, real, describe(r))


def test_cpu_unlimited_baseline():
    # the same loop without a quota uses far more cpu: the measurement works
    r = sh(CPU_LOOP)
    cpu, real = _cpu_seconds(r.stderr)
    assert cpu > 1.0, describe(r)


def test_cpuset():
    assert os.cpu_count() >= 2, "our machines have 2 cpus; cpuset needs them"
    r = check(sh("grep Cpus_allowed_list /proc/self/status",
                 linux={"resources": {"cpu": {"cpus": "1", "mems": "0"}}}))
    assert r.stdout.split() == ["Cpus_allowed_list:", "1"], describe(r)


def test_pids_exhaustion_reported():
    # docs/design.md, Layers: OOM kills and pid exhaustion are reported as such
    r = sh("i=0; while [ $i -lt 100 ]; do sleep 3 & i=$((i+1)); done",
           linux={"resources": {"pids": {"limit": 20}}}, timeout=60)
    coil_lines = [l for l in r.stderr.splitlines() if l.startswith("coil")]
    assert any("pids" in l.lower() for l in coil_lines), describe(r)


def test_hugetlb_limit_and_memory_reservation():
    assert os.path.isdir("/sys/kernel/mm/hugepages/hugepages-2048kB"), \
        "our machines offer 2MB huge pages"
    root = new_root()
    cid = new_id()
    b = new_bundle(["sleep", "100"], linux={"resources": {
        "hugepageLimits": [{"pageSize": "2MB", "limit": 4 * MiB}],
        "memory": {"limit": 64 * MiB, "reservation": 8 * MiB}}})
    check(coil("create", "--bundle", b, cid, root=root))
    try:
        hier = {os.path.basename(m): (m, own) for m, own in
                cgroup_hierarchies()}
        found = None
        for name in ("hugetlb", "unified", "cgroup"):
            if name in hier:
                m, own = hier[name]
                d = os.path.join(m, own.lstrip("/"), "coil", cid)
                for f in ("hugetlb.2MB.max", "hugetlb.2MB.limit_in_bytes"):
                    if os.path.exists(os.path.join(d, f)):
                        found = _read(os.path.join(d, f))
        assert found == str(4 * MiB), found
        if _v1():
            assert _read(_own_cg("memory", "coil", cid,
                                 "memory.soft_limit_in_bytes")) == str(8 * MiB)
    finally:
        check(coil("delete", "--force", cid, root=root))


def test_parallel_containers_share_the_coil_parent():
    # Each delete removes the shared "coil" parent cgroup when it is empty,
    # while other creates make their cgroups inside it: creates must retry
    # when the parent vanishes under them, never fail.
    root = new_root()
    bundle = new_bundle(["true"])

    def one(i):
        return coil("run", "--bundle", bundle, new_id("par"), root=root)

    with concurrent.futures.ThreadPoolExecutor(3) as ex:
        results = list(ex.map(one, range(90)))
    bad = [r for r in results if r.returncode != 0]
    assert not bad, describe(bad[0])
