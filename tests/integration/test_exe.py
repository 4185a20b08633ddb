"""The host's coil binary is never reachable, writable, from a container
(CVE-2019-5736 class).

Container init is a clone of the coil process, and in Python sandbox mode
the user's code runs in that process, so their /proc/PID/exe is whatever
file coil runs from. coil therefore runs create/run/py from a sealed memfd
copy of itself. Each test runs a COPY of the binary under test from a temp
dir, so an attack that works damages only the copy."""

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time

import harness
from harness import (base_config, check, coil, describe, new_bundle, new_id,
                     new_root, state, tmpdir)

DEFAULT_BUNDLE = os.path.join(harness.REPO, "bundles", "python")
ROOTFS = os.path.join(DEFAULT_BUNDLE, "rootfs")


def _sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _binary_copy():
    """A copy of the coil under test in a fresh temp dir: (path, sha256)."""
    d = tmpdir()
    path = os.path.join(d, "coil")
    shutil.copy2(harness.COIL, path)
    return path, _sha256(path)


def _run_copy(copy, root, *args):
    """Runs the copy as harness.coil runs coil (output through temp files: a
    created init keeps coil's stdio), with the variable a re-exec protocol
    might trust set, to show that it does not let coil skip the sealing."""
    env = dict(os.environ, COIL_EXE_ORIGIN=copy)
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        p = subprocess.run([copy, "--root", root] + list(args),
                           stdin=subprocess.DEVNULL, stdout=fo, stderr=fe,
                           env=env, timeout=60)
        fo.seek(0)
        fe.seek(0)
        return subprocess.CompletedProcess(
            p.args, p.returncode, fo.read().decode(errors="replace"),
            fe.read().decode(errors="replace"))


def _wait_file(path, what, timeout=20):
    deadline = time.time() + timeout
    while not os.path.exists(path):
        assert time.time() < deadline, "timed out waiting for " + what
        time.sleep(0.02)


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except FileNotFoundError:
        return None


def _ns_pid(host_pid):
    """The pid of host_pid in its innermost pid namespace."""
    with open("/proc/%d/status" % host_pid) as f:
        for line in f:
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    raise AssertionError("no NSpid for %d" % host_pid)


# The attacker: told the pid of the victim's init in the shared pid
# namespace, it tries to open its exe for writing, then keeps a read-only
# handle to it and, once the victim is gone (no ETXTBSY any more), reopens
# that handle for writing through /proc/self/fd.
ATTACK = r"""
while [ ! -s /shared/pid ]; do sleep 0.02; done
p=$(cat /shared/pid)
readlink /proc/$p/exe > /shared/link 2>&1
if ( echo PWNED >> /proc/$p/exe ) 2>/shared/w1.err; then r=written; else r=failed; fi
echo $r > /shared/w1
# (a failed exec redirection would end the shell: try it in a subshell)
if ( exec 4< /proc/$p/exe ) 2>/dev/null && exec 4< /proc/$p/exe; then
  echo opened > /shared/r
else
  echo failed > /shared/r
fi
touch /shared/opened
while [ ! -e /shared/gone ]; do sleep 0.02; done
if [ "$(cat /shared/r)" = opened ]; then
  if ( echo PWNED >> /proc/self/fd/4 ) 2>/shared/w2.err; then r=written; else r=failed; fi
  echo $r > /shared/w2
fi
touch /shared/done
"""


def _bundle(args, pid_ns, **over):
    """A busybox bundle without a user namespace (host root, like a pod
    without one); pid_ns: the pid namespace entry."""
    nss = [{"type": t} for t in harness.NAMESPACES if t not in ("user", "pid")]
    linux = {"namespaces": nss + [pid_ns], "uidMappings": None,
             "gidMappings": None}
    return new_bundle(args, linux=linux, **over)


