"""Python sandbox mode against the attack corpus (docs/gate.md, Attack
corpus).

Every attack in python/attacks/ (A01-A23 and the four resource attacks
X1-X4) defines handle(request) and tries to reach three secrets set up per
test and removed after it:

  * a file outside the rootfs (/tmp/coil-secret-*/secret.txt, mode 0644),
  * an environment variable of coil's caller (COIL_SECRET),
  * a process outside the sandbox (`sleep 1000 TOKEN`, TOKEN also in its
    environment),

and to change the host (create a marker file in /tmp, kill the process).
The placeholders SECRET_PATH, SECRET_PID and MARKER_PATH in the attack
source are filled in at test time; python/attacks/loot.inc (the common
"what to do with posix once you have it" code) is appended after handle,
so the line of the gate's first violation stays the one marked `# GATE`.

Each attack runs once with the full stack (the gate must reject it at the
`# GATE` line, exit 126; X1/X2/X4 pass the gate and must end with their own
limit) and then once with every single layer switched off in turn, where any
outcome that leaks nothing and changes nothing on the host is accepted and
recorded. The containment matrix is printed as `# ` lines (and written as
JSON to $COIL_MATRIX_OUT when that is set).

Also here: benign handlers using every helper under the full stack, and an
strace of the sandbox after its lockdown point.
"""

import concurrent.futures
import glob
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

import harness
from harness import describe

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.join(HERE, "python")
ATTACK_DIR = os.path.join(PYDIR, "attacks")
LOOT = os.path.join(ATTACK_DIR, "loot.inc")
BENIGN_DIR = os.path.join(PYDIR, "benign")
DEFAULT_BUNDLE = os.path.join(harness.REPO, "bundles", "python")
ROOTFS = os.path.join(DEFAULT_BUNDLE, "rootfs")
HOST_PYTHON = "/usr/bin/python3"

LAYERS = ["userns", "pidns", "netns", "mountns", "cgroup", "rlimits",
          "rlimit-memory", "caps", "landlock", "seccomp", "audit", "builtins",
          "ast"]
# COIL_ATTACK_LAYERS=a,b keeps only those layers in the switched-off runs:
# the VM on a pure cgroup v2 host (tests/vm) runs those whose mechanism
# differs there; the host's run covers every layer.
if os.environ.get("COIL_ATTACK_LAYERS"):
    _only = os.environ["COIL_ATTACK_LAYERS"].split(",")
    assert set(_only) <= set(LAYERS), "COIL_ATTACK_LAYERS: unknown %s" % (
        sorted(set(_only) - set(LAYERS)))
    LAYERS = [x for x in LAYERS if x in _only]

# The resource attacks pass the gate; with the full stack each must end
# with its own limit: (envelope error type, exit status).
RESOURCE = {"X1": ("CpuLimit", 137), "X2": ("MemoryLimit", 137),
            "X4": ("CpuLimit", 137)}

WORKERS = 3          # parallel coil runs inside one attack's test
RUN_TIMEOUT = 30     # harness kill (coil's own wall clock is 5 s)

MATRIX = {}          # attack -> {"full": outcome, layer: outcome}


def note(text):
    for line in str(text).splitlines():
        print("# " + line)
    sys.stdout.flush()


# ---------------------------------------------------------------- secrets

