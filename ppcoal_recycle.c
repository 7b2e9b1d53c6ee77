// SPDX-License-Identifier: GPL-2.0
/*
 * ppcoal shadow of the skb page-pool free: page_pool_return_skb_page()
 * (6.1, net/core/page_pool.c:915) and napi_pp_put_page() (6.12,
 * net/core/skbuff.c:1027). Both are called for every page of a
 * pp_recycle skb when it is freed.
 *
 * observe: the stock decision, counted. 6.1 always puts with
 * allow_direct = false (the locked ptr_ring); 6.12 then applies its own
 * NAPI-local rule (page_pool_napi_local(), net/core/page_pool.c:887), which
 * the shadow evaluates too, to count it.
 *
 * on: the page goes straight into the pool's lockless cache when the free
 * runs in softirq on the CPU that is polling the NAPI that owns the pool,
 * the rule upstream reached in 6.6 (commit 8c48eea3adf3, "page_pool: allow
 * caching from safely localized NAPI") and 6.10 (pool->p.napi with
 * napi->list_owner). 6.1 knows neither owner nor poller, so ppcoal learns
 * both:
 *  - which NAPI each CPU is polling now: marked at __napi_poll() entry
 *    (ftrace), the only caller of ->poll from net_rx_action() and threaded
 *    NAPI, unmarked by the napi:napi_poll tracepoint after ->poll returns
 *    (see ppc_owner_tp()); two cheap probes per poll, no kretprobe.
 *    Busy polling calls ->poll directly: unseen, so those frees use the
 *    ring. 6.6+ kernels record it themselves (napi->list_owner, the CPU
 *    a scheduled NAPI is polled on): there the probes serve only the
 *    learning below, armed with it, and the free path asks list_owner,
 *    as upstream does for pools that name their NAPI;
 *  - which NAPI owns a pool: the one polling when the pool allocates.
 *    The allocation probe is armed only while a pool the free path met is
 *    unknown, and removed once it is learned (at most PPC_LEARN_MAX).
 *    A pool seen allocating under two NAPIs is shared: never direct.
 *    An owner is forgotten when its pool is destroyed or its NAPI deleted,
 *    so no entry outlives either. Drivers destroy a pool only after its
 *    NAPI is disabled (the contract page_pool_disable_direct_recycling()
 *    relies on upstream), so no free in that poll races the forgetting.
 * 6.12 pools that name their NAPI (page_pool_params.napi) or CPU are left
 * to the kernel's own rule; the tracker serves the others (veth, vmxnet3,
 * xen-netfront never set .napi).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hash.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/workqueue.h>
#include <trace/events/napi.h>

#include "ppcoal.h"

/*
 * The owner table: PPC_OWN_BUCKETS buckets of PPC_OWN_WAYS slots, a bucket
 * per hash of the pool pointer, keys of a bucket in one cache line. Pool
 * pointers in it are only compared; owners are dereferenced only by
 * ppc_polled_here() on 6.6+. A slot's key is 0 (free), a
 * pool, or PPC_OWN_TOMB (freed, reusable after an RCU grace period, so that
 * a reader that matched the old key never sees a new pool's owner). Its
 * owner is 0 (unknown), a napi_struct pointer or PPC_OWN_SHARED.
 */
#define PPC_OWN_SHIFT	5
#define PPC_OWN_BUCKETS	BIT(PPC_OWN_SHIFT)
#define PPC_OWN_WAYS	8
#define PPC_OWN_TOMB	1UL
#define PPC_OWN_SHARED	1UL
/* How long the allocation probe stays armed, and how long it rests after. */
#define PPC_LEARN_MAX	(2 * HZ)
#define PPC_LEARN_REST	(10 * HZ)

struct ppc_own_bucket {
	unsigned long pool[PPC_OWN_WAYS];
	unsigned long owner[PPC_OWN_WAYS];
} ____cacheline_aligned;

static struct ppc_own_bucket ppc_owners[PPC_OWN_BUCKETS];
/*
 * Bumped after any owner is dropped or turns shared, so that per-CPU
 * lookup caches die; atomic, as two CPUs may forget at once.
 */
static atomic_long_t ppc_own_gen;

static void notrace ppc_own_changed(void)
{
	smp_mb__before_atomic();	/* the table change, then the bump */
	atomic_long_inc(&ppc_own_gen);
}

static void ppc_reclaim_fn(struct work_struct *work);
static DECLARE_WORK(ppc_reclaim_work, ppc_reclaim_fn);

