# ppcoal guest tests: hooking (busybox sh).
# Loading and unloading, the hooks in ftrace, the shadows' drift guard,
# the parameters, ftrace_enabled, bad input, an IPMODIFY conflict.
# Sourced by run-guest.sh after lib.sh: defines t_NAME for each test NAME
# of tests.tsv in this file (- as _) and runs none of them.

# ---------------------------------------------------------------------------
t_load() {
	begin load
	# the defaults (the PPC_PATH table): recycle off, the others on
	expect "insmod ppcoal" ppcoal_load
	eq "$(cat $P/coalesce) $(cat $P/recycle) $(cat $P/virtio) $(cat $P/mode)" "on off on mixed" "default modes"
	! hooked "$(val recycle_target)" || bad "recycle hooked while off by default"
	expect "rmmod ppcoal" rmmod ppcoal
	expect "insmod ppcoal mode=observe" ppcoal_load mode=observe
	rt=$(val recycle_target)
	for p in coalesce recycle virtio; do
		eq "$(val $p.state)" attached "$p.state"
		eq "$(cat $P/$p)" observe "$p parameter"
	done
	for f in skb_try_coalesce "$rt" build_skb page_to_skb; do
		hooked "$f" || bad "$f not in enabled_functions"
	done
	check_stats_format
	eq "$(val coalesce.verified) $(val recycle.verified) $(val virtio.verified)" "listed listed listed" \
		"every shadow verified for Debian $(val debian_version) by the build's table"
	hook_calls_ok
	if [ "$(hook_calls_want)" = direct ]; then
		# the patched sites call the trampolines themselves
		# (the kernel prints a direct call's target on the line after
		# the function's: "\tdirect-->TARGET")
		for f in skb_try_coalesce "$rt" build_skb; do
			grep -A1 "^$f " /sys/kernel/tracing/enabled_functions | grep -q "direct-->ppc_.*_tramp" ||
				bad "$f: no direct call to a ppcoal trampoline: $(grep -A1 "^$f " /sys/kernel/tracing/enabled_functions | tr '\n\t' '  ')"
		done
	fi
	expect "rmmod ppcoal" rmmod ppcoal
	for f in skb_try_coalesce "$rt" build_skb page_to_skb; do
		! hooked "$f" || bad "$f still hooked after rmmod"
	done
	[ ! -e "$S" ] || bad "stats still present after rmmod"
	end
	cleanup
}

