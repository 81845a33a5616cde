/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The send side of an endpoint: the application's entry points (allocate,
 * send), the send queue, posting as far as lib/credit allows, and send
 * completions. Each chunk of a message is one SEND_WITH_IMM carrying the
 * credits owed, its position in the message and its SEND number
 * (docs/architecture.md, "Immediate data").
 */
#include <inttypes.h>

#include <rte_cycles.h>
#include <rte_prefetch.h>

#include "ep_private.h"
#include "rdp_hop.h"

/* WRs built per post: data chunks, then room for a reclaim and an ack. */
#define TX_BURST 32

/* Ask for the headers of the next @p n queued messages in the ring at once. */
static inline void
txq_prefetch(const struct ep_txq *q, uint32_t n)
{
	uint32_t i, end = q->head + RTE_MIN(n, q->tail - q->head);

	for (i = q->head; i != end; i++)
		rte_prefetch0(q->ring[i % EP_TXQ_RING]);
}

/*
 * SENDs queued after the one being posted, for WANT (rdp_lease_want()):
 * the messages behind the head, one more when the head has chunks left.
 * A list beyond the ring counts as many.
 */
static inline uint64_t
txq_backlog(const struct ep_txq *q, bool more_chunks)
{
	uint64_t n = (uint64_t)(q->tail - q->head) + (q->ov_head != NULL ? UINT16_MAX : 0);

	return (n > 0 ? n - 1 : 0) + more_chunks;
}

/*
 * May queued message @p m start, or its next chunk go, once @p used more
 * credits are spent? A one-sided operation needs none; a chunk leaves a credit for
 * every FIN due (ep_rndv.c): the peer may answer nothing until they come,
 * and hold every credit the queue would spend (rdp_credit_may_send()).
 */
static inline bool
may_send(const struct rdp_ep *ep, const struct rdp_msg *m, uint32_t used)
{
	if (m->flags & MSG_F_RDMA)
		return true;
	return rdp_credit_may_send(&ep->credit, used, ep->fins_due);
}

/*
 * Is the WR being built for the first queued message the last that can go
 * now (@p used credits spent by it)? So when nothing is queued after it, or
 * what is cannot start: nothing might follow it to make its success
 * visible for as long as the peer holds its credits, and the application
 * waits for its event (a WRITE or READ ahead of a message the peer has no
 * room for). Such a WR is signaled.
 */
static inline bool
ends_what_can_go(const struct rdp_ep *ep, uint32_t used)
{
	const struct rdp_msg *next = txq_second(&ep->txq);

	return next == NULL || !may_send(ep, next, used);
}

/*
 * The data WR of segment @p seg, after a GO verdict: accounted (it carries
 * every owed credit) and built, its position flags (IMM_FIRST, IMM_LAST)
 * in @p pos; to a leasing peer it says WANT when more is queued than the
 * credits left (@p backlog SENDs after it, and the FINs due, which need
 * credits of their own). Returns its sequence number.
 */
static inline uint64_t
wr_send(struct rdp_ep *ep, struct rdp_send_wr *wr, struct rdp_sge *sge, uint64_t addr,
	uint32_t len, uint32_t lkey, bool signaled, uint32_t pos, uint64_t backlog)
{
	uint32_t piggyback;
	uint64_t seq;

	/* leased credits owed ride on any SEND, however few (ep_srq_take_owed()) */
	if (ep->ld->srq != NULL && ep->lease.owed != 0)
		ep_srq_take_owed(ep, true);
	seq = rdp_credit_data_posted(&ep->credit, signaled, &piggyback);

	if (unlikely(ep->peer_leases) && rdp_lease_want(backlog + ep->fins_due, ep->credit.rc))
		pos |= IMM_WANT;
	sge->addr = addr;
	sge->length = len;
	sge->lkey = lkey;
	wr->wr_id = rdp_wrid(RDP_WRK_DATA, ep->slot, seq);
	wr->sg_list = sge;
	wr->num_sge = len > 0;
	wr->opcode = RDP_WR_SEND_WITH_IMM;
	wr->flags = (signaled ? RDP_SEND_SIGNALED : 0) |
		    (len <= ep->max_inline ? RDP_SEND_INLINE : 0);
	wr->imm = piggyback | pos | IMM_SEQ(ep->send_seq++);
	wr->remote_addr = 0;
	wr->rkey = 0;
	return seq;
}

