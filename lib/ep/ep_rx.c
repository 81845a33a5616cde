/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The receive side of an endpoint, on its poller: completions dispatched
 * by wr_id, the SEND number and framing checks, reassembly, and the
 * buffers that go back to the receive queue when the application frees
 * them (which is what returns a credit to the peer).
 */
#include <inttypes.h>

#include <rte_prefetch.h>

#include "ep_private.h"
#include "rdp_hop.h"

#define RX_BURST 32

static inline void
repost(struct rdp_ep *ep, struct rdp_msg *m, bool owed)
{
	if (ep->ld->srq != NULL) {
		ep_srq_repost(ep, m, owed);
		return;
	}
	if (owed) {
		m->flags |= MSG_F_OWED;
	} else {
		m->flags &= (uint8_t)~MSG_F_OWED;
		ep->rp_acks++;
	}
	ep_q_push(&ep->rp_head, &ep->rp_tail, m);
	ep_busy(ep);
}

/* The application freed a received message (on this thread). */
static void
recv_freed(struct rdp_ep *ep, struct rdp_msg *m)
{
	while (m != NULL) {
		struct rdp_msg *next = m->next;

		m->next = NULL;
		if (!ep_tearing_down(ep))
			repost(ep, m, true);
		else
			ep_recv_drop(ep, m);
		m = next;
	}
	ep_held_sub(ep, 1);
}

/* A receive buffer the library consumed goes back, owing a credit or not. */
static void
recv_return(struct rdp_ep *ep, struct rdp_msg *m, bool owed)
{
	m->flags = 0;
	m->next = NULL;
	if (!ep_tearing_down(ep))
		repost(ep, m, owed);
	else
		ep_recv_drop(ep, m);
}

void
ep_recv_return(struct rdp_ep *ep, struct rdp_msg *m)
{
	recv_return(ep, m, true);
}

void
ep_recv_return_reserved(struct rdp_ep *ep, struct rdp_msg *m)
{
	recv_return(ep, m, false);
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
		m = ep_q_pop(&ep->rp_head, &ep->rp_tail);
		if (m->flags & MSG_F_OWED)
			owed++;
		else
			ep->rp_acks--;
	}
	ep->recv_posted += k;
	rdp_credit_recv_reposted(&ep->credit, owed);
	return k;
}

unsigned int
ep_post_recvs(struct rdp_ep *ep)
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

void
ep_recv_drop_reposts(struct rdp_ep *ep)
{
	while (ep->rp_head != NULL) {
		struct rdp_msg *m = ep_q_pop(&ep->rp_head, &ep->rp_tail);

		rdp_pool_put_bulk(ep->recv_pool, &m, 1);
	}
	ep->rp_acks = 0;
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
		ep_recv_drop(ep, m);
		ep_fail(ep, -EPROTO, "SEND %u (mod 8192) arrived where %u was expected: the "
			"transport lost SENDs, or peer %s breaks the protocol", seen, want, ep->peer);
		return;
	}
	dups = RDP_STAT_READ(ep->stats.dups_dropped) + 1;
	RDP_STAT_ADD(ep->stats.dups_dropped, 1);
	/* the first, then each power of two: a transport that keeps doing it is news once */
	if ((dups & (dups - 1)) == 0)
		EP_LOG(WARNING, "endpoint %u (peer %s, lcore %u): SEND %u (mod 8192) arrived "
		       "again where %u was expected: the transport delivered it twice; dropped "
		       "(%" PRIu64 " so far)", ep->id, ep->peer, ep->lc->lcore_id, seen, want, dups);
	if (!ep_tearing_down(ep))
		repost(ep, m, false);
	else
		ep_recv_drop(ep, m);
}

static void
recv_complete(struct rdp_ep *ep, const struct rdp_wc *wc)
{
	uint64_t idx = rdp_wrid_low(wc->wr_id);

	if (unlikely(idx >= ep->recv_pool->nb_bufs)) {
		ep_fail(ep, -EIO, "receive completion for buffer %" PRIu64 " of %u",
			idx, ep->recv_pool->nb_bufs);
		return;
	}
	ep->recv_posted--;
	ep_recv_one(ep, wc, rdp_pool_msg(ep->recv_pool, (uint32_t)idx));
}

/*
 * A data SEND or control message of a leased peer spent a credit of its
 * lease (a give-back accounts for itself, ep_srq_give_back_recv(), and a
 * FIN spends the FIN reserve's, ep_srq_fin_recv()).
 * False when that broke the rules: the endpoint failed, the buffer went back.
 */
static inline bool
recv_leased(struct rdp_ep *ep, struct rdp_msg *m, uint32_t imm, uint32_t byte_len)
{
	if ((imm & (IMM_ACK | IMM_FIRST)) == IMM_ACK)
		return true; /* a pure ack: no credit, on the reserve */
	if ((imm & IMM_ACK) && byte_len >= 1) {
		uint8_t kind = ((const uint8_t *)rdp_pool_buf(ep->recv_pool,
							      rdp_pool_msg_idx(ep->recv_pool, m)))[0];

		/* a FIN spends the FIN reserve's credit (ep_srq_fin_recv()) */
		if (kind == EP_CM_GIVEBACK || kind == EP_CM_FIN)
			return true;
	}
	if (ep_srq_on_data(ep, imm & IMM_WANT))
		return true;
	ep_recv_drop(ep, m);
	return false;
}

