#!/usr/bin/env bash
# The evidence of a failed boot in a few lines, for the tail of a tests/run
# whose logs stay on the machine that ran it (CI shows only its tail):
#
#   tests/vm/digest.sh LOG
#
# - the first kernel splat: its first line (and the next splat lines while
#   none of them has shown a register dump yet: "BUG: unable to handle"
#   then "Oops", or a one-line "stalled pool" then a WARNING; repeats, same
#   but for numbers, skipped; at most 4);
#   for each register dump (the splat's own, then those of the frames it
#   interrupted, at most 3) RIP, EFLAGS and the code bytes around the
#   faulting instruction; the call trace's first 10 frames on one line. A
#   splat line after a register dump ends it.
# - the first failing guest test: its FAIL line, then the transmit stall
#   line of udpflood, the netdev watchdog, the virtio interrupt counts and
#   the NIC counters that net_diag printed, from the end of the test before
#   it on (at most 10 lines; the watchdog's line once, as it repeats every
#   5 s with other numbers).
# Prints nothing for a log with neither.
#
# PPCOAL_SPLAT_RE (as in parse-log.sh) is a grep -E pattern: grep selects
# the splat lines, awk only formats.
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 LOG" >&2; exit 2; }
[ -f "$1" ] || exit 0
# shellcheck source=tests/vm/splat.sh
. "$(dirname "${BASH_SOURCE[0]}")/splat.sh"
splat=${PPCOAL_SPLAT_RE:-$PPCOAL_SPLAT_DEFAULT}

# the console's lines as text: no carriage returns, unprintable bytes as '?'
clean() { tr -d '\r' <"$1" | tr -c '[:print:]\t\n' '?'; }
log=$(clean "$1")
# the splat program's text: without result lines and timestamps; an empty
# log is no error
text=$(printf '%s\n' "$log" | { grep -v 'PPCOAL-RESULT' || true; } | sed 's/^\[[ 0-9.]*\] //')
# (a host log's "WARNING: modpost" is the build's, not a splat)
lines=$(printf '%s\n' "$text" | { grep -nE -- "$splat" | grep -v '^[0-9]*:WARNING: modpost' || true; } | cut -d: -f1 | paste -sd, -)

# Both programs read to the end of their input (see emulator-fault.sh).
printf '%s\n' "$text" | awk -v lines="$lines" '
	BEGIN { n = split(lines, l, ","); for (i = 1; i <= n; i++) is[l[i]] = 1 }
	function flush() {
		if (rip != "")
			printf "    %s  EFLAGS %s  code %s\n", rip, fl, code
		rip = fl = code = ""
	}
	done { next }
	NR in is {
		if (dumps) { flush(); done = 1; next }
		# a repeat of a dump-less head (stalled pool every 60 s) is
		# skipped, so the splat that brings a dump still shows
		k = $0
		gsub(/[0-9]+/, "N", k)
		if (k in seen) next
		seen[k] = 1
		if (++heads <= 4)
			print "  " substr($0, 1, 160)
		next
	}
	!heads { next }
	/end trace|^Kernel Offset/ { flush(); done = 1; next }
	/^RIP: / { flush(); if (++dumps <= 3) rip = substr($0, 1, 70); next }
	/^Code: / && rip != "" {
		# 8 bytes before the marked one, 4 after (mawk has no {m,n})
		if ((i = index($0, "<")) > 0) {
			s = i > 24 ? i - 24 : 7
			code = substr($0, s, i - s + 16)
		}
		next
	}
	/EFLAGS: / && rip != "" {
		if (match($0, /EFLAGS: [0-9a-f]+/))
			fl = substr($0, RSTART + 8, RLENGTH - 8)
		next
	}
	/^ +(\? )?[A-Za-z_][A-Za-z0-9_.]*\+0x[0-9a-f]+\/0x/ && frames < 10 {
		f = $0
		sub(/^ +/, "", f)
		sub(/\/0x[0-9a-f]+.*/, "", f)
		trace = trace (frames++ ? " < " : "") f
		next
	}
	END {
		flush()
		if (trace != "")
			print "    trace: " substr(trace, 1, 400)
	}'

# the diagnostic lines since the previous test's result line are kept until
# the first FAIL line shows whether they belong to a failed test
printf '%s\n' "$log" | awk '
	function show(s) {
		sub(/^\[[ 0-9.]+\] /, "", s)
		gsub(/ +/, " ", s)
		sub(/^ /, "", s)
		if (n < 10)
			print "   " substr(s, 1, 160)
		n++
	}
	/PPCOAL-RESULT/ && !f { kept = 0; split("", seen); next }
	/^  FAIL: / && !f {
		f = 1
		print "  " substr($0, 3, 160)
		for (i = 1; i <= kept; i++)
			show(k[i])
		next
	}
	/udpflood: |NETDEV WATCHDOG|virtio[0-9]-(input|output)|^ *eth[0-9]: / {
		if (/NETDEV WATCHDOG/) {
			w = $0
			sub(/^\[[ 0-9.]+\] /, "", w)
			gsub(/[0-9]+/, "N", w)
			if (w in seen)
				next
			seen[w] = 1
		}
		if (f)
			show($0)
		else if (kept < 10)
			k[++kept] = $0
	}'
