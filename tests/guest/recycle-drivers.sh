# ppcoal guest tests: direct recycling (2 of 2; recycle.sh) (busybox sh).
# Which drivers' pools are recycled directly: driver patterns, the forced
# experiment, many pools, the audit, 6.12's .napi pools, veth with XDP.
# Sourced by run-guest.sh after lib.sh: defines t_NAME for each test NAME
# of tests.tsv in this file (- as _) and runs none of them.

# Driver patterns the audit does not cover (issue 13.3), both pool kinds:
# ppf1 refilled from process context while its NAPI polls (refill=1,
# xen-netfront's pattern), and its ring reset from process context while
# the NAPI polls (.../reset, bnxt's queue reset). Such a NAPI is polled by
# ppf_poll_ring(), not by the ppf_poll() the fixture's audit row names: with
# recycle=on its polls are never marked (the wrapper sits on ppf_poll
# alone, issue 37), so its pool is never learned and never gets a direct
# put, while the work item allocates and resets run during the flood.
# recycle.direct counts ppcoal's direct puts into every pool; the one pool
# they may go to here is ppf0's (its poll is the audited one), and only
# for pool pages ppf0 received (none since fixture_up made the pair's
# neighbours static; before, ARP from ppf1), so: direct <= ppf0's
# rxpages. Where the kernel keeps page_pool statistics (the debug
# kernels) they name the pool exactly: ppf1's puts asking for its cache
# stay 0 (its own are never direct).
# ppf_resets N [HOW]: N resets of ppf1's ring, 0.1 s apart (HOW 1, the
# default: bnxt's; 2: 32 rounds each, on 6.12 not withdrawing direct
# recycling first)
ppf_resets() {
	local i=0
	while [ $i -lt "$1" ]; do
		echo "${2:-1}" >$FX/reset || return 1
		sleep 0.1
		i=$((i + 1))
	done
}
t_recycle_driver_patterns() {
	begin recycle-driver-patterns
	ppcoal_load coalesce=off virtio=off recycle=on || bad "insmod ppcoal"
	# DMA-mapped as well where the dma boots' edu device is there
	dm=0
	edu_addr >/dev/null && dm=1
	for fp in 0 1; do
		cfg="frag_pool=$fp dma=$dm"
		eq "$(val recycle.tracked_not_eligible)" 0 "$cfg: no verdict before the pair"
		fixture_up refill=1 dma=$dm frag_pool=$fp linear=0 || { bad "$cfg: fixture_up refill=1"; continue; }
		eq "$(ppf1_field refill)" 1 "$cfg: ppf1 refilled by the work item"
		echo 3 >$FX/reset 2>/dev/null && bad "$cfg: reset 3 accepted (1 and 2 are)"
		dmesg_has "reset: write 1" || bad "$cfg: no dmesg line for the refused reset 3"
		blackhole_up ppf0 ppf1 $BLACKHOLE || bad "$cfg: blackhole neighbour"
		snap /tmp/a
		rp0=$(ppf_field ppf0 rxpages)
		dp1=$(ppf1_field directputs)
		drop_flood 2
		drop_flood 2 &
		fl=$!
		ppf_resets 10 $((fp + 1)) || bad "$cfg: reset"
		wait $fl
		sleep 0.3
		snap /tmp/b
		rp0=$(($(ppf_field ppf0 rxpages) - rp0))
		d=$(delta recycle.direct /tmp/a /tmp/b)
		le "$d" "$rp0" "$cfg: direct puts only for the pool pages ppf0's audited poll received"
		if [ "$dp1" -ge 0 ]; then
			dp1=$(($(ppf1_field directputs) - dp1))
			eq "$dp1" 0 "$cfg: no direct put into ppf1's pool, refilled from process context (page_pool stats)"
		fi
		# freed in no marked poll (or, on 6.12 where reset withdraws
		# direct recycling, judged not eligible)
		gt "$(sumd /tmp/a /tmp/b recycle.deny_owner_elsewhere recycle.deny_not_eligible)" 250 "$cfg: its pages on the ring, in no marked poll or not eligible"
		check_sums /tmp/a /tmp/b
		echo "METRIC $(uname -r) recycle-driver-patterns $cfg direct=$d ppf0_rxpages=$rp0 ppf1_directputs=$dp1 ring=$(delta recycle.ring /tmp/a /tmp/b) elsewhere=$(delta recycle.deny_owner_elsewhere /tmp/a /tmp/b)"
		fixture_down || bad "$cfg: pools did not drain"
	done
	# reset is refused with the reason on a pair without a driver ring,
	# and refill=1 with pp_napi=1 (the kernel would recycle directly)
	fixture_up frag_pool=0 linear=0 || bad "fixture_up"
	echo 1 >$FX/reset 2>/dev/null && bad "reset accepted without refill=1"
	dmesg_has "reset: ppf1 has no driver ring" || bad "no dmesg line for the refused reset"
	fixture_down || bad "pools did not drain"
	insmod /ko/ppcoal_fixture.ko refill=1 pp_napi=1 2>/dev/null && { bad "refill=1 pp_napi=1 accepted"; rmmod ppcoal_fixture; }
	dmesg_has "refill=1 with pp_napi=1" || bad "no dmesg line for refill=1 pp_napi=1"
	end
	cleanup
}

