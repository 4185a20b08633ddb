"""coil's benchmark driver: one fresh execution of a JSON handler, coil py
against bare python3.11 (chroot'ed into the bundle's rootfs), bwrap, crun and
runc running the same interpreter on the same rootfs.

Run by tests/bench/run.sh with /usr/bin/python3 from the repository root.
Environment: BENCH_ROUNDS (timed rounds, default 30), BENCH_WARMUP (default 3),
BENCH_SEED (shuffle seed), BENCH_TIMEOUT (seconds per execution, default 60),
BENCH_RSS_RUNS (untimed runs for the max-RSS line, default 5; 0: skip),
BENCH_SERVE_CALLS (calls per latency line of the warm `coil serve` section,
default 200; 0: skip the section), BENCH_SERVE_SECONDS (per throughput line,
default 3).
Exit status: 0 when every candidate that could start ran correctly (whatever
the numbers say), 1 when something failed to run or gave a wrong answer.
"""

import ctypes
import json
import os
import random
import selectors
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.abspath(os.getcwd())
HERE = os.path.join(REPO, "tests", "bench")
COIL = os.path.join(REPO, "coil")
BUNDLE_ROOTFS = os.path.join(REPO, "bundles", "python", "rootfs")
PYTHON = "/usr/bin/python3.11"
HANDLER = os.path.join(HERE, "handler.py")
REQUEST = os.path.join(HERE, "request.json")
WRAPPER = """import sys, json
sys.path.insert(0, "/bench")
from handler import handle
print(json.dumps(handle(json.loads(sys.stdin.read()))))
"""
# -B: the handler is compiled from source on every run, as coil must (it
# gates and compiles the source each time); the stdlib uses the rootfs' .pyc.
PY_ARGV = [PYTHON, "-I", "-S", "-B", "/bench/wrap.py"]
ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
CLONE_NEWNS = 0x00020000

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "30"))
WARMUP = int(os.environ.get("BENCH_WARMUP", "3"))
RSS_RUNS = int(os.environ.get("BENCH_RSS_RUNS", "5"))
TIMEOUT = float(os.environ.get("BENCH_TIMEOUT", "60"))
SEED = os.environ.get("BENCH_SEED")
SERVE_CALLS = int(os.environ.get("BENCH_SERVE_CALLS", "200"))
TENANT_UID = 390000
SERVE_SECONDS = float(os.environ.get("BENCH_SERVE_SECONDS", "3"))

libc = ctypes.CDLL(None, use_errno=True)


class BenchError(Exception):
    pass


def log(msg):
    print("bench: " + msg, file=sys.stderr, flush=True)


def sh(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=ENV, **kw)


class Execution:
    """One child run: wall time from spawn to reaped, and its output."""

    def __init__(self, argv, stdin_path, preexec):
        self.argv = argv
        stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
        try:
            t0 = time.perf_counter()
            p = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=ENV,
                                 preexec_fn=preexec, start_new_session=True)
            out, err, timed_out = self.drain(p)
            _, status = os.waitpid(p.pid, 0)
            self.seconds = time.perf_counter() - t0
        finally:
            if stdin_path:
                stdin.close()
        p.returncode = os.waitstatus_to_exitcode(status)  # already reaped
        self.rc = p.returncode
        self.stdout = out.decode("utf-8", "replace")
        self.stderr = err.decode("utf-8", "replace")
        self.timed_out = timed_out

    @staticmethod
    def drain(p):
        deadline = time.monotonic() + TIMEOUT
        bufs = {p.stdout: [], p.stderr: []}
        sel = selectors.DefaultSelector()
        for f in bufs:
            sel.register(f, selectors.EVENT_READ)
        timed_out = False
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                break
            for key, _ in sel.select(left):
                chunk = os.read(key.fileobj.fileno(), 65536)
                if chunk:
                    bufs[key.fileobj].append(chunk)
                else:
                    sel.unregister(key.fileobj)
        sel.close()
        p.stdout.close()
        p.stderr.close()
        return b"".join(bufs[p.stdout]), b"".join(bufs[p.stderr]), timed_out

    def describe(self):
        return ("command: %s\nexit status: %s%s\nstdout: %s\nstderr: %s" % (
            " ".join(self.argv), self.rc, " (timed out)" if self.timed_out else "",
            self.stdout.strip()[-2000:] or "(empty)",
            self.stderr.strip()[-2000:] or "(empty)"))


