/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_POLL_H
#define RDP_POLL_H

/**
 * @file
 * One poller per lcore: the completion queues, the inbox, and the loop.
 *
 * - A poller owns one CQ per device of the process, shared by the SQ and
 *   RQ of every QP of its lcore on that device, each busy-polled in bursts
 *   with no completion channel (one slot table serves them all).
 * - Completions are dispatched by `wr_id`, never by opcode: the slot field
 *   names the client (an endpoint) and the kind field says which of its
 *   queues the WR came from. Consecutive completions of one slot are handed
 *   over in one call.
 * - The inbox is a multi-producer rte_ring through which other threads hand
 *   work to the poller (tagged pointers: sends from application lcores,
 *   frees of received messages, new endpoints from the control thread).
 *   The poller is the only thread that posts to its QPs.
 * - Clients with pending work sit on a busy list; an idle client costs
 *   nothing, so polling cost does not grow with the number of endpoints.
 * - rdp_poller_poll() returns a work count: 0 means an idle iteration.
 * - CQ admission: every QP reserves its worst-case completions on its
 *   device's CQ (a QP in error flushes every WR) before it is created; a
 *   reservation beyond the CQ's size grows the CQ on the poller's own
 *   thread or is refused.
 *
 * CONCURRENCY: rdp_poller_poll() runs on the owning lcore only.
 * rdp_poller_inbox_put(), rdp_poller_reserve() and rdp_poller_slot_alloc()
 * are safe from any thread; the statistics are read racily by design.
 */

#include <stdbool.h>
#include <stdint.h>

#include <rte_ring.h>

#include "rdp_common.h"
#include "rdp_dev.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rdp_poller;

/* ---- wr_id layout: [63:62] kind | [61:40] slot | [39:0] sequence or buffer ---- */

/** Which queue and purpose a WR belongs to. */
enum rdp_wr_kind {
	RDP_WRK_RECV = 0,    /**< receive; low bits: buffer index in the receive pool */
	RDP_WRK_DATA = 1,    /**< data SEND_WITH_IMM; low bits: SQ sequence */
	RDP_WRK_ACK = 2,     /**< pure ack (unsignaled); low bits: SQ sequence */
	RDP_WRK_RECLAIM = 3, /**< reclaim or drain marker (zero-length WRITE) */
};

#define RDP_WRID_KIND_SHIFT 62
#define RDP_WRID_SLOT_SHIFT 40
#define RDP_WRID_SLOT_BITS 22
#define RDP_WRID_LOW_MASK ((UINT64_C(1) << RDP_WRID_SLOT_SHIFT) - 1)
/** Most clients one poller can address. */
#define RDP_POLL_MAX_SLOTS (1u << RDP_WRID_SLOT_BITS)

/**
 * Build a wr_id.
 *
 * @param kind
 *   enum rdp_wr_kind.
 * @param slot
 *   Client slot on the poller.
 * @param low
 *   Sequence number or buffer index (40 bits kept).
 * @return
 *   The wr_id.
 */
static inline uint64_t
rdp_wrid(unsigned int kind, uint32_t slot, uint64_t low)
{
	return (uint64_t)kind << RDP_WRID_KIND_SHIFT |
	       (uint64_t)slot << RDP_WRID_SLOT_SHIFT | (low & RDP_WRID_LOW_MASK);
}

/** Kind of a wr_id. */
static inline unsigned int
rdp_wrid_kind(uint64_t wr_id)
{
	return (unsigned int)(wr_id >> RDP_WRID_KIND_SHIFT);
}

/** Slot of a wr_id. */
static inline uint32_t
rdp_wrid_slot(uint64_t wr_id)
{
	return (uint32_t)(wr_id >> RDP_WRID_SLOT_SHIFT) & (RDP_POLL_MAX_SLOTS - 1);
}

/** Low bits (sequence or buffer index) of a wr_id. */
static inline uint64_t
rdp_wrid_low(uint64_t wr_id)
{
	return wr_id & RDP_WRID_LOW_MASK;
}

/* ---- clients ---- */

/**
 * What a poller calls back into (the endpoint layer). All run on the
 * poller's lcore.
 */
struct rdp_poll_ops {
	/** Completions of one client, in CQ order. */
	void (*complete)(void *client, const struct rdp_wc *wc, uint16_t n);
	/**
	 * Optional (NULL: none). When a poll's completions belong to more
	 * than one client, called for each of them but the first (served at
	 * once) before the poll's first complete(), with the same arguments:
	 * it may only ask for memory (prefetch), so that a client served
	 * later in the poll finds its lines on their way.
	 */
	void (*prefetch)(void *client, const struct rdp_wc *wc, uint16_t n);
	/** Work handed over through the inbox (tagged pointers). */
	void (*inbox)(struct rdp_poller *p, void *const *items, unsigned int n);
	/** Progress a busy client; return work done. The client is off the
	 * busy list during the call and puts itself back if needed. */
	unsigned int (*progress)(void *client);
};