# The forced experiment of issue 13.3 (own boot, by name only; expected to
# corrupt the pool): the same patterns made eligible by the expert switch
# (recycle_drivers=ppcoal_fixture admits every poll of the module), so
# direct puts in ppf1's poll race the work item's allocations from the
# pool's lockless cache on the other CPU. The test passes when direct puts
# were made; what the corruption does is for the debug kernel to report
# (dmesg-clean), for the note.
t_recycle_forced_eligible() {
	begin recycle-forced-eligible
	ppcoal_load coalesce=off virtio=off recycle_drivers=ppcoal_fixture recycle=on || bad "insmod ppcoal"
	fixture_up refill=1 frag_pool=0 linear=0 || bad "fixture_up refill=1"
	blackhole_up ppf0 ppf1 $BLACKHOLE || bad "blackhole neighbour"
	flood_until_known || bad "owner not learned"
	# resets refill from process context all through the flood; on 6.12
	# without withdrawing direct recycling first (bnxt's does, and ppcoal
	# then never recycles into the pool again: recycle-driver-patterns)
	snap /tmp/a
	t=0
	while [ $t -lt "$(karg forcedsecs 20)" ]; do
		drop_flood 1 &
		fl=$!
		ppf_resets 5 2
		wait $fl
		t=$((t + 1))
	done
	snap /tmp/b
	gt "$(delta recycle.direct /tmp/a /tmp/b)" 0 "direct puts into the pool refilled from process context (forced)"
	# the attribution of recycle-driver-patterns sees them
	dp1=$(ppf1_field directputs)
	[ "$dp1" -lt 0 ] || gt "$dp1" 0 "ppf1's page_pool stats count the forced direct puts"
	echo "METRIC $(uname -r) recycle-forced-eligible direct=$(delta recycle.direct /tmp/a /tmp/b) ppf1_directputs=$dp1 ring=$(delta recycle.ring /tmp/a /tmp/b)"
	fixture_down || bad "pools did not drain"
	end
	cleanup
}

