"""Python sandbox mode: resource limits.

Each case ends with its own error type and exit status (README, Exit codes:
1 the user code raised, 124 wall clock, 125 coil failed / bad request, 137
memory or CPU limit), within a bounded time, and the runner checks afterwards
that
nothing (mounts, cgroups, processes, state dirs) was left on the host.
"""

import json
import os
import time

import harness
from harness import describe

DEFAULT_BUNDLE = os.path.join(harness.REPO, "bundles", "python")
ROOTFS = os.path.join(DEFAULT_BUNDLE, "rootfs")


def envelope(stdout):
    for line in reversed((stdout or "").splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                v = json.loads(line)
            except ValueError:
                continue
            if isinstance(v, dict) and "ok" in v:
                return v
    return None


def handler(body):
    return "def handle(request):\n" + "".join(
        "    " + line + "\n" for line in body.splitlines())


def py(code, request="{}", extra=(), timeout=60, bundle=None):
    args = ["py"]
    if bundle:
        args += ["--bundle", bundle]
    args += list(extra) + ["--request", request, "--entry", "handle",
                           "-c", code]
    t0 = time.time()
    r = harness.coil(*args, root=harness.new_root(), timeout=timeout)
    r.elapsed = time.time() - t0
    return r


def expect(r, rc, etype, max_seconds=None):
    """etype: the error type, or a tuple of the acceptable ones."""
    types = etype if isinstance(etype, tuple) else (etype,)
    env = envelope(r.stdout)
    err = (env or {}).get("error") or {}
    assert r.returncode == rc and env is not None and not env.get("ok") and \
        err.get("type") in types, "expected %s / exit %d\n%s" % (
            "|".join(types), rc, describe(r))
    if max_seconds is not None:
        assert r.elapsed < max_seconds, "took %.1fs (limit %ss)\n%s" % (
            r.elapsed, max_seconds, describe(r))
    return err


def test_python_limit_cpu_loop():
    r = py(handler("while True:\n    pass"))
    expect(r, 137, "CpuLimit", max_seconds=5)


# Where no RLIMIT_DATA refuses the allocation (the ASan build) the string is
# filled a page at a time up to the cgroup's limit: a small one, so that
# the fill meets it within the CPU second even where page faults are slow
# (a nested VM's).
FILL_CAP = ("--memory", "32m")


def test_python_limit_kills_reported_on_stderr():
    # Issue 3: "a CPU-limit, memory (OOM) or pids kill is reported as such
    # in the envelope and on stderr".
    bad = []
    for body, etype in (("while True:\n    pass", "CpuLimit"),
                        ("s = 'a' * 10**10\nreturn len(s)", "MemoryLimit")):
        r = py(handler(body), extra=FILL_CAP)
        if r.returncode != 137 or etype not in r.stderr:
            bad.append("%s not on stderr:\n%s" % (etype, describe(r)))
    assert not bad, "\n".join(bad)


def test_python_limit_memory():
    r = py(handler("s = 'a' * 10**10\nreturn len(s)"), extra=FILL_CAP)
    expect(r, 137, "MemoryLimit", max_seconds=5)


def test_python_limit_memory_small_cap():
    # --memory lowers the cap: 64 MiB of list cells are over 32m.
    r = py(handler("x = [0] * (8 * 2**20)\nreturn len(x)"),
           extra=("--memory", "32m"))
    expect(r, 137, "MemoryLimit", max_seconds=5)


def test_python_limit_recursion():
    code = handler("return f(0)") + "\n\ndef f(n):\n    return f(n + 1)\n"
    r = py(code)
    err = expect(r, 1, "Exception", max_seconds=5)
    assert err.get("exception") == "RecursionError" or \
        "RecursionError" in str(err.get("message")), describe(r)
    assert err.get("line") == 6, describe(r)


def test_python_limit_big_power():
    # 10**10**8: 332 million bits, computed in pure CPU: the 1 s CPU limit
    # fires first (the result alone is 41 MB, well under 256 MiB) -- except
    # in the ASan build, whose allocator overhead reaches the memory limit
    # first. Either way a resource limit ends it, reported as such.
    r = py(handler("x = 10**10**8\nreturn x > 0"))
    expect(r, 137, ("CpuLimit", "MemoryLimit"), max_seconds=5)


def test_python_limit_int_str_digits():
    # Converting a huge int to text is capped at 4300 digits (a ValueError,
    # not a limit kill).
    r = py(handler("return str(10**5000)"))
    err = expect(r, 1, "Exception", max_seconds=5)
    assert "4300" in str(err.get("message")), describe(r)


def test_python_limit_output_flood():
    # 20 bytes x 200000 prints: 4 MiB of stdout against a 1 MiB cap.
    r = py(handler("for i in range(200000):\n    print('x' * 19)\nreturn 1"))
    expect(r, 1, "OutputLimit", max_seconds=10)
    assert len(r.stdout) < 64 << 10, "%d bytes of stdout" % len(r.stdout)


def test_python_limit_output_result():
    r = py(handler("return 'a' * (2 * 2**20)"))
    expect(r, 1, "OutputLimit", max_seconds=10)
    assert len(r.stdout) < 64 << 10, "%d bytes of stdout" % len(r.stdout)


def test_python_limit_output_flood_script_mode():
    r = harness.coil("py", "-c", "for i in range(200000):\n    print('x' * 19)\n",
                     root=harness.new_root(), timeout=60)
    assert r.returncode == 1 and "OutputLimit" in r.stderr, describe(r)
    assert len(r.stdout) <= (1 << 20) + 4096, "%d bytes" % len(r.stdout)


def test_python_limit_regex_backtracking():
    r = py("import re\n\n\n" + handler(
        "return str(re.match('(a+)+$', 'a' * 40 + '!'))"))
    expect(r, 137, "CpuLimit", max_seconds=5)


def test_python_limit_wall_clock():
    # A bundle whose CPU rlimit (10/11 s) is above the 1 s --timeout: the
    # wall clock must end the loop.
    cfg = harness.read_config(DEFAULT_BUNDLE)
    cfg["root"]["path"] = ROOTFS
    for rl in cfg["process"]["rlimits"]:
        if rl["type"] == "RLIMIT_CPU":
            rl["soft"], rl["hard"] = 10, 11
    b = harness.tmpdir()
    harness.write_config(b, cfg)
    r = py(handler("while True:\n    pass"), bundle=b, extra=("--timeout", "1"))
    expect(r, 124, "Timeout", max_seconds=4)
    assert r.elapsed >= 0.9, "ended after %.2fs\n%s" % (r.elapsed, describe(r))


def test_python_limit_huge_request():
    req = os.path.join(harness.tmpdir(), "big.json")
    with open(req, "w") as f:
        json.dump({"pad": "x" * (2 << 20)}, f)
    r = py(handler("return len(request['pad'])"), request="@" + req)
    expect(r, 125, "RequestError", max_seconds=10)


def test_python_limit_request_just_under_cap():
    req = os.path.join(harness.tmpdir(), "ok.json")
    with open(req, "w") as f:
        json.dump({"pad": "x" * ((1 << 20) - 1024)}, f)
    r = py(handler("return len(request['pad'])"), request="@" + req)
    env = envelope(r.stdout)
    assert r.returncode == 0 and env and env.get("result") == (1 << 20) - 1024, \
        describe(r)


def test_python_limit_invalid_json_request():
    for bad in ("{not json", "[1, 2", "", "{\"a\": 1} trailing"):
        r = py(handler("return 1"), request=bad)
        expect(r, 125, "RequestError", max_seconds=5)


# Memory is bounded twice: the cgroup limit and an RLIMIT_DATA derived from
# the same setting (limit + 32 MiB of headroom, sandbox/memory_bound.h).
# Each memory bomb must end as MemoryLimit with either layer alone and with
# both, and the host memory it took must stay near the limit. The peak is
# measured from outside: coil runs in a memory cgroup the test creates below
# its own, which the container's cgroup (when there is one) nests in, and
# whose v1 max_usage_in_bytes counts coil, the sandbox and the page cache
# they touch. Its 2 GiB cap keeps a regression from eating the machine.
#
# The rlimit is compiled out of the ASan build (its shadow memory already
# counts terabytes against RLIMIT_DATA), so the runs that need it always
# drive the plain product binary ./coil, whichever binary is under test.

BOMB_MEMORY = 64 << 20
BOMB_HEADROOM = 32 << 20  # MEMORY_BOUND_HEADROOM
PLAIN_COIL = os.path.join(harness.REPO, "coil")
BOMBS = (
    ("one huge allocation", "s = 'a' * 10**10"),
    ("a growing bytearray",
     "b = bytearray()\nwhile True:\n    b += bytes(1 << 20)"),
    ("many small objects", "x = [bytes(200) for i in range(10**8)]"),
)




def bomb_args(bundle, code, handler_mode):
    args = ["py", "--bundle", bundle, "--memory", "%dm" % (BOMB_MEMORY >> 20)]
    if handler_mode:
        return args + ["--request", "{}", "--entry", "handle", "-c",
                       handler(code)]
    return args + ["-c", code]


def memory_bombs(binary, disable):
    """Every bomb, in script and handler mode: each must end as MemoryLimit
    (137) with its peak below the limit plus the headroom plus what a run
    that allocates nothing takes (coil, the interpreter, its page cache).
    With the rlimit on, the huge allocation is refused before a page of it
    is touched: its peak stays within the headroom of the idle run."""
    up_front = "rlimit-memory" not in disable
    b = harness.python_bundle(disable)
    bad = []
    for handler_mode in (False, True):
        idle_code = "return 1" if handler_mode else "x = 1"
        r, idle = harness.capped_run(
            [binary, "--root", harness.new_root()] +
            bomb_args(b, idle_code, handler_mode))
        assert r.returncode == 0, describe(r)
        bound = BOMB_MEMORY + BOMB_HEADROOM + idle
        for name, code in BOMBS:
            what = "%s, %s mode, %s off" % (
                name, "handler" if handler_mode else "script",
                "+".join(disable) or "nothing")
            r, peak = harness.capped_run(
                [binary, "--root", harness.new_root()] +
                bomb_args(b, code, handler_mode))
            if handler_mode:
                env = envelope(r.stdout)
                etype = ((env or {}).get("error") or {}).get("type")
            else:
                etype = "MemoryLimit" if \
                    "coil: MemoryLimit: " in r.stderr else None
            if r.returncode != 137 or etype != "MemoryLimit":
                bad.append("%s: not MemoryLimit/137\n%s" % (what, describe(r)))
            if peak >= bound:
                bad.append("%s: peak %d MiB, over %d MiB" % (
                    what, peak >> 20, bound >> 20))
            if up_front and code == BOMBS[0][1] and \
                    peak >= idle + BOMB_HEADROOM:
                bad.append("%s: peak %d MiB, not refused up front" % (
                    what, peak >> 20))
    assert not bad, "\n".join(bad)


def test_python_memory_bomb_rlimit_alone():
    memory_bombs(PLAIN_COIL, ["cgroup"])


def test_python_memory_bomb_cgroup_alone():
    memory_bombs(harness.COIL, ["rlimit-memory"])


def test_python_memory_bomb_both_bounds():
    memory_bombs(PLAIN_COIL, [])
