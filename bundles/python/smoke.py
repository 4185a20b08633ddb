# Run by probe.c inside the rootfs (bundles/Makefile `smoke`): every helper,
# every pre-import, and the lazy imports coil pre-imports must work
# (docs/gate.md, Lockdown and pre-imports).
import sys
import json, re, base64, hashlib, hmac, math, struct, binascii, ipaddress, datetime, urllib.parse
import _strptime, encodings.ascii, encodings.latin_1, encodings.idna, encodings.punycode
import encodings.utf_16, encodings.utf_32, encodings.cp1252
import _ast

assert sys.flags.utf8_mode == 1 and sys.flags.no_site == 1 and sys.dont_write_bytecode
assert sys.flags.int_max_str_digits == 4300
assert hashlib.sha256(b"x").hexdigest() == "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"
assert hashlib.md5(b"").hexdigest() == "d41d8cd98f00b204e9800998ecf8427e"
assert hashlib.blake2b(b"", digest_size=8).hexdigest() == "e4a6a0577479b2b4"
assert hashlib.sha1(b"").hexdigest().startswith("da39a3ee") and len(hashlib.sha512(b"").digest()) == 64
assert hmac.compare_digest(hmac.digest(b"k", b"m", "sha256"), hmac.new(b"k", b"m", "sha256").digest())
assert json.loads(json.dumps({"a": [1, 2.5, "é", None]}, sort_keys=True)) == {"a": [1, 2.5, "é", None]}
assert re.compile(r"(?i)a+b").fullmatch("AaB") and re.sub(r"\d", "x", "a1") == "ax"
d = datetime.datetime.strptime("2024-01-02 03:04:05", "%Y-%m-%d %H:%M:%S")
assert d.strftime("%A %d %B %Y %H:%M") == "Tuesday 02 January 2024 03:04"
assert datetime.datetime.fromtimestamp(0).isoformat() == "1970-01-01T00:00:00"  # UTC: no /etc/localtime
assert "é.example".encode("idna") == b"xn--9ca.example" and "é".encode("cp1252") == b"\xe9"
assert "é".encode("utf-16") == b"\xff\xfe\xe9\x00" and len("é".encode("utf-32")) == 8 and "é".encode("latin-1") == b"\xe9"
assert urllib.parse.urlsplit("http://a/b?c=d").query == "c=d" and urllib.parse.parse_qs("a=1") == {"a": ["1"]}
assert urllib.parse.quote("a b") == "a%20b" and urllib.parse.urlencode({"a": 1}) == "a=1"
assert ipaddress.ip_address("10.0.0.1") in ipaddress.ip_network("10.0.0.0/8")
assert [str(h) for h in ipaddress.ip_network("10.0.0.0/30").hosts()] == ["10.0.0.1", "10.0.0.2"]
assert base64.b64decode(base64.b64encode(b"x")) == b"x" and base64.b85encode(b"x") == b"cm"
assert struct.unpack(">HI", struct.pack(">HI", 1, 2)) == (1, 2) and binascii.crc32(b"x") == 2363233923
assert math.isqrt(10) == 3 and _ast.PyCF_ONLY_AST
try:
    int("1" * 5000)
    raise AssertionError("int_max_str_digits not applied")
except ValueError:
    pass
try:
    import ctypes
    raise AssertionError("ctypes importable")
except ImportError:
    pass
# A FutureWarning from re is shown through warnings.py, which tries a lazy
# `import linecache` (not in the rootfs; the failure is caught): coil should
# run with warnoptions=["ignore"] so user code never triggers that path.
import warnings
warnings.simplefilter("ignore")
re.compile("[[a]")
files = sorted(m.__spec__.origin for m in list(sys.modules.values())
               if getattr(m, "__spec__", None) and (m.__spec__.origin or "").startswith("/"))
print(f"smoke: ok, {len(sys.modules)} modules loaded, {len(files)} from files in the rootfs", flush=True)
