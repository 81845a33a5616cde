/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_TEST_STREAM_H
#define RDP_TEST_STREAM_H

/**
 * @file
 * A message stream between two endpoints driven by a flow-control policy,
 * over any driver: the test bed for the credit protocol (and, as a fixture,
 * for the legacy brpc window it replaces).
 *
 * - `STREAM_CREDIT`: lib/credit used directly. `wr_id` carries the kind and
 *   the sequence number; data is SEND_WITH_IMM with piggybacked credits in
 *   `imm`; pure acks are unsignaled zero-byte SEND_WITH_IMM; reclaims are
 *   signaled zero-length RDMA WRITEs; every receive is posted again at once.
 * - `STREAM_LEGACY`: one window refilled by the acks' immediate data, every
 *   T_sig-th data WR signaled, SQ never consulted (test fixture).
 *
 * Every endpoint checks what it receives: exactly once, in order, intact.
 * With `audit` it also checks that every WR completes at most once and that
 * after a failure every outstanding WR completes (stream_ep_audit_*()).
 *
 * Runners: stream_run_pair() drives both endpoints from one thread in one
 * process; stream_run_xproc() puts the second endpoint in a forked child
 * and exchanges addresses over a socketpair.
 */

#include <stdbool.h>
#include <stdint.h>

#include "rdp_credit.h"
#include "rdp_dev.h"
#include "legacy_window.h"

enum stream_policy { STREAM_CREDIT = 0, STREAM_LEGACY };

/** What one endpoint does. */
struct stream_cfg {
	uint64_t count;               /**< data messages this endpoint sends */
	uint64_t expect;              /**< data messages it expects to receive */
	uint32_t msg_size;            /**< bytes per data message, >= 16 */
	uint8_t policy;               /**< enum stream_policy */
	bool audit;                   /**< track every WR (failure tests) */
	struct rdp_credit_params cp;  /**< sizes; the legacy policy uses sq/rq/T_sig */
	uint32_t legacy_window;       /**< initial legacy window */
};

/** Counters of one endpoint; a healthy run has zeros in the anomaly ones. */
struct stream_stats {
	uint64_t sent;          /**< data messages posted */
	uint64_t received;      /**< data messages received in order */
	uint64_t enomem;        /**< post_send refused for a full SQ (anomaly) */
	uint64_t post_errors;   /**< other post failures (anomaly) */
	uint64_t rnr;           /**< RNR_RETRY_EXC_ERR completions (anomaly) */
	uint64_t wc_errors;     /**< other error completions except flushes */
	uint64_t flushed;       /**< WR_FLUSH_ERR completions */
	uint64_t bad_data;      /**< out of order, duplicated or corrupt (anomaly) */
	uint64_t cq_errors;     /**< poll_cq < 0 (anomaly) */
	uint64_t audit_errors;  /**< a WR completed twice, or unposted (anomaly) */
	uint64_t first_enomem_at; /**< `sent` when the first ENOMEM happened */
};

/** One endpoint. */
struct stream_ep {
	struct stream_cfg cfg;
	struct rdp_dev *dev;
	struct rdp_pd *pd;
	struct rdp_cq *cq;
	struct rdp_qp *qp;
	struct rdp_mr *rx;
	struct rdp_mr *tx;
	struct rdp_credit cr;
	struct legacy_window lw;
	uint64_t rx_next;          /**< next data sequence expected */
	uint32_t nb_slots;
	uint32_t *repost;          /**< receive slots to post again */
	uint32_t nb_repost;
	uint64_t last_data_wr;     /**< WR sequence of the last data message + 1 */
	bool reclaim_final;        /**< a reclaim was posted after the last data message */
	bool failed;               /**< an error completion was seen: stop sending */
	uint8_t *sq_state;         /**< audit: per sequence number */
	uint64_t sq_cap;
	uint8_t *rq_state;         /**< audit: per receive slot */
	uint64_t first_err_seq;    /**< audit: smallest failed send sequence */
	struct stream_stats st;
};

/** Fill @p cfg with a working configuration for @p count messages each way. */
void stream_cfg_default(struct stream_cfg *cfg, uint64_t count);

/** Create the endpoint's objects on @p dev and post its receives; asserts. */
void stream_ep_open(struct stream_ep *ep, struct rdp_dev *dev, const struct stream_cfg *cfg);

/** Connect to the peer; @p peer_cp are the peer's credit parameters. Asserts. */
void stream_ep_connect(struct stream_ep *ep, const struct rdp_qp_addr *peer,
		       const struct rdp_credit_params *peer_cp);

/** Poll once and post what the policy allows; returns completions + posts. */
int stream_ep_progress(struct stream_ep *ep);

/** Everything sent and received, and every send covered by a completion. */
bool stream_ep_done(const struct stream_ep *ep);

/**
 * After a failure: has every outstanding WR completed? (audit mode)
 * True when all posted receives completed and every send from the first
 * failed one up to the last posted completed (sends that ran unsignaled
 * before the error make no completion, as on verbs).
 */
bool stream_ep_audit_drained(const struct stream_ep *ep);

/** Destroy the endpoint's objects (not the device); asserts. */
void stream_ep_close(struct stream_ep *ep);

/** Result of a runner. */
struct stream_result {
	struct stream_stats a;
	struct stream_stats b;
	double secs;
};

/**
 * Run endpoints a and b in this thread on one device opened from @p spec
 * until both are done (or stall for 30 s).
 *
 * @return 0 when both finished, -ETIMEDOUT on a stall, -EIO when a side
 *   stopped on an error (see the stats).
 */
int stream_run_pair(const char *spec, const struct stream_cfg *ca, const struct stream_cfg *cb,
		    struct stream_result *res);

/**
 * Same with endpoint b in a forked child process, its own device opened
 * from @p spec_b. The child reports its stats back.
 */
int stream_run_xproc(const char *spec_a, const char *spec_b, const struct stream_cfg *ca,
		     const struct stream_cfg *cb, struct stream_result *res);

/** Print a result line: messages, seconds, messages per second. */
void stream_result_print(const char *what, const struct stream_result *res);

/** The anomaly counters of a healthy run are zero. */
void stream_assert_clean(const struct stream_stats *s, const char *side);

#endif /* RDP_TEST_STREAM_H */
