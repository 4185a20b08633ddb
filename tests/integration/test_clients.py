"""Real clients drive coil through their runc integration: podman (via conmon)
and containerd (ctr with the io.containerd.runc.v2 shim). Both run with private
storage and state directories and leave nothing behind."""

import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import tarfile
import time

import harness

IMAGE = "localhost/coil-busybox:latest"


def _own_cgroup_parent(name):
    """An absolute cgroup path below the cgroup this test runs in, for every
    v1 controller: the deepest of our controller paths (the others are its
    ancestors on the machines we run on) plus `name`."""
    paths = []
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if ctrls and not ctrls.startswith("name="):
                paths.append(path.rstrip("/") or "/")
    deepest = max(paths, key=len)
    for p in paths:
        assert p == "/" or deepest == p or deepest.startswith(p + "/"), \
            "controller cgroups are not nested: %r" % paths
    return deepest.rstrip("/") + "/" + name


def _remove_cgroup_everywhere(abs_path):
    """rmdir abs_path (depth first) in every cgroup hierarchy where it exists."""
    for h in os.listdir("/sys/fs/cgroup"):
        top = os.path.join("/sys/fs/cgroup", h) + abs_path
        if not os.path.isdir(top):
            continue
        for dirpath, _, _ in sorted(os.walk(top), key=lambda w: -len(w[0])):
            try:
                os.rmdir(dirpath)
            except OSError:
                pass


def _delete_leftovers(root, inside):
    """coil delete --force every container under root whose bundle lies in
    `inside`: a client that failed halfway can leave one behind."""
    r = subprocess.run([harness.COIL, "--root", root, "list", "--format", "json"],
                       capture_output=True, text=True, timeout=60)
    try:
        containers = json.loads(r.stdout or "[]")
    except ValueError:
        containers = []
    for c in containers:
        if c.get("bundle", "").startswith(inside):
            subprocess.run([harness.COIL, "--root", root, "delete", "--force",
                            c["id"]], capture_output=True, timeout=60)


def _image_tar(dest):
    """The busybox rootfs as a plain tar (one layer)."""
    with tarfile.open(dest, "w") as t:
        t.add(harness.rootfs(), arcname=".")
    return dest


