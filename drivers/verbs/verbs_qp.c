/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs driver's reliable connected queue pairs: creation, the
 * INIT -> RTR -> RTS walk from the peer's handshake data, and the fast path
 * (a burst is one chained ibv_post_send() or ibv_post_recv(): one doorbell).
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <rte_cycles.h>

#include "verbs_private.h"

static const uint8_t wc_opcode_of[] = {
	[RDP_WR_SEND] = RDP_WC_SEND,
	[RDP_WR_SEND_WITH_IMM] = RDP_WC_SEND,
	[RDP_WR_RDMA_WRITE] = RDP_WC_RDMA_WRITE,
	[RDP_WR_RDMA_READ] = RDP_WC_RDMA_READ,
};

static const uint8_t ibv_opcode_of[] = {
	[RDP_WR_SEND] = IBV_WR_SEND,
	[RDP_WR_SEND_WITH_IMM] = IBV_WR_SEND_WITH_IMM,
	[RDP_WR_RDMA_WRITE] = IBV_WR_RDMA_WRITE,
	[RDP_WR_RDMA_READ] = IBV_WR_RDMA_READ,
};

static inline uint32_t
sge_bytes(const struct rdp_sge *sg, uint32_t n)
{
	uint32_t i, len = 0;

	for (i = 0; i < n; i++)
		len += sg[i].length;
	return len;
}

static uint16_t
verbs_post_send(struct rdp_qp *rqp, const struct rdp_send_wr *wr, uint16_t n, int *err)
{
	struct verbs_qp *qp = to_vqp(rqp);
	struct ibv_send_wr *chain = qp->send_scratch, *bad = NULL;
	uint32_t room, i;
	uint16_t posted;
	int e = 0, ret;

	if (unlikely(__atomic_load_n(&qp->state, __ATOMIC_RELAXED) < RDP_QPS_RTS)) {
		*err = -EPERM;
		return 0;
	}
	/* the depth asked for, freed only by polled completions */
	room = rqp->cap.max_send_wr - (uint32_t)(qp->sq_pi - qp->sq_ci);
	for (i = 0; i < n; i++) {
		const struct rdp_send_wr *w = &wr[i];
		struct ibv_send_wr *v = &chain[i];
		struct verbs_slot *s;
		unsigned int flags = 0;

		if (unlikely(i == room)) {
			e = -ENOMEM;
			break;
		}
		if (unlikely(w->num_sge > rqp->cap.max_send_sge ||
			     w->opcode >= RTE_DIM(ibv_opcode_of))) {
			e = -EINVAL;
			break;
		}
		if (w->flags & RDP_SEND_SIGNALED)
			flags |= IBV_SEND_SIGNALED;
		if (unlikely(w->opcode == RDP_WR_RDMA_READ && (w->flags & RDP_SEND_INLINE))) {
			e = -EINVAL; /* a READ's list is where its data lands */
			break;
		}
		if (w->num_sge > 0 && w->opcode != RDP_WR_RDMA_READ &&
		    (qp->inline_max > 0 || (w->flags & RDP_SEND_INLINE))) {
			uint32_t len = sge_bytes(w->sg_list, w->num_sge);

			if (unlikely((w->flags & RDP_SEND_INLINE) &&
				     len > rqp->cap.max_inline_data)) {
				e = -EINVAL;
				break;
			}
			/* small messages go inline: no DMA read of the buffer */
			if (len <= qp->inline_max)
				flags |= IBV_SEND_INLINE;
		}
		s = &qp->sq_slots[(qp->sq_pi + i) & qp->sq_mask];
		s->wr_id = w->wr_id;
		s->seq = qp->sq_pi + i;
		s->wc_opcode = wc_opcode_of[w->opcode];
		v->wr_id = (uintptr_t)s;
		v->next = v + 1;
		/* same layout, and verbs does not write the list */
		v->sg_list = (struct ibv_sge *)(uintptr_t)w->sg_list;
		v->num_sge = w->num_sge;
		v->opcode = ibv_opcode_of[w->opcode];
		v->send_flags = flags;
		v->imm_data = htobe32(w->imm);
		v->wr.rdma.remote_addr = w->remote_addr;
		v->wr.rdma.rkey = w->rkey;
	}
	posted = i;
	if (likely(i > 0)) {
		chain[i - 1].next = NULL;
		ret = ibv_post_send(qp->qp, chain, &bad);
		if (unlikely(ret != 0)) {
			posted = bad != NULL ? bad - chain : 0;
			e = -ret;
		}
		qp->sq_pi += posted;
		RDP_STAT_ADD(qp->stats.send_posted, posted);
	}
	if (unlikely(e == -ENOMEM))
		RDP_STAT_ADD(qp->stats.enomem, 1);
	*err = e;
	return posted;
}

