/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rendezvous: messages longer than `rndv_threshold` (docs/architecture.md,
 * "Rendezvous"). The sender's message is one contiguous buffer of its
 * lcore's send arena, which the peer may READ. Its SEND carries only a
 * descriptor (RTS: number, length, address, key) from the header's own
 * pool buffer. The receiver takes a buffer of its receive arena, READs
 * the data into it, sends a FIN with the same number, and delivers the
 * message in its place among the others. The FIN completes the sender's
 * message: until then its buffer stays the peer's to read.
 *
 * Both control messages are SENDs with IMM_ACK | IMM_FIRST | IMM_LAST
 * and a payload: each takes a remote credit as a data chunk does and is
 * numbered with the endpoint's SENDs. Descriptors and FINs carry numbers
 * of their own, which must come in order: RC keeps them in order, and
 * READs complete in order, so both sides keep plain FIFOs.
 *
 * The receiver's READs and FINs do not wait behind its own messages. The
 * peer may hold every credit in messages it cannot answer until its send
 * arena frees, which only FINs do, or until the message its descriptor
 * answers is done, which only its FIN does: so READs (no credit) and FINs
 * go before the send queue, a descriptor brings the credit its FIN spends
 * (from the FIN reserve of the sender's SRQ, or from receives its RQ keeps
 * beyond the window, ep->fin_reserve), and from the moment a descriptor arrives the
 * send queue leaves that credit for its FIN (ep->fins_due, ep_post_sends()).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <rte_byteorder.h>

#include "ep_private.h"

/* Control message kinds (byte 0). */
enum { RV_RTS = EP_CM_RTS, RV_FIN = EP_CM_FIN };

/* Wire layout, little-endian. RTS: kind, 3 zero bytes, number, length,
 * address, key, 4 zero bytes. FIN: kind, 3 zero bytes, number. */
#define RV_RTS_LEN 32u
#define RV_FIN_LEN 8u

/* A READ moves at most this much: long messages go as several, pipelined. */
#define RV_READ_PART (1u << 20)

/*
 * A message not started yet starts its READs while those in flight and
 * its first fit in this many bytes, or when none is in flight: enough
 * to keep a NIC's pipe full (a bandwidth-delay product is well below it),
 * and on shm, where a READ is the receiver's own copy, the messages being
 * read take no more cache than that.
 */
#define RV_READ_BUDGET (1u << 20)

/*
 * An arena holds this many bytes when rndv_pool_size = 0, or one message
 * of max_msg_size when that is more: four messages of the default
 * max_msg_size, enough to keep a NIC's pipe full towards a few peers.
 */
#define RV_ARENA_DEFAULT (4u << 20)

/*
 * Where a READ is the receiving CPU's copy (shm), the send arena is what
 * the receivers copy from: one read budget of it stays in the receiving
 * core's caches with the message's destination, while a buffer of four
 * has left them by its turn. Its automatic size holds that budget, and no
 * more of it is in use at once unless one message takes more.
 */
static bool
send_arena_for_cpu(const struct ep_lcore_dev *ld)
{
	return ld->lc->conf.rndv_pool_size == 0 && ld->dv->attr.onesided_by_cpu;
}

size_t
ep_rndv_arena_size(const struct ep_lcore_dev *ld, bool send)
{
	const struct rdp_cfg_lcore *c = &ld->lc->conf;

	if (c->rndv_pool_size != 0)
		return c->rndv_pool_size;
	return RTE_MAX(send && send_arena_for_cpu(ld) ? RV_READ_BUDGET : RV_ARENA_DEFAULT,
		       (size_t)c->max_msg_size);
}

size_t
ep_rndv_send_limit(const struct ep_lcore_dev *ld)
{
	return send_arena_for_cpu(ld) ? RV_READ_BUDGET : 0;
}

