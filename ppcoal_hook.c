// SPDX-License-Identifier: GPL-2.0
/*
 * ppcoal hook engine: resolves hook targets, redirects them with ftrace
 * (livepatch style, kernel/livepatch/patch.c klp_ftrace_handler), follows
 * modules that own targets, and drains in-flight replacements on removal.
 *
 * Addresses are found with a disabled kprobe (the kprobe core does the
 * kallsyms lookup; nothing here calls a non-exported function) and sized
 * with sprint_symbol(). Redirect callbacks run without
 * FTRACE_OPS_FL_RECURSION for speed: they are notrace and call nothing.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/kallsyms.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>

#include "ppcoal.h"

DEFINE_PER_CPU(struct ppc_pcpu_inflight, ppc_inflight);

struct ppc_hook {
	const char *module;
	const char *symbol;
	enum ppc_path path;
	enum ppc_arm arm;
	void *replacement;
	ftrace_func_t callback;
	bool ipmodify;
	bool alt;		/* one of alternatives: may be missing */
	int (*tp_reg)(void);	/* a tracepoint probe, not an ftrace_ops */
	void (*tp_unreg)(void);
	unsigned long addr;
	bool attached;
	struct ftrace_ops ops;
};

static struct ppc_hook ppc_hooks[PPC_NR_HOOKS] = {
#define PPC_HOOK(id, p, a, mod, sym, repl, cb, ipmod, alternative) \
	[PPC_HOOK_##id] = { .module = mod, .symbol = sym, \
			    .path = PPC_PATH_##p, .arm = PPC_ARM_##a, \
			    .replacement = repl, .callback = cb, \
			    .ipmodify = ipmod, .alt = alternative },
#define PPC_TRACEPOINT(id, p, a, name, reg, unreg) \
	[PPC_HOOK_##id] = { .symbol = name, .path = PPC_PATH_##p, \
			    .arm = PPC_ARM_##a, .tp_reg = reg, \
			    .tp_unreg = unreg },
#include "ppcoal_tables.h"
#undef PPC_TRACEPOINT
#undef PPC_HOOK
};

struct ppc_path_status {
	bool waiting;		/* a module that owns targets is not loaded */
	const char *waiting_for;
	char reason[160];	/* set when the path cannot be attached */
};

static struct ppc_path_status ppc_status[PPC_NR_PATHS];

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

static void notrace ppc_redirect(unsigned long ip, unsigned long parent_ip,
				 struct ftrace_ops *op,
				 struct ftrace_regs *fregs)
{
	struct ppc_hook *h = container_of(op, struct ppc_hook, ops);

	/* Counted before the jump: the drain waits for the matching exit. */
	this_cpu_inc(ppc_inflight.enter[h - ppc_hooks]);
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
	int ret;

	if (h->tp_reg) {
		ret = h->tp_reg();
		if (ret)
			return ret;
		h->attached = true;
		return 0;
	}

	h->ops.func = h->replacement ? ppc_redirect : h->callback;
	/*
	 * No SAVE_REGS: with DYNAMIC_FTRACE_WITH_ARGS the instruction pointer
	 * is reachable through ftrace_regs, as livepatch uses it.
	 */
	h->ops.flags = h->ipmodify ? FTRACE_OPS_FL_IPMODIFY : 0;
	ret = ftrace_set_filter_ip(&h->ops, h->addr, 0, 1);
	if (ret)
		return ret;
	ret = register_ftrace_function(&h->ops);
	if (ret) {
		ftrace_set_filter_ip(&h->ops, h->addr, 1, 0);
		return ret;
	}
	h->attached = true;
	return 0;
}

static unsigned long ppc_inflight_of(int id)
{
	unsigned long in = 0, out = 0;
	int cpu;

	for_each_possible_cpu(cpu) {
		in += READ_ONCE(per_cpu(ppc_inflight.enter[id], cpu));
		out += READ_ONCE(per_cpu(ppc_inflight.exit[id], cpu));
	}
	return in - out;
}

static void ppc_hook_detach(struct ppc_hook *h)
{
	unsigned long left;
	unsigned int ms = 0;
	int ret;

	if (!h->attached)
		return;
	if (h->tp_reg) {
		/* Returns once no CPU runs the probe. */
		h->tp_unreg();
		h->attached = false;
		return;
	}
	/* Returns once no CPU can be in the callback or enter it again. */
	ret = unregister_ftrace_function(&h->ops);
	if (ret)
		pr_err("%s: unregister_ftrace_function: %d\n", h->symbol, ret);
	h->attached = false;
	if (!h->replacement)
		return;
	/* Every entry counted by ppc_redirect() must leave the shadow. */
	while ((left = ppc_inflight_of(h - ppc_hooks)) != 0) {
		usleep_range(1000, 2000);
		if (++ms % 10000 == 0)
			pr_warn("%s: still waiting for %lu in-flight calls\n",
				h->symbol, left);
	}
}

