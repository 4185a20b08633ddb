"""Python sandbox mode: the handler protocol at its edges (docs/python.md).

Request strings arrive exactly as sent or the request is refused; every
envelope is valid UTF-8 JSON, whatever bytes the request held; print output
over the cap ends the run as OutputLimit however it is produced; and a bad
`coil py --memory` is a one-line error, never a silently different limit.
Envelopes are read from the raw stdout bytes, decoded as strict UTF-8.
"""

import json
import os
import tempfile

import harness
from harness import describe


def handler(body):
    return "def handle(request):\n" + "".join(
        "    " + line + "\n" for line in body.splitlines())


def run_py(*args, request=None):
    """coil py ARGS; request (bytes) goes in through --request @FILE. Returns
    the CompletedProcess with stdout_bytes, the raw stdout."""
    extra = []
    if request is not None:
        path = os.path.join(harness.tmpdir(), "request.json")
        with open(path, "wb") as f:
            f.write(request)
        extra = ["--request", "@" + path]
    with tempfile.TemporaryFile() as out:
        r = harness.coil("py", *extra, *args, root=harness.new_root(),
                         stdout=out, timeout=60)
        out.seek(0)
        r.stdout_bytes = out.read()
    r.stdout = r.stdout_bytes.decode(errors="replace")
    return r


def envelope(r):
    """The one-line envelope, parsed from strictly decoded stdout."""
    text = r.stdout_bytes.decode("utf-8")  # raises on invalid UTF-8
    lines = text.splitlines()
    assert len(lines) == 1, "expected one envelope line\n" + describe(r)
    env = json.loads(lines[0])
    assert isinstance(env, dict) and "ok" in env, describe(r)
    return env


def handle(body, request):
    return run_py("--entry", "handle", "-c", handler(body), request=request)


def expect_error(r, rc, etype):
    env = envelope(r)
    err = env.get("error") or {}
    assert r.returncode == rc and not env["ok"] and err.get("type") == etype, \
        "expected %s / exit %d\n%s" % (etype, rc, describe(r))
    return err


def expect_result(r, want):
    env = envelope(r)
    assert r.returncode == 0 and env["ok"] and env["result"] == want, \
        "expected result %r\n%s" % (want, describe(r))


# ---- request strings ---------------------------------------------------------

def test_python_protocol_request_nul_escape_kept():
    r = handle("h = request['host']\nreturn [len(h), ord(h[8]), h[9:]]",
               b'{"host": "evil.com\\u0000.good.example"}')
    expect_result(r, [22, 0, ".good.example"])


def test_python_protocol_request_nul_escape_in_key():
    r = handle("return [[len(k), k] for k in request]",
               b'{"a\\u0000b": 1, "\\u0000": 2}')
    expect_result(r, [[3, "a\x00b"], [1, "\x00"]])


def test_python_protocol_request_escapes_and_pairs():
    r = handle("return [request, len(request[1])]",
               b'["\\u00e9\\t\\"\\\\/", "\\ud83d\\ude00", "\xc3\xa9\xf0\x9f\x98\x80"]')
    expect_result(r, [["\u00e9\t\"\\/", "\U0001f600", "\u00e9\U0001f600"], 1])


def test_python_protocol_request_lone_surrogate_refused():
    for doc in (b'{"s": "\\ud800"}', b'{"s": "x\\udc00y"}',
                b'["\\ud800\\u0041"]', b'{"\\udfff": 1}',
                b'["\\ud83d\\ud83d\\ude00"]'):
        r = handle("return 1", doc)
        err = expect_error(r, 125, "RequestError")
        assert "surrogate" in err["message"] and "char" in err["message"], \
            describe(r)


def test_python_protocol_request_nan_refused():
    for doc in (b'[NaN]', b'{"x": Infinity}', b'-Infinity'):
        r = handle("return 1", doc)
        expect_error(r, 125, "RequestError")


# ---- error envelopes stay valid UTF-8 -----------------------------------------

