/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-sided operations end to end (rdp_rdma.h), on shm or the driver
 * given with --driver: WRITE then a
 * message, with the data in place when the message arrives; READs beyond
 * the read depth waiting for their slots (shm fails a READ beyond them, so
 * a slip shows as a failure); a bad key failing the endpoint with every
 * operation and message reported once; regions busy while used; refusals;
 * regions the library allocates (rdp_region_alloc()), made before the
 * endpoint connects (on shm a memcpy, no system call) or after it (on shm
 * through the key table), with the same checks.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>

#include "ep_private.h"
#include "ep_stream.h"
#include "rdp_driver.h"
#include "rdp_rdma.h"
#include "rdp_test.h"

#define REGION 65536u
#define MAX_UD 4096u
/* An allocated server region is this much longer than REGION: not a whole
 * number of pages, so its last page holds bytes outside it. */
#define ODD_TAIL 100u

/* What the client saw, per user_data: done, failed (with the last status). */
struct seen {
	unsigned int done[MAX_UD];
	unsigned int failed[MAX_UD];
	int status[MAX_UD];
	unsigned int events;      /* (atomic) RDMA events */
	unsigned int replies;     /* (atomic) messages back from the server */
	unsigned int send_failed; /* (atomic) */
	unsigned int state;       /* (atomic) last state */
	int state_err;
};

static struct seen seen;
static struct rdp_ep *server_ep;     /* (atomic) */
static uint8_t *server_mem;          /* the server's region, misaligned */
static unsigned int server_checked, server_bad; /* (atomic) */
/* the server keeps what it receives, unanswered, so its credits run out */
#define MAX_HELD 4096u
static bool server_holds;            /* (atomic) */
static struct rdp_msg *held[MAX_HELD];
static unsigned int held_n;          /* (atomic, release after held[]) */

