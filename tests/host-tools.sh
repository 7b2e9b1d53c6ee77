#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Host tests of the user tools, printed as "PASS host:tools-x" /
# "FAIL host:tools-x: why" (SKIP lines, on stderr, when a tool is missing):
#   help, version    every installed tool's --help (stdout, exit 0) and
#                    --version (exit 0, the version of dkms.conf, or of
#                    /usr/share/ppcoal/version when installed)
#   bad-args         a bad argument per tool: exit 2, the reason on stderr
#   stat-rates       ppcoal-stat's rates on a format-2 fixture whose counters
#                    move by known amounts; state lines never shown as rates
#   stat-json        --json parses (python3 -m json.tool) and holds the
#                    fixture's values, with rates over an interval
#   stat-prometheus  --prometheus passes a grammar of the text format (and
#                    promtool check metrics when installed), with the
#                    fixture's values and escaped label values
#   stat-format      stats of format 1 (no format line), 3, or with a bad
#                    line: exit 2 and the reason; unreadable stats: exit 2
#   status-virtio, status-pagepool, status-nothing
#                    ppcoal status on three fixture machines (sysfs, procfs
#                    and debugfs trees): a virtio VM, a 6.12 host with veth
#                    and mlx5 and an unavailable path, a host with an e1000e
#                    NIC only: verdicts computed by hand from the fixtures'
#                    counter deltas, exit codes, --json
#   status-errors    module not loaded, debugfs not mounted, stats of format 1
#   busybox          ppcoal-stat and ppcoal status under busybox sh, awk, sed
#                    (the test guest's tools) give the same output
#   posix            dash -n, busybox sh -n and shellcheck -s sh of the tools
#   man              the manual pages build, pass man --warnings, hold the
#                    sections every page needs, every counter, parameter and
#                    audited driver
# The sleep between two reads of the stats is a fake that swaps the fixture's
# "after" file in, so the counter deltas are exact. Needs no root, no module.
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
S=$REPO/scripts
T=$(mktemp -d "${TMPDIR:-/tmp}/host-tools.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
VERSION=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$REPO/dkms.conf")
TOOLS="ppcoal ppcoal-stat ppcoal-ab ppcoal-verify-kernel"

why=""
# bad REASON: this test fails, for REASON (reasons accumulate)
bad() { why="$why${why:+; }$*"; }
# report NAME: the test's line, then a new test
report() {
	if [ -z "$why" ]; then echo "PASS host:tools-$1"; else echo "FAIL host:tools-$1: $why"; fi
	why=""
}
skip() { echo "SKIP host:tools-$1: $2" >&2; }
# run OUT ERR CMD...: run CMD, stdout to OUT, stderr to ERR; sets rc
run() {
	o=$1 e=$2
	shift 2
	"$@" >"$o" 2>"$e" </dev/null
	rc=$?
}
# has FILE LINE: FILE holds LINE exactly
has() { grep -qxF -- "$2" "$1"; }

# --- fake commands: sleep swaps the fixture's "after" stats in; ethtool
# knows veth only; ip knows nothing (the host's own must not answer) ---
mkdir -p "$T/bin"
cat >"$T/bin/sleep" <<'EOF'
#!/bin/sh
[ -n "${FIX_AFTER:-}" ] && cp "$FIX_AFTER" "$FIX_STATS"
exit 0
EOF
cat >"$T/bin/ethtool" <<'EOF'
#!/bin/sh
case $2 in veth*) echo "driver: veth"; echo "version: 1.0" ;; *) exit 1 ;; esac
EOF
printf '#!/bin/sh\nexit 1\n' >"$T/bin/ip"
chmod +x "$T/bin/"*
FAKEPATH=$T/bin:$PATH

# The counter names, read here from the table by a plain sed (not by the
# tools' own parser, ppcoal-doc).
sed -n 's/^PPC_COUNTER([A-Z0-9_]*, *\([a-z0-9_]*\), *\([a-z0-9_]*\),.*/\1.\2/p' \
	"$REPO/ppcoal_counters.h" >"$T/counters"
[ -s "$T/counters" ] || { echo "FAIL host:tools-fixture: no counter found in ppcoal_counters.h"; exit 1; }

# mkstats OUT: format 2 stats from stdin: "key: value" state lines as they
# are, "counter=value" the counters that are not 0; then every counter
mkstats() {
	{
		echo "format 2"
		grep ': ' "$T/in"
		awk -F '=' 'NR == FNR { if (NF == 2) v[$1] = $2; next } { print $1, ($1 in v ? v[$1] : 0) }' "$T/in" "$T/counters"
	} >"$1"
}
# state FAMILY: the global state lines of a 6.1 or 6.12 machine
state() {
	if [ "$1" = 6.1 ]; then
		printf '%s\n' "version: $VERSION" "release: ${2:-6.1.0-57-cloud-amd64}" "debian_version: 6.1.192-3" \
			"accept_unverified: 0" "hook_calls: ftrace" "recycle_target: page_pool_return_skb_page"
	else
		printf '%s\n' "version: $VERSION" "release: 6.12.117+deb13-amd64" "debian_version: 6.12.117-1" \
			"accept_unverified: 0" "hook_calls: direct" "recycle_target: napi_pp_put_page"
	fi
}
# path NAME MODE STATE VERIFIED: a path's state lines
# path NAME MODE STATE VERIFIED [WANTED]: a path's state lines (WANTED, the
# mode last asked for, defaults to MODE)
path() {
	printf '%s\n' "$1.mode: $2" "$1.wanted: ${5:-$2}" "$1.state: $3" "$1.verified: $4" \
		"$1.on_means: optimised: $1 (on: see ppcoal(4))"
}
recycle_state() {
	printf '%s\n' "coalesce.clone_policy: $1" "recycle.tracked_known: ${2:-0}" "recycle.tracked_unknown: 0" \
		"recycle.tracked_shared: 0" "recycle.learning: ${3:-idle}" "recycle.tracked_not_eligible: 0" \
		"recycle.poll_marks: wrapper on ppf_poll,veth_poll" \
		"recycle.audited_drivers: ppcoal_fixture:ppf_poll,veth:veth_poll" "recycle.audited_off: ${4:-none}"
}