# Cost at scale (issue 12.16): 301 pools owned by one NAPI, more than the
# owner table's 256 slots. The learner must settle (bounded episodes, idle
# soon after), pools without a slot must not keep asking, and the pools
# it knows still recycle directly.
t_recycle_many_pools() {
	begin recycle-many-pools
	ppcoal_load coalesce=off virtio=off recycle=on || bad "insmod ppcoal"
	fixture_up frag_pool=0 linear=0 extra_pools=300 || bad "fixture_up extra_pools=300"
	blackhole_up ppf0 ppf1 $BLACKHOLE || bad "blackhole neighbour"
	recycle_flood /tmp/a /tmp/b 3
	i=0
	while [ "$(val recycle.learning)" = armed ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	[ "$(val recycle.learning)" != armed ] || bad "learner still armed 5 s after the flood"
	arms1=$(delta recycle.learn_armed /tmp/a /tmp/b)
	[ "$arms1" -le 4 ] || bad "$arms1 learning episodes in a 3 s flood"
	recycle_flood /tmp/c /tmp/d 3
	arms2=$(delta recycle.learn_armed /tmp/c /tmp/d)
	[ "$arms2" -le 2 ] || bad "learning armed $arms2 times in a second 3 s flood, the table settled"
	gt "$(val recycle.tracked_known)" 200 "pools learned"
	gt "$(delta recycle.owner_table_full /tmp/a /tmp/d)" 0 "pools without a slot seen"
	gt "$(delta recycle.direct /tmp/c /tmp/d)" 300 "known pools recycle directly"
	echo "METRIC $(uname -r) recycle-many-pools known=$(val recycle.tracked_known) arms=$arms1/$arms2 full=$(delta recycle.owner_table_full /tmp/a /tmp/d) direct=$(delta recycle.direct /tmp/c /tmp/d) ring=$(delta recycle.ring /tmp/c /tmp/d)"
	check_sums /tmp/c /tmp/d
	fixture_down || bad "pools did not drain"
	dmesg | grep -q "extra pools drained: 300" || bad "the 300 extra pools did not report drained"
	eq "$(val recycle.tracked_known)/$(val recycle.tracked_unknown)" 0/0 "no owner entry outlives its pool"
	# Slots only for pools that can be eligible (issue 36.8): 640 pools
	# of ppf0's device that ppf1's poll allocates from and frees into,
	# as a second driver's pools would be, first alone (skip_own). Each
	# took a slot for good with the verdict "not eligible" before: 640
	# pools in 256 slots, every bucket full, and ppf1's own pool, met
	# after them, was never learned.
	fixture_up frag_pool=0 linear=0 extra_pools=640 foreign_extra=1 skip_own=1 ||
		bad "fixture_up extra_pools=640 foreign_extra=1"
	blackhole_up ppf0 ppf1 $BLACKHOLE || bad "blackhole neighbour"
	recycle_flood /tmp/e /tmp/f 3
	gt "$(delta recycle.deny_owner_unknown /tmp/e /tmp/f)" 1000 "pages of the foreign pools freed in ppf1's poll"
	eq "$(val recycle.tracked_not_eligible)/$(val recycle.tracked_unknown)" 0/0 "no slot for a pool of another device"
	eq "$(delta recycle.owner_table_full /tmp/e /tmp/f)" 0 "no bucket full"
	echo 0 >/sys/module/ppcoal_fixture/parameters/skip_own || bad "skip_own=0"
	flood_until_known || bad "ppf1's own pool not learned among 640 foreign ones in 15 s of drop floods"
	recycle_flood /tmp/g /tmp/h 3
	le "$(val recycle.tracked_known)" 2 "pools known: ppf1's own (and ppf0's at most)"
	gt "$(delta recycle.direct /tmp/g /tmp/h)" 0 "ppf1's own pool recycles directly"
	echo "METRIC $(uname -r) recycle-many-pools foreign=640 direct=$(delta recycle.direct /tmp/g /tmp/h) unknown=$(delta recycle.deny_owner_unknown /tmp/g /tmp/h) full=$(delta recycle.owner_table_full /tmp/e /tmp/h)"
	check_sums /tmp/g /tmp/h
	fixture_down || bad "pools did not drain"
	dmesg | grep -q "extra pools drained: 640" || bad "the 640 foreign pools did not report drained"
	end
	cleanup
}

# Pools made without a device (issue 36: 6.1's mana makes its own so): the
# device rule cannot place them, so a row may name a rule of its own; the
# fixture's reads ppf1's own pool from its private data (nodev=1). First
# 64 pools of another queue that ppf1's poll allocates from and frees into
# (the extra pools, device-less too), alone: the rule refuses them, none
# takes a slot; then ppf1's own device-less pool is learned and recycles
# directly. Before the rule, a pool without a device was never learned.
t_recycle_nodev() {
	begin recycle-nodev
	ppcoal_load coalesce=off virtio=off recycle=on || bad "insmod ppcoal"
	fixture_up frag_pool=0 linear=0 nodev=1 extra_pools=64 skip_own=1 ||
		bad "fixture_up nodev=1 extra_pools=64 skip_own=1"
	blackhole_up ppf0 ppf1 $BLACKHOLE || bad "blackhole neighbour"
	recycle_flood /tmp/a /tmp/b 3
	gt "$(delta recycle.deny_owner_unknown /tmp/a /tmp/b)" 1000 "pages of the other queue's pools freed in ppf1's poll"
	# a foreign pool taken by want but refused by the learner would be
	# "not eligible"; taken by both, its pages would go direct here (ppf0's
	# own device-less pool may be learned meanwhile: it frees nothing in
	# this flood)
	eq "$(val recycle.tracked_not_eligible)" 0 "no slot for a device-less pool the rule does not place"
	eq "$(delta recycle.direct /tmp/a /tmp/b)" 0 "no direct put into another queue's pool"
	echo 0 >/sys/module/ppcoal_fixture/parameters/skip_own || bad "skip_own=0"
	flood_until_known || bad "ppf1's own device-less pool not learned in 15 s of drop floods"
	recycle_flood /tmp/c /tmp/d 3
	le "$(val recycle.tracked_known)" 2 "pools known: ppf1's own (and ppf0's at most)"
	pm=$(direct_pm /tmp/c /tmp/d)
	echo "METRIC $(uname -r) recycle-nodev direct_pm=$pm direct=$(delta recycle.direct /tmp/c /tmp/d) ring=$(delta recycle.ring /tmp/c /tmp/d) unknown=$(delta recycle.deny_owner_unknown /tmp/c /tmp/d)"
	# ppf1's poll takes its pages from its own pool and the 64 others in
	# turn: its own is 1 in 65 (over 1500 direct puts in 3 s on the stock
	# kernels, about 50 on the debug ones)
	gt "$(delta recycle.direct /tmp/c /tmp/d)" 0 "ppf1's own device-less pool recycles directly"
	check_sums /tmp/c /tmp/d
	fixture_down || bad "pools did not drain"
	dmesg | grep -q "extra pools drained: 64" || bad "the 64 extra pools did not report drained"
	eq "$(val recycle.tracked_known)/$(val recycle.tracked_unknown)" 0/0 "no owner entry outlives its pool"
	end
	cleanup
}

# stmmac's rule (dev_rx, issue 36): a pool made for XDP (DMA_BIDIRECTIONAL),
# whose pages stmmac's transmit NAPI puts back, is never the poll's alone.
# The fixture's xdp_tx=1 makes ppf1's pools so and sends one frame in four
# back to ppf0's poll (freed there as skbs: the fixture does not race its
# own pool); its row's rule is stmmac's. First the pool judged not
# eligible, with no direct put; then the same pair made to receive only
# (xdp_tx=0): ppf1's pool recycles directly, so the refusal was the rule's
# (with the plain device rule the first half fails: direct puts, the pool
# known as owned).
not_eligible_known() { [ "$(val recycle.tracked_not_eligible)" -gt 0 ]; }
t_recycle_xdptx() {
	begin recycle-xdptx
	ppcoal_load coalesce=off virtio=off recycle=on || bad "insmod ppcoal"
	fixture_up frag_pool=0 linear=0 xdp_tx=1 || bad "fixture_up xdp_tx=1"
	blackhole_up ppf0 ppf1 $BLACKHOLE || bad "blackhole neighbour"
	flood_until not_eligible_known ||
		bad "ppf1's bidirectional pool not judged in 15 s of drop floods"
	t0=$(ppf_field ppf0 txdone)
	recycle_flood /tmp/a /tmp/b 3
	t0=$(($(ppf_field ppf0 txdone) - t0))
	echo "METRIC $(uname -r) recycle-xdptx xdp_tx=1 direct=$(delta recycle.direct /tmp/a /tmp/b) ring=$(delta recycle.ring /tmp/a /tmp/b) not_eligible=$(delta recycle.deny_not_eligible /tmp/a /tmp/b) txdone=$t0"
	eq "$(ppf1_field xdptx)" 1 "ppf1's pools made bidirectional"
	# the debug kernels flood about 500 frames in 3 s, a quarter sent back
	gt "$t0" 50 "ppf1's pages completed in ppf0's poll"
	# ppf1's pool's pages, freed in ppf1's poll and in ppf0's
	gt "$(delta recycle.deny_not_eligible /tmp/a /tmp/b)" 100 "pages of the bidirectional pool refused as not eligible"
	eq "$(delta recycle.direct /tmp/a /tmp/b)" 0 "no direct put into a bidirectional pool"
	# ppf0's own pool (receive only) may be learned from the ARP replies
	# of the pair's set-up; ppf1's must not be
	le "$(val recycle.tracked_known)" 1 "no pool but ppf0's known as owned"
	check_sums /tmp/a /tmp/b
	fixture_down || bad "xdp_tx=1: pools did not drain"
	fixture_up frag_pool=0 linear=0 xdp_tx=0 || bad "fixture_up xdp_tx=0"
	blackhole_up ppf0 ppf1 $BLACKHOLE || bad "blackhole neighbour"
	flood_until_known || bad "ppf1's receive-only pool not learned in 15 s of drop floods"
	recycle_flood /tmp/c /tmp/d 3
	echo "METRIC $(uname -r) recycle-xdptx xdp_tx=0 direct_pm=$(direct_pm /tmp/c /tmp/d) direct=$(delta recycle.direct /tmp/c /tmp/d)"
	eq "$(ppf1_field xdptx)" 0 "ppf1's pools made to receive only"
	gt "$(direct_pm /tmp/c /tmp/d)" 900 "the receive-only pool recycles directly (per mille)"
	fixture_down || bad "xdp_tx=0: pools did not drain"
	end
	cleanup
}

# The poll marks (issue 37): with recycle=on a wrapper attached as an
# ftrace direct call to each audited poll function marks that poll alone,
# following the driver's module in and out; where it cannot be attached
# (recycle_wrap=0, or a function an IPMODIFY or direct-call user already
# holds) the __napi_poll tracker marks every poll instead, said in stats
# and dmesg, and pages still go direct. A stack walked inside the wrapped
# poll unwinds through the wrapper to __napi_poll with no unwinder error.
# marks_are yes|no WHY LABEL: ppf_poll wrapped or not, and the tracker's
# reason ("" when it does not mark)
marks_are() {
	if [ "$1" = yes ]; then
		wrapped ppf_poll || bad "$3: ppf_poll not wrapped: $(val recycle.poll_marks)"
	else
		! wrapped ppf_poll || bad "$3: ppf_poll wrapped: $(val recycle.poll_marks)"
	fi
	eq "$(tracker_why)" "$2" "$3: the tracker's reason"
}
# wrap_direct LABEL: the fixture's pool learned and recycling directly
wrap_direct() {
	blackhole_up ppf0 ppf1 $BLACKHOLE || bad "$1: blackhole neighbour"
	flood_until_known || bad "$1: ppf1's pool not learned in 15 s of drop floods"
	recycle_flood /tmp/a /tmp/b 2
	gt "$(direct_pm /tmp/a /tmp/b)" 900 "$1: direct puts per mille"
	echo "METRIC $(uname -r) recycle-wrap $1: direct_pm=$(direct_pm /tmp/a /tmp/b) polls=$(delta recycle.napi_polls /tmp/a /tmp/b) rx=$(delta recycle.calls /tmp/a /tmp/b)"
}
# stack_through WANT LABEL: a stack walked in ppf_poll() has ppf_poll's
# caller(s) WANT ("ppc_wrap __napi_poll" or "__napi_poll") and no error
stack_through() {
	echo 1 >$FX/stack || bad "$2: arm the stack walk"
	drop_flood 1
	cat $FX/stack >/tmp/stack
	got=$(awk '$1 == "frame" { sub(/\+.*/, "", $2); f[n++] = $2 }
		END { for (i = 0; i < n; i++) if (f[i] == "ppf_poll") break
			for (j = i + 1; j < n && j <= i + 2; j++) s = s (s ? " " : "") f[j]
			print s }' /tmp/stack)
	case "$got" in
	"$1"*) ;;
	*) bad "$2: ppf_poll's callers \"$got\", not \"$1\": $(tr '\n' ' ' </tmp/stack)" ;;
	esac
	eq "$(awk '$1 == "error" { print $2 }' /tmp/stack)" 0 "$2: the unwinder's verdict"
	echo "  $2: the stack walked in ppf_poll():"
	sed 's/^/    /' /tmp/stack
}
t_recycle_wrap() {
	begin recycle-wrap
	ppcoal_load coalesce=off virtio=off recycle=on || bad "insmod ppcoal"
	marks_are no "" "no fixture"
	# the wrapper follows the fixture's module in and out
	fixture_up frag_pool=0 linear=0 || bad "fixture_up"
	marks_are yes "" "fixture loaded"
	# its record is direct, to ppc_wrap (the line after the function's)
	grep -A1 "^ppf_poll " /sys/kernel/tracing/enabled_functions | grep -q "direct-->ppc_wrap+" ||
		bad "ppf_poll's call site does not reach ppc_wrap: $(grep -A1 "^ppf_poll " /sys/kernel/tracing/enabled_functions | tr '\n\t' '  ')"
	wrap_direct wrapped
	stack_through "ppc_wrap __napi_poll" wrapped
	# an IPMODIFY user (a livepatch's kind) is refused on a wrapped poll
	! insmod /ko/ppcoal_conflict.ko also=ppf_poll 2>/dev/null ||
		bad "an IPMODIFY ops registered on the wrapped ppf_poll"
	grep -q '^ppcoal_conflict ' /proc/modules && rmmod ppcoal_conflict
	fixture_down || bad "wrapped: pools did not drain"
	marks_are no "" "fixture unloaded"
	# the poll held by an IPMODIFY user: the tracker, said
	echo off >$P/recycle || bad "recycle=off"
	fixture_up frag_pool=0 linear=0 || bad "fixture_up again"
	insmod /ko/ppcoal_conflict.ko also=ppf_poll || bad "insmod ppcoal_conflict also=ppf_poll"
	dmesg -c >/dev/null
	echo on >$P/recycle || bad "recycle=on beside the IPMODIFY user"
	marks_are no "ppf_poll cannot be wrapped (-16: a BPF program or a livepatch on it?)" "ppf_poll held"
	dmesg | grep -q "ppcoal: recycle: every NAPI poll is marked by the __napi_poll tracker: ppf_poll cannot be wrapped" ||
		bad "the fallback not said in dmesg"
	wrap_direct tracker
	stack_through "__napi_poll" tracker
	echo off >$P/recycle || bad "recycle=off"
	rmmod ppcoal_conflict || bad "rmmod ppcoal_conflict"
	echo on >$P/recycle || bad "recycle=on again"
	marks_are yes "" "ppf_poll free again"
	fixture_down || bad "tracker: pools did not drain"
	ppcoal_unload || bad "rmmod ppcoal"
	# recycle_wrap=0: the tracker on every poll
	ppcoal_load coalesce=off virtio=off recycle=on recycle_wrap=0 || bad "insmod recycle_wrap=0"
	fixture_up frag_pool=0 linear=0 || bad "fixture_up recycle_wrap=0"
	marks_are no "recycle_wrap=0" "recycle_wrap=0"
	wrap_direct recycle_wrap=0
	fixture_down || bad "recycle_wrap=0: pools did not drain"
	end
	cleanup
}

