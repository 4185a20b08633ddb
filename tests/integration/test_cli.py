"""The CLI surface: --version, --help, global flags, spec, list, id checks."""

import json
import os
import subprocess

from harness import (COIL, check, coil, describe, new_bundle, new_id, new_root,
                     place_rootfs, read_config, register_id, run, sh,
                     tmpdir, write_config)

COMMANDS = ["spec", "create", "start", "run", "state", "kill", "delete",
            "list", "events"]


def test_version():
    r = check(coil("--version"))
    assert "0.1.0" in r.stdout or "0.1.0" in r.stderr, describe(r)


def test_help_global():
    r = check(coil("--help"))
    for c in COMMANDS:
        assert c in r.stdout, "%r missing from --help\n%s" % (c, describe(r))


def test_help_every_command():
    for c in COMMANDS:
        r = coil(c, "--help")
        assert r.returncode == 0, describe(r)
        assert c in r.stdout.lower() and len(r.stdout.strip()) > 10, describe(r)


def test_unknown_command_fails():
    r = coil("frobnicate")
    assert r.returncode not in (0, None), describe(r)
    assert "frobnicate" in r.stderr, describe(r)


def test_systemd_cgroup_without_a_bus_fails_cleanly():
    """--systemd-cgroup asks systemd over the system bus; with none the
    create fails naming the option and the socket, its init killed and
    its state gone (the runner checks that no cgroup is left)."""
    root = new_root()
    b = new_bundle(["true"])
    cid = new_id()
    sock = os.path.join(tmpdir(), "no-bus")
    r = coil("--systemd-cgroup", "run", "--bundle", b, cid, root=root,
             env={"DBUS_SYSTEM_BUS_ADDRESS": "unix:path=" + sock})
    assert r.returncode not in (0, None), describe(r)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, describe(r)
    assert "--systemd-cgroup" in lines[0] and sock in lines[0], describe(r)
    assert not os.path.exists(os.path.join(root, cid)), describe(r)


def _run_without(wrap, root, *args):
    """coil ARGS started under wrap (argv put in front)."""
    return subprocess.run(wrap + [COIL, "--root", root] + list(args),
                          stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60)


def test_libsystemd_is_needed_only_by_the_systemd_cgroup_driver():
    """coil loads libsystemd only for --systemd-cgroup: without the library
    (here an empty file over it, in a private mount namespace) every other
    run works, and the driver fails cleanly naming the library."""
    lib = os.path.realpath("/usr/lib/x86_64-linux-gnu/libsystemd.so.0")
    hide = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount --bind /dev/null "$0" && exec "$@"', lib]
    root = new_root()
    b = new_bundle(["true"])
    r = check(_run_without(hide, root, "run", "--bundle", b, new_id()))
    assert r.stderr == "", describe(r)
    cid = new_id()
    r = _run_without(hide, root, "--systemd-cgroup", "run", "--bundle", b, cid)
    assert r.returncode not in (0, 127, None), describe(r)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, describe(r)
    assert "--systemd-cgroup" in lines[0], describe(r)
    assert "libsystemd.so.0" in lines[0], describe(r)
    assert not os.path.exists(os.path.join(root, cid)), describe(r)


def test_libmount_is_loaded_only_to_build_a_container():
    """coil loads libmount when it builds a container: without the library
    (an empty file over it, in a private mount namespace) state, list and
    call work, and run fails with one line naming the library, leaving no
    state behind."""
    lib = os.path.realpath("/usr/lib/x86_64-linux-gnu/libmount.so.1")
    hide = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount --bind /dev/null "$0" && exec "$@"', lib]
    root = new_root()
    check(_run_without(hide, root, "list"))
    r = _run_without(hide, root, "state", "no-such-container")
    assert r.returncode not in (0, None) and "no-such-container" in r.stderr, (
        describe(r))
    assert "libmount" not in r.stderr, describe(r)
    r = _run_without(hide, root, "call", "--socket",
                     os.path.join(tmpdir(), "none.sock"), "--request", "{}",
                     "-c", "x = 1")
    assert r.returncode == 125 and "connect" in r.stderr, describe(r)
    assert "libmount" not in r.stderr, describe(r)
    b = new_bundle(["true"])
    cid = new_id()
    r = _run_without(hide, root, "run", "--bundle", b, cid)
    assert r.returncode not in (0, 127, None), describe(r)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and "libmount.so.1" in lines[0], describe(r)
    assert not os.path.exists(os.path.join(root, cid)), describe(r)


