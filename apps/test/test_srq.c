/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Endpoints on a shared receive queue (srq = on) end to end, on shm or the
 * driver given with --driver: checked two-way streams of 2, 16 and 256
 * endpoints leasing from one poller's SRQ (chunked and rendezvous
 * messages, both modes, every message once and in order, no RNR with
 * rnr_retry = 0, no ENOMEM), a leasing side against a peer that does not
 * lease, an endpoint refused for want of floor, and the lease of every
 * endpoint back in the pool once all of them closed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ep_stream.h"
#include "rdp_test.h"

#define SRQ_MAX_MSG (256u * 1024)  /* rendezvous above 4 chunks of 4 KiB */
#define SRQ_PAIRS_MAX 128

/* A leasing configuration: floor 4 (a chunked message of 16 KiB), lease_max 32. */
static const char *const (*srq_extra)[2]; /* settings a test adds to srq_cfg()'s, NULL-ended */

static struct rdp_cfg *
srq_cfg(const char *srq_size, const char *max_endpoints)
{
	static const char *const kv[][2] = {
		{ "srq", "on" }, { "srq_floor", "4" }, { "srq_lease_max", "32" },
		{ "srq_grant", "8" }, { "rndv_threshold", "16384" }, { "send_bufs", "32768" },
		{ "handshake_timeout_ms", "30000" }, { "connect_timeout_ms", "30000" },
	};
	struct rdp_cfg *cfg = stream_cfg(rdp_test_driver_or("shm:cqe_order=random:7"),
					 SRQ_MAX_MSG);
	unsigned int i;

	stream_cfg_env(cfg);
	for (i = 0; i < RTE_DIM(kv); i++)
		RDP_ASSERT_MSG(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, kv[i][0], kv[i][1], "test") == 0,
			       "%s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "srq_size", srq_size, "test"), 0);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "max_endpoints", max_endpoints, "test"), 0);
	for (i = 0; srq_extra != NULL && srq_extra[i][0] != NULL; i++)
		RDP_ASSERT_MSG(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, srq_extra[i][0], srq_extra[i][1],
					   "test") == 0, "%s", rdp_err_msg());
	return cfg;
}

/* A side of the stream finished clean: everything once, in order, no RNR, no ENOMEM. */
static void
assert_side_clean(struct stream_side *s)
{
	struct rdp_ep_stats st;

	RDP_ASSERT_MSG(s->error[0] == '\0', "%s: %s", s->name, s->error);
	RDP_ASSERT_EQ(s->done, s->count);
	RDP_ASSERT_EQ(s->failed, 0);
	RDP_ASSERT_EQ(s->received, s->expect);
	rdp_ep_stats_get(stream_ep(s), &st);
	RDP_ASSERT_EQ(st.enomem, 0);
	RDP_ASSERT_EQ(st.rnr, 0);
	RDP_ASSERT_EQ(st.msgs_failed, 0);
	RDP_ASSERT_EQ(st.msgs_received, s->expect);
	RDP_ASSERT_EQ(st.bytes_received, s->bytes);
}

static void
print_srq(const char *when, unsigned int lcore)
{
	struct rdp_srq_stats q;

	RDP_ASSERT_EQ(rdp_lcore_srq_stats_get(lcore, &q), 0);
	printf("lcore %u SRQ %s: size %u posted %u free %u leased %u reserved %u FIN reserve "
	       "%u (%u free, %" PRIu64 " waits) members %u, grants %" PRIu64 " diverted %" PRIu64
	       " given back %" PRIu64 " refused %" PRIu64 "\n", lcore, when, q.size, q.posted,
	       q.free, q.leased, q.reserved, q.fin_reserve, q.fin_free, q.fin_waits, q.members,
	       q.grants, q.diverted, q.given_back, q.refused);
}

/*
 * Wait (5 s at most) until every buffer of the SRQ of @p lcore is posted
 * and, with @p no_members, no endpoint leases from it; its stats in @p q.
 */
