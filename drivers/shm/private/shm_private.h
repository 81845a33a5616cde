/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_SHM_PRIVATE_H
#define RDP_SHM_PRIVATE_H

/**
 * @file
 * The shm driver's private structures: reliable connected QPs over shared
 * memory between endpoints of one host (docs/drivers.md tells the story).
 *
 * Shared memory, per object, each a memfd mapped by the owner and by the
 * peer that sends into it:
 * - a QP segment holds the QP's receive queue: entries the owner fills at
 *   post_recv and the peer completes in place (byte_len, imm, status, then
 *   `seq`, which tells the owner the entry is complete without another
 *   shared index), with three indices on cache lines of their own:
 *   `rq_posted` (owner; the peer rereads it only when it has used up what
 *   it last read), `rq_claim` (peer claims entries with a CAS; the owner
 *   closes it with a bit when the QP goes to error; only the peer touches it
 *   on the fast path) and `rq_done` (peer publishes how far it completed;
 *   the owner reads it only to check the peer and when a QP goes away);
 * - a CQ segment holds the completion counts (overrun detection: peers add
 *   to `added`, the owner keeps `owner_net` on a line of its own) and the
 *   doorbell bitmap, one bit per QP attached to the CQ, that a producer
 *   sets once per burst;
 * - MRs made by rdp_mr_alloc() are memfds: the peer maps the QP's receive
 *   MRs and every MR with remote access that exists at the rendezvous.
 *
 * Nothing read from shared memory is trusted: every index, length and key is
 * bounds-checked against private copies before use.
 *
 * CONCURRENCY: the fast-path fields of a QP and a CQ belong to the thread
 * that polls the CQ. Fields marked (atomic) are written by other threads:
 * the device monitor (peer attach, peer death) and rdp_qp_modify(ERR).
 * Receives may be posted by another thread than the one that polls their
 * CQ, as verbs allows (lib/ep posts a new endpoint's initial receives on
 * its control thread): the poster publishes `rq_posted` with release after
 * the entry and its record, the poller publishes `rq_reaped` with release
 * after it read them, and each reads the other's with acquire
 * (shm_rq_posted(), shm_rq_reaped()).
 */

#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/types.h>

#include <rte_common.h>

#include "rdp_driver.h"

/* nothing of the driver is part of librdmaplane's ABI */
#pragma GCC visibility push(hidden)

#define SHM_LOG(level, fmt, ...) RDP_LOG(level, shm_logtype, "shm", fmt, ##__VA_ARGS__)
extern int shm_logtype;

/* Limits (also reported by rdp_dev_query()). */
#define SHM_MAX_WR 32768u         /**< deepest SQ / RQ */
#define SHM_MAX_SGE 8u            /**< SGEs per WR */
#define SHM_MAX_CQE (1u << 22)    /**< deepest CQ */
#define SHM_MAX_INLINE 256u       /**< bytes of inline data */
#define SHM_MAX_RD_ATOM 16u       /**< RDMA READs outstanding per QP, either way */
#define SHM_MAX_MR 4096u          /**< MRs per device */
#define SHM_MAX_QP 4096u          /**< QPs per device, and per CQ */
#define SHM_BELL_WORDS (SHM_MAX_QP / 64)
#define SHM_MAX_LINKS (2 * SHM_MAX_QP + 64)
#define SHM_MAX_FDS 250u          /**< fds in one rendezvous message */
#define SHM_MAX_EVENTS 1024u
#define SHM_MTU 4096u
/** fds a connected QP may hold at once: its segment, a receive MR, the
 *  rendezvous links both ways, and what a rendezvous receives before it
 *  maps and closes it */
#define SHM_FDS_PER_QP 5u

#define SHM_QP_MAGIC 0x52445151u  /* "RDQQ" */
#define SHM_CQ_MAGIC 0x52444351u  /* "RDCQ" */
#define SHM_HELLO_MAGIC 0x52444848u
#define SHM_KEYS_MAGIC 0x52444b59u /* "RDKY" */
#define SHM_SRQ_MAGIC 0x52445351u  /* "RDSQ" */
#define SHM_VERSION 13u

/** CAS attempts a sender makes on an SRQ's claim index before it calls the index garbage. */
#define SHM_SRQ_CLAIM_TRIES 4096u
/* Longest wait, ms, of an SRQ QP's flush for its last arrivals (see srq_arrivals_in()). */
#define SHM_SRQ_DRAIN_MS 1000u
/*
 * An SRQ entry claimed and not completed this long (ms) holds up the SRQ's
 * in-order reap: its owner looks whether its sender is dead (see
 * srq_take_back()). One whose sender cannot be found any more, or that
 * holds garbage, is taken back after SHM_SRQ_DRAIN_MS.
 */
#define SHM_SRQ_STUCK_MS 1u
/* Receives of an SRQ ahead of the one reaped whose buffer its poller fetches. */
#define SHM_SRQ_AHEAD 4u
/* Reaps that find the entry so before the clock is read at all. */
#define SHM_SRQ_STUCK_LOOKS 64u

/** No QP slot. */
#define SHM_NO_SLOT UINT32_MAX

/** Reaps in a row from one QP before its RQ is announced as peeked. */
#define SHM_ANNOUNCE_AFTER 16u

/** rq_claim bit set by the owner when its QP goes to error: no more claims. */
#define SHM_RQ_CLOSED (UINT64_C(1) << 63)

enum shm_order { SHM_ORDER_FIFO = 0, SHM_ORDER_RECV_FIRST, SHM_ORDER_RANDOM };

/* ---------------------------------------------------------------------- */
/* Shared memory layouts                                                  */
/* ---------------------------------------------------------------------- */

/** A receive SGE as the peer sees it: an MR id and an offset, no pointer. */
struct shm_rsge {
	uint32_t mr_id;
	uint32_t len;
	uint64_t off;
};

