/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The seed bug, reproduced on the shm driver, next to the policy that makes
 * it impossible (docs: ../seeds, CREDIT-PROTOCOL.md).
 *
 * - The legacy brpc window, refilled by acks, overflows the SQ once the
 *   ack's RECV completion is polled before the SEND completions it implies:
 *   post_send fails with ENOMEM. These tests assert that it does.
 * - rdmaplane's credit policy over the same driver and orders runs 10
 *   million messages two-way with no ENOMEM and no RNR (rnr_retry = 0, so
 *   one RNR would be fatal), each delivered once and in order.
 */
#include <errno.h>

#include "rdp_test.h"
#include "stream.h"

#define TEN_MILLION 10000000u

/* A legacy sender towards a credit-policy receiver that acks it. */
static void
legacy_setup(struct stream_cfg *a, struct stream_cfg *b, uint64_t count)
{
	stream_cfg_default(a, count);
	a->policy = STREAM_LEGACY;
	a->expect = 0;
	a->cp = (struct rdp_credit_params){ .sq_size = 16, .signal_interval = 4, .rq_size = 16,
					    .ack_reserve = 4, .ack_threshold = 4 };
	stream_cfg_default(b, 0);
	b->expect = count;
	b->cp = (struct rdp_credit_params){ .sq_size = 16, .signal_interval = 4, .rq_size = 20,
					    .ack_reserve = 4, .ack_threshold = 4 };
	/* brpc: the window is what the peer can receive, and it fits the SQ */
	a->legacy_window = b->cp.rq_size - b->cp.ack_reserve;
}

static void
assert_legacy_overflowed(const struct stream_result *res, int ret)
{
	RDP_ASSERT_MSG(ret == -EIO, "the legacy stream ended with %d, not with an error", ret);
	RDP_ASSERT_MSG(res->a.enomem > 0, "the legacy window never overflowed the SQ");
	RDP_ASSERT_EQ(res->a.post_errors, 0);
	RDP_ASSERT_EQ(res->b.rnr, 0);
	printf("legacy window: post_send ENOMEM after %" PRIu64 " messages\n",
	       res->a.first_enomem_at);
}

RDP_TEST(shm, seed_legacy_window_gets_enomem_when_recv_completions_come_first)
{
	struct stream_cfg a, b;
	struct stream_result res;
	int ret;

	legacy_setup(&a, &b, 100000);
	ret = stream_run_pair("shm:cqe_order=recv_first,send_cqe_delay=4", &a, &b, &res);
	assert_legacy_overflowed(&res, ret);
	return 0;
}

RDP_TEST(shm, seed_legacy_window_gets_enomem_under_random_order_across_processes)
{
	struct stream_cfg a, b;
	struct stream_result res;
	int ret;

	/* the stream stops at the first ENOMEM; across processes the order also
	 * depends on how the two are scheduled, so give it room to come */
	legacy_setup(&a, &b, 2000000);
	ret = stream_run_xproc("shm:cqe_order=random:7,send_cqe_delay=4", "shm", &a, &b, &res);
	assert_legacy_overflowed(&res, ret);
	return 0;
}

static void
credit_run(const char *what, const char *spec, const char *spec_b, uint64_t total)
{
	struct stream_cfg a, b;
	struct stream_result res;
	int ret;

	stream_cfg_default(&a, total / 2);
	stream_cfg_default(&b, total / 2);
	if (spec_b == NULL)
		ret = stream_run_pair(spec, &a, &b, &res);
	else
		ret = stream_run_xproc(spec, spec_b, &a, &b, &res);
	stream_result_print(what, &res);
	stream_assert_clean(&res.a, "a");
	stream_assert_clean(&res.b, "b");
	RDP_ASSERT_EQ(ret, 0);
	RDP_ASSERT_EQ(res.a.received, total / 2);
	RDP_ASSERT_EQ(res.b.received, total / 2);
	RDP_ASSERT_EQ(res.a.sent, total / 2);
	RDP_ASSERT_EQ(res.b.sent, total / 2);
}

RDP_TEST(shm, seed_credit_policy_runs_10m_messages_recv_first_without_enomem_or_rnr)
{
	credit_run("credit, recv_first", "shm:cqe_order=recv_first,send_cqe_delay=3", NULL,
		   TEN_MILLION);
	return 0;
}

RDP_TEST(shm, seed_credit_policy_runs_10m_messages_random_order_without_enomem_or_rnr)
{
	credit_run("credit, random", "shm:cqe_order=random:12345,send_cqe_delay=2", NULL,
		   TEN_MILLION);
	return 0;
}

RDP_TEST(shm, seed_credit_policy_runs_10m_messages_recv_first_across_processes)
{
	credit_run("credit, recv_first, two processes", "shm:cqe_order=recv_first,send_cqe_delay=3",
		   "shm:cqe_order=recv_first,send_cqe_delay=3", TEN_MILLION);
	return 0;
}

RDP_TEST(shm, seed_credit_policy_runs_10m_messages_random_order_across_processes)
{
	credit_run("credit, random, two processes", "shm:cqe_order=random:99,send_cqe_delay=1",
		   "shm:cqe_order=random:100", TEN_MILLION);
	return 0;
}
