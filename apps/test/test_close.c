/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Closing an endpoint while it still has messages to send: the drain sends
 * them, and it keeps giving the peer credits for what it receives, because
 * the peer may be draining towards it at the same moment.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "ep_private.h"
#include "ep_stream.h"
#include "rdp_test.h"

/* One side of the pair, as its callbacks see it (all fields atomic). */
struct close_side {
	struct rdp_ep *ep;  /**< set at ESTABLISHED */
	uint64_t received;  /**< messages accepted */
	uint64_t next_seq;  /**< the sequence number the next message must carry */
	uint64_t done;      /**< sends reported done */
	uint64_t failed;    /**< sends reported failed */
	uint64_t disorder;  /**< messages received out of order or twice */
	uint64_t sent;      /**< messages the endpoint accepted (and the next number) */
	bool refill;        /**< each send done is followed by a new one, on the poller */
	bool closed;        /**< CLOSED seen */
	int32_t peer_closed_err; /**< the PEER_CLOSED event's status */
	uint64_t received_at_peer_closed; /**< messages accepted when PEER_CLOSED came */
	uint32_t last_state; /**< the last state event, as enum rdp_ep_state + 1 */
};

static uint64_t
ld(const uint64_t *v)
{
	return __atomic_load_n(v, __ATOMIC_ACQUIRE);
}

static bool refusing;           /* (atomic) both applications refuse what arrives */
static bool close_on_peer_closed; /* (atomic) a side closes from its PEER_CLOSED event */
static int32_t last_send_status; /* (atomic) of the last send failed */

static uint16_t
close_recv(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	struct close_side *s = arg;
	uint16_t i;

	RTE_SET_USED(ep);
	if (__atomic_load_n(&refusing, __ATOMIC_ACQUIRE))
		return 0;
	for (i = 0; i < n; i++) {
		uint64_t seq;

		memcpy(&seq, msgs[i]->data, sizeof(seq));

		if (seq != s->next_seq)
			__atomic_fetch_add(&s->disorder, 1, __ATOMIC_RELAXED);
		s->next_seq = seq + 1;
		rdp_msg_free(msgs[i]);
	}
	__atomic_fetch_add(&s->received, n, __ATOMIC_RELEASE);
	return n;
}

/* One 64-byte message carrying the side's next number; false if refused. */
static bool
send_one(struct rdp_ep *ep, struct close_side *s)
{
	struct rdp_msg *m = rdp_msg_alloc(ep, 64);
	uint64_t seq = ld(&s->sent);

	if (m == NULL)
		return false;
	memcpy(m->data, &seq, sizeof(seq));
	if (rdp_ep_send_burst(ep, &m, 1) != 1) {
		rdp_msg_free(m);
		return false;
	}
	__atomic_store_n(&s->sent, seq + 1, __ATOMIC_RELEASE);
	return true;
}

static void
close_send(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	struct close_side *s = arg;
	uint16_t i;

	for (i = 0; i < n; i++) {
		if (msgs[i]->status == 0) {
			__atomic_fetch_add(&s->done, 1, __ATOMIC_RELEASE);
			if (__atomic_load_n(&s->refill, __ATOMIC_ACQUIRE))
				send_one(ep, s);
		} else {
			__atomic_store_n(&last_send_status, msgs[i]->status, __ATOMIC_RELAXED);
			__atomic_fetch_add(&s->failed, 1, __ATOMIC_RELEASE);
		}
		rdp_msg_free(msgs[i]);
	}
}

static void
close_state(struct rdp_ep *ep, enum rdp_ep_state st, int err, void *arg)
{
	struct close_side *s = arg;

	if (st == RDP_EP_PEER_CLOSED) {
		__atomic_store_n(&s->received_at_peer_closed, ld(&s->received), __ATOMIC_RELEASE);
		__atomic_store_n(&s->peer_closed_err, err, __ATOMIC_RELEASE);
		if (__atomic_load_n(&close_on_peer_closed, __ATOMIC_ACQUIRE))
			rdp_ep_close(ep);
	}
	/* last: a reader that sees it sees the fields above */
	__atomic_store_n(&s->last_state, (uint32_t)st + 1, __ATOMIC_RELEASE);
	if (st == RDP_EP_ESTABLISHED)
		__atomic_store_n(&s->ep, ep, __ATOMIC_RELEASE);
	if (st == RDP_EP_CLOSED)
		__atomic_store_n(&s->closed, true, __ATOMIC_RELEASE);
}

