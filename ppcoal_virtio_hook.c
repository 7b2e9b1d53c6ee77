// SPDX-License-Identifier: GPL-2.0
/*
 * ppcoal virtio_net receive path, without mirroring virtio_net's private
 * structures (design brief, decision 4): the callee is substituted.
 *
 * build_skb() called from virtio_net's receive functions becomes
 * napi_build_skb() (same signature, both exported) when in softirq, as
 * upstream review of the 2021 page_to_skb build-in-place change asked.
 * page_to_skb() (6.1 drivers/net/virtio_net.c:465, 6.12 :783) is counted
 * per branch from the calls it makes: build_skb (in place), napi_alloc_skb
 * (copy) and skb_add_rx_frag (payload left in frags). The last two are
 * counted in observe alone (the OBSERVE arm): every driver's receive path
 * calls them, and a counting callback costs each call some forty guest
 * instructions (docs/benchmarks.md "Direct calls"), which on need not pay.
 *
 * All callbacks here are notrace, take no locks and call nothing.
 * With direct_calls=1, build_skb's call site calls a trampoline instead of
 * the ftrace caller (PPC_HOOK_TRAMPOLINE), which asks the same question as
 * the callback: ppc_virtio_build_skb_divert().
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hardirq.h>
#include <linux/build_bug.h>
#include <linux/minmax.h>
#include <linux/skbuff.h>

#include "ppcoal.h"

/*
 * Functions of virtio_net whose build_skb calls are the receive path.
 * Entry 0 must stay page_to_skb: its range also classifies the branches.
 */
#define PPC_CALLER_PAGE_TO_SKB 0
static const struct {
	const char *symbol;
	bool optional;		/* inlined in some builds */
} ppc_virtio_callers[] = {
	{ "page_to_skb", false },
	{ "receive_buf", false },
	{ "virtnet_build_skb", true },
	{ "receive_small_build_skb", true },
	/* 6.12 drivers/net/virtio_net.c:1974, mergeable buffers after XDP */
	{ "build_skb_from_xdp_buff", true },
};

#define PPC_NR_CALLERS ARRAY_SIZE(ppc_virtio_callers)
/*
 * The last range spans the callers' ranges, from the lowest start to the
 * highest end: one compare tells build_skb's other callers (every driver
 * and protocol that builds skbs) from virtio_net's, where five would.
 */
#define PPC_ENVELOPE PPC_NR_CALLERS

static struct {
	unsigned long start, end;
} ppc_range[PPC_NR_CALLERS + 1];

/* Per CPU: a page_to_skb call whose branch is not known yet. */
static DEFINE_PER_CPU(bool, ppc_ptskb_open);

static __always_inline bool ppc_in(int i, unsigned long ip)
{
	return ip - ppc_range[i].start < ppc_range[i].end - ppc_range[i].start;
}

static __always_inline bool ppc_from_rx_path(unsigned long ip)
{
	unsigned int i;

	if (!ppc_in(PPC_ENVELOPE, ip))
		return false;
	for (i = 0; i < PPC_NR_CALLERS; i++)
		if (ppc_in(i, ip))
			return true;
	return false;
}

/**
 * ppc_virtio_resolve() - find virtio_net's receive functions
 *
 * Called with ppc_lock held, before the virtio hooks are attached.
 *
 * Return: 0, or the error of a required function that was not found.
 */
int ppc_virtio_resolve(void)
{
	unsigned long addr, size, lo = ULONG_MAX, hi = 0;
	unsigned int i;
	int ret;

	for (i = 0; i < PPC_NR_CALLERS; i++) {
		ret = ppc_resolve_symbol("virtio_net",
					 ppc_virtio_callers[i].symbol,
					 &addr, &size);
		if (ret && ppc_virtio_callers[i].optional) {
			addr = 0;
			size = 0;
		} else if (ret) {
			pr_err("virtio: virtio_net:%s: %d\n",
			       ppc_virtio_callers[i].symbol, ret);
			ppc_virtio_forget();
			return ret;
		}
		WRITE_ONCE(ppc_range[i].start, addr);
		WRITE_ONCE(ppc_range[i].end, addr + size);
		if (size) {
			lo = min(lo, addr);
			hi = max(hi, addr + size);
		}
	}
	/* page_to_skb is required: lo < hi */
	WRITE_ONCE(ppc_range[PPC_ENVELOPE].start, lo);
	WRITE_ONCE(ppc_range[PPC_ENVELOPE].end, hi);
	return 0;
}

/**
 * ppc_virtio_forget() - drop virtio_net's addresses (it is going away)
 *
 * Called with ppc_lock held, after the virtio hooks are detached.
 */
