"""Mount behaviours OCI suites and clients expect, as runc and crun do them:
the cgroup mount, recursive mount attributes ("rro"), "rbind" with "bind",
id-mapped mounts, destinations that are dangling symlinks, propagation of
new filesystem mounts."""

import json
import os
import subprocess

from harness import (HOST_GID, HOST_UID, base_config, check, coil,
                     default_root, describe, new_bundle, new_id, read_config,
                     run, sh, tmpdir, write_config)


def _mount(destination, type_, source, *options):
    return {"destination": destination, "type": type_, "source": source,
            "options": list(options)}


def _tmpfs(destination, *options):
    return _mount(destination, "tmpfs", "tmpfs", "size=1m", *options)


def _with_mounts(b, *extra):
    """Appends extra mounts to bundle b's config; "@ROOTFS@" in a source
    stands for b's rootfs (a path the container's earlier mounts cover)."""
    cfg = read_config(b)
    rootfs = os.path.join(b, "rootfs")
    for m in extra:
        m = dict(m)
        if m.get("source"):
            m["source"] = m["source"].replace("@ROOTFS@", rootfs)
        cfg["mounts"].append(m)
    write_config(b, cfg)
    return b


def _mountinfo_targets(out):
    """Mount points listed by `cat /proc/self/mountinfo`, with their
    per-mount options and optional fields."""
    res = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) > 6 and f[0].isdigit():
            res.setdefault(f[4], []).append(f[5].split(",") + f[6:])
    return res


# ------------------------------------------------- the cgroup mount

MiB = 1024 * 1024
CGROUP_MOUNT = {"destination": "/sys/fs/cgroup", "type": "cgroup",
                "source": "cgroup", "options": ["nosuid", "noexec"]}
RESOURCES = {"memory": {"limit": 64 * MiB}, "pids": {"limit": 50},
             "cpu": {"shares": 512}}


def _v1_host():
    return os.path.isdir("/sys/fs/cgroup/memory")


def _cgroup_overrides(userns, cgroupns, mount=CGROUP_MOUNT):
    """A config with the cgroup mount, limits, and the user and cgroup
    namespaces as asked."""
    cfg = base_config([])
    ns = [n for n in cfg["linux"]["namespaces"]
          if (userns or n["type"] != "user") and
          (cgroupns or n["type"] != "cgroup")]
    linux = {"namespaces": ns, "resources": RESOURCES}
    if not userns:
        linux.update(uidMappings=None, gidMappings=None)
    return {"mounts": cfg["mounts"] + [mount], "linux": linux}


_NS_CASES = [(u, c) for u in (True, False) for c in (True, False)]


def _case(userns, cgroupns):
    return "userns=%s cgroupns=%s" % (userns, cgroupns)


def test_cgroup_mount_shows_the_container_cgroup_and_its_limits():
    if _v1_host():
        files = ["memory/memory.limit_in_bytes", "pids/pids.max",
                 "cpu/cpu.shares"]
        want = [str(64 * MiB), "50", "512"]
    else:
        files = ["memory.max", "pids.max", "cpu.weight"]
        # runc's shares-to-weight conversion: 1 + (512-2)*9999/262142.
        want = [str(64 * MiB), "50", "20"]
    script = ("cd /sys/fs/cgroup && cat %s && echo -- && ls && echo -- && "
              "grep -c ' /sys/fs/cgroup' /proc/self/mountinfo" %
              " ".join(files))
    for userns, cgroupns in _NS_CASES:
        r = sh(script, **_cgroup_overrides(userns, cgroupns))
        check(r)
        values, names, _ = r.stdout.split("--\n")
        got = values.split()
        for g, w in zip(got, want):
            assert w is None or g == w, (_case(userns, cgroupns), describe(r))
        if _v1_host():
            names = set(names.split())
            assert {"memory", "pids", "cpu", "cpuacct", "freezer"} <= names, \
                (_case(userns, cgroupns), describe(r))
            if os.path.isdir("/sys/fs/cgroup/unified"):
                assert "unified" in names, describe(r)


