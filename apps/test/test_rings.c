/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Events reach the application in order and whole: a pipeline application
 * whose event ring is full gets every event once it makes room, state
 * changes included; send events keep send order also when sends meet a
 * failure. (White-box where a fault has to land at an exact point.)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>

#include "ep_private.h"
#include "ep_stream.h"
#include "rdp_test.h"

#define RING_SIZE 8 /* holds 7 events */
#define MSGS 20

static const struct rdp_ep_ops sink_ops = { .on_recv = stream_recv_free_all };

/* Wait until the ring holds @p n events (the poller refills what we took). */
static void
wait_ring_count(struct rte_ring *r, unsigned int n, const char *what)
{
	double deadline = rdp_clock_s() + 5;

	while (rte_ring_count(r) != n)
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "%s: %u events in the ring, expected %u", what,
			       rte_ring_count(r), n);
}

RDP_TEST(e2e, ep_pipeline_state_event_waits_for_room_in_a_full_ring)
{
	struct rdp_ep_params psrv = { .lcore = -1 }, pcli = { .ops = &sink_ops, .lcore = -1 };
	struct rdp_msg *ev, *m;
	struct rte_ring *ring;
	struct rdp_ep *cli, *srv = NULL;
	struct rdp_cfg *cfg;
	unsigned int recvs = 0, states = 0, i;
	enum rdp_ep_state last = RDP_EP_CONNECTING;
	char addr[64];
	double deadline;
	int port;

	rdp_test_eal_init("0-1");
	cfg = stream_cfg("shm", 65536);
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	ring = rte_ring_create("ev_small", RING_SIZE, SOCKET_ID_ANY, RING_F_SC_DEQ);
	RDP_ASSERT(ring != NULL);
	psrv.events = ring;
	port = rdp_listen("127.0.0.1:0", &psrv);
	RDP_ASSERT(port > 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	cli = rdp_connect(addr, &pcli);
	RDP_ASSERT_EQ(rdp_ep_wait_established(cli, 5000), 0);

	/* the server's ESTABLISHED event */
	deadline = rdp_clock_s() + 5;
	while (rdp_event_dequeue_burst(ring, &ev, 1) == 0)
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "no ESTABLISHED event");
	RDP_ASSERT_EQ(ev->event, RDP_EV_STATE);
	RDP_ASSERT_EQ(ev->user_data, RDP_EP_ESTABLISHED);
	srv = ev->ep;
	rdp_msg_free(ev);

	/* more messages than the ring holds, then the peer goes away */
	for (i = 0; i < MSGS; i++) {
		m = rdp_msg_alloc(cli, 100);
		RDP_ASSERT(m != NULL);
		RDP_ASSERT_EQ(rdp_ep_send_burst(cli, &m, 1), 1);
	}
	wait_ring_count(ring, RING_SIZE - 1, "filled");
	rdp_ep_close(cli);
	deadline = rdp_clock_s() + 5;
	while (rdp_ep_state(srv) != RDP_EP_PEER_CLOSED)
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "server endpoint still %s",
			       rdp_ep_state_str(rdp_ep_state(srv)));

	/* one event at a time, letting the poller fill the ring again each time:
	 * the FAILED event is offered while the ring is full */
	deadline = rdp_clock_s() + 10;
	while (last != RDP_EP_CLOSED) {
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "%u of %u messages and %u state events seen; "
			       "last state %s", recvs, MSGS, states, rdp_ep_state_str(last));
		if (rdp_event_dequeue_burst(ring, &ev, 1) == 0) {
			usleep(1000);
			continue;
		}
		if (ev->event == RDP_EV_RECV) {
			RDP_ASSERT_EQ(states, 0);
			recvs++;
		} else {
			RDP_ASSERT_EQ(ev->event, RDP_EV_STATE);
			last = (enum rdp_ep_state)ev->user_data;
			states++;
			if (last == RDP_EP_PEER_CLOSED) {
				RDP_ASSERT_EQ(recvs, MSGS);
				rdp_ep_close(srv);
			}
		}
		rdp_msg_free(ev);
		if (recvs + RING_SIZE - 1 <= MSGS && last == RDP_EP_CONNECTING)
			usleep(20000); /* time for the poller to refill the ring */
	}
	RDP_ASSERT_EQ(recvs, MSGS);
	RDP_ASSERT_EQ(states, 2); /* FAILED, then CLOSED */
	printf("%u messages, then FAILED and CLOSED, through a ring of %u\n", recvs,
	       RING_SIZE - 1);
	deadline = rdp_clock_s() + 5;
	while (rdp_endpoint_count() != 0)
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "%u endpoints left", rdp_endpoint_count());
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rte_ring_free(ring);
	rdp_cfg_free(cfg);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Send events in send order, also when sends meet a failure              */
/* ---------------------------------------------------------------------- */

static bool refusing; /* (atomic) */

