"""OCI hooks: order, the state each one gets on stdin, failure and timeout."""

import json
import os
import time

from harness import (DEFAULT_CAPS, base_config, cap_mask, check, coil,
                     describe, new_bundle, new_id, new_root, run, state,
                     tmpdir, wait_status, write_config)

KINDS = ["prestart", "createRuntime", "createContainer", "startContainer",
         "poststart", "poststop"]
# The runtime spec's statuses by lifecycle step: the create hooks come after
# step 2 ("creating": making the environment), so "created", as crun and
# runtime-tools' hooks_stdin have it (runc says "creating").
WANT_STATUS = {"prestart": "created", "createRuntime": "created",
               "createContainer": "created", "startContainer": "created",
               "poststart": "running", "poststop": "stopped"}

# Appends "<kind> <status> <hostname>" and the state JSON (one line) to LOG.
HOOK = """#!/bin/sh
s=$(cat)
st=$(echo "$s" | sed -n 's/.*"status" *: *"\\([a-z]*\\)".*/\\1/p')
printf '%%s %%s %%s\\n%%s\\n' "$1" "$st" "$(hostname)" "$(echo "$s" | tr -d '\\n')" >> %s
"""


def _write(path, text, mode=0o755):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def _setup_hooks(args, extra_hooks=None):
    """A bundle whose six hooks log to <logdir>/log. startContainer runs in
    the container (its path resolves there), so its script lives in the
    rootfs and the log dir is bind-mounted at /hooklog."""
    logdir = tmpdir(0o777)
    log = os.path.join(logdir, "log")
    _write(log, "", 0o666)
    cfg = base_config(args)
    mounts = cfg["mounts"] + [{"destination": "/hooklog", "type": "bind",
                               "source": logdir, "options": ["rbind", "rw"]}]
    b = new_bundle(args, mounts=mounts)
    host_script = os.path.join(b, "hook.sh")
    _write(host_script, HOOK % log)
    # inside the container: the same script, logging through the bind mount
    rootfs = os.path.join(b, "rootfs")
    in_script = os.path.join(rootfs, "hooks", "hook.sh")
    _write(in_script, HOOK % "/hooklog/log")
    st = os.stat(rootfs)
    os.chown(os.path.dirname(in_script), st.st_uid, st.st_gid)
    os.chown(in_script, st.st_uid, st.st_gid)
    hooks = {}
    for k in KINDS:
        path = "/hooks/hook.sh" if k == "startContainer" else host_script
        hooks[k] = [{"path": path, "args": ["hook.sh", k]}]
    for k, v in (extra_hooks or {}).items():
        hooks[k] = v
    cfg = dict(cfg, mounts=mounts, hooks=hooks)
    write_config(b, cfg)
    return b, log


def _parse_log(log):
    with open(log) as f:
        lines = f.read().splitlines()
    out = []
    for head, js in zip(lines[0::2], lines[1::2]):
        kind, status, host = (head.split(" ") + ["", ""])[:3]
        try:
            st = json.loads(js)
        except ValueError:
            raise AssertionError("hook %s got non-JSON state %r" % (kind, js))
        out.append((kind, status, host, st))
    return out


def test_hooks_order_and_state():
    root = new_root()
    b, log = _setup_hooks(["sh", "-c", "echo main"])
    cid = new_id()
    check(coil("create", "--bundle", b, cid, root=root))
    pid = state(cid, root)["pid"]
    check(coil("start", cid, root=root))
    wait_status(cid, root, "stopped")
    check(coil("delete", cid, root=root))
    got = _parse_log(log)
    assert [g[0] for g in got] == KINDS, open(log).read()
    for kind, status, host, st in got:
        assert st["id"] == cid and st["bundle"] == b, (kind, st)
        assert st["status"] == WANT_STATUS[kind], (kind, st)
        assert status == WANT_STATUS[kind], (kind, status)
    by = {g[0]: g for g in got}
    assert by["createRuntime"][3]["pid"] == pid, by["createRuntime"]
    assert by["prestart"][3]["pid"] == pid, by["prestart"]
    assert by["poststart"][3]["pid"] == pid, by["poststart"]
    # startContainer runs in the container's namespaces
    assert by["startContainer"][2] == "coil-test", by["startContainer"]
    assert by["poststart"][2] == os.uname().nodename, by["poststart"]


def test_hooks_with_run():
    root = new_root()
    b, log = _setup_hooks(["sh", "-c", "echo main"])
    r = check(run(b, root=root))
    assert "main" in r.stdout, describe(r)
    assert [g[0] for g in _parse_log(log)] == KINDS, open(log).read()


