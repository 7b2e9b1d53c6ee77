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
#   lifecycle-SUITE-tools        ppcoal-verify-kernel --version prints the
#                                package's version, --help exits 0, an argument
#                                that is no kernel exits 2 with one line
#   lifecycle-SUITE-unsupported  linux-headers-rt-amd64: apt exits 0, one line
#                                explains, no module
#   lifecycle-SUITE-cloud        linux-headers-cloud-amd64: built by the kernel hook
#   lifecycle-SUITE-kernel-update-verified  (bookworm) the headers of the kernel
#                                whose Debian source version is 6.1.176-1 (not in
#                                the shipped table) installed again with no
#                                record: the hook alone fetches linux-source-6.1
#                                6.1.176-1 inside the apt transaction (no dpkg
#                                lock) and records ok for every path; the
#                                modprobe.d line is right; --kernel answers 0
#                                with the mirror unreachable and no download
#   lifecycle-SUITE-kernel-update-changed  the same with page_pool_destroy's
#                                hash of 6.1.192-3 altered in the root's table:
#                                recycle records page_pool_destroy, the others
#                                ok; apt exits 0; --kernel exits 1 naming it
#   lifecycle-SUITE-kernel-update-offline  the same with the mirror unreachable
#                                (PPCOAL_MIRROR=http://127.0.0.1:9/debian) and no
#                                sources cached: one line says it could not
#                                verify, apt exits 0, no ok row
#   lifecycle-SUITE-upgrade      the package reinstalled: built again for both
#   lifecycle-SUITE-kernel-removal  /etc/kernel/prerm.d/dkms for both kernels
#                                (linux-image's prerm), then headers: built again
#   lifecycle-SUITE-remove       apt remove (hooks stay as conffiles): headers
#                                install exits 0, builds nothing
#   lifecycle-SUITE-purge        apt purge ppcoal-dkms: nothing left in /usr/src,
#                                /var/lib/dkms, /lib/modules, /usr/lib, /etc/kernel,
#                                /etc/modprobe.d, /var/lib/ppcoal or the cache
#   lifecycle-SUITE-conffile     /etc/modprobe.d/ppcoal.conf is a conffile with no
#                                uncommented line; purge removes /var/lib/ppcoal and
#                                the generated ppcoal-local-verified.conf
#
# dpkg-query's ${Field} formats are single-quoted on purpose; ls lists
# names the package made.
# shellcheck disable=SC2016,SC2012

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

