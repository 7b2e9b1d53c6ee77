#!/bin/sh
# virtio path benchmark (not a test): off / observe / on interleaved, with the
# other paths off, over the two hub-joined virtio NICs.
#   UDP: udpflood of 18-byte datagrams to a port nobody listens on (the 2021
#        page_to_skb measurement); rx packets/s counted at the receiving NIC.
#   TCP: iperf3, default message size, Mbit/s at the receiver.
# Prints "BENCH kind mode rep value" lines and a summary with medians, and
# around each measured run the marks of the insncount QEMU plugin
# ("PPCOAL-INSNWIN kind-mode/rep packets": instructions per packet received
# by the second NIC, both ends' work included: scripts/ppcoal-bench).
. /tests/lib.sh
bench_init 5
secs=3
echo 0 >/proc/sys/net/core/skb_defer_max
net_up || { echo "BENCH-ERROR net"; exit 0; }
r=0
while [ $r -lt "$reps" ]; do
	for m in $(mode_order $r); do
		echo $m >$P/virtio
		a=$(virtio_rx)
		udpflood $PEER 9 $secs 18 mark >/dev/null
		sleep 0.2
		b=$(virtio_rx)
		echo "BENCH udp_pps $m $r $(((b - a) / secs))"
		echo "PPCOAL-INSNWIN udp-$m/$r $((b - a))"
		a=$(virtio_rx)
		insnmark
		iperf $secs >/dev/null || echo "BENCH-ERROR iperf3"
		insnmark
		b=$(virtio_rx)
		mbps=$(iperf_mbps)
		echo "BENCH tcp_mbps $m $r $mbps"
		echo "PPCOAL-INSNWIN tcp-$m/$r $((b - a))"
	done
	r=$((r + 1))
done
echo off >$P/virtio
echo BENCH-DONE
