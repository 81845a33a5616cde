/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_PERF_HIST_H
#define RDP_PERF_HIST_H

/*
 * A log-linear latency histogram, shared by rdp-perf and rdp-blk: exact
 * below 64 units (TSC cycles or ns), then 32 buckets per power of two
 * (about 3 % resolution) up to 2^40. Recording is a few instructions and
 * no allocation, so the poller records in place. A quantile is placed
 * inside its bucket by its rank there (values spread evenly over a bucket
 * come out exact) and never outside the smallest and largest value seen.
 */

#include <stdint.h>
#include <string.h>

#include <rte_common.h>

#define HIST_SUB_BITS 5
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_LINEAR 64u
#define HIST_BUCKETS (HIST_LINEAR + (40 - 6) * HIST_SUB)

struct perf_hist {
	uint64_t count;
	uint64_t min;     /* valid when count > 0 */
	uint64_t max;
	uint64_t sum;
	uint64_t bucket[HIST_BUCKETS];
};

static inline unsigned int
hist_index(uint64_t v)
{
	unsigned int msb;

	if (v < HIST_LINEAR)
		return (unsigned int)v;
	msb = 63 - __builtin_clzll(v);
	if (msb >= 40)
		return HIST_BUCKETS - 1;
	return HIST_LINEAR + (msb - 6) * HIST_SUB +
	       (unsigned int)((v >> (msb - HIST_SUB_BITS)) & (HIST_SUB - 1));
}

/* Smallest value of bucket i. */
static inline uint64_t
hist_floor(unsigned int i)
{
	unsigned int msb, sub;

	if (i < HIST_LINEAR)
		return i;
	msb = (i - HIST_LINEAR) / HIST_SUB + 6;
	sub = (i - HIST_LINEAR) % HIST_SUB;
	return (1ull << msb) | ((uint64_t)sub << (msb - HIST_SUB_BITS));
}

static inline void
hist_add(struct perf_hist *h, uint64_t v)
{
	h->bucket[hist_index(v)]++;
	if (h->count == 0 || v < h->min)
		h->min = v;
	h->count++;
	h->sum += v;
	if (v > h->max)
		h->max = v;
}

static inline void
hist_merge(struct perf_hist *into, const struct perf_hist *h)
{
	unsigned int i;

	for (i = 0; i < HIST_BUCKETS; i++)
		into->bucket[i] += h->bucket[i];
	if (h->count > 0 && (into->count == 0 || h->min < into->min))
		into->min = h->min;
	into->count += h->count;
	into->sum += h->sum;
	if (h->max > into->max)
		into->max = h->max;
}

/*
 * Value at quantile q (0..1): the value of rank floor(q * count), placed in
 * its bucket as if the bucket's values were spread evenly over it.
 */
static inline double
hist_quantile(const struct perf_hist *h, double q)
{
	uint64_t want = (uint64_t)(q * (double)h->count), seen = 0;
	unsigned int i;

	if (h->count == 0)
		return 0;
	if (want >= h->count)
		want = h->count - 1;
	for (i = 0; i < HIST_BUCKETS; i++) {
		uint64_t c = h->bucket[i], lo = hist_floor(i), width;
		double v;

		if (seen + c <= want) {
			seen += c;
			continue;
		}
		width = i + 1 < HIST_BUCKETS ? hist_floor(i + 1) - lo : 1;
		v = width == 1 ? (double)lo :
		    (double)lo + (double)width * ((double)(want - seen) + 0.5) / (double)c;
		return RTE_MIN(RTE_MAX(v, (double)h->min), (double)h->max);
	}
	return (double)h->max;
}

#endif /* RDP_PERF_HIST_H */
