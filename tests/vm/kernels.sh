#!/usr/bin/env bash
# Kernel cache for the ppcoal VM tests.
#
# Sourceable library, or CLI:
#   tests/vm/kernels.sh prepare ID        download + extract kernel ID, provide its KDIR
#   tests/vm/kernels.sh version ID        print the resolved kernel release
#   tests/vm/kernels.sh kdir ID           print the KDIR used to build for ID
#   tests/vm/kernels.sh build ID OUTDIR   build the repo's modules for ID into OUTDIR
#   tests/vm/kernels.sh dkms ID OUTDIR    build through dkms (needs dkms.conf in the repo)
#   tests/vm/kernels.sh insn-plugin       build the instruction-counting TCG plugin, print its path
#   tests/vm/kernels.sh qemu-newer        unpack trixie's QEMU, print its wrapper's path
#
# Kernel IDs:
#   deb12     Debian 12 stock (bookworm + bookworm-security, host apt)
#   deb12bpo  bookworm-backports (headers extracted into the cache; built with host gcc-12)
#   deb13     Debian 13 stock (headers need gcc-14: built inside a trixie chroot)
#   deb12cloud  Debian 12's cloud-amd64 flavour (same source as deb12; headers
#             extracted into the cache, built with host gcc-12)
#   deb12-debug  deb12's own Debian source and config with the sanitizers
#             (KASAN, KFENCE, lockdep, DEBUG_VM, DMA_API_DEBUG, fault
#             injection), built here once and cached (see prepare_debug)
#   deb13-debug  the same for deb13 (its source and config; compiled by
#             Debian 13's gcc 14 in deb13's trixie chroot, as are the
#             modules for it)
#
# Environment:
#   PPCOAL_CACHE      cache root (default /var/cache/ppcoal)
#   PPCOAL_SRC        source tree to build (default: the repository)
#   PPCOAL_MIRROR     Debian mirror (default: the one in this machine's apt sources)
#   PPCOAL_APT_MAX_AGE  refresh private apt lists older than this many days (default 7)
#   PPCOAL_KVER_<ID>  force a kernel release for ID (e.g. PPCOAL_KVER_deb13=6.12.117+deb13-amd64;
#                     a hyphen in ID is an underscore here: PPCOAL_KVER_deb12_debug)
#   PPCOAL_DEBUG_JOBS make -j for a debug kernel's build (default: the CPUs)

PPCOAL_VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PPCOAL_REPO=${PPCOAL_REPO:-$(cd "$PPCOAL_VM_DIR/../.." && pwd)}
PPCOAL_CACHE=${PPCOAL_CACHE:-/var/cache/ppcoal}
# The mirror named in the machine's apt sources (a local mirror or proxy
# works); never a host name written here.
PPCOAL_MIRROR=${PPCOAL_MIRROR:-$("$PPCOAL_REPO/scripts/ppcoal-verify-kernel" --mirror 2>/dev/null || true)}
PPCOAL_KERNEL_IDS="deb12 deb12bpo deb13 deb12cloud deb12-debug deb13-debug"
# The hard limit of one guest boot (boot.sh), exported so that parse-log.sh
# names the limit that applied. A boot of the suite should need half of it.
export PPCOAL_BOOT_TIMEOUT=${PPCOAL_BOOT_TIMEOUT:-1200}

# Fallbacks used only when the version cannot be resolved from apt metadata.
declare -A PPCOAL_KVER_FALLBACK=(
	[deb12]=6.1.0-57-amd64
	[deb12bpo]=6.12.95+deb12-amd64
	[deb13]=6.12.117+deb13-amd64
	[deb12cloud]=6.1.0-57-cloud-amd64
)
# Which suite resolves the version ("host" = the machine's own bookworm sources).
declare -A PPCOAL_KSUITE=(
	[deb12]=host
	[deb12bpo]=bookworm-backports
	[deb13]=trixie
	[deb12cloud]=host
)
# The headers meta package whose dependency names the current release.
declare -A PPCOAL_KMETA=(
	[deb12cloud]=linux-headers-cloud-amd64
)

log() { printf '[ppcoal] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

check_id() {
	case " $PPCOAL_KERNEL_IDS " in
	*" $1 "*) ;;
	*) die "unknown kernel id '$1' (known: $PPCOAL_KERNEL_IDS)" ;;
	esac
}

# ---------------------------------------------------------------- apt helpers

_host_apt_updated=0
host_apt_update() {
	[ "$_host_apt_updated" = 1 ] && return 0
	log "apt-get update (host sources)"
	apt-get update -qq >&2 || log "WARNING: host apt-get update failed"
	_host_apt_updated=1
}

# Install host packages that are missing. Runs apt-get update at most once.
host_apt_install() {
	local missing=() p
	for p in "$@"; do
		if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'install ok installed' >/dev/null; then
			missing+=("$p")
		fi
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	log "installing host packages: ${missing[*]}"
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2; then
		host_apt_update
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
	fi
}

# Private apt configuration for one suite (trixie, bookworm-backports, ...).
# Never touches the machine's own sources, lists or package cache.
papt_dir() { printf '%s/apt/%s\n' "$PPCOAL_CACHE" "$1"; }

# papt_setup SUITE: a private list of SUITE's binary packages; SUITE-src: of
# its source packages (deb-src).
papt_setup() {
	local suite=${1%-src} type=deb d
	[ "$suite" = "$1" ] || type="deb-src"
	[ -n "$PPCOAL_MIRROR" ] || die "no Debian mirror in /etc/apt/sources.list or /etc/apt/sources.list.d/*.sources; add one or set PPCOAL_MIRROR"
	d=$(papt_dir "$1")
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial" "$d/etc"
	printf '%s %s %s main\n' "$type" "$PPCOAL_MIRROR" "$suite" >"$d/etc/sources.list.new"
	if ! cmp -s "$d/etc/sources.list.new" "$d/etc/sources.list" 2>/dev/null; then
		mv "$d/etc/sources.list.new" "$d/etc/sources.list"
		rm -f "$d/lists/"*_Packages* "$d/lists/"*_Sources* "$d/lists/"*Release*
	else
		rm -f "$d/etc/sources.list.new"
	fi
}

