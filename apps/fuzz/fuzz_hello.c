/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: the handshake parser and negotiation (rdp_hello.h).
 *
 * Input: one or two RDP_HELLO_LEN-byte messages (anything shorter or longer
 * is also fed to the decoder as is). Properties:
 * - the decoder never reads outside the input and always terminates `why`;
 * - a decoded HELLO or HELLO_ACK re-encodes to the very same bytes: every
 *   byte is either checked or carried, none is silently dropped;
 * - any decoded message survives encode + decode unchanged;
 * - when two messages decode, negotiation either refuses with a reason or
 *   yields a chunk of 64 bytes or more and a message size the peer's
 *   credits can hold, and the credit state accepts the same pair.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "rdp_hello.h"

static void
check_why(const char *why, size_t len)
{
	FUZZ_ASSERT(memchr(why, '\0', len) != NULL);
	FUZZ_ASSERT(why[0] != '\0');
}

static bool
same(const struct rdp_hello *a, const struct rdp_hello *b)
{
	return a->type == b->type && a->flags == b->flags && a->rd_dest == b->rd_dest &&
	       a->rd_init == b->rd_init &&
	       memcmp(&a->credit, &b->credit, sizeof(a->credit)) == 0 &&
	       a->buf_size == b->buf_size && a->max_msg_size == b->max_msg_size &&
	       a->qp.qpn == b->qp.qpn && a->qp.psn == b->qp.psn &&
	       memcmp(a->qp.gid, b->qp.gid, RDP_GID_LEN) == 0 && a->qp.lid == b->qp.lid &&
	       a->qp.mtu == b->qp.mtu && a->link_layer == b->link_layer &&
	       strncmp(a->driver, b->driver, RDP_HELLO_DRIVER_LEN) == 0 &&
	       memcmp(a->nonce, b->nonce, RDP_HELLO_NONCE_LEN) == 0 &&
	       memcmp(a->mac, b->mac, RDP_HELLO_MAC_LEN) == 0 &&
	       strncmp(a->reason, b->reason, RDP_HELLO_REASON_LEN) == 0;
}

/* Decode one message and check what decoding promises; returns the verdict. */
static int
decode_checked(const uint8_t *data, size_t size, struct rdp_hello *h)
{
	uint8_t *copy = malloc(size + 1), again[RDP_HELLO_LEN];
	struct rdp_hello back;
	char why[128];
	int ret;

	FUZZ_ASSERT(copy != NULL);
	/* an exact-size heap copy: ASan sees any read beyond the input */
	memcpy(copy, data, size);
	memset(why, 0x55, sizeof(why));
	ret = rdp_hello_decode(copy, size, h, why, sizeof(why));
	FUZZ_ASSERT(ret == 0 || ret == -EPROTO || ret == -EPROTONOSUPPORT);
	if (ret < 0) {
		check_why(why, sizeof(why));
		free(copy);
		return ret;
	}
	FUZZ_ASSERT(size == RDP_HELLO_LEN);
	FUZZ_ASSERT(h->type >= RDP_HELLO_HELLO && h->type <= RDP_HELLO_REJECT);
	rdp_hello_encode(h, again);
	if (h->type == RDP_HELLO_HELLO || h->type == RDP_HELLO_ACK)
		FUZZ_ASSERT(memcmp(again, copy, RDP_HELLO_LEN) == 0);
	FUZZ_ASSERT(rdp_hello_decode(again, sizeof(again), &back, why, sizeof(why)) == 0);
	FUZZ_ASSERT(same(h, &back));
	free(copy);
	return 0;
}

static void
negotiate_checked(const struct rdp_hello *local, const struct rdp_hello *peer)
{
	struct rdp_hello_agreed agreed;
	struct rdp_credit credit;
	char why[256];
	int ret;

	memset(why, 0x55, sizeof(why));
	ret = rdp_hello_negotiate(local, peer, &agreed, why, sizeof(why));
	FUZZ_ASSERT(ret == 0 || ret == -EINVAL);
	if (ret < 0) {
		check_why(why, sizeof(why));
		return;
	}
	FUZZ_ASSERT(agreed.chunk_size >= 64);
	FUZZ_ASSERT(agreed.chunk_size <= local->buf_size && agreed.chunk_size <= peer->buf_size);
	FUZZ_ASSERT(agreed.max_msg_size <= local->max_msg_size);
	FUZZ_ASSERT(agreed.max_msg_size <= peer->max_msg_size);
	FUZZ_ASSERT(peer->credit.rq_size > peer->credit.ack_reserve);
	/* I4: a peer that leases is sure of its floor only; one that does not can
	 * hold C - T_ack + 1 chunks of a message (docs/credit-protocol.md) */
	if (peer->lease.lease_max != 0)
		FUZZ_ASSERT((uint64_t)agreed.max_msg_size <=
			    (uint64_t)agreed.chunk_size * peer->lease.floor);
	else
		FUZZ_ASSERT((uint64_t)agreed.max_msg_size <= (uint64_t)agreed.chunk_size *
			    (peer->credit.rq_size - peer->credit.ack_reserve -
			     peer->credit.ack_threshold + 1));
	FUZZ_ASSERT(agreed.path_mtu <= local->qp.mtu && agreed.path_mtu <= peer->qp.mtu);
	/* what the endpoint then runs: the lease-aware init (plain rdp_credit_init()
	 * refuses a leased peer's windows, which the lease rules allow) */
	FUZZ_ASSERT(rdp_credit_init_lease(&credit, &local->credit, &local->lease, &peer->credit,
					  &peer->lease, why, sizeof(why)) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct rdp_hello ours = {
		.type = RDP_HELLO_HELLO,
		.credit = { .sq_size = 64, .signal_interval = 8, .rq_size = 64,
			    .ack_reserve = 8, .ack_threshold = 8 },
		.buf_size = 4096, .max_msg_size = 65536,
		.qp = { .qpn = 1, .mtu = 4096 },
		.link_layer = RDP_LINK_SHM, .driver = "shm",
	};
	struct rdp_hello a, b;

	if (size == 2 * RDP_HELLO_LEN) {
		/* two messages: each side's parameters come from the input */
		if (decode_checked(data, RDP_HELLO_LEN, &a) == 0 &&
		    decode_checked(data + RDP_HELLO_LEN, RDP_HELLO_LEN, &b) == 0 &&
		    a.type != RDP_HELLO_READY && a.type != RDP_HELLO_REJECT &&
		    b.type != RDP_HELLO_READY && b.type != RDP_HELLO_REJECT) {
			negotiate_checked(&a, &b);
			negotiate_checked(&b, &a);
		}
		return 0;
	}
	if (decode_checked(data, size, &a) == 0 && a.type != RDP_HELLO_READY &&
	    a.type != RDP_HELLO_REJECT) {
		negotiate_checked(&ours, &a);
		negotiate_checked(&a, &ours);
	}
	return 0;
}
