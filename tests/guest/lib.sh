# Guest test helpers (busybox sh). Sourced by run-guest.sh.
# Results go to the console as PPCOAL-RESULT lines (see tests/vm/parse-log.sh).

S=/sys/kernel/debug/ppcoal/stats
P=/sys/module/ppcoal/parameters
IP=${IP:-/usr/lib/iproute2/ip}
PEER=198.18.0.2
SELF=198.18.0.1
# The fixture pair: ppf0 here, ppf1 in netns peer (tests/modules/ppcoal_fixture.c)
FPEER=198.19.0.2
FSELF=198.19.0.1
# Where iperf/xfer/traffic_start send: TARGET (default the virtio peer).
TARGET=$PEER

# Current test; failures are collected and reported once per test.
T=""
TFAIL=""
# "=== test T at S s": S the guest's uptime, for the test's duration
begin() { T=$1; TFAIL=""; echo "=== test $T at $(cut -d' ' -f1 /proc/uptime) s"; }
bad() { TFAIL="$TFAIL${TFAIL:+; }$*"; echo "  FAIL: $*"; }
end() {
	if [ -z "$TFAIL" ]; then
		echo "PPCOAL-RESULT PASS $T"
	else
		echo "PPCOAL-RESULT FAIL $T $TFAIL"
	fi
}

# expect DESCRIPTION COMMAND...: the command must succeed
expect() { d=$1; shift; "$@" || bad "$d"; }
# eq A B DESCRIPTION / gt A B DESCRIPTION
eq() { [ "$1" = "$2" ] || bad "$3 ($1 != $2)"; }
gt() { [ "$1" -gt "$2" ] 2>/dev/null || bad "$3 ($1 <= $2)"; }
ge() { [ "$1" -ge "$2" ] 2>/dev/null || bad "$3 ($1 < $2)"; }
le() { [ "$1" -le "$2" ] 2>/dev/null || bad "$3 ($1 > $2)"; }

# on_61: the loaded ppcoal runs on the 6.1 family (its recycle path shadows
# page_pool_return_skb_page; 6.12's is napi_pp_put_page)
on_61() { [ "$(val recycle_target)" = page_pool_return_skb_page ]; }
# val NAME [FILE]: value of a stats line (MISSING if absent)
# (a state line's key ends with a colon, a counter's does not: format 2)
val() { awk -v k="$1" '{ n = $1; sub(/:$/, "", n) } n == k { sub(/^[^ ]+ /, ""); print; f = 1 } END { if (!f) print "MISSING" }' "${2:-$S}"; }
snap() { cat "$S" >"$1"; }
# delta NAME A B: counter change between two snapshots
delta() { echo $(($(val "$1" "$3") - $(val "$1" "$2"))); }
# sumd A B NAME...: sum of deltas
sumd() {
	local a b s n
	a=$1 b=$2
	shift 2
	s=0
	for n in "$@"; do s=$((s + $(delta "$n" "$a" "$b"))); done
	echo "$s"
}

# ns NAME: a TcpExt counter of /proc/net/netstat, summed over this netns and
# peer (MIBs are per network namespace; the receivers run in peer)
ns() {
	local n
	for n in "" peer; do
		if [ -n "$n" ]; then "$IP" netns exec $n cat /proc/net/netstat; else cat /proc/net/netstat; fi
	done | awk -v k="$1" '/^TcpExt:/ { if (!h) { for (i = 2; i <= NF; i++) n[i] = $i; h = 1; next }
		for (i = 2; i <= NF; i++) if (n[i] == k) s += $i; h = 0 } END { print s + 0 }'
}

# dmesg_has TEXT: the kernel log contains TEXT
dmesg_has() { dmesg | grep -qF -- "$1"; }

# Stock modules: reload virtio_net with its dependencies (ordered lists).
virtio_unload() { rmmod virtio_net; }
virtio_load() {
	local m mn
	while read -r m; do
		mn=$(basename "$m" .ko)
		grep -q "^$mn " /proc/modules || insmod "$m" || return 1
	done </etc/modlist.d/virtio_net
}