def test_cgroup_mount_hides_every_other_cgroup():
    from harness import new_root, state, wait_status
    root = new_root()
    sibling = new_id()
    b = new_bundle(["sleep", "100"], linux={"resources": RESOURCES})
    check(coil("create", "--bundle", b, sibling, root=root))
    try:
        for userns, cgroupns in _NS_CASES:
            r = sh("find /sys/fs/cgroup -mindepth 1 -type d; "
                   "cat /proc/self/mountinfo",
                   **_cgroup_overrides(userns, cgroupns))
            check(r)
            assert sibling not in r.stdout, (_case(userns, cgroupns),
                                             describe(r))
            dirs = [l for l in r.stdout.splitlines()
                    if l.startswith("/sys/fs/cgroup/")]
            # only the hierarchies' roots, each the container's own cgroup
            assert all(l.count("/") == 4 for l in dirs), describe(r)
            if not _v1_host():
                assert dirs == [], describe(r)
    finally:
        check(coil("delete", "--force", sibling, root=root))


def test_cgroup2_mount_is_the_container_unified_cgroup():
    m = dict(CGROUP_MOUNT, type="cgroup2", source="cgroup2")
    for userns, cgroupns in _NS_CASES:
        r = sh("ls /sys/fs/cgroup/cgroup.procs && "
               "find /sys/fs/cgroup -mindepth 1 -type d | wc -l",
               **_cgroup_overrides(userns, cgroupns, m))
        check(r)
        assert r.stdout.split() == ["/sys/fs/cgroup/cgroup.procs", "0"], \
            (_case(userns, cgroupns), describe(r))


def test_cgroup_mount_is_read_only_unless_rw():
    for userns, cgroupns in _NS_CASES:
        r = sh("touch /sys/fs/cgroup/x; cat /proc/self/mountinfo",
               **_cgroup_overrides(userns, cgroupns))
        check(r)
        mi = _mountinfo_targets(r.stdout)
        cg = [t for t in mi if t.startswith("/sys/fs/cgroup")]
        assert cg and all("ro" in mi[t][-1] for t in cg), describe(r)
        assert "Read-only file system" in r.stderr, describe(r)
    rw = dict(CGROUP_MOUNT, options=["rw"])
    r = check(sh("cat /proc/self/mountinfo",
                 **_cgroup_overrides(False, True, rw)))
    mi = _mountinfo_targets(r.stdout)
    cg = [t for t in mi if t.startswith("/sys/fs/cgroup")]
    assert cg and all("rw" in mi[t][-1] for t in cg), describe(r)


# ------------------------------------------------- recursive attributes

def _submount_bundle(script, *options):
    """/a is a tmpfs with another tmpfs on /a/sub; /b binds /a with
    options."""
    b = new_bundle(["sh", "-c", script])
    return _with_mounts(b, _tmpfs("/a"), _tmpfs("/a/sub"),
                        _mount("/b", "bind", "@ROOTFS@/a", *options))


_TOUCH = ("touch /b/top && echo top-rw || echo top-ro; "
          "touch /b/sub/x && echo sub-rw || echo sub-ro")


def test_rro_is_read_only_all_the_way_down():
    r = check(run(_submount_bundle(_TOUCH, "rbind", "rro")))
    assert r.stdout.split() == ["top-ro", "sub-ro"], describe(r)


def test_plain_ro_leaves_the_submount_writable():
    r = check(run(_submount_bundle(_TOUCH, "rbind", "ro")))
    assert r.stdout.split() == ["top-ro", "sub-rw"], describe(r)


def test_recursive_nosuid_nodev_noexec_noatime():
    b = _submount_bundle("cat /proc/self/mountinfo", "rbind", "rnosuid",
                         "rnodev", "rnoexec", "rnoatime", "rnosymfollow")
    r = check(run(b))
    mi = _mountinfo_targets(r.stdout)
    for t in ("/b", "/b/sub"):
        assert t in mi, describe(r)
        opts = mi[t][-1]
        for want in ("nosuid", "nodev", "noexec", "noatime", "nosymfollow"):
            assert want in opts, (t, want, describe(r))


