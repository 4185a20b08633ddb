"""The OAST cases (oast_cases.py) with the `serve` backend: the listener
calls a warm `coil serve` (tenants t1 and t2) started for each test with
the configuration below. Every case fails, never skips, if `coil serve`
does not come up."""

import json
import os
import socket
import struct
import subprocess
import time

import harness
import oast_cases


def serve_config():
    """coil serve's configuration for tenants t1 and t2 (docs/serve.md),
    with the concurrency the listener's own config gives them."""
    def tenant(name, uid, inflight, queue, timeout_ms):
        return {"name": name, "uid": uid, "gid": uid,
                "allow": {"uids": [0]},
                "limits": {"timeout_ms": timeout_ms, "memory_mb": 64,
                           "output_bytes": 1 << 20, "in_flight": inflight,
                           "queue": queue}}
    return {"max_frame_bytes": 2 << 20,
            "tenants": [tenant("t1", 300000, 2, 64, 5000),
                        tenant("t2", 300001, 1, 4, 700)]}


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
