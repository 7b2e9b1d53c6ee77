// SPDX-License-Identifier: GPL-2.0
/*
 * ppcoal_fixture: a page-pool traffic source for the ppcoal test suite.
 *
 * Two virtual Ethernet devices, ppf0 and ppf1. A frame sent on one is
 * received by the other the way a page-pool NIC driver receives it: the
 * receiving device's NAPI poll copies the frame into buffers from its own
 * page_pool (created with the device, destroyed with it), builds an skb
 * marked for page-pool recycling and hands it to napi_gro_receive().
 *
 * Parameters (read when the pair is created; write 1 to "recreate" to
 * apply new values):
 *   frag_pool  6.1: PP_FLAG_PAGE_FRAG pool, two 2 KiB buffers per page (as
 *              hns3); 0: one buffer per page, as every Debian 6.1 amd64
 *              driver. 6.12 has one pool kind (pp_ref_count): 1 there
 *              means two buffers per page through page_pool_alloc_frag().
 *   linear     1: build the skb in place around the buffer (build_skb);
 *              0: headers in a small linear part, payload in a page frag.
 *   pp_napi    6.12: set page_pool_params.napi (upstream direct recycling).
 *   gro        1: napi_gro_receive(), 0: netif_receive_skb().
 *   irq_usecs  0: a NAPI poll per frame sent (what a sender on the same
 *              CPU gets); N: interrupt moderation as a NIC does it: the
 *              poll is scheduled after N microseconds, or at once when
 *              irq_frames frames wait (a NIC's rx-usecs and rx-frames).
 *   irq_frames with irq_usecs: 1..64 (default 64, a NAPI weight; others
 *              clamped). The frame that fills the batch schedules the poll
 *              and cancels the timer. A flood from one process-context
 *              sender faster than irq_frames in irq_usecs then gets polls
 *              of about irq_frames frames, however fast the guest runs:
 *              the poll runs when that frame's transmit enables bottom
 *              halves again. (Senders on other CPUs can add frames before
 *              it runs, up to 64; a poll the timer fires takes fewer.)
 *
 * /sys/kernel/debug/ppcoal_fixture/pools shows, per device, the pool's
 * pages held and released, cached, in its ring, and in flight (in skbs),
 * the pool pages its poll passed up (rxpages) and the puts into its pools
 * that asked for the lockless cache (directputs, -1 without the kernel's
 * page_pool statistics); .../teardown keeps the verdict of every pool teardown: "drained" or
 * "LEAK"; .../stack, written, has the next poll of ppf_poll() walk its
 * own stack, and then shows the frames and the unwinder's verdict.
 * Test-only code: it reads page_pool internals to count.
 *
 *   extra_pools N more pools for ppf1 (0..1024), used in turn with its own
 *              by ppf1's poll: many pools owned by one NAPI, to load
 *              ppcoal's owner table. Drained and destroyed with the pair
 *              ("extra pools drained" or "pool LEAK" in dmesg).
 *   foreign_extra 1: the extra pools are created for ppf0's device (not
 *              with dma=1): pools of another device that ppf1's poll
 *              allocates from, as a second driver's would be; never
 *              ppf1's own.
 *   skip_own   1: ppf1's poll allocates from its extra pools alone, and
 *              its own pool waits (writable at any time).
 *   nodev      1: ppf0's and ppf1's pools, the extra ones too, are made
 *              without a device (page_pool_params.dev), as 6.1's mana
 *              makes its own; ppcoal's test row then knows ppf1's own
 *              pool only as the first field of its private data, and
 *              the extra pools are another queue's (foreign_extra is
 *              then implied). Not with dma=1.
 *
 *   dma        the pools map their pages for DMA (PP_FLAG_DMA_MAP |
 *              PP_FLAG_DMA_SYNC_DEV, from the device) on QEMU's edu PCI
 *              device (-device edu), which the fixture binds as a PCI
 *              driver: behind an IOMMU (-device intel-iommu) every page
 *              gets an IOVA, and with CONFIG_DMA_API_DEBUG the kernel
 *              reports a page unmapped twice, synced after its unmap, or
 *              still mapped when the driver unbinds. The poll does what a
 *              NIC driver does before it reads a received buffer: a sync
 *              for the CPU of the range it fills (the "device" is the
 *              CPU's copy, made after that sync). edu never DMAs itself.
 *
 *   refill     xen-netfront's pattern (drivers/net/xen-netfront.c: a
 *              refill under queue->rx_lock from process context while the
 *              NAPI is enabled, 6.12 lines 374-376, 2490-2492): ppf1's
 *              buffers come from a driver ring of PPF_RING, filled under
 *              a driver lock by its poll and by a work item in process
 *              context every jiffy; the poll delivers its skbs after the
 *              lock, so a direct put in the poll would race the work's
 *              allocation. This NAPI is polled by ppf_poll_ring(), which
 *              the audit of ppf_poll() does not cover: ppcoal must never
 *              put a page of it directly unless told to
 *              (recycle_drivers=ppcoal_fixture: the forced experiment).
 *              Writing to .../reset then does bnxt's queue reset (6.12
 *              bnxt_queue_stop(), bnxt.c:15643): from process context
 *              while the NAPI polls, every ring buffer goes back to the
 *              pool and the ring is filled again (6.12: after
 *              page_pool_disable_direct_recycling(), as bnxt; writing 2
 *              instead of 1 leaves it out and does 32 rounds, the lock
 *              dropped between: the forced experiment, and its control).
 *
 *   xdp_tx     stmmac's pools with an XDP program attached (6.12.118
 *              stmmac_main.c:2039, 2721): ppf1's pools are made
 *              DMA_BIDIRECTIONAL, and one frame in four of ppf1's poll is
 *              "sent back": ppf0's NAPI frees it (txdone in .../pools).
 *              stmmac's transmit NAPI puts such pages into the receive
 *              pool's cache, a second writer; the fixture frees them as
 *              skbs (ppcoal's hook, ppf0's poll: never direct), since its
 *              own direct put from a second NAPI would be the very race.
 *              So it tests ppcoal's rule for such pools (dev_rx: refused
 *              by their direction), not the race. Not with nodev=1.
 *
 * 6.12: writing to .../withdraw calls page_pool_disable_direct_recycling()
 * on ppf1's pool (a driver withdrawing direct recycling from a live pool).
 *
 * To free page-pool skbs in a chosen context, write N to .../hold: ppf1's
 * poll keeps its next N skbs instead of delivering them; writing
 * "process" or "bh" to .../release frees them from the write itself, in
 * process context or with bottom halves disabled outside any NAPI poll.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/etherdevice.h>
#include <linux/hrtimer.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/rtnetlink.h>
#include <linux/seq_file.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <asm/unwind.h>

#include "ppcoal_kcompat.h"
#ifdef PPC_HAVE_PAGE_POOL_HELPERS_H
#include <net/page_pool/helpers.h>
#else
#include <net/page_pool.h>
#endif
#include "ppf_pool_count.h"

#define PPF_BUF 2048		/* buffer size in frag mode */
#define PPF_RXQ_MAX 1024	/* frames waiting for the receiving poll */
#define PPF_HEADROOM (NET_SKB_PAD + NET_IP_ALIGN)
#define PPF_RING 64		/* refill=1: buffers in the driver ring */

