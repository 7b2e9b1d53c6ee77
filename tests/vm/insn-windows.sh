#!/usr/bin/env bash
# Instructions per unit of the guest's measured windows, from the marks of
# the insncount QEMU plugin (tests/plugin/insncount.c) and the guest's console.
#
#   tests/vm/insn-windows.sh PREFIX MARKS LOG [SUMMARY]
#
# The guest runs "insnmark" before and after each window and then prints
#   PPCOAL-INSNWIN GROUP/REP UNITS
# so window J is the span between marks 2J and 2J+1; its instructions and
# locked instructions are divided by UNITS (packets, loop turns). Checks the
# guest asks for, evaluated here on the medians of a group's windows:
#   PPCOAL-INSNCHECK NAME range GROUP insns|locked LO HI
#   PPCOAL-INSNCHECK NAME less GROUP_A GROUP_B insns|locked MARGIN
#                    (median A <= median B - MARGIN)
#   PPCOAL-INSNCHECK NAME most GROUP_A GROUP_B insns|locked BOUND
#                    (median A - median B <= BOUND: A costs at most BOUND more)
#   PPCOAL-INSNCHECK NAME pmost GROUP_A GROUP_B insns|locked BOUND
#                    (paired: the median over the repetitions both groups
#                    ran of A/REP - B/REP <= BOUND; a negative BOUND asks A
#                    below B. The pairs of an interleaved A/B ran side by
#                    side, so a drift of the guest between repetitions
#                    cancels in each difference, as it does not between
#                    two groups' medians)
#   PPCOAL-INSNCHECK NAME spread GROUP insns|locked PERCENT
#                    ((max - min) / median <= PERCENT %)
#   PPCOAL-INSNCHECK NAME agree GROUP insns|locked PERCENT
#                    (a majority of the windows within PERCENT % of the median)
# Prints "PASS PREFIX:NAME" / "FAIL PREFIX:NAME: reason" lines, PREFIX:insn-marks
# (every window has its two marks), and writes per group "GROUP insns median
# (min-max) locked median (min-max) n" to SUMMARY (default: stdout only as
# INSN lines).
#
#   tests/vm/insn-windows.sh --compare SUMMARY
#
# prints SUMMARY's groups "KIND-MODE", then per kind observe - off and
# on - off (instructions, locked instructions), and for the micro pairs
# direct - ring, napi_build_skb - build_skb, ok - refused, marked "inside
# the spread" when the two modes' min-max ranges overlap.
set -euo pipefail

if [ "${1:-}" = --compare ]; then
	[ $# -eq 2 ] || { echo "usage: $0 --compare SUMMARY" >&2; exit 2; }
	awk '{ g = $1; k = g; sub(/-[^-]*$/, "", k); m = substr(g, length(k) + 2)
		med[k, m, "i"] = $3; rng[k, m, "i"] = $4; med[k, m, "l"] = $6; rng[k, m, "l"] = $7
		if (!(k in seen)) { seen[k] = 1; kinds[nk++] = k }; printf "%s\n", $0 }
	function lo(r) { gsub(/[()]/, "", r); split(r, a, "-"); return a[1] + 0 }
	function hi(r) { gsub(/[()]/, "", r); split(r, a, "-"); return a[2] + 0 }
	function cmp(k, m, w, u, b,    d, in_) {
		if (!((k, m, w) in med) || !((k, b, w) in med)) return
		d = med[k, m, w] - med[k, b, w]
		in_ = hi(rng[k, m, w]) >= lo(rng[k, b, w]) && lo(rng[k, m, w]) <= hi(rng[k, b, w])
		printf "   %s-%s %+.2f %s%s", m, b, d, u, in_ ? " (inside the spread)" : ""
	}
	END { for (i = 0; i < nk; i++) { k = kinds[i]; printf "%-20s", k
		cmp(k, "observe", "i", "insns", "off"); cmp(k, "on", "i", "insns", "off")
		cmp(k, "on", "l", "locked", "off")
		# the micro pairs: the optimised operation against the stock one
		cmp(k, "direct", "i", "insns", "ring"); cmp(k, "direct", "l", "locked", "ring")
		cmp(k, "napi_build_skb", "i", "insns", "build_skb")
		cmp(k, "napi_build_skb", "l", "locked", "build_skb")
		cmp(k, "ok", "i", "insns", "refused"); cmp(k, "ok", "l", "locked", "refused")
		print "" } }' "$2"
	exit 0
fi

