#!/bin/bash
# Boots Debian's own kernel under KVM with a pure cgroup v2 hierarchy and runs
# one command in it. The VM sees this machine's root filesystem read-only over
# 9p (so it runs the very binaries, bundle and tests built here), a tmpfs on
# the usual writable paths, and a writable scratch directory shared with the
# host that carries the command's exit status back.
#
#   tests/vm/run.sh [--mem MiB] [--cpus N] [--systemd] -- COMMAND...
#
# The command runs as root in the VM, with its working directory the
# repository, and its output on this terminal. Exits with its status.
# --systemd: systemd is PID 1 (with the system bus) and runs the command as
# a service, for the systemd cgroup driver; nothing else is started.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
MEM=3072
CPUS=2
SYSTEMD=
while [ $# -gt 0 ]; do
  case $1 in
  --mem) MEM=$2; shift 2 ;;
  --cpus) CPUS=$2; shift 2 ;;
  --systemd) SYSTEMD=1; shift ;;
  --) shift; break ;;
  *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: $0 [--mem MiB] [--cpus N] -- COMMAND..." >&2; exit 2; }

die() { echo "check-vm: $*" >&2; exit 1; }
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 is missing (make deps)"
BUSYBOX=/bin/busybox
# grep reads the whole list: with -q it could exit first, and under pipefail
# busybox's SIGPIPE would fail the check.
$BUSYBOX --list 2>/dev/null | grep -x switch_root >/dev/null ||
  die "$BUSYBOX (busybox-static) is missing"

# Debian's newest installed kernel whose modules are on this machine.
KVER=
for k in $(ls /boot/vmlinuz-* 2>/dev/null | sed 's|/boot/vmlinuz-||' | sort -V); do
  [ -f "/lib/modules/$k/modules.dep" ] && KVER=$k
done
[ -n "$KVER" ] || die "no kernel in /boot with modules in /lib/modules (make deps installs linux-image-amd64)"
KERNEL=/boot/vmlinuz-$KVER
MODDIR=/lib/modules/$KVER

WORK=$(mktemp -d /tmp/coil-vm.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
INITRD=$WORK/initrd
SCRATCH=$WORK/scratch
mkdir -p "$INITRD"/{bin,dev,proc,sys,newroot,modules} "$SCRATCH"
cp "$BUSYBOX" "$INITRD/bin/busybox"

# For --systemd: units that go to the VM's /etc/systemd/system. systemd
# boots into coil-vm.target (systemd.unit= below, so nothing this machine's
# default.target wants: containerd, databases, getty), which wants only the
# command's service; it and the system bus skip the default dependencies:
# no sysinit.target (udev, tmpfiles, fstab mounts), which under emulation
# would cost minutes.
write_systemd_units() { # dir
  local d=$1
  mkdir -p "$d/dbus.service.d" "$d/dbus.socket.d"
  cat >"$d/coil-vm.target" <<'UNIT'
[Unit]
Description=coil VM test
Wants=coil-vm-test.service
UNIT
  printf '[Unit]\nDefaultDependencies=no\n' >"$d/dbus.socket.d/coil-vm.conf"
  printf '[Unit]\nDefaultDependencies=no\n[Service]\nStandardOutput=null\n' \
    >"$d/dbus.service.d/coil-vm.conf"
  cat >"$d/coil-vm-test.service" <<'UNIT'
[Unit]
Description=coil VM test command
DefaultDependencies=no
Wants=dbus.service
After=dbus.service
[Service]
Type=oneshot
StandardOutput=null
ExecStart=/bin/sh -c '(. /tmp/vm-scratch/cmd; echo $? >/tmp/vm-scratch/rc.tmp) >/tmp/vm-scratch/out 2>&1 </dev/null; mv /tmp/vm-scratch/rc.tmp /tmp/vm-scratch/rc; sync; echo o >/proc/sysrq-trigger'
UNIT
}

# The modules for a 9p root over virtio and the scratch disk, and their
# dependencies, in load order.
declare -A SEEN=()
ORDER=()
add_module() { # name
  local line rel dep
  line=$(grep -E "/$1\.ko(\.[a-z]+)?:" "$MODDIR/modules.dep" | head -1) || return 0
  [ -n "$line" ] || return 0
  rel=${line%%:*}
  [ -z "${SEEN[$rel]:-}" ] || return 0
  SEEN[$rel]=1
  for dep in ${line#*:}; do add_module "$(basename "$dep" | sed 's/\.ko.*//')"; done
  ORDER+=("$rel")
}
for m in virtio_pci 9pnet_virtio 9p overlay virtio_blk; do add_module "$m"; done
: >"$INITRD/modules/order"
for rel in "${ORDER[@]}"; do
  f=$(basename "$rel")
  case $f in
  *.ko) cp "$MODDIR/$rel" "$INITRD/modules/$f" ;;
  *.ko.xz) xz -dc "$MODDIR/$rel" >"$INITRD/modules/${f%.xz}"; f=${f%.xz} ;;
  *.ko.zst) zstd -qdc "$MODDIR/$rel" >"$INITRD/modules/${f%.zst}"; f=${f%.zst} ;;
  *) die "unsupported module $rel" ;;
  esac
  echo "$f" >>"$INITRD/modules/order"
