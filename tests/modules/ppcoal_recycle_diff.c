// SPDX-License-Identifier: GPL-2.0
/*
 * ppcoal_recycle_diff: the stock page-pool skb page free
 * (page_pool_return_skb_page() on 6.1, napi_pp_put_page() on 6.12) against
 * ppcoal's recycle shadow, on identical inputs.
 *
 * Cases come from a seed: an skb with 1..4 frags of page-pool pages,
 * marked pp_recycle, some pages holding an extra reference (a page still
 * shared elsewhere); the pool: one-buffer-per-page without a NAPI, and
 * (6.1) a PP_FLAG_PAGE_FRAG pool or (6.12) a pool naming this module's NAPI
 * (page_pool_params.napi); freed from process context, with bottom halves
 * disabled, or inside this module's NAPI poll (consume_skb() or
 * napi_consume_skb()). Pages of poll cases are allocated inside the poll,
 * as a driver does. An outcome: where the case's pages went, as changes of
 * the pool's allocation cache, its ring and its released count.
 *
 * Each run starts from new pools (so both runs meet the same cache and ring
 * state) and writes "SEED N MODE" to .../run as the coalesce differential:
 * "record" keeps every outcome (ppcoal's recycle path off: stock), "compare"
 * must equal it (observe), "compare-on" may differ only as recycle=on
 * documents: inside the owner's poll, pages put into the cache that stock
 * put into the ring. Reading .../result gives "MODE cases N mismatches M
 * allowed A inflight I primed P" and the first mismatch.
 *
 * "compare-learned" is "compare-on" for a module ppcoal audits; it first
 * primes the plain pool: ppcoal learns a pool's owner a
 * while after the free path first meets it in a poll (a work item arms the
 * allocation probe), and a run could end before that (a CI run once met no
 * direct put at all). Priming allocates and frees one page inside the poll
 * until a free lands in the cache (learned) or PPR_PRIME_MS pass, then takes
 * every page out of the cache and the ring and holds them until the cases
 * are done: the cases start from an empty cache and ring, as in "record".
 * P is the milliseconds it took, or -1 when no free went direct.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/etherdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/vmalloc.h>

#include "ppcoal_kcompat.h"
#ifdef PPC_HAVE_PAGE_POOL_HELPERS_H
#include <net/page_pool/helpers.h>
#else
#include <net/page_pool.h>
#endif
#include "ppf_pool_count.h"
#include "ppt_diffrun.h"

#define PPR_MAX_CASES	100000
#define PPR_BATCH	32	/* poll cases per poll */
#define PPR_PRIME_MS	30000
#define PPR_HELD_MAX	1024	/* > the cache (128) and the ring (256) */

enum { PPR_PROCESS, PPR_BH, PPR_POLL, PPR_CTXS };

struct ppr_shape {
	u8 pool;	/* 0: plain pool; 1: 6.1 frag pool / 6.12 pool with .napi */
	u8 ctx;		/* PPR_* */
	u8 nfrags;	/* 1..4 */
	u8 shared;	/* bit i: frag i's page holds an extra reference */
	u8 napi_free;	/* in the poll: napi_consume_skb() instead of consume_skb() */
};

struct ppr_outcome {
	s16 cached, ring, release;
	s16 err;
};

static struct net_device *ppr_dev;
static struct napi_struct ppr_napi;
static struct page_pool *ppr_pool[2];
static struct ppr_shape *ppr_shapes;
static struct ppr_outcome *ppr_rec, *ppr_out;
static unsigned int ppr_nrec;
static struct dentry *ppr_dir;
static struct ppt_diffrun ppr_dr;	/* run and result, below */
static u64 ppr_rnd;

/* the poll's work: cases [ppr_poll_first, ppr_poll_end) */
static unsigned int ppr_poll_first, ppr_poll_end;
static DECLARE_COMPLETION(ppr_poll_done);
/* priming: the poll does one step instead of cases; its result */
static bool ppr_priming, ppr_prime_direct;
static struct page *ppr_held[PPR_HELD_MAX];
static unsigned int ppr_nheld;

static u32 ppr_below(u32 n)
{
	/* xorshift64*: the same cases for a seed on every kernel */
	ppr_rnd ^= ppr_rnd >> 12;
	ppr_rnd ^= ppr_rnd << 25;
	ppr_rnd ^= ppr_rnd >> 27;
	return (u32)((ppr_rnd * 0x2545F4914F6CDD1DULL) >> 32) % n;
}