static bool frag_pool;
module_param(frag_pool, bool, 0644);
MODULE_PARM_DESC(frag_pool, "two buffers per page (6.1: PP_FLAG_PAGE_FRAG pool)");
static bool linear;
module_param(linear, bool, 0644);
MODULE_PARM_DESC(linear, "build skbs in place (build_skb) instead of header + page frag");
static unsigned int irq_usecs;
module_param(irq_usecs, uint, 0644);
MODULE_PARM_DESC(irq_usecs, "0: poll per frame; N: moderate like a NIC, poll after N us or irq_frames frames");
static unsigned int irq_frames = NAPI_POLL_WEIGHT;
module_param(irq_frames, uint, 0644);
MODULE_PARM_DESC(irq_frames, "with irq_usecs: poll at once when this many frames wait (1..64, clamped; default 64)");
static bool pp_napi;
module_param(pp_napi, bool, 0644);
static unsigned int extra_pools;
module_param(extra_pools, uint, 0444);
#define PPF_EXTRA_MAX 1024
static bool foreign_extra;
module_param(foreign_extra, bool, 0444);
MODULE_PARM_DESC(foreign_extra, "the extra pools are ppf0's device's (not with dma=1)");
static bool skip_own;
module_param(skip_own, bool, 0644);
MODULE_PARM_DESC(skip_own, "ppf1 allocates from its extra pools alone");
MODULE_PARM_DESC(pp_napi, "6.12: register the NAPI with the pool (page_pool_params.napi)");
static bool gro = true;
module_param(gro, bool, 0644);
MODULE_PARM_DESC(gro, "deliver through napi_gro_receive (else netif_receive_skb)");
static bool dma;
module_param(dma, bool, 0644);
MODULE_PARM_DESC(dma, "DMA-mapping pools (PP_FLAG_DMA_MAP | PP_FLAG_DMA_SYNC_DEV) on QEMU's edu PCI device");
static bool nodev;
module_param(nodev, bool, 0444);
MODULE_PARM_DESC(nodev, "the pools of ppf0 and ppf1 are made without a device (page_pool_params.dev), as 6.1's mana makes its own (not with dma=1)");
static bool xdp_tx;
module_param(xdp_tx, bool, 0444);
MODULE_PARM_DESC(xdp_tx, "stmmac's XDP pattern: ppf1's pools DMA_BIDIRECTIONAL, one frame in four completed in ppf0's poll");
static bool refill;
module_param(refill, bool, 0644);
MODULE_PARM_DESC(refill, "xen-netfront's pattern: ppf1's buffers from a ring a work item refills from process context while the NAPI is enabled");

/* A receive buffer of the driver ring (refill=1). */
struct ppf_rbuf {
	struct page *page;
	unsigned int off, size;
};

struct ppf_extra {
	struct page_pool **pool;
	unsigned int n;
};

struct ppf_priv {
	/*
	 * First: ppcoal's test row finds a pool made without a device here
	 * (its rule "fixture", ppcoal_owner.c).
	 */
	struct page_pool *pool;
	struct net_device *peer;
	struct napi_struct napi;
	struct ppf_extra xp;	/* extra_pools more (ppf1) */
	unsigned int next;	/* the pool ppf_buf() uses next (poll only) */
	struct sk_buff_head rxq;
	struct sk_buff_head held;	/* kept by "hold", freed by "release" */
	struct hrtimer irq_timer;	/* irq_usecs: the moderated "interrupt" */
	unsigned int irq_usecs;
	unsigned int irq_frames;
	atomic_t hold;
	bool frag;		/* this pool's kind, fixed at creation */
	bool linear;
	struct device *dma_dev;	/* the pools' DMA device (dma=1), or NULL */
	bool refill;		/* refill=1: the driver ring, ppf_poll_ring() */
	spinlock_t ring_lock;	/* the driver lock: ring, ring_n */
	struct ppf_rbuf ring[PPF_RING];
	unsigned int ring_n;
	struct delayed_work refill_work;
	bool xdp_tx;		/* xdp_tx=1 (ppf1) */
	unsigned int tx_turn;	/* poll only */
	struct sk_buff_head txc;	/* sent back by the peer, to complete */
	atomic_long_t tx_done;	/* completed here, of the peer's pools */
	atomic_long_t rx_packets, rx_bytes, rx_dropped;
	atomic_long_t rx_pages;	/* pool pages this poll passed up */
	atomic_long_t tx_packets, tx_bytes, tx_dropped;
};

static struct net_device *ppf_dev[2];
static struct dentry *ppf_debugfs;
static DEFINE_MUTEX(ppf_lock);	/* pair creation and teardown, ppf_pdev */
static struct pci_dev *ppf_pdev;	/* the bound edu device, for dma=1 */
static char ppf_report[2048];	/* teardown verdicts, newest last */

/* The peer's private data while it is up, else NULL. */
static struct ppf_priv *ppf_peer_up(struct ppf_priv *priv)
{
	struct net_device *peer = READ_ONCE(priv->peer);

	return peer && netif_running(peer) ? netdev_priv(peer) : NULL;
}

