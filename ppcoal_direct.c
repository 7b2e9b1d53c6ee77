// SPDX-License-Identifier: GPL-2.0
/*
 * ppcoal direct calls (direct_calls=1), beside the hook engine: the
 * redirects' trampolines, the guard that keeps kernel.ftrace_enabled=0
 * refused while a direct hook is attached, and the two registration
 * helpers the engine shares with the guard. It knows no path and calls
 * nothing of the engine's; the engine (ppcoal_hook.c) calls it. The
 * lifetime rules its registrations follow are at the top of
 * ppcoal_hook.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ftrace.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>

#include "ppcoal.h"

/*
 * A redirect's direct-call trampoline. The target's patched call site
 * (fentry) calls it with the target's arguments in their registers and,
 * on top of the stack, the address after that call site; the target's
 * own return address lies above. It overwrites the former with the
 * replacement's address and returns into the replacement, which returns
 * to the target's caller: the control flow ppc_redirect() makes through
 * the ftrace caller, in three instructions. The stack is the same when
 * the call comes through ftrace_regs_caller because another ftrace user
 * shares the site (PPC_HOOK_TRAMPOLINE in ppcoal.h). The movq's
 * sign-extended 32-bit immediate holds any module address (modules live
 * in the top 2 GiB).
 */
#define PPC_TRAMPOLINE(repl) \
	".globl " #repl "_tramp\n" \
	".type " #repl "_tramp, @function\n" \
	#repl "_tramp:\n\t" \
	ASM_ENDBR \
	CALL_DEPTH_ACCOUNT "\n\t" \
	"movq $" #repl ", (%rsp)\n\t" \
	ASM_RET \
	".size " #repl "_tramp, .-" #repl "_tramp\n"

asm(".pushsection .text, \"ax\", @progbits\n"
#define PPC_HOOK(...)
#define PPC_REDIRECT(id, p, a, mod, sym, repl, alternative) \
	PPC_TRAMPOLINE(repl)
#include "ppcoal_tables.h"
#undef PPC_REDIRECT
#undef PPC_HOOK
	".popsection\n");

static bool direct_calls;
module_param(direct_calls, bool, 0444);
MODULE_PARM_DESC(direct_calls,
		 "load-time: enter the replacement functions and the build_skb hook through ftrace direct calls, a trampoline the patched call site calls itself (fewer instructions per call; while a path is attached, no BPF fentry/fexit program can attach to the functions it hooks so) (default 0)");

/* direct_calls=1 is in effect (the kernel can do direct calls). */
static bool ppc_direct;

/* The direct hooks attached (under ppc_lock): the guard lives while > 0. */
static unsigned int ppc_guard_users;

/* Unregistering the guard failed: it stays on ftrace's list, pinned. */
static bool ppc_guard_dead;

/* A direct ops of ppc_direct_attach() is left live: pinned. */
static bool ppc_ops_dead;

/*
 * The guard: a PERMANENT ftrace_ops on a function of ours that nothing
 * calls, registered while a direct hook is attached, so that
 * kernel.ftrace_enabled=0 is refused (6.1 :8524, 6.12 :8908) as it is with
 * the redirect ops, whose PERMANENT a direct ops loses; registering it
 * while ftrace is off fails with -EBUSY, so the hook does not attach.
 */
static noinline void ppc_guard_target(void)
{
	barrier();
}

/* The callback of the guard and of the claim: they only hold a function. */
static void notrace ppc_nop_cb(unsigned long ip, unsigned long parent_ip,
			       struct ftrace_ops *op, struct ftrace_regs *fregs)
{
}

static struct ftrace_ops ppc_guard_ops = {
	.func = ppc_nop_cb,
	.flags = FTRACE_OPS_FL_PERMANENT,
};

/**
 * ppc_pin() - keep the module loaded for good
 * @what: the hook or "guard" whose ftrace_ops may stay live
 * @err: what (un)registering it returned
 *
 * For a hook or the guard whose (un)registering failed in a way that may
 * leave it live: the module, and its text, must never go away.
 */
void ppc_pin(const char *what, int err)
{
	__module_get(THIS_MODULE);
	pr_crit("%s: (un)registering its ftrace_ops failed (%d): it may stay live, so ppcoal stays loaded\n",
		what, err);
}

/**
 * ppc_register_left_live() - may a failed register have left @ops live
 * @ops: the ftrace_ops whose registering failed
 * @err: the error it failed with
 *
 * After a failed register: true when ftrace died in ftrace_startup() after
 * enabling the ops (-ENODEV with FTRACE_OPS_FL_ENABLED still set, 6.1
 * kernel/trace/ftrace.c:3014-3023, 6.12 :3106-3114): call sites may be
 * patched to reach our text, so it must stay. Otherwise the ops may still
 * have been on ftrace_ops_list for a moment (the IPMODIFY rollback, 6.1
 * :3000-3008, 6.12 :3091-3099, removes it with no wait): wait as
 * ftrace_shutdown() would, so that no CPU or task is left in our callback
 * or replacement when the caller goes on (and, at worst, the module goes).
 *
 * Return: true when @ops must be treated as live (and the module pinned).
 */
