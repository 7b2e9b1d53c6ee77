// SPDX-License-Identifier: GPL-2.0
/*
 * ppcoal_selftest: page ownership checks for coalescing cloned page-pool
 * skbs, run at load time through the (hooked) skb_try_coalesce().
 *
 * For each pool kind: build a frag-only page-pool skb "from" and a
 * page-pool skb "to", clone from (as a packet socket does), coalesce,
 * consume from as TCP does (kfree_skb_partial), then free to and the clone
 * in both orders, and 200 more times with the two frees racing on two
 * CPUs. Then the races the coalesce review asked for, 200 times each with
 * the other CPU's start randomised: the clone freed, trimmed (as
 * packet_rcv() does) or coalesced elsewhere while this CPU coalesces; and
 * the leak probes: the page not back in the pool while the clone holds it,
 * back exactly once after, and a pool destroyed right after a coalesce.
 * After each round the pool must have exactly zero pages outside it,
 * and page references must be what the holders account for. Results are
 * printed as TAP lines; the module stays loaded so the suite can read them.
 *
 * Parameter expect_coalesce: 1 when ppcoal's coalesce=on must coalesce a
 * clone, 0 when it must refuse (observe on 6.1, legacy).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/skbuff.h>
#include <linux/workqueue.h>

#include "ppcoal_kcompat.h"
#ifdef PPC_HAVE_PAGE_POOL_HELPERS_H
#include <net/page_pool/helpers.h>
#else
#include <net/page_pool.h>
#endif
#include "ppf_pool_count.h"

#define PPST_LEN 1000
#define PPST_RACES 200
#define PPST_JITTER_US 20

static int expect_coalesce = -1;
module_param(expect_coalesce, int, 0444);
MODULE_PARM_DESC(expect_coalesce, "1: a clone must coalesce, 0: it must be refused");

static int ppst_n, ppst_failed;

static void ppst_ok(bool ok, const char *what, const char *kind, long a, long b)
{
	ppst_n++;
	if (ok) {
		pr_info("ok %d - %s: %s\n", ppst_n, kind, what);
	} else {
		ppst_failed++;
		pr_info("not ok %d - %s: %s (%ld, %ld)\n", ppst_n, kind, what, a, b);
	}
}

/* A page-pool skb whose data is one page frag of @len bytes. */
static struct sk_buff *ppst_skb(struct page_pool *pool, bool frag)
{
	unsigned int off = 0, size = PAGE_SIZE;
	struct sk_buff *skb;
	struct page *page;

	skb = __netdev_alloc_skb(NULL, 64, GFP_KERNEL);
	if (!skb)
		return NULL;
	local_bh_disable();
	if (frag) {
		size = 2048;
		page = page_pool_dev_alloc_frag(pool, &off, size);
	} else {
		page = page_pool_dev_alloc_pages(pool);
	}
	local_bh_enable();
	if (!page) {
		kfree_skb(skb);
		return NULL;
	}
	memset(page_address(page) + off, 0x5a, PPST_LEN);
	skb_add_rx_frag(skb, 0, page, off, PPST_LEN, size);
	skb_mark_for_recycle(skb);
	return skb;
}

/* The page-pool reference count of a page, where the kernel keeps one. */
static long ppst_pp_refs(struct page *page)
{
#ifdef PPC_HAVE_PP_REF_COUNT
	return atomic_long_read(&page->pp_ref_count);
#else
	return atomic_long_read(&page->pp_frag_count);
#endif
}

/* Does a coalesced clone share this pool's pages by page-pool reference? */
static bool ppst_uses_pp_refs(bool frag)
{
#ifdef PPC_HAVE_PP_REF_COUNT
	return true;		/* every 6.12 pool has pp_ref_count */
#else
	return frag;		/* 6.1: only PP_FLAG_PAGE_FRAG pools */
#endif
}

/*
 * While a frag pool carves a page its fragment count sits at the bias
 * (LONG_MAX on 6.1) and ppcoal refuses to add to it; a third fragment moves
 * the pool on to the next page, as the next received packet would.
 */
