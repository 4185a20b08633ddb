#!/usr/bin/python3
"""Runs coil's integration tests: every function named test_* in
tests/integration/test_*.py, in file order, with a leak check after each.

    /usr/bin/python3 tests/integration/run.py [-k SUBSTR]... [--coil PATH] [-v]
        [--dir DIR]

--dir takes the test_*.py files from DIR instead (tests that need what only
a VM has, such as systemd as PID 1: tests/vm/systemd); they use harness.py
all the same.

Prints `ok N - file::test` / `not ok N - file::test` (failure details as
`# ` lines) and ends with `N passed, M failed`; exits 1 if any test failed.
Must run as root (it creates namespaces, mounts and cgroups through coil).
"""

import argparse
import glob
import importlib.util
import inspect
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))


def comment(text):
    for line in str(text).rstrip("\n").splitlines() or [""]:
        print("# " + line)


def collect(patterns, where, skips=()):
    tests = []
    for path in sorted(glob.glob(os.path.join(where, "test_*.py"))):
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(mod)
        except Exception:  # noqa: BLE001
            tests.append((os.path.basename(path) + "::<import>", None,
                          traceback.format_exc()))
            continue
        fns = [(n, f) for n, f in vars(mod).items()
               if n.startswith("test_") and inspect.isfunction(f)
               and f.__module__ == mod.__name__]
        fns.sort(key=lambda nf: nf[1].__code__.co_firstlineno)
        for n, f in fns:
            tid = "%s::%s" % (os.path.basename(path), n)
            if patterns and not any(p in tid for p in patterns):
                continue
            if any(s in tid for s in skips):
                continue
            tests.append((tid, f, None))
    return tests


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", dest="patterns", action="append", default=[],
                    help="only tests whose file::name contains this (repeatable: any)")
    ap.add_argument("--skip", dest="skips", action="append", default=[],
                    help="leave out tests whose file::name contains this (repeatable)")
    ap.add_argument("--coil", default=None, help="coil binary under test")
    ap.add_argument("-v", action="store_true", help="print each test's time")
    ap.add_argument("--dir", default=HERE,
                    help="directory of the test_*.py files (default: this)")
    opts = ap.parse_args()

    if opts.coil:
        os.environ["COIL_BIN"] = os.path.abspath(opts.coil)
    sys.path.insert(0, HERE)
    import harness  # noqa: E402  (after COIL_BIN is set)

    if os.geteuid() != 0:
        print("integration tests must run as root")
        print("0 passed, 1 failed")
        return 1
    if not os.access(harness.COIL, os.X_OK):
        print("not ok 1 - coil binary %s is missing" % harness.COIL)
        print("0 passed, 1 failed")
        return 1

    harness.rootfs()
    tests = collect(opts.patterns, os.path.abspath(opts.dir), opts.skips)
    print("1..%d" % len(tests))
    comment("coil: %s" % harness.COIL)
    baseline = harness.Baseline()
    passed = failed = 0
    t_all = time.time()
    for n, (tid, fn, import_error) in enumerate(tests, 1):
        problems = []
        t0 = time.time()
        if import_error:
            problems.append(import_error)
        else:
            harness.REG.reset()
            try:
                fn()
            except AssertionError as e:
                tb = traceback.extract_tb(e.__traceback__)
                where = ""
                for fr in reversed(tb):
                    if os.path.basename(fr.filename).startswith("test_"):
                        where = "%s:%d: " % (os.path.basename(fr.filename),
                                             fr.lineno)
                        break
                problems.append("%sassertion failed: %s" % (
                    where, str(e) or (tb[-1].line if tb else "")))
            except Exception:  # noqa: BLE001
                problems.append(traceback.format_exc())
            try:
                leaks = harness.check_leaks(baseline)
            except Exception:  # noqa: BLE001
                leaks = ["leak check crashed:\n" + traceback.format_exc()]
            if leaks:
                problems.append("host not clean after the test:\n" +
                                "\n".join("  " + x for x in leaks))
            try:
                errs = harness.cleanup(baseline)
            except Exception:  # noqa: BLE001
                errs = ["cleanup crashed:\n" + traceback.format_exc()]
            if errs:
                comment("cleanup: " + "; ".join(errs))
        dt = time.time() - t0
        if problems:
            failed += 1
            print("not ok %d - %s" % (n, tid))
            for p in problems:
                comment(p)
        else:
            passed += 1
            print("ok %d - %s" % (n, tid))
        if opts.v:
            comment("%.2fs" % dt)
        sys.stdout.flush()
    comment("total %.1fs" % (time.time() - t_all))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
