/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_VERBS_PRIVATE_H
#define RDP_VERBS_PRIVATE_H

/*
 * The rdma-core (libibverbs) driver: private objects shared by its files.
 *
 * Every send and receive WR is posted with the address of a driver slot as
 * its verbs wr_id. The slot holds the caller's wr_id, the owning QP, the
 * completion opcode the WR will report and, for sends, its sequence number.
 * A completion is therefore classified by wr_id alone: the opcode a device
 * reports with an error (rxe reports SEND for flushed receives) is never
 * read.
 *
 * The SQ is accounted here against the depth the caller asked for, not the
 * larger one the device grants, and a slot comes back only when a polled
 * completion covers it (mlx5's rule; rxe frees slots without a poll).
 * Both drivers thus refuse a post_send at the same point.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include <infiniband/verbs.h>

#include "rdp_driver.h"

extern int rdp_verbs_logtype;
#define VERBS_LOG(level, fmt, ...) \
	RDP_LOG(level, rdp_verbs_logtype, "verbs", fmt, ##__VA_ARGS__)

/* The verbs layout of an SGE is ours: SGE lists are handed over as they are. */
_Static_assert(sizeof(struct rdp_sge) == sizeof(struct ibv_sge), "sge size");
_Static_assert(offsetof(struct rdp_sge, addr) == offsetof(struct ibv_sge, addr), "sge addr");
_Static_assert(offsetof(struct rdp_sge, length) == offsetof(struct ibv_sge, length), "sge len");
_Static_assert(offsetof(struct rdp_sge, lkey) == offsetof(struct ibv_sge, lkey), "sge lkey");

/** Largest number of completions read from the device per ibv_poll_cq(). */
#define VERBS_POLL_CHUNK 32

struct verbs_qp;
struct verbs_srq;

/* One posted WR, found again from the verbs wr_id of its completion. */
struct verbs_slot {
	uint64_t wr_id;          /* the caller's */
	uint64_t seq;            /* send: position in the SQ, frees up to it */
	union {
		struct verbs_qp *qp;   /* owner, set once */
		struct verbs_srq *srq; /* ... when is_srq */
	};
	uint8_t wc_opcode;       /* enum rdp_wc_opcode reported for it */
	uint8_t is_send;         /* set once */
	uint8_t is_srq;          /* set once: a receive of an SRQ */
} __rte_aligned(32);

/* Counters of one CQ, written by its poller only. */
struct verbs_cq_stats {
	uint64_t completions;
	uint64_t flushed;
	uint64_t rnr;
	uint64_t errors;
};

/* Counters of one QP, written by its owner only. */
struct verbs_qp_stats {
	uint64_t send_posted;
	uint64_t recv_posted;
	uint64_t enomem;
};

struct verbs_cq {
	struct rdp_cq head;           /* first: rdp_cq_* get it back by cast */
	struct ibv_cq *cq;
	uint32_t failed;              /* set by the control side on CQ_ERR */
	struct verbs_cq_stats stats;
	/* slow path */
	uint32_t nb_qps;              /* live QPs using it */
	TAILQ_ENTRY(verbs_cq) next;   /* in the device's list */
};

struct verbs_qp {
	struct rdp_qp head;           /* first */
	/* fast path, owner thread only */
	uint64_t sq_pi;               /* send WRs posted */
	uint64_t sq_ci;               /* one past the newest polled send completion */
	uint64_t rq_pi;               /* receive WRs posted */
	uint64_t rq_ci;               /* receive completions polled */
	uint32_t sq_mask;             /* slot rings are powers of two >= depth */
	uint32_t rq_mask;
	uint32_t inline_max;          /* granted by the device: small sends go inline */
	uint32_t state;               /* enum rdp_qp_state as last set */
	struct verbs_slot *sq_slots;
	struct verbs_slot *rq_slots;
	struct ibv_send_wr *send_scratch; /* max_send_wr entries: one chain per burst */
	struct ibv_recv_wr *recv_scratch; /* max_recv_wr entries */
	struct ibv_qp *qp;
	struct verbs_qp_stats stats;
	/* slow path */
	uint32_t psn;
	struct rdp_qp_attr attr;      /* remote and conn once connected */
	TAILQ_ENTRY(verbs_qp) next;   /* the device's live list, then its zombies */
	unsigned int zombie_refs;     /* CQs alive that may still hold its CQEs */
};

/*
 * A shared receive queue. Its receives complete out of order (on any of
 * its QPs' CQs), so its slots come from a free ring rather than by
 * position: the poster takes them, the poller gives them back (one thread
 * each), and the asked max_wr is the most outstanding.
 */
struct verbs_srq {
	struct rdp_srq head;          /* first */
	struct ibv_srq *srq;
	struct verbs_slot *slots;     /* max_wr */
	uint32_t *free_ring;          /* indices of free slots, mask + 1 entries */
	uint32_t mask;
	uint64_t free_head;           /* poster: slots taken */
	uint64_t free_tail;           /* (atomic) poller: slots given back */
	struct ibv_recv_wr *scratch;  /* max_wr entries: one chain per burst */
	uint64_t recv_posted;         /* counter, written by the poster */
	TAILQ_ENTRY(verbs_srq) next;  /* the device's live list, then its zombies */
};

struct verbs_mr {
	struct rdp_mr head;           /* first */
	struct ibv_mr *mr;
	size_t alloc_len;             /* bytes mapped by mr_alloc, 0 when the caller owns it */
	bool huge;                    /* alloc_len bytes of MAP_HUGETLB pages */
};

struct verbs_pd {
	struct rdp_pd head;           /* first */
	struct ibv_pd *pd;
	uint32_t nb_users;            /* MRs and QPs */
};