static uint16_t
verbs_post_recv(struct rdp_qp *rqp, const struct rdp_recv_wr *wr, uint16_t n, int *err)
{
	struct verbs_qp *qp = to_vqp(rqp);
	struct ibv_recv_wr *chain = qp->recv_scratch, *bad = NULL;
	uint32_t room, i;
	uint16_t posted;
	int e = 0, ret;

	if (unlikely(__atomic_load_n(&qp->state, __ATOMIC_RELAXED) == RDP_QPS_RESET)) {
		*err = -EPERM;
		return 0;
	}
	room = rqp->cap.max_recv_wr - (uint32_t)(qp->rq_pi - qp->rq_ci);
	for (i = 0; i < n; i++) {
		const struct rdp_recv_wr *w = &wr[i];
		struct ibv_recv_wr *v = &chain[i];
		struct verbs_slot *s;

		if (unlikely(i == room)) {
			e = -ENOMEM;
			break;
		}
		if (unlikely(w->num_sge > rqp->cap.max_recv_sge)) {
			e = -EINVAL;
			break;
		}
		s = &qp->rq_slots[(qp->rq_pi + i) & qp->rq_mask];
		s->wr_id = w->wr_id;
		v->wr_id = (uintptr_t)s;
		v->next = v + 1;
		v->sg_list = (struct ibv_sge *)(uintptr_t)w->sg_list;
		v->num_sge = w->num_sge;
	}
	posted = i;
	if (likely(i > 0)) {
		chain[i - 1].next = NULL;
		ret = ibv_post_recv(qp->qp, chain, &bad);
		if (unlikely(ret != 0)) {
			posted = bad != NULL ? bad - chain : 0;
			e = -ret;
		}
		qp->rq_pi += posted;
		RDP_STAT_ADD(qp->stats.recv_posted, posted);
	}
	*err = e;
	return posted;
}

/* Free everything a QP holds in memory (the verbs QP is already destroyed). */
void
verbs_qp_release(struct verbs_qp *qp)
{
	verbs_free(qp->sq_slots, (size_t)(qp->sq_mask + 1) * sizeof(*qp->sq_slots));
	verbs_free(qp->rq_slots, (size_t)(qp->rq_mask + 1) * sizeof(*qp->rq_slots));
	verbs_free(qp->send_scratch, qp->head.cap.max_send_wr * sizeof(*qp->send_scratch));
	verbs_free(qp->recv_scratch, qp->head.cap.max_recv_wr * sizeof(*qp->recv_scratch));
	verbs_free(qp, sizeof(*qp));
}

static int
qp_check_cap(const struct verbs_dev *vd, const struct rdp_qp_cap *c)
{
	const struct ibv_device_attr *a = &vd->dev_attr;

	if (c->max_send_wr > (uint32_t)a->max_qp_wr || c->max_recv_wr > (uint32_t)a->max_qp_wr)
		return rdp_err_set(EINVAL, "verbs: QP of %u send and %u receive WRs asked, "
				   "%s allows %d", c->max_send_wr, c->max_recv_wr, vd->name,
				   a->max_qp_wr);
	if (c->max_send_sge > (uint32_t)a->max_sge || c->max_recv_sge > (uint32_t)a->max_sge)
		return rdp_err_set(EINVAL, "verbs: QP of %u send and %u receive SGEs asked, "
				   "%s allows %d", c->max_send_sge, c->max_recv_sge, vd->name,
				   a->max_sge);
	return 0;
}