static netdev_tx_t ppf_xmit(struct sk_buff *skb, struct net_device *dev)
{
	struct ppf_priv *priv = netdev_priv(dev);
	struct ppf_priv *pp = ppf_peer_up(priv);

	if (!pp || skb_queue_len(&pp->rxq) >= PPF_RXQ_MAX)
		goto drop;
	skb_orphan(skb);
	atomic_long_inc(&priv->tx_packets);
	atomic_long_add(skb->len, &priv->tx_bytes);
	skb_queue_tail(&pp->rxq, skb);
	if (!pp->irq_usecs) {
		napi_schedule(&pp->napi);
	} else if (skb_queue_len(&pp->rxq) >= pp->irq_frames) {
		/* the batch is full: the "interrupt" now, the timer reset */
		hrtimer_try_to_cancel(&pp->irq_timer);
		napi_schedule(&pp->napi);
	} else if (!hrtimer_active(&pp->irq_timer)) {
		hrtimer_start(&pp->irq_timer,
			      ns_to_ktime(pp->irq_usecs * NSEC_PER_USEC),
			      HRTIMER_MODE_REL);
	}
	return NETDEV_TX_OK;
drop:
	atomic_long_inc(&priv->tx_dropped);
	dev_kfree_skb_any(skb);
	return NETDEV_TX_OK;
}

/* One receive buffer from the pool: page and offset, size in *size. */
static struct page *ppf_pool_buf(struct ppf_priv *priv, unsigned int *off,
				 unsigned int *size)
{
	struct page_pool *pool = priv->pool;

	if (priv->xp.n) {
		/* one allocator at a time: the poll, or under ring_lock */
		if (!priv->next && READ_ONCE(skip_own))
			priv->next = 1;
		if (priv->next)
			pool = priv->xp.pool[priv->next - 1];
		priv->next = (priv->next + 1) % (priv->xp.n + 1);
	}
	if (priv->frag) {
		*size = PPF_BUF;
		return page_pool_dev_alloc_frag(pool, off, PPF_BUF);
	}
	*off = 0;
	*size = PAGE_SIZE;
	return page_pool_dev_alloc_pages(pool);
}

/* Fill the driver ring from the pool up to @n buffers. Under ring_lock. */
static void ppf_ring_fill(struct ppf_priv *priv, unsigned int n)
{
	struct ppf_rbuf *r;

	while (priv->ring_n < n) {
		r = &priv->ring[priv->ring_n];
		r->page = ppf_pool_buf(priv, &r->off, &r->size);
		if (!r->page)
			break;
		priv->ring_n++;
	}
}

/* Give every buffer of the driver ring back to the pool. Under ring_lock. */
static void ppf_ring_empty(struct ppf_priv *priv)
{
	struct page *page;

	while (priv->ring_n) {
		page = priv->ring[--priv->ring_n].page;
		page_pool_put_full_page(page->pp, page, false);
	}
}

/* refill=1: the work item, from process context, every jiffy while up */
static void ppf_refill_fn(struct work_struct *work)
{
	struct ppf_priv *priv = container_of(to_delayed_work(work),
					     struct ppf_priv, refill_work);

	spin_lock_bh(&priv->ring_lock);
	ppf_ring_fill(priv, PPF_RING);
	spin_unlock_bh(&priv->ring_lock);
	schedule_delayed_work(&priv->refill_work, 1);
}

/* One receive buffer: from the pool, or (refill=1) from the driver ring. */
static struct page *ppf_buf(struct ppf_priv *priv, unsigned int *off,
			    unsigned int *size)
{
	struct page *page = NULL;
	struct ppf_rbuf *r;

	if (!priv->refill)
		return ppf_pool_buf(priv, off, size);
	spin_lock(&priv->ring_lock);	/* inside the poll: BH are off */
	if (!priv->ring_n)
		ppf_ring_fill(priv, PPF_RING);
	if (priv->ring_n) {
		r = &priv->ring[--priv->ring_n];
		page = r->page;
		*off = r->off;
		*size = r->size;
	}
	spin_unlock(&priv->ring_lock);
	return page;
}

/*
 * Give back a buffer of ppf_buf() unused, inside the poll: into the cache
 * when the pool is the poll's alone, else through the ring (refill=1:
 * the work item may be allocating from the cache on another CPU).
 */
static void ppf_unbuf(struct ppf_priv *priv, struct page *page)
{
	page_pool_put_full_page(page->pp, page, !priv->refill);
}

/*
 * The received bytes at @off..@off+@len of @page become the CPU's, as a
 * NIC driver makes them before reading them (dma_sync_single_range_for_cpu
 * on the pool's mapping: mlx5, bnxt, ...). Here the CPU writes them after.
 */
static void ppf_sync_for_cpu(struct ppf_priv *priv, struct page *page,
			     unsigned int off, unsigned int len)
{
	if (priv->dma_dev)
		dma_sync_single_range_for_cpu(priv->dma_dev,
					      page_pool_get_dma_addr(page),
					      off, len,
					      page_pool_get_dma_dir(page->pp));
}

/*
 * xdp_tx=1: send @skb back to the peer, whose poll completes it
 * (ppf_tx_complete()), as an XDP_TX frame completes in stmmac's transmit
 * NAPI. False when the peer cannot take it.
 */
static bool ppf_send_back(struct ppf_priv *priv, struct sk_buff *skb)
{
	struct ppf_priv *pp = ppf_peer_up(priv);

	if (!pp || skb_queue_len(&pp->txc) >= PPF_RXQ_MAX)
		return false;
	skb_queue_tail(&pp->txc, skb);
	napi_schedule(&pp->napi);
	return true;
}

/* Free what the peer sent back: its pool's pages, in this NAPI's poll. */
static void ppf_tx_complete(struct ppf_priv *priv, int budget)
{
	struct sk_buff *skb;

	while ((skb = skb_dequeue(&priv->txc))) {
		atomic_long_inc(&priv->tx_done);
		napi_consume_skb(skb, budget);
	}
}

static struct sk_buff *ppf_build_linear(struct ppf_priv *priv,
					struct sk_buff *src)
{
	unsigned int off, size, len = src->len;
	struct sk_buff *skb;
	struct page *page;
	void *buf;

