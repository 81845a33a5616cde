/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_MEM_H
#define RDP_MEM_H

/**
 * @file
 * Registered buffer pools and the message object.
 *
 * - A pool is `nb_bufs` buffers of `buf_size` bytes in one registered memory
 *   region, allocated by the driver (rdp_mr_alloc()) on a NUMA node: for
 *   the shm driver that memory is a memfd its peers map.
 * - Every buffer has a header, `struct rdp_msg`, kept *outside* the
 *   registered memory, so nothing a peer writes can corrupt it.
 * - A message is a chain of one or more buffers (segments), like an mbuf
 *   chain: the first segment holds the total length and segment count.
 *   Messages are zero-copy: the application fills the segments of a
 *   message it allocated, and reads received messages in place.
 * - The free list is a multi-producer/multi-consumer rte_ring, so messages
 *   can be allocated and freed from any lcore; bulk calls amortise it.
 * - One thread may own the pool (rdp_pool_claim()): it takes and returns
 *   buffers through a private stack in front of the ring, with no atomic
 *   operation, and moves them to or from the ring in batches
 *   (RDP_POOL_CACHE_BATCH). Other threads use the ring as before. This is
 *   rte_mempool's per-lcore cache for the one lcore that uses a pool most:
 *   an lcore's send pool is owned by its poller.
 *   Nothing is allocated after rdp_pool_create().
 */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <rte_ring.h>

#include "rdp_common.h"
#include "rdp_dev.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rdp_ep;
struct rdp_pool;

/**
 * A message segment; the first segment describes the whole message.
 *
 * One cache line (64 bytes), headers packed one after another in their
 * pool's array: a message in flight costs its header one line on each
 * side, and consecutive buffers' headers are consecutive lines. What the
 * header does not carry comes from its pool: the buffer's index
 * (rdp_pool_msg_idx()), capacity and key.
 */
struct rdp_msg {
	void *data;              /**< payload of this segment */
	uint32_t data_len;       /**< bytes in this segment */
	uint32_t pkt_len;        /**< bytes in the whole message (first segment) */
	struct rdp_msg *next;    /**< next segment, NULL on the last */
	uint16_t nb_segs;        /**< segments in the message (first segment) */
	uint8_t event;           /**< why it reached the application (enum rdp_msg_event) */
	uint8_t flags;           /**< library-private */
	int32_t status;          /**< 0, or -errno of a failed send */
	uint64_t user_data;      /**< the application's; returned with send events */
	struct rdp_ep *ep;       /**< endpoint it came from or goes to */
	/* private below */
	struct rdp_pool *pool;   /**< owner pool */
	struct rdp_msg *link;    /**< library-private queue link */
} __rte_cache_aligned;

_Static_assert(sizeof(struct rdp_msg) == RTE_CACHE_LINE_SIZE,
	       "a message header is one cache line");

/** Buffers the owner's cache keeps after it spills to, or fills from, the ring. */
#define RDP_POOL_CACHE_BATCH 64u
/** Capacity of the owner's cache. */
#define RDP_POOL_CACHE_MAX (2u * RDP_POOL_CACHE_BATCH)

/** A registered buffer pool. */
struct rdp_pool {
	struct rte_ring *free;   /**< free headers (MP/MC) */
	uintptr_t owner;         /**< rdp_thread_self() of the owner thread, 0: none (atomic) */
	uint32_t cache_len;      /**< buffers in @c cache (written by the owner only) */
	struct rdp_msg *cache[RDP_POOL_CACHE_MAX]; /**< the owner's free stack */
	struct rdp_msg *hdrs;    /**< one header per buffer */
	uint8_t *base;           /**< first buffer */
	struct rdp_mr *mr;       /**< registration of all buffers */
	uint32_t lkey;           /**< mr's key, next to base and buf_size */
	uint32_t buf_size;       /**< bytes per buffer */
	uint32_t nb_bufs;        /**< buffers */
	int socket;              /**< NUMA node, -1 unknown */
	char name[32];           /**< for stats and messages */
};

/**
 * Allocate zeroed memory on a NUMA node (libnuma when available).
 *
 * @param size
 *   Bytes.
 * @param socket
 *   NUMA node, or -1 for the calling thread's.
 * @return
 *   Cache-line aligned memory, or NULL with rte_errno ENOMEM.
 */
void *rdp_mem_zalloc(size_t size, int socket);

/**
 * Free memory from rdp_mem_zalloc().
 *
 * @param ptr
 *   The memory, or NULL.
 * @param size
 *   The size given to rdp_mem_zalloc().
 */
void rdp_mem_free(void *ptr, size_t size);

/**
 * rdp_mr_alloc() for a named pool, arena or region: when it asked for
 * hugepages (RDP_ALLOC_HUGE_TRY) and they were short, a warning in the log
 * names it and gives the hugepages it needed and those free.
 *
 * @param what
 *   What the memory is for, as the warning names it ("pool tx_lcore1").
 * @param pd
 *   The PD.
 * @param len
 *   Bytes.
 * @param socket
 *   NUMA node, or -1.
 * @param access
 *   As rdp_mr_alloc().
 * @return
 *   As rdp_mr_alloc().
 */
