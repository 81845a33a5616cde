/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shm fast path: post_send runs the sender's "NIC engine" inline (it
 * claims the peer's receive entries and copies straight into the peer's
 * memory), post_recv publishes receive entries, poll_cq scans the doorbell
 * bitmap and merges the CQ's own send completions with the receive
 * completions the peers wrote, in the order the cqe_order knob asks for.
 *
 * No allocation, no lock, no syscall (clock_gettime is the vDSO, and only
 * while an RNR retry waits). Everything read from shared memory is checked.
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_prefetch.h>

#include "rdp_clock.h"
#include "rdp_hop.h"
#include "shm_private.h"

/* exec result meaning "not now": the WR stays queued */
#define SHM_AGAIN 0xffu

/* The InfiniBand RNR NAK timer table, in microseconds (index = min_rnr_timer). */
static const uint32_t rnr_timer_us[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920,
	122880, 163840, 245760, 327680, 491520,
};

static inline bool
range_in(uint64_t addr, uint64_t len, uint64_t base, uint64_t blen)
{
	return addr >= base && len <= blen && addr - base <= blen - len;
}

static inline struct shm_mr *
mr_lookup(struct shm_dev *sd, uint32_t lkey)
{
	uint32_t id = shm_key_id(lkey);
	struct shm_mr *mr;

	if (unlikely(id >= SHM_MAX_MR))
		return NULL;
	mr = __atomic_load_n(&sd->mrs[id], __ATOMIC_ACQUIRE);
	if (unlikely(mr == NULL || mr->head.lkey != lkey))
		return NULL;
	return mr;
}

/* Does a send SGE lie inside a registered MR of its lkey, one granting @p access? */
static inline bool
send_sge_ok(struct shm_dev *sd, const struct rdp_sge *s, unsigned int access)
{
	struct shm_mr *mr = mr_lookup(sd, s->lkey);

	return mr != NULL && (mr->head.access & access) == access &&
	       range_in(s->addr, s->length, (uintptr_t)mr->head.addr, mr->head.length);
}

/* Our own copy of the SGEs posted at entry @p idx (max_recv_sge of them). */
static inline struct shm_lsge *
rq_lsge(const struct shm_qp *qp, uint64_t idx)
{
	return &qp->rq_sge[(size_t)(idx & qp->rq_mask) * qp->max_recv_sge];
}

/* Count receive completions we published in a peer's CQ, against its capacity. */
static inline void
cq_count_remote(struct shm_cq_seg *seg, uint32_t n)
{
	int64_t added = __atomic_fetch_add(&seg->added, (int64_t)n, __ATOMIC_RELAXED) + n;

	if (unlikely(added - __atomic_load_n(&seg->owner_net, __ATOMIC_ACQUIRE) >
		     (int64_t)__atomic_load_n(&seg->cqe, __ATOMIC_RELAXED)))
		__atomic_store_n(&seg->overrun, 1, __ATOMIC_RELEASE);
}

/* Count our own completions (send side, flushes) in our CQ (owner thread). */
static inline void
cq_count_local(struct shm_cq *cq, uint32_t n)
{
	shm_cq_owner_net(cq, -(int64_t)n);
	if (unlikely(shm_cq_pending(cq) > (int64_t)cq->seg->cqe))
		__atomic_store_n(&cq->seg->overrun, 1, __ATOMIC_RELEASE);
}

static inline void
push_local(struct shm_cq *cq, struct shm_qp *qp, uint64_t idx, const struct shm_swqe *e,
	   uint8_t status)
{
	struct shm_lcqe *l;

	if (unlikely(cq->ring_tail - cq->ring_head > cq->ring_mask)) {
		/* only reachable once the CQ has overrun: say so, keep nothing */
		__atomic_store_n(&cq->seg->overrun, 1, __ATOMIC_RELEASE);
		return;
	}
	l = &cq->ring[cq->ring_tail++ & cq->ring_mask];
	l->wc.wr_id = e->wr_id;
	l->wc.status = status;
	l->wc.opcode = e->opcode == RDP_WR_RDMA_WRITE ? RDP_WC_RDMA_WRITE :
		       e->opcode == RDP_WR_RDMA_READ ? RDP_WC_RDMA_READ : RDP_WC_SEND;
	l->wc.wc_flags = 0;
	l->wc.reserved = 0;
	l->wc.byte_len = e->total_len;
	l->wc.imm = 0;
	l->wc.qp_num = qp->head.qp_num;
	l->qp = qp;
	l->sq_idx = idx;
	l->visible_at = (uint32_t)(cq->polls + cq->delay);
	l->rd_seq = e->rd_seq;
}

/* Flush every WR not executed yet, unsignaled ones included (owner thread). */
static void
sq_flush(struct shm_qp *qp)
{
	uint32_t n = 0;

	while (qp->sq_exec != qp->sq_pi) {
		push_local(qp->scq, qp, qp->sq_exec, shm_wqe(qp, qp->sq_exec), RDP_WC_WR_FLUSH_ERR);
		qp->sq_exec++;
		n++;
	}
	qp->rnr_waiting = 0;
	if (n > 0)
		cq_count_local(qp->scq, n);
}

/* Copy a WR's gather list into a destination of at least total_len bytes. */
static inline void
gather(const struct shm_swqe *e, uint8_t *dst)
{
	uint16_t i;

	for (i = 0; i < e->num_sge; i++) {
		memcpy(dst, e->sge[i].addr, e->sge[i].len);
		dst += e->sge[i].len;
	}
}

/*
 * Place a SEND into a claimed peer receive entry; returns the receiver's
 * status. The entry's SGEs are copied out of shared memory before they are
 * checked, so a peer changing them under us cannot make us write outside
 * one of its MRs.
 */
static uint8_t
scatter(const struct shm_peer *peer, uint32_t max_sge, const struct shm_rq_ent *ent,
	const struct shm_swqe *e)
{
	struct shm_rsge rs[SHM_MAX_SGE];
	uint8_t *dst[SHM_MAX_SGE];
	uint32_t nsge, i, di;
	uint64_t cap = 0, doff, left;
	uint16_t si;
	uint64_t soff;

	nsge = __atomic_load_n(&ent->num_sge, __ATOMIC_RELAXED);
	if (unlikely(nsge > max_sge))
		return RDP_WC_LOC_QP_OP_ERR;
	memcpy(rs, ent->sge, nsge * sizeof(rs[0]));
	for (i = 0; i < nsge; i++) {
		const struct shm_peer_mr *m;

		if (unlikely(rs[i].mr_id >= peer->nb_mr))
			return RDP_WC_LOC_PROT_ERR;
		m = &peer->mr[rs[i].mr_id];
		if (unlikely(m->base == NULL || !range_in(rs[i].off, rs[i].len, 0, m->length)))
			return RDP_WC_LOC_PROT_ERR;
		dst[i] = m->base + rs[i].off;
		cap += rs[i].len;
	}
	if (unlikely(e->total_len > cap))
		return RDP_WC_LOC_LEN_ERR;
	if (likely(nsge == 1 && e->num_sge <= 1)) {
		if (e->num_sge == 1)
			memcpy(dst[0], e->sge[0].addr, e->sge[0].len);
		return RDP_WC_SUCCESS;
	}
	/* general case: walk both lists */
	di = 0;
	doff = 0;
	for (si = 0; si < e->num_sge; si++) {
		soff = 0;
		left = e->sge[si].len;
		while (left > 0) {
			uint64_t room = rs[di].len - doff, chunk = RTE_MIN(room, left);

			if (room == 0) {
				di++;
				doff = 0;
				continue;
			}
			memcpy(dst[di] + doff, e->sge[si].addr + soff, chunk);
			doff += chunk;
			soff += chunk;
			left -= chunk;
		}
	}
	return RDP_WC_SUCCESS;
}

static uint8_t
rnr(struct shm_qp *qp)
{
	if (!qp->rnr_waiting)
		RDP_STAT_ADD(qp->st_rnr, 1);
	if (qp->rnr_retry == 0)
		return RDP_WC_RNR_RETRY_EXC_ERR;
	if (!qp->rnr_waiting) {
		qp->rnr_waiting = 1;
		qp->rnr_left = qp->rnr_retry;
	} else if (qp->rnr_retry != 7 && --qp->rnr_left == 0) {
		qp->rnr_waiting = 0;
		return RDP_WC_RNR_RETRY_EXC_ERR;
	}
	qp->rnr_next_ns = rdp_clock_ns() + (uint64_t)rnr_timer_us[qp->min_rnr_timer & 31] * 1000;
	return SHM_AGAIN;
}

/* One run of the sender's engine: what it may claim, what it did (published at its end). */
struct sq_batch {
	struct shm_peer *peer;
	uint64_t first;       /**< our first claim index in the peer's RQ */
	uint32_t want;        /**< receive entries one claim may take: the WRs left to run */
	uint32_t nlocal;      /**< completions pushed to our send CQ */
	uint32_t nremote;     /**< receive entries completed in the peer's RQ */
	uint32_t srq_want;    /**< to an SRQ: the SENDs this run will execute from here */
	bool eager;           /**< publish what ran before its bookkeeping (sq_exec_one) */
};

/* The bytes a receive entry's owner posted: its SGEs' lengths (none past max_sge). */
static __rte_always_inline uint64_t
ent_posted_len(const struct shm_rq_ent *ent, uint32_t max_sge)
{
	uint32_t nsge = __atomic_load_n(&ent->num_sge, __ATOMIC_RELAXED), i;
	uint64_t len = 0;

	if (unlikely(nsge > max_sge))
		return 0;
	for (i = 0; i < nsge; i++)
		len += __atomic_load_n(&ent->sge[i].len, __ATOMIC_RELAXED);
	return len;
}

/*
 * Place a SEND into a claimed receive entry of the peer (its RQ's or its
 * SRQ's, with that queue's SGE count and inline room) and write its result;
 * returns the receiver's status.
 */
static __rte_always_inline uint8_t
ent_fill(const struct shm_peer *peer, uint32_t max_sge, uint32_t rq_inline,
	 struct shm_rq_ent *ent, const struct shm_swqe *e)
{
	uint8_t st, flags = e->opcode == RDP_WR_SEND_WITH_IMM ? RDP_WC_WITH_IMM : 0;

	if (e->total_len <= rq_inline) {
		/* small: into the entry; the owner copies it into its buffer */
		if (e->total_len <= ent_posted_len(ent, max_sge)) {
			gather(e, shm_rq_ent_data(ent, max_sge));
			flags |= SHM_ENT_INLINE;
			st = RDP_WC_SUCCESS;
		} else {
			st = RDP_WC_LOC_LEN_ERR;
		}
	} else {
		st = scatter(peer, max_sge, ent, e);
	}
	ent->byte_len = e->total_len;
	ent->imm = e->imm;
	ent->wc_flags = flags;
	ent->status = st;
	return st;
}

/* The sender's status for a SEND whose receiver got @p st. */
static inline uint8_t
send_status(uint8_t st)
{
	if (likely(st == RDP_WC_SUCCESS))
		return RDP_WC_SUCCESS;
	return st == RDP_WC_LOC_LEN_ERR ? RDP_WC_REM_INV_REQ_ERR : RDP_WC_REM_OP_ERR;
}

/* Does the peer QP answer? One in error answers nothing: the transport gives up. */
static __rte_always_inline bool
peer_answers(const struct shm_qp *qp, const struct shm_peer *peer)
{
	return likely(__atomic_load_n(&peer->qseg->rq_claim, __ATOMIC_RELAXED) ==
		      qp->peer_rq_claimed);
}

/*
 * Claim receives of the peer's SRQ for a burst of @p want SENDs: one CAS on
 * its claim index, which the SRQ's other senders share, takes as many as
 * are posted, up to @p want, into [*idx, *idx + *got). An SRQ with nothing
 * left is an RNR, as an empty RQ is; an index that keeps moving or runs
 * past what is posted is garbage.
 */