static uint16_t
refuse_recv(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	/* takes nothing while refusing: the sender runs out of credits */
	if (__atomic_load_n(&refusing, __ATOMIC_ACQUIRE))
		return 0;
	return stream_recv_free_all(ep, msgs, n, arg);
}

static const struct rdp_ep_ops refuse_ops = { .on_recv = refuse_recv };

static bool poller_held;

static void
hold_poller(struct rdp_ep *ep, void *arg)
{
	RTE_SET_USED(ep);
	RTE_SET_USED(arg);
	while (__atomic_load_n(&poller_held, __ATOMIC_ACQUIRE))
		rte_pause();
}

static struct rdp_msg *
send_one(struct rdp_ep *ep, uint64_t seq)
{
	struct rdp_msg *m = rdp_msg_alloc(ep, 100);

	RDP_ASSERT(m != NULL);
	m->user_data = seq;
	RDP_ASSERT_EQ(rdp_ep_send_burst(ep, &m, 1), 1);
	return m;
}

/* Take events, checking send order, until @p stop says enough. */
struct order_check {
	uint64_t next, done, failed;
	bool closed;
	struct rdp_ep *ep;
};

static void
take_events(struct rte_ring *ring, struct order_check *oc, bool (*stop)(const struct order_check *))
{
	double deadline = rdp_clock_s() + 10;
	struct rdp_msg *ev;

	while (!stop(oc)) {
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "%" PRIu64 " send events seen", oc->next);
		if (rdp_event_dequeue_burst(ring, &ev, 1) == 0)
			continue;
		if (ev->event == RDP_EV_STATE) {
			if (ev->user_data == RDP_EP_FAILED)
				rdp_ep_close(oc->ep);
			oc->closed = ev->user_data == RDP_EP_CLOSED;
		} else {
			RDP_ASSERT_MSG(ev->user_data == oc->next, "send event for message %" PRIu64
				       " arrived as number %" PRIu64 " (%s)", ev->user_data,
				       oc->next, ev->event == RDP_EV_SEND_DONE ? "done" : "failed");
			oc->next++;
			if (ev->event == RDP_EV_SEND_DONE) {
				RDP_ASSERT_EQ(oc->failed, 0);
				oc->done++;
			} else {
				oc->failed++;
			}
		}
		rdp_msg_free(ev);
	}
}

static bool
some_done(const struct order_check *oc)
{
	return oc->done >= 40;
}

static bool
all_closed(const struct order_check *oc)
{
	return oc->closed;
}

