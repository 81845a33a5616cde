/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rendezvous messages end to end (docs/architecture.md, "Rendezvous"), on
 * shm or the driver given with --driver: checked two-way streams that mix
 * chunked and rendezvous messages (order, bytes, exactly once), messages of
 * 64 MiB in one contiguous buffer, a close that drains rendezvous messages
 * in flight, a receiver that holds them back, and a link that goes down
 * with rendezvous messages in flight (each reported once).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app_hash.h"
#include "ep_private.h"
#include "ep_stream.h"
#include "rdp_test.h"

static struct rdp_cfg *
rndv_cfg(const char *driver, uint32_t max_msg, const char *threshold, const char *pool)
{
	struct rdp_cfg *cfg = stream_cfg(driver, 65536);
	char v[16];

	stream_cfg_env(cfg);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "rndv_threshold", threshold, "test"), 0);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "rndv_pool_size", pool, "test"), 0);
	snprintf(v, sizeof(v), "%u", max_msg);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "max_msg_size", v, "test"), 0);
	RDP_ASSERT_MSG(rdp_cfg_validate(cfg) == 0, "%s", rdp_err_msg());
	return cfg;
}

/*
 * Both ways at once, sizes log-uniform up to 1 MiB (1 % exactly 1 MiB),
 * rendezvous above 16 KiB: every message arrives once, in order, byte for
 * byte, whether it went in chunks or by rendezvous, with no RNR and no
 * ENOMEM; each side's counters agree with what it checked.
 */
static int
mixed_stream(bool pipeline)
{
	struct stream_side srv, cli, *sides[2] = { &srv, &cli };
	struct rdp_ep_params psrv, pcli;
	struct rdp_ep_stats st;
	struct rdp_cfg *cfg;
	struct rdp_ep *ep;
	char addr[64];
	int port, i;

	rdp_test_eal_init("0-1");
	cfg = rndv_cfg(rdp_test_driver_or("shm:cqe_order=random:5"), 1u << 20, "16384",
		       "8388608");
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	stream_side_init(&srv, "server", 11, 12, 600, 1u << 20, 16, pipeline);
	stream_side_init(&cli, "client", 12, 11, 600, 1u << 20, 16, pipeline);
	stream_params(&srv, &psrv);
	stream_params(&cli, &pcli);
	port = rdp_listen("127.0.0.1:0", &psrv);
	RDP_ASSERT_MSG(port > 0, "rdp_listen: %s", rdp_err_msg());
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	ep = rdp_connect(addr, &pcli);
	RDP_ASSERT_MSG(ep != NULL, "rdp_connect: %s", rdp_err_msg());
	RDP_ASSERT_EQ(stream_pump(sides, 2, 120), 0);
	for (i = 0; i < 2; i++) {
		struct stream_side *s = sides[i];

		RDP_ASSERT_MSG(s->error[0] == '\0', "%s", s->error);
		RDP_ASSERT_EQ(s->done, s->count);
		RDP_ASSERT_EQ(s->failed, 0);
		RDP_ASSERT_EQ(s->received, s->expect);
		rdp_ep_stats_get(stream_ep(s), &st);
		RDP_ASSERT_EQ(st.enomem, 0);
		RDP_ASSERT_EQ(st.rnr, 0);
		RDP_ASSERT_EQ(st.msgs_received, s->expect);
		RDP_ASSERT_EQ(st.msgs_sent, s->count);
		RDP_ASSERT_EQ(st.bytes_received, s->bytes);
		printf("%s: %" PRIu64 " sent, %" PRIu64 " received (%.1f MB)\n", s->name, s->done,
		       s->received, s->bytes / 1e6);
	}
	rdp_ep_close(stream_ep(&cli));
	rdp_ep_close(stream_ep(&srv));
	stream_wait_closed(&cli);
	stream_wait_closed(&srv);
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}

RDP_TEST(e2e, rndv_mixed_stream_is_exact_rtc)
{
	return mixed_stream(false);
}

RDP_TEST(e2e, rndv_mixed_stream_is_exact_pipeline)
{
	return mixed_stream(true);
}

/* ---------------------------------------------------------------------- */
/* Hand-driven: large messages, close, back-pressure, failure             */
/* ---------------------------------------------------------------------- */

#define BIG (64u << 20)
#define MAX_SEEN 64

struct big_seen {
	unsigned int received;        /* (atomic) */
	unsigned int bad;             /* (atomic) messages whose bytes were wrong */
	unsigned int done;            /* (atomic) SEND_DONE, by the client */
	unsigned int failed;          /* (atomic) SEND_FAILED */
	unsigned int reports[MAX_SEEN]; /* per user_data: reports of any kind */
	uint32_t lens[MAX_SEEN];      /* per delivery, in order */
	uint64_t first_ud[MAX_SEEN];  /* per delivery: the word at its start */
	unsigned int hold;            /* (atomic) the server refuses deliveries while set */
	unsigned int state;           /* (atomic) the client's last state */
	struct rdp_ep *server;        /* (atomic) */
	uint32_t rv_pages_max;        /* most pages of the receive arena in use at a delivery */
};

static struct big_seen big;

/* Message @p ud of @p len bytes: word i is app_mix64(ud * 2^32 + i). */
static void
big_fill(uint8_t *p, uint32_t len, uint64_t ud)
{
	uint32_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t w = app_mix64((ud << 32) + i / 8);

		memcpy(p + i, &w, 8);
	}
	for (; i < len; i++)
		p[i] = (uint8_t)ud;
}

static bool
big_check(const struct rdp_msg *m, uint64_t *ud)
{
	const uint8_t *p = m->data;
	uint64_t w0, w;
	uint32_t i;

	if (m->nb_segs != 1 || m->next != NULL || m->data_len != m->pkt_len || m->pkt_len < 8)
		return false;
	memcpy(&w0, p, 8);
	/* which message: the first word names it (ud < MAX_SEEN) */
	for (*ud = 0; *ud < MAX_SEEN; (*ud)++)
		if (app_mix64(*ud << 32) == w0)
			break;
	if (*ud == MAX_SEEN)
		return false;
	for (i = 0; i + 8 <= m->pkt_len; i += 8) {
		memcpy(&w, p + i, 8);
		if (w != app_mix64((*ud << 32) + i / 8))
			return false;
	}
	return true;
}