static uint8_t
srq_claim(struct shm_qp *qp, const struct shm_peer *peer, uint64_t want, uint64_t *idx,
	  uint64_t *got)
{
	struct shm_qp_seg *seg = peer->sseg;
	uint64_t c = __atomic_load_n(&seg->rq_claim, __ATOMIC_RELAXED);
	unsigned int tries;

	for (tries = 0; tries < SHM_SRQ_CLAIM_TRIES; tries++) {
		uint64_t posted = qp->peer_srq_posted, n;

		/*
		 * What was posted stays posted until claimed: the count last
		 * read serves while it is ahead of the claim index, and the
		 * owner's line, which it writes at every post, is read again
		 * only when it is not.
		 */
		if (posted - c - 1 > (uint64_t)peer->srq_mask) {
			posted = __atomic_load_n(&seg->rq_posted, __ATOMIC_ACQUIRE);
			qp->peer_srq_posted = posted;
		}
		if (posted == c)
			return rnr(qp);
		if (unlikely(posted - c > (uint64_t)peer->srq_mask + 1)) {
			/*
			 * Our claim index may be old: other senders claimed and
			 * the owner posted again since we read it. Only indexes
			 * that stay apart by more than the SRQ are garbage.
			 */
			c = __atomic_load_n(&seg->rq_claim, __ATOMIC_ACQUIRE);
			continue;
		}
		n = RTE_MIN(want, posted - c);
		/* which entries we claim, before the claim: if we die between the
		 * claim and their completion, the owner knows whose they were
		 * (srq_claimer()) */
		__atomic_store_n(&peer->qseg->srq_claim_n, n, __ATOMIC_RELAXED);
		__atomic_store_n(&peer->qseg->srq_claim_at, c, __ATOMIC_RELEASE);
		/* sequentially consistent: srq_claim_burst() reads the QP's state after it */
		if (__atomic_compare_exchange_n(&seg->rq_claim, &c, c + n, false, __ATOMIC_SEQ_CST,
						__ATOMIC_RELAXED)) {
			*idx = c;
			*got = n;
			return RDP_WC_SUCCESS;
		}
	}
	return RDP_WC_REM_OP_ERR;
}

/*
 * Ask for @p p's line in the exclusive state, as a store would (prefetchw;
 * a no-op on CPUs without it), so that a later load and store to it do
 * not wait for the line to come from another core or from memory.
 */
static __rte_always_inline void
prefetch_for_write(const void *p)
{
#if defined(RTE_ARCH_X86)
	asm volatile("prefetchw %0" : : "m"(*(const volatile char *)p));
#else
	__builtin_prefetch(p, 1, 3);
#endif
}

/*
 * Entries of the peer's SRQ for the SENDs of this run (b->srq_want, the
 * SENDs the run will execute), with one CAS on the SRQ's claim index;
 * what the run does not use is settled at its end (srq_run_settle()).
 *
 * The receiving QP in error takes nothing more: its owner closes its claim
 * index (a locked instruction) and only then reads the SRQ's claim index,
 * up to which its flush waits for the SRQ to be reaped (srq_arrivals_in()).
 * The sender reads the QP's index after its own claim: either it sees the
 * QP closed, and the entries it claimed complete flushed at the run's end
 * while the SEND fails as one nobody acked, or the owner's read comes after
 * the claim and its flush waits for the entries. So a burst makes one
 * locked instruction, which waits for the store buffer to drain, and
 * reserves nothing on the receiving QP. A QP seen closed before the claim
 * (exec_one()) claims nothing.
 */
static uint8_t
srq_claim_burst(struct shm_qp *qp, struct sq_batch *b)
{
	const struct shm_peer *peer = b->peer;
	uint64_t want = RTE_MAX(b->srq_want, 1u), idx = 0, got = 0;
	uint8_t st;

	st = srq_claim(qp, peer, want, &idx, &got);
	if (st != RDP_WC_SUCCESS)
		return st;
	qp->peer_srq_next = idx;
	qp->peer_srq_end = idx + got;
	if (unlikely(__atomic_load_n(&peer->qseg->rq_claim, __ATOMIC_SEQ_CST) !=
		     qp->peer_rq_claimed))
		return RDP_WC_RETRY_EXC_ERR;
	return RDP_WC_SUCCESS;
}

/*
 * Take entry @p idx of the peer's SRQ, claimed by this QP, for filling: it
 * is ours unless its owner took it back (srq_take_back()), which it does
 * only once this sender is dead or, no QP of its own claiming the entry
 * any more, SHM_SRQ_DRAIN_MS after it waited for it. A plain load and
 * store, not a CAS: a locked instruction waits until the stores of the
 * SEND before it (the seq the poller reads at every poll among them) have
 * left the store buffer, and it made each SEND wait for the last one's
 * line to come back from the poller. Names the QP it arrives on.
 */
static __rte_always_inline bool
srq_ent_take(const struct shm_peer *peer, struct shm_rq_ent *ent, uint64_t idx)
{
	struct shm_srq_tail *t = shm_srq_ent_tail(ent, peer->srq_stride);

	if (__atomic_load_n(&t->claim, __ATOMIC_RELAXED) != shm_srq_seq_posted(idx))
		return false;
	__atomic_store_n(&t->claim, shm_srq_seq_filling(idx), __ATOMIC_RELAXED);
	SHM_SRQ_ENT_TAKEN(ent);
	/*
	 * Read with the entry once its seq says complete; the owner finds a
	 * sender that died before that by its claim (srq_claimer()).
	 */
	__atomic_store_n(&ent->src_slot, (uint16_t)peer->bell_slot, __ATOMIC_RELAXED);
	__atomic_store_n(&ent->src_qpn, peer->qpn, __ATOMIC_RELAXED);
	return true;
}

/*
 * A SEND to a QP that receives from an SRQ: it fills the next SRQ entry its
 * burst claimed, completes it at once (its seq: the entries of one sender
 * are not contiguous) and names the QP it arrived on; the count and the
 * doorbell come at the end of the run, on that QP's CQ, as for an RQ.
 */
static __rte_always_inline uint8_t
exec_send_srq(struct shm_qp *qp, struct sq_batch *b, const struct shm_swqe *e)
{
	const struct shm_peer *peer = b->peer;
	struct shm_rq_ent *ent, *next;
	uint64_t idx, next_idx;
	uint8_t st;

	if (qp->peer_srq_next == qp->peer_srq_end) {
		st = srq_claim_burst(qp, b);
		if (st != RDP_WC_SUCCESS)
			return st; /* what it claimed settles with the run */
	}
	qp->rnr_waiting = 0;
	idx = qp->peer_srq_next++;
	if (b->srq_want > 0)
		b->srq_want--;
	ent = shm_rq_ent(peer->sents, peer->srq_mask, peer->srq_stride, idx);
	/*
	 * Up to two entries after it that this burst claimed, which its next
	 * SENDs fill: their lines were last written by the owner when it
	 * posted them, and a burst's SENDs follow each other closer than one
	 * fetch takes. Asked for now, they are here when the claim word is
	 * read and the entry written. Not the entry after the burst: the
	 * owner's poller reads its seq's line at every poll once it has reaped
	 * this one, and that line fetched for writing would go straight back
	 * to it; the run's end asks for it instead (next_entry_ask()).
	 */
	for (next_idx = idx + 1; next_idx != idx + 3 && next_idx != qp->peer_srq_end;
	     next_idx++) {
		next = shm_rq_ent(peer->sents, peer->srq_mask, peer->srq_stride, next_idx);
		prefetch_for_write(next);
		prefetch_for_write((const uint8_t *)next + 64);
		prefetch_for_write(shm_srq_ent_tail(next, peer->srq_stride));
	}
	if (unlikely(!srq_ent_take(peer, ent, idx)))
		return RDP_WC_RETRY_EXC_ERR; /* no receive, as if the receiver never acked */
	st = ent_fill(peer, peer->srq_max_sge, peer->srq_inline, ent, e);
	RDP_HOP_MARK_IF(ent->byte_len > 0, RDP_HOP_PUBLISH);
	SHM_SRQ_ENT_DONE(ent);
	__atomic_store_n(&ent->seq, shm_rq_seq(idx), __ATOMIC_RELEASE);
	RDP_HOP_MARK_IF(ent->byte_len > 0, RDP_HOP_VISIBLE);
	/* said filled at the run's end (srq_run_settle()) */
	qp->peer_srq_filled++;
	b->nremote++;
	return send_status(st);
}

/*
 * The end of a run to a QP on an SRQ. Entries it claimed and did not fill
 * (a SEND of the burst failed, or the QP went to error) cannot go back:
 * other senders have claimed past them, and the owner reaps in order. They
 * complete as flushed receives of the receiving QP, which its sender's
 * failure takes down anyway. Then srq_filled counts the entries the run
 * completed, and the claim it announced ends.
 */
static void
srq_run_settle(struct shm_qp *qp, struct sq_batch *b)
{
	const struct shm_peer *peer = b->peer;

	for (; qp->peer_srq_next != qp->peer_srq_end; qp->peer_srq_next++) {
		uint64_t idx = qp->peer_srq_next;
		struct shm_rq_ent *ent = shm_rq_ent(peer->sents, peer->srq_mask,
						    peer->srq_stride, idx);

		if (!srq_ent_take(peer, ent, idx))
			continue; /* taken back by its owner, who completes it */
		ent->byte_len = 0;
		ent->imm = 0;
		ent->wc_flags = 0;
		ent->status = RDP_WC_WR_FLUSH_ERR;
		SHM_SRQ_ENT_DONE(ent);
		__atomic_store_n(&ent->seq, shm_rq_seq(idx), __ATOMIC_RELEASE);
		qp->peer_srq_filled++;
		b->nremote++;
	}
	/*
	 * After the entries, before the doorbell: the owner's reap looks no
	 * further than what is said filled. Once a run, not once a SEND: the
	 * line is the owner's to read, and every store to it would make the
	 * line travel back and forth.
	 */
	if (b->nremote > 0)
		__atomic_store_n(&peer->qseg->srq_filled, qp->peer_srq_filled, __ATOMIC_RELEASE);
	/* every entry it claimed is complete: it claims none now (srq_claimer()) */
	__atomic_store_n(&peer->qseg->srq_claim_n, 0, __ATOMIC_RELEASE);
	b->srq_want = 0;
}

static __rte_always_inline uint8_t
exec_send(struct shm_qp *qp, struct sq_batch *b, const struct shm_swqe *e)
{
	const struct shm_peer *peer = b->peer;
	struct shm_rq_ent *ent;
	uint64_t c = qp->peer_rq_ci;
	uint8_t st;

	if (unlikely(peer->sseg != NULL))
		return exec_send_srq(qp, b, e);

	if (c == qp->peer_rq_claimed) {
		uint64_t want;

		if (qp->peer_rq_posted == c) {
			/* used up what we saw posted: look again (a cross-core read) */
			uint64_t posted = __atomic_load_n(&peer->qseg->rq_posted, __ATOMIC_ACQUIRE);

			if (posted == c)
				return rnr(qp);
			if (unlikely(posted - c > (uint64_t)peer->rq_mask + 1))
				return RDP_WC_REM_OP_ERR; /* the peer's RQ index is garbage */
			qp->peer_rq_posted = posted;
		}
		/*
		 * Claim entries for the WRs of this run at once; fails only when
		 * the owner closed its RQ (or garbage). What is left unused goes
		 * back at the end of the run (sq_claims_return).
		 */
		want = RTE_MIN(qp->peer_rq_posted - c, (uint64_t)b->want);
		if (unlikely(!__atomic_compare_exchange_n(&peer->qseg->rq_claim, &c, c + want, false,
							  __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)))
			return RDP_WC_RETRY_EXC_ERR;
		qp->peer_rq_claimed = c + want;
	}
	qp->rnr_waiting = 0;
	ent = shm_rq_ent(peer->ents, peer->rq_mask, peer->rq_stride, c);
	st = ent_fill(peer, peer->max_sge, peer->rq_inline, ent, e);
	/* its seq is stored at the end of the run (sq_publish) */
	qp->peer_rq_ci = c + 1;
	b->nremote++;
	return send_status(st);
}

/*
 * The peer memory a one-sided WR names, as its responder checks it: the
 * rkey, the access the MR grants, the range. NULL: a remote access error.
 */
