"""Starts and stops a private `coil serve` for the demo and the benchmark:
its state (--root) and its socket live in one 0700 directory under /run
that stop() removes. Production runs coil serve as its own service
instead (docs/oast.md)."""

import ctypes
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time

PR_SET_PDEATHSIG = 1


def ping(path, timeout=5.0):
    """coil serve's answer to {"op":"ping"} on the socket at path."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        data = json.dumps({"op": "ping"}).encode()
        s.sendall(struct.pack(">I", len(data)) + data)
        head = s.recv(4, socket.MSG_WAITALL)
        if len(head) != 4:
            raise OSError("coil serve closed the connection")
        n = struct.unpack(">I", head)[0]
        return json.loads(s.recv(n, socket.MSG_WAITALL))


def _child_setup():
    # The caller may block its stop signals while starting us.
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    # A demo killed with SIGKILL must not leave the server running.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class Serve:
    """A running `coil serve`: .socket, .pid, .dir; stop() ends it."""

    def __init__(self, proc, d, sock, log):
        self.proc = proc
        self.pid = proc.pid
        self.dir = d
        self.socket = sock
        self.log = log

    def stop(self, timeout=30):
        """SIGTERM (coil serve deletes its templates and cgroups), SIGKILL
        after timeout seconds; then removes the directory. Returns the
        exit status."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.log is not None:
            self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return self.proc.returncode


def start(coil, config, log_path=None, wait_s=30):
    """`coil --root DIR/root serve --config CONFIG --socket DIR/serve.sock`
    with DIR a new 0700 directory under /run, once it answers a ping.
    Its stderr goes to log_path, or to ours. In its own session, so the
    terminal's Ctrl-C reaches only our process, which stops the listener
    before the server. Raises RuntimeError (with the server's last words
    when logged) if it does not come up; nothing is left then."""
    d = tempfile.mkdtemp(prefix="coil-oast-serve.", dir="/run")
    sock = os.path.join(d, "serve.sock")
    root = os.path.join(d, "root")
    os.mkdir(root, 0o700)
    log = open(log_path, "w") if log_path else None
    try:
        proc = subprocess.Popen(
            [coil, "--root", root, "serve", "--config", config, "--socket", sock],
            stdin=subprocess.DEVNULL, stdout=log or subprocess.DEVNULL,
            stderr=log, start_new_session=True, preexec_fn=_child_setup)
    except OSError as e:
        if log is not None:
            log.close()
        shutil.rmtree(d, ignore_errors=True)
        raise RuntimeError("cannot start %s: %s" % (coil, e.strerror))
    s = Serve(proc, d, sock, log)
    deadline = time.monotonic() + wait_s
    while True:
        if proc.poll() is not None:
            why = "exit status %d" % proc.returncode
            break
        try:
            if ping(sock).get("ok"):
                return s
        except (OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            why = "no answer to a ping within %d s" % wait_s
            break
        time.sleep(0.05)
    s.stop()
    if log_path:
        with open(log_path, errors="replace") as f:
            why += ": " + f.read()[-1000:].strip()
    raise RuntimeError("coil serve did not start: " + why)