static void ppr_draw(struct ppr_shape *s)
{
	s->pool = ppr_pool[1] ? ppr_below(2) : 0;
	s->ctx = ppr_below(PPR_CTXS);
	s->nfrags = 1 + ppr_below(4);
	s->shared = ppr_below(4) ? 0 : ppr_below(1 << s->nfrags);
	s->napi_free = s->ctx == PPR_POLL && ppr_below(2);
}

static struct page *ppr_alloc(struct page_pool *pool, bool frag,
			      unsigned int *off, unsigned int *size)
{
	*off = 0;
	*size = PAGE_SIZE;
#ifdef PPC_HAVE_PP_FRAG_COUNT
	if (frag) {
		*size = 2048;
		return page_pool_alloc_frag(pool, off, *size, GFP_ATOMIC);
	}
#endif
	return page_pool_alloc_pages(pool, GFP_ATOMIC);
}

/* One case, in the context its shape names (the caller set it up). */
static void ppr_case(const struct ppr_shape *s, struct ppr_outcome *o)
{
	struct page_pool *pool = ppr_pool[s->pool];
	bool frag = false;
	struct page *shared[4];
	struct ppf_count a, b;
	unsigned int off, size;
	struct sk_buff *skb;
	struct page *page;
	int i, nshared = 0;

#ifdef PPC_HAVE_PP_FRAG_COUNT
	frag = s->pool == 1;
#endif
	memset(o, 0, sizeof(*o));
	/* built with bottom halves off: a pool's cache is softirq-only */
	local_bh_disable();
	skb = alloc_skb(64, GFP_ATOMIC);
	if (!skb) {
		local_bh_enable();
		o->err = -ENOMEM;
		return;
	}
	skb_put(skb, ETH_HLEN);
	for (i = 0; i < s->nfrags; i++) {
		page = ppr_alloc(pool, frag, &off, &size);
		if (!page) {
			o->err = -ENOMEM;
			break;
		}
		skb_add_rx_frag(skb, i, page, off, 64, size);
		if (s->shared & (1 << i)) {
			get_page(page);
			shared[nshared++] = page;
		}
	}
	skb_mark_for_recycle(skb);
	local_bh_enable();
	ppf_count_pool(pool, &a);
	if (s->napi_free)
		napi_consume_skb(skb, 64);
	else
		consume_skb(skb);
	ppf_count_pool(pool, &b);
	o->cached = b.cached - a.cached;
	o->ring = b.ring - a.ring;
	o->release = b.release - a.release;
	for (i = 0; i < nshared; i++)
		put_page(shared[i]);
}

/*
 * One priming step, in the poll: a page of the plain pool in an skb, freed
 * as a driver's poll frees it. Did it land in the cache (a direct put)?
 */
static bool ppr_prime_step(void)
{
	struct page_pool *pool = ppr_pool[0];
	struct ppf_count a, b;
	struct sk_buff *skb;
	struct page *page;

	skb = alloc_skb(64, GFP_ATOMIC);
	if (!skb)
		return false;
	skb_put(skb, ETH_HLEN);
	page = page_pool_alloc_pages(pool, GFP_ATOMIC);
	if (!page) {
		kfree_skb(skb);
		return false;
	}
	skb_add_rx_frag(skb, 0, page, 0, 64, PAGE_SIZE);
	skb_mark_for_recycle(skb);
	ppf_count_pool(pool, &a);
	consume_skb(skb);
	ppf_count_pool(pool, &b);
	return b.cached > a.cached;
}

static int ppr_poll(struct napi_struct *napi, int budget)
{
	unsigned int i;

	if (ppr_priming)
		ppr_prime_direct = ppr_prime_step();
	for (i = ppr_poll_first; i < ppr_poll_end; i++)
		ppr_case(&ppr_shapes[i], &ppr_out[i]);
	napi_complete_done(napi, 0);
	complete(&ppr_poll_done);
	return 0;
}

static void ppr_pools_destroy(void)
{
	int i;

	/* 6.12 warns when a pool naming a NAPI is destroyed while it runs */
	napi_disable(&ppr_napi);
	for (i = 0; i < 2; i++) {
		if (ppr_pool[i])
			page_pool_destroy(ppr_pool[i]);
		ppr_pool[i] = NULL;
	}
	napi_enable(&ppr_napi);
}

