"""The HTTP callback listener (HTTP/1.1, one request per connection). The
Host header picks the tenant (its zones) and the route (the label right of
the zone); the handler's checked result is the response. A failed handler
gets 502; an unknown host 404."""

import asyncio
import base64
import time
import urllib.parse

from oast import answers
from oast.config import route_for
from oast.dispatch import small_reads

HEAD_MAX = 16384
HEADERS_MAX = 64
BODY_HARD_MAX = 1 << 20
READ_TIMEOUT_S = 10.0
CONNS_MAX = 256
REASONS = {200: "OK", 201: "Created", 204: "No Content", 301: "Moved Permanently",
           302: "Found", 303: "See Other", 307: "Temporary Redirect",
           308: "Permanent Redirect", 400: "Bad Request", 403: "Forbidden",
           404: "Not Found", 413: "Content Too Large",
           421: "Misdirected Request", 431: "Request Header Fields Too Large",
           500: "Internal Server Error", 501: "Not Implemented",
           502: "Bad Gateway", 503: "Service Unavailable"}


class BadRequest(Exception):
    def __init__(self, status, why):
        super().__init__(why)
        self.status = status


def _parse_head(head):
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError:
        raise BadRequest(400, "bad request head")
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1.") or not parts[0]:
        raise BadRequest(400, "bad request line")
    method, target, _ = parts
    headers = []
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip() or " " in name:
            raise BadRequest(400, "bad header line")
        headers.append((name, value.strip()))
    if len(headers) > HEADERS_MAX:
        raise BadRequest(431, "more than %d headers" % HEADERS_MAX)
    return method, target, headers


def _response(status, headers, body, head_only):
    lines = ["HTTP/1.1 %d %s" % (status, REASONS.get(status, "Status"))]
    lines += ["%s: %s" % (n, v) for n, v in headers]
    lines += ["Content-Length: %d" % len(body), "Connection: close", "", ""]
    out = "\r\n".join(lines).encode("latin-1")
    return out if head_only else out + body


def _plain(status, text):
    return status, [("Content-Type", "text/plain; charset=utf-8")], \
        (text + "\n").encode()


async def _linger(reader, writer):
    """Closing with unread input makes the kernel send a reset, which can
    destroy the error response before the client reads it: half-close, then
    discard what the client still sends, for a bounded time."""
    writer.write_eof()
    try:
        for _ in range(64):
            if not await asyncio.wait_for(reader.read(65536), 1.0):
                break
    except (asyncio.TimeoutError, ConnectionError):
        pass


class HttpService:
    def __init__(self, core):
        self.core = core
        self.conns = 0

    async def handle(self, reader, writer):
        if self.conns >= CONNS_MAX:
            writer.close()
            return
        self.conns += 1
        small_reads(writer.transport)
        head_only = False
        unread = False
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"),
                                              READ_TIMEOUT_S)
                method, target, headers = _parse_head(head[:-4])
                head_only = method == "HEAD"
                status, hdrs, body = await self.respond(
                    reader, writer, method, target, headers)
            except BadRequest as e:
                status, hdrs, body = _plain(e.status, str(e))
                unread = True
            except asyncio.LimitOverrunError:
                status, hdrs, body = _plain(431, "request head too large")
                unread = True
            except (asyncio.IncompleteReadError, asyncio.TimeoutError,
                    ConnectionError):
                return
            writer.write(_response(status, hdrs, body, head_only))
            await writer.drain()
            if unread:
                await _linger(reader, writer)
        except ConnectionError:
            pass
        finally:
            self.conns -= 1
            writer.close()

    async def respond(self, reader, writer, method, target, headers):
        hmap = {}
        for n, v in headers:
            k = n.lower()
            hmap[k] = hmap[k] + ", " + v if k in hmap else v
        if "transfer-encoding" in hmap:
            raise BadRequest(501, "chunked request bodies are not supported")
        host = hmap.get("host", "").strip().lower()
        if host.startswith("["):
            host = host.split("]")[0] + "]"
        else:
            host = host.rsplit(":", 1)[0] if ":" in host else host
        host = host.rstrip(".")
        found = self.core.zone_for(host) if host else None
        if found is None:
            return _plain(404, "no tenant serves this host")
        tenant, zone, labels = found
        t = self.core.tenants[tenant]
        tc = t.cfg
        try:
            length = int(hmap.get("content-length", "0"))
        except ValueError:
            raise BadRequest(400, "bad Content-Length")
        if length < 0:
            raise BadRequest(400, "bad Content-Length")
        if length > BODY_HARD_MAX:
            raise BadRequest(413, "body over %d bytes" % BODY_HARD_MAX)
        cap = t.limits["http_body_max"]
        raw = await asyncio.wait_for(reader.readexactly(length), READ_TIMEOUT_S)
        route, target_route = route_for(tc["http"], labels)
        if target_route is None:
            return _plain(404, "no route for this host")
        if isinstance(target_route, dict):
            return answers.check_http(target_route["static"])
        url = urllib.parse.urlsplit(target)
        body = raw[:cap]
        try:
            text, b64 = body.decode("utf-8"), None
        except UnicodeDecodeError:
            text, b64 = None, base64.b64encode(body).decode()
        peer = writer.get_extra_info("peername") or ("?", 0)
        request = {
            "kind": "http", "tenant": tenant, "zone": zone, "route": route,
            "host": host, "method": method, "path": url.path or "/",
            "query": url.query, "headers": hmap, "body": text,
            "body_truncated": len(raw) > cap, "src": peer[0],
            "sport": peer[1], "ts": time.time(), "params": tc["params"],
        }
        if b64 is not None:
            request["body_b64"] = b64
        if tc["secret"] is not None:
            request["secret"] = tc["secret"]
        what = "http %s %s%s from %s:%d" % (method, host, request["path"],
                                            peer[0], peer[1])
        got = await self.core.run(tenant, target_route, request,
                                  "http:" + host + request["path"],
                                  answers.check_http, what + " -> 502")
        if got is None:
            return _plain(502, "the handler failed")
        return got


async def serve(core, host, port):
    svc = HttpService(core)
    server = await asyncio.start_server(svc.handle, host, port, limit=HEAD_MAX,
                                        reuse_address=True)
    return [server], server.sockets[0].getsockname()[1]
