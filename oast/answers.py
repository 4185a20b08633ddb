"""Strict checks of what a handler returns. A result of the wrong shape is a
handler error (the caller answers with the safe default), never a partial
answer: each check raises AnswerError naming the field."""

import base64
import binascii
import ipaddress
import json
import re

DNS_TYPES = ("A", "AAAA", "TXT", "CNAME")
DNS_RCODES = ("NOERROR", "NXDOMAIN", "REFUSED", "SERVFAIL")
MAX_RECORDS = 16
MAX_TXT_CHUNK = 255
MAX_TXT_TOTAL = 2048
MAX_HEADERS = 32
MAX_HTTP_BODY = 65536
HOSTNAME_LABEL = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$")
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$")
# The listener frames every response itself: a handler must not.
RESERVED_HEADERS = ("content-length", "transfer-encoding", "connection",
                    "keep-alive", "upgrade", "trailer", "te")


class AnswerError(Exception):
    pass


def _fail(field, msg):
    raise AnswerError("%s: %s" % (field, msg))


def _only(obj, field, allowed):
    if not isinstance(obj, dict):
        _fail(field, "expected an object, got %s" % type(obj).__name__)
    for k in obj:
        if k not in allowed:
            _fail(field, "unexpected field %r" % k)


def _int(v, field, lo, hi):
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        _fail(field, "expected an integer in %d..%d" % (lo, hi))
    return v


def _hostname(v, field):
    if not isinstance(v, str):
        _fail(field, "expected a domain name")
    name = v.rstrip(".")
    if not name or len(name) > 253 or not all(
            HOSTNAME_LABEL.match(l) for l in name.split(".")):
        _fail(field, "not a valid domain name")
    return name + "."


def _record(r, field, ttl_max):
    _only(r, field, ("type", "value", "ttl"))
    t = r.get("type")
    if t not in DNS_TYPES:
        _fail(field + ".type", "expected one of " + " ".join(DNS_TYPES))
    ttl = _int(r.get("ttl"), field + ".ttl", 0, ttl_max)
    v = r.get("value")
    if t in ("A", "AAAA"):
        cls = ipaddress.IPv4Address if t == "A" else ipaddress.IPv6Address
        try:
            v = str(cls(v if isinstance(v, str) else None))
        except (ValueError, TypeError):
            _fail(field + ".value", "not an IPv%s address" %
                  ("4" if t == "A" else "6"))
    elif t == "CNAME":
        v = _hostname(v, field + ".value")
    else:
        chunks = [v] if isinstance(v, str) else v
        if not isinstance(chunks, list) or not chunks or not all(
                isinstance(c, str) for c in chunks):
            _fail(field + ".value", "expected a string or a list of strings")
        total = 0
        out = []
        for c in chunks:
            b = c.encode("utf-8")
            if len(b) > MAX_TXT_CHUNK:
                _fail(field + ".value", "a TXT string is at most 255 bytes")
            total += len(b)
            out.append(b)
        if total > MAX_TXT_TOTAL:
            _fail(field + ".value", "TXT data is at most %d bytes" %
                  MAX_TXT_TOTAL)
        v = out
    return {"type": t, "value": v, "ttl": ttl}


def check_dns(result, qtype, ttl_max):
    """(rcode, [records]) from a handler's DNS result.

    {"rcode": "NOERROR", "answers": [{"type": "A", "value": "192.0.2.1",
    "ttl": 60}], "state": {...}}: every record must be of the query's type,
    or one CNAME alone; a non-NOERROR rcode carries no records."""
    _only(result, "result", ("rcode", "answers", "state"))
    rcode = result.get("rcode", "NOERROR")
    if rcode not in DNS_RCODES:
        _fail("result.rcode", "expected one of " + " ".join(DNS_RCODES))
    answers = result.get("answers", [])
    if not isinstance(answers, list) or len(answers) > MAX_RECORDS:
        _fail("result.answers", "expected a list of at most %d records" %
              MAX_RECORDS)
    recs = [_record(r, "result.answers[%d]" % i, ttl_max)
            for i, r in enumerate(answers)]
    if rcode != "NOERROR" and recs:
        _fail("result.answers", "an %s answer carries no records" % rcode)
    if any(r["type"] == "CNAME" for r in recs) and len(recs) != 1:
        _fail("result.answers", "a CNAME must be the only record")
    for i, r in enumerate(recs):
        if r["type"] != "CNAME" and qtype not in (None, "ANY") and \
                r["type"] != qtype:
            _fail("result.answers[%d].type" % i,
                  "%s record in the answer to a %s query" % (r["type"], qtype))
    return rcode, recs


def check_http(result):
    """(status, [(name, value)], body bytes) from a handler's HTTP result.

    {"status": 302, "headers": {"Location": "/next"}, "body": "text"} (or
    "body_b64"); headers may also be a list of [name, value] pairs."""
    _only(result, "result", ("status", "headers", "body", "body_b64", "state"))
    status = _int(result.get("status"), "result.status", 200, 599)
    hdrs = result.get("headers", {})
    if isinstance(hdrs, dict):
        pairs = list(hdrs.items())
    elif isinstance(hdrs, list) and all(
            isinstance(p, list) and len(p) == 2 for p in hdrs):
        pairs = [tuple(p) for p in hdrs]
    else:
        _fail("result.headers", "expected an object or a list of [name, value]")
    if len(pairs) > MAX_HEADERS:
        _fail("result.headers", "at most %d headers" % MAX_HEADERS)
    out = []
    for name, value in pairs:
        f = "result.headers.%s" % name
        if not isinstance(name, str) or not HEADER_NAME.match(name):
            _fail("result.headers", "invalid header name %r" % (name,))
        if name.lower() in RESERVED_HEADERS:
            _fail(f, "set by the listener, not by a handler")
        if not isinstance(value, str) or len(value) > 4096 or any(
                c in value for c in "\r\n\0"):
            _fail(f, "expected a string without CR, LF or NUL "
                  "(at most 4096 characters)")
        try:
            value.encode("latin-1")
        except UnicodeEncodeError:
            _fail(f, "header values are latin-1")
        out.append((name, value))
    if "body" in result and "body_b64" in result:
        _fail("result", "give body or body_b64, not both")
    body = b""
    if "body" in result:
        if not isinstance(result["body"], str):
            _fail("result.body", "expected a string")
        body = result["body"].encode("utf-8")
    elif "body_b64" in result:
        try:
            body = base64.b64decode(result["body_b64"], validate=True)
        except (binascii.Error, TypeError, ValueError):
            _fail("result.body_b64", "not base64")
    if len(body) > MAX_HTTP_BODY:
        _fail("result.body", "at most %d bytes" % MAX_HTTP_BODY)
    return status, out, body


def check_state(result, bytes_max):
    """The compact JSON of the result's "state" (None when absent); a state
    over bytes_max is a handler error, not a silent drop."""
    if not isinstance(result, dict) or "state" not in result:
        return None
    st = result["state"]
    if not isinstance(st, dict):
        _fail("result.state", "expected an object")
    text = json.dumps(st, separators=(",", ":"), sort_keys=True)
    if len(text) > bytes_max:
        _fail("result.state", "%d bytes of JSON, over the tenant's limit of "
              "%d" % (len(text), bytes_max))
    return text
