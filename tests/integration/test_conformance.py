"""Runtime-spec MUSTs the OCI conformance suite (runtime-tools validation/)
checks: shared and joined namespaces, delete and start semantics, hook
state, capability names, memory resources, cgroups a client moved init to."""

import json
import os
import signal
import subprocess
import time

from harness import (NAMESPACES, base_config, cgroup_hierarchies, check, coil,
                     describe, mount_points, new_bundle, new_id, new_root,
                     on_cleanup, popen, sh, state, tmpdir, wait_status,
                     write_config)


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _without(*types):
    return [{"type": t} for t in NAMESPACES if t not in types]


# ------------------------------------------------- cgroup moved by a client

def _own_v1_dir(controller):
    for mnt, own in cgroup_hierarchies():
        if os.path.basename(mnt) == controller:
            return os.path.join(mnt, own.lstrip("/"))
    return None


def test_init_moved_to_a_clients_cgroup_is_still_the_containers():
    # runtime-tools delete_only_create_resources: the client moves init to
    # a pids cgroup of its own; the container goes on and delete leaves
    # that cgroup alone.
    own = _own_v1_dir("pids")
    assert own, cgroup_hierarchies()
    theirs = os.path.join(own, "coil-client-%d" % os.getpid())
    os.mkdir(theirs)
    on_cleanup(lambda: os.path.isdir(theirs) and os.rmdir(theirs))
    root = new_root()
    b = new_bundle(["true"])
    cid = new_id()
    check(coil("create", "--bundle", b, cid, root=root))
    pid = state(cid, root)["pid"]
    with open(os.path.join(theirs, "cgroup.procs"), "w") as f:
        f.write(str(pid))
    assert state(cid, root)["status"] == "created"
    check(coil("start", cid, root=root))
    wait_status(cid, root, "stopped")
    check(coil("delete", cid, root=root))
    assert os.path.isdir(theirs)
    assert os.listdir(root) == []