static const struct rdp_ep_ops close_ops = {
	.on_recv = close_recv, .on_send = close_send, .on_state = close_state,
};

/* @p n numbered messages, from a thread that is the side's only sender. */
static void
send_numbered(struct rdp_ep *ep, struct close_side *s, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		RDP_ASSERT(send_one(ep, s));
}

/* EAL, rdp_init(@p cfg) and a loopback pair of close_ops sides: the client. */
static struct rdp_ep *
start_close_pair(const struct rdp_cfg *cfg, struct close_side *cs, struct close_side *ss,
		 struct rdp_ep **srv)
{
	struct rdp_ep_params pcli = { .ops = &close_ops, .arg = cs, .lcore = -1,
				      .notify_send_ok = true };
	struct rdp_ep_params psrv = { .ops = &close_ops, .arg = ss, .lcore = -1,
				      .notify_send_ok = true };
	struct rdp_ep *cli;
	double deadline;

	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	cli = stream_loopback_connect(&psrv, &pcli);
	deadline = rdp_clock_s() + 5;
	while ((*srv = __atomic_load_n(&ss->ep, __ATOMIC_ACQUIRE)) == NULL)
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "the server's endpoint did not come");
	return cli;
}

/* Wait up to 5 s for @p cli to have spent every remote credit (its peer refusing). */
static void
await_window_full(struct rdp_ep *cli)
{
	double deadline = rdp_clock_s() + 5;
	struct rdp_ep_stats st;

	do {
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "the client's window never filled");
		usleep(1000);
		rdp_ep_stats_get(cli, &st);
	} while (st.remote_credits != 0);
}

/* Wait up to @p secs for @p s to see CLOSED; false if it did not. */
static bool
await_closed(const struct close_side *s, double secs)
{
	double deadline = rdp_clock_s() + secs;

	while (!__atomic_load_n(&s->closed, __ATOMIC_ACQUIRE)) {
		if (rdp_clock_s() > deadline)
			return false;
		usleep(1000);
	}
	return true;
}

/* The server's endpoint must see its peer go (@p want) within 5 s. */
static void
await_peer_state(struct rdp_ep *srv, enum rdp_ep_state want)
{
	double deadline = rdp_clock_s() + 5;

	while (rdp_ep_state(srv) != want)
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "the server's endpoint is %s, not %s",
			       rdp_ep_state_str(rdp_ep_state(srv)), rdp_ep_state_str(want));
}

/*
 * Both applications close at once, each with messages queued behind a
 * window the other filled. Neither can send until the other returns
 * credits, and the other is draining too: a drain that stops acking waits
 * for ever. Both must reach CLOSED, with every message reported done or
 * failed once.
 */
