// SPDX-License-Identifier: GPL-2.0
/*
 * ppcoal_microbench: per-operation timings for the ppcoal benchmark, for
 * guests (single-threaded TCG) where iperf3 cannot resolve the gains.
 *
 * Write "OP [N [mark]]" to /sys/kernel/debug/ppcoal_microbench/run to run
 * OP N times (default PPMB_DEFAULT_N, at most PPMB_MAX_N); reading the file
 * then gives "OP ns_per_op total_ns n ran" of the last run (one decimal, n
 * the iterations timed, ran those executed: n plus those of discarded
 * chunks). With "mark" the run executes the marker of the insncount QEMU
 * plugin ("xchg %bx,%bx", tests/plugin/insncount.c) after the op's setup
 * and before its teardown: that window's guest instructions over ran are
 * the op's instructions per iteration, chunk bookkeeping (two clock
 * reads, the bottom-half or preemption toggle, cond_resched()) included,
 * and whatever else the guest's CPUs run meanwhile.
 *
 * A run executes on one CPU (a work item bound to the writer's CPU) in
 * chunks of PPMB_CHUNK iterations, each with bottom halves disabled
 * (preemption only, for call_coalesce and poll_*) and timed as a whole
 * with ktime_get_ns(); total_ns is the sum of the chunks. Between chunks
 * the CPU is given back (cond_resched), and a run stops after
 * PPMB_MAX_WALL_NS of wall time. Setup and teardown are not timed.
 *
 * The ops (every op frees what it allocates; ops using the module's
 * page_pool, one buffer per page and order 0, end with a check that no
 * page is outside the pool, "pool LEAK" in dmesg and -EIO otherwise):
 *
 * call_coalesce: skb_try_coalesce(to, from) with to cloned, refused by
 *   the first test of both the kernel and ppcoal's shadow: the cheapest
 *   call. Run under coalesce=off, observe and on, the differences are the
 *   cost per call of the hook as ppcoal installs it (ftrace redirect,
 *   counters, in-flight accounting), not of any coalescing decision.
 * call_recycle: the per-page free of a page-pool skb, called directly as
 *   skb frees call it: page_pool_return_skb_page(page) (6.1) or
 *   napi_pp_put_page(netmem) (6.12) on a page fresh from the pool. Under
 *   recycle=off, observe and on the differences are the hook plus decision
 *   cost. This is not a NAPI poll of the pool's owner, so ppcoal's "on"
 *   never decides "direct" here: all three modes put the page through the
 *   ring (6.12's own NAPI-local rule says no too: the pool names neither a
 *   NAPI nor a CPU). What direct recycling saves is recycle_direct below.
 * call_build_skb: build_skb() on a napi_alloc_frag() buffer, then
 *   consume_skb() (see ppmb_build()). A caller outside virtio_net:
 *   ppcoal's virtio path only counts it and passes it through, so
 *   virtio=off, observe and on differ by the cost of the build_skb hook on
 *   every other caller. Its counts are not build_skb's below, nor those of
 *   call_build_skb before 2026-12 (napi_consume_skb() then).
 * call_rx_frag: a driver's receive outside virtio_net that copies the
 *   headers and hands the rest on as a frag: napi_alloc_skb() of 256
 *   bytes, skb_add_rx_frag() of a page the run holds (one reference more
 *   per skb), napi_consume_skb(). Two of the functions whose calls from
 *   page_to_skb ppcoal's virtio path counts (ppcoal_virtio_hook.c): it
 *   counts nothing here, so virtio=off, observe and on differ by the cost
 *   of those two counting hooks on every other caller.
 * recycle_ring / recycle_direct: page_pool_alloc_pages() then
 *   page_pool_put_full_page(pool, page, false or true): the operation
 *   direct recycling saves, with no ppcoal function involved. The ring arm
 *   puts under the ring's producer lock and the allocator takes pages
 *   back from the ring in refills of 64 (page_pool_refill_alloc_cache);
 *   the direct arm keeps the page in the lockless allocation cache (6.1
 *   needs in_softirq() for that: disabled bottom halves give it). ns per
 *   free + allocation.
 * build_skb / napi_build_skb: napi_alloc_frag() of a 256-byte buffer plus
 *   shared info, build_skb() or napi_build_skb() around it, then
 *   napi_consume_skb(skb, 64), which puts the sk_buff into the per-CPU NAPI
 *   cache that napi_build_skb() and napi_alloc_skb() take from. What virtio=on changes per
 *   received packet (run with virtio=off, the runner does, so that no hook
 *   sits on build_skb).
 * coalesce_ok / coalesce_refused: what coalescing a page-pool skb on the
 *   TCP receive queue saves. Each iteration builds "from" as a header-split
 *   receive does (a 66-byte linear part of headers, 256 bytes of payload
 *   in a page frag from the pool, skb_mark_for_recycle), pulls the headers
 *   as TCP has when it queues, clones it and frees the clone (a packet tap's
 *   copy). Then
 *     ok:      the first skb of a batch of PPMB_BATCH (MAX_SKB_FRAGS) is
 *              queued as "to"; every later one is coalesced into it by
 *              skb_try_coalesce() (its frag moves: to is nonlinear, so has
 *              no tailroom) and freed as TCP does,
 *              kfree_skb_partial(from, fragstolen);
 *     refused: every skb is queued (__skb_queue_tail, as tcp_queue_rcv).
 *   After each batch the queue is emptied (dequeue + kfree_skb, as the
 *   reader frees it), which returns every page of the batch to the pool
 *   in both arms. The clone is freed before the coalesce, so that the
 *   stock kernel of either family coalesces (6.1 refuses a cloned
 *   page-pool from): the ok arm measures the coalesce operation, not
 *   ppcoal's clone handling, whose extra work on 6.1 coalesce=on (a
 *   detached page, a fragment reference) it leaves out; the saving it
 *   shows is an upper bound of what coalesce=on saves for a real clone.
 *   The refused arm leaves out the refused skb_try_coalesce() call TCP
 *   makes before queueing (its cost is call_coalesce under coalesce=off),
 *   and neither arm includes socket memory accounting or the reader's
 *   per-skb work, which coalescing also saves.
 *
 * poll_empty / poll_recycle: a NAPI poll per iteration, the whole softirq
 *   round trip: napi_schedule() of a NAPI on an unregistered dummy device
 *   with bottom halves disabled, then local_bh_enable() runs
 *   net_rx_action(), which polls it once. poll_empty's poll does nothing
 *   but complete; poll_recycle's takes one page from the pool and frees it
 *   through the skb page free (as call_recycle), a frame received and
 *   dropped per poll, the fixture's irq_usecs=0. Under recycle=off,
 *   observe and on: this NAPI is no audited driver's, as virtio_net's, so
 *   with ppcoal's poll wrapper (issue 37) poll_empty's on-off is what "on"
 *   costs such a poll (nothing: it is not wrapped; with recycle_wrap=0,
 *   the tracker's two probes) and poll_recycle's is the page free's hook
 *   (its pages go to the ring; with recycle_wrap=0 or recycle_drivers
 *   naming this module, the tracker marks its polls and it recycles
 *   directly). A chunk in which a poll did not
 *   run at once (6.1 defers softirqs to a runnable ksoftirqd) is not
 *   timed; too many such chunks fail the run.
 * poll_recycle_irqoff: poll_recycle with interrupts disabled around the
 *   free, as netconsole's netpoll frees skbs nested in a poll: not a
 *   timing, the test of ppcoal's rule that such a free is never direct.
 *
 * Not a timing: write N (1..1000) to .../backlog to hand N frames, 20 ms
 * apart, to the backlog NAPI of the writing CPU (netif_rx() on the
 * loopback device, which must be up, with the ethertype of local
 * experiments). A packet handler, run for each frame in that NAPI's
 * poll (process_backlog(), a NAPI with no device), takes a page of the
 * pool and frees it through the skb page free, as call_recycle. With
 * ppcoal's recycle=on the first free inside that poll asks for the pool's
 * owner to be learned, and the allocations after it meet ppcoal's
 * allocation probe inside the backlog's poll. The write fails with -EIO
 * when a frame was not handled or a page is left out of the pool.
 *
 * Limits: TCG nanoseconds are not hardware nanoseconds (compare ratios and
 * differences, interleaved); no cache effects are emulated; a pair only
 * compares when ppcoal's paths are off during both of its arms (a hooked
 * skb_try_coalesce would burden only the ok arm). Test-only code: it reads
 * page_pool internals to count pages.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/etherdevice.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/sched.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "ppcoal_kcompat.h"
#ifdef PPC_HAVE_PAGE_POOL_HELPERS_H
#include <net/page_pool/helpers.h>
#else
#include <net/page_pool.h>
#endif
#ifdef PPC_HAVE_SKBUFF_REF_H
#include <linux/skbuff_ref.h>
#endif
#include "ppf_pool_count.h"

#define PPMB_DEFAULT_N	100000U
#define PPMB_MAX_N	10000000U
#define PPMB_CHUNK	1000U
#define PPMB_MAX_WALL_NS (10ULL * NSEC_PER_SEC)
#define PPMB_MAX_DISCARD 1000U
#define PPMB_HLEN	66	/* Ethernet, IPv4 and TCP with timestamps */
#define PPMB_PAYLOAD	256
#define PPMB_BATCH	MAX_SKB_FRAGS
#define PPMB_BUDGET	NAPI_POLL_WEIGHT
#define PPMB_BUF_SIZE	(SKB_DATA_ALIGN(PPMB_PAYLOAD) + \
			 SKB_DATA_ALIGN(sizeof(struct skb_shared_info)))

