# ppcoal guest tests: tools (busybox sh).
# ppcoal-stat and ppcoal-ab in the guest.
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

# ppcoal-ab, the iperf3 A/B benchmark tool (tests/guest/test-ab.sh)
. /tests/test-ab.sh
t_ab() {
	ab_test
}
