// SPDX-License-Identifier: GPL-2.0
/*
 * ppcoal shadow skb_try_coalesce().
 *
 * A complete reimplementation of the kernel's decision, written for each
 * kernel family and counting every branch:
 *  - 6.1 family (no pp_ref_count): net/core/skbuff.c:5468 of Debian
 *    6.1.192, including the later hardening (frag_list and zerocopy
 *    refusal, SKBFL_SHARED_FRAG propagation).
 *  - 6.12 family (pp_ref_count for every pool): net/core/skbuff.c:6070 of
 *    Debian 6.12.117, which carries upstream f7dc3248dcfb ("skbuff:
 *    Optimization of SKB coalescing for page pool", 6.8): equal pp_recycle
 *    suffices and a cloned page-pool from takes pp_ref_count references.
 *    The refusal that change lifted came with 1effe8ca4e34 ("skbuff: fix
 *    coalescing for page_pool fragment recycling", CVE-2022-49093), which
 *    6.1 still carries.
 * It only calls exported functions and header inlines.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/skbuff.h>
#include <linux/mm.h>

#include "ppcoal.h"

#ifdef PPC_HAVE_PP_REF_COUNT
/*
 * Stand-in for the static skb_pp_frag_ref() of 6.12 (net/core/skbuff.c
 * :1058-1077): a cloned page-pool from keeps its frags, so each one gains
 * a reference, pp_ref_count for page-pool netmem, a page reference
 * otherwise. Netmem helpers throughout, as stock: an unreadable (devmem)
 * frag is a net_iov, which has no struct page.
 */
static void ppc_pp_frag_ref(struct skb_shared_info *shinfo)
{
	netmem_ref head;
	int i;

	for (i = 0; i < shinfo->nr_frags; i++) {
		head = netmem_compound_head(skb_frag_netmem(&shinfo->frags[i]));
		if (likely(ppc_netmem_is_pp(head))) {
			page_pool_ref_netmem(head);
			ppc_count(CO_PP_FRAG_REFS);
		} else {
			page_ref_inc(netmem_to_page(head));
		}
	}
}
#endif

/*
 * What coalesce=on does with a cloned page-pool from. 6.1: detach (pages
 * of one-buffer-per-page pools leave their pool, then take plain
 * references), refuse (such pools keep the stock refusal; FRAG pools and
 * the tailroom copy still coalesce) or legacy (the stock 6.1 rule). 6.12:
 * upstream (the kernel's own rule, which already takes pp_ref_count
 * references) or legacy (the pre-6.8 refusal, to measure what the upstream
 * change is worth).
 */
enum ppc_clone_policy {
	PPC_CLONE_DETACH,
	PPC_CLONE_REFUSE,
	PPC_CLONE_LEGACY,
	PPC_CLONE_UPSTREAM,
	PPC_NR_CLONE_POLICIES
};

static const char * const ppc_clone_policy_names[PPC_NR_CLONE_POLICIES] = {
	[PPC_CLONE_DETACH] = "detach",
	[PPC_CLONE_REFUSE] = "refuse",
	[PPC_CLONE_LEGACY] = "legacy",
	[PPC_CLONE_UPSTREAM] = "upstream",
};

#ifdef PPC_HAVE_PP_REF_COUNT
#define PPC_CLONE_DEFAULT PPC_CLONE_UPSTREAM
#define PPC_CLONE_WORDS "upstream or legacy"
#else
/*
 * refuse until a measurement with DMA-mapping pools says otherwise: detach
 * costs a page allocation (and on real NICs a DMA map and unmap) per
 * coalesced clone, which the benchmark that once chose it could not see.
 */
#define PPC_CLONE_DEFAULT PPC_CLONE_REFUSE
#define PPC_CLONE_WORDS "detach, refuse or legacy"
#endif

static enum ppc_clone_policy ppc_clone_policy = PPC_CLONE_DEFAULT;

/* The policies this kernel family can carry out. */
static bool ppc_clone_policy_ok(enum ppc_clone_policy p)
{
#ifdef PPC_HAVE_PP_REF_COUNT
	return p == PPC_CLONE_UPSTREAM || p == PPC_CLONE_LEGACY;
#else
	return p != PPC_CLONE_UPSTREAM;
#endif
}

/*
 * At load, a word of the other kernel family (detach or refuse on 6.12,
 * upstream on 6.1) is taken as this family's default, with a warning: one
 * modprobe.d line then serves a machine that boots kernels of both
 * families. Written later (sysfs), it is refused: the policy stays as set.
 */
