"""The OAST listener's integration cases, each a function case_NAME(backend)
run against a real listener (oast/listener.py) on free loopback ports, real
clients (dig over UDP and TCP, curl) and a real coil backend. test_oast.py
runs them with the `py` backend; test_oast_serve.py with `serve`."""

import hashlib
import hmac
import json
import os
import select
import signal
import socket
import statistics
import struct
import subprocess
import threading
import time

import harness

LISTENER = os.path.join(harness.REPO, "oast", "listener.py")
HANDLERS = os.path.join(harness.REPO, "oast", "handlers")
PYTHON = "/usr/bin/python3"
SECRET = "test-secret-0123456789abcdef"

# Tenant t2's handlers: each misbehaves in one way.
HOSTILE = {
    "cpu": "def handle(r):\n    while True:\n        pass\n",
    "mem": "def handle(r):\n    x = 'a' * (10 ** 10)\n    return {'answers': []}\n",
    "fork": "import os\n\n\ndef handle(r):\n    while True:\n        os.fork()\n",
    "err": "def handle(r):\n    raise ValueError('boom')\n",
    "out": "def handle(r):\n    while True:\n        print('x' * 65536)\n",
    "deep": "def f(n):\n    return f(n + 1)\n\n\ndef handle(r):\n    return f(0)\n",
    "shape": (
        "BAD = {\n"
        "    'badip': {'answers': [{'type': 'A', 'value': '300.1.1.1', 'ttl': 1}]},\n"
        "    'wrongtype': {'answers': [{'type': 'AAAA', 'value': '::1', 'ttl': 1}]},\n"
        "    'extra': {'answers': [], 'surprise': 1},\n"
        "    'ttl': {'answers': [{'type': 'A', 'value': '1.2.3.4', 'ttl': -1}]},\n"
        "    'nottl': {'answers': [{'type': 'A', 'value': '1.2.3.4'}]},\n"
        "    'longtxt': {'answers': [{'type': 'TXT', 'value': 'x' * 300, 'ttl': 1}]},\n"
        "    'cname': {'answers': [{'type': 'CNAME', 'value': 'a.example', 'ttl': 1},\n"
        "                          {'type': 'A', 'value': '1.2.3.4', 'ttl': 1}]},\n"
        "    'rcode': {'rcode': 'NXDOMAIN', 'answers': [{'type': 'A', 'value': '1.2.3.4', 'ttl': 1}]},\n"
        "    'notdict': [1, 2],\n"
        "    'bigstate': {'answers': [], 'state': {'x': 'y' * 5000}},\n"
        "    'status': {'status': 99},\n"
        "    'framing': {'status': 200, 'headers': {'Content-Length': '5'}},\n"
        "    'crlf': {'status': 200, 'headers': {'X-A': 'a\\r\\nSet-Cookie: x=1'}},\n"
        "}\n\n\n"
        "def handle(r):\n"
        "    key = r['qname'].split('.')[0] if r['kind'] == 'dns' else r['path'].strip('/')\n"
        "    return BAD[key]\n"),
    "echo": "def handle(r):\n    return {'status': 200, 'body': r['body'] or '',"
            " 'headers': {'X-Truncated': str(r['body_truncated']),"
            " 'X-Method': r['method'], 'X-Query': r['query']}}\n",
}
SHAPES = ["badip", "wrongtype", "extra", "ttl", "nottl", "longtxt", "cname", "rcode",
          "notdict", "bigstate"]
HTTP_SHAPES = ["status", "framing", "crlf", "notdict"]