/** One receive entry; its stride is a multiple of a cache line. */
struct shm_rq_ent {
	/* written by the peer that completes the entry */
	uint32_t byte_len;
	uint32_t imm;
	uint8_t status;
	uint8_t wc_flags;
	/* written by the owner at post_recv (with the SGEs: the length posted is their sum) */
	uint8_t num_sge;
	uint8_t pad0;
	uint32_t seq;        /**< low 32 bits of (index + 1), stored last: the entry is complete */
	/* written by the peer that completes an SRQ entry, after its claim: the QP it arrived on */
	uint32_t src_qpn;    /**< that QP's number */
	uint16_t src_slot;   /**< that QP's slot in its recv CQ (below SHM_MAX_QP) */
	uint16_t pad1;
	struct shm_rsge sge[];
};

/*
 * The last bytes of an SRQ entry (shm_srq_ent_tail()), on a line apart
 * from its seq: its claim word. While the SRQ waits for the entry, its
 * poller reads the seq's line at every poll; a sender's CAS on that line
 * would wait for the line to come back from the poller, on every SEND.
 * The tail's line is the payload's last, which the poller reads only once
 * the entry is complete. (The QP it names stays on the first line,
 * which the poller reads with the seq: on the tail, finding it would take
 * the poller a second line.)
 */
struct shm_srq_tail {
	uint32_t claim;      /**< POSTED, FILLING or TAKEN (shm_srq_seq_posted() ...) */
	uint32_t pad;
};

/** Header of a QP segment (the receive queue a peer sends into). */
struct shm_qp_seg {
	uint32_t magic;
	uint32_t version;
	uint32_t rq_size;    /**< entries, a power of two */
	uint32_t rq_stride;  /**< bytes per entry */
	uint32_t max_sge;    /**< SGEs per entry */
	uint32_t qpn;
	uint64_t ent_off;    /**< offset of entry 0 */
	uint32_t max_dest_rd_atomic; /**< owner, at RTR: READs its peer may have outstanding */
	uint32_t pad;
	uint64_t rq_posted __rte_cache_aligned; /**< owner: entries posted */
	uint64_t rq_claim __rte_cache_aligned;  /**< peer CAS; owner sets SHM_RQ_CLOSED */
	uint64_t rq_done __rte_cache_aligned;   /**< peer: entries completed (after their seq) */
	uint64_t srq_filled;                    /**< peer, to a QP on an SRQ: SRQ entries it
						 *   completed (each after its seq) */
	/* a line the owner reads only to find a dead sender's claim */
	uint64_t srq_claim_at __rte_cache_aligned; /**< peer, to a QP on an SRQ: the first SRQ
						 *   index its burst is claiming (stored before
						 *   the claim, after srq_claim_n) */
	uint64_t srq_claim_n;                   /**< peer, to a QP on an SRQ: how many it claims */
	uint32_t peeked __rte_cache_aligned;    /**< owner: its poller looks at this RQ's (or
						 *   SRQ's) next entry on every poll; a sender
						 *   may then leave the doorbell alone */
} __rte_cache_aligned;

/**
 * Header of a CQ segment: completion counts and doorbells, each on lines of
 * their own. The completions not yet polled are `added - owner_net`: peers
 * add with an atomic add, the owner keeps its side with plain stores (no
 * locked instruction on the poller's path), and neither count shares the
 * doorbell line the poller exchanges on every poll.
 */
struct shm_cq_seg {
	uint32_t magic;
	uint32_t version;
	uint32_t nb_words;   /**< doorbell words */
	uint32_t pad;
	int64_t owner_net __rte_cache_aligned; /**< owner: completions it returned or dropped,
						*   less those it counted itself */
	int64_t added __rte_cache_aligned; /**< completions peers counted (atomic add) */
	uint32_t cqe;        /**< capacity; the owner changes it on resize */
	uint32_t overrun __rte_cache_aligned; /**< set by the producer that overran it (read
					       *   with the doorbells, on their line) */
	uint64_t bell_sum;   /**< bit = doorbell word with a bit set (set after the word's bit) */
	uint64_t bell[];     /**< bit = QP slot with something new */
} __rte_cache_aligned;

static inline size_t
shm_cq_seg_size(uint32_t nb_words)
{
	return RTE_ALIGN_CEIL(sizeof(struct shm_cq_seg) + nb_words * sizeof(uint64_t),
			      (size_t)4096);
}

/**
 * Bytes every receive entry keeps after its SGEs for a small SEND's payload:
 * the sender writes it there and the owner copies it into the posted
 * buffer, so that a small message costs the owner one entry's lines and no
 * miss on its buffer (and the sender no write into the owner's buffer).
 */
#define SHM_RQ_INLINE 64u

/** wc_flags bit of an entry whose payload is in the entry itself. */
#define SHM_ENT_INLINE 0x80u

static inline uint32_t
shm_rq_ent_hdr(uint32_t max_sge)
{
	return (uint32_t)(sizeof(struct shm_rq_ent) + max_sge * sizeof(struct shm_rsge));
}

/* A QP's slot fits src_slot, and the SGEs start where they need to be aligned. */
_Static_assert(SHM_MAX_QP <= UINT16_MAX + 1u, "src_slot holds a CQ slot");
_Static_assert(sizeof(struct shm_rq_ent) == 24, "a receive entry's header is 24 bytes");
_Static_assert(SHM_MAX_SGE <= UINT8_MAX, "num_sge holds a WR's SGEs");

static inline uint32_t
shm_rq_stride(uint32_t max_sge)
{
	return RTE_ALIGN_CEIL(shm_rq_ent_hdr(max_sge) + SHM_RQ_INLINE, 64u);
}

/** Bytes per SRQ entry: a receive entry's, and its tail after the payload area. */
static inline uint32_t
shm_srq_stride(uint32_t max_sge)
{
	return RTE_ALIGN_CEIL(shm_rq_ent_hdr(max_sge) + SHM_RQ_INLINE +
			      (uint32_t)sizeof(struct shm_srq_tail), 64u);
}

