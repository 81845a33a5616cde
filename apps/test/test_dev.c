/* SPDX-License-Identifier: BSD-3-Clause */
/* The generic device layer: driver specs and argument parsing. */
#include <errno.h>

#include "rdp_driver.h"
#include "rdp_test.h"

RDP_TEST(unit, dev_open_names_unknown_driver)
{
	RDP_ASSERT(rdp_dev_open("nosuch:x=1") == NULL);
	RDP_ASSERT_EQ(rte_errno, ENOENT);
	RDP_ASSERT_MSG(strstr(rdp_err_msg(), "unknown driver 'nosuch'") != NULL,
		       "message: %s", rdp_err_msg());
	RDP_ASSERT(rdp_dev_open("") == NULL);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	return 0;
}

RDP_TEST(unit, dev_args_reject_unknown_and_repeated_keys)
{
	static const char *const keys[] = { "alpha", "beta", NULL };
	struct rte_kvargs *kv;
	uint64_t v = 7;

	RDP_ASSERT(rdp_drv_args_parse("toy", "alpha=1,gamma=2", keys) == NULL);
	RDP_ASSERT_STR_EQ(rdp_err_msg(),
			  "driver toy: unknown argument 'gamma' (valid: alpha, beta)");
	RDP_ASSERT(rdp_drv_args_parse("toy", "alpha=1,alpha=2", keys) == NULL);
	RDP_ASSERT_STR_EQ(rdp_err_msg(), "driver toy: argument 'alpha' given twice");

	kv = rdp_drv_args_parse("toy", "alpha=12,beta=x", keys);
	RDP_ASSERT(kv != NULL);
	RDP_ASSERT_EQ(rdp_drv_arg_u64("toy", kv, "alpha", &v, 0, 100), 0);
	RDP_ASSERT_EQ(v, 12);
	RDP_ASSERT_EQ(rdp_drv_arg_u64("toy", kv, "beta", &v, 0, 100), -EINVAL);
	RDP_ASSERT_STR_EQ(rdp_err_msg(),
			  "driver toy: argument beta=x: expected an integer in [0, 100]");
	RDP_ASSERT_EQ(v, 12);
	rte_kvargs_free(kv);
	return 0;
}

RDP_TEST(unit, err_detail_may_quote_the_previous_detail)
{
	rdp_err_set(EINVAL, "inner cause %d", 42);
	RDP_ASSERT_EQ(rdp_err_set(ENOSPC, "outer: %s", rdp_err_msg()), -ENOSPC);
	RDP_ASSERT_STR_EQ(rdp_err_msg(), "outer: inner cause 42");
	RDP_ASSERT_EQ(rte_errno, ENOSPC);
	return 0;
}