RDP_TEST(e2e, ep_both_sides_closing_with_sends_waiting_for_credits_finish)
{
	enum { N = 200 };
	struct close_side cs = { 0 }, ss = { 0 };
	struct rdp_ep_stats st;
	struct rdp_ep *cli, *srv;
	struct rdp_cfg *cfg;
	double deadline;

	rdp_test_eal_init("0-1");
	cfg = stream_cfg("shm", 65536);
	cli = start_close_pair(cfg, &cs, &ss, &srv);
	__atomic_store_n(&refusing, true, __ATOMIC_RELEASE);
	send_numbered(cli, &cs, N);
	send_numbered(srv, &ss, N);
	/* both windows full (64 receives each way), the rest queued */
	deadline = rdp_clock_s() + 5;
	for (;;) {
		struct rdp_ep_stats ss_st;

		rdp_ep_stats_get(cli, &st);
		rdp_ep_stats_get(srv, &ss_st);
		if (st.remote_credits == 0 && ss_st.remote_credits == 0)
			break;
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "remote credits %u and %u",
			       st.remote_credits, ss_st.remote_credits);
		usleep(1000);
	}
	RDP_ASSERT_EQ(rdp_ep_close(cli), 0);
	RDP_ASSERT_EQ(rdp_ep_close(srv), 0);
	__atomic_store_n(&refusing, false, __ATOMIC_RELEASE);
	if (!await_closed(&cs, 10) || !await_closed(&ss, 10)) {
		rdp_endpoints_dump(stderr);
		RDP_ASSERT_MSG(false,
			       "not closed after 10 s: client %s (%" PRIu64 " done, %" PRIu64
			       " failed, %" PRIu64 " received), server %s (%" PRIu64
			       " done, %" PRIu64 " failed, %" PRIu64 " received)",
			       cs.closed ? "closed" : "open", ld(&cs.done), ld(&cs.failed),
			       ld(&cs.received), ss.closed ? "closed" : "open", ld(&ss.done),
			       ld(&ss.failed), ld(&ss.received));
	}
	/*
	 * Every message reported once, done or failed. What arrived after an
	 * application closed is not delivered to it (it let the endpoint go),
	 * so an application sees at most what its peer saw done, in order.
	 */
	RDP_ASSERT_EQ(ld(&cs.done) + ld(&cs.failed), N);
	RDP_ASSERT_EQ(ld(&ss.done) + ld(&ss.failed), N);
	RDP_ASSERT(ld(&ss.received) <= ld(&cs.done));
	RDP_ASSERT(ld(&cs.received) <= ld(&ss.done));
	RDP_ASSERT_EQ(ld(&cs.disorder) + ld(&ss.disorder), 0);
	/* the credits flowed: more than a window went each way */
	RDP_ASSERT_MSG(ld(&cs.done) > 64 && ld(&ss.done) > 64, "done %" PRIu64 " and %" PRIu64,
		       ld(&cs.done), ld(&ss.done));
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}

/*
 * A peer that takes nothing (its application refuses every message) gives
 * no credit back, so a drain towards it cannot end by itself. After
 * drain_timeout_ms it gives up: what was not sent is reported failed with
 * -ETIMEDOUT, and the endpoint reaches CLOSED.
 */
RDP_TEST(e2e, ep_drain_towards_a_peer_that_gives_no_credit_ends_after_drain_timeout_ms)
{
	enum { N = 200 };
	struct close_side cs = { 0 }, ss = { 0 };
	struct rdp_ep *cli, *srv;
	struct rdp_cfg *cfg;
	double closed_at, t0;

	rdp_test_eal_init("0-1");
	cfg = stream_cfg("shm", 65536);
	RDP_ASSERT_MSG(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "drain_timeout_ms", "300", "test") == 0,
		       "%s", rdp_err_msg());
	cli = start_close_pair(cfg, &cs, &ss, &srv);
	__atomic_store_n(&refusing, true, __ATOMIC_RELEASE);
	send_numbered(cli, &cs, N);
	await_window_full(cli);
	t0 = rdp_clock_s();
	RDP_ASSERT_EQ(rdp_ep_close(cli), 0);
	/* not before the deadline: the peer is alive, it may still take them */
	usleep(150000);
	RDP_ASSERT_MSG(!__atomic_load_n(&cs.closed, __ATOMIC_ACQUIRE), "closed before its deadline");
	RDP_ASSERT_EQ(ld(&cs.failed), 0);
	RDP_ASSERT_MSG(await_closed(&cs, 10), "not closed 10 s after the close (%" PRIu64
		       " done, %" PRIu64 " failed)", ld(&cs.done), ld(&cs.failed));
	closed_at = rdp_clock_s() - t0;
	RDP_ASSERT_MSG(closed_at >= 0.3, "closed %.3f s after the close", closed_at);
	/* every message once: those the peer received done, the rest failed */
	RDP_ASSERT_EQ(ld(&cs.done) + ld(&cs.failed), N);
	RDP_ASSERT_MSG(ld(&cs.failed) >= N - 64, "%" PRIu64 " failed", ld(&cs.failed));
	RDP_ASSERT_EQ(cs.disorder, 0);
	RDP_ASSERT_EQ(last_send_status, -ETIMEDOUT);
	__atomic_store_n(&refusing, false, __ATOMIC_RELEASE);
	/* the drain gave up: no close notice went, the server's endpoint failed */
	await_peer_state(srv, RDP_EP_FAILED);
	rdp_ep_close(srv);
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}

