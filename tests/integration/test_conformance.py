"""Runtime-spec MUSTs the OCI conformance suite (runtime-tools validation/)
checks: shared and joined namespaces, delete and start semantics, hook
state, capability names, memory resources, cgroups a client moved init to."""

import json
import os
import subprocess
import time

from harness import (NAMESPACES, cgroup_hierarchies, check, coil, describe,
                     mount_points, new_bundle, new_id, new_root, on_cleanup,
                     place_rootfs, state, tmpdir, wait_status, write_config)


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _without(*types):
    return [{"type": t} for t in NAMESPACES if t not in types]


# ------------------------------------------------- mount namespace sharing

def _shared_mounts_bundle(args, **linux):
    """A bundle without a new mount namespace: no masked or read-only paths
    and a writable root (those need a mount), the rest as usual."""
    lx = dict(namespaces=_without("mount"), maskedPaths=None,
              readonlyPaths=None)
    lx.update(linux)
    b = new_bundle(args, root={"path": "rootfs", "readonly": False},
                   linux=lx)
    with open(os.path.join(b, "rootfs", "marker"), "w") as f:
        f.write("in the rootfs\n")
    return b


def _mounts_under(path):
    return [m for m in mount_points()
            if m[0] == path or m[0].startswith(path + "/")]


def test_no_mount_namespace_shares_the_hosts_and_mounts_nothing():
    b = _shared_mounts_bundle(
        ["sh", "-c", "cat /marker; [ -e /proc/self ] && echo proc || "
         "echo no proc; pwd"])
    r = coil("run", "--bundle", b, new_id(), root=new_root())
    check(r)
    # no /proc is mounted in the container: the config's mounts are left out
    assert r.stdout.splitlines() == ["in the rootfs", "no proc", "/"], \
        describe(r)
    assert "mounts: not mounted" in r.stderr, describe(r)
    assert _mounts_under(b) == []


def test_no_mount_namespace_init_is_in_the_hosts():
    root = new_root()
    b = _shared_mounts_bundle(["sleep", "100"])
    cid = new_id()
    check(coil("create", "--bundle", b, cid, root=root))
    pid = state(cid, root)["pid"]
    assert os.readlink("/proc/%d/ns/mnt" % pid) == \
        os.readlink("/proc/self/ns/mnt")
    assert os.readlink("/proc/%d/root" % pid) == os.path.join(b, "rootfs")
    check(coil("delete", "--force", cid, root=root))


def test_no_mount_namespace_refuses_what_needs_a_mount():
    for over, field in (({"root": {"path": "rootfs", "readonly": True}},
                         "root.readonly"),
                        ({"linux": {"maskedPaths": ["/proc/kcore"]}},
                         "linux.maskedPaths"),
                        ({"linux": {"readonlyPaths": ["/proc/sys"]}},
                         "linux.readonlyPaths")):
        b = _shared_mounts_bundle(["true"])
        with open(os.path.join(b, "config.json")) as f:
            cfg = json.load(f)
        for k, v in over.items():
            cfg[k].update(v)
        write_config(b, cfg)
        root = new_root()
        r = coil("create", "--bundle", b, new_id(), root=root)
        assert r.returncode == 1, describe(r)
        assert r.stderr.startswith("coil: " + field + ":"), describe(r)
        assert os.listdir(root) == []


def _unshared_mount_ns():
    """A process in a new mount namespace of its own: its pid."""
    p = subprocess.Popen(["unshare", "-m", "--propagation", "private",
                          "sleep", "100"])
    on_cleanup(lambda: (p.kill(), p.wait()))
    mine = os.readlink("/proc/self/ns/mnt")
    deadline = time.time() + 5
    while os.readlink("/proc/%d/ns/mnt" % p.pid) == mine:
        assert time.time() < deadline, "unshare never switched"
        time.sleep(0.01)
    return p.pid


