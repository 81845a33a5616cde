/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One core's memcpy: the ceiling of a one-sided transfer on shm, where a
 * WRITE or READ into memory the peer mapped is one memcpy by the
 * initiator. One pinned thread copies --size bytes from one buffer to
 * another, the same two buffers each time (as rdp-perf's one-sided modes
 * and ucx_perftest reuse theirs), for --duration seconds after a tenth of
 * that to warm up; prints the bytes per second.
 *
 * With --span, the copies walk a source of that many bytes in order, one
 * --size block after the other, into destinations that walk --dst-span
 * bytes: the ceiling of a block target that reads a device larger than the
 * caches into a loader's rotating buffers (devtools/bench/blk.sh).
 *
 *   probe-memcpy [--cpu N] [--size BYTES] [--duration SEC]
 *                [--span BYTES [--dst-span BYTES]]
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
	size_t span = (size_t)probe_opt(argc, argv, "--span", 0);
	size_t dst_span = (size_t)probe_opt(argc, argv, "--dst-span", 0);
	size_t so = 0, dof = 0;
	struct probe_window w;
	uint8_t *src, *dst;
	uint64_t copies = 0;

	if (span == 0)
		span = size;
	if (dst_span == 0)
		dst_span = size;
	if (size == 0 || span % size != 0 || dst_span % size != 0) {
		fprintf(stderr, "probe-memcpy: --span and --dst-span must be multiples of --size\n");
		return 2;
	}
	if (posix_memalign((void **)&src, 4096, span) != 0 ||
	    posix_memalign((void **)&dst, 4096, dst_span) != 0)
		return 1;
	/* written once, so that every page is there before the window */
	memset(src, 0x5a, span);
	memset(dst, 0, dst_span);
	if (probe_pin(cpu) != 0)
		fprintf(stderr, "probe-memcpy: cannot pin to CPU %d\n", cpu);
	probe_window_init(&w, duration);
	do {
		unsigned int i;

		for (i = 0; i < 16; i++) {
			memcpy(dst + dof, src + so, size);
			probe_clobber(dst + dof);
			so = so + size == span ? 0 : so + size;
			dof = dof + size == dst_span ? 0 : dof + size;
		}
		copies += 16;
	} while (!probe_window_done(&w, rdp_clock_ns(), copies));
	printf("{\"probe\": \"memcpy\", \"cpu\": %d, \"size\": %zu, \"span\": %zu, "
	       "\"dst_span\": %zu, \"copies\": %" PRIu64
	       ", \"bytes_per_s\": %.0f}\n", cpu, size, span, dst_span, probe_window_count(&w),
	       probe_window_secs(&w) > 0 ? probe_window_count(&w) * (double)size /
	       probe_window_secs(&w) : 0);
	free(src);
	free(dst);
	return 0;
}
