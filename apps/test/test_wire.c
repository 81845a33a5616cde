/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A hostile peer after the handshake: a raw queue pair of its own (a
 * second shm device in this process) completes a real handshake with an
 * endpoint, then sends frames that break the wire format one rule at a
 * time. Each time the endpoint must deliver what came before, fail with
 * the rule named in its log, give back every buffer, and the listener
 * must go on serving well-behaved peers.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>

#include "ep_frame.h"
#include "ep_stream.h"
#include "rdp_dev.h"
#include "rdp_hello.h"
#include "rdp_test.h"

#define SRV_MAX_MSG 4096  /* the server's max_msg_size */
#define RAW_BUF 1024      /* the raw peer's buf_size: the agreed chunk size */
#define RAW_SQ 64
#define RAW_RQ 64

/* ---- the server: one endpoint at a time, everything recorded ---- */

static struct {
	struct rdp_ep *ep;       /* (atomic) the accepted endpoint */
	uint64_t received;       /* (atomic) messages delivered */
	uint32_t last_len;       /* (atomic) length of the last one */
	int state;               /* (atomic) last state reported */
	int err;                 /* (atomic) the error of FAILED */
	bool closed;             /* (atomic) CLOSED seen */
	uint64_t before_established; /* (atomic) messages delivered before ESTABLISHED */
	bool hold;               /* keep what arrives instead of freeing it */
	struct rdp_msg *kept[16];
	uint32_t nkept;          /* (atomic) */
} srv;

static uint16_t
srv_recv(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	uint16_t i;

	RTE_SET_USED(ep);
	RTE_SET_USED(arg);
	/* the application hears of an endpoint before it hears from it */
	if (__atomic_load_n(&srv.state, __ATOMIC_ACQUIRE) != RDP_EP_ESTABLISHED)
		__atomic_fetch_add(&srv.before_established, n, __ATOMIC_RELAXED);
	for (i = 0; i < n; i++) {
		__atomic_store_n(&srv.last_len, msgs[i]->pkt_len, __ATOMIC_RELAXED);
		if (srv.hold && srv.nkept < RTE_DIM(srv.kept)) {
			srv.kept[srv.nkept] = msgs[i];
			__atomic_store_n(&srv.nkept, srv.nkept + 1, __ATOMIC_RELEASE);
			continue;
		}
		rdp_msg_free(msgs[i]);
	}
	__atomic_fetch_add(&srv.received, n, __ATOMIC_RELEASE);
	return n;
}

static void
srv_state(struct rdp_ep *ep, enum rdp_ep_state st, int err, void *arg)
{
	RTE_SET_USED(arg);
	if (st == RDP_EP_ESTABLISHED)
		__atomic_store_n(&srv.ep, ep, __ATOMIC_RELEASE);
	if (st == RDP_EP_FAILED)
		__atomic_store_n(&srv.err, err, __ATOMIC_RELAXED);
	__atomic_store_n(&srv.state, st, __ATOMIC_RELEASE);
	if (st == RDP_EP_FAILED)
		rdp_ep_close(ep); /* the application lets it go */
	if (st == RDP_EP_CLOSED)
		__atomic_store_n(&srv.closed, true, __ATOMIC_RELEASE);
}

static const struct rdp_ep_ops srv_ops = {
	.on_recv = srv_recv,
	.on_state = srv_state,
};

/* ---- the server's log, kept to check what it says ---- */

static void
wait_log(const char *what, const char *text)
{
	double deadline = rdp_clock_s() + 5;

	while (strstr(rdp_test_log, text) == NULL) {
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "%s: the server's log lacks \"%s\":\n%s", what,
			       text, rdp_test_log);
		usleep(1000);
	}
}

/* ---- the raw peer ---- */

struct raw_peer {
	struct rdp_dev *dev;
	struct rdp_pd *pd;
	struct rdp_cq *cq;
	struct rdp_mr *mr;      /* send buffers, then receive buffers */
	struct rdp_qp *qp;
	int fd;
	uint8_t rd_dest;        /* READs its hello says it serves */
};

static void raw_handshake(struct raw_peer *r, int port, bool send_ready);

/* A handshake as a client would do it, with our own QP; then RTS. */
static void
raw_establish(struct raw_peer *r, int port)
{
	raw_handshake(r, port, true);
}

static void
raw_send_ready(struct raw_peer *r)
{
	struct rdp_hello ready = { .type = RDP_HELLO_READY };
	uint8_t out[RDP_HELLO_LEN];

	rdp_hello_encode(&ready, out);
	RDP_ASSERT(send(r->fd, out, sizeof(out), 0) == sizeof(out));
}

