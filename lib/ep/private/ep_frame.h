/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_EP_FRAME_H
#define RDP_EP_FRAME_H

/*
 * The receive-side framing rules, as pure functions over a small state, so
 * the datapath, the unit tests and the fuzzer run the same code.
 *
 * Immediate data of every SEND (see docs/architecture.md):
 *   bits 0-15 credits returned, 16 pure ack, 17 first chunk, 18 last chunk,
 *   19-31 the SEND's number on the endpoint (data chunks and pure acks
 *   alike), modulo 2^13.
 * On a connection where a side leases (an SRQ, the hello's lease flag) the
 * credits are bits 0-14 and bit 15 is WANT: the sender of a data SEND or
 * control message would send more than its credits allow, and asks the
 * leasing receiver for a grant.
 */

#include <stdbool.h>
#include <stdint.h>

#define IMM_CREDITS 0xffffu          /* credits returned to the peer */
#define IMM_LEASE_CREDITS 0x7fffu    /* ... where a side leases */
#define IMM_WANT (1u << 15)          /* ... and this asks a leasing receiver for credit */
#define IMM_ACK (1u << 16)           /* pure ack: no payload */
#define IMM_FIRST (1u << 17)         /* first chunk of a message */
#define IMM_LAST (1u << 18)          /* last chunk of a message */
/* a rendezvous control message (a whole message of one chunk): all three */
#define IMM_CTRL (IMM_ACK | IMM_FIRST | IMM_LAST)
#define IMM_SEQ_SHIFT 19             /* the SEND's number, from this bit up */
#define IMM_SEQ_MASK 0x1fffu         /* ... of this many bits */
/* The number field for the SEND numbered @p n. */
#define IMM_SEQ(n) (((uint32_t)(n) & IMM_SEQ_MASK) << IMM_SEQ_SHIFT)

/* Where a received SEND's number stands against the one expected. */
enum ep_seq_verdict {
	EP_SEQ_NEXT = 0, /* the one expected */
	EP_SEQ_AGAIN,    /* one received before: the transport delivered it twice */
	EP_SEQ_GAP,      /* one ahead: SENDs in between were lost */
};

/* Reassembly state of one endpoint's receive direction. */
struct ep_frame {
	uint32_t chunk_size; /* agreed bytes per chunk */
	uint32_t max_msg;    /* largest message we accept */
	bool in_msg;         /* a message is being reassembled */
	uint32_t msg_len;    /* its bytes so far */
	uint32_t msg_chunks; /* its chunks so far */
	uint32_t next_seq;   /* number of the next SEND expected */
	bool lease_conn;     /* a side leases: 15-bit credits and WANT */
	bool leasing;        /* we lease: WANT may come */
};

/* The credits immediate data @p imm returns. */
static inline uint32_t
ep_frame_credits(const struct ep_frame *f, uint32_t imm)
{
	return imm & (f->lease_conn ? IMM_LEASE_CREDITS : IMM_CREDITS);
}

/*
 * Check a received SEND's number (@p imm) and, when it is the one expected,
 * expect the next. RC delivers each SEND once and in order, so anything
 * else is the transport's fault (or a peer's that breaks the protocol): a
 * number of the half of the number space behind the one expected is a
 * SEND received before, one of the half ahead means SENDs were lost. The
 * number spaces of both sides are far wider than a send queue, so a copy
 * of a SEND still in the peer's queue is never taken for a new one.
 */
static inline enum ep_seq_verdict
ep_frame_seq(struct ep_frame *f, uint32_t imm)
{
	uint32_t ahead = ((imm >> IMM_SEQ_SHIFT) - f->next_seq) & IMM_SEQ_MASK;

	if (ahead == 0) {
		f->next_seq++;
		return EP_SEQ_NEXT;
	}
	return ahead > IMM_SEQ_MASK / 2 ? EP_SEQ_AGAIN : EP_SEQ_GAP;
}

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
	if (ep_frame_credits(f, imm) > returnable) {
		*value = ep_frame_credits(f, imm);
		return "more credits returned than used";
	}
	if (f->lease_conn && (imm & IMM_WANT)) {
		if (!f->leasing)
			return "WANT to a receiver that does not lease";
		if ((imm & IMM_ACK) && !(imm & IMM_FIRST))
			return "WANT on a pure ack";
	}
	if (imm & IMM_ACK) {
		if ((imm & IMM_CTRL) == IMM_CTRL) {
			*value = byte_len;
			/* inside a message a FIN alone (ep_rndv_recv() reads the kind) */
			if (byte_len == 0 || byte_len > f->chunk_size)
				return "rendezvous control message of no bytes or over a chunk";
			return NULL;
		}
		return byte_len != 0 || (imm & (IMM_FIRST | IMM_LAST)) ?
			"pure ack with payload or framing" : NULL;
	}
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
