"""The authoritative DNS listener (UDP and TCP). A name below a tenant's
zone goes to the route its rightmost relative label picks: a handler, whose
checked result becomes the answer, or a static answer. Anything else gets
an authoritative NXDOMAIN, REFUSED outside every zone; a failed handler
gets SERVFAIL."""

import asyncio
import socket
import struct
import sys
import time

from dnslib import (AAAA, CNAME, DNSRecord, NS, QTYPE, RCODE, RR,
                    SOA, TXT, A)

from oast import answers
from oast.config import route_for
from oast.dispatch import small_reads

TCP_IDLE_S = 10.0
TCP_CONNS_MAX = 256
UDP_MAX = 1232
RDATA = {"A": A, "AAAA": AAAA, "CNAME": CNAME}


def _soa(zone):
    return RR(zone + ".", QTYPE.SOA, ttl=60, rdata=SOA(
        "ns." + zone + ".", "hostmaster." + zone + ".",
        (1, 3600, 600, 86400, 0)))


class DnsService:
    def __init__(self, core):
        self.core = core
        self.tcp_conns = 0

    async def answer(self, data, src, sport, transport):
        """The reply's wire bytes, or None to stay silent (not a query)."""
        try:
            q = DNSRecord.parse(data)
        except Exception:  # noqa: BLE001 (dnslib raises more than DNSError)
            return None
        if q.header.qr:
            return None
        reply = q.reply(ra=0, aa=1)
        reply.header.ra = 0
        try:
            return await self._answer(q, reply, src, sport, transport)
        except Exception as e:  # noqa: BLE001 (a bug must not silence DNS)
            sys.stderr.write("oast: internal error answering %s from %s:%d: "
                             "%s: %s\n" % (q.q.qname, src, sport,
                                           type(e).__name__, e))
            fail = q.reply(ra=0, aa=1)
            fail.header.ra = 0
            fail.header.rcode = RCODE.SERVFAIL
            return self._pack(fail, q, transport)

    async def _answer(self, q, reply, src, sport, transport):
        if q.header.opcode != 0 or len(q.questions) != 1:
            reply.header.rcode = RCODE.NOTIMP if q.header.opcode else RCODE.FORMERR
            reply.header.aa = 0
            return self._pack(reply, q, transport)
        qn = q.q.qname
        name = str(qn).rstrip(".").lower()
        qtype = QTYPE.get(q.q.qtype)
        qtype = qtype if isinstance(qtype, str) else "TYPE%d" % q.q.qtype
        found = self.core.zone_for(name) if q.q.qclass == 1 else None
        if found is None:
            reply.header.rcode = RCODE.REFUSED
            reply.header.aa = 0
            return self._pack(reply, q, transport)
        tenant, zone, labels = found
        tc = self.core.tenants[tenant].cfg
        route, target = route_for(tc["dns"], labels)
        if not labels and qtype in ("SOA", "NS") and target is None:
            if qtype == "SOA":
                reply.add_answer(_soa(zone))
            else:
                reply.add_answer(RR(zone + ".", QTYPE.NS, ttl=60,
                                    rdata=NS("ns." + zone + ".")))
            return self._pack(reply, q, transport)
        if target is None:
            reply.header.rcode = RCODE.NXDOMAIN
            reply.add_auth(_soa(zone))
            return self._pack(reply, q, transport)
        ttl_max = self.core.tenants[tenant].limits["ttl_max"]
        if isinstance(target, dict):
            rcode, recs = answers.check_dns(target["static"], None, ttl_max)
            recs = [r for r in recs if r["type"] in (qtype, "CNAME")]
        else:
            request = {
                "kind": "dns", "tenant": tenant, "zone": zone, "route": route,
                "qname": name, "qtype": qtype, "src": src, "sport": sport,
                "transport": transport, "ts": time.time(),
                "params": tc["params"],
            }
            if tc["secret"] is not None:
                request["secret"] = tc["secret"]
            what = "dns %s %s %s from %s:%d" % (transport, name, qtype, src, sport)
            got = await self.core.run(
                tenant, target, request, "dns:" + name,
                lambda r: answers.check_dns(r, qtype, ttl_max),
                what + " -> SERVFAIL")
            if got is None:
                reply.header.rcode = RCODE.SERVFAIL
                return self._pack(reply, q, transport)
            rcode, recs = got
        reply.header.rcode = RCODE.reverse[rcode]
        for r in recs:
            if r["type"] == "TXT":
                rdata = TXT(r["value"])
            else:
                rdata = RDATA[r["type"]](r["value"])
            reply.add_answer(RR(qn, QTYPE.reverse[r["type"]], ttl=r["ttl"],
                                rdata=rdata))
        if rcode == "NXDOMAIN" or (rcode == "NOERROR" and not recs):
            reply.add_auth(_soa(zone))
        return self._pack(reply, q, transport)

    def _pack(self, reply, q, transport):
        wire = reply.pack()
        if transport == "udp":
            limit = 512
            for rr in q.ar:
                if rr.rtype == QTYPE.OPT:
                    limit = max(512, min(UDP_MAX, rr.rclass))
            if len(wire) > limit:
                reply.rr, reply.auth, reply.ar = [], [], []
                reply.header.tc = 1
                wire = reply.pack()
        return wire


