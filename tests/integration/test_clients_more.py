"""What a new user tries next with podman and containerd on coil: the
common run options, volumes, limits, capabilities, signals, stop, restart,
states, exit codes and host namespaces. Each exercise gives what runc 1.1
gives on the same host (checked by hand with `--runtime runc` and
`--runc-binary runc`); only the runtime's own wording of errors differs."""

import io
import os
import signal
import subprocess
import tarfile
import time

import harness
from test_clients import IMAGE, Containerd, Podman

MiB = 1024 * 1024
WAIT = 60  # seconds any poll below may take on a loaded machine


def _poll(fn, what):
    """fn() until it returns something true, for up to WAIT seconds."""
    deadline = time.time() + WAIT
    while True:
        v = fn()
        if v or time.time() > deadline:
            assert v, "gave up waiting for " + what
            return v
        time.sleep(0.1)


def _host_cgroup_file(pid, controller, name):
    """A v1 controller file of the cgroup pid is in, read on the host."""
    with open("/proc/%s/cgroup" % pid) as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if controller in ctrls.split(","):
                break
        else:
            raise AssertionError("%s is in no %s cgroup" % (pid, controller))
    for h in os.listdir("/sys/fs/cgroup"):
        if controller in h.split(","):
            with open("/sys/fs/cgroup/%s%s/%s" % (h, path, name)) as f:
                return f.read().strip()
    raise AssertionError("no %s hierarchy" % controller)


def _status_field(path, key):
    with open(path) as f:
        for line in f:
            if line.startswith(key + ":"):
                return line.split()[1]
    return None


# ---------------------------------------------------------------- podman

def _run(p, *args):
    return p(*p.run_args(*args))


def _check(r, rc=0):
    assert r.returncode == rc, harness.describe(r)
    return r


def _inspect(p, cid, fmt):
    return _check(p("inspect", "--format", fmt, cid)).stdout.strip()


def _logs_show(p, cid, text):
    r = p("logs", cid)
    return text in r.stdout + r.stderr


