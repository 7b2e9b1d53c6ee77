// SPDX-License-Identifier: GPL-2.0
/*
 * ppcoal_differential: stock skb_try_coalesce() against ppcoal's shadow on
 * identical inputs.
 *
 * Cases come from a seed (a private PRNG): skb pairs of the shapes that
 * matter to the function: to linear with tailroom from none to enough,
 * with and without frags; from linear (kmalloc'd head), head_frag (page
 * frag head) or frag-only, 0..MAX_SKB_FRAGS frags; pages from a
 * one-buffer-per-page pool, (6.1) a PP_FLAG_PAGE_FRAG pool or no pool;
 * pp_recycle on either, both or none; to and/or from cloned (some clones
 * freed before the call), frag_list on either, SHARED_FRAG on from;
 * zerocopy on either (a ubuf_info of this module's, attached as
 * skb_zcopy_set() does after any cloning, since skb_clone() would copy
 * the frags of a zerocopy skb); pfmemalloc pages (the case's pages from
 * the page allocator marked as the allocator marks a page taken from the
 * reserves, so build_skb() and skb_add_rx_frag() propagate it; the head
 * of from can be such a page, stolen by a coalesce) and from->pfmemalloc
 * set as a reserve-backed kmalloc head sets it.
 *
 * The guest drives it through debugfs, writing "SEED N MODE" to run: with
 * MODE "record" every case runs and its outcome is kept; with "compare" the
 * same cases run again and every outcome must equal the recorded one; with
 * "compare-on" the differences must be ones that coalesce=on documents: a
 * cloned page-pool from that stock refuses is coalesced. ppcoal's mode is
 * set by the guest between the runs (off for record, observe or on for the
 * comparisons). An outcome: the return value, fragstolen, delta_truesize,
 * to's len, data_len, truesize, nr_frags, pfmemalloc and shinfo flags, and
 * for every page involved the change of its refcount and page-pool count
 * and whether it is still a page-pool page, and the references left on
 * the zerocopy ubuf_info once everything is freed. After each case everything is
 * freed as TCP frees it; the pools must end with no page in flight.
 * Reading .../result gives "cases N mismatches M allowed A inflight I"
 * and the first mismatch (seed, case, shape, field, both values).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/module.h>
#include <linux/mutex.h>
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

#define PPD_MAX_CASES	200000
#define PPD_PAGES	(2 * MAX_SKB_FRAGS + 2)

/* What the caller of skb_try_coalesce() can see of one case. */
struct ppd_outcome {
	s8 ret, stolen;
	s16 nr_frags;
	u8 pfmemalloc, flags, zc_left;
	s32 delta, len, data_len, truesize;
	s8 ref[PPD_PAGES];	/* page refcount change */
	s8 ppref[PPD_PAGES];	/* page-pool count change */
	s8 pp[PPD_PAGES];	/* still a page-pool page */
};

/* The shape of one case, drawn from the seed. */
struct ppd_shape {
	u8 to_pp, from_pp;	/* pp_recycle */
	u8 to_kind, from_kind;	/* page source: 0 none, 1 whole pool, 2 frag pool */
	u8 from_head;		/* 0 kmalloc, 1 head_frag, 2 frag-only, 3 page head */
	u8 to_frags, from_frags;
	u8 to_cloned, from_cloned, clone_freed;
	u8 to_fraglist, from_fraglist, shared_frag;
	u8 to_zcopy, from_zcopy;
	u8 pfm_pages, from_pfm;	/* allocator pages pfmemalloc; the skb flag */
	u16 to_tail, from_len;
};

static struct page_pool *ppd_pool_whole, *ppd_pool_frag;
static struct ppd_outcome *ppd_rec;
static unsigned int ppd_nrec;
static struct dentry *ppd_dir;
static struct ppt_diffrun ppd_dr;	/* run and result, below */

static u64 ppd_rnd;

/*
 * The zerocopy buffer every zerocopy case attaches: a reference per skb
 * data that carries it, dropped by its completion when that data is
 * released (skb_release_data() -> skb_zcopy_clear()).
 */
static void ppd_zc_complete(struct sk_buff *skb, struct ubuf_info *uarg,
			    bool success)
{
	refcount_dec(&uarg->refcnt);
}

