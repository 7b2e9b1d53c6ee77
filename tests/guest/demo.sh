#!/bin/sh
# The VM demo (make demo): ppcoal in observe, then on, over two virtio NICs.
. /tests/lib.sh
echo DEMO-BEGIN
echo "kernel: $(uname -r)"
insmod /ko/ppcoal.ko mode=observe || { echo "insmod ppcoal failed"; echo DEMO-END; exit 0; }
net_up || { echo "network setup failed"; echo DEMO-END; exit 0; }
printf '\n%-8s %6s %12s %14s %14s %12s\n' mode msglen "Mbit/s" "coalesce ok/calls" TCPRcvCoalesce napi_build_skb
for len in 256 1024; do
	for m in observe on; do
		echo $m >$P/mode
		snap /tmp/a
		c0=$(ns TCPRcvCoalesce)
		iperf 3 -l $len >/dev/null || echo "iperf3 failed"
		c1=$(ns TCPRcvCoalesce)
		snap /tmp/b
		bps=$(iperf_mbps)
		ok=$(sumd /tmp/a /tmp/b coalesce.copied coalesce.head_stolen coalesce.frags_moved)
		printf '%-8s %6s %12s %14s %14s %12s\n' $m $len "$bps" \
			"$ok/$(delta coalesce.calls /tmp/a /tmp/b)" $((c1 - c0)) \
			"$(delta virtio.napi_build_skb /tmp/a /tmp/b)"
	done
done
echo
echo "(one short run each inside an emulated guest: an illustration, not a benchmark)"
echo
echo "/sys/kernel/debug/ppcoal/stats:"
cat "$S"
echo DEMO-END
