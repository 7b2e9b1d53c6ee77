/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ppcoal: shared declarations. Paths, modes, hook targets and counters are
 * each declared once, as tables, here and in ppcoal_counters.h.
 */
#ifndef _PPCOAL_H
#define _PPCOAL_H

#include <linux/ftrace.h>
#include <linux/percpu.h>
#include <linux/skbuff.h>
#include <linux/mm_types.h>
#include <linux/seq_file.h>
#include <asm/asm-offsets.h>	/* X86_call_depth, for CALL_DEPTH_ACCOUNT */
#include <asm/ibt.h>
#include <asm/linkage.h>
#include <asm/nospec-branch.h>

#include "ppcoal_compat.h"

#ifndef CALL_DEPTH_ACCOUNT	/* no call depth tracking before 6.2 */
#define CALL_DEPTH_ACCOUNT ""
#endif

/*
 * PPC_HOOK_TRAMPOLINE(name, decide, nargs): the direct-call trampoline of a
 * hook (direct_calls=1), in place of its ftrace callback. The hooked
 * function's patched call site (fentry) calls it with the function's
 * arguments in their registers and, on top of the stack, the address
 * after that call site; the function's own return address (its caller)
 * lies above. It keeps the nargs argument registers (at most 6; the hook's
 * file asserts the function's type), calls
 * unsigned long decide(unsigned long parent_ip) with that caller, and
 * returns into the hooked function, or, when decide() returns an address,
 * into that function instead, with the same arguments and caller: what a
 * callback does by setting the instruction pointer in ftrace_regs. The
 * stack is the same when the call comes through ftrace_regs_caller
 * because another ftrace user shares the site: it "makes this a call to"
 * the direct trampoline (6.1 arch/x86/kernel/ftrace_64.S:252-280, 6.12
 * :266-310). ENDBR and the call depth accounting before a call as
 * samples/ftrace/ftrace-direct-multi.c (6.12 :52-57) has them. The
 * kernel keeps an 8-byte aligned stack (-mpreferred-stack-boundary=3).
 *
 * decide() may clobber every caller-saved register the trampoline does not
 * keep (rax, r10, r11, and the argument registers beyond nargs), and
 * returning into the function leaves them so at its entry. No caller
 * expects them back by the psABI; only GCC's interprocedural register
 * allocation (-fipa-ra) lets a caller keep a value in a register the
 * callee's body leaves alone, and only for a callee whose body it compiled
 * before, in its own file. GCC turns -fipa-ra off with -pg ("Options That
 * Control Optimization", -fipa-ra), and the function tracer's -pg -mfentry
 * is on the command line of a kernel built with it (6.1 Makefile:776 and
 * :968-975, 6.12 :769 and :927-934), asserted below; some files take it
 * off (kernel/trace's), but those have no fentry call site to hook: a
 * function ftrace can hook has one, so its file, and every caller the
 * compiler could have told about its registers, was built with it, unless the
 * kernel is linked with LTO (then callers in other files see the body
 * too), asserted below as well. ftrace's own caller rests on the same
 * rule: it keeps the argument registers and rax, and leaves r10 and r11 to
 * its callbacks at every traced function's entry (6.1
 * arch/x86/kernel/ftrace_64.S:82-88 and :121-127, 6.12 :83-89 and
 * :122-128).
 */
