/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Starting and stopping rdmaplane in one process: rdp_fini() closes what a
 * handshake admits while it waits, and rdp_init() after an rdp_fini() that
 * could not finish is refused, not a crash.
 */
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>

#include "ep_stream.h"
#include "rdp_test.h"

static uint64_t held; /* (atomic) received messages the application keeps */

static uint16_t
keep_recv(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	RTE_SET_USED(ep);
	RTE_SET_USED(msgs);
	RTE_SET_USED(arg);
	__atomic_fetch_add(&held, n, __ATOMIC_RELEASE); /* and never frees them */
	return n;
}

static const struct rdp_ep_ops keep_ops = { .on_recv = keep_recv };
static const struct rdp_ep_ops drop_ops = { .on_recv = stream_recv_free_all };

RDP_TEST(e2e, ep_init_after_a_fini_that_could_not_finish_is_refused)
{
	struct rdp_ep_params psrv = { .ops = &keep_ops, .lcore = -1 };
	struct rdp_ep_params pcli = { .ops = &drop_ops, .lcore = -1 };
	struct rdp_cfg *cfg;
	struct rdp_ep *cli;
	struct rdp_msg *m;
	double deadline;

	rdp_test_eal_init("0-1");
	cfg = stream_cfg("shm", 65536);
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	cli = stream_loopback_connect(&psrv, &pcli);
	m = rdp_msg_alloc(cli, 100);
	RDP_ASSERT(m != NULL);
	RDP_ASSERT_EQ(rdp_ep_send_burst(cli, &m, 1), 1);
	deadline = rdp_clock_s() + 5;
	while (__atomic_load_n(&held, __ATOMIC_ACQUIRE) == 0)
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "the message did not arrive");
	/* the application still holds a received message */
	RDP_ASSERT_EQ(rdp_fini(), -EBUSY);
	RDP_ASSERT(rdp_init(cfg) < 0);
	printf("rdp_init refused: %s\n", rdp_err_msg());
	RDP_ASSERT_MSG(strstr(rdp_err_msg(), "rdp_fini") != NULL, "%s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}
