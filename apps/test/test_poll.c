/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The handoffs between lcores, on their own: the poller's inbox fed by
 * several lcores at once, CQ growth asked for by another thread while the
 * poller runs, and pool buffers allocated on one lcore and freed on
 * another. The poller has CPU 1 to itself; the other lcores share CPU 0.
 * These are the paths the ThreadSanitizer lane checks (suite race),
 * without endpoints on top.
 */
#include <errno.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_pause.h>

#include "rdp_dev.h"
#include "rdp_mem.h"
#include "rdp_poll.h"
#include "rdp_test.h"

#define PRODUCERS 2              /* lcore 2 and the main lcore, sharing CPU 0 */
#define ITEMS_PER_PRODUCER 30000

/* An inbox item: producer in the high bits, sequence in the low ones; the
 * low 3 bits stay clear as in the endpoint layer's tagged pointers. */
#define ITEM(prod, seq) ((void *)(uintptr_t)(((uint64_t)(prod) + 1) << 48 | (uint64_t)(seq) << 3))
#define ITEM_PROD(v) ((unsigned int)(((uintptr_t)(v) >> 48) - 1))
#define ITEM_SEQ(v) (((uintptr_t)(v) & ((UINT64_C(1) << 48) - 1)) >> 3)

struct handoff {
	struct rdp_poller *poller;
	struct rdp_poll_busy busy;
	uint64_t next[PRODUCERS];     /* poller thread only */
	uint64_t out_of_order;        /* poller thread only */
	uint64_t progressed;          /* written by the poller (atomic) */
	uint64_t received;            /* written by the poller (atomic, release) */
};

static struct handoff ho;

static void
ho_complete(void *client, const struct rdp_wc *wc, uint16_t n)
{
	RTE_SET_USED(client);
	RTE_SET_USED(wc);
	RTE_SET_USED(n);
}

static void
ho_inbox(struct rdp_poller *p, void *const *items, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		unsigned int prod = ITEM_PROD(items[i]);

		if (prod >= PRODUCERS || ITEM_SEQ(items[i]) != ho.next[prod])
			ho.out_of_order++;
		else
			ho.next[prod]++;
	}
	rdp_poller_busy(p, &ho.busy);
	__atomic_fetch_add(&ho.received, n, __ATOMIC_RELEASE);
}

static unsigned int
ho_progress(void *client)
{
	struct handoff *h = client;

	__atomic_store_n(&h->progressed, h->progressed + 1, __ATOMIC_RELAXED);
	return 1;
}

static const struct rdp_poll_ops ho_ops = {
	.complete = ho_complete,
	.inbox = ho_inbox,
	.progress = ho_progress,
};

static int
produce(void *arg)
{
	unsigned int prod = (unsigned int)(uintptr_t)arg;
	uint64_t seq = 0;

	while (seq < ITEMS_PER_PRODUCER) {
		void *items[16];
		unsigned int n = 0, k;

		while (n < RTE_DIM(items) && seq + n < ITEMS_PER_PRODUCER) {
			items[n] = ITEM(prod, seq + n);
			n++;
		}
		k = rdp_poller_inbox_put(ho.poller, items, n);
		seq += k;
		if (k < n)
			sched_yield(); /* inbox full: let the other producer run */
	}
	return 0;
}

static struct rdp_poller *
make_poller(struct rdp_dev *dev, const struct rdp_poll_ops *ops, uint32_t cq_size,
	    uint32_t max_cq_size)
{
	struct rdp_poller_params pp = {
		.lcore_id = 1,
		.cq = { { .dev = dev, .cq_size = cq_size, .max_cq_size = max_cq_size } },
		.nb_cqs = 1, .poll_burst = 32, .max_slots = 16, .inbox_size = 256, .socket = SOCKET_ID_ANY,
		.ops = ops,
	};
	struct rdp_poller *p = rdp_poller_create(&pp);

	RDP_ASSERT_MSG(p != NULL, "rdp_poller_create: %s", rdp_err_msg());
	return p;
}