def test_container_cannot_rewrite_host_binary_through_sibling_init():
    copy, digest = _binary_copy()
    root = new_root()
    shared = tmpdir(0o777)
    # A pod-like pair without a user namespace: the attacker holds
    # CAP_SYS_PTRACE (a debugging sidecar), which lets it open the exe of a
    # process of the same pid namespace.
    caps = harness.DEFAULT_CAPS + ["CAP_SYS_PTRACE"]
    mounts = base_config([])["mounts"] + [
        {"destination": "/shared", "type": "bind", "source": shared,
         "options": ["rbind", "rw"]}]
    attacker = _bundle(["sh", "-c", ATTACK], {"type": "pid"}, mounts=mounts,
                       process={"capabilities": {
                           k: caps for k in ("bounding", "effective",
                                             "permitted")}})
    aid = new_id("atk")
    check(coil("create", "--bundle", attacker, aid, root=root))
    apid = state(aid, root)["pid"]
    check(coil("start", aid, root=root))

    # The victim joins the attacker's pid namespace and stays created: its
    # init is coil itself, waiting for start. Its create runs the copy.
    victim = _bundle(["true"], {"type": "pid",
                                "path": "/proc/%d/ns/pid" % apid})
    vid = new_id("vic")
    check(_run_copy(copy, root, "create", "--bundle", victim, vid))
    vpid = state(vid, root)["pid"]
    with open(os.path.join(shared, "pid"), "w") as f:
        f.write("%d\n" % _ns_pid(vpid))

    _wait_file(os.path.join(shared, "opened"), "the attacker's open")
    check(coil("delete", "--force", vid, root=root))
    deadline = time.time() + 10
    while os.path.exists("/proc/%d" % vpid) and time.time() < deadline:
        with open("/proc/%d/stat" % vpid) as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        time.sleep(0.02)
    open(os.path.join(shared, "gone"), "w").close()
    _wait_file(os.path.join(shared, "done"), "the attacker to finish")
    check(coil("delete", "--force", aid, root=root))

    got = {k: _read(os.path.join(shared, k))
           for k in ("link", "w1", "w1.err", "r", "w2", "w2.err")}
    assert _sha256(copy) == digest, "the host binary was rewritten: %r" % got
    assert got["w1"] == "failed", got
    assert got["w2"] in (None, "failed"), got
    # Reachable at all, it is the sealed copy, not the host's file.
    assert got["r"] == "failed" or "memfd:" in got["link"], got


PROBE = """
p = posix_module()
fd = p.open('/proc/self/exe', p.O_RDONLY)
st = p.fstat(fd)
out = {'dev': st.st_dev, 'ino': st.st_ino,
       'link': p.readlink('/proc/self/exe')}
try:
    w = p.open('/proc/self/exe', p.O_WRONLY | p.O_APPEND)
    try:
        p.write(w, b'PWNED')
        out['write'] = 'written'
    except OSError as e:
        out['write'] = e.errno
except OSError as e:
    out['open_w'] = e.errno
return out
"""

POSIX = """
def posix_module():
    for c in ().__class__.__bases__[0].__subclasses__():
        if c.__name__ == 'BuiltinImporter':
            return c.load_module('posix')
"""


def test_python_code_cannot_reach_host_binary():
    copy, digest = _binary_copy()
    cfg = harness.read_config(DEFAULT_BUNDLE)
    cfg["root"]["path"] = ROOTFS
    # Every layer that would stop the probe before it reaches the exe: the
    # gate, the audit hook, seccomp and Landlock; the mount namespace (the
    # bundle has no /proc); the user namespace and the capability drop, so
    # it runs as host root, which may write the host's binary.
    cfg["sandbox"]["disable"] = ["ast", "builtins", "audit", "seccomp",
                                 "landlock", "mountns", "userns", "caps"]
    b = tmpdir()
    harness.write_config(b, cfg)
    code = POSIX + "\ndef handle(request):\n" + "".join(
        "    " + line + "\n" for line in PROBE.strip().splitlines())
    r = _run_copy(copy, new_root(), "py", "--bundle", b, "--request", "{}",
                  "--entry", "handle", "-c", code)
    assert r.returncode == 0, describe(r)
    out = json.loads(r.stdout.splitlines()[-1])["result"]
    st = os.stat(copy)
    assert _sha256(copy) == digest, "the host binary was rewritten: %r" % out
    assert out.get("write") != "written", out
    assert (out["dev"], out["ino"]) != (st.st_dev, st.st_ino), out
    assert "memfd:" in out["link"], out
