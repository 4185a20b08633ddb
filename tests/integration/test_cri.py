"""Kubernetes' path to coil: the kubelet talks CRI (gRPC, runtime.v1) to
containerd's CRI plugin, which runs pods through a RuntimeClass handler whose
io.containerd.runc.v2 shim calls coil. Each test starts a private containerd
with its own root, state, socket, runc root and images (built here, imported
with ctr), drives it through the CRI calls the kubelet makes, and tears it
down. Pods use the host's network, so no CNI plugin is needed."""

import grpc
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import harness
from test_clients import _oci_archive, _own_cgroup_parent, _remove_cgroup_everywhere

CRI_DIR = os.path.join(harness.HERE, "cri")
PAUSE_IMAGE = "localhost/coil-pause:latest"
BUSYBOX_IMAGE = "localhost/coil-busybox:latest"
HANDLER = "coil"
NS = "k8s.io"
TIMEOUT = 120  # seconds per CRI call: generous, the machine may be loaded

_api = None


def api():
    """The runtime.v1 messages, generated from cri/api.proto once per run
    into a temp dir that goes right after the import."""
    global _api
    if _api is None:
        out = tempfile.mkdtemp(prefix=harness.TMP_PREFIX + "cri-gen-")
        try:
            r = subprocess.run(["protoc", "-I", CRI_DIR, "--python_out", out,
                                os.path.join(CRI_DIR, "api.proto")],
                               capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, harness.describe(r)
            spec = importlib.util.spec_from_file_location(
                "cri_api_pb2", os.path.join(out, "api_pb2.py"))
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        finally:
            shutil.rmtree(out, ignore_errors=True)
        _api = mod
    return _api


class _Stub:
    """Unary calls of one CRI service, by method name: stub.Version(req)."""

    def __init__(self, channel, service):
        self.channel = channel
        self.service = service

    def __getattr__(self, method):
        pb = api()
        reply = getattr(pb, method + "Response")
        call = self.channel.unary_unary(
            "/runtime.v1.%s/%s" % (self.service, method),
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=reply.FromString)
        return lambda req: call(req, timeout=TIMEOUT)


def _build_pause(dest_dir):
    """A rootfs holding only /pause, compiled statically from cri/pause.c."""
    tree = os.path.join(dest_dir, "pause-rootfs")
    os.makedirs(tree)
    r = subprocess.run(["gcc", "-static", "-O2", "-o", os.path.join(tree, "pause"),
                        os.path.join(CRI_DIR, "pause.c")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, harness.describe(r)
    return tree


def _shim_pids(sock):
    """containerd-shim-runc-v2 processes serving the containerd at sock."""
    pids = []
    for ent in os.listdir("/proc"):
        if not ent.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % ent, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"containerd-shim-runc-v2") and \
                sock.encode() in argv:
            pids.append(int(ent))
    return pids


class Cri:
    """A private containerd with the CRI plugin and the `coil` handler."""

    def __init__(self):
        self.dir = harness.tmpdir()
        self.sock = self.dir + "/containerd.sock"
        # The shim runs coil with --root <Root>/<containerd namespace>.
        self.coil_root = self.dir + "/runc/" + NS
        harness.REG.roots.append(self.coil_root)
        self.parent = _own_cgroup_parent("coil-cri-%d" % os.getpid())
        self.logs = self.dir + "/logs"
        os.makedirs(self.logs)
        self.pods = []
        self.channel = None
        self.proc = None
        self.log = None
        harness.on_cleanup(self.cleanup)
        cfg = self.dir + "/config.toml"
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        with open(cfg, "w") as f:
            f.write("""version = 2
root = "{d}/root"
state = "{d}/state"
[grpc]
  address = "{sock}"
[plugins."io.containerd.internal.v1.opt"]
  path = "{d}/opt"
[{cri}]
  sandbox_image = "{pause}"
  # A random port on loopback: parallel runs must not collide on 10010.
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # Root here lacks CAP_SYS_RESOURCE and cannot lower oom_score_adj below
  # its own: clamp the pause container's -998 as a rootless kubelet does.
  restrict_oom_score_adj = true
[{cri}.cni]
  bin_dir = "{d}/cni/bin"
  conf_dir = "{d}/cni/conf.d"
[{cri}.containerd]
  default_runtime_name = "{h}"
[{cri}.containerd.runtimes.{h}]
  runtime_type = "io.containerd.runc.v2"
[{cri}.containerd.runtimes.{h}.options]
  BinaryName = "{coil}"
  Root = "{d}/runc"
  SystemdCgroup = false
""".format(d=self.dir, sock=self.sock, cri=cri, pause=PAUSE_IMAGE,
                h=HANDLER, coil=harness.COIL))
        self.log = open(self.dir + "/containerd.log", "w")
        self.proc = subprocess.Popen(["containerd", "--config", cfg],
                                     stdout=self.log, stderr=self.log,
                                     stdin=subprocess.DEVNULL)
        self.channel = grpc.insecure_channel("unix://" + self.sock)
        grpc.channel_ready_future(self.channel).result(timeout=TIMEOUT)
        self.rt = _Stub(self.channel, "RuntimeService")
        self.img = _Stub(self.channel, "ImageService")
        self._import(_oci_archive(self.dir + "/pause.tar",
                                  tree=_build_pause(self.dir), ref=PAUSE_IMAGE,
                                  cmd=("/pause",)), PAUSE_IMAGE)
        self._import(_oci_archive(self.dir + "/busybox.tar"), BUSYBOX_IMAGE)

    def _import(self, archive, ref):
        r = subprocess.run(["ctr", "-a", self.sock, "-n", NS, "image", "import",
                            archive], capture_output=True, text=True,
                           timeout=TIMEOUT, stdin=subprocess.DEVNULL)
        assert r.returncode == 0, harness.describe(r)
        # The CRI plugin learns of the image from containerd's events.
        pb = api()
        deadline = time.time() + TIMEOUT
        while not self.img.ImageStatus(pb.ImageStatusRequest(
                image=pb.ImageSpec(image=ref))).image.id:
            assert time.time() < deadline, "CRI never saw image %s" % ref
            time.sleep(0.2)

    def log_text(self):
        self.log.flush()
        with open(self.dir + "/containerd.log") as f:
            return f.read()[-4000:]

    def sandbox_config(self, name):
        pb = api()
        ns = pb.NamespaceOption(network=pb.NODE, pid=pb.CONTAINER, ipc=pb.POD)
        # No hostname: the kubelet sets none for a host-network pod, which
        # shares the host's UTS namespace (runtimes refuse a hostname there).
        return pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid=name + "-uid",
                                           namespace="default", attempt=0),
            log_directory=self.logs,
            linux=pb.LinuxPodSandboxConfig(
                cgroup_parent=self.parent,
                security_context=pb.LinuxSandboxSecurityContext(
                    namespace_options=ns)))

    def run_pod(self, name):
        pb = api()
        cfg = self.sandbox_config(name)
        pod = self.rt.RunPodSandbox(pb.RunPodSandboxRequest(
            config=cfg, runtime_handler=HANDLER)).pod_sandbox_id
        self.pods.append(pod)
        self._track(pod)
        return pod, cfg

    def create(self, pod, cfg, name, command, resources=None):
        pb = api()
        ns = pb.NamespaceOption(network=pb.NODE, pid=pb.CONTAINER, ipc=pb.POD)
        ccfg = pb.ContainerConfig(
            metadata=pb.ContainerMetadata(name=name, attempt=0),
            image=pb.ImageSpec(image=BUSYBOX_IMAGE), command=command,
            log_path=name + ".log",
            linux=pb.LinuxContainerConfig(
                resources=resources,
                security_context=pb.LinuxContainerSecurityContext(
                    namespace_options=ns)))
        cid = self.rt.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=pod, config=ccfg, sandbox_config=cfg)).container_id
        self._track(cid)
        return cid

    def _track(self, cid):
        """Lets the runner's leak check look for the id's processes,
        cgroups and coil state."""
        harness.register_id(cid)
        harness.REG.bundles.append(
            "%s/state/io.containerd.runtime.v2.task/%s/%s" % (self.dir, NS, cid))

    def status(self, cid):
        pb = api()
        return self.rt.ContainerStatus(pb.ContainerStatusRequest(
            container_id=cid, verbose=True))

    def wait_state(self, cid, want):
        deadline = time.time() + TIMEOUT
        while True:
            st = self.status(cid).status
            if st.state == want or time.time() >= deadline:
                return st
            time.sleep(0.2)

    def coil_list(self):
        r = subprocess.run([harness.COIL, "--root", self.coil_root, "list",
                            "--format", "json"], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, harness.describe(r)
        return {c["id"]: c for c in json.loads(r.stdout or "[]") or []}

    def remove_pod(self, pod):
        pb = api()
        self.rt.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pod))
        self.rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod))
        self.pods.remove(pod)

    def assert_nothing_left(self):
        """After the last pod went: no coil state, no shim, no mount below
        our directory, no cgroup below our parent."""
        assert self.coil_list() == {}, self.coil_list()
        deadline = time.time() + TIMEOUT
        while _shim_pids(self.sock) and time.time() < deadline:
            time.sleep(0.2)
        assert _shim_pids(self.sock) == [], "shims left: %r" % _shim_pids(self.sock)
        with open("/proc/self/mountinfo") as f:
            mounts = [l.split()[4] for l in f if l.split()[4].startswith(self.dir)]
        assert mounts == [], mounts
        for mnt, _ in harness.cgroup_hierarchies():
            top = mnt + self.parent
            left = [d for d, _, _ in os.walk(top) if d != top]
            assert left == [], left

    def cleanup(self):
        pb = api()
        for pod in list(self.pods):
            try:
                self.rt.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pod))
                self.rt.RemovePodSandbox(pb.RemovePodSandboxRequest(
                    pod_sandbox_id=pod))
            except grpc.RpcError:
                pass
        if self.channel:
            self.channel.close()
        if self.proc:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.log:
            self.log.close()
        # What a failed test left: its containers, their shims (found by our
        # private socket), their mounts and cgroups.
        if os.path.isdir(self.coil_root):
            for cid in os.listdir(self.coil_root):
                subprocess.run([harness.COIL, "--root", self.coil_root, "delete",
                                "--force", cid], capture_output=True, timeout=60)
        for pid in _shim_pids(self.sock):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        with open("/proc/self/mountinfo") as f:
            mounts = [l.split()[4] for l in f]
        for m in reversed(mounts):
            if m.startswith(self.dir):
                subprocess.run(["umount", "-l", m])
        _remove_cgroup_everywhere(self.parent)
        for d in ("/run/containerd/s", "/run/containerd"):
            try:
                os.rmdir(d)  # only when empty: never someone else's state
            except OSError:
                pass


