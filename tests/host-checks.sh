#!/usr/bin/env bash
# Host-side checks of the tree, printed as "PASS host:x" / "FAIL host:x: why":
#   doc-counters     docs/design.md's counter table is the one generated from the table
#   doc-drivers      README.md's driver table is the one generated from page-pool-drivers.tsv,
#                    whose audited drivers are ppcoal_tables.h's
#   verified-pins    every listed version of a family pins the same audited rows
#   checkpatch       checkpatch.pl --strict --no-tree -f from Debian's linux-source-6.1
#                    is clean on every kernel source file
#   bpftrace-parse   scripts/bpftrace/*.bt compile (bpftrace -d: parse, semantic
#                    analysis and code generation, nothing loaded or attached);
#                    (tests/run installs bpftrace; elsewhere a SKIP line on stderr)
#   emulator-fault   tests/vm/emulator-fault.sh tells the recorded stale int3 of
#                    an MTTCG boot and the recorded double fault and general
#                    protection fault with an impossible EFLAGS
#                    (tests/vm/testdata), and ppcoal's stale-translation
#                    warning (its format read from ppcoal_hook.c), from a
#                    kernel oops
#   boot-retry       boot_retrying boots again after an emulator death, at
#                    most TRIES times in all, never after the kernel's
#   digest, collect  the evidence tests/run prints for a failed boot
#   insn-windows     tests/vm/insn-windows.sh's per-unit counts and its checks,
#                    on marks and windows whose counts are known
#   doc-refs         every DOC "Section" the tree cites (README.md,
#                    CONTRIBUTING.md, docs/*.md) begins a heading of DOC
#   sanitizers-armed parse-log.sh fails a debug boot whose log lacks a line of
#                    kernels.sh's PPCOAL_DEBUG_ARMED, naming it
#   dmesg-unloaded   parse-log.sh leaves out of dmesg-clean a report between
#                    PPCOAL-UNLOADED-BEGIN and -END (ppcoal not loaded),
#                    says so, and still fails one outside the markers
#   census           ppcoal-verify-kernel's callers_census of a driver file:
#                    the calls of the page-pool and NAPI APIs per function,
#                    counted; a new caller in any function changes it, a
#                    change elsewhere does not
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${PPCOAL_CACHE:-/var/cache/ppcoal}
cd "$REPO" || exit 1

want=$(scripts/ppcoal-doc markdown)
have=$(sed -n '/<!-- counters:begin -->/,/<!-- counters:end -->/p' docs/design.md | sed '1d;$d')
if [ -z "$want" ]; then
	echo "FAIL host:doc-counters: scripts/ppcoal-doc markdown printed nothing"
elif [ "$want" = "$have" ]; then
	echo "PASS host:doc-counters"
else
	echo "FAIL host:doc-counters: docs/design.md counter table differs from scripts/ppcoal-doc markdown"
fi

# The README's driver table is the one made from page-pool-drivers.tsv, and
# its audited rows are ppcoal_tables.h's: every driver the table says
# recycle=on puts directly is a PPC_AUDITED row, and every PPC_AUDITED row
# but the test fixture's is such a driver.
want=$(scripts/ppcoal-doc drivers)
have=$(sed -n '/<!-- drivers:begin -->/,/<!-- drivers:end -->/p' README.md | sed '1d;$d')
tab_direct=$(awk -F '\t' '!/^#/ && $5 == "direct" { split($2, w, ","); print w[1] }' scripts/page-pool-drivers.tsv | sort -u | tr '\n' ' ')
aud=$(sed -n 's/^PPC_AUDITED(\([a-z0-9_]*\),.*/\1/p' ppcoal_tables.h | grep -vx ppcoal_fixture | sort -u | tr '\n' ' ')
if [ -z "$want" ] || [ "$want" != "$have" ]; then
	echo "FAIL host:doc-drivers: README.md's driver table differs from scripts/ppcoal-doc drivers"
elif [ -z "$aud" ] || [ "$tab_direct" != "$aud" ]; then
	echo "FAIL host:doc-drivers: page-pool-drivers.tsv's direct drivers ($tab_direct) are not ppcoal_tables.h's audited ones ($aud)"
elif awk -F '\t' '!/^#/ && NF && ($5 !~ /^(direct|kernel|no|-)$/ || $6 == "")' scripts/page-pool-drivers.tsv | grep -q .; then
	echo "FAIL host:doc-drivers: a page-pool-drivers.tsv row without a recycle verdict (direct, kernel, no, -) or its evidence"
else
	echo "PASS host:doc-drivers"
fi

