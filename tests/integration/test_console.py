"""--console-socket: coil sends the pty master over a unix socket (SCM_RIGHTS)
and the container's stdio is the slave."""

import os
import select
import socket
import threading
import time

from harness import (check, coil, describe, new_bundle, new_id, new_root,
                     tmpdir, wait_status)


class ConsoleServer:
    """Accepts one connection and receives one fd (the pty master)."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(1)
        self.sock.settimeout(20)
        self.fd = None
        self.error = None
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        try:
            conn, _ = self.sock.accept()
            with conn:
                conn.settimeout(20)
                msg, fds, flags, addr = socket.recv_fds(conn, 4096, 4)
                if not fds:
                    self.error = "no fd received (msg %r)" % msg
                    return
                self.fd = fds[0]
                for extra in fds[1:]:
                    os.close(extra)
        except Exception as e:  # noqa: BLE001
            self.error = repr(e)

    def master(self, timeout=20):
        self.thread.join(timeout)
        assert self.fd is not None, "console socket: %s" % self.error
        return self.fd

    def close(self):
        self.sock.close()
        if self.fd is not None:
            os.close(self.fd)


def read_all(fd, timeout=10):
    """Reads the master until EIO/EOF (slave closed) or timeout."""
    buf = b""
    deadline = time.time() + timeout
    while time.time() < deadline:
        r, _, _ = select.select([fd], [], [], 0.2)
        if not r:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        buf += chunk
    return buf.decode(errors="replace")


def test_console_socket_pty():
    d = tmpdir()
    sockpath = os.path.join(d, "console.sock")
    srv = ConsoleServer(sockpath)
    root = new_root()
    b = new_bundle(["sh", "-c", "tty; echo hello; "
                    "[ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo all-tty"],
                   process={"terminal": True})
    cid = new_id()
    try:
        check(coil("create", "--bundle", b, "--console-socket", sockpath,
                   cid, root=root))
        fd = srv.master()
        assert os.isatty(fd), "received fd is not a tty"
        check(coil("start", cid, root=root))
        out = read_all(fd)
        wait_status(cid, root, "stopped")
        check(coil("delete", cid, root=root))
    finally:
        srv.close()
    assert "hello" in out, repr(out)
    assert "/dev/pts/0" in out, repr(out)
    assert "all-tty" in out, repr(out)
    assert "\r\n" in out, "no tty line discipline: %r" % out


def test_console_input():
    d = tmpdir()
    sockpath = os.path.join(d, "console.sock")
    srv = ConsoleServer(sockpath)
    root = new_root()
    b = new_bundle(["sh", "-c", "read line; echo got:$line"],
                   process={"terminal": True})
    cid = new_id()
    try:
        check(coil("create", "--bundle", b, "--console-socket", sockpath,
                   cid, root=root))
        fd = srv.master()
        check(coil("start", cid, root=root))
        os.write(fd, b"typed\n")
        out = read_all(fd)
        wait_status(cid, root, "stopped")
        check(coil("delete", cid, root=root))
    finally:
        srv.close()
    assert "got:typed" in out, repr(out)


def test_terminal_without_console_socket_fails_create():
    root = new_root()
    b = new_bundle(["true"], process={"terminal": True})
    cid = new_id()
    r = coil("create", "--bundle", b, cid, root=root)
    assert r.returncode not in (0, None), describe(r)
    assert "console" in r.stderr.lower(), describe(r)
    assert os.listdir(root) == []


def test_console_socket_missing_fails():
    root = new_root()
    b = new_bundle(["true"], process={"terminal": True})
    cid = new_id()
    missing = os.path.join(tmpdir(), "nope.sock")
    r = coil("create", "--bundle", b, "--console-socket", missing, cid,
             root=root)
    assert r.returncode not in (0, None), describe(r)
    assert os.listdir(root) == []
