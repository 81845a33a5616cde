/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_DEV_H
#define RDP_DEV_H

/**
 * @file
 * The device layer: RDMA objects with verbs semantics, behind drivers.
 *
 * - Devices are opened by a driver spec `NAME[:KEY=VALUE,...]`, for example
 *   `shm:cqe_order=recv_first,send_cqe_delay=3` or `verbs:device=rxe0`.
 *   rdp_dev_default_spec() picks verbs when an active RDMA port exists and
 *   shm otherwise, and says why.
 * - Objects map one to one onto verbs: protection domain (PD), memory region
 *   (MR), completion queue (CQ, never with a completion channel), reliable
 *   connected queue pair (QP). Work requests and completions are our own
 *   structs; nothing above this layer names `ibv_*`.
 * - The fast path (rdp_post_send(), rdp_post_recv(), rdp_poll_cq()) is a
 *   burst call through a function pointer stored in the object when it is
 *   created; it is never NULL, allocates nothing, takes no lock, makes no
 *   syscall and rings one doorbell per burst.
 * - The slow path returns 0 or a negative errno (constructors: NULL and
 *   `rte_errno`) and records a detail readable with rdp_err_msg(). An
 *   operation a driver does not implement fails with -ENOTSUP.
 *
 * Semantics every driver keeps (the conformance suite checks them):
 * - post_send fails with -ENOMEM once `max_send_wr` WRs are outstanding, a
 *   WR being outstanding until a *polled* signaled completion at or after it;
 * - a SEND that finds the remote RQ empty is RNR; with `rnr_retry = 0` it
 *   completes with RDP_WC_RNR_RETRY_EXC_ERR and the QP moves to error;
 * - unsignaled WRs make no completion when they succeed;
 * - a QP in error flushes every outstanding WR, unsignaled ones included,
 *   and every posted receive, with RDP_WC_WR_FLUSH_ERR; error completions
 *   must be classified by `wr_id`, never by opcode;
 * - immediate data is carried; a zero-length RDMA WRITE succeeds with no
 *   remote effect (the credit protocol's reclaim marker);
 * - a CQ that would overrun goes to error and says so (rdp_poll_cq() < 0 and
 *   an RDP_EVENT_CQ_ERR event), never silently;
 * - a shared receive queue (SRQ) gives its receives to its QPs in posting
 *   order, whichever QP a SEND arrives on; the completion comes on that QP's
 *   recv CQ with its `qp_num`; an SRQ that is empty is RNR as an empty RQ
 *   is; a QP in error flushes none of the SRQ's receives (only its own send
 *   WRs); a receive that was taken for a QP being destroyed completes (with
 *   that QP's number) or stays posted, never lost, and nothing waits for a
 *   "last WQE reached" event (rxe raises none); an armed limit raises one
 *   RDP_EVENT_SRQ_LIMIT when the receives left drop below it, then disarms.
 *
 * CONCURRENCY: a CQ and the QPs attached to it are used by one thread at a
 * time on the fast path (the poller lcore that owns them). Slow-path calls
 * on different objects may run on any thread; rdp_qp_modify() to
 * RDP_QPS_ERR and the event calls are safe while the owner polls. Creating
 * a QP on a CQ that is being polled is safe; destroying one may touch its
 * CQs, so it runs on the thread that polls them (or while nobody does).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "rdp_common.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rdp_dev;
struct rdp_pd;
struct rdp_cq;
struct rdp_qp;
struct rdp_srq;

/** Longest driver spec accepted by rdp_dev_open(), including the NUL. */
#define RDP_DEV_SPEC_MAX 256
/** Length of a GID. */
#define RDP_GID_LEN 16

/* ---------------------------------------------------------------------- */
/* Memory                                                                 */
/* ---------------------------------------------------------------------- */

/** MR access flags (a subset of verbs' access flags). */
enum rdp_access {
	RDP_ACCESS_LOCAL_WRITE = 1u << 0,  /**< receive into it */
	RDP_ACCESS_REMOTE_WRITE = 1u << 1, /**< peer may RDMA WRITE into it */
	RDP_ACCESS_REMOTE_READ = 1u << 2,  /**< peer may RDMA READ from it */
};

/**
 * Page flags of rdp_mr_alloc(), given with its RDP_ACCESS_* flags. Without
 * either, the memory is on base pages.
 */
enum rdp_alloc_flags {
	/**
	 * Hugepages (the default size) when the region is at least half a
	 * hugepage and enough are free; base pages otherwise.
	 */
	RDP_ALLOC_HUGE_TRY = 1u << 8,
	/** Hugepages whatever the length, or fail with ENOMEM. */
	RDP_ALLOC_HUGE_ONLY = 1u << 9,
};

