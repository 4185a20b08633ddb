"""The container's own v2 cgroup: delegated to a container with its cgroup
namespace and a writable cgroup mount (it makes and limits cgroups below
its root, never above), and init born in it by clone3(CLONE_INTO_CGROUP),
with the plain clone + move where the kernel refuses clone3. In the pure v2
VM (tests/vm) with pids; on this hybrid host the v2 hierarchy
(/sys/fs/cgroup/unified) has hugetlb only."""

import contextlib
import os
import subprocess
import tempfile
import time

from harness import (base_config, check, coil, describe, new_bundle, new_id,
                     new_root, state, tmpdir)


def _pure_v2():
    return os.path.exists("/sys/fs/cgroup/cgroup.controllers")


def _v2_root():
    return "/sys/fs/cgroup" if _pure_v2() else "/sys/fs/cgroup/unified"


def _own_v2():
    """This process's v2 cgroup directory."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            if line.startswith("0::"):
                return os.path.join(_v2_root(), line[3:].strip().lstrip("/"))
    raise AssertionError("no v2 line in /proc/self/cgroup")


def _read(path):
    with open(path) as f:
        return f.read().strip()


def _read_or_why(path):
    try:
        return path + ": " + _read(path)
    except OSError as e:
        return str(e)


@contextlib.contextmanager
def _launcher_passes(ctrl):
    """The launcher's v2 cgroup passes ctrl on, as a host that delegates it
    does; put back as it was afterwards. coil enables at the launcher's
    level only what its own limits need (hugetlb only for hugepageLimits),
    so whether a host passes hugetlb otherwise is the host's choice, and
    on a fresh hybrid host nothing does."""
    control = os.path.join(_own_v2(), "cgroup.subtree_control")
    had = ctrl in _read(control).split()
    if not had:
        with open(control, "w") as f:
            f.write("+" + ctrl)
    try:
        yield
    finally:
        if not had:
            try:
                with open(control, "w") as f:
                    f.write("-" + ctrl)
            except OSError:
                pass  # a cgroup left below still uses it: the leak check says


def _delegated(script):
    """A bundle running script as real root (no user namespace) with its
    cgroup namespace and a read-write cgroup2 mount at /sys/fs/cgroup."""
    cfg = base_config(["sh", "-c", script])
    lnx = cfg["linux"]
    lnx["namespaces"] = [n for n in lnx["namespaces"] if n["type"] != "user"]
    del lnx["uidMappings"], lnx["gidMappings"]
    lnx["resources"] = {"pids": {"limit": 64}} if _pure_v2() else {}
    mounts = cfg["mounts"] + [{"destination": "/sys/fs/cgroup",
                               "type": "cgroup2", "source": "cgroup2",
                               "options": ["rw", "nosuid", "noexec"]}]
    return new_bundle(cfg["process"]["args"], linux=lnx, mounts=mounts)


def test_nested_cgroups_below_the_container_root():
    """The container moves itself to a leaf (a cgroup with processes cannot
    pass controllers on), enables a controller for its children, limits a
    child, and runs a process under that limit; its root is the container's
    cgroup, and exec joins init's cgroup once the root has controllers
    enabled for its children (as runc does)."""
    ctrl = "pids" if _pure_v2() else "hugetlb"
    limit = "pids.max" if ctrl == "pids" else "hugetlb.2MB.max"
    value = "2" if ctrl == "pids" else "2097152"
    script = (
        "set -e; cd /sys/fs/cgroup; mkdir leaf; echo $$ >leaf/cgroup.procs; "
        "echo +%s >cgroup.subtree_control; mkdir sub; echo %s >sub/%s; "
        % (ctrl, value, limit) +
        ("sh -c 'echo $$ >/sys/fs/cgroup/sub/cgroup.procs; "
         "(true & true & true & wait) 2>/dev/null; true'; "
         if ctrl == "pids" else "") +
        "mkdir sub/deeper; exec sleep 100")
    with _launcher_passes(ctrl):
        _nested(script, ctrl, limit, value)


def _nested(script, ctrl, limit, value):
    root = new_root()
    cid = new_id()
    # The script's errors (it inherits create's stderr) say which step
    # failed, should it stop.
    errors = tempfile.TemporaryFile()
    check(coil("create", "--bundle", _delegated(script), cid, root=root,
               stderr=errors))
    own = os.path.join(_own_v2(), "coil", cid)
    try:
        check(coil("start", cid, root=root))
        deadline = time.time() + 60
        while not os.path.exists(os.path.join(own, "sub", "deeper")):
            st = state(cid, root)
            errors.seek(0)
            assert st["status"] == "running" and time.time() < deadline, (
                st, errors.read().decode(errors="replace"),
                _read_or_why(os.path.join(own, "cgroup.controllers")))
            time.sleep(0.1)
        time.sleep(0.5)
        pid = state(cid, root)["pid"]
        assert _read(os.path.join(own, "leaf", "cgroup.procs")) == str(pid)
        assert _read(os.path.join(own, "cgroup.procs")) == ""
        assert ctrl in _read(os.path.join(own, "cgroup.subtree_control"))
        assert _read(os.path.join(own, "sub", limit)) == value
        if ctrl == "pids":
            events = _read(os.path.join(own, "sub", "pids.events"))
            assert events != "max 0", "the child's limit stopped a fork: " \
                + events
        # exec joins init's cgroup (the root has controllers on for its
        # children, so it takes no process); nothing above the root is
        # in reach.
        r = coil("exec", cid, "sh", "-c",
                 "cat /proc/self/cgroup; "
                 "echo 1 >/sys/fs/cgroup/%s && echo wrote-root; true"
                 % limit, root=root)
        check(r)
        assert "0::/leaf" in r.stdout.splitlines(), describe(r)
        if "nsdelegate" in _read("/proc/self/mountinfo"):
            # nsdelegate: the namespace root's own limits are the host's.
            assert "wrote-root" not in r.stdout, describe(r)
            assert ctrl == "hugetlb" or _read(
                os.path.join(own, "pids.max")) == "64"
    finally:
        check(coil("delete", "--force", cid, root=root))
    assert not os.path.exists(own), "nested cgroups left behind"


# Makes syscall(SYS_clone3, ...) fail with the errno in NO_CLONE3_ERRNO, as a
# kernel without clone3 (ENOSYS) or without CLONE_INTO_CGROUP (EINVAL) does.
_NO_CLONE3 = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/syscall.h>

long syscall(long n, ...) {
  static long (*real)(long, ...);
  va_list ap;
  long a[6];
  va_start(ap, n);
  for (int i = 0; i < 6; i++)
    a[i] = va_arg(ap, long);
  va_end(ap);
  if (n == SYS_clone3) {
    errno = atoi(getenv("NO_CLONE3_ERRNO"));
    return -1;
  }
  if (!real)
    real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
  return real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}
"""


