/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdp-perf's exactly-once check (apps/common/perf_wire.h): every message
 * carries its sender's number on the endpoint, and the receiver names a
 * duplicate, an old number or a gap with the numbers expected and seen.
 */
#include "perf_wire.h"
#include "rdp_test.h"

/* Check a message of @p len bytes carrying @p seq; returns the verdict. */
static bool
arrive(struct perf_seq *s, uint32_t len, uint64_t seq, uint64_t *expected, uint64_t *seen)
{
	uint8_t msg[64] = { 0 };

	perf_stamp(msg, len, PERF_ECHO, seq);
	RDP_ASSERT(msg[0] == PERF_ECHO);
	return perf_seq_check(s, msg, len, expected, seen);
}

RDP_TEST(unit, perf_seq_names_a_duplicate_and_a_gap_and_goes_on_after_each)
{
	struct perf_seq s = { 0 };
	uint64_t e = 0, n = 0, i;

	for (i = 0; i < 3; i++)
		RDP_ASSERT(arrive(&s, 64, i, &e, &n));
	/* message 2 again: a duplicate, and 3 is still the one expected */
	RDP_ASSERT(!arrive(&s, 64, 2, &e, &n));
	RDP_ASSERT_EQ(e, 3);
	RDP_ASSERT_EQ(n, 2);
	RDP_ASSERT(arrive(&s, 64, 3, &e, &n));
	/* 4 lost: 5 is a gap, and the check follows on from 5 */
	RDP_ASSERT(!arrive(&s, 64, 5, &e, &n));
	RDP_ASSERT_EQ(e, 4);
	RDP_ASSERT_EQ(n, 5);
	RDP_ASSERT(arrive(&s, 64, 6, &e, &n));
	RDP_ASSERT_EQ(s.errors, 2);
	RDP_ASSERT_EQ(s.first_expected, 3);
	RDP_ASSERT_EQ(s.first_seen, 2);
	RDP_ASSERT_EQ(s.next_rx, 7);
	return 0;
}

RDP_TEST(unit, perf_seq_in_a_short_message_keeps_the_low_bytes_across_their_wrap)
{
	/* a 4-byte message has room for 3 bytes of the number */
	struct perf_seq s = { .next_rx = (UINT64_C(1) << 24) - 2 };
	uint64_t e = 0, n = 0;

	RDP_ASSERT(arrive(&s, 4, (UINT64_C(1) << 24) - 2, &e, &n));
	RDP_ASSERT(arrive(&s, 4, (UINT64_C(1) << 24) - 1, &e, &n));
	RDP_ASSERT(arrive(&s, 4, UINT64_C(1) << 24, &e, &n));
	/* the one before the wrap, again: rebuilt as the full number it was */
	RDP_ASSERT(!arrive(&s, 4, (UINT64_C(1) << 24) - 1, &e, &n));
	RDP_ASSERT_EQ(e, UINT64_C(1) << 24 | 1);
	RDP_ASSERT_EQ(n, (UINT64_C(1) << 24) - 1);
	/* a 1-byte message is only its kind: nothing to check, never a violation */
	RDP_ASSERT(arrive(&s, 1, 12345, &e, &n));
	RDP_ASSERT_EQ(s.errors, 1);
	return 0;
}
