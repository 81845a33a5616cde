/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The endpoint datapath, run by the poller lcore that owns the endpoint:
 * completions dispatched by wr_id, credits applied through lib/credit,
 * chunking and reassembly, delivery to the application, and the teardown
 * that turns every undelivered message into exactly one failure report.
 *
 * Teardown, in one paragraph: the QP is moved to error and a signaled
 * zero-length WRITE (the drain marker) is posted behind everything else.
 * A QP in error completes every WR in order, so once the marker's
 * completion and a completion for every posted receive have been polled,
 * nothing is in flight. A WR with a sequence below the lowest error
 * completion succeeded (an unsignaled WR that succeeded makes no
 * completion, and WRs complete in order); every other WR failed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <rte_prefetch.h>

#include "ep_private.h"
#include "rdp_hop.h"

/* WRs built per progress call: data chunks, then room for a reclaim + ack. */
#define TX_BURST 32
#define RX_BURST 32
#define EV_BURST 32

static inline void
q_push(struct rdp_msg **head, struct rdp_msg **tail, struct rdp_msg *m)
{
	m->link = NULL;
	if (*tail != NULL)
		(*tail)->link = m;
	else
		*head = m;
	*tail = m;
}

static inline struct rdp_msg *
q_pop(struct rdp_msg **head, struct rdp_msg **tail)
{
	struct rdp_msg *m = *head;

	*head = m->link;
	if (*head == NULL)
		*tail = NULL;
	m->link = NULL;
	return m;
}

/* Exactly one message queued. */
static inline bool
txq_single(const struct ep_txq *q)
{
	uint32_t in_ring = q->tail - q->head;

	return in_ring == 1 ? q->ov_head == NULL : in_ring == 0 && q->ov_head != NULL &&
		q->ov_head == q->ov_tail;
}

static inline struct rdp_msg *
txq_first(const struct ep_txq *q)
{
	return q->head != q->tail ? q->ring[q->head % EP_TXQ_RING] : q->ov_head;
}

static inline void
txq_push(struct ep_txq *q, struct rdp_msg *m)
{
	if (q->ov_head == NULL && q->tail - q->head < EP_TXQ_RING)
		q->ring[q->tail++ % EP_TXQ_RING] = m;
	else
		q_push(&q->ov_head, &q->ov_tail, m);
}

static inline struct rdp_msg *
txq_pop(struct ep_txq *q)
{
	if (q->head != q->tail)
		return q->ring[q->head++ % EP_TXQ_RING];
	return q_pop(&q->ov_head, &q->ov_tail);
}

/* Ask for the headers of the next @p n queued messages in the ring at once. */
static inline void
txq_prefetch(const struct ep_txq *q, uint32_t n)
{
	uint32_t i, end = q->head + RTE_MIN(n, q->tail - q->head);

	for (i = q->head; i != end; i++)
		rte_prefetch0(q->ring[i % EP_TXQ_RING]);
}

static inline void
ep_busy(struct rdp_ep *ep)
{
	rdp_poller_busy(ep->lc->poller, &ep->busy);
}

static bool
tearing_down(const struct rdp_ep *ep)
{
	return ep->drain_posted;
}

/* ---------------------------------------------------------------------- */
/* Events to the application                                             */
/* ---------------------------------------------------------------------- */

static void
ev_push(struct rdp_ep *ep, struct rdp_msg *m)
{
	q_push(&ep->ev_head, &ep->ev_tail, m);
	ep_busy(ep);
}

static void
ev_state(struct rdp_ep *ep, enum rdp_ep_state state, int err)
{
	/* a header is a cache-aligned type: malloc()'s alignment is not enough */
	struct rdp_msg *m = aligned_alloc(RTE_CACHE_LINE_SIZE, sizeof(*m));

	if (m == NULL) {
		/* out of memory on a state change: say it, the state is still readable */
		EP_LOG(ERR, "endpoint %u: no memory to report state %s", ep->id,
		       rdp_ep_state_str(state));
		return;
	}
	memset(m, 0, sizeof(*m));
	m->event = RDP_EV_STATE;
	m->flags = MSG_F_EVENT;
	m->user_data = state;
	m->status = err;
	m->ep = ep;
	m->nb_segs = 1;
	ev_push(ep, m);
}

/* A message left the send path: report it (or free it when nobody asked). */
static void
send_done(struct rdp_ep *ep, struct rdp_msg *m, int status)
{
	m->status = status;
	if (status == 0) {
		EP_STAT_ADD(ep, msgs_sent, 1);
		EP_STAT_ADD(ep, bytes_sent, m->pkt_len);
		if (!ep->prm.notify_send_ok) {
			rdp_pool_put_chain(m);
			return;
		}
		m->event = RDP_EV_SEND_DONE;
	} else {
		EP_STAT_ADD(ep, msgs_failed, 1);
		m->event = RDP_EV_SEND_FAILED;
	}
	ev_push(ep, m);
}

/*
 * Received messages the application holds keep their endpoint: the first
 * one takes a reference, which stays while the endpoint runs, so that a
 * message's delivery and free make no atomic operation. Once the endpoint
 * is retired, the last message freed drops it (or the retirement does).
 */
static void
held_inc(struct rdp_ep *ep, unsigned int n)
{
	if (unlikely(!ep->held_ref) && n > 0) {
		atomic_fetch_add(&ep->refs, 1);
		ep->held_ref = true;
	}
	ep->held += n;
}

/* The messages' reference goes once none is held and the endpoint is retired. */
static void
held_ref_settle(struct rdp_ep *ep)
{
	if (ep->held == 0 && ep->held_ref && ep->retired) {
		ep->held_ref = false;
		ep_unref(ep);
	}
}

static void
held_sub(struct rdp_ep *ep, unsigned int n)
{
	ep->held -= n;
	held_ref_settle(ep);
}

