/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_CREDIT_H
#define RDP_CREDIT_H

/**
 * @file
 * The credit state machine of one endpoint (one RC queue pair).
 *
 * It decides and counts; it never posts. Pure C: no verbs, no DPDK, no
 * allocation, so the same code runs in the endpoint, the unit tests, the
 * randomized simulator and (transcribed) the spin model.
 *
 * The rule, in one sentence: a send needs *local SQ credit*, which comes
 * only from polled signaled SEND completions, and *remote receive credit*,
 * which comes only from immediate data; every pure ack is an unsignaled
 * SEND_WITH_IMM.
 *
 * - Local SQ accounting: every WR (data, ack, reclaim) takes sequence number
 *   `sq_pi` (carry it in `wr_id`). A polled signaled completion for sequence
 *   q sets `sq_ci = max(sq_ci, q + 1)`; completion order is never assumed.
 *   `sq_pi - sq_ci <= S` always.
 * - Data and acks may use `S - 1` slots; the last slot is kept for a
 *   *reclaim*, a signaled zero-length RDMA WRITE that consumes nothing at
 *   the peer and whose completion frees every WR before it.
 * - Signaling: a data WR is signaled when the unsignaled run since the last
 *   signaled WR reaches `T_sig`, or when it would leave only the reclaim
 *   slot. An ack is never signaled: when it would end such a run, the
 *   verdict is RDP_CREDIT_RECLAIM_FIRST.
 * - Remote credits `rc` start at `R_peer - A_rq_peer`, drop by one per data
 *   WR, and grow only by counts carried in immediate data.
 * - `owed` counts our RQ entries consumed by peer data, handed to the
 *   application, freed and posted again. Data WRs piggyback all of it; a
 *   pure ack goes out only when `owed >= T_ack` and no data can carry it.
 *   RQ entries consumed by pure acks are reposted at once and never owed.
 * - One-sided WRs (RDMA WRITE, RDMA READ) take an SQ slot and no remote
 *   credit, and follow the same signaling rule. A READ also takes one of
 *   `rd_depth` read slots (the depth both sides agreed in the handshake),
 *   given back when a polled completion covers it, and the READ that takes
 *   the last free slot is signaled: a READ waiting for a slot then always
 *   has a signaled READ before it whose completion comes and frees them
 *   all.
 *
 * CONCURRENCY: none; one endpoint's state is touched by its owner thread.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Largest credit count one immediate-data field carries. */
#define RDP_CREDIT_IMM_MAX 0xffffu

/** Bits of the sequence number an endpoint keeps in `wr_id`. */
#define RDP_CREDIT_SEQ_BITS 40
/** Mask of the sequence bits in `wr_id`. */
#define RDP_CREDIT_SEQ_MASK ((UINT64_C(1) << RDP_CREDIT_SEQ_BITS) - 1)

/**
 * Largest credit count in immediate data on a connection where a side
 * leases (its bit 15 is WANT there).
 */
#define RDP_CREDIT_IMM_LEASE_MAX 0x7fffu

/**
 * One side's leasing terms (exchanged in the handshake): a side that
 * leases receives into a shared receive queue and lends its peer credits
 * from it (rdp_lease.h).
 */
struct rdp_credit_lease {
	uint32_t floor;     /**< credits its peer keeps whatever the others lease */
	uint32_t lease_max; /**< most credits its peer may hold at once; 0: it does not lease */
};

/** One side's flow-control parameters (exchanged in the handshake). */
struct rdp_credit_params {
	uint32_t sq_size;         /**< S: SQ slots accounted (as asked, not granted) */
	uint32_t signal_interval; /**< T_sig: longest unsignaled run + 1 */
	uint32_t rq_size;         /**< R: receive entries kept posted */
	uint32_t ack_reserve;     /**< A_rq: receive entries kept for the peer's pure acks */
	uint32_t ack_threshold;   /**< T_ack: smallest count a pure ack returns */
};