def test_rrw_undoes_rro_on_the_submounts():
    r = check(run(_submount_bundle(_TOUCH, "rbind", "rro", "rrw")))
    assert r.stdout.split() == ["top-rw", "sub-rw"], describe(r)


def test_recursive_attribute_on_a_new_filesystem():
    b = new_bundle(["sh", "-c", "touch /n/x && echo rw || echo ro"])
    r = check(run(_with_mounts(b, _tmpfs("/n", "rro"))))
    assert r.stdout.split() == ["ro"], describe(r)


# ------------------------------------------------- "rbind" with "bind"

def test_rbind_then_bind_keeps_the_submounts():
    # runc ORs the flags of both: "rbind" wins in either order.
    for opts in (("rbind", "bind"), ("bind", "rbind")):
        b = _submount_bundle("grep -c ' /b/sub ' /proc/self/mountinfo", *opts)
        r = check(run(b))
        assert r.stdout.strip() == "1", (opts, describe(r))


# ------------------------------------------------- dangling symlinks

def test_destination_dangling_symlinks_are_created_inside_rootfs():
    name = "coil-dangling-%s" % new_id()
    b = new_bundle(["sh", "-c",
                    "grep -E ' /(made/dir|tmp/%s/abs|file-made) ' "
                    "/proc/self/mountinfo | cut -d' ' -f5 | sort" % name])
    rootfs = os.path.join(b, "rootfs")
    # relative, absolute with "..", and a file bind onto a dangling link
    os.symlink("made/dir", os.path.join(rootfs, "rel"))
    os.symlink("/../../../../../../tmp/%s/abs" % name,
               os.path.join(rootfs, "abs"))
    os.symlink("../file-made", os.path.join(rootfs, "tmp-file"))
    src = os.path.join(tmpdir(), "f")
    open(src, "w").close()
    cfg = read_config(b)
    cfg["mounts"] = [m for m in cfg["mounts"] if m["destination"] != "/tmp"]
    write_config(b, cfg)
    _with_mounts(b, _tmpfs("/rel"), _tmpfs("/abs"),
                 _mount("/tmp-file", "bind", src, "bind", "ro"))
    r = check(run(b))
    assert r.stdout.split() == sorted(["/file-made", "/made/dir",
                                       "/tmp/%s/abs" % name]), describe(r)
    assert os.path.isdir(os.path.join(rootfs, "made", "dir"))
    assert os.path.isdir(os.path.join(rootfs, "tmp", name, "abs"))
    assert os.path.isfile(os.path.join(rootfs, "file-made"))
    assert not os.path.lexists("/tmp/" + name)
    assert not os.path.lexists("/file-made")


def test_dangling_symlink_loop_is_refused():
    b = new_bundle(["true"])
    rootfs = os.path.join(b, "rootfs")
    os.symlink("loop2/x", os.path.join(rootfs, "loop1"))
    os.symlink("loop1/x", os.path.join(rootfs, "loop2"))
    r = run(_with_mounts(b, _tmpfs("/loop1")))
    assert r.returncode != 0, describe(r)
    assert "mounts[6] (/loop1)" in r.stderr, describe(r)
    assert "symbolic links" in r.stderr, describe(r)


# ------------------------------------------------- propagation

def test_propagation_of_a_new_filesystem_mount():
    b = new_bundle(["cat", "/proc/self/mountinfo"])
    r = check(run(_with_mounts(b, _tmpfs("/s", "rshared"),
                               _tmpfs("/p", "private"))))
    mi = _mountinfo_targets(r.stdout)
    assert any(f.startswith("shared:") for f in mi["/s"][-1]), describe(r)
    assert not any(f.startswith("shared:") for f in mi["/p"][-1]), \
        describe(r)


def test_bad_filesystem_option_names_the_mount_and_option():
    b = new_bundle(["true"])
    r = run(_with_mounts(b, _tmpfs("/bad", "size=lots")))
    assert r.returncode != 0, describe(r)
    assert "mounts[6] (/bad)" in r.stderr and "size=lots" in r.stderr, \
        describe(r)


# ------------------------------------------------- id-mapped mounts