class Candidate:
    name = "?"

    def __init__(self, bench):
        self.bench = bench
        self.times = []
        self.ratios = []
        self.unavailable = None  # reason, when it cannot run on this host
        self.note = None
        self.seq = 0

    def setup(self):
        pass

    def argv(self):
        raise NotImplementedError

    def stdin(self):
        return REQUEST

    def preexec(self):
        pass

    def result_of(self, stdout):
        return json.loads(stdout)

    def plain_argv(self):
        """argv that needs no preexec step."""
        return self.argv()

    def wrap_preexec(self):
        """The preexec step a wrapped run keeps (the wrapper must still be
        reachable after it)."""
        return None

    def run(self, wrap=None):
        """One checked execution; wrap(argv) -> argv runs it under another
        command (e.g. /usr/bin/time) with no preexec step."""
        self.seq += 1
        if wrap:
            ex = Execution(wrap(self.plain_argv()), self.stdin(),
                           self.wrap_preexec())
        else:
            ex = Execution(self.argv(), self.stdin(), self.preexec)
        if ex.rc != 0 or ex.timed_out:
            raise BenchError("%s failed:\n%s" % (self.name, ex.describe()))
        try:
            got = self.result_of(ex.stdout)
        except (ValueError, KeyError, TypeError) as e:
            raise BenchError("%s printed unexpected output (%s):\n%s" % (
                self.name, e, ex.describe()))
        if got != self.bench.expected:
            raise BenchError("%s returned a wrong result:\n  got      %r\n"
                             "  expected %r\n%s" % (self.name, got,
                                                     self.bench.expected,
                                                     ex.describe()))
        return ex

    def cleanup(self):
        pass


class Coil(Candidate):
    name = "coil"

    def setup(self):
        self.state = os.path.join(self.bench.tmp, "coil-state")
        os.mkdir(self.state)

    def argv(self):
        return [COIL, "--root", self.state, "py", "--request", "@" + REQUEST,
                "--entry", "handle", HANDLER]

    def stdin(self):
        return None

    def result_of(self, stdout):
        env = json.loads(stdout)
        if env.get("ok") is not True:
            raise ValueError("envelope is not ok")
        return env["result"]

    def cleanup(self):
        if not hasattr(self, "state"):
            return
        r = sh([COIL, "--root", self.state, "list", "-q"])
        for cid in r.stdout.split() if r.returncode == 0 else []:
            sh([COIL, "--root", self.state, "delete", "--force", cid])


class Bare(Candidate):
    name = "bare python"

    def argv(self):
        return PY_ARGV

    def preexec(self):
        os.chroot(self.bench.rootfs)
        os.chdir("/")

    def plain_argv(self):
        return [shutil.which("chroot", path=ENV["PATH"]), self.bench.rootfs] + PY_ARGV


class Bwrap(Candidate):
    name = "bwrap"

    def setup(self):
        self.bin = shutil.which("bwrap", path=ENV["PATH"])
        if not self.bin:
            self.unavailable = "bwrap not installed (apt package bubblewrap)"

    def argv(self):
        return [self.bin, "--unshare-all", "--die-with-parent",
                "--ro-bind", self.bench.rootfs, "/", "--proc", "/proc",
                "--dev", "/dev", "--chdir", "/"] + PY_ARGV