static inline uint64_t
wr_data(struct rdp_ep *ep, struct rdp_send_wr *wr, struct rdp_sge *sge,
	const struct rdp_msg *seg, bool signaled, uint32_t pos)
{
	/*
	 * The driver reads the payload when the burst is posted (shm copies it,
	 * a NIC DMAs it). A message that waited for credit behind thousands of
	 * others has left this core's cache since the application wrote it:
	 * asked for now, the burst's payloads come in together.
	 */
	rte_prefetch0(seg->data);
	return wr_send(ep, wr, sge, (uintptr_t)seg->data, seg->data_len, seg->pool->lkey,
		       signaled, pos, txq_backlog(&ep->txq, seg->next != NULL));
}

/*
 * A rendezvous descriptor or FIN, after a GO verdict (ep_rndv.c), with
 * @p backlog SENDs queued after it.
 */
static uint64_t
wr_rndv(struct rdp_ep *ep, struct rdp_send_wr *wr, struct rdp_sge *sge, struct rdp_msg *m,
	bool signaled, uint64_t backlog)
{
	uint64_t addr;
	uint32_t lkey, len = ep_rndv_payload(ep, m, &addr, &lkey);

	return wr_send(ep, wr, sge, addr, len, lkey, signaled, IMM_CTRL,
		       backlog);
}

/*
 * A control message of the library's own (@p len bytes of @p body), when a
 * credit and a send buffer are at hand: one signaled SEND, first and last
 * with IMM_ACK, that spends a credit as a one-chunk message does. Its
 * carrier is a send buffer, freed by its completion (ep_rndv_sent()).
 * Returns the WRs built (0 or 1); @p seq, when not NULL, gets its sequence.
 */
static uint16_t
wr_own_control(struct rdp_ep *ep, struct rdp_send_wr *wr, struct rdp_sge *sge,
	       const uint8_t *body, uint32_t len, uint64_t *seq_out)
{
	enum rdp_credit_verdict v = rdp_credit_data_check(&ep->credit);
	struct rdp_msg *m;
	uint64_t seq;

	if (v != RDP_CREDIT_GO_SIGNALED && v != RDP_CREDIT_GO_UNSIGNALED)
		return 0;
	if (rdp_pool_get_bulk(ep->ld->send_pool, &m, 1) < 0)
		return 0; /* the next pass tries again */
	memcpy(m->data, body, len);
	m->data_len = m->pkt_len = len;
	m->flags = MSG_F_CTRL;
	m->ep = ep;
	/* signaled: nothing may follow to free its carrier */
	seq = wr_send(ep, wr, sge, (uintptr_t)m->data, len, m->pool->lkey, true,
		      IMM_CTRL, 0);
	ep->track[seq & ep->track_mask].msg = m;
	if (seq_out != NULL)
		*seq_out = seq;
	return 1;
}

/*
 * A give-back to a leasing peer, when nothing has been queued for
 * srq_give_back_us and we hold more than its floor
 * (rdp_lease_give_back_due()): one control SEND that spends a credit and
 * returns the rest above the floor. Meanwhile the endpoint stays busy to
 * look again; a stream that pauses between bursts keeps its credits
 * rather than give them back and ask again for every burst.
 */
static uint16_t
wr_give_back(struct rdp_ep *ep, struct rdp_send_wr *wr, struct rdp_sge *sge)
{
	uint32_t due = rdp_lease_give_back_due(0, ep->credit.rc, ep->peer_floor), extra;
	uint8_t b[EP_CM_GIVEBACK_LEN] = { EP_CM_GIVEBACK };
	uint64_t now;

	if (due == 0) {
		ep->idle_since = 0;
		return 0;
	}
	if (ep->lc->give_back_tsc != 0) {
		now = rte_get_tsc_cycles();
		if (ep->idle_since == 0)
			ep->idle_since = now;
		if (now - ep->idle_since < ep->lc->give_back_tsc) {
			ep_busy(ep);
			return 0;
		}
	}
	extra = due - 1;
	b[4] = (uint8_t)extra;
	b[5] = (uint8_t)(extra >> 8);
	b[6] = (uint8_t)(extra >> 16);
	b[7] = (uint8_t)(extra >> 24);
	if (wr_own_control(ep, wr, sge, b, sizeof(b), NULL) == 0)
		return 0;
	rdp_credit_given_back(&ep->credit, extra);
	ep->idle_since = 0;
	return 1;
}