def _no_clone3(errno_value):
    """The environment that makes coil see clone3 fail with errno_value."""
    d = tmpdir()
    src = os.path.join(d, "noclone3.c")
    so = os.path.join(d, "noclone3.so")
    with open(src, "w") as f:
        f.write(_NO_CLONE3)
    # -O0: compiling is most of this test's time in the emulated VM.
    subprocess.run(["cc", "-O0", "-shared", "-fPIC", "-o", so, src, "-ldl"],
                   check=True)
    # ASan wants its runtime first; the shim only stands in for the kernel.
    return {"LD_PRELOAD": so, "NO_CLONE3_ERRNO": str(errno_value),
            "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") +
            ":verify_asan_link_order=0"}


def _v2_cgroup_of(pid):
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            if line.startswith("0::"):
                return line[3:].strip()
    raise AssertionError("no v2 line for pid %d" % pid)


def _create_in(parent, cid, root, env=None):
    """coil create run from inside the v2 cgroup parent, the container's
    own cgroup (absolute cgroupsPath) outside it."""
    b = new_bundle(["sleep", "100"],
                   linux={"cgroupsPath": "/coil-born-" + cid})

    def enter():
        with open(os.path.join(parent, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    return coil("create", "--bundle", b, cid, root=root, env=env,
                preexec_fn=enter)


def test_init_born_in_its_cgroup_and_the_clone_fallback():
    """clone3(CLONE_INTO_CGROUP) charges init's birth to the container's
    cgroup: coil create run from a cgroup whose pids.max leaves room for
    coil alone succeeds; with clone3 refused (ENOSYS, EINVAL) coil falls
    back to clone and a move, which that same limit stops, and which
    without it puts init in its cgroups as well."""
    own = _own_v2()
    root = new_root()
    tag = new_id()
    parent = os.path.join(own, "born-" + tag)
    os.mkdir(parent)
    try:
        _born_cases(parent, root)
    finally:
        os.rmdir(parent)


def _born_cases(parent, root):
    pids = os.path.exists(os.path.join(parent, "pids.max"))
    assert pids or not _pure_v2(), "the VM's v2 tree has pids"
    enosys = _no_clone3(38)
    einval = dict(enosys, NO_CLONE3_ERRNO="22")
    cases = [(None, True)]
    if pids:
        cases += [(enosys, True)]  # the fallback is stopped by the limit
    cases += [(enosys, False), (einval, False)]
    for env, limited in cases:
        if pids:
            with open(os.path.join(parent, "pids.max"), "w") as f:
                f.write("1" if limited else "max")
        cid = new_id()
        r = _create_in(parent, cid, root, env)
        how = "%s, limited=%s" % (env and env["NO_CLONE3_ERRNO"], limited)
        if env and limited:
            check(r, 1)
            assert "Resource temporarily unavailable" in r.stderr, \
                (how, describe(r))
            assert not os.path.exists(
                os.path.join(_v2_root(), "coil-born-" + cid)), how
            continue
        check(r)
        try:
            pid = state(cid, root)["pid"]
            assert _v2_cgroup_of(pid) == "/coil-born-" + cid, how
            check(coil("start", cid, root=root))
        finally:
            check(coil("delete", "--force", cid, root=root))


def test_clone_refused_is_reported_as_such():
    """A clone the kernel refuses for good (here EPERM, no fallback) fails
    create naming the clone, not an earlier, handled failure."""
    root = new_root()
    cid = new_id()
    b = new_bundle(["true"])
    r = coil("create", "--bundle", b, cid, root=root, env=_no_clone3(1))
    check(r, 1)
    assert r.stderr.strip() == "coil: clone: Operation not permitted", \
        describe(r)
    assert os.listdir(root) == [], os.listdir(root)
