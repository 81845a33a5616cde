/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: receive framing and reassembly (ep_frame.h), the rules
 * every receive completion of an endpoint goes through.
 *
 * Input: chunk size (bits 0-5 of byte 0; bit 6: a side of the connection
 * leases, bit 7: and it is us), max_msg_size (2 bytes), then records of 7
 * bytes: flags (bit 0: with immediate data, bits 1-3: data WRs we post
 * before this completion arrives), the immediate data (4 bytes) and the
 * byte length (2 bytes). As in the datapath, a SEND delivered again (its
 * number behind the one expected) is dropped, and the first violation ends
 * the stream. Properties:
 * - the rules accept exactly what a plain restatement of the wire format
 *   (docs/architecture.md, "Immediate data", rendezvous control messages
 *   and, where a side leases, 15-bit credits and WANT included) accepts,
 *   and the SEND numbers are judged as it judges them;
 * - the peer never returns more credits than we used;
 * - a message in progress and every message delivered stay within
 *   max_msg_size, each chunk within the chunk size, and a message has as
 *   many chunks as completions went into it.
 */
#include <stdbool.h>
#include <string.h>

#include "ep_frame.h"
#include "fuzz.h"

/* The wire format restated, as the documentation words it. */
struct ref {
	uint32_t chunk_size, max_msg;
	bool lease_conn, leasing;
	bool in_msg;
	uint64_t len;
	uint32_t chunks;
};

static bool
ref_accepts(const struct ref *r, bool with_imm, uint32_t imm, uint32_t byte_len,
	    uint64_t returnable)
{
	bool ack = imm >> 16 & 1, first = imm >> 17 & 1, last = imm >> 18 & 1;
	/* where a side leases, bit 15 is WANT: to a leasing receiver only, never on a pure ack */
	bool want = r->lease_conn && (imm >> 15 & 1);

	if (!with_imm || (imm & (r->lease_conn ? 0x7fff : 0xffff)) > returnable)
		return false;
	if (want && (!r->leasing || (ack && !first)))
		return false;
	/* a rendezvous control message: one whole chunk, inside a message too
	 * (that it is a FIN there is the receiver's check of its kind) */
	if (ack && first && last)
		return byte_len >= 1 && byte_len <= r->chunk_size;
	if (ack)
		return byte_len == 0 && !first && !last;
	if (byte_len > r->chunk_size || first == r->in_msg)
		return false;
	return (first ? 0 : r->len) + byte_len <= r->max_msg;
}

/* A SEND's number against the one expected: 0 next, 1 again (dropped), 2 a gap. */
static int
ref_seq(uint32_t next, uint32_t imm)
{
	uint32_t ahead = ((imm >> 19) - next) % 8192;

	return ahead == 0 ? 0 : ahead >= 4096 ? 1 : 2;
}

static inline uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ep_frame f = { 0 };
	struct ref r = { 0 };
	uint64_t posted = 0, granted = 0;
	uint32_t next = 0;
	size_t off;

	if (size < 3)
		return 0;
	f.chunk_size = r.chunk_size = 64u * (1 + data[0] % 64);
	f.lease_conn = r.lease_conn = data[0] >> 6 & 1;
	f.leasing = r.leasing = r.lease_conn && (data[0] >> 7 & 1);
	f.max_msg = r.max_msg = 1 + ((uint32_t)data[1] << 8 | data[2]) * 3;
	for (off = 3; off + 7 <= size; off += 7) {
		const uint8_t *rec = data + off;
		bool with_imm = rec[0] & 1;
		uint32_t imm = get32(rec + 1), len = (uint32_t)rec[5] << 8 | rec[6], value = 0;
		const char *why;
		bool ended, ok;

		posted += rec[0] >> 1 & 7;
		if (with_imm) {
			int want = ref_seq(next, imm);
			enum ep_seq_verdict v = ep_frame_seq(&f, imm);

			FUZZ_ASSERT((int)v == want);
			next += want == 0;
			FUZZ_ASSERT(f.next_seq == next);
			if (v == EP_SEQ_AGAIN)
				continue; /* a copy: dropped, the stream goes on */
			if (v == EP_SEQ_GAP)
				return 0; /* SENDs lost: the endpoint fails */
		}
		ok = ref_accepts(&r, with_imm, imm, len, posted - granted);
		why = ep_frame_check(&f, with_imm, imm, len, posted - granted, &value);
		FUZZ_ASSERT((why == NULL) == ok);
		if (why != NULL)
			return 0; /* the endpoint fails on the first violation */
		granted += ep_frame_credits(&f, imm);
		FUZZ_ASSERT(ep_frame_credits(&f, imm) == (imm & (r.lease_conn ? 0x7fff : 0xffff)));
		FUZZ_ASSERT(granted <= posted);
		if (imm & IMM_ACK)
			continue;
		if (imm & IMM_FIRST) {
			r.in_msg = true;
			r.len = 0;
			r.chunks = 0;
		}
		r.len += len;
		r.chunks++;
		ended = ep_frame_push(&f, imm, len);
		FUZZ_ASSERT(ended == ((imm & IMM_LAST) != 0));
		FUZZ_ASSERT(f.msg_len == r.len && f.msg_chunks == r.chunks);
		FUZZ_ASSERT(f.msg_len <= f.max_msg);
		FUZZ_ASSERT(f.in_msg == !ended);
		if (ended)
			r.in_msg = false;
	}
	return 0;
}