papt_opts() {
	local d
	d=$(papt_dir "$1")
	printf '%s\n' \
		-o "Dir::Etc::sourcelist=$d/etc/sources.list" \
		-o "Dir::Etc::sourceparts=/nonexistent" \
		-o "Dir::State::Lists=$d/lists" \
		-o "Dir::Cache=$d/cache" \
		-o "Dir::State::status=/dev/null" \
		-o "Debug::NoLocking=1" \
		-o "APT::Sandbox::User=root"
}

# papt SUITE apt-get|apt-cache ARGS...
papt() {
	local suite=$1 tool=$2
	shift 2
	local -a o
	mapfile -t o < <(papt_opts "$suite")
	"$tool" "${o[@]}" "$@"
}

# Make sure the private lists of SUITE exist and are not too old.
papt_ensure_lists() {
	local suite=$1 d age max=${PPCOAL_APT_MAX_AGE:-7}
	papt_setup "$suite"
	d=$(papt_dir "$suite")
	if compgen -G "$d/lists/*_Packages*" >/dev/null || compgen -G "$d/lists/*_Sources*" >/dev/null; then
		age=$(find "$d/lists" -maxdepth 1 \( -name '*_Packages*' -o -name '*_Sources*' \) -mtime "+$max" | wc -l)
		[ "$age" -eq 0 ] && return 0
		log "private apt lists for $suite older than $max days: refreshing"
		papt "$suite" apt-get update -qq >&2 || log "WARNING: apt-get update for $suite failed, using old lists"
		return 0
	fi
	log "apt-get update (private, $suite)"
	papt "$suite" apt-get update -qq >&2
}

# Print the single "linux-(image|headers)-*" dependency of a meta package.
_dep_of() {
	# stdin: apt-cache depends output; $1: regex prefix
	sed -n "s/^ *|\?Depends: \($1[^ <>]*\).*/\1/p" | head -n1
}

# ------------------------------------------------------------ version lookup

declare -A _kver_cache=()

# kernel_version ID -> kernel release, e.g. 6.1.0-57-amd64
kernel_version() {
	local id=$1 suite v="" var meta
	check_id "$id"
	if [ -n "${_kver_cache[$id]:-}" ]; then
		printf '%s\n' "${_kver_cache[$id]}"
		return 0
	fi
	meta=${PPCOAL_KMETA[$id]:-linux-headers-amd64}
	var="PPCOAL_KVER_${id//-/_}"
	if [ -n "${!var:-}" ]; then
		v=${!var}
	elif is_debug_id "$id"; then
		v=$(kernel_abi "$(kernel_version "${PPCOAL_DEBUG_BASE[$id]}")")-debug-amd64
	else
		suite=${PPCOAL_KSUITE[$id]}
		if [ "$suite" = host ]; then
			if ! apt-cache show "$meta" >/dev/null 2>&1; then host_apt_update; fi
			v=$(apt-cache -o Dir::State::status=/dev/null depends "$meta" 2>/dev/null |
				_dep_of 'linux-headers-' | sed 's/^linux-headers-//') || true
		else
			papt_ensure_lists "$suite" || true
			v=$(papt "$suite" apt-cache depends "$meta" 2>/dev/null |
				_dep_of 'linux-headers-' | sed 's/^linux-headers-//') || true
		fi
		if [ -z "$v" ]; then
			v=${PPCOAL_KVER_FALLBACK[$id]}
			log "WARNING: could not resolve kernel version of $id, falling back to $v"
		fi
	fi
	_kver_cache[$id]=$v
	printf '%s\n' "$v"
}

# kernel_pin ID: resolve the version once and export it (PPCOAL_KVER_ID), so
# later calls, subshells and child scripts skip the apt lookup.
kernel_pin() {
	local v
	! is_debug_id "$1" || kernel_pin "${PPCOAL_DEBUG_BASE[$1]}"
	v=$(kernel_version "$1")
	export "PPCOAL_KVER_${1//-/_}=$v"
}

# kernel_abi VER -> 6.12.95+deb12 (release without the flavour)
kernel_abi() { printf '%s\n' "${1%-amd64}"; }

# A chroot-built debug kernel's tree lives inside its chroot (build_chroot):
# removing that chroot removes the build too, and a new deb13 release
# brings a new chroot and a new debug build. A stock kernel's image is
# extracted before its chroot exists.
kernel_dir() {
	local ch=""
	! is_debug_id "$1" || ch=$(build_chroot "$1")
	printf '%s/kernels/%s\n' "${ch:-$PPCOAL_CACHE}" "$(kernel_version "$1")"
}
kernel_vmlinuz() { printf '%s/vmlinuz\n' "$(kernel_dir "$1")"; }
# Root of the extracted image: ROOT/lib/modules/VER exists.
kernel_modroot() { printf '%s/root\n' "$(kernel_dir "$1")"; }
kernel_chroot() { printf '%s/chroot/trixie-%s\n' "$PPCOAL_CACHE" "$(kernel_version "$1")"; }
# build_chroot ID: the chroot that compiles for ID (Debian 13's gcc 14), or
# nothing for the host's compiler. deb13-debug uses deb13's.
build_chroot() {
	case "$1" in
	deb13 | deb13-debug) kernel_chroot deb13 ;;
	esac
}
# in_build_env ID CMD...: run CMD where ID's code is compiled (its chroot,
# with a clean environment, or the host)
in_build_env() {
	local ch
	ch=$(build_chroot "$1")
	shift
	if [ -n "$ch" ]; then
		chroot "$ch" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"
	else
		"$@"
	fi
}
# build_path ID PATH: a host PATH of ID's tree as its build environment sees it
build_path() {
	local ch
	ch=$(build_chroot "$1")
	printf '%s\n' "${2#"$ch"}"
}