/* What the receiver keeps of a descriptor, in its receive buffer. */
struct rv_in {
	uint64_t raddr;
	uint64_t len;
	uint64_t issued;   /* bytes whose READ is queued */
	uint64_t done;     /* bytes read */
	uint32_t rkey;
	uint32_t token;
	bool fin_owed;     /* read, its FIN not queued yet (no carrier free) */
};
_Static_assert(sizeof(struct rv_in) <= 64, "kept in the smallest receive buffer");

static inline void
put32(uint8_t *p, uint32_t v)
{
	v = rte_cpu_to_le_32(v);
	memcpy(p, &v, 4);
}

static inline void
put64(uint8_t *p, uint64_t v)
{
	v = rte_cpu_to_le_64(v);
	memcpy(p, &v, 8);
}

static inline uint32_t
get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return rte_le_to_cpu_32(v);
}

static inline uint64_t
get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return rte_le_to_cpu_64(v);
}

/* The pool buffer of a header, whatever its data points at now. */
static inline uint8_t *
own_buf(const struct rdp_msg *m)
{
	return rdp_pool_buf(m->pool, rdp_pool_msg_idx(m->pool, m));
}

static inline struct rv_in *
rv_in_of(const struct rdp_msg *m)
{
	return (struct rv_in *)own_buf(m);
}

/* ---------------------------------------------------------------------- */
/* Sender                                                                 */
/* ---------------------------------------------------------------------- */

int
ep_rndv_alloc(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, uint32_t len)
{
	struct rdp_arena *a = ep->ld->rv_send;
	void *bufs[RDP_ARENA_BULK_MAX];
	uint16_t i, k;

	if (a == NULL) {
		rte_errno = EMSGSIZE;
		return -EMSGSIZE;
	}
	if (rdp_pool_get_bulk(ep->ld->send_pool, msgs, n) < 0) {
		rte_errno = ENOBUFS;
		return -ENOBUFS;
	}
	/* all at once (up to the arena's bulk), in turn with the lcore's other endpoints */
	for (i = 0; i < n; i += k) {
		uint16_t j;
		int ret;

		k = (uint16_t)RTE_MIN((unsigned int)(n - i), RDP_ARENA_BULK_MAX);
		ret = rdp_arena_alloc_bulk_in_turn(a, len, bufs, k, &ep->rv_send_turn);
		if (ret < 0) {
			while (i-- > 0)
				rdp_arena_free(a, msgs[i]->data, len);
			rdp_pool_put_bulk(ep->ld->send_pool, msgs, n);
			rte_errno = -ret;
			return ret;
		}
		for (j = 0; j < k; j++) {
			struct rdp_msg *m = msgs[i + j];

			m->data = bufs[j];
			m->data_len = len;
			m->pkt_len = len;
			m->flags = MSG_F_RNDV;
			m->ep = ep;
		}
	}
	return 0;
}

void
ep_rndv_release(struct rdp_msg *m)
{
	const struct ep_lcore_dev *ld = m->ep->ld;

	rdp_arena_free(m->flags & MSG_F_RECV ? ld->rv_recv : ld->rv_send, m->data, m->pkt_len);
	m->flags &= (uint8_t)~MSG_F_RNDV;
	m->data = own_buf(m);
}

uint32_t
ep_rndv_payload(struct rdp_ep *ep, struct rdp_msg *m, uint64_t *addr, uint32_t *lkey)
{
	uint8_t *b = own_buf(m);

	*addr = (uintptr_t)b;
	*lkey = m->pool->lkey;
	if (m->flags & MSG_F_CTRL)
		return RV_FIN_LEN; /* written when it was queued */
	memset(b, 0, RV_RTS_LEN);
	b[0] = RV_RTS;
	put32(b + 4, ep->rv_out_seq++);
	put64(b + 8, m->pkt_len);
	put64(b + 16, (uintptr_t)m->data);
	put32(b + 24, ep->ld->rv_send->mr->rkey);
	return RV_RTS_LEN;
}