def config(**t1_limits):
    """Tenants t1 (the example handlers) and t2 (hostile; one slot, a short
    queue and a short timeout)."""
    t1_rules = [["127.0.0.2/32", "198.51.100.2"], ["127.0.0.0/8", "198.51.100.1"]]
    return {
        "defaults": {"timeout_ms": 5000, "queue_ms": 5000, "memory_mb": 64,
                     "max_inflight": 2, "max_queue": 64},
        "tenants": {
            "t1": {
                "zones": ["t1.oast.test"],
                "secret": SECRET,
                "params": {"source_rules": t1_rules},
                "limits": t1_limits,
                "handlers": {
                    "rebind": os.path.join(HANDLERS, "rebind.py"),
                    "by_source": os.path.join(HANDLERS, "by_source.py"),
                    "hmac_txt": os.path.join(HANDLERS, "hmac_txt.py"),
                    "redirect_chain": os.path.join(HANDLERS, "redirect_chain.py"),
                    "echo": "echo.py",
                },
                "dns": {"rebind": "rebind", "net": "by_source", "tok": "hmac_txt",
                        "static": {"static": {"answers": [
                            {"type": "A", "value": "192.0.2.53", "ttl": 60}]}}},
                "http": {"redir": "redirect_chain", "net": "by_source",
                         "echo": "echo"},
            },
            "t2": {
                "zones": ["t2.oast.test"],
                "limits": {"max_inflight": 1, "max_queue": 4, "timeout_ms": 700,
                           "queue_ms": 2000, "log_per_s": 1000},
                "handlers": dict(
                    [(n, n + ".py") for n in HOSTILE if n != "echo"] +
                    [("hmac_txt", os.path.join(HANDLERS, "hmac_txt.py"))]),
                "dns": dict([(n, n) for n in HOSTILE if n not in ("echo", "shape")] +
                            [("tok", "hmac_txt"), ("*", "shape")]),
                "http": {"*": "shape"},
            },
        },
    }


LIVE = []


class Listener:
    """oast/listener.py on free loopback ports, stopped (SIGTERM, waited)
    at the end of the test; checks that it left no coil run behind."""

    def __init__(self, backend, cfg=None, loop="uvloop", env=None):
        serve_socket = SERVE["socket"] if backend == "serve" else None
        self.dir = harness.tmpdir()
        self.root = harness.new_root()
        for name, code in HOSTILE.items():
            with open(os.path.join(self.dir, name + ".py"), "w") as f:
                f.write(code)
        self.cfg = cfg or config()
        self.cfg_path = os.path.join(self.dir, "config.json")
        with open(self.cfg_path, "w") as f:
            json.dump(self.cfg, f)
        self.err_path = os.path.join(self.dir, "listener.err")
        argv = [PYTHON, LISTENER, "--config", self.cfg_path, "--backend", backend,
                "--dns", "127.0.0.1:0", "--http", "127.0.0.1:0",
                "--coil", harness.COIL, "--coil-root", self.root]
        if serve_socket:
            argv += ["--serve-socket", serve_socket]
        self.err = open(self.err_path, "w")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                     stderr=self.err, stdin=subprocess.DEVNULL,
                                     env=env)
        LIVE.append(self)
        harness.on_cleanup(self.stop)
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        line = self.proc.stdout.readline() if ready else b""
        assert line, "listener did not start:\n" + self.log()
        self.ready = json.loads(line)
        self.dns_port = self.ready["dns"][1]
        self.http_port = self.ready["http"][1]
        # make check installs python3-uvloop: every case runs on it.
        assert self.ready["loop"] == loop, self.ready

    def log(self):
        self.err.flush()
        with open(self.err_path) as f:
            return f.read()

    def stop(self):
        """SIGTERM, exit 0, and nothing of coil's left under its root."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("listener ignored SIGTERM:\n" + self.log())
        self.proc.stdout.close()
        self.err.close()
        assert self.proc.returncode == 0, "listener exit %s:\n%s" % (
            self.proc.returncode, self.log())
        left = [e for e in os.listdir(self.root)
                if os.path.isdir(os.path.join(self.root, e))]
        assert not left, "coil runs left under %s: %s" % (self.root, left)
        assert not coil_processes(self.root), coil_processes(self.root)

    def dig(self, name, qtype="A", tcp=False, src=None, short=True):
        argv = ["dig", "@127.0.0.1", "-p", str(self.dns_port), name, qtype,
                "+time=10", "+tries=1"]
        if tcp:
            argv.append("+tcp")
        if src:
            argv += ["-b", src]
        if short:
            argv.append("+short")
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, "dig failed: %s %s" % (r.stdout, r.stderr)
        return r.stdout

    def status(self, name, qtype="A", tcp=False):
        out = self.dig(name, qtype, tcp=tcp, short=False)
        for line in out.splitlines():
            if "status:" in line:
                return line.split("status:")[1].split(",")[0].strip()
        raise AssertionError("no status in dig output:\n" + out)

    def curl(self, host, path, *extra):
        argv = ["curl", "-sS", "--max-time", "30", "-o", "-", "-w",
                "\n%{http_code} %{num_redirects}",
                "--resolve", "%s:%d:127.0.0.1" % (host, self.http_port)]
        argv += list(extra) + ["http://%s:%d%s" % (host, self.http_port, path)]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, "curl failed: %s %s" % (r.stdout, r.stderr)
        body, _, tail = r.stdout.rpartition("\n")
        code, redirects = tail.split()
        return int(code), int(redirects), body

    def query(self, name, qtype=1, timeout=30.0):
        """One UDP query by hand: (seconds, rcode, [A addresses])."""
        qid = int.from_bytes(os.urandom(2), "big")
        q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
        for label in name.split("."):
            q += bytes([len(label)]) + label.encode()
        q += b"\0" + struct.pack(">HH", qtype, 1)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(timeout)
            t0 = time.perf_counter()
            s.sendto(q, ("127.0.0.1", self.dns_port))
            while True:
                data = s.recv(4096)
                if data[:2] == q[:2]:
                    break
            dt = time.perf_counter() - t0
        rcode = data[3] & 0xF
        addrs = []
        if rcode == 0 and data[7]:
            # answers follow the question: name pointer (2), type, class,
            # ttl, rdlength, rdata
            off = len(q)
            for _ in range(struct.unpack(">H", data[6:8])[0]):
                rtype, _, _, rdlen = struct.unpack(">HHIH", data[off + 2:off + 12])
                rd = data[off + 12:off + 12 + rdlen]
                if rtype == 1:
                    addrs.append(".".join(str(b) for b in rd))
                off += 12 + rdlen
        return dt, rcode, addrs


def coil_processes(root):
    out = []
    for ent in os.listdir("/proc"):
        if not ent.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % ent, "rb") as f:
                cmd = f.read().split(b"\0")
        except OSError:
            continue
        if root.encode() in cmd:
            out.append(int(ent))
    return out


def _ppid(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _runs_t2_handler(pid, d):
    """pid is `coil ... py ... D/NAME.py` (not a fork of the listener that
    has not exec'd yet: it shows the listener's own command line)."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = f.read().decode(errors="replace").split("\0")
    except OSError:
        return False
    return "py" in argv and any(a.startswith(d + "/") and a.endswith(".py")
                                for a in argv)