/** Inline payload bytes of an SRQ entry of @p stride: up to its tail. */
static inline uint32_t
shm_srq_inline(uint32_t stride, uint32_t max_sge)
{
	return stride - shm_rq_ent_hdr(max_sge) - (uint32_t)sizeof(struct shm_srq_tail);
}

/* ---------------------------------------------------------------------- */
/* Rendezvous messages (SOCK_SEQPACKET, fds in SCM_RIGHTS)                */
/* ---------------------------------------------------------------------- */

struct shm_hello_mr {
	uint32_t id;
	uint32_t rkey;
	uint32_t access;
	uint32_t pad;
	uint64_t addr;   /**< the owner's virtual address of byte 0 */
	uint64_t length;
};

/** Sent by a QP going to RTR: "here is my receive side; send into it". */
/**
 * One MR with remote access (rdp_mr_reg() or rdp_mr_alloc()) as its peers
 * see it, indexed by MR id. Written by the owner only: the fields, then
 * `rkey` with release; a deregistration clears `rkey` first. MR ids are
 * never reused, so an entry is published once and cleared once.
 */
struct shm_key {
	uint32_t rkey;       /**< 0: no such MR (any more) */
	uint32_t access;     /**< RDP_ACCESS_* */
	uint64_t addr;       /**< the owner's address of byte 0 */
	uint64_t length;
	uint64_t pad;
};

/**
 * The key table of a device, shared at every rendezvous: which of its MRs
 * with remote access still exist (a peer checks it before it uses a
 * mapping), and how a peer reaches one it has not mapped (with
 * process_vm_readv/writev into `pid`).
 */
struct shm_key_seg {
	uint32_t magic;
	uint32_t version;
	int32_t pid;         /**< the owning process */
	uint32_t nb_keys;    /**< SHM_MAX_MR */
	uint8_t pad[48];
	struct shm_key key[];
};

static inline size_t
shm_key_seg_size(void)
{
	return sizeof(struct shm_key_seg) + SHM_MAX_MR * sizeof(struct shm_key);
}

struct shm_hello {
	uint32_t magic;
	uint32_t version;
	uint32_t src_qpn;
	uint32_t dst_qpn;
	uint32_t bell_word;  /**< the sender's recv CQ doorbell slot */
	uint32_t nb_mr;      /**< fds: [qp seg, cq seg, key table, (srq seg), mr 0 .. nb_mr-1] */
	uint32_t srq;        /**< 1: the QP receives from an SRQ, whose segment is fds[3] */
	uint32_t pad;
	struct shm_hello_mr mr[];
};

struct shm_reply {
	uint32_t magic;
	int32_t status;      /**< 0 or -errno */
	char msg[200];
};

/* ---------------------------------------------------------------------- */
/* Private objects                                                        */
/* ---------------------------------------------------------------------- */

struct shm_mr {
	struct rdp_mr head;
	uint32_t id;
	int memfd;            /**< -1 for rdp_mr_reg() memory */
	size_t map_len;
};

/** A peer MR as mapped here. */
struct shm_peer_mr {
	uint8_t *base;        /**< our mapping */
	uint64_t addr;        /**< the peer's address of byte 0 */
	uint64_t length;
	uint32_t rkey;
	uint32_t access;
};

/** The peer's receive side, mapped by the monitor at attach. */
struct shm_peer {
	struct shm_qp_seg *qseg;
	size_t qseg_len;
	struct shm_cq_seg *cseg;
	size_t cseg_len;
	uint8_t *ents;
	uint32_t rq_mask;
	uint32_t rq_stride;
	uint32_t max_sge;
	uint32_t rq_inline;   /**< payload bytes an entry holds (after max_sge SGEs) */
	uint32_t qpn;
	uint32_t bell_word;
	uint64_t bell_bit;
	uint32_t nb_mr;       /**< entries in mr[] (indexed by MR id) */
	struct shm_peer_mr *mr;
	const struct shm_key_seg *keys; /**< the peer device's key table */
	size_t keys_len;
	/* the mappings above, as the device holds them (shm_peer_unmap()) */
	struct shm_map *qseg_map, *cseg_map, *sseg_map, *keys_map;
	struct shm_map **mr_map;      /**< nb_mr of them */
	int32_t pid;          /**< the peer process, read once from its key table */
	/* the SRQ the peer QP receives from (sseg NULL: its own RQ above) */
	struct shm_qp_seg *sseg;
	size_t sseg_len;
	uint8_t *sents;
	uint32_t srq_mask;
	uint32_t srq_stride;
	uint32_t srq_max_sge;
	uint32_t srq_inline;
	uint32_t bell_slot;   /**< the peer QP's slot in its recv CQ (written into SRQ entries) */
};

/** A local send WQE (private). */
struct shm_lsge {
	uint8_t *addr;
	uint64_t len;
};

struct shm_swqe {
	uint64_t wr_id;
	uint64_t remote_addr;
	uint32_t rkey;
	uint32_t imm;
	uint32_t total_len;
	uint16_t num_sge;
	uint8_t opcode;
	uint8_t flags;
	uint8_t status;       /**< error found at post time, else SUCCESS */
	uint8_t pad[3];
	uint32_t rd_seq;      /**< RDMA READs posted on this QP up to this WR, itself included */
	struct shm_lsge sge[];  /* then the inline buffer */
};

/** A posted receive as its owner remembers it. */
struct shm_rpost {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t total_len;
};

/** A completion kept by the CQ itself (send side, success or error). */
struct shm_lcqe {
	struct rdp_wc wc;
	struct shm_qp *qp;    /**< NULL once the QP is destroyed */
	uint64_t sq_idx;
	uint32_t visible_at;  /**< poll count (low 32 bits) from which it may be returned */
	uint32_t rd_seq;      /**< its WR's rd_seq: the READs its polling retires */
};

