/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An endpoint's life on its poller: admission, the application's close,
 * failure, the flush that ends a QP, retirement and release; and the
 * endpoint object itself (ep_new, references, ep_free). The phases and
 * their moves are in ep_phase.c.
 *
 * The flush, in one paragraph: the QP is moved to error and a signaled
 * zero-length WRITE (the flush marker) is posted behind everything else.
 * A QP in error completes every WR in order, so once the marker's
 * completion and a completion for every posted receive have been polled,
 * nothing is in flight. A WR with a sequence below the lowest error
 * completion succeeded (an unsignaled WR that succeeded makes no
 * completion, and WRs complete in order); every other WR failed.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ep_private.h"

int
ep_wc_errno(uint8_t status)
{
	switch (status) {
	case RDP_WC_WR_FLUSH_ERR: return -ECONNABORTED;
	case RDP_WC_RETRY_EXC_ERR: return -ETIMEDOUT;
	case RDP_WC_RNR_RETRY_EXC_ERR: return -ENOBUFS;
	case RDP_WC_REM_ACCESS_ERR: return -EACCES;
	case RDP_WC_REM_INV_REQ_ERR:
	case RDP_WC_REM_OP_ERR: return -EREMOTEIO;
	default: return -EIO;
	}
}

static void
log_failure(const struct rdp_ep *ep, int err, const char *why)
{
	/* a peer that went away (or flushed us) is news; the rest is an error */
	if (err == -ECONNRESET || err == -ECONNABORTED)
		EP_LOG(NOTICE, "endpoint %u (peer %s, lcore %u) failed: %s", ep->id, ep->peer,
		       ep->lc->lcore_id, why);
	else
		EP_LOG(ERR, "endpoint %u (peer %s, lcore %u) failed: %s", ep->id, ep->peer,
		       ep->lc->lcore_id, why);
}

static void
log_unfinished_close(const struct rdp_ep *ep, const char *why)
{
	EP_LOG(NOTICE, "endpoint %u (peer %s, lcore %u): its close did not finish: %s", ep->id,
	       ep->peer, ep->lc->lcore_id, why);
}

/* Fail it; @p deferred: the log waits for retire() (ep_fail_ctl()). */
static void
fail_why(struct rdp_ep *ep, int err, const char *why, bool deferred)
{
	enum ep_phase ph = ep_phase_get(ep);

	if (ph >= EP_PH_FLUSHING)
		return;
	if (ph < EP_PH_ESTABLISHED) {
		/*
		 * Not taken over yet: the control thread may still configure
		 * this QP. It ends the handshake, and the flush starts when the
		 * endpoint is handed over (ep_admit() reads early_err).
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
		if (!deferred)
			log_failure(ep, err, why);
		ep_set_state(ep, RDP_EP_FAILED);
	}
	ep_flush_qp(ep);
}

void
ep_fail(struct rdp_ep *ep, int err, const char *fmt, ...)
{
	char why[RDP_ERR_MSG_MAX];
	va_list ap;

	if (ep_phase_get(ep) >= EP_PH_FLUSHING)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	fail_why(ep, err, why, false);
}

void
ep_fail_flushed(struct rdp_ep *ep, const char *why)
{
	if (ep_phase_get(ep) >= EP_PH_FLUSHING)
		return;
	if (ep_phase_get(ep) >= EP_PH_ESTABLISHED && !ep->closing) {
		ep->flush_only = true;
		ep->cause_by = rte_get_tsc_cycles() + rte_get_tsc_hz() * EP_CAUSE_WAIT_MS / 1000;
		ep->fail_why = why;
	}
	fail_why(ep, -ECONNABORTED, why, ep_phase_get(ep) >= EP_PH_ESTABLISHED);
}

void
ep_fail_ctl(struct rdp_ep *ep, int err, const char *why)
{
	if (ep_phase_get(ep) >= EP_PH_FLUSHING) {
		/* the cause of a failure that was seen as flushed completions only */
		if (ep->flush_only) {
			ep->flush_only = false;
			ep->err = err;
			ep->fail_why = why;
		}
		return;
	}
	/*
	 * The control thread told a closing endpoint's end at INFO: a drain cut
	 * short is worth more (its deadline, ETIMEDOUT, is logged where it ran
	 * out). Once our close notice is posted, the peer may have taken it,
	 * closed and gone before its completion is polled: the flush tells,
	 * and retire() logs only a notice that did not complete.
	 */
	if (ep->closing && err != -ETIMEDOUT && !ep->close_sent)
		log_unfinished_close(ep, why);
	ep->fail_why = why;
	fail_why(ep, err, why, ep_phase_get(ep) >= EP_PH_ESTABLISHED);
}