def assert_logged(lst, *words):
    log = lst.log()
    for line in log.splitlines():
        if all(w in line for w in words):
            return line
    raise AssertionError("no log line with %r in:\n%s" % (words, log[-4000:]))


# ---------------------------------------------------------------- cases

def case_dns_rebind_udp_and_tcp(backend):
    lst = Listener(backend)
    # the first answer per name is the public address, every later one loopback
    assert lst.dig("a.rebind.t1.oast.test").split() == ["203.0.113.10"]
    assert lst.dig("a.rebind.t1.oast.test").split() == ["127.0.0.1"]
    assert lst.dig("a.rebind.t1.oast.test", tcp=True).split() == ["127.0.0.1"]
    # another name starts over, over TCP too; AAAA keeps its own count
    assert lst.dig("b.rebind.t1.oast.test", tcp=True).split() == ["203.0.113.10"]
    assert lst.dig("b.rebind.t1.oast.test", "AAAA").split() == ["2001:db8::10"]
    assert lst.dig("b.rebind.t1.oast.test", "AAAA", tcp=True).split() == ["::1"]
    assert lst.dig("b.rebind.t1.oast.test").split() == ["127.0.0.1"]
    out = lst.dig("c.rebind.t1.oast.test", short=False)
    assert "flags: qr aa" in out and "\t0\tIN\tA\t203.0.113.10" in out, out
    # one tenant's state is not another's: t2 has no rebind route
    assert lst.status("a.rebind.t2.oast.test") == "SERVFAIL"


def case_dns_rebind_same_name_at_once(backend):
    """Queries for one name that arrive together still see one another's
    state: exactly one of them gets the public address."""
    lst = Listener(backend)
    got = []

    def ask():
        got.append(lst.query("same.rebind.t1.oast.test")[1:])

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == [(0, ["127.0.0.1"])] * 3 + [(0, ["203.0.113.10"])], got


