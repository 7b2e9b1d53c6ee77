#!/usr/bin/env bash
# The evidence of a failed boot in a few lines, for the tail of a tests/run
# whose logs stay on the machine that ran it (CI shows only its tail):
#
#   tests/vm/digest.sh LOG
#
# - the first kernel splat: its first line; for each register dump in it
#   (the splat's own, then those of the frames it interrupted, at most 3)
#   RIP, EFLAGS and the code bytes around the faulting instruction; the
#   call trace's first 10 frames on one line;
# - the first failing guest test: its FAIL line, then the transmit stall
#   line of udpflood, the netdev watchdog, the virtio interrupt counts and
#   the NIC counters that net_diag printed (at most 10 lines).
# Prints nothing for a log with neither.
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 LOG" >&2; exit 2; }
[ -f "$1" ] || exit 0
splat=${PPCOAL_SPLAT_RE:-'WARNING:|BUG:|Oops|Kernel panic|stalled pool|general protection'}

clean() { tr -d '\r' <"$1" | tr -c '[:print:]\t\n' '?'; }

# Both programs read to the end of their input (see emulator-fault.sh).
clean "$1" | grep -v 'PPCOAL-RESULT' | sed 's/^\[[ 0-9.]*\] //' | awk -v re="$splat" '
	function flush() {
		if (rip != "")
			printf "    %s  EFLAGS %s  code %s\n", rip, fl, code
		rip = fl = code = ""
	}
	done { next }
	!on && $0 ~ re { on = 1; print "  " substr($0, 1, 160); next }
	!on { next }
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

clean "$1" | awk '
	n >= 10 { next }
	/^  FAIL: / && !f { f = 1; print "  " substr($0, 3, 160); n++; next }
	f && /udpflood: |NETDEV WATCHDOG|virtio[0-9]-(input|output)|^ *eth[0-9]: / {
		sub(/^\[[ 0-9.]+\] /, "")
		gsub(/ +/, " ")
		sub(/^ /, "")
		print "   " substr($0, 1, 160)
		n++
	}'
