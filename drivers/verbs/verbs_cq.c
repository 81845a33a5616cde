/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs driver's completion queues: created without a completion
 * channel, busy-polled, and translated into struct rdp_wc by wr_id.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_private.h"

/* ibv_wc_status -> rdp_wc_status; statuses we do not name become GENERAL_ERR. */
static const uint8_t status_map[] = {
	[IBV_WC_SUCCESS] = RDP_WC_SUCCESS,
	[IBV_WC_LOC_LEN_ERR] = RDP_WC_LOC_LEN_ERR,
	[IBV_WC_LOC_QP_OP_ERR] = RDP_WC_LOC_QP_OP_ERR,
	[IBV_WC_LOC_EEC_OP_ERR] = RDP_WC_GENERAL_ERR,
	[IBV_WC_LOC_PROT_ERR] = RDP_WC_LOC_PROT_ERR,
	[IBV_WC_WR_FLUSH_ERR] = RDP_WC_WR_FLUSH_ERR,
	[IBV_WC_MW_BIND_ERR] = RDP_WC_GENERAL_ERR,
	[IBV_WC_BAD_RESP_ERR] = RDP_WC_GENERAL_ERR,
	[IBV_WC_LOC_ACCESS_ERR] = RDP_WC_LOC_PROT_ERR,
	[IBV_WC_REM_INV_REQ_ERR] = RDP_WC_REM_INV_REQ_ERR,
	[IBV_WC_REM_ACCESS_ERR] = RDP_WC_REM_ACCESS_ERR,
	[IBV_WC_REM_OP_ERR] = RDP_WC_REM_OP_ERR,
	[IBV_WC_RETRY_EXC_ERR] = RDP_WC_RETRY_EXC_ERR,
	[IBV_WC_RNR_RETRY_EXC_ERR] = RDP_WC_RNR_RETRY_EXC_ERR,
	[IBV_WC_LOC_RDD_VIOL_ERR] = RDP_WC_GENERAL_ERR,
	[IBV_WC_REM_INV_RD_REQ_ERR] = RDP_WC_GENERAL_ERR,
	[IBV_WC_REM_ABORT_ERR] = RDP_WC_GENERAL_ERR,
	[IBV_WC_INV_EECN_ERR] = RDP_WC_GENERAL_ERR,
	[IBV_WC_INV_EEC_STATE_ERR] = RDP_WC_GENERAL_ERR,
	[IBV_WC_FATAL_ERR] = RDP_WC_GENERAL_ERR,
	[IBV_WC_RESP_TIMEOUT_ERR] = RDP_WC_RETRY_EXC_ERR,
	[IBV_WC_GENERAL_ERR] = RDP_WC_GENERAL_ERR,
};

/*
 * Translate one completion. Everything but status, length and immediate
 * data comes from the slot the wr_id points to: an error completion's opcode
 * is not to be trusted (rxe flushes receives as SEND).
 */
static inline void
wc_translate(struct verbs_cq *cq, const struct ibv_wc *w, struct rdp_wc *out)
{
	const struct verbs_slot *s = (const struct verbs_slot *)(uintptr_t)w->wr_id;
	struct verbs_qp *qp = s->qp;
	uint8_t st = likely(w->status < RTE_DIM(status_map)) ?
		status_map[w->status] : RDP_WC_GENERAL_ERR;

	out->wr_id = s->wr_id;
	out->status = st;
	out->opcode = s->wc_opcode;
	out->wc_flags = 0;
	out->reserved = 0;
	out->byte_len = 0;
	out->imm = 0;
	out->qp_num = w->qp_num;
	if (s->is_srq) {
		verbs_srq_slot_free(s->srq, s);
		if (likely(st == RDP_WC_SUCCESS)) {
			out->byte_len = w->byte_len;
			if (w->wc_flags & IBV_WC_WITH_IMM) {
				out->wc_flags = RDP_WC_WITH_IMM;
				out->imm = be32toh(w->imm_data);
			}
		}
	} else if (s->is_send) {
		/* completions within one SQ may be reported out of order: keep the max */
		if (s->seq + 1 > qp->sq_ci)
			qp->sq_ci = s->seq + 1;
	} else {
		qp->rq_ci++;
		if (likely(st == RDP_WC_SUCCESS)) {
			out->byte_len = w->byte_len;
			if (w->wc_flags & IBV_WC_WITH_IMM) {
				out->wc_flags = RDP_WC_WITH_IMM;
				out->imm = be32toh(w->imm_data);
			}
		}
	}
	if (unlikely(st != RDP_WC_SUCCESS)) {
		if (st == RDP_WC_WR_FLUSH_ERR)
			RDP_STAT_ADD(cq->stats.flushed, 1);
		else if (st == RDP_WC_RNR_RETRY_EXC_ERR)
			RDP_STAT_ADD(cq->stats.rnr, 1);
		else
			RDP_STAT_ADD(cq->stats.errors, 1);
	}
}