struct shm_dev;
struct shm_srq;

struct shm_cq {
	struct rdp_cq head;
	struct shm_dev *sd;
	/* fast path (owner thread) */
	struct shm_cq_seg *seg;
	uint64_t *pend;            /**< QP slots to look at (private bitmap) */
	uint64_t pend_sum;         /**< bit w: pend[w] may have a bit set (never clear when it has) */
	struct shm_qp **slot;      /**< slot -> QP (atomic pointers) */
	uint32_t words_used;       /**< (atomic) doorbell words in use */
	uint32_t cursor;           /**< slot the next look at flagged QPs starts from */
	uint32_t hot;              /**< (atomic) slot whose RQ completed last, polled before
				    *   its doorbell, or SHM_NO_SLOT. The poller drops it when
				    *   it finds the QP closed (drained, then destroyed);
				    *   giving the slot back drops it too (the slot's next
				    *   QP is set up by another thread) */
	uint32_t announced;        /**< (atomic) slot whose RQ segment says `peeked`: polled
				    *   on every poll, its senders ring no doorbell; or
				    *   SHM_NO_SLOT. Dropped like `hot` */
	uint32_t hot_streak;       /**< reaps in a row from the hot QP (announce after
				    *   SHM_ANNOUNCE_AFTER) */
	uint64_t announces;        /**< announcements made (owner thread) */
	struct shm_srq *peek_srq;  /**< (atomic) the SRQ whose next entry every poll looks
				    *   at (its segment says `peeked`), or NULL: the first
				    *   SRQ whose QPs came to this CQ, while it has any */
	struct shm_lcqe *ring;
	uint32_t ring_mask;
	uint32_t ring_head;
	uint32_t ring_tail;
	int64_t owner_net;         /**< what seg->owner_net last got */
	uint64_t polls;
	uint64_t rng;
	uint32_t delay;
	uint8_t order;
	uint8_t err;
	/* counters (single writer: the owner) */
	uint64_t st_completions;
	uint64_t st_flushed;
	uint64_t st_errors;
	uint64_t st_overruns;
	/* slow path (device lock) */
	int memfd;
	size_t seg_len;
	uint64_t slot_used[SHM_BELL_WORDS];
	uint32_t nb_qps;
	TAILQ_ENTRY(shm_cq) next;
};

struct shm_qp {
	struct rdp_qp head;
	struct shm_dev *sd;
	/* send queue (owner thread) */
	uint8_t *sq;
	uint32_t sq_stride;
	uint32_t sq_mask;
	uint32_t sq_depth;          /**< ENOMEM threshold (asked + grant_extra) */
	uint32_t max_send_sge;
	uint32_t max_inline;
	uint64_t sq_pi;             /**< WRs posted */
	uint64_t sq_exec;           /**< WRs executed or flushed */
	uint64_t sq_freed;          /**< one past the newest polled completion */
	uint64_t peer_rq_ci;        /**< our claim index in the peer's RQ */
	uint64_t peer_rq_posted;    /**< the peer's rq_posted when last read */
	uint64_t peer_rq_claimed;   /**< claimed in the peer's RQ up to here (>= peer_rq_ci) */
	uint64_t peer_srq_posted;   /**< the peer's SRQ's rq_posted when last read */
	uint64_t peer_srq_filled;   /**< entries of the peer's SRQ this QP completed */
	uint64_t peer_srq_next;     /**< the next of the peer's SRQ entries this run claimed */
	uint64_t peer_srq_end;      /**< one past them (== peer_srq_next: none in hand) */
	uint64_t rnr_next_ns;       /**< earliest retry after an RNR */
	uint8_t rnr_left;
	uint8_t rnr_waiting;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	uint64_t drop_left;         /**< drop_peer budget */
	uint32_t dup_every;         /**< dup_send: every Nth SEND arrives twice, 0 = off */
	uint32_t dup_count;         /**< SENDs run since the last duplicate */
	uint32_t rd_posted;         /**< RDMA READs posted */
	uint32_t rd_freed;          /**< of those, the ones at or before sq_freed */
	struct shm_peer *peer;      /**< (atomic) set once by the monitor */
	struct shm_cq *scq;
	struct shm_cq *rcq;
	uint32_t sslot;
	uint32_t rslot;
	struct shm_srq *srq;        /**< receives come from it, or NULL */
	/* receive queue (owner thread) */
	struct shm_qp_seg *seg;
	uint8_t *ents;
	struct shm_rpost *rq_post;  /**< per entry: what we posted (the peer cannot change it) */
	struct shm_lsge *rq_sge;    /**< per entry: max_recv_sge SGEs */
	uint32_t rq_mask;
	uint32_t rq_stride;
	uint32_t rq_inline;         /**< payload bytes an entry holds */
	uint32_t max_recv_sge;
	uint32_t mr_limit;          /**< MR ids below this were shared with the peer */
	uint32_t nb_peer_mr;        /**< 0: every receive MR of the PD is shared */
	uint32_t peer_mr[RDP_QP_MAX_PEER_MRS]; /**< else: the ids shared, only these */
	uint64_t rq_posted;         /**< (atomic) the poster's: receives posted */
	uint64_t rq_reaped;         /**< (atomic) the poller's: receives completed */
	uint64_t rq_counted;        /**< entries counted in the CQ (flushes) */
	uint64_t rq_checked;        /**< rq_reaped when rq_done was last checked */
	/* error state (atomic) */
	int state;                  /**< enum rdp_qp_state */
	uint8_t rq_closed;          /**< the RQ's claim index is closed, rq_final valid */
	uint8_t peer_dead;          /**< the peer can no longer write anything */
	uint8_t sq_flushed;         /**< owner: flush done for [sq_exec, sq_pi) */
	uint64_t rq_final;          /**< claim index when the RQ was closed */
	uint64_t srq_wait;          /**< owner, SRQ QP in error: 1 + the SRQ's claim index
				     *   read once the RQ was closed (0: not yet) */
	uint8_t srq_drained;        /**< owner: every arrival of this QP was reaped from
				     *   the SRQ, its flush may complete */
	uint64_t srq_wait_since;    /**< owner: ns of the first look (0: none yet) */
	uint64_t srq_fills_seen;    /**< SRQ poller: the peer's srq_filled when last read */
	uint64_t srq_fills_reaped;  /**< SRQ poller: entries of this QP reaped */
	/* counters (single writer: the owner) */
	uint64_t st_send_posted;
	uint64_t st_recv_posted;
	uint64_t st_enomem;
	uint64_t st_rnr;
	uint64_t st_rdma_syscalls;  /**< WRITEs and READs run by exec_foreign() */
	uint64_t bells_skipped;     /**< bursts published to an announced RQ without a doorbell */
	/* slow path */
	int memfd;
	size_t seg_len;
	struct rdp_qp_attr attr;
	int connect_fd;             /**< a rendezvous waiting for its answer, else -1 */
	uint32_t connect_dst;       /**< ... to this peer QP */
	struct rdp_qp_attr connect_attr; /**< the RTR it completes */
	unsigned int connect_mask;
	TAILQ_ENTRY(shm_qp) next;
};

