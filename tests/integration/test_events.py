"""events: runc's JSON lines of cgroup stats ({"type":"stats"}) and OOM
kills ({"type":"oom"}), read from this host's cgroups."""

import json
import os
import select
import time

from harness import (check, coil, describe, new_bundle, new_id, new_root,
                     popen, state, wait_status)

MiB = 1024 * 1024

# Waits for SIGUSR1 (init is pid 1: only a trapped signal reaches it).
# The shell says it has its trap (/tmp/armed) before it waits for USR1: a
# USR1 sent earlier would kill it.
WAIT_USR1 = ("trap 'go=1' USR1; echo > /tmp/armed; "
             "while [ -z \"$go\" ]; do sleep 0.05; done; ")


def _started(args, **overrides):
    root = new_root()
    b = new_bundle(args, **overrides)
    cid = new_id()
    check(coil("create", "--bundle", b, cid, root=root))
    check(coil("start", cid, root=root))
    return root, cid, state(cid, root)["pid"]


def _file_in(pid, path, timeout=20):
    """The first line the container writes to path, once it is whole (the
    shell's `>` makes the file before echo writes to it)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open("/proc/%d/root%s" % (pid, path)) as f:
                text = f.read()
            if text.endswith("\n"):
                return text
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError("%s never had a whole line in the container" % path)


def _read_line(p, timeout=20):
    """One stdout line of a running `events`, or None at EOF/timeout."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        r, _, _ = select.select([p.stdout], [], [], 0.2)
        if r:
            line = p.stdout.readline()
            return json.loads(line) if line else None
    return None


def test_events_stats_reflect_memory_and_pids():
    root, cid, pid = _started(
        ["sh", "-c", "sleep 100 & sleep 100 & "
         "x=$(head -c 40000000 /dev/zero | tr '\\0' a); "
         "echo ${#x} > /tmp/ready; sleep 100; echo not-the-last"],
        linux={"resources": {"memory": {"limit": 200 * MiB},
                             "pids": {"limit": 50}}})
    try:
        assert _file_in(pid, "/tmp/ready").strip() == "40000000"
        # The shell forks its last sleep after writing the marker: ask
        # again until the fourth process is there.
        deadline = time.time() + 10
        while True:
            r = check(coil("events", "--stats", cid, root=root))
            lines = r.stdout.splitlines()
            assert len(lines) == 1, describe(r)
            ev = json.loads(lines[0])
            if ev["data"]["pids"]["current"] >= 4 or time.time() > deadline:
                break
            time.sleep(0.05)
        assert ev["type"] == "stats" and ev["id"] == cid, ev
        d = ev["data"]
        for key in ("cpu", "cpuset", "memory", "pids", "blkio", "hugetlb",
                    "intel_rdt", "network_interfaces"):
            assert key in d, (key, sorted(d))
        # sh, two sleeps in the background, the one in the foreground
        assert d["pids"] == {"current": 4, "limit": 50}, d["pids"]
        mem = d["memory"]
        assert mem["usage"]["limit"] == 200 * MiB, mem["usage"]
        # the shell still holds the 40 MB string
        assert mem["usage"]["usage"] >= 40 * 1000 * 1000, mem["usage"]
        assert mem["usage"]["max"] >= mem["usage"]["usage"], mem["usage"]
        assert mem["raw"], mem
        assert d["cpu"]["usage"]["total"] > 0, d["cpu"]
    finally:
        check(coil("delete", "--force", cid, root=root))


def test_events_streams_stats_and_oom_then_exits_when_container_stops():
    root, cid, pid = _started(
        ["sh", "-c", WAIT_USR1 +
         # dd's 64 MiB buffer meets the 16 MiB limit at once, even in an
         # emulated VM; only dd, the largest process, is killed.
         "(dd if=/dev/zero of=/dev/null bs=64M count=1); "
         "echo after-oom > /tmp/ready; sleep 100"],
        linux={"resources": {"memory": {"limit": 16 * MiB,
                                        "swap": 16 * MiB}}})
    p = popen("events", "--interval", "100ms", cid, root=root)
    try:
        first = _read_line(p)
        assert first and first["type"] == "stats" and first["id"] == cid, \
            first
        _file_in(pid, "/tmp/armed")
        check(coil("kill", cid, "USR1", root=root))
        assert _file_in(pid, "/tmp/ready", timeout=60).strip() == "after-oom"
        seen = []
        deadline = time.time() + 20
        while time.time() < deadline:
            ev = _read_line(p)
            assert ev is not None, seen
            seen.append(ev["type"])
            if ev["type"] == "oom":
                assert ev == {"type": "oom", "id": cid}, ev
                break
        assert "oom" in seen, seen
        check(coil("kill", cid, "KILL", root=root))
        out, err = p.communicate(timeout=20)
        assert p.returncode == 0, (p.returncode, err)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
        check(coil("delete", "--force", cid, root=root))


def test_events_oom_of_init_is_reported_before_exit():
    root, cid, pid = _started(
        ["sh", "-c", WAIT_USR1 + "x=$(head -c 100000000 /dev/zero | tr '\\0' a)"],
        linux={"resources": {"memory": {"limit": 16 * MiB,
                                        "swap": 16 * MiB}}})
    p = popen("events", "--interval", "50ms", cid, root=root)
    try:
        # The first line proves events has read the OOM count it starts
        # from; the container's end then ends events.
        assert _read_line(p)["type"] == "stats"
        _file_in(pid, "/tmp/armed")
        check(coil("kill", cid, "USR1", root=root))
        out, err = p.communicate(timeout=30)
        assert p.returncode == 0, (p.returncode, err)
        events = [json.loads(l) for l in out.splitlines()]
        assert {"type": "oom", "id": cid} in events, out
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
        check(coil("delete", "--force", cid, root=root))


def test_events_errors():
    root = new_root()
    r = check(coil("events", "--stats", "nosuch", root=root), 1)
    assert "does not exist" in r.stderr, describe(r)
    r = check(coil("events", "nosuch", root=root), 1)
    assert "does not exist" in r.stderr, describe(r)
    rootc, cid, pid = _started(["true"])
    try:
        wait_status(cid, rootc, "stopped")
        r = check(coil("events", "--stats", cid, root=rootc), 1)
        assert "stopped" in r.stderr, describe(r)
    finally:
        check(coil("delete", cid, root=rootc))
    for bad in ("0", "-1s", "5", "abc", "1x"):
        r = check(coil("events", "--interval", bad, "x", root=root), 1)
        assert "--interval" in r.stderr, (bad, describe(r))
    r = check(coil("events", root=root), 1)
    assert "container ID" in r.stderr, describe(r)


def test_events_created_container_and_sigterm():
    """A created container has stats too (as in runc); events ends on the
    container's end, not before."""
    root = new_root()
    b = new_bundle(["sleep", "100"])
    cid = new_id()
    check(coil("create", "--bundle", b, cid, root=root))
    try:
        r = check(coil("events", "--stats", cid, root=root))
        assert json.loads(r.stdout)["data"]["pids"]["current"] == 1, r.stdout
        p = popen("events", "--interval", "50ms", cid, root=root)
        assert _read_line(p)["type"] == "stats"
        assert p.poll() is None
        check(coil("kill", cid, "KILL", root=root))
        p.communicate(timeout=20)
        assert p.returncode == 0, p.returncode
    finally:
        check(coil("delete", "--force", cid, root=root))
