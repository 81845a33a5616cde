/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs driver's shared receive queues: ibv_create_srq() and its
 * limit, and the fast path (a burst is one chained ibv_post_srq_recv()).
 * Completions come on the CQs of the QPs that took the receives; they are
 * classified by the slot their wr_id points to, as for an RQ.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_private.h"

static uint16_t
verbs_post_srq_recv(struct rdp_srq *rsrq, const struct rdp_recv_wr *wr, uint16_t n, int *err)
{
	struct verbs_srq *srq = to_vsrq(rsrq);
	struct ibv_recv_wr *chain = srq->scratch, *bad = NULL;
	uint64_t room = __atomic_load_n(&srq->free_tail, __ATOMIC_ACQUIRE) - srq->free_head;
	uint32_t i;
	uint16_t posted;
	int e = 0, ret;

	for (i = 0; i < n; i++) {
		const struct rdp_recv_wr *w = &wr[i];
		struct ibv_recv_wr *v = &chain[i];
		struct verbs_slot *s;

		if (unlikely(i == room)) {
			e = -ENOMEM;
			break;
		}
		if (unlikely(w->num_sge > rsrq->max_sge)) {
			e = -EINVAL;
			break;
		}
		s = &srq->slots[srq->free_ring[(srq->free_head + i) & srq->mask]];
		s->wr_id = w->wr_id;
		v->wr_id = (uintptr_t)s;
		v->next = v + 1;
		v->sg_list = (struct ibv_sge *)(uintptr_t)w->sg_list;
		v->num_sge = w->num_sge;
	}
	posted = i;
	if (likely(i > 0)) {
		chain[i - 1].next = NULL;
		ret = ibv_post_srq_recv(srq->srq, chain, &bad);
		if (unlikely(ret != 0)) {
			posted = bad != NULL ? bad - chain : 0;
			e = -ret;
		}
		srq->free_head += posted;
		RDP_STAT_ADD(srq->recv_posted, posted);
	}
	*err = e;
	return posted;
}

/* Free what an SRQ holds in memory (the verbs SRQ is already destroyed). */
void
verbs_srq_release(struct verbs_srq *srq)
{
	verbs_free(srq->slots, (size_t)srq->head.max_wr * sizeof(*srq->slots));
	verbs_free(srq->free_ring, (size_t)(srq->mask + 1) * sizeof(*srq->free_ring));
	verbs_free(srq->scratch, (size_t)srq->head.max_wr * sizeof(*srq->scratch));
	verbs_free(srq, sizeof(*srq));
}

static int
srq_check(const struct verbs_dev *vd, const struct rdp_srq_init_attr *attr)
{
	const struct ibv_device_attr *a = &vd->dev_attr;

	if (a->max_srq <= 0)
		return rdp_err_set(ENOTSUP, "verbs: %s has no shared receive queues", vd->name);
	if (attr->max_wr > (uint32_t)a->max_srq_wr || attr->max_sge > (uint32_t)a->max_srq_sge)
		return rdp_err_set(EINVAL, "verbs: SRQ of %u receives of %u SGEs asked, %s "
				   "allows %d and %d", attr->max_wr, attr->max_sge, vd->name,
				   a->max_srq_wr, a->max_srq_sge);
	return 0;
}

/* The slots and the free ring, every slot free. */
static int
srq_slots_init(struct verbs_srq *srq, uint32_t max_wr, int socket)
{
	uint32_t ring = rte_align32pow2(max_wr), i;

	srq->mask = ring - 1;
	srq->slots = verbs_zalloc((size_t)max_wr * sizeof(*srq->slots), socket);
	srq->free_ring = verbs_zalloc((size_t)ring * sizeof(*srq->free_ring), socket);
	srq->scratch = verbs_zalloc((size_t)max_wr * sizeof(*srq->scratch), socket);
	if (srq->slots == NULL || srq->free_ring == NULL || srq->scratch == NULL)
		return -ENOMEM;
	for (i = 0; i < max_wr; i++) {
		srq->slots[i].srq = srq;
		srq->slots[i].is_srq = 1;
		srq->slots[i].wc_opcode = RDP_WC_RECV;
		srq->free_ring[i] = i;
	}
	srq->free_tail = max_wr;
	return 0;
}