def case_dns_by_source_network(backend):
    lst = Listener(backend)
    assert lst.dig("net.t1.oast.test", src="127.0.0.1").split() == ["198.51.100.1"]
    assert lst.dig("net.t1.oast.test", src="127.0.0.2").split() == ["198.51.100.2"]
    assert lst.dig("net.t1.oast.test", src="127.0.0.2", tcp=True).split() == \
        ["198.51.100.2"]
    code, _, body = lst.curl("net.t1.oast.test", "/", "--interface", "127.0.0.2")
    assert code == 200 and body == "127.0.0.2 matched 127.0.0.2/32: 198.51.100.2\n", \
        body
    # no A answer for other types: NOERROR, no records
    assert lst.dig("net.t1.oast.test", "TXT") == ""
    assert lst.status("net.t1.oast.test", "TXT") == "NOERROR"


def case_dns_hmac_txt_token(backend):
    lst = Listener(backend)
    with open(os.path.join(HANDLERS, "hmac_txt.py")) as f:
        assert SECRET not in f.read()
    for tcp in (False, True):
        name = "n%d.tok.t1.oast.test" % tcp
        before = int(time.time()) // 300
        out = lst.dig(name, "TXT", tcp=tcp).strip().strip('"')
        after = int(time.time()) // 300
        fields = dict(kv.split("=", 1) for kv in out.split())
        w = int(fields["w"])
        assert fields["v"] == "oast1" and before <= w <= after, out
        want = hmac.new(SECRET.encode(), ("%s|%d" % (name, w)).encode(),
                        hashlib.sha256).hexdigest()
        assert fields["t"] == want, (out, want)
    # t2 has no secret configured: its handler raises, the answer is SERVFAIL
    assert lst.status("tok.t2.oast.test", "TXT") == "SERVFAIL"
    assert_logged(lst, "tenant t2", "tok.t2.oast.test", "ValueError", "SERVFAIL")


def case_http_redirect_chain(backend):
    lst = Listener(backend)
    code, hops, body = lst.curl("redir.t1.oast.test", "/chain/3", "-L")
    assert (code, hops, body) == (200, 3, "end of chain\n"), (code, hops, body)
    code, _, body = lst.curl("redir.t1.oast.test", "/chain/2")
    assert (code, body) == (302, "hop 2\n"), (code, body)
    r = subprocess.run(["curl", "-sSi", "-H", "Host: redir.t1.oast.test",
                        "http://127.0.0.1:%d/chain/1" % lst.http_port],
                       capture_output=True, text=True, timeout=60)
    assert "\nLocation: /chain/0\n" in r.stdout, r.stdout
    code, _, body = lst.curl("redir.t1.oast.test", "/elsewhere")
    assert code == 404 and "try /chain/3" in body
    code, _, body = lst.curl("nothing.t1.oast.test", "/")
    assert code == 404, (code, body)
    code, _, body = lst.curl("unknown.example", "/")
    assert code == 404, (code, body)


def case_http_request_limits(backend):
    cfg = config(http_body_max=1024)
    lst = Listener(backend, cfg)
    code, _, body = lst.curl("echo.t1.oast.test", "/x?a=1", "-X", "POST",
                             "--data-binary", "hello")
    assert (code, body) == (200, "hello"), (code, body)
    r = subprocess.run(["curl", "-sSi", "--resolve", "echo.t1.oast.test:%d:127.0.0.1"
                        % lst.http_port, "--data-binary", "y" * 40000,
                        "http://echo.t1.oast.test:%d/big?q=2" % lst.http_port],
                       capture_output=True, text=True, timeout=60)
    head, _, body = r.stdout.partition("\n\n")  # text mode: \r\n read as \n
    assert body == "y" * 1024, (head, len(body))
    assert "X-Truncated: True" in head and "X-Query: q=2" in head, head
    code, _, _ = lst.curl("echo.t1.oast.test", "/", "-H", "Transfer-Encoding: chunked",
                          "--data-binary", "abc")
    assert code == 501, code
    with socket.create_connection(("127.0.0.1", lst.http_port), timeout=30) as s:
        s.sendall(b"NONSENSE\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 400 "), "bad request line"
    with socket.create_connection(("127.0.0.1", lst.http_port), timeout=30) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: echo.t1.oast.test\r\nX-Big: " +
                  b"a" * 20000 + b"\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 431 "), "head over 16 KiB"