/* One run: the op, its iteration counts and time, and the op's state. */
struct ppmb_run {
	const struct ppmb_op *op;
	u32 n;			/* asked for */
	u32 done;		/* iterations timed */
	u32 ran;		/* iterations executed (discarded chunks too) */
	u64 ns;			/* time of the chunks */
	int err;
	bool mark;		/* the insncount plugin's marker around the run */
	/* call_coalesce */
	struct sk_buff *to, *to_clone, *from;
	/* coalesce_ok, coalesce_refused: to is the queue's tail (ok) */
	struct sk_buff_head q;
	unsigned int batch;
	unsigned long refused;
	/* call_rx_frag: the page every skb's frag refers to */
	struct page *page;
	/* poll_*: polls run; chunks not timed (see ppmb_poll_loop()) */
	u32 polls;
	bool poll_page;
	bool poll_irqoff;	/* the page freed with interrupts disabled */
	bool discard;
	u32 discarded;
};

struct ppmb_op {
	const char *name;
	bool bh;		/* chunks run with bottom halves disabled */
	bool pool;		/* uses ppmb_pool: checked after the run */
	int (*setup)(struct ppmb_run *r);
	void (*loop)(struct ppmb_run *r, u32 n);
	void (*teardown)(struct ppmb_run *r);
};

