"""Helpers for coil's integration tests (real kernel, real CLI, run as root).

Tests are plain functions using these helpers; tests/integration/run.py runs
them and checks after every test that nothing was left on the host.
"""

import copy
import fcntl
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(REPO, "tests", ".build")
COIL = os.path.abspath(os.environ.get("COIL_BIN") or os.path.join(REPO, "coil"))
# The shared object with the code that needs libpython, which COIL loads
# from beside itself in the build tree (the Makefile names each build's).
COIL_PYTHON = COIL + "-python.so"

BUSYBOX = "/bin/busybox"
# Per runner: two runners on one host must not take each other's mounts
# under these dirs for their own leaks.
TMP_PREFIX = "coil-%d-test-" % os.getpid()

# Host ids the container's ids map to in base_config().
HOST_UID = 100000
HOST_GID = 100000
MAP_SIZE = 65536

DEFAULT_CAPS = [
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
    "CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
]

CAP_NUMBERS = {
    "CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_DAC_READ_SEARCH": 2,
    "CAP_FOWNER": 3, "CAP_FSETID": 4, "CAP_KILL": 5, "CAP_SETGID": 6,
    "CAP_SETUID": 7, "CAP_SETPCAP": 8, "CAP_LINUX_IMMUTABLE": 9,
    "CAP_NET_BIND_SERVICE": 10, "CAP_NET_BROADCAST": 11, "CAP_NET_ADMIN": 12,
    "CAP_NET_RAW": 13, "CAP_IPC_LOCK": 14, "CAP_IPC_OWNER": 15,
    "CAP_SYS_MODULE": 16, "CAP_SYS_RAWIO": 17, "CAP_SYS_CHROOT": 18,
    "CAP_SYS_PTRACE": 19, "CAP_SYS_PACCT": 20, "CAP_SYS_ADMIN": 21,
    "CAP_SYS_BOOT": 22, "CAP_SYS_NICE": 23, "CAP_SYS_RESOURCE": 24,
    "CAP_SYS_TIME": 25, "CAP_SYS_TTY_CONFIG": 26, "CAP_MKNOD": 27,
    "CAP_LEASE": 28, "CAP_AUDIT_WRITE": 29, "CAP_AUDIT_CONTROL": 30,
    "CAP_SETFCAP": 31, "CAP_MAC_OVERRIDE": 32, "CAP_MAC_ADMIN": 33,
    "CAP_SYSLOG": 34, "CAP_WAKE_ALARM": 35, "CAP_BLOCK_SUSPEND": 36,
    "CAP_AUDIT_READ": 37, "CAP_PERFMON": 38, "CAP_BPF": 39,
    "CAP_CHECKPOINT_RESTORE": 40,
}

MASKED_PATHS = [
    "/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
    "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
    "/proc/sched_debug", "/sys/firmware", "/proc/scsi",
]
READONLY_PATHS = ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                  "/proc/sysrq-trigger"]
NAMESPACES = ["pid", "network", "ipc", "uts", "mount", "user", "cgroup"]


def cap_mask(names):
    """The /proc/PID/status hex mask (as an int) of a list of cap names."""
    m = 0
    for n in names:
        m |= 1 << CAP_NUMBERS[n]
    return m


# ---------------------------------------------------------------- registry
# Everything a test creates is recorded here so the runner can check for and
# then remove leftovers after the test.

class _Registry:
    def __init__(self):
        self.reset()

    def reset(self):
        self.roots = []      # --root dirs from new_root()
        self.bundles = []    # bundle dirs from new_bundle()
        self.tmpdirs = []    # other temp dirs (tmpdir())
        self.ids = []        # container ids from new_id() / register_id()
        self.pids = []       # container pids seen by the test (note_pid())
        self.procs = []      # Popen objects started by the test (popen())
        self.cleanups = []   # extra callables run at cleanup, last first


REG = _Registry()
_counter = itertools.count(1)


def register_id(cid):
    """Records an id the test made up itself, for leak checks."""
    if cid and cid not in REG.ids:
        REG.ids.append(cid)
    return cid