def case_static_zone_and_authority(backend):
    lst = Listener(backend)
    assert lst.dig("static.t1.oast.test").split() == ["192.0.2.53"]
    assert lst.dig("x.static.t1.oast.test", tcp=True).split() == ["192.0.2.53"]
    assert lst.status("static.t1.oast.test", "AAAA") == "NOERROR"
    assert lst.status("nope.t1.oast.test") == "NXDOMAIN"
    assert lst.status("www.example.com") == "REFUSED"
    assert lst.dig("t1.oast.test", "SOA").startswith("ns.t1.oast.test. ")
    assert lst.dig("t1.oast.test", "NS", tcp=True).strip() == "ns.t1.oast.test."
    # garbage, a reply and a zero-question query: no answer or FORMERR, and
    # the listener goes on serving
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for junk in (b"", b"\x01", os.urandom(300), struct.pack(
                ">HHHHHH", 7, 0x8100, 1, 0, 0, 0) + b"\0\0\1\0\1"):
            s.sendto(junk, ("127.0.0.1", lst.dns_port))
        s.settimeout(10)
        s.sendto(struct.pack(">HHHHHH", 9, 0x0100, 0, 0, 0, 0),
                 ("127.0.0.1", lst.dns_port))
        data = s.recv(512)
        assert data[:2] == b"\0\x09" and data[3] & 0xF == 1, data  # FORMERR
    with socket.create_connection(("127.0.0.1", lst.dns_port), timeout=30) as s:
        s.sendall(b"\0\x05abcde\xff\xff")  # junk, then a length never met
    assert lst.dig("static.t1.oast.test", tcp=True).split() == ["192.0.2.53"]


def case_largest_udp_query_is_read_whole(backend):
    """A query as large as a UDP datagram can be (EDNS padding fills it) is
    read whole and answered: the listener's reads are not cut short."""
    lst = Listener(backend)
    q = struct.pack(">HHHHHH", 0x4242, 0x0100, 1, 0, 0, 1)
    for label in "static.t1.oast.test".split("."):
        q += bytes([len(label)]) + label.encode()
    q += b"\0" + struct.pack(">HH", 1, 1)
    pad = 65507 - len(q) - 11 - 4  # the largest IPv4 UDP payload
    q += b"\0" + struct.pack(">HHIH", 41, 4096, 0, pad + 4)
    q += struct.pack(">HH", 12, pad) + bytes(pad)
    assert len(q) == 65507
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(30)
        s.sendto(q, ("127.0.0.1", lst.dns_port))
        data = s.recv(4096)
    assert data[:2] == b"\x42\x42" and data[3] & 0xF == 0, data[:12]
    assert struct.unpack(">H", data[6:8])[0] == 1, data
    assert bytes([192, 0, 2, 53]) in data, data


def case_serves_on_asyncio_without_uvloop(backend):
    """Where uvloop is not installed the listener serves the same on
    asyncio's own loop (a uvloop that cannot be imported stands in)."""
    hide = harness.tmpdir()
    with open(os.path.join(hide, "uvloop.py"), "w") as f:
        f.write("raise ImportError('uvloop hidden by the test')\n")
    lst = Listener(backend, loop="asyncio",
                   env=dict(os.environ, PYTHONPATH=hide))
    assert lst.dig("static.t1.oast.test").split() == ["192.0.2.53"]
    assert lst.dig("x.static.t1.oast.test", tcp=True).split() == ["192.0.2.53"]
    assert lst.query("net.t1.oast.test")[1:] == (0, ["198.51.100.1"])
    code, _, body = lst.curl("net.t1.oast.test", "/")
    assert code == 200 and "198.51.100.1" in body, body


def case_bad_results_are_handler_errors(backend):
    lst = Listener(backend)
    for shape in SHAPES:
        assert lst.status(shape + ".t2.oast.test") == "SERVFAIL", shape
        assert_logged(lst, "tenant t2", shape + ".t2.oast.test", "SERVFAIL")
    assert_logged(lst, "badip.t2.oast.test", "not an IPv4 address")
    assert_logged(lst, "bigstate.t2.oast.test", "result.state", "over the tenant")
    for shape in HTTP_SHAPES:
        code, _, _ = lst.curl("x.t2.oast.test", "/" + shape)
        assert code == 502, (shape, code)
        assert_logged(lst, "tenant t2", "/" + shape, "502")
    # the gate refuses the fork flood before it runs: never started
    assert lst.status("fork.t2.oast.test") == "SERVFAIL"
    assert_logged(lst, "handler fork is never run", "GateViolation")
    # t1 was never disturbed
    assert lst.dig("net.t1.oast.test").split() == ["198.51.100.1"]


