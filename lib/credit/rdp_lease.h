/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_LEASE_H
#define RDP_LEASE_H

/**
 * @file
 * Leased receive credits: the endpoints of one poller share one shared
 * receive queue (SRQ), and the poller lends its credits to them.
 *
 * Pure C like rdp_credit.h: it decides and counts, never posts. The rules
 * are those of lib/credit/model/lease.pml (docs/credit-protocol.md,
 * "Leased credits on a shared receive queue"):
 *
 * - Every credit of an SRQ of `size` buffers is in the pool, in exactly
 *   one member's lease or reserve, or in the FIN reserve; a lease stays
 *   within `[floor, lease_max]`.
 * - A member is admitted only if its floor is free in the pool, beside
 *   what the pool keeps for the buffers that wait to be posted.
 * - A data SEND whose immediate data says WANT queues its member (FIFO)
 *   for one grant of up to `grant` credits; a data SEND without WANT
 *   withdraws it.
 * - A freed message's credit is owed to its member, unless the lease is
 *   above the floor and the member is not wanting or others wait: then it
 *   goes to the pool.
 * - A give-back from the peer spends one credit and returns `extra` more:
 *   `extra + 1` leave the lease for the pool.
 * - Owed credits go back once `owed >= T_ack`, or at once when nothing of
 *   the lease is at the peer or on the wire (`out == 0`).
 * - A rendezvous descriptor brings its FIN's credit from the FIN reserve,
 *   and the FIN's buffer brings it back; with the reserve all out, the
 *   descriptor waits (rdp_lease_fin_take()). The peer's data never spends
 *   a FIN's credit: a data SEND when it holds none of the lease breaks
 *   the rules (rdp_lease_on_data()).
 * - Buffers that come back wait to be posted in batches; before a SEND
 *   of the poller they are posted unless the pool's free credits cover
 *   them all (rdp_lease_covers()).
 *
 * The peer's side is two inline rules: rdp_lease_want() and
 * rdp_lease_give_back_due().
 *
 * CONCURRENCY: a pool and its members belong to one poller thread, but
 * for admission: rdp_lease_admit() and rdp_lease_admit_reserve() may run
 * on another thread (the control thread that handshakes) at the same time
 * as the other functions on the poller, and concurrently with none but
 * those. The fields they share (`free`, `reserved`, `members`) change
 * atomically; the counters (`grants`, `diverted`, `given_back`) and those
 * three may be read with relaxed atomic loads from any thread. A grant
 * that finds the pool emptied by an admission meanwhile leaves its waiter
 * first in line.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rdp_lease;

/** A poller's SRQ credits. Change fields only through the functions; read them as CONCURRENCY says. */
struct rdp_lease_pool {
	uint32_t size;		/**< SRQ buffers, all credits */
	uint32_t free;		/**< credits in the pool */
	uint32_t floor;		/**< credits every member keeps */
	uint32_t lease_max;	/**< most credits one member may lease */
	uint32_t grant;		/**< most credits one grant gives */
	uint32_t members;	/**< members admitted */
	uint32_t reserved;	/**< credits kept out of the pool for the members' reserves */
	uint32_t keep;		/**< credits an admission leaves in the pool (rdp_lease_pool_keep()) */
	uint32_t fin_size;	/**< credits kept for FINs (rdp_lease_pool_fin_reserve()) */
	uint32_t fin_free;	/**< of those, credits no descriptor took */
	struct rdp_lease **wq;	/**< FIFO of wanting members, `wq_cap` slots */
	uint32_t wq_cap;	/**< members at most */
	uint32_t wq_head;	/**< oldest waiter */
	uint32_t wq_len;	/**< waiters */
	uint64_t served;	/**< waiters taken off the FIFO (the caller finds them at wq_head before) */
	uint64_t grants;	/**< grants given */
	uint64_t diverted;	/**< freed credits sent to the pool instead of their member */
	uint64_t given_back;	/**< credits peers gave back */
};

