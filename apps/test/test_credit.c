/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/credit decision by decision: hand-built sequences of posts and
 * completions, each checked against the verdict and counters the protocol
 * (docs/credit-protocol.md) prescribes.
 */
#include <errno.h>
#include <stdlib.h>

#include "legacy_window.h"
#include "rdp_credit.h"
#include "rdp_test.h"

static char why[256];

static struct rdp_credit_params
params(uint32_t s, uint32_t t_sig, uint32_t r, uint32_t a_rq, uint32_t t_ack)
{
	return (struct rdp_credit_params){
		.sq_size = s, .signal_interval = t_sig, .rq_size = r,
		.ack_reserve = a_rq, .ack_threshold = t_ack,
	};
}

static int
check(struct rdp_credit_params p)
{
	why[0] = '\0';
	return rdp_credit_params_check(&p, why, sizeof(why));
}

RDP_TEST(unit, credit_params_reject_signal_interval_whose_double_wraps)
{
	/* 2 * 2^31 wraps to 0 in 32 bits: the rule S >= 2*T_sig must still hold */
	RDP_ASSERT_EQ(check(params(8, UINT32_C(0x80000000), 8, 4, 1)), -EINVAL);
	RDP_ASSERT_STR_EQ(why, "sq_size=8, signal_interval=2147483648: need "
			  "sq_size >= 2*signal_interval");
	RDP_ASSERT_EQ(check(params(8, UINT32_C(0x80000001), 8, 4, 1)), -EINVAL);
	return 0;
}

RDP_TEST(unit, credit_params_reject_cq_budget_that_wraps)
{
	struct rdp_credit_params p = params(UINT32_C(0xfffffff0), 2, 32, 16, 1);

	/* every accepted configuration has a CQ budget of exactly S + R */
	RDP_ASSERT_EQ(check(p), -EINVAL);
	RDP_ASSERT_STR_EQ(why, "sq_size=4294967280, rq_size=32: the CQ budget "
			  "sq_size+rq_size must be <= 4294967295");
	p.sq_size = UINT32_MAX - 32;
	RDP_ASSERT_EQ(check(p), 0);
	RDP_ASSERT_EQ(rdp_credit_cq_budget(&p), UINT32_MAX);
	return 0;
}

RDP_TEST(unit, credit_params_accept_the_smallest_configuration)
{
	struct rdp_credit_params p = params(4, 2, 4, 2, 1);

	RDP_ASSERT_EQ(check(p), 0);
	RDP_ASSERT_STR_EQ(why, "");
	RDP_ASSERT_EQ(rdp_credit_cq_budget(&p), 8);
	return 0;
}

RDP_TEST(unit, credit_params_name_each_broken_rule)
{
	RDP_ASSERT_EQ(check(params(4, 1, 4, 2, 1)), -EINVAL);
	RDP_ASSERT_STR_EQ(why, "signal_interval=1: must be >= 2 "
			  "(an unsignaled ack needs a run of at least one)");
	RDP_ASSERT_EQ(check(params(7, 4, 4, 2, 1)), -EINVAL);
	RDP_ASSERT_STR_EQ(why, "sq_size=7, signal_interval=4: need sq_size >= 2*signal_interval");
	RDP_ASSERT_EQ(check(params(8, 4, 4, 4, 1)), -EINVAL);
	RDP_ASSERT_STR_EQ(why, "rq_size=4, ack_reserve=4: need rq_size > ack_reserve");
	RDP_ASSERT_EQ(check(params(8, 4, 70000, 2, 1)), -EINVAL);
	RDP_ASSERT_STR_EQ(why, "rq_size=70000, ack_reserve=2: rq_size-ack_reserve must be <= 65535");
	RDP_ASSERT_EQ(check(params(8, 4, 4, 2, 0)), -EINVAL);
	RDP_ASSERT_STR_EQ(why, "ack_threshold=0: need 1 <= ack_threshold <= rq_size-ack_reserve (2)");
	RDP_ASSERT_EQ(check(params(8, 4, 4, 2, 3)), -EINVAL);
	RDP_ASSERT_STR_EQ(why, "ack_threshold=3: need 1 <= ack_threshold <= rq_size-ack_reserve (2)");
	RDP_ASSERT_EQ(check(params(8, 4, 8, 2, 1)), -EINVAL);
	RDP_ASSERT_STR_EQ(why, "ack_reserve=2, rq_size=8, ack_threshold=1: need ack_reserve >= "
			  "ceil((rq_size-ack_reserve)/ack_threshold) = 6");
	/* the boundary of each rule is accepted */
	RDP_ASSERT_EQ(check(params(8, 4, 8, 2, 3)), 0);
	RDP_ASSERT_EQ(check(params(8, 4, 65535 + 2, 2, 65535)), 0);
	return 0;
}

RDP_TEST(unit, credit_params_message_is_truncated_not_overrun)
{
	char small[8];

	memset(small, 'x', sizeof(small));
	RDP_ASSERT_EQ(rdp_credit_params_check(&(struct rdp_credit_params){ 4, 1, 4, 2, 1 },
					      small, sizeof(small)), -EINVAL);
	RDP_ASSERT_STR_EQ(small, "signal_");
	return 0;
}

