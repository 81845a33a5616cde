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

/*
 * EAL, rdp_init() on shm with @p drain_ms as drain_timeout_ms (NULL: the
 * default) and a loopback pair whose server runs @p srv_ops: the client.
 */
static struct rdp_ep *
start_pair(const struct rdp_ep_ops *srv_ops, struct rdp_cfg **cfg, const char *drain_ms)
{
	struct rdp_ep_params psrv = { .ops = srv_ops, .lcore = -1 };
	struct rdp_ep_params pcli = { .ops = &drop_ops, .lcore = -1 };

	rdp_test_eal_init("0-1");
	*cfg = stream_cfg("shm", 65536);
	if (drain_ms != NULL)
		RDP_ASSERT(rdp_cfg_set(*cfg, RDP_CFG_GLOBAL, "drain_timeout_ms", drain_ms,
				       "test") == 0);
	RDP_ASSERT_MSG(rdp_init(*cfg) == 0, "rdp_init: %s", rdp_err_msg());
	return stream_loopback_connect(&psrv, &pcli);
}

RDP_TEST(e2e, ep_init_after_a_fini_that_could_not_finish_is_refused)
{
	struct rdp_cfg *cfg;
	struct rdp_ep *cli;
	struct rdp_msg *m;
	double deadline;

	cli = start_pair(&keep_ops, &cfg, "500");
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

static struct rdp_msg *kept[2];
static struct rdp_ep *kept_ep;
static uint32_t kept_n; /* (atomic) */

static uint16_t
keep_two(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	uint16_t i;

	RTE_SET_USED(arg);
	for (i = 0; i < n; i++) {
		uint32_t k = __atomic_load_n(&kept_n, __ATOMIC_RELAXED);

		RDP_ASSERT(k < RTE_DIM(kept));
		kept[k] = msgs[i];
		kept_ep = ep;
		__atomic_store_n(&kept_n, k + 1, __ATOMIC_RELEASE);
	}
	return n;
}

/* Wait up to @p s seconds for rdp_endpoint_count() to read @p want. */
static bool
endpoints_become(unsigned int want, double s)
{
	double deadline = rdp_clock_s() + s;

	while (rdp_endpoint_count() != want)
		if (rdp_clock_s() > deadline)
			return false;
	return true;
}

/*
 * Received messages keep their endpoint alive past its end, and only as
 * long as one is held: one freed while the endpoint runs, the other after
 * it failed and was closed, when the endpoint must go.
 */
RDP_TEST(e2e, ep_held_messages_keep_their_endpoint_until_the_last_is_freed)
{
	static const struct rdp_ep_ops keep_two_ops = { .on_recv = keep_two };
	struct rdp_msg *m[2];
	struct rdp_cfg *cfg;
	struct rdp_ep *cli;
	double deadline;

	cli = start_pair(&keep_two_ops, &cfg, NULL);
	RDP_ASSERT_EQ(rdp_msg_alloc_bulk(cli, m, 2, 100), 0);
	RDP_ASSERT_EQ(rdp_ep_send_burst(cli, m, 2), 2);
	deadline = rdp_clock_s() + 5;
	while (__atomic_load_n(&kept_n, __ATOMIC_ACQUIRE) < 2)
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "the messages did not arrive");
	rdp_msg_free(kept[0]); /* while the endpoint runs */
	RDP_ASSERT_EQ(rdp_ep_close(cli), 0);
	deadline = rdp_clock_s() + 5;
	while (rdp_ep_state(kept_ep) != RDP_EP_PEER_CLOSED)
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "the server's endpoint is %s",
			       rdp_ep_state_str(rdp_ep_state(kept_ep)));
	RDP_ASSERT_EQ(rdp_ep_close(kept_ep), 0);
	/* the client's endpoint goes; the server's stays for the message held */
	RDP_ASSERT_MSG(endpoints_become(1, 5), "%u endpoints", rdp_endpoint_count());
	RDP_ASSERT_MSG(!endpoints_become(0, 0.2), "the endpoint went with a message held");
	rdp_msg_free(kept[1]);
	RDP_ASSERT_MSG(endpoints_become(0, 5), "%u endpoints after the last free",
		       rdp_endpoint_count());
	RDP_ASSERT_EQ(rdp_fini(), 0);
	rdp_cfg_free(cfg);
	return 0;
}
