#!/bin/sh
# Installs the Debian 12 packages coil's build and tests need. Skips apt when
# everything is already present, so `make check` stays fast on a warm machine.
set -eu
PKGS="build-essential pkg-config clang libseccomp-dev libcap-dev libyajl-dev
libmount-dev libpython3.11-dev python3.11 python3-jsonschema busybox-static
iproute2 strace podman containerd libclang-rt-14-dev qemu-system-x86
linux-image-amd64 cpio python3-grpcio python3-protobuf protobuf-compiler
libsystemd-dev python3-dnslib python3-uvloop bind9-dnsutils curl dnsperf"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "install-deps: installing:$missing"
if [ "$(id -u)" != 0 ]; then
  echo "install-deps: must run as root to install:$missing" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# The kernel is installed for the test VMs, which build their own initrd:
# its hook need not build one (minutes of CI on slow machines).
export INITRD=No
apt-get update -q >/dev/null
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing >/dev/null