static void
log_peer_closed(const struct rdp_ep *ep)
{
	EP_LOG(NOTICE, "endpoint %u (peer %s, lcore %u) closed by the peer", ep->id, ep->peer,
	       ep->lc->lcore_id);
}

void
ep_peer_closed(struct rdp_ep *ep)
{
	enum ep_phase ph = ep_phase_get(ep);

	if (ep->peer_closed)
		return;
	ep->peer_closed = true;
	if (ph < EP_PH_ESTABLISHED)
		return; /* ep_admit() delivers what came before it, then comes back */
	if (ph >= EP_PH_FLUSHING) {
		/*
		 * The control side saw the peer go (its socket closed after the
		 * notice arrived) before this completion was polled: a close.
		 * A failure of our own stays one.
		 */
		if (ep->fail_why != NULL) {
			ep->flush_only = false; /* its cause: the peer closed */
			ep->err = -ESHUTDOWN;
			if (!ep->closing) {
				log_peer_closed(ep);
				ep_set_state(ep, RDP_EP_PEER_CLOSED);
			}
		} else {
			ep->peer_closed = false;
		}
		return;
	}
	ep->err = -ESHUTDOWN;
	if (!ep->closing) {
		log_peer_closed(ep);
		ep_set_state(ep, RDP_EP_PEER_CLOSED);
	}
	ep_flush_qp(ep);
}

void
ep_flush_qp(struct rdp_ep *ep)
{
	struct rdp_qp_attr attr = { .state = RDP_QPS_ERR };
	struct rdp_send_wr marker = {
		.opcode = RDP_WR_RDMA_WRITE,
		.flags = RDP_SEND_SIGNALED,
	};
	int ret, err;

	ep_phase_set(ep, EP_PH_FLUSHING);
	ret = rdp_qp_modify(ep->qp, &attr, RDP_QP_ATTR_STATE);
	if (ret < 0)
		EP_LOG(ERR, "endpoint %u: cannot move its QP to error: %s", ep->id,
		       rdp_err_msg());
	/* buffers waiting to be posted again go home; posting to an error QP
	 * would only flush them */
	ep_recv_drop_reposts(ep);
	ep->flush_seq = ep->credit.sq_pi;
	marker.wr_id = rdp_wrid(RDP_WRK_RECLAIM, ep->slot, ep->flush_seq);
	if (rdp_post_send(ep->qp, &marker, 1, &err) != 1) {
		/* the QP keeps one physical slot beyond S for this marker */
		EP_LOG(ERR, "endpoint %u: flush marker refused (%d); sends not "
		       "completed are reported failed", ep->id, err);
		ep->err_seq = 0;
		ep_phase_set(ep, EP_PH_FLUSHED);
	}
	ep_busy(ep);
}

/* Count how it ended (retire(), the poller): struct rdp_ep_counters. */
static void
count_retired(struct rdp_ep *ep)
{
	struct rdp_ep_counters *c = &ep->lc->counters;

	RDP_STAT_ADD(c->enomem, ep->stats.enomem);
	RDP_STAT_ADD(c->rnr, ep->stats.rnr);
	if (!ep->announced) {
		RDP_STAT_ADD(c->handshake_failed, 1);
		return;
	}
	if (ep->closing) {
		RDP_STAT_ADD(c->closed, 1);
		if (ep->fail_why != NULL && ep->err == -ETIMEDOUT)
			RDP_STAT_ADD(c->drain_timeouts, 1);
		return;
	}
	if (ep->peer_closed) {
		RDP_STAT_ADD(c->peer_closed, 1);
		return;
	}
	RDP_STAT_ADD(c->failed, 1);
	switch (ep->err) {
	case -ECONNRESET: RDP_STAT_ADD(c->failed_peer_gone, 1); break;
	case -ECONNABORTED: RDP_STAT_ADD(c->failed_flushed, 1); break;
	case -ETIMEDOUT: RDP_STAT_ADD(c->failed_retry_exceeded, 1); break;
	case -ENOBUFS: RDP_STAT_ADD(c->failed_rnr, 1); break;
	case -EACCES: RDP_STAT_ADD(c->failed_remote_access, 1); break;
	case -EREMOTEIO: RDP_STAT_ADD(c->failed_remote_error, 1); break;
	case -EIO: RDP_STAT_ADD(c->failed_device, 1); break;
	case -ENETDOWN: RDP_STAT_ADD(c->failed_link_down, 1); break;
	case -EPROTO: RDP_STAT_ADD(c->failed_protocol, 1); break;
	default: RDP_STAT_ADD(c->failed_other, 1); break;
	}
}

/*
 * The end of the poller's part: nothing of the endpoint is in flight any
 * more (or nothing ever was). Its events are queued; the control thread
 * hears of it when it still holds the endpoint's socket, and otherwise the
 * engine's reference goes here. That may release the endpoint: the caller
 * touches it no more.
 */