static struct page_pool *ppmb_pool;
static struct net_device *ppmb_dev;
static struct napi_struct ppmb_napi;
static struct ppmb_run *ppmb_poll_run;	/* the run polling, if any */
static struct dentry *ppmb_dir;
static DEFINE_MUTEX(ppmb_lock);	/* one run at a time; ppmb_result */
static char ppmb_result[96];

/* call_coalesce: a pair the kernel refuses at once (to is cloned). */
static int ppmb_call_coalesce_setup(struct ppmb_run *r)
{
	r->to = alloc_skb(128, GFP_KERNEL);
	r->from = alloc_skb(128, GFP_KERNEL);
	if (!r->to || !r->from)
		return -ENOMEM;
	skb_put_zero(r->to, 64);
	skb_put_zero(r->from, 64);
	r->to_clone = skb_clone(r->to, GFP_KERNEL);
	return r->to_clone ? 0 : -ENOMEM;
}

static void ppmb_call_coalesce_loop(struct ppmb_run *r, u32 n)
{
	bool stolen;
	int delta;
	u32 i;

	for (i = 0; i < n; i++) {
		if (unlikely(skb_try_coalesce(r->to, r->from, &stolen,
					      &delta))) {
			r->err = -EIO;	/* a cloned to cannot coalesce */
			return;
		}
	}
}

static void ppmb_call_coalesce_teardown(struct ppmb_run *r)
{
	kfree_skb(r->to_clone);
	kfree_skb(r->to);
	kfree_skb(r->from);
}

/* What the skb free path calls for each page of a pp_recycle skb. */
static __always_inline bool ppmb_skb_page_free(struct page *page)
{
#ifdef PPC_HAVE_NAPI_PP_PUT_PAGE
	return napi_pp_put_page(page_to_netmem(page));
#else
	return page_pool_return_skb_page(page);
#endif
}