/*
 * A rendezvous descriptor posted and not yet completed: it joins the
 * messages waiting for their FIN (rv_out) only at its completion.
 */
static bool
descriptor_in_sq(const struct rdp_ep *ep)
{
	uint64_t q;

	for (q = ep->credit.sq_ci; q < ep->credit.sq_pi; q++) {
		const struct rdp_msg *t = ep->track[q & ep->track_mask].msg;

		if (t != NULL && (t->flags & (MSG_F_RNDV | MSG_F_CTRL)) == MSG_F_RNDV)
			return true;
	}
	return false;
}

/*
 * The close notice, once a drain has sent everything it accepted and every
 * rendezvous message has its FIN (the peer sends no FIN after the notice;
 * a descriptor still in the SQ counts): behind the data on the same QP, it
 * reaches the peer after all of it.
 */
static uint16_t
wr_close_notice(struct rdp_ep *ep, struct rdp_send_wr *wr, struct rdp_sge *sge)
{
	static const uint8_t b[EP_CM_CLOSE_LEN] = { EP_CM_CLOSE };

	if (ep->close_sent || !txq_empty(&ep->txq) || ep->rd_head != NULL ||
	    !ep_rndv_idle(ep) || descriptor_in_sq(ep))
		return 0;
	if (wr_own_control(ep, wr, sge, b, sizeof(b), &ep->close_seq) == 0)
		return 0;
	ep->close_sent = true;
	return 1;
}

static inline void
wr_control(struct rdp_ep *ep, struct rdp_send_wr *wr, unsigned int kind, uint64_t seq,
	   uint32_t imm)
{
	wr->wr_id = rdp_wrid(kind, ep->slot, seq);
	wr->sg_list = NULL;
	wr->num_sge = 0;
	if (kind == RDP_WRK_RECLAIM) {
		/* signaled zero-length WRITE: no remote effect, frees what precedes it */
		wr->opcode = RDP_WR_RDMA_WRITE;
		wr->flags = RDP_SEND_SIGNALED;
	} else {
		/* pure ack: never signaled; numbered as every SEND */
		wr->opcode = RDP_WR_SEND_WITH_IMM;
		wr->flags = RDP_SEND_INLINE;
		imm |= IMM_SEQ(ep->send_seq++);
	}
	wr->imm = imm;
	wr->remote_addr = 0;
	wr->rkey = 0;
}

/*
 * Post @p n WRs built for the endpoint. A refusal breaks a flow-control
 * invariant (or the QP is gone): the endpoint fails, and the WR refused and
 * those after it count as failed. Returns how many were posted.
 */
static inline uint16_t
post_wrs(struct rdp_ep *ep, const struct rdp_send_wr *wr, uint16_t n)
{
	struct rdp_credit *c = &ep->credit;
	uint16_t k;
	int err;

	k = rdp_post_send(ep->qp, wr, n, &err);
	if (likely(k == n))
		return k;
	if (err == -ENOMEM)
		RDP_STAT_ADD(ep->stats.enomem, 1);
	ep->err_seq = RTE_MIN(ep->err_seq, rdp_credit_seq_expand(c, rdp_wrid_low(wr[k].wr_id)));
	ep_fail(ep, err, "post_send refused a WR (%d) with %u of %u SQ slots in use: "
		"a flow-control invariant is broken", err, rdp_credit_sq_inflight(c), c->sq_size);
	return k;
}

/*
 * The common case of a request or a reply on an idle endpoint: one message
 * of one chunk, with a credit and an SQ slot at hand, and no pure ack's
 * buffer waiting to go back first (ep_flush()). It is posted at once, as
 * ep_post_sends() would post it, without going through the send queue.
 * Returns false, having done nothing, when it must take that general path.
 * The caller checked: on the poller, nothing queued, not tearing down.
 */