def case_limits_give_safe_defaults(backend):
    lst = Listener(backend)
    for name, why in (("cpu", "Timeout"), ("mem", "MemoryLimit"),
                      ("err", "ValueError"), ("out", "OutputLimit"),
                      ("deep", "RecursionError")):
        assert lst.status(name + ".t2.oast.test") == "SERVFAIL", name
        assert_logged(lst, "tenant t2", name + ".t2.oast.test", why, "SERVFAIL")
    assert lst.dig("net.t1.oast.test", tcp=True).split() == ["198.51.100.1"]


def case_state_is_bounded(backend):
    lst = Listener(backend, config(state_keys_max=2))
    for k in ("k1", "k2", "k3"):
        assert lst.dig(k + ".rebind.t1.oast.test").split() == ["203.0.113.10"], k
    # k3 and k2 are remembered; k1 was the least recently used and dropped
    assert lst.dig("k3.rebind.t1.oast.test").split() == ["127.0.0.1"]
    assert lst.dig("k2.rebind.t1.oast.test").split() == ["127.0.0.1"]
    assert lst.dig("k1.rebind.t1.oast.test").split() == ["203.0.113.10"]


def _median_latency(lst, name, want, n):
    times = []
    for _ in range(n):
        dt, rcode, addrs = lst.query(name)
        assert rcode == 0 and addrs == [want], (name, rcode, addrs)
        times.append(dt)
    return statistics.median(times)


def case_hostile_tenant_does_not_disturb_t1(backend):
    """t2 floods (CPU, memory, fork, errors, timeouts and a query storm);
    t1's answers stay the same and its median latency within a generous
    multiple of its quiet median measured in this test."""
    lst = Listener(backend)
    n = 15
    _median_latency(lst, "net.t1.oast.test", "198.51.100.1", 3)  # warm up
    quiet = _median_latency(lst, "net.t1.oast.test", "198.51.100.1", n)
    stop = threading.Event()
    outcomes = []

    def attack(names):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(0.05)
            i = 0
            while not stop.is_set():
                name = names[i % len(names)]
                i += 1
                q = struct.pack(">HHHHHH", i & 0xFFFF, 0x0100, 1, 0, 0, 0)
                for label in name.split("."):
                    q += bytes([len(label)]) + label.encode()
                s.sendto(q + b"\0\0\1\0\1", ("127.0.0.1", lst.dns_port))
                try:
                    while True:
                        data = s.recv(4096)
                        outcomes.append(data[3] & 0xF)
                except socket.timeout:
                    pass

    floods = ["cpu", "mem", "fork", "err", "out", "deep", "badip"]
    threads = [threading.Thread(target=attack, args=(
        ["%s.t2.oast.test" % f for f in floods[i:] + floods[:i]],))
        for i in range(4)]
    peak = [0]

    def sample():
        # the py backend's t2 runs: the listener's children
        # `coil ... py ... <lst.dir>/X.py` (each has its sandbox as a child)
        while not stop.is_set():
            n2 = sum(1 for pid in coil_processes(lst.root)
                     if _runs_t2_handler(pid, lst.dir) and
                     _ppid(pid) == lst.proc.pid)
            peak[0] = max(peak[0], n2)
            time.sleep(0.005)

    if backend == "py":
        threads.append(threading.Thread(target=sample))
    for t in threads:
        t.start()
    try:
        time.sleep(1.0)
        loaded = _median_latency(lst, "net.t1.oast.test", "198.51.100.1", n)
        # a fresh rebinding name still goes public, then loopback
        assert lst.dig("z.rebind.t1.oast.test").split() == ["203.0.113.10"]
        assert lst.dig("z.rebind.t1.oast.test", tcp=True).split() == ["127.0.0.1"]
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert outcomes and set(outcomes) == {2}, "t2 got: %r" % set(outcomes)
    if backend == "py":
        # t2's max_inflight is 1: never two of its sandboxes at once, even
        # while its timed-out ones are being stopped
        assert peak[0] == 1, "t2 ran %d sandboxes at once" % peak[0]
    assert_logged(lst, "tenant t2", "Busy")
    ratio = loaded / quiet
    print("# t1 median %.1f ms quiet, %.1f ms under attack (%.1fx)" % (
        quiet * 1e3, loaded * 1e3, ratio))
    assert ratio < 25, "t1 median %.1f ms under attack vs %.1f ms quiet (%.1fx)" % (
        loaded * 1e3, quiet * 1e3, ratio)