# A pool of a driver that is not audited is never recycled directly (issue
# 12.10-12): the fixture under another module name is not on the list, and
# becomes eligible only when an expert adds it (recycle_drivers, a - in a
# name read as _).
t_recycle_audit() {
	begin recycle-audit
	ppcoal_load coalesce=off virtio=off recycle=observe || bad "insmod ppcoal"
	# each audited driver with the ->poll() its audit read (9318b09)
	# the rows of this kernel family, in the table's order: 6.1's veth and
	# vmxnet3 have no page pool, its stmmac passes the stack no pool page;
	# 6.12's bnxt_en and mana name their NAPI
	aud=ppcoal_fixture:ppf_poll,veth:veth_poll,vmxnet3:vmxnet3_poll_rx_only,vmxnet3:vmxnet3_poll,stmmac:stmmac_napi_poll_rx
	! on_61 || aud=ppcoal_fixture:ppf_poll,bnxt_en:bnxt_poll_p5,mana:mana_poll
	eq "$(val recycle.audited_drivers)" "$aud" "audited drivers listed"
	# the microbenchmark module's dummy NAPI polls and frees its own
	# pool's pages: a driver nobody audited
	insmod /ko/ppcoal_microbench.ko || bad "insmod ppcoal_microbench"
	MB=/sys/kernel/debug/ppcoal_microbench/run
	echo on >$P/recycle || bad "recycle=on"
	echo "poll_recycle 2000" >$MB || bad "poll_recycle"
	snap /tmp/a
	echo "poll_recycle 2000" >$MB || bad "poll_recycle"
	snap /tmp/b
	eq "$(delta recycle.direct /tmp/a /tmp/b)" 0 "not audited: no direct put"
	# its poll is not wrapped (issue 37): never marked, its pool never
	# learned (with the tracker: marked, and the pool judged not eligible)
	eq "$(delta recycle.napi_polls /tmp/a /tmp/b)" 0 "not audited: no poll marked"
	gt "$(delta recycle.deny_owner_elsewhere /tmp/a /tmp/b)" 1900 "not audited: freed in no marked poll"
	eq "$(val recycle.tracked_not_eligible)/$(val recycle.tracked_unknown)/$(delta recycle.learn_armed /tmp/a /tmp/b)" 0/0/0 "not audited: no slot, no learning"
	echo ppcoal_microbench >$P/recycle_drivers 2>/dev/null && bad "recycle_drivers accepted while on"
	echo "bad name!" >$P/recycle_drivers 2>/dev/null && bad "an invalid recycle_drivers accepted"
	echo observe >$P/recycle
	# a module's name has _ where its file may have - (kbuild's
	# KBUILD_MODNAME: xen-netfront.ko is xen_netfront): a - is stored, and
	# read back, as _ (issue 36.3); the kernel is tainted and dmesg says
	# so, as for any addition (the taint bit where no earlier test set
	# it: the default boot's unverified has)
	u0=$(($(cat /proc/sys/kernel/tainted) & 64))
	echo foo-bar >$P/recycle_drivers || bad "recycle_drivers foo-bar"
	eq "$(cat $P/recycle_drivers)" foo_bar "recycle_drivers: foo-bar reads back"
	dmesg_has "recycle_drivers: 1 driver(s) added to the audited list at the administrator's risk: foo-bar - tainting kernel" ||
		bad "no taint line for recycle_drivers foo-bar"
	if [ "$u0" = 0 ]; then
		[ $(($(cat /proc/sys/kernel/tainted) & 64)) = 64 ] || bad "recycle_drivers foo-bar did not taint the kernel"
	fi
	# and so it matches the module: written with -, the microbenchmark
	# module is added (its direct puts below)
	echo ppcoal-microbench >$P/recycle_drivers || bad "recycle_drivers write while observe"
	eq "$(cat $P/recycle_drivers)" ppcoal_microbench "recycle_drivers reads back"
	eq "$(val recycle.audited_drivers)" "$aud,ppcoal_microbench(added)" "an added driver listed, whole module"
	dmesg_has "added to the audited list at the administrator's risk" || bad "no dmesg warning for recycle_drivers"
	echo on >$P/recycle || bad "recycle=on"
	# its poll function is not known: the tracker marks every poll
	eq "$(tracker_why)" "recycle_drivers: their poll functions are unknown" "an added driver: the tracker"
	echo "poll_recycle 2000" >$MB || bad "poll_recycle"
	sleep 0.3
	snap /tmp/a
	echo "poll_recycle 2000" >$MB || bad "poll_recycle"
	snap /tmp/b
	gt "$(delta recycle.direct /tmp/a /tmp/b)" 1900 "added by the expert: direct puts"
	# the same poll freeing its page with interrupts disabled, as
	# netconsole's netpoll frees skbs nested in a poll: never direct,
	# denied as not softirq (issue 36.2). 6.12's page pool warns of any
	# put made so where lockdep is on (__page_pool_put_page(), 6.12
	# net/core/page_pool.c:845), ppcoal's or not: not there
	if on_61 || [ ! -e /proc/lockdep ]; then
		snap /tmp/a
		echo "poll_recycle_irqoff 2000" >$MB || bad "poll_recycle_irqoff"
		snap /tmp/b
		eq "$(delta recycle.direct /tmp/a /tmp/b)" 0 "interrupts disabled in the owner's poll: no direct put"
		ge "$(delta recycle.deny_not_softirq /tmp/a /tmp/b)" 2000 "interrupts disabled in the owner's poll: denied as not softirq"
	fi
	echo observe >$P/recycle
	echo "" >$P/recycle_drivers || bad "recycle_drivers cleared"
	rmmod ppcoal_microbench || bad "rmmod ppcoal_microbench"
	end
	cleanup
}