bool ppc_register_left_live(struct ftrace_ops *ops, int err)
{
	if (err == -ENODEV && (ops->flags & FTRACE_OPS_FL_ENABLED))
		return true;
	synchronize_rcu_tasks_rude();
	synchronize_rcu_tasks();
	return false;
}

/**
 * ppc_guard_get() - a direct hook is about to attach: hold the guard
 *
 * Called with ppc_lock held. The first user registers the guard.
 *
 * Return: 0, or the errno of registering it (-EBUSY while ftrace is off).
 */
int ppc_guard_get(void)
{
	int ret;

	lockdep_assert_held(&ppc_lock);
	if (ppc_guard_users) {
		ppc_guard_users++;
		return 0;
	}
	if (ppc_guard_dead)
		return -ENODEV;
	ret = ftrace_set_filter_ip(&ppc_guard_ops,
				   (unsigned long)ppc_guard_target, 0, 1);
	if (ret)
		return ret;
	ret = register_ftrace_function(&ppc_guard_ops);
	if (!ret) {
		ppc_guard_users = 1;
	} else if (ppc_register_left_live(&ppc_guard_ops, ret)) {
		ppc_guard_dead = true;
		ppc_pin("guard", ret);
	} else {
		ftrace_set_filter_ip(&ppc_guard_ops,
				     (unsigned long)ppc_guard_target, 1, 0);
	}
	return ret;
}

/**
 * ppc_guard_put() - a direct hook went away: the last user drops the guard
 *
 * Called with ppc_lock held.
 */
void ppc_guard_put(void)
{
	int ret;

	lockdep_assert_held(&ppc_lock);
	if (WARN_ON_ONCE(!ppc_guard_users) || --ppc_guard_users)
		return;
	ret = unregister_ftrace_function(&ppc_guard_ops);
	if (ret) {
		/* still on ftrace_ops_list: its memory must stay */
		ppc_guard_dead = true;
		ppc_pin("guard", ret);
	}
}

/*
 * A direct ops that fails to register may have been on ftrace_ops_list
 * for a moment, and what it leaves is torn down with no grace period. It
 * fails so when the function already has an IPMODIFY user (a livepatch, a
 * kprobe with a post handler): a direct ops without an ops_func is refused
 * there, after it was listed (6.1.192 kernel/trace/ftrace.c:1983-1984, 6.12.118
 * :2056-2057; ftrace_startup() lists it, then rolls it back, 6.1 :2984,
 * :3002-3008, 6.12 :3075, :3091-3099), where ftrace_ops_list_func() may
 * call it:
 *  - 6.1: register_ftrace_direct_multi() then takes its direct_functions
 *    entries out with kfree() (:5719-5738, :5652-5667) while the listed
 *    ops's call_direct_funcs() may read them (:2519-2529, :2475-2484);
 *  - 6.12: register_ftrace_direct() then clears the ops's func
 *    (reset_direct(), :5956, :6055-6056), which a CPU that read the ops
 *    from the list meets as a NULL callback: ftrace_ops_list_func()
 *    warns and stops ftrace for good (FTRACE_WARN_ON(), :8037-8039).
 * So the function is claimed first by an IPMODIFY ops of ppcoal's, whose
 * registering fails (-EBUSY, before any direct ops exists) where another
 * holds it, and which holds it while the direct ops registers: the direct
 * ops's ops_func allows that one sharing (ENABLE_SHARE_IPMODIFY_SELF, 6.1
 * :1985, 6.12 :2058) and refuses any other IPMODIFY user later
 * (ENABLE_SHARE_IPMODIFY_PEER, 6.1 :8236-8239, 6.12 :8616-8621, before
 * that user is listed), as a missing ops_func did. Then the claim goes. A
 * BPF trampoline already on the function shares with the claim (its
 * ops_func rebuilds it for the claim and back, 6.12
 * kernel/bpf/trampoline.c:84-100), and the direct ops is then refused before it
 * is listed (one direct ops a function).
 */
static struct ftrace_ops ppc_claim_ops = {
	.func = ppc_nop_cb,	/* it only holds the function */
	.flags = FTRACE_OPS_FL_IPMODIFY,
};

/* The claim holds the function a direct ops is registering for. */
static bool ppc_claiming;

/* Unregistering the claim failed: it stays on ftrace's list, pinned. */
static bool ppc_claim_dead;

static int ppc_claim_ops_func(struct ftrace_ops *op, enum ftrace_ops_cmd cmd)
{
	switch (cmd) {
	case FTRACE_OPS_CMD_ENABLE_SHARE_IPMODIFY_SELF:
		/* the IPMODIFY user there is the claim: no other can be */
		return READ_ONCE(ppc_claiming) ? 0 : -EBUSY;
	case FTRACE_OPS_CMD_ENABLE_SHARE_IPMODIFY_PEER:
		return -EBUSY;
	default:
		return 0;	/* the claim leaves */
	}
}