static void
srq_wait_posted(unsigned int lcore, bool no_members, struct rdp_srq_stats *q)
{
	double deadline = rdp_clock_s() + 5;

	for (;;) {
		RDP_ASSERT_EQ(rdp_lcore_srq_stats_get(lcore, q), 0);
		if (q->posted == q->size && (!no_members || q->members == 0))
			break;
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "lcore %u: %u members, %u of %u posted",
			       lcore, q->members, q->posted, q->size);
		usleep(1000);
	}
}

/* Every endpoint gone: every credit back in the pool, every buffer on the SRQ. */
static void
assert_srq_whole(unsigned int lcore)
{
	struct rdp_srq_stats q;

	srq_wait_posted(lcore, true, &q);
	RDP_ASSERT_EQ(q.free + q.fin_reserve, q.size);
	RDP_ASSERT_EQ(q.fin_free, q.fin_reserve);
	RDP_ASSERT_EQ(q.leased, 0);
	RDP_ASSERT_EQ(q.reserved, 0);
	print_srq("after every close", lcore);
}

static struct stream_side srv[SRQ_PAIRS_MAX], cli[SRQ_PAIRS_MAX];
static char names[2 * SRQ_PAIRS_MAX][16];

/* Streams done within @p timeout_s, or what each side and endpoint stands at. */
static int
pump_or_dump(struct stream_side **sides, unsigned int n, double timeout_s)
{
	unsigned int i;

	if (stream_pump(sides, n, timeout_s) == 0)
		return 0;
	for (i = 0; i < n; i++)
		if (!stream_finished(sides[i]))
			stream_dump(sides[i]);
	rdp_endpoints_dump(stdout);
	print_srq("stuck", 1);
	return -ETIMEDOUT;
}

/*
 * @p pairs checked two-way streams in this process, both ends of each on
 * lcore 1: 2 * @p pairs endpoints lease from its one SRQ.
 */
static uint32_t srq_reserve_each; /* when set, the reserve srq_pairs() expects per endpoint */
static bool srq_check_max_msg;     /* when set, the first client's largest message is checked */
static bool srq_expect_fin_waits;  /* when set, descriptors must have waited for FIN credits */
static uint32_t srq_expect_fin_reserve; /* when set, the FIN reserve srq_pairs() expects */

