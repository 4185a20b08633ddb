# DNS rebinding: the first answer for a name is a public address, every later
# one points back at the victim's loopback. A handler keeps no memory between
# calls, so the caller stores the counter: it sends `seen` (0 the first time)
# and stores the `seen` that comes back under `key`.
import hashlib

FIRST = {"A": "1.2.3.4", "AAAA": "2001:db8::1234"}
THEN = {"A": "127.0.0.1", "AAAA": "::1"}


def handle(request):
    qname = str(request.get("qname", "")).lower().rstrip(".")
    qtype = str(request.get("qtype", "A")).upper()
    seen = int(request.get("seen", 0))
    if not qname:
        raise ValueError("qname is required")
    key = hashlib.sha256(f"{qname}|{request.get('src', '')}".encode()).hexdigest()[:16]
    if qtype not in FIRST:
        return {"answer": None, "rcode": "NOERROR", "ttl": 0, "seen": seen, "key": key}
    answer = FIRST[qtype] if seen == 0 else THEN[qtype]
    return {"answer": answer, "rcode": "NOERROR", "ttl": 0, "seen": seen + 1, "key": key}