/** One member's lease (one endpoint). */
struct rdp_lease {
	uint32_t lease;		/**< credits leased */
	uint32_t owed;		/**< credits to send back to the peer */
	uint32_t out;		/**< credits sent to the peer minus those its SENDs spent or gave back */
	uint32_t reserve;	/**< credits kept for this member beside its lease (rdp_lease_admit_reserve()) */
	uint32_t fins;		/**< FIN credits its descriptors took, at the peer (rdp_lease_fin_take()) */
	bool wanting;		/**< the peer's last data SEND said WANT */
	bool queued;		/**< waiting in the pool's FIFO */
};

/**
 * Set up a pool.
 *
 * @param p
 *   The pool.
 * @param size
 *   SRQ buffers.
 * @param floor
 *   Credits each member keeps, at least 1.
 * @param lease_max
 *   Most credits one member may lease, at least @p floor.
 * @param grant
 *   Most credits one grant gives, at least 1.
 * @param wq
 *   Storage for the waiters' FIFO, @p max_members slots.
 * @param max_members
 *   Members at most.
 * @param why
 *   Receives the first rule broken, naming the parameters and values.
 * @param len
 *   Size of @p why.
 * @return
 *   0, or -EINVAL.
 */
int rdp_lease_pool_init(struct rdp_lease_pool *p, uint32_t size, uint32_t floor,
			uint32_t lease_max, uint32_t grant, struct rdp_lease **wq,
			uint32_t max_members, char *why, size_t len);

/**
 * Set the credits an admission leaves in the pool: at least the most
 * buffers that may wait to be posted again at once. The caller covers
 * those with the pool's free credits (rdp_lease_covers()); an admission,
 * which may run on another thread at any time, then never takes that cover
 * away. Grants, on the poller, may: it sees them before it relies on the
 * cover. 0 (the default) when every buffer is posted as it comes back.
 *
 * @param p
 *   The pool, before its first admission.
 * @param keep
 *   Credits to leave.
 */
void rdp_lease_pool_keep(struct rdp_lease_pool *p, uint32_t keep);

/**
 * Admit a member: its floor leaves the pool. The peer starts with `floor`
 * credits (`l->out == floor`).
 *
 * @param p
 *   The pool.
 * @param l
 *   The member's lease, zeroed or not.
 * @param why
 *   Receives the numbers on refusal.
 * @param len
 *   Size of @p why.
 * @return
 *   0; -ENOSPC when the floor is not free in the pool; -EUSERS when the
 *   pool has its most members.
 */
int rdp_lease_admit(struct rdp_lease_pool *p, struct rdp_lease *l, char *why, size_t len);

/**
 * Admit a member with a reserve: its floor and @p reserve leave the pool.
 * The reserve is never lent: the caller keeps it for receives the lease
 * does not count (the peer's pure acks). `free + Σ lease + reserved = size`.
 *
 * @param p
 *   The pool.
 * @param l
 *   The member's lease, zeroed or not.
 * @param reserve
 *   Credits to keep beside the floor, 0 for none.
 * @param why
 *   Receives the numbers on refusal (srq_size, what is free, what is needed).
 * @param len
 *   Size of @p why.
 * @return
 *   0; -ENOSPC when floor and reserve are not free in the pool; -EUSERS
 *   when the pool has its most members.
 */
int rdp_lease_admit_reserve(struct rdp_lease_pool *p, struct rdp_lease *l, uint32_t reserve,
			    char *why, size_t len);

/**
 * A member leaves (its QP is gone: nothing of the lease is on the wire any
 * more): every credit of its lease, and its reserve, go back to the pool,
 * and its FIN credits to the FIN reserve.
 *
 * @param p
 *   The pool.
 * @param l
 *   The member.
 */
void rdp_lease_leave(struct rdp_lease_pool *p, struct rdp_lease *l);

/*
 * The out-of-line parts of the inline rules below (rdp_lease.c); not for
 * callers.
 */
