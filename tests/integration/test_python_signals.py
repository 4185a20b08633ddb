"""Python sandbox mode: the privilege drop it shares with generic mode, and
how it ends on a signal or a limit.

The sandbox is PID 1 of its pid namespace, so a signal without a handler is
ignored: the run must handle the signals `coil run`/`coil py` forward (INT,
TERM, HUP, QUIT, USR1, USR2) and end with 128+N and a `Signal` report, in
every phase. Script mode reports every limit as one `coil: TYPE: message`
line on stderr, never as an envelope on stdout.
"""

import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import time

import harness
from harness import describe

DEFAULT_BUNDLE = os.path.join(harness.REPO, "bundles", "python")

# Reaches the posix module (only with the ast layer off): the observation
# tests read the sandbox's own /proc/self/status from the inside.
POSIX = """
def posix_module():
    for c in ().__class__.__bases__[0].__subclasses__():
        if c.__name__ == 'BuiltinImporter':
            return c.load_module('posix')
"""

LOOP = "def handle(request):\n    n = 0\n    while True:\n        n += 1\n"


def bundle(disable=(), cpu=(10, 11), edit=None):
    """The default bundle with a CPU rlimit that outlasts the test (so only
    the signal or the wall clock ends a loop), layers off and cfg edits."""
    def change(cfg):
        for rl in cfg["process"]["rlimits"]:
            if rl["type"] == "RLIMIT_CPU":
                rl["soft"], rl["hard"] = cpu
        if edit:
            edit(cfg)
    return harness.python_bundle(disable, change)


def envelope(stdout):
    for line in reversed((stdout or "").splitlines()):
        if line.strip().startswith("{"):
            try:
                v = json.loads(line)
            except ValueError:
                continue
            if isinstance(v, dict) and "ok" in v:
                return v
    return None


SYS_RT_SIGACTION = 13  # x86_64
KERNEL_SIGRTMIN = 32   # the C library's own first signal; sigaction refuses it


def ignore_some_signals():
    # As under nohup: the caller's ignored signals must not reach the
    # sandbox (init resets every disposition), including one of the C
    # library's own, which only the kernel's rt_sigaction can set.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    act = (ctypes.c_ulong * 4)(int(signal.SIG_IGN), 0, 0, 0)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(SYS_RT_SIGACTION, KERNEL_SIGRTMIN, act, None, 8) != 0:
        os._exit(126)


# ------------------------------------------------------- the privilege drop

def proc_status_bundle():
    def edit(cfg):
        # /proc inside the /tmp tmpfs: the shared rootfs stays untouched.
        cfg["mounts"].append({"destination": "/tmp/proc", "type": "proc",
                              "source": "proc"})
        cfg["process"]["user"]["umask"] = 0o027
        cfg["process"]["user"]["additionalGids"] = [1234, 2345]
        cfg["process"]["cwd"] = "/tmp"
    return bundle(("ast", "audit", "seccomp", "landlock"), edit=edit)


STATUS_PROBE = POSIX + """
def handle(request):
    p = posix_module()
    fd = p.open('/tmp/proc/self/status', 0)
    data = p.read(fd, 65536)
    p.close(fd)
    out = {'cwd': p.getcwd()}
    for line in ''.join(chr(b) for b in data).split('\\n'):
        key, _, value = line.partition(':')
        out[key] = value.strip()
    return out
"""


def inside_status():
    p = harness.popen("py", "--bundle", proc_status_bundle(), "--entry",
                      "handle", "--request", "{}", "-c", STATUS_PROBE,
                      root=harness.new_root(),
                      preexec_fn=ignore_some_signals)
    out, err = p.communicate(timeout=60)
    env = envelope(out)
    assert p.returncode == 0 and env and env.get("ok"), \
        "exit %s\nstdout %r\nstderr %r" % (p.returncode, out, err)
    return env["result"]


def test_python_privdrop_groups_umask_cwd():
    st = inside_status()
    bad = []
    if st.get("Groups", "").split() != ["1234", "2345"]:
        bad.append("Groups %r, expected process.user.additionalGids "
                   "1234 2345" % st.get("Groups"))
    if st.get("Umask") != "0027":
        bad.append("Umask %r, expected process.user.umask 0027" %
                   st.get("Umask"))
    if st.get("cwd") != "/tmp":
        bad.append("cwd %r, expected process.cwd /tmp" % st.get("cwd"))
    if st.get("Uid", "").split()[:1] != ["65534"] or \
            st.get("CapEff") != "0000000000000000":
        bad.append("ids/caps not dropped: Uid %r CapEff %r" % (
            st.get("Uid"), st.get("CapEff")))
    assert not bad, "\n".join(bad) + "\n" + json.dumps(st)


