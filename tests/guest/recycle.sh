# ppcoal guest tests: direct recycling (1 of 2; recycle-drivers.sh) (busybox sh).
# Drops in the owner's poll, other contexts, teardown, DMA-mapping pools;
# flood_until, recycle_flood and edu_addr serve recycle-drivers.sh too.
# Sourced by run-guest.sh after lib.sh: defines t_NAME for each test NAME
# of tests.tsv in this file (- as _) and runs none of them.

# ---------------------------------------------------------------------------
# Direct recycling (recycle=on, issue 5). Traffic: 64-byte UDP to an address
# nobody owns (BLACKHOLE), dropped inside ppf1's NAPI poll, the case the
# 2023 RFC measured; no ICMP answers, so every page counted is ppf1's.

# flood_until CHECK [ADDR]: drop floods of 1 s until CHECK (a command)
# succeeds, 15 s at most. Arming the allocation probe waits RCU-tasks grace
# periods (slow under TCG), and a learning window that ends without an
# owner (2 s, PPC_LEARN_MAX) rests its pools 10 s before the next
# (PPC_LEARN_REST; missed on the debug kernel)
flood_until() {
	local i=0
	while [ $i -lt 15 ]; do
		drop_flood 1 $2
		$1 && return 0
		i=$((i + 1))
	done
	return 1
}
# flood_until_known [ADDR]: until ppcoal knows a pool owner
owner_known() { [ "$(val recycle.tracked_known)" -gt 0 ]; }
flood_until_known() { flood_until owner_known $1; }

# recycle_flood A B SECS: snapshots around a drop flood
recycle_flood() {
	snap "$1"
	drop_flood "$3"
	sleep 0.3
	snap "$2"
}