# verified-functions.tsv pins each audited driver's row (audit_MODULE) in
# every listed version of its family alike: the kernel-update verifier
# compares a new kernel with the newest listed version's rows and records
# the rows of the family, so a row missing from one version would be
# recorded verified with nothing compared, or never be verifiable there.
bad_pins=$(awk -F '\t' '!/^#/ && NF >= 6 { v[$2 SUBSEP $1] = 1; if ($3 ~ /^audit_/) a[$2 SUBSEP $1 SUBSEP $3] = 1; f[$2 SUBSEP $3] = $3 ~ /^audit_/ }
	END { for (k in f) { if (!f[k]) continue; split(k, x, SUBSEP)
		for (w in v) { split(w, y, SUBSEP); if (y[1] == x[1] && !((y[1] SUBSEP y[2] SUBSEP x[2]) in a)) print x[2] " missing in " y[2] } } }' verified-functions.tsv)
if [ -n "$bad_pins" ]; then
	echo "FAIL host:verified-pins: verified-functions.tsv: $(echo "$bad_pins" | head -n 3 | tr '\n' ';')"
else
	echo "PASS host:verified-pins"
fi

# Citations of a document's section: DOC "Section" (or "(DOC, "Section")"),
# DOC one of README.md (also written README), CONTRIBUTING.md, docs/*.md.
# Each must begin a heading of that document. (No file list or no citation
# found fails: the check must have read some.)
refs=""
files=$(git ls-files -- . ':!tests/vm/testdata' ':!tests/host-checks.sh') && [ -n "$files" ] &&
	refs=$(printf '%s\n' "$files" | tr '\n' '\0' |
		xargs -0 grep -ohE '(README(\.md)?|CONTRIBUTING\.md|docs/[a-z0-9-]+\.md),? "[^"]+"' |
		sed -E 's/^(README|CONTRIBUTING)( |,)/\1.md\2/; s/^README\.md\.md/README.md/' | sort -u)
missing=$(printf '%s\n' "$refs" | while IFS= read -r ref; do
	[ -n "$ref" ] || continue
	doc=${ref%%[ ,]*}
	sect=${ref#*\"}
	sect=${sect%\"}
	if [ ! -f "$doc" ]; then
		printf '%s (no such document) ' "$ref"
	elif ! sed -n 's/^#\{1,6\} //p' "$doc" | awk -v r="$sect" 'index($0, r) == 1 { f = 1 } END { exit !f }'; then
		printf '%s; ' "$ref"
	fi
done)
if [ -z "$refs" ]; then
	echo "FAIL host:doc-refs: no DOC \"Section\" citation found (git ls-files failed or listed nothing)"
elif [ -z "$missing" ]; then
	echo "PASS host:doc-refs"
else
	echo "FAIL host:doc-refs: cited but no heading of that document begins with it: $missing"
fi

# checkpatch.pl with its data files, extracted once from linux-source-6.1.
cp_dir=$CACHE/checkpatch
if [ ! -x "$cp_dir/scripts/checkpatch.pl" ]; then
	mkdir -p "$CACHE/debs" "$cp_dir"
	(cd "$CACHE/debs" && { ls linux-source-6.1_*.deb >/dev/null 2>&1 || apt-get download -q linux-source-6.1; }) >/dev/null 2>&1
	deb=$(ls "$CACHE"/debs/linux-source-6.1_*.deb 2>/dev/null | tail -n 1)
	if [ -n "$deb" ]; then
		dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/src/linux-source-6.1.tar.xz |
			tar -xJ -C "$cp_dir" --strip-components=1 \
				linux-source-6.1/scripts/checkpatch.pl \
				linux-source-6.1/scripts/spelling.txt \
				linux-source-6.1/scripts/const_structs.checkpatch 2>/dev/null
	fi
fi
if [ ! -x "$cp_dir/scripts/checkpatch.pl" ]; then
	echo "FAIL host:checkpatch: cannot get checkpatch.pl from linux-source-6.1"
else
	files=$(git ls-files '*.c' '*.S' '*.h')
	# shellcheck disable=SC2086
	out=$(perl "$cp_dir/scripts/checkpatch.pl" --strict --no-tree --no-summary --terse -f $files 2>&1)
	if [ -z "$out" ]; then
		echo "PASS host:checkpatch"
	else
		echo "FAIL host:checkpatch: $(echo "$out" | head -n 3 | tr '\n' ' ')"
	fi
fi

# bpftrace -d needs euid 0 but no BPF privilege, no BTF and no probe targets
# (ppcoal need not be loaded). Not installed here: on a stock Debian 12 it
# pulls LLVM 14, libclang, z3 and ICU (about 60 MB of downloads, 250 MB installed).
if ! command -v bpftrace >/dev/null 2>&1; then
	echo "SKIP host:bpftrace-parse: bpftrace not installed (apt-get install bpftrace)" >&2
elif [ "$(id -u)" != 0 ]; then
	echo "SKIP host:bpftrace-parse: bpftrace -d runs as root only" >&2
else
	why=""
	for f in scripts/bpftrace/*.bt; do
		if ! err=$(timeout 120 bpftrace -d "$f" 2>&1 >/dev/null); then
			# the first error naming a line of the file, else the last error
			e=$(echo "$err" | grep -m1 '\.bt:[0-9].*ERROR' || echo "$err" | grep ERROR | tail -n 1)
			why="$why${why:+; }${e:-$f: bpftrace -d failed}"
		fi
	done
	if [ -z "$why" ]; then
		echo "PASS host:bpftrace-parse"
	else
		echo "FAIL host:bpftrace-parse: $why"
	fi
fi

# tests/run boots again only what emulator_fault calls the emulator's: the
# recorded stale int3 of an MTTCG boot; not the same oops with int3 still in
# memory (a kernel failure), nor in a single-threaded boot, nor a timeout.
# shellcheck source=tests/vm/emulator-fault.sh
. tests/vm/emulator-fault.sh
t=tests/vm/testdata/mttcg-stale-int3.log
real=$(mktemp)
sed 's/53 66 <90>/53 cc <90>/' "$t" >"$real"
why=""
case "$(emulator_fault "$t" 0 mttcg)" in
"stale int3 executed (MTTCG): RIP: 0010:sched_clock_cpu+0x9/0x1d0") ;;
*) why="$why${why:+; }the recorded stale int3 not recognised" ;;
esac
[ -z "$(emulator_fault "$real" 0 mttcg)" ] || why="$why${why:+; }an int3 still in memory called the emulator's"
[ -z "$(emulator_fault "$t" 0 "")" ] || why="$why${why:+; }a single-threaded boot's int3 called the emulator's"
for st in 137 130 143; do
	[ -z "$(emulator_fault "$real" $st mttcg)" ] || why="$why${why:+; }exit $st (a timeout, an interrupted run) called a QEMU crash"
done
case "$(emulator_fault "$real" 134 "")" in
"QEMU crashed (exit 134)") ;;
*) why="$why${why:+; }QEMU killed by SIGABRT not recognised" ;;
esac
echo "qemu-system-x86_64: ../accel/tcg/cpu-exec.c:1000: cpu_exec: Assertion \`x' failed." >"$real"
case "$(emulator_fault "$real" 0 "")" in
"QEMU crashed (exit 0): qemu-system-x86_64: ../accel/tcg/cpu-exec.c:1000: cpu_exec: Assertion \`x' failed.") ;;
*) why="$why${why:+; }QEMU's assertion on its stderr not recognised" ;;
esac
# the double fault with an EFLAGS no CPU can hold (6.12.117, single-threaded
# TCG), in any boot; not one whose EFLAGS a CPU could hold (a stack overflow)
# (200 times: an awk that exited early lost 5 of 300 to SIGPIPE under pipefail)
t=tests/vm/testdata/tcg-double-fault-eflags.log
n=0
for _ in $(seq 200); do
	case "$(emulator_fault "$t" 0 "")" in
	"double fault with EFLAGS c3d6d602, bits no x86 CPU sets (emulator state)") ;;
	*) n=$((n + 1)) ;;
	esac
done
[ "$n" = 0 ] || why="$why${why:+; }the recorded double fault with impossible EFLAGS not recognised ($n of 200)"
sed 's/EFLAGS: c3d6d602/EFLAGS: 00010246/' "$t" >"$real"
[ -z "$(emulator_fault "$real" 0 "")" ] || why="$why${why:+; }a double fault with a possible EFLAGS called the emulator's"
# the general protection fault with such an EFLAGS (6.12.117, single-threaded
# TCG, CI of 13d3337); not one with a possible EFLAGS
t=tests/vm/testdata/tcg-gpf-eflags.log
case "$(emulator_fault "$t" 0 "")" in
"general protection fault with EFLAGS 84784096, bits no x86 CPU sets (emulator state)") ;;
*) why="$why${why:+; }the recorded general protection fault with impossible EFLAGS not recognised" ;;
esac
sed 's/EFLAGS: 84784096/EFLAGS: 00010246/' "$t" >"$real"
[ -z "$(emulator_fault "$real" 0 "")" ] || why="$why${why:+; }a general protection fault with a possible EFLAGS called the emulator's"
# the kernel-mode single-step WARNING of CI of 06fa793 (6.12.117,
# single-threaded TCG, `direct`): the frame of its ud2, the kernel frame it
# trapped in and the user frame all hold impossible bits (the user's RFLAGS
# that syscall saved in R11, 01c88202, too); with a possible EFLAGS, even
# one with TF set, it stays the kernel's
t=tests/vm/testdata/tcg-db-warning-eflags.log
case "$(emulator_fault "$t" 0 "")" in
"WARNING at arch/x86/kernel/traps.c:1120 exc_debug_kernel+0xca/0x160 with EFLAGS 01c89002, bits no x86 CPU sets (emulator state)") ;;
*) why="$why${why:+; }the recorded WARNING with impossible EFLAGS not recognised" ;;
esac
sed 's/EFLAGS: 01c89002/EFLAGS: 00000146/' "$t" >"$real"
[ -z "$(emulator_fault "$real" 0 "")" ] || why="$why${why:+; }a WARNING with a possible EFLAGS called the emulator's"
# ppcoal's own proof of a stale translation (ppc_redirect_refused()): its
# two messages as the module prints them (the format strings read from
# ppcoal_hook.c, %ps/%pS filled in), each first in a log, then after an oops
fmt() { # fmt WORDS: the WARN_ONCE format of ppcoal_hook.c holding WORDS, filled in
	grep -o "WARN_ONCE(1, \"ppcoal: [^\"]*$1[^\"]*" ppcoal_hook.c | sed 's/^WARN_ONCE(1, "//; s/\\n$//' |
		sed 's/%ps/__napi_poll/; s/%pS/net_rx_action+0x2a0\/0x390/; s/%pS/0xffffffffc0a01053/; s/%ps/ppc_owner_poll_cb [ppcoal]/g'
}
warn() { # warn MESSAGE: a WARN_ONCE splat as 6.1 prints it
	printf '[    7.100000] ------------[ cut here ]------------\n[    7.100001] %s\n' "$1"
	printf '[    7.100002] WARNING: CPU: 1 PID: 20 at ppcoal_hook.c:470 ppc_redirect_refused+0x9e/0xb0 [ppcoal]\n'
	printf '[    7.100003] RSP: 0018:ffffb5c0c00d3d98 EFLAGS: 00010246\n'
}
st=$(fmt "stale translation")
other=$(fmt "no redirect of")
if [ -z "$st" ] || [ -z "$other" ] || [[ "$st$other" == *%* ]]; then
	why="$why${why:+; }ppc_redirect_refused()'s two WARN_ONCE formats not found in ppcoal_hook.c"
fi
warn "$st" >"$real"
case "$(emulator_fault "$real" 0 mttcg)" in
"stale translation ran (ppcoal's redirect check): $st") ;;
*) why="$why${why:+; }ppcoal's stale-translation warning not recognised" ;;
esac
warn "$other" >"$real"
[ -z "$(emulator_fault "$real" 0 mttcg)" ] || why="$why${why:+; }ppcoal's other redirect warning (the kernel's failure) called the emulator's"
for first in "BUG: kernel NULL pointer dereference, address: 0000000000000000" \
	"invalid opcode: 0000 [#1] PREEMPT SMP NOPTI" "kernel BUG at net/core/skbuff.c:2178!" \
	"INFO: task rmmod:812 blocked for more than 120 seconds." \
	"rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:" "Call Trace:" \
	"UBSAN: shift-out-of-bounds in net/core/dev.c:6600:2" "list_add corruption. prev->next should be next"; do
	{ echo "[    7.000000] $first"; warn "$st"; } >"$real"
	[ -z "$(emulator_fault "$real" 0 mttcg)" ] || why="$why${why:+; }a stale-translation warning after \"$first\" called the emulator's"
done
rm -f "$real"
if [ -z "$why" ]; then
	echo "PASS host:emulator-fault"
else
	echo "FAIL host:emulator-fault: $why"
fi

# boot_retrying (tests/run's boot loop) with a fake boot that writes the
# recorded double fault (impossible EFLAGS) its first N times, then a clean
# log; and one whose double fault has a possible EFLAGS
why=""
rt=$(mktemp -d)
log() { printf '%s\n' "$*" >>"$rt/said"; }
fake_boot() { # fake_boot CRASHES EFLAGS
	local n
	n=$(($(cat "$rt/n" 2>/dev/null || echo 0) + 1))
	echo "$n" >"$rt/n"
	if [ "$n" -le "$1" ]; then
		sed "s/EFLAGS: c3d6d602/EFLAGS: $2/" tests/vm/testdata/tcg-double-fault-eflags.log >"$rt/b.log"
		return 7
	fi
	printf 'PPCOAL-RESULT PASS load\nPPCOAL-DONE\n' >"$rt/b.log"
}
# retry_case CRASHES EFLAGS: "boots, crash logs kept, crashes listed,
# double faults in the final log, the last thing said, the status" (a fake
# death returns 7)
retry_case() {
	rm -f "$rt"/*
	: >"$rt/crashes"
	st=0
	boot_retrying 3 k/b "$rt/b.log" "" "$rt/crashes" fake_boot "$1" "$2" || st=$?
	echo "$(cat "$rt/n") $(find "$rt" -name 'b.log.emulator-crash*' | wc -l) $(wc -l <"$rt/crashes") $(grep -c 'Oops: double fault' "$rt/b.log") $(tail -n 1 "$rt/said" 2>/dev/null | grep -o 'on try 3 of 3\|try [0-9] of 3' || echo none) $st"
}
got=$(retry_case 2 c3d6d602)
[ "$got" = "3 2 2 0 try 3 of 3 0" ] || why="$why${why:+; }two emulator deaths, then a clean boot: \"$got\""
got=$(retry_case 3 c3d6d602)
[ "$got" = "3 2 2 1 on try 3 of 3 7" ] || why="$why${why:+; }three emulator deaths: \"$got\" (not 3 boots with the last death kept as the log)"
got=$(retry_case 3 00010246)
[ "$got" = "1 0 0 1 none 7" ] || why="$why${why:+; }a kernel death (possible EFLAGS) retried: \"$got\""
rm -rf "$rt"
unset -f log
if [ -z "$why" ]; then
	echo "PASS host:boot-retry"
else
	echo "FAIL host:boot-retry: $why"
fi

# The digest tests/run prints for a failed boot: each register dump of the
# first splat with its EFLAGS and the bytes at RIP, the call trace, and the
# first failing guest test with net_diag's counters; nothing for a clean log.
why=""
t=tests/vm/testdata/tcg-gpf-eflags.log
d=$(env -u PPCOAL_SPLAT_RE tests/vm/digest.sh "$t")
for want in "  Oops: general protection fault, maybe for address 0x10: 0000 [#1] PREEMPT SMP NOPTI" \
	"    RIP: 0010:do_sync_core+0x28/0x30  EFLAGS 84784096  code 8c c8 50 68 ba ae c4 9e <48> cf c3 cc cc" \
	"    RIP: 0033:0x47fbe9  EFLAGS 00000246  code c8 4c 8b 4c 24 08 0f 05 <48> 3d 01 f0 ff" \
	"    trace: ? do_sync_core+0x2a < smp_call_function_many_cond+0xea < ? __pfx_do_sync_core+0x10 < on_each_cpu_cond_mask+0x24 < text_poke_bp_batch+0xc1 < text_poke_finish+0x1f < ftrace_modify_all_code+0x116 < ftrace_shutdown.part.0+0xf9 < unregister_ftrace_function+0x49 < ppc_hook_detach+0x41"; do
	grep -qxF -- "$want" <<<"$d" || why="$why${why:+; }the oops digest lacks \"$want\""
done
[ "$(wc -l <<<"$d")" = 4 ] || why="$why${why:+; }the oops digest is not 4 lines"
real=$(mktemp)
# a transmit stall as docs/qemu-virtio-nomrg-stall.md shows it: udpflood's
# line comes before the FAIL line it causes; the lines of the test before
# (up to its result line) are not shown; the watchdog's line, repeated
# every 5 s with other numbers, is shown once, so net_diag's counters fit
{
	echo "[   50.000000] virtio_net virtio0 eth0: NETDEV WATCHDOG: CPU: 1: transmit queue 0 timed out 5844 ms"
	echo "PPCOAL-RESULT PASS observe-tcp"
	echo "udpflood: the transmit path stalled: no send found room for 10 s (20138 sent before)"
	for t in 1 2 3 4 5 6 7 8 9 10 11 12; do
		echo "[   $((50 + 5 * t)).276834] virtio_net virtio0 eth0: NETDEV WATCHDOG: CPU: 1: transmit queue 0 timed out $((5 * t))844 ms"
	done
} >"$real"
cat >>"$real" <<'LOG'
  FAIL: on: udpflood 600 failed
  net_diag: virtio interrupts:
 26:     215505          0   PCI-MSI 49154-edge      virtio0-output.0
  net_diag: here, then in netns peer:
  eth0:   14242      44    0    0    0     0          0         0 262638898  521708    0    0    0     0       0          0
[   55.276834] virtio_net virtio0 eth0: NETDEV WATCHDOG: CPU: 1: transmit queue 0 timed out 5844 ms
PPCOAL-RESULT FAIL virtio-differential on: udpflood 600 failed
LOG
d=$(env -u PPCOAL_SPLAT_RE tests/vm/digest.sh "$real")
want="  FAIL: on: udpflood 600 failed
   udpflood: the transmit path stalled: no send found room for 10 s (20138 sent before)
   virtio_net virtio0 eth0: NETDEV WATCHDOG: CPU: 1: transmit queue 0 timed out 5844 ms
   26: 215505 0 PCI-MSI 49154-edge virtio0-output.0
   eth0: 14242 44 0 0 0 0 0 0 262638898 521708 0 0 0 0 0 0"
[ "$d" = "$want" ] || why="$why${why:+; }the stall digest is not the FAIL line then its 4 diagnostic lines in order: $(tr '\n' '|' <<<"$d")"
# a one-line splat (a stalled pool, repeated every 60 s) then a WARNING:
# the pool's line once, the dumps under the WARNING's line; a splat line
# after a dump ends the splat; a host build's "WARNING: modpost" is no splat
{
	echo "WARNING: modpost: a build line"
	for t in 60 120 180 240; do
		echo "[ $t.0] page_pool_release_retry() stalled pool shutdown: id 3, 1 inflight $t sec"
	done
	sed 's/Oops: general protection fault.*/WARNING: CPU: 0 PID: 1 at net\/core\/x.c:1 f+0x1\/0x2/' tests/vm/testdata/tcg-gpf-eflags.log
	echo "BUG: a later splat"
} >"$real"
d=$(env -u PPCOAL_SPLAT_RE tests/vm/digest.sh "$real")
[ "$(head -n 3 <<<"$d")" = "  page_pool_release_retry() stalled pool shutdown: id 3, 1 inflight 60 sec
  WARNING: CPU: 0 PID: 1 at net/core/x.c:1 f+0x1/0x2
    RIP: 0010:do_sync_core+0x28/0x30  EFLAGS 84784096  code 8c c8 50 68 ba ae c4 9e <48> cf c3 cc cc" ] ||
	why="$why${why:+; }a one-line splat then a WARNING: $(head -n 3 <<<"$d" | tr '\n' '|')"
grep -qE "modpost|later splat" <<<"$d" && why="$why${why:+; }the digest shows a build line or a later splat"
: >"$real"
env -u PPCOAL_SPLAT_RE tests/vm/digest.sh "$real" >/dev/null || why="$why${why:+; }an empty log fails the digest"
printf 'PPCOAL-RESULT PASS load\nPPCOAL-DONE\n' >"$real"
[ -z "$(env -u PPCOAL_SPLAT_RE tests/vm/digest.sh "$real")" ] || why="$why${why:+; }a clean log has a digest"
rm -f "$real"
if [ -z "$why" ]; then
	echo "PASS host:digest"
else
	echo "FAIL host:digest: $why"
fi

# dmesg-unloaded: a report inside the markers is left out and said; the
# same report after them still fails dmesg-clean
why=""
sl=$(mktemp)
printf '%s\n' "[    1.0] PPCOAL-UNLOADED-BEGIN" "[    1.1] WARNING: suspicious RCU usage" \
	"[    1.2] PPCOAL-UNLOADED-END" PPCOAL-DONE >"$sl"
r=$(tests/vm/parse-log.sh k "$sl" 2>"$sl.err" | grep dmesg)
[ "$r" = "PASS k:dmesg-clean" ] || why="inside the markers gave \"$r\""
grep -q "1 kernel report(s) while ppcoal was not loaded" "$sl.err" || why="$why${why:+; }nothing said of it: $(cat "$sl.err")"
printf '%s\n' "[    1.3] WARNING: suspicious RCU usage" >>"$sl"
r=$(tests/vm/parse-log.sh k "$sl" 2>/dev/null | grep dmesg)
[[ "$r" == "FAIL k:dmesg-clean: 1 hit(s), first: WARNING: suspicious RCU usage"* ]] || why="$why${why:+; }after the markers gave \"$r\""
rm -f "$sl" "$sl.err"
if [ -z "$why" ]; then
	echo "PASS host:dmesg-unloaded"
else
	echo "FAIL host:dmesg-unloaded: $why"
fi

# sanitizers-armed: a log with every sanitizer's line passes, one without
# KFENCE's (a Debian 13 debug boot before kfence.sample_interval) fails and
# names it, a stock boot (no PPCOAL_ARMED) prints no such result
why=""
armed=$(bash -c '. tests/vm/kernels.sh && printf "%s\n" "$PPCOAL_DEBUG_ARMED"')
sl=$(mktemp)
{ awk '{ print "[    1.0] " $0 }' <<<"$armed"; echo PPCOAL-DONE; } >"$sl"
r=$(PPCOAL_ARMED=$armed tests/vm/parse-log.sh k "$sl" | grep armed)
[ "$r" = "PASS k:sanitizers-armed" ] || why="all armed gave \"$r\""
grep -v kfence "$sl" >"$sl.nok"
r=$(PPCOAL_ARMED=$armed tests/vm/parse-log.sh k "$sl.nok" | grep armed)
[[ "$r" == "FAIL k:sanitizers-armed: not in the log: \"kfence: initialized\" "* ]] ||
	why="$why${why:+; }no KFENCE gave \"$r\""
r=$(env -u PPCOAL_ARMED tests/vm/parse-log.sh k "$sl.nok" | grep armed)
[ -z "$r" ] || why="$why${why:+; }a stock boot gave \"$r\""
rm -f "$sl" "$sl.nok"
if [ -z "$why" ]; then
	echo "PASS host:sanitizers-armed"
else
	echo "FAIL host:sanitizers-armed: $why"
fi

# tests/run's collect() under tests/run's own errexit: counts PASS and FAIL
# lines, keeps each failed boot's log once (for the digest), and survives a
# FAIL line that names no log as its last line (one ended a run silently);
# insn-windows names its log and then the marks file; a path may hold a
# comma
why=""
out=$(bash -c 'set -euo pipefail
	passed=0 failed=0
	result() { if [ "$1" = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi; }
	eval "$(sed -n "/^failed_logs=()/,/^}/p" tests/run)"
	collect < <(printf "%s\n" "PASS a:b" "FAIL k/b:t1: r (log: /o/b.log)" \
		"FAIL k/b:t2: r (log: /o/b.log)" "FAIL k/c:t: r (log: /o/c.log)" "FAIL k/i:m: r (log: /o/i.log, marks: /o/i.marks)" \
		"FAIL k/d:t: r (log: /o/a,b/d.log)" "FAIL host:y: no log, a comma" "FAIL host:x: no log named")
	echo "$passed $failed ${failed_logs[*]}"' 2>&1) || why="collect failed: $out"
want="1 7 /o/b.log /o/c.log /o/i.log /o/a,b/d.log"
[ -n "$why" ] || [ "$out" = "$want" ] || why="collect gave \"$out\", not \"$want\""
if [ -z "$why" ]; then
	echo "PASS host:collect"
else
	echo "FAIL host:collect: $why"
fi

# insn-windows: two groups of two windows of 10 units each, a (10 and 12
# instructions a unit, 1 locked) and b (40 and 44, none): the medians are 11
# and 42; "most b a 31" passes (31 above a), "most b a 30" fails, "less a b
# 31" passes and "less a b 32" fails, "spread b 10" passes (4 of 42 is
# 9.5%) and "spread b 9" fails, a check of a group nobody measured (z) fails;
# c (100, 101 and 130): "agree c 1" passes (two of three within 1% of 101),
# "agree c 0.5" fails (one), "agree b 4" fails (40 and 44 are 4.8% off 42);
# paired: "pmost b a 31" passes (b - a: 30 and 32), "pmost b a 30" fails,
# "pmost a b -31" passes, "pmost a b -32" fails; e has repetition 1 alone
# (20), so "pmost e a 8" passes only if e/1 pairs with a/1 (12), not with
# the first window of a (10); "pmost z a" fails (no pair)
why=""
d=$(mktemp -d)
printf '%s\n' "mark 0 1000 5" "mark 1 1100 15" "mark 2 2000 20" "mark 3 2120 30" \
	"mark 4 3000 40" "mark 5 3400 40" "mark 6 4000 50" "mark 7 4440 50" \
	"mark 8 5000 0" "mark 9 5100 0" "mark 10 6000 0" "mark 11 6101 0" "mark 12 7000 0" "mark 13 7130 0" \
	"mark 14 8000 0" "mark 15 8200 0" >"$d/marks"
printf '%s\r\n' "x PPCOAL-INSNWIN a/0 10" "PPCOAL-INSNWIN a/1 10" "PPCOAL-INSNWIN b/0 10" \
	"PPCOAL-INSNWIN b/1 10" "PPCOAL-INSNWIN c/0 1" "PPCOAL-INSNWIN c/1 1" "PPCOAL-INSNWIN c/2 1" "PPCOAL-INSNWIN e/1 10" \
	"PPCOAL-INSNCHECK a1 agree c insns 1" "PPCOAL-INSNCHECK a2 agree c insns 0.5" "PPCOAL-INSNCHECK a3 agree b insns 4" \
	"PPCOAL-INSNCHECK m1 most b a insns 31" "PPCOAL-INSNCHECK m2 most b a insns 30" \
	"PPCOAL-INSNCHECK l1 less a b insns 31" "PPCOAL-INSNCHECK l2 less a b insns 32" \
	"PPCOAL-INSNCHECK s1 spread b insns 10" "PPCOAL-INSNCHECK s2 spread b insns 9" \
	"PPCOAL-INSNCHECK r1 range a locked 1 1" "PPCOAL-INSNCHECK n1 most z a insns 99" \
	"PPCOAL-INSNCHECK p1 pmost b a insns 31" "PPCOAL-INSNCHECK p2 pmost b a insns 30" \
	"PPCOAL-INSNCHECK p3 pmost a b insns -31" "PPCOAL-INSNCHECK p4 pmost a b insns -32" \
	"PPCOAL-INSNCHECK p5 pmost e a insns 8" "PPCOAL-INSNCHECK p6 pmost z a insns 99" >"$d/log"
got=$(tests/vm/insn-windows.sh k "$d/marks" "$d/log" "$d/summary" 2>&1 | grep -E '^(PASS|FAIL)' | sed 's/: .*//' | tr '\n' ' ')
want="PASS k:insn-marks PASS k:a1 FAIL k:a2 FAIL k:a3 PASS k:m1 FAIL k:m2 PASS k:l1 FAIL k:l2 PASS k:s1 FAIL k:s2 PASS k:r1 FAIL k:n1 PASS k:p1 FAIL k:p2 PASS k:p3 FAIL k:p4 PASS k:p5 FAIL k:p6 "
[ "$got" = "$want" ] || why="gave \"$got\", not \"$want\""
grep -q '^a  *insns  *11.00 (10.00-12.00)  locked  *1.000' "$d/summary" || why="$why${why:+; }summary: $(head -n 1 "$d/summary")"
rm -rf "$d"
if [ -z "$why" ]; then
	echo "PASS host:insn-windows"
else
	echo "FAIL host:insn-windows: $why"
fi

# census: a file of functions, a struct and a label at column 0; the census
# is written here by hand. Then a new caller, a change without a call, the
# locale (en_US sorts "_" apart: built from Debian's locales data when it is
# there) and a file without a call.
why=""
d=$(mktemp -d)
cat >"$d/drv.c" <<'EOC'
static int drv_poll(struct napi_struct *napi, int budget)
{
	page = page_pool_dev_alloc_pages(rq->pool);
	if (done < budget && napi_complete_done(napi, done))
		enable_irq(rq);
	page_pool_put_full_page(rq->pool, page, true);
	page_pool_put_full_page (rq->pool, page2, true);
	drv_napi_enable(rq);
	return done;
}

static const struct net_device_ops drv_ops = {
	.ndo_open = drv_open,
};

static void
drv_close (struct drv *d)
{
	napi_disable(&d->napi); page_pool_destroy(d->pool);
out:	if (d->xdp)
		xdp_return_frame(d->frame);
}

static void __drv_fill(struct drv *d)
{
	d->page = page_pool_dev_alloc_pages(d->pool);
}

int __drv_reset(struct drv *d)
{
	return 0;
}
EOC
eval "$(sed -n '/^census() {/,/^}/p;/^body() {/,/^}/p' scripts/ppcoal-verify-kernel)"
got=$(body "$d/drv.c" callers_census | tr '\n' ';')
want="1 __drv_fill page_pool_dev_alloc_pages;1 drv_close napi_disable;1 drv_close page_pool_destroy;1 drv_close xdp_return_frame;1 drv_poll napi_complete_done;1 drv_poll page_pool_dev_alloc_pages;2 drv_poll page_pool_put_full_page;"
[ "$got" = "$want" ] || why="gave \"$got\", not \"$want\""
h0=$(body "$d/drv.c" callers_census | sha256sum)
if localedef -i en_US -f UTF-8 "$d/en_US.UTF-8" 2>/dev/null; then
	# (bash itself warns that it cannot use the locale: its sort child does)
	[ "$( (LOCPATH=$d LC_ALL=en_US.UTF-8 body "$d/drv.c" callers_census) 2>/dev/null | sha256sum)" = "$h0" ] ||
		why="$why${why:+; }the census differs under en_US.UTF-8"
else
	echo "SKIP host:census: no en_US locale data (the locales package) for the locale case" >&2
fi
sed -i 's/^\treturn 0;$/\tpage_pool_put_full_page(d->pool, d->page, false);\n\treturn 0;/' "$d/drv.c"
h1=$(body "$d/drv.c" callers_census | sha256sum)
[ "$h1" != "$h0" ] || why="$why${why:+; }a new caller (__drv_reset) left the census as it was"
sed -i 's/enable_irq(rq);/enable_irq(rq->irq);/' "$d/drv.c"
[ "$(body "$d/drv.c" callers_census | sha256sum)" = "$h1" ] || why="$why${why:+; }a change without a call moved the census"
printf 'int f(void)\n{\n\treturn 0;\n}\n' >"$d/none.c"
[ "$(body "$d/none.c" callers_census)" = none ] || why="$why${why:+; }a file without a call: not \"none\""
rm -rf "$d"
if [ -z "$why" ]; then
	echo "PASS host:census"
else
	echo "FAIL host:census: $why"
fi