# 6.12: a pool that names its NAPI (page_pool_params.napi) is recycled
# directly by the kernel; ppcoal gives a pool without it the same share.
t_recycle_ppnapi() {
	begin recycle-ppnapi
	ppcoal_load coalesce=off virtio=off recycle=observe || bad "insmod ppcoal"
	if ! on_61; then
		for ppn in 1 0; do
			fixture_up frag_pool=0 linear=0 pp_napi=$ppn || { bad "pp_napi=$ppn: fixture_up"; continue; }
			blackhole_up ppf0 ppf1 $BLACKHOLE
			for m in observe on; do
				echo $m >$P/recycle
				if [ $m = on ] && [ $ppn = 0 ]; then
					flood_until_known
				else
					drop_flood 1
				fi
				recycle_flood /tmp/a /tmp/b 2
				pm=$(direct_pm /tmp/a /tmp/b)
				own=$(delta recycle.direct /tmp/a /tmp/b)
				echo "METRIC $(uname -r) recycle-ppnapi pp_napi=$ppn mode=$m direct_pm=$pm ppcoal_direct=$own upstream_direct=$(delta recycle.upstream_direct /tmp/a /tmp/b) ring=$(delta recycle.ring /tmp/a /tmp/b)"
				eval "pm_${ppn}_$m=$pm"
				[ $ppn = 1 ] && eq "$own" 0 "pp_napi=1 $m: ppcoal leaves the pool to the kernel"
			done
			fixture_down || bad "pp_napi=$ppn: pools did not drain"
		done
		# a driver that withdraws direct recycling from a live pool
		# (page_pool_disable_direct_recycling(), as bnxt's queue restart)
		# makes it not eligible for the rest of its life
		fixture_up frag_pool=0 linear=0 || bad "withdraw: fixture_up"
		blackhole_up ppf0 ppf1 $BLACKHOLE
		echo on >$P/recycle
		flood_until_known
		recycle_flood /tmp/a /tmp/b 1
		gt "$(direct_pm /tmp/a /tmp/b)" 900 "before withdraw: direct puts per mille"
		echo 1 >/sys/kernel/debug/ppcoal_fixture/withdraw || bad "withdraw"
		recycle_flood /tmp/a /tmp/b 1
		echo "METRIC $(uname -r) recycle-ppnapi withdrawn ring=$(delta recycle.ring /tmp/a /tmp/b) deny_not_eligible=$(delta recycle.deny_not_eligible /tmp/a /tmp/b) direct=$(delta recycle.direct /tmp/a /tmp/b)"
		eq "$(delta recycle.direct /tmp/a /tmp/b)" 0 "after withdraw: no direct put"
		# every put of the flood is denied; the window carried 512..3584
		# pages here and 768 on a slower host: a low floor, the share asserts
		gt "$(delta recycle.ring /tmp/a /tmp/b)" 50 "after withdraw: pages through the ring"
		gt "$(share_pm recycle.deny_not_eligible recycle.ring /tmp/a /tmp/b)" 900 "after withdraw: ring puts denied as not eligible (per mille)"
		fixture_down || bad "withdraw: pools did not drain"
		eq "$(val recycle.tracked_known)/$(val recycle.tracked_unknown)/$(val recycle.tracked_not_eligible)" 0/0/0 "withdraw: no entry outlives the pool"
		gt "$pm_1_observe" 900 "pp_napi=1: the kernel recycles directly (per mille)"
		[ "$pm_0_observe" -lt 100 ] || bad "pp_napi=0 observe: the kernel should not recycle directly ($pm_0_observe)"
		gt "$pm_0_on" $((pm_1_observe - 50)) "pp_napi=0 on: ppcoal reaches the pp_napi=1 share"
	else
		echo "  (6.1: no page_pool_params.napi; recycle-drop covers the tracker)"
	fi
	end
	cleanup
}