/* Retire the slot of @key, whose owner is already cleared. */
static void notrace ppc_own_retire(unsigned long *key)
{
	smp_wmb();	/* owner gone before the key changes */
	WRITE_ONCE(*key, PPC_OWN_TOMB);
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

/*
 * The NAPI this CPU polls now (0: none): set at __napi_poll() entry,
 * dropped when ->poll() returns (see ppc_owner_tp()). With it, a one-entry
 * cache of the owner table for the pool last looked up here, valid while
 * ppc_own_gen is unchanged (every forgetting bumps it).
 */
struct ppc_poll_mark {
	unsigned long napi;
	unsigned long pool, owner, gen;
};

static DEFINE_PER_CPU(struct ppc_poll_mark, ppc_polling);

/* Learning on demand: requested (bit 0), state (see ppc_learn_fn()). */
enum { PPC_LEARN_IDLE, PPC_LEARN_ARMED };
static unsigned long ppc_learn_req;
static int ppc_learn_state;
static unsigned long ppc_learn_since;
static void ppc_learn_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(ppc_learn_work, ppc_learn_fn);
static __always_inline struct ppc_own_bucket *ppc_bucket(unsigned long pool)
{
	return &ppc_owners[hash_long(pool, PPC_OWN_SHIFT)];
}

static __always_inline int ppc_own_find(struct ppc_own_bucket *b,
					unsigned long pool)
{
	int i;

	for (i = 0; i < PPC_OWN_WAYS; i++)
		if (READ_ONCE(b->pool[i]) == pool)
			return i;
	return -1;
}

/* The slot of @pool, claimed if it has none; -1 when the bucket is full. */
static int notrace ppc_own_claim(struct ppc_own_bucket *b, unsigned long pool)
{
	int i;

again:
	i = ppc_own_find(b, pool);
	if (i >= 0)
		return i;
	for (i = 0; i < PPC_OWN_WAYS; i++) {
		if (READ_ONCE(b->pool[i]))
			continue;
		if (!cmpxchg(&b->pool[i], 0, pool))
			return i;
		goto again;	/* somebody took it: maybe for @pool */
	}
	ppc_count(RC_TABLE_FULL);
	return -1;
}

/* The owner of @pool: 0 when unknown. Hot path: one bucket, no writes. */
static __always_inline unsigned long ppc_own_lookup(unsigned long pool)
{
	struct ppc_own_bucket *b = ppc_bucket(pool);
	int i = ppc_own_find(b, pool);

	return i < 0 ? 0 : READ_ONCE(b->owner[i]);
}

/* Record that @pool allocated while this CPU polled @napi. */
static void notrace ppc_own_learn(unsigned long pool, unsigned long napi)
{
	struct ppc_own_bucket *b = ppc_bucket(pool);
	unsigned long old;
	int i;

	i = ppc_own_find(b, pool);
	if (i >= 0) {
		old = READ_ONCE(b->owner[i]);
		if (old == napi || old == PPC_OWN_SHARED)
			return;
	} else {
		i = ppc_own_claim(b, pool);
		if (i < 0)
			return;
	}
	old = cmpxchg(&b->owner[i], 0, napi);
	if (!old) {
		ppc_count(RC_LEARNED);
	} else if (old != napi && old != PPC_OWN_SHARED) {
		WRITE_ONCE(b->owner[i], PPC_OWN_SHARED);
		ppc_own_changed();
		ppc_count(RC_SHARED);
	}
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
	bool any = false;
	unsigned long key;
	int i, r;

	for (b = ppc_owners; b < ppc_owners + PPC_OWN_BUCKETS; b++)
		for (i = 0; i < PPC_OWN_WAYS; i++) {
			key = READ_ONCE(b->pool[i]);
			if (key <= PPC_OWN_TOMB || READ_ONCE(b->owner[i]))
				continue;
			any = true;
			if (!drop || cmpxchg(&b->pool[i], key, PPC_OWN_TOMB) != key)
				continue;
			r = ppc_rest_next++ % PPC_RESTING;
			WRITE_ONCE(ppc_rest_until[r], jiffies + PPC_LEARN_REST);
			smp_wmb();	/* a new key is read with its own time */
			WRITE_ONCE(ppc_rest_pool[r], key);
		}
	if (any && drop)
		ppc_own_retired();
	return any;
}

/*
 * The free path met @pool without an owner, inside a poll: keep a slot for
 * it (so the learner knows it is wanted) and ask for the allocation probe.
 */
static void ppc_own_want(unsigned long pool)
{
	if (ppc_own_resting(pool))
		return;
	ppc_own_claim(ppc_bucket(pool), pool);
	if (READ_ONCE(ppc_learn_req) || test_and_set_bit(0, &ppc_learn_req))
		return;
	queue_delayed_work(system_wq, &ppc_learn_work, 0);
}

/*
 * Remove the learning probes. Where they include the poll tracker (6.6+),
 * a poll they cut short (its end unseen) left its mark: every mark goes,
 * now that no probe can set or read one.
 */
static void ppc_learn_disarm(void)
{
	int cpu;

	ppc_path_arm(PPC_PATH_RECYCLE, PPC_ARM_LEARN, false);
	if (!PPC_POLL_PROBES)
		for_each_possible_cpu(cpu)
			WRITE_ONCE(per_cpu_ptr(&ppc_polling, cpu)->napi, 0);
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
	if (ppc_path_mode(RECYCLE) != PPC_MODE_ON) {
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

/* Frees tombstoned slots once no reader can still hold their old key. */
static void ppc_reclaim_fn(struct work_struct *work)
{
	int b, i;

	synchronize_rcu();
	for (b = 0; b < PPC_OWN_BUCKETS; b++)
		for (i = 0; i < PPC_OWN_WAYS; i++)
			cmpxchg(&ppc_owners[b].pool[i], PPC_OWN_TOMB, 0);
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
	unsigned long pool = ppc_fregs_arg0(fregs);
	struct ppc_own_bucket *b;
	bool hit = false;
	int i;

	if (!pool)
		return;
	b = ppc_bucket(pool);
	for (i = 0; i < PPC_OWN_WAYS; i++) {
		if (READ_ONCE(b->pool[i]) != pool)
			continue;
		WRITE_ONCE(b->owner[i], 0);
		ppc_own_retire(&b->pool[i]);
		hit = true;
	}
	if (hit) {
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
 * nothing traced but queue_work_on().
 */
void notrace ppc_owner_napi_del_cb(unsigned long ip, unsigned long parent_ip,
				   struct ftrace_ops *op,
				   struct ftrace_regs *fregs)
{
	unsigned long napi = ppc_fregs_arg0(fregs);
	struct ppc_own_bucket *b;
	bool hit = false;
	int i, cpu;

	if (!napi)
		return;
	/* Disabled before deletion, so no CPU polls it: no mark can be live. */
	for_each_possible_cpu(cpu)
		cmpxchg(per_cpu_ptr(&ppc_polling.napi, cpu), napi, 0);
	for (b = ppc_owners; b < ppc_owners + PPC_OWN_BUCKETS; b++)
		for (i = 0; i < PPC_OWN_WAYS; i++) {
			if (READ_ONCE(b->owner[i]) != napi ||
			    cmpxchg(&b->owner[i], napi, 0) != napi)
				continue;
			ppc_own_retire(&b->pool[i]);
			ppc_count(RC_FORGOT_NAPI);
			hit = true;
		}
	if (hit)
		ppc_own_retired();
}

/**
 * ppc_owner_alloc_cb() - ftrace callback on the page_pool allocators
 * @ip: traced function
 * @parent_ip: its caller
 * @op: our ftrace_ops
 * @fregs: arguments (the pool first)
 *
 * Armed only while owners are being learned. May run preemptible: the
 * context test comes before any per-CPU read. Notrace, calls nothing.
 */
void notrace ppc_owner_alloc_cb(unsigned long ip, unsigned long parent_ip,
				struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	unsigned long napi;

	if (!in_softirq() || in_hardirq() || in_nmi())
		return;
	napi = this_cpu_read(ppc_polling.napi);
	if (napi)
		ppc_own_learn(ppc_fregs_arg0(fregs), napi);
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
	WRITE_ONCE(m->napi, (unsigned long)napi);
	ppc_count(RC_POLLS);
}

/*
 * Probe on the napi:napi_poll tracepoint, which __napi_poll() fires right
 * after ->poll() returns (net/core/dev.c:6647 in 6.1, the same in 6.12):
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

static void ppc_owner_clear(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(&ppc_polling, cpu), 0,
		       sizeof(struct ppc_poll_mark));
	memset(ppc_owners, 0, sizeof(ppc_owners));
	ppc_own_changed();
	memset(ppc_rest_pool, 0, sizeof(ppc_rest_pool));
}

/**
 * ppc_owner_reset() - start "on" with no knowledge
 *
 * Called with ppc_lock held, before the tracker hooks are attached: what
 * was known before cannot be trusted (teardowns went unseen meanwhile).
 */
void ppc_owner_reset(void)
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

/**
 * ppc_owner_stop() - retire the tracker after leaving "on"
 *
 * Called with ppc_lock held, after the mode left "on" and the tracker
 * hooks are gone. A poll that was running when the probes went away
 * ends without its tracepoint and would leave a stale "polling" mark, so
 * every mark is cleared once no reader can be using one.
 */
void ppc_owner_stop(void)
{
	lockdep_assert_held(&ppc_lock);
	WRITE_ONCE(ppc_learn_state, PPC_LEARN_IDLE);
	synchronize_rcu();
	flush_work(&ppc_reclaim_work);
	ppc_owner_clear();
}

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
	int b, i, known = 0, unknown = 0, shared = 0;

	for (b = 0; b < PPC_OWN_BUCKETS; b++)
		for (i = 0; i < PPC_OWN_WAYS; i++) {
			key = READ_ONCE(ppc_owners[b].pool[i]);
			own = READ_ONCE(ppc_owners[b].owner[i]);
			if (key <= PPC_OWN_TOMB)
				continue;
			if (own == PPC_OWN_SHARED)
				shared++;
			else if (own)
				known++;
			else
				unknown++;
		}
	seq_printf(m, "recycle.tracked_known %d\n", known);
	seq_printf(m, "recycle.tracked_unknown %d\n", unknown);
	seq_printf(m, "recycle.tracked_shared %d\n", shared);
	seq_printf(m, "recycle.learning %s\n",
		   READ_ONCE(ppc_learn_state) == PPC_LEARN_ARMED ? "armed" :
		   "idle");
	seq_printf(m, "recycle.polled_here %s\n",
		   PPC_POLL_PROBES ? "poll_probes" : "list_owner");
}

/*
 * Is the NAPI @owner being polled on this CPU now? Softirq, no preemption.
 */
static __always_inline bool ppc_polled_here(struct ppc_poll_mark *m,
					    unsigned long owner)
{
#ifdef PPC_HAVE_NAPI_LIST_OWNER
	/*
	 * 6.6+ records which CPU a scheduled NAPI is polled on: list_owner,
	 * set by ____napi_schedule() and -1 from napi_complete_done() on
	 * (6.12 net/core/dev.c:4715 and :6448), the fact
	 * page_pool_napi_local() (net/core/page_pool.c:911) uses for pools
	 * that name their NAPI; ppcoal uses it for the owner it learned, so
	 * no probe runs per poll. The owner is alive: __netif_napi_del()
	 * forgets it (ppc_owner_napi_del_cb(), which also voids lookup
	 * caches), and the NAPI is freed only after an RCU grace period
	 * (netif_napi_del() = __netif_napi_del() + synchronize_net()), which
	 * waits for this softirq.
	 */
	return READ_ONCE(((struct napi_struct *)owner)->list_owner) ==
	       raw_smp_processor_id();
#else
	return owner == READ_ONCE(m->napi);
#endif
}

/*
 * "on": may this page go straight into @pool's cache? Counts the reason
 * when not. @pool is alive: the page being freed holds it. @placed: the
 * kernel's own rule owns this pool (6.12 .napi or cpuid) and said no.
 */
static bool ppc_direct_ok(unsigned long pool, bool placed)
{
	struct ppc_poll_mark *m;
	unsigned long owner, gen;

	if (IS_ENABLED(CONFIG_PREEMPT_RT) || !in_softirq() || in_hardirq() ||
	    in_nmi()) {
		ppc_count(RC_DENY_NOT_SOFTIRQ);
		return false;
	}
	m = this_cpu_ptr(&ppc_polling);
	/* 6.1: in no poll, whoever owns the pool is not polled here. */
	if (placed || (PPC_POLL_PROBES && !READ_ONCE(m->napi))) {
		ppc_count(RC_DENY_ELSEWHERE);
		return false;
	}
	gen = atomic_long_read(&ppc_own_gen);
	smp_rmb();	/* pairs with ppc_own_changed() */
	if (m->pool == pool && m->gen == gen) {
		owner = m->owner;
	} else {
		owner = ppc_own_lookup(pool);
		if (owner > PPC_OWN_SHARED) {
			m->pool = pool;
			m->owner = owner;
			m->gen = gen;
		}
	}
	if (!owner) {
		ppc_count(RC_DENY_UNKNOWN);
		/*
		 * Learn pools met where their owner could be polled: in a poll
		 * (6.1, the test above) or in a softirq being served (6.6+),
		 * not with bottom halves merely disabled, where a free of a
		 * pool that is never learnable would keep the learner busy.
		 */
		if (PPC_POLL_PROBES || in_serving_softirq())
			ppc_own_want(pool);
		return false;
	}
	if (owner == PPC_OWN_SHARED) {
		ppc_count(RC_DENY_SHARED);
		return false;
	}
	if (!ppc_polled_here(m, owner)) {
		ppc_count(RC_DENY_ELSEWHERE);
		return false;
	}
	return true;
}

#ifdef PPC_HAVE_NAPI_PP_PUT_PAGE
/* Mirror of page_pool_napi_local() (static in page_pool.c), for counting. */
static bool ppc_kernel_napi_local(const struct page_pool *pool)
{
	const struct napi_struct *napi;
	u32 cpu;

	if (IS_ENABLED(CONFIG_PREEMPT_RT) || !in_softirq())
		return false;
	cpu = raw_smp_processor_id();
	if (READ_ONCE(pool->cpuid) == cpu)
		return true;
	napi = READ_ONCE(pool->p.napi);
	return napi && READ_ONCE(napi->list_owner) == cpu;
}

static bool ppc_put(netmem_ref netmem)
{
	struct page_pool *pool;
	bool direct = false;
	bool placed;

	netmem = netmem_compound_head(netmem);
	/* pp_magic test with Debian 6.12's DMA-index bits masked. */
	if (unlikely((__netmem_clear_lsb(netmem)->pp_magic & PP_MAGIC_MASK) !=
		     PP_SIGNATURE)) {
		ppc_count(RC_NOT_PP);
		return false;
	}
	pool = netmem_get_pp(netmem);
	/* Only a pool with .napi or a cpuid can meet the kernel's own rule. */
	placed = READ_ONCE(pool->p.napi) || READ_ONCE(pool->cpuid) >= 0;
	if (placed && ppc_kernel_napi_local(pool)) {
		ppc_count(RC_UPSTREAM_DIRECT);
	} else if (ppc_path_mode(RECYCLE) == PPC_MODE_ON &&
		   ppc_direct_ok((unsigned long)pool, placed)) {
		/* A pool upstream cannot place: ppcoal's tracker can. */
		direct = true;
		ppc_count(RC_DIRECT);
	} else {
		ppc_count(RC_RING);
	}
	page_pool_put_full_netmem(pool, netmem, direct);
	return true;
}

/**
 * ppc_recycle_put() - replacement for napi_pp_put_page()
 * @netmem: a page (or net_iov) of a pp_recycle skb being freed
 *
 * Return: true when the page belonged to a page pool and went back to it.
 */
bool ppc_recycle_put(netmem_ref netmem)
{
	bool ret;

	ppc_count(RC_CALLS);
	ret = ppc_put(netmem);
	ppc_leave(RECYCLE);
	return ret;
}
#else
static bool ppc_put(struct page *page)
{
	struct page_pool *pool;
	bool direct = false;

	page = compound_head(page);
	/* Bits 0 and 1 of pp_magic are compound-head and pfmemalloc marks. */
	if (unlikely((page->pp_magic & ~0x3UL) != PP_SIGNATURE)) {
		ppc_count(RC_NOT_PP);
		return false;
	}
	pool = page->pp;
	if (ppc_path_mode(RECYCLE) == PPC_MODE_ON &&
	    ppc_direct_ok((unsigned long)pool, false)) {
		direct = true;
		ppc_count(RC_DIRECT);
	} else {
		ppc_count(RC_RING);
	}
	/*
	 * 6.1's __page_pool_put_page() (net/core/page_pool.c:599) caches the
	 * page only with allow_direct && in_softirq() and a cache with room;
	 * otherwise it still goes to the ring.
	 */
	page_pool_put_full_page(pool, page, direct);
	return true;
}

/**
 * ppc_recycle_put() - replacement for page_pool_return_skb_page()
 * @page: a page of a pp_recycle skb being freed
 *
 * Return: true when the page belonged to a page pool and went back to it.
 */
bool ppc_recycle_put(struct page *page)
{
	bool ret;

	ppc_count(RC_CALLS);
	ret = ppc_put(page);
	ppc_leave(RECYCLE);
	return ret;
}
#endif
