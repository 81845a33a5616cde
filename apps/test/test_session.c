/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sessions (rdp_session.h): a client that reconnects by itself, with a
 * doubling, jittered wait between attempts; messages that wait for the
 * next endpoint, or are refused at once; waits and losses that run out.
 * The server here is a listener of the same process that goes away and
 * comes back; test_blk.c kills and restarts a server process.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <rte_errno.h>

#include "ep_stream.h"
#include "rdp_session.h"
#include "rdp_test.h"

#define MAX_EVENTS 256

/* What the session's callbacks saw (written on the poller, read with acquire). */
static struct {
	struct rdp_session_event ev[MAX_EVENTS];
	uint32_t nb_ev;        /* events recorded */
	uint64_t failed[2];    /* sends failed: [0] by the session (NULL ep), [1] by an endpoint */
	int32_t last_fail;     /* the last failure's status */
	uint64_t done;         /* sends done */
	bool close_in_callback; /* on_event closes the session at GAVE_UP */
	char device[64];       /* the device of the endpoint last CONNECTED */
} cli;

/* The server side: what it received, in order. */
static struct {
	struct rdp_ep *ep;     /* the latest endpoint */
	uint64_t received;
	uint64_t next_seq;
	uint64_t disorder;
} srv;

static uint32_t
ld32(const uint32_t *v)
{
	return __atomic_load_n(v, __ATOMIC_ACQUIRE);
}

static uint64_t
ld64(const uint64_t *v)
{
	return __atomic_load_n(v, __ATOMIC_ACQUIRE);
}

static void
on_event(struct rdp_session *s, const struct rdp_session_event *ev, void *arg)
{
	uint32_t n = cli.nb_ev;

	RTE_SET_USED(arg);
	if (ev->kind == RDP_SESSION_EV_GAVE_UP && cli.close_in_callback)
		RDP_ASSERT_EQ(rdp_session_close(s), 0);
	if (ev->kind == RDP_SESSION_EV_CONNECTED)
		snprintf(cli.device, sizeof(cli.device), "%s", rdp_ep_device(ev->ep));
	if (n < MAX_EVENTS) {
		cli.ev[n] = *ev;
		cli.ev[n].ep = NULL; /* not valid after the callback */
		__atomic_store_n(&cli.nb_ev, n + 1, __ATOMIC_RELEASE);
	}
}

static uint16_t
cli_recv(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	RTE_SET_USED(ep);
	RTE_SET_USED(arg);
	rdp_msg_free_bulk(msgs, n);
	return n;
}

static void
cli_send(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	uint16_t i;

	RTE_SET_USED(arg);
	for (i = 0; i < n; i++) {
		if (msgs[i]->event == RDP_EV_SEND_FAILED) {
			__atomic_store_n(&cli.last_fail, msgs[i]->status, __ATOMIC_RELAXED);
			__atomic_fetch_add(&cli.failed[ep != NULL], 1, __ATOMIC_RELEASE);
		} else {
			__atomic_fetch_add(&cli.done, 1, __ATOMIC_RELEASE);
		}
		rdp_msg_free(msgs[i]);
	}
}

static const struct rdp_ep_ops cli_ops = { .on_recv = cli_recv, .on_send = cli_send };

static uint16_t
srv_recv(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	uint16_t i;

	RTE_SET_USED(ep);
	RTE_SET_USED(arg);
	for (i = 0; i < n; i++) {
		uint64_t seq;

		memcpy(&seq, msgs[i]->data, sizeof(seq));
		if (seq != srv.next_seq)
			__atomic_fetch_add(&srv.disorder, 1, __ATOMIC_RELAXED);
		srv.next_seq = seq + 1;
		rdp_msg_free(msgs[i]);
	}
	__atomic_fetch_add(&srv.received, n, __ATOMIC_RELEASE);
	return n;
}

static void
srv_state(struct rdp_ep *ep, enum rdp_ep_state st, int err, void *arg)
{
	RTE_SET_USED(err);
	RTE_SET_USED(arg);
	if (st == RDP_EP_ESTABLISHED)
		__atomic_store_n(&srv.ep, ep, __ATOMIC_RELEASE);
	else if (st == RDP_EP_PEER_CLOSED || st == RDP_EP_FAILED)
		rdp_ep_close(ep);
}

