/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ppcoal tables: modes, paths and hook targets, each declared once here.
 * No include guard on purpose: every consumer defines the row macro it
 * wants (PPC_MODE, PPC_PATH, PPC_HOOK or PPC_TRACEPOINT), includes this
 * file, and undefines the macro again (the include/linux/bpf_types.h
 * pattern).
 */

#ifdef PPC_MODE
/* PPC_MODE(id, word): the words the mode parameters accept */
PPC_MODE(OFF, off)
PPC_MODE(OBSERVE, observe)
PPC_MODE(ON, on)
#endif

#ifdef PPC_PATH
/*
 * PPC_PATH(id, name, on_means, description, default, resolve, forget,
 *	    set_on):
 * on_means says what "on" does beyond "observe" on this kernel family;
 * stats print it. default: the mode (a word) the path has at load unless
 * a parameter sets it; recycle's is off because its hook costs more guest
 * instructions per packet than direct recycling saves, on both kernel
 * families (docs/benchmarks.md "recycle path"). The operations a path
 * adds to the engine (NULL: none): resolve() after its hooks resolved
 * and before they attach (0, -ENOENT when its module is gone, or -errno),
 * forget() after they are removed, set_on(on) before "on" is entered (may
 * fail) and after it is left.
 */
PPC_PATH(COALESCE, coalesce, PPC_COALESCE_ON_MEANS, "shadow skb_try_coalesce",
	 on, NULL, NULL, NULL)
PPC_PATH(RECYCLE, recycle, PPC_RECYCLE_ON_MEANS,
	 "shadow page-pool free of skb pages", off, NULL, NULL,
	 ppc_recycle_set_on)
PPC_PATH(VIRTIO, virtio, "optimised: build_skb becomes napi_build_skb",
	 "virtio_net receive path: build_skb becomes napi_build_skb",
	 on, ppc_virtio_resolve, ppc_virtio_forget, NULL)
#endif

#ifdef PPC_AUDITED
/*
 * PPC_AUDITED(module, poll, own, audit): drivers whose page pools recycle=on
 * may put pages straight into, because a reading of their source shows
 * that (1) they allocate from a pool only inside their NAPI poll or while
 * that NAPI is disabled, (2) they destroy a pool only after napi_disable(),
 * and (3) their ->poll() frees no pool page after napi_complete_done().
 * The driver of a pool is the module holding the ->poll() of the NAPI
 * that polls while the pool allocates, and that ->poll() must be the
 * function the audit read: a NAPI of the same module polled by another
 * function (another code path: its pools may be filled elsewhere) is not
 * eligible. own: how a pool is told to be that NAPI's queue's
 * (ppcoal_owner.c): dev, by the device the pool was created for (the
 * netdev's, or its parent); dev_rx, the same for a pool made to receive
 * only (stmmac's pools made for XDP are not: another NAPI puts into
 * them); a driver whose pools name no device gets a rule of its own,
 * which reads the pool from the NAPI's queue (mana_rxq).
 * audit: the lines it rests on (the README's "Direct recycling"
 * says what each shows). A row is used only on the Debian versions whose
 * functions its audit read are verified (verified-functions.tsv's
 * audit_MODULE rows; ppc_verify_audit()): a changed driver turns off that
 * driver's row alone.
 */
#ifdef PPC_TEST_ROWS
/*
 * The test fixture: only in a build with the test modules (Kbuild), and
 * pinned to no kernel (its code is the suite's own).
 */
PPC_AUDITED_TEST(ppcoal_fixture, ppf_poll, fixture,
		 "tests/modules/ppcoal_fixture.c: ppf_pool_buf, ppf_poll, ppf_destroy_pair")
#endif
#ifdef PPC_HAVE_NAPI_PP_PUT_PAGE
/* 6.12 family only: 6.1's veth creates no page pool */
PPC_AUDITED(veth, veth_poll, dev,
	    "6.12 drivers/net/veth.c:761,812,940,965-1011,1090-1104")
