#!/bin/sh
# A/A benchmark of ppcoal-ab (not a test): how often the tool claims a change
# that cannot exist. Both sides in the same mode, REPS runs per case, each
# run's verdicts printed as "BENCH-AAV case run size measure significant p":
#   demo    the demo's case: coalesce over the fixture with a packet tap,
#           sizes 256 and 1024, 6 pairs of 1 s at 95% (make demo's settings),
#           both sides on
#   virtio  TCP over the virtio pair, 1024-byte messages, virtio on against
#           on, 6 pairs of 1 s
# scripts/ppcoal-bench ab-aa counts them.
. /tests/lib.sh
bench_init 8
echo 0 >/proc/sys/net/core/skb_defer_max
net_up >/dev/null 2>&1 || { echo "BENCH-ERROR net"; echo BENCH-DONE; exit 0; }
fixture_up frag_pool=0 linear=0 || { echo "BENCH-ERROR fixture"; echo BENCH-DONE; exit 0; }
# aa CASE RUN ARGS...: one A/A run, its verdicts
aa() {
	c=$1 r=$2
	shift 2
	IP=$IP ppcoal-ab "$@" -J >/tmp/aa.json 2>/tmp/aa.err || { echo "BENCH-ERROR $c run $r: $(head -n 1 /tmp/aa.err)"; return; }
	awk -v c="$c" -v r="$r" '/"size": / { s = $0; sub(/.*"size": /, "", s); sub(/,.*/, "", s) }
		/"A": \{"median"/ { m = $1; gsub(/[":]/, "", m) }
		/"tested": true/ { sg = $0; sub(/.*"significant": /, "", sg); sub(/,.*/, "", sg)
			p = $0; sub(/.*"p": /, "", p); sub(/,.*/, "", p); print "BENCH-AAV", c, r, s, m, sg, p }' /tmp/aa.json
}
r=1
while [ "$r" -le "$reps" ]; do
	tap_start
	sleep 0.3
	aa demo "$r" -c "$FPEER" --paths coalesce --a on --b on -l "256 1024" --pairs 6 -t 1 -O 0 --stat-netns peer
	tap_stop
	aa virtio "$r" -c "$PEER" --paths virtio --a on --b on -l 1024 --pairs 6 -t 1 -O 0
	r=$((r + 1))
done
echo BENCH-DONE
