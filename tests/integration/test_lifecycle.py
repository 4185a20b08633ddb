"""create/start/state/kill/delete, run's exit status and signal forwarding."""

import ctypes
import errno
import json
import os
import select
import signal
import stat
import subprocess
import threading
import time

from harness import (check, coil, describe, new_bundle, new_id, new_root,
                     on_cleanup, popen, run, sh, state, tmpdir, wait_status)


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_create_start_state_delete():
    root = new_root()
    b = new_bundle(["sleep", "100"], annotations={"org.coil.test": "yes"})
    cid = new_id()
    pidfile = os.path.join(tmpdir(), "pid")
    check(coil("create", "--bundle", b, "--pid-file", pidfile, cid, root=root))
    st = state(cid, root)
    assert st["status"] == "created", st
    assert st["id"] == cid and st["ociVersion"].startswith("1."), st
    assert st["bundle"] == b, st
    assert st.get("annotations", {}).get("org.coil.test") == "yes", st
    pid = st["pid"]
    assert pid > 0 and _alive(pid), st
    with open(pidfile) as f:
        assert int(f.read().strip()) == pid
    check(coil("start", cid, root=root))
    st = state(cid, root)
    assert st["status"] == "running" and st["pid"] == pid, st
    check(coil("kill", cid, "KILL", root=root))
    st = wait_status(cid, root, "stopped")
    assert not _alive(pid)
    check(coil("delete", cid, root=root))
    r = coil("state", cid, root=root)
    assert r.returncode != 0, describe(r)
    assert os.listdir(root) == []


def test_start_releases_init_only_on_start():
    root = new_root()
    out = os.path.join(tmpdir(0o777), "out")
    b = new_bundle(["sh", "-c", "echo started"])
    cid = new_id()
    with open(out, "w") as f:
        check(coil("create", "--bundle", b, cid, root=root, stdout=f))
    time.sleep(0.3)
    assert open(out).read() == "", "process ran before start"
    check(coil("start", cid, root=root))
    wait_status(cid, root, "stopped")
    check(coil("delete", cid, root=root))
    assert open(out).read() == "started\n"


def test_stdout_is_creates_stdout():
    root = new_root()
    d = tmpdir()
    out, err = os.path.join(d, "out"), os.path.join(d, "err")
    b = new_bundle(["sh", "-c", "echo to-stdout; echo to-stderr >&2"])
    cid = new_id()
    with open(out, "w") as fo, open(err, "w") as fe:
        check(coil("create", "--bundle", b, cid, root=root, stdout=fo,
                   stderr=fe))
    check(coil("start", cid, root=root))
    wait_status(cid, root, "stopped")
    check(coil("delete", cid, root=root))
    assert open(out).read() == "to-stdout\n"
    assert "to-stderr\n" in open(err).read()


def _created(args):
    """A container of args created in a new root: (root, bundle, cid)."""
    root = new_root()
    b = new_bundle(args)
    cid = new_id()
    check(coil("create", "--bundle", b, cid, root=root))
    return root, b, cid


def test_start_twice_fails():
    root, b, cid = _created(["sleep", "100"])
    check(coil("start", cid, root=root))
    r = coil("start", cid, root=root)
    assert r.returncode not in (0, None), describe(r)
    assert state(cid, root)["status"] == "running"
    check(coil("delete", "--force", cid, root=root))


def test_start_stopped_fails():
    root, b, cid = _created(["true"])
    check(coil("start", cid, root=root))
    wait_status(cid, root, "stopped")
    r = coil("start", cid, root=root)
    assert r.returncode not in (0, None), describe(r)
    check(coil("delete", cid, root=root))


def test_delete_running_needs_force():
    root, b, cid = _created(["sleep", "100"])
    check(coil("start", cid, root=root))
    pid = state(cid, root)["pid"]
    r = coil("delete", cid, root=root)
    assert r.returncode not in (0, None), describe(r)
    assert state(cid, root)["status"] == "running"
    check(coil("delete", "--force", cid, root=root))
    assert not _alive(pid)
    assert os.listdir(root) == []


def test_delete_created_container_needs_force():
    # runtime spec: deleting a container that is not stopped MUST fail and
    # have no effect (runc deletes a created one anyway)
    root, b, cid = _created(["sleep", "100"])
    pid = state(cid, root)["pid"]
    r = coil("delete", cid, root=root)
    assert r.returncode == 1, describe(r)
    assert "is created" in r.stderr, describe(r)
    assert state(cid, root)["status"] == "created" and _alive(pid)
    check(coil("delete", "--force", cid, root=root))
    assert not _alive(pid)
    assert os.listdir(root) == []