def new_id(prefix="t"):
    """A unique valid container id, e.g. t-1234-7."""
    return register_id("%s-%d-%d" % (prefix, os.getpid(), next(_counter)))


# COIL_TEST_TMP: where test directories go (default /tmp). The systemd VM
# points it at a tmpfs: its /tmp is an overlay, which containerd's overlay
# snapshots cannot stack on.
TEST_TMP = os.environ.get("COIL_TEST_TMP", "/tmp")


def _mkdtemp(kind):
    d = tempfile.mkdtemp(prefix="%s%s-" % (TMP_PREFIX, kind), dir=TEST_TMP)
    # The container's root (a mapped uid) must be able to traverse to its
    # rootfs and to bind-mount sources, as with any runtime.
    os.chmod(d, 0o755)
    return d


def new_root():
    """A fresh temp dir to pass as `coil --root`."""
    d = _mkdtemp("root")
    REG.roots.append(d)
    return d


def tmpdir(mode=0o755):
    """A temp dir on the host, removed after the test."""
    d = _mkdtemp("dir")
    os.chmod(d, mode)
    REG.tmpdirs.append(d)
    return d


def on_cleanup(fn):
    """Runs fn() after the test (after the leak check), last first."""
    REG.cleanups.append(fn)


def note_pid(pid):
    if pid and pid > 0 and pid not in REG.pids:
        REG.pids.append(pid)


_default_root = None


def default_root():
    """A --root shared by run()/sh() calls of the current test."""
    global _default_root
    if _default_root is None or _default_root not in REG.roots:
        _default_root = new_root()
    return _default_root


# ---------------------------------------------------------------- rootfs

def _build_rootfs(dest):
    os.makedirs(dest)
    for d in ("bin", "sbin", "usr/bin", "usr/sbin", "proc", "sys", "dev",
              "tmp", "etc", "root", "home/user", "mnt", "var", "run"):
        os.makedirs(os.path.join(dest, d), exist_ok=True)
    os.chmod(os.path.join(dest, "tmp"), 0o1777)
    os.chmod(os.path.join(dest, "root"), 0o700)
    shutil.copy2(BUSYBOX, os.path.join(dest, "bin", "busybox"))
    os.chmod(os.path.join(dest, "bin", "busybox"), 0o755)
    applets = subprocess.run([BUSYBOX, "--list-full"], capture_output=True,
                             text=True, check=True).stdout.split()
    for a in applets:
        p = os.path.join(dest, a.lstrip("/"))
        if os.path.lexists(p):
            continue
        os.makedirs(os.path.dirname(p), exist_ok=True)
        os.symlink("/bin/busybox", p)
    with open(os.path.join(dest, "etc", "passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\n"
                "user:x:1000:1000:user:/home/user:/bin/sh\n"
                "nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")
    with open(os.path.join(dest, "etc", "group"), "w") as f:
        f.write("root:x:0:\nwheel:x:10:\nusers:x:100:\nuser:x:1000:\n"
                "nogroup:x:65534:\n")
    with open(os.path.join(dest, "etc", "hosts"), "w") as f:
        f.write("127.0.0.1 localhost\n")
    open(os.path.join(dest, "etc", "resolv.conf"), "w").close()


def rootfs():
    """Path of the busybox-static rootfs template (built once)."""
    tpl = os.path.join(BUILD, "rootfs")
    stamp = os.path.join(tpl, ".coil-rootfs-ok")
    if os.path.exists(stamp):
        return tpl
    os.makedirs(BUILD, exist_ok=True)
    with open(os.path.join(BUILD, ".rootfs.lock"), "w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        if os.path.exists(stamp):
            return tpl
        if os.path.lexists(tpl):
            shutil.rmtree(tpl)
        tmp = tempfile.mkdtemp(prefix=".rootfs-", dir=BUILD)
        try:
            os.rmdir(tmp)
            _build_rootfs(tmp)
            open(os.path.join(tmp, ".coil-rootfs-ok"), "w").close()
            os.rename(tmp, tpl)
        finally:
            if os.path.lexists(tmp):
                shutil.rmtree(tmp, ignore_errors=True)
    return tpl


# ---------------------------------------------------------------- config

def base_config(args):
    """An OCI 1.0.2 config running args in every namespace, as uid 0 mapped
    to host 100000, with a read-only busybox rootfs."""
    return {
        "ociVersion": "1.0.2",
        "process": {
            "terminal": False,
            "user": {"uid": 0, "gid": 0},
            "args": list(args),
            "env": ["PATH=/bin:/sbin:/usr/bin"],
            "cwd": "/",
            "capabilities": {
                "bounding": list(DEFAULT_CAPS),
                "effective": list(DEFAULT_CAPS),
                "permitted": list(DEFAULT_CAPS),
            },
            "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
            "noNewPrivileges": True,
        },
        "root": {"path": "rootfs", "readonly": True},
        "hostname": "coil-test",
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
             "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
            {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
             "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666",
                         "mode=0620"]},
            {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
             "options": ["nosuid", "noexec", "nodev", "mode=1777",
                         "size=65536k"]},
            {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue",
             "options": ["nosuid", "noexec", "nodev"]},
            {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
             "options": ["nosuid", "nodev", "size=16m", "mode=1777"]},
        ],
        "linux": {
            "namespaces": [{"type": t} for t in NAMESPACES],
            "uidMappings": [{"containerID": 0, "hostID": HOST_UID,
                             "size": MAP_SIZE}],
            "gidMappings": [{"containerID": 0, "hostID": HOST_GID,
                             "size": MAP_SIZE}],
            "maskedPaths": list(MASKED_PATHS),
            "readonlyPaths": list(READONLY_PATHS),
        },
    }


