"""A foreground `run` of a process.terminal container without a console
socket: coil keeps the pty master and proxies the caller's terminal, as runc
does (raw mode restored afterwards, size copied, SIGWINCH resizes)."""

import fcntl
import os
import select
import signal
import struct
import subprocess
import termios
import time

from harness import (check, coil, describe, new_bundle, new_id, new_root,
                     popen)


def _set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class Term:
    """A pty the test owns, whose slave is coil's stdio (stdin may be
    replaced), in a session of its own with the pty as its terminal."""

    def __init__(self, rows=24, cols=80):
        self.master, self.slave = os.openpty()
        _set_size(self.slave, rows, cols)
        self.before = termios.tcgetattr(self.slave)
        self.out = b""

    def start(self, *args, root, stdin=None):
        return popen(*args, root=root,
                     stdin=self.slave if stdin is None else stdin,
                     stdout=self.slave, stderr=self.slave, text=False,
                     start_new_session=True)

    def read_until(self, want, timeout=15):
        deadline = time.time() + timeout
        while want.encode() not in self.out and time.time() < deadline:
            r, _, _ = select.select([self.master], [], [], 0.1)
            if r:
                try:
                    self.out += os.read(self.master, 4096)
                except OSError:
                    break
        return want.encode() in self.out

    def text(self):
        return self.out.decode(errors="replace")

    def close(self):
        os.close(self.master)
        os.close(self.slave)


def _finish(p, timeout=20):
    try:
        return p.wait(timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return None


def test_run_terminal_output_input_exit_code_and_termios():
    root = new_root()
    b = new_bundle(["sh", "-c", "[ -t 0 ] && [ -t 1 ] && echo all-tty; "
                    "echo ready; read x; echo got:$x; exit 7"],
                   process={"terminal": True})
    t = Term()
    try:
        p = t.start("run", "--bundle", b, new_id(), root=root)
        assert t.read_until("ready"), t.text()
        during = termios.tcgetattr(t.slave)
        assert not during[3] & (termios.ICANON | termios.ECHO), \
            "caller's terminal not in raw mode"
        os.write(t.master, b"typed\r")
        assert t.read_until("got:typed"), t.text()
        rc = _finish(p)
        after = termios.tcgetattr(t.slave)
    finally:
        t.close()
    assert rc == 7, (rc, t.text())
    assert "all-tty" in t.text(), t.text()
    assert after == t.before, "caller's termios not restored"
    assert os.listdir(root) == []


def test_run_terminal_size_and_sigwinch():
    root = new_root()
    b = new_bundle(["sh", "-c", "stty size; echo next; read x; stty size"],
                   process={"terminal": True})
    t = Term(rows=31, cols=97)
    try:
        p = t.start("run", "--bundle", b, new_id(), root=root)
        assert t.read_until("next"), t.text()
        assert "31 97" in t.text(), t.text()
        _set_size(t.slave, 42, 123)
        os.kill(p.pid, signal.SIGWINCH)
        time.sleep(0.2)
        os.write(t.master, b"\r")
        assert t.read_until("42 123"), t.text()
        rc = _finish(p)
    finally:
        t.close()
    assert rc == 0, (rc, t.text())


def test_run_terminal_forwards_signals():
    root = new_root()
    b = new_bundle(["sh", "-c", "trap 'echo term; exit 3' TERM; echo ready; "
                    "while :; do sleep 0.05; done"],
                   process={"terminal": True})
    t = Term()
    try:
        p = t.start("run", "--bundle", b, new_id(), root=root)
        assert t.read_until("ready"), t.text()
        p.send_signal(signal.SIGTERM)
        rc = _finish(p)
        t.read_until("term", timeout=2)
        after = termios.tcgetattr(t.slave)
    finally:
        t.close()
    assert rc == 3, (rc, t.text())
    assert after == t.before, "caller's termios not restored"


def test_run_terminal_with_piped_stdin():
    root = new_root()
    b = new_bundle(["sh", "-c", "read x; echo got:$x; [ -t 0 ] && echo tty"],
                   process={"terminal": True})
    t = Term()
    r, w = os.pipe()
    try:
        p = t.start("run", "--bundle", b, new_id(), root=root, stdin=r)
        os.close(r)
        os.write(w, b"piped\n")
        os.close(w)
        assert t.read_until("tty"), t.text()
        rc = _finish(p)
        after = termios.tcgetattr(t.slave)
    finally:
        t.close()
    assert rc == 0, (rc, t.text())
    assert "got:piped" in t.text(), t.text()
    assert after == t.before, "caller's termios not restored"


def test_run_terminal_without_any_caller_terminal():
    """No terminal at all (pipes, no controlling tty): still proxied, the
    pty keeps process.consoleSize."""
    root = new_root()
    b = new_bundle(["sh", "-c", "read x; echo got:$x; stty size"],
                   process={"terminal": True,
                            "consoleSize": {"height": 12, "width": 34}})
    r = coil("run", "--bundle", b, new_id(), root=root, input="hi\n",
             start_new_session=True, timeout=30)
    assert r.returncode == 0, describe(r)
    assert "got:hi" in r.stdout and "12 34" in r.stdout, describe(r)
    assert os.listdir(root) == []


def test_run_detach_terminal_without_console_socket_fails():
    root = new_root()
    b = new_bundle(["true"], process={"terminal": True})
    r = coil("run", "--detach", "--bundle", b, new_id(), root=root)
    assert r.returncode not in (0, None), describe(r)
    assert "console-socket" in r.stderr, describe(r)
    assert os.listdir(root) == []


def test_create_terminal_without_console_socket_still_fails():
    root = new_root()
    b = new_bundle(["true"], process={"terminal": True})
    cid = new_id()
    r = check(coil("create", "--bundle", b, cid, root=root), 1)
    assert "console-socket" in r.stderr, describe(r)
    assert os.listdir(root) == []