# ppcoal.direct=1 on the kernel command line (the "direct" boot): every
# ppcoal_load enters the replacements through ftrace direct calls; an
# argument of the caller's own comes later and wins
PPC_LOAD_DIRECT=$(sed -n 's/.*ppcoal\.direct=\([01]\).*/\1/p' /proc/cmdline)
ppcoal_load() { insmod /ko/ppcoal.ko ${PPC_LOAD_DIRECT:+direct_calls=$PPC_LOAD_DIRECT} "$@"; }
# the way the loaded ppcoal enters its replacements (stats: hook_calls)
hook_calls_want() { [ "$PPC_LOAD_DIRECT" = 1 ] && echo direct || echo ftrace; }
# hook_calls_ok [LABEL]: the loaded ppcoal enters its replacements the way
# this boot asks for (a direct boot that fell back to callbacks would test
# the other mode)
hook_calls_ok() { eq "$(val hook_calls)" "$(hook_calls_want)" "${1:+$1: }hook_calls"; }
# pick "W0 W1 ..." I: word I modulo the number of words (the mode flips)
pick() {
	local i=$2
	set -- $1
	shift $((i % $#))
	echo "$1"
}
# karg NAME DEFAULT: ppcoal.NAME=VALUE from the kernel command line
karg() { v=$(sed -n "s/.*ppcoal\.$1=\([^ ]*\).*/\1/p" /proc/cmdline); echo "${v:-$2}"; }

# pkillf PATTERN [-SIG]: signal every process whose command line holds
# PATTERN (Debian's busybox-static has no pkill or pgrep)
pkillf() {
	local pids
	pids=$(ps | awk -v p="$1" 'index($0, p) && !/awk -v p=/ { print $1 }')
	[ -z "$pids" ] || kill "${2:--TERM}" $pids 2>/dev/null
	return 0
}
ppcoal_unload() { ! grep -q '^ppcoal ' /proc/modules || rmmod ppcoal; }

# net_up: eth with MAC :01 stays here (198.18.0.1), :02 goes to netns peer
# (198.18.0.2), joined by QEMU's hub; an iperf3 server runs in peer.
nic_of() { grep -l "$1" /sys/class/net/*/address 2>/dev/null | cut -d/ -f5; }
net_up() {
	local e0 e1 i
	e0=""
	e1=""
	i=0
	while [ $i -lt 50 ]; do
		e0=$(nic_of 52:54:00:00:00:01)
		e1=$(nic_of 52:54:00:00:00:02)
		[ -n "$e0" ] && [ -n "$e1" ] && break
		sleep 0.1
		i=$((i + 1))
	done
	[ -n "$e0" ] && [ -n "$e1" ] || { echo "net_up: NICs missing"; return 1; }
	[ -e /run/netns/peer ] || "$IP" netns add peer || return 1
	"$IP" link set "$e1" netns peer || return 1
	"$IP" netns exec peer "$IP" link set lo up
	"$IP" netns exec peer "$IP" addr add $PEER/24 dev "$e1" || return 1
	"$IP" netns exec peer "$IP" link set "$e1" up || return 1
	"$IP" addr add $SELF/24 dev "$e0" || return 1
	"$IP" link set "$e0" up || return 1
	killall iperf3 2>/dev/null
	sleep 0.2
	"$IP" netns exec peer iperf3 -s -D -B $PEER >/dev/null 2>&1 || return 1
	i=0
	while ! ping -c 1 -W 1 $PEER >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 20 ] || { echo "net_up: no ping"; return 1; }
	done
	sleep 0.3
}

# iperf SECONDS [iperf3 client options]: runs a client; prints
# "sent received" bytes; fails when iperf3 does.
iperf() {
	local t
	t=$1
	shift
	timeout $((t + 30)) iperf3 -c $TARGET -t "$t" --connect-timeout 3000 -J "$@" >/tmp/iperf.json 2>&1 || {
		echo "iperf3 failed: $(grep -m1 '"error"' /tmp/iperf.json)" >&2
		return 1
	}
	iperf_bytes
}

# iperf_bytes: "SENT RECEIVED" payload bytes of the last iperf run ("0 0"
# when there is none)
iperf_bytes() {
	[ -f /tmp/iperf.json ] || { echo "0 0"; return 0; }
	awk '/"sum_sent"/ { s = 1 } /"sum_received"/ { r = 1 }
		/"bytes":/ { gsub(/[^0-9]/, "", $2)
			if (s == 1) { sent = $2; s = 2 }
			if (r == 1) { rcvd = $2; r = 2 } }
		END { print sent + 0, rcvd + 0 }' /tmp/iperf.json
}

# net_diag: after a flood or a client failed, what the NICs and the two
# CPUs' receive queues show (is a device silent, or the stack stuck?)
net_diag() {
	echo "  net_diag: virtio interrupts:"
	grep -i virtio /proc/interrupts
	echo "  net_diag: here, then in netns peer:"
	cat /proc/net/dev
	"$IP" netns exec peer cat /proc/net/dev
	echo "  net_diag: softnet_stat:"
	cat /proc/net/softnet_stat
}

# iperf_mbps: receiver Mbit/s of the last iperf() run
iperf_mbps() {
	awk '/"sum_received"/ { f = 1 } f && /"bits_per_second"/ { gsub(/[^0-9.]/, "", $2); print int($2 / 1e6); exit }' /tmp/iperf.json
}

# mode_order REP: off, observe and on in an order that rotates with REP, so
# that no mode always runs first in an interleaved benchmark
mode_order() {
	case $(($1 % 3)) in
	0) echo "off observe on" ;;
	1) echo "observe on off" ;;
	*) echo "on off observe" ;;
	esac
}

# pair_order REP: off and on, swapped on odd REP (an A/B of two modes)
pair_order() {
	if [ $(($1 % 2)) = 0 ]; then echo "off on"; else echo "on off"; fi
}

# xfer MB: send MB of random data to peer over TCP (busybox nc) and compare
# checksums; proves the data arrives intact, which iperf3 does not check.
xfer() {
	local want i
	want=$(($1 * 1048576))
	dd if=/dev/urandom of=/tmp/tx bs=1M count="$1" 2>/dev/null
	rm -f /tmp/rx
	(sleep 60 | "$IP" netns exec peer timeout 60 nc -l -p 5999 >/tmp/rx) &
	# wait for the listener (port 5999 = 176F, state 0A = LISTEN in peer's
	# /proc/net/tcp or tcp6: busybox nc listens on IPv6 when it can): a
	# fixed sleep was too short on the debug kernel
	i=0
	until "$IP" netns exec peer cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
		grep -E ':176F [0:]+ 0A ' >/dev/null || [ $i -ge 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	timeout 60 nc $TARGET 5999 </tmp/tx || echo "xfer: nc client failed" >&2
	i=0
	while [ "$(wc -c </tmp/rx)" -lt $want ] && [ $i -lt 200 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	pkillf "nc -l -p 5999"
	pkillf "sleep 60"
	[ "$(md5sum </tmp/tx)" = "$(md5sum </tmp/rx)" ] || {
		echo "xfer: $(wc -c </tmp/rx) of $want bytes, checksum differs" >&2
		return 1
	}
}

# Background traffic that restarts clients until /tmp/stop-traffic exists;
# failed clients are appended to /tmp/traffic.err. Each client is bounded
# in time, so stopping never hangs even when the network went away.
traffic_start() {
	rm -f /tmp/stop-traffic /tmp/traffic.err
	(
		while [ ! -e /tmp/stop-traffic ]; do
			timeout 15 iperf3 -c $TARGET -t 2 --connect-timeout 2000 "$@" >/tmp/traffic.out 2>&1 && continue
			[ ! -e /tmp/stop-traffic ] || break
			# the server still ends the previous (killed) client's test:
			# not a datapath failure, try again
			if grep -q "server is busy" /tmp/traffic.out; then
				sleep 0.5
				continue
			fi
			echo "client failed at $(cut -d' ' -f1 /proc/uptime): $(grep -m1 -i error /tmp/traffic.out)" >>/tmp/traffic.err
		done
	) &
	TRAFFIC_PID=$!
}
traffic_stop() {
	[ -n "${TRAFFIC_PID:-}" ] || return 0
	touch /tmp/stop-traffic
	pkillf "iperf3 -c" -9
	wait "$TRAFFIC_PID" 2>/dev/null
	TRAFFIC_PID=""
}

# The names the counter table declares (generated on the host).
counter_names() { cat /tests/counters.txt; }

# fixture_up [module parameters]: load the fixture, ppf1 into netns peer.
fixture_up() {
	local i
	insmod /ko/ppcoal_fixture.ko "$@" || return 1
	"$IP" link set ppf1 netns peer || return 1
	# IPv4 only on the pair: no IPv6 chatter among counted pages
	echo 1 >/proc/sys/net/ipv6/conf/ppf0/disable_ipv6 2>/dev/null
	"$IP" netns exec peer sh -c 'echo 1 >/proc/sys/net/ipv6/conf/ppf1/disable_ipv6' 2>/dev/null
	"$IP" netns exec peer "$IP" addr add $FPEER/24 dev ppf1 || return 1
	"$IP" netns exec peer "$IP" link set ppf1 up || return 1
	"$IP" addr add $FSELF/24 dev ppf0 || return 1
	"$IP" link set ppf0 up || return 1
	ps | grep -q "[i]perf3 -s -D -B $FPEER$" ||
		"$IP" netns exec peer iperf3 -s -D -B $FPEER >/dev/null 2>&1
	i=0
	while ! ping -c 1 -W 1 $FPEER >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 20 ] || { echo "fixture_up: no ping"; return 1; }
	done
	# Static neighbours both ways (blackhole_up's entry, for FPEER), and no
	# ARP among counted pages: the peer learned ppf0 from the ping's
	# request and probed it 5 s later
	# (NUD DELAY -> PROBE), one frame into ppf0's pool, in ppf0's poll,
	# that made ppcoal open a learning window for that pool at about the
	# end of recycle-drop's flood
	blackhole_up ppf0 ppf1 $FPEER || return 1
	"$IP" netns exec peer "$IP" neigh replace $FSELF \
		lladdr "$(cat /sys/class/net/ppf0/address)" dev ppf1 nud permanent || return 1
	TARGET=$FPEER
}

# fixture_down: unload the fixture; both pools must report drained.
fixture_down() {
	local n0 n1
	TARGET=$PEER
	grep -q '^ppcoal_fixture ' /proc/modules || return 0
	n0=$(dmesg | grep -c 'pool drained')
	rmmod ppcoal_fixture || { echo "fixture_down: rmmod failed"; return 1; }
	n1=$(dmesg | grep -c 'pool drained')
	! dmesg | grep -q 'pool LEAK' || { echo "fixture_down: $(dmesg | grep 'pool LEAK' | tail -n 1)"; return 1; }
	[ $((n1 - n0)) = 2 ] || { echo "fixture_down: $((n1 - n0)) of 2 pools reported drained"; return 1; }
}

# fixture_inflight: pages of both pools out in skbs (pools file)
fixture_inflight() {
	awk '{ for (i = 1; i < NF; i++) if ($i == "inflight") s += $(i + 1) } END { print s + 0 }' \
		/sys/kernel/debug/ppcoal_fixture/pools
}

# tcp_insegs: Tcp InSegs summed over this netns and peer
tcp_insegs() {
	for n in "" peer; do
		if [ -n "$n" ]; then "$IP" netns exec $n cat /proc/net/snmp; else cat /proc/net/snmp; fi
	done | awk '/^Tcp:/ { if (!h) { for (i = 2; i <= NF; i++) if ($i == "InSegs") c = i; h = 1; next }
		s += $c; h = 0 } END { print s + 0 }'
}

# --- direct recycling (recycle path) ---
FX=/sys/kernel/debug/ppcoal_fixture
# Nobody owns BLACKHOLE: ppf0 sends to it through a static neighbour entry
# with ppf1's MAC, and netns peer (forwarding off) drops it inside ppf1's
# NAPI poll without answering (ip_error: no ICMP when not forwarding).
BLACKHOLE=198.19.0.77
blackhole_up() { # blackhole_up DEV PEERDEV ADDR
	"$IP" neigh replace "$3" lladdr "$(peer_mac "$2")" dev "$1" nud permanent
}
# peer_mac DEV: the MAC address of DEV in netns peer
peer_mac() { "$IP" -n peer link show "$1" | awk '/link\/ether/ { print $2 }'; }
# pktgen_flood DEV DSTMAC SECS: pktgen (CPU 0's thread) sends 106-byte UDP
# frames (64 bytes of payload, as drop_flood) to BLACKHOLE port 9 through
# DEV for SECS; a new skb per frame (clone_skb 0: the fixture queues what
# it is given)
pktgen_flood() {
	local pg=/proc/net/pktgen c
	echo rem_device_all >$pg/kpktgend_0 || return 1
	echo "add_device $1" >$pg/kpktgend_0 || return 1
	for c in "count 0" "clone_skb 0" "pkt_size 106" "delay 0" \
		"dst $BLACKHOLE" "dst_mac $2" "udp_dst_min 9" "udp_dst_max 9"; do
		echo "$c" >"$pg/$1" || return 1
	done
	echo start >$pg/pgctrl &
	c=$!
	sleep "$3"
	echo stop >$pg/pgctrl
	wait $c
}
# drop_flood SECS [ADDR]: 64-byte UDP datagrams that die inside the poll
drop_flood() { udpflood "${2:-$BLACKHOLE}" 9 "$1" 64 >/dev/null; }
# wrapped FN: recycle.poll_marks names FN among the poll functions wrapped
# ("wrapper on F,G[; tracker ...]"; other audited drivers' modules may be
# loaded: veth and vmxnet3 on 6.12)
wrapped() {
	val recycle.poll_marks | awk -v f="$1" '{ sub(/;.*/, "") }
		$1 != "wrapper" || $2 != "on" { exit 1 }
		{ n = split($3, w, ","); for (i = 1; i <= n; i++) if (w[i] == f) exit 0; exit 1 }'
}
# tracker_why: why the tracker marks every poll ("" when it does not)
tracker_why() { val recycle.poll_marks | sed -n 's/.*tracker on every poll (\(.*\))$/\1/p'; }
# direct_pm A B: per mille of page-pool puts that were direct (ppcoal or kernel)
permille() { # permille N D: N per mille of D, 0 when D is 0
	# not $((D ? N * 1000 / D : 0)): busybox ash evaluates both arms
	# and fails with "divide by zero"
	if [ "$2" -ne 0 ]; then echo $(($1 * 1000 / $2)); else echo 0; fi
}
# virtio_rx: packets received by the virtio NIC in netns peer
virtio_rx() {
	"$IP" netns exec peer cat /proc/net/dev |
		awk '$1 ~ /:$/ && $1 != "lo:" && $1 !~ /^ppf/ { print $3; exit }'
}
direct_pm() {
	local d r
	d=$(sumd "$1" "$2" recycle.direct recycle.upstream_direct)
	r=$(delta recycle.ring "$1" "$2")
	permille "$d" $((d + r))
}
# diff_pass PATH DIR SEED MODE RUN-MODE: one pass of a differential test
# module (debugfs DIR) over $n cases with ppcoal's PATH in MODE, counter
# snapshots around it (/tmp/a, /tmp/b); its result line in $r
diff_pass() {
	echo "$4" >"$P/$1" || bad "seed $3: $1=$4 refused"
	snap /tmp/a
	echo "$3 $n $5" >"$2/run" || bad "seed $3: $5"
	snap /tmp/b
	r=$(cat "$2/result")
	echo "  $4: $r"
}
# share_pm NUM DEN A B: per mille of DEN's delta that NUM's delta is
share_pm() {
	local n d
	n=$(delta "$1" "$3" "$4")
	d=$(delta "$2" "$3" "$4")
	permille "$n" "$d"
}
# peer_rx DEV: rx_packets of DEV in netns peer
peer_rx() { "$IP" netns exec peer cat "/sys/class/net/$1/statistics/rx_packets"; }
# ppf_field DEV NAME: the value after NAME on DEV's line of the pools file
ppf_field() { awk -v d="$1" -v k="$2" '$1 == d { for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }' $FX/pools; }
ppf1_field() { ppf_field ppf1 "$1"; }
# fixture_held: skbs ppf1 keeps for "release"
fixture_held() { ppf1_field held; }
# softnet_dropped: packets dropped at full backlogs, all CPUs (softnet_stat
# column 2, hex)
softnet_dropped() {
	local s h
	s=0
	for h in $(awk '{ print $2 }' /proc/net/softnet_stat); do s=$((s + 0x$h)); done
	echo $s
}

