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