static int
srq_pairs(unsigned int pairs, bool pipeline, uint64_t count, uint32_t window,
	  const char *srq_size, uint32_t max_size)
{
	struct stream_side *sides[2 * SRQ_PAIRS_MAX];
	struct rdp_ep_params psrv, pcli;
	struct rdp_cfg *cfg;
	struct rdp_ep *ep0;
	char addr[64], eps[16];
	struct rdp_srq_stats q;
	unsigned int i;
	int port;

	rdp_test_eal_init("0-1");
	snprintf(eps, sizeof(eps), "%u", 2 * pairs + 8);
	cfg = srq_cfg(srq_size, eps);
	RDP_ASSERT_MSG(rdp_cfg_validate(cfg) == 0, "%s", rdp_err_msg());
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	for (i = 0; i < pairs; i++) {
		snprintf(names[2 * i], sizeof(names[0]), "server%u", i);
		snprintf(names[2 * i + 1], sizeof(names[0]), "client%u", i);
		stream_side_init(&srv[i], names[2 * i], 2 * i + 1, 2 * i + 2, count, max_size,
				 window, pipeline);
		stream_side_init(&cli[i], names[2 * i + 1], 2 * i + 2, 2 * i + 1, count,
				 max_size, window, pipeline);
		stream_params(&srv[i], &psrv);
		stream_params(&cli[i], &pcli);
		/* a listener per pair: its accepted endpoint drives its own side */
		port = rdp_listen("127.0.0.1:0", &psrv);
		RDP_ASSERT_MSG(port > 0, "rdp_listen: %s", rdp_err_msg());
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
		ep0 = rdp_connect(addr, &pcli);
		RDP_ASSERT_MSG(ep0 != NULL, "rdp_connect: %s", rdp_err_msg());
		if (i == 0 && srq_check_max_msg) {
			/* the rendezvous carries what srq_floor chunks cannot */
			RDP_ASSERT_EQ(rdp_ep_wait_established(ep0, 30000), 0);
			RDP_ASSERT_MSG(rdp_ep_max_msg_size(ep0) == max_size, "rdp_ep_max_msg_size "
				       "says %u, rdp_msg_alloc takes up to %u",
				       rdp_ep_max_msg_size(ep0), max_size);
			RDP_ASSERT(rdp_msg_alloc(ep0, max_size + 1) == NULL);
			RDP_ASSERT_EQ(rte_errno, EMSGSIZE);
		}
		sides[2 * i] = &srv[i];
		sides[2 * i + 1] = &cli[i];
	}
	RDP_ASSERT_EQ(pump_or_dump(sides, 2 * pairs, 120), 0);
	for (i = 0; i < 2 * pairs; i++)
		assert_side_clean(sides[i]);
	RDP_ASSERT_EQ(rdp_lcore_srq_stats_get(1, &q), 0);
	RDP_ASSERT_EQ(q.members, 2 * pairs);
	RDP_ASSERT_EQ(q.free + q.leased + q.reserved + q.fin_reserve, q.size);
	if (srq_reserve_each != 0)
		RDP_ASSERT_EQ(q.reserved, 2 * pairs * srq_reserve_each);
	if (srq_expect_fin_reserve != 0)
		RDP_ASSERT_EQ(q.fin_reserve, srq_expect_fin_reserve);
	if (srq_expect_fin_waits)
		RDP_ASSERT_MSG(q.fin_waits > 0, "no descriptor waited for a FIN credit: the test "
			       "proves nothing");
	/* every message freed, the endpoints still up: the buffers that came back
	 * last, waiting in the repost batch, go back on the SRQ once the poller idles */
	srq_wait_posted(1, false, &q);
	print_srq("after the streams", 1);
	printf("%u endpoints, %" PRIu64 " messages each way per pair, all exact\n", 2 * pairs,
	       count);
	for (i = 0; i < pairs; i++) {
		rdp_ep_close(stream_ep(&cli[i]));
		rdp_ep_close(stream_ep(&srv[i]));
	}
	for (i = 0; i < pairs; i++) {
		stream_wait_closed(&cli[i]);
		stream_wait_closed(&srv[i]);
	}
	assert_srq_whole(1);
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}

RDP_TEST(e2e, srq_two_endpoints_stream_exact_rtc)
{
	/* a small SRQ: grants run the pool dry and come back */
	return srq_pairs(1, false, 2000, 16, "64", SRQ_MAX_MSG);
}

RDP_TEST(e2e, srq_two_endpoints_stream_exact_pipeline)
{
	return srq_pairs(1, true, 2000, 16, "64", SRQ_MAX_MSG);
}

/*
 * On an SRQ a chunked message has at most srq_floor chunks (16 KiB here);
 * larger ones go by rendezvous. rdp_ep_max_msg_size() says the largest
 * rdp_msg_alloc() takes, the rendezvous included: an application that
 * sizes its requests by it (rdp-blk) must not be held to the chunks.
 */
RDP_TEST(e2e, srq_endpoint_max_msg_size_counts_the_rendezvous)
{
	int ret;

	srq_check_max_msg = true;
	ret = srq_pairs(1, false, 200, 16, "64", SRQ_MAX_MSG);
	srq_check_max_msg = false;
	return ret;
}