def test_python_privdrop_resets_signal_mask_and_dispositions():
    # coil py blocks the signals it forwards before the sandbox exists, and
    # the caller ignores SIGHUP/SIGPIPE: none of that may reach user code.
    st = inside_status()
    assert int(st.get("SigBlk", "x"), 16) == 0, \
        "signals still blocked in the sandbox: SigBlk %s" % st.get("SigBlk")
    assert int(st.get("SigIgn", "x"), 16) == 0, \
        "signals still ignored in the sandbox: SigIgn %s" % st.get("SigIgn")


def test_python_privdrop_rlimits_before_caps():
    # The consequence of the order: a hard limit can only be raised while
    # CAP_SYS_RESOURCE is held, i.e. before the uid switch and capset. This
    # host's root cannot raise any (no CAP_SYS_RESOURCE), so the order is
    # observed directly: the sandbox sets its rlimits before it switches
    # ids and drops capabilities.
    assert shutil.which("strace"), "strace is required (.ci/install-deps.sh)"
    trace = os.path.join(harness.tmpdir(), "trace")
    argv = ["strace", "-f", "-qq", "-o", trace,
            "-e", "trace=prlimit64,setrlimit,setresuid,capset",
            harness.COIL, "--root", harness.new_root(), "py", "--entry",
            "handle", "--request", "{}", "-c", "def handle(r): return 1"]
    penv = dict(os.environ)
    penv["ASAN_OPTIONS"] = penv.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                       env=penv)
    assert p.returncode == 0, describe(p)
    with open(trace) as f:
        lines = f.read().splitlines()
    sandbox = None
    for line in lines:
        m = re.match(r"^(\d+)\s+setresuid\(65534, 65534, 65534\)", line)
        if m:
            sandbox = m.group(1)
    assert sandbox, "no uid switch to 65534 in the trace"
    mine = [line for line in lines if line.startswith(sandbox + " ")]

    def first(pattern):
        for i, line in enumerate(mine):
            if re.search(pattern, line):
                return i
        return None

    cpu = first(r"(prlimit64\(0, |setrlimit\()RLIMIT_CPU, \{rlim_cur=1,")
    uid = first(r"setresuid\(65534")
    caps = first(r"capset\(.*effective=0, permitted=0")
    assert cpu is not None and uid is not None and caps is not None, \
        "\n".join(mine)
    assert cpu < uid and cpu < caps, \
        "rlimits set after the privileges were gone:\n" + "\n".join(mine)


def test_python_privdrop_bad_cwd_fails_setup_with_envelope():
    # process.cwd counts in Python mode (it was ignored): a directory that
    # does not exist fails the setup, named, and a handler still gets an
    # envelope.
    def edit(cfg):
        cfg["process"]["cwd"] = "/nonexistent"
    r = harness.coil("py", "--bundle", bundle(edit=edit), "--entry", "handle",
                     "--request", "{}", "-c", "def handle(r): return 1",
                     root=harness.new_root())
    env = envelope(r.stdout)
    err = (env or {}).get("error") or {}
    assert r.returncode == 125 and err.get("type") == "Exception" and \
        "process.cwd" in err.get("message", "") and \
        "process.cwd" in r.stderr, describe(r)


# ----------------------------------------------------------------- signals

def start(args, stdin=None):
    """coil with --debug (its phase lines on stderr); returns the process
    and a function that reads stderr until a line matching a pattern."""
    p = harness.popen("--debug", *args, root=harness.new_root(),
                      stdin=stdin if stdin is not None else subprocess.DEVNULL)
    seen = []

    def wait_for(pattern, timeout=30):
        t0 = time.time()
        while time.time() - t0 < timeout:
            line = p.stderr.readline()
            if not line:
                break
            seen.append(line)
            if pattern in line:
                return True
        return False

    return p, wait_for, seen


def finish(p, seen):
    out, err = p.communicate(timeout=30)
    return subprocess.CompletedProcess(p.args, p.returncode, out,
                                       "".join(seen) + err)


# The phases a signal can arrive in, by the debug line that precedes it.
PHASES = (("before the interpreter", "python: signal handlers installed", 0),
          ("during user code", "python: lockdown stage 2", 0.3))


def expect_signal(r, sig, handler=True):
    rc = 128 + sig
    name = signal.Signals(sig).name
    if handler:
        env = envelope(r.stdout)
        err = (env or {}).get("error") or {}
        assert r.returncode == rc and env and err.get("type") == "Signal" and \
            "signal %d (%s)" % (sig, name) in err.get("message", ""), \
            "expected a Signal envelope and exit %d\n%s" % (rc, describe(r))
    else:
        line = "coil: Signal: terminated by signal %d (%s)" % (sig, name)
        assert r.returncode == rc and line in r.stderr and \
            '"ok"' not in r.stdout, \
            "expected exit %d and %r on stderr only\n%s" % (rc, line,
                                                           describe(r))


