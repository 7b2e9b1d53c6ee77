#!/bin/sh
# ppcoal guest tests: run by /init inside the QEMU guest.
# Kernel command line: ppcoal.tests=a,b selects tests (default: the tests
# of the default boot in tests.tsv, the table of guest tests).
. /tests/lib.sh

grep -q "ppcoal.demo=1" /proc/cmdline && exec /tests/demo.sh
grep -q "ppcoal.bench=virtio" /proc/cmdline && exec /tests/bench-virtio.sh
grep -q "ppcoal.bench=coalesce" /proc/cmdline && exec /tests/bench-coalesce.sh
grep -q "ppcoal.bench=recycle" /proc/cmdline && exec /tests/bench-recycle.sh
grep -q "ppcoal.bench=micro" /proc/cmdline && exec /tests/bench-micro.sh
grep -q "ppcoal.bench=ab-aa" /proc/cmdline && exec /tests/bench-ab.sh

# TCP defers freeing received skbs to the CPU that allocated them
# (skb_attempt_defer_free); up to skb_defer_max/2 of them wait there for
# that CPU's next network softirq, which an idle test guest may not have
# for a long time. Free at once, so that pool drain verdicts are prompt.
echo 0 >/proc/sys/net/core/skb_defer_max

# ppcoal.tests=a,b: the tests to run (tests/run passes each boot's list from
# the boots column of tests.tsv); without it, the tests of the default boot
# (their boots column names "default").
sel=$(sed -n 's/.*ppcoal\.tests=\([^ ]*\).*/\1/p' /proc/cmdline)
# (default, or default@ID for this kernel, as tests/run's boot_tests)
[ -n "$sel" ] || sel=$(awk -F'\t' -v k="${PPCOAL_KERNEL:-}" '!/^#/ && NF >= 3 {
	n = split($3, a, ",")
	for (i = 1; i <= n; i++) if (a[i] == "default" || a[i] == "default@" k) { printf "%s%s", s, $1; s = ","; break }
}' /tests/tests.tsv)
want() {
	case ",$sel," in *",$1,"*) return 0 ;; *) return 1 ;; esac
}

# The tests, one file per area (tests.tsv names each test's file): sourcing
# them defines a function t_NAME per test (every - of NAME as _) and the
# area's helpers, and runs no test. Helpers of several areas are in lib.sh.
for area in $(awk -F'\t' '!/^#/ && NF >= 2 && $2 != "-" && !seen[$2]++ { print $2 }' /tests/tests.tsv); do
	[ -r "/tests/$area" ] || { echo "PPCOAL-RESULT FAIL guest-script /tests/$area missing"; continue; }
	# shellcheck disable=SC1090 # each area file is checked on its own
	. "/tests/$area"
done
unset area

# tests.tsv's rows in order: a test runs when want() selects it; a step
# (FILE "-") runs whatever the selection. The first two fields are read,
# further columns ignored.
# The names are read first: the tests keep run-guest.sh's stdin.
# shellcheck disable=SC2034 # file and rest: read, not used
rows=$(while read -r name file rest; do
	case $name in '' | '#'*) continue ;; esac
	echo "$name"
done </tests/tests.tsv)
[ -n "$rows" ] || echo "PPCOAL-RESULT FAIL guest-script /tests/tests.tsv missing or empty"
for row in $rows; do
	case $row in
	net-setup)
		if ! net_up; then
			echo "PPCOAL-RESULT FAIL net-setup cannot bring up the virtio pair"
			echo PPCOAL-DONE
			exit 0
		fi
		;;
	securityfs-mount)
		# Lockdown can be raised but never lowered: this runs last.
		[ -e /sys/kernel/security/lockdown ] || mount -t securityfs securityfs /sys/kernel/security
		;;
	*)
		want "$row" || continue
		f="t_$(echo "$row" | tr - _)"
		if command -v "$f" >/dev/null; then "$f"; else echo "PPCOAL-RESULT FAIL $row no function $f"; fi
		;;
	esac
done
unset rows row

# The host scans the whole console for kernel splats (tests/vm/parse-log.sh).
echo PPCOAL-DONE