/*
 * Leasing on both sides with lease_max = ack_threshold: a leasing side's
 * pure ack carries ack_threshold credits or more, or goes when none of its
 * lease is lent out and is then alone, so one buffer of the SRQ per
 * endpoint holds its peer's pure acks (max(1, lease_max / ack_threshold)).
 * Two-way streams, one message at a time, in random completion order and
 * with rnr_retry = 0: an ack beyond that reserve would be an RNR, and a
 * pure ack of fewer credits while its peer still holds some fails the
 * endpoint (ep_rx.c). RDP_SRQ_COUNT messages each way per pair.
 */
RDP_TEST(e2e, srq_pure_acks_of_a_leasing_peer_fit_one_buffer_each)
{
	static const char *const kv[][2] = {
		{ "srq_floor", "4" }, { "srq_lease_max", "8" }, { "ack_threshold", "8" },
		{ "rnr_retry", "0" }, { NULL, NULL },
	};
	int ret;

	srq_extra = kv;
	srq_reserve_each = 1;
	ret = srq_pairs(4, false, rdp_test_env_u64("RDP_SRQ_COUNT", 3000), 1, "128", SRQ_MAX_MSG);
	srq_extra = NULL;
	srq_reserve_each = 0;
	return ret;
}

/*
 * Eight endpoints on an SRQ of 80 share its FIN reserve of 5: their
 * rendezvous descriptors wait for FIN credits in line (fin_waits), each
 * woken in turn as FINs come back, and every stream is exact.
 */
RDP_TEST(e2e, srq_8_endpoints_wait_in_line_for_the_fin_reserve)
{
	int ret;

	srq_expect_fin_waits = true;
	srq_expect_fin_reserve = 5;	/* a sixteenth of the SRQ */
	ret = srq_pairs(4, false, rdp_test_env_u64("RDP_SRQ_COUNT", 1000), 8, "80", SRQ_MAX_MSG);
	srq_expect_fin_waits = false;
	srq_expect_fin_reserve = 0;
	return ret;
}

/* The same with the pipeline, where fewer descriptors meet at once (and may not wait) */
RDP_TEST(e2e, srq_8_endpoints_wait_in_line_for_the_fin_reserve_pipeline)
{
	return srq_pairs(4, true, rdp_test_env_u64("RDP_SRQ_COUNT", 1000), 8, "80", SRQ_MAX_MSG);
}

/* RDP_SRQ_COUNT messages each way per pair (the rxe lane: 150, 2400 in all) */
RDP_TEST(e2e, srq_16_endpoints_stream_exact_rtc)
{
	return srq_pairs(8, false, rdp_test_env_u64("RDP_SRQ_COUNT", 400), 8, "512", SRQ_MAX_MSG);
}

RDP_TEST(e2e, srq_16_endpoints_stream_exact_pipeline)
{
	return srq_pairs(8, true, rdp_test_env_u64("RDP_SRQ_COUNT", 400), 8, "512", SRQ_MAX_MSG);
}

/*
 * 256 sides share the lcore's rendezvous arenas (4 MiB each), with
 * messages up to 32 KiB (those above 16 KiB by rendezvous): the send arena
 * is often full, and a run-to-completion side refused with nothing in
 * flight is sent back to its poller to try again (stream_pump()).
 */
RDP_TEST(e2e, srq_256_endpoints_stream_exact_rtc)
{
	int ret;

	/* a FIN reserve of what the send arena holds at once: on shm its
	 * 1 MiB limit, in messages of more than 16 KiB, 20 KiB each */
	if (strncmp(rdp_test_driver_or("shm"), "shm", 3) == 0)
		srq_expect_fin_reserve = 51;
	ret = srq_pairs(128, false, 40, 4, "4096", 32768);
	srq_expect_fin_reserve = 0;
	return ret;
}

RDP_TEST(e2e, srq_256_endpoints_stream_exact_pipeline)
{
	return srq_pairs(128, true, 40, 4, "4096", 32768);
}

/*
 * Pair @p i of the checked streams: the server side on lcore 1, the client
 * on lcore 2, @p count messages of up to @p max_size each way, connected.
 */
