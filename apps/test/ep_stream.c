/* SPDX-License-Identifier: BSD-3-Clause */
/* The checked message stream of the end-to-end tests (see ep_stream.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app_hash.h"
#include "ep_stream.h"
#include "rdp_test.h"

void
stream_side_init(struct stream_side *s, const char *name, uint64_t salt, uint64_t peer_salt,
		 uint64_t count, uint32_t max_size, uint32_t window, bool pipeline)
{
	memset(s, 0, sizeof(*s));
	s->name = name;
	s->salt = salt;
	s->peer_salt = peer_salt;
	s->count = count;
	s->expect = count;
	s->max_size = max_size;
	s->window = window;
	s->pipeline = pipeline;
}

void
stream_wait_closed(struct stream_side *s)
{
	double deadline = rdp_clock_s() + 10;

	stream_stop_sending(s);
	while (!__atomic_load_n(&s->closed, __ATOMIC_ACQUIRE)) {
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "%s: no CLOSED event within 10 s", s->name);
		if (s->pipeline)
			stream_pump(&s, 1, 0.001);
		else
			usleep(1000);
	}
}

uint32_t
stream_size(uint64_t salt, uint64_t seq, uint32_t max)
{
	uint64_t r = app_mix64(salt * 0x9e3779b97f4a7c15ull + seq);
	unsigned int bits = 1 + (r % 63) % (32 - __builtin_clz(max));

	if (r % 100 == 7)
		return max;
	return 1 + (uint32_t)((r >> 8) % RTE_MIN((uint64_t)max, 1ull << bits));
}

/*
 * Byte i of message seq is byte (i % 8) of word app_mix64(key + i / 8). Segments
 * hold whole words except the last, so the hot loops move 8 bytes at a time.
 */
static inline uint64_t
word_at(uint64_t key, uint32_t off)
{
	return app_mix64(key + off / 8);
}

static void
fill(struct rdp_msg *m, uint64_t salt, uint64_t seq)
{
	uint64_t key = app_mix64(salt ^ (seq << 20));
	uint32_t off = 0;

	for (; m != NULL; m = m->next) {
		uint8_t *p = m->data;
		uint32_t i = 0;

		for (; (off & 7) == 0 && i + 8 <= m->data_len; i += 8, off += 8) {
			uint64_t w = word_at(key, off);

			memcpy(p + i, &w, 8);
		}
		for (; i < m->data_len; i++, off++)
			p[i] = (uint8_t)(word_at(key, off) >> ((off & 7) * 8));
	}
}

static bool
check(const struct rdp_msg *m, uint64_t salt, uint64_t seq, uint32_t *bad_off)
{
	uint64_t key = app_mix64(salt ^ (seq << 20));
	uint32_t off = 0;

	for (; m != NULL; m = m->next) {
		const uint8_t *p = m->data;
		uint32_t i = 0;

		for (; (off & 7) == 0 && i + 8 <= m->data_len; i += 8, off += 8) {
			uint64_t w;

			memcpy(&w, p + i, 8);
			if (w != word_at(key, off)) {
				*bad_off = off;
				return false;
			}
		}
		for (; i < m->data_len; i++, off++) {
			if (p[i] != (uint8_t)(word_at(key, off) >> ((off & 7) * 8))) {
				*bad_off = off;
				return false;
			}
		}
	}
	return true;
}

static void
note(struct stream_side *s, const char *fmt, uint64_t a, uint64_t b)
{
	if (s->error[0] == '\0')
		snprintf(s->error, sizeof(s->error), fmt, s->name, a, b);
}

/*
 * The side's counters have one writer, the thread that handles its events
 * (the poller lcore in run-to-completion mode). It stores them with release
 * so that a thread that reads them with acquire (stream_finished(),
 * stream_ep()) may then read the rest of the side.
 */
static inline void
publish(uint64_t *counter, uint64_t value)
{
	__atomic_store_n(counter, value, __ATOMIC_RELEASE);
}

/* Send up to the window; returns how many went out. */
static unsigned int
send_more(struct stream_side *s)
{
	uint64_t count = __atomic_load_n(&s->count, __ATOMIC_RELAXED);
	struct rdp_ep *ep = stream_ep(s);
	unsigned int sent = 0;

	while (s->next_send < count && s->next_send - s->done - s->failed < s->window) {
		uint32_t len = stream_size(s->salt, s->next_send, s->max_size);
		struct rdp_msg *m = rdp_msg_alloc(ep, len);

		if (m == NULL) {
			if (rte_errno != ENOBUFS)
				note(s, "%s: rdp_msg_alloc(%" PRIu64 ") failed: errno %" PRIu64,
				     len, rte_errno);
			break;
		}
		fill(m, s->salt, s->next_send);
		m->user_data = s->next_send;
		if (rdp_ep_send_burst(ep, &m, 1) != 1) {
			rdp_msg_free(m);
			break;
		}
		publish(&s->next_send, s->next_send + 1);
		sent++;
	}
	return sent;
}