static uint16_t
big_server_recv(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	uint16_t i;

	RTE_SET_USED(ep);
	RTE_SET_USED(arg);
	if (__atomic_load_n(&big.hold, __ATOMIC_ACQUIRE))
		return 0;
	for (i = 0; i < n; i++) {
		unsigned int k = __atomic_load_n(&big.received, __ATOMIC_RELAXED);
		uint64_t ud = 0;

		if (!big_check(msgs[i], &ud))
			__atomic_fetch_add(&big.bad, 1, __ATOMIC_RELAXED);
		if (k < MAX_SEEN) {
			big.lens[k] = msgs[i]->pkt_len;
			big.first_ud[k] = ud;
		}
		if (msgs[i]->flags & MSG_F_RNDV) {
			struct rdp_arena *a = msgs[i]->ep->ld->rv_recv;

			pthread_mutex_lock(&a->lock);
			big.rv_pages_max = RTE_MAX(big.rv_pages_max, a->nb_pages - a->pages_free);
			pthread_mutex_unlock(&a->lock);
		}
		rdp_msg_free(msgs[i]);
		__atomic_store_n(&big.received, k + 1, __ATOMIC_RELEASE);
	}
	return n;
}

static void
big_server_state(struct rdp_ep *ep, enum rdp_ep_state state, int err, void *arg)
{
	RTE_SET_USED(err);
	RTE_SET_USED(arg);
	if (state == RDP_EP_ESTABLISHED)
		__atomic_store_n(&big.server, ep, __ATOMIC_RELEASE);
}

static void
big_client_send(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	uint16_t i;

	RTE_SET_USED(ep);
	RTE_SET_USED(arg);
	for (i = 0; i < n; i++) {
		if (msgs[i]->user_data < MAX_SEEN)
			big.reports[msgs[i]->user_data]++;
		if (msgs[i]->event == RDP_EV_SEND_DONE)
			__atomic_fetch_add(&big.done, 1, __ATOMIC_RELEASE);
		else
			__atomic_fetch_add(&big.failed, 1, __ATOMIC_RELEASE);
		rdp_msg_free(msgs[i]);
	}
}

static void
big_client_state(struct rdp_ep *ep, enum rdp_ep_state state, int err, void *arg)
{
	RTE_SET_USED(ep);
	RTE_SET_USED(err);
	RTE_SET_USED(arg);
	__atomic_store_n(&big.state, state, __ATOMIC_RELEASE);
}

static const struct rdp_ep_ops big_server_ops = {
	.on_recv = big_server_recv, .on_state = big_server_state,
};
static const struct rdp_ep_ops big_client_ops = {
	.on_recv = stream_recv_free_all, .on_send = big_client_send,
	.on_state = big_client_state,
};

#define WAIT_UNTIL(cond, secs, ...)                                                     \
	do {                                                                            \
		double deadline_ = rdp_clock_s() + (secs);                              \
		while (!(cond)) {                                                       \
			RDP_ASSERT_MSG(rdp_clock_s() < deadline_, __VA_ARGS__);         \
			usleep(200);                                                    \
		}                                                                       \
	} while (0)

static struct rdp_ep *
big_open(struct rdp_cfg *cfg)
{
	struct rdp_ep_params srv = { .ops = &big_server_ops, .lcore = -1 };
	struct rdp_ep_params cli = { .ops = &big_client_ops, .lcore = -1, .notify_send_ok = true };
	struct rdp_ep *ep;

	memset(&big, 0, sizeof(big));
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	ep = stream_loopback_connect(&srv, &cli);
	WAIT_UNTIL(__atomic_load_n(&big.server, __ATOMIC_ACQUIRE) != NULL, 5, "no server endpoint");
	return ep;
}

/* Queue message @p ud of @p len bytes; false when the arena is full for now (or the link down). */
static bool
big_send(struct rdp_ep *ep, uint32_t len, uint64_t ud)
{
	struct rdp_msg *m = rdp_msg_alloc(ep, len);

	if (m == NULL) {
		RDP_ASSERT_MSG(rte_errno == ENOBUFS, "rdp_msg_alloc(%u): errno %d", len, rte_errno);
		return false;
	}
	RDP_ASSERT_EQ(m->nb_segs, 1);
	RDP_ASSERT_EQ(m->data_len, len);
	big_fill(m->data, len, ud);
	m->user_data = ud;
	if (rdp_ep_send_burst(ep, &m, 1) != 1) {
		/* only a link that went down since the caller looked refuses it */
		RDP_ASSERT_MSG(rte_errno == ENOTCONN, "rdp_ep_send_burst: errno %d", rte_errno);
		rdp_msg_free(m);
		return false;
	}
	return true;
}

static void
big_close(struct rdp_ep *ep, struct rdp_cfg *cfg)
{
	rdp_ep_close(ep);
	rdp_ep_close(__atomic_load_n(&big.server, __ATOMIC_ACQUIRE));
	WAIT_UNTIL(__atomic_load_n(&big.state, __ATOMIC_ACQUIRE) == RDP_EP_CLOSED, 10,
		   "no CLOSED event");
	WAIT_UNTIL(rdp_endpoint_count() == 0, 10, "endpoints still alive");
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_cfg_free(cfg);
}

/*
 * max_msg_size of 64 MiB with 4 KiB buffers and 64 receives (a chunked
 * message could have at most 49 chunks): three 64 MiB messages and small
 * ones between them arrive in order, each large one in one contiguous
 * buffer, every byte right.
 */
