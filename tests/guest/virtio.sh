# ppcoal guest tests: virtio (busybox sh).
# The paths over the virtio pair: observe, virtio=on, reloading virtio_net.
# Sourced by run-guest.sh after lib.sh: defines t_NAME for each test NAME
# of tests.tsv in this file (- as _) and runs none of them.

t_observe_tcp() {
	begin observe-tcp
	ppcoal_load mode=observe || bad "insmod"
	for l in 256 0; do
		opt=""
		[ "$l" = 0 ] || opt="-l $l"
		snap /tmp/a
		# a coalesce succeeds only when the receiver lags: a run in
		# which TCP kept up may coalesce nothing (CI, deb12bpo, stop
		# 20), so up to three runs, each counted from /tmp/a
		for try in 1 2 3; do
			# shellcheck disable=SC2086
			r=$(iperf 2 $opt) || bad "iperf3 TCP $opt failed"
			snap /tmp/b
			# shellcheck disable=SC2086
			set -- $r
			succ=$(sumd /tmp/a /tmp/b coalesce.copied coalesce.head_stolen coalesce.frags_moved)
			echo "  tcp len=$l run $try: sent $1 received $2, coalesce calls $(delta coalesce.calls /tmp/a /tmp/b), successes $succ"
			gt "${2:-0}" 0 "iperf3 bytes received"
			[ "$succ" -gt 0 ] && break
		done
		gt "$(delta coalesce.calls /tmp/a /tmp/b)" 0 "coalesce.calls moved"
		gt "$succ" 0 "coalesce successes moved in $try runs"
		# (that observe decides as stock does is the differential
		# test's to prove: TCP's own counters move with the shadow's
		# answers, so comparing them proves nothing)
		# mrg_rxbuf=off: receive_small never calls page_to_skb
		grep -q 'ppcoal.nomrg=1' /proc/cmdline ||
			gt "$(delta virtio.page_to_skb_calls /tmp/a /tmp/b)" 0 "page_to_skb counted"
		gt "$(delta virtio.rx_build_skb /tmp/a /tmp/b)" 0 "receive-path build_skb counted"
		eq "$(delta virtio.napi_build_skb /tmp/a /tmp/b)" 0 "observe never substitutes"
		check_sums /tmp/a /tmp/b
	done
	xfer 16 || bad "data not intact"
	end
	cleanup
}

t_observe_udp() {
	begin observe-udp
	ppcoal_load mode=observe || bad "insmod"
	snap /tmp/a
	iperf 2 -u -b 20M -l 1200 >/dev/null || bad "iperf3 UDP failed"
	snap /tmp/b
	gt "$(delta virtio.page_to_skb_calls /tmp/a /tmp/b)" 100 "page_to_skb counted"
	check_sums /tmp/a /tmp/b
	end
	cleanup
}

# kev_add NAME PROBE: a kprobe event of tracefs (PROBE as kprobe_events
# takes it), enabled; kev_hits NAME: its hits so far (kprobe_profile);
# kev_misses NAME: the hits a kretprobe found no instance for (it left
# that call's return address alone); kev_del NAME: gone again
TR=/sys/kernel/tracing
kev_add() { echo "$2" >>$TR/kprobe_events && echo 1 >$TR/events/kprobes/$1/enable; }
kev_hits() { awk -v n="$1" '$1 == n { h = $2 } END { print h == "" ? "MISSING" : h }' $TR/kprobe_profile; }
kev_misses() { awk -v n="$1" '$1 == n { m = $3 } END { print m == "" ? "MISSING" : m }' $TR/kprobe_profile; }
kev_del() {
	echo 0 >$TR/events/kprobes/$1/enable
	echo "-:$1" >>$TR/kprobe_events
}

