/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ppcoal counter table: the one place where counters are declared.
 *
 * PPC_COUNTER(id, path, name, help): the debugfs line is
 * "<path>.<name> <value>"; the README table and the guest tests' list of
 * names are generated from this file by scripts/ppcoal-doc. No include
 * guard on purpose: consumers define PPC_COUNTER, include, undefine.
 */

#ifdef PPC_COUNTER
PPC_COUNTER(CO_CALLS, coalesce, calls,
	    "skb_try_coalesce calls run by the shadow")
PPC_COUNTER(CO_PP_FROM, coalesce, pp_from,
	    "calls whose from skb is a page-pool skb (pp_recycle)")
PPC_COUNTER(CO_PP_CLONED_FROM, coalesce, pp_cloned_from,
	    "calls whose from skb is a cloned page-pool skb")
PPC_COUNTER(CO_R_TO_CLONED, coalesce, refused_to_cloned,
	    "refused: to is cloned")
PPC_COUNTER(CO_R_PP_MISMATCH, coalesce, refused_pp_mismatch,
	    "refused: to and from differ in pp_recycle")
PPC_COUNTER(CO_R_PP_CLONED, coalesce, refused_pp_cloned,
	    "refused: from is a cloned page-pool skb (stock 6.1 rule)")
PPC_COUNTER(CO_R_UNREADABLE, coalesce, refused_unreadable,
	    "refused: frags readability differs (6.12 devmem)")
PPC_COUNTER(CO_R_FRAG_LIST, coalesce, refused_frag_list,
	    "refused: to or from has a frag_list")
PPC_COUNTER(CO_R_ZCOPY, coalesce, refused_zcopy,
	    "refused: to or from carries zerocopy frags")
PPC_COUNTER(CO_R_TOO_MANY_FRAGS, coalesce, refused_too_many_frags,
	    "refused: the frags would not fit in MAX_SKB_FRAGS")
PPC_COUNTER(CO_R_HEAD_LOCKED, coalesce, refused_head_locked,
	    "refused: from has linear data whose head cannot be stolen")
PPC_COUNTER(CO_COPIED, coalesce, copied,
	    "coalesced by copying from into the tailroom of to")
PPC_COUNTER(CO_HEAD_STOLEN, coalesce, head_stolen,
	    "coalesced by turning the head of from into a frag of to")
PPC_COUNTER(CO_FRAGS_MOVED, coalesce, frags_moved,
	    "coalesced by moving the frags of a frag-only from")
PPC_COUNTER(CO_R_CLONE_POLICY, coalesce, refused_clone_policy,
	    "refused: cloned page-pool from on a one-buffer-per-page pool, clone_policy=refuse")
PPC_COUNTER(CO_R_FRAG_BIAS, coalesce, refused_frag_bias,
	    "refused: pp_frag_count at LONG_MAX (the pool is still carving the page)")
PPC_COUNTER(CO_CLONE_COPIED, coalesce, clone_copied,
	    "of copied: from was a cloned page-pool skb (6.1 stock refuses it, 6.12 copies it)")
PPC_COUNTER(CO_CLONE_MOVED, coalesce, clone_moved,
	    "of frags_moved: from was a cloned page-pool skb (6.1, coalesce=on)")
PPC_COUNTER(CO_ON_FRAG_REFS, coalesce, clone_frag_refs,
	    "pp_frag_count references taken for a cloned from (6.1 FRAG pools)")
PPC_COUNTER(CO_ON_DETACHED, coalesce, clone_detached,
	    "pages detached from their pool to coalesce a clone (6.1, clone_policy=detach)")
PPC_COUNTER(CO_PP_FRAG_REFS, coalesce, pp_frag_refs,
	    "page-pool fragment references taken for a cloned from (6.12)")
PPC_COUNTER(RC_CALLS, recycle, calls,
	    "skb page frees run by the shadow (page_pool_return_skb_page / napi_pp_put_page)")
PPC_COUNTER(RC_NOT_PP, recycle, not_pp,
	    "page is not a page-pool page: the caller frees it normally")