# tap_start: pptap in the peer namespace clones every skb ppf1 receives
# (a packet socket, as tcpdump's), its report in /tmp/pptap.out; tap_stop
# ends it and waits for the report.
tap_start() {
	"$IP" netns exec peer pptap ppf1 >/tmp/pptap.out 2>&1 &
	TAP_PID=$!
}
tap_stop() {
	kill "$TAP_PID"
	wait "$TAP_PID" 2>/dev/null
}
# xfer_tapped MB: xfer with the tap
xfer_tapped() {
	local rc
	tap_start
	xfer "$1"
	rc=$?
	tap_stop
	return $rc
}
# bench_init DEFAULT_REPS: how a benchmark starts: $reps from ppcoal.reps=
# on the kernel command line (else DEFAULT_REPS), ppcoal loaded with every
# path off, entering its replacements through direct calls with
# ppcoal.direct=1; ends the script (BENCH-ERROR, BENCH-DONE) if it cannot
# load or enters them the other way
bench_init() {
	reps=$(sed -n 's/.*ppcoal\.reps=\([0-9]*\).*/\1/p' /proc/cmdline)
	reps=${reps:-$1}
	ppcoal_load coalesce=off recycle=off virtio=off ||
		{ echo "BENCH-ERROR insmod ppcoal"; echo BENCH-DONE; exit 0; }
	[ "$(val hook_calls)" = "$(hook_calls_want)" ] ||
		{ echo "BENCH-ERROR hook_calls $(val hook_calls), not $(hook_calls_want)"; echo BENCH-DONE; exit 0; }
}

