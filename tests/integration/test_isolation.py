"""What the process inside sees: namespaces, ids, filesystem, caps, limits,
seccomp."""

import os
import re
import subprocess
import time

from harness import (DEFAULT_CAPS, HOST_UID, NAMESPACES, base_config,
                     cap_mask, check, coil, describe, host_ns, new_bundle,
                     new_id, new_root, on_cleanup, run, sh, state, tmpdir,
                     wait_status)

NS_FILES = {"pid": "pid", "network": "net", "ipc": "ipc", "uts": "uts",
            "mount": "mnt", "user": "user", "cgroup": "cgroup"}


def _ns_links(out):
    links = {}
    for line in out.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            links[k] = v
    return links


NS_SCRIPT = ("for n in pid net ipc uts mnt user cgroup time; do "
             "echo $n=$(readlink /proc/self/ns/$n); done")


def test_every_namespace_is_new():
    r = check(sh(NS_SCRIPT + "; echo pid1=$$"))
    links = _ns_links(r.stdout)
    for t in NAMESPACES:
        f = NS_FILES[t]
        assert links.get(f), describe(r)
        assert links[f] != host_ns(f), "%s namespace is the host's: %s" % (
            t, links[f])
    assert links["pid1"] == "1", describe(r)
    # not asked for: shared with the host
    assert links["time"] == host_ns("time"), describe(r)


def test_unlisted_namespace_is_shared():
    nss = [{"type": t} for t in NAMESPACES if t not in ("ipc", "uts")]
    # mqueue can only be mounted by the owner of the ipc namespace
    mounts = [m for m in base_config([])["mounts"] if m["type"] != "mqueue"]
    r = check(sh(NS_SCRIPT + "; hostname", mounts=mounts,
                 linux={"namespaces": nss}, hostname=None))
    links = _ns_links(r.stdout)
    assert links["ipc"] == host_ns("ipc"), describe(r)
    assert links["uts"] == host_ns("uts"), describe(r)
    assert links["net"] != host_ns("net"), describe(r)
    assert os.uname().nodename in r.stdout, describe(r)


def test_user_namespace_mappings():
    r = check(sh("cat /proc/self/uid_map /proc/self/gid_map; id -u; id -g"))
    lines = [l.split() for l in r.stdout.splitlines()]
    assert lines[0] == ["0", "100000", "65536"], describe(r)
    assert lines[1] == ["0", "100000", "65536"], describe(r)
    assert lines[2] == ["0"] and lines[3] == ["0"], describe(r)


def test_files_created_as_mapped_host_ids():
    d = tmpdir(0o777)
    mnt = {"destination": "/mnt/host", "type": "bind", "source": d,
           "options": ["rbind", "rw"]}
    cfg = base_config([])
    r = check(sh("touch /mnt/host/as-root; touch /tmp/f; stat -c %u:%g /tmp/f",
                 mounts=cfg["mounts"] + [mnt]))
    assert r.stdout.strip() == "0:0", describe(r)
    st = os.stat(os.path.join(d, "as-root"))
    assert (st.st_uid, st.st_gid) == (HOST_UID, HOST_UID), (st.st_uid,
                                                            st.st_gid)
    r = check(sh("touch /mnt/host/as-user",
                 mounts=cfg["mounts"] + [mnt],
                 process={"user": {"uid": 1000, "gid": 1000}}))
    st = os.stat(os.path.join(d, "as-user"))
    assert (st.st_uid, st.st_gid) == (HOST_UID + 1000, HOST_UID + 1000)


def test_process_user_groups_umask():
    r = check(sh("grep -E '^(Uid|Gid|Groups|Umask):' /proc/self/status; "
                 "touch /tmp/f; stat -c %a /tmp/f",
                 process={"user": {"uid": 1000, "gid": 1000,
                                   "additionalGids": [10, 100],
                                   "umask": 0o027}}))
    st = dict((l.split(":", 1)[0], l.split(":", 1)[1].split())
              for l in r.stdout.splitlines() if ":" in l)
    assert st["Uid"] == ["1000"] * 4, describe(r)
    assert st["Gid"] == ["1000"] * 4, describe(r)
    assert sorted(st["Groups"]) == ["10", "100"], describe(r)
    assert st["Umask"] == ["0027"], describe(r)
    assert r.stdout.splitlines()[-1] == "640", describe(r)


def test_root_has_no_supplementary_groups():
    r = check(sh("grep ^Groups: /proc/self/status"))
    assert r.stdout.split() == ["Groups:"], describe(r)


