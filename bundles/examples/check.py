"""Runs every example handler through coil (the gate with `coil check`, then
each requestN.json with `coil py`) and compares the envelope with
expectedN.json; only the keys present in the expected file are compared, so
coil may add others (stdout, col, exception)."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
COIL = os.environ.get("COIL_BIN") or os.path.join(HERE, "..", "..", "coil")


def subset(expected, got):
    if isinstance(expected, dict):
        return isinstance(got, dict) and all(
            k in got and subset(v, got[k]) for k, v in expected.items())
    return expected == got


def main():
    failed = 0
    root = tempfile.mkdtemp(prefix="coil-examples-")
    for name in sorted(os.listdir(HERE)):
        handler = os.path.join(HERE, name, "handler.py")
        if not os.path.isfile(handler):
            continue
        r = subprocess.run([COIL, "check", handler], capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL %s: coil check: %s" % (name, r.stdout + r.stderr))
            failed += 1
            continue
        for req in sorted(f for f in os.listdir(os.path.join(HERE, name))
                          if f.startswith("request")):
            n = req[len("request"):-len(".json")]
            with open(os.path.join(HERE, name, "expected%s.json" % n)) as f:
                expected = json.load(f)
            r = subprocess.run([COIL, "--root", root, "py", "--request",
                                "@" + os.path.join(HERE, name, req), "--entry",
                                "handle", handler], capture_output=True, text=True)
            try:
                got = json.loads(r.stdout)
            except ValueError:
                got = None
            ok = subset(expected, got)
            failed += not ok
            print("%s %s %s" % ("ok  " if ok else "FAIL", name, req))
            if not ok:
                print("     expected %s\n     got      %s %s" % (
                    json.dumps(expected), r.stdout.strip(), r.stderr.strip()))
    os.rmdir(root)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