# KDIR as seen by the build (inside the chroot for deb13 and deb13-debug).
kernel_kdir() {
	local id=$1 v
	v=$(kernel_version "$id")
	case "$id" in
	deb12) printf '/usr/src/linux-headers-%s\n' "$v" ;;
	deb12bpo | deb12cloud) printf '%s/hdr/usr/src/linux-headers-%s\n' "$(kernel_dir "$id")" "$v" ;;
	deb13) printf '/usr/src/linux-headers-%s\n' "$v" ;;
	*-debug) build_path "$id" "$(kernel_dir "$id")/build" ;;
	esac
}

# ------------------------------------------------------------- downloading

# fetch_deb SUITE PKG -> path of the .deb in $PPCOAL_CACHE/debs
fetch_deb() {
	local suite=$1 pkg=$2 dir f
	dir=$PPCOAL_CACHE/debs
	f=$(find "$dir" -maxdepth 1 -name "${pkg}_*.deb" 2>/dev/null | sort | tail -n1)
	if [ -z "$f" ]; then
		suite_download "$suite" "$pkg"
		f=$(find "$dir" -maxdepth 1 -name "${pkg}_*.deb" | sort | tail -n1)
	fi
	[ -n "$f" ] || die "could not download $pkg"
	printf '%s\n' "$f"
}

# suite_download SUITE PKG[=VERSION]: apt-get download into the deb cache
# from SUITE: host (this machine's apt sources, updated once if the lists
# lack it) or a suite of the private config. Fails when apt does.
suite_download() {
	local suite=$1 spec=$2 dir=$PPCOAL_CACHE/debs
	mkdir -p "$dir"
	log "downloading $spec ($suite)"
	if [ "$suite" = host ]; then
		(cd "$dir" && apt-get -o APT::Sandbox::User=root download -qq "$spec" >&2) ||
			{ host_apt_update && (cd "$dir" && apt-get -o APT::Sandbox::User=root download -qq "$spec" >&2); }
	else
		papt_ensure_lists "$suite"
		(cd "$dir" && papt "$suite" apt-get download -qq "$spec" >&2)
	fi
}

# ------------------------------------------------------------- preparation

# Extract vmlinuz and the module tree of the image; run depmod for it.
prepare_image() {
	local id=$1 v kd deb suite
	v=$(kernel_version "$id")
	kd=$(kernel_dir "$id")
	[ -f "$kd/.image-ready" ] && return 0
	suite=${PPCOAL_KSUITE[$id]}
	deb=$(fetch_deb "$suite" "linux-image-$v-unsigned")
	log "extracting $(basename "$deb")"
	rm -rf "$kd/root" "$kd/vmlinuz"
	mkdir -p "$kd/root"
	dpkg-deb -x "$deb" "$kd/root"
	# trixie ships modules under usr/lib (merged /usr): make ROOT/lib/modules work.
	if [ ! -d "$kd/root/lib/modules/$v" ] && [ -d "$kd/root/usr/lib/modules/$v" ]; then
		rm -rf "$kd/root/lib"
		ln -s usr/lib "$kd/root/lib"
	fi
	[ -d "$kd/root/lib/modules/$v" ] || die "no module tree in $deb"
	cp "$kd/root/boot/vmlinuz-$v" "$kd/vmlinuz"
	depmod -b "$kd/root" "$v"
	touch "$kd/.image-ready"
}

# deb12: headers from the host's own apt (bookworm / bookworm-security).
prepare_kdir_deb12() {
	local v
	v=$(kernel_version deb12)
	host_apt_install "linux-headers-$v"
}

# deb12bpo, deb12cloud: the headers are not dpkg-installed on the host
# (backports' depend on the image; installing the cloud flavour's would run
# the host's dkms hooks): the headers deb and the linux-headers-*-common and
# linux-kbuild-* debs it depends on are extracted into the cache, and the one
# absolute path (the flavour Makefile's include of -common) is fixed.
prepare_kdir_extracted() {
	local id=$1 v kd hdr p deb suite deps
	v=$(kernel_version "$id")
	kd=$(kernel_dir "$id")
	hdr=$kd/hdr
	suite=${PPCOAL_KSUITE[$id]}
	[ -f "$kd/.hdr-ready" ] && return 0
	host_apt_install gcc-12 make libelf-dev pahole xz-utils
	rm -rf "$hdr"
	mkdir -p "$hdr"
	deb=$(fetch_deb "$suite" "linux-headers-$v")
	dpkg-deb -x "$deb" "$hdr"
	deps=$(dpkg-deb -f "$deb" Depends | tr ',' '\n' |
		sed -n 's/^ *\(linux-\(headers\|kbuild\)-[^ ]*\).*/\1/p')
	[ -n "$deps" ] || die "linux-headers-$v names no -common or kbuild package"
	for p in $deps; do
		deb=$(fetch_deb "$suite" "$p")
		dpkg-deb -x "$deb" "$hdr"
	done
	sed -i "s|include /usr/src/|include $hdr/usr/src/|" "$hdr/usr/src/linux-headers-$v/Makefile"
	touch "$kd/.hdr-ready"
}
prepare_kdir_deb12bpo() { prepare_kdir_extracted deb12bpo; }
prepare_kdir_deb12cloud() { prepare_kdir_extracted deb12cloud; }

