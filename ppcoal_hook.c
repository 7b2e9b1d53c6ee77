// SPDX-License-Identifier: GPL-2.0
/*
 * ppcoal hook engine: resolves hook targets, redirects them with ftrace
 * (livepatch style, kernel/livepatch/patch.c klp_ftrace_handler), follows
 * modules that own targets, and removes every hook before module text can
 * go away.
 *
 * Addresses are found with a disabled kprobe (the kprobe core does the
 * kallsyms lookup; nothing here calls a non-exported function) and sized
 * with sprint_symbol(). Redirect callbacks run without
 * FTRACE_OPS_FL_RECURSION for speed: they are notrace and call nothing
 * (but the warning of ppc_redirect_refused(), once, on a broken contract).
 *
 * Lifetime rules, each resting on a kernel line (Debian 6.1.192 / 6.12.117
 * kernel/trace/ftrace.c):
 *  - Our ftrace_ops live in module data, so __register_ftrace_function()
 *    marks them FTRACE_OPS_FL_DYNAMIC (6.1 :332, 6.12 :364); for such ops
 *    ftrace_shutdown(), run by unregister_ftrace_function(), waits
 *    synchronize_rcu_tasks_rude() and synchronize_rcu_tasks() before it
 *    returns (6.1 :3108-3129, the latter with CONFIG_PREEMPTION, which
 *    Debian's PREEMPT_DYNAMIC builds have; 6.12 :3197-3217). A CPU or a
 *    task that entered a replacement through the redirect, running or
 *    preempted in it, has left it by then: no in-flight count is needed.
 *    Those waits are skipped only when unregistering fails (ftrace
 *    disabled by an earlier ftrace bug, or an ops not registered): such a
 *    hook is kept as live and the module pinned (ppc_hook_detach()).
 *  - kernel.ftrace_enabled=0 would silently stop every hook, among them
 *    the teardown callbacks the owner table relies on. Every ops is
 *    FTRACE_OPS_FL_PERMANENT, as livepatch's: ftrace_enable_sysctl()
 *    refuses the write while one is registered (6.1 :8524, 6.12 :8908),
 *    and registering one while ftrace is off fails with -EBUSY.
 *  - Direct calls (direct_calls=1) replace the ops flags of a hook with a
 *    trampoline (every redirect, and the hooks whose row names one) with the
 *    kernel's own (6.1 :5731, 6.12 :6050): IPMODIFY and PERMANENT are
 *    gone from it. The kernel still refuses a livepatch (an IPMODIFY ops)
 *    on a function one of our direct ops holds, and our direct ops on a
 *    function a livepatch holds, with -EBUSY, because our direct ops has
 *    an ops_func that answers -EBUSY to every IPMODIFY user but ppcoal's
 *    own claim of the function (6.1 :1983-1984 and :8236-8237, 6.12
 *    :2056-2058 and :8616-8621), taken first so that the second case is
 *    refused before the direct ops registers (a failed one leaves what a
 *    CPU may still use with no grace period: ppc_direct_register());
 *    a second direct user (a BPF trampoline)
 *    gets -EBUSY too (6.1 :5714, 6.12 :6005). PERMANENT is carried by
 *    the guard (ppcoal_direct.c), registered before the first direct ops
 *    and removed after the last.
 *    One gap the kernel leaves: an IPMODIFY ops already registered that
 *    later adds a function we hold to its filter is not refused (6.1
 *    :1441 and :1983-1988 accept a record a direct ops holds; a kprobe
 *    with a post_handler does that); its change of the instruction
 *    pointer is then lost. A livepatch registers a new ops per function
 *    and is refused.
 *    Unregistering a direct ops is unregister_ftrace_function() (6.1
 *    :5775, 6.12 :6097): the same waits as above cover a CPU or task in
 *    the trampoline, or in the function a hook's trampoline calls, which
 *    are module text too.
 *  - Module parameters stay writable until free_module() (6.1
 *    kernel/module/main.c:755-759 and :1151-1155), after the exit
 *    function: ppc_engine_kill() makes every later attach fail, under
 *    ppc_lock, before exit removes anything.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/sched.h>
#include <linux/kernel.h>
#include <linux/kallsyms.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/uaccess.h>
#include <asm/text-patching.h>	/* CALL_INSN_SIZE, CALL_INSN_OPCODE */

#include "ppcoal.h"

