/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_ARENA_H
#define RDP_ARENA_H

/**
 * @file
 * A registered arena: one contiguous registration cut into variable-size
 * runs of pages, for buffers too large for a pool (the rendezvous
 * messages of lib/ep). Lowest fit (what was freed last is reused while it
 * is still in the caches); any thread may
 * allocate and free (a mutex: large buffers are few and slow anyway).
 */

#include <stddef.h>
#include <stdint.h>

#include <pthread.h>

#include "rdp_dev.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Bytes of an arena page: allocations are rounded up to it. */
#define RDP_ARENA_PAGE 4096u

/** A registered arena. */
struct rdp_arena {
	pthread_mutex_t lock;  /**< (a mutex: ThreadSanitizer sees it) */
	uint64_t *used;        /**< one bit per page, set: allocated */
	uint32_t nb_pages;
	uint32_t pages_free;
	uint32_t pages_limit;  /**< most pages in use at once, unless none is
				*   (rdp_arena_limit(); nb_pages: no limit) */
	uint8_t *base;         /**< first byte */
	struct rdp_mr *mr;     /**< registration of the whole arena */
	char name[32];         /**< for messages */
};

/**
 * Create an arena and register its memory.
 *
 * @param name
 *   For messages (truncated to 31 characters).
 * @param pd
 *   Protection domain.
 * @param size
 *   Bytes, rounded up to RDP_ARENA_PAGE; at least one page.
 * @param socket
 *   NUMA node, or -1.
 * @param access
 *   RDP_ACCESS_* flags of the registration, and a page flag (enum
 *   rdp_alloc_flags) for hugepages.
 * @return
 *   The arena, or NULL with rte_errno: EINVAL (size 0 or above 2^44),
 *   ENOMEM, or the device's errno; rdp_err_msg() says which.
 */
struct rdp_arena *rdp_arena_create(const char *name, struct rdp_pd *pd, size_t size, int socket,
				   unsigned int access);

/**
 * Take a contiguous buffer.
 *
 * @param a
 *   The arena.
 * @param len
 *   Bytes (rounded up to pages), at least 1.
 * @return
 *   Its first byte (page-aligned within the registration), or NULL with
 *   rte_errno: EINVAL (0 bytes), EMSGSIZE (larger than the arena: never
 *   possible), ENOBUFS (no free run that long now, or the arena's limit
 *   reached: retry after a free).
 */
void *rdp_arena_alloc(struct rdp_arena *a, size_t len);

/**
 * Give a buffer back.
 *
 * @param a
 *   Its arena.
 * @param p
 *   What rdp_arena_alloc() returned.
 * @param len
 *   The length given to it.
 */
void rdp_arena_free(struct rdp_arena *a, void *p, size_t len);

/**
 * Hold at most @p bytes in use at once: a run that would pass them is
 * refused with ENOBUFS, unless nothing is in use, so that one run of any
 * length up to the arena's size still fits.
 *
 * @param a
 *   The arena, before it is shared with other threads.
 * @param bytes
 *   Rounded up to pages; 0: no limit.
 */
void rdp_arena_limit(struct rdp_arena *a, size_t bytes);

/** Bytes free now (not necessarily contiguous). */
size_t rdp_arena_avail(struct rdp_arena *a);

/** Bytes of the whole arena. */
static inline size_t
rdp_arena_size(const struct rdp_arena *a)
{
	return (size_t)a->nb_pages * RDP_ARENA_PAGE;
}

/**
 * Deregister and free an arena.
 *
 * @param a
 *   The arena, or NULL.
 * @return
 *   Bytes still allocated (leaked by their holders: they are freed
 *   anyway), 0 when none.
 */
size_t rdp_arena_destroy(struct rdp_arena *a);

#ifdef __cplusplus
}
#endif

#endif /* RDP_ARENA_H */
