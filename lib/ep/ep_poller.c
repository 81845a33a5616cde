/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a poller calls into the endpoint layer (struct rdp_poll_ops): the
 * progress of a busy endpoint, the work other threads hand over through
 * the inbox, and the look-ahead before a poll's first endpoint. Completions
 * themselves go to ep_complete() (ep_rx.c).
 */
#include <stdlib.h>

#include <rte_prefetch.h>

#include "ep_private.h"

/* Can the application's events go now? */
static inline bool
ep_deliverable(const struct rdp_ep *ep)
{
	return ep->ev_head != NULL && ep->app_visible && ep_get_state(ep) != RDP_EP_CONNECTING;
}

/*
 * Received rendezvous messages to read: the application has its events
 * first, and what it queued in its callbacks is posted, then the READs
 * start. On shm a READ is the poller's own copy of the whole message, so
 * a message the application sends on a report (the next one, a reply)
 * would otherwise wait for that copy, and two endpoints streaming large
 * messages at each other would take turns copying; on a NIC posting a
 * READ costs the same either way. False when a callback moved the
 * endpoint out of phase @p ph (closed, failed): its next turn goes on.
 */
static bool
ep_rndv_turn(struct rdp_ep *ep, enum ep_phase ph, unsigned int *work)
{
	if (ep_deliverable(ep)) {
		*work += ep_flush(ep, true);
		*work += ep_deliver(ep, false);
		if (ep_phase_get(ep) != ph) {
			ep_busy(ep);
			return false;
		}
	}
	*work += ep_rndv_progress(ep);
	return true;
}

/*
 * A busy endpoint's turn: post what waits while it runs, move its close or
 * its flush on, and deliver what is queued for the application.
 */
static unsigned int
ep_progress(void *client)
{
	struct rdp_ep *ep = client;
	unsigned int work = 0;

	switch (ep_phase_get(ep)) {
	case EP_PH_ESTABLISHED:
		if (unlikely(ep->rv_in_head != NULL) &&
		    !ep_rndv_turn(ep, EP_PH_ESTABLISHED, &work))
			return work;
		work += ep_flush(ep, true);
		break;
	case EP_PH_DRAINING:
		if (unlikely(ep->rv_in_head != NULL) && !ep_rndv_turn(ep, EP_PH_DRAINING, &work))
			return work;
		work += ep_flush(ep, true);
		/* what it accepted is out and known complete (a rendezvous message
		 * once its FIN came), and so is the close notice behind it
		 * (ep_post_sends()): the QP can go */
		if (ep_phase_get(ep) == EP_PH_DRAINING && ep->close_sent && txq_empty(&ep->txq) &&
		    rdp_credit_sq_idle(&ep->credit) && ep_rndv_idle(ep))
			ep_flush_qp(ep);
		break;
	case EP_PH_FLUSHED:
		if (unlikely(ep->flush_only) && rte_get_tsc_cycles() < ep->cause_by) {
			/* the control thread may yet name the cause (ep_fail_flushed()) */
			ep_busy(ep);
			break;
		}
		if (ep->recv_posted == 0) {
			/* may release the endpoint: not touched after */
			ep_finalize(ep);
			return work;
		}
		break;
	case EP_PH_RELEASING:
		ctl_release(ep);
		return 0;
	default:
		break;
	}
	/* messages may arrive before the admission: they wait for ESTABLISHED */
	if (ep_deliverable(ep))
		work += ep_deliver(ep, false);
	return work;
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
			ep_recv_freed(m);
			break;
		case TAG_ADMIT:
			ep_admit(ep);
			break;
		case TAG_FAIL:
			ep_fail_ctl(ep, ep->ctl_err, ep->ctl_err == -EIO ?
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

/*
 * The poller's look ahead (rdp_poll_ops.prefetch): the endpoint's lines
 * that the poller thread reads, the datapath and the application's
 * callbacks and context, everything before the control thread's part
 * (ctl_next on). With many endpoints each is cold at every visit; asked for
 * before the poll's first endpoint is served, the lines of the second and
 * third are on their way while the first one's completions run.
 */
static void
ep_prefetch(void *client, const struct rdp_wc *wc, uint16_t n)
{
	const uint8_t *ep = client;
	size_t off;

	RTE_SET_USED(wc);
	RTE_SET_USED(n);
	if (ep_client_is_srq(client))
		return;
	for (off = 0; off < offsetof(struct rdp_ep, ctl_next); off += RTE_CACHE_LINE_SIZE)
		rte_prefetch0(ep + off);
}

const struct rdp_poll_ops ep_poll_ops = {
	.complete = ep_complete,
	.prefetch = ep_prefetch,
	.inbox = ep_inbox,
	.progress = ep_progress,
};

static int
push_call(struct ep_lcore *lc, struct rdp_ep *ep, rdp_ep_call_fn fn, void *arg)
{
	struct ep_call *call;
	void *item;

	call = malloc(sizeof(*call));
	if (call == NULL)
		return -ENOMEM;
	*call = (struct ep_call){ .fn = fn, .arg = arg, .ep = ep };
	item = tag_ptr(call, TAG_CALL);
	if (rdp_poller_inbox_put(lc->poller, &item, 1) != 1) {
		free(call);
		return -ENOBUFS;
	}
	return 0;
}

int
ep_lcore_call(struct ep_lcore *lc, rdp_ep_call_fn fn, void *arg)
{
	return push_call(lc, NULL, fn, arg);
}

int
rdp_ep_call(struct rdp_ep *ep, rdp_ep_call_fn fn, void *arg)
{
	if (rdp_poller_is_self(ep->lc->poller)) {
		fn(ep, arg);
		return 0;
	}
	return push_call(ep->lc, ep, fn, arg);
}
