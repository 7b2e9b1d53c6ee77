#!/usr/bin/env bash
# The ppcoal-dkms package's life in throw-away Debian roots, as an
# administrator lives it; prints "PASS host:x" / "FAIL host:x: why" lines.
#
# Usage: tests/lifecycle.sh DEB SUITE...    (SUITE: bookworm, trixie)
#
# Per suite, in a root made by mmdebstrap from the mirror of the host's apt
# sources (cached as a tarball under $PPCOAL_CACHE/roots; downloaded .debs
# are kept there too):
#   lifecycle-SUITE-install      linux-headers-amd64, then apt install
#                                ./ppcoal-dkms_*.deb: registered with dkms, built
#                                for that kernel (modinfo name and vermagic;
#                                signed when dkms has a MOK key)
#   lifecycle-SUITE-unsupported  linux-headers-rt-amd64: apt exits 0, one line
#                                explains, no module
#   lifecycle-SUITE-cloud        linux-headers-cloud-amd64: built by the kernel hook
#   lifecycle-SUITE-upgrade      the package reinstalled: built again for both
#   lifecycle-SUITE-kernel-removal  /etc/kernel/prerm.d/dkms for both kernels
#                                (linux-image's prerm), then headers: built again
#   lifecycle-SUITE-remove       apt remove (hooks stay as conffiles): headers
#                                install exits 0, builds nothing
#   lifecycle-SUITE-purge        apt purge ppcoal-dkms: nothing left in /usr/src,
#                                /var/lib/dkms, /lib/modules, /usr/lib or /etc/kernel
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${PPCOAL_CACHE:-/var/cache/ppcoal}
deb=$1
shift
mirror=$("$REPO/scripts/ppcoal-verify-kernel" --mirror) || {
	echo "FAIL host:lifecycle: no Debian mirror in the host's apt sources"
	exit 0
}
roots=$CACHE/roots
mkdir -p "$roots/archives/partial"

R=""
umount_root() {
	[ -n "$R" ] || return 0
	local m
	for m in var/cache/apt/archives dev/pts dev sys proc; do
		mountpoint -q "$R/$m" && umount -l "$R/$m"
	done
	# never walk into the host's /dev or the shared cache
	if findmnt -R "$R" >/dev/null 2>&1; then
		echo "lifecycle: $R still has mounts; left in place" >&2
	else
		rm -rf --one-file-system "$R"
	fi
	R=""
}
trap umount_root EXIT
trap 'umount_root; exit 1' HUP INT TERM

# in_root LOG CMD...: run CMD in the root, output appended to LOG
in_root() {
	local log=$1
	shift
	echo "# $*" >>"$log"
	chroot "$R" env -i DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 HOME=/root \
		PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@" >>"$log" 2>&1
}

# ko_of KVER: ppcoal's module file for KVER in the root, if any
ko_of() { ls "$R/lib/modules/$1/updates/dkms/"ppcoal.ko* 2>/dev/null | head -n 1; }

# abi_of PKG: the kernel release the headers metapackage PKG depends on
abi_of() {
	chroot "$R" dpkg-query -W -f '${Depends}' "$1" 2>/dev/null |
		tr ',' '\n' | sed -n 's/^ *linux-headers-\([0-9][^ ]*\).*/\1/p' | head -n 1
}

