# ppcoal guest tests: coexistence (busybox sh).
# Other users of the hooked functions' call sites beside ppcoal: BPF
# fentry/fexit trampolines and a kprobe with a post handler.
# Sourced by run-guest.sh after lib.sh: defines t_NAME for each test NAME
# of tests.tsv in this file (- as _) and runs none of them.

# ---------------------------------------------------------------------------
# BPF fentry and fexit programs (tests/tools/bpffentry.c) on the two
# functions ppcoal redirects, skb_try_coalesce and the page-pool page free,
# and on build_skb, which the virtio path hooks,
# as bpftrace kfunc/kretfunc probes would attach: a BPF trampoline, itself
# an ftrace direct call. With ftrace callbacks it shares the site with
# ppcoal's IPMODIFY ops in either order, and both run on every call (an
# fexit trampoline calls the redirected address: ppcoal's shadow); ppcoal
# unloads under traffic beside it. With direct calls (direct_calls=1)
# whichever comes second is refused with EBUSY (6.1
# kernel/trace/ftrace.c:5714; docs/benchmarks.md "Direct calls") and the first keeps
# working.

# build_calls: the build_skb calls ppcoal's hook counted in that window
# (build_window's, lib.sh)
build_calls() { sumd /tmp/a /tmp/b virtio.rx_build_skb virtio.other_build_skb; }
# bpf_func PATH: the function ppcoal's PATH redirects, by the kernel's
# version (ppcoal may not be loaded)
bpf_func() {
	case $1-$(uname -r) in
	coalesce-*) echo skb_try_coalesce ;;
	recycle-6.1.*) echo page_pool_return_skb_page ;;
	recycle-*) echo napi_pp_put_page ;;
	esac
}
# bpf_start KIND FUNC: attach a KIND (fentry or fexit) program to FUNC
# (its output in /tmp/bpf.out); fails when it exits instead (a refused
# attach). The old output goes first: the shell truncates the file only in
# the child, after the fork
bpf_start() {
	bpfwait=0
	rm -f /tmp/bpf.out
	bpfopt=
	[ "$1" = fexit ] && bpfopt=-x
	bpffentry $bpfopt "$2" >/tmp/bpf.out 2>&1 &
	bpfpid=$!
	while [ $bpfwait -lt 100 ]; do
		grep -q "^bpffentry: attached" /tmp/bpf.out && return 0
		kill -0 "$bpfpid" 2>/dev/null || { wait "$bpfpid"; return 1; }
		sleep 0.1
		bpfwait=$((bpfwait + 1))
	done
	echo "bpffentry: not attached after 10 s"
	kill -TERM "$bpfpid" 2>/dev/null
	wait "$bpfpid"
	return 1
}
# bpf_count: the program's count so far (bpffentry prints it on SIGUSR1)
bpf_count() {
	bpfn=$(grep -c " count " /tmp/bpf.out)
	kill -USR1 "$bpfpid" 2>/dev/null
	bpfwait=0
	while [ "$(grep -c " count " /tmp/bpf.out)" = "$bpfn" ] && [ $bpfwait -lt 50 ]; do
		sleep 0.1
		bpfwait=$((bpfwait + 1))
	done
	awk '$3 == "count" { n = $4 } END { print n == "" ? "MISSING" : n }' /tmp/bpf.out
}
# bpf_stop: detach; bpfcalls is the program's count of calls (not in a
# $(...): the subshell could not wait for the program's exit)
bpf_stop() {
	kill -TERM "$bpfpid" 2>/dev/null
	wait "$bpfpid"
	bpfcalls=$(awk '$3 == "calls" { print $4; f = 1 } END { if (!f) print "MISSING" }' /tmp/bpf.out)
}
# traffic_window LABEL: snapshots /tmp/a and /tmp/b around 1 s of iperf
traffic_window() {
	snap /tmp/a
	iperf 1 >/dev/null || bad "$1: traffic"
	snap /tmp/b
}
# sees_every_call LABEL WHO N SHADOW: WHO's count N of calls, read just
# outside the snapshots, and the shadow's SHADOW over them see the same
# calls: N is at least SHADOW and at most 5 more (a stray frame between a
# count and a snapshot)
sees_every_call() {
	ge "$3" "$4" "$1: $2 runs on each call ppcoal's shadow runs on"
	le "$3" "$(($4 + 5))" "$1: ppcoal's shadow runs on each call $2 runs on"
}
# bpf_both PATH LABEL: traffic, and PATH's shadow and the BPF program each
# see every call
bpf_both() {
	b0=$(bpf_count)
	traffic_window "$2"
	b1=$(bpf_count)
	sh_d=$(delta "$1.calls" /tmp/a /tmp/b)
	gt "$sh_d" 0 "$2: ppcoal's shadow runs"
	sees_every_call "$2" "the BPF program" "$((b1 - b0))" "$sh_d"
	echo "METRIC $(uname -r) bpf-fentry $2: hook_calls=$(val hook_calls) shadow_calls=$sh_d bpf_calls=$((b1 - b0))"
}
# bpf_refused PATH LABEL: the attach failed with EBUSY, PATH's shadow runs
bpf_refused() {
	grep -q "Device or resource busy" /tmp/bpf.out || bad "$2: not EBUSY: $(cat /tmp/bpf.out)"
	eq "$(val "$1.state")" attached "$2: $1 attached"
	traffic_window "$2"
	gt "$(delta "$1.calls" /tmp/a /tmp/b)" 0 "$2: ppcoal's shadow runs"
}
# bpf_first KIND FUNC LABEL: a KIND program on FUNC, then ppcoal (observe)
bpf_first() {
	bpf_start $1 "$2" || bad "$3: $(cat /tmp/bpf.out)"
	ppcoal_load mode=observe || bad "$3: insmod ppcoal beside the BPF program"
}
# refused_for_bpf PATH FUNC OTHER LABEL (direct calls): PATH is unavailable,
# the BPF trampoline on FUNC named as the reason, and OTHER attached
refused_for_bpf() {
	case "$(val $1.state)" in
	"unavailable: $2 is already modified by "*"direct-call user (a BPF trampoline?)"*) ;;
	*) bad "$4: $1.state: $(val $1.state)" ;;
	esac
	eq "$(val $3.state)" attached "$4: $3 attached"
}
# build_both LABEL: 600-byte datagrams; ppcoal's build_skb hook and the
# BPF program each see every call
build_both() {
	b0=$(bpf_count)
	build_window "$1"
	b1=$(bpf_count)
	gt "$(build_calls)" 100 "$1: ppcoal's hook runs"
	sees_every_call "$1" "the BPF program" "$((b1 - b0))" "$(build_calls)"
}
# bpf_unload_beside LABEL: ppcoal unloads under traffic beside the
# program, which then goes on counting calls
bpf_unload_beside() {
	iperf 3 >/dev/null &
	bpfip=$!
	sleep 1
	ppcoal_unload || bad "$1: rmmod ppcoal beside the BPF program, under traffic"
	wait $bpfip || bad "$1: traffic"
	b0=$(bpf_count)
	iperf 1 >/dev/null || bad "$1: traffic after the unload"
	b1=$(bpf_count)
	gt "$((b1 - b0))" 0 "$1: the BPF program runs after ppcoal's unload"
}