static void
on_received(struct stream_side *s, struct rdp_msg *m)
{
	uint32_t want = stream_size(s->peer_salt, s->received, s->max_size), bad = 0;

	if (m->pkt_len != want)
		note(s, "%s: message %" PRIu64 " has %" PRIu64 " bytes", s->received, m->pkt_len);
	else if (!check(m, s->peer_salt, s->received, &bad))
		note(s, "%s: message %" PRIu64 " differs at byte %" PRIu64, s->received, bad);
	if (s->received + 1 > s->expect)
		note(s, "%s: %" PRIu64 " messages received, %" PRIu64 " expected",
		     s->received + 1, s->expect);
	publish(&s->bytes, s->bytes + m->pkt_len);
	publish(&s->received, s->received + 1);
	rdp_msg_free(m);
}

static void
on_sent(struct stream_side *s, struct rdp_msg *m)
{
	if (m->event == RDP_EV_SEND_DONE) {
		if (m->user_data != s->done + s->failed)
			note(s, "%s: send completion %" PRIu64 " arrived as number %" PRIu64,
			     m->user_data, s->done + s->failed);
		publish(&s->done, s->done + 1);
	} else {
		publish(&s->failed, s->failed + 1);
	}
	rdp_msg_free(m);
}

static void
on_state_change(struct stream_side *s, struct rdp_ep *ep, enum rdp_ep_state st, int err)
{
	if (st == RDP_EP_ESTABLISHED) {
		__atomic_store_n(&s->ep, ep, __ATOMIC_RELEASE);
		__atomic_store_n(&s->established, true, __ATOMIC_RELEASE);
		if (!s->pipeline)
			send_more(s);
	} else if (st == RDP_EP_FAILED) {
		__atomic_store_n(&s->state_err, err, __ATOMIC_RELEASE);
	} else if (st == RDP_EP_CLOSED) {
		__atomic_store_n(&s->closed, true, __ATOMIC_RELEASE);
	}
}

static uint16_t
rtc_recv(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	struct stream_side *s = arg;
	uint16_t i;

	RTE_SET_USED(ep);
	for (i = 0; i < n; i++)
		on_received(s, msgs[i]);
	return n;
}

static void
rtc_send(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	struct stream_side *s = arg;
	uint16_t i;

	RTE_SET_USED(ep);
	for (i = 0; i < n; i++)
		on_sent(s, msgs[i]);
	send_more(s);
}

/* On the poller: a side that could not allocate tries again (stream_pump()). */
static void
rtc_kick(struct rdp_ep *ep, void *arg)
{
	struct stream_side *s = arg;

	RTE_SET_USED(ep);
	send_more(s);
	__atomic_store_n(&s->kick_pending, false, __ATOMIC_RELEASE);
}

/*
 * A run-to-completion side sends from its completions; one left with none
 * in flight (its poller's send pool or arena was empty, taken by the other
 * endpoints of that lcore) gets no completion to try again from, so the
 * pump sends it back to its poller to try.
 */