static const struct rdp_ep_ops srv_ops = { .on_recv = srv_recv, .on_state = srv_state };

/* Numbered messages offered to the session, on its lcore. */
struct offer {
	uint64_t first;     /* the first number */
	uint16_t n;         /* how many to offer */
	uint16_t accepted;  /* out: how many the session took */
	int err;            /* out: rte_errno when it took fewer */
	bool done;          /* out (atomic) */
};

static void
offer_here(struct rdp_session *s, void *arg)
{
	struct offer *o = arg;
	uint16_t i;

	o->err = 0;
	for (i = 0; i < o->n; i++) {
		struct rdp_msg *m = rdp_session_msg_alloc(s, 64);
		uint64_t seq = o->first + i;

		if (m == NULL) {
			o->err = rte_errno;
			break;
		}
		memcpy(m->data, &seq, sizeof(seq));
		if (rdp_session_send_burst(s, &m, 1) != 1) {
			o->err = rte_errno;
			rdp_msg_free(m);
			break;
		}
	}
	o->accepted = i;
	__atomic_store_n(&o->done, true, __ATOMIC_RELEASE);
}

/* Offer @p n messages numbered from @p first; how many were taken. */
static uint16_t
offer(struct rdp_session *s, uint64_t first, uint16_t n, int *err)
{
	struct offer o = { .first = first, .n = n };
	double deadline = rdp_clock_s() + 5;

	RDP_ASSERT_EQ(rdp_session_call(s, offer_here, &o), 0);
	while (!__atomic_load_n(&o.done, __ATOMIC_ACQUIRE))
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "the offer did not run");
	if (err != NULL)
		*err = o.err;
	return o.accepted;
}

/* Wait up to @p secs for an event of @p kind at or after index @p from; its index. */
static uint32_t
await_event(uint32_t from, enum rdp_session_event_kind kind, double secs)
{
	double deadline = rdp_clock_s() + secs;

	for (;;) {
		uint32_t n = ld32(&cli.nb_ev), i;

		for (i = from; i < n; i++)
			if (cli.ev[i].kind == kind)
				return i;
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "no %s event after %.1f s (%u events)",
			       rdp_session_event_str(kind), secs, n);
		usleep(1000);
	}
}

static void
await_u64(const uint64_t *v, uint64_t want, const char *what)
{
	double deadline = rdp_clock_s() + 5;

	while (ld64(v) < want)
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "%s: %" PRIu64 " of %" PRIu64, what,
			       ld64(v), want);
}

static int
listen_on(int port)
{
	char addr[64];
	int ret;

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	ret = rdp_listen(addr, &(struct rdp_ep_params){ .ops = &srv_ops, .lcore = -1 });
	RDP_ASSERT_MSG(ret > 0, "rdp_listen %s: %s", addr, rdp_err_msg());
	return ret;
}

static struct rdp_session *
open_session(int port, const struct rdp_reconnect_policy *pol)
{
	struct rdp_session_params prm = {
		.ops = &cli_ops, .on_event = on_event, .lcore = 1, .notify_send_ok = true,
		.policy = *pol,
	};
	struct rdp_session *s;
	char addr[64];

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	s = rdp_session_open(addr, &prm);
	RDP_ASSERT_MSG(s != NULL, "rdp_session_open: %s", rdp_err_msg());
	return s;
}

static void
close_session(struct rdp_session *s)
{
	uint32_t from = ld32(&cli.nb_ev);

	RDP_ASSERT_EQ(rdp_session_close(s), 0);
	await_event(from, RDP_SESSION_EV_CLOSED, 10);
}

/*
 * The server goes (its listener closed, its endpoint closed): the session
 * sees DISCONNECTED, then attempts refused, each wait about twice the one
 * before up to the cap; messages offered meanwhile wait. The listener
 * comes back on the same port: the session connects, and what waited
 * reaches the server in order, after what went before.
 */
