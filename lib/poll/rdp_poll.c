/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The poller: one CQ per device, one inbox, one busy list per lcore. The loop follows
 * DPDK's l2fwd shape: burst, dispatch, and nothing else on an idle pass.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <rte_lcore.h>
#include <rte_pause.h>

#include "rdp_clock.h"
#include "rdp_hop.h"
#include "rdp_mem.h"
#include "rdp_poll.h"

RTE_LOG_REGISTER(rdp_poll_logtype, rdp.poll, INFO);
#define POLL_LOG(level, fmt, ...) RDP_LOG(level, rdp_poll_logtype, "poll", fmt, ##__VA_ARGS__)

#define MAX_BURST 256
#define STRAYS_LOGGED_MAX 8
#define INBOX_BURST 64

/* Counters have one writer, the poller; telemetry reads them (RDP_STAT_ADD). */

/* One CQ of the poller (one per device). */
struct poll_cq {
	struct rdp_cq *cq;
	bool error_logged;
	/* shared with other threads */
	uint32_t used __rte_cache_aligned; /* reserved entries (atomic) */
	uint32_t cap;          /* current capacity (atomic) */
	uint32_t max_size;
	uint32_t resize_req;   /* wanted capacity, 0 when none (atomic) */
	int resize_ret;        /* result of the last resize (atomic) */
};

struct rdp_poller {
	struct rdp_poller_head head; /* first: the inline busy-list helpers use it */
	const struct rdp_poll_ops *ops;
	void **slots;
	uint16_t burst;
	uint32_t idle_sleep_us;
	unsigned int lcore_id;
	unsigned int nb_cqs;
	unsigned int strays_logged;     /* the first few completions for an empty slot */
	struct rdp_poll_stats stats;
	rdp_poll_hook_fn hook;          /* the application's, NULL: none (atomic) */
	void *hook_arg;

	/* shared with other threads, kept off the hot lines */
	struct rte_ring *inbox __rte_cache_aligned;
	struct rte_ring *free_slots;
	uint32_t max_slots;
	bool running;          /* inside rdp_poller_run (atomic) */
	bool stop;             /* ask rdp_poller_run to return (atomic) */
	size_t inbox_mem;
	size_t slots_mem;
	struct poll_cq cqs[RDP_POLL_MAX_CQS];
};

_Static_assert(offsetof(struct rdp_poller, head) == 0, "busy-list head must come first");

static struct rte_ring *
ring_make(const char *name, uint32_t count, unsigned int flags, int socket, size_t *mem)
{
	ssize_t size = rte_ring_get_memsize(count);
	struct rte_ring *r;

	if (size < 0)
		return NULL;
	r = rdp_mem_zalloc(size, socket);
	if (r == NULL)
		return NULL;
	if (rte_ring_init(r, name, count, flags) != 0) {
		rdp_mem_free(r, size);
		return NULL;
	}
	*mem = size;
	return r;
}