static inline bool
send_now(struct rdp_ep *ep, struct rdp_msg *m)
{
	struct rdp_credit *c = &ep->credit;
	enum rdp_credit_verdict v;
	struct rdp_send_wr wr;
	struct rdp_sge sge;
	uint64_t seq;

	if (m->next != NULL || ep->rp_acks > 0 || (m->flags & MSG_F_RNDV) || ep->fins_due > 0)
		return false;
	/* buffers back on the SRQ before the credits that name them leave */
	if (ep->ld->srq != NULL)
		ep_srq_before_send(ep);
	/* a stall counts once per episode: asking again in ep_post_sends() is free */
	v = rdp_credit_data_check(c);
	if (v != RDP_CREDIT_GO_SIGNALED && v != RDP_CREDIT_GO_UNSIGNALED)
		return false;
	/* the last message queued is signaled, as in ep_post_sends(); owed goes with it */
	seq = wr_data(ep, &wr, &sge, m, true, IMM_FIRST | IMM_LAST);
	ep->track[seq & ep->track_mask].msg = m;
	post_wrs(ep, &wr, 1);
	return true;
}

unsigned int
ep_post_sends(struct rdp_ep *ep)
{
	struct rdp_send_wr wr[TX_BURST + 2];
	struct rdp_sge sge[TX_BURST];
	enum rdp_credit_verdict v = RDP_CREDIT_NONE;
	struct rdp_credit *c = &ep->credit;
	bool draining = ep_phase_get(ep) == EP_PH_DRAINING;
	bool fin_blocked = false;
	uint16_t n = 0;
	uint64_t seq;

#ifdef RDP_BENCH_NO_CREDIT
	rdp_credit_bench_bypass(c);
#endif
	/* buffers back on the SRQ before the credits that name them leave */
	if (ep->ld->srq != NULL)
		ep_srq_before_send(ep);
	while (unlikely(ep->rd_head != NULL) && n < TX_BURST) {
		/* a leased receiver's rendezvous READs (ep_rdma_queue_internal()) */
		struct rdp_msg *r = ep->rd_head;

		v = rdp_credit_rdma_check(c, true);
		if (v != RDP_CREDIT_GO_SIGNALED && v != RDP_CREDIT_GO_UNSIGNALED)
			break;
		seq = ep_wr_rdma(ep, &wr[n], &sge[n], r, v == RDP_CREDIT_GO_SIGNALED);
		n++;
		ep->track[seq & ep->track_mask].msg = ep_q_pop(&ep->rd_head, &ep->rd_tail);
	}
	/* FINs next, between two chunks of a message too (ep_rndv.c); the last
	 * one that leaves the send queue nothing it may send is signaled, as a
	 * message is */
	while (unlikely(ep->fin_head != NULL) && n < TX_BURST) {
		struct rdp_msg *f = ep->fin_head;
		bool signaled;

		v = rdp_credit_data_check(c);
		if (v != RDP_CREDIT_GO_SIGNALED && v != RDP_CREDIT_GO_UNSIGNALED)
			break;
		ep->fins_due--;
		signaled = v == RDP_CREDIT_GO_SIGNALED ||
			   (f->link == NULL &&
			    (txq_empty(&ep->txq) || !may_send(ep, txq_first(&ep->txq), 1)));
		seq = wr_rndv(ep, &wr[n], &sge[n], f, signaled, txq_backlog(&ep->txq, false) +
			      !txq_empty(&ep->txq));
		n++;
		ep->track[seq & ep->track_mask].msg = ep_q_pop(&ep->fin_head, &ep->fin_tail);
	}
	v = RDP_CREDIT_NONE;
	txq_prefetch(&ep->txq, TX_BURST);
	while (!txq_empty(&ep->txq) && n < TX_BURST) {
		struct rdp_msg *head = txq_first(&ep->txq);
		struct rdp_msg *seg = ep->tx_seg != NULL ? ep->tx_seg : head;
		bool first = seg == head, last = seg->next == NULL;
		bool signaled;

		/* no chunk spends a FIN's credit (with no FIN due the credit check
		 * below decides, and counts a stall) */
		if (unlikely(ep->fins_due > 0) && !may_send(ep, head, 0))
			break;
		if (unlikely(head->flags & (MSG_F_RDMA | MSG_F_RNDV | MSG_F_CTRL))) {
			bool rdma = head->flags & MSG_F_RDMA;

			/* a descriptor brings its FIN's credit: none left, it waits
			 * for a FIN (fin_received()) */
			if ((head->flags & MSG_F_RNDV) && ep->fin_reserve > 0 &&
			    ep->fin_credits == 0) {
				v = RDP_CREDIT_NONE;
				break;
			}
			/* one-sided: an SQ slot (and a read slot), no remote credit;
			 * a rendezvous descriptor or FIN: what a one-chunk message takes */
			v = rdma ? rdp_credit_rdma_check(c, ep_rdma_is_read(head)) :
				rdp_credit_data_check(c);
			if (v != RDP_CREDIT_GO_SIGNALED && v != RDP_CREDIT_GO_UNSIGNALED)
				break;
			signaled = v == RDP_CREDIT_GO_SIGNALED ||
				   ends_what_can_go(ep, rdma ? 0 : 1);
			/* a descriptor brings a credit for its FIN: from the FIN
			 * reserve of the SRQ we lease from, or from our RQ's */
			if (unlikely(ep->srq_member) && (head->flags & MSG_F_RNDV)) {
				if (!ep_srq_fin_take(ep)) {
					fin_blocked = true;
					v = RDP_CREDIT_NONE;
					break;
				}
				rdp_credit_grant_reserved(c, 1);
			} else if ((head->flags & MSG_F_RNDV) && ep->fin_reserve > 0) {
				ep->fin_credits--;
				rdp_credit_grant_reserved(c, 1);
			}
			seq = rdma ? ep_wr_rdma(ep, &wr[n], &sge[n], head, signaled) :
				wr_rndv(ep, &wr[n], &sge[n], head, signaled,
					txq_backlog(&ep->txq, false));
			n++;
			ep->track[seq & ep->track_mask].msg = txq_pop(&ep->txq);
			continue;
		}
		v = rdp_credit_data_check(c);
		if (v != RDP_CREDIT_GO_SIGNALED && v != RDP_CREDIT_GO_UNSIGNALED)
			break;
		signaled = v == RDP_CREDIT_GO_SIGNALED ||
			   (last && ends_what_can_go(ep, 1));
		seq = wr_data(ep, &wr[n], &sge[n], seg, signaled,
			      (first ? IMM_FIRST : 0) | (last ? IMM_LAST : 0));
		n++;
		if (last) {
			ep->track[seq & ep->track_mask].msg = txq_pop(&ep->txq);
			ep->tx_seg = NULL;
		} else {
			ep->tx_seg = seg->next;
		}
	}
	/* a descriptor waits in the SRQ's line for a FIN credit, or no longer */
	if (unlikely(fin_blocked != ep->srq_fin_waiting))
		ep_srq_fin_wait(ep, fin_blocked);
	/* credits held above a leasing peer's floor with nothing to send go back */
	if (unlikely(ep->peer_leases) && !draining) {
		if (txq_empty(&ep->txq) && ep->fins_due == 0 && n < TX_BURST)
			n += wr_give_back(ep, &wr[n], &sge[n]);
		else
			ep->idle_since = 0;
	}
	if (unlikely(draining) && n < TX_BURST)
		n += wr_close_notice(ep, &wr[n], &sge[n]);
	/* credits no data WR could carry: a pure ack, after a reclaim if due */
	for (;;) {
		enum rdp_credit_verdict a = draining ?
			rdp_credit_ack_check_closing(c, !txq_empty(&ep->txq) || !ep->close_sent) :
			rdp_credit_ack_check(c);

		if (a == RDP_CREDIT_RECLAIM_FIRST) {
			seq = rdp_credit_reclaim_posted(c);
			wr_control(ep, &wr[n++], RDP_WRK_RECLAIM, seq, 0);
			continue;
		}
		if (a == RDP_CREDIT_GO_UNSIGNALED) {
			uint32_t credits;

			seq = rdp_credit_ack_posted(c, &credits);
			wr_control(ep, &wr[n++], RDP_WRK_ACK, seq, credits | IMM_ACK);
		}
		break;
	}
	if (n == 0)
		return 0;
	if (unlikely(post_wrs(ep, wr, n) < n))
		return n;
	if (unlikely(ep->rd_head != NULL) && n >= TX_BURST)
		ep_busy(ep); /* the burst filled up with READs */
	/* v is the last data verdict: GO means the burst filled up, more to send */
	if (!txq_empty(&ep->txq) && (v == RDP_CREDIT_GO_SIGNALED || v == RDP_CREDIT_GO_UNSIGNALED))
		ep_busy(ep);
	return n;
}