static uint8_t *
remote_range(const struct shm_peer *peer, const struct shm_swqe *e, unsigned int access)
{
	const struct shm_peer_mr *m;
	uint32_t idx = shm_key_id(e->rkey);

	if (unlikely(idx >= peer->nb_mr))
		return NULL;
	m = &peer->mr[idx];
	if (unlikely(m->base == NULL || m->rkey != e->rkey || !(m->access & access) ||
		     !range_in(e->remote_addr, e->total_len, m->addr, m->length)))
		return NULL;
	/* deregistered since the rendezvous: the owner cleared its key */
	if (unlikely(__atomic_load_n(&peer->keys->key[idx].rkey, __ATOMIC_ACQUIRE) != e->rkey))
		return NULL;
	return m->base + (e->remote_addr - m->addr);
}

/*
 * A one-sided WR into peer memory this side has not mapped (registered
 * with rdp_mr_reg(), or a memfd made after the rendezvous): the peer's key
 * table says where and what is allowed, and the bytes go with one
 * process_vm_writev/readv into the peer process. A region the peer
 * unmapped meanwhile fails as a bad address would.
 */
static uint8_t
exec_foreign(struct shm_qp *qp, const struct shm_peer *peer, const struct shm_swqe *e,
	     unsigned int access)
{
	struct iovec local[SHM_MAX_SGE], remote;
	const struct shm_key *k;
	uint32_t id = shm_key_id(e->rkey), acc;
	uint64_t addr, len;
	ssize_t n;
	uint16_t i;

	if (unlikely(id >= SHM_MAX_MR || e->rkey == 0))
		return RDP_WC_REM_ACCESS_ERR;
	k = &peer->keys->key[id];
	if (__atomic_load_n(&k->rkey, __ATOMIC_ACQUIRE) != e->rkey)
		return RDP_WC_REM_ACCESS_ERR;
	addr = __atomic_load_n(&k->addr, __ATOMIC_RELAXED);
	len = __atomic_load_n(&k->length, __ATOMIC_RELAXED);
	acc = __atomic_load_n(&k->access, __ATOMIC_RELAXED);
	/*
	 * The key again, after what it guards: an id freed and registered
	 * anew meanwhile (under another key) must not lend its new range to
	 * the old key.
	 */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&k->rkey, __ATOMIC_RELAXED) != e->rkey || !(acc & access) ||
	    !range_in(e->remote_addr, e->total_len, addr, len))
		return RDP_WC_REM_ACCESS_ERR;
	for (i = 0; i < e->num_sge; i++) {
		local[i].iov_base = e->sge[i].addr;
		local[i].iov_len = e->sge[i].len;
	}
	remote.iov_base = (void *)(uintptr_t)e->remote_addr;
	remote.iov_len = e->total_len;
	RDP_STAT_ADD(qp->st_rdma_syscalls, 1);
	n = access == RDP_ACCESS_REMOTE_WRITE ?
		process_vm_writev(peer->pid, local, e->num_sge, &remote, 1, 0) :
		process_vm_readv(peer->pid, local, e->num_sge, &remote, 1, 0);
	if (likely(n == (ssize_t)e->total_len))
		return RDP_WC_SUCCESS;
	return n >= 0 || errno == EFAULT ? RDP_WC_REM_ACCESS_ERR : RDP_WC_REM_OP_ERR;
}

/*
 * Check one-sided WQE @p e as its responder would, moving no byte. A READ
 * first needs one of the responder's read slots (a READ holds one until its
 * completion or a later one is polled, the most an initiator can know of its
 * responder); then the rkey and range. On success, *remote is the peer
 * memory as mapped here, or NULL when no byte moves (zero length) or the
 * memory is not mapped here (exec_foreign()).
 */
static __rte_always_inline uint8_t
onesided_check(const struct shm_qp *qp, const struct shm_peer *peer, const struct shm_swqe *e,
	       uint8_t **remote)
{
	bool read = e->opcode == RDP_WR_RDMA_READ;

	*remote = NULL;
	if (read && unlikely(e->rd_seq - qp->rd_freed >
			     __atomic_load_n(&peer->qseg->max_dest_rd_atomic, __ATOMIC_ACQUIRE)))
		return RDP_WC_REM_INV_REQ_ERR;
	if (e->total_len > 0)
		*remote = remote_range(peer, e, read ? RDP_ACCESS_REMOTE_READ :
				       RDP_ACCESS_REMOTE_WRITE);
	return RDP_WC_SUCCESS;
}

/* Move the bytes of one-sided WQE @p e, checked (onesided_check()); returns its status. */
static __rte_always_inline uint8_t
onesided_move(struct shm_qp *qp, const struct shm_peer *peer, const struct shm_swqe *e,
	      uint8_t *remote)
{
	bool write = e->opcode == RDP_WR_RDMA_WRITE;
	uint16_t i;

	if (e->total_len == 0)
		return RDP_WC_SUCCESS; /* no remote effect at all */
	if (unlikely(remote == NULL))
		return exec_foreign(qp, peer, e, write ? RDP_ACCESS_REMOTE_WRITE :
				    RDP_ACCESS_REMOTE_READ);
	for (i = 0; i < e->num_sge; i++) {
		if (write)
			shm_copy(qp->sd, remote, e->sge[i].addr, e->sge[i].len);
		else
			shm_copy(qp->sd, e->sge[i].addr, remote, e->sge[i].len);
		remote += e->sge[i].len;
	}
	return RDP_WC_SUCCESS;
}

static __rte_always_inline uint8_t
exec_one(struct shm_qp *qp, struct sq_batch *b, const struct shm_swqe *e)
{
	const struct shm_peer *peer = b->peer;

	if (unlikely(e->status != RDP_WC_SUCCESS))
		return e->status;
	/*
	 * A link that went down (fail_after) stays down: a QP connected after
	 * it, which the link's fall did not move to error, gets no answer
	 * either and gives up as a real transport would.
	 */
	if (unlikely(qp->sd->fail_after != 0) &&
	    unlikely(__atomic_load_n(&qp->sd->link_down, __ATOMIC_RELAXED)))
		return RDP_WC_RETRY_EXC_ERR;
	if (!peer_answers(qp, peer))
		return RDP_WC_RETRY_EXC_ERR;
	if (e->opcode >= RDP_WR_RDMA_WRITE) {
		uint8_t *remote, st = onesided_check(qp, peer, e, &remote);

		return st != RDP_WC_SUCCESS ? st : onesided_move(qp, peer, e, remote);
	}
	return exec_send(qp, b, e);
}

/*
 * dup_send: a SEND that ran arrives once more, into the next receive
 * entry, with no payload and the same immediate data. That is what rxe's
 * requester sends when it retransmits a SEND its peer had acknowledged
 * (docs/rxe-lane.md): the receiver gets a message nobody sent. Never into
 * the last free receive entry: rxe makes one such copy per retransmission,
 * far apart, while back-to-back copies here could leave a receiver short
 * of the receives its peer has credit for (an RNR).
 */
static void
dup_send(struct shm_qp *qp, struct sq_batch *b, const struct shm_swqe *e)
{
	/* a WQE with room for any SGE list, though the copy carries none */
	_Alignas(struct shm_swqe) uint8_t store[sizeof(struct shm_swqe) +
						SHM_MAX_SGE * sizeof(struct shm_lsge)];
	struct shm_swqe *ghost = (struct shm_swqe *)store;

	/* not to a QP on an SRQ (docs/drivers.md) */
	if (e->opcode > RDP_WR_SEND_WITH_IMM || b->peer->sseg != NULL ||
	    ++qp->dup_count < qp->dup_every)
		return;
	qp->dup_count = 0;
	if (__atomic_load_n(&b->peer->qseg->rq_posted, __ATOMIC_ACQUIRE) - qp->peer_rq_ci < 2)
		return;
	memcpy(ghost, e, sizeof(*ghost));
	ghost->total_len = 0;
	ghost->num_sge = 0;
	(void)exec_send(qp, b, ghost);
}

/* Fault knobs, after each executed WR. Returns true when the QP went down. */
static bool
faults(struct shm_qp *qp, struct sq_batch *b, const struct shm_swqe *e)
{
	struct shm_dev *sd = qp->sd;

	if (qp->dup_every != 0)
		dup_send(qp, b, e);

	if (qp->drop_left != 0 && --qp->drop_left == 0) {
		if (shm_qp_set_error(qp))
			shm_event_push(sd, RDP_EVENT_QP_FATAL, &qp->head, NULL);
		return true;
	}
	if (sd->fail_after != 0 &&
	    __atomic_add_fetch(&sd->executed, 1, __ATOMIC_RELAXED) >= sd->fail_after) {
		shm_link_down(sd);
		return true;
	}
	return false;
}

/* Complete the run's entries not completed yet (their seq): the peer may reap them. */
static __rte_always_inline void
sq_publish_entries(struct shm_qp *qp, struct sq_batch *b)
{
	const struct shm_peer *peer = b->peer;
	uint64_t i;

	for (i = b->first; i != qp->peer_rq_ci; i++) {
		struct shm_rq_ent *ent = shm_rq_ent(peer->ents, peer->rq_mask, peer->rq_stride, i);
#ifdef RDP_HOP_TRACE
		/* data, not pure acks; read before the entry is the peer's */
		bool data = ent->byte_len > 0;
#endif

		RDP_HOP_MARK_IF(data, RDP_HOP_PUBLISH);
		__atomic_store_n(&ent->seq, shm_rq_seq(i), __ATOMIC_RELEASE);
		RDP_HOP_MARK_IF(data, RDP_HOP_VISIBLE);
	}
	b->first = qp->peer_rq_ci;
}

/*
 * The WR at sq_exec ran with status @p st: its completion if it is signaled
 * or failed (counted at the run's end), and a failure moves the QP to error.
 */
static __rte_always_inline void
sq_retire(struct shm_qp *qp, struct sq_batch *b, const struct shm_swqe *e, uint8_t st)
{
	if ((e->flags & RDP_SEND_SIGNALED) || st != RDP_WC_SUCCESS) {
		push_local(qp->scq, qp, qp->sq_exec, e, st);
		b->nlocal++;
	}
	qp->sq_exec++;
	if (unlikely(st != RDP_WC_SUCCESS))
		shm_qp_set_error(qp);
}

/*
 * Execute the WR at sq_exec. Returns SHM_AGAIN when it must wait (it stays
 * queued), else its status; on an error the QP has gone to error.
 */
static __rte_always_inline uint8_t
sq_exec_one(struct shm_qp *qp, struct sq_batch *b, const struct shm_swqe *e)
{
	uint8_t st = exec_one(qp, b, e);

	if (st == SHM_AGAIN) {
		shm_cq_pend_set(qp->scq, qp->sslot);
		return st;
	}
	if (b->eager && likely(st == RDP_WC_SUCCESS))
		sq_publish_entries(qp, b);
	sq_retire(qp, b, e, st);
	return st;
}

/*
 * Give back the entries a run claimed and did not use. When the owner has
 * closed its RQ meanwhile, it counts them as claimed and waits for them:
 * they complete as flushed.
 */