static int ppr_pools_create(void)
{
	struct page_pool_params pp = {
		.order = 0,
		.pool_size = 256,
		.nid = NUMA_NO_NODE,
		.dev = &ppr_dev->dev,	/* the pools are this device's */
	};
	struct page_pool *p;

	p = page_pool_create(&pp);
	if (IS_ERR(p))
		return PTR_ERR(p);
	ppr_pool[0] = p;
#if defined(PPC_HAVE_PP_FRAG_COUNT)
	pp.flags |= PP_FLAG_PAGE_FRAG;
#elif defined(PPC_HAVE_PP_PARAMS_NAPI)
	pp.napi = &ppr_napi;
#endif
	p = page_pool_create(&pp);
	if (IS_ERR(p)) {
		page_pool_destroy(ppr_pool[0]);
		ppr_pool[0] = NULL;
		return PTR_ERR(p);
	}
	ppr_pool[1] = p;
	return 0;
}

static long ppr_inflight(void)
{
	struct ppf_count c;
	long sum = 0;
	int i;

	for (i = 0; i < 2; i++) {
		if (!ppr_pool[i])
			continue;
		ppf_count_pool(ppr_pool[i], &c);
		sum += c.inflight;
	}
	return sum;
}

/* One poll of ppr_napi doing [ppr_poll_first, ppr_poll_end). */
static void ppr_poll_once(void)
{
	reinit_completion(&ppr_poll_done);
	local_bh_disable();
	napi_schedule(&ppr_napi);
	local_bh_enable();
	wait_for_completion(&ppr_poll_done);
}

/*
 * Prime the plain pool (see the top), then hold every page of its cache
 * and ring. Returns the milliseconds until a free went direct, or -1.
 */
static long ppr_prime(void)
{
	unsigned long start = jiffies;
	struct ppf_count c;
	struct page *page;
	long ms = -1;

	ppr_poll_first = 0;
	ppr_poll_end = 0;
	ppr_priming = true;
	while (time_before(jiffies, start + msecs_to_jiffies(PPR_PRIME_MS))) {
		ppr_poll_once();
		if (ppr_prime_direct) {
			ms = jiffies_to_msecs(jiffies - start);
			break;
		}
		msleep(20);
	}
	ppr_priming = false;
	for (;;) {
		ppf_count_pool(ppr_pool[0], &c);
		if (!c.cached && !c.ring)
			break;
		if (ppr_nheld == PPR_HELD_MAX)
			return -2;	/* cannot happen: more than fits */
		local_bh_disable();	/* the cache is softirq-only */
		page = page_pool_alloc_pages(ppr_pool[0], GFP_ATOMIC);
		local_bh_enable();
		if (!page)
			return -3;
		ppr_held[ppr_nheld++] = page;
	}
	return ms;
}

/* Give the held pages back to the plain pool. */
static void ppr_unhold(void)
{
	local_bh_disable();
	while (ppr_nheld)
		page_pool_put_full_page(ppr_pool[0], ppr_held[--ppr_nheld],
					false);
	local_bh_enable();
}

/* Run cases [i, end) of one context. */
static void ppr_run_ctx(unsigned int i, unsigned int end)
{
	switch (ppr_shapes[i].ctx) {
	case PPR_POLL:
		ppr_poll_first = i;
		ppr_poll_end = end;
		ppr_poll_once();
		break;
	case PPR_BH:
		for (; i < end; i++) {
			local_bh_disable();
			ppr_case(&ppr_shapes[i], &ppr_out[i]);
			local_bh_enable();
		}
		break;
	default:
		for (; i < end; i++) {
			ppr_case(&ppr_shapes[i], &ppr_out[i]);
			cond_resched();
		}
	}
}

static const char *ppr_diff(const struct ppr_outcome *a,
			    const struct ppr_outcome *b, long *x, long *y)
{
	return ppt_cmp("err", a->err, b->err, x, y) ?:
	       ppt_cmp("cached", a->cached, b->cached, x, y) ?:
	       ppt_cmp("ring", a->ring, b->ring, x, y) ?:
	       ppt_cmp("release", a->release, b->release, x, y);
}