def test_mount_namespace_joined_by_path():
    pid = _unshared_mount_ns()
    ns = "/proc/%d/ns/mnt" % pid
    # (without a user namespace: a mount namespace the host's user
    # namespace owns cannot be joined from a new one)
    b = _shared_mounts_bundle(
        ["sh", "-c", "cat /marker"],
        namespaces=_without("mount", "user") + [{"type": "mount",
                                                 "path": ns}],
        uidMappings=None, gidMappings=None)
    root = new_root()
    cid = new_id()
    check(coil("create", "--bundle", b, cid, root=root))
    init = state(cid, root)["pid"]
    assert os.readlink("/proc/%d/ns/mnt" % init) == os.readlink(ns)
    check(coil("delete", "--force", cid, root=root))
    with open("/proc/%d/mountinfo" % pid) as f:
        theirs = f.read()
    assert b not in theirs, theirs
    assert _mounts_under(b) == []


# ------------------------------------------------- namespaces by path

def test_namespace_path_of_the_wrong_type_is_refused():
    pid = _unshared_mount_ns()
    for t in ("network", "ipc", "uts", "pid", "cgroup", "mount"):
        wrong = "/proc/%d/ns/%s" % (pid, "net" if t == "mount" else "mnt")
        nss = _without(t) + [{"type": t, "path": wrong}]
        b = (_shared_mounts_bundle(["true"], namespaces=nss) if t == "mount"
             else new_bundle(["true"], linux={"namespaces": nss}))
        root = new_root()
        r = coil("create", "--bundle", b, new_id(), root=root)
        assert r.returncode == 1, describe(r)
        assert "linux.namespaces[" in r.stderr and \
            "is not a %s namespace" % t in r.stderr, describe(r)
        assert os.listdir(root) == []


def test_namespace_path_not_a_namespace_is_refused():
    d = tmpdir()
    f = os.path.join(d, "plain")
    open(f, "w").close()
    b = new_bundle(["true"], linux={
        "namespaces": _without("ipc") + [{"type": "ipc", "path": f}]})
    root = new_root()
    r = coil("create", "--bundle", b, new_id(), root=root)
    assert r.returncode == 1, describe(r)
    assert "is not a namespace" in r.stderr, describe(r)
    assert os.listdir(root) == []


# ------------------------------------------------- cgroup moved by a client

def _own_cg_dir(controller):
    for mnt, own in cgroup_hierarchies():
        if os.path.basename(mnt) == controller:
            return os.path.join(mnt, own.lstrip("/"))
    return None


def test_init_moved_to_a_clients_cgroup_is_still_the_containers():
    # runtime-tools delete_only_create_resources: the client moves init to
    # a pids cgroup of its own; the container goes on and delete leaves
    # that cgroup alone.
    own = _own_cg_dir("pids")
    assert own, cgroup_hierarchies()
    theirs = os.path.join(own, "coil-client-%d" % os.getpid())
    os.mkdir(theirs)
    on_cleanup(lambda: os.path.isdir(theirs) and os.rmdir(theirs))
    root = new_root()
    b = new_bundle(["true"])
    cid = new_id()
    check(coil("create", "--bundle", b, cid, root=root))
    pid = state(cid, root)["pid"]
    with open(os.path.join(theirs, "cgroup.procs"), "w") as f:
        f.write(str(pid))
    assert state(cid, root)["status"] == "created"
    check(coil("start", cid, root=root))
    wait_status(cid, root, "stopped")
    check(coil("delete", cid, root=root))
    assert os.path.isdir(theirs)
    assert os.listdir(root) == []


# ------------------------------------------------- capabilities

def test_unknown_capability_is_an_error_naming_the_field():
    for s in ("bounding", "effective", "permitted", "inheritable", "ambient"):
        b = new_bundle(["true"], process={"capabilities": {
            s: ["CAP_CHOWN", "CAP_KILL", "CAP_FOO"]}})
        root = new_root()
        r = coil("create", "--bundle", b, new_id(), root=root)
        assert r.returncode == 1, describe(r)
        assert r.stderr == ('coil: process.capabilities.%s[2]: unknown '
                            'capability "CAP_FOO"\n' % s), describe(r)
        assert os.listdir(root) == []


