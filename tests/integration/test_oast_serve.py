"""The OAST cases (oast_cases.py) with the `serve` backend: the listener
calls a warm `coil serve` (tenants t1 and t2) started for each test with
the configuration below. Every case fails, never skips, if `coil serve`
does not come up. Last, `make oast-demo` (oast/demo.py) as a user runs it:
it starts its own coil serve, answers, and leaves nothing after Ctrl-C."""

import json
import os
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time

import harness
import oast_cases


def serve_config():
    """coil serve's configuration for tenants t1 and t2 (docs/serve.md),
    with the concurrency the listener's own config gives them."""
    def tenant(name, uid, inflight, queue, timeout_ms, **more):
        return dict({"name": name, "uid": uid, "gid": uid,
                     "allow": {"uids": [0]},
                     "limits": {"timeout_ms": timeout_ms, "memory_mb": 64,
                                "output_bytes": 1 << 20, "in_flight": inflight,
                                "queue": queue}}, **more)
    # t2's memory as a whole is bounded too: the ASan build has no
    # per-execution RLIMIT_DATA, and filling the host's memory a page at a
    # time would take its floods past their 700 ms wall clock.
    return {"max_frame_bytes": 2 << 20,
            "tenants": [tenant("t1", 300000, 2, 64, 5000),
                        tenant("t2", 300001, 1, 4, 700,
                               cgroup={"memory_mb": 64})]}


def _ping(path):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        s.connect(path)
        data = json.dumps({"op": "ping"}).encode()
        s.sendall(struct.pack(">I", len(data)) + data)
        n = struct.unpack(">I", s.recv(4, socket.MSG_WAITALL))[0]
        return json.loads(s.recv(n, socket.MSG_WAITALL))


def start_serve():
    d = harness.tmpdir()
    sock = os.path.join(d, "serve.sock")
    cfg = os.path.join(d, "serve.json")
    with open(cfg, "w") as f:
        json.dump(serve_config(), f)
    err = open(os.path.join(d, "serve.err"), "w")
    p = subprocess.Popen([harness.COIL, "--root", harness.new_root(), "serve",
                          "--config", cfg, "--socket", sock],
                         stdin=subprocess.DEVNULL, stdout=err, stderr=err)
    harness.REG.procs.append(p)
    deadline = time.time() + 30
    while True:
        if p.poll() is not None:
            err.close()
            with open(os.path.join(d, "serve.err")) as f:
                raise AssertionError("coil serve exited %s: %s" % (
                    p.returncode, f.read()[-2000:]))
        try:
            if _ping(sock).get("ok"):
                break
        except OSError:
            pass
        assert time.time() < deadline, "coil serve never answered a ping"
        time.sleep(0.1)
    oast_cases.SERVE["socket"] = sock

    def stop():
        oast_cases.SERVE["socket"] = None
        p.terminate()
        try:
            p.wait(timeout=30)
        finally:
            err.close()
        assert p.returncode == 0, "coil serve exit %s" % p.returncode
    return stop


oast_cases.install(globals(), "serve", start=start_serve)


def _read_until(p, text, out, timeout=60):
    """Appends p's stdout lines to out until one contains text (p's stdout
    unbuffered: select() must see every byte not yet read)."""
    deadline = time.time() + timeout
    while not out or text not in out[-1]:
        left = deadline - time.time()
        assert left > 0, "no %r from the demo within %ds:\n%s" % (
            text, timeout, "".join(out))
        ready, _, _ = select.select([p.stdout], [], [], left)
        if ready:
            line = p.stdout.readline().decode(errors="replace")
            assert line, "the demo exited %s:\n%s" % (p.wait(), "".join(out))
            out.append(line)