/** A registered memory region. Drivers embed it first in their own MR. */
struct rdp_mr {
	void *addr;          /**< first byte */
	size_t length;       /**< bytes */
	uint32_t lkey;       /**< local key for SGEs */
	uint32_t rkey;       /**< remote key for RDMA WRITE and READ */
	unsigned int access; /**< RDP_ACCESS_* */
	size_t page_size;    /**< rdp_mr_alloc() memory: its page size; 0: the caller's memory */
	struct rdp_pd *pd;   /**< owner */
};

/* ---------------------------------------------------------------------- */
/* Work requests and completions                                          */
/* ---------------------------------------------------------------------- */

/** Send-queue opcodes. */
enum rdp_wr_opcode {
	RDP_WR_SEND = 0,          /**< consumes one remote receive */
	RDP_WR_SEND_WITH_IMM,     /**< same, with 32 bits of immediate data */
	RDP_WR_RDMA_WRITE,        /**< no remote receive, no remote completion */
	/**
	 * Reads total_len bytes at remote_addr (rkey, an MR the peer registered
	 * with RDP_ACCESS_REMOTE_READ) into the local scatter list (sg_list, in
	 * MRs with RDP_ACCESS_LOCAL_WRITE). No remote receive, no remote
	 * completion. It holds one of the responder's read slots
	 * (rdp_qp_conn_params.max_dest_rd_atomic) until its completion, or a
	 * later one of this SQ, is polled: a READ beyond them fails with
	 * RDP_WC_REM_INV_REQ_ERR, so the initiator must count its READs.
	 */
	RDP_WR_RDMA_READ,
};

/** Send flags. */
enum rdp_send_flags {
	RDP_SEND_SIGNALED = 1u << 0, /**< make a completion on success */
	RDP_SEND_INLINE = 1u << 1,   /**< copy the payload at post time */
};

/** One scatter/gather element. */
struct rdp_sge {
	uint64_t addr;   /**< virtual address inside a registered MR */
	uint32_t length; /**< bytes */
	uint32_t lkey;   /**< the MR's lkey */
};

/** A send work request. */
struct rdp_send_wr {
	uint64_t wr_id;              /**< returned in the completion */
	const struct rdp_sge *sg_list; /**< num_sge elements */
	uint32_t num_sge;            /**< 0 is legal (zero-length message) */
	uint8_t opcode;              /**< enum rdp_wr_opcode */
	uint8_t flags;               /**< enum rdp_send_flags */
	uint32_t imm;                /**< immediate data, host order */
	uint64_t remote_addr;        /**< RDMA WRITE target, RDMA READ source */
	uint32_t rkey;               /**< the remote MR's rkey (WRITE and READ) */
};

/** A receive work request. */
struct rdp_recv_wr {
	uint64_t wr_id;              /**< returned in the completion */
	const struct rdp_sge *sg_list; /**< num_sge elements */
	uint32_t num_sge;            /**< at most the QP's max_recv_sge */
};

/** Completion status, mirroring ibv_wc_status. */
enum rdp_wc_status {
	RDP_WC_SUCCESS = 0,
	RDP_WC_LOC_LEN_ERR,        /**< message longer than the receive buffer */
	RDP_WC_LOC_QP_OP_ERR,      /**< malformed WR */
	RDP_WC_LOC_PROT_ERR,       /**< SGE outside its MR or bad lkey */
	RDP_WC_WR_FLUSH_ERR,       /**< flushed because the QP is in error */
	RDP_WC_REM_INV_REQ_ERR,    /**< the remote side found the request invalid */
	RDP_WC_REM_ACCESS_ERR,     /**< bad rkey or remote address */
	RDP_WC_REM_OP_ERR,         /**< the remote side failed the operation */
	RDP_WC_RETRY_EXC_ERR,      /**< transport retries exhausted (peer gone) */
	RDP_WC_RNR_RETRY_EXC_ERR,  /**< receiver not ready, retries exhausted */
	RDP_WC_GENERAL_ERR,        /**< anything else */
	RDP_WC_STATUS_MAX
};

/** Completion opcodes. Not meaningful when status != RDP_WC_SUCCESS. */
enum rdp_wc_opcode {
	RDP_WC_SEND = 0,
	RDP_WC_RDMA_WRITE,
	RDP_WC_RECV,
	RDP_WC_RDMA_READ,
};

/** Completion flags. */
enum rdp_wc_flags {
	RDP_WC_WITH_IMM = 1u << 0, /**< `imm` is valid */
};

/** A work completion. */
struct rdp_wc {
	uint64_t wr_id;    /**< as posted; the only safe classifier on error */
	uint8_t status;    /**< enum rdp_wc_status */
	uint8_t opcode;    /**< enum rdp_wc_opcode */
	uint8_t wc_flags;  /**< enum rdp_wc_flags */
	uint8_t reserved;
	uint32_t byte_len; /**< received bytes (receives only) */
	uint32_t imm;      /**< immediate data, host order */
	uint32_t qp_num;   /**< local QP the WR belongs to */
};