class Secrets:
    """The three secrets, a marker path, and host-state checks."""

    def __init__(self):
        self.file_token = "FILETOKEN" + secrets.token_hex(16)
        self.env_token = "ENVTOKEN" + secrets.token_hex(16)
        self.proc_token = "PROCTOKEN" + secrets.token_hex(16)
        self.dir = tempfile.mkdtemp(prefix="coil-secret-", dir="/tmp")
        os.chmod(self.dir, 0o755)
        self.path = os.path.join(self.dir, "secret.txt")
        with open(self.path, "w") as f:
            f.write(self.file_token + "\n")
        # Readable by anyone: only the sandbox may keep the guest out.
        os.chmod(self.path, 0o644)
        self.marker = "/tmp/coil-marker-" + secrets.token_hex(8)
        # The token is the process's argv[0] (sleep ignores it) and in its
        # environment.
        self.proc = subprocess.Popen(
            ["sleep-" + self.proc_token, "1000"], executable="/bin/sleep",
            env={"PATH": "/usr/bin:/bin", "COIL_PROC_SECRET": self.proc_token},
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)
        self.pid = self.proc.pid
        harness.on_cleanup(self.close)
        self._dir_listing = sorted(os.listdir(self.dir))

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)
        if os.path.lexists(self.marker):
            os.unlink(self.marker)

    def tokens(self):
        return {"file": self.file_token, "env": self.env_token,
                "process": self.proc_token}

    def env(self):
        return {"COIL_SECRET": self.env_token}

    def substitute(self, src):
        return (src.replace("SECRET_PATH", self.path)
                .replace("SECRET_PID", str(self.pid))
                .replace("MARKER_PATH", self.marker))

    def leaked(self, *texts):
        """Names of the tokens found in any of texts."""
        return sorted(k for k, t in self.tokens().items()
                      if any(t in (x or "") for x in texts))

    def host_changes(self):
        """What changed on the host, as a list of strings (empty: nothing)."""
        out = []
        if os.path.lexists(self.marker):
            out.append("marker file %s exists" % self.marker)
        if os.path.lexists(self.marker + ".d"):
            out.append("marker dir exists")
        try:
            with open(self.path) as f:
                if f.read() != self.file_token + "\n":
                    out.append("secret file content changed")
            if sorted(os.listdir(self.dir)) != self._dir_listing:
                out.append("secret dir changed: %r" % os.listdir(self.dir))
        except OSError as e:
            out.append("secret file: %s" % e)
        if self.proc.poll() is not None:
            out.append("secret process %d died (status %s)"
                       % (self.pid, self.proc.returncode))
        else:
            try:
                with open("/proc/%d/cmdline" % self.pid, "rb") as f:
                    if self.proc_token.encode() not in f.read():
                        out.append("secret process argv changed")
            except OSError as e:
                out.append("secret process: %s" % e)
        out += self.foreign_processes()
        return out

    def foreign_processes(self):
        """Live processes (other than the secret holder) whose argv names the
        marker or the secret paths: what an escaped `system()` would run."""
        out = []
        needles = [self.marker.encode(), self.path.encode()]
        for ent in os.listdir("/proc"):
            if not ent.isdigit() or int(ent) in (self.pid, os.getpid()):
                continue
            try:
                with open("/proc/%s/cmdline" % ent, "rb") as f:
                    cmd = f.read()
            except OSError:
                continue
            if any(n in cmd for n in needles):
                out.append("process %s: %r" % (ent, cmd[:200]))
        return out


# ---------------------------------------------------------------- running

def attack_paths():
    return sorted(p for p in glob.glob(os.path.join(ATTACK_DIR, "*.py")))


def attack_id(path):
    return os.path.basename(path).split("_", 1)[0]


def marked_line(src, mark):
    for i, line in enumerate(src.splitlines(), 1):
        if line.rstrip().endswith(mark):
            return i
    return None


def prepare(path, sec):
    """The attack's source with placeholders filled in and loot appended,
    written to a temp file; returns (file, source)."""
    with open(path, encoding="utf-8") as f:
        src = f.read()
    with open(LOOT, encoding="utf-8") as f:
        loot = f.read()
    text = sec.substitute(src + loot)
    out = os.path.join(harness.tmpdir(), os.path.basename(path))
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    return out, text


def layer_bundle(layer, tweak=None):
    """A temp bundle: bundles/python/config.json on the real rootfs, with
    sandbox.disable = [layer] (or none)."""
    cfg = harness.read_config(DEFAULT_BUNDLE)
    cfg["root"]["path"] = ROOTFS
    if layer:
        cfg.setdefault("sandbox", {})["disable"] = [layer]
    if tweak:
        tweak(cfg)
    d = harness.tmpdir()
    harness.write_config(d, cfg)
    return d


