#!/bin/sh
# recycle path benchmark (not a test): off / observe / on interleaved, the
# other paths off, on the fixture pair (one buffer per page, as Debian 6.1
# amd64 drivers; 6.12: no page_pool_params.napi, as veth/vmxnet3).
#   drop: 64-byte UDP to BLACKHOLE, dropped inside ppf1's NAPI poll (the
#         2023 RFC's case); packets/s received by ppf1's poll, per mille
#         of page puts that were direct.
#         Twice: a NAPI poll per frame (irq_usecs=0: a sender on the same
#         CPU), then with NIC-like interrupt moderation (irq_usecs=200:
#         several frames per poll, as under load), kinds *_mod.
#   TCP:  iperf3 -l 256, Mbit/s at the receiver (poll per frame).
#   xdp:  the 2023 RFC's case: an XDP_DROP program in skb (generic) mode
#         on ppf1, 106-byte UDP frames from pktgen on ppf0; kinds xdp_*,
#         both moderations.
# Each run: a 1 s warm-up flood (in "on" the owner is learnt in it), a 2 s
# pause, then the measured flood. In "on" also the counters that explain a
# run (learning arms, owners learnt, deny reasons) and whether the learning
# probes were still armed when it began.
# Prints "BENCH kind mode rep value" lines, and around each measured flood
# the marks of the insncount QEMU plugin ("PPCOAL-INSNWIN kind-mode/rep
# packets": instructions per packet received, scripts/ppcoal-bench).
. /tests/lib.sh
bench_init 5
secs=3
echo 0 >/proc/sys/net/core/skb_defer_max
net_up >/dev/null 2>&1

# The senders; with MARK=mark the flood is an instruction window (the
# flood tool marks its own, so no process start or exit is in it)
MARK=""
drop_sender() { udpflood $BLACKHOLE 9 "$1" 64 $MARK >/dev/null; }
pktgen_sender() {
	[ -z "$MARK" ] || insnmark
	pktgen_flood "$@"
	[ -z "$MARK" ] || insnmark
}

# run KIND MODE REP SENDER...: one measured run of SENDER SECS (a warm-up
# flood, a pause, the flood measured), its BENCH lines
run() {
	run_k=$1 run_m=$2 run_r=$3
	shift 3
	"$@" 1
	# Steady state only: in "on" the warm-up learnt the owner, and for a
	# second or two after the learning probes are removed the emulated
	# guest runs the data path up to 25% slower (seen on 6.12; the pause
	# removes it, in every mode alike); the transient is in the README.
	sleep 2
	snap /tmp/a
	run_a=$(peer_rx ppf1)
	MARK=mark
	"$@" $secs
	MARK=""
	sleep 0.2
	run_b=$(peer_rx ppf1)
	snap /tmp/b
	echo "BENCH ${run_k}_pps$sfx $run_m $run_r $(((run_b - run_a) / secs))"
	echo "PPCOAL-INSNWIN ${run_k}$sfx-$run_m/$run_r $((run_b - run_a))"
	[ "$run_m" = off ] || echo "BENCH ${run_k}_direct_pm$sfx $run_m $run_r $(direct_pm /tmp/a /tmp/b)"
	[ "$run_m" = on ] || return 0
	echo "BENCH ${run_k}_armed_at_start$sfx $run_m $run_r $([ "$(val recycle.learning /tmp/a)" = armed ] && echo 1 || echo 0)"
	for run_c in learn_armed deny_owner_unknown deny_owner_elsewhere deny_not_softirq; do
		echo "BENCH ${run_k}_$run_c$sfx $run_m $run_r $(delta recycle.$run_c /tmp/a /tmp/b)"
	done
	# polls are counted where ppcoal's poll probes run (6.1)
	run_p=$(delta recycle.napi_polls /tmp/a /tmp/b)
	[ "$run_p" = 0 ] || echo "BENCH ${run_k}_pages_per_poll$sfx $run_m $run_r $(($(delta recycle.direct /tmp/a /tmp/b) / run_p))"
}

for irq in 0 200; do
	sfx=""
	[ $irq = 0 ] || sfx=_mod
	fixture_up frag_pool=0 linear=0 irq_usecs=$irq || { echo "BENCH-ERROR fixture"; exit 0; }
	blackhole_up ppf0 ppf1 $BLACKHOLE || { echo "BENCH-ERROR blackhole"; exit 0; }
	r=0
	while [ $r -lt "$reps" ]; do
		for m in $(mode_order $r); do
			echo $m >$P/recycle
			run drop $m $r drop_sender
			if [ $irq = 0 ]; then
				iperf $secs -l 256 >/dev/null || echo "BENCH-ERROR iperf3"
				echo "BENCH tcp_mbps_256 $m $r $(iperf_mbps)"
			fi
		done
		r=$((r + 1))
	done
	# The RFC's own case: XDP_DROP in skb (generic) mode on ppf1, frames
	# from pktgen (cheaper per frame than a UDP socket, so the receiver's
	# share of the work is larger)
	if [ -d /proc/net/pktgen ]; then
		"$IP" netns exec peer xdppass -d -g ppf1 >/tmp/xdp.out 2>&1 &
		sleep 1
		if grep -q attached /tmp/xdp.out; then
			mac1=$(peer_mac ppf1)
			r=0
			while [ $r -lt "$reps" ]; do
				for m in $(mode_order $r); do
					echo $m >$P/recycle
					run xdp $m $r pktgen_sender ppf0 "$mac1"
				done
				r=$((r + 1))
			done
		else
			echo "BENCH-ERROR xdppass: $(cat /tmp/xdp.out)"
		fi
		pkillf "xdppass -d -g ppf1"
		sleep 0.5
	else
		echo "BENCH-ERROR no pktgen (ppcoal-bench loads it)"
	fi
	fixture_down || echo "BENCH-ERROR pools did not drain"
done
echo off >$P/recycle
echo BENCH-DONE