struct rdp_poller *
rdp_poller_create(const struct rdp_poller_params *prm)
{
	size_t slot_ring_mem = 0;
	struct rdp_poller *p;
	char name[RTE_RING_NAMESIZE];
	uint32_t i;

	bool sizes = prm->nb_cqs > 0 && prm->nb_cqs <= RDP_POLL_MAX_CQS;

	for (i = 0; sizes && i < prm->nb_cqs; i++)
		sizes = prm->cq[i].cq_size > 0 && prm->cq[i].dev != NULL;
	if (prm->poll_burst == 0 || prm->poll_burst > MAX_BURST || prm->max_slots == 0 ||
	    prm->max_slots > RDP_POLL_MAX_SLOTS || !rte_is_power_of_2(prm->inbox_size) ||
	    !sizes || prm->ops == NULL) {
		rdp_err_set(EINVAL, "poller on lcore %u: bad parameters (poll_burst %u of 1..%d, "
			    "max_slots %u, inbox %u must be a power of two, %u CQs of 1..%d, each "
			    "with a device and a size)", prm->lcore_id, prm->poll_burst, MAX_BURST,
			    prm->max_slots, prm->inbox_size, prm->nb_cqs, RDP_POLL_MAX_CQS);
		return NULL;
	}
	p = rdp_mem_zalloc(sizeof(*p), prm->socket);
	if (p == NULL) {
		rdp_err_set(ENOMEM, "poller on lcore %u: out of memory", prm->lcore_id);
		return NULL;
	}
	p->ops = prm->ops;
	p->burst = prm->poll_burst;
	p->idle_sleep_us = prm->idle_sleep_us;
	p->lcore_id = prm->lcore_id;
	p->max_slots = prm->max_slots;
	snprintf(name, sizeof(name), "rdp_inbox_%u", prm->lcore_id);
	p->inbox = ring_make(name, prm->inbox_size, RING_F_SC_DEQ, prm->socket, &p->inbox_mem);
	snprintf(name, sizeof(name), "rdp_slots_%u", prm->lcore_id);
	p->free_slots = ring_make(name, rte_align32pow2(prm->max_slots + 1), 0, prm->socket,
				  &slot_ring_mem);
	p->slots_mem = prm->max_slots * sizeof(void *);
	p->slots = rdp_mem_zalloc(p->slots_mem, prm->socket);
	if (p->inbox == NULL || p->free_slots == NULL || p->slots == NULL) {
		rdp_err_set(ENOMEM, "poller on lcore %u: cannot allocate its rings", prm->lcore_id);
		goto fail;
	}
	for (i = 0; i < prm->max_slots; i++)
		rte_ring_enqueue(p->free_slots, (void *)(uintptr_t)(i + 1));
	for (i = 0; i < prm->nb_cqs; i++) {
		const struct rdp_poller_cq_params *c = &prm->cq[i];
		struct poll_cq *q = &p->cqs[i];

		q->cq = rdp_cq_create(c->dev, c->cq_size, prm->socket);
		if (q->cq == NULL) {
			rdp_err_set(rte_errno, "poller on lcore %u: cannot create CQ %u (of "
				    "device %u) of %u entries: %s", prm->lcore_id, i, i,
				    c->cq_size, rdp_err_msg());
			goto fail;
		}
		q->cap = c->cq_size;
		q->max_size = RTE_MAX(c->max_cq_size, c->cq_size);
		p->nb_cqs = i + 1;
	}
	return p;
fail:
	for (i = 0; i < p->nb_cqs; i++)
		rdp_cq_destroy(p->cqs[i].cq);
	rdp_mem_free(p->slots, p->slots_mem);
	rdp_mem_free(p->free_slots, slot_ring_mem);
	rdp_mem_free(p->inbox, p->inbox_mem);
	rdp_mem_free(p, sizeof(*p));
	return NULL;
}

int
rdp_poller_destroy(struct rdp_poller *p)
{
	unsigned int i;
	uint32_t used;
	int ret;

	if (p == NULL)
		return 0;
	/* acquire: everything the loop did happens before what is freed here */
	if (__atomic_load_n(&p->running, __ATOMIC_ACQUIRE))
		return rdp_err_set(EBUSY, "poller on lcore %u is still running", p->lcore_id);
	used = p->max_slots - rte_ring_count(p->free_slots);
	if (used > 0)
		return rdp_err_set(EBUSY, "poller on lcore %u still has %u endpoints",
				   p->lcore_id, used);
	for (i = 0; i < p->nb_cqs; i++) {
		if (p->cqs[i].cq == NULL)
			continue;
		ret = rdp_cq_destroy(p->cqs[i].cq);
		if (ret < 0)
			return ret;
		p->cqs[i].cq = NULL;
	}
	rdp_mem_free(p->free_slots,
		     rte_ring_get_memsize(rte_ring_get_size(p->free_slots)));
	rdp_mem_free(p->slots, p->slots_mem);
	rdp_mem_free(p->inbox, p->inbox_mem);
	rdp_mem_free(p, sizeof(*p));
	return 0;
}

/* Grow a CQ on the poller's thread when admission asked for it. */
static void
serve_resize(struct rdp_poller *p)
{
	unsigned int i;

	for (i = 0; i < p->nb_cqs; i++) {
		struct poll_cq *q = &p->cqs[i];
		uint32_t want = __atomic_load_n(&q->resize_req, __ATOMIC_ACQUIRE);
		int ret;

		if (likely(want == 0))
			continue;
		ret = rdp_cq_resize(q->cq, want);
		if (ret == 0) {
			__atomic_store_n(&q->cap, want, __ATOMIC_RELEASE);
			RDP_STAT_ADD(p->stats.cq_resizes, 1);
			POLL_LOG(INFO, "lcore %u: CQ %u grown to %u entries", p->lcore_id, i,
				 want);
		}
		__atomic_store_n(&q->resize_ret, ret, __ATOMIC_RELAXED);
		__atomic_store_n(&q->resize_req, 0, __ATOMIC_RELEASE);
	}
}