	page = ppf_buf(priv, &off, &size);
	if (!page)
		return NULL;
	if (PPF_HEADROOM + len +
	    SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) > size)
		goto put;
	ppf_sync_for_cpu(priv, page, off, PPF_HEADROOM + len);
	buf = page_address(page) + off;
	if (skb_copy_bits(src, 0, buf + PPF_HEADROOM, len))
		goto put;
	/* build_skb, not napi_build_skb: ppcoal's virtio path must leave it. */
	skb = build_skb(buf, size);
	if (!skb)
		goto put;
	skb_reserve(skb, PPF_HEADROOM);
	skb_put(skb, len);
	skb_mark_for_recycle(skb);
	atomic_long_inc(&priv->rx_pages);
	return skb;
put:
	ppf_unbuf(priv, page);
	return NULL;
}

static struct sk_buff *ppf_build_frags(struct ppf_priv *priv,
				       struct sk_buff *src)
{
	unsigned int off, size, hlen, len = src->len;
	struct sk_buff *skb;
	struct page *page;

	/* Only the headers go into the linear part (as hns3, mlx5 ...). */
	hlen = eth_get_headlen(src->dev, src->data, skb_headlen(src));
	hlen = min(hlen, len);
	skb = napi_alloc_skb(&priv->napi, hlen);
	if (!skb)
		return NULL;
	skb_put_data(skb, src->data, hlen);
	if (len > hlen) {
		page = ppf_buf(priv, &off, &size);
		if (!page)
			goto free;
		if (len - hlen > size) {
			ppf_unbuf(priv, page);
			goto free;
		}
		ppf_sync_for_cpu(priv, page, off, len - hlen);
		if (skb_copy_bits(src, hlen, page_address(page) + off,
				  len - hlen)) {
			ppf_unbuf(priv, page);
			goto free;
		}
		skb_add_rx_frag(skb, 0, page, off, len - hlen, size);
		atomic_long_inc(&priv->rx_pages);
	}
	skb_mark_for_recycle(skb);
	return skb;
free:
	kfree_skb(skb);
	return NULL;
}

static enum hrtimer_restart ppf_irq_timer(struct hrtimer *t)
{
	struct ppf_priv *priv = container_of(t, struct ppf_priv, irq_timer);

	napi_schedule(&priv->napi);
	return HRTIMER_NORESTART;
}

static int __ppf_poll(struct napi_struct *napi, int budget)
{
	struct ppf_priv *priv = container_of(napi, struct ppf_priv, napi);
	struct net_device *dev = napi->dev;
	struct sk_buff *src, *skb;
	int done = 0;

	ppf_tx_complete(priv, budget);
	while (done < budget && (src = skb_dequeue(&priv->rxq))) {
		done++;
		if (skb_linearize(src)) {
			skb = NULL;
		} else {
			src->dev = dev;
			skb = priv->linear ? ppf_build_linear(priv, src) :
					     ppf_build_frags(priv, src);
		}
		if (!skb) {
			atomic_long_inc(&priv->rx_dropped);
			napi_consume_skb(src, budget);
			continue;
		}
		atomic_long_inc(&priv->rx_packets);
		atomic_long_add(src->len, &priv->rx_bytes);
		napi_consume_skb(src, budget);
		if (priv->xdp_tx && !(++priv->tx_turn % 4) &&
		    ppf_send_back(priv, skb))
			continue;
		skb->protocol = eth_type_trans(skb, dev);
		skb->ip_summed = CHECKSUM_UNNECESSARY;
		if (atomic_add_unless(&priv->hold, -1, 0)) {
			skb_queue_tail(&priv->held, skb);
			continue;
		}
		if (gro)
			napi_gro_receive(napi, skb);
		else
			netif_receive_skb(skb);
	}
	/*
	 * refill=1: the ring gets back what the poll used before the poll
	 * completes, as xennet_poll() does (6.1 drivers/net/xen-netfront.c:
	 * 1371, then napi_complete_done() at 1376): a poll that used a buffer
	 * allocates inside the poll even when the work item keeps the ring
	 * full between polls.
	 */
	if (priv->refill) {
		spin_lock(&priv->ring_lock);
		ppf_ring_fill(priv, PPF_RING);
		spin_unlock(&priv->ring_lock);
	}
	if (done < budget && napi_complete_done(napi, done) &&
	    (!skb_queue_empty(&priv->rxq) || !skb_queue_empty(&priv->txc)))
		napi_schedule(napi);
	return done;
}

/*
 * "stack": write 1 and the next poll of ppf_poll() walks its own stack
 * with the ORC unwinder, as arch_stack_walk_reliable() does (the exported
 * __unwind_start() and unwind_next_frame(); 6.1.192
 * arch/x86/kernel/stacktrace.c:32-78), and keeps, for the file, each
 * frame's return address and whether the walk met an unwinder error: a
 * poll wrapped by ppcoal (issue 37) must unwind through its trampoline.
 */
static atomic_t ppf_stack_want;
static char ppf_stack[1024];	/* under ppf_stack_lock */
static DEFINE_SPINLOCK(ppf_stack_lock);

static noinline void ppf_stack_walk(void)
{
	struct unwind_state state;
	unsigned long addr;
	int n = 0, len = 0;

	spin_lock(&ppf_stack_lock);
	for (unwind_start(&state, current, NULL, NULL);
	     !unwind_done(&state) && n < 24; unwind_next_frame(&state), n++) {
		addr = unwind_get_return_address(&state);
		if (!addr)
			break;
		len += scnprintf(ppf_stack + len, sizeof(ppf_stack) - len,
				 "frame %pS\n", (void *)addr);
	}
	scnprintf(ppf_stack + len, sizeof(ppf_stack) - len, "error %d\n",
		  unwind_error(&state));
	spin_unlock(&ppf_stack_lock);
}

/* The poll the audit (ppcoal_tables.h) read: the pool is its alone. */
static int ppf_poll(struct napi_struct *napi, int budget)
{
	if (unlikely(atomic_read(&ppf_stack_want)) &&
	    atomic_xchg(&ppf_stack_want, 0))
		ppf_stack_walk();
	return __ppf_poll(napi, budget);
}

/*
 * refill=1: the same poll over the driver ring, filled first and last
 * (__ppf_poll()) under the driver lock, as xen-netfront's poll refills
 * under rx_lock; the work item fills it from process context every
 * jiffy, and a reset empties and fills it: the pool allocates in and
 * outside the poll while it polls.
 */
