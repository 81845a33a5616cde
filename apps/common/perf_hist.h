/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_PERF_HIST_H
#define RDP_PERF_HIST_H

/*
 * A log-linear latency histogram, shared by rdp-perf and rdp-blk: exact
 * below 64 ns, then 32 buckets per power of two (about 3 % resolution) up
 * to 2^40 ns. Recording is a few instructions and no allocation, so the
 * poller records in place.
 */

#include <stdint.h>
#include <string.h>

#define HIST_SUB_BITS 5
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_LINEAR 64u
#define HIST_BUCKETS (HIST_LINEAR + (40 - 6) * HIST_SUB)

struct perf_hist {
	uint64_t count;
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
	into->count += h->count;
	into->sum += h->sum;
	if (h->max > into->max)
		into->max = h->max;
}

/* Value at quantile q (0..1): the floor of the bucket that reaches it. */
static inline uint64_t
hist_quantile(const struct perf_hist *h, double q)
{
	uint64_t want = (uint64_t)(q * (double)h->count), seen = 0;
	unsigned int i;

	if (h->count == 0)
		return 0;
	if (want >= h->count)
		want = h->count - 1;
	for (i = 0; i < HIST_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen > want)
			return hist_floor(i);
	}
	return h->max;
}

#endif /* RDP_PERF_HIST_H */