static void ppmb_call_recycle_loop(struct ppmb_run *r, u32 n)
{
	struct page *page;
	u32 i;

	for (i = 0; i < n; i++) {
		page = page_pool_alloc_pages(ppmb_pool, GFP_ATOMIC);
		if (unlikely(!page)) {
			r->err = -ENOMEM;
			return;
		}
		if (unlikely(!ppmb_skb_page_free(page))) {
			/* not taken for a pool page: put it back ourselves */
			page_pool_put_full_page(ppmb_pool, page, false);
			r->err = -EIO;
			return;
		}
	}
}

static int ppmb_call_rx_frag_setup(struct ppmb_run *r)
{
	r->page = alloc_page(GFP_KERNEL);
	return r->page ? 0 : -ENOMEM;
}

static void ppmb_call_rx_frag_loop(struct ppmb_run *r, u32 n)
{
	struct sk_buff *skb;
	u32 i;

	for (i = 0; i < n; i++) {
		skb = napi_alloc_skb(&ppmb_napi, PPMB_PAYLOAD);
		if (unlikely(!skb)) {
			r->err = -ENOMEM;
			return;
		}
		/* the skb's frag owns this reference: its free puts it */
		get_page(r->page);
		skb_add_rx_frag(skb, 0, r->page, 0, PPMB_PAYLOAD, PAGE_SIZE);
		napi_consume_skb(skb, PPMB_BUDGET);
	}
}

static void ppmb_call_rx_frag_teardown(struct ppmb_run *r)
{
	if (r->page)
		put_page(r->page);
}

static __always_inline void ppmb_recycle(struct ppmb_run *r, u32 n,
					 bool direct)
{
	struct page *page;
	u32 i;

	for (i = 0; i < n; i++) {
		page = page_pool_alloc_pages(ppmb_pool, GFP_ATOMIC);
		if (unlikely(!page)) {
			r->err = -ENOMEM;
			return;
		}
		page_pool_put_full_page(ppmb_pool, page, direct);
	}
}

static void ppmb_recycle_ring_loop(struct ppmb_run *r, u32 n)
{
	ppmb_recycle(r, n, false);
}

static void ppmb_recycle_direct_loop(struct ppmb_run *r, u32 n)
{
	ppmb_recycle(r, n, true);
}

/*
 * napi: napi_build_skb(), else build_skb(). free_now: consume_skb(), which
 * gives the sk_buff straight back to the slab's per-CPU freelist, so that
 * the next build_skb() takes the same object; else napi_consume_skb(),
 * which parks it in the CPU's NAPI cache (shared with every NAPI user of
 * the CPU) until 64 are there and then hands the newest 32 to the slab at
 * once (napi_skb_cache_put(), 6.1 and 6.12). With that free the counts of
 * call_build_skb came in two levels 15 instructions apart, one of three
 * loads of the insn boot on 6.12.117 (CI of 9a8f334; 6.1 likewise when it
 * ran after the recycle tests). Our reading, not traced: the slab slow
 * paths of those bulk frees and of the allocations that refill from them
 * depend on the cache's fill and the slab's state when the run starts.
 * With consume_skb() the windows repeat within 0.2% (6.12.117) and 0.01%
 * (6.1.0-57).
 */
static __always_inline void ppmb_build(struct ppmb_run *r, u32 n, bool napi,
				       bool free_now)
{
	struct sk_buff *skb;
	void *data;
	u32 i;

	for (i = 0; i < n; i++) {
		data = napi_alloc_frag(PPMB_BUF_SIZE);
		if (unlikely(!data)) {
			r->err = -ENOMEM;
			return;
		}
		skb = napi ? napi_build_skb(data, PPMB_BUF_SIZE) :
			     build_skb(data, PPMB_BUF_SIZE);
		if (unlikely(!skb)) {
			page_frag_free(data);
			r->err = -ENOMEM;
			return;
		}
		if (free_now)
			consume_skb(skb);
		else
			napi_consume_skb(skb, PPMB_BUDGET);
	}
}

static void ppmb_build_skb_loop(struct ppmb_run *r, u32 n)
{
	ppmb_build(r, n, false, false);
}

static void ppmb_napi_build_skb_loop(struct ppmb_run *r, u32 n)
{
	ppmb_build(r, n, true, false);
}