t_bpf_fentry() {
	begin bpf-fentry
	# page-pool pages on the page-free path: traffic over the fixture
	fixture_up frag_pool=0 linear=0 || bad "fixture_up"
	for kind in fentry fexit; do
		for path in coalesce recycle; do
			f=$(bpf_func $path)
			other=coalesce
			[ $path = recycle ] || other=recycle
			# ppcoal first
			l="$kind $f, ppcoal first"
			ppcoal_load mode=observe || bad "insmod ppcoal"
			hook_calls_ok "$l"
			if [ "$(val hook_calls)" = direct ]; then
				bpf_start $kind "$f" && { bpf_stop; bad "$l: BPF attached beside a direct call"; }
				bpf_refused $path "$l"
				ppcoal_unload || bad "rmmod ppcoal"
			else
				bpf_start $kind "$f" || bad "$l: $(cat /tmp/bpf.out)"
				bpf_both $path "$l"
				bpf_unload_beside "$l"
				bpf_stop
				ge "$bpfcalls" "$b1" "$l: the final count"
			fi
			# the BPF program first
			l="$kind $f, BPF first"
			bpf_first $kind "$f" "$l"
			if [ "$(val hook_calls)" = direct ]; then
				refused_for_bpf $path "$f" $other "$l"
				traffic_window "$l"
				bpf_stop
				sh_d=$(delta $path.calls /tmp/a /tmp/b)
				gt "$bpfcalls" 0 "$l: the BPF program runs"
				echo "METRIC $(uname -r) bpf-fentry $l: hook_calls=direct shadow_calls=$sh_d bpf_calls=$bpfcalls"
				eq "$sh_d" 0 "$l: ppcoal's $path does not run"
				# once the program is gone, the path can be switched on
				echo observe >"$P/$path" || bad "$l: $path=observe after the BPF program"
				eq "$(val $path.state)" attached "$l: $path attached after the BPF program"
			else
				eq "$(val $path.state)" attached "$l: $path attached"
				bpf_both $path "$l"
				bpf_stop
				ge "$bpfcalls" "$b1" "$l: the final count"
			fi
			ppcoal_unload || bad "rmmod ppcoal"
		done
	done
	fixture_down || bad "pools did not drain"
	# build_skb, the virtio path's hook (a trampoline of its own with
	# direct calls): 600-byte datagrams over the virtio NICs are built in
	# place (virtio-differential); every build_skb call is counted, as
	# rx_build_skb or other_build_skb
	for kind in fentry fexit; do
		l="$kind build_skb, ppcoal first"
		ppcoal_load mode=observe || bad "$l: insmod ppcoal"
		if [ "$(val hook_calls)" = direct ]; then
			bpf_start $kind build_skb && { bpf_stop; bad "$l: BPF attached beside a direct call"; }
			grep -q "Device or resource busy" /tmp/bpf.out || bad "$l: not EBUSY: $(cat /tmp/bpf.out)"
			build_window "$l"
			gt "$(build_calls)" 100 "$l: ppcoal's hook runs"
		else
			bpf_start $kind build_skb || bad "$l: $(cat /tmp/bpf.out)"
			build_both "$l"
			bpf_stop
		fi
		ppcoal_unload || bad "rmmod ppcoal"
		l="$kind build_skb, BPF first"
		bpf_first $kind build_skb "$l"
		if [ "$(val hook_calls)" = direct ]; then
			refused_for_bpf virtio build_skb coalesce "$l"
			build_window "$l"
			bpf_stop
			gt "$bpfcalls" 100 "$l: the BPF program runs"
			eq "$(build_calls)" 0 "$l: ppcoal's hook does not run"
			echo observe >"$P/virtio" || bad "$l: virtio=observe after the BPF program"
			eq "$(val virtio.state)" attached "$l: virtio attached after the BPF program"
		else
			eq "$(val virtio.state)" attached "$l: virtio attached"
			build_both "$l"
			bpf_stop
		fi
		ppcoal_unload || bad "rmmod ppcoal"
	done
	end
	cleanup
}

