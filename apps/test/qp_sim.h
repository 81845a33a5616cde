/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef QP_SIM_H
#define QP_SIM_H

/**
 * @file
 * A pair of simulated RC queue pairs, for tests that need an adversarial
 * but exact model of verbs completion semantics without a NIC.
 *
 * - **SQ.** `sq_size` slots. A post to a full SQ fails with -ENOMEM. The
 *   NIC executes WRs in order. A slot is freed only when a signaled send
 *   completion for it, or for a later WR, is *polled* (mlx5 semantics, the
 *   strictest). Unsignaled WRs make no completion.
 * - **RQ.** Receive buffers are consumed in posting order. A SEND that finds
 *   the RQ empty is an RNR: it is counted and the message is dropped.
 * - **CQ.** One per QP, shared by its SQ and RQ, of `cq_size` entries. A
 *   completion produced while it is full is an overrun: counted and
 *   dropped, as rxe does.
 * - **Ops.** SEND_WITH_IMM (the receiver sees imm, length and payload) and
 *   a zero-length RDMA WRITE (no effect at the peer).
 * - **Completion order.** Within one work queue completions are polled in
 *   order; across the SQ and RQ the order is set by `qp_sim_order`. In
 *   random order, `send_ooo_pct` also lets a newer send completion of the
 *   same SQ overtake older ones (beyond what the InfiniBand spec allows),
 *   by fewer than `sq_size` WRs: a completion overtakes only the oldest
 *   pending one's next `sq_size - 1` WRs.
 *
 * Each QP has its own seeded generator, so a run is a function of the seed
 * and the caller's calls. No threads: the caller drives every step.
 */

#include <stdbool.h>
#include <stdint.h>

/** How the poller interleaves the SQ's and the RQ's completions. */
enum qp_sim_order {
	QP_SIM_FIFO,		/**< in the order the NIC produced them */
	QP_SIM_RECV_FIRST,	/**< receive completions whenever there is one */
	QP_SIM_RANDOM,		/**< a seeded coin for every completion */
};

/** Operation of a work request or a completion. */
enum qp_sim_opcode {
	QP_SIM_SEND_IMM,	/**< SEND_WITH_IMM (wc: its send completion) */
	QP_SIM_WRITE_ZERO,	/**< zero-length RDMA WRITE */
	QP_SIM_RECV,		/**< wc only: a message received */
};

/** A work request to post on the SQ. */
struct qp_sim_wr {
	uint64_t wr_id;		/**< returned in its completion */
	uint64_t payload;	/**< SEND only: delivered to the receiver */
	uint32_t imm;		/**< SEND only: immediate data */
	uint32_t len;		/**< SEND only: byte length the receiver sees */
	uint8_t opcode;		/**< QP_SIM_SEND_IMM or QP_SIM_WRITE_ZERO */
	bool signaled;		/**< make a completion on success */
};

/** A completion. */
struct qp_sim_wc {
	uint64_t wr_id;		/**< the send WR's, or the receive buffer's */
	uint64_t payload;	/**< RECV: the sender's payload */
	uint32_t imm;		/**< RECV: the sender's immediate data */
	uint32_t len;		/**< RECV: the sender's length */
	uint8_t opcode;		/**< enum qp_sim_opcode */
};

/** Failures the simulated NIC saw; a correct user keeps them all at 0. */
struct qp_sim_errors {
	uint64_t enomem;	/**< posts refused by a full SQ or RQ */
	uint64_t rnr;		/**< SENDs that found no receive buffer */
	uint64_t cq_overrun;	/**< completions dropped by a full CQ */
};

/** Sizes of one QP. */
struct qp_sim_cfg {
	uint32_t sq_size;	/**< SQ slots */
	uint32_t rq_size;	/**< receive buffers postable at once */
	uint32_t cq_size;	/**< CQ entries */
};

struct qp_sim_cqe;

/** One simulated QP. Read the fields; change them only through the functions. */
struct qp_sim_qp {
	struct qp_sim_qp *peer;	/**< the other end */
	struct qp_sim_cfg cfg;	/**< sizes */
	enum qp_sim_order order;	/**< completion interleaving */
	uint32_t send_ooo_pct;	/**< random order: % of send polls taken out of order */
	uint64_t rng;		/**< generator state */
	/* SQ: [sq_ci, sq_pi) outstanding, of which [sq_ci, sq_tx) executed */
	struct qp_sim_wr *sq;	/**< ring, sq_size */
	uint64_t sq_pi;		/**< WRs posted */
	uint64_t sq_tx;		/**< WRs executed */
	uint64_t sq_ci;		/**< WRs freed */
	/* RQ */
	uint64_t *rq;		/**< ring of posted receive wr_ids, rq_size */
	uint32_t rq_head;	/**< oldest posted */
	uint32_t rq_count;	/**< posted */
	/* CQ: one FIFO per work queue, each able to hold the whole CQ */
	struct qp_sim_cqe *scq;	/**< send completions */
	uint32_t scq_head;	/**< oldest */
	uint32_t scq_count;	/**< pending */
	struct qp_sim_cqe *rcq;	/**< receive completions */
	uint32_t rcq_head;	/**< oldest */
	uint32_t rcq_count;	/**< pending */
	uint64_t stamp;		/**< completions produced, for FIFO order */
	uint64_t stale;		/**< send completions polled after a newer one freed them */
	struct qp_sim_errors err;	/**< failures seen */
};

