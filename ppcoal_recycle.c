// SPDX-License-Identifier: GPL-2.0
/*
 * ppcoal shadow of the skb page-pool free: page_pool_return_skb_page()
 * (6.1, net/core/page_pool.c:915) and napi_pp_put_page() (6.12,
 * net/core/skbuff.c:1027). Both are called for every page of a
 * pp_recycle skb when it is freed.
 *
 * observe: the stock decision, counted. 6.1 always puts with
 * allow_direct = false (the locked ptr_ring); 6.12 then applies its own
 * NAPI-local rule (page_pool_napi_local(), net/core/page_pool.c:887), which
 * the shadow evaluates too, to count it.
 *
 * on: the page goes straight into the pool's lockless cache when the free
 * runs in softirq inside the poll, on this CPU, of the NAPI that owns the
 * pool, and that NAPI's driver is on the list of audited drivers. Upstream
 * recycles directly only into pools whose driver declared a NAPI the sole
 * consumer of its pages (page_pool_params.napi, 6.12
 * include/net/page_pool/types.h; upstream 4a36d0180c45 in 6.6 and the
 * .napi rule of 6.10) and can withdraw it
 * (page_pool_disable_direct_recycling(), dd64b232deb8). ppcoal goes beyond
 * that only where a human audit says the pool's NAPI is its sole consumer:
 *  - eligible drivers are a table (PPC_AUDITED in ppcoal_tables.h, each row
 *    with the driver lines its audit rests on): they allocate from their
 *    pools only inside their NAPI poll or while it is disabled, destroy a
 *    pool only after napi_disable(), and free no pool page in ->poll()
 *    after napi_complete_done(). The driver is the module that holds the
 *    NAPI's ->poll function, which must be the one its row names (the
 *    code the audit read). recycle_drivers adds whole drivers (experts
 *    only);
 *  - which NAPI each CPU polls now: marked for the polls of the audited
 *    drivers alone, by a wrapper around their poll functions
 *    (ppcoal_owner_wrap.S) when __napi_poll(), the only caller of ->poll
 *    from net_rx_action() and threaded NAPI, calls them; or, where a
 *    wrapper cannot serve, for every poll, at __napi_poll() entry
 *    (ftrace) until the napi:napi_poll tracepoint after ->poll returns
 *    (see ppc_owner_tp()). Busy polling and netpoll call ->poll
 *    themselves: unmarked, so those frees use the ring. 6.12 marks the
 *    same way: napi->list_owner only holds for sole consumers;
 *  - which NAPI owns a pool: the one polling when the pool allocates.
 *    The allocation probe is armed only while a pool the free path met is
 *    unknown, and removed once it is learned (at most PPC_LEARN_MAX).
 *    A pool seen allocating under two NAPIs is shared: never direct.
 *    An owner is forgotten when its pool is destroyed or its NAPI deleted,
 *    so no entry outlives either.
 * 6.12 pools that name their NAPI (page_pool_params.napi) or CPU are the
 * kernel's: ppcoal never learns them, and a pool whose direct recycling
 * its driver withdrew (page_pool_disable_direct_recycling()) is never
 * direct again while it lives.
 *
 * This file is the shadow and its "on" rule; the tracker, the owner table,
 * the learner and the audited drivers are in ppcoal_owner.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>

#include "ppcoal.h"
#include "ppcoal_owner.h"

/*
 * "on": may this page go straight into @pool's cache? Counts the reason
 * when not. @pool is alive: the page being freed holds it. @placed: the
 * kernel's own rule owns this pool (6.12 .napi or cpuid) and said no.
 *
 * Interrupts disabled inside the owner's poll are not the poll's own
 * code but something nested in it, which may have interrupted the
 * poll's own use of the cache: netconsole's netpoll_send_skb() disables
 * them (6.1 net/core/netpoll.c:397, 6.12 :390) and, through
 * netpoll_poll_dev(), zap_completion_queue() frees completed skbs so
 * (6.1 :367, :216, :280; 6.12 :360, :211, :273). Upstream puts into the
 * cache only with interrupts enabled: 6.12 __page_pool_put_page() asserts
 * it (lockdep_assert_no_hardirq(), net/core/page_pool.c:845), which
 * page_pool_napi_local() relies on (:899-902). Counted as not softirq.
 */