static void
retire(struct rdp_ep *ep)
{
	ep_phase_set(ep, EP_PH_RETIRED);
	count_retired(ep);
	/* not the last reference: the engine's goes below or after the handover */
	ep_held_ref_settle(ep);
	if (ep->closing) {
		/* the control side's failure came after our notice was posted */
		if (ep->close_sent && ep->fail_why != NULL && ep->err != -ETIMEDOUT &&
		    ep->close_seq >= ep->err_seq)
			log_unfinished_close(ep, ep->fail_why);
		ep_set_state(ep, RDP_EP_CLOSED);
		ep_ev_state(ep, RDP_EP_CLOSED, 0);
	} else if (ep->peer_closed) {
		ep_set_state(ep, RDP_EP_PEER_CLOSED);
		if (ep->app_visible)
			ep_ev_state(ep, RDP_EP_PEER_CLOSED, 0);
	} else {
		if (ep->fail_why != NULL && ep->announced)
			log_failure(ep, ep->err, ep->fail_why);
		ep_set_state(ep, RDP_EP_FAILED);
		if (ep->app_visible)
			ep_ev_state(ep, RDP_EP_FAILED, ep->err != 0 ? ep->err : -ECONNABORTED);
	}
	if (ep->ctl_keeps) {
		ctl_retire(ep);
		return;
	}
	if (ep->cq_reserved > 0)
		rdp_poller_unreserve(ep->lc->poller, ep->ld->idx, ep->cq_reserved);
	ep->cq_reserved = 0;
	ep_unref(ep); /* the engine's reference */
}

/* Received buffers of a message nobody will get: to their pool, or the SRQ. */
static void
recv_chain_drop(struct rdp_ep *ep, struct rdp_msg *m)
{
	if (ep->ld->srq == NULL) {
		rdp_pool_put_chain(m);
		return;
	}
	while (m != NULL) {
		struct rdp_msg *next = m->next;

		ep_recv_drop(ep, m);
		m = next;
	}
}

void
ep_finalize(struct rdp_ep *ep)
{
	int err = ep->err != 0 ? ep->err : -ECONNABORTED;
	uint64_t q;

	for (q = ep->credit.sq_ci; q < ep->credit.sq_pi; q++) {
		struct ep_track *t = &ep->track[q & ep->track_mask];

		if (t->msg != NULL) {
			ep_send_done(ep, t->msg, q < ep->err_seq ? 0 : err);
			t->msg = NULL;
		}
	}
	while (!txq_empty(&ep->txq))
		ep_send_done(ep, txq_pop(&ep->txq), err);
	while (ep->rd_head != NULL)
		ep_send_done(ep, ep_q_pop(&ep->rd_head, &ep->rd_tail), err);
	while (ep->fin_head != NULL)
		ep_send_done(ep, ep_q_pop(&ep->fin_head, &ep->fin_tail), err);
	ep->tx_seg = NULL;
	ep_rndv_finalize(ep, err);
	if (ep->rx_head != NULL) {
		recv_chain_drop(ep, ep->rx_head);
		ep->rx_head = ep->rx_tail = NULL;
	}
	while (ep->early_head != NULL)
		recv_chain_drop(ep, ep_q_pop(&ep->early_head, &ep->early_tail));
	/*
	 * Nothing is in flight any more. Destroy the QP here, on the thread
	 * that polls its CQ: a driver may touch the CQ when a QP goes away.
	 */
	if (rdp_qp_destroy(ep->qp) < 0)
		EP_LOG(ERR, "endpoint %u: QP destroy failed: %s", ep->id, rdp_err_msg());
	__atomic_store_n(&ep->qp, NULL, __ATOMIC_RELEASE);
	rdp_poller_slot_free(ep->lc->poller, ep->slot);
	/* a receive its QP took and not yet polled now goes back undelivered */
	ep_srq_unmap(ep);
	retire(ep);
}