RDP_TEST(e2e, rndv_64_mib_messages_arrive_whole_and_in_order)
{
	static const uint32_t lens[] = { BIG, 100, BIG, 4000, 70000, BIG, 8 };
	struct rdp_cfg *cfg;
	struct rdp_ep *ep;
	unsigned int i;

	rdp_test_eal_init("0-1");
	cfg = rndv_cfg(rdp_test_driver_or("shm"), BIG, "65536", "134217728");
	ep = big_open(cfg);
	for (i = 0; i < RTE_DIM(lens); i++) {
		WAIT_UNTIL(big_send(ep, lens[i], i), 20, "message %u: no room in 20 s", i);
	}
	WAIT_UNTIL(__atomic_load_n(&big.received, __ATOMIC_ACQUIRE) == RTE_DIM(lens), 60,
		   "%u of %zu messages received", big.received, RTE_DIM(lens));
	WAIT_UNTIL(__atomic_load_n(&big.done, __ATOMIC_ACQUIRE) == RTE_DIM(lens), 10,
		   "%u of %zu sends done", big.done, RTE_DIM(lens));
	RDP_ASSERT_EQ(__atomic_load_n(&big.bad, __ATOMIC_ACQUIRE), 0);
	for (i = 0; i < RTE_DIM(lens); i++) {
		RDP_ASSERT_EQ(big.lens[i], lens[i]);
		RDP_ASSERT_EQ(big.first_ud[i], i);
		RDP_ASSERT_EQ(big.reports[i], 1);
	}
	RDP_ASSERT_EQ(big.failed, 0);
	big_close(ep, cfg);
	return 0;
}

/*
 * A receiver that holds its deliveries back: rendezvous messages are read
 * into its arena until it is full, then wait; the sender's arena fills and
 * rdp_msg_alloc() says ENOBUFS; nothing is lost or delivered out of order
 * once the receiver takes them again.
 */
RDP_TEST(e2e, rndv_receiver_back_pressure_holds_messages_and_loses_none)
{
	enum { N = 40, LEN = 1u << 20 };
	struct rdp_cfg *cfg;
	struct rdp_ep *ep;
	unsigned int sent = 0, i;
	bool refused = false;
	double deadline;

	rdp_test_eal_init("0-1");
	cfg = rndv_cfg(rdp_test_driver_or("shm"), LEN, "65536", "4194304");
	ep = big_open(cfg);
	__atomic_store_n(&big.hold, 1, __ATOMIC_RELEASE);
	deadline = rdp_clock_s() + 2;
	while (sent < N && rdp_clock_s() < deadline) {
		if (big_send(ep, LEN, sent))
			sent++;
		else
			refused = true;
		usleep(100);
	}
	RDP_ASSERT_MSG(refused, "the sender's 4 MiB arena never filled (%u messages sent)", sent);
	RDP_ASSERT_EQ(__atomic_load_n(&big.received, __ATOMIC_ACQUIRE), 0);
	__atomic_store_n(&big.hold, 0, __ATOMIC_RELEASE);
	while (sent < N) {
		WAIT_UNTIL(big_send(ep, LEN, sent), 10, "message %u: no room in 10 s", sent);
		sent++;
	}
	WAIT_UNTIL(__atomic_load_n(&big.received, __ATOMIC_ACQUIRE) == N, 30,
		   "%u of %d received", big.received, N);
	WAIT_UNTIL(__atomic_load_n(&big.done, __ATOMIC_ACQUIRE) == N, 10, "%u of %d done",
		   big.done, N);
	RDP_ASSERT_EQ(__atomic_load_n(&big.bad, __ATOMIC_ACQUIRE), 0);
	for (i = 0; i < N && i < MAX_SEEN; i++) {
		RDP_ASSERT_EQ(big.first_ud[i], i);
		RDP_ASSERT_EQ(big.reports[i], 1);
	}
	big_close(ep, cfg);
	return 0;
}

/*
 * Eight 1 MiB messages queued at once, a receiver that frees each as it
 * comes: it reads one at a time (a message starts within 1 MiB of READs in
 * flight), so at most two of its receive buffers are ever taken, the one
 * delivered and the one being read, not a buffer for each descriptor.
 */
RDP_TEST(e2e, rndv_receiver_reads_one_mib_message_at_a_time)
{
	enum { N = 8, LEN = 1u << 20 };
	struct rdp_msg *msgs[N];
	struct rdp_cfg *cfg;
	struct rdp_ep *ep;
	unsigned int i;

	rdp_test_eal_init("0-1");
	cfg = rndv_cfg(rdp_test_driver_or("shm"), LEN, "65536", "8388608");
	ep = big_open(cfg);
	/* in one burst: the descriptors arrive together */
	for (i = 0; i < N; i++) {
		msgs[i] = rdp_msg_alloc(ep, LEN);
		RDP_ASSERT_MSG(msgs[i] != NULL, "rdp_msg_alloc %u: errno %d", i, rte_errno);
		big_fill(msgs[i]->data, LEN, i);
		msgs[i]->user_data = i;
	}
	RDP_ASSERT_EQ(rdp_ep_send_burst(ep, msgs, N), N);
	WAIT_UNTIL(__atomic_load_n(&big.received, __ATOMIC_ACQUIRE) == N, 30,
		   "%u of %d received", big.received, N);
	RDP_ASSERT_EQ(__atomic_load_n(&big.bad, __ATOMIC_ACQUIRE), 0);
	for (i = 0; i < N; i++)
		RDP_ASSERT_EQ(big.first_ud[i], i);
	printf("receive arena: at most %u pages in use at a delivery (%u a message)\n", big.rv_pages_max,
	       LEN / RDP_ARENA_PAGE);
	RDP_ASSERT_MSG(big.rv_pages_max <= 2 * LEN / RDP_ARENA_PAGE,
		       "%u pages of the receive arena in use: more than two 1 MiB messages",
		       big.rv_pages_max);
	big_close(ep, cfg);
	return 0;
}

/*
 * rdp_ep_close() right after queueing rendezvous messages: the drain waits
 * for each FIN, so every one is delivered and reported done once.
 */