# A kprobe with a post handler on skb_try_coalesce (tests/modules/
# ppcoal_kprobe.c), armed once the kernel's IPMODIFY kprobe ops is live:
# beside ppcoal's ftrace callback (also IPMODIFY) ftrace refuses it with
# EBUSY; beside a direct call it is the one IPMODIFY user ftrace lets in
# (docs/benchmarks.md "Direct calls"). Measured here: the probe's handlers and
# ppcoal's shadow then all run on every call (the probe moves no IP), and
# ppcoal unloads beside it. A probe armed first makes ppcoal's coalesce
# unavailable in both modes.
kp_state() {
	awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }' \
		/sys/kernel/debug/ppcoal_kprobe/state
}
# kp_window LABEL WHO KEY: traffic beside the armed probe; ppcoal's shadow
# runs and WHO, the pre handler, sees each of its calls. Sets SH_D (the
# shadow's calls), KP_PRE and KP_KEY (the deltas of the state's pre and KEY)
kp_window() {
	kp_p0=$(kp_state pre) kp_k0=$(kp_state "$3")
	traffic_window "$1"
	KP_PRE=$(($(kp_state pre) - kp_p0)) KP_KEY=$(($(kp_state "$3") - kp_k0))
	SH_D=$(delta coalesce.calls /tmp/a /tmp/b)
	gt "$SH_D" 0 "$1: ppcoal's shadow runs"
	sees_every_call "$1" "$2" "$KP_PRE" "$SH_D"
}