void
ep_admit(struct rdp_ep *ep)
{
	if (unlikely(ep_phase_get(ep) != EP_PH_HANDOVER)) {
		/* one handover per endpoint (ep_phase_set() makes sure): a bug */
		EP_LOG(ERR, "endpoint %u handed over in phase %s: ignored", ep->id,
		       ep_phase_name(ep_phase_get(ep)));
		return;
	}
	if (ep->err == 0)
		ep->err = ep->early_err;
	if (ep->qp == NULL) {
		/* the handshake failed before a QP existed: nothing to flush */
		if (ep->slot != UINT32_MAX)
			rdp_poller_slot_free(ep->lc->poller, ep->slot);
		retire(ep);
		return;
	}
	if (ep->err != 0 || ep->closing) {
		/* receives were posted: flush them before the QP goes */
		ep_set_state(ep, ep->closing ? RDP_EP_DRAINING : RDP_EP_FAILED);
		ep_flush_qp(ep);
		return;
	}
	if (!ep->app_visible) {
		/* an accepted endpoint: the application holds it from now on */
		atomic_fetch_add(&ep->refs, 1);
		__atomic_store_n(&ep->app_visible, true, __ATOMIC_RELEASE);
	}
	ep->announced = true;
	RDP_STAT_ADD(ep->lc->counters.opened, 1);
	ep_phase_set(ep, EP_PH_ESTABLISHED);
	ep_set_state(ep, RDP_EP_ESTABLISHED);
	/* ESTABLISHED first, then what a fast peer sent before the admission */
	ep_ev_state(ep, RDP_EP_ESTABLISHED, 0);
	while (ep->early_head != NULL)
		ep_ev_push(ep, ep_q_pop(&ep->early_head, &ep->early_tail));
	if (ep->peer_closed) {
		/* its close notice came with them: they are delivered, then it goes */
		ep->peer_closed = false;
		ep_peer_closed(ep);
	}
	ep_busy(ep);
}

void
ep_close_local(struct rdp_ep *ep)
{
	enum ep_phase ph = ep_phase_get(ep);

	ep->closing = true;
	if (ph >= EP_PH_RETIRED) {
		if (ep_get_state(ep) != RDP_EP_CLOSED) {
			ep_set_state(ep, RDP_EP_CLOSED);
			ep_ev_state(ep, RDP_EP_CLOSED, 0);
		}
		return;
	}
	if (ph == EP_PH_ESTABLISHED) {
		ep_phase_set(ep, EP_PH_DRAINING);
		ep_set_state(ep, RDP_EP_DRAINING);
	}
	ep_busy(ep);
}

void
ep_release_on_poller(struct rdp_ep *ep)
{
	/* the busy list may still point at it: release it once it is visited */
	if (ep->busy.queued) {
		ep_phase_set(ep, EP_PH_RELEASING);
		return;
	}
	ctl_release(ep);
}

/* ---------------------------------------------------------------------- */
/* The endpoint object                                                    */
/* ---------------------------------------------------------------------- */

struct rdp_ep *
ep_new(struct ep_lcore *lc, unsigned int dev, const struct rdp_ep_params *prm, bool app_visible)
{
	struct rdp_ep *ep;

	if (posix_memalign((void **)&ep, RTE_CACHE_LINE_SIZE, sizeof(*ep)) != 0) {
		rdp_err_set(ENOMEM, "out of memory for an endpoint");
		return NULL;
	}
	memset(ep, 0, sizeof(*ep));
	ep->lc = lc;
	ep->ld = &lc->dev[dev];
	ep->prm = *prm;
	ep->fd = -1;
	ep->slot = UINT32_MAX;
	ep->err_seq = UINT64_MAX;
	ep->rndv_above = ep->ld->rv_send != NULL ? lc->conf.rndv_threshold : UINT32_MAX;
	ep->busy.client = ep;
	ep->app_visible = app_visible;
	atomic_init(&ep->phase, EP_PH_HANDSHAKE);
	atomic_init(&ep->refs, app_visible ? 2 : 1);
	ep_set_state(ep, RDP_EP_CONNECTING);
	pthread_mutex_lock(&rdp_rt.lock);
	ep->id = ++rdp_rt.next_id;
	TAILQ_INSERT_TAIL(&rdp_rt.all, ep, all_next);
	pthread_mutex_unlock(&rdp_rt.lock);
	return ep;
}

void
ep_unref(struct rdp_ep *ep)
{
	void *item;

	if (atomic_fetch_sub(&ep->refs, 1) != 1)
		return;
	/* the owning poller may still have it on its busy list */
	if (rdp_poller_is_self(ep->lc->poller)) {
		ep_release_on_poller(ep);
		return;
	}
	item = tag_ptr(ep, TAG_RELEASE);
	while (rdp_poller_inbox_put(ep->lc->poller, &item, 1) != 1)
		usleep(10);
}

void
ep_free(struct rdp_ep *ep)
{
	int missing;

	ep_phase_set(ep, EP_PH_RELEASED);
	ep_rndv_leave_lines(ep);
	pthread_mutex_lock(&rdp_rt.lock);
	TAILQ_REMOVE(&rdp_rt.all, ep, all_next);
	pthread_mutex_unlock(&rdp_rt.lock);
	if (ep->cq_reserved > 0)
		rdp_poller_unreserve(ep->lc->poller, ep->ld->idx, ep->cq_reserved);
	missing = ep->ld->srq != NULL ? 0 : rdp_pool_destroy(ep->recv_pool);
	if (missing > 0)
		EP_LOG(ERR, "endpoint %u: %d receive buffers missing at release", ep->id, missing);
	free(ep->track);
	free(ep);
}
