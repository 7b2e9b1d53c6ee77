#!/bin/sh
# coalesce path benchmark (not a test): fixture pair (frag-only skbs, one
# buffer per page, as Debian 6.1 amd64 drivers), a packet tap cloning every
# received skb, TCP at several message sizes; coalesce off / observe / on in
# rotating order, plus observe without the tap (the ceiling).
# Prints "BENCH kind mode rep value": tcp_mbps_LEN, okpm_LEN (coalesce
# successes per mille of calls), rcvpm_LEN (TCPRcvCoalesce per mille InSegs),
# segs_LEN (TCP segments received, data and ACKs, both ends), bpseg_LEN
# (payload bytes over those segments), and around each run the marks of the
# insncount QEMU plugin ("PPCOAL-INSNWIN tcpLEN-mode/rep messages":
# instructions per LEN-byte message received, both ends' work included:
# scripts/ppcoal-bench). Not per segment: a segment held 1 to 13 KB of
# payload from one run to the next in one mode (TCP's batching of the
# messages), which moved instructions per segment tenfold.
# Mode "on" is clone_policy=detach on 6.1 (upstream on 6.12), mode "refuse"
# is on with clone_policy=refuse (6.1, the default there; 6.12: "legacy",
# the pre-6.8 refusal): the pair is what the default policy is chosen from.
. /tests/lib.sh
bench_init 3
sizes=$(sed -n 's/.*ppcoal\.sizes=\([0-9,]*\).*/\1/p' /proc/cmdline | tr , ' ')
sizes=${sizes:-128 256 512 1024 2048 4096}
secs=3
echo 0 >/proc/sys/net/core/skb_defer_max
net_up >/dev/null 2>&1
# ppcoal.gro=0 (PPCOAL_BENCH_GRO=0): no GRO batching in the fixture's poll
gro=$(sed -n 's/.*ppcoal\.gro=\([01]\).*/\1/p' /proc/cmdline)
fixture_up frag_pool=0 linear=0 gro="${gro:-1}" || { echo "BENCH-ERROR fixture"; exit 0; }
echo "BENCH-INFO fixture gro=$(cat /sys/module/ppcoal_fixture/parameters/gro)"
# 6.1: on = detach, refuse = refuse; 6.12: on = upstream, refuse = legacy
if on_61; then default=detach refuse=refuse; else default=upstream refuse=legacy; fi
echo $default >$P/clone_policy
stallers="PruneCalled TCPRcvCollapsed RcvPruned TCPRcvQDrop TCPBacklogDrop TCPLostRetransmit TCPTimeouts TCPSlowStartRetrans TCPFastRetrans"
one() { # one MODE LEN REP TAP
	if [ "$4" = 1 ]; then
		tap_start
		sleep 0.2
	fi
	snap /tmp/a
	s0=$(tcp_insegs)
	c0=$(ns TCPRcvCoalesce)
	for x in $stallers; do eval "x0_$x=\$(ns $x)"; done
	insnmark
	# "SENT RECEIVED" bytes
	b=$(iperf $secs -l "$2") || { echo "BENCH-ERROR iperf3"; b="0 0"; }
	insnmark
	c1=$(ns TCPRcvCoalesce)
	s1=$(tcp_insegs)
	# what can stall a receiver: receive-queue pruning and collapsing,
	# drops for memory, retransmissions (per mille of segments received)
	for x in $stallers; do
		eval "x1=\$(ns $x); x0=\$x0_$x"
		echo "BENCH ${x}pm_$2 $1 $3 $(permille $((x1 - x0)) $((s1 - s0)))"
	done
	b=${b#* }
	echo "PPCOAL-INSNWIN tcp$2-$1/$3 $((b / $2))"
	echo "BENCH segs_$2 $1 $3 $((s1 - s0))"
	[ $((s1 - s0)) -gt 0 ] && echo "BENCH bpseg_$2 $1 $3 $((b / (s1 - s0)))"
	snap /tmp/b
	[ "$4" = 1 ] && tap_stop
	mbps=$(iperf_mbps)
	calls=$(delta coalesce.calls /tmp/a /tmp/b)
	ok=$(sumd /tmp/a /tmp/b coalesce.copied coalesce.head_stolen coalesce.frags_moved)
	echo "BENCH tcp_mbps_$2 $1 $3 $mbps"
	[ "$1" = off ] || echo "BENCH okpm_$2 $1 $3 $(permille "$ok" "$calls")"
	echo "BENCH rcvpm_$2 $1 $3 $(permille $((c1 - c0)) $((s1 - s0)))"
}
for len in $sizes; do
	r=0
	while [ $r -lt "$reps" ]; do
		for m in $(mode_order $r) refuse; do
			if [ $m = refuse ]; then
				echo $refuse >$P/clone_policy
				echo on >$P/coalesce
			else
				echo $default >$P/clone_policy
				echo $m >$P/coalesce
			fi
			one $m "$len" $r 1
		done
		echo $default >$P/clone_policy
		echo observe >$P/coalesce
		one notap "$len" $r 0
		r=$((r + 1))
	done
done
echo BENCH-DONE
