/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Cross-core cache-line ping-pong: the floor of one-way latency between
 * two CPUs. Two pinned threads take turns incrementing one counter on one
 * cache line; each increment is one transfer of the line to the other core.
 * One-way latency = batch time / transfers, reported as the median, the
 * 10th percentile and the minimum over batches. The 10th percentile tells
 * the VM's state even when other processes share the CPUs: a batch that
 * lost its CPU to another process is slow, but most batches do not.
 *
 *   probe-cacheline [--cpu-a N] [--cpu-b N] [--duration SEC] [--batch N]
 */
#include "probe_common.h"

struct pingpong {
	_Alignas(PROBE_LINE) uint64_t line; /* the only shared line */
	_Alignas(PROBE_LINE) int cpu_b;
	uint64_t stop_at;                   /* written before the responder starts */
};

static void *
responder(void *arg)
{
	struct pingpong *pp = arg;
	uint64_t want = 1;

	if (probe_pin(pp->cpu_b) != 0)
		fprintf(stderr, "probe-cacheline: cannot pin to CPU %d\n", pp->cpu_b);
	for (;;) {
		while (__atomic_load_n(&pp->line, __ATOMIC_ACQUIRE) != want)
			;
		if (want >= pp->stop_at)
			return NULL;
		__atomic_store_n(&pp->line, want + 1, __ATOMIC_RELEASE);
		want += 2;
	}
}

int
main(int argc, char **argv)
{
	static struct pingpong pp;
	int cpu_a = (int)probe_opt(argc, argv, "--cpu-a", 0);
	double duration = probe_opt(argc, argv, "--duration", 1.0);
	uint64_t batch = (uint64_t)probe_opt(argc, argv, "--batch", 1000);
	size_t max_batches = 1000000, nb = 0;
	double *oneway = malloc(max_batches * sizeof(*oneway));
	uint64_t v = 0, end;
	pthread_t t;

	pp.cpu_b = (int)probe_opt(argc, argv, "--cpu-b", 1);
	pp.stop_at = UINT64_MAX;
	if (oneway == NULL || batch == 0)
		return 1;
	if (probe_pin(cpu_a) != 0)
		fprintf(stderr, "probe-cacheline: cannot pin to CPU %d\n", cpu_a);
	probe_spawn(&t, responder, &pp);
	end = rdp_clock_ns() + (uint64_t)(duration * 1e9);
	/* the first batch warms both cores up and is not counted; at least five
	 * are, unless a loaded machine makes them take 10 s longer than asked */
	for (;;) {
		uint64_t t0 = rdp_clock_ns(), i, t1;

		for (i = 0; i < batch; i++) {
			__atomic_store_n(&pp.line, v + 1, __ATOMIC_RELEASE);
			while (__atomic_load_n(&pp.line, __ATOMIC_ACQUIRE) != v + 2)
				;
			v += 2;
		}
		t1 = rdp_clock_ns();
		if (v > 2 * batch && nb < max_batches)
			oneway[nb++] = (double)(t1 - t0) / (2.0 * batch);
		if (t1 >= end && (nb >= 5 || t1 >= end + 10 * 1000000000ull))
			break;
	}
	/* let the responder see a final odd value it must not answer */
	pp.stop_at = v + 1;
	__atomic_store_n(&pp.line, v + 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	{
		double p50 = probe_median(oneway, nb), min = nb ? oneway[0] : 0;
		double p10 = nb ? oneway[nb / 10] : 0;

		printf("{\"probe\": \"cacheline\", \"cpu_a\": %d, \"cpu_b\": %d, \"batches\": %zu, "
		       "\"transfers_per_batch\": %" PRIu64 ", \"oneway_ns_p50\": %.1f, "
		       "\"oneway_ns_p10\": %.1f, \"oneway_ns_min\": %.1f}\n", cpu_a, pp.cpu_b, nb,
		       2 * batch, p50, p10, min);
	}
	free(oneway);
	return nb > 0 ? 0 : 1;
}
