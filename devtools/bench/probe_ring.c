/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The pipeline mode's handoff, alone: DPDK rte_rings between two pinned
 * CPUs, made as rdmaplane makes them (multi-producer, single-consumer,
 * 1024 entries; no EAL needed, the rings live in plain memory).
 *
 * - round trip: one pointer goes poller -> application through the event
 *   ring and back through the inbox, as an echo does in pipeline mode; the
 *   one-way handoff is half of it (median over batches);
 * - stream: the poller side enqueues bursts of 32, the application side
 *   dequeues bursts of 64 (rdp_event_dequeue_burst in rdp-perf); the rate
 *   is handoffs per second.
 *
 *   probe-ring [--duration SEC] [--cpu-a N] [--cpu-b N]
 */
#include "probe_common.h"

#include <rte_ring.h>

#define RING_SIZE 1024
#define TX_BURST 32
#define RX_BURST 64

struct rings {
	struct rte_ring *events; /* poller -> application */
	struct rte_ring *inbox;  /* application -> poller */
	int cpu_b;
	uint32_t mode;           /* 0: echo, 1: drain */
	_Alignas(PROBE_LINE) uint32_t stop;
};

static struct rte_ring *
ring_new(const char *name)
{
	ssize_t sz = rte_ring_get_memsize(RING_SIZE);
	struct rte_ring *r = sz > 0 ? aligned_alloc(PROBE_LINE, (size_t)sz) : NULL;

	if (r == NULL || rte_ring_init(r, name, RING_SIZE, RING_F_SC_DEQ) != 0) {
		fprintf(stderr, "probe-ring: cannot make ring %s\n", name);
		exit(1);
	}
	return r;
}

/* The application lcore: echo every event back, or swallow them. */
static void *
app(void *arg)
{
	struct rings *rs = arg;
	void *ev[RX_BURST];

	if (probe_pin(rs->cpu_b) != 0)
		fprintf(stderr, "probe-ring: cannot pin to CPU %d\n", rs->cpu_b);
	while (!__atomic_load_n(&rs->stop, __ATOMIC_ACQUIRE)) {
		unsigned int n = rte_ring_sc_dequeue_burst(rs->events, ev, RX_BURST, NULL), k = 0;

		if (n == 0) {
			probe_relax();
			continue;
		}
		if (__atomic_load_n(&rs->mode, __ATOMIC_RELAXED) == 1)
			continue;
		while (k < n && !__atomic_load_n(&rs->stop, __ATOMIC_RELAXED))
			k += rte_ring_mp_enqueue_burst(rs->inbox, ev + k, n - k, NULL);
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	static struct rings rs;
	double duration = probe_opt(argc, argv, "--duration", 1.0);
	int cpu_a = (int)probe_opt(argc, argv, "--cpu-a", 0);
	size_t nb = 0, max_batches = 1000000;
	double *oneway = malloc(max_batches * sizeof(*oneway));
	void *burst[TX_BURST], *item = &rs, *back;
	uint64_t end, sent = 0, t0, t1;
	unsigned int i;
	pthread_t th;

	rs.cpu_b = (int)probe_opt(argc, argv, "--cpu-b", 1);
	rs.events = ring_new("probe_events");
	rs.inbox = ring_new("probe_inbox");
	if (oneway == NULL)
		return 1;
	if (probe_pin(cpu_a) != 0)
		fprintf(stderr, "probe-ring: cannot pin to CPU %d\n", cpu_a);
	probe_spawn(&th, app, &rs);
	/* round trips, in batches of 1000 */
	end = rdp_clock_ns() + (uint64_t)(duration * 1e9 / 2);
	for (;;) {
		t0 = rdp_clock_ns();
		for (i = 0; i < 1000; i++) {
			while (rte_ring_mp_enqueue(rs.events, item) != 0)
				;
			while (rte_ring_sc_dequeue(rs.inbox, &back) != 0)
				;
		}
		t1 = rdp_clock_ns();
		if (nb < max_batches)
			oneway[nb++] = (t1 - t0) / 2000.0;
		if (t1 >= end)
			break;
	}
	/* stream */
	__atomic_store_n(&rs.mode, 1, __ATOMIC_RELEASE);
	for (i = 0; i < TX_BURST; i++)
		burst[i] = item;
	t0 = rdp_clock_ns();
	end = t0 + (uint64_t)(duration * 1e9 / 2);
	do {
		for (i = 0; i < 64; i++)
			sent += rte_ring_mp_enqueue_burst(rs.events, burst, TX_BURST, NULL);
		t1 = rdp_clock_ns();
	} while (t1 < end);
	__atomic_store_n(&rs.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	printf("{\"probe\": \"ring\", \"cpu_a\": %d, \"cpu_b\": %d, \"ring_size\": %d, "
	       "\"handoff_ns_p50\": %.1f, \"stream_rate\": %.1f}\n", cpu_a, rs.cpu_b, RING_SIZE,
	       probe_median(oneway, nb), sent / ((t1 - t0) / 1e9));
	free(oneway);
	return 0;
}