/* End of the run of completions from @p i on that belong to one slot. */
static inline int
slot_run_end(const struct rdp_wc *wc, int i, int n)
{
	uint32_t slot = rdp_wrid_slot(wc[i].wr_id);
	int j;

	for (j = i + 1; j < n && rdp_wrid_slot(wc[j].wr_id) == slot; j++)
		;
	return j;
}

/* The client of completion @p wc, NULL for an empty or impossible slot. */
static inline void *
wc_client(const struct rdp_poller *p, const struct rdp_wc *wc)
{
	uint32_t slot = rdp_wrid_slot(wc->wr_id);

	return slot < p->max_slots ? p->slots[slot] : NULL;
}

static unsigned int
poll_cq(struct rdp_poller *p, struct poll_cq *q)
{
	struct rdp_wc wc[MAX_BURST];
	int n, i, j;

	n = rdp_poll_cq(q->cq, wc, p->burst);
	RDP_HOP_MARK_IF(n > 0, RDP_HOP_POLLED);
	if (unlikely(n < 0)) {
		RDP_STAT_ADD(p->stats.cq_errors, 1);
		if (!q->error_logged) {
			q->error_logged = true;
			POLL_LOG(ERR, "lcore %u: CQ %u in error (%d): completions were lost",
				 p->lcore_id, (unsigned int)(q - p->cqs), n);
		}
		return 0;
	}
	/*
	 * A look ahead only helps a poll that serves more than one client, and
	 * only for the clients after the first: that one is served at once.
	 */
	if (p->ops->prefetch != NULL && n > 0 && (i = slot_run_end(wc, 0, n)) < n) {
		for (; i < n; i = j) {
			void *client = wc_client(p, &wc[i]);

			j = slot_run_end(wc, i, n);
			if (likely(client != NULL))
				p->ops->prefetch(client, &wc[i], (uint16_t)(j - i));
		}
	}
	for (i = 0; i < n; i = j) {
		uint32_t slot = rdp_wrid_slot(wc[i].wr_id);
		void *client = wc_client(p, &wc[i]);

		j = slot_run_end(wc, i, n);
		if (unlikely(client == NULL)) {
			RDP_STAT_ADD(p->stats.stray_wc, j - i);
			if (p->strays_logged < STRAYS_LOGGED_MAX) {
				p->strays_logged++;
				POLL_LOG(ERR, "lcore %u: %d completion(s) for empty slot %u dropped "
					 "(first: kind %u, low %" PRIu64 ", %s, opcode %u, QP %u)",
					 p->lcore_id, j - i, slot, rdp_wrid_kind(wc[i].wr_id),
					 rdp_wrid_low(wc[i].wr_id), rdp_wc_status_str(wc[i].status),
					 (unsigned int)wc[i].opcode, wc[i].qp_num);
			}
			continue;
		}
		p->ops->complete(client, &wc[i], j - i);
	}
	RDP_STAT_ADD(p->stats.completions, n);
	return n;
}

/* One pass over the busy list as it is now. */
static unsigned int
progress_pass(struct rdp_poller *p)
{
	struct rdp_poll_busy *b = p->head.busy_head;
	unsigned int work = 0;

	/* detach the list: clients that stay busy queue themselves again */
	p->head.busy_head = NULL;
	p->head.busy_tail = NULL;
	while (b != NULL) {
		struct rdp_poll_busy *next = b->next;

		b->queued = false;
		b->next = NULL;
		work += p->ops->progress(b->client);
		RDP_STAT_ADD(p->stats.progress_calls, 1);
		b = next;
	}
	return work;
}

/*
 * Progress the busy clients, then once more those the first pass queued
 * again: what an application callback sent or freed during the first pass
 * (a reply, a receive buffer to repost) leaves now, not after another
 * poll of the CQ. Two passes at most, so a client that stays busy cannot
 * keep the poller from its CQ.
 */
static unsigned int
progress_busy(struct rdp_poller *p)
{
	unsigned int work = progress_pass(p);

	if (p->head.busy_head != NULL)
		work += progress_pass(p);
	return work;
}

