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
 *
 * Takers that were refused wait in a line, and freed room goes to them in
 * the order they were refused: while anyone waits, an allocation by
 * another taker is refused (and puts it in line). Without the line, a
 * taker whose own free makes the room (a completion on its endpoint) asks
 * again first, every time, and the others wait for ever. With a clock
 * (rdp_arena_turn_clock()), a taker at the head that does not come back
 * within the lapse once its room is there loses its place.
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

/** A taker's place in an arena's line (rdp_arena_alloc_in_turn()). Zeroed: not in line. */
struct rdp_arena_turn {
	struct rdp_arena_turn *next; /**< behind it in line */
	uint32_t pages;              /**< what it last asked for: pages a run */
	uint32_t count;              /**< and runs */
	bool queued;                 /**< in line */
};

/** Most runs one rdp_arena_alloc_bulk_in_turn() takes. */
#define RDP_ARENA_BULK_MAX 64u

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
	struct rdp_arena_turn *line;      /**< takers refused, first first */
	struct rdp_arena_turn *line_tail;
	const unsigned int *clock; /**< ticks the lapse counts, NULL: none (rdp_arena_turn_clock()) */
	unsigned int turn_lapse;   /**< ticks the head keeps its place once its room is free */
	unsigned int lapse_at;     /**< the tick it loses it, when lapse_armed */
	bool lapse_armed;          /**< the head's room was seen free by another taker */
	uint32_t line_len;         /**< takers in line */
	uint64_t refused;          /**< allocations refused (ENOBUFS) */
	uint64_t lapsed;           /**< heads that lost their place */
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
 * Take a contiguous buffer, in turn with the takers that were refused
 * before: while one waits that is not @p turn, the answer is ENOBUFS and
 * @p turn joins the line; a refusal for want of room puts @p turn in line
 * too. Ask again after a free: @p turn leaves the line when it succeeds.
 *
 * @param a
 *   The arena.
 * @param len
 *   Bytes (rounded up to pages), at least 1.
 * @param turn
 *   The taker's place, alive until it leaves the line (success or
 *   rdp_arena_turn_leave()); NULL: a taker that does not wait in line
 *   (refused while anyone does).
 * @return
 *   Its first byte (page-aligned within the registration), or NULL with
 *   rte_errno: EINVAL (0 bytes), EMSGSIZE (larger than the arena: never
 *   possible), ENOBUFS (no free run that long now, the arena's limit
 *   reached, or another taker's turn: retry after a free).
 */
void *rdp_arena_alloc_in_turn(struct rdp_arena *a, size_t len, struct rdp_arena_turn *turn);

/**
 * Take @p count buffers of @p len bytes each, all or none, in turn as
 * rdp_arena_alloc_in_turn() takes one: a taker refused keeps its place
 * in line (or joins it) with this request, and a later one replaces it.
 *
 * @param a
 *   The arena.
 * @param len
 *   Bytes of each (rounded up to pages), at least 1.
 * @param bufs
 *   Receives the first byte of each.
 * @param count
 *   1 to RDP_ARENA_BULK_MAX.
 * @param turn
 *   The taker's place, or NULL (as for rdp_arena_alloc_in_turn()).
 * @return
 *   0, or a negative errno (also in rte_errno): -EINVAL (0 bytes, or
 *   @p count out of range), -EMSGSIZE (one buffer larger than the arena:
 *   never possible), -ENOBUFS (no room now, or another taker's turn:
 *   retry after a free; or more than the arena lends at once, which
 *   takes no place in line: ask for fewer).
 */
int rdp_arena_alloc_bulk_in_turn(struct rdp_arena *a, size_t len, void **bufs, unsigned int count,
				 struct rdp_arena_turn *turn);

/**
 * Take a contiguous buffer without a place in line:
 * rdp_arena_alloc_in_turn(@p a, @p len, NULL).
 *
 * @return
 *   As rdp_arena_alloc_in_turn(): NULL with rte_errno EINVAL, EMSGSIZE or
 *   ENOBUFS.
 */
void *rdp_arena_alloc(struct rdp_arena *a, size_t len);

/**
 * Let the head of the line lose its place when it does not come back for
 * its room: @p lapse ticks of @p clock after another taker first finds
 * the room free. Without a clock the head keeps its place until it takes
 * its room or leaves.
 *
 * @param a
 *   The arena, before it is shared with other threads.
 * @param clock
 *   A counter its owner advances (lib/ep: the poller's passes), read
 *   with an atomic load; it may wrap.
 * @param lapse
 *   Ticks, at least 1.
 */
void rdp_arena_turn_clock(struct rdp_arena *a, const unsigned int *clock, unsigned int lapse);

/**
 * Leave the line without taking anything (a taker that will not ask
 * again: its endpoint failed or is released). Nothing when not in line.
 *
 * @param a
 *   The arena.
 * @param turn
 *   The taker's place.
 */
void rdp_arena_turn_leave(struct rdp_arena *a, struct rdp_arena_turn *turn);

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

/** What rdp_arena_stats_get() reports. */
struct rdp_arena_stats {
	uint64_t size;      /**< bytes of the arena */
	uint64_t avail;     /**< bytes free now */
	uint32_t waiting;   /**< takers in line */
	uint64_t refused;   /**< allocations refused with ENOBUFS */
	uint64_t lapsed;    /**< heads of the line that lost their place */
};

/**
 * Read an arena's counters (any thread).
 *
 * @param a
 *   The arena.
 * @param st
 *   Filled in.
 */
void rdp_arena_stats_get(struct rdp_arena *a, struct rdp_arena_stats *st);

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
