/* SPDX-License-Identifier: BSD-3-Clause */
/* The generic device layer: driver specs and argument parsing. */
#include <errno.h>
#include <string.h>

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

/*
 * A driver that makes objects without their fast path: the generic layer
 * must refuse each one, destroy it, say why, and not count it (the device
 * closes). "broken" has no probe, so default selection never picks it.
 */
static struct rdp_pd broken_pd_obj;
static struct rdp_cq broken_cq_obj;
static struct rdp_qp broken_qp_obj;
static unsigned int broken_destroyed;

static int
broken_open(struct rdp_dev *dev, const char *args)
{
	RTE_SET_USED(dev);
	RTE_SET_USED(args);
	return 0;
}

static struct rdp_pd *
broken_pd_alloc(struct rdp_dev *dev)
{
	broken_pd_obj.dev = dev;
	return &broken_pd_obj;
}

static int
broken_pd_free(struct rdp_pd *pd)
{
	RTE_SET_USED(pd);
	return 0;
}

static struct rdp_cq *
broken_cq_create(struct rdp_dev *dev, uint32_t cqe, int socket)
{
	RTE_SET_USED(cqe);
	RTE_SET_USED(socket);
	memset(&broken_cq_obj, 0, sizeof(broken_cq_obj));
	broken_cq_obj.dev = dev; /* and no poll function */
	return &broken_cq_obj;
}

static int
broken_cq_destroy(struct rdp_cq *cq)
{
	RTE_SET_USED(cq);
	broken_destroyed++;
	return 0;
}

static struct rdp_qp *
broken_qp_create(struct rdp_pd *pd, const struct rdp_qp_init_attr *attr)
{
	RTE_SET_USED(attr);
	memset(&broken_qp_obj, 0, sizeof(broken_qp_obj));
	broken_qp_obj.dev = pd->dev; /* and no post_send, post_recv */
	return &broken_qp_obj;
}

static int
broken_qp_destroy(struct rdp_qp *qp)
{
	RTE_SET_USED(qp);
	broken_destroyed++;
	return 0;
}

static const struct rdp_driver_ops broken_ops = {
	.dev_open = broken_open,
	.pd_alloc = broken_pd_alloc,
	.pd_free = broken_pd_free,
	.cq_create = broken_cq_create,
	.cq_destroy = broken_cq_destroy,
	.qp_create = broken_qp_create,
	.qp_destroy = broken_qp_destroy,
};

static struct rdp_driver broken_driver = {
	.preference = 1000,
	.ops = &broken_ops,
};

RDP_DRIVER_REGISTER(broken, broken_driver);

RDP_TEST(unit, dev_refuses_objects_without_fast_path_and_counts_none)
{
	struct rdp_qp_init_attr qa = { .cap = { .max_send_wr = 1, .max_recv_wr = 1,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct rdp_dev *dev = rdp_dev_open("broken");
	struct rdp_pd *pd;

	RDP_ASSERT_MSG(dev != NULL, "%s", rdp_err_msg());
	broken_destroyed = 0;
	RDP_ASSERT(rdp_cq_create(dev, 16, -1) == NULL);
	RDP_ASSERT_EQ(rte_errno, EFAULT);
	RDP_ASSERT_STR_EQ(rdp_err_msg(), "driver broken: CQ without fast path");
	pd = rdp_pd_alloc(dev);
	RDP_ASSERT(pd != NULL);
	qa.send_cq = qa.recv_cq = &broken_cq_obj;
	RDP_ASSERT(rdp_qp_create(pd, &qa) == NULL);
	RDP_ASSERT_EQ(rte_errno, EFAULT);
	RDP_ASSERT_STR_EQ(rdp_err_msg(), "driver broken: QP without fast path");
	RDP_ASSERT_EQ(broken_destroyed, 2);
	/* an op the driver lacks */
	RDP_ASSERT(rdp_mr_alloc(pd, 64, -1, 0) == NULL);
	RDP_ASSERT_EQ(rte_errno, ENOTSUP);
	RDP_ASSERT_STR_EQ(rdp_err_msg(), "driver broken does not support mr_alloc");
	/* the refused objects are not counted: only the PD holds the device */
	RDP_ASSERT_EQ(rdp_dev_close(dev), -EBUSY);
	RDP_ASSERT_EQ(rdp_pd_free(pd), 0);
	RDP_ASSERT_EQ(rdp_pd_free(NULL), 0);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	return 0;
}
