/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ppcoal: the poll mark of recycle=on, set by a wrapper around each
 * audited driver's NAPI poll function (ppcoal_owner.c attaches it as an
 * ftrace direct call, one ops per function), so that no other NAPI poll
 * runs an instruction of ppcoal's.
 *
 * The patched fentry site of the poll calls ppc_wrap, or, when another
 * ftrace user shares the site, ftrace_regs_caller returns into it (6.1.192
 * arch/x86/kernel/ftrace_64.S:271-280, 6.12.118 :295-307). Either way the
 * stack holds B, where the poll goes on (after its fentry call, or where an
 * IPMODIFY user sent it), above it A, the poll's return address, and the
 * poll's arguments are in %rdi (the napi_struct) and %esi (the budget).
 *
 * Called by __napi_poll() (A inside it: the polls the __napi_poll tracker
 * marks, not busy polling or netpoll, which call ->poll() themselves), it
 * saves this CPU's mark, sets it to the NAPI, runs the poll body at B with
 * the return address .Lback, restores the saved mark and returns to A
 * with the body's %rax: the shape of the kernel's BPF trampoline with
 * BPF_TRAMP_F_CALL_ORIG | BPF_TRAMP_F_SKIP_FRAME (6.1.192
 * arch/x86/net/bpf_jit_comp.c:2059-2118), except that the body is entered
 * by pushing B and returning, not by a call generated at run time (a
 * module can neither generate nor patch text): no indirect branch, so no
 * ENDBR is needed at B on 6.12's IBT kernels. Called by anything else, it
 * returns to B at once, as a plain direct trampoline does.
 *
 * Rules it keeps (Debian 6.1.192 / 6.12.118):
 *  - every return through the return thunk (RET, 6.1
 *    arch/x86/include/asm/linkage.h:30-50, 6.12 :42-62), recorded for
 *    apply_returns() by objtool;
 *  - call depth (6.12 with retbleed=stuff): one CALL_DEPTH_ACCOUNT for the
 *    fentry call, which ftrace does not route through a call thunk
 *    (6.12 arch/x86/kernel/ftrace.c:71-77), as the BPF trampoline does
 *    (6.12 bpf_jit_comp.c:3040-3045), and one for the call to .Lgo, whose
 *    return address the body's RET consumes;
 *  - only %r10 and %r11 are used before the body, which the fentry
 *    contract lets a trampoline clobber (ftrace_caller saves rax, rcx,
 *    rdx, rsi, rdi, r8, r9 alone: 6.1 ftrace_64.S:82-88); %rax and %rdx
 *    are kept from the body's return on; the body runs 16 bytes lower
 *    than it would, so its stack alignment is unchanged;
 *  - the unwinder: every instruction has an ORC entry from the hints
 *    (objtool needs UNWIND_HINT_FUNC before each RET whose stack is not
 *    the entry's, 6.12 tools/objtool/check.c:3600, and the annotation of
 *    the local call, :1746); a trace taken in the body reads
 *    body -> ppc_wrap -> __napi_poll;
 *  - lifetime: every caller of a NAPI poll runs with bottom halves or
 *    interrupts disabled (6.1 kernel/softirq.c:432, net/core/dev.c:6763,
 *    6352), so no task sleeps or is preempted with this frame on its
 *    stack, and unregistering the ops waits synchronize_rcu_tasks_rude()
 *    and synchronize_rcu_tasks() (ppcoal_hook.c's lifetime rules) before
 *    this text may go;
 *  - nesting (netpoll inside a poll, an interrupt between the load and
 *    the store): the save and restore are last in, first out.
 */
#include <linux/linkage.h>
#include <linux/objtool.h>
#include <asm/percpu.h>
#include <asm/nospec-branch.h>
#include <asm/unwind_hints.h>
#include <asm/asm-offsets.h>

#include "ppcoal_kcompat.h"

#ifndef PPC_HAVE_CALL_DEPTH	/* no call depth tracking before 6.2 */
.macro CALL_DEPTH_ACCOUNT
.endm
#endif

/* .LPPC_C_RC_POLLS, numbered as ppcoal.h numbers the counters */
.set .Lppc_c_next, 0
#define PPC_COUNTER(id, ...) \
	.set .LPPC_C_##id, .Lppc_c_next ; .set .Lppc_c_next, .Lppc_c_next + 1 ;
#include "ppcoal_counters.h"
#undef PPC_COUNTER

/* the index it counts in, for ppcoal_owner.c to check against the enum */
	.section .rodata
SYM_DATA(ppc_wrap_counter, .long .LPPC_C_RC_POLLS)

	.text
/* ppc_polling.napi is at offset 0 (ppcoal_owner.c checks it) */
SYM_FUNC_START(ppc_wrap)
	CALL_DEPTH_ACCOUNT				/* the fentry call */
	movq	8(%rsp), %r11				/* A */
	subq	ppc_napi_poll_start(%rip), %r11
	cmpq	ppc_napi_poll_size(%rip), %r11
	jae	.Lpass					/* not from __napi_poll() */
	popq	%r11					/* B */
	UNWIND_HINT_FUNC				/* [A], as at the poll's entry */
	movq	PER_CPU_VAR(ppc_polling), %r10
	pushq	%r10					/* [prev][A] */
	movq	%rdi, PER_CPU_VAR(ppc_polling)		/* the mark */
	incq	PER_CPU_VAR(ppc_stats + 8 * .LPPC_C_RC_POLLS)
	CALL_DEPTH_ACCOUNT				/* the call below */
	ANNOTATE_INTRA_FUNCTION_CALL
	call	.Lgo					/* [.Lback][prev][A] */
.Lback:							/* %rax: the body's */
	UNWIND_HINT type=UNWIND_HINT_TYPE_CALL sp_reg=ORC_REG_SP sp_offset=16
	popq	%r11					/* prev; [A] */
	movq	%r11, PER_CPU_VAR(ppc_polling)
	UNWIND_HINT_FUNC
	RET						/* to A */
.Lpass:
	RET						/* to B */
.Lgo:
	pushq	%r11					/* [B][.Lback][prev][A] */
	UNWIND_HINT_FUNC
	RET						/* into the body */
SYM_FUNC_END(ppc_wrap)