def merge(base, over):
    """Deep merge: dicts merge recursively, lists and scalars replace, a
    value of None deletes the key. Returns a new object."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def write_config(bundle, cfg):
    with open(os.path.join(bundle, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)


def read_config(bundle):
    with open(os.path.join(bundle, "config.json")) as f:
        return json.load(f)


def python_bundle(disable=(), edit=None):
    """A copy of bundles/python's config on its real rootfs, with
    sandbox.disable set and edit(cfg) applied: a new bundle directory."""
    src = os.path.join(REPO, "bundles", "python")
    cfg = read_config(src)
    cfg["root"]["path"] = os.path.join(src, "rootfs")
    cfg["sandbox"]["disable"] = list(disable)
    if edit:
        edit(cfg)
    d = tmpdir()
    write_config(d, cfg)
    return d


def _mapped_root(cfg):
    """Host (uid, gid) of container root under cfg's mappings, or None."""
    lx = cfg.get("linux") or {}
    if not any(n.get("type") == "user" and not n.get("path")
               for n in lx.get("namespaces") or []):
        return None
    def host(maps):
        for m in maps or []:
            if m.get("containerID") == 0:
                return m.get("hostID")
        return None
    u, g = host(lx.get("uidMappings")), host(lx.get("gidMappings"))
    if u is None or g is None:
        return None
    return u, g


def chown_tree(path, uid, gid):
    """Shifts ownership of a tree by (uid, gid), like an idmapped rootfs."""
    def shift(n):
        st = os.lstat(n)
        os.lchown(n, uid + st.st_uid, gid + st.st_gid)
    shift(path)
    for dirpath, dirnames, filenames in os.walk(path):
        for x in dirnames + filenames:
            shift(os.path.join(dirpath, x))


def place_rootfs(bundle, cfg=None):
    """Copies the template into bundle/rootfs, owned by container root."""
    dst = os.path.join(bundle, "rootfs")
    subprocess.run(["cp", "-a", rootfs(), dst], check=True)
    os.unlink(os.path.join(dst, ".coil-rootfs-ok"))
    mapped = _mapped_root(cfg) if cfg else None
    if mapped:
        chown_tree(dst, *mapped)
    return dst


