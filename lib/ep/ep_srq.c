/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The poller's shared receive queue (srq = on): one SRQ per poller lcore,
 * its buffers from one registered pool, shared by every endpoint of the
 * lcore; the credits of the SRQ leased to the endpoints' peers by the
 * rules of lib/credit/rdp_lease.h (docs/credit-protocol.md, "Leased
 * credits on a shared receive queue").
 *
 * Receives are dispatched by wr_id to the buffer and by the completion's
 * QP number to the endpoint. A buffer goes back to the SRQ when the
 * application frees its message (its credit owed to the peer or sent to
 * the pool), and at once for a pure ack, a give-back, a duplicate, or a
 * receive of a QP gone (undelivered).
 *
 * Threads: the poller owns the SRQ, its buffers and the leases; the
 * control thread admits endpoints during their handshake. The lease pool
 * takes an admission from another thread as it is (rdp_lease.h,
 * CONCURRENCY): no lock on a message's way. The QP map is under the SRQ's
 * lock, taken by a batch of completions only for a QP other than the one
 * the poller looked up last (srq_lookup()).
 */
#include <inttypes.h>

#include "ep_private.h"
#include "rdp_hop.h"

static inline struct rdp_ep *
lease_ep(struct rdp_lease *l)
{
	return container_of(l, struct rdp_ep, lease);
}

/*
 * The pool served its FIFO in the call that ran since @p head / @p served
 * were read: the endpoints it took off may have been granted credits, and
 * their pass sends them (rdp_lease_take_owed()). On the poller.
 */
void
ep_srq_kick(struct ep_srq *q, uint32_t head, uint64_t served)
{
	uint64_t k;

	for (k = served; k < q->lease.served; k++) {
		struct rdp_lease *l = q->lease.wq[head];

		head = (head + 1) % q->lease.wq_cap;
		if (l->owed > 0)
			ep_busy(lease_ep(l));
	}
}

/* ---- QP number -> endpoint, linear probing (under the lock) ---- */

static inline uint32_t
qpn_hash(const struct ep_srq *q, uint32_t qpn)
{
	return (qpn * 2654435761u) & q->map_mask;
}

static struct rdp_ep *
map_find(const struct ep_srq *q, uint32_t qpn)
{
	uint32_t i;

	for (i = qpn_hash(q, qpn); q->map_ep[i] != NULL; i = (i + 1) & q->map_mask)
		if (q->map_qpn[i] == qpn)
			return q->map_ep[i];
	return NULL;
}

static void
map_add(struct ep_srq *q, uint32_t qpn, struct rdp_ep *ep)
{
	uint32_t i;

	for (i = qpn_hash(q, qpn); q->map_ep[i] != NULL; i = (i + 1) & q->map_mask)
		;
	q->map_qpn[i] = qpn;
	q->map_ep[i] = ep;
}

static void
map_del(struct ep_srq *q, uint32_t qpn)
{
	uint32_t i, j, k;

	for (i = qpn_hash(q, qpn); q->map_ep[i] != NULL; i = (i + 1) & q->map_mask)
		if (q->map_qpn[i] == qpn)
			break;
	if (q->map_ep[i] == NULL)
		return;
	/* close the hole: move back every later entry of the run that may */
	for (j = i;;) {
		j = (j + 1) & q->map_mask;
		if (q->map_ep[j] == NULL)
			break;
		k = qpn_hash(q, q->map_qpn[j]);
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		q->map_qpn[i] = q->map_qpn[j];
		q->map_ep[i] = q->map_ep[j];
		i = j;
	}
	q->map_ep[i] = NULL;
}

/* ---- buffers ---- */

void
ep_srq_flush(struct ep_srq *q)
{
	struct rdp_recv_wr wr[EP_SRQ_BURST];
	struct rdp_sge sge[EP_SRQ_BURST];
	const struct rdp_pool *pool = q->pool;
	uint16_t i, k, n = q->rp_n;
	int err = 0;

	if (n == 0)
		return;
	for (i = 0; i < n; i++) {
		uint32_t idx = rdp_pool_msg_idx(pool, q->rp[i]);

		sge[i].addr = (uintptr_t)rdp_pool_buf(pool, idx);
		sge[i].length = pool->buf_size;
		sge[i].lkey = pool->lkey;
		wr[i].wr_id = rdp_wrid(RDP_WRK_RECV, q->slot, idx);
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
	}
	k = rdp_post_srq_recv(q->srq, wr, n, &err);
	RDP_STAT_ADD(q->stats.posted, k);
	RDP_STAT_ADD(q->stats.reposted, k);
	if (unlikely(k < n)) {
		/* more posted than the SRQ holds: the accounting is broken */
		RDP_STAT_ADD(q->stats.post_errors, n - k);
		EP_LOG(ERR, "SRQ refused %u receives (%d) with %" PRIu64 " posted of %u: the "
		       "buffers go back to the pool", n - k, err, RDP_STAT_READ(q->stats.posted),
		       q->pool->nb_bufs);
		rdp_pool_put_bulk(q->pool, &q->rp[k], n - k);
	}
	q->rp_n = 0;
	q->rp_looks = 0;
}

/*
 * Buffers wait to be posted while the pool's free credits cover them
 * (rdp_lease_covers()): a ping-pong then posts once per batch, not once
 * per message. A batch that has not filled goes after EP_SRQ_WAIT_LOOKS
 * looks, one every EP_SRQ_LOOK_POLLS polls (ep_lcore_hook()), so that an
 * idle poller has every buffer it does not hold posted.
 */
unsigned int
ep_srq_age(struct ep_lcore *lc)
{
	unsigned int d, work = 0;

	for (d = 0; d < rdp_rt.nb_devs; d++) {
		struct ep_srq *q = lc->dev[d].srq;

		if (q != NULL && q->rp_n > 0 && ++q->rp_looks >= EP_SRQ_WAIT_LOOKS) {
			ep_srq_flush(q);
			work++;
		}
	}
	return work;
}

void
ep_srq_repost_foreign(struct rdp_msg *m)
{
	m->flags = 0;
	m->next = NULL;
	rdp_pool_put_bulk(m->pool, &m, 1);
}

/* ---- credits ---- */

bool
ep_srq_beyond_grant(struct rdp_ep *ep)
{
	ep_fail(ep, -EPROTO, "peer %s broke the leasing protocol: a SEND beyond its grant "
		"(it holds no credit of its lease of %u, %u sent to it, and %u FIN credits; "
		"rule: every data SEND spends a credit of the lease the receiver granted)",
		ep->peer, ep->lease.lease, ep->lease.out, ep->lease.fins);
	return false;
}

void
ep_srq_give_back_recv(struct rdp_ep *ep, struct rdp_msg *m, uint32_t byte_len)
{
	struct ep_srq *q = ep->ld->srq;
	const uint8_t *b = m->data;
	uint32_t extra, head, out, lease;
	uint64_t served;
	int ret;

	if (q == NULL || !ep->srq_member) {
		ep_recv_drop(ep, m);
		ep_fail(ep, -EPROTO, "peer %s broke the leasing protocol: a give-back to an "
			"endpoint that does not lease", ep->peer);
		return;
	}
	if (byte_len != EP_CM_GIVEBACK_LEN || b[1] != 0 || b[2] != 0 || b[3] != 0) {
		ep_recv_drop(ep, m);
		ep_fail(ep, -EPROTO, "peer %s broke the leasing protocol: give-back of %u bytes "
			"(field 'length' or 'padding'), expected %u zero-padded", ep->peer,
			byte_len, EP_CM_GIVEBACK_LEN);
		return;
	}
	extra = (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 |
		(uint32_t)b[7] << 24;
	/* its buffer goes back at once: the credit it spent leaves the lease */
	ep_srq_repost(ep, m, false);
	head = q->lease.wq_head;
	served = q->lease.served;
	out = ep->lease.out;
	lease = ep->lease.lease;
	ret = rdp_lease_on_give_back(&q->lease, &ep->lease, extra);
	ep_srq_kick(q, head, served);
	if (ret < 0)
		ep_fail(ep, -EPROTO, "peer %s broke the leasing protocol: a give-back of 1 + %u "
			"credits, but it holds at most %u of its lease of %u, floor %u (rule: a "
			"give-back returns credits the peer holds, above the floor)", ep->peer,
			extra, out, lease, q->lease.floor);
}

/* ---- the FIN reserve ---- */

/* Wake the first endpoint waiting for a credit of the FIN reserve, if one is free. */
static void
fin_wake(struct ep_srq *q)
{
	struct rdp_ep *first = TAILQ_FIRST(&q->fin_waiters);

	if (first != NULL && q->lease.fin_free > 0)
		ep_busy(first);
}

void
ep_srq_fin_wait(struct rdp_ep *ep, bool waiting)
{
	struct ep_srq *q = ep->ld->srq;

	if (waiting == ep->srq_fin_waiting)
		return;
	ep->srq_fin_waiting = waiting;
	if (waiting) {
		TAILQ_INSERT_TAIL(&q->fin_waiters, ep, srq_fin_next);
		RDP_STAT_ADD(q->stats.fin_waits, 1);
		return;
	}
	/* it took what it waited for, or waits for something else now: the next */
	TAILQ_REMOVE(&q->fin_waiters, ep, srq_fin_next);
	fin_wake(q);
}

bool
ep_srq_fin_recv(struct rdp_ep *ep, struct rdp_msg *m)
{
	struct ep_srq *q = ep->ld->srq;
	struct rdp_lease l = ep->lease;

	/* it spent the credit its descriptor took from the reserve, not one of the lease */
	ep_srq_repost(ep, m, false);
	if (rdp_lease_on_fin(&q->lease, &ep->lease) < 0) {
		ep_fail(ep, -EPROTO, "peer %s broke the rendezvous protocol: a FIN with no "
			"credit for it (FIN credits it held %u, lease credits it held %u; rule: "
			"a FIN spends the credit its descriptor brought)", ep->peer, l.fins,
			l.out);
		return false;
	}
	fin_wake(q);
	return true;
}

/* ---- completions ---- */

/*
 * The endpoints of @p n receives, into @p eps. A burst mostly comes from
 * few QPs, in runs; a QP the poller found last is looked up without the
 * lock: a locked instruction on every burst waits for the stores before it
 * (the payloads just copied into cold buffers) to leave the store buffer.
 */
static inline void
srq_lookup(struct ep_srq *q, const struct rdp_wc *wc, struct rdp_ep **eps, uint16_t n)
{
	bool locked = false;
	uint16_t i;

	for (i = 0; i < n; i++) {
		uint32_t qpn = wc[i].qp_num;

		if (qpn == q->last_qpn && q->last_ep != NULL) {
			eps[i] = q->last_ep;
			continue;
		}
		if (!locked) {
			pthread_spin_lock(&q->lock);
			locked = true;
		}
		eps[i] = map_find(q, qpn);
		q->last_qpn = qpn;
		q->last_ep = eps[i];
	}
	if (locked)
		pthread_spin_unlock(&q->lock);
}

/*
 * One receive completion on the SRQ's buffers, for @p ep, the endpoint of
 * its QP (NULL: the QP is gone, and the buffer goes back undelivered).
 */
static inline void
srq_complete_one(struct ep_srq *q, struct rdp_ep *ep, const struct rdp_wc *w)
{
	uint64_t idx = rdp_wrid_low(w->wr_id);
	struct rdp_msg *m;

	if (unlikely(idx >= q->pool->nb_bufs)) {
		EP_LOG(ERR, "SRQ receive completion for buffer %" PRIu64 " of %u (QP %u): dropped",
		       idx, q->pool->nb_bufs, w->qp_num);
		return;
	}
	m = rdp_pool_msg(q->pool, (uint32_t)idx);
	RDP_STAT_ADD(q->stats.posted, -1);
	if (unlikely(ep == NULL)) {
		RDP_STAT_ADD(q->stats.strays, 1);
		ep_srq_queue(q, m);
		return;
	}
	RDP_HANDOFF_ACQUIRE(ep); /* what connect_qp() set up (ThreadSanitizer) */
	ep_recv_one(ep, w, m);
	if (ep_tearing_down(ep))
		ep_busy(ep);
}

void
ep_srq_complete(struct ep_srq *q, const struct rdp_wc *wc, uint16_t n)
{
	struct rdp_ep *eps[256];
	uint16_t i, done = 0;

	if (n == 1 && wc->qp_num == q->last_qpn && q->last_ep != NULL) {
		/* one receive of the endpoint found last (a ping-pong's): no lookup */
		eps[0] = q->last_ep;
		srq_complete_one(q, eps[0], wc);
	} else {
		while (done < n) {
			uint16_t k = (uint16_t)RTE_MIN((unsigned int)RTE_DIM(eps),
						       (unsigned int)(n - done));

			srq_lookup(q, &wc[done], eps, k);
			for (i = 0; i < k; i++)
				srq_complete_one(q, eps[i], &wc[done + i]);
			done += k;
		}
	}
	RDP_HOP_MARK(RDP_HOP_DISPATCHED);
	for (i = 0; i < RTE_MIN(n, (uint16_t)RTE_DIM(eps)); i++) {
		/* what this batch received goes to the application now (ep_complete()) */
		struct rdp_ep *ep = eps[i];

		if (ep != NULL && ep->ev_head != NULL && ep->app_visible &&
		    ep_get_state(ep) == RDP_EP_ESTABLISHED)
			ep_deliver(ep, true);
	}
	/* the batch's buffers, and those its callbacks freed, after the replies (if due) */
	ep_srq_flush_uncovered(q);
}

/* ---- admission and leaving ---- */

int
ep_srq_admit(struct rdp_ep *ep, const struct rdp_hello *peer)
{
	struct ep_srq *q = ep->ld->srq;
	uint32_t reserve = rdp_credit_lease_reserve(&peer->credit, &peer->lease);
	char why[256];
	int ret;

	pthread_spin_lock(&q->lock);
	ret = rdp_lease_admit_reserve(&q->lease, &ep->lease, reserve, why, sizeof(why));
	if (ret == 0) {
		map_add(q, ep->local_hello.qp.qpn, ep);
		ep->srq_member = true;
		ep->srq_mapped = true;
	}
	pthread_spin_unlock(&q->lock);
	if (ret < 0) {
		RDP_STAT_ADD(q->stats.refused, 1);
		/* short and numbers first: it travels in the peer's 64-byte REJECT */
		return rdp_err_set(-ret, "%s", why);
	}
	return 0;
}

void
ep_srq_unmap(struct rdp_ep *ep)
{
	struct ep_srq *q = ep->ld->srq;

	if (q == NULL || !ep->srq_mapped)
		return;
	pthread_spin_lock(&q->lock);
	map_del(q, ep->local_hello.qp.qpn);
	pthread_spin_unlock(&q->lock);
	if (q->last_ep == ep)
		q->last_ep = NULL;
	ep->srq_mapped = false;
	/* no FIN comes any more: what its descriptors took goes back to the reserve */
	if (ep->srq_fin_waiting || ep->lease.fins > 0) {
		ep_srq_fin_wait(ep, false);
		rdp_lease_fins_back(&q->lease, &ep->lease);
		fin_wake(q);
	}
	ep_srq_flush(q); /* its buffers back on the SRQ before its lease goes */
}

void
ep_srq_settle(struct rdp_ep *ep)
{
	struct ep_srq *q = ep->ld->srq;

	/*
	 * Its QP is gone and its completions polled: nothing of the lease is on
	 * the wire. A message the application still holds keeps its credit
	 * until it is freed (its buffer is not on the SRQ).
	 */
	if (q == NULL || !ep->srq_member || ep->srq_mapped || ep->held > 0 ||
	    ep_phase_get(ep) < EP_PH_RETIRED)
		return;
	rdp_lease_leave(&q->lease, &ep->lease);
	ep->srq_member = false;
	fin_wake(q); /* FIN credits its peer spent on data are the reserve's again */
}

/* ---- the lcore's SRQ ---- */

/*
 * Credits the SRQ keeps for the FINs of its endpoints' descriptors: none
 * where they send none (the peer cannot READ from us, or every message
 * goes in chunks); else a sixteenth of the SRQ, but no more than the
 * rendezvous messages the send arena holds at once (each of more than
 * rndv_threshold bytes), and 1 at least. So many rendezvous messages of
 * the poller's endpoints wait for their FINs at once; the next descriptor
 * waits in line.
 */
static uint32_t
fin_reserve_size(const struct ep_lcore_dev *ld)
{
	const struct rdp_cfg_lcore *c = &ld->lc->conf;
	size_t arena = ep_rndv_send_limit(ld) > 0 ? ep_rndv_send_limit(ld) :
		       ep_rndv_arena_size(ld, true);
	size_t least = RTE_ALIGN_CEIL((size_t)c->rndv_threshold + 1, RDP_ARENA_PAGE);

	if (ld->conn.max_dest_rd_atomic == 0 || c->max_msg_size <= c->rndv_threshold)
		return 0;
	return (uint32_t)RTE_MAX((size_t)1, RTE_MIN((size_t)c->srq_size / 16, arena / least));
}

int
ep_srq_create(struct ep_lcore_dev *ld)
{
	struct ep_lcore *lc = ld->lc;
	const struct rdp_dev_attr *a = &ld->dv->attr;
	const struct rdp_cfg_lcore *c = &lc->conf;
	struct rdp_srq_init_attr sa = { .max_wr = c->srq_size, .max_sge = 1 };
	uint32_t members = c->max_endpoints, cap, i;
	struct ep_srq *q;
	char name[32], why[256];
	int ret;

	if (a->max_srq_wr == 0)
		return rdp_err_set(ENOTSUP, "lcore %u: srq = on, but driver %s (device %s) has no "
				   "shared receive queue", lc->lcore_id, a->driver, a->name);
	if (c->srq_size > a->max_srq_wr)
		return rdp_err_set(EINVAL, "lcore %u: srq_size=%u, device %s holds at most %u "
				   "(max_srq_wr)", lc->lcore_id, c->srq_size, a->name,
				   a->max_srq_wr);
	q = calloc(1, sizeof(*q));
	if (q == NULL)
		return rdp_err_set(ENOMEM, "out of memory");
	ld->srq = q;
	q->slot = UINT32_MAX;
	TAILQ_INIT(&q->fin_waiters);
	if (pthread_spin_init(&q->lock, PTHREAD_PROCESS_PRIVATE) != 0)
		return rdp_err_set(ENOMEM, "lcore %u: no SRQ lock", lc->lcore_id);
	q->lock_made = true;
	for (cap = 16; cap < 2 * members; cap *= 2)
		;
	q->map_mask = cap - 1;
	q->map_qpn = calloc(cap, sizeof(*q->map_qpn));
	q->map_ep = calloc(cap, sizeof(*q->map_ep));
	q->wq = calloc(members, sizeof(*q->wq));
	if (q->map_qpn == NULL || q->map_ep == NULL || q->wq == NULL)
		return rdp_err_set(ENOMEM, "out of memory");
	ret = rdp_lease_pool_init(&q->lease, c->srq_size, c->srq_floor, c->srq_lease_max,
				  c->srq_grant, q->wq, members, why, sizeof(why));
	if (ret == 0)
		ret = rdp_lease_pool_fin_reserve(&q->lease, fin_reserve_size(ld), why,
						 sizeof(why));
	if (ret < 0)
		return rdp_err_set(EINVAL, "lcore %u: %s", lc->lcore_id, why);
	/*
	 * Buffers that come back wait to be posted, up to EP_SRQ_BURST and at
	 * most 1/16 of the SRQ (none on a small one: each is posted as it comes
	 * back); admissions leave as many credits in the pool, which covers
	 * them (docs/credit-protocol.md, "What lib/ep does").
	 */
	q->rp_cap = (uint16_t)RTE_MIN((uint32_t)EP_SRQ_BURST, c->srq_size / 16);
	rdp_lease_pool_keep(&q->lease, q->rp_cap);
	ep_pool_name(name, sizeof(name), "srq", lc->lcore_id, ld->idx);
	q->pool = rdp_pool_create(name, ld->dv->pd, c->srq_size, c->buf_size, lc->socket,
				  RDP_ACCESS_LOCAL_WRITE | lc->pages);
	if (q->pool == NULL)
		return -rte_errno;
	q->srq = rdp_srq_create(ld->dv->pd, &sa);
	if (q->srq == NULL)
		return -rte_errno;
	ret = rdp_poller_slot_alloc(lc->poller, (void *)((uintptr_t)q | EP_SRQ_CLIENT_TAG));
	if (ret < 0)
		return ret;
	q->slot = (uint32_t)ret;
	/* the SRQ's completions, once per poller, on its device's CQ */
	ret = rdp_poller_reserve(lc->poller, ld->idx, c->srq_size);
	if (ret < 0)
		return ret;
	for (i = 0; i < c->srq_size; i++) {
		struct rdp_msg *m;

		if (rdp_pool_get_bulk(q->pool, &m, 1) < 0)
			return rdp_err_set(ENOBUFS, "lcore %u: SRQ pool short", lc->lcore_id);
		ep_srq_queue(q, m);
	}
	ep_srq_flush(q);
	if (RDP_STAT_READ(q->stats.posted) != c->srq_size)
		return rdp_err_set(EIO, "lcore %u: %" PRIu64 " of the SRQ's %u receives posted",
				   lc->lcore_id, RDP_STAT_READ(q->stats.posted), c->srq_size);
	q->stats.reposted = 0;
	return 0;
}

void
ep_srq_destroy(struct ep_lcore_dev *ld)
{
	struct ep_lcore *lc = ld->lc;
	struct ep_srq *q = ld->srq;

	if (q == NULL)
		return;
	if (q->slot != UINT32_MAX)
		rdp_poller_slot_free(lc->poller, q->slot);
	if (q->srq != NULL && rdp_srq_destroy(q->srq) < 0)
		EP_LOG(ERR, "lcore %u: SRQ destroy failed: %s", lc->lcore_id, rdp_err_msg());
	if (q->lease.members > 0)
		EP_LOG(ERR, "lcore %u: %u endpoints still lease from the SRQ at teardown",
		       lc->lcore_id, q->lease.members);
	/* its receives were dropped with it: the buffers are ours, the pool goes whole */
	if (q->pool != NULL)
		rdp_pool_destroy(q->pool);
	if (q->lock_made)
		pthread_spin_destroy(&q->lock);
	free(q->map_qpn);
	free(q->map_ep);
	free(q->wq);
	free(q);
	ld->srq = NULL;
}

void
ep_srq_snapshot(const struct ep_lcore_dev *ld, struct rdp_srq_stats *s)
{
	struct ep_srq *q = ld->srq;

	memset(s, 0, sizeof(*s));
	if (q == NULL)
		return;
	/* each field as it is now: the poller goes on meanwhile */
	s->size = q->lease.size;
	s->free = __atomic_load_n(&q->lease.free, __ATOMIC_RELAXED);
	s->reserved = __atomic_load_n(&q->lease.reserved, __ATOMIC_RELAXED);
	s->fin_reserve = q->lease.fin_size;
	s->fin_free = __atomic_load_n(&q->lease.fin_free, __ATOMIC_RELAXED);
	s->leased = (uint64_t)s->free + s->reserved + s->fin_reserve < s->size ?
		    s->size - s->free - s->reserved - s->fin_reserve : 0;
	s->members = __atomic_load_n(&q->lease.members, __ATOMIC_RELAXED);
	s->floor = q->lease.floor;
	s->lease_max = q->lease.lease_max;
	s->grants = __atomic_load_n(&q->lease.grants, __ATOMIC_RELAXED);
	s->diverted = __atomic_load_n(&q->lease.diverted, __ATOMIC_RELAXED);
	s->given_back = __atomic_load_n(&q->lease.given_back, __ATOMIC_RELAXED);
	s->posted = (uint32_t)RDP_STAT_READ(q->stats.posted);
	s->refused = RDP_STAT_READ(q->stats.refused);
	s->strays = RDP_STAT_READ(q->stats.strays);
	s->fin_waits = RDP_STAT_READ(q->stats.fin_waits);
}

int
rdp_lcore_device_srq_stats_get(unsigned int lcore, const char *device,
			       struct rdp_srq_stats *stats)
{
	const struct ep_lcore *lc = lcore < RTE_MAX_LCORE ? rdp_rt.lcores[lcore] : NULL;
	int d;

	if (lc == NULL)
		return rdp_err_set(ENODEV, "lcore %u polls nothing", lcore);
	d = device == NULL ? (int)lc->dflt : rt_device_by_name(device);
	if (d < 0)
		return d;
	if (lc->dev[d].srq == NULL)
		return -ENOTSUP;
	ep_srq_snapshot(&lc->dev[d], stats);
	return 0;
}

int
rdp_lcore_srq_stats_get(unsigned int lcore, struct rdp_srq_stats *stats)
{
	return rdp_lcore_device_srq_stats_get(lcore, NULL, stats);
}