/** Counters for telemetry; all monotonic. */
struct rdp_credit_stats {
	uint64_t data_posted;      /**< data WRs posted */
	uint64_t acks_posted;      /**< pure acks posted (never signaled) */
	uint64_t reclaims_posted;  /**< reclaim WRs posted */
	uint64_t signaled_posted;  /**< signaled WRs (data, reclaims, one-sided) */
	uint64_t credits_returned; /**< credits sent back (piggyback + acks) */
	uint64_t credits_granted;  /**< credits received in immediate data */
	uint64_t sq_stalls;        /**< times a send had to wait for SQ credit */
	uint64_t remote_stalls;    /**< times a send had to wait for remote credit */
	uint64_t read_stalls;      /**< times a READ had to wait for a read slot */
};

/** The state of one endpoint. Read fields freely; change them only through the functions. */
struct rdp_credit {
	uint64_t sq_pi;          /**< WRs posted */
	uint64_t sq_ci;          /**< one past the newest polled signaled WR */
	uint32_t sq_size;        /**< S */
	uint32_t signal_interval; /**< T_sig */
	uint32_t unsig_run;      /**< WRs posted since the last signaled one */
	uint32_t rc;             /**< data WRs the peer can still receive */
	uint32_t rc_max;         /**< C_peer = R_peer - A_rq_peer: rc with nothing in flight */
	uint32_t owed;           /**< credits we owe the peer */
	uint32_t ack_threshold;  /**< T_ack */
	uint32_t peer_lease_tack; /**< a leasing peer's T_ack (rdp_credit_lease_ack_ok()); 0: it does not lease */
	uint8_t stalled;         /**< enum rdp_credit_verdict of the current stall, 0 if none */
	uint16_t rd_depth;       /**< READs we may have outstanding (agreed; 0: none) */
	uint16_t rd_inflight;    /**< READs posted that no polled completion covers yet */
	struct rdp_credit_stats stats;
};

/** What the caller may do next. */
enum rdp_credit_verdict {
	RDP_CREDIT_NONE = 0,        /**< (acks) nothing owed worth an ack */
	RDP_CREDIT_GO_UNSIGNALED,   /**< post it unsignaled */
	RDP_CREDIT_GO_SIGNALED,     /**< post it signaled */
	RDP_CREDIT_RECLAIM_FIRST,   /**< post a reclaim first, then ask again */
	RDP_CREDIT_WAIT_SQ,         /**< no SQ credit: wait for a signaled completion */
	RDP_CREDIT_WAIT_REMOTE,     /**< no remote credit: wait for immediate data */
	RDP_CREDIT_WAIT_READ,       /**< no read slot: wait for a READ's completion */
};

/**
 * Check one side's parameters alone.
 *
 * Rules: `T_sig >= 2` (an ack may only extend a run of at least one),
 * `S >= 2 * T_sig`, `S + R <= UINT32_MAX` (the CQ budget), `R > A_rq`,
 * `1 <= T_ack <= C`
 * where `C = R - A_rq`, `A_rq >= ceil(C / T_ack)`, `C <= RDP_CREDIT_IMM_MAX`.
 *
 * @param p
 *   Parameters.
 * @param why
 *   Receives the first rule broken, naming the parameters and values.
 * @param len
 *   Size of @p why.
 * @return
 *   0, or -EINVAL.
 */
int rdp_credit_params_check(const struct rdp_credit_params *p, char *why, size_t len);

/**
 * Initialise an endpoint's state once both sides' parameters are known.
 *
 * Checks both sides alone, and that each side's ack reserve holds the other
 * side's pure acks in flight: `A_rq >= ceil((R_peer - A_rq_peer) / T_ack_peer)`
 * and the same the other way.
 *
 * @param c
 *   State to initialise.
 * @param local
 *   Our parameters.
 * @param peer
 *   The peer's parameters, from its handshake.
 * @param why
 *   Receives the first rule broken.
 * @param len
 *   Size of @p why.
 * @return
 *   0, or -EINVAL.
 */
int rdp_credit_init(struct rdp_credit *c, const struct rdp_credit_params *local,
		    const struct rdp_credit_params *peer, char *why, size_t len);

