/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The credit protocol under fire: two endpoints driven by lib/credit over
 * the QP-pair simulator (qp_sim.h), with completions in FIFO, recv-first or
 * random order (optionally with send completions out of order), random
 * parameters on each side, and random applications: one-way, two-way and
 * request/response traffic, bursts, pauses and slow frees in any order,
 * and one-sided WRITEs and READs mixed with the messages (a random read
 * depth; a READ that takes the last read slot signaled, none beyond the
 * depth, each operation completed once). Apart: requests held until the
 * FIN of their rendezvous reply, with the FIN reserve and two mutants of
 * it that must break.
 *
 * After every step: no post ever fails (SQ occupancy <= S), no RNR, the CQ
 * holds at most S + R completions (2S + R when send completions reorder), the policy's SQ count equals the NIC's,
 * credits are conserved, pure acks in flight fit the peer's reserve. Every
 * message is delivered exactly once and in order; every send buffer and
 * every receive buffer is released exactly once.
 *
 * The same harness with the legacy window (apps/test/legacy_window.h) must
 * run into a full SQ.
 *
 * The seed comes from RDP_SEED, else from the clock; it is printed first,
 * and every failure names it: RDP_SEED=<seed> rdp-test <test> reruns it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "legacy_window.h"
#include "qp_sim.h"
#include "rdp_credit.h"
#include "rdp_test.h"

enum traffic { ONE_WAY, TWO_WAY, REQ_RESP, REQ_HELD };

static const char *const traffic_name[] = { "one-way", "two-way", "req/resp",
					    "requests held until their rendezvous reply" };

/*
 * REQ_HELD: side 1 holds each request until the FIN of its reply, a
 * rendezvous descriptor, arrives (docs/credit-protocol.md, "Rendezvous").
 * HELD_RESERVE is lib/ep's rule: the holder announces R - F and each
 * descriptor brings one of the F credits; the mutants must break: one
 * grants FIN credits without keeping the receives (an RNR), the other
 * keeps none and grants none, as before the reserve (a deadlock once
 * requests hold every credit).
 */
enum held_mode { HELD_OFF, HELD_RESERVE, HELD_MUTANT_NO_RESERVE, HELD_MUTANT_NO_GRANT };
static const char *const order_name[] = { "fifo", "recv-first", "random" };

/* How the applications and the poller behave during one segment. */
struct behaviour {
	enum traffic traffic;
	uint32_t burst_max;	/* messages handed over at once, at most */
	uint32_t pause_pct;	/* chance per round that a producer starts a pause */
	uint32_t pause_max;	/* rounds a pause lasts, at most */
	uint32_t free_pct;	/* chance per round that a receiver frees messages */
	uint32_t free_max;	/* messages freed at once, at most */
	uint32_t poll_max;	/* completions per poll, at most */
	uint32_t exec_max;	/* WRs the NIC executes per round, at most */
	uint32_t post_max;	/* WRs the endpoint posts per call, at most */
	uint32_t req_depth;	/* req/resp: requests outstanding, at most */
};

enum wr_kind { WR_DATA, WR_ACK, WR_RECLAIM, WR_WRITE, WR_READ, WR_FIN };
#define KIND_SHIFT RDP_CREDIT_SEQ_BITS

enum rbuf_state { RBUF_POSTED = 1, RBUF_CONSUMED, RBUF_HELD };

struct slot {
	uint64_t seq;
	uint8_t busy;
	uint8_t kind;
};

struct sim_ep {
	unsigned int id;
	struct qp_sim_qp *qp;
	struct sim_ep *peer;
	bool legacy;
	struct rdp_credit_params p;
	struct rdp_credit cr;		/* ours */
	struct legacy_window lw;	/* legacy sender */
	uint64_t lg_pi, lg_ci;		/* legacy: WR sequence numbers */
	uint32_t lg_owed;		/* legacy: credits owed */
	struct slot *slot;		/* send buffers by sequence number % S */
	/* the application */
	uint64_t to_hand;		/* messages still to hand over */
	uint64_t backlog;		/* handed over, not posted */
	uint64_t tx_msg;		/* next message id to post */
	uint64_t rx_msg;		/* next message id expected */
	uint32_t pause;			/* rounds left in a pause */
	uint64_t outstanding;		/* req/resp: requests not answered */
	bool responder;			/* req/resp: answers what it receives */
	uint8_t *rbuf;			/* receive buffer states */
	uint32_t *held;			/* buffers the application holds */
	uint32_t n_held;
	/* what is on the wire towards the peer */
	uint64_t data_in_flight;	/* data WRs posted, not polled by the peer */
	uint64_t credits_in_flight;	/* credits they carry, not polled */
	uint64_t acks_in_flight;	/* pure acks posted, not polled */
	/* outcome */
	uint64_t delivered;		/* messages received */
	uint64_t data_released;		/* data send buffers released */
	/* one-sided operations (ours only) */
	uint64_t ops_to_hand;		/* still to hand over */
	uint64_t ops_backlog;		/* handed over, not posted */
	uint64_t ops_posted;
	uint64_t ops_done;		/* covered by a polled completion */
	uint32_t rd_depth;		/* agreed read depth (both sides serve it) */
	uint32_t rd_out;		/* READs posted, not covered */
	bool next_read;			/* the next operation is a READ */
	uint64_t overflow_at;		/* legacy: message posted into a full SQ, or 0 */
	bool overflow_by_ack;		/* legacy: that post was a pure ack */
	/* REQ_HELD */
	uint32_t window;		/* C it announced: R - A_rq, less its FIN reserve */
	bool holder;			/* holds requests until their reply's FIN */
	bool grants_fin;		/* a descriptor brings a FIN credit */
	uint32_t fin_reserve;		/* F: receives kept beyond the window */
	uint32_t fin_credits;		/* of those, what descriptors may still bring */
	uint32_t fins_due;		/* requester: descriptors whose FIN is not posted */
	uint32_t *reqs;			/* holder: requests held, oldest first (a ring) */
	uint32_t req_head, req_count;
	uint64_t descs_sent, fins_sent, fins_got;
	uint64_t fin_waits;		/* holder: a descriptor waited for a FIN credit */
	uint32_t reqs_most;		/* holder: most requests held at once */
};