def test_duplicate_id_fails():
    root, b, cid = _created(["sleep", "100"])
    pid = state(cid, root)["pid"]
    r = coil("create", "--bundle", b, cid, root=root)
    assert r.returncode not in (0, None), describe(r)
    assert "exist" in r.stderr, describe(r)
    st = state(cid, root)
    assert st["pid"] == pid and st["status"] == "created", st
    r = coil("run", "--bundle", b, cid, root=root)
    assert r.returncode not in (0, None), describe(r)
    check(coil("delete", "--force", cid, root=root))


def test_concurrent_create_same_id():
    root = new_root()
    b = new_bundle(["sleep", "100"])
    for _ in range(3):
        cid = new_id()
        results = [None, None]
        start = threading.Event()

        def go(i):
            start.wait()
            results[i] = coil("create", "--bundle", b, cid, root=root)
        ts = [threading.Thread(target=go, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        start.set()
        for t in ts:
            t.join()
        rcs = sorted(r.returncode for r in results)
        assert rcs[0] == 0 and rcs[1] not in (0, None), "\n".join(
            describe(r) for r in results)
        st = state(cid, root)
        assert st["status"] == "created" and st["pid"] > 0, st
        check(coil("delete", "--force", cid, root=root))
    assert os.listdir(root) == []


def test_run_exit_code():
    r = sh("exit 3")
    assert r.returncode == 3, describe(r)
    r = sh("true")
    assert r.returncode == 0, describe(r)


def test_run_removes_container():
    root = new_root()
    b = new_bundle(["true"])
    check(run(b, root=root))
    assert os.listdir(root) == []


def test_run_keep_leaves_stopped_container():
    root = new_root()
    b = new_bundle(["sh", "-c", "exit 7"])
    cid = new_id()
    r = coil("run", "--bundle", b, "--keep", cid, root=root)
    assert r.returncode == 7, describe(r)
    st = state(cid, root)
    assert st["status"] == "stopped" and st["id"] == cid, st
    check(coil("delete", cid, root=root))
    assert os.listdir(root) == []
    r = coil("create", "--bundle", b, "--keep", cid, root=root)
    assert r.returncode == 1 and "--keep" in r.stderr, describe(r)
    assert os.listdir(root) == []


def test_run_missing_binary_fails():
    r = sh("exec /does/not/exist")
    assert r.returncode not in (0, None), describe(r)
    b = new_bundle(["/does/not/exist"])
    r = run(b)
    assert r.returncode not in (0, None), describe(r)
    assert "/does/not/exist" in r.stderr, describe(r)


def test_unrunnable_program_fails_create_in_runcs_words():
    # As runc: checked at create, worded as podman and others match them
    # ("no such file or directory" -> 127, "permission denied" -> 126).
    cases = [(["/does/not/exist"], {},
              "exec /does/not/exist: no such file or directory"),
             (["no-such-cmd"], {},
              'exec: "no-such-cmd": executable file not found in $PATH'),
             (["/etc/passwd"], {}, "exec /etc/passwd: permission denied"),
             (["passwd"], {"env": ["PATH=/etc"]},
              "exec passwd: permission denied"),
             (["./hosts"], {"cwd": "/etc"}, "exec ./hosts: permission denied")]
    for args, process, words in cases:
        root = new_root()
        b = new_bundle(args, process=process)
        r = coil("create", "--bundle", b, new_id(), root=root)
        assert r.returncode == 1, describe(r)
        assert words in r.stderr, describe(r)
        assert len(r.stderr.strip().splitlines()) == 1, describe(r)
        assert os.listdir(root) == []
        r = run(b, root=root)
        assert r.returncode == 125 and words in r.stderr, describe(r)
    # found through PATH, relative to cwd, and through a symlink in the root
    for args, process in ((["busybox", "true"], {"env": ["PATH=/x:/bin"]}),
                          (["./busybox", "true"], {"cwd": "/bin"}),
                          (["/usr/bin/env", "true"], {})):
        check(run(new_bundle(args, process=process)))


def _wait_line(p, want, timeout=10):
    """Reads p.stdout until a line equal to want (returns the lines read).
    Gives up after timeout seconds even while the container holds its stdout
    open, and reads a byte at a time so that nothing after the line is taken
    from a later communicate()."""
    fd = p.stdout.fileno()
    got, line = [], b""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        c = os.read(fd, 1)
        if not c:
            break
        line += c
        if c == b"\n":
            got.append(line.decode())
            line = b""
            if got[-1].strip() == want:
                return got
    if line:
        got.append(line.decode())
    raise AssertionError("never saw %r in %ss; got %r; stderr %r" % (
        want, timeout, got,
        p.stderr.read() if p.poll() is not None else "(running)"))


def _finish(p, timeout=15):
    try:
        out, err = p.communicate(timeout=timeout)
    except Exception:  # noqa: BLE001
        p.kill()
        out, err = p.communicate()
        raise AssertionError("coil run did not exit in %ss: %r %r" % (
            timeout, out, err))
    return out, err


def _start_run(script):
    """`coil run` of sh -c script in a new root and bundle: (root, cid, p)."""
    root = new_root()
    b = new_bundle(["sh", "-c", script])
    cid = new_id()
    p = popen("run", "--bundle", b, cid, root=root)
    return root, cid, p


def _trapping(action, sig):
    """A script that runs action on sig, says ready, then loops."""
    return ('trap "%s" %s; echo ready; while true; do sleep 0.1; done'
            % (action, sig))


def test_run_killed_by_signal_137():
    root, cid, p = _start_run("sleep 100 & echo ready; wait")
    _wait_line(p, "ready")
    check(coil("kill", cid, "KILL", root=root))
    out, err = _finish(p)
    assert p.returncode == 137, (p.returncode, out, err)
    assert os.listdir(root) == []


def test_run_forwards_sigterm():
    root, cid, p = _start_run(_trapping("exit 7", "TERM"))
    _wait_line(p, "ready")
    p.send_signal(signal.SIGTERM)
    out, err = _finish(p)
    assert p.returncode == 7, (p.returncode, out, err)
    assert os.listdir(root) == []


def test_run_forwards_sigint_and_sighup():
    for sig, name in ((signal.SIGINT, "INT"), (signal.SIGHUP, "HUP")):
        root, cid, p = _start_run(_trapping("exit 9", name))
        _wait_line(p, "ready")
        p.send_signal(sig)
        out, err = _finish(p)
        assert p.returncode == 9, (name, p.returncode, out, err)


def test_run_default_sigterm_exit_143():
    # init with a handler-less TERM ignores it (PID 1); a child does not.
    root, cid, p = _start_run("sleep 100 & echo ready; wait $!; exit $?")
    _wait_line(p, "ready")
    check(coil("kill", "--all", cid, "TERM", root=root))
    out, err = _finish(p)
    assert p.returncode == 143, (p.returncode, out, err)


class _ArgCmp(ctypes.Structure):
    """libseccomp's struct scmp_arg_cmp."""
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]


def _failing_syscalls(*rules):
    """A preexec_fn loading a real seccomp filter into coil (inherited by
    what it starts) that fails each rule's system call with its errno: rules
    are (name, errno, second argument to match or None for any)."""
    lib = ctypes.CDLL("libseccomp.so.2")
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                     ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
        ctypes.POINTER(_ArgCmp)]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    ctx = lib.seccomp_init(0x7fff0000)  # SCMP_ACT_ALLOW
    assert ctx
    on_cleanup(lambda: lib.seccomp_release(ctx))
    # Root may load it without no_new_privs, which would change what the
    # container may do.
    assert lib.seccomp_attr_set(ctx, 3, 0) == 0  # SCMP_FLTATR_CTL_NNP
    for name, err, arg1 in rules:
        nr = lib.seccomp_syscall_resolve_name(name.encode())
        cmp = (_ArgCmp * 1)(_ArgCmp(1, 4, arg1 or 0, 0))  # SCMP_CMP_EQ
        assert lib.seccomp_rule_add_array(
            ctx, 0x00050000 | err, nr, 0 if arg1 is None else 1, cmp) == 0

    def load():
        if lib.seccomp_load(ctx) != 0:
            os._exit(120)
    return load


