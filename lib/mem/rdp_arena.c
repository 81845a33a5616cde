/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The registered arena (rdp_arena.h): a bitmap of pages, lowest fit, under
 * a mutex.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <rte_errno.h>

#include "rdp_arena.h"
#include "rdp_common.h"
#include "rdp_mem.h"

#define WORD_BITS 64u

/* Bits [lo, lo + n) of a word, 0 < n <= 64 - lo. */
static inline uint64_t
bits(uint32_t lo, uint32_t n)
{
	return (n == WORD_BITS ? UINT64_MAX : (UINT64_C(1) << n) - 1) << lo;
}

/* Set or clear pages [first, first + n), a word at a time. */
static void
mark(struct rdp_arena *a, uint32_t first, uint32_t n, bool used)
{
	while (n > 0) {
		uint32_t lo = first % WORD_BITS, k = RTE_MIN(n, WORD_BITS - lo);
		uint64_t m = bits(lo, k);

		if (used)
			a->used[first / WORD_BITS] |= m;
		else
			a->used[first / WORD_BITS] &= ~m;
		first += k;
		n -= k;
	}
}

/*
 * The first run of @p n free pages, or UINT32_MAX: a word at a time, a
 * stretch of free pages or of used ones at each step (the page map's bits
 * past the last page stay clear, and the scan stops at the last page).
 */
static uint32_t
find_run(const struct rdp_arena *a, uint32_t n)
{
	uint32_t p = 0, run = 0;

	while (p < a->nb_pages) {
		uint32_t lo = p % WORD_BITS;
		uint32_t left = RTE_MIN(WORD_BITS - lo, a->nb_pages - p);
		uint64_t w = a->used[p / WORD_BITS] >> lo;
		uint32_t k;

		if ((w & 1) == 0) {
			/* free pages from p: up to the next used one, within this word */
			k = w == 0 ? left : RTE_MIN((uint32_t)__builtin_ctzll(w), left);
			if (run + k >= n)
				return p - run;
			run += k;
		} else {
			/* used pages from p */
			k = ~w == 0 ? left : RTE_MIN((uint32_t)__builtin_ctzll(~w), left);
			run = 0;
		}
		p += k;
	}
	return UINT32_MAX;
}

struct rdp_arena *
rdp_arena_create(const char *name, struct rdp_pd *pd, size_t size, int socket,
		 unsigned int access)
{
	uint64_t pages = ((uint64_t)size + RDP_ARENA_PAGE - 1) / RDP_ARENA_PAGE;
	struct rdp_arena *a;
	char what[48];

	if (size == 0 || pages > UINT32_MAX) {
		rdp_err_set(EINVAL, "arena %s: %zu bytes: need 1 to 2^44", name, size);
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (a == NULL) {
		rdp_err_set(ENOMEM, "arena %s: out of memory", name);
		return NULL;
	}
	snprintf(a->name, sizeof(a->name), "%s", name);
	pthread_mutex_init(&a->lock, NULL);
	a->nb_pages = (uint32_t)pages;
	a->pages_free = a->nb_pages;
	a->pages_limit = a->nb_pages;
	a->used = calloc((pages + WORD_BITS - 1) / WORD_BITS, sizeof(uint64_t));
	if (a->used == NULL) {
		rdp_err_set(ENOMEM, "arena %s: out of memory for its page map", name);
		free(a);
		return NULL;
	}
	snprintf(what, sizeof(what), "arena %s", name);
	a->mr = rdp_mem_mr_alloc(what, pd, (size_t)pages * RDP_ARENA_PAGE, socket, access);
	if (a->mr == NULL) {
		rdp_err_set(rte_errno, "arena %s: cannot register %zu bytes: %s", name,
			    (size_t)pages * RDP_ARENA_PAGE, rdp_err_msg());
		free(a->used);
		free(a);
		return NULL;
	}
	a->base = a->mr->addr;
	return a;
}

void *
rdp_arena_alloc(struct rdp_arena *a, size_t len)
{
	uint64_t n = ((uint64_t)len + RDP_ARENA_PAGE - 1) / RDP_ARENA_PAGE;
	uint32_t first;

	if (len == 0) {
		rte_errno = EINVAL;
		return NULL;
	}
	if (n > a->nb_pages) {
		rte_errno = EMSGSIZE;
		return NULL;
	}
	pthread_mutex_lock(&a->lock);
	first = UINT32_MAX;
	/* the lowest run that fits: the buffers last freed are reused while their
	 * lines are still in the caches, as a pool's stack reuses its buffers */
	/* within the limit, or alone in the arena */
	if (n <= a->pages_free &&
	    (a->pages_free == a->nb_pages || a->nb_pages - a->pages_free + n <= a->pages_limit))
		first = find_run(a, (uint32_t)n);
	if (first != UINT32_MAX) {
		mark(a, first, (uint32_t)n, true);
		a->pages_free -= (uint32_t)n;
	}
	pthread_mutex_unlock(&a->lock);
	if (first == UINT32_MAX) {
		rte_errno = ENOBUFS;
		return NULL;
	}
	return a->base + (size_t)first * RDP_ARENA_PAGE;
}

void
rdp_arena_limit(struct rdp_arena *a, size_t bytes)
{
	uint64_t n = ((uint64_t)bytes + RDP_ARENA_PAGE - 1) / RDP_ARENA_PAGE;

	a->pages_limit = bytes == 0 || n > a->nb_pages ? a->nb_pages : (uint32_t)n;
}

void
rdp_arena_free(struct rdp_arena *a, void *p, size_t len)
{
	uint32_t first = (uint32_t)(((uint8_t *)p - a->base) / RDP_ARENA_PAGE);
	uint32_t n = (uint32_t)((len + RDP_ARENA_PAGE - 1) / RDP_ARENA_PAGE);

	pthread_mutex_lock(&a->lock);
	mark(a, first, n, false);
	a->pages_free += n;
	pthread_mutex_unlock(&a->lock);
}

size_t
rdp_arena_avail(struct rdp_arena *a)
{
	uint32_t n;

	pthread_mutex_lock(&a->lock);
	n = a->pages_free;
	pthread_mutex_unlock(&a->lock);
	return (size_t)n * RDP_ARENA_PAGE;
}

size_t
rdp_arena_destroy(struct rdp_arena *a)
{
	size_t leaked;

	if (a == NULL)
		return 0;
	leaked = (size_t)(a->nb_pages - a->pages_free) * RDP_ARENA_PAGE;
	/* a device that refuses is gone already: the memory goes with it */
	(void)rdp_mr_free(a->mr);
	pthread_mutex_destroy(&a->lock);
	free(a->used);
	free(a);
	return leaked;
}
