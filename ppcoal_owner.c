// SPDX-License-Identifier: GPL-2.0
/*
 * ppcoal: which NAPI each CPU polls now, which NAPI owns each page pool,
 * and which pools may be eligible: the poll tracker, the owner table, the
 * learner and the audited drivers, for the recycle shadow
 * (ppcoal_recycle.c, whose header comment gives the rules). It calls the
 * engine to arm its probes; the engine reaches it only through the hook
 * and path tables.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hash.h>
#include <linux/kallsyms.h>
#include <linux/module.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/netdevice.h>
#include <linux/panic.h>
#include <linux/ratelimit.h>
#include <linux/skbuff.h>
#include <linux/uaccess.h>
#include <linux/utsname.h>
#include <linux/workqueue.h>
#include <asm/text-patching.h>	/* CALL_INSN_OPCODE */
#include <trace/events/napi.h>
#ifndef PPC_HAVE_NAPI_PP_PUT_PAGE
#include <net/mana/mana.h>	/* the mana_rxq rule */
#endif

#include "ppcoal.h"
#include "ppcoal_owner.h"

/* How long the allocation probe stays armed, and how long it rests after. */
#define PPC_LEARN_MAX	(2 * HZ)
#define PPC_LEARN_REST	(10 * HZ)

struct ppc_own_bucket ppc_owners[PPC_OWN_BUCKETS];
static DEFINE_RAW_SPINLOCK(ppc_own_lock);
/*
 * Bumped after any owner is dropped or turns shared, so that per-CPU
 * lookup caches die; atomic, as two CPUs may forget at once.
 */
atomic_long_t ppc_own_gen;

static void notrace ppc_own_changed(void)
{
	smp_mb__before_atomic();	/* the table change, then the bump */
	atomic_long_inc(&ppc_own_gen);
}

static void ppc_reclaim_fn(struct work_struct *work);
static DECLARE_WORK(ppc_reclaim_work, ppc_reclaim_fn);

/* Retire slot @i of @b. Under ppc_own_lock. */
static void notrace ppc_own_retire(struct ppc_own_bucket *b, int i)
{
	WRITE_ONCE(b->owner[i], 0);
	smp_wmb();	/* owner gone before the key changes */
	WRITE_ONCE(b->pool[i], PPC_OWN_TOMB);
}

/*
 * After slots were retired: lookup caches die, and the slots are freed once
 * no reader can still hold their old key (ppc_reclaim_fn()).
 */
static void notrace ppc_own_retired(void)
{
	ppc_own_changed();
	queue_work(system_wq, &ppc_reclaim_work);
}

DEFINE_PER_CPU(struct ppc_poll_mark, ppc_polling);

/* Learning on demand: requested (bit 0), state (see ppc_learn_fn()). */
enum { PPC_LEARN_IDLE, PPC_LEARN_ARMED };
static unsigned long ppc_learn_req;
static int ppc_learn_state;
static unsigned long ppc_learn_since;
static void ppc_learn_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(ppc_learn_work, ppc_learn_fn);
/* Its "no owner found" line: one a minute, however often pools churn. */
static DEFINE_RATELIMIT_STATE(ppc_learn_rs, 60 * HZ, 1);

/*
 * The slot of @pool, claimed if it has none; -1 when the bucket is full.
 * Under ppc_own_lock: a free slot has owner 0 (ppc_reclaim_fn()).
 */
static int notrace ppc_own_claim(struct ppc_own_bucket *b, unsigned long pool)
{
	int i = ppc_own_find(b, pool);

	if (i >= 0)
		return i;
	for (i = 0; i < PPC_OWN_WAYS; i++) {
		if (!b->pool[i]) {
			WRITE_ONCE(b->pool[i], pool);
			return i;
		}
	}
	ppc_count(RC_TABLE_FULL);
	return -1;
}

/* Slot @i of @b gets a final verdict. Under ppc_own_lock. */
static void notrace ppc_own_verdict(struct ppc_own_bucket *b, int i,
				    unsigned long verdict)
{
	WRITE_ONCE(b->owner[i], verdict);
	ppc_own_changed();	/* lookup caches may hold the old owner */
	if (verdict == PPC_OWN_NEVER)
		ppc_count(RC_NEVER);
	else
		ppc_count(RC_SHARED);
}

/*
 * Record what the allocation of @pool under @napi says: @napi owns it, or
 * (@owner a verdict) it is never ppcoal's. A second NAPI makes it shared;
 * a verdict is final while the pool lives.
 */
static void notrace ppc_own_learn(unsigned long pool, unsigned long owner)
{
	struct ppc_own_bucket *b = ppc_bucket(pool);
	unsigned long flags, old;
	int i;

	raw_spin_lock_irqsave(&ppc_own_lock, flags);
	i = ppc_own_claim(b, pool);
	if (i < 0)
		goto out;
	old = b->owner[i];
	if (old == owner || old == PPC_OWN_SHARED || old == PPC_OWN_NEVER)
		goto out;
	if (!old && owner != PPC_OWN_NEVER) {
		WRITE_ONCE(b->owner[i], owner);
		ppc_count(RC_LEARNED);
		goto out;
	}
	ppc_own_verdict(b, i, owner == PPC_OWN_NEVER ? owner : PPC_OWN_SHARED);
out:
	raw_spin_unlock_irqrestore(&ppc_own_lock, flags);
}

/*
 * Pools whose owner a learning window did not find (they do not allocate
 * inside a NAPI poll: a dying pool, a refill from process context): the
 * free path does not ask for them again before PPC_LEARN_REST, so that
 * they neither keep the probe armed nor hold up learning other pools.
 * Written under ppc_lock; read locklessly (a stale read only misjudges a
 * rest).
 */
#define PPC_RESTING	8
static unsigned long ppc_rest_pool[PPC_RESTING];
static unsigned long ppc_rest_until[PPC_RESTING];
static unsigned int ppc_rest_next;

static bool ppc_own_resting(unsigned long pool)
{
	int i;

	for (i = 0; i < PPC_RESTING; i++)
		if (READ_ONCE(ppc_rest_pool[i]) == pool &&
		    time_before(jiffies, READ_ONCE(ppc_rest_until[i])))
			return true;
	return false;
}

/*
 * Are there wanted pools without an owner? With @drop, free their slots
 * (through a grace period) and let them rest instead. Process context
 * under ppc_lock, learner disarmed when dropping.
 */
static bool ppc_own_unknown(bool drop)
{
	struct ppc_own_bucket *b;
	unsigned long key, flags;
	bool any = false;
	int i, r;

	raw_spin_lock_irqsave(&ppc_own_lock, flags);
	for (b = ppc_owners; b < ppc_owners + PPC_OWN_BUCKETS; b++)
		for (i = 0; i < PPC_OWN_WAYS; i++) {
			key = b->pool[i];
			if (key <= PPC_OWN_TOMB || b->owner[i])
				continue;
			any = true;
			if (!drop)
				continue;
			ppc_own_retire(b, i);
			r = ppc_rest_next++ % PPC_RESTING;
			WRITE_ONCE(ppc_rest_until[r], jiffies + PPC_LEARN_REST);
			smp_wmb();	/* a new key is read with its own time */
			WRITE_ONCE(ppc_rest_pool[r], key);
		}
	raw_spin_unlock_irqrestore(&ppc_own_lock, flags);
	if (any && drop)
		ppc_own_retired();
	return any;
}