/**
 * A shared receive queue: a segment laid out as a QP segment's receive
 * queue (header, then entries), which every peer of its QPs maps and
 * claims from (one CAS per SEND on `rq_claim`). A sender completes the
 * entry in place and names the QP it arrived on (src_slot, src_qpn); the
 * poller of the recv CQ its QPs share reaps the entries in SRQ order.
 */
struct shm_srq {
	struct rdp_srq head;
	struct shm_dev *sd;
	struct shm_qp_seg *seg;
	uint8_t *ents;
	struct shm_rpost *rq_post;  /**< per entry: what we posted */
	struct shm_lsge *rq_sge;    /**< per entry: max_sge SGEs */
	uint32_t rq_mask;
	uint32_t rq_stride;
	uint32_t rq_inline;
	uint32_t max_sge;
	uint32_t mr_limit;          /**< (atomic) MR ids below it are mapped by every peer */
	uint32_t limit;             /**< (atomic) armed limit, 0: none */
	uint64_t posted;            /**< (atomic) the poster's: receives posted */
	uint64_t reaped;            /**< (atomic) the poller's: receives completed */
	uint64_t stuck_at;          /**< poller: 1 + the entry the reap waits on, 0: none */
	uint32_t stuck_looks;       /**< poller: reaps that found it so */
	uint64_t stuck_since;       /**< poller: ns when the clock began on it (0: not yet) */
	uint64_t stuck_looked;      /**< poller: ns of the last look for its sender */
	uint64_t unreaped;          /**< poller: entries its QPs' senders said they filled
				     *   and the reap has not passed, summed over the QPs
				     *   (srq_note_fills()) */
	uint32_t looks_owed;        /**< (atomic) bumped by whoever needs the reap to look
				     *   at the next entry whatever `unreaped` says */
	uint32_t looks_paid;        /**< poller: looks_owed when a look last found the next
				     *   entry not completed */
	uint8_t look_on;            /**< poller: the reap passed an entry of a QP gone */
	uint8_t peeking;            /**< (atomic) announced: its CQ's poller looks at the
				     *   next entry on every poll (shm_cq.peek_srq) and its
				     *   segment says `peeked` */
	uint8_t mixed;              /**< poller: the last two entries reaped came from two
				     *   QPs; while peeking, the reap then goes on while
				     *   entries are complete, whoever filled them */
	uint32_t streak;            /**< poller: entries reaped in a row that were (peeking:
				     *   from two QPs; not: from one QP) as the last two */
	const struct shm_qp *last_src; /**< poller: the QP the last entry reaped arrived on
				     *   (compared, never followed) */
	uint64_t look_until;        /**< poller: the claim index when the peek was last
				     *   withdrawn; the reap looks on while below it */
	uint32_t any_slot;          /**< (atomic) the slot of one of its QPs in its CQ, flagged
				     *   for an entry whose QP is gone; SHM_NO_SLOT: none */
	uint64_t st_recv_posted;    /**< (single writer: the poster) */
	/* slow path (device lock) */
	int memfd;                  /**< kept open: every QP's rendezvous shares it */
	size_t seg_len;
	struct shm_cq *rcq;         /**< the recv CQ its QPs share, NULL while it has none */
	uint32_t nb_qps;
	TAILQ_ENTRY(shm_srq) next;
};

struct shm_link {
	int fd;                     /**< -1 when the slot is free */
	uint32_t gen;
	struct shm_qp *qp;          /**< NULL until a hello attached it */
};

/*
 * A peer's shared segment or MR (a memfd) as a device maps it: once, for
 * every QP connected to that peer. 4096 QPs to one poller then share one
 * mapping of its SRQ, CQ, key table and MRs, with the page-table entries
 * and TLB reach of one, instead of 4096 to fault in one by one.
 */
#define SHM_MAP_BUCKETS 256u

struct shm_map {
	dev_t dev;
	ino_t ino;
	size_t len;
	void *addr;
	uint32_t refs;
	TAILQ_ENTRY(shm_map) next;
};