static int ppf_poll_ring(struct napi_struct *napi, int budget)
{
	struct ppf_priv *priv = container_of(napi, struct ppf_priv, napi);

	spin_lock(&priv->ring_lock);
	ppf_ring_fill(priv, PPF_RING);
	spin_unlock(&priv->ring_lock);
	return __ppf_poll(napi, budget);
}

static int ppf_open(struct net_device *dev)
{
	struct ppf_priv *priv = netdev_priv(dev);

	napi_enable(&priv->napi);
	netif_start_queue(dev);
	if (priv->refill)
		schedule_delayed_work(&priv->refill_work, 1);
	return 0;
}

static int ppf_stop(struct net_device *dev)
{
	struct ppf_priv *priv = netdev_priv(dev);

	netif_stop_queue(dev);
	if (priv->refill)
		cancel_delayed_work_sync(&priv->refill_work);
	hrtimer_cancel(&priv->irq_timer);
	napi_disable(&priv->napi);
	skb_queue_purge(&priv->rxq);
	skb_queue_purge(&priv->txc);
	/* nothing fills the ring any more: its buffers go home */
	spin_lock_bh(&priv->ring_lock);
	ppf_ring_empty(priv);
	spin_unlock_bh(&priv->ring_lock);
	return 0;
}

static void ppf_get_stats64(struct net_device *dev,
			    struct rtnl_link_stats64 *s)
{
	struct ppf_priv *priv = netdev_priv(dev);

	s->rx_packets = atomic_long_read(&priv->rx_packets);
	s->rx_bytes = atomic_long_read(&priv->rx_bytes);
	s->rx_dropped = atomic_long_read(&priv->rx_dropped);
	s->tx_packets = atomic_long_read(&priv->tx_packets);
	s->tx_bytes = atomic_long_read(&priv->tx_bytes);
	s->tx_dropped = atomic_long_read(&priv->tx_dropped);
}

static const struct net_device_ops ppf_ops = {
	.ndo_open = ppf_open,
	.ndo_stop = ppf_stop,
	.ndo_start_xmit = ppf_xmit,
	.ndo_get_stats64 = ppf_get_stats64,
	.ndo_set_mac_address = eth_mac_addr,
};

static void ppf_setup(struct net_device *dev)
{
	ether_setup(dev);
	dev->netdev_ops = &ppf_ops;
	dev->needs_free_netdev = true;
	dev->min_mtu = ETH_MIN_MTU;
	dev->max_mtu = ETH_DATA_LEN;
	eth_hw_addr_random(dev);
}

/* Destroy the extra pools (after draining them, with @drain). */
static void ppf_extra_destroy(struct ppf_extra *x, bool drain)
{
	unsigned int i, leaks = 0;
	struct ppf_count c = {};
	int ms;

	for (i = 0; i < x->n; i++) {
		for (ms = 0; drain && ms < 20000; ms += 20) {
			ppf_count_pool(x->pool[i], &c);
			if (c.inflight <= 0)
				break;
			msleep(20);
		}
		if (drain && c.inflight) {
			pr_err("ppf1 extra pool %u: pool LEAK: %ld pages in flight after 20 s\n",
			       i, c.inflight);
			leaks++;
		}
		page_pool_destroy(x->pool[i]);
	}
	if (drain && x->n && !leaks)
		pr_info("ppf1: extra pools drained: %u\n", x->n);
	kfree(x->pool);
	x->pool = NULL;
	x->n = 0;
}

static int ppf_extra_create(struct ppf_extra *x,
			    const struct page_pool_params *pp)
{
	struct page_pool *pool;
	unsigned int n = min(extra_pools, PPF_EXTRA_MAX);

	if (!n)
		return 0;
	x->pool = kcalloc(n, sizeof(*x->pool), GFP_KERNEL);
	if (!x->pool)
		return -ENOMEM;
	while (x->n < n) {
		pool = page_pool_create(pp);
		if (IS_ERR(pool)) {
			ppf_extra_destroy(x, false);
			return PTR_ERR(pool);
		}
		x->pool[x->n++] = pool;
	}
	return 0;
}

static struct net_device *ppf_create(int i, struct device *dma_dev)
{
	struct page_pool_params pp = {
		.order = 0,
		.pool_size = 256,
		.nid = NUMA_NO_NODE,
		/*
		 * Used by the kernel only with PP_FLAG_DMA_MAP (dma=1); ppcoal's
		 * fixture row reads it as stmmac's (dev_rx)
		 */
		.dma_dir = DMA_FROM_DEVICE,
	};
	struct net_device *dev;
	struct ppf_priv *priv;
	int err;