static void
pair_on_lcores_1_and_2(unsigned int i, uint64_t count, uint32_t max_size)
{
	struct rdp_ep_params psrv, pcli;
	char addr[64];
	int port;

	stream_side_init(&srv[i], "server", 1, 2, count, max_size, 16, false);
	stream_side_init(&cli[i], "client", 2, 1, count, max_size, 16, false);
	stream_params(&srv[i], &psrv);
	stream_params(&cli[i], &pcli);
	psrv.lcore = 1;
	pcli.lcore = 2;
	port = rdp_listen("127.0.0.1:0", &psrv);
	RDP_ASSERT_MSG(port > 0, "rdp_listen: %s", rdp_err_msg());
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	RDP_ASSERT_MSG(rdp_connect(addr, &pcli) != NULL, "rdp_connect: %s", rdp_err_msg());
}

/*
 * EAL with lcore 1 leasing (srq = on, an SRQ of 64) and lcore 2 not, whose
 * endpoints give back after @p give_back_us: the validated configuration.
 */
static struct rdp_cfg *
leasing_and_not_cfg(const char *max_endpoints, const char *give_back_us)
{
	struct rdp_cfg *cfg;

	rdp_test_eal_init("0@0,1@0,2@1");
	cfg = srq_cfg("64", max_endpoints);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, 1, "poll_burst", "32", "test"), 0);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, 2, "srq", "off", "test"), 0);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, 2, "srq_give_back_us", give_back_us, "test"), 0);
	RDP_ASSERT_MSG(rdp_cfg_validate(cfg) == 0, "%s", rdp_err_msg());
	return cfg;
}

/*
 * One leasing endpoint (lcore 1, srq = on) against a peer that does not
 * lease (lcore 2, srq = off): the peer starts at the floor, asks with WANT,
 * gives back; the leasing side's acks land in the peer's own RQ.
 */
RDP_TEST(e2e, srq_leasing_side_and_a_peer_that_does_not_lease_stream_exact)
{
	struct stream_side *sides[2] = { &srv[0], &cli[0] };
	struct rdp_srq_stats q;
	struct rdp_cfg *cfg;

	cfg = leasing_and_not_cfg("8", "200");
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_lcore_srq_stats_get(2, &q), -ENOTSUP);
	pair_on_lcores_1_and_2(0, 3000, SRQ_MAX_MSG);
	RDP_ASSERT_EQ(pump_or_dump(sides, 2, 120), 0);
	assert_side_clean(&srv[0]);
	assert_side_clean(&cli[0]);
	RDP_ASSERT_EQ(rdp_lcore_srq_stats_get(1, &q), 0);
	RDP_ASSERT_EQ(q.members, 1);
	/* the peer wanted more than its floor and got it */
	RDP_ASSERT(q.grants > 0);
	print_srq("after the stream", 1);
	rdp_ep_close(stream_ep(&cli[0]));
	rdp_ep_close(stream_ep(&srv[0]));
	stream_wait_closed(&cli[0]);
	stream_wait_closed(&srv[0]);
	assert_srq_whole(1);
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}

/*
 * SRQs with no credit to spare, one per side (lcores 1 and 2, on CPUs of
 * their own): srq_size is the one endpoint's floor and its peer's ack
 * reserve, lease_max the floor, and no message goes by rendezvous (so the
 * SRQ keeps no FIN reserve). A buffer a freed message leaves must be back
 * on the SRQ before a SEND names its credit: with the pool empty nothing
 * else covers it, and the peer's SEND that spends that credit would find the
 * SRQ empty (rnr_retry = 0 makes that an error). The sides send from their
 * receive callbacks, RDP_SRQ_COUNT messages each way (20000). The rule
 * itself is proved by lease.pml and the simulator of test_lease.c: here it
 * runs end to end where the pool never covers a buffer.
 */