# virtio=on substitutes: every receive-path build_skb call is counted as
# substituted or declined, and each substitution enters napi_build_skb
# (a kprobe counts its entries; nothing else in the guest calls it, 6.1
# and 6.12 drivers/net/virtio_net.c and veth.c: a hook that counted a
# substitution without making it fails). Then beside a kprobe on
# build_skb's entry: the same. Then beside a kretprobe on
# build_skb, which shares its patched call site and replaces its return
# address with the kprobe core's return trampoline before ppcoal's hook
# runs (6.1 arch/x86/kernel/rethook.c:119-125): an ftrace callback gets
# build_skb's caller from ftrace and goes on substituting; a direct call's
# trampoline finds only the kprobe's return trampoline where the caller
# was, so it takes every call for another driver's and substitutes none,
# as stock would (docs/benchmarks.md "Direct calls").
t_virtio_on() {
	begin virtio-on
	ppcoal_load mode=observe virtio=on || bad "insmod"
	kev_add ppc_nbs "p:ppc_nbs napi_build_skb" || bad "kprobe on napi_build_skb"
	n0=$(kev_hits ppc_nbs)
	snap /tmp/a
	r=$(iperf 2) || bad "iperf3 TCP failed"
	iperf 1 -u -b 10M -l 1200 >/dev/null || bad "iperf3 UDP failed"
	xfer 16 || bad "data not intact"
	snap /tmp/b
	n1=$(kev_hits ppc_nbs)
	rx=$(delta virtio.rx_build_skb /tmp/a /tmp/b)
	gt "$rx" 0 "receive-path build_skb calls"
	eq "$(sumd /tmp/a /tmp/b virtio.napi_build_skb virtio.declined_not_softirq)" "$rx" \
		"napi_build_skb + declined = rx_build_skb"
	gt "$(delta virtio.napi_build_skb /tmp/a /tmp/b)" 0 "substitutions made"
	ge "$((n1 - n0))" "$(delta virtio.napi_build_skb /tmp/a /tmp/b)" "napi_build_skb entered on each substitution"
	if grep -q 'ppcoal.nomrg=1' /proc/cmdline; then
		# mrg_rxbuf=off: receive_small builds every skb (inlined in receive_buf)
		gt "$rx" "$(delta virtio.page_to_skb_build /tmp/a /tmp/b)" "receive_small path substituted"
	fi
	check_sums /tmp/a /tmp/b
	# beside a kprobe on build_skb's entry, which shares its call site
	# (a direct call is then reached through ftrace_regs_caller): the
	# substitution goes on; 600-byte datagrams are built in place
	kev_add ppc_bsp "p:ppc_bsp build_skb" || bad "kprobe on build_skb"
	n0=$(kev_hits ppc_nbs)
	build_window "kprobe"
	n1=$(kev_hits ppc_nbs)
	kev_del ppc_bsp
	subst=$(delta virtio.napi_build_skb /tmp/a /tmp/b)
	echo "  beside a kprobe on build_skb ($(val hook_calls)): rx_build_skb $(delta virtio.rx_build_skb /tmp/a /tmp/b) napi_build_skb $subst; napi_build_skb entries $((n1 - n0))"
	gt "$subst" 100 "kprobe: substitutions"
	ge "$((n1 - n0))" "$subst" "kprobe: napi_build_skb entered on each substitution"
	# beside a kretprobe on build_skb
	kev_add ppc_bsr "r:ppc_bsr build_skb" || bad "kretprobe on build_skb"
	r0=$(kev_hits ppc_bsr)
	n0=$(kev_hits ppc_nbs)
	build_window "kretprobe"
	r1=$(kev_hits ppc_bsr)
	n1=$(kev_hits ppc_nbs)
	miss=$(kev_misses ppc_bsr)
	kev_del ppc_bsr
	subst=$(delta virtio.napi_build_skb /tmp/a /tmp/b)
	rx=$(delta virtio.rx_build_skb /tmp/a /tmp/b)
	echo "  beside a kretprobe on build_skb ($(val hook_calls)): rx_build_skb $rx napi_build_skb $subst other_build_skb $(delta virtio.other_build_skb /tmp/a /tmp/b); kretprobe hits $((r1 - r0)) (missed $miss), napi_build_skb entries $((n1 - n0))"
	gt "$((r1 - r0))" 100 "kretprobe: build_skb calls seen"
	if [ "$(val hook_calls)" = direct ]; then
		# a call the kretprobe missed keeps its return address
		le "$rx" "$miss" "kretprobe, direct call: receive-path build_skb calls recognised"
		le "$((n1 - n0))" "$miss" "kretprobe, direct call: napi_build_skb entries"
		gt "$(delta virtio.other_build_skb /tmp/a /tmp/b)" 100 "kretprobe, direct call: calls counted as another driver's"
	else
		gt "$subst" 100 "kretprobe, callback: substitutions"
		ge "$((n1 - n0))" "$subst" "kretprobe, callback: napi_build_skb entered on each substitution"
	fi
	xfer 16 || bad "data not intact beside the kretprobe"
	kev_del ppc_nbs
	end
	cleanup
}