# ---------------------------------------------------------------------------
# Shared by the guest tests' area files (tests/guest/tests.tsv names them).

cleanup() {
	traffic_stop 2>/dev/null
	pkillf bpffentry
	ppcoal_unload 2>/dev/null
	grep -q '^ppcoal_conflict ' /proc/modules && rmmod ppcoal_conflict
	grep -q '^ppcoal_kprobe ' /proc/modules && rmmod ppcoal_kprobe
	grep -q '^ppcoal_microbench ' /proc/modules && rmmod ppcoal_microbench
	grep -q '^ppcoal_differential ' /proc/modules && rmmod ppcoal_differential
	grep -q '^ppcoal_virtio_diff ' /proc/modules && rmmod ppcoal_virtio_diff
	fixture_down >/dev/null 2>&1
	# a test's kprobe events (kev_add)
	if [ -n "$(cat /sys/kernel/tracing/kprobe_events 2>/dev/null)" ]; then
		echo 0 >/sys/kernel/tracing/events/kprobes/enable
		echo >/sys/kernel/tracing/kprobe_events
	fi
	echo "$1" >/dev/null
}

hooked() { grep -q "^$1 " /sys/kernel/tracing/enabled_functions; }
# The virtio path's hooks in observe alone (ppcoal_tables.h, OBSERVE arm):
# rxf_hooked MODE checks they are in enabled_functions in observe, not else.
case $(uname -r) in
6.1.*) RXF_HOOKS="__napi_alloc_skb skb_add_rx_frag" ;;
*) RXF_HOOKS="napi_alloc_skb skb_add_rx_frag_netmem" ;;
esac
rxf_hooked() {
	for f in $RXF_HOOKS; do
		case $1 in
		observe) hooked $f || bad "virtio $1: $f not in enabled_functions" ;;
		*) ! hooked $f || bad "virtio $1: $f in enabled_functions (observe alone counts the copy branch)" ;;
		esac
	done
}

