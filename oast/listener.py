#!/usr/bin/python3
"""The OAST listener: authoritative DNS (UDP and TCP) and HTTP, each query or
hit answered by its tenant's handler, run sandboxed by coil.

    /usr/bin/python3 oast/listener.py [--config FILE] [--backend py|serve]
        [--dns HOST:PORT] [--http HOST:PORT] [--coil PATH]
        [--coil-root DIR] [--serve-socket PATH]

Once listening it prints one JSON line on stdout, {"dns": [host, port],
"http": [host, port], "backend": ..., "loop": "uvloop" or "asyncio"} (a
port given as 0 shows the port taken), and then serves until SIGINT or
SIGTERM. Failures are one line each on stderr. Exit status: 0 after a
signal, 2 for a bad configuration or option, 1 when a listener or the
backend cannot start. See docs/oast.md."""

import argparse
import asyncio
import json
import os
import signal
import sys

if not __package__:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from oast import backends, config, dnsd, httpd  # noqa: E402
from oast.dispatch import Core  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="oast/listener.py",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=os.path.join(HERE, "config.json"))
    ap.add_argument("--backend", choices=config.BACKENDS)
    ap.add_argument("--dns", help="HOST:PORT (overrides listen.dns)")
    ap.add_argument("--http", help="HOST:PORT (overrides listen.http)")
    ap.add_argument("--coil", help="the coil binary (overrides coil)")
    ap.add_argument("--coil-root", help="coil's --root for the py backend")
    ap.add_argument("--serve-socket", help="coil serve's socket")
    return ap.parse_args(argv)


def load(opts):
    cfg = config.load(opts.config)
    if opts.backend:
        cfg["backend"] = opts.backend
    for name in ("dns", "http"):
        v = getattr(opts, name)
        if v:
            cfg[name] = config.parse_addr(v, "--" + name)
    for name in ("coil", "coil_root", "serve_socket"):
        v = getattr(opts, name)
        if v:
            cfg[name] = os.path.abspath(v)
    if not cfg["dns"] and not cfg["http"]:
        raise config.ConfigError("listen: neither dns nor http is set")
    return cfg


async def main_async(cfg):
    core = Core(cfg, backends.make(cfg))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    servers = []
    ready = {"backend": cfg["backend"], "loop": cfg["event_loop"]}
    try:
        await core.start()
        for name, t in core.tenants.items():
            for h, why in t.rejected.items():
                sys.stderr.write("oast: tenant %s: handler %s is never run: "
                                 "%s\n" % (name, h, why))
        if cfg["dns"]:
            s, port = await dnsd.serve(core, *cfg["dns"])
            servers += s
            ready["dns"] = [cfg["dns"][0], port]
        if cfg["http"]:
            s, port = await httpd.serve(core, *cfg["http"])
            servers += s
            ready["http"] = [cfg["http"][0], port]
        ready["tenants"] = sorted(core.tenants)
        sys.stdout.write(json.dumps(ready) + "\n")
        sys.stdout.flush()
        await stop.wait()
    finally:
        for s in servers:
            s.close()
        await core.close()
    return 0


def use_uvloop():
    """uvloop's event loop (Debian's python3-uvloop) where it is installed:
    the listener spends much of each query in the event loop, and uvloop's
    is in C. Without it, asyncio's own loop serves the same."""
    try:
        import uvloop
    except ImportError:
        return "asyncio"
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return "uvloop"


def main(argv=None):
    opts = parse_args(argv)
    try:
        cfg = load(opts)
    except config.ConfigError as e:
        sys.stderr.write("oast: %s\n" % e)
        return 2
    cfg["event_loop"] = use_uvloop()
    try:
        return asyncio.run(main_async(cfg))
    except (OSError, RuntimeError) as e:
        sys.stderr.write("oast: cannot start: %s\n" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