static void
rtc_retry(struct stream_side *s)
{
	struct rdp_ep *ep = stream_ep(s);
	uint64_t next = __atomic_load_n(&s->next_send, __ATOMIC_ACQUIRE);

	/* a test may store the endpoint at rdp_connect(): its handshake is not done */
	if (ep == NULL || !__atomic_load_n(&s->established, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&s->kick_pending, __ATOMIC_ACQUIRE) ||
	    next >= __atomic_load_n(&s->count, __ATOMIC_RELAXED) ||
	    next != __atomic_load_n(&s->done, __ATOMIC_ACQUIRE) +
		    __atomic_load_n(&s->failed, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&s->kick_pending, true, __ATOMIC_RELEASE);
	if (rdp_ep_call(ep, rtc_kick, s) < 0)
		__atomic_store_n(&s->kick_pending, false, __ATOMIC_RELEASE); /* inbox full: next pass */
}

static void
rtc_state(struct rdp_ep *ep, enum rdp_ep_state st, int err, void *arg)
{
	on_state_change(arg, ep, st, err);
}

static const struct rdp_ep_ops stream_ops = {
	.on_recv = rtc_recv,
	.on_send = rtc_send,
	.on_state = rtc_state,
};

void
stream_params(struct stream_side *s, struct rdp_ep_params *prm)
{
	memset(prm, 0, sizeof(*prm));
	prm->lcore = -1;
	prm->notify_send_ok = true;
	if (s->pipeline) {
		char name[RTE_RING_NAMESIZE];

		snprintf(name, sizeof(name), "ev_%s", s->name);
		s->events = rte_ring_create(name, 4096, SOCKET_ID_ANY, RING_F_SC_DEQ);
		RDP_ASSERT_MSG(s->events != NULL, "rte_ring_create: %s", rte_strerror(rte_errno));
		prm->events = s->events;
	} else {
		prm->ops = &stream_ops;
		prm->arg = s;
	}
}

void
stream_kick(struct stream_side *s)
{
	if (s->pipeline)
		send_more(s);
}

bool
stream_finished(const struct stream_side *s)
{
	return __atomic_load_n(&s->received, __ATOMIC_ACQUIRE) == s->expect &&
	       __atomic_load_n(&s->done, __ATOMIC_ACQUIRE) +
	       __atomic_load_n(&s->failed, __ATOMIC_ACQUIRE) ==
	       __atomic_load_n(&s->count, __ATOMIC_RELAXED);
}

struct rdp_ep *
stream_ep(const struct stream_side *s)
{
	return __atomic_load_n(&s->ep, __ATOMIC_ACQUIRE);
}

void
stream_stop_sending(struct stream_side *s)
{
	__atomic_store_n(&s->count,
			 __atomic_load_n(&s->done, __ATOMIC_ACQUIRE) +
			 __atomic_load_n(&s->failed, __ATOMIC_ACQUIRE), __ATOMIC_RELAXED);
}

void
stream_dump(const struct stream_side *s)
{
	struct rdp_ep *ep = stream_ep(s);
	struct rdp_ep_stats st;

	/* the error text is only read after the counters that follow it */
	printf("%s: sent %" PRIu64 " of %" PRIu64 " (done %" PRIu64 ", failed %" PRIu64
	       "), received %" PRIu64 " of %" PRIu64 "\n", s->name,
	       __atomic_load_n(&s->next_send, __ATOMIC_ACQUIRE),
	       __atomic_load_n(&s->count, __ATOMIC_RELAXED),
	       __atomic_load_n(&s->done, __ATOMIC_ACQUIRE),
	       __atomic_load_n(&s->failed, __ATOMIC_ACQUIRE),
	       __atomic_load_n(&s->received, __ATOMIC_ACQUIRE), s->expect);
	if (s->error[0] != '\0')
		printf("%s: %s\n", s->name, s->error);
	if (ep == NULL)
		return;
	rdp_ep_stats_get(ep, &st);
	printf("%s: endpoint %s, sq in flight %u, remote credits %u, owed %u, receives posted "
	       "%u, acks %" PRIu64 ", reclaims %" PRIu64 ", enomem %" PRIu64 ", rnr %" PRIu64 "\n",
	       s->name, rdp_ep_state_str(rdp_ep_state(ep)), st.sq_inflight, st.remote_credits,
	       st.owed, st.recv_posted, st.acks, st.reclaims, st.enomem, st.rnr);
}

int
stream_pump(struct stream_side **sides, unsigned int n, double timeout_s)
{
	double deadline = rdp_clock_s() + timeout_s;

	for (;;) {
		unsigned int i, finished = 0, work = 0;

		for (i = 0; i < n; i++) {
			struct stream_side *s = sides[i];
			struct rdp_msg *ev[64];
			uint16_t k, j;

			if (!s->pipeline) {
				if (!stream_finished(s))
					rtc_retry(s);
				else
					finished++;
				continue;
			}
			k = rdp_event_dequeue_burst(s->events, ev, RTE_DIM(ev));
			for (j = 0; j < k; j++) {
				switch (ev[j]->event) {
				case RDP_EV_RECV:
					on_received(s, ev[j]);
					break;
				case RDP_EV_SEND_DONE:
				case RDP_EV_SEND_FAILED:
					on_sent(s, ev[j]);
					break;
				case RDP_EV_STATE:
					on_state_change(s, ev[j]->ep,
							(enum rdp_ep_state)ev[j]->user_data,
							ev[j]->status);
					rdp_msg_free(ev[j]);
					break;
				}
			}
			if (stream_ep(s) != NULL)
				work += send_more(s);
			work += k;
			finished += stream_finished(s);
		}
		if (finished == n)
			return 0;
		if (rdp_clock_s() > deadline) {
			for (i = 0; i < n; i++)
				stream_dump(sides[i]);
			return -ETIMEDOUT;
		}
		if (work == 0)
			usleep(20); /* let a poller sharing this CPU run */
	}
}

void
stream_cfg_env(struct rdp_cfg *cfg)
{
	const char *env = getenv("RDP_TEST_CFG");
	char buf[512], *tok, *save, *eq;

	/* a lane's overrides, "key=value,key=value" (e.g. idle_sleep_us in a VM) */
	if (env == NULL)
		return;
	snprintf(buf, sizeof(buf), "%s", env);
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		eq = strchr(tok, '=');
		RDP_ASSERT_MSG(eq != NULL, "RDP_TEST_CFG: '%s' is not key=value", tok);
		*eq = '\0';
		RDP_ASSERT_MSG(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, tok, eq + 1, "RDP_TEST_CFG") == 0,
			       "%s", rdp_err_msg());
	}
}