static void
sq_claims_return(struct shm_qp *qp, struct sq_batch *b)
{
	struct shm_peer *peer = b->peer;
	uint64_t expected = qp->peer_rq_claimed;

	if (__atomic_compare_exchange_n(&peer->qseg->rq_claim, &expected, qp->peer_rq_ci, false,
					__ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
		qp->peer_rq_claimed = qp->peer_rq_ci;
		return;
	}
	for (; qp->peer_rq_ci != qp->peer_rq_claimed; qp->peer_rq_ci++) {
		struct shm_rq_ent *ent = shm_rq_ent(peer->ents, peer->rq_mask, peer->rq_stride,
						    qp->peer_rq_ci);

		ent->byte_len = 0;
		ent->imm = 0;
		ent->wc_flags = 0;
		ent->status = RDP_WC_WR_FLUSH_ERR;
		b->nremote++;
	}
}

/*
 * The entry a sender's next SEND writes, asked for while a burst is out
 * (docs/performance.md, "The next entry is read after a burst"); the
 * peer's repost left it modified in the peer's cache. Its seq's line is
 * read: the peer's poller reads it at every poll, and fetched for writing
 * it would go straight back; the SEND then only upgrades a line it
 * shares. Its second line (the payload's rest, on an SRQ the claim word)
 * the poller reads only once the entry is complete: that one is fetched
 * for writing, and the SEND finds it ours.
 */
static __rte_always_inline void
next_entry_ask(const struct shm_rq_ent *ent)
{
	rte_prefetch0(ent);
	prefetch_for_write((const uint8_t *)ent + 64);
}

/*
 * Publish a run: complete the entries (seq) an eager run has not, count
 * them in the peer's CQ, then one doorbell unless the peer's poller
 * announced this RQ.
 */
static void
sq_publish(struct shm_qp *qp, struct sq_batch *b)
{
	struct shm_peer *peer = b->peer;

	if (unlikely(peer->sseg != NULL))
		srq_run_settle(qp, b);
	else if (unlikely(qp->peer_rq_claimed != qp->peer_rq_ci))
		sq_claims_return(qp, b);
	if (b->nremote > 0) {
		sq_publish_entries(qp, b);
		__atomic_store_n(&peer->qseg->rq_done, qp->peer_rq_ci, __ATOMIC_RELEASE);
		cq_count_remote(peer->cseg, b->nremote);
		/*
		 * A poller that announces it looks at this RQ on every poll needs
		 * no doorbell. The fence pairs with the one in shm_cq_unannounce():
		 * either we see the announcement gone and ring, or its poller,
		 * after withdrawing it, finds the entries we completed.
		 */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (!__atomic_load_n(peer->sseg != NULL ? &peer->sseg->peeked : &peer->qseg->peeked,
				     __ATOMIC_RELAXED))
			shm_bell_ring(peer->cseg, peer->bell_word, peer->bell_bit);
		else
			qp->bells_skipped++;
	}
	/* to an SRQ: the entry after the run's claim, which this QP's next
	 * SEND takes unless another sender claims it first */
	if (b->nremote > 0 && qp->peer_rq_ci != qp->peer_rq_posted)
		next_entry_ask(shm_rq_ent(peer->ents, peer->rq_mask, peer->rq_stride,
					  qp->peer_rq_ci));
	if (unlikely(peer->sseg != NULL) && b->nremote > 0)
		next_entry_ask(shm_rq_ent(peer->sents, peer->srq_mask, peer->srq_stride,
					  qp->peer_srq_end));
	if (b->nlocal > 0)
		cq_count_local(qp->scq, b->nlocal);
	if (unlikely(__atomic_load_n(&qp->state, __ATOMIC_ACQUIRE) == RDP_QPS_ERR))
		sq_flush(qp);
}

/*
 * Can WRs run as they are posted? The QP is ready, nothing is queued or
 * waiting on an RNR, and no fault knob counts executions. Sets b->peer.
 */
static inline bool
sq_can_run(struct shm_qp *qp, struct sq_batch *b)
{
	int state = __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE);

	if (unlikely(state != RDP_QPS_RTS))
		return false;
	b->peer = __atomic_load_n(&qp->peer, __ATOMIC_ACQUIRE);
	b->first = qp->peer_rq_ci;
	b->want = 1;
	b->srq_want = 1;
	b->nlocal = 0;
	b->nremote = 0;
	b->eager = false;
	if (unlikely(b->peer == NULL))
		return false;
	if (unlikely(qp->rnr_waiting && rdp_clock_ns() < qp->rnr_next_ns))
		return false;
	return true;
}

/* The sender's engine: execute queued WRs, then ring one doorbell. */
/*
 * A QP on an SRQ, in error: has the SRQ been reaped past every entry its
 * peer claimed before the close? Its receive completions then precede its
 * flush, as they do on one CQ of a device (an SRQ has no per-QP receives to
 * flush that would say so). The SRQ's claim index, read once the close is
 * done, covers them all (srq_claim_burst()). A dead peer lands nothing
 * more, but what it landed is still to be reaped.
 */
static bool
srq_arrivals_in(struct shm_qp *qp)
{
	uint64_t now;

	if (qp->srq_drained)
		return true;
	now = rdp_clock_ns();
	if (qp->srq_wait_since == 0)
		qp->srq_wait_since = now;
	/*
	 * The SRQ is reaped in order, and an entry its sender died holding is
	 * taken back (srq_take_back()); past SHM_SRQ_DRAIN_MS the flush goes
	 * on anyway rather than wait for ever.
	 */
	if (now - qp->srq_wait_since > SHM_SRQ_DRAIN_MS * 1000000ull) {
		qp->srq_drained = 1;
		return true;
	}
	/* the reap must look at the SRQ's next entry, filled or not (its take-back) */
	__atomic_fetch_add(&qp->srq->looks_owed, 1, __ATOMIC_RELAXED);
	if (qp->srq_wait == 0) {
		/* the error may be another thread's, its close not done yet */
		if (!__atomic_load_n(&qp->rq_closed, __ATOMIC_ACQUIRE))
			return false;
		/* after the close: sequentially consistent with the senders' claims */
		qp->srq_wait = 1 + __atomic_load_n(&qp->srq->seg->rq_claim, __ATOMIC_SEQ_CST);
	}
	if (__atomic_load_n(&qp->srq->reaped, __ATOMIC_ACQUIRE) + 1 < qp->srq_wait)
		return false;
	qp->srq_drained = 1;
	return true;
}

static void
sq_run(struct shm_qp *qp)
{
	struct sq_batch b;

	if (unlikely(__atomic_load_n(&qp->state, __ATOMIC_ACQUIRE) == RDP_QPS_ERR)) {
		if (unlikely(qp->srq != NULL) && !srq_arrivals_in(qp)) {
			/* its flush completes after its last receives: look again */
			shm_cq_pend_set(qp->scq, qp->sslot);
			return;
		}
		sq_flush(qp);
		return;
	}
	if (!sq_can_run(qp, &b)) {
		shm_cq_pend_set(qp->scq, qp->sslot);
		return;
	}
	while (qp->sq_exec != qp->sq_pi) {
		uint8_t st;

		if (unlikely(__atomic_load_n(&qp->state, __ATOMIC_RELAXED) == RDP_QPS_ERR))
			break;
		const struct shm_swqe *e = shm_wqe(qp, qp->sq_exec);

		st = sq_exec_one(qp, &b, e);
		if (st != RDP_WC_SUCCESS)
			break;
		if (unlikely(qp->drop_left != 0 || qp->sd->fail_after != 0 || qp->dup_every != 0) &&
		    faults(qp, &b, e))
			break;
	}
	sq_publish(qp, &b);
}

/* Check a WR's shape; 0 or -EINVAL. */
static inline int
wr_check(const struct shm_qp *qp, const struct rdp_send_wr *w)
{
	if (unlikely(w->num_sge > qp->max_send_sge || w->opcode > RDP_WR_RDMA_READ ||
		     (w->num_sge > 0 && w->sg_list == NULL)))
		return -EINVAL;
	/* a READ's list is where its data lands: nothing to copy at post time */
	if (unlikely(w->opcode == RDP_WR_RDMA_READ && (w->flags & RDP_SEND_INLINE)))
		return -EINVAL;
	if (unlikely(w->flags & RDP_SEND_INLINE)) {
		uint64_t total = 0;
		uint32_t j;

		for (j = 0; j < w->num_sge; j++)
			total += w->sg_list[j].length;
		if (total > qp->max_inline)
			return -EINVAL;
	}
	return 0;
}

/*
 * Queue a checked WR as a WQE at sq_pi: its SGEs are checked against their
 * MRs (an error completes it with that status when it runs), inline data is
 * copied.
 */
static void
wqe_build(struct shm_qp *qp, const struct rdp_send_wr *w)
{
	struct shm_swqe *e = shm_wqe(qp, qp->sq_pi);
	uint64_t total = 0;
	uint32_t j;

	e->status = RDP_WC_SUCCESS;
	if (w->flags & RDP_SEND_INLINE) {
		uint8_t *buf = (uint8_t *)&e->sge[qp->max_send_sge];

		for (j = 0; j < w->num_sge; j++) {
			memcpy(buf + total, (const void *)(uintptr_t)w->sg_list[j].addr,
			       w->sg_list[j].length);
			total += w->sg_list[j].length;
		}
		e->sge[0].addr = buf;
		e->sge[0].len = total;
		e->num_sge = total > 0;
	} else {
		unsigned int need = w->opcode == RDP_WR_RDMA_READ ? RDP_ACCESS_LOCAL_WRITE : 0;

		for (j = 0; j < w->num_sge; j++) {
			const struct rdp_sge *s = &w->sg_list[j];
			if (unlikely(!send_sge_ok(qp->sd, s, need)))
				e->status = RDP_WC_LOC_PROT_ERR;
			e->sge[j].addr = (uint8_t *)(uintptr_t)s->addr;
			e->sge[j].len = s->length;
			total += s->length;
		}
		e->num_sge = (uint16_t)w->num_sge;
	}
	if (unlikely(total > UINT32_MAX))
		e->status = RDP_WC_LOC_LEN_ERR;
	e->total_len = (uint32_t)total;
	e->wr_id = w->wr_id;
	e->opcode = w->opcode;
	e->flags = w->flags;
	e->imm = w->imm;
	e->remote_addr = w->remote_addr;
	e->rkey = w->rkey;
	if (w->opcode == RDP_WR_RDMA_READ)
		qp->rd_posted++;
	e->rd_seq = qp->rd_posted;
	qp->sq_pi++;
}

/*
 * How many of @p wr[0..n) run_direct() will run, one after another: SENDs
 * of at most one SGE that pass wr_check() and the lkey check, while the
 * SQ has room. A burst to an SRQ claims exactly that many receives.
 */
static uint32_t
direct_sends(struct shm_qp *qp, const struct rdp_send_wr *wr, uint16_t n)
{
	uint64_t room = qp->sq_depth - (qp->sq_pi - qp->sq_freed);
	uint32_t k;

	for (k = 0; k < n && k < room; k++) {
		const struct rdp_send_wr *w = &wr[k];

		if (w->opcode > RDP_WR_SEND_WITH_IMM || w->num_sge > 1 || wr_check(qp, w) != 0 ||
		    (w->num_sge == 1 && !(w->flags & RDP_SEND_INLINE) &&
		     !send_sge_ok(qp->sd, &w->sg_list[0], 0)))
			break;
	}
	return k;
}

/*
 * The WQE of a checked WR of at most one SGE, built from the caller's WR
 * into @p e (room for one SGE) rather than into the SQ; a READ counts as
 * posted.
 */
static __rte_always_inline void
wqe_of_wr(struct shm_qp *qp, const struct rdp_send_wr *w, struct shm_swqe *e)
{
	e->total_len = 0;
	if (w->num_sge == 1) {
		e->sge[0].addr = (uint8_t *)(uintptr_t)w->sg_list[0].addr;
		e->sge[0].len = w->sg_list[0].length;
		e->total_len = w->sg_list[0].length;
	}
	e->num_sge = (uint16_t)w->num_sge;
	e->status = RDP_WC_SUCCESS;
	e->wr_id = w->wr_id;
	e->opcode = w->opcode;
	e->flags = w->flags;
	e->imm = w->imm;
	e->remote_addr = w->remote_addr; /* a SEND's: never read */
	e->rkey = w->rkey;
	if (w->opcode == RDP_WR_RDMA_READ)
		qp->rd_posted++;
	e->rd_seq = qp->rd_posted;
}

/*
 * Run a checked SEND of at most one SGE straight from the caller's WR, with
 * no WQE: the common case of an idle SQ. Returns false, having done
 * nothing but start an RNR wait, when the WR must be queued instead (a bad
 * lkey, or no posted receive to take it).
 */
static inline bool
run_direct(struct shm_qp *qp, struct sq_batch *b, const struct rdp_send_wr *w)
{
	union {
		struct shm_swqe e;
		uint8_t bytes[sizeof(struct shm_swqe) + sizeof(struct shm_lsge)];
	} d;
	struct shm_swqe *e = &d.e;

	if (w->num_sge == 1 && !(w->flags & RDP_SEND_INLINE) &&
	    unlikely(!send_sge_ok(qp->sd, &w->sg_list[0], 0)))
		return false;
	wqe_of_wr(qp, w, e);
	qp->sq_pi++;
	if (sq_exec_one(qp, b, e) == SHM_AGAIN) {
		qp->sq_pi--; /* no receive posted: queue it, it waits (RNR) */
		return false;
	}
	return true;
}