# module_why K MARK: empty when ppcoal is built and installed for kernel K
# (modinfo name and vermagic, signed when dkms has a MOK key) and the
# hook's line for K is in the log after line MARK; else what is wrong
module_why() {
	local k=$1 mark=$2 ko why=""
	ko=$(ko_of "$k")
	if [ -z "$ko" ]; then
		why="no ppcoal.ko in /lib/modules/$k/updates/dkms"
	else
		ko=${ko#"$R"}
		[ "$(chroot "$R" modinfo -F name "$ko")" = ppcoal ] || why="modinfo -F name is not ppcoal"
		case $(chroot "$R" modinfo -F vermagic "$ko") in
		"$k "*) ;;
		*) why="vermagic is not $k" ;;
		esac
		if [ -f "$R/var/lib/dkms/mok.key" ] && [ -z "$(chroot "$R" modinfo -F signer "$ko")" ]; then
			why="dkms has a MOK key but the module is not signed"
		fi
	fi
	tail -n +"$mark" "$log" | grep "ppcoal-dkms: ppcoal $ver built and installed for $k" >/dev/null ||
		why="${why:+$why; }the hook's line is missing from the apt output"
	echo "$why"
}

# report NAME WHY: PASS when WHY is empty
report() {
	if [ -z "$2" ]; then echo "PASS $t-$1"; else echo "FAIL $t-$1: $2 (log: $log)"; fi
}