t_virtio_reload() {
	begin virtio-reload
	# ppcoal first, then virtio_net goes and comes back (ten times, under
	# traffic), with virtio on and observe in turn
	ppcoal_load mode=observe virtio=on || bad "insmod"
	rxf_hooked on
	n=0
	while [ $n -lt 10 ]; do
		vm=on
		[ $((n % 2)) = 0 ] || vm=observe
		echo $vm >$P/virtio || bad "virtio=$vm"
		traffic_start
		sleep 1
		echo "  reload #$n: rmmod virtio_net at $(cut -d' ' -f1 /proc/uptime)"
		virtio_unload || bad "rmmod virtio_net"
		echo "  reload #$n: stopping traffic at $(cut -d' ' -f1 /proc/uptime)"
		traffic_stop
		echo "  reload #$n: traffic stopped at $(cut -d' ' -f1 /proc/uptime)"
		eq "$(val virtio.state)" "waiting for virtio_net" "state while virtio_net is gone"
		hooked build_skb && bad "build_skb hooked without virtio_net"
		rxf_hooked "$vm, virtio_net gone"
		eq "$(val coalesce.state)" attached "coalesce unaffected"
		virtio_load || bad "insmod virtio_net"
		eq "$(val virtio.state)" attached "reattached when virtio_net came back"
		rxf_hooked $vm
		net_up || bad "network after reload"
		echo "  reload #$n: network up at $(cut -d' ' -f1 /proc/uptime)"
		snap /tmp/a
		r=$(iperf 1) || bad "traffic after reload"
		echo "  reload #$n: traffic checked at $(cut -d' ' -f1 /proc/uptime)"
		snap /tmp/b
		[ $vm = observe ] ||
			gt "$(delta virtio.napi_build_skb /tmp/a /tmp/b)" 0 "substitutions after reload #$n"
		# observe: build + copy = calls, with copies (ACKs) among them
		[ $vm = on ] || gt "$(delta virtio.page_to_skb_copy /tmp/a /tmp/b)" 0 "copies counted after reload #$n"
		check_sums /tmp/a /tmp/b
		n=$((n + 1))
	done
	# the other order: virtio_net loads after ppcoal with ppcoal freshly loaded
	rmmod ppcoal || bad "rmmod ppcoal"
	virtio_unload || bad "rmmod virtio_net"
	ppcoal_load mode=observe || bad "insmod without virtio_net"
	eq "$(val virtio.state)" "waiting for virtio_net" "waiting at load"
	rxf_hooked "observe, waiting"
	virtio_load || bad "insmod virtio_net"
	eq "$(val virtio.state)" attached "attached after virtio_net load"
	rxf_hooked observe
	net_up || bad "network"
	snap /tmp/a
	r=$(iperf 1) || bad "traffic"
	snap /tmp/b
	gt "$(delta virtio.page_to_skb_calls /tmp/a /tmp/b)" 0 "page_to_skb counted"
	gt "$(delta virtio.page_to_skb_copy /tmp/a /tmp/b)" 0 "copies counted"
	check_sums /tmp/a /tmp/b
	end
	cleanup
}