struct shm_dev {
	struct rdp_dev *dev;
	unsigned int instance;
	char name[64];              /* device=NAME, else shm<instance> */
	struct sockaddr_storage addr; /* addr=IP: the address its "interface" holds */
	bool has_addr;
	/* knobs */
	uint8_t order;
	uint64_t seed;
	uint32_t delay;
	uint64_t fail_after;        /**< 0 = off */
	uint64_t drop_peer;         /**< 0 = off */
	uint32_t grant_extra;
	uint32_t max_cqe;           /**< deepest CQ (max_cqe knob; SHM_MAX_CQE) */
	size_t copy_min;            /**< one-sided copies of copy_min to copy_max bytes */
	size_t copy_max;            /**< take shm_copy_vector() (copy knob) */
	uint32_t dup_send;          /**< 0 = off */
	uint64_t executed;          /**< (atomic) send WRs executed, with fail_after */
	uint8_t link_down;          /**< (atomic) */
	/* addressing */
	uint8_t gid[RDP_GID_LEN];
	/* key table of the foreign MRs, shared with every peer */
	struct shm_key_seg *keys;
	int keys_fd;
	/* monitor */
	int lfd;
	int spare_fd;               /**< given up to refuse a rendezvous when none is left */
	int epfd;
	int ctl_fd;
	pthread_t mon;
	bool mon_running;
	/* events */
	pthread_mutex_t ev_lock;
	int ev_fd;
	struct rdp_event ev[SHM_MAX_EVENTS];
	uint32_t ev_head, ev_tail;
	uint64_t ev_lost;
	/* objects (lock) */
	pthread_mutex_t lock;
	struct shm_mr *mrs[SHM_MAX_MR];  /**< (atomic pointers) by id */
	uint32_t next_qpn;
	uint32_t next_mr_id;
	uint32_t nb_reg_free;            /**< rdp_mr_reg() ids freed, reused first */
	uint32_t reg_free[SHM_MAX_MR];
	uint32_t mr_gen[SHM_MAX_MR];     /**< generation of each id's key (shm_key()) */
	uint32_t nb_cq_made;
	TAILQ_HEAD(, shm_qp) qps;
	TAILQ_HEAD(, shm_cq) cqs;
	TAILQ_HEAD(, shm_srq) srqs;
	struct shm_link links[SHM_MAX_LINKS];
	struct rdp_dev_stats retired;    /**< counters of destroyed objects */
	/* peers' memfds as mapped here (map_lock), by inode */
	pthread_mutex_t map_lock;
	TAILQ_HEAD(, shm_map) maps[SHM_MAP_BUCKETS];
};

/** Does @p mr grant remote access (a WRITE target or a READ source)? */
static inline bool
shm_mr_remote(const struct shm_mr *mr)
{
	return (mr->head.access & (RDP_ACCESS_REMOTE_WRITE | RDP_ACCESS_REMOTE_READ)) != 0;
}

/** Is MR @p id one the peer of @p qp may receive into (its peer_mrs, if it has them)? */
static inline bool
shm_peer_mr_ok(const struct shm_qp *qp, uint32_t id)
{
	uint32_t i;

	if (qp->nb_peer_mr == 0)
		return true;
	for (i = 0; i < qp->nb_peer_mr; i++)
		if (qp->peer_mr[i] == id)
			return true;
	return false;
}

/** Receives posted on @p qp, as the thread that polls its CQ may read them. */
static inline uint64_t
shm_rq_posted(const struct shm_qp *qp)
{
	return __atomic_load_n(&qp->rq_posted, __ATOMIC_ACQUIRE);
}

/** Receives of @p qp completed, as the thread that posts them may read them. */
static inline uint64_t
shm_rq_reaped(const struct shm_qp *qp)
{
	return __atomic_load_n(&qp->rq_reaped, __ATOMIC_ACQUIRE);
}

static inline struct shm_qp *to_sqp(struct rdp_qp *qp) { return container_of(qp, struct shm_qp, head); }
static inline struct shm_cq *to_scq(struct rdp_cq *cq) { return container_of(cq, struct shm_cq, head); }
static inline struct shm_mr *to_smr(struct rdp_mr *mr) { return container_of(mr, struct shm_mr, head); }
static inline struct shm_dev *to_sdev(struct rdp_dev *dev) { return dev->priv; }
static inline struct shm_srq *to_ssrq(struct rdp_srq *srq) { return container_of(srq, struct shm_srq, head); }

/** Receives posted on @p srq, as the thread that polls its QPs' CQ may read them. */
static inline uint64_t
shm_srq_posted(const struct shm_srq *srq)
{
	return __atomic_load_n(&srq->posted, __ATOMIC_ACQUIRE);
}

static inline struct shm_swqe *
shm_wqe(const struct shm_qp *qp, uint64_t idx)
{
	return (struct shm_swqe *)(qp->sq + (size_t)(idx & qp->sq_mask) * qp->sq_stride);
}

static inline struct shm_rq_ent *
shm_rq_ent(uint8_t *ents, uint32_t mask, uint32_t stride, uint64_t idx)
{
	return (struct shm_rq_ent *)(ents + (size_t)(idx & mask) * stride);
}

/** The seq that marks entry @p idx complete. */
static inline uint32_t
shm_rq_seq(uint64_t idx)
{
	return (uint32_t)(idx + 1);
}

/*
 * An SRQ entry on its way: the owner posts it, its seq and its claim word
 * (struct shm_srq_tail) both POSTED; the sender that claimed it moves the
 * claim word on with a CAS before it writes anything (FILLING), then
 * names its QP in the entry and completes it (its seq shm_rq_seq()). The
 * owner may take an entry whose sender died back from POSTED or FILLING
 * with a CAS of its own on the claim word (TAKEN): whichever CAS wins,
 * the entry is completed once, by the sender or as flushed.
 */
static inline uint32_t
shm_srq_seq_posted(uint64_t idx)
{
	return shm_rq_seq(idx) ^ 0x80000000u;
}

static inline uint32_t
shm_srq_seq_filling(uint64_t idx)
{
	return shm_rq_seq(idx) ^ 0x40000000u;
}

static inline uint32_t
shm_srq_seq_taken(uint64_t idx)
{
	return shm_rq_seq(idx) ^ 0xc0000000u;
}

/*
 * The senders of an SRQ write its entries through one mapping of it, its
 * owner reads them through another. What orders one lap's sender of an
 * entry before the next lap's (the owner reaps the entry, posts it again,
 * and the next sender reads the owner's rq_posted) runs through the
 * owner's mapping, at addresses ThreadSanitizer does not connect with
 * the senders'. A sender says so at the entry once it is done with it, and
 * the sender whose claim takes the entry next takes that over. Compiled
 * out unless built with ThreadSanitizer.
 */