static void ppmb_call_build_skb_loop(struct ppmb_run *r, u32 n)
{
	ppmb_build(r, n, false, true);
}

/*
 * A received page-pool skb as TCP queues it: headers pulled, 256 bytes of
 * payload left in one pool page frag, nothing in the linear part.
 */
static struct sk_buff *ppmb_pp_skb(void)
{
	struct sk_buff *skb;
	struct page *page;

	skb = alloc_skb(PPMB_HLEN, GFP_ATOMIC);
	if (unlikely(!skb))
		return NULL;
	page = page_pool_alloc_pages(ppmb_pool, GFP_ATOMIC);
	if (unlikely(!page)) {
		kfree_skb(skb);
		return NULL;
	}
	skb_put_zero(skb, PPMB_HLEN);
	skb_add_rx_frag(skb, 0, page, 0, PPMB_PAYLOAD, PAGE_SIZE);
	skb_mark_for_recycle(skb);
	__skb_pull(skb, PPMB_HLEN);
	return skb;
}

static int ppmb_coalesce_setup(struct ppmb_run *r)
{
	__skb_queue_head_init(&r->q);
	return 0;
}

/* The reader empties the receive queue. */
static void ppmb_coalesce_purge(struct ppmb_run *r)
{
	struct sk_buff *skb;

	while ((skb = __skb_dequeue(&r->q)))
		kfree_skb(skb);
	r->to = NULL;
	r->batch = 0;
}

static __always_inline void ppmb_coalesce(struct ppmb_run *r, u32 n, bool ok)
{
	struct sk_buff *from, *clone;
	bool stolen;
	int delta;
	u32 i;

	for (i = 0; i < n; i++) {
		from = ppmb_pp_skb();
		if (unlikely(!from)) {
			r->err = -ENOMEM;
			return;
		}
		clone = skb_clone(from, GFP_ATOMIC);
		if (unlikely(!clone)) {
			kfree_skb(from);
			r->err = -ENOMEM;
			return;
		}
		consume_skb(clone);
		if (ok && r->to) {
			if (likely(skb_try_coalesce(r->to, from, &stolen,
						    &delta))) {
				kfree_skb_partial(from, stolen);
				goto next;
			}
			r->refused++;
		}
		__skb_queue_tail(&r->q, from);
		if (ok)
			r->to = from;
next:
		if (++r->batch == PPMB_BATCH)
			ppmb_coalesce_purge(r);
	}
}

static void ppmb_coalesce_ok_loop(struct ppmb_run *r, u32 n)
{
	ppmb_coalesce(r, n, true);
}

static void ppmb_coalesce_refused_loop(struct ppmb_run *r, u32 n)
{
	ppmb_coalesce(r, n, false);
}

static void ppmb_coalesce_teardown(struct ppmb_run *r)
{
	local_bh_disable();
	ppmb_coalesce_purge(r);
	local_bh_enable();
	if (r->refused) {
		pr_err("%s: %lu skbs refused by skb_try_coalesce, the arm did not measure coalescing\n",
		       r->op->name, r->refused);
		if (!r->err)
			r->err = -EIO;
	}
}

/* The dummy NAPI's poll: one frame (poll_recycle) or none. */
static int ppmb_poll(struct napi_struct *napi, int budget)
{
	struct ppmb_run *r = READ_ONCE(ppmb_poll_run);
	unsigned long flags = 0;
	struct page *page;
	bool freed;
	int work = 0;

	if (r) {
		r->polls++;
		if (r->poll_page) {
			page = page_pool_alloc_pages(ppmb_pool, GFP_ATOMIC);
			if (unlikely(!page)) {
				r->err = -ENOMEM;
				goto out;
			}
			if (r->poll_irqoff)
				local_irq_save(flags);
			freed = ppmb_skb_page_free(page);
			if (r->poll_irqoff)
				local_irq_restore(flags);
			if (unlikely(!freed)) {
				page_pool_put_full_page(ppmb_pool, page, false);
				r->err = -EIO;
			} else {
				work = 1;
			}
		}
	}
out:
	napi_complete_done(napi, work);
	return work;
}

static int ppmb_poll_setup(struct ppmb_run *r)
{
	r->poll_irqoff = !strcmp(r->op->name, "poll_recycle_irqoff");
	r->poll_page = r->poll_irqoff || !strcmp(r->op->name, "poll_recycle");
	WRITE_ONCE(ppmb_poll_run, r);
	return 0;
}