PPC_COUNTER(RC_RING, recycle, ring,
	    "page put back through the ptr_ring (allow_direct=false, no NAPI-local rule)")
PPC_COUNTER(RC_DIRECT, recycle, direct,
	    "page put back directly by ppcoal, inside its pool's owner NAPI poll")
PPC_COUNTER(RC_UPSTREAM_DIRECT, recycle, upstream_direct,
	    "page put back directly by the kernel's own NAPI-local rule (6.12, pp .napi)")
PPC_COUNTER(RC_DENY_NOT_SOFTIRQ, recycle, deny_not_softirq,
	    "on: of ring, not direct: the free ran outside softirq (process, hardirq) or irqs off")
PPC_COUNTER(RC_DENY_UNKNOWN, recycle, deny_owner_unknown,
	    "on: of ring, not direct: no owner NAPI known for the pool (yet, or another device's)")
PPC_COUNTER(RC_DENY_ELSEWHERE, recycle, deny_owner_elsewhere,
	    "on: of ring, not direct: this CPU is not in a marked poll of the pool owner NAPI")
PPC_COUNTER(RC_DENY_SHARED, recycle, deny_pool_shared,
	    "on: of ring, not direct because the pool allocates from more than one NAPI")
PPC_COUNTER(RC_DENY_NEVER, recycle, deny_not_eligible,
	    "on: of ring, the pool is not ppcoal's (driver not audited, or placed or withdrawn)")
PPC_COUNTER(RC_POLLS, recycle, napi_polls,
	    "on: NAPI polls marked (by the audited polls' wrapper or the tracker)")
PPC_COUNTER(RC_LEARNED, recycle, owners_learned,
	    "on: pool owners learned (a pool allocated inside a NAPI poll)")
PPC_COUNTER(RC_SHARED, recycle, pools_shared,
	    "on: pools seen allocating from a second NAPI, never recycled directly again")
PPC_COUNTER(RC_NEVER, recycle, pools_not_eligible,
	    "on: pools found not ppcoal's (driver not audited, pool placed or withdrawn)")
PPC_COUNTER(RC_FORGOT_DESTROY, recycle, owners_forgotten_destroy,
	    "on: owner entries dropped because page_pool_destroy ran")
PPC_COUNTER(RC_FORGOT_NAPI, recycle, owners_forgotten_napi_del,
	    "on: owner entries dropped because their NAPI was deleted")
PPC_COUNTER(RC_TABLE_FULL, recycle, owner_table_full,
	    "on: a pool could not be tracked, its table bucket was full (it stays on the ring)")
PPC_COUNTER(RC_LEARN_ARMS, recycle, learn_armed,
	    "on: times the allocation probe was armed to learn unknown owners")
PPC_COUNTER(VI_PTSKB_CALLS, virtio, page_to_skb_calls,
	    "virtio_net page_to_skb calls")
PPC_COUNTER(VI_PTSKB_BUILD, virtio, page_to_skb_build,
	    "page_to_skb built the skb in place around the buffer")
PPC_COUNTER(VI_PTSKB_ALLOC, virtio, page_to_skb_copy,
	    "observe: page_to_skb allocated a small skb and copied the headers")
PPC_COUNTER(VI_PTSKB_FRAGS, virtio, page_to_skb_frags,
	    "observe: of page_to_skb_copy, the payload stayed in page frags")
PPC_COUNTER(VI_RX_BUILD_SKB, virtio, rx_build_skb,
	    "build_skb calls from the virtio_net receive path")
PPC_COUNTER(VI_SUBST, virtio, napi_build_skb,
	    "of rx_build_skb: replaced by napi_build_skb (per-CPU NAPI skb cache)")
PPC_COUNTER(VI_SUBST_NOT_SOFTIRQ, virtio, declined_not_softirq,
	    "of rx_build_skb: not replaced, not in softirq context")
PPC_COUNTER(VI_OTHER_BUILD_SKB, virtio, other_build_skb,
	    "build_skb calls from elsewhere, passed through untouched")
#endif
