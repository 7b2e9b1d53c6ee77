# shellcheck shell=bash
# Sourced by tests/run (and checked by tests/host-checks.sh against
# tests/vm/testdata/: the recorded emulator faults): tells a boot that failed by the emulator's fault
# from one that failed by the kernel's.
#
# emulator_fault LOG QEMU_EXIT_STATUS QEMU_KIND: prints why a boot failed
# by the emulator's fault, or nothing.
#  - QEMU itself crashed: killed by a signal of a crash (SIGILL, SIGABRT,
#    SIGBUS, SIGFPE, SIGSEGV: status 128 + N), or an emulator assertion on
#    its stderr. Not our timeout (137) nor an interrupted run (boot.sh
#    exits 143 on INT, TERM or HUP; 130 from timeout): those are no crash
#    and are never booted again.
#  - mttcg only: "Oops: int3" where the oops's code dump shows that memory
#    at the trapping address no longer holds int3 (0xcc; the byte before
#    the <..> marker, RIP being past the int3). The kernel's text_poke_bp()
#    makes every CPU serialise (text_poke_sync(): an IPI running
#    sync_core()) after writing the final byte and before it drops the
#    int3 handler's descriptor, so no CPU can still execute that int3; a
#    vCPU of QEMU 7.2's multi-threaded TCG can, from a stale translation
#    (seen with no module loaded: sched_clock_cpu+0x8 while the kernel
#    flipped the sched_clock_stable static key at boot; kernel-facts.md).
#    An int3 that is still in memory stays the kernel's failure.
#  - any boot: ppcoal's redirect check (ppc_redirect_refused(),
#    ppcoal_hook.c) said, before any other splat, that the CPU ran "a stale
#    translation of rewritten code": ppc_redirect() was entered with another
#    hook's ftrace_ops, from a call that memory shows to be a call of that
#    ops's own callback (a trampoline address reused by a new trampoline
#    whose old code still ran). On real CPUs ftrace writes a trampoline's
#    call and its ops pointer together before any site can reach it. Its
#    other message (an ops that is no redirect of ppcoal's: memory there
#    shows no call of the ops's own callback, or cannot be read) stays the
#    kernel's failure, as does the stale message after any other report of
#    the kernel (a splat of tests/vm/splat.sh, a die header like "invalid
#    opcode: 0000 [#1]", a kernel BUG, a hung task or RCU stall INFO, a call
#    trace, UBSAN, a list corruption).
#  - any boot: the first oops ("Oops: double fault", "Oops: general
#    protection fault", ...) or WARNING whose register dump has EFLAGS bits
#    that x86 hardware always keeps 0 (3, 5, 15, 22 and up; POPF cannot set
#    them either), in the frame the CPU itself pushed for that exception
#    (a WARNING's: the ud2 of WARN_ON, trapped by handle_bug(), 6.12
#    arch/x86/kernel/traps.c:283-336, and shown by __warn()):
#    no kernel or module code can produce that state, the emulator's CPU
#    model did (seen on 6.12.117 under single-threaded TCG during `toggle`,
#    a double fault with EFLAGS c3d6d602,
#    tests/vm/testdata/tcg-double-fault-eflags.log; in rmmod-race, a general
#    protection fault at the iretq of do_sync_core() with EFLAGS 84784096,
#    tests/vm/testdata/tcg-gpf-eflags.log; in `direct`, a kernel-mode
#    single-step WARNING with EFLAGS 01c89002, whose user frame's R11, the
#    RFLAGS that syscall saved, held such bits too,
#    tests/vm/testdata/tcg-db-warning-eflags.log; once before under
#    multi-threaded TCG, kernel-facts.md). An oops with a possible EFLAGS
#    (a stack overflow, a bad pointer) stays the kernel's failure.
# The awk programs read to the end of their input: one that exits early can
# make tr die of SIGPIPE, and pipefail then failed the match (5 of 300 calls).
# shellcheck source=tests/vm/splat.sh
. "$(dirname "${BASH_SOURCE[0]}")/splat.sh"

emulator_fault() {
	local qline rip msg fl e
	qline=$(grep -m1 -E '^qemu-system-x86_64: .*(Assertion|assertion|fatal|core dumped)' "$1")
	if [[ " 132 134 135 136 139 " == *" $2 "* ]] || [ -n "$qline" ]; then
		echo "QEMU crashed (exit $2)${qline:+: $qline}"
	elif [ "$3" = mttcg ] && rip=$(tr -d '\r' <"$1" | awk '
		!seen && /Oops: int3/ { seen = 1; next }
		seen == 1 && !rip && match($0, /RIP: .*/) { rip = substr($0, RSTART) }
		seen == 1 && /Code:/ {
			if (match($0, /[0-9a-f][0-9a-f] <[0-9a-f][0-9a-f]>/))
				stale = substr($0, RSTART, 2) != "cc"
			seen = 2
		}
		END { print rip; exit !stale }'); then
		echo "stale int3 executed (MTTCG): $rip"
	elif msg=$(tr -d '\r' <"$1" | awk -v earlier="$PPCOAL_SPLAT_BASE|kernel BUG at|[[]#[0-9]+[]]|INFO:|Call Trace:|UBSAN:|corruption" '
		!seen && /ppcoal: .* not redirected: .*the CPU ran a stale translation of rewritten code/ { seen = 1; line = $0; sub(/^\[[^]]*\] /, "", line) }
		!seen && $0 ~ earlier { seen = 2 }
		END { print line; exit seen != 1 }'); then
		echo "stale translation ran (ppcoal's redirect check): $msg"
	elif fl=$(tr -d '\r' <"$1" | awk '
		!seen && match($0, /Oops: [a-z0-9 ]+/) { kind = substr($0, RSTART + 6, RLENGTH - 6); seen = 1; next }
		!seen && match($0, /WARNING: CPU: [0-9]+ PID: [0-9]+ at .*/) { kind = "WARNING at " substr($0, RSTART + index(substr($0, RSTART), " at ") + 3); seen = 1; next }
		seen == 1 && match($0, /EFLAGS: [0-9a-f]+/) { print substr($0, RSTART + 8, RLENGTH - 8) " " kind; seen = 2 }') &&
		e=${fl%% *} && [ -n "$e" ] && [ ${#e} -le 16 ] && (((16#$e & 0xffffffffffc08028) != 0)); then
		echo "${fl#* } with EFLAGS $e, bits no x86 CPU sets (emulator state)"
	fi
}

# boot_retrying TRIES PREFIX LOG QEMU_KIND CRASHES BOOT_COMMAND...: runs the
# boot command (which writes LOG) until it did not die of the emulator's
# fault, at most TRIES times; each emulator death is logged, its LOG kept as
# LOG.emulator-crashN and listed in CRASHES. The last try's death is not
# excused: it is logged as such and its LOG stays for the caller to parse.
# Returns the boot command's status of the last try.
boot_retrying() {
	local tries=$1 prefix=$2 blog=$3 kind=$4 crashes=$5 try rc why
	shift 5
	for try in $(seq "$tries"); do
		rc=0
		"$@" || rc=$?
		why=$(emulator_fault "$blog" "$rc" "$kind")
		[ -n "$why" ] || break
		if [ "$try" = "$tries" ]; then
			log "$prefix: $why, on try $try of $tries: its failures count"
			break
		fi
		log "$prefix: $why; booting again (try $((try + 1)) of $tries)"
		mv "$blog" "$blog.emulator-crash$try"
		echo "EMULATOR-CRASH $prefix: $why (log: $blog.emulator-crash$try)" >>"$crashes"
	done
	return "$rc"
}