void
ep_send_complete(struct rdp_ep *ep, const struct rdp_wc *wc)
{
	uint64_t seq = rdp_credit_seq_expand(&ep->credit, rdp_wrid_low(wc->wr_id));
	enum ep_phase ph = ep_phase_get(ep);
	uint64_t old, q;

	if (ph == EP_PH_FLUSHING && seq == ep->flush_seq &&
	    rdp_wrid_kind(wc->wr_id) == RDP_WRK_RECLAIM) {
		ep_phase_set(ep, EP_PH_FLUSHED);
		ep_busy(ep);
		return;
	}
	if (unlikely(wc->status != RDP_WC_SUCCESS)) {
		if (wc->status == RDP_WC_RNR_RETRY_EXC_ERR)
			RDP_STAT_ADD(ep->stats.rnr, 1);
		struct rdp_msg *t = ep->track[seq & ep->track_mask].msg;

		if (seq < ep->err_seq)
			ep->err_seq = seq;
		if (wc->status == RDP_WC_WR_FLUSH_ERR) {
			ep_fail_flushed(ep, EP_FLUSHED_WHY);
			return;
		}
		if (t != NULL && (t->flags & MSG_F_RDMA)) {
			char what[160];

			ep_fail(ep, ep_wc_errno(wc->status), "%s completed with %s",
				ep_rdma_describe(t, what, sizeof(what)), rdp_wc_status_str(wc->status));
			return;
		}
		if (wc->status == RDP_WC_RETRY_EXC_ERR) {
			/* the peer stopped answering: so does a peer that closed, whose
			 * notice may wait behind this completion; the flush decides */
			ep_fail_ctl(ep, ep_wc_errno(wc->status), "send completed with "
				    "RETRY_EXC_ERR (the peer stopped answering)");
			return;
		}
		ep_fail(ep, ep_wc_errno(wc->status), "send completed with %s",
			rdp_wc_status_str(wc->status));
		return;
	}
	old = ep->credit.sq_ci;
	if (rdp_credit_send_completed(&ep->credit, seq) == 0)
		return;
	for (q = old; q < ep->credit.sq_ci; q++) {
		struct ep_track *t = &ep->track[q & ep->track_mask];

		if (t->msg != NULL) {
			if (unlikely(t->msg->flags & MSG_F_RDMA) && ep_rdma_is_read(t->msg))
				rdp_credit_reads_completed(&ep->credit, 1);
			ep_send_done(ep, t->msg, 0);
			t->msg = NULL;
		}
	}
	/* sends completing: the application may have more (the give-back waits) */
	if (unlikely(ep->peer_leases))
		ep->idle_since = 0;
	if (!txq_empty(&ep->txq) || rdp_credit_ack_due(&ep->credit) || ph == EP_PH_DRAINING ||
	    ep->rd_head != NULL || ep->fin_head != NULL)
		ep_busy(ep);
}

