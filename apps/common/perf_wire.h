/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef PERF_WIRE_H
#define PERF_WIRE_H

/*
 * rdp-perf's messages, and the exactly-once check they carry.
 *
 * Byte 0 is the kind. Bytes 1..8 hold the sender's sequence number on
 * that endpoint, little endian, as many of its low bytes as the message
 * has room for (a 4-byte message carries 3 of them, a 1-byte message
 * none). Every side numbers what it sends on an endpoint from 0, whatever
 * the kind, and checks what it receives: in order, no gap, no duplicate.
 *
 * At the end of every phase the client sends a QUERY on each endpoint and
 * the server answers with how many messages it received on it and what
 * its own check saw, so that a stream's one-way messages (SINK, never
 * answered) are accounted too: the server must have received exactly as
 * many as the client sent.
 */

#include <stdbool.h>
#include <stdint.h>

enum perf_kind {
	PERF_ECHO = 'E',   /* the server sends it back */
	PERF_SINK = 'S',   /* the server keeps it: done when its send is */
	PERF_QUERY = 'Q',  /* end of a phase: the server answers with its counts */
	PERF_ANSWER = 'A', /* the server's counts, PERF_ANSWER_LEN bytes */
	PERF_REGION = 'R', /* write and read modes: the server answers with its region */
	PERF_RDESC = 'D',  /* the server's region: an rdp_rdesc at PERF_ANS_OFF */
};

#define PERF_SEQ_OFF 1u
#define PERF_SEQ_BYTES 8u

/* The answer's fields: little-endian 64-bit words after the sequence. */
enum perf_answer_word {
	PERF_ANS_RECEIVED = 0, /* messages the server received on the endpoint */
	PERF_ANS_ERRORS,       /* sequence violations it saw */
	PERF_ANS_EXPECTED,     /* at the first violation: the number expected */
	PERF_ANS_SEEN,         /* ... and the number seen */
	PERF_ANS_WORDS,
};
#define PERF_ANS_OFF 16u
#define PERF_ANSWER_LEN (PERF_ANS_OFF + 8u * PERF_ANS_WORDS)

/* One direction's check on one endpoint. */
struct perf_seq {
	uint64_t next_tx;        /* number of the next message sent */
	uint64_t next_rx;        /* number expected next */
	uint64_t errors;         /* violations seen */
	uint64_t first_expected; /* the first violation */
	uint64_t first_seen;
};

static inline void
perf_put_u64(uint8_t *p, unsigned int bytes, uint64_t v)
{
	unsigned int i;

	for (i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t
perf_get_u64(const uint8_t *p, unsigned int bytes)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < bytes; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Sequence bytes a message of @p len bytes has room for. */
static inline unsigned int
perf_seq_bytes(uint32_t len)
{
	return len <= PERF_SEQ_OFF ? 0 :
		len - PERF_SEQ_OFF < PERF_SEQ_BYTES ? len - PERF_SEQ_OFF : PERF_SEQ_BYTES;
}

/* Write kind and number into the first @p len bytes of a message. */
static inline void
perf_stamp(uint8_t *data, uint32_t len, enum perf_kind kind, uint64_t seq)
{
	data[0] = (uint8_t)kind;
	perf_put_u64(data + PERF_SEQ_OFF, perf_seq_bytes(len), seq);
}

/*
 * Check a received message's number (its first @p len bytes are readable).
 * Returns true when it is the one expected. Otherwise the violation is
 * counted, *expected and *seen say what it was (seen is rebuilt from the
 * low bytes as the nearest number), and the check goes on after a gap,
 * but not after a duplicate or an old number.
 */
static inline bool
perf_seq_check(struct perf_seq *s, const uint8_t *data, uint32_t len, uint64_t *expected,
	       uint64_t *seen)
{
	unsigned int bytes = perf_seq_bytes(len);
	uint64_t mask = bytes == 8 ? UINT64_MAX : (UINT64_C(1) << (8 * bytes)) - 1;
	uint64_t low = perf_get_u64(data + PERF_SEQ_OFF, bytes);
	uint64_t ahead = (low - s->next_rx) & mask;

	if (ahead == 0) {
		s->next_rx++;
		return true;
	}
	*expected = s->next_rx;
	if (ahead <= mask / 2) {
		*seen = s->next_rx + ahead;
		s->next_rx = *seen + 1;
	} else {
		*seen = s->next_rx - (mask - ahead + 1);
	}
	if (s->errors++ == 0) {
		s->first_expected = *expected;
		s->first_seen = *seen;
	}
	return false;
}

#endif /* PERF_WIRE_H */