def envelope(stdout):
    """The last JSON object line of stdout with an "ok" key, else None."""
    for line in reversed((stdout or "").splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if isinstance(v, dict) and "ok" in v:
            return v
    return None


def run_py(code_file, bundle=None, request="{}", env=None, root=None,
           extra=(), timeout=RUN_TIMEOUT):
    args = ["py"]
    if bundle:
        args += ["--bundle", bundle]
    args += list(extra) + ["--request", request, "--entry", "handle",
                           code_file]
    r = harness.coil(*args, root=root or harness.new_root(), env=env,
                     timeout=timeout)
    return r


def classify(r):
    """A short name for how a run ended."""
    env = envelope(r.stdout)
    err = (env or {}).get("error") or {}
    rc = r.returncode
    if rc is None:
        return "harness-timeout"
    if rc == 126 and err.get("type") == "GateViolation":
        if "audit event" in str(err.get("message")):
            m = re.search(r"audit event '([^']*)'", err["message"])
            return "audit-kill(%s)" % (m.group(1) if m else "?")
        return "gate(line %s)" % err.get("line")
    if rc == 159:
        return "seccomp-kill(SIGSYS)"
    if rc > 128 and rc != 137:
        return "signal %d" % (rc - 128)
    if rc == 137:
        return "%s(137)" % (err.get("type") or "SIGKILL")
    if rc == 124:
        return "Timeout(124)"
    if rc == 1 and err:
        exc = err.get("exception") or err.get("type")
        msg = str(err.get("message", ""))
        return "exception %s: %s" % (exc, msg[:90])
    if rc == 0 and env and env.get("ok"):
        return "completed: %s" % json.dumps(env.get("result"))[:120]
    return "exit %s (%s)" % (rc, (err.get("type") or "no envelope"))


def run_case(path, sec, layer, bundle, root):
    code_file, text = prepare(path, sec)
    # The full stack must end a resource attack by its own limit: a longer
    # wall clock keeps a loaded machine (the run shares 2 CPUs with the
    # other layers' runs) from ending a CPU attack as Timeout before it had
    # its second of CPU. A 32 MiB memory limit lets a memory attack that
    # fills pages one by one (where no RLIMIT_DATA refuses it at once, as in
    # the ASan build) meet that limit within its CPU second even where page
    # faults are slow (a nested VM's).
    extra = ("--timeout", "20", "--memory", "32m") if layer is None and \
        attack_id(path) in RESOURCE else ()
    t0 = time.time()
    r = run_py(code_file, bundle=bundle, env=sec.env(), root=root,
               extra=extra)
    return r, text, time.time() - t0


def check_full_stack(aid, r, text, problems):
    """The full-stack expectation for one attack."""
    env = envelope(r.stdout)
    err = (env or {}).get("error") or {}
    if aid in RESOURCE:
        want_type, want_rc = RESOURCE[aid]
        if r.returncode != want_rc or err.get("type") != want_type:
            problems.append("full stack: expected %s / exit %d\n%s"
                            % (want_type, want_rc, describe(r)))
        return
    want_line = marked_line(text, "# GATE")
    if (r.returncode != 126 or err.get("type") != "GateViolation" or
            err.get("line") != want_line):
        problems.append("full stack: expected GateViolation at line %s, "
                        "exit 126\n%s" % (want_line, describe(r)))


def attack_test(path):
    aid = attack_id(path)

    def test():
        sec = Secrets()
        problems = []
        outcomes = {}
        root = harness.new_root()
        bundles = {None: None}
        for layer in LAYERS:
            bundles[layer] = layer_bundle(layer)
        cases = [None] + LAYERS
        with concurrent.futures.ThreadPoolExecutor(WORKERS) as ex:
            futs = {layer: ex.submit(run_case, path, sec, layer,
                                     bundles[layer], root)
                    for layer in cases}
            results = {layer: f.result() for layer, f in futs.items()}
        for layer in cases:
            r, text, dt = results[layer]
            name = layer or "full"
            outcome = classify(r)
            outcomes[name] = outcome
            if os.environ.get("COIL_ATTACK_VERBOSE"):
                note("--- %s, %s off (%.2fs)\n%s" % (aid, name, dt,
                                                     describe(r)))
            leaks = sec.leaked(r.stdout, r.stderr)
            if leaks:
                problems.append("LEAK of %s secret(s) with %s off\n%s"
                                % (", ".join(leaks), name, describe(r)))
            if layer is None:
                check_full_stack(aid, r, text, problems)
            elif r.returncode in (None, 125):
                problems.append("%s off: coil did not run the attack "
                                "(%s)\n%s" % (name, outcome, describe(r)))
            elif r.returncode == 126 and outcome.startswith("gate") and \
                    layer != "ast":
                want = marked_line(text, "# GATE")
                if outcome != "gate(line %s)" % want:
                    problems.append("%s off: gate line %s, expected %s\n%s"
                                    % (name, outcome, want, describe(r)))
        changes = sec.host_changes()
        if changes:
            problems.append("host changed: " + "; ".join(changes))
        MATRIX[aid] = outcomes
        note("%s: %s" % (aid, "; ".join(
            "%s=%s" % (k, v) for k, v in outcomes.items())))
        assert not problems, "\n\n".join(problems)

    test.__name__ = "test_python_attack_" + os.path.basename(path)[:-3]
    return test


for _p in attack_paths():
    _t = attack_test(_p)
    globals()[_t.__name__] = _t
del _p, _t


def test_python_attack_pairs_with_ast_off():
    """Beyond the single-layer runs: the AST layer stops every attack first,
    so with one other layer off nothing behind it is exercised. Here the AST
    layer is off together with each other layer, to show which layer stops
    the effect next. Same containment rule: no token in any output, nothing
    changed on the host."""
    sec = Secrets()
    root = harness.new_root()
    others = [x for x in LAYERS if x != "ast"]
    bundles = {}
    for layer in others:
        b = layer_bundle(layer)
        cfg = harness.read_config(b)
        cfg["sandbox"]["disable"] = ["ast", layer]
        harness.write_config(b, cfg)
        bundles[layer] = b
    paths = [p for p in attack_paths() if attack_id(p) not in RESOURCE]
    with concurrent.futures.ThreadPoolExecutor(WORKERS) as ex:
        futs = {(attack_id(p), layer): ex.submit(run_case, p, sec, layer,
                                                  bundles[layer], root)
                for p in paths for layer in others}
        results = {k: f.result() for k, f in futs.items()}
    problems = []
    rows = {}
    for (aid, layer), (r, _, _) in sorted(results.items()):
        outcome = classify(r)
        rows.setdefault(layer, {}).setdefault(
            re.sub(r"[:(].*", "", outcome).strip(), []).append(aid)
        leaks = sec.leaked(r.stdout, r.stderr)
        if leaks:
            problems.append("LEAK of %s with ast+%s off\n%s"
                            % (", ".join(leaks), layer, describe(r)))
        if r.returncode in (None, 125):
            problems.append("ast+%s off: coil did not run %s\n%s"
                            % (layer, aid, describe(r)))
    note("ast + one more layer off -> outcome per attack:")
    for layer in others:
        note("  ast+%-8s %s" % (layer, "; ".join(
            "%s: %s" % (k, ",".join(v))
            for k, v in sorted(rows.get(layer, {}).items()))))
    changes = sec.host_changes()
    if changes:
        problems.append("host changed: " + "; ".join(changes))
    print_attack_matrix()
    assert not problems, "\n\n".join(problems)


def print_attack_matrix():
    """Prints the containment matrix of the attack tests run before: for
    each layer off, what stopped each attack (nothing when none ran)."""
    note("containment matrix (layer off -> outcome per attack):")
    for name in ["full"] + LAYERS:
        counts = {}
        for aid, outcomes in sorted(MATRIX.items()):
            o = outcomes.get(name, "-")
            kind = re.sub(r"[:(].*", "", o).strip()
            counts.setdefault(kind, []).append(aid)
        note("  %-8s %s" % (name, "; ".join(
            "%s: %s" % (k, ",".join(v)) for k, v in sorted(counts.items()))))
    out = os.environ.get("COIL_MATRIX_OUT")
    if out:
        with open(out, "w") as f:
            json.dump(MATRIX, f, indent=1, sort_keys=True)


# ---------------------------------------------------------------- benign

def host_result(path, request):
    """handle(request) run by the host interpreter, through JSON."""
    code = ("import json,sys,importlib.util,ipaddress as I\n"
            # The guest API's additions to ipaddress (docs/python.md).
            "I.in_network=lambda a,n:(lambda A,N:A.version==N.version and "
            "A in N)(I.ip_address(a),I.ip_network(n,strict=False))\n"
            "I.hosts=lambda n,limit=256:[str(h) for h in list(I.ip_network("
            "n,strict=False).hosts())[:limit]]\n"
            "s=importlib.util.spec_from_file_location('h',sys.argv[1])\n"
            "m=importlib.util.module_from_spec(s);s.loader.exec_module(m)\n"
            "sys.stdout=sys.stderr\n"
            "r=m.handle(json.loads(sys.argv[2]))\n"
            "sys.__stdout__.write(json.dumps(r))\n")
    p = subprocess.run([HOST_PYTHON, "-I", "-B", "-c", code, path,
                        json.dumps(request)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_python_benign_all_helpers():
    path = os.path.join(BENIGN_DIR, "all_helpers.py")
    request = {"qname": "ab-1.oast.example", "qtype": "A"}
    r = run_py(path, request=json.dumps(request))
    env = envelope(r.stdout)
    assert r.returncode == 0 and env and env.get("ok"), describe(r)
    assert env.get("stdout") == "benign handler ran for ab-1.oast.example\n", \
        describe(r)
    want = host_result(path, request)
    got = env["result"]
    bad = ["%s: coil %s, python3 %s" % (k, json.dumps(got.get(k)),
                                        json.dumps(want[k]))
           for k in want if got.get(k) != want[k]]
    assert not bad, "results differ from python3.11:\n" + "\n".join(bad)


IN_NETWORK_ADDRS = [
    "10.1.2.3", "10.255.255.255", "11.0.0.0", "0.0.0.0", "255.255.255.255",
    "127.0.0.1", "01.2.3.4", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1.2.3.4 ",
    " 1.2.3.4", "1.2.3.4\x00x", "::1", "::", "::ffff:10.1.2.3",
    "fe80::1%eth0", "2001:db8::1", "2001:DB8::1", "2001:db8:0:0:0:0:0:1",
    "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:8::", "::1.2.3.4",
    "::01.2.3.4", "00001::", "g::1", "", "\u0661.2.3.4", "1.2.3.4/8", 167838211]
IN_NETWORK_NETS = [
    "10.0.0.0/8", "10.1.2.3/8", "10.0.0.0/08", "10.0.0.0/008",
    "10.0.0.0/0008", "10.0.0.0/33", "10.0.0.0/32", "10.1.2.3", "10.0.0.0/",
    "10.0.0.0/+8", "10.0.0.0/\u0668", "10.0.0.0/255.0.0.0", "0.0.0.0/0",
    "10.1.2.0/23", "10.1.2.0/25", "::/0", "::1/128", "::1/129",
    "2001:db8::/32", "2001:db8::/3", "fe80::%eth0/64", "::ffff:0:0/96",
    "1.2.3.4\x00/8", "x", "2001:db8::/3a"]


def test_python_ipaddress_in_network_agrees_with_python():
    """ipaddress.in_network answers plain address strings in C: on every
    pair of a corpus of edge cases (leading zeros, scopes, prefixes out of
    range or not decimal, NUL bytes, mixed versions, non-strings) it says
    what python3.11's ipaddress says, True, False or an error."""
    path = os.path.join(harness.tmpdir(), "in_network.py")
    with open(path, "w") as f:
        f.write("import ipaddress\n"
                "def handle(request):\n"
                "    out = []\n"
                "    for a in request['addrs']:\n"
                "        for n in request['nets']:\n"
                "            try:\n"
                "                out.append(ipaddress.in_network(a, n))\n"
                "            except ValueError:\n"
                "                out.append('ValueError')\n"
                "            except TypeError:\n"
                "                out.append('TypeError')\n"
                "    return {'r': out}\n")
    request = {"addrs": IN_NETWORK_ADDRS, "nets": IN_NETWORK_NETS}
    r = run_py(path, request=json.dumps(request))
    env = envelope(r.stdout)
    assert r.returncode == 0 and env and env.get("ok"), describe(r)
    got = env["result"]["r"]
    want = host_result(path, request)["r"]
    pairs = [(a, n) for a in IN_NETWORK_ADDRS for n in IN_NETWORK_NETS]
    assert len(got) == len(want) == len(pairs)
    bad = ["in_network(%r, %r): coil %r, python3 %r" % (a, n, g, w)
           for (a, n), g, w in zip(pairs, got, want) if g != w]
    assert not bad, "\n".join(bad[:20])
    assert got.count(True) > 20 and got.count(False) > 20, got


def test_python_benign_script_mode():
    code = ("import json\nimport hashlib\n"
            "rows = sorted([3, 1, 2], key=lambda x: -x)\n"
            "print(json.dumps({'rows': rows, 'h': hashlib.sha256(b'x')"
            ".hexdigest()[:8]}, sort_keys=True))\n"
            "print(f'{len(rows)} rows')\n")
    r = harness.coil("py", "-c", code, root=harness.new_root())
    assert r.returncode == 0, describe(r)
    assert r.stdout == '{"h": "2d711642", "rows": [3, 2, 1]}\n3 rows\n', \
        describe(r)


def test_python_benign_each_layer_off():
    """The benign handler works with every single layer off (so a failing
    attack run above is about the attack, not a broken config)."""
    path = os.path.join(BENIGN_DIR, "all_helpers.py")
    request = json.dumps({"qname": "ab-1.oast.example"})
    root = harness.new_root()
    bundles = {layer: layer_bundle(layer) for layer in LAYERS}
    with concurrent.futures.ThreadPoolExecutor(WORKERS) as ex:
        futs = {layer: ex.submit(run_py, path, bundles[layer], request,
                                 None, root) for layer in LAYERS}
        results = {layer: f.result() for layer, f in futs.items()}
    bad = []
    for layer in LAYERS:
        r = results[layer]
        env = envelope(r.stdout)
        if r.returncode != 0 or not env or not env.get("ok"):
            bad.append("%s off:\n%s" % (layer, describe(r)))
        elif "the %s layer is OFF" % layer not in r.stderr:
            bad.append("%s off: no warning on stderr\n%s" % (layer,
                                                             describe(r)))
    assert not bad, "\n\n".join(bad)


# ---------------------------------------------------------------- strace

ALLOWED_AFTER_LOCKDOWN = {
    "read", "write", "close", "lseek", "fstat", "newfstatat", "mmap",
    "munmap", "mremap", "brk", "madvise", "futex", "getrandom",
    "clock_gettime", "rt_sigprocmask", "rt_sigreturn", "exit", "exit_group",
    "getpid", "gettid",
    # only the ASan build's exit path (sandbox/lockdown.c allows it)
    "sigaltstack"}

SYSCALL_LINE = re.compile(r"^(\d+)\s+(?:<\.\.\. (\w+) resumed>|(\w+)\()")


def parse_strace(text):
    """[(pid, syscall, line)] in order; resumed halves are skipped."""
    out = []
    for line in text.splitlines():
        m = SYSCALL_LINE.match(line)
        if not m or m.group(2):
            continue
        out.append((int(m.group(1)), m.group(3), line))
    return out


def is_lockdown(name, line):
    """A filter that was loaded (libseccomp probes with failing calls)."""
    if not re.search(r"\)\s+= 0$", line):
        return False
    return name == "seccomp" and "SECCOMP_SET_MODE_FILTER" in line or \
        name == "prctl" and "PR_SET_SECCOMP" in line


def test_python_strace_after_lockdown():
    assert shutil.which("strace"), "strace is required (.ci/install-deps.sh)"
    path = os.path.join(BENIGN_DIR, "all_helpers.py")
    trace = os.path.join(harness.tmpdir(), "trace")
    root = harness.new_root()
    argv = ["strace", "-f", "-qq", "-o", trace, harness.COIL, "--root", root,
            "py", "--request", json.dumps({"qname": "ab-1.oast.example"}),
            "--entry", "handle", path]
    # LeakSanitizer cannot run under ptrace: the ASan build's exit would fail.
    penv = dict(os.environ)
    penv["ASAN_OPTIONS"] = penv.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                       env=penv)
    env = envelope(p.stdout)
    assert p.returncode == 0 and env and env.get("ok"), \
        "exit %s\nstdout %r\nstderr %r" % (p.returncode, p.stdout[-2000:],
                                          p.stderr[-2000:])
    with open(trace) as f:
        calls = parse_strace(f.read())
    lock = {}
    for i, (pid, name, line) in enumerate(calls):
        if is_lockdown(name, line):
            lock[pid] = i
    assert lock, "no seccomp filter was loaded in the trace"
    # The sandbox process: the last to load a filter.
    pid = max(lock, key=lambda k: lock[k])
    after = [(n, line) for i, (p_, n, line) in enumerate(calls)
             if p_ == pid and i > lock[pid]]
    assert after, "no syscalls after the lockdown point"
    bad = []
    for name, line in after:
        if name == "openat":
            if "EACCES" not in line:
                bad.append(line)
        elif name not in ALLOWED_AFTER_LOCKDOWN:
            bad.append(line)
    seen = sorted({n for n, _ in after})
    note("syscalls after lockdown (pid %d): %s" % (pid, " ".join(seen)))
    assert not bad, "unexpected syscalls after the lockdown point:\n" + \
        "\n".join(bad[:40])
    assert "write" in seen and after[-1][0] in ("exit_group", "exit"), after[-5:]


# ---------------------------------------------------------------- examples

EXAMPLES = os.path.join(harness.REPO, "bundles", "examples")


def subset_diff(want, got, where="$"):
    """Differences where got does not contain want (dict keys of want only;
    other values compared exactly, int vs float by value)."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return ["%s: expected an object, got %s" % (where,
                                                         json.dumps(got))]
        out = []
        for k, v in want.items():
            if k not in got:
                out.append("%s.%s: missing" % (where, k))
            else:
                out += subset_diff(v, got[k], "%s.%s" % (where, k))
        return out
    if want != got or isinstance(want, bool) != isinstance(got, bool) or \
            isinstance(want, str) != isinstance(got, str):
        return ["%s: expected %s, got %s" % (where, json.dumps(want),
                                               json.dumps(got))]
    return []


def example_test(d):
    name = os.path.basename(d)

    def test():
        handler = os.path.join(d, "handler.py")
        reqs = sorted(glob.glob(os.path.join(d, "request*.json")))
        assert reqs, "no request*.json in %s" % d
        root = harness.new_root()
        bad = []
        for req in reqs:
            exp = os.path.join(d, os.path.basename(req).replace(
                "request", "expected", 1))
            with open(exp) as f:
                want = json.load(f)
            r = harness.coil("py", "--request", "@" + req, "--entry",
                             "handle", handler, root=root)
            got = envelope(r.stdout)
            if got is None:
                bad.append("%s: no envelope\n%s" % (os.path.basename(req),
                                                    describe(r)))
                continue
            diff = subset_diff(want, got)
            want_rc = 0 if want.get("ok") else 1
            if r.returncode != want_rc:
                diff.append("exit %s, expected %s" % (r.returncode, want_rc))
            if diff:
                bad.append("%s (coil py --request @%s --entry handle %s):\n"
                           "  %s\n  stdout: %s" % (
                               os.path.basename(req), os.path.relpath(
                                   req, harness.REPO),
                               os.path.relpath(handler, harness.REPO),
                               "\n  ".join(diff), r.stdout.strip()[:1500]))
        assert not bad, "\n".join(bad)

    test.__name__ = "test_python_example_" + name
    return test


for _d in sorted(glob.glob(os.path.join(EXAMPLES, "*", "handler.py"))):
    _t = example_test(os.path.dirname(_d))
    globals()[_t.__name__] = _t