void
ep_rndv_sent(struct rdp_ep *ep, struct rdp_msg *m, int status)
{
	if (m->flags & MSG_F_CTRL) {
		/* a FIN: nobody to tell (a failed one fails its endpoint anyway) */
		rdp_pool_put_bulk(m->pool, &m, 1);
		return;
	}
	if (status != 0) {
		ep_msg_report(ep, m, status);
		return;
	}
	if (ep->rv_fin_early > 0) {
		/* its FIN overtook this completion (fin_received()): done */
		ep->rv_fin_early--;
		if (ep_msg_account(ep, m, 0))
			ep_report_push(ep, m);
		ep_busy(ep);
		return;
	}
	/* the descriptor is there: the peer reads the buffer, then says FIN;
	 * until then its report and every later one wait (ep_report_push()) */
	m->event = RDP_EV_NONE;
	ep_q_push(&ep->rv_out_head, &ep->rv_out_tail, m);
}

/* Reports held behind a FIN go to the application, up to the next message waiting. */
static void
rv_out_release(struct rdp_ep *ep)
{
	while (ep->rv_out_head != NULL && ep->rv_out_head->event != RDP_EV_NONE)
		ep_ev_push(ep, ep_q_pop(&ep->rv_out_head, &ep->rv_out_tail));
}

/* A FIN: the oldest message waiting for one is delivered. */
static void
fin_received(struct rdp_ep *ep, uint32_t token)
{
	struct rdp_msg *m;

	/*
	 * The head of rv_out is always a message waiting for its FIN. The FIN
	 * may also overtake the completion of its descriptor's SEND (the two
	 * are on different queues: an SRQ's receives are reaped before the
	 * sender's completions of the same run); the descriptor was posted,
	 * and its completion finds the FIN counted (ep_rndv_sent()).
	 */
	if (token != ep->rv_fin_seq || (int32_t)(ep->rv_out_seq - token) <= 0) {
		ep_fail(ep, -EPROTO, "peer %s broke the rendezvous protocol: FIN field 'number' = "
			"%u, expected %u (%s)", ep->peer, token, ep->rv_fin_seq,
			token == ep->rv_fin_seq ? "no descriptor was sent for it" : "out of order");
		return;
	}
	ep->rv_fin_seq++;
	if (ep->fin_reserve > 0)
		ep->fin_credits++; /* the next descriptor may bring it again */
	if (ep->rv_out_head == NULL) {
		ep->rv_fin_early++;
		return;
	}
	m = ep_q_pop(&ep->rv_out_head, &ep->rv_out_tail);
	if (ep_msg_account(ep, m, 0))
		ep_ev_push(ep, m);
	rv_out_release(ep);
	ep_busy(ep); /* a drain may be waiting for it */
}

/* ---------------------------------------------------------------------- */
/* Receiver                                                               */
/* ---------------------------------------------------------------------- */

/* Queue the FIN of descriptor @p token; false when no carrier is free now. */
static bool
fin_queue(struct rdp_ep *ep, uint32_t token)
{
	struct rdp_msg *c;
	uint8_t *b;

	if (rdp_pool_get_bulk(ep->ld->send_pool, &c, 1) < 0)
		return false;
	b = c->data;
	memset(b, 0, RV_FIN_LEN);
	b[0] = RV_FIN;
	put32(b + 4, token);
	c->data_len = RV_FIN_LEN;
	c->pkt_len = RV_FIN_LEN;
	c->flags = MSG_F_CTRL;
	c->ep = ep;
	ep_q_push(&ep->fin_head, &ep->fin_tail, c);
	ep_busy(ep);
	return true;
}

/* Why a descriptor is refused, or NULL. */
static const char *
rts_check(const struct rdp_ep *ep, const uint8_t *b, uint32_t byte_len, uint64_t *value)
{
	uint64_t len = get64(b + 8), addr = get64(b + 16);

	*value = byte_len;
	if (byte_len != RV_RTS_LEN)
		return "length of the message";
	*value = get32(b + 4);
	if (*value != ep->rv_in_seq)
		return "number";
	*value = len;
	if (len == 0 || len > ep->lc->conf.max_msg_size || ep->ld->rv_recv == NULL ||
	    len > rdp_arena_size(ep->ld->rv_recv))
		return "length";
	*value = addr;
	if (addr + len < addr)
		return "address";
	*value = (uint64_t)b[1] | (uint64_t)b[2] << 8 | (uint64_t)b[3] << 16 |
		 (uint64_t)get32(b + 28) << 24;
	if (*value != 0)
		return "padding";
	return NULL;
}