def test_env_and_cwd():
    r = check(sh('echo "FOO=$FOO"; echo "HOME=$HOME"; pwd; env | sort',
                 process={"env": ["PATH=/bin:/sbin", "FOO=bar baz",
                                  "EMPTY="],
                          "cwd": "/etc"}))
    lines = r.stdout.splitlines()
    assert lines[0] == "FOO=bar baz", describe(r)
    assert lines[2] == "/etc", describe(r)
    env = set(lines[3:])
    assert {"FOO=bar baz", "EMPTY=", "PATH=/bin:/sbin"} <= env, describe(r)
    # nothing from coil's own environment leaks in
    assert not any(l.startswith("COIL") or l.startswith("PYTHON")
                   for l in env), describe(r)


def test_home_from_the_containers_passwd():
    # As runc: without HOME in process.env, the process uid's home from the
    # container's /etc/passwd, else "/"; a HOME given in env stays.
    cases = [(0, [], "/root"), (1000, [], "/home/user"), (4242, [], "/"),
             (1000, ["HOME=/given"], "/given")]
    for uid, env, want in cases:
        r = check(sh('echo "HOME=$HOME"', process={
            "user": {"uid": uid, "gid": uid},
            "env": ["PATH=/bin"] + env}))
        assert r.stdout.splitlines() == ["HOME=" + want], describe(r)


def test_home_passwd_symlink_resolves_in_the_container():
    # An absolute symlink in the image resolves inside the container root.
    b = new_bundle(["sh", "-c", 'echo "HOME=$HOME"'])
    rootfs = os.path.join(b, "rootfs")
    os.makedirs(os.path.join(rootfs, "alt"))
    with open(os.path.join(rootfs, "alt", "passwd"), "w") as f:
        f.write("root:x:0:0::/from-alt:/bin/sh\n")
    os.unlink(os.path.join(rootfs, "etc", "passwd"))
    os.symlink("/../../../../alt/passwd",
               os.path.join(rootfs, "etc", "passwd"))
    r = check(run(b))
    assert r.stdout.splitlines() == ["HOME=/from-alt"], describe(r)


def test_missing_cwd_is_created():
    # As runc: mkdir -p of process.cwd inside the container's root (0755,
    # owned by the container's root), even with a read-only root.
    for uid in (0, 1000):
        r = check(sh("pwd; stat -c '%a %u' .; stat -c %a /var/new",
                     process={"user": {"uid": uid, "gid": uid},
                              "cwd": "/var/new/deep"}))
        assert r.stdout.splitlines() == ["/var/new/deep", "755 0", "755"], \
            describe(r)


def test_readonly_root():
    r = sh("touch /x; echo rc=$?; echo data > /tmp/y && cat /tmp/y")
    check(r)
    assert "Read-only file system" in r.stderr, describe(r)
    assert "rc=1" in r.stdout and "data" in r.stdout, describe(r)


def test_writable_root_when_not_readonly():
    b = new_bundle(["sh", "-c", "touch /x && echo made"],
                   root={"readonly": False})
    r = check(run(b))
    assert "made" in r.stdout, describe(r)
    assert os.path.exists(os.path.join(b, "rootfs", "x"))


def test_no_host_fd_leaks():
    extra = os.open("/etc/hostname", os.O_RDONLY)
    os.set_inheritable(extra, True)
    b = new_bundle(["sh", "-c", "ls /proc/self/fd | sort -n | tr '\\n' ' '"])
    try:
        r = check(coil("run", "--bundle", b, new_id(), root=new_root(),
                       pass_fds=(extra,)))
    finally:
        os.close(extra)
    # stdin, stdout, stderr and the directory ls is reading
    assert r.stdout.split() in (["0", "1", "2", "3"], ["0", "1", "2"]), \
        "fd %d (or another) leaked in\n%s" % (extra, describe(r))


def _default_mounts_and(*extra):
    """base_config's mounts, then extra."""
    return base_config([])["mounts"] + list(extra)


def _mount(destination, type_, source, *options):
    return {"destination": destination, "type": type_, "source": source,
            "options": list(options)}


def _tmpfs(destination, *options):
    return _mount(destination, "tmpfs", "tmpfs", *options)


def _mounts_inside(out):
    return [l.split() for l in out.splitlines() if len(l.split()) >= 4]