static int
close_drains_messages_in_flight(const char *driver)
{
	enum { N = 6, LEN = 1u << 20 };
	struct rdp_cfg *cfg;
	struct rdp_ep *ep;
	unsigned int i;

	rdp_test_eal_init("0-1");
	cfg = rndv_cfg(driver, LEN, "65536", "8388608");
	ep = big_open(cfg);
	for (i = 0; i < N; i++)
		RDP_ASSERT(big_send(ep, LEN, i));
	rdp_ep_close(ep);
	WAIT_UNTIL(__atomic_load_n(&big.state, __ATOMIC_ACQUIRE) == RDP_EP_CLOSED, 10,
		   "no CLOSED event (%u done, %u failed)", big.done, big.failed);
	RDP_ASSERT_EQ(__atomic_load_n(&big.done, __ATOMIC_ACQUIRE), N);
	RDP_ASSERT_EQ(__atomic_load_n(&big.failed, __ATOMIC_ACQUIRE), 0);
	WAIT_UNTIL(__atomic_load_n(&big.received, __ATOMIC_ACQUIRE) == N, 10, "%u of %d received",
		   big.received, N);
	for (i = 0; i < N; i++)
		RDP_ASSERT_EQ(big.reports[i], 1);
	RDP_ASSERT_EQ(__atomic_load_n(&big.bad, __ATOMIC_ACQUIRE), 0);
	rdp_ep_close(__atomic_load_n(&big.server, __ATOMIC_ACQUIRE));
	WAIT_UNTIL(rdp_endpoint_count() == 0, 10, "endpoints still alive");
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}

RDP_TEST(e2e, rndv_close_drains_messages_in_flight)
{
	return close_drains_messages_in_flight(rdp_test_driver_or("shm"));
}

/*
 * The same with send completions that come late, as on a real NIC: the
 * close notice must wait for the descriptors' completions and their FINs,
 * not go behind descriptors still in the send queue (the peer would stop
 * at the notice and never READ them).
 */
RDP_TEST(e2e, rndv_close_with_late_send_completions_drains_messages_in_flight)
{
	return close_drains_messages_in_flight("shm:send_cqe_delay=3");
}

/*
 * The link goes down (shm fail_after) with rendezvous messages in flight:
 * every message is reported exactly once; none reported done was lost, and
 * the receiver got no message twice and none the sender saw fail before
 * its descriptor went.
 */
RDP_TEST(e2e, rndv_link_down_reports_every_message_once)
{
	enum { N = 30, LEN = 300000 };
	struct rdp_cfg *cfg;
	struct rdp_ep *ep;
	unsigned int i, sent = 0;

	rdp_test_eal_init("0-1");
	cfg = rndv_cfg(rdp_test_driver_or("shm:fail_after=40"), LEN, "65536", "16777216");
	ep = big_open(cfg);
	while (sent < N && rdp_ep_state(ep) == RDP_EP_ESTABLISHED) {
		if (big_send(ep, LEN, sent))
			sent++;
		else
			usleep(100);
	}
	WAIT_UNTIL(__atomic_load_n(&big.done, __ATOMIC_ACQUIRE) +
		   __atomic_load_n(&big.failed, __ATOMIC_ACQUIRE) == sent, 10,
		   "%u done + %u failed of %u sent", big.done, big.failed, sent);
	WAIT_UNTIL(__atomic_load_n(&big.state, __ATOMIC_ACQUIRE) == RDP_EP_FAILED, 10,
		   "the client endpoint did not fail");
	printf("%u sent: %u done, %u failed, %u received\n", sent, big.done, big.failed,
	       big.received);
	RDP_ASSERT_MSG(big.failed > 0, "the link went down but nothing failed");
	for (i = 0; i < sent; i++)
		RDP_ASSERT_MSG(big.reports[i] == 1, "message %u reported %u times", i,
			       big.reports[i]);
	RDP_ASSERT_EQ(__atomic_load_n(&big.bad, __ATOMIC_ACQUIRE), 0);
	/* what was delivered is a prefix of what was sent, each once */
	for (i = 0; i < big.received && i < MAX_SEEN; i++)
		RDP_ASSERT_EQ(big.first_ud[i], i);
	RDP_ASSERT_MSG(big.received >= big.done, "%u done but %u received", big.done,
		       big.received);
	big_close(ep, cfg);
	return 0;
}

/*
 * The report of a finished rendezvous send and the descriptor of a message
 * coming the other way, in one poll: the application hears of the send,
 * and what it queues then leaves, before the endpoint starts reading the
 * new message. On shm a READ is the poller's own copy of the whole message:
 * read first, the application's next message (which the peer would read
 * meanwhile) waits behind it, and two endpoints echoing large messages
 * take turns copying instead of copying at once.
 */
struct order_probe {
	struct rdp_ep *cli;       /* (atomic) */
	struct rdp_ep *srv;       /* (atomic) */
	int hold;                 /* (atomic) the client's poller waits in its hook */
	int held;                 /* (atomic) it does */
	int b_posted;             /* (atomic) the server's descriptor is out */
	unsigned int srv_received; /* (atomic) */
	unsigned int cli_received; /* (atomic) */
	unsigned int reports;     /* (atomic) reports of the client's message */
	int unread_at_report;     /* (atomic) 1: the descriptor waited unread at the report */
};

static struct order_probe op;

static uint16_t
order_srv_recv(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	RTE_SET_USED(arg);
	__atomic_fetch_add(&op.srv_received, n, __ATOMIC_RELEASE);
	return stream_recv_free_all(ep, msgs, n, NULL);
}

static uint16_t
order_cli_recv(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	RTE_SET_USED(arg);
	__atomic_fetch_add(&op.cli_received, n, __ATOMIC_RELEASE);
	return stream_recv_free_all(ep, msgs, n, NULL);
}

static void
order_cli_send(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	uint16_t i;

	RTE_SET_USED(arg);
	for (i = 0; i < n; i++) {
		struct rdp_arena *a = ep->ld->rv_recv;
		bool unread;

		/* nothing of the receive arena taken: no READ has started */
		pthread_mutex_lock(&a->lock);
		unread = ep->rv_in_head != NULL && a->pages_free == a->nb_pages;
		pthread_mutex_unlock(&a->lock);
		__atomic_store_n(&op.unread_at_report, unread ? 1 : 0, __ATOMIC_RELAXED);
		__atomic_fetch_add(&op.reports, 1, __ATOMIC_RELEASE);
		rdp_msg_free(msgs[i]);
	}
}

