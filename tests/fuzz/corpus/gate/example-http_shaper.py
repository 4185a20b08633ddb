# HTTP response shaper: builds status, headers and body for a callback from the
# request path, query and headers. `now` (Unix seconds) and `secret` come from
# the caller, so the response is reproducible.
import base64
import datetime
import hashlib
import hmac
import json
import re
import urllib.parse

PIXEL = "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7"
TOKEN = re.compile(r"[A-Za-z0-9]{1,32}")


def http_date(now):
    when = datetime.datetime.fromtimestamp(now, datetime.timezone.utc)
    return when.strftime("%a, %d %b %Y %H:%M:%S GMT")


def sign(secret, text):
    return hmac.digest(secret.encode(), text.encode(), "sha256").hex()


def respond(status, ctype, body, now, extra):
    data = body if isinstance(body, bytes) else body.encode()
    headers = {
        "Content-Type": ctype,
        "Content-Length": str(len(data)),
        "Date": http_date(now),
        "ETag": "\"" + hashlib.sha256(data).hexdigest()[:16] + "\"",
        "Cache-Control": "no-store",
    }
    headers.update(extra)
    if isinstance(body, bytes):
        return {"status": status, "headers": headers,
                "body_b64": base64.b64encode(data).decode()}
    return {"status": status, "headers": headers, "body": body}


def handle(request):
    now = int(request.get("now", 0))
    secret = str(request.get("secret", ""))
    parts = urllib.parse.urlsplit(str(request.get("path", "/")))
    path = parts[2]
    query = dict(urllib.parse.parse_qsl(parts[3]))
    headers = {str(k).lower(): str(v) for k, v in request.get("headers", {}).items()}

    if path == "/pixel.gif":
        return respond(200, "image/gif", base64.b64decode(PIXEL), now, {})
    if path.startswith("/t/"):
        token = path[3:]
        if not TOKEN.fullmatch(token):
            return respond(400, "text/plain", "bad token\n", now, {})
        expected = sign(secret, token)
        given = headers.get("x-signature", "")
        ok = hmac.compare_digest(expected, given)
        body = json.dumps({"token": token, "valid": ok,
                           "ua": headers.get("user-agent", "")}, sort_keys=True)
        return respond(200 if ok else 403, "application/json", body, now,
                       {"X-Token-Signature": expected})
    if path == "/redirect":
        target = urllib.parse.urlsplit(query.get("to", ""))
        if target[0] not in ("http", "https") or not target[1]:
            return respond(400, "text/plain", "bad target\n", now, {})
        location = urllib.parse.urlunsplit([target[0], target[1], target[2] or "/",
                                            urllib.parse.urlencode({"via": "oast"}), ""])
        return respond(302, "text/plain", "", now, {"Location": location})
    body = f"no route for {urllib.parse.quote(path)}\n"
    return respond(404, "text/plain", body, now, {})