# machine DIR: the skeleton of a machine: sysfs with ppcoal loaded, procfs
# with debugfs mounted and no packet socket
machine() {
	mkdir -p "$1/sys/module/ppcoal/parameters" "$1/sys/kernel/debug/ppcoal" "$1/sys/class/net/lo" \
		"$1/proc/net" "$1/proc/sys/kernel"
	printf '%s\n' "sysfs /sys sysfs rw 0 0" "proc /proc proc rw 0 0" \
		"debugfs /sys/kernel/debug debugfs rw 0 0" >"$1/proc/mounts"
	echo "sk               RefCnt Type Proto  Iface R Rmem   User   Inode" >"$1/proc/net/packet"
	echo 1 >"$1/sys/class/net/lo/ifindex"
}
# nic DIR IF IFINDEX BUS DRIVER MODULE: an interface with a device bound to DRIVER
nic() {
	d=$1/sys/class/net/$2
	mkdir -p "$d/device" "$1/sys/bus/$4/drivers/$5" "$1/sys/module/$6"
	echo "$3" >"$d/ifindex"
	printf 'INTERFACE=%s\nIFINDEX=%s\n' "$2" "$3" >"$d/uevent"
	ln -s "../../../../bus/$4/drivers/$5" "$d/device/driver"
	[ -e "$1/sys/bus/$4/drivers/$5/module" ] || ln -s "../../../../module/$6" "$1/sys/bus/$4/drivers/$5/module"
}
# virt DIR IF IFINDEX: a virtual interface (no device)
virt() {
	mkdir -p "$1/sys/class/net/$2"
	echo "$3" >"$1/sys/class/net/$2/ifindex"
	printf 'INTERFACE=%s\nIFINDEX=%s\n' "$2" "$3" >"$1/sys/class/net/$2/uevent"
}
# status DIR OUT ERR ARGS...: ppcoal status on machine DIR (its stats
# become stats.after at the sleep)
status() {
	m=$1 o=$2 e=$3
	shift 3
	cp "$m/stats.before" "$m/sys/kernel/debug/ppcoal/stats"
	run "$o" "$e" env PATH="$FAKEPATH" PPCOAL_SYSFS="$m/sys" PPCOAL_PROC="$m/proc" \
		FIX_STATS="$m/sys/kernel/debug/ppcoal/stats" FIX_AFTER="$m/stats.after" "$S/ppcoal" status "$@"
}
# json FILE PYTHON-EXPRESSIONS...: FILE parses as JSON, d, and each
# expression holds (python3); prints what failed
json() {
	f=$1
	shift
	command -v python3 >/dev/null 2>&1 || { echo "python3 missing"; return; }
	python3 -m json.tool "$f" >/dev/null 2>&1 || { echo "not valid JSON: $(head -c 200 "$f")"; return; }
	python3 - "$f" "$@" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for e in sys.argv[2:]:
    try:
        ok = eval(e, {"d": d})
    except Exception as x:
        ok = False
        e += " (" + repr(x) + ")"
    if not ok:
        print("JSON: not " + e)
EOF
}

# ===================== --help, --version, bad arguments =====================
for t in $TOOLS; do
	run "$T/o" "$T/e" "$S/$t" --help
	[ "$rc" = 0 ] || bad "$t --help exits $rc"
	[ -s "$T/o" ] || bad "$t --help prints nothing on stdout"
	grep -qi "usage\|$t" "$T/o" || bad "$t --help: no usage on stdout"
done
for c in status stat ab verify; do
	run "$T/o" "$T/e" "$S/ppcoal" help "$c"
	{ [ "$rc" = 0 ] && [ -s "$T/o" ]; } || bad "ppcoal help $c exits $rc or prints nothing"
done
run "$T/o" "$T/e" "$S/ppcoal" stat --help
"$S/ppcoal-stat" --help >"$T/o2" 2>&1
cmp -s "$T/o" "$T/o2" || bad "ppcoal stat --help differs from ppcoal-stat --help"
report help

for t in $TOOLS; do
	run "$T/o" "$T/e" "$S/$t" --version
	[ "$rc" = 0 ] || bad "$t --version exits $rc"
	grep -qF "$VERSION" "$T/o" || bad "$t --version does not print $VERSION: $(head -n 1 "$T/o")"
done
# installed: the version comes from the package's file
mkdir -p "$T/inst/sbin" "$T/inst/share"
cp "$S/ppcoal" "$S/ppcoal-stat" "$T/inst/sbin/"
echo 9.8.7 >"$T/inst/share/version"
for t in ppcoal ppcoal-stat; do
	out=$(PPCOAL_SHARE=$T/inst/share "$T/inst/sbin/$t" --version 2>&1)
	[ "$out" = "$t 9.8.7" ] || bad "installed $t --version: '$out', not '$t 9.8.7'"
done
report version

# badarg EXPECT-IN-STDERR CMD...: exit 2, stderr holds EXPECT
badarg() {
	x=$1
	shift
	run "$T/o" "$T/e" "$@"
	[ "$rc" = 2 ] || bad "'$*' exits $rc, not 2"
	grep -qF -- "$x" "$T/e" || bad "'$*': stderr lacks '$x': $(head -n 1 "$T/e")"
}
badarg "unknown command 'frobnicate'" "$S/ppcoal" frobnicate
badarg "ppcoal: " "$S/ppcoal"
badarg "unknown argument '--bogus'" "$S/ppcoal" status --bogus
badarg "--interval must be a positive number" "$S/ppcoal" status --interval abc
badarg "--interval must be more than 0" "$S/ppcoal" status -i 0
badarg "unknown command 'nope'" "$S/ppcoal" help nope
badarg "-c must be a whole number" "$S/ppcoal-stat" -c abc
badarg "-i must be more than 0" "$S/ppcoal-stat" -i 0
badarg "-i must be a positive number" "$S/ppcoal-stat" -i -1
badarg "unknown option '--bogus'" "$S/ppcoal-stat" --bogus
badarg "unknown path 'bogus'" "$S/ppcoal-stat" bogus
badarg "-i and -c do not apply" "$S/ppcoal-stat" --prometheus -i 2
badarg "unknown option '--bogus'" "$S/ppcoal" stat --bogus
badarg "ppcoal-ab: " "$S/ppcoal-ab" --bogus
badarg "ppcoal-verify-kernel: " "$S/ppcoal-verify-kernel" --bogus
report bad-args

