"""The client side of coil serve's wire protocol: a unix stream socket,
each message a 4-byte big-endian length then that many bytes of one JSON
object, one request at a time per connection.

Uses the `coil_client` module shipped with coil (sandbox/coil_client.py)
when it can be imported; otherwise the small client below speaks the same
protocol with the same interface."""

import json
import os
import socket
import struct
import sys

_SANDBOX = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "sandbox")
MAX_FRAME = 2 << 20


class FramingError(Exception):
    """A transport or framing failure (never a server answer)."""


def encode_frame(obj):
    data = json.dumps(obj, separators=(",", ":")).encode("utf-8")
    if len(data) > MAX_FRAME:
        raise FramingError("frame of %d bytes is over %d" % (len(data), MAX_FRAME))
    return struct.pack(">I", len(data)) + data


def _recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise FramingError("server closed the connection")
        buf += chunk
    return bytes(buf)


def read_frame(sock):
    (n,) = struct.unpack(">I", _recv_exact(sock, 4))
    if n > MAX_FRAME:
        raise FramingError("frame of %d bytes is over %d" % (n, MAX_FRAME))
    try:
        obj = json.loads(_recv_exact(sock, n))
    except ValueError as e:
        raise FramingError("bad JSON frame: %s" % e)
    if not isinstance(obj, dict):
        raise FramingError("a frame must hold one JSON object")
    return obj


class FramedClient:
    """coil_client.Client's interface over encode_frame/read_frame."""

    def __init__(self, path, tenant=None, timeout=None):
        self.path, self.tenant, self.timeout = path, tenant, timeout
        self.sock = None

    def _connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self.path)
        except OSError as e:
            s.close()
            raise FramingError("%s: %s" % (self.path, e.strerror or e))
        self.sock = s

    def _roundtrip(self, msg):
        data = encode_frame(msg)
        for attempt in (0, 1):
            fresh = self.sock is None
            if fresh:
                self._connect()
            try:
                self.sock.sendall(data)
                return read_frame(self.sock)
            except (OSError, FramingError) as e:
                self.close()
                # Reconnect once when an idle connection had been closed
                # by the server; a fresh connection failing is final.
                if fresh or attempt == 1 or isinstance(e, socket.timeout):
                    raise FramingError(str(e))
        raise FramingError("unreachable")

    def call(self, handler=None, code=None, entry="handle", request=None,
             limits=None, tenant=None):
        msg = {"op": "call", "tenant": tenant or self.tenant, "entry": entry,
               "request": request}
        if handler is not None:
            msg["handler"] = handler
        if code is not None:
            msg["code"] = code
        if limits:
            msg["limits"] = limits
        return self._roundtrip(msg)

    def register(self, handler, code, tenant=None):
        return self._roundtrip({"op": "register", "tenant": tenant or self.tenant,
                                "handler": handler, "code": code})

    def remove(self, handler, tenant=None):
        return self._roundtrip({"op": "remove", "tenant": tenant or self.tenant,
                                "handler": handler})

    def ping(self):
        return self._roundtrip({"op": "ping"})

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            finally:
                self.sock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def client_class():
    """(Client class, its transport error class): coil's own module when it
    is importable, else FramedClient."""
    if _SANDBOX not in sys.path:
        sys.path.append(_SANDBOX)
    try:
        import coil_client
    except ImportError:
        return FramedClient, FramingError
    return coil_client.Client, (coil_client.ProtocolError, FramingError, OSError)