RDP_TEST(unit, credit_init_names_the_side_and_checks_both_reserves)
{
	struct rdp_credit_params ok = params(4, 2, 4, 2, 1);
	struct rdp_credit_params bad = params(4, 1, 4, 2, 1);
	/* C = 3 returned 3 at a time: one pure ack in flight, A_rq = 1 suffices */
	struct rdp_credit_params lean = params(4, 2, 4, 1, 3);
	/* C = 3 returned 1 at a time: three pure acks in flight */
	struct rdp_credit_params chatty = params(4, 2, 6, 3, 1);
	struct rdp_credit c;

	RDP_ASSERT_EQ(rdp_credit_init(&c, &bad, &ok, why, sizeof(why)), -EINVAL);
	RDP_ASSERT_STR_EQ(why, "local signal_interval=1: must be >= 2 "
			  "(an unsignaled ack needs a run of at least one)");
	RDP_ASSERT_EQ(rdp_credit_init(&c, &ok, &bad, why, sizeof(why)), -EINVAL);
	RDP_ASSERT_STR_EQ(why, "peer signal_interval=1: must be >= 2 "
			  "(an unsignaled ack needs a run of at least one)");
	RDP_ASSERT_EQ(rdp_credit_init(&c, &lean, &chatty, why, sizeof(why)), -EINVAL);
	RDP_ASSERT_STR_EQ(why, "local ack_reserve=1 cannot hold the 3 pure acks the peer may "
			  "have in flight (ceil((rq_size=6 - ack_reserve=3) / ack_threshold=1))");
	RDP_ASSERT_EQ(rdp_credit_init(&c, &chatty, &lean, why, sizeof(why)), -EINVAL);
	RDP_ASSERT_STR_EQ(why, "peer ack_reserve=1 cannot hold the 3 pure acks the local may "
			  "have in flight (ceil((rq_size=6 - ack_reserve=3) / ack_threshold=1))");

	memset(&c, 0xa5, sizeof(c));
	RDP_ASSERT_EQ(rdp_credit_init(&c, &chatty, &chatty, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(c.sq_pi, 0);
	RDP_ASSERT_EQ(c.sq_ci, 0);
	RDP_ASSERT_EQ(c.unsig_run, 0);
	RDP_ASSERT_EQ(c.owed, 0);
	RDP_ASSERT_EQ(c.stalled, 0);
	RDP_ASSERT_EQ(c.rc, 3);		/* R_peer - A_rq_peer */
	RDP_ASSERT_EQ(c.sq_size, 4);
	RDP_ASSERT_EQ(c.signal_interval, 2);
	RDP_ASSERT_EQ(c.ack_threshold, 1);
	RDP_ASSERT_EQ(c.stats.data_posted + c.stats.acks_posted + c.stats.reclaims_posted +
		      c.stats.signaled_posted + c.stats.credits_returned +
		      c.stats.credits_granted + c.stats.sq_stalls + c.stats.remote_stalls, 0);
	return 0;
}

/* An endpoint with S slots, interval T_sig, and plenty of remote credit. */
static void
endpoint(struct rdp_credit *c, uint32_t s, uint32_t t_sig, uint32_t t_ack)
{
	struct rdp_credit_params local = params(s, t_sig, 1024, 512, t_ack);

	RDP_ASSERT_MSG(rdp_credit_init(c, &local, &local, why, sizeof(why)) == 0, "%s", why);
}

/* Post a data WR the verdict allows; returns whether it was signaled. */
static bool
post_data(struct rdp_credit *c)
{
	enum rdp_credit_verdict v = rdp_credit_data_check(c);
	uint32_t piggyback;

	RDP_ASSERT_MSG(v == RDP_CREDIT_GO_SIGNALED || v == RDP_CREDIT_GO_UNSIGNALED,
		       "data verdict %d", v);
	rdp_credit_data_posted(c, v == RDP_CREDIT_GO_SIGNALED, &piggyback);
	return v == RDP_CREDIT_GO_SIGNALED;
}

/* Credits set aside for FINs: data spends only the credits beyond them. */
RDP_TEST(unit, credit_may_send_leaves_the_kept_credits)
{
	struct rdp_credit c;

	endpoint(&c, 64, 4, 1);
	c.rc = 5;
	/* nothing kept: any credit */
	RDP_ASSERT(rdp_credit_may_send(&c, 0, 0));
	RDP_ASSERT(rdp_credit_may_send(&c, 4, 0));
	RDP_ASSERT(!rdp_credit_may_send(&c, 5, 0));
	RDP_ASSERT(!rdp_credit_may_send(&c, 9, 0));	/* more spent than held */
	/* two kept: three to spend */
	RDP_ASSERT(rdp_credit_may_send(&c, 0, 2));
	RDP_ASSERT(rdp_credit_may_send(&c, 2, 2));
	RDP_ASSERT(!rdp_credit_may_send(&c, 3, 2));
	RDP_ASSERT(!rdp_credit_may_send(&c, 0, 5));
	RDP_ASSERT(!rdp_credit_may_send(&c, 5, 1));
	return 0;
}

RDP_TEST(unit, credit_data_signals_every_t_sig_th_wr)
{
	struct rdp_credit c;
	unsigned int i;

	endpoint(&c, 64, 4, 1);
	for (i = 1; i <= 12; i++) {
		RDP_ASSERT_EQ(post_data(&c), i % 4 == 0);
		RDP_ASSERT_EQ(c.unsig_run, i % 4);
		/* complete every signaled WR at once: only T_sig decides */
		if (i % 4 == 0)
			RDP_ASSERT_EQ(rdp_credit_send_completed(&c, c.sq_pi - 1), 4);
	}
	RDP_ASSERT_EQ(c.stats.data_posted, 12);
	RDP_ASSERT_EQ(c.stats.signaled_posted, 3);
	return 0;
}

RDP_TEST(unit, credit_data_signals_the_wr_that_leaves_only_the_reclaim_slot)
{
	struct rdp_credit c;

	endpoint(&c, 8, 4, 1);
	/* u u u S u u S: the 7th WR takes slot S-1 and is signaled early */
	RDP_ASSERT(!post_data(&c));
	RDP_ASSERT(!post_data(&c));
	RDP_ASSERT(!post_data(&c));
	RDP_ASSERT(post_data(&c));
	RDP_ASSERT(!post_data(&c));
	RDP_ASSERT(!post_data(&c));
	RDP_ASSERT_EQ(c.unsig_run, 2);
	RDP_ASSERT(post_data(&c));
	RDP_ASSERT_EQ(rdp_credit_sq_inflight(&c), 7);
	/* data never takes the last slot */
	RDP_ASSERT_EQ(rdp_credit_data_check(&c), RDP_CREDIT_WAIT_SQ);
	RDP_ASSERT_EQ(c.stats.sq_stalls, 1);
	RDP_ASSERT_EQ(rdp_credit_send_completed(&c, 3), 4);
	RDP_ASSERT_EQ(rdp_credit_data_check(&c), RDP_CREDIT_GO_UNSIGNALED);
	return 0;
}

RDP_TEST(unit, credit_data_needs_remote_credit_which_only_imm_data_returns)
{
	struct rdp_credit_params p = params(16, 2, 4, 2, 1);
	struct rdp_credit c;
	uint32_t piggyback;

	RDP_ASSERT_EQ(rdp_credit_init(&c, &p, &p, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(c.rc, 2);
	post_data(&c);
	post_data(&c);
	RDP_ASSERT_EQ(rdp_credit_data_check(&c), RDP_CREDIT_WAIT_REMOTE);
	RDP_ASSERT_EQ(rdp_credit_data_check(&c), RDP_CREDIT_WAIT_REMOTE);
	RDP_ASSERT_EQ(c.stats.remote_stalls, 1);
	/* a send completion frees SQ slots but returns no remote credit */
	RDP_ASSERT_EQ(rdp_credit_send_completed(&c, 1), 2);
	RDP_ASSERT_EQ(rdp_credit_data_check(&c), RDP_CREDIT_WAIT_REMOTE);
	rdp_credit_granted(&c, 1);
	RDP_ASSERT_EQ(c.rc, 1);
	RDP_ASSERT_EQ(c.stats.credits_granted, 1);
	RDP_ASSERT_EQ(rdp_credit_data_check(&c), RDP_CREDIT_GO_UNSIGNALED);
	rdp_credit_data_posted(&c, false, &piggyback);
	RDP_ASSERT_EQ(rdp_credit_data_check(&c), RDP_CREDIT_WAIT_REMOTE);
	RDP_ASSERT_EQ(c.stats.remote_stalls, 2);
	return 0;
}

RDP_TEST(unit, credit_remote_wait_is_reported_before_sq_wait)
{
	struct rdp_credit_params p = params(4, 2, 4, 2, 2);
	struct rdp_credit_params peer = params(4, 2, 4, 1, 3);
	struct rdp_credit c;

	RDP_ASSERT_EQ(rdp_credit_init(&c, &p, &peer, why, sizeof(why)), 0);
	post_data(&c);
	post_data(&c);
	post_data(&c);
	/* SQ at S-1 and rc == 0: the remote wait is the one that needs the peer */
	RDP_ASSERT_EQ(rdp_credit_sq_inflight(&c), 3);
	RDP_ASSERT_EQ(c.rc, 0);
	RDP_ASSERT_EQ(rdp_credit_data_check(&c), RDP_CREDIT_WAIT_REMOTE);
	rdp_credit_granted(&c, 2);
	RDP_ASSERT_EQ(rdp_credit_data_check(&c), RDP_CREDIT_WAIT_SQ);
	RDP_ASSERT_EQ(c.stats.remote_stalls, 1);
	RDP_ASSERT_EQ(c.stats.sq_stalls, 1);
	return 0;
}

RDP_TEST(unit, credit_piggyback_returns_everything_owed)
{
	struct rdp_credit c;
	uint32_t piggyback = 99;

	endpoint(&c, 16, 4, 3);
	rdp_credit_data_posted(&c, false, &piggyback);
	RDP_ASSERT_EQ(piggyback, 0);
	rdp_credit_recv_reposted(&c, 2);
	rdp_credit_recv_reposted(&c, 3);
	RDP_ASSERT_EQ(c.owed, 5);
	rdp_credit_data_posted(&c, false, &piggyback);
	RDP_ASSERT_EQ(piggyback, 5);
	RDP_ASSERT_EQ(c.owed, 0);
	RDP_ASSERT_EQ(c.stats.credits_returned, 5);
	RDP_ASSERT_EQ(rdp_credit_ack_check(&c), RDP_CREDIT_NONE);
	return 0;
}

RDP_TEST(unit, credit_pure_ack_waits_for_t_ack_and_is_never_signaled)
{
	struct rdp_credit c;
	uint32_t credits;
	uint64_t seq;

	endpoint(&c, 16, 4, 3);
	rdp_credit_recv_reposted(&c, 2);
	RDP_ASSERT_EQ(rdp_credit_ack_check(&c), RDP_CREDIT_NONE);
	rdp_credit_recv_reposted(&c, 1);
	RDP_ASSERT_EQ(rdp_credit_ack_check(&c), RDP_CREDIT_GO_UNSIGNALED);
	seq = rdp_credit_ack_posted(&c, &credits);
	RDP_ASSERT_EQ(seq, 0);
	RDP_ASSERT_EQ(credits, 3);
	RDP_ASSERT_EQ(c.owed, 0);
	RDP_ASSERT_EQ(c.unsig_run, 1);
	RDP_ASSERT_EQ(c.stats.acks_posted, 1);
	RDP_ASSERT_EQ(c.stats.signaled_posted, 0);
	RDP_ASSERT_EQ(c.stats.credits_returned, 3);
	RDP_ASSERT_EQ(rdp_credit_sq_inflight(&c), 1);
	/* a pure ack uses no remote credit */
	RDP_ASSERT_EQ(c.rc, 512);
	return 0;
}

RDP_TEST(unit, credit_ack_that_would_end_a_run_asks_for_a_reclaim_first)
{
	struct rdp_credit c;
	uint32_t credits;

	endpoint(&c, 8, 3, 1);
	rdp_credit_recv_reposted(&c, 1);
	RDP_ASSERT_EQ(rdp_credit_ack_check(&c), RDP_CREDIT_GO_UNSIGNALED);
	rdp_credit_ack_posted(&c, &credits);
	rdp_credit_recv_reposted(&c, 1);
	RDP_ASSERT_EQ(rdp_credit_ack_check(&c), RDP_CREDIT_GO_UNSIGNALED);
	rdp_credit_ack_posted(&c, &credits);
	rdp_credit_recv_reposted(&c, 1);
	/* a third unsignaled WR would make a run of T_sig */
	RDP_ASSERT_EQ(rdp_credit_ack_check(&c), RDP_CREDIT_RECLAIM_FIRST);
	RDP_ASSERT_EQ(rdp_credit_ack_check(&c), RDP_CREDIT_RECLAIM_FIRST);
	RDP_ASSERT_EQ(rdp_credit_reclaim_posted(&c), 2);
	RDP_ASSERT_EQ(c.unsig_run, 0);
	RDP_ASSERT_EQ(c.owed, 1);
	RDP_ASSERT_EQ(c.stats.reclaims_posted, 1);
	RDP_ASSERT_EQ(c.stats.signaled_posted, 1);
	RDP_ASSERT_EQ(rdp_credit_ack_check(&c), RDP_CREDIT_GO_UNSIGNALED);
	RDP_ASSERT_EQ(rdp_credit_ack_posted(&c, &credits), 3);
	/* the reclaim's completion frees it and both acks before it */
	RDP_ASSERT_EQ(rdp_credit_send_completed(&c, 2), 3);
	RDP_ASSERT_EQ(rdp_credit_sq_inflight(&c), 1);
	RDP_ASSERT_EQ(c.stats.sq_stalls, 0);
	return 0;
}

RDP_TEST(unit, credit_reclaim_may_take_the_slot_data_and_acks_leave)
{
	struct rdp_credit c;
	uint32_t credits;

	endpoint(&c, 4, 2, 1);
	RDP_ASSERT(!post_data(&c));
	RDP_ASSERT(post_data(&c));
	rdp_credit_recv_reposted(&c, 1);
	RDP_ASSERT_EQ(rdp_credit_ack_check(&c), RDP_CREDIT_GO_UNSIGNALED);
	rdp_credit_ack_posted(&c, &credits);
	RDP_ASSERT_EQ(rdp_credit_sq_inflight(&c), 3);	/* S - 1 */
	RDP_ASSERT_EQ(rdp_credit_data_check(&c), RDP_CREDIT_WAIT_SQ);
	rdp_credit_recv_reposted(&c, 1);
	RDP_ASSERT_EQ(rdp_credit_ack_check(&c), RDP_CREDIT_RECLAIM_FIRST);
	rdp_credit_reclaim_posted(&c);
	RDP_ASSERT_EQ(rdp_credit_sq_inflight(&c), 4);	/* S: full, never more */
	RDP_ASSERT_EQ(rdp_credit_ack_check(&c), RDP_CREDIT_WAIT_SQ);
	RDP_ASSERT_EQ(rdp_credit_data_check(&c), RDP_CREDIT_WAIT_SQ);
	/* one episode before the reclaim, one after, shared by both askers */
	RDP_ASSERT_EQ(c.stats.sq_stalls, 2);
	RDP_ASSERT_EQ(rdp_credit_send_completed(&c, 3), 4);
	RDP_ASSERT_EQ(rdp_credit_ack_check(&c), RDP_CREDIT_GO_UNSIGNALED);
	return 0;
}

RDP_TEST(unit, credit_ack_waits_for_sq_only_behind_a_pending_signaled_wr)
{
	struct rdp_credit c;
	uint32_t credits;

	endpoint(&c, 8, 4, 1);
	RDP_ASSERT(!post_data(&c));
	RDP_ASSERT(!post_data(&c));
	RDP_ASSERT(!post_data(&c));
	RDP_ASSERT(post_data(&c));	/* seq 3: T_sig */
	RDP_ASSERT(!post_data(&c));
	RDP_ASSERT(!post_data(&c));
	RDP_ASSERT(post_data(&c));	/* seq 6: leaves only the reclaim slot */
	rdp_credit_recv_reposted(&c, 1);
	/* SQ at S-1 with a short run: wait, seq 3 and 6 will complete */
	RDP_ASSERT_EQ(rdp_credit_ack_check(&c), RDP_CREDIT_WAIT_SQ);
	RDP_ASSERT_EQ(c.stats.sq_stalls, 1);
	RDP_ASSERT_EQ(rdp_credit_send_completed(&c, 3), 4);
	RDP_ASSERT_EQ(rdp_credit_ack_check(&c), RDP_CREDIT_GO_UNSIGNALED);
	rdp_credit_ack_posted(&c, &credits);
	RDP_ASSERT_EQ(rdp_credit_sq_inflight(&c), 4);
	return 0;
}

RDP_TEST(unit, credit_stall_counters_count_episodes_not_retries)
{
	struct rdp_credit_params p = params(8, 4, 3, 1, 2);
	struct rdp_credit c;
	int i;

	RDP_ASSERT_EQ(rdp_credit_init(&c, &p, &p, why, sizeof(why)), 0);
	post_data(&c);
	post_data(&c);
	for (i = 0; i < 100; i++)
		RDP_ASSERT_EQ(rdp_credit_data_check(&c), RDP_CREDIT_WAIT_REMOTE);
	RDP_ASSERT_EQ(c.stats.remote_stalls, 1);
	rdp_credit_granted(&c, 1);
	post_data(&c);
	RDP_ASSERT_EQ(rdp_credit_data_check(&c), RDP_CREDIT_WAIT_REMOTE);
	RDP_ASSERT_EQ(c.stats.remote_stalls, 2);
	RDP_ASSERT_EQ(c.stats.sq_stalls, 0);
	return 0;
}

RDP_TEST(unit, credit_seq_expand_recovers_sequences_across_the_40_bit_wrap)
{
	const uint64_t wrap = UINT64_C(1) << RDP_CREDIT_SEQ_BITS;
	struct rdp_credit c;
	uint64_t seq;

	endpoint(&c, 64, 4, 1);
	/* fast-forward: pretend 2^40 + 5 WRs were posted and 2^40 - 3 completed */
	c.sq_pi = wrap + 5;
	c.sq_ci = wrap - 3;
	for (seq = wrap - 3; seq < wrap + 5; seq++)
		RDP_ASSERT_EQ(rdp_credit_seq_expand(&c, seq & RDP_CREDIT_SEQ_MASK), seq);
	/* the same low bits a whole wrap earlier or later are not confused */
	RDP_ASSERT_EQ(rdp_credit_seq_expand(&c, (wrap - 1) & RDP_CREDIT_SEQ_MASK), wrap - 1);
	RDP_ASSERT_EQ(rdp_credit_seq_expand(&c, 0), wrap);
	c.sq_pi = 3 * wrap + 1;
	RDP_ASSERT_EQ(rdp_credit_seq_expand(&c, RDP_CREDIT_SEQ_MASK), 3 * wrap - 1);
	RDP_ASSERT_EQ(rdp_credit_seq_expand(&c, 0), 3 * wrap);
	/* a completion past the wrap frees across it */
	c.sq_pi = wrap + 5;
	RDP_ASSERT_EQ(rdp_credit_send_completed(&c, rdp_credit_seq_expand(&c, 2)), 6);
	RDP_ASSERT_EQ(c.sq_ci, wrap + 3);
	return 0;
}

RDP_TEST(unit, credit_older_send_completion_after_a_newer_frees_nothing)
{
	struct rdp_credit c;
	int i;

	endpoint(&c, 16, 4, 1);
	for (i = 0; i < 8; i++)
		post_data(&c);
	RDP_ASSERT_EQ(c.stats.signaled_posted, 2);	/* seq 3 and seq 7 */
	RDP_ASSERT_EQ(rdp_credit_send_completed(&c, 7), 8);
	RDP_ASSERT_EQ(c.sq_ci, 8);
	RDP_ASSERT_EQ(rdp_credit_send_completed(&c, 3), 0);
	RDP_ASSERT_EQ(c.sq_ci, 8);
	RDP_ASSERT_EQ(rdp_credit_sq_inflight(&c), 0);
	/* and in order it frees each run once */
	for (i = 0; i < 8; i++)
		post_data(&c);
	RDP_ASSERT_EQ(rdp_credit_send_completed(&c, 11), 4);
	RDP_ASSERT_EQ(rdp_credit_send_completed(&c, 15), 4);
	RDP_ASSERT_EQ(rdp_credit_send_completed(&c, 15), 0);
	return 0;
}

/*
 * The seed thread (brpc, "window=3, sq_current=98"): the sender fills its SQ,
 * then polls the peer's ack for three messages before the SEND completions
 * those acks imply. The legacy window says go into a full SQ; ours waits for
 * the SQ credit that only a polled signaled completion returns.
 */
RDP_TEST(unit, credit_seed_thread_acks_before_send_completions_stall_instead_of_overflow)
{
	/* 98 data slots plus the reclaim slot; T_sig = 25 as brpc's window/4 */
	struct rdp_credit_params local = params(99, 25, 106, 8, 14);
	struct rdp_credit_params peer = params(99, 25, 106, 8, 14);
	const uint32_t data_slots = 98;
	struct legacy_window legacy;
	uint32_t legacy_sq = 0, i, piggyback;
	struct rdp_credit c;

	RDP_ASSERT_MSG(rdp_credit_init(&c, &local, &peer, why, sizeof(why)) == 0, "%s", why);
	RDP_ASSERT_EQ(c.rc, 98);
	legacy_window_init(&legacy, data_slots, 25);
	for (i = 0; i < data_slots; i++) {
		enum rdp_credit_verdict v = rdp_credit_data_check(&c);

		RDP_ASSERT(v == RDP_CREDIT_GO_SIGNALED || v == RDP_CREDIT_GO_UNSIGNALED);
		rdp_credit_data_posted(&c, v == RDP_CREDIT_GO_SIGNALED, &piggyback);
		RDP_ASSERT(legacy_window_can_send(&legacy));
		legacy_window_posted(&legacy);
		legacy_sq++;
	}
	RDP_ASSERT_EQ(rdp_credit_sq_inflight(&c), 98);	/* sq_current=98 */
	RDP_ASSERT_EQ(legacy_sq, data_slots);
	RDP_ASSERT_EQ(rdp_credit_data_check(&c), RDP_CREDIT_WAIT_REMOTE);

	/* the RECV completion with imm = 3 is polled first */
	rdp_credit_granted(&c, 3);
	legacy_window_acked(&legacy, 3);
	RDP_ASSERT_EQ(legacy.window, 3);			/* window=3 */
	RDP_ASSERT(legacy_window_can_send(&legacy));		/* ... */
	RDP_ASSERT_EQ(legacy_sq, data_slots);			/* ENOMEM */
	RDP_ASSERT_EQ(rdp_credit_data_check(&c), RDP_CREDIT_WAIT_SQ);
	RDP_ASSERT_EQ(c.stats.sq_stalls, 1);
	RDP_ASSERT_EQ(rdp_credit_data_check(&c), RDP_CREDIT_WAIT_SQ);

	/* then the SEND completion of the first signaled WR (seq 24) */
	RDP_ASSERT_EQ(rdp_credit_send_completed(&c, 24), 25);
	for (i = 0; i < 3; i++) {
		enum rdp_credit_verdict v = rdp_credit_data_check(&c);

		RDP_ASSERT(v == RDP_CREDIT_GO_SIGNALED || v == RDP_CREDIT_GO_UNSIGNALED);
		rdp_credit_data_posted(&c, v == RDP_CREDIT_GO_SIGNALED, &piggyback);
	}
	RDP_ASSERT_EQ(rdp_credit_data_check(&c), RDP_CREDIT_WAIT_REMOTE);
	RDP_ASSERT(rdp_credit_sq_inflight(&c) <= 98);
	return 0;
}

/*
 * A side that only receives returns credits with pure acks forever. The
 * acks are unsignaled, so without reclaims nothing would ever free its SQ.
 */
RDP_TEST(unit, credit_receive_only_side_acks_forever_through_reclaims)
{
	const uint32_t n_acks = 100000;
	uint64_t outstanding_reclaim = UINT64_MAX;
	struct rdp_credit c;
	uint32_t acked = 0, credits;

	endpoint(&c, 8, 4, 1);
	while (acked < n_acks) {
		enum rdp_credit_verdict v;

		rdp_credit_recv_reposted(&c, 1);
		for (;;) {
			v = rdp_credit_ack_check(&c);
			if (v == RDP_CREDIT_RECLAIM_FIRST) {
				outstanding_reclaim = rdp_credit_reclaim_posted(&c);
				continue;
			}
			if (v != RDP_CREDIT_WAIT_SQ)
				break;
			/* lazy poller: reap only when stuck; something must be due */
			RDP_ASSERT(outstanding_reclaim != UINT64_MAX);
			RDP_ASSERT(rdp_credit_send_completed(&c, outstanding_reclaim) > 0);
			outstanding_reclaim = UINT64_MAX;
		}
		RDP_ASSERT_EQ(v, RDP_CREDIT_GO_UNSIGNALED);
		rdp_credit_ack_posted(&c, &credits);
		RDP_ASSERT_EQ(credits, 1);
		RDP_ASSERT(rdp_credit_sq_inflight(&c) <= 8);
		acked++;
	}
	RDP_ASSERT_EQ(c.stats.acks_posted, n_acks);
	/* one reclaim per T_sig - 1 acks */
	RDP_ASSERT_EQ(c.stats.reclaims_posted, (n_acks - 1) / 3);
	RDP_ASSERT_EQ(c.stats.signaled_posted, c.stats.reclaims_posted);
	RDP_ASSERT_EQ(c.stats.data_posted, 0);
	return 0;
}

/*
 * Every state the SQ accounting can reach, for several (S, T_sig): which of
 * the outstanding WRs are signaled with their completion still due, the
 * unsignaled run, and whether remote credit and owed credits are there
 * (free inputs: they change at any time). From each state: post what any
 * verdict allows, or poll any due completion, in any order.
 *
 * Checked in every state: the SQ holds at most S WRs; the run stays below
 * T_sig; when nothing is due, every outstanding WR is in the unsignaled
 * tail; and a WAIT_SQ verdict always has a due completion behind it, so the
 * SQ can never wedge.
 */
struct sq_state {
	uint32_t inflight;
	uint32_t run;
	uint32_t due;	/* bit j: the WR j-th oldest is signaled, completion due */
};

static void
sq_state_load(struct rdp_credit *c, const struct sq_state *st, bool rc, bool owed)
{
	c->sq_pi = 1000;
	c->sq_ci = c->sq_pi - st->inflight;
	c->unsig_run = st->run;
	c->rc = rc;
	c->owed = owed ? c->ack_threshold : 0;
	c->stalled = 0;
}

static void
explore_sq(uint32_t s, uint32_t t_sig)
{
	const size_t n_states = (size_t)(s + 1) * t_sig << s;
	uint8_t *seen = calloc(n_states, 1);
	struct sq_state *stack = calloc(n_states, sizeof(*stack));
	size_t top = 0, reached = 0;
	struct rdp_credit c;
	uint32_t credits, piggyback;

	RDP_ASSERT(seen != NULL && stack != NULL);
	endpoint(&c, s, t_sig, 1);
	stack[top++] = (struct sq_state){ 0, 0, 0 };
	while (top > 0) {
		struct sq_state st = stack[--top], next[64];
		size_t key = ((size_t)st.inflight * t_sig + st.run) << s | st.due;
		unsigned int n_next = 0, in, j;

		if (seen[key])
			continue;
		seen[key] = 1;
		reached++;
		RDP_ASSERT(st.inflight <= s);
		RDP_ASSERT(st.run < t_sig);
		RDP_ASSERT_MSG(st.due != 0 || st.inflight <= st.run,
			       "S=%u T_sig=%u: %u WRs outstanding, none will complete", s,
			       t_sig, st.inflight);
		for (in = 0; in < 4; in++) {
			bool rc = in & 1, owed = in & 2;
			enum rdp_credit_verdict v;

			sq_state_load(&c, &st, rc, owed);
			v = rdp_credit_data_check(&c);
			RDP_ASSERT_MSG(v != RDP_CREDIT_WAIT_SQ || st.due != 0,
				       "S=%u T_sig=%u inflight=%u run=%u: data waits for nothing",
				       s, t_sig, st.inflight, st.run);
			if (v == RDP_CREDIT_GO_SIGNALED || v == RDP_CREDIT_GO_UNSIGNALED) {
				rdp_credit_data_posted(&c, v == RDP_CREDIT_GO_SIGNALED, &piggyback);
				next[n_next++] = (struct sq_state){ st.inflight + 1, c.unsig_run,
					st.due | (v == RDP_CREDIT_GO_SIGNALED) << st.inflight };
			}
			sq_state_load(&c, &st, rc, owed);
			v = rdp_credit_ack_check(&c);
			RDP_ASSERT_MSG(v != RDP_CREDIT_WAIT_SQ || st.due != 0,
				       "S=%u T_sig=%u inflight=%u run=%u: ack waits for nothing",
				       s, t_sig, st.inflight, st.run);
			RDP_ASSERT(owed || v == RDP_CREDIT_NONE);
			if (v == RDP_CREDIT_GO_UNSIGNALED) {
				rdp_credit_ack_posted(&c, &credits);
				next[n_next++] = (struct sq_state){ st.inflight + 1, c.unsig_run,
								    st.due };
			} else if (v == RDP_CREDIT_RECLAIM_FIRST) {
				rdp_credit_reclaim_posted(&c);
				next[n_next++] = (struct sq_state){ st.inflight + 1, 0,
								    st.due | 1u << st.inflight };
			}
		}
		for (j = 0; j < st.inflight; j++) {
			if (!(st.due & 1u << j))
				continue;
			/* older due completions arrive later and free nothing */
			sq_state_load(&c, &st, false, false);
			RDP_ASSERT_EQ(rdp_credit_send_completed(&c, c.sq_ci + j), j + 1);
			next[n_next++] = (struct sq_state){ st.inflight - j - 1, st.run,
							    st.due >> (j + 1) };
		}
		RDP_ASSERT(n_next <= RTE_DIM(next));
		for (j = 0; j < n_next; j++) {
			RDP_ASSERT(top < n_states);
			stack[top++] = next[j];
		}
	}
	printf("S=%u T_sig=%u: %zu SQ states reached\n", s, t_sig, reached);
	RDP_ASSERT(reached >= s);
	free(seen);
	free(stack);
}

RDP_TEST(unit, credit_sq_cannot_wedge_in_any_reachable_state)
{
	static const uint32_t cfg[][2] = {
		{ 4, 2 }, { 5, 2 }, { 6, 3 }, { 7, 3 }, { 8, 2 }, { 8, 4 }, { 9, 4 },
		{ 10, 5 }, { 12, 3 }, { 12, 6 }, { 16, 8 },
	};
	unsigned int i;

	for (i = 0; i < RTE_DIM(cfg); i++)
		explore_sq(cfg[i][0], cfg[i][1]);
	return 0;
}

RDP_TEST(unit, credit_closing_flush_is_due_only_for_uncovered_unsignaled_wrs)
{
	struct rdp_credit c;
	uint64_t seq;

	endpoint(&c, 64, 4, 1);
	RDP_ASSERT(rdp_credit_sq_idle(&c));
	RDP_ASSERT(!rdp_credit_flush_due(&c));
	/* three unsignaled WRs: nothing would ever make their success visible */
	RDP_ASSERT(!post_data(&c));
	RDP_ASSERT(!post_data(&c));
	RDP_ASSERT(!post_data(&c));
	RDP_ASSERT(!rdp_credit_sq_idle(&c));
	RDP_ASSERT(rdp_credit_flush_due(&c));
	/* the reclaim covers them: once posted, nothing more is due */
	seq = rdp_credit_reclaim_posted(&c);
	RDP_ASSERT(!rdp_credit_flush_due(&c));
	RDP_ASSERT(!rdp_credit_sq_idle(&c));
	RDP_ASSERT_EQ(rdp_credit_send_completed(&c, seq), 4);
	RDP_ASSERT(rdp_credit_sq_idle(&c));
	/* an ack is due from T_ack on */
	RDP_ASSERT(!rdp_credit_ack_due(&c));
	rdp_credit_recv_reposted(&c, 1);
	RDP_ASSERT(rdp_credit_ack_due(&c));
	return 0;
}

RDP_TEST(unit, credit_returnable_counts_data_wrs_no_credit_answered_yet)
{
	struct rdp_credit c;

	/* R = 1024, A_rq = 512: the peer starts with nothing to return */
	endpoint(&c, 64, 4, 1);
	RDP_ASSERT_EQ(rdp_credit_returnable(&c, 0, false), 0);
	post_data(&c);
	post_data(&c);
	post_data(&c);
	RDP_ASSERT_EQ(rdp_credit_returnable(&c, 0, false), 3);
	rdp_credit_granted(&c, 2);
	RDP_ASSERT_EQ(rdp_credit_returnable(&c, 0, false), 1);
	rdp_credit_granted(&c, 1);
	RDP_ASSERT_EQ(rdp_credit_returnable(&c, 0, false), 0);
	RDP_ASSERT_EQ(c.rc, 512);
	/* FIN credits (of a leasing peer's SRQ or of an RQ's FIN reserve)
	 * come beside the window, one more on a control message, and rc above
	 * what the check allows leaves nothing returnable (no wrap) */
	RDP_ASSERT_EQ(rdp_credit_returnable(&c, 2, false), 2);
	RDP_ASSERT_EQ(rdp_credit_returnable(&c, 2, true), 3);
	rdp_credit_granted(&c, 3);
	RDP_ASSERT_EQ(rdp_credit_returnable(&c, 2, true), 0);
	RDP_ASSERT_EQ(rdp_credit_returnable(&c, 0, false), 0);
	return 0;
}

/*
 * A credit of the FIN reserve goes with the next immediate data, beside the
 * credits owed, and not before: the data WR that carries it takes it.
 */
RDP_TEST(unit, credit_reserved_grant_goes_with_the_next_data_wr)
{
	struct rdp_credit c;
	enum rdp_credit_verdict v;
	uint32_t piggyback;

	endpoint(&c, 64, 4, 8);
	rdp_credit_recv_reposted(&c, 2);
	rdp_credit_grant_reserved(&c, 1);
	RDP_ASSERT_EQ(c.owed, 3);
	/* below T_ack: no pure ack for it alone */
	RDP_ASSERT(!rdp_credit_ack_due(&c));
	v = rdp_credit_data_check(&c);
	RDP_ASSERT(v == RDP_CREDIT_GO_SIGNALED || v == RDP_CREDIT_GO_UNSIGNALED);
	rdp_credit_data_posted(&c, v == RDP_CREDIT_GO_SIGNALED, &piggyback);
	RDP_ASSERT_EQ(piggyback, 3);
	RDP_ASSERT_EQ(c.owed, 0);
	return 0;
}

/* The FIN reserve: its cap, a quarter of C, the chunk limit, 1 at least, and none at C = 1. */
RDP_TEST(unit, credit_fin_reserve_leaves_the_window_its_chunks_and_caps_t_ack)
{
	struct rdp_credit_params p;

	p = params(256, 16, 256, 16, 16); /* the defaults: C = 240 */
	RDP_ASSERT_EQ(rdp_credit_keep_fin_reserve(&p, 8), RDP_CREDIT_FIN_RESERVE_MAX);
	RDP_ASSERT_EQ(p.rq_size, 256 - RDP_CREDIT_FIN_RESERVE_MAX);
	RDP_ASSERT_EQ(p.ack_threshold, 16);
	p = params(32, 8, 32, 4, 8); /* C = 28: a quarter */
	RDP_ASSERT_EQ(rdp_credit_keep_fin_reserve(&p, 1), 7);
	RDP_ASSERT_EQ(p.rq_size, 25);
	p = params(32, 8, 12, 3, 8); /* C = 9: two chunks take the slack, 1 still */
	RDP_ASSERT_EQ(rdp_credit_keep_fin_reserve(&p, 2), 1);
	RDP_ASSERT_EQ(p.rq_size, 11);
	RDP_ASSERT_EQ(p.ack_threshold, 8);
	p = params(32, 8, 88, 2, 86); /* C = T_ack: the threshold follows the window */
	RDP_ASSERT_EQ(rdp_credit_keep_fin_reserve(&p, 1), 1);
	RDP_ASSERT_EQ(p.ack_threshold, 85);
	p = params(32, 8, 2, 1, 1); /* C = 1: nothing kept, nothing changed */
	RDP_ASSERT_EQ(rdp_credit_keep_fin_reserve(&p, 1), 0);
	RDP_ASSERT_EQ(p.rq_size, 2);
	return 0;
}

RDP_TEST(unit, credit_closing_side_acks_only_while_it_has_sends_left)
{
	struct rdp_credit c;
	uint32_t credits;

	endpoint(&c, 64, 4, 2);
	rdp_credit_recv_reposted(&c, 2);
	/* sends left: an ack as any endpoint would post */
	RDP_ASSERT_EQ(rdp_credit_ack_check_closing(&c, true), RDP_CREDIT_GO_UNSIGNALED);
	RDP_ASSERT_EQ(rdp_credit_ack_check(&c), RDP_CREDIT_GO_UNSIGNALED);
	/* none left: owed credits stay with us, the peer cannot hold the close off */
	RDP_ASSERT_EQ(rdp_credit_ack_check_closing(&c, false), RDP_CREDIT_NONE);
	/* an unsignaled WR out: a reclaim makes its success visible, once */
	rdp_credit_ack_posted(&c, &credits);
	RDP_ASSERT_EQ(credits, 2);
	rdp_credit_recv_reposted(&c, 2);
	RDP_ASSERT_EQ(rdp_credit_ack_check_closing(&c, false), RDP_CREDIT_RECLAIM_FIRST);
	rdp_credit_reclaim_posted(&c);
	RDP_ASSERT_EQ(rdp_credit_ack_check_closing(&c, false), RDP_CREDIT_NONE);
	RDP_ASSERT_EQ(c.owed, 2);
	return 0;
}

RDP_TEST(unit, credit_rdma_write_takes_an_sq_slot_and_no_remote_credit)
{
	struct rdp_credit c;
	uint32_t rc;
	unsigned int i;

	endpoint(&c, 8, 4, 1);
	rc = c.rc;
	/* the signaling rule of data: every T_sig-th, and the one before the reclaim slot */
	for (i = 1; i <= 7; i++) {
		enum rdp_credit_verdict v = rdp_credit_rdma_check(&c, false);

		RDP_ASSERT_EQ(v, i == 4 || i == 7 ? RDP_CREDIT_GO_SIGNALED : RDP_CREDIT_GO_UNSIGNALED);
		rdp_credit_rdma_posted(&c, false, v == RDP_CREDIT_GO_SIGNALED);
	}
	RDP_ASSERT_EQ(c.rc, rc);
	RDP_ASSERT_EQ(c.sq_pi, 7);
	RDP_ASSERT_EQ(c.stats.data_posted, 0);
	/* and the reclaim slot is not one-sided work's either */
	RDP_ASSERT_EQ(rdp_credit_rdma_check(&c, false), RDP_CREDIT_WAIT_SQ);
	RDP_ASSERT_EQ(rdp_credit_send_completed(&c, 6), 7);
	RDP_ASSERT_EQ(rdp_credit_rdma_check(&c, false), RDP_CREDIT_GO_UNSIGNALED);
	return 0;
}

/*
 * A READ takes a read slot; the one that takes the last free slot is
 * signaled, so a READ waiting for a slot always has a signaled READ before
 * it whose completion frees every slot. The others follow the signaling
 * rule of data.
 */
RDP_TEST(unit, credit_rdma_read_waits_for_a_read_slot_and_the_last_slot_is_signaled)
{
	struct rdp_credit c;
	unsigned int i;

	endpoint(&c, 64, 4, 1);
	/* no depth agreed: no READ ever goes */
	RDP_ASSERT_EQ(rdp_credit_rdma_check(&c, true), RDP_CREDIT_WAIT_READ);
	rdp_credit_read_depth_set(&c, 2);
	RDP_ASSERT_EQ(rdp_credit_rdma_check(&c, true), RDP_CREDIT_GO_UNSIGNALED);
	rdp_credit_rdma_posted(&c, true, false);
	/* the last slot */
	RDP_ASSERT_EQ(rdp_credit_rdma_check(&c, true), RDP_CREDIT_GO_SIGNALED);
	rdp_credit_rdma_posted(&c, true, true);
	RDP_ASSERT_EQ(c.rd_inflight, 2);
	RDP_ASSERT_EQ(rdp_credit_rdma_check(&c, true), RDP_CREDIT_WAIT_READ);
	RDP_ASSERT_EQ(rdp_credit_rdma_check(&c, true), RDP_CREDIT_WAIT_READ);
	RDP_ASSERT_EQ(c.stats.read_stalls, 2); /* two episodes: before the depth, and now */
	/* a WRITE is not held back by the READs */
	RDP_ASSERT_EQ(rdp_credit_rdma_check(&c, false), RDP_CREDIT_GO_UNSIGNALED);
	/* the signaled READ's completion covers both */
	RDP_ASSERT_EQ(rdp_credit_send_completed(&c, 1), 2);
	rdp_credit_reads_completed(&c, 2);
	RDP_ASSERT_EQ(c.rd_inflight, 0);

	/* with slots to spare, READs are signaled as data is: every T_sig-th */
	rdp_credit_read_depth_set(&c, 16);
	for (i = 1; i <= 8; i++) {
		enum rdp_credit_verdict v = rdp_credit_rdma_check(&c, true);

		RDP_ASSERT_EQ(v, i % 4 == 0 ? RDP_CREDIT_GO_SIGNALED : RDP_CREDIT_GO_UNSIGNALED);
		rdp_credit_rdma_posted(&c, true, v == RDP_CREDIT_GO_SIGNALED);
	}
	RDP_ASSERT_EQ(c.unsig_run, 0);
	RDP_ASSERT_EQ(c.rd_inflight, 8);
	return 0;
}