/*
 * Is @pool the polling NAPI's own, by the device it was created for
 * (page_pool_params.dev: the netdev's device, as veth sets it,
 * drivers/net/veth.c:1020, or its parent, a NIC's PCI device)? A pool of
 * another driver that allocates inside this poll is not learned as its.
 * A NAPI without a device is no driver's: the backlog NAPI of each CPU
 * (process_backlog(), set up with no napi->dev, 6.1 net/core/dev.c:11636,
 * 6.12 :12488; a driver's gets one in netif_napi_add(), 6.1 :6533, 6.12
 * :6848), which __napi_poll() polls like any other.
 *
 * A pool made for the parent device passes for every netdev of that
 * parent (the ports of one PCI function, as mana's vPorts): the device
 * cannot tell them apart. That is the same driver, whose audit (rule 1:
 * a pool allocates only in its own queue's poll) is what makes the NAPI
 * seen allocating the pool's sole consumer; the check only keeps another
 * driver's pool from being learned here (issue 36, sibling netdevs).
 */
static bool notrace ppc_pool_of_napi(struct page_pool *pool,
				     struct napi_struct *napi)
{
	struct device *dev = READ_ONCE(pool->p.dev);
	struct net_device *ndev = READ_ONCE(napi->dev);

	return dev && ndev && (dev == &ndev->dev || dev == ndev->dev.parent);
}

static bool notrace ppc_own_nodev(struct page_pool *pool,
				  struct napi_struct *napi);

/**
 * ppc_own_want() - ask for the owner of a pool to be learned
 * @pool: a pool the free path met without an owner, inside a poll
 * @napi: the NAPI this CPU polls now (alive: this CPU is inside its poll)
 *
 * Keeps a slot for it (so the learner knows it is wanted) and asks for the
 * allocation probe, when the pool could be this NAPI's: a free can be
 * direct only inside the owner's poll, and an owner's pool is of its
 * device (ppc_owner_alloc_cb()). A pool of another device met here (a
 * forwarded page, a pool another driver allocates from in this poll)
 * takes no slot: slots are for pools that can be eligible (issue 36.8).
 * A pool created without a device is wanted when the row of this NAPI's
 * driver has a rule of its own that places it (ppc_own_nodev()).
 */
void ppc_own_want(unsigned long pool, unsigned long napi)
{
	struct ppc_own_bucket *b = ppc_bucket(pool);
	unsigned long flags;
	bool ours;
	int i;

	if (ppc_own_resting(pool))
		return;
	ours = ppc_pool_of_napi((void *)pool, (void *)napi);
	/*
	 * No slot and no free one in its bucket (checked without the lock):
	 * learning could not record it, so it asks for nothing.
	 */
	i = ppc_own_find(b, pool);
	if (i < 0 && ppc_own_find(b, 0) < 0) {
		if (ours)
			ppc_count(RC_TABLE_FULL);
		return;
	}
	if (!ours && !ppc_own_nodev((void *)pool, (void *)napi))
		return;
	if (i < 0) {
		raw_spin_lock_irqsave(&ppc_own_lock, flags);
		i = ppc_own_claim(b, pool);
		raw_spin_unlock_irqrestore(&ppc_own_lock, flags);
		if (i < 0)
			return;
	}
	if (READ_ONCE(ppc_learn_req) || test_and_set_bit(0, &ppc_learn_req))
		return;
	queue_delayed_work(system_wq, &ppc_learn_work, 0);
}

/* Remove the learning probes. */
static void ppc_learn_disarm(void)
{
	ppc_path_arm(PPC_PATH_RECYCLE, PPC_ARM_LEARN, false);
	WRITE_ONCE(ppc_learn_state, PPC_LEARN_IDLE);
}

/*
 * The learning state machine, run by ppc_learn_work under ppc_lock:
 * IDLE -> ARMED when a wanted pool is unknown; ARMED is checked every
 * 100 ms and ends (-> IDLE) when every wanted pool is learned or after
 * PPC_LEARN_MAX; then the pools still unknown are dropped and rest. The
 * request bit stays set from the free path's request until IDLE again.
 */
static void ppc_learn_fn(struct work_struct *work)
{
	unsigned long delay = 0;

	mutex_lock(&ppc_lock);
	if (ppc_path_mode(RECYCLE) != PPC_MODE_ON || ppc_engine_dying()) {
		if (ppc_learn_state == PPC_LEARN_ARMED)
			ppc_learn_disarm();
	} else if (ppc_learn_state == PPC_LEARN_IDLE) {
		if (!ppc_own_unknown(false)) {
			/* learned meanwhile */
		} else if (ppc_path_arm(PPC_PATH_RECYCLE, PPC_ARM_LEARN, true)) {
			ppc_learn_disarm();	/* the marks a failed arm set */
			ppc_own_unknown(true);
		} else {
			WRITE_ONCE(ppc_learn_state, PPC_LEARN_ARMED);
			ppc_learn_since = jiffies;
			ppc_count(RC_LEARN_ARMS);
			delay = HZ / 10;
		}
	} else if (!ppc_own_unknown(false)) {
		ppc_learn_disarm();
	} else if (time_before(jiffies, ppc_learn_since + PPC_LEARN_MAX)) {
		delay = HZ / 10;
	} else {
		ppc_learn_disarm();
		ppc_own_unknown(true);
		if (__ratelimit(&ppc_learn_rs))
			pr_info("recycle: no owner found in %u ms for some pools met in a NAPI poll (they do not allocate inside one: dying, or refilled elsewhere); their pages use the ring, next try in %u s\n",
				jiffies_to_msecs(PPC_LEARN_MAX),
				jiffies_to_msecs(PPC_LEARN_REST) / 1000);
	}
	if (delay)
		queue_delayed_work(system_wq, &ppc_learn_work, delay);
	else
		clear_bit(0, &ppc_learn_req);
	mutex_unlock(&ppc_lock);
}

/*
 * Frees the slots retired before this sweep began, once no reader can
 * still hold their old key: those retired meanwhile wait for the next
 * sweep (ppc_own_retired() queues it again). A retired slot changes only
 * here (claims take free slots, the others match pools), so the ones seen
 * now are the ones freed after the grace period.
 */