/**
 * Name of a completion status.
 *
 * @param status
 *   An enum rdp_wc_status value.
 * @return
 *   A static string such as "RNR_RETRY_EXC_ERR", or "UNKNOWN".
 */
const char *rdp_wc_status_str(unsigned int status);

/* ---------------------------------------------------------------------- */
/* Queue pairs                                                            */
/* ---------------------------------------------------------------------- */

/** QP states (verbs' subset for RC). */
enum rdp_qp_state {
	RDP_QPS_RESET = 0,
	RDP_QPS_INIT,
	RDP_QPS_RTR,
	RDP_QPS_RTS,
	RDP_QPS_ERR,
};

/** QP capacities. */
struct rdp_qp_cap {
	uint32_t max_send_wr;     /**< SQ depth asked for (and accounted) */
	uint32_t max_recv_wr;     /**< RQ depth */
	uint32_t max_send_sge;    /**< SGEs per send WR */
	uint32_t max_recv_sge;    /**< SGEs per receive WR */
	uint32_t max_inline_data; /**< bytes postable with RDP_SEND_INLINE */
};

/** Most MRs rdp_qp_init_attr.peer_mrs may name. */
#define RDP_QP_MAX_PEER_MRS 8

/** Arguments of rdp_qp_create(). */
struct rdp_qp_init_attr {
	struct rdp_cq *send_cq; /**< may equal recv_cq (the usual case) */
	struct rdp_cq *recv_cq;
	struct rdp_qp_cap cap;
	void *user_ctx;         /**< stored in rdp_qp.user_ctx */
	/**
	 * The MRs the peer may place data into through this QP (receive
	 * buffers, RDMA WRITE targets), at most RDP_QP_MAX_PEER_MRS; receives
	 * from other MRs are refused. NULL: every such MR of the PD that exists
	 * when the QP connects. Drivers whose peer needs the memory mapped
	 * (shm) share these as receive targets, so one endpoint's peer sends
	 * into one endpoint's buffers only (MRs with remote access are shared
	 * for WRITE and READ besides); the verbs driver ignores it.
	 */
	struct rdp_mr *const *peer_mrs;
	uint32_t nb_peer_mrs;   /**< entries in peer_mrs */
	/**
	 * Take receives from this shared receive queue instead of an RQ of the
	 * QP's own (NULL: its own RQ). cap.max_recv_wr and cap.max_recv_sge
	 * are then ignored and rdp_post_recv() on the QP fails with -EINVAL.
	 * The SRQ belongs to the QP's device. On shm, the QPs of one SRQ share
	 * one recv_cq and name no peer_mrs (their peers map every receive MR
	 * of the PD).
	 */
	struct rdp_srq *srq;
};

/** Arguments of rdp_srq_create(). */
struct rdp_srq_init_attr {
	uint32_t max_wr;    /**< receives it holds, 1..rdp_dev_attr.max_srq_wr */
	uint32_t max_sge;   /**< SGEs per receive, 0..rdp_dev_attr.max_srq_sge (0 means 1) */
	uint32_t srq_limit; /**< limit armed at creation (see rdp_srq_modify_limit()), 0: none */
	int socket;         /**< NUMA node of its memory, or -1 */
	void *user_ctx;     /**< stored in rdp_srq.user_ctx */
};

/** Result of rdp_srq_query(). */
struct rdp_srq_attr {
	uint32_t max_wr;    /**< as asked (accounting uses it) */
	uint32_t max_sge;   /**< SGEs per receive */
	uint32_t srq_limit; /**< the armed limit, 0 when none (or once it fired) */
};

/** What a peer needs to connect to a QP; exchanged in the handshake. */
struct rdp_qp_addr {
	uint32_t qpn;                /**< QP number */
	uint32_t psn;                /**< initial packet sequence number */
	uint8_t gid[RDP_GID_LEN];    /**< port GID (RoCE) or driver address (shm) */
	uint16_t lid;                /**< InfiniBand LID, 0 on RoCE and shm */
	uint16_t reserved;
	uint32_t mtu;                /**< active MTU in bytes */
};

/** Transport parameters applied when moving to RTR and RTS. */
struct rdp_qp_conn_params {
	uint32_t path_mtu;     /**< bytes; 0 means min(local, remote) */
	uint8_t rnr_retry;     /**< 0..7, 7 = infinite; tests use 0 */
	uint8_t retry_cnt;     /**< 0..7 */
	uint8_t timeout;       /**< 0..31, 4.096 us * 2^timeout */
	uint8_t min_rnr_timer; /**< 0..31 */
	/**
	 * RDMA READs this QP may have outstanding as the initiator, at most the
	 * device's max_qp_init_rd_atom (RTS); 0 when it never reads.
	 */
	uint8_t max_rd_atomic;
	/**
	 * RDMA READs its peer may have outstanding against it, at most the
	 * device's max_qp_rd_atom (RTR); 0: the peer may not read (a READ
	 * fails with RDP_WC_REM_INV_REQ_ERR at the peer).
	 */
	uint8_t max_dest_rd_atomic;
};