def test_hook_args_and_env():
    d = tmpdir(0o777)
    out = os.path.join(d, "out")
    script = os.path.join(d, "h.sh")
    _write(script, '#!/bin/sh\necho "$0|$1|$2|$HOOKVAR" > %s\n' % out)
    root = new_root()
    b = new_bundle(["true"], hooks={"createRuntime": [
        {"path": script, "args": ["zero", "one", "two"],
         "env": ["HOOKVAR=hv"]}]})
    check(run(b, root=root))
    assert open(out).read().strip() == "%s|one|two|hv" % script or \
        open(out).read().strip() == "zero|one|two|hv", open(out).read()


def test_hook_without_env_inherits_the_runtimes():
    # As runc (Go exec.Cmd, nil Env): no "env" means coil's own environment;
    # "env": [] means an empty one.
    d = tmpdir(0o777)
    out = os.path.join(d, "out")
    script = os.path.join(d, "h.sh")
    _write(script, '#!/bin/sh\necho "$1=${COIL_HOOK_PROBE:-unset}" >> %s\n'
           % out)
    _write(out, "", 0o666)  # createContainer writes as the container's root
    root = new_root()
    b = new_bundle(["true"], hooks={
        "createRuntime": [{"path": script, "args": ["h", "noenv"]},
                          {"path": script, "args": ["h", "empty"],
                           "env": []}],
        "createContainer": [{"path": script, "args": ["h", "incontainer"]}]})
    check(coil("run", "--bundle", b, new_id(), root=root,
               env={"COIL_HOOK_PROBE": "from-coil"}))
    assert open(out).read().split() == [
        "noenv=from-coil", "empty=unset", "incontainer=from-coil"], \
        open(out).read()


def test_failing_prestart_hook_fails_create():
    d = tmpdir()
    script = os.path.join(d, "fail.sh")
    _write(script, "#!/bin/sh\necho hook-says-no >&2\nexit 3\n")
    root = new_root()
    b = new_bundle(["true"], hooks={"prestart": [{"path": script}]})
    cid = new_id()
    r = coil("create", "--bundle", b, cid, root=root)
    assert r.returncode not in (0, None), describe(r)
    assert "prestart" in r.stderr, describe(r)
    assert "hook-says-no" in r.stderr, describe(r)
    assert coil("state", cid, root=root).returncode != 0
    assert os.listdir(root) == []


def test_hook_timeout_kills_it():
    d = tmpdir()
    pidf = os.path.join(d, "pid")
    script = os.path.join(d, "slow.sh")
    _write(script, "#!/bin/sh\necho $$ > %s\nexec sleep 30\n" % pidf)
    root = new_root()
    b = new_bundle(["true"], hooks={"createRuntime": [
        {"path": script, "timeout": 1}]})
    cid = new_id()
    t0 = time.time()
    r = coil("create", "--bundle", b, cid, root=root, timeout=40)
    dt = time.time() - t0
    assert r.returncode not in (0, None), describe(r)
    assert dt < 10, "create took %.1fs with a 1s hook timeout" % dt
    assert "createRuntime" in r.stderr and "tim" in r.stderr.lower(), \
        describe(r)
    hook_pid = int(open(pidf).read())
    deadline = time.time() + 3
    while os.path.exists("/proc/%d" % hook_pid) and time.time() < deadline:
        time.sleep(0.05)
    if os.path.exists("/proc/%d" % hook_pid):
        with open("/proc/%d/stat" % hook_pid) as f:
            s = f.read()
        assert s.rsplit(")", 1)[1].split()[0] == "Z" or "sleep" not in s, \
            "hook still running: %s" % s
    assert os.listdir(root) == []


def test_hook_with_huge_timeout_runs():
    # Any int of seconds is a valid timeout: the largest must neither wrap
    # into an instant timeout nor stop the hook from running to success.
    d = tmpdir(0o777)
    out = os.path.join(d, "out")
    script = os.path.join(d, "h.sh")
    _write(script, "#!/bin/sh\nsleep 0.2\necho ran > %s\n" % out)
    root = new_root()
    b = new_bundle(["true"], hooks={"createRuntime": [
        {"path": script, "timeout": 2147483647}]})
    check(run(b, root=root))
    assert open(out).read() == "ran\n"