/* On the poller: the first window of a stream that refills itself. */
static void
start_stream(struct rdp_ep *ep, void *arg)
{
	struct close_side *s = arg;
	unsigned int i;

	__atomic_store_n(&s->refill, true, __ATOMIC_RELEASE);
	for (i = 0; i < 32; i++)
		send_one(ep, s);
}

/*
 * A closed endpoint with nothing left to send ends at once, though its
 * peer keeps sending: it acks no more, so the peer's stream cannot hold
 * its teardown off (the drain deadline is far away here, so only the
 * drain itself can end it). The peer's sends are all reported.
 */
RDP_TEST(e2e, ep_close_with_nothing_queued_ends_while_the_peer_keeps_sending)
{
	struct close_side cs = { 0 }, ss = { 0 };
	struct rdp_ep *cli, *srv;
	struct rdp_cfg *cfg;
	double deadline;

	rdp_test_eal_init("0-1");
	cfg = stream_cfg("shm", 65536);
	RDP_ASSERT_MSG(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "drain_timeout_ms", "60000", "test") == 0,
		       "%s", rdp_err_msg());
	cli = start_close_pair(cfg, &cs, &ss, &srv);
	RDP_ASSERT_EQ(rdp_ep_call(srv, start_stream, &ss), 0);
	deadline = rdp_clock_s() + 5;
	while (ld(&cs.received) < 2000)
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "the stream did not flow: %" PRIu64
			       " received", ld(&cs.received));
	RDP_ASSERT_EQ(rdp_ep_close(cli), 0);
	if (!await_closed(&cs, 5)) {
		rdp_endpoints_dump(stderr);
		RDP_ASSERT_MSG(false, "not closed 5 s after the close, the peer still "
			       "sending (%" PRIu64 " sent)", ld(&ss.sent));
	}
	/* the drain ended: its close notice reached the server */
	await_peer_state(srv, RDP_EP_PEER_CLOSED);
	rdp_ep_close(srv);
	RDP_ASSERT_MSG(await_closed(&ss, 5), "the server's endpoint did not close");
	/* what the server had not sent when the notice came failed with -ESHUTDOWN */
	RDP_ASSERT_MSG(ld(&ss.failed) == 0 || last_send_status == -ESHUTDOWN,
		       "%" PRIu64 " failed, the last with %d", ld(&ss.failed), last_send_status);
	/* every message the peer sent reported once; the client saw a prefix, in order */
	RDP_ASSERT_EQ(ld(&ss.done) + ld(&ss.failed), ld(&ss.sent));
	RDP_ASSERT(ld(&cs.received) <= ld(&ss.done));
	RDP_ASSERT_EQ(ld(&cs.disorder), 0);
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}

/*
 * A close is not a failure. The client sends a stream and closes at once;
 * its drain sends the rest and then the close notice. The server delivers
 * every message sent before it, in order, and only then sees PEER_CLOSED
 * (status 0), not FAILED; the client sees every send done and CLOSED.
 */
