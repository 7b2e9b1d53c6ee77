/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ppcoal: the owner table and the poll marks (ppcoal_owner.c), as the
 * recycle shadow (ppcoal_recycle.c) reads them on its hot path.
 */
#ifndef _PPCOAL_OWNER_H
#define _PPCOAL_OWNER_H

#include <linux/atomic.h>
#include <linux/cache.h>
#include <linux/hash.h>
#include <linux/percpu.h>

/*
 * The owner table: PPC_OWN_BUCKETS buckets of PPC_OWN_WAYS slots, a bucket
 * per hash of the pool pointer, keys of a bucket in one cache line. Pool
 * and NAPI pointers in it are only compared, never dereferenced. A slot's
 * key is 0 (free), a pool, or PPC_OWN_TOMB (retired; freed by
 * ppc_reclaim_fn() only after an RCU grace period that began after it was
 * retired, so that a reader that matched the old key never sees a new
 * pool's owner). Its owner is 0 (unknown), a napi_struct pointer, or one
 * of the verdicts PPC_OWN_SHARED and PPC_OWN_NEVER. Readers take no lock;
 * every writer holds ppc_own_lock (writes are rare: learning, teardown).
 */
#define PPC_OWN_SHIFT	5
#define PPC_OWN_BUCKETS	BIT(PPC_OWN_SHIFT)
#define PPC_OWN_WAYS	8
#define PPC_OWN_TOMB	1UL	/* key */
#define PPC_OWN_SHARED	2UL	/* owner: allocates under two NAPIs */
#define PPC_OWN_NEVER	3UL	/* owner: not ppcoal's (see ppc_never_why) */
#define PPC_OWN_VERDICT	PPC_OWN_NEVER	/* owners above it are NAPIs */

struct ppc_own_bucket {
	unsigned long pool[PPC_OWN_WAYS];
	unsigned long owner[PPC_OWN_WAYS];
} ____cacheline_aligned;

extern struct ppc_own_bucket ppc_owners[PPC_OWN_BUCKETS];
/*
 * Bumped after any owner is dropped or turns shared, so that per-CPU
 * lookup caches die.
 */
extern atomic_long_t ppc_own_gen;

/*
 * The NAPI this CPU polls now (0: none): set around an audited poll by
 * ppc_wrap, or at __napi_poll() entry by the tracker and dropped when
 * ->poll() returns (see ppc_owner_tp()). With it, a one-entry
 * cache of the owner table for the pool last looked up here, valid while
 * ppc_own_gen is unchanged (every forgetting bumps it).
 */
struct ppc_poll_mark {
	unsigned long napi;
	unsigned long pool, owner, gen;
	/* the audited row of row_napi's driver, once looked up in this poll */
	unsigned long row_napi;
	int row;
};

DECLARE_PER_CPU(struct ppc_poll_mark, ppc_polling);

/* The poll wrapper (ppcoal_owner_wrap.S) and the text it marks for. */
void ppc_wrap(void);
extern const u32 ppc_wrap_counter;	/* the counter it counts polls in */
extern unsigned long ppc_napi_poll_start, ppc_napi_poll_size;

static __always_inline struct ppc_own_bucket *ppc_bucket(unsigned long pool)
{
	return &ppc_owners[hash_long(pool, PPC_OWN_SHIFT)];
}

static __always_inline int ppc_own_find(struct ppc_own_bucket *b,
					unsigned long pool)
{
	int i;

	for (i = 0; i < PPC_OWN_WAYS; i++)
		if (READ_ONCE(b->pool[i]) == pool)
			return i;
	return -1;
}

/* The owner of @pool: 0 when unknown. Hot path: one bucket, no writes. */
static __always_inline unsigned long ppc_own_lookup(unsigned long pool)
{
	struct ppc_own_bucket *b = ppc_bucket(pool);
	int i = ppc_own_find(b, pool);

	return i < 0 ? 0 : READ_ONCE(b->owner[i]);
}

void ppc_own_want(unsigned long pool, unsigned long napi);

#endif /* _PPCOAL_OWNER_H */
