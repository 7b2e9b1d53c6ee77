#!/bin/sh
# Per-operation microbenchmarks (not a test), for guests where iperf3
# cannot resolve gains of this size: tests/modules/ppcoal_microbench.c
# times each operation in a loop of N on one CPU and reports ns per op.
#   call_*: a call of a hooked function, under ppcoal's off / observe / on
#           (rotating order); the differences are the hook's cost per call.
#   pairs:  the stock and the optimised operation, no ppcoal hook on the
#           way (all paths off), in alternating order per repetition.
# Prints "BENCH kind mode rep value" lines, value in ns per operation (and
# per run an instruction window for the insncount plugin, see one()):
#   call_coalesce_ns  off|observe|on     skb_try_coalesce, refused at once
#   call_recycle_ns   off|observe|on     page_pool_return_skb_page / napi_pp_put_page
#   call_build_skb_ns off|observe|on     build_skb outside virtio_net
#   call_rx_frag_ns   off|observe|on     napi_alloc_skb + skb_add_rx_frag outside virtio_net
#   recycle_ns        ring|direct        page-pool free + allocation
#   build_ns          build_skb|napi_build_skb
#   coalesce_ns       refused|ok         queue vs coalesce a page-pool skb
#   poll_empty_ns     off|observe|on     a NAPI poll (softirq round trip) doing nothing
#   poll_recycle_ns   off|observe|on     a NAPI poll taking and freeing one pool page
# then BENCH-ERROR lines if anything went wrong, and BENCH-DONE.
. /tests/lib.sh
bench_init 5
n=100000
# ppcoal.only=KIND,KIND (PPCOAL_BENCH_ONLY): run only these kinds
only=$(sed -n 's/.*ppcoal\.only=\([a-z_,]*\).*/\1/p' /proc/cmdline)
want() { [ -z "$only" ] || case ",$only," in *",$1,"*) ;; *) return 1 ;; esac; }
D=/sys/kernel/debug/ppcoal_microbench/run
insmod /ko/ppcoal_microbench.ko || { echo "BENCH-ERROR insmod ppcoal_microbench"; echo BENCH-DONE; exit 0; }
# its dummy NAPI is a test driver, not on the audited list: added here
echo ppcoal_microbench >/sys/module/ppcoal/parameters/recycle_drivers ||
	{ echo "BENCH-ERROR recycle_drivers"; echo BENCH-DONE; exit 0; }

