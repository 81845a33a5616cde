/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm CQs and QPs on the slow path: creation (shared segments as memfds),
 * state changes, the move to error that any thread may make, and teardown.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shm_private.h"

void *
shm_seg_create(const char *name, size_t len, int *memfd)
{
	void *p;
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)len) < 0 || shm_seal(fd) < 0) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	*memfd = fd;
	return p;
}

/* ---------------------------------------------------------------------- */
/* CQ                                                                     */
/* ---------------------------------------------------------------------- */

struct rdp_cq *
shm_cq_create(struct rdp_dev *dev, uint32_t cqe, int socket)
{
	struct shm_dev *sd = to_sdev(dev);
	struct shm_cq *cq;
	uint32_t ring;

	if (cqe > sd->max_cqe) {
		rdp_err_set(EINVAL, "driver shm: CQ of %u entries is above max_cqe %u", cqe,
			    sd->max_cqe);
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (cq == NULL)
		goto nomem;
	cq->memfd = -1;
	cq->sd = sd;
	cq->seg_len = shm_cq_seg_size(SHM_BELL_WORDS);
	cq->seg = shm_seg_create("rdp-shm-cq", cq->seg_len, &cq->memfd);
	ring = rte_align32pow2(cqe + 1);
	cq->ring = calloc(ring, sizeof(cq->ring[0]));
	cq->pend = calloc(SHM_BELL_WORDS, sizeof(uint64_t));
	cq->slot = calloc(SHM_MAX_QP, sizeof(cq->slot[0]));
	if (cq->seg == NULL || cq->ring == NULL || cq->pend == NULL || cq->slot == NULL)
		goto nomem;
	cq->seg->magic = SHM_CQ_MAGIC;
	cq->seg->version = SHM_VERSION;
	cq->seg->nb_words = SHM_BELL_WORDS;
	cq->seg->cqe = cqe;
	cq->ring_mask = ring - 1;
	cq->order = sd->order;
	cq->hot = SHM_NO_SLOT;
	cq->announced = SHM_NO_SLOT;
	cq->delay = sd->delay;
	cq->head.poll = shm_poll_cq;
	cq->head.dev = dev;
	cq->head.cqe = cqe;
	cq->head.socket = socket;
	pthread_mutex_lock(&sd->lock);
	/* one seeded stream per CQ, reproducible run to run */
	cq->rng = (sd->seed + 1 + sd->nb_cq_made++) * UINT64_C(0x9e3779b97f4a7c15);
	if (cq->rng == 0)
		cq->rng = 1;
	TAILQ_INSERT_TAIL(&sd->cqs, cq, next);
	pthread_mutex_unlock(&sd->lock);
	return &cq->head;
nomem:
	rdp_err_set(ENOMEM, "driver shm: cannot allocate a CQ of %u entries", cqe);
	if (cq != NULL) {
		if (cq->seg != NULL)
			munmap(cq->seg, cq->seg_len);
		if (cq->memfd >= 0)
			close(cq->memfd);
		free(cq->ring);
		free(cq->pend);
		free(cq->slot);
		free(cq);
	}
	return NULL;
}

int
shm_cq_resize(struct rdp_cq *c, uint32_t cqe)
{
	struct shm_cq *cq = to_scq(c);
	int64_t pending = shm_cq_pending(cq);
	uint32_t ring = rte_align32pow2(cqe + 1), i, n;
	struct shm_lcqe *r;

	if (cqe > cq->sd->max_cqe)
		return rdp_err_set(EINVAL, "driver shm: CQ resize to %u is above max_cqe %u", cqe,
				   cq->sd->max_cqe);
	if ((int64_t)cqe < pending)
		return rdp_err_set(EINVAL, "driver shm: cannot resize a CQ to %u entries while "
				   "%" PRId64 " completions are pending", cqe, pending);
	if (ring != cq->ring_mask + 1) {
		r = calloc(ring, sizeof(*r));
		if (r == NULL)
			return rdp_err_set(ENOMEM, "driver shm: out of memory");
		n = cq->ring_tail - cq->ring_head;
		for (i = 0; i < n; i++)
			r[i] = cq->ring[(cq->ring_head + i) & cq->ring_mask];
		free(cq->ring);
		cq->ring = r;
		cq->ring_mask = ring - 1;
		cq->ring_head = 0;
		cq->ring_tail = n;
	}
	__atomic_store_n(&cq->seg->cqe, cqe, __ATOMIC_RELEASE);
	c->cqe = cqe;
	return 0;
}

int
shm_cq_destroy(struct rdp_cq *c)
{
	struct shm_cq *cq = to_scq(c);
	struct shm_dev *sd = cq->sd;

	pthread_mutex_lock(&sd->lock);
	if (cq->nb_qps > 0) {
		pthread_mutex_unlock(&sd->lock);
		return rdp_err_set(EBUSY, "driver shm: CQ still has %u QPs", cq->nb_qps);
	}
	TAILQ_REMOVE(&sd->cqs, cq, next);
	shm_stats_retire_cq(sd, cq);
	pthread_mutex_unlock(&sd->lock);
	shm_event_forget(sd, NULL, c);
	munmap(cq->seg, cq->seg_len);
	close(cq->memfd);
	free(cq->ring);
	free(cq->pend);
	free(cq->slot);
	free(cq);
	return 0;
}

static int
slot_take_locked(struct shm_cq *cq, struct shm_qp *qp, uint32_t *slot)
{
	uint32_t w, b, words;

	for (w = 0; w < SHM_BELL_WORDS; w++)
		if (~cq->slot_used[w] != 0)
			break;
	if (w == SHM_BELL_WORDS)
		return -ENOSPC;
	b = __builtin_ctzll(~cq->slot_used[w]);
	cq->slot_used[w] |= UINT64_C(1) << b;
	*slot = w * 64 + b;
	__atomic_store_n(&cq->slot[*slot], qp, __ATOMIC_RELEASE);
	words = __atomic_load_n(&cq->words_used, __ATOMIC_RELAXED);
	if (w + 1 > words)
		__atomic_store_n(&cq->words_used, w + 1, __ATOMIC_RELEASE);
	cq->nb_qps++;
	return 0;
}

static void
slot_give_locked(struct shm_cq *cq, uint32_t slot)
{
	uint32_t hot = slot, announced = slot;

	__atomic_store_n(&cq->slot[slot], NULL, __ATOMIC_RELEASE);
	/* the poller must not look at this slot's next QP before it receives */
	__atomic_compare_exchange_n(&cq->hot, &hot, SHM_NO_SLOT, false, __ATOMIC_RELEASE,
				    __ATOMIC_RELAXED);
	__atomic_compare_exchange_n(&cq->announced, &announced, SHM_NO_SLOT, false,
				    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	cq->slot_used[slot / 64] &= ~(UINT64_C(1) << (slot % 64));
	cq->nb_qps--;
}

/* ---------------------------------------------------------------------- */
/* QP                                                                     */
/* ---------------------------------------------------------------------- */

static void
qp_free(struct shm_qp *qp)
{
	if (qp->seg != NULL)
		munmap(qp->seg, qp->seg_len);
	if (qp->memfd >= 0)
		close(qp->memfd);
	shm_connect_abort(qp);
	free(qp->sq);
	free(qp->rq_post);
	free(qp->rq_sge);
	free(qp);
}

struct rdp_qp *
shm_qp_create(struct rdp_pd *pd, const struct rdp_qp_init_attr *attr)
{
	struct shm_dev *sd = to_sdev(pd->dev);
	const struct rdp_qp_cap *cap = &attr->cap;
	struct shm_qp *qp;
	uint32_t sq_size, rq_size, i;
	size_t ent_off;
	int ret;

	if (cap->max_send_wr > SHM_MAX_WR - sd->grant_extra || cap->max_recv_wr > SHM_MAX_WR ||
	    cap->max_send_sge > SHM_MAX_SGE || cap->max_recv_sge > SHM_MAX_SGE ||
	    cap->max_inline_data > SHM_MAX_INLINE) {
		rdp_err_set(EINVAL, "driver shm: QP capacities above the device limits "
			    "(max_qp_wr %u, max_sge %u, max_inline_data %u)", SHM_MAX_WR,
			    SHM_MAX_SGE, SHM_MAX_INLINE);
		return NULL;
	}
	if (attr->send_cq->dev != pd->dev || attr->recv_cq->dev != pd->dev) {
		rdp_err_set(EINVAL, "driver shm: the QP's CQs belong to another device");
		return NULL;
	}
	if (attr->nb_peer_mrs > RDP_QP_MAX_PEER_MRS ||
	    (attr->nb_peer_mrs > 0 && attr->peer_mrs == NULL)) {
		rdp_err_set(EINVAL, "driver shm: peer_mrs names %u MRs, at most %d",
			    attr->nb_peer_mrs, RDP_QP_MAX_PEER_MRS);
		return NULL;
	}
	if (attr->srq != NULL && (attr->srq->pd != pd || attr->nb_peer_mrs > 0)) {
		rdp_err_set(EINVAL, "driver shm: a QP with an SRQ needs the SRQ's PD and no "
			    "peer_mrs (its peer maps every receive MR of the PD)");
		return NULL;
	}
	for (i = 0; i < attr->nb_peer_mrs; i++) {
		const struct shm_mr *mr = to_smr(attr->peer_mrs[i]);

		if (mr->memfd < 0 || mr->head.pd != pd) {
			rdp_err_set(EINVAL, "driver shm: peer_mrs[%u] is not shareable memory of "
				    "this PD (use rdp_mr_alloc)", i);
			return NULL;
		}
	}
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL)
		goto nomem;
	qp->memfd = -1;
	qp->connect_fd = -1;
	qp->sd = sd;
	qp->scq = to_scq(attr->send_cq);
	qp->rcq = to_scq(attr->recv_cq);
	/* send queue: private */
	qp->sq_depth = cap->max_send_wr + sd->grant_extra;
	sq_size = rte_align32pow2(qp->sq_depth);
	qp->max_send_sge = RTE_MAX(cap->max_send_sge, 1u);
	qp->max_inline = cap->max_inline_data;
	qp->sq_stride = RTE_ALIGN_CEIL((uint32_t)(sizeof(struct shm_swqe) +
				       qp->max_send_sge * sizeof(struct shm_lsge) + qp->max_inline),
				       64u);
	qp->sq_mask = sq_size - 1;
	qp->sq = aligned_alloc(64, (size_t)sq_size * qp->sq_stride);
	/* receive queue: shared with the peer (one unused entry with an SRQ) */
	rq_size = attr->srq != NULL ? 1 : rte_align32pow2(cap->max_recv_wr);
	qp->max_recv_sge = attr->srq != NULL ? 1 : RTE_MAX(cap->max_recv_sge, 1u);
	qp->rq_stride = shm_rq_stride(qp->max_recv_sge);
	qp->rq_mask = rq_size - 1;
	ent_off = sizeof(struct shm_qp_seg);
	qp->seg_len = RTE_ALIGN_CEIL(ent_off + (size_t)rq_size * qp->rq_stride, (size_t)4096);
	qp->seg = shm_seg_create("rdp-shm-qp", qp->seg_len, &qp->memfd);
	qp->rq_inline = qp->rq_stride - shm_rq_ent_hdr(qp->max_recv_sge);
	qp->rq_post = calloc(rq_size, sizeof(*qp->rq_post));
	qp->rq_sge = calloc((size_t)rq_size * qp->max_recv_sge, sizeof(*qp->rq_sge));
	if (qp->sq == NULL || qp->seg == NULL || qp->rq_post == NULL || qp->rq_sge == NULL)
		goto nomem;
	qp->ents = (uint8_t *)qp->seg + ent_off;
	qp->seg->magic = SHM_QP_MAGIC;
	qp->seg->version = SHM_VERSION;
	qp->seg->rq_size = rq_size;
	qp->seg->rq_stride = qp->rq_stride;
	qp->seg->max_sge = qp->max_recv_sge;
	qp->seg->ent_off = ent_off;
	qp->mr_limit = SHM_MAX_MR;
	qp->nb_peer_mr = attr->nb_peer_mrs;
	for (i = 0; i < attr->nb_peer_mrs; i++)
		qp->peer_mr[i] = to_smr(attr->peer_mrs[i])->id;
	qp->drop_left = sd->drop_peer;
	qp->dup_every = sd->dup_send;
	qp->state = RDP_QPS_RESET;
	qp->head.post_send = shm_post_send;
	qp->head.post_recv = shm_post_recv;
	qp->head.dev = pd->dev;
	qp->head.pd = pd;
	qp->head.send_cq = attr->send_cq;
	qp->head.recv_cq = attr->recv_cq;
	qp->head.cap = *cap;
	qp->head.user_ctx = attr->user_ctx;

	pthread_mutex_lock(&sd->lock);
	/*
	 * Its number before its CQ slots publish it: a poller reaping an SRQ
	 * entry of the QP that had the slot before compares it (srq_ent_qp()).
	 */
	qp->head.qp_num = sd->next_qpn;
	qp->seg->qpn = qp->head.qp_num;
	if (attr->srq != NULL && shm_srq_attach_locked(to_ssrq(attr->srq), qp) < 0) {
		pthread_mutex_unlock(&sd->lock);
		qp_free(qp);
		return NULL;
	}
	ret = slot_take_locked(qp->rcq, qp, &qp->rslot);
	if (ret == 0 && qp->scq != qp->rcq) {
		ret = slot_take_locked(qp->scq, qp, &qp->sslot);
		if (ret < 0)
			slot_give_locked(qp->rcq, qp->rslot);
	} else {
		qp->sslot = qp->rslot;
	}
	if (ret < 0 && qp->srq != NULL)
		shm_srq_detach_locked(qp->srq, qp);
	if (ret == 0 && qp->srq != NULL)
		__atomic_store_n(&qp->srq->any_slot, qp->rslot, __ATOMIC_RELAXED);
	if (ret == 0) {
		sd->next_qpn++;
		TAILQ_INSERT_TAIL(&sd->qps, qp, next);
	}
	pthread_mutex_unlock(&sd->lock);
	if (ret < 0) {
		rdp_err_set(ENOSPC, "driver shm: a CQ serves at most %u QPs", SHM_MAX_QP);
		qp_free(qp);
		return NULL;
	}
	return &qp->head;
nomem:
	rdp_err_set(ENOMEM, "driver shm: cannot allocate a QP (SQ %u, RQ %u)", cap->max_send_wr,
		    cap->max_recv_wr);
	if (qp != NULL)
		qp_free(qp);
	return NULL;
}

bool
shm_qp_set_error(struct shm_qp *qp)
{
	int s = __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE);
	uint64_t old;

	do {
		if (s == RDP_QPS_ERR)
			return false;
	} while (!__atomic_compare_exchange_n(&qp->state, &s, RDP_QPS_ERR, false,
					      __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
	/* close the RQ: the peer claims nothing from now on; what it claimed
	 * before [done, final) it completes, unless it is dead. Sequentially
	 * consistent: a sender to a QP on an SRQ reads it after its claim of
	 * the SRQ's entries, and srq_arrivals_in() the SRQ's claim index after
	 * this (srq_claim_burst()). */
	old = __atomic_fetch_or(&qp->seg->rq_claim, SHM_RQ_CLOSED, __ATOMIC_SEQ_CST);
	qp->rq_final = old & ~SHM_RQ_CLOSED;
	__atomic_store_n(&qp->rq_closed, 1, __ATOMIC_RELEASE);
	shm_bell_self(qp->rcq, qp->rslot);
	if (qp->scq != qp->rcq)
		shm_bell_self(qp->scq, qp->sslot);
	return true;
}

void
shm_link_down(struct shm_dev *sd)
{
	uint8_t expected = 0;
	struct shm_qp *qp;

	if (!__atomic_compare_exchange_n(&sd->link_down, &expected, 1, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&sd->lock);
	TAILQ_FOREACH(qp, &sd->qps, next)
		shm_qp_set_error(qp);
	pthread_mutex_unlock(&sd->lock);
	shm_event_push(sd, RDP_EVENT_PORT_ERR, NULL, NULL);
}

static int
move(struct shm_qp *qp, int from, int to)
{
	if (!__atomic_compare_exchange_n(&qp->state, &from, to, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return rdp_err_set(EINVAL, "driver shm: QP %u changed state to %s meanwhile",
				   qp->head.qp_num, rdp_qp_state_str(from));
	return 0;
}

/* The rendezvous answered: the QP is connected (RTR). */
static int
rtr_done(struct shm_qp *qp, const struct rdp_qp_attr *attr, unsigned int mask)
{
	/* the peer has its own reference now; spare the descriptor */
	close(qp->memfd);
	qp->memfd = -1;
	qp->attr.remote = attr->remote;
	if (mask & RDP_QP_ATTR_CONN)
		qp->attr.conn = attr->conn;
	/* the peer's READs check it when they run */
	__atomic_store_n(&qp->seg->max_dest_rd_atomic, qp->attr.conn.max_dest_rd_atomic,
			 __ATOMIC_RELEASE);
	return move(qp, RDP_QPS_INIT, RDP_QPS_RTR);
}

/* Are the transport parameters, when given, in range? 0 or -EINVAL. */
static int
conn_check(const struct shm_qp *qp, const struct rdp_qp_attr *attr, unsigned int mask)
{
	const struct rdp_qp_conn_params *c = &attr->conn;

	if (!(mask & RDP_QP_ATTR_CONN))
		return 0;
	if (c->rnr_retry > 7)
		return rdp_err_set(EINVAL, "driver shm: QP %u: rnr_retry=%u: expected 0..7",
				   qp->head.qp_num, c->rnr_retry);
	if (c->max_rd_atomic > SHM_MAX_RD_ATOM || c->max_dest_rd_atomic > SHM_MAX_RD_ATOM)
		return rdp_err_set(EINVAL, "driver shm: QP %u: max_rd_atomic=%u, "
				   "max_dest_rd_atomic=%u: expected 0..%u", qp->head.qp_num,
				   c->max_rd_atomic, c->max_dest_rd_atomic, SHM_MAX_RD_ATOM);
	return 0;
}

/* Is RTR from the current state with @p mask a legal change? 0 or -EINVAL. */
static int
rtr_check(struct shm_qp *qp, int cur, unsigned int mask)
{
	if (cur != RDP_QPS_INIT)
		return rdp_err_set(EINVAL, "driver shm: QP %u: no transition from %s to RTR",
				   qp->head.qp_num, rdp_qp_state_str(cur));
	if (!(mask & RDP_QP_ATTR_REMOTE))
		return rdp_err_set(EINVAL, "driver shm: QP %u: RTR needs the remote "
				   "address (RDP_QP_ATTR_REMOTE)", qp->head.qp_num);
	if (qp->connect_fd >= 0)
		return rdp_err_set(EINVAL, "driver shm: QP %u: a rendezvous is already in "
				   "progress", qp->head.qp_num);
	return 0;
}

int
shm_qp_modify(struct rdp_qp *q, const struct rdp_qp_attr *attr, unsigned int mask)
{
	struct shm_qp *qp = to_sqp(q);
	int cur = __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE), ret;
	unsigned int to;

	if (!(mask & RDP_QP_ATTR_STATE))
		return rdp_err_set(EINVAL, "driver shm: rdp_qp_modify needs RDP_QP_ATTR_STATE");
	to = attr->state;
	if (to == RDP_QPS_ERR) {
		shm_qp_set_error(qp);
		return 0;
	}
	ret = conn_check(qp, attr, mask);
	if (ret < 0)
		return ret;
	switch (to) {
	case RDP_QPS_RESET:
		if (cur == RDP_QPS_RESET)
			return 0;
		break;
	case RDP_QPS_INIT:
		if (cur == RDP_QPS_RESET || cur == RDP_QPS_INIT)
			return move(qp, cur, RDP_QPS_INIT);
		break;
	case RDP_QPS_RTR:
		ret = rtr_check(qp, cur, mask);
		if (ret == 0)
			ret = shm_connect(qp, &attr->remote);
		return ret < 0 ? ret : rtr_done(qp, attr, mask);
	case RDP_QPS_RTS:
		if (cur != RDP_QPS_RTR && cur != RDP_QPS_RTS)
			break;
		if (mask & RDP_QP_ATTR_CONN)
			qp->attr.conn = attr->conn;
		qp->rnr_retry = qp->attr.conn.rnr_retry;
		qp->min_rnr_timer = qp->attr.conn.min_rnr_timer;
		return move(qp, cur, RDP_QPS_RTS);
	default:
		break;
	}
	return rdp_err_set(EINVAL, "driver shm: QP %u: no transition from %s to %s", q->qp_num,
			   rdp_qp_state_str(cur), rdp_qp_state_str(to));
}

int
shm_qp_modify_start(struct rdp_qp *q, const struct rdp_qp_attr *attr, unsigned int mask,
		    int *fd)
{
	struct shm_qp *qp = to_sqp(q);
	int ret;

	if (!(mask & RDP_QP_ATTR_STATE) || attr->state != RDP_QPS_RTR)
		return shm_qp_modify(q, attr, mask);
	ret = conn_check(qp, attr, mask);
	if (ret < 0)
		return ret;
	ret = rtr_check(qp, __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE), mask);
	if (ret == 0)
		ret = shm_connect_start(qp, &attr->remote);
	if (ret != -EINPROGRESS)
		return ret < 0 ? ret : rtr_done(qp, attr, mask);
	qp->connect_attr = *attr;
	qp->connect_mask = mask;
	*fd = qp->connect_fd;
	return -EINPROGRESS;
}

int
shm_qp_modify_poll(struct rdp_qp *q)
{
	struct shm_qp *qp = to_sqp(q);
	int ret;

	if (qp->connect_fd < 0)
		return rdp_err_set(EINVAL, "driver shm: QP %u: no change in progress", q->qp_num);
	ret = shm_connect_poll(qp);
	if (ret < 0)
		return ret;
	return rtr_done(qp, &qp->connect_attr, qp->connect_mask);
}

void
shm_qp_modify_abort(struct rdp_qp *q)
{
	shm_connect_abort(to_sqp(q));
}

int
shm_qp_query(struct rdp_qp *q, struct rdp_qp_attr *attr)
{
	struct shm_qp *qp = to_sqp(q);

	*attr = qp->attr;
	attr->state = __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE);
	return 0;
}

int
shm_qp_local_addr(struct rdp_qp *q, struct rdp_qp_addr *addr)
{
	struct shm_qp *qp = to_sqp(q);

	addr->qpn = q->qp_num;
	addr->psn = 0;
	memcpy(addr->gid, qp->sd->gid, RDP_GID_LEN);
	addr->lid = 0;
	addr->mtu = SHM_MTU;
	return 0;
}

int
shm_qp_destroy(struct rdp_qp *q)
{
	struct shm_qp *qp = to_sqp(q);
	struct shm_dev *sd = qp->sd;
	struct shm_cq *scq = qp->scq, *rcq = qp->rcq;
	uint64_t done, counted;
	uint32_t i;

	/* stop the peer claiming, then cut the links so that it learns we are gone */
	shm_qp_set_error(qp);
	shm_links_close(sd, qp);
	pthread_mutex_lock(&sd->lock);
	TAILQ_REMOVE(&sd->qps, qp, next);
	/* its SRQ's receives stay there: one it took completes with its number */
	if (qp->srq != NULL)
		shm_srq_detach_locked(qp->srq, qp);
	slot_give_locked(rcq, qp->rslot);
	if (scq != rcq)
		slot_give_locked(scq, qp->sslot);
	shm_stats_retire_qp(sd, qp);
	pthread_mutex_unlock(&sd->lock);
	/* its send completions stay in the CQ, without a QP to free slots of */
	for (i = scq->ring_head; i != scq->ring_tail; i++)
		if (scq->ring[i & scq->ring_mask].qp == qp)
			scq->ring[i & scq->ring_mask].qp = NULL;
	/* receive completions it still had are dropped: uncount them */
	done = __atomic_load_n(&qp->seg->rq_done, __ATOMIC_ACQUIRE);
	if (done - qp->rq_reaped > shm_rq_posted(qp) - qp->rq_reaped)
		done = qp->rq_reaped;
	counted = qp->rq_counted - qp->rq_reaped <= shm_rq_posted(qp) - qp->rq_reaped ?
		  qp->rq_counted : qp->rq_reaped;
	if (counted < done)
		counted = done;
	if (counted != qp->rq_reaped)
		shm_cq_owner_net(rcq, (int64_t)(counted - qp->rq_reaped));
	shm_peer_unmap(sd, qp->peer);
	shm_event_forget(sd, q, NULL);
	qp_free(qp);
	return 0;
}