static void ppst_frag_advance(struct page_pool *pool)
{
	unsigned int off;
	struct page *next;

	local_bh_disable();
	next = page_pool_dev_alloc_frag(pool, &off, 2048);
	if (next)
		page_pool_put_full_page(pool, next, true);
	local_bh_enable();
}

/* What the other CPU does to its skb in a race. */
enum ppst_op { PPST_FREE, PPST_TRIM, PPST_COALESCE };

/*
 * One race: this CPU and a worker on another CPU meet at @go, the worker
 * waits @delay_us and applies @op to @skb (PPST_COALESCE: into @to).
 */
struct ppst_race {
	struct work_struct work;
	enum ppst_op op;
	struct sk_buff *skb, *to;
	unsigned int delay_us;
	atomic_t go;
	bool ok, stolen;
	struct completion done;
};

static void ppst_race_fn(struct work_struct *w)
{
	struct ppst_race *r = container_of(w, struct ppst_race, work);
	int delta;

	atomic_inc(&r->go);
	while (atomic_read(&r->go) < 2)
		cpu_relax();
	udelay(r->delay_us);
	switch (r->op) {
	case PPST_FREE:
		kfree_skb(r->skb);
		break;
	case PPST_TRIM:
		/* packet_rcv() trims its clone to the snap length */
		r->ok = !pskb_trim(r->skb, PPST_LEN / 2);
		break;
	case PPST_COALESCE:
		r->ok = skb_try_coalesce(r->to, r->skb, &r->stolen, &delta);
		if (r->ok)
			kfree_skb_partial(r->skb, r->stolen);
		else
			kfree_skb(r->skb);
		break;
	}
	complete(&r->done);
}

/* Start @r on another CPU than this one and wait until it runs. */
static void ppst_race_start(struct ppst_race *r)
{
	int cpu = cpumask_next(raw_smp_processor_id(), cpu_online_mask);

	if (cpu >= nr_cpu_ids)
		cpu = cpumask_first(cpu_online_mask);
	atomic_set(&r->go, 0);
	init_completion(&r->done);
	INIT_WORK_ONSTACK(&r->work, ppst_race_fn);
	queue_work_on(cpu, system_highpri_wq, &r->work);
	atomic_inc(&r->go);
	while (atomic_read(&r->go) < 2)
		cpu_relax();
}

static void ppst_race_finish(struct ppst_race *r)
{
	wait_for_completion(&r->done);
	destroy_work_on_stack(&r->work);
}

/*
 * One round: coalesce a clone and free everything. @order: 0 frees to
 * first, 1 the clone first, 2 both at once on two CPUs.
 */
static bool ppst_round(struct page_pool *pool, bool frag, int order,
		       const char *kind, bool report)
{
	struct sk_buff *to, *from, *clone;
	struct page *page;
	struct ppf_count c;
	bool stolen, ok;
	int delta, refs;
	long pprefs;

	to = ppst_skb(pool, frag);
	from = ppst_skb(pool, frag);
	if (!to || !from) {
		kfree_skb(to);
		kfree_skb(from);
		ppst_ok(false, "allocation", kind, 0, 0);
		return false;
	}
	if (frag)
		ppst_frag_advance(pool);
	page = compound_head(skb_frag_page(&skb_shinfo(from)->frags[0]));
	clone = skb_clone(from, GFP_KERNEL);
	refs = page_ref_count(page);
	pprefs = ppst_pp_refs(page);
	ok = skb_try_coalesce(to, from, &stolen, &delta);
	if (report) {
		ppst_ok(ok == (expect_coalesce == 1), "coalesce decision", kind,
			ok, expect_coalesce);
		/* to became one more holder: a page-pool or a page reference */
		if (ok && ppst_uses_pp_refs(frag))
			ppst_ok(ppst_pp_refs(page) == pprefs + 1 &&
				page_ref_count(page) == refs,
				"one more page-pool reference, page stays in its pool",
				kind, ppst_pp_refs(page), pprefs);
		else if (ok)
			ppst_ok(page_ref_count(page) == refs + 1 &&
				!page->pp_magic && !page->pp,
				"detached page: one more page reference, left its pool",
				kind, page_ref_count(page), refs);
		if (!ok)
			ppst_ok(page_ref_count(page) == refs &&
				ppst_pp_refs(page) == pprefs,
				"refused: no reference taken", kind,
				page_ref_count(page), refs);
		ppst_ok(ok ? skb_shinfo(to)->nr_frags == 2 && to->len == 2 * PPST_LEN :
			     skb_shinfo(to)->nr_frags == 1 && to->len == PPST_LEN,
			"to's frags and length", kind, skb_shinfo(to)->nr_frags,
			to->len);
	}
	if (ok)
		kfree_skb_partial(from, stolen);	/* as TCP does */
	else
		kfree_skb(from);

	if (order == 0) {
		kfree_skb(to);
		kfree_skb(clone);
	} else if (order == 1) {
		kfree_skb(clone);
		kfree_skb(to);
	} else {
		struct ppst_race r = { .op = PPST_FREE, .skb = to };

		ppst_race_start(&r);
		kfree_skb(clone);
		ppst_race_finish(&r);
	}
	ppf_count_pool(pool, &c);
	if (report || c.inflight)
		ppst_ok(c.inflight == 0, order == 2 ? "racing frees: no page outside the pool" :
			order ? "clone freed first: no page outside the pool" :
			"to freed first: no page outside the pool",
			kind, c.inflight, c.hold - c.release);
	return c.inflight == 0;
}