void
ep_recv_one(struct rdp_ep *ep, const struct rdp_wc *wc, struct rdp_msg *m)
{
	uint32_t idx = rdp_pool_msg_idx(ep->recv_pool, m);
	const char *violation;
	uint32_t credits, value;

	if (unlikely(wc->status != RDP_WC_SUCCESS)) {
		ep_recv_drop(ep, m);
		if (wc->status == RDP_WC_WR_FLUSH_ERR)
			ep_fail_flushed(ep, EP_FLUSHED_WHY);
		else
			ep_fail(ep, ep_wc_errno(wc->status), "receive completed with %s",
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
				   wc->byte_len, rdp_credit_returnable(&ep->credit, ep->fins_due,
							     (wc->imm & IMM_CTRL) == IMM_CTRL),
				   &value);
	if (unlikely(violation != NULL)) {
		ep_recv_drop(ep, m);
		ep_fail(ep, -EPROTO, "peer %s broke the protocol: %s (0x%x)", ep->peer,
			violation, value);
		return;
	}
	if (ep->srq_member && !recv_leased(ep, m, wc->imm, wc->byte_len))
		return;
	credits = ep_frame_credits(&ep->frame, wc->imm);
	if (unlikely((wc->imm & (IMM_ACK | IMM_FIRST)) == IMM_ACK &&
		     !rdp_credit_lease_ack_ok(&ep->credit, credits, ep->fins_due))) {
		ep_recv_drop(ep, m);
		ep_fail(ep, -EPROTO, "peer %s broke the protocol: a pure ack of %u credit(s), "
			"below its ack_threshold of %u, while %u of its lease were here (rule: a "
			"leasing side acks fewer than ack_threshold only when it lent out none)",
			ep->peer, credits, ep->credit.peer_lease_tack,
			ep->credit.rc - RTE_MIN(ep->credit.rc, ep->fins_due));
		return;
	}
	if (credits > 0) {
		rdp_credit_granted(&ep->credit, credits);
		/* to send, or, towards a leasing peer, perhaps to give back */
		if (!txq_empty(&ep->txq) || ep->fin_head != NULL || ep->peer_leases)
			ep_busy(ep);
	}
	if (wc->imm & IMM_ACK) {
		if (unlikely(wc->imm & IMM_FIRST)) {
			/* a rendezvous control message (ep_frame_check() saw it whole) */
			m->data = rdp_pool_buf(ep->recv_pool, idx);
			ep_rndv_recv(ep, m, wc->byte_len);
			return;
		}
		if (!ep_tearing_down(ep))
			repost(ep, m, false);
		else
			ep_recv_drop(ep, m);
		return;
	}
	m->data = rdp_pool_buf(ep->recv_pool, idx);
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
		RDP_STAT_ADD(ep->stats.msgs_received, 1);
		RDP_STAT_ADD(ep->stats.bytes_received, head->pkt_len);
		if (ep->closing) {
			/* closed by the application: nobody to give it to */
			ep_held_inc(ep, 1);
			recv_freed(ep, head);
		} else if (!ep->announced) {
			/* a fast peer: its messages wait for ESTABLISHED, and are
			 * dropped if the endpoint never gets there */
			ep_q_push(&ep->early_head, &ep->early_tail, head);
		} else {
			ep_ev_push(ep, head);
		}
	}
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

void
ep_complete(void *client, const struct rdp_wc *wc, uint16_t n)
{
	struct rdp_ep *ep = client;
	uint16_t i;

	if (unlikely(ep_client_is_srq(client))) {
		/* the poller's SRQ: receives of any of its endpoints (ep_srq.c) */
		ep_srq_complete((struct ep_srq *)((uintptr_t)client & ~(uintptr_t)EP_SRQ_CLIENT_TAG),
				wc, n);
		return;
	}
	RDP_HANDOFF_ACQUIRE(ep); /* what connect_qp() set up (ThreadSanitizer only) */
	prefetch_recv_headers(ep, wc, n);
	for (i = 0; i < n; i++) {
		if (rdp_wrid_kind(wc[i].wr_id) == RDP_WRK_RECV)
			recv_complete(ep, &wc[i]);
		else
			ep_send_complete(ep, &wc[i]);
	}
	RDP_HOP_MARK(RDP_HOP_DISPATCHED);
	if (ep_tearing_down(ep))
		ep_busy(ep);
	/*
	 * What this batch received goes to the application now rather than in
	 * the poller's progress pass, one pass over the busy list earlier. Only
	 * messages: a state event, CLOSED above all, may drop the endpoint's
	 * last reference and waits for the pass. The progress pass still comes
	 * (ep_ev_push() queued the endpoint) for what the application refused.
	 */
	if (ep->ev_head != NULL && ep->app_visible && ep_get_state(ep) == RDP_EP_ESTABLISHED)
		ep_deliver(ep, true);
}

int
ep_post_initial_recvs(struct rdp_ep *ep)
{
	struct rdp_msg *m;
	uint32_t i;
	int err = 0;

	if (ep->ld->srq != NULL)
		return 0; /* its receives are the SRQ's */
	for (i = 0; i < ep->recv_pool->nb_bufs; i++) {
		if (rdp_pool_get_bulk(ep->recv_pool, &m, 1) < 0)
			return rdp_err_set(ENOBUFS, "endpoint %u: receive pool short", ep->id);
		m->flags &= (uint8_t)~MSG_F_OWED; /* the peer starts with these credits */
		ep->rp_acks++;
		ep_q_push(&ep->rp_head, &ep->rp_tail, m);
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
	if (unlikely(m->flags & MSG_F_RNDV))
		ep_rndv_release(m);
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

/* A received message freed on another thread, handed over (TAG_FREE). */
void
ep_recv_freed(struct rdp_msg *m)
{
	recv_freed(m->ep, m);
}

/* A sent (pool) message of one segment: may join a bulk return to its pool. */
static inline bool
msg_is_plain_segment(const struct rdp_msg *m)
{
	return (m->flags & (MSG_F_EVENT | MSG_F_RECV | MSG_F_RNDV)) == 0 && m->next == NULL;
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
