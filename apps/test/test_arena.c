/* SPDX-License-Identifier: BSD-3-Clause */
/* The registered arena of lib/mem (rdp_arena.h), on the shm device. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <rte_errno.h>

#include "rdp_arena.h"
#include "rdp_test.h"

#define PAGES 64u

/*
 * Runs of pages: page-aligned, disjoint, zero bytes refused, a run longer
 * than the arena EMSGSIZE, no free run ENOBUFS; a hole left by a free is
 * reused, and two neighbouring holes make one run; what is still allocated
 * at destroy is counted.
 */
RDP_TEST(unit, arena_allocates_disjoint_runs_reuses_holes_and_counts_leaks)
{
	struct rdp_dev *dev = rdp_dev_open("shm");
	struct rdp_pd *pd;
	struct rdp_arena *a;
	uint8_t *p[PAGES], *big, *q;
	unsigned int i;

	RDP_ASSERT(dev != NULL);
	pd = rdp_pd_alloc(dev);
	RDP_ASSERT(pd != NULL);
	RDP_ASSERT(rdp_arena_create("zero", pd, 0, -1, RDP_ACCESS_LOCAL_WRITE) == NULL);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	a = rdp_arena_create("test", pd, PAGES * RDP_ARENA_PAGE - 100, -1, RDP_ACCESS_LOCAL_WRITE);
	RDP_ASSERT_MSG(a != NULL, "%s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_arena_size(a), PAGES * RDP_ARENA_PAGE);
	RDP_ASSERT_EQ(rdp_arena_avail(a), PAGES * RDP_ARENA_PAGE);
	RDP_ASSERT(rdp_arena_alloc(a, 0) == NULL);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	RDP_ASSERT(rdp_arena_alloc(a, PAGES * RDP_ARENA_PAGE + 1) == NULL);
	RDP_ASSERT_EQ(rte_errno, EMSGSIZE);
	/* one page each (any length up to a page), all distinct and inside */
	for (i = 0; i < PAGES; i++) {
		p[i] = rdp_arena_alloc(a, 1 + i * 61 % RDP_ARENA_PAGE);
		RDP_ASSERT_MSG(p[i] != NULL, "page %u", i);
		RDP_ASSERT_EQ((uintptr_t)(p[i] - a->base) % RDP_ARENA_PAGE, 0);
		RDP_ASSERT(p[i] >= a->base && p[i] < a->base + rdp_arena_size(a));
		memset(p[i], (int)i, RDP_ARENA_PAGE);
	}
	for (i = 0; i < PAGES; i++)
		RDP_ASSERT_EQ(p[i][RDP_ARENA_PAGE - 1], (uint8_t)i); /* no run overlapped another */
	RDP_ASSERT(rdp_arena_alloc(a, 1) == NULL);
	RDP_ASSERT_EQ(rte_errno, ENOBUFS);
	RDP_ASSERT_EQ(rdp_arena_avail(a), 0);
	/* a hole of one page: a two-page run does not fit, one page does */
	rdp_arena_free(a, p[10], 1);
	RDP_ASSERT(rdp_arena_alloc(a, RDP_ARENA_PAGE + 1) == NULL);
	RDP_ASSERT_EQ(rte_errno, ENOBUFS);
	q = rdp_arena_alloc(a, RDP_ARENA_PAGE);
	RDP_ASSERT(q == p[10]);
	/* two neighbouring holes are one run of two pages */
	rdp_arena_free(a, p[20], 1);
	rdp_arena_free(a, p[21], 1);
	big = rdp_arena_alloc(a, 2 * RDP_ARENA_PAGE);
	RDP_ASSERT(big == p[20]);
	/* everything back but one page: that page is what destroy reports */
	rdp_arena_free(a, big, 2 * RDP_ARENA_PAGE);
	for (i = 0; i < PAGES; i++)
		if (i != 20 && i != 21 && i != 5)
			rdp_arena_free(a, p[i], 1);
	RDP_ASSERT_EQ(rdp_arena_avail(a), (PAGES - 1) * RDP_ARENA_PAGE);
	/* the whole arena but that page, as one run, is not there; around it, it is */
	RDP_ASSERT(rdp_arena_alloc(a, (PAGES - 1) * RDP_ARENA_PAGE) == NULL);
	big = rdp_arena_alloc(a, (PAGES - 6) * RDP_ARENA_PAGE);
	RDP_ASSERT(big == p[6]);
	rdp_arena_free(a, big, (PAGES - 6) * RDP_ARENA_PAGE);
	RDP_ASSERT_EQ(rdp_arena_destroy(a), RDP_ARENA_PAGE);
	RDP_ASSERT_EQ(rdp_pd_free(pd), 0);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	return 0;
}

/* xorshift64: the same choices on every run */
static uint64_t
arena_rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

#define MODEL_PAGES 203u /* not a multiple of the page map's 64-bit words */
#define MODEL_LIVE 48u

/*
 * Lowest fit, checked against a model of one flag per page: random
 * allocations of 1 to 130 pages (runs within a word, across words and
 * over whole words) and random frees, 20 000 steps; every allocation
 * returns the model's lowest free run, or ENOBUFS exactly when the model
 * has none, and the free count always agrees.
 */
RDP_TEST(unit, arena_takes_the_lowest_fitting_run_as_a_page_model_does)
{
	struct rdp_dev *dev = rdp_dev_open("shm");
	struct rdp_pd *pd;
	struct rdp_arena *a;
	bool used[MODEL_PAGES] = { false };
	struct { uint8_t *p; uint32_t n; } live[MODEL_LIVE];
	uint32_t nb_live = 0, pages_free = MODEL_PAGES, step;
	uint64_t rng = 0x2545f4914f6cdd1dull;

	RDP_ASSERT(dev != NULL);
	pd = rdp_pd_alloc(dev);
	RDP_ASSERT(pd != NULL);
	a = rdp_arena_create("model", pd, MODEL_PAGES * RDP_ARENA_PAGE, -1, RDP_ACCESS_LOCAL_WRITE);
	RDP_ASSERT_MSG(a != NULL, "%s", rdp_err_msg());
	for (step = 0; step < 20000; step++) {
		uint64_t r = arena_rng(&rng);

		if (nb_live < MODEL_LIVE && (nb_live == 0 || r % 3 != 0)) {
			/* mostly short runs, sometimes one of more than two words */
			uint32_t n = r % 8 == 0 ? 1 + (uint32_t)(r >> 8) % 130 : 1 + (uint32_t)(r >> 8) % 12;
			uint32_t want = UINT32_MAX, run = 0, i;
			uint8_t *p;

			for (i = 0; i < MODEL_PAGES && want == UINT32_MAX; i++) {
				run = used[i] ? 0 : run + 1;
				if (run == n)
					want = i + 1 - n;
			}
			p = rdp_arena_alloc(a, (size_t)n * RDP_ARENA_PAGE - (r >> 40) % RDP_ARENA_PAGE);
			if (want == UINT32_MAX) {
				RDP_ASSERT_MSG(p == NULL, "step %u: %u pages at page %zu, the model has "
					       "no such run", step, n,
					       p == NULL ? 0 : (size_t)(p - a->base) / RDP_ARENA_PAGE);
				RDP_ASSERT_EQ(rte_errno, ENOBUFS);
				continue;
			}
			RDP_ASSERT_MSG(p == a->base + (size_t)want * RDP_ARENA_PAGE,
				       "step %u: %u pages at page %td, the lowest fit is page %u",
				       step, n, p == NULL ? -1 : (p - a->base) / (ptrdiff_t)RDP_ARENA_PAGE,
				       want);
			for (i = want; i < want + n; i++)
				used[i] = true;
			pages_free -= n;
			live[nb_live].p = p;
			live[nb_live++].n = n;
		} else {
			uint32_t k = (uint32_t)(r >> 16) % nb_live, first, i;

			first = (uint32_t)((live[k].p - a->base) / RDP_ARENA_PAGE);
			rdp_arena_free(a, live[k].p, (size_t)live[k].n * RDP_ARENA_PAGE);
			for (i = first; i < first + live[k].n; i++)
				used[i] = false;
			pages_free += live[k].n;
			live[k] = live[--nb_live];
		}
		RDP_ASSERT_EQ(rdp_arena_avail(a), (size_t)pages_free * RDP_ARENA_PAGE);
	}
	while (nb_live > 0) {
		nb_live--;
		rdp_arena_free(a, live[nb_live].p, (size_t)live[nb_live].n * RDP_ARENA_PAGE);
	}
	/* all of it, as one run, again */
	RDP_ASSERT(rdp_arena_alloc(a, MODEL_PAGES * RDP_ARENA_PAGE) == a->base);
	rdp_arena_free(a, a->base, MODEL_PAGES * RDP_ARENA_PAGE);
	RDP_ASSERT_EQ(rdp_arena_destroy(a), 0);
	RDP_ASSERT_EQ(rdp_pd_free(pd), 0);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	return 0;
}

/*
 * An arena limited to a number of bytes in use holds runs up to it, then
 * refuses (ENOBUFS) until runs are freed; when nothing is in use, a run of
 * any length up to the arena's size fits, so one message larger than the
 * limit still goes. The lowest fitting run is taken as without a limit.
 */
RDP_TEST(unit, arena_limit_caps_the_bytes_in_use_unless_none_is)
{
	struct rdp_dev *dev = rdp_dev_open("shm");
	struct rdp_pd *pd;
	struct rdp_arena *a;
	uint8_t *p[4], *big;
	unsigned int i;

	RDP_ASSERT(dev != NULL);
	pd = rdp_pd_alloc(dev);
	RDP_ASSERT(pd != NULL);
	a = rdp_arena_create("limit", pd, PAGES * RDP_ARENA_PAGE, -1, RDP_ACCESS_LOCAL_WRITE);
	RDP_ASSERT_MSG(a != NULL, "%s", rdp_err_msg());
	rdp_arena_limit(a, 16 * RDP_ARENA_PAGE - 1);
	for (i = 0; i < 4; i++) {
		p[i] = rdp_arena_alloc(a, 4 * RDP_ARENA_PAGE);
		RDP_ASSERT_MSG(p[i] == a->base + (size_t)i * 4 * RDP_ARENA_PAGE, "run %u", i);
	}
	RDP_ASSERT(rdp_arena_alloc(a, 1) == NULL);
	RDP_ASSERT_EQ(rte_errno, ENOBUFS);
	rdp_arena_free(a, p[1], 4 * RDP_ARENA_PAGE);
	RDP_ASSERT(rdp_arena_alloc(a, 5 * RDP_ARENA_PAGE) == NULL);
	RDP_ASSERT_EQ(rte_errno, ENOBUFS);
	RDP_ASSERT(rdp_arena_alloc(a, 4 * RDP_ARENA_PAGE) == p[1]);
	for (i = 0; i < 4; i++)
		rdp_arena_free(a, p[i], 4 * RDP_ARENA_PAGE);
	/* nothing in use: a run past the limit goes, and nothing else with it */
	big = rdp_arena_alloc(a, 40 * RDP_ARENA_PAGE);
	RDP_ASSERT(big == a->base);
	RDP_ASSERT(rdp_arena_alloc(a, 1) == NULL);
	RDP_ASSERT_EQ(rte_errno, ENOBUFS);
	rdp_arena_free(a, big, 40 * RDP_ARENA_PAGE);
	/* no limit again */
	rdp_arena_limit(a, 0);
	for (i = 0; i < 4; i++)
		RDP_ASSERT(rdp_arena_alloc(a, 16 * RDP_ARENA_PAGE) != NULL);
	RDP_ASSERT_EQ(rdp_arena_destroy(a), 4 * 16 * RDP_ARENA_PAGE);
	RDP_ASSERT_EQ(rdp_pd_free(pd), 0);
	rdp_dev_close(dev);
	return 0;
}

/* A fresh arena of @p pages pages for the line's tests. */
static struct rdp_arena *
line_arena(struct rdp_dev **dev, struct rdp_pd **pd, uint32_t pages)
{
	struct rdp_arena *a;

	*dev = rdp_dev_open("shm");
	RDP_ASSERT(*dev != NULL);
	*pd = rdp_pd_alloc(*dev);
	RDP_ASSERT(*pd != NULL);
	a = rdp_arena_create("line", *pd, pages * RDP_ARENA_PAGE, -1, RDP_ACCESS_LOCAL_WRITE);
	RDP_ASSERT_MSG(a != NULL, "%s", rdp_err_msg());
	return a;
}

/*
 * Takers refused get the room in the order they were refused: the one
 * whose free made it asks again at once and is refused (it joins the
 * line), a taker without a place is refused while anyone waits, and one
 * at the head still waits while its run does not fit.
 */
RDP_TEST(unit, arena_gives_freed_room_to_the_takers_in_the_order_they_were_refused)
{
	struct rdp_arena_turn ta = { 0 }, tb = { 0 }, tc = { 0 };
	struct rdp_dev *dev;
	struct rdp_pd *pd;
	struct rdp_arena *a = line_arena(&dev, &pd, 4);
	uint8_t *pa, *pb, *pc;

	/* no clock: nobody loses a place */
	pa = rdp_arena_alloc_in_turn(a, 4 * RDP_ARENA_PAGE, &ta);
	RDP_ASSERT(pa == a->base && !ta.queued);
	RDP_ASSERT(rdp_arena_alloc_in_turn(a, 4 * RDP_ARENA_PAGE, &tb) == NULL);
	RDP_ASSERT_EQ(rte_errno, ENOBUFS);
	RDP_ASSERT(tb.queued && a->line == &tb);
	RDP_ASSERT(rdp_arena_alloc_in_turn(a, 2 * RDP_ARENA_PAGE, &tc) == NULL);
	RDP_ASSERT(tc.queued && tb.next == &tc && a->line_tail == &tc);
	{
		struct rdp_arena_stats st;

		rdp_arena_stats_get(a, &st);
		RDP_ASSERT(st.size == 4 * RDP_ARENA_PAGE && st.avail == 0 && st.waiting == 2 &&
			   st.refused == 2 && st.lapsed == 0);
	}
	/* A frees and asks again first: B's turn */
	rdp_arena_free(a, pa, 4 * RDP_ARENA_PAGE);
	RDP_ASSERT(rdp_arena_alloc_in_turn(a, 4 * RDP_ARENA_PAGE, &ta) == NULL);
	RDP_ASSERT_EQ(rte_errno, ENOBUFS);
	RDP_ASSERT(ta.queued && a->line_tail == &ta);
	RDP_ASSERT(rdp_arena_alloc(a, 1) == NULL);
	RDP_ASSERT_EQ(rte_errno, ENOBUFS);
	pb = rdp_arena_alloc_in_turn(a, 4 * RDP_ARENA_PAGE, &tb);
	RDP_ASSERT(pb == a->base && !tb.queued && a->line == &tc);
	/* C's run does not fit yet: it keeps the head, A behind it */
	RDP_ASSERT(rdp_arena_alloc_in_turn(a, 2 * RDP_ARENA_PAGE, &tc) == NULL);
	RDP_ASSERT(a->line == &tc && tc.next == &ta);
	rdp_arena_free(a, pb, 4 * RDP_ARENA_PAGE);
	RDP_ASSERT(rdp_arena_alloc_in_turn(a, 4 * RDP_ARENA_PAGE, &ta) == NULL);
	pc = rdp_arena_alloc_in_turn(a, 2 * RDP_ARENA_PAGE, &tc);
	RDP_ASSERT(pc == a->base && a->line == &ta);
	/* A's four pages do not fit beside C's two: it waits for C's free */
	RDP_ASSERT(rdp_arena_alloc_in_turn(a, 4 * RDP_ARENA_PAGE, &ta) == NULL);
	rdp_arena_free(a, pc, 2 * RDP_ARENA_PAGE);
	pa = rdp_arena_alloc_in_turn(a, 4 * RDP_ARENA_PAGE, &ta);
	RDP_ASSERT(pa == a->base && a->line == NULL && a->line_tail == NULL);
	rdp_arena_free(a, pa, 4 * RDP_ARENA_PAGE);
	/* nobody in line: no place needed */
	pa = rdp_arena_alloc(a, RDP_ARENA_PAGE);
	RDP_ASSERT(pa != NULL);
	RDP_ASSERT_EQ(rdp_arena_destroy(a), RDP_ARENA_PAGE);
	RDP_ASSERT_EQ(rdp_pd_free(pd), 0);
	rdp_dev_close(dev);
	return 0;
}

/*
 * With a clock, a head whose room is free and who does not come back
 * within the lapse (2 ticks here) loses its place, counted from the
 * first time another taker finds the room free, however often it looks;
 * the next in line keeps its own. A taker that leaves the line makes way
 * at once, from the head or from the middle.
 */
RDP_TEST(unit, arena_line_head_that_does_not_come_back_or_leaves_makes_way)
{
	struct rdp_arena_turn ta = { 0 }, tb = { 0 }, tc = { 0 };
	struct rdp_dev *dev;
	struct rdp_pd *pd;
	struct rdp_arena *a = line_arena(&dev, &pd, 4);
	unsigned int clock = UINT_MAX - 1; /* it may wrap */
	uint8_t *pa, *pc;

	rdp_arena_turn_clock(a, &clock, 2);
	pa = rdp_arena_alloc_in_turn(a, 4 * RDP_ARENA_PAGE, &ta);
	RDP_ASSERT(pa != NULL);
	RDP_ASSERT(rdp_arena_alloc_in_turn(a, 4 * RDP_ARENA_PAGE, &tb) == NULL);
	RDP_ASSERT(rdp_arena_alloc_in_turn(a, 2 * RDP_ARENA_PAGE, &tc) == NULL);
	/* while B's room is not free, it keeps its place however long */
	RDP_ASSERT(rdp_arena_alloc_in_turn(a, RDP_ARENA_PAGE, &tc) == NULL);
	clock += 5;
	RDP_ASSERT(rdp_arena_alloc_in_turn(a, RDP_ARENA_PAGE, &tc) == NULL);
	RDP_ASSERT(a->line == &tb);
	rdp_arena_free(a, pa, 4 * RDP_ARENA_PAGE);
	/* B's room is free: C's first look starts B's lapse, across the wrap */
	clock = UINT_MAX;
	RDP_ASSERT(rdp_arena_alloc_in_turn(a, RDP_ARENA_PAGE, &tc) == NULL);
	clock++;
	RDP_ASSERT(rdp_arena_alloc_in_turn(a, RDP_ARENA_PAGE, &tc) == NULL);
	RDP_ASSERT(rdp_arena_alloc_in_turn(a, RDP_ARENA_PAGE, &tc) == NULL);
	RDP_ASSERT(a->line == &tb && tb.queued);
	clock++;
	pc = rdp_arena_alloc_in_turn(a, RDP_ARENA_PAGE, &tc);
	RDP_ASSERT(pc == a->base && !tb.queued && !tc.queued && a->line == NULL);
	RDP_ASSERT(a->lapsed == 1 && a->line_len == 0);
	/* B comes back later: at the end of the line, like anyone */
	pa = rdp_arena_alloc_in_turn(a, 3 * RDP_ARENA_PAGE, &ta);
	RDP_ASSERT(pa != NULL);
	RDP_ASSERT(rdp_arena_alloc_in_turn(a, 4 * RDP_ARENA_PAGE, &tb) == NULL);
	RDP_ASSERT(rdp_arena_alloc_in_turn(a, RDP_ARENA_PAGE, &tc) == NULL);
	RDP_ASSERT(a->line == &tb && tb.next == &tc);
	/* C leaves from behind B, then B from the head: A's free room is anyone's */
	rdp_arena_turn_leave(a, &tc);
	RDP_ASSERT(!tc.queued && a->line == &tb && a->line_tail == &tb && tb.next == NULL);
	rdp_arena_turn_leave(a, &tb);
	RDP_ASSERT(!tb.queued && a->line == NULL && a->line_tail == NULL);
	rdp_arena_turn_leave(a, &tb); /* not in line: nothing */
	rdp_arena_free(a, pc, RDP_ARENA_PAGE);
	pc = rdp_arena_alloc(a, RDP_ARENA_PAGE);
	RDP_ASSERT(pc == a->base);
	rdp_arena_free(a, pc, RDP_ARENA_PAGE);
	rdp_arena_free(a, pa, 3 * RDP_ARENA_PAGE);
	RDP_ASSERT_EQ(rdp_arena_destroy(a), 0);
	RDP_ASSERT_EQ(rdp_pd_free(pd), 0);
	rdp_dev_close(dev);
	return 0;
}

/*
 * A bulk is all or none, and in turn: a taker refused keeps its place
 * with what it asks now, so an application that asks for fewer next
 * (one after a refused burst) is still first; a bulk the arena never
 * lends at once is refused without a place in line, where it would stop
 * everyone behind it.
 */
RDP_TEST(unit, arena_bulk_is_all_or_none_and_keeps_the_takers_place)
{
	struct rdp_arena_turn ta = { 0 }, tb = { 0 };
	struct rdp_dev *dev;
	struct rdp_pd *pd;
	struct rdp_arena *a = line_arena(&dev, &pd, 8);
	void *pa[4], *pb[8];
	unsigned int i;

	RDP_ASSERT_EQ(rdp_arena_alloc_bulk_in_turn(a, RDP_ARENA_PAGE, pa, 0, &ta), -EINVAL);
	RDP_ASSERT_EQ(rdp_arena_alloc_bulk_in_turn(a, RDP_ARENA_PAGE, pa, RDP_ARENA_BULK_MAX + 1,
						   &ta), -EINVAL);
	RDP_ASSERT_EQ(rdp_arena_alloc_bulk_in_turn(a, 9 * RDP_ARENA_PAGE, pa, 1, &ta), -EMSGSIZE);
	RDP_ASSERT_EQ(rdp_arena_alloc_bulk_in_turn(a, 2 * RDP_ARENA_PAGE, pa, 4, &ta), 0);
	for (i = 0; i < 4; i++)
		RDP_ASSERT(pa[i] == a->base + (size_t)i * 2 * RDP_ARENA_PAGE);
	/* nothing taken of a bulk that does not fit whole */
	RDP_ASSERT_EQ(rdp_arena_alloc_bulk_in_turn(a, RDP_ARENA_PAGE, pb, 3, &tb), -ENOBUFS);
	RDP_ASSERT_EQ(rdp_arena_avail(a), 0);
	RDP_ASSERT(tb.queued && tb.pages == 1 && tb.count == 3);
	rdp_arena_free(a, pa[0], 2 * RDP_ARENA_PAGE);
	/* A asks first: B's turn, though B's three do not fit in two pages */
	RDP_ASSERT_EQ(rdp_arena_alloc_bulk_in_turn(a, RDP_ARENA_PAGE, pa, 1, &ta), -ENOBUFS);
	RDP_ASSERT_EQ(rdp_arena_avail(a), 2 * RDP_ARENA_PAGE);
	/* B asks for three again and is refused: it keeps the head, asking for one now gets it */
	RDP_ASSERT_EQ(rdp_arena_alloc_bulk_in_turn(a, RDP_ARENA_PAGE, pb, 3, &tb), -ENOBUFS);
	RDP_ASSERT(a->line == &tb && tb.next == &ta);
	RDP_ASSERT_EQ(rdp_arena_alloc_bulk_in_turn(a, RDP_ARENA_PAGE, pb, 1, &tb), 0);
	RDP_ASSERT(pb[0] == a->base && !tb.queued && a->line == &ta);
	rdp_arena_free(a, pb[0], RDP_ARENA_PAGE);
	for (i = 1; i < 4; i++)
		rdp_arena_free(a, pa[i], 2 * RDP_ARENA_PAGE);
	RDP_ASSERT_EQ(rdp_arena_alloc_bulk_in_turn(a, RDP_ARENA_PAGE, pa, 1, &ta), 0);
	rdp_arena_free(a, pa[0], RDP_ARENA_PAGE);
	/* more than the arena lends at once: refused, in nobody's way */
	rdp_arena_limit(a, 4 * RDP_ARENA_PAGE);
	RDP_ASSERT_EQ(rdp_arena_alloc_bulk_in_turn(a, 2 * RDP_ARENA_PAGE, pb, 3, &tb), -ENOBUFS);
	RDP_ASSERT(!tb.queued && a->line == NULL);
	RDP_ASSERT_EQ(rdp_arena_alloc_bulk_in_turn(a, 2 * RDP_ARENA_PAGE, pb, 2, &tb), 0);
	for (i = 0; i < 2; i++)
		rdp_arena_free(a, pb[i], 2 * RDP_ARENA_PAGE);
	RDP_ASSERT_EQ(rdp_arena_destroy(a), 0);
	RDP_ASSERT_EQ(rdp_pd_free(pd), 0);
	rdp_dev_close(dev);
	return 0;
}
