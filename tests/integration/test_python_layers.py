"""Each layer of the Python sandbox, shown to do its own work.

The attack tests show that every attack is still contained with any one
layer off; they would pass even if a layer did nothing, because the others
hold. Here each layer gets a probe that only it stops: the probe runs with
the layers in front of it switched off and must end in that layer's own
outcome, and then once more with the layer itself off, where it must get
further. So each test fails if its layer stops working."""

import json
import os

import harness


# Reaches the posix module without any name the restricted builtins lack:
# only the AST gate refuses this (attack A01).
POSIX = """
def posix_module():
    for c in ().__class__.__bases__[0].__subclasses__():
        if c.__name__ == 'BuiltinImporter':
            return c.load_module('posix')
"""


def bundle(disable, edit=None):
    return harness.python_bundle(disable, edit)


def py(disable, body, extra=(), binary=None, edit=None):
    # The posix helper only where the gate is off (it would reject it).
    code = (POSIX if "ast" in disable else "") + "\ndef handle(request):\n" + "".join(
        "    " + line + "\n" for line in body.strip().splitlines())
    args = ["py", "--bundle", bundle(disable, edit), *extra, "--request", "{}",
            "--entry", "handle", "-c", code]
    if binary is None:
        return harness.coil(*args, root=harness.new_root())
    return harness.capped_run([binary, "--root", harness.new_root(), *args])[0]


def outcome(r):
    """(exit status, envelope error type or None, the whole envelope)."""
    env = None
    for line in reversed(r.stdout.splitlines()):
        if line.startswith("{"):
            env = json.loads(line)
            break
    err = (env or {}).get("error") or {}
    return r.returncode, err.get("type"), env


def test_layer_ast_rejects_reflection():
    rc, etype, env = outcome(py([], "return ().__class__"))
    assert (rc, etype) == (126, "GateViolation"), env
    rc, etype, env = outcome(py(["ast"], "return str(().__class__)"))
    assert rc == 0 and "tuple" in env["result"], env


def test_layer_builtins_has_no_type():
    rc, etype, env = outcome(py(["ast"], "return str(type(1))"))
    assert rc == 1 and "NameError" in env["error"]["message"], env
    rc, etype, env = outcome(py(["ast", "builtins"], "return str(type(1))"))
    assert rc == 0 and "int" in env["result"], env


def test_layer_audit_kills_os_system():
    body = "return posix_module().system('true')"
    rc, etype, env = outcome(py(["ast"], body))
    assert rc == 126 and "os.system" in env["error"]["message"], env
    rc, etype, env = outcome(py(["ast", "audit"], body))
    assert rc != 126, env


def test_layer_seccomp_kills_process_creation():
    body = "return posix_module().system('true')"
    rc, etype, env = outcome(py(["ast", "audit"], body))
    assert rc == 128 + 31, env  # SIGSYS: stage 2's kill-by-default filter
    rc, etype, env = outcome(py(["ast", "audit", "seccomp"], body))
    assert rc != 128 + 31, env


def test_layer_landlock_denies_files():
    # stage 2 Landlock: no filesystem rights at all, even inside the rootfs
    body = ("return posix_module().open("
            "'/usr/lib/python3.11/encodings/__init__.py', 0) >= 0")
    rc, etype, env = outcome(py(["ast", "audit", "seccomp"], body))
    assert rc == 1 and "PermissionError" in env["error"]["message"], env
    rc, etype, env = outcome(py(["ast", "audit", "seccomp", "landlock"], body))
    assert rc == 0 and env["result"] is True, env


def test_layer_caps_and_ids_refuse_setuid_root():
    body = "return posix_module().setuid(0)"
    rc, etype, env = outcome(py(["ast", "audit", "seccomp"], body))
    assert rc == 1 and "PermissionError" in env["error"]["message"], env
    rc, etype, env = outcome(py(["ast", "audit", "seccomp", "caps"], body))
    assert rc == 0, env


def test_layer_pidns_makes_the_sandbox_pid_1():
    body = "return posix_module().getpid()"
    rc, etype, env = outcome(py(["ast", "audit", "seccomp"], body))
    assert rc == 0 and env["result"] == 1, env
    rc, etype, env = outcome(py(["ast", "audit", "seccomp", "pidns"], body))
    assert rc == 0 and env["result"] != 1, env


def test_layer_rlimits_stop_cpu_burn():
    rc, etype, env = outcome(py([], "while True:\n    pass"))
    assert (rc, etype) == (137, "CpuLimit"), env
    # without rlimits only the wall clock ends it
    rc, etype, env = outcome(py(["rlimits"], "while True:\n    pass",
                                extra=("--timeout", "2")))
    assert (rc, etype) == (124, "Timeout"), env


# Over a 32 MiB limit, and over the RLIMIT_DATA derived from it (32 + 32
# MiB): each memory layer stops it alone. Where neither is on, the string is
# made in full; RLIMIT_CPU is raised so that a host whose page faults are
# slow (a nested VM's) ends no run on its CPU second instead.
BIG_MIB = 96
BIG = "return len('a' * (%d << 20))" % BIG_MIB
SMALL = ("--memory", "32m")


def cpu_seconds(n):
    def edit(cfg):
        for r in cfg["process"]["rlimits"]:
            if r["type"] == "RLIMIT_CPU":
                r["soft"], r["hard"] = n, n + 1
    return edit


def fill_big(disable, binary=None):
    return outcome(py(disable, BIG, extra=SMALL, binary=binary,
                      edit=cpu_seconds(10)))


def test_layer_cgroup_caps_memory():
    rc, etype, env = fill_big(["rlimit-memory"])
    assert (rc, etype) == (137, "MemoryLimit"), env
    rc, etype, env = fill_big(["rlimit-memory", "cgroup"])
    assert rc == 0 and env["result"] == BIG_MIB << 20, env


def test_layer_rlimit_memory_caps_memory():
    # The plain product binary, whatever the binary under test: the ASan
    # build leaves this layer out (its shadow memory alone is over any
    # RLIMIT_DATA), the product builds never do.
    plain = os.path.join(harness.REPO, "coil")
    rc, etype, env = fill_big(["cgroup"], binary=plain)
    assert (rc, etype) == (137, "MemoryLimit"), env
    assert env["error"]["message"] == "memory limit reached", env
    rc, etype, env = fill_big(["cgroup", "rlimit-memory"], binary=plain)
    assert rc == 0 and env["result"] == BIG_MIB << 20, env


# Uses the bound up in 1 MiB pieces (MemoryError ends the loop), then
# aborts as the interpreter does when an allocation fails where it cannot
# raise MemoryError.
FILL_THEN_ABORT = """
posix = posix_module()
keep = []
try:
    while True:
        keep.append(bytes(1 << 20))
except Exception:
    pass
posix.abort()
"""


def test_layer_rlimit_memory_crash_when_exhausted_is_memory_limit():
    # The plain binary (see above); only the gate is off, to reach abort().
    plain = os.path.join(harness.REPO, "coil")
    extra = ("--memory", "32m")
    rc, etype, env = outcome(py(["ast", "cgroup"], FILL_THEN_ABORT,
                                extra=extra, binary=plain))
    assert (rc, etype) == (137, "MemoryLimit"), env
    # With memory to spare an abort stays a crash, whatever its signal (as
    # PID 1 the sandbox ignores its own SIGABRT, so abort() goes on to a
    # system call stage 2 kills).
    rc, etype, env = outcome(py(["ast", "cgroup"], "posix_module().abort()",
                                extra=extra, binary=plain))
    assert rc > 128 and rc != 137 and etype == "Exception", env