struct rdp_mr *rdp_mem_mr_alloc(const char *what, struct rdp_pd *pd, size_t len, int socket,
				unsigned int access);

/**
 * Create a pool and register its memory.
 *
 * @param name
 *   Name for stats and messages (truncated to 31 characters).
 * @param pd
 *   Protection domain the buffers are registered in.
 * @param nb_bufs
 *   Number of buffers (>= 1).
 * @param buf_size
 *   Bytes per buffer (>= 64, a multiple of 64).
 * @param socket
 *   NUMA node of buffers and headers, or -1.
 * @param access
 *   RDP_ACCESS_* flags of the registration; use the narrowest
 *   (RDP_ACCESS_LOCAL_WRITE for receive pools, 0 for send pools); with a
 *   page flag (enum rdp_alloc_flags) the buffers go on hugepages.
 * @return
 *   The pool, or NULL with rte_errno: EINVAL (sizes), ENOMEM, or the
 *   driver's errno; rdp_err_msg() says which.
 */
struct rdp_pool *rdp_pool_create(const char *name, struct rdp_pd *pd, uint32_t nb_bufs,
				 uint32_t buf_size, int socket, unsigned int access);

/**
 * Destroy a pool. Every buffer should be back; the count missing is returned.
 *
 * @param pool
 *   The pool, or NULL.
 * @return
 *   Buffers that were not returned (0 when all were), or a negative errno
 *   from deregistration.
 */
int rdp_pool_destroy(struct rdp_pool *pool);

/**
 * Header of buffer @p idx.
 *
 * @param pool
 *   The pool.
 * @param idx
 *   Buffer index, < nb_bufs.
 * @return
 *   Its header.
 */
static inline struct rdp_msg *
rdp_pool_msg(const struct rdp_pool *pool, uint32_t idx)
{
	return &pool->hdrs[idx];
}

/**
 * Payload of buffer @p idx.
 *
 * @param pool
 *   The pool.
 * @param idx
 *   Buffer index, < nb_bufs.
 * @return
 *   Its first byte (buf_size bytes, registered with the pool's lkey).
 */
static inline uint8_t *
rdp_pool_buf(const struct rdp_pool *pool, uint32_t idx)
{
	return pool->base + (size_t)idx * pool->buf_size;
}

/**
 * Index of the buffer whose header is @p m (the inverse of rdp_pool_msg()).
 *
 * @param pool
 *   Its pool.
 * @param m
 *   One of the pool's headers.
 * @return
 *   Its index, < nb_bufs.
 */
static inline uint32_t
rdp_pool_msg_idx(const struct rdp_pool *pool, const struct rdp_msg *m)
{
	return (uint32_t)(m - pool->hdrs);
}

/**
 * Make the calling thread the pool's owner: from now on its gets and puts
 * go through a private cache in front of the shared ring (see the file
 * comment). Call it once, from the thread that will use the pool most (an
 * lcore's poller for its send pool), before that thread uses the pool.
 * Buffers in the cache stay counted by rdp_pool_avail(); another thread
 * can find the ring empty while the owner's cache holds up to
 * RDP_POOL_CACHE_MAX buffers.
 *
 * @param pool
 *   The pool, not yet owned.
 * @return
 *   0, or -EBUSY when the pool already has an owner.
 */
int rdp_pool_claim(struct rdp_pool *pool);

/* True on the pool's owner thread (see rdp_pool_claim()). */
static inline bool
rdp_pool_is_owner(const struct rdp_pool *pool)
{
	return __atomic_load_n(&pool->owner, __ATOMIC_ACQUIRE) == rdp_thread_self();
}

/* Owner only: refill the cache so that it holds at least @p n. */
static inline bool
rdp_pool_cache_fill(struct rdp_pool *pool, unsigned int n)
{
	uint32_t len = pool->cache_len;

	len += rte_ring_dequeue_burst(pool->free, (void **)&pool->cache[len],
				      RDP_POOL_CACHE_BATCH + n - len, NULL);
	RDP_HANDOFF_ACQUIRE(pool->free);
	__atomic_store_n(&pool->cache_len, len, __ATOMIC_RELAXED);
	return len >= n;
}

/**
 * Take @p n buffers, all or none.
 *
 * @param pool
 *   The pool.
 * @param msgs
 *   Receives @p n headers, reset to one empty segment each.
 * @param n
 *   How many.
 * @return
 *   0, or -ENOBUFS when fewer than @p n are free.
 */