RDP_TEST(eal, poll_inbox_fed_by_two_lcores_delivers_every_item_once_in_producer_order)
{
	struct rdp_poll_stats st;
	struct rdp_dev *dev;
	double deadline;
	unsigned int prod, lcore, i;

	rdp_test_eal_init("0@0,1@1,2@0");
	dev = rdp_dev_open("shm");
	RDP_ASSERT(dev != NULL);
	ho.poller = make_poller(dev, &ho_ops, 64, 64);
	ho.busy.client = &ho;
	RDP_ASSERT_EQ(rte_eal_remote_launch(rdp_poller_run, ho.poller, 1), 0);
	prod = 0;
	RTE_LCORE_FOREACH_WORKER(lcore)
		if (lcore != 1)
			RDP_ASSERT_EQ(rte_eal_remote_launch(produce, (void *)(uintptr_t)prod++,
							    lcore), 0);
	RDP_ASSERT_EQ(prod, PRODUCERS - 1);
	produce((void *)(uintptr_t)prod);
	deadline = rdp_clock_s() + 60;
	while (__atomic_load_n(&ho.received, __ATOMIC_ACQUIRE) <
	       (uint64_t)PRODUCERS * ITEMS_PER_PRODUCER) {
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "%" PRIu64 " items arrived of %u",
			       __atomic_load_n(&ho.received, __ATOMIC_ACQUIRE),
			       PRODUCERS * ITEMS_PER_PRODUCER);
		/* statistics are read while the poller writes them */
		rdp_poller_stats(ho.poller, &st, NULL, NULL, NULL);
		usleep(1000);
	}
	rdp_poller_stop(ho.poller);
	rte_eal_mp_wait_lcore();
	RDP_ASSERT_EQ(ho.out_of_order, 0);
	for (i = 0; i < PRODUCERS; i++)
		RDP_ASSERT_EQ(ho.next[i], ITEMS_PER_PRODUCER);
	rdp_poller_stats(ho.poller, &st, NULL, NULL, NULL);
	RDP_ASSERT_EQ(st.inbox_items, (uint64_t)PRODUCERS * ITEMS_PER_PRODUCER);
	RDP_ASSERT(st.progress_calls > 0 &&
		   st.progress_calls == __atomic_load_n(&ho.progressed, __ATOMIC_RELAXED));
	printf("%u items from %u lcores, %" PRIu64 " polls, %" PRIu64 " progress calls\n",
	       PRODUCERS * ITEMS_PER_PRODUCER, PRODUCERS, st.polls, st.progress_calls);
	RDP_ASSERT_EQ(rdp_poller_destroy(ho.poller), 0);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	return 0;
}

/* A client that puts itself back on the busy list `again` more times. */
static struct {
	struct rdp_poller *poller;
	struct rdp_poll_busy busy;
	unsigned int again;
	unsigned int calls;
} requeue;

static unsigned int
requeue_progress(void *client)
{
	RTE_SET_USED(client);
	requeue.calls++;
	if (requeue.again > 0) {
		requeue.again--;
		rdp_poller_busy(requeue.poller, &requeue.busy);
	}
	return 1;
}

static const struct rdp_poll_ops requeue_ops = {
	.complete = ho_complete,
	.inbox = ho_inbox,
	.progress = requeue_progress,
};

/*
 * What a client's progress queued again (an application callback's reply)
 * is progressed in the same poll, not after another poll of the CQ; but
 * only once more, so a client that stays busy cannot starve the CQ.
 */
RDP_TEST(eal, poll_progresses_a_client_queued_again_in_the_same_poll_once_more_at_most)
{
	struct rdp_poll_stats st;
	struct rdp_dev *dev;

	rdp_test_eal_init("0@0");
	dev = rdp_dev_open("shm");
	RDP_ASSERT(dev != NULL);
	requeue.poller = make_poller(dev, &requeue_ops, 64, 64);
	requeue.busy.client = &requeue;

	/* queued again once: both calls in one poll */
	requeue.again = 1;
	rdp_poller_busy(requeue.poller, &requeue.busy);
	RDP_ASSERT_EQ(rdp_poller_poll(requeue.poller), 2);
	RDP_ASSERT_EQ(requeue.calls, 2);
	RDP_ASSERT(!requeue.busy.queued);
	RDP_ASSERT_EQ(rdp_poller_poll(requeue.poller), 0);
	RDP_ASSERT_EQ(requeue.calls, 2);

	/* always busy: two calls per poll, then the CQ again */
	requeue.again = 1000;
	rdp_poller_busy(requeue.poller, &requeue.busy);
	RDP_ASSERT_EQ(rdp_poller_poll(requeue.poller), 2);
	RDP_ASSERT_EQ(requeue.calls, 4);
	RDP_ASSERT(requeue.busy.queued);
	RDP_ASSERT_EQ(rdp_poller_poll(requeue.poller), 2);
	RDP_ASSERT_EQ(requeue.calls, 6);
	rdp_poller_stats(requeue.poller, &st, NULL, NULL, NULL);
	RDP_ASSERT_EQ(st.polls, 4);
	RDP_ASSERT_EQ(st.progress_calls, 6);

	/* drain the list before the poller goes */
	requeue.again = 0;
	while (requeue.busy.queued)
		rdp_poller_poll(requeue.poller);
	RDP_ASSERT_EQ(rdp_poller_destroy(requeue.poller), 0);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	return 0;
}