/* Grants to the oldest waiters while the pool has credit. */
void rdp_lease_serve_(struct rdp_lease_pool *p);
/* @p n credits of a member's lease (already taken off it) go to the pool. */
void rdp_lease_divert_(struct rdp_lease_pool *p, uint32_t n);
/* The member joins the waiters' FIFO. */
void rdp_lease_enqueue_(struct rdp_lease_pool *p, struct rdp_lease *l);

/* The FIN reserve's free credits are @p n now (the poller's thread; read anywhere). */
static inline void
rdp_lease_fin_set_(struct rdp_lease_pool *p, uint32_t n)
{
	__atomic_store_n(&p->fin_free, n, __ATOMIC_RELAXED);
}

/**
 * A data SEND of the member's peer was polled. It spends a credit of the
 * lease: the peer keeps its FIN credits for its FINs.
 *
 * @param p
 *   The pool.
 * @param l
 *   The member.
 * @param want
 *   The SEND's immediate data said WANT.
 * @return
 *   0, or -EPROTO when the peer held no credit of the lease (FIN credits
 *   do not count).
 */
static inline int
rdp_lease_on_data(struct rdp_lease_pool *p, struct rdp_lease *l, bool want)
{
	if (l->out == 0)
		return -EPROTO;
	l->out--;
	l->wanting = want;
	if (!want) {
		/* no longer wanting: what it is owed above its floor goes to the pool */
		uint32_t above = l->lease - p->floor;
		uint32_t n = above < l->owed ? above : l->owed;

		if (n > 0) {
			l->owed -= n;
			l->lease -= n;
			rdp_lease_divert_(p, n);
		}
	} else if (!l->queued && l->lease < p->lease_max) {
		/* at lease_max a grant could give nothing: a WANT below it queues it */
		rdp_lease_enqueue_(p, l);
	}
	if (p->wq_len > 0)
		rdp_lease_serve_(p);
	return 0;
}

/**
 * A give-back of the member's peer was polled; its buffer goes back to the
 * SRQ at once.
 *
 * @param p
 *   The pool.
 * @param l
 *   The member.
 * @param extra
 *   Credits returned beside the one the give-back spent.
 * @return
 *   0, or -EPROTO when the peer returned more than it held or would leave
 *   the lease below the floor.
 */
int rdp_lease_on_give_back(struct rdp_lease_pool *p, struct rdp_lease *l, uint32_t extra);

/**
 * Keep credits out of the pool for FINs: a rendezvous descriptor brings
 * one of them to its peer, for the FIN it will owe, and the FIN's buffer
 * brings it back (rdp_lease_fin_take(), rdp_lease_on_fin()). Never
 * lent: the pool may be empty, every credit of a lease in messages the
 * application keeps until its descriptor's FIN, and the FIN still has a
 * posted receive. `free + Σ lease + reserved + fin_size = size`, and
 * `fin_free + Σ fins = fin_size`.
 *
 * @param p
 *   The pool, before its first admission.
 * @param n
 *   Credits to keep, 0 for none.
 * @param why
 *   Receives the numbers on refusal.
 * @param len
 *   Size of @p why.
 * @return
 *   0, or -EINVAL when the pool would no longer hold one member's floor.
 */
int rdp_lease_pool_fin_reserve(struct rdp_lease_pool *p, uint32_t n, char *why, size_t len);

/**
 * Take a credit of the FIN reserve for a descriptor of the member about to
 * go. Only the poller's thread uses the reserve.
 *
 * @param p
 *   The pool.
 * @param l
 *   The member.
 * @return
 *   true if taken; false when every credit of the reserve waits for its FIN.
 */
static inline bool
rdp_lease_fin_take(struct rdp_lease_pool *p, struct rdp_lease *l)
{
	if (p->fin_free == 0)
		return false;
	rdp_lease_fin_set_(p, p->fin_free - 1);
	l->fins++;
	return true;
}

/**
 * The member's QP is gone: no FIN comes any more, and the FIN credits its
 * descriptors took go back to the FIN reserve (those the peer spent on
 * data go when the member leaves, rdp_lease_leave()).
 *
 * @param p
 *   The pool.
 * @param l
 *   The member.
 */