/** rdp_qp_modify() mask bits. */
enum rdp_qp_attr_mask {
	RDP_QP_ATTR_STATE = 1u << 0,  /**< attr->state */
	RDP_QP_ATTR_REMOTE = 1u << 1, /**< attr->remote (with RTR) */
	RDP_QP_ATTR_CONN = 1u << 2,   /**< attr->conn (with RTR/RTS) */
};

/** Arguments of rdp_qp_modify() and result of rdp_qp_query(). */
struct rdp_qp_attr {
	enum rdp_qp_state state;
	struct rdp_qp_addr remote;
	struct rdp_qp_conn_params conn;
};

/* ---------------------------------------------------------------------- */
/* Device, ports and events                                               */
/* ---------------------------------------------------------------------- */

/** Link layer of a port. */
enum rdp_link_layer {
	RDP_LINK_SHM = 0,    /**< shared memory, one host */
	RDP_LINK_ETHERNET,   /**< RoCE */
	RDP_LINK_INFINIBAND, /**< InfiniBand, LID addressed */
};

/** Device and port attributes. */
struct rdp_dev_attr {
	char driver[16];          /**< driver name */
	char name[64];            /**< device name, e.g. "rxe0" or "shm0" */
	uint32_t max_qp_wr;       /**< deepest SQ/RQ */
	uint32_t max_sge;         /**< SGEs per WR */
	uint32_t max_cqe;         /**< deepest CQ */
	uint32_t max_inline_data; /**< 0 when inline sends are not supported */
	uint32_t max_qp_rd_atom;  /**< highest max_dest_rd_atomic (READs served per QP) */
	uint32_t max_qp_init_rd_atom; /**< highest max_rd_atomic (READs issued per QP) */
	uint8_t port;             /**< port in use */
	uint8_t link_layer;       /**< enum rdp_link_layer */
	uint8_t port_active;      /**< 1 when the port can carry traffic */
	uint8_t gid_index;        /**< GID index in use */
	uint8_t gid[RDP_GID_LEN]; /**< GID in use */
	uint16_t lid;             /**< LID (InfiniBand) */
	uint32_t active_mtu;      /**< bytes */
	int numa_node;            /**< NUMA node of the device, -1 unknown */
	uint32_t fds_per_qp;      /**< file descriptors one connected QP may hold at
				   *   once, its setup included (0 for verbs) */
	uint32_t max_srq_wr;      /**< deepest SRQ, 0 without SRQ support */
	uint32_t max_srq_sge;     /**< SGEs per SRQ receive */
	uint8_t onesided_by_cpu;  /**< 1: the initiator's CPU copies a one-sided
				   *   operation's bytes as it is posted (shm);
				   *   0: the device moves them (a NIC's DMA) */
};

/** Asynchronous event types, mirroring verbs' affiliated events. */
enum rdp_event_type {
	RDP_EVENT_QP_FATAL = 0, /**< a QP went to error (qp set) */
	RDP_EVENT_CQ_ERR,       /**< a CQ overran (cq set) */
	RDP_EVENT_PORT_ERR,     /**< the link went down */
	RDP_EVENT_PORT_ACTIVE,  /**< the link came up */
	RDP_EVENT_DEVICE_FATAL, /**< the device is gone */
	/**
	 * The receives left on an SRQ dropped below its armed limit (srq set);
	 * the limit is disarmed (rdp_srq_modify_limit() arms it again).
	 */
	RDP_EVENT_SRQ_LIMIT,
};

/**
 * One asynchronous event. An object destroyed before the event was read is
 * given as NULL, never as a dangling pointer.
 */
struct rdp_event {
	enum rdp_event_type type;
	struct rdp_qp *qp; /**< affected QP or NULL */
	struct rdp_cq *cq; /**< affected CQ or NULL */
	struct rdp_srq *srq; /**< affected SRQ or NULL */
};

/** Device-wide counters; every driver fills every field it can. */
struct rdp_dev_stats {
	uint64_t send_posted;   /**< send WRs accepted by post_send */
	uint64_t recv_posted;   /**< receive WRs accepted by post_recv and post_srq_recv */
	uint64_t completions;   /**< completions returned by poll_cq */
	uint64_t enomem;        /**< post_send refusals for a full SQ */
	uint64_t rnr;           /**< sends that found the remote RQ empty */
	uint64_t flushed;       /**< completions with RDP_WC_WR_FLUSH_ERR */
	uint64_t errors;        /**< other error completions */
	uint64_t cq_overruns;   /**< CQs that went to error by overrun */
	uint64_t rdma_syscalls; /**< one-sided WRs run with a system call (shm: into peer
				 *   memory it has not mapped); 0 where the NIC runs them */
};

