/* SPDX-License-Identifier: BSD-3-Clause */
/* A connected pair of QPs on the driver under test (see conf_pair.h). */
#include <errno.h>
#include <time.h>

#include "conf_pair.h"
#include "rdp_test.h"

double
conf_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void
conf_opts_default(struct conf_opts *o)
{
	*o = (struct conf_opts){
		.sq = 16, .rq = 16, .cqe = 64, .send_sge = 1, .recv_sge = 1,
		.rnr_retry = 0, .min_rnr_timer = 1,
	};
}

static void
side_open(struct conf_pair *p, struct conf_side *s, const struct conf_opts *o)
{
	struct rdp_qp_init_attr ia = { 0 };

	s->cq = rdp_cq_create(p->dev, o->cqe, -1);
	RDP_ASSERT_MSG(s->cq != NULL, "rdp_cq_create: %s", rdp_err_msg());
	s->rx = rdp_mr_alloc(p->pd, CONF_BUF_SIZE, -1,
			     RDP_ACCESS_LOCAL_WRITE | RDP_ACCESS_REMOTE_WRITE);
	RDP_ASSERT_MSG(s->rx != NULL, "rdp_mr_alloc(rx): %s", rdp_err_msg());
	s->tx = rdp_mr_alloc(p->pd, CONF_BUF_SIZE, -1, RDP_ACCESS_LOCAL_WRITE);
	RDP_ASSERT_MSG(s->tx != NULL, "rdp_mr_alloc(tx): %s", rdp_err_msg());
	ia.send_cq = s->cq;
	ia.recv_cq = s->cq;
	ia.cap.max_send_wr = o->sq;
	ia.cap.max_recv_wr = o->rq;
	ia.cap.max_send_sge = o->send_sge;
	ia.cap.max_recv_sge = o->recv_sge;
	s->qp = rdp_qp_create(p->pd, &ia);
	RDP_ASSERT_MSG(s->qp != NULL, "rdp_qp_create: %s", rdp_err_msg());
}

void
conf_pair_open(struct conf_pair *p, const char *spec, const struct conf_opts *o)
{
	struct rdp_qp_conn_params conn = {
		.rnr_retry = o->rnr_retry, .retry_cnt = 7, .timeout = 14,
		.min_rnr_timer = o->min_rnr_timer,
	};
	struct rdp_qp_addr aa, ba;

	if (spec == NULL)
		spec = rdp_test_driver();
	p->dev = rdp_dev_open(spec);
	RDP_ASSERT_MSG(p->dev != NULL, "rdp_dev_open(%s): %s", spec, rdp_err_msg());
	p->pd = rdp_pd_alloc(p->dev);
	RDP_ASSERT_MSG(p->pd != NULL, "rdp_pd_alloc: %s", rdp_err_msg());
	side_open(p, &p->a, o);
	side_open(p, &p->b, o);
	RDP_ASSERT_EQ(rdp_qp_local_addr(p->a.qp, &aa), 0);
	RDP_ASSERT_EQ(rdp_qp_local_addr(p->b.qp, &ba), 0);
	RDP_ASSERT_MSG(rdp_qp_connect(p->a.qp, &ba, &conn) == 0, "connect a: %s", rdp_err_msg());
	RDP_ASSERT_MSG(rdp_qp_connect(p->b.qp, &aa, &conn) == 0, "connect b: %s", rdp_err_msg());
}

static void
side_close(struct conf_side *s)
{
	RDP_ASSERT_EQ(rdp_qp_destroy(s->qp), 0);
	RDP_ASSERT_EQ(rdp_cq_destroy(s->cq), 0);
	RDP_ASSERT_EQ(rdp_mr_free(s->rx), 0);
	RDP_ASSERT_EQ(rdp_mr_free(s->tx), 0);
}

void
conf_pair_close(struct conf_pair *p)
{
	side_close(&p->a);
	side_close(&p->b);
	RDP_ASSERT_EQ(rdp_pd_free(p->pd), 0);
	RDP_ASSERT_MSG(rdp_dev_close(p->dev) == 0, "rdp_dev_close: %s", rdp_err_msg());
}

int
conf_post_recv(struct conf_side *s, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct rdp_sge sge = {
		.addr = (uintptr_t)s->rx->addr + off, .length = len, .lkey = s->rx->lkey,
	};
	struct rdp_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };
	int err;

	rdp_post_recv(s->qp, &wr, 1, &err);
	return err;
}

int
conf_post_send(struct conf_side *s, uint8_t opcode, uint8_t flags, uint64_t wr_id,
	       uint32_t off, uint32_t len, uint32_t imm, uint64_t raddr, uint32_t rkey)
{
	struct rdp_sge sge = {
		.addr = (uintptr_t)s->tx->addr + off, .length = len, .lkey = s->tx->lkey,
	};
	struct rdp_send_wr wr = {
		.wr_id = wr_id, .sg_list = len ? &sge : NULL, .num_sge = len ? 1 : 0,
		.opcode = opcode, .flags = flags, .imm = imm, .remote_addr = raddr, .rkey = rkey,
	};
	int err;

	rdp_post_send(s->qp, &wr, 1, &err);
	return err;
}

int
conf_poll(struct rdp_cq *cq, struct rdp_wc *wc, int want, int ms)
{
	double deadline = conf_now() + ms / 1000.0;
	int got = 0;

	while (got < want) {
		int r = rdp_poll_cq(cq, wc + got, (uint16_t)(want - got));

		RDP_ASSERT_MSG(r >= 0, "rdp_poll_cq failed: %d", r);
		got += r;
		if (r == 0 && conf_now() > deadline)
			break;
	}
	return got;
}

void
conf_quiet(struct rdp_cq *cq, int ms)
{
	struct rdp_wc wc;
	int r = conf_poll(cq, &wc, 1, ms);

	RDP_ASSERT_MSG(r == 0, "unexpected completion: wr_id %" PRIu64 " status %s opcode %u",
		       wc.wr_id, rdp_wc_status_str(wc.status), wc.opcode);
}

unsigned int
conf_qp_state(struct rdp_qp *qp)
{
	struct rdp_qp_attr attr;

	RDP_ASSERT_EQ(rdp_qp_query(qp, &attr), 0);
	return attr.state;
}