struct rdp_srq *
verbs_srq_create(struct rdp_pd *rpd, const struct rdp_srq_init_attr *attr)
{
	struct verbs_dev *vd = verbs_dev(rpd->dev);
	int socket = attr->socket >= 0 ? attr->socket : vd->numa_node;
	uint32_t max_sge = RTE_MAX(attr->max_sge, 1u);
	struct ibv_srq_init_attr ia = { 0 };
	struct verbs_srq *srq;

	if (srq_check(vd, attr) < 0)
		return NULL;
	srq = verbs_zalloc(sizeof(*srq), socket);
	if (srq == NULL || srq_slots_init(srq, attr->max_wr, socket) < 0) {
		rdp_err_set(ENOMEM, "verbs: out of memory for an SRQ of %u receives", attr->max_wr);
		goto fail;
	}
	srq->head.max_wr = attr->max_wr;
	ia.srq_context = srq;
	ia.attr.max_wr = attr->max_wr;
	ia.attr.max_sge = max_sge;
	srq->srq = ibv_create_srq(to_vpd(rpd)->pd, &ia);
	if (srq->srq == NULL) {
		verbs_err(errno ? errno : ENOMEM, "ibv_create_srq(%s: %u WRs, %u SGEs)", vd->name,
			  attr->max_wr, max_sge);
		goto fail;
	}
	srq->head.post_recv = verbs_post_srq_recv;
	srq->head.dev = rpd->dev;
	srq->head.pd = rpd;
	srq->head.max_sge = max_sge;
	srq->head.socket = attr->socket;
	srq->head.user_ctx = attr->user_ctx;
	/* armed explicitly: not every device arms at creation */
	if (attr->srq_limit > 0 && verbs_srq_modify_limit(&srq->head, attr->srq_limit) < 0) {
		ibv_destroy_srq(srq->srq);
		goto fail;
	}
	to_vpd(rpd)->nb_users++;
	pthread_mutex_lock(&vd->lock);
	TAILQ_INSERT_TAIL(&vd->srqs, srq, next);
	pthread_mutex_unlock(&vd->lock);
	return &srq->head;
fail:
	if (srq != NULL) {
		srq->head.max_wr = attr->max_wr;
		verbs_srq_release(srq);
	}
	return NULL;
}

int
verbs_srq_destroy(struct rdp_srq *rsrq)
{
	struct verbs_dev *vd = verbs_dev(rsrq->dev);
	struct verbs_srq *srq = to_vsrq(rsrq);
	int ret;

	ret = ibv_destroy_srq(srq->srq);
	if (ret != 0)
		return verbs_err(ret, "ibv_destroy_srq");
	to_vpd(rsrq->pd)->nb_users--;
	pthread_mutex_lock(&vd->lock);
	TAILQ_REMOVE(&vd->srqs, srq, next);
	vd->dead_srq_posted += RDP_STAT_READ(srq->recv_posted);
	TAILQ_INSERT_TAIL(&vd->srq_zombies, srq, next);
	pthread_mutex_unlock(&vd->lock);
	return 0;
}

int
verbs_srq_modify_limit(struct rdp_srq *rsrq, uint32_t limit)
{
	struct ibv_srq_attr a = { .srq_limit = limit };
	int ret = ibv_modify_srq(to_vsrq(rsrq)->srq, &a, IBV_SRQ_LIMIT);

	if (ret != 0)
		return verbs_err(ret, "ibv_modify_srq(limit %u)", limit);
	return 0;
}

int
verbs_srq_query(struct rdp_srq *rsrq, struct rdp_srq_attr *attr)
{
	struct ibv_srq_attr a;
	int ret = ibv_query_srq(to_vsrq(rsrq)->srq, &a);

	if (ret != 0)
		return verbs_err(ret, "ibv_query_srq");
	attr->max_wr = rsrq->max_wr;
	attr->max_sge = rsrq->max_sge;
	attr->srq_limit = a.srq_limit;
	return 0;
}
