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

/* Where @p n pages fit now, within the limit (or alone), or UINT32_MAX. */
static uint32_t
fit(const struct rdp_arena *a, uint32_t n)
{
	if (n <= a->pages_free &&
	    (a->pages_free == a->nb_pages || a->nb_pages - a->pages_free + n <= a->pages_limit))
		return find_run(a, n);
	return UINT32_MAX;
}

static void
line_push(struct rdp_arena *a, struct rdp_arena_turn *t)
{
	t->next = NULL;
	t->queued = true;
	a->line_len++;
	if (a->line_tail != NULL)
		a->line_tail->next = t;
	else
		a->line = t;
	a->line_tail = t;
}

static void
line_remove(struct rdp_arena *a, struct rdp_arena_turn *t)
{
	struct rdp_arena_turn **pp = &a->line, *prev = NULL;

	while (*pp != t) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	*pp = t->next;
	if (a->line_tail == t)
		a->line_tail = prev;
	if (prev == NULL)
		a->lapse_armed = false; /* a new head: its own lapse */
	t->next = NULL;
	t->queued = false;
	a->line_len--;
}

/* Give back the runs of @p n pages at @p bufs[0, count). */
static void
give(struct rdp_arena *a, uint32_t n, void *const *bufs, unsigned int count)
{
	while (count-- > 0) {
		mark(a, (uint32_t)(((uint8_t *)bufs[count] - a->base) / RDP_ARENA_PAGE), n, false);
		a->pages_free += n;
	}
}

/*
 * Take @p count runs of @p n pages into @p bufs, all or none: the lowest
 * that fit, in turn (the buffers last freed are reused while their lines
 * are still in the caches, as a pool's stack reuses its buffers).
 */
static bool
take(struct rdp_arena *a, uint32_t n, void **bufs, unsigned int count)
{
	unsigned int i;

	for (i = 0; i < count; i++) {
		uint32_t first = fit(a, n);

		if (first == UINT32_MAX)
			break;
		mark(a, first, n, true);
		a->pages_free -= n;
		bufs[i] = a->base + (size_t)first * RDP_ARENA_PAGE;
	}
	if (i == count)
		return true;
	give(a, n, bufs, i);
	return false;
}

/* Whether @p count runs of @p n pages fit now: taken and given back. */
static bool
fits(struct rdp_arena *a, uint32_t n, unsigned int count)
{
	void *bufs[RDP_ARENA_BULK_MAX];

	if (!take(a, n, bufs, count))
		return false;
	give(a, n, bufs, count);
	return true;
}

/*
 * Whether a taker ahead of @p t keeps its turn. With a clock, a head
 * whose room is free gets the lapse to come back for it, counted from the
 * first time another taker finds it free; then it loses its place.
 */
static bool
others_turn(struct rdp_arena *a, const struct rdp_arena_turn *t)
{
	while (a->line != NULL && a->line != t) {
		unsigned int now;

		if (a->clock == NULL)
			return true;
		if (!fits(a, a->line->pages, a->line->count)) {
			a->lapse_armed = false;
			return true;
		}
		now = __atomic_load_n(a->clock, __ATOMIC_RELAXED);
		if (!a->lapse_armed) {
			a->lapse_armed = true;
			a->lapse_at = now + a->turn_lapse;
			return true;
		}
		if ((int)(now - a->lapse_at) < 0)
			return true;
		a->lapsed++;
		line_remove(a, a->line);
	}
	return false;
}

void
rdp_arena_turn_clock(struct rdp_arena *a, const unsigned int *clock, unsigned int lapse)
{
	a->clock = clock;
	a->turn_lapse = lapse;
}

int
rdp_arena_alloc_bulk_in_turn(struct rdp_arena *a, size_t len, void **bufs, unsigned int count,
			     struct rdp_arena_turn *turn)
{
	uint64_t n = ((uint64_t)len + RDP_ARENA_PAGE - 1) / RDP_ARENA_PAGE;
	bool ok = false;

	if (len == 0 || count == 0 || count > RDP_ARENA_BULK_MAX) {
		rte_errno = EINVAL;
		return -EINVAL;
	}
	if (n > a->nb_pages) {
		rte_errno = EMSGSIZE;
		return -EMSGSIZE;
	}
	pthread_mutex_lock(&a->lock);
	if (count > 1 && n * count > a->pages_limit) {
		/* never lent at once: no place in line, where it would stop everyone */
		a->refused++;
		pthread_mutex_unlock(&a->lock);
		rte_errno = ENOBUFS;
		return -ENOBUFS;
	}
	if (!others_turn(a, turn))
		ok = take(a, (uint32_t)n, bufs, count);
	if (ok) {
		if (turn != NULL && turn->queued)
			line_remove(a, turn);
	} else if (turn != NULL) {
		/* a taker already in line keeps its place, and says what it needs now */
		turn->pages = (uint32_t)n;
		turn->count = count;
		if (!turn->queued)
			line_push(a, turn);
	}
	if (!ok)
		a->refused++;
	pthread_mutex_unlock(&a->lock);
	if (!ok) {
		rte_errno = ENOBUFS;
		return -ENOBUFS;
	}
	return 0;
}

void
rdp_arena_stats_get(struct rdp_arena *a, struct rdp_arena_stats *st)
{
	pthread_mutex_lock(&a->lock);
	st->size = (uint64_t)a->nb_pages * RDP_ARENA_PAGE;
	st->avail = (uint64_t)a->pages_free * RDP_ARENA_PAGE;
	st->waiting = a->line_len;
	st->refused = a->refused;
	st->lapsed = a->lapsed;
	pthread_mutex_unlock(&a->lock);
}

void *
rdp_arena_alloc_in_turn(struct rdp_arena *a, size_t len, struct rdp_arena_turn *turn)
{
	void *p;

	return rdp_arena_alloc_bulk_in_turn(a, len, &p, 1, turn) == 0 ? p : NULL;
}

void *
rdp_arena_alloc(struct rdp_arena *a, size_t len)
{
	return rdp_arena_alloc_in_turn(a, len, NULL);
}

void
rdp_arena_turn_leave(struct rdp_arena *a, struct rdp_arena_turn *turn)
{
	pthread_mutex_lock(&a->lock);
	if (turn->queued)
		line_remove(a, turn);
	pthread_mutex_unlock(&a->lock);
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