static inline void
rdp_lease_fins_back(struct rdp_lease_pool *p, struct rdp_lease *l)
{
	rdp_lease_fin_set_(p, p->fin_free + l->fins);
	l->fins = 0;
}

/**
 * A FIN of the member's peer was polled; its buffer goes back to the SRQ
 * and the FIN reserve has its credit again, the one its descriptor took.
 *
 * @param p
 *   The pool.
 * @param l
 *   The member.
 * @return
 *   0, or -EPROTO when the peer had no FIN credit to spend.
 */
int rdp_lease_on_fin(struct rdp_lease_pool *p, struct rdp_lease *l);

/**
 * The application freed a message of the member and its buffer went back
 * to the SRQ: the credit is owed to the member or goes to the pool.
 *
 * @param p
 *   The pool.
 * @param l
 *   The member.
 * @return
 *   true if the credit went to the pool.
 */
static inline bool
rdp_lease_on_free(struct rdp_lease_pool *p, struct rdp_lease *l)
{
	bool divert = l->lease > p->floor && (!l->wanting || p->wq_len > 0);

	if (divert) {
		l->lease--;
		rdp_lease_divert_(p, 1);
	} else {
		l->owed++;
	}
	if (p->wq_len > 0)
		rdp_lease_serve_(p);
	return divert;
}

/**
 * How many owed credits to send back now, and count them as sent.
 *
 * @param l
 *   The member.
 * @param ack_threshold
 *   T_ack: the smallest count worth a pure ack when the peer still holds
 *   credits. Pass 1 when a data SEND carries them anyway.
 * @return
 *   The credits to carry in immediate data, 0 for none.
 */
static inline uint32_t
rdp_lease_take_owed(struct rdp_lease *l, uint32_t ack_threshold)
{
	uint32_t n = l->owed;

	if (n == 0 || (n < ack_threshold && l->out != 0))
		return 0;
	l->owed = 0;
	l->out += n;
	return n;
}

/**
 * Whether owed credits may leave while @p unposted buffers that came back
 * (freed messages, give-backs, pure acks) still wait to be posted on the
 * SRQ again: only if the pool's free credits cover all of them. The
 * receives posted then cover every credit leased and every reserve
 * without those buffers; otherwise they are posted first
 * (lib/credit/model/lease.pml, POST_FIRST). An admission, which may run
 * on another thread at any time, leaves the pool what rdp_lease_pool_keep()
 * set: with no more buffers waiting than that, what this said covered stays
 * covered.
 *
 * @param p
 *   The pool.
 * @param unposted
 *   Buffers that wait to be posted.
 * @return
 *   true if they may go on waiting while owed credits leave.
 */
static inline bool
rdp_lease_covers(const struct rdp_lease_pool *p, uint32_t unposted)
{
	return __atomic_load_n(&p->free, __ATOMIC_RELAXED) >= unposted;
}

/**
 * The peer's rule for WANT on a data SEND.
 *
 * @param backlog
 *   Messages still to send after this one.
 * @param rc
 *   Credits left after this one.
 * @return
 *   Whether to set WANT.
 */
static inline bool
rdp_lease_want(uint64_t backlog, uint32_t rc)
{
	return backlog > rc;
}

/**
 * The peer's rule for a give-back.
 *
 * @param backlog
 *   Messages waiting to be sent.
 * @param rc
 *   Credits held.
 * @param floor
 *   The poller's floor (from the handshake).
 * @return
 *   0 for none; otherwise `extra + 1`: send a give-back that spends one
 *   credit and carries `extra`, and take all of it off `rc`.
 */
static inline uint32_t
rdp_lease_give_back_due(uint64_t backlog, uint32_t rc, uint32_t floor)
{
	return backlog == 0 && rc > floor ? rc - floor : 0;
}

#ifdef __cplusplus
}
#endif

#endif /* RDP_LEASE_H */
