# Benign handler: every helper namespace plus the everyday syntax
# (f-strings, comprehensions, try/except, lambda with sorted). The test
# compares its result with the same handler run by the host's python3.11
# (with ipaddress.in_network/hosts, which only the guest API has, added).
import base64
import binascii
import datetime
import hashlib
import hmac
import ipaddress
import json
import math
import re
import struct
import urllib.parse

LABELS = {"A": "1.2.3.4", "AAAA": "2001:db8::1"}


def classify(src):
    # The guest API (docs/python.md): ip_address/ip_network give records,
    # membership is ipaddress.in_network(addr, net).
    ip = ipaddress.ip_address(src)
    for cidr in ["10.0.0.0/8", "192.168.0.0/16", "fc00::/7", "127.0.0.0/8"]:
        if ipaddress.in_network(ip.compressed, cidr):
            return [ip.compressed, ip.version, cidr, ip.is_private]
    return [ip.compressed, ip.version, None, ip.is_private]


def handle(request):
    name = str(request.get("qname", "x.oast.example")).lower()
    out = {}
    out["json"] = json.loads(json.dumps({"b": [1, 2.5, None, True], "a": "é"},
                                        sort_keys=True))
    out["json_text"] = json.dumps({"z": 1, "a": [1, 2]}, sort_keys=True)
    m = re.match(r"([a-z0-9-]+)\.oast\.(example)$", name)
    out["re"] = [m.group(1), m.group(2)] if m else None
    out["re_sub"] = re.sub(r"\d", "#", "a1b22c")
    out["re_findall"] = re.findall(r"[a-z]+", "ab 12 cd")
    pat = re.compile(r"^(?P<k>\w+)=(?P<v>.*)$")
    out["re_compiled"] = [pat.match("key=val").group("k"), bool(pat.search("nope"))]
    out["re_split"] = re.split(r"[,;]", "a,b;c")
    out["b64"] = base64.b64encode(b"hello world").decode()
    out["b64d"] = base64.b64decode("aGVsbG8=").decode()
    out["b64url"] = base64.urlsafe_b64encode(b"\xfb\xff").decode()
    out["b32"] = base64.b32encode(b"ab").decode()
    out["sha256"] = hashlib.sha256(b"abc").hexdigest()
    out["md5"] = hashlib.md5(name.encode()).hexdigest()
    out["sha1"] = hashlib.sha1(b"").hexdigest()
    out["blake2b"] = hashlib.blake2b(b"x", digest_size=8).hexdigest()
    h = hashlib.sha512()
    h.update(b"part1")
    h.update(b"part2")
    out["sha512_update"] = h.hexdigest()[:32]
    out["hmac"] = hmac.digest(b"key", b"msg", "sha256").hex()
    out["hmac_eq"] = [hmac.compare_digest("abc", "abc"), hmac.compare_digest(b"a", b"b")]
    out["math"] = [math.sqrt(16), math.floor(2.7), math.ceil(2.1), math.gcd(12, 18),
                   round(math.pi, 5), math.isclose(0.1 + 0.2, 0.3), math.log2(1024),
                   math.factorial(10), math.inf > 1e308]
    out["struct"] = list(struct.unpack(">HIb", struct.pack(">HIb", 1, 70000, -3)))
    out["struct_size"] = struct.calcsize("<HQ")
    out["crc"] = binascii.crc32(b"abc")
    out["hexlify"] = binascii.hexlify(b"\x01\xff").decode()
    out["unhexlify"] = list(binascii.unhexlify("0aff"))
    out["ip"] = [classify(s) for s in ["10.1.2.3", "8.8.8.8", "::1", "fd00::5"]]
    net = ipaddress.ip_network("192.168.0.0/30")
    out["net"] = [str(net.network_address), net.prefixlen, net.num_addresses,
                  net.with_prefixlen]
    out["hosts"] = ipaddress.hosts("192.168.0.0/30")
    d = datetime.datetime.fromisoformat("2023-11-14T22:13:20+00:00")
    out["dt"] = [d.strftime("%a, %d %b %Y %H:%M:%S GMT"), d.timestamp(),
                 (d + datetime.timedelta(days=1, hours=2)).isoformat(), d.year]
    out["strptime"] = datetime.datetime.strptime("2024-01-02 03:04", "%Y-%m-%d %H:%M").isoformat()
    out["fromts"] = datetime.datetime.fromtimestamp(1700000000, datetime.timezone.utc).isoformat()
    out["date"] = datetime.date(2024, 2, 29).isoformat()
    out["delta"] = datetime.timedelta(minutes=90).total_seconds()
    u = urllib.parse.urlsplit("https://user@host.example:8443/p/a?x=1&y=2&y=3#frag")
    out["url"] = [u.scheme, u.netloc, u.hostname, u.port, u.path, u.query, u.fragment]
    out["url_index"] = [u[0], u[2]]
    out["parse_qs"] = urllib.parse.parse_qs(u.query)
    out["parse_qsl"] = urllib.parse.parse_qsl(u.query)
    p = urllib.parse.urlparse("http://a.test/x;p?q=1")
    out["urlparse"] = [p.scheme, p.path, p.params, p.query]
    out["unsplit"] = urllib.parse.urlunsplit(["https", "h.test", "/a", "b=1", ""])
    out["join"] = urllib.parse.urljoin("http://a.test/b/c", "../d")
    out["quote"] = [urllib.parse.quote("/a b/<x>"), urllib.parse.quote_plus("a b&c"),
                    urllib.parse.unquote("%41%20"), urllib.parse.unquote_plus("a+b")]
    out["urlencode"] = urllib.parse.urlencode({"a": 1, "b": "c d"})
    out["fstring"] = f"{name!r:>24}|{3.14159:.2f}|{255:#x}|{1234567:,}|{'x':*^5}"
    out["comp"] = {str(k): v for k, v in [(1, 2), (3, 4)] if v > 1}
    out["setcomp"] = sorted({x % 3 for x in range(10)})
    out["genexp"] = sum(x * x for x in range(10))
    out["nested"] = [[i * j for j in range(3)] for i in range(3)]
    try:
        int("not a number")
    except ValueError as e:
        out["exc"] = str(e)
    try:
        int("9" * 5000)
    except ValueError as e:
        out["int_digits"] = str(e)[:40]
    finally:
        out["finally"] = True
    rows = [("b", 2), ("a", 3), ("c", 1)]
    out["sorted"] = sorted(rows, key=lambda t: t[1])
    out["sorted_rev"] = [k for k, v in sorted(rows, key=lambda t: t[0], reverse=True)]
    out["builtins"] = [len("abc"), abs(-3), min(3, 1), max([4, 9]), divmod(7, 2),
                       list(enumerate("ab")), list(zip("ab", [1, 2])), hex(255),
                       list(map(str, [1, 2])), list(filter(None, [0, 1, 2])),
                       isinstance(1, int), repr("q"), chr(65), ord("A"),
                       bytes([104, 105]).decode(), any([0, 1]), all([]),
                       list(reversed([1, 2, 3])), pow(2, 10, 1000)]
    qtype = str(request.get("qtype", "A"))
    out["answer"] = LABELS.get(qtype)
    print("benign handler ran for", name)
    return out