def test_bind_mounts_ro_and_rw():
    ro, rw = tmpdir(0o777), tmpdir(0o777)
    with open(os.path.join(ro, "file"), "w") as f:
        f.write("from-host\n")
    mounts = _default_mounts_and(_mount("/mnt/ro", "bind", ro, "rbind", "ro"),
                                 _mount("/mnt/rw", "none", rw, "bind", "rw"))
    r = sh("cat /mnt/ro/file; touch /mnt/ro/new; echo ro=$?; "
           "echo x > /mnt/rw/new; echo rw=$?", mounts=mounts)
    check(r)
    assert "from-host" in r.stdout and "ro=1" in r.stdout, describe(r)
    assert "rw=0" in r.stdout, describe(r)
    assert "Read-only file system" in r.stderr, describe(r)
    assert not os.path.exists(os.path.join(ro, "new"))
    assert open(os.path.join(rw, "new")).read() == "x\n"


def _bundle_with_relative_bind(args):
    """A bundle binding its own "data" dir (a relative source) at /mnt/rel,
    and a working directory that has a "data" dir of its own."""
    cwd = tmpdir()
    b = new_bundle(args, mounts=_default_mounts_and(
        _mount("/mnt/rel", "bind", "data", "rbind", "ro")))
    for top, which in ((b, "bundle"), (cwd, "cwd")):
        os.mkdir(os.path.join(top, "data"), 0o755)
        with open(os.path.join(top, "data", "which"), "w") as f:
            f.write(which + "\n")
    return b, cwd


def test_relative_bind_source_is_relative_to_bundle_run():
    b, cwd = _bundle_with_relative_bind(["cat", "/mnt/rel/which"])
    r = check(coil("run", "--bundle", b, new_id(), root=new_root(), cwd=cwd))
    assert r.stdout == "bundle\n", describe(r)


def test_relative_bind_source_is_relative_to_bundle_create():
    b, cwd = _bundle_with_relative_bind(["cat", "/mnt/rel/which"])
    root, cid = new_root(), new_id()
    out = os.path.join(tmpdir(), "out")
    with open(out, "w") as f:
        check(coil("create", "--bundle", b, cid, root=root, cwd=cwd,
                   stdout=f))
    check(coil("start", cid, root=root))
    wait_status(cid, root, "stopped")
    check(coil("delete", cid, root=root))
    assert open(out).read() == "bundle\n"


def test_tmpfs_options_and_mount_flags():
    mounts = _default_mounts_and(_tmpfs("/data", "size=1m", "mode=700",
                                        "nosuid", "nodev", "noexec"))
    r = check(sh("grep ' /data ' /proc/mounts; grep ' /tmp ' /proc/mounts; "
                 "stat -c %a /data", mounts=mounts))
    lines = r.stdout.splitlines()
    data = lines[0].split()
    opts = data[3].split(",")
    assert data[2] == "tmpfs", describe(r)
    assert "size=1024k" in opts and "mode=700" in opts, describe(r)
    assert {"nosuid", "nodev", "noexec", "rw"} <= set(opts), describe(r)
    tmp = lines[1].split()[3].split(",")
    assert "size=16384k" in tmp and "nosuid" in tmp, describe(r)
    assert lines[-1] == "700", describe(r)


def test_mount_order():
    a = tmpdir(0o777)
    b = tmpdir(0o777)
    with open(os.path.join(a, "from-a"), "w"):
        pass
    with open(os.path.join(b, "from-b"), "w"):
        pass
    mounts = _default_mounts_and(
        # a later mount on top of an earlier one hides it
        _mount("/mnt/over", "bind", a, "rbind", "ro"),
        _mount("/mnt/over", "bind", b, "rbind", "ro"),
        # a later mount inside an earlier one (needs the tmpfs first)
        _tmpfs("/w", "size=1m"),
        _mount("/w/sub", "bind", a, "rbind", "ro"),
    )
    r = check(sh("ls /mnt/over; echo --; ls /w/sub; echo --; "
                 "grep -c ' /mnt/over ' /proc/mounts", mounts=mounts))
    parts = r.stdout.split("--\n")
    assert parts[0].split() == ["from-b"], describe(r)
    assert parts[1].split() == ["from-a"], describe(r)
    assert parts[2].strip() == "2", describe(r)


def test_mount_inside_does_not_reach_host():
    # rprivate root: a mount made in the container never shows on the host
    # (no user namespace here, so the mount is not merely "locked").
    d = tmpdir(0o777)
    os.mkdir(os.path.join(d, "sub"))
    cfg = base_config([])
    caps = DEFAULT_CAPS + ["CAP_SYS_ADMIN"]
    r = check(sh("mount -t tmpfs inner /mnt/h/sub && touch /mnt/h/sub/in "
                 "&& grep -c ' /mnt/h/sub ' /proc/self/mountinfo",
                 mounts=cfg["mounts"] + [
                     {"destination": "/mnt/h", "type": "bind", "source": d,
                      "options": ["rbind", "rw"]}],
                 process={"capabilities": {"bounding": caps,
                                           "effective": caps,
                                           "permitted": caps}},
                 linux={"namespaces": [{"type": t} for t in NAMESPACES
                                       if t != "user"],
                        "uidMappings": None, "gidMappings": None,
                        "rootfsPropagation": "rprivate"}))
    assert r.stdout.strip() == "1", describe(r)
    assert os.listdir(os.path.join(d, "sub")) == []
    with open("/proc/self/mountinfo") as f:
        assert os.path.join(d, "sub") not in f.read()