/*
 * vmxnet3 (6.12: its pools serve only with an XDP program attached,
 * vmxnet3_drv.c:2165-2167, 678): each RX queue's NAPI in MSI-X mode
 * (vmxnet3_poll_rx_only(), its own queue, 2390-2391), or rq[0]'s for the
 * single RX queue INTx/MSI force (vmxnet3_poll(); 2625, 2630, 3894, 3901;
 * probe 4252-4262). Allocations in the poll (vmxnet3_xdp.c:345, 417) or
 * in vmxnet3_rq_init() before napi_enable() (2195-2204, 3167, 3223);
 * pools destroyed in vmxnet3_rq_cleanup() (2067) after napi_disable()
 * (quiesce 3266-3272; resume 4557 after suspend's 4425; XDP set-up, ring
 * resize, MTU change, reset and close quiesce first, vmxnet3_xdp.c:66,
 * vmxnet3_ethtool.c:781, 3646, 3949, 3597); napi_complete_done() last
 * in both polls (2376-2377, 2407-2408). The driver's own cache puts:
 * in the owning queue's poll (vmxnet3_xdp.c:282-320), or in
 * vmxnet3_rq_cleanup() (2039) with every NAPI disabled. XDP_TX frames,
 * sent on a queue chosen by CPU (vmxnet3_xdp.c:19-34), complete in
 * another poll or in hardirq through xdp_return_frame_bulk() (415, 488),
 * which puts into the ring for a pool without .napi (net/core/xdp.c:511,
 * page_pool.c:953-960). Lines of 6.12.118 (6.12.95: -10 after 1553);
 * every function named here is pinned (verified-functions.tsv).
 */
PPC_AUDITED(vmxnet3, vmxnet3_poll_rx_only, dev,
	    "6.12 vmxnet3_drv.c:678,2067,2195-2204,2404-2408,3223,3266-3272 xdp.c:345,417")
PPC_AUDITED(vmxnet3, vmxnet3_poll, dev,
	    "6.12 vmxnet3_drv.c:678,2067,2195-2204,2360-2377,3223,3266-3272 xdp.c:345,417")
/*
 * stmmac (6.12): a pool per RX queue, of the parent device, without .napi
 * (stmmac_main.c:2025-2043). Only pools made without an XDP program,
 * DMA_FROM_DEVICE (2024, 2039), are eligible (rule dev_rx): XDP_TX
 * completions put an XDP pool's pages directly from the TX NAPI of the
 * queue the CPU picks (2721; 5038-5047, 5065), and a program comes or
 * goes only with every NAPI disabled and the pools made anew
 * (stmmac_xdp.c:123-135; 6970, 6982, 7007, 7085). Allocations in the
 * queue's own stmmac_napi_poll_rx() (4849, 4855 <- 5759 <- 5787), in
 * netpoll's budget-0 poll (interrupts off: ppcoal neither learns nor puts
 * there), or before any poll can reach the pool (3871-3878; an MTU
 * change fills new pools at 5955 and swaps them in with the NAPIs off,
 * 5962, 3933; 7014; XSK 6866-6872 only with XDP on); destroyed (1947)
 * only after napi_disable() (4018, 6970, stmmac_xdp.c:37-39, 75-76); the
 * driver's own direct puts in that poll (5576, 5687); napi_complete_done()
 * last (5788-5793). Pool pages reach skbs only as split-header payload
 * (sec_page) or the further buffers of a frame (5688-5710): the first is
 * copied and recycled by the driver. Lines of 6.12.118 (6.12.95: +14
 * for 1204-2524, +12 for 2571-3371, -4 for 3447-4089, -74 for 4803-4930,
 * -88 for 4952-7194, -89 from 7196); every function named is pinned, and
 * stmmac_xdp_is_enabled() (stmmac.h), the test behind 2024. Not tested on
 * hardware (QEMU has no stmmac): read twice; the fixture's xdp_tx=1 tests
 * the rule.
 */
PPC_AUDITED(stmmac, stmmac_napi_poll_rx, dev_rx,
	    "6.12 stmmac_main.c:1947,2039,2721,4018,4849-4855,5787-5793,5955-5962,6970-7085")