# deb13: a minimal trixie chroot with gcc-14; the header debs are extracted
# into it (installing them with dpkg would pull in the kernel image).
prepare_kdir_deb13() {
	local v abi ch tmp p deb inc deps
	v=$(kernel_version deb13)
	abi=$(kernel_abi "$v")
	ch=$(kernel_chroot deb13)
	if [ -f "$ch/.ppcoal-ready" ]; then
		chroot_extra_pkgs "$ch"
		return 0
	fi
	host_apt_install debootstrap
	papt_ensure_lists trixie
	# Runtime dependencies of linux-kbuild (libssl3t64, libelf1t64, ...).
	deps=$(papt trixie apt-cache depends "linux-kbuild-$abi" 2>/dev/null |
		sed -n 's/^ *Depends: \([^ <>]*\).*/\1/p' | grep -v '^linux-' | sort -u | paste -sd, -) || true
	inc="gcc-14,make,libc6-dev,libelf-dev,kmod,xz-utils,pahole,bc,${PPCOAL_CHROOT_EXTRA// /,}${deps:+,$deps}"
	tmp=$ch.tmp
	rm -rf "$tmp"
	mkdir -p "$(dirname "$ch")"
	log "debootstrap trixie into $tmp (include: $inc)"
	debootstrap --variant=minbase --include="$inc" trixie "$tmp" "$PPCOAL_MIRROR" >"$tmp.log" 2>&1 ||
		{ tail -n 30 "$tmp.log" >&2; die "debootstrap failed (log: $tmp.log)"; }
	for p in "linux-headers-$v" "linux-headers-$abi-common" "linux-kbuild-$abi"; do
		deb=$(fetch_deb trixie "$p")
		dpkg-deb -x "$deb" "$tmp"
	done
	rm -rf "$tmp/var/cache/apt/archives/"*.deb
	rm -rf "$ch"
	mv "$tmp" "$ch"
	rm -f "$tmp.log"
	echo "$PPCOAL_CHROOT_EXTRA" >"$ch/.ppcoal-ready"
}

# Packages added to the trixie chroot after its first release; an existing
# chroot gets them through its own apt (the marker records what it has).
# perl: W=1 builds run scripts/kernel-doc (needs Pod::Usage, not in perl-base).
PPCOAL_CHROOT_EXTRA="perl"
chroot_extra_pkgs() {
	local ch=$1
	[ "$(cat "$ch/.ppcoal-ready")" = "$PPCOAL_CHROOT_EXTRA" ] && return 0
	# shellcheck disable=SC2086 # package list
	chroot_apt_install "$ch" $PPCOAL_CHROOT_EXTRA
	echo "$PPCOAL_CHROOT_EXTRA" >"$ch/.ppcoal-ready"
}

# chroot_apt_install CHROOT PKG...: install what the chroot lacks, through
# its own apt (trixie, from this machine's mirror)
chroot_apt_install() {
	local ch=$1 p need=""
	shift
	for p; do
		# shellcheck disable=SC2016 # dpkg-query's format
		chroot "$ch" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
			need="$need $p"
	done
	[ -n "$need" ] || return 0
	log "adding to $ch:$need"
	printf 'deb %s trixie main\n' "$PPCOAL_MIRROR" >"$ch/etc/apt/sources.list"
	chroot "$ch" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
		sh -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends$need" >&2
	rm -f "$ch/var/cache/apt/archives/"*.deb
}

# ------------------------------------------------------------ debug kernels

# A debug kernel ID -> the stock kernel whose Debian source and config it
# rebuilds with the sanitizers (issue 13).
# deb13-debug is compiled as Debian compiled deb13, by gcc 14, in deb13's
# trixie chroot (build_chroot), as are ppcoal and the test modules for it:
# the compiler-dependent options olddefconfig derives are Debian's.
declare -A PPCOAL_DEBUG_BASE=(
	[deb12-debug]=deb12
	[deb13-debug]=deb13
)
is_debug_id() { [ -n "${PPCOAL_DEBUG_BASE[$1]:-}" ]; }

# Added to Debian's config: what a netdev reviewer turns on for page
# ownership, lifetime and locking bugs, and fault injection. Dropped: debug
# info (build time and size) and module signing (no key here; the lockdown
# boots prove signing on the stock kernels).
PPCOAL_DEBUG_ENABLE="KASAN KASAN_GENERIC KASAN_INLINE KFENCE DEBUG_VM DEBUG_LIST
	PROVE_LOCKING DEBUG_ATOMIC_SLEEP DMA_API_DEBUG PAGE_POOL_STATS DEBUG_NET
	NET_DEV_REFCNT_TRACKER NET_NS_REFCNT_TRACKER FAULT_INJECTION FAILSLAB
	FAIL_PAGE_ALLOC FAULT_INJECTION_DEBUG_FS FUNCTION_ERROR_INJECTION
	FAIL_FUNCTION DEBUG_INFO_NONE"
# What each sanitizer prints at boot once it is armed: a debug boot whose
# log lacks one fails sanitizers-armed (parse-log.sh, PPCOAL_ARMED). KFENCE
# built in is not armed by itself: Debian 13's config has
# CONFIG_KFENCE_SAMPLE_INTERVAL=0 (6.1's: 100), so the debug boots set
# kfence.sample_interval (tests/run, DEBUG_CMD).
# shellcheck disable=SC2034 # read by tests/run
PPCOAL_DEBUG_ARMED="kasan: KernelAddressSanitizer initialized
kfence: initialized
Lock dependency validator
DMA-API: debugging enabled"
PPCOAL_DEBUG_DISABLE="KASAN_OUTLINE DEBUG_INFO DEBUG_INFO_DWARF4 DEBUG_INFO_DWARF5
	DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT DEBUG_INFO_BTF MODULE_SIG MODULE_SIG_ALL"
# The modules the guest loads (initramfs.sh): localmodconfig keeps them and
# Debian's built-ins and drops every other module.
PPCOAL_DEBUG_MODULES="virtio virtio_ring virtio_pci virtio_pci_modern_dev
	virtio_pci_legacy_dev virtio_net net_failover failover veth"