def test_mount_propagation_flags():
    mounts = _default_mounts_and(_tmpfs("/mnt/s", "size=1m", "rshared"),
                                 _tmpfs("/mnt/u", "size=1m", "unbindable"),
                                 _tmpfs("/mnt/p", "size=1m", "private"))
    r = check(sh("grep -E ' /mnt/(s|u|p) ' /proc/self/mountinfo",
                 mounts=mounts))
    info = {}
    for l in r.stdout.splitlines():
        f = l.split()
        sep = f.index("-")
        info[f[4]] = f[6:sep]
    assert any(x.startswith("shared:") for x in info["/mnt/s"]), describe(r)
    assert "unbindable" in info["/mnt/u"], describe(r)
    assert info["/mnt/p"] == [], describe(r)


def test_masked_paths():
    r = sh('echo "keys=$(cat /proc/keys | wc -c)"; '
           'echo "timer_list=$(cat /proc/timer_list | wc -c)"; '
           'echo "acpi=$(ls -A /proc/acpi | wc -l)"; '
           'echo "acpi_write=$(touch /proc/acpi/x 2>&1)"; '
           'grep -E " /(proc|sys)/[^ ]+ " /proc/self/mountinfo')
    got = dict(l.split("=", 1) for l in r.stdout.splitlines() if "=" in l)
    for k in ("keys", "timer_list", "acpi"):
        assert got.get(k) == "0", "%s is not masked\n%s" % (k, describe(r))
    assert got.get("acpi_write"), describe(r)
    mounted = set(l.split()[4] for l in r.stdout.splitlines()
                  if len(l.split()) > 4 and l.split()[4].startswith("/proc"))
    for p in ("/proc/keys", "/proc/timer_list", "/proc/acpi", "/proc/kcore"):
        if os.path.exists(p):
            assert p in mounted, "%s not masked by a mount\n%s" % (
                p, describe(r))
    # masked paths that do not exist are skipped, not an error
    assert not os.path.exists("/proc/sched_debug")
    assert "/proc/sched_debug" not in mounted


def test_masked_paths_custom():
    # a readable file and a directory, masked and not
    script = ('echo "version=$(cat /proc/version | wc -c)"; '
              'echo "sys=$(ls /proc/sys | wc -l)"')
    r = check(sh(script, linux={"maskedPaths": ["/proc/version",
                                                "/proc/sys"],
                                "readonlyPaths": []}))
    got = dict(l.split("=", 1) for l in r.stdout.splitlines())
    assert got == {"version": "0", "sys": "0"}, describe(r)
    r = check(sh(script, linux={"maskedPaths": [], "readonlyPaths": []}))
    got = dict(l.split("=", 1) for l in r.stdout.splitlines())
    assert int(got["version"]) > 0 and int(got["sys"]) > 0, describe(r)


def test_readonly_paths():
    r = sh("cat /proc/sys/net/ipv4/ip_forward; "
           "echo 1 > /proc/sys/net/ipv4/ip_forward; echo rc=$?; "
           "grep ' /proc/sys ' /proc/mounts")
    assert "rc=1" in r.stdout, describe(r)
    assert "Read-only file system" in r.stderr, describe(r)
    assert re.search(r" /proc/sys proc ro[ ,]", r.stdout), describe(r)


def test_readonly_paths_writable_when_not_listed():
    # net sysctls are writable by CAP_NET_ADMIN in the netns's user ns
    caps = DEFAULT_CAPS + ["CAP_NET_ADMIN"]
    r = check(sh("echo 1 > /proc/sys/net/ipv4/ip_forward && "
                 "cat /proc/sys/net/ipv4/ip_forward",
                 linux={"readonlyPaths": []},
                 process={"capabilities": {"bounding": caps,
                                           "effective": caps,
                                           "permitted": caps}}))
    assert r.stdout.strip() == "1", describe(r)


def _status_caps(out):
    caps = {}
    for l in out.splitlines():
        if l.startswith("Cap"):
            k, v = l.split(":")
            caps[k] = int(v.strip(), 16)
    return caps