def _owned_dir(uid, gid):
    d = tmpdir()
    with open(os.path.join(d, "f"), "w") as f:
        f.write("x\n")
    for p in (d, os.path.join(d, "f")):
        os.chown(p, uid, gid)
    return d


def _idmapped(source, uid_from, uid_to, gid_from, gid_to, *options):
    m = _mount("/m", "bind", source, "rbind", *options)
    m["uidMappings"] = [{"containerID": uid_from, "hostID": uid_to,
                         "size": 1}]
    m["gidMappings"] = [{"containerID": gid_from, "hostID": gid_to,
                         "size": 1}]
    return m


def test_idmapped_bind_shows_the_mapped_owner():
    d = _owned_dir(1000, 1001)
    # in the container's user namespace: host 100005/100007 are 5/7 there
    b = new_bundle(["sh", "-c", "stat -c '%u %g' /m /m/f"])
    _with_mounts(b, _idmapped(d, 1000, HOST_UID + 5, 1001, HOST_GID + 7,
                              "ro"))
    r = check(run(b))
    assert r.stdout.split("\n")[:2] == ["5 7", "5 7"], describe(r)
    # without a user namespace the mapped host ids show as they are
    cfg = base_config([])
    ns = [n for n in cfg["linux"]["namespaces"] if n["type"] != "user"]
    b = new_bundle(["sh", "-c", "stat -c '%u %g' /m/f"],
                   linux={"namespaces": ns, "uidMappings": None,
                          "gidMappings": None})
    _with_mounts(b, _idmapped(d, 1000, 2000, 1001, 3000, "idmap"))
    r = check(run(b))
    assert r.stdout.strip() == "2000 3000", describe(r)
    st = os.stat(os.path.join(d, "f"))
    assert (st.st_uid, st.st_gid) == (1000, 1001), "the host's owner changed"


def test_ridmap_maps_the_submounts_too():
    d = _owned_dir(1000, 1000)
    sub = os.path.join(d, "sub")
    os.mkdir(sub)
    # The submount exists only in a mount namespace of coil's own, so the
    # host never sees it.
    mount_then = ('mount -t tmpfs -o size=1m,uid=1000,gid=1000 coil-test-sub '
                  '"$1" && shift && exec "$@"')
    for opt, want in (("idmap", "65534"), ("ridmap", "5")):
        b = new_bundle(["stat", "-c", "%u", "/m", "/m/sub"])
        _with_mounts(b, _idmapped(d, 1000, HOST_UID + 5, 1000, HOST_GID + 5,
                                  opt))
        r = check(coil_in_private_mount_ns(
            ["sh", "-c", mount_then, "sh", sub], "run", "--bundle", b,
            new_id()))
        assert r.stdout.split() == ["5", want], (opt, describe(r))