void ppc_virtio_forget(void)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ppc_range); i++) {
		WRITE_ONCE(ppc_range[i].start, 0);
		WRITE_ONCE(ppc_range[i].end, 0);
	}
}

/**
 * ppc_virtio_page_to_skb_cb() - ftrace callback on entry of page_to_skb
 * @ip: traced function
 * @parent_ip: its caller
 * @op: our ftrace_ops
 * @fregs: arguments
 */
void notrace ppc_virtio_page_to_skb_cb(unsigned long ip,
				       unsigned long parent_ip,
				       struct ftrace_ops *op,
				       struct ftrace_regs *fregs)
{
	ppc_count(VI_PTSKB_CALLS);
	this_cpu_write(ppc_ptskb_open, true);
}

/*
 * A build_skb() call from @parent_ip: counted, and where it continues:
 * from the virtio receive path in softirq and with virtio=on, in
 * napi_build_skb() (same arguments, same return type); else 0, in
 * build_skb() itself.
 */
static __always_inline unsigned long
ppc_virtio_build_skb_divert(unsigned long parent_ip)
{
	if (!ppc_from_rx_path(parent_ip)) {
		ppc_count(VI_OTHER_BUILD_SKB);
		return 0;
	}
	ppc_count(VI_RX_BUILD_SKB);
	if (ppc_in(PPC_CALLER_PAGE_TO_SKB, parent_ip)) {
		ppc_count(VI_PTSKB_BUILD);
		this_cpu_write(ppc_ptskb_open, false);
	}
	if (ppc_path_mode(VIRTIO) != PPC_MODE_ON)
		return 0;
	/* napi_build_skb() uses the per-CPU NAPI cache: BHs must be off. */
	if (!in_softirq() || in_hardirq()) {
		ppc_count(VI_SUBST_NOT_SOFTIRQ);
		return 0;
	}
	ppc_count(VI_SUBST);
	return (unsigned long)napi_build_skb;
}

/**
 * ppc_virtio_build_skb_cb() - ftrace callback on build_skb
 * @ip: traced function
 * @parent_ip: its caller
 * @op: our ftrace_ops
 * @fregs: arguments
 */
void notrace ppc_virtio_build_skb_cb(unsigned long ip, unsigned long parent_ip,
				     struct ftrace_ops *op,
				     struct ftrace_regs *fregs)
{
	unsigned long to = ppc_virtio_build_skb_divert(parent_ip);

	if (to)
		ppc_fregs_set_ip(fregs, to);
}

/**
 * ppc_virtio_build_skb_direct() - build_skb's hook through its trampoline
 * @parent_ip: build_skb's caller
 *
 * Called by ppc_virtio_build_skb_tramp (direct_calls=1), which keeps
 * build_skb's arguments.
 *
 * Return: the function to continue in instead of build_skb, or 0.
 */
unsigned long notrace ppc_virtio_build_skb_direct(unsigned long parent_ip)
{
	return ppc_virtio_build_skb_divert(parent_ip);
}

/*
 * build_skb(void *data, unsigned int frag_size) and napi_build_skb() take
 * two arguments (6.1 net/core/skbuff.c:337 and :407, 6.12 :492 and :560):
 * the trampoline keeps two registers, and the build fails if either
 * function changes type.
 */
static_assert(__same_type(&build_skb, &napi_build_skb));
static_assert(__same_type(&build_skb,
			  struct sk_buff *(*)(void *, unsigned int)));
PPC_HOOK_TRAMPOLINE(ppc_virtio_build_skb_tramp, ppc_virtio_build_skb_direct, 2);

/**
 * ppc_virtio_alloc_cb() - ftrace callback on napi_alloc_skb
 * @ip: traced function
 * @parent_ip: its caller
 * @op: our ftrace_ops
 * @fregs: arguments
 */
void notrace ppc_virtio_alloc_cb(unsigned long ip, unsigned long parent_ip,
				 struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	if (ppc_in(PPC_CALLER_PAGE_TO_SKB, parent_ip))
		ppc_count(VI_PTSKB_ALLOC);
}

/**
 * ppc_virtio_rx_frag_cb() - ftrace callback on skb_add_rx_frag
 * @ip: traced function
 * @parent_ip: its caller
 * @op: our ftrace_ops
 * @fregs: arguments
 *
 * Counts the first frag a page_to_skb call adds (big mode adds several).
 */
void notrace ppc_virtio_rx_frag_cb(unsigned long ip, unsigned long parent_ip,
				   struct ftrace_ops *op,
				   struct ftrace_regs *fregs)
{
	if (ppc_in(PPC_CALLER_PAGE_TO_SKB, parent_ip) && this_cpu_read(ppc_ptskb_open)) {
		this_cpu_write(ppc_ptskb_open, false);
		ppc_count(VI_PTSKB_FRAGS);
	}
}
