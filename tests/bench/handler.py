# The benchmark's handler: a small, realistic JSON handler (validate fields,
# a regex, a sha256, build a dict). It runs unchanged under every candidate.
import json
import re
import hashlib

EMAIL = re.compile(r"^([A-Za-z0-9.+-]+)@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)$")


def handle(request):
    user = request.get("user", {})
    email = str(user.get("email", ""))
    match = EMAIL.match(email)
    items = request.get("items", [])
    total = 0
    for item in items:
        total += int(item.get("qty", 0)) * int(item.get("cents", 0))
    tags = sorted(set(t.strip().lower() for t in request.get("tags", []) if t.strip()))
    body = json.dumps({"user": user, "items": items}, sort_keys=True)
    return {
        "ok": match is not None,
        "domain": match.group(2) if match else None,
        "count": len(items),
        "total_cents": total,
        "tags": tags,
        "digest": hashlib.sha256(body.encode("utf-8")).hexdigest(),
    }