# Modules added later, "CONFIG_SYMBOL:module" (vmxnet3: the vmxnet3 boots):
# a fresh tree keeps them as it keeps PPCOAL_DEBUG_MODULES; a cached build
# that lacks one gets it by an incremental make (debug_extra()), since a
# change of the recipe would rebuild the whole kernel (36 min at -j1).
PPCOAL_DEBUG_EXTRA="VMXNET3:vmxnet3"
# Per-object compiler flags, "DIR OBJECT FLAGS": the debug config's
# inlining made gcc 12 clone __napi_poll() as __napi_poll.constprop.0 (IPA
# constant propagation), a function ppcoal cannot hook by name and refuses
# recycle=on without; Debian's stock build has __napi_poll itself. The
# source is not changed, only how net/core/dev.c is compiled.
PPCOAL_DEBUG_OBJ_CFLAGS="net/core dev.o -fno-ipa-cp"
# Build tools of a debug kernel, installed where it is compiled
# (openssl: module signing keys lockdown forces; zstd: Debian 13 compresses
# the kernel with it)
PPCOAL_DEBUG_TOOLS="gcc make flex bison bc libssl-dev libelf-dev cpio kmod xz-utils perl openssl zstd"
# What a cached debug kernel ID was built from: a change rebuilds it. (A
# chroot-built kernel adds its compiler; the host's recipe is unchanged.)
debug_recipe() {
	local cc=""
	if [ -n "$(build_chroot "$1")" ]; then
		cc=$(in_build_env "$1" gcc --version | sed -n 1p) || cc=""
		[ -n "$cc" ] || die "$1: no gcc in $(build_chroot "$1") (tests/vm/kernels.sh prepare $1 installs it)"
	fi
	{
		printf '%s\n' "$PPCOAL_DEBUG_ENABLE" "$PPCOAL_DEBUG_DISABLE" \
			"$PPCOAL_DEBUG_MODULES" "$PPCOAL_DEBUG_OBJ_CFLAGS"
		[ -z "$cc" ] || printf '%s\n' "$cc"
	} | md5sum | cut -d' ' -f1
}