/*
 * A send handed over from another thread. rdp_ep_send_burst() accepted it
 * while the endpoint was established, so it goes behind the others: sent
 * by a drain, or reported failed by the flush after every earlier one.
 * Only once the endpoint retired, everything reported, is it failed at once.
 */
void
ep_accept_send(struct rdp_ep *ep, struct rdp_msg *m)
{
	if (ep_phase_get(ep) >= EP_PH_RETIRED) {
		ep_send_done(ep, m, ep->err != 0 ? ep->err : -ENOTCONN);
		return;
	}
	txq_push(&ep->txq, m);
	ep_busy(ep);
}

struct rdp_msg *
rdp_msg_alloc(struct rdp_ep *ep, uint32_t len)
{
	struct rdp_msg *m;

	return rdp_msg_alloc_bulk(ep, &m, 1, len) == 0 ? m : NULL;
}

/* @p n messages of one chunk each, from the send pool; 0 or -ENOBUFS. */
static __rte_always_inline int
alloc_one_chunk(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, uint32_t len)
{
	uint16_t i;

	if (unlikely(rdp_pool_get_bulk(ep->ld->send_pool, msgs, n) < 0)) {
		rte_errno = ENOBUFS;
		return -ENOBUFS;
	}
	for (i = 0; i < n; i++) {
		msgs[i]->data_len = len;
		msgs[i]->pkt_len = len;
		msgs[i]->ep = ep;
	}
	return 0;
}