static int ppr_run(u64 seed, unsigned int n, const char *mode)
{
	bool record = !strcmp(mode, "record");
	bool learn = !strcmp(mode, "compare-learned");
	bool on = learn || !strcmp(mode, "compare-on");
	unsigned int i, end, mism = 0, allowed = 0;
	const struct ppr_outcome *st, *sh;
	const struct ppr_shape *s;
	const char *field;
	char first[256] = "";
	long x, y, primed = 0;
	int ret;

	if (!record && strcmp(mode, "compare") && !on)
		return -EINVAL;
	if (n > PPR_MAX_CASES || (!record && n != ppr_nrec))
		return -EINVAL;
	ppr_pools_destroy();
	ret = ppr_pools_create();
	if (ret)
		return ret;
	if (learn)
		primed = ppr_prime();
	ppr_rnd = seed ?: 1;
	for (i = 0; i < n; i++)
		ppr_draw(&ppr_shapes[i]);
	for (i = 0; i < n; i = end) {
		/* a run of one context; poll runs at most PPR_BATCH long */
		for (end = i + 1; end < n &&
		     ppr_shapes[end].ctx == ppr_shapes[i].ctx &&
		     (ppr_shapes[i].ctx != PPR_POLL || end - i < PPR_BATCH);
		     end++)
			;
		ppr_run_ctx(i, end);
	}
	ppr_unhold();
	for (i = 0; i < n; i++) {
		if (record) {
			ppr_rec[i] = ppr_out[i];
			continue;
		}
		st = &ppr_rec[i];
		sh = &ppr_out[i];
		s = &ppr_shapes[i];
		field = ppr_diff(st, sh, &x, &y);
		if (!field)
			continue;
		/* recycle=on: direct into the cache inside the owner's poll */
		if (on && s->ctx == PPR_POLL && !st->err && !sh->err &&
		    sh->cached > st->cached && sh->release == st->release &&
		    sh->cached + sh->ring == st->cached + st->ring) {
			allowed++;
			continue;
		}
		if (!mism++)
			snprintf(first, sizeof(first),
				 "seed %llu case %u shape pool=%u ctx=%u frags=%u shared=%#x napi_free=%u: %s stock %ld shadow %ld",
				 seed, i, s->pool, s->ctx, s->nfrags, s->shared,
				 s->napi_free, field, x, y);
	}
	if (record)
		ppr_nrec = n;
	snprintf(ppr_dr.result, sizeof(ppr_dr.result),
		 "%s cases %u mismatches %u allowed %u inflight %ld primed %ld%s%s\n",
		 mode, n, mism, allowed, ppr_inflight(), primed,
		 first[0] ? " first: " : "", first);
	pr_info("%s", ppr_dr.result);
	return 0;
}

static struct ppt_diffrun ppr_dr = {
	.lock = __MUTEX_INITIALIZER(ppr_dr.lock),
	.run = ppr_run,
};

static int __init ppr_init(void)
{
	ppr_shapes = vzalloc(PPR_MAX_CASES * sizeof(*ppr_shapes));
	ppr_rec = vzalloc(PPR_MAX_CASES * sizeof(*ppr_rec));
	ppr_out = vzalloc(PPR_MAX_CASES * sizeof(*ppr_out));
	if (!ppr_shapes || !ppr_rec || !ppr_out)
		goto nomem;
	/* Never registered: the NAPI only needs a device to belong to. */
	ppr_dev = alloc_netdev(0, "pprd%d", NET_NAME_ENUM, ether_setup);
	if (!ppr_dev)
		goto nomem;
	netif_napi_add(ppr_dev, &ppr_napi, ppr_poll);
	napi_enable(&ppr_napi);
	ppr_dir = ppt_diffrun_create("ppcoal_recycle_diff", &ppr_dr);
	return 0;
nomem:
	vfree(ppr_shapes);
	vfree(ppr_rec);
	vfree(ppr_out);
	return -ENOMEM;
}

static void __exit ppr_exit(void)
{
	int i;

	debugfs_remove_recursive(ppr_dir);
	napi_disable(&ppr_napi);
	for (i = 0; i < 2; i++)
		if (ppr_pool[i])
			page_pool_destroy(ppr_pool[i]);
	netif_napi_del(&ppr_napi);
	free_netdev(ppr_dev);
	vfree(ppr_shapes);
	vfree(ppr_rec);
	vfree(ppr_out);
}

module_init(ppr_init);
module_exit(ppr_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ppcoal test: stock page-pool skb page free against the recycle shadow on identical inputs");
