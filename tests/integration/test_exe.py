"""The host's coil binary is never reachable, writable, from a container
(CVE-2019-5736 class).

Container init is a clone of the coil process, and in Python sandbox mode
the user's code runs in that process, so their /proc/PID/exe is whatever
file coil runs from. coil therefore runs create/run/py from the binary on a
detached read-only bind mount (no mount namespace holds it, so nobody can
make it writable again), or from a sealed memfd copy where it cannot mount.
The same holds for coil's Python object (the code that needs libpython),
which Python-mode init keeps mapped: it is mapped from such a handle too, and
only when it is owned by root or the caller and writable by nobody else.
Each test runs a COPY of the binary under test (and its object) from a temp
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
    """A copy of the coil under test in a fresh temp dir, with its Python
    object beside it where it looks: (path, sha256)."""
    d = tmpdir()
    path = os.path.join(d, "coil")
    shutil.copy2(harness.COIL, path)
    shutil.copy2(harness.COIL_PYTHON,
                 os.path.join(d, os.path.basename(harness.COIL_PYTHON)))
    return path, _sha256(path)


def _run_copy(copy, root, *args, wrap=()):
    """Runs the copy as harness.coil runs coil (output through temp files: a
    created init keeps coil's stdio), with the variable a re-exec protocol
    might trust set, to show that it does not let coil skip the protection.
    wrap: argv put in front (e.g. to start it in another mount namespace)."""
    env = dict(os.environ, COIL_EXE_ORIGIN=copy)
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        p = subprocess.run(list(wrap) + [copy, "--root", root] + list(args),
                           stdin=subprocess.DEVNULL, stdout=fo, stderr=fe,
                           env=env, timeout=60)
        fo.seek(0)
        fe.seek(0)
        return subprocess.CompletedProcess(
            p.args, p.returncode, fo.read().decode(errors="replace"),
            fe.read().decode(errors="replace"))


def _wait_file(path, what, timeout=90):
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


def _attack_sibling_init(attacker_args, caps, mounts=(), rootfs_links=()):
    """Runs a COPY of coil to create a victim container (its init is coil,
    waiting for start) in the pid namespace of an attacker container that
    runs attacker_args with caps and no user namespace. The attacker reads
    the victim's pid from /shared/pid, touches /shared/opened when it holds
    what it wants, waits for /shared/gone (the victim is dead) and touches
    /shared/done. rootfs_links: (name, target) symlinks added to the
    attacker's rootfs. Returns (copy, digest, shared dir)."""
    copy, digest = _binary_copy()
    root = new_root()
    shared = tmpdir(0o777)
    mounts = base_config([])["mounts"] + [
        {"destination": "/shared", "type": "bind", "source": shared,
         "options": ["rbind", "rw"]}] + list(mounts)
    attacker = _bundle(attacker_args, {"type": "pid"}, mounts=mounts,
                       process={"capabilities": {
                           k: caps for k in ("bounding", "effective",
                                             "permitted")}})
    for name, target in rootfs_links:
        os.symlink(target, os.path.join(attacker, "rootfs", name))
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
    # Whole or not there: the attacker reads it as soon as it exists.
    with open(os.path.join(shared, "pid.tmp"), "w") as f:
        f.write("%d\n" % _ns_pid(vpid))
    os.rename(os.path.join(shared, "pid.tmp"), os.path.join(shared, "pid"))

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
    return copy, digest, shared


def test_container_cannot_rewrite_host_binary_through_sibling_init():
    # A pod-like pair without a user namespace: the attacker holds
    # CAP_SYS_PTRACE (a debugging sidecar), which lets it open the exe of a
    # process of the same pid namespace.
    copy, digest, shared = _attack_sibling_init(
        ["sh", "-c", ATTACK], harness.DEFAULT_CAPS + ["CAP_SYS_PTRACE"])
    got = {k: _read(os.path.join(shared, k))
           for k in ("link", "w1", "w1.err", "r", "w2", "w2.err")}
    assert _sha256(copy) == digest, "the host binary was rewritten: %r" % got
    assert got["w1"] == "failed", got
    assert got["w2"] in (None, "failed"), got
    # Reachable at all, it is not the host's file by its host path.
    assert got["r"] == "failed" or got["link"] != copy, got


# A privileged attacker (host python, with ctypes, bind-mounted in) tries to
# turn the victim's exe back into something writable with the mount API:
# clear read-only on its mount, clone the mount and clear it there, remount
# it read-write; and, once the victim is gone, to write through every
# handle it kept. Each outcome goes to /shared/result.json.
PRIVILEGED_ATTACK = r"""
import ctypes, errno, json, os, time
libc = ctypes.CDLL(None, use_errno=True)
SYS_OPEN_TREE, SYS_MOUNT_SETATTR = 428, 442
AT_EMPTY_PATH, OPEN_TREE_CLONE, OPEN_TREE_CLOEXEC = 0x1000, 1, 0o2000000
MOUNT_ATTR_RDONLY, MS_REMOUNT, MS_BIND = 1, 32, 4096

class MountAttr(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64)
                for n in ("attr_set", "attr_clr", "propagation", "userns_fd")]

def outcome(r):
    return "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")

def write(path):
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    except OSError as e:
        return errno.errorcode.get(e.errno, "?")
    try:
        os.write(fd, b"PWNED")
        return "written"
    except OSError as e:
        return errno.errorcode.get(e.errno, "?")
    finally:
        os.close(fd)

def clear_rdonly(fd):
    a = MountAttr(0, MOUNT_ATTR_RDONLY, 0, 0)
    return outcome(libc.syscall(SYS_MOUNT_SETATTR, fd, b"", AT_EMPTY_PATH,
                                ctypes.byref(a), ctypes.sizeof(a)))

while not os.path.exists("/shared/pid"):
    time.sleep(0.02)
exe = "/proc/%d/exe" % int(open("/shared/pid").read())
out = {"write": write(exe)}
fd = os.open(exe, os.O_PATH)
out["mount_setattr"] = clear_rdonly(fd)
tree = libc.syscall(SYS_OPEN_TREE, fd, b"", AT_EMPTY_PATH | OPEN_TREE_CLONE |
                    OPEN_TREE_CLOEXEC)
out["open_tree"] = outcome(tree)
if tree >= 0:
    out["clone_mount_setattr"] = clear_rdonly(tree)
out["remount"] = outcome(libc.mount(
    None, ("/proc/self/fd/%d" % fd).encode(), None,
    ctypes.c_ulong(MS_REMOUNT | MS_BIND), None))
kept = os.open(exe, os.O_RDONLY)
open("/shared/opened", "w").close()
while not os.path.exists("/shared/gone"):
    time.sleep(0.02)
out["write_after"] = write("/proc/self/fd/%d" % kept)
out["write_after_path"] = write("/proc/self/fd/%d" % fd)
if tree >= 0:
    out["clone_write_after"] = write("/proc/self/fd/%d" % tree)
json.dump(out, open("/shared/result.json", "w"))
open("/shared/done", "w").close()
"""


def test_privileged_container_cannot_make_host_binary_writable():
    # A privileged sibling (CAP_SYS_ADMIN and CAP_SYS_PTRACE over the host,
    # no user namespace) runs the host's python3 from a read-only /usr.
    libs = [d for d in ("/usr", "/lib", "/lib64")
            if os.path.isdir(d) and not os.path.islink(d)]
    usr = [{"destination": d, "type": "bind", "source": d,
            "options": ["rbind", "ro"]} for d in libs]
    links = [(d[1:], os.readlink(d)) for d in ("/lib", "/lib64")
             if os.path.islink(d)]
    caps = harness.DEFAULT_CAPS + ["CAP_SYS_PTRACE", "CAP_SYS_ADMIN"]
    copy, digest, shared = _attack_sibling_init(
        ["/usr/bin/python3", "-I", "-c", PRIVILEGED_ATTACK], caps, usr, links)
    with open(os.path.join(shared, "result.json")) as f:
        got = json.load(f)
    assert _sha256(copy) == digest, "the host binary was rewritten: %r" % got
    assert "written" not in got.values(), got
    for op in ("mount_setattr", "open_tree", "remount"):
        assert got[op] != "ok", (op, got)
    for op in ("write", "write_after", "write_after_path"):
        assert got[op] in ("ETXTBSY", "EROFS", "EPERM", "EACCES"), (op, got)


PROBE = """
p = posix_module()
fd = p.open('/proc/self/exe', p.O_RDONLY)
st = p.fstat(fd)

def read(path):
    f = p.open(path, p.O_RDONLY)
    data = b''
    while True:
        chunk = p.read(f, 65536)
        if not chunk:
            break
        data += chunk
    p.close(f)
    return data.decode()

mnt = [int(l.split()[1]) for l in read('/proc/self/fdinfo/%d' % fd).splitlines()
       if l.startswith('mnt_id:')][0]
out = {'dev': st.st_dev, 'ino': st.st_ino,
       'link': p.readlink('/proc/self/exe'),
       'rdonly': bool(p.fstatvfs(fd).f_flag & 1),
       'attached': mnt in [int(l.split()[0])
                           for l in read('/proc/self/mountinfo').splitlines()]}
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


def _probe_exe(copy, wrap=(), probe=PROBE):
    """Runs probe (PROBE) as the handler of `coil py` (the copy), with every
    layer that would stop it before it reaches the exe switched off: the
    gate, the audit hook, seccomp and Landlock; the mount namespace (the
    bundle has no /proc); the user namespace and the capability drop, so it
    runs as host root, which may write the host's binary. Returns what it
    found."""
    cfg = harness.read_config(DEFAULT_BUNDLE)
    cfg["root"]["path"] = ROOTFS
    cfg["sandbox"]["disable"] = ["ast", "builtins", "audit", "seccomp",
                                 "landlock", "mountns", "userns", "caps"]
    b = tmpdir()
    harness.write_config(b, cfg)
    code = POSIX + "\ndef handle(request):\n" + "".join(
        "    " + line + "\n" for line in probe.strip().splitlines())
    r = _run_copy(copy, new_root(), "py", "--bundle", b, "--request", "{}",
                  "--entry", "handle", "-c", code, wrap=wrap)
    assert r.returncode == 0, describe(r)
    return json.loads(r.stdout.splitlines()[-1])["result"]


def _assert_protected(out):
    """The exe is a sealed copy, or on a read-only mount no namespace of
    ours holds (one the host could remount read-write does not count)."""
    if "memfd:" in out["link"]:
        return
    assert out["rdonly"] and not out["attached"], out


def test_python_code_cannot_reach_host_binary():
    copy, digest = _binary_copy()
    out = _probe_exe(copy)
    assert _sha256(copy) == digest, "the host binary was rewritten: %r" % out
    assert out.get("write") != "written", out
    assert out["link"] != copy, out
    _assert_protected(out)


def test_read_only_mount_of_host_binary_is_not_trusted():
    # Started from a read-only bind mount that its mount namespace holds,
    # coil still re-executes: that mount can be made read-write again.
    copy, digest = _binary_copy()
    d = os.path.dirname(copy)
    wrap = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && '
            'exec "$@"', d]
    out = _probe_exe(copy, wrap)
    assert _sha256(copy) == digest, "the host binary was rewritten: %r" % out
    assert out["link"] != copy, out
    _assert_protected(out)


def _object_of(copy):
    return os.path.join(os.path.dirname(copy),
                        os.path.basename(harness.COIL_PYTHON))


# Every mapping of the Python object (by the host file's device and inode,
# or a memfd copy's name: the % arguments), and what writing it through
# /proc/self/map_files gives (host root with CAP_SYS_ADMIN may open those).
# Nothing else is touched: with every layer off, this is host root.
MAPS_PROBE = """
p = posix_module()
f = p.open('/proc/self/maps', p.O_RDONLY)
data = b''
while True:
    chunk = p.read(f, 65536)
    if not chunk:
        break
    data += chunk
p.close(f)
out = {'mapped': [], 'writes': {}}
for line in data.decode().splitlines():
    parts = line.split(None, 5)
    if len(parts) < 6:
        continue
    path = '/proc/self/map_files/' + parts[0]
    try:
        st = p.stat(path)
    except OSError as e:
        out.setdefault('stat', {})[parts[0] + ' ' + parts[5]] = e.errno
        continue
    if (st.st_dev, st.st_ino) != (%d, %d) and 'memfd:%s' not in parts[5]:
        continue
    out['mapped'].append(parts[5])
    try:
        w = p.open(path, p.O_WRONLY | p.O_APPEND)
        try:
            p.write(w, b'PWNED')
            out['writes'][parts[0]] = 'written'
        except OSError as e:
            out['writes'][parts[0]] = e.errno
    except OSError as e:
        out['writes'][parts[0]] = e.errno
return out
"""


def test_python_code_cannot_write_the_python_object_through_map_files():
    copy, _ = _binary_copy()
    obj = _object_of(copy)
    digest = _sha256(obj)
    st = os.stat(obj)
    out = _probe_exe(copy, probe=MAPS_PROBE % (
        st.st_dev, st.st_ino, os.path.basename(obj)))
    assert _sha256(obj) == digest, "the host's object was rewritten: %r" % out
    assert out["mapped"], "the Python object is not mapped: %r" % out
    assert obj not in out["mapped"], out
    assert "written" not in out["writes"].values(), out


def test_python_object_is_refused_unless_only_root_or_the_caller_can_write_it():
    # Loading code as root from a file someone else can change would hand
    # them root: coil refuses, naming the file, before anything is made.
    copy, _ = _binary_copy()
    obj = _object_of(copy)
    runs = ((("py", "--bundle", DEFAULT_BUNDLE, "-c", "print(1)"), 125),
            (("check", "-"), 1))
    for mode, uid, why in ((0o664, 0, "writable by its group"),
                           (0o646, 0, "writable by others"),
                           (0o644, 12345, "owned by uid 12345")):
        os.chown(obj, uid, 0)
        os.chmod(obj, mode)
        for args, status in runs:
            r = _run_copy(copy, new_root(), *args)
            assert r.returncode == status, describe(r)
            assert obj in r.stderr and why in r.stderr, describe(r)
            assert "refusing to load it" in r.stderr, describe(r)
    os.chown(obj, 0, 0)
    os.chmod(obj, 0o644)
    r = check(_run_copy(copy, new_root(), *runs[0][0]))
    assert r.stdout == "1\n", describe(r)


def test_generic_container_init_maps_neither_python_nor_systemd():
    # A generic init is a clone of coil: it maps what coil maps. Only Python
    # mode loads the Python object (and libpython), and only the systemd
    # cgroup driver libsystemd.
    root = new_root()
    cid = new_id()
    check(coil("create", "--bundle", new_bundle(["true"]), cid, root=root))
    with open("/proc/%d/maps" % state(cid, root)["pid"]) as f:
        maps = f.read()
    check(coil("delete", "--force", cid, root=root))
    for lib in ("libpython", "-python.so", "libsystemd"):
        assert lib not in maps, "%s is mapped in a generic init:\n%s" % (
            lib, maps)