/* Put events the application refused back at the head, in order. */
static void
ev_unpop(struct rdp_ep *ep, struct rdp_msg **batch, uint16_t n)
{
	while (n-- > 0) {
		batch[n]->link = ep->ev_head;
		ep->ev_head = batch[n];
		if (ep->ev_tail == NULL)
			ep->ev_tail = batch[n];
	}
}

/*
 * Hand queued events to the application; stop at the first refusal, and
 * with @p recv_only at the first event that is not a received message. A
 * batch leaves the queue before the callback runs: the application may
 * free and reuse the messages (and their links) at once.
 */
static unsigned int
deliver(struct rdp_ep *ep, bool recv_only)
{
	struct rdp_msg *batch[EV_BURST];
	unsigned int work = 0;

	while (ep->ev_head != NULL && (!recv_only || ep->ev_head->event == RDP_EV_RECV)) {
		uint8_t kind = ep->ev_head->event;
		uint16_t n = 0, acc, i;
		bool closed, app_ref;

		while (ep->ev_head != NULL && ep->ev_head->event == kind && n < EV_BURST) {
			batch[n++] = q_pop(&ep->ev_head, &ep->ev_tail);
			if (kind == RDP_EV_STATE)
				break;
		}
		if (kind == RDP_EV_RECV) {
			held_inc(ep, n);
			RDP_HOP_MARK(RDP_HOP_DELIVER);
		}
		/* read now: once in the ring, the application may free it at once */
		closed = kind == RDP_EV_STATE && batch[0]->user_data == RDP_EP_CLOSED;
		/* pipeline: the endpoint lives until the event is freed, unless
		 * rdp_fini() closed it (nobody dequeues any more) */
		app_ref = closed && ep->prm.ops == NULL && !ep->fini_closed;
		if (app_ref)
			batch[0]->flags |= MSG_F_APP_REF;
		if (ep->prm.ops == NULL) {
			RDP_HANDOFF_RELEASE(ep->prm.events);
			acc = rte_ring_enqueue_burst(ep->prm.events, (void **)batch, n, NULL);
		} else if (kind == RDP_EV_RECV) {
			acc = ep->prm.ops->on_recv(ep, batch, n, ep->prm.arg);
		} else if (kind == RDP_EV_STATE) {
			if (ep->prm.ops->on_state != NULL)
				ep->prm.ops->on_state(ep, (enum rdp_ep_state)batch[0]->user_data,
						      batch[0]->status, ep->prm.arg);
			acc = 1;
		} else {
			if (ep->prm.ops->on_send != NULL)
				ep->prm.ops->on_send(ep, batch, n, ep->prm.arg);
			else
				for (i = 0; i < n; i++)
					rdp_pool_put_chain(batch[i]);
			acc = n;
		}
		work += acc;
		if (kind == RDP_EV_STATE && acc == 1) {
			if (ep->prm.ops != NULL)
				free(batch[0]);
			if (closed) {
				/* nothing follows CLOSED: the application's reference goes
				 * now, or in pipeline mode when it frees the event */
				if (!app_ref)
					ep_unref(ep);
				return work;
			}
			continue;
		}
		if (acc < n) {
			/* refused messages are not the application's yet */
			if (kind == RDP_EV_RECV) {
				held_sub(ep, n - acc);
				if (!ep->backpressured) {
					ep->backpressured = true;
					EP_STAT_ADD(ep, backpressure, 1);
				}
			}
			ev_unpop(ep, batch + acc, n - acc);
			ep_busy(ep); /* offer the rest again on the next pass */
			return work;
		}
		if (kind == RDP_EV_RECV)
			ep->backpressured = false;
	}
	return work;
}

/* ---------------------------------------------------------------------- */
/* Failure and teardown                                                   */
/* ---------------------------------------------------------------------- */

static void start_teardown(struct rdp_ep *ep);