def test_podman_run_env_user_workdir_hostname_stdin():
    p = Podman()
    r = _check(_run(p, "--rm", "-e", "FOO=bar", "--user", "1000:1000",
                    "-w", "/tmp", "--hostname", "hh", IMAGE, "sh", "-c",
                    'echo "$FOO $(id -u):$(id -g) $(pwd) $(hostname)"'))
    assert r.stdout.strip() == "bar 1000:1000 /tmp hh", harness.describe(r)
    # a user name is looked up in the image's /etc/passwd
    r = _check(_run(p, "--rm", "--user", "user", IMAGE, "id", "-un"))
    assert r.stdout.strip() == "user", harness.describe(r)
    r = subprocess.run(p.argv(*p.run_args("--rm", "-i", IMAGE, "cat")),
                       input="piped\n", capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and r.stdout == "piped\n", harness.describe(r)
    assert p("ps", "-aq").stdout.strip() == ""


def test_podman_volumes_rw_and_ro():
    p = Podman()
    d = harness.tmpdir()
    _check(_run(p, "--rm", "-v", d + ":/data", IMAGE, "sh", "-c",
                "echo x > /data/f"))
    with open(os.path.join(d, "f")) as f:
        assert f.read() == "x\n"
    r = _check(_run(p, "--rm", "-v", d + ":/data:ro", IMAGE, "sh", "-c",
                    "cat /data/f; echo y > /data/g; echo rc=$?"))
    assert r.stdout.split() == ["x", "rc=1"], harness.describe(r)
    assert "Read-only file system" in r.stderr, harness.describe(r)
    assert not os.path.exists(os.path.join(d, "g"))


def test_podman_read_only_rootfs():
    # Without podman's tmpfs mounts on /tmp, /var/tmp and /run (those are
    # tested with tmpcopyup below).
    p = Podman()
    d = harness.tmpdir()
    r = _check(_run(p, "--rm", "--read-only", "--read-only-tmpfs=false",
                    "-v", d + ":/data", IMAGE, "sh", "-c",
                    "touch /x; echo root=$?; touch /data/y; echo data=$?"))
    assert r.stdout.split() == ["root=1", "data=0"], harness.describe(r)
    assert "Read-only file system" in r.stderr, harness.describe(r)


def test_podman_limits_in_cgroup_stats_and_update():
    p = Podman()
    cid = _check(_run(p, "-d", "--memory", "64m", "--pids-limit", "50",
                      "--cpus", "0.5", IMAGE, "sleep", "1000")).stdout.strip()
    pid = _inspect(p, cid, "{{.State.Pid}}")
    assert _host_cgroup_file(pid, "memory", "memory.limit_in_bytes") == \
        str(64 * MiB)
    assert _host_cgroup_file(pid, "pids", "pids.max") == "50"
    assert int(_host_cgroup_file(pid, "cpu", "cpu.cfs_quota_us")) * 2 == \
        int(_host_cgroup_file(pid, "cpu", "cpu.cfs_period_us"))
    r = _check(p("stats", "--no-stream", "--format",
                 "{{.MemUsage}}|{{.PIDs}}", cid))
    mem, pids = r.stdout.strip().split("|")
    assert mem.endswith("/ 67.11MB") and pids == "1", harness.describe(r)
    _check(p("update", "--memory", "128m", cid))
    assert _host_cgroup_file(pid, "memory", "memory.limit_in_bytes") == \
        str(128 * MiB)
    _check(p("rm", "-f", cid))


def test_podman_memory_limit_too_low_for_setup():
    p = Podman()
    r = _run(p, "--rm", "--memory", "4k", IMAGE, "true")
    assert r.returncode == 126, harness.describe(r)
    assert "memory" in r.stderr, harness.describe(r)
    assert p("ps", "-aq").stdout.strip() == ""


def test_podman_cap_drop_and_add():
    p = Podman()
    r = _check(_run(p, "--rm", "--cap-drop", "ALL", "--cap-add",
                    "NET_BIND_SERVICE", IMAGE, "grep", "^Cap",
                    "/proc/self/status"))
    caps = dict(line.split(":\t") for line in r.stdout.splitlines())
    # CAP_NET_BIND_SERVICE is bit 10
    for s in ("CapPrm", "CapEff", "CapBnd"):
        assert caps[s] == "0000000000000400", harness.describe(r)
    r = _check(_run(p, "--rm", "--cap-drop", "CHOWN", IMAGE, "sh", "-c",
                    "touch /tmp/a; chown 5 /tmp/a; echo rc=$?"))
    assert r.stdout.strip() == "rc=1", harness.describe(r)
    assert "Operation not permitted" in r.stderr, harness.describe(r)


def test_podman_logs_kill_signal_wait_and_states():
    p = Podman()
    cid = _check(_run(
        p, "-d", IMAGE, "sh", "-c",
        "trap 'echo got-usr1; exit 7' USR1; echo out-line; echo err-line >&2;"
        " while :; do sleep 0.1; done")).stdout.strip()
    _poll(lambda: _logs_show(p, cid, "err-line"), "the container's output")
    r = _check(p("ps", "-a", "--format", "{{.ID}} {{.Status}}"))
    assert "Up " in r.stdout, harness.describe(r)
    _check(p("kill", "-s", "USR1", cid))
    assert _check(p("wait", cid)).stdout.strip() == "7"
    r = _check(p("logs", cid))
    assert r.stdout.split() == ["out-line", "got-usr1"], harness.describe(r)
    assert r.stderr.strip() == "err-line", harness.describe(r)
    assert _inspect(p, cid, "{{.State.Status}} {{.State.ExitCode}}") == \
        "exited 7"
    r = _check(p("ps", "-a", "--format", "{{.Status}}"))
    assert r.stdout.startswith("Exited (7)"), harness.describe(r)
    _check(p("rm", cid))


def test_podman_stop_graceful_and_after_timeout():
    p = Podman()
    cid = _check(_run(p, "-d", IMAGE, "sh", "-c",
                      "trap 'exit 0' TERM; echo ready;"
                      " while :; do sleep 0.1; done")).stdout.strip()
    _poll(lambda: _logs_show(p, cid, "ready"), "the TERM trap")
    _check(p("stop", "-t", str(WAIT), cid))
    assert _inspect(p, cid, "{{.State.Status}} {{.State.ExitCode}}") == \
        "exited 0"
    _check(p("rm", cid))
    # TERM ignored: after the timeout podman kills it.
    cid = _check(_run(p, "-d", IMAGE, "sh", "-c",
                      "trap '' TERM; echo ready;"
                      " while :; do sleep 0.1; done")).stdout.strip()
    _poll(lambda: _logs_show(p, cid, "ready"), "the TERM trap")
    _check(p("stop", "-t", "1", cid))
    assert _inspect(p, cid, "{{.State.Status}} {{.State.ExitCode}}") == \
        "exited 137"
    _check(p("rm", cid))


def test_podman_restart_and_start_again():
    p = Podman()
    cid = _check(_run(p, "-d", IMAGE, "sleep", "1000")).stdout.strip()
    pid1 = _inspect(p, cid, "{{.State.Pid}}")
    _check(p("restart", "-t", "1", cid))
    status, pid2 = _inspect(p, cid, "{{.State.Status}} {{.State.Pid}}").split()
    assert status == "running" and pid2 != pid1, (pid1, pid2)
    assert not os.path.exists("/proc/%s/root" % pid1) or \
        os.readlink("/proc/%s/root" % pid1) == "/"
    _check(p("stop", "-t", "1", cid))
    assert _inspect(p, cid, "{{.State.Status}}") == "exited"
    _check(p("start", cid))
    assert _inspect(p, cid, "{{.State.Status}}") == "running"
    _check(p("rm", "-f", cid))


def test_podman_created_state_then_start_attached():
    p = Podman()
    create = ("create",) + p.run_args(IMAGE, "sh", "-c", "exit 5")[1:]
    cid = _check(p(*create)).stdout.strip()
    assert _inspect(p, cid, "{{.State.Status}}") == "created"
    r = _check(p("ps", "-a", "--format", "{{.Status}}"))
    assert r.stdout.strip() == "Created", harness.describe(r)
    _check(p("start", "-a", cid), rc=5)
    assert _inspect(p, cid, "{{.State.Status}} {{.State.ExitCode}}") == \
        "exited 5"
    _check(p("rm", cid))


def test_podman_more_exit_codes():
    p = Podman()
    # a directory is no program: 126, as for a file without x
    _check(_run(p, "--rm", IMAGE, "/tmp"), rc=126)
    _check(_run(p, "--rm", IMAGE, "sh", "-c", "exit 42"), rc=42)
    # the runtime refuses the config at start: podman's own failure, 125
    args = p.run_args(IMAGE, "true")[1:]
    args = tuple(a.replace("nofile=1024:1024", "nofile=1024:30000")
                 for a in args)
    cid = _check(p("create", *args)).stdout.strip()
    r = p("start", cid)
    assert r.returncode == 125, harness.describe(r)
    assert "rlimit" in r.stderr.lower(), harness.describe(r)
    # killed by podman: 128 + SIGKILL
    cid2 = _check(_run(p, "-d", IMAGE, "sleep", "1000")).stdout.strip()
    _check(p("kill", cid2))
    assert _check(p("wait", cid2)).stdout.strip() == "137"
    _check(p("rm", "-f", cid, cid2))


def test_podman_host_namespaces():
    p = Podman()
    args = [a for a in p.run_args()[1:] if a not in ("--network", "none")]
    r = _check(p("run", "--rm", *args, "--network", "host", "--pid", "host",
                 "--ipc", "host", "--uts", "host", IMAGE, "sh", "-c",
                 "for n in net pid ipc uts; do readlink /proc/self/ns/$n; done"))
    host = [os.readlink("/proc/self/ns/" + n)
            for n in ("net", "pid", "ipc", "uts")]
    assert r.stdout.split() == host, harness.describe(r)


def test_podman_network_namespace_by_path():
    # Podman's networks (the default one too) are namespaces it makes and
    # the config joins by path, with podman's default sysctl
    # net.ipv4.ping_group_range set in it.
    holder = subprocess.Popen(["unshare", "--net", "sleep", "1000"])
    harness.on_cleanup(lambda: (holder.kill(), holder.wait()))
    net = "/proc/%d/ns/net" % holder.pid
    _poll(lambda: os.readlink(net) != os.readlink("/proc/self/ns/net"),
          "unshare to make a network namespace")
    p = Podman()
    args = [a for a in p.run_args()[1:] if a not in ("--network", "none")]
    r = _check(p("run", "--rm", *args, "--network", "ns:" + net,
                 "--sysctl", "net.ipv4.ip_forward=1", IMAGE, "sh", "-c",
                 "readlink /proc/self/ns/net;"
                 " cat /proc/sys/net/ipv4/ip_forward"))
    assert r.stdout.split() == [os.readlink(net), "1"], harness.describe(r)


def test_podman_pod_shares_namespaces():
    # The members join the infra container's namespaces by path. Root here
    # cannot raise hard rlimits, and the infra container takes podman's
    # default ulimits (nofile 1048576) unless containers.conf says otherwise.
    p = Podman()
    harness.on_cleanup(lambda: p("pod", "rm", "-f", "-a", "-t", "0"))
    conf = os.path.join(p.dir, "containers.conf")
    with open(conf, "w") as f:
        f.write('[containers]\ndefault_ulimits = ["nofile=1024:1024",'
                ' "nproc=1024:1024"]\n')
    old = os.environ.get("CONTAINERS_CONF")
    os.environ["CONTAINERS_CONF"] = conf
    harness.on_cleanup(lambda: os.environ.pop("CONTAINERS_CONF") if old is None
                       else os.environ.update(CONTAINERS_CONF=old))
    _check(p("import", "--change", 'CMD ["sleep", "100000"]',
             os.path.join(p.dir, "bb.tar"), "localhost/coil-pause"))
    _check(p("pod", "create", "--name", "coil-pod", "--network", "none",
             "--cgroup-parent", p.parent, "--share", "net,ipc,uts,pid",
             "--infra-image", "localhost/coil-pause"))
    _check(p("pod", "start", "coil-pod"))
    member = _check(p("run", "-d", "--pod", "coil-pod", IMAGE, "sleep",
                      "1000")).stdout.strip()
    r = _check(p("run", "--rm", "--pod", "coil-pod", IMAGE, "sh", "-c",
                 "hostname; ps -o args"))
    lines = r.stdout.splitlines()
    assert lines[0] == "coil-pod", harness.describe(r)
    assert "sleep 100000" in lines and "sleep 1000" in lines, \
        harness.describe(r)
    _check(p("pod", "pause", "coil-pod"))
    assert _inspect(p, member, "{{.State.Status}}") == "paused"
    _check(p("pod", "unpause", "coil-pod"))
    _check(p("pod", "stop", "-t", "1", "coil-pod"))
    assert _inspect(p, member, "{{.State.Status}}") == "exited"
    _check(p("pod", "start", "coil-pod"))
    assert _inspect(p, member, "{{.State.Status}}") == "running"
    _check(p("pod", "rm", "-f", "-t", "1", "coil-pod"))


def test_podman_cp_commit_and_diff():
    # commit pauses the container (the runtime's pause and resume) while it
    # copies the changes.
    p = Podman()
    cid = _check(_run(p, "-d", IMAGE, "sleep", "1000")).stdout.strip()
    d = harness.tmpdir()
    with open(os.path.join(d, "f"), "w") as f:
        f.write("hello")
    _check(p("cp", os.path.join(d, "f"), cid + ":/tmp/f"))
    _check(p("cp", cid + ":/tmp/f", os.path.join(d, "back")))
    with open(os.path.join(d, "back")) as f:
        assert f.read() == "hello"
    assert "A /tmp/f" in _check(p("diff", cid)).stdout.splitlines()
    _check(p("commit", "-q", cid, "localhost/coil-committed"))
    assert _inspect(p, cid, "{{.State.Status}}") == "running"
    r = _check(_run(p, "--rm", "localhost/coil-committed", "cat", "/tmp/f"))
    assert r.stdout == "hello", harness.describe(r)
    _check(p("rm", "-f", cid))


# ---------------------------------------------------------------- containerd

def _ctr_run(c, *args):
    return c.ctr(*c.run_args(*args))


def _task_line(c, cid):
    """(pid, status) of the task from `ctr task ls`, or None."""
    for line in c.ctr("task", "ls").stdout.splitlines()[1:]:
        f = line.split()
        if f and f[0] == cid:
            return f[1], f[2]
    return None


def _ctr_remove(c, cid):
    c.ctr("task", "kill", "-s", "SIGKILL", cid)
    _poll(lambda: (_task_line(c, cid) or ("", "STOPPED"))[1] == "STOPPED",
          "the task to stop")
    _check(c.ctr("task", "rm", cid))
    _check(c.ctr("container", "rm", cid))


def test_ctr_run_env_cwd_read_only_and_null_io():
    c = Containerd()
    r = _check(_ctr_run(c, "--rm", "--env", "FOO=bar", "--cwd", "/tmp", IMAGE,
                        harness.new_id("ctr"), "sh", "-c",
                        'echo "$FOO $(pwd)"'))
    assert r.stdout.strip() == "bar /tmp", harness.describe(r)
    r = _check(_ctr_run(c, "--rm", "--read-only", IMAGE, harness.new_id("ctr"),
                        "sh", "-c", "touch /x; echo rc=$?"))
    assert r.stdout.strip() == "rc=1", harness.describe(r)
    assert "Read-only file system" in r.stderr, harness.describe(r)
    _check(_ctr_run(c, "--rm", "--null-io", IMAGE, harness.new_id("ctr"),
                    "sh", "-c", "echo lost; exit 3"), rc=3)
    assert c.ctr("container", "ls", "-q").stdout.strip() == ""


def test_ctr_bind_mounts_rw_and_ro():
    c = Containerd()
    d = harness.tmpdir()
    _check(_ctr_run(c, "--rm", "--mount",
                    "type=bind,src=%s,dst=/data,options=rbind:rw" % d, IMAGE,
                    harness.new_id("ctr"), "sh", "-c", "echo x > /data/f"))
    with open(os.path.join(d, "f")) as f:
        assert f.read() == "x\n"
    r = _check(_ctr_run(c, "--rm", "--mount",
                        "type=bind,src=%s,dst=/data,options=rbind:ro" % d,
                        IMAGE, harness.new_id("ctr"), "sh", "-c",
                        "cat /data/f; echo y > /data/g; echo rc=$?"))
    assert r.stdout.split() == ["x", "rc=1"], harness.describe(r)
    assert not os.path.exists(os.path.join(d, "g"))


def test_ctr_memory_limit_and_metrics():
    c = Containerd()
    cid = harness.new_id("ctr")
    _check(_ctr_run(c, "-d", "--memory-limit", str(64 * MiB), IMAGE, cid,
                    "sleep", "1000"))
    pid, status = _task_line(c, cid)
    assert status == "RUNNING"
    assert _host_cgroup_file(pid, "memory", "memory.limit_in_bytes") == \
        str(64 * MiB)
    r = _check(c.ctr("task", "metrics", cid))
    metrics = dict(line.split()[:2] for line in r.stdout.splitlines()
                   if line.startswith(("memory.", "pids.")))
    assert metrics.get("memory.limit_in_bytes") == str(64 * MiB), \
        harness.describe(r)
    assert metrics.get("pids.current") == "1", harness.describe(r)
    _ctr_remove(c, cid)


def _ctr_foreground(c, cid, d, trap):
    """`ctr run --rm` in the background running `trap`, returned once the
    trap is set (the task touches d/ready, d bind-mounted at /data)."""
    argv = ["ctr", "-a", c.sock, "-n", "coiltest"] + list(c.run_args(
        "--rm", "--mount", "type=bind,src=%s,dst=/data,options=rbind:rw" % d,
        IMAGE, cid, "sh", "-c",
        trap + "; touch /data/ready; while :; do sleep 0.1; done"))
    out = open(os.path.join(harness.tmpdir(), "ctr.out"), "w+")
    harness.on_cleanup(out.close)
    # SIGHUP ignored: Go then leaves it alone until ctr asks for every
    # signal to forward them, which shows in SigCgt.
    fg = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                          stderr=subprocess.STDOUT, preexec_fn=lambda:
                          signal.signal(signal.SIGHUP, signal.SIG_IGN))
    harness.REG.procs.append(fg)

    def ready():
        if fg.poll() is not None:
            out.seek(0)
            raise AssertionError("ctr run ended (%s) before the trap was set:"
                                 " %s" % (fg.returncode, out.read()))
        return os.path.exists(os.path.join(d, "ready"))
    _poll(ready, "the trap")
    return fg