# Stats must be well formed and name exactly the table's counters.
check_stats_format() {
	[ -r "$S" ] || { bad "stats not readable"; return; }
	eq "$(stat -c %a "$S" 2>/dev/null || ls -l "$S" | cut -c1-10)" 444 "stats mode"
	eq "$(head -n 1 "$S")" "format 2" "first line"
	# after it: state lines "key: text", counter lines "path.name digits"
	awk 'NR > 1 && !/^[a-z0-9_.]+: .*$/ && !/^[a-z0-9_]+\.[a-z0-9_]+ [0-9]+$/ { print "bad line: " $0; e = 1 } END { exit e }' "$S" ||
		bad "malformed stats line"
	eq "$(val release)" "$(uname -r)" "release line"
	eq "$(val version)" "$(cat /sys/module/ppcoal/version)" "version line = modinfo version"
	[ "$(val version)" != unknown ] || bad "version unknown (dkms.conf not read at build)"
	for p in coalesce recycle virtio; do
		case "$(val $p.mode)" in off | observe | on) ;; *) bad "$p.mode missing" ;; esac
		[ "$(val $p.state)" != MISSING ] || bad "$p.state missing"
		case "$(val $p.verified)" in listed | local | no) ;; *) bad "$p.verified: $(val $p.verified)" ;; esac
	done
	counter_names | while read -r n; do
		case "$(val "$n")" in
		'' | *[!0-9]*) echo "  FAIL: counter $n: $(val "$n")"; echo x >>/tmp/fmt.err ;;
		esac
	done
	[ ! -e /tmp/fmt.err ] || { bad "counters missing or not numeric"; rm -f /tmp/fmt.err; }
	# the counters: every line whose key has no colon, found with no key list
	got=$(awk 'NR > 1 && $1 !~ /:$/ { print $1 }' "$S" | sort)
	eq "$(echo "$got" | tr '\n' ' ')" "$(counter_names | sort | tr '\n' ' ')" "counter set = table"
}