RDP_TEST(e2e, session_reconnects_when_the_server_returns_and_sends_what_waited_in_order)
{
	const struct rdp_reconnect_policy pol = {
		.delay_ms = 20, .delay_max_ms = 160, .jitter_pct = 25, .queue_max = 64,
	};
	struct rdp_ep_counters c;
	struct rdp_session *s;
	struct rdp_cfg *cfg;
	uint32_t i, from, first_fail, k;
	int port, err;

	rdp_test_eal_init("0-1");
	cfg = stream_cfg("shm", 65536);
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	port = listen_on(0);
	s = open_session(port, &pol);
	await_event(0, RDP_SESSION_EV_CONNECTED, 5);
	RDP_ASSERT_EQ(rdp_session_state(s), RDP_SESSION_CONNECTED);
	RDP_ASSERT_EQ(offer(s, 0, 10, NULL), 10);
	await_u64(&srv.received, 10, "the server's receipts before it went");

	/* the server goes */
	from = ld32(&cli.nb_ev);
	RDP_ASSERT_EQ(rdp_listen_close(port), 0);
	rdp_ep_close(__atomic_load_n(&srv.ep, __ATOMIC_ACQUIRE));
	i = await_event(from, RDP_SESSION_EV_DISCONNECTED, 5);
	RDP_ASSERT_EQ(cli.ev[i].err, -ESHUTDOWN);
	RDP_ASSERT_EQ(offer(s, 10, 20, &err), 20);
	/* four refused attempts: waits of 20, 40, 80, 160 ms less at most 25 % */
	first_fail = i + 1;
	for (k = 0; k < 4; k++) {
		uint32_t w = RTE_MIN(20u << (k + 1), 160u);

		i = await_event(i + 1, RDP_SESSION_EV_ATTEMPT_FAILED, 5);
		RDP_ASSERT_MSG(cli.ev[i].delay_ms <= w && cli.ev[i].delay_ms >= w * 3 / 4,
			       "attempt %u: wait %u ms, not in [%u, %u]", cli.ev[i].attempt,
			       cli.ev[i].delay_ms, w * 3 / 4, w);
		RDP_ASSERT_EQ(cli.ev[i].attempt, k + 1);
		RDP_ASSERT(cli.ev[i].err < 0);
	}
	RDP_ASSERT(first_fail <= i);
	RDP_ASSERT_EQ(ld64(&srv.received), 10);

	/* it comes back on the same port */
	RDP_ASSERT_EQ(listen_on(port), port);
	i = await_event(i + 1, RDP_SESSION_EV_CONNECTED, 5);
	RDP_ASSERT(cli.ev[i].attempt >= 5);
	await_u64(&srv.received, 30, "the server's receipts after it came back");
	RDP_ASSERT_EQ(ld64(&srv.disorder), 0);
	RDP_ASSERT_EQ(ld64(&cli.failed[0]) + ld64(&cli.failed[1]), 0);
	await_u64(&cli.done, 30, "sends done");

	RDP_ASSERT_EQ(rdp_ep_counters_get(-1, &c), 0);
	RDP_ASSERT_EQ(c.reconnects, 1);
	RDP_ASSERT(c.reconnect_attempts >= 5);
	RDP_ASSERT_EQ(c.sessions_gave_up, 0);
	close_session(s);
	RDP_ASSERT_EQ(rdp_fini(), 0);
	rdp_cfg_free(cfg);
	return 0;
}

/*
 * Nobody listens. With queue_max = 0 a send is refused at once (ENOTCONN)
 * and the messages stay the application's; with a queue, what does not fit
 * is refused (ENOBUFS), what waits fails with -ETIMEDOUT after queue_tmo_ms,
 * and after loss_tmo_ms the session gives up: what waits then fails with
 * -ENOTCONN and later sends are refused.
 */