/* At most this many one-sided WRs are resolved before their copies (run_onesided()). */
#define SHM_RUN_MAX 32

/* A one-sided WR of a run: its WQE, on the stack, its status, the peer memory it names. */
struct run_op {
	uint8_t *remote;  /* mapped here; NULL with bytes to move: exec_foreign() */
	uint8_t status;
	/* a struct shm_swqe and its one SGE (run_wqe()) */
	uint64_t wqe[(sizeof(struct shm_swqe) + sizeof(struct shm_lsge) + 7) / 8];
};

static __rte_always_inline struct shm_swqe *
run_wqe(struct run_op *o)
{
	return (struct shm_swqe *)o->wqe;
}

/*
 * Build the WQE of checked one-sided WR @p w into @p o and check it as
 * exec_one() and its responder would, moving no byte: its status and,
 * when it may go, the peer memory it names. A READ counts as posted.
 */
static __rte_always_inline void
run_op_resolve(struct shm_qp *qp, const struct shm_peer *peer, const struct rdp_send_wr *w,
	       struct run_op *o)
{
	struct shm_swqe *e = run_wqe(o);

	o->remote = NULL;
	wqe_of_wr(qp, w, e);
	/* a READ's list is where its data lands */
	if (w->num_sge == 1 && !(w->flags & RDP_SEND_INLINE) &&
	    unlikely(!send_sge_ok(qp->sd, &w->sg_list[0], w->opcode == RDP_WR_RDMA_READ ?
				  RDP_ACCESS_LOCAL_WRITE : 0)))
		o->status = RDP_WC_LOC_PROT_ERR;
	else if (!peer_answers(qp, peer))
		o->status = RDP_WC_RETRY_EXC_ERR;
	else
		o->status = onesided_check(qp, peer, e, &o->remote);
}

/*
 * Run the one-sided WRs (RDMA WRITE and READ of at most one SGE) at the head
 * of @p w[0..n) straight from the caller's WRs, with no WQE in the SQ: all
 * are checked first, then their bytes move, then they complete. A copy of
 * tens of KiB leaves no line of the QP, its peer, the MRs or the WRs in the
 * cache; checking each WR between two copies would fetch them all again for
 * every WR. Stops after a WR that fails (the QP is in error then), and
 * before one that is not such a WR, is malformed or finds no SQ slot: the
 * caller takes it. Returns how many WRs ran.
 */
static uint16_t
run_onesided(struct shm_qp *qp, struct sq_batch *b, const struct rdp_send_wr *w, uint16_t n)
{
	struct run_op ops[SHM_RUN_MAX];
	uint64_t room = qp->sq_depth - (qp->sq_pi - qp->sq_freed);
	uint16_t k, j;

	for (k = 0; k < n && k < room && k < SHM_RUN_MAX; k++) {
		const struct rdp_send_wr *x = &w[k];

		if (x->opcode < RDP_WR_RDMA_WRITE || x->num_sge > 1 || wr_check(qp, x) != 0)
			break;
		run_op_resolve(qp, b->peer, x, &ops[k]);
		if (unlikely(ops[k].status != RDP_WC_SUCCESS)) {
			k++;
			break;
		}
	}
	for (j = 0; j < k; j++) {
		struct run_op *o = &ops[j];

		if (o->status != RDP_WC_SUCCESS)
			continue;
		o->status = onesided_move(qp, b->peer, run_wqe(o), o->remote);
		if (unlikely(o->status != RDP_WC_SUCCESS)) {
			k = j + 1; /* the rest did not run: the caller queues them */
			break;
		}
	}
	if (k == 0)
		return 0;
	qp->rd_posted = run_wqe(&ops[k - 1])->rd_seq;
	for (j = 0; j < k; j++) {
		qp->sq_pi++;
		sq_retire(qp, b, run_wqe(&ops[j]), ops[j].status);
	}
	return k;
}

uint16_t
shm_post_send(struct rdp_qp *q, const struct rdp_send_wr *wr, uint16_t n, int *err)
{
	struct shm_qp *qp = to_sqp(q);
	int state = __atomic_load_n(&qp->state, __ATOMIC_RELAXED);
	struct sq_batch b;
	bool direct;
	uint16_t i;

	*err = 0;
	if (unlikely(state != RDP_QPS_RTS && state != RDP_QPS_ERR)) {
		*err = -EPERM;
		return 0;
	}
	direct = qp->sq_exec == qp->sq_pi && qp->drop_left == 0 && qp->sd->fail_after == 0 &&
		 qp->dup_every == 0 && sq_can_run(qp, &b);
	b.srq_want = 0; /* counted at the first SEND (direct_sends()) */
	for (i = 0; i < n; i++) {
		const struct rdp_send_wr *w = &wr[i];

		if (unlikely(qp->sq_pi - qp->sq_freed >= qp->sq_depth)) {
			*err = -ENOMEM;
			RDP_STAT_ADD(qp->st_enomem, 1);
			break;
		}
		*err = wr_check(qp, w);
		if (unlikely(*err != 0))
			break;
		if (direct) {
			b.want = n - i;
			/* to an SRQ, claims for exactly the SENDs that will run */
			if (unlikely(b.peer->sseg != NULL) && b.srq_want == 0)
				b.srq_want = direct_sends(qp, w, n - i);
			/* the post's last WR: the burst is visible before its bookkeeping */
			b.eager = b.want == 1;
			if (w->num_sge <= 1 &&
			    __atomic_load_n(&qp->state, __ATOMIC_RELAXED) == RDP_QPS_RTS) {
				uint16_t k;

				if (w->opcode <= RDP_WR_SEND_WITH_IMM) {
					if (run_direct(qp, &b, w))
						continue;
				} else if ((k = run_onesided(qp, &b, w, n - i)) > 0) {
					i += k - 1;
					continue;
				}
			}
			/* from here on, in order, through the queue */
			direct = false;
			sq_publish(qp, &b);
		}
		wqe_build(qp, w);
	}
	if (i > 0)
		RDP_STAT_ADD(qp->st_send_posted, i);
	if (direct)
		sq_publish(qp, &b);
	else if (i > 0)
		sq_run(qp);
	return i;
}

/*
 * The MR a post call last checked for receiving (the lkey it had): the
 * SGEs of a burst of receives name one pool's MR, which needs checking
 * once, not at every SGE. It lives for one call, as the first lookup's
 * answer does.
 */
struct recv_mr_seen {
	uint32_t lkey;
	const struct shm_mr *mr; /* NULL: none checked yet */
};

/*
 * Can memory of @p lkey receive? Only memory every peer that may take the
 * entry has mapped: a memfd of @p pd below @p mr_limit, and for an RQ
 * (@p qp) an MR its peer_mrs name, registered with local write.
 */
static __rte_always_inline const struct shm_mr *
recv_mr(struct shm_dev *sd, const struct rdp_pd *pd, const struct shm_qp *qp,
	uint32_t mr_limit, uint32_t lkey, struct recv_mr_seen *seen)
{
	const struct shm_mr *mr;

	if (likely(seen->mr != NULL && seen->lkey == lkey))
		return seen->mr;
	mr = mr_lookup(sd, lkey);
	if (unlikely(mr == NULL || mr->memfd < 0 || mr->head.pd != pd ||
		     mr->id >= mr_limit || (qp != NULL && !shm_peer_mr_ok(qp, mr->id)) ||
		     !(mr->head.access & RDP_ACCESS_LOCAL_WRITE)))
		return NULL;
	seen->lkey = lkey;
	seen->mr = mr;
	return mr;
}

/*
 * Write receive WR @p w into entry @p ent (MR ids and offsets, for the
 * peer) and into our own copy @p lsge (addresses). False when an SGE is
 * not memory that can receive (recv_mr()) or lies outside its MR.
 */
static __rte_always_inline bool
recv_ent_fill(struct shm_dev *sd, const struct rdp_pd *pd, const struct shm_qp *qp,
	      uint32_t mr_limit, const struct rdp_recv_wr *w, struct shm_rq_ent *ent,
	      struct shm_lsge *lsge, uint64_t *total, struct recv_mr_seen *seen)
{
	uint32_t j, num_sge = w->num_sge;
	uint64_t sum = 0;

	for (j = 0; j < num_sge; j++) {
		const struct rdp_sge *s = &w->sg_list[j];
		const struct shm_mr *mr = recv_mr(sd, pd, qp, mr_limit, s->lkey, seen);

		if (unlikely(mr == NULL ||
			     !range_in(s->addr, s->length, (uintptr_t)mr->head.addr,
				       mr->head.length)))
			return false;
		ent->sge[j].mr_id = mr->id;
		ent->sge[j].len = s->length;
		ent->sge[j].off = s->addr - (uintptr_t)mr->head.addr;
		lsge[j].addr = (uint8_t *)(uintptr_t)s->addr;
		lsge[j].len = s->length;
		sum += s->length;
	}
	if (unlikely(sum > UINT32_MAX))
		return false;
	ent->num_sge = (uint8_t)num_sge;
	ent->status = RDP_WC_SUCCESS;
	*total = sum;
	return true;
}

uint16_t
shm_post_recv(struct rdp_qp *q, const struct rdp_recv_wr *wr, uint16_t n, int *err)
{
	struct shm_qp *qp = to_sqp(q);
	struct shm_dev *sd = qp->sd;
	struct recv_mr_seen seen = { .mr = NULL };
	uint16_t i;

	*err = 0;
	for (i = 0; i < n; i++) {
		const struct rdp_recv_wr *w = &wr[i];
		struct shm_rq_ent *ent;
		struct shm_rpost *post;
		struct shm_lsge *lsge;
		uint64_t total;

		if (unlikely(qp->rq_posted - shm_rq_reaped(qp) >= q->cap.max_recv_wr)) {
			*err = -ENOMEM;
			break;
		}
		if (unlikely(w->num_sge > qp->max_recv_sge || (w->num_sge > 0 && w->sg_list == NULL))) {
			*err = -EINVAL;
			break;
		}
		ent = shm_rq_ent(qp->ents, qp->rq_mask, qp->rq_stride, qp->rq_posted);
		lsge = rq_lsge(qp, qp->rq_posted);
		if (unlikely(!recv_ent_fill(sd, q->pd, qp, qp->mr_limit, w, ent, lsge, &total,
					    &seen))) {
			*err = -EINVAL;
			break;
		}
		post = &qp->rq_post[qp->rq_posted & qp->rq_mask];
		post->wr_id = w->wr_id;
		post->num_sge = w->num_sge;
		post->total_len = (uint32_t)total;
		/* the entry and its record first: the CQ's poller may be another thread */
		__atomic_store_n(&qp->rq_posted, qp->rq_posted + 1, __ATOMIC_RELEASE);
	}
	if (i > 0) {
		RDP_STAT_ADD(qp->st_recv_posted, i);
		__atomic_store_n(&qp->seg->rq_posted, qp->rq_posted, __ATOMIC_RELEASE);
		/*
		 * In error they complete as flushed: the CQ's poller must look.
		 * This may be another thread (lib/ep posts a new endpoint's
		 * receives on its control thread): the doorbell, not the poller's
		 * private flags, which a write from here could lose.
		 */
		if (unlikely(__atomic_load_n(&qp->state, __ATOMIC_RELAXED) == RDP_QPS_ERR))
			shm_bell_self(qp->rcq, qp->rslot);
	}
	return i;
}

/* Our own copy of the SGEs posted at SRQ entry @p idx (max_sge of them). */
static inline struct shm_lsge *
srq_lsge(const struct shm_srq *srq, uint64_t idx)
{
	return &srq->rq_sge[(size_t)(idx & srq->rq_mask) * srq->max_sge];
}