t_kprobe_post() {
	begin kprobe-post
	# ppcoal first
	ppcoal_load mode=observe || bad "insmod ppcoal"
	hook_calls_ok "ppcoal first"
	insmod /ko/ppcoal_kprobe.ko || bad "insmod ppcoal_kprobe"
	eq "$(kp_state anchor)" 0 "the anchor kprobe is armed"
	if [ "$(val hook_calls)" = direct ]; then
		eq "$(kp_state target)" 0 "ppcoal first (direct): the kprobe is armed beside the direct call"
		kp_window "ppcoal first" "the pre handler" post
		eq "$KP_KEY" "$KP_PRE" "ppcoal first: the post handler runs after each pre handler"
		echo "METRIC $(uname -r) kprobe-post ppcoal first: hook_calls=direct shadow_calls=$SH_D pre=$KP_PRE post=$KP_KEY"
		# ppcoal unloads beside the probe, which goes on counting
		ppcoal_unload || bad "rmmod ppcoal beside the kprobe"
		p0=$(kp_state pre)
		iperf 1 >/dev/null || bad "traffic after the unload"
		gt "$(($(kp_state pre) - p0))" 0 "the kprobe runs after ppcoal's unload"
	else
		eq "$(kp_state target)" -16 "ppcoal first (callbacks): the kprobe is refused with EBUSY"
		traffic_window "ppcoal first"
		gt "$(delta coalesce.calls /tmp/a /tmp/b)" 0 "ppcoal first: ppcoal's shadow runs"
		eq "$(kp_state pre)" 0 "ppcoal first: the refused kprobe never runs"
		ppcoal_unload || bad "rmmod ppcoal"
	fi
	rmmod ppcoal_kprobe || bad "rmmod ppcoal_kprobe"
	# the kprobe first
	insmod /ko/ppcoal_kprobe.ko || bad "insmod ppcoal_kprobe"
	eq "$(kp_state target)" 0 "kprobe first: armed"
	ppcoal_load mode=observe || bad "insmod ppcoal beside the kprobe"
	case "$(val coalesce.state)" in
	"unavailable: skb_try_coalesce is already modified by another ftrace IPMODIFY user"*) ;;
	*) bad "kprobe first: coalesce.state: $(val coalesce.state)" ;;
	esac
	eq "$(val recycle.state)" attached "kprobe first: recycle attached"
	p0=$(kp_state pre)
	traffic_window "kprobe first"
	gt "$(($(kp_state pre) - p0))" 0 "kprobe first: the kprobe runs"
	eq "$(delta coalesce.calls /tmp/a /tmp/b)" 0 "kprobe first: ppcoal's coalesce does not run"
	ppcoal_unload || bad "rmmod ppcoal"
	rmmod ppcoal_kprobe || bad "rmmod ppcoal_kprobe"
	# move=1: the pre handler moves each call to a function of the test
	# module that refuses. Alone, every call is moved; beside ppcoal's
	# direct call the move is lost (ppcoal's trampoline overwrites the
	# address the move left) and the shadow runs instead; with callbacks
	# the probe is refused as above
	insmod /ko/ppcoal_kprobe.ko move=1 || bad "insmod ppcoal_kprobe move=1"
	p0=$(kp_state pre) m0=$(kp_state moved)
	iperf 1 >/dev/null || bad "move alone: traffic"
	p1=$(kp_state pre) m1=$(kp_state moved)
	pa=$((p1 - p0)) ma=$((m1 - m0))
	gt "$pa" 0 "move alone: the pre handler runs"
	if [ $((pa - ma)) -lt -2 ] || [ $((pa - ma)) -gt 2 ]; then
		bad "move alone: $ma of $pa calls moved (want all, give or take 2)"
	fi
	rmmod ppcoal_kprobe || bad "rmmod ppcoal_kprobe"
	ppcoal_load mode=observe || bad "insmod ppcoal"
	insmod /ko/ppcoal_kprobe.ko move=1 || bad "insmod ppcoal_kprobe move=1 beside ppcoal"
	if [ "$(val hook_calls)" = direct ]; then
		eq "$(kp_state target)" 0 "move, ppcoal first (direct): the kprobe is armed"
		kp_window "move, ppcoal first" "the moving pre handler" moved
		eq "$KP_KEY" 0 "move, ppcoal first (direct): the move is lost"
		echo "METRIC $(uname -r) kprobe-post move: alone pre=$pa moved=$ma; ppcoal first (direct): shadow_calls=$SH_D pre=$KP_PRE moved=$KP_KEY"
	else
		eq "$(kp_state target)" -16 "move, ppcoal first (callbacks): the kprobe is refused with EBUSY"
	fi
	eq "$(kp_state post)" 0 "move: no post handler runs after a moving pre handler"
	ppcoal_unload || bad "rmmod ppcoal"
	rmmod ppcoal_kprobe || bad "rmmod ppcoal_kprobe"
	end
	cleanup
}