struct ppc_hook {
	const char *module;
	const char *symbol;
	enum ppc_path path;
	enum ppc_arm arm;
	void *replacement;	/* else ops.func is the callback */
	void (*tramp)(void);	/* its direct-call trampoline, if it has one */
	bool alt;		/* one of alternatives: may be missing */
	int (*tp_reg)(void);	/* a tracepoint probe, not an ftrace_ops */
	void (*tp_unreg)(void);
	unsigned long addr;
	bool attached;
	bool stuck;		/* unregister failed: still live */
	struct ftrace_ops ops;
};

/*
 * No SAVE_REGS: with DYNAMIC_FTRACE_WITH_ARGS the instruction pointer is
 * reachable through ftrace_regs, as livepatch uses it. PERMANENT: see the
 * lifetime rules above.
 */
#define PPC_OPS_FLAGS(ipmod) \
	(FTRACE_OPS_FL_PERMANENT | ((ipmod) ? FTRACE_OPS_FL_IPMODIFY : 0))

/* Is @h entered through its trampoline (ppcoal_direct.c)? */
static bool ppc_hook_direct(const struct ppc_hook *h)
{
	return h->tramp && ppc_direct_on();
}

static struct ppc_hook ppc_hooks[PPC_NR_HOOKS] = {
#define PPC_HOOK(id, p, a, mod, sym, cb, tr, ipmod, alternative) \
	[PPC_HOOK_##id] = { .module = mod, .symbol = sym, \
			    .path = PPC_PATH_##p, .arm = PPC_ARM_##a, \
			    .alt = alternative, .tramp = tr, \
			    .ops.func = cb, .ops.flags = PPC_OPS_FLAGS(ipmod) },
#define PPC_REDIRECT(id, p, a, mod, sym, repl, alternative) \
	[PPC_HOOK_##id] = { .module = mod, .symbol = sym, \
			    .path = PPC_PATH_##p, .arm = PPC_ARM_##a, \
			    .replacement = repl, .tramp = repl##_tramp, \
			    .alt = alternative, \
			    .ops.flags = PPC_OPS_FLAGS(true) },
#define PPC_TRACEPOINT(id, p, a, name, reg, unreg) \
	[PPC_HOOK_##id] = { .symbol = name, .path = PPC_PATH_##p, \
			    .arm = PPC_ARM_##a, .tp_reg = reg, \
			    .tp_unreg = unreg },
#include "ppcoal_tables.h"
#undef PPC_TRACEPOINT
#undef PPC_REDIRECT
#undef PPC_HOOK
};

struct ppc_path_status {
	bool waiting;		/* a module that owns targets is not loaded */
	const char *waiting_for;
	char reason[192];	/* set when the path cannot be attached */
};

static struct ppc_path_status ppc_status[PPC_NR_PATHS];