def _stop_demo(p, serve):
    """After a failure: Ctrl-C as a user would, then force; and whatever
    the demo's coil serve left (serve: {"pid", "dir"} once known)."""
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()
    p.stdout.close()
    if serve:
        # Without its parent coil serve gets SIGTERM (oast/serve_proc.py).
        deadline = time.time() + 30
        while os.path.exists("/proc/%d" % serve["pid"]) and time.time() < deadline:
            time.sleep(0.1)
        shutil.rmtree(serve["dir"], ignore_errors=True)


def test_oast_demo_runs_serve_and_stops_clean():
    """oast/demo.py on free ports: it starts coil serve, the rebinding
    answer changes between two digs, and SIGINT (Ctrl-C) stops the listener
    and coil serve and removes the server's directory and cgroups."""
    p = subprocess.Popen(
        [oast_cases.PYTHON, os.path.join(harness.REPO, "oast", "demo.py"),
         "--dns", "127.0.0.1:0", "--http", "127.0.0.1:0", "--coil", harness.COIL],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, bufsize=0, start_new_session=True)
    serve = {}
    harness.REG.cleanups.append(lambda: _stop_demo(p, serve))
    out = []
    _read_until(p, "Ctrl-C stops the listener", out)
    text = "".join(out)
    assert "backend serve," in text, text
    m = re.search(r"started coil serve \(pid (\d+), .*socket (\S+)\)", text)
    assert m, text
    serve_pid, sock = int(m.group(1)), m.group(2)
    serve_dir = os.path.dirname(sock)
    serve.update(pid=serve_pid, dir=serve_dir)
    assert serve_dir.startswith("/run/") and os.path.isdir(serve_dir), text
    assert os.stat(serve_dir).st_mode & 0o777 == 0o700
    dport = re.search(r"DNS  udp\+tcp 127\.0\.0\.1:(\d+)", text).group(1)

    def dig():
        r = subprocess.run(["dig", "@127.0.0.1", "-p", dport, "+short", "+tries=1",
                            "+time=10", "rebind.t1.oast.test"],
                           capture_output=True, text=True, timeout=30)
        return r.stdout.split()
    assert dig() == ["203.0.113.10"]
    assert dig() == ["127.0.0.1"]

    p.send_signal(signal.SIGINT)
    rest = p.communicate(timeout=60)[0].decode(errors="replace")
    assert p.returncode == 0, (p.returncode, text + rest)
    assert "oast-demo: stopped" in rest, rest
    assert not os.path.exists(serve_dir), serve_dir
    assert not os.path.exists("/proc/%d" % serve_pid), "coil serve still runs"
    left = []
    for ent in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % ent, "rb") as f:
                if serve_dir.encode() in f.read():
                    left.append(ent)
        except OSError:
            pass
    assert not left, "processes of the demo's coil serve left: %s" % left
    cgroups = harness.cgroup_dirs(substrings=("serve-%d-" % serve_pid,))
    assert not cgroups, "cgroups left: %s" % sorted(cgroups)


def test_oast_demo_serve_config_matches_listener_config():
    """oast/serve.json gives each tenant of oast/config.json the listener's
    concurrency, timeout and memory, and its own uid/gid."""
    if harness.REPO not in sys.path:
        sys.path.insert(0, harness.REPO)
    from oast import config
    cfg = config.load(os.path.join(harness.REPO, "oast", "config.json"))
    with open(os.path.join(harness.REPO, "oast", "serve.json")) as f:
        serve = {t["name"]: t for t in json.load(f)["tenants"]}
    assert sorted(serve) == sorted(cfg["tenants"])
    ids = set()
    for name, t in cfg["tenants"].items():
        lim, got = t["limits"], serve[name]["limits"]
        assert (got["in_flight"], got["queue"]) == \
            (lim["max_inflight"], lim["max_queue"]), name
        assert (got["timeout_ms"], got["memory_mb"]) == \
            (lim["timeout_ms"], lim["memory_mb"]), name
        assert serve[name]["allow"] == {"uids": [0]}, name
        ids |= {serve[name]["uid"], serve[name]["gid"]}
    assert 0 not in ids and len(ids) == len(serve)