/*
 * A slot freed twice would sit in the free ring twice and go to two
 * clients at once: one's completions would reach the other. The second
 * free is refused (and logged), and the in-use count stays right.
 */
RDP_TEST(eal, poll_slot_freed_twice_goes_to_one_client_only)
{
	static int client_a, client_b;
	struct rdp_poll_stats st;
	uint32_t used;
	int s, a, b;
	struct rdp_dev *dev;
	struct rdp_poller *p;

	rdp_test_eal_init("0@0");
	dev = rdp_dev_open("shm");
	RDP_ASSERT(dev != NULL);
	p = make_poller(dev, &requeue_ops, 64, 64);
	s = rdp_poller_slot_alloc(p, &client_a);
	RDP_ASSERT(s >= 0);
	rdp_poller_slot_free(p, (uint32_t)s);
	rdp_poller_slot_free(p, (uint32_t)s);
	rdp_poller_stats(p, &st, NULL, NULL, &used);
	RDP_ASSERT_EQ(used, 0);
	a = rdp_poller_slot_alloc(p, &client_a);
	b = rdp_poller_slot_alloc(p, &client_b);
	RDP_ASSERT(a >= 0 && b >= 0);
	RDP_ASSERT_MSG(a != b, "slot %d given to two clients", a);
	rdp_poller_slot_free(p, (uint32_t)a);
	rdp_poller_slot_free(p, (uint32_t)b);
	RDP_ASSERT_EQ(rdp_poller_destroy(p), 0);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	return 0;
}

/* What the poller asked of a look-ahead client layer, in order. */
static struct {
	char log[16][16];
	unsigned int n;
} la;

static void
la_note(const char *what, void *client, uint16_t n)
{
	if (la.n < RTE_DIM(la.log))
		snprintf(la.log[la.n], sizeof(la.log[0]), "%s %c%u", what, *(char *)client,
			 (unsigned int)n);
	la.n++;
}

static void
la_complete(void *client, const struct rdp_wc *wc, uint16_t n)
{
	RTE_SET_USED(wc);
	la_note("complete", client, n);
}

static void
la_prefetch(void *client, const struct rdp_wc *wc, uint16_t n)
{
	RTE_SET_USED(wc);
	la_note("prefetch", client, n);
}

static const struct rdp_poll_ops la_ops = {
	.complete = la_complete,
	.prefetch = la_prefetch,
	.inbox = ho_inbox,
	.progress = ho_progress,
};

/* Receives on a QP in error complete at once, flushed, on the poller's CQ. */
static void
la_flush(struct rdp_qp *qp, struct rdp_mr *mr, const int *slots, unsigned int n)
{
	struct rdp_recv_wr wr = { 0 };
	struct rdp_sge sge = { (uintptr_t)mr->addr, 64, mr->lkey };
	unsigned int i;
	int err;

	wr.sg_list = &sge;
	wr.num_sge = 1;
	for (i = 0; i < n; i++) {
		wr.wr_id = rdp_wrid(RDP_WRK_RECV, (uint32_t)slots[i], i);
		RDP_ASSERT_EQ(rdp_post_recv(qp, &wr, 1, &err), 1);
	}
}

/*
 * The look-ahead op: when one poll's completions belong to several clients,
 * every one after the first is offered for prefetching before the first is
 * served (the first is served at once); a poll of one client's completions
 * skips it.
 */