#else
/*
 * bnxt_en on 6.1, P5 chips only (bnxt_init_napi(): bnxt_poll_p5 with
 * MSI-X; older chips and INTx poll with bnxt_poll, not audited, whose
 * rings bnxt_rx_ring_reset() refills from bnxt_sp_task() while the NAPI
 * runs, bnxt.c:11857-11863, reached only through the non-P5 branch of
 * bnxt_sched_reset_rxr(), 319-322). A pool per RX ring, of the PCI device
 * (3284), drawn from only in page mode, with XDP attached (808, 880;
 * bnxt_xdp.c:424). Allocations in the poll (1025, 1059, 1171;
 * bnxt_xdp.c:304) or from bnxt_init_rx_rings() before bnxt_enable_napi()
 * (3714, 3728; __bnxt_open_nic() 10582, 10588). RX ring i and, with XDP
 * (combined channels, bnxt_xdp.c:400-405), its XDP_TX ring share bnapi i
 * (4662-4663, 4678-4679), whose poll puts XDP_TX completions directly
 * (bnxt_xdp.c:159 from 2641). The driver's other direct puts run in the
 * allocating context (771, on a DMA mapping error), in the poll (1035,
 * 1073; bnxt_xdp.c:212, 313), or in process context with the NAPI
 * disabled, where 6.1's page_pool falls back to the ring (3020, 3047).
 * Netpoll calls the poll with budget 0, interrupts off and not through
 * __napi_poll(): never a direct put of ppcoal's. Pools destroyed in
 * bnxt_free_rx_rings() (3261 through xdp_rxq_info_unreg(), 3263) from
 * __bnxt_close_nic() after bnxt_disable_napi() (10782, 10795), which XDP
 * set-up, MTU, ring and channel changes, resets and error recovery go
 * through. napi_complete_done() after every free of the poll (2854-2856).
 * Lines of 6.1.192; the functions the argument rests on are pinned
 * (verified-functions.tsv), though a new caller in a function not pinned
 * would not be seen. Not tested on hardware (QEMU has no bnxt): the audit
 * was read twice, independently.
 */
PPC_AUDITED(bnxt_en, bnxt_poll_p5, dev,
	    "6.1 bnxt.c:319-322,1025,1059,1171,2641,2854-2856,3261,3714,10582-10795 xdp.c:159,304")
/*
 * mana on 6.1 (Azure): a pool per RX queue, created without a device
 * (mana_en.c:2164-2182), so the device rule cannot place it: the rule
 * mana_rxq reads the pool of the RX queue whose completion queue embeds
 * the polling NAPI (include/net/mana/mana.h:265-292; cq->type and cq->rxq
 * set at 2239-2240 before the NAPI exists, 2288). TX queues' CQs run
 * mana_poll() too (2001) but have no rxq (1949-1951): their NAPI owns no
 * pool. Allocations only in mana_poll() (1625 from mana_refill_rx_oob()
 * 1656 <- mana_process_rx_cqe() 1737 <- mana_cq_handler() 1797) or
 * before napi_enable() (mana_alloc_rx_wqe() 2221, 2295); the driver's
 * one direct put in its poll (1599); napi_disable() before
 * page_pool_destroy() (2033, 2065); napi_complete_done() last (1807).
 * 6.12's mana names that same NAPI as the pool's (page_pool_params.napi,
 * 6.12.117 mana_en.c:2184): the kernel then recycles directly itself.
 * Lines of 6.1.192; not tested on hardware: the fixture's pools without
 * a device test the rule. Listed on every 6.1 kernel, as the others (on
 * one built without mana no NAPI ever runs mana_poll()).
 */
PPC_AUDITED(mana, mana_poll, mana_rxq,
	    "6.1 mana_en.c:1599,1625,1807,2033,2065,2164-2182,2221,2239-2240,2295")
#endif
#endif

#ifdef PPC_TRACEPOINT
/*
 * PPC_TRACEPOINT(id, path, arm, name, reg, unreg): a probe on an exported
 * tracepoint; reg() registers it (0 or -errno), unreg() removes it and
 * waits until no CPU runs it. Tracepoints and hooks form one sequence, this
 * block first: the hooks of one arm go live in table order and are removed
 * in reverse, so the end of a NAPI poll is watched before any poll is
 * marked as begun (POLL_ENTER) and until no poll can be.
 */
PPC_TRACEPOINT(POLL_DONE, RECYCLE, TRACK, "napi:napi_poll",
	       ppc_owner_tp_register, ppc_owner_tp_unregister)
