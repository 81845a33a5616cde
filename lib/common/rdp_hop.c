/* SPDX-License-Identifier: BSD-3-Clause */
/* Hop-trace builds only (-Dhop_trace=true): see rdp_hop.h. */

#include <stdio.h>
#include <stdlib.h>

#include <rte_cycles.h>

#include "rdp_hop.h"

static uint64_t stamps[RDP_HOP_NB_POINTS][RDP_HOP_MAX];
static uint32_t counts[RDP_HOP_NB_POINTS];

void
rdp_hop_mark(enum rdp_hop_point point)
{
	if (point == RDP_HOP_VISIBLE)
		rte_mb();
	if (counts[point] < RDP_HOP_MAX)
		stamps[point][counts[point]++] = rte_rdtsc();
}

/*
 * The file: "RDPHOP1\n", the number of points (u32), the TSC's rate in Hz
 * (u64), each point's count (u32), then each point's stamps (u64), all in
 * host order.
 */
static void __attribute__((destructor))
hop_dump(void)
{
	const char *path = getenv("RDP_HOP_TRACE_FILE");
	uint32_t nb = RDP_HOP_NB_POINTS, p;
	uint64_t hz = rte_get_tsc_hz();
	FILE *f;

	if (path == NULL)
		return;
	f = fopen(path, "wb");
	if (f == NULL) {
		fprintf(stderr, "rdp_hop: cannot write %s\n", path);
		return;
	}
	fwrite("RDPHOP1\n", 1, 8, f);
	fwrite(&nb, sizeof(nb), 1, f);
	fwrite(&hz, sizeof(hz), 1, f);
	fwrite(counts, sizeof(counts[0]), nb, f);
	for (p = 0; p < nb; p++)
		fwrite(stamps[p], sizeof(stamps[p][0]), counts[p], f);
	if (fclose(f) != 0)
		fprintf(stderr, "rdp_hop: cannot write %s\n", path);
}
