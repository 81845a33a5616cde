/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The latency histogram of rdp-perf and rdp-blk (apps/common/perf_hist.h):
 * every value lands in the bucket that covers it, and a quantile is the
 * value at that rank, not the floor of its bucket (which reads up to one
 * bucket, about 3 %, low).
 */
#include <math.h>

#include "perf_hist.h"
#include "rdp_test.h"

static struct perf_hist hist;

static void
hist_reset(void)
{
	memset(&hist, 0, sizeof(hist));
}

RDP_TEST(unit, hist_every_value_lands_in_the_bucket_that_covers_it)
{
	uint64_t v;

	for (v = 0; v < (UINT64_C(1) << 20); v += 1 + v / 97) {
		unsigned int i = hist_index(v);

		RDP_ASSERT_MSG(hist_floor(i) <= v && v < hist_floor(i + 1),
			       "%" PRIu64 " in bucket %u [%" PRIu64 ", %" PRIu64 ")", v, i,
			       hist_floor(i), hist_floor(i + 1));
		/* about 3 %: 32 buckets per power of two above the exact range */
		RDP_ASSERT(hist_floor(i + 1) - hist_floor(i) <= RTE_MAX(v / 32, UINT64_C(1)));
	}
	return 0;
}

RDP_TEST(unit, hist_median_of_an_even_spread_is_its_middle_not_its_bucket_floor)
{
	uint64_t v;
	double p50, p90;

	hist_reset();
	for (v = 1000; v < 2000; v++)
		hist_add(&hist, v);
	p50 = hist_quantile(&hist, 0.50);
	p90 = hist_quantile(&hist, 0.90);
	/* the bucket of 1500 starts at 1472, the one of 1900 at 1856 */
	RDP_ASSERT_MSG(fabs(p50 - 1500) <= 1, "p50 %.1f, want 1500", p50);
	RDP_ASSERT_MSG(fabs(p90 - 1900) <= 1, "p90 %.1f, want 1900", p90);
	return 0;
}

RDP_TEST(unit, hist_quantiles_of_one_repeated_value_are_that_value)
{
	double q[] = { 0.0, 0.5, 0.99, 0.999, 1.0 };
	unsigned int i;

	hist_reset();
	for (i = 0; i < 1000; i++)
		hist_add(&hist, 1700);
	for (i = 0; i < RTE_DIM(q); i++)
		RDP_ASSERT_MSG(hist_quantile(&hist, q[i]) == 1700, "q %.3f: %.1f", q[i], (double)
			       hist_quantile(&hist, q[i]));
	return 0;
}

RDP_TEST(unit, hist_quantiles_are_exact_below_64_and_ordered_above)
{
	uint64_t v;
	double last = 0;
	unsigned int k;

	hist_reset();
	hist_add(&hist, 10);
	hist_add(&hist, 20);
	hist_add(&hist, 30);
	RDP_ASSERT(hist_quantile(&hist, 0.5) == 20);
	RDP_ASSERT(hist_quantile(&hist, 0.0) == 10);
	RDP_ASSERT(hist_quantile(&hist, 1.0) == 30);
	RDP_ASSERT(hist_quantile(&(struct perf_hist){ 0 }, 0.5) == 0);

	hist_reset();
	for (v = 1; v < 5000000; v = v * 11 / 10 + 1)
		hist_add(&hist, v);
	for (k = 0; k <= 1000; k++) {
		double x = hist_quantile(&hist, k / 1000.0);

		RDP_ASSERT_MSG(x >= last, "quantile %u/1000 = %.1f below the one before (%.1f)", k,
			       x, last);
		RDP_ASSERT(x >= 1 && x <= (double)hist.max);
		last = x;
	}
	return 0;
}