def test_capabilities_root():
    few = ["CAP_CHOWN", "CAP_KILL", "CAP_NET_BIND_SERVICE"]
    r = check(sh("grep ^Cap /proc/self/status",
                 process={"capabilities": {"bounding": few,
                                           "effective": few,
                                           "permitted": few}}))
    c = _status_caps(r.stdout)
    m = cap_mask(few)
    assert c == {"CapInh": 0, "CapPrm": m, "CapEff": m, "CapBnd": m,
                 "CapAmb": 0}, (c, describe(r))


def test_capabilities_default_set():
    r = check(sh("grep ^Cap /proc/self/status"))
    c = _status_caps(r.stdout)
    m = cap_mask(DEFAULT_CAPS)
    assert m == 0xa80425fb
    assert c["CapBnd"] == m and c["CapEff"] == m and c["CapPrm"] == m, c


def test_capabilities_all_five_sets_non_root():
    amb = ["CAP_NET_BIND_SERVICE", "CAP_KILL"]
    r = check(sh("grep ^Cap /proc/self/status",
                 process={"user": {"uid": 1000, "gid": 1000},
                          "capabilities": {"bounding": DEFAULT_CAPS,
                                           "effective": amb,
                                           "permitted": amb,
                                           "inheritable": amb,
                                           "ambient": amb}}))
    c = _status_caps(r.stdout)
    m = cap_mask(amb)
    assert c == {"CapInh": m, "CapPrm": m, "CapEff": m,
                 "CapBnd": cap_mask(DEFAULT_CAPS), "CapAmb": m}, (c,
                                                                  describe(r))


def test_capabilities_non_root_without_ambient_has_none():
    r = check(sh("grep ^Cap /proc/self/status",
                 process={"user": {"uid": 1000, "gid": 1000}}))
    c = _status_caps(r.stdout)
    assert c["CapEff"] == 0 and c["CapPrm"] == 0 and c["CapAmb"] == 0, c
    assert c["CapBnd"] == cap_mask(DEFAULT_CAPS), c


def test_capability_really_denied():
    r = sh("chown 1000 /tmp && echo chowned",
           process={"capabilities": {"bounding": ["CAP_KILL"],
                                     "effective": ["CAP_KILL"],
                                     "permitted": ["CAP_KILL"]}})
    assert "chowned" not in r.stdout, describe(r)
    assert "Operation not permitted" in r.stderr, describe(r)


def test_no_new_privs():
    r = check(sh("grep ^NoNewPrivs /proc/self/status"))
    assert r.stdout.split() == ["NoNewPrivs:", "1"], describe(r)
    r = check(sh("grep ^NoNewPrivs /proc/self/status",
                 process={"noNewPrivileges": False}))
    assert r.stdout.split() == ["NoNewPrivs:", "0"], describe(r)


def test_rlimits():
    r = check(sh("ulimit -n; grep -E 'Max (open files|core file size)' "
                 "/proc/self/limits",
                 process={"rlimits": [
                     {"type": "RLIMIT_NOFILE", "soft": 100, "hard": 200},
                     {"type": "RLIMIT_CORE", "soft": 0, "hard": 0}]}))
    lines = r.stdout.splitlines()
    assert lines[0] == "100", describe(r)
    assert any(l.split()[-3:] == ["100", "200", "files"] for l in lines), \
        describe(r)
    assert any(l.split()[-3:] == ["0", "0", "bytes"] for l in lines), \
        describe(r)


def test_rlimit_unknown_type_rejected():
    root = new_root()
    b = new_bundle(["true"], process={"rlimits": [
        {"type": "RLIMIT_BOGUS", "soft": 1, "hard": 1}]})
    r = coil("run", "--bundle", b, new_id(), root=root)
    assert r.returncode not in (0, None), describe(r)
    assert "RLIMIT_BOGUS" in r.stderr, describe(r)
    assert os.listdir(root) == []


def test_oom_score_adj():
    r = check(sh("cat /proc/self/oom_score_adj",
                 process={"oomScoreAdj": 500}))
    assert r.stdout.strip() == "500", describe(r)


def test_hostname_and_domainname():
    r = check(sh("hostname; cat /proc/sys/kernel/domainname",
                 hostname="box1", domainname="example.test"))
    assert r.stdout.split() == ["box1", "example.test"], describe(r)
    assert os.uname().nodename != "box1"