def test_run_without_pidfd_still_sees_exit_and_forwards():
    # pidfd_open failing (out of fds, old kernel) must not leave run
    # polling nothing forever.
    b = new_bundle(["sh", "-c", "sleep 0.3; exit 3"])
    r = coil("run", "--bundle", b, new_id(), root=new_root(), timeout=20,
             preexec_fn=_failing_syscalls(("pidfd_open", errno.EMFILE, None)))
    assert r.returncode == 3, describe(r)
    root, cid = new_root(), new_id()
    p = popen("run", "--bundle", new_bundle(["sh", "-c", _trapping(
        "exit 7", "TERM")]), cid, root=root,
        preexec_fn=_failing_syscalls(("pidfd_open", errno.EMFILE, None)))
    _wait_line(p, "ready")
    p.send_signal(signal.SIGTERM)
    out, err = _finish(p)
    assert p.returncode == 7, (p.returncode, out, err)
    assert os.listdir(root) == []


def test_run_without_signalfd_still_forwards():
    # The forwarded signals stay blocked in run: without a signalfd they
    # must still be taken and forwarded, not held forever.
    root, cid = new_root(), new_id()
    p = popen("run", "--bundle", new_bundle(["sh", "-c", _trapping(
        "exit 7", "TERM")]), cid, root=root,
        preexec_fn=_failing_syscalls(("signalfd4", errno.EMFILE, None),
                                     ("signalfd", errno.EMFILE, None)))
    _wait_line(p, "ready")
    p.send_signal(signal.SIGTERM)
    try:
        out, err = p.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        # The container still holds run's stdout: remove it, then fail.
        coil("delete", "--force", cid, root=root)
        p.kill()
        p.communicate()
        raise AssertionError("SIGTERM not forwarded: run still waiting")
    assert p.returncode == 7, (p.returncode, out, err)
    assert os.listdir(root) == []