static void
order_srv_state(struct rdp_ep *ep, enum rdp_ep_state state, int err, void *arg)
{
	RTE_SET_USED(err);
	RTE_SET_USED(arg);
	if (state == RDP_EP_ESTABLISHED)
		__atomic_store_n(&op.srv, ep, __ATOMIC_RELEASE);
}

/* The client's lcore: once its message went, wait while the test holds it. */
static unsigned int
order_cli_hook(void *arg)
{
	struct rdp_ep *cli = __atomic_load_n(&op.cli, __ATOMIC_ACQUIRE);

	RTE_SET_USED(arg);
	/* once only: the endpoint is not touched after (it is closed and freed) */
	if (__atomic_load_n(&op.held, __ATOMIC_ACQUIRE) ||
	    !__atomic_load_n(&op.hold, __ATOMIC_ACQUIRE) || cli == NULL || cli->rv_out_seq == 0)
		return 0;
	__atomic_store_n(&op.held, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&op.hold, __ATOMIC_ACQUIRE))
		usleep(50);
	return 0;
}

/* The server's lcore: say when its descriptor went (posted on shm: arrived). */
static unsigned int
order_srv_hook(void *arg)
{
	struct rdp_ep *srv = __atomic_load_n(&op.srv, __ATOMIC_ACQUIRE);

	RTE_SET_USED(arg);
	if (__atomic_load_n(&op.b_posted, __ATOMIC_ACQUIRE))
		return 0; /* the endpoint is not touched after */
	if (srv != NULL && srv->rv_out_seq > 0)
		__atomic_store_n(&op.b_posted, 1, __ATOMIC_RELEASE);
	return 0;
}

static const struct rdp_ep_ops order_srv_ops = {
	.on_recv = order_srv_recv, .on_state = order_srv_state,
};
static const struct rdp_ep_ops order_cli_ops = {
	.on_recv = order_cli_recv, .on_send = order_cli_send,
};

RDP_TEST(e2e, rndv_send_report_reaches_the_application_before_a_read_starts)
{
	enum { LEN = 1u << 20 };
	struct rdp_ep_params pcli = { .ops = &order_cli_ops, .lcore = 1, .notify_send_ok = true };
	struct rdp_ep_params psrv = { .ops = &order_srv_ops, .lcore = 2 };
	struct rdp_msg *a, *b;
	struct rdp_cfg *cfg;
	struct rdp_ep *cli;

	rdp_test_eal_init("0@0,1@0,2@1");
	memset(&op, 0, sizeof(op));
	cfg = rndv_cfg("shm", LEN, "65536", "4194304");
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_poll_hook_set(1, order_cli_hook, NULL), 0);
	RDP_ASSERT_EQ(rdp_poll_hook_set(2, order_srv_hook, NULL), 0);
	cli = stream_loopback_connect(&psrv, &pcli);
	__atomic_store_n(&op.cli, cli, __ATOMIC_RELEASE);
	WAIT_UNTIL(__atomic_load_n(&op.srv, __ATOMIC_ACQUIRE) != NULL, 5, "no server endpoint");
	/* the client's message goes, then its poller waits */
	__atomic_store_n(&op.hold, 1, __ATOMIC_RELEASE);
	a = rdp_msg_alloc(cli, LEN);
	RDP_ASSERT_MSG(a != NULL, "rdp_msg_alloc: errno %d", rte_errno);
	RDP_ASSERT_EQ(rdp_ep_send_burst(cli, &a, 1), 1);
	WAIT_UNTIL(__atomic_load_n(&op.held, __ATOMIC_ACQUIRE), 5, "the client's poller never held");
	/* read by the server: its FIN is in the client's queue */
	WAIT_UNTIL(__atomic_load_n(&op.srv_received, __ATOMIC_ACQUIRE) == 1, 5,
		   "the server did not receive the message");
	/* and the server's own message's descriptor behind it */
	b = rdp_msg_alloc(__atomic_load_n(&op.srv, __ATOMIC_ACQUIRE), LEN);
	RDP_ASSERT_MSG(b != NULL, "rdp_msg_alloc: errno %d", rte_errno);
	RDP_ASSERT_EQ(rdp_ep_send_burst(op.srv, &b, 1), 1);
	WAIT_UNTIL(__atomic_load_n(&op.b_posted, __ATOMIC_ACQUIRE), 5,
		   "the server's descriptor did not go");
	__atomic_store_n(&op.hold, 0, __ATOMIC_RELEASE);
	WAIT_UNTIL(__atomic_load_n(&op.cli_received, __ATOMIC_ACQUIRE) == 1 &&
		   __atomic_load_n(&op.reports, __ATOMIC_ACQUIRE) == 1, 5,
		   "%u received, %u reports", op.cli_received, op.reports);
	RDP_ASSERT_MSG(__atomic_load_n(&op.unread_at_report, __ATOMIC_ACQUIRE) == 1,
		       "the client started reading the server's message before it reported "
		       "its own as sent");
	rdp_ep_close(cli);
	rdp_ep_close(op.srv);
	WAIT_UNTIL(rdp_endpoint_count() == 0, 10, "endpoints still alive");
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}

/* Bytes of lcore @p lcore's rendezvous arenas on the first device, and the send arena's limit. */
static void
arena_bytes(unsigned int lcore, size_t *send, size_t *recv, size_t *limit)
{
	const struct ep_lcore_dev *ld = &rdp_rt.lcores[lcore]->dev[0];

	*send = rdp_arena_size(ld->rv_send);
	*recv = rdp_arena_size(ld->rv_recv);
	*limit = (size_t)ld->rv_send->pages_limit * RDP_ARENA_PAGE;
}

/*
 * rndv_pool_size = 0 (the default) sizes the arenas itself: on shm, where
 * a READ is the receiver's own copy, the send arena holds what a receiver
 * reads at once (1 MiB) or one message of max_msg_size, and holds no more
 * than 1 MiB in use unless one message takes more; the receive arena 4 MiB
 * or one message. A size given is both arenas' size, without a limit.
 */