RDP_TEST(e2e, srq_without_slack_posts_a_buffer_before_a_send_names_its_credit)
{
	static const char *const kv[][2] = {
		{ "srq_floor", "4" }, { "srq_lease_max", "4" }, { "rnr_retry", "0" },
		{ "max_msg_size", "16384" }, { NULL, NULL },
	};
	struct stream_side *sides[2] = { &srv[0], &cli[0] };
	struct rdp_srq_stats q;
	struct rdp_cfg *cfg;
	unsigned int lc;

	rdp_test_eal_init("0@0,1@0,2@1");
	srq_extra = kv;
	cfg = srq_cfg("5", "8");
	srq_extra = NULL;
	RDP_ASSERT_MSG(rdp_cfg_validate(cfg) == 0, "%s", rdp_err_msg());
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	pair_on_lcores_1_and_2(0, rdp_test_env_u64("RDP_SRQ_COUNT", 20000), 16384);
	RDP_ASSERT_EQ(pump_or_dump(sides, 2, 120), 0);
	assert_side_clean(&srv[0]);
	assert_side_clean(&cli[0]);
	for (lc = 1; lc <= 2; lc++) {
		RDP_ASSERT_EQ(rdp_lcore_srq_stats_get(lc, &q), 0);
		RDP_ASSERT_EQ(q.free, 0);
		RDP_ASSERT_EQ(q.leased + q.reserved, 5);
		print_srq("after the stream", lc);
	}
	rdp_ep_close(stream_ep(&cli[0]));
	rdp_ep_close(stream_ep(&srv[0]));
	stream_wait_closed(&cli[0]);
	stream_wait_closed(&srv[0]);
	assert_srq_whole(1);
	assert_srq_whole(2);
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}

/*
 * An endpoint whose peer leases keeps the credits it holds above the
 * peer's floor while it has nothing to send for less than
 * srq_give_back_us (a stream that pauses between bursts would otherwise
 * give them back and ask again each time), then gives them back: here
 * 300 ms, on the side that does not lease (lcore 2).
 */