def test_python_protocol_request_invalid_utf8():
    r = handle("return 1", b'{"a": "\xff\xfe"}')
    err = expect_error(r, 125, "RequestError")
    assert "UTF-8" in err["message"] and "byte 7" in err["message"], \
        describe(r)


def test_python_protocol_request_bad_json_near_non_ascii():
    cases = ((b'{"na\xc3\xafve": tru}', "line 1 column 11 (char 10)"),
             (b'{"\xe4\xb8\xad": [1,\n "\xc3\xa9" 2]}', "line 2 column 6"),
             (b'["\xf0\x9f\x98\x80\xe2\x82', "UTF-8"),
             (b'{"\xc3\xa9\xc3\xa9": 1, "x": ' + b"\xc3\xa9" * 200, "char"))
    for doc, where in cases:
        r = handle("return 1", doc)
        err = expect_error(r, 125, "RequestError")
        assert where in err["message"] and err["message"].isascii(), \
            describe(r)


# ---- result strings -------------------------------------------------------------

def test_python_protocol_result_nul_escaped():
    r = handle("return {chr(0): 'a' + chr(0) + 'b'}", b"{}")
    expect_result(r, {"\x00": "a\x00b"})
    assert b"\\u0000" in r.stdout_bytes, describe(r)


def test_python_protocol_result_lone_surrogate_refused():
    for body in ("return 'a' + chr(0xd800)", "return {chr(0xdc00): 1}",
                 "print(chr(0xd800))\nreturn [1, chr(0xdfff)]"):
        r = handle(body, b"{}")
        err = expect_error(r, 1, "Exception")
        assert "surrogate" in err["message"], describe(r)


# ---- print output over the cap --------------------------------------------------

def test_python_protocol_print_loop_output_limit():
    r = handle("s = 'x' * 100000\nwhile True:\n    print(s)", b"{}")
    expect_error(r, 1, "OutputLimit")


def test_python_protocol_print_loop_swallowed_output_limit():
    r = handle("s = 'x' * 100000\nwhile True:\n    try:\n        print(s)\n"
               "    except:\n        pass", b"{}")
    expect_error(r, 1, "OutputLimit")


def test_python_protocol_single_huge_print_output_limit():
    for call in ("print('x' * (2 << 20))", "print('a', end='y' * (2 << 20))",
                 "print('a', 'b', sep='z' * (2 << 20))"):
        r = handle(call + "\nwhile True:\n    pass", b"{}")
        expect_error(r, 1, "OutputLimit")


def test_python_protocol_print_loop_output_limit_script_mode():
    r = run_py("-c", "s = 'x' * 100000\nwhile True:\n    print(s)\n")
    assert r.returncode == 1 and "OutputLimit" in r.stderr, describe(r)
    assert len(r.stdout_bytes) == 0, describe(r)


# ---- coil py --memory and --timeout -------------------------------------------

def test_python_protocol_memory_option_refused():
    for bad in ("17179869185g", "9223372036854775807k", "9007199254740992m",
                "99999999999999999999", "0", "0m", "-5m", "1023k", "", "abc",
                "12x", "5mb", " 5m", "+5m", "m"):
        r = run_py("--memory", bad, "-c", "print(1)")
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 125 and len(lines) == 1 and \
            "--memory" in lines[0] and repr(bad)[1:-1] in lines[0] and \
            not r.stdout_bytes, describe(r)


def test_python_protocol_memory_option_accepted():
    for good in ("204800k", "256M", "1g", "268435456"):
        r = run_py("--memory", good, "-c", "print(1)")
        assert r.returncode == 0 and r.stdout_bytes == b"1\n" and \
            not r.stderr, describe(r)


def test_python_protocol_timeout_option_refused():
    for bad in ("5s", "1.5", "0", "-1", "3601", "99999999999999999999", "",
                " 5", "+5", "x"):
        r = run_py("--timeout", bad, "-c", "print(1)")
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 125 and len(lines) == 1 and \
            "--timeout" in lines[0] and not r.stdout_bytes, describe(r)