/** Busy-list hook embedded in each client. */
struct rdp_poll_busy {
	struct rdp_poll_busy *next; /**< next busy client */
	void *client;               /**< the client */
	bool queued;                /**< on the list */
};

/** Per-poller counters. */
struct rdp_poll_stats {
	uint64_t polls;         /**< loop iterations */
	uint64_t idle_polls;    /**< iterations that found nothing to do */
	uint64_t completions;   /**< CQ entries processed */
	uint64_t inbox_items;   /**< items taken from the inbox */
	uint64_t progress_calls; /**< busy clients progressed */
	uint64_t stray_wc;      /**< completions for an empty slot (a bug if not 0) */
	uint64_t cq_errors;     /**< polls that found the CQ in error */
	uint64_t cq_resizes;    /**< CQ grown by admission */
};

/** Arguments of rdp_poller_create(). */
/** Most CQs one poller polls: one per device of the process. */
#define RDP_POLL_MAX_CQS 4

/** One CQ of a poller. */
struct rdp_poller_cq_params {
	struct rdp_dev *dev;            /**< its device */
	uint32_t cq_size;               /**< initial capacity */
	uint32_t max_cq_size;           /**< largest capacity admission may grow to */
};

/** Poller parameters. */
struct rdp_poller_params {
	unsigned int lcore_id;          /**< owning lcore */
	struct rdp_poller_cq_params cq[RDP_POLL_MAX_CQS]; /**< its CQs, one per device */
	unsigned int nb_cqs;            /**< 1..RDP_POLL_MAX_CQS */
	uint16_t poll_burst;            /**< completions per poll */
	uint32_t max_slots;             /**< clients (endpoints) at once */
	uint32_t inbox_size;            /**< power of two */
	int socket;                     /**< NUMA node */
	uint32_t idle_sleep_us;         /**< rdp_poller_run sleeps after idle runs; 0 spins */
	const struct rdp_poll_ops *ops; /**< the client layer */
};

/**
 * Create a poller and its CQs.
 *
 * @param prm
 *   Parameters.
 * @return
 *   The poller, or NULL with rte_errno (EINVAL, ENOMEM or the driver's).
 */
struct rdp_poller *rdp_poller_create(const struct rdp_poller_params *prm);

/**
 * Call @p fn(@p arg) once per poll, after the CQ, the inbox and the busy
 * list (the application's hook, rdp_poll_hook_set()). Set once, before or
 * while the poller runs; it stays until the poller is destroyed.
 */
void rdp_poller_set_hook(struct rdp_poller *p, rdp_poll_hook_fn fn, void *arg);

/**
 * Destroy a poller (it must be stopped and empty).
 *
 * @param p
 *   The poller, or NULL.
 * @return
 *   0, or -EBUSY while slots are in use or its loop still runs.
 */
int rdp_poller_destroy(struct rdp_poller *p);

/**
 * One iteration: poll the CQ, drain the inbox, progress busy clients (and
 * once more those that progress queued again, so that what a callback sent
 * leaves in this iteration).
 *
 * @param p
 *   The poller.
 * @return
 *   Work done (completions + inbox items + progress), 0 when idle.
 */
int rdp_poller_poll(struct rdp_poller *p);

/**
 * lcore function: poll until rdp_poller_stop(). With idle_sleep_us, a run
 * of 64 idle polls is followed by a sleep of that long (for shared CPUs).
 *
 * @param arg
 *   The poller.
 * @return
 *   0.
 */
int rdp_poller_run(void *arg);

/**
 * Ask the loop of rdp_poller_run() to return.
 *
 * @param p
 *   The poller.
 */
void rdp_poller_stop(struct rdp_poller *p);

/**
 * Is the loop of rdp_poller_run() still running? An acquire: once it says
 * no, everything the loop did happens before what the caller does next
 * (a thread that waited for the lcore with rte_eal_wait_lcore() may then
 * free what the loop touched).
 *
 * @param p
 *   The poller.
 * @return
 *   true while the loop runs.
 */
bool rdp_poller_running(const struct rdp_poller *p);

/**
 * Hand an item to the poller (any thread).
 *
 * @param p
 *   The poller.
 * @param items
 *   Tagged pointers the client layer understands.
 * @param n
 *   How many.
 * @return
 *   How many were taken (fewer when the inbox is full).
 */
unsigned int rdp_poller_inbox_put(struct rdp_poller *p, void *const *items, unsigned int n);