def _cgroup_file(ctrl, path, name):
    with open("/sys/fs/cgroup/%s%s/%s" % (ctrl, path, name)) as f:
        return f.read().strip()


def test_cri_version_status_and_images():
    c = Cri()
    pb = api()
    v = c.rt.Version(pb.VersionRequest(version="v1"))
    assert v.runtime_name == "containerd", v
    assert v.runtime_api_version == "v1", v
    # No CNI config: the network is not ready, the runtime is.
    conds = {x.type: x for x in c.rt.Status(pb.StatusRequest()).status.conditions}
    assert conds["RuntimeReady"].status, conds
    assert not conds["NetworkReady"].status, conds
    for ref in (PAUSE_IMAGE, BUSYBOX_IMAGE):
        img = c.img.ImageStatus(pb.ImageStatusRequest(
            image=pb.ImageSpec(image=ref))).image
        assert ref in img.repo_tags and img.size > 0, img


def test_cri_pod_lifecycle_under_coil():
    c = Cri()
    pb = api()
    pod, cfg = c.run_pod("coil-pod")
    st = c.rt.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=pod))
    assert st.status.state == pb.SANDBOX_READY, st
    assert st.status.runtime_handler == HANDLER, st
    # The pause process is coil's container, in the host's network namespace.
    listed = c.coil_list()
    assert listed.get(pod, {}).get("status") == "running", (listed, c.log_text())
    pause_pid = listed[pod]["pid"]
    assert os.readlink("/proc/%d/exe" % pause_pid) == "/pause"
    assert os.readlink("/proc/%d/ns/net" % pause_pid) == harness.host_ns("net")
    with open("/proc/%d/cgroup" % pause_pid) as f:
        assert ":memory:%s/%s\n" % (c.parent, pod) in f.read()

    res = pb.LinuxContainerResources(cpu_period=100000, cpu_quota=50000,
                                     cpu_shares=512,
                                     memory_limit_in_bytes=64 << 20)
    cid = c.create(pod, cfg, "worker", [
        "sh", "-c", "echo to-stdout; echo to-stderr >&2; "
        "trap 'exit 7' TERM; sleep 1000 & wait"], res)
    # containerd makes the task (coil create + start) at StartContainer.
    assert c.status(cid).status.state == pb.CONTAINER_CREATED
    c.rt.StartContainer(pb.StartContainerRequest(container_id=cid))
    st = c.wait_state(cid, pb.CONTAINER_RUNNING)
    assert st.state == pb.CONTAINER_RUNNING, st
    info = json.loads(c.status(cid).info["info"])
    pid = info["pid"]
    assert c.coil_list()[cid]["pid"] == pid

    # The kubelet's log file has both streams, in the CRI log format.
    log = os.path.join(c.logs, "worker.log")
    deadline = time.time() + TIMEOUT
    text = ""
    while time.time() < deadline:
        with open(log) as f:
            text = f.read()
        if "to-stdout" in text and "to-stderr" in text:
            break
        time.sleep(0.2)
    lines = [l.split(" ", 3)[1:] for l in text.splitlines()]
    assert ["stdout", "F", "to-stdout"] in lines, text
    assert ["stderr", "F", "to-stderr"] in lines, text

    # The limits are in the container's cgroup, below our own, and the
    # container's process is in it.
    path = c.parent + "/" + cid
    with open("/proc/%d/cgroup" % pid) as f:
        assert ":memory:%s\n" % path in f.read()
    assert _cgroup_file("memory", path, "memory.limit_in_bytes") == str(64 << 20)
    assert _cgroup_file("cpu", path, "cpu.cfs_quota_us") == "50000"
    assert _cgroup_file("cpu", path, "cpu.cfs_period_us") == "100000"
    assert _cgroup_file("cpu", path, "cpu.shares") == "512"

    stats = c.rt.ContainerStats(pb.ContainerStatsRequest(container_id=cid)).stats
    assert stats.attributes.id == cid, stats
    assert stats.memory.working_set_bytes.value > 0, stats
    assert stats.memory.usage_bytes.value > 0, stats
    assert stats.cpu.usage_core_nano_seconds.value > 0, stats

    # StopContainer sends SIGTERM; the trap's exit code is reported.
    c.rt.StopContainer(pb.StopContainerRequest(container_id=cid, timeout=60))
    st = c.wait_state(cid, pb.CONTAINER_EXITED)
    assert st.state == pb.CONTAINER_EXITED and st.exit_code == 7, st
    assert st.finished_at >= st.started_at > 0, st
    c.rt.RemoveContainer(pb.RemoveContainerRequest(container_id=cid))
    assert cid not in c.coil_list()
    assert not os.path.exists("/sys/fs/cgroup/memory" + path)

    c.remove_pod(pod)
    assert not os.path.exists("/proc/%d/exe" % pause_pid) or \
        os.readlink("/proc/%d/exe" % pause_pid) != "/pause"
    c.assert_nothing_left()