def coil_in_private_mount_ns(prefix, *args):
    """coil args, run by prefix in a private mount namespace."""
    import harness
    argv = (["unshare", "-m", "--propagation", "private"] + prefix +
            [harness.COIL, "--root", default_root()] + list(args))
    return subprocess.run(argv, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def test_idmapped_mount_errors_name_the_mount():
    d = _owned_dir(1000, 1000)
    cases = []
    m = _idmapped(d, 1000, HOST_UID, 1000, HOST_GID)
    del m["gidMappings"]
    cases.append((m, "needs both uidMappings and gidMappings"))
    m = _tmpfs("/m", "idmap")
    cases.append((m, "id mappings apply to bind mounts only"))
    # procfs cannot be id-mapped
    cases.append((_idmapped("/proc/sys", 0, HOST_UID, 0, HOST_GID),
                  "filesystem does not support id mapping"))
    for m, want in cases:
        b = new_bundle(["true"])
        r = run(_with_mounts(b, m))
        assert r.returncode != 0, describe(r)
        assert "mounts[6] (/m)" in r.stderr and want in r.stderr, describe(r)


# ------------------------------------------------- features

def test_features_lists_the_new_mount_options():
    r = check(coil("features"))
    opts = set(json.loads(r.stdout)["mountOptions"])
    want = {"rro", "rrw", "rnosuid", "rsuid", "rnodev", "rdev", "rnoexec",
            "rexec", "rnoatime", "ratime", "rrelatime", "rnorelatime",
            "rstrictatime", "rnostrictatime", "rnodiratime", "rdiratime",
            "rnosymfollow", "rsymfollow", "nosymfollow", "idmap", "ridmap"}
    assert want <= opts, sorted(want - opts)
    ext = json.loads(r.stdout)["linux"]["mountExtensions"]
    assert ext == {"idmap": {"enabled": True}}, r.stdout


# ------------------------------------------------- tmpcopyup

IMAGE_TIME = 1000000000


def _seed_image_dir(b, outside, name="seed"):
    """/name in b's rootfs: a file, a subdirectory with a file, a relative
    symlink and an absolute one to outside (a host file), with owners,
    modes and times to copy."""
    seed = os.path.join(b, "rootfs", name)
    os.mkdir(seed)
    os.makedirs(os.path.join(seed, "sub"))
    with open(os.path.join(seed, "f"), "w") as f:
        f.write("img\n")
    with open(os.path.join(seed, "sub", "g"), "w") as f:
        f.write("deep\n")
    os.symlink("f", os.path.join(seed, "rel"))
    os.symlink(outside, os.path.join(seed, "abs"))
    for name, mode in (("f", 0o640), ("sub", 0o711), ("sub/g", 0o600),
                       (".", 0o750)):
        p = os.path.join(seed, name)
        os.chmod(p, mode)
        os.chown(p, HOST_UID + 1000, HOST_GID + 1001)
    for name in ("rel", "abs"):
        os.lchown(os.path.join(seed, name), HOST_UID + 1000, HOST_GID + 1001)
    for name in ("f", "sub/g", "sub"):
        os.utime(os.path.join(seed, name), (IMAGE_TIME, IMAGE_TIME))
    return seed


def test_tmpcopyup_copies_the_image_directory_into_the_tmpfs():
    outside = os.path.join(tmpdir(), "secret")
    with open(outside, "w") as f:
        f.write("host\n")
    b = new_bundle(["sh", "-c",
                    "stat -c '%n %a %u:%g %F %Y' /seed/f /seed/sub "
                    "/seed/sub/g; stat -c '%n %a %u:%g' /seed; "
                    "stat -c '%n %u:%g %F' /seed/rel /seed/abs; "
                    "readlink /seed/rel; readlink /seed/abs; "
                    "cat /seed/rel /seed/sub/g; "
                    "cat /seed/abs 2>/dev/null || echo abs-dangles; "
                    "echo new > /seed/f && echo two > /seed/h && "
                    "cat /seed/f /seed/h; "
                    "grep ' /seed ' /proc/self/mounts | cut -d' ' -f3; "
                    "ls -A /plain; echo plain-empty"])
    seed = _seed_image_dir(b, outside)
    # Without the option, a tmpfs over the same content starts empty.
    _seed_image_dir(b, outside, "plain")
    r = check(run(_with_mounts(b, _tmpfs("/seed", "tmpcopyup"),
                               _tmpfs("/plain"))))
    assert r.stdout.splitlines() == [
        "/seed/f 640 1000:1001 regular file %d" % IMAGE_TIME,
        "/seed/sub 711 1000:1001 directory %d" % IMAGE_TIME,
        "/seed/sub/g 600 1000:1001 regular file %d" % IMAGE_TIME,
        "/seed 750 0:0",
        "/seed/rel 1000:1001 symbolic link",
        "/seed/abs 1000:1001 symbolic link",
        "f", outside, "img", "deep", "abs-dangles", "new", "two",
        "tmpfs", "plain-empty"], describe(r)
    # The writes went to the tmpfs; the image and the host file are as
    # they were.
    with open(os.path.join(seed, "f")) as f:
        assert f.read() == "img\n"
    assert not os.path.exists(os.path.join(seed, "h"))
    assert os.readlink(os.path.join(seed, "abs")) == outside
    with open(outside) as f:
        assert f.read() == "host\n"


def test_tmpcopyup_is_listed_by_features():
    r = check(coil("features"))
    assert "tmpcopyup" in json.loads(r.stdout)["mountOptions"], r.stdout
