# An HTTP redirect chain: /chain/N answers 302 to /chain/N-1, and /chain/0
# ends it with 200. Used to see how many hops a client (or a server-side
# fetcher under test) follows. N is capped.
import re

MAX_HOPS = 10


def handle(request):
    m = re.fullmatch(r"/chain/([0-9]{1,2})", request["path"])
    if not m:
        return {"status": 404, "headers": {"Content-Type": "text/plain"},
                "body": "try /chain/3\n"}
    n = min(int(m.group(1)), MAX_HOPS)
    if n == 0:
        return {"status": 200, "headers": {"Content-Type": "text/plain"},
                "body": "end of chain\n"}
    return {"status": 302, "headers": {"Location": f"/chain/{n - 1}",
                                       "Content-Type": "text/plain"},
            "body": f"hop {n}\n"}