	dev = alloc_netdev(sizeof(*priv), i ? "ppf1" : "ppf0",
			   NET_NAME_USER, ppf_setup);
	if (!dev)
		return ERR_PTR(-ENOMEM);
	priv = netdev_priv(dev);
	priv->frag = frag_pool;
	priv->linear = linear;
	skb_queue_head_init(&priv->rxq);
	skb_queue_head_init(&priv->held);
	skb_queue_head_init(&priv->txc);
	priv->irq_usecs = irq_usecs;
	priv->irq_frames =
		clamp_t(unsigned int, irq_frames, 1, NAPI_POLL_WEIGHT);
	hrtimer_init(&priv->irq_timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	priv->irq_timer.function = ppf_irq_timer;
	spin_lock_init(&priv->ring_lock);
	INIT_DELAYED_WORK(&priv->refill_work, ppf_refill_fn);
	/* refill=1: ppf1 only, ppf0 (the sender's side) stays audited */
	priv->refill = i && refill;
	priv->xdp_tx = i && xdp_tx;
	netif_napi_add(dev, &priv->napi,
		       priv->refill ? ppf_poll_ring : ppf_poll);
	if (dma_dev) {
		/* as a NIC's: mapped at allocation, synced for the device at
		 * every recycle, unmapped when the page leaves the pool
		 */
		pp.dev = dma_dev;
		pp.flags |= PP_FLAG_DMA_MAP | PP_FLAG_DMA_SYNC_DEV;
		pp.max_len = PAGE_SIZE;
		priv->dma_dev = pp.dev;
		/* a PCI NIC's netdev is its PCI device's child */
		SET_NETDEV_DEV(dev, dma_dev);
	} else if (!nodev) {
		/* the netdev's, as veth's (no DMA mapping) */
		pp.dev = &dev->dev;
	}
#ifdef PPC_HAVE_PP_FRAG_COUNT
	if (frag_pool)
		pp.flags |= PP_FLAG_PAGE_FRAG;
#endif
	if (priv->xdp_tx)	/* as stmmac's for XDP: its extra ones too */
		pp.dma_dir = DMA_BIDIRECTIONAL;
#ifdef PPC_HAVE_NAPI_PP_PUT_PAGE
	if (pp_napi)
		pp.napi = &priv->napi;
#endif
	priv->pool = page_pool_create(&pp);
	if (IS_ERR(priv->pool)) {
		err = PTR_ERR(priv->pool);
		goto free;
	}
	if (i && foreign_extra && !nodev) {
		/* ppf0's pools, as far as the pool can tell (not mapped) */
		pp.dev = &ppf_dev[0]->dev;
		pp.flags &= ~(PP_FLAG_DMA_MAP | PP_FLAG_DMA_SYNC_DEV);
	}
	err = i ? ppf_extra_create(&priv->xp, &pp) : 0;
	if (err)
		goto pool;
	err = register_netdev(dev);
	if (err)
		goto pool;
	return dev;
pool:
	ppf_extra_destroy(&priv->xp, false);
	page_pool_destroy(priv->pool);
free:
	netif_napi_del(&priv->napi);
	free_netdev(dev);
	return ERR_PTR(err);
}

/* Wait up to 20 s for the pool's pages to come back, then record it. */
static void ppf_drain_report(const char *name, struct page_pool *pool)
{
	struct ppf_count c;
	size_t n = strlen(ppf_report);
	int ms;

	for (ms = 0; ms < 20000; ms += 20) {
		ppf_count_pool(pool, &c);
		if (c.inflight <= 0)
			break;
		msleep(20);
	}
	if (n > sizeof(ppf_report) - 200)
		n = 0;		/* keep the file bounded */
	if (c.inflight == 0) {
		pr_info("%s: pool drained: hold %ld release %ld cached %ld ring %ld\n",
			name, c.hold, c.release, c.cached, c.ring);
		scnprintf(ppf_report + n, sizeof(ppf_report) - n,
			  "%s drained hold %ld release %ld\n", name, c.hold,
			  c.release);
	} else {
		pr_err("%s: pool LEAK: %ld pages in flight after 20 s (hold %ld release %ld cached %ld ring %ld)\n",
		       name, c.inflight, c.hold, c.release, c.cached, c.ring);
		scnprintf(ppf_report + n, sizeof(ppf_report) - n,
			  "%s LEAK inflight %ld\n", name, c.inflight);
	}
}

static void ppf_destroy_pair(void)
{
	struct ppf_extra xp[2] = {};
	struct page_pool *pool[2] = {};
	char name[2][IFNAMSIZ] = {};
	struct ppf_priv *priv;
	int i;

	if (!ppf_dev[0])
		return;
	rtnl_lock();
	for (i = 0; i < 2; i++) {
		priv = netdev_priv(ppf_dev[i]);
		WRITE_ONCE(priv->peer, NULL);
	}
	/* no transmit still holds a peer it could queue to */
	synchronize_net();
	for (i = 0; i < 2; i++) {
		priv = netdev_priv(ppf_dev[i]);
		atomic_set(&priv->hold, 0);
		skb_queue_purge(&priv->held);
		/* a device already down keeps what was sent back after */
		skb_queue_purge(&priv->txc);
		pool[i] = priv->pool;
		xp[i] = priv->xp;	/* past the device's life */
		strscpy(name[i], ppf_dev[i]->name, IFNAMSIZ);
		/* closes the device (napi disabled, queue purged) */
		unregister_netdevice(ppf_dev[i]);
		ppf_dev[i] = NULL;
	}
	rtnl_unlock();
	/* devices are gone: no poll can allocate any more */
	synchronize_net();
	for (i = 0; i < 2; i++) {
		ppf_drain_report(name[i], pool[i]);
		page_pool_destroy(pool[i]);
		ppf_extra_destroy(&xp[i], true);
	}
}

static int ppf_create_pair(void)
{
	struct device *dma_dev = NULL;
	struct ppf_priv *p0, *p1;
	struct page_pool *pool;
	bool want_dma = READ_ONCE(dma);	/* once: both devices alike */
	int i;

	if (READ_ONCE(refill) && READ_ONCE(pp_napi)) {
		/* the kernel itself would recycle directly into a pool that the
		 * work item fills from process context: the driver bug itself
		 */
		pr_err("refill=1 with pp_napi=1: a pool filled from process context cannot name its NAPI; set one of them to 0\n");
		return -EINVAL;
	}
	if (want_dma && foreign_extra) {
		/* the poll syncs every buffer for the CPU: not an unmapped one */
		pr_err("foreign_extra=1 with dma=1: the foreign pools are not DMA-mapped; set one of them to 0\n");
		return -EINVAL;
	}
	if (nodev && xdp_tx) {
		/* the fixture row's rule reads the direction of device pools */
		pr_err("nodev=1 with xdp_tx=1: a pool without a device is placed by the private data, not its direction; set one of them to 0\n");
		return -EINVAL;
	}
	if (want_dma && nodev) {
		pr_err("nodev=1 with dma=1: a DMA-mapped pool needs its device; set one of them to 0\n");
		return -EINVAL;
	}
	if (want_dma && ppf_pdev) {
		dma_dev = &ppf_pdev->dev;
	} else if (want_dma) {
		pr_err("dma=1: no DMA device: the fixture maps its pools on QEMU's edu PCI device (qemu -device edu), and none is bound to it\n");
		return -ENODEV;
	}
	for (i = 0; i < 2; i++) {
		ppf_dev[i] = ppf_create(i, dma_dev);
		if (IS_ERR(ppf_dev[i])) {
			int err = PTR_ERR(ppf_dev[i]);

			ppf_dev[i] = NULL;
			if (i) {
				rtnl_lock();
				p0 = netdev_priv(ppf_dev[0]);
				/* the device is freed by the unregister */
				pool = p0->pool;
				unregister_netdevice(ppf_dev[0]);
				rtnl_unlock();
				page_pool_destroy(pool);
				ppf_dev[0] = NULL;
			}
			return err;
		}
	}
	p0 = netdev_priv(ppf_dev[0]);
	p1 = netdev_priv(ppf_dev[1]);
	p0->peer = ppf_dev[1];
	p1->peer = ppf_dev[0];
	pr_info("ppf0/ppf1: %s pool, %s skbs%s%s%s%s%s\n",
		frag_pool ? "frag" : "page-per-buffer",
		linear ? "linear (build_skb)" : "header + page-frag",
		pp_napi ? ", pp_params.napi set" : "", gro ? ", GRO" : "",
		dma_dev ? ", DMA-mapped on the edu device" : "",
		refill ? ", ppf1 refilled from process context" : "",
		xdp_tx ? ", ppf1's pools bidirectional, sent back to ppf0" : "");
	return 0;
}

static int ppf_set_recreate(const char *val, const struct kernel_param *kp)
{
	int err;

	mutex_lock(&ppf_lock);
	ppf_destroy_pair();
	err = ppf_create_pair();
	mutex_unlock(&ppf_lock);
	return err;
}

static const struct kernel_param_ops ppf_recreate_ops = {
	.set = ppf_set_recreate,
};

module_param_cb(recreate, &ppf_recreate_ops, NULL, 0200);
MODULE_PARM_DESC(recreate, "write 1: tear the pair down (with drain report) and create it anew");

/*
 * Puts into @priv's pools that asked for the lockless cache (allow_direct),
 * by the kernel's own page_pool statistics: page_pool_recycle_in_cache()
 * counts each as cached, or as cache_full when it fell back to the ring
 * (6.1 net/core/page_pool.c:563,569; 6.12 :818,824). Whoever made them:
 * the fixture's own direct puts (ppf_unbuf() on a pool that is not
 * refilled), the kernel's NAPI-local rule (6.12) or ppcoal. -1 where the
 * kernel keeps no such statistics (CONFIG_PAGE_POOL_STATS unset, as in
 * Debian's stock builds).
 */
static long ppf_direct_puts(struct ppf_priv *priv)
{
#ifdef CONFIG_PAGE_POOL_STATS
	struct page_pool_stats s = {};	/* page_pool_get_stats() adds */
	unsigned int i;

	page_pool_get_stats(priv->pool, &s);
	for (i = 0; i < priv->xp.n; i++)
		page_pool_get_stats(priv->xp.pool[i], &s);
	return s.recycle_stats.cached + s.recycle_stats.cache_full;
#else
	return -1;
#endif
}

static int ppf_pools_show(struct seq_file *m, void *v)
{
	struct ppf_count c;
	struct ppf_priv *priv;
	int i;

	mutex_lock(&ppf_lock);
	for (i = 0; i < 2; i++) {
		if (!ppf_dev[i])
			continue;
		priv = netdev_priv(ppf_dev[i]);
		ppf_count_pool(priv->pool, &c);
		seq_printf(m, "%s frag %d linear %d dma %d refill %d hold %ld release %ld cached %ld ring %ld carving %ld inflight %ld held %u rxpages %ld directputs %ld xdptx %d txdone %ld\n",
			   ppf_dev[i]->name, priv->frag, priv->linear,
			   !!priv->dma_dev, priv->refill, c.hold,
			   c.release, c.cached, c.ring, c.frag, c.inflight,
			   skb_queue_len(&priv->held),
			   atomic_long_read(&priv->rx_pages),
			   ppf_direct_puts(priv), priv->xdp_tx,
			   atomic_long_read(&priv->tx_done));
	}
	mutex_unlock(&ppf_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ppf_pools);

static int ppf_teardown_show(struct seq_file *m, void *v)
{
	mutex_lock(&ppf_lock);
	seq_puts(m, ppf_report);
	mutex_unlock(&ppf_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ppf_teardown);

static ssize_t ppf_hold_write(struct file *file, const char __user *ubuf,
			      size_t len, loff_t *ppos)
{
	struct ppf_priv *priv;
	unsigned int n;
	int err;

	err = kstrtouint_from_user(ubuf, len, 0, &n);
	if (err)
		return err;
	mutex_lock(&ppf_lock);
	if (ppf_dev[1]) {
		priv = netdev_priv(ppf_dev[1]);
		atomic_set(&priv->hold, n);
	}
	mutex_unlock(&ppf_lock);
	return len;
}

static int ppf_stack_show(struct seq_file *m, void *v)
{
	spin_lock_bh(&ppf_stack_lock);
	seq_puts(m, ppf_stack);
	spin_unlock_bh(&ppf_stack_lock);
	return 0;
}

static int ppf_stack_open(struct inode *inode, struct file *file)
{
	return single_open(file, ppf_stack_show, NULL);
}

static ssize_t ppf_stack_write(struct file *file, const char __user *ubuf,
			       size_t len, loff_t *ppos)
{
	spin_lock_bh(&ppf_stack_lock);
	ppf_stack[0] = '\0';
	spin_unlock_bh(&ppf_stack_lock);
	atomic_set(&ppf_stack_want, 1);
	return len;
}

static const struct file_operations ppf_stack_fops = {
	.open = ppf_stack_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = ppf_stack_write,
};

static const struct file_operations ppf_hold_fops = {
	.write = ppf_hold_write,
};

static ssize_t ppf_release_write(struct file *file, const char __user *ubuf,
				 size_t len, loff_t *ppos)
{
	struct ppf_priv *priv;
	struct sk_buff *skb;
	char word[16] = {};
	bool bh;
	int n = 0;

	if (copy_from_user(word, ubuf, min(len, sizeof(word) - 1)))
		return -EFAULT;
	strim(word);
	if (!strcmp(word, "bh"))
		bh = true;
	else if (!strcmp(word, "process"))
		bh = false;
	else
		return -EINVAL;
	mutex_lock(&ppf_lock);
	if (ppf_dev[1]) {
		priv = netdev_priv(ppf_dev[1]);
		if (bh)
			local_bh_disable();
		while ((skb = skb_dequeue(&priv->held))) {
			kfree_skb(skb);
			n++;
		}
		if (bh)
			local_bh_enable();
	}
	mutex_unlock(&ppf_lock);
	pr_info("released %d held skbs (%s)\n", n, word);
	return len;
}

static const struct file_operations ppf_release_fops = {
	.write = ppf_release_write,
};

/*
 * refill=1: bnxt's queue reset on ppf1, from this write (process context)
 * while its NAPI polls: the ring's buffers back to the pool, then a new
 * fill. 6.12: direct recycling withdrawn first, as bnxt_queue_stop() does,
 * unless "2" is written (a driver that does not withdraw it, for the forced
 * experiment, whose pool must keep taking direct puts on 6.12 too).
 */
static ssize_t ppf_reset_write(struct file *file, const char __user *ubuf,
			       size_t len, loff_t *ppos)
{
	struct ppf_priv *priv;
	int err = -ENODEV, i;
	u8 how;

	if (kstrtou8_from_user(ubuf, len, 0, &how) || (how != 1 && how != 2)) {
		pr_err("reset: write 1 (a queue reset as bnxt's) or 2 (not withdrawing direct recycling, 32 rounds)\n");
		return -EINVAL;
	}
	mutex_lock(&ppf_lock);
	/* rtnl: ppf1 cannot go down meanwhile (ppf_stop() empties the ring) */
	rtnl_lock();
	if (ppf_dev[1]) {
		priv = netdev_priv(ppf_dev[1]);
		err = !priv->refill ? -EINVAL :
		      !netif_running(ppf_dev[1]) ? -ENETDOWN : 0;
	}
	if (!err) {
#ifdef PPC_HAVE_PP_DISABLE_DIRECT
		if (how == 1)
			page_pool_disable_direct_recycling(priv->pool);
#endif
		/* 2: 32 rounds, the lock dropped between (more to race) */
		for (i = 0; i < (how == 2 ? 32 : 1); i++) {
			spin_lock_bh(&priv->ring_lock);
			ppf_ring_empty(priv);
			ppf_ring_fill(priv, PPF_RING);
			spin_unlock_bh(&priv->ring_lock);
		}
	}
	rtnl_unlock();
	mutex_unlock(&ppf_lock);
	if (err == -EINVAL)
		pr_err("reset: ppf1 has no driver ring: recreate the pair with refill=1\n");
	return err ? err : len;
}

static const struct file_operations ppf_reset_fops = {
	.write = ppf_reset_write,
};

#ifdef PPC_HAVE_PP_DISABLE_DIRECT
/* 6.12: write anything to withdraw direct recycling from ppf1's pool. */
static ssize_t ppf_withdraw_write(struct file *file, const char __user *ubuf,
				  size_t len, loff_t *ppos)
{
	struct ppf_priv *priv;

	mutex_lock(&ppf_lock);
	if (ppf_dev[1]) {
		priv = netdev_priv(ppf_dev[1]);
		page_pool_disable_direct_recycling(priv->pool);
	}
	mutex_unlock(&ppf_lock);
	return len;
}

static const struct file_operations ppf_withdraw_fops = {
	.write = ppf_withdraw_write,
};
#endif

/*
 * QEMU's educational PCI device, 1234:11e8 (hw/misc/edu.c, QEMU's
 * docs/specs/edu.rst): the pools' DMA device
 */
static const struct pci_device_id ppf_pci_ids[] = {
	{ PCI_DEVICE(0x1234, 0x11e8) },
	{ }
};

static int ppf_pci_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	int err;

	err = pcim_enable_device(pdev);
	if (err)
		return err;
	/* edu,dma_mask=... on the QEMU command line says the same */
	err = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (err)
		return err;
	mutex_lock(&ppf_lock);
	if (ppf_pdev)
		err = -EBUSY;	/* one is enough */
	else
		ppf_pdev = pdev;
	mutex_unlock(&ppf_lock);
	if (!err)
		dev_info(&pdev->dev, "the DMA device of dma=1 pools\n");
	return err;
}

static void ppf_pci_remove(struct pci_dev *pdev)
{
	struct ppf_priv *priv;

	mutex_lock(&ppf_lock);
	if (ppf_dev[0]) {
		priv = netdev_priv(ppf_dev[0]);
		/* pools mapped on this device go first (a sysfs unbind) */
		if (priv->dma_dev == &pdev->dev)
			ppf_destroy_pair();
	}
	ppf_pdev = NULL;
	mutex_unlock(&ppf_lock);
}

static struct pci_driver ppf_pci_driver = {
	.name = KBUILD_MODNAME,
	.id_table = ppf_pci_ids,
	.probe = ppf_pci_probe,
	.remove = ppf_pci_remove,
};

static int __init ppf_init(void)
{
	int err;

	/* binds a present edu device now, before the pools need it */
	err = pci_register_driver(&ppf_pci_driver);
	if (err)
		return err;
	mutex_lock(&ppf_lock);
	err = ppf_create_pair();
	mutex_unlock(&ppf_lock);
	if (err) {
		pci_unregister_driver(&ppf_pci_driver);
		return err;
	}
	ppf_debugfs = debugfs_create_dir("ppcoal_fixture", NULL);
	debugfs_create_file("pools", 0444, ppf_debugfs, NULL, &ppf_pools_fops);
	debugfs_create_file("teardown", 0444, ppf_debugfs, NULL,
			    &ppf_teardown_fops);
	debugfs_create_file("hold", 0200, ppf_debugfs, NULL, &ppf_hold_fops);
	debugfs_create_file("stack", 0600, ppf_debugfs, NULL, &ppf_stack_fops);
#ifdef PPC_HAVE_PP_DISABLE_DIRECT
	debugfs_create_file("withdraw", 0200, ppf_debugfs, NULL,
			    &ppf_withdraw_fops);
#endif
	debugfs_create_file("release", 0200, ppf_debugfs, NULL,
			    &ppf_release_fops);
	debugfs_create_file("reset", 0200, ppf_debugfs, NULL, &ppf_reset_fops);
	return 0;
}

static void __exit ppf_exit(void)
{
	debugfs_remove_recursive(ppf_debugfs);
	mutex_lock(&ppf_lock);
	ppf_destroy_pair();
	mutex_unlock(&ppf_lock);
	/* after the pools: their pages are unmapped before the device goes */
	pci_unregister_driver(&ppf_pci_driver);
}

module_init(ppf_init);
module_exit(ppf_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ppcoal test fixture: a netdev pair receiving through a NAPI poll and a page_pool");