def test_run_poll_failure_kills_container():
    # run's wait polls 3 fds: failing exactly that poll must not leave it in
    # a blocking wait that forwards no signal and honours no watchdog.
    fail = [(name, errno.ENOMEM, 3) for name in ("poll", "ppoll")]
    root = new_root()
    r = coil("run", "--bundle", new_bundle(["sleep", "60"]), new_id(),
             root=root, timeout=20, preexec_fn=_failing_syscalls(*fail))
    assert r.returncode == 137, describe(r)
    assert "poll: %s; killing it" % os.strerror(errno.ENOMEM) in r.stderr, \
        describe(r)
    assert os.listdir(root) == []


def test_delete_force_when_poll_or_pidfd_fails():
    # delete --force waits (poll on a pidfd, 1 fd) for init to die: a poll
    # failure or no pidfd must still kill init and wait for it, neither
    # giving up at once nor taking a live init for gone.
    for rule in (("poll", errno.ENOMEM, 1), ("pidfd_open", errno.EMFILE, None)):
        fail = [rule] + ([("ppoll", errno.ENOMEM, 1)] if rule[0] == "poll"
                         else [])
        root, b, cid = _created(["sleep", "100"])
        check(coil("start", cid, root=root))
        pid = state(cid, root)["pid"]
        r = coil("delete", "--force", cid, root=root, timeout=30,
                 preexec_fn=_failing_syscalls(*fail))
        assert r.returncode == 0, (rule, describe(r))
        assert not _alive(pid), rule
        assert os.listdir(root) == [], rule


def test_kill_signal_spellings():
    procs = []
    for spelling in ("TERM", "SIGTERM", "15", None):
        root, cid, p = _start_run(_trapping("exit 7", "TERM"))
        procs.append((spelling, cid, root, p))
    for spelling, cid, root, p in procs:
        _wait_line(p, "ready")
        args = ["kill", cid] + ([spelling] if spelling else [])
        check(coil(*args, root=root))
    for spelling, cid, root, p in procs:
        out, err = _finish(p)
        assert p.returncode == 7, (spelling, p.returncode, out, err)


def test_kill_usr1_delivered():
    root, cid, p = _start_run(_trapping("echo got-usr1", "USR1"))
    _wait_line(p, "ready")
    check(coil("kill", cid, "SIGUSR1", root=root))
    _wait_line(p, "got-usr1")
    check(coil("kill", cid, "9", root=root))
    out, err = _finish(p)
    assert p.returncode == 137, (p.returncode, out, err)


def test_kill_bad_signal_fails():
    root, b, cid = _created(["sleep", "100"])
    for bad in ("NOTASIG", "SIGFOO", "999", "-1"):
        r = coil("kill", cid, bad, root=root)
        assert r.returncode not in (0, None), describe(r)
    assert state(cid, root)["status"] == "created"
    check(coil("delete", "--force", cid, root=root))


def test_kill_all():
    # Both processes trap TERM and say so, so neither the order in which
    # --all signals them nor the shells' wait semantics matter. The child is
    # a fresh sh (exec resets the parent's trap) that says child-ready only
    # after its own trap is set: TERM cannot land in the window between
    # fork and exec, where an inherited trap would swallow it. Without
    # --all only init would hear TERM and the child would never exit.
    root, cid, p = _start_run(
        'trap "echo got-term" TERM; '
        'sh -c \'trap "echo child-got-term; exit 0" TERM; echo child-ready; '
        'while :; do sleep 0.1; done\' & '
        'until wait; do :; done; echo all-gone')
    _wait_line(p, "child-ready")
    check(coil("kill", "--all", cid, "TERM", root=root))
    try:
        got = _wait_line(p, "all-gone")
    except AssertionError:
        coil("kill", "--all", cid, "KILL", root=root)
        _finish(p)
        raise
    out, err = _finish(p)
    got = [line.strip() for line in got]
    assert "got-term" in got and "child-got-term" in got, (got, out, err)
    assert p.returncode == 0, (p.returncode, got, out, err)