# fetch_source SUITE FAMILY VERSION: Debian's linux-source-FAMILY deb of
# exactly VERSION (the version of the stock image a debug kernel rebuilds),
# from SUITE (host: this machine's apt sources; else the private config).
fetch_source() {
	local suite=$1 fam=$2 ver=$3 f
	f=$PPCOAL_CACHE/debs/linux-source-${fam}_${ver//:/%3a}_all.deb
	[ -f "$f" ] || suite_download "$suite" "linux-source-$fam=$ver" ||
		die "linux-source-$fam $ver is not in $suite's apt sources (the debug kernel needs the stock kernel's own source)"
	printf '%s\n' "$f"
}

# prepare_debug ID: build the debug kernel in $(kernel_dir ID): src/ (the
# source), build/ (the objects: the KDIR for out-of-tree modules), root/
# (modules_install) and vmlinuz. Its uname -v names the same Debian source
# version as the stock kernel's, so ppcoal's verified-version check (which
# reads it) treats the two alike: they are built from the same source.
prepare_debug() {
	local id=$1 base v bv kd ch deb srcver fam t0 how=built jobs=${PPCOAL_DEBUG_JOBS:-$(nproc)}
	base=${PPCOAL_DEBUG_BASE[$id]}
	ch=$(build_chroot "$id")
	v=$(kernel_version "$id")
	bv=$(kernel_version "$base")
	kd=$(kernel_dir "$id")
	if [ -f "$kd/.debug-ready" ]; then
		if [ "$(cat "$kd/.debug-recipe" 2>/dev/null)" = "$(debug_recipe "$id")" ]; then
			debug_extra "$id" "$v" "$jobs"
			return 0
		fi
		log "$id: cached build is of another recipe (tests/vm/kernels.sh PPCOAL_DEBUG_*): rebuilding"
	fi
	t0=$(date +%s)
	prepare_image "$base"
	if [ -n "$ch" ]; then
		"prepare_kdir_$base"
		# shellcheck disable=SC2086 # package list
		chroot_apt_install "$ch" $PPCOAL_DEBUG_TOOLS
	else
		# shellcheck disable=SC2086 # package list
		host_apt_install $PPCOAL_DEBUG_TOOLS
	fi
	srcver=$(dpkg-deb -f "$(fetch_deb "${PPCOAL_KSUITE[$base]}" "linux-image-$bv-unsigned")" Version)
	fam=$(echo "$bv" | cut -d. -f1,2)
	deb=$(fetch_source "${PPCOAL_KSUITE[$base]}" "$fam" "$srcver")
	# a build stopped before its end (a session's time, a reboot) goes on
	# where it stopped: make redoes only the objects it did not finish
	# (it deletes a target it was building when interrupted)
	# (a resumed build that fails starts once more from a fresh tree: a
	# tree left broken, a file cut short by a full disk)
	if [ "$(cat "$kd/.debug-partial" 2>/dev/null)" = "$(debug_partial_mark "$id" "$srcver")" ]; then
		log "$id: resuming the interrupted build of $v in $kd"
		if debug_make "$id" "$v" "$srcver" "$jobs"; then
			how="finished (resumed)"
		else
			log "$id: the resumed build failed: building from a fresh tree"
			prepare_debug_tree "$id" "$deb" "$fam" "$srcver" "$bv"
			debug_make "$id" "$v" "$srcver" "$jobs"
		fi
	else
		prepare_debug_tree "$id" "$deb" "$fam" "$srcver" "$bv"
		debug_make "$id" "$v" "$srcver" "$jobs"
	fi
	# out-of-tree builds read the release from here
	echo "$v" >"$kd/build/include/config/kernel.release"
	cp "$kd/build/arch/x86/boot/bzImage" "$kd/vmlinuz"
	depmod -b "$kd/root" "$v"
	debug_recipe "$id" >"$kd/.debug-recipe"
	echo "$how in $(($(date +%s) - t0)) s with make -j$jobs on $(nproc) CPUs${ch:+ in chroot $ch}" >"$kd/.debug-ready"
	rm -f "$kd/.debug-partial"
	log "$id: $(cat "$kd/.debug-ready")"
}

# debug_extra ID VERSION JOBS: build the modules of PPCOAL_DEBUG_EXTRA that
# ID's cached build lacks, as modules, with an incremental make (Kbuild
# rebuilds only what reads the changed options)
debug_extra() {
	local id=$1 v=$2 jobs=$3 kd bkd e want=""
	kd=$(kernel_dir "$id")
	bkd=$(build_path "$id" "$kd")
	for e in $PPCOAL_DEBUG_EXTRA; do
		[ -n "$(find "$kd/root/lib/modules/$v" -name "${e#*:}.ko*" -print -quit)" ] || want="$want --module ${e%%:*}"
	done
	[ -n "$want" ] || return 0
	log "$id: adding modules to the cached build:$want"
	# shellcheck disable=SC2086 # option list
	"$kd/src/scripts/config" --file "$kd/build/.config" $want
	in_build_env "$id" make -C "$bkd/src" O="$bkd/build" olddefconfig >&2
	debug_make "$id" "$v" "$(dpkg-parsechangelog -l "$kd/src/debian/changelog" -S Version 2>/dev/null || echo unknown)" "$jobs" ||
		die "$id: building the added modules failed"
	depmod -b "$kd/root" "$v"
}

# debug_partial_mark ID SOURCE_VERSION: what .debug-partial holds for a
# tree of ID configured by this recipe for that source version
debug_partial_mark() {
	echo "$(debug_recipe "$1") $2"
}

# debug_make ID VERSION SOURCE_VERSION JOBS: build and install ID's
# configured tree where ID is compiled (make redoes only what is not finished)
debug_make() {
	local id=$1 v=$2 srcver=$3 jobs=$4 kd
	kd=$(build_path "$id" "$(kernel_dir "$id")")
	in_build_env "$id" make -C "$kd/src" O="$kd/build" -j"$jobs" KERNELRELEASE="$v" \
		KBUILD_BUILD_VERSION=1 KBUILD_BUILD_TIMESTAMP="Debian $srcver (ppcoal debug build)" \
		bzImage modules >&2 &&
		in_build_env "$id" make -C "$kd/src" O="$kd/build" KERNELRELEASE="$v" INSTALL_MOD_PATH="$kd/root" \
			INSTALL_MOD_STRIP=1 modules_install >&2
}

# prepare_debug_tree ID SOURCE_DEB FAMILY SOURCE_VERSION BASE_VERSION: a
# fresh source and configured build tree for prepare_debug; marks it
# .debug-partial (recipe and source version) once configured.
prepare_debug_tree() {
	local id=$1 deb=$2 fam=$3 srcver=$4 bv=$5 base kd bkd o dropped=""
	base=${PPCOAL_DEBUG_BASE[$id]}
	kd=$(kernel_dir "$id")
	bkd=$(build_path "$id" "$kd")
	log "$id: building $(kernel_version "$id") from linux-source-$fam $srcver with the config of $bv"
	rm -rf "$kd"
	mkdir -p "$kd/src" "$kd/build" "$kd/root"
	dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/linux-source-$fam.tar.xz" |
		tar -xJ -C "$kd/src" --strip-components=1
	# shellcheck disable=SC2086 # "DIR OBJECT FLAGS"
	set -- $PPCOAL_DEBUG_OBJ_CFLAGS
	printf '\n# ppcoal debug build (tests/vm/kernels.sh)\nCFLAGS_%s += %s\n' "$2" "$3" >>"$kd/src/$1/Makefile"
	cp "$(kernel_modroot "$base")/boot/config-$bv" "$kd/build/.config"
	{
		echo "Module Size Used by"
		for o in $PPCOAL_DEBUG_MODULES; do echo "$o 0 0"; done
		for o in $PPCOAL_DEBUG_EXTRA; do echo "${o#*:} 0 0"; done
	} >"$kd/lsmod"
	# new options take their defaults (yes dies of SIGPIPE when conf is done)
	{ yes '' || true; } | in_build_env "$id" make -C "$bkd/src" O="$bkd/build" LSMOD="$bkd/lsmod" localmodconfig >&2
	# shellcheck disable=SC2046,SC2086 # option lists
	"$kd/src/scripts/config" --file "$kd/build/.config" \
		$(printf -- '--enable %s ' $PPCOAL_DEBUG_ENABLE) \
		$(printf -- '--disable %s ' $PPCOAL_DEBUG_DISABLE) \
		--set-str SYSTEM_TRUSTED_KEYS "" --set-str SYSTEM_REVOCATION_KEYS ""
	in_build_env "$id" make -C "$bkd/src" O="$bkd/build" olddefconfig >&2
	for o in $PPCOAL_DEBUG_ENABLE; do
		grep -qx "CONFIG_$o=y" "$kd/build/.config" || dropped="$dropped $o"
	done
	[ -z "$dropped" ] || die "$id: Kconfig dropped:$dropped (see $kd/build/.config)"
	debug_partial_mark "$id" "$srcver" >"$kd/.debug-partial"
}

kernel_prepare() {
	local id=$1
	check_id "$id"
	log "preparing $id ($(kernel_version "$id"))"
	if is_debug_id "$id"; then
		prepare_debug "$id"
		return
	fi
	prepare_image "$id"
	"prepare_kdir_$id"
}

# ---------------------------------------------------------------- building

# copy_src SRC DST: copy the source tree (tracked + untracked-not-ignored files
# when SRC is a git work tree; everything but tests/out otherwise).
copy_src() {
	local src=$1 dst=$2
	rm -rf "$dst"
	mkdir -p "$dst"
	if git -c safe.directory='*' -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1 &&
		[ "$(git -c safe.directory='*' -C "$src" rev-parse --show-toplevel)" = "$(cd "$src" && pwd -P)" ]; then
		# shellcheck disable=SC2016 # $f is expanded by the inner sh
		git -c safe.directory='*' -C "$src" ls-files -z -co --exclude-standard |
			(cd "$src" && xargs -0 -r sh -c 'for f; do if [ -e "$f" ]; then printf "%s\0" "$f"; fi; done' sh) |
			tar -C "$src" --null -T - -cf - | tar -C "$dst" -xf -
	else
		tar -C "$src" --exclude=./tests/out --exclude=./.git -cf - . | tar -C "$dst" -xf -
	fi
}

# build_modules ID OUTDIR: build the source tree against ID's headers and copy
# every resulting *.ko into OUTDIR. Build output goes to stdout/stderr.
build_modules() {
	local id=$1 out=$2 src v kdir bdir ch rc=0 n
	src=${PPCOAL_SRC:-$PPCOAL_REPO}
	v=$(kernel_version "$id")
	kdir=$(kernel_kdir "$id")
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	rm -f "$out"/*.ko
	ch=$(build_chroot "$id")
	if [ -n "$ch" ]; then
		bdir=$ch/src/ppcoal-$id
		copy_src "$src" "$bdir"
		log "building $src for $id ($v) in chroot $ch"
		in_build_env "$id" make -C "/src/ppcoal-$id" KDIR="$kdir" W=1 -j"$(nproc)" || rc=$?
	else
		bdir=${PPCOAL_BUILD_DIR:-$PPCOAL_CACHE/build}/$id
		copy_src "$src" "$bdir"
		log "building $src for $id ($v) with KDIR=$kdir"
		make -C "$bdir" KDIR="$kdir" W=1 -j"$(nproc)" || rc=$?
	fi
	find "$bdir" -name '*.ko' -type f -exec cp -t "$out" {} +
	n=$(find "$out" -maxdepth 1 -name '*.ko' | wc -l)
	log "$id: make exit $rc, $n module(s) in $out"
	[ "$rc" -eq 0 ] || return "$rc"
	[ "$n" -gt 0 ] || { log "$id: build produced no .ko"; return 1; }
}

_dkms_field() { sed -n "s/^[[:space:]]*$1=[\"']\{0,1\}\([^\"']*\)[\"']\{0,1\}[[:space:]]*$/\1/p" "$2" | head -n1; }

# dkms_build ID OUTDIR: add/build/install the repo through dkms for ID (host-built
# kernels only) and copy the .ko files dkms produced into OUTDIR.
dkms_build() {
	local id=$1 out=$2 src v name ver dst kdir tree f rc=0
	src=${PPCOAL_SRC:-$PPCOAL_REPO}
	[ -f "$src/dkms.conf" ] || { log "no dkms.conf in $src"; return 1; }
	[ -z "$(build_chroot "$id")" ] || { log "dkms_build: $id is built in a chroot, not supported"; return 1; }
	host_apt_install dkms
	v=$(kernel_version "$id")
	kdir=$(kernel_kdir "$id")
	name=$(_dkms_field PACKAGE_NAME "$src/dkms.conf")
	ver=$(_dkms_field PACKAGE_VERSION "$src/dkms.conf")
	if [ -z "$name" ] || [ -z "$ver" ]; then
		log "dkms.conf lacks PACKAGE_NAME/PACKAGE_VERSION"
		return 1
	fi
	dst=/usr/src/$name-$ver
	dkms remove -m "$name" -v "$ver" --all >/dev/null 2>&1 || true
	copy_src "$src" "$dst"
	mkdir -p "$out"
	rm -f "$out"/*.ko
	dkms add -m "$name" -v "$ver" || rc=$?
	[ "$rc" -eq 0 ] && { dkms build -m "$name" -v "$ver" -k "$v" --kernelsourcedir "$kdir" || rc=$?; }
	[ "$rc" -eq 0 ] && { dkms install -m "$name" -v "$ver" -k "$v" --kernelsourcedir "$kdir" --force || rc=$?; }
	if [ "$rc" -ne 0 ]; then
		f=/var/lib/dkms/$name/$ver/build/make.log
		if [ -f "$f" ]; then cat "$f"; fi
		return "$rc"
	fi
	tree=/var/lib/dkms/$name/$ver/$v/$(uname -m)/module
	for f in "$tree"/*.ko "$tree"/*.ko.xz "$tree"/*.ko.zst "$tree"/*.ko.gz; do
		[ -f "$f" ] || continue
		case "$f" in
		*.xz) xz -dc "$f" >"$out/$(basename "${f%.xz}")" ;;
		*.zst) zstd -qdc "$f" >"$out/$(basename "${f%.zst}")" ;;
		*.gz) gzip -dc "$f" >"$out/$(basename "${f%.gz}")" ;;
		*) cp "$f" "$out/" ;;
		esac
	done
	ls "$out"/*.ko >/dev/null 2>&1 || { log "dkms produced no module in $tree"; return 1; }
}

# ------------------------------------------------------ QEMU's TCG plugin

# insn_plugin_build: build tests/plugin/insncount.c (instruction counts,
# tests/vm/insn-windows.sh) against the plugin API header of the installed
# QEMU's own Debian source, fetched through a private deb-src list of the
# host's mirror (cached per QEMU version); prints the plugin's path.
insn_plugin_build() {
	local ver codename dir tmp so
	ver=$(dpkg-query -W -f '${source:Version}' qemu-system-x86 2>/dev/null) ||
		die "qemu-system-x86 is not installed (apt-get install qemu-system-x86)"
	dir=$PPCOAL_CACHE/qemu-plugin/${ver//:/_}
	so=$dir/insncount.so
	if [ ! -f "$dir/qemu-plugin.h" ]; then
		codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
		tmp=$(mktemp -d)
		papt_ensure_lists "$codename-src" >&2
		if ! (cd "$tmp" && papt "$codename-src" apt-get source -qq --download-only "qemu=$ver" >&2); then
			rm -rf "$tmp"
			die "cannot download Debian's source of qemu $ver (deb-src $PPCOAL_MIRROR $codename main): the TCG plugin header (include/qemu/qemu-plugin.h) comes from it"
		fi
		# apt checked the files against the signed Sources list
		dpkg-source -x "$tmp"/qemu_*.dsc "$tmp/q" >/dev/null 2>&1 ||
			{ rm -rf "$tmp"; die "dpkg-source -x of qemu $ver failed"; }
		mkdir -p "$dir"
		cp "$tmp/q/include/qemu/qemu-plugin.h" "$dir/qemu-plugin.h"
		rm -rf "$tmp"
	fi
	if [ ! -f "$so" ] || [ "$PPCOAL_REPO/tests/plugin/insncount.c" -nt "$so" ]; then
		gcc -O2 -Wall -Wextra -Werror -shared -fPIC -I "$dir" \
			-o "$so.new" "$PPCOAL_REPO/tests/plugin/insncount.c" >&2 && mv "$so.new" "$so"
	fi
	echo "$so"
}

# ------------------------------------------------- trixie's QEMU (MTTCG)

# qemu_newer: Debian 13's qemu-system-x86 and the libraries it needs,
# downloaded through the private trixie list (apt checks them against the
# signed Release) and unpacked, not installed, under the cache: QEMU 7.2's
# multi-threaded TCG executes stale translations of kernel text that
# ftrace has patched (README), so the boots that patch text on parallel
# vCPUs use this one. Writes a wrapper that runs it with its own loader,
# libraries, modules and firmware; prints the wrapper's path.
# The module directory Debian's QEMU builds look in (CONFIG_QEMU_MODDIR)
HOST_QEMU_MODDIR=/usr/lib/x86_64-linux-gnu/qemu
qemu_newer() {
	local ver dir r lib d
	papt_ensure_lists trixie >&2 ||
		die "cannot read trixie's package lists (deb $PPCOAL_MIRROR trixie main): the mttcg boots need its QEMU"
	ver=$(papt trixie apt-cache show --no-all-versions qemu-system-x86 2>/dev/null | sed -n 's/^Version: //p' | head -n 1) || true
	[ -n "$ver" ] || die "qemu-system-x86 is not in trixie's package lists (deb $PPCOAL_MIRROR trixie main: mirror unreachable or package missing)"
	dir=$PPCOAL_CACHE/qemu-trixie/${ver//:/_}
	r=$dir/root
	lib=$r/usr/lib/x86_64-linux-gnu
	if [ ! -f "$dir/.ready" ]; then
		rm -rf "$dir"
		mkdir -p "$dir/debs/partial" "$r"
		papt trixie apt-get install -y -qq --download-only --no-install-recommends \
			-o Dir::Cache::archives="$dir/debs" qemu-system-x86 >&2 ||
			die "cannot download trixie's qemu-system-x86 $ver and its libraries"
		for d in "$dir"/debs/*.deb; do
			dpkg-deb -x "$d" "$r" || die "cannot unpack $d"
		done
		rm -rf "$dir/debs"
		touch "$dir/.ready"
	fi
	# /proc/self/exe is the loader, so QEMU's own paths are given: its
	# modules, and its firmware (-L: QEMU's data, then SeaBIOS). QEMU also
	# looks for modules in the directory it was built for, where the host's
	# QEMU 7.2 keeps its own: QEMU 10.0.13 loaded the host's ui-opengl.so
	# and audio-pa.so (not in trixie's qemu-system-x86) and aborted ("Only
	# modules from the same build can be loaded", exit 134, every mttcg
	# boot of a CI on a fresh machine). In a mount namespace of its own,
	# trixie's module directory covers that one.
	cat >"$dir/qemu-system-x86_64.tmp" <<-WRAP
		#!/bin/sh
		export QEMU_MODULE_DIR='$lib/qemu'
		set -- '$lib/ld-linux-x86-64.so.2' --library-path '$lib' --argv0 qemu-system-x86_64 \\
			'$r/usr/bin/qemu-system-x86_64' -L '$r/usr/share/qemu' -L '$r/usr/share/seabios' "\$@"
		[ -d '$HOST_QEMU_MODDIR' ] || exec "\$@"
		exec unshare -m -- sh -c 'mount --bind "\$0" "$HOST_QEMU_MODDIR" && exec "\$@"' '$lib/qemu' "\$@"
	WRAP
	chmod +x "$dir/qemu-system-x86_64.tmp"
	mv "$dir/qemu-system-x86_64.tmp" "$dir/qemu-system-x86_64"
	"$dir/qemu-system-x86_64" --version >"$dir/version" 2>&1 || true
	grep -F "(Debian $ver)" "$dir/version" >/dev/null ||
		die "trixie's QEMU does not run: $(head -n 1 "$dir/version")"
	# a machine it starts (paused) must still run after 3 s: modules are
	# loaded at start, --version loads none
	r=0
	timeout 3 "$dir/qemu-system-x86_64" -accel tcg,thread=multi -smp 2 -m 128 -nographic \
		-monitor none -serial none -S >"$dir/start" 2>&1 </dev/null || r=$?
	[ "$r" = 124 ] || die "trixie's QEMU does not start a machine (exit $r): $(head -n 2 "$dir/start" | tr '\n' ' ')"
	echo "$dir/qemu-system-x86_64"
}

# --------------------------------------------------------------------- CLI

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -euo pipefail
	cmd=${1:-}
	if [ $# -ge 2 ]; then check_id "$2"; kernel_pin "$2"; fi
	case "$cmd" in
	prepare) [ $# -eq 2 ] || die "usage: $0 prepare ID"; kernel_prepare "$2" ;;
	version) kernel_version "$2" ;;
	kdir) kernel_kdir "$2" ;;
	vmlinuz) kernel_vmlinuz "$2" ;;
	modroot) kernel_modroot "$2" ;;
	build) [ $# -eq 3 ] || die "usage: $0 build ID OUTDIR"; kernel_prepare "$2"; build_modules "$2" "$3" ;;
	dkms) [ $# -eq 3 ] || die "usage: $0 dkms ID OUTDIR"; kernel_prepare "$2"; dkms_build "$2" "$3" ;;
	insn-plugin) insn_plugin_build ;;
	qemu-newer) qemu_newer ;;
	*) die "usage: $0 prepare|version|kdir|vmlinuz|modroot|build|dkms ID [OUTDIR] | insn-plugin | qemu-newer" ;;
	esac
fi
