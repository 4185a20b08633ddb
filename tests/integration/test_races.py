"""Path races against the rootfs setup: a racer on the host (standing in for
a sibling container that shares the rootfs directory) swaps paths inside the
rootfs while coil builds the container's filesystem. Each test repeats the
container a bounded number of times with the racer running and checks that
the attack's effect never shows on the host. A raced container may fail to
start; it must never do the racer's bidding."""

import os
import subprocess
import sys

from harness import (NAMESPACES, base_config, coil, describe, new_bundle,
                     new_id, new_root, on_cleanup, tmpdir)

TRIES = 200

# Runs in its own process so that the swaps go on while coil runs.
RACER = r"""
import ctypes, os, sys
mode = sys.argv[1]
if mode == "symlink":
    # name is swapped for a symlink to target, again and again
    name, target = sys.argv[2], sys.argv[3]
    tmp = name + ".race"
    while True:
        try:
            os.symlink(target, tmp)
        except FileExistsError:
            pass
        try:
            os.rename(tmp, name)
        except OSError:
            pass
else:
    # a and b trade places (RENAME_EXCHANGE), again and again
    libc = ctypes.CDLL(None, use_errno=True)
    a, b = os.fsencode(sys.argv[2]), os.fsencode(sys.argv[3])
    while True:
        libc.renameat2(-100, a, -100, b, 2)
"""


def _start_racer(*args):
    p = subprocess.Popen([sys.executable, "-c", RACER] + list(args),
                         stdin=subprocess.DEVNULL)

    def stop():
        if p.poll() is None:
            p.kill()
            p.wait()
    on_cleanup(stop)
    return stop


def _race(bundle, args, escaped, tries=TRIES):
    """Runs the bundle tries times with the racer; escaped() says whether
    the last run reached the host. Returns (escapes, started runs, last
    failed run)."""
    root = new_root()
    stop = _start_racer(*args)
    escapes, started, failed = 0, 0, None
    try:
        for _ in range(tries):
            r = coil("run", "--bundle", bundle, new_id(), root=root,
                     timeout=30)
            if r.returncode == 0:
                started += 1
            else:
                failed = r
            if escaped():
                escapes += 1
    finally:
        stop()
    return escapes, started, failed


def _no_userns_no_dev_tmpfs(args, mounts):
    """A container whose device nodes live in the rootfs directory itself
    (no tmpfs on /dev), made with mknod (no user namespace)."""
    cfg = base_config([])
    return new_bundle(
        args,
        root={"path": "rootfs", "readonly": False},
        mounts=[m for m in cfg["mounts"]
                if not m["destination"].startswith("/dev")] + mounts,
        linux={"namespaces": [{"type": t} for t in NAMESPACES
                              if t != "user"],
               "uidMappings": None, "gidMappings": None})


def test_race_masked_path_through_swapped_dev_null():
    # The rootfs's /dev/null is swapped for a symlink to a file the racer
    # controls (standing in for /proc/sys/kernel/core_pattern): masking
    # /proc/keys with "/dev/null" by path would bind that file read-write
    # over /proc/keys, where the container writes to it.
    shared = tmpdir(0o777)
    standin = os.path.join(shared, "core_pattern")
    with open(standin, "w") as f:
        f.write("host\n")
    os.chmod(standin, 0o666)
    b = _no_userns_no_dev_tmpfs(
        ["sh", "-c", "echo pwned > /proc/keys"],
        [{"destination": "/shared", "type": "bind", "source": shared,
          "options": ["rbind", "rw"]}])
    devnull = os.path.join(b, "rootfs", "dev", "null")

    def escaped():
        with open(standin) as f:
            hit = f.read() != "host\n"
        if hit:
            with open(standin, "w") as f:
                f.write("host\n")
        return hit
    escapes, started, failed = _race(
        b, ["symlink", devnull, "/shared/core_pattern"], escaped)
    assert escapes == 0, (
        "a masked path showed the racer's file in %d of %d runs"
        % (escapes, TRIES))
    if failed is not None:
        assert "null" in failed.stderr, describe(failed)


def test_race_device_chmod_follows_swapped_node():
    # The racer swaps the freshly made /dev/zero for a symlink to a host
    # file of mode 0600; setting the device's mode 0666 by path would chmod
    # the host file (init still has the host's root at that point).
    victim_dir = tmpdir()
    victim = os.path.join(victim_dir, "secret")
    with open(victim, "w") as f:
        f.write("secret\n")
    os.chmod(victim, 0o600)
    b = _no_userns_no_dev_tmpfs(["true"], [])
    zero = os.path.join(b, "rootfs", "dev", "zero")

    def escaped():
        hit = os.stat(victim).st_mode & 0o7777 != 0o600
        if hit:
            os.chmod(victim, 0o600)
        return hit
    escapes, started, failed = _race(b, ["symlink", zero, victim], escaped)
    assert escapes == 0, (
        "the host file's mode changed in %d of %d runs" % (escapes, TRIES))
    if failed is not None:
        assert "/dev/zero" in failed.stderr, describe(failed)


def test_race_readonly_bind_stays_readonly():
    # The racer exchanges the ro bind's destination with the directory of
    # an earlier tmpfs mount: a "ro" remount that resolves the destination
    # again lands on the tmpfs and leaves the host directory writable.
    hostdir = tmpdir(0o777)
    cfg = base_config([])
    b = new_bundle(
        ["sh", "-c", "touch /mnt/a/pwned /mnt/b/pwned 2>/dev/null; true"],
        mounts=cfg["mounts"] + [
            {"destination": "/mnt/b", "type": "tmpfs", "source": "tmpfs",
             "options": ["size=1m"]},
            {"destination": "/mnt/a", "type": "bind", "source": hostdir,
             "options": ["rbind", "ro"]}])
    rootfs = os.path.join(b, "rootfs")
    for d in ("a", "b"):
        os.mkdir(os.path.join(rootfs, "mnt", d))
        os.chown(os.path.join(rootfs, "mnt", d), 100000, 100000)

    def escaped():
        hit = os.listdir(hostdir) != []
        for n in os.listdir(hostdir):
            os.unlink(os.path.join(hostdir, n))
        return hit
    escapes, started, failed = _race(
        b, ["exchange", os.path.join(rootfs, "mnt", "a"),
            os.path.join(rootfs, "mnt", "b")], escaped)
    assert escapes == 0, (
        "the container wrote through its ro bind in %d of %d runs"
        % (escapes, TRIES))
    assert started > 0, describe(failed)