/* ---------------------------------------------------------------------- */
/* Generic object heads (drivers embed these first)                      */
/* ---------------------------------------------------------------------- */

/** Fast-path post_send: returns WRs accepted, sets *err (0 or -errno) for wr[ret]. */
typedef uint16_t (*rdp_post_send_fn)(struct rdp_qp *qp, const struct rdp_send_wr *wr,
				     uint16_t n, int *err);
/** Fast-path post_recv: returns WRs accepted, sets *err (0 or -errno) for wr[ret]. */
typedef uint16_t (*rdp_post_recv_fn)(struct rdp_qp *qp, const struct rdp_recv_wr *wr,
				     uint16_t n, int *err);
/** Fast-path post_srq_recv: returns WRs accepted, sets *err (0 or -errno) for wr[ret]. */
typedef uint16_t (*rdp_post_srq_recv_fn)(struct rdp_srq *srq, const struct rdp_recv_wr *wr,
					 uint16_t n, int *err);
/** Fast-path poll: returns completions written (0..n) or -EIO when the CQ is in error. */
typedef int (*rdp_poll_cq_fn)(struct rdp_cq *cq, struct rdp_wc *wc, uint16_t n);

/** Generic head of a completion queue. */
struct rdp_cq {
	rdp_poll_cq_fn poll;  /**< fast path, never NULL */
	struct rdp_dev *dev;
	uint32_t cqe;         /**< capacity (what was asked for) */
	int socket;           /**< NUMA node of its memory */
	void *user_ctx;       /**< free for the owner */
};

/** Generic head of a queue pair. */
struct rdp_qp {
	rdp_post_send_fn post_send; /**< fast path, never NULL */
	rdp_post_recv_fn post_recv; /**< fast path, never NULL */
	struct rdp_dev *dev;
	struct rdp_pd *pd;
	struct rdp_cq *send_cq;
	struct rdp_cq *recv_cq;
	uint32_t qp_num;
	struct rdp_qp_cap cap;      /**< as asked for: accounting uses these */
	void *user_ctx;             /**< from rdp_qp_init_attr */
	struct rdp_srq *srq;        /**< its SRQ, or NULL (set by the generic layer) */
};

/** Generic head of a shared receive queue. */
struct rdp_srq {
	rdp_post_srq_recv_fn post_recv; /**< fast path, never NULL */
	struct rdp_dev *dev;
	struct rdp_pd *pd;
	uint32_t max_wr;            /**< as asked for: accounting uses it */
	uint32_t max_sge;           /**< SGEs per receive */
	int socket;                 /**< NUMA node of its memory */
	void *user_ctx;             /**< from rdp_srq_init_attr */
	uint32_t nb_qps;            /**< (atomic) QPs using it, kept by the generic layer */
};

/* ---------------------------------------------------------------------- */
/* Fast path                                                              */
/* ---------------------------------------------------------------------- */

/**
 * Post a burst of send WRs (one doorbell).
 *
 * @param qp
 *   The QP; only its owner thread posts.
 * @param wr
 *   @p n work requests.
 * @param n
 *   Number of WRs.
 * @param err
 *   Set to 0 when all were accepted, else to the error of `wr[return]`:
 *   -ENOMEM (SQ full), -EINVAL (malformed WR: too many SGEs, bad opcode,
 *   inline too long), -EPERM (QP not yet RTS).
 * @return
 *   Number of WRs accepted, in order.
 */
static inline uint16_t
rdp_post_send(struct rdp_qp *qp, const struct rdp_send_wr *wr, uint16_t n, int *err)
{
	return qp->post_send(qp, wr, n, err);
}

/**
 * Post a burst of receive WRs (one doorbell).
 *
 * @param qp
 *   The QP; only its owner thread posts.
 * @param wr
 *   @p n work requests.
 * @param n
 *   Number of WRs.
 * @param err
 *   Set to 0 when all were accepted, else to the error of `wr[return]`:
 *   -ENOMEM (RQ full), -EINVAL (too many SGEs), -EPERM (QP still in RESET:
 *   post receives once it is INIT, before the peer can send).
 * @return
 *   Number of WRs accepted, in order.
 */
static inline uint16_t
rdp_post_recv(struct rdp_qp *qp, const struct rdp_recv_wr *wr, uint16_t n, int *err)
{
	return qp->post_recv(qp, wr, n, err);
}

/**
 * Post a burst of receive WRs to a shared receive queue (one doorbell).
 * Every QP created with the SRQ takes its next receive from it, in the
 * order they were posted.
 *
 * @param srq
 *   The SRQ; only its owner thread posts (shm: the thread that polls its
 *   QPs' recv CQ, or another one as for rdp_post_recv(); verbs: the
 *   thread that polls its QPs' recv CQs).
 * @param wr
 *   @p n work requests.
 * @param n
 *   Number of WRs.
 * @param err
 *   Set to 0 when all were accepted, else to the error of `wr[return]`:
 *   -ENOMEM (`max_wr` receives posted and not completed), -EINVAL (too
 *   many SGEs, or memory the driver cannot receive into: on shm, memory
 *   not from rdp_mr_alloc() of the SRQ's PD, or allocated after one of its
 *   QPs connected).
 * @return
 *   Number of WRs accepted, in order.
 */