static void ppc_reclaim_fn(struct work_struct *work)
{
	DECLARE_BITMAP(tomb, PPC_OWN_BUCKETS * PPC_OWN_WAYS);
	unsigned long flags;
	int b, i;

	bitmap_zero(tomb, PPC_OWN_BUCKETS * PPC_OWN_WAYS);
	raw_spin_lock_irqsave(&ppc_own_lock, flags);
	for (b = 0; b < PPC_OWN_BUCKETS; b++)
		for (i = 0; i < PPC_OWN_WAYS; i++)
			if (ppc_owners[b].pool[i] == PPC_OWN_TOMB)
				__set_bit(b * PPC_OWN_WAYS + i, tomb);
	raw_spin_unlock_irqrestore(&ppc_own_lock, flags);
	synchronize_rcu();
	raw_spin_lock_irqsave(&ppc_own_lock, flags);
	for_each_set_bit(i, tomb, PPC_OWN_BUCKETS * PPC_OWN_WAYS) {
		b = i / PPC_OWN_WAYS;
		ppc_owners[b].owner[i % PPC_OWN_WAYS] = 0;
		WRITE_ONCE(ppc_owners[b].pool[i % PPC_OWN_WAYS], 0);
	}
	raw_spin_unlock_irqrestore(&ppc_own_lock, flags);
}

/**
 * ppc_owner_pool_destroy_cb() - ftrace callback on page_pool_destroy()
 * @ip: traced function
 * @parent_ip: its caller
 * @op: our ftrace_ops
 * @fregs: arguments
 *
 * Forgets the pool's owner before the pool can go away. Notrace, calls
 * nothing traced except queue_work_on() (not one of our targets).
 */
void notrace ppc_owner_pool_destroy_cb(unsigned long ip,
				       unsigned long parent_ip,
				       struct ftrace_ops *op,
				       struct ftrace_regs *fregs)
{
	unsigned long pool = ppc_fregs_arg0(fregs), flags;
	struct ppc_own_bucket *b;
	int i;

	if (!pool)
		return;
	b = ppc_bucket(pool);
	raw_spin_lock_irqsave(&ppc_own_lock, flags);
	i = ppc_own_find(b, pool);
	if (i >= 0)
		ppc_own_retire(b, i);
	raw_spin_unlock_irqrestore(&ppc_own_lock, flags);
	if (i >= 0) {
		ppc_count(RC_FORGOT_DESTROY);
		ppc_own_retired();
	}
}

/**
 * ppc_owner_napi_del_cb() - ftrace callback on __netif_napi_del()
 * @ip: traced function
 * @parent_ip: its caller
 * @op: our ftrace_ops
 * @fregs: arguments
 *
 * The NAPI is going away (its memory may be reused by another NAPI): every
 * pool it owned is forgotten, as at page_pool_destroy(); a pool that lives
 * on is learned again when the free path next meets it. Notrace, calls
 * nothing traced but the lock and queue_work_on().
 */
void notrace ppc_owner_napi_del_cb(unsigned long ip, unsigned long parent_ip,
				   struct ftrace_ops *op,
				   struct ftrace_regs *fregs)
{
	unsigned long napi = ppc_fregs_arg0(fregs), flags;
	struct ppc_own_bucket *b;
	bool hit = false;
	int i, cpu;

	if (!napi)
		return;
	/*
	 * Disabled before deletion, so no CPU polls it: no mark can be live,
	 * and no CPU may keep its row (a new NAPI there may poll otherwise).
	 */
	for_each_possible_cpu(cpu) {
		cmpxchg(per_cpu_ptr(&ppc_polling.napi, cpu), napi, 0);
		cmpxchg(per_cpu_ptr(&ppc_polling.row_napi, cpu), napi, 0);
	}
	raw_spin_lock_irqsave(&ppc_own_lock, flags);
	for (b = ppc_owners; b < ppc_owners + PPC_OWN_BUCKETS; b++)
		for (i = 0; i < PPC_OWN_WAYS; i++) {
			if (b->owner[i] != napi)
				continue;
			ppc_own_retire(b, i);
			ppc_count(RC_FORGOT_NAPI);
			hit = true;
		}
	raw_spin_unlock_irqrestore(&ppc_own_lock, flags);
	if (hit)
		ppc_own_retired();
}

#ifdef PPC_HAVE_PP_DISABLE_DIRECT
static unsigned long ppc_destroy_start, ppc_destroy_size;

/**
 * ppc_owner_pp_disable_cb() - ftrace callback on
 *	page_pool_disable_direct_recycling()
 * @ip: traced function
 * @parent_ip: its caller
 * @op: our ftrace_ops
 * @fregs: arguments (the pool first)
 *
 * The driver withdraws direct recycling from a live pool: it is never
 * ppcoal's while it lives. On Debian's 6.12 only bnxt calls it outside
 * page_pool_destroy() (bnxt_queue_stop(), 6.12.118
 * drivers/net/ethernet/broadcom/bnxt/bnxt.c:15643-15645), on pools that
 * name their NAPI, which ppcoal leaves alone while named; the withdrawal
 * clears the name (net/core/page_pool.c:1231), and the verdict keeps them
 * from being learned after. A verdict lost to a full bucket lets such a
 * pool be learned only for an audited driver (bnxt is not); a direct put
 * decided before the withdrawal cannot overlap it: the API wants the
 * pool's NAPI quiet first (napi_assert_will_not_race(), :1229), and
 * ppcoal puts directly only inside the owner's poll. Notrace; reaches no
 * function ppcoal hooks.
 */
void notrace ppc_owner_pp_disable_cb(unsigned long ip, unsigned long parent_ip,
				     struct ftrace_ops *op,
				     struct ftrace_regs *fregs)
{
	unsigned long pool = ppc_fregs_arg0(fregs);

	/*
	 * page_pool_destroy() calls it too (6.12 net/core/page_pool.c:1243),
	 * after ppc_owner_pool_destroy_cb() forgot the pool: a verdict then
	 * would outlive the pool and stick to the next one at its address.
	 */
	if (!pool || parent_ip - ppc_destroy_start < ppc_destroy_size)
		return;
	ppc_own_learn(pool, PPC_OWN_NEVER);
}

/* Where page_pool_destroy() lies, for ppc_owner_pp_disable_cb(). */
static int ppc_destroy_resolve(void)
{
	int ret = ppc_resolve_symbol(NULL, "page_pool_destroy",
				     &ppc_destroy_start, &ppc_destroy_size);

	if (ret)
		pr_err("recycle: page_pool_destroy not found (%d)\n", ret);
	return ret;
}
#else
static int ppc_destroy_resolve(void)
{
	return 0;
}
#endif

/*
 * The rules that tell a pool to be the polling NAPI's queue's (the own
 * column of ppcoal_tables.h). Each is called only for a NAPI polled by
 * its row's ->poll(), so it knows what the NAPI is embedded in; the NAPI
 * is alive (this CPU polls it) and so is the pool (it allocates or frees).
 */
typedef bool (*ppc_own_rule)(struct page_pool *pool, struct napi_struct *napi);

/* dev: by the device the pool was made for (ppc_pool_of_napi()) */
#define ppc_own_rule_dev ppc_pool_of_napi