#endif

#ifdef PPC_HOOK
/*
 * PPC_REDIRECT(id, path, arm, module, symbol, replacement, alt) and
 * PPC_HOOK(id, path, arm, module, symbol, callback, tramp, ipmodify, alt), one
 * sequence (a consumer defines both): arm says when the hook is live: PATH
 * while the path is not off, ON only while it is on, OBSERVE only while
 * it is observe (and attached), LEARN only while
 * ppcoal_owner.c learns pool owners (on demand), TRACK while it marks
 * every NAPI poll (on demand, where its poll wrappers cannot serve).
 * module is NULL for
 * vmlinux. A redirect enters replacement, a shadow with the target's
 * signature, instead of the target (livepatch style, FTRACE_OPS_FL_IPMODIFY:
 * one such user per function, so it conflicts with a livepatch of it),
 * through an ftrace callback or, with direct_calls=1, through a trampoline
 * the patched call site calls itself. A hook's callback is a counting
 * ftrace callback; tramp: NULL, or the trampoline (PPC_HOOK_TRAMPOLINE)
 * that direct_calls=1 has the call site call instead, which does the
 * callback's work; ipmodify: it may change the instruction pointer. alt:
 * one of alternatives (functions that may be inlined or renamed): a
 * missing one is skipped, one of its arm must attach.
 */
PPC_REDIRECT(COALESCE, COALESCE, PATH, NULL, "skb_try_coalesce",
	     ppc_skb_try_coalesce, false)
PPC_REDIRECT(RECYCLE, RECYCLE, PATH, NULL, PPC_RECYCLE_TARGET,
	     ppc_recycle_put, false)
PPC_HOOK(POLL_ENTER, RECYCLE, TRACK, NULL, "__napi_poll",
	 ppc_owner_poll_cb, NULL, false, false)
PPC_HOOK(POOL_DESTROY, RECYCLE, ON, NULL, "page_pool_destroy",
	 ppc_owner_pool_destroy_cb, NULL, false, false)
PPC_HOOK(NAPI_DEL, RECYCLE, ON, NULL, "__netif_napi_del",
	 ppc_owner_napi_del_cb, NULL, false, false)
#ifdef PPC_HAVE_PP_DISABLE_DIRECT
PPC_HOOK(PP_DISABLE, RECYCLE, ON, NULL, "page_pool_disable_direct_recycling",
	 ppc_owner_pp_disable_cb, NULL, false, false)
#endif
PPC_HOOK(LEARN_ALLOC, RECYCLE, LEARN, NULL, "page_pool_alloc_pages",
	 ppc_owner_alloc_cb, NULL, false, true)
#ifdef PPC_HAVE_NAPI_PP_PUT_PAGE
PPC_HOOK(LEARN_NETMEMS, RECYCLE, LEARN, NULL, PPC_PP_ALLOC_NETMEM_TARGET,
	 ppc_owner_alloc_cb, NULL, false, true)
PPC_HOOK(LEARN_FRAG, RECYCLE, LEARN, NULL, "page_pool_alloc_frag_netmem",
	 ppc_owner_alloc_cb, NULL, false, true)
#else
PPC_HOOK(LEARN_FRAG, RECYCLE, LEARN, NULL, "page_pool_alloc_frag",
	 ppc_owner_alloc_cb, NULL, false, true)
#endif
PPC_HOOK(PAGE_TO_SKB, VIRTIO, PATH, "virtio_net", "page_to_skb",
	 ppc_virtio_page_to_skb_cb, NULL, false, false)
PPC_HOOK(BUILD_SKB, VIRTIO, PATH, NULL, "build_skb",
	 ppc_virtio_build_skb_cb, ppc_virtio_build_skb_tramp, true, false)
/* every driver's receive path calls these two: counted in observe alone */
PPC_HOOK(NAPI_ALLOC, VIRTIO, OBSERVE, NULL, PPC_NAPI_ALLOC_TARGET,
	 ppc_virtio_alloc_cb, NULL, false, false)
PPC_HOOK(RX_FRAG, VIRTIO, OBSERVE, NULL, PPC_RX_FRAG_TARGET,
	 ppc_virtio_rx_frag_cb, NULL, false, false)
#endif