[ $# -ge 3 ] || { echo "usage: $0 PREFIX MARKS LOG [SUMMARY]" >&2; exit 2; }
prefix=$1 marks=$2 logf=$3 summary=${4:-/dev/null}
if [ ! -s "$marks" ]; then
	echo "FAIL $prefix:insn-marks: the plugin wrote no marks (log: $logf, marks: $marks)"
	exit 0
fi

tr -d '\r' <"$logf" | awk -v prefix="$prefix" -v logf="$logf" -v summary="$summary" '
BEGIN { nm = 0; nwin = 0; nchk = 0; ng = 0 }
function sortv(a, n,    i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
}
# median(v, n): the median of v[1..n], sorted
function median(v, n) { return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
# stat GROUP WHAT [PCT]: median, min and max of the group in M, MN, MX;
# count in N; with PCT, the windows within PCT % of the median in NA
function stat(g, w, pct,    i, v, n) {
	n = 0
	for (i = 0; i < nwin; i++)
		if (grp[i] == g) v[++n] = (w == "insns" ? pi[i] : pl[i])
	N = n
	if (!n) return 0
	sortv(v, n)
	M = median(v, n)
	MN = v[1]; MX = v[n]
	NA = 0
	for (i = 1; i <= n; i++)
		if ((v[i] - M) * 100 <= pct * M && (M - v[i]) * 100 <= pct * M) NA++
	return 1
}
function result(name, ok, why) {
	if (ok) print "PASS " prefix ":" name
	else print "FAIL " prefix ":" name ": " why " (log: " logf ")"
}
FILENAME == ARGV[1] { if ($1 == "mark") { mi[nm] = $3; ml[nm] = $4; nm++ }; next }
{
	if (match($0, /PPCOAL-INSNWIN [^ ]+ [0-9]+/)) {
		split(substr($0, RSTART, RLENGTH), f, " ")
		lab[nwin] = f[2]; units[nwin] = f[3]; nwin++
	} else if (match($0, /PPCOAL-INSNCHECK .*/)) {
		chk[nchk++] = substr($0, RSTART + 17, RLENGTH - 17)
	}
}
END {
	if (nm != 2 * nwin) {
		result("insn-marks", 0, nm " plugin marks for " nwin " windows (2 each)")
		exit 0
	}
	result("insn-marks", 1)
	for (i = 0; i < nwin; i++) {
		g = lab[i]; sub(/\/[^\/]*$/, "", g); grp[i] = g
		rep[i] = substr(lab[i], length(g) + 2)
		u = units[i] > 0 ? units[i] : 1
		pi[i] = (mi[2 * i + 1] - mi[2 * i]) / u
		pl[i] = (ml[2 * i + 1] - ml[2 * i]) / u
		if (!(g in seen)) { seen[g] = 1; order[ng++] = g }
	}
	for (k = 0; k < ng; k++) {
		g = order[k]
		stat(g, "insns"); line = sprintf("%-24s insns %10.2f (%.2f-%.2f)", g, M, MN, MX)
		stat(g, "locked"); line = line sprintf("  locked %8.3f (%.3f-%.3f)  n=%d", M, MN, MX, N)
		print "INSN " line
		print line > summary
	}
	for (k = 0; k < nchk; k++) {
		n = split(chk[k], c, " ")
		name = c[1]; kind = c[2]
		if (kind == "range" && n == 6) {
			if (!stat(c[3], c[4])) { result(name, 0, "no window of " c[3]); continue }
			result(name, M >= c[5] + 0 && M <= c[6] + 0,
			       sprintf("%s %s per unit %.3f (%.3f-%.3f) outside [%s, %s]", c[3], c[4], M, MN, MX, c[5], c[6]))
		} else if ((kind == "less" || kind == "most") && n == 6) {
			# both compare the medians of two groups: A (a) and B (M)
			if (!stat(c[3], c[5])) { result(name, 0, "no window of " c[3]); continue }
			a = M; amn = MN; amx = MX
			if (!stat(c[4], c[5])) { result(name, 0, "no window of " c[4]); continue }
			if (kind == "less")
				result(name, a <= M - c[6],
				       sprintf("%s %s %.3f (%.3f-%.3f) not %s below %s %.3f (%.3f-%.3f)", c[3], c[5], a, amn, amx, c[6], c[4], M, MN, MX))
			else
				result(name, a - M <= c[6] + 0,
				       sprintf("%s %s %.3f (%.3f-%.3f) is %.3f above %s %.3f (%.3f-%.3f), more than %s", c[3], c[5], a, amn, amx, a - M, c[4], M, MN, MX, c[6]))
		} else if (kind == "pmost" && n == 6) {
			np = 0; nb = 0; delete dv
			for (i = 0; i < nwin; i++) {
				if (grp[i] != c[3]) continue
				for (j = 0; j < nwin; j++)
					if (grp[j] == c[4] && rep[j] == rep[i]) {
						dv[++np] = c[5] == "insns" ? pi[i] - pi[j] : pl[i] - pl[j]
						if (dv[np] <= c[6] + 0) nb++
						break
					}
			}
			if (!np) { result(name, 0, "no pair of " c[3] " and " c[4]); continue }
			sortv(dv, np)
			d = median(dv, np)
			result(name, d <= c[6] + 0,
			       sprintf("%s - %s %s, median of %d pairs %.3f (%.3f to %.3f; %d at most %s), above %s", c[3], c[4], c[5], np, d, dv[1], dv[np], nb, c[6], c[6]))
		} else if (kind == "agree" && n == 5) {
			if (!stat(c[3], c[4], c[5])) { result(name, 0, "no window of " c[3]); continue }
			result(name, M > 0 && NA * 2 > N,
			       sprintf("%s %s: %d of %d windows within %s%% of the median %.3f (%.3f-%.3f)", c[3], c[4], NA, N, c[5], M, MN, MX))
		} else if (kind == "spread" && n == 5) {
			if (!stat(c[3], c[4])) { result(name, 0, "no window of " c[3]); continue }
			result(name, M > 0 && (MX - MN) * 100 <= c[5] * M,
			       sprintf("%s %s spread %.2f%% (%.3f-%.3f, median %.3f) above %s%%", c[3], c[4], M > 0 ? (MX - MN) * 100 / M : 0, MN, MX, M, c[5]))
		} else {
			result(name, 0, "malformed check: " chk[k])
		}
	}
}' "$marks" -