static int
verbs_poll_cq(struct rdp_cq *rcq, struct rdp_wc *wc, uint16_t n)
{
	struct verbs_cq *cq = to_vcq(rcq);
	struct ibv_wc w[VERBS_POLL_CHUNK];
	int done = 0;

	if (unlikely(__atomic_load_n(&cq->failed, __ATOMIC_ACQUIRE)))
		return -EIO;
	while (done < n) {
		int want = RTE_MIN(n - done, VERBS_POLL_CHUNK);
		int got = ibv_poll_cq(cq->cq, want, w);
		int i;

		if (unlikely(got < 0)) {
			__atomic_store_n(&cq->failed, 1, __ATOMIC_RELAXED);
			return -EIO;
		}
		for (i = 0; i < got; i++)
			wc_translate(cq, &w[i], &wc[done + i]);
		done += got;
		if (got < want)
			break;
	}
	if (done > 0)
		RDP_STAT_ADD(cq->stats.completions, done);
	return done;
}

struct rdp_cq *
verbs_cq_create(struct rdp_dev *dev, uint32_t cqe, int socket)
{
	struct verbs_dev *vd = verbs_dev(dev);
	struct verbs_cq *cq;

	if (cqe > (uint32_t)vd->dev_attr.max_cqe) {
		rdp_err_set(EINVAL, "verbs: CQ of %u entries asked, %s allows %d",
			    cqe, vd->name, vd->dev_attr.max_cqe);
		return NULL;
	}
	cq = verbs_zalloc(sizeof(*cq), socket >= 0 ? socket : vd->numa_node);
	if (cq == NULL) {
		rdp_err_set(ENOMEM, "verbs: out of memory for a CQ");
		return NULL;
	}
	/* no completion channel: the owner busy-polls */
	cq->cq = ibv_create_cq(vd->ctx, cqe, cq, NULL, 0);
	if (cq->cq == NULL) {
		verbs_err(errno ? errno : ENOMEM, "ibv_create_cq(%s, %u)", vd->name, cqe);
		verbs_free(cq, sizeof(*cq));
		return NULL;
	}
	cq->head.poll = verbs_poll_cq;
	cq->head.dev = dev;
	cq->head.cqe = cqe;
	cq->head.socket = socket;
	verbs_dev_cq_add(vd, cq);
	return &cq->head;
}

int
verbs_cq_resize(struct rdp_cq *rcq, uint32_t cqe)
{
	struct verbs_dev *vd = verbs_dev(rcq->dev);
	struct verbs_cq *cq = to_vcq(rcq);
	int ret;

	if (cqe > (uint32_t)vd->dev_attr.max_cqe)
		return rdp_err_set(EINVAL, "verbs: CQ of %u entries asked, %s allows %d",
				   cqe, vd->name, vd->dev_attr.max_cqe);
	ret = ibv_resize_cq(cq->cq, cqe);
	if (ret != 0)
		return verbs_err(ret, "ibv_resize_cq(%u -> %u entries; it cannot drop "
				 "pending completions)", rcq->cqe, cqe);
	rcq->cqe = cqe;
	return 0;
}

int
verbs_cq_destroy(struct rdp_cq *rcq)
{
	struct verbs_dev *vd = verbs_dev(rcq->dev);
	struct verbs_cq *cq = to_vcq(rcq);
	int ret;

	if (cq->nb_qps > 0)
		return rdp_err_set(EBUSY, "verbs: CQ still used by %u QPs", cq->nb_qps);
	ret = ibv_destroy_cq(cq->cq);
	if (ret != 0)
		return verbs_err(ret, "ibv_destroy_cq");
	verbs_dev_cq_del(vd, cq);
	verbs_free(cq, sizeof(*cq));
	return 0;
}
