#!/usr/bin/env bash
# The ppcoal-dkms package's life in throw-away Debian roots, as an
# administrator lives it; prints "PASS host:x" / "FAIL host:x: why" lines.
#
# Usage: tests/lifecycle.sh DEB SUITE...    (SUITE: bookworm, trixie)
#
# Per suite, in a root made by mmdebstrap from the mirror of the host's apt
# sources (cached as a tarball under $PPCOAL_CACHE/roots; downloaded .debs
# are kept there too):
#   lifecycle-SUITE-install      apt install ./ppcoal-dkms_*.deb: sources in
#                                /usr/src, registered with dkms
#   lifecycle-SUITE-headers      linux-headers-amd64 afterwards: the kernel hook
#                                builds and installs the module (modinfo; signed
#                                when dkms has a MOK key)
#   lifecycle-SUITE-unsupported  linux-headers-rt-amd64: apt exits 0, one line
#                                explains, no module
#   lifecycle-SUITE-cloud        linux-headers-cloud-amd64: built automatically
#                                (the same checks as -headers)
#   lifecycle-SUITE-remove-headers  purging the cloud and rt headers succeeds
#   lifecycle-SUITE-purge        apt purge ppcoal-dkms: nothing left in /usr/src,
#                                /var/lib/dkms, /lib/modules or /etc/kernel
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
	rm -rf "$R"
	R=""
}
trap umount_root EXIT
trap 'umount_root; exit 1' INT TERM

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

# headers_built NAME META: install the headers meta package META; the hook
# must build and install ppcoal for its kernel: modinfo name and vermagic,
# signed when dkms has a MOK key, the hook's line in the apt output
headers_built() {
	local name=$1 meta=$2 mark k ko why=""
	mark=$(wc -l <"$log")
	if ! in_root "$log" apt-get install -y "$meta"; then
		echo "FAIL $t-$name: apt install $meta exited non-zero (log: $log)"
		return
	fi
	k=$(abi_of "$meta")
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
	tail -n +"$mark" "$log" | grep -q "ppcoal-dkms: ppcoal $ver built and installed for $k" ||
		why="${why:+$why; }the hook's line is missing from the apt output"
	if [ -n "$why" ]; then
		echo "FAIL $t-$name: $k: $why (log: $log)"
		return
	fi
	echo "PASS $t-$name"
	echo "  $suite: $k: signer $(chroot "$R" modinfo -F signer "$ko" | sed 's/^$/none/')" >&2
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

	# 1. the package
	if ! in_root "$log" apt-get install -y "/tmp/$debname"; then
		echo "FAIL $t-install: apt install ./$debname exited non-zero (log: $log)"
		umount_root
		continue
	elif [ ! -f "$R/usr/src/ppcoal-$ver/dkms.conf" ] ||
		! chroot "$R" dkms status -m ppcoal | grep -q "ppcoal/$ver"; then
		echo "FAIL $t-install: sources not in /usr/src/ppcoal-$ver or not registered with dkms (log: $log)"
	else
		echo "PASS $t-install"
	fi

	# 2. the stock kernel's headers: built by the hook
	headers_built headers linux-headers-amd64

	# 3. an unsupported flavour: apt succeeds, one line, no module
	mark=$(wc -l <"$log")
	if ! in_root "$log" apt-get install -y linux-headers-rt-amd64; then
		echo "FAIL $t-unsupported: apt install linux-headers-rt-amd64 exited non-zero with ppcoal-dkms installed (log: $log)"
	else
		k=$(abi_of linux-headers-rt-amd64)
		if [ -n "$(ko_of "$k")" ]; then
			echo "FAIL $t-unsupported: a module was installed for $k (log: $log)"
		elif ! tail -n +"$mark" "$log" | grep -q "ppcoal-dkms: no ppcoal module for $k: not a kernel ppcoal supports"; then
			echo "FAIL $t-unsupported: no explanation for $k in the apt output (log: $log)"
		else
			echo "PASS $t-unsupported"
		fi
	fi

	# 4. a new supported ABI (the cloud flavour): built automatically
	headers_built cloud linux-headers-cloud-amd64

	# 5. removing kernel headers (supported and not) with ppcoal installed
	kc=$(abi_of linux-headers-cloud-amd64)
	kr=$(abi_of linux-headers-rt-amd64)
	if ! in_root "$log" apt-get purge -y linux-headers-cloud-amd64 "linux-headers-$kc" \
		linux-headers-rt-amd64 "linux-headers-$kr"; then
		echo "FAIL $t-remove-headers: apt purge of the cloud and rt headers exited non-zero (log: $log)"
	else
		echo "PASS $t-remove-headers"
	fi

	# 6. purge: nothing left behind
	if ! in_root "$log" apt-get purge -y ppcoal-dkms; then
		echo "FAIL $t-purge: apt purge ppcoal-dkms exited non-zero (log: $log)"
	else
		left=$(cd "$R" && ls -d usr/src/ppcoal-* var/lib/dkms/ppcoal etc/kernel/*/ppcoal-dkms \
			usr/share/ppcoal lib/modules/*/updates/dkms/ppcoal.ko* 2>/dev/null | tr '\n' ' ')
		if [ -n "$left" ]; then
			echo "FAIL $t-purge: left behind: $left(log: $log)"
		else
			echo "PASS $t-purge"
		fi
	fi
	umount_root
done
