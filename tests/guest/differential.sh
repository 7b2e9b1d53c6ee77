# ppcoal guest tests: differentials (busybox sh).
# The paths against the stock functions, call by call (issue 14.1).
# Sourced by run-guest.sh after lib.sh: defines t_NAME for each test NAME
# of tests.tsv in this file (- as _) and runs none of them.

# observe = stock, on = stock but for what it documents (issue 14.1):
# ppcoal_differential runs the same seeded skb pairs (every shape that
# matters to skb_try_coalesce) through the stock function (coalesce=off),
# then through the shadow (observe), then coalesce=on, and compares all the
# caller can see, page references included. The pools end empty.
t_differential() {
	begin differential
	n=$(karg diffcases 100000)
	ppcoal_load coalesce=off recycle=off virtio=off || bad "insmod ppcoal"
	insmod /ko/ppcoal_differential.ko || bad "insmod ppcoal_differential"
	D=/sys/kernel/debug/ppcoal_differential
	diff_run() { diff_pass coalesce $D "$@"; }
	for seed in 1 7; do
		diff_run $seed off record
		case "$r" in *"inflight 0"*) ;; *) bad "seed $seed stock: pages left in flight: $r" ;; esac
		diff_run $seed observe compare
		case "$r" in *"mismatches 0 allowed 0 "*"inflight 0"*) ;; *) bad "seed $seed observe differs from stock: $r" ;; esac
		eq "$(delta coalesce.calls /tmp/a /tmp/b)" "$n" "seed $seed: every case ran through the shadow"
		diff_run $seed on compare-on
		echo "  (clone_policy $(cat $P/clone_policy))"
		case "$r" in *"mismatches 0 "*"inflight 0"*) ;; *) bad "seed $seed on differs beyond what it documents: $r" ;; esac
		allowed=$(echo "$r" | sed -n 's/.* allowed \([0-9]*\) .*/\1/p')
		if ! on_61; then
			# 6.12 already coalesces clones (upstream): on is stock
			eq "$allowed" 0 "seed $seed on (upstream): no difference at all"
		else
			eq "$allowed" "$(sumd /tmp/a /tmp/b coalesce.clone_copied coalesce.clone_moved)" \
				"seed $seed on: every difference is a counted clone coalesce"
		fi
		echo "METRIC $(uname -r) differential seed=$seed cases=$n on_allowed=$allowed"
	done
	rmmod ppcoal_differential || bad "rmmod ppcoal_differential"
	rmmod ppcoal || bad "rmmod ppcoal"
	end
	cleanup
}

