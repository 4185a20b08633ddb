#!/usr/bin/python3
"""Runs many `coil py` handler calls and checks that nothing is left behind.

    tests/stress/leaks.py [--coil PATH] [--sequential N] [--concurrent M]
                          [--jobs J] [--root DIR] [--mem-tolerance MIB]

N runs one after another, then M runs J at a time, each a small handler
whose answer is checked. Afterwards no mount, cgroup, network namespace,
state directory or process of these runs may be left, this script's and
its caller's open fds must be what they were, and host memory
(MemAvailable, and unreclaimable slab) must be back within a tolerance.
Prints the figures and `no leaks`, or what leaked; exits 1 on a leak or a
failed run. Full counts by hand: --sequential 10000 --concurrent 2000.
Must run as root.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
import harness  # noqa: E402

HANDLER = "def handle(request):\n    return {'n': request['n'] + 1}\n"
MIB = 1 << 20


def meminfo():
    out = {}
    with open("/proc/meminfo") as f:
        for line in f:
            k, v = line.split(":", 1)
            out[k] = int(v.split()[0]) * 1024
    return out


def memory_cgroups():
    """Memory cgroups the kernel still counts, dying ones included (their
    charged page cache keeps them until it is reclaimed): a figure only,
    as the whole host's containers count."""
    with open("/proc/cgroups") as f:
        for line in f:
            p = line.split()
            if p and p[0] == "memory":
                return int(p[2])
    return None