static struct ibv_qp *
qp_create_verbs(struct verbs_dev *vd, struct verbs_pd *pd, struct verbs_qp *qp,
		const struct rdp_qp_init_attr *attr, uint32_t inline_ask)
{
	struct ibv_qp_init_attr ia = {
		.qp_context = qp,
		.send_cq = to_vcq(attr->send_cq)->cq,
		.recv_cq = to_vcq(attr->recv_cq)->cq,
		.cap = {
			.max_send_wr = attr->cap.max_send_wr,
			.max_recv_wr = attr->cap.max_recv_wr,
			.max_send_sge = attr->cap.max_send_sge,
			.max_recv_sge = attr->cap.max_recv_sge,
			.max_inline_data = inline_ask,
		},
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 0,
	};
	struct ibv_qp *q;

	if (attr->srq != NULL) {
		/* receives come from the SRQ: no RQ of its own */
		ia.srq = to_vsrq(attr->srq)->srq;
		ia.cap.max_recv_wr = 0;
		ia.cap.max_recv_sge = 0;
	}

	q = ibv_create_qp(pd->pd, &ia);
	if (q != NULL)
		qp->inline_max = RTE_MIN(ia.cap.max_inline_data, vd->max_inline);
	return q;
}

struct rdp_qp *
verbs_qp_create(struct rdp_pd *rpd, const struct rdp_qp_init_attr *attr)
{
	struct verbs_dev *vd = verbs_dev(rpd->dev);
	struct verbs_pd *pd = to_vpd(rpd);
	int socket = attr->send_cq->socket >= 0 ? attr->send_cq->socket : vd->numa_node;
	const struct rdp_qp_cap *cap = &attr->cap;
	uint32_t sq_ring, rq_ring, i;
	struct verbs_qp *qp;
	struct rdp_qp_cap asked = *cap;

	if (attr->srq != NULL) {
		/* an SRQ QP's receive capacities are the SRQ's, not checked here */
		asked.max_recv_wr = 0;
		asked.max_recv_sge = 0;
		cap = &asked;
	}
	if (qp_check_cap(vd, cap) < 0)
		return NULL;
	if (attr->send_cq->dev != rpd->dev || attr->recv_cq->dev != rpd->dev) {
		rdp_err_set(EINVAL, "verbs: QP and CQs belong to different devices");
		return NULL;
	}
	sq_ring = rte_align32pow2(cap->max_send_wr);
	rq_ring = cap->max_recv_wr > 0 ? rte_align32pow2(cap->max_recv_wr) : 0;
	qp = verbs_zalloc(sizeof(*qp), socket);
	if (qp == NULL)
		goto nomem;
	qp->sq_mask = sq_ring - 1;
	qp->rq_mask = rq_ring > 0 ? rq_ring - 1 : 0;
	qp->head.cap = *cap;
	qp->sq_slots = verbs_zalloc(sq_ring * sizeof(*qp->sq_slots), socket);
	qp->send_scratch = verbs_zalloc(cap->max_send_wr * sizeof(*qp->send_scratch), socket);
	if (rq_ring > 0) {
		qp->rq_slots = verbs_zalloc(rq_ring * sizeof(*qp->rq_slots), socket);
		qp->recv_scratch = verbs_zalloc(cap->max_recv_wr * sizeof(*qp->recv_scratch),
						socket);
	}
	if (qp->sq_slots == NULL || qp->send_scratch == NULL ||
	    (rq_ring > 0 && (qp->rq_slots == NULL || qp->recv_scratch == NULL)))
		goto nomem;
	for (i = 0; i < sq_ring; i++) {
		qp->sq_slots[i].qp = qp;
		qp->sq_slots[i].is_send = 1;
	}
	for (i = 0; i < rq_ring; i++) {
		qp->rq_slots[i].qp = qp;
		qp->rq_slots[i].wc_opcode = RDP_WC_RECV;
	}
	/* small sends inline when the device allows; else exactly what was asked */
	qp->qp = qp_create_verbs(vd, pd, qp, attr, RTE_MAX(cap->max_inline_data, vd->max_inline));
	if (qp->qp == NULL && vd->max_inline > cap->max_inline_data)
		qp->qp = qp_create_verbs(vd, pd, qp, attr, cap->max_inline_data);
	if (qp->qp == NULL) {
		verbs_err(errno ? errno : ENOMEM, "ibv_create_qp(%s: %u/%u WRs, %u/%u SGEs, "
			  "%u inline bytes)", vd->name, cap->max_send_wr, cap->max_recv_wr,
			  cap->max_send_sge, cap->max_recv_sge, cap->max_inline_data);
		verbs_qp_release(qp);
		return NULL;
	}
	if (getrandom(&qp->psn, sizeof(qp->psn), 0) != sizeof(qp->psn))
		qp->psn = (uint32_t)rte_rdtsc();
	qp->psn &= 0xffffff;
	qp->state = RDP_QPS_RESET;
	qp->head.post_send = verbs_post_send;
	qp->head.post_recv = verbs_post_recv;
	qp->head.dev = rpd->dev;
	qp->head.pd = rpd;
	qp->head.send_cq = attr->send_cq;
	qp->head.recv_cq = attr->recv_cq;
	qp->head.qp_num = qp->qp->qp_num;
	qp->head.user_ctx = attr->user_ctx;
	to_vcq(attr->send_cq)->nb_qps++;
	if (attr->recv_cq != attr->send_cq)
		to_vcq(attr->recv_cq)->nb_qps++;
	pd->nb_users++;
	verbs_dev_qp_add(vd, qp);
	return &qp->head;
nomem:
	rdp_err_set(ENOMEM, "verbs: out of memory for a QP of %u/%u WRs",
		    cap->max_send_wr, cap->max_recv_wr);
	if (qp != NULL)
		verbs_qp_release(qp);
	return NULL;
}

