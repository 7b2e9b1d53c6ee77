# ppcoal guest tests: tools (busybox sh).
# ppcoal-stat, ppcoal status and ppcoal-ab in the guest.
# Sourced by run-guest.sh after lib.sh: defines t_NAME for each test NAME
# of tests.tsv in this file (- as _) and runs none of them.

t_stat_tool() {
	begin stat-tool
	ppcoal_load mode=observe || bad "insmod"
	traffic_start -l 256
	ppcoal-stat -c 2 coalesce virtio >/tmp/stat.out 2>&1 || bad "ppcoal-stat failed"
	traffic_stop
	cat /tmp/stat.out
	awk '!/^[0-9:]+ (coalesce|virtio)\.[a-z_]+ +[0-9.]+\/s +[0-9]+$/ { print "bad: " $0; e = 1 } END { exit e }' /tmp/stat.out ||
		bad "malformed ppcoal-stat line"
	grep -q ' coalesce\.calls ' /tmp/stat.out || bad "coalesce.calls rate missing"
	grep -q ' recycle\.' /tmp/stat.out && bad "recycle shown though not selected"
	ppcoal-stat -c 1 bogus 2>/dev/null && bad "unknown path accepted"
	rmmod ppcoal
	ppcoal-stat -c 1 2>/tmp/stat.err && bad "ran without ppcoal"
	grep -q "is ppcoal loaded" /tmp/stat.err || bad "no clear message without ppcoal"
	end
	cleanup
}

# ppcoal status on this guest, the module loaded for real: two virtio NICs
# (one in netns peer), 600-byte datagrams between them, so the virtio path
# acts and says how much; a kernel version ppcoal was not verified for, so the paths asked to
# run cannot (exit 1, the reason in the verdict); no module (exit 2).
t_status_tool() {
	begin status-tool
	ppcoal_load || bad "insmod"
	# 600-byte datagrams: frames virtio_net builds in place (build_skb)
	udpflood $PEER 9 4 600 >/dev/null &
	fl=$!
	sleep 0.5
	ppcoal status -i 2 >/tmp/status.out 2>&1
	rc=$?
	wait $fl
	udpflood $PEER 9 3 600 >/dev/null &
	fl=$!
	sleep 0.5
	ppcoal status -i 1 --json >/tmp/status.json 2>&1
	rcj=$?
	wait $fl
	cat /tmp/status.out
	eq "$rc" 0 "status exit (every path set to run runs)"
	eq "$rcj" 0 "status --json exit"
	grep -q "^ppcoal $(val version), module $(val version), on $(uname -r) (Debian $(val debian_version))$" /tmp/status.out ||
		bad "no version line naming the module and the kernel"
	e0=$(nic_of 52:54:00:00:00:01)
	grep -q "^$e0: virtio_net\$" /tmp/status.out || bad "$e0's driver not virtio_net"
	grep -q '^  virtio    can act: ' /tmp/status.out || bad "virtio cannot act on a virtio_net interface"
	pct=$(sed -n 's/^  virtio: on, \([0-9]*\)\.[0-9]% of receive build_skb substituted (.*$/\1/p' /tmp/status.out)
	ge "${pct:-0}" 90 "virtio verdict: share of receive build_skb substituted under traffic"
	grep -q '^  recycle: off' /tmp/status.out || bad "recycle verdict not off"
	grep -q '"paths":{' /tmp/status.json && grep -q '"exit":0' /tmp/status.json || bad "status --json fields"
	rmmod ppcoal || bad "rmmod"
	# refused at load, the paths read off; asked for on, they count as set
	# to run (stats: PATH.wanted)
	ppcoal_load test_debian_version=6.1.0-0 mode=on || bad "insmod (assumed 6.1.0-0)"
	eq "$(val virtio.mode) $(val virtio.wanted)" "off on" "virtio: mode off, on asked"
	ppcoal status -i 1 >/tmp/status.out 2>&1
	eq "$?" 1 "status exit with paths asked to run that cannot"
	grep -q '^  virtio: off (on asked), unavailable: not verified for Debian 6.1.0-0$' /tmp/status.out ||
		bad "no verdict naming why virtio cannot run"
	rmmod ppcoal || bad "rmmod"
	ppcoal status >/tmp/status.out 2>&1
	eq "$?" 2 "status exit without the module"
	grep -q "not loaded: load it with: modprobe ppcoal" /tmp/status.out || bad "no message naming the fix without the module"
	end
	cleanup
}

# ppcoal-ab, the iperf3 A/B benchmark tool (tests/guest/test-ab.sh)
. /tests/test-ab.sh
t_ab() {
	ab_test
}