/**
 * rdp_credit_init() for a connection where either side may lease.
 * A side's receive window W is `lease_max` when it leases, else
 * `R - A_rq`. With a side leasing, both windows must fit in 15 bits
 * (RDP_CREDIT_IMM_LEASE_MAX). A side that does not lease must hold the
 * other's pure acks in its `A_rq`: `ceil(W / T_ack)` of a non-leasing
 * other, `max(1, floor(W / T_ack))` of a leasing one (each of its pure
 * acks carries `T_ack` or more but one sent when its peer holds none,
 * which is then alone on the wire). A leasing side keeps that
 * reserve on its SRQ (rdp_credit_lease_reserve()) and its `A_rq` is not
 * checked. The peer of a leasing side starts with `rc = floor` and may
 * hold `lease_max`.
 *
 * @param c
 *   State to initialise.
 * @param local
 *   Our parameters.
 * @param local_lease
 *   Our leasing terms (lease_max 0: we do not lease).
 * @param peer
 *   The peer's parameters, from its handshake.
 * @param peer_lease
 *   The peer's leasing terms.
 * @param why
 *   Receives the first rule broken.
 * @param len
 *   Size of @p why.
 * @return
 *   0, or -EINVAL.
 */
int rdp_credit_init_lease(struct rdp_credit *c, const struct rdp_credit_params *local,
			  const struct rdp_credit_lease *local_lease,
			  const struct rdp_credit_params *peer,
			  const struct rdp_credit_lease *peer_lease, char *why, size_t len);

/**
 * The reserve a leasing side keeps on its SRQ for its peer's pure acks:
 * `max(1, floor(W_peer / T_ack_peer))` of a peer that leases too (as
 * rdp_credit_init_lease() asks of an `A_rq`), `floor(W_peer / T_ack_peer)
 * + 1` of one that does not, W_peer the peer's receive window (credits
 * the leasing side can hold towards it).
 *
 * @param peer
 *   The peer's parameters.
 * @param peer_lease
 *   The peer's leasing terms.
 * @return
 *   Receives to keep.
 */
uint32_t rdp_credit_lease_reserve(const struct rdp_credit_params *peer,
				  const struct rdp_credit_lease *peer_lease);

/**
 * Credits a give-back returned beside the one its SEND spent: they leave
 * `rc` (rdp_lease_give_back_due()).
 *
 * @param c
 *   State.
 * @param extra
 *   Credits given back, at most `rc`.
 */
static inline void
rdp_credit_given_back(struct rdp_credit *c, uint32_t extra)
{
	c->rc -= extra;
}

/**
 * Completion-queue entries one endpoint needs: `S + R`, since a QP in error
 * flushes every outstanding WR, unsignaled ones included.
 *
 * @param p
 *   Local parameters.
 * @return
 *   CQ entries to budget.
 */
static inline uint32_t
rdp_credit_cq_budget(const struct rdp_credit_params *p)
{
	return p->sq_size + p->rq_size;
}

/**
 * WRs outstanding on the SQ.
 *
 * @param c
 *   State.
 * @return
 *   `sq_pi - sq_ci`.
 */
static inline uint32_t
rdp_credit_sq_inflight(const struct rdp_credit *c)
{
	return (uint32_t)(c->sq_pi - c->sq_ci);
}

/**
 * Is every posted WR known complete (no signaled completion outstanding)?
 *
 * @param c
 *   State.
 * @return
 *   True when `sq_ci == sq_pi`.
 */
static inline bool
rdp_credit_sq_idle(const struct rdp_credit *c)
{
	return c->sq_ci == c->sq_pi;
}

/**
 * Do we owe the peer enough credits for a pure ack (`owed >= T_ack`)?
 *
 * @param c
 *   State.
 * @return
 *   True when an ack is due; rdp_credit_ack_check() says whether and how
 *   it may be posted.
 */
static inline bool
rdp_credit_ack_due(const struct rdp_credit *c)
{
	return c->owed >= c->ack_threshold;
}