def test_ctr_kill_signal_gives_exit_status():
    c = Containerd()
    cid = harness.new_id("ctr")
    d = harness.tmpdir()
    fg = _ctr_foreground(c, cid, d, "trap 'exit 7' USR1")
    assert _task_line(c, cid)[1] == "RUNNING"
    _check(c.ctr("task", "kill", "-s", "SIGUSR1", cid))
    assert fg.wait(timeout=120) == 7
    assert c.ctr("container", "ls", "-q").stdout.strip() == ""


def test_ctr_uidmap_user_namespace():
    c = Containerd()
    r = _check(_ctr_run(c, "--rm", "--uidmap", "0:100000:65536", "--gidmap",
                        "0:100000:65536", IMAGE, harness.new_id("ctr"), "sh",
                        "-c", "cat /proc/self/uid_map; touch /tmp/x && id -u"))
    assert r.stdout.split() == ["0", "100000", "65536", "0"], \
        harness.describe(r)


def test_ctr_pid_file_and_joined_pid_namespace():
    c = Containerd()
    cid = harness.new_id("ctr")
    pid_file = os.path.join(harness.tmpdir(), "pid")
    _check(_ctr_run(c, "-d", "--pid-file", pid_file, IMAGE, cid, "sleep",
                    "1000"))
    with open(pid_file) as f:
        pid = f.read().strip()
    assert _task_line(c, cid)[0] == pid
    r = _check(_ctr_run(c, "--rm", "--with-ns", "pid:/proc/%s/ns/pid" % pid,
                        IMAGE, harness.new_id("ctr"), "ps", "-o", "pid,args"))
    assert "1 sleep 1000" in " ".join(r.stdout.split()), harness.describe(r)
    _ctr_remove(c, cid)