#define SHM_SRQ_ENT_DONE(ent) RDP_HANDOFF_RELEASE(ent)
#define SHM_SRQ_ENT_TAKEN(ent) RDP_HANDOFF_ACQUIRE(ent)

/** The tail of an SRQ entry of @p stride (struct shm_srq_tail). */
static inline struct shm_srq_tail *
shm_srq_ent_tail(const struct shm_rq_ent *ent, uint32_t stride)
{
	return (struct shm_srq_tail *)((uintptr_t)ent + stride - sizeof(struct shm_srq_tail));
}

/** The payload area of a receive entry (SHM_ENT_INLINE). */
static inline uint8_t *
shm_rq_ent_data(const struct shm_rq_ent *ent, uint32_t max_sge)
{
	return (uint8_t *)ent + shm_rq_ent_hdr(max_sge);
}

/*
 * An MR's key: the id in bits 8-19, under a salt byte so that small
 * integers are not valid keys by accident, and in bits 20-31 (and mixed
 * into the salt) the id's generation: an rdp_mr_reg() id freed and taken
 * again gets a key of its own, 2^20 registrations apart. Allocated MRs,
 * which peers map by id, keep generation 0 (their ids are never reused).
 */
static inline uint32_t
shm_key(uint32_t id, uint32_t gen)
{
	return ((gen & 0xfffu) << 20) | (id << 8) |
	       ((id * 37u + 0x5au + (gen >> 12) * 0x61u) & 0xffu);
}

static inline uint32_t
shm_lkey(uint32_t id)
{
	return shm_key(id, 0);
}

/** The MR id a key names (its generation aside). */
static inline uint32_t
shm_key_id(uint32_t key)
{
	return (key >> 8) & (SHM_MAX_MR - 1);
}

/* Fast path (shm_rxtx.c). */
uint16_t shm_post_send(struct rdp_qp *qp, const struct rdp_send_wr *wr, uint16_t n, int *err);
uint16_t shm_post_recv(struct rdp_qp *qp, const struct rdp_recv_wr *wr, uint16_t n, int *err);
uint16_t shm_post_srq_recv(struct rdp_srq *srq, const struct rdp_recv_wr *wr, uint16_t n,
			   int *err);
/* Completions of @p srq's entries, in SRQ order, for the QPs of @p cq (its poller). */
int shm_srq_reap(struct shm_srq *srq, struct shm_qp *by, struct shm_cq *cq, struct rdp_wc *wc,
		 int n, bool *waiting);
int shm_poll_cq(struct rdp_cq *cq, struct rdp_wc *wc, uint16_t n);

/* Shared between files. */
bool shm_qp_set_error(struct shm_qp *qp);
void shm_event_push(struct shm_dev *sd, enum rdp_event_type type, struct rdp_qp *qp,
		    struct rdp_cq *cq);
void shm_event_push_srq(struct shm_dev *sd, struct rdp_srq *srq);
/* Drop references to a QP, CQ or SRQ being destroyed from queued events. */
void shm_event_forget(struct shm_dev *sd, const struct rdp_qp *qp, const struct rdp_cq *cq);
void shm_event_forget_srq(struct shm_dev *sd, const struct rdp_srq *srq);
void shm_link_down(struct shm_dev *sd);
void shm_peer_unmap(struct shm_dev *sd, struct shm_peer *p);
/* The rendezvous of RTR: blocking (shm_connect), or started, polled, abandoned. */
int shm_connect(struct shm_qp *qp, const struct rdp_qp_addr *remote);
int shm_connect_start(struct shm_qp *qp, const struct rdp_qp_addr *remote);
int shm_connect_poll(struct shm_qp *qp);
void shm_connect_abort(struct shm_qp *qp);
void shm_links_close(struct shm_dev *sd, struct shm_qp *qp);
int shm_monitor_start(struct shm_dev *sd);
void shm_monitor_stop(struct shm_dev *sd);
/* Called with the device lock held when an object goes away. */
void shm_stats_retire_qp(struct shm_dev *sd, const struct shm_qp *qp);
void shm_stats_retire_cq(struct shm_dev *sd, const struct shm_cq *cq);
void shm_stats_retire_srq(struct shm_dev *sd, const struct shm_srq *srq);

/* Slow-path ops (shm_qp.c). */
/* A sealed memfd of @p len bytes, mapped; NULL with errno. */
void *shm_seg_create(const char *name, size_t len, int *memfd);
struct rdp_cq *shm_cq_create(struct rdp_dev *dev, uint32_t cqe, int socket);
int shm_cq_resize(struct rdp_cq *cq, uint32_t cqe);
int shm_cq_destroy(struct rdp_cq *cq);
struct rdp_qp *shm_qp_create(struct rdp_pd *pd, const struct rdp_qp_init_attr *attr);
int shm_qp_modify(struct rdp_qp *qp, const struct rdp_qp_attr *attr, unsigned int mask);
int shm_qp_modify_start(struct rdp_qp *qp, const struct rdp_qp_attr *attr, unsigned int mask,
			int *fd);
int shm_qp_modify_poll(struct rdp_qp *qp);
void shm_qp_modify_abort(struct rdp_qp *qp);
int shm_qp_query(struct rdp_qp *qp, struct rdp_qp_attr *attr);
int shm_qp_local_addr(struct rdp_qp *qp, struct rdp_qp_addr *addr);
int shm_qp_destroy(struct rdp_qp *qp);