RDP_TEST(e2e, ep_close_reaches_the_peer_as_peer_closed_after_every_message_before_it)
{
	enum { N = 500 };
	struct close_side cs = { 0 }, ss = { 0 };
	struct rdp_ep *cli, *srv;
	struct rdp_cfg *cfg;
	double deadline;

	rdp_test_eal_init("0-1");
	cfg = stream_cfg("shm", 65536);
	cli = start_close_pair(cfg, &cs, &ss, &srv);
	send_numbered(cli, &cs, N);
	RDP_ASSERT_EQ(rdp_ep_close(cli), 0);
	RDP_ASSERT_MSG(await_closed(&cs, 10), "the client did not close (%" PRIu64 " done, %"
		       PRIu64 " failed)", ld(&cs.done), ld(&cs.failed));
	await_peer_state(srv, RDP_EP_PEER_CLOSED);
	RDP_ASSERT_EQ(ld(&cs.done), N);
	RDP_ASSERT_EQ(ld(&cs.failed), 0);
	/* the state event (which follows the state, once the QP is flushed)
	 * came after the last delivery */
	deadline = rdp_clock_s() + 5;
	while (__atomic_load_n(&ss.last_state, __ATOMIC_ACQUIRE) != RDP_EP_PEER_CLOSED + 1)
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "the last state event is %u",
			       __atomic_load_n(&ss.last_state, __ATOMIC_ACQUIRE));
	RDP_ASSERT_EQ(ld(&ss.received_at_peer_closed), N);
	RDP_ASSERT_EQ(__atomic_load_n(&ss.peer_closed_err, __ATOMIC_ACQUIRE), 0);
	RDP_ASSERT_EQ(ld(&ss.disorder), 0);
	RDP_ASSERT_EQ(rdp_ep_error(srv), -ESHUTDOWN);
	/* its own sends are refused now, as on any endpoint that ended */
	RDP_ASSERT(!send_one(srv, &ss));
	RDP_ASSERT_EQ(rdp_ep_close(srv), 0);
	RDP_ASSERT_MSG(await_closed(&ss, 5), "the server's endpoint did not close");
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}

/* The failure reasons add up to `failed`. */
static void
assert_counters_add_up(const struct rdp_ep_counters *c)
{
	RDP_ASSERT_EQ(c->failed, c->failed_peer_gone + c->failed_flushed +
		      c->failed_retry_exceeded + c->failed_rnr + c->failed_remote_access +
		      c->failed_remote_error + c->failed_device + c->failed_link_down +
		      c->failed_protocol + c->failed_other);
	RDP_ASSERT_EQ(c->enomem, 0);
	RDP_ASSERT_EQ(c->rnr, 0);
}

/* The process's counters: these numbers, no handshake failure, and they add up. */
static void
expect_counters(uint64_t opened, uint64_t closed, uint64_t peer_closed, uint64_t failed,
		uint64_t drain_timeouts)
{
	struct rdp_ep_counters c;

	RDP_ASSERT_EQ(rdp_ep_counters_get(-1, &c), 0);
	RDP_ASSERT_EQ(c.opened, opened);
	RDP_ASSERT_EQ(c.closed, closed);
	RDP_ASSERT_EQ(c.peer_closed, peer_closed);
	RDP_ASSERT_EQ(c.failed, failed);
	RDP_ASSERT_EQ(c.drain_timeouts, drain_timeouts);
	RDP_ASSERT_EQ(c.handshake_failed, 0);
	assert_counters_add_up(&c);
}

/*
 * The process counts how its endpoints ended, after they are gone: a
 * clean close (closed here, peer_closed there), then a drain that ran out
 * of time (closed with a drain timeout here, a failure there).
 */
