# A TXT record carrying a token computed per query: HMAC-SHA256 over the
# query name and a five-minute window. The key is the tenant's secret, which
# the listener puts in the request from its configuration: it is never in
# this file. A verifier holding the secret recomputes the same token.
import hmac

WINDOW_S = 300


def handle(request):
    if request["qtype"] != "TXT":
        return {"answers": []}
    secret = request.get("secret")
    if not secret:
        raise ValueError("this tenant has no secret configured")
    window = int(request["ts"]) // WINDOW_S
    msg = f"{request['qname']}|{window}".encode()
    token = hmac.digest(secret.encode(), msg, "sha256").hex()
    return {"answers": [{"type": "TXT", "value": f"v=oast1 w={window} t={token}",
                         "ttl": 0}]}