def fd_count(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return None


def nsfs_mounts():
    with open("/proc/self/mountinfo") as f:
        return sum(1 for line in f if " - nsfs " in line)


def mounts_under(paths):
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            p = line.split()
            if any(p[4].startswith(x) or p[3].startswith(x) for x in paths):
                out.append("%s (root %s)" % (p[4], p[3]))
    return out


def net_namespaces():
    """Network namespaces held by some process."""
    seen = set()
    for ent in os.listdir("/proc"):
        if ent.isdigit():
            try:
                seen.add(os.readlink("/proc/%s/ns/net" % ent))
            except OSError:
                pass
    return seen


class Runs:
    def __init__(self, coil, root):
        self.coil = coil
        self.root = root
        self.lock = threading.Lock()
        self.pids = set()       # pids of the coil py processes started
        self.failures = []
        self.done = 0

    def one(self, n):
        p = subprocess.Popen(
            [self.coil, "--root", self.root, "py", "--entry", "handle",
             "--request", json.dumps({"n": n}), "-c", HANDLER],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        with self.lock:
            self.pids.add(p.pid)
        try:
            out, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            err += "\n[leaks.py: killed after 120 s]"
        want = {"ok": True, "result": {"n": n + 1}, "stdout": ""}
        try:
            good = p.returncode == 0 and json.loads(out) == want
        except ValueError:
            good = False
        with self.lock:
            self.done += 1
            if not good and len(self.failures) < 20:
                self.failures.append("run %d: exit %s, stdout %r, stderr %r"
                                     % (n, p.returncode, out[-300:],
                                        err[-300:]))
            elif not good:
                self.failures.append(None)

    def concurrent(self, first, count, jobs):
        it = iter(range(first, first + count))
        it_lock = threading.Lock()

        def worker():
            while True:
                with it_lock:
                    n = next(it, None)
                if n is None:
                    return
                self.one(n)

        threads = [threading.Thread(target=worker) for _ in range(jobs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


def leaked_cgroups(pids):
    """Cgroup dirs of this script's runs: named py-<pid>-... after their
    coil py process."""
    out = []
    for d in harness.cgroup_dirs(substrings=("py-",)):
        parts = os.path.basename(d).split("-")
        if len(parts) == 3 and parts[1].isdigit() and int(parts[1]) in pids:
            out.append(d)
    return sorted(out)


def processes_of(root):
    out = []
    for ent in os.listdir("/proc"):
        if not ent.isdigit() or int(ent) == os.getpid():
            continue
        try:
            with open("/proc/%s/stat" % ent) as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    continue
            with open("/proc/%s/cmdline" % ent, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "--root " + root + " " in cmd:
            out.append("%s %s" % (ent, cmd.strip()[:200]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--coil", default=os.path.join(REPO, "coil"))
    ap.add_argument("--sequential", type=int, default=200)
    ap.add_argument("--concurrent", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--root", default=None,
                    help="state root (default: a fresh temp dir)")
    ap.add_argument("--mem-tolerance", type=int, default=256,
                    help="MiB MemAvailable may stay below the start")
    opts = ap.parse_args()
    if os.geteuid() != 0:
        print("leaks.py must run as root")
        return 1
    own_root = opts.root is None
    root = opts.root or tempfile.mkdtemp(prefix="coil-leaks-root-")
    os.chmod(root, 0o700)
    bundle = os.path.join(REPO, "bundles", "python")

    # Warm-up run, so caches the first run fills are not counted as leaks.
    runs = Runs(opts.coil, root)
    runs.one(-1)
    fds0, pfds0 = fd_count(os.getpid()), fd_count(os.getppid())
    nsfs0, net0 = nsfs_mounts(), net_namespaces()
    mem0 = meminfo()
    memcg0 = memory_cgroups()
    t0 = time.time()
    for n in range(opts.sequential):
        runs.one(n)
    t_seq = time.time() - t0
    t1 = time.time()
    runs.concurrent(opts.sequential, opts.concurrent, opts.jobs)
    t_conc = time.time() - t1

    leaks = []
    # Dying tasks and cgroups go away asynchronously: give them a moment.
    deadline = time.time() + 10
    while True:
        leaks = []
        for m in mounts_under([root, os.path.realpath(bundle)]):
            leaks.append("mount left: " + m)
        for d in leaked_cgroups(runs.pids):
            leaks.append("cgroup left: " + d)
        for p in processes_of(root):
            leaks.append("process left: " + p)
        for e in sorted(os.listdir(root)):
            leaks.append("state dir left: " + os.path.join(root, e))
        if nsfs_mounts() > nsfs0:
            leaks.append("nsfs mounts: %d -> %d" % (nsfs0, nsfs_mounts()))
        # A network namespace outlives its processes only through an nsfs
        # mount or an open fd, both checked here; the count is a figure.
        new_net = net_namespaces() - net0
        fds1, pfds1 = fd_count(os.getpid()), fd_count(os.getppid())
        if fds1 != fds0:
            leaks.append("own fds: %s -> %s" % (fds0, fds1))
        if pfds1 is not None and pfds1 != pfds0:
            leaks.append("caller's fds: %s -> %s" % (pfds0, pfds1))
        mem1 = meminfo()
        mem_drop = mem0["MemAvailable"] - mem1["MemAvailable"]
        slab_growth = mem1["SUnreclaim"] - mem0["SUnreclaim"]
        if mem_drop > opts.mem_tolerance * MIB:
            leaks.append("MemAvailable down %.1f MiB (tolerance %d MiB)"
                         % (mem_drop / MIB, opts.mem_tolerance))
        if not leaks or time.time() >= deadline:
            break
        time.sleep(0.5)

    total = opts.sequential + opts.concurrent
    print("runs: %d sequential in %.1f s (%.1f ms each), %d at %d at a time "
          "in %.1f s (%.1f runs/s)" % (
              opts.sequential, t_seq,
              1000 * t_seq / max(opts.sequential, 1), opts.concurrent,
              opts.jobs, t_conc, opts.concurrent / max(t_conc, 1e-9)))
    print("failed runs: %d of %d" % (len(runs.failures), total))
    for f in runs.failures:
        if f:
            print("  " + f)
    print("memory: MemAvailable %.1f -> %.1f MiB (%+.1f), SUnreclaim "
          "%+.1f MiB" % (mem0["MemAvailable"] / MIB,
                         mem1["MemAvailable"] / MIB,
                         -mem_drop / MIB, slab_growth / MIB))
    print("memory cgroups counted by the kernel (dying included, whole "
          "host): %s -> %s" % (memcg0, memory_cgroups()))
    print("fds: own %s -> %s, caller's %s -> %s; network namespaces held "
          "by processes: %d -> %d (%d new, others' included)" % (
              fds0, fds1, pfds0, pfds1, len(net0), len(net_namespaces()),
              len(new_net)))
    if own_root:
        shutil.rmtree(root, ignore_errors=True)
    if leaks:
        print("LEAKS:")
        for x in leaks:
            print("  " + x)
    else:
        print("no leaks")
    return 1 if leaks or runs.failures else 0


if __name__ == "__main__":
    sys.exit(main())