def test_failing_poststart_hook_fails_start_and_kills():
    # As runc: a failing poststart hook fails start and kills the
    # container's init, leaving a stopped container for delete.
    d = tmpdir()
    script = os.path.join(d, "fail.sh")
    _write(script, "#!/bin/sh\necho post-says-no >&2\nexit 1\n")
    root = new_root()
    b = new_bundle(["sleep", "100"], hooks={"poststart": [{"path": script}]})
    cid = new_id()
    check(coil("create", "--bundle", b, cid, root=root))
    pid = state(cid, root)["pid"]
    r = coil("start", cid, root=root)
    assert r.returncode == 1, describe(r)
    assert "hooks.poststart[0]" in r.stderr, describe(r)
    assert "post-says-no" in r.stderr, describe(r)
    assert not os.path.exists("/proc/%d/cmdline" % pid) or \
        open("/proc/%d/cmdline" % pid, "rb").read() == b"", \
        "init %d still running after a failed poststart" % pid
    assert state(cid, root)["status"] == "stopped"
    check(coil("delete", cid, root=root))
    assert os.listdir(root) == []


def test_failing_poststart_hook_fails_run():
    d = tmpdir()
    script = os.path.join(d, "fail.sh")
    _write(script, "#!/bin/sh\nexit 1\n")
    root = new_root()
    b = new_bundle(["sleep", "100"], hooks={"poststart": [{"path": script}]})
    r = run(b, root=root, timeout=30)
    assert r.returncode == 125, describe(r)
    assert "hooks.poststart[0]" in r.stderr, describe(r)
    assert os.listdir(root) == []


def test_failing_poststop_hook_warns_and_the_rest_run():
    # runtime spec: a failing poststop hook is a warning; the remaining
    # hooks and the delete go on.
    d = tmpdir()
    fail = os.path.join(d, "fail.sh")
    _write(fail, "#!/bin/sh\necho stop-says-no >&2\nexit 1\n")
    out = os.path.join(d, "out")
    ok = os.path.join(d, "ok.sh")
    _write(ok, "#!/bin/sh\necho ran > %s\n" % out)
    root = new_root()
    b = new_bundle(["true"], hooks={"poststop": [{"path": fail},
                                                 {"path": ok}]})
    cid = new_id()
    check(coil("create", "--bundle", b, cid, root=root))
    check(coil("start", cid, root=root))
    wait_status(cid, root, "stopped")
    r = check(coil("delete", cid, root=root))
    assert "warning" in r.stderr and "hooks.poststop[0]" in r.stderr, \
        describe(r)
    assert "stop-says-no" in r.stderr, describe(r)
    assert open(out).read() == "ran\n"
    assert os.listdir(root) == []


# A startContainer hook from the image that tries to make /proc/sys
# writable; it records its effective capabilities and the outcome in the
# bind-mounted /hooklog, and exits 0 either way.
PRIV_HOOK = """#!/bin/sh
grep CapEff /proc/self/status > /hooklog/caps
if mount -o remount,rw /proc/sys 2>/hooklog/mount.err; then
  echo remounted > /hooklog/mount
else
  echo refused > /hooklog/mount
fi
"""


def test_start_container_hook_has_only_the_process_privileges():
    logdir = tmpdir(0o777)
    mounts = base_config([])["mounts"] + [
        {"destination": "/hooklog", "type": "bind", "source": logdir,
         "options": ["rbind", "rw"]}]
    b = new_bundle(["sh", "-c", "grep ' /proc/sys ' /proc/mounts"],
                   mounts=mounts,
                   hooks={"startContainer": [{"path": "/hooks/priv.sh"}]})
    rootfs = os.path.join(b, "rootfs")
    script = os.path.join(rootfs, "hooks", "priv.sh")
    _write(script, PRIV_HOOK)
    st = os.stat(rootfs)
    os.chown(os.path.dirname(script), st.st_uid, st.st_gid)
    os.chown(script, st.st_uid, st.st_gid)
    r = check(run(b, root=new_root()))
    with open(os.path.join(logdir, "caps")) as f:
        cap_eff = int(f.read().split()[1], 16)
    with open(os.path.join(logdir, "mount")) as f:
        outcome = f.read().strip()
    assert (cap_eff, outcome) == (cap_mask(DEFAULT_CAPS), "refused"), \
        "hook CapEff %#x (process %#x), remount %s" % (
            cap_eff, cap_mask(DEFAULT_CAPS), outcome)
    # and the process still finds /proc/sys read-only
    opts = r.stdout.split()[3].split(",")
    assert "ro" in opts, describe(r)
