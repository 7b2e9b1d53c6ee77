#!/bin/sh
# The VM demo (make demo): ppcoal, built by dkms, on Debian 12's stock kernel.
# The page-pool fixture with a packet tap (as NetworkManager's packet socket
# makes the kernel clone every received skb) and the virtio NIC pair carry
# traffic; scripts/ppcoal-ab switches ppcoal off (A) and on (B) briefly; a
# UDP flood dropped inside the NAPI poll shows direct recycling; then the
# counters. Short runs in an emulated guest: an illustration, not a benchmark
# (scripts/ppcoal-bench and README "Benchmarks" are).
. /tests/lib.sh
echo DEMO-BEGIN
echo "kernel: $(uname -r)"
echo 0 >/proc/sys/net/core/skb_defer_max
insmod /ko/ppcoal.ko || { echo "insmod ppcoal failed"; echo DEMO-END; exit 0; }
echo "ppcoal loaded, modes: coalesce=$(cat $P/coalesce) recycle=$(cat $P/recycle) virtio=$(cat $P/virtio)"
net_up >/dev/null 2>&1 || { echo "virtio network setup failed"; echo DEMO-END; exit 0; }
fixture_up frag_pool=0 linear=0 || { echo "fixture setup failed"; echo DEMO-END; exit 0; }
"$IP" netns exec peer pptap ppf1 >/dev/null 2>&1 &
tap=$!
sleep 0.3

echo
echo "== ppcoal-ab, TCP over the page-pool fixture with a packet tap on the receiver"
ppcoal-ab -s "$FPEER" -l "256 1024" -n 2 -t 2 -w 1 --stat-netns peer
echo
echo "== ppcoal-ab, TCP over the virtio NIC pair (virtio path only)"
ppcoal-ab -s "$PEER" -l "1024" -n 2 -t 2 -w 1 --paths virtio --stat-netns peer
kill $tap
wait $tap 2>/dev/null

echo
echo "== direct recycling: 64-byte UDP dropped inside the fixture's NAPI poll, 2 s each"
blackhole_up ppf0 ppf1 $BLACKHOLE
printf '%-8s %10s %12s %12s\n' recycle "rx pkt/s" direct ring
for m in observe on; do
	echo $m >$P/recycle
	drop_flood 1
	snap /tmp/a
	a=$(peer_rx ppf1)
	drop_flood 2
	b=$(peer_rx ppf1)
	snap /tmp/b
	printf '%-8s %10s %12s %12s\n' $m $(((b - a) / 2)) \
		"$(sumd /tmp/a /tmp/b recycle.direct recycle.upstream_direct)" \
		"$(delta recycle.ring /tmp/a /tmp/b)"
done
echo
echo "/sys/kernel/debug/ppcoal/stats:"
cat "$S"
echo DEMO-END