int
rdp_poller_poll(struct rdp_poller *p)
{
	void *items[INBOX_BURST];
	unsigned int work, n;

	if (unlikely(__atomic_load_n(&p->head.owner, __ATOMIC_RELAXED) == 0))
		__atomic_store_n(&p->head.owner, rdp_thread_self(), __ATOMIC_RELEASE);
	work = poll_cq(p, &p->cqs[0]);
	if (unlikely(p->nb_cqs > 1)) {
		unsigned int i;

		for (i = 1; i < p->nb_cqs; i++)
			work += poll_cq(p, &p->cqs[i]);
	}
	n = rte_ring_sc_dequeue_burst(p->inbox, items, INBOX_BURST, NULL);
	if (n > 0) {
		RDP_HANDOFF_ACQUIRE(p->inbox);
		p->ops->inbox(p, items, n);
		RDP_STAT_ADD(p->stats.inbox_items, n);
		work += n;
	}
	if (p->head.busy_head != NULL)
		work += progress_busy(p);
	{
		rdp_poll_hook_fn hook = __atomic_load_n(&p->hook, __ATOMIC_ACQUIRE);

		if (hook != NULL)
			work += hook(p->hook_arg);
	}
	serve_resize(p);
	RDP_STAT_ADD(p->stats.polls, 1);
	if (work == 0)
		RDP_STAT_ADD(p->stats.idle_polls, 1);
	return (int)work;
}

void
rdp_poller_set_hook(struct rdp_poller *p, rdp_poll_hook_fn fn, void *arg)
{
	p->hook_arg = arg;
	__atomic_store_n(&p->hook, fn, __ATOMIC_RELEASE);
}

int
rdp_poller_run(void *arg)
{
	struct rdp_poller *p = arg;

	unsigned int idle = 0;

	__atomic_store_n(&p->running, true, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&p->stop, __ATOMIC_RELAXED)) {
		if (rdp_poller_poll(p) != 0) {
			idle = 0;
		} else if (unlikely(p->idle_sleep_us != 0) && ++idle >= 64) {
			/* a shared CPU: let the kernel and other threads run */
			usleep(p->idle_sleep_us);
			idle = 0;
		}
	}
	__atomic_store_n(&p->running, false, __ATOMIC_RELEASE);
	return 0;
}

void
rdp_poller_stop(struct rdp_poller *p)
{
	__atomic_store_n(&p->stop, true, __ATOMIC_RELAXED);
}

bool
rdp_poller_running(const struct rdp_poller *p)
{
	return __atomic_load_n(&p->running, __ATOMIC_ACQUIRE);
}

unsigned int
rdp_poller_inbox_put(struct rdp_poller *p, void *const *items, unsigned int n)
{
	RDP_HANDOFF_RELEASE(p->inbox);
	return rte_ring_mp_enqueue_burst(p->inbox, items, n, NULL);
}

int
rdp_poller_slot_alloc(struct rdp_poller *p, void *client)
{
	void *v;
	uint32_t slot;

	if (client == NULL)
		return rdp_err_set(EINVAL, "a poller slot needs a client");
	if (rte_ring_dequeue(p->free_slots, &v) != 0)
		return rdp_err_set(ENOSPC, "lcore %u holds its maximum of %u endpoints "
				   "(max_endpoints)", p->lcore_id, p->max_slots);
	slot = (uint32_t)(uintptr_t)v - 1;
	/* published before any WR naming the slot can complete */
	__atomic_store_n(&p->slots[slot], client, __ATOMIC_RELEASE);
	return (int)slot;
}

void
rdp_poller_slot_free(struct rdp_poller *p, uint32_t slot)
{
	/* a slot in the free ring twice would go to two clients at once */
	if (slot >= p->max_slots ||
	    __atomic_exchange_n(&p->slots[slot], NULL, __ATOMIC_ACQ_REL) == NULL) {
		POLL_LOG(ERR, "lcore %u: slot %u freed twice (or never allocated): not freed "
			 "again", p->lcore_id, slot);
		return;
	}
	rte_ring_enqueue(p->free_slots, (void *)(uintptr_t)(slot + 1));
}

