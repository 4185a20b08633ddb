"""The state directory is trusted only when it is the caller's; pids from it
are signalled only when they are the container's; --pid-file does not follow
links; a create killed midway can be deleted and retried; sysctls reach only
namespaces coil made; ids cannot alias another container's directory."""

import json
import os
import shutil
import signal
import subprocess
import time

from harness import (check, coil, cgroup_dirs, describe, new_bundle, new_id,
                     new_root, on_cleanup, popen, register_id, state, tmpdir)

NOBODY = 65534


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _start_time(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[19]


def _victim():
    """A host process the attacks aim at; killed after the test."""
    p = subprocess.Popen(["sleep", "1000"], stdin=subprocess.DEVNULL)

    def stop():
        p.kill()
        p.wait()
    on_cleanup(stop)
    return p.pid


def _plant(root, cid, victim, marker, owner):
    """A container directory whose state names the victim, with a poststop
    hook that would leave the marker."""
    d = os.path.join(root, cid)
    os.mkdir(d, 0o700)
    st = {"id": cid, "pid": victim, "pidStart": _start_time(victim),
          "bundle": "/", "rootfs": "/", "created": "2024-01-01T00:00:00Z",
          "started": True, "cgroup": None}
    with open(os.path.join(d, "state.json"), "w") as f:
        json.dump(st, f)
    cfg = {"ociVersion": "1.0.2", "root": {"path": "/"},
           "hooks": {"poststop": [{"path": "/bin/sh",
                                   "args": ["sh", "-c", "touch " + marker]}]}}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    for p in (d, os.path.join(d, "state.json"), os.path.join(d, "config.json")):
        os.chown(p, owner, owner)


def test_untrusted_state_dir_refused():
    victim = _victim()
    marker = os.path.join(tmpdir(), "poststop-ran")
    cases = [("root owned by nobody", NOBODY, 0o755, NOBODY),
             ("root writable by others", 0, 0o777, 0),
             ("container dir owned by nobody", 0, 0o755, NOBODY)]
    for what, root_owner, mode, dir_owner in cases:
        root = new_root()
        cid = new_id()
        _plant(root, cid, victim, marker, dir_owner)
        os.chown(root, root_owner, root_owner)
        os.chmod(root, mode)
        r = coil("delete", "--force", cid, root=root)
        assert r.returncode == 1, what + "\n" + describe(r)
        assert root in r.stderr and "refusing" in r.stderr, describe(r)
        assert len(r.stderr.strip().splitlines()) == 1, describe(r)
        for args in (["kill", cid, "KILL"], ["state", cid], ["start", cid]):
            r = coil(*args, root=root)
            assert r.returncode == 1 and "refusing" in r.stderr, \
                what + "\n" + describe(r)
        # list names the untrusted entry and lists nothing from it
        r = coil("list", "--format", "json", root=root)
        assert "refusing" in r.stderr and cid not in r.stdout, describe(r)
        assert _alive(victim), what
        assert not os.path.exists(marker), what
        if dir_owner == root_owner:
            b = new_bundle(["true"])
            r = coil("create", "--bundle", b, new_id(), root=root)
            assert r.returncode == 1 and "refusing" in r.stderr, describe(r)
        assert os.listdir(root) == [cid], what
        shutil.rmtree(os.path.join(root, cid))


def test_new_root_is_private():
    root = os.path.join(tmpdir(), "state")
    b = new_bundle(["true"])
    cid = new_id()
    check(coil("create", "--bundle", b, cid, root=root))
    for d in (root, os.path.join(root, cid)):
        st = os.stat(d)
        assert st.st_uid == os.geteuid() and st.st_mode & 0o077 == 0, \
            (d, oct(st.st_mode))
    check(coil("delete", "--force", cid, root=root))


def test_pid_outside_the_cgroup_not_signalled():
    victim = _victim()
    root = new_root()
    cid = new_id()
    b = new_bundle(["sleep", "100"])
    check(coil("create", "--bundle", b, cid, root=root))
    init = state(cid, root)["pid"]
    # A recycled pid with a matching start time, as a stale or tampered
    # state would name: it is not in the container's cgroup.
    path = os.path.join(root, cid, "state.json")
    with open(path) as f:
        st = json.load(f)
    st["pid"] = victim
    st["pidStart"] = _start_time(victim)
    with open(path, "w") as f:
        json.dump(st, f)
    r = coil("kill", cid, "KILL", root=root)
    assert r.returncode == 1, describe(r)
    assert state(cid, root)["status"] == "stopped"
    check(coil("delete", "--force", cid, root=root))
    assert _alive(victim)
    deadline = time.time() + 5
    while _alive(init) and time.time() < deadline:
        time.sleep(0.02)
    assert not _alive(init), "the container's own init survived delete"
    assert os.listdir(root) == []


def test_pid_file_links_not_followed():
    d = tmpdir()
    victims = []
    for name in ("pid", "pid.coil-tmp"):
        v = os.path.join(d, "victim-" + name)
        with open(v, "w") as f:
            f.write("precious\n")
        victims.append(v)
        os.symlink(v, os.path.join(d, name))
    pidfile = os.path.join(d, "pid")
    root = new_root()
    cid = new_id()
    b = new_bundle(["sleep", "100"])
    check(coil("create", "--bundle", b, "--pid-file", pidfile, cid,
               root=root))
    pid = state(cid, root)["pid"]
    for v in victims:
        with open(v) as f:
            assert f.read() == "precious\n", v
    assert not os.path.islink(pidfile)
    with open(pidfile) as f:
        assert f.read().strip() == str(pid)
    check(coil("delete", "--force", cid, root=root))


def _wait_dir(root, cid, proc, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.isdir(os.path.join(root, cid)):
            return True
        if proc.poll() is not None:
            return False
    return False


def test_killed_create_can_be_deleted_and_retried():
    root = new_root()
    b = new_bundle(["sleep", "100"])
    # Kill points spread from "the directory just appeared" to "create is
    # done": early ones land before any cgroup or init exists, later ones
    # while init is being set up.
    for delay in (0, 0, 0.002, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.5):
        cid = new_id("k")
        p = popen("create", "--bundle", b, cid, root=root,
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        appeared = _wait_dir(root, cid, p)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
        if not appeared and not os.path.isdir(os.path.join(root, cid)):
            continue
        r = check(coil("list", "--format", "json", root=root))
        listed = {c["id"]: c for c in json.loads(r.stdout or "[]") or []}
        assert cid in listed, "delay %s\n%s" % (delay, describe(r))
        # "creating" while a process of the killed create (its init, about
        # to notice) still holds the directory's lock; then "stopped"
        st = listed[cid]
        assert st["status"] in ("creating", "stopped", "created"), st
        assert st["status"] == "created" or st["pid"] == 0, st
        check(coil("delete", "--force", cid, root=root))
        assert os.listdir(root) == [], (delay, os.listdir(root))
        assert not cgroup_dirs(names=(cid,)), (delay, cgroup_dirs(names=(cid,)))
        check(coil("create", "--bundle", b, cid, root=root))
        check(coil("delete", "--force", cid, root=root))
        assert not cgroup_dirs(names=(cid,)), delay


def _sysctl(key):
    with open("/proc/sys/" + key.replace(".", "/")) as f:
        return f.read().strip()


def _host_sysctl_restorer(key, value):
    def restore():
        if _sysctl(key) != value:
            with open("/proc/sys/" + key.replace(".", "/"), "w") as f:
                f.write(value)
    on_cleanup(restore)


def test_sysctl_needs_a_namespace_coil_made():
    # A network sysctl in the host's network namespace (shared, or joined
    # by path) would change the host: no user namespace here, so nothing
    # else stops the write.
    key = "net.ipv4.tcp_keepalive_intvl"
    before = _sysctl(key)
    _host_sysctl_restorer(key, before)
    _host_sysctl_restorer("kernel.shmmni", _sysctl("kernel.shmmni"))
    plain = [{"type": t} for t in ("pid", "mount", "ipc", "uts")]
    joined_net = plain + [{"type": "network",
                           "path": "/proc/%d/ns/net" % os.getpid()}]
    joined_ipc = [{"type": t} for t in ("pid", "mount", "uts", "network")] + [
        {"type": "ipc", "path": "/proc/%d/ns/ipc" % os.getpid()}]
    cases = [(key, str(int(before) + 1), plain),
             (key, str(int(before) + 1), joined_net),
             ("kernel.shmmni", "1234", joined_ipc),
             ("kernel.domainname", "x.test",
              [{"type": t} for t in ("pid", "mount", "ipc", "network")])]
    for k, value, namespaces in cases:
        root = new_root()
        b = new_bundle(["true"], linux={"namespaces": namespaces,
                                        "uidMappings": [], "gidMappings": [],
                                        "sysctl": {k: value}})
        r = coil("create", "--bundle", b, new_id(), root=root)
        assert r.returncode == 1, describe(r)
        assert "linux.sysctl." + k in r.stderr, describe(r)
        assert os.listdir(root) == []
        assert _sysctl(key) == before


def _fnv1a64(data, h):
    for c in data:
        h = ((h ^ c) * 0x100000001b3) & (2 ** 64 - 1)
    return h


def test_short_id_does_not_alias_a_long_ids_directory():
    root = new_root()
    long_id = register_id("L" * 1024)
    b = new_bundle(["sleep", "100"])
    check(coil("create", "--bundle", b, long_id, root=root))
    raw = long_id.encode()
    # What a "coil-id-" + hash directory name for this id would look like.
    alias = register_id("coil-id-%016x%016x" % (
        _fnv1a64(raw, 0xcbf29ce484222325), _fnv1a64(raw, 0x84222325cbf29ce4)))
    r = coil("state", alias, root=root)
    assert r.returncode == 1 and long_id not in r.stdout, describe(r)
    for args in (["delete", alias], ["kill", alias, "KILL"]):
        r = coil(*args, root=root)
        assert r.returncode == 1, describe(r)
    coil("delete", "--force", alias, root=root)
    st = state(long_id, root)
    assert st["id"] == long_id and st["status"] == "created", st
    r = check(coil("list", "--format", "json", root=root))
    assert [c["id"] for c in json.loads(r.stdout)] == [long_id], describe(r)
    check(coil("delete", "--force", long_id, root=root))
    assert os.listdir(root) == []