def new_bundle(args, **overrides):
    """A fresh bundle dir: rootfs/ (copy of the template, owned by the mapped
    container root) and config.json = base_config(args) merged with
    overrides."""
    b = _mkdtemp("bundle")
    REG.bundles.append(b)
    cfg = merge(base_config(args), overrides)
    place_rootfs(b, cfg)
    write_config(b, cfg)
    return b


# ---------------------------------------------------------------- running coil

def _argv(args, root):
    argv = [COIL]
    if root is not None:
        argv += ["--root", root]
    return argv + [str(a) for a in args]


def _run_retrying_exec(argv, **kw):
    """subprocess.run, retrying briefly when the binary cannot be executed
    because it is being rebuilt (ETXTBSY / EACCES while the linker writes
    it)."""
    for attempt in range(10):
        try:
            return subprocess.run(argv, **kw)
        except (PermissionError, OSError) as e:
            if attempt == 9 or e.errno not in (13, 26):
                raise
            time.sleep(0.3)


def coil(*args, root=None, input=None, timeout=60, env=None, stdout=None,
         stderr=None, **kw):
    """Runs coil and returns a CompletedProcess (text stdout/stderr). With
    root, `--root root` goes before the command. Output is collected through
    temp files, not pipes, so a container that inherits coil's stdio (create,
    run --detach) does not hold the call open. stdout/stderr may be given
    (an open file) to send that stream elsewhere; its field is then "".
    On timeout coil is killed and returncode is None."""
    e = None
    if env is not None:
        e = dict(os.environ)
        e.update(env)
    argv = _argv(args, root)
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        rc = None
        note = ""
        try:
            p = _run_retrying_exec(
                argv, input=input.encode() if input is not None else None,
                stdin=None if input is not None else subprocess.DEVNULL,
                stdout=stdout if stdout is not None else fo,
                stderr=stderr if stderr is not None else fe,
                timeout=timeout, env=e, **kw)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            note = "\n[harness: coil killed after %ss]" % timeout
        fo.seek(0)
        fe.seek(0)
        out = fo.read().decode(errors="replace")
        err = fe.read().decode(errors="replace") + note
    return subprocess.CompletedProcess(argv, rc, out, err)


def popen(*args, root=None, **kw):
    """Starts coil in the background (Popen; text pipes by default). The
    process is killed at cleanup if the test did not wait for it."""
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    kw.setdefault("stdin", subprocess.DEVNULL)
    kw.setdefault("text", True)
    p = subprocess.Popen(_argv(args, root), **kw)
    REG.procs.append(p)
    return p


def run(bundle, id=None, root=None, timeout=60, extra=()):
    """`coil --root R run --bundle B ID` (R defaults to a per-test root)."""
    cid = register_id(id) if id else new_id()
    r = root if root is not None else default_root()
    return coil("run", "--bundle", bundle, *extra, cid, root=r,
                timeout=timeout)


def sh(script, timeout=60, **overrides):
    """Runs `sh -c script` in a fresh bundle; returns the CompletedProcess."""
    b = new_bundle(["sh", "-c", script], **overrides)
    return run(b, timeout=timeout)


def describe(r):
    """A CompletedProcess as text for assertion messages."""
    args = r.args if isinstance(r.args, list) else [str(r.args)]
    args = [a if len(a) <= 80 else a[:40] + "...(%d chars)" % len(a)
            for a in map(str, args)]
    return "command: %s\nexit: %s\nstdout: %r\nstderr: %r" % (
        " ".join(args), r.returncode, r.stdout[-3000:], r.stderr[-3000:])


def check(r, rc=0):
    """Asserts r exited with rc; returns r."""
    assert r.returncode == rc, "expected exit %s\n%s" % (rc, describe(r))
    return r


def state(cid, root):
    """`coil state` parsed; asserts success."""
    r = coil("state", cid, root=root)
    assert r.returncode == 0, describe(r)
    try:
        st = json.loads(r.stdout)
    except ValueError:
        raise AssertionError("state is not JSON\n" + describe(r))
    note_pid(st.get("pid"))
    return st


