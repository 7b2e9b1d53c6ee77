# Guest test of scripts/ppcoal-ab, the iperf3 A/B benchmark (busybox sh).
# Sourced by tools.sh (from run-guest.sh, after lib.sh); its t_ab calls ab_test.
# With the real module and iperf3:
#   - a short A/B of coalesce over the fixture (with a packet tap): table
#     rows, ab.csv (each pair's order), ab.json, counters on while on and
#     none while off, CPU
#     seconds per GB measured, TCPRcvCoalesce of netns peer, the modes found
#     (recycle=observe among them) restored after the path's arm
#   - the paths by default over the virtio pair: virtio alone, as ppcoal
#     status decides for virtio_net, the interface named in the meta; the
#     client in a netns (--netns) sending to a server here
#   - an A/A (coalesce on against on, with the tap: the demo's case), 11
#     pairs at 99.9%: the tool claims no change (a correct tool claims one
#     here once in 1000 runs, when all 11 pairs agree in sign)
#   - refusals: an unreachable server, not root, ppcoal unloaded; SIGTERM in
#     the middle of a run
# The statistics themselves are tested on the host (tests/host-ab.sh).

# ab_modes: the three path modes, as ppcoal-ab reports them
ab_modes() { echo "coalesce=$(cat "$P/coalesce") recycle=$(cat "$P/recycle") virtio=$(cat "$P/virtio")"; }
# jcount FILE PATTERN: lines of FILE matching the extended PATTERN
jcount() { grep -Ec "$2" "$1"; }