static inline uint16_t
rdp_post_srq_recv(struct rdp_srq *srq, const struct rdp_recv_wr *wr, uint16_t n, int *err)
{
	return srq->post_recv(srq, wr, n, err);
}

/**
 * Poll a burst of completions.
 *
 * @param cq
 *   The CQ; only its owner thread polls.
 * @param wc
 *   Room for @p n completions.
 * @param n
 *   Burst size.
 * @return
 *   Completions written (0 when idle), or -EIO when the CQ is in error
 *   (overrun).
 */
static inline int
rdp_poll_cq(struct rdp_cq *cq, struct rdp_wc *wc, uint16_t n)
{
	return cq->poll(cq, wc, n);
}

/* ---------------------------------------------------------------------- */
/* Slow path                                                              */
/* ---------------------------------------------------------------------- */

/**
 * Choose a driver for this machine.
 *
 * Every registered driver is asked whether it can run here, in order of
 * preference (verbs, then shm).
 *
 * @param spec
 *   Receives the chosen driver spec (e.g. "verbs:device=mlx5_0" or "shm").
 * @param len
 *   Size of @p spec.
 * @param why
 *   Receives one sentence saying which driver and why (e.g. "no RDMA device
 *   with an active port; using the shm driver").
 * @param why_len
 *   Size of @p why.
 * @return
 *   0, or -ENODEV when no driver can run.
 */
int rdp_dev_default_spec(char *spec, size_t len, char *why, size_t why_len);

/**
 * Open a device.
 *
 * @param spec
 *   `NAME[:KEY=VALUE,...]`. Unknown drivers and unknown or malformed keys
 *   are refused with a detail naming them.
 * @return
 *   The device, or NULL with rte_errno: EINVAL (bad spec), ENOENT (no such
 *   driver or device), ENODEV (device unusable), ENOMEM.
 */
struct rdp_dev *rdp_dev_open(const char *spec);

/**
 * Close a device. Every object created on it must be destroyed first.
 *
 * @param dev
 *   The device, or NULL.
 * @return
 *   0, or -EBUSY when objects remain.
 */
int rdp_dev_close(struct rdp_dev *dev);

/**
 * Query device and port attributes.
 *
 * @param dev
 *   The device.
 * @param attr
 *   Filled on success.
 * @return
 *   0 or a negative errno from the driver.
 */
int rdp_dev_query(struct rdp_dev *dev, struct rdp_dev_attr *attr);

/**
 * Read device-wide counters.
 *
 * @param dev
 *   The device.
 * @param stats
 *   Filled on success.
 * @return
 *   0, or -ENOTSUP.
 */
int rdp_dev_stats_get(struct rdp_dev *dev, struct rdp_dev_stats *stats);

/**
 * Whether the device's network interface holds the IP address @p addr
 * (for RoCE: a GID of its port is that address): an endpoint whose route
 * to its peer leaves from @p addr uses this device (docs/configuration.md,
 * "Several devices").
 *
 * @param dev
 *   The device.
 * @param addr
 *   An AF_INET or AF_INET6 address (the port is ignored).
 * @return
 *   1 when it does, 0 when not, -ENOTSUP when the driver has no addresses
 *   (shm without its addr argument).
 */
int rdp_dev_owns_addr(struct rdp_dev *dev, const struct sockaddr *addr);

/**
 * A file descriptor that becomes readable when an event is pending.
 *
 * @param dev
 *   The device.
 * @return
 *   The fd (owned by the device), or -ENOTSUP.
 */
int rdp_dev_event_fd(struct rdp_dev *dev);

/**
 * Take one pending asynchronous event without blocking.
 *
 * @param dev
 *   The device.
 * @param ev
 *   Filled when an event is returned.
 * @return
 *   0 with an event, -EAGAIN when none is pending, -ENOTSUP.
 */
int rdp_dev_event_get(struct rdp_dev *dev, struct rdp_event *ev);

/**
 * Allocate a protection domain.
 *
 * @param dev
 *   The device.
 * @return
 *   The PD, or NULL with rte_errno (ENOMEM, ENOTSUP).
 */
struct rdp_pd *rdp_pd_alloc(struct rdp_dev *dev);

/**
 * Free a protection domain.
 *
 * @param pd
 *   The PD, or NULL.
 * @return
 *   0, or -EBUSY while MRs or QPs use it.
 */
int rdp_pd_free(struct rdp_pd *pd);