RDP_TEST(e2e, srq_idle_peer_gives_credits_back_only_after_srq_give_back_us)
{
	enum { ATTEMPTS = 8 };
	struct stream_side *sides[2];
	struct rdp_ep_stats st;
	struct rdp_srq_stats q0, q;
	struct rdp_cfg *cfg;
	double t0 = 0, t_back;
	uint32_t held = 0;
	unsigned int i, k;

	cfg = leasing_and_not_cfg("20", "300000");
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	/*
	 * Streams the floor of 4 cannot carry: the client asks for more. What
	 * it holds when its stream ends depends on the timing (the credits of
	 * its last messages may go to the pool): the first pair that ends
	 * with more than the floor is watched.
	 */
	for (i = 0; i < ATTEMPTS && held <= 4; i++) {
		pair_on_lcores_1_and_2(i, 2000, SRQ_MAX_MSG);
		sides[0] = &srv[i];
		sides[1] = &cli[i];
		RDP_ASSERT_EQ(pump_or_dump(sides, 2, 120), 0);
		assert_side_clean(&srv[i]);
		assert_side_clean(&cli[i]);
		t0 = rdp_clock_s();
		RDP_ASSERT_EQ(rdp_lcore_srq_stats_get(1, &q0), 0);
		/* quiet for 100 ms: the credits still coming back add up, none goes */
		rdp_ep_stats_get(stream_ep(&cli[i]), &st);
		held = st.remote_credits;
		while (rdp_clock_s() < t0 + 0.1) {
			usleep(1000);
			rdp_ep_stats_get(stream_ep(&cli[i]), &st);
			RDP_ASSERT_MSG(st.remote_credits >= held, "credits %u -> %u %.0f ms after the "
				       "stream, before srq_give_back_us", held, st.remote_credits,
				       (rdp_clock_s() - t0) * 1e3);
			held = st.remote_credits;
		}
		RDP_ASSERT_EQ(rdp_lcore_srq_stats_get(1, &q), 0);
		RDP_ASSERT_EQ(q.given_back, q0.given_back);
		printf("pair %u: the client holds %u credits 100 ms after its stream (floor 4)\n",
		       i, held);
	}
	RDP_ASSERT_MSG(held > 4, "%u streams ended with no credit above the floor to give back",
		       ATTEMPTS);
	i--;
	/* then they come back, the floor stays with it */
	do {
		RDP_ASSERT_MSG(rdp_clock_s() < t0 + 3, "the client still holds %u credits after "
			       "3 s", st.remote_credits);
		usleep(1000);
		rdp_ep_stats_get(stream_ep(&cli[i]), &st);
	} while (st.remote_credits > 4);
	t_back = rdp_clock_s() - t0;
	RDP_ASSERT_EQ(st.remote_credits, 4);
	/*
	 * The client's credits drop when it posts the give-back; the server
	 * counts them when that SEND arrives, a moment later (longer under
	 * a sanitizer).
	 */
	for (;;) {
		RDP_ASSERT_EQ(rdp_lcore_srq_stats_get(1, &q), 0);
		if (q.given_back >= q0.given_back + held - 4)
			break;
		RDP_ASSERT_MSG(rdp_clock_s() < t0 + t_back + 2, "the server counted %" PRIu64
			       " credits given back 2 s after the client gave back %u",
			       q.given_back - q0.given_back, held - 4);
		usleep(1000);
	}
	printf("given back %.0f ms after the stream ended\n", t_back * 1e3);
	RDP_ASSERT_MSG(t_back > 0.2, "given back after %.0f ms, srq_give_back_us is 300 ms",
		       t_back * 1e3);
	for (k = 0; k <= i; k++) {
		rdp_ep_close(stream_ep(&cli[k]));
		rdp_ep_close(stream_ep(&srv[k]));
	}
	for (k = 0; k <= i; k++) {
		stream_wait_closed(&cli[k]);
		stream_wait_closed(&srv[k]);
	}
	assert_srq_whole(1);
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}

/*
 * An SRQ of 20 buffers holds two endpoints (floor 4 + a reserve of
 * floor(32 / 8) + 1 = 5 for its leasing peer's acks, 9 each) and lends the
 * other 2 at most: the server endpoint of a second connection is refused,
 * the client is told why (ECONNREFUSED), the log names the numbers, and
 * the first pair streams on.
 */
