#!/usr/bin/env bash
# Build the guest initramfs for one kernel.
#
#   tests/vm/initramfs.sh ID KODIR OUT.cpio.gz
#
# Contents:
#   /bin/busybox (+ applet links), /usr/lib/iproute2/ip = $IP (iproute2, netns capable; /sbin/ipr wraps it),
#   /usr/bin/iperf3, their shared libraries,
#   /lib/modules/VER/...   stock modules for virtio networking and veth (decompressed)
#   /etc/modlist           ordered insmod list loaded by /init (virtio_pci, virtio_net, veth, vmxnet3)
#   /etc/modlist.d/NAME    ordered insmod list of each module NAME (for rmmod/re-insmod)
#   /ko/*.ko               every module from KODIR
#   /tests/                REPO/tests/guest/* (or $PPCOAL_GUEST_DIR/*)
#   /etc/ppcoal-env        PPCOAL_KERNEL, PPCOAL_KVER, IP (sourced by /init)
#
# Environment: PPCOAL_GUEST_MODULES (default "virtio_pci virtio_net veth vmxnet3"),
# PPCOAL_GUEST_BINS (extra host binaries to copy with their libraries).
set -euo pipefail

# shellcheck source=tests/vm/kernels.sh
. "$(dirname "${BASH_SOURCE[0]}")/kernels.sh"

[ $# -eq 3 ] || die "usage: $0 ID KODIR OUT.cpio.gz"
id=$1 kodir=$2 out=$3
check_id "$id"
kernel_pin "$id"
ver=$(kernel_version "$id")
modroot=$(kernel_modroot "$id")
[ -d "$modroot/lib/modules/$ver" ] || die "kernel $id not prepared (run kernels.sh prepare $id)"
guest_modules=${PPCOAL_GUEST_MODULES:-virtio_pci virtio_net veth vmxnet3}

stage=$(mktemp -d "${TMPDIR:-/tmp}/ppcoal-initramfs.XXXXXX")
trap 'rm -rf "$stage"' EXIT

mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,etc/modlist.d,proc,sys,dev,run,tmp,root,ko,tests,mnt,var}
ln -s ../run "$stage/var/run"
ln -s ../tmp "$stage/var/tmp"
mknod -m 600 "$stage/dev/console" c 5 1
mknod -m 666 "$stage/dev/null" c 1 3