RDP_TEST(e2e, session_without_a_server_fails_fast_times_out_waiting_messages_and_gives_up)
{
	struct rdp_reconnect_policy pol = { .delay_ms = 10, .delay_max_ms = 40 };
	struct rdp_ep_counters c;
	struct rdp_session *s;
	struct rdp_cfg *cfg;
	uint32_t i;
	int port, err;

	rdp_test_eal_init("0-1");
	cfg = stream_cfg("shm", 65536);
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	/* a port nobody listens on: bound once, then closed */
	port = listen_on(0);
	RDP_ASSERT_EQ(rdp_listen_close(port), 0);

	/* fail fast: refused at once, nothing taken */
	s = open_session(port, &pol);
	await_event(0, RDP_SESSION_EV_ATTEMPT_FAILED, 5);
	RDP_ASSERT_EQ(offer(s, 0, 3, &err), 0);
	RDP_ASSERT_EQ(err, ENOTCONN);
	close_session(s);

	/*
	 * a queue of 4 whose messages wait 50 ms at most; lost for 2 s: give up
	 * (the loss clock runs from the open: the messages offered after the
	 * first attempt must time out before it, on a slow sanitizer build too)
	 */
	memset(&cli, 0, sizeof(cli));
	pol.queue_max = 4;
	pol.queue_tmo_ms = 50;
	pol.loss_tmo_ms = 2000;
	s = open_session(port, &pol);
	await_event(0, RDP_SESSION_EV_ATTEMPT, 5);
	RDP_ASSERT_EQ(offer(s, 0, 6, &err), 4);
	RDP_ASSERT_EQ(err, ENOBUFS);
	await_u64(&cli.failed[0], 4, "waiting messages failed by the session");
	RDP_ASSERT_EQ(cli.last_fail, -ETIMEDOUT);
	RDP_ASSERT_EQ(offer(s, 4, 2, &err), 2);
	i = await_event(0, RDP_SESSION_EV_GAVE_UP, 5);
	RDP_ASSERT(cli.ev[i].err < 0);
	RDP_ASSERT_EQ(rdp_session_state(s), RDP_SESSION_GAVE_UP);
	/* the two offered last waited less than 50 ms when it gave up, or timed out */
	await_u64(&cli.failed[0], 6, "every waiting message failed");
	RDP_ASSERT(cli.last_fail == -ENOTCONN || cli.last_fail == -ETIMEDOUT);
	RDP_ASSERT_EQ(offer(s, 6, 1, &err), 0);
	RDP_ASSERT_EQ(err, ENOTCONN);
	RDP_ASSERT_EQ(ld64(&cli.done), 0);
	RDP_ASSERT_EQ(rdp_ep_counters_get(-1, &c), 0);
	RDP_ASSERT_EQ(c.sessions_gave_up, 1);
	RDP_ASSERT_EQ(c.reconnects, 0);
	RDP_ASSERT(c.reconnect_attempts >= 2);
	close_session(s);

	/* closed from its own callback (GAVE_UP): the close runs after it */
	memset(&cli, 0, sizeof(cli));
	cli.close_in_callback = true;
	pol.queue_max = 0;
	pol.loss_tmo_ms = 50;
	s = open_session(port, &pol);
	i = await_event(0, RDP_SESSION_EV_CLOSED, 5);
	RDP_ASSERT_EQ(cli.ev[i - 1].kind, RDP_SESSION_EV_GAVE_UP);
	RDP_ASSERT_EQ(rdp_fini(), 0);
	rdp_cfg_free(cfg);
	return 0;
}

