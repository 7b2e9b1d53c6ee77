#!/usr/bin/env bash
# Turn one guest console log into test result lines.
#
#   tests/vm/parse-log.sh PREFIX LOG [QEMU_EXIT_STATUS]
#
# Prints, one per test:
#   PASS PREFIX:name
#   FAIL PREFIX:name: reason (log: LOG)
# Tests: every "PPCOAL-RESULT PASS|FAIL name [reason]" line of the guest,
# PREFIX:boot (PPCOAL-DONE seen) and PREFIX:dmesg-clean (no kernel splat);
# with PPCOAL_ARMED (lines, one per sanitizer: what it prints once armed),
# PREFIX:sanitizers-armed (every one of them in the log).
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 PREFIX LOG [QEMU_EXIT_STATUS]" >&2; exit 2; }
prefix=$1 logf=$2 qrc=${3:-0}
# Kernel messages that fail the dmesg-clean test (extended regex, case-sensitive).
# shellcheck source=tests/vm/splat.sh
. "$(dirname "${BASH_SOURCE[0]}")/splat.sh"
splat=${PPCOAL_SPLAT_RE:-$PPCOAL_SPLAT_DEFAULT}

if [ ! -f "$logf" ]; then
	echo "FAIL $prefix:boot: no console log (log: $logf)"
	exit 0
fi

clean() { tr -d '\r' <"$logf" | tr -c '[:print:]\t\n' '?'; }

# Guest results (a kernel message may precede the marker on the same line).
clean | sed -n 's/.*PPCOAL-RESULT \(PASS\|FAIL\) \([^ ]*\) *\(.*\)$/\1 \2 \3/p' |
	while read -r verdict name reason; do
		if [ "$verdict" = PASS ]; then
			echo "PASS $prefix:$name"
		else
			echo "FAIL $prefix:$name: ${reason:-failed} (log: $logf)"
		fi
	done

# Lines between PPCOAL-UNLOADED-BEGIN and -END, which a guest test prints
# only while ppcoal is not loaded (to show a driver's own reports), do not
# count: they are said apart, on stderr.
# window 1: the lines inside the markers (both included); 0: the others
window() { clean | awk -v w="$1" '/PPCOAL-UNLOADED-BEGIN/ { u = 1 } u == w; /PPCOAL-UNLOADED-END/ { u = 0 }'; }
loaded() { window 0; }
unl=$(window 1 | grep -c -E "$splat" || true)
[ "$unl" = 0 ] || echo "$prefix: $unl kernel report(s) while ppcoal was not loaded, not counted by dmesg-clean (log: $logf)" >&2
first_splat=$(loaded | grep -v 'PPCOAL-RESULT' | grep -m1 -E "$splat" || true)

if clean | grep 'PPCOAL-DONE' >/dev/null; then
	echo "PASS $prefix:boot"
else
	if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
		why="timeout (qemu killed after PPCOAL_BOOT_TIMEOUT=${PPCOAL_BOOT_TIMEOUT:-?} s)"
	elif p=$(clean | grep -m1 'Kernel panic' || true) && [ -n "$p" ]; then
		why="panic: ${p#*] }"
	elif [ -n "$first_splat" ]; then
		why="${first_splat#*] }"
	else
		why="no PPCOAL-DONE (qemu exit status $qrc)"
	fi
	last=$(clean | grep -v -e '^qemu-system' -e '^[[:space:]]*$' | tail -n1 || true)
	echo "FAIL $prefix:boot: $why; last console line: ${last:0:160} (log: $logf)"
fi

if [ -n "${PPCOAL_ARMED:-}" ]; then
	unarmed=$(while IFS= read -r a; do
		clean | grep -F -- "$a" >/dev/null || printf '"%s" ' "$a"
	done <<<"$PPCOAL_ARMED")
	if [ -z "$unarmed" ]; then
		echo "PASS $prefix:sanitizers-armed"
	else
		echo "FAIL $prefix:sanitizers-armed: not in the log: $unarmed(log: $logf)"
	fi
fi

if [ -n "$first_splat" ]; then
	n=$(loaded | grep -v 'PPCOAL-RESULT' | grep -c -E "$splat" || true)
	echo "FAIL $prefix:dmesg-clean: $n hit(s), first: ${first_splat#*] } (log: $logf)"
else
	echo "PASS $prefix:dmesg-clean"
fi