def wait_status(cid, root, want, timeout=10):
    """Polls `coil state` until status == want; returns the state."""
    deadline = time.time() + timeout
    st = None
    while time.time() < deadline:
        st = state(cid, root)
        if st.get("status") == want:
            return st
        time.sleep(0.05)
    raise AssertionError("container %s never reached %r; last state %r"
                         % (cid, want, st))


def host_ns(kind):
    return os.readlink("/proc/self/ns/" + kind)


# ---------------------------------------------------------------- leak checks

def mount_points():
    """The host's mounts as a set of (mount point, mount root, mount id): a
    second mount on an existing mount point is a new element too."""
    pts = set()
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            pts.add((parts[4], parts[3], parts[0]))
    return pts


def cgroup_hierarchies():
    """[(mounted dir, this process's path in it)] for every hierarchy."""
    mine = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            num, ctrls, path = line.rstrip("\n").split(":", 2)
            mine[ctrls] = path
    out = []
    base = "/sys/fs/cgroup"
    if os.path.exists(os.path.join(base, "cgroup.controllers")):
        return [(base, mine.get("", "/"))]
    for name in sorted(os.listdir(base)):
        d = os.path.join(base, name)
        if not os.path.isdir(d) or os.path.islink(d):
            continue
        if name == "unified":
            out.append((d, mine.get("", "/")))
            continue
        path = None
        for ctrls, p in mine.items():
            names = [c.replace("name=", "") for c in ctrls.split(",")]
            if name in names or name == ctrls.replace("name=", ""):
                path = p
        if path is not None:
            out.append((d, path))
    return out


def _walk_dirs(top, depth):
    out = []
    try:
        ents = os.scandir(top)
    except OSError:
        return out
    with ents:
        for e in ents:
            if e.is_dir(follow_symlinks=False):
                out.append(e.path)
                if depth > 1:
                    out.extend(_walk_dirs(e.path, depth - 1))
    return out


def cgroup_dirs(names=(), substrings=()):
    """Cgroup dirs (below each hierarchy root and below this process's own
    cgroup) whose name is in names or contains one of substrings."""
    found = set()
    for mnt, own in cgroup_hierarchies():
        tops = {mnt, os.path.join(mnt, own.lstrip("/"))}
        for top in tops:
            for d in _walk_dirs(top, 3):
                b = os.path.basename(d)
                if b in names or any(s and s in b for s in substrings):
                    found.add(d)
    return found


def _inside(path, dirs):
    return any(path == d or path.startswith(d.rstrip("/") + "/")
               for d in dirs)


def _ns_root(pid):
    """The host path (mount root field) of pid's "/" mount."""
    with open("/proc/%d/mountinfo" % pid) as f:
        for line in f:
            parts = line.split()
            if parts[4] == "/":
                return parts[3]
    return None


def bundle_processes(bundles, ids=()):
    """Live (non-zombie) pids whose root is inside a bundle, or that sit in
    a cgroup named after one of ids."""
    out = []
    me = os.getpid()
    my_mnt = os.readlink("/proc/self/ns/mnt")
    for ent in os.listdir("/proc"):
        if not ent.isdigit() or int(ent) == me:
            continue
        pid = int(ent)
        try:
            with open("/proc/%d/stat" % pid) as f:
                st = f.read()
            if st.rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                continue
            root = os.readlink("/proc/%d/root" % pid)
        except OSError:
            continue
        hit = _inside(root, bundles)
        if not hit:
            # A pivot_root'ed process shows "/" as its root; its mount
            # namespace's "/" mount still names the host directory it is.
            try:
                if os.readlink("/proc/%d/ns/mnt" % pid) != my_mnt:
                    root = _ns_root(pid) or root
                    hit = _inside(root, bundles)
            except OSError:
                pass
        if not hit and ids:
            try:
                with open("/proc/%d/cgroup" % pid) as f:
                    cg = f.read()
            except OSError:
                cg = ""
            hit = any("/" + i + "\n" in cg or "/" + i + "/" in cg
                      for i in ids)
        if hit:
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                cmd = "?"
            out.append("pid %d root=%s cmd=%s" % (pid, root, cmd.strip()))
    return out