static const char *
state_name(enum ibv_qp_state s)
{
	switch (s) {
	case IBV_QPS_RESET: return "RESET";
	case IBV_QPS_INIT: return "INIT";
	case IBV_QPS_RTR: return "RTR";
	case IBV_QPS_RTS: return "RTS";
	case IBV_QPS_SQD: return "SQD";
	case IBV_QPS_SQE: return "SQE";
	case IBV_QPS_ERR: return "ERR";
	default: return "UNKNOWN";
	}
}

/* Defaults when RTR/RTS come without conn params: retry forever, as verbs users expect. */
static const struct rdp_qp_conn_params conn_default = {
	.path_mtu = 0, .rnr_retry = 7, .retry_cnt = 7, .timeout = 14, .min_rnr_timer = 12,
};

static int
conn_check(const struct verbs_dev *vd, const struct rdp_qp_conn_params *c)
{
	if (c->max_rd_atomic > vd->dev_attr.max_qp_init_rd_atom ||
	    c->max_dest_rd_atomic > vd->dev_attr.max_qp_rd_atom)
		return rdp_err_set(EINVAL, "verbs: %s: max_rd_atomic=%u (device: at most %d), "
				   "max_dest_rd_atomic=%u (device: at most %d)", vd->name,
				   c->max_rd_atomic, vd->dev_attr.max_qp_init_rd_atom,
				   c->max_dest_rd_atomic, vd->dev_attr.max_qp_rd_atom);
	if (c->rnr_retry > 7 || c->retry_cnt > 7 || c->timeout > 31 || c->min_rnr_timer > 31)
		return rdp_err_set(EINVAL, "verbs: conn params out of range: rnr_retry=%u "
				   "(0..7), retry_cnt=%u (0..7), timeout=%u (0..31), "
				   "min_rnr_timer=%u (0..31)", c->rnr_retry, c->retry_cnt,
				   c->timeout, c->min_rnr_timer);
	if (c->path_mtu != 0 && (c->path_mtu < 256 || c->path_mtu > 4096 ||
				 (c->path_mtu & (c->path_mtu - 1)) != 0))
		return rdp_err_set(EINVAL, "verbs: path_mtu=%u: expected 0 (automatic) or a "
				   "power of two in 256..4096", c->path_mtu);
	return 0;
}