t_recycle_drop() {
	begin recycle-drop
	ppcoal_load coalesce=off virtio=off recycle=observe || bad "insmod ppcoal"
	for fp in 0 1; do
		cfg="frag_pool=$fp"
		fixture_up frag_pool=$fp linear=0 || { bad "$cfg: fixture_up"; continue; }
		blackhole_up ppf0 ppf1 $BLACKHOLE || bad "$cfg: blackhole neighbour"
		recycle_flood /tmp/a /tmp/b 2
		eq "$(delta recycle.direct /tmp/a /tmp/b)" 0 "$cfg observe: nothing direct"
		# 250: the debug kernel's 2 s flood brings about 500 (stock: tens of thousands)
		gt "$(delta recycle.ring /tmp/a /tmp/b)" 250 "$cfg observe: pages through the ring"
		obs=$(direct_pm /tmp/a /tmp/b)
		# from before the switch: frames still queued from the observe
		# flood may have the owner learned before the next snapshot
		snap /tmp/on0
		nof=$(dmesg | grep -c 'recycle: no owner found')
		echo on >$P/recycle || bad "$cfg: recycle=on"
		eq "$(val recycle.tracked_known)" 0 "$cfg: on starts knowing no owner"
		# arming the allocation probe takes a while under TCG (ftrace
		# registration waits RCU-tasks grace periods): flood until the
		# owner is learned, 5 s at most
		i=0
		while recycle_flood /tmp/a /tmp/b 1 && [ $i -lt 5 ] &&
			[ "$(delta recycle.owners_learned /tmp/on0 /tmp/b)" -le 0 ]; do
			i=$((i + 1))
		done
		if [ "$(delta recycle.owners_learned /tmp/on0 /tmp/b)" -le 0 ]; then
			bad "$cfg: pool owner learned (0 learned)"
			echo "  on0->b: $(for c in owners_learned learn_armed direct ring deny_owner_unknown deny_not_eligible pools_not_eligible owner_table_full; do printf '%s=%s ' $c "$(delta recycle.$c /tmp/on0 /tmp/b)"; done) known=$(val recycle.tracked_known /tmp/b) never=$(val recycle.tracked_not_eligible /tmp/b)"
		fi
		gt "$(delta recycle.learn_armed /tmp/on0 /tmp/b)" 0 "$cfg: allocation probe armed to learn"
		recycle_flood /tmp/a /tmp/b 2
		on=$(direct_pm /tmp/a /tmp/b)
		gt "$on" 900 "$cfg on: direct puts per mille"
		check_sums /tmp/a /tmp/b
		# armed on demand only: idle once every pool met is learned, at the
		# latest PPC_LEARN_MAX (2 s) after it was armed for a pool that
		# rarely allocates (which may have been met just now)
		i=0
		while [ "$(val recycle.learning)" = armed ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
		[ "$(val recycle.learning)" != armed ] || bad "$cfg: allocation probe still armed after 5 s ($(grep -E '^recycle\.(learn|owners|tracked|deny_owner_unknown|pools_shared)' "$S" | tr '\n' ' '))"
		hooked page_pool_alloc_pages && bad "$cfg: page_pool_alloc_pages still traced"
		# one learning window, for ppf1's pool: no other pool met a poll.
		# A second one was ppf0's pool, met by the peer's ARP probe
		# (fixture_up) at about the flood's end, and could outlast the wait
		# above (CI of 13d3337, frag_pool=1)
		snap /tmp/c
		eq "$(delta recycle.learn_armed /tmp/on0 /tmp/c)" 1 "$cfg: learning windows"
		eq "$(dmesg | grep -c 'recycle: no owner found')" "$nof" "$cfg: windows that found no owner"
		# both kernels: the wrapper marks ppf_poll's polls while on, and
		# the __napi_poll tracker is not attached (issue 37)
		gt "$(delta recycle.napi_polls /tmp/a /tmp/b)" 0 "$cfg: NAPI polls marked"
		hooked ppf_poll || bad "$cfg: ppf_poll not wrapped while on"
		hooked __napi_poll && bad "$cfg: __napi_poll traced while on (the tracker)"
		echo "METRIC $(uname -r) recycle-drop $cfg observe_direct_pm=$obs on_direct_pm=$on direct=$(delta recycle.direct /tmp/a /tmp/b) ring=$(delta recycle.ring /tmp/a /tmp/b)"
		echo observe >$P/recycle
		hooked ppf_poll && bad "$cfg: ppf_poll still wrapped in observe"
		fixture_down || bad "$cfg: pools did not drain"
	done
	end
	cleanup
}

# Frees outside the owner's poll are never direct: process context, bottom
# halves disabled outside any poll (skbs held by the fixture and released
# from a debugfs write), and another CPU's poll (RPS to the backlog NAPI).
t_recycle_context() {
	begin recycle-context
	ppcoal_load coalesce=off virtio=off recycle=on || bad "insmod ppcoal"
	fixture_up frag_pool=0 linear=0 || bad "fixture_up"
	blackhole_up ppf0 ppf1 $BLACKHOLE || bad "blackhole neighbour"
	flood_until_known
	gt "$(val recycle.tracked_known)" 0 "owner known before the context checks"
	for how in process bh; do
		echo 100 >$FX/hold
		drop_flood 1
		i=0
		while [ "$(fixture_held)" -lt 100 ] && [ $i -lt 20 ]; do drop_flood 1; i=$((i + 1)); done
		eq "$(fixture_held)" 100 "$how: 100 skbs held"
		snap /tmp/a
		echo $how >$FX/release || bad "release $how"
		snap /tmp/b
		eq "$(delta recycle.direct /tmp/a /tmp/b)" 0 "$how: no direct put"
		eq "$(sumd /tmp/a /tmp/b recycle.ring recycle.direct)" 100 "$how: one page-pool put per held skb"
		case $how in
		process) eq "$(delta recycle.deny_not_softirq /tmp/a /tmp/b)" 100 "process context: denied as not softirq" ;;
		bh) eq "$(delta recycle.deny_owner_elsewhere /tmp/a /tmp/b)" 100 "bh outside the poll: denied as owner elsewhere" ;;
		esac
	done
	"$IP" netns exec peer sh -c 'echo 2 >/sys/class/net/ppf1/queues/rx-0/rps_cpus' || bad "rps_cpus"
	snap /tmp/a
	d0=$(softnet_dropped)
	taskset -c 0 udpflood $BLACKHOLE 9 2 64 >/dev/null || bad "pinned flood"
	sleep 0.3
	d1=$(softnet_dropped)
	snap /tmp/b
	# A full backlog drops inside ppf1's own poll: those may be direct.
	dir=$(delta recycle.direct /tmp/a /tmp/b)
	[ "$dir" -le $((d1 - d0)) ] || bad "RPS to CPU 1: $dir direct puts, more than the $((d1 - d0)) backlog drops in the owner's poll"
	gt "$(delta recycle.deny_owner_elsewhere /tmp/a /tmp/b)" 300 "RPS to CPU 1: denied as owner elsewhere"
	check_sums /tmp/a /tmp/b
	fixture_down || bad "pools did not drain"
	end
	cleanup
}