def state_leftovers(roots, ids):
    out = []
    for r in roots:
        try:
            for e in os.listdir(r):
                if os.path.isdir(os.path.join(r, e)):
                    out.append(os.path.join(r, e))
        except FileNotFoundError:
            pass
    for i in ids:
        p = os.path.join("/run/coil", i)
        if os.path.lexists(p):
            out.append(p)
    return out


class Baseline:
    def __init__(self):
        self.mounts = mount_points()
        self.coil_cgroups = cgroup_dirs(names=("coil",))


def _test_paths():
    return ([d.rstrip("/") for d in REG.bundles + REG.roots + REG.tmpdirs] +
            ["/run/coil"])


def _config_destinations():
    """Mount destinations named in this test's bundles: a runtime that
    mounted one of them on the host instead of in the rootfs leaks it."""
    dests = set()
    for b in REG.bundles:
        try:
            with open(os.path.join(b, "config.json")) as f:
                cfg = json.load(f)
        except (OSError, ValueError):
            continue
        for m in cfg.get("mounts") or []:
            if isinstance(m, dict) and isinstance(m.get("destination"), str):
                dests.add(os.path.normpath(m["destination"]))
        lx = cfg.get("linux") or {}
        for key in ("maskedPaths", "readonlyPaths"):
            for p in lx.get(key) or []:
                if isinstance(p, str):
                    dests.add(os.path.normpath(p))
    return dests


def new_test_mounts(baseline):
    """Host mounts that appeared since the runner started and belong to this
    test: on or from a test dir (bundle, root, temp dir), under /run/coil,
    or at a destination one of the test's configs mounts in a container.
    Other new mounts are someone else's (the host is shared) and ignored."""
    paths = _test_paths()
    dests = _config_destinations()
    out = []
    for mp, mroot, _ in sorted(mount_points() - baseline.mounts):
        if (_inside(mp, paths) or _inside(mroot, paths) or mp in dests or
                mp.startswith(os.path.join(TEST_TMP, TMP_PREFIX))):
            out.append((mp, mroot))
    return out


def _empty_dir(d):
    try:
        return not any(e.is_dir() for e in os.scandir(d))
    except OSError:
        return False


def leaked_cgroups(baseline):
    """Cgroup dirs named after this test's ids, and a `coil` parent that
    appeared since the start and is empty (coil removes an empty parent; a
    non-empty one holds someone else's containers)."""
    found = set()
    for d in cgroup_dirs(names=("coil",), substrings=tuple(REG.ids)):
        if d in baseline.coil_cgroups:
            continue
        if os.path.basename(d) == "coil" and not any(
                i in d for i in REG.ids) and not _empty_dir(d):
            continue
        found.add(d)
    return found


def find_leaks(baseline):
    """Everything the current test left behind, as a list of strings."""
    leaks = []
    for mp, mroot in new_test_mounts(baseline):
        leaks.append("mount left: %s (root %s)" % (mp, mroot))
    for d in sorted(leaked_cgroups(baseline)):
        leaks.append("cgroup left: %s" % d)
    for p in bundle_processes(REG.bundles, REG.ids):
        leaks.append("process left: %s" % p)
    for s in state_leftovers(REG.roots, REG.ids):
        leaks.append("state dir left: %s" % s)
    return leaks


def check_leaks(baseline, grace=3.0):
    """find_leaks, retried for `grace` seconds (dying tasks, async rmdir)."""
    deadline = time.time() + grace
    while True:
        leaks = find_leaks(baseline)
        if not leaks or time.time() >= deadline:
            return leaks
        time.sleep(0.1)


def _rmdir_cgroup_tree(d):
    for sub in sorted(_walk_dirs(d, 8), key=len, reverse=True):
        try:
            os.rmdir(sub)
        except OSError:
            pass
    try:
        os.rmdir(d)
    except OSError:
        pass


