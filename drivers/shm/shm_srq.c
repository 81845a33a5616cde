/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm shared receive queues on the slow path: the segment every peer of
 * its QPs maps (laid out as a QP segment's receive queue), the recv CQ its
 * QPs share (whose poller reaps it), the limit and teardown.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shm_private.h"

static void
srq_free(struct shm_srq *srq)
{
	if (srq->seg != NULL)
		munmap(srq->seg, srq->seg_len);
	if (srq->memfd >= 0)
		close(srq->memfd);
	free(srq->rq_post);
	free(srq->rq_sge);
	free(srq);
}

/* The segment: a receive queue header and its entries, as a QP segment's. */
static int
srq_seg_init(struct shm_srq *srq, uint32_t size)
{
	size_t ent_off = sizeof(struct shm_qp_seg);

	srq->rq_stride = shm_srq_stride(srq->max_sge);
	srq->rq_inline = shm_srq_inline(srq->rq_stride, srq->max_sge);
	srq->rq_mask = size - 1;
	srq->seg_len = RTE_ALIGN_CEIL(ent_off + (size_t)size * srq->rq_stride, (size_t)4096);
	srq->seg = shm_seg_create("rdp-shm-srq", srq->seg_len, &srq->memfd);
	if (srq->seg == NULL)
		return -ENOMEM;
	srq->ents = (uint8_t *)srq->seg + ent_off;
	srq->seg->magic = SHM_SRQ_MAGIC;
	srq->seg->version = SHM_VERSION;
	srq->seg->rq_size = size;
	srq->seg->rq_stride = srq->rq_stride;
	srq->seg->max_sge = srq->max_sge;
	srq->seg->ent_off = ent_off;
	return 0;
}

struct rdp_srq *
shm_srq_create(struct rdp_pd *pd, const struct rdp_srq_init_attr *attr)
{
	struct shm_dev *sd = to_sdev(pd->dev);
	struct shm_srq *srq;
	uint32_t size;

	if (attr->max_wr > SHM_MAX_WR || attr->max_sge > SHM_MAX_SGE) {
		rdp_err_set(EINVAL, "driver shm: SRQ of %u receives of %u SGEs is above the "
			    "device limits (max_srq_wr %u, max_srq_sge %u)", attr->max_wr,
			    attr->max_sge, SHM_MAX_WR, SHM_MAX_SGE);
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (srq == NULL)
		goto nomem;
	srq->memfd = -1;
	srq->sd = sd;
	srq->max_sge = RTE_MAX(attr->max_sge, 1u);
	size = rte_align32pow2(attr->max_wr);
	srq->rq_post = calloc(size, sizeof(*srq->rq_post));
	srq->rq_sge = calloc((size_t)size * srq->max_sge, sizeof(*srq->rq_sge));
	if (srq->rq_post == NULL || srq->rq_sge == NULL || srq_seg_init(srq, size) < 0)
		goto nomem;
	srq->mr_limit = SHM_MAX_MR;
	srq->any_slot = SHM_NO_SLOT;
	srq->limit = attr->srq_limit;
	srq->head.post_recv = shm_post_srq_recv;
	srq->head.dev = pd->dev;
	srq->head.pd = pd;
	srq->head.max_wr = attr->max_wr;
	srq->head.max_sge = srq->max_sge;
	srq->head.socket = attr->socket;
	srq->head.user_ctx = attr->user_ctx;
	pthread_mutex_lock(&sd->lock);
	TAILQ_INSERT_TAIL(&sd->srqs, srq, next);
	pthread_mutex_unlock(&sd->lock);
	return &srq->head;
nomem:
	rdp_err_set(ENOMEM, "driver shm: cannot allocate an SRQ of %u receives", attr->max_wr);
	if (srq != NULL)
		srq_free(srq);
	return NULL;
}

int
shm_srq_destroy(struct rdp_srq *r)
{
	struct shm_srq *srq = to_ssrq(r);
	struct shm_dev *sd = srq->sd;

	pthread_mutex_lock(&sd->lock);
	if (srq->nb_qps > 0) {
		pthread_mutex_unlock(&sd->lock);
		return rdp_err_set(EBUSY, "driver shm: SRQ still has %u QPs", srq->nb_qps);
	}
	TAILQ_REMOVE(&sd->srqs, srq, next);
	shm_stats_retire_srq(sd, srq);
	pthread_mutex_unlock(&sd->lock);
	shm_event_forget_srq(sd, r);
	/* peers that still map the segment write only into their own mapping of it */
	srq_free(srq);
	return 0;
}

int
shm_srq_modify_limit(struct rdp_srq *r, uint32_t limit)
{
	__atomic_store_n(&to_ssrq(r)->limit, limit, __ATOMIC_RELAXED);
	return 0;
}

int
shm_srq_query(struct rdp_srq *r, struct rdp_srq_attr *attr)
{
	attr->max_wr = r->max_wr;
	attr->max_sge = r->max_sge;
	attr->srq_limit = __atomic_load_n(&to_ssrq(r)->limit, __ATOMIC_RELAXED);
	return 0;
}

int
shm_srq_attach_locked(struct shm_srq *srq, struct shm_qp *qp)
{
	if (srq->rcq != NULL && srq->rcq != qp->rcq)
		return rdp_err_set(EINVAL, "driver shm: the QPs of one SRQ share one recv CQ "
				   "(its poller reaps the SRQ)");
	srq->rcq = qp->rcq;
	srq->nb_qps++;
	qp->srq = srq;
	/* the first SRQ on a CQ is looked at on every poll: its senders ring no doorbell */
	if (srq->nb_qps == 1 && __atomic_load_n(&qp->rcq->peek_srq, __ATOMIC_RELAXED) == NULL) {
		shm_srq_peek_set(srq, true);
		__atomic_store_n(&qp->rcq->peek_srq, srq, __ATOMIC_RELEASE);
	}
	return 0;
}

/*
 * Completions its last QP left in the SRQ, which no poll will return now
 * that the CQ no longer reaps it: they are dropped, and uncounted in the CQ.
 */
static void
srq_drop_completed(struct shm_srq *srq, struct shm_cq *cq)
{
	uint64_t posted = shm_srq_posted(srq), dropped = 0;

	while (srq->reaped != posted) {
		const struct shm_rq_ent *ent = shm_rq_ent(srq->ents, srq->rq_mask, srq->rq_stride,
							   srq->reaped);

		if (__atomic_load_n(&ent->seq, __ATOMIC_ACQUIRE) != shm_rq_seq(srq->reaped))
			break;
		__atomic_store_n(&srq->reaped, srq->reaped + 1, __ATOMIC_RELEASE);
		dropped++;
	}
	if (dropped > 0)
		shm_cq_owner_net(cq, (int64_t)dropped);
}

void
shm_srq_detach_locked(struct shm_srq *srq, struct shm_qp *qp)
{
	struct shm_qp *other;

	srq->nb_qps--;
	if (srq->nb_qps == 0) {
		srq_drop_completed(srq, srq->rcq);
		/*
		 * Not looked at any more. A sender that saw it peeked fills for a
		 * QP gone, which the next QP's reap passes (as without the look).
		 */
		if (__atomic_load_n(&srq->rcq->peek_srq, __ATOMIC_RELAXED) == srq) {
			shm_srq_peek_set(srq, false);
			__atomic_store_n(&srq->rcq->peek_srq, NULL, __ATOMIC_RELEASE);
		}
		__atomic_store_n(&srq->any_slot, SHM_NO_SLOT, __ATOMIC_RELAXED);
		srq->rcq = NULL;
		/* no QP, no poller reaping: the next QP's senders count afresh */
		srq->unreaped = 0;
		return;
	}
	/* its sender's last fills go uncounted: the next reap looks anyway */
	__atomic_fetch_add(&srq->looks_owed, 1, __ATOMIC_RELAXED);
	/* receives it took and completed late are reaped at the next look at any of them */
	TAILQ_FOREACH(other, &qp->sd->qps, next) {
		if (other != qp && other->srq == srq) {
			__atomic_store_n(&srq->any_slot, other->rslot, __ATOMIC_RELAXED);
			shm_bell_self(other->rcq, other->rslot);
			break;
		}
	}
}

void
shm_srq_mr_limit(struct shm_srq *srq, uint32_t limit)
{
	uint32_t cur = __atomic_load_n(&srq->mr_limit, __ATOMIC_RELAXED);

	while (limit < cur && !__atomic_compare_exchange_n(&srq->mr_limit, &cur, limit, false,
							   __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}
