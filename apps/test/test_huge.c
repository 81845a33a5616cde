/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Suite huge: memory on hugepages, as the kernel reports it. Each test
 * reserves the hugepages it needs (root) and gives them back when it ends,
 * so the suite runs alone, in a lane of its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conf_pair.h"
#include "rdp_dev.h"
#include "rdp_mem.h"
#include "rdp_pages.h"
#include "rdp_test.h"

#define NR_HUGEPAGES "/proc/sys/vm/nr_hugepages"

static long huge_old = -1;

static long
nr_read(void)
{
	FILE *f = fopen(NR_HUGEPAGES, "r");
	long n = -1;

	if (f == NULL)
		return -1;
	if (fscanf(f, "%ld", &n) != 1)
		n = -1;
	fclose(f);
	return n;
}

static int
nr_write(long n)
{
	FILE *f = fopen(NR_HUGEPAGES, "w");
	int ok;

	if (f == NULL)
		return -1;
	ok = fprintf(f, "%ld\n", n) > 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

static void
huge_restore(void)
{
	if (huge_old >= 0)
		nr_write(huge_old);
}

/*
 * Make exactly @p n hugepages free, the old reservation restored at exit
 * (also when an assertion ends the test). RDP_TEST_SKIPPED when this
 * machine cannot.
 */
static int
huge_reserve(long n)
{
	if (rdp_hugepage_size() == 0)
		return rdp_test_skip("this kernel has no hugepages");
	if (geteuid() != 0 || access(NR_HUGEPAGES, W_OK) != 0)
		return rdp_test_skip("reserving hugepages needs root (%s)", NR_HUGEPAGES);
	if (huge_old < 0) {
		huge_old = nr_read();
		atexit(huge_restore);
		rdp_test_on_fail(huge_restore);
	}
	if (nr_write(n) < 0 || rdp_hugepages_free() != n)
		return rdp_test_skip("asked the kernel for %ld free hugepages, %ld are free (in "
				     "use elsewhere, or memory too fragmented)", n,
				     rdp_hugepages_free());
	return 0;
}

/*
 * A test that fails after it reserved hugepages gives them back: an
 * assertion ends the test at once, and the next test (or lane) must find
 * the reservation as it was.
 */
RDP_TEST(huge, huge_reservation_is_given_back_when_a_test_fails)
{
	long before = nr_read();
	int status, ret;
	pid_t pid;

	if (before < 0)
		return rdp_test_skip("cannot read %s", NR_HUGEPAGES);
	pid = fork();
	RDP_ASSERT(pid >= 0);
	if (pid == 0) {
		/* a failing test of its own, quiet: its FAIL line is no failure */
		ret = huge_reserve(before + 3);
		if (ret != 0)
			_exit(ret == RDP_TEST_SKIPPED ? 77 : 2);
		if (freopen("/dev/null", "w", stderr) == NULL)
			_exit(2);
		RDP_ASSERT_MSG(false, "failing on purpose with %ld hugepages reserved", before + 3);
	}
	RDP_ASSERT_EQ(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
		return rdp_test_skip("the child could not reserve hugepages");
	RDP_ASSERT_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 1,
		       "the child did not fail as asked (status %d)", status);
	RDP_ASSERT_MSG(nr_read() == before, "%s is %ld after the failed test, %ld before",
		       NR_HUGEPAGES, nr_read(), before);
	return 0;
}

/*
 * rdp_mr_alloc() puts a region on hugepages when asked (shm: a hugetlb
 * memfd; verbs, in the rxe lane: MAP_HUGETLB), the kernel
 * says so (smaps), and the pages come back when it is freed; with too few
 * free, RDP_ALLOC_HUGE_ONLY fails naming the counts and RDP_ALLOC_HUGE_TRY
 * takes base pages; a small region asking to try stays on base pages.
 */
RDP_TEST(huge, huge_mr_alloc_takes_hugepages_or_says_how_many_it_lacked)
{
	size_t huge = rdp_hugepage_size();
	struct rdp_mr *a, *b, *small;
	struct rdp_dev *dev;
	struct rdp_pd *pd;
	int ret;

	ret = huge_reserve(4);
	if (ret != 0)
		return ret;
	dev = rdp_dev_open(rdp_test_driver());
	RDP_ASSERT_MSG(dev != NULL, "%s", rdp_err_msg());
	pd = rdp_pd_alloc(dev);
	RDP_ASSERT(pd != NULL);

	a = rdp_mr_alloc(pd, huge + huge / 2, -1, RDP_ACCESS_LOCAL_WRITE | RDP_ALLOC_HUGE_TRY);
	RDP_ASSERT_MSG(a != NULL, "%s", rdp_err_msg());
	RDP_ASSERT_EQ(a->page_size, huge);
	RDP_ASSERT_EQ(a->access, RDP_ACCESS_LOCAL_WRITE);
	RDP_ASSERT_EQ(rdp_page_size_at(a->addr), huge);
	RDP_ASSERT_EQ(rdp_page_size_at((char *)a->addr + a->length - 1), huge);
	memset(a->addr, 0xa5, a->length);
	RDP_ASSERT_EQ(rdp_hugepages_free(), 2);

	/* three more are needed, two are free */
	b = rdp_mr_alloc(pd, 3 * huge, -1, RDP_ACCESS_LOCAL_WRITE | RDP_ALLOC_HUGE_ONLY);
	RDP_ASSERT(b == NULL);
	RDP_ASSERT_EQ(rte_errno, ENOMEM);
	RDP_ASSERT_MSG(strstr(rdp_err_msg(), "it needs 3 x 2048 KiB, 2 free") != NULL,
		       "%s", rdp_err_msg());
	b = rdp_mr_alloc(pd, 3 * huge, -1, RDP_ACCESS_LOCAL_WRITE | RDP_ALLOC_HUGE_TRY);
	RDP_ASSERT_MSG(b != NULL, "%s", rdp_err_msg());
	RDP_ASSERT_EQ(b->page_size, (size_t)sysconf(_SC_PAGESIZE));
	RDP_ASSERT_EQ(rdp_page_size_at(b->addr), (size_t)sysconf(_SC_PAGESIZE));
	RDP_ASSERT_EQ(rdp_hugepages_free(), 2);

	small = rdp_mr_alloc(pd, huge / 4, -1, RDP_ACCESS_LOCAL_WRITE | RDP_ALLOC_HUGE_TRY);
	RDP_ASSERT_MSG(small != NULL, "%s", rdp_err_msg());
	RDP_ASSERT_EQ(small->page_size, (size_t)sysconf(_SC_PAGESIZE));
	RDP_ASSERT(rdp_mr_alloc(pd, huge, -1, RDP_ALLOC_HUGE_TRY | RDP_ALLOC_HUGE_ONLY) == NULL);
	RDP_ASSERT_EQ(rte_errno, EINVAL);

	RDP_ASSERT_EQ(rdp_mr_free(small), 0);
	RDP_ASSERT_EQ(rdp_mr_free(b), 0);
	RDP_ASSERT_EQ(rdp_mr_free(a), 0);
	RDP_ASSERT_EQ(rdp_hugepages_free(), 4);
	RDP_ASSERT_EQ(rdp_pd_free(pd), 0);
	rdp_dev_close(dev);
	return 0;
}

/*
 * A pool asked for hugepages has its buffers there (smaps, at the first
 * and the last buffer) and takes exactly the pages it needs; with none
 * free its error names the pool and the counts.
 */
RDP_TEST(huge, huge_pool_buffers_sit_on_hugepages_or_its_error_names_it_and_the_counts)
{
	size_t huge = rdp_hugepage_size();
	struct rdp_pool *pool;
	struct rdp_dev *dev;
	struct rdp_pd *pd;
	int ret;

	ret = huge_reserve(2);
	if (ret != 0)
		return ret;
	dev = rdp_dev_open(rdp_test_driver());
	RDP_ASSERT_MSG(dev != NULL, "%s", rdp_err_msg());
	pd = rdp_pd_alloc(dev);
	RDP_ASSERT(pd != NULL);
	pool = rdp_pool_create("huge", pd, 256, 8192, -1,
			       RDP_ACCESS_LOCAL_WRITE | RDP_ALLOC_HUGE_ONLY);
	RDP_ASSERT_MSG(pool != NULL, "%s", rdp_err_msg());
	RDP_ASSERT_EQ(pool->mr->page_size, huge);
	RDP_ASSERT_EQ(rdp_page_size_at(rdp_pool_buf(pool, 0)), huge);
	RDP_ASSERT_EQ(rdp_page_size_at(rdp_pool_buf(pool, 255) + 8191), huge);
	RDP_ASSERT_EQ(rdp_hugepages_free(), 1);
	/* a second pool of the same size finds one page where it needs one */
	{
		struct rdp_pool *two = rdp_pool_create("huge2", pd, 256, 8192, -1,
							RDP_ACCESS_LOCAL_WRITE |
							RDP_ALLOC_HUGE_ONLY);

		RDP_ASSERT_MSG(two != NULL, "%s", rdp_err_msg());
		RDP_ASSERT_EQ(rdp_hugepages_free(), 0);
		RDP_ASSERT_EQ(rdp_pool_destroy(two), 0);
	}
	RDP_ASSERT_EQ(rdp_pool_destroy(pool), 0);
	RDP_ASSERT_EQ(rdp_hugepages_free(), 2);
	/* with none free, the pool's error names it and the counts */
	RDP_ASSERT_EQ(huge_reserve(0), 0);
	RDP_ASSERT(rdp_pool_create("short", pd, 256, 8192, -1,
				   RDP_ACCESS_LOCAL_WRITE | RDP_ALLOC_HUGE_ONLY) == NULL);
	RDP_ASSERT_MSG(strstr(rdp_err_msg(), "pool short: cannot register 256 x 8192 bytes") &&
		       strstr(rdp_err_msg(), "it needs 1 x 2048 KiB, 0 free"),
		       "%s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_pd_free(pd), 0);
	rdp_dev_close(dev);
	return 0;
}

/*
 * A region on hugepages whose length is no multiple of a hugepage (its
 * file is rounded up to whole hugepages) is shared with a peer as any
 * other: the peer's connect takes it, and a READ and a WRITE of its last
 * bytes reach them.
 */
RDP_TEST(huge, huge_region_of_part_of_a_hugepage_is_shared_with_a_peer)
{
	size_t huge = rdp_hugepage_size();
	uint32_t len = (uint32_t)(huge + huge / 2), off = len - 8;
	uint64_t seen, word = UINT64_C(0x0123456789abcdef);
	struct conf_pair p, q;
	struct conf_opts o;
	struct rdp_wc wc;
	struct rdp_mr *mr;
	int ret;

	ret = huge_reserve(4);
	if (ret != 0)
		return ret;
	conf_opts_default(&o);
	conf_pair_open(&p, NULL, &o);
	mr = rdp_mr_alloc(p.pd, len, -1, RDP_ACCESS_LOCAL_WRITE | RDP_ACCESS_REMOTE_READ |
			  RDP_ACCESS_REMOTE_WRITE | RDP_ALLOC_HUGE_ONLY);
	RDP_ASSERT_MSG(mr != NULL, "%s", rdp_err_msg());
	RDP_ASSERT_EQ(mr->page_size, huge);
	memcpy((uint8_t *)mr->addr + off, &word, 8);
	/* a pair connected after the region exists: the peer maps it */
	conf_pair_open_more(&q, &p, &o);
	RDP_ASSERT_EQ(conf_post_send(&q.b, RDP_WR_RDMA_READ, RDP_SEND_SIGNALED, 1, 0, 8, 0,
				     (uintptr_t)mr->addr + off, mr->rkey), 0);
	RDP_ASSERT_EQ(conf_poll(&q.b, &wc, 1, 2000), 1);
	RDP_ASSERT_EQ(wc.status, RDP_WC_SUCCESS);
	memcpy(&seen, q.b.tx->addr, 8);
	RDP_ASSERT_EQ(seen, word);
	conf_tx_fill(&q.b, 0, 8, 7);
	RDP_ASSERT_EQ(conf_post_send(&q.b, RDP_WR_RDMA_WRITE, RDP_SEND_SIGNALED, 2, 0, 8, 0,
				     (uintptr_t)mr->addr + off, mr->rkey), 0);
	RDP_ASSERT_EQ(conf_poll(&q.b, &wc, 1, 2000), 1);
	RDP_ASSERT_EQ(wc.status, RDP_WC_SUCCESS);
	RDP_ASSERT_EQ(memcmp((uint8_t *)mr->addr + off, q.b.tx->addr, 8), 0);
	conf_pair_close_more(&q);
	RDP_ASSERT_EQ(rdp_mr_free(mr), 0);
	conf_pair_close(&p);
	return 0;
}