# The backlog NAPI of each CPU (process_backlog(), polled by __napi_poll()
# like a driver's) has no device. The microbenchmark module's frames
# through the backlog each take a page of its pool and free it inside that
# poll (.../backlog). With the poll wrapper (issue 37) neither the backlog
# nor the microbenchmark's NAPI is audited, so neither poll is marked: the
# pool's pages are freed in no marked poll, nothing is learned, no slot
# taken. With the tracker (recycle_wrap=0), which marks every poll:
#  - a pool met in a poll not of its device takes no slot and asks for no
#    learning (issue 36.8): the backlog's frees arm nothing;
#  - a pool that allocates inside the backlog's poll while the learner is
#    armed for it is judged by the poll's driver first, never through a
#    napi->dev it lacks (issue 36.1: a NULL pointer dereference before).
#    The pool is asked for by a free in its own NAPI's poll (one
#    poll_recycle), and the backlog's frames come once the learner is
#    armed; should the pool's own poll have allocated first (a verdict
#    already), recycle starts again from nothing (off, then on).
t_recycle_backlog() {
	begin recycle-backlog
	MBD=/sys/kernel/debug/ppcoal_microbench
	"$IP" link set lo up
	ppcoal_load coalesce=off virtio=off recycle=on || bad "insmod ppcoal"
	insmod /ko/ppcoal_microbench.ko || bad "insmod ppcoal_microbench"
	snap /tmp/a
	echo 50 >$MBD/backlog || bad "frames through the backlog"
	echo "poll_recycle 20" >$MBD/run || bad "poll_recycle"
	snap /tmp/b
	eq "$(delta recycle.napi_polls /tmp/a /tmp/b)" 0 "wrapper: no poll marked"
	gt "$(delta recycle.deny_owner_elsewhere /tmp/a /tmp/b)" 60 "wrapper: the pool's pages freed in no marked poll"
	eq "$(delta recycle.learn_armed /tmp/a /tmp/b)/$(val recycle.tracked_unknown)" 0/0 "wrapper: no slot, no learning"
	eq "$(delta recycle.direct /tmp/a /tmp/b)" 0 "wrapper: no direct put"
	check_sums /tmp/a /tmp/b
	rmmod ppcoal_microbench || bad "rmmod ppcoal_microbench"
	ppcoal_unload || bad "rmmod ppcoal"
	ppcoal_load coalesce=off virtio=off recycle=on recycle_wrap=0 || bad "insmod ppcoal recycle_wrap=0"
	insmod /ko/ppcoal_microbench.ko || bad "insmod ppcoal_microbench"
	snap /tmp/a
	echo 50 >$MBD/backlog || bad "frames through the backlog"
	snap /tmp/b
	gt "$(delta recycle.deny_owner_unknown /tmp/a /tmp/b)" 40 "recycle_wrap=0: the pool met inside the backlog's poll, its owner unknown"
	eq "$(delta recycle.learn_armed /tmp/a /tmp/b)/$(val recycle.tracked_unknown)" 0/0 "recycle_wrap=0: a pool met in a poll not of its device: no slot, no learning"
	try=0 ok=0
	while [ $try -lt 5 ] && [ $ok = 0 ]; do
		try=$((try + 1))
		echo off >$P/recycle && echo on >$P/recycle || { bad "recycle off, on"; break; }
		snap /tmp/c
		echo "poll_recycle 1" >$MBD/run 2>/dev/null
		i=0
		while [ "$(val recycle.learning)" != armed ] && [ $i -lt 20 ]; do sleep 0.05; i=$((i + 1)); done
		[ "$(val recycle.learning)" = armed ] && [ "$(val recycle.tracked_not_eligible)" = 0 ] || continue
		echo 25 >$MBD/backlog || { bad "frames through the backlog, learner armed"; break; }
		snap /tmp/d
		[ "$(delta recycle.pools_not_eligible /tmp/c /tmp/d)" -gt 0 ] && ok=1
	done
	eq $ok 1 "recycle_wrap=0: in $try tries: the pool allocating inside the backlog's poll, learner armed, judged not eligible"
	eq "$(delta recycle.direct /tmp/c /tmp/d)" 0 "recycle_wrap=0: no direct put"
	echo "METRIC $(uname -r) recycle-backlog tries=$try unknown=$(delta recycle.deny_owner_unknown /tmp/a /tmp/b) not_eligible=$(delta recycle.pools_not_eligible /tmp/c /tmp/d)"
	rmmod ppcoal_microbench || bad "rmmod ppcoal_microbench"
	end
	cleanup
}