static int ppc_clone_policy_set(const char *val, const struct kernel_param *kp)
{
	char buf[16], *word;
	int i;

	if (strscpy(buf, val, sizeof(buf)) >= 0) {
		word = strim(buf);
		for (i = 0; i < PPC_NR_CLONE_POLICIES; i++) {
			if (strcmp(word, ppc_clone_policy_names[i]))
				continue;
			if (!ppc_clone_policy_ok(i)) {
				if (THIS_MODULE->state != MODULE_STATE_UNFORMED &&
				    THIS_MODULE->state != MODULE_STATE_COMING)
					break;
				pr_warn("clone_policy: \"%s\" is a policy of the other kernel family; this kernel takes its default, %s\n",
					word,
					ppc_clone_policy_names[PPC_CLONE_DEFAULT]);
				i = PPC_CLONE_DEFAULT;
			}
			WRITE_ONCE(ppc_clone_policy, i);
			return 0;
		}
	}
	pr_err("clone_policy: invalid value \"%.*s\" for this kernel: use "
	       PPC_CLONE_WORDS "; policy unchanged\n",
	       min_t(int, strcspn(val, "\n"), 32), val);
	return -EINVAL;
}

/**
 * ppc_clone_policy_name() - the current clone policy, for stats
 *
 * Return: "detach", "refuse", "legacy" or "upstream".
 */
const char *ppc_clone_policy_name(void)
{
	return ppc_clone_policy_names[READ_ONCE(ppc_clone_policy)];
}

static int ppc_clone_policy_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n",
			  ppc_clone_policy_names[READ_ONCE(ppc_clone_policy)]);
}

static const struct kernel_param_ops ppc_clone_policy_ops = {
	.set = ppc_clone_policy_set,
	.get = ppc_clone_policy_get,
};

module_param_cb(clone_policy, &ppc_clone_policy_ops, NULL, 0644);
MODULE_PARM_DESC(clone_policy,
		 "coalesce=on and a cloned page-pool skb: 6.1 refuse (default), detach or legacy; 6.12 upstream (default) or legacy");

#ifndef PPC_HAVE_PP_REF_COUNT
/* What the page of a frag is to coalescing, classified once. */
enum ppc_pg_class {
	PPC_PG_PLAIN,	/* no page-pool page (or one being detached) */
	PPC_PG_FRAG,	/* of a PP_FLAG_PAGE_FRAG pool: pp_frag_count */
	PPC_PG_WHOLE,	/* of a one-buffer-per-page pool */
};

/*
 * Reads pp_magic and pp once each: a concurrent detach of the same page
 * (another clone coalescing on another CPU) clears both, so a second read
 * of pp could be NULL. The pool stays alive while @head is in flight as
 * its page; a detach ends that, so detaching callers hold ppc_detach_lock
 * from this read to their own detach (see ppc_clone_take_refs()).
 */
static enum ppc_pg_class ppc_page_class(struct page *head,
					struct page_pool **pool)
{
	/* 6.1 keeps compound-head and pfmemalloc marks in bits 0 and 1 */
	if ((READ_ONCE(head->pp_magic) & ~0x3UL) != PP_SIGNATURE)
		return PPC_PG_PLAIN;
	*pool = READ_ONCE(head->pp);
	if (!*pool)
		return PPC_PG_PLAIN;
	return (*pool)->p.flags & PP_FLAG_PAGE_FRAG ? PPC_PG_FRAG :
						      PPC_PG_WHOLE;
}

/*
 * 6.1, coalesce=on: the references a cloned frag-only page-pool from needs
 * before its frags can also live in to. Called before to is modified.
 * Only FRAG-pool references can fail (pp_frag_count at LONG_MAX while the
 * pool still carves the page): they are taken first and undone on failure,
 * so a refusal leaves everything as it was.
 *
 * Return: 0, or the counter of the refusal.
 */
static int __ppc_clone_take_refs(struct skb_shared_info *sh,
				 enum ppc_clone_policy policy)
{
	struct page_pool *pool[MAX_SKB_FRAGS];
	u8 class[MAX_SKB_FRAGS];
	struct page *head;
	unsigned long magic;
	int i, j, why;