# The drift guard: on a Debian source version the shadows were not
# verified against, every path stays off with the reason and the fix; the
# machine's own record (local_verified=, written by "ppcoal verify") lets a
# path equal to a verified one run, and one that differs stays off naming
# the function; accept_unverified=1 runs them at the administrator's risk.
# test_debian_version and accept_unverified taint the kernel (TAINT_USER,
# bit 6 of /proc/sys/kernel/tainted), each saying so.
t_unverified() {
	begin unverified
	real=$(uname -v | sed -n 's/.*Debian \([^ ]*\).*/\1/p')
	[ $(($(cat /proc/sys/kernel/tainted) & 64)) = 0 ] || bad "kernel tainted U before any risky option"
	ppcoal_load test_debian_version=6.1.0-0 || bad "insmod (assumed 6.1.0-0)"
	[ $(($(cat /proc/sys/kernel/tainted) & 64)) = 64 ] || bad "test_debian_version did not taint the kernel"
	dmesg_has "test_debian_version: a test-only option is set - tainting kernel" || bad "no taint line for test_debian_version"
	eq "$(val debian_version)" 6.1.0-0 "stats name the assumed version"
	for p in coalesce recycle virtio; do
		eq "$(val $p.verified)" no "$p not verified for 6.1.0-0"
		eq "$(val $p.state)" "unavailable: not verified for Debian 6.1.0-0" "$p.state"
		eq "$(cat $P/$p)" off "$p left off"
		echo on >$P/$p 2>/dev/null && bad "$p=on accepted on an unverified kernel"
		eq "$(cat $P/$p)" off "$p still off after the refused write"
	done
	hooked skb_try_coalesce && bad "skb_try_coalesce hooked on an unverified kernel"
	dmesg_has "not verified for Debian 6.1.0-0; this path stays off" || bad "no dmesg line for the refusal"
	dmesg_has "Verify this kernel with: ppcoal verify --record-local $(uname -r), then reload ppcoal" ||
		bad "the dmesg line does not name the fix"
	rmmod ppcoal || bad "rmmod"
	# the local record: coalesce equal, recycle changed, virtio's entry for
	# another version (ignored); a later entry of a path wins
	ppcoal_load test_debian_version=6.1.0-0 mode=observe \
		local_verified=6.1.0-0/coalesce/skb_try_coalesce,6.1.0-0/coalesce/ok,6.1.0-0/recycle/page_pool_destroy,6.1.0-1/virtio/ok ||
		bad "insmod local_verified"
	eq "$(val coalesce.verified)" local "coalesce verified by the local record"
	eq "$(val coalesce.state)" attached "coalesce attached on its local verification"
	eq "$(val recycle.verified)" no "recycle not verified (a function differs)"
	eq "$(val recycle.state)" "unavailable: page_pool_destroy differs in Debian 6.1.0-0 from the verified sources" "recycle.state names the function"
	dmesg_has "recycle: unavailable: page_pool_destroy differs in Debian 6.1.0-0 from the sources ppcoal was verified against; this path stays off, the others keep working. See: ppcoal verify --kernel $(uname -r)" ||
		bad "no dmesg line naming the changed function"
	eq "$(val virtio.verified)" no "virtio: another version's entry is not this one's"
	rmmod ppcoal || bad "rmmod"
	# a malformed record is said and ignored: ppcoal loads, nothing is
	# verified locally; an entry of a path this build does not know is skipped
	for v in 6.1.0-0/coalesce 6.1.0-0/coalesce/o-k '6.1.0-0/coalesce/ok,' 6.1.0-0/coalesce/ok,,6.1.0-0/virtio/ok '6.1.0-0;/coalesce/ok'; do
		ppcoal_load test_debian_version=6.1.0-0 "local_verified=$v" || { bad "load with a malformed local_verified=$v failed"; continue; }
		eq "$(val coalesce.verified)" no "local_verified=$v ignored"
		dmesg_has "local_verified: invalid value \"$v\", ignored: expected VERSION/PATH/RESULT entries" ||
			bad "no dmesg line for local_verified=$v"
		rmmod ppcoal || bad "rmmod"
	done
	ppcoal_load test_debian_version=6.1.0-0 local_verified=6.1.0-0/newpath/ok,6.1.0-0/virtio/ok || bad "insmod (an unknown path's entry)"
	eq "$(val virtio.verified)" local "an unknown path's entry skipped, the others applied"
	rmmod ppcoal || bad "rmmod"
	# accept_unverified=1 runs the unverified paths, never one whose record
	# names a function that differs
	ppcoal_load test_debian_version=6.1.0-0 accept_unverified=1 mode=observe local_verified=6.1.0-0/recycle/page_pool_destroy ||
		bad "insmod accept_unverified=1"
	dmesg_has "accept_unverified=1: a dangerous option is set - tainting kernel" || bad "no taint line for accept_unverified"
	eq "$(val recycle.state)" "unavailable: page_pool_destroy differs in Debian 6.1.0-0 from the verified sources" \
		"accept_unverified=1 leaves a path with a changed function off"
	for p in coalesce virtio; do
		eq "$(val $p.state)" attached "$p attached with accept_unverified=1"
		eq "$(val $p.verified)" no "$p still says not verified with accept_unverified=1"
	done
	eq "$(val accept_unverified)" 1 "stats say accept_unverified"
	rmmod ppcoal || bad "rmmod"
	ppcoal_load test_debian_version=6.1.0-0 accept_unverified=1 mode=observe || bad "insmod accept_unverified=1"
	for p in coalesce recycle virtio; do
		eq "$(val $p.state)" attached "$p attached with accept_unverified=1"
		eq "$(val $p.verified)" no "$p still says not verified with accept_unverified=1"
	done
	eq "$(val accept_unverified)" 1 "stats say accept_unverified"
	rmmod ppcoal || bad "rmmod"
	ppcoal_load mode=observe || bad "insmod"
	eq "$(val debian_version)" "$real" "the running kernel's version by default"
	eq "$(val accept_unverified)" 0 "accept_unverified 0 by default"
	rmmod ppcoal || bad "rmmod"
	end
	cleanup
}

