/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The handover of an endpoint between the control thread and its poller
 * while a handshake runs. The poller may fail and retire an endpoint whose
 * QP it already polls before the control thread hears of it; what the
 * control thread still does for that handshake (admit it, fail it) must
 * not free the endpoint's poller slot a second time: a slot in the free
 * ring twice goes to two endpoints, and one's completions reach the other
 * or nobody (found by the soak: "1 stray completions"). White-box.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_eal.h>

#include "ep_private.h"
#include "ep_stream.h"
#include "rdp_test.h"

static unsigned int failed_events, closed_events; /* (atomic) */

static uint16_t
free_recv(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	uint16_t i;

	RTE_SET_USED(ep);
	RTE_SET_USED(arg);
	for (i = 0; i < n; i++)
		rdp_msg_free(msgs[i]);
	return n;
}

static void
count_state(struct rdp_ep *ep, enum rdp_ep_state st, int err, void *arg)
{
	RTE_SET_USED(ep);
	RTE_SET_USED(err);
	RTE_SET_USED(arg);
	if (st == RDP_EP_FAILED)
		__atomic_fetch_add(&failed_events, 1, __ATOMIC_RELEASE);
	else if (st == RDP_EP_CLOSED)
		__atomic_fetch_add(&closed_events, 1, __ATOMIC_RELEASE);
}

static const struct rdp_ep_ops counting_ops = { .on_recv = free_recv, .on_state = count_state };

/* A TCP listener on 127.0.0.1 that accepts and never answers; returns its fd. */
static int
silent_listener(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	RDP_ASSERT(fd >= 0);
	RDP_ASSERT(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	RDP_ASSERT(listen(fd, 4) == 0);
	RDP_ASSERT(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static void
wait_count(unsigned int *counter, unsigned int want, const char *what)
{
	double deadline = rdp_clock_s() + 5;

	while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) < want) {
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "no %s event within 5 s", what);
		usleep(1000);
	}
}

RDP_TEST(e2e, ep_retired_by_its_poller_ignores_a_late_admission_from_its_handshake)
{
	struct rdp_qp_attr err_state = { .state = RDP_QPS_ERR };
	struct rdp_ep_params prm = { .ops = &counting_ops, .lcore = -1 };
	uint8_t hello[RDP_HELLO_LEN];
	struct rdp_poll_stats st;
	struct pollfd pfd;
	struct rdp_cfg *cfg;
	struct rdp_ep *ep;
	uint32_t slots_used;
	size_t got = 0;
	int lfd, cfd, port;
	struct rdp_qp *qp;
	char addr[64];
	void *item;

	rdp_test_eal_init("0-1");
	cfg = stream_cfg("shm", 4096);
	RDP_ASSERT(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "handshake_timeout_ms", "30000", "test") == 0);
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	lfd = silent_listener(&port);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	ep = rdp_connect(addr, &prm);
	RDP_ASSERT_MSG(ep != NULL, "rdp_connect: %s", rdp_err_msg());

	/* the client's HELLO names its QP: the QP exists, its receives are posted */
	pfd = (struct pollfd){ .fd = lfd, .events = POLLIN };
	RDP_ASSERT_MSG(poll(&pfd, 1, 5000) == 1, "the client did not connect");
	cfd = accept(lfd, NULL, NULL);
	RDP_ASSERT(cfd >= 0);
	while (got < sizeof(hello)) {
		ssize_t k;

		pfd = (struct pollfd){ .fd = cfd, .events = POLLIN };
		RDP_ASSERT_MSG(poll(&pfd, 1, 5000) == 1, "no HELLO from the client");
		k = read(cfd, hello + got, sizeof(hello) - got);
		RDP_ASSERT(k > 0);
		got += (size_t)k;
	}
	qp = __atomic_load_n(&ep->qp, __ATOMIC_ACQUIRE);
	RDP_ASSERT(qp != NULL);

	/* the QP goes to error: its poller fails the endpoint and retires it */
	RDP_ASSERT_EQ(rdp_qp_modify(qp, &err_state, RDP_QP_ATTR_STATE), 0);
	wait_count(&failed_events, 1, "FAILED");

	/* the control thread, not told yet, ends the handshake: an admission */
	item = tag_ptr(ep, TAG_ADMIT);
	RDP_ASSERT_EQ(rdp_poller_inbox_put(ep->lc->poller, &item, 1), 1);
	usleep(300 * 1000);
	RDP_ASSERT_EQ(__atomic_load_n(&failed_events, __ATOMIC_ACQUIRE), 1);
	rdp_poller_stats(ep->lc->poller, &st, NULL, NULL, &slots_used);
	RDP_ASSERT_MSG(slots_used == 0, "%" PRIu32 " slots in use (a slot freed twice?)",
		       slots_used);

	rdp_ep_close(ep);
	wait_count(&closed_events, 1, "CLOSED");
	close(cfd);
	close(lfd);
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}
