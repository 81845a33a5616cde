/* SPDX-License-Identifier: BSD-3-Clause */
/* A pair of simulated RC queue pairs with exact, adversarial completion order. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "qp_sim.h"

/* A completion waiting in one work queue's part of the CQ. */
struct qp_sim_cqe {
	struct qp_sim_wc wc;
	uint64_t seq;		/* send: the WR's position in the SQ */
	uint64_t stamp;		/* when the NIC produced it */
};

static void
qp_free(struct qp_sim_qp *qp)
{
	free(qp->sq);
	free(qp->rq);
	free(qp->scq);
	free(qp->rcq);
	memset(qp, 0, sizeof(*qp));
}

int
qp_sim_create(struct qp_sim *sim, const struct qp_sim_cfg cfg[2], enum qp_sim_order order,
	      uint32_t send_ooo_pct, uint64_t seed)
{
	unsigned int i;

	memset(sim, 0, sizeof(*sim));
	for (i = 0; i < 2; i++) {
		struct qp_sim_qp *qp = &sim->qp[i];

		qp->peer = &sim->qp[1 - i];
		qp->cfg = cfg[i];
		qp->order = order;
		qp->send_ooo_pct = order == QP_SIM_RANDOM ? send_ooo_pct : 0;
		/* distinct non-zero streams per QP */
		qp->rng = (seed ^ (UINT64_C(0x9e3779b97f4a7c15) * (i + 1))) | 1;
		qp->sq = calloc(cfg[i].sq_size, sizeof(*qp->sq));
		qp->rq = calloc(cfg[i].rq_size, sizeof(*qp->rq));
		qp->scq = calloc(cfg[i].cq_size, sizeof(*qp->scq));
		qp->rcq = calloc(cfg[i].cq_size, sizeof(*qp->rcq));
		if (qp->sq == NULL || qp->rq == NULL || qp->scq == NULL || qp->rcq == NULL) {
			qp_sim_destroy(sim);
			return -ENOMEM;
		}
	}
	return 0;
}

void
qp_sim_destroy(struct qp_sim *sim)
{
	qp_free(&sim->qp[0]);
	qp_free(&sim->qp[1]);
}

int
qp_sim_post_send(struct qp_sim_qp *qp, const struct qp_sim_wr *wr)
{
	if (qp_sim_sq_used(qp) >= qp->cfg.sq_size) {
		qp->err.enomem++;
		return -ENOMEM;
	}
	qp->sq[qp->sq_pi % qp->cfg.sq_size] = *wr;
	qp->sq_pi++;
	return 0;
}

int
qp_sim_post_recv(struct qp_sim_qp *qp, uint64_t wr_id)
{
	uint32_t tail;

	if (qp->rq_count >= qp->cfg.rq_size) {
		qp->err.enomem++;
		return -ENOMEM;
	}
	tail = qp->rq_head + qp->rq_count;
	if (tail >= qp->cfg.rq_size)
		tail -= qp->cfg.rq_size;
	qp->rq[tail] = wr_id;
	qp->rq_count++;
	return 0;
}

/* Append a completion to one work queue's FIFO, unless the CQ is full. */
static void
cq_push(struct qp_sim_qp *qp, struct qp_sim_cqe *ring, uint32_t head, uint32_t *count,
	const struct qp_sim_wc *wc, uint64_t seq)
{
	uint32_t tail;

	if (qp_sim_cq_used(qp) >= qp->cfg.cq_size) {
		qp->err.cq_overrun++;
		return;
	}
	tail = head + *count;
	if (tail >= qp->cfg.cq_size)
		tail -= qp->cfg.cq_size;
	ring[tail] = (struct qp_sim_cqe){ .wc = *wc, .seq = seq, .stamp = qp->stamp++ };
	(*count)++;
}