def signal_run(args, sig, handler=True):
    bad = []
    for phase, marker, delay in PHASES:
        p, wait_for, seen = start(args)
        if not wait_for(marker):
            p.kill()
            r = finish(p, seen)
            bad.append("%s: never saw %r\n%s" % (phase, marker, describe(r)))
            continue
        time.sleep(delay)
        p.send_signal(sig)
        r = finish(p, seen)
        try:
            expect_signal(r, sig, handler)
        except AssertionError as e:
            bad.append("%s: %s" % (phase, e))
    assert not bad, "\n\n".join(bad)


def py_args(code, entry=True, b=None):
    args = ["py", "--bundle", b or bundle(), "--timeout", "5"]
    if entry:
        args += ["--entry", "handle", "--request", "{}"]
    return args + ["-c", code]


def test_python_signal_sigterm_py():
    signal_run(py_args(LOOP), signal.SIGTERM)


def test_python_signal_sigint_py():
    signal_run(py_args(LOOP), signal.SIGINT)


def test_python_signal_sigterm_py_script_mode():
    signal_run(py_args("n = 0\nwhile True:\n    n += 1\n", entry=False),
               signal.SIGTERM, handler=False)


def run_args():
    b = bundle()
    with open(os.path.join(b, "handler.py"), "w") as f:
        f.write(LOOP)
    return ["run", "--bundle", b, harness.new_id()]


def request_file():
    path = os.path.join(harness.tmpdir(), "request.json")
    with open(path, "w") as f:
        f.write("{}")
    return path


def run_signal_test(sig):
    # Each phase gets a fresh request stream (run reads it from stdin).
    req = request_file()
    bad = []
    for phase, marker, delay in PHASES:
        with open(req) as stdin:
            p, wait_for, seen = start(run_args(), stdin)
            if not wait_for(marker):
                p.kill()
                bad.append("%s: never saw %r\n%s" % (
                    phase, marker, describe(finish(p, seen))))
                continue
            time.sleep(delay)
            p.send_signal(sig)
            r = finish(p, seen)
        try:
            expect_signal(r, sig)
        except AssertionError as e:
            bad.append("%s: %s" % (phase, e))
    assert not bad, "\n\n".join(bad)


def test_python_signal_sigterm_run():
    run_signal_test(signal.SIGTERM)


def test_python_signal_sigint_run():
    run_signal_test(signal.SIGINT)


def test_python_signal_backstop_kills_a_sandbox_that_blocks_it():
    # User code that blocks SIGTERM (possible only with the ast, audit and
    # seccomp layers off) cannot outlive it: coil kills it and reports the
    # signal.
    code = POSIX.replace("'posix'", "'_signal'").replace(
        "posix_module", "signal_module") + """
def handle(request):
    signal_module().pthread_sigmask(0, {15})
    n = 0
    while True:
        n += 1
"""
    args = py_args(code, b=bundle(("ast", "audit", "seccomp")))
    p, wait_for, seen = start(args)
    assert wait_for("python: lockdown stage 2"), "".join(seen)
    time.sleep(0.3)
    p.send_signal(signal.SIGTERM)
    r = finish(p, seen)
    expect_signal(r, signal.SIGTERM)
    # coil, not the sandbox's handler, answered.
    assert "Signal: terminated by signal 15 (SIGTERM)" in r.stderr, describe(r)


# ------------------------------------------------- script mode: limits

def script(code, b=None, extra=()):
    return harness.coil("py", "--bundle", b or DEFAULT_BUNDLE, *extra, "-c",
                        code, root=harness.new_root(), timeout=120)


def expect_script_limit(r, rc, etype):
    lines = [line for line in r.stderr.splitlines()
             if line.startswith("coil: %s: " % etype)]
    assert r.returncode == rc and len(lines) == 1, \
        "expected exit %d and one 'coil: %s:' line\n%s" % (rc, etype,
                                                           describe(r))
    assert '"ok"' not in r.stdout and '"error"' not in r.stdout, \
        "an envelope on stdout in script mode\n%s" % describe(r)


def test_python_script_mode_limits_on_stderr_only():
    bad = []
    # A long wall clock where another limit must end the run, so a loaded
    # host cannot turn it into a Timeout.
    slow = ("--timeout", "60")
    cases = (
        ("Timeout", 124, "while True:\n    pass\n", bundle(), ("--timeout", "1")),
        ("CpuLimit", 137, "while True:\n    pass\n", None, slow),
        # 32m: filled page by page (no RLIMIT_DATA in the ASan build), the
        # string meets it within the CPU second even where faults are slow.
        ("MemoryLimit", 137, "s = 'a' * 10**10\n", None,
         slow + ("--memory", "32m")),
        ("MemoryLimit", 137, "x = []\nwhile True:\n    x.append([0] * 4096)\n",
         None, slow + ("--memory", "32m")),
        ("OutputLimit", 1, "for i in range(200000):\n    print('x' * 19)\n",
         None, slow),
    )
    for etype, rc, code, b, extra in cases:
        r = script(code, b, extra)
        try:
            expect_script_limit(r, rc, etype)
        except AssertionError as e:
            bad.append(str(e))
    assert not bad, "\n\n".join(bad)
