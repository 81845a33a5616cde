/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One core's memcpy: the ceiling of a one-sided transfer on shm, where a
 * WRITE or READ into memory the peer mapped is one memcpy by the
 * initiator. One pinned thread copies --size bytes from one buffer to
 * another, the same two buffers each time (as rdp-perf's one-sided modes
 * and ucx_perftest reuse theirs), for --duration seconds after a tenth of
 * that to warm up; prints the bytes per second.
 *
 *   probe-memcpy [--cpu N] [--size BYTES] [--duration SEC]
 */
#include "probe_common.h"

/* Keep the compiler from dropping a copy nobody reads. */
static inline void
probe_clobber(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

int
main(int argc, char **argv)
{
	int cpu = (int)probe_opt(argc, argv, "--cpu", 0);
	size_t size = (size_t)probe_opt(argc, argv, "--size", 1 << 20);
	double duration = probe_opt(argc, argv, "--duration", 1.0);
	struct probe_window w;
	uint8_t *src, *dst;
	uint64_t copies = 0;

	if (size == 0 || posix_memalign((void **)&src, 4096, size) != 0 ||
	    posix_memalign((void **)&dst, 4096, size) != 0)
		return 1;
	memset(src, 0x5a, size);
	memset(dst, 0, size);
	if (probe_pin(cpu) != 0)
		fprintf(stderr, "probe-memcpy: cannot pin to CPU %d\n", cpu);
	probe_window_init(&w, duration);
	do {
		unsigned int i;

		for (i = 0; i < 16; i++) {
			memcpy(dst, src, size);
			probe_clobber(dst);
		}
		copies += 16;
	} while (!probe_window_done(&w, rdp_clock_ns(), copies));
	printf("{\"probe\": \"memcpy\", \"cpu\": %d, \"size\": %zu, \"copies\": %" PRIu64
	       ", \"bytes_per_s\": %.0f}\n", cpu, size, probe_window_count(&w),
	       probe_window_secs(&w) > 0 ? probe_window_count(&w) * (double)size /
	       probe_window_secs(&w) : 0);
	free(src);
	free(dst);
	return 0;
}