uint16_t
shm_post_srq_recv(struct rdp_srq *r, const struct rdp_recv_wr *wr, uint16_t n, int *err)
{
	struct shm_srq *srq = to_ssrq(r);
	uint32_t mr_limit = __atomic_load_n(&srq->mr_limit, __ATOMIC_ACQUIRE);
	uint64_t reaped = __atomic_load_n(&srq->reaped, __ATOMIC_ACQUIRE);
	uint64_t idx = srq->posted;
	/* the queue's shape, read once: the stores below may alias anything */
	uint8_t *ents = srq->ents;
	struct shm_rpost *rq_post = srq->rq_post;
	struct shm_lsge *rq_sge = srq->rq_sge;
	uint32_t mask = srq->rq_mask, stride = srq->rq_stride, max_sge = srq->max_sge;
	uint32_t max_wr = r->max_wr;
	struct recv_mr_seen seen = { .mr = NULL };
	uint16_t i;

	*err = 0;
	for (i = 0; i < n; i++) {
		const struct rdp_recv_wr *w = &wr[i];
		struct shm_rq_ent *ent = shm_rq_ent(ents, mask, stride, idx);
		struct shm_rpost *post = &rq_post[idx & mask];
		uint64_t total;

		if (unlikely(idx - reaped >= max_wr)) {
			reaped = __atomic_load_n(&srq->reaped, __ATOMIC_ACQUIRE);
			if (idx - reaped >= max_wr) {
				*err = -ENOMEM;
				break;
			}
		}
		if (unlikely(w->num_sge > max_sge || (w->num_sge > 0 && w->sg_list == NULL) ||
			     !recv_ent_fill(srq->sd, r->pd, NULL, mr_limit, w, ent,
					    &rq_sge[(size_t)(idx & mask) * max_sge], &total,
					    &seen))) {
			*err = -EINVAL;
			break;
		}
		post->wr_id = w->wr_id;
		post->num_sge = w->num_sge;
		post->total_len = (uint32_t)total;
		/* what the sender that claims it expects to find (shm_srq_seq_posted()) */
		__atomic_store_n(&shm_srq_ent_tail(ent, stride)->claim, shm_srq_seq_posted(idx),
				 __ATOMIC_RELAXED);
		__atomic_store_n(&ent->seq, shm_srq_seq_posted(idx), __ATOMIC_RELAXED);
		idx++;
		/* the entry and its record first: the poller may be another thread */
		__atomic_store_n(&srq->posted, idx, __ATOMIC_RELEASE);
	}
	if (i > 0) {
		RDP_STAT_ADD(srq->st_recv_posted, i);
		/* the senders may take them from here on */
		__atomic_store_n(&srq->seg->rq_posted, idx, __ATOMIC_RELEASE);
	}
	return i;
}

/* ---------------------------------------------------------------------- */
/* Poll                                                                   */
/* ---------------------------------------------------------------------- */

/*
 * The next entry to reap when the peer has completed it, else NULL. A small
 * payload sits in the entry's next line: with @p payload_too it is asked
 * for at the same time. Only where the entry is likely complete: one that
 * is not is the one its sender fills next, and a read of its payload line
 * makes that SEND fetch the line back from us (the seq's line, read at
 * every poll, it fetches anyway).
 */
static inline const struct shm_rq_ent *
rq_next_complete(const struct shm_qp *qp, bool payload_too)
{
	const struct shm_rq_ent *ent = shm_rq_ent(qp->ents, qp->rq_mask, qp->rq_stride,
						   qp->rq_reaped);

	if (payload_too)
		rte_prefetch0((const uint8_t *)ent + 64);
	if (__atomic_load_n(&ent->seq, __ATOMIC_ACQUIRE) != shm_rq_seq(qp->rq_reaped))
		return NULL;
	return ent;
}

/*
 * Copy a payload the peer left in a receive entry into the buffers we
 * posted (their addresses are our own copy, checked at post_recv). The
 * length comes from shared memory: it is checked against both sides.
 */
static uint8_t
rq_copy_in(const struct shm_lsge *sge, uint32_t max_sge, uint32_t rq_inline,
	   const struct shm_rpost *post, const struct shm_rq_ent *ent, uint32_t len)
{
	const uint8_t *src = shm_rq_ent_data(ent, max_sge);
	uint32_t i;

	if (unlikely(len > rq_inline))
		return RDP_WC_GENERAL_ERR;
	if (likely(len <= sge[0].len)) {
		memcpy(sge[0].addr, src, len);
		return RDP_WC_SUCCESS;
	}
	for (i = 0; i < post->num_sge && len > 0; i++) {
		uint32_t chunk = (uint32_t)RTE_MIN((uint64_t)len, sge[i].len);

		memcpy(sge[i].addr, src, chunk);
		src += chunk;
		len -= chunk;
	}
	return RDP_WC_SUCCESS;
}

/* Has the peer written a completion index past what we posted? */
static inline bool
rq_done_garbage(const struct shm_qp *qp)
{
	uint64_t done = __atomic_load_n(&qp->seg->rq_done, __ATOMIC_ACQUIRE);

	/* rq_done trails the entries' seq: behind what we reaped is fine */
	return done - qp->rq_reaped > shm_rq_posted(qp) - qp->rq_reaped &&
	       qp->rq_reaped - done > (uint64_t)qp->rq_mask + 1;
}

/* The claim index at close, bounded by what was posted. */
static inline uint64_t
rq_final(const struct shm_qp *qp)
{
	uint64_t final = qp->rq_final;

	if (final - qp->rq_reaped > shm_rq_posted(qp) - qp->rq_reaped)
		final = qp->rq_reaped; /* garbage claim index: wait for nothing */
	return final;
}

/*
 * Receive completions of one QP, in order, each found by its entry's seq
 * (one cross-core read per message), then its flushes once they are final:
 * entries claimed before the close are completed by the peer unless it died.
 */
static int
rq_reap(struct shm_qp *qp, struct rdp_wc *wc, int n)
{
	bool closed = __atomic_load_n(&qp->rq_closed, __ATOMIC_ACQUIRE);
	bool dead = __atomic_load_n(&qp->peer_dead, __ATOMIC_ACQUIRE);
	uint64_t limit = closed ? rq_final(qp) : shm_rq_posted(qp);
	int k = 0;

	while (qp->rq_reaped != limit && k < n) {
		/* the first was flagged (or peeked complete); after it, the seq first */
		const struct shm_rq_ent *ent = rq_next_complete(qp, k == 0);
		const struct shm_rpost *post;
		struct rdp_wc *w;
		uint8_t st, flags;
		uint32_t bl;

		if (ent == NULL)
			break;
		w = &wc[k++];
		post = &qp->rq_post[qp->rq_reaped & qp->rq_mask];
		st = __atomic_load_n(&ent->status, __ATOMIC_RELAXED);
		bl = __atomic_load_n(&ent->byte_len, __ATOMIC_RELAXED);
		flags = __atomic_load_n(&ent->wc_flags, __ATOMIC_RELAXED);
		RDP_HOP_MARK_IF(bl > 0, RDP_HOP_REAPED);
		if (unlikely(st >= RDP_WC_STATUS_MAX || (st == RDP_WC_SUCCESS && bl > post->total_len)))
			st = RDP_WC_GENERAL_ERR;
		else if ((flags & SHM_ENT_INLINE) && st == RDP_WC_SUCCESS)
			st = rq_copy_in(rq_lsge(qp, qp->rq_reaped), qp->max_recv_sge, qp->rq_inline,
					post, ent, bl);
		w->wr_id = post->wr_id;
		w->status = st;
		w->opcode = RDP_WC_RECV;
		w->wc_flags = flags & RDP_WC_WITH_IMM;
		w->reserved = 0;
		w->byte_len = bl;
		w->imm = ent->imm;
		w->qp_num = qp->head.qp_num;
		/* after reading the entry and its record: the poster may reuse them */
		__atomic_store_n(&qp->rq_reaped, qp->rq_reaped + 1, __ATOMIC_RELEASE);
		if (unlikely(st != RDP_WC_SUCCESS) && shm_qp_set_error(qp)) {
			/* a receive error moves the receiver's QP to error */
			closed = true;
			limit = rq_final(qp);
		}
	}
	if (k == n)
		return k;
	/*
	 * Flagged with nothing complete: a peer that claims impossible progress
	 * is cut off. (Once per stretch without progress: an entry taken before
	 * its doorbell leaves such a flag behind, and rq_done is a shared line.)
	 */
	if (unlikely(k == 0 && !dead && qp->rq_reaped != limit && qp->rq_checked == qp->rq_reaped &&
		     rq_done_garbage(qp))) {
		__atomic_store_n(&qp->peer_dead, 1, __ATOMIC_RELEASE);
		dead = true;
		if (shm_qp_set_error(qp))
			closed = true;
	}
	if (k == 0)
		qp->rq_checked = qp->rq_reaped;
	if (closed && (qp->rq_reaped == rq_final(qp) || dead)) {
		uint64_t posted = shm_rq_posted(qp);

		if (qp->rq_counted < qp->rq_reaped)
			qp->rq_counted = qp->rq_reaped;
		if (qp->rq_counted != posted) {
			cq_count_local(qp->rcq, (uint32_t)(posted - qp->rq_counted));
			qp->rq_counted = posted;
		}
		while (qp->rq_reaped != posted && k < n) {
			struct rdp_wc *w = &wc[k++];

			w->wr_id = qp->rq_post[qp->rq_reaped & qp->rq_mask].wr_id;
			w->status = RDP_WC_WR_FLUSH_ERR;
			w->opcode = RDP_WC_RECV;
			w->wc_flags = 0;
			w->reserved = 0;
			w->byte_len = 0;
			w->imm = 0;
			w->qp_num = qp->head.qp_num;
			__atomic_store_n(&qp->rq_reaped, qp->rq_reaped + 1, __ATOMIC_RELEASE);
		}
	}
	return k;
}

/*
 * The receives left on @p srq (posted, not taken) dropped below its armed
 * limit: one event, and the limit is disarmed. The claim index is the
 * senders': bounded by what was reaped and posted.
 */
static void
srq_limit_check(struct shm_srq *srq)
{
	uint32_t limit = __atomic_load_n(&srq->limit, __ATOMIC_RELAXED);
	uint64_t posted, claim;

	if (likely(limit == 0))
		return;
	posted = shm_srq_posted(srq);
	claim = __atomic_load_n(&srq->seg->rq_claim, __ATOMIC_RELAXED);
	if (claim - srq->reaped > posted - srq->reaped)
		claim = posted;
	if (posted - claim >= limit)
		return;
	if (__atomic_compare_exchange_n(&srq->limit, &limit, 0, false, __ATOMIC_RELAXED,
					__ATOMIC_RELAXED))
		shm_event_push_srq(srq->sd, &srq->head);
}

/*
 * The QP an SRQ entry names, when it is one of @p cq's QPs on @p srq; else
 * NULL (a QP destroyed since its SEND took the entry, or garbage).
 */
static inline struct shm_qp *
srq_ent_qp(const struct shm_srq *srq, struct shm_cq *cq, uint32_t slot, uint32_t qpn)
{
	struct shm_qp *qp;

	if (unlikely(slot >= SHM_MAX_QP))
		return NULL;
	qp = __atomic_load_n(&cq->slot[slot], __ATOMIC_ACQUIRE);
	if (unlikely(qp == NULL || qp->srq != srq || qp->head.qp_num != qpn))
		return NULL;
	return qp;
}

/*
 * The completion of the SRQ entry at srq->reaped, which a peer completed;
 * returns the QP it arrived on (NULL: one gone since, or garbage).
 */
static struct shm_qp *
srq_wc(struct shm_srq *srq, struct shm_cq *cq, const struct shm_rq_ent *ent, struct rdp_wc *w)
{
	const struct shm_rpost *post = &srq->rq_post[srq->reaped & srq->rq_mask];
	uint8_t st = __atomic_load_n(&ent->status, __ATOMIC_RELAXED);
	uint32_t bl = __atomic_load_n(&ent->byte_len, __ATOMIC_RELAXED);
	uint8_t flags = __atomic_load_n(&ent->wc_flags, __ATOMIC_RELAXED);
	uint32_t qpn = __atomic_load_n(&ent->src_qpn, __ATOMIC_RELAXED);
	struct shm_qp *qp = srq_ent_qp(srq, cq, __atomic_load_n(&ent->src_slot, __ATOMIC_RELAXED),
				       qpn);

	RDP_HOP_MARK_IF(bl > 0, RDP_HOP_REAPED);
	if (unlikely(st >= RDP_WC_STATUS_MAX || (st == RDP_WC_SUCCESS && bl > post->total_len)))
		st = RDP_WC_GENERAL_ERR;
	else if ((flags & SHM_ENT_INLINE) && st == RDP_WC_SUCCESS)
		st = rq_copy_in(srq_lsge(srq, srq->reaped), srq->max_sge, srq->rq_inline, post,
				ent, bl);
	w->wr_id = post->wr_id;
	w->status = st;
	w->opcode = RDP_WC_RECV;
	w->wc_flags = flags & RDP_WC_WITH_IMM;
	w->reserved = 0;
	w->byte_len = bl;
	w->imm = ent->imm;
	w->qp_num = qpn;
	/* a receive error moves the receiver's QP to error (not the SRQ) */
	if (unlikely(st != RDP_WC_SUCCESS) && qp != NULL)
		shm_qp_set_error(qp);
	return qp;
}