RDP_TEST(e2e, rndv_arenas_sized_automatically_from_max_msg_size_and_the_device)
{
	static const struct {
		uint32_t max_msg;
		const char *pool;
		size_t send, recv, limit;
	} cases[] = {
		{ 1u << 20, "0", 1u << 20, 4u << 20, 1u << 20 },
		{ 256u << 10, "0", 1u << 20, 4u << 20, 1u << 20 },
		{ 4u << 20, "0", 4u << 20, 4u << 20, 1u << 20 },
		{ 16u << 20, "0", 16u << 20, 16u << 20, 1u << 20 },
		{ 1u << 20, "8388608", 8u << 20, 8u << 20, 8u << 20 },
	};
	unsigned int i;

	rdp_test_eal_init("0-1");
	for (i = 0; i < RTE_DIM(cases); i++) {
		struct rdp_cfg *cfg = rndv_cfg("shm", cases[i].max_msg, "65536", cases[i].pool);
		size_t send, recv, limit;

		RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
		arena_bytes(1, &send, &recv, &limit);
		printf("max_msg_size %u, rndv_pool_size %s: send arena %zu (%zu in use at most), "
		       "receive arena %zu\n", cases[i].max_msg, cases[i].pool, send, limit, recv);
		RDP_ASSERT_EQ(send, cases[i].send);
		RDP_ASSERT_EQ(recv, cases[i].recv);
		RDP_ASSERT_EQ(limit, cases[i].limit);
		RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
		rdp_cfg_free(cfg);
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* A server that holds each request until its reply is done              */
/* ---------------------------------------------------------------------- */

/*
 * The way SPDK's targets keep a request: its receive buffer goes back when
 * the response's send completes. Here the responses go by rendezvous, so
 * each completes only when the requester's FIN arrives, while every credit
 * the requester had sits in the requests the server holds.
 */
struct hold_probe {
	unsigned int requests;  /* (atomic) requests the server took */
	unsigned int refused;   /* (atomic) requests refused for want of a reply buffer */
	unsigned int replies;   /* (atomic) replies the client received */
	unsigned int done;      /* (atomic) replies the server saw done */
	unsigned int failed;    /* (atomic) replies or requests that failed */
	uint32_t reply_len;
	uint32_t req_len;       /* bytes of a request */
	struct rdp_ep *srv;     /* (atomic) the server's endpoint */
	unsigned int expect;    /* requests the client sends */
	bool until_dry;         /* the server answers none until it holds its whole lease
				 * and its SRQ's pool has no free credit */
	unsigned int dry;       /* (atomic) batches answered so */
	unsigned int stash_n;   /* requests held, not answered yet (server lcore) */
	struct rdp_msg *stash[256];
};

static struct hold_probe hp;

/* Has lcore @p lcore's SRQ no credit free in its pool? */
static bool
srq_dry(unsigned int lcore)
{
	struct rdp_srq_stats ss;

	return rdp_lcore_srq_stats_get(lcore, &ss) == 0 && ss.free == 0;
}

/* Reply to every request held: a reply that cannot go counts as failed. */
static void
hold_srv_answer_stash(struct rdp_ep *ep)
{
	unsigned int i;

	for (i = 0; i < hp.stash_n; i++) {
		struct rdp_msg *r = rdp_msg_alloc(ep, hp.reply_len);

		if (r == NULL) {
			__atomic_fetch_add(&hp.failed, 1, __ATOMIC_RELAXED);
			continue;
		}
		memset(r->data, 0x5a, 64);
		r->user_data = (uint64_t)(uintptr_t)hp.stash[i];
		if (rdp_ep_send_burst(ep, &r, 1) != 1) {
			__atomic_fetch_add(&hp.failed, 1, __ATOMIC_RELAXED);
			rdp_msg_free(r);
		}
	}
	hp.stash_n = 0;
}

static uint16_t
hold_srv_recv(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	uint16_t i;

	RTE_SET_USED(arg);
	__atomic_store_n(&hp.srv, ep, __ATOMIC_RELEASE);
	if (hp.until_dry) {
		/* held in batches, as a server that gathers requests before it answers */
		for (i = 0; i < n; i++) {
			hp.stash[hp.stash_n++] = msgs[i];
			__atomic_fetch_add(&hp.requests, 1, __ATOMIC_RELEASE);
			bool dry = srq_dry(1) && hp.requests - hp.done >= ep->lease.lease;

			if (hp.stash_n == RTE_DIM(hp.stash) || hp.requests == hp.expect || dry) {
				if (dry)
					__atomic_fetch_add(&hp.dry, 1, __ATOMIC_RELEASE);
				hold_srv_answer_stash(ep);
			}
		}
		return n;
	}
	for (i = 0; i < n; i++) {
		struct rdp_msg *r = rdp_msg_alloc(ep, hp.reply_len);

		if (r == NULL) {
			__atomic_fetch_add(&hp.refused, 1, __ATOMIC_RELAXED);
			break; /* offered again later */
		}
		memset(r->data, 0x5a, 64);
		/* the request is freed when its reply is done (hold_srv_send()) */
		r->user_data = (uint64_t)(uintptr_t)msgs[i];
		if (rdp_ep_send_burst(ep, &r, 1) != 1) {
			rdp_msg_free(r);
			break;
		}
		__atomic_fetch_add(&hp.requests, 1, __ATOMIC_RELEASE);
	}
	return i;
}

static void
hold_srv_send(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	uint16_t i;

	RTE_SET_USED(ep);
	RTE_SET_USED(arg);
	for (i = 0; i < n; i++) {
		if (msgs[i]->event == RDP_EV_SEND_DONE)
			__atomic_fetch_add(&hp.done, 1, __ATOMIC_RELEASE);
		else
			__atomic_fetch_add(&hp.failed, 1, __ATOMIC_RELEASE);
		rdp_msg_free((struct rdp_msg *)(uintptr_t)msgs[i]->user_data);
		rdp_msg_free(msgs[i]);
	}
}

static uint16_t
hold_cli_recv(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	RTE_SET_USED(arg);
	__atomic_fetch_add(&hp.replies, n, __ATOMIC_RELEASE);
	return stream_recv_free_all(ep, msgs, n, NULL);
}

static void
hold_cli_send(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	uint16_t i;

	RTE_SET_USED(ep);
	RTE_SET_USED(arg);
	for (i = 0; i < n; i++) {
		if (msgs[i]->event != RDP_EV_SEND_DONE)
			__atomic_fetch_add(&hp.failed, 1, __ATOMIC_RELEASE);
		rdp_msg_free(msgs[i]);
	}
}

static const struct rdp_ep_ops hold_srv_ops = { .on_recv = hold_srv_recv,
						 .on_send = hold_srv_send };
static const struct rdp_ep_ops hold_cli_ops = { .on_recv = hold_cli_recv,
						 .on_send = hold_cli_send };

/*
 * More requests at once than the server's credits, each held by the
 * server until its rendezvous reply is done: every reply arrives and is
 * done, though every credit of the client sits in requests held when the
 * replies' FINs are due. @p reserve is the server's FIN reserve expected,
 * or -1 for any; both sides' counters say no RNR and no ENOMEM.
 */
static int
requests_held_until_reply_done(struct rdp_cfg *cfg, unsigned int n, uint32_t req_len,
			       uint32_t reply_len, int reserve, bool until_dry)
{
	struct rdp_ep_params pcli = { .ops = &hold_cli_ops, .lcore = 1, .notify_send_ok = true };
	struct rdp_ep_params psrv = { .ops = &hold_srv_ops, .lcore = 1, .notify_send_ok = true };
	struct rdp_msg **reqs = calloc(n, sizeof(*reqs));
	struct rdp_ep_stats st;
	struct rdp_ep *cli;
	unsigned int i, sent = 0;

	RDP_ASSERT(reqs != NULL);
	memset(&hp, 0, sizeof(hp));
	hp.reply_len = reply_len;
	hp.req_len = req_len;
	hp.expect = n;
	hp.until_dry = until_dry;
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	cli = stream_loopback_connect(&psrv, &pcli);
	for (i = 0; i < n; i++) {
		reqs[i] = rdp_msg_alloc(cli, req_len);
		RDP_ASSERT_MSG(reqs[i] != NULL, "rdp_msg_alloc: errno %d", rte_errno);
		memset(reqs[i]->data, 0xa5, 64);
	}
	while (sent < n) {
		unsigned int k = rdp_ep_send_burst(cli, &reqs[sent], (uint16_t)RTE_MIN(n - sent,
										  64u));

		sent += k;
		if (k == 0)
			usleep(100);
	}
	WAIT_UNTIL(__atomic_load_n(&hp.srv, __ATOMIC_ACQUIRE) != NULL, 5, "no request arrived");
	if (reserve >= 0)
		RDP_ASSERT_EQ(hp.srv->fin_reserve, (uint32_t)reserve);
	WAIT_UNTIL(__atomic_load_n(&hp.replies, __ATOMIC_ACQUIRE) == n &&
		   __atomic_load_n(&hp.done, __ATOMIC_ACQUIRE) == n, 20,
		   "%u of %u requests taken, %u replies received, %u done, %u failed, %u refused "
		   "(FIN reserve %u)", hp.requests, n, hp.replies, hp.done, hp.failed, hp.refused,
		   hp.srv->fin_reserve);
	RDP_ASSERT_EQ(__atomic_load_n(&hp.failed, __ATOMIC_ACQUIRE), 0);
	if (until_dry)
		RDP_ASSERT_MSG(__atomic_load_n(&hp.dry, __ATOMIC_ACQUIRE) > 0,
			       "the server never held its whole lease with the SRQ's pool dry: "
			       "the test proves nothing");
	rdp_ep_stats_get(cli, &st);
	RDP_ASSERT_EQ(st.rnr, 0);
	RDP_ASSERT_EQ(st.enomem, 0);
	rdp_ep_stats_get(hp.srv, &st);
	RDP_ASSERT_EQ(st.rnr, 0);
	RDP_ASSERT_EQ(st.enomem, 0);
	rdp_ep_close(cli);
	rdp_ep_close(__atomic_load_n(&hp.srv, __ATOMIC_ACQUIRE));
	WAIT_UNTIL(rdp_endpoint_count() == 0, 10, "endpoints still alive");
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	free(reqs);
	return 0;
}

static void
srq_set(struct rdp_cfg *cfg, const char *size, const char *floor, const char *lease_max)
{
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "srq", "on", "test"), 0);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "srq_size", size, "test"), 0);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "srq_floor", floor, "test"), 0);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "srq_lease_max", lease_max, "test"), 0);
}

