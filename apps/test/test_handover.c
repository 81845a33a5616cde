/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The handover of an endpoint between the control thread and its poller
 * while a handshake runs. Its poller sees the QP's completions from the
 * moment the QP exists, while the control thread still configures that QP
 * (connects it when HELLO_ACK comes) and owns the handshake. An error
 * completion then must not make the poller tear the endpoint down behind
 * the control thread's back: the control thread could connect a destroyed
 * QP, and its admission of the endpoint would free the poller slot a
 * second time (a slot in the free ring twice goes to two endpoints: found
 * by the soak as "1 stray completions"). The poller tells the control
 * thread, which ends the handshake; the teardown starts at the handover,
 * and a second handover is ignored. White-box.
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

/* On the endpoint's poller, which may destroy the QP right after. */
static void
qp_to_error(struct rdp_ep *ep, void *arg)
{
	struct rdp_qp_attr err_state = { .state = RDP_QPS_ERR };

	RTE_SET_USED(arg);
	RDP_ASSERT_EQ(rdp_qp_modify(ep->qp, &err_state, RDP_QP_ATTR_STATE), 0);
}

static const struct rdp_ep_ops counting_ops = { .on_recv = stream_recv_free_all, .on_state = count_state };

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

RDP_TEST(e2e, ep_qp_failing_during_its_handshake_ends_it_on_the_control_thread_then_once)
{
	struct rdp_ep_params prm = { .ops = &counting_ops, .lcore = -1 };
	uint8_t hello[RDP_HELLO_LEN];
	struct rdp_poll_stats st;
	struct pollfd pfd;
	struct rdp_cfg *cfg;
	struct rdp_ep *ep;
	uint32_t slots_used;
	size_t got = 0;
	int lfd, cfd, port;
	char addr[64];
	void *item;

	rdp_test_eal_init("0-1");
	rdp_test_log_capture();
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
	RDP_ASSERT(__atomic_load_n(&ep->qp, __ATOMIC_ACQUIRE) != NULL);

	/* the QP goes to error: the control thread ends the handshake, then
	 * the poller tears the endpoint down */
	RDP_ASSERT_EQ(rdp_ep_call(ep, qp_to_error, NULL), 0);
	wait_count(&failed_events, 1, "FAILED");
	RDP_ASSERT_MSG(strstr(rdp_test_log, "failed: its QP went to error during the handshake") != NULL,
		       "the control thread did not end the handshake:\n%s", rdp_test_log);

	/* a second handover (it would free the slot again) is ignored */
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
	rdp_test_log_release();
	rdp_cfg_free(cfg);
	return 0;
}

/*
 * The control thread hands an established endpoint's failure (its control
 * connection closed, a QP_FATAL device event, the port down) to the
 * endpoint's poller through the poller's inbox. Until the poller takes the
 * item, the item must keep the endpoint alive: otherwise the poller can
 * drop the last other reference in the same poll, the control thread frees
 * the endpoint, and the poller then reads the freed endpoint to fail it
 * (found by the ASan soak, seed 15005: a use after free in ep_inbox()).
 * White-box: the poller is held inside an rdp_ep_call() while the control
 * thread queues the failure, and the endpoint's references are counted.
 */
struct poller_gate {
	bool held;   /* (atomic) the poller is inside stall() */
	bool open;   /* (atomic) let it go */
};

static void
stall(struct rdp_ep *ep, void *arg)
{
	struct poller_gate *g = arg;
	double deadline = rdp_clock_s() + 10;

	RTE_SET_USED(ep);
	__atomic_store_n(&g->held, true, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&g->open, __ATOMIC_ACQUIRE) && rdp_clock_s() < deadline)
		rte_pause();
}

/*
 * This process's socket connected to 127.0.0.1:@p port (the client's
 * control connection), found from outside: ep->fd belongs to the control
 * thread.
 */
static int
socket_connected_to(int port)
{
	int fd;

	for (fd = 3; fd < 1024; fd++) {
		struct sockaddr_in a;
		socklen_t len = sizeof(a);

		if (getpeername(fd, (struct sockaddr *)&a, &len) == 0 && a.sin_family == AF_INET &&
		    ntohs(a.sin_port) == port)
			return fd;
	}
	return -1;
}

static struct rdp_ep *accepted_ep; /* (atomic) */

static void
keep_accepted(struct rdp_ep *ep, enum rdp_ep_state st, int err, void *arg)
{
	RTE_SET_USED(err);
	RTE_SET_USED(arg);
	if (st == RDP_EP_ESTABLISHED)
		__atomic_store_n(&accepted_ep, ep, __ATOMIC_RELEASE);
}

static const struct rdp_ep_ops keeping_ops = { .on_recv = stream_recv_free_all,
					       .on_state = keep_accepted };

RDP_TEST(e2e, ep_failure_queued_for_the_poller_holds_its_endpoint)
{
	struct rdp_ep_params pcli = { .ops = &counting_ops, .lcore = -1 };
	struct rdp_ep_params psrv = { .ops = &keeping_ops, .lcore = -1 };
	struct poller_gate gate = { 0 };
	struct rdp_cfg *cfg;
	struct rdp_ep *ep;
	unsigned int refs;
	double deadline;
	char addr[64];
	int port;

	rdp_test_eal_init("0-1");
	rdp_test_log_capture();
	cfg = stream_cfg("shm", 4096);
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	port = rdp_listen("127.0.0.1:0", &psrv);
	RDP_ASSERT_MSG(port > 0, "rdp_listen: %s", rdp_err_msg());
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	ep = rdp_connect(addr, &pcli);
	RDP_ASSERT_MSG(ep != NULL, "rdp_connect: %s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_ep_wait_established(ep, 5000), 0);
	deadline = rdp_clock_s() + 5;
	while (__atomic_load_n(&accepted_ep, __ATOMIC_ACQUIRE) == NULL)
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "the server side never established");

	/* hold the poller, then break the client's control connection */
	RDP_ASSERT_EQ(rdp_ep_call(ep, stall, &gate), 0);
	while (!__atomic_load_n(&gate.held, __ATOMIC_ACQUIRE))
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "rdp_ep_call() never ran");
	refs = atomic_load(&ep->refs);
	RDP_ASSERT_EQ(shutdown(socket_connected_to(port), SHUT_RDWR), 0);
	/* the control thread sees the closed connection and queues the failure */
	deadline = rdp_clock_s() + 5;
	while (atomic_load(&ep->refs) != refs + 1 && rdp_clock_s() < deadline)
		usleep(1000);
	RDP_ASSERT_MSG(atomic_load(&ep->refs) == refs + 1,
		       "the queued failure holds no reference: %u references, %u before",
		       atomic_load(&ep->refs), refs);

	/* the poller fails it and lets the reference go */
	__atomic_store_n(&gate.open, true, __ATOMIC_RELEASE);
	wait_count(&failed_events, 1, "FAILED");
	deadline = rdp_clock_s() + 5;
	while (atomic_load(&ep->refs) != refs)
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "%u references, %u before",
			       atomic_load(&ep->refs), refs);
	rdp_ep_close(ep);
	wait_count(&closed_events, 1, "CLOSED");
	rdp_ep_close(__atomic_load_n(&accepted_ep, __ATOMIC_ACQUIRE));
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_test_log_release();
	rdp_cfg_free(cfg);
	return 0;
}