RDP_TEST(e2e, ep_counters_tell_a_close_from_a_drain_timeout_after_the_endpoints_are_gone)
{
	struct close_side cs = { 0 }, ss = { 0 }, cs2 = { 0 }, ss2 = { 0 };
	struct rdp_ep_params pcli = { .ops = &close_ops, .arg = &cs2, .lcore = -1,
				      .notify_send_ok = true };
	struct rdp_ep_params psrv = { .ops = &close_ops, .arg = &ss2, .lcore = -1,
				      .notify_send_ok = true };
	struct rdp_ep_counters c, per_lcore;
	struct rdp_ep *cli, *srv;
	struct rdp_cfg *cfg;
	double deadline;
	unsigned int lc;

	rdp_test_eal_init("0-1");
	cfg = stream_cfg("shm", 65536);
	RDP_ASSERT_MSG(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "drain_timeout_ms", "300", "test") == 0,
		       "%s", rdp_err_msg());
	/* 1: a clean close */
	cli = start_close_pair(cfg, &cs, &ss, &srv);
	send_numbered(cli, &cs, 10);
	RDP_ASSERT_EQ(rdp_ep_close(cli), 0);
	RDP_ASSERT(await_closed(&cs, 10));
	await_peer_state(srv, RDP_EP_PEER_CLOSED);
	RDP_ASSERT_EQ(rdp_ep_close(srv), 0);
	RDP_ASSERT(await_closed(&ss, 5));
	expect_counters(2, 1, 1, 0, 0);
	/* 2: a peer that takes nothing: the drain gives up, the server fails */
	cli = stream_loopback_connect(&psrv, &pcli);
	deadline = rdp_clock_s() + 5;
	while ((srv = __atomic_load_n(&ss2.ep, __ATOMIC_ACQUIRE)) == NULL)
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "the server's endpoint did not come");
	__atomic_store_n(&refusing, true, __ATOMIC_RELEASE);
	send_numbered(cli, &cs2, 100);
	await_window_full(cli);
	RDP_ASSERT_EQ(rdp_ep_close(cli), 0);
	RDP_ASSERT(await_closed(&cs2, 10));
	__atomic_store_n(&refusing, false, __ATOMIC_RELEASE);
	await_peer_state(srv, RDP_EP_FAILED);
	/* it counts as failed once it retires (its flush done): closed before, as closed */
	deadline = rdp_clock_s() + 5;
	do {
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "the server's failure was never counted");
		usleep(1000);
		RDP_ASSERT_EQ(rdp_ep_counters_get(-1, &c), 0);
	} while (c.failed == 0);
	RDP_ASSERT_EQ(rdp_ep_close(srv), 0);
	RDP_ASSERT(await_closed(&ss2, 5));
	expect_counters(4, 2, 1, 1, 1);
	/* the lcores' counters are the process's, split */
	memset(&per_lcore, 0, sizeof(per_lcore));
	RDP_ASSERT_EQ(rdp_ep_counters_get(RTE_MAX_LCORE - 1, &c), -ENODEV);
	RTE_LCORE_FOREACH(lc) {
		struct rdp_ep_counters one;

		if (rdp_ep_counters_get((int)lc, &one) == 0) {
			per_lcore.opened += one.opened;
			per_lcore.failed += one.failed;
		}
	}
	RDP_ASSERT_EQ(per_lcore.opened, 4);
	RDP_ASSERT_EQ(per_lcore.failed, 1);
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_ep_counters_get(-1, &c), -ENODEV);
	rdp_cfg_free(cfg);
	return 0;
}

/*
 * A server that closes its endpoint as soon as the peer's close reaches it
 * (from the PEER_CLOSED event, as rdp-perf's does) ends its side while the
 * client's close may still be finishing: the client's endpoint must still
 * end CLOSED, not FAILED because the control connection went first, and
 * the counters say as many closes and peer closes, no failure. Nor is the
 * peer's half of the close logged as a failure: the control connection or
 * the QP going first is how a close ends.
 */
RDP_TEST(e2e, ep_close_answered_at_once_by_the_peer_still_ends_closed)
{
	enum { PAIRS = 50 };
	struct rdp_cfg *cfg;
	unsigned int i;

	rdp_test_eal_init("0-1");
	cfg = stream_cfg("shm", 65536);
	__atomic_store_n(&close_on_peer_closed, true, __ATOMIC_RELEASE);
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	rdp_test_log_capture();
	for (i = 0; i < PAIRS; i++) {
		struct close_side cs = { 0 }, ss = { 0 };
		struct rdp_ep_params pcli = { .ops = &close_ops, .arg = &cs, .lcore = -1,
					      .notify_send_ok = true };
		struct rdp_ep_params psrv = { .ops = &close_ops, .arg = &ss, .lcore = -1,
					      .notify_send_ok = true };
		struct rdp_ep *cli;
		double deadline;

		cli = stream_loopback_connect(&psrv, &pcli);
		deadline = rdp_clock_s() + 5;
		while (__atomic_load_n(&ss.ep, __ATOMIC_ACQUIRE) == NULL)
			RDP_ASSERT_MSG(rdp_clock_s() < deadline, "the server's endpoint did not come");
		send_numbered(cli, &cs, 10);
		RDP_ASSERT_EQ(rdp_ep_close(cli), 0);
		RDP_ASSERT_MSG(await_closed(&cs, 10), "pair %u: the client did not close", i);
		RDP_ASSERT_MSG(await_closed(&ss, 10), "pair %u: the server did not close", i);
		RDP_ASSERT_MSG(rdp_ep_error(cli) == 0 || rdp_ep_error(cli) == -ESHUTDOWN,
			       "pair %u: the client's endpoint ended with %d", i, rdp_ep_error(cli));
		RDP_ASSERT_EQ(ld(&cs.done), 10);
		RDP_ASSERT_EQ(ld(&cs.failed), 0);
	}
	expect_counters(2 * PAIRS, PAIRS, PAIRS, 0, 0);
	RDP_ASSERT_MSG(strstr(rdp_test_log, "control connection") == NULL &&
		       strstr(rdp_test_log, "went to error") == NULL,
		       "a close logged as a failure:\n%s", rdp_test_log);
	rdp_test_log_release();
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}

