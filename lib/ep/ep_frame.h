/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_EP_FRAME_H
#define RDP_EP_FRAME_H

/*
 * The receive-side framing rules, as pure functions over a small state, so
 * the datapath, the unit tests and the fuzzer run the same code.
 *
 * Immediate data of every SEND (see docs/architecture.md):
 *   bits 0-15 credits returned, 16 pure ack, 17 first chunk, 18 last chunk,
 *   19-31 reserved (zero).
 */

#include <stdbool.h>
#include <stdint.h>

#define IMM_CREDITS 0xffffu          /* credits returned to the peer */
#define IMM_ACK (1u << 16)           /* pure ack: no payload */
#define IMM_FIRST (1u << 17)         /* first chunk of a message */
#define IMM_LAST (1u << 18)          /* last chunk of a message */
#define IMM_RESERVED (~0x7ffffu)     /* must be zero */

/* Reassembly state of one endpoint's receive direction. */
struct ep_frame {
	uint32_t chunk_size; /* agreed bytes per chunk */
	uint32_t max_msg;    /* largest message we accept */
	bool in_msg;         /* a message is being reassembled */
	uint32_t msg_len;    /* its bytes so far */
	uint32_t msg_chunks; /* its chunks so far */
};

/*
 * Check one successful receive completion. @p returnable is how many credits
 * the peer may give back (data WRs we sent minus credits it returned).
 * Returns NULL when it follows the rules, else what is wrong, with the
 * offending value in *value.
 */
static inline const char *
ep_frame_check(const struct ep_frame *f, bool with_imm, uint32_t imm, uint32_t byte_len,
	       uint64_t returnable, uint32_t *value)
{
	*value = imm;
	if (!with_imm)
		return "message without immediate data";
	if (imm & IMM_RESERVED)
		return "reserved immediate-data bits set";
	if ((imm & IMM_CREDITS) > returnable) {
		*value = imm & IMM_CREDITS;
		return "more credits returned than used";
	}
	if (imm & IMM_ACK)
		return byte_len != 0 || (imm & (IMM_FIRST | IMM_LAST)) ?
			"pure ack with payload or framing" : NULL;
	*value = byte_len;
	if (byte_len > f->chunk_size)
		return "chunk longer than the agreed chunk size";
	if ((imm & IMM_FIRST) && f->in_msg)
		return "new message before the last one ended";
	if (!(imm & IMM_FIRST) && !f->in_msg)
		return "continuation chunk without a first one";
	if ((uint64_t)((imm & IMM_FIRST) ? 0 : f->msg_len) + byte_len > f->max_msg)
		return "message longer than max_msg_size";
	return NULL;
}

/*
 * Account a data chunk that passed ep_frame_check(). Returns true when it
 * ends a message (the state is then ready for the next one).
 */
static inline bool
ep_frame_push(struct ep_frame *f, uint32_t imm, uint32_t byte_len)
{
	if (imm & IMM_FIRST) {
		f->in_msg = true;
		f->msg_len = 0;
		f->msg_chunks = 0;
	}
	f->msg_len += byte_len;
	f->msg_chunks++;
	if (imm & IMM_LAST) {
		f->in_msg = false;
		return true;
	}
	return false;
}

#endif /* RDP_EP_FRAME_H */