def test_sysctl_namespaced():
    with open("/proc/sys/net/ipv4/ip_forward") as f:
        host_before = f.read()
    r = check(sh("cat /proc/sys/net/ipv4/ip_forward "
                 "/proc/sys/net/ipv4/ping_group_range",
                 linux={"sysctl": {"net.ipv4.ip_forward": "1",
                                   "net.ipv4.ping_group_range": "0 10"}}))
    lines = r.stdout.splitlines()
    assert lines[0] == "1", describe(r)
    assert lines[1].split() == ["0", "10"], describe(r)
    with open("/proc/sys/net/ipv4/ip_forward") as f:
        assert f.read() == host_before


def test_sysctl_in_joined_namespaces_of_the_containers_own():
    # What podman does for its networks and pods: it makes the network (and
    # ipc) namespace, the config joins it by path and sets sysctls in it.
    # Only the host's own namespaces are refused
    # (test_state_security.py::test_sysctl_needs_a_namespace_coil_made).
    holder = subprocess.Popen(["unshare", "--net", "--ipc", "sleep", "1000"])
    on_cleanup(lambda: (holder.kill(), holder.wait()))
    net, ipc = ("/proc/%d/ns/%s" % (holder.pid, n) for n in ("net", "ipc"))
    deadline = time.time() + 60
    while os.readlink(net) == os.readlink("/proc/self/ns/net"):
        assert time.time() < deadline, "unshare did not make a namespace"
        time.sleep(0.05)
    with open("/proc/sys/kernel/shmmni") as f:
        host_shmmni = f.read()
    namespaces = [{"type": t} for t in ("pid", "mount", "uts")] + [
        {"type": "network", "path": net}, {"type": "ipc", "path": ipc}]
    r = check(sh("readlink /proc/self/ns/net; cat /proc/sys/kernel/shmmni "
                 "/proc/sys/net/ipv4/ping_group_range",
                 linux={"namespaces": namespaces, "uidMappings": [],
                        "gidMappings": [],
                        "sysctl": {"kernel.shmmni": "1234",
                                   "net.ipv4.ping_group_range": "0 10"}}))
    lines = r.stdout.splitlines()
    assert lines[0] == os.readlink(net), describe(r)
    assert lines[1] == "1234" and lines[2].split() == ["0", "10"], describe(r)
    with open("/proc/sys/kernel/shmmni") as f:
        assert f.read() == host_shmmni


def test_sysctl_unnamespaced_rejected():
    with open("/proc/sys/kernel/panic") as f:
        before = f.read()
    root = new_root()
    b = new_bundle(["true"], linux={"sysctl": {"kernel.panic": "7"}})
    r = coil("run", "--bundle", b, new_id(), root=root)
    assert r.returncode not in (0, None), describe(r)
    assert "kernel.panic" in r.stderr, describe(r)
    assert os.listdir(root) == []
    with open("/proc/sys/kernel/panic") as f:
        assert f.read() == before


def test_tmpfs_keeps_the_mode_of_its_mount_point():
    # As runc: without mode= a tmpfs takes the covered directory's mode; a
    # mode= option still wins; over a missing directory tmpfs's 1777 stays.
    cfg = base_config(["true"])
    mounts = cfg["mounts"] + [
        {"destination": d, "type": "tmpfs", "source": "tmpfs",
         "options": opts}
        for d, opts in (("/mnt/kept", ["nosuid"]), ("/mnt/over", ["mode=700"]),
                        ("/mnt/new", []))]
    b = new_bundle(["stat", "-c", "%n %a", "/mnt/kept", "/mnt/over",
                    "/mnt/new"], mounts=mounts)
    for d, mode in (("kept", 0o710), ("over", 0o755)):
        p = os.path.join(b, "rootfs", "mnt", d)
        os.mkdir(p)
        st = os.stat(os.path.join(b, "rootfs"))
        os.chown(p, st.st_uid, st.st_gid)
        os.chmod(p, mode)
    r = check(run(b))
    assert r.stdout.splitlines() == ["/mnt/kept 710", "/mnt/over 700",
                                     "/mnt/new 1777"], describe(r)


def test_loopback_is_up_in_a_new_network_namespace():
    # As runc: a new network namespace gets "lo" up (the kernel creates it
    # down), so localhost works inside.
    r = check(sh("cat /sys/class/net/lo/flags; ip -o link show lo; "
                 "ping -c1 -W2 127.0.0.1 >/dev/null && echo ping-ok",
                 mounts=base_config([])["mounts"] + [
                     {"destination": "/sys", "type": "sysfs",
                      "source": "sysfs", "options": ["ro", "nosuid"]}],
                 process={"capabilities": {
                     "bounding": ["CAP_NET_RAW"], "effective": ["CAP_NET_RAW"],
                     "permitted": ["CAP_NET_RAW"]}}))
    lines = r.stdout.splitlines()
    assert int(lines[0], 16) & 1, describe(r)  # IFF_UP
    assert ",UP" in lines[1] or "<UP" in lines[1], describe(r)
    assert lines[-1] == "ping-ok", describe(r)


