#!/bin/sh
# The VM demo (make demo): ppcoal, built by dkms, on Debian 12's stock kernel.
# Each path in the case it exists for, its mode off (stock) and on, three
# interleaved runs each; every run is a window of the insncount QEMU plugin
# (the host prints guest instructions per packet from it: the measure an
# emulated guest can resolve) and of ppcoal's counters (what the path did).
# Throughput only through ppcoal-ab, with its paired test. Short runs:
# an illustration; scripts/ppcoal-bench and docs/benchmarks.md "Benchmarks" measure.
. /tests/lib.sh
echo DEMO-BEGIN
echo "kernel: $(uname -r)"
echo 0 >/proc/sys/net/core/skb_defer_max
insmod /ko/ppcoal.ko coalesce=off recycle=off virtio=off ||
	{ echo "insmod ppcoal failed"; echo DEMO-END; exit 0; }
net_up >/dev/null 2>&1 || { echo "virtio network setup failed"; echo DEMO-END; exit 0; }
fixture_up frag_pool=0 linear=0 || { echo "fixture setup failed"; echo DEMO-END; exit 0; }
# The fixture is a test driver: a packaged ppcoal (dkms) does not list it
# among the audited drivers. The demo adds it, an expert's knob that
# taints the kernel (this VM's), so that recycle acts on the fixture's pool.
case "$(val recycle.audited_drivers)" in
*ppcoal_fixture:*) ;;
*) echo ppcoal_fixture >$P/recycle_drivers &&
	echo "recycle: the test fixture is added to the audited drivers for the demo (recycle_drivers=ppcoal_fixture, which taints this VM's kernel)" ;;
esac
blackhole_up ppf0 ppf1 $BLACKHOLE
# pm N D: N per mille of D, "-" when D is 0 (ppcoal unhooked: off)
pm() { if [ "$2" -gt 0 ]; then permille "$1" "$2"; else echo -; fi; }

# win CASE MODE REP UNITS WORK...: one window, WORK between two marks
# (udpflood ... mark marks its own flood); UNITS prints the packet count
win() {
	w_case=$1 w_mode=$2 w_rep=$3 w_units=$4
	shift 4
	snap /tmp/a
	w_a=$($w_units)
	case $1 in udpflood) "$@" >/dev/null ;; *) insnmark; "$@" >/dev/null; insnmark ;; esac
	w_b=$($w_units)
	snap /tmp/b
	echo "PPCOAL-INSNWIN $w_case-$w_mode/$w_rep $((w_b - w_a))"
}
fx_rx() { peer_rx ppf1; }
# 256-byte messages the last iperf run received (0 before the window: the
# run's report is removed first). Not TCP segments: a segment carries 1 to
# 13 KB of them from one run to the next, which moves work per segment
# tenfold (README Benchmarks, coalesce path).
rx_msgs256() { w_bytes=$(iperf_bytes); echo $((${w_bytes#* } / 256)); }

echo
echo "== per run: what each path did (counters), off = stock, on = ppcoal;"
echo "   packets: coalesce: 256-byte TCP messages received; virtio: frames the receiving NIC took; recycle: UDP packets received;"
echo "   in off ppcoal is unhooked and counts nothing"
printf '%-10s %-4s %3s %10s  %s\n' case mode run packets "counters"
for r in 0 1 2; do
	order="off on"
	[ $((r % 2)) = 0 ] || order="on off"
	for m in $order; do
		# coalesce: TCP with 256-byte messages over the fixture, a packet
		# tap cloning every received skb (as NetworkManager's socket does)
		echo $m >$P/coalesce
		tap_start
		sleep 0.3
		rm -f /tmp/iperf.json
		win coalesce $m $r rx_msgs256 iperf 2 -l 256
		tap_stop
		printf '%-10s %-4s %3s %10s  %s\n' coalesce $m $r $((w_b - w_a)) \
			"coalesced per mille of calls: $(pm "$(sumd /tmp/a /tmp/b coalesce.copied coalesce.head_stolen coalesce.frags_moved)" "$(delta coalesce.calls /tmp/a /tmp/b)"), Mbit/s $(iperf_mbps)"
		echo off >$P/coalesce
		# recycle: 64-byte UDP dropped inside the fixture's NAPI poll
		echo $m >$P/recycle
		drop_flood 1
		win recycle $m $r fx_rx udpflood $BLACKHOLE 9 2 64 mark
		printf '%-10s %-4s %3s %10s  %s\n' recycle $m $r $((w_b - w_a)) \
			"direct per mille of page puts: $(pm "$(delta recycle.direct /tmp/a /tmp/b)" "$(sumd /tmp/a /tmp/b recycle.direct recycle.ring)")"
		echo off >$P/recycle
		# virtio: TCP over the virtio NIC pair (full-sized segments, the
		# skbs page_to_skb builds around the buffer)
		echo $m >$P/virtio
		TARGET=$PEER
		win virtio $m $r virtio_rx iperf 2
		TARGET=$FPEER
		printf '%-10s %-4s %3s %10s  %s\n' virtio $m $r $((w_b - w_a)) \
			"napi_build_skb per mille of receive build_skb calls: $(pm "$(delta virtio.napi_build_skb /tmp/a /tmp/b)" "$(delta virtio.rx_build_skb /tmp/a /tmp/b)"), Mbit/s $(iperf_mbps)"
		echo off >$P/virtio
	done
done

echo
echo "== ppcoal-ab: throughput and CPU per GB, TCP over the fixture with the tap, coalesce A = off, B = on"
echo "   (6 pairs of 1 s per size; a change is shown only when the paired test supports it at 95%)"
tap_start
sleep 0.3
ppcoal-ab -c "$FPEER" --paths coalesce -l "256 1024" --pairs 6 -t 1 -O 0 --stat-netns peer
tap_stop
echo
echo "/sys/kernel/debug/ppcoal/stats:"
cat "$S"
echo DEMO-END