done

[ -z "$SYSTEMD" ] || write_systemd_units "$INITRD/systemd"
cp tests/vm/init "$INITRD/init"
chmod 0755 "$INITRD/init"
# The command, quoted for the shell that runs it in the VM.
{
  printf 'cd %q\n' "$REPO"
  printf '%q ' "$@"
  echo
} >"$SCRATCH/cmd"
(cd "$INITRD" && find . | cpio -o -H newc --quiet | gzip -1) >"$WORK/initrd.gz"
# A scratch disk the tests may overwrite (blockIO limits need a real
# block device): sparse, so it costs nothing until written; the VM finds it
# by its serial, coil-scratch, in /sys/block/*/serial.
truncate -s 64M "$WORK/scratch.img"

# KVM only where it is hardware virtualization (kvm_intel, kvm_amd): some
# hosts' /dev/kvm is a paravirtual backend (kvm_pvm) that runs only kernels
# built for it, and Debian's stock kernel never gets past its decompressor
# there. Elsewhere the VM runs under qemu's own emulation (TCG): the same
# kernel and hierarchy, only slower. COIL_VM_ACCEL=kvm|tcg overrides.
ACCEL_NAME=${COIL_VM_ACCEL:-}
if [ -z "$ACCEL_NAME" ]; then
  ACCEL_NAME=tcg
  for m in kvm_intel kvm_amd; do
    [ -d "/sys/module/$m" ] && ACCEL_NAME=kvm
  done
fi
case $ACCEL_NAME in
kvm) ACCEL=(-accel kvm -cpu host) ;;
tcg) ACCEL=(-accel tcg,thread=multi -cpu max) ;;
*) die "COIL_VM_ACCEL: expected kvm or tcg, got $ACCEL_NAME" ;;
esac
echo "check-vm: Debian kernel $KVER, accelerator $ACCEL_NAME$([ -d /sys/module/kvm_pvm ] && echo ' (/dev/kvm here is kvm_pvm, which cannot boot a stock kernel)')" >&2
VM_KERNEL_LOG=${COIL_VM_KERNEL_LOG:-quiet loglevel=3}
: >"$SCRATCH/out"
tail -n +1 -F "$SCRATCH/out" 2>/dev/null &
TAIL=$!
qemu-system-x86_64 "${ACCEL[@]}" -machine q35 -m "$MEM" -smp "$CPUS" \
  -display none -no-reboot -monitor none -serial file:"$WORK/console" -nic none \
  -kernel "$KERNEL" -initrd "$WORK/initrd.gz" \
  -append "console=ttyS0 $VM_KERNEL_LOG panic=-1${SYSTEMD:+ systemd.unit=coil-vm.target systemd.unified_cgroup_hierarchy=1 systemd.show_status=0 fstab=no}" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=passthrough,readonly=on,multidevs=remap \
  -virtfs local,path="$SCRATCH",mount_tag=scratch,security_model=passthrough,multidevs=remap \
  -drive file="$WORK/scratch.img",if=none,id=scratch,format=raw \
  -device virtio-blk-pci,drive=scratch,serial=coil-scratch \
  </dev/null || true
sleep 0.5
kill "$TAIL" 2>/dev/null || true
wait "$TAIL" 2>/dev/null || true
if [ ! -f "$SCRATCH/rc" ]; then
  echo "check-vm: the VM stopped without reporting an exit status; its console:" >&2
  tr -d '\033' <"$WORK/console" | tail -n 40 >&2
  exit 1
fi
exit "$(cat "$SCRATCH/rc")"
