# Guest test of scripts/ppcoal-ab, the iperf3 A/B benchmark (busybox sh).
# Sourced by tools.sh (from run-guest.sh, after lib.sh); its t_ab calls ab_test.
# Over the fixture pair: a short A/B run whose table, ab.json and ab.csv are
# checked, the modes found (recycle=observe among them) restored exactly;
# then the refusals (unreachable server, not root, ppcoal unloaded) and a
# SIGTERM in the middle of a run. About 30 s in a TCG guest.

# ab_modes: the three path modes, as ppcoal-ab reports them
ab_modes() { echo "coalesce=$(cat "$P/coalesce") recycle=$(cat "$P/recycle") virtio=$(cat "$P/virtio")"; }

ab_test() {
	begin ab
	ppcoal_load mode=on || bad "insmod ppcoal"
	fixture_up frag_pool=0 linear=0 || bad "fixture_up"
	echo observe >"$P/recycle" || bad "recycle=observe"
	ab_found=$(ab_modes)
	eq "$ab_found" "coalesce=on recycle=observe virtio=on" "modes before"

	# A short run: TCPRcvCoalesce also from netns peer, where iperf3 receives
	rm -rf /tmp/ab
	IP=$IP ppcoal-ab -s "$FPEER" -l "256 1024" -n 2 -t 1 -w 1 -o /tmp/ab --stat-netns peer >/tmp/ab.out 2>&1
	eq "$?" 0 "ppcoal-ab exit status"
	cat /tmp/ab.out
	eq "$(ab_modes)" "$ab_found" "modes restored after the run"
	eq "$(cat "$P/mode")" mixed "master switch reads mixed again"
	for l in 256 1024; do
		grep -Eq "^ +$l +[0-9]+\.[0-9] +[0-9]+\.[0-9] +[-+][0-9.]+% " /tmp/ab.out || bad "no throughput row for size $l"
		grep -Eq "^ +$l +(-|[0-9.]+%) / [0-9.]+% " /tmp/ab.out || bad "no counter row for size $l"
		eq "$(grep -c "{\"size\": $l," /tmp/ab/ab.json)" 1 "ab.json: one object for size $l"
	done
	ab_j=/tmp/ab/ab.json
	grep -q "\"meta\": {\"tool\": \"ppcoal-ab\", \"kernel\": \"$(uname -r)\"" $ab_j || bad "ab.json: meta/kernel"
	grep -q "\"baseline\": \"off\", \"a\": \"off\", \"b\": \"on\", \"paths\": \[\"coalesce\", \"recycle\", \"virtio\"\], \"modes_found\": \"$ab_found\"" $ab_j ||
		bad "ab.json: baseline/paths/modes_found"
	grep -q '"reps": 2, "duration": 1, "warmup": 1, "sizes": \[256, 1024\]' $ab_j || bad "ab.json: reps/duration/sizes"
	eq "$(grep -c '"median": {"A": {"mbps": [0-9.]*, "pps": null}, "B": {"mbps": [0-9.]*, "pps": null}}' $ab_j)" 2 "ab.json: medians"
	eq "$(grep -c '"change_pct": {"mbps": -*[0-9.]*, "pps": null}, "pair_change_pct": {"min": ' $ab_j)" 2 "ab.json: changes"
	eq "$(grep -c '"counters": {"A": {"coalesce_calls": ' $ab_j)" 2 "ab.json: counters"
	# a pair range that crosses zero, and only such a range, is inside the noise
	eq "$(awk '/"pair_change_pct"/ { s = $0; sub(/.*"min": /, "", s); lo = s + 0; sub(/.*"max": /, "", s); hi = s + 0; want = (lo <= 0 && hi >= 0) ? "true" : "false"; next }
		/"inside_noise"/ { n++; if ($2 != want ",") bad++ } END { print n + 0, bad + 0 }' $ab_j)" "2 0" "ab.json: inside_noise where the pairs disagree in sign"
	eq "$(awk '/^ +(256|1024) +[0-9]/ { r = $NF == "noise" ? $(NF - 3) : $NF; split(r, p, /%\.\./); lo = p[1] + 0; hi = p[2] + 0
		if ((lo <= 0 && hi >= 0) != ($NF == "noise")) bad++ } END { print bad + 0 }' /tmp/ab.out)" 0 "table: inside the noise where the pairs disagree in sign"
	eq "$(grep -c '{"rep": [12], "side": "[AB]", "mode": "o[nf]*", "mbps": ' $ab_j)" 8 "ab.json: runs"
	awk '{ o += gsub(/[{[]/, "&"); c += gsub(/[]}]/, "&") } END { exit o != c || o == 0 }' $ab_j ||
		bad "ab.json: brackets do not balance"
	ab_c=/tmp/ab/ab.csv
	eq "$(head -n 1 $ab_c)" "size,rep,side,mode,mbps,pps,coalesce_calls,coalesce_ok,recycle_direct,recycle_ring,napi_build_skb,tcp_rcv_coalesce" "ab.csv header"
	eq "$(awk -F , 'NR > 1 && NF == 12' $ab_c | wc -l)" 8 "ab.csv: 2 sizes x 2 reps x 2 sides"
	eq "$(awk -F , 'NR > 1 { print $1 "/" $3 "/" $4 }' $ab_c | sort | uniq -c | awk '{ printf "%s:%s ", $2, $1 }')" \
		"1024/A/off:2 1024/B/on:2 256/A/off:2 256/B/on:2 " "ab.csv: runs per size and side"
	eq "$(awk -F , 'NR > 1 && !($5 > 0)' $ab_c)" "" "ab.csv: every run has a throughput"
	eq "$(awk -F , 'NR > 1 && $3 == "A" { s += $7 } END { print s + 0 }' $ab_c)" 0 "ab.csv: no coalesce calls while off"
	gt "$(awk -F , 'NR > 1 && $3 == "B" { s += $7 } END { print s + 0 }' $ab_c)" 0 "ab.csv: coalesce calls while on"
	gt "$(awk -F , 'NR > 1 && $3 == "B" { s += $9 + $10 } END { print s + 0 }' $ab_c)" 0 "ab.csv: page-pool puts while on"
	gt "$(awk -F , 'NR > 1 { s += $12 } END { print s + 0 }' $ab_c)" 0 "ab.csv: TCPRcvCoalesce (netns peer) counted"

	# Unreachable server: refused before any mode changes (no route: at once)
	ab_t0=$(date +%s)
	ppcoal-ab -s 198.51.100.1 -l 256 -n 1 -t 1 -w 1 >/tmp/ab-unreach.out 2>&1
	eq "$?" 2 "unreachable server: exit status"
	echo "  unreachable server: $(cat /tmp/ab-unreach.out) ($(($(date +%s) - ab_t0)) s)"
	grep -q "not reachable" /tmp/ab-unreach.out || bad "unreachable server: no clear message"
	[ $(($(date +%s) - ab_t0)) -le 20 ] || bad "unreachable server: took $(($(date +%s) - ab_t0)) s"
	eq "$(ab_modes)" "$ab_found" "unreachable server: modes unchanged"

	# SIGTERM while side A runs: the client stops, the modes come back
	ppcoal-ab -s "$FPEER" -l 256 -n 5 -t 2 -w 1 >/tmp/ab-term.out 2>&1 &
	ab_pid=$!
	ab_i=0
	while [ "$(cat "$P/coalesce")" != off ] && [ "$ab_i" -lt 150 ]; do
		sleep 0.1
		ab_i=$((ab_i + 1))
	done
	eq "$(cat "$P/coalesce")" off "SIGTERM run: side A under way"
	sleep 0.5
	kill -TERM $ab_pid
	wait $ab_pid
	eq "$?" 143 "SIGTERM: exit status"
	eq "$(ab_modes)" "$ab_found" "SIGTERM: modes restored"
	grep -q "terminated; modes restored" /tmp/ab-term.out || bad "SIGTERM: no message: $(cat /tmp/ab-term.out)"
	sleep 0.3
	! ps | grep -q "[i]perf3 -c" || bad "SIGTERM: an iperf3 client is still running"
	! ls -d /tmp/ppcoal-ab.* >/dev/null 2>&1 || bad "temporary directory left behind"

	# Not root: a user namespace without a mapping makes us uid 65534
	if unshare -U true 2>/dev/null; then
		unshare -U ppcoal-ab -s "$FPEER" >/tmp/ab-user.out 2>&1
		eq "$?" 2 "not root: exit status"
		grep -q "needs root" /tmp/ab-user.out || bad "not root: no clear message: $(cat /tmp/ab-user.out)"
	else
		echo "  (no user namespaces: the root refusal is tested on the host only)"
	fi

	# ppcoal unloaded
	rmmod ppcoal || bad "rmmod ppcoal"
	ppcoal-ab -s "$FPEER" -l 256 -n 1 -t 1 -w 1 >/tmp/ab-unl.out 2>&1
	eq "$?" 2 "ppcoal unloaded: exit status"
	grep -qF "ppcoal is not loaded: sudo modprobe ppcoal (or insmod ppcoal.ko)" /tmp/ab-unl.out ||
		bad "ppcoal unloaded: message: $(cat /tmp/ab-unl.out)"

	fixture_down || bad "pools did not drain"
	end
	cleanup
}
