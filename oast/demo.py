#!/usr/bin/python3
"""`make oast-demo`: a private `coil serve` (oast/serve.json) and the
listener on 127.0.0.1 (DNS :5353, HTTP :8053) with oast/config.json's
tenants t1 and t2 calling it, and how to query them. Ctrl-C stops both and
removes what they created.

    /usr/bin/python3 oast/demo.py [--backend serve|py] [--dns HOST:PORT]
        [--http HOST:PORT] [--coil PATH]

--backend py (no coil serve: a cold `coil py` per call) is the fallback."""

import argparse
import json
import os
import signal
import subprocess
import sys

if not __package__:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from oast import config, serve_proc  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(HERE, "config.json")
SERVE_CONFIG = os.path.join(HERE, "serve.json")

HOWTO = """\
oast-demo: started the OAST listener (backend {backend}, tenants {tenants})
  DNS  udp+tcp {dns}   HTTP {http}

Watch a rebinding answer change (first the public address, then loopback):
  dig @127.0.0.1 -p {dport} rebind.t1.oast.test +short
  dig @127.0.0.1 -p {dport} rebind.t1.oast.test +short
  dig @127.0.0.1 -p {dport} other.rebind.t1.oast.test +short +tcp   (a new name starts over)
More:
  dig @127.0.0.1 -p {dport} tok.t1.oast.test TXT +short     (HMAC token per query)
  dig @127.0.0.1 -p {dport} -b 127.0.0.2 net.t1.oast.test +short   (by source network)
  curl -sL -H 'Host: redir.t1.oast.test' http://127.0.0.1:{hport}/chain/3
  dig @127.0.0.1 -p {dport} x.t2.oast.test +short            (tenant t2)
Handler failures are logged below, one line each. Ctrl-C stops the listener.
"""


STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


class Stop(Exception):
    pass


def _stop(signum, frame):
    raise Stop()


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="oast/demo.py",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=("serve", "py"), default="serve")
    ap.add_argument("--dns", default="127.0.0.1:5353", help="HOST:PORT")
    ap.add_argument("--http", default="127.0.0.1:8053", help="HOST:PORT")
    ap.add_argument("--coil", help="the coil binary (default: config.json's coil)")
    return ap.parse_args(argv)


def main(argv=None):
    opts = parse_args(argv)
    if os.geteuid() != 0:
        sys.stderr.write("oast-demo: must run as root (coil creates namespaces "
                         "and cgroups)\n")
        return 1
    try:
        coil = os.path.abspath(opts.coil or config.load(CONFIG)["coil"])
    except config.ConfigError as e:
        sys.stderr.write("oast-demo: %s\n" % e)
        return 2
    # SIGTERM stops the demo as Ctrl-C does.
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    serve = None
    p = None
    try:
        argv = [sys.executable, os.path.join(HERE, "listener.py"),
                "--config", CONFIG, "--backend", opts.backend, "--coil", coil,
                "--dns", opts.dns, "--http", opts.http]
        if opts.backend == "serve":
            # A signal while it starts would lose the server: it is taken
            # once `serve` holds it.
            signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
            try:
                serve = serve_proc.start(coil, SERVE_CONFIG)
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
            print("oast-demo: started coil serve (pid %d, tenants from %s, "
                  "socket %s)" % (serve.pid, os.path.relpath(SERVE_CONFIG),
                                  serve.socket), flush=True)
            argv += ["--serve-socket", serve.socket]
        # The terminal's Ctrl-C reaches the listener too; coil serve, in
        # its own session, is stopped only after the listener has exited,
        # so no call is cut off midway.
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        line = p.stdout.readline()
        if not line:
            return p.wait() or 1
        ready = json.loads(line)
        sys.stdout.write(HOWTO.format(
            backend=ready["backend"], tenants=" ".join(ready["tenants"]),
            dns="%s:%d" % tuple(ready["dns"]), http="%s:%d" % tuple(ready["http"]),
            dport=ready["dns"][1], hport=ready["http"][1]))
        sys.stdout.flush()
        return p.wait()
    except Stop:
        return 0
    except RuntimeError as e:
        sys.stderr.write("oast-demo: %s\n" % e)
        return 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if p is not None:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
            p.wait()
        if serve is not None:
            serve.stop()
        if p is not None or serve is not None:
            print("oast-demo: stopped", flush=True)


if __name__ == "__main__":
    sys.exit(main())