def test_ctr_default_seccomp_profile_and_privileged():
    c = Containerd()
    r = _check(_ctr_run(c, "--rm", "--seccomp", IMAGE, harness.new_id("ctr"),
                        "sh", "-c", "grep ^Seccomp: /proc/self/status;"
                        " unshare -U true; echo unshare=$?"))
    # containerd's profile refuses unshare without CAP_SYS_ADMIN
    assert r.stdout.split() == ["Seccomp:", "2", "unshare=1"], \
        harness.describe(r)
    r = _check(_ctr_run(c, "--rm", "--privileged", IMAGE,
                        harness.new_id("ctr"), "grep", "^CapEff:",
                        "/proc/self/status"))
    assert r.stdout.split()[1] == _status_field("/proc/self/status", "CapEff"), \
        harness.describe(r)


def test_ctr_foreground_run_forwards_sigterm():
    # ctr run forwards the signals it gets to the task
    c = Containerd()
    cid = harness.new_id("ctr")
    d = harness.tmpdir()
    fg = _ctr_foreground(c, cid, d, "trap 'exit 9' TERM")
    # ctr forwards signals only once the task has started, so the task can
    # be ready first, and a SIGTERM before that kills ctr itself. Go's
    # runtime catches SIGTERM from the start, so SigCgt's SIGTERM bit says
    # nothing; the inherited-ignored SIGHUP is caught only when ctr asks
    # for every signal (bounded, not timed).
    deadline = time.time() + 60
    while not _catches(fg.pid, signal.SIGHUP):
        assert time.time() < deadline, "ctr never started forwarding"
        time.sleep(0.02)
    fg.send_signal(signal.SIGTERM)
    rc = fg.wait(timeout=120)
    assert rc == 9, rc


