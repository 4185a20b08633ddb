# Conditional answers by source network: the first rule whose network holds
# the caller's address decides. DNS gets an A record, HTTP a text body. The
# operator's rules come in request["params"]["source_rules"] as
# [network, answer] pairs; these are the defaults.
import ipaddress

RULES = [
    ["10.0.0.0/8", "198.51.100.10"],
    ["172.16.0.0/12", "198.51.100.10"],
    ["192.168.0.0/16", "198.51.100.10"],
    ["127.0.0.0/8", "198.51.100.1"],
    ["::1/128", "198.51.100.1"],
]
DEFAULT = "198.51.100.100"


def pick(src, rules):
    for rule in rules:
        if ipaddress.in_network(src, rule[0]):
            return rule
    return None


def handle(request):
    params = request.get("params") or {}
    rules = params.get("source_rules", RULES)
    src = ipaddress.ip_address(str(request["src"])).compressed
    rule = pick(src, rules)
    answer = rule[1] if rule else params.get("source_default", DEFAULT)
    if request["kind"] == "http":
        matched = rule[0] if rule else "default"
        return {"status": 200, "headers": {"Content-Type": "text/plain"},
                "body": f"{src} matched {matched}: {answer}\n"}
    if request["qtype"] != "A":
        return {"answers": []}
    return {"answers": [{"type": "A", "value": answer, "ttl": 0}]}