/*
 * Each iteration: schedule, and local_bh_enable() polls (net_rx_action()).
 * 6.1's do_softirq() leaves the softirq to ksoftirqd while that thread is
 * runnable; a poll deferred so does not run in the chunk, which is then
 * not timed (discarded), nor is one started while such a poll is pending.
 */
static void ppmb_poll_loop(struct ppmb_run *r, u32 n)
{
	u32 i, polls = r->polls;

	if (test_bit(NAPI_STATE_SCHED, &ppmb_napi.state)) {
		r->discard = true;
		return;
	}
	for (i = 0; i < n && !r->err; i++) {
		local_bh_disable();
		napi_schedule(&ppmb_napi);
		local_bh_enable();
	}
	if (r->polls - polls != n)
		r->discard = true;
}

static void ppmb_poll_teardown(struct ppmb_run *r)
{
	/* A deferred poll may still run: let it, then stop counting. */
	napi_synchronize(&ppmb_napi);
	WRITE_ONCE(ppmb_poll_run, NULL);
	synchronize_net();
	if (r->discarded)
		pr_info("%s: %u chunks not timed, their polls deferred to ksoftirqd\n",
			r->op->name, r->discarded);
}

static const struct ppmb_op ppmb_ops[] = {
	{ .name = "call_coalesce", .setup = ppmb_call_coalesce_setup,
	  .loop = ppmb_call_coalesce_loop,
	  .teardown = ppmb_call_coalesce_teardown },
	{ .name = "call_recycle", .bh = true, .pool = true,
	  .loop = ppmb_call_recycle_loop },
	{ .name = "call_build_skb", .bh = true,
	  .loop = ppmb_call_build_skb_loop },
	{ .name = "call_rx_frag", .bh = true,
	  .setup = ppmb_call_rx_frag_setup, .loop = ppmb_call_rx_frag_loop,
	  .teardown = ppmb_call_rx_frag_teardown },
	{ .name = "recycle_ring", .bh = true, .pool = true,
	  .loop = ppmb_recycle_ring_loop },
	{ .name = "recycle_direct", .bh = true, .pool = true,
	  .loop = ppmb_recycle_direct_loop },
	{ .name = "build_skb", .bh = true, .loop = ppmb_build_skb_loop },
	{ .name = "napi_build_skb", .bh = true,
	  .loop = ppmb_napi_build_skb_loop },
	{ .name = "coalesce_ok", .bh = true, .pool = true,
	  .setup = ppmb_coalesce_setup, .loop = ppmb_coalesce_ok_loop,
	  .teardown = ppmb_coalesce_teardown },
	{ .name = "coalesce_refused", .bh = true, .pool = true,
	  .setup = ppmb_coalesce_setup, .loop = ppmb_coalesce_refused_loop,
	  .teardown = ppmb_coalesce_teardown },
	{ .name = "poll_empty", .setup = ppmb_poll_setup,
	  .loop = ppmb_poll_loop, .teardown = ppmb_poll_teardown },
	{ .name = "poll_recycle", .pool = true, .setup = ppmb_poll_setup,
	  .loop = ppmb_poll_loop, .teardown = ppmb_poll_teardown },
	{ .name = "poll_recycle_irqoff", .pool = true,
	  .setup = ppmb_poll_setup, .loop = ppmb_poll_loop,
	  .teardown = ppmb_poll_teardown },
};

/* Are all pages of the pool back in it? pr_err "pool LEAK" if not. */
static int ppmb_pool_check(const char *what)
{
	struct ppf_count c;

	ppf_count_pool(ppmb_pool, &c);
	if (!c.inflight)
		return 0;
	pr_err("%s: pool LEAK: %ld pages in flight (hold %ld release %ld cached %ld ring %ld)\n",
	       what, c.inflight, c.hold, c.release, c.cached, c.ring);
	return -EIO;
}

/* backlog: the pool's consumer is this handler alone, on one CPU at a time. */
static DEFINE_SPINLOCK(ppmb_backlog_lock);
static atomic_t ppmb_backlog_seen;

static int ppmb_backlog_rcv(struct sk_buff *skb, struct net_device *dev,
			    struct packet_type *pt,
			    struct net_device *orig_dev)
{
	struct page *page;

