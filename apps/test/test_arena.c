/* SPDX-License-Identifier: BSD-3-Clause */
/* The registered arena of lib/mem (rdp_arena.h), on the shm device. */
#include <errno.h>
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