/**
 * Allocate memory suited to the driver and register it.
 *
 * This is how receive pools are made: the shm driver backs them with a
 * memfd its peers map; the verbs driver takes NUMA-local pages. With a
 * page flag (enum rdp_alloc_flags) the memory is on hugepages: a hugetlb
 * memfd on shm, a MAP_HUGETLB mapping on verbs; rdp_mr::page_size says
 * what it got.
 *
 * @param pd
 *   The PD.
 * @param len
 *   Bytes (rounded up to a page, or to a hugepage).
 * @param socket
 *   NUMA node, or -1 for any.
 * @param access
 *   RDP_ACCESS_* flags, the narrowest that works, and at most one of
 *   RDP_ALLOC_HUGE_TRY and RDP_ALLOC_HUGE_ONLY.
 * @return
 *   The MR (zero-filled memory), or NULL with rte_errno: EINVAL (length 0,
 *   unknown flags, both page flags), ENOMEM (no memory; with
 *   RDP_ALLOC_HUGE_ONLY, too few free hugepages, or none on this system).
 */
struct rdp_mr *rdp_mr_alloc(struct rdp_pd *pd, size_t len, int socket, unsigned int access);

/**
 * Register memory the caller owns.
 *
 * @param pd
 *   The PD.
 * @param addr
 *   First byte.
 * @param len
 *   Bytes.
 * @param access
 *   RDP_ACCESS_* flags. Any address and alignment. On shm, memory
 *   registered here can be a peer's RDMA WRITE target or READ source (the
 *   peer reaches it with process_vm_writev/readv) but not a receive
 *   buffer: receives need rdp_mr_alloc() memory, which the peer maps.
 * @return
 *   The MR, or NULL with rte_errno (EINVAL, ENOTSUP, ENOMEM).
 */
struct rdp_mr *rdp_mr_reg(struct rdp_pd *pd, void *addr, size_t len, unsigned int access);

/**
 * Deregister an MR (and free its memory when rdp_mr_alloc() made it).
 *
 * @param mr
 *   The MR, or NULL.
 * @return
 *   0 or a negative errno.
 */
int rdp_mr_free(struct rdp_mr *mr);

/**
 * Create a completion queue with no completion channel.
 *
 * @param dev
 *   The device.
 * @param cqe
 *   Capacity in completions (>= 1).
 * @param socket
 *   NUMA node of its memory, or -1.
 * @return
 *   The CQ, or NULL with rte_errno (EINVAL above max_cqe, ENOMEM).
 */
struct rdp_cq *rdp_cq_create(struct rdp_dev *dev, uint32_t cqe, int socket);

/**
 * Change a CQ's capacity; completions pending in it are kept.
 *
 * @param cq
 *   The CQ; its owner must not poll it concurrently.
 * @param cqe
 *   New capacity.
 * @return
 *   0, -EINVAL (below the completions pending or above max_cqe), -ENOTSUP.
 */
int rdp_cq_resize(struct rdp_cq *cq, uint32_t cqe);

/**
 * Destroy a CQ.
 *
 * @param cq
 *   The CQ, or NULL.
 * @return
 *   0, or -EBUSY while QPs use it.
 */
int rdp_cq_destroy(struct rdp_cq *cq);

/**
 * Create a reliable connected QP, in RESET state.
 *
 * @param pd
 *   The PD.
 * @param attr
 *   CQs and capacities, and the SRQ it receives from, if any.
 * @return
 *   The QP, or NULL with rte_errno (EINVAL, ENOMEM).
 */
struct rdp_qp *rdp_qp_create(struct rdp_pd *pd, const struct rdp_qp_init_attr *attr);

/**
 * Change QP state.
 *
 * Moving to RDP_QPS_ERR is allowed from any thread at any time and flushes
 * every outstanding WR.
 *
 * @param qp
 *   The QP.
 * @param attr
 *   New values.
 * @param mask
 *   RDP_QP_ATTR_* bits saying which fields of @p attr apply.
 * @return
 *   0, -EINVAL (illegal transition or attribute), or a driver errno.
 */
int rdp_qp_modify(struct rdp_qp *qp, const struct rdp_qp_attr *attr, unsigned int mask);

/**
 * rdp_qp_modify() without waiting on the network: a driver whose change
 * waits for its peer (the shm driver's RTR rendezvous) starts it and
 * returns -EINPROGRESS; the caller watches @p fd and calls
 * rdp_qp_modify_poll() when it is readable (or gives up with
 * rdp_qp_modify_abort()). Other drivers change the state at once. The
 * descriptor stays the driver's: stop watching it before each
 * rdp_qp_modify_poll() (and watch it again after -EINPROGRESS), since once
 * the change ends the driver may hand it to a thread of its own that
 * closes it at any moment (shm: the link to the peer, closed when the
 * peer goes).
 *
 * @param qp
 *   The QP.
 * @param attr
 *   New values.
 * @param mask
 *   RDP_QP_ATTR_* bits saying which fields of @p attr apply.
 * @param fd
 *   Receives the descriptor to watch for input when -EINPROGRESS.
 * @return
 *   0 (done), -EINPROGRESS (in progress), or as rdp_qp_modify().
 */