/* 200 requests, replies of 64 KiB: C = 64 - 8, a quarter of it kept for FINs on an RQ */
RDP_TEST(e2e, rndv_requests_held_until_their_reply_is_done_all_complete)
{
	struct rdp_cfg *cfg;

	rdp_test_eal_init("0-1");
	cfg = rndv_cfg(rdp_test_driver_or("shm"), 65536, "16384", "33554432");
	requests_held_until_reply_done(cfg, 200, 64, 65536, 14, false);
	rdp_cfg_free(cfg);
	return 0;
}

/* @p n requests held on an SRQ of @p size buffers (srq_floor 8), replies of 64 KiB */
static int
requests_held_on_srq(const char *size, const char *lease_max, unsigned int n, bool until_dry)
{
	struct rdp_cfg *cfg;

	rdp_test_eal_init("0-1");
	cfg = rndv_cfg(rdp_test_driver_or("shm"), 65536, "16384", "33554432");
	srq_set(cfg, size, "8", lease_max);
	RDP_ASSERT_MSG(rdp_cfg_validate(cfg) == 0, "%s", rdp_err_msg());
	requests_held_until_reply_done(cfg, n, 64, 65536, 0, until_dry);
	rdp_cfg_free(cfg);
	return 0;
}

/* The same on an SRQ: its FIN reserve, outside the lease pool, gives the FINs' credits */
RDP_TEST(e2e, rndv_requests_held_until_their_reply_is_done_all_complete_srq)
{
	return requests_held_on_srq("256", "32", 200, false);
}