/** Two connected QPs. */
struct qp_sim {
	struct qp_sim_qp qp[2];	/**< qp[0] and qp[1] are peers */
};

/**
 * Create two connected QPs with empty queues.
 *
 * @param sim
 *   Storage for the pair.
 * @param cfg
 *   Sizes of qp[0] and qp[1].
 * @param order
 *   Completion interleaving of both CQs.
 * @param send_ooo_pct
 *   In QP_SIM_RANDOM order, the percentage of send completion polls that
 *   take a random pending one instead of the oldest; 0 otherwise.
 * @param seed
 *   Seed of the generators.
 * @return
 *   0, or -ENOMEM.
 */
int qp_sim_create(struct qp_sim *sim, const struct qp_sim_cfg cfg[2], enum qp_sim_order order,
		  uint32_t send_ooo_pct, uint64_t seed);

/**
 * Free what qp_sim_create() allocated.
 *
 * @param sim
 *   The pair.
 */
void qp_sim_destroy(struct qp_sim *sim);

/**
 * Post one send WR.
 *
 * @param qp
 *   The QP.
 * @param wr
 *   The WR; copied.
 * @return
 *   0, or -ENOMEM when the SQ is full (also counted in `err.enomem`).
 */
int qp_sim_post_send(struct qp_sim_qp *qp, const struct qp_sim_wr *wr);

/**
 * Post one receive buffer.
 *
 * @param qp
 *   The QP.
 * @param wr_id
 *   Returned in the buffer's completion.
 * @return
 *   0, or -ENOMEM when rq_size buffers are posted (also counted).
 */
int qp_sim_post_recv(struct qp_sim_qp *qp, uint64_t wr_id);

/**
 * Let the NIC execute the oldest WRs of the SQ.
 *
 * A SEND consumes the peer's oldest receive buffer and produces a receive
 * completion there; a signaled WR produces a send completion here.
 *
 * @param qp
 *   The QP.
 * @param max
 *   Most WRs to execute.
 * @return
 *   WRs executed.
 */
unsigned int qp_sim_execute(struct qp_sim_qp *qp, unsigned int max);

/**
 * Poll completions in the QP's completion order.
 *
 * A polled send completion frees every SQ slot up to and including its WR.
 *
 * @param qp
 *   The QP.
 * @param wc
 *   Receives the completions.
 * @param n
 *   Room in @p wc.
 * @return
 *   Completions returned.
 */
unsigned int qp_sim_poll_cq(struct qp_sim_qp *qp, struct qp_sim_wc *wc, unsigned int n);

/**
 * SQ slots in use: posted and not freed.
 *
 * @param qp
 *   The QP.
 * @return
 *   `sq_pi - sq_ci`.
 */
static inline uint32_t
qp_sim_sq_used(const struct qp_sim_qp *qp)
{
	return (uint32_t)(qp->sq_pi - qp->sq_ci);
}

/**
 * Completions waiting in the CQ.
 *
 * @param qp
 *   The QP.
 * @return
 *   Send plus receive completions not polled yet.
 */
static inline uint32_t
qp_sim_cq_used(const struct qp_sim_qp *qp)
{
	return qp->scq_count + qp->rcq_count;
}

/**
 * A fast seeded generator (xorshift64*), shared with the tests that drive
 * the simulator.
 *
 * @param state
 *   Non-zero state, updated.
 * @return
 *   64 pseudo-random bits.
 */
static inline uint64_t
qp_sim_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * UINT64_C(0x2545f4914f6cdd1d);
}

/**
 * A uniform draw in [0, n).
 *
 * @param state
 *   Generator state.
 * @param n
 *   Bound, > 0.
 * @return
 *   The draw.
 */
static inline uint32_t
qp_sim_below(uint64_t *state, uint32_t n)
{
	return (uint32_t)(((qp_sim_rand(state) >> 32) * n) >> 32);
}

#endif /* QP_SIM_H */