# in_root LOG CMD...: run CMD in the root, output appended to LOG (with
# the variables of the array extra_env in its environment)
extra_env=()
in_root() {
	local log=$1
	shift
	echo "# ${extra_env[*]} $*" >>"$log"
	chroot "$R" env -i DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 HOME=/root \
		PATH=/usr/sbin:/usr/bin:/sbin:/bin "${extra_env[@]}" "$@" >>"$log" 2>&1
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

# The Debian kernel the kernel-update cases install: Debian 12's point
# release kernel, a source version the shipped table does not list.
KU_VERSION=6.1.176-1
# a mirror that refuses every connection
NOWHERE=http://127.0.0.1:9

# ku_package: the linux-headers-6.1.0-N-amd64 package of KU_VERSION in the
# root's archive (bookworm or bookworm-security)
ku_package() {
	local p
	for p in $(chroot "$R" apt-cache pkgnames linux-headers-6.1.0- 2>/dev/null |
		grep -E '^linux-headers-6\.1\.0-[0-9]+-amd64$' | sort -V); do
		if chroot "$R" apt-cache madison "$p" | awk -F'|' '{ gsub(/ /, "", $2); print $2 }' |
			grep -qx "$KU_VERSION"; then
			echo "$p"
			return
		fi
	done
}

# ku_rows KREL: PATH=RESULT for each row of KREL in the root's record
ku_rows() {
	awk -F'\t' -v k="$1" '!/^#/ && $1 == k { printf "%s%s=%s", n++ ? " " : "", $3, $4 }' \
		"$R/var/lib/ppcoal/verified-kernels.tsv" 2>/dev/null
}

# ku_expect WHY ROWS LINE: WHY, plus what is wrong with $ku's record (ROWS:
# "path=result ..." of the paths; each audited driver's row, audit_MODULE,
# must be ok or name a function the shipped table pins for MODULE: which
# driver functions Debian changed between the versions is the archive's
# fact, not the test's), the generated options line made of the record's
# rows, and the hook's LINE (a grep pattern) in the apt output since line
# $mark of $log
ku_expect() {
	local why=$1 rows paths r m f want
	rows=$(ku_rows "$ku")
	paths=$(tr ' ' '\n' <<<"$rows" | grep -v '^audit_' | paste -sd' ')
	[ "$paths" = "$2" ] || why="${why:+$why; }record of $ku: '$paths', not '$2'"
	for r in $(tr ' ' '\n' <<<"$rows" | grep '^audit_'); do
		m=${r%%=*} f=${r#*=}
		[ "$f" = ok ] || awk -F'\t' -v m="$m" -v f="$f" '!/^#/ && $3 == m && $5 == f { x = 1 } END { exit !x }' \
			"$R/usr/share/ppcoal/verified-functions.tsv" ||
			why="${why:+$why; }record of $ku: $r names no function pinned for $m"
	done
	want="options ppcoal local_verified=$(tr ' ' '\n' <<<"$rows" | sed "s|^\([a-z_0-9]*\)=|$KU_VERSION/\1/|" | paste -sd,)"
	grep -qx "$want" "$R/etc/modprobe.d/ppcoal-local-verified.conf" 2>/dev/null ||
		why="${why:+$why; }ppcoal-local-verified.conf lacks '$want'"
	tail -n +"$mark" "$log" | grep -q "$3" ||
		why="${why:+$why; }the hook's line is missing from the apt output"
	printf '%s\n' "$why"
}

# ku_forget: no record, no generated modprobe.d file
ku_forget() { rm -rf "$R/var/lib/ppcoal" "$R/etc/modprobe.d/ppcoal-local-verified.conf"; }

# ku_install PKG: apt installs PKG again (its postinst runs the kernel hooks);
# empty when apt exited 0, else why
ku_install() {
	if chroot "$R" dpkg-query -W -f '${db:Status-Abbrev}' "$1" 2>/dev/null | grep -q '^ii'; then
		in_root "$log" apt-get install -y --reinstall "$1" || echo "apt install --reinstall $1 exited non-zero"
	else
		in_root "$log" apt-get install -y "$1" || echo "apt install $1 exited non-zero"
	fi
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
	# the conffile as installed (reported with the purge, as conffile)
	cwhy=""
	if [ ! -f "$R/etc/modprobe.d/ppcoal.conf" ]; then
		cwhy="no /etc/modprobe.d/ppcoal.conf"
	elif grep -v -E '^[[:space:]]*(#|$)' "$R/etc/modprobe.d/ppcoal.conf" >/dev/null; then
		cwhy="/etc/modprobe.d/ppcoal.conf has an uncommented line: $(grep -v -E '^[[:space:]]*(#|$)' "$R/etc/modprobe.d/ppcoal.conf" | head -n 1)"
	elif ! chroot "$R" dpkg-query -W -f '${Conffiles}' ppcoal-dkms | grep -q ' /etc/modprobe.d/ppcoal.conf '; then
		cwhy="/etc/modprobe.d/ppcoal.conf is not a conffile of ppcoal-dkms"
	fi
	[ -n "$why" ] || echo "  $suite: $ks: signer $(chroot "$R" modinfo -F signer "$(ko_of "$ks" | sed "s|^$R||")" | sed 's/^$/none/')" >&2

	# the installed tools answer without a source tree
	why=""
	out=$(chroot "$R" ppcoal-verify-kernel --version 2>&1)
	[ "$out" = "ppcoal-verify-kernel $ver" ] || why="--version printed '$out', not 'ppcoal-verify-kernel $ver'"
	chroot "$R" ppcoal-verify-kernel --help 2>&1 | grep -q -- '--record-local KERNEL' ||
		why="${why:+$why; }--help shows no usage"
	out=$(chroot "$R" ppcoal-verify-kernel --kernel --help 2>&1)
	rc=$?
	[ "$rc" = 2 ] && [ "$(echo "$out" | wc -l)" = 1 ] ||
		why="${why:+$why; }--kernel --help exited $rc with '$out', not 2 with one line"
	report tools "$why"

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

	# 4b. kernel updates verify themselves (bookworm: Debian 12's point
	# release kernel is not in the shipped table)
	if [ "$suite" = bookworm ]; then
		kpkg=$(ku_package)
		ku=${kpkg#linux-headers-}
		vdir=$R/var/cache/ppcoal/verify
		if [ -z "$kpkg" ]; then
			for c in verified changed offline; do
				report "kernel-update-$c" "no linux-headers-6.1.0-N-amd64 of Debian $KU_VERSION in the root's archive"
			done
		elif grep -q "^$KU_VERSION	" "$R/usr/share/ppcoal/verified-functions.tsv"; then
			for c in verified changed offline; do
				report "kernel-update-$c" "Debian $KU_VERSION is in the shipped table: pick a kernel version it does not list"
			done
		else
			# verified: no record, no sources: the hook alone downloads
			# linux-source-6.1 inside the root (the root's network is the
			# host's), while apt and dpkg hold their locks
			ku_forget
			rm -rf "$vdir/src" "$vdir/debs"
			mark=$(wc -l <"$log")
			why=$(ku_install "$kpkg")
			why=$(ku_expect "$why" "coalesce=ok recycle=ok virtio=ok" \
				"^ppcoal: Debian $KU_VERSION ($ku) verified by equality with")
			grep -q "^Get:.*linux-source-6.1 .*$KU_VERSION" "$vdir/last-run.log" 2>/dev/null ||
				why="${why:+$why; }the hook did not download linux-source-6.1 $KU_VERSION ($vdir/last-run.log)"
			# --kernel: no network, no download
			touch "$R/tmp/ku-stamp"
			extra_env=("PPCOAL_MIRROR=$NOWHERE/debian" "PPCOAL_SECURITY_MIRROR=$NOWHERE/debian-security")
			in_root "$log" ppcoal-verify-kernel --kernel "$ku" || why="${why:+$why; }ppcoal-verify-kernel --kernel $ku exited $?, not 0"
			extra_env=()
			[ -z "$(find "$R/var/cache/ppcoal" -newer "$R/tmp/ku-stamp" 2>/dev/null)" ] ||
				why="${why:+$why; }ppcoal-verify-kernel --kernel wrote into /var/cache/ppcoal"
			report kernel-update-verified "$why"

			# changed: the shipped table altered (page_pool_destroy of
			# 6.1.192-3), the sources already extracted
			tbl=$R/usr/share/ppcoal/verified-functions.tsv
			cp "$tbl" "$R/tmp/table.orig"
			awk -F'\t' 'BEGIN { OFS = "\t" } $1 == "6.1.192-3" && $5 == "page_pool_destroy" { $6 = "0123456789abcdef" } 1' \
				"$R/tmp/table.orig" >"$tbl"
			ku_forget
			mark=$(wc -l <"$log")
			why=$(ku_install "$kpkg")
			why=$(ku_expect "$why" "coalesce=ok recycle=page_pool_destroy virtio=ok" \
				"^ppcoal: Debian $KU_VERSION ($ku): recycle stays off: page_pool_destroy changed")
			kmark=$(wc -l <"$log")
			in_root "$log" ppcoal-verify-kernel --kernel "$ku"
			rc=$?
			[ "$rc" = 1 ] || why="${why:+$why; }ppcoal-verify-kernel --kernel $ku exited $rc, not 1"
			tail -n +"$kmark" "$log" | grep -q "recycle .*page_pool_destroy" ||
				why="${why:+$why; }ppcoal-verify-kernel --kernel $ku does not name page_pool_destroy"
			cp "$R/tmp/table.orig" "$tbl"
			report kernel-update-changed "$why"

			# offline: the mirror unreachable, nothing cached
			ku_forget
			mv "$vdir/src" "$vdir/src.keep" 2>/dev/null
			mark=$(wc -l <"$log")
			extra_env=("PPCOAL_MIRROR=$NOWHERE/debian" "PPCOAL_SECURITY_MIRROR=$NOWHERE/debian-security")
			why=$(ku_install "$kpkg")
			extra_env=()
			rows=$(ku_rows "$ku")
			case " $rows" in *=ok*) why="${why:+$why; }an ok row was recorded for $ku: '$rows'" ;; esac
			tail -n +"$mark" "$log" | grep -q "^ppcoal: Debian $KU_VERSION ($ku) could not be verified (no network or no linux-source-6.1 $KU_VERSION in the archive): every path stays off on it; retry with: ppcoal verify --record-local $ku" ||
				why="${why:+$why; }the hook's line is missing from the apt output"
			in_root "$log" ppcoal-verify-kernel --kernel "$ku"
			rc=$?
			[ "$rc" = 2 ] || why="${why:+$why; }ppcoal-verify-kernel --kernel $ku exited $rc with no record, not 2"
			rm -rf "$vdir/src"
			mv "$vdir/src.keep" "$vdir/src" 2>/dev/null
			report kernel-update-offline "$why"
		fi
	fi

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
		elif [ -n "$(ko_of "$kc")" ] || tail -n +"$mark" "$log" | grep -E "^ppcoal(-dkms)?:" >/dev/null; then
			report remove "with ppcoal-dkms removed, the hook still ran or a module is left for $kc"
		else
			report remove ""
		fi
	fi

	# 8. purge: nothing left behind. A record to remove (where no kernel
	# needed verifying, as on trixie, one is made up)
	if [ ! -f "$R/var/lib/ppcoal/verified-kernels.tsv" ]; then
		mkdir -p "$R/var/lib/ppcoal"
		printf '%s\n' "6.12.0-0-amd64	6.12.0-0	coalesce	ok	6.12.117-1	2026-01-01T00:00:00Z	-" \
			>"$R/var/lib/ppcoal/verified-kernels.tsv"
		echo "options ppcoal local_verified=6.12.0-0/coalesce/ok" >"$R/etc/modprobe.d/ppcoal-local-verified.conf"
	fi
	if ! in_root "$log" apt-get purge -y ppcoal-dkms; then
		echo "FAIL $t-purge: apt purge ppcoal-dkms exited non-zero (log: $log)"
	else
		left="cannot look into the root"
		[ -d "$R/usr" ] &&
			left=$(cd "$R" && ls -d usr/src/ppcoal-* var/lib/dkms/ppcoal etc/kernel/*/ppcoal-dkms \
				usr/share/ppcoal usr/lib/ppcoal-dkms lib/modules/*/updates/dkms/ppcoal.ko* \
				etc/modprobe.d/ppcoal*.conf var/lib/ppcoal var/cache/ppcoal \
				2>/dev/null | tr '\n' ' ')
		if [ -n "$left" ]; then
			echo "FAIL $t-purge: left behind: $left(log: $log)"
		else
			echo "PASS $t-purge"
		fi
		for f in var/lib/ppcoal etc/modprobe.d/ppcoal-local-verified.conf; do
			[ ! -e "$R/$f" ] || cwhy="${cwhy:+$cwhy; }purge left /$f"
		done
	fi
	report conffile "$cwhy"
	umount_root
done