	spin_lock(&ppmb_backlog_lock);
	page = page_pool_alloc_pages(ppmb_pool, GFP_ATOMIC);
	if (page && !ppmb_skb_page_free(page))
		page_pool_put_full_page(ppmb_pool, page, false);
	spin_unlock(&ppmb_backlog_lock);
	if (page)
		atomic_inc(&ppmb_backlog_seen);
	consume_skb(skb);
	return NET_RX_SUCCESS;
}

static struct packet_type ppmb_backlog_pt = {
	.type = cpu_to_be16(ETH_P_802_EX1),
	.func = ppmb_backlog_rcv,
};

static ssize_t ppmb_backlog_write(struct file *file, const char __user *ubuf,
				  size_t len, loff_t *ppos)
{
	struct net_device *lo = init_net.loopback_dev;
	struct sk_buff *skb;
	u32 n, i;
	int ret;

	ret = kstrtou32_from_user(ubuf, len, 10, &n);
	if (ret)
		return ret;
	if (!n || n > 1000)
		return -EINVAL;
	if (!netif_running(lo))
		return -ENETDOWN;
	ret = mutex_lock_interruptible(&ppmb_lock);
	if (ret)
		return ret;
	atomic_set(&ppmb_backlog_seen, 0);
	dev_add_pack(&ppmb_backlog_pt);
	for (i = 0; i < n; i++) {
		skb = alloc_skb(ETH_ZLEN, GFP_KERNEL);
		if (!skb) {
			ret = -ENOMEM;
			break;
		}
		skb_put_zero(skb, ETH_ZLEN);
		skb_reset_mac_header(skb);
		skb->dev = lo;
		skb->protocol = ppmb_backlog_pt.type;
		/* polled at once: netif_rx() enables bottom halves again */
		netif_rx(skb);
		msleep(20);
	}
	/* returns once no CPU runs the handler (synchronize_net()) */
	dev_remove_pack(&ppmb_backlog_pt);
	if (!ret && atomic_read(&ppmb_backlog_seen) != i) {
		pr_err("backlog: %d of %u frames handled\n",
		       atomic_read(&ppmb_backlog_seen), i);
		ret = -EIO;
	}
	if (ppmb_pool_check("backlog") && !ret)
		ret = -EIO;
	mutex_unlock(&ppmb_lock);
	return ret ? ret : len;
}

static const struct file_operations ppmb_backlog_fops = {
	.owner = THIS_MODULE,
	.write = ppmb_backlog_write,
};

/* The insncount plugin's marker no-op (tests/plugin/insncount.c). */
static void ppmb_mark(void)
{
	asm volatile("xchg %%bx, %%bx" ::: "memory");
}

/* Runs on the chosen CPU, in a work item (process context). */
static long ppmb_exec(void *arg)
{
	struct ppmb_run *r = arg;
	const struct ppmb_op *op = r->op;
	u64 start, t0;
	u32 c;

	if (op->setup)
		r->err = op->setup(r);
	if (r->mark)
		ppmb_mark();
	start = ktime_get_ns();
	while (!r->err && r->done < r->n) {
		c = min(r->n - r->done, PPMB_CHUNK);
		if (op->bh)
			local_bh_disable();
		else
			preempt_disable();
		t0 = ktime_get_ns();
		op->loop(r, c);
		t0 = ktime_get_ns() - t0;
		if (op->bh)
			local_bh_enable();
		else
			preempt_enable();
		r->ran += c;
		if (!r->discard) {
			r->ns += t0;
			r->done += c;
		} else if (++r->discarded > PPMB_MAX_DISCARD) {
			r->err = -EBUSY;
		} else {
			/* let ksoftirqd run the deferred poll */
			schedule_timeout_uninterruptible(1);
		}
		r->discard = false;
		if (ktime_get_ns() - start > PPMB_MAX_WALL_NS)
			break;
		cond_resched();
	}
	if (r->mark)
		ppmb_mark();
	if (op->teardown)
		op->teardown(r);
	return 0;
}

static const struct ppmb_op *ppmb_find(const char *name)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ppmb_ops); i++)
		if (!strcmp(ppmb_ops[i].name, name))
			return &ppmb_ops[i];
	return NULL;
}