def test_cri_container_exit_code():
    """A container that ends by itself: EXITED with its own exit code."""
    c = Cri()
    pb = api()
    pod, cfg = c.run_pod("coil-exit")
    cid = c.create(pod, cfg, "quitter", ["sh", "-c", "echo bye; exit 3"])
    c.rt.StartContainer(pb.StartContainerRequest(container_id=cid))
    st = c.wait_state(cid, pb.CONTAINER_EXITED)
    assert st.state == pb.CONTAINER_EXITED and st.exit_code == 3, st
    assert st.reason == "Error", st
    c.rt.RemoveContainer(pb.RemoveContainerRequest(container_id=cid))
    c.remove_pod(pod)
    c.assert_nothing_left()


def test_cri_exec_sync():
    """ExecSync (the kubelet's exec probes, kubectl exec without a tty) runs
    `coil exec` through the shim: its output and exit code come back."""
    c = Cri()
    pb = api()
    pod, cfg = c.run_pod("coil-exec")
    cid = c.create(pod, cfg, "target", ["sleep", "1000"])
    c.rt.StartContainer(pb.StartContainerRequest(container_id=cid))
    assert c.wait_state(cid, pb.CONTAINER_RUNNING).state == pb.CONTAINER_RUNNING
    r = c.rt.ExecSync(pb.ExecSyncRequest(
        container_id=cid, timeout=TIMEOUT,
        cmd=["sh", "-c", "echo exec-out; echo exec-err >&2; "
             "cat /proc/1/cmdline; exit 5"]))
    assert r.exit_code == 5, r
    assert r.stdout == b"exec-out\nsleep\x001000\x00", r
    assert r.stderr == b"exec-err\n", r
    r = c.rt.ExecSync(pb.ExecSyncRequest(container_id=cid, timeout=TIMEOUT,
                                         cmd=["true"]))
    assert (r.exit_code, r.stdout, r.stderr) == (0, b"", b""), r
    c.rt.StopContainer(pb.StopContainerRequest(container_id=cid, timeout=1))
    st = c.wait_state(cid, pb.CONTAINER_EXITED)
    # sleep as PID 1 ignores SIGTERM: the stop ends with SIGKILL.
    assert st.state == pb.CONTAINER_EXITED and st.exit_code == 137, st
    c.rt.RemoveContainer(pb.RemoveContainerRequest(container_id=cid))
    c.remove_pod(pod)
    c.assert_nothing_left()
