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
 *    Debian 6.12.117, which carries upstream 1effe8ca4e34 ("skbuff: Optimization
 *    of SKB coalescing for page pool", 6.8): equal pp_recycle suffices and
 *    a cloned page-pool from takes pp_ref_count references.
 * It only calls exported functions and header inlines.
 */
#include <linux/skbuff.h>
#include <linux/mm.h>

#include "ppcoal.h"

#ifdef PPC_HAVE_PP_REF_COUNT
/*
 * Stand-in for the static skb_pp_frag_ref() of 6.12 (net/core/skbuff.c
 * :1058): a cloned page-pool from keeps its frags, so each one gains a
 * reference, pp_ref_count for page-pool pages, a page reference otherwise.
 * page_pool_page_is_pp() masks the DMA index bits Debian 6.12 keeps in
 * pp_magic; netmem from devmem never reaches here (unreadable is refused).
 */
static void ppc_pp_frag_ref(struct skb_shared_info *shinfo)
{
	struct page *head;
	int i;

	for (i = 0; i < shinfo->nr_frags; i++) {
		head = compound_head(skb_frag_page(&shinfo->frags[i]));
		if (likely(page_pool_page_is_pp(head))) {
			page_pool_ref_page(head);
			ppc_count(CO_PP_FRAG_REFS);
		} else {
			page_ref_inc(head);
		}
	}
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
	struct skb_shared_info *to_shinfo, *from_shinfo;
	int i, delta, len = from->len;
	bool from_cloned;

	*fragstolen = false;

	if (skb_cloned(to))
		return ppc_refuse(PPC_C_CO_R_TO_CLONED);

	/* Read once: every later decision uses this value. */
	from_cloned = skb_cloned(from);
	if (from->pp_recycle) {
		ppc_count(CO_PP_FROM);
		if (from_cloned)
			ppc_count(CO_PP_CLONED_FROM);
	}

	/* Never mix page-pool and other pages in one skb. */
	if (to->pp_recycle != from->pp_recycle)
		return ppc_refuse(PPC_C_CO_R_PP_MISMATCH);
#ifndef PPC_HAVE_PP_REF_COUNT
	/* 6.1: a cloned page-pool from is refused, even for the copy. */
	if (from->pp_recycle && from_cloned)
		return ppc_refuse(PPC_C_CO_R_PP_CLONED);
#endif
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
	} else {
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
 * the call and its outcome, and leaves through ppc_leave() so that unload
 * can drain it.
 *
 * Return: true when @from was merged into @to.
 */
bool ppc_skb_try_coalesce(struct sk_buff *to, struct sk_buff *from,
			  bool *fragstolen, int *delta_truesize)
{
	bool ret;

	ppc_count(CO_CALLS);
	ret = ppc_coalesce(to, from, fragstolen, delta_truesize);
	ppc_leave(COALESCE);
	return ret;
}