struct run {
	uint64_t rng;
	struct behaviour b;
	struct qp_sim sim;
	struct sim_ep ep[2];
	uint64_t round;
	uint64_t progress_round;	/* last round anything was delivered */
	uint32_t cq_budget[2];		/* S + R; 2S + R if send completions reorder */
	enum held_mode held;
	const char *broke;		/* a mutant's run: how it broke, or NULL */
};

static uint64_t base_seed;
static char where[256];

#define SIM_ASSERT(cond, ...) do { \
	if (unlikely(!(cond))) { \
		fprintf(stderr, "%s\n", where); \
		rdp_test_fail(__FILE__, __LINE__, __VA_ARGS__); \
	} \
} while (0)

static uint64_t
mix(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return (x ^ (x >> 31)) | 1;
}

static uint64_t
seed_from_env(void)
{
	const char *s = getenv("RDP_SEED");
	struct timespec ts;

	if (s != NULL && s[0] != '\0')
		base_seed = strtoull(s, NULL, 0);
	else {
		clock_gettime(CLOCK_REALTIME, &ts);
		base_seed = mix((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
				(uint64_t)getpid());
	}
	printf("seed %" PRIu64 " (RDP_SEED=%" PRIu64 " reruns this test)\n", base_seed,
	       base_seed);
	fflush(stdout);
	return base_seed;
}

static uint32_t
between(uint64_t *rng, uint32_t lo, uint32_t hi)
{
	return lo + qp_sim_below(rng, hi - lo + 1);
}

static uint32_t
div_ceil(uint32_t a, uint32_t b)
{
	return (a + b - 1) / b;
}

/* Random valid parameters for both sides (each side's reserve fits both). */
static void
random_params(uint64_t *rng, struct rdp_credit_params p[2], uint32_t max_q)
{
	uint32_t c[2], need;
	unsigned int i;

	for (i = 0; i < 2; i++) {
		p[i].sq_size = between(rng, 4, max_q);
		p[i].signal_interval = between(rng, 2, p[i].sq_size / 2);
		c[i] = between(rng, 1, max_q * 3 / 4);
		p[i].ack_threshold = between(rng, 1, c[i]);
	}
	need = RTE_MAX(div_ceil(c[0], p[0].ack_threshold), div_ceil(c[1], p[1].ack_threshold));
	for (i = 0; i < 2; i++) {
		p[i].ack_reserve = need + between(rng, 0, 1);
		p[i].rq_size = c[i] + p[i].ack_reserve;
	}
}

static void
random_behaviour(uint64_t *rng, struct behaviour *b)
{
	b->traffic = (enum traffic)qp_sim_below(rng, 3);
	b->burst_max = between(rng, 1, 64);
	b->pause_pct = qp_sim_below(rng, 3) == 0 ? between(rng, 1, 20) : 0;
	b->pause_max = between(rng, 1, 50);
	/* a third of the segments free slowly */
	b->free_pct = qp_sim_below(rng, 3) == 0 ? between(rng, 2, 15) : between(rng, 50, 100);
	b->free_max = between(rng, 1, 16);
	b->poll_max = between(rng, 1, 16);
	b->exec_max = between(rng, 1, 16);
	b->post_max = between(rng, 1, 16);
	b->req_depth = between(rng, 1, 32);
}

static void check(struct run *r);
static bool overflowed(const struct run *r);

/* ---- send side ---- */

static void
slot_take(struct sim_ep *e, uint64_t seq, enum wr_kind kind)
{
	struct slot *s = &e->slot[seq % e->p.sq_size];

	SIM_ASSERT(!s->busy, "side %u: seq %" PRIu64 " reuses the buffer of seq %" PRIu64
		   " before its release", e->id, seq, s->seq);
	*s = (struct slot){ .seq = seq, .busy = 1, .kind = (uint8_t)kind };
}

/* Release the send buffers of WRs [from, to): each exactly once. */
static void
slots_release(struct sim_ep *e, uint64_t from, uint64_t to)
{
	for (; from < to; from++) {
		struct slot *s = &e->slot[from % e->p.sq_size];

		SIM_ASSERT(s->busy && s->seq == from, "side %u: buffer of seq %" PRIu64
			   " released twice or never taken", e->id, from);
		s->busy = 0;
		if (s->kind == WR_DATA)
			e->data_released++;
		if (s->kind == WR_READ) {
			SIM_ASSERT(e->rd_out > 0, "side %u: a READ covered twice", e->id);
			e->rd_out--;
			rdp_credit_reads_completed(&e->cr, 1);
		}
		if (s->kind == WR_WRITE || s->kind == WR_READ)
			e->ops_done++;
	}
}

/* Post a WR; returns false when the SQ refused it (legacy only). */
static bool
post(struct sim_ep *e, uint64_t seq, enum wr_kind kind, bool signaled, uint32_t imm)
{
	struct qp_sim_wr wr = {
		.wr_id = (seq & RDP_CREDIT_SEQ_MASK) | (uint64_t)kind << KIND_SHIFT,
		/* one-sided WRs have no remote effect the protocol sees: as a reclaim */
		.opcode = kind == WR_DATA || kind == WR_ACK || kind == WR_FIN ? QP_SIM_SEND_IMM :
			  QP_SIM_WRITE_ZERO,
		.signaled = signaled,
		.imm = imm,
		/* a FIN is told by its length */
		.len = kind == WR_DATA ? 8 : kind == WR_FIN ? 4 : 0,
		.payload = kind == WR_DATA ? e->tx_msg : kind == WR_FIN ? e->fins_sent : 0,
	};

	if (qp_sim_post_send(e->qp, &wr) != 0) {
		SIM_ASSERT(e->legacy, "side %u: post of seq %" PRIu64 " failed: SQ %u/%u full",
			   e->id, seq, qp_sim_sq_used(e->qp), e->p.sq_size);
		return false;
	}
	slot_take(e, seq, kind);
	if (kind == WR_DATA || kind == WR_ACK || kind == WR_FIN)
		e->credits_in_flight += imm;
	if (kind == WR_FIN) {
		/* a data SEND in the peer's RQ, not a message of ours */
		e->data_in_flight++;
		e->fins_sent++;
	} else if (kind == WR_DATA) {
		e->data_in_flight++;
		e->tx_msg++;
		e->backlog--;
	} else if (kind == WR_ACK) {
		e->acks_in_flight++;
	}
	return true;
}

/* Our endpoint's send path: data first, a pure ack only when no data goes. */
static void
tx_ours(struct sim_ep *e, uint32_t budget)
{
	uint32_t n, credits;
	uint64_t seq;

	for (n = 0; n < budget; n++) {
		enum rdp_credit_verdict v;

		if (e->fins_due > 0) {
			/* FINs first, on any credit: the descriptor brought one */
			v = rdp_credit_data_check(&e->cr);
			if (v == RDP_CREDIT_GO_SIGNALED || v == RDP_CREDIT_GO_UNSIGNALED) {
				seq = rdp_credit_data_posted(&e->cr, v == RDP_CREDIT_GO_SIGNALED,
							     &credits);
				post(e, seq, WR_FIN, v == RDP_CREDIT_GO_SIGNALED, credits);
				e->fins_due--;
				continue;
			}
		}
		if (e->ops_backlog > 0) {
			/* a one-sided operation: an SQ slot, and for a READ a read slot */
			bool read = e->next_read;

			v = rdp_credit_rdma_check(&e->cr, read);
			if (v == RDP_CREDIT_GO_SIGNALED || v == RDP_CREDIT_GO_UNSIGNALED) {
				bool sig = v == RDP_CREDIT_GO_SIGNALED;

				SIM_ASSERT(!read || sig || e->rd_out + 1 < e->rd_depth,
					   "side %u: the READ that takes the last read slot is "
					   "unsignaled", e->id);
				seq = rdp_credit_rdma_posted(&e->cr, read, sig);
				post(e, seq, read ? WR_READ : WR_WRITE, sig, 0);
				if (read)
					e->rd_out++;
				SIM_ASSERT(e->rd_out <= e->rd_depth, "side %u: %u READs outstanding, "
					   "the peer serves %u", e->id, e->rd_out, e->rd_depth);
				e->ops_backlog--;
				e->ops_posted++;
				e->next_read = (mix(seq ^ e->ops_posted) & 1) != 0;
				continue;
			}
		}
		/* the credits of the FINs due stay for them; a descriptor waits
		 * for a FIN credit to bring */
		if (e->backlog > 0 && e->grants_fin && e->fin_credits == 0)
			e->fin_waits++;
		if (e->backlog > 0 && rdp_credit_may_send(&e->cr, 0, e->fins_due) &&
		    !(e->grants_fin && e->fin_credits == 0)) {
			v = rdp_credit_data_check(&e->cr);
			if (v == RDP_CREDIT_GO_SIGNALED || v == RDP_CREDIT_GO_UNSIGNALED) {
				if (e->grants_fin) {
					e->fin_credits--;
					rdp_credit_grant_reserved(&e->cr, 1);
				}
				if (e->holder)
					e->descs_sent++;
				seq = rdp_credit_data_posted(&e->cr, v == RDP_CREDIT_GO_SIGNALED,
							     &credits);
				post(e, seq, WR_DATA, v == RDP_CREDIT_GO_SIGNALED, credits);
				continue;
			}
		}
		v = rdp_credit_ack_check(&e->cr);
		if (v == RDP_CREDIT_GO_UNSIGNALED) {
			seq = rdp_credit_ack_posted(&e->cr, &credits);
			SIM_ASSERT(credits >= e->cr.ack_threshold, "ack carries %u", credits);
			post(e, seq, WR_ACK, false, credits);
		} else if (v == RDP_CREDIT_RECLAIM_FIRST) {
			seq = rdp_credit_reclaim_posted(&e->cr);
			post(e, seq, WR_RECLAIM, true, 0);
		} else {
			break;
		}
	}
}

/* The legacy send path: the window alone gates data; acks are signaled. */
static void
tx_legacy(struct sim_ep *e, uint32_t budget)
{
	uint32_t n, owed;
	bool sig;

	for (n = 0; n < budget && e->overflow_at == 0; n++) {
		if (e->backlog > 0 && legacy_window_can_send(&e->lw)) {
			sig = legacy_window_posted(&e->lw);
			owed = e->lg_owed;
			e->lg_owed = 0;
			if (!post(e, e->lg_pi, WR_DATA, sig, owed))
				e->overflow_at = e->tx_msg + 1;
			e->lg_pi++;
		} else if (e->lg_owed >= e->p.ack_threshold) {
			owed = e->lg_owed;
			e->lg_owed = 0;
			if (!post(e, e->lg_pi, WR_ACK, true, owed)) {
				e->overflow_at = e->tx_msg + 1;
				e->overflow_by_ack = true;
			}
			e->lg_pi++;
		} else {
			break;
		}
	}
}

static void
tx(struct sim_ep *e, uint32_t budget)
{
	if (e->legacy)
		tx_legacy(e, budget);
	else
		tx_ours(e, budget);
}

/* ---- receive side ---- */

static void
on_send_completion(struct sim_ep *e, const struct qp_sim_wc *wc)
{
	uint64_t low = wc->wr_id & RDP_CREDIT_SEQ_MASK, seq, old;

	if (e->legacy) {
		seq = e->lg_pi - ((e->lg_pi - low) & RDP_CREDIT_SEQ_MASK);
		if (seq + 1 > e->lg_ci) {
			slots_release(e, e->lg_ci, seq + 1);
			e->lg_ci = seq + 1;
		}
		return;
	}
	seq = rdp_credit_seq_expand(&e->cr, low);
	SIM_ASSERT(seq < e->cr.sq_pi, "side %u: completion of seq %" PRIu64 " never posted",
		   e->id, seq);
	old = e->cr.sq_ci;
	rdp_credit_send_completed(&e->cr, seq);
	slots_release(e, old, e->cr.sq_ci);
}

static void
on_recv(struct run *r, struct sim_ep *e, const struct qp_sim_wc *wc)
{
	struct sim_ep *f = e->peer;
	uint32_t buf = (uint32_t)wc->wr_id;

	SIM_ASSERT(buf < e->p.rq_size && e->rbuf[buf] == RBUF_POSTED,
		   "side %u: completion for receive buffer %u that was not posted", e->id, buf);
	e->rbuf[buf] = RBUF_CONSUMED;
	if (e->legacy)
		legacy_window_acked(&e->lw, wc->imm);
	else
		rdp_credit_granted(&e->cr, wc->imm);
	f->credits_in_flight -= wc->imm;
	if (wc->len == 0) {
		/* a pure ack's entry goes back at once and is never owed */
		f->acks_in_flight--;
		e->rbuf[buf] = RBUF_POSTED;
		SIM_ASSERT(qp_sim_post_recv(e->qp, buf) == 0, "repost failed");
		return;
	}
	if (wc->len == 4) {
		/* a FIN: its entry goes back at once, owing nothing (the credit
		 * it spent stays in the reserve), and the request its reply
		 * answered is freed */
		SIM_ASSERT(e->holder && wc->payload == e->fins_got && e->fins_got < e->descs_sent,
			   "side %u: FIN %" PRIu64 " after %" PRIu64 " FINs for %" PRIu64
			   " descriptors", e->id, wc->payload, e->fins_got, e->descs_sent);
		e->fins_got++;
		f->data_in_flight--;
		e->rbuf[buf] = RBUF_POSTED;
		SIM_ASSERT(qp_sim_post_recv(e->qp, buf) == 0, "repost failed");
		if (e->grants_fin)
			e->fin_credits++;
		else
			rdp_credit_recv_reposted(&e->cr, 1); /* it spent a credit of the window */
		SIM_ASSERT(e->req_count > 0, "side %u: a FIN with no request held", e->id);
		buf = e->reqs[e->req_head];
		e->req_head = (e->req_head + 1) % e->p.rq_size;
		e->req_count--;
		e->rbuf[buf] = RBUF_POSTED;
		SIM_ASSERT(qp_sim_post_recv(e->qp, buf) == 0, "repost failed");
		rdp_credit_recv_reposted(&e->cr, 1);
		r->progress_round = r->round;
		return;
	}
	SIM_ASSERT(wc->payload == e->rx_msg, "side %u: got message %" PRIu64 ", expected %"
		   PRIu64 " (lost, duplicated or reordered)", e->id, wc->payload, e->rx_msg);
	e->rx_msg++;
	e->delivered++;
	f->data_in_flight--;
	e->rbuf[buf] = RBUF_HELD;
	r->progress_round = r->round;
	if (e->holder) {
		/* held until its reply's FIN; the reply is a descriptor */
		e->reqs[(e->req_head + e->req_count++) % e->p.rq_size] = buf;
		e->reqs_most = RTE_MAX(e->reqs_most, e->req_count);
		e->backlog++;
		return;
	}
	e->held[e->n_held++] = buf;
	if (r->b.traffic == REQ_HELD) {
		/* a descriptor: read, then its FIN */
		e->outstanding--;
		e->fins_due++;
		return;
	}
	if (r->b.traffic == REQ_RESP) {
		if (e->responder)
			e->backlog++;
		else
			e->outstanding--;
	}
}

static void
poll(struct run *r, struct sim_ep *e)
{
	uint32_t n = between(&r->rng, 1, r->b.poll_max);
	struct qp_sim_wc wc;

	/* one by one, so that the books balance after each completion */
	while (n-- > 0 && qp_sim_poll_cq(e->qp, &wc, 1) == 1) {
		if (wc.opcode == QP_SIM_RECV)
			on_recv(r, e, &wc);
		else
			on_send_completion(e, &wc);
		check(r);
	}
}

/* The application frees some held messages, in any order. */
static void
app_free(struct run *r, struct sim_ep *e, bool force)
{
	uint32_t n, k, buf;

	if (!force && qp_sim_below(&r->rng, 100) >= r->b.free_pct)
		return;
	for (n = between(&r->rng, 1, r->b.free_max); n > 0 && e->n_held > 0; n--) {
		k = qp_sim_below(&r->rng, e->n_held);
		buf = e->held[k];
		e->held[k] = e->held[--e->n_held];
		SIM_ASSERT(e->rbuf[buf] == RBUF_HELD, "side %u: buffer %u freed twice", e->id, buf);
		e->rbuf[buf] = RBUF_POSTED;
		SIM_ASSERT(qp_sim_post_recv(e->qp, buf) == 0, "repost failed");
		if (e->legacy)
			e->lg_owed++;
		else
			rdp_credit_recv_reposted(&e->cr, 1);
	}
}

/* The application hands messages over: bursts, pauses, request windows. */
static void
app_produce(struct run *r, struct sim_ep *e)
{
	uint64_t n;

	if (e->to_hand == 0)
		return;
	if (e->pause > 0) {
		e->pause--;
		return;
	}
	if (r->b.pause_pct > 0 && qp_sim_below(&r->rng, 100) < r->b.pause_pct) {
		e->pause = between(&r->rng, 1, r->b.pause_max);
		return;
	}
	n = RTE_MIN((uint64_t)between(&r->rng, 1, r->b.burst_max), e->to_hand);
	if (r->b.traffic == REQ_RESP || r->b.traffic == REQ_HELD)
		n = RTE_MIN(n, r->b.req_depth - RTE_MIN(e->outstanding, r->b.req_depth));
	e->to_hand -= n;
	e->backlog += n;
	if (r->b.traffic == REQ_RESP || r->b.traffic == REQ_HELD)
		e->outstanding += n;
	n = RTE_MIN((uint64_t)between(&r->rng, 0, r->b.burst_max), e->ops_to_hand);
	e->ops_to_hand -= n;
	e->ops_backlog += n;
}

/* ---- invariants ---- */

static void
check(struct run *r)
{
	unsigned int i;

	/* a refused post leaves the legacy bookkeeping half done: stop there */
	if (overflowed(r))
		return;
	for (i = 0; i < 2; i++) {
		struct sim_ep *e = &r->ep[i], *f = e->peer;
		uint64_t rc = e->legacy ? e->lw.window : e->cr.rc;
		uint64_t owed = f->legacy ? f->lg_owed : f->cr.owed;
		/* the window f announced, and the FIN credits its descriptors brought */
		uint64_t c_f = (uint64_t)f->window + f->fin_reserve - f->fin_credits;

		if (r->held >= HELD_MUTANT_NO_RESERVE && e->qp->err.rnr > 0) {
			r->broke = "an RNR";
			return;
		}
		SIM_ASSERT(e->qp->err.enomem == 0, "side %u: a post failed", i);
		SIM_ASSERT(e->qp->err.rnr == 0, "side %u: a message found an empty RQ (RNR)", i);
		SIM_ASSERT(e->qp->err.cq_overrun == 0, "side %u: CQ overrun", i);
		SIM_ASSERT(qp_sim_sq_used(e->qp) <= e->p.sq_size, "side %u: SQ over S", i);
		SIM_ASSERT(qp_sim_cq_used(e->qp) <= r->cq_budget[i],
			   "side %u: %u completions in a CQ budgeted %u", i,
			   qp_sim_cq_used(e->qp), r->cq_budget[i]);
		if (!e->legacy)
			SIM_ASSERT(rdp_credit_sq_inflight(&e->cr) == qp_sim_sq_used(e->qp),
				   "side %u: policy counts %u WRs in the SQ, the NIC %u", i,
				   rdp_credit_sq_inflight(&e->cr), qp_sim_sq_used(e->qp));
		/* every credit of f's RQ is in exactly one place */
		SIM_ASSERT(rc + e->data_in_flight + f->n_held + f->req_count + owed +
			   f->credits_in_flight == c_f,
			   "credits of side %u's RQ: %" PRIu64 " window + %" PRIu64 " data + %u held"
			   " + %u requests held + %" PRIu64 " owed + %" PRIu64 " returning != %"
			   PRIu64, f->id, rc, e->data_in_flight, f->n_held, f->req_count, owed,
			   f->credits_in_flight, c_f);
		SIM_ASSERT(f->qp->rq_count + f->qp->rcq_count + f->n_held + f->req_count ==
			   f->p.rq_size, "side %u: receive buffers lost", f->id);
		SIM_ASSERT(e->acks_in_flight <= f->p.ack_reserve,
			   "side %u: %" PRIu64 " pure acks in flight, peer reserve %u", i,
			   e->acks_in_flight, f->p.ack_reserve);
	}
}

/* ---- a segment: one configuration, one behaviour, n messages ---- */

static void
ep_init(struct run *r, unsigned int i, const struct rdp_credit_params p[2],
	const struct rdp_credit_params adv[2], bool legacy)
{
	struct sim_ep *e = &r->ep[i];
	char why[256];
	uint32_t b;

	memset(e, 0, sizeof(*e));
	e->id = i;
	e->qp = &r->sim.qp[i];
	e->peer = &r->ep[1 - i];
	e->legacy = legacy;
	e->p = p[i];
	/* what each side announced (a holder: R - F), as lib/ep's HELLO */
	SIM_ASSERT(rdp_credit_init(&e->cr, &adv[i], &adv[1 - i], why, sizeof(why)) == 0, "%s",
		   why);
	e->window = adv[i].rq_size - adv[i].ack_reserve;
	legacy_window_init(&e->lw, p[1 - i].rq_size - p[1 - i].ack_reserve,
			   p[i].signal_interval);
	e->slot = calloc(p[i].sq_size, sizeof(*e->slot));
	e->rbuf = calloc(p[i].rq_size, sizeof(*e->rbuf));
	e->held = calloc(p[i].rq_size, sizeof(*e->held));
	e->reqs = calloc(p[i].rq_size, sizeof(*e->reqs));
	SIM_ASSERT(e->slot != NULL && e->rbuf != NULL && e->held != NULL && e->reqs != NULL,
		   "out of memory");
	for (b = 0; b < p[i].rq_size; b++) {
		e->rbuf[b] = RBUF_POSTED;
		SIM_ASSERT(qp_sim_post_recv(e->qp, b) == 0, "initial post_recv");
	}
}

static void
ep_fini(struct sim_ep *e)
{
	free(e->slot);
	free(e->rbuf);
	free(e->held);
	free(e->reqs);
}

/* One round: each side, in random order, produces, sends, executes, polls, frees. */
static void
round_once(struct run *r, bool produce)
{
	unsigned int first = qp_sim_below(&r->rng, 2), k;

	r->round++;
	for (k = 0; k < 2; k++) {
		struct sim_ep *e = &r->ep[first ^ k];

		if (produce)
			app_produce(r, e);
		tx(e, between(&r->rng, 1, r->b.post_max));
		check(r);
		qp_sim_execute(e->qp, qp_sim_below(&r->rng, r->b.exec_max + 1));
		check(r);
		poll(r, e);
		tx(e, between(&r->rng, 1, r->b.post_max));
		check(r);
		app_free(r, e, !produce && qp_sim_below(&r->rng, 8) == 0);
		check(r);
		if (r->broke != NULL)
			return;
	}
}

static bool
overflowed(const struct run *r)
{
	return r->ep[0].overflow_at != 0 || r->ep[1].overflow_at != 0;
}

static bool
quiet(const struct run *r)
{
	unsigned int i;

	for (i = 0; i < 2; i++) {
		const struct sim_ep *e = &r->ep[i];

		if (e->to_hand > 0 || e->backlog > 0 || e->ops_backlog > 0 || e->n_held > 0 ||
		    e->data_in_flight > 0 || e->fins_due > 0 || e->req_count > 0 ||
		    e->acks_in_flight > 0 || e->qp->sq_tx < e->qp->sq_pi ||
		    qp_sim_cq_used(e->qp) > 0 ||
		    (e->legacy ? e->lg_owed : e->cr.owed) >= e->p.ack_threshold)
			return false;
	}
	return true;
}

/* Stop producing, deliver and free everything, then reclaim every SQ slot. */
static void
drain(struct run *r)
{
	uint64_t limit = r->round + 10000000;
	unsigned int i;

	for (i = 0; i < 2; i++) {
		/* what is handed over goes out; the rest is never asked for */
		r->ep[i].to_hand = 0;
		r->ep[i].ops_to_hand = 0;
	}
	while (!quiet(r)) {
		round_once(r, false);
		if (r->broke != NULL)
			return;
		if (r->held >= HELD_MUTANT_NO_RESERVE && r->round - r->progress_round >= 100000) {
			r->broke = "a deadlock";
			return;
		}
		SIM_ASSERT(r->round - r->progress_round < 1000000 && r->round < limit,
			   "no progress for a million rounds: deadlock");
	}
	for (i = 0; i < 2; i++) {
		struct sim_ep *e = &r->ep[i];

		/* closing: one reclaim covers the unsignaled tail */
		if (rdp_credit_sq_inflight(&e->cr) > 0) {
			SIM_ASSERT(rdp_credit_sq_inflight(&e->cr) < e->p.sq_size,
				   "side %u: no slot for the closing reclaim", i);
			post(e, rdp_credit_reclaim_posted(&e->cr), WR_RECLAIM, true, 0);
		}
	}
	while (!quiet(r))
		round_once(r, false);
	for (i = 0; i < 2; i++) {
		struct sim_ep *e = &r->ep[i];

		SIM_ASSERT(e->cr.sq_ci == e->cr.sq_pi && qp_sim_sq_used(e->qp) == 0,
			   "side %u: %u WRs left in the SQ after the closing reclaim", i,
			   qp_sim_sq_used(e->qp));
		SIM_ASSERT(e->data_released == e->tx_msg, "side %u: %" PRIu64 " data buffers "
			   "released for %" PRIu64 " messages", i, e->data_released, e->tx_msg);
		SIM_ASSERT(e->peer->rx_msg == e->tx_msg, "side %u: %" PRIu64 " of %" PRIu64
			   " messages delivered", i, e->peer->rx_msg, e->tx_msg);
		SIM_ASSERT(e->ops_done == e->ops_posted && e->rd_out == 0, "side %u: %" PRIu64
			   " of %" PRIu64 " one-sided operations completed, %u READs left", i,
			   e->ops_done, e->ops_posted, e->rd_out);
	}
}

struct segment_result {
	const char *broke;	/* a mutant's run: how it broke, or NULL */
	uint64_t fin_waits;	/* REQ_HELD: descriptors that waited for a FIN credit */
	bool window_held;	/* REQ_HELD: requests held filled the holder's window */
	uint64_t messages;
	uint64_t overflow_at;	/* legacy: message index of the failed post, 0 if none */
	bool overflow_by_ack;	/* legacy: the failed post was a pure ack */
	struct rdp_credit_stats stats[2];
};

static void
run_segment(uint64_t seed, unsigned int segment, enum qp_sim_order order, uint32_t ooo_pct,
	    uint64_t n_msgs, bool legacy, uint32_t max_q, enum held_mode held,
	    struct segment_result *res)
{
	struct rdp_credit_params p[2], adv[2];
	struct qp_sim_cfg cfg[2];
	struct run *r = calloc(1, sizeof(*r));
	uint32_t f = 0;
	unsigned int i;

	RDP_ASSERT(r != NULL);
	r->rng = mix(seed);
	random_params(&r->rng, p, max_q);
	random_behaviour(&r->rng, &r->b);
	if (legacy)
		r->b.traffic = qp_sim_below(&r->rng, 2) ? ONE_WAY : TWO_WAY;
	r->held = held;
	adv[0] = p[0];
	adv[1] = p[1];
	if (held != HELD_OFF) {
		/* the holder's window of 2 at least, and more requests than it */
		while (p[1].rq_size - p[1].ack_reserve < 2)
			random_params(&r->rng, p, max_q);
		adv[0] = p[0];
		adv[1] = p[1];
		r->b.traffic = REQ_HELD;
		r->b.req_depth = between(&r->rng, 1, 3 * (p[1].rq_size - p[1].ack_reserve));
		/* lib/ep's reserve for one-chunk messages; the mutants announce
		 * all of R, one granting as many FIN credits, the other none */
		f = rdp_credit_keep_fin_reserve(&adv[1], 1);
		if (held != HELD_RESERVE)
			adv[1] = p[1];
	}
	snprintf(where, sizeof(where),
		 "RDP_SEED=%" PRIu64 " segment %u: %s order, %s, S=%u/%u T_sig=%u/%u R=%u/%u "
		 "A_rq=%u/%u T_ack=%u/%u", base_seed, segment, order_name[order],
		 traffic_name[r->b.traffic], p[0].sq_size, p[1].sq_size, p[0].signal_interval,
		 p[1].signal_interval, p[0].rq_size, p[1].rq_size, p[0].ack_reserve,
		 p[1].ack_reserve, p[0].ack_threshold, p[1].ack_threshold);
	if (held != HELD_OFF)
		snprintf(where + strlen(where), sizeof(where) - strlen(where),
			 " FIN reserve %u, requests up to %u", f, r->b.req_depth);
	for (i = 0; i < 2; i++) {
		/* stale send completions come from WRs posted at most S earlier */
		r->cq_budget[i] = rdp_credit_cq_budget(&p[i]) + (ooo_pct > 0 ? p[i].sq_size : 0);
		cfg[i] = (struct qp_sim_cfg){ p[i].sq_size, p[i].rq_size, r->cq_budget[i] };
	}
	SIM_ASSERT(qp_sim_create(&r->sim, cfg, order, ooo_pct, mix(seed + 1)) == 0,
		   "qp_sim_create");
	ep_init(r, 0, p, adv, legacy);
	ep_init(r, 1, p, adv, legacy);
	if (held != HELD_OFF) {
		r->ep[1].holder = true;
		r->ep[1].grants_fin = held != HELD_MUTANT_NO_GRANT;
		r->ep[1].fin_reserve = r->ep[1].grants_fin ? f : 0;
		r->ep[1].fin_credits = r->ep[1].fin_reserve;
	}
	switch (r->b.traffic) {
	case ONE_WAY:
		r->ep[0].to_hand = n_msgs;
		break;
	case TWO_WAY:
		r->ep[0].to_hand = n_msgs / 2;
		r->ep[1].to_hand = n_msgs - n_msgs / 2;
		break;
	case REQ_RESP:
		r->ep[0].to_hand = n_msgs / 2;
		r->ep[1].responder = true;
		break;
	case REQ_HELD:
		r->ep[0].to_hand = n_msgs / 2;
		break;
	}
	for (i = 0; i < 2 && !legacy && held == HELD_OFF; i++) {
		/* one-sided operations beside a side's messages, READs within a random depth */
		struct sim_ep *e = &r->ep[i];

		e->rd_depth = between(&r->rng, 1, 4);
		rdp_credit_read_depth_set(&e->cr, e->rd_depth);
		e->ops_to_hand = e->to_hand / 4;
		e->next_read = qp_sim_below(&r->rng, 2) != 0;
	}
	while (!overflowed(r) && r->broke == NULL &&
	       r->ep[0].delivered + r->ep[1].delivered < n_msgs) {
		round_once(r, true);
		if (held >= HELD_MUTANT_NO_RESERVE && r->broke == NULL &&
		    r->round - r->progress_round >= 100000)
			r->broke = "a deadlock";
		if (r->broke != NULL)
			break;
		SIM_ASSERT(r->round - r->progress_round < 1000000,
			   "no message delivered for a million rounds: deadlock");
		if (r->ep[0].to_hand + r->ep[1].to_hand + r->ep[0].backlog + r->ep[1].backlog == 0)
			break;
	}
	if (!legacy && r->broke == NULL)
		drain(r);
	res->broke = r->broke;
	res->fin_waits = r->ep[1].fin_waits;
	res->window_held = held != HELD_OFF && r->ep[1].reqs_most >= r->ep[1].window;
	res->messages = r->ep[0].delivered + r->ep[1].delivered;
	res->overflow_at = RTE_MAX(r->ep[0].overflow_at, r->ep[1].overflow_at);
	res->overflow_by_ack = r->ep[0].overflow_by_ack || r->ep[1].overflow_by_ack;
	res->stats[0] = r->ep[0].cr.stats;
	res->stats[1] = r->ep[1].cr.stats;
	for (i = 0; i < 2; i++)
		ep_fini(&r->ep[i]);
	qp_sim_destroy(&r->sim);
	free(r);
}

/* Segment @p segment of a soak from @p seed, with @p left messages still to go. */
static uint64_t
soak_segment(uint64_t seed, unsigned int segment, enum qp_sim_order order, uint32_t ooo_pct,
	     uint64_t left, struct segment_result *res)
{
	uint64_t rng = mix(seed + segment);
	/* even, so that request/response splits it exactly */
	uint64_t n = RTE_MIN(left, (uint64_t)between(&rng, 10000, 100000)) * 2;

	run_segment(mix(seed ^ (segment + 1)), segment, order, ooo_pct, n, false, 64, HELD_OFF,
		    res);
	return n;
}

/* Our policy over @p total messages in segments of random configurations. */
static int
soak(enum qp_sim_order order, uint32_t ooo_pct, uint64_t total)
{
	uint64_t seed = seed_from_env(), done = 0, stalls = 0, reclaims = 0, acks = 0;
	struct segment_result res;
	double t0 = rdp_clock_s();
	unsigned int segment = 0;

	while (done < total) {
		uint64_t n = soak_segment(seed, segment, order, ooo_pct, total - done, &res);

		SIM_ASSERT(res.overflow_at == 0, "our policy overflowed");
		SIM_ASSERT(res.messages >= n, "segment delivered %" PRIu64 " of %" PRIu64,
			   res.messages, n);
		done += res.messages;
		stalls += res.stats[0].sq_stalls + res.stats[1].sq_stalls;
		reclaims += res.stats[0].reclaims_posted + res.stats[1].reclaims_posted;
		acks += res.stats[0].acks_posted + res.stats[1].acks_posted;
		segment++;
	}
	printf("%s order%s: %" PRIu64 " messages in %u segments, %.2f s; %" PRIu64
	       " pure acks, %" PRIu64 " reclaims, %" PRIu64 " SQ stalls\n", order_name[order],
	       ooo_pct ? " with out-of-order send completions" : "", done, segment,
	       rdp_clock_s() - t0, acks, reclaims, stalls);
	/* the adversary must actually have pushed the policy against the SQ */
	RDP_ASSERT_MSG(stalls > 0 && reclaims > 0 && acks > 0, "RDP_SEED=%" PRIu64 ": the run "
		       "never stalled on the SQ, reclaimed or acked", base_seed);
	return 0;
}

RDP_TEST(unit, credit_sim_fifo_order_keeps_every_invariant)
{
	return soak(QP_SIM_FIFO, 0, 2500000);
}

RDP_TEST(unit, credit_sim_recv_first_order_keeps_every_invariant)
{
	return soak(QP_SIM_RECV_FIRST, 0, 2500000);
}

RDP_TEST(unit, credit_sim_random_order_keeps_every_invariant)
{
	return soak(QP_SIM_RANDOM, 0, 2500000);
}

RDP_TEST(unit, credit_sim_out_of_order_send_completions_keep_every_invariant)
{
	return soak(QP_SIM_RANDOM, 30, 2500000);
}

/*
 * A device that reordered send completions within one SQ would leave a
 * completion in the CQ after a newer one freed its slot, and the slot could
 * be reused: with signaled READs, the CQ could then hold more than
 * S + R. A reordering run is held to 2S + R, with reordering spanning fewer
 * than S WRs (the stale completions then come from at most S WRs). This
 * seed overran an S + R queue when reordering was unbounded.
 */
RDP_TEST(unit, credit_sim_out_of_order_send_completions_fit_two_sq_budgets)
{
	const uint64_t seed = UINT64_C(4329220324821178075);
	struct segment_result res;
	unsigned int segment;

	base_seed = seed;
	for (segment = 0; segment < 2; segment++) {
		uint64_t n = soak_segment(seed, segment, QP_SIM_RANDOM, 30, 2500000, &res);

		RDP_ASSERT_MSG(res.messages >= n, "segment %u delivered %" PRIu64 " of %" PRIu64,
			       segment, res.messages, n);
	}
	return 0;
}

/* The legacy window, same harness: it must post into a full SQ. */
static int
legacy_overflows(enum qp_sim_order order)
{
	const unsigned int max_segments = 40, enough = 5;
	uint64_t seed = seed_from_env(), msgs = 0;
	struct segment_result res;
	unsigned int segment, found = 0;

	for (segment = 0; segment < max_segments && found < enough; segment++) {
		run_segment(mix(seed ^ (segment + 1)), segment, order, 0, 50000, true, 64, HELD_OFF,
			    &res);
		msgs += res.messages;
		if (res.overflow_at != 0) {
			found++;
			printf("%s\n  legacy %s post at message %" PRIu64 " found the SQ full\n",
			       where, res.overflow_by_ack ? "ack" : "data", res.overflow_at);
		}
	}
	printf("%s order: the legacy window overflowed the SQ in %u of %u segments (%" PRIu64
	       " messages delivered)\n", order_name[order], found, segment, msgs);
	RDP_ASSERT_MSG(found > 0, "RDP_SEED=%" PRIu64 ": the legacy policy never overflowed "
		       "the SQ: the harness cannot see the seed bug", base_seed);
	return 0;
}

RDP_TEST(unit, credit_sim_legacy_window_overflows_sq_in_recv_first_order)
{
	return legacy_overflows(QP_SIM_RECV_FIRST);
}

RDP_TEST(unit, credit_sim_legacy_window_overflows_sq_in_random_order)
{
	return legacy_overflows(QP_SIM_RANDOM);
}

/*
 * Requests held until their rendezvous replies are done (REQ_HELD), in
 * segments of random parameters and behaviour, completions in random
 * order: with the FIN reserve every invariant holds and every request and
 * FIN gets through; without it, each mutant must break in some segment.
 */
static int
held_requests(enum held_mode mode, uint64_t total)
{
	uint64_t seed = seed_from_env(), done = 0;
	struct segment_result res;
	unsigned int segment = 0, broken = 0, full = 0;
	uint64_t waits = 0;

	while (done < total && segment < 400) {
		uint64_t rng = mix(seed + segment);
		uint64_t n = RTE_MIN(total - done, (uint64_t)between(&rng, 2000, 20000)) * 2;

		run_segment(mix(seed ^ (segment + 1)), segment, QP_SIM_RANDOM, 0, n, false, 64,
			    mode, &res);
		if (res.broke != NULL) {
			if (broken++ == 0)
				printf("%s\n  broke with %s\n", where, res.broke);
		} else {
			RDP_ASSERT_MSG(res.messages >= n, "%s: delivered %" PRIu64 " of %" PRIu64,
				       where, res.messages, n);
		}
		done += n;
		segment++;
		waits += res.fin_waits;
		full += res.window_held;
		if (mode != HELD_RESERVE && broken >= 3)
			break;
	}
	printf("%" PRIu64 " messages in %u segments, %u broke; in %u the requests held filled "
	       "the window, and descriptors waited for a FIN credit %" PRIu64 " times\n", done,
	       segment, broken, full, waits);
	if (mode == HELD_RESERVE) {
		RDP_ASSERT_EQ(broken, 0);
		/* the adversary must have held every credit and used up the reserve */
		RDP_ASSERT_MSG(full > 0 && waits > 0, "RDP_SEED=%" PRIu64 ": the run never "
			       "held the whole window or waited for a FIN credit", base_seed);
	} else
		RDP_ASSERT_MSG(broken > 0, "RDP_SEED=%" PRIu64 ": the mutant never broke: the "
			       "harness cannot see what the FIN reserve prevents", base_seed);
	return 0;
}

RDP_TEST(unit, credit_sim_requests_held_until_their_rendezvous_reply_keep_every_invariant)
{
	return held_requests(HELD_RESERVE, 2000000);
}

RDP_TEST(unit, credit_sim_fin_credits_without_a_reserve_find_an_empty_rq)
{
	return held_requests(HELD_MUTANT_NO_RESERVE, 600000);
}

RDP_TEST(unit, credit_sim_held_requests_without_fin_credits_deadlock)
{
	return held_requests(HELD_MUTANT_NO_GRANT, 600000);
}
