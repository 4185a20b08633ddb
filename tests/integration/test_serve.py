"""coil serve and coil call (docs/serve.md): the wire protocol, tenants,
warm templates forking one fresh sandbox per request, and that a request
is contained exactly as under coil py."""

import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

import harness
from harness import describe

sys.path.insert(0, os.path.join(harness.REPO, "sandbox"))
import coil_client  # noqa: E402

DEFAULT_BUNDLE = os.path.join(harness.REPO, "bundles", "python")

# Host ids of the tenants' sandboxes: away from the harness's 100000 range.
UID_T1 = 310000
UID_T2 = 320000


def tenant(name, uid, **kw):
    t = {"name": name, "uid": uid, "gid": uid, "allow": {"uids": [0]}}
    t.update(kw)
    return t


class Server:
    """A coil serve for one test, stopped (SIGTERM) when the with ends."""

    def __init__(self, tenants, env=None, metrics=False, binary=None,
                 preexec=None, debug=False, warm=True, **top):
        self.binary = binary or harness.COIL
        self.preexec = preexec
        self.dir = harness.tmpdir()
        self.root = harness.new_root()
        self.sock = os.path.join(self.dir, "serve.sock")
        self.config = os.path.join(self.dir, "serve.json")
        cfg = {"tenants": tenants}
        cfg.update(top)
        with open(self.config, "w") as f:
            json.dump(cfg, f)
        self.metrics = os.path.join(self.dir, "metrics.sock") if metrics else None
        self.logpath = os.path.join(self.dir, "serve.log")
        self.env = env
        self.debug = debug
        self.warm = warm
        self.tenants = [t["name"] for t in tenants]

    def __enter__(self):
        argv = [self.binary] + (["--debug"] if self.debug else []) + [
            "--root", self.root, "serve", "--socket", self.sock, "--config",
            self.config]
        if self.metrics:
            argv += ["--metrics", self.metrics]
        e = dict(os.environ)
        e.update(self.env or {})
        self.log = open(self.logpath, "w+")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=self.log, env=e,
                                     preexec_fn=self.preexec)
        harness.note_pid(self.proc.pid)
        harness.on_cleanup(self.kill)
        try:
            deadline = time.time() + 30
            while not os.path.exists(self.sock):
                assert self.proc.poll() is None, "serve exited: %s" % self.logtext()
                assert time.time() < deadline, "no socket: %s" % self.logtext()
                time.sleep(0.02)
            # Warm: each tenant's template answers once.
            for t in self.tenants if self.warm else []:
                with self.client(t) as c:
                    env = c.call(code="def handle(r):\n    return 1\n")
                    assert env.get("ok"), (env, self.logtext())
        except coil_client.ProtocolError as e:
            # The server went away under the warm-up: its log says why.
            rc = self.stop()
            raise AssertionError("warm-up: %s; serve's status %s, log:\n%s"
                                 % (e, rc, self.logtext())) from e
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def stop(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("serve ignored SIGTERM: " + self.logtext())
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()

    def logtext(self):
        with open(self.logpath) as f:
            return f.read()

    def client(self, tenant=None):
        return coil_client.Client(self.sock, tenant=tenant, timeout=60)

    def call(self, *args, tenant=None, timeout=60, env=None):
        extra = ["--tenant", tenant] if tenant else []
        return harness.coil("call", "--socket", self.sock, *extra, *args,
                            timeout=timeout, env=env)

    def templates(self):
        """{tenant: host pid of its template} (coil list under our root)."""
        r = harness.coil("list", "--format", "json", root=self.root)
        out = {}
        for c in json.loads(r.stdout or "[]"):
            if c.get("status") == "running":
                out[c["id"].split("-")[2]] = c["pid"]
        return out


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def envelope(r):
    lines = [x for x in (r.stdout or "").splitlines() if x.startswith("{")]
    return json.loads(lines[-1]) if lines else None


# ---------------------------------------------------------------- parity

PARITY = [
    ("ok", 'def handle(r):\n    print("hi", r["x"])\n    return {"y": r["x"] + 1}\n',
     '{"x": 41}'),
    ("exception", "def handle(r):\n    raise ValueError('bad ' + r['s'])\n",
     '{"s": "q"}'),
    ("gate", "import os\ndef handle(r):\n    return 1\n", "{}"),
    ("gate-many", "import os\nclass A: pass\n", "{}"),
    ("no-entry", "def other(r):\n    return 1\n", "{}"),
    ("not-json", "def handle(r):\n    return {1, 2}\n", "{}"),
    ("nul-string", 'def handle(r):\n    return r["a"]\n', '{"a": "x\\u0000y"}'),
    ("request-surrogate", "def handle(r):\n    return r\n", '"\\ud800"'),
    ("output-limit", "def handle(r):\n    while True:\n        print('x' * 4096)\n",
     "{}"),
    ("memory", "def handle(r):\n    return len('a' * 10**10)\n", "{}"),
    ("cpu", "def handle(r):\n    while True:\n        pass\n", "{}"),
    ("recursion", "def f(n):\n    return f(n + 1)\ndef handle(r):\n    return f(0)\n",
     "{}"),
    # Literal regexes, which the template compiles ahead (serve_warm.py):
    # in use, failing, printing (re.DEBUG) and warning, as under coil py.
    ("regex", "import re\nfrom re import sub as s, I\n"
     "P = re.compile(r'(\\w+)@(\\w+)\\.org', re.I | re.M)\n"
     "def handle(r):\n    m = P.match(r['e'])\n"
     "    return [m.group(1), s('O', '0', r['e'], 0, I),\n"
     "            re.findall(r'\\d', 'a1b2'), re.split(',', 'a,b', 1)]\n",
     '{"e": "Ada@Example.org"}'),
    ("regex-error", "import re\ndef handle(r):\n    return re.compile('(').pattern\n",
     "{}"),
    ("regex-debug", "import re\ndef handle(r):\n"
     "    return re.compile('a+b', re.DEBUG).pattern\n", "{}"),
    ("regex-warns", "import re\ndef handle(r):\n"
     "    return bool(re.match('[[a]', '[a'))\n", "{}"),
    # The helpers, each of which the template has run once (serve_warm.py).
    ("helpers", "import ipaddress, urllib.parse, datetime, base64, binascii\n"
     "import struct, hmac, hashlib, json, re\n"
     "def handle(r):\n"
     "    a = ipaddress.ip_address(r['ip'])\n"
     "    n = ipaddress.ip_network('10.0.0.0/8')\n"
     "    u = urllib.parse.urlsplit(r['url'])\n"
     "    t = datetime.datetime.strptime(r['t'], '%Y-%m-%d %H:%M:%S')\n"
     "    return [a.compressed, a.is_private, n.netmask, n.num_addresses,\n"
     "            ipaddress.in_network(r['ip'], '10.1.0.0/16'),\n"
     "            ipaddress.hosts('192.0.2.0/30'), u.hostname, u.port,\n"
     "            urllib.parse.parse_qs(u.query), urllib.parse.quote('a b'),\n"
     "            t.isoformat(), t.strftime('%d/%m'),\n"
     "            base64.b64encode(b'x').decode(),\n"
     "            binascii.hexlify(hmac.digest(b'k', b'm', 'sha256')).decode(),\n"
     "            struct.unpack('>H', b'\\x01\\x02')[0],\n"
     "            hashlib.sha256(b'').hexdigest(), json.loads(json.dumps([1])),\n"
     "            re.sub('a', 'b', 'aa')]\n",
     '{"ip": "10.1.2.3", "url": "https://u@h.test:8443/p?a=1&a=2",'
     ' "t": "2024-05-06 07:08:09"}'),
]


def test_serve_answers_equal_coil_py():
    """Each error type, and success, as coil call and as coil py: the same
    envelope and the same exit status."""
    with Server([tenant("t1", UID_T1)]) as s:
        problems = []
        for name, code, request in PARITY:
            f = os.path.join(s.dir, name + ".py")
            with open(f, "w") as fh:
                fh.write(code)
            # 32m: filled page by page (no RLIMIT_DATA in the ASan build),
            # the string meets it within the CPU second even where faults
            # are slow.
            extra = ("--memory", "32m") if name == "memory" else ()
            py = harness.coil("py", *extra, "--entry", "handle", "--request",
                              request, f, root=harness.new_root())
            call = s.call(*extra, "--entry", "handle", "--request", request, f)
            pe, ce = envelope(py), envelope(call)
            if name == "memory":
                # Cold coil py may meet the cgroup's OOM killer first,
                # serve's child always its RLIMIT_DATA: the same type and
                # status, a different message.
                pe, ce = pe["error"]["type"], ce["error"]["type"]
            if (py.returncode, pe) != (call.returncode, ce):
                problems.append("%s:\n py: %s\n call: %s" % (
                    name, describe(py), describe(call)))
        assert not problems, "\n".join(problems)


SERVE_WARM = os.path.join(harness.REPO, "sandbox", "serve_warm.py")
WARM_CASES = r"""
import sys
sys.path.insert(0, sys.argv[1])
import re, serve_warm as w
L = w.literals
assert L("import re\nre.compile('a')") == [("a", 0)]
assert L("import re as r\nr.match('a', s, r.I | r.M)") == [("a", 10)]
assert L("from re import search as f, X\nf(b'a', s, flags=X)") == [(b"a", 64)]
assert L("import re\nre.sub('a', 'b', s, 0, re.S)\nre.subn(pattern='c', repl='', string=s)") in (
    [("a", 16), ("c", 0)], [("c", 0), ("a", 16)])
assert L("import re\nre.split(',', s, 1, 2)") == [(",", 2)]
assert L("import re\nre.compile('a')\nre.compile('a')") == [("a", 0)]
# Not literal, not re, or asking re.DEBUG: left to the child.
assert L("import re\nre.compile(x)\nre.compile('a', f)\nre.compile('b', re.DEBUG | re.I)") == []
assert L("import json\njson.compile('a')\ncompile('a')") == []
assert L("def handle(r):\n    return r") == []
assert L("import re\nre.compile('%s')" % ("a" * (w.MAX_PATTERN_LEN + 1))) == []
many = "import re\n" + "".join("re.compile('p%d')\n" % i for i in range(100))
assert len(L(many)) == w.MAX_PATTERNS
# Compiled into re's own cache; a failing or warning pattern is not kept.
re._cache.clear()
assert w.regexes("import re\nre.compile('ok+')\nre.compile('(')\nre.match('[[a]', s)") == 1
assert (str, "ok+", 0) in re._cache and len(re._cache) == 1, re._cache
print("ok")
"""


def test_serve_warm_finds_literal_patterns_only():
    """serve_warm.py, as the template runs it (Debian's python3.11): the
    literal patterns and flags of re calls, nothing else, within bounds."""
    r = subprocess.run(["/usr/bin/python3.11", "-I", "-S", "-c", WARM_CASES,
                        os.path.dirname(SERVE_WARM)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


def test_serve_template_runs_every_helper_warm_up_step():
    """Each helper warm-up step (serve_warm.py) runs to its end in the
    template, through the helper namespaces the user's code imports: a step
    that raised would leave its state for every child to build."""
    with Server([tenant("t1", UID_T1)], debug=True) as s:
        log = s.logtext()
    assert "helper warm-up done, 0 steps failed" in log, log


def test_serve_template_compiles_literal_regexes_once():
    """A handler's literal regexes are compiled in the template when its
    code is first gated, not again for the next request of the same code."""
    code = ("import re\nE = re.compile(r'^(\\w+)@(\\w+)$', re.I)\n"
            "def handle(r):\n    return [E.match(r).group(2),"
            " re.sub('[0-9]', '#', r)]\n")
    with Server([tenant("t1", UID_T1)], debug=True) as s:
        with s.client("t1") as c:
            for _ in range(3):
                env = c.call(code=code, request="ada@x1")
                assert env == {"ok": True, "result": ["x1", "ada@x#"],
                               "stdout": ""}, env
        log = s.logtext()
    assert log.count("2 literal regular expressions compiled") == 1, log


def test_serve_template_learns_the_pages_children_write():
    """A template's first four children, one at a time, show it which of
    its pages a request writes, so that each later spare copies them before
    its job arrives; the answers are unchanged."""
    code = "def handle(r):\n    return [r, sorted(str(r))[-1]]\n"
    with Server([tenant("t1", UID_T1)], debug=True) as s:
        with s.client("t1") as c:
            for i in range(8):
                env = c.call(code=code, request={"i": i})
                assert env == {"ok": True, "result": [{"i": i}, "}"],
                               "stdout": ""}, env
        log = s.logtext()
    learned = [int(n) for n in
               re.findall(r"serve template: (-?\d+) pages children write", log)]
    # The server's warm-up call is the first of the four.
    assert len(learned) == 4, log
    assert 0 < learned[0] <= learned[-1] <= 1024, learned


def spares_of(tpid, want, seconds=10):
    """The template's children once exactly want of them are left (the
    last execution's child may still be exiting), or what is left."""
    end = time.time() + seconds
    kids = children(tpid)
    while len(kids) != want and time.time() < end:
        time.sleep(0.01)
        kids = children(tpid)
    return kids


def test_serve_template_keeps_two_spares_and_renews_them_for_new_code():
    """Left alone, a template holds two spares ready; a call takes one of
    them and the other stays; code gated since they were cloned makes the
    template replace both."""
    code = "def handle(r):\n    return r\n"
    with Server([tenant("t1", UID_T1)]) as s:
        with s.client("t1") as c:
            # Past the four learning children, which run with one spare
            # and one at a time (a call while one runs is not learned
            # from).
            for i in range(6):
                assert c.call(code=code, request=i)["result"] == i
                time.sleep(0.05)
            tpid = s.templates()["t1"]
            before = spares_of(tpid, 2)
            assert len(before) == 2, before
            assert c.call(code=code, request=7)["result"] == 7
            # The child that answered may be listed until it is reaped.
            end = time.time() + 10
            after = spares_of(tpid, 2)
            while set(after) == set(before) and time.time() < end:
                time.sleep(0.01)
                after = spares_of(tpid, 2)
            assert len(after) == 2 and len(set(before) & set(after)) == 1, \
                (before, after)
            assert c.register("other", "def handle(r):\n    return 0\n")["ok"]
            end = time.time() + 10
            renewed = spares_of(tpid, 2)
            while set(renewed) & set(after) and time.time() < end:
                time.sleep(0.01)
                renewed = spares_of(tpid, 2)
            assert len(renewed) == 2 and not set(renewed) & set(after), \
                (after, renewed)
            assert c.call(handler="other")["result"] == 0


def ns_last_pid(pid):
    """The last pid handed out in pid's PID namespace: it grows with every
    process cloned there."""
    r = subprocess.run(["nsenter", "-t", str(pid), "-p", "cat",
                        "/proc/sys/kernel/ns_last_pid"],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r.stderr
    return int(r.stdout)


def test_serve_spare_that_cannot_start_is_not_cloned_again_until_a_job():
    """A spare that dies before its job (here: the bundle asks for more
    open files than the kernel allows) fails that job with a one-line
    error; the template then clones no more spares while it waits."""
    def edit(cfg):
        cfg["process"]["rlimits"] = [
            {"type": "RLIMIT_NOFILE", "hard": 1 << 30, "soft": 1 << 30}]
    bundle = harness.python_bundle(edit=edit)
    with Server([tenant("t1", UID_T1, bundle=bundle)], warm=False) as s:
        with s.client("t1") as c:
            env = c.call(code="def handle(r):\n    return 1\n")
        assert env["ok"] is False, env
        assert env["error"]["type"] == "Exception", env
        tpid = s.templates()["t1"]
        time.sleep(0.1)
        first = ns_last_pid(tpid)
        time.sleep(0.5)
        # The two nsenter processes are the only ones cloned in between.
        assert ns_last_pid(tpid) - first <= 2, first


def test_serve_template_and_children_are_not_dumpable():
    """The template is dumpable only while it opens its own maps and
    pagemap, before any child exists: it and every child stay owned by the
    host's root in /proc (no core dump, no ptrace by the tenant's uid)."""
    with Server([tenant("t1", UID_T1)]) as s:
        with s.client("t1") as c:
            for _ in range(6):
                assert c.call(code="def handle(r):\n    return 1\n").get("ok")
        tpid = s.templates()["t1"]
        with concurrent.futures.ThreadPoolExecutor(1) as ex:
            def call():
                with s.client("t1") as c:
                    return c.call(code=BURN)
            fut = ex.submit(call)
            owners = {}
            deadline = time.time() + 10
            while len(owners) < 2 and time.time() < deadline:
                for pid in [tpid] + children(tpid):
                    try:
                        owners[pid] = os.stat("/proc/%d/environ" % pid).st_uid
                    except OSError:
                        pass
            assert fut.result()["result"] == 1500000
    assert len(owners) >= 2 and set(owners.values()) == {0}, owners


def test_serve_client_call_matches_cli():
    """The Python client gets the envelope coil call prints, inline code
    and limits included."""
    with Server([tenant("t1", UID_T1)]) as s:
        with s.client("t1") as c:
            env = c.call(code="def go(r):\n    return r['n'] * 2\n", entry="go",
                         request={"n": 21}, limits={"timeout_ms": 2000})
            assert env == {"ok": True, "result": 42, "stdout": ""}, env
            assert c.ping() == {"ok": True}


def test_serve_code_and_request_of_any_size_up_to_the_caps():
    """Code (up to the gate's cap) and requests reach the template and the
    child whole whatever their size: each travels in a pipe when it fits in
    one's buffer, else in a memfd."""
    pad = "#" + "x" * 99 + "\n"
    with Server([tenant("t1", UID_T1)]) as s, s.client("t1") as c:
        for code_kb, req_kb in ((0, 0), (1, 1), (63, 63), (63, 70), (1, 900)):
            code = pad * (code_kb * 10) + "def handle(r):\n    return [len(r['s']), r['s'][-3:]]\n"
            req = {"s": "y" * (req_kb << 10) + "end"}
            env = c.call(code=code, request=req)
            assert env.get("result") == [(req_kb << 10) + 3, "end"], (code_kb, req_kb, env)


def _threads(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(next(l for l in f if l.startswith("Threads:")).split()[1])


def test_serve_connections_each_get_a_thread_and_idle_ones_go():
    """Connections that hold their thread without sending (up to a dozen
    here) do not keep a new connection from being answered: the pool
    starts a thread whenever the last waiting one takes a connection.
    Twenty fresh connections at once are all answered, and once they are
    all closed the pool shrinks back to at most four waiting threads."""
    code = "def handle(r):\n    return r['n']\n"
    with Server([tenant("t1", UID_T1)]) as s:
        base = _threads(s.proc.pid)
        idle = []
        try:
            for _ in range(12):
                idle.append(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
                idle[-1].connect(s.sock)
            with s.client("t1") as c:
                assert c.call(code=code, request={"n": 1}).get("result") == 1
        finally:
            for sk in idle:
                sk.close()

        def one(n):
            with s.client("t1") as c:
                return c.call(code=code, request={"n": n}).get("result")

        with concurrent.futures.ThreadPoolExecutor(20) as ex:
            assert sorted(ex.map(one, range(20))) == list(range(20))
        deadline = time.monotonic() + 10
        while _threads(s.proc.pid) > base + 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _threads(s.proc.pid) <= base + 4, (base, _threads(s.proc.pid))


def test_serve_async_client_matches_sync_client():
    """coil_client.AsyncClient gets the envelopes Client gets, concurrent
    calls on their own connections, and turns a timeout, a refused
    connection and a server that closed an idle connection into
    ProtocolError or one reconnect, as Client does."""
    import asyncio
    double = "def go(r):\n    return r['n'] * 2\n"
    with Server([tenant("t1", UID_T1)]) as s:
        async def main():
            c = coil_client.AsyncClient(s.sock, tenant="t1", timeout=60)
            assert await c.ping() == {"ok": True}
            env = await c.call(code=double, entry="go", request={"n": 21},
                               limits={"timeout_ms": 2000})
            assert env == {"ok": True, "result": 42, "stdout": ""}, env
            reg = await c.register("h", double)
            assert reg["ok"] and reg["digest"] == hashlib.sha256(
                double.encode()).hexdigest(), reg
            many = [coil_client.AsyncClient(s.sock, tenant="t1", timeout=60)
                    for _ in range(4)]
            envs = await asyncio.gather(*(
                m.call(handler="h", entry="go", request={"n": i})
                for i, m in enumerate(many)))
            assert [e["result"] for e in envs] == [0, 2, 4, 6], envs
            assert await c.remove("h") == {"ok": True}
            env = await c.call(handler="h")
            assert env["error"]["type"] == "UnknownHandler", env
            # The connection is closed under it: one reconnect, same answer.
            c._sock.shutdown(socket.SHUT_RDWR)
            assert await c.ping() == {"ok": True}
            slow = coil_client.AsyncClient(s.sock, tenant="t1", timeout=0.05)
            spin = "def handle(r):\n    while True:\n        pass\n"
            try:
                env = await slow.call(code=spin)
                raise AssertionError("no timeout: %r" % (env,))
            except coil_client.ProtocolError as e:
                assert "timed out" in str(e), e
            gone = coil_client.AsyncClient(s.dir + "/absent.sock")
            try:
                await gone.ping()
                raise AssertionError("connected to nothing")
            except coil_client.ProtocolError as e:
                assert "absent.sock" in str(e), e
            for x in [c, slow] + many:
                await x.close()
        asyncio.run(main())


def test_serve_clients_read_exactly_one_answer():
    """Client and AsyncClient read an answer however the server's writes
    split it (a length cut in two, a body in pieces, a body larger than
    one read) and refuse bytes past the answer, which no request asked
    for."""
    import asyncio
    path = os.path.join(harness.tmpdir(), "fake.sock")
    big = {"ok": True, "result": "x" * 200000}
    scripts = [
        [b"\0\0", b"\0\x0b", b'{"ok":', b"true}"],
        [_frame_bytes(big)],
        [_frame_bytes({"ok": True}) + b"\0\0\0\x02{}"],
    ]
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(4)

    def serve():
        for pieces in scripts * 2:
            conn, _ = srv.accept()
            with conn:
                (n,) = struct.unpack(">I", conn.recv(4, socket.MSG_WAITALL))
                conn.recv(n, socket.MSG_WAITALL)
                for p in pieces:
                    conn.sendall(p)
                    time.sleep(0.02)
                time.sleep(0.1)

    th = threading.Thread(target=serve, daemon=True)
    th.start()

    async def main():
        for want in ({"ok": True}, big):
            c = coil_client.AsyncClient(path, timeout=10)
            assert await c.ping() == want
            await c.close()
        c = coil_client.AsyncClient(path, timeout=10)
        try:
            env = await c.ping()
            raise AssertionError("took a second answer in: %r" % (env,))
        except coil_client.ProtocolError as e:
            assert "more bytes than one answer" in str(e), e
        await c.close()

    def sync():
        for want in ({"ok": True}, big):
            with coil_client.Client(path, timeout=10) as c:
                assert c.ping() == want
        with coil_client.Client(path, timeout=10) as c:
            try:
                env = c.ping()
                raise AssertionError("took a second answer in: %r" % (env,))
            except coil_client.ProtocolError as e:
                assert "more bytes than one answer" in str(e), e

    try:
        asyncio.run(main())
        sync()
    finally:
        th.join(10)
        srv.close()


def _frame_bytes(obj):
    body = json.dumps(obj).encode()
    return struct.pack(">I", len(body)) + body


# ---------------------------------------------------------------- handlers

def test_serve_register_replace_remove():
    v1 = "def handle(r):\n    return 'v1'\n"
    v2 = "def handle(r):\n    return 'v2:' + r\n"
    with Server([tenant("t1", UID_T1)]) as s, s.client("t1") as c:
        env = c.register("h", v1)
        assert env == {"ok": True, "handler": "h",
                       "digest": hashlib.sha256(v1.encode()).hexdigest()}, env
        assert c.call(handler="h")["result"] == "v1"
        env = c.register("h", v2)
        assert env["digest"] == hashlib.sha256(v2.encode()).hexdigest(), env
        assert c.call(handler="h", request="x")["result"] == "v2:x"
        bad = c.register("evil", "import os\n")
        assert bad["ok"] is False and bad["error"]["type"] == "GateViolation", bad
        assert bad["error"]["line"] == 1, bad
        assert c.call(handler="evil")["error"]["type"] == "UnknownHandler"
        assert c.remove("h") == {"ok": True}
        assert c.call(handler="h")["error"]["type"] == "UnknownHandler"
        assert c.remove("h")["error"]["type"] == "UnknownHandler"


def test_serve_replace_while_in_flight():
    """An in-flight call finishes with the code it started with."""
    slow = ("def handle(r):\n    n = 0\n    for i in range(2500000):\n"
            "        n += 1\n    return 'old'\n")
    with Server([tenant("t1", UID_T1)]) as s:
        with s.client("t1") as c:
            c.register("h", slow)
        with concurrent.futures.ThreadPoolExecutor(1) as ex:
            def call():
                with s.client("t1") as c2:
                    return c2.call(handler="h")
            fut = ex.submit(call)
            time.sleep(0.1)
            with s.client("t1") as c:
                c.register("h", "def handle(r):\n    return 'new'\n")
                assert c.call(handler="h")["result"] == "new"
            assert fut.result()["result"] == "old"


# ---------------------------------------------------------------- access

def test_serve_forbidden():
    """SO_PEERCRED decides: a tenant that allows only uid/gid 4242 refuses
    root; an unknown tenant is UnknownTenant; the socket is 0600."""
    tenants = [tenant("t1", UID_T1),
               tenant("t2", UID_T2, allow={"uids": [4242], "gids": [4242]})]
    s = Server(tenants)
    s.tenants = ["t1"]
    with s, s.client() as c:
        assert (os.stat(s.sock).st_mode & 0o777) == 0o600
        code = "def handle(r):\n    return 1\n"
        for env in (c.call(code=code, tenant="t2"),
                    c.register("h", code, tenant="t2"),
                    c.remove("h", tenant="t2")):
            assert env["ok"] is False and env["error"]["type"] == "Forbidden", env
        env = c.call(code=code, tenant="nope")
        assert env["error"]["type"] == "UnknownTenant", env
        assert c.call(code=code, tenant="t1")["result"] == 1
        # Without a tenant, with several configured: UnknownTenant.
        assert c.call(code=code)["error"]["type"] == "UnknownTenant"


# ---------------------------------------------------------------- framing

def raw_exchange(path, payload):
    """Sends bytes, returns (answer dict or None, whether the server closed
    the connection after it)."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(20)
    s.connect(path)
    try:
        s.sendall(payload)
        head = b""
        while len(head) < 4:
            chunk = s.recv(4 - len(head))
            if not chunk:
                return None, True
            head += chunk
        (n,) = struct.unpack(">I", head)
        body = b""
        while len(body) < n:
            body += s.recv(n - len(body))
        try:
            closed = s.recv(1) == b""
        except ConnectionResetError:
            closed = True
        return json.loads(body), closed
    finally:
        s.close()


def frame(obj_bytes):
    return struct.pack(">I", len(obj_bytes)) + obj_bytes


def test_serve_bad_frames():
    with Server([tenant("t1", UID_T1)], max_frame_bytes=65536) as s:
        for payload in (frame(b"not json"), frame(b"[1, 2]"),
                        frame(b'{"op": "call"'), frame(b"\xff\xfe{}"),
                        struct.pack(">I", 3 << 20) + b"{}",
                        struct.pack(">I", 65537) + b"{" * 10):
            env, closed = raw_exchange(s.sock, payload)
            assert env and env["error"]["type"] == "ProtocolError", (payload[:20], env)
            assert closed, payload[:20]
        env, closed = raw_exchange(s.sock, frame(b'{"op": "dance"}'))
        assert env["error"]["type"] == "ProtocolError", env
        with s.client("t1") as c:
            assert c.ping() == {"ok": True}
            assert c.call(code="def handle(r):\n    return 7\n")["result"] == 7
            env = c.call(code="def handle(r):\n    return 7\n",
                         handler="also")
            assert env["error"]["type"] == "ProtocolError", env
        assert s.proc.poll() is None


# ---------------------------------------------------------------- isolation

BURN = ("def handle(r):\n    n = 0\n    for i in range(1500000):\n"
        "        n += 1\n    return n\n")


def test_serve_each_child_is_pid_1_of_a_fresh_pid_namespace():
    with Server([tenant("t1", UID_T1)]) as s:
        tpid = s.templates()["t1"]
        with open("/proc/%d/status" % tpid) as f:
            assert "NSpid" in f.read()
        tns = os.stat("/proc/%d/ns/pid" % tpid).st_ino
        # Each namespace is held open until the end: a freed namespace's
        # inode number is handed out again, and a later child's could
        # equal an earlier one's.
        seen, namespaces, held = [], [], []
        for _ in range(3):
            with concurrent.futures.ThreadPoolExecutor(1) as ex:
                def call():
                    with s.client("t1") as c:
                        return c.call(code=BURN)
                fut = ex.submit(call)
                child = None
                deadline = time.time() + 10
                # Any child not looked at yet will do (the one running, the
                # spare): the one before may still be exiting after its
                # answer, so a child that vanishes while read is skipped.
                while child is None and time.time() < deadline:
                    for kid in children(tpid):
                        if kid in seen:
                            continue
                        try:
                            with open("/proc/%d/status" % kid) as f:
                                nspid = [ln for ln in f
                                         if ln.startswith("NSpid:")][0].split()
                            fd = os.open("/proc/%d/ns/pid" % kid, os.O_RDONLY)
                        except (OSError, IndexError):
                            continue
                        held.append(fd)
                        ns = os.fstat(fd).st_ino
                        child = kid
                        break
                    if child is None:
                        time.sleep(0.005)
                assert child, "no child of the template appeared"
                assert fut.result()["result"] == 1500000
            assert nspid[-1] == "1", nspid
            assert ns != tns
            seen.append(child)
            namespaces.append(ns)
        for fd in held:
            os.close(fd)
        assert len(set(namespaces)) == 3, namespaces
        # Two at once: two different PID namespaces, each its own PID 1.
        with concurrent.futures.ThreadPoolExecutor(2) as ex:
            def call(_):
                with s.client("t1") as c:
                    return c.call(code=BURN)
            futs = [ex.submit(call, i) for i in range(2)]
            both = []
            deadline = time.time() + 10
            while len(both) < 2 and time.time() < deadline:
                kids = children(tpid)
                if len(kids) == 2:
                    try:
                        both = [os.readlink("/proc/%d/ns/pid" % k) for k in kids]
                    except OSError:
                        both = []
            for f in futs:
                assert f.result()["result"] == 1500000
        assert len(both) == 2 and both[0] != both[1], both


def test_serve_child_mount_namespace_kept_while_any_mount_blocker_is_off():
    """A child shares its template's mount namespace only while the three
    layers that each stop it mounting (no capabilities, seccomp, Landlock)
    are all in force; with any one of them off it gets a namespace of its
    own, so a mount it managed could not reach the next execution."""
    cases = [("full", []), ("caps", ["caps"]), ("seccomp", ["seccomp"]),
             ("landlock", ["landlock"])]
    tenants = [tenant(name, 340000 + i * 10, bundle=harness.python_bundle(off))
               for i, (name, off) in enumerate(cases)]
    with Server(tenants) as s:
        for name, off in cases:
            with s.client(name) as c:
                assert c.call(code="def handle(r):\n    return 1\n")["ok"]
            tpid = s.templates()[name]
            # The spare; the child that answered may still be listed until
            # it is reaped, with its namespaces already gone.
            deadline = time.time() + 10
            own = None
            while own is None and time.time() < deadline:
                for kid in children(tpid):
                    try:
                        own = os.readlink("/proc/%d/ns/mnt" % kid)
                        break
                    except OSError:
                        pass
                else:
                    time.sleep(0.01)
            assert own, "%s: no spare child of the template" % name
            shared = own == os.readlink("/proc/%d/ns/mnt" % tpid)
            assert shared == (not off), (name, own)


LEAK_WRITE = """
import os, sys, gc, json, re
KEEP = []
def handle(r):
    secret = r["secret"]
    with open("/tmp/left-behind", "w") as f:
        f.write(secret)
    for m in list(sys.modules.values()):
        try:
            m.LEFT_BEHIND = secret
        except Exception:
            pass
    re.compile(secret + "[a-z]+")
    KEEP.append(secret * 1000)
    import builtins
    builtins.LEFT = secret
    os.environ["LEFT"] = secret
    return "stored"
"""

LEAK_READ = """
import os, sys, gc, json, re
def handle(r):
    secret = r["secret"]
    found = []
    if os.path.exists("/tmp/left-behind"):
        found.append("tmp file")
    if any(getattr(m, "LEFT_BEHIND", None) for m in list(sys.modules.values())):
        found.append("module state")
    import builtins
    if getattr(builtins, "LEFT", None):
        found.append("builtins")
    if os.environ.get("LEFT"):
        found.append("environment")
    for o in gc.get_objects():
        try:
            if isinstance(o, (list, dict, tuple)) and secret in repr(o)[:100000]:
                found.append("memory: " + type(o).__name__)
                break
        except Exception:
            pass
    return found
"""


def test_serve_no_request_sees_a_previous_ones_data():
    """With the in-process layers off, so the handler has real Python: a
    request stores a secret in a file in /tmp, module state, builtins, the
    environment, the re cache and the heap; the next request looks for it
    everywhere and finds nothing."""
    b = harness.python_bundle(["ast", "builtins", "audit", "seccomp", "landlock"])
    with Server([tenant("t1", UID_T1, bundle=b)]) as s, s.client("t1") as c:
        for i in range(3):
            secret = "SECRET%d%s" % (i, os.urandom(8).hex())
            env = c.call(code=LEAK_WRITE, request={"secret": secret})
            assert env.get("result") == "stored", env
            env = c.call(code=LEAK_READ, request={"secret": secret})
            assert env.get("ok") and env["result"] == [], env


TMP_WRITE = """
import os
def handle(r):
    for path in ("/tmp/left-behind", "/tmp"):
        try:
            if path == "/tmp":
                os.mkdir("/tmp/left-dir")
            else:
                open(path, "w").close()
            return "written " + path
        except OSError as e:
            if e.errno not in (1, 13, 30):
                return "unexpected %r" % (e,)
    return "denied"
"""


def test_serve_landlock_keeps_every_request_from_writing_tmp():
    """Children share the template's /tmp when Landlock is in force (no
    fresh tmpfs per execution then): that is safe only while no execution
    can write there. With every other in-process layer off, so the handler
    has real Python, creating a file or a directory in /tmp is denied."""
    b = harness.python_bundle(["ast", "builtins", "audit", "seccomp"])
    with Server([tenant("t1", UID_T1, bundle=b)]) as s, s.client("t1") as c:
        for _ in range(2):
            env = c.call(code=TMP_WRITE, request={})
            assert env.get("ok") and env["result"] == "denied", env


JOB_STEPS = """
import posix, _signal
def handle(r):
    if r["call"] == "dup2":
        posix.dup2(2, 9)
    elif r["call"] == "sigaction":
        _signal.signal(_signal.SIGUSR1, _signal.SIG_IGN)
    elif r["call"] == "setitimer":
        _signal.setitimer(_signal.ITIMER_REAL, 100)
    return "made " + r["call"]
"""


def test_serve_job_steps_closed_before_the_users_code():
    """A child loads lockdown stage 2 while it waits for its job, with the
    calls that taking and arming the job make still let through (dup2 of
    the job's fds, signal handlers, the timer), and closes them before the
    user's code runs. With the gate, builtins and audit off, so the handler
    has real Python, each such call is a seccomp kill; with seccomp off as
    well, the same calls go through, so it is the filter that stops them."""
    on = harness.python_bundle(["ast", "builtins", "audit"])
    off = harness.python_bundle(["ast", "builtins", "audit", "seccomp"])
    tenants = [tenant("on", UID_T1, bundle=on), tenant("off", UID_T2, bundle=off)]
    with Server(tenants) as s:
        for call in ("dup2", "sigaction", "setitimer"):
            with s.client("on") as c:
                env = c.call(code=JOB_STEPS, request={"call": call})
            err = env.get("error") or {}
            assert "killed by seccomp" in err.get("message", ""), (call, env)
            with s.client("off") as c:
                env = c.call(code=JOB_STEPS, request={"call": call})
            assert env.get("result") == "made " + call, (call, env)


# ---------------------------------------------------------------- tenants

def cpu_idle_of(pid):
    """The cpu.idle of the cgroup pid is in (its cpu hierarchy's on v1)."""
    v2 = os.path.exists("/sys/fs/cgroup/cgroup.controllers")
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if (v2 and ctrls == "") or "cpu" in ctrls.split(","):
                d = os.path.join("/sys/fs/cgroup", ctrls, path.lstrip("/"))
                with open(os.path.join(d, "cpu.idle")) as c:
                    return c.read().strip()
    raise AssertionError("no cpu cgroup for %d" % pid)


def test_serve_cpu_idle_tenant():
    """cgroup.cpu_idle puts the tenant's cgroup (template and children) in
    the idle class; its calls still answer; the other tenant's is not."""
    with Server([tenant("low", UID_T1, cgroup={"cpu_idle": True}),
                 tenant("high", UID_T2)]) as s:
        for name in ("low", "high"):
            with s.client(name) as c:
                env = c.call(code="def handle(r):\n    return r + 1\n",
                             request=41)
            assert env == {"ok": True, "result": 42, "stdout": ""}, env
        t = s.templates()
        assert cpu_idle_of(t["low"]) == "1"
        assert cpu_idle_of(t["high"]) == "0"


SPIN_MS = ("import datetime\ndef handle(r):\n"
           "    t = datetime.datetime.now()\n"
           "    while (datetime.datetime.now() - t).total_seconds() < r / 1000:\n"
           "        pass\n"
           "    return r\n")


def wait_cpu_idle(pid, want, seconds):
    end = time.time() + seconds
    while cpu_idle_of(pid) != want and time.time() < end:
        time.sleep(0.05)
    return cpu_idle_of(pid)


def test_serve_demotes_a_tenant_at_a_limit_then_restores_it():
    """An execution that ends at a limit puts its tenant's cgroup in the
    CPU's idle class for cgroup.demote_seconds, and only its tenant's; a
    quick one does not; then the class comes back by itself. (A long
    demote_run_ms: only the limit may demote here, on a slow machine too.)"""
    flood = tenant("flood", UID_T1,
                   cgroup={"demote_seconds": 4, "demote_run_ms": 60000})
    with Server([flood, tenant("calm", UID_T2)], metrics=True) as s:
        t = s.templates()
        with s.client("flood") as c:
            env = c.call(code="def handle(r):\n    return r\n", request=1)
            assert env.get("ok"), env
            assert cpu_idle_of(t["flood"]) == "0", s.logtext()
            env = c.call(code=HOLD, request=1)
        assert env["error"]["type"] in ("CpuLimit", "Timeout"), env
        assert cpu_idle_of(t["flood"]) == "1"
        assert cpu_idle_of(t["calm"]) == "0"
        assert "tenant flood: in the CPU's idle class for 4 s: an execution " \
            "ended " in s.logtext()
        text = scrape(s)
        for line in ('coil_serve_cpu_idle{tenant="flood"} 1',
                     'coil_serve_cpu_idle{tenant="calm"} 0',
                     'coil_serve_demotions_total{tenant="flood"} 1',
                     'coil_serve_demotions_total{tenant="calm"} 0'):
            assert line in text, (line, text)
        # Its calls still answer meanwhile.
        with s.client("flood") as c:
            env = c.call(code="def handle(r):\n    return r + 1\n", request=1)
        assert env == {"ok": True, "result": 2, "stdout": ""}, env
        assert wait_cpu_idle(t["flood"], "0", 60) == "0"
        assert "tenant flood: back in the CPU's normal class" in s.logtext()
        assert 'coil_serve_cpu_idle{tenant="flood"} 0' in scrape(s)


def test_serve_demotes_a_tenant_whose_execution_runs_long():
    """Still running cgroup.demote_run_ms after it started is enough,
    before any limit; with demote_seconds 0 nothing is demoted."""
    lim = {"timeout_ms": 30000, "cpu_seconds": 20}
    with Server([tenant("slow", UID_T1, limits=lim,
                        cgroup={"demote_run_ms": 3000}),
                 tenant("kept", UID_T2, limits=lim,
                        cgroup={"demote_run_ms": 3000,
                                "demote_seconds": 0})]) as s:
        t = s.templates()
        for name in ("slow", "kept"):
            with s.client(name) as c:
                env = c.call(code=SPIN_MS, request=50)
                assert env.get("result") == 50, env
                assert cpu_idle_of(t[name]) == "0", (name, s.logtext())
                env = c.call(code=SPIN_MS, request=5000)
                assert env.get("result") == 5000, env
        assert cpu_idle_of(t["slow"]) == "1"
        assert "tenant slow: in the CPU's idle class for 30 s: an execution " \
            "ran past 3000 ms" in s.logtext()
        assert cpu_idle_of(t["kept"]) == "0"
        assert "tenant kept" not in s.logtext()


def test_serve_hostile_tenant_does_not_disturb_another():
    # 64 MB per execution and 96 MB for the tenant as a whole (the bound of
    # the ASan build, which has no RLIMIT_DATA): the memory flood meets one
    # within its CPU second even where each page fault is slow (a nested
    # VM's).
    hostile = tenant("bad", UID_T2,
                     limits={"in_flight": 2, "queue": 2, "memory_mb": 64},
                     cgroup={"memory_mb": 96, "pids": 32, "cpu_millis": 500})
    with Server([tenant("good", UID_T1), hostile]) as s:
        floods = [
            "def handle(r):\n    while True:\n        pass\n",
            "def handle(r):\n    x = []\n    while True:\n        x.append('a' * 10**6)\n",
            "def handle(r):\n    while True:\n        print('z' * 65536)\n",
            "def handle(r):\n    return r\n",
        ]
        stop = threading.Event()
        hostile_types = []

        def storm(code):
            with s.client("bad") as c:
                while not stop.is_set():
                    env = c.call(code=code, request="x")
                    hostile_types.append((env.get("error") or {}).get("type"))

        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            futs = [ex.submit(storm, floods[i % 4]) for i in range(8)]
            time.sleep(0.5)
            # The good tenant calls on until every flood has met its limit
            # at least once (at least 15 calls, at most 60 s).
            def covered():
                kinds = set(hostile_types)
                return ({"MemoryLimit", "OutputLimit", "Busy"} <= kinds and
                        kinds & {"CpuLimit", "Timeout"})
            try:
                with s.client("good") as c:
                    i = 0
                    t0 = time.time()
                    while i < 15 or (not covered() and time.time() - t0 < 60):
                        env = c.call(code="def handle(r):\n    return r * 3\n",
                                     request=i)
                        assert env == {"ok": True, "result": i * 3,
                                       "stdout": ""}, env
                        i += 1
            finally:
                stop.set()
                for f in futs:
                    f.result()
        assert "Busy" in hostile_types, hostile_types
        # The CPU flood ends as CpuLimit, or as Timeout when the tenant's
        # half-CPU quota, shared by its floods, stretches the wall clock.
        kinds = set(hostile_types)
        assert {"MemoryLimit", "OutputLimit"} <= kinds, kinds
        assert kinds & {"CpuLimit", "Timeout"}, kinds


KILLER = """
import os, signal
def handle(r):
    hit = []
    for pid in [-1] + r["pids"]:
        try:
            os.kill(pid, signal.SIGKILL)
            hit.append(pid)
        except OSError:
            pass
    n = 0
    try:
        while n < 200:
            os.fork()
            n += 1
    except OSError:
        pass
    return hit
"""


def test_serve_tenant_cannot_signal_another():
    """A tenant whose handler has real Python (the in-process layers and
    seccomp off) signals every pid it can name, the other tenant's template
    and server included, and forks: the other tenant keeps answering."""
    b = harness.python_bundle(["ast", "builtins", "audit", "seccomp", "landlock"])
    tenants = [tenant("good", UID_T1), tenant("bad", UID_T2, bundle=b)]
    with Server(tenants) as s:
        good = s.templates()["good"]
        with s.client("bad") as c:
            for _ in range(3):
                env = c.call(code=KILLER,
                             request={"pids": [good, s.proc.pid, os.getpid()]})
                # kill(-1) reaches only the child's own PID namespace; the
                # named host pids do not exist there.
                assert env.get("ok") is not False or \
                    env["error"]["type"] != "Unavailable", env
                if env.get("ok"):
                    assert good not in env["result"], env
        assert s.templates()["good"] == good
        with s.client("good") as c:
            assert c.call(code="def handle(r):\n    return r + 1\n",
                          request=1)["result"] == 2


def test_serve_busy_when_queue_full():
    """One execution in flight and no queue: of six at once, some are Busy
    and every other one answers."""
    t = tenant("t1", UID_T1, limits={"in_flight": 1, "queue": 0})
    with Server([t]) as s:
        def call(_):
            with s.client("t1") as c:
                return c.call(code=BURN)
        with concurrent.futures.ThreadPoolExecutor(6) as ex:
            envs = list(ex.map(call, range(6)))
        kinds = [(e.get("error") or {}).get("type") for e in envs]
        assert "Busy" in kinds, envs
        assert all(e.get("result") == 1500000 for e in envs
                   if (e.get("error") or {}).get("type") != "Busy"), envs


# Holds its slot for its CPU second, however fast the machine.
HOLD = "def handle(r):\n    while True:\n        pass\n"


def test_serve_busy_answers_are_paced():
    """Over its cap and queue, a tenant's calls are answered Busy one per
    millisecond at the most: a client calling again at once waits instead
    of spinning the server. Only a lower bound on the time is checked, so
    a slow machine cannot fail it."""
    t = tenant("t1", UID_T1, limits={"in_flight": 1, "queue": 0})
    stop = threading.Event()
    with Server([t]) as s:
        with concurrent.futures.ThreadPoolExecutor(1) as ex:
            def hold():
                # Keeps the slot taken, one CPU second at a time, until the
                # calls below have their Busy answers: they may take the
                # slot first, or in the gap between two holds.
                kinds = []
                with s.client("t1") as c:
                    while not stop.is_set():
                        env = c.call(code=HOLD, request=1)
                        kinds.append((env.get("error") or {}).get("type"))
                return kinds
            fut = ex.submit(hold)
            times, kinds = [], []
            end = time.monotonic() + 60
            with s.client("t1") as c:
                while len(times) < 40 and time.monotonic() < end:
                    env = c.call(code="def handle(r):\n    return r\n",
                                 request=1)
                    kind = (env.get("error") or {}).get("type")
                    if kind == "Busy":
                        times.append(time.monotonic())
                    else:
                        kinds.append(kind)
            stop.set()
            held = fut.result()
    assert len(times) == 40, (kinds, held)
    assert set(held) <= {"Busy", "CpuLimit", "Timeout"}, held
    # n answers one millisecond apart at least: n - 1 gaps.
    assert times[-1] - times[0] >= (len(times) - 1) * 0.001 * 0.95, times


# Lingers on the CPU: stage 2 allows no sleeping system call.
EARLY_THEN_LINGER = """
import os, time
def handle(r):
    os.write(1, b'{"ok":true,"result":"early","stdout":""}\\n')
    os.close(1)
    end = time.monotonic() + r["linger"]
    while time.monotonic() < end:
        pass
    return "late"
"""


def test_serve_answered_child_keeps_its_slot_until_reaped():
    """The server answers once a child has closed a non-empty output, but
    the child keeps its in-flight slot until it is gone. With the
    in-process layers off, a handler writes an envelope, closes its output
    and lingers. The tenant has one slot and no queue: the next call waits
    for the lingering child (its slot lends the queue one place) and a
    third is Busy; a child lingering past the deadline is killed there."""
    b = harness.python_bundle(["ast", "builtins", "audit"])
    t = tenant("t1", UID_T1, bundle=b,
               limits={"in_flight": 1, "queue": 0, "timeout_ms": 3000,
                       "cpu_seconds": 30})
    one = "def handle(r):\n    return 1\n"
    with Server([t]) as s:
        def call(code, request=None):
            with s.client("t1") as c:
                t0 = time.monotonic()
                env = c.call(code=code, request=request)
                return env, time.monotonic() - t0

        with concurrent.futures.ThreadPoolExecutor(2) as ex:
            for linger, least in ((2, 1.5), (60, 2.5)):
                t0 = time.monotonic()
                env, took = call(EARLY_THEN_LINGER, {"linger": linger})
                assert env == {"ok": True, "result": "early",
                               "stdout": ""}, env
                assert took < 1.5, "the answer waited for the exit (%.1fs)" % took
                waiter = ex.submit(call, one)
                time.sleep(0.3)
                busy, _ = call(one)
                assert (busy.get("error") or {}).get("type") == "Busy", busy
                env, _ = waiter.result(timeout=30)
                waited = time.monotonic() - t0
                assert env.get("result") == 1, env
                # Not before the lingering child was gone: after its two
                # seconds, or ended by the 3 s wall clock (its in-guest
                # timer, or the server's kill a second later).
                assert least < waited < least + 8, (linger, waited)


# ---------------------------------------------------------------- templates

def test_serve_template_crash_is_replaced():
    with Server([tenant("t1", UID_T1)]) as s:
        old = s.templates()["t1"]
        os.kill(old, signal.SIGKILL)
        with s.client("t1") as c:
            env = c.call(code="def handle(r):\n    return 'after'\n")
        assert env == {"ok": True, "result": "after", "stdout": ""}, env
        new = s.templates()["t1"]
        assert new != old


def test_serve_template_recycled_after_n_requests():
    t = tenant("t1", UID_T1, recycle={"requests": 3})
    with Server([t]) as s, s.client("t1") as c:
        pids = set()
        for _ in range(7):
            assert c.call(code="def handle(r):\n    return 1\n")["ok"]
            pids.update(s.templates().values())
        assert len(pids) >= 2, pids


# ---------------------------------------------------------------- operation

def test_serve_sigterm_finishes_in_flight():
    s = Server([tenant("t1", UID_T1)])
    with s:
        with concurrent.futures.ThreadPoolExecutor(1) as ex:
            def slow():
                with s.client("t1") as c:
                    return c.call(code=BURN)
            fut = ex.submit(slow)
            time.sleep(0.1)
            s.proc.send_signal(signal.SIGTERM)
            assert fut.result()["result"] == 1500000
        assert s.proc.wait(timeout=30) == 0
        assert not os.path.exists(s.sock)


def test_serve_sighup_reloads_the_config():
    """SIGHUP applies a tenant's new peers and limits and replaces its
    template; a config that does not load keeps the running one."""
    with Server([tenant("t1", UID_T1)]) as s:
        old = s.templates()["t1"]
        with open(s.config) as f:
            cfg = json.load(f)
        with open(s.config, "w") as f:
            f.write("{broken")
        s.proc.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        with s.client("t1") as c:
            assert c.call(code="def handle(r):\n    return 1\n")["ok"]
        cfg["tenants"][0]["allow"] = {"uids": [4242]}
        with open(s.config, "w") as f:
            json.dump(cfg, f)
        s.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 10
        env = None
        while time.time() < deadline:
            with s.client("t1") as c:
                env = c.call(code="def handle(r):\n    return 1\n")
            if not env.get("ok"):
                break
            time.sleep(0.05)
        assert env["error"]["type"] == "Forbidden", env
        deadline = time.time() + 10
        while s.templates().get("t1") == old and time.time() < deadline:
            time.sleep(0.05)
        assert s.templates().get("t1") != old
        assert "reload" in s.logtext()


def scrape(s):
    """The server's Prometheus text, from its --metrics socket."""
    m = socket.socket(socket.AF_UNIX)
    m.connect(s.metrics)
    m.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
    text = b""
    while True:
        chunk = m.recv(65536)
        if not chunk:
            break
        text += chunk
    m.close()
    return text.decode()


def test_serve_metrics_and_failure_log():
    with Server([tenant("t1", UID_T1)], metrics=True) as s:
        with s.client("t1") as c:
            c.call(code="def handle(r):\n    return 1\n")
            c.call(code="def handle(r):\n    raise KeyError('k')\n")
        text = scrape(s)
        # The warm-up call counts too.
        assert 'coil_serve_requests_total{tenant="t1",outcome="ok"} 2' in text, text
        assert 'coil_serve_requests_total{tenant="t1",outcome="Exception"} 1' in text
        assert 'coil_serve_latency_seconds_count{tenant="t1"} 3' in text
        assert "serve: tenant t1: Exception" in s.logtext()


def test_serve_templates_do_not_run_from_the_host_binary():
    """serve re-executes from a protected handle like create/run/py: its
    templates (and so every child) do not have the binary it was started
    from as /proc/PID/exe."""
    d = harness.tmpdir()
    copy = os.path.join(d, "coil")
    shutil.copy2(harness.COIL, copy)
    # Its Python object goes beside it, where coil looks for it.
    shutil.copy2(harness.COIL_PYTHON,
                 os.path.join(d, os.path.basename(harness.COIL_PYTHON)))
    with Server([tenant("t1", UID_T1)], binary=copy,
                bundle=DEFAULT_BUNDLE) as s:
        tpid = s.templates()["t1"]
        for pid in (tpid, s.proc.pid):
            link = os.readlink("/proc/%d/exe" % pid)
            assert link != copy, (pid, link)


def test_serve_template_maps_no_container_building_library():
    """Every mapping of the template is copied by each child's clone and
    torn down by its exit, so the template unloads libmount (and what it
    alone brought: libblkid, libselinux, libpcre2) once the container is
    built; its children, cloned from it, have none of them either."""
    with Server([tenant("t1", UID_T1)]) as s, s.client("t1") as c:
        assert c.call(code="def handle(r):\n    return 1\n",
                      request={}).get("ok")
        tpid = s.templates()["t1"]
        with open("/proc/%d/maps" % tpid) as f:
            maps = f.read()
        for lib in ("libmount.so", "libblkid.so", "libselinux.so",
                    "libpcre2-8.so"):
            assert lib not in maps, (lib, maps)


def test_serve_config_errors():
    d = harness.tmpdir()
    cases = [
        ({}, "tenants"),
        ({"tenants": []}, "tenants"),
        ({"tenants": [{"name": "a b", "uid": 5, "gid": 5,
                       "allow": {"uids": [0]}}]}, "tenants[0].name"),
        ({"tenants": [{"name": "a", "uid": 0, "gid": 5,
                       "allow": {"uids": [0]}}]}, "tenants[0]"),
        ({"tenants": [tenant("a", 7), tenant("b", 7)]}, "tenants[1]"),
        ({"tenants": [tenant("a", 7, limits={"timeout_ms": -1})]},
         "tenants[0].limits.timeout_ms"),
        ({"tenants": [tenant("a", 7, limits={"memory_mb": 10,
                                             "max_memory_mb": 5})]},
         "tenants[0].limits"),
        ({"tenants": [{"name": "a", "uid": 7, "gid": 7}]}, "allow"),
        ({"tenants": [tenant("a", 7, cgroup={"cpu_idle": 1})]},
         "tenants[0].cgroup.cpu_idle"),
        ({"tenants": [tenant("a", 7, cgroup={"demote_seconds": -1})]},
         "tenants[0].cgroup.demote_seconds"),
    ]
    for cfg, field in cases:
        path = os.path.join(d, "c.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        sock = os.path.join(d, "s.sock")
        r = harness.coil("serve", "--socket", sock, "--config", path,
                         root=harness.new_root(), timeout=20)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 1 and len(lines) == 1 and field in lines[0], \
            (cfg, describe(r))
        assert not os.path.exists(sock)


# ---------------------------------------------------------------- memory

def test_serve_memory_bombs_stopped_by_either_bound_alone():
    """Memory is bounded twice on the warm path as under coil py: with the
    cgroup layer off each execution's RLIMIT_DATA stops every bomb, with the
    rlimit-memory layer off the tenant's cgroup does. Each ends as
    MemoryLimit, and the host memory the whole server tree took (measured
    from a capped cgroup serve runs in) grows by no more than that bound
    plus headroom. The plain product binary serves: the ASan build has no
    RLIMIT_DATA (test_python_limits.py says why)."""
    import test_python_limits as lim
    d, enter = harness.capped_cgroup()
    rl_limit, cg_limit = 64 << 20, 160 << 20
    tenants = [
        tenant("rl", UID_T1, bundle=harness.python_bundle(["cgroup"]),
               limits={"memory_mb": rl_limit >> 20, "timeout_ms": 30000}),
        tenant("cg", UID_T2, bundle=harness.python_bundle(["rlimit-memory"]),
               limits={"timeout_ms": 30000},
               cgroup={"memory_mb": cg_limit >> 20}),
    ]
    bad = []

    def cg_file(name, value=None):
        with open(os.path.join(d, name), "w" if value else "r") as f:
            return f.write(value) if value else int(f.read())

    with Server(tenants, binary=lim.PLAIN_COIL, preexec=enter) as s:
        for t, bound in (("rl", rl_limit), ("cg", cg_limit)):
            for name, code in lim.BOMBS:
                cg_file("memory.max_usage_in_bytes", "0")
                base = cg_file("memory.usage_in_bytes")
                with s.client(t) as c:
                    env = c.call(code=lim.handler(code))
                grew = cg_file("memory.max_usage_in_bytes") - base
                etype = ((env or {}).get("error") or {}).get("type")
                if etype != "MemoryLimit":
                    bad.append("%s, tenant %s: %r" % (name, t, env))
                if grew >= bound + (32 << 20):
                    bad.append("%s, tenant %s: grew %d MiB, bound %d MiB" % (
                        name, t, grew >> 20, bound >> 20))
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------- attacks

def test_serve_attack_corpus_contained_as_under_coil_py():
    """The attack corpus of test_python_security through coil call: with
    the whole stack each attack ends exactly as it does under coil py (the
    gate line, or its own limit); with each single layer off nothing leaks
    and the host does not change."""
    import test_python_security as sec_tests
    sec = sec_tests.Secrets()
    layers = [None] + sec_tests.LAYERS
    tenants, names = [], {}
    for i, layer in enumerate(layers):
        name = "full" if layer is None else layer
        names[layer] = name
        # A long wall clock: the CPU attacks must meet their CPU limit even
        # on a loaded host.
        tenants.append(tenant(name, 330000 + i * 10,
                              bundle=harness.python_bundle([layer] if layer else []),
                              limits={"timeout_ms": 30000}))
    problems = []
    with Server(tenants, env=sec.env()) as s:
        def run(path, layer):
            code_file, text = sec_tests.prepare(path, sec)
            r = s.call("--request", "{}", "--entry", "handle", code_file,
                       tenant=names[layer], env=sec.env())
            return path, layer, r, text

        with concurrent.futures.ThreadPoolExecutor(3) as ex:
            futs = [ex.submit(run, p, layer) for p in sec_tests.attack_paths()
                    for layer in layers]
            for f in futs:
                path, layer, r, text = f.result()
                aid = sec_tests.attack_id(path)
                leaks = sec.leaked(r.stdout, r.stderr)
                if leaks:
                    problems.append("%s: LEAK of %s with %s off\n%s" % (
                        aid, leaks, names[layer], describe(r)))
                if layer is None:
                    sec_tests.check_full_stack(aid, r, text, problems)
                elif r.returncode in (None, 125):
                    problems.append("%s, %s off: not run (%s)\n%s" % (
                        aid, names[layer], sec_tests.classify(r), describe(r)))
    changes = sec.host_changes()
    assert not changes, changes
    assert not problems, "\n\n".join(problems)