#ifdef PPC_HAVE_UBUF_INFO_OPS
static const struct ubuf_info_ops ppd_zc_ops = {
	.complete = ppd_zc_complete,
};
#endif

static struct ubuf_info ppd_zc = {
#ifdef PPC_HAVE_UBUF_INFO_OPS
	.ops = &ppd_zc_ops,
#else
	.callback = ppd_zc_complete,
#endif
	.refcnt = REFCOUNT_INIT(1),
	.flags = SKBFL_ZEROCOPY_FRAG,
};

static u32 ppd_next(void)
{
	/* xorshift64*: the same seed gives the same cases on every run */
	ppd_rnd ^= ppd_rnd >> 12;
	ppd_rnd ^= ppd_rnd << 25;
	ppd_rnd ^= ppd_rnd >> 27;
	return (ppd_rnd * 2685821657736338717ULL) >> 32;
}

static u32 ppd_below(u32 n)
{
	return n ? ppd_next() % n : 0;
}

static void ppd_draw(struct ppd_shape *s)
{
	s->to_pp = ppd_below(2);
	s->from_pp = ppd_below(4) ? s->to_pp : !s->to_pp;
	s->to_kind = s->to_pp ? 1 + ppd_below(ppd_pool_frag ? 2 : 1) : 0;
	s->from_kind = s->from_pp ? 1 + ppd_below(ppd_pool_frag ? 2 : 1) : 0;
	s->from_head = ppd_below(4);
	s->to_frags = ppd_below(3) ? 0 : ppd_below(MAX_SKB_FRAGS + 1);
	s->from_frags = ppd_below(2) ? ppd_below(4) :
				       ppd_below(MAX_SKB_FRAGS + 1);
	if (s->from_head == 2 && !s->from_frags)
		s->from_frags = 1;
	s->to_cloned = !ppd_below(8);
	s->from_cloned = ppd_below(2);
	s->clone_freed = s->from_cloned && !ppd_below(4);
	s->to_fraglist = !ppd_below(16);
	s->from_fraglist = !ppd_below(16);
	s->shared_frag = !ppd_below(4);
	s->to_zcopy = !ppd_below(8);
	s->from_zcopy = !ppd_below(8);
	s->pfm_pages = !ppd_below(4);
	s->from_pfm = !ppd_below(8);
	s->to_tail = ppd_below(3) ? ppd_below(64) : ppd_below(2048);
	s->from_len = 1 + ppd_below(ppd_below(2) ? 128 : 1024);
}

/*
 * A page from the page allocator, marked pfmemalloc when pfm is set, as
 * the allocator marks a page it took from the reserves (6.1 and 6.12
 * mm.h: set_page_pfmemalloc(); the next allocation of the page clears it).
 */
static struct page *ppd_alloc_page(bool pfm)
{
	struct page *page = alloc_page(GFP_KERNEL);

	if (page && pfm)
		set_page_pfmemalloc(page);
	return page;
}

/* A page for a frag: from a pool (kind 1 or 2) or the page allocator. */
static struct page *ppd_page(int kind, bool pfm, unsigned int *off,
			     unsigned int *size)
{
	struct page *page;

	*off = 0;
	*size = PAGE_SIZE;
	if (!kind)
		return ppd_alloc_page(pfm);
	local_bh_disable();
	if (kind == 2) {
		*size = 2048;
		page = page_pool_dev_alloc_frag(ppd_pool_frag, off, *size);
	} else {
		page = page_pool_dev_alloc_pages(ppd_pool_whole);
	}
	local_bh_enable();
	return page;
}

static int ppd_add_frags(struct sk_buff *skb, int kind, bool pfm, int n)
{
	unsigned int off, size;
	struct page *page;
	int i;

	for (i = 0; i < n; i++) {
		page = ppd_page(kind, pfm, &off, &size);
		if (!page)
			return -ENOMEM;
		skb_add_rx_frag(skb, skb_shinfo(skb)->nr_frags, page, off,
				1 + ppd_below(size / 2), size);
	}
	return 0;
}