/*
 * The QP on @p srq whose burst was claiming entry @p idx when it stopped:
 * the claim it announced, not ended by its run's end, covers @p idx.
 * NULL if none is (any more) on the SRQ.
 */
static struct shm_qp *
srq_claimer(struct shm_srq *srq, uint64_t idx)
{
	struct shm_dev *sd = srq->sd;
	struct shm_qp *qp, *found = NULL;

	pthread_mutex_lock(&sd->lock);
	TAILQ_FOREACH(qp, &sd->qps, next) {
		const struct shm_qp_seg *seg = qp->seg;
		uint64_t at = __atomic_load_n(&seg->srq_claim_at, __ATOMIC_ACQUIRE);

		if (qp->srq != srq ||
		    idx - at >= __atomic_load_n(&seg->srq_claim_n, __ATOMIC_RELAXED))
			continue;
		found = qp;
		break;
	}
	pthread_mutex_unlock(&sd->lock);
	return found;
}

/*
 * The reap waits on entry srq->reaped, claimed and not completed. A
 * sender completes its entry within microseconds unless it died: killed
 * between its claim and its completion, it leaves the entry claimed for
 * ever, and every QP on the SRQ would wait behind it. Once the entry has
 * waited SHM_SRQ_STUCK_MS, and its sender's QP says the peer is dead (or
 * no QP owns it any more and SHM_SRQ_DRAIN_MS have passed), the owner
 * takes it back with a CAS on its claim word (POSTED or FILLING to
 * TAKEN) and completes it as flushed on that QP. A sender that was only
 * slow finds the entry TAKEN before it writes anything, and its SEND
 * fails; one that had read the claim word already fills an entry its
 * owner completed, as one that was filling it when it was taken
 * (docs/drivers.md, "Shared receive queues"). True with @p w filled.
 */