static ssize_t ppmb_write(struct file *file, const char __user *ubuf,
			  size_t len, loff_t *ppos)
{
	const struct ppmb_op *op;
	struct ppmb_run *r;
	char buf[64], *s, *name, *arg;
	u32 n = PPMB_DEFAULT_N;
	bool mark = false;
	u64 tenths;
	long ret;

	if (!len || len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	s = strim(buf);
	name = strsep(&s, " \t");
	arg = s ? strsep(&s, " \t") : NULL;
	if (arg && *arg) {
		ret = kstrtou32(arg, 10, &n);
		if (ret)
			return ret;
	}
	if (s) {
		s = skip_spaces(s);
		if (strcmp(s, "mark"))
			return -EINVAL;
		mark = true;
	}
	op = ppmb_find(name);
	if (!op || !n)
		return -EINVAL;
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	r->op = op;
	r->n = min(n, PPMB_MAX_N);
	r->mark = mark;

	ret = mutex_lock_interruptible(&ppmb_lock);
	if (ret)
		goto free;
	ppmb_result[0] = '\0';
	ret = work_on_cpu_safe(raw_smp_processor_id(), ppmb_exec, r);
	if (!ret)
		ret = r->err;
	if (op->pool && ppmb_pool_check(op->name) && !ret)
		ret = -EIO;
	if (!ret && r->done) {
		tenths = div_u64(r->ns * 10 + r->done / 2, r->done);
		scnprintf(ppmb_result, sizeof(ppmb_result),
			  "%s %llu.%llu %llu %u %u\n", op->name, tenths / 10,
			  tenths % 10, r->ns, r->done, r->ran);
	} else if (!ret) {
		ret = -EIO;
	}
	mutex_unlock(&ppmb_lock);
free:
	kfree(r);
	return ret ? ret : len;
}

static ssize_t ppmb_read(struct file *file, char __user *ubuf, size_t len,
			 loff_t *ppos)
{
	char buf[sizeof(ppmb_result)];
	int ret;

	ret = mutex_lock_interruptible(&ppmb_lock);
	if (ret)
		return ret;
	strscpy(buf, ppmb_result, sizeof(buf));
	mutex_unlock(&ppmb_lock);
	return simple_read_from_buffer(ubuf, len, ppos, buf, strlen(buf));
}

static const struct file_operations ppmb_run_fops = {
	.owner = THIS_MODULE,
	.read = ppmb_read,
	.write = ppmb_write,
	.llseek = default_llseek,
};

static int __init ppmb_init(void)
{
	struct page_pool_params pp = {
		.order = 0,
		.pool_size = 256,
		.nid = NUMA_NO_NODE,
	};
	struct page *page;

	/* Never registered: the NAPI only needs a device to belong to. */
	ppmb_dev = alloc_netdev(0, "ppmb%d", NET_NAME_ENUM, ether_setup);
	if (!ppmb_dev)
		return -ENOMEM;
	pp.dev = &ppmb_dev->dev;	/* the pool is this device's */
	ppmb_pool = page_pool_create(&pp);
	if (IS_ERR(ppmb_pool)) {
		free_netdev(ppmb_dev);
		return PTR_ERR(ppmb_pool);
	}
	netif_napi_add(ppmb_dev, &ppmb_napi, ppmb_poll);
	napi_enable(&ppmb_napi);
	/* Fill the allocation cache now, not in the first timed loop. */
	local_bh_disable();
	page = page_pool_alloc_pages(ppmb_pool, GFP_ATOMIC);
	if (page)
		page_pool_put_full_page(ppmb_pool, page, true);
	local_bh_enable();
	ppmb_dir = debugfs_create_dir("ppcoal_microbench", NULL);
	debugfs_create_file("run", 0600, ppmb_dir, NULL, &ppmb_run_fops);
	debugfs_create_file("backlog", 0200, ppmb_dir, NULL,
			    &ppmb_backlog_fops);
	return 0;
}

static void __exit ppmb_exit(void)
{
	debugfs_remove_recursive(ppmb_dir);
	napi_disable(&ppmb_napi);
	netif_napi_del(&ppmb_napi);
	free_netdev(ppmb_dev);
	ppmb_pool_check("unload");
	page_pool_destroy(ppmb_pool);
}

module_init(ppmb_init);
module_exit(ppmb_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ppcoal test: per-operation microbenchmarks of the paths ppcoal changes");