/* Shared receive queues (shm_srq.c). */
struct rdp_srq *shm_srq_create(struct rdp_pd *pd, const struct rdp_srq_init_attr *attr);
int shm_srq_destroy(struct rdp_srq *srq);
int shm_srq_modify_limit(struct rdp_srq *srq, uint32_t limit);
int shm_srq_query(struct rdp_srq *srq, struct rdp_srq_attr *attr);
/* A QP joins (device lock held): its recv CQ must be the SRQ's; 0 or -EINVAL. */
int shm_srq_attach_locked(struct shm_srq *srq, struct shm_qp *qp);
/* A QP leaves (device lock held, on the poller's thread): the last one unbinds the CQ. */
void shm_srq_detach_locked(struct shm_srq *srq, struct shm_qp *qp);
/* A QP of the SRQ connects: its peer maps the MRs below @p limit only. */
void shm_srq_mr_limit(struct shm_srq *srq, uint32_t limit);
/** Freeze a memfd's size before sharing it: peers refuse unsealed ones. */
static inline int
shm_seal(int fd)
{
	return fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
}

/**
 * Ring a doorbell: set @p bit in word @p word of a CQ segment, then the
 * word's bit in the summary, so that a poll reads only the words rung.
 * (A poll that takes the summary before the word's bit is set finds that
 * bit at a later poll: the summary bit is set after it.)
 */
static inline void
shm_bell_ring(struct shm_cq_seg *seg, uint32_t word, uint64_t bit)
{
	__atomic_fetch_or(&seg->bell[word], bit, __ATOMIC_RELEASE);
	__atomic_fetch_or(&seg->bell_sum, UINT64_C(1) << word, __ATOMIC_RELEASE);
}

/** Flag a QP slot for the next poll of its CQ (owner thread only). */
static inline void
shm_cq_pend_set(struct shm_cq *cq, uint32_t slot)
{
	cq->pend[slot / 64] |= UINT64_C(1) << (slot % 64);
	cq->pend_sum |= UINT64_C(1) << (slot / 64);
}

/**
 * Completions the owner of @p cq returned (or dropped, @p n > 0) or
 * counted itself (@p n < 0): a plain store on the owner's own line.
 */
static inline void
shm_cq_owner_net(struct shm_cq *cq, int64_t n)
{
	cq->owner_net += n;
	__atomic_store_n(&cq->seg->owner_net, cq->owner_net, __ATOMIC_RELEASE);
}

/** Completions not yet polled (owner thread). */
static inline int64_t
shm_cq_pending(const struct shm_cq *cq)
{
	return __atomic_load_n(&cq->seg->added, __ATOMIC_ACQUIRE) - cq->owner_net;
}

/**
 * Withdraw @p cq's announcement (owner thread): the RQ's sender rings its
 * doorbell again. It may have completed entries without ringing just before
 * it saw the withdrawal; the fence pairs with the sender's (between its
 * entries and its look at `peeked`), and the QP is flagged so that the next
 * poll looks at it once more and finds them.
 */
static inline void
shm_cq_unannounce(struct shm_cq *cq)
{
	uint32_t slot = __atomic_load_n(&cq->announced, __ATOMIC_RELAXED);
	struct shm_qp *qp;

	if (slot == SHM_NO_SLOT)
		return;
	__atomic_store_n(&cq->announced, SHM_NO_SLOT, __ATOMIC_RELAXED);
	qp = __atomic_load_n(&cq->slot[slot], __ATOMIC_ACQUIRE);
	if (qp == NULL)
		return;
	__atomic_store_n(&qp->seg->peeked, 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	shm_cq_pend_set(cq, slot);
}

/**
 * Announce @p qp's RQ as peeked by @p cq's poller (owner thread): the poller
 * looks at its next entry on every poll and its sender stops ringing the
 * doorbell. The RQ announced before is withdrawn.
 */
static inline void
shm_cq_announce(struct shm_cq *cq, struct shm_qp *qp)
{
	shm_cq_unannounce(cq);
	__atomic_store_n(&qp->seg->peeked, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&cq->announced, qp->rslot, __ATOMIC_RELAXED);
	cq->announces++;
}

/**
 * Announce @p srq as peeked by its CQ's poller (@p on) or withdraw it: its
 * segment's `peeked`, which its senders read, and the poller's own copy.
 * A withdrawal's caller then fences and looks, as shm_cq_unannounce() does.
 */
static inline void
shm_srq_peek_set(struct shm_srq *srq, bool on)
{
	if (on)
		__atomic_store_n(&srq->seg->peeked, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&srq->peeking, on, __ATOMIC_RELAXED);
	if (!on)
		__atomic_store_n(&srq->seg->peeked, 0, __ATOMIC_RELAXED);
}

/** Set a QP's doorbell bit in a CQ's shared bitmap (any thread). */
static inline void
shm_bell_self(struct shm_cq *cq, uint32_t slot)
{
	shm_bell_ring(cq->seg, slot / 64, UINT64_C(1) << (slot % 64));
}

/* ---- the copy engine (shm_copy.c) ---- */

/* The L1 data cache and L2 that copy=auto assumes when the CPU does not say. */
#define SHM_COPY_L1_DEFAULT 32768u
#define SHM_COPY_L2_DEFAULT 1048576u

/** Copy with 32-byte vector loads and stores (AVX2; memcpy() where there is none). */
void shm_copy_vector(void *dst, const void *src, size_t len);

/** Whether this CPU runs shm_copy_vector()'s loop (AVX2). */
bool shm_copy_vector_runs(void);

/**
 * Set @p sd's copy_min and copy_max from the copy knob (auto, libc,
 * vector) and the CPU's caches; 0 or -errno with the reason.
 */
int shm_copy_choose(struct shm_dev *sd, const char *how);

/** One copy of a one-sided transfer's bytes, by the device's engine. */
static inline void
shm_copy(const struct shm_dev *sd, void *dst, const void *src, size_t len)
{
	if (len >= sd->copy_min && len <= sd->copy_max)
		shm_copy_vector(dst, src, len);
	else
		memcpy(dst, src, len);
}

#pragma GCC visibility pop

#endif /* RDP_SHM_PRIVATE_H */