# Teardown under traffic: fixture removal, pool re-creation and ppcoal
# unload while the flood runs; no owner entry outlives its pool.
t_recycle_teardown() {
	begin recycle-teardown
	ppcoal_load coalesce=off virtio=off recycle=on || bad "insmod ppcoal"
	snap /tmp/t0
	for i in 1 2 3 4 5 6; do
		fixture_up frag_pool=$((i % 2)) linear=0 || { bad "$i: fixture_up"; continue; }
		blackhole_up ppf0 ppf1 $BLACKHOLE
		flood_until_known
		gt "$(val recycle.tracked_known)" 0 "$i: owner learned"
		drop_flood 3 &
		fp=$!
		sleep 1
		case $((i % 3)) in
		0) echo 1 >/sys/module/ppcoal_fixture/parameters/recreate || bad "$i: recreate" ;;
		1) ppcoal_unload || bad "$i: rmmod ppcoal under traffic"
		   ppcoal_load coalesce=off virtio=off recycle=on || bad "$i: insmod ppcoal" ;;
		2) : ;;
		esac
		fixture_down || bad "$i: pools did not drain"
		wait $fp
		eq "$(val recycle.tracked_known)/$(val recycle.tracked_unknown)" 0/0 "$i: no owner entry outlives its pool"
	done
	snap /tmp/t1
	# The fixture deletes its NAPIs (unregister) before it destroys its
	# pools, so the owner entries go at NAPI delete; page_pool_destroy
	# forgets only verdicts keyed by a pool that no deleted NAPI owned
	# (counted on stock kernels, none on the slower debug kernel): not
	# asserted. That nothing outlives its pool is, above.
	gt "$(delta recycle.owners_forgotten_napi_del /tmp/t0 /tmp/t1)" 0 "owners forgotten at NAPI delete"
	echo "  owners forgotten: at NAPI delete $(delta recycle.owners_forgotten_napi_del /tmp/t0 /tmp/t1), at page_pool_destroy $(delta recycle.owners_forgotten_destroy /tmp/t0 /tmp/t1) (last load)"
	end
	cleanup
}

