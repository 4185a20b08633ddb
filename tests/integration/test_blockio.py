"""linux.resources.blockIO and unified on the host's controllers: v1's blkio
on this hybrid host, v2's io in the pure cgroup v2 VM (tests/vm, where
COIL_TEST_BLOCK_DEVICE names its scratch virtio disk; here a loop device
over a sparse file stands in for a disk)."""

import json
import os
import subprocess
import time

from harness import (base_config, cgroup_hierarchies, check, coil, new_bundle,
                     new_id, new_root, on_cleanup, state, tmpdir)

MiB = 1024 * 1024
RATE = 1 * MiB  # bytes per second
WRITE = 3 * MiB  # 48 direct writes of 64 KiB


def _v2():
    return os.path.exists("/sys/fs/cgroup/cgroup.controllers")


def _io_dir(cid):
    """The container's cgroup of the io (v2) or blkio (v1) controller."""
    for mnt, own in cgroup_hierarchies():
        if _v2() or os.path.basename(mnt) == "blkio":
            return os.path.join(mnt, own.lstrip("/"), "coil", cid)
    raise AssertionError("no blkio hierarchy under /sys/fs/cgroup")


def _block_device():
    """(path, major, minor) of a block device the test may overwrite."""
    path = os.environ.get("COIL_TEST_BLOCK_DEVICE")
    if not path:
        img = os.path.join(tmpdir(), "disk.img")
        with open(img, "wb") as f:
            f.truncate(16 * MiB)
        path = subprocess.run(["losetup", "--find", "--show", img],
                              capture_output=True, text=True,
                              check=True).stdout.strip()
        on_cleanup(lambda: subprocess.run(["losetup", "-d", path]))
    st = os.stat(path)
    return path, os.major(st.st_rdev), os.minor(st.st_rdev)


