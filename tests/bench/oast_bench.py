"""The OAST listener under dnsperf: queries per second and latency
percentiles of answers a tenant handler decides (coil in the path), beside
the same listener answering from a static zone (no handler: the ceiling).

Run by tests/bench/oast_bench.sh from the repository root, as root.
Environment: OAST_BENCH_SECONDS (per phase, default 20), OAST_BENCH_BACKEND
(serve, the default: a private `coil serve` started with oast/serve_proc.py
as `make oast-demo` does; or py), OAST_BENCH_OUTSTANDING (dnsperf -q of the
handler phase; unset, the serve backend's is run at 100 and at its
in-flight cap).
Exit status 0 whatever the numbers; 1 when the listener or dnsperf failed,
or an answer was wrong (a timing of wrong answers is worthless)."""

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile

REPO = os.path.abspath(os.getcwd())
sys.path.insert(0, REPO)
from oast import serve_proc  # noqa: E402

SECONDS = int(os.environ.get("OAST_BENCH_SECONDS", "20"))
BACKEND = os.environ.get("OAST_BENCH_BACKEND", "serve")
INFLIGHT = 2 if BACKEND == "py" else 8
# Queries dnsperf keeps outstanding: the static phase always 100; the
# handler phase by default 4 with the py backend (two slots and a short
# queue: more only measures how fast the listener answers SERVFAIL to a
# full queue); with serve twice, 100 (saturated: latency is mostly the
# wait in line) and the tenant's in-flight cap (every slot busy, none
# waiting: the latency of an answer at that rate).
OUTSTANDING = os.environ.get("OAST_BENCH_OUTSTANDING")
HANDLER_PHASES = ([OUTSTANDING] if OUTSTANDING else
                  ["4"] if BACKEND == "py" else ["100", str(INFLIGHT)])
WANT = {"static": "192.0.2.53", "handler": "198.51.100.1"}
# Distinct query names in the handler phase's query file.
QNAMES = 10000
QUEUE = 64 if BACKEND == "py" else 128


def bench_config():
    return {
        "defaults": {"timeout_ms": 2000, "queue_ms": 1000, "memory_mb": 64,
                     "max_inflight": INFLIGHT, "max_queue": QUEUE,
                     "log_per_s": 1},
        "tenants": {"t1": {
            "zones": ["t1.oast.test"],
            "handlers": {"by_source": os.path.join(REPO, "oast", "handlers",
                                                   "by_source.py")},
            "dns": {"h": "by_source",
                    "static": {"static": {"answers": [
                        {"type": "A", "value": WANT["static"], "ttl": 60}]}}},
        }},
    }


def serve_config():
    """coil serve's tenant t1 with the listener's concurrency and limits.
    Its cgroup may use both CPUs, as in make bench's serve section: the
    bundle's own limit (one CPU) would measure that limit instead."""
    return {"tenants": [{
        "name": "t1", "uid": 300012, "gid": 300012, "allow": {"uids": [0]},
        "limits": {"timeout_ms": 2000, "memory_mb": 64, "in_flight": INFLIGHT,
                   "queue": QUEUE},
        "cgroup": {"cpu_millis": 2000}}]}


def percentile(sorted_vals, p):
    if not sorted_vals:
        return float("nan")
    k = min(len(sorted_vals) - 1, max(0, int(round(p / 100.0 * len(sorted_vals))) - 1))
    return sorted_vals[k]


def dnsperf(port, name, d, outstanding):
    qfile = os.path.join(d, name + ".txt")
    with open(qfile, "w") as f:
        if name == "handler":
            # Distinct names, as OAST callbacks carry (each payload's own
            # token): calls for one name run one after another, since each
            # may see the state the previous one left (docs/oast.md).
            for i in range(QNAMES):
                f.write("c%05d.h.t1.oast.test A\n" % i)
        else:
            f.write("static.t1.oast.test A\n")
    r = subprocess.run(["dnsperf", "-s", "127.0.0.1", "-p", str(port), "-d", qfile,
                        "-l", str(SECONDS), "-q", outstanding, "-t", "5", "-v"],
                       capture_output=True, text=True, timeout=SECONDS + 60)
    if r.returncode != 0:
        raise RuntimeError("dnsperf failed: %s" % r.stderr[-500:])
    lat = {}
    for line in r.stdout.splitlines():
        if line.startswith("> "):
            parts = line.split()
            lat.setdefault(parts[1], []).append(float(parts[-1]))
    stats = {}
    for line in r.stdout.splitlines():
        line = line.strip()
        for key in ("Queries sent", "Queries completed", "Queries lost",
                    "Run time (s)"):
            if line.startswith(key + ":"):
                stats[key] = float(line.split(":")[1].split()[0])
    return lat, stats