/* What to and from share: frags, pp_recycle, a frag_list; NULL on failure. */
static struct sk_buff *ppd_finish(struct sk_buff *skb, int kind, bool pfm,
				  int frags, bool pp, bool fraglist)
{
	if (ppd_add_frags(skb, kind, pfm, frags))
		goto free;
	if (pp)
		skb_mark_for_recycle(skb);
	if (fraglist) {
		skb_shinfo(skb)->frag_list = alloc_skb(64, GFP_KERNEL);
		if (!skb_shinfo(skb)->frag_list)
			goto free;
	}
	return skb;
free:
	kfree_skb(skb);
	return NULL;
}

static struct sk_buff *ppd_build_to(const struct ppd_shape *s)
{
	struct sk_buff *skb;

	skb = alloc_skb(128 + s->to_tail, GFP_KERNEL);
	if (!skb)
		return NULL;
	skb_put(skb, 64);
	/* what is left after the data is the tailroom the case wants */
	skb_put(skb, skb_tailroom(skb) > s->to_tail ?
		     skb_tailroom(skb) - s->to_tail : 0);
	return ppd_finish(skb, s->to_kind, s->pfm_pages, s->to_frags, s->to_pp,
			  s->to_fraglist);
}

/*
 * A head_frag skb built around @data (@size bytes: a page frag or a whole
 * page) holding @len bytes after NET_SKB_PAD; @data is freed on failure.
 */
static struct sk_buff *ppd_frag_head(void *data, unsigned int size,
				     unsigned int len)
{
	struct sk_buff *skb = data ? build_skb(data, size) : NULL;

	if (!skb) {
		if (data)
			skb_free_frag(data);	/* page_frag_free(): a page too */
		return NULL;
	}
	skb_reserve(skb, NET_SKB_PAD);
	skb_put(skb, len);
	return skb;
}

static struct sk_buff *ppd_build_from(const struct ppd_shape *s)
{
	unsigned int fsz = SKB_DATA_ALIGN(s->from_len + NET_SKB_PAD) +
			   SKB_DATA_ALIGN(sizeof(struct skb_shared_info));
	struct sk_buff *skb = NULL;
	struct page *page;

	switch (s->from_head) {
	case 0:
		skb = alloc_skb(s->from_len, GFP_KERNEL);
		if (skb)
			skb_put(skb, s->from_len);
		break;
	case 1:
		skb = ppd_frag_head(netdev_alloc_frag(fsz), fsz, s->from_len);
		break;
	case 2:
		skb = alloc_skb(0, GFP_KERNEL);
		break;
	default:
		/* a whole page of its own as head, which may be pfmemalloc */
		page = ppd_alloc_page(s->pfm_pages);
		skb = ppd_frag_head(page ? page_address(page) : NULL, PAGE_SIZE,
				    s->from_len);
		break;
	}
	if (!skb)
		return NULL;
	if (s->shared_frag)
		skb_shinfo(skb)->flags |= SKBFL_SHARED_FRAG;
	if (s->from_pfm)
		skb->pfmemalloc = 1;
	return ppd_finish(skb, s->from_kind, s->pfm_pages, s->from_frags,
			  s->from_pp, s->from_fraglist);
}

static long ppd_pp_count(struct page *page)
{
#ifdef PPC_HAVE_PP_REF_COUNT
	return atomic_long_read(&page->pp_ref_count);
#else
	return atomic_long_read(&page->pp_frag_count);
#endif
}

/* The pages of a case: from's head page and frags, then to's frags. */
static int ppd_pages(struct sk_buff *to, struct sk_buff *from,
		     struct page **pages)
{
	int i, n = 0;

	pages[n++] = virt_to_head_page(from->head);
	for (i = 0; i < skb_shinfo(from)->nr_frags; i++)
		pages[n++] = compound_head(skb_frag_page(&skb_shinfo(from)->frags[i]));
	for (i = 0; i < skb_shinfo(to)->nr_frags && n < PPD_PAGES; i++)
		pages[n++] = compound_head(skb_frag_page(&skb_shinfo(to)->frags[i]));
	return n;
}

