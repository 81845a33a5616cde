/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/credit decision by decision: hand-built sequences of posts and
 * completions, each checked against the verdict and counters the protocol
 * (docs/credit-protocol.md) prescribes.
 */
#include <errno.h>

#include <rte_branch_prediction.h>

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