/* What a path adds to its hooks (the PPC_PATH table). */
static const struct {
	int (*resolve)(void);
	void (*forget)(void);
	int (*set_on)(bool on);
} ppc_path_ops[PPC_NR_PATHS] = {
#define PPC_PATH(id, n, on, d, dflt, res, fgt, seton) \
	[PPC_PATH_##id] = { .resolve = res, .forget = fgt, .set_on = seton },
#include "ppcoal_tables.h"
#undef PPC_PATH
};

/* Module exit has begun: nothing may attach again (under ppc_lock). */
static bool ppc_dying;

/* The next hook of @path after @h (NULL: the first), or NULL. */
static struct ppc_hook *ppc_next_hook(enum ppc_path path, struct ppc_hook *h)
{
	for (h = h ? h + 1 : ppc_hooks; h < ppc_hooks + PPC_NR_HOOKS; h++)
		if (h->path == path)
			return h;
	return NULL;
}

/*
 * The hook of @path before @h (NULL: the last), or NULL: hooks are removed
 * in the reverse of the order they go live in (see ppcoal_tables.h).
 */
static struct ppc_hook *ppc_prev_hook(enum ppc_path path, struct ppc_hook *h)
{
	struct ppc_hook *p = h ? h : ppc_hooks + PPC_NR_HOOKS;

	while (p > ppc_hooks) {
		p--;
		if (p->path == path)
			return p;
	}
	return NULL;
}

/* The next hook of @path live in @arm after @h (NULL: the first), or NULL. */
static struct ppc_hook *ppc_next_armed(enum ppc_path path, enum ppc_arm arm,
				       struct ppc_hook *h)
{
	while ((h = ppc_next_hook(path, h)))
		if (h->arm == arm)
			return h;
	return NULL;
}

/* The module of the first hook of @path that lives in one, or NULL. */
static const char *ppc_path_first_module(enum ppc_path path)
{
	struct ppc_hook *h;

	for (h = ppc_next_hook(path, NULL); h; h = ppc_next_hook(path, h))
		if (h->module)
			return h->module;
	return NULL;
}

static void notrace ppc_redirect(unsigned long ip, unsigned long parent_ip,
				 struct ftrace_ops *op,
				 struct ftrace_regs *fregs);

/*
 * ppc_redirect() was called with the ops of a callback hook (no
 * replacement), or with a redirect's ops for a function that is not the
 * redirect's own. ftrace never does either. Our ops live in module data,
 * so they are DYNAMIC and a call site shared with another ftrace user
 * reaches them through ftrace_ops_list_func(), which passes
 * each ops to its own ->func, and only for a function its filter holds
 * (6.1 kernel/trace/ftrace.c:171-183 and :7658-7664, 6.12 :206-217 and
 * :8036-8042); an ops's own trampoline holds the call of its ->func and
 * the pointer to it, both written by create_trampoline() before any call
 * site can reach it (6.1 arch/x86/kernel/ftrace.c:387-412, 6.12
 * :388-418), and only a call site of the ops's filter that no other ops
 * traces calls it (6.1 :1773-1774, 6.12 :1812-1813). ppcoal never changes
 * a registered ops's ->func (which arch_ftrace_update_trampoline() would
 * rewrite) or filter. A trampoline is
 * freed only after the RCU-tasks waits of ftrace_shutdown() (6.1
 * :3108-3129, 6.12 :3197-3217), and a freed address is mapped again only
 * after a TLB flush on every CPU. Not redirecting is the safe answer (the
 * traced function runs stock); the warning says which of three things
 * happened, from the call that entered here (@ret, the address after it):
 *  - @op is a redirect's of ppcoal for another function (ppc_redirect()
 *    compared @ip with it): a call site reached an ops not its own;
 *  - memory there calls the ops's own callback, not ppc_redirect(): the
 *    CPU ran code that memory no longer holds, a stale translation of a
 *    trampoline whose address a new one reused (an emulator's fault;
 *    tests/vm/emulator-fault.sh reads this line);
 *  - anything else: the kernel broke ftrace's contract. @op is then not
 *    trusted: its callback is read with get_kernel_nofault().
 * Three WARN_ONCE()s, each with its own once: an emulator's stale
 * translation warned about first cannot hide a later breach of ftrace's
 * contract. The arguments keep ppc_redirect()'s first three where they
 * are, so that its fast path moves no register.
 * Without the check a callback hook's ops sends the CPU to address 0, as
 * once in CI of cdbfd69 (6.1.0-57, multi-threaded TCG, rmmod-race: RIP 0,
 * the stack's top the return into net_rx_action() from its call of
 * __napi_poll(), which only the POLL_ENTER callback hooks).
 */
static noinline notrace void
ppc_redirect_refused(unsigned long ip, unsigned long parent_ip,
		     struct ftrace_ops *op, unsigned long ret)
{
	unsigned long target = 0;
	ftrace_func_t func = NULL;
	u8 insn[CALL_INSN_SIZE];
	struct ppc_hook *h;
	s32 rel;

	/* found by its address alone: nothing of an unknown @op is read */
	for (h = ppc_hooks; h < ppc_hooks + PPC_NR_HOOKS; h++) {
		if (&h->ops == op && h->replacement) {
			WARN_ONCE(1, "ppcoal: %ps (called from %pS) not redirected: ppc_redirect() entered from %pS with the ops of ppcoal's redirect of %s, another function: a call site reached an ops not its own\n",
				  (void *)ip, (void *)parent_ip, (void *)ret,
				  h->symbol);
			return;
		}
	}
	if (!copy_from_kernel_nofault(insn, (void *)(ret - CALL_INSN_SIZE),
				      CALL_INSN_SIZE) &&
	    insn[0] == CALL_INSN_OPCODE) {
		memcpy(&rel, &insn[1], sizeof(rel));
		target = ret + rel;
	}
	if (get_kernel_nofault(func, &op->func))
		func = NULL;
	if (target && target != (unsigned long)ppc_redirect &&
	    target == (unsigned long)func)
		WARN_ONCE(1, "ppcoal: %ps (called from %pS) not redirected: ppc_redirect() entered from %pS with the ops %ps, whose call there in memory is to %ps: the CPU ran a stale translation of rewritten code (an emulator's fault)\n",
			  (void *)ip, (void *)parent_ip, (void *)ret, func,
			  (void *)target);
	else
		WARN_ONCE(1, "ppcoal: %ps (called from %pS) not redirected: ppc_redirect() entered from %pS with an ops that is no redirect of ppcoal's (its callback %ps; the call there in memory is to %ps)\n",
			  (void *)ip, (void *)parent_ip, (void *)ret, func,
			  (void *)target);
}

static void notrace ppc_redirect(unsigned long ip, unsigned long parent_ip,
				 struct ftrace_ops *op,
				 struct ftrace_regs *fregs)
{
	struct ppc_hook *h = container_of(op, struct ppc_hook, ops);

	/*
	 * A callback hook's ops, or a redirect's called for another function
	 * (a stale call site reaching a trampoline address that another
	 * redirect reused). ftrace never does either. The traced function's
	 * @ip is its fentry call site: the address filtered (h->addr, its
	 * start) or, where the kernel has IBT, the call after its ENDBR
	 * (ftrace_location() maps a start there, 6.1 kernel/trace/ftrace.c
	 * :1599-1617, 6.12 :1657-1675; @ip is the call's return address less
	 * its size, 6.1 arch/x86/kernel/ftrace_64.S:113, 6.12 :114). An ops of
	 * another module is not looked for: it would be read as ours.
	 */
	if (unlikely(!h->replacement || ip - h->addr > ENDBR_INSN_SIZE)) {
		ppc_redirect_refused(ip, parent_ip, op, _RET_IP_);
		return;
	}
	ppc_fregs_set_ip(fregs, (unsigned long)h->replacement);
}

/**
 * ppc_resolve_symbol() - find a function without kallsyms_lookup_name()
 * @module: owning module name, or NULL for vmlinux
 * @symbol: function name
 * @addr: where to store the function's start address
 * @size: where to store its size, may be NULL
 *
 * Registers a disabled kprobe by name (nothing is patched), reads the
 * address the kprobe core resolved, and sizes the function with
 * sprint_symbol(). On IBT kernels the kprobe sits after ENDBR; the offset
 * printed by sprint_symbol() gives the start back.
 *
 * Return: 0, or -ENOENT when the symbol does not exist, or another errno.
 */
int ppc_resolve_symbol(const char *module, const char *symbol,
		       unsigned long *addr, unsigned long *size)
{
	char name[MODULE_NAME_LEN + KSYM_NAME_LEN + 2];
	char buf[KSYM_SYMBOL_LEN];
	struct kprobe kp = {
		.symbol_name = name,
		.flags = KPROBE_FLAG_DISABLED,
	};
	unsigned long a, off, sz;
	size_t n = strlen(symbol);
	char *plus;
	int ret;

	if (module)
		snprintf(name, sizeof(name), "%s:%s", module, symbol);
	else
		strscpy(name, symbol, sizeof(name));
	ret = register_kprobe(&kp);
	if (ret)
		return ret;
	a = (unsigned long)kp.addr;
	unregister_kprobe(&kp);

	sprint_symbol(buf, a);
	plus = strchr(buf, '+');
	if (!plus || plus - buf != n || strncmp(buf, symbol, n) ||
	    sscanf(plus, "+%lx/%lx", &off, &sz) != 2 || off >= sz) {
		pr_err("%s: cannot size %s (kallsyms says \"%s\")\n",
		       name, symbol, buf);
		return -EINVAL;
	}
	*addr = a - off;
	if (size)
		*size = sz;
	return 0;
}

static int ppc_hook_attach(struct ppc_hook *h)
{
	bool live = false;
	int ret;

	if (ppc_dying)
		return -ESHUTDOWN;
	if (h->tp_reg) {
		ret = h->tp_reg();
		if (ret)
			return ret;
		h->attached = true;
		return 0;
	}

	if (ppc_hook_direct(h)) {
		ret = ppc_direct_attach(&h->ops, h->addr,
					(unsigned long)h->tramp, h->symbol,
					&live);
	} else {
		ret = ftrace_set_filter_ip(&h->ops, h->addr, 0, 1);
		if (ret)
			return ret;
		ret = register_ftrace_function(&h->ops);
		live = ret && ppc_register_left_live(&h->ops, ret);
		if (live)
			ppc_pin(h->symbol, ret);
		else if (ret)
			ftrace_set_filter_ip(&h->ops, h->addr, 1, 0);
	}
	if (live) {
		/* counts as live, stuck (with the guard, if direct) */
		h->stuck = true;
		h->attached = true;
	}
	if (ret)
		return ret;
	h->attached = true;
	return 0;
}

/*
 * Returns 0 once no CPU runs the hook's callback or replacement, or can
 * enter them again (the waits of ftrace_shutdown(), see the lifetime
 * rules above). A failed unregister leaves the hook live and stuck: the
 * module is pinned so that its text never goes away under it.
 * A stuck hook stays stuck, for every failure that makes one is for good:
 * unregistering a registered ops fails only once ftrace is dead
 * (ftrace_shutdown() returns -ENODEV first, 6.1 kernel/trace/ftrace.c
 * :3035, 6.12 :3126; ftrace_disabled is set by ftrace_init()'s failure and
 * ftrace_kill() and never cleared, 6.1 :118, :7544, :8177, 6.12 :123,
 * :7923, :8556), or for an ops not enabled or not on ftrace's list (6.1
 * :351-360), which only a register would change and a stuck hook is never
 * registered again; a register left live (ppc_hook_attach()) is one that
 * ftrace_startup() gave up on as ftrace died (6.1 :3021-3024, 6.12
 * :3112-3115). A retry would fail the same way, so a stuck hook is not
 * unregistered again, and ppc_engine_exit() never frees text it may
 * still enter.
 */
static int ppc_hook_detach(struct ppc_hook *h)
{
	int ret;

	if (!h->attached)
		return 0;
	if (h->tp_reg) {
		/* Returns once no CPU runs the probe. */
		h->tp_unreg();
		h->attached = false;
		return 0;
	}
	if (h->stuck)
		return -ENODEV;
	if (ppc_hook_direct(h))
		ret = ppc_direct_detach(&h->ops, (unsigned long)h->tramp);
	else
		ret = unregister_ftrace_function(&h->ops);
	if (ret) {
		h->stuck = true;
		ppc_pin(h->symbol, ret);
		return ret;
	}
	h->attached = false;
	return 0;
}

static void ppc_set_reason(enum ppc_path path, const struct ppc_hook *h,
			   int err)
{
	struct ppc_path_status *st = &ppc_status[path];

	if (err == -EBUSY && ppc_hook_direct(h))
		snprintf(st->reason, sizeof(st->reason),
			 "%s is already modified by another ftrace IPMODIFY user (a livepatch?) or direct-call user (a BPF trampoline?), or kernel.ftrace_enabled is 0 (-EBUSY)",
			 h->symbol);
	else if (err == -EBUSY)
		snprintf(st->reason, sizeof(st->reason),
			 "%s is already modified by another ftrace IPMODIFY user (a livepatch?), or kernel.ftrace_enabled is 0 (-EBUSY)",
			 h->symbol);
	else if (err == -ESHUTDOWN)
		snprintf(st->reason, sizeof(st->reason),
			 "ppcoal is being unloaded (-ESHUTDOWN)");
	else if (err == -ENOENT)
		snprintf(st->reason, sizeof(st->reason),
			 "%s not found in %s (-ENOENT)", h->symbol,
			 h->module ?: "the kernel");
	else
		snprintf(st->reason, sizeof(st->reason),
			 "%s cannot be hooked (%d)", h->symbol, err);
}

/* The one dmesg line of a path that went off for a reason now in stats. */
static void ppc_say_unavailable(enum ppc_path path)
{
	pr_warn("%s: unavailable: %s; this path stays off, the others keep working\n",
		ppc_path_name(path), ppc_status[path].reason);
}

/*
 * A path whose shadow was not verified against this kernel's Debian
 * source stays off for the module's life (ppcoal_verify.c): its reason,
 * set and said at load, is kept for stats.
 */
static bool ppc_refuse_unverified(enum ppc_path path)
{
	struct ppc_path_status *st = &ppc_status[path];

	if (!ppc_verify_refuses(path))
		return false;
	if (!st->reason[0])
		ppc_verify_reason(path, st->reason, sizeof(st->reason));
	return true;
}

/**
 * ppc_path_attach() - attach every hook of a path
 * @path: the path
 * @coming: a module owning targets of @path is being loaded right now
 *
 * Called with ppc_lock held. All or nothing: on failure the hooks attached
 * so far are removed and the reason is kept for stats and dmesg. A target
 * in a module that is not loaded (-ENOENT outside @coming) leaves the path
 * waiting; the module notifier attaches it when the module comes.
 *
 * Return: 0 when attached or waiting, else a negative errno.
 */
int ppc_path_attach(enum ppc_path path, bool coming)
{
	struct ppc_path_status *st = &ppc_status[path];
	struct ppc_hook *h;
	int ret = 0;

	lockdep_assert_held(&ppc_lock);
	if (ppc_dying)
		return -ESHUTDOWN;
	/* the reason was set, and said in dmesg, at load: it never changes */
	if (ppc_refuse_unverified(path))
		return -EPERM;
	st->reason[0] = '\0';
	st->waiting = false;
	/* a hook of any arm: maybe live, maybe not: never reported attached */
	for (h = ppc_next_hook(path, NULL); h; h = ppc_next_hook(path, h)) {
		if (h->stuck) {
			ret = -ENODEV;
			goto fail;
		}
	}
	for (h = ppc_next_armed(path, PPC_ARM_PATH, NULL); h;
	     h = ppc_next_armed(path, PPC_ARM_PATH, h)) {
		if (h->attached || h->tp_reg)
			continue;
		ret = ppc_resolve_symbol(h->module, h->symbol, &h->addr, NULL);
		if (ret == -ENOENT && h->module && !coming) {
			st->waiting = true;
			st->waiting_for = h->module;
			ret = 0;
			goto undo;
		}
		if (ret)
			goto fail;
	}
	if (ppc_path_ops[path].resolve) {
		ret = ppc_path_ops[path].resolve();
		/* its module went away since its hooks resolved: wait for it */
		if (ret == -ENOENT && ppc_path_first_module(path) && !coming) {
			st->waiting = true;
			st->waiting_for = ppc_path_first_module(path);
			ret = 0;
			goto undo;
		}
		if (ret) {
			snprintf(st->reason, sizeof(st->reason),
				 "functions the %s path needs not found (%d)",
				 ppc_path_name(path), ret);
			goto undo;
		}
	}
	for (h = ppc_next_armed(path, PPC_ARM_PATH, NULL); h;
	     h = ppc_next_armed(path, PPC_ARM_PATH, h)) {
		if (h->attached)
			continue;
		ret = ppc_hook_attach(h);
		if (ret)
			goto fail;
	}
	pr_info("%s: attached\n", ppc_path_name(path));
	return 0;
fail:
	ppc_set_reason(path, h, ret);
undo:
	for (h = ppc_prev_hook(path, NULL); h; h = ppc_prev_hook(path, h))
		ppc_hook_detach(h);
	if (st->waiting) {
		pr_info("%s: waiting for %s to load\n", ppc_path_name(path),
			st->waiting_for);
		return 0;
	}
	ppc_say_unavailable(path);
	return ret;
}

/**
 * ppc_path_detach() - remove every hook of a path
 * @path: the path
 *
 * Called with ppc_lock held. On success no CPU runs or will run a callback
 * or replacement of this path (see the lifetime rules at the top).
 *
 * Return: 0, or the error of a hook that could not be removed (it stays
 * live, the module stays pinned, the path reads unavailable).
 */
int ppc_path_detach(enum ppc_path path)
{
	struct ppc_hook *h;
	bool was = false;
	int ret = 0, err;

	lockdep_assert_held(&ppc_lock);
	for (h = ppc_prev_hook(path, NULL); h; h = ppc_prev_hook(path, h)) {
		was |= h->attached;
		err = ppc_hook_detach(h);
		if (err && !ret) {
			ret = err;
			snprintf(ppc_status[path].reason,
				 sizeof(ppc_status[path].reason),
				 "%s could not be unhooked (%d); ppcoal stays loaded",
				 h->symbol, err);
		}
	}
	if (ppc_path_ops[path].forget)
		ppc_path_ops[path].forget();
	if (was && !ret)
		pr_info("%s: detached\n", ppc_path_name(path));
	return ret;
}

/**
 * ppc_path_attached() - are all hooks of a path attached
 * @path: the path
 *
 * Return: true when every hook of @path is live.
 */
bool ppc_path_attached(enum ppc_path path)
{
	return ppc_path_armed(path, PPC_ARM_PATH);
}

/**
 * ppc_path_armed() - are all hooks of one arm of a path attached
 * @path: the path
 * @arm: which of its hooks
 *
 * Return: true when every hook of @path in @arm is live.
 */
bool ppc_path_armed(enum ppc_path path, enum ppc_arm arm)
{
	struct ppc_hook *h;

	for (h = ppc_next_armed(path, arm, NULL); h;
	     h = ppc_next_armed(path, arm, h))
		if (!h->attached || h->stuck)
			return false;
	return true;
}

/* ppc_path_arm(), and the hook that failed to attach in *@failed (if any) */
static int ppc_arm_hooks(enum ppc_path path, enum ppc_arm arm, bool live,
			 struct ppc_hook **failed)
{
	struct ppc_hook *h;
	int ret = 0, err, alts = 0, alts_live = 0;

	lockdep_assert_held(&ppc_lock);

	for (h = ppc_next_armed(path, arm, NULL); h && live;
	     h = ppc_next_armed(path, arm, h)) {
		alts += h->alt;
		if (h->stuck) {
			ret = -ENODEV;
			break;
		}
		if (h->attached) {
			alts_live += h->alt;
			continue;
		}
		if (!h->tp_reg) {
			ret = ppc_resolve_symbol(h->module, h->symbol,
						 &h->addr, NULL);
			if (ret == -ENOENT && h->alt) {
				ret = 0;
				continue;
			}
			if (ret)
				break;
		}
		ret = ppc_hook_attach(h);
		if (ret)
			break;
		alts_live += h->alt;
	}
	if (live && !ret && alts && !alts_live) {
		ret = -ENOENT;
		h = NULL;
	}
	if (ret)
		pr_err("%s: cannot hook %s (%d)\n", ppc_path_name(path),
		       h ? h->symbol : "any of the alternative functions", ret);
	if (ret && failed)
		*failed = h;
	if (live && !ret)
		return 0;
	for (h = ppc_prev_hook(path, NULL); h; h = ppc_prev_hook(path, h)) {
		if (h->arm != arm)
			continue;
		err = ppc_hook_detach(h);
		if (err && !ret)
			ret = err;
	}
	return ret;
}

/**
 * ppc_path_arm() - attach or remove the hooks of one arm of a path
 * @path: the path
 * @arm: PPC_ARM_ON, PPC_ARM_OBSERVE or PPC_ARM_LEARN
 * @live: attach (true) or remove (false)
 *
 * Called with ppc_lock held. Hooks go live in table order and are removed
 * in reverse. Attaching is all or nothing, except that alternatives (alt)
 * the kernel lacks are skipped; one of them must attach. A failure is
 * said in dmesg.
 *
 * Return: 0, or the negative errno of the hook that failed (-ENOENT when
 * no alternative exists).
 */
int ppc_path_arm(enum ppc_path path, enum ppc_arm arm, bool live)
{
	return ppc_arm_hooks(path, arm, live, NULL);
}

/**
 * ppc_path_set_on() - prepare a path for "on", or retire what "on" used
 * @path: the path
 * @on: entering on (true, before the mode is written) or leaving it
 *	(false, after the mode is written)
 *
 * Called with ppc_lock held; runs the path's own set_on operation, if it
 * has one (the PPC_PATH table).
 *
 * Return: 0 or a negative errno (entering only).
 */
int ppc_path_set_on(enum ppc_path path, bool on)
{
	lockdep_assert_held(&ppc_lock);
	if (on && ppc_dying)
		return -ESHUTDOWN;
	return ppc_path_ops[path].set_on ? ppc_path_ops[path].set_on(on) : 0;
}

/**
 * ppc_path_observe_arm() - match a path's observe-only hooks to a mode
 * @path: the path
 * @mode: the mode it is entering or in
 *
 * Called with ppc_lock held, after the path's other hooks attached (or
 * were found waiting). Hooks of the OBSERVE arm only count what the stock
 * function does, so "on" and a waiting path do without them. If one cannot
 * be attached or removed, the whole path is removed and the reason kept.
 *
 * Return: 0, or the negative errno of the hook that failed.
 */
int ppc_path_observe_arm(enum ppc_path path, enum ppc_mode mode)
{
	bool live = mode == PPC_MODE_OBSERVE && ppc_path_attached(path);
	struct ppc_hook *failed = NULL;
	int ret;

	lockdep_assert_held(&ppc_lock);
	ret = ppc_arm_hooks(path, PPC_ARM_OBSERVE, live, &failed);
	if (!ret)
		return 0;
	/*
	 * Not attached, or not removed (then detach keeps the hook pinned
	 * and gives the reason): either way the path goes off.
	 */
	if (!ppc_path_detach(path) && failed)
		ppc_set_reason(path, failed, ret);
	else if (!ppc_status[path].reason[0])
		snprintf(ppc_status[path].reason,
			 sizeof(ppc_status[path].reason),
			 "a hook of observe failed (%d)", ret);
	ppc_say_unavailable(path);
	return ret;
}

/**
 * ppc_path_state() - describe a path's hook state for stats
 * @path: the path
 * @buf: scratch buffer
 * @len: its size
 *
 * Return: "attached", "detached", "waiting for <module>" or
 * "unavailable: <reason>".
 */
const char *ppc_path_state(enum ppc_path path, char *buf, size_t len)
{
	const struct ppc_path_status *st = &ppc_status[path];

	if (st->reason[0])
		snprintf(buf, len, "unavailable: %s", st->reason);
	else if (st->waiting)
		snprintf(buf, len, "waiting for %s", st->waiting_for);
	else
		strscpy(buf, ppc_path_attached(path) ? "attached" : "detached",
			len);
	return buf;
}

/* Our own copy of the name: the module's struct is freed after GOING. */
static const char *ppc_path_module(enum ppc_path path, const char *name)
{
	struct ppc_hook *h;

	for (h = ppc_next_hook(path, NULL); h; h = ppc_next_hook(path, h))
		if (h->module && !strcmp(h->module, name))
			return h->module;
	return NULL;
}

static int ppc_module_notify(struct notifier_block *nb, unsigned long action,
			     void *data)
{
	struct module *mod = data;
	const char *name[PPC_NR_PATHS];
	bool ours = false;
	int p;

	if (action != MODULE_STATE_COMING && action != MODULE_STATE_GOING)
		return NOTIFY_DONE;
	/* Every module load passes here: the lock only for ours. */
	for (p = 0; p < PPC_NR_PATHS; p++) {
		name[p] = ppc_path_module(p, mod->name);
		ours |= !!name[p];
	}
	if (!ours)
		return NOTIFY_DONE;
	mutex_lock(&ppc_lock);
	for (p = 0; p < PPC_NR_PATHS && !ppc_dying; p++) {
		if (!name[p])
			continue;
		if (action == MODULE_STATE_GOING) {
			/* Its exit has unregistered its devices: no traffic. */
			ppc_path_detach(p);
			ppc_status[p].waiting = true;
			ppc_status[p].waiting_for = name[p];
		} else {
			ppc_status[p].waiting = false;
			if (READ_ONCE(ppc_mode[p]) != PPC_MODE_OFF &&
			    !ppc_path_attach(p, true))
				ppc_path_observe_arm(p, READ_ONCE(ppc_mode[p]));
		}
	}
	mutex_unlock(&ppc_lock);
	return NOTIFY_DONE;
}

static struct notifier_block ppc_module_nb = {
	.notifier_call = ppc_module_notify,
};

/**
 * ppc_engine_show() - the engine's line of the stats file
 * @m: the stats file
 */
void ppc_engine_show(struct seq_file *m)
{
	seq_printf(m, "hook_calls: %s\n", ppc_direct_on() ? "direct" : "ftrace");
}

/**
 * ppc_engine_init() - start following modules that own hook targets
 *
 * Return: 0 or a negative errno.
 */
int ppc_engine_init(void)
{
	int i;

	ppc_verify_init();
	for (i = 0; i < PPC_NR_PATHS; i++)
		ppc_refuse_unverified(i);
	ppc_direct_init();
	for (i = 0; i < PPC_NR_HOOKS; i++) {
		struct ppc_hook *h = &ppc_hooks[i];

		if (ppc_hook_direct(h)) {
			/* register_ftrace_direct*() sets both (6.12 wants no func) */
			h->ops.flags = 0;
			h->ops.func = NULL;
		} else if (h->replacement) {
			h->ops.func = ppc_redirect;
		}
	}
	return register_module_notifier(&ppc_module_nb);
}

/**
 * ppc_engine_kill() - module exit has begun: no hook may attach again
 *
 * Called with ppc_lock held, first thing in module exit: a parameter
 * write, the learner or a module notification that runs later finds the
 * engine dying and attaches nothing.
 */
void ppc_engine_kill(void)
{
	lockdep_assert_held(&ppc_lock);
	ppc_dying = true;
}

/**
 * ppc_engine_dying() - has module exit begun
 *
 * Return: true after ppc_engine_kill().
 */
bool ppc_engine_dying(void)
{
	lockdep_assert_held(&ppc_lock);
	return ppc_dying;
}

/**
 * ppc_engine_exit() - remove every hook; after it no module text runs
 *
 * Called after ppc_engine_kill(). unregister_ftrace_function() waits for
 * every CPU and task to leave our callbacks and replacements (the lifetime
 * rules at the top), and tracepoint probes are unregistered with
 * tracepoint_synchronize_unregister(). A hook that cannot be removed is
 * the one case where unloading would free live text: exit then never
 * returns, and says so.
 */
void ppc_engine_exit(void)
{
	bool stuck = false;
	int p;

	unregister_module_notifier(&ppc_module_nb);
	mutex_lock(&ppc_lock);
	for (p = 0; p < PPC_NR_PATHS; p++)
		stuck |= ppc_path_detach(p) != 0;
	stuck |= ppc_guard_stuck();
	mutex_unlock(&ppc_lock);
	while (stuck) {
		pr_emerg("a hook could not be removed; unloading would leave it calling freed module text, so this module exit waits forever\n");
		/* TASK_IDLE: no hung-task warning every two minutes */
		schedule_timeout_idle(3600 * HZ);
	}
	for (p = 0; p < PPC_NR_HOOKS; p++)
		if (!ppc_hooks[p].tp_reg)
			ftrace_free_filter(&ppc_hooks[p].ops);
	ppc_direct_exit();
}
