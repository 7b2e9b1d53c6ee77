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

static inline void ppf_count_pool(struct page_pool *pool, struct ppf_count *c)
{
	struct ptr_ring *r = &pool->ring;

	c->hold = READ_ONCE(pool->pages_state_hold_cnt);
	c->release = atomic_read(&pool->pages_state_release_cnt);
	c->cached = READ_ONCE(pool->alloc.count);
	c->frag = READ_ONCE(pool->frag_page) ? 1 : 0;
	c->ring = 0;
	/*
	 * ptr_ring holds its entries from consumer_head up to producer;
	 * consumed slots behind consumer_head are zeroed lazily, so counting
	 * non-NULL slots would be wrong. Lock order: consumer, then producer.
	 */
	spin_lock_bh(&r->consumer_lock);
	spin_lock(&r->producer_lock);
	if (r->size) {
		c->ring = (r->producer - r->consumer_head + r->size) % r->size;
		if (!c->ring && r->queue[r->consumer_head])
			c->ring = r->size;
	}
	spin_unlock(&r->producer_lock);
	spin_unlock_bh(&r->consumer_lock);
	/* hold/release are u32 counters that may wrap: compare as s32 */
	c->inflight = (s32)((u32)c->hold - (u32)c->release) -
		      c->cached - c->ring - c->frag;
}

#endif /* _PPF_POOL_COUNT_H */