/* A SEND arrives at @p qp: it takes the oldest receive buffer. */
static void
deliver(struct qp_sim_qp *qp, const struct qp_sim_wr *wr)
{
	struct qp_sim_wc wc;

	if (qp->rq_count == 0) {
		qp->err.rnr++;
		return;
	}
	wc = (struct qp_sim_wc){
		.wr_id = qp->rq[qp->rq_head], .payload = wr->payload, .imm = wr->imm,
		.len = wr->len, .opcode = QP_SIM_RECV,
	};
	if (++qp->rq_head == qp->cfg.rq_size)
		qp->rq_head = 0;
	qp->rq_count--;
	cq_push(qp, qp->rcq, qp->rcq_head, &qp->rcq_count, &wc, 0);
}

unsigned int
qp_sim_execute(struct qp_sim_qp *qp, unsigned int max)
{
	unsigned int n = 0;

	while (n < max && qp->sq_tx < qp->sq_pi) {
		const struct qp_sim_wr *wr = &qp->sq[qp->sq_tx % qp->cfg.sq_size];

		if (wr->opcode == QP_SIM_SEND_IMM)
			deliver(qp->peer, wr);
		if (wr->signaled) {
			struct qp_sim_wc wc = { .wr_id = wr->wr_id, .opcode = wr->opcode };

			cq_push(qp, qp->scq, qp->scq_head, &qp->scq_count, &wc, qp->sq_tx);
		}
		qp->sq_tx++;
		n++;
	}
	return n;
}

/* Which work queue the next completion comes from: true for the SQ. */
static bool
next_is_send(struct qp_sim_qp *qp)
{
	if (qp->scq_count == 0)
		return false;
	if (qp->rcq_count == 0)
		return true;
	switch (qp->order) {
	case QP_SIM_FIFO:
		return qp->scq[qp->scq_head].stamp < qp->rcq[qp->rcq_head].stamp;
	case QP_SIM_RECV_FIRST:
		return false;
	case QP_SIM_RANDOM:
	default:
		return qp_sim_rand(&qp->rng) & 1;
	}
}

/*
 * Send completions that may overtake the oldest one: those of WRs posted
 * fewer than sq_size WRs after it (the ring is in WR order).
 */
static uint32_t
overtake_window(const struct qp_sim_qp *qp)
{
	uint32_t size = qp->cfg.cq_size, i = qp->scq_head, n = 0;
	uint64_t oldest = qp->scq[i].seq;

	while (n < qp->scq_count && qp->scq[i].seq < oldest + qp->cfg.sq_size) {
		n++;
		if (++i == size)
			i = 0;
	}
	return n;
}

/* Take a send completion: the oldest, or in random order sometimes another. */
static struct qp_sim_cqe
take_send(struct qp_sim_qp *qp)
{
	uint32_t size = qp->cfg.cq_size, k = 0, i;
	struct qp_sim_cqe cqe;

	if (qp->send_ooo_pct > 0 && qp->scq_count > 1 &&
	    qp_sim_below(&qp->rng, 100) < qp->send_ooo_pct)
		k = qp_sim_below(&qp->rng, overtake_window(qp));
	i = qp->scq_head + k;
	if (i >= size)
		i -= size;
	cqe = qp->scq[i];
	/* close the gap: shift the older ones up by one */
	while (k > 0) {
		uint32_t prev = i == 0 ? size - 1 : i - 1;

		qp->scq[i] = qp->scq[prev];
		i = prev;
		k--;
	}
	if (++qp->scq_head == size)
		qp->scq_head = 0;
	qp->scq_count--;
	return cqe;
}

unsigned int
qp_sim_poll_cq(struct qp_sim_qp *qp, struct qp_sim_wc *wc, unsigned int n)
{
	unsigned int got = 0;

	while (got < n && qp_sim_cq_used(qp) > 0) {
		if (next_is_send(qp)) {
			struct qp_sim_cqe cqe = take_send(qp);

			/* strict semantics: the slots come back when polled */
			if (cqe.seq + 1 > qp->sq_ci)
				qp->sq_ci = cqe.seq + 1;
			else
				qp->stale++;
			wc[got++] = cqe.wc;
		} else {
			wc[got++] = qp->rcq[qp->rcq_head].wc;
			if (++qp->rcq_head == qp->cfg.cq_size)
				qp->rcq_head = 0;
			qp->rcq_count--;
		}
	}
	return got;
}