def _catches(pid, sig):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) & (1 << (sig - 1)))
    return False


def test_ctr_task_started_again_after_removal():
    # The container outlives its task: `task start` makes a new one.
    c = Containerd()
    cid = harness.new_id("ctr")
    _check(_ctr_run(c, "-d", IMAGE, cid, "sleep", "1000"))
    pid1, _ = _task_line(c, cid)
    _check(c.ctr("task", "kill", "-s", "SIGKILL", cid))
    _poll(lambda: _task_line(c, cid)[1] == "STOPPED", "the task to stop")
    _check(c.ctr("task", "rm", cid))
    _check(c.ctr("task", "start", "-d", cid))
    pid2, status = _task_line(c, cid)
    assert status == "RUNNING" and pid2 != pid1, (pid1, pid2, status)
    _ctr_remove(c, cid)


# ---------------------------------------------------------------- tmpcopyup

def _image_with_content(p, name):
    """The busybox image plus /data (a file, a subdirectory, a symlink)
    and a file in /var/tmp, imported into p as name."""
    dest = os.path.join(p.dir, "with-content.tar")

    def entry(path, type_, mode, data=b"", link=""):
        ti = tarfile.TarInfo(path)
        ti.type, ti.mode, ti.size, ti.linkname = type_, mode, len(data), link
        ti.uid = ti.gid = 1000 if path.startswith("data/") else 0
        return ti, io.BytesIO(data)

    with tarfile.open(dest, "w") as t:
        t.add(harness.rootfs(), arcname=".")
        for path, type_, mode, data, link in (
                ("data", tarfile.DIRTYPE, 0o750, b"", ""),
                ("data/f", tarfile.REGTYPE, 0o640, b"img\n", ""),
                ("data/sub", tarfile.DIRTYPE, 0o711, b"", ""),
                ("data/sub/g", tarfile.REGTYPE, 0o600, b"deep\n", ""),
                ("data/link", tarfile.SYMTYPE, 0o777, b"", "/data/f"),
                ("var/tmp/keep", tarfile.REGTYPE, 0o644, b"kept\n", "")):
            ti, f = entry(path, type_, mode, data, link)
            t.addfile(ti, f if type_ == tarfile.REGTYPE else None)
    _check(p("import", dest, name))
    return name