	for (i = 0; i < sh->nr_frags; i++) {
		head = compound_head(skb_frag_page(&sh->frags[i]));
		class[i] = ppc_page_class(head, &pool[i]);
		if (class[i] == PPC_PG_WHOLE && policy == PPC_CLONE_REFUSE)
			goto refuse_policy;
		if (class[i] == PPC_PG_FRAG &&
		    !atomic_long_add_unless(&head->pp_frag_count, 1, LONG_MAX))
			goto refuse_bias;
	}
	for (i = 0; i < sh->nr_frags; i++) {
		head = compound_head(skb_frag_page(&sh->frags[i]));
		if (class[i] == PPC_PG_FRAG) {
			ppc_count(CO_ON_FRAG_REFS);
			continue;
		}
		/*
		 * A page of a one-buffer-per-page pool has no counter for a
		 * second page-pool holder: it leaves its pool, and every
		 * holder frees it with put_page(). The xchg makes the detach
		 * happen once even if two clones race here.
		 */
		if (class[i] == PPC_PG_WHOLE) {
			magic = xchg(&head->pp_magic, 0);
			if ((magic & ~0x3UL) == PP_SIGNATURE) {
				page_pool_release_page(pool[i], head);
				ppc_count(CO_ON_DETACHED);
			}
		}
		get_page(head);
	}
	return 0;

refuse_bias:
	why = PPC_C_CO_R_FRAG_BIAS;
	goto undo;
refuse_policy:
	why = PPC_C_CO_R_CLONE_POLICY;
undo:
	/* drop the FRAG-pool references of frags 0 .. i-1 */
	for (j = 0; j < i; j++) {
		if (class[j] != PPC_PG_FRAG)
			continue;
		head = compound_head(skb_frag_page(&sh->frags[j]));
		atomic_long_dec(&head->pp_frag_count);
	}
	return why;
}

/*
 * Only detach ends a page's membership while another holder still has it
 * (the pool's own release needs the last reference, which from's frag
 * holds): with every detach under one lock, the pool read by
 * ppc_page_class() stays alive until this caller's detach. refuse and
 * legacy detach nothing and take no lock.
 */
static DEFINE_SPINLOCK(ppc_detach_lock);

static int ppc_clone_take_refs(struct skb_shared_info *sh,
			       enum ppc_clone_policy policy)
{
	int why;

	if (policy != PPC_CLONE_DETACH)
		return __ppc_clone_take_refs(sh, policy);
	spin_lock_bh(&ppc_detach_lock);
	why = __ppc_clone_take_refs(sh, policy);
	spin_unlock_bh(&ppc_detach_lock);
	return why;
}
#endif

static bool ppc_refuse(enum ppc_counter why)
{
	this_cpu_inc(ppc_stats.c[why]);
	return false;
}