/**
 * Credits the peer may still return: data WRs we posted that no credit in
 * its immediate data has answered yet (`C_peer - rc`). Beyond that the
 * peer may grant one credit for each FIN we owe it, and one more with a
 * rendezvous control message (a descriptor brings its FIN's credit before
 * its FIN is due), from its SRQ's pool or its RQ's FIN reserve. Immediate
 * data that returns more breaks the protocol.
 *
 * @param c
 *   State.
 * @param fins_due
 *   FINs we owe the peer.
 * @param control
 *   The immediate data is a rendezvous control message's.
 * @return
 *   What the peer may return, 0 when rc is at or above it.
 */
static inline uint64_t
rdp_credit_returnable(const struct rdp_credit *c, uint32_t fins_due, bool control)
{
	uint64_t top = (uint64_t)c->rc_max + fins_due + control;

	return top > c->rc ? top - c->rc : 0;
}

/**
 * May a data SEND (a message's chunk, a descriptor) spend a credit once
 * @p used more credits are spent, with @p kept credits set aside (the FINs
 * of rendezvous messages being read, which the peer may wait for before it
 * returns any)? Data never spends a FIN's credit: a FIN goes whenever it
 * has one, between two chunks of a message too, so a message starts on
 * one credit beyond the kept ones and its chunks follow as credits come.
 *
 * @param c
 *   State.
 * @param used
 *   Credits spent before it (by WRs being built now).
 * @param kept
 *   Credits set aside.
 * @return
 *   True when it may go.
 */
static inline bool
rdp_credit_may_send(const struct rdp_credit *c, uint32_t used, uint32_t kept)
{
	uint64_t left = c->rc > used ? c->rc - used : 0;

	return left > kept;
}

/**
 * Closing: must a reclaim be posted so that the last unsignaled WRs' success
 * becomes visible, and is there a slot for it? Nothing else will be posted
 * after them, so no later signaled WR would cover them.
 *
 * @param c
 *   State.
 * @return
 *   True when unsignaled WRs are uncovered and the SQ has a free slot.
 */
static inline bool
rdp_credit_flush_due(const struct rdp_credit *c)
{
	return !rdp_credit_sq_idle(c) && c->unsig_run > 0 &&
	       rdp_credit_sq_inflight(c) < c->sq_size;
}

static inline enum rdp_credit_verdict
rdp_credit_stall_(struct rdp_credit *c, enum rdp_credit_verdict v)
{
	/* count episodes, not retries: a poller asks again on every loop */
	if (c->stalled != v) {
		c->stalled = (uint8_t)v;
		if (v == RDP_CREDIT_WAIT_SQ)
			c->stats.sq_stalls++;
		else if (v == RDP_CREDIT_WAIT_READ)
			c->stats.read_stalls++;
		else
			c->stats.remote_stalls++;
	}
	return v;
}

/**
 * May a data WR be posted now, and signaled or not?
 *
 * @param c
 *   State.
 * @return
 *   RDP_CREDIT_GO_SIGNALED, RDP_CREDIT_GO_UNSIGNALED, RDP_CREDIT_WAIT_REMOTE
 *   or RDP_CREDIT_WAIT_SQ.
 */
static inline enum rdp_credit_verdict
rdp_credit_data_check(struct rdp_credit *c)
{
	uint32_t inflight = rdp_credit_sq_inflight(c);

	if (c->rc == 0)
		return rdp_credit_stall_(c, RDP_CREDIT_WAIT_REMOTE);
	if (inflight + 1 > c->sq_size - 1)
		return rdp_credit_stall_(c, RDP_CREDIT_WAIT_SQ);
	if (c->unsig_run + 1 >= c->signal_interval || inflight + 1 >= c->sq_size - 1)
		return RDP_CREDIT_GO_SIGNALED;
	return RDP_CREDIT_GO_UNSIGNALED;
}

/**
 * Is a pure ack due, and may it be posted now?
 *
 * Call it when no data WR can carry the owed credits.
 *
 * @param c
 *   State.
 * @return
 *   RDP_CREDIT_NONE (owed below T_ack), RDP_CREDIT_GO_UNSIGNALED,
 *   RDP_CREDIT_RECLAIM_FIRST or RDP_CREDIT_WAIT_SQ.
 */