def test_sysctl_hostname_and_domainname_rejected():
    # As runc: these have their own config fields.
    for key, field in (("kernel.hostname", "hostname"),
                       ("kernel.domainname", "domainname")):
        root = new_root()
        b = new_bundle(["true"], linux={"sysctl": {key: "x"}})
        r = coil("run", "--bundle", b, new_id(), root=root)
        assert r.returncode == 125, describe(r)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, describe(r)
        assert "linux.sysctl." + key in lines[0], describe(r)
        assert '"%s"' % field in lines[0], describe(r)
        assert os.listdir(root) == []


def _seccomp(rules, default="SCMP_ACT_ALLOW"):
    return {"seccomp": {"defaultAction": default,
                        "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86",
                                          "SCMP_ARCH_X32"],
                        "syscalls": rules}}


def _sh_mkdir_errno(script, errno):
    """sh script (checked) with mkdir and mkdirat failing with errno."""
    return check(sh(script, linux=_seccomp([{"names": ["mkdir", "mkdirat"],
                                             "action": "SCMP_ACT_ERRNO",
                                             "errnoRet": errno}])))


def test_seccomp_errno():
    r = _sh_mkdir_errno("mkdir /tmp/x; echo rc=$?; ls /tmp", 1)
    assert "Operation not permitted" in r.stderr, describe(r)
    assert "rc=1" in r.stdout and "x" not in r.stdout.split(), describe(r)


def test_seccomp_other_errno():
    r = _sh_mkdir_errno("mkdir /tmp/x; echo rc=$?", 13)
    assert "Permission denied" in r.stderr, describe(r)


