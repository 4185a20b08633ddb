# DNS rebinding: the first answer for a name is the public address, every
# later one points back at the victim's loopback. A handler keeps nothing
# between calls: the listener stores what it returns under "state" (per
# tenant and query name) and passes it back in the next request.
LOOPBACK = {"A": "127.0.0.1", "AAAA": "::1"}
PUBLIC = {"A": "203.0.113.10", "AAAA": "2001:db8::10"}


def handle(request):
    qtype = request["qtype"]
    state = request.get("state") or {}
    params = request.get("params") or {}
    public = {"A": params.get("rebind_public_a", PUBLIC["A"]),
              "AAAA": params.get("rebind_public_aaaa", PUBLIC["AAAA"])}
    if qtype not in LOOPBACK:
        return {"answers": []}
    # Counted per record type: a browser asks A and AAAA side by side, and
    # each must see the public address first.
    seen = int(state.get(qtype, 0))
    value = public[qtype] if seen == 0 else LOOPBACK[qtype]
    state[qtype] = seen + 1
    return {"answers": [{"type": qtype, "value": value, "ttl": 0}],
            "state": state}
