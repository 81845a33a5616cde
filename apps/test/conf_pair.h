/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_TEST_CONF_PAIR_H
#define RDP_TEST_CONF_PAIR_H

/**
 * @file
 * Two RC QPs on the device under test (`--driver`), connected to each other,
 * each with its own CQ and two MRs: `rx` (receive buffer, RDMA WRITE target
 * and RDMA READ source, from rdp_mr_alloc()) and `tx` (send source and
 * RDMA READ destination, no remote access), and `app`: application memory
 * (malloc'd, deliberately misaligned) registered with rdp_mr_reg() for
 * remote WRITE and READ. The conformance suite and
 * the shm tests build on it.
 *
 * With `RDP_TEST_CONF_PEER=process` in the environment, side b of a pair
 * opened on the driver under test lives in a forked child process (its own
 * device), driven over a socketpair: every helper below taking a side works
 * on both kinds, so a conformance test runs unchanged in one process or
 * across two. Only side a's objects may be touched directly.
 */

#include <stdbool.h>
#include <stdint.h>

#include "rdp_dev.h"

#define CONF_BUF_SIZE 65536u

/** One end of the pair. */
struct conf_side {
	struct rdp_qp *qp;    /**< NULL on a remote side */
	struct rdp_cq *cq;    /**< NULL on a remote side */
	struct rdp_mr *rx;    /**< NULL on a remote side */
	struct rdp_mr *tx;    /**< NULL on a remote side */
	uint64_t rx_addr;     /**< rx address as the peer names it (RDMA WRITE) */
	uint32_t rx_rkey;     /**< rx rkey */
	uint64_t tx_addr;     /**< tx address as the peer names it */
	uint32_t tx_rkey;     /**< tx rkey: a key the peer may not use */
	struct rdp_mr *app;   /**< NULL on a remote side, or once deregistered */
	void *app_mem;        /**< what malloc() gave (app starts 3 bytes in) */
	uint64_t app_addr;    /**< app address as the peer names it */
	uint32_t app_rkey;
	uint32_t qp_num;
	int agent;            /**< socket to the process holding it, or -1 */
	int pid;              /**< that process */
	bool cq_borrowed;     /**< cq is not the side's own (conf_pair_open_srq()) */
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
	uint8_t rd_atomic;    /**< max_rd_atomic and max_dest_rd_atomic, both sides */
};

struct conf_pair {
	struct rdp_dev *dev;
	struct rdp_pd *pd;
	struct conf_side a;
	struct conf_side b;
};

/** Defaults: S=16, R=16, cqe=64, 1 SGE, rnr_retry=0, rd_atomic=4. */
void conf_opts_default(struct conf_opts *o);

/** Open the device named by @p spec (NULL: the driver under test) and connect a pair; asserts. */
void conf_pair_open(struct conf_pair *p, const char *spec, const struct conf_opts *o);

/** Destroy everything; asserts every call succeeds. */
void conf_pair_close(struct conf_pair *p);

/**
 * Connect a pair whose side a is a QP on @p dev and @p pd (opened by the
 * caller on the driver under test), on @p cq (send and recv CQ, not the
 * side's own) and receiving from @p srq; side b is as conf_pair_open()
 * makes it (another process with RDP_TEST_CONF_PEER=process). Asserts.
 */
void conf_pair_open_srq(struct conf_pair *p, struct rdp_dev *dev, struct rdp_pd *pd,
			struct rdp_cq *cq, struct rdp_srq *srq, const struct conf_opts *o);

/**
 * Before conf_pair_open_srq(), and before this process opens a device:
 * fork side b's process (RDP_TEST_CONF_PEER=process) while this one has no
 * threads yet (a device may start one, and ThreadSanitizer refuses to run
 * a child forked after that).
 */
void conf_pair_prepare_srq(struct conf_pair *p, const struct conf_opts *o);

/** Give up a pair prepared and never opened (its process, if any, exits). */
void conf_pair_unprepare_srq(struct conf_pair *p);

/** Destroy what conf_pair_open_srq() made (not the device, PD, CQ or SRQ); asserts. */
void conf_pair_close_srq(struct conf_pair *p);

/**
 * Connect another pair, both sides in this process, on the device and PD
 * of @p on (whatever happened to that device meanwhile); asserts.
 */
void conf_pair_open_more(struct conf_pair *p, const struct conf_pair *on,
			 const struct conf_opts *o);

/** Destroy what conf_pair_open_more() made (not the device); asserts. */
void conf_pair_close_more(struct conf_pair *p);

/** Post one receive of [off, off+len) of the side's rx MR. Returns the post error. */
int conf_post_recv(struct conf_side *s, uint64_t wr_id, uint32_t off, uint32_t len);

/**
 * Post one send from [off, off+len) of the side's tx MR (len 0: no SGE).
 * For RDP_WR_RDMA_WRITE, @p raddr / @p rkey name the target; for
 * RDP_WR_RDMA_READ the source, and the range of tx is where the data lands.
 * Returns the post error (0 when accepted).
 */
int conf_post_send(struct conf_side *s, uint8_t opcode, uint8_t flags, uint64_t wr_id,
		   uint32_t off, uint32_t len, uint32_t imm, uint64_t raddr, uint32_t rkey);

/** Post one receive over several [off, len) ranges of rx. Returns the post error. */
int conf_post_recv_sg(struct conf_side *s, uint64_t wr_id, const uint32_t (*r)[2], uint32_t n);

/** Post one signaled SEND gathered from several [off, len) ranges of tx. */
int conf_post_send_sg(struct conf_side *s, uint64_t wr_id, const uint32_t (*r)[2], uint32_t n);

/** Poll the side's CQ until @p want completions arrived or @p ms passed; asserts poll never fails. */
int conf_poll(struct conf_side *s, struct rdp_wc *wc, int want, int ms);

/** Assert that no completion arrives on the side's CQ within @p ms. */
void conf_quiet(struct conf_side *s, int ms);

/** Current state of the side's QP. */
unsigned int conf_qp_state(struct conf_side *s);

/** Move the side's QP to RDP_QPS_ERR. */
void conf_qp_err(struct conf_side *s);

/** Resize the side's CQ; returns rdp_cq_resize()'s result. */
int conf_cq_resize(struct conf_side *s, uint32_t cqe);

/** Fill [off, off+len) of tx with a pattern made from @p seed. */
void conf_tx_fill(struct conf_side *s, uint32_t off, uint32_t len, uint8_t seed);

/** The side's regions, for conf_read(). */
enum conf_region {
	CONF_RX = 0,
	CONF_TX = 1,
	CONF_APP = 2,
};

/** Copy [off, off+len) of a region (enum conf_region) into @p buf (len <= 4096). */
void conf_read(struct conf_side *s, unsigned int region, uint32_t off, void *buf, uint32_t len);

/**
 * RDMA WRITE [@p src_off, +@p len) of a's tx (filled from @p seed) into b's
 * rx at @p dst_off, then RDMA READ it back into a's tx at @p back_off, each
 * signaled; asserts both succeed, that the bytes landed at both places, and
 * that no other byte of either region changed.
 */
void conf_rdma_round_trip(struct conf_pair *p, uint32_t src_off, uint32_t dst_off, uint32_t len,
			  uint32_t back_off, uint8_t seed);

/** Deregister the side's app memory (the memory stays); returns rdp_mr_free()'s result. */
int conf_app_dereg(struct conf_side *s);

/** Destroy the side's QP now (conf_pair_close() then skips it). */
void conf_qp_destroy(struct conf_side *s);

#endif /* RDP_TEST_CONF_PAIR_H */