/* A descriptor that passed rts_check(), in receive buffer @p m. */
static void
rts_received(struct rdp_ep *ep, struct rdp_msg *m)
{
	const uint8_t *b = own_buf(m);
	struct rv_in in = {
		.raddr = get64(b + 16),
		.len = get64(b + 8),
		.rkey = get32(b + 24),
		.token = get32(b + 4),
	};

	ep->rv_in_seq++;
	ep->fins_due++;
	if (ep->closing) {
		/* closed by the application: nobody to give it to; the FIN lets the
		 * peer's message go (as a chunked one's completion would) */
		if (!fin_queue(ep, in.token)) {
			ep_fail(ep, -ENOBUFS, "no send buffer for the FIN of a rendezvous message "
				"that arrived after the close");
			ep_recv_drop(ep, m);
			return;
		}
		ep_recv_return(ep, m);
		return;
	}
	if (ep->ld->srq != NULL) {
		struct rdp_msg *h;

		/*
		 * A leased receiver keeps no SRQ buffer for the message: its FIN
		 * needs a credit, and the peer's credits come back as its buffers
		 * do, so descriptors held until their FIN could hold every credit
		 * of both sides. A send buffer carries the message from here; the
		 * descriptor's buffer goes back to the SRQ now, its credit owed.
		 */
		if (rdp_pool_get_bulk(ep->ld->send_pool, &h, 1) == 0) {
			ep_srq_repost(ep, m, true);
			m = h;
		}
	}
	*rv_in_of(m) = in;
	m->data_len = (uint32_t)in.len;
	m->pkt_len = (uint32_t)in.len;
	m->nb_segs = 1;
	m->event = RDP_EV_RECV;
	m->flags = MSG_F_RECV | MSG_F_PENDING;
	m->status = 0;
	m->ep = ep;
	m->next = NULL;
	if (ep->rv_in_tail != NULL)
		ep->rv_in_tail->next = m;
	else
		ep->rv_in_head = m;
	ep->rv_in_tail = m;
	/* its place among the messages: deliveries stop there until it is read */
	if (!ep->announced)
		ep_q_push(&ep->early_head, &ep->early_tail, m);
	else
		ep_ev_push(ep, m);
}