static void ep_fail(struct rdp_ep *ep, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
ep_fail(struct rdp_ep *ep, int err, const char *fmt, ...)
{
	char why[RDP_ERR_MSG_MAX];
	va_list ap;

	if (tearing_down(ep))
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (!ep->handed) {
		/*
		 * The handshake still runs on the control thread, which may
		 * configure this QP: it ends the handshake, and the teardown
		 * starts when it hands the endpoint over.
		 */
		if (ep->early_err == 0) {
			ep->early_err = err;
			EP_LOG(NOTICE, "endpoint %u (peer %s, lcore %u) failed during its "
			       "handshake: %s", ep->id, ep->peer, ep->lc->lcore_id, why);
			ctl_handshake_qp_failed(ep);
		}
		return;
	}
	ep->err = err;
	if (!ep->closing) {
		/* a peer that went away (or flushed us) is news; the rest is an error */
		if (err == -ECONNRESET || err == -ECONNABORTED)
			EP_LOG(NOTICE, "endpoint %u (peer %s, lcore %u) failed: %s", ep->id,
			       ep->peer, ep->lc->lcore_id, why);
		else
			EP_LOG(ERR, "endpoint %u (peer %s, lcore %u) failed: %s", ep->id, ep->peer,
			       ep->lc->lcore_id, why);
		ep_set_state(ep, RDP_EP_FAILED);
	}
	start_teardown(ep);
}

static int
wc_errno(uint8_t status)
{
	switch (status) {
	case RDP_WC_WR_FLUSH_ERR: return -ECONNABORTED;
	case RDP_WC_RETRY_EXC_ERR: return -ETIMEDOUT;
	case RDP_WC_RNR_RETRY_EXC_ERR: return -ENOBUFS;
	case RDP_WC_REM_INV_REQ_ERR:
	case RDP_WC_REM_ACCESS_ERR:
	case RDP_WC_REM_OP_ERR: return -EREMOTEIO;
	default: return -EIO;
	}
}

static void
return_queue(struct rdp_ep *ep, struct rdp_msg **head, struct rdp_msg **tail)
{
	while (*head != NULL) {
		struct rdp_msg *m = q_pop(head, tail);

		rdp_pool_put_bulk(ep->recv_pool, &m, 1);
	}
}

static void
start_teardown(struct rdp_ep *ep)
{
	struct rdp_qp_attr attr = { .state = RDP_QPS_ERR };
	struct rdp_send_wr marker = {
		.opcode = RDP_WR_RDMA_WRITE,
		.flags = RDP_SEND_SIGNALED,
	};
	int ret, err;

	ep->drain_posted = true;
	ret = rdp_qp_modify(ep->qp, &attr, RDP_QP_ATTR_STATE);
	if (ret < 0)
		EP_LOG(ERR, "endpoint %u: cannot move its QP to error: %s", ep->id,
		       rdp_err_msg());
	/* buffers waiting to be posted again go home; posting to an error QP
	 * would only flush them */
	return_queue(ep, &ep->rp_head, &ep->rp_tail);
	ep->rp_acks = 0;
	ep->drain_seq = ep->credit.sq_pi;
	marker.wr_id = rdp_wrid(RDP_WRK_RECLAIM, ep->slot, ep->drain_seq);
	if (rdp_post_send(ep->qp, &marker, 1, &err) != 1) {
		/* the QP keeps one physical slot beyond S for this marker */
		EP_LOG(ERR, "endpoint %u: drain marker refused (%d); sends not "
		       "completed are reported failed", ep->id, err);
		ep->err_seq = 0;
		ep->drain_done = true;
	}
	ep_busy(ep);
}

/* Everything is back: report sends, announce the end, hand the QP back. */
static void
finalize(struct rdp_ep *ep)
{
	int err = ep->err != 0 ? ep->err : -ECONNABORTED;
	uint64_t q;

	for (q = ep->credit.sq_ci; q < ep->credit.sq_pi; q++) {
		struct ep_track *t = &ep->track[q & ep->track_mask];

		if (t->msg != NULL) {
			send_done(ep, t->msg, q < ep->err_seq ? 0 : err);
			t->msg = NULL;
		}
	}
	while (!txq_empty(&ep->txq))
		send_done(ep, txq_pop(&ep->txq), err);
	ep->tx_seg = NULL;
	if (ep->rx_head != NULL) {
		rdp_pool_put_chain(ep->rx_head);
		ep->rx_head = ep->rx_tail = NULL;
	}
	while (ep->early_head != NULL)
		rdp_pool_put_chain(q_pop(&ep->early_head, &ep->early_tail));
	ep->retired = true;
	/* not the last reference: the engine's goes after the handover */
	held_ref_settle(ep);
	/*
	 * Nothing is in flight any more. Destroy the QP here, on the thread
	 * that polls its CQ: a driver may touch the CQ when a QP goes away.
	 */
	if (rdp_qp_destroy(ep->qp) < 0)
		EP_LOG(ERR, "endpoint %u: QP destroy failed: %s", ep->id, rdp_err_msg());
	__atomic_store_n(&ep->qp, NULL, __ATOMIC_RELEASE);
	rdp_poller_slot_free(ep->lc->poller, ep->slot);
	if (ep->closing) {
		ep_set_state(ep, RDP_EP_CLOSED);
		ev_state(ep, RDP_EP_CLOSED, 0);
	} else if (ep->app_visible) {
		ev_state(ep, RDP_EP_FAILED, err);
	}
	ctl_retire(ep);
}

/* ---------------------------------------------------------------------- */
/* Receive path                                                           */
/* ---------------------------------------------------------------------- */

static void
repost(struct rdp_ep *ep, struct rdp_msg *m, bool owed)
{
	if (owed) {
		m->flags |= MSG_F_OWED;
	} else {
		m->flags &= (uint8_t)~MSG_F_OWED;
		ep->rp_acks++;
	}
	q_push(&ep->rp_head, &ep->rp_tail, m);
	ep_busy(ep);
}

/* The application freed a received message (on this thread). */
static void
recv_freed(struct rdp_ep *ep, struct rdp_msg *m)
{
	while (m != NULL) {
		struct rdp_msg *next = m->next;

		m->next = NULL;
		if (!tearing_down(ep) && !ep->retired)
			repost(ep, m, true);
		else
			rdp_pool_put_bulk(ep->recv_pool, &m, 1);
		m = next;
	}
	held_sub(ep, 1);
}

/*
 * Post one burst of the buffers waiting to go back, counting the credits
 * they make owed. No other side effect, so the control thread can use it
 * before the endpoint is handed over. Sets *err when the QP refused some.
 */
static unsigned int
post_recv_burst(struct rdp_ep *ep, int *err)
{
	struct rdp_recv_wr wr[RX_BURST];
	struct rdp_sge sge[RX_BURST];
	const struct rdp_pool *pool = ep->recv_pool;
	struct rdp_msg *m = ep->rp_head;
	uint16_t n = 0, k, i;
	uint32_t owed = 0;

	*err = 0;
	for (; m != NULL && n < RX_BURST; m = m->link, n++) {
		uint32_t idx = rdp_pool_msg_idx(pool, m);

		sge[n].addr = (uintptr_t)rdp_pool_buf(pool, idx);
		sge[n].length = pool->buf_size;
		sge[n].lkey = pool->lkey;
		wr[n].wr_id = rdp_wrid(RDP_WRK_RECV, ep->slot, idx);
		wr[n].sg_list = &sge[n];
		wr[n].num_sge = 1;
	}
	if (n == 0)
		return 0;
	k = rdp_post_recv(ep->qp, wr, n, err);
	for (i = 0; i < k; i++) {
		m = q_pop(&ep->rp_head, &ep->rp_tail);
		if (m->flags & MSG_F_OWED)
			owed++;
		else
			ep->rp_acks--;
	}
	ep->recv_posted += k;
	rdp_credit_recv_reposted(&ep->credit, owed);
	return k;
}

/*
 * Post every buffer waiting to go back: all of them, before any send of
 * this pass. A pure ack's credits were applied when it was polled; its
 * receive entry must be back before data using those credits leaves, or
 * the peer's next ack could find the reserve short.
 */
static unsigned int
post_recvs(struct rdp_ep *ep)
{
	unsigned int done = 0;
	int err = 0;

	while (ep->rp_head != NULL && err == 0)
		done += post_recv_burst(ep, &err);
	if (err != 0)
		ep_fail(ep, err, "post_recv refused a receive (%d) with %u posted of %u",
			err, ep->recv_posted, ep->lc->credit.rq_size);
	return done;
}

/*
 * A SEND out of its number's order (ep_frame_seq()). One received before
 * is a copy the transport made (rxe retransmits SENDs its peer had
 * acknowledged, docs/rxe-lane.md): it is dropped before its payload or its
 * credits count, and its receive entry goes back owing nothing, as a pure
 * ack's does. A number ahead means SENDs were lost, which RC never does:
 * the stream is broken and the endpoint fails.
 */
static void
recv_out_of_order(struct rdp_ep *ep, struct rdp_msg *m, uint32_t imm, enum ep_seq_verdict v)
{
	uint32_t seen = imm >> IMM_SEQ_SHIFT, want = ep->frame.next_seq & IMM_SEQ_MASK;
	uint64_t dups;

	if (v == EP_SEQ_GAP) {
		rdp_pool_put_bulk(ep->recv_pool, &m, 1);
		ep_fail(ep, -EPROTO, "SEND %u (mod 8192) arrived where %u was expected: the "
			"transport lost SENDs, or peer %s breaks the protocol", seen, want, ep->peer);
		return;
	}
	dups = EP_STAT_READ(ep, dups_dropped) + 1;
	EP_STAT_ADD(ep, dups_dropped, 1);
	/* the first, then each power of two: a transport that keeps doing it is news once */
	if ((dups & (dups - 1)) == 0)
		EP_LOG(WARNING, "endpoint %u (peer %s, lcore %u): SEND %u (mod 8192) arrived "
		       "again where %u was expected: the transport delivered it twice; dropped "
		       "(%" PRIu64 " so far)", ep->id, ep->peer, ep->lc->lcore_id, seen, want, dups);
	if (!tearing_down(ep))
		repost(ep, m, false);
	else
		rdp_pool_put_bulk(ep->recv_pool, &m, 1);
}

static void
recv_complete(struct rdp_ep *ep, const struct rdp_wc *wc)
{
	uint64_t idx = rdp_wrid_low(wc->wr_id);
	const char *violation;
	uint32_t credits, value;
	struct rdp_msg *m;

	if (unlikely(idx >= ep->recv_pool->nb_bufs)) {
		ep_fail(ep, -EIO, "receive completion for buffer %" PRIu64 " of %u",
			idx, ep->recv_pool->nb_bufs);
		return;
	}
	m = rdp_pool_msg(ep->recv_pool, (uint32_t)idx);
	ep->recv_posted--;
	if (unlikely(wc->status != RDP_WC_SUCCESS)) {
		rdp_pool_put_bulk(ep->recv_pool, &m, 1);
		ep_fail(ep, wc_errno(wc->status), "receive completed with %s",
			rdp_wc_status_str(wc->status));
		return;
	}
	if (likely(wc->wc_flags & RDP_WC_WITH_IMM)) {
		enum ep_seq_verdict sv = ep_frame_seq(&ep->frame, wc->imm);

		if (unlikely(sv != EP_SEQ_NEXT)) {
			recv_out_of_order(ep, m, wc->imm, sv);
			return;
		}
	}
	violation = ep_frame_check(&ep->frame, wc->wc_flags & RDP_WC_WITH_IMM, wc->imm,
				   wc->byte_len, rdp_credit_returnable(&ep->credit), &value);
	if (unlikely(violation != NULL)) {
		rdp_pool_put_bulk(ep->recv_pool, &m, 1);
		ep_fail(ep, -EPROTO, "peer %s broke the protocol: %s (0x%x)", ep->peer,
			violation, value);
		return;
	}
	credits = wc->imm & IMM_CREDITS;
	if (credits > 0) {
		rdp_credit_granted(&ep->credit, credits);
		if (!txq_empty(&ep->txq))
			ep_busy(ep);
	}
	if (wc->imm & IMM_ACK) {
		if (!tearing_down(ep))
			repost(ep, m, false);
		else
			rdp_pool_put_bulk(ep->recv_pool, &m, 1);
		return;
	}
	m->data = rdp_pool_buf(ep->recv_pool, (uint32_t)idx);
	m->data_len = wc->byte_len;
	m->next = NULL;
	if (wc->imm & IMM_FIRST)
		ep->rx_head = m;
	else
		ep->rx_tail->next = m;
	ep->rx_tail = m;
	if (ep_frame_push(&ep->frame, wc->imm, wc->byte_len)) {
		struct rdp_msg *head = ep->rx_head;

		head->pkt_len = ep->frame.msg_len;
		head->nb_segs = (uint16_t)ep->frame.msg_chunks;
		ep->rx_head = ep->rx_tail = NULL;
		head->event = RDP_EV_RECV;
		head->flags = MSG_F_RECV;
		head->status = 0;
		head->ep = ep;
		EP_STAT_ADD(ep, msgs_received, 1);
		EP_STAT_ADD(ep, bytes_received, head->pkt_len);
		if (ep->closing) {
			/* closed by the application: nobody to give it to */
			held_inc(ep, 1);
			recv_freed(ep, head);
		} else if (!ep->admitted) {
			/* a fast peer: its messages wait for ESTABLISHED, and are
			 * dropped if the endpoint never gets there */
			q_push(&ep->early_head, &ep->early_tail, head);
		} else {
			ev_push(ep, head);
		}
	}
}

/* ---------------------------------------------------------------------- */
/* Send path                                                              */
/* ---------------------------------------------------------------------- */

static void
send_complete(struct rdp_ep *ep, const struct rdp_wc *wc)
{
	uint64_t seq = rdp_credit_seq_expand(&ep->credit, rdp_wrid_low(wc->wr_id));
	uint64_t old, q;

	if (ep->drain_posted && seq == ep->drain_seq &&
	    rdp_wrid_kind(wc->wr_id) == RDP_WRK_RECLAIM) {
		ep->drain_done = true;
		ep_busy(ep);
		return;
	}
	if (unlikely(wc->status != RDP_WC_SUCCESS)) {
		if (wc->status == RDP_WC_RNR_RETRY_EXC_ERR)
			EP_STAT_ADD(ep, rnr, 1);
		if (seq < ep->err_seq)
			ep->err_seq = seq;
		ep_fail(ep, wc_errno(wc->status), "send completed with %s",
			rdp_wc_status_str(wc->status));
		return;
	}
	old = ep->credit.sq_ci;
	if (rdp_credit_send_completed(&ep->credit, seq) == 0)
		return;
	for (q = old; q < ep->credit.sq_ci; q++) {
		struct ep_track *t = &ep->track[q & ep->track_mask];

		if (t->msg != NULL) {
			send_done(ep, t->msg, 0);
			t->msg = NULL;
		}
	}
	if (!txq_empty(&ep->txq) || rdp_credit_ack_due(&ep->credit) ||
	    ep_get_state(ep) == RDP_EP_DRAINING)
		ep_busy(ep);
}

/*
 * Ask for the headers of a batch's receive buffers all at once, before the
 * first is read. Their addresses come from the completions alone (no load
 * of anything cold), so the misses overlap. With many endpoints every
 * header is a line last used thousands of messages ago, and taken one at a
 * time each would be a wait of its own (docs/performance.md, "Receive
 * headers prefetched in batches").
 */
static inline void
prefetch_recv_headers(const struct rdp_ep *ep, const struct rdp_wc *wc, uint16_t n)
{
	const struct rdp_pool *pool = ep->recv_pool;
	uint16_t i;

	for (i = 0; i < n; i++) {
		uint64_t idx = rdp_wrid_low(wc[i].wr_id);

		if (rdp_wrid_kind(wc[i].wr_id) == RDP_WRK_RECV && idx < pool->nb_bufs)
			rte_prefetch0(rdp_pool_msg(pool, (uint32_t)idx));
	}
}

static void
ep_complete(void *client, const struct rdp_wc *wc, uint16_t n)
{
	struct rdp_ep *ep = client;
	uint16_t i;

	RDP_HANDOFF_ACQUIRE(ep); /* what connect_qp() set up (ThreadSanitizer only) */
	prefetch_recv_headers(ep, wc, n);
	for (i = 0; i < n; i++) {
		if (rdp_wrid_kind(wc[i].wr_id) == RDP_WRK_RECV)
			recv_complete(ep, &wc[i]);
		else
			send_complete(ep, &wc[i]);
	}
	RDP_HOP_MARK(RDP_HOP_DISPATCHED);
	if (tearing_down(ep))
		ep_busy(ep);
	/*
	 * What this batch received goes to the application now rather than in
	 * the poller's progress pass, one pass over the busy list earlier. Only
	 * messages: a state event, CLOSED above all, may drop the endpoint's
	 * last reference and waits for the pass. The progress pass still comes
	 * (ev_push() queued the endpoint) for what the application refused.
	 */
	if (ep->ev_head != NULL && ep->app_visible && ep_get_state(ep) == RDP_EP_ESTABLISHED &&
	    !ep->release_pending)
		deliver(ep, true);
}

/*
 * The data WR of segment @p seg, after a GO verdict: accounted (it carries
 * every owed credit) and built, its position flags (IMM_FIRST, IMM_LAST)
 * in @p pos. Returns its sequence number.
 */
static inline uint64_t
wr_data(struct rdp_ep *ep, struct rdp_send_wr *wr, struct rdp_sge *sge,
	const struct rdp_msg *seg, bool signaled, uint32_t pos)
{
	uint32_t piggyback;
	uint64_t seq = rdp_credit_data_posted(&ep->credit, signaled, &piggyback);

	sge->addr = (uintptr_t)seg->data;
	sge->length = seg->data_len;
	sge->lkey = seg->pool->lkey;
	wr->wr_id = rdp_wrid(RDP_WRK_DATA, ep->slot, seq);
	wr->sg_list = sge;
	wr->num_sge = seg->data_len > 0;
	wr->opcode = RDP_WR_SEND_WITH_IMM;
	wr->flags = (signaled ? RDP_SEND_SIGNALED : 0) |
		    (seg->data_len <= ep->max_inline ? RDP_SEND_INLINE : 0);
	wr->imm = piggyback | pos | IMM_SEQ(ep->send_seq++);
	wr->remote_addr = 0;
	wr->rkey = 0;
	return seq;
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

/* post_send refused the WR @p wr_id and those after it: the endpoint fails. */
static void
post_refused(struct rdp_ep *ep, uint64_t wr_id, int err)
{
	struct rdp_credit *c = &ep->credit;
	uint64_t seq = rdp_credit_seq_expand(c, rdp_wrid_low(wr_id));

	if (err == -ENOMEM)
		EP_STAT_ADD(ep, enomem, 1);
	if (seq < ep->err_seq)
		ep->err_seq = seq;
	ep_fail(ep, err, "post_send refused a WR (%d) with %u of %u SQ slots in use: "
		"a flow-control invariant is broken", err, rdp_credit_sq_inflight(c), c->sq_size);
}

/*
 * The common case of a request or a reply on an idle endpoint: one message
 * of one chunk, with a credit and an SQ slot at hand. It is posted at once,
 * as post_sends() would post it, without going through the send queue.
 * Returns false, having done nothing, when it must take that general path.
 * The caller checked: on the poller, nothing queued, no pure ack's buffer
 * waiting to go back, not tearing down.
 */
static inline bool
send_now(struct rdp_ep *ep, struct rdp_msg *m)
{
	struct rdp_credit *c = &ep->credit;
	enum rdp_credit_verdict v;
	struct rdp_send_wr wr;
	struct rdp_sge sge;
	uint64_t seq;
	int err;

	if (m->next != NULL)
		return false;
	/* a stall counts once per episode: asking again in post_sends() is free */
	v = rdp_credit_data_check(c);
	if (v != RDP_CREDIT_GO_SIGNALED && v != RDP_CREDIT_GO_UNSIGNALED)
		return false;
	/* the last message queued is signaled, as in post_sends(); owed goes with it */
	seq = wr_data(ep, &wr, &sge, m, true, IMM_FIRST | IMM_LAST);
	ep->track[seq & ep->track_mask].msg = m;
	if (unlikely(rdp_post_send(ep->qp, &wr, 1, &err) != 1))
		post_refused(ep, wr.wr_id, err);
	return true;
}

static unsigned int
post_sends(struct rdp_ep *ep)
{
	struct rdp_send_wr wr[TX_BURST + 2];
	struct rdp_sge sge[TX_BURST];
	enum rdp_credit_verdict v = RDP_CREDIT_NONE;
	struct rdp_credit *c = &ep->credit;
	bool draining = ep_get_state(ep) == RDP_EP_DRAINING;
	uint16_t n = 0, k;
	uint64_t seq;
	int err;

#ifdef RDP_BENCH_NO_CREDIT
	rdp_credit_bench_bypass(c);
#endif
	txq_prefetch(&ep->txq, TX_BURST);
	while (!txq_empty(&ep->txq) && n < TX_BURST) {
		struct rdp_msg *head = txq_first(&ep->txq);
		struct rdp_msg *seg = ep->tx_seg != NULL ? ep->tx_seg : head;
		bool first = seg == head, last = seg->next == NULL;
		bool signaled;

		v = rdp_credit_data_check(c);
		if (v != RDP_CREDIT_GO_SIGNALED && v != RDP_CREDIT_GO_UNSIGNALED)
			break;
		/*
		 * Also signal the end of what is queued: nothing might follow to
		 * make its success visible, and the application waits for it.
		 */
		signaled = v == RDP_CREDIT_GO_SIGNALED || (last && txq_single(&ep->txq));
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
	/* credits no data WR could carry: a pure ack, after a reclaim if due */
	for (;;) {
		enum rdp_credit_verdict a = draining ?
			rdp_credit_ack_check_closing(c, !txq_empty(&ep->txq)) :
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
	k = rdp_post_send(ep->qp, wr, n, &err);
	if (unlikely(k < n)) {
		post_refused(ep, wr[k].wr_id, err);
		return k;
	}
	/* v is the last data verdict: GO means the burst filled up, more to send */
	if (!txq_empty(&ep->txq) && (v == RDP_CREDIT_GO_SIGNALED || v == RDP_CREDIT_GO_UNSIGNALED))
		ep_busy(ep);
	return n;
}

static unsigned int
ep_progress(void *client)
{
	struct rdp_ep *ep = client;
	unsigned int work = 0;

	if (ep->release_pending) {
		ctl_release(ep);
		return 0;
	}
	if (!ep->retired) {
		if (tearing_down(ep)) {
			if (ep->drain_done && ep->recv_posted == 0)
				finalize(ep);
		} else {
			if (ep->rp_head != NULL)
				work += post_recvs(ep);
			if (!tearing_down(ep))
				work += post_sends(ep);
			if (ep_get_state(ep) == RDP_EP_DRAINING && !tearing_down(ep) &&
			    txq_empty(&ep->txq) && rdp_credit_sq_idle(&ep->credit))
				start_teardown(ep);
		}
	}
	/* messages may arrive before the admission: they wait for ESTABLISHED */
	if (ep->ev_head != NULL && ep->app_visible && ep_get_state(ep) != RDP_EP_CONNECTING)
		work += deliver(ep, false);
	return work;
}

/* ---------------------------------------------------------------------- */
/* Inbox                                                                  */
/* ---------------------------------------------------------------------- */

static void
ep_admit(struct rdp_ep *ep)
{
	/*
	 * Once only: the poller neither fails nor retires an endpoint before
	 * its handover (an error then is early_err, and the control thread
	 * ends the handshake), so the first admission finds it whole (a
	 * retired endpoint was handed over). A second one would free its slot
	 * again and report it twice.
	 */
	if (ep->handed)
		return;
	ep->handed = true;
	if (ep->err == 0)
		ep->err = ep->early_err;
	if (ep->qp == NULL) {
		/* the handshake failed before a QP existed: nothing to drain */
		ep->retired = true;
		if (ep->slot != UINT32_MAX)
			rdp_poller_slot_free(ep->lc->poller, ep->slot);
		ep_set_state(ep, ep->closing ? RDP_EP_CLOSED : RDP_EP_FAILED);
		if (ep->closing || ep->app_visible)
			ev_state(ep, ep->closing ? RDP_EP_CLOSED : RDP_EP_FAILED, ep->err);
		ctl_retire(ep);
		return;
	}
	if (ep->err != 0 || ep->closing) {
		/* receives were posted: drain them before handing the QP back */
		ep_set_state(ep, ep->closing ? RDP_EP_DRAINING : RDP_EP_FAILED);
		start_teardown(ep);
		return;
	}
	if (!ep->app_visible) {
		/* an accepted endpoint: the application holds it from now on */
		atomic_fetch_add(&ep->refs, 1);
		__atomic_store_n(&ep->app_visible, true, __ATOMIC_RELEASE);
	}
	ep->admitted = true;
	ep_set_state(ep, RDP_EP_ESTABLISHED);
	/* ESTABLISHED first, then what a fast peer sent before the admission */
	ev_state(ep, RDP_EP_ESTABLISHED, 0);
	while (ep->early_head != NULL)
		ev_push(ep, q_pop(&ep->early_head, &ep->early_tail));
	ep_busy(ep);
}

static void
ep_close_local(struct rdp_ep *ep)
{
	ep->closing = true;
	if (ep->retired) {
		if (ep_get_state(ep) != RDP_EP_CLOSED) {
			ep_set_state(ep, RDP_EP_CLOSED);
			ev_state(ep, RDP_EP_CLOSED, 0);
		}
		return;
	}
	if (ep_get_state(ep) == RDP_EP_ESTABLISHED)
		ep_set_state(ep, RDP_EP_DRAINING);
	ep_busy(ep);
}

/*
 * A send handed over from another thread. rdp_ep_send_burst() accepted it
 * while the endpoint was established, so it goes behind the others: sent
 * by a drain, or reported failed by the teardown after every earlier one.
 * Only once the teardown has reported everything is it failed at once.
 */
static void
ep_accept_send(struct rdp_ep *ep, struct rdp_msg *m)
{
	if (ep->retired) {
		send_done(ep, m, ep->err != 0 ? ep->err : -ENOTCONN);
		return;
	}
	txq_push(&ep->txq, m);
	ep_busy(ep);
}

static void
ep_inbox(struct rdp_poller *p, void *const *items, unsigned int n)
{
	unsigned int i;

	RTE_SET_USED(p);
	for (i = 0; i < n; i++) {
		void *obj = untag_ptr(items[i]);
		struct rdp_msg *m = obj;
		struct rdp_ep *ep = obj;

		switch (ptr_tag(items[i])) {
		case TAG_SEND:
			ep_accept_send(m->ep, m);
			break;
		case TAG_FREE:
			recv_freed(m->ep, m);
			break;
		case TAG_ADMIT:
			ep_admit(ep);
			break;
		case TAG_FAIL:
			if (!ep->retired)
				ep_fail(ep, ep->ctl_err, "%s", ep->ctl_err == -EIO ?
					"its QP went to error (device event)" : ep->ctl_err == -ENETDOWN ?
					"the port went down" : ep->ctl_err == -EPROTO ?
					"unexpected bytes on the control connection" :
					ep->ctl_err == -ETIMEDOUT ? "its drain passed drain_timeout_ms" :
					"the control connection to the peer closed (peer gone)");
			ep_unref(ep); /* the item's reference (poller_push_fail()) */
			break;
		case TAG_CLOSE:
			ep_close_local(ep);
			break;
		case TAG_RELEASE:
			ep_release_on_poller(ep);
			break;
		case TAG_CALL: {
			struct ep_call *call = obj;

			call->fn(call->ep, call->arg);
			free(call);
			break;
		}
		}
	}
}

void
ep_release_on_poller(struct rdp_ep *ep)
{
	/* the busy list may still point at it: free it once it is visited */
	if (ep->busy.queued) {
		ep->release_pending = true;
		return;
	}
	ctl_release(ep);
}

/*
 * The poller's look ahead (rdp_poll_ops.prefetch): the endpoint's lines
 * that the poller thread reads, the datapath and the application's
 * callbacks and context, everything before the control thread's part
 * (ctl_next on). With many endpoints each is cold at every visit; asked for before
 * the poll's first endpoint is served, the lines of the second and third
 * are on their way while the first one's completions run.
 */
static void
ep_prefetch(void *client, const struct rdp_wc *wc, uint16_t n)
{
	const uint8_t *ep = client;
	size_t off;

	RTE_SET_USED(wc);
	RTE_SET_USED(n);
	for (off = 0; off < offsetof(struct rdp_ep, ctl_next); off += RTE_CACHE_LINE_SIZE)
		rte_prefetch0(ep + off);
}

const struct rdp_poll_ops ep_poll_ops = {
	.complete = ep_complete,
	.prefetch = ep_prefetch,
	.inbox = ep_inbox,
	.progress = ep_progress,
};

/* ---------------------------------------------------------------------- */
/* Application entry points for the datapath                              */
/* ---------------------------------------------------------------------- */

int
ep_post_initial_recvs(struct rdp_ep *ep)
{
	struct rdp_msg *m;
	uint32_t i;
	int err = 0;

	for (i = 0; i < ep->recv_pool->nb_bufs; i++) {
		if (rdp_pool_get_bulk(ep->recv_pool, &m, 1) < 0)
			return rdp_err_set(ENOBUFS, "endpoint %u: receive pool short", ep->id);
		m->flags &= (uint8_t)~MSG_F_OWED; /* the peer starts with these credits */
		ep->rp_acks++;
		q_push(&ep->rp_head, &ep->rp_tail, m);
	}
	/* every one, now: the peer may send as soon as it hears from us */
	while (ep->rp_head != NULL && err == 0)
		post_recv_burst(ep, &err);
	if (err != 0)
		return rdp_err_set(-err, "endpoint %u: only %u of the %u initial receives "
				   "could be posted", ep->id, ep->recv_posted,
				   ep->recv_pool->nb_bufs);
	return 0;
}

struct rdp_msg *
rdp_msg_alloc(struct rdp_ep *ep, uint32_t len)
{
	struct rdp_msg *m;

	return rdp_msg_alloc_bulk(ep, &m, 1, len) == 0 ? m : NULL;
}

/* @p n messages of one chunk each, from the send pool; 0 or -1 (rte_errno). */
static __rte_always_inline int
alloc_one_chunk(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, uint32_t len)
{
	uint16_t i;

	if (unlikely(rdp_pool_get_bulk(ep->lc->send_pool, msgs, n) < 0)) {
		rte_errno = ENOBUFS;
		return -1;
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
	uint32_t limit = ep->max_send_msg != 0 ? ep->max_send_msg : ep->lc->conf.max_msg_size;
	uint32_t seg = ep->chunk_size != 0 ? ep->chunk_size : ep->lc->conf.buf_size;
	uint16_t i;

	if (unlikely(len > limit)) {
		rte_errno = EMSGSIZE;
		return -1;
	}
	if (likely(len <= seg && n <= RDP_POOL_CACHE_BATCH)) {
		/* one message, a request or a reply, is the common case: n known */
		return n == 1 ? alloc_one_chunk(ep, msgs, 1, len) :
				alloc_one_chunk(ep, msgs, n, len);
	}
	/* chains of segments, one message at a time */
	for (i = 0; i < n; i++) {
		msgs[i] = rdp_pool_alloc_msg(ep->lc->send_pool, len, seg);
		if (msgs[i] == NULL) {
			int err = rte_errno;

			while (i-- > 0)
				rdp_pool_put_chain(msgs[i]);
			rte_errno = err;
			return -1;
		}
		msgs[i]->ep = ep;
	}
	return 0;
}

uint16_t
rdp_ep_send_burst(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n)
{
	void *items[64];
	uint16_t i, done = 0;

	RDP_HOP_MARK(RDP_HOP_APP_SEND);
	if (unlikely(ep_get_state(ep) != RDP_EP_ESTABLISHED)) {
		rte_errno = ENOTCONN;
		return 0;
	}
	for (i = 0; i < n; i++) {
		if (unlikely(msgs[i]->ep != ep || msgs[i]->pkt_len > ep->max_send_msg ||
			     (msgs[i]->flags & (MSG_F_RECV | MSG_F_EVENT)) != 0)) {
			n = i;
			rte_errno = EINVAL;
			break;
		}
	}
	if (rdp_poller_is_self(ep->lc->poller)) {
		bool idle = txq_empty(&ep->txq);

		if (n == 0)
			return 0;
		if (idle && n == 1 && ep->rp_acks == 0 && !tearing_down(ep) && send_now(ep, msgs[0])) {
			ep_busy(ep); /* the pass comes, as below */
			return 1;
		}
		for (i = 0; i < n; i++)
			txq_push(&ep->txq, msgs[i]);
		/*
		 * Nothing was queued before: post now rather than in the poller's
		 * next pass over its busy endpoints, so that a reply leaves before
		 * the buffer its request freed goes back. A pure ack's buffer still
		 * goes back first (post_recvs()). The pass comes anyway, for the
		 * reposts and whatever the credits held back.
		 */
		/* ESTABLISHED (checked above): handed over, not retired */
		if (idle && !tearing_down(ep)) {
			if (ep->rp_acks > 0)
				post_recvs(ep);
			if (!tearing_down(ep))
				post_sends(ep);
		}
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

int
rdp_ep_call(struct rdp_ep *ep, rdp_ep_call_fn fn, void *arg)
{
	struct ep_call *call;
	void *item;

	if (rdp_poller_is_self(ep->lc->poller)) {
		fn(ep, arg);
		return 0;
	}
	call = malloc(sizeof(*call));
	if (call == NULL)
		return -ENOMEM;
	*call = (struct ep_call){ .fn = fn, .arg = arg, .ep = ep };
	item = tag_ptr(call, TAG_CALL);
	if (rdp_poller_inbox_put(ep->lc->poller, &item, 1) != 1) {
		free(call);
		return -ENOBUFS;
	}
	return 0;
}

void
rdp_msg_free(struct rdp_msg *m)
{
	void *item;

	if (m == NULL)
		return;
	if (m->flags & MSG_F_EVENT) {
		struct rdp_ep *ep = m->ep;
		bool ref = m->flags & MSG_F_APP_REF;

		free(m);
		if (ref)
			ep_unref(ep);
		return;
	}
	if (!(m->flags & MSG_F_RECV)) {
		rdp_pool_put_chain(m);
		return;
	}
	m->flags = 0;
	if (rdp_poller_is_self(m->ep->lc->poller)) {
		recv_freed(m->ep, m);
		return;
	}
	/* the owner reposts it and returns the credit; it must not be lost */
	item = tag_ptr(m, TAG_FREE);
	while (rdp_poller_inbox_put(m->ep->lc->poller, &item, 1) != 1)
		rte_pause();
}

/* A sent (pool) message of one segment: may join a bulk return to its pool. */
static inline bool
msg_is_plain_segment(const struct rdp_msg *m)
{
	return (m->flags & (MSG_F_EVENT | MSG_F_RECV)) == 0 && m->next == NULL;
}

void
rdp_msg_free_bulk(struct rdp_msg **msgs, uint16_t n)
{
	uint16_t i = 0, run;

	while (i < n) {
		if (msgs[i] == NULL || !msg_is_plain_segment(msgs[i])) {
			rdp_msg_free(msgs[i++]);
			continue;
		}
		for (run = 1; i + run < n && run < RDP_POOL_CACHE_BATCH && msgs[i + run] != NULL &&
		     msg_is_plain_segment(msgs[i + run]) && msgs[i + run]->pool == msgs[i]->pool;
		     run++)
			;
		rdp_pool_put_bulk(msgs[i]->pool, &msgs[i], run);
		i += run;
	}
}
