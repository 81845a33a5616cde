/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: the remote descriptor parser (rdp_rdesc_decode(), rdp_rdma.h),
 * what a peer's message hands to rdp_ep_rdma_burst(). Properties:
 * - it never reads past the input and always says why it refused;
 * - what it accepts has a length of at least 1, a range that does not
 *   wrap, known access bits, and encodes back to the very same bytes;
 * - whatever it is given, a descriptor it encoded itself decodes.
 */
#include <string.h>

#include "fuzz.h"
#include "rdp_rdma.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t copy[RDP_RDESC_LEN], again[RDP_RDESC_LEN];
	struct rdp_rdesc d, e;
	char why[160];
	int ret;

	why[0] = '\0';
	ret = rdp_rdesc_decode(data, size, &d, why, sizeof(why));
	if (ret != 0) {
		FUZZ_ASSERT(ret == -EPROTO);
		FUZZ_ASSERT(why[0] != '\0');
	} else {
		FUZZ_ASSERT(size == RDP_RDESC_LEN);
		FUZZ_ASSERT(d.len >= 1 && d.addr + d.len >= d.addr);
		FUZZ_ASSERT(d.access >= 1 && d.access <= 3);
		rdp_rdesc_encode(&d, again);
		FUZZ_ASSERT(memcmp(again, data, RDP_RDESC_LEN) == 0);
	}
	/* any fields, made well-formed, survive a round trip */
	memset(copy, 0, sizeof(copy));
	memcpy(copy, data, size < sizeof(copy) ? size : sizeof(copy));
	memcpy(&d.addr, copy, 8);
	memcpy(&d.len, copy + 8, 8);
	memcpy(&d.rkey, copy + 16, 4);
	d.len = d.len % (UINT64_C(1) << 40) + 1;
	d.addr %= UINT64_C(1) << 56;
	d.access = copy[20] % 3 + 1;
	rdp_rdesc_encode(&d, again);
	FUZZ_ASSERT(rdp_rdesc_decode(again, sizeof(again), &e, why, sizeof(why)) == 0);
	FUZZ_ASSERT(e.addr == d.addr && e.len == d.len && e.rkey == d.rkey &&
		    e.access == d.access);
	return 0;
}