# DMA-mapping pools (issue 13.2), in the "dma" boots: QEMU's edu PCI device
# behind an emulated Intel IOMMU, the fixture's pools mapped on it (dma=1:
# PP_FLAG_DMA_MAP | PP_FLAG_DMA_SYNC_DEV). Per pool kind, with coalesce and
# recycle on: cloned page-pool skbs coalesced (6.1 clone_policy=detach: a
# page leaves its pool, and is unmapped, while clones still hold it; 6.12
# upstream), direct recycling with the owner learned, held skbs freed in
# process context, a pool recreated under traffic, teardown. On the debug
# kernel DMA_API_DEBUG WARNs (dmesg-clean fails) at an unmap of an address
# not mapped, a sync of one, or a mapping left when the driver unbinds; this
# test also counts the edu device's mappings: some while the pools hold
# pages, none after teardown, and no DMA-API error.
DA=/sys/kernel/debug/dma-api
# edu_addr: the PCI address of QEMU's edu device (1234:11e8)
edu_addr() {
	local d
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat $d/vendor):$(cat $d/device)" = 0x1234:0x11e8 ] && { basename $d; return 0; }
	done
	return 1
}
# dma_maps DEV: DMA-API debug's mappings of PCI device DEV (its dump names
# the device, then the driver on 6.1, kernel/dma/debug.c:793-794; the
# driver, then the device on 6.12, :566-567)
dma_maps() { awk -v d="$1" '$1 == d || $2 == d { n++ } END { print n + 0 }' $DA/dump; }
t_dma_pool() {
	begin dma-pool
	edu=$(edu_addr) || bad "no edu PCI device (the dma boots run QEMU with -device edu)"
	grp=$(readlink /sys/bus/pci/devices/$edu/iommu_group 2>/dev/null)
	[ -n "$grp" ] || bad "edu $edu is in no IOMMU group: no IOMMU translates its DMA (qemu -device intel-iommu, intel_iommu=on)"
	case "$(cat /sys/kernel/iommu_groups/${grp##*/}/type 2>/dev/null)" in
	DMA | DMA-FQ) ;;
	*) bad "edu's IOMMU domain is $(cat /sys/kernel/iommu_groups/${grp##*/}/type 2>/dev/null), not a translating DMA domain" ;;
	esac
	dapi=0
	[ -r $DA/dump ] && dapi=1
	[ $dapi = 1 ] || echo "  no DMA_API_DEBUG in $(uname -r): mappings not counted (the debug kernel counts them)"
	[ $dapi = 0 ] || e0=$(cat $DA/error_count)
	for fp in 0 1; do
		cfg="frag_pool=$fp"
		ppcoal_load coalesce=on recycle=on virtio=off || bad "$cfg: insmod ppcoal"
		pol=upstream
		! on_61 || pol=detach
		echo $pol >$P/clone_policy || bad "$cfg: clone_policy=$pol"
		fixture_up dma=1 frag_pool=$fp linear=0 || { bad "$cfg: fixture_up dma=1"; ppcoal_unload; continue; }
		eq "$(ppf1_field dma)" 1 "$cfg: ppf1's pool DMA-mapped"
		blackhole_up ppf0 ppf1 $BLACKHOLE || bad "$cfg: blackhole neighbour"
		flood_until_known || bad "$cfg: no pool owner learned"
		[ $dapi = 0 ] || gt "$(dma_maps $edu)" 0 "$cfg: pool pages mapped on edu"
		snap /tmp/a
		# a TCP run that stalls may coalesce no clone: up to three runs
		for try in 1 2 3; do
			tap_start
			sleep 0.5
			iperf 3 -l 256 >/dev/null || bad "$cfg: iperf3 TCP with the tap"
			tap_stop
			grep -q 'packets [1-9]' /tmp/pptap.out || bad "$cfg: the tap saw no packets: $(cat /tmp/pptap.out)"
			snap /tmp/t
			[ "$(delta coalesce.pp_cloned_from /tmp/a /tmp/t)" -gt 0 ] && break
			echo "  $cfg: run $try coalesced no cloned page-pool skb ($(delta coalesce.calls /tmp/a /tmp/t) coalesce calls)"
		done
		drop_flood 2
		echo 100 >$FX/hold
		i=0
		while [ "$(fixture_held)" -lt 100 ] && [ $i -lt 20 ]; do drop_flood 1; i=$((i + 1)); done
		echo process >$FX/release || bad "$cfg: release process"
		sleep 0.3
		snap /tmp/b
		gt "$(delta coalesce.pp_cloned_from /tmp/a /tmp/t)" 0 "$cfg: cloned page-pool skbs coalesced ($(delta coalesce.calls /tmp/a /tmp/t) coalesce calls, $(cat /tmp/pptap.out))"
		[ $pol != detach ] || [ $fp = 1 ] ||
			gt "$(delta coalesce.clone_detached /tmp/a /tmp/b)" 0 "$cfg: pages detached from a DMA pool"
		gt "$(delta recycle.direct /tmp/a /tmp/b)" 0 "$cfg: direct puts into a DMA pool"
		check_sums /tmp/a /tmp/b
		echo "METRIC $(uname -r) dma-pool $cfg policy=$pol cloned=$(delta coalesce.pp_cloned_from /tmp/a /tmp/b) detached=$(delta coalesce.clone_detached /tmp/a /tmp/b) direct=$(delta recycle.direct /tmp/a /tmp/b) ring=$(delta recycle.ring /tmp/a /tmp/b) edu_maps=$([ $dapi = 0 ] || dma_maps $edu)"
		# teardown under traffic: the pair recreated, then unloaded
		traffic_start -l 256
		sleep 1
		echo 1 >/sys/module/ppcoal_fixture/parameters/recreate || bad "$cfg: recreate under traffic"
		traffic_stop
		fixture_down || bad "$cfg: pools did not drain"
		[ $dapi = 0 ] || eq "$(dma_maps $edu)" 0 "$cfg: no page left mapped after teardown"
		ppcoal_unload || bad "$cfg: rmmod ppcoal"
	done
	# the device unbound under the pools: they go first, drained, and
	# dma=1 then refuses with the reason
	if fixture_up dma=1 frag_pool=0 linear=0; then
		traffic_start -l 256
		sleep 1
		n0=$(dmesg | grep -c 'pool drained')
		echo $edu >/sys/bus/pci/drivers/ppcoal_fixture/unbind || bad "unbind edu"
		traffic_stop
		eq $(($(dmesg | grep -c 'pool drained') - n0)) 2 "both pools drained when edu was unbound"
		! dmesg | grep -q 'pool LEAK' || bad "$(dmesg | grep 'pool LEAK' | tail -n 1)"
		[ ! -e /sys/class/net/ppf0 ] || bad "ppf0 outlived its DMA device"
		echo 1 >/sys/module/ppcoal_fixture/parameters/recreate 2>/dev/null && bad "dma=1 pair created without a DMA device"
		dmesg_has "dma=1: no DMA device" || bad "no dmesg line for the refused dma=1 pair"
		[ $dapi = 0 ] || eq "$(dma_maps $edu)" 0 "no page left mapped after the unbind"
		rmmod ppcoal_fixture || bad "rmmod of the fixture after the unbind"
	else
		bad "fixture_up dma=1 for the unbind"
	fi
	[ $dapi = 0 ] || eq "$(cat $DA/error_count)" "$e0" "no DMA-API error"
	end
	cleanup
}