/* Grow CQ @p q to at least @p want: through the poller when it runs, else here. */
static int
grow_cq(struct rdp_poller *p, struct poll_cq *q, uint32_t want)
{
	uint32_t zero = 0;
	double deadline;

	if (!__atomic_load_n(&p->running, __ATOMIC_ACQUIRE)) {
		int ret = rdp_cq_resize(q->cq, want);

		if (ret == 0) {
			__atomic_store_n(&q->cap, want, __ATOMIC_RELEASE);
			RDP_STAT_ADD(p->stats.cq_resizes, 1);
		}
		return ret;
	}
	if (!__atomic_compare_exchange_n(&q->resize_req, &zero, want, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return -EAGAIN; /* another resize is being served: retry */
	deadline = rdp_clock_s() + 1.0;
	while (__atomic_load_n(&q->resize_req, __ATOMIC_ACQUIRE) != 0) {
		if (rdp_clock_s() > deadline)
			return rdp_err_set(ETIMEDOUT, "lcore %u did not resize its CQ %u within "
					   "1 s", p->lcore_id, (unsigned int)(q - p->cqs));
		usleep(100);
	}
	return __atomic_load_n(&q->resize_ret, __ATOMIC_RELAXED);
}

int
rdp_poller_reserve(struct rdp_poller *p, unsigned int cq, uint32_t entries)
{
	struct poll_cq *q;

	if (cq >= p->nb_cqs)
		return rdp_err_set(EINVAL, "lcore %u has no CQ %u (it polls %u)", p->lcore_id, cq,
				   p->nb_cqs);
	q = &p->cqs[cq];
	for (;;) {
		uint32_t used = __atomic_load_n(&q->used, __ATOMIC_ACQUIRE);
		uint32_t cap = __atomic_load_n(&q->cap, __ATOMIC_ACQUIRE);
		uint64_t need = (uint64_t)used + entries;
		uint32_t want;
		int ret;

		if (need <= cap) {
			if (__atomic_compare_exchange_n(&q->used, &used, (uint32_t)need, false,
							__ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
				return 0;
			continue;
		}
		if (need > q->max_size)
			return rdp_err_set(ENOSPC, "lcore %u: CQ budget of device %u exhausted: %u "
					   "entries reserved, %u more asked, at most %u",
					   p->lcore_id, cq, used, entries, q->max_size);
		want = (uint32_t)RTE_MIN((uint64_t)q->max_size, RTE_MAX(need, 2ull * cap));
		ret = grow_cq(p, q, want);
		if (ret < 0 && ret != -EAGAIN)
			return rdp_err_set(ENOSPC, "lcore %u: CQ of device %u, %u entries, is full "
					   "(%u reserved) and cannot grow to %u: %s", p->lcore_id,
					   cq, cap, used, want, rdp_err_msg());
	}
}

void
rdp_poller_unreserve(struct rdp_poller *p, unsigned int cq, uint32_t entries)
{
	if (cq < p->nb_cqs)
		__atomic_fetch_sub(&p->cqs[cq].used, entries, __ATOMIC_ACQ_REL);
}

struct rdp_cq *
rdp_poller_cq(const struct rdp_poller *p, unsigned int cq)
{
	return cq < p->nb_cqs ? p->cqs[cq].cq : NULL;
}

unsigned int
rdp_poller_nb_cqs(const struct rdp_poller *p)
{
	return p->nb_cqs;
}

void
rdp_poller_cq_usage(const struct rdp_poller *p, unsigned int cq, uint32_t *cq_used,
		    uint32_t *cq_size)
{
	if (cq_used != NULL)
		*cq_used = cq < p->nb_cqs ? __atomic_load_n(&p->cqs[cq].used, __ATOMIC_RELAXED) : 0;
	if (cq_size != NULL)
		*cq_size = cq < p->nb_cqs ? __atomic_load_n(&p->cqs[cq].cap, __ATOMIC_RELAXED) : 0;
}

uint32_t
rdp_poller_cq_limit(const struct rdp_poller *p, unsigned int cq)
{
	return cq < p->nb_cqs ? p->cqs[cq].max_size : 0;
}

void
rdp_poller_stats(const struct rdp_poller *p, struct rdp_poll_stats *stats,
		 uint32_t *cq_used, uint32_t *cq_size, uint32_t *slots_used)
{
	uint32_t used = 0, size = 0;
	unsigned int i;

	rdp_stats_read(stats, &p->stats, sizeof(*stats));
	for (i = 0; i < p->nb_cqs; i++) {
		used += __atomic_load_n(&p->cqs[i].used, __ATOMIC_RELAXED);
		size += __atomic_load_n(&p->cqs[i].cap, __ATOMIC_RELAXED);
	}
	if (cq_used != NULL)
		*cq_used = used;
	if (cq_size != NULL)
		*cq_size = size;
	if (slots_used != NULL)
		*slots_used = p->max_slots - rte_ring_count(p->free_slots);
}
