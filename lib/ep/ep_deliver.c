/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Events to the application, on the endpoint's poller: received messages,
 * send reports and state changes, in one queue per endpoint, handed to the
 * callbacks (run-to-completion) or to the event ring (pipeline). A batch
 * the application refuses stays queued (back-pressure, never a drop).
 */
#include <stdlib.h>
#include <string.h>

#include "ep_private.h"
#include "rdp_hop.h"

#define EV_BURST 32

void
ep_ev_state(struct rdp_ep *ep, enum rdp_ep_state state, int err)
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
	ep_ev_push(ep, m);
}

void
ep_send_done(struct rdp_ep *ep, struct rdp_msg *m, int status)
{
	if (unlikely(m->flags & (MSG_F_RDMA | MSG_F_RNDV | MSG_F_CTRL))) {
		if (m->flags & MSG_F_RDMA)
			ep_rdma_done(ep, m, status);
		else
			ep_rndv_sent(ep, m, status);
		return;
	}
	ep_msg_report(ep, m, status);
}

bool
ep_msg_account(struct rdp_ep *ep, struct rdp_msg *m, int status)
{
	m->status = status;
	if (status == 0) {
		RDP_STAT_ADD(ep->stats.msgs_sent, 1);
		RDP_STAT_ADD(ep->stats.bytes_sent, m->pkt_len);
		if (!ep->prm.notify_send_ok) {
			if (unlikely(m->flags & MSG_F_RNDV))
				ep_rndv_release(m);
			rdp_pool_put_chain(m);
			return false;
		}
		m->event = RDP_EV_SEND_DONE;
	} else {
		RDP_STAT_ADD(ep->stats.msgs_failed, 1);
		m->event = RDP_EV_SEND_FAILED;
	}
	return true;
}

void
ep_msg_report(struct rdp_ep *ep, struct rdp_msg *m, int status)
{
	if (ep_msg_account(ep, m, status))
		ep_report_push(ep, m);
}

/*
 * Received messages the application holds keep their endpoint: the first
 * one takes a reference, which stays while the endpoint runs, so that a
 * message's delivery and free make no atomic operation. Once the endpoint
 * is retired, the last message freed drops it (or the retirement does).
 */
void
ep_held_inc(struct rdp_ep *ep, unsigned int n)
{
	if (unlikely(!ep->held_ref) && n > 0) {
		atomic_fetch_add(&ep->refs, 1);
		ep->held_ref = true;
	}
	ep->held += n;
}

void
ep_held_ref_settle(struct rdp_ep *ep)
{
	/* its lease leaves once its QP is unmapped (ep_srq_settle() says when) */
	if (unlikely(ep->srq_member) && !ep->srq_mapped)
		ep_srq_settle(ep);
	if (ep->held == 0 && ep->held_ref && ep_phase_get(ep) >= EP_PH_RETIRED) {
		ep->held_ref = false;
		ep_unref(ep);
	}
}

void
ep_held_sub(struct rdp_ep *ep, unsigned int n)
{
	ep->held -= n;
	ep_held_ref_settle(ep);
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
unsigned int
ep_deliver(struct rdp_ep *ep, bool recv_only)
{
	struct rdp_msg *batch[EV_BURST];
	unsigned int work = 0;

	while (ep->ev_head != NULL && (!recv_only || ep->ev_head->event == RDP_EV_RECV) &&
	       !(ep->ev_head->flags & MSG_F_PENDING)) {
		uint8_t kind = ep->ev_head->event;
		uint16_t n = 0, acc, i;
		bool closed, app_ref;

		while (ep->ev_head != NULL && ep->ev_head->event == kind && n < EV_BURST &&
		       !(ep->ev_head->flags & MSG_F_PENDING)) {
			batch[n++] = ep_q_pop(&ep->ev_head, &ep->ev_tail);
			if (kind == RDP_EV_STATE)
				break;
		}
		if (kind == RDP_EV_RECV) {
			ep_held_inc(ep, n);
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
					rdp_msg_free(batch[i]);
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
				ep_held_sub(ep, n - acc);
				if (!ep->backpressured) {
					ep->backpressured = true;
					RDP_STAT_ADD(ep->stats.backpressure, 1);
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
