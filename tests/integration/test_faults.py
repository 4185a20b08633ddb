"""Faults, concurrency and load: coil killed at every stage, many commands
racing on one id, a full or read-only state filesystem, and a short leak
run of tests/stress/leaks.py."""

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

from harness import (COIL, REPO, cgroup_dirs, check, coil, describe,
                     new_bundle, new_id, new_root, popen,
                     register_id, tmpdir)

# A loop the sandbox runs until it is killed: in spin_bundle() neither its
# timer nor its CPU limit ends it during the test.
SPIN = "while True:\n    pass\n"


def spin_bundle():
    """The default Python bundle with a CPU limit of 60 s (its 1 s would
    end a killed py's orphan anyway, hiding a leak)."""
    src = os.path.join(REPO, "bundles", "python")
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    cfg["root"]["path"] = os.path.join(src, "rootfs")
    for rl in cfg["process"]["rlimits"]:
        if rl["type"] == "RLIMIT_CPU":
            rl["soft"] = rl["hard"] = 60
    d = tmpdir()
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    return d


def _procs_mentioning(text):
    """Live (non-zombie) pids whose command line contains text: coil's init
    is a fork of coil, so it keeps the `--root ROOT` of its command line."""
    out = []
    for ent in os.listdir("/proc"):
        if not ent.isdigit() or int(ent) == os.getpid():
            continue
        try:
            with open("/proc/%s/stat" % ent) as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    continue
            with open("/proc/%s/cmdline" % ent, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmd:
            out.append("%s %s" % (ent, cmd.strip()))
    return out


def _wait_no_procs(text, timeout=5.0):
    deadline = time.time() + timeout
    while True:
        left = _procs_mentioning(text)
        if not left or time.time() >= deadline:
            return left
        time.sleep(0.02)


def _entries(root):
    try:
        return sorted(os.listdir(root))
    except FileNotFoundError:
        return []


def _kill_after(args, root, delay):
    p = popen(*args, root=root, stdout=subprocess.DEVNULL,
              stderr=subprocess.DEVNULL)
    time.sleep(delay)
    p.send_signal(signal.SIGKILL)
    p.wait()


# Kill points from "before anything exists" through setup (about 10 ms on
# an idle machine, longer when loaded) to "the user's code is running".
KILL_DELAYS = [i / 1000.0 for i in range(0, 61, 3)] + [0.1, 0.2, 0.5]


def test_killed_py_takes_its_sandbox_along_and_next_py_cleans_up():
    root = new_root()
    b = spin_bundle()
    for delay in KILL_DELAYS:
        _kill_after(["py", "--bundle", b, "--timeout", "60", "-c", SPIN],
                    root, delay)
        for e in _entries(root):
            register_id(e)
        # Nobody knows a py sandbox's id: it must not outlive its coil.
        left = _wait_no_procs("--root " + root)
        assert not left, "delay %s: still running after coil py was " \
            "killed:\n%s" % (delay, "\n".join(left))
    stale = _entries(root)
    # The next `coil py` on the root removes what killed ones left.
    r = check(coil("py", "-c", "print(6 * 7)", root=root))
    assert r.stdout == "42\n", describe(r)
    assert _entries(root) == [], (stale, _entries(root))
    assert not cgroup_dirs(names=tuple(stale)), cgroup_dirs(
        names=tuple(stale))


def test_py_sweep_spares_live_and_foreign_containers():
    root = new_root()
    # A running py sandbox whose coil is alive is not touched by another.
    p = popen("py", "--bundle", spin_bundle(), "--timeout", "60", "-c", SPIN,
              root=root,
              stdout=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline and not _entries(root):
        time.sleep(0.02)
    live = _entries(root)
    assert len(live) == 1, live
    register_id(live[0])
    # Nor is a stopped container someone named like a py one but that no
    # py made (its "owner" pid is alive: this test).
    foreign = register_id("py-%d-1" % os.getpid())
    b = new_bundle(["true"])
    check(coil("run", "--detach", "--bundle", b, foreign, root=root))
    check(coil("py", "-c", "print(1)", root=root))
    assert _entries(root) == sorted(live + [foreign]), _entries(root)
    assert p.poll() is None
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert not _wait_no_procs("--root " + root)
    check(coil("delete", "--force", foreign, root=root))
    check(coil("py", "-c", "print(1)", root=root))
    assert _entries(root) == [], _entries(root)


def _plant(root, name):
    os.mkdir(os.path.join(root, name), 0o700)
    with open(os.path.join(root, name, "state.json"), "w") as f:
        f.write("{}")


def test_directories_of_commands_killed_midway_are_removed():
    # A create killed between its mkdir and its rename, or a delete killed
    # while emptying the directory, leaves a temporary directory no id
    # names: the next create, or any delete --force, removes it once its
    # owner (the pid in its name) is gone, and leaves a live owner's alone.
    root = new_root()
    dead = subprocess.Popen(["true"])
    dead.wait()
    abandoned = ["~creating.%d.1.2" % dead.pid, "~deleting.%d.1.2" % dead.pid]
    busy = "~creating.%d.1.2" % os.getpid()
    for name in abandoned + [busy]:
        _plant(root, name)
    check(coil("delete", "--force", new_id("none"), root=root))
    assert _entries(root) == [busy], _entries(root)
    for name in abandoned:
        _plant(root, name)
    cid = new_id("tmp")
    check(coil("run", "--bundle", new_bundle(["true"]), cid, root=root))
    assert _entries(root) == [busy], _entries(root)
    os.unlink(os.path.join(root, busy, "state.json"))
    os.rmdir(os.path.join(root, busy))


def test_killed_run_is_deleted_by_delete_force():
    # As runc: a killed foreground `run` may leave its container (its id is
    # the caller's); `delete --force ID` then removes every trace.
    root = new_root()
    b = new_bundle(["sleep", "100"])
    for delay in KILL_DELAYS:
        cid = new_id("kr")
        _kill_after(["run", "--bundle", b, cid], root, delay)
        r = coil("delete", "--force", cid, root=root)
        assert r.returncode == 0, "delay %s\n%s" % (delay, describe(r))
        assert _entries(root) == [], (delay, _entries(root))
        assert not cgroup_dirs(names=(cid,)), (delay, cid)
        left = _wait_no_procs("--root " + root)
        assert not left, "delay %s:\n%s" % (delay, "\n".join(left))
        # The id is free again.
        r = coil("run", "--bundle", new_bundle(["true"]), cid, root=root)
        assert r.returncode == 0, "delay %s\n%s" % (delay, describe(r))


# ---------------------------------------------------------------- races

def _one_line_error(r):
    """A failed command says why on one line starting with "coil:"."""
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    return r.returncode not in (0, None) and len(lines) >= 1 and all(
        x.startswith("coil: ") for x in lines)


def _racing_op(op, cid, root, bundle):
    if op == "create":
        return coil("create", "--bundle", bundle, cid, root=root)
    if op == "start":
        return coil("start", cid, root=root)
    if op == "kill":
        return coil("kill", cid, "KILL", root=root)
    if op == "delete":
        return coil("delete", cid, root=root)
    if op == "delete-force":
        return coil("delete", "--force", cid, root=root)
    return coil("state", cid, root=root)


def _check_racing_result(op, r, problems):
    if r.returncode is None:
        problems.append("%s hung\n%s" % (op, describe(r)))
        return
    if r.returncode == 0:
        if op == "state":
            try:
                st = json.loads(r.stdout)
            except ValueError:
                problems.append("state: not JSON\n" + describe(r))
                return
            if st.get("status") not in ("creating", "created", "running",
                                        "stopped"):
                problems.append("state: bad status\n" + describe(r))
        return
    if not _one_line_error(r):
        problems.append("%s: unclear failure\n%s" % (op, describe(r)))


def _race(ids, n_ops, seed):
    root = new_root()
    bundle = new_bundle(["sleep", "100"])
    rnd = random.Random(seed)
    ops = ["create", "start", "kill", "delete", "delete-force", "state"]
    plan = [(rnd.choice(ops), rnd.choice(ids)) for _ in range(n_ops)]
    problems = []
    lock = threading.Lock()
    it = iter(plan)

    def worker():
        while True:
            with lock:
                nxt = next(it, None)
            if nxt is None:
                return
            op, cid = nxt
            r = _racing_op(op, cid, root, bundle)
            with lock:
                _check_racing_result(op, r, problems)

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not problems, "\n\n".join(problems[:5])
    for cid in ids:
        r = coil("state", cid, root=root)
        if r.returncode == 0:
            json.loads(r.stdout)
        else:
            assert "does not exist" in r.stderr, describe(r)
        check(coil("delete", "--force", cid, root=root))
    assert _entries(root) == [], _entries(root)
    assert not cgroup_dirs(names=tuple(ids)), cgroup_dirs(names=tuple(ids))


def test_100_racing_commands_on_one_id():
    _race([new_id("race")], 100, 1)


def test_100_racing_commands_on_different_ids():
    _race([new_id("race") for _ in range(10)], 100, 2)


# ---------------------------------------------------------------- full root

class _SmallFs:
    """A tmpfs of the test's own as a --root, unmounted on exit (before the
    runner's leak check)."""

    def __init__(self, options):
        self.options = options

    def __enter__(self):
        # Not named like the harness's temp dirs: a test runner of another
        # worktree on the same host would take a new mount there for its
        # own leak and unmount it.
        self.path = tempfile.mkdtemp(prefix="coil-faults-fs-", dir="/tmp")
        subprocess.run(["mount", "-t", "tmpfs", "-o", self.options,
                        "coil-test", self.path], check=True)
        return self.path

    def __exit__(self, *exc):
        subprocess.run(["umount", "-l", self.path], capture_output=True)
        os.rmdir(self.path)


def _fill(d):
    """Fills d's filesystem: data blocks, then inodes."""
    with open(os.path.join(d, "filler"), "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"x" * 4096)
                f.flush()
        except OSError:
            pass
    for i in range(100000):
        try:
            os.mkdir(os.path.join(d, "inode-%d" % i))
        except OSError:
            break


def _only_fillers(d):
    return [e for e in _entries(d)
            if e != "filler" and not e.startswith("inode-")]


def test_create_on_a_full_root_fails_cleanly():
    b = new_bundle(["true"])
    for opts, fill in (("size=64k,mode=700", True),
                       ("size=64k,nr_inodes=1,mode=700", False)):
        with _SmallFs(opts) as root:
            if fill:
                _fill(root)
            cid = new_id("full")
            r = coil("create", "--bundle", b, cid, root=root)
            assert r.returncode == 1, describe(r)
            lines = r.stderr.strip().splitlines()
            assert len(lines) == 1 and root in lines[0] and (
                "No space left" in lines[0]), describe(r)
            assert _only_fillers(root) == [], _entries(root)
            assert not cgroup_dirs(names=(cid,)), cid
            r = coil("py", "-c", "print(1)", root=root)
            assert r.returncode == 125 and root in r.stderr, describe(r)
            assert _only_fillers(root) == [], _entries(root)


def test_create_on_a_read_only_root_fails_cleanly():
    b = new_bundle(["true"])
    with _SmallFs("size=1m,mode=700") as root:
        subprocess.run(["mount", "-o", "remount,ro", root], check=True)
        cid = new_id("ro")
        r = coil("create", "--bundle", b, cid, root=root)
        assert r.returncode == 1, describe(r)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and root in lines[0] and \
            "Read-only file system" in lines[0], describe(r)
        assert _entries(root) == [], _entries(root)
        assert not cgroup_dirs(names=(cid,)), cid


def test_container_on_a_root_that_filled_up_can_be_killed_and_deleted():
    b = new_bundle(["sleep", "100"])
    started, created = new_id("filled"), new_id("filled")
    with _SmallFs("size=256k,mode=700") as root:
        _on_a_root_that_fills_up(root, b, started, created)


def _on_a_root_that_fills_up(root, b, started, created):
    check(coil("create", "--bundle", b, started, root=root))
    check(coil("start", started, root=root))
    check(coil("create", "--bundle", b, created, root=root))
    _fill(root)
    for cid in (started, created):
        r = check(coil("state", cid, root=root))
        assert json.loads(r.stdout)["id"] == cid
        check(coil("kill", cid, "KILL", root=root))
        deadline = time.time() + 10
        while time.time() < deadline:
            r = check(coil("state", cid, root=root))
            if json.loads(r.stdout)["status"] == "stopped":
                break
            time.sleep(0.05)
        assert json.loads(r.stdout)["status"] == "stopped", describe(r)
        check(coil("delete", cid, root=root))
    assert _only_fillers(root) == [], _entries(root)
    assert not cgroup_dirs(names=(started, created))


# ---------------------------------------------------------------- load

def test_leak_script_short_run():
    # The full counts (10000 sequential, 2000 at 16 at a time) are run by
    # hand: tests/stress/leaks.py --help.
    script = os.path.join(REPO, "tests", "stress", "leaks.py")
    root = new_root()
    r = subprocess.run(
        [sys.executable, script, "--coil", COIL, "--root", root,
         "--sequential", "200", "--concurrent", "100", "--jobs", "16"],
        capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, "leaks.py failed (%s)\nstdout:\n%s\nstderr:\n%s" % (
        r.returncode, r.stdout[-4000:], r.stderr[-4000:])
    assert "no leaks" in r.stdout, r.stdout
