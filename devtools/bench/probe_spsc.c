/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A batched single-producer single-consumer ring between two pinned CPUs:
 * the ceiling of message rate and bandwidth for a message of SIZE bytes.
 *
 * The producer copies each message into a ring slot (one copy, as the shm
 * driver copies a SEND into the receive buffer) and publishes its head
 * once per batch; the consumer reads the first word of each slot (as
 * rdp-perf's server reads the first byte) and publishes its tail once per
 * batch. Indices sit on cache lines of their own and each side caches the
 * other's index, so a batch costs two line transfers plus the payload.
 *
 *   probe-spsc [--size BYTES] [--batch N] [--slots N] [--duration SEC]
 *              [--cpu-a N] [--cpu-b N]
 */
#include "probe_common.h"

struct spsc {
	_Alignas(PROBE_LINE) uint64_t head;  /* producer: messages published */
	_Alignas(PROBE_LINE) uint64_t tail;  /* consumer: messages consumed */
	_Alignas(PROBE_LINE) uint32_t stop;  /* consumer asks the producer to stop */
	_Alignas(PROBE_LINE) uint8_t *slots;
	size_t stride;
	uint64_t nslots;
	uint64_t batch;
	size_t size;
	int cpu_a;
};

static void *
producer(void *arg)
{
	struct spsc *r = arg;
	uint8_t *src = aligned_alloc(PROBE_LINE, (r->size + PROBE_LINE - 1) / PROBE_LINE * PROBE_LINE);
	uint64_t h = 0, published = 0, tail = 0;

	if (src == NULL)
		exit(1);
	memset(src, 0xa5, r->size);
	if (probe_pin(r->cpu_a) != 0)
		fprintf(stderr, "probe-spsc: cannot pin to CPU %d\n", r->cpu_a);
	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		uint64_t i;

		for (i = 0; i < r->batch; i++) {
			uint8_t *slot;

			while (h - tail == r->nslots) {
				if (published != h) {
					__atomic_store_n(&r->head, h, __ATOMIC_RELEASE);
					published = h;
				}
				tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
				if (h - tail == r->nslots) {
					if (__atomic_load_n(&r->stop, __ATOMIC_RELAXED))
						goto out;
					probe_relax();
				}
			}
			slot = r->slots + (h % r->nslots) * r->stride;
			memcpy(slot, src, r->size);
			memcpy(slot, &h, sizeof(h) <= r->size ? sizeof(h) : r->size);
			h++;
		}
		__atomic_store_n(&r->head, h, __ATOMIC_RELEASE);
		published = h;
	}
out:
	free(src);
	return NULL;
}

int
main(int argc, char **argv)
{
	static struct spsc r;
	double duration = probe_opt(argc, argv, "--duration", 1.0);
	int cpu_b = (int)probe_opt(argc, argv, "--cpu-b", 1);
	uint64_t t = 0, head = 0, pending = 0, count = 0, bad = 0;
	struct probe_window win;
	pthread_t th;

	r.size = (size_t)probe_opt(argc, argv, "--size", 64);
	r.batch = (uint64_t)probe_opt(argc, argv, "--batch", 32);
	r.cpu_a = (int)probe_opt(argc, argv, "--cpu-a", 0);
	r.stride = (r.size + PROBE_LINE - 1) / PROBE_LINE * PROBE_LINE;
	/*
	 * 256 slots, at most 2 MiB of ring: about rdp-perf's working set (a
	 * window of 64 messages into 256 receive buffers of 8 KiB), so that
	 * the ceiling stays in the caches as rdp-perf does
	 */
	r.nslots = (uint64_t)probe_opt(argc, argv, "--slots", 0);
	if (r.nslots == 0) {
		r.nslots = 256;
		while (r.nslots > 32 && r.nslots * r.stride > (2u << 20))
			r.nslots /= 2;
	}
	if (r.size < 8 || r.batch == 0 || r.batch > r.nslots) {
		fprintf(stderr, "probe-spsc: need --size >= 8 and 1 <= --batch <= slots\n");
		return 2;
	}
	r.slots = aligned_alloc(4096, (r.nslots * r.stride + 4095) / 4096 * 4096);
	if (r.slots == NULL)
		return 1;
	memset(r.slots, 0, r.nslots * r.stride);
	if (probe_pin(cpu_b) != 0)
		fprintf(stderr, "probe-spsc: cannot pin to CPU %d\n", cpu_b);
	probe_spawn(&th, producer, &r);
	probe_window_init(&win, duration);
	for (;;) {
		if (t == head) {
			if (pending > 0) {
				__atomic_store_n(&r.tail, t, __ATOMIC_RELEASE);
				pending = 0;
			}
			head = __atomic_load_n(&r.head, __ATOMIC_ACQUIRE);
			if (t == head) {
				probe_relax();
				if ((++bad & 1023) != 0)
					continue;
				bad = 0;
			}
		}
		while (t != head) {
			uint64_t seq;

			memcpy(&seq, r.slots + (t % r.nslots) * r.stride, sizeof(seq));
			if (seq != t) {
				fprintf(stderr, "probe-spsc: slot %" PRIu64 " holds %" PRIu64 "\n", t, seq);
				return 1;
			}
			t++;
			count++;
			if (++pending == r.batch) {
				__atomic_store_n(&r.tail, t, __ATOMIC_RELEASE);
				pending = 0;
			}
		}
		if (probe_window_done(&win, rdp_clock_ns(), count))
			break;
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&r.tail, t, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	{
		double secs = probe_window_secs(&win);
		double rate = secs > 0 ? probe_window_count(&win) / secs : 0;

		printf("{\"probe\": \"spsc\", \"cpu_a\": %d, \"cpu_b\": %d, \"size\": %zu, "
		       "\"batch\": %" PRIu64 ", \"slots\": %" PRIu64 ", \"messages\": %" PRIu64
		       ", \"seconds\": %.3f, \"msg_rate\": %.1f, \"gbps\": %.4f}\n", r.cpu_a, cpu_b,
		       r.size, r.batch, r.nslots, probe_window_count(&win), secs, rate,
		       rate * (double)r.size * 8 / 1e9);
	}
	free(r.slots);
	return 0;
}