def test_systemd_cgroups_path_format():
    """With --systemd-cgroup linux.cgroupsPath is "slice:prefix:name"; a
    path of another form is refused before anything is made; without the
    option that form is refused as a cgroup path."""
    root = new_root()
    for path in ("/plain/path", "a:b", "nota-slice:p:n", "a--b.slice:p:n"):
        b = new_bundle(["true"], linux={"cgroupsPath": path})
        cid = new_id()
        r = coil("--systemd-cgroup", "run", "--bundle", b, cid, root=root)
        assert r.returncode not in (0, None), describe(r)
        assert "linux.cgroupsPath" in r.stderr, describe(r)
        assert not os.path.exists(os.path.join(root, cid)), describe(r)
    b = new_bundle(["true"], linux={"cgroupsPath": "system.slice:p:n"})
    r = coil("run", "--bundle", b, new_id(), root=root)
    assert r.returncode not in (0, None), describe(r)
    assert "--systemd-cgroup" in r.stderr, describe(r)


def test_log_json_on_error():
    root = new_root()
    log = os.path.join(tmpdir(), "coil.log")
    cid = new_id()
    r = coil("--log", log, "--log-format", "json", "state", cid, root=root)
    assert r.returncode not in (0, None), describe(r)
    with open(log) as f:
        lines = [l for l in f.read().splitlines() if l.strip()]
    assert lines, "log file is empty\n" + describe(r)
    recs = []
    for l in lines:
        try:
            recs.append(json.loads(l))
        except ValueError:
            raise AssertionError("log line is not JSON: %r" % l)
    errs = [x for x in recs if x.get("level") == "error"]
    assert errs, "no level=error record in %r" % recs
    for x in recs:
        assert set(("level", "msg", "time")) <= set(x), x
    assert cid in errs[-1]["msg"], errs


def test_log_unopenable_is_an_error():
    root = new_root()
    log = os.path.join(tmpdir(), "missing-dir", "coil.log")
    for args in (["list"], ["run", "--bundle", new_bundle(["true"]),
                            new_id()]):
        r = coil("--log", log, *args, root=root)
        assert r.returncode == 1, describe(r)
        assert "--log " + log in r.stderr, describe(r)
        assert "No such file or directory" in r.stderr, describe(r)
        assert len(r.stderr.strip().splitlines()) == 1, describe(r)
        assert not os.path.exists(log)
        assert os.listdir(root) == []


def test_log_text_on_error():
    root = new_root()
    log = os.path.join(tmpdir(), "coil.log")
    cid = new_id()
    r = coil("--log", log, "state", cid, root=root)
    assert r.returncode not in (0, None), describe(r)
    with open(log) as f:
        text = f.read()
    assert cid in text and "error" in text.lower(), text


def test_spec_runs():
    d = tmpdir()
    r = check(coil("spec", "--bundle", d))
    cfg = read_config(d)
    assert cfg["ociVersion"].startswith("1."), cfg
    assert cfg["root"]["path"] == "rootfs", cfg
    cfg["process"]["args"] = ["sh", "-c", "echo spec-ok; hostname"]
    cfg["process"]["terminal"] = False
    write_config(d, cfg)
    place_rootfs(d, cfg)
    r = check(run(d))
    assert "spec-ok" in r.stdout, describe(r)


def test_spec_refuses_to_overwrite():
    d = tmpdir()
    check(coil("spec", "--bundle", d))
    with open(os.path.join(d, "config.json")) as f:
        before = f.read()
    r = coil("spec", "--bundle", d)
    with open(os.path.join(d, "config.json")) as f:
        assert f.read() == before
    assert r.returncode != 0, describe(r)


def test_list_formats():
    root = new_root()
    b = new_bundle(["sleep", "100"])
    ids = [new_id(), new_id()]
    for cid in ids:
        check(coil("create", "--bundle", b, cid, root=root))
    try:
        r = check(coil("list", root=root))
        head = r.stdout.splitlines()[0]
        assert "ID" in head and "STATUS" in head, describe(r)
        for cid in ids:
            rows = [l for l in r.stdout.splitlines() if l.split()[:1] == [cid]]
            assert rows and "created" in rows[0], describe(r)
        r = check(coil("list", "-q", root=root))
        assert sorted(r.stdout.split()) == sorted(ids), describe(r)
        r = check(coil("list", "--format", "json", root=root))
        items = json.loads(r.stdout)
        got = {x["id"]: x for x in items}
        assert sorted(got) == sorted(ids), describe(r)
        for cid in ids:
            assert got[cid]["status"] == "created", got
            assert got[cid]["pid"] > 0, got
    finally:
        for cid in ids:
            coil("delete", "--force", cid, root=root)
    r = check(coil("list", "--format", "json", root=root))
    assert json.loads(r.stdout or "[]") in ([], None), describe(r)