#if !defined(CONFIG_FUNCTION_TRACER) || !defined(CC_USING_FENTRY)
#error "ppcoal: the hook trampolines need a kernel built with the function tracer's -pg -mfentry"
#endif
#ifndef CONFIG_LTO_NONE
#error "ppcoal: the hook trampolines need a kernel built without LTO"
#endif
#define PPC_HOOK_TRAMPOLINE(name, decide, nargs) \
	asm(".pushsection .text, \"ax\", @progbits\n" \
	    ".globl " #name "\n" \
	    ".type " #name ", @function\n" \
	    #name ":\n\t" \
	    ASM_ENDBR \
	    CALL_DEPTH_ACCOUNT "\n\t" \
	    ".if " #nargs " > 6\n\t.error \"" #name ": more than 6 arguments\"\n\t.endif\n\t" \
	    ".if " #nargs " > 0\n\tpushq %rdi\n\t.endif\n\t" \
	    ".if " #nargs " > 1\n\tpushq %rsi\n\t.endif\n\t" \
	    ".if " #nargs " > 2\n\tpushq %rdx\n\t.endif\n\t" \
	    ".if " #nargs " > 3\n\tpushq %rcx\n\t.endif\n\t" \
	    ".if " #nargs " > 4\n\tpushq %r8\n\t.endif\n\t" \
	    ".if " #nargs " > 5\n\tpushq %r9\n\t.endif\n\t" \
	    "movq 8 * (" #nargs " + 1)(%rsp), %rdi\n\t" \
	    "call " #decide "\n\t" \
	    ".if " #nargs " > 5\n\tpopq %r9\n\t.endif\n\t" \
	    ".if " #nargs " > 4\n\tpopq %r8\n\t.endif\n\t" \
	    ".if " #nargs " > 3\n\tpopq %rcx\n\t.endif\n\t" \
	    ".if " #nargs " > 2\n\tpopq %rdx\n\t.endif\n\t" \
	    ".if " #nargs " > 1\n\tpopq %rsi\n\t.endif\n\t" \
	    ".if " #nargs " > 0\n\tpopq %rdi\n\t.endif\n\t" \
	    "testq %rax, %rax\n\t" \
	    "jz 1f\n\t" \
	    "movq %rax, (%rsp)\n" \
	    "1:\t" \
	    ASM_RET \
	    ".size " #name ", .-" #name "\n" \
	    ".popsection\n")

enum ppc_mode {
#define PPC_MODE(id, ...) \
	PPC_MODE_##id,
#include "ppcoal_tables.h"
#undef PPC_MODE
	PPC_NR_MODES
};

/*
 * The same modes named by their words, in the same order from the same
 * table (PPC_MODE_W_off == PPC_MODE_OFF, ...): the PPC_PATH table gives
 * each path's default mode as a word.
 */
enum ppc_mode_word {
#define PPC_MODE(id, word) \
	PPC_MODE_W_##word,
#include "ppcoal_tables.h"
#undef PPC_MODE
};

enum ppc_path {
#define PPC_PATH(id, ...) \
	PPC_PATH_##id,
#include "ppcoal_tables.h"
#undef PPC_PATH
	PPC_NR_PATHS
};

enum ppc_counter {
#define PPC_COUNTER(id, ...) \
	PPC_C_##id,
#include "ppcoal_counters.h"
#undef PPC_COUNTER
	PPC_NR_COUNTERS
};

enum ppc_hook_id {
#define PPC_HOOK(id, ...) \
	PPC_HOOK_##id,
#define PPC_REDIRECT(id, ...) \
	PPC_HOOK_##id,
#define PPC_TRACEPOINT(id, ...) \
	PPC_HOOK_##id,
#include "ppcoal_tables.h"
#undef PPC_TRACEPOINT
#undef PPC_REDIRECT
#undef PPC_HOOK
	PPC_NR_HOOKS
};

/* When a hook is live (the arm column of the hook and tracepoint tables). */
enum ppc_arm {
	PPC_ARM_PATH,		/* while its path is observe or on */
	PPC_ARM_ON,		/* while its path is on */
	PPC_ARM_OBSERVE,	/* while its path is observe: "on" retires it */
	PPC_ARM_LEARN,		/* on demand, while pool owners are learned */
	PPC_ARM_TRACK,		/* on demand: the NAPI poll tracker */
};

struct ppc_pcpu_stats {
	u64 c[PPC_NR_COUNTERS];
};

DECLARE_PER_CPU(struct ppc_pcpu_stats, ppc_stats);

/* The state below every file (ppcoal_tables.c) */
/* Current mode of each path, read locklessly on the fast path. */
extern enum ppc_mode ppc_mode[PPC_NR_PATHS];
extern struct mutex ppc_lock;
const char *ppc_mode_name(enum ppc_mode mode);
const char *ppc_path_name(enum ppc_path path);
const char *ppc_path_on_means(enum ppc_path path);

#define ppc_count(id) this_cpu_inc(ppc_stats.c[PPC_C_##id])
#define ppc_path_mode(p) READ_ONCE(ppc_mode[PPC_PATH_##p])

/* Replacements and callbacks named in PPC_HOOKS. */
bool ppc_skb_try_coalesce(struct sk_buff *to, struct sk_buff *from,
			  bool *fragstolen, int *delta_truesize);