/**
 * ppc_direct_register() - register a hook's direct ops
 * @ops: its ftrace_ops, filtered on @ip
 * @ip: the hooked function
 * @tramp: the trampoline the call site is to call
 *
 * Called with ppc_lock held. Refused first (-EBUSY) when another ftrace
 * user modifies @ip's instruction pointer (see above).
 *
 * Return: 0, or the errno of registering the claim or the direct ops.
 */
int ppc_direct_register(struct ftrace_ops *ops, unsigned long ip,
			unsigned long tramp)
{
	int ret, err;

	lockdep_assert_held(&ppc_lock);
	if (ppc_claim_dead)
		return -ENODEV;
	ret = ftrace_set_filter_ip(&ppc_claim_ops, ip, 0, 1);
	if (ret)
		return ret;
	ret = register_ftrace_function(&ppc_claim_ops);
	if (ret) {
		if (ppc_register_left_live(&ppc_claim_ops, ret)) {
			ppc_claim_dead = true;
			ppc_pin("claim", ret);
		} else {
			ftrace_set_filter_ip(&ppc_claim_ops, ip, 1, 0);
		}
		return ret;
	}
	ops->ops_func = ppc_claim_ops_func;
	WRITE_ONCE(ppc_claiming, true);
	ret = ppc_register_direct(ops, tramp);
	WRITE_ONCE(ppc_claiming, false);
	err = unregister_ftrace_function(&ppc_claim_ops);
	if (err) {
		/* still on ftrace_ops_list: its memory must stay */
		ppc_claim_dead = true;
		ppc_pin("claim", err);
	} else {
		ftrace_set_filter_ip(&ppc_claim_ops, ip, 1, 0);
	}
	return ret;
}

/**
 * ppc_direct_attach() - hold the guard and attach a direct ops
 * @ops: the ftrace_ops, not registered
 * @ip: the function it is for
 * @tramp: the trampoline the call site is to call
 * @what: its name, for the message of a pinning
 * @live: set when a failed register may have left @ops live: then the
 *	module is pinned and @ops, with the guard, stays as if attached
 *
 * Called with ppc_lock held. Undoes everything on any other failure.
 *
 * Return: 0, or the errno of the guard, the filter or the register.
 */
int ppc_direct_attach(struct ftrace_ops *ops, unsigned long ip,
		      unsigned long tramp, const char *what, bool *live)
{
	int ret;

	*live = false;
	ret = ppc_guard_get();
	if (ret)
		return ret;
	ret = ftrace_set_filter_ip(ops, ip, 0, 1);
	if (ret)
		goto put;
	ret = ppc_direct_register(ops, ip, tramp);
	if (!ret)
		return 0;
	if (ppc_register_left_live(ops, ret)) {
		*live = true;
		ppc_ops_dead = true;
		ppc_pin(what, ret);
		return ret;
	}
	/* 6.1 leaves them set on failure (:5730-5738) */
	ops->func = NULL;
	ops->trampoline = 0;
	ftrace_set_filter_ip(ops, ip, 1, 0);
put:
	ppc_guard_put();
	return ret;
}

/**
 * ppc_direct_detach() - detach a direct ops and drop its hold on the guard
 * @ops: an ops ppc_direct_attach() attached
 * @tramp: its trampoline
 *
 * Called with ppc_lock held. On success no CPU runs or can enter @tramp,
 * nor a function @tramp called (the waits of ftrace_shutdown(), see the
 * lifetime rules at the top of ppcoal_hook.c).
 *
 * Return: 0, or the errno of a failed unregister: @ops stays live and
 * the caller pins the module.
 */
int ppc_direct_detach(struct ftrace_ops *ops, unsigned long tramp)
{
	int ret = ppc_unregister_direct(ops, tramp);

	if (ret)
		ppc_ops_dead = true;
	else
		ppc_guard_put();
	return ret;
}

/**
 * ppc_direct_init() - direct_calls=1: say what it gets, once, at load
 */
void ppc_direct_init(void)
{
	if (!direct_calls)
		return;
	if (!IS_ENABLED(CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS)) {
		pr_warn("direct_calls=1 refused: this kernel has no CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS; the replacements are entered through ftrace callbacks\n");
		return;
	}
	ppc_direct = true;
	pr_info("direct_calls=1: the replacements and the hooks with a trampoline are entered through direct calls\n");
}

/**
 * ppc_direct_on() - are hooks with a trampoline entered through direct calls
 *
 * Return: true when direct_calls=1 was asked and the kernel can do it.
 */
bool ppc_direct_on(void)
{
	return ppc_direct;
}

/**
 * ppc_guard_stuck() - could a direct ops, the guard or the claim not go
 *
 * Return: true when unregistering the guard or the claim failed, or a
 * direct ops of ppc_direct_attach() is left live: it stays on ftrace's
 * list and the module is pinned.
 */
bool ppc_guard_stuck(void)
{
	return ppc_guard_dead || ppc_claim_dead || ppc_ops_dead;
}

/**
 * ppc_direct_exit() - free the guard's filter at module exit
 *
 * Called once no hook is attached and the guard is not stuck, so that the
 * guard is no longer registered.
 */
void ppc_direct_exit(void)
{
	ftrace_free_filter(&ppc_guard_ops);
	ftrace_free_filter(&ppc_claim_ops);
}