static bool
srq_take_back(struct shm_srq *srq, struct shm_cq *cq, struct shm_rq_ent *ent, struct rdp_wc *w)
{
	uint64_t idx = srq->reaped, now;
	uint64_t claim = __atomic_load_n(&srq->seg->rq_claim, __ATOMIC_ACQUIRE);
	uint32_t seq = __atomic_load_n(&ent->seq, __ATOMIC_ACQUIRE), want;
	struct shm_srq_tail *t = shm_srq_ent_tail(ent, srq->rq_stride);
	const struct shm_qp *qp = NULL;
	bool gone;

	if (seq == shm_rq_seq(idx))
		return false; /* completed since: the caller looks again */
	if (claim - idx == 0 || claim - idx > shm_srq_posted(srq) - idx)
		return false; /* not claimed (or garbage): nothing to wait for */
	if (srq->stuck_at != idx + 1) {
		srq->stuck_at = idx + 1;
		srq->stuck_looks = 0;
		srq->stuck_since = 0;
		return false;
	}
	/* the clock only once a sender has taken longer than usual */
	if (++srq->stuck_looks < SHM_SRQ_STUCK_LOOKS)
		return false;
	now = rdp_clock_ns();
	if (srq->stuck_since == 0) {
		srq->stuck_since = srq->stuck_looked = now;
		return false;
	}
	if (now - srq->stuck_looked < SHM_SRQ_STUCK_MS * 1000000ull)
		return false;
	srq->stuck_looked = now;
	want = __atomic_load_n(&t->claim, __ATOMIC_ACQUIRE);
	/* claimed, taken or not (the entry names its QP only once complete) */
	if (want == shm_srq_seq_filling(idx) || want == shm_srq_seq_posted(idx))
		qp = srq_claimer(srq, idx);
	if (qp != NULL)
		gone = __atomic_load_n(&qp->peer_dead, __ATOMIC_ACQUIRE);
	else
		gone = now - srq->stuck_since > SHM_SRQ_DRAIN_MS * 1000000ull;
	if (!gone)
		return false;
	if (!__atomic_compare_exchange_n(&t->claim, &want, shm_srq_seq_taken(idx), false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return false; /* its sender moved it on: look again */
	/* a sender that had moved it on may have completed it since we looked */
	if (__atomic_load_n(&ent->seq, __ATOMIC_ACQUIRE) == shm_rq_seq(idx))
		return false;
	*w = (struct rdp_wc){
		.wr_id = srq->rq_post[idx & srq->rq_mask].wr_id,
		.status = RDP_WC_WR_FLUSH_ERR,
		.opcode = RDP_WC_RECV,
		.qp_num = qp != NULL ? qp->head.qp_num : 0,
	};
	/* a completion of our own, as a flush is: no peer counted it */
	shm_cq_owner_net(cq, -1);
	srq->stuck_at = 0;
	return true;
}

/* Entries @p qp's sender said it filled that the reap has not passed. */
static inline uint64_t
qp_unreaped(const struct shm_qp *qp)
{
	uint64_t d = qp->srq_fills_seen - qp->srq_fills_reaped;

	/* the reap may pass an entry before its sender's count says it is filled */
	return (int64_t)d > 0 ? d : 0;
}

/* What @p qp's sender says it filled, into the SRQ's count of entries to reap. */
static inline void
srq_note_fills(struct shm_srq *srq, struct shm_qp *qp)
{
	uint64_t f = __atomic_load_n(&qp->seg->srq_filled, __ATOMIC_ACQUIRE), before;

	if (f == qp->srq_fills_seen)
		return;
	before = qp_unreaped(qp);
	qp->srq_fills_seen = f;
	srq->unreaped += qp_unreaped(qp) - before;
}

/*
 * Receives come round only after all the SRQ's others: with many posted,
 * the buffer a small payload is copied into, and our record of it, have
 * left the cache by then. Fetch those of the receive SHM_SRQ_AHEAD places
 * on, while this one completes.
 */
static __rte_always_inline void
srq_prefetch_ahead(const struct shm_srq *srq, uint64_t posted)
{
	uint64_t idx = srq->reaped + SHM_SRQ_AHEAD, far = idx + SHM_SRQ_AHEAD;

	/* the record twice as far: its address is read when it comes SHM_SRQ_AHEAD on */
	if (posted - far - 1 <= srq->rq_mask) {
		rte_prefetch0(&srq->rq_post[far & srq->rq_mask]);
		rte_prefetch0(srq_lsge(srq, far));
	}
	if (posted - idx - 1 <= srq->rq_mask)
		rte_prefetch0(srq_lsge(srq, idx)->addr);
}

/*
 * Who fills the SRQ decides whether its poller peeks it (the SRQ its CQ
 * was given, shm_cq.peek_srq): announced while one sender fills it, for
 * SHM_ANNOUNCE_AFTER entries in a row, as an RQ is; withdrawn once as many
 * in a row came from other QPs than the one before, where the doorbells
 * batch better than a look at every poll. A withdrawal may miss entries a
 * sender completed without ringing just before it saw `peeked` clear: the
 * fences pair as for an RQ (shm_cq_unannounce()), and every such entry was
 * claimed before the claim index read after the fence, so the reap looks
 * on up to that index.
 */
static void
srq_peek_adjust(struct shm_srq *srq, const struct shm_cq *cq)
{
	bool peeking = __atomic_load_n(&srq->peeking, __ATOMIC_RELAXED);

	if (srq->mixed != peeking) {
		srq->streak = 0;
		return;
	}
	if (++srq->streak < SHM_ANNOUNCE_AFTER ||
	    __atomic_load_n(&cq->peek_srq, __ATOMIC_RELAXED) != srq)
		return;
	srq->streak = 0;
	shm_srq_peek_set(srq, !peeking);
	if (peeking) {
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		srq->look_until = __atomic_load_n(&srq->seg->rq_claim, __ATOMIC_RELAXED) &
				  ~SHM_RQ_CLOSED;
	}
}

/*
 * Reap the SRQ's completed entries in order, for @p by, a QP on it that was
 * flagged. The first entry is looked at; the entry after the last one
 * completed is not (its line is the one its sender fills next) unless a
 * sender said it filled one not reaped yet (srq_note_fills(), read from @p
 * by once a reap would stop), the reap already waits on a claimed entry, a QP in
 * error or leaving asked for a look (looks_owed), or the reap met an entry
 * of a QP gone (look_on): those go on until a look finds the next entry
 * not completed. A hostile sender's count can only make the reap look
 * more. On a peeked SRQ the counts are not read: its next entry is read
 * at every poll anyway (peek_srq()).
 */
int
shm_srq_reap(struct shm_srq *srq, struct shm_qp *by, struct shm_cq *cq, struct rdp_wc *wc, int n,
	     bool *waiting)
{
	uint64_t posted = shm_srq_posted(srq);
	uint32_t owed = __atomic_load_n(&srq->looks_owed, __ATOMIC_RELAXED);
	bool must_look = owed != srq->looks_paid || srq->look_on, first = true, noted = false;
	bool peeking = __atomic_load_n(&srq->peeking, __ATOMIC_RELAXED);
	int k = 0;

	*waiting = false;
	while (srq->reaped != posted && k < n) {
		struct shm_rq_ent *ent;

		/*
		 * The QP was flagged: one look; more on a peeked SRQ while the
		 * next entry is complete (its line is read at the next poll
		 * anyway; the senders' counts would take a line each, written at
		 * every run), and on one not peeked when a sender said it filled
		 * more: one sender's next entry is left alone there, it is the
		 * line that sender writes next.
		 */
		if (!first && srq->unreaped == 0 && !must_look && !(peeking && srq->mixed) &&
		    srq->stuck_at != srq->reaped + 1 &&
		    (int64_t)(srq->look_until - srq->reaped) <= 0) {
			if (peeking) {
				/*
				 * One sender on a peeked SRQ: the next poll's peek
				 * reads its next entry anyway, and its count's line
				 * is the one it writes at every run.
				 */
				ent = shm_rq_ent(srq->ents, srq->rq_mask, srq->rq_stride,
						 srq->reaped);
				if (__atomic_load_n(&ent->seq, __ATOMIC_RELAXED) !=
				    shm_rq_seq(srq->reaped))
					break;
			} else {
				if (noted)
					break;
				srq_note_fills(srq, by);
				noted = true;
				if (srq->unreaped == 0)
					break;
			}
		}
		first = false;
		ent = shm_rq_ent(srq->ents, srq->rq_mask, srq->rq_stride, srq->reaped);
		/* a small payload's line, with its seq's (as rq_next_complete()) */
		rte_prefetch0((const uint8_t *)ent + 64);
		if (__atomic_load_n(&ent->seq, __ATOMIC_ACQUIRE) == shm_rq_seq(srq->reaped)) {
			struct shm_qp *qp;

			srq_prefetch_ahead(srq, posted);
			qp = srq_wc(srq, cq, ent, &wc[k++]);
			srq->mixed = qp != srq->last_src || qp == NULL;
			srq->last_src = qp;
			srq_peek_adjust(srq, cq);
			peeking = __atomic_load_n(&srq->peeking, __ATOMIC_RELAXED);

			if (qp != NULL) {
				uint64_t before = qp_unreaped(qp);

				qp->srq_fills_reaped++;
				srq->unreaped -= before - qp_unreaped(qp);
			} else {
				/* from a QP gone: what else its sender filled is counted
				 * nowhere, so look on, in later reaps too */
				srq->look_on = 1;
				must_look = true;
			}
		} else if (unlikely(srq_take_back(srq, cq, ent, &wc[k]))) {
			k++;
		} else {
			/* claimed and on its way, or its sender being looked at: again */
			*waiting = srq->stuck_at == srq->reaped + 1;
			/* a look that found nothing more done pays what was owed */
			srq->looks_paid = owed;
			srq->look_on = 0;
			break;
		}
		/* after reading the entry and its record: the poster may reuse them */
		__atomic_store_n(&srq->reaped, srq->reaped + 1, __ATOMIC_RELEASE);
	}
	if (k > 0)
		srq_limit_check(srq);
	return k;
}

/*
 * A reap from @p qp: it becomes the hot QP; once it has been the hot QP
 * for SHM_ANNOUNCE_AFTER reaps in a row, its RQ is announced as peeked
 * (and the one announced before is withdrawn). With many busy QPs the hot
 * QP changes all the time and the announcement stays where it is.
 */
static inline void
hot_reaped(struct shm_cq *cq, struct shm_qp *qp)
{
	if (__atomic_load_n(&cq->hot, __ATOMIC_RELAXED) != qp->rslot) {
		__atomic_store_n(&cq->hot, qp->rslot, __ATOMIC_RELAXED);
		cq->hot_streak = 0;
		return;
	}
	if (__atomic_load_n(&cq->announced, __ATOMIC_RELAXED) == qp->rslot ||
	    ++cq->hot_streak < SHM_ANNOUNCE_AFTER)
		return;
	shm_cq_announce(cq, qp);
}

/* Look at one flagged QP; *idle says whether its flag can be dropped. */
static inline int
service(struct shm_cq *cq, struct shm_qp *qp, struct rdp_wc *wc, int n, bool *idle)
{
	bool busy = false;
	int k = 0;

	if (qp->scq == cq) {
		if (qp->sq_exec != qp->sq_pi ||
		    __atomic_load_n(&qp->state, __ATOMIC_RELAXED) == RDP_QPS_ERR)
			sq_run(qp);
		busy = qp->sq_exec != qp->sq_pi;
	}
	if (qp->rcq == cq && qp->srq != NULL) {
		/* the SRQ's entries in order, whichever of its QPs they arrived on */
		bool waiting;

		k = shm_srq_reap(qp->srq, qp, cq, wc, n, &waiting);
		/* an entry claimed and not completed: look again at the next poll */
		busy = busy || k == n || waiting;
	} else if (qp->rcq == cq) {
		k = rq_reap(qp, wc, n);
		busy = busy || k == n;
		/* only an open QP is peeked: a closed one is drained, then destroyed */
		if (__atomic_load_n(&qp->rq_closed, __ATOMIC_ACQUIRE)) {
			if (__atomic_load_n(&cq->hot, __ATOMIC_RELAXED) == qp->rslot)
				__atomic_store_n(&cq->hot, SHM_NO_SLOT, __ATOMIC_RELAXED);
			/* entries claimed before the close may still complete, without
			 * a doorbell: withdrawing flags the QP for another look */
			if (__atomic_load_n(&cq->announced, __ATOMIC_RELAXED) == qp->rslot)
				shm_cq_unannounce(cq);
		} else if (k > 0) {
			hot_reaped(cq, qp);
		}
	}
	*idle = !busy;
	return k;
}

/*
 * Completions from flagged QPs, round the bitmap from the cursor (see
 * take_qps()). A QP that still has work when the call ends stays flagged,
 * and the next call starts at the QP after it: a QP whose backlog outlasts
 * every poll takes one turn per round, not every poll.
 */
static int
take_flagged(struct shm_cq *cq, struct rdp_wc *wc, int n, uint32_t words)
{
	uint32_t start = cq->cursor, step, w, nb_slots = words * 64;
	int got = 0;

	if (start >= nb_slots)
		start = 0;
	for (step = 0; step <= words && got < n; step++) {
		uint64_t bits;

		w = start / 64 + step;
		if (w >= words)
			w -= words;
		bits = cq->pend[w];

		/* the first word from the cursor on, its low bits last */
		if (step == 0)
			bits &= ~((UINT64_C(1) << (start % 64)) - 1);
		else if (step == words)
			bits &= (UINT64_C(1) << (start % 64)) - 1;
		while (bits != 0 && got < n) {
			uint32_t b = __builtin_ctzll(bits), slot = w * 64 + b;
			struct shm_qp *qp = __atomic_load_n(&cq->slot[slot], __ATOMIC_ACQUIRE);
			bool idle = true;

			bits &= bits - 1;
			/* dropped before the look: a flag set during it (a withdrawn
			 * announcement's second look) survives it */
			cq->pend[w] &= ~(UINT64_C(1) << b);
			if (likely(qp != NULL))
				got += service(cq, qp, wc + got, n - got, &idle);
			if (!idle) {
				cq->pend[w] |= UINT64_C(1) << b;
				cq->cursor = slot + 1;
			}
		}
		if (cq->pend[w] == 0)
			cq->pend_sum &= ~(UINT64_C(1) << w);
	}
	return got;
}

/* The idle case inline: nothing flagged is one load. */
static __rte_always_inline int
take_qps(struct shm_cq *cq, struct rdp_wc *wc, int n, uint32_t words)
{
	if (cq->pend_sum == 0)
		return 0;
	return take_flagged(cq, wc, n, words);
}

/*
 * Flag a QP (the hot one, the announced one) when its next receive entry is
 * complete, without waiting for its doorbell: the entry's line is the one
 * the message arrives in, so a message is seen one cross-core transfer
 * after the sender's last store. While nothing arrives both loads hit this
 * core's cache.
 */
static inline void
peek_slot(struct shm_cq *cq, uint32_t slot)
{
	struct shm_qp *qp;

	if (slot == SHM_NO_SLOT)
		return;
	qp = __atomic_load_n(&cq->slot[slot], __ATOMIC_ACQUIRE);
	if (qp != NULL && qp->rq_reaped != shm_rq_posted(qp) && rq_next_complete(qp, false) != NULL)
		shm_cq_pend_set(cq, slot);
}

/*
 * The SRQ this CQ looks at (shm_cq.peek_srq; its senders ring no doorbell):
 * when its next entry is complete, flag the QP it arrived on, or another
 * of the SRQ's if that one is gone. The reap then takes every complete
 * entry, in order.
 */
static inline void
peek_srq(struct shm_cq *cq)
{
	struct shm_srq *srq = __atomic_load_n(&cq->peek_srq, __ATOMIC_ACQUIRE);
	const struct shm_rq_ent *ent;
	struct shm_qp *qp;
	uint32_t slot;

	if (srq == NULL || !__atomic_load_n(&srq->peeking, __ATOMIC_RELAXED) ||
	    srq->reaped == shm_srq_posted(srq))
		return;
	ent = shm_rq_ent(srq->ents, srq->rq_mask, srq->rq_stride, srq->reaped);
	if (__atomic_load_n(&ent->seq, __ATOMIC_ACQUIRE) != shm_rq_seq(srq->reaped))
		return;
	slot = __atomic_load_n(&ent->src_slot, __ATOMIC_RELAXED);
	qp = srq_ent_qp(srq, cq, slot, __atomic_load_n(&ent->src_qpn, __ATOMIC_RELAXED));
	if (qp == NULL) {
		slot = __atomic_load_n(&srq->any_slot, __ATOMIC_RELAXED);
		if (slot >= SHM_MAX_QP)
			return;
		qp = __atomic_load_n(&cq->slot[slot], __ATOMIC_ACQUIRE);
		if (qp == NULL || qp->srq != srq)
			return;
	}
	shm_cq_pend_set(cq, slot);
}

/*
 * The hot QP, the announced one when it is another, and the peeked SRQ
 * (their senders ring no doorbell).
 */
static inline void
peek_hot(struct shm_cq *cq)
{
	uint32_t hot = __atomic_load_n(&cq->hot, __ATOMIC_RELAXED);
	uint32_t announced = __atomic_load_n(&cq->announced, __ATOMIC_RELAXED);

	peek_slot(cq, hot);
	if (announced != hot)
		peek_slot(cq, announced);
	peek_srq(cq);
}

/* The CQ's own completions (send side), oldest first, once visible. */
static int
take_local(struct shm_cq *cq, struct rdp_wc *wc, int n)
{
	int got = 0;

	while (got < n && cq->ring_head != cq->ring_tail) {
		const struct shm_lcqe *l = &cq->ring[cq->ring_head & cq->ring_mask];

		/* not yet: compared as a distance, so the 32 bits may wrap */
		if ((int32_t)(l->visible_at - (uint32_t)cq->polls) > 0)
			break;
		wc[got++] = l->wc;
		/* a polled completion frees its WR's slot and every one before it */
		if (l->qp != NULL && l->sq_idx >= l->qp->sq_freed) {
			l->qp->sq_freed = l->sq_idx + 1;
			l->qp->rd_freed = l->rd_seq;
		}
		cq->ring_head++;
	}
	return got;
}

static inline uint64_t
xorshift64(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

static int
take_random(struct shm_cq *cq, struct rdp_wc *wc, int n, uint32_t words)
{
	int got = 0;

	while (got < n) {
		bool local = xorshift64(&cq->rng) & 1;
		int k = local ? take_local(cq, wc + got, 1) : take_qps(cq, wc + got, 1, words);

		if (k == 0)
			k = local ? take_qps(cq, wc + got, 1, words) : take_local(cq, wc + got, 1);
		if (k == 0)
			break;
		got += k;
	}
	return got;
}

static int
cq_fail(struct shm_cq *cq)
{
	if (!cq->err) {
		cq->err = 1;
		RDP_STAT_ADD(cq->st_overruns, 1);
		shm_event_push(cq->sd, RDP_EVENT_CQ_ERR, NULL, &cq->head);
	}
	return -EIO;
}

int
shm_poll_cq(struct rdp_cq *c, struct rdp_wc *wc, uint16_t n)
{
	struct shm_cq *cq = to_scq(c);
	struct shm_cq_seg *seg = cq->seg;
	uint32_t w, words;
	uint64_t sum;
	int got, i;

	if (unlikely(cq->err))
		return cq_fail(cq);
	/*
	 * Only the doorbell words the summary names. A load first, the
	 * exchange only when it reads non-zero: a ringing sender's line is
	 * then fetched twice, but most polls find no doorbell (an announced
	 * RQ rings none), and a locked exchange on every poll would delay the
	 * ping-pong (docs/performance.md, "An idle poll is two loads").
	 */
	sum = __atomic_load_n(&seg->bell_sum, __ATOMIC_RELAXED);
	if (sum != 0)
		sum = __atomic_exchange_n(&seg->bell_sum, 0, __ATOMIC_ACQUIRE);
	while (sum != 0) {
		w = (uint32_t)__builtin_ctzll(sum);
		sum &= sum - 1;
		cq->pend[w] |= __atomic_exchange_n(&seg->bell[w], 0, __ATOMIC_ACQUIRE);
		cq->pend_sum |= UINT64_C(1) << w;
	}
	/* the same line: no extra miss */
	if (unlikely(__atomic_load_n(&seg->overrun, __ATOMIC_ACQUIRE)))
		return cq_fail(cq);
	peek_hot(cq);
	cq->polls++;
	words = __atomic_load_n(&cq->words_used, __ATOMIC_ACQUIRE);
	switch (cq->order) {
	case SHM_ORDER_FIFO:
		got = take_local(cq, wc, n);
		if (got < n)
			got += take_qps(cq, wc + got, n - got, words);
		break;
	case SHM_ORDER_RECV_FIRST:
		got = take_qps(cq, wc, n, words);
		if (got < n)
			got += take_local(cq, wc + got, n - got);
		break;
	default:
		got = take_random(cq, wc, n, words);
		break;
	}
	if (got == 0)
		return 0;
	shm_cq_owner_net(cq, got);
	RDP_STAT_ADD(cq->st_completions, got);
	for (i = 0; i < got; i++) {
		if (likely(wc[i].status == RDP_WC_SUCCESS))
			continue;
		if (wc[i].status == RDP_WC_WR_FLUSH_ERR)
			RDP_STAT_ADD(cq->st_flushed, 1);
		else
			RDP_STAT_ADD(cq->st_errors, 1);
	}
	return got;
}