struct rdp_cfg *
stream_cfg(const char *driver, uint32_t max_msg)
{
	static const char *const kv[][2] = {
		{ "buf_size", "4096" }, { "sq_size", "64" }, { "rq_size", "64" },
		{ "signal_interval", "8" }, { "ack_threshold", "8" }, { "ack_reserve", "8" },
		{ "max_endpoints", "16" }, { "send_bufs", "8192" }, { "rnr_retry", "0" },
		{ "listen", "" }, { "handshake_timeout_ms", "2000" },
		{ "connect_timeout_ms", "2000" },
		/*
		 * the sanitizer lanes' clients, beside busy pollers on two
		 * CPUs, may send their HELLO later than production's 200 ms
		 * allow; the fair-handshake tests set it themselves
		 */
		{ "hello_timeout_ms", "2000" },
		/*
		 * 1 s transport timeout (4.096 us * 2^18): rxe under an emulated,
		 * loaded VM retransmits multi-packet SENDs on the default 67 ms and
		 * then reports REM_INV_REQ or RNR for them (docs/rxe-lane.md)
		 */
		{ "timeout", "18" },
	};
	struct rdp_cfg *cfg = rdp_cfg_default();
	char v[32];
	unsigned int i;

	RDP_ASSERT(cfg != NULL);
	for (i = 0; i < RTE_DIM(kv); i++)
		RDP_ASSERT_MSG(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, kv[i][0], kv[i][1], "test") == 0,
			       "%s", rdp_err_msg());
	snprintf(v, sizeof(v), "%u", max_msg);
	RDP_ASSERT_MSG(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "max_msg_size", v, "test") == 0, "%s",
		       rdp_err_msg());
	/* slow runs (valgrind) need longer handshake deadlines */
	if (getenv("RDP_TEST_HANDSHAKE_MS") != NULL) {
		RDP_ASSERT(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "connect_timeout_ms",
				       getenv("RDP_TEST_HANDSHAKE_MS"), "test") == 0);
		RDP_ASSERT(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "handshake_timeout_ms",
				       getenv("RDP_TEST_HANDSHAKE_MS"), "test") == 0);
		RDP_ASSERT(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "hello_timeout_ms",
				       getenv("RDP_TEST_HANDSHAKE_MS"), "test") == 0);
	}
	RDP_ASSERT_MSG(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "driver", driver, "test") == 0, "%s",
		       rdp_err_msg());
	stream_cfg_env(cfg);
	RDP_ASSERT_MSG(rdp_cfg_validate(cfg) == 0, "%s", rdp_err_msg());
	return cfg;
}

int
stream_tcp_connect(int port, int *fd)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int err = 0;

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	*fd = socket(AF_INET, SOCK_STREAM, 0);
	RDP_ASSERT(*fd >= 0);
	if (connect(*fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		err = errno;
		close(*fd);
		*fd = -1;
	}
	return err;
}

int
stream_raw_connect(int port)
{
	int fd, err = stream_tcp_connect(port, &fd);

	RDP_ASSERT_MSG(err == 0, "connect to port %d: %s", port, strerror(err));
	return fd;
}

uint16_t
stream_recv_free_all(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	uint16_t i;

	RTE_SET_USED(ep);
	RTE_SET_USED(arg);
	for (i = 0; i < n; i++)
		rdp_msg_free(msgs[i]);
	return n;
}

struct rdp_ep *
stream_loopback_connect(const struct rdp_ep_params *srv, const struct rdp_ep_params *cli)
{
	struct rdp_ep *ep;
	char addr[64];
	int port;

	port = rdp_listen("127.0.0.1:0", srv);
	RDP_ASSERT_MSG(port > 0, "rdp_listen: %s", rdp_err_msg());
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	ep = rdp_connect(addr, cli);
	RDP_ASSERT_MSG(ep != NULL, "rdp_connect: %s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_ep_wait_established(ep, 5000), 0);
	return ep;
}