# busybox + applet links (never overwriting a real binary)
cp /bin/busybox "$stage/bin/busybox"
while read -r applet; do
	applet=${applet#/}
	if [ -e "$stage/$applet" ] || [ -L "$stage/$applet" ]; then continue; fi
	mkdir -p "$stage/$(dirname "$applet")"
	ln -s /bin/busybox "$stage/$applet"
done < <(/bin/busybox --list-full)

# copy_bin SRC DST: copy a dynamically linked binary and its libraries.
copy_bin() {
	local src=$1 dst=$2 lib
	install -D -m 755 "$src" "$stage$dst"
	while read -r lib; do
		[ -n "$lib" ] || continue
		if [ -e "$stage$lib" ]; then continue; fi
		mkdir -p "$stage$(dirname "$lib")"
		cp -L "$lib" "$stage$lib"
	done < <(ldd "$src" | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p')
}
# iproute2 picks its command from argv[0] when the name is longer than "ip"
# ("ipr" would mean "ip route"): keep the binary named ip, plus a wrapper.
copy_bin "$(command -v ip || echo /bin/ip)" /usr/lib/iproute2/ip
printf '#!/bin/sh\nexec /usr/lib/iproute2/ip "$@"\n' >"$stage/sbin/ipr"
chmod 755 "$stage/sbin/ipr"
copy_bin "$(command -v iperf3)" /usr/bin/iperf3
# Test tools (tests/tools/*.c), static so they need no libraries.
for t in "$PPCOAL_REPO"/tests/tools/*.c; do
	gcc -O2 -Wall -Wextra -static -o "$stage/usr/bin/$(basename "$t" .c)" "$t"
done
# User tools that run on the target (POSIX sh)
install -m 755 "$PPCOAL_REPO/scripts/ppcoal-stat" "$stage/usr/bin/ppcoal-stat"
install -m 755 "$PPCOAL_REPO/scripts/ppcoal-ab" "$stage/usr/bin/ppcoal-ab"
install -m 755 "$PPCOAL_REPO/scripts/ppcoal" "$stage/usr/bin/ppcoal"
install -D -m 644 "$PPCOAL_REPO/scripts/page-pool-drivers.tsv" "$stage/usr/share/ppcoal/page-pool-drivers.tsv"
sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$PPCOAL_REPO/dkms.conf" >"$stage/usr/share/ppcoal/version"
for b in ${PPCOAL_GUEST_BINS:-}; do
	copy_bin "$(command -v "$b")" "/usr/bin/$(basename "$b")"
done
# Debian's multiarch libs live in /lib/x86_64-linux-gnu; /lib64 holds the loader.
[ -e "$stage/lib64/ld-linux-x86-64.so.2" ] || die "loader missing from initramfs"

# Stock kernel modules in dependency order, decompressed (busybox insmod cannot
# read .ko.xz). Paths are kept relative to /lib/modules/VER.
: >"$stage/etc/modlist"
for m in $guest_modules; do
	: >"$stage/etc/modlist.d/$m"
	while read -r kind path _; do
		[ "$kind" = insmod ] || continue
		rel=${path#"$modroot"}
		rel=${rel/#\/usr\/lib\/modules/\/lib\/modules}
		dstrel=${rel%.xz}
		dstrel=${dstrel%.zst}
		if [ ! -f "$stage$dstrel" ]; then
			mkdir -p "$stage$(dirname "$dstrel")"
			case "$path" in
			*.xz) xz -dc "$path" >"$stage$dstrel" ;;
			*.zst) zstd -qdc "$path" >"$stage$dstrel" ;;
			*) cp "$path" "$stage$dstrel" ;;
			esac
		fi
		echo "$dstrel" >>"$stage/etc/modlist.d/$m"
		grep -qxF "$dstrel" "$stage/etc/modlist" || echo "$dstrel" >>"$stage/etc/modlist"
	done < <(modprobe -d "$modroot" -S "$ver" --show-depends "$m")
	[ -s "$stage/etc/modlist.d/$m" ] || log "note: $m is built into $ver (nothing to insmod)"
done
cp "$modroot/lib/modules/$ver/modules.builtin" "$stage/lib/modules/$ver/" 2>/dev/null || true

# Modules under test
if [ -d "$kodir" ]; then
	find "$kodir" -maxdepth 1 -name '*.ko' -exec cp -t "$stage/ko" {} +
fi

# Guest test scripts
guest_dir=${PPCOAL_GUEST_DIR:-$PPCOAL_REPO/tests/guest}
if [ -d "$guest_dir" ]; then
	cp -a "$guest_dir/." "$stage/tests/"
fi
# The counter names the module's table declares, for the guest's checks.
if [ -x "$PPCOAL_REPO/scripts/ppcoal-doc" ]; then
	"$PPCOAL_REPO/scripts/ppcoal-doc" names >"$stage/tests/counters.txt"
fi

cat >"$stage/etc/ppcoal-env" <<EOF
export PPCOAL_KERNEL=$id
export PPCOAL_KVER=$ver
export IP=/usr/lib/iproute2/ip
EOF

cat >"$stage/init" <<'EOF'
#!/bin/sh
export PATH=/sbin:/bin:/usr/sbin:/usr/bin
mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null || echo "init: debugfs mount failed"
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || echo "init: tracefs mount failed"
. /etc/ppcoal-env
hostname "ppcoal-$PPCOAL_KERNEL"
ip link set lo up
while read -r m; do
	[ -n "$m" ] || continue
	insmod "$m" || echo "init: insmod $m failed"
done </etc/modlist
# maxcpus=1 (the mttcg boots): the other vCPUs come online only now, after
# PCI enumeration and the NICs' probe have changed QEMU's memory map
# (a test, cpu-online: the races need every vCPU)
if grep -q maxcpus= /proc/cmdline; then
	for c in /sys/devices/system/cpu/cpu[0-9]*/online; do
		[ "$(cat "$c")" = 0 ] || continue
		echo 1 >"$c" || echo "init: cannot bring ${c%/online} online"
	done
	c=/sys/devices/system/cpu
	if [ "$(cat $c/online)" = "$(cat $c/present)" ]; then
		echo "PPCOAL-RESULT PASS cpu-online"
	else
		echo "PPCOAL-RESULT FAIL cpu-online online $(cat $c/online), present $(cat $c/present)"
	fi
fi
echo "init: kernel $PPCOAL_KVER ($PPCOAL_KERNEL), $(grep -c ^processor /proc/cpuinfo) CPUs online, cmdline: $(cat /proc/cmdline)"
# ppcoal.watchdog=S (tests/vm/boot.sh, a minute before it kills QEMU): at S s
# of uptime, if the tests still run, show where they wait. One read with a
# timeout on a FIFO nobody writes: no process wakes before then.
wd=$(sed -n 's/.*ppcoal\.watchdog=\([0-9]*\).*/\1/p' /proc/cmdline)
left=$((${wd:-0} - $(cut -d. -f1 /proc/uptime)))
if [ "$left" -gt 0 ] && mkfifo /run/watchdog; then
	(
		read -r -t "$left" x <>/run/watchdog
		echo "init: watchdog: the tests still run at $wd s of uptime; tasks, CPUs and NICs follow"
		for t in /proc/[0-9]*; do
			c=$(tr '\0' ' ' <"$t/cmdline")
			[ -n "$c" ] || continue	# a kernel thread
			echo "init: watchdog: $c waits in $(cat "$t/wchan"):"
			cat "$t/stack"
		done
		echo w >/proc/sysrq-trigger
		echo l >/proc/sysrq-trigger
		. /tests/lib.sh && net_diag
	) &
fi
if [ -x /tests/run-guest.sh ]; then
	/tests/run-guest.sh
else
	echo "PPCOAL-RESULT FAIL guest-script /tests/run-guest.sh missing"
	echo "PPCOAL-DONE"
fi
sync
poweroff -f
sleep 5
echo "init: poweroff failed, trying sysrq/reboot"
echo 1 >/proc/sys/kernel/sysrq
echo o >/proc/sysrq-trigger
sleep 5
reboot -f
EOF
chmod 755 "$stage/init"

mkdir -p "$(dirname "$out")"
(cd "$stage" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc -R 0:0 --quiet) | gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
log "initramfs for $id: $out ($(du -h "$out" | cut -f1))"
