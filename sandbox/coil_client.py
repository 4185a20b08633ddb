"""Client for `coil serve` (docs/serve.md), standard library only.

    import coil_client
    with coil_client.Client("/run/coil/serve.sock", tenant="t1") as c:
        c.register("rebind", open("rebind.py").read())
        env = c.call(handler="rebind", request={"qname": "x"})

AsyncClient has the same operations as coroutines, for asyncio programs
(one thread, no executor):

    c = coil_client.AsyncClient("/run/coil/serve.sock", tenant="t1")
    env = await c.call(handler="rebind", request={"qname": "x"})
    await c.close()

Every answer of the server, errors included, is returned as the envelope
dict; ProtocolError is raised only when the transport or the framing fails.
A client (either kind) carries one request at a time.
"""

import asyncio
import json
import socket
import struct

__all__ = ["AsyncClient", "Client", "ProtocolError"]

_MAX_ANSWER = 64 << 20
_READ_MAX = 64 << 10
# asyncio.timeout (3.11) bounds an await without a task of its own.
_timeout = getattr(asyncio, "timeout", None)


class ProtocolError(Exception):
    """The connection or the framing failed (not an error envelope)."""


class Client:
    def __init__(self, path, tenant=None, timeout=None):
        self.path = path
        self.tenant = tenant
        self.timeout = timeout
        self._sock = None

    # -- context manager ---------------------------------------------------
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    # -- operations ----------------------------------------------------------
    def call(self, handler=None, code=None, entry="handle", request=None,
             limits=None, tenant=None):
        return self._ask(_call_msg(handler, code, entry, request, limits),
                         tenant)

    def register(self, handler, code, tenant=None):
        return self._ask({"op": "register", "handler": handler, "code": code},
                         tenant)

    def remove(self, handler, tenant=None):
        return self._ask({"op": "remove", "handler": handler}, tenant)

    def ping(self):
        return self._ask({"op": "ping"}, None, with_tenant=False)

    # -- transport -----------------------------------------------------------
    def _ask(self, msg, tenant, with_tenant=True):
        frame = _frame(msg, tenant if tenant is not None else self.tenant,
                       with_tenant)
        for _ in range(_tries(self._sock is None)):
            try:
                return self._exchange(frame)
            except _Closed:
                self.close()
        raise ProtocolError("the server closed the connection")

    def _connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self.path)
        except OSError as e:
            s.close()
            raise ProtocolError("connect %s: %s" % (self.path, e)) from None
        self._sock = s

    def _exchange(self, frame):
        if self._sock is None:
            self._connect()
        try:
            self._sock.sendall(frame)
            buf = self._recv(4)
            total = _frame_len(buf)
            if len(buf) < total:
                buf += self._recv(total - len(buf))
            return _answer(_body(buf, total))
        except socket.timeout:
            self.close()
            raise ProtocolError("timed out") from None
        except (BrokenPipeError, ConnectionResetError):
            raise _Closed() from None
        except OSError as e:
            self.close()
            raise ProtocolError(str(e)) from None
        except ProtocolError:
            self.close()
            raise

    def _recv(self, n):
        """At least n bytes; each read asks for the rest or _READ_MAX,
        whichever is more."""
        buf = b""
        while len(buf) < n:
            chunk = self._sock.recv(max(n - len(buf), _READ_MAX))
            if not chunk:
                raise _Closed()
            buf += chunk
        return buf


class AsyncClient:
    """Client's operations as coroutines on the running event loop; the
    timeout (seconds, or None) bounds each whole exchange."""

    def __init__(self, path, tenant=None, timeout=None):
        self.path = path
        self.tenant = tenant
        self.timeout = timeout
        self._sock = None

    async def close(self):
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    async def call(self, handler=None, code=None, entry="handle",
                   request=None, limits=None, tenant=None):
        return await self._ask(_call_msg(handler, code, entry, request,
                                         limits), tenant)

    async def register(self, handler, code, tenant=None):
        return await self._ask({"op": "register", "handler": handler,
                                "code": code}, tenant)

    async def remove(self, handler, tenant=None):
        return await self._ask({"op": "remove", "handler": handler}, tenant)

    async def ping(self):
        return await self._ask({"op": "ping"}, None, with_tenant=False)

    async def _ask(self, msg, tenant, with_tenant=True):
        frame = _frame(msg, tenant if tenant is not None else self.tenant,
                       with_tenant)
        for _ in range(_tries(self._sock is None)):
            try:
                return await self._timed(frame)
            except _Closed:
                await self.close()
        raise ProtocolError("the server closed the connection")

    async def _timed(self, frame):
        try:
            if self.timeout is None:
                return await self._exchange(frame)
            if _timeout is None:
                return await asyncio.wait_for(self._exchange(frame),
                                              self.timeout)
            async with _timeout(self.timeout):
                return await self._exchange(frame)
        except (asyncio.TimeoutError, TimeoutError):
            await self.close()
            raise ProtocolError("timed out") from None

    async def _exchange(self, frame):
        loop = asyncio.get_running_loop()
        if self._sock is None:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                await loop.sock_connect(s, self.path)
            except OSError as e:
                s.close()
                raise ProtocolError("connect %s: %s" % (self.path, e)) from None
            self._sock = s
        try:
            await loop.sock_sendall(self._sock, frame)
            # Length and body mostly come in one read: each read that has
            # to wait costs the loop a registration of the socket and its
            # removal.
            buf = await self._recv(loop, 4)
            total = _frame_len(buf)
            if len(buf) < total:
                buf += await self._recv(loop, total - len(buf))
            return _answer(_body(buf, total))
        except (BrokenPipeError, ConnectionResetError):
            raise _Closed() from None
        except OSError as e:
            await self.close()
            raise ProtocolError(str(e)) from None
        except ProtocolError:
            await self.close()
            raise

    async def _recv(self, loop, n):
        """At least n bytes; each read asks for the rest or _READ_MAX,
        whichever is more."""
        buf = b""
        while len(buf) < n:
            chunk = await loop.sock_recv(self._sock, max(n - len(buf),
                                                         _READ_MAX))
            if not chunk:
                raise _Closed()
            buf += chunk
        return buf


def _tries(fresh):
    """How many exchanges one operation may make: a connection the server
    closed while it was idle is made again once; a fresh connection that
    fails is not."""
    return 1 if fresh else 2


def _call_msg(handler, code, entry, request, limits):
    msg = {"op": "call", "entry": entry, "request": request}
    if handler is not None:
        msg["handler"] = handler
    if code is not None:
        msg["code"] = code
    if limits is not None:
        msg["limits"] = limits
    return msg


def _frame(msg, tenant, with_tenant):
    if with_tenant and tenant is not None:
        msg["tenant"] = tenant
    try:
        body = json.dumps(msg, ensure_ascii=False,
                          allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as e:
        raise ProtocolError("request is not JSON data: %s" % e) from None
    return struct.pack(">I", len(body)) + body


def _frame_len(head):
    """An answer frame's whole length, from its first four bytes."""
    (n,) = struct.unpack(">I", head[:4])
    if n > _MAX_ANSWER:
        raise ProtocolError("answer of %d bytes is too large" % n)
    return 4 + n


def _body(buf, total):
    """The answer's body: one request, one answer, nothing after it."""
    if len(buf) > total:
        raise ProtocolError("more bytes than one answer")
    return buf[4:]


def _answer(data):
    try:
        answer = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ProtocolError("answer is not JSON: %s" % e) from None
    if not isinstance(answer, dict):
        raise ProtocolError("answer is not a JSON object")
    return answer


class _Closed(Exception):
    pass