/* Run one case through skb_try_coalesce(); -ENOMEM when it could not be built. */
static int ppd_case(const struct ppd_shape *s, struct ppd_outcome *o)
{
	struct sk_buff *to, *from, *to_clone = NULL, *from_clone = NULL;
	long ref[PPD_PAGES], ppref[PPD_PAGES];
	struct page *pages[PPD_PAGES];
	bool stolen = false;
	int i, n, delta = 0;

	memset(o, 0, sizeof(*o));
	to = ppd_build_to(s);
	from = ppd_build_from(s);
	if (!to || !from)
		goto nomem;
	if (s->to_cloned) {
		to_clone = skb_clone(to, GFP_KERNEL);
		if (!to_clone)
			goto nomem;
	}
	if (s->from_cloned) {
		from_clone = skb_clone(from, GFP_KERNEL);
		if (!from_clone)
			goto nomem;
	}
	if (s->clone_freed) {
		kfree_skb(from_clone);
		from_clone = NULL;
	}
	if (s->to_zcopy)
		skb_zcopy_set(to, &ppd_zc, NULL);
	if (s->from_zcopy)
		skb_zcopy_set(from, &ppd_zc, NULL);
	n = ppd_pages(to, from, pages);
	for (i = 0; i < n; i++) {
		ref[i] = page_ref_count(pages[i]);
		ppref[i] = ppf_is_pp(pages[i]) ? ppd_pp_count(pages[i]) : 0;
	}

	local_bh_disable();	/* as TCP's receive path calls it */
	o->ret = skb_try_coalesce(to, from, &stolen, &delta);
	local_bh_enable();

	o->stolen = stolen;
	o->delta = o->ret ? delta : 0;
	o->len = to->len;
	o->data_len = to->data_len;
	o->truesize = to->truesize;
	o->nr_frags = skb_shinfo(to)->nr_frags;
	o->pfmemalloc = to->pfmemalloc;
	o->flags = skb_shinfo(to)->flags;
	for (i = 0; i < n; i++) {
		o->pp[i] = ppf_is_pp(pages[i]);
		o->ref[i] = page_ref_count(pages[i]) - ref[i];
		o->ppref[i] = (o->pp[i] ? ppd_pp_count(pages[i]) : 0) - ppref[i];
	}

	/* free as tcp_try_coalesce()'s callers do */
	if (o->ret)
		kfree_skb_partial(from, stolen);
	else
		kfree_skb(from);
	kfree_skb(to);
	kfree_skb(to_clone);
	kfree_skb(from_clone);
	o->zc_left = refcount_read(&ppd_zc.refcnt) - 1;
	if (o->zc_left)
		refcount_set(&ppd_zc.refcnt, 1);	/* one report per case */
	return 0;
nomem:
	kfree_skb(to);
	kfree_skb(from);
	kfree_skb(to_clone);
	return -ENOMEM;
}

/* One field of two outcomes: its name when they differ. */

static const char *ppd_diff(const struct ppd_outcome *a,
			    const struct ppd_outcome *b, long *x, long *y)
{
	static const char * const page_field[] = { "ref", "ppref", "pp" };
	const char *f;
	int i;

	f = ppt_cmp("ret", a->ret, b->ret, x, y) ?:
	    ppt_cmp("fragstolen", a->stolen, b->stolen, x, y) ?:
	    ppt_cmp("delta", a->delta, b->delta, x, y) ?:
	    ppt_cmp("len", a->len, b->len, x, y) ?:
	    ppt_cmp("data_len", a->data_len, b->data_len, x, y) ?:
	    ppt_cmp("truesize", a->truesize, b->truesize, x, y) ?:
	    ppt_cmp("nr_frags", a->nr_frags, b->nr_frags, x, y) ?:
	    ppt_cmp("pfmemalloc", a->pfmemalloc, b->pfmemalloc, x, y) ?:
	    ppt_cmp("flags", a->flags, b->flags, x, y) ?:
	    ppt_cmp("zc_left", a->zc_left, b->zc_left, x, y);
	for (i = 0; !f && i < PPD_PAGES; i++)
		f = ppt_cmp(page_field[0], a->ref[i], b->ref[i], x, y) ?:
		    ppt_cmp(page_field[1], a->ppref[i], b->ppref[i], x, y) ?:
		    ppt_cmp(page_field[2], a->pp[i], b->pp[i], x, y);
	return f;
}