def test_kill_stopped_container_fails():
    root, b, cid = _created(["true"])
    check(coil("start", cid, root=root))
    wait_status(cid, root, "stopped")
    r = coil("kill", cid, "KILL", root=root)
    assert r.returncode not in (0, None), describe(r)
    # runc's words: containerd's shim matches them to mean "already exited"
    assert "container not running" in r.stderr, describe(r)
    check(coil("delete", cid, root=root))


def test_kill_all_stopped_container_succeeds():
    # As runc: --all signals what is left in the cgroup, here nothing.
    # containerd's shim kills --all a task whose init has exited before
    # deleting it, and fails the delete if that kill fails.
    root, b, cid = _created(["true"])
    check(coil("start", cid, root=root))
    wait_status(cid, root, "stopped")
    check(coil("kill", "--all", cid, "KILL", root=root))
    check(coil("delete", cid, root=root))


def test_detach_run():
    root = new_root()
    b = new_bundle(["sleep", "100"])
    cid = new_id()
    pidfile = os.path.join(tmpdir(), "pid")
    check(coil("run", "--detach", "--pid-file", pidfile, "--bundle", b,
                   cid, root=root, timeout=20))
    st = state(cid, root)
    assert st["status"] == "running", st
    assert int(open(pidfile).read()) == st["pid"]
    check(coil("delete", "--force", cid, root=root))


def test_stdio_not_chowned():
    d = tmpdir()
    out = os.path.join(d, "out")
    with open(out, "w"):
        pass
    os.chmod(out, 0o600)
    root = new_root()
    b = new_bundle(["sh", "-c", "echo hello-out; id -u"],
                   process={"user": {"uid": 1000, "gid": 1000}})
    cid = new_id()
    null_before = os.stat("/dev/null")
    with open(out, "a") as f:
        r = coil("run", "--bundle", b, cid, root=root, stdout=f)
    assert r.returncode == 0, describe(r)
    st = os.stat(out)
    assert (st.st_uid, st.st_gid) == (0, 0), "stdout file now owned by %d:%d" % (
        st.st_uid, st.st_gid)
    assert stat.S_IMODE(st.st_mode) == 0o600, oct(st.st_mode)
    assert open(out).read() == "hello-out\n1000\n"
    null_after = os.stat("/dev/null")
    assert (null_after.st_uid, null_after.st_mode) == (
        null_before.st_uid, null_before.st_mode)


def test_concurrent_commands_keep_state_valid():
    # state/kill/start/delete racing on one id: every command either works
    # or fails cleanly; state is always valid JSON; nothing is left.
    root = new_root()
    b = new_bundle(["sleep", "100"])
    for _ in range(3):
        cid = new_id()
        check(coil("create", "--bundle", b, cid, root=root))
        results = []
        lock = threading.Lock()
        go = threading.Event()

        def worker(args):
            go.wait()
            r = coil(*args, root=root, timeout=30)
            with lock:
                results.append((args, r))
        jobs = ([["state", cid]] * 6 + [["start", cid]] * 2 +
                [["kill", cid, "KILL"]] + [["delete", "--force", cid]] * 2 +
                [["list", "--format", "json"]] * 2)
        ts = [threading.Thread(target=worker, args=(j,)) for j in jobs]
        for t in ts:
            t.start()
        go.set()
        for t in ts:
            t.join()
        for args, r in results:
            assert r.returncode is not None, describe(r)
            assert "AddressSanitizer" not in r.stderr, describe(r)
            assert r.returncode in (0, 1, 125) or r.returncode < 128, \
                describe(r)
            if args[0] == "state" and r.returncode == 0:
                st = json.loads(r.stdout)
                assert st["id"] == cid and st["status"] in (
                    "created", "running", "stopped"), st
            if args[0] == "list" and r.returncode == 0:
                json.loads(r.stdout)
            if args[0] == "delete":
                assert r.returncode == 0, describe(r)
        r = coil("state", cid, root=root)
        assert r.returncode != 0, describe(r)
    assert os.listdir(root) == []