RDP_TEST(eal, poll_prefetch_sees_every_later_client_of_a_poll_before_the_first_completes)
{
	static char client_a = 'a', client_b = 'b', client_c = 'c';
	struct rdp_qp_init_attr ia = { 0 };
	struct rdp_qp_attr err_state = { .state = RDP_QPS_ERR };
	struct rdp_poller *p;
	struct rdp_dev *dev;
	struct rdp_pd *pd;
	struct rdp_mr *mr;
	struct rdp_qp *qp;
	int a, b, c;

	rdp_test_eal_init("0@0");
	dev = rdp_dev_open("shm");
	RDP_ASSERT(dev != NULL);
	p = make_poller(dev, &la_ops, 64, 64);
	a = rdp_poller_slot_alloc(p, &client_a);
	b = rdp_poller_slot_alloc(p, &client_b);
	c = rdp_poller_slot_alloc(p, &client_c);
	RDP_ASSERT(a >= 0 && b >= 0 && c >= 0);
	pd = rdp_pd_alloc(dev);
	RDP_ASSERT(pd != NULL);
	mr = rdp_mr_alloc(pd, 4096, -1, RDP_ACCESS_LOCAL_WRITE);
	RDP_ASSERT_MSG(mr != NULL, "rdp_mr_alloc: %s", rdp_err_msg());
	ia.send_cq = rdp_poller_cq(p, 0);
	ia.recv_cq = rdp_poller_cq(p, 0);
	ia.cap.max_send_wr = 8;
	ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	qp = rdp_qp_create(pd, &ia);
	RDP_ASSERT_MSG(qp != NULL, "rdp_qp_create: %s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_qp_modify(qp, &err_state, RDP_QP_ATTR_STATE), 0);

	/* a, a, b, c in one poll: b and c offered, then all three served */
	la_flush(qp, mr, (const int[]){ a, a, b, c }, 4);
	RDP_ASSERT_EQ(rdp_poller_poll(p), 4);
	RDP_ASSERT_EQ(la.n, 5);
	RDP_ASSERT_STR_EQ(la.log[0], "prefetch b1");
	RDP_ASSERT_STR_EQ(la.log[1], "prefetch c1");
	RDP_ASSERT_STR_EQ(la.log[2], "complete a2");
	RDP_ASSERT_STR_EQ(la.log[3], "complete b1");
	RDP_ASSERT_STR_EQ(la.log[4], "complete c1");

	/* one client's completions only: served, not offered */
	la.n = 0;
	la_flush(qp, mr, (const int[]){ b, b }, 2);
	RDP_ASSERT_EQ(rdp_poller_poll(p), 2);
	RDP_ASSERT_EQ(la.n, 1);
	RDP_ASSERT_STR_EQ(la.log[0], "complete b2");

	RDP_ASSERT_EQ(rdp_qp_destroy(qp), 0);
	RDP_ASSERT_EQ(rdp_mr_free(mr), 0);
	RDP_ASSERT_EQ(rdp_pd_free(pd), 0);
	rdp_poller_slot_free(p, (uint32_t)a);
	rdp_poller_slot_free(p, (uint32_t)b);
	rdp_poller_slot_free(p, (uint32_t)c);
	RDP_ASSERT_EQ(rdp_poller_destroy(p), 0);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	return 0;
}

RDP_TEST(eal, poll_cq_growth_asked_by_other_threads_is_served_by_the_running_poller)
{
	struct rdp_dev *dev;
	uint32_t used, size;
	struct rdp_poll_stats st;
	unsigned int i;

	rdp_test_eal_init("0@0,1@1,2@0");
	dev = rdp_dev_open("shm");
	RDP_ASSERT(dev != NULL);
	ho.poller = make_poller(dev, &ho_ops, 64, 1u << 16);
	ho.busy.client = &ho;
	RDP_ASSERT_EQ(rte_eal_remote_launch(rdp_poller_run, ho.poller, 1), 0);
	/* another lcore keeps the inbox busy while the CQ grows */
	RDP_ASSERT_EQ(rte_eal_remote_launch(produce, (void *)(uintptr_t)0, 2), 0);
	for (i = 0; i < 200; i++)
		RDP_ASSERT_MSG(rdp_poller_reserve(ho.poller, 0, 300) == 0, "reserve %u: %s", i,
			       rdp_err_msg());
	rdp_poller_stats(ho.poller, &st, &used, &size, NULL);
	RDP_ASSERT_EQ(used, 200 * 300);
	RDP_ASSERT(size >= used && size <= 1u << 16);
	RDP_ASSERT(st.cq_resizes > 0);
	/* beyond the limit: refused with the numbers, nothing reserved */
	RDP_ASSERT_EQ(rdp_poller_reserve(ho.poller, 0, 1u << 16), -ENOSPC);
	RDP_ASSERT_MSG(strstr(rdp_err_msg(), "CQ budget of device 0 exhausted") != NULL, "%s",
		       rdp_err_msg());
	for (i = 0; i < 200; i++)
		rdp_poller_unreserve(ho.poller, 0, 300);
	while (rte_eal_get_lcore_state(2) != WAIT)
		usleep(1000);
	rte_eal_wait_lcore(2);
	rdp_poller_stop(ho.poller);
	rte_eal_wait_lcore(1);
	rdp_poller_stats(ho.poller, &st, &used, &size, NULL);
	RDP_ASSERT_EQ(used, 0);
	printf("CQ grown %" PRIu64 " times to %u entries while %" PRIu64 " inbox items flowed\n",
	       st.cq_resizes, size, st.inbox_items);
	RDP_ASSERT_EQ(rdp_poller_destroy(ho.poller), 0);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Pool buffers crossing lcores                                           */
/* ---------------------------------------------------------------------- */

#define POOL_BUFS 512
#define POOL_ROUNDS 20000

static struct {
	struct rdp_pool *pool;
	struct rte_ring *pass;   /* allocating lcore -> freeing lcore */
	uint32_t seen[POOL_BUFS]; /* freeing lcore, then main once checked_all */
	uint64_t bad;             /* freeing lcore, then main once checked_all */
	bool checked_all;         /* (atomic) the freeing lcore is done */
} px;

/* Allocate messages of 1-3 segments, stamp them, hand them over. */
static int
pool_alloc_side(void *arg)
{
	uint64_t i;

	RTE_SET_USED(arg);
	for (i = 0; i < POOL_ROUNDS; i++) {
		struct rdp_msg *m;

		while ((m = rdp_pool_alloc_msg(px.pool, 1 + (uint32_t)(i % 3) * 256, 256)) == NULL)
			rte_pause();
		for (struct rdp_msg *s = m; s != NULL; s = s->next)
			memset(s->data, (int)(i & 0xff), s->data_len);
		m->user_data = i;
		while (rte_ring_enqueue(px.pass, m) != 0)
			rte_pause();
	}
	return 0;
}

/* Check every message and free it here, on another lcore. */
static int
pool_free_side(void *arg)
{
	uint64_t expect = 0;

	RTE_SET_USED(arg);
	while (expect < POOL_ROUNDS) {
		void *v;
		struct rdp_msg *m;

		if (rte_ring_dequeue(px.pass, &v) != 0) {
			rte_pause();
			continue;
		}
		m = v;
		if (m->user_data != expect || m->pkt_len != 1 + (expect % 3) * 256)
			px.bad++;
		for (struct rdp_msg *s = m; s != NULL; s = s->next) {
			const uint8_t *p = s->data;

			if (s->data_len > 0 && (p[0] != (expect & 0xff) ||
						p[s->data_len - 1] != (expect & 0xff)))
				px.bad++;
			px.seen[rdp_pool_msg_idx(px.pool, s)]++;
		}
		rdp_pool_put_chain(m);
		expect++;
	}
	/* EAL's join is invisible to ThreadSanitizer: publish the results here */
	__atomic_store_n(&px.checked_all, true, __ATOMIC_RELEASE);
	return 0;
}

/* Main lcore allocates, lcore 1 frees; with @p owned the main lcore owns the
 * pool, so its cache meets frees that go straight to the ring. */
static int
pool_cross_lcore(bool owned)
{
	struct rdp_dev *dev;
	struct rdp_pd *pd;
	uint64_t total = 0, segs = 0;
	unsigned int i;

	rdp_test_eal_init("0@0,1@1");
	dev = rdp_dev_open("shm");
	RDP_ASSERT(dev != NULL);
	pd = rdp_pd_alloc(dev);
	RDP_ASSERT(pd != NULL);
	px.pool = rdp_pool_create("xlcore", pd, POOL_BUFS, 256, SOCKET_ID_ANY, 0);
	RDP_ASSERT_MSG(px.pool != NULL, "%s", rdp_err_msg());
	px.pass = rte_ring_create("xlcore_pass", 64, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	RDP_ASSERT(px.pass != NULL);
	if (owned)
		RDP_ASSERT_EQ(rdp_pool_claim(px.pool), 0);
	RDP_ASSERT_EQ(rte_eal_remote_launch(pool_free_side, NULL, 1), 0);
	pool_alloc_side(NULL);
	rte_eal_mp_wait_lcore();
	RDP_ASSERT(__atomic_load_n(&px.checked_all, __ATOMIC_ACQUIRE));
	RDP_ASSERT_EQ(px.bad, 0);
	for (i = 0; i < POOL_BUFS; i++)
		total += px.seen[i];
	for (i = 0; i < POOL_ROUNDS; i++)
		segs += 1 + i % 3;
	RDP_ASSERT_EQ(total, segs);
	RDP_ASSERT_EQ(rdp_pool_avail(px.pool), POOL_BUFS);
	RDP_ASSERT_EQ(rdp_pool_destroy(px.pool), 0);
	rte_ring_free(px.pass);
	RDP_ASSERT_EQ(rdp_pd_free(pd), 0);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	return 0;
}

RDP_TEST(eal, mem_pool_buffers_allocated_on_one_lcore_and_freed_on_another_all_come_back)
{
	return pool_cross_lcore(false);
}

RDP_TEST(eal, mem_pool_owner_cache_refilled_from_frees_of_another_lcore_loses_nothing)
{
	return pool_cross_lcore(true);
}

/* The owner's cache on its own: drain the pool one buffer at a time (refills),
 * return them all (spills), and count at every step. */
RDP_TEST(eal, mem_pool_owner_cache_spills_and_refills_without_losing_a_buffer)
{
	static struct rdp_msg *held[POOL_BUFS];
	static uint8_t taken[POOL_BUFS];
	struct rdp_msg *m, *chain;
	struct rdp_pool *pool;
	struct rdp_dev *dev;
	struct rdp_pd *pd;
	unsigned int i;

	rdp_test_eal_init("0@0");
	dev = rdp_dev_open("shm");
	RDP_ASSERT(dev != NULL);
	pd = rdp_pd_alloc(dev);
	RDP_ASSERT(pd != NULL);
	pool = rdp_pool_create("owned", pd, POOL_BUFS, 256, SOCKET_ID_ANY, 0);
	RDP_ASSERT_MSG(pool != NULL, "%s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_pool_claim(pool), 0);
	RDP_ASSERT_EQ(rdp_pool_claim(pool), -EBUSY);
	for (i = 0; i < POOL_BUFS; i++) {
		held[i] = rdp_pool_alloc_msg(pool, 100, 256);
		RDP_ASSERT_MSG(held[i] != NULL, "buffer %u of %u", i, POOL_BUFS);
		RDP_ASSERT_EQ(held[i]->pkt_len, 100);
		RDP_ASSERT_EQ(taken[rdp_pool_msg_idx(pool, held[i])], 0);
		taken[rdp_pool_msg_idx(pool, held[i])] = 1;
		RDP_ASSERT_EQ(rdp_pool_avail(pool), POOL_BUFS - i - 1);
	}
	RDP_ASSERT(rdp_pool_alloc_msg(pool, 1, 256) == NULL);
	RDP_ASSERT_EQ(rte_errno, ENOBUFS);
	for (i = 0; i < POOL_BUFS; i++) {
		rdp_pool_put_chain(held[i]);
		RDP_ASSERT_EQ(rdp_pool_avail(pool), i + 1);
	}
	/* a 64-segment chain is more than the cache keeps after a spill */
	chain = rdp_pool_alloc_msg(pool, 64 * 256, 256);
	RDP_ASSERT(chain != NULL);
	RDP_ASSERT_EQ(chain->nb_segs, 64);
	RDP_ASSERT_EQ(rdp_pool_avail(pool), POOL_BUFS - 64);
	m = rdp_pool_alloc_msg(pool, (POOL_BUFS - 64) * 256, 256);
	RDP_ASSERT(m != NULL);
	RDP_ASSERT_EQ(rdp_pool_avail(pool), 0);
	rdp_pool_put_chain(m);
	rdp_pool_put_chain(chain);
	RDP_ASSERT_EQ(rdp_pool_avail(pool), POOL_BUFS);
	RDP_ASSERT_EQ(rdp_pool_destroy(pool), 0);
	RDP_ASSERT_EQ(rdp_pd_free(pd), 0);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	return 0;
}