def cleanup(baseline):
    """Force-removes whatever the test left (after find_leaks recorded it)."""
    errors = []
    for p in REG.procs:
        if p.poll() is None:
            try:
                p.send_signal(signal.SIGKILL)
                p.wait(timeout=10)
            except Exception as e:  # noqa: BLE001
                errors.append("popen kill: %s" % e)
        for s in (p.stdout, p.stderr, p.stdin):
            if s:
                try:
                    s.close()
                except Exception:  # noqa: BLE001
                    pass
    for fn in reversed(REG.cleanups):
        try:
            fn()
        except Exception as e:  # noqa: BLE001
            errors.append("cleanup %r: %s" % (fn, e))
    for r in REG.roots:
        try:
            ents = os.listdir(r)
        except FileNotFoundError:
            continue
        for e in ents:
            if os.path.isdir(os.path.join(r, e)):
                coil("delete", "--force", e, root=r, timeout=30)
    for i in REG.ids:
        if os.path.lexists(os.path.join("/run/coil", i)):
            coil("delete", "--force", i, timeout=30)
    # Processes that survived coil: kill them directly.
    for line in bundle_processes(REG.bundles, REG.ids):
        pid = int(line.split()[1])
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    # Mounts the test left on the host (only those): detach, deepest first.
    for mp, _ in sorted(new_test_mounts(baseline),
                        key=lambda m: len(m[0]), reverse=True):
        subprocess.run(["umount", "-l", mp], capture_output=True)
    # Cgroups named after this test's ids; an empty new `coil` parent.
    for d in sorted(leaked_cgroups(baseline), key=len, reverse=True):
        if any(i in os.path.basename(d) for i in REG.ids):
            _rmdir_cgroup_tree(d)
        else:
            try:
                os.rmdir(d)
            except OSError:
                pass
    for d in REG.bundles + REG.roots + REG.tmpdirs:
        shutil.rmtree(d, ignore_errors=True)
    REG.reset()
    return errors


def _own_memory_cgroup():
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if "memory" in ctrls.split(","):
                return "/sys/fs/cgroup/memory" + path.rstrip("/")
    raise AssertionError("no v1 memory cgroup in /proc/self/cgroup")


def _remove_cgroup(d):
    for _ in range(100):
        _rmdir_cgroup_tree(d)
        if not os.path.exists(d):
            return
        time.sleep(0.05)
    raise AssertionError("cannot remove %s" % d)


def capped_cgroup(cap=2 << 30):
    """A fresh v1 memory cgroup below the test's own, capped at cap bytes so
    a memory regression cannot eat the machine, removed after the test:
    (its path, a preexec_fn that moves the new process into it)."""
    d = "%s/coil-test-capped-%d-%d" % (_own_memory_cgroup(), os.getpid(),
                                       time.monotonic_ns())
    os.mkdir(d)
    on_cleanup(lambda: _remove_cgroup(d) if os.path.isdir(d) else None)
    with open(d + "/memory.limit_in_bytes", "w") as f:
        f.write(str(cap))

    def enter():
        with open(d + "/cgroup.procs", "w") as f:
            f.write("0")
    return d, enter


def capped_run(argv, cap=2 << 30, timeout=60):
    """Runs argv (coil: give --root yourself) in a capped_cgroup. A
    container's cgroup nests below it. Returns (CompletedProcess with text
    output, peak bytes of the whole tree); the cgroup is gone afterwards."""
    d, enter = capped_cgroup(cap)
    try:
        argv = [str(a) for a in argv]
        try:
            r = subprocess.run(argv, stdin=subprocess.DEVNULL,
                               capture_output=True, text=True,
                               timeout=timeout, preexec_fn=enter)
        except subprocess.TimeoutExpired as e:
            r = subprocess.CompletedProcess(argv, None, e.stdout or "",
                                            "[killed after %ss]" % timeout)
        with open(d + "/memory.max_usage_in_bytes") as f:
            peak = int(f.read())
    finally:
        _remove_cgroup(d)
    return r, peak