# mb OP [N [mark]]: run OP N times; prints its ns per operation and keeps
# the iterations it executed in /tmp/mb.ran. With mark the module runs the
# insncount plugin's marker around the run (tests/modules/ppcoal_microbench.c)
mb() {
	echo "$1 ${2:-$n}${3:+ $3}" >$D 2>/dev/null || return 1
	# shellcheck disable=SC2046 # "OP ns_per_op total_ns n ran"
	set -- $(cat $D)
	[ $# = 5 ] || return 1
	echo "$5" >/tmp/mb.ran
	echo "$2"
}
# one KIND MODE REP OP: one BENCH line, and the instruction window of the
# run ("PPCOAL-INSNWIN KIND-MODE/REP ITERATIONS", KIND without _ns: the
# guest instructions per operation, scripts/ppcoal-bench)
one() {
	if mb_v=$(mb "$4" "$n" mark); then
		echo "BENCH $1 $2 $3 $mb_v"
		echo "PPCOAL-INSNWIN ${1%_ns}-$2/$3 $(cat /tmp/mb.ran)"
	else
		echo "BENCH-ERROR $4 failed (rep $3, $1 $2)"
	fi
}
# pair KIND REP STOCK_MODE STOCK_OP OPT_MODE OPT_OP: stock first on even reps
pair() {
	if [ $(($2 % 2)) = 0 ]; then
		one "$1" "$3" "$2" "$4"
		one "$1" "$5" "$2" "$6"
	else
		one "$1" "$5" "$2" "$6"
		one "$1" "$3" "$2" "$4"
	fi
}
# call PATH OP COUNTER REP: OP under each mode of PATH; in observe and on
# the path's COUNTER must have seen every call ("-": OP meets hooks that
# count nothing for it)
call() {
	for call_m in $(mode_order "$4"); do
		echo "$call_m" >"$P/$1" || { echo "BENCH-ERROR cannot set $1=$call_m"; continue; }
		call_st=$(val "$1.state")
		if [ "$call_m" != off ] && [ "$call_st" != attached ]; then
			echo "BENCH-ERROR $1=$call_m: $1.state $call_st"
			continue
		fi
		snap /tmp/a
		one "${2}_ns" "$call_m" "$4" "$2"
		snap /tmp/b
		[ "$call_m" = off ] || [ "$3" = - ] && continue
		call_d=$(delta "$3" /tmp/a /tmp/b)
		[ "$call_d" -ge "$n" ] ||
			echo "BENCH-ERROR $2 under $1=$call_m: $3 moved by $call_d, not $n"
	done
	echo off >"$P/$1"
}
# poll OP REP: OP (a NAPI poll per iteration) under recycle off / observe /
# on. Per mode an untimed warm-up first: "on" learns the pool's owner in
# it (the learning work runs between the runs) and must then recycle every
# page of poll_recycle directly, with the allocation probe disarmed again.
poll() {
	for poll_m in $(mode_order "$2"); do
		echo "$poll_m" >"$P/recycle" || { echo "BENCH-ERROR cannot set recycle=$poll_m"; continue; }
		mb "$1" 2000 >/dev/null && sleep 0.3 && mb "$1" 2000 >/dev/null && sleep 0.3 ||
			echo "BENCH-ERROR warm-up $1 under recycle=$poll_m failed"
		snap /tmp/a
		one "${1}_ns" "$poll_m" "$2" "$1"
		snap /tmp/b
		[ "$poll_m" != on ] || [ "$(val recycle.learning /tmp/a)" = idle ] ||
			echo "BENCH-ERROR $1: the allocation probe was still armed"
		# the microbenchmark's NAPI is no audited driver's: with the poll
		# wrapper (issue 37) none of its polls is marked, and none of its
		# pages goes direct (with recycle_wrap=0 the tracker marks them all)
		poll_d=$(delta recycle.napi_polls /tmp/a /tmp/b)
		if [ "$poll_m" = on ] && [ "$poll_d" != 0 ]; then
			echo "BENCH-ERROR $1 under recycle=on: $poll_d of its $n polls marked"
		fi
	done
	echo off >"$P/recycle"
}

# Warm-up, untimed: caches, slabs and the pool's pages settle.
for op in call_coalesce call_recycle call_build_skb call_rx_frag recycle_ring recycle_direct \
	build_skb napi_build_skb coalesce_ok coalesce_refused poll_empty poll_recycle; do
	mb $op 10000 >/dev/null || echo "BENCH-ERROR warm-up $op failed"
done
r=0
while [ $r -lt "$reps" ]; do
	! want call_coalesce_ns || call coalesce call_coalesce coalesce.calls $r
	! want call_recycle_ns || call recycle call_recycle recycle.calls $r
	! want call_build_skb_ns || call virtio call_build_skb virtio.other_build_skb $r
	! want call_rx_frag_ns || call virtio call_rx_frag - $r
	! want recycle_ns || pair recycle_ns $r ring recycle_ring direct recycle_direct
	! want build_ns || pair build_ns $r build_skb build_skb napi_build_skb napi_build_skb
	! want coalesce_ns || pair coalesce_ns $r refused coalesce_refused ok coalesce_ok
	! want poll_empty_ns || poll poll_empty $r
	! want poll_recycle_ns || poll poll_recycle $r
	r=$((r + 1))
done
# Unloading checks the pool once more (pool LEAK in dmesg if a page is out).
rmmod ppcoal_microbench || echo "BENCH-ERROR rmmod ppcoal_microbench"
dmesg | grep -E 'LEAK|WARNING:|BUG:|Oops|ppcoal_microbench: .*refused' | head -n 5 |
	while read -r l; do echo "BENCH-ERROR dmesg: $l"; done
echo BENCH-DONE