void
ep_rndv_recv(struct rdp_ep *ep, struct rdp_msg *m, uint32_t byte_len)
{
	const uint8_t *b = own_buf(m);
	const char *bad;
	uint64_t value;

	/* a FIN goes between two chunks of a message, nothing else does (ep_post_sends()) */
	if (unlikely(ep->frame.in_msg) && (byte_len < 1 || b[0] != RV_FIN)) {
		ep_recv_drop(ep, m);
		ep_fail(ep, -EPROTO, "peer %s broke the protocol: control message field 'kind' "
			"= %u inside a message (only a FIN, %u, may come between its chunks)",
			ep->peer, byte_len >= 1 ? b[0] : 0, RV_FIN);
		return;
	}
	if (byte_len >= 1 && b[0] == RV_FIN) {
		uint32_t token = byte_len == RV_FIN_LEN ? get32(b + 4) : 0;
		bool pad_ok = byte_len == RV_FIN_LEN && b[1] == 0 && b[2] == 0 && b[3] == 0;

		/* it spent the credit its descriptor brought, which stays here:
		 * in the SRQ's FIN reserve, or in ours (fin_received()) */
		if (ep->srq_member) {
			if (!ep_srq_fin_recv(ep, m))
				return;
		} else if (ep->fin_reserve > 0) {
			ep_recv_return_reserved(ep, m);
		} else {
			ep_recv_return(ep, m);
		}
		if (!pad_ok) {
			ep_fail(ep, -EPROTO, "peer %s broke the rendezvous protocol: FIN of %u "
				"bytes (field 'length' or 'padding'), expected %u zero-padded",
				ep->peer, byte_len, RV_FIN_LEN);
			return;
		}
		fin_received(ep, token);
		return;
	}
	if (byte_len >= 1 && b[0] == EP_CM_GIVEBACK) {
		ep_srq_give_back_recv(ep, m, byte_len);
		return;
	}
	if (byte_len >= 1 && b[0] == EP_CM_CLOSE) {
		bool pad_ok = byte_len == EP_CM_CLOSE_LEN && b[1] == 0 && b[2] == 0 && b[3] == 0;

		ep_recv_return(ep, m);
		if (!pad_ok) {
			ep_fail(ep, -EPROTO, "peer %s broke the protocol: close notice of %u bytes "
				"(field 'length' or 'padding'), expected %u zero-padded", ep->peer,
				byte_len, EP_CM_CLOSE_LEN);
			return;
		}
		ep_peer_closed(ep);
		return;
	}
	if (byte_len < 1 || b[0] != RV_RTS) {
		ep_recv_drop(ep, m);
		ep_fail(ep, -EPROTO, "peer %s broke the protocol: control message field 'kind' "
			"= %u, expected %u (descriptor), %u (FIN), %u (give-back) or %u (close "
			"notice)", ep->peer, byte_len >= 1 ? b[0] : 0, RV_RTS, RV_FIN,
			EP_CM_GIVEBACK, EP_CM_CLOSE);
		return;
	}
	if (ep->credit.rd_depth == 0) {
		/* the handshake agreed on no READ this way: the peer may not ask for one */
		ep_recv_drop(ep, m);
		ep_fail(ep, -EPROTO, "peer %s broke the rendezvous protocol: a descriptor, but "
			"this endpoint issues no READ (read depth 0 agreed in the handshake)",
			ep->peer);
		return;
	}
	bad = rts_check(ep, b, byte_len, &value);
	if (bad != NULL) {
		ep_recv_drop(ep, m);
		ep_fail(ep, -EPROTO, "peer %s broke the rendezvous protocol: descriptor field "
			"'%s' = %" PRIu64 " (0x%" PRIx64 ") refused (number expected %u, "
			"max_msg_size %u)", ep->peer, bad, value, value, ep->rv_in_seq,
			ep->lc->conf.max_msg_size);
		return;
	}
	rts_received(ep, m);
}

/* Retire the read descriptors at the head: FIN out, message ready. */
static unsigned int
retire_read(struct rdp_ep *ep)
{
	unsigned int work = 0;

	while (ep->rv_in_head != NULL) {
		struct rdp_msg *m = ep->rv_in_head;
		struct rv_in *in = rv_in_of(m);

		if (in->done < in->len)
			break;
		if (!fin_queue(ep, in->token)) {
			in->fin_owed = true;
			ep_busy(ep); /* again on the next pass */
			break;
		}
		ep->rv_in_head = m->next;
		if (ep->rv_in_head == NULL)
			ep->rv_in_tail = NULL;
		m->next = NULL;
		m->flags &= (uint8_t)~MSG_F_PENDING;
		RDP_STAT_ADD(ep->stats.msgs_received, 1);
		RDP_STAT_ADD(ep->stats.bytes_received, m->pkt_len);
		ep_busy(ep); /* its delivery */
		work++;
	}
	return work;
}