/*
 * dev_rx: the device rule, for a pool made to receive only. stmmac (6.12)
 * makes its pools DMA_BIDIRECTIONAL exactly when an XDP program is
 * attached (6.12.118 drivers/net/ethernet/stmicro/stmmac/stmmac_main.c:
 * 2039), and its transmit NAPI then puts XDP_TX pages back into them
 * directly (xdp_return_frame_rx_napi(), 2721): a second NAPI at the
 * pool's cache. Attaching or removing a program makes new pools
 * (stmmac_xdp.c:123-135), so a pool's direction holds for its life.
 */
static bool notrace ppc_own_rule_dev_rx(struct page_pool *pool,
					struct napi_struct *napi)
{
	return READ_ONCE(pool->p.dma_dir) == DMA_FROM_DEVICE &&
	       ppc_pool_of_napi(pool, napi);
}

/* Does @own place only pools made for a device (not ppc_own_nodev())? */
static bool ppc_own_rule_by_dev(ppc_own_rule own)
{
	return own == ppc_own_rule_dev || own == ppc_own_rule_dev_rx;
}

#ifdef PPC_TEST_ROWS
/*
 * fixture: stmmac's rule (dev_rx: the fixture's xdp_tx=1 makes ppf1's
 * pools bidirectional, with another NAPI freeing their pages), or, for a
 * pool made without a device (ppcoal_fixture's nodev=1), the pool its
 * netdev's private data begins with (tests/modules/ppcoal_fixture.c,
 * struct ppf_priv).
 */
static bool notrace ppc_own_rule_fixture(struct page_pool *pool,
					 struct napi_struct *napi)
{
	struct page_pool **own;

	if (READ_ONCE(pool->p.dev))
		return ppc_own_rule_dev_rx(pool, napi);
	own = netdev_priv(READ_ONCE(napi->dev));
	return READ_ONCE(*own) == pool;
}
#endif

#ifndef PPC_HAVE_NAPI_PP_PUT_PAGE
/*
 * mana_rxq (6.1): mana_poll()'s NAPI is a mana_cq's; an RX CQ points to
 * its RX queue, which holds its pool (include/net/mana/mana.h:265-292,
 * 350; mana_en.c:2239-2240). A TX CQ has no rxq: its NAPI owns no pool.
 * The queue outlives the poll: it is freed after napi_disable() (2033).
 */
static bool notrace ppc_own_rule_mana_rxq(struct page_pool *pool,
					  struct napi_struct *napi)
{
	struct mana_cq *cq = container_of(napi, struct mana_cq, napi);
	enum mana_cq_type type;
	struct mana_rxq *rxq;
	struct page_pool *pp;

	/*
	 * Read without faulting: a mana.ko not built from the Debian source
	 * the row was pinned to (another layout) makes a refusal, not an oops.
	 */
	if (get_kernel_nofault(type, &cq->type) || type != MANA_CQ_TYPE_RX ||
	    get_kernel_nofault(rxq, &cq->rxq) || !rxq ||
	    get_kernel_nofault(pp, &rxq->page_pool))
		return false;
	return pp == pool;
}
#endif