def _writer(dev, blockio, out):
    """A bundle writing WRITE bytes with O_DIRECT to dev (as /dev/disk),
    then leaving in out/time the centiseconds (of /proc/uptime) the writes
    took, and sleeping. No user namespace: its root could not open the
    host's device node."""
    path, major, minor = dev
    script = ("read a x </proc/uptime; "
              "dd if=/dev/zero of=/dev/disk bs=64k count=%d oflag=direct "
              "2>/out/dd || exit 9; read b x </proc/uptime; "
              "echo $((${b%%.*}${b#*.} - ${a%%.*}${a#*.})) >/out/time.tmp; "
              "mv /out/time.tmp /out/time; exec sleep 1000"
              % (WRITE // (64 * 1024)))
    cfg = base_config(["sh", "-c", script])
    lnx = cfg["linux"]
    lnx["namespaces"] = [n for n in lnx["namespaces"] if n["type"] != "user"]
    del lnx["uidMappings"], lnx["gidMappings"]
    lnx["devices"] = [{"path": "/dev/disk", "type": "b", "major": major,
                       "minor": minor, "fileMode": 0o600}]
    lnx["resources"] = {"blockIO": blockio}
    mounts = cfg["mounts"] + [{"destination": "/out", "type": "bind",
                               "source": out, "options": ["rbind", "rw"]}]
    return new_bundle(cfg["process"]["args"], linux=lnx, mounts=mounts)


def _run_writer(dev, blockio, during=None):
    """Runs the writer through its writes: (centiseconds they took, the
    cgroup's written bytes for dev, the limit files' content, and what
    during(cid, root, cgroup dir) returned, called before the delete)."""
    root = new_root()
    cid = new_id()
    out = tmpdir(0o777)
    check(coil("create", "--bundle", _writer(dev, blockio, out), cid,
               root=root))
    d = _io_dir(cid)
    try:
        limits = _limit_files(d)
        check(coil("start", cid, root=root))
        deadline = time.time() + 120
        while not os.path.exists(os.path.join(out, "time")):
            st = state(cid, root)
            assert st["status"] == "running" and time.time() < deadline, \
                "writer: %r, dd: %s" % (st, _cat(os.path.join(out, "dd")))
            time.sleep(0.1)
        took = int(_cat(os.path.join(out, "time")))
        written = _written(d, dev)
        seen = during(cid, root, d) if during else None
    finally:
        check(coil("delete", "--force", cid, root=root))
    return took, written, limits, seen


def _cat(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except FileNotFoundError:
        return ""


def _limit_files(d):
    names = ["io.max"] if _v2() else [
        "blkio.throttle.write_bps_device", "blkio.throttle.read_bps_device"]
    out = {}
    for n in names:
        with open(os.path.join(d, n)) as f:
            out[n] = f.read()
    return out


def _written(d, dev):
    """Bytes the cgroup wrote to dev: io.stat's wbytes (v2), the throttle
    layer's Write count (v1)."""
    _, major, minor = dev
    key = "%d:%d" % (major, minor)
    if _v2():
        with open(os.path.join(d, "io.stat")) as f:
            for line in f:
                parts = line.split()
                if parts and parts[0] == key:
                    kv = dict(p.split("=", 1) for p in parts[1:])
                    return int(kv.get("wbytes", 0))
        return 0
    with open(os.path.join(d, "blkio.throttle.io_service_bytes")) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[0] == key and parts[1] == "Write":
                return int(parts[2])
    return 0


def test_blockio_write_bps_throttles_direct_writes():
    """A container limited to RATE write bytes/s on a disk takes several
    times longer for the same direct writes than one limited only on reads;
    both write every byte, and the limit is in the cgroup's file."""
    dev = _block_device()
    _, major, minor = dev
    key = "%d:%d" % (major, minor)
    limited = {"throttleWriteBpsDevice": [{"major": major, "minor": minor,
                                           "rate": RATE}]}
    # A read limit: the io (blkio) cgroup is there, writes go unthrottled.
    free = {"throttleReadBpsDevice": [{"major": major, "minor": minor,
                                       "rate": 1024 * MiB}]}
    slow, slow_bytes, slow_limits, _ = _run_writer(dev, limited)
    fast, fast_bytes, fast_limits, _ = _run_writer(dev, free)
    if _v2():
        assert "%s rbps=max wbps=%d" % (key, RATE) in slow_limits["io.max"], \
            slow_limits
        assert "%s rbps=%d wbps=max" % (key, 1024 * MiB) in \
            fast_limits["io.max"], fast_limits
    else:
        assert slow_limits["blkio.throttle.write_bps_device"].strip() == \
            "%s %d" % (key, RATE), slow_limits
        assert fast_limits["blkio.throttle.write_bps_device"].strip() == "", \
            fast_limits
    assert slow_bytes == WRITE and fast_bytes == WRITE, (slow_bytes,
                                                         fast_bytes)
    # WRITE at RATE is 3 s of throttling; unthrottled the same writes take
    # a fraction of that, even emulated. A ratio, never a wall-time bound.
    assert slow >= 3 * max(fast, 1), \
        "throttled %d cs vs unthrottled %d cs" % (slow, fast)


# runc's order of v1's blkio file families: (the file whose entries make
# the family the one read, its I/Os file, its bytes file).
V1_FAMILIES = [
    ("blkio.bfq.sectors_recursive", "blkio.bfq.io_serviced_recursive",
     "blkio.bfq.io_service_bytes_recursive"),
    ("blkio.bfq.io_serviced_recursive", "blkio.bfq.io_serviced_recursive",
     "blkio.bfq.io_service_bytes_recursive"),
    ("blkio.sectors_recursive", "blkio.io_serviced_recursive",
     "blkio.io_service_bytes_recursive"),
    ("blkio.throttle.io_serviced_recursive",
     "blkio.throttle.io_serviced_recursive",
     "blkio.throttle.io_service_bytes_recursive"),
    ("blkio.throttle.io_serviced", "blkio.throttle.io_serviced",
     "blkio.throttle.io_service_bytes"),
]


def _file_writes(d, dev):
    """(I/Os, bytes) written to dev as the cgroup's files count them, in
    the files runc reads: io.stat (v2), v1's first family with entries."""
    _, major, minor = dev
    key = "%d:%d" % (major, minor)
    if _v2():
        for line in _cat(os.path.join(d, "io.stat")).splitlines():
            parts = line.split()
            if parts and parts[0] == key:
                kv = dict(p.split("=", 1) for p in parts[1:])
                return int(kv["wios"]), int(kv["wbytes"])
        return None, None

    def write_of(name):
        for line in _cat(os.path.join(d, name)).splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] == key and parts[1] == "Write":
                return int(parts[2])
        return None

    for first, ios, nbytes in V1_FAMILIES:
        if any(":" in line for line in
               _cat(os.path.join(d, first)).splitlines()):
            return write_of(ios), write_of(nbytes)
    return None, None


def _events_writes(cid, root, d, dev):
    """(I/Os, bytes) written to dev in `coil events --stats`' blkio, and
    the same from the cgroup's files, read right after."""
    _, major, minor = dev
    r = check(coil("events", "--stats", cid, root=root))
    blkio = json.loads(r.stdout)["data"]["blkio"]

    def write_of(table):
        for e in blkio.get(table, []):
            if (e.get("major", 0), e.get("minor", 0), e.get("op")) == \
                    (major, minor, "Write"):
                return e.get("value", 0)
        return None

    return ((write_of("ioServicedRecursive"),
             write_of("ioServiceBytesRecursive")), _file_writes(d, dev))


def test_blockio_events_stats_count_the_writes():
    """`coil events --stats` reports the cgroup's block I/O in runc's
    blkio tables: after WRITE bytes of direct writes to a disk, its Write
    entries hold the I/Os and bytes the cgroup's own files count, and the
    bytes are the writes'."""
    dev = _block_device()
    _, major, minor = dev
    free = {"throttleReadBpsDevice": [{"major": major, "minor": minor,
                                       "rate": 1024 * MiB}]}
    _, written, _, (events, files) = _run_writer(
        dev, free, lambda cid, root, d: _events_writes(cid, root, d, dev))
    assert written == WRITE, written
    assert events == files, (events, files)
    if files[1] is not None:
        assert files[1] == WRITE and files[0] > 0, files


def test_blockio_weight_and_iops_in_cgroup_files():
    """weight and the iops limits land in the controller's files (v2:
    io.weight converted as runc converts, or io.bfq.weight as given)."""
    dev = _block_device()
    _, major, minor = dev
    key = "%d:%d" % (major, minor)
    blockio = {"throttleReadIOPSDevice": [{"major": major, "minor": minor,
                                           "rate": 300}],
               "throttleWriteIOPSDevice": [{"major": major, "minor": minor,
                                            "rate": 200}]}
    root = new_root()
    cid = new_id()
    b = new_bundle(["sleep", "100"], linux={"resources": {"blockIO": blockio}})
    check(coil("create", "--bundle", b, cid, root=root))
    d = _io_dir(cid)
    try:
        if _v2():
            assert "%s rbps=max wbps=max riops=300 wiops=200" % key in \
                _cat(os.path.join(d, "io.max")), _cat(os.path.join(d, "io.max"))
        else:
            assert _cat(os.path.join(d, "blkio.throttle.read_iops_device")) \
                == "%s 300" % key
            assert _cat(os.path.join(d, "blkio.throttle.write_iops_device")) \
                == "%s 200" % key
        weight = {"blockIO": {"weight": 500}}
        r = coil("update", "--resources", "-", cid, root=root,
                 input=json.dumps(weight))
        bfq = os.path.join(d, "io.bfq.weight" if _v2() else "blkio.bfq.weight")
        cfq = os.path.join(d, "io.weight" if _v2() else "blkio.weight")
        if os.path.exists(bfq):
            check(r)
            assert _cat(bfq).split()[-1] == "500", _cat(bfq)
        elif os.path.exists(cfq):
            check(r)
            # 1 + (500 - 10) * 9999 / 990 on v2; v1's blkio.weight as given.
            want = "4950" if _v2() else "500"
            assert _cat(cfq).split()[-1] == want, _cat(cfq)
        else:
            # Neither scheduler's weight file: the kernel's refusal, named.
            check(r, 1)
            assert "linux.resources.blockIO.weight" in r.stderr, r.stderr
    finally:
        check(coil("delete", "--force", cid, root=root))


def test_unified():
    """v2: each key written to the container's own cgroup; a key naming no
    file of it, or a path, fails the create naming the key and leaves
    nothing. v1 (this host): refused unless empty."""
    root = new_root()
    cid = new_id()
    b = new_bundle(["sleep", "100"], linux={"resources": {
        "pids": {"limit": 50},
        "unified": {"pids.max": "7", "memory.high": str(64 * MiB)}}})
    r = coil("create", "--bundle", b, cid, root=root)
    if not _v2():
        check(r, 1)
        assert "linux.resources.unified: needs a cgroup v2" in r.stderr, \
            r.stderr
        b = new_bundle(["true"], linux={"resources": {"unified": {}}})
        check(coil("run", "--bundle", b, new_id(), root=root))
        return
    check(r)
    d = _io_dir(cid)
    try:
        assert _cat(os.path.join(d, "pids.max")) == "7", \
            "unified wins over pids.limit"
        assert _cat(os.path.join(d, "memory.high")) == str(64 * MiB)
    finally:
        check(coil("delete", "--force", cid, root=root))
    for key, want in (("memory.nope", "has no such file"),
                      ("../pids.max", "not a file name")):
        cid = new_id()
        b = new_bundle(["true"], linux={"resources": {"unified": {key: "1"}}})
        r = coil("create", "--bundle", b, cid, root=root)
        check(r, 1)
        assert 'linux.resources.unified["%s"]: ' % key in r.stderr and \
            want in r.stderr, r.stderr
        assert not os.path.exists(_io_dir(cid))