class _Udp(asyncio.DatagramProtocol):
    def __init__(self, svc):
        self.svc = svc
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport
        small_reads(transport)

    def datagram_received(self, data, addr):
        self.svc.core.spawn(self._serve(data, addr))

    async def _serve(self, data, addr):
        wire = await self.svc.answer(data, addr[0], addr[1], "udp")
        if wire is not None and not self.transport.is_closing():
            self.transport.sendto(wire, addr)


async def _tcp_client(svc, reader, writer):
    peer = writer.get_extra_info("peername") or ("?", 0)
    if svc.tcp_conns >= TCP_CONNS_MAX:
        writer.close()
        return
    svc.tcp_conns += 1
    small_reads(writer.transport)
    try:
        while True:
            try:
                head = await asyncio.wait_for(reader.readexactly(2), TCP_IDLE_S)
                (n,) = struct.unpack(">H", head)
                data = await asyncio.wait_for(reader.readexactly(n), TCP_IDLE_S)
            except (asyncio.IncompleteReadError, asyncio.TimeoutError,
                    ConnectionError):
                break
            wire = await svc.answer(data, peer[0], peer[1], "tcp")
            if wire is None:
                break
            writer.write(struct.pack(">H", len(wire)) + wire)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        svc.tcp_conns -= 1
        writer.close()


def _udp_socket(host, port):
    """A UDP socket bound here rather than by the event loop, so that a
    failed bind reads the same ("[Errno 98] Address already in use") under
    every loop: uvloop's own bind hides the errno."""
    family, kind, proto, _, addr = socket.getaddrinfo(
        host, port, type=socket.SOCK_DGRAM, flags=socket.AI_PASSIVE)[0]
    s = socket.socket(family, kind, proto)
    try:
        s.bind(addr)
        s.setblocking(False)
    except OSError:
        s.close()
        raise
    return s


async def serve(core, host, port):
    """Binds UDP and TCP on the same port (port 0: the first free one for
    both); returns (servers to close, the port)."""
    loop = asyncio.get_running_loop()
    svc = DnsService(core)
    for attempt in range(20):
        udp, _ = await loop.create_datagram_endpoint(
            lambda: _Udp(svc), sock=_udp_socket(host, port))
        bound = udp.get_extra_info("sockname")[1]
        try:
            tcp = await asyncio.start_server(
                lambda r, w: _tcp_client(svc, r, w), host, bound,
                reuse_address=True)
        except OSError:
            udp.close()
            if port != 0 or attempt == 19:
                raise
            continue
        return [udp, tcp], bound
    raise OSError("no free port for DNS")