/* The audited drivers (ppcoal_tables.h), and the ones an expert added. */
static const struct {
	const char *module;
	const char *poll;
	const char *audit;
	ppc_own_rule own;
	bool test;	/* the suite's fixture: pinned to no kernel */
} ppc_audited[] = {
#define PPC_AUDITED(mod, fn, rule, lines) \
	{ .module = #mod, .poll = #fn, .own = ppc_own_rule_##rule, .audit = lines },
#define PPC_AUDITED_TEST(mod, fn, rule, lines) \
	{ .module = #mod, .poll = #fn, .own = ppc_own_rule_##rule, .audit = lines, .test = true },
#include "ppcoal_tables.h"
#undef PPC_AUDITED_TEST
#undef PPC_AUDITED
};

/*
 * Which rows this kernel may use (ppc_verify_audit()), and why not:
 * decided once at load (ppc_owner_init()), before anything reads them.
 */
#define PPC_AUDIT_WHY	96
static bool ppc_audit_live[ARRAY_SIZE(ppc_audited)];
/* Can a live row's rule place a pool without a device (ppc_own_nodev())? */
static bool ppc_own_rules;
static char ppc_audit_why[ARRAY_SIZE(ppc_audited)][PPC_AUDIT_WHY];
/*
 * Is row i's module an earlier row's (vmxnet3's two polls)? Its verdict
 * is that row's: a driver's audit is verified as a whole, and named once.
 */
static bool ppc_audit_repeat[ARRAY_SIZE(ppc_audited)];
static bool ppc_audit_said;	/* under ppc_lock */

static void ppc_marks_init(void);

/**
 * ppc_owner_init() - decide which audited rows this kernel may use
 *
 * Called once at load, after ppc_verify_init() and before any path runs.
 */
void ppc_owner_init(void)
{
	int i, j;

	ppc_marks_init();

	for (i = 0; i < ARRAY_SIZE(ppc_audited); i++) {
		for (j = 0; j < i; j++)
			if (!strcmp(ppc_audited[j].module, ppc_audited[i].module))
				ppc_audit_repeat[i] = true;
		ppc_audit_live[i] = ppc_audited[i].test ||
				    ppc_verify_audit(ppc_audited[i].module,
						     ppc_audit_why[i],
						     PPC_AUDIT_WHY);
		if (ppc_audit_live[i] && !ppc_own_rule_by_dev(ppc_audited[i].own))
			ppc_own_rules = true;
	}
}

/* Say in dmesg, the first time recycle is on, each driver not used. */
static void ppc_audit_say(void)
{
	int i;

	if (ppc_audit_said)
		return;
	ppc_audit_said = true;
	for (i = 0; i < ARRAY_SIZE(ppc_audited); i++)
		if (!ppc_audit_live[i] && !ppc_audit_repeat[i])
			pr_info("recycle: %s is not treated as an audited driver here: %s; its pools use the ring. See: ppcoal verify --kernel %s\n",
				ppc_audited[i].module, ppc_audit_why[i],
				init_utsname()->release);
}

#define PPC_EXTRA_MAX	4
#define PPC_ROW_EXTRA	INT_MAX
static char ppc_extra[PPC_EXTRA_MAX][MODULE_NAME_LEN];	/* under ppc_lock */
static int ppc_extra_n;

/*
 * The row of the driver that polls @napi: its index in ppc_audited,
 * PPC_ROW_EXTRA for a module an expert added, -1 when not audited. Its
 * ->poll function and that function's module, as kallsyms names them
 * ("fn+off/size [module]"): a row of the table names both, an expert's
 * extra names the module. The module cannot go away meanwhile: this CPU
 * runs inside that poll. The extra list changes only while recycle is not
 * on, when no allocation probe is armed.
 */
static int notrace ppc_napi_row(struct napi_struct *napi)
{
	char sym[KSYM_SYMBOL_LEN], *mod, *end, *off;
	int i;

	sprint_symbol(sym, (unsigned long)READ_ONCE(napi->poll));
	mod = strrchr(sym, '[');
	end = mod ? strchr(mod, ']') : NULL;
	off = strchr(sym, '+');
	if (!end || !off || off > mod)
		return -1;	/* built into the kernel: none is audited */
	*end = '\0';
	*off = '\0';		/* sym is the function's name now */
	mod++;
	for (i = 0; i < ARRAY_SIZE(ppc_audited); i++)
		if (ppc_audit_live[i] &&
		    !strcmp(mod, ppc_audited[i].module) &&
		    !strcmp(sym, ppc_audited[i].poll))
			return i;
	for (i = 0; i < READ_ONCE(ppc_extra_n); i++)
		if (!strcmp(mod, ppc_extra[i]))
			return PPC_ROW_EXTRA;
	return -1;
}

/*
 * ppc_napi_row() of the NAPI this CPU polls (softirq), looked up once for
 * a NAPI: the tracker's ppc_owner_poll_cb() forgets it at each poll's
 * start, ppc_owner_napi_del_cb() when the NAPI is deleted, and a NAPI's
 * ->poll cannot change while it is polled (netif_napi_del() wants it
 * disabled).
 */
static int notrace ppc_poll_row(struct napi_struct *napi)
{
	struct ppc_poll_mark *m = this_cpu_ptr(&ppc_polling);

	if (READ_ONCE(m->napi) != (unsigned long)napi)
		return ppc_napi_row(napi);
	if (m->row_napi != (unsigned long)napi) {
		m->row = ppc_napi_row(napi);
		m->row_napi = (unsigned long)napi;
	}
	return m->row;
}

/* Is @pool @napi's queue's, by the rule of @napi's row (of ppc_napi_row())? */
static bool notrace ppc_own_ok(int row, struct page_pool *pool,
			       struct napi_struct *napi)
{
	if (row == PPC_ROW_EXTRA)	/* an expert's: the device rule */
		return ppc_pool_of_napi(pool, napi);
	return row >= 0 && ppc_audited[row].own(pool, napi);
}

/*
 * A pool made without a device (6.1's mana), which the device rule
 * cannot place: is it this NAPI's queue's by its driver's own rule? Only
 * when a live row has such a rule, and with the row looked up once a poll
 * (a kallsyms lookup): a device-less pool this NAPI does not own, whose
 * pages its poll frees, costs that lookup once a poll, not once a page.
 */
static bool notrace ppc_own_nodev(struct page_pool *pool,
				  struct napi_struct *napi)
{
	return READ_ONCE(ppc_own_rules) && !READ_ONCE(pool->p.dev) &&
	       READ_ONCE(napi->dev) &&
	       ppc_own_ok(ppc_poll_row(napi), pool, napi);
}

/* 6.12: does the kernel's own rule place this pool (.napi or cpuid)? */
static __always_inline bool ppc_pool_placed(const struct page_pool *pool)
{
#ifdef PPC_HAVE_NAPI_PP_PUT_PAGE
	return READ_ONCE(pool->p.napi) || READ_ONCE(pool->cpuid) >= 0;
#else
	return false;
#endif
}

/**
 * ppc_owner_alloc_cb() - ftrace callback on the page_pool allocators
 * @ip: traced function
 * @parent_ip: its caller
 * @op: our ftrace_ops
 * @fregs: arguments (the pool first)
 *
 * Armed only while owners are being learned. May run preemptible: the
 * context test comes before any per-CPU read. The pool allocates, so it
 * is alive. Notrace; reaches no function ppcoal hooks (sprint_symbol() and
 * the lock are traceable, but not ours), and calls sprint_symbol() and the
 * table lock, once per new pool and NAPI.
 */
void notrace ppc_owner_alloc_cb(unsigned long ip, unsigned long parent_ip,
				struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct page_pool *pool = (void *)ppc_fregs_arg0(fregs);
	struct ppc_own_bucket *b;
	unsigned long napi, old;
	int i;

	/*
	 * Interrupts off: something nested in the poll (netpoll), not the
	 * poll's own allocation (as ppc_direct_ok() refuses its frees).
	 */
	if (!in_softirq() || in_hardirq() || in_nmi() || irqs_disabled())
		return;
	napi = this_cpu_read(ppc_polling.napi);
	if (!napi)
		return;
	b = ppc_bucket((unsigned long)pool);
	i = ppc_own_find(b, (unsigned long)pool);
	/*
	 * Only the pools the free path wants (ppc_own_want()) are learned:
	 * any other pool allocating now would take a slot for good with a
	 * verdict nothing reads (issue 36.8: a 6.12 pool the kernel places,
	 * a driver nobody audited, a pool never freed inside a poll).
	 */
	if (i < 0)
		return;
	old = READ_ONCE(b->owner[i]);
	if (old == napi || (old && old <= PPC_OWN_VERDICT))
		return;	/* nothing new (a second NAPI: shared) */
	/*
	 * The audited poll first: only an audited driver's NAPI is read
	 * further, by its row's rule (the backlog NAPI's process_backlog() is
	 * built in, never audited, and has no device).
	 */
	if (ppc_pool_placed(pool) ||
	    !ppc_own_ok(ppc_poll_row((void *)napi), pool, (void *)napi))
		napi = PPC_OWN_NEVER;
	ppc_own_learn((unsigned long)pool, napi);
}

/**
 * ppc_owner_poll_cb() - ftrace callback on __napi_poll() entry
 * @ip: traced function
 * @parent_ip: its caller
 * @op: our ftrace_ops
 * @fregs: arguments (the napi_struct first)
 *
 * This CPU polls that NAPI from now on. __napi_poll() always runs with
 * bottom halves disabled (net_rx_action() or a NAPI thread). Notrace,
 * calls nothing traced.
 */
void notrace ppc_owner_poll_cb(unsigned long ip, unsigned long parent_ip,
			       struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct napi_struct *napi = (void *)ppc_fregs_arg0(fregs);
	struct ppc_poll_mark *m;

	if (!in_softirq() || in_hardirq() || in_nmi())
		return;
	m = this_cpu_ptr(&ppc_polling);
	/*
	 * Not scheduled: __napi_poll() skips ->poll() and fires no tracepoint
	 * to end the mark. The bit cannot change meanwhile: the caller holds
	 * the NAPI's netpoll lock, the only other poller.
	 */
	if (!test_bit(NAPI_STATE_SCHED, &napi->state)) {
		WRITE_ONCE(m->napi, 0);
		return;
	}
	m->row_napi = 0;	/* its row is looked up again, if needed */
	WRITE_ONCE(m->napi, (unsigned long)napi);
	ppc_count(RC_POLLS);
}

/*
 * Probe on the napi:napi_poll tracepoint, which __napi_poll() fires right
 * after ->poll() returns (net/core/dev.c:6648 in 6.1, :6953 in 6.12):
 * the mark ends there. What __napi_poll() still does after it when the
 * whole budget was used (flush GRO, deliver the batched list) runs
 * unmarked and uses the ring: a little lost, nothing unsafe, and no rule
 * about when a NAPI leaves this CPU to get right. Busy polling and netpoll
 * fire the tracepoint for a NAPI that is not this CPU's mark: ignored.
 */
static void notrace ppc_owner_tp(void *data, struct napi_struct *napi,
				 int work, int budget)
{
	struct ppc_poll_mark *m = this_cpu_ptr(&ppc_polling);

	if (READ_ONCE(m->napi) == (unsigned long)napi)
		WRITE_ONCE(m->napi, 0);
}

/**
 * ppc_owner_tp_register() - attach ppc_owner_tp() to napi:napi_poll
 *
 * Return: 0 or a negative errno.
 */
int ppc_owner_tp_register(void)
{
	return register_trace_napi_poll(ppc_owner_tp, NULL);
}

/**
 * ppc_owner_tp_unregister() - detach it and wait until no CPU runs it
 */
void ppc_owner_tp_unregister(void)
{
	unregister_trace_napi_poll(ppc_owner_tp, NULL);
	tracepoint_synchronize_unregister();
}

/*
 * The poll marks of "on". With recycle_wrap (the default), ppc_wrap
 * (ppcoal_owner_wrap.S) wraps each live audited row's poll function, as
 * an ftrace direct call attached while "on" and following the driver's
 * module in and out: only those polls are marked, and no other NAPI runs
 * an instruction of ppcoal's. Where a wrapper cannot be used
 * (recycle_wrap=0; drivers an expert added, whose poll functions nobody
 * named; a function another direct-call user holds, such as a BPF
 * trampoline), the __napi_poll tracker (arm TRACK: the POLL_ENTER
 * callback and the napi:napi_poll tracepoint) marks every poll, as
 * before. Both may run at once: the wrapper saves and restores what the
 * tracker set.
 */
static bool recycle_wrap = true;
module_param(recycle_wrap, bool, 0444);
MODULE_PARM_DESC(recycle_wrap,
		 "load-time: with recycle=on, mark the polls of the audited drivers alone, with a wrapper attached as an ftrace direct call to each of their poll functions (1: while it is attached, a BPF fentry/fexit program or a livepatch on that function is refused), or every NAPI poll of the machine with the __napi_poll tracker (0: costs every NAPI about 70 instructions a poll) (default 1)");

/* __napi_poll()'s text: ppc_wrap marks only the polls it makes. */
unsigned long ppc_napi_poll_start, ppc_napi_poll_size;

struct ppc_wrap_hook {
	unsigned long addr;
	bool attached;
	bool stuck;		/* left live: the module is pinned */
	struct ftrace_ops ops;
};

static struct ppc_wrap_hook ppc_wraps[ARRAY_SIZE(ppc_audited)];
static bool ppc_marking;	/* "on" marks polls (under ppc_lock) */
static bool ppc_wrapping;	/* ... with wrappers (under ppc_lock) */
static char ppc_track_why[128];	/* why the tracker marks (under ppc_lock) */

/* Fall back to the tracker for @why, if it is not marking already. */
static int ppc_track(const char *why)
{
	int ret;

	if (ppc_track_why[0])
		return 0;
	ret = ppc_path_arm(PPC_PATH_RECYCLE, PPC_ARM_TRACK, true);
	if (ret) {
		pr_err("recycle: the NAPI poll tracker cannot be attached (%d)\n",
		       ret);
		return ret;
	}
	strscpy(ppc_track_why, why, sizeof(ppc_track_why));
	pr_info("recycle: every NAPI poll is marked by the __napi_poll tracker: %s\n",
		why);
	return 0;
}

/*
 * Is the fentry call site of the function at @ip a call, as ftrace patches
 * it for an enabled record? On 6.12 it follows the function's ENDBR64
 * (f3 0f 1e fa; 6.12 arch/x86/include/asm/ibt.h; veth_poll's in Debian's
 * veth.ko). A module still loading, before ftrace_module_enable() (6.1.192
 * kernel/module/main.c:2656-2672), has its records disabled: a direct ops
 * registered then leaves the site a NOP.
 */
static bool ppc_site_live(unsigned long ip)
{
	static const u8 endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	u8 insn[sizeof(endbr64)];

	if (copy_from_kernel_nofault(insn, (void *)ip, sizeof(insn)))
		return false;
	if (!memcmp(insn, endbr64, sizeof(insn)) &&
	    copy_from_kernel_nofault(insn, (void *)(ip + sizeof(endbr64)), 1))
		return false;
	return insn[0] == CALL_INSN_OPCODE;
}

/* Unwrap row @i's poll function. Called with ppc_lock held. */
static int ppc_wrap_detach(int i)
{
	struct ppc_wrap_hook *w = &ppc_wraps[i];
	int ret;

	if (!w->attached)
		return 0;
	if (w->stuck)
		return -ENODEV;
	ret = ppc_direct_detach(&w->ops, (unsigned long)ppc_wrap);
	if (ret) {
		w->stuck = true;
		ppc_pin(ppc_audited[i].poll, ret);
		return ret;
	}
	w->attached = false;
	return 0;
}

/*
 * Wrap row @i's poll function if its module is loaded (-ENOENT: it is
 * not; its COMING wraps it). A failure falls back to the tracker.
 * Called with ppc_lock held.
 */
static int ppc_wrap_attach(int i)
{
	struct ppc_wrap_hook *w = &ppc_wraps[i];
	char why[sizeof(ppc_track_why)];
	bool live = false;
	int ret;

	if (w->attached || !ppc_audit_live[i])
		return 0;
	ret = ppc_resolve_symbol(ppc_audited[i].module, ppc_audited[i].poll,
				 &w->addr, NULL);
	if (ret == -ENOENT)
		return 0;
	if (!ret)
		ret = ppc_direct_attach(&w->ops, w->addr,
					(unsigned long)ppc_wrap,
					ppc_audited[i].poll, &live);
	if (!ret) {
		w->attached = true;
		if (ppc_site_live(w->addr))
			return 0;
		/*
		 * Its module is still loading: registered before its records
		 * were enabled. Undone at once (ftrace_module_enable() warns of
		 * a direct ops on a record it enables, 6.1 kernel/trace/
		 * ftrace.c:6945, and leaves the site unpatched); its COMING
		 * notification, which follows the enabling, wraps it.
		 */
		ret = ppc_wrap_detach(i);
		if (!ret)
			return 0;
	}
	if (live) {
		w->attached = true;
		w->stuck = true;
	}
	snprintf(why, sizeof(why), "%s cannot be wrapped (%d%s)",
		 ppc_audited[i].poll, ret,
		 ret == -EBUSY ? ": a BPF program or a livepatch on it?" : "");
	return ppc_track(why);
}

/* Start marking polls for "on". Called with ppc_lock held. */
static int ppc_marks_on(void)
{
	int i, ret;

	lockdep_assert_held(&ppc_lock);
	ppc_marking = true;
	ppc_track_why[0] = '\0';
	if (!recycle_wrap)
		return ppc_track("recycle_wrap=0");
	if (READ_ONCE(ppc_extra_n))
		return ppc_track("recycle_drivers: their poll functions are unknown");
	ret = ppc_resolve_symbol(NULL, "__napi_poll", &ppc_napi_poll_start,
				 &ppc_napi_poll_size);
	if (ret)
		return ppc_track("__napi_poll not found");
	ppc_wrapping = true;
	for (i = 0; i < ARRAY_SIZE(ppc_audited); i++) {
		ret = ppc_wrap_attach(i);
		if (ret)
			return ret;
	}
	return 0;
}

/* Stop marking polls. Called with ppc_lock held. */
static int ppc_marks_off(void)
{
	int i, ret, err;

	lockdep_assert_held(&ppc_lock);
	ppc_marking = false;
	ppc_wrapping = false;
	ret = ppc_path_arm(PPC_PATH_RECYCLE, PPC_ARM_TRACK, false);
	for (i = 0; i < ARRAY_SIZE(ppc_audited); i++) {
		err = ppc_wrap_detach(i);
		ret = ret ?: err;
	}
	ppc_track_why[0] = '\0';
	return ret;
}

/*
 * An audited driver's module comes or goes: while "on" marks polls with
 * wrappers, wrap its poll functions when it comes (as the engine's module
 * notifier attaches its tables' hooks), and unwrap them when it goes,
 * before free_module() releases its ftrace records (its exit has
 * unregistered its devices: none of its NAPIs polls).
 */
static int ppc_owner_module_cb(struct notifier_block *nb,
			       unsigned long action, void *data)
{
	struct module *mod = data;
	int i;

	if (action != MODULE_STATE_COMING && action != MODULE_STATE_GOING)
		return NOTIFY_DONE;
	for (i = 0; i < ARRAY_SIZE(ppc_audited); i++)
		if (!strcmp(ppc_audited[i].module, mod->name))
			break;
	if (i == ARRAY_SIZE(ppc_audited))
		return NOTIFY_DONE;
	mutex_lock(&ppc_lock);
	for (; i < ARRAY_SIZE(ppc_audited); i++) {
		if (strcmp(ppc_audited[i].module, mod->name))
			continue;
		if (action == MODULE_STATE_GOING)
			ppc_wrap_detach(i);
		else if (ppc_wrapping && !ppc_engine_dying())
			ppc_wrap_attach(i);
	}
	mutex_unlock(&ppc_lock);
	return NOTIFY_DONE;
}

static struct notifier_block ppc_owner_module_nb = {
	.notifier_call = ppc_owner_module_cb,
};

static void ppc_marks_init(void)
{
	/* ppc_wrap writes the mark at offset 0 */
	BUILD_BUG_ON(offsetof(struct ppc_poll_mark, napi) != 0);
	if (ppc_wrap_counter != PPC_C_RC_POLLS) {
		pr_err("recycle: ppc_wrap counts in counter %u, not napi_polls (%u): recycle_wrap=0\n",
		       ppc_wrap_counter, PPC_C_RC_POLLS);
		recycle_wrap = false;
	}
	if (register_module_notifier(&ppc_owner_module_nb))
		recycle_wrap = false;
}

static void ppc_owner_clear(void)
{
	unsigned long flags;
	int cpu;

	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(&ppc_polling, cpu), 0,
		       sizeof(struct ppc_poll_mark));
	raw_spin_lock_irqsave(&ppc_own_lock, flags);
	memset(ppc_owners, 0, sizeof(ppc_owners));
	raw_spin_unlock_irqrestore(&ppc_own_lock, flags);
	ppc_own_changed();
	memset(ppc_rest_pool, 0, sizeof(ppc_rest_pool));
}

/*
 * Start "on" with no knowledge. Called with ppc_lock held, before the
 * tracker hooks are attached: what was known before cannot be trusted
 * (teardowns went unseen meanwhile).
 */
static void ppc_owner_reset(void)
{
	lockdep_assert_held(&ppc_lock);
	flush_work(&ppc_reclaim_work);
	ppc_owner_clear();
	/*
	 * A rest left from an earlier "on" must not delay learning now. Not
	 * _sync: the work takes ppc_lock; if it runs meanwhile it finds the
	 * state IDLE and acts on the present table.
	 */
	cancel_delayed_work(&ppc_learn_work);
	WRITE_ONCE(ppc_learn_state, PPC_LEARN_IDLE);
	clear_bit(0, &ppc_learn_req);
}

/*
 * Retire the tracker after leaving "on". Called with ppc_lock held, after
 * the mode left "on" and the tracker hooks are gone. A poll that was
 * running when the probes went away ends without its tracepoint and would
 * leave a stale "polling" mark, so every mark is cleared once no reader
 * can be using one (the free path decides in softirq: an RCU reader).
 */
static void ppc_owner_stop(void)
{
	lockdep_assert_held(&ppc_lock);
	WRITE_ONCE(ppc_learn_state, PPC_LEARN_IDLE);
	synchronize_rcu();
	flush_work(&ppc_reclaim_work);
	ppc_owner_clear();
}

/**
 * ppc_recycle_set_on() - the recycle path's set_on operation
 * @on: entering "on" (before the mode is written) or leaving it (after)
 *
 * Called with ppc_lock held. "on" needs the pool teardown hooks (arm ON)
 * and the poll marks (ppc_marks_on()); learning hooks come on demand.
 *
 * Return: 0 or a negative errno (entering only).
 */
int ppc_recycle_set_on(bool on)
{
	int ret;

	lockdep_assert_held(&ppc_lock);
	if (!on) {
		ret = ppc_path_arm(PPC_PATH_RECYCLE, PPC_ARM_LEARN, false);
		ret = ppc_marks_off() ?: ret;
		ret = ppc_path_arm(PPC_PATH_RECYCLE, PPC_ARM_ON, false) ?: ret;
		WRITE_ONCE(ppc_learn_state, PPC_LEARN_IDLE);
		if (!ret)
			ppc_owner_stop();
		return 0;
	}
	ppc_owner_reset();
	ppc_audit_say();
	ret = ppc_destroy_resolve() ?:
	      ppc_path_arm(PPC_PATH_RECYCLE, PPC_ARM_ON, true);
	if (!ret) {
		ret = ppc_marks_on();
		if (ret) {
			ppc_marks_off();
			ppc_path_arm(PPC_PATH_RECYCLE, PPC_ARM_ON, false);
		}
	}
	if (ret)
		pr_err("recycle: on needs the NAPI poll marks and the pool teardown hooks; they cannot be installed here (%d)\n",
		       ret);
	return ret;
}

static int ppc_drivers_set(const char *val, const struct kernel_param *kp)
{
	char buf[PPC_EXTRA_MAX * MODULE_NAME_LEN], *p, *w;
	char names[PPC_EXTRA_MAX][MODULE_NAME_LEN];
	int n = 0, ret = 0;

	if (strscpy(buf, val, sizeof(buf)) < 0)
		ret = -E2BIG;
	p = strim(buf);
	while (!ret && (w = strsep(&p, ",")) != NULL) {
		w = strim(w);
		if (!*w)
			continue;
		if (n == PPC_EXTRA_MAX || strlen(w) >= MODULE_NAME_LEN ||
		    w[strspn(w, "abcdefghijklmnopqrstuvwxyz0123456789_-")]) {
			ret = -EINVAL;
			break;
		}
		/*
		 * A module's name has _ where its file may have - (kbuild's
		 * KBUILD_MODNAME, 6.1 scripts/Makefile.lib:123-126:
		 * xen-netfront.ko is xen_netfront), and kallsyms names it so
		 * (ppc_napi_row()): stored, and read back, as _.
		 */
		strscpy(names[n], w, MODULE_NAME_LEN);
		strreplace(names[n++], '-', '_');
	}
	if (ret) {
		pr_err("recycle_drivers: invalid list \"%.*s\": up to %d module names, comma separated; list unchanged\n",
		       min_t(int, strcspn(val, "\n"), 64), val, PPC_EXTRA_MAX);
		return ret;
	}
	mutex_lock(&ppc_lock);
	if (ppc_path_mode(RECYCLE) == PPC_MODE_ON) {
		pr_err_ratelimited("recycle_drivers: write it while recycle is not on (owners learned under the old list would stay); list unchanged\n");
		ret = -EBUSY;
	} else {
		memcpy(ppc_extra, names, sizeof(names));
		WRITE_ONCE(ppc_extra_n, n);
		if (n) {
			/* as a dangerous module parameter does (kernel/params.c) */
			pr_warn("recycle_drivers: %d driver(s) added to the audited list at the administrator's risk: %.*s - tainting kernel\n",
				n, min_t(int, strcspn(val, "\n"), 64), val);
			add_taint(TAINT_USER, LOCKDEP_STILL_OK);
		}
	}
	mutex_unlock(&ppc_lock);
	return ret;
}

static int ppc_drivers_get(char *buf, const struct kernel_param *kp)
{
	int i, len = 0;

	for (i = 0; i < READ_ONCE(ppc_extra_n); i++)
		len += sysfs_emit_at(buf, len, "%s%s", i ? "," : "",
				     ppc_extra[i]);
	return len + sysfs_emit_at(buf, len, "\n");
}

static const struct kernel_param_ops ppc_drivers_ops = {
	.set = ppc_drivers_set,
	.get = ppc_drivers_get,
};

module_param_cb(recycle_drivers, &ppc_drivers_ops, NULL, 0644);
MODULE_PARM_DESC(recycle_drivers,
		 "experts only, taints the kernel: drivers (module names, comma separated; - is read as _, as in module names) to treat as audited for recycle=on, besides the built-in list; write while recycle is not on (default: empty)");

/**
 * ppc_owner_exit() - stop the learning work for module unload
 *
 * Called without ppc_lock, after every path is off and every hook is gone
 * (ppc_engine_exit()): a free that read "on" before the mode changed may
 * still have queued the learner or the reclaim, but nothing can queue them
 * any more, so once cancelled they never run module code again.
 */
void ppc_owner_exit(void)
{
	int i;

	unregister_module_notifier(&ppc_owner_module_nb);
	for (i = 0; i < ARRAY_SIZE(ppc_audited); i++)
		if (!ppc_wraps[i].attached)	/* else stuck: pinned */
			ftrace_free_filter(&ppc_wraps[i].ops);
	cancel_delayed_work_sync(&ppc_learn_work);
	cancel_work_sync(&ppc_reclaim_work);
}

/**
 * ppc_owner_show() - owner table summary for the stats file
 * @m: the stats file
 */
void ppc_owner_show(struct seq_file *m)
{
	unsigned long key, own;
	int b, i, known = 0, unknown = 0, shared = 0, never = 0;

	for (b = 0; b < PPC_OWN_BUCKETS; b++)
		for (i = 0; i < PPC_OWN_WAYS; i++) {
			key = READ_ONCE(ppc_owners[b].pool[i]);
			own = READ_ONCE(ppc_owners[b].owner[i]);
			if (key <= PPC_OWN_TOMB)
				continue;
			if (own == PPC_OWN_SHARED)
				shared++;
			else if (own == PPC_OWN_NEVER)
				never++;
			else if (own)
				known++;
			else
				unknown++;
		}
	seq_printf(m, "recycle.tracked_known: %d\n", known);
	seq_printf(m, "recycle.tracked_unknown: %d\n", unknown);
	seq_printf(m, "recycle.tracked_shared: %d\n", shared);
	seq_printf(m, "recycle.learning: %s\n",
		   READ_ONCE(ppc_learn_state) == PPC_LEARN_ARMED ? "armed" :
		   "idle");
	seq_printf(m, "recycle.tracked_not_eligible: %d\n", never);
	mutex_lock(&ppc_lock);
	seq_puts(m, "recycle.poll_marks:");
	if (!ppc_marking)
		seq_puts(m, " none (recycle is not on)");
	for (i = 0, b = 0; ppc_marking && i < ARRAY_SIZE(ppc_audited); i++)
		if (ppc_wraps[i].attached)
			seq_printf(m, "%s%s", b++ ? "," : " wrapper on ",
				   ppc_audited[i].poll);
	if (ppc_marking && ppc_track_why[0])
		seq_printf(m, "%s tracker on every poll (%s)", b ? ";" : "",
			   ppc_track_why);
	else if (ppc_marking && !b)
		seq_puts(m, " wrapper on none");
	seq_puts(m, "\n");
	mutex_unlock(&ppc_lock);
	seq_puts(m, "recycle.audited_drivers:");
	for (i = 0; i < ARRAY_SIZE(ppc_audited); i++)
		seq_printf(m, "%s%s:%s", i ? "," : " ", ppc_audited[i].module,
			   ppc_audited[i].poll);
	for (i = 0; i < READ_ONCE(ppc_extra_n); i++)
		seq_printf(m, "%s%s(added)",
			   ARRAY_SIZE(ppc_audited) || i ? "," : " ",
			   ppc_extra[i]);
	seq_puts(m, "\n");
	/* the rows this kernel may not use, and why */
	seq_puts(m, "recycle.audited_off:");
	for (i = 0, b = 0; i < ARRAY_SIZE(ppc_audited); i++) {
		if (ppc_audit_live[i] || ppc_audit_repeat[i])
			continue;
		seq_printf(m, "%s%s (%s)", b++ ? "; " : " ",
			   ppc_audited[i].module, ppc_audit_why[i]);
	}
	seq_puts(m, b ? "\n" : " none\n");
}