def test_features_lists_the_capability_names_create_accepts():
    """features' linux.capabilities are the names a config may use, from
    CAP_CHOWN in number order; a container whose bounding set lists every
    one of them is created (a name the kernel lacks only warns), and no
    unknown one is among them."""
    feats = json.loads(check(coil("features")).stdout)["linux"]
    caps = feats["capabilities"]
    assert caps[0] == "CAP_CHOWN" and "CAP_SYS_ADMIN" in caps, caps
    assert len(caps) == len(set(caps)) and \
        all(c.startswith("CAP_") and c.isupper() for c in caps), caps
    b = new_bundle(["true"], process={"capabilities": {"bounding": caps}})
    root = new_root()
    cid = new_id()
    r = coil("create", "--bundle", b, cid, root=root)
    assert r.returncode == 0 and "unknown capability" not in r.stderr, \
        describe(r)
    check(coil("delete", "--force", cid, root=root))


def test_features_lists_the_seccomp_archs_and_flags_create_accepts():
    """features' linux.seccomp.archs are the architecture names a config
    may give (those of the other byte order are known, and refused only
    as such), its knownFlags the flags; a name not listed is unknown. Each
    config carries a bad action after them, so create stops there, past
    the names, with nothing made."""
    sec = json.loads(check(coil("features")).stdout)["linux"]["seccomp"]
    archs, flags = sec["archs"], sec["knownFlags"]
    assert "SCMP_ARCH_X86_64" in archs and "SCMP_ARCH_AARCH64" in archs, archs
    assert set(sec["supportedFlags"]) <= set(flags), sec
    bad_rule = [{"names": ["getpid"], "action": "SCMP_ACT_NOPE"}]
    root = new_root()

    def create(seccomp):
        seccomp = dict({"defaultAction": "SCMP_ACT_ALLOW",
                        "syscalls": bad_rule}, **seccomp)
        b = new_bundle(["true"], linux={"seccomp": seccomp})
        return coil("create", "--bundle", b, new_id(), root=root)

    for name in archs + ["SCMP_ARCH_VAX"]:
        r = create({"architectures": [name]})
        known = ("syscalls[0].action" in r.stderr or
                 "other byte order" in r.stderr)
        assert r.returncode == 1 and known == (name in archs), \
            (name, describe(r))
    for name in flags + ["SECCOMP_FILTER_FLAG_NOPE"]:
        r = create({"flags": [name]})
        known = "syscalls[0].action" in r.stderr
        assert r.returncode == 1 and known == (name in flags), \
            (name, describe(r))
    assert os.listdir(root) == []


def test_features_says_which_cgroup_drivers_there_are():
    """cgroupfs v1 and v2 and the systemd driver (--systemd-cgroup, over
    the system bus); not a user session's systemd."""
    feats = json.loads(check(coil("features")).stdout)["linux"]
    assert feats["cgroup"] == {"v1": True, "v2": True, "systemd": True,
                               "systemdUser": False}, feats["cgroup"]


# ------------------------------------------------- create without process

def test_create_without_process_then_start_fails_clearly():
    root = new_root()
    b = new_bundle(["true"])
    with open(os.path.join(b, "config.json")) as f:
        cfg = json.load(f)
    del cfg["process"]
    write_config(b, cfg)
    cid = new_id()
    check(coil("create", "--bundle", b, cid, root=root))
    pid = state(cid, root)["pid"]
    r = coil("start", cid, root=root)
    assert r.returncode == 1, describe(r)
    assert "has no process" in r.stderr, describe(r)
    st = state(cid, root)
    assert st["status"] == "created" and st["pid"] == pid, st
    check(coil("delete", "--force", cid, root=root))
    assert not _alive(pid)
    assert os.listdir(root) == []


# ------------------------------------------------- kill right after start

def test_kill_right_after_start_reaches_the_trap():
    # runtime-tools killsig: start, then kill at once. The shell, init of
    # its pid namespace, sets its trap a moment after exec; a signal sent
    # before that was dropped by the kernel and the container ran on.
    d = tmpdir()
    for sig in ("TERM", "USR1"):
        root = new_root()
        b = new_bundle(["sh", "-c", "sleep 0.2; trap 'echo caught %s; exit 0' "
                        "%s; sleep 10 & wait $!" % (sig, sig)])
        cid = new_id()
        out = os.path.join(d, sig)
        with open(out, "w") as f:
            check(coil("create", "--bundle", b, cid, root=root, stdout=f))
        check(coil("start", cid, root=root))
        check(coil("kill", cid, sig, root=root))
        wait_status(cid, root, "stopped", timeout=5)
        check(coil("delete", cid, root=root))
        with open(out) as f:
            assert f.read() == "caught %s\n" % sig