def _oci_archive(dest, tree=None, ref=IMAGE, cmd=("sh",)):
    """An OCI image layout tar for `ctr image import`: one layer holding
    `tree` (the busybox rootfs by default), named `ref`, running `cmd`."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as t:
        t.add(tree or harness.rootfs(), arcname=".")
    layer = layer.getvalue()
    ldigest = hashlib.sha256(layer).hexdigest()
    config = json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Env": ["PATH=/bin:/sbin:/usr/bin"], "Cmd": list(cmd)},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + ldigest]},
    }).encode()
    cdigest = hashlib.sha256(config).hexdigest()
    manifest = json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": "sha256:" + cdigest, "size": len(config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": "sha256:" + ldigest, "size": len(layer)}],
    }).encode()
    mdigest = hashlib.sha256(manifest).hexdigest()
    index = json.dumps({
        "schemaVersion": 2,
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "digest": "sha256:" + mdigest, "size": len(manifest),
                       "annotations": {"org.opencontainers.image.ref.name": ref}}],
    }).encode()
    with tarfile.open(dest, "w") as t:
        for name, data in (("oci-layout", b'{"imageLayoutVersion":"1.0.0"}'),
                           ("index.json", index),
                           ("blobs/sha256/" + ldigest, layer),
                           ("blobs/sha256/" + cdigest, config),
                           ("blobs/sha256/" + mdigest, manifest)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return dest


# ---------------------------------------------------------------- podman

class Podman:
    def __init__(self):
        self.dir = harness.tmpdir()
        self.parent = _own_cgroup_parent("coil-podman-%d" % os.getpid())
        harness.on_cleanup(self.cleanup)
        r = self("import", _image_tar(os.path.join(self.dir, "bb.tar")), IMAGE)
        assert r.returncode == 0, r.stderr

    def argv(self, *args):
        return ["podman", "--storage-driver", "vfs",
                "--root", self.dir + "/storage", "--runroot", self.dir + "/run",
                "--tmpdir", self.dir + "/tmp", "--cgroup-manager", "cgroupfs",
                "--events-backend", "none", "--runtime", harness.COIL] + list(args)

    def __call__(self, *args, timeout=120):
        return subprocess.run(self.argv(*args), capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def run_args(self, *args):
        # Root here cannot raise hard rlimits, and podman asks for 1048576.
        return ("run", "--network", "none", "--cgroup-parent", self.parent,
                "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024") + args

    def cleanup(self):
        ids = self("ps", "-aq").stdout.split()
        if ids:
            self("rm", "-f", *ids)
        # podman drives coil with its default --root
        _delete_leftovers("/run/coil", self.dir)
        _remove_cgroup_everywhere(self.parent)


def test_podman_run_output_and_exit_code():
    p = Podman()
    r = p(*p.run_args("--rm", IMAGE, "sh", "-c",
                      "echo hello-podman; cat /proc/self/cgroup; exit 3"))
    assert r.returncode == 3, harness.describe(r)
    assert "hello-podman" in r.stdout
    assert "coil-podman" in r.stdout, "container is not in the requested cgroup"
    assert p("ps", "-aq").stdout.strip() == ""


def test_podman_exit_codes_for_unrunnable_programs():
    # podman matches the runtime's error text: "no such file or directory"
    # or "executable file not found" is 127, "permission denied" 126.
    p = Podman()
    for args, code in ((["/nonexistent"], 127), (["no-such-cmd"], 127),
                       (["/etc/passwd"], 126)):
        r = p(*p.run_args("--rm", IMAGE, *args))
        assert r.returncode == code, harness.describe(r)
    assert p("ps", "-aq").stdout.strip() == ""


def test_podman_detached_stop_and_remove():
    p = Podman()
    r = p(*p.run_args("-d", "--name", "coil-pm", IMAGE, "sleep", "1000"))
    assert r.returncode == 0, harness.describe(r)
    cid = r.stdout.strip()
    r = p("inspect", "--format", "{{.State.Status}} {{.State.Pid}}", cid)
    status, pid = r.stdout.split()
    assert status == "running", r.stdout
    assert os.path.exists("/proc/%s" % pid)
    # sleep as PID 1 ignores SIGTERM: podman falls back to SIGKILL via kill.
    r = p("stop", "-t", "1", cid)
    assert r.returncode == 0, harness.describe(r)
    r = p("inspect", "--format", "{{.State.Status}}", cid)
    assert r.stdout.strip() in ("exited", "stopped"), r.stdout
    r = p("rm", cid)
    assert r.returncode == 0, harness.describe(r)
    assert not os.path.exists("/proc/%s/root" % pid) or \
        os.readlink("/proc/%s/root" % pid) == "/"


def test_podman_tty_uses_console_socket():
    p = Podman()
    cmd = " ".join("'%s'" % a for a in p.argv(*p.run_args("--rm", "-t", IMAGE, "tty")))
    r = subprocess.run(["script", "-qec", cmd, "/dev/null"], capture_output=True,
                       text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, harness.describe(r)
    assert "/dev/pts/0" in r.stdout, r.stdout


# ---------------------------------------------------------------- containerd

class Containerd:
    def __init__(self):
        self.dir = harness.tmpdir()
        self.sock = self.dir + "/containerd.sock"
        cfg = self.dir + "/config.toml"
        with open(cfg, "w") as f:
            f.write('version = 2\nroot = "%s/root"\nstate = "%s/state"\n'
                    'disabled_plugins = ["io.containerd.grpc.v1.cri"]\n'
                    '[grpc]\n  address = "%s"\n' % (self.dir, self.dir, self.sock))
        self.log = open(self.dir + "/containerd.log", "w")
        self.proc = subprocess.Popen(["containerd", "--config", cfg],
                                     stdout=self.log, stderr=self.log,
                                     stdin=subprocess.DEVNULL)
        harness.on_cleanup(self.cleanup)
        for _ in range(100):
            if self.ctr("version").returncode == 0:
                break
            time.sleep(0.1)
        r = self.ctr("image", "import", _oci_archive(self.dir + "/bb-oci.tar"))
        assert r.returncode == 0, harness.describe(r)

    def ctr(self, *args, timeout=120):
        return subprocess.run(["ctr", "-a", self.sock, "-n", "coiltest"] + list(args),
                              capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)

    def run_args(self, *args):
        # An empty --cgroup leaves cgroupsPath unset: coil then nests the
        # container below the cgroup it was started in.
        return ("run", "--cgroup", "", "--runc-binary", harness.COIL) + args

    def cleanup(self):
        for line in self.ctr("task", "ls", "-q").stdout.split():
            self.ctr("task", "kill", "-s", "SIGKILL", line)
            self.ctr("task", "rm", "-f", line)
        for line in self.ctr("container", "ls", "-q").stdout.split():
            self.ctr("container", "rm", line)
        # the runc shim's default --root for namespace "coiltest"
        shim_root = "/run/containerd/runc/coiltest"
        _delete_leftovers(shim_root, self.dir)
        for d in (shim_root, os.path.dirname(shim_root), "/run/containerd/s",
                  "/run/containerd/fifo", "/run/containerd"):
            try:
                os.rmdir(d)  # only when empty: never someone else's state
            except OSError:
                pass
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        # Snapshot mounts go with their tasks; anything left is a failure the
        # runner reports, so only unmount what is below our own directory.
        with open("/proc/self/mountinfo") as f:
            mounts = [l.split()[4] for l in f]
        for m in reversed(mounts):
            if m.startswith(self.dir):
                subprocess.run(["umount", "-l", m])
        shutil.rmtree(self.dir, ignore_errors=True)


def test_containerd_run_output_and_exit_code():
    c = Containerd()
    cid = harness.new_id("ctr")
    r = c.ctr(*c.run_args("--rm", IMAGE, cid, "sh", "-c",
                          "echo hello-containerd; id -u; exit 3"))
    assert r.returncode == 3, harness.describe(r)
    assert "hello-containerd" in r.stdout
    assert c.ctr("container", "ls", "-q").stdout.strip() == ""


def test_containerd_tty_uses_console_socket():
    """ctr run -t: the shim gets the pty master through --console-socket
    and copies it to ctr's terminal (here a pty made by script)."""
    c = Containerd()
    cid = harness.new_id("ctr")
    argv = ["ctr", "-a", c.sock, "-n", "coiltest"] + list(
        c.run_args("--rm", "-t", IMAGE, cid, "sh", "-c",
                   "tty; [ -t 0 ] && echo stdin-tty; exit 4"))
    cmd = " ".join("'%s'" % a for a in argv)
    r = subprocess.run(["script", "-qec", cmd, "/dev/null"],
                       capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 4, harness.describe(r)
    assert "/dev/pts/0" in r.stdout and "stdin-tty" in r.stdout, r.stdout
    assert c.ctr("container", "ls", "-q").stdout.strip() == ""


def test_containerd_detached_kill_and_delete():
    c = Containerd()
    cid = harness.new_id("ctr")
    r = c.ctr(*c.run_args("-d", IMAGE, cid, "sleep", "1000"))
    assert r.returncode == 0, harness.describe(r)
    r = c.ctr("task", "ls")
    assert cid in r.stdout and "RUNNING" in r.stdout, r.stdout
    r = c.ctr("task", "kill", "-s", "SIGKILL", cid)
    assert r.returncode == 0, harness.describe(r)
    for _ in range(100):
        if "STOPPED" in c.ctr("task", "ls").stdout:
            break
        time.sleep(0.1)
    assert "STOPPED" in c.ctr("task", "ls").stdout
    assert c.ctr("task", "rm", cid).returncode == 0
    assert c.ctr("container", "rm", cid).returncode == 0


def test_containerd_pause_resume_and_ps():
    c = Containerd()
    cid = harness.new_id("ctr")
    r = c.ctr(*c.run_args("-d", IMAGE, cid, "sh", "-c",
                          "sleep 1000 & sleep 1001"))
    assert r.returncode == 0, harness.describe(r)
    pids = []
    for _ in range(100):
        r = c.ctr("task", "ps", cid)
        assert r.returncode == 0, harness.describe(r)
        pids = [line.split()[0] for line in r.stdout.splitlines()[1:]]
        if len(pids) == 2:
            break
        time.sleep(0.1)
    # sh execs its last command: init is "sleep 1001", its child "sleep 1000"
    assert len(pids) == 2 and all(p.isdigit() for p in pids), r.stdout
    r = c.ctr("task", "pause", cid)
    assert r.returncode == 0, harness.describe(r)
    assert "PAUSED" in c.ctr("task", "ls").stdout
    r = c.ctr("task", "resume", cid)
    assert r.returncode == 0, harness.describe(r)
    assert "RUNNING" in c.ctr("task", "ls").stdout
    r = c.ctr("task", "pause", cid)
    assert r.returncode == 0, harness.describe(r)
    r = c.ctr("task", "kill", "-s", "SIGKILL", cid)
    assert r.returncode == 0, harness.describe(r)
    for _ in range(100):
        if "STOPPED" in c.ctr("task", "ls").stdout:
            break
        time.sleep(0.1)
    assert "STOPPED" in c.ctr("task", "ls").stdout, c.ctr("task", "ls").stdout
    assert c.ctr("task", "rm", cid).returncode == 0
    assert c.ctr("container", "rm", cid).returncode == 0


def test_podman_pause_unpause_and_top():
    p = Podman()
    r = p(*p.run_args("-d", IMAGE, "sh", "-c", "sleep 1000 & sleep 1001"))
    assert r.returncode == 0, harness.describe(r)
    cid = r.stdout.strip()
    r = p("pause", cid)
    assert r.returncode == 0, harness.describe(r)
    r = p("inspect", "--format", "{{.State.Status}}", cid)
    assert r.stdout.strip() == "paused", harness.describe(r)
    r = p("unpause", cid)
    assert r.returncode == 0, harness.describe(r)
    r = p("inspect", "--format", "{{.State.Status}}", cid)
    assert r.stdout.strip() == "running", harness.describe(r)
    for _ in range(50):
        r = p("top", cid, "pid", "args")
        assert r.returncode == 0, harness.describe(r)
        if "sleep 1001" in r.stdout:
            break
        time.sleep(0.1)
    assert "sleep 1000" in r.stdout and "sleep 1001" in r.stdout, r.stdout
    r = p("rm", "-f", cid)
    assert r.returncode == 0, harness.describe(r)


# ---------------------------------------------------------------- exec

def _in_script(argv):
    """argv run under script(1), so the client's stdio is a terminal."""
    cmd = " ".join("'%s'" % a for a in argv)
    return subprocess.run(["script", "-qec", cmd, "/dev/null"],
                          capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def _ctr_stop(c, cid):
    c.ctr("task", "kill", "-s", "SIGKILL", cid)
    for _ in range(100):
        if "STOPPED" in c.ctr("task", "ls").stdout:
            break
        time.sleep(0.1)
    assert c.ctr("task", "rm", cid).returncode == 0
    assert c.ctr("container", "rm", cid).returncode == 0


def test_containerd_exec_output_and_exit_code():
    c = Containerd()
    cid = harness.new_id("ctr")
    r = c.ctr(*c.run_args("-d", IMAGE, cid, "sleep", "1000"))
    assert r.returncode == 0, harness.describe(r)
    r = c.ctr("task", "exec", "--exec-id", "e1", cid, "sh", "-c",
              "echo hello-exec; readlink /proc/1/exe; exit 5")
    assert r.returncode == 5, harness.describe(r)
    assert "hello-exec" in r.stdout, r.stdout
    # in the task's pid namespace: its pid 1 is the task's sleep
    assert "/bin/busybox" in r.stdout, r.stdout
    _ctr_stop(c, cid)


def test_containerd_exec_tty():
    c = Containerd()
    cid = harness.new_id("ctr")
    r = c.ctr(*c.run_args("-d", IMAGE, cid, "sleep", "1000"))
    assert r.returncode == 0, harness.describe(r)
    r = _in_script(["ctr", "-a", c.sock, "-n", "coiltest", "task", "exec",
                    "-t", "--exec-id", "e2", cid, "sh", "-c",
                    "tty; [ -t 0 ] && [ -t 1 ] && echo all-tty"])
    assert r.returncode == 0, harness.describe(r)
    assert "/dev/pts/" in r.stdout and "all-tty" in r.stdout, r.stdout
    _ctr_stop(c, cid)


def test_podman_exec_output_and_exit_codes():
    p = Podman()
    r = p(*p.run_args("-d", IMAGE, "sleep", "1000"))
    assert r.returncode == 0, harness.describe(r)
    cid = r.stdout.strip()
    r = p("exec", cid, "sh", "-c", "echo hello-exec; exit 4")
    assert r.returncode == 4, harness.describe(r)
    assert "hello-exec" in r.stdout, r.stdout
    # podman matches the runtime's words, as for run: 127 and 126
    for args, code in ((["/nonexistent"], 127), (["no-such-cmd"], 127),
                       (["/etc/passwd"], 126)):
        r = p("exec", cid, *args)
        assert r.returncode == code, harness.describe(r)
    r = p("rm", "-f", cid)
    assert r.returncode == 0, harness.describe(r)


def test_podman_exec_tty():
    p = Podman()
    r = p(*p.run_args("-d", IMAGE, "sleep", "1000"))
    assert r.returncode == 0, harness.describe(r)
    cid = r.stdout.strip()
    r = _in_script(p.argv("exec", "-t", cid, "sh", "-c",
                          "tty; [ -t 0 ] && [ -t 1 ] && echo all-tty"))
    assert r.returncode == 0, harness.describe(r)
    assert "/dev/pts/" in r.stdout and "all-tty" in r.stdout, r.stdout
    r = p("rm", "-f", cid)
    assert r.returncode == 0, harness.describe(r)


def test_podman_healthcheck_runs_through_exec():
    p = Podman()
    r = p(*p.run_args("-d", "--health-cmd", "test -e /etc/passwd",
                      "--health-interval", "0", IMAGE, "sleep", "1000"))
    assert r.returncode == 0, harness.describe(r)
    cid = r.stdout.strip()
    r = p("healthcheck", "run", cid)
    assert r.returncode == 0, harness.describe(r)
    r = p("inspect", "--format", "{{.State.Health.Status}}", cid)
    assert r.stdout.strip() == "healthy", harness.describe(r)
    r = p("rm", "-f", cid)
    assert r.returncode == 0, harness.describe(r)