static int
fill_rtr(struct verbs_dev *vd, const struct rdp_qp_attr *attr,
	 const struct rdp_qp_conn_params *c, struct ibv_qp_attr *a, int *mask)
{
	const struct rdp_qp_addr *r = &attr->remote;
	struct ibv_port_attr pa;
	uint32_t mtu;

	if (ibv_query_port(vd->ctx, vd->port, &pa) != 0)
		return verbs_err(errno, "ibv_query_port(%s, %u)", vd->name, vd->port);
	if (r->mtu < 256)
		return rdp_err_set(EINVAL, "verbs: the peer's MTU %u is below 256", r->mtu);
	/* both sides take the smaller of the two active MTUs */
	mtu = RTE_MIN(verbs_mtu_bytes(pa.active_mtu), r->mtu);

	if (c->path_mtu != 0)
		mtu = RTE_MIN(mtu, c->path_mtu);
	a->path_mtu = verbs_mtu_enum(mtu);
	a->dest_qp_num = r->qpn;
	a->rq_psn = r->psn & 0xffffff;
	a->max_dest_rd_atomic = c->max_dest_rd_atomic;
	a->min_rnr_timer = c->min_rnr_timer;
	a->ah_attr.port_num = vd->port;
	a->ah_attr.sl = vd->sl;
	if (vd->link_layer == RDP_LINK_INFINIBAND) {
		a->ah_attr.dlid = r->lid;
		/* across subnets the LID alone does not route: add a GRH */
		a->ah_attr.is_global = memcmp(r->gid, vd->gid.raw, 8) != 0 &&
			r->gid[0] != 0;
	} else {
		a->ah_attr.is_global = 1;
	}
	if (a->ah_attr.is_global) {
		memcpy(a->ah_attr.grh.dgid.raw, r->gid, RDP_GID_LEN);
		a->ah_attr.grh.sgid_index = vd->gid_index;
		a->ah_attr.grh.hop_limit = vd->hop_limit;
		a->ah_attr.grh.traffic_class = vd->traffic_class;
	}
	*mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	return 0;
}

int
verbs_qp_modify(struct rdp_qp *rqp, const struct rdp_qp_attr *attr, unsigned int mask)
{
	struct verbs_dev *vd = verbs_dev(rqp->dev);
	struct verbs_qp *qp = to_vqp(rqp);
	const struct rdp_qp_conn_params *c = &conn_default;
	struct ibv_qp_attr a;
	int m = IBV_QP_STATE, ret;

	if (!(mask & RDP_QP_ATTR_STATE))
		return rdp_err_set(EINVAL, "verbs: rdp_qp_modify needs RDP_QP_ATTR_STATE");
	if (mask & RDP_QP_ATTR_CONN) {
		ret = conn_check(vd, &attr->conn);
		if (ret < 0)
			return ret;
		c = &attr->conn;
	} else if (qp->state >= RDP_QPS_RTR) {
		c = &qp->attr.conn;
	}
	memset(&a, 0, sizeof(a));
	switch (attr->state) {
	case RDP_QPS_RESET:
		a.qp_state = IBV_QPS_RESET;
		break;
	case RDP_QPS_INIT:
		a.qp_state = IBV_QPS_INIT;
		a.pkey_index = 0;
		a.port_num = vd->port;
		/* what each MR grants is checked by the MR: the QP allows both */
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
		m |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		break;
	case RDP_QPS_RTR:
		if (!(mask & RDP_QP_ATTR_REMOTE))
			return rdp_err_set(EINVAL, "verbs: RTR needs the peer's address "
					   "(RDP_QP_ATTR_REMOTE)");
		a.qp_state = IBV_QPS_RTR;
		ret = fill_rtr(vd, attr, c, &a, &m);
		if (ret < 0)
			return ret;
		break;
	case RDP_QPS_RTS:
		a.qp_state = IBV_QPS_RTS;
		a.timeout = c->timeout;
		a.retry_cnt = c->retry_cnt;
		a.rnr_retry = c->rnr_retry;
		a.sq_psn = qp->psn;
		a.max_rd_atomic = c->max_rd_atomic;
		m |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			IBV_QP_MAX_QP_RD_ATOMIC;
		break;
	case RDP_QPS_ERR:
		a.qp_state = IBV_QPS_ERR;
		break;
	default:
		return rdp_err_set(EINVAL, "verbs: unknown QP state %u", attr->state);
	}
	ret = ibv_modify_qp(qp->qp, &a, m);
	if (ret != 0)
		return verbs_err(ret, "ibv_modify_qp(QP %u %s -> %s)", rqp->qp_num,
				 rdp_qp_state_str(qp->state), state_name(a.qp_state));
	if (attr->state == RDP_QPS_RTR) {
		qp->attr.remote = attr->remote;
		qp->attr.conn = *c;
		qp->attr.conn.path_mtu = verbs_mtu_bytes(a.path_mtu);
	} else if (attr->state == RDP_QPS_RTS) {
		uint32_t path_mtu = qp->attr.conn.path_mtu;

		qp->attr.conn = *c;
		qp->attr.conn.path_mtu = path_mtu;
	}
	if (attr->state == RDP_QPS_RESET) {
		/* RESET drops every WR without a completion */
		qp->sq_ci = qp->sq_pi;
		qp->rq_ci = qp->rq_pi;
	}
	__atomic_store_n(&qp->state, attr->state, __ATOMIC_RELAXED);
	return 0;
}