t_toggle() {
	begin toggle
	ppcoal_load mode=observe || bad "insmod"
	traffic_start -l 512
	# ppcoal.toggles=N rounds of every transition (default 12)
	rounds=$(karg toggles 12)
	i=0
	while [ $i -lt "$rounds" ]; do
		for p in coalesce recycle virtio mode; do
			for m in off on observe; do
				echo $m >$P/$p || bad "write $m to $p"
			done
		done
		i=$((i + 1))
	done
	traffic_stop
	[ ! -s /tmp/traffic.err ] || bad "traffic failed during toggles: $(wc -l </tmp/traffic.err) clients, first: $(head -n 1 /tmp/traffic.err)"
	eq "$(cat $P/mode)" observe "master reads observe"
	echo off >$P/coalesce
	eq "$(cat $P/mode)" mixed "master reads mixed"
	eq "$(val coalesce.state)" detached "coalesce detached when off"
	hooked skb_try_coalesce && bad "skb_try_coalesce hooked while off"
	snap /tmp/a
	iperf 2 -l 256 >/dev/null || bad "iperf3 failed"
	snap /tmp/b
	eq "$(delta coalesce.calls /tmp/a /tmp/b)" 0 "no coalesce calls while off"
	gt "$(delta virtio.page_to_skb_calls /tmp/a /tmp/b)" 0 "virtio still counting"
	echo observe >$P/coalesce || bad "coalesce back to observe"
	echo off >$P/virtio || bad "virtio off"
	snap /tmp/a
	iperf 2 -l 256 >/dev/null || bad "iperf3 failed"
	snap /tmp/b
	gt "$(delta coalesce.calls /tmp/a /tmp/b)" 0 "coalesce counting again"
	eq "$(delta virtio.page_to_skb_calls /tmp/a /tmp/b)" 0 "virtio silent while off"
	echo 1 >$P/reset_stats || bad "reset_stats"
	eq "$(val coalesce.calls)" 0 "reset zeroes counters"
	end
	cleanup
}

# Load and unload under traffic, mode on and observe in turn, 20 times
# (ppcoal.uulcycles: the CI boot runs 8, each about 3.6 s under TCG; the
# races of these cycles with parameter writers are rmmod-race's).
t_unload_under_load() {
	begin unload-under-load
	traffic_start -l 256
	i=0
	cycles=$(karg uulcycles 20)
	while [ $i -lt "$cycles" ]; do
		m=on
		[ $((i % 2)) = 0 ] || m=observe
		ppcoal_load mode=$m || bad "insmod #$i"
		sleep 0.2
		rmmod ppcoal || bad "rmmod #$i"
		i=$((i + 1))
	done
	traffic_stop
	[ ! -s /tmp/traffic.err ] || bad "traffic failed: $(wc -l </tmp/traffic.err) clients, first: $(head -n 1 /tmp/traffic.err)"
	! grep -q '^ppcoal ' /proc/modules || bad "ppcoal still loaded"
	r=$(iperf 1) || bad "traffic after the loop"
	end
	cleanup
}