/**
 * Put a client on the busy list (poller thread only).
 *
 * @param p
 *   The poller.
 * @param b
 *   The client's hook.
 */
static inline void rdp_poller_busy(struct rdp_poller *p, struct rdp_poll_busy *b);

/**
 * Reserve a slot for a client (any thread).
 *
 * @param p
 *   The poller.
 * @param client
 *   What completions of the slot are handed to; not NULL (an empty slot).
 * @return
 *   The slot, -ENOSPC, or -EINVAL for a NULL client.
 */
int rdp_poller_slot_alloc(struct rdp_poller *p, void *client);

/**
 * Release a slot: on the poller thread once no completion can name it, or
 * on any thread for a slot no QP ever named. A slot that is not allocated
 * (freed twice) is not freed again and an error is logged: in the free
 * ring twice, it would go to two clients at once.
 *
 * @param p
 *   The poller.
 * @param slot
 *   The slot.
 */
void rdp_poller_slot_free(struct rdp_poller *p, uint32_t slot);

/**
 * Reserve entries of CQ @p cq for a QP (any thread). When the CQ is too
 * small the poller grows it on its own thread (this call waits up to 1 s
 * for it).
 *
 * @param p
 *   The poller.
 * @param cq
 *   Index of the CQ (its device), below the poller's nb_cqs.
 * @param entries
 *   Worst-case completions of the QP.
 * @return
 *   0, or -ENOSPC with a detail naming the lcore, the device, its budget
 *   and the limit (rdp_err_msg()).
 */
int rdp_poller_reserve(struct rdp_poller *p, unsigned int cq, uint32_t entries);

/**
 * Give back a reservation (any thread).
 *
 * @param p
 *   The poller.
 * @param cq
 *   As reserved.
 * @param entries
 *   As reserved.
 */
void rdp_poller_unreserve(struct rdp_poller *p, unsigned int cq, uint32_t entries);

/** The poller's CQ @p cq (of its device @p cq). */
struct rdp_cq *rdp_poller_cq(const struct rdp_poller *p, unsigned int cq);

/** How many CQs the poller polls. */
unsigned int rdp_poller_nb_cqs(const struct rdp_poller *p);

/**
 * Reserved entries and capacity of CQ @p cq (any thread).
 *
 * @param p
 *   The poller.
 * @param cq
 *   Index of the CQ.
 * @param cq_used
 *   Reserved entries, or NULL.
 * @param cq_size
 *   Capacity, or NULL.
 */
void rdp_poller_cq_usage(const struct rdp_poller *p, unsigned int cq, uint32_t *cq_used,
			 uint32_t *cq_size);

/**
 * The most entries CQ @p cq may grow to (the larger of its configured size
 * and its max_cq_size): what rdp_poller_reserve() refuses beyond.
 *
 * @param p
 *   The poller.
 * @param cq
 *   Index of the CQ.
 * @return
 *   The limit, in entries; 0 for a CQ the poller does not have.
 */
uint32_t rdp_poller_cq_limit(const struct rdp_poller *p, unsigned int cq);

/**
 * Snapshot of counters and budget (racy, for telemetry).
 *
 * @param p
 *   The poller.
 * @param stats
 *   Counters.
 * @param cq_used
 *   Reserved entries of all its CQs, or NULL.
 * @param cq_size
 *   Capacity of all its CQs, or NULL.
 * @param slots_used
 *   Clients, or NULL.
 */
void rdp_poller_stats(const struct rdp_poller *p, struct rdp_poll_stats *stats,
		      uint32_t *cq_used, uint32_t *cq_size, uint32_t *slots_used);

/* ---- inline part ---- */

/** @internal the head of struct rdp_poller that inline functions use */
struct rdp_poller_head {
	struct rdp_poll_busy *busy_head;
	struct rdp_poll_busy *busy_tail;
	uintptr_t owner; /**< rdp_thread_self() of the polling thread, 0 before its first poll (atomic) */
};

static inline bool
rdp_poller_is_self(const struct rdp_poller *p)
{
	const struct rdp_poller_head *h = (const struct rdp_poller_head *)p;

	return __atomic_load_n(&h->owner, __ATOMIC_ACQUIRE) == rdp_thread_self();
}

static inline void
rdp_poller_busy(struct rdp_poller *p, struct rdp_poll_busy *b)
{
	struct rdp_poller_head *h = (struct rdp_poller_head *)p;

	if (b->queued)
		return;
	b->queued = true;
	RDP_LIST_APPEND(h->busy_head, h->busy_tail, b, next);
}

#ifdef __cplusplus
}
#endif

#endif /* RDP_POLL_H */