RDP_TEST(e2e, srq_endpoint_refused_for_want_of_floor_names_the_numbers)
{
	struct stream_side *sides[2] = { &srv[0], &cli[0] };
	struct rdp_ep_params psrv, pcli, prm = { .lcore = -1 };
	static const struct rdp_ep_ops ops = { .on_recv = stream_recv_free_all };
	struct rdp_srq_stats q;
	struct rdp_cfg *cfg;
	struct rdp_ep *ep;
	char addr[64];
	int port;

	rdp_test_eal_init("0-1");
	cfg = srq_cfg("20", "8");
	RDP_ASSERT_MSG(rdp_cfg_validate(cfg) == 0, "%s", rdp_err_msg());
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	rdp_test_log_capture();
	stream_side_init(&srv[0], "server", 1, 2, 500, SRQ_MAX_MSG, 8, false);
	stream_side_init(&cli[0], "client", 2, 1, 500, SRQ_MAX_MSG, 8, false);
	stream_params(&srv[0], &psrv);
	stream_params(&cli[0], &pcli);
	port = rdp_listen("127.0.0.1:0", &psrv);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	RDP_ASSERT(rdp_connect(addr, &pcli) != NULL);
	while (stream_ep(&cli[0]) == NULL || stream_ep(&srv[0]) == NULL)
		usleep(1000);
	/* a second pair: at most 4 credits are left, its server endpoint needs 8 */
	prm.ops = &ops;
	port = rdp_listen("127.0.0.1:0", &prm);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	ep = rdp_connect(addr, &prm);
	RDP_ASSERT(ep != NULL);
	RDP_ASSERT(rdp_ep_wait_established(ep, 5000) < 0);
	RDP_ASSERT_EQ(rdp_ep_error(ep), -ECONNREFUSED);
	/* what is free depends on what the first pair leases beyond its floors */
	RDP_ASSERT_MSG(strstr(rdp_test_log, "credits free, an endpoint needs 8 (srq_floor=4 + a "
			      "reserve of 4 for its peer's pure acks; 2 endpoints hold ") != NULL &&
		       strstr(rdp_test_log, "; 1 kept for rendezvous FINs") != NULL &&
		       strstr(rdp_test_log, "of the free kept for receives waiting to be "
			      "posted)") != NULL, "%s",
		       rdp_test_log);
	/* the client reads a whole statement, and where the rest is */
	RDP_ASSERT_MSG(strstr(rdp_test_log, "failed: peer refused: srq_size=20: ") != NULL &&
		       strstr(rdp_test_log, " credits free, an endpoint needs 8 ... (the peer's "
			      "log has the whole reason)\n") != NULL, "%s", rdp_test_log);
	RDP_ASSERT_EQ(rdp_lcore_srq_stats_get(1, &q), 0);
	RDP_ASSERT_EQ(q.refused, 1);
	RDP_ASSERT_EQ(q.members, 2);
	rdp_ep_close(ep);
	RDP_ASSERT_EQ(pump_or_dump(sides, 2, 120), 0);
	assert_side_clean(&srv[0]);
	assert_side_clean(&cli[0]);
	rdp_ep_close(stream_ep(&cli[0]));
	rdp_ep_close(stream_ep(&srv[0]));
	stream_wait_closed(&cli[0]);
	stream_wait_closed(&srv[0]);
	assert_srq_whole(1);
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}

/* The framing rules of a connection where a side leases (private/ep_frame.h). */
#include "ep_frame.h"

RDP_TEST(unit, srq_frame_want_only_to_a_leasing_receiver_and_credits_of_15_bits)
{
	struct ep_frame plain = { .chunk_size = 4096, .max_msg = 65536 };
	struct ep_frame lease = plain, peer_leases = plain;
	uint32_t v;

	lease.lease_conn = lease.leasing = true;
	peer_leases.lease_conn = true;
	/* bit 15 is a credit where nobody leases, WANT where a side does */
	RDP_ASSERT_EQ(ep_frame_credits(&plain, 0x8003), 0x8003);
	RDP_ASSERT_EQ(ep_frame_credits(&lease, IMM_WANT | 3), 3);
	RDP_ASSERT(ep_frame_check(&lease, true, IMM_FIRST | IMM_LAST | IMM_WANT | 3, 10, 3,
				  &v) == NULL);
	/* a WANT to a receiver that does not lease breaks the protocol */
	RDP_ASSERT_STR_EQ(ep_frame_check(&peer_leases, true, IMM_FIRST | IMM_LAST | IMM_WANT, 10,
					 0, &v), "WANT to a receiver that does not lease");
	/* a pure ack asks for nothing */
	RDP_ASSERT_STR_EQ(ep_frame_check(&lease, true, IMM_ACK | IMM_WANT | 1, 0, 1, &v),
			  "WANT on a pure ack");
	/* a control message (a rendezvous descriptor) may ask */
	RDP_ASSERT(ep_frame_check(&lease, true, IMM_ACK | IMM_FIRST | IMM_LAST | IMM_WANT, 32, 0,
				  &v) == NULL);
	/* 15 bits of credits: bit 15 never counts as one */
	RDP_ASSERT_STR_EQ(ep_frame_check(&lease, true, IMM_FIRST | IMM_LAST | 0x7fff, 10, 100,
					 &v), "more credits returned than used");
	return 0;
}