# ============================ ppcoal-stat ===================================
F=$T/stat
mkdir -p "$F"
{
	state 6.1
	path coalesce on attached listed
	path recycle off detached listed
	path virtio on attached local
	recycle_state refuse
	printf '%s\n' virtio.page_to_skb_calls=20000 virtio.page_to_skb_build=20000 \
		virtio.rx_build_skb=10000 virtio.napi_build_skb=9990 virtio.declined_not_softirq=10 \
		coalesce.calls=500 recycle.calls=18446744073709551615
} >"$T/in"
mkstats "$F/before"
# after 2 s: virtio rx_build_skb +1238 (619.0/s), napi_build_skb +1234
# (617.0/s), declined +4 (2.0/s), page_to_skb_calls/build +1238; coalesce
# and recycle still
sed 's/^virtio.page_to_skb_calls=.*/virtio.page_to_skb_calls=21238/; s/^virtio.page_to_skb_build=.*/virtio.page_to_skb_build=21238/
	s/^virtio.rx_build_skb=.*/virtio.rx_build_skb=11238/; s/^virtio.napi_build_skb=.*/virtio.napi_build_skb=11224/
	s/^virtio.declined_not_softirq=.*/virtio.declined_not_softirq=14/; s/^recycle.learning: .*/recycle.learning: armed/' "$T/in" >"$T/in2"
mv "$T/in2" "$T/in"
mkstats "$F/after"
# pstat ARGS...: ppcoal-stat on the fixture, stats swapped at the sleep
pstat() {
	cp "$F/before" "$F/stats"
	run "$T/o" "$T/e" env PATH="$FAKEPATH" PPCOAL_STATS="$F/stats" FIX_STATS="$F/stats" FIX_AFTER="$F/after" \
		"$S/ppcoal-stat" "$@"
}
pstat -c 1 -i 2
[ "$rc" = 0 ] || bad "exit $rc: $(head -n 1 "$T/e")"
# the moved counters, in table order, and nothing else
awk '{ print $2, $3, $4 }' "$T/o" >"$T/got"
printf '%s\n' "virtio.page_to_skb_calls 619.0/s 21238" "virtio.page_to_skb_build 619.0/s 21238" \
	"virtio.rx_build_skb 619.0/s 11238" "virtio.napi_build_skb 617.0/s 11224" \
	"virtio.declined_not_softirq 2.0/s 14" >"$T/want"
cmp -s "$T/got" "$T/want" || bad "rates: got [$(tr '\n' '|' <"$T/got")], want [$(tr '\n' '|' <"$T/want")]"
awk '!/^[0-9][0-9]:[0-9][0-9]:[0-9][0-9] [a-z_]+\.[a-z_]+ +[0-9.]+\/s +[0-9]+$/ { exit 1 }' "$T/o" ||
	bad "a line not 'HH:MM:SS path.counter RATE/s VALUE': $(grep -v '/s ' "$T/o" | head -n 1)"
grep -q 'learning\|mode\|state\|on_means' "$T/o" && bad "a state line shown as a rate"
pstat -c 1 -i 2 -a recycle
[ "$(wc -l <"$T/o")" = "$(grep -c '^recycle\.' "$T/counters")" ] || bad "-a recycle: $(wc -l <"$T/o") lines, not one per recycle counter"
grep -q ' 18446744073709551615$' "$T/o" || bad "-a: the 64-bit counter's value is not printed exactly"
grep -q 'virtio\|coalesce' "$T/o" && bad "-a recycle shows another path"
pstat -c 2 -i 2 coalesce
[ "$(grep -c '(no counter moved)' "$T/o")" = 2 ] || bad "-c 2 coalesce: want two '(no counter moved)' lines"
report stat-rates

pstat --json
r=$(json "$T/o" 'd["format"] == 2' 'd["counters"]["virtio.rx_build_skb"] == 10000' \
	'd["state"]["recycle.learning"] == "idle"' 'd["state"]["virtio.verified"] == "local"' \
	'd["state"]["coalesce.on_means"] == "optimised: coalesce (on: see ppcoal(4))"' \
	'"rates" not in d' 'len(d["counters"]) == '"$(wc -l <"$T/counters")" \
	'list(d["state"])[:3] == ["version", "release", "debian_version"]')
[ -z "$r" ] || bad "--json: $r"
[ "$(wc -l <"$T/o")" = 1 ] || bad "--json: not one line"
pstat --json -i 2 virtio
r=$(json "$T/o" 'd["interval"] == 2' 'd["rates"]["virtio.rx_build_skb"] == 619.0' \
	'd["rates"]["virtio.napi_build_skb"] == 617.0' 'd["counters"]["virtio.napi_build_skb"] == 11224' \
	'not any(k.startswith("coalesce.") for k in d["counters"])' 'd["state"]["virtio.mode"] == "on"' \
	'"coalesce.mode" not in d["state"] and "recycle.learning" not in d["state"] and d["state"]["version"] != ""')
[ -z "$r" ] || bad "--json -i 2 virtio: $r"
pstat --json -c 2 -i 2
[ "$(wc -l <"$T/o")" = 2 ] || bad "--json -c 2: not two lines"
head -n 1 "$T/o" >"$T/o1"
r=$(json "$T/o1" 'd["state"]["recycle.learning"] == "armed"' 'd["rates"]["virtio.declined_not_softirq"] == 2.0')
[ -z "$r" ] || bad "--json -c 2 (first object): $r"
report stat-json