def check_answer(port, name):
    r = subprocess.run(["dig", "@127.0.0.1", "-p", str(port), "+short", "+tries=1",
                        "+time=10", name + ".t1.oast.test"],
                       capture_output=True, text=True, timeout=30)
    got = r.stdout.split()
    if got != [WANT["handler" if name == "h" else "static"]]:
        raise RuntimeError("%s answered %r" % (name, got))


def main():
    if not shutil.which("dnsperf"):
        print("oast bench: dnsperf is missing (apt-get install dnsperf)", file=sys.stderr)
        return 1
    d = tempfile.mkdtemp(prefix="oast-bench-")
    cfg = os.path.join(d, "config.json")
    with open(cfg, "w") as f:
        json.dump(bench_config(), f)
    coil = os.path.join(REPO, "coil")
    argv = ["/usr/bin/python3", os.path.join(REPO, "oast", "listener.py"),
            "--config", cfg, "--backend", BACKEND, "--dns", "127.0.0.1:0",
            "--coil", coil, "--coil-root", os.path.join(d, "root")]
    serve = None
    p = None
    err = open(os.path.join(d, "listener.err"), "w")
    try:
        if BACKEND == "serve":
            scfg = os.path.join(d, "serve.json")
            with open(scfg, "w") as f:
                json.dump(serve_config(), f)
            serve = serve_proc.start(coil, scfg, os.path.join(d, "serve.err"))
            argv += ["--serve-socket", serve.socket]
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err)
        ready, _, _ = select.select([p.stdout], [], [], 60)
        line = p.stdout.readline() if ready else b""
        if not line:
            raise RuntimeError("the listener did not start")
        port = json.loads(line)["dns"][1]
        check_answer(port, "static")
        check_answer(port, "h")
        print("oast bench: dnsperf -l %d, backend %s (%d in flight), %d CPUs"
              % (SECONDS, BACKEND, INFLIGHT, os.cpu_count()))
        print("%-22s %4s %8s %9s %7s %7s %7s %7s %7s" % (
            "answers", "-q", "sent", "lost", "qps", "ok/s", "p50 ms", "p90 ms",
            "p99 ms"))
        phases = [("static", "static zone (ceiling)", "100")] + [
            ("handler", "handler (coil %s)" % BACKEND, q)
            for q in HANDLER_PHASES]
        for name, label, outstanding in phases:
            lat, st = dnsperf(port, name, d, outstanding)
            ok = sorted(lat.get("NOERROR", []))
            allv = sorted(v for vs in lat.values() for v in vs)
            secs = st.get("Run time (s)", SECONDS) or SECONDS
            print("%-22s %4s %8d %9d %7.0f %7.0f %7.2f %7.2f %7.2f" % (
                label, outstanding, st.get("Queries sent", 0), st.get("Queries lost", 0),
                len(allv) / secs, len(ok) / secs, percentile(ok, 50) * 1e3,
                percentile(ok, 90) * 1e3, percentile(ok, 99) * 1e3))
            other = {k: len(v) for k, v in lat.items() if k != "NOERROR"}
            if other:
                print("%-27s other answers: %s (the tenant's queue was full: "
                      "SERVFAIL at once)" % ("", other))
        check_answer(port, "h")
        return 0
    except (RuntimeError, subprocess.TimeoutExpired, OSError, ValueError) as e:
        print("oast bench: %s" % e, file=sys.stderr)
        return 1
    finally:
        if p is not None:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=60)
        if serve is not None:
            serve.stop()
        err.close()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