# Parameter writes racing module removal (issue 12.1): sysfs parameters
# stay writable until free_module(), after ppcoal's exit; a write that
# re-attached a hook then left ftrace calling freed module text (reading
# enabled_functions oopsed in t_show). Writers flip every parameter while
# ppcoal is removed and loaded 50 times under traffic (ppcoal.rrcycles).
t_rmmod_race() {
	begin rmmod-race
	traffic_start -l 256
	wp=""
	for w in 1 2; do
		(while [ ! -e /tmp/rr.stop ]; do
			for p in coalesce recycle virtio mode clone_policy recycle_drivers; do
				for m in on off observe; do
					echo $m >$P/$p
				done
			done
		done) 2>/dev/null &
		wp="$wp $!"
	done
	# ppcoal.rrcycles=N: load/unload cycles (the multi-threaded boots
	# run fewer: a cycle takes about 4 s on 4 vCPUs there)
	cycles=$(karg rrcycles 50)
	[ "$cycles" -ge 1 ] 2>/dev/null || { bad "ppcoal.rrcycles=$cycles: want a count of at least 1"; cycles=1; }
	i=0
	while [ $i -lt "$cycles" ]; do
		ppcoal_load mode=on || bad "insmod #$i"
		[ $((i % 5)) = 0 ] && sleep 0.3
		rmmod ppcoal || bad "rmmod #$i"
		n=$(wc -l </sys/kernel/tracing/enabled_functions)
		[ "$n" = 0 ] || { bad "#$i: $n functions still traced after rmmod: $(head -n 3 /sys/kernel/tracing/enabled_functions | tr '\n' ' ')"; break; }
		i=$((i + 1))
	done
	touch /tmp/rr.stop
	for w in $wp; do wait $w; done
	rm -f /tmp/rr.stop
	traffic_stop
	eq "$i" "$cycles" "load/unload cycles completed"
	ppcoal_load mode=on || bad "insmod after the race"
	echo on >$P/recycle || bad "mode write after the race"
	rmmod ppcoal || bad "final rmmod"
	eq "$(wc -l </sys/kernel/tracing/enabled_functions)" 0 "nothing traced after the final rmmod"
	dmesg | grep -q "being unloaded; mode writes are refused" && echo "  (writes refused during exit were seen)"
	end
	cleanup
}

# kernel.ftrace_enabled=0 would silently stop every hook, the teardown
# callbacks included (issue 12.2): ppcoal's ops are FTRACE_OPS_FL_PERMANENT,
# so the sysctl write is refused while ppcoal is attached, accepted after.
t_ftrace_permanent() {
	begin ftrace-permanent
	F=/proc/sys/kernel/ftrace_enabled
	ppcoal_load mode=on || bad "insmod"
	hook_calls_ok
	if echo 0 >$F 2>/dev/null; then
		bad "ftrace_enabled=0 accepted while ppcoal is attached"
		echo 1 >$F
	fi
	eq "$(cat $F)" 1 "ftrace_enabled still 1"
	hooked skb_try_coalesce || bad "skb_try_coalesce no longer hooked"
	rmmod ppcoal || bad "rmmod"
	echo 0 >$F 2>/dev/null || bad "ftrace_enabled=0 refused after rmmod"
	eq "$(cat $F)" 0 "ftrace_enabled off without ppcoal"
	# loading while ftrace is off: every path refuses with its reason
	ppcoal_load mode=on || bad "insmod with ftrace off"
	for p in coalesce recycle; do
		case "$(val $p.state)" in
		"unavailable: "*ftrace_enabled*) ;;
		*) bad "$p.state with ftrace off: $(val $p.state)" ;;
		esac
		eq "$(cat $P/$p)" off "$p left off with ftrace off"
	done
	eq "$(wc -l </sys/kernel/tracing/enabled_functions)" 0 "nothing traced with ftrace off"
	rmmod ppcoal || bad "rmmod (ftrace off)"
	echo 1 >$F || bad "ftrace_enabled back to 1"
	# the coalesce redirect alone: its ops is PERMANENT, or with direct
	# calls the guard is (no callback hook of another path holds it)
	ppcoal_load coalesce=observe recycle=off virtio=off || bad "insmod coalesce alone"
	eq "$(val coalesce.state)" attached "coalesce attached"
	if echo 0 >$F 2>/dev/null; then
		bad "ftrace_enabled=0 accepted with only the coalesce redirect ($(val hook_calls)) attached"
		echo 1 >$F
	fi
	echo off >$P/coalesce || bad "coalesce=off"
	echo 0 >$F 2>/dev/null || bad "ftrace_enabled=0 refused with every path off"
	echo 1 >$F || bad "ftrace_enabled back to 1 (2)"
	rmmod ppcoal || bad "rmmod (coalesce alone)"
	end
	cleanup
}