static inline enum rdp_credit_verdict
rdp_credit_ack_check(struct rdp_credit *c)
{
	uint32_t inflight = rdp_credit_sq_inflight(c);

	if (!rdp_credit_ack_due(c))
		return RDP_CREDIT_NONE;
	if (c->unsig_run + 1 >= c->signal_interval)
		return inflight < c->sq_size ? RDP_CREDIT_RECLAIM_FIRST :
			rdp_credit_stall_(c, RDP_CREDIT_WAIT_SQ);
	if (inflight + 1 > c->sq_size - 1)
		return rdp_credit_stall_(c, RDP_CREDIT_WAIT_SQ);
	return RDP_CREDIT_GO_UNSIGNALED;
}

/**
 * rdp_credit_ack_check() for an endpoint the application closed, which
 * sends what it accepted before the close and nothing else.
 *
 * While messages are left to send it acks as any endpoint does: its peer
 * may be closing towards it, waiting for these credits as this side waits
 * for the peer's, and two endpoints closed at once would otherwise wait
 * for each other for ever. With none left it never acks, so that a peer
 * that keeps sending cannot hold the close off; a reclaim then makes the
 * last WRs' success visible (rdp_credit_flush_due()).
 *
 * @param c
 *   State.
 * @param sends_left
 *   Messages are still queued to send.
 * @return
 *   As rdp_credit_ack_check() while @p sends_left; else
 *   RDP_CREDIT_RECLAIM_FIRST (post a reclaim, then ask again) or
 *   RDP_CREDIT_NONE.
 */
static inline enum rdp_credit_verdict
rdp_credit_ack_check_closing(struct rdp_credit *c, bool sends_left)
{
	if (sends_left)
		return rdp_credit_ack_check(c);
	return rdp_credit_flush_due(c) ? RDP_CREDIT_RECLAIM_FIRST : RDP_CREDIT_NONE;
}

static inline uint64_t
rdp_credit_take_seq_(struct rdp_credit *c, bool signaled)
{
	c->stalled = 0;
	if (signaled) {
		c->unsig_run = 0;
		c->stats.signaled_posted++;
	} else {
		c->unsig_run++;
	}
	return c->sq_pi++;
}

/**
 * Account a data WR the caller is about to post (after a GO verdict).
 *
 * @param c
 *   State.
 * @param signaled
 *   As the verdict said.
 * @param piggyback
 *   Receives the credits to carry in its immediate data (all of `owed`).
 * @return
 *   The WR's sequence number.
 */
static inline uint64_t
rdp_credit_data_posted(struct rdp_credit *c, bool signaled, uint32_t *piggyback)
{
	*piggyback = c->owed;
	c->stats.credits_returned += c->owed;
	c->owed = 0;
	c->rc--;
	c->stats.data_posted++;
	return rdp_credit_take_seq_(c, signaled);
}

/**
 * Account a pure ack the caller is about to post (unsignaled).
 *
 * @param c
 *   State.
 * @param credits
 *   Receives the credits to carry (all of `owed`, at least T_ack).
 * @return
 *   The WR's sequence number.
 */
static inline uint64_t
rdp_credit_ack_posted(struct rdp_credit *c, uint32_t *credits)
{
	*credits = c->owed;
	c->stats.credits_returned += c->owed;
	c->owed = 0;
	c->stats.acks_posted++;
	return rdp_credit_take_seq_(c, false);
}

/**
 * Account a reclaim the caller is about to post (signaled zero-length WRITE).
 *
 * @param c
 *   State.
 * @return
 *   The WR's sequence number.
 */
static inline uint64_t
rdp_credit_reclaim_posted(struct rdp_credit *c)
{
	c->stats.reclaims_posted++;
	return rdp_credit_take_seq_(c, true);
}

