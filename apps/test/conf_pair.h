/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_TEST_CONF_PAIR_H
#define RDP_TEST_CONF_PAIR_H

/**
 * @file
 * Two RC QPs on the device under test (`--driver`), connected to each other,
 * each with its own CQ and two MRs: `rx` (receive and remote-write target,
 * from rdp_mr_alloc()) and `tx` (send source). The conformance suite and
 * the shm tests build on it.
 */

#include <stdint.h>

#include "rdp_dev.h"

#define CONF_BUF_SIZE 65536u

/** One end of the pair. */
struct conf_side {
	struct rdp_qp *qp;
	struct rdp_cq *cq;
	struct rdp_mr *rx;
	struct rdp_mr *tx;
};

/** Sizes and transport parameters of a pair. */
struct conf_opts {
	uint32_t sq;          /**< max_send_wr */
	uint32_t rq;          /**< max_recv_wr */
	uint32_t cqe;         /**< each CQ */
	uint32_t send_sge;
	uint32_t recv_sge;
	uint8_t rnr_retry;    /**< 0 = RNR is fatal */
	uint8_t min_rnr_timer;
};

struct conf_pair {
	struct rdp_dev *dev;
	struct rdp_pd *pd;
	struct conf_side a;
	struct conf_side b;
};

/** Defaults: S=16, R=16, cqe=64, 1 SGE, rnr_retry=0. */
void conf_opts_default(struct conf_opts *o);

/** Open the device named by @p spec (NULL: the driver under test) and connect a pair; asserts. */
void conf_pair_open(struct conf_pair *p, const char *spec, const struct conf_opts *o);

/** Destroy everything; asserts every call succeeds. */
void conf_pair_close(struct conf_pair *p);

/** Post one receive of [off, off+len) of the side's rx MR. Returns the post error. */
int conf_post_recv(struct conf_side *s, uint64_t wr_id, uint32_t off, uint32_t len);

/**
 * Post one send from [off, off+len) of the side's tx MR (len 0: no SGE).
 * For RDP_WR_RDMA_WRITE, @p raddr / @p rkey name the target.
 * Returns the post error (0 when accepted).
 */
int conf_post_send(struct conf_side *s, uint8_t opcode, uint8_t flags, uint64_t wr_id,
		   uint32_t off, uint32_t len, uint32_t imm, uint64_t raddr, uint32_t rkey);

/** Poll until @p want completions arrived or @p ms passed; asserts poll never fails. */
int conf_poll(struct rdp_cq *cq, struct rdp_wc *wc, int want, int ms);

/** Assert that no completion arrives within @p ms. */
void conf_quiet(struct rdp_cq *cq, int ms);

/** Current state of a QP. */
unsigned int conf_qp_state(struct rdp_qp *qp);

/** Seconds on the monotonic clock. */
double conf_now(void);

#endif /* RDP_TEST_CONF_PAIR_H */