/*
 * The closer's poll hook: once its close notice is posted, and before its
 * completion is polled, the control thread's "peer gone" arrives (as
 * ep_inbox() hands it over on TAG_FAIL).
 */
struct notice_race {
	struct rdp_ep *ep;   /* (atomic) the closer, once it closes */
	bool failed;         /* (atomic) the failure was handed over */
};

static unsigned int
peer_gone_after_notice(void *arg)
{
	struct notice_race *nr = arg;
	struct rdp_ep *ep = __atomic_load_n(&nr->ep, __ATOMIC_ACQUIRE);

	if (ep == NULL || nr->failed || !ep->close_sent || ep_phase_get(ep) != EP_PH_DRAINING)
		return 0;
	__atomic_store_n(&nr->failed, true, __ATOMIC_RELEASE);
	ep_fail_ctl(ep, -ECONNRESET, "the control connection to the peer closed (peer gone)");
	return 1;
}

/*
 * The same race the other way round: the closer's close notice reaches the
 * peer, which closes at once and retires, and its socket closes before the
 * closer has polled the notice's completion (on a NIC the ACK may come
 * after the peer acted; here the driver shows send completions 2000 polls
 * late, and the control thread's "peer gone" is handed over as soon as the
 * notice is posted). The notice's completion says the close finished: the
 * closer ends CLOSED, everything it sent done, and logs no unfinished
 * close.
 */
RDP_TEST(e2e, ep_close_whose_notice_completes_after_the_peer_went_logs_no_unfinished_close)
{
	struct rdp_ep_params pcli = { .ops = &close_ops, .lcore = 1, .notify_send_ok = true };
	struct rdp_ep_params psrv = { .ops = &close_ops, .lcore = 2, .notify_send_ok = true };
	struct close_side cs = { 0 }, ss = { 0 };
	struct notice_race nr = { 0 };
	struct rdp_ep *cli;
	struct rdp_cfg *cfg;
	double deadline;

	rdp_test_eal_init("0@0,1@0,2@1");
	cfg = stream_cfg("shm:send_cqe_delay=2000", 65536);
	__atomic_store_n(&close_on_peer_closed, true, __ATOMIC_RELEASE);
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_poll_hook_set(1, peer_gone_after_notice, &nr), 0);
	rdp_test_log_capture();
	pcli.arg = &cs;
	psrv.arg = &ss;
	cli = stream_loopback_connect(&psrv, &pcli);
	deadline = rdp_clock_s() + 5;
	while (__atomic_load_n(&ss.ep, __ATOMIC_ACQUIRE) == NULL)
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "the server's endpoint did not come");
	send_numbered(cli, &cs, 10);
	__atomic_store_n(&nr.ep, cli, __ATOMIC_RELEASE);
	RDP_ASSERT_EQ(rdp_ep_close(cli), 0);
	RDP_ASSERT_MSG(await_closed(&cs, 10), "the client did not close");
	RDP_ASSERT_MSG(await_closed(&ss, 10), "the server did not close");
	RDP_ASSERT(__atomic_load_n(&nr.failed, __ATOMIC_ACQUIRE));
	RDP_ASSERT_EQ(ld(&cs.done), 10);
	RDP_ASSERT_EQ(ld(&cs.failed), 0);
	RDP_ASSERT_EQ(ld(&ss.received), 10);
	expect_counters(2, 1, 1, 0, 0);
	RDP_ASSERT_MSG(strstr(rdp_test_log, "did not finish") == NULL,
		       "a close that finished logged as unfinished:\n%s", rdp_test_log);
	rdp_test_log_release();
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}