def test_bad_ids_refused():
    root = new_root()
    b = new_bundle(["true"])
    # A name of our own for the escape probe: /tmp is shared.
    escape = os.path.basename(root) + "-escaped"
    bad = ["../" + escape, "a/b", "", ".", "..", "/", "x" * 1025, "a b", "a\nb"]
    register_id("x" * 1025)
    for cid in bad:
        r = coil("create", "--bundle", b, cid, root=root)
        assert r.returncode not in (0, None), "id %r accepted\n%s" % (
            cid, describe(r))
        assert os.listdir(root) == [], "id %r left %r" % (cid,
                                                            os.listdir(root))
        r = coil("run", "--bundle", b, cid, root=root)
        assert r.returncode not in (0, None), "id %r accepted by run\n%s" % (
            cid, describe(r))
        assert os.listdir(root) == [], os.listdir(root)
    # ".." must not have escaped the root either
    assert not os.path.exists(os.path.join(os.path.dirname(root), escape))


def test_long_ids_work():
    # ids are valid up to 1024 bytes: longer than a file name (NAME_MAX 255)
    root = new_root()
    b = new_bundle(["true"])
    for n in (255, 256, 1024):
        cid = register_id(("L%d-%d-" % (os.getpid(), n)).ljust(n, "y"))
        r = coil("run", "--bundle", b, cid, root=root)
        assert r.returncode == 0, "id of %d bytes: exit %s, stderr %r" % (
            n, r.returncode, r.stderr[:300])
        assert os.listdir(root) == []


def test_missing_id_errors():
    root = new_root()
    cid = new_id()
    for args in (["state", cid], ["start", cid], ["kill", cid, "KILL"],
                 ["delete", cid]):
        r = coil(*args, root=root)
        assert r.returncode not in (0, None), describe(r)
        assert cid in r.stderr, describe(r)
    assert os.listdir(root) == []
    # like runc, delete --force of a missing id is not an error
    check(coil("delete", "--force", cid, root=root))
    assert os.listdir(root) == []


def test_missing_bundle_config():
    root = new_root()
    d = tmpdir()
    cid = new_id()
    r = coil("run", "--bundle", d, cid, root=root)
    assert r.returncode not in (0, None), describe(r)
    assert "config.json" in r.stderr, describe(r)
    assert os.listdir(root) == []


def test_bad_config_names_field():
    root = new_root()
    b = new_bundle(["true"])
    cfg = read_config(b)
    cfg["process"]["args"] = ["sh", "-c", 7]
    write_config(b, cfg)
    r = coil("run", "--bundle", b, new_id(), root=root)
    assert r.returncode not in (0, None), describe(r)
    assert "process.args[2]" in r.stderr, describe(r)
    assert os.listdir(root) == []


def test_oci_versions():
    for v in ("1.0.0", "1.0.2", "1.1.0", "1.2.0", "1.3.0"):
        r = sh("true", ociVersion=v)
        assert r.returncode == 0, "ociVersion %s\n%s" % (v, describe(r))
    for v in ("2.0.0", "0.9.0", "x"):
        r = sh("true", ociVersion=v)
        assert r.returncode not in (0, None), describe(r)
        assert "ociVersion" in r.stderr, describe(r)


def test_unknown_properties_ignored():
    r = check(sh("echo fine", foo={"bar": 1}, process={"xyz": [1, 2]},
                 linux={"unknownThing": True, "resources": {"nope": 1}},
                 root={"extra": "x"}))
    assert r.stdout == "fine\n", describe(r)


def test_lsm_fields_ignored_with_warning():
    # with or without an LSM on the host, coil applies none and says so
    r = check(sh("echo ran",
                 process={"apparmorProfile": "coil-test",
                          "selinuxLabel": "system_u:system_r:container_t:s0"},
                 linux={"mountLabel": "system_u:object_r:container_file_t:s0"}))
    assert r.stdout == "ran\n", describe(r)
    err = r.stderr.lower()
    assert "apparmor" in err and "selinux" in err and "warn" in err, \
        describe(r)


def test_debug_flag_logs_more():
    root = new_root()
    log = os.path.join(tmpdir(), "coil.log")
    b = new_bundle(["true"])
    r = check(coil("--debug", "--log", log, "--log-format", "json", "run",
                   "--bundle", b, new_id(), root=root))
    with open(log) as f:
        recs = [json.loads(l) for l in f if l.strip()]
    assert any(x.get("level") == "debug" for x in recs), \
        "no debug record in --log: %r\n%s" % (recs, describe(r))
