/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A send made on the endpoint's poller when nothing is queued is posted at
 * once, from inside the application's callback, not in the poller's next
 * pass over its busy endpoints: a reply leaves before the buffer of its
 * request goes back (that repost, and what credits held back, follow in
 * the pass). White-box: the reply is off the endpoint's send queue when
 * rdp_ep_send_burst() returns.
 */
#include <errno.h>
#include <unistd.h>

#include <rte_eal.h>

#include "ep_private.h"
#include "ep_stream.h"
#include "rdp_test.h"

#define PINGS 2000

static unsigned int replies_posted_at_once, replies_queued, pongs; /* (atomic) */

/* The buffers waiting to go back that owe nothing, counted one by one. */
static uint32_t
reposts_owing_nothing(const struct rdp_ep *ep)
{
	const struct rdp_msg *m;
	uint32_t n = 0;

	for (m = ep->rp_head; m != NULL; m = m->link)
		n += (m->flags & MSG_F_OWED) == 0;
	return n;
}

static uint16_t
echo_recv(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	uint16_t i;

	RTE_SET_USED(arg);
	for (i = 0; i < n; i++) {
		struct rdp_msg *r = rdp_msg_alloc(ep, msgs[i]->pkt_len);

		RDP_ASSERT(r != NULL);
		memcpy(r->data, msgs[i]->data, msgs[i]->pkt_len);
		RDP_ASSERT_EQ(rdp_ep_send_burst(ep, &r, 1), 1);
		/* what tells the direct send to post the reposts first is exact */
		RDP_ASSERT_EQ(ep->rp_acks, reposts_owing_nothing(ep));
		if (txq_empty(&ep->txq))
			__atomic_fetch_add(&replies_posted_at_once, 1, __ATOMIC_RELAXED);
		else
			__atomic_fetch_add(&replies_queued, 1, __ATOMIC_RELAXED);
		rdp_msg_free(msgs[i]);
	}
	return n;
}

static const struct rdp_ep_ops echo_ops = { .on_recv = echo_recv };

static uint16_t
pong_recv(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	n = stream_recv_free_all(ep, msgs, n, arg);
	__atomic_fetch_add(&pongs, n, __ATOMIC_RELEASE);
	return n;
}

static const struct rdp_ep_ops pong_ops = { .on_recv = pong_recv };

RDP_TEST(e2e, ep_reply_sent_from_its_callback_leaves_before_the_next_pass)
{
	struct rdp_ep_params srv = { .ops = &echo_ops, .lcore = -1 };
	struct rdp_ep_params cli = { .ops = &pong_ops, .lcore = -1 };
	struct rdp_cfg *cfg;
	struct rdp_ep *ep;
	unsigned int i;

	rdp_test_eal_init("0-1");
	cfg = stream_cfg("shm", 4096);
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	ep = stream_loopback_connect(&srv, &cli);

	/* ping-pong: one request in flight, so the server's queue is empty */
	for (i = 0; i < PINGS; i++) {
		struct rdp_msg *m = rdp_msg_alloc(ep, 64);
		double deadline = rdp_clock_s() + 5;

		RDP_ASSERT(m != NULL);
		memset(m->data, (int)i, 64);
		RDP_ASSERT_EQ(rdp_ep_send_burst(ep, &m, 1), 1);
		while (__atomic_load_n(&pongs, __ATOMIC_ACQUIRE) <= i) {
			RDP_ASSERT_MSG(rdp_clock_s() < deadline, "no reply to ping %u", i);
			usleep(10);
		}
	}
	RDP_ASSERT_MSG(__atomic_load_n(&replies_posted_at_once, __ATOMIC_RELAXED) == PINGS,
		       "%u of %u replies posted from the callback, %u queued for the next pass",
		       __atomic_load_n(&replies_posted_at_once, __ATOMIC_RELAXED), PINGS,
		       __atomic_load_n(&replies_queued, __ATOMIC_RELAXED));
	rdp_ep_close(ep);
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}

/* The application's poll hook: its poller lcore runs it once per poll, until rdp_fini(). */
static unsigned int hook_calls;
static unsigned int hook_lcore = RTE_MAX_LCORE;

static unsigned int
count_polls(void *arg)
{
	RTE_SET_USED(arg);
	__atomic_store_n(&hook_lcore, rte_lcore_id(), __ATOMIC_RELAXED);
	__atomic_fetch_add(&hook_calls, 1, __ATOMIC_RELEASE);
	return 0;
}

RDP_TEST(e2e, ep_poll_hook_runs_on_its_poller_lcore_once_per_poll)
{
	double deadline;
	struct rdp_cfg *cfg;

	rdp_test_eal_init("0-1");
	cfg = stream_cfg("shm", 4096);
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_poll_hook_set(1, NULL, NULL), -EINVAL);
	RDP_ASSERT_EQ(rdp_poll_hook_set(0, count_polls, NULL), -ENODEV); /* the main lcore */
	RDP_ASSERT_EQ(rdp_poll_hook_set(RTE_MAX_LCORE, count_polls, NULL), -ENODEV);
	RDP_ASSERT_EQ(rdp_poll_hook_set(1, count_polls, NULL), 0);
	RDP_ASSERT_EQ(rdp_poll_hook_set(1, count_polls, NULL), -EBUSY);
	deadline = rdp_clock_s() + 5;
	while (__atomic_load_n(&hook_calls, __ATOMIC_ACQUIRE) < 1000)
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "the hook ran %u times in 5 s",
			       __atomic_load_n(&hook_calls, __ATOMIC_RELAXED));
	RDP_ASSERT_EQ(__atomic_load_n(&hook_lcore, __ATOMIC_RELAXED), 1);
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}