# 6.12 veth with an XDP program: skbs copied into veth's page_pool, which
# has no .napi, so upstream never recycles them directly; ppcoal does.
t_recycle_veth_xdp() {
	begin recycle-veth-xdp
	ppcoal_load coalesce=off virtio=off recycle=observe || bad "insmod ppcoal"
	if ! on_61; then
		"$IP" link add vxa type veth peer name vxb || bad "veth pair"
		"$IP" link set vxb netns peer
		"$IP" addr add 198.20.0.1/24 dev vxa
		"$IP" link set vxa up
		"$IP" -n peer addr add 198.20.0.2/24 dev vxb
		"$IP" -n peer link set vxb up
		"$IP" netns exec peer xdppass vxb >/tmp/xdp.out 2>&1 &
		xp=$!
		sleep 1
		grep -q attached /tmp/xdp.out || bad "xdppass: $(cat /tmp/xdp.out)"
		blackhole_up vxa vxb 198.20.0.77
		for m in observe on; do
			echo $m >$P/recycle
			if [ $m = on ]; then flood_until_known 198.20.0.77; else drop_flood 1 198.20.0.77; fi
			snap /tmp/a
			drop_flood 2 198.20.0.77
			sleep 0.3
			snap /tmp/b
			pm=$(direct_pm /tmp/a /tmp/b)
			echo "METRIC $(uname -r) recycle-veth-xdp mode=$m direct_pm=$pm ppcoal_direct=$(delta recycle.direct /tmp/a /tmp/b) upstream_direct=$(delta recycle.upstream_direct /tmp/a /tmp/b) ring=$(delta recycle.ring /tmp/a /tmp/b)"
			# 2 s of flood: 257-513 pages on the Debian 13 debug
			# kernel, thousands on the stock ones
			gt "$(sumd /tmp/a /tmp/b recycle.ring recycle.direct)" 200 "$m: veth page-pool pages on the recycle path"
			case $m in
			observe) [ "$pm" -lt 100 ] || bad "observe: upstream should not recycle veth's pool directly ($pm)" ;;
			on) gt "$pm" 900 "on: ppcoal recycles veth's pool directly (per mille)" ;;
			esac
		done
		# veth's row is pinned to the functions its audit read (issue
		# 36): on a Debian version this machine's record (local_verified)
		# found them changed in, the row is off, alone (the recycle path
		# runs), with the function named in stats and dmesg; where it has
		# no word on them (none), the row is off too; where it found them
		# equal, the row is used
		V=6.12.999-1
		for r in veth_poll none ok; do
			rmmod ppcoal || bad "rmmod ppcoal"
			# vmxnet3 and stmmac, the family's other audited
			# drivers, recorded equal: only veth's row varies
			lv=$V/coalesce/ok,$V/recycle/ok,$V/virtio/ok,$V/audit_vmxnet3/ok,$V/audit_stmmac/ok
			[ $r = none ] || lv=$lv,$V/audit_veth/$r
			ppcoal_load coalesce=off virtio=off recycle=on test_debian_version=$V local_verified=$lv ||
				bad "insmod ppcoal, $V, veth's record $r"
			eq "$(val recycle.state)" attached "veth's record $r: recycle attached"
			if [ $r = ok ]; then flood_until_known 198.20.0.77; else drop_flood 1 198.20.0.77; fi
			snap /tmp/a
			drop_flood 2 198.20.0.77
			sleep 0.3
			snap /tmp/b
			pm=$(direct_pm /tmp/a /tmp/b)
			echo "METRIC $(uname -r) recycle-veth-xdp pinned record=$r direct_pm=$pm not_eligible=$(delta recycle.deny_not_eligible /tmp/a /tmp/b)"
			if [ $r = ok ]; then
				gt "$pm" 900 "veth's functions equal in $V: ppcoal recycles veth's pool directly (per mille)"
				wrapped veth_poll || bad "veth's functions equal in $V: veth_poll not wrapped: $(val recycle.poll_marks)"
				eq "$(val recycle.audited_off)" none "veth's functions equal in $V: no row off"
			elif [ $r = none ]; then
				gt "$(sumd /tmp/a /tmp/b recycle.ring recycle.direct)" 200 "no record of veth's functions in $V: veth page-pool pages on the recycle path"
				eq "$(delta recycle.direct /tmp/a /tmp/b)" 0 "no record of veth's functions in $V: no direct put"
				eq "$(val recycle.audited_off)" "veth (its audit is not verified for Debian $V)" "no record of veth's functions in $V: the row off, named"
			else
				eq "$(delta recycle.direct /tmp/a /tmp/b)" 0 "veth_poll changed in $V: no direct put"
				# its poll not wrapped (issue 37): freed in no marked poll
				! wrapped veth_poll || bad "veth_poll changed in $V: veth_poll wrapped: $(val recycle.poll_marks)"
				gt "$(delta recycle.deny_owner_elsewhere /tmp/a /tmp/b)" 200 "veth_poll changed in $V: veth's pages freed in no marked poll"
				eq "$(val recycle.audited_off)" "veth (veth_poll differs in Debian $V from the audited sources)" "veth_poll changed in $V: the row off, named"
				dmesg_has "recycle: veth is not treated as an audited driver here: veth_poll differs in Debian $V" ||
					bad "veth_poll changed in $V: no dmesg line"
			fi
		done
		kill $xp
		wait $xp
		"$IP" link del vxa
		sleep 0.5
		eq "$(val recycle.tracked_known)/$(val recycle.tracked_unknown)" 0/0 "veth deleted: no owner entry left"
	else
		echo "  (6.1: veth has no page_pool; nothing to test)"
	fi
	end
	cleanup
}