static bool ppc_direct_ok(unsigned long pool, bool placed)
{
	unsigned int pc = preempt_count();
	struct ppc_poll_mark *m;
	unsigned long napi, owner, gen;

	/* in_softirq(), !in_hardirq(), !in_nmi() (linux/preempt.h), one test */
	if (IS_ENABLED(CONFIG_PREEMPT_RT) || !(pc & SOFTIRQ_MASK) ||
	    (pc & (HARDIRQ_MASK | NMI_MASK)) || irqs_disabled()) {
		ppc_count(RC_DENY_NOT_SOFTIRQ);
		return false;
	}
	m = this_cpu_ptr(&ppc_polling);
	napi = READ_ONCE(m->napi);
	/* In no poll: whoever owns the pool is not polled here. */
	if (placed || !napi) {
		ppc_count(RC_DENY_ELSEWHERE);
		return false;
	}
	gen = atomic_long_read(&ppc_own_gen);
	smp_rmb();	/* pairs with ppc_own_changed() */
	/* This CPU's last lookup, still valid: its owner is a NAPI. */
	if (m->pool == pool && m->gen == gen) {
		if (m->owner == napi)
			return true;
		ppc_count(RC_DENY_ELSEWHERE);
		return false;
	}
	owner = ppc_own_lookup(pool);
	if (owner > PPC_OWN_VERDICT) {
		m->pool = pool;
		m->owner = owner;
		m->gen = gen;
	}
	if (!owner) {
		ppc_count(RC_DENY_UNKNOWN);
		/* Met inside a poll (the test above): its owner may be learned. */
		ppc_own_want(pool, napi);
		return false;
	}
	if (owner == PPC_OWN_SHARED) {
		ppc_count(RC_DENY_SHARED);
		return false;
	}
	if (owner == PPC_OWN_NEVER) {
		ppc_count(RC_DENY_NEVER);
		return false;
	}
	if (owner != napi) {
		ppc_count(RC_DENY_ELSEWHERE);
		return false;
	}
	return true;
}

#ifdef PPC_HAVE_NAPI_PP_PUT_PAGE
/* Mirror of page_pool_napi_local() (static in page_pool.c), for counting. */
static bool ppc_kernel_napi_local(const struct page_pool *pool)
{
	const struct napi_struct *napi;
	u32 cpu;

	if (IS_ENABLED(CONFIG_PREEMPT_RT) || !in_softirq())
		return false;
	cpu = raw_smp_processor_id();
	if (READ_ONCE(pool->cpuid) == cpu)
		return true;
	napi = READ_ONCE(pool->p.napi);
	return napi && READ_ONCE(napi->list_owner) == cpu;
}

static bool ppc_put(netmem_ref netmem)
{
	struct page_pool *pool;
	bool direct = false;
	bool placed;

	netmem = netmem_compound_head(netmem);
	if (unlikely(!ppc_netmem_is_pp(netmem))) {
		ppc_count(RC_NOT_PP);
		return false;
	}
	pool = netmem_get_pp(netmem);
	/* Only a pool with .napi or a cpuid can meet the kernel's own rule. */
	placed = READ_ONCE(pool->p.napi) || READ_ONCE(pool->cpuid) >= 0;
	if (placed && ppc_kernel_napi_local(pool)) {
		ppc_count(RC_UPSTREAM_DIRECT);
	} else if (ppc_path_mode(RECYCLE) == PPC_MODE_ON &&
		   ppc_direct_ok((unsigned long)pool, placed)) {
		/* A pool upstream cannot place: ppcoal's tracker can. */
		direct = true;
		ppc_count(RC_DIRECT);
	} else {
		ppc_count(RC_RING);
	}
	page_pool_put_full_netmem(pool, netmem, direct);
	return true;
}

/**
 * ppc_recycle_put() - replacement for napi_pp_put_page()
 * @netmem: a page (or net_iov) of a pp_recycle skb being freed
 *
 * Return: true when the page belonged to a page pool and went back to it.
 */
bool ppc_recycle_put(netmem_ref netmem)
{
	ppc_count(RC_CALLS);
	return ppc_put(netmem);
}
#else
static bool ppc_put(struct page *page)
{
	struct page_pool *pool;
	bool direct = false;

	page = compound_head(page);
	/* Bits 0 and 1 of pp_magic are compound-head and pfmemalloc marks. */
	if (unlikely((page->pp_magic & ~0x3UL) != PP_SIGNATURE)) {
		ppc_count(RC_NOT_PP);
		return false;
	}
	pool = page->pp;
	if (ppc_path_mode(RECYCLE) == PPC_MODE_ON &&
	    ppc_direct_ok((unsigned long)pool, false)) {
		direct = true;
		ppc_count(RC_DIRECT);
	} else {
		ppc_count(RC_RING);
	}
	/*
	 * 6.1's __page_pool_put_page() (net/core/page_pool.c:599) caches the
	 * page only with allow_direct && in_softirq() and a cache with room;
	 * otherwise it still goes to the ring.
	 */
	page_pool_put_full_page(pool, page, direct);
	return true;
}

/**
 * ppc_recycle_put() - replacement for page_pool_return_skb_page()
 * @page: a page of a pp_recycle skb being freed
 *
 * Return: true when the page belonged to a page pool and went back to it.
 */
bool ppc_recycle_put(struct page *page)
{
	ppc_count(RC_CALLS);
	return ppc_put(page);
}
#endif