/*
 * A race the coalesce review asked for (issue 13.5): this CPU coalesces a
 * cloned @from into @to while another CPU, after a random delay of up to
 * PPST_JITTER_US, applies @op to the clone: frees it, trims it (as
 * packet_rcv() does) or coalesces it into a second skb (two coalesces of
 * one page). Then everything is freed: no page may stay outside the pool.
 */
static bool ppst_coalesce_race(struct page_pool *pool, bool frag,
			       enum ppst_op op, const char *what,
			       const char *kind, bool report)
{
	struct ppst_race r = { .op = op };
	struct sk_buff *to, *from, *to2 = NULL;
	struct ppf_count c;
	bool ok, stolen;
	int delta;

	to = ppst_skb(pool, frag);
	from = ppst_skb(pool, frag);
	if (op == PPST_COALESCE)
		to2 = ppst_skb(pool, frag);
	r.skb = from ? skb_clone(from, GFP_KERNEL) : NULL;
	if (!to || !from || !r.skb || (op == PPST_COALESCE && !to2)) {
		kfree_skb(to);
		kfree_skb(from);
		kfree_skb(r.skb);
		kfree_skb(to2);
		ppst_ok(false, "allocation", kind, 0, 0);
		return false;
	}
	if (frag)
		ppst_frag_advance(pool);
	r.to = to2;
	r.delay_us = get_random_u32_below(PPST_JITTER_US);
	ppst_race_start(&r);
	ok = skb_try_coalesce(to, from, &stolen, &delta);
	if (ok)
		kfree_skb_partial(from, stolen);
	else
		kfree_skb(from);
	ppst_race_finish(&r);
	if (op == PPST_TRIM)
		kfree_skb(r.skb);
	kfree_skb(to);
	kfree_skb(to2);
	ppf_count_pool(pool, &c);
	if (report || c.inflight)
		ppst_ok(c.inflight == 0, what, kind, c.inflight, c.hold - c.release);
	return c.inflight == 0;
}

/*
 * Leak and double-return probes. Coalesce a clone of from into to and
 * consume from. Scan: free to alone; the clone still holds from's page, so
 * the page must not be in the pool's ring or cache (back early: a use after
 * free in waiting); free the clone: the page must be there exactly once if
 * it is still the pool's (twice: a double return), and nowhere if coalesce
 * detached it. With @destroy, hold one extra page reference instead,
 * destroy the pool right after the coalesce, then free to and the clone:
 * the page must have left its pool and end at exactly our one reference.
 */