def test_seccomp_args_rule():
    # chmod 777 is refused, chmod 755 is not
    rules = [{"names": ["chmod"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
              "args": [{"index": 1, "value": 0o777, "op": "SCMP_CMP_EQ"}]},
             {"names": ["fchmodat"], "action": "SCMP_ACT_ERRNO",
              "errnoRet": 1,
              "args": [{"index": 2, "value": 0o777, "op": "SCMP_CMP_EQ"}]}]
    r = check(sh("touch /tmp/f; chmod 777 /tmp/f; echo a=$?; "
                 "chmod 755 /tmp/f; echo b=$?; stat -c %a /tmp/f",
                 linux=_seccomp(rules)))
    assert r.stdout.split() == ["a=1", "b=0", "755"], describe(r)
    assert "Operation not permitted" in r.stderr, describe(r)


def test_seccomp_kill():
    # (static glibc calls uname at start-up, so use sethostname)
    r = sh("hostname other; echo rc=$?; hostname",
           linux=_seccomp([{"names": ["sethostname"],
                            "action": "SCMP_ACT_KILL_PROCESS"}]))
    check(r)
    assert r.stdout.split() == ["rc=159", "coil-test"], describe(r)


def test_seccomp_bad_action_rejected():
    root = new_root()
    b = new_bundle(["true"], linux=_seccomp([{"names": ["mkdir"],
                                              "action": "SCMP_ACT_FOO"}]))
    r = coil("run", "--bundle", b, new_id(), root=root)
    assert r.returncode not in (0, None), describe(r)
    assert "SCMP_ACT_FOO" in r.stderr and "linux.seccomp" in r.stderr, \
        describe(r)
    assert os.listdir(root) == []


def test_seccomp_compile_deadline():
    # Two rules for one syscall, each comparing two arguments, the later
    # argument's values differing in the high 32 bits: libseccomp 2.5.4
    # never finishes merging them. coil gives up after its deadline with a
    # one-line error and leaves nothing behind (the runner checks for
    # leftover cgroups, mounts and processes).
    rules = [{"names": ["mmap"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
              "args": [{"index": 3, "value": 1, "op": "SCMP_CMP_LE"},
                       {"index": 5, "value": v, "op": "SCMP_CMP_EQ"}]}
             for v in (1, 1 << 33)]
    root = new_root()
    b = new_bundle(["true"], linux=_seccomp(rules))
    for argv in (["run", "--bundle", b, new_id()],
                 ["create", "--bundle", b, new_id()]):
        r = coil(*argv, root=root, timeout=120)
        assert r.returncode == (125 if argv[0] == "run" else 1), describe(r)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, describe(r)
        assert "linux.seccomp: compiling the filter took longer than" \
            in lines[0], describe(r)
        assert os.listdir(root) == [], describe(r)


def test_default_devices():
    r = check(sh("ls -l /dev/null /dev/zero /dev/full /dev/random "
                 "/dev/urandom /dev/tty; echo x > /dev/null && echo null-ok; "
                 "head -c 4 /dev/zero | wc -c; ls -l /dev/ptmx /dev/fd "
                 "/dev/stdin"))
    assert "null-ok" in r.stdout and "\n4\n" in r.stdout, describe(r)
    for d in ("null", "zero", "full", "random", "urandom", "tty"):
        line = [l for l in r.stdout.splitlines() if l.endswith("/dev/" + d)]
        assert line and line[0].startswith("c"), (d, describe(r))


def test_cgroup_namespace_root():
    r = check(sh("cat /proc/self/cgroup"))
    for l in r.stdout.splitlines():
        assert l.split(":", 2)[2] == "/", describe(r)


def test_join_network_namespace_by_path():
    root = new_root()
    a = new_bundle(["sleep", "100"])
    ida = new_id()
    check(coil("create", "--bundle", a, ida, root=root))
    try:
        pid = state(ida, root)["pid"]
        target = os.readlink("/proc/%d/ns/net" % pid)
        assert target != host_ns("net")
        nss = [{"type": t} for t in NAMESPACES if t != "network"]
        nss.append({"type": "network", "path": "/proc/%d/ns/net" % pid})
        r = check(sh("readlink /proc/self/ns/net; readlink /proc/self/ns/uts",
                     linux={"namespaces": nss}))
        lines = r.stdout.split()
        assert lines[0] == target, describe(r)
        assert lines[1] != os.readlink("/proc/%d/ns/uts" % pid), describe(r)
    finally:
        coil("delete", "--force", ida, root=root)


def test_join_bad_namespace_path_fails():
    root = new_root()
    nss = [{"type": t} for t in NAMESPACES if t != "network"]
    nss.append({"type": "network", "path": "/nonexistent/ns"})
    b = new_bundle(["true"], linux={"namespaces": nss})
    r = coil("run", "--bundle", b, new_id(), root=root)
    assert r.returncode not in (0, None), describe(r)
    assert "/nonexistent/ns" in r.stderr, describe(r)
    assert os.listdir(root) == []


def _join(nsmap, script, **linux):
    """Creates container A, then runs script in a container joining A's
    namespaces listed in nsmap ({type: ns file name}); returns (r, links of
    A)."""
    root = new_root()
    a = new_bundle(["sleep", "100"])
    ida = new_id()
    check(coil("create", "--bundle", a, ida, root=root))
    try:
        pid = state(ida, root)["pid"]
        links = {t: os.readlink("/proc/%d/ns/%s" % (pid, f))
                 for t, f in NS_FILES.items()}
        nss = [{"type": t} for t in NAMESPACES
               if t not in nsmap and (t != "user" or "user" not in linux)]
        nss += [{"type": t, "path": "/proc/%d/ns/%s" % (pid, f)}
                for t, f in nsmap.items()]
        linux.pop("user", None)
        r = sh(script, linux=dict(linux, namespaces=nss))
        return r, links
    finally:
        coil("delete", "--force", ida, root=root)


def test_join_network_namespace_by_path_without_userns():
    r, links = _join({"network": "net"}, "readlink /proc/self/ns/net",
                     uidMappings=None, gidMappings=None, user=True)
    check(r)
    assert r.stdout.strip() == links["network"], describe(r)


def test_join_user_and_network_namespaces_by_path():
    # the pod pattern: share the sandbox's user and network namespaces
    r, links = _join({"user": "user", "network": "net"},
                     "for n in user net uts; do readlink /proc/self/ns/$n; "
                     "done; cat /proc/self/uid_map",
                     uidMappings=None, gidMappings=None)
    check(r)
    lines = r.stdout.splitlines()
    assert lines[0] == links["user"] and lines[1] == links["network"], \
        describe(r)
    assert lines[2] != links["uts"], describe(r)
    assert lines[3].split() == ["0", "100000", "65536"], describe(r)


def test_config_devices():
    r = check(sh("ls -l /dev/fuse; stat -c %t,%T /dev/fuse",
                 linux={"devices": [{"path": "/dev/fuse", "type": "c",
                                     "major": 10, "minor": 229,
                                     "fileMode": 438, "uid": 0, "gid": 0}]}))
    assert r.stdout.startswith("c"), describe(r)
    assert r.stdout.split()[-1] == "a,e5", describe(r)
