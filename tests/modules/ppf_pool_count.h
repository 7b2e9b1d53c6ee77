/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Page accounting of a page_pool for the test modules: where its pages are.
 * Test-only: reads page_pool and ptr_ring internals.
 */
#ifndef _PPF_POOL_COUNT_H
#define _PPF_POOL_COUNT_H

#include <linux/ptr_ring.h>

struct ppf_count {
	long hold, release, cached, ring, frag, inflight;
};

/*
 * Entries in a ptr_ring, from consumer_head up to producer (consumed slots
 * behind consumer_head are zeroed lazily, so counting non-NULL slots would
 * be wrong). The caller holds the consumer lock, then the producer lock.
 */
static inline int ppf_ring_len(struct ptr_ring *r)
{
	int n;

	if (!r->size)
		return 0;
	n = (r->producer - r->consumer_head + r->size) % r->size;
	if (!n && r->queue[r->consumer_head])
		n = r->size;
	return n;
}

static inline void ppf_count_pool(struct page_pool *pool, struct ppf_count *c)
{
	struct ptr_ring *r = &pool->ring;

	c->hold = READ_ONCE(pool->pages_state_hold_cnt);
	c->release = atomic_read(&pool->pages_state_release_cnt);
	c->cached = READ_ONCE(pool->alloc.count);
	c->frag = READ_ONCE(pool->frag_page) ? 1 : 0;
	spin_lock_bh(&r->consumer_lock);
	spin_lock(&r->producer_lock);
	c->ring = ppf_ring_len(r);
	spin_unlock(&r->producer_lock);
	spin_unlock_bh(&r->consumer_lock);
	/* hold/release are u32 counters that may wrap: compare as s32 */
	c->inflight = (s32)((u32)c->hold - (u32)c->release) -
		      c->cached - c->ring - c->frag;
}

/* Is @page a page-pool page now (its pp_magic holds the signature)? */
static inline bool ppf_is_pp(struct page *page)
{
#ifdef PPC_HAVE_NAPI_PP_PUT_PAGE
	return (READ_ONCE(page->pp_magic) & PP_MAGIC_MASK) == PP_SIGNATURE;
#else
	return (READ_ONCE(page->pp_magic) & ~0x3UL) == PP_SIGNATURE;
#endif
}

/*
 * How many times @page sits in @pool's ring and allocation cache: 1 once
 * the pool has it back, 0 while somebody holds it (or after it left the
 * pool), 2 or more after a double return. The cache is read unlocked: only
 * call this while nothing allocates from or frees into the pool.
 */
static inline int ppf_pool_find(struct page_pool *pool, struct page *page)
{
	struct ptr_ring *r = &pool->ring;
	int i, n = 0, len;

	for (i = 0; i < READ_ONCE(pool->alloc.count); i++)
		n += (__force unsigned long)pool->alloc.cache[i] == (unsigned long)page;
	spin_lock_bh(&r->consumer_lock);
	spin_lock(&r->producer_lock);
	len = ppf_ring_len(r);
	for (i = 0; i < len; i++)
		n += r->queue[(r->consumer_head + i) % r->size] == (void *)page;
	spin_unlock(&r->producer_lock);
	spin_unlock_bh(&r->consumer_lock);
	return n;
}

#endif /* _PPF_POOL_COUNT_H */
