#!/usr/bin/python3
"""`make oast-demo`: the listener on 127.0.0.1 (DNS :5353, HTTP :8053) with
oast/config.json's tenants t1 and t2, and how to query it. Ctrl-C stops it."""

import json
import os
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

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


def main():
    if os.geteuid() != 0:
        sys.stderr.write("oast-demo: must run as root (coil creates namespaces "
                         "and cgroups)\n")
        return 1
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "listener.py"),
                          "--config", os.path.join(HERE, "config.json")],
                         stdout=subprocess.PIPE, text=True)
    try:
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
    except KeyboardInterrupt:
        # The terminal's SIGINT reached the listener too; make sure it is
        # gone before returning.
        p.send_signal(signal.SIGINT)
        p.wait()
        print("oast-demo: stopped")
        return 0


if __name__ == "__main__":
    sys.exit(main())