static void
pattern(uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t i, x = seed * 2654435761u + 1;

	for (i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
}

/* ---- server: checks what a message says was written, answers ---- */

struct claim {
	uint32_t seed;
	uint32_t offset;
	uint32_t len;
};

static uint16_t
server_recv(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	static uint8_t want[REGION];
	uint16_t i;

	RTE_SET_USED(arg);
	for (i = 0; i < n; i++) {
		struct claim c;
		struct rdp_msg *r;

		if (__atomic_load_n(&server_holds, __ATOMIC_ACQUIRE)) {
			RDP_ASSERT(held_n < MAX_HELD);
			held[held_n] = msgs[i];
			__atomic_store_n(&held_n, held_n + 1, __ATOMIC_RELEASE);
			continue;
		}

		RDP_ASSERT_EQ(msgs[i]->pkt_len, sizeof(c));
		memcpy(&c, msgs[i]->data, sizeof(c));
		pattern(want, c.len, c.seed);
		if (memcmp(server_mem + c.offset, want, c.len) != 0)
			__atomic_fetch_add(&server_bad, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&server_checked, 1, __ATOMIC_RELEASE);
		rdp_msg_free(msgs[i]);
		r = rdp_msg_alloc(ep, 8);
		RDP_ASSERT(r != NULL);
		RDP_ASSERT_EQ(rdp_ep_send_burst(ep, &r, 1), 1);
	}
	return n;
}

static void
server_state(struct rdp_ep *ep, enum rdp_ep_state state, int err, void *arg)
{
	RTE_SET_USED(err);
	RTE_SET_USED(arg);
	if (state == RDP_EP_ESTABLISHED)
		__atomic_store_n(&server_ep, ep, __ATOMIC_RELEASE);
}

static const struct rdp_ep_ops server_ops = { .on_recv = server_recv, .on_state = server_state };

/* ---- client: counts every event, by user_data ---- */

static void
client_event(struct rdp_msg *m)
{
	if (m->event == RDP_EV_RDMA_DONE || m->event == RDP_EV_RDMA_FAILED) {
		RDP_ASSERT(m->user_data < MAX_UD);
		if (m->event == RDP_EV_RDMA_DONE)
			seen.done[m->user_data]++;
		else
			seen.failed[m->user_data]++;
		seen.status[m->user_data] = m->status;
		__atomic_fetch_add(&seen.events, 1, __ATOMIC_RELEASE);
	} else if (m->event == RDP_EV_SEND_FAILED) {
		__atomic_fetch_add(&seen.send_failed, 1, __ATOMIC_RELEASE);
	} else if (m->event == RDP_EV_RECV) {
		__atomic_fetch_add(&seen.replies, 1, __ATOMIC_RELEASE);
	} else if (m->event == RDP_EV_STATE) {
		seen.state_err = m->status;
		__atomic_store_n(&seen.state, (unsigned int)m->user_data, __ATOMIC_RELEASE);
	}
	rdp_msg_free(m);
}

static uint16_t
client_recv(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	uint16_t i;

	RTE_SET_USED(ep);
	RTE_SET_USED(arg);
	for (i = 0; i < n; i++)
		client_event(msgs[i]);
	return n;
}

static void
client_send(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	uint16_t i;

	RTE_SET_USED(ep);
	RTE_SET_USED(arg);
	for (i = 0; i < n; i++)
		client_event(msgs[i]);
}

static void
client_state(struct rdp_ep *ep, enum rdp_ep_state state, int err, void *arg)
{
	RTE_SET_USED(ep);
	RTE_SET_USED(arg);
	seen.state_err = err;
	__atomic_store_n(&seen.state, state, __ATOMIC_RELEASE);
}

static const struct rdp_ep_ops client_ops = {
	.on_recv = client_recv, .on_send = client_send, .on_state = client_state,
};

/* How a rig makes its two regions. */
enum rig_mem {
	RIG_APP,       /* application memory at odd addresses (rdp_region_register()) */
	RIG_ALLOC,     /* rdp_region_alloc(), before the endpoint connects (the
			* server's of REGION + ODD_TAIL bytes) */
};

struct rig {
	struct rdp_cfg *cfg;
	struct rdp_ep *ep;          /* the client's */
	struct rte_ring *events;    /* pipeline: the client's events */
	struct rdp_region *server;  /* REGION bytes at server_mem (RIG_ALLOC: + ODD_TAIL) */
	struct rdp_region *local_region; /* the client's REGION bytes at local */
	uint8_t *server_alloc, *local_alloc, *local;
	struct rdp_rdesc remote;    /* the server's, as the client decoded it */
};

/* Serve the pipeline ring, or let the poller run the callbacks. */
static void
pump(struct rig *g)
{
	struct rdp_msg *ev[32];
	uint16_t n, i;

	if (g->events == NULL) {
		usleep(100);
		return;
	}
	n = rdp_event_dequeue_burst(g->events, ev, RTE_DIM(ev));
	for (i = 0; i < n; i++)
		client_event(ev[i]);
	if (n == 0)
		usleep(50);
}

#define WAIT_FOR(g, cond, what)                                                          \
	do {                                                                             \
		double deadline_ = rdp_clock_s() + 10;                                   \
		while (!(cond)) {                                                        \
			RDP_ASSERT_MSG(rdp_clock_s() < deadline_, "no %s within 10 s", what); \
			pump(g);                                                         \
		}                                                                        \
	} while (0)

/* The rig's server and client regions, of REGION bytes each. */
static void
rig_regions(struct rig *g, enum rig_mem mem, unsigned int server_access)
{
	if (mem == RIG_ALLOC) {
		g->server = rdp_region_alloc(REGION + ODD_TAIL, server_access, -1);
		RDP_ASSERT_MSG(g->server != NULL, "rdp_region_alloc: %s", rdp_err_msg());
		g->local_region = rdp_region_alloc(REGION, 0, -1);
		RDP_ASSERT_MSG(g->local_region != NULL, "rdp_region_alloc: %s", rdp_err_msg());
		server_mem = rdp_region_addr(g->server);
		g->local = rdp_region_addr(g->local_region);
		return;
	}
	/* application memory at odd addresses: no alignment is assumed */
	g->server_alloc = calloc(1, REGION + 64);
	g->local_alloc = calloc(1, REGION + 64);
	RDP_ASSERT(g->server_alloc != NULL && g->local_alloc != NULL);
	server_mem = g->server_alloc + 1;
	g->server = rdp_region_register(server_mem, REGION, server_access);
	RDP_ASSERT_MSG(g->server != NULL, "rdp_region_register: %s", rdp_err_msg());
	g->local = g->local_alloc + 7;
	g->local_region = rdp_region_register(g->local, REGION, 0);
	RDP_ASSERT_MSG(g->local_region != NULL, "rdp_region_register: %s", rdp_err_msg());
}

/* A region's descriptor as the client gets it: as bytes, as an application would send it. */
static void
rdesc_through_the_wire(const struct rdp_region *r, struct rdp_rdesc *out)
{
	uint8_t wire[RDP_RDESC_LEN];
	struct rdp_rdesc d;
	char why[128] = "";

	rdp_region_rdesc(r, &d);
	rdp_rdesc_encode(&d, wire);
	RDP_ASSERT_MSG(rdp_rdesc_decode(wire, sizeof(wire), out, why, sizeof(why)) == 0,
		       "%s", why);
}

/* The library up, nothing connected yet. */
static void
rig_init(struct rig *g, const char *read_depth)
{
	memset(g, 0, sizeof(*g));
	memset(&seen, 0, sizeof(seen));
	__atomic_store_n(&server_holds, false, __ATOMIC_RELAXED);
	held_n = 0;
	rdp_test_eal_init("0-1");
	/* shm unless --driver says otherwise (the rxe lane runs these on verbs) */
	g->cfg = stream_cfg(rdp_test_driver_or("shm"), 4096);
	stream_cfg_env(g->cfg);
	RDP_ASSERT_EQ(rdp_cfg_set(g->cfg, RDP_CFG_GLOBAL, "read_depth", read_depth, "test"), 0);
	RDP_ASSERT_MSG(rdp_init(g->cfg) == 0, "rdp_init: %s", rdp_err_msg());
}

/* The rig's regions, then its endpoint and the server's. */
static void
rig_connect(struct rig *g, bool pipeline, unsigned int server_access, enum rig_mem mem)
{
	struct rdp_ep_params srv = { .ops = &server_ops, .lcore = -1 };
	struct rdp_ep_params cli = { .ops = &client_ops, .lcore = -1 };

	if (pipeline) {
		g->events = rte_ring_create("rdma-events", 4096, (int)rte_socket_id(), 0);
		RDP_ASSERT(g->events != NULL);
		cli.ops = NULL;
		cli.events = g->events;
	}
	rig_regions(g, mem, server_access);
	rdesc_through_the_wire(g->server, &g->remote);
	g->ep = stream_loopback_connect(&srv, &cli);
	WAIT_FOR(g, __atomic_load_n(&server_ep, __ATOMIC_ACQUIRE) != NULL, "server endpoint");
}

static void
rig_open_mem(struct rig *g, bool pipeline, const char *read_depth, unsigned int server_access,
	     enum rig_mem mem)
{
	rig_init(g, read_depth);
	rig_connect(g, pipeline, server_access, mem);
}

static void
rig_open(struct rig *g, bool pipeline, const char *read_depth, unsigned int server_access)
{
	rig_open_mem(g, pipeline, read_depth, server_access, RIG_APP);
}

static void
rig_close(struct rig *g)
{
	rdp_ep_close(g->ep);
	WAIT_FOR(g, __atomic_load_n(&seen.state, __ATOMIC_ACQUIRE) == RDP_EP_CLOSED,
		 "CLOSED event");
	RDP_ASSERT_EQ(rdp_region_deregister(g->server), 0);
	RDP_ASSERT_EQ(rdp_region_deregister(g->local_region), 0);
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	if (g->events != NULL)
		rte_ring_free(g->events);
	rdp_cfg_free(g->cfg);
	free(g->server_alloc);
	free(g->local_alloc);
}

static struct rdp_rdma_op
op(const struct rig *g, uint8_t opcode, uint64_t off, uint32_t len, uint64_t roff, uint64_t ud)
{
	return (struct rdp_rdma_op){
		.opcode = opcode, .region = g->local_region, .offset = off, .len = len,
		.remote = g->remote, .remote_offset = roff, .user_data = ud,
	};
}

/*
 * Rounds of several WRITEs, then a message naming what they wrote: the
 * message arrives after the data (RC order), so the server finds every
 * byte in place; the next round waits for the server's answer.
 */
static int
write_then_message(bool pipeline)
{
	enum { ROUNDS = 500, PER_ROUND = 4 };
	struct rig g;
	uint32_t r, k;

	rig_open(&g, pipeline, "16", RDP_REGION_REMOTE_WRITE);
	for (r = 0; r < ROUNDS; r++) {
		struct rdp_rdma_op ops[PER_ROUND];
		uint32_t len = 1 + (r * 977u) % (REGION / PER_ROUND / 2);
		uint32_t base = (r * 4099u) % (REGION / 2);
		struct claim c = { .seed = r, .offset = base, .len = len * PER_ROUND };
		struct rdp_msg *m;

		/* one pattern over the whole claim, written in PER_ROUND pieces */
		pattern(g.local, c.len, c.seed);
		for (k = 0; k < PER_ROUND; k++)
			ops[k] = op(&g, RDP_RDMA_WRITE, k * len, len, base + k * len,
				    (r * PER_ROUND + k) % MAX_UD);
		RDP_ASSERT_EQ(rdp_ep_rdma_burst(g.ep, ops, PER_ROUND), PER_ROUND);
		m = rdp_msg_alloc(g.ep, sizeof(c));
		RDP_ASSERT(m != NULL);
		memcpy(m->data, &c, sizeof(c));
		RDP_ASSERT_EQ(rdp_ep_send_burst(g.ep, &m, 1), 1);
		WAIT_FOR(&g, __atomic_load_n(&seen.replies, __ATOMIC_ACQUIRE) == r + 1 &&
			 __atomic_load_n(&seen.events, __ATOMIC_ACQUIRE) == (r + 1) * PER_ROUND,
			 "answer and WRITE events");
	}
	RDP_ASSERT_EQ(__atomic_load_n(&server_checked, __ATOMIC_ACQUIRE), ROUNDS);
	RDP_ASSERT_EQ(__atomic_load_n(&server_bad, __ATOMIC_ACQUIRE), 0);
	for (k = 0; k < ROUNDS * PER_ROUND && k < MAX_UD; k++) {
		RDP_ASSERT_MSG(seen.done[k] == 1 && seen.failed[k] == 0,
			       "operation %u: done %u, failed %u", k, seen.done[k], seen.failed[k]);
	}
	{
		struct rdp_ep_stats st;

		rdp_ep_stats_get(g.ep, &st);
		RDP_ASSERT_EQ(st.rdma_done, ROUNDS * PER_ROUND);
		RDP_ASSERT_EQ(st.rdma_failed, 0);
		RDP_ASSERT_EQ(st.enomem, 0);
	}
	rig_close(&g);
	return 0;
}

RDP_TEST(e2e, rdma_write_then_message_finds_the_data_in_place_rtc)
{
	return write_then_message(false);
}

RDP_TEST(e2e, rdma_write_then_message_finds_the_data_in_place_pipeline)
{
	return write_then_message(true);
}

/* A message of a claim of nothing: the server checks no byte and answers. */
static void
send_empty_claim(struct rig *g)
{
	struct claim c = { .seed = 0, .offset = 0, .len = 0 };
	struct rdp_msg *m = rdp_msg_alloc(g->ep, sizeof(c));

	RDP_ASSERT(m != NULL);
	memcpy(m->data, &c, sizeof(c));
	RDP_ASSERT_EQ(rdp_ep_send_burst(g->ep, &m, 1), 1);
}

static void
hold_the_poller(struct rdp_ep *ep, void *arg)
{
	RTE_SET_USED(ep);
	__atomic_store_n((int *)arg, 1, __ATOMIC_RELEASE);
	usleep(50 * 1000);
}

/*
 * A WRITE queued just ahead of a message that waits for remote credit (the
 * peer holds every message it got): nothing may follow the WRITE for a
 * while to make its success visible, so it is reported while the message
 * still waits, not when credit comes back.
 */
static int
write_ahead_of_a_credit_blocked_message(bool pipeline)
{
	struct rdp_ep_stats st;
	struct rdp_rdma_op w;
	struct rig g;
	uint32_t r, i;
	int in_call = 0;

	rig_open(&g, pipeline, "16", RDP_REGION_REMOTE_WRITE);
	__atomic_store_n(&server_holds, true, __ATOMIC_RELEASE);
	rdp_ep_stats_get(g.ep, &st);
	r = st.remote_credits;
	RDP_ASSERT(r > 0 && r < MAX_HELD);
	for (i = 0; i < r; i++)
		send_empty_claim(&g);
	WAIT_FOR(&g, __atomic_load_n(&held_n, __ATOMIC_ACQUIRE) == r,
		 "the server holding every message");
	rdp_ep_stats_get(g.ep, &st);
	RDP_ASSERT_EQ(st.remote_credits, 0);
	/* the WRITE and the message reach the poller together, in one pass */
	RDP_ASSERT_EQ(rdp_ep_call(g.ep, hold_the_poller, &in_call), 0);
	WAIT_FOR(&g, __atomic_load_n(&in_call, __ATOMIC_ACQUIRE) != 0, "the poller in the call");
	w = op(&g, RDP_RDMA_WRITE, 0, 512, 0, 7);
	RDP_ASSERT_EQ(rdp_ep_rdma_burst(g.ep, &w, 1), 1);
	send_empty_claim(&g);
	WAIT_FOR(&g, __atomic_load_n(&seen.events, __ATOMIC_ACQUIRE) == 1,
		 "the WRITE's event while the message behind it waits for credit");
	RDP_ASSERT_EQ(seen.done[7], 1);
	rdp_ep_stats_get(g.ep, &st);
	RDP_ASSERT_EQ(st.remote_credits, 0);
	RDP_ASSERT_EQ(__atomic_load_n(&held_n, __ATOMIC_ACQUIRE), r);
	/* the server lets go: its credits come back and the message goes */
	__atomic_store_n(&server_holds, false, __ATOMIC_RELEASE);
	for (i = 0; i < r; i++)
		rdp_msg_free(held[i]);
	WAIT_FOR(&g, __atomic_load_n(&seen.replies, __ATOMIC_ACQUIRE) == 1, "the answer");
	RDP_ASSERT_EQ(__atomic_load_n(&server_checked, __ATOMIC_ACQUIRE), 1);
	RDP_ASSERT_EQ(seen.done[7], 1);
	RDP_ASSERT_EQ(__atomic_load_n(&seen.events, __ATOMIC_ACQUIRE), 1);
	rig_close(&g);
	return 0;
}

RDP_TEST(e2e, rdma_write_ahead_of_a_credit_blocked_message_is_reported_at_once_rtc)
{
	return write_ahead_of_a_credit_blocked_message(false);
}

RDP_TEST(e2e, rdma_write_ahead_of_a_credit_blocked_message_is_reported_at_once_pipeline)
{
	return write_ahead_of_a_credit_blocked_message(true);
}

/*
 * Many more READs at once than the read depth: they wait for their slots
 * (shm fails a READ beyond its responder's slots with REM_INV_REQ_ERR, so
 * one too many would fail the endpoint) and each brings its bytes.
 */
static int
reads_beyond_the_depth(bool pipeline)
{
	enum { N = 256, LEN = REGION / N };
	struct rdp_rdma_op ops[N];
	struct rdp_ep_stats st;
	struct rig g;
	uint32_t i;

	rig_open(&g, pipeline, "2", RDP_REGION_REMOTE_READ);
	/* the device may serve fewer (rxe serves many more) */
	RDP_ASSERT(rdp_ep_read_depth(g.ep) >= 1 && rdp_ep_read_depth(g.ep) <= 2);
	pattern(server_mem, REGION, 99);
	/* in reverse: each lands somewhere else than it came from */
	for (i = 0; i < N; i++)
		ops[i] = op(&g, RDP_RDMA_READ, (uint64_t)(N - 1 - i) * LEN, LEN, (uint64_t)i * LEN,
			    i);
	RDP_ASSERT_EQ(rdp_ep_rdma_burst(g.ep, ops, N), N);
	WAIT_FOR(&g, __atomic_load_n(&seen.events, __ATOMIC_ACQUIRE) == N, "READ events");
	for (i = 0; i < N; i++) {
		RDP_ASSERT_MSG(seen.done[i] == 1, "READ %u: done %u, failed %u (status %d)", i,
			       seen.done[i], seen.failed[i], seen.status[i]);
		RDP_ASSERT_MSG(memcmp(g.local + (N - 1 - i) * LEN, server_mem + i * LEN, LEN) == 0,
			       "READ %u brought other bytes", i);
	}
	rdp_ep_stats_get(g.ep, &st);
	RDP_ASSERT_EQ(st.rdma_done, N);
	RDP_ASSERT_EQ(st.rdma_bytes, (uint64_t)N * LEN);
	rig_close(&g);
	return 0;
}

RDP_TEST(e2e, rdma_reads_beyond_the_read_depth_wait_for_their_slots_rtc)
{
	return reads_beyond_the_depth(false);
}

RDP_TEST(e2e, rdma_reads_beyond_the_read_depth_wait_for_their_slots_pipeline)
{
	return reads_beyond_the_depth(true);
}

/*
 * A WRITE with a key the peer never gave: the endpoint fails as its QP
 * does; the operation before it completed, it and everything after it
 * (operations and a message) are reported failed, each exactly once.
 */
/* The three operations and the message, queued on the poller before any completion is seen. */
struct bad_key_burst {
	struct rdp_rdma_op *ops;
	struct rdp_msg *m;
	int queued_ops, queued_msgs;
	bool ran;        /* (atomic) */
};

static void
queue_bad_key_burst(struct rdp_ep *ep, void *arg)
{
	struct bad_key_burst *b = arg;

	b->queued_ops = rdp_ep_rdma_burst(ep, b->ops, 3);
	b->queued_msgs = rdp_ep_send_burst(ep, &b->m, 1);
	__atomic_store_n(&b->ran, true, __ATOMIC_RELEASE);
}

static int
bad_key(enum rig_mem mem)
{
	struct rdp_rdma_op ops[3];
	struct bad_key_burst b = { .ops = ops };
	struct rdp_msg *m;
	struct rig g;
	uint32_t i;

	rig_open_mem(&g, false, "16", RDP_REGION_REMOTE_WRITE, mem);
	ops[0] = op(&g, RDP_RDMA_WRITE, 0, 64, 0, 1);
	ops[1] = op(&g, RDP_RDMA_WRITE, 0, 64, 64, 2);
	ops[1].remote.rkey ^= 0x5a00u;
	ops[2] = op(&g, RDP_RDMA_WRITE, 0, 64, 128, 3);
	m = rdp_msg_alloc(g.ep, 16);
	RDP_ASSERT(m != NULL);
	/* from the main thread, a fast device could fail the endpoint before the message */
	b.m = m;
	RDP_ASSERT_EQ(rdp_ep_call(g.ep, queue_bad_key_burst, &b), 0);
	WAIT_FOR(&g, __atomic_load_n(&b.ran, __ATOMIC_ACQUIRE), "the poller's call");
	RDP_ASSERT_EQ(b.queued_ops, 3);
	RDP_ASSERT_EQ(b.queued_msgs, 1);
	WAIT_FOR(&g, __atomic_load_n(&seen.events, __ATOMIC_ACQUIRE) == 3 &&
		 __atomic_load_n(&seen.send_failed, __ATOMIC_ACQUIRE) == 1 &&
		 __atomic_load_n(&seen.state, __ATOMIC_ACQUIRE) == RDP_EP_FAILED,
		 "every report and FAILED");
	RDP_ASSERT_EQ(seen.done[1], 1);
	RDP_ASSERT_EQ(seen.failed[2], 1);
	RDP_ASSERT_EQ(seen.status[2], -EACCES);
	RDP_ASSERT_EQ(seen.failed[3], 1);
	for (i = 1; i <= 3; i++)
		RDP_ASSERT_EQ(seen.done[i] + seen.failed[i], 1);
	RDP_ASSERT_EQ(seen.state_err, -EACCES);
	RDP_ASSERT_EQ(rdp_ep_rdma_burst(g.ep, ops, 1), 0);
	RDP_ASSERT_EQ(rte_errno, ENOTCONN);
	rig_close(&g);
	return 0;
}

RDP_TEST(e2e, rdma_bad_key_fails_the_endpoint_and_reports_everything_once)
{
	return bad_key(RIG_APP);
}

RDP_TEST(e2e, rdma_bad_key_into_an_allocated_region_fails_the_endpoint_likewise)
{
	return bad_key(RIG_ALLOC);
}

/* On the poller, between queueing an operation and its report: the region must stay. */
struct busy_check {
	struct rig *g;
	int queued;
	int dereg;       /* rdp_region_deregister() while the WRITE is in flight */
	bool ran;        /* (atomic) */
};

static void
queue_then_deregister(struct rdp_ep *ep, void *arg)
{
	struct busy_check *b = arg;
	struct rdp_rdma_op o = op(b->g, RDP_RDMA_WRITE, 0, REGION, 0, 5);

	b->queued = rdp_ep_rdma_burst(ep, &o, 1);
	/* its completion is polled, and reported, only after this returns */
	b->dereg = rdp_region_deregister(b->g->local_region);
	__atomic_store_n(&b->ran, true, __ATOMIC_RELEASE);
}

/* A region an operation uses cannot go; once the operation is reported, it can. */
static int
region_in_use(enum rig_mem mem)
{
	struct busy_check b = { 0 };
	struct rig g;

	rig_open_mem(&g, false, "16", RDP_REGION_REMOTE_WRITE | RDP_REGION_REMOTE_READ, mem);
	b.g = &g;
	RDP_ASSERT_EQ(rdp_ep_call(g.ep, queue_then_deregister, &b), 0);
	WAIT_FOR(&g, __atomic_load_n(&b.ran, __ATOMIC_ACQUIRE), "the poller's call");
	RDP_ASSERT_EQ(b.queued, 1);
	RDP_ASSERT_EQ(b.dereg, -EBUSY);
	WAIT_FOR(&g, __atomic_load_n(&seen.events, __ATOMIC_ACQUIRE) == 1, "WRITE event");
	RDP_ASSERT_EQ(seen.done[5], 1);
	rig_close(&g); /* deregisters it, now that nothing uses it */
	return 0;
}

RDP_TEST(e2e, rdma_region_in_use_refuses_to_deregister)
{
	return region_in_use(RIG_APP);
}

/* The allocated region's memory stays too: the WRITE still reads from it. */
RDP_TEST(e2e, rdma_allocated_region_in_use_refuses_to_deregister)
{
	return region_in_use(RIG_ALLOC);
}

/* One burst on two regions, the second in the middle: each region counts its own operations. */
struct two_regions {
	struct rig *g;
	struct rdp_region *other;
	int queued;
	int dereg_local, dereg_other; /* while the burst is in flight */
	bool ran;                     /* (atomic) */
};

static void
queue_on_two_regions(struct rdp_ep *ep, void *arg)
{
	struct two_regions *t = arg;
	struct rdp_rdma_op o[4] = {
		op(t->g, RDP_RDMA_WRITE, 0, 8, 0, 1),
		op(t->g, RDP_RDMA_WRITE, 0, 8, 8, 2),
		op(t->g, RDP_RDMA_WRITE, 0, 8, 16, 3),
		op(t->g, RDP_RDMA_WRITE, 8, 8, 24, 4),
	};

	o[1].region = t->other;
	o[2].region = t->other;
	t->queued = rdp_ep_rdma_burst(ep, o, 4);
	t->dereg_other = rdp_region_deregister(t->other);
	t->dereg_local = rdp_region_deregister(t->g->local_region);
	__atomic_store_n(&t->ran, true, __ATOMIC_RELEASE);
}

/*
 * A burst of WRITEs from region A, B, B, A: neither region can go while
 * they are in flight, and both can once all four are reported.
 */
RDP_TEST(e2e, rdma_burst_over_two_regions_holds_each_until_its_operations_end)
{
	struct two_regions t = { 0 };
	struct rig g;

	rig_open(&g, false, "0", RDP_REGION_REMOTE_WRITE);
	t.g = &g;
	t.other = rdp_region_alloc(4096, 0, -1);
	RDP_ASSERT_MSG(t.other != NULL, "rdp_region_alloc: %s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_ep_call(g.ep, queue_on_two_regions, &t), 0);
	WAIT_FOR(&g, __atomic_load_n(&t.ran, __ATOMIC_ACQUIRE), "the poller's call");
	RDP_ASSERT_EQ(t.queued, 4);
	RDP_ASSERT_EQ(t.dereg_other, -EBUSY);
	RDP_ASSERT_EQ(t.dereg_local, -EBUSY);
	WAIT_FOR(&g, __atomic_load_n(&seen.events, __ATOMIC_ACQUIRE) == 4, "4 WRITE events");
	RDP_ASSERT_EQ(seen.done[1] + seen.done[2] + seen.done[3] + seen.done[4], 4);
	RDP_ASSERT_EQ(rdp_region_deregister(t.other), 0);
	rig_close(&g); /* deregisters the local one, now that nothing uses it */
	return 0;
}

/* What is refused before it is queued, with the reason in rte_errno; nothing is reported. */
RDP_TEST(e2e, rdma_refuses_bad_operations_before_queueing_them)
{
	struct rdp_rdma_op o;
	struct rig g;

	rig_open(&g, false, "0", RDP_REGION_REMOTE_WRITE);
	RDP_ASSERT_EQ(rdp_ep_read_depth(g.ep), 0);
	o = op(&g, 9, 0, 8, 0, 1);
	RDP_ASSERT_EQ(rdp_ep_rdma_burst(g.ep, &o, 1), 0);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	o = op(&g, RDP_RDMA_WRITE, 0, 0, 0, 1);
	RDP_ASSERT_EQ(rdp_ep_rdma_burst(g.ep, &o, 1), 0);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	o = op(&g, RDP_RDMA_WRITE, REGION - 4, 8, 0, 1);
	RDP_ASSERT_EQ(rdp_ep_rdma_burst(g.ep, &o, 1), 0);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	o = op(&g, RDP_RDMA_WRITE, 0, 8, REGION - 4, 1);
	RDP_ASSERT_EQ(rdp_ep_rdma_burst(g.ep, &o, 1), 0);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	o = op(&g, RDP_RDMA_WRITE, 0, 8, UINT64_MAX - 2, 1);
	RDP_ASSERT_EQ(rdp_ep_rdma_burst(g.ep, &o, 1), 0);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	o = op(&g, RDP_RDMA_WRITE, 0, 8, 0, 1);
	o.region = NULL;
	RDP_ASSERT_EQ(rdp_ep_rdma_burst(g.ep, &o, 1), 0);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	/* the descriptor grants WRITE only */
	o = op(&g, RDP_RDMA_READ, 0, 8, 0, 1);
	o.remote.access = RDP_REGION_REMOTE_WRITE;
	RDP_ASSERT_EQ(rdp_ep_rdma_burst(g.ep, &o, 1), 0);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	/* a peer that serves no READ */
	o.remote.access = RDP_REGION_REMOTE_READ | RDP_REGION_REMOTE_WRITE;
	RDP_ASSERT_EQ(rdp_ep_rdma_burst(g.ep, &o, 1), 0);
	RDP_ASSERT_EQ(rte_errno, ENOTSUP);
	/* a good one after a bad one in the same burst: the bad one stops it */
	{
		struct rdp_rdma_op two[2] = { op(&g, RDP_RDMA_WRITE, 0, 8, 0, 7),
					      op(&g, RDP_RDMA_WRITE, 0, 0, 0, 8) };

		RDP_ASSERT_EQ(rdp_ep_rdma_burst(g.ep, two, 2), 1);
		RDP_ASSERT_EQ(rte_errno, EINVAL);
	}
	WAIT_FOR(&g, __atomic_load_n(&seen.events, __ATOMIC_ACQUIRE) == 1, "the good WRITE");
	RDP_ASSERT_EQ(seen.done[7], 1);
	RDP_ASSERT_EQ(seen.done[8] + seen.failed[8] + seen.done[1] + seen.failed[1], 0);
	rig_close(&g);
	return 0;
}

/* ---- regions the library allocates ---- */

/* One-sided WRs the device ran with a system call (shm: process_vm_readv/writev). */
static uint64_t
dev_rdma_syscalls(void)
{
	struct rdp_dev_stats st;

	RDP_ASSERT_EQ(rdp_dev_stats_get(rdp_rt.devs[0].dev, &st), 0);
	return st.rdma_syscalls;
}

static bool
on_shm(void)
{
	return strcmp(rdp_rt.devs[0].dev->drv->name, "shm") == 0;
}

/* Queue one operation and wait for its report: it must succeed. */
static void
run_ok(struct rig *g, const struct rdp_rdma_op *o)
{
	unsigned int before = __atomic_load_n(&seen.events, __ATOMIC_ACQUIRE);

	RDP_ASSERT_EQ(rdp_ep_rdma_burst(g->ep, o, 1), 1);
	WAIT_FOR(g, __atomic_load_n(&seen.events, __ATOMIC_ACQUIRE) == before + 1, "the report");
	RDP_ASSERT_MSG(seen.done[o->user_data] == 1, "operation %" PRIu64 ": done %u, failed %u "
		       "(status %d)", o->user_data, seen.done[o->user_data],
		       seen.failed[o->user_data], seen.status[o->user_data]);
}

/* Queue one operation the peer's device must refuse: it and the endpoint fail with -EACCES. */
static void
run_refused(struct rig *g, const struct rdp_rdma_op *o)
{
	unsigned int before = __atomic_load_n(&seen.events, __ATOMIC_ACQUIRE);

	RDP_ASSERT_EQ(rdp_ep_rdma_burst(g->ep, o, 1), 1);
	WAIT_FOR(g, __atomic_load_n(&seen.events, __ATOMIC_ACQUIRE) == before + 1 &&
		 __atomic_load_n(&seen.state, __ATOMIC_ACQUIRE) == RDP_EP_FAILED,
		 "the report and FAILED");
	RDP_ASSERT_EQ(seen.done[o->user_data], 0);
	RDP_ASSERT_EQ(seen.failed[o->user_data], 1);
	RDP_ASSERT_EQ(seen.status[o->user_data], -EACCES);
	RDP_ASSERT_EQ(seen.state_err, -EACCES);
}

/* The arguments rdp_region_alloc() refuses, and before rdp_init(). */
static void
alloc_refusals(bool up)
{
	const unsigned int rw = RDP_REGION_REMOTE_WRITE | RDP_REGION_REMOTE_READ;

	if (!up) {
		RDP_ASSERT(rdp_region_alloc(4096, rw, -1) == NULL);
		RDP_ASSERT_EQ(rte_errno, ENODEV);
		return;
	}
	RDP_ASSERT(rdp_region_alloc(0, rw, -1) == NULL);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	RDP_ASSERT(rdp_region_alloc(4096, 4, -1) == NULL);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	RDP_ASSERT(rdp_region_alloc(4096, rw, -2) == NULL);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	RDP_ASSERT(rdp_region_alloc(4096, rw, RTE_MAX_NUMA_NODES) == NULL);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
}

/*
 * Regions allocated before the endpoint connects: zero-filled; a WRITE
 * lands where it says (the server checks it when the message after it
 * arrives) and a READ brings it back; on shm both are copies into memory
 * the peer mapped, with no system call.
 */
RDP_TEST(e2e, rdma_allocated_regions_round_trip_with_no_system_call)
{
	enum { LEN = REGION / 2, ROFF = 101, SEED = 7 };
	static const uint8_t zero[REGION + ODD_TAIL];
	struct claim c = { .seed = SEED, .offset = ROFF, .len = LEN };
	struct rdp_rdma_op o;
	struct rdp_msg *m;
	uint64_t calls;
	struct rig g;

	alloc_refusals(false);
	rig_open_mem(&g, false, "16", RDP_REGION_REMOTE_WRITE | RDP_REGION_REMOTE_READ, RIG_ALLOC);
	alloc_refusals(true);
	RDP_ASSERT_EQ(g.remote.len, REGION + ODD_TAIL);
	RDP_ASSERT(memcmp(server_mem, zero, sizeof(zero)) == 0);
	RDP_ASSERT(memcmp(g.local, zero, REGION) == 0);
	calls = dev_rdma_syscalls();
	pattern(g.local, LEN, SEED);
	o = op(&g, RDP_RDMA_WRITE, 0, LEN, ROFF, 1);
	RDP_ASSERT_EQ(rdp_ep_rdma_burst(g.ep, &o, 1), 1);
	m = rdp_msg_alloc(g.ep, sizeof(c));
	RDP_ASSERT(m != NULL);
	memcpy(m->data, &c, sizeof(c));
	RDP_ASSERT_EQ(rdp_ep_send_burst(g.ep, &m, 1), 1);
	WAIT_FOR(&g, __atomic_load_n(&seen.replies, __ATOMIC_ACQUIRE) == 1 &&
		 __atomic_load_n(&seen.events, __ATOMIC_ACQUIRE) == 1, "answer and WRITE event");
	RDP_ASSERT_EQ(seen.done[1], 1);
	RDP_ASSERT_EQ(__atomic_load_n(&server_checked, __ATOMIC_ACQUIRE), 1);
	RDP_ASSERT_EQ(__atomic_load_n(&server_bad, __ATOMIC_ACQUIRE), 0);
	/* what the WRITE placed, and only there, comes back with a READ */
	o = op(&g, RDP_RDMA_READ, LEN, LEN, ROFF - 1, 2);
	run_ok(&g, &o);
	RDP_ASSERT_EQ(g.local[LEN], 0);
	RDP_ASSERT(memcmp(g.local + LEN + 1, g.local, LEN - 1) == 0);
	if (on_shm())
		RDP_ASSERT_EQ(dev_rdma_syscalls() - calls, 0);
	rig_close(&g);
	return 0;
}

/*
 * A region allocated once the endpoint is up: its peer did not map it, and
 * reaches it all the same (on shm through the key table, a system call per
 * operation). The region's own bounds still hold there, to the byte: a
 * WRITE past its end, in its last page, is a remote access error.
 */
RDP_TEST(e2e, rdma_region_allocated_after_connect_is_reached_within_its_bounds)
{
	enum { LATE = REGION + ODD_TAIL, LEN = 5000, ROFF = 3 };
	struct rdp_region *late;
	struct rdp_rdesc d;
	struct rdp_rdma_op o;
	uint8_t *mem;
	uint64_t calls;
	struct rig g;

	rig_open_mem(&g, false, "16", RDP_REGION_REMOTE_WRITE | RDP_REGION_REMOTE_READ, RIG_ALLOC);
	late = rdp_region_alloc(LATE, RDP_REGION_REMOTE_WRITE | RDP_REGION_REMOTE_READ, -1);
	RDP_ASSERT_MSG(late != NULL, "rdp_region_alloc: %s", rdp_err_msg());
	mem = rdp_region_addr(late);
	rdesc_through_the_wire(late, &d);
	calls = dev_rdma_syscalls();
	pattern(g.local, LEN, 11);
	o = op(&g, RDP_RDMA_WRITE, 0, LEN, ROFF, 1);
	o.remote = d;
	run_ok(&g, &o);
	RDP_ASSERT(memcmp(mem + ROFF, g.local, LEN) == 0);
	RDP_ASSERT_EQ(mem[ROFF - 1], 0);
	RDP_ASSERT_EQ(mem[ROFF + LEN], 0);
	/* the last byte of the region, back from the far end */
	mem[LATE - 1] = 0xa5;
	o = op(&g, RDP_RDMA_READ, REGION - 1, 1, LATE - 1, 2);
	o.remote = d;
	run_ok(&g, &o);
	RDP_ASSERT_EQ(g.local[REGION - 1], 0xa5);
	if (on_shm())
		RDP_ASSERT_EQ(dev_rdma_syscalls() - calls, 2);
	/* the descriptor stretched to the end of the page: the device still refuses */
	d.len = RTE_ALIGN_CEIL(LATE, 4096u);
	o = op(&g, RDP_RDMA_WRITE, 0, 8, LATE, 3);
	o.remote = d;
	run_refused(&g, &o);
	RDP_ASSERT_EQ(mem[LATE - 1], 0xa5);
	RDP_ASSERT_EQ(rdp_region_deregister(late), 0);
	rig_close(&g);
	return 0;
}

/* The same bound on a region the peer mapped at connect: its mapping's last page is larger. */
RDP_TEST(e2e, rdma_write_past_an_allocated_region_in_its_last_page_is_refused)
{
	struct rdp_rdma_op o;
	struct rig g;

	rig_open_mem(&g, false, "16", RDP_REGION_REMOTE_WRITE, RIG_ALLOC);
	o = op(&g, RDP_RDMA_WRITE, 0, 8, REGION + ODD_TAIL - 8, 1);
	run_ok(&g, &o);
	o = op(&g, RDP_RDMA_WRITE, 0, 8, REGION + ODD_TAIL, 2);
	o.remote.len = RTE_ALIGN_CEIL(REGION + ODD_TAIL, 4096u);
	run_refused(&g, &o);
	rig_close(&g);
	return 0;
}

/*
 * A region deregistered after its peer mapped it: the peer's mapping
 * outlives it, but a WRITE with its descriptor is a remote access error,
 * as on a NIC, not a copy into memory nobody owns any more.
 */
RDP_TEST(e2e, rdma_write_into_a_deregistered_allocated_region_is_refused)
{
	struct rdp_rdma_op o;
	struct rig g;

	rig_open_mem(&g, false, "16", RDP_REGION_REMOTE_WRITE, RIG_ALLOC);
	o = op(&g, RDP_RDMA_WRITE, 0, 64, 0, 1);
	run_ok(&g, &o);
	RDP_ASSERT_EQ(rdp_region_deregister(g.server), 0);
	g.server = NULL;
	o = op(&g, RDP_RDMA_WRITE, 0, 64, 0, 2);
	run_refused(&g, &o);
	rig_close(&g);
	return 0;
}

/*
 * More regions than one rendezvous can carry (a socket message holds 250
 * fds on shm): the endpoint still connects, its receive buffers among what
 * the peer maps, and every region is reached, those left out of the
 * mapping through the key table.
 */
RDP_TEST(e2e, rdma_more_allocated_regions_than_a_rendezvous_carries_are_all_reached)
{
	enum { N = 300 };
	static struct rdp_region *many[N];
	const unsigned int rw = RDP_REGION_REMOTE_WRITE | RDP_REGION_REMOTE_READ;
	struct rdp_rdma_op o;
	uint64_t calls;
	struct rig g;
	uint32_t i;

	rig_init(&g, "16");
	for (i = 0; i < N; i++) {
		many[i] = rdp_region_alloc(4096, rw, -1);
		RDP_ASSERT_MSG(many[i] != NULL, "region %u: rdp_region_alloc: %s", i, rdp_err_msg());
	}
	rig_connect(&g, false, rw, RIG_ALLOC);
	calls = dev_rdma_syscalls();
	for (i = 0; i < N; i++) {
		uint32_t word = 0x9e3779b9u * (i + 1);

		memcpy(g.local, &word, sizeof(word));
		o = op(&g, RDP_RDMA_WRITE, 0, sizeof(word), 4096 - sizeof(word), i);
		rdesc_through_the_wire(many[i], &o.remote);
		run_ok(&g, &o);
		RDP_ASSERT_MSG(memcmp((uint8_t *)rdp_region_addr(many[i]) + 4096 - sizeof(word),
				      &word, sizeof(word)) == 0, "region %u: the WRITE is not there", i);
	}
	/* and the rig's own pair, carried like any other */
	o = op(&g, RDP_RDMA_WRITE, 0, 8, 0, N);
	run_ok(&g, &o);
	if (on_shm()) {
		calls = dev_rdma_syscalls() - calls;
		RDP_ASSERT_MSG(calls > 0 && calls < N, "%" PRIu64 " of %u WRITEs by system call",
			       calls, N + 1);
	}
	for (i = 0; i < N; i++)
		RDP_ASSERT_EQ(rdp_region_deregister(many[i]), 0);
	rig_close(&g);
	return 0;
}

RDP_TEST(unit, rdesc_round_trips_and_names_each_bad_field)
{
	struct rdp_rdesc d = { .addr = 0x7f0012345679ull, .len = 65536, .rkey = 0x1234,
			       .access = RDP_REGION_REMOTE_READ }, out;
	uint8_t buf[RDP_RDESC_LEN], bad[RDP_RDESC_LEN];
	char why[160] = "";

	rdp_rdesc_encode(&d, buf);
	RDP_ASSERT_EQ(rdp_rdesc_decode(buf, sizeof(buf), &out, why, sizeof(why)), 0);
	RDP_ASSERT(out.addr == d.addr && out.len == d.len && out.rkey == d.rkey &&
		   out.access == d.access);
	RDP_ASSERT_EQ(rdp_rdesc_decode(buf, sizeof(buf) - 1, &out, why, sizeof(why)), -EPROTO);
	RDP_ASSERT_STR_EQ(why, "remote descriptor of 27 bytes, expected 28");
	memcpy(bad, buf, sizeof(bad));
	bad[3] ^= 1;
	RDP_ASSERT_EQ(rdp_rdesc_decode(bad, sizeof(bad), &out, why, sizeof(why)), -EPROTO);
	RDP_ASSERT(strstr(why, "field 'check'") != NULL);
	d.len = 0;
	rdp_rdesc_encode(&d, buf);
	RDP_ASSERT_EQ(rdp_rdesc_decode(buf, sizeof(buf), &out, why, sizeof(why)), -EPROTO);
	RDP_ASSERT_STR_EQ(why, "field 'len' = 0, expected at least 1");
	d.len = 16;
	d.addr = UINT64_MAX - 4;
	rdp_rdesc_encode(&d, buf);
	RDP_ASSERT_EQ(rdp_rdesc_decode(buf, sizeof(buf), &out, why, sizeof(why)), -EPROTO);
	RDP_ASSERT(strstr(why, "wrap around") != NULL);
	d.addr = 4096;
	d.access = 8;
	rdp_rdesc_encode(&d, buf);
	RDP_ASSERT_EQ(rdp_rdesc_decode(buf, sizeof(buf), &out, why, sizeof(why)), -EPROTO);
	RDP_ASSERT_STR_EQ(why, "field 'access' = 0x8, expected 1..3");
	return 0;
}