static void ppst_probe(struct page_pool *pool, bool frag, bool destroy,
		       const char *kind)
{
	struct sk_buff *to, *from, *clone;
	struct page *page;
	bool ok, stolen, pp;
	int delta;

	to = ppst_skb(pool, frag);
	from = ppst_skb(pool, frag);
	clone = from ? skb_clone(from, GFP_KERNEL) : NULL;
	if (!to || !from || !clone) {
		kfree_skb(to);
		kfree_skb(from);
		kfree_skb(clone);
		ppst_ok(false, "allocation", kind, 0, 0);
		if (destroy)
			page_pool_destroy(pool);
		return;
	}
	if (frag)
		ppst_frag_advance(pool);
	page = compound_head(skb_frag_page(&skb_shinfo(from)->frags[0]));
	ok = skb_try_coalesce(to, from, &stolen, &delta);
	if (ok)
		kfree_skb_partial(from, stolen);
	else
		kfree_skb(from);
	pp = ppf_is_pp(page);
	if (destroy) {
		get_page(page);
		page_pool_destroy(pool);
		kfree_skb(to);
		kfree_skb(clone);
		ppst_ok(page_ref_count(page) == 1 && !ppf_is_pp(page),
			"pool destroyed after a coalesce: the page left it, one reference (ours) left",
			kind, page_ref_count(page), ppf_is_pp(page));
		put_page(page);
		return;
	}
	kfree_skb(to);
	ppst_ok(ppf_pool_find(pool, page) == 0,
		"to freed alone: the clone's page is not back in the pool",
		kind, ppf_pool_find(pool, page), ok);
	kfree_skb(clone);
	ppst_ok(ppf_pool_find(pool, page) == pp,
		"clone freed too: the page is back exactly once (none if detached)",
		kind, ppf_pool_find(pool, page), pp);
}

/* The coalesce races, each run PPST_RACES times per pool kind. */
static const struct {
	enum ppst_op op;
	const char *what;
} ppst_races[] = {
	{ PPST_FREE, "clone freed while coalescing: no page outside the pool" },
	{ PPST_TRIM, "clone trimmed while coalescing: no page outside the pool" },
	{ PPST_COALESCE, "two coalesces of one page: no page outside the pool" },
};

static void ppst_pool(bool frag, const char *kind)
{
	struct page_pool_params pp = {
		.order = 0,
		.pool_size = 64,
		.nid = NUMA_NO_NODE,
	};
	struct page_pool *pool;
	unsigned int r;
	int i;

#ifdef PPC_HAVE_PP_FRAG_COUNT
	if (frag)
		pp.flags |= PP_FLAG_PAGE_FRAG;
#endif
	pool = page_pool_create(&pp);
	if (IS_ERR(pool)) {
		ppst_ok(false, "page_pool_create", kind, PTR_ERR(pool), 0);
		return;
	}
	ppst_round(pool, frag, 0, kind, true);
	ppst_round(pool, frag, 1, kind, true);
	/* racing frees need a second CPU to race with */
	for (i = 0; num_online_cpus() > 1 && i < PPST_RACES; i++)
		if (!ppst_round(pool, frag, 2, kind, i == 0))
			break;
	for (r = 0; r < ARRAY_SIZE(ppst_races); r++)
		for (i = 0; num_online_cpus() > 1 && i < PPST_RACES; i++)
			if (!ppst_coalesce_race(pool, frag, ppst_races[r].op,
						ppst_races[r].what, kind, i == 0))
				break;
	ppst_probe(pool, frag, false, kind);
	page_pool_destroy(pool);

	pool = page_pool_create(&pp);
	if (IS_ERR(pool)) {
		ppst_ok(false, "page_pool_create", kind, PTR_ERR(pool), 0);
		return;
	}
	ppst_probe(pool, frag, true, kind);	/* destroys the pool */
}

static int __init ppst_init(void)
{
	if (expect_coalesce != 0 && expect_coalesce != 1) {
		pr_err("expect_coalesce=0|1 is required\n");
		return -EINVAL;
	}
	ppst_pool(false, "one-buffer-per-page pool");
	ppst_pool(true, "frag pool");
	pr_info("1..%d\n", ppst_n);
	pr_info("selftest done: %d passed, %d failed\n", ppst_n - ppst_failed,
		ppst_failed);
	return 0;
}

static void __exit ppst_exit(void)
{
}

module_init(ppst_init);
module_exit(ppst_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ppcoal test: page ownership when coalescing cloned page-pool skbs");