int
verbs_qp_query(struct rdp_qp *rqp, struct rdp_qp_attr *attr)
{
	struct verbs_qp *qp = to_vqp(rqp);
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	int ret;

	ret = ibv_query_qp(qp->qp, &a, IBV_QP_STATE, &ia);
	if (ret != 0)
		return verbs_err(ret, "ibv_query_qp(QP %u)", rqp->qp_num);
	*attr = qp->attr;
	switch (a.qp_state) {
	case IBV_QPS_RESET: attr->state = RDP_QPS_RESET; break;
	case IBV_QPS_INIT: attr->state = RDP_QPS_INIT; break;
	case IBV_QPS_RTR: attr->state = RDP_QPS_RTR; break;
	case IBV_QPS_RTS:
	case IBV_QPS_SQD: attr->state = RDP_QPS_RTS; break;
	default: attr->state = RDP_QPS_ERR; break;
	}
	return 0;
}

int
verbs_qp_local_addr(struct rdp_qp *rqp, struct rdp_qp_addr *addr)
{
	struct verbs_dev *vd = verbs_dev(rqp->dev);
	struct ibv_port_attr pa;

	if (ibv_query_port(vd->ctx, vd->port, &pa) != 0)
		return verbs_err(errno, "ibv_query_port(%s, %u)", vd->name, vd->port);
	addr->qpn = rqp->qp_num;
	addr->psn = to_vqp(rqp)->psn;
	memcpy(addr->gid, vd->gid.raw, RDP_GID_LEN);
	addr->lid = vd->link_layer == RDP_LINK_INFINIBAND ? pa.lid : 0;
	addr->mtu = verbs_mtu_bytes(pa.active_mtu);
	return 0;
}

int
verbs_qp_destroy(struct rdp_qp *rqp)
{
	struct verbs_dev *vd = verbs_dev(rqp->dev);
	struct verbs_qp *qp = to_vqp(rqp);
	int ret;

	ret = ibv_destroy_qp(qp->qp);
	if (ret != 0)
		return verbs_err(ret, "ibv_destroy_qp(QP %u)", rqp->qp_num);
	to_vcq(rqp->send_cq)->nb_qps--;
	if (rqp->recv_cq != rqp->send_cq)
		to_vcq(rqp->recv_cq)->nb_qps--;
	to_vpd(rqp->pd)->nb_users--;
	verbs_dev_qp_bury(vd, qp);
	return 0;
}