/*
 * On an SRQ whose pool the server's lease empties: it holds requests and
 * answers none until its lease has grown to take every credit of the pool
 * (srq_lease_max 60 of 64) and all of it is in requests held, and every
 * descriptor still brings its FIN's credit, from the FIN reserve the SRQ
 * keeps out of the pool.
 */
RDP_TEST(e2e, rndv_requests_held_in_batches_that_empty_the_srq_pool_all_complete)
{
	return requests_held_on_srq("64", "60", 192, true);
}

/*
 * Requests of two chunks, each held until its rendezvous reply is done, on
 * an SRQ whose FIN reserve holds 1 and whose lease never grows beyond its
 * floor of 3: the client's second request finds one credit, and the
 * descriptor of the first reply brings the next. A request may begin only
 * when its credits cover all its chunks, so that credit is still there for
 * the FIN once the request is out; a request begun on one credit spends it
 * on its second chunk, and then the FIN has none, the server holds every
 * credit in requests, and the next descriptor waits for the reserve.
 */
RDP_TEST(e2e, rndv_chunked_requests_held_until_their_reply_is_done_on_a_small_srq_all_complete)
{
	struct rdp_cfg *cfg;

	rdp_test_eal_init("0-1");
	cfg = rndv_cfg(rdp_test_driver_or("shm"), 65536, "16384", "33554432");
	srq_set(cfg, "31", "3", "3");
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "buf_size", "8192", "test"), 0);
	RDP_ASSERT_MSG(rdp_cfg_validate(cfg) == 0, "%s", rdp_err_msg());
	requests_held_until_reply_done(cfg, 24, 8192 + 64, 65536, -1, false);
	rdp_cfg_free(cfg);
	return 0;
}

/* The same on an RQ of 8 whose FIN reserve is 1: a window of 5 credits */
RDP_TEST(e2e, rndv_chunked_requests_held_until_their_reply_is_done_on_a_small_rq_all_complete)
{
	struct rdp_cfg *cfg;

	rdp_test_eal_init("0-1");
	cfg = rndv_cfg(rdp_test_driver_or("shm"), 65536, "16384", "33554432");
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "buf_size", "8192", "test"), 0);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "rq_size", "8", "test"), 0);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "ack_reserve", "2", "test"), 0);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "ack_threshold", "4", "test"), 0);
	RDP_ASSERT_MSG(rdp_cfg_validate(cfg) == 0, "%s", rdp_err_msg());
	requests_held_until_reply_done(cfg, 24, 8192 + 64, 65536, 1, false);
	rdp_cfg_free(cfg);
	return 0;
}

/*
 * Random windows, thresholds, request and reply sizes, RQ or SRQ,
 * completions in random order: three windows' worth of requests (chunked,
 * up to the threshold), each held until its reply is
 * done, all complete with no RNR (rnr_retry = 0) and no ENOMEM. The seed
 * comes from RDP_SEED, else the clock; it is printed.
 */
RDP_TEST(e2e, rndv_requests_held_until_their_reply_is_done_random_windows)
{
	const char *env = getenv("RDP_SEED");
	uint64_t seed = env != NULL && env[0] != '\0' ? strtoull(env, NULL, 0) :
		(uint64_t)time(NULL) ^ ((uint64_t)getpid() << 16);
	unsigned int round;

	rdp_test_eal_init("0-1");
	printf("seed %" PRIu64 " (RDP_SEED=%" PRIu64 " reruns this test)\n", seed, seed);
	for (round = 0; round < 6; round++) {
		uint64_t r = app_mix64(seed * 16 + round);
		uint32_t c = 4 + (uint32_t)(r % 97), t_ack = 1 + (uint32_t)((r >> 8) % c);
		uint32_t a = (c + t_ack - 1) / t_ack + (uint32_t)((r >> 16) & 1);
		uint32_t chunks = 1 + (uint32_t)((r >> 20) % RTE_MIN(c - t_ack + 1, 8u));
		uint32_t thr = 4096 * chunks, reply = thr + 1 + (uint32_t)((r >> 28) % (262144 - thr));
		/* requests of up to `chunks` chunks: FINs come between their chunks */
		uint32_t req = 64 + (uint32_t)(app_mix64(r) % (thr - 63));
		bool srq = (r >> 48) % 3 == 0;
		char driver[64], v[16], t[16], rq[16], ar[16], ta[16];
		struct rdp_cfg *cfg;

		snprintf(driver, sizeof(driver), "shm:cqe_order=random:%u", (unsigned int)(r >> 40));
		snprintf(t, sizeof(t), "%u", thr);
		snprintf(rq, sizeof(rq), "%u", c + a);
		snprintf(ar, sizeof(ar), "%u", a);
		snprintf(ta, sizeof(ta), "%u", t_ack);
		cfg = rndv_cfg(rdp_test_driver_or(driver), 262144, t, "33554432");
		RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "rq_size", rq, "test"), 0);
		RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "ack_reserve", ar, "test"), 0);
		RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "ack_threshold", ta, "test"), 0);
		if (srq) {
			snprintf(v, sizeof(v), "%u", RTE_MAX(chunks, 2u));
			srq_set(cfg, "512", v, "64");
		}
		printf("round %u: %s, rq_size %s, ack_reserve %s, ack_threshold %s, "
		       "rndv_threshold %s, requests of %u bytes, replies of %u bytes\n", round,
		       srq ? "SRQ" : "RQ", rq, ar, ta, t, req, reply);
		fflush(stdout);
		RDP_ASSERT_MSG(rdp_cfg_validate(cfg) == 0, "%s", rdp_err_msg());
		requests_held_until_reply_done(cfg, 3 * c, req, reply, -1, false);
		rdp_cfg_free(cfg);
	}
	return 0;
}
