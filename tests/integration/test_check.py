"""`coil check FILE`: the static gate alone, as a linter (docs/gate.md,
AST allowlist)."""

import os
import re
import subprocess

import harness
from harness import coil, describe

CLEAN = '''import json
import urllib.parse


def handle(request):
    url = urllib.parse.urlsplit(request.get("url", "http://x.test/a?b=1"))
    return {"path": url.path, "body": json.dumps(sorted(request)),
            "note": f"{url.netloc!r:>10}"}
'''

# (line, col, message) of each violation in BAD, in order.
BAD = '''import os
def handle(request):
    x = ().__class__
    return "{}".format(x)
class A:
    pass
match 1:
    case _:
        pass
'''
BAD_WANT = [
    (1, 8, "import of 'os' is not allowed (helpers: json, re, base64, "
           "hashlib, hmac, math, struct, binascii, ipaddress, datetime, "
           "urllib.parse)"),
    (3, 12, "attribute '__class__' is not allowed (names starting with '_' "
            "are reserved)"),
    (4, 17, "'format' is not allowed: use an f-string"),
    (5, 1, "class definitions are not allowed"),
    (7, 1, "'match' statements are not allowed"),
]

LINE = re.compile(r"^(.*):(\d+):(\d+): (.+)$")


def write(name, text):
    path = os.path.join(harness.tmpdir(), name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def violations(r, shown):
    out = []
    for line in r.stdout.splitlines():
        m = LINE.match(line)
        assert m and m.group(1) == shown, "bad line %r\n%s" % (line,
                                                              describe(r))
        out.append((int(m.group(2)), int(m.group(3)), m.group(4)))
    return out


def test_check_clean_file():
    r = coil("check", write("clean.py", CLEAN))
    # stdout only: an ASan build may note its leak suppressions on stderr.
    assert r.returncode == 0 and r.stdout == "", describe(r)


def test_check_lists_every_violation_in_order():
    path = write("bad.py", BAD)
    r = coil("check", path)
    assert r.returncode == 126, describe(r)
    assert violations(r, path) == BAD_WANT, describe(r)


def test_check_stdin():
    r = coil("check", "-", input=BAD)
    assert r.returncode == 126, describe(r)
    assert violations(r, "<stdin>") == BAD_WANT, describe(r)
    r = coil("check", "-", input=CLEAN)
    assert r.returncode == 0 and r.stdout == "", describe(r)


def test_check_syntax_error_and_limits():
    path = write("syntax.py", "def handle(request):\n    return (\n")
    r = coil("check", path)
    assert r.returncode == 126, describe(r)
    assert violations(r, path) == [
        (2, 12, "SyntaxError: '(' was never closed")], describe(r)
    path = write("big.py", "x = 1\n" + "#" * (65 * 1024) + "\n")
    r = coil("check", path)
    assert r.returncode == 126, describe(r)
    assert violations(r, path) == [
        (0, 0, "the source is larger than 65536 bytes")], describe(r)


def test_check_missing_file():
    path = os.path.join(harness.tmpdir(), "missing.py")
    r = coil("check", path)
    assert r.returncode == 1 and r.stdout == "", describe(r)
    assert "missing.py" in r.stderr, describe(r)


def test_check_usage():
    r = coil("check")
    assert r.returncode == 1, describe(r)


def test_attr_allowlist_is_current():
    """The committed ATTR_ALLOWLIST is what the generator makes from this
    host's Debian python3.11."""
    gen = os.path.join(harness.REPO, "sandbox", "gen_attr_allowlist.py")
    p = subprocess.run(["/usr/bin/python3", gen, "--check"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