# calls = sum of outcomes, per path (snapshots A B)
check_sums() {
	a=$1 b=$2
	eq "$(delta coalesce.calls $a $b)" "$(sumd $a $b coalesce.refused_to_cloned \
		coalesce.refused_pp_mismatch coalesce.refused_pp_cloned coalesce.refused_unreadable \
		coalesce.refused_frag_list coalesce.refused_zcopy coalesce.refused_too_many_frags \
		coalesce.refused_head_locked coalesce.refused_clone_policy \
		coalesce.refused_frag_bias coalesce.copied coalesce.head_stolen \
		coalesce.frags_moved)" "coalesce.calls = sum of outcomes"
	eq "$(delta recycle.calls $a $b)" "$(sumd $a $b recycle.not_pp recycle.ring recycle.direct recycle.upstream_direct)" \
		"recycle.calls = not_pp + ring + direct + upstream_direct"
	if [ "$(val recycle.mode $a)$(val recycle.mode $b)" = onon ]; then
		eq "$(sumd $a $b recycle.deny_not_softirq recycle.deny_owner_unknown \
			recycle.deny_owner_elsewhere recycle.deny_pool_shared \
			recycle.deny_not_eligible)" \
			"$(delta recycle.ring $a $b)" "recycle on: every ring put has a deny reason"
	fi
	# the copy branch is counted in observe alone (the OBSERVE arm)
	case $(val virtio.mode $a)$(val virtio.mode $b) in
	observeobserve)
		eq "$(delta virtio.page_to_skb_calls $a $b)" \
			"$(sumd $a $b virtio.page_to_skb_build virtio.page_to_skb_copy)" \
			"virtio.page_to_skb_calls = build + copy"
		[ "$(delta virtio.page_to_skb_frags $a $b)" -le "$(delta virtio.page_to_skb_copy $a $b)" ] ||
			bad "virtio.page_to_skb_frags > page_to_skb_copy"
		;;
	onon)
		eq "$(sumd $a $b virtio.page_to_skb_copy virtio.page_to_skb_frags)" 0 \
			"virtio on: the copy branch's counters (observe alone)"
		;;
	esac
	[ "$(delta virtio.page_to_skb_build $a $b)" -le "$(delta virtio.rx_build_skb $a $b)" ] ||
		bad "virtio.page_to_skb_build > rx_build_skb"
}

# build_window LABEL: snapshots /tmp/a and /tmp/b around 1 s of 600-byte
# datagrams to the virtio peer, the last received before /tmp/b
build_window() {
	snap /tmp/a
	udpflood $PEER 9 1 600 >/dev/null || bad "$1: udpflood"
	sleep 0.5
	snap /tmp/b
}