#ifdef PPC_HAVE_NAPI_PP_PUT_PAGE
bool ppc_recycle_put(netmem_ref netmem);
#else
bool ppc_recycle_put(struct page *page);
#endif
/* The signature of an ftrace callback (ftrace_func_t). */
#define PPC_FTRACE_CB(name) \
	void name(unsigned long ip, unsigned long parent_ip, \
		  struct ftrace_ops *op, struct ftrace_regs *fregs)

PPC_FTRACE_CB(ppc_owner_pool_destroy_cb);
PPC_FTRACE_CB(ppc_owner_napi_del_cb);
PPC_FTRACE_CB(ppc_owner_pp_disable_cb);
PPC_FTRACE_CB(ppc_owner_alloc_cb);
PPC_FTRACE_CB(ppc_owner_poll_cb);
int ppc_owner_tp_register(void);
void ppc_owner_tp_unregister(void);
PPC_FTRACE_CB(ppc_virtio_page_to_skb_cb);
PPC_FTRACE_CB(ppc_virtio_build_skb_cb);
void ppc_virtio_build_skb_tramp(void);
unsigned long ppc_virtio_build_skb_direct(unsigned long parent_ip);
PPC_FTRACE_CB(ppc_virtio_alloc_cb);
PPC_FTRACE_CB(ppc_virtio_rx_frag_cb);

const char *ppc_clone_policy_name(void);

/* NAPI ownership of page pools (ppcoal_owner.c) */
int ppc_recycle_set_on(bool on);
void ppc_owner_show(struct seq_file *m);
void ppc_owner_exit(void);
void ppc_owner_init(void);

/* virtio_net caller ranges (ppcoal_virtio_hook.c) */
int ppc_virtio_resolve(void);
void ppc_virtio_forget(void);

/* Hook engine (ppcoal_hook.c) */
int ppc_resolve_symbol(const char *module, const char *symbol,
		       unsigned long *addr, unsigned long *size);
int ppc_path_attach(enum ppc_path path, bool coming);
int ppc_path_arm(enum ppc_path path, enum ppc_arm arm, bool live);
bool ppc_path_armed(enum ppc_path path, enum ppc_arm arm);
int ppc_path_set_on(enum ppc_path path, bool on);
int ppc_path_observe_arm(enum ppc_path path, enum ppc_mode mode);
int ppc_path_detach(enum ppc_path path);
bool ppc_path_attached(enum ppc_path path);
const char *ppc_path_state(enum ppc_path path, char *buf, size_t len);
int ppc_engine_init(void);
void ppc_engine_kill(void);
bool ppc_engine_dying(void);
void ppc_engine_exit(void);
void ppc_engine_show(struct seq_file *m);

/* May a path run on this kernel (ppcoal_verify.c) */
void ppc_verify_init(void);
bool ppc_verify_refuses(enum ppc_path path);
void ppc_verify_reason(enum ppc_path path, char *buf, size_t len);
const char *ppc_path_verified_word(enum ppc_path path);
bool ppc_verify_audit(const char *module, char *buf, size_t len);
void ppc_verify_show(struct seq_file *m);

/* Direct calls and ftrace registration helpers (ppcoal_direct.c) */
/*
 * The redirects' trampolines (ppcoal_direct.c), one declaration:
 * void a_tramp(void), ..., b_tramp(void);
 */
#define PPC_HOOK(...)
#define PPC_REDIRECT(id, p, a, mod, sym, repl, alternative) \
	repl##_tramp(void),
void
#include "ppcoal_tables.h"
ppc_tramp_none(void);
#undef PPC_REDIRECT
#undef PPC_HOOK

void ppc_direct_init(void);
bool ppc_direct_on(void);
int ppc_guard_get(void);
void ppc_guard_put(void);
bool ppc_guard_stuck(void);
void ppc_direct_exit(void);
int ppc_direct_register(struct ftrace_ops *ops, unsigned long ip,
			unsigned long tramp);
void ppc_pin(const char *what, int err);
int ppc_direct_attach(struct ftrace_ops *ops, unsigned long ip,
		      unsigned long tramp, const char *what, bool *live);
int ppc_direct_detach(struct ftrace_ops *ops, unsigned long tramp);
bool ppc_register_left_live(struct ftrace_ops *ops, int err);

#endif /* _PPCOAL_H */