RDP_TEST(e2e, ep_send_events_keep_send_order_when_sends_meet_a_failure)
{
	struct rdp_ep_params pcli = { .lcore = -1, .notify_send_ok = true };
	struct rdp_ep_params psrv = { .ops = &refuse_ops, .lcore = -1 };
	struct rdp_qp_attr err = { .state = RDP_QPS_ERR };
	struct order_check oc = { 0 };
	struct rte_ring *ring;
	struct rdp_cfg *cfg;
	struct rdp_ep *cli;
	uint64_t sent = 0;
	char addr[64];
	int port;

	rdp_test_eal_init("0-1");
	cfg = stream_cfg("shm", 65536);
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	ring = rte_ring_create("ev_order", 1024, SOCKET_ID_ANY, RING_F_SC_DEQ);
	RDP_ASSERT(ring != NULL);
	pcli.events = ring;
	port = rdp_listen("127.0.0.1:0", &psrv);
	RDP_ASSERT(port > 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	cli = rdp_connect(addr, &pcli);
	RDP_ASSERT_EQ(rdp_ep_wait_established(cli, 5000), 0);
	oc.ep = cli;

	/* more than the peer's credits: the rest wait in the send queue */
	__atomic_store_n(&refusing, true, __ATOMIC_RELEASE);
	for (; sent < 100; sent++)
		send_one(cli, sent);
	take_events(ring, &oc, some_done);
	/* hold the poller, hand it more sends and an error on the QP at once:
	 * it sees the error first, then the sends */
	__atomic_store_n(&poller_held, true, __ATOMIC_RELEASE);
	RDP_ASSERT_EQ(rdp_ep_call(cli, hold_poller, NULL), 0);
	for (; sent < 110; sent++)
		send_one(cli, sent);
	RDP_ASSERT_EQ(rdp_qp_modify(cli->qp, &err, RDP_QP_ATTR_STATE), 0);
	__atomic_store_n(&poller_held, false, __ATOMIC_RELEASE);
	take_events(ring, &oc, all_closed);
	RDP_ASSERT_EQ(oc.next, sent);
	RDP_ASSERT(oc.failed >= 10);
	printf("%" PRIu64 " sends: %" PRIu64 " done then %" PRIu64 " failed, in send order\n",
	       sent, oc.done, oc.failed);
	__atomic_store_n(&refusing, false, __ATOMIC_RELEASE); /* let the peer finish */
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rte_ring_free(ring);
	rdp_cfg_free(cfg);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* A CLOSED event in a ring still names a live endpoint                    */
/* ---------------------------------------------------------------------- */

/*
 * rdp_endpoints_dump() prints @p n endpoints, and the line of @p ep says
 * @p what: what a program stuck on rdp_endpoint_count() would read.
 */
static void
expect_dump_line(const struct rdp_ep *ep, unsigned int n, const char *what)
{
	char head[48], *text = NULL, *line, *eol;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	RDP_ASSERT(f != NULL);
	RDP_ASSERT_EQ(rdp_endpoints_dump(f), n);
	RDP_ASSERT(fclose(f) == 0);
	snprintf(head, sizeof(head), "endpoint %u peer ", rdp_ep_id(ep));
	line = strstr(text, head);
	RDP_ASSERT_MSG(line != NULL, "no line for endpoint %u in:\n%s", rdp_ep_id(ep), text);
	eol = strchr(line, '\n');
	RDP_ASSERT(eol != NULL);
	*eol = '\0';
	RDP_ASSERT_MSG(strstr(line, what) != NULL, "'%s' not in: %s", what, line);
	free(text);
}

RDP_TEST(e2e, ep_pipeline_closed_event_keeps_its_endpoint_until_freed)
{
	struct rdp_ep_params psrv = { .ops = &sink_ops, .lcore = -1 };
	struct rdp_ep_params pcli = { .lcore = -1 };
	struct rte_ring *ring;
	struct rdp_cfg *cfg;
	struct rdp_ep *cli;
	struct rdp_msg *ev;
	double deadline;
	char addr[64];
	int port;

	rdp_test_eal_init("0-1");
	cfg = stream_cfg("shm", 65536);
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	ring = rte_ring_create("ev_closed", 64, SOCKET_ID_ANY, RING_F_SC_DEQ);
	RDP_ASSERT(ring != NULL);
	pcli.events = ring;
	port = rdp_listen("127.0.0.1:0", &psrv);
	RDP_ASSERT(port > 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	cli = rdp_connect(addr, &pcli);
	RDP_ASSERT_EQ(rdp_ep_wait_established(cli, 5000), 0);
	rdp_ep_set_ctx(cli, ring);
	rdp_ep_close(cli);
	/* CLOSED is in the ring; the application is busy elsewhere for a while */
	deadline = rdp_clock_s() + 5;
	while (rte_ring_count(ring) < 2) /* ESTABLISHED, CLOSED */
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "no CLOSED event");
	usleep(300000);
	RDP_ASSERT_MSG(rdp_endpoint_count() == 2, "%u endpoints alive: the one whose CLOSED "
		       "event waits in the ring was released", rdp_endpoint_count());
	expect_dump_line(cli, 2, "state CLOSED");
	while (rdp_event_dequeue_burst(ring, &ev, 1) == 1) {
		RDP_ASSERT(ev->event == RDP_EV_STATE && ev->ep == cli);
		RDP_ASSERT(rdp_ep_get_ctx(ev->ep) == ring);
		rdp_msg_free(ev);
	}
	/* freeing CLOSED lets it go */
	deadline = rdp_clock_s() + 5;
	while (rdp_endpoint_count() != 1)
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "%u endpoints alive after CLOSED was freed",
			       rdp_endpoint_count());
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rte_ring_free(ring);
	rdp_cfg_free(cfg);
	return 0;
}

RDP_TEST(e2e, ep_fini_releases_pipeline_endpoints_the_application_left_open)
{
	struct rdp_ep_params psrv = { .ops = &sink_ops, .lcore = -1 };
	struct rdp_ep_params pcli = { .lcore = -1 };
	struct rdp_msg *ev;
	struct rte_ring *ring;
	struct rdp_cfg *cfg;
	struct rdp_ep *cli;
	char addr[64];
	int port;

	rdp_test_eal_init("0-1");
	cfg = stream_cfg("shm", 65536);
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	ring = rte_ring_create("ev_left_open", 64, SOCKET_ID_ANY, RING_F_SC_DEQ);
	RDP_ASSERT(ring != NULL);
	pcli.events = ring;
	port = rdp_listen("127.0.0.1:0", &psrv);
	RDP_ASSERT(port > 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	cli = rdp_connect(addr, &pcli);
	RDP_ASSERT_EQ(rdp_ep_wait_established(cli, 5000), 0);
	/* nobody dequeues: rdp_fini() closes it and does not wait for the ring */
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_endpoint_count(), 0);
	/* what is left in the ring names a released endpoint: only free it */
	while (rdp_event_dequeue_burst(ring, &ev, 1) == 1)
		rdp_msg_free(ev);
	rte_ring_free(ring);
	rdp_cfg_free(cfg);
	return 0;
}