static bool ppc_coalesce(struct sk_buff *to, struct sk_buff *from,
			 bool *fragstolen, int *delta_truesize)
{
	enum ppc_clone_policy policy = PPC_CLONE_LEGACY;
	struct skb_shared_info *to_shinfo, *from_shinfo;
	int i, delta, len = from->len;
	bool from_cloned, pp_clone, refs_taken = false;

	if (ppc_path_mode(COALESCE) == PPC_MODE_ON)
		policy = READ_ONCE(ppc_clone_policy);
#ifdef PPC_HAVE_PP_REF_COUNT
	/* observe mirrors the running kernel, which is upstream */
	if (ppc_path_mode(COALESCE) != PPC_MODE_ON)
		policy = PPC_CLONE_UPSTREAM;
#endif
	*fragstolen = false;

	if (skb_cloned(to))
		return ppc_refuse(PPC_C_CO_R_TO_CLONED);

	/* Read once: every later decision uses this value. */
	from_cloned = skb_cloned(from);
	pp_clone = from->pp_recycle && from_cloned;
	if (from->pp_recycle) {
		ppc_count(CO_PP_FROM);
		if (from_cloned)
			ppc_count(CO_PP_CLONED_FROM);
	}

	/* Never mix page-pool and other pages in one skb. */
	if (to->pp_recycle != from->pp_recycle)
		return ppc_refuse(PPC_C_CO_R_PP_MISMATCH);
	/*
	 * Stock 6.1 refuses a cloned page-pool from, even for the copy
	 * (1effe8ca4e34, until f7dc3248dcfb in 6.8). legacy keeps that rule.
	 */
	if (pp_clone && policy == PPC_CLONE_LEGACY)
		return ppc_refuse(PPC_C_CO_R_PP_CLONED);
#ifdef PPC_HAVE_SKB_FRAGS_READABLE
	if (skb_frags_readable(from) != skb_frags_readable(to))
		return ppc_refuse(PPC_C_CO_R_UNREADABLE);
	if (len <= skb_tailroom(to) && skb_frags_readable(from)) {
#else
	if (len <= skb_tailroom(to)) {
#endif
		/* Cannot fail: len is from->len. Undo rather than BUG. */
		if (len && WARN_ON_ONCE(skb_copy_bits(from, 0, skb_put(to, len),
						      len))) {
			__skb_trim(to, to->len - len);
			return false;
		}
		*delta_truesize = 0;
		ppc_count(CO_COPIED);
		if (pp_clone)
			ppc_count(CO_CLONE_COPIED);
		return true;
	}

	to_shinfo = skb_shinfo(to);
	from_shinfo = skb_shinfo(from);
	if (to_shinfo->frag_list || from_shinfo->frag_list)
		return ppc_refuse(PPC_C_CO_R_FRAG_LIST);
	if (skb_zcopy(to) || skb_zcopy(from))
		return ppc_refuse(PPC_C_CO_R_ZCOPY);

	if (skb_headlen(from)) {
		struct page *page;
		unsigned int offset;

		if (to_shinfo->nr_frags + from_shinfo->nr_frags >= MAX_SKB_FRAGS)
			return ppc_refuse(PPC_C_CO_R_TOO_MANY_FRAGS);
		/* !head_frag || cloned, with the cloned state read above */
		if (!from->head_frag || from_cloned)
			return ppc_refuse(PPC_C_CO_R_HEAD_LOCKED);

		delta = from->truesize - SKB_DATA_ALIGN(sizeof(struct sk_buff));
		page = virt_to_head_page(from->head);
		offset = from->data - (unsigned char *)page_address(page);
		skb_fill_page_desc(to, to_shinfo->nr_frags, page, offset,
				   skb_headlen(from));
		*fragstolen = true;
		ppc_count(CO_HEAD_STOLEN);
	} else {
		if (to_shinfo->nr_frags + from_shinfo->nr_frags > MAX_SKB_FRAGS)
			return ppc_refuse(PPC_C_CO_R_TOO_MANY_FRAGS);

		delta = from->truesize - SKB_TRUESIZE(skb_end_offset(from));
#ifndef PPC_HAVE_PP_REF_COUNT
		if (pp_clone) {
			int why = ppc_clone_take_refs(from_shinfo, policy);

			if (why)
				return ppc_refuse(why);
			refs_taken = true;
			ppc_count(CO_CLONE_MOVED);
		}
#endif
		ppc_count(CO_FRAGS_MOVED);
	}

	WARN_ON_ONCE(delta < len);

	memcpy(to_shinfo->frags + to_shinfo->nr_frags, from_shinfo->frags,
	       from_shinfo->nr_frags * sizeof(skb_frag_t));
	to_shinfo->nr_frags += from_shinfo->nr_frags;
	if (from_shinfo->nr_frags)
		to_shinfo->flags |= from_shinfo->flags & SKBFL_SHARED_FRAG;

	if (!from_cloned) {
		/* from gives its frags away: nothing to reference. */
		from_shinfo->nr_frags = 0;
	} else if (!refs_taken) {
#ifdef PPC_HAVE_PP_REF_COUNT
		if (from->pp_recycle)
			ppc_pp_frag_ref(from_shinfo);
		else
#endif
			for (i = 0; i < from_shinfo->nr_frags; i++)
				__skb_frag_ref(&from_shinfo->frags[i]);
	}

	to->truesize += delta;
	to->len += len;
	to->data_len += len;

	*delta_truesize = delta;
	return true;
}

/**
 * ppc_skb_try_coalesce() - replacement for skb_try_coalesce()
 * @to: prior buffer
 * @from: buffer to add
 * @fragstolen: set when the head of @from became a frag of @to
 * @delta_truesize: truesize moved from @from to @to
 *
 * Reached only through the ftrace redirect of skb_try_coalesce(); counts
 * the call and its outcome.
 *
 * Return: true when @from was merged into @to.
 */
bool ppc_skb_try_coalesce(struct sk_buff *to, struct sk_buff *from,
			  bool *fragstolen, int *delta_truesize)
{
	ppc_count(CO_CALLS);
	return ppc_coalesce(to, from, fragstolen, delta_truesize);
}
