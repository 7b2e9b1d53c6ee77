/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ppcoal tables: modes, paths and hook targets, each declared once here.
 * No include guard on purpose: every consumer defines the row macro it
 * wants (PPC_MODE, PPC_PATH or PPC_HOOK), includes this file, and
 * undefines the macro again (the include/linux/bpf_types.h pattern).
 */

#ifdef PPC_MODE
/* PPC_MODE(id, word): the words the mode parameters accept */
PPC_MODE(OFF, off)
PPC_MODE(OBSERVE, observe)
PPC_MODE(ON, on)
#endif

#ifdef PPC_PATH
/*
 * PPC_PATH(id, name, on_means, description): on_means says what "on" does
 * beyond "observe" on this kernel family; stats print it.
 */
PPC_PATH(COALESCE, coalesce, PPC_COALESCE_ON_MEANS, "shadow skb_try_coalesce")
PPC_PATH(RECYCLE, recycle, "observe (optimisation not built yet)",
	 "shadow page-pool free of skb pages")
PPC_PATH(VIRTIO, virtio, "optimised: build_skb becomes napi_build_skb",
	 "virtio_net receive path: build_skb becomes napi_build_skb")
#endif

#ifdef PPC_HOOK
/*
 * PPC_HOOK(id, path, module, symbol, replacement, callback, ipmodify):
 * module is NULL for vmlinux. replacement is the shadow the ftrace callback
 * redirects to (livepatch style); callback is a counting ftrace callback
 * used when there is no replacement. ipmodify: the hook may change the
 * instruction pointer (FTRACE_OPS_FL_IPMODIFY: one such user per function,
 * so it conflicts with a livepatch on the same function).
 */
PPC_HOOK(COALESCE, COALESCE, NULL, "skb_try_coalesce",
	 ppc_skb_try_coalesce, NULL, true)
PPC_HOOK(RECYCLE, RECYCLE, NULL, PPC_RECYCLE_TARGET,
	 ppc_recycle_put, NULL, true)
PPC_HOOK(PAGE_TO_SKB, VIRTIO, "virtio_net", "page_to_skb",
	 NULL, ppc_virtio_page_to_skb_cb, false)
PPC_HOOK(BUILD_SKB, VIRTIO, NULL, "build_skb",
	 NULL, ppc_virtio_build_skb_cb, true)
PPC_HOOK(NAPI_ALLOC, VIRTIO, NULL, PPC_NAPI_ALLOC_TARGET,
	 NULL, ppc_virtio_alloc_cb, false)
PPC_HOOK(RX_FRAG, VIRTIO, NULL, PPC_RX_FRAG_TARGET,
	 NULL, ppc_virtio_rx_frag_cb, false)
#endif