class Oci(Candidate):
    """crun or runc: `<rt> spec` edited to run the wrapper on the prepared
    rootfs (read-only, no terminal, no rlimits, no resources), `run` with a
    fresh id and a private --root."""
    tool = "?"
    run_flags = []

    def setup(self):
        self.bin = shutil.which(self.tool, path=ENV["PATH"])
        if not self.bin:
            self.unavailable = "%s not installed (apt package %s)" % (self.tool,
                                                                     self.tool)
            return
        self.state = os.path.join(self.bench.tmp, self.tool + "-state")
        self.bundle = os.path.join(self.bench.tmp, self.tool + "-bundle")
        os.mkdir(self.state)
        os.mkdir(self.bundle)
        r = sh([self.bin, "spec"], cwd=self.bundle)
        if r.returncode != 0:
            self.unavailable = "`%s spec` failed: %s" % (self.tool,
                                                        r.stderr.strip())
            return
        path = os.path.join(self.bundle, "config.json")
        with open(path) as f:
            cfg = json.load(f)
        proc = cfg["process"]
        proc["args"] = PY_ARGV
        proc["terminal"] = False
        proc["cwd"] = "/"
        proc.pop("rlimits", None)  # runc: hard NOFILE above the host's limit
        cfg["root"] = {"path": self.bench.rootfs, "readonly": True}
        cfg["linux"].pop("resources", None)
        cfg["linux"].pop("cgroupsPath", None)
        with open(path, "w") as f:
            json.dump(cfg, f, indent=1)
        self.prefix = "bench-%d-%s-" % (os.getpid(), self.tool)

    def wrap_preexec(self):
        return self.preexec

    def argv(self):
        return ([self.bin, "--root", self.state] + self.run_flags +
                ["run", "--bundle", self.bundle, "%s%d" % (self.prefix, self.seq)])

    def cleanup(self):
        if not getattr(self, "bin", None) or not hasattr(self, "state"):
            return
        r = sh([self.bin, "--root", self.state, "list", "-q"],
               preexec_fn=self.preexec)
        for cid in r.stdout.split() if r.returncode == 0 else []:
            sh([self.bin, "--root", self.state, "delete", "-f", cid],
               preexec_fn=self.preexec)


class Crun(Oci):
    name = "crun"
    tool = "crun"
    masked_ns = None

    def preexec(self):
        if self.masked_ns is not None:
            if libc.setns(self.masked_ns, CLONE_NEWNS) != 0:
                os._exit(126)
            os.chdir("/")

    def hide_cgroup2_controllers(self):
        """crun 1.8 refuses any hybrid-cgroup host whose cgroup2 ('unified')
        hierarchy has controllers, whatever the cgroup manager. Give crun a
        private mount namespace (made once, entered with setns(2) in the
        forked child, so it costs one syscall per run) in which that
        hierarchy's cgroup.controllers reads empty: crun then drives the v1
        controllers like runc does."""
        ctl = "/sys/fs/cgroup/unified/cgroup.controllers"
        empty = os.path.join(self.bench.tmp, "empty")
        open(empty, "w").close()
        helper = subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "sh", "-c",
             'mount --bind "$1" "$2" && echo ready && exec sleep 600',
             "sh", empty, ctl], stdout=subprocess.PIPE, env=ENV)
        try:
            if helper.stdout.readline().strip() != b"ready":
                return False
            self.masked_ns = os.open("/proc/%d/ns/mnt" % helper.pid, os.O_RDONLY)
        finally:
            helper.kill()
            helper.wait()
        self.note = ("crun: cgroup2 controllers hidden in a private mount "
                     "namespace (hybrid host; crun 1.8 refuses it otherwise)")
        return True


class Runc(Oci):
    name = "runc"
    tool = "runc"


def quantile(xs, p):
    s = sorted(xs)
    k = (len(s) - 1) * p
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


# neighbour()'s hostile client: one thread per flood, each calling the
# hostile tenant (argv[4]) back to back until SIGTERM; prints the answers'
# kinds.
STORM = """
import json, signal, sys, threading
sys.path.insert(0, sys.argv[1])
import coil_client
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *a: stop.set())
kinds = {}
def storm(code):
    with coil_client.Client(sys.argv[2], tenant=sys.argv[4], timeout=60) as c:
        while not stop.is_set():
            env = c.call(code=code, request="x")
            k = "ok" if env.get("ok") else (env.get("error") or {}).get("type")
            kinds[k] = kinds.get(k, 0) + 1
ts = [threading.Thread(target=storm, args=(c,)) for c in json.loads(sys.argv[3])]
for t in ts:
    t.start()
for t in ts:
    t.join()
print(json.dumps(kinds))
"""