# promcheck FILE: the Prometheus text format (0.0.4): HELP and TYPE once per
# metric, before its samples, which are together; names and labels well
# formed; counters end in _total; values numbers
promcheck() {
	awk '
	function fail(m) { print "line " NR ": " m ": " $0; bad = 1; exit }
	/^# HELP / { if ($3 !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/) fail("bad name"); if ($3 in help) fail("second HELP"); help[$3] = 1; next }
	/^# TYPE / { if ($4 !~ /^(counter|gauge|untyped|summary|histogram)$/ || NF != 4) fail("bad TYPE")
		if ($3 in type) fail("second TYPE"); if ($3 in seen) fail("TYPE after samples"); type[$3] = $4; next }
	/^#/ { next }
	{
		s = $0
		if (!match(s, /^[a-zA-Z_:][a-zA-Z0-9_:]*/)) fail("bad sample name")
		n = substr(s, 1, RLENGTH); s = substr(s, RLENGTH + 1)
		if (s ~ /^\{/) {
			# labels: name="value" with \\ \" \n escapes, comma separated
			if (!match(s, /^\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\[\\"n])*")(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\[\\"n])*")*\}/)) fail("bad labels")
			s = substr(s, RLENGTH + 1)
		}
		if (s !~ /^ [-+]?([0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?|NaN|[-+]?Inf)( [0-9]+)?$/) fail("bad value")
		if (!(n in type)) fail("sample without TYPE")
		if (type[n] == "counter" && n !~ /_total$/) fail("counter not named _total")
		if ((n in seen) && last != n) fail("samples of a metric apart")
		seen[n] = 1; last = n
	}
	END { exit bad }' "$1"
}
pstat --prometheus
[ "$rc" = 0 ] || bad "exit $rc: $(head -n 1 "$T/e")"
r=$(promcheck "$T/o") || bad "grammar: $r"
has "$T/o" 'ppcoal_virtio_rx_build_skb_total 10000' || bad "no ppcoal_virtio_rx_build_skb_total 10000"
has "$T/o" '# TYPE ppcoal_virtio_rx_build_skb_total counter' || bad "rx_build_skb not TYPE counter"
has "$T/o" '# HELP ppcoal_virtio_rx_build_skb_total build_skb calls from the virtio_net receive path' ||
	bad "rx_build_skb's HELP is not the table's help text"
has "$T/o" 'ppcoal_recycle_calls_total 18446744073709551615' || bad "the 64-bit counter not exact"
has "$T/o" 'ppcoal_path_mode{path="recycle",mode="off"} 1' || bad "no recycle mode off 1"
has "$T/o" 'ppcoal_path_mode{path="recycle",mode="on"} 0' || bad "no recycle mode on 0"
has "$T/o" 'ppcoal_path_verified{path="virtio",verified="local"} 1' || bad "no virtio verified local 1"
has "$T/o" 'ppcoal_recycle_learning 0' || bad "no ppcoal_recycle_learning 0"
has "$T/o" 'ppcoal_recycle_audited_driver{module="veth",poll="veth_poll"} 1' || bad "no audited veth"
[ "$(grep -c '^ppcoal_[a-z0-9_]*_total ' "$T/o")" = "$(wc -l <"$T/counters")" ] || bad "not one _total sample per counter"
# a state with a quote and a backslash, escaped in its label
sed 's/^virtio.state: .*/virtio.state: unavailable: build_skb has another "IPMODIFY" user (C:\\x)/' "$F/before" >"$F/q"
cp "$F/q" "$F/stats"
PPCOAL_STATS=$F/stats "$S/ppcoal-stat" --prometheus virtio >"$T/o" 2>"$T/e"
has "$T/o" 'ppcoal_path_state_info{path="virtio",state="unavailable: build_skb has another \"IPMODIFY\" user (C:\\x)"} 1' ||
	bad "label value not escaped: $(grep state_info "$T/o")"
has "$T/o" 'ppcoal_path_state{path="virtio",state="unavailable"} 1' || bad "no virtio state unavailable 1"
grep -q 'coalesce' "$T/o" && bad "--prometheus virtio shows coalesce"
r=$(promcheck "$T/o") || bad "grammar (virtio): $r"
if command -v promtool >/dev/null 2>&1; then
	pstat --prometheus
	promtool check metrics <"$T/o" >"$T/e" 2>&1 || bad "promtool: $(head -n 2 "$T/e")"
else
	skip stat-prometheus "promtool not installed: the format checked by its grammar alone"
fi
report stat-prometheus

# format 1: today's old file, no format line
grep -v '^format ' "$F/before" | sed 's/: / /' >"$F/stats"
run "$T/o" "$T/e" env PPCOAL_STATS="$F/stats" "$S/ppcoal-stat" -c 1
[ "$rc" = 2 ] || bad "format 1: exit $rc, not 2"
grep -q 'stats format 1 (no format line) not supported by this ppcoal-stat.*reload the module' "$T/e" ||
	bad "format 1: stderr: $(cat "$T/e")"
sed '1s/.*/format 3/' "$F/before" >"$F/stats"
run "$T/o" "$T/e" env PPCOAL_STATS="$F/stats" "$S/ppcoal-stat" --json
{ [ "$rc" = 2 ] && grep -q 'stats format 3 not supported' "$T/e"; } || bad "format 3: exit $rc, $(cat "$T/e")"
{ cat "$F/before"; echo "virtio.broken 12x"; } >"$F/stats"
run "$T/o" "$T/e" env PPCOAL_STATS="$F/stats" "$S/ppcoal-stat" --prometheus
{ [ "$rc" = 2 ] && grep -q 'neither a state nor a counter line: virtio.broken 12x' "$T/e"; } ||
	bad "bad line: exit $rc, $(cat "$T/e")"
run "$T/o" "$T/e" env PPCOAL_STATS="$T/none" PPCOAL_SYSFS="$T/none" "$S/ppcoal-stat" -c 1
{ [ "$rc" = 2 ] && grep -q 'is ppcoal loaded' "$T/e"; } || bad "no stats: exit $rc, $(cat "$T/e")"
[ -s "$T/o" ] && bad "no stats: something on stdout"
report stat-format

# ============================ ppcoal status ==================================
# A: a Debian 12 cloud VM, virtio_net; no packet socket; virtio on and
# busy: receive build_skb +1238, of them napi_build_skb +1234 (99.68%)
A=$T/A
machine "$A"
nic "$A" ens3 2 virtio virtio_net virtio_net
{
	state 6.1
	path coalesce on attached listed
	path recycle off detached listed
	path virtio on attached listed
	recycle_state refuse
	printf '%s\n' virtio.rx_build_skb=50000 virtio.napi_build_skb=49990 coalesce.calls=7000
} >"$T/in"
mkstats "$A/stats.before"
sed 's/^virtio.rx_build_skb=.*/virtio.rx_build_skb=51238/; s/^virtio.napi_build_skb=.*/virtio.napi_build_skb=51224/' "$T/in" >"$T/in2"
mv "$T/in2" "$T/in"
mkstats "$A/stats.after"
status "$A" "$T/o" "$T/e"
[ "$rc" = 0 ] || bad "exit $rc, not 0: $(cat "$T/e")"
[ -s "$T/e" ] && bad "stderr: $(head -n 1 "$T/e")"
for l in "ppcoal $VERSION, module $VERSION, on 6.1.0-57-cloud-amd64 (Debian 6.1.192-3)" \
	"verified on Debian 6.1.192-3: coalesce listed, recycle listed, virtio listed" \
	"virtio    on       attached" "recycle   off      detached" \
	"ens3: virtio_net" \
	"  virtio    can act: virtio_net: its receive path calls build_skb" \
	"  coalesce  no: virtio_net creates no page pool on Debian 6.1: its skbs are no page-pool skbs" \
	"  recycle   no: virtio_net creates no page pool on Debian 6.1: nothing to recycle" \
	"packet sockets open: 0 (this network namespace; coalesce acts only on the clones such sockets make of page-pool skbs)" \
	"over 2 s:" \
	"  virtio: on, 99.7% of receive build_skb substituted (1234 of 1238 in 2 s)" \
	"  coalesce: on, no packet socket open: nothing to coalesce" \
	"  recycle: off, no audited driver on this machine"; do
	has "$T/o" "$l" || bad "no line '$l'"
done
grep -q '^lo:' "$T/o" && bad "lo listed"
status "$A" "$T/o" "$T/e" --json --interval 5
[ "$rc" = 0 ] || bad "--json: exit $rc"
r=$(json "$T/o" 'd["exit"] == 0 and d["error"] is None' 'd["interval"] == 5' 'd["module"]["loaded"] is True' \
	'd["paths"]["virtio"]["verdict"] == "virtio: on, 99.7% of receive build_skb substituted (1234 of 1238 in 5 s)"' \
	'd["paths"]["virtio"]["running"] is True' 'd["paths"]["recycle"]["mode"] == "off"' \
	'[i["name"] for i in d["interfaces"]] == ["ens3"]' 'd["interfaces"][0]["paths"]["virtio"]["can_act"] is True' \
	'd["interfaces"][0]["paths"]["coalesce"]["can_act"] is False' 'd["deltas"]["virtio.rx_build_skb"] == 1238' \
	'd["deltas"]["coalesce.calls"] == 0' 'd["packet_sockets"] == 0' 'd["kernel"]["family"] == "6.1"' \
	'd["module"]["audited_drivers"] == ["ppcoal_fixture:ppf_poll", "veth:veth_poll"]')
[ -z "$r" ] || bad "$r"
report status-virtio

# B: a Debian 13 host: veth0/veth1 (virtual: ethtool says veth), eth0 on
# mlx5_core; one packet socket (ETH_P_ALL, every interface, running) and
# one not running; coalesce on: 400 cloned page-pool skbs, 300 coalesced
# (75.0%); recycle on: 5200 frees, 200 not page-pool, 4850 direct of the
# 5000 (97.0%), 150 ring; virtio on but unavailable: exit 1
B=$T/B
machine "$B"
nic "$B" eth0 2 pci mlx5_core mlx5_core
virt "$B" veth0 5
virt "$B" veth1 6
nic "$B" vmx0 7 pci vmxnet3 vmxnet3
cat >>"$B/proc/net/packet" <<'EOF'
ffff8f1a4c3e1000 3      3    0003   0     1 0      0      41221
ffff8f1a4c3e2000 3      2    0003   0     0 0      0      41222
EOF
{
	state 6.12
	path coalesce on attached listed
	path recycle on attached listed
	path virtio on "unavailable: build_skb is redirected by another ftrace user (a livepatch?)" listed
	recycle_state upstream 2 armed
	printf '%s\n' coalesce.calls=10000 coalesce.pp_cloned_from=1000 coalesce.clone_copied=600 \
		recycle.calls=90000 recycle.not_pp=1000 recycle.direct=80000 recycle.ring=9000
} >"$T/in"
mkstats "$B/stats.before"
sed 's/^coalesce.calls=.*/coalesce.calls=12000/; s/^coalesce.pp_cloned_from=.*/coalesce.pp_cloned_from=1400/
	s/^coalesce.clone_copied=.*/coalesce.clone_copied=900/; s/^recycle.calls=.*/recycle.calls=95200/
	s/^recycle.not_pp=.*/recycle.not_pp=1200/; s/^recycle.direct=.*/recycle.direct=84850/
	s/^recycle.ring=.*/recycle.ring=9150/' "$T/in" >"$T/in2"
mv "$T/in2" "$T/in"
mkstats "$B/stats.after"
status "$B" "$T/o" "$T/e"
[ "$rc" = 1 ] || bad "exit $rc, not 1 (virtio set to run but unavailable)"
for l in "ppcoal $VERSION, module $VERSION, on 6.12.117+deb13-amd64 (Debian 6.12.117-1)" \
	"virtio    on       unavailable: build_skb is redirected by another ftrace user (a livepatch?)" \
	"eth0: mlx5_core" \
	"  coalesce  can act: mlx5_core's receive skbs are page-pool skbs; 1 packet socket can clone them" \
	"  recycle   no: mlx5_core declares its NAPI (page_pool_params.napi): the kernel itself recycles its pages directly" \
	"  virtio    no: not a virtio_net interface" \
	"veth0: veth" \
	"  coalesce  can act: veth's receive skbs are page-pool skbs only with an XDP program attached (skbs are copied into pool pages); 1 packet socket can clone them" \
	"  recycle   can act: audited driver (veth:veth_poll)" \
	"veth1: veth" \
	"vmx0: vmxnet3" \
	"  recycle   no: vmxnet3 is an audited driver, but the loaded module does not list it (audited: ppcoal_fixture, veth): an older module? reload ppcoal" \
	"packet sockets open: 2 (this network namespace; coalesce acts only on the clones such sockets make of page-pool skbs)" \
	"  coalesce: on, 75.0% of cloned page-pool skbs coalesced (300 of 400 in 2 s)" \
	"  recycle: on, 97.0% of page-pool pages recycled directly (4850 of 5000 in 2 s; ring 150, the kernel's own direct 0)" \
	"  virtio: on, unavailable: build_skb is redirected by another ftrace user (a livepatch?)"; do
	has "$T/o" "$l" || bad "no line '$l'"
done
status "$B" "$T/o" "$T/e" --json
[ "$rc" = 1 ] || bad "--json: exit $rc, not 1"
r=$(json "$T/o" 'd["exit"] == 1' 'd["paths"]["virtio"]["running"] is False' 'd["paths"]["recycle"]["running"] is True' \
	'[i["name"] for i in d["interfaces"]] == ["eth0", "veth0", "veth1", "vmx0"]' \
	'd["interfaces"][1]["paths"]["recycle"]["can_act"] is True' 'd["interfaces"][0]["paths"]["recycle"]["can_act"] is False' \
	'd["interfaces"][0]["module"] == "mlx5_core"' 'd["packet_sockets"] == 2' 'd["interfaces"][0]["packet_sockets"] == 1' \
	'd["deltas"]["recycle.direct"] == 4850' 'd["module"]["hook_calls"] == "direct"' \
	'd["paths"]["virtio"]["state"].startswith("unavailable: ")')
[ -z "$r" ] || bad "$r"
# a kernel on which veth's audit is not verified (the module's
# recycle.audited_off): veth is named, with the reason, and cannot act
for f in stats.before stats.after; do
	sed -i 's/^recycle.audited_off: none$/recycle.audited_off: veth (its audit is not verified for Debian 6.12.200-1)/' "$B/$f"
done
status "$B" "$T/o" "$T/e"
has "$T/o" "  recycle   no: veth is audited, but not on this kernel: its audit is not verified for Debian 6.12.200-1" ||
	bad "veth's audit off: no line naming it"
has "$T/o" "  recycle   can act" && bad "veth's audit off, yet recycle can act on an interface"
# stmmac's interfaces are bound to a glue module (dwmac_intel, driver
# intel-eth-pci), while its row names stmmac, the module of its poll: the
# driver table's module finds the row, live or off
nic "$B" eth1 8 pci intel-eth-pci dwmac_intel
for off in none "stmmac (stmmac_rx changed since its audit)"; do
	for f in stats.before stats.after; do
		sed -i "s/^recycle.audited_drivers: .*/recycle.audited_drivers: ppcoal_fixture:ppf_poll,veth:veth_poll,stmmac:stmmac_napi_poll_rx/
			s/^recycle.audited_off: .*/recycle.audited_off: $off/" "$B/$f"
	done
	status "$B" "$T/o" "$T/e"
	r=$(awk '/^eth1: / { on = 1; next } on && /^[^ ]/ { exit } on && /^  recycle / { print }' "$T/o")
	if [ "$off" = none ]; then
		[ "$r" = "  recycle   can act: audited driver (stmmac:stmmac_napi_poll_rx)" ] ||
			bad "stmmac behind dwmac_intel, its row live: '$r'"
	else
		[ "$r" = "  recycle   no: intel-eth-pci (stmmac) is audited, but not on this kernel: stmmac_rx changed since its audit" ] ||
			bad "stmmac behind dwmac_intel, its row off: '$r'"
	fi
done
# the tracker, the fallback that costs every NAPI poll (issue 37): recycle's
# verdict says so, with the reason
for f in stats.before stats.after; do
	sed -i 's/^recycle.poll_marks: .*/recycle.poll_marks: tracker on every poll (recycle_wrap=0)/' "$B/$f"
done
status "$B" "$T/o" "$T/e"
grep -q "^  recycle: on, .*; NAPI polls marked by the tracker on every poll (recycle_wrap=0)$" "$T/o" ||
	bad "the tracker not named in recycle's verdict: $(grep "^  recycle: " "$T/o")"
report status-pagepool

# C: a Debian 12 host with an e1000e NIC alone: virtio waits for
# virtio_net, coalesce on with packet sockets open but no page-pool driver,
# recycle observe without any audited driver; nothing moved: exit 0
C=$T/C
machine "$C"
nic "$C" eno1 2 pci e1000e e1000e
cat >>"$C/proc/net/packet" <<'EOF'
ffff8f1a4c3e1000 3      3    0003   0     1 0      0      51221
ffff8f1a4c3e3000 3      2    888e   2     1 0      0      51223
EOF
{
	state 6.1 6.1.0-57-amd64
	path coalesce on attached listed
	path recycle observe attached listed
	path virtio on "waiting for virtio_net" listed
	recycle_state refuse
	printf '%s\n' coalesce.calls=3000 recycle.calls=100 recycle.not_pp=100
} >"$T/in"
mkstats "$C/stats.before"
cp "$C/stats.before" "$C/stats.after"
status "$C" "$T/o" "$T/e"
[ "$rc" = 0 ] || bad "exit $rc, not 0 (waiting counts as running)"
for l in "eno1: e1000e" \
	"  coalesce  no: e1000e creates no page pool on Debian 6.1: its skbs are no page-pool skbs" \
	"  recycle   no: e1000e creates no page pool on Debian 6.1: nothing to recycle" \
	"packet sockets open: 2 (this network namespace; coalesce acts only on the clones such sockets make of page-pool skbs)" \
	"  coalesce: on, no page-pool driver's interface here: nothing to coalesce" \
	"  recycle: observe, no audited driver on this machine" \
	"  virtio: on, waiting for virtio_net to load (no virtio_net interface here)"; do
	has "$T/o" "$l" || bad "no line '$l'"
done
status "$C" "$T/o" "$T/e" --json
r=$(json "$T/o" 'd["exit"] == 0' 'd["paths"]["virtio"]["running"] is True' \
	'd["interfaces"][0]["paths"]["coalesce"]["why"] == "e1000e creates no page pool on Debian 6.1: its skbs are no page-pool skbs"' \
	'd["interfaces"][0]["packet_sockets"] == 1')
[ -z "$r" ] || bad "$r"
report status-nothing

# D: a kernel update no record verified yet: every path refused at load
# reads off; coalesce and virtio were asked for on (the defaults), recycle
# off: exit 1, each verdict with the reason
D=$T/D
machine "$D"
nic "$D" ens3 2 virtio virtio_net virtio_net
nv="unavailable: not verified for Debian 6.1.999-1"
{
	state 6.1
	path coalesce off "$nv" no on
	path recycle off "$nv" no off
	path virtio off "$nv" no on
	recycle_state refuse
} >"$T/in"
mkstats "$D/stats.before"
cp "$D/stats.before" "$D/stats.after"
status "$D" "$T/o" "$T/e"
[ "$rc" = 1 ] || bad "exit $rc, not 1 (paths asked for on could not attach)"
for l in "  coalesce: off (on asked), $nv" "  recycle: off, $nv, no audited driver on this machine" \
	"  virtio: off (on asked), $nv"; do
	has "$T/o" "$l" || bad "no line '$l'"
done
report status-unverified

# errors: not loaded (interfaces still listed), debugfs not mounted, format 1
N=$T/N
machine "$N"
rm -rf "$N/sys/module/ppcoal" "$N/sys/kernel/debug/ppcoal"
nic "$N" ens3 2 virtio virtio_net virtio_net
echo 6.1.0-57-cloud-amd64 >"$N/proc/sys/kernel/osrelease"
run "$T/o" "$T/e" env PATH="$FAKEPATH" PPCOAL_SYSFS="$N/sys" PPCOAL_PROC="$N/proc" "$S/ppcoal" status
[ "$rc" = 2 ] || bad "not loaded: exit $rc, not 2"
has "$T/e" "ppcoal: ppcoal is not loaded: load it with: modprobe ppcoal" || bad "not loaded: stderr: $(cat "$T/e")"
has "$T/o" "ppcoal $VERSION, on 6.1.0-57-cloud-amd64: module not loaded" || bad "not loaded: no first line"
has "$T/o" "  virtio    can act: virtio_net: its receive path calls build_skb" || bad "not loaded: ens3 not assessed"
has "$T/o" "  recycle   no: virtio_net creates no page pool on Debian 6.1: nothing to recycle" || bad "not loaded: ens3's recycle verdict"
run "$T/o" "$T/e" env PATH="$FAKEPATH" PPCOAL_SYSFS="$N/sys" PPCOAL_PROC="$N/proc" "$S/ppcoal" status --json
r=$(json "$T/o" 'd["exit"] == 2' 'd["module"]["loaded"] is False' 'd["paths"] == {}' \
	'd["error"] == "ppcoal is not loaded: load it with: modprobe ppcoal"' 'd["interfaces"][0]["name"] == "ens3"')
[ -z "$r" ] || bad "not loaded: $r"
mkdir -p "$N/sys/module/ppcoal/parameters"
grep -v debugfs "$N/proc/mounts" >"$T/m" && mv "$T/m" "$N/proc/mounts"
run "$T/o" "$T/e" env PATH="$FAKEPATH" PPCOAL_SYSFS="$N/sys" PPCOAL_PROC="$N/proc" "$S/ppcoal" status
{ [ "$rc" = 2 ] && grep -q 'debugfs is not mounted: mount -t debugfs none /sys/kernel/debug' "$T/e"; } ||
	bad "no debugfs: exit $rc, $(cat "$T/e")"
grep -v '^format ' "$A/stats.before" | sed 's/: / /' >"$A/stats.old"
cp "$A/stats.old" "$A/stats.before.keep" && cp "$A/stats.before" "$A/stats.keep" && cp "$A/stats.old" "$A/stats.before"
status "$A" "$T/o" "$T/e"
{ [ "$rc" = 2 ] && grep -q 'stats format 1 (no format line) not supported by this ppcoal.*reload the module' "$T/e"; } ||
	bad "format 1: exit $rc, $(cat "$T/e")"
cp "$A/stats.keep" "$A/stats.before"
report status-errors

# ================ busybox: the guest's sh, awk and sed ======================
# busybox sh runs its own sleep whatever PATH says: the "after" stats are
# swapped in by a background copy half-way through a 1 s interval.
if command -v busybox >/dev/null 2>&1; then
	mkdir -p "$T/bb"
	for a in $(busybox --list); do ln -s "$(command -v busybox)" "$T/bb/$a" 2>/dev/null; done
	rm -f "$T/bb/ip" "$T/bb/ethtool"
	ln -s "$T/bin/ip" "$T/bb/ip"
	ln -s "$T/bin/ethtool" "$T/bb/ethtool"
	# bbrun STATS AFTER OUT CMD...: CMD under busybox sh with only busybox
	# in PATH; AFTER replaces STATS 0.5 s after it starts
	bbrun() {
		st=$1 af=$2 o=$3
		shift 3
		(command sleep 0.5 && cp "$af" "$st") &
		env PATH="$T/bb" busybox sh "$@" >"$o" 2>&1
		wait
	}
	for args in "-c 1 -i 1" "--json -i 1" "--prometheus"; do
		cp "$F/before" "$F/stats"
		# shellcheck disable=SC2086 # args is a list of words
		env PATH="$FAKEPATH" PPCOAL_STATS="$F/stats" FIX_STATS="$F/stats" FIX_AFTER="$F/after" "$S/ppcoal-stat" $args 2>&1 |
			sed 's/^[0-9:]* //; s/"time":"[^"]*"//' >"$T/host"
		cp "$F/before" "$F/stats"
		# shellcheck disable=SC2086
		PPCOAL_STATS="$F/stats" bbrun "$F/stats" "$F/after" "$T/bbo" "$S/ppcoal-stat" $args
		sed 's/^[0-9:]* //; s/"time":"[^"]*"//' "$T/bbo" >"$T/bbo2"
		cmp -s "$T/host" "$T/bbo2" || bad "ppcoal-stat $args differs under busybox: $(diff "$T/host" "$T/bbo2" | sed -n 2,3p | cut -c 1-200 | tr '\n' ' ')"
	done
	for dir in "$A" "$B" "$C"; do
		m=${dir##*/}
		status "$dir" "$T/host" "$T/e" --json -i 1
		cp "$dir/stats.before" "$dir/sys/kernel/debug/ppcoal/stats"
		PPCOAL_SYSFS="$dir/sys" PPCOAL_PROC="$dir/proc" bbrun "$dir/sys/kernel/debug/ppcoal/stats" "$dir/stats.after" \
			"$T/bbo" "$S/ppcoal" status --json -i 1
		cmp -s "$T/host" "$T/bbo" || bad "ppcoal status (machine $m) differs under busybox: $(diff "$T/host" "$T/bbo" | cut -c 1-200 | tr '\n' ' ')"
	done
	report busybox
else
	skip busybox "busybox not installed (apt-get install busybox)"
fi

# ============================ POSIX sh ======================================
for f in "$S/ppcoal" "$S/ppcoal-stat" "$S/ppcoal-ab" "$S/ppcoal-manpage" "$S/ppcoal-doc" "$REPO/tests/host-tools.sh" "$REPO/tests/host-ab.sh"; do
	dash -n "$f" 2>"$T/e" || bad "dash -n $(basename "$f"): $(head -n 1 "$T/e")"
	if command -v busybox >/dev/null 2>&1; then
		busybox sh -n "$f" 2>"$T/e" || bad "busybox sh -n $(basename "$f"): $(head -n 1 "$T/e")"
	fi
done
if command -v shellcheck >/dev/null 2>&1; then
	shellcheck -s sh "$S/ppcoal" "$S/ppcoal-stat" "$S/ppcoal-ab" "$S/ppcoal-manpage" "$S/ppcoal-doc" "$REPO/tests/host-tools.sh" "$REPO/tests/host-ab.sh" >"$T/e" 2>&1 ||
		bad "shellcheck: $(grep -m 2 'SC[0-9]' "$T/e" | tr '\n' ' ')"
else
	skip posix "shellcheck not installed: dash -n only"
fi
report posix

# ============================ manual pages ==================================
if ! "$S/ppcoal-manpage" "$T/man" "$VERSION" 2>"$T/e"; then
	bad "ppcoal-manpage failed: $(cat "$T/e")"
elif ! command -v man >/dev/null 2>&1; then
	skip man "man not installed: pages built, not checked"
else
	for p in ppcoal.8 ppcoal.4 ppcoal-stat.8 ppcoal-ab.8 ppcoal-verify-kernel.8; do
		f=$T/man/$p
		[ -f "$f" ] || { bad "$p not built"; continue; }
		LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$f" >"$T/o" 2>"$T/e"
		[ -s "$T/e" ] && bad "$p: man --warnings: $(head -n 2 "$T/e" | tr '\n' ' ')"
		for h in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" FILES EXAMPLES "SEE ALSO"; do
			grep -qx "\.SH \"*$h\"*" "$f" || bad "$p: no section $h"
		done
		grep -q '@[A-Za-z_]*@' "$f" && bad "$p: an @NAME@ left"
		grep -q "^\.TH [^ ]* [48] \"[0-9-]*\" \"ppcoal $VERSION\"" "$f" || bad "$p: .TH lacks the version"
	done
	f=$T/man/ppcoal.4
	LC_ALL=C MANWIDTH=200 man -l "$f" 2>/dev/null | sed 's/‐//g' >"$T/page4"
	while read -r c; do
		grep -Eq "^ +$c( |\$)" "$T/page4" || bad "ppcoal(4) lacks counter $c"
	done <"$T/counters"
	for p in $(cat "$REPO"/*.c | tr '\n' ' ' | grep -o 'module_param[a-z_]*( *[a-z_]*' | sed 's/.*( *//' | sort -u); do
		grep -Eq "^ +$p( |\$)" "$T/page4" || bad "ppcoal(4) lacks parameter $p"
	done
	sed -n 's/^PPC_AUDITED(\([a-z0-9_]*\),.*/\1/p' "$REPO/ppcoal_tables.h" >"$T/audited"
	[ -s "$T/audited" ] || bad "no PPC_AUDITED row found in ppcoal_tables.h"
	while read -r a; do
		grep -Eq "^ +$a( |\$)" "$T/page4" || bad "ppcoal(4) lacks audited driver $a"
	done <"$T/audited"
	grep -q 'unavailable: reason; this path stays off' "$T/page4" || bad "ppcoal(4) lacks the unavailable dmesg line"
fi
report man
