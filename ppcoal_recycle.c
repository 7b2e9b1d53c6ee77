// SPDX-License-Identifier: GPL-2.0
/*
 * ppcoal shadow of the skb page-pool free: page_pool_return_skb_page()
 * (6.1, net/core/page_pool.c:915) and napi_pp_put_page() (6.12,
 * net/core/skbuff.c:1027). Both are called for every page of a
 * pp_recycle skb when it is freed.
 *
 * observe: the stock decision (allow_direct = false), counted. On 6.12 the
 * kernel then applies its own NAPI-local rule (page_pool_napi_local(),
 * net/core/page_pool.c:887); the shadow evaluates the same rule to count
 * how often it recycles directly.
 */
#include <linux/mm.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>

#include "ppcoal.h"

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

	netmem = netmem_compound_head(netmem);
	/* pp_magic test with Debian 6.12's DMA-index bits masked. */
	if (unlikely((__netmem_clear_lsb(netmem)->pp_magic & PP_MAGIC_MASK) !=
		     PP_SIGNATURE)) {
		ppc_count(RC_NOT_PP);
		return false;
	}
	pool = netmem_get_pp(netmem);
	ppc_count(RC_RING);
	if (ppc_kernel_napi_local(pool))
		ppc_count(RC_UPSTREAM_DIRECT);
	page_pool_put_full_netmem(pool, netmem, false);
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
	bool ret;

	ppc_count(RC_CALLS);
	ret = ppc_put(netmem);
	ppc_leave(RECYCLE);
	return ret;
}
#else
static bool ppc_put(struct page *page)
{
	page = compound_head(page);
	/* Bits 0 and 1 of pp_magic are compound-head and pfmemalloc marks. */
	if (unlikely((page->pp_magic & ~0x3UL) != PP_SIGNATURE)) {
		ppc_count(RC_NOT_PP);
		return false;
	}
	/* 6.1 never knows it runs in the pool's NAPI: always the ring. */
	ppc_count(RC_RING);
	page_pool_put_full_page(page->pp, page, false);
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
	bool ret;

	ppc_count(RC_CALLS);
	ret = ppc_put(page);
	ppc_leave(RECYCLE);
	return ret;
}
#endif
