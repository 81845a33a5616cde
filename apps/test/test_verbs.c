/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs driver on a real verbs stack (suite rxe). They use the driver
 * only through lib/dev, so they read as the device contract on Soft-RoCE.
 *
 * On a host without an RDMA device every test skips and says why; the VM
 * lane (devtools/rxe-vm.sh) runs them inside a qemu guest with two rxe
 * devices, rxe0 and rxe1, on two NICs joined by a virtual wire.
 *
 * Devices: the first side opens `--driver SPEC` when it names the verbs
 * driver, else `verbs` (the first active port); the second "host" of the
 * two-process tests opens $RDP_TEST_PEER_DRIVER, else `verbs:device=rxe1`.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "legacy_window.h"
#include "rdp_credit.h"
#include "rdp_dev.h"
#include "rdp_test.h"

/* Transport parameters of every test: an RNR is fatal and visible. */
static const struct rdp_qp_conn_params conn_strict = {
	.path_mtu = 0, .rnr_retry = 0, .retry_cnt = 7, .timeout = 14, .min_rnr_timer = 12,
};

static const char *
spec_a(void)
{
	const char *d = rdp_test_driver();

	return strncmp(d, "verbs", 5) == 0 ? d : "verbs";
}

static const char *
spec_b(void)
{
	const char *e = getenv("RDP_TEST_PEER_DRIVER");

	return e != NULL && e[0] != '\0' ? e : "verbs:device=rxe1";
}

/* Open @p spec; NULL (after printing why) when this host has no such device. */
static struct rdp_dev *
open_dev(const char *spec)
{
	struct rdp_dev *dev = rdp_dev_open(spec);

	if (dev == NULL) {
		RDP_ASSERT_MSG(rte_errno == ENODEV || rte_errno == ENOENT,
			       "rdp_dev_open(%s): %s", spec, rdp_err_msg());
		printf("rdp_dev_open(%s): %s\n", spec, rdp_err_msg());
		fflush(stdout);
	}
	return dev;
}

#define SKIP_NO_DEVICE(spec) \
	rdp_test_skip("no RDMA device for '%s' here; the rxe suite runs inside " \
		      "the VM lane (devtools/rxe-vm.sh)", (spec))

/* ---------------------------------------------------------------------- */
/* One side: PD, CQ, QP and a buffer                                      */
/* ---------------------------------------------------------------------- */

struct side {
	struct rdp_dev *dev;
	struct rdp_pd *pd;
	struct rdp_cq *cq;
	struct rdp_qp *qp;
	struct rdp_mr *mr;
	uint8_t *buf;
};

static void
side_init(struct side *s, struct rdp_dev *dev, uint32_t cqe, const struct rdp_qp_cap *cap,
	  size_t buf_len)
{
	struct rdp_qp_init_attr ia = { .cap = *cap };

	memset(s, 0, sizeof(*s));
	s->dev = dev;
	s->pd = rdp_pd_alloc(dev);
	RDP_ASSERT_MSG(s->pd != NULL, "pd: %s", rdp_err_msg());
	s->cq = rdp_cq_create(dev, cqe, -1);
	RDP_ASSERT_MSG(s->cq != NULL, "cq: %s", rdp_err_msg());
	ia.send_cq = s->cq;
	ia.recv_cq = s->cq;
	s->qp = rdp_qp_create(s->pd, &ia);
	RDP_ASSERT_MSG(s->qp != NULL, "qp: %s", rdp_err_msg());
	s->mr = rdp_mr_alloc(s->pd, buf_len, -1, RDP_ACCESS_LOCAL_WRITE |
			     RDP_ACCESS_REMOTE_WRITE);
	RDP_ASSERT_MSG(s->mr != NULL, "mr: %s", rdp_err_msg());
	s->buf = s->mr->addr;
}

static void
side_fini(struct side *s)
{
	RDP_ASSERT_EQ(rdp_qp_destroy(s->qp), 0);
	RDP_ASSERT_EQ(rdp_mr_free(s->mr), 0);
	RDP_ASSERT_EQ(rdp_cq_destroy(s->cq), 0);
	RDP_ASSERT_EQ(rdp_pd_free(s->pd), 0);
}

static void
connect_pair(struct side *a, struct side *b)
{
	struct rdp_qp_addr aa, ba;

	RDP_ASSERT_EQ(rdp_qp_local_addr(a->qp, &aa), 0);
	RDP_ASSERT_EQ(rdp_qp_local_addr(b->qp, &ba), 0);
	RDP_ASSERT_MSG(rdp_qp_connect(a->qp, &ba, &conn_strict) == 0, "%s", rdp_err_msg());
	RDP_ASSERT_MSG(rdp_qp_connect(b->qp, &aa, &conn_strict) == 0, "%s", rdp_err_msg());
}

static void
post_send1(struct side *s, uint64_t wr_id, uint8_t opcode, uint8_t flags,
	   const struct rdp_sge *sge, uint32_t num_sge, uint32_t imm)
{
	struct rdp_send_wr wr = {
		.wr_id = wr_id, .sg_list = sge, .num_sge = num_sge, .opcode = opcode,
		.flags = flags, .imm = imm,
	};
	int err = 0;

	RDP_ASSERT_MSG(rdp_post_send(s->qp, &wr, 1, &err) == 1, "post_send: %d", err);
}

static void
post_recv1(struct side *s, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct rdp_sge sge = { (uintptr_t)(s->buf + off), len, s->mr->lkey };
	struct rdp_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };
	int err = 0;

	RDP_ASSERT_MSG(rdp_post_recv(s->qp, &wr, 1, &err) == 1, "post_recv: %d", err);
}

/* Poll until @p want completions arrived or @p ms passed; returns how many. */
static int
poll_for(struct rdp_cq *cq, struct rdp_wc *wc, int want, double ms)
{
	double end = (rdp_clock_s() * 1e3) + ms;
	int got = 0;

	while (got < want && (rdp_clock_s() * 1e3) < end) {
		int n = rdp_poll_cq(cq, wc + got, want - got);

		RDP_ASSERT_MSG(n >= 0, "rdp_poll_cq: %d", n);
		got += n;
	}
	return got;
}

static void
print_wc(const char *who, const struct rdp_wc *w)
{
	printf("  %s wc: wr_id=%#" PRIx64 " status=%s opcode=%u byte_len=%u imm=%s%#x\n",
	       who, w->wr_id, rdp_wc_status_str(w->status), w->opcode, w->byte_len,
	       (w->wc_flags & RDP_WC_WITH_IMM) ? "" : "none:", w->imm);
}

static const struct rdp_qp_cap cap_small = {
	.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1,
};

/* ---------------------------------------------------------------------- */
/* Device choice                                                          */
/* ---------------------------------------------------------------------- */