def case_stops_cleanly_mid_call(backend):
    lst = Listener(backend)
    pending = subprocess.Popen(["dig", "@127.0.0.1", "-p", str(lst.dns_port),
                                "cpu.t2.oast.test", "+time=10", "+tries=1"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 20
    while backend == "py" and not coil_processes(lst.root) and time.time() < deadline:
        time.sleep(0.02)
    lst.stop()
    pending.kill()
    pending.communicate()


def case_config_errors(backend):
    d = harness.tmpdir()
    bad = [
        ({"tenants": {}}, "tenants: expected at least one tenant"),
        ({"tenants": {"T!": {"zones": ["a.test"]}}}, "tenants.T!:"),
        ({"tenants": {"t1": {"zones": ["a.test"], "handlers": {"h": "missing.py"}}}},
         "tenants.t1.handlers.h: no such file"),
        ({"tenants": {"t1": {"zones": ["a.test"], "dns": {"x": "nohandler"}}}},
         "tenants.t1.dns.x: no handler named"),
        ({"tenants": {"t1": {"zones": ["a.test"], "dns": {"x": {"static": {
            "answers": [{"type": "A", "value": "1.2.3", "ttl": 1}]}}}}}},
         "tenants.t1.dns.x.static: static.answers[0].value: not an IPv4"),
        ({"tenants": {"t1": {"zones": ["a.test"]}, "t2": {"zones": ["A.test."]}}},
         "tenants.t2.zones[0]: zone a.test is already tenant t1's"),
        ({"tenants": {"t1": {"zones": ["a.test"], "limits": {"max_inflight": 0}}}},
         "tenants.t1.limits.max_inflight: expected an integer in 1..256"),
        ({"tenants": {"t1": {"zones": ["a.test"], "secret": "short"}}},
         "tenants.t1.secret: expected a string of at least 16"),
        ({"backend": "docker", "tenants": {"t1": {"zones": ["a.test"]}}}, "backend:"),
    ]
    for cfg, want in bad:
        p = os.path.join(d, "c.json")
        with open(p, "w") as f:
            json.dump(cfg, f)
        r = subprocess.run([PYTHON, LISTENER, "--config", p, "--backend", backend,
                            "--dns", "127.0.0.1:0"] if "backend" not in cfg else
                           [PYTHON, LISTENER, "--config", p, "--dns", "127.0.0.1:0"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and r.stdout == "", (want, r)
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("oast: ") and want in lines[0], (
            want, r.stderr)
    # a port already taken: exit 1, one line, nothing left listening
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        p = os.path.join(d, "ok.json")
        with open(p, "w") as f:
            json.dump(config(), f)
        for name, code in HOSTILE.items():
            with open(os.path.join(d, name + ".py"), "w") as f:
                f.write(code)
        r = subprocess.run([PYTHON, LISTENER, "--config", p, "--backend", backend,
                            "--dns", "127.0.0.1:%d" % taken.getsockname()[1],
                            "--coil", harness.COIL, "--coil-root", harness.new_root()]
                           + (["--serve-socket", SERVE["socket"]]
                              if SERVE["socket"] else []),
                           capture_output=True, text=True, timeout=60)
    last = r.stderr.splitlines()[-1:]
    assert r.returncode == 1 and last == [
        "oast: cannot start: [Errno 98] Address already in use"], r


CASES = [(n[len("case_"):], f) for n, f in list(globals().items())
         if n.startswith("case_")]


SERVE = {"socket": None}  # set while a `coil serve` runs for the serve cases


def install(namespace, backend, start=None):
    """Defines test_oast_<backend>_<case> in namespace (a test module's
    globals) for every case, in file order. start(), when given, runs first
    and returns a function that stops what it started."""
    for name, fn in CASES:
        def test(fn=fn):
            del LIVE[:]
            stop = start() if start else None
            try:
                fn(backend)
                for lst in LIVE:
                    lst.stop()
            finally:
                if stop:
                    stop()
        test.__name__ = "test_oast_%s_%s" % (backend, name)
        test.__module__ = namespace["__name__"]
        test.__qualname__ = test.__name__
        namespace[test.__name__] = test