# ------------------------------------------------- memory resources

def _own_memory_cg(*rest):
    d = _own_cg_dir("memory")
    return d and os.path.join(d, *rest)


def test_memory_swappiness_oom_killer_and_kernel_tcp():
    if _own_memory_cg() is None:
        return  # cgroup v2 memory: see the next test
    MiB = 1024 * 1024
    root = new_root()
    res = {"memory": {"limit": 64 * MiB, "kernel": 48 * MiB,
                      "kernelTCP": 16 * MiB, "swappiness": 7,
                      "disableOOMKiller": True}}
    b = new_bundle(["sleep", "100"], linux={"resources": res})
    cid = new_id()
    r = check(coil("create", "--bundle", b, cid, root=root))
    # as runc: the kernel memory limit is gone from the kernel
    assert "linux.resources.memory.kernel: ignored" in r.stderr, describe(r)
    d = _own_memory_cg("coil", cid)
    try:
        def read(name):
            with open(os.path.join(d, name)) as f:
                return f.read()
        assert read("memory.kmem.tcp.limit_in_bytes").strip() == \
            str(16 * MiB)
        assert read("memory.swappiness").strip() == "7"
        assert "oom_kill_disable 1" in read("memory.oom_control")
    finally:
        check(coil("delete", "--force", cid, root=root))


def test_memory_swappiness_over_100_is_refused():
    root = new_root()
    b = new_bundle(["true"], linux={"resources": {
        "memory": {"swappiness": 101}}})
    r = coil("create", "--bundle", b, new_id(), root=root)
    assert r.returncode == 1, describe(r)
    assert r.stderr.startswith(
        "coil: linux.resources.memory.swappiness: 101 is not in 0-100"), \
        describe(r)
    assert os.listdir(root) == []


# ------------------------------------------------- spec --rootless

def test_spec_rootless_maps_the_callers_ids_without_a_network_namespace():
    d = tmpdir()
    check(coil("spec", "--rootless", "--bundle", d))
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    types = [n["type"] for n in cfg["linux"]["namespaces"]]
    assert "user" in types and "network" not in types, types
    assert cfg["linux"]["uidMappings"] == [
        {"containerID": 0, "hostID": os.geteuid(), "size": 1}], cfg
    assert cfg["linux"]["gidMappings"] == [
        {"containerID": 0, "hostID": os.getegid(), "size": 1}], cfg
    cfg["process"]["args"] = ["sh", "-c", "cat /proc/self/uid_map; id -u; "
                              "readlink /proc/self/ns/net"]
    write_config(d, cfg)
    place_rootfs(d, cfg)
    r = check(coil("run", "--bundle", d, new_id(), root=new_root()))
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["0", str(os.geteuid()), "1"], describe(r)
    assert lines[1] == "0", describe(r)
    assert lines[2] == os.readlink("/proc/self/ns/net"), describe(r)


# ------------------------------------------------- device rules as written

def test_v1_device_rules_are_written_as_given():
    # runtime-tools linux_cgroups_devices reads devices.list back: each
    # rule as written, in order. The default "b *:* m" already answers
    # any mknod, so it is not copied into them.
    mnt = [m for m, _ in cgroup_hierarchies()
           if os.path.basename(m) == "devices"]
    if not mnt:
        return  # v2: a device program, nothing to read back
    rules = [{"allow": False, "access": "rwm"},
             {"allow": True, "type": "c", "major": 10, "minor": 229,
              "access": "rwm"},
             {"allow": True, "type": "b", "major": 8, "minor": 20,
              "access": "rw"},
             {"allow": True, "type": "b", "major": 10, "minor": 229,
              "access": "r"}]
    root = new_root()
    b = new_bundle(["sleep", "100"], linux={"resources": {"devices": rules}})
    cid = new_id()
    check(coil("create", "--bundle", b, cid, root=root))
    try:
        with open(os.path.join(_own_cg_dir("devices"), "coil", cid,
                               "devices.list")) as f:
            lines = f.read().splitlines()
        assert lines[:3] == ["c 10:229 rwm", "b 8:20 rw", "b 10:229 r"], lines
        assert "b *:* m" in lines, lines
    finally:
        check(coil("delete", "--force", cid, root=root))