t_bad_input() {
	begin bad-input
	ppcoal_load mode=observe || bad "insmod"
	for v in bogus "" -1 99999999999 onn "on off" OBSERVE; do
		for p in coalesce mode; do
			before=$(cat $P/$p)
			if echo "$v" >$P/$p 2>/dev/null; then
				bad "$p accepted \"$v\""
			fi
			eq "$(cat $P/$p)" "$before" "$p unchanged after \"$v\""
		done
	done
	dmesg_has 'coalesce: invalid mode "bogus"' || bad "no dmesg line naming bogus"
	dmesg_has 'mode: invalid mode "99999999999"' || bad "no dmesg line naming 99999999999"
	printf 'x' >$P/reset_stats 2>/dev/null && bad "reset_stats accepted x"
	dmesg_has 'reset_stats: invalid value "x"' || bad "no dmesg line for reset_stats"
	rmmod ppcoal
	ppcoal_load coalesce=bogus 2>/dev/null && bad "insmod accepted coalesce=bogus"
	! grep -q '^ppcoal ' /proc/modules || bad "loaded with a bad parameter"
	eq "$(ls -l $P/coalesce 2>/dev/null | cut -c1-10)" "" "no parameters left behind"
	end
	cleanup
}

# With direct calls (issue 36.7): a failed register_ftrace_direct_multi()
# (6.1) frees what a listed ftrace_ops may still read, and a failed
# register_ftrace_direct() (6.12) clears the callback a CPU may be about to
# call (ppcoal_direct.c), so ppcoal must refuse the held function before it
# calls either; the conflict module's kprobe counts its calls (the count
# above 0 shows it counts: recycle's and virtio's direct hooks register).
t_conflict() {
	begin conflict
	cnt=""
	if [ "$PPC_LOAD_DIRECT" = 1 ]; then
		case $(uname -r) in
		6.1.*) cnt=register_ftrace_direct_multi ;;
		*) cnt=register_ftrace_direct ;;
		esac
	fi
	insmod /ko/ppcoal_conflict.ko ${cnt:+count=$cnt} || bad "insmod ppcoal_conflict"
	CN=/sys/module/ppcoal_conflict/parameters/counted
	ppcoal_load mode=observe || bad "insmod ppcoal despite the conflict"
	hook_calls_ok
	if [ -n "$cnt" ]; then
		gt "$(cat $CN)" 0 "$cnt calls counted (recycle's and virtio's direct hooks)"
		c0=$(cat $CN)
		echo observe >$P/coalesce 2>/dev/null && bad "coalesce=observe accepted while unavailable"
		eq "$(($(cat $CN) - c0))" 0 "coalesce refused before $cnt()"
	fi
	case "$(val coalesce.state)" in
	"unavailable: skb_try_coalesce is already modified by "*"IPMODIFY user (a livepatch?)"*) ;;
	*) bad "coalesce.state: $(val coalesce.state)" ;;
	esac
	eq "$(cat $P/coalesce)" off "coalesce mode off"
	eq "$(val recycle.state)" attached "recycle attached"
	eq "$(val virtio.state)" attached "virtio attached"
	dmesg_has "coalesce: unavailable: skb_try_coalesce is already modified" || bad "no dmesg line"
	echo on >$P/coalesce 2>/dev/null && bad "coalesce=on accepted while unavailable"
	eq "$(cat $P/coalesce)" off "coalesce still off"
	snap /tmp/a
	r=$(iperf 1) || bad "traffic"
	snap /tmp/b
	gt "$(delta virtio.page_to_skb_calls /tmp/a /tmp/b)" 0 "virtio works"
	eq "$(delta coalesce.calls /tmp/a /tmp/b)" 0 "coalesce not running"
	# once the other user is gone, the path can be switched on
	rmmod ppcoal_conflict || bad "rmmod ppcoal_conflict"
	echo observe >$P/coalesce || bad "coalesce=observe after the conflict ended"
	eq "$(val coalesce.state)" attached "coalesce attached after the conflict"
	# the other order: a livepatch-like user cannot take the function from
	# ppcoal, whether ppcoal holds it with an IPMODIFY ops or a direct call
	insmod /ko/ppcoal_conflict.ko 2>/dev/null && bad "ppcoal_conflict loaded over ppcoal's $(val hook_calls) hook"
	grep -q '^ppcoal_conflict ' /proc/modules && rmmod ppcoal_conflict
	eq "$(val coalesce.state)" attached "coalesce still attached"
	snap /tmp/a
	r=$(iperf 1) || bad "traffic"
	snap /tmp/b
	gt "$(delta coalesce.calls /tmp/a /tmp/b)" 0 "coalesce running"
	end
	cleanup
}