RDP_TEST(rxe, rxe_default_spec_picks_verbs_with_ipv4_roce_gid)
{
	static const uint8_t v4_prefix[12] = { [10] = 0xff, [11] = 0xff };
	char spec[RDP_DEV_SPEC_MAX], why[256];
	struct rdp_dev_attr attr;
	struct rdp_dev *dev;

	dev = open_dev("verbs");
	if (dev == NULL)
		return SKIP_NO_DEVICE("verbs");
	RDP_ASSERT_EQ(rdp_dev_default_spec(spec, sizeof(spec), why, sizeof(why)), 0);
	printf("default spec: %s (%s)\n", spec, why);
	RDP_ASSERT_MSG(strncmp(spec, "verbs:", 6) == 0, "default spec %s", spec);

	RDP_ASSERT_EQ(rdp_dev_query(dev, &attr), 0);
	printf("device %s port %u link %u mtu %u gid_index %u max_sge %u max_qp_wr %u\n",
	       attr.name, attr.port, attr.link_layer, attr.active_mtu, attr.gid_index,
	       attr.max_sge, attr.max_qp_wr);
	RDP_ASSERT_STR_EQ(attr.driver, "verbs");
	RDP_ASSERT_EQ(attr.port_active, 1);
	RDP_ASSERT(attr.active_mtu >= 256 && attr.active_mtu <= 4096);
	RDP_ASSERT(attr.max_sge >= 1 && attr.max_qp_wr >= 16);
	if (attr.link_layer == RDP_LINK_ETHERNET)
		RDP_ASSERT_MSG(memcmp(attr.gid, v4_prefix, sizeof(v4_prefix)) == 0,
			       "the automatic GID is not IPv4-mapped");
	else
		RDP_ASSERT(attr.lid != 0);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);

	RDP_ASSERT(rdp_dev_open("verbs:device=nosuch0") == NULL);
	RDP_ASSERT_EQ(rte_errno, ENOENT);
	RDP_ASSERT_MSG(strstr(rdp_err_msg(), "no RDMA device named 'nosuch0'") != NULL,
		       "%s", rdp_err_msg());
	RDP_ASSERT(rdp_dev_open("verbs:gid_index=250") == NULL);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	RDP_ASSERT(rdp_dev_open("verbs:color=blue") == NULL);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Connection                                                             */
/* ---------------------------------------------------------------------- */