ab_test() {
	begin ab
	ppcoal_load mode=on || bad "insmod ppcoal"
	fixture_up frag_pool=0 linear=0 || bad "fixture_up"
	echo observe >"$P/recycle" || bad "recycle=observe"
	ab_found=$(ab_modes)
	eq "$ab_found" "coalesce=on recycle=observe virtio=on" "modes before"

	# A short A/B of coalesce: 2 sizes x 2 pairs of 1 s
	rm -rf /tmp/ab
	tap_start
	sleep 0.3
	IP=$IP ppcoal-ab -c "$FPEER" --paths coalesce -l "256 1024" --pairs 2 -t 1 -O 0 -o /tmp/ab --stat-netns peer >/tmp/ab.out 2>&1
	eq "$?" 0 "ppcoal-ab exit status"
	tap_stop
	cat /tmp/ab.out
	eq "$(ab_modes)" "$ab_found" "modes restored after the run"
	grep -q "^receiving interface: ppf1 (driver [^,]*, MTU [0-9]*, GRO " /tmp/ab.out ||
		bad "header: no receiving interface ppf1 (the server's, in netns peer)"
	grep -q "this host -> $FPEER (send)" /tmp/ab.out || bad "header: not the send direction of a server on this host"
	for l in 256 1024; do
		grep -Eq "^ +$l +Mbit/s +[0-9]+\.[0-9] \([0-9.]+-[0-9.]+\) +[0-9]+\.[0-9] \([0-9.]+-[0-9.]+\) +~ \(2 pairs: 6 needed for a verdict at 95% n=2\)$" /tmp/ab.out ||
			bad "no Mbit/s row for size $l"
		grep -Eq "^ +$l +CPU s/GB +[0-9]+\.[0-9]{3} " /tmp/ab.out || bad "no CPU s/GB row for size $l"
		grep -Eq "^coalesce, $l +- / [0-9.]+% " /tmp/ab.out || bad "no counter row for size $l"
	done
	ab_j=/tmp/ab/ab.json
	grep -q "\"kernel\": \"$(uname -r)\"" $ab_j || bad "ab.json: meta/kernel"
	grep -q "\"interface\": {\"name\": \"ppf1\", \"driver\": \"[^\"]*\", \"mtu\": [0-9]*, " $ab_j || bad "ab.json: meta/interface"
	grep -q "\"a\": \"off\", \"b\": \"on\", \"paths\": \[\"coalesce\"\], \"together\": false, \"modes_found\": \"$ab_found\"" $ab_j ||
		bad "ab.json: a/b/paths/modes_found"
	grep -q '"schema": 2,' $ab_j || bad "ab.json: schema"
	eq "$(jcount $ab_j '"mbps": \{"A": \{"median": [0-9.]+, "min": [0-9.]+, "max": [0-9.]+, "n": 2\}')" 2 "ab.json: Mbit/s of both sizes"
	eq "$(jcount $ab_j '"cpu_s_per_gb": \{"A": \{"median": [0-9.]+, ')" 2 "ab.json: CPU s/GB of both sizes"
	eq "$(jcount $ab_j '"pairs": 2, "tested": true, "significant": false, "p": [0-9.]+, .*"reason": "2 pairs: 6 needed')" 4 "ab.json: verdict fields"
	awk '{ o += gsub(/[{[]/, "&"); c += gsub(/[]}]/, "&") } END { exit o != c || o == 0 }' $ab_j ||
		bad "ab.json: brackets do not balance"
	ab_c=/tmp/ab/ab.csv
	eq "$(head -n 1 $ab_c)" "arm,size,pair,order,side,mode,mbps,pps,bytes,cpu_s,cpu_s_per_gb,rx_cpu_pct,coalesce_calls,coalesce_ok,recycle_direct,recycle_ring,napi_build_skb,tcp_rcv_coalesce" "ab.csv header"
	eq "$(awk -F , 'NR > 1 { print $2 "/" $3 }' $ab_c | uniq -c | awk '{ printf "%s:%s ", $2, $1 }')" \
		"256/1:2 256/2:2 1024/1:2 1024/2:2 " "ab.csv: 2 sizes x 2 pairs, each pair's runs together"
	eq "$(awk -F , 'NR > 1 { k = $2 "/" $3; o[k] = o[k] $5; r[k] = $4; m[k] = m[k] $6 } END { for (k in o) if (o[k] != r[k] || (o[k] != "AB" && o[k] != "BA") || (m[k] != "offon" && m[k] != "onoff")) print k }' $ab_c)" "" \
		"ab.csv: each pair one A (off) and one B (on), in its recorded order"
	eq "$(awk -F , 'NR > 1 && !($7 > 0 && $9 > 0 && $11 > 0)' $ab_c)" "" "ab.csv: every run has Mbit/s, bytes and CPU s/GB"
	eq "$(awk -F , 'NR > 1 && $5 == "A" { s += $13 } END { print s + 0 }' $ab_c)" 0 "ab.csv: no coalesce calls while off"
	gt "$(awk -F , 'NR > 1 && $5 == "B" { s += $14 } END { print s + 0 }' $ab_c)" 0 "ab.csv: coalescing (the tap's clones) while on"
	gt "$(awk -F , 'NR > 1 { s += $18 } END { print s + 0 }' $ab_c)" 0 "ab.csv: TCPRcvCoalesce (netns peer) counted"

	# The paths by default: over the virtio pair, virtio alone; -J alone on stdout
	IP=$IP ppcoal-ab -c "$PEER" -l 1024 --pairs 1 -t 1 -O 0 -J >/tmp/ab-v.json 2>/tmp/ab-v.err
	eq "$?" 0 "default paths: exit status"
	grep -q '"paths": \["virtio"\], "together": false' /tmp/ab-v.json || bad "default paths over virtio_net: $(grep -o '"paths": [^]]*]' /tmp/ab-v.json | head -n 1)"
	grep -q '"interface": {"name": "[^"]*", "driver": "virtio_net"' /tmp/ab-v.json || bad "default paths: the interface is not virtio_net"
	eq "$(head -c 1 /tmp/ab-v.json)" "{" "-J: stdout is the JSON"
	eq "$(ab_modes)" "$ab_found" "modes restored after the virtio run"

	# --netns: the client in netns peer, a server here on the virtio NIC
	iperf3 -s -D -B "$SELF" >/dev/null 2>&1
	sleep 0.5
	IP=$IP ppcoal-ab --netns peer -c "$SELF" -l 1024 --pairs 1 -t 1 -O 0 -J >/tmp/ab-n.json 2>/tmp/ab-n.err
	eq "$?" 0 "--netns: exit status"
	grep -q '"direction": "send", "server": "'"$SELF"'", "port": 5201,' /tmp/ab-n.json || bad "--netns: not a send to $SELF"
	grep -q '"netns": "peer",' /tmp/ab-n.json || bad "--netns: not in the meta"
	grep -q '"interface": {"name": "[^"]*", "driver": "virtio_net"' /tmp/ab-n.json || bad "--netns: the receiving interface is not this side's virtio_net"
	pkillf "iperf3 -s -D -B $SELF"
	# A/A of the demo's case: 11 pairs at 99.9%, no change may be claimed
	tap_start
	sleep 0.3
	IP=$IP ppcoal-ab -c "$FPEER" --paths coalesce --a on --b on -l 256 --pairs 11 -t 1 -O 0 --confidence 99.9 -o /tmp/ab-aa >/tmp/ab-aa.out 2>&1
	eq "$?" 0 "A/A: exit status"
	tap_stop
	cat /tmp/ab-aa.out
	grep -q '"verdicts": 2, "significant": 0' /tmp/ab-aa/ab.json ||
		bad "A/A at 99.9%: a change claimed: $(grep -E '^ +256 ' /tmp/ab-aa.out | tr -s ' ' | tr '\n' '|')"
	eq "$(awk -F , 'NR > 1 && $6 != "on"' /tmp/ab-aa/ab.csv)" "" "A/A: every run in on"

	# Unreachable server: refused before any mode changes (no route: at once)
	ab_t0=$(date +%s)
	ppcoal-ab -c 198.51.100.1 --paths coalesce -l 256 --pairs 1 -t 1 >/tmp/ab-unreach.out 2>&1
	eq "$?" 2 "unreachable server: exit status"
	echo "  unreachable server: $(cat /tmp/ab-unreach.out) ($(($(date +%s) - ab_t0)) s)"
	grep -q "not reachable" /tmp/ab-unreach.out || bad "unreachable server: no clear message"
	[ $(($(date +%s) - ab_t0)) -le 20 ] || bad "unreachable server: took $(($(date +%s) - ab_t0)) s"
	eq "$(ab_modes)" "$ab_found" "unreachable server: modes unchanged"

	# SIGTERM while side A runs: the client stops, the modes come back
	IP=$IP ppcoal-ab -c "$FPEER" --paths coalesce -l 256 --pairs 5 -t 2 -O 0 >/tmp/ab-term.out 2>&1 &
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
		unshare -U ppcoal-ab -c "$FPEER" >/tmp/ab-user.out 2>&1
		eq "$?" 2 "not root: exit status"
		grep -q "needs root" /tmp/ab-user.out || bad "not root: no clear message: $(cat /tmp/ab-user.out)"
	else
		echo "  (no user namespaces: the root refusal is tested on the host only)"
	fi

	# ppcoal unloaded
	rmmod ppcoal || bad "rmmod ppcoal"
	ppcoal-ab -c "$FPEER" -l 256 --pairs 1 -t 1 >/tmp/ab-unl.out 2>&1
	eq "$?" 2 "ppcoal unloaded: exit status"
	grep -qF "ppcoal is not loaded: sudo modprobe ppcoal" /tmp/ab-unl.out ||
		bad "ppcoal unloaded: message: $(cat /tmp/ab-unl.out)"

	fixture_down || bad "pools did not drain"
	end
	cleanup
}