static void ppc_set_reason(enum ppc_path path, const struct ppc_hook *h,
			   int err)
{
	struct ppc_path_status *st = &ppc_status[path];

	if (err == -EBUSY)
		snprintf(st->reason, sizeof(st->reason),
			 "%s is already modified by another ftrace IPMODIFY user (a livepatch?) (-EBUSY)",
			 h->symbol);
	else if (err == -ENOENT)
		snprintf(st->reason, sizeof(st->reason),
			 "%s not found in %s (-ENOENT)", h->symbol,
			 h->module ?: "the kernel");
	else
		snprintf(st->reason, sizeof(st->reason),
			 "%s cannot be hooked (%d)", h->symbol, err);
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
	st->reason[0] = '\0';
	st->waiting = false;
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
	if (path == PPC_PATH_VIRTIO) {
		ret = ppc_virtio_resolve();
		if (ret) {
			snprintf(st->reason, sizeof(st->reason),
				 "virtio_net receive functions not found (%d)",
				 ret);
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
	pr_warn("%s: unavailable: %s; this path stays off, the others keep working\n",
		ppc_path_name(path), st->reason);
	return ret;
}

/**
 * ppc_path_detach() - remove every hook of a path and drain it
 * @path: the path
 *
 * Called with ppc_lock held. On return no CPU runs or will run a
 * replacement of this path (up to its final return instruction; module
 * exit adds synchronize_rcu_tasks() for that).
 */
void ppc_path_detach(enum ppc_path path)
{
	struct ppc_hook *h;
	bool was = false;

	lockdep_assert_held(&ppc_lock);
	for (h = ppc_prev_hook(path, NULL); h; h = ppc_prev_hook(path, h)) {
		was |= h->attached;
		ppc_hook_detach(h);
	}
	if (path == PPC_PATH_VIRTIO)
		ppc_virtio_forget();
	if (was)
		pr_info("%s: detached\n", ppc_path_name(path));
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
		if (!h->attached)
			return false;
	return true;
}

/**
 * ppc_path_arm() - attach or remove the hooks of one arm of a path
 * @path: the path
 * @arm: PPC_ARM_ON or PPC_ARM_LEARN
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
	struct ppc_hook *h;
	int ret = 0, alts = 0, alts_live = 0;

	lockdep_assert_held(&ppc_lock);

	for (h = ppc_next_armed(path, arm, NULL); h && live;
	     h = ppc_next_armed(path, arm, h)) {
		alts += h->alt;
		if (h->attached) {
			alts_live += h->alt;
			continue;
		}
		if (!h->tp_reg) {
			ret = ppc_resolve_symbol(NULL, h->symbol, &h->addr,
						 NULL);
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
	if (live && !ret)
		return 0;
	for (h = ppc_prev_hook(path, NULL); h; h = ppc_prev_hook(path, h))
		if (h->arm == arm)
			ppc_hook_detach(h);
	return ret;
}

/**
 * ppc_path_set_on() - prepare a path for "on", or retire what "on" used
 * @path: the path
 * @on: entering on (true, before the mode is written) or leaving it
 *	(false, after the mode is written)
 *
 * Called with ppc_lock held. Only the recycle path has hooks of its own
 * for "on": the NAPI poll tracker and the pool-owner bookkeeping.
 *
 * Return: 0 or a negative errno (entering only).
 */
int ppc_path_set_on(enum ppc_path path, bool on)
{
	int ret;

	lockdep_assert_held(&ppc_lock);
	if (path != PPC_PATH_RECYCLE)
		return 0;
	if (!on) {
		ppc_path_arm(path, PPC_ARM_LEARN, false);
		ppc_path_arm(path, PPC_ARM_ON, false);
		ppc_owner_stop();
		return 0;
	}
	ppc_owner_reset();
	ret = ppc_path_arm(path, PPC_ARM_ON, true);
	if (ret)
		pr_err("%s: on needs the NAPI poll tracker and the pool teardown hooks; they cannot be installed here (%d)\n",
		       ppc_path_name(path), ret);
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
	const char *name;
	int p;

	if (action != MODULE_STATE_COMING && action != MODULE_STATE_GOING)
		return NOTIFY_DONE;
	mutex_lock(&ppc_lock);
	for (p = 0; p < PPC_NR_PATHS; p++) {
		name = ppc_path_module(p, mod->name);
		if (!name)
			continue;
		if (action == MODULE_STATE_GOING) {
			/* Its exit has unregistered its devices: no traffic. */
			ppc_path_detach(p);
			ppc_status[p].waiting = true;
			ppc_status[p].waiting_for = name;
		} else {
			ppc_status[p].waiting = false;
			if (READ_ONCE(ppc_mode[p]) != PPC_MODE_OFF)
				ppc_path_attach(p, true);
		}
	}
	mutex_unlock(&ppc_lock);
	return NOTIFY_DONE;
}

static struct notifier_block ppc_module_nb = {
	.notifier_call = ppc_module_notify,
};

/**
 * ppc_engine_init() - start following modules that own hook targets
 *
 * Return: 0 or a negative errno.
 */
int ppc_engine_init(void)
{
	return register_module_notifier(&ppc_module_nb);
}

/**
 * ppc_engine_exit() - remove every hook and make module text unreachable
 */
void ppc_engine_exit(void)
{
	int p;

	unregister_module_notifier(&ppc_module_nb);
	mutex_lock(&ppc_lock);
	for (p = 0; p < PPC_NR_PATHS; p++)
		ppc_path_detach(p);
	mutex_unlock(&ppc_lock);
	/*
	 * A task preempted between a replacement's exit count and its return
	 * instruction still runs module text: wait until every task has
	 * passed a voluntary context switch, as ftrace does for trampolines.
	 */
	synchronize_rcu_tasks();
	for (p = 0; p < PPC_NR_HOOKS; p++)
		if (!ppc_hooks[p].tp_reg)
			ftrace_free_filter(&ppc_hooks[p].ops);
}