def test_podman_read_only_and_tmpfs_start_with_the_image_content():
    # podman asks for "tmpcopyup" on --tmpfs mounts and on the /tmp,
    # /var/tmp and /run tmpfs of --read-only.
    p = Podman()
    image = _image_with_content(p, "localhost/coil-busybox-data:latest")
    r = _check(_run(p, "--rm", "--read-only", image, "sh", "-c",
                    "cat /var/tmp/keep; touch /x; echo root=$?; "
                    "touch /tmp/t /var/tmp/t /run/t && echo tmp=0"))
    assert r.stdout.split() == ["kept", "root=1", "tmp=0"], \
        harness.describe(r)
    r = _check(_run(p, "--rm", "--tmpfs", "/data", image, "sh", "-c",
                    "stat -c '%n %a %u:%g' /data/f /data/sub /data/sub/g; "
                    "readlink /data/link; cat /data/link /data/sub/g; "
                    "echo new > /data/f; cat /data/f; "
                    "grep ' /data ' /proc/self/mounts | cut -d' ' -f3"))
    assert r.stdout.splitlines() == [
        "/data/f 640 1000:1000", "/data/sub 711 1000:1000",
        "/data/sub/g 600 1000:1000", "/data/f", "img", "deep", "new",
        "tmpfs"], harness.describe(r)