static long ppd_inflight(void)
{
	struct ppf_count c;
	long sum = 0;

	ppf_count_pool(ppd_pool_whole, &c);
	sum += c.inflight;
	if (ppd_pool_frag) {
		ppf_count_pool(ppd_pool_frag, &c);
		sum += c.inflight;
	}
	return sum;
}

static int ppd_run(u64 seed, unsigned int n, const char *mode)
{
	bool record = !strcmp(mode, "record");
	bool on = !strcmp(mode, "compare-on");
	unsigned int i, mism = 0, allowed = 0, skipped = 0;
	struct ppd_outcome o;
	struct ppd_shape s;
	const char *field;
	char first[320] = "";
	long x, y;

	if (!record && strcmp(mode, "compare") && !on)
		return -EINVAL;
	if (n > PPD_MAX_CASES || (!record && n != ppd_nrec))
		return -EINVAL;
	ppd_rnd = seed ?: 1;
	for (i = 0; i < n; i++) {
		ppd_draw(&s);
		if (ppd_case(&s, &o)) {
			/* both runs must skip the same cases: mark it */
			memset(&o, 0xff, sizeof(o));
			skipped++;
		}
		if (record) {
			ppd_rec[i] = o;
			continue;
		}
		field = ppd_diff(&ppd_rec[i], &o, &x, &y);
		if (!field)
			continue;
		/* coalesce=on: a cloned page-pool from that stock refused */
		if (on && !ppd_rec[i].ret && o.ret && s.from_pp && s.from_cloned &&
		    !s.clone_freed) {
			allowed++;
			continue;
		}
		if (!mism++)
			snprintf(first, sizeof(first),
				 "seed %llu case %u shape to_pp=%u/%u from_pp=%u/%u head=%u frags=%u/%u cloned=%u/%u freed=%u fraglist=%u/%u shared=%u zc=%u/%u pfm=%u/%u tail=%u len=%u: %s stock %ld shadow %ld",
				 seed, i, s.to_pp, s.to_kind, s.from_pp,
				 s.from_kind, s.from_head, s.to_frags,
				 s.from_frags, s.to_cloned, s.from_cloned,
				 s.clone_freed, s.to_fraglist, s.from_fraglist,
				 s.shared_frag, s.to_zcopy, s.from_zcopy,
				 s.pfm_pages, s.from_pfm, s.to_tail, s.from_len, field,
				 x, y);
		cond_resched();
	}
	if (record)
		ppd_nrec = n;
	snprintf(ppd_dr.result, sizeof(ppd_dr.result),
		 "%s cases %u mismatches %u allowed %u skipped %u inflight %ld%s%s\n",
		 mode, n, mism, allowed, skipped, ppd_inflight(),
		 first[0] ? " first: " : "", first);
	pr_info("%s", ppd_dr.result);
	return 0;
}

static struct ppt_diffrun ppd_dr = {
	.lock = __MUTEX_INITIALIZER(ppd_dr.lock),
	.run = ppd_run,
};

static int __init ppd_init(void)
{
	struct page_pool_params pp = {
		.order = 0,
		.pool_size = 1024,
		.nid = NUMA_NO_NODE,
	};

	ppd_rec = vzalloc(PPD_MAX_CASES * sizeof(*ppd_rec));
	if (!ppd_rec)
		return -ENOMEM;
	ppd_pool_whole = page_pool_create(&pp);
	if (IS_ERR(ppd_pool_whole))
		goto free;
#ifdef PPC_HAVE_PP_FRAG_COUNT
	pp.flags |= PP_FLAG_PAGE_FRAG;
	ppd_pool_frag = page_pool_create(&pp);
	if (IS_ERR(ppd_pool_frag)) {
		page_pool_destroy(ppd_pool_whole);
		goto free;
	}
#endif
	ppd_dir = ppt_diffrun_create("ppcoal_differential", &ppd_dr);
	return 0;
free:
	vfree(ppd_rec);
	return -ENOMEM;
}

static void __exit ppd_exit(void)
{
	debugfs_remove_recursive(ppd_dir);
	page_pool_destroy(ppd_pool_whole);
	if (ppd_pool_frag)
		page_pool_destroy(ppd_pool_frag);
	vfree(ppd_rec);
}

module_init(ppd_init);
module_exit(ppd_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ppcoal test: stock skb_try_coalesce against the shadow on identical inputs");