static inline int
rdp_pool_get_bulk(struct rdp_pool *pool, struct rdp_msg **msgs, unsigned int n)
{
	unsigned int i;

	if (likely(n <= RDP_POOL_CACHE_BATCH && rdp_pool_is_owner(pool))) {
		uint32_t len = pool->cache_len;

		if (unlikely(len < n)) {
			if (!rdp_pool_cache_fill(pool, n))
				return -ENOBUFS;
			len = pool->cache_len;
		}
		len -= n;
		for (i = 0; i < n; i++)
			msgs[i] = pool->cache[len + i];
		__atomic_store_n(&pool->cache_len, len, __ATOMIC_RELAXED);
	} else {
		if (unlikely(rte_ring_dequeue_bulk(pool->free, (void **)msgs, n, NULL) != n))
			return -ENOBUFS;
		RDP_HANDOFF_ACQUIRE(pool->free);
	}
	for (i = 0; i < n; i++) {
		struct rdp_msg *m = msgs[i];

		m->data = rdp_pool_buf(pool, rdp_pool_msg_idx(pool, m));
		m->data_len = 0;
		m->pkt_len = 0;
		m->next = NULL;
		m->nb_segs = 1;
		m->event = 0;
		m->flags = 0;
		m->status = 0;
		m->user_data = 0;
		m->ep = NULL;
		m->link = NULL;
	}
	return 0;
}

/**
 * Return @p n buffers (single segments; see rdp_pool_put_chain()).
 *
 * @param pool
 *   Their pool.
 * @param msgs
 *   The headers.
 * @param n
 *   How many.
 */
static inline void
rdp_pool_put_bulk(struct rdp_pool *pool, struct rdp_msg **msgs, unsigned int n)
{
	unsigned int i;

	if (likely(n <= RDP_POOL_CACHE_BATCH && rdp_pool_is_owner(pool))) {
		uint32_t len = pool->cache_len;

		if (unlikely(len + n > RDP_POOL_CACHE_MAX)) {
			/* spill the bottom of the stack down to one batch after this put */
			uint32_t spill = len + n - RDP_POOL_CACHE_BATCH;

			RDP_HANDOFF_RELEASE(pool->free);
			rte_ring_enqueue_bulk(pool->free, (void **)pool->cache, spill, NULL);
			memmove(pool->cache, &pool->cache[spill], (len - spill) * sizeof(pool->cache[0]));
			len -= spill;
		}
		for (i = 0; i < n; i++)
			pool->cache[len + i] = msgs[i];
		__atomic_store_n(&pool->cache_len, len + n, __ATOMIC_RELAXED);
		return;
	}
	RDP_HANDOFF_RELEASE(pool->free);
	rte_ring_enqueue_bulk(pool->free, (void **)msgs, n, NULL);
}

/**
 * Return every segment of a message to its pool.
 *
 * @param m
 *   First segment.
 */
static inline void
rdp_pool_put_chain(struct rdp_msg *m)
{
	struct rdp_msg *segs[64];
	unsigned int n = 0;

	while (m != NULL) {
		segs[n++] = m;
		m = m->next;
		if (n == RTE_DIM(segs) || m == NULL) {
			rdp_pool_put_bulk(segs[0]->pool, segs, n);
			n = 0;
		}
	}
}

/**
 * Buffers currently free.
 *
 * @param pool
 *   The pool.
 * @return
 *   Count.
 */
static inline unsigned int
rdp_pool_avail(const struct rdp_pool *pool)
{
	return rte_ring_count(pool->free) + __atomic_load_n(&pool->cache_len, __ATOMIC_RELAXED);
}

/**
 * Allocate a message of @p len bytes as a chain of buffers.
 *
 * @param pool
 *   The pool.
 * @param len
 *   Payload bytes (0 allowed: one empty segment).
 * @param seg_size
 *   Bytes per segment (<= the pool's buf_size; the last may be shorter).
 * @return
 *   The first segment with data_len/pkt_len set, or NULL with rte_errno
 *   ENOBUFS (pool empty) or EINVAL (seg_size 0 or above buf_size).
 */
struct rdp_msg *rdp_pool_alloc_msg(struct rdp_pool *pool, uint32_t len, uint32_t seg_size);

/**
 * Copy bytes into a message at an offset (across segments).
 *
 * @param m
 *   First segment.
 * @param off
 *   Offset in the message.
 * @param src
 *   Source.
 * @param len
 *   Bytes.
 * @return
 *   0, or -ERANGE when off + len > pkt_len.
 */
int rdp_msg_write(struct rdp_msg *m, uint32_t off, const void *src, uint32_t len);

/**
 * Copy bytes out of a message at an offset (across segments).
 *
 * @param m
 *   First segment.
 * @param off
 *   Offset in the message.
 * @param dst
 *   Destination.
 * @param len
 *   Bytes.
 * @return
 *   0, or -ERANGE when off + len > pkt_len.
 */
int rdp_msg_read(const struct rdp_msg *m, uint32_t off, void *dst, uint32_t len);

#ifdef __cplusplus
}
#endif

#endif /* RDP_MEM_H */