# The recycle path's differential (issue 14.1): ppcoal_recycle_diff frees
# the same seeded page-pool skbs (pool kinds, 6.12 pools with and without
# .napi, process / bh / inside the pools' own NAPI poll, shared pages)
# through the stock free (recycle=off), the shadow (observe) and on, and
# compares where every page went (allocation cache, ring, released).
t_recycle_differential() {
	begin recycle-differential
	n=$(karg rdiffcases 100000)
	ppcoal_load coalesce=off recycle=off virtio=off || bad "insmod ppcoal"
	insmod /ko/ppcoal_recycle_diff.ko || bad "insmod ppcoal_recycle_diff"
	RD=/sys/kernel/debug/ppcoal_recycle_diff
	rdiff_run() { diff_pass recycle $RD "$@"; }
	for seed in 3 11; do
		rdiff_run $seed off record
		case "$r" in *"inflight 0 "*) ;; *) bad "seed $seed stock: pages left in flight: $r" ;; esac
		rdiff_run $seed observe compare
		case "$r" in *"mismatches 0 allowed 0 inflight 0 "*) ;; *) bad "seed $seed observe differs from stock: $r" ;; esac
		gt "$(delta recycle.calls /tmp/a /tmp/b)" $((n * 2)) "seed $seed: the cases' pages went through the shadow"
		if ! on_61; then
			gt "$(delta recycle.upstream_direct /tmp/a /tmp/b)" 0 "seed $seed: the kernel's own direct recycling (pool with .napi, in its poll) was compared"
		fi
		# not audited: on must be stock exactly
		rdiff_run $seed on compare-on
		case "$r" in *"mismatches 0 allowed 0 inflight 0 "*) ;; *) bad "seed $seed on (driver not audited) differs from stock: $r" ;; esac
		eq "$(delta recycle.direct /tmp/a /tmp/b)" 0 "seed $seed on, not audited: no direct put"
	done
	# audited by the administrator: on may differ only by direct puts in
	# the owner's poll, each counted
	echo observe >$P/recycle
	u0=$(($(cat /proc/sys/kernel/tainted) & 64))
	echo ppcoal_recycle_diff >$P/recycle_drivers || bad "recycle_drivers"
	# an expert's addition taints the kernel, as a dangerous parameter does
	# (the bit where no earlier test set it: the default boot's unverified has)
	if [ "$u0" = 0 ]; then
		[ $(($(cat /proc/sys/kernel/tainted) & 64)) = 64 ] || bad "recycle_drivers did not taint the kernel"
	fi
	dmesg_has "recycle_drivers: 1 driver(s) added to the audited list at the administrator's risk: ppcoal_recycle_diff - tainting kernel" ||
		bad "no taint line for recycle_drivers"
	rdiff_run 3 off record
	# compare-learned: the module first has ppcoal learn its plain pool
	# (ppcoal learns a while after it first meets a pool in a poll; a run
	# could end before), then runs the cases from the same empty pool
	rdiff_run 3 on compare-learned
	case "$r" in *"mismatches 0 "*"inflight 0 "*) ;; *) bad "seed 3 on (audited) differs beyond what it documents: $r" ;; esac
	primed=$(echo "$r" | sed -n 's/.* primed \(-*[0-9]*\).*/\1/p')
	ge "${primed:--1}" 0 "seed 3 on (audited): owner learned within 30 s of the first free in its poll (ms)"
	allowed=$(echo "$r" | sed -n 's/.* allowed \([0-9]*\) .*/\1/p')
	gt "$(delta recycle.direct /tmp/a /tmp/b)" 0 "seed 3 on (audited): direct puts made"
	echo "METRIC $(uname -r) recycle-differential cases=$n on_audited_allowed=$allowed learned_ms=$primed direct=$(delta recycle.direct /tmp/a /tmp/b) learned=$(delta recycle.owners_learned /tmp/a /tmp/b)"
	echo observe >$P/recycle
	echo "" >$P/recycle_drivers
	rmmod ppcoal_recycle_diff || bad "rmmod ppcoal_recycle_diff"
	rmmod ppcoal || bad "rmmod ppcoal"
	end
	cleanup
}