/* Queue READs for @p m while read slots last; false when it must wait. */
static bool
issue_reads(struct rdp_ep *ep, struct rdp_msg *m)
{
	struct rv_in *in = rv_in_of(m);
	uint32_t depth = RTE_MAX(ep->credit.rd_depth, 1u);

	if (!(m->flags & MSG_F_RNDV)) {
		void *p;

		if (ep->rv_reads > 0 &&
		    ep->rv_read_bytes + RTE_MIN((uint64_t)RV_READ_PART, in->len) > RV_READ_BUDGET)
			return false; /* a READ done brings it on (ep_rndv_read_done()) */
		p = rdp_arena_alloc_in_turn(ep->ld->rv_recv, in->len, &ep->rv_recv_turn);

		if (p == NULL)
			return false; /* freed buffers make room: try on the next pass */
		m->data = p;
		m->flags |= MSG_F_RNDV;
	}
	while (in->issued < in->len && ep->rv_reads < depth) {
		uint32_t part = (uint32_t)RTE_MIN((uint64_t)RV_READ_PART, in->len - in->issued);
		struct rdp_msg *c;

		if (rdp_pool_get_bulk(ep->ld->send_pool, &c, 1) < 0)
			return false;
		ep_rdma_queue_internal(ep, c, m, (uintptr_t)m->data + in->issued,
				       ep->ld->rv_recv->mr->lkey, in->raddr + in->issued, in->rkey,
				       part);
		in->issued += part;
		ep->rv_reads++;
		ep->rv_read_bytes += part;
	}
	return in->issued == in->len;
}

unsigned int
ep_rndv_progress(struct rdp_ep *ep)
{
	unsigned int work = retire_read(ep);
	struct rdp_msg *m;

	for (m = ep->rv_in_head; m != NULL; m = m->next) {
		if (!issue_reads(ep, m)) {
			ep_busy(ep);
			break;
		}
	}
	return work;
}

void
ep_rndv_read_done(struct rdp_ep *ep, struct rdp_msg *c, struct rdp_msg *owner, int status)
{
	uint32_t len = c->pkt_len;

	rdp_pool_put_bulk(c->pool, &c, 1);
	ep->rv_reads--;
	ep->rv_read_bytes -= len;
	if (status != 0)
		return; /* the endpoint fails: ep_rndv_finalize() drops the message */
	rv_in_of(owner)->done += len;
	retire_read(ep);
	if (ep->rv_in_head != NULL)
		ep_busy(ep); /* more READs may go */
}

/* Unlink every pending message from a queue; returns how many. */
static void
drop_pending(struct rdp_ep *ep, struct rdp_msg **head, struct rdp_msg **tail)
{
	struct rdp_msg *keep_h = NULL, *keep_t = NULL;

	while (*head != NULL) {
		struct rdp_msg *m = ep_q_pop(head, tail);

		if (!(m->flags & MSG_F_PENDING)) {
			ep_q_push(&keep_h, &keep_t, m);
			continue;
		}
		if (m->flags & MSG_F_RNDV)
			ep_rndv_release(m);
		m->flags = 0;
		m->next = NULL;
		ep_recv_drop(ep, m);
	}
	*head = keep_h;
	*tail = keep_t;
}

void
ep_rndv_finalize(struct rdp_ep *ep, int err)
{
	while (ep->rv_out_head != NULL) {
		struct rdp_msg *m = ep_q_pop(&ep->rv_out_head, &ep->rv_out_tail);

		/* waiting for a FIN: failed; held behind one: as it completed */
		if (m->event != RDP_EV_NONE || ep_msg_account(ep, m, err))
			ep_ev_push(ep, m);
	}
	/* received descriptors not read: the peer reports their messages failed */
	drop_pending(ep, &ep->ev_head, &ep->ev_tail);
	drop_pending(ep, &ep->early_head, &ep->early_tail);
	ep->rv_in_head = ep->rv_in_tail = NULL;
	ep->rv_reads = 0;
	ep->rv_read_bytes = 0;
	ep->fins_due = 0;
	ep_rndv_leave_lines(ep);
}

void
ep_rndv_leave_lines(struct rdp_ep *ep)
{
	if (ep->ld->rv_send != NULL)
		rdp_arena_turn_leave(ep->ld->rv_send, &ep->rv_send_turn);
	if (ep->ld->rv_recv != NULL)
		rdp_arena_turn_leave(ep->ld->rv_recv, &ep->rv_recv_turn);
}
