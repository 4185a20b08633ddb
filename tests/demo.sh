#!/bin/bash
# `make demo`: the DNS-rebinding example in coil's Python sandbox. A DNS
# callback service asks the user's handler how to answer; the handler's
# state (how often the name was seen) travels in the request, because every
# execution is a fresh, fully isolated process. Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
COIL=${COIL_BIN:-$PWD/coil}
HANDLER=bundles/examples/dns_rebind/handler.py
ROOT=$(mktemp -d /tmp/coil-demo-root-XXXXXX)
trap 'rm -rf "$ROOT"' EXIT

if [ "$(id -u)" != 0 ]; then
  echo "demo: coil needs root (namespaces, cgroups, mounts); run: sudo make demo" >&2
  exit 1
fi

echo "== the gate's verdict on $HANDLER"
"$COIL" check "$HANDLER" && echo "   clean"

ask() {
  local seen=$1
  local req="{\"qname\": \"x.oast.example\", \"qtype\": \"A\", \"src\": \"203.0.113.9\", \"seen\": $seen}"
  echo "== query with seen=$seen: $req" >&2
  "$COIL" --root "$ROOT" py --request "$req" --entry handle "$HANDLER"
}

first=$(ask 0)
echo "   $first"
seen=$(/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["seen"])' <<<"$first")
second=$(ask "$seen")
echo "   $second"

a1=$(/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["answer"])' <<<"$first")
a2=$(/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["answer"])' <<<"$second")
echo "== first answer: $a1, then: $a2"
[ "$a1" != "$a2" ] || { echo "demo: expected two different answers" >&2; exit 1; }

echo "== and a hostile handler, for contrast:"
set +e
"$COIL" --root "$ROOT" py --request '{}' --entry handle -c 'def handle(request):
    return ().__class__.__base__.__subclasses__()'
echo "   exit status: $? (126: rejected by the gate)"