/* HELLO, HELLO_ACK, our QP to RTS, and READY when @p send_ready. */
static void
raw_handshake(struct raw_peer *r, int port, bool send_ready)
{
	struct rdp_qp_init_attr qia = {
		.cap = { .max_send_wr = RAW_SQ + 1, .max_recv_wr = RAW_RQ, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct rdp_hello h = {
		.type = RDP_HELLO_HELLO,
		.credit = { .sq_size = RAW_SQ, .signal_interval = 8, .rq_size = RAW_RQ,
			    .ack_reserve = 8, .ack_threshold = 8 },
		.buf_size = RAW_BUF, .max_msg_size = 65536,
		.link_layer = RDP_LINK_SHM, .driver = "shm", .rd_dest = r->rd_dest,
	};
	struct rdp_qp_attr attr = { .state = RDP_QPS_INIT };
	struct rdp_hello ack;
	uint8_t out[RDP_HELLO_LEN], back[RDP_HELLO_LEN];
	struct rdp_recv_wr rwr;
	struct rdp_sge sge;
	char why[256];
	uint32_t i;
	int err;

	/* a CQ per connection: nothing of the previous one is left in it */
	r->cq = rdp_cq_create(r->dev, 2 * (RAW_SQ + 1 + RAW_RQ), -1);
	RDP_ASSERT_MSG(r->cq != NULL, "%s", rdp_err_msg());
	qia.send_cq = qia.recv_cq = r->cq;
	r->qp = rdp_qp_create(r->pd, &qia);
	RDP_ASSERT_MSG(r->qp != NULL, "%s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_qp_modify(r->qp, &attr, RDP_QP_ATTR_STATE), 0);
	/* receives for the server's pure acks: the second half of the MR */
	for (i = 0; i < RAW_RQ; i++) {
		sge = (struct rdp_sge){ .addr = (uintptr_t)r->mr->addr + (RAW_SQ + i) * RAW_BUF,
					.length = RAW_BUF, .lkey = r->mr->lkey };
		rwr = (struct rdp_recv_wr){ .wr_id = i, .sg_list = &sge, .num_sge = 1 };
		RDP_ASSERT_EQ(rdp_post_recv(r->qp, &rwr, 1, &err), 1);
	}
	RDP_ASSERT_EQ(rdp_qp_local_addr(r->qp, &h.qp), 0);
	r->fd = stream_raw_connect(port);
	rdp_hello_encode(&h, out);
	RDP_ASSERT(send(r->fd, out, sizeof(out), 0) == sizeof(out));
	RDP_ASSERT(recv(r->fd, back, sizeof(back), MSG_WAITALL) == sizeof(back));
	RDP_ASSERT_EQ(rdp_hello_decode(back, sizeof(back), &ack, why, sizeof(why)), 0);
	RDP_ASSERT_MSG(ack.type == RDP_HELLO_ACK, "type %u: %s", ack.type, ack.reason);
	attr = (struct rdp_qp_attr){ .state = RDP_QPS_RTR, .remote = ack.qp,
				     .conn = { .rnr_retry = 0, .retry_cnt = 7, .timeout = 14 } };
	RDP_ASSERT_EQ(rdp_qp_modify(r->qp, &attr, RDP_QP_ATTR_STATE | RDP_QP_ATTR_REMOTE |
				    RDP_QP_ATTR_CONN), 0);
	attr.state = RDP_QPS_RTS;
	RDP_ASSERT_EQ(rdp_qp_modify(r->qp, &attr, RDP_QP_ATTR_STATE | RDP_QP_ATTR_CONN), 0);
	if (send_ready)
		raw_send_ready(r);
}

/*
 * One raw frame: SEND_WITH_IMM (or a plain SEND) of @p len bytes. raw_send()
 * numbers each SEND_WITH_IMM as an endpoint does (IMM_SEQ()), unless the
 * frame carries a number of its own.
 */
struct frame {
	bool no_imm;
	bool own_seq;   /* imm holds its SEND number: keep it */
	uint32_t imm;
	uint32_t len;
	const uint8_t *payload; /* its first bytes (up to 32), else 0x5a throughout */
};

/* Post frames, signaled, and reap their completions; returns how many succeeded. */
static unsigned int
raw_send(struct raw_peer *r, const struct frame *f, unsigned int n)
{
	unsigned int i, ok = 0, done = 0;
	double deadline = rdp_clock_s() + 5;
	uint32_t seq = 0;

	for (i = 0; i < n; i++) {
		struct rdp_sge sge = { .addr = (uintptr_t)r->mr->addr + (i % RAW_SQ) * RAW_BUF,
				       .length = f[i].len, .lkey = r->mr->lkey };
		struct rdp_send_wr wr = {
			.wr_id = i, .sg_list = &sge, .num_sge = f[i].len > 0,
			.opcode = f[i].no_imm ? RDP_WR_SEND : RDP_WR_SEND_WITH_IMM,
			.flags = RDP_SEND_SIGNALED,
			.imm = f[i].own_seq || f[i].no_imm ? f[i].imm : f[i].imm | IMM_SEQ(seq),
		};
		int err;

		if (!f[i].no_imm)
			seq++;
		memset((void *)(uintptr_t)sge.addr, 0x5a, RTE_MIN(f[i].len, (uint32_t)RAW_BUF));
		if (f[i].payload != NULL)
			memcpy((void *)(uintptr_t)sge.addr, f[i].payload, RTE_MIN(f[i].len, 32u));
		RDP_ASSERT_EQ(rdp_post_send(r->qp, &wr, 1, &err), 1);
		/* one at a time: the server sees them in order, and we see each verdict */
		while (done <= i) {
			struct rdp_wc wc[8];
			int k = rdp_poll_cq(r->cq, wc, RTE_DIM(wc)), j;

			RDP_ASSERT(k >= 0);
			for (j = 0; j < k; j++) {
				if (wc[j].opcode == RDP_WC_RECV && wc[j].status == RDP_WC_SUCCESS)
					continue; /* a pure ack from the server */
				if (wc[j].wr_id == i || wc[j].status != RDP_WC_SUCCESS)
					done++;
				ok += wc[j].status == RDP_WC_SUCCESS;
			}
			RDP_ASSERT_MSG(rdp_clock_s() < deadline, "no completion for frame %u", i);
		}
	}
	return ok;
}

static void
raw_close(struct raw_peer *r)
{
	close(r->fd);
	RDP_ASSERT_EQ(rdp_qp_destroy(r->qp), 0);
	RDP_ASSERT_EQ(rdp_cq_destroy(r->cq), 0);
	r->qp = NULL;
	r->cq = NULL;
}

/* Wait until the endpoint of the last case is gone, buffers and all. */
static void
wait_released(const char *what)
{
	double deadline = rdp_clock_s() + 5;

	while (!__atomic_load_n(&srv.closed, __ATOMIC_ACQUIRE) || rdp_endpoint_count() != 0) {
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "%s: endpoint not released (%u alive, state %s)",
			       what, rdp_endpoint_count(),
			       rdp_ep_state_str(__atomic_load_n(&srv.state, __ATOMIC_ACQUIRE)));
		usleep(1000);
	}
	RDP_ASSERT_MSG(strstr(rdp_test_log, "missing") == NULL, "%s: %s", what, rdp_test_log);
}

struct wire_case {
	const char *what;
	struct frame frames[12];
	unsigned int n;          /* frames to send */
	uint64_t delivered;      /* messages the server must deliver first */
	int err;                 /* the endpoint's error */
	const char *log;         /* what the server's log must say */
};

#define F1 (IMM_FIRST | IMM_LAST)
/* a rendezvous control message (lib/ep/ep_rndv.c) */
#define CTL (IMM_ACK | IMM_FIRST | IMM_LAST)

/* Rendezvous control payloads: kind, 3 zero bytes, number, then a descriptor's fields. */
static const uint8_t fin_0[32] = { 2, 0, 0, 0, 0, 0, 0, 0 };
static const uint8_t rts_1[32] = { 1, 0, 0, 0, 1, 0, 0, 0, 0, 16 };          /* number 1 */
static const uint8_t rts_huge[32] = { 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };   /* 16 MiB */
static const uint8_t rts_wrap[32] = { 1, 0, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0,
				      0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t rts_ok[32] = { 1, 0, 0, 0, 0, 0, 0, 0, 16 };            /* 16 bytes */
static const uint8_t rts_pad[32] = { 1, 0, 7, 0, 0, 0, 0, 0, 0, 16 };

static const struct wire_case cases[] = {
	{ "a send without immediate data",
	  { { .imm = F1, .len = 10 }, { .no_imm = true, .len = 10 } }, 2, 1, -EPROTO,
	  "broke the protocol: message without immediate data" },
	{ "a SEND number skipped",
	  { { .imm = F1, .len = 10 }, { .own_seq = true, .imm = F1 | IMM_SEQ(5), .len = 10 } },
	  2, 1, -EPROTO,
	  "SEND 5 (mod 8192) arrived where 1 was expected: the transport lost SENDs" },
	/* a copy (as rxe makes them: empty, same immediate data) is dropped, not
	 * delivered; the stream goes on until a number is skipped */
	{ "a SEND delivered twice",
	  { { .imm = F1, .len = 10 }, { .own_seq = true, .imm = F1 | IMM_SEQ(0), .len = 0 },
	    { .own_seq = true, .imm = F1 | IMM_SEQ(1), .len = 10 },
	    { .own_seq = true, .imm = F1 | IMM_SEQ(9), .len = 10 } }, 4, 2, -EPROTO,
	  "SEND 0 (mod 8192) arrived again where 1 was expected: the transport delivered it "
	  "twice; dropped (1 so far)" },
	{ "credits returned that were never used",
	  { { .imm = F1, .len = 10 }, { .imm = F1 | 3, .len = 10 } }, 2, 1, -EPROTO,
	  "broke the protocol: more credits returned than used (0x3)" },
	{ "a pure ack with payload",
	  { { .imm = IMM_ACK, .len = 16 } }, 1, 0, -EPROTO,
	  "broke the protocol: pure ack with payload or framing" },
	{ "a pure ack with framing",
	  { { .imm = IMM_ACK | IMM_FIRST, .len = 0 } }, 1, 0, -EPROTO,
	  "broke the protocol: pure ack with payload or framing" },
	{ "a chunk longer than agreed",
	  { { .imm = F1, .len = RAW_BUF }, { .imm = F1, .len = RAW_BUF + 64 } }, 2, 1, -EPROTO,
	  "broke the protocol: chunk longer than the agreed chunk size (0x440)" },
	{ "a new message before the last ended",
	  { { .imm = IMM_FIRST, .len = 100 }, { .imm = F1, .len = 100 } }, 2, 0, -EPROTO,
	  "broke the protocol: new message before the last one ended" },
	{ "a continuation without a first chunk",
	  { { .imm = F1, .len = 1 }, { .imm = IMM_LAST, .len = 100 } }, 2, 1, -EPROTO,
	  "broke the protocol: continuation chunk without a first one" },
	{ "a message over max_msg_size",
	  { { .imm = F1, .len = 7 }, { .imm = IMM_FIRST, .len = RAW_BUF },
	    { .len = RAW_BUF }, { .len = RAW_BUF }, { .len = RAW_BUF },
	    { .imm = IMM_LAST, .len = 1 } }, 6, 1, -EPROTO,
	  "broke the protocol: message longer than max_msg_size (0x1)" },
	{ "a rendezvous control message of an unknown kind",
	  { { .imm = F1, .len = 10 }, { .imm = CTL, .len = 8 } }, 2, 1, -EPROTO,
	  "broke the protocol: control message field 'kind' = 90, expected 1 "
	  "(descriptor), 2 (FIN), 3 (give-back) or 4 (close notice)" },
	{ "an empty rendezvous control message",
	  { { .imm = CTL, .len = 0 } }, 1, 0, -EPROTO,
	  "broke the protocol: rendezvous control message of no bytes or over a chunk (0x0)" },
	{ "a descriptor inside a message",
	  { { .imm = IMM_FIRST, .len = 100 }, { .imm = CTL, .len = 32, .payload = rts_ok } },
	  2, 0, -EPROTO, "broke the protocol: control message field 'kind' = 1 inside a message "
	  "(only a FIN, 2, may come between its chunks)" },
	{ "a FIN inside a message is a FIN like any other (this one answers nothing)",
	  { { .imm = IMM_FIRST, .len = 100 }, { .imm = CTL, .len = 8, .payload = fin_0 } },
	  2, 0, -EPROTO, "broke the rendezvous protocol: FIN field 'number' = 0, expected 0 (no "
	  "descriptor was sent for it)" },
	{ "a FIN no message waits for",
	  { { .imm = CTL, .len = 8, .payload = fin_0 } }, 1, 0, -EPROTO,
	  "broke the rendezvous protocol: FIN field 'number' = 0, expected 0 (no descriptor "
	  "was sent for it)" },
	{ "a FIN of the wrong length",
	  { { .imm = CTL, .len = 12, .payload = fin_0 } }, 1, 0, -EPROTO,
	  "broke the rendezvous protocol: FIN of 12 bytes (field 'length' or 'padding')" },
	{ "a rendezvous descriptor out of order",
	  { { .imm = CTL, .len = 32, .payload = rts_1 } }, 1, 0, -EPROTO,
	  "descriptor field 'number' = 1 (0x1) refused (number expected 0" },
	{ "a rendezvous descriptor longer than max_msg_size",
	  { { .imm = CTL, .len = 32, .payload = rts_huge } }, 1, 0, -EPROTO,
	  "descriptor field 'length' = 16777216 (0x1000000) refused" },
	{ "a rendezvous descriptor that wraps the address space",
	  { { .imm = CTL, .len = 32, .payload = rts_wrap } }, 1, 0, -EPROTO,
	  "descriptor field 'address' = 18446744073709551615 (0xffffffffffffffff) refused" },
	{ "a rendezvous descriptor with padding set",
	  { { .imm = CTL, .len = 32, .payload = rts_pad } }, 1, 0, -EPROTO,
	  "descriptor field 'padding'" },
	{ "a rendezvous descriptor of the wrong length",
	  { { .imm = CTL, .len = 24, .payload = rts_1 } }, 1, 0, -EPROTO,
	  "descriptor field 'length of the message' = 24 (0x18) refused" },
	{ "a frame larger than the receive buffer",
	  { { .imm = F1, .len = 8 * RAW_BUF } }, 1, 0, -EIO,
	  "receive completed with LOC_LEN_ERR" },
};

RDP_TEST(e2e, ep_hostile_frames_fail_the_endpoint_naming_the_rule_and_leak_nothing)
{
	struct rdp_ep_params prm = { .ops = &srv_ops, .lcore = -1 };
	struct raw_peer r = { 0 };
	struct rdp_cfg *cfg;
	unsigned int i;
	int port;

	rdp_test_eal_init("0-1");
	cfg = stream_cfg("shm", SRV_MAX_MSG);
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	port = rdp_listen("127.0.0.1:0", &prm);
	RDP_ASSERT(port > 0);
	rdp_test_log_capture();

	r.dev = rdp_dev_open("shm");
	RDP_ASSERT(r.dev != NULL);
	r.pd = rdp_pd_alloc(r.dev);
	r.mr = rdp_mr_alloc(r.pd, (size_t)(RAW_SQ + RAW_RQ) * RAW_BUF + 8 * RAW_BUF, -1,
			    RDP_ACCESS_LOCAL_WRITE);
	RDP_ASSERT(r.pd != NULL && r.mr != NULL);

	for (i = 0; i < RTE_DIM(cases); i++) {
		const struct wire_case *c = &cases[i];
		double deadline = rdp_clock_s() + 5;

		rdp_test_log_capture();
		memset(&srv, 0, sizeof(srv));
		/* it serves READs (rendezvous descriptors are refused for their fields) */
		r.rd_dest = 16;
		raw_establish(&r, port);
		while (__atomic_load_n(&srv.ep, __ATOMIC_ACQUIRE) == NULL)
			RDP_ASSERT_MSG(rdp_clock_s() < deadline, "%s: not established", c->what);
		raw_send(&r, c->frames, c->n);
		wait_log(c->what, c->log);
		while (__atomic_load_n(&srv.state, __ATOMIC_ACQUIRE) < RDP_EP_FAILED)
			RDP_ASSERT_MSG(rdp_clock_s() < deadline, "%s: endpoint still %s", c->what,
				       rdp_ep_state_str(srv.state));
		RDP_ASSERT_EQ(__atomic_load_n(&srv.received, __ATOMIC_ACQUIRE), c->delivered);
		raw_close(&r);
		wait_released(c->what);
		RDP_ASSERT_MSG(srv.err == c->err, "%s: error %d, expected %d", c->what, srv.err,
			       c->err);
		printf("ok: %s: %s\n", c->what, c->log);
	}

	/* a descriptor from a peer whose hello serves no READ: the endpoint may
	 * not READ its message, and says so */
	{
		static const struct frame rts = { .imm = CTL, .len = 32, .payload = rts_ok };
		double deadline = rdp_clock_s() + 5;

		rdp_test_log_capture();
		memset(&srv, 0, sizeof(srv));
		r.rd_dest = 0;
		raw_establish(&r, port);
		while (__atomic_load_n(&srv.ep, __ATOMIC_ACQUIRE) == NULL)
			RDP_ASSERT_MSG(rdp_clock_s() < deadline, "no-READ peer: not established");
		raw_send(&r, &rts, 1);
		wait_log("a descriptor to an endpoint that issues no READ",
			 "a descriptor, but this endpoint issues no READ (read depth 0 agreed in "
			 "the handshake)");
		raw_close(&r);
		wait_released("a descriptor to an endpoint that issues no READ");
		RDP_ASSERT_EQ(__atomic_load_n(&srv.received, __ATOMIC_ACQUIRE), 0);
		RDP_ASSERT_EQ(srv.err, -EPROTO);
		printf("ok: a descriptor to an endpoint that issues no READ fails it\n");
		r.rd_dest = 16;
	}

	/* a peer that starts a message and never ends it holds only the
	 * receive buffers it was granted, and they come back when it goes */
	rdp_test_log_capture();
	memset(&srv, 0, sizeof(srv));
	raw_establish(&r, port);
	{
		struct frame hold[RAW_RQ - 8];
		unsigned int k;

		while (__atomic_load_n(&srv.ep, __ATOMIC_ACQUIRE) == NULL)
			usleep(1000);
		for (k = 0; k < RTE_DIM(hold); k++)
			hold[k] = (struct frame){ .imm = k == 0 ? IMM_FIRST : 0, .len = 0 };
		RDP_ASSERT_EQ(raw_send(&r, hold, RTE_DIM(hold)), RTE_DIM(hold));
		RDP_ASSERT_EQ(__atomic_load_n(&srv.received, __ATOMIC_ACQUIRE), 0);
		raw_close(&r);
		wait_released("an endless message");
		printf("ok: an endless message holds %zu buffers until its peer goes\n",
		       RTE_DIM(hold));
	}

	/* garbage on the control socket of an established endpoint */
	rdp_test_log_capture();
	memset(&srv, 0, sizeof(srv));
	raw_establish(&r, port);
	while (__atomic_load_n(&srv.ep, __ATOMIC_ACQUIRE) == NULL)
		usleep(1000);
	RDP_ASSERT(send(r.fd, "x", 1, 0) == 1);
	wait_log("control garbage", "carried unexpected bytes");
	while (__atomic_load_n(&srv.state, __ATOMIC_ACQUIRE) < RDP_EP_FAILED)
		usleep(1000);
	raw_close(&r);
	wait_released("control garbage");
	RDP_ASSERT_EQ(srv.err, -EPROTO);
	printf("ok: bytes on an established control connection fail it with EPROTO\n");

	/* the listener still serves a well-behaved raw peer */
	rdp_test_log_capture();
	memset(&srv, 0, sizeof(srv));
	raw_establish(&r, port);
	{
		struct frame good[3] = { { .imm = F1, .len = 10 }, { .imm = IMM_FIRST, .len = RAW_BUF },
					 { .imm = IMM_LAST, .len = 5 } };
		double deadline = rdp_clock_s() + 5;

		RDP_ASSERT_EQ(raw_send(&r, good, 3), 3);
		while (__atomic_load_n(&srv.received, __ATOMIC_ACQUIRE) < 2)
			RDP_ASSERT_MSG(rdp_clock_s() < deadline, "good messages not delivered");
		RDP_ASSERT_EQ(srv.last_len, RAW_BUF + 5);
		RDP_ASSERT_EQ(srv.before_established, 0);
	}
	raw_close(&r);
	wait_released("a good peer");
	rdp_test_log_release();

	RDP_ASSERT_EQ(rdp_mr_free(r.mr), 0);
	RDP_ASSERT_EQ(rdp_pd_free(r.pd), 0);
	RDP_ASSERT_EQ(rdp_dev_close(r.dev), 0);
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}

/*
 * A client may send as soon as it sent READY, before the server's poller
 * has taken the endpoint over: every credit the server granted in its
 * HELLO_ACK must be backed by a posted receive by then, and the server's
 * application hears ESTABLISHED before the first of those messages.
 */
RDP_TEST(e2e, ep_peer_may_spend_every_credit_right_after_ready)
{
	struct rdp_ep_params prm = { .ops = &srv_ops, .lcore = -1 };
	struct frame burst[RAW_RQ - 8];
	struct raw_peer r = { 0 };
	struct rdp_cfg *cfg;
	double deadline;
	unsigned int k, round;
	int port;

	rdp_test_eal_init("0-1");
	cfg = stream_cfg("shm", SRV_MAX_MSG);
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	port = rdp_listen("127.0.0.1:0", &prm);
	RDP_ASSERT(port > 0);
	r.dev = rdp_dev_open("shm");
	RDP_ASSERT(r.dev != NULL);
	r.pd = rdp_pd_alloc(r.dev);
	r.mr = rdp_mr_alloc(r.pd, (size_t)(RAW_SQ + RAW_RQ) * RAW_BUF + 8 * RAW_BUF, -1,
			    RDP_ACCESS_LOCAL_WRITE);
	RDP_ASSERT(r.pd != NULL && r.mr != NULL);
	for (k = 0; k < RTE_DIM(burst); k++)
		burst[k] = (struct frame){ .imm = IMM_FIRST | IMM_LAST, .len = 8 };
	for (round = 0; round < 20; round++) {
		memset(&srv, 0, sizeof(srv));
		raw_establish(&r, port);
		/* no wait: the server may not have admitted the endpoint yet */
		RDP_ASSERT_MSG(raw_send(&r, burst, RTE_DIM(burst)) == RTE_DIM(burst),
			       "round %u: a send within the granted credits failed (RNR?)", round);
		deadline = rdp_clock_s() + 5;
		while (__atomic_load_n(&srv.received, __ATOMIC_ACQUIRE) < RTE_DIM(burst))
			RDP_ASSERT_MSG(rdp_clock_s() < deadline, "round %u: %" PRIu64 " of %zu delivered",
				       round, srv.received, RTE_DIM(burst));
		while (__atomic_load_n(&srv.state, __ATOMIC_ACQUIRE) != RDP_EP_ESTABLISHED)
			RDP_ASSERT_MSG(rdp_clock_s() < deadline, "round %u: no ESTABLISHED", round);
		RDP_ASSERT_MSG(srv.before_established == 0, "round %u: %" PRIu64 " messages "
			       "delivered before ESTABLISHED", round, srv.before_established);
		raw_close(&r);
		wait_released("credits right after READY");
	}
	printf("20 rounds: %zu messages sent right after READY, all delivered\n",
	       RTE_DIM(burst));
	RDP_ASSERT_EQ(rdp_mr_free(r.mr), 0);
	RDP_ASSERT_EQ(rdp_pd_free(r.pd), 0);
	RDP_ASSERT_EQ(rdp_dev_close(r.dev), 0);
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}

/* READY a little later, from another thread: rdp_fini() is waiting by then. */
static void *
ready_later(void *arg)
{
	usleep(200000);
	raw_send_ready(arg);
	return NULL;
}

RDP_TEST(e2e, ep_fini_closes_what_a_handshake_admits_while_it_waits)
{
	struct rdp_ep_params prm = { .ops = &srv_ops, .lcore = -1 };
	struct raw_peer r = { 0 };
	struct rdp_cfg *cfg;
	pthread_t t;
	double t0;
	int port, ret;

	rdp_test_eal_init("0-1");
	cfg = stream_cfg("shm", SRV_MAX_MSG);
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	port = rdp_listen("127.0.0.1:0", &prm);
	RDP_ASSERT(port > 0);
	r.dev = rdp_dev_open("shm");
	RDP_ASSERT(r.dev != NULL);
	r.pd = rdp_pd_alloc(r.dev);
	r.mr = rdp_mr_alloc(r.pd, (size_t)(RAW_SQ + RAW_RQ) * RAW_BUF + 8 * RAW_BUF, -1,
			    RDP_ACCESS_LOCAL_WRITE);
	RDP_ASSERT(r.pd != NULL && r.mr != NULL);
	memset(&srv, 0, sizeof(srv));
	/* the server's endpoint exists, but only READY makes it the application's */
	raw_handshake(&r, port, false);
	RDP_ASSERT_EQ(pthread_create(&t, NULL, ready_later, &r), 0);
	t0 = rdp_clock_s();
	ret = rdp_fini();
	RDP_ASSERT_EQ(pthread_join(t, NULL), 0);
	RDP_ASSERT_MSG(ret == 0, "rdp_fini: %s", rdp_err_msg());
	RDP_ASSERT(__atomic_load_n(&srv.closed, __ATOMIC_ACQUIRE));
	printf("rdp_fini closed an endpoint admitted while it waited, in %.2f s\n",
	       rdp_clock_s() - t0);
	raw_close(&r);
	RDP_ASSERT_EQ(rdp_mr_free(r.mr), 0);
	RDP_ASSERT_EQ(rdp_pd_free(r.pd), 0);
	RDP_ASSERT_EQ(rdp_dev_close(r.dev), 0);
	rdp_cfg_free(cfg);
	return 0;
}

/* ---- a hostile peer on a shared receive queue, among busy endpoints ---- */

/* Give-back payloads (lib/ep/ep_srq.c): kind 3, 3 zero bytes, extra (u32 LE). */
static const uint8_t gb_100[32] = { 3, 0, 0, 0, 100 };
static const uint8_t gb_0[32] = { 3 };

static const struct wire_case srq_cases[] = {
	/* the application holds what arrives: no credit comes back */
	{ "a SEND beyond the grant",
	  { { .imm = F1, .len = 10 }, { .imm = F1, .len = 10 }, { .imm = F1, .len = 10 },
	    { .imm = F1, .len = 10 }, { .imm = F1, .len = 10 } }, 5, 4, -EPROTO,
	  "broke the leasing protocol: a SEND beyond its grant (it holds no credit of its "
	  "lease of 4, 0 sent to it, and 0 FIN credits" },
	{ "a give-back of more than the peer holds",
	  { { .imm = CTL, .len = 8, .payload = gb_100 } }, 1, 0, -EPROTO,
	  "broke the leasing protocol: a give-back of 1 + 100 credits, but it holds at most 4 "
	  "of its lease of 4, floor 4" },
	{ "a give-back below the floor",
	  { { .imm = CTL, .len = 8, .payload = gb_0 } }, 1, 0, -EPROTO,
	  "broke the leasing protocol: a give-back of 1 + 0 credits" },
	{ "a give-back of the wrong length",
	  { { .imm = CTL, .len = 12, .payload = gb_0 } }, 1, 0, -EPROTO,
	  "broke the leasing protocol: give-back of 12 bytes (field 'length' or 'padding')" },
	/* a FIN spends a credit of the SRQ's FIN reserve that a descriptor brought */
	{ "a FIN no descriptor brought a credit for",
	  { { .imm = CTL, .len = 8, .payload = fin_0 } }, 1, 0, -EPROTO,
	  "broke the rendezvous protocol: a FIN with no credit for it (FIN credits it held 0, "
	  "lease credits it held 4" },
};

#define SRQ_BUSY 4

/* The SRQ of lcore 1, now. */
static const struct rdp_srq_stats *
srq_now(struct rdp_srq_stats *q)
{
	RDP_ASSERT_EQ(rdp_lcore_srq_stats_get(1, q), 0);
	return q;
}

RDP_TEST(e2e, srq_hostile_peer_fails_alone_and_busy_endpoints_lose_nothing)
{
	static struct stream_side bs[2 * SRQ_BUSY];
	static char names[2 * SRQ_BUSY][16];
	static const char *const kv[][2] = {
		{ "srq", "on" }, { "srq_size", "512" }, { "srq_floor", "4" },
		{ "srq_lease_max", "16" }, { "rndv_threshold", "4096" }, { "max_endpoints", "32" },
	};
	struct stream_side *sides[2 * SRQ_BUSY];
	struct rdp_ep_params prm = { .ops = &srv_ops, .lcore = -1 }, p;
	struct raw_peer r = { 0 };
	struct rdp_srq_stats q;
	struct rdp_ep_stats st;
	struct rdp_cfg *cfg;
	char addr[64];
	unsigned int i, k;
	double deadline;
	int port, bport;

	rdp_test_eal_init("0-1");
	cfg = stream_cfg("shm", SRV_MAX_MSG);
	for (i = 0; i < RTE_DIM(kv); i++)
		RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, kv[i][0], kv[i][1], "test"), 0);
	RDP_ASSERT_MSG(rdp_cfg_validate(cfg) == 0, "%s", rdp_err_msg());
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	port = rdp_listen("127.0.0.1:0", &prm);
	RDP_ASSERT(port > 0);
	/* busy pairs on the same poller and SRQ, streaming all along */
	for (i = 0; i < 2 * SRQ_BUSY; i++) {
		snprintf(names[i], sizeof(names[i]), "busy%u", i);
		stream_side_init(&bs[i], names[i], i + 1, (i ^ 1) + 1, 3000, SRV_MAX_MSG, 8, false);
		sides[i] = &bs[i];
	}
	for (i = 0; i < SRQ_BUSY; i++) {
		stream_params(&bs[2 * i], &p);
		bport = rdp_listen("127.0.0.1:0", &p);
		RDP_ASSERT(bport > 0);
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", bport);
		stream_params(&bs[2 * i + 1], &p);
		RDP_ASSERT(rdp_connect(addr, &p) != NULL);
	}
	r.dev = rdp_dev_open("shm");
	RDP_ASSERT(r.dev != NULL);
	r.pd = rdp_pd_alloc(r.dev);
	r.mr = rdp_mr_alloc(r.pd, (size_t)(RAW_SQ + RAW_RQ) * RAW_BUF + 8 * RAW_BUF, -1,
			    RDP_ACCESS_LOCAL_WRITE);
	RDP_ASSERT(r.pd != NULL && r.mr != NULL);
	for (i = 0; i < RTE_DIM(srq_cases); i++) {
		const struct wire_case *c = &srq_cases[i];

		deadline = rdp_clock_s() + 5;
		rdp_test_log_capture();
		memset(&srv, 0, sizeof(srv));
		srv.hold = i == 0;
		raw_establish(&r, port);
		while (__atomic_load_n(&srv.ep, __ATOMIC_ACQUIRE) == NULL)
			RDP_ASSERT_MSG(rdp_clock_s() < deadline, "%s: not established", c->what);
		raw_send(&r, c->frames, c->n);
		wait_log(c->what, c->log);
		RDP_ASSERT_MSG(strstr(rdp_test_log, "peer 127.0.0.1:") != NULL, "%s", rdp_test_log);
		while (!__atomic_load_n(&srv.closed, __ATOMIC_ACQUIRE))
			RDP_ASSERT_MSG(rdp_clock_s() < deadline, "%s: endpoint still %s", c->what,
				       rdp_ep_state_str(srv.state));
		RDP_ASSERT_EQ(__atomic_load_n(&srv.received, __ATOMIC_ACQUIRE), c->delivered);
		RDP_ASSERT_MSG(srv.err == c->err, "%s: error %d, expected %d", c->what, srv.err,
			       c->err);
		/* the lease comes back only once the messages held are freed */
		RDP_ASSERT_EQ(rdp_lcore_srq_stats_get(1, &q), 0);
		RDP_ASSERT_EQ(q.members, 2 * SRQ_BUSY + (srv.nkept > 0));
		for (k = 0; k < __atomic_load_n(&srv.nkept, __ATOMIC_ACQUIRE); k++)
			rdp_msg_free(srv.kept[k]);
		while (srq_now(&q)->members != 2 * SRQ_BUSY)
			RDP_ASSERT_MSG(rdp_clock_s() < deadline, "%s: %u members", c->what, q.members);
		raw_close(&r);
		printf("ok: %s: %s\n", c->what, c->log);
	}
	/* the busy endpoints lost and duplicated nothing, and never met an empty SRQ */
	RDP_ASSERT_EQ(stream_pump(sides, 2 * SRQ_BUSY, 120), 0);
	for (i = 0; i < 2 * SRQ_BUSY; i++) {
		RDP_ASSERT_MSG(bs[i].error[0] == '\0', "%s", bs[i].error);
		RDP_ASSERT_EQ(bs[i].done, bs[i].count);
		RDP_ASSERT_EQ(bs[i].failed, 0);
		RDP_ASSERT_EQ(bs[i].received, bs[i].expect);
		rdp_ep_stats_get(stream_ep(&bs[i]), &st);
		RDP_ASSERT_EQ(st.rnr, 0);
		RDP_ASSERT_EQ(st.enomem, 0);
		RDP_ASSERT_EQ(st.msgs_received, bs[i].expect);
	}
	for (i = 0; i < 2 * SRQ_BUSY; i++)
		rdp_ep_close(stream_ep(&bs[i]));
	for (i = 0; i < 2 * SRQ_BUSY; i++)
		stream_wait_closed(&bs[i]);
	deadline = rdp_clock_s() + 5;
	while (srq_now(&q)->members != 0 || q.posted != q.size)
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "%u members, %u of %u posted", q.members,
			       q.posted, q.size);
	RDP_ASSERT_EQ(q.free + q.fin_reserve, q.size);
	RDP_ASSERT_EQ(q.fin_free, q.fin_reserve);
	printf("%u busy endpoints exact; SRQ whole again: %u of %u free, %u posted\n",
	       2 * SRQ_BUSY, q.free, q.size, q.posted);
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_mr_free(r.mr), 0);
	RDP_ASSERT_EQ(rdp_pd_free(r.pd), 0);
	RDP_ASSERT_EQ(rdp_dev_close(r.dev), 0);
	rdp_cfg_free(cfg);
	return 0;
}