int
rdp_msg_alloc_bulk(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, uint32_t len)
{
	uint32_t seg = ep->chunk_size != 0 ? ep->chunk_size : ep->lc->conf.buf_size;
	uint16_t i;

	if (unlikely(len > ep_send_limit(ep))) {
		rte_errno = EMSGSIZE;
		return -EMSGSIZE;
	}
	if (unlikely(len > ep->rndv_above))
		return ep_rndv_alloc(ep, msgs, n, len);
	if (likely(len <= seg && n <= RDP_POOL_CACHE_BATCH)) {
		/* one message, a request or a reply, is the common case: n known */
		return n == 1 ? alloc_one_chunk(ep, msgs, 1, len) :
				alloc_one_chunk(ep, msgs, n, len);
	}
	/* chains of segments, one message at a time */
	for (i = 0; i < n; i++) {
		msgs[i] = rdp_pool_alloc_msg(ep->ld->send_pool, len, seg);
		if (msgs[i] == NULL) {
			int err = rte_errno;

			while (i-- > 0)
				rdp_pool_put_chain(msgs[i]);
			rte_errno = err;
			return -err;
		}
		msgs[i]->ep = ep;
	}
	return 0;
}

uint16_t
rdp_ep_send_burst(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n)
{
	uint16_t i;

	RDP_HOP_MARK(RDP_HOP_APP_SEND);
	if (unlikely(ep_get_state(ep) != RDP_EP_ESTABLISHED)) {
		rte_errno = ENOTCONN;
		return 0;
	}
	for (i = 0; i < n; i++) {
		if (unlikely(msgs[i]->ep != ep || (msgs[i]->flags & (MSG_F_RECV | MSG_F_EVENT |
			     MSG_F_RDMA | MSG_F_CTRL)) != 0 || (msgs[i]->pkt_len >
			     ((msgs[i]->flags & MSG_F_RNDV) ? ep->rndv_max : ep->max_send_msg)))) {
			n = i;
			rte_errno = EINVAL;
			break;
		}
	}
	if (n == 1 && rdp_poller_is_self(ep->lc->poller) && txq_empty(&ep->txq) &&
	    send_now(ep, msgs[0])) {
		/* ESTABLISHED (checked above): handed over, not tearing down */
		ep_busy(ep); /* the pass comes, as in ep_queue_sends() */
		return 1;
	}
	return ep_queue_sends(ep, msgs, n);
}

uint16_t
ep_queue_sends(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n)
{
	void *items[64];
	uint16_t i, done = 0;

	if (n == 0)
		return 0;
	if (rdp_poller_is_self(ep->lc->poller)) {
		/* ESTABLISHED (checked by the caller): handed over, not tearing down */
		bool idle = txq_empty(&ep->txq);

		for (i = 0; i < n; i++)
			txq_push(&ep->txq, msgs[i]);
		/*
		 * Nothing was queued before: post now rather than in the poller's
		 * next pass over its busy endpoints, so that a reply leaves before
		 * the buffer its request freed goes back. The pass comes anyway,
		 * for the reposts and whatever the credits held back.
		 */
		if (idle)
			ep_flush(ep, false);
		ep_busy(ep);
		return n;
	}
	while (done < n) {
		uint16_t chunk = RTE_MIN((uint16_t)RTE_DIM(items), (uint16_t)(n - done)), k;

		for (i = 0; i < chunk; i++)
			items[i] = tag_ptr(msgs[done + i], TAG_SEND);
		k = rdp_poller_inbox_put(ep->lc->poller, items, chunk);
		done += k;
		if (k < chunk) {
			rte_errno = ENOBUFS;
			break;
		}
	}
	return done;
}