# virtio's branch counters against page_to_skb itself (issue 14.1):
# ppcoal counts page_to_skb's branches from the calls it makes;
# ppcoal_virtio_diff tells them from its input page and returned skb (a
# kretprobe). Over UDP floods of each size class and TCP, in observe and
# on, the two must agree exactly; each size class must take the branch the
# stock source gives it (mergeable buffers of 1536 bytes, 12-byte header:
# a frame of up to 128 bytes is copied whole, 129 to about 1200 is built in
# place, above that it is copied with the rest left in a frag). With
# mrg_rxbuf=off (and no big packets over QEMU's hub) page_to_skb is not
# on the receive path at all: both must count no call.
t_virtio_differential() {
	begin virtio-differential
	VD=/sys/kernel/debug/ppcoal_virtio_diff
	ppcoal_load coalesce=off recycle=off virtio=observe || bad "insmod ppcoal"
	insmod /ko/ppcoal_virtio_diff.ko || bad "insmod ppcoal_virtio_diff"
	# vd_snap FILE: the stats, taken between two equal reads of the
	# oracle (no page_to_skb call completed meanwhile), and the oracle
	vd_snap() {
		local i o
		i=0
		while [ $i -lt 10 ]; do
			o=$(cat $VD/counts)
			snap "$1"
			[ "$o" = "$(cat $VD/counts)" ] && break
			i=$((i + 1))
			sleep 0.2
		done
		echo "$o" >"$1.vd"
	}
	# the oracle's counts are "name value" lines, as the stats are
	vdd() { delta "$1" /tmp/a.vd /tmp/b.vd; }
	nomrg=0
	grep -q 'ppcoal.nomrg=1' /proc/cmdline && nomrg=1
	for m in observe on; do
		echo $m >$P/virtio || bad "virtio=$m"
		# payload: 18 (60-byte frame), 600 (642), 1472 (1514), then TCP
		for c in copy:18 build:600 frags:1472 tcp:0; do
			want_br=${c%%:*}
			sz=${c#*:}
			sleep 0.5
			vd_snap /tmp/a
			if [ "$want_br" = tcp ]; then
				iperf 2 >/dev/null || { bad "$m: iperf3 TCP failed"; net_diag; }
			else
				udpflood $PEER 9 2 "$sz" >/dev/null || { bad "$m: udpflood $sz failed"; net_diag; }
			fi
			sleep 0.5
			vd_snap /tmp/b
			calls=$(vdd calls)
			build=$(vdd build)
			copy=$(vdd copy)
			frags=$(vdd frags)
			echo "  $m $c: page_to_skb $calls calls: build $build copy $copy (frags $frags) null $(vdd null); ppcoal build $(delta virtio.page_to_skb_build /tmp/a /tmp/b) copy $(delta virtio.page_to_skb_copy /tmp/a /tmp/b) frags $(delta virtio.page_to_skb_frags /tmp/a /tmp/b)"
			eq "$(val missed /tmp/b.vd)" 0 "$m $c: kretprobe missed returns"
			eq "$(vdd null)" 0 "$m $c: page_to_skb returned NULL"
			eq "$(delta virtio.page_to_skb_calls /tmp/a /tmp/b)" "$calls" "$m $c: ppcoal's page_to_skb calls"
			eq "$(delta virtio.page_to_skb_build /tmp/a /tmp/b)" "$build" "$m $c: ppcoal's build branch"
			if [ $m = observe ]; then
				eq "$(delta virtio.page_to_skb_copy /tmp/a /tmp/b)" "$copy" "$m $c: ppcoal's copy branch"
				eq "$(delta virtio.page_to_skb_frags /tmp/a /tmp/b)" "$frags" "$m $c: ppcoal's copy-with-frags branch"
			else
				# on: the two counting hooks are not attached (OBSERVE arm)
				eq "$(delta virtio.page_to_skb_copy /tmp/a /tmp/b)" 0 "$m $c: copy branch counted in on"
				eq "$(delta virtio.page_to_skb_frags /tmp/a /tmp/b)" 0 "$m $c: frags counted in on"
			fi
			if [ $nomrg = 1 ]; then
				eq "$calls" 0 "$m $c: page_to_skb called without mergeable buffers"
				gt "$(delta virtio.rx_build_skb /tmp/a /tmp/b)" 100 "$m $c: receive_small's builds"
				continue
			fi
			gt "$calls" 100 "$m $c: page_to_skb calls"
			case $want_br in
			copy) n=$((copy - frags)) ;;
			build) n=$build ;;
			frags) n=$frags ;;
			*) n=$calls ;;
			esac
			[ $((n * 10)) -ge $((calls * 8)) ] ||
				bad "$m $c: $n of $calls calls took the $want_br branch (want at least 80%)"
			[ $m = on ] && [ "$build" -gt 0 ] &&
				gt "$(delta virtio.napi_build_skb /tmp/a /tmp/b)" 0 "$m $c: substituted"
		done
	done
	rmmod ppcoal_virtio_diff || bad "rmmod ppcoal_virtio_diff"
	rmmod ppcoal || bad "rmmod ppcoal"
	end
	cleanup
}