class Serve:
    """The warm path: a `coil serve` with the bench tenant, measured through
    `coil call` (a process per call) and the Python client (one connection),
    then beside a hostile tenant and one never demoted (neighbour()),
    then as throughput with 4 and 8 executions in flight, beside bare
    python3.11 started cold the same number at a time."""

    def __init__(self, bench):
        self.bench = bench
        self.lines = []
        self.proc = None

    def start(self):
        d = os.path.join(self.bench.tmp, "serve")
        os.mkdir(d)
        self.sock = os.path.join(d, "serve.sock")
        cfg = os.path.join(d, "serve.json")
        with open(cfg, "w") as f:
            json.dump({"tenants": [{
                "name": "bench", "uid": TENANT_UID, "gid": TENANT_UID,
                "allow": {"uids": [0]},
                "limits": {"in_flight": 8, "queue": 64},
                "cgroup": {"cpu_millis": 2000, "pids": 256,
                           "memory_mb": 4096}}, {
                # neighbour()'s hostile tenants, idle until then.
                "name": "hostile", "uid": TENANT_UID + 1,
                "gid": TENANT_UID + 1, "allow": {"uids": [0]},
                "limits": {"in_flight": 2, "queue": 2, "memory_mb": 64},
                "cgroup": {"cpu_millis": 500, "pids": 32,
                           "memory_mb": 96}}, {
                # The same, never demoted to the CPU's idle class.
                "name": "hostile-kept", "uid": TENANT_UID + 2,
                "gid": TENANT_UID + 2, "allow": {"uids": [0]},
                "limits": {"in_flight": 2, "queue": 2, "memory_mb": 64},
                "cgroup": {"cpu_millis": 500, "pids": 32,
                           "memory_mb": 96, "demote_seconds": 0}}]}, f)
        self.log = open(os.path.join(d, "serve.log"), "w+")
        self.proc = subprocess.Popen(
            [COIL, "--root", os.path.join(d, "state"), "serve", "--socket",
             self.sock, "--config", cfg], stdin=subprocess.DEVNULL,
            stdout=self.log, stderr=self.log, env=ENV)
        deadline = time.time() + 30
        while not os.path.exists(self.sock):
            if self.proc.poll() is not None or time.time() > deadline:
                self.log.seek(0)
                raise BenchError("coil serve did not start:\n" + self.log.read())
            time.sleep(0.02)
        sys.path.insert(0, os.path.join(REPO, "sandbox"))
        import coil_client
        self.client_mod = coil_client
        with open(HANDLER) as f:
            self.code = f.read()
        with open(REQUEST) as f:
            self.request = json.load(f)
        # Five warm-up calls, apart: the template learns its pages from
        # four children that run alone (docs/serve.md), and keeps one spare
        # until then.
        with self.client() as c:
            for _ in range(5):
                self.check(c.call(code=self.code, request=self.request))
                time.sleep(0.02)

    def client(self):
        return self.client_mod.Client(self.sock, tenant="bench", timeout=60)

    def check(self, env):
        if env.get("ok") is not True or env.get("result") != self.bench.expected:
            raise BenchError("coil serve answered wrongly: %r" % (env,))

    def call_cli(self):
        argv = [COIL, "call", "--socket", self.sock, "--tenant", "bench",
                "--request", "@" + REQUEST, "--entry", "handle", HANDLER]
        ex = Execution(argv, None, None)
        if ex.rc != 0:
            raise BenchError("coil call failed:\n" + ex.describe())
        self.check(json.loads(ex.stdout))
        return ex.seconds

    def latency(self):
        cli = [self.call_cli() * 1000 for _ in range(SERVE_CALLS)]
        # What starting any process through this harness costs: coil call's
        # figure includes it, the Python client's does not.
        floor = [Execution(["/bin/true"], None, None).seconds * 1000
                 for _ in range(SERVE_CALLS)]
        lib = self.client_samples()
        for name, ms in (("coil call", cli), ("python client", lib),
                         ("/bin/true (spawn floor)", floor)):
            self.lines.append("%-24s p50 %7.2f ms   p99 %7.2f ms   (%d calls)"
                              % (name, quantile(ms, 0.5), quantile(ms, 0.99),
                                 len(ms)))

    def client_samples(self):
        """SERVE_CALLS sequential calls' times (ms) over one connection."""
        ms = []
        with self.client() as c:
            for _ in range(SERVE_CALLS):
                t0 = time.perf_counter()
                env = c.call(code=self.code, request=self.request)
                ms.append((time.perf_counter() - t0) * 1000)
                self.check(env)
        return ms

    def neighbour(self):
        """The bench tenant's latency (Python client, sequential calls)
        quiet, then while a second tenant floods the server: CPU, memory
        and output floods, code the gate rejects, and a storm of calls
        over its in-flight cap and queue (answered Busy); then the same
        from a tenant never demoted to the CPU's idle class
        (cgroup.demote_seconds 0)."""
        floods = [
            "def handle(r):\n    while True:\n        pass\n",
            "def handle(r):\n    x = []\n    while True:\n"
            "        x.append('a' * 10**6)\n",
            "def handle(r):\n    while True:\n        print('z' * 65536)\n",
            "import os\ndef handle(r):\n    return os.fork()\n",
            "def handle(r):\n    return r\n",
            "def handle(r):\n    return r\n",
        ]
        quiet = self.client_samples()
        for name, label in (("hostile", "beside a hostile tenant"),
                            ("hostile-kept", "beside one not demoted")):
            self.flooded(floods, quiet, name, label)

    def flooded(self, floods, quiet, name, label):
        """One neighbour() line: the bench tenant's calls while tenant
        `name` runs every flood."""
        # The storm runs in a process of its own, as a hostile client
        # would: in this one it would hold the GIL against the samples.
        storm = subprocess.Popen(
            [sys.executable, "-c", STORM, os.path.join(REPO, "sandbox"),
             self.sock, json.dumps(floods), name],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=ENV)
        try:
            time.sleep(0.5)
            loud = self.client_samples()
        finally:
            storm.send_signal(signal.SIGTERM)
            out, _ = storm.communicate(timeout=120)
        if storm.returncode != 0:
            raise BenchError("%s tenant's storm failed: %r" % (name, out[-500:]))
        kinds = json.loads(out)
        q50, q99 = quantile(quiet, 0.5), quantile(quiet, 0.99)
        l50, l99 = quantile(loud, 0.5), quantile(loud, 0.99)
        self.lines.append(
            "%-24s p50 %7.2f ms   p99 %7.2f ms   (quiet "
            "%.2f and %.2f: p99 %.2fx)" % (label, l50, l99, q50, q99, l99 / q99))
        self.lines.append(
            "  its floods' answers: " + ", ".join(
                "%s %d" % kv for kv in sorted(kinds.items())))

    def rate(self, workers, one):
        """Completed executions per second with `workers` threads running
        `one()` back to back for SERVE_SECONDS."""
        stop = time.perf_counter() + SERVE_SECONDS
        counts = [0] * workers
        errors = []

        def loop(i):
            try:
                state = {}
                while time.perf_counter() < stop:
                    one(state)
                    counts[i] += 1
                if "client" in state:
                    state["client"].close()
            except Exception as e:  # reported after the join
                errors.append(e)

        t0 = time.perf_counter()
        ts = [threading.Thread(target=loop, args=(i,)) for i in range(workers)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        if errors:
            raise BenchError("throughput run failed: %s" % errors[0])
        return sum(counts) / (time.perf_counter() - t0)

    def template_pid(self):
        """The tenant's template: the shallowest process below the server
        running as the tenant's uid (at idle it has no children)."""
        parent, uid = {}, {}
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open("/proc/%s/status" % d) as f:
                    st = dict(l.split(":", 1) for l in f if ":" in l)
            except OSError:
                continue
            parent[int(d)] = int(st["PPid"])
            uid[int(d)] = int(st["Uid"].split()[0])

        def depth(pid):
            n = 0
            while pid in parent and pid != self.proc.pid:
                pid, n = parent[pid], n + 1
            return n if pid == self.proc.pid else None

        found = [(depth(p), p) for p, u in uid.items()
                 if u == TENANT_UID and depth(p) is not None]
        if not found:
            raise BenchError("coil serve: no template process found")
        return min(found)[1]

    def memory_cgroup(self, pid):
        """The template's memory cgroup files: (usage, peak, peak resettable)."""
        with open("/proc/%d/cgroup" % pid) as f:
            lines = [l.rstrip("\n").split(":", 2) for l in f]
        for _, ctrl, path in lines:
            if "memory" in ctrl.split(","):
                d = "/sys/fs/cgroup/memory" + path
                return (d + "/memory.usage_in_bytes",
                        d + "/memory.max_usage_in_bytes", True)
        for _, ctrl, path in lines:
            if ctrl == "":
                for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                    d = root + path
                    if os.path.exists(d + "/memory.peak"):
                        return d + "/memory.current", d + "/memory.peak", False
        return None

    def idle_memory(self):
        """The idle tenant: its template and the two spare children it
        keeps cloned ahead of the next requests (PSS and private memory add
        up; RSS would count their shared pages twice)."""
        pid = self.template_pid()
        # The last execution's child may still be exiting after its answer,
        # and a template left alone fills its pool within 10 ms: wait until
        # the two spares are all there is.
        deadline = time.time() + 5
        time.sleep(0.1)
        while True:
            try:
                with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                    kids = [int(p) for p in f.read().split()]
            except OSError:
                kids = []
            if len(kids) == 2 or time.time() > deadline:
                break
            time.sleep(0.01)
        pids = [pid] + kids
        kb = {"Rss": 0, "Pss": 0, "Private_Dirty": 0}
        counted = 0
        for p in pids:
            try:
                with open("/proc/%d/smaps_rollup" % p) as f:
                    for line in f:
                        k, _, v = line.partition(":")
                        if k in kb:
                            kb[k] += int(v.split()[0])
                counted += 1
            except OSError:
                pass
        self.cg = self.memory_cgroup(pid)
        self.lines.append(
            "idle tenant (template %d + %d spares): PSS %.1f MB, private "
            "dirty %.1f MB (template RSS %.1f MB)" % (
                pid, counted - 1, kb["Pss"] / 1024,
                kb["Private_Dirty"] / 1024, self.template_rss(pid) / 1024))

    @staticmethod
    def template_rss(pid):
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Rss:"):
                    return int(line.split()[1])
        return 0

    def read_bytes(self, path):
        with open(path) as f:
            return int(f.read())

    def throughput(self):
        bare = self.bench.cands[1]

        def serve_one(state):
            if "client" not in state:
                state["client"] = self.client()
            self.check(state["client"].call(code=self.code,
                                            request=self.request))

        def bare_one(state):
            ex = Execution(bare.plain_argv(), bare.stdin(), None)
            if ex.rc != 0 or json.loads(ex.stdout) != self.bench.expected:
                raise BenchError("bare python failed:\n" + ex.describe())

        per_exec = []
        for n in (4, 8):
            if self.cg:
                idle = self.read_bytes(self.cg[0])
                if self.cg[2]:
                    with open(self.cg[1], "w") as f:
                        f.write("0")
            warm = self.rate(n, serve_one)
            if self.cg and (self.cg[2] or n == 4):
                peak = self.read_bytes(self.cg[1])
                per_exec.append("%d in flight %.2f MB" % (
                    n, max(0, peak - idle) / n / (1 << 20)))
            cold = self.rate(n, bare_one)
            self.lines.append(
                "throughput, %d in flight: serve %7.1f/s, bare python cold "
                "%6.1f/s (serve/bare %.1fx)" % (n, warm, cold, warm / cold))
        self.lines.append(
            "memory per execution in flight (template cgroup's peak over "
            "idle / n): " + (", ".join(per_exec) if per_exec else
                             "n/a (no memory cgroup)"))

    def run(self):
        if SERVE_CALLS <= 0:
            return
        self.start()
        self.idle_memory()
        self.latency()
        self.neighbour()
        self.throughput()

    def report(self):
        if not self.lines:
            return
        print()
        print("warm path: coil serve, tests/bench/handler.py")
        for line in self.lines:
            print(line)
        for c in self.bench.cands:
            if c.times:
                print("%-24s p50 %7.2f ms   (cold, from the table above)" % (
                    c.name + " cold", statistics.median(c.times) * 1000))
        if self.bench.rss_kb:
            print("cold max RSS per execution: " + ", ".join(
                "%s %.1f MB" % (n, v / 1024)
                for n, v in self.bench.rss_kb.items()))

    def cleanup(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Bench:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="coil-bench-")
        os.chmod(self.tmp, 0o755)
        self.rootfs = os.path.join(self.tmp, "rootfs")
        ns = {}
        exec(compile(open(HANDLER).read(), HANDLER, "exec"), ns)
        with open(REQUEST) as f:
            self.expected = json.loads(json.dumps(ns["handle"](json.load(f))))
        self.cands = [Coil(self), Bare(self), Bwrap(self), Crun(self), Runc(self)]

    def prepare_rootfs(self):
        """A scratch copy of the bundle's rootfs plus the python3.11 binary,
        its shared libraries, the handler and the wrapper. Built once."""
        r = self.rootfs
        shutil.copytree(BUNDLE_ROOTFS, r, symlinks=True)
        for d in ("usr/bin", "proc", "sys", "dev", "tmp", "bench"):
            os.makedirs(os.path.join(r, d), exist_ok=True)
        shutil.copy2(PYTHON, os.path.join(r, PYTHON.lstrip("/")))
        libs = set()
        for obj in [PYTHON] + [os.path.join(dp, f) for dp, _, fs in
                               os.walk(os.path.join(r, "usr/lib/python3.11/lib-dynload"))
                               for f in fs if f.endswith(".so")]:
            out = sh(["ldd", obj]).stdout
            for line in out.splitlines():
                for tok in line.split():
                    if tok.startswith("/") and os.path.exists(tok):
                        libs.add(tok)
        for lib in sorted(libs):
            if lib.startswith(self.tmp):
                continue
            dst = os.path.join(r, lib.lstrip("/"))
            if not os.path.exists(dst):
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy2(lib, dst, follow_symlinks=True)
        # getpath's landmark: without it python3.11 warns "Could not find
        # platform independent libraries" (os itself is a frozen module).
        lm = os.path.join(r, "usr/lib/python3.11/os.py")
        if not os.path.exists(lm):
            with open(lm, "w") as f:
                f.write("# landmark for getpath; os is frozen\n")
        shutil.copy2(HANDLER, os.path.join(r, "bench", "handler.py"))
        with open(os.path.join(r, "bench", "wrap.py"), "w") as f:
            f.write(WRAPPER)

    def setup(self):
        self.prepare_rootfs()
        for c in self.cands:
            c.setup()
        # One probe run each: a candidate that cannot start on this host is
        # reported n/a; coil and bare python must work.
        for c in self.cands:
            if c.unavailable:
                continue
            try:
                c.run()
            except BenchError as e:
                if isinstance(c, Crun) and "hybrid mode not supported" in str(e) \
                        and c.hide_cgroup2_controllers():
                    try:
                        c.run()
                        continue
                    except BenchError as e2:
                        e = e2
                if isinstance(c, (Coil, Bare)):
                    raise
                last = [l for l in str(e).splitlines() if l.strip()]
                c.unavailable = "cannot run here: " + (
                    last[-1][:160] if last else "failed")
                log("%s is n/a:\n%s" % (c.name, e))

    def rounds(self):
        rng = random.Random(SEED)
        live = [c for c in self.cands if not c.unavailable]
        total = WARMUP + ROUNDS
        for i in range(total):
            order = live[:]
            rng.shuffle(order)
            got = {}
            for c in order:
                got[c] = c.run()
            if i < WARMUP:
                continue
            bare = got[self.cands[1]].seconds
            for c in live:
                c.times.append(got[c].seconds)
                c.ratios.append(got[c].seconds / bare)
            if (i - WARMUP + 1) % 10 == 0:
                log("round %d/%d" % (i - WARMUP + 1, ROUNDS))

    def memory(self):
        """Max RSS (KB, /usr/bin/time -f %M: the largest process of the run's
        tree whose usage reached time's child) for coil and bare python, median
        of BENCH_RSS_RUNS untimed runs. Not for bwrap: there the interpreter's
        usage does not reach time (it reports bwrap's own ~2 MB)."""
        self.rss_lines = []
        self.rss_kb = {}
        tool = "/usr/bin/time"
        if RSS_RUNS <= 0:
            return
        if not os.access(tool, os.X_OK):
            self.rss_lines.append("max RSS: n/a (/usr/bin/time missing: "
                                  "apt package time)")
            return
        out = os.path.join(self.tmp, "rss")
        kb = {}
        for c in [self.cands[0], self.cands[1]] + self.cands[3:]:
            if c.unavailable:
                continue
            vals = []
            for _ in range(RSS_RUNS):
                c.run(wrap=lambda argv: [tool, "-f", "%M", "-o", out] + argv)
                with open(out) as f:
                    vals.append(int(f.read().split()[-1]))
            kb[c.name] = statistics.median(vals)
        self.rss_kb = kb
        self.rss_lines.append(
            "max RSS (median of %d runs, /usr/bin/time %%M): " % RSS_RUNS +
            ", ".join("%s %.1f MB" % (n, v / 1024) for n, v in kb.items()) +
            " (coil/bare %.2f)" % (kb["coil"] / kb["bare python"]))

    def report(self):
        def q(xs, p):
            s = sorted(xs)
            k = (len(s) - 1) * p
            lo = int(k)
            hi = min(lo + 1, len(s) - 1)
            return s[lo] + (s[hi] - s[lo]) * (k - lo)

        print()
        print("one fresh execution of tests/bench/handler.py, %d rounds "
              "(+%d warm-up), candidates shuffled per round" % (ROUNDS, WARMUP))
        hdr = "%-12s %9s %8s %8s %10s %16s" % (
            "candidate", "median ms", "p10", "p90", "vs bare", "(ratio p10-p90)")
        print(hdr)
        print("-" * len(hdr))
        for c in self.cands:
            if c.unavailable:
                print("%-12s n/a (%s)" % (c.name, c.unavailable))
                continue
            ms = [t * 1000 for t in c.times]
            print("%-12s %9.2f %8.2f %8.2f %9.2fx %8.2f-%-7.2f" % (
                c.name, statistics.median(ms), q(ms, 0.10), q(ms, 0.90),
                statistics.median(c.ratios), q(c.ratios, 0.10),
                q(c.ratios, 0.90)))
        for c in self.cands:
            if c.note:
                print("note: " + c.note)
        print("'vs bare': median over rounds of candidate/bare time in the "
              "same round")
        for line in self.rss_lines:
            print(line)
        coil = self.cands[0]
        print("coil/bare median ratio: %.2f" % statistics.median(coil.ratios))

    def cleanup(self):
        for c in self.cands:
            try:
                c.cleanup()
            except Exception as e:  # keep cleaning the rest
                log("cleanup of %s: %s" % (c.name, e))
        ms = self.cands[3].masked_ns
        if ms is not None:
            os.close(ms)
        shutil.rmtree(self.tmp, ignore_errors=True)


def main():
    if ROUNDS < 1 or WARMUP < 0:
        log("BENCH_ROUNDS must be >= 1 and BENCH_WARMUP >= 0")
        return 2
    for path in (COIL, PYTHON, os.path.join(BUNDLE_ROOTFS, "usr/lib/python3.11")):
        if not os.path.exists(path):
            log("missing %s" % path)
            return 1
    bench = Bench()
    serve = Serve(bench)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
    try:
        bench.setup()
        bench.rounds()
        bench.memory()
        serve.run()
        bench.report()
        serve.report()
        return 0
    except BenchError as e:
        log("FAILED: %s" % e)
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    finally:
        serve.cleanup()
        bench.cleanup()


if __name__ == "__main__":
    sys.exit(main())