/* Bad parameters are refused with the field named; rdp_fini() closes what is left open. */
RDP_TEST(e2e, session_open_refuses_bad_parameters_and_names_them)
{
	struct rdp_session_params prm = { .ops = &cli_ops, .on_event = on_event, .lcore = 1 };
	const struct rdp_ep_ops with_state = { .on_recv = cli_recv, .on_state = srv_state };
	struct rdp_cfg *cfg;

	rdp_test_eal_init("0-1");
	RDP_ASSERT(rdp_session_open("127.0.0.1:1", &prm) == NULL);
	RDP_ASSERT_EQ(rte_errno, ENODEV);
	cfg = stream_cfg("shm", 65536);
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	prm.lcore = 0;
	RDP_ASSERT(rdp_session_open("127.0.0.1:1", &prm) == NULL);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	RDP_ASSERT(strstr(rdp_err_msg(), "lcore 0") != NULL);
	prm.lcore = 1;
	prm.policy.jitter_pct = 101;
	RDP_ASSERT(rdp_session_open("127.0.0.1:1", &prm) == NULL);
	RDP_ASSERT(strstr(rdp_err_msg(), "jitter_pct") != NULL);
	prm.policy.jitter_pct = 0;
	prm.ops = &with_state;
	RDP_ASSERT(rdp_session_open("127.0.0.1:1", &prm) == NULL);
	RDP_ASSERT(strstr(rdp_err_msg(), "on_state") != NULL);
	prm.ops = &cli_ops;
	RDP_ASSERT(rdp_session_open("no-port", &prm) == NULL);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	/* a session left open is closed by rdp_fini(), its CLOSED event last */
	RDP_ASSERT(rdp_session_open("127.0.0.1:1", &prm) != NULL);
	await_event(0, RDP_SESSION_EV_ATTEMPT_FAILED, 5);
	RDP_ASSERT_EQ(rdp_fini(), 0);
	RDP_ASSERT_EQ(cli.ev[ld32(&cli.nb_ev) - 1].kind, RDP_SESSION_EV_CLOSED);
	rdp_cfg_free(cfg);
	return 0;
}

/*
 * Two devices in the process (`device = nic-a, nic-b` on shm): a session
 * whose parameters name the second connects each of its endpoints there,
 * the first one and the one after the server came back; a device the
 * process lacks is refused at the open, naming those it has.
 */
RDP_TEST(e2e, session_connects_on_the_device_its_parameters_name_again_after_a_loss)
{
	const struct rdp_reconnect_policy pol = { .delay_ms = 10, .delay_max_ms = 40 };
	struct rdp_session_params prm = {
		.ops = &cli_ops, .on_event = on_event, .lcore = 1, .policy = pol,
	};
	struct rdp_session *s;
	struct rdp_cfg *cfg;
	char addr[64], dev[16];
	uint32_t i;
	int port;

	rdp_test_eal_init("0-1");
	cfg = stream_cfg("shm", 65536);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "device", "nic-a, nic-b", "test"), 0);
	RDP_ASSERT_MSG(rdp_cfg_validate(cfg) == 0, "%s", rdp_err_msg());
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_device_count(), 2);
	port = listen_on(0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	/* the buffer the name was in may change after the open: it is copied */
	snprintf(dev, sizeof(dev), "%s", "nic-b");
	prm.device = dev;
	s = rdp_session_open(addr, &prm);
	RDP_ASSERT_MSG(s != NULL, "rdp_session_open: %s", rdp_err_msg());
	memset(dev, 0, sizeof(dev));
	i = await_event(0, RDP_SESSION_EV_CONNECTED, 5);
	RDP_ASSERT_MSG(strcmp(cli.device, "nic-b") == 0, "first endpoint on %s", cli.device);
	RDP_ASSERT_EQ(offer(s, 0, 10, NULL), 10);
	await_u64(&srv.received, 10, "the server's receipts");

	/* the server's endpoint closes: the next endpoint is on nic-b too */
	cli.device[0] = '\0';
	rdp_ep_close(__atomic_load_n(&srv.ep, __ATOMIC_ACQUIRE));
	i = await_event(i + 1, RDP_SESSION_EV_DISCONNECTED, 5);
	i = await_event(i + 1, RDP_SESSION_EV_CONNECTED, 5);
	RDP_ASSERT_MSG(strcmp(cli.device, "nic-b") == 0, "endpoint after the loss on %s",
		       cli.device);
	RDP_ASSERT_EQ(offer(s, 10, 10, NULL), 10);
	await_u64(&srv.received, 20, "the server's receipts after the loss");
	RDP_ASSERT_EQ(ld64(&srv.disorder), 0);
	close_session(s);

	prm.device = "no-such-nic";
	RDP_ASSERT(rdp_session_open(addr, &prm) == NULL);
	RDP_ASSERT_EQ(rte_errno, ENODEV);
	RDP_ASSERT_MSG(strstr(rdp_err_msg(), "no device named 'no-such-nic' in this process "
			      "(devices: nic-a, nic-b)") != NULL, "%s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_fini(), 0);
	rdp_cfg_free(cfg);
	return 0;
}