int rdp_qp_modify_start(struct rdp_qp *qp, const struct rdp_qp_attr *attr, unsigned int mask,
			int *fd);

/**
 * Go on with a change rdp_qp_modify_start() left in progress (without
 * waiting).
 *
 * @param qp
 *   The QP.
 * @return
 *   0 (done: the QP is in the new state), -EINPROGRESS (not yet), or the
 *   errno of its failure, with a detail in rdp_err_msg() (the change is
 *   over; the QP stays in its former state).
 */
int rdp_qp_modify_poll(struct rdp_qp *qp);

/**
 * Give up a change rdp_qp_modify_start() left in progress: its descriptor
 * is closed and the QP stays in its former state. Nothing when none is.
 *
 * @param qp
 *   The QP.
 */
void rdp_qp_modify_abort(struct rdp_qp *qp);

/**
 * Read the QP's current state.
 *
 * @param qp
 *   The QP.
 * @param attr
 *   Filled on success (state, and remote/conn once connected).
 * @return
 *   0 or a negative errno.
 */
int rdp_qp_query(struct rdp_qp *qp, struct rdp_qp_attr *attr);

/**
 * The local address a peer needs to connect to this QP.
 *
 * @param qp
 *   The QP.
 * @param addr
 *   Filled on success.
 * @return
 *   0 or a negative errno.
 */
int rdp_qp_local_addr(struct rdp_qp *qp, struct rdp_qp_addr *addr);

/**
 * Move a QP from RESET through INIT and RTR to RTS towards a peer.
 *
 * @param qp
 *   The QP, in RESET.
 * @param remote
 *   The peer's address (from its handshake).
 * @param conn
 *   Transport parameters.
 * @return
 *   0 or the first failing transition's errno.
 */
int rdp_qp_connect(struct rdp_qp *qp, const struct rdp_qp_addr *remote,
		   const struct rdp_qp_conn_params *conn);

/**
 * Destroy a QP. Completions of its WRs already in the CQ stay there.
 *
 * @param qp
 *   The QP, or NULL.
 * @return
 *   0 or a negative errno.
 */
int rdp_qp_destroy(struct rdp_qp *qp);

/**
 * Create a shared receive queue: receives posted once, taken by whichever
 * of its QPs a SEND arrives on (rdp_qp_init_attr.srq).
 *
 * @param pd
 *   The PD of its receive buffers (shm: and of its QPs).
 * @param attr
 *   Depth, SGEs per receive, the limit armed at creation, NUMA node.
 * @return
 *   The SRQ, or NULL with rte_errno: EINVAL (max_wr 0 or above
 *   max_srq_wr, max_sge above max_srq_sge, srq_limit above max_wr),
 *   ENOMEM, ENOTSUP (the driver has no SRQ).
 */
struct rdp_srq *rdp_srq_create(struct rdp_pd *pd, const struct rdp_srq_init_attr *attr);

/**
 * Destroy an SRQ. Its receives still posted are dropped without a
 * completion: their buffers are the owner's again.
 *
 * @param srq
 *   The SRQ, or NULL.
 * @return
 *   0, -EBUSY while a QP uses it, or a driver errno.
 */
int rdp_srq_destroy(struct rdp_srq *srq);

/**
 * Arm (or disarm) an SRQ's limit, as ibv_modify_srq() with IBV_SRQ_LIMIT:
 * once fewer than @p limit of its receives are left (posted and not taken
 * by a SEND), one RDP_EVENT_SRQ_LIMIT is raised and the limit disarmed.
 * The event may come when the receive that crossed it is completed.
 *
 * @param srq
 *   The SRQ.
 * @param limit
 *   0 (disarm) .. max_wr.
 * @return
 *   0, -EINVAL (above max_wr), -ENOTSUP, or a driver errno.
 */
int rdp_srq_modify_limit(struct rdp_srq *srq, uint32_t limit);

/**
 * Read an SRQ's attributes.
 *
 * @param srq
 *   The SRQ.
 * @param attr
 *   Filled on success (srq_limit is 0 once the limit fired).
 * @return
 *   0, -ENOTSUP, or a driver errno.
 */
int rdp_srq_query(struct rdp_srq *srq, struct rdp_srq_attr *attr);

/**
 * Name of a QP state.
 *
 * @param state
 *   An enum rdp_qp_state value.
 * @return
 *   "RESET", "INIT", "RTR", "RTS", "ERR" or "UNKNOWN".
 */
const char *rdp_qp_state_str(unsigned int state);

#ifdef __cplusplus
}
#endif

#endif /* RDP_DEV_H */