/**
 * May a one-sided WR be posted now, and signaled or not? An RDMA WRITE or
 * READ takes an SQ slot and no remote credit, signaled as data is; a READ
 * also needs a read slot, and is signaled when it takes the last one.
 *
 * @param c
 *   State.
 * @param read
 *   An RDMA READ (else an RDMA WRITE).
 * @return
 *   RDP_CREDIT_GO_SIGNALED, RDP_CREDIT_GO_UNSIGNALED, RDP_CREDIT_WAIT_SQ or
 *   RDP_CREDIT_WAIT_READ.
 */
static inline enum rdp_credit_verdict
rdp_credit_rdma_check(struct rdp_credit *c, bool read)
{
	uint32_t inflight = rdp_credit_sq_inflight(c);

	if (inflight + 1 > c->sq_size - 1)
		return rdp_credit_stall_(c, RDP_CREDIT_WAIT_SQ);
	if (read) {
		if (c->rd_inflight >= c->rd_depth)
			return rdp_credit_stall_(c, RDP_CREDIT_WAIT_READ);
		if (c->rd_inflight + 1 == c->rd_depth)
			return RDP_CREDIT_GO_SIGNALED;
	}
	if (c->unsig_run + 1 >= c->signal_interval || inflight + 1 >= c->sq_size - 1)
		return RDP_CREDIT_GO_SIGNALED;
	return RDP_CREDIT_GO_UNSIGNALED;
}

/**
 * Account a one-sided WR the caller is about to post (after a GO verdict).
 *
 * @param c
 *   State.
 * @param read
 *   An RDMA READ: it takes a read slot.
 * @param signaled
 *   As the verdict said.
 * @return
 *   The WR's sequence number.
 */
static inline uint64_t
rdp_credit_rdma_posted(struct rdp_credit *c, bool read, bool signaled)
{
	if (read)
		c->rd_inflight++;
	return rdp_credit_take_seq_(c, signaled);
}

/**
 * A polled completion covered @p n READs: their read slots come back.
 *
 * @param c
 *   State.
 * @param n
 *   READs covered (at most rd_inflight).
 */
static inline void
rdp_credit_reads_completed(struct rdp_credit *c, uint32_t n)
{
	c->rd_inflight -= n;
}

/**
 * Set the read depth agreed in the handshake.
 *
 * @param c
 *   State, before any READ.
 * @param depth
 *   READs that may be outstanding at once (0: no READ may be posted).
 */
static inline void
rdp_credit_read_depth_set(struct rdp_credit *c, uint32_t depth)
{
	c->rd_depth = (uint16_t)depth;
}

/**
 * Recover a full sequence number from the bits kept in `wr_id`.
 *
 * Valid for any WR still outstanding or completed less than 2^40 WRs ago.
 *
 * @param c
 *   State.
 * @param low
 *   `wr_id & RDP_CREDIT_SEQ_MASK`.
 * @return
 *   The full sequence number.
 */
static inline uint64_t
rdp_credit_seq_expand(const struct rdp_credit *c, uint64_t low)
{
	return c->sq_pi - ((c->sq_pi - low) & RDP_CREDIT_SEQ_MASK);
}

/**
 * Apply a polled signaled send completion (data or reclaim).
 *
 * @param c
 *   State.
 * @param seq
 *   The completed WR's full sequence number (< sq_pi).
 * @return
 *   How many SQ slots it freed (0 when an older completion arrives late).
 */
static inline uint32_t
rdp_credit_send_completed(struct rdp_credit *c, uint64_t seq)
{
	uint64_t old = c->sq_ci;

	if (seq + 1 <= old)
		return 0;
	c->sq_ci = seq + 1;
	return (uint32_t)(c->sq_ci - old);
}

/**
 * Apply credits carried in the peer's immediate data.
 *
 * @param c
 *   State.
 * @param credits
 *   The count carried (pure ack or piggyback).
 */