/* Device state (dev->priv). */
struct verbs_dev {
	struct ibv_context *ctx;
	struct ibv_device_attr dev_attr;
	struct ibv_port_attr port_attr;
	char name[64];
	uint8_t port;
	uint8_t gid_index;
	uint8_t link_layer;           /* enum rdp_link_layer */
	uint8_t sl;                   /* service level (InfiniBand) / priority */
	uint8_t traffic_class;        /* RoCE v2: DSCP << 2 | ECN */
	uint8_t hop_limit;
	uint32_t max_inline;          /* inline bytes each QP asks for and uses unasked */
	union ibv_gid gid;
	int numa_node;
	uint64_t cq_overruns;
	pthread_mutex_t lock;         /* lists and totals */
	TAILQ_HEAD(, verbs_cq) cqs;
	TAILQ_HEAD(, verbs_qp) qps;
	/* Destroyed QPs: their slots stay until every CQ that may still hold
	 * one of their completions is destroyed, so polling those is safe. */
	TAILQ_HEAD(, verbs_qp) zombies;
	/* SRQs: destroyed ones keep their slots until the device closes, as a
	 * CQ may still hold completions that point into them. */
	TAILQ_HEAD(, verbs_srq) srqs;
	TAILQ_HEAD(, verbs_srq) srq_zombies;
	uint64_t dead_srq_posted;
	struct verbs_cq_stats dead_cq_stats; /* counters of destroyed objects */
	struct verbs_qp_stats dead_qp_stats;
};

static inline struct verbs_dev *
verbs_dev(struct rdp_dev *dev)
{
	return dev->priv;
}

static inline struct verbs_cq *
to_vcq(struct rdp_cq *cq)
{
	return container_of(cq, struct verbs_cq, head);
}

static inline struct verbs_qp *
to_vqp(struct rdp_qp *qp)
{
	return container_of(qp, struct verbs_qp, head);
}

static inline struct verbs_mr *
to_vmr(struct rdp_mr *mr)
{
	return container_of(mr, struct verbs_mr, head);
}

static inline struct verbs_srq *
to_vsrq(struct rdp_srq *srq)
{
	return container_of(srq, struct verbs_srq, head);
}

static inline struct verbs_pd *
to_vpd(struct rdp_pd *pd)
{
	return container_of(pd, struct verbs_pd, head);
}

/* MTU in bytes from the verbs enum, and back (0 for a size verbs lacks). */
static inline uint32_t
verbs_mtu_bytes(enum ibv_mtu mtu)
{
	return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128u << mtu : 0;
}

enum ibv_mtu verbs_mtu_enum(uint32_t bytes);

/* Set rte_errno and the detail from a verbs call that failed with @p err. */
int verbs_err(int err, const char *fmt, ...) __rte_format_printf(2, 3);

/* verbs_dev.c */
void verbs_dev_cq_add(struct verbs_dev *vd, struct verbs_cq *cq);
void verbs_dev_cq_del(struct verbs_dev *vd, struct verbs_cq *cq);
void verbs_dev_qp_add(struct verbs_dev *vd, struct verbs_qp *qp);
void verbs_dev_qp_bury(struct verbs_dev *vd, struct verbs_qp *qp);

/* verbs_mem.c */
struct rdp_pd *verbs_pd_alloc(struct rdp_dev *dev);
int verbs_pd_free(struct rdp_pd *pd);
struct rdp_mr *verbs_mr_alloc(struct rdp_pd *pd, size_t len, int socket, unsigned int access,
			      size_t page_size);
struct rdp_mr *verbs_mr_reg(struct rdp_pd *pd, void *addr, size_t len, unsigned int access);
int verbs_mr_free(struct rdp_mr *mr);
void *verbs_zalloc(size_t len, int socket);
void verbs_free(void *p, size_t len);

/* verbs_cq.c */
struct rdp_cq *verbs_cq_create(struct rdp_dev *dev, uint32_t cqe, int socket);
int verbs_cq_resize(struct rdp_cq *cq, uint32_t cqe);
int verbs_cq_destroy(struct rdp_cq *cq);

/* verbs_qp.c */
struct rdp_qp *verbs_qp_create(struct rdp_pd *pd, const struct rdp_qp_init_attr *attr);
int verbs_qp_modify(struct rdp_qp *qp, const struct rdp_qp_attr *attr, unsigned int mask);
int verbs_qp_query(struct rdp_qp *qp, struct rdp_qp_attr *attr);
int verbs_qp_local_addr(struct rdp_qp *qp, struct rdp_qp_addr *addr);
int verbs_qp_destroy(struct rdp_qp *qp);
void verbs_qp_release(struct verbs_qp *qp);

/* verbs_srq.c */
struct rdp_srq *verbs_srq_create(struct rdp_pd *pd, const struct rdp_srq_init_attr *attr);
int verbs_srq_destroy(struct rdp_srq *srq);
int verbs_srq_modify_limit(struct rdp_srq *srq, uint32_t limit);
int verbs_srq_query(struct rdp_srq *srq, struct rdp_srq_attr *attr);
void verbs_srq_release(struct verbs_srq *srq);

/* A polled completion of an SRQ receive gives its slot back (the poller's thread). */
static inline void
verbs_srq_slot_free(struct verbs_srq *srq, const struct verbs_slot *s)
{
	uint64_t tail = srq->free_tail;

	srq->free_ring[tail & srq->mask] = (uint32_t)(s - srq->slots);
	__atomic_store_n(&srq->free_tail, tail + 1, __ATOMIC_RELEASE);
}

#endif /* RDP_VERBS_PRIVATE_H */