for suite in "$@"; do
	t=host:lifecycle-$suite
	log=${PPCOAL_OUT:-/tmp}/lifecycle-$suite.log
	: >"$log"
	tarball=$roots/$suite-dkms.tar
	if [ ! -s "$tarball" ]; then
		if ! mmdebstrap --variant=apt --format=tar --include=dkms,openssl,ca-certificates \
			--aptopt='Acquire::Retries "3"' \
			"$suite" "$tarball.tmp" "deb $mirror $suite main" >>"$log" 2>&1; then
			rm -rf "$tarball.tmp"
			echo "FAIL $t-install: mmdebstrap $suite failed (log: $log)"
			continue
		fi
		mv "$tarball.tmp" "$tarball"
	fi
	R=$(mktemp -d /var/tmp/ppcoal-root.XXXXXX)
	if ! tar -xf "$tarball" -C "$R" 2>>"$log"; then
		echo "FAIL $t-install: cannot unpack $tarball (log: $log)"
		rm -rf "$R" "$tarball"
		R=""
		continue
	fi
	mount -t proc proc "$R/proc"
	mount -t sysfs sys "$R/sys"
	mount --bind /dev "$R/dev"
	mount --bind /dev/pts "$R/dev/pts"
	mount --bind "$roots/archives" "$R/var/cache/apt/archives"
	cp "$deb" "$R/tmp/"
	debname=$(basename "$deb")
	ver=$(dpkg-deb -f "$deb" Version)

	if ! in_root "$log" apt-get update; then
		echo "FAIL $t-install: apt-get update in the $suite root failed (log: $log)"
		umount_root
		continue
	fi

	# 1. the stock kernel's headers, before the package
	if ! in_root "$log" apt-get install -y linux-headers-amd64; then
		echo "FAIL $t-install: apt install linux-headers-amd64 (before ppcoal) exited non-zero (log: $log)"
		umount_root
		continue
	fi
	ks=$(abi_of linux-headers-amd64)

	# 2. the package: registered, and built for the kernel already there
	mark=$(wc -l <"$log")
	if ! in_root "$log" apt-get install -y "/tmp/$debname"; then
		report install "apt install ./$debname exited non-zero"
		umount_root
		continue
	fi
	why=$(module_why "$ks" "$mark")
	[ -f "$R/usr/src/ppcoal-$ver/dkms.conf" ] && chroot "$R" dkms status -m ppcoal | grep "ppcoal/$ver" >/dev/null ||
		why="${why:+$why; }sources not in /usr/src/ppcoal-$ver or not registered with dkms"
	report install "$why"
	[ -n "$why" ] || echo "  $suite: $ks: signer $(chroot "$R" modinfo -F signer "$(ko_of "$ks" | sed "s|^$R||")" | sed 's/^$/none/')" >&2

	# 3. an unsupported flavour: apt succeeds, one line, no module
	mark=$(wc -l <"$log")
	if ! in_root "$log" apt-get install -y linux-headers-rt-amd64; then
		echo "FAIL $t-unsupported: apt install linux-headers-rt-amd64 exited non-zero with ppcoal-dkms installed (log: $log)"
	else
		k=$(abi_of linux-headers-rt-amd64)
		if [ -n "$(ko_of "$k")" ]; then
			echo "FAIL $t-unsupported: a module was installed for $k (log: $log)"
		elif ! tail -n +"$mark" "$log" | grep "ppcoal-dkms: no ppcoal module for $k: not a kernel ppcoal supports" >/dev/null; then
			echo "FAIL $t-unsupported: no explanation for $k in the apt output (log: $log)"
		else
			echo "PASS $t-unsupported"
		fi
	fi

	# 4. a new supported ABI (the cloud flavour): built by the kernel hook
	mark=$(wc -l <"$log")
	if ! in_root "$log" apt-get install -y linux-headers-cloud-amd64; then
		report cloud "apt install linux-headers-cloud-amd64 exited non-zero"
	else
		kc=$(abi_of linux-headers-cloud-amd64)
		report cloud "$(module_why "$kc" "$mark")"
	fi
	kc=$(abi_of linux-headers-cloud-amd64)

	# 5. upgrade (reinstall): the old prerm removes every build, the new
	# postinst builds for every kernel with headers again
	mark=$(wc -l <"$log")
	if ! in_root "$log" apt-get install -y --reinstall "/tmp/$debname"; then
		report upgrade "apt install --reinstall ./$debname exited non-zero"
	else
		why=$(module_why "$ks" "$mark")
		why2=$(module_why "$kc" "$mark")
		report upgrade "$why${why2:+; $why2}"
	fi

	# 6. kernels removed (what linux-image-*'s prerm runs): bookworm's
	# prerm.d/dkms drops the dkms registration with the last kernel built;
	# headers installed later must still get the module
	chroot "$R" /etc/kernel/prerm.d/dkms "$kc" >>"$log" 2>&1
	chroot "$R" /etc/kernel/prerm.d/dkms "$ks" >>"$log" 2>&1
	mark=$(wc -l <"$log")
	if ! in_root "$log" apt-get install -y --reinstall "linux-headers-$kc"; then
		report kernel-removal "apt install --reinstall linux-headers-$kc exited non-zero"
	else
		report kernel-removal "$(module_why "$kc" "$mark")"
	fi

	# 7. removed, not purged (the /etc hooks stay): a kernel's headers
	# install succeeds and builds nothing
	if ! in_root "$log" apt-get remove -y ppcoal-dkms; then
		report remove "apt remove ppcoal-dkms exited non-zero"
	else
		mark=$(wc -l <"$log")
		if ! in_root "$log" apt-get install -y --reinstall "linux-headers-$kc"; then
			report remove "with ppcoal-dkms removed, apt install --reinstall linux-headers-$kc exited non-zero"
		elif [ -n "$(ko_of "$kc")" ] || tail -n +"$mark" "$log" | grep "^ppcoal-dkms:" >/dev/null; then
			report remove "with ppcoal-dkms removed, the hook still ran or a module is left for $kc"
		else
			report remove ""
		fi
	fi

	# 8. purge: nothing left behind
	if ! in_root "$log" apt-get purge -y ppcoal-dkms; then
		echo "FAIL $t-purge: apt purge ppcoal-dkms exited non-zero (log: $log)"
	else
		left="cannot look into the root"
		[ -d "$R/usr" ] &&
			left=$(cd "$R" && ls -d usr/src/ppcoal-* var/lib/dkms/ppcoal etc/kernel/*/ppcoal-dkms \
				usr/share/ppcoal usr/lib/ppcoal-dkms lib/modules/*/updates/dkms/ppcoal.ko* \
				2>/dev/null | tr '\n' ' ')
		if [ -n "$left" ]; then
			echo "FAIL $t-purge: left behind: $left(log: $log)"
		else
			echo "PASS $t-purge"
		fi
	fi
	umount_root
done
