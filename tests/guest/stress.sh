# ppcoal guest tests: stress (busybox sh).
# The in-kernel selftest, the soak, fault injection, draining.
# Sourced by run-guest.sh after lib.sh: defines t_NAME for each test NAME
# of tests.tsv in this file (- as _) and runs none of them.

# In-kernel page ownership checks (tests/modules/ppcoal_selftest.c): clone,
# coalesce through the hooked skb_try_coalesce, free in every order and
# racing on two CPUs; zero pages outside the pool after each round.
# selftest_run PPCOAL_ARGS EXPECT
selftest_run() {
	ppcoal_load $1 || { bad "insmod ppcoal $1"; return; }
	hook_calls_ok "$1"
	n0=$(dmesg | grep -c 'selftest done')
	insmod /ko/ppcoal_selftest.ko expect_coalesce=$2 || bad "insmod selftest ($1)"
	dmesg | grep 'ppcoal_selftest: \(ok\|not ok\|1\.\.\)' | tail -n 30 | sed 's/^\[[^]]*\] /  /' >/tmp/st.out
	grep 'not ok' /tmp/st.out
	res=$(dmesg | grep 'selftest done' | tail -n 1)
	[ "$(dmesg | grep -c 'selftest done')" -gt "$n0" ] || bad "$1: selftest did not finish"
	case "$res" in
	*" 0 failed") echo "  $1: ${res#*done: }" ;;
	*) bad "$1: ${res#*done: }" ;;
	esac
	rmmod ppcoal_selftest
	rmmod ppcoal
}

t_selftest() {
	begin selftest
	fam=6.12
	ppcoal_load && { ! on_61 || fam=6.1; } && rmmod ppcoal
	if [ $fam = 6.1 ]; then
		selftest_run "coalesce=on clone_policy=detach" 1
		selftest_run "coalesce=on clone_policy=legacy" 0
		selftest_run "coalesce=observe" 0
	else
		selftest_run "coalesce=on clone_policy=upstream" 1
		selftest_run "coalesce=on clone_policy=legacy" 0
		selftest_run "coalesce=observe" 1
	fi
	end
	cleanup
}

# Soak: mixed TCP/UDP over the fixture with the tap cloning, coalesce mode
# and clone policy flipping every second; half the time per pool kind.
# Length: ppcoal.soak=SECONDS (default 120). No WARN (host scan), pools drain.
t_soak() {
	begin soak
	soak=$(karg soak 120)
	# the coalesce modes flipped (a flip to or from "off" patches text)
	modes="on observe off"
	ppcoal_load mode=on || bad "insmod ppcoal"
	hook_calls_ok
	if on_61; then
		policies="detach refuse legacy"
	else
		policies="upstream legacy"
	fi
	snap /tmp/soak0
	for fp in 0 1; do
		fixture_up frag_pool=$fp linear=0 || bad "fixture_up frag_pool=$fp"
		tap_start
		ps | grep -q "[i]perf3 -s -D -B $FPEER -p 5202" ||
			"$IP" netns exec peer iperf3 -s -D -B $FPEER -p 5202 >/dev/null 2>&1
		traffic_start -l 256
		(while [ ! -e /tmp/stop-traffic ]; do
			timeout 10 iperf3 -c $FPEER -u -b 5M -l 512 -t 2 -p 5202 >/dev/null 2>&1
		done) &
		udp=$!
		t=0
		while [ $t -lt $((soak / 2)) ]; do
			m=$(pick "$modes" $t)
			pol=$(pick "$policies" $t)
			echo $m >$P/coalesce || bad "coalesce=$m"
			echo $pol >$P/clone_policy || bad "clone_policy=$pol"
			sleep 1
			t=$((t + 1))
		done
		traffic_stop
		wait $udp
		tap_stop
		fixture_down || bad "frag_pool=$fp: pools did not drain after the soak"
	done
	snap /tmp/soak1
	echo "  soak ${soak}s: coalesce calls $(delta coalesce.calls /tmp/soak0 /tmp/soak1), clones coalesced $(sumd /tmp/soak0 /tmp/soak1 coalesce.clone_moved coalesce.clone_copied coalesce.pp_frag_refs), detached $(delta coalesce.clone_detached /tmp/soak0 /tmp/soak1)"
	gt "$(delta coalesce.pp_cloned_from /tmp/soak0 /tmp/soak1)" 0 "the soak saw cloned page-pool skbs"
	check_sums /tmp/soak0 /tmp/soak1
	end
	cleanup
}