# A real page-pool driver (issue 36): QEMU's vmxnet3, two NICs on a hub of
# their own (the vmxnet3 boots), vb moved to netns peer. vmxnet3's pools
# serve only with an XDP program in driver mode (vmxnet3_drv.c:2165-2167 of
# 6.12.118). 6.1: no page pool, nothing to do and no error. 6.12: XDP_PASS
# on both ends, floods both ways into a blackhole neighbour (dropped in the
# receiver's poll): recycle=on puts vmxnet3's pages straight into its pools
# (its audited rows, pinned); removing XDP and taking a device down
# destroy its pools, and ppcoal forgets their owners (no entry left).
vmx_ifaces() {
	for d in /sys/class/net/*; do
		[ "$(basename "$(readlink "$d/device/driver" 2>/dev/null)")" = vmxnet3 ] && basename "$d"
	done
}
# vmx_flood FROM_NS ADDR SECS: a drop flood from netns FROM_NS ("" or peer)
vmx_flood() {
	if [ -n "$1" ]; then "$IP" netns exec "$1" udpflood "$2" 9 "$3" 64 >/dev/null; else udpflood "$2" 9 "$3" 64 >/dev/null; fi
}
# vmx_ping: wait up to 20 s for the peer to answer
vmx_ping() {
	local i=0
	while ! ping -c 1 -W 1 198.21.0.2 >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 20 ] || { bad "no ping over vmxnet3"; return 1; }
	done
}
t_recycle_vmxnet3() {
	begin recycle-vmxnet3
	set -- $(vmx_ifaces)
	if [ $# != 2 ]; then
		bad "two vmxnet3 interfaces expected, found: $*"
		end
		return
	fi
	va=$1 vb=$2
	"$IP" link set "$vb" netns peer || bad "$vb to netns peer"
	"$IP" addr add 198.21.0.1/24 dev "$va"
	"$IP" link set "$va" up
	"$IP" -n peer addr add 198.21.0.2/24 dev "$vb"
	"$IP" -n peer link set "$vb" up
	vmx_ping
	# 6.12's vmxnet3 itself trips lockdep's RCU checks with XDP (6.12.117
	# vmxnet3_xdp.c:58 under rtnl at set-up, :403 in the poll: plain
	# rcu_dereference() of the program), once per site. Attach and use XDP
	# first with ppcoal not loaded, between console markers: what the debug
	# kernel reports there is the driver's own (tests/vm/parse-log.sh
	# leaves it out of dmesg-clean and says so).
	if ! on_61 && ! grep -q '^ppcoal ' /proc/modules; then
		echo "PPCOAL-UNLOADED-BEGIN" >/dev/kmsg
		xdppass "$va" >/tmp/xdpa.out 2>&1 &
		xa=$!
		sleep 2
		vmx_ping
		kill $xa
		wait $xa
		echo "PPCOAL-UNLOADED-END" >/dev/kmsg
	fi
	ppcoal_load coalesce=off virtio=off recycle=on || bad "insmod ppcoal"
	[ "$(val recycle.calls)" != MISSING ] || bad "no recycle.calls in the stats"
	# the blackholes: an unassigned address of each side's subnet, at the
	# other side's MAC (IP forwarding is off: dropped in the receiver's poll)
	blackhole_up "$va" "$vb" 198.21.0.77
	"$IP" -n peer neigh replace 198.21.0.78 lladdr "$(cat /sys/class/net/$va/address)" dev "$vb" nud permanent
	if on_61; then
		snap /tmp/a
		ra=$(cat /sys/class/net/$va/statistics/rx_packets)
		rb=$(peer_rx "$vb")
		vmx_flood "" 198.21.0.77 2
		vmx_flood peer 198.21.0.78 2
		snap /tmp/b
		gt $(($(peer_rx "$vb") - rb)) 1000 "6.1: the flood reached $vb"
		gt $(($(cat /sys/class/net/$va/statistics/rx_packets) - ra)) 1000 "6.1: the flood reached $va"
		eq "$(delta recycle.calls /tmp/a /tmp/b)" 0 "6.1: vmxnet3 has no page pool, no page-pool page freed"
		"$IP" -n peer link set "$vb" netns 1 2>/dev/null
		end
		cleanup
		return
	fi
	# the interrupt mode decides the poll (6.12.118 vmxnet3_drv.c:4252-4262):
	# MSI-X (ppcoal.vmxintr=3, the default) vmxnet3_poll_rx_only per RX
	# queue, INTx (1, the boot with pci=nomsi) vmxnet3_poll; both rows live
	want=$(karg vmxintr 3)
	poll=vmxnet3_poll_rx_only
	[ "$want" = 3 ] || poll=vmxnet3_poll
	for d in "$va" "$vb"; do
		dmesg | grep -q "$d: intr type $want," || bad "$d: not in interrupt mode $want: $(dmesg | grep "intr type" | tr '\n' ' ')"
	done
	for r in vmxnet3_poll_rx_only vmxnet3_poll; do
		case ",$(val recycle.audited_drivers | tr -d ' ')," in
		*",vmxnet3:$r,"*) ;;
		*) bad "vmxnet3's row $r not listed: $(val recycle.audited_drivers)" ;;
		esac
	done
	case "$(val recycle.audited_off)" in *vmxnet3*) bad "vmxnet3's rows off: $(val recycle.audited_off)" ;; esac
	echo "  vmxnet3 in interrupt mode $want: $poll polls"
	"$IP" netns exec peer xdppass "$vb" >/tmp/xdpb.out 2>&1 &
	xb=$!
	xdppass "$va" >/tmp/xdpa.out 2>&1 &
	xa=$!
	sleep 2
	grep -q attached /tmp/xdpb.out || bad "xdppass $vb: $(cat /tmp/xdpb.out)"
	grep -q attached /tmp/xdpa.out || bad "xdppass $va: $(cat /tmp/xdpa.out)"
	# the link comes back after XDP's quiesce and re-activation
	vmx_ping
	k=0
	for dir in "to-peer  198.21.0.77" "from-peer peer 198.21.0.78"; do
		set -- $dir
		name=$1
		shift
		[ $# = 2 ] || set -- "" "$1"
		# one more pool known at least: the receiving side's (its queues')
		k=$((k + 1))
		i=0
		while [ "$(val recycle.tracked_known)" -lt $k ] && [ $i -lt 15 ]; do
			vmx_flood "$1" "$2" 1
			i=$((i + 1))
		done
		snap /tmp/a
		vmx_flood "$1" "$2" 2
		sleep 0.3
		snap /tmp/b
		pm=$(direct_pm /tmp/a /tmp/b)
		echo "METRIC $(uname -r) recycle-vmxnet3 intr=$want $name direct_pm=$pm direct=$(delta recycle.direct /tmp/a /tmp/b) ring=$(delta recycle.ring /tmp/a /tmp/b) not_eligible=$(delta recycle.deny_not_eligible /tmp/a /tmp/b)"
		gt "$(sumd /tmp/a /tmp/b recycle.ring recycle.direct)" 200 "$name: vmxnet3 page-pool pages on the recycle path"
		gt "$pm" 900 "$name: ppcoal recycles vmxnet3's pool directly ($poll, per mille)"
		eq "$(delta recycle.deny_not_eligible /tmp/a /tmp/b)/$(val recycle.tracked_not_eligible /tmp/b)" 0/0 "$name: no vmxnet3 pool judged not eligible"
		check_sums /tmp/a /tmp/b
	done
	known=$(val recycle.tracked_known)
	[ "$known" -ge 2 ] || bad "both sides' pools known ($known)"
	# XDP removed from va: its pools are destroyed (quiesce), their owners
	# forgotten; the device down (peer): the same for vb's. Every pool
	# must drain: page_pool's release tracepoint at each destroy attempt,
	# the last one of each pool with no page in flight.
	TR=/sys/kernel/tracing
	echo >$TR/trace
	echo 1 >$TR/events/page_pool/page_pool_release/enable || bad "page_pool_release tracepoint"
	snap /tmp/a
	kill $xa
	wait $xa
	sleep 1
	snap /tmp/b
	gt "$(delta recycle.owners_forgotten_destroy /tmp/a /tmp/b)" 0 "XDP removed from $va: its pools destroyed, their owners forgotten"
	"$IP" -n peer link set "$vb" down
	sleep 1
	snap /tmp/c
	gt "$(delta recycle.owners_forgotten_destroy /tmp/b /tmp/c)" 0 "$vb down: its pools destroyed, their owners forgotten"
	eq "$(val recycle.tracked_known)/$(val recycle.tracked_unknown)" 0/0 "no owner entry left"
	kill $xb
	wait $xb
	sleep 1
	echo 0 >$TR/events/page_pool/page_pool_release/enable
	grep 'page_pool_release:' $TR/trace | sed 's/.*page_pool=\([^ ]*\) inflight=\([-0-9]*\).*/\1 \2/' >/tmp/ppr.txt
	npools=$(awk '{ last[$1] = $2 } END { print length(last) }' /tmp/ppr.txt)
	left=$(awk '{ last[$1] = $2 } END { for (p in last) if (last[p] != 0) printf "%s:%s ", p, last[p] }' /tmp/ppr.txt)
	ge "$npools" 2 "both sides' pools destroyed (page_pool_release seen)"
	eq "$left" "" "every destroyed vmxnet3 pool drained (pool:inflight at its last release attempt)"
	echo "METRIC $(uname -r) recycle-vmxnet3 pools_destroyed=$npools release_attempts=$(wc -l </tmp/ppr.txt)"
	"$IP" -n peer link set "$vb" netns 1 2>/dev/null
	end
	cleanup
}