/**
 * Does a pure ack of @p credits from the peer keep the leasing rule? A
 * leasing peer acks fewer than its T_ack only when none of its lease is
 * lent out (`out = 0`): we then hold no credit of it but those its
 * descriptors brought for their FINs (from its FIN reserve, never in the
 * lease), and that ack is alone on the wire, which is what the reserve for
 * its pure acks counts on (`max(1, floor(lease_max / T_ack))`). Call it
 * before rdp_credit_granted().
 *
 * @param c
 *   State.
 * @param credits
 *   Credits the pure ack returns.
 * @param fins_due
 *   The peer's descriptors whose FIN we have not posted: the credits held
 *   for those FINs.
 * @return
 *   True when it keeps the rule (always from a peer that does not lease).
 */
static inline bool
rdp_credit_lease_ack_ok(const struct rdp_credit *c, uint32_t credits, uint32_t fins_due)
{
	return credits >= c->peer_lease_tack || c->rc <= fins_due;
}

static inline void
rdp_credit_granted(struct rdp_credit *c, uint32_t credits)
{
	c->rc += credits;
	c->stats.credits_granted += credits;
}

#ifdef RDP_BENCH_NO_CREDIT
/**
 * Benchmark-only builds (-Dbench_no_credit=true): forget remote credits and
 * owed credits, keep SQ accounting. It measures what the credit protocol
 * costs; with a slow receiver it can meet RNR. Never in production.
 *
 * @param c
 *   State.
 */
static inline void
rdp_credit_bench_bypass(struct rdp_credit *c)
{
	c->rc = UINT32_MAX / 2;
	c->rc_max = UINT32_MAX;
	c->peer_lease_tack = 0;
	c->owed = 0;
}
#endif

/**
 * Note that a receive entry consumed by peer data was freed by the
 * application and posted again: one more credit owed to the peer.
 *
 * @param c
 *   State.
 * @param n
 *   Entries reposted.
 */
static inline void
rdp_credit_recv_reposted(struct rdp_credit *c, uint32_t n)
{
	c->owed += n;
}

/** Most receives an endpoint keeps beyond its window for its rendezvous FINs. */
#define RDP_CREDIT_FIN_RESERVE_MAX 16u

/**
 * Keep a FIN reserve F out of the window @p p announces
 * (docs/credit-protocol.md, "Rendezvous"): RDP_CREDIT_FIN_RESERVE_MAX, at
 * most a quarter of `C = R - A_rq`, fewer where the window left would no
 * longer carry a message of @p chunks chunks, but 1 at least (longer
 * messages then go by rendezvous); none for a window of one credit.
 * `rq_size` drops by F, and `ack_threshold` to at most the window left.
 *
 * @param p
 *   The parameters to announce, valid (rdp_credit_params_check()).
 * @param chunks
 *   Chunks of the longest message the window must still carry whole.
 * @return
 *   F, 0 when nothing was kept (@p p unchanged).
 */
static inline uint32_t
rdp_credit_keep_fin_reserve(struct rdp_credit_params *p, uint64_t chunks)
{
	uint32_t c = p->rq_size - p->ack_reserve;
	uint64_t spare = (uint64_t)c - p->ack_threshold + 1, f;

	if (c < 2)
		return 0;
	f = c / 4 < RDP_CREDIT_FIN_RESERVE_MAX ? c / 4 : RDP_CREDIT_FIN_RESERVE_MAX;
	if (f > (spare > chunks ? spare - chunks : 0))
		f = spare > chunks ? spare - chunks : 0;
	if (f == 0)
		f = 1;
	p->rq_size -= (uint32_t)f;
	if (p->ack_threshold > c - f)
		p->ack_threshold = c - (uint32_t)f;
	return (uint32_t)f;
}

/**
 * Grant the peer @p n credits of receives kept beyond its window `C`
 * (an endpoint's FIN reserve: a rendezvous descriptor brings the credit
 * its FIN spends; docs/credit-protocol.md, "Rendezvous"). They go with the
 * next immediate data, as owed credits do. The caller takes them back when
 * the message they paid for arrives: its receive is posted again without
 * being owed.
 *
 * @param c
 *   State.
 * @param n
 *   Credits granted.
 */
static inline void
rdp_credit_grant_reserved(struct rdp_credit *c, uint32_t n)
{
	c->owed += n;
}

#ifdef __cplusplus
}
#endif

#endif /* RDP_CREDIT_H */