# Fault injection (issue 13.6, debug kernels): atomic allocations fail at
# random while the soak's traffic runs: page allocations (the pools' pages,
# fail_page_alloc) and skb heads (the fixture's and GRO's skbs, the tap's
# clones: failslab on skbuff_head_cache). GFP_KERNEL allocations are left
# alone (ignore-gfp-wait), so setup and teardown do not fail. Per pool kind:
# the coalesce mode flips every second and the recycle mode every 5 s, then
# with traffic stopped the counters must add up; ppcoal is unloaded and
# loaded again under traffic with faults on; then every pool must drain.
# Length: ppcoal.faultsoak=SECONDS (default 30).
FI=/sys/kernel/debug
fault_set() { # fault_set on|off
	local f
	for f in failslab fail_page_alloc; do
		if [ "$1" = on ]; then
			echo 0 >$FI/$f/verbose
			echo Y >$FI/$f/ignore-gfp-wait
			echo 2 >$FI/$f/probability
			echo 1 >$FI/$f/interval
			echo 1000000 >$FI/$f/times
		else
			echo 0 >$FI/$f/probability
		fi
	done
	if [ "$1" = on ]; then
		echo 0 >$FI/fail_page_alloc/min-order
		echo Y >$FI/failslab/cache-filter
	fi
}
fault_count() { echo $((1000000 - $(cat $FI/$1/times))); }
t_fault_soak() {
	begin fault-soak
	soak=$(karg faultsoak 30)
	if [ ! -d $FI/failslab ] || [ ! -d $FI/fail_page_alloc ]; then
		bad "no failslab / fail_page_alloc in $(uname -r): fault injection needs the debug kernels"
	elif [ "$(cat /sys/kernel/slab/skbuff_head_cache/failslab)" != 1 ]; then
		# read-only in sysfs on 6.1: only the boot command line marks a cache
		bad "skbuff_head_cache not marked for failslab: boot with slub_debug=A,skbuff_head_cache"
	else
		for fp in 0 1; do
			ppcoal_load mode=on || bad "insmod ppcoal"
			snap /tmp/f0
			fixture_up frag_pool=$fp linear=0 || bad "fixture_up frag_pool=$fp"
			tap_start
			fault_set on || bad "fault injection could not be set up"
			traffic_start -l 256
			t=0
			while [ $t -lt $((soak / 2)) ]; do
				m=$(pick "on observe off" $t)
				# recycle: on for 5 s (owners are learned in a
				# 2 s window), then observe or off for 5 s
				r=$(pick "on observe on off" $((t / 5)))
				echo $m >$P/coalesce || bad "coalesce=$m"
				echo $r >$P/recycle || bad "recycle=$r"
				sleep 1
				t=$((t + 1))
			done
			traffic_stop
			# recycle was not on throughout: its per-mode sum
			# (every ring put denied) does not apply
			echo observe >$P/recycle || bad "recycle=observe"
			snap /tmp/f1
			check_sums /tmp/f0 /tmp/f1
			gt "$(fault_count failslab)" 0 "frag_pool=$fp: skb head allocations failed"
			gt "$(fault_count fail_page_alloc)" 0 "frag_pool=$fp: page allocations failed"
			echo "  frag_pool=$fp: injected $(fault_count failslab) skb head and $(fault_count fail_page_alloc) page allocation failures; coalesce calls $(delta coalesce.calls /tmp/f0 /tmp/f1), recycle calls $(delta recycle.calls /tmp/f0 /tmp/f1), direct $(delta recycle.direct /tmp/f0 /tmp/f1)"
			# reload under traffic, faults still on
			traffic_start -l 256
			sleep 2
			rmmod ppcoal || bad "frag_pool=$fp: rmmod ppcoal under traffic with faults"
			ppcoal_load mode=on || bad "frag_pool=$fp: insmod ppcoal under traffic with faults"
			sleep 2
			rmmod ppcoal || bad "frag_pool=$fp: second rmmod ppcoal"
			traffic_stop
			fault_set off
			tap_stop
			fixture_down || bad "frag_pool=$fp: pools did not drain after the fault soak"
		done
	fi
	end
	cleanup
}

# Nothing is lost: a client killed mid-stream, and rmmod of the fixture
# while traffic runs; the pools come back to zero pages in flight.
t_fixture_drain() {
	begin fixture-drain
	ppcoal_load mode=observe || bad "insmod ppcoal"
	fixture_up frag_pool=1 linear=0 || bad "fixture_up"
	iperf3 -c $FPEER -t 30 -l 256 >/dev/null 2>&1 &
	k=$!
	sleep 3
	kill -9 $k
	wait $k 2>/dev/null
	i=0
	while [ "$(fixture_inflight)" != 0 ] && [ $i -lt 100 ]; do
		sleep 0.2
		i=$((i + 1))
	done
	eq "$(fixture_inflight)" 0 "pages in flight after a killed client"
	cat /sys/kernel/debug/ppcoal_fixture/pools
	traffic_start -l 512
	sleep 2
	# rmmod waits for the drain; closing the sockets lets the pages come home
	(rmmod ppcoal_fixture; echo $? >/tmp/rmmod.rc) &
	rm_pid=$!
	sleep 0.5
	traffic_stop
	killall -9 iperf3 2>/dev/null
	wait $rm_pid
	eq "$(cat /tmp/rmmod.rc)" 0 "rmmod of the fixture under traffic"
	tail -n 2 /tmp/teardown 2>/dev/null
	! dmesg | grep -q 'pool LEAK' || bad "$(dmesg | grep 'pool LEAK' | tail -n 1)"
	dmesg | tail -n 5 | grep -q 'pool drained' || bad "no drain report"
	"$IP" netns exec peer iperf3 -s -D -B $PEER >/dev/null 2>&1 || bad "virtio iperf3 server back"
	end
	cleanup
}