RDP_TEST(rxe, rxe_qp_pair_connects_to_rts_at_min_of_both_mtus)
{
	struct rdp_qp_addr aa, ba;
	struct rdp_qp_attr qa;
	struct rdp_dev_attr attr;
	struct side a, b;
	struct rdp_dev *dev;

	dev = open_dev(spec_a());
	if (dev == NULL)
		return SKIP_NO_DEVICE(spec_a());
	RDP_ASSERT_EQ(rdp_dev_query(dev, &attr), 0);
	side_init(&a, dev, 64, &cap_small, 4096);
	side_init(&b, dev, 64, &cap_small, 4096);

	RDP_ASSERT_EQ(rdp_qp_local_addr(a.qp, &aa), 0);
	RDP_ASSERT_EQ(rdp_qp_local_addr(b.qp, &ba), 0);
	RDP_ASSERT_EQ(aa.qpn, a.qp->qp_num);
	RDP_ASSERT(aa.qpn != ba.qpn);
	RDP_ASSERT(aa.psn < (1u << 24) && ba.psn < (1u << 24));
	RDP_ASSERT_EQ(aa.mtu, attr.active_mtu);
	RDP_ASSERT(memcmp(aa.gid, attr.gid, RDP_GID_LEN) == 0);
	RDP_ASSERT_EQ(rdp_qp_query(a.qp, &qa), 0);
	RDP_ASSERT_EQ(qa.state, RDP_QPS_RESET);

	/* the peer claims a smaller MTU: A must use it, B its own */
	ba.mtu = 256;
	RDP_ASSERT_MSG(rdp_qp_connect(a.qp, &ba, &conn_strict) == 0, "%s", rdp_err_msg());
	RDP_ASSERT_MSG(rdp_qp_connect(b.qp, &aa, &conn_strict) == 0, "%s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_qp_query(a.qp, &qa), 0);
	RDP_ASSERT_EQ(qa.state, RDP_QPS_RTS);
	RDP_ASSERT_EQ(qa.conn.path_mtu, 256);
	RDP_ASSERT_EQ(qa.conn.rnr_retry, 0);
	RDP_ASSERT_EQ(qa.remote.qpn, ba.qpn);
	RDP_ASSERT_EQ(rdp_qp_query(b.qp, &qa), 0);
	RDP_ASSERT_EQ(qa.state, RDP_QPS_RTS);
	RDP_ASSERT_EQ(qa.conn.path_mtu, attr.active_mtu);

	side_fini(&a);
	side_fini(&b);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Data path                                                              */
/* ---------------------------------------------------------------------- */

RDP_TEST(rxe, rxe_send_with_imm_round_trip_carries_payload_and_imm)
{
	struct rdp_wc wc[4];
	struct side a, b;
	struct rdp_dev *dev;
	struct rdp_sge sge;

	dev = open_dev(spec_a());
	if (dev == NULL)
		return SKIP_NO_DEVICE(spec_a());
	side_init(&a, dev, 64, &cap_small, 4096);
	side_init(&b, dev, 64, &cap_small, 4096);
	connect_pair(&a, &b);

	post_recv1(&b, 0xb0, 1024, 1024);
	post_recv1(&a, 0xa0, 1024, 1024);
	memset(a.buf, 0, 1024);
	snprintf((char *)a.buf, 1024, "hello from QP %u", a.qp->qp_num);
	sge = (struct rdp_sge){ (uintptr_t)a.buf, 100, a.mr->lkey };
	post_send1(&a, 0xa1, RDP_WR_SEND_WITH_IMM, RDP_SEND_SIGNALED, &sge, 1, 0xc0ffee);

	RDP_ASSERT_EQ(poll_for(b.cq, wc, 1, 3000), 1);
	print_wc("B", &wc[0]);
	RDP_ASSERT_EQ(wc[0].status, RDP_WC_SUCCESS);
	RDP_ASSERT_EQ(wc[0].wr_id, 0xb0);
	RDP_ASSERT_EQ(wc[0].opcode, RDP_WC_RECV);
	RDP_ASSERT_EQ(wc[0].byte_len, 100);
	RDP_ASSERT_EQ(wc[0].wc_flags, RDP_WC_WITH_IMM);
	RDP_ASSERT_EQ(wc[0].imm, 0xc0ffee);
	RDP_ASSERT_EQ(wc[0].qp_num, b.qp->qp_num);
	RDP_ASSERT_STR_EQ((char *)b.buf + 1024, (char *)a.buf);

	RDP_ASSERT_EQ(poll_for(a.cq, wc, 1, 3000), 1);
	RDP_ASSERT_EQ(wc[0].status, RDP_WC_SUCCESS);
	RDP_ASSERT_EQ(wc[0].wr_id, 0xa1);
	RDP_ASSERT_EQ(wc[0].opcode, RDP_WC_SEND);

	/* and back, without immediate data */
	memcpy(b.buf, "pong", 5);
	sge = (struct rdp_sge){ (uintptr_t)b.buf, 5, b.mr->lkey };
	post_send1(&b, 0xb1, RDP_WR_SEND, RDP_SEND_SIGNALED, &sge, 1, 0);
	RDP_ASSERT_EQ(poll_for(a.cq, wc, 1, 3000), 1);
	print_wc("A", &wc[0]);
	RDP_ASSERT_EQ(wc[0].wr_id, 0xa0);
	RDP_ASSERT_EQ(wc[0].byte_len, 5);
	RDP_ASSERT_EQ(wc[0].wc_flags, 0);
	RDP_ASSERT_STR_EQ((char *)a.buf + 1024, "pong");
	RDP_ASSERT_EQ(poll_for(b.cq, wc, 1, 3000), 1);
	RDP_ASSERT_EQ(wc[0].wr_id, 0xb1);

	side_fini(&a);
	side_fini(&b);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	return 0;
}

RDP_TEST(rxe, rxe_zero_length_write_completes_without_remote_effect)
{
	struct rdp_send_wr wr = {
		.wr_id = 0xa1, .num_sge = 0, .opcode = RDP_WR_RDMA_WRITE,
		.flags = RDP_SEND_SIGNALED,
	};
	struct rdp_wc wc[4];
	struct side a, b;
	struct rdp_dev *dev;
	struct rdp_sge sge;
	int err, i;

	dev = open_dev(spec_a());
	if (dev == NULL)
		return SKIP_NO_DEVICE(spec_a());
	side_init(&a, dev, 64, &cap_small, 4096);
	side_init(&b, dev, 64, &cap_small, 4096);
	connect_pair(&a, &b);
	memset(b.buf, 0x5a, 4096);
	post_recv1(&b, 0xb0, 1024, 64);
	post_recv1(&b, 0xb1, 2048, 64);

	/* the reclaim form (no address, no key), then one aimed at a real MR */
	for (i = 0; i < 2; i++) {
		if (i == 1) {
			wr.wr_id = 0xa2;
			wr.remote_addr = (uintptr_t)b.buf;
			wr.rkey = b.mr->rkey;
		}
		RDP_ASSERT_EQ(rdp_post_send(a.qp, &wr, 1, &err), 1);
		RDP_ASSERT_EQ(poll_for(a.cq, wc, 1, 3000), 1);
		print_wc("A", &wc[0]);
		RDP_ASSERT_EQ(wc[0].status, RDP_WC_SUCCESS);
		RDP_ASSERT_EQ(wc[0].wr_id, wr.wr_id);
		RDP_ASSERT_EQ(wc[0].opcode, RDP_WC_RDMA_WRITE);
	}
	RDP_ASSERT_EQ(poll_for(b.cq, wc, 1, 200), 0);
	for (i = 0; i < 4096; i++)
		RDP_ASSERT_EQ(b.buf[i], 0x5a);

	/* the receives are still there, in order */
	memcpy(a.buf, "payload", 8);
	sge = (struct rdp_sge){ (uintptr_t)a.buf, 8, a.mr->lkey };
	post_send1(&a, 0xa3, RDP_WR_SEND, 0, &sge, 1, 0);
	RDP_ASSERT_EQ(poll_for(b.cq, wc, 1, 3000), 1);
	RDP_ASSERT_EQ(wc[0].status, RDP_WC_SUCCESS);
	RDP_ASSERT_EQ(wc[0].wr_id, 0xb0);
	RDP_ASSERT_STR_EQ((char *)b.buf + 1024, "payload");

	side_fini(&a);
	side_fini(&b);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	return 0;
}

RDP_TEST(rxe, rxe_gather_list_and_inline_send_deliver_exact_bytes)
{
	struct rdp_qp_cap cap = cap_small;
	struct rdp_qp_init_attr ia;
	struct rdp_dev_attr attr;
	struct rdp_sge sg[4];
	struct rdp_send_wr wr;
	struct rdp_wc wc[4];
	struct side a, b;
	struct rdp_dev *dev;
	uint32_t i, nsge;
	char expect[64];
	int err;

	dev = open_dev(spec_a());
	if (dev == NULL)
		return SKIP_NO_DEVICE(spec_a());
	RDP_ASSERT_EQ(rdp_dev_query(dev, &attr), 0);
	nsge = RTE_MIN(attr.max_sge, 4u);
	cap.max_send_sge = nsge;
	cap.max_inline_data = 32;
	side_init(&a, dev, 64, &cap, 4096);
	side_init(&b, dev, 64, &cap_small, 4096);
	connect_pair(&a, &b);

	/* more SGEs than the device has is refused at creation */
	ia = (struct rdp_qp_init_attr){ .send_cq = a.cq, .recv_cq = a.cq, .cap = cap };
	ia.cap.max_send_sge = attr.max_sge + 1;
	RDP_ASSERT(rdp_qp_create(a.pd, &ia) == NULL);
	RDP_ASSERT_EQ(rte_errno, EINVAL);

	/* gather nsge pieces scattered over the buffer */
	expect[0] = '\0';
	for (i = 0; i < nsge; i++) {
		char piece[8];

		snprintf(piece, sizeof(piece), "<%u..>", i);
		memcpy(a.buf + 512 * (i + 1), piece, 5);
		sg[i] = (struct rdp_sge){ (uintptr_t)(a.buf + 512 * (i + 1)), 5, a.mr->lkey };
		strcat(expect, piece);
	}
	post_recv1(&b, 0xb0, 0, 256);
	post_recv1(&b, 0xb1, 256, 256);
	post_send1(&a, 0xa0, RDP_WR_SEND, RDP_SEND_SIGNALED, sg, nsge, 0);
	RDP_ASSERT_EQ(poll_for(b.cq, wc, 1, 3000), 1);
	RDP_ASSERT_EQ(wc[0].status, RDP_WC_SUCCESS);
	RDP_ASSERT_EQ(wc[0].byte_len, 5 * nsge);
	RDP_ASSERT(memcmp(b.buf, expect, 5 * nsge) == 0);
	RDP_ASSERT_EQ(poll_for(a.cq, wc, 1, 3000), 1);

	/* one SGE too many is refused, nothing posted */
	wr = (struct rdp_send_wr){ .wr_id = 0xa1, .sg_list = sg, .num_sge = nsge + 1,
				   .opcode = RDP_WR_SEND };
	RDP_ASSERT_EQ(rdp_post_send(a.qp, &wr, 1, &err), 0);
	RDP_ASSERT_EQ(err, -EINVAL);

	/* inline: the bytes are taken at post time, the buffer is free at once */
	memcpy(a.buf, "inline-32-bytes-of-payload-here!", 32);
	sg[0] = (struct rdp_sge){ (uintptr_t)a.buf, 32, a.mr->lkey };
	wr = (struct rdp_send_wr){ .wr_id = 0xa2, .sg_list = sg, .num_sge = 1,
				   .opcode = RDP_WR_SEND, .flags = RDP_SEND_INLINE | RDP_SEND_SIGNALED };
	RDP_ASSERT_EQ(rdp_post_send(a.qp, &wr, 1, &err), 1);
	memset(a.buf, 'X', 32);
	RDP_ASSERT_EQ(poll_for(b.cq, wc, 1, 3000), 1);
	RDP_ASSERT_EQ(wc[0].byte_len, 32);
	RDP_ASSERT(memcmp(b.buf + 256, "inline-32-bytes-of-payload-here!", 32) == 0);
	RDP_ASSERT_EQ(poll_for(a.cq, wc, 1, 3000), 1);
	/* longer than the inline size asked for: refused even if the device allows it */
	sg[0].length = 33;
	RDP_ASSERT_EQ(rdp_post_send(a.qp, &wr, 1, &err), 0);
	RDP_ASSERT_EQ(err, -EINVAL);

	side_fini(&a);
	side_fini(&b);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* SQ accounting                                                          */
/* ---------------------------------------------------------------------- */

RDP_TEST(rxe, rxe_sq_is_full_at_asked_depth_until_a_completion_is_polled)
{
	struct rdp_qp_cap cap = cap_small;
	struct rdp_send_wr wr[8];
	struct rdp_dev_stats st;
	struct rdp_wc wc[8];
	struct side a, b;
	struct rdp_dev *dev;
	struct rdp_sge sge;
	int err, i;

	dev = open_dev(spec_a());
	if (dev == NULL)
		return SKIP_NO_DEVICE(spec_a());
	/* rxe grants 2^n-1 >= asked: 5 becomes 7. We must refuse the 6th. */
	cap.max_send_wr = 5;
	side_init(&a, dev, 64, &cap, 4096);
	side_init(&b, dev, 64, &cap_small, 4096);
	connect_pair(&a, &b);
	for (i = 0; i < 16; i++)
		post_recv1(&b, 0xb0 + i, 64 * i, 64);

	sge = (struct rdp_sge){ (uintptr_t)a.buf, 8, a.mr->lkey };
	for (i = 0; i < 8; i++)
		wr[i] = (struct rdp_send_wr){ .wr_id = 0xa0 + i, .sg_list = &sge, .num_sge = 1,
					      .opcode = RDP_WR_SEND };
	wr[4].flags = RDP_SEND_SIGNALED;
	RDP_ASSERT_EQ(rdp_post_send(a.qp, wr, 6, &err), 5);
	RDP_ASSERT_EQ(err, -ENOMEM);
	/* the device finishes them, but nobody polled: still full */
	RDP_ASSERT_EQ(poll_for(b.cq, wc, 5, 3000), 5);
	RDP_ASSERT_EQ(rdp_post_send(a.qp, &wr[5], 1, &err), 0);
	RDP_ASSERT_EQ(err, -ENOMEM);
	/* the signaled completion frees all five */
	RDP_ASSERT_EQ(poll_for(a.cq, wc, 1, 3000), 1);
	RDP_ASSERT_EQ(wc[0].wr_id, 0xa4);
	RDP_ASSERT_EQ(poll_for(a.cq, wc, 1, 100), 0);
	wr[7].flags = RDP_SEND_SIGNALED;
	RDP_ASSERT_EQ(rdp_post_send(a.qp, &wr[3], 5, &err), 5);
	RDP_ASSERT_EQ(err, 0);
	RDP_ASSERT_EQ(poll_for(a.cq, wc, 2, 3000), 2);
	RDP_ASSERT_EQ(wc[0].wr_id, 0xa4);
	RDP_ASSERT_EQ(wc[1].wr_id, 0xa7);

	RDP_ASSERT_EQ(rdp_dev_stats_get(dev, &st), 0);
	RDP_ASSERT_EQ(st.enomem, 2);
	RDP_ASSERT_EQ(st.send_posted, 10);
	side_fini(&a);
	side_fini(&b);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	return 0;
}

RDP_TEST(rxe, rxe_completions_left_by_a_destroyed_qp_still_poll_safely)
{
	struct rdp_send_wr wr[4];
	struct rdp_wc wc[8];
	struct side a, b;
	struct rdp_dev *dev;
	struct rdp_sge sge;
	int err, n, i;

	dev = open_dev(spec_a());
	if (dev == NULL)
		return SKIP_NO_DEVICE(spec_a());
	side_init(&a, dev, 64, &cap_small, 4096);
	side_init(&b, dev, 64, &cap_small, 4096);
	connect_pair(&a, &b);
	for (i = 0; i < 4; i++)
		post_recv1(&b, 0xb0 + i, 64 * i, 64);
	sge = (struct rdp_sge){ (uintptr_t)a.buf, 8, a.mr->lkey };
	for (i = 0; i < 4; i++)
		wr[i] = (struct rdp_send_wr){ .wr_id = 0xa0 + i, .sg_list = &sge, .num_sge = 1,
					      .opcode = RDP_WR_SEND, .flags = RDP_SEND_SIGNALED };
	RDP_ASSERT_EQ(rdp_post_send(a.qp, wr, 4, &err), 4);
	RDP_ASSERT_EQ(poll_for(b.cq, wc, 4, 3000), 4);

	/* A's four completions are in its CQ, unpolled, when its QP goes away */
	RDP_ASSERT_EQ(rdp_qp_destroy(a.qp), 0);
	n = poll_for(a.cq, wc, 8, 300);
	printf("%d completions polled after the QP was destroyed\n", n);
	/* rxe keeps them; mlx5 purges them on destroy: either way no garbage */
	RDP_ASSERT(n == 4 || n == 0);
	for (i = 0; i < n; i++) {
		RDP_ASSERT_EQ(wc[i].status, RDP_WC_SUCCESS);
		RDP_ASSERT_EQ(wc[i].wr_id, 0xa0 + i);
		RDP_ASSERT_EQ(wc[i].opcode, RDP_WC_SEND);
	}
	RDP_ASSERT_EQ(rdp_mr_free(a.mr), 0);
	RDP_ASSERT_EQ(rdp_cq_destroy(a.cq), 0);
	RDP_ASSERT_EQ(rdp_pd_free(a.pd), 0);
	side_fini(&b);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Errors                                                                 */
/* ---------------------------------------------------------------------- */

#define WR_KIND_SHIFT 56
enum { KIND_SEND = 1, KIND_WRITE, KIND_RECV };
#define WR_ID(kind, n) (((uint64_t)(kind) << WR_KIND_SHIFT) | (n))

RDP_TEST(rxe, rxe_rnr_with_rnr_retry_zero_flushes_every_wr_classified_by_wr_id)
{
	static const uint8_t kinds[] = { KIND_SEND, KIND_SEND, KIND_SEND, KIND_WRITE,
					 KIND_SEND, KIND_SEND };
	static const uint8_t signaled[] = { 1, 0, 0, 0, 1, 0 };
	unsigned int seen[8] = { 0 }, seen_recv[4] = { 0 };
	struct rdp_send_wr wr[16];
	struct rdp_dev_stats st;
	struct rdp_qp_attr qa;
	struct rdp_wc wc[32];
	struct side a, b;
	struct rdp_dev *dev;
	struct rdp_sge sge;
	int err, n, i;

	dev = open_dev(spec_a());
	if (dev == NULL)
		return SKIP_NO_DEVICE(spec_a());
	side_init(&a, dev, 64, &cap_small, 4096);
	side_init(&b, dev, 64, &cap_small, 4096);
	connect_pair(&a, &b);
	for (i = 0; i < 4; i++)
		post_recv1(&a, WR_ID(KIND_RECV, i), 1024 + 64 * i, 64);

	/* B has no receive posted: the first SEND meets an empty RQ */
	sge = (struct rdp_sge){ (uintptr_t)a.buf, 16, a.mr->lkey };
	for (i = 0; i < 6; i++)
		wr[i] = (struct rdp_send_wr){
			.wr_id = WR_ID(kinds[i], i), .sg_list = &sge, .num_sge = 1,
			.opcode = kinds[i] == KIND_WRITE ? RDP_WR_RDMA_WRITE :
				i == 4 ? RDP_WR_SEND_WITH_IMM : RDP_WR_SEND,
			.flags = signaled[i] ? RDP_SEND_SIGNALED : 0, .imm = 7,
		};
	wr[3].num_sge = 0;	/* a reclaim-style zero-length WRITE among them */
	RDP_ASSERT_EQ(rdp_post_send(a.qp, wr, 6, &err), 6);

	n = poll_for(a.cq, wc, 10, 5000);
	for (i = 0; i < n; i++)
		print_wc("A", &wc[i]);
	RDP_ASSERT_EQ(n, 10);
	for (i = 0; i < n; i++) {
		unsigned int kind = wc[i].wr_id >> WR_KIND_SHIFT, idx = wc[i].wr_id & 0xff;

		if (kind == KIND_RECV) {
			RDP_ASSERT(idx < 4);
			seen_recv[idx]++;
			RDP_ASSERT_EQ(wc[i].status, RDP_WC_WR_FLUSH_ERR);
			/* rxe reports SEND here; the driver must go by wr_id */
			RDP_ASSERT_EQ(wc[i].opcode, RDP_WC_RECV);
			continue;
		}
		RDP_ASSERT(idx < 6);
		seen[idx]++;
		RDP_ASSERT_EQ(kind, kinds[idx]);
		RDP_ASSERT_EQ(wc[i].opcode, kind == KIND_WRITE ? RDP_WC_RDMA_WRITE : RDP_WC_SEND);
		RDP_ASSERT_EQ(wc[i].status, idx == 0 ? RDP_WC_RNR_RETRY_EXC_ERR :
			      RDP_WC_WR_FLUSH_ERR);
	}
	for (i = 0; i < 6; i++)
		RDP_ASSERT_MSG(seen[i] == 1, "send %d completed %u times", i, seen[i]);
	for (i = 0; i < 4; i++)
		RDP_ASSERT_MSG(seen_recv[i] == 1, "recv %d completed %u times", i, seen_recv[i]);
	RDP_ASSERT_EQ(poll_for(a.cq, wc, 1, 100), 0);
	RDP_ASSERT_EQ(rdp_qp_query(a.qp, &qa), 0);
	RDP_ASSERT_EQ(qa.state, RDP_QPS_ERR);

	/* every flushed WR gave its slot back: a full SQ's worth is accepted and flushed */
	for (i = 0; i < 16; i++)
		wr[i] = (struct rdp_send_wr){ .wr_id = WR_ID(KIND_SEND, 100 + i), .sg_list = &sge,
					      .num_sge = 1, .opcode = RDP_WR_SEND };
	RDP_ASSERT_EQ(rdp_post_send(a.qp, wr, 16, &err), 16);
	RDP_ASSERT_EQ(poll_for(a.cq, wc, 16, 3000), 16);
	for (i = 0; i < 16; i++) {
		RDP_ASSERT_EQ(wc[i].status, RDP_WC_WR_FLUSH_ERR);
		RDP_ASSERT_EQ(wc[i].wr_id, WR_ID(KIND_SEND, 100 + i));
	}
	RDP_ASSERT_EQ(poll_for(b.cq, wc, 1, 100), 0);

	RDP_ASSERT_EQ(rdp_dev_stats_get(dev, &st), 0);
	printf("stats: rnr=%" PRIu64 " flushed=%" PRIu64 " errors=%" PRIu64 "\n",
	       st.rnr, st.flushed, st.errors);
	RDP_ASSERT_EQ(st.rnr, 1);
	RDP_ASSERT_EQ(st.flushed, 5 + 4 + 16);
	RDP_ASSERT_EQ(st.errors, 0);
	side_fini(&a);
	side_fini(&b);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	return 0;
}

RDP_TEST(rxe, rxe_cq_overrun_raises_cq_err_event_and_fails_the_poll)
{
	struct rdp_qp_cap cap = cap_small;
	struct rdp_send_wr wr[32];
	struct rdp_dev_stats st;
	struct rdp_event ev;
	struct rdp_wc wc[32];
	struct side a, b;
	struct rdp_dev *dev;
	struct rdp_sge sge;
	struct pollfd pfd;
	int err, i, fd;

	dev = open_dev(spec_a());
	if (dev == NULL)
		return SKIP_NO_DEVICE(spec_a());
	cap.max_send_wr = 32;
	cap.max_recv_wr = 32;
	side_init(&a, dev, 4, &cap, 4096);	/* far too small for 32 completions */
	side_init(&b, dev, 64, &cap, 4096);
	connect_pair(&a, &b);
	for (i = 0; i < 32; i++)
		post_recv1(&b, 0xb00 + i, 64 * i, 64);
	fd = rdp_dev_event_fd(dev);
	RDP_ASSERT(fd >= 0);
	RDP_ASSERT_EQ(rdp_dev_event_get(dev, &ev), -EAGAIN);

	sge = (struct rdp_sge){ (uintptr_t)a.buf, 8, a.mr->lkey };
	for (i = 0; i < 32; i++)
		wr[i] = (struct rdp_send_wr){ .wr_id = 0xa00 + i, .sg_list = &sge, .num_sge = 1,
					      .opcode = RDP_WR_SEND, .flags = RDP_SEND_SIGNALED };
	RDP_ASSERT_EQ(rdp_post_send(a.qp, wr, 32, &err), 32);
	RDP_ASSERT_EQ(poll_for(b.cq, wc, 32, 5000), 32);

	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	RDP_ASSERT_MSG(poll(&pfd, 1, 5000) == 1, "no async event within 5 s");
	RDP_ASSERT_EQ(rdp_dev_event_get(dev, &ev), 0);
	printf("event type %u cq %p (A's CQ %p)\n", ev.type, (void *)ev.cq, (void *)a.cq);
	RDP_ASSERT_EQ(ev.type, RDP_EVENT_CQ_ERR);
	RDP_ASSERT(ev.cq == a.cq);
	RDP_ASSERT_EQ(rdp_poll_cq(a.cq, wc, 32), -EIO);
	RDP_ASSERT_EQ(rdp_poll_cq(b.cq, wc, 32), 0);
	RDP_ASSERT_EQ(rdp_dev_stats_get(dev, &st), 0);
	RDP_ASSERT_EQ(st.cq_overruns, 1);

	side_fini(&a);
	side_fini(&b);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Two "hosts": two processes, one device each, across the wire           */
/* ---------------------------------------------------------------------- */

#define IDLE_SPINS 16
#define IDLE_SLEEP_US 20

/* What a side tells the other before connecting. */
struct hello {
	struct rdp_qp_addr addr;
	struct rdp_credit_params params;
	uint64_t msgs;              /* data messages it will send */
};

static void
xfer(int sock, void *out, void *in, size_t len)
{
	size_t done;

	RDP_ASSERT_EQ(write(sock, out, len), (ssize_t)len);
	for (done = 0; done < len; ) {
		ssize_t n = read(sock, (char *)in + done, len - done);

		RDP_ASSERT_MSG(n > 0, "the other side hung up");
		done += n;
	}
}

static void
barrier(int sock)
{
	char a = 'b', b;

	xfer(sock, &a, &b, 1);
}

/*
 * A poller that found nothing to do for a while sleeps a little. Under qemu
 * TCG the packets between the two NICs are moved by a host thread that
 * competes with the vCPUs: spinning vCPUs would starve the wire.
 */
static void
idle_backoff(unsigned int *idle)
{
	if (++*idle >= IDLE_SPINS)
		usleep(IDLE_SLEEP_US);
}

/* Run @p fn as two processes: the parent on spec_a(), a child on spec_b(). */
static int
two_hosts(int (*fn)(int sock, const char *spec, bool first))
{
	struct rdp_dev *probe;
	int sv[2], status, ret;
	pid_t pid;

	/* both devices must exist: ask in a child, verbs state does not survive fork */
	pid = fork();
	RDP_ASSERT(pid >= 0);
	if (pid == 0) {
		probe = open_dev(spec_a());
		if (probe == NULL)
			_exit(10);
		rdp_dev_close(probe);
		probe = open_dev(spec_b());
		if (probe == NULL)
			_exit(11);
		rdp_dev_close(probe);
		_exit(0);
	}
	RDP_ASSERT_EQ(waitpid(pid, &status, 0), pid);
	RDP_ASSERT(WIFEXITED(status));
	if (WEXITSTATUS(status) == 10)
		return SKIP_NO_DEVICE(spec_a());
	if (WEXITSTATUS(status) == 11)
		return rdp_test_skip("needs a second RDMA device '%s' (set "
				     "RDP_TEST_PEER_DRIVER); the VM lane has rxe1", spec_b());
	RDP_ASSERT_EQ(WEXITSTATUS(status), 0);

	RDP_ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fflush(stdout);
	pid = fork();
	RDP_ASSERT(pid >= 0);
	if (pid == 0) {
		/* a failing parent must not leave this side polling on */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(sv[0]);
		_exit(fn(sv[1], spec_b(), false));
	}
	close(sv[1]);
	ret = fn(sv[0], spec_a(), true);
	RDP_ASSERT_EQ(waitpid(pid, &status, 0), pid);
	RDP_ASSERT_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		       "the second host (%s) failed", spec_b());
	return ret;
}

/* wr_id of the stream: kind in the top byte, sequence or buffer below. */
enum { SK_DATA = 1, SK_ACK, SK_RECLAIM, SK_RECV };
#define SK_ID(kind, v) (((uint64_t)(kind) << 56) | (v))
#define SK_KIND(id) ((unsigned int)((id) >> 56))
#define SK_LOW(id) ((id) & RDP_CREDIT_SEQ_MASK)
/* Immediate data: bit 31 marks a pure ack, the rest is the credit count. */
#define IMM_ACK (1u << 31)

#define STREAM_MSG 64   /* bytes per data message */
#define STREAM_BURST 16

/* One credit-driven endpoint that streams numbered messages to its peer. */
struct stream {
	struct side s;
	struct rdp_credit cr;
	struct rdp_credit_params lp;
	uint64_t to_send, sent, to_recv, received;
	uint64_t enomem, bad;
	uint32_t rq_slots;
	struct rdp_recv_wr rwr[64];
	struct rdp_sge rsge[64];
	uint32_t nrepost;
};

static void
stream_repost(struct stream *st, uint64_t slot)
{
	struct rdp_sge *g = &st->rsge[st->nrepost];

	*g = (struct rdp_sge){ (uintptr_t)(st->s.buf + slot * STREAM_MSG), STREAM_MSG,
			       st->s.mr->lkey };
	st->rwr[st->nrepost++] = (struct rdp_recv_wr){ .wr_id = SK_ID(SK_RECV, slot),
						       .sg_list = g, .num_sge = 1 };
}

static void
stream_flush_reposts(struct stream *st)
{
	int err = 0;

	if (st->nrepost == 0)
		return;
	RDP_ASSERT_MSG(rdp_post_recv(st->s.qp, st->rwr, st->nrepost, &err) == st->nrepost,
		       "post_recv: %d", err);
	st->nrepost = 0;
}

/* Poll once; returns completions handled. */
static int
stream_poll(struct stream *st)
{
	struct rdp_wc wc[32];
	int n, i;

	n = rdp_poll_cq(st->s.cq, wc, 32);
	RDP_ASSERT_MSG(n >= 0, "poll: %d", n);
	for (i = 0; i < n; i++) {
		const struct rdp_wc *w = &wc[i];
		unsigned int kind = SK_KIND(w->wr_id);

		if (w->status != RDP_WC_SUCCESS) {
			if (st->bad++ < 4)
				print_wc("error", w);
			continue;
		}
		if (kind == SK_RECV) {
			uint64_t slot = SK_LOW(w->wr_id), got;

			RDP_ASSERT(w->wc_flags & RDP_WC_WITH_IMM);
			rdp_credit_granted(&st->cr, w->imm & ~IMM_ACK);
			stream_repost(st, slot);
			if (w->imm & IMM_ACK)
				continue;
			RDP_ASSERT_EQ(w->byte_len, STREAM_MSG);
			memcpy(&got, st->s.buf + slot * STREAM_MSG, sizeof(got));
			RDP_ASSERT_MSG(got == st->received, "message %" PRIu64 " arrived as "
				       "number %" PRIu64, got, st->received);
			st->received++;
			rdp_credit_recv_reposted(&st->cr, 1);
		} else {
			RDP_ASSERT_MSG(kind == SK_DATA || kind == SK_RECLAIM,
				       "completion of an unsignaled WR %#" PRIx64, w->wr_id);
			rdp_credit_send_completed(&st->cr,
						  rdp_credit_seq_expand(&st->cr, SK_LOW(w->wr_id)));
		}
	}
	stream_flush_reposts(st);
	return n;
}

static uint16_t
stream_post(struct stream *st, struct rdp_send_wr *wr, uint16_t n)
{
	int err = 0;
	uint16_t k;

	if (n == 0)
		return 0;
	k = rdp_post_send(st->s.qp, wr, n, &err);
	if (err == -ENOMEM)
		st->enomem++;
	RDP_ASSERT_MSG(k == n, "post_send took %u of %u: %d (credit inflight %u of %u)",
		       k, n, err, rdp_credit_sq_inflight(&st->cr), st->cr.sq_size);
	return n;
}

/* Post what the credits allow: data first, then an ack or a reclaim. */
static unsigned int
stream_send(struct stream *st)
{
	struct rdp_send_wr wr[STREAM_BURST];
	struct rdp_sge sge[STREAM_BURST];
	unsigned int posted = 0;
	uint16_t n = 0;

	while (st->sent < st->to_send && n < STREAM_BURST) {
		enum rdp_credit_verdict v = rdp_credit_data_check(&st->cr);
		uint32_t credits;
		uint64_t seq;
		uint8_t *buf;

		if (v != RDP_CREDIT_GO_SIGNALED && v != RDP_CREDIT_GO_UNSIGNALED)
			break;
		seq = rdp_credit_data_posted(&st->cr, v == RDP_CREDIT_GO_SIGNALED, &credits);
		/* send buffers follow the SQ: a slot is reused only after a signaled completion */
		buf = st->s.buf + (st->rq_slots + (seq % st->lp.sq_size)) * STREAM_MSG;
		memcpy(buf, &st->sent, sizeof(st->sent));
		sge[n] = (struct rdp_sge){ (uintptr_t)buf, STREAM_MSG, st->s.mr->lkey };
		wr[n] = (struct rdp_send_wr){
			.wr_id = SK_ID(SK_DATA, seq & RDP_CREDIT_SEQ_MASK), .sg_list = &sge[n],
			.num_sge = 1, .opcode = RDP_WR_SEND_WITH_IMM,
			.flags = v == RDP_CREDIT_GO_SIGNALED ? RDP_SEND_SIGNALED : 0,
			.imm = credits,
		};
		n++;
		st->sent++;
	}
	for (;;) {
		enum rdp_credit_verdict v;
		uint32_t credits;
		uint64_t seq;

		if (n == STREAM_BURST) {
			posted += stream_post(st, wr, n);
			n = 0;
		}
		v = rdp_credit_ack_check(&st->cr);
		if (v == RDP_CREDIT_GO_UNSIGNALED) {
			seq = rdp_credit_ack_posted(&st->cr, &credits);
			wr[n++] = (struct rdp_send_wr){
				.wr_id = SK_ID(SK_ACK, seq & RDP_CREDIT_SEQ_MASK), .num_sge = 0,
				.opcode = RDP_WR_SEND_WITH_IMM, .imm = IMM_ACK | credits,
			};
			break;
		}
		if (v != RDP_CREDIT_RECLAIM_FIRST)
			break;
		seq = rdp_credit_reclaim_posted(&st->cr);
		wr[n++] = (struct rdp_send_wr){
			.wr_id = SK_ID(SK_RECLAIM, seq & RDP_CREDIT_SEQ_MASK), .num_sge = 0,
			.opcode = RDP_WR_RDMA_WRITE, .flags = RDP_SEND_SIGNALED,
		};
	}
	return posted + stream_post(st, wr, n);
}

/* Open, exchange hellos, connect, stream both ways, drain, report. */
static int
stream_side(int sock, const char *spec, bool first)
{
	const char *me = first ? "A" : "B";
	struct rdp_credit_params lp = {
		.sq_size = 64, .signal_interval = 16, .rq_size = 64, .ack_reserve = 4,
		.ack_threshold = 16,
	};
	const char *env = getenv("RDP_RXE_STREAM_MSGS");
	struct hello mine, peer;
	struct rdp_dev_stats ds;
	struct rdp_qp_cap cap;
	struct stream *st;
	struct rdp_dev *dev;
	char why[256];
	double t0, end, t1;
	unsigned int idle = 0;
	uint32_t i;

	st = calloc(1, sizeof(*st));
	RDP_ASSERT(st != NULL);
	dev = open_dev(spec);
	RDP_ASSERT(dev != NULL);
	cap = (struct rdp_qp_cap){ .max_send_wr = lp.sq_size, .max_recv_wr = lp.rq_size,
				   .max_send_sge = 1, .max_recv_sge = 1 };
	side_init(&st->s, dev, rdp_credit_cq_budget(&lp), &cap,
		  (size_t)(lp.rq_size + lp.sq_size) * STREAM_MSG);
	st->lp = lp;
	st->rq_slots = lp.rq_size;
	st->to_send = env != NULL ? strtoull(env, NULL, 0) : 50000;

	mine.params = lp;
	mine.msgs = st->to_send;
	RDP_ASSERT_EQ(rdp_qp_local_addr(st->s.qp, &mine.addr), 0);
	xfer(sock, &mine, &peer, sizeof(mine));
	RDP_ASSERT_MSG(rdp_credit_init(&st->cr, &lp, &peer.params, why, sizeof(why)) == 0,
		       "%s", why);
	st->to_recv = peer.msgs;
	/* receives go in at INIT, before RTR lets the peer's first message in */
	RDP_ASSERT_EQ(rdp_qp_modify(st->s.qp, &(struct rdp_qp_attr){ .state = RDP_QPS_INIT },
				    RDP_QP_ATTR_STATE), 0);
	for (i = 0; i < lp.rq_size; i++)
		stream_repost(st, i);
	stream_flush_reposts(st);
	RDP_ASSERT_MSG(rdp_qp_connect(st->s.qp, &peer.addr, &conn_strict) == 0, "%s",
		       rdp_err_msg());
	barrier(sock);	/* both RTS with receives posted */

	t0 = (rdp_clock_s() * 1e3);
	end = t0 + 120e3;
	while ((st->sent < st->to_send || st->received < st->to_recv) && st->bad == 0) {
		if (stream_poll(st) + stream_send(st) == 0)
			idle_backoff(&idle);
		else
			idle = 0;
		RDP_ASSERT_MSG((rdp_clock_s() * 1e3) < end, "%s stalled: sent %" PRIu64 "/%" PRIu64
			       " received %" PRIu64 "/%" PRIu64 " rc=%u owed=%u inflight=%u",
			       me, st->sent, st->to_send, st->received, st->to_recv, st->cr.rc,
			       st->cr.owed, rdp_credit_sq_inflight(&st->cr));
	}
	t1 = (rdp_clock_s() * 1e3);
	/* drain: a last reclaim covers the unsignaled tail */
	while (st->bad == 0 && rdp_credit_sq_inflight(&st->cr) > 0) {
		if (st->cr.unsig_run > 0 && rdp_credit_sq_inflight(&st->cr) < lp.sq_size) {
			struct rdp_send_wr wr = { .num_sge = 0, .opcode = RDP_WR_RDMA_WRITE,
						  .flags = RDP_SEND_SIGNALED };

			wr.wr_id = SK_ID(SK_RECLAIM, rdp_credit_reclaim_posted(&st->cr) &
					 RDP_CREDIT_SEQ_MASK);
			stream_post(st, &wr, 1);
		}
		stream_poll(st);
		RDP_ASSERT_MSG((rdp_clock_s() * 1e3) < end + 5e3, "%s: SQ does not drain", me);
	}
	barrier(sock);	/* the peer's last WRs need our QP alive */

	RDP_ASSERT_EQ(rdp_dev_stats_get(dev, &ds), 0);
	printf("%s on %s: sent %" PRIu64 ", received %" PRIu64 " in %.0f ms (%.1f us/msg): "
	       "acks %" PRIu64 ", reclaims %" PRIu64 ", signaled %" PRIu64 ", sq stalls %"
	       PRIu64 ", remote stalls %" PRIu64 "; ENOMEM %" PRIu64 " (driver %" PRIu64
	       "), RNR %" PRIu64 ", flushed %" PRIu64 ", errors %" PRIu64 "\n",
	       me, spec, st->sent, st->received, t1 - t0,
	       (t1 - t0) * 1e3 / (double)(st->sent + st->received), st->cr.stats.acks_posted,
	       st->cr.stats.reclaims_posted, st->cr.stats.signaled_posted,
	       st->cr.stats.sq_stalls, st->cr.stats.remote_stalls, st->enomem, ds.enomem,
	       ds.rnr, ds.flushed, ds.errors);
	fflush(stdout);
	RDP_ASSERT_EQ(st->bad, 0);
	RDP_ASSERT_EQ(st->received, st->to_recv);
	RDP_ASSERT_EQ(st->enomem, 0);
	RDP_ASSERT_EQ(ds.enomem, 0);
	RDP_ASSERT_EQ(ds.rnr, 0);
	RDP_ASSERT_EQ(ds.errors + ds.flushed, 0);
	side_fini(&st->s);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	free(st);
	return 0;
}

RDP_TEST(rxe, rxe_credit_stream_two_way_across_wire_has_no_enomem_no_rnr)
{
	return two_hosts(stream_side);
}

/* The legacy window over the wire: A sends with SQ = window, B acks. */
#define LEGACY_WINDOW 32
#define LEGACY_SIGNAL 8
#define LEGACY_ACK_EVERY 8

static int
legacy_side(int sock, const char *spec, bool first)
{
	const char *env = getenv("RDP_RXE_LEGACY_MSGS");
	uint64_t msgs = env != NULL ? strtoull(env, NULL, 0) : 30000;
	struct rdp_qp_cap cap = {
		.max_send_wr = LEGACY_WINDOW, .max_recv_wr = LEGACY_WINDOW,
		.max_send_sge = 1, .max_recv_sge = 1,
	};
	uint64_t sent = 0, received = 0, unacked = 0, acks_out = 0, bad = 0;
	uint64_t refused = 0, refused_msgs = 0, last_refused = UINT64_MAX;
	struct rdp_qp_addr mine, peer;
	struct legacy_window lw;
	struct rdp_dev_stats ds;
	struct rdp_wc wc[32];
	struct side s;
	struct rdp_dev *dev;
	unsigned int idle = 0, progress;
	double t0, end;
	uint32_t i;
	int err, n;

	dev = open_dev(spec);
	RDP_ASSERT(dev != NULL);
	side_init(&s, dev, 4 * LEGACY_WINDOW, &cap, 3 * LEGACY_WINDOW * STREAM_MSG);
	RDP_ASSERT_EQ(rdp_qp_local_addr(s.qp, &mine), 0);
	xfer(sock, &mine, &peer, sizeof(mine));
	RDP_ASSERT_MSG(rdp_qp_connect(s.qp, &peer, &conn_strict) == 0, "%s", rdp_err_msg());
	for (i = 0; i < LEGACY_WINDOW; i++)
		post_recv1(&s, SK_ID(SK_RECV, i), i * STREAM_MSG, STREAM_MSG);
	barrier(sock);
	/* no spare SQ slot: the window alone decides, as in brpc before #3145 */
	legacy_window_init(&lw, LEGACY_WINDOW, LEGACY_SIGNAL);

	t0 = (rdp_clock_s() * 1e3);
	end = t0 + 120e3;
	while ((first ? sent < msgs : received < msgs) && bad == 0) {
		n = rdp_poll_cq(s.cq, wc, 32);
		RDP_ASSERT(n >= 0);
		progress = n;
		for (i = 0; i < (uint32_t)n; i++) {
			uint64_t slot = SK_LOW(wc[i].wr_id);

			if (wc[i].status != RDP_WC_SUCCESS) {
				if (bad++ < 4)
					print_wc("error", &wc[i]);
				continue;
			}
			if (SK_KIND(wc[i].wr_id) != SK_RECV) {
				if (!first)
					acks_out--;
				continue;	/* the legacy window ignores SQ completions */
			}
			post_recv1(&s, wc[i].wr_id, slot * STREAM_MSG, STREAM_MSG);
			if (first) {
				legacy_window_acked(&lw, wc[i].imm);
			} else {
				uint64_t got;

				memcpy(&got, s.buf + slot * STREAM_MSG, sizeof(got));
				RDP_ASSERT_MSG(got == received, "message %" PRIu64 " arrived as "
					       "number %" PRIu64, got, received);
				received++;
				unacked++;
			}
		}
		if (first) {
			while (sent < msgs && legacy_window_can_send(&lw)) {
				struct legacy_window next = lw;
				bool sig = legacy_window_posted(&next);
				/* 2 x window buffers: one is reused only after its WR completed,
				 * even when a refused post already wrote the next one */
				uint8_t *buf = s.buf + (LEGACY_WINDOW + sent % (2 * LEGACY_WINDOW)) *
					STREAM_MSG;
				struct rdp_sge sge = { (uintptr_t)buf, STREAM_MSG, s.mr->lkey };
				struct rdp_send_wr wr = {
					.wr_id = SK_ID(SK_DATA, sent), .sg_list = &sge, .num_sge = 1,
					.opcode = RDP_WR_SEND,
					.flags = sig ? RDP_SEND_SIGNALED : 0,
				};

				memcpy(buf, &sent, sizeof(sent));
				if (rdp_post_send(s.qp, &wr, 1, &err) != 1) {
					RDP_ASSERT_EQ(err, -ENOMEM);
					/* the window said go, the SQ is full: the seed bug */
					refused++;
					if (last_refused != sent && refused_msgs++ < 3)
						printf("A: ENOMEM at message %" PRIu64 " with window %u\n",
						       sent, lw.window);
					last_refused = sent;
					break;
				}
				lw = next;
				sent++;
				progress++;
			}
		} else if (unacked >= LEGACY_ACK_EVERY && acks_out < 4) {
			struct rdp_send_wr wr = {
				.wr_id = SK_ID(SK_ACK, 0), .num_sge = 0,
				.opcode = RDP_WR_SEND_WITH_IMM, .flags = RDP_SEND_SIGNALED,
				.imm = (uint32_t)unacked,
			};

			RDP_ASSERT_EQ(rdp_post_send(s.qp, &wr, 1, &err), 1);
			acks_out++;
			unacked = 0;
		}
		if (progress == 0)
			idle_backoff(&idle);
		else
			idle = 0;
		RDP_ASSERT_MSG((rdp_clock_s() * 1e3) < end, "%s stalled: sent %" PRIu64 " received %" PRIu64,
			       first ? "A" : "B", sent, received);
	}
	barrier(sock);
	RDP_ASSERT_EQ(rdp_dev_stats_get(dev, &ds), 0);
	if (first)
		printf("legacy window=%u, SQ=%u (no spare slot), signal every %u: %" PRIu64
		       " messages in %.0f ms; ENOMEM hit %" PRIu64 " messages (%" PRIu64
		       " refused posts; driver counted %" PRIu64 ")\n", LEGACY_WINDOW,
		       LEGACY_WINDOW, LEGACY_SIGNAL, sent, (rdp_clock_s() * 1e3) - t0, refused_msgs, refused,
		       ds.enomem);
	else
		printf("B on %s: received %" PRIu64 " in order\n", spec, received);
	fflush(stdout);
	RDP_ASSERT_EQ(bad, 0);
	RDP_ASSERT_EQ(ds.rnr, 0);
	RDP_ASSERT_EQ(ds.enomem, refused);
	side_fini(&s);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	return 0;
}

RDP_TEST(rxe, rxe_legacy_window_without_spare_slot_reports_its_enomem_count)
{
	return two_hosts(legacy_side);
}

/* Wait up to @p ms for an event of @p type; other events are skipped. */
static bool
wait_event(struct rdp_dev *dev, enum rdp_event_type type, double ms)
{
	struct pollfd pfd = { .fd = rdp_dev_event_fd(dev), .events = POLLIN };
	double end = (rdp_clock_s() * 1e3) + ms;
	struct rdp_event ev;

	while ((rdp_clock_s() * 1e3) < end) {
		if (rdp_dev_event_get(dev, &ev) == 0) {
			printf("event type %u\n", ev.type);
			if (ev.type == type)
				return true;
			continue;
		}
		poll(&pfd, 1, 100);
	}
	return false;
}

/* Runs last: it takes the second device's link down and brings it back. */
RDP_TEST(rxe, rxe_link_down_and_up_raise_port_events)
{
	const char *down = getenv("RDP_RXE_LINK_DOWN"), *up = getenv("RDP_RXE_LINK_UP");
	struct rdp_dev_attr attr;
	struct rdp_event ev;
	struct rdp_dev *dev;
	double end;

	if (down == NULL || up == NULL)
		return rdp_test_skip("needs RDP_RXE_LINK_DOWN and RDP_RXE_LINK_UP, commands that "
				     "take the link of '%s' down and up (the VM lane sets them)",
				     spec_b());
	dev = open_dev(spec_b());
	if (dev == NULL)
		return SKIP_NO_DEVICE(spec_b());
	while (rdp_dev_event_get(dev, &ev) == 0)
		;
	RDP_ASSERT_MSG(system(down) == 0, "%s", down);
	RDP_ASSERT_MSG(wait_event(dev, RDP_EVENT_PORT_ERR, 5000), "no PORT_ERR after '%s'", down);
	RDP_ASSERT_EQ(rdp_dev_query(dev, &attr), 0);
	RDP_ASSERT_EQ(attr.port_active, 0);
	RDP_ASSERT_MSG(system(up) == 0, "%s", up);
	RDP_ASSERT_MSG(wait_event(dev, RDP_EVENT_PORT_ACTIVE, 10000), "no PORT_ACTIVE after '%s'",
		       up);
	RDP_ASSERT_EQ(rdp_dev_query(dev, &attr), 0);
	RDP_ASSERT_EQ(attr.port_active, 1);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);

	/* the RoCE GIDs left with the link; wait until the device is usable again */
	for (end = (rdp_clock_s() * 1e3) + 10000; (dev = rdp_dev_open(spec_b())) == NULL; usleep(100000))
		RDP_ASSERT_MSG((rdp_clock_s() * 1e3) < end, "%s unusable after the link came back: %s",
			       spec_b(), rdp_err_msg());
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	return 0;
}
