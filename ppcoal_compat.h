/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ppcoal: names and helpers that differ between kernel families, chosen
 * by the feature flags in the generated ppcoal_kcompat.h.
 */
#ifndef _PPCOAL_COMPAT_H
#define _PPCOAL_COMPAT_H

#include "ppcoal_kcompat.h"

#ifdef PPC_HAVE_NAPI_PP_PUT_PAGE
#define PPC_RECYCLE_TARGET "napi_pp_put_page"
#else
#define PPC_RECYCLE_TARGET "page_pool_return_skb_page"
#endif

#ifdef PPC_HAVE_PP_REF_COUNT
#define PPC_COALESCE_ON_MEANS "upstream: this kernel coalesces clones itself (clone_policy=legacy refuses them)"
#else
#define PPC_COALESCE_ON_MEANS "optimised: cloned page-pool skbs coalesce (see clone_policy)"
#endif

#ifdef PPC_HAVE_NAPI_ALLOC_SKB_FN
#define PPC_NAPI_ALLOC_TARGET "napi_alloc_skb"
#else
#define PPC_NAPI_ALLOC_TARGET "__napi_alloc_skb"
#endif

#ifdef PPC_HAVE_SKB_ADD_RX_FRAG_NETMEM
#define PPC_RX_FRAG_TARGET "skb_add_rx_frag_netmem"
#else
#define PPC_RX_FRAG_TARGET "skb_add_rx_frag"
#endif

#ifdef PPC_HAVE_FREGS_SET_IP
#define ppc_fregs_set_ip(fregs, ip) ftrace_regs_set_instruction_pointer(fregs, ip)
#else
#define ppc_fregs_set_ip(fregs, ip) ftrace_instruction_pointer_set(fregs, ip)
#endif

/* ftrace direct calls: 6.1's ops-based API carries the _multi names. */
#ifdef PPC_HAVE_FTRACE_DIRECT_MULTI
#define ppc_register_direct(ops, addr) register_ftrace_direct_multi(ops, addr)
#define ppc_unregister_direct(ops, addr) \
	unregister_ftrace_direct_multi(ops, addr)
#else
#define ppc_register_direct(ops, addr) register_ftrace_direct(ops, addr)
#define ppc_unregister_direct(ops, addr) \
	unregister_ftrace_direct(ops, addr, false)
#endif

/* First argument of a traced function, in an ftrace callback. */
#ifdef PPC_HAVE_FREGS_GET_ARGUMENT
#define ppc_fregs_arg0(fregs) ftrace_regs_get_argument(fregs, 0)
#else
#define ppc_fregs_arg0(fregs) regs_get_kernel_argument(&(fregs)->regs, 0)
#endif

/* 6.12's page allocator of the pool: renamed by a later 6.12 stable. */
#ifdef PPC_HAVE_PAGE_POOL_ALLOC_NETMEMS
#define PPC_PP_ALLOC_NETMEM_TARGET "page_pool_alloc_netmems"
#else
#define PPC_PP_ALLOC_NETMEM_TARGET "page_pool_alloc_netmem"
#endif

#ifdef PPC_HAVE_NAPI_PP_PUT_PAGE
#define PPC_RECYCLE_ON_MEANS "optimised: pools without page_pool_params.napi recycle directly inside their owner NAPI's poll (pools with it: upstream)"
#else
#define PPC_RECYCLE_ON_MEANS "optimised: pages freed inside their pool's owner NAPI poll go to the lockless cache"
#endif

#ifdef PPC_HAVE_PAGE_POOL_HELPERS_H
#include <net/page_pool/helpers.h>
#else
#include <net/page_pool.h>
#endif

#ifdef PPC_HAVE_SKBUFF_REF_H
#include <linux/skbuff_ref.h>
#endif

#ifdef PPC_HAVE_NAPI_PP_PUT_PAGE
/*
 * 6.12's netmem_is_pp() (net/core/netmem_priv.h:23, private to net/core):
 * pp_magic of a page or net_iov, the DMA index bits Debian 6.12 keeps
 * there and the low marks masked (PP_MAGIC_MASK, include/linux/mm.h:4293).
 */
static __always_inline bool ppc_netmem_is_pp(netmem_ref netmem)
{
	return (READ_ONCE(__netmem_clear_lsb(netmem)->pp_magic) &
		PP_MAGIC_MASK) == PP_SIGNATURE;
}
#endif

#endif /* _PPCOAL_COMPAT_H */
