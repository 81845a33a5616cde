/* SPDX-License-Identifier: BSD-3-Clause */
/* The handshake wire format: every field a peer sends is checked and named. */
#include <errno.h>

#include "rdp_hello.h"
#include "rdp_test.h"

static struct rdp_hello
good_hello(void)
{
	struct rdp_hello h = {
		.type = RDP_HELLO_HELLO,
		.rd_dest = 4,
		.rd_init = 8,
		.credit = { .sq_size = 64, .signal_interval = 8, .rq_size = 64,
			    .ack_reserve = 8, .ack_threshold = 8 },
		.buf_size = 4096,
		.max_msg_size = 65536,
		.qp = { .qpn = 0x1234, .psn = 0x42, .mtu = 4096 },
		.link_layer = RDP_LINK_SHM,
		.driver = "shm",
	};

	h.qp.gid[15] = 7;
	return h;
}

/* Encode, let @p poke damage it, decode: returns the decoder's verdict. */
static int
decode_damaged(void (*poke)(uint8_t *buf), char *why, size_t len)
{
	struct rdp_hello h = good_hello(), out;
	uint8_t buf[RDP_HELLO_LEN];

	rdp_hello_encode(&h, buf);
	poke(buf);
	return rdp_hello_decode(buf, sizeof(buf), &out, why, len);
}

static void poke_magic(uint8_t *b) { b[0] = 0x12; }
static void poke_version(uint8_t *b) { b[5] = 1; }
static void poke_type(uint8_t *b) { b[6] = 9; }
static void poke_flags(uint8_t *b) { b[7] = 0x80; }
static void poke_sq_zero(uint8_t *b) { b[12] = b[13] = b[14] = b[15] = 0; }
static void poke_buf_size(uint8_t *b) { b[35] = 65; }
static void poke_mtu(uint8_t *b) { b[70] = 0x11; }
static void poke_driver(uint8_t *b) { b[72] = 'S'; }
static void poke_driver_unterminated(uint8_t *b) { memset(b + 72, 'a', 16); }
/* a READY carries no read depths: those bytes are reserved there */
static void poke_reserved(uint8_t *b) { b[6] = RDP_HELLO_READY; b[11] = 1; }
static void poke_reason(uint8_t *b) { b[148] = 'x'; }
static void poke_lease_unflagged(uint8_t *b) { b[95] = 4; }
static void poke_lease_max(uint8_t *b) { b[7] |= RDP_HELLO_F_LEASE; b[91] = 1; b[92] = 0x80; }
static void poke_qpn(uint8_t *b) { b[40] = 1; }

RDP_TEST(unit, hello_round_trips_every_field)
{
	struct rdp_hello h = good_hello(), out;
	uint8_t buf[RDP_HELLO_LEN];
	char why[256] = "";

	rdp_hello_encode(&h, buf);
	RDP_ASSERT_EQ(rdp_hello_decode(buf, sizeof(buf), &out, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(out.type, RDP_HELLO_HELLO);
	RDP_ASSERT_EQ(out.rd_dest, 4);
	RDP_ASSERT_EQ(out.rd_init, 8);
	RDP_ASSERT_EQ(out.credit.sq_size, 64);
	RDP_ASSERT_EQ(out.credit.signal_interval, 8);
	RDP_ASSERT_EQ(out.credit.ack_threshold, 8);
	RDP_ASSERT_EQ(out.buf_size, 4096);
	RDP_ASSERT_EQ(out.max_msg_size, 65536);
	RDP_ASSERT_EQ(out.qp.qpn, 0x1234);
	RDP_ASSERT_EQ(out.qp.psn, 0x42);
	RDP_ASSERT_EQ(out.qp.gid[15], 7);
	RDP_ASSERT_EQ(out.qp.mtu, 4096);
	RDP_ASSERT_STR_EQ(out.driver, "shm");
	return 0;
}

RDP_TEST(unit, hello_rejects_each_bad_field_by_name)
{
	static const struct {
		void (*poke)(uint8_t *);
		int err;
		const char *why;
	} cases[] = {
		{ poke_magic, -EPROTO, "field 'magic' = 0x12445048, expected 0x52445048 "
		  "(not an rdmaplane peer)" },
		{ poke_version, -EPROTONOSUPPORT, "field 'version' = 1, this build speaks version 6" },
		{ poke_type, -EPROTO, "field 'type' = 9, expected 1..4" },
		{ poke_flags, -EPROTO, "field 'flags' = 0x80 has unknown bits" },
		{ poke_reserved, -EPROTO, "reserved bytes at offset 10 are not zero" },
		{ poke_sq_zero, -EPROTO, "field 'sq_size' = 0, expected 1..1048576" },
		{ poke_buf_size, -EPROTO, "field 'buf_size' = 4161, expected a multiple of 64 "
		  "in 64..16777216" },
		{ poke_qpn, -EPROTO, "field 'qpn' = 16781876, expected 24 bits" },
		{ poke_mtu, -EPROTO, "field 'mtu' = 4352, expected a power of two in "
		  "256..1048576" },
		{ poke_driver, -EPROTO, "field 'driver' has byte 0x53 at 0" },
		{ poke_driver_unterminated, -EPROTO, "field 'driver' is not NUL-terminated" },
		{ poke_reason, -EPROTO, "field 'reason' is set in a message that is not a reject" },
		{ poke_lease_unflagged, -EPROTO, "fields 'lease_floor' and 'lease_max' are set "
		  "without the lease flag" },
		{ poke_lease_max, -EPROTO, "field 'lease_max' = 2147483648, expected 1..32767" },
	};
	unsigned int i;

	for (i = 0; i < RTE_DIM(cases); i++) {
		char why[256] = "";

		RDP_ASSERT_EQ(decode_damaged(cases[i].poke, why, sizeof(why)), cases[i].err);
		RDP_ASSERT_STR_EQ(why, cases[i].why);
	}
	return 0;
}

RDP_TEST(unit, hello_rejects_truncated_and_oversized_input)
{
	struct rdp_hello h = good_hello(), out;
	uint8_t buf[RDP_HELLO_LEN + 1];
	char why[256];

	rdp_hello_encode(&h, buf);
	RDP_ASSERT_EQ(rdp_hello_decode(buf, 37, &out, why, sizeof(why)), -EPROTO);
	RDP_ASSERT_STR_EQ(why, "truncated handshake: 37 of 208 bytes");
	RDP_ASSERT_EQ(rdp_hello_decode(buf, sizeof(buf), &out, why, sizeof(why)), -EPROTO);
	RDP_ASSERT_STR_EQ(why, "handshake of 209 bytes, expected 208");
	return 0;
}

RDP_TEST(unit, hello_survives_random_garbage)
{
	uint8_t buf[RDP_HELLO_LEN];
	struct rdp_hello out;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned int i, j, rejected = 0;
	char why[256];

	for (i = 0; i < 100000; i++) {
		for (j = 0; j < RDP_HELLO_LEN; j++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			buf[j] = (uint8_t)x;
		}
		if (i & 1) {	/* half of them with a valid header, to reach the fields */
			buf[0] = 0x52; buf[1] = 0x44; buf[2] = 0x50; buf[3] = 0x48;
			buf[4] = 0; buf[5] = 1; buf[6] = 1 + i % 4; buf[7] = 0;
			buf[8] = 0; buf[9] = RDP_HELLO_LEN; buf[10] = buf[11] = 0;
		}
		if (rdp_hello_decode(buf, sizeof(buf), &out, why, sizeof(why)) < 0) {
			rejected++;
			RDP_ASSERT(why[0] != '\0');
		}
	}
	RDP_ASSERT(rejected > 99000);
	return 0;
}

RDP_TEST(unit, hello_negotiation_names_the_incompatibility)
{
	struct rdp_hello a = good_hello(), b = good_hello();
	struct rdp_hello_agreed ag;
	char why[256];

	snprintf(b.driver, sizeof(b.driver), "verbs");
	RDP_ASSERT_EQ(rdp_hello_negotiate(&a, &b, &ag, why, sizeof(why)), -EINVAL);
	RDP_ASSERT_STR_EQ(why, "field 'driver': peer uses 'verbs', we use 'shm'");

	b = good_hello();
	b.credit.ack_reserve = 1;
	RDP_ASSERT_EQ(rdp_hello_negotiate(&a, &b, &ag, why, sizeof(why)), -EINVAL);
	RDP_ASSERT_MSG(strstr(why, "ack_reserve") != NULL, "why: %s", why);

	b = good_hello();
	b.buf_size = 1024;
	b.max_msg_size = 1 << 20;
	b.qp.mtu = 1024;
	RDP_ASSERT_EQ(rdp_hello_negotiate(&a, &b, &ag, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(ag.chunk_size, 1024);
	RDP_ASSERT_EQ(ag.path_mtu, 1024);
	/* the peer holds a whole message in its RQ and keeps acking: 56 credits,
	 * minus the ack threshold of 8, plus one, chunks of 1 KiB */
	RDP_ASSERT_EQ(ag.max_msg_size, 49 * 1024);
	/* and our own limit caps what we send */
	a.max_msg_size = 16384;
	RDP_ASSERT_EQ(rdp_hello_negotiate(&a, &b, &ag, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(ag.max_msg_size, 16384);
	return 0;
}

RDP_TEST(unit, hello_lease_terms_round_trip_and_set_the_peer_credits_and_chunks)
{
	struct rdp_hello a = good_hello(), b = good_hello(), out;
	struct rdp_hello_agreed ag;
	struct rdp_credit c;
	uint8_t buf[RDP_HELLO_LEN];
	char why[256] = "";

	b.flags = RDP_HELLO_F_LEASE;
	b.lease = (struct rdp_credit_lease){ .floor = 3, .lease_max = 40 };
	rdp_hello_encode(&b, buf);
	RDP_ASSERT_EQ(rdp_hello_decode(buf, sizeof(buf), &out, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(out.lease.floor, 3);
	RDP_ASSERT_EQ(out.lease.lease_max, 40);
	RDP_ASSERT_MSG(rdp_hello_negotiate(&a, &out, &ag, why, sizeof(why)) == 0, "%s", why);
	RDP_ASSERT(ag.lease_conn);
	/* a leased receiver is sure of its floor only: 3 chunks of 4 KiB */
	RDP_ASSERT_EQ(ag.max_msg_size, 3 * 4096);
	/* the peer of a leasing side starts at its floor, may hold lease_max */
	RDP_ASSERT_EQ(rdp_credit_init_lease(&c, &a.credit, &a.lease, &out.credit, &out.lease,
					    why, sizeof(why)), 0);
	RDP_ASSERT_EQ(c.rc, 3);
	RDP_ASSERT_EQ(c.rc_max, 40);
	/* its pure acks: T_ack (8) or more, fewer only once we hold none */
	RDP_ASSERT_EQ(c.peer_lease_tack, 8);
	RDP_ASSERT(rdp_credit_lease_ack_ok(&c, 8, 0));
	RDP_ASSERT(!rdp_credit_lease_ack_ok(&c, 7, 0));
	c.rc = 0;
	RDP_ASSERT(rdp_credit_lease_ack_ok(&c, 1, 0));
	/* the credits its descriptors brought for their FINs are not of its lease */
	c.rc = 2;
	RDP_ASSERT(rdp_credit_lease_ack_ok(&c, 1, 2));
	RDP_ASSERT(!rdp_credit_lease_ack_ok(&c, 1, 1));
	c.rc = 3;
	/*
	 * our reserve must hold the leasing side's acks: max(1, floor(W / 8)),
	 * each at least T_ack but one sent alone when we hold none
	 */
	a.credit.ack_reserve = 7;
	a.credit.rq_size = 63;
	RDP_ASSERT_EQ(rdp_hello_negotiate(&a, &out, &ag, why, sizeof(why)), 0);
	out.lease.lease_max = 63; /* 7 */
	RDP_ASSERT_EQ(rdp_hello_negotiate(&a, &out, &ag, why, sizeof(why)), 0);
	out.lease.lease_max = 64;
	RDP_ASSERT_EQ(rdp_hello_negotiate(&a, &out, &ag, why, sizeof(why)), -EINVAL);
	RDP_ASSERT_MSG(strstr(why, "local ack_reserve=7 cannot hold the 8 pure acks the leasing "
			      "peer") != NULL, "%s", why);
	/* towards a leasing side, a window must fit in the 15-bit credit field */
	a = good_hello();
	a.credit.rq_size = 40000;
	a.credit.ack_reserve = 5000;
	a.credit.ack_threshold = 8;
	out = b;
	RDP_ASSERT_EQ(rdp_hello_negotiate(&a, &out, &ag, why, sizeof(why)), -EINVAL);
	RDP_ASSERT_MSG(strstr(why, "rq_size-ack_reserve must be <= 32767") != NULL, "%s", why);
	/*
	 * the leasing side's reserve on its SRQ: floor(W_peer / T_ack_peer) + 1
	 * for a peer that does not lease, max(1, floor(W_peer / T_ack_peer))
	 * for one that does
	 */
	a = good_hello();
	RDP_ASSERT_EQ(rdp_credit_lease_reserve(&a.credit, &a.lease), 56 / 8 + 1);
	RDP_ASSERT_EQ(rdp_credit_lease_reserve(&b.credit, &b.lease), 40 / 8);
	b.lease.lease_max = 8;
	RDP_ASSERT_EQ(rdp_credit_lease_reserve(&b.credit, &b.lease), 1);
	b.lease.lease_max = 4;
	RDP_ASSERT_EQ(rdp_credit_lease_reserve(&b.credit, &b.lease), 1);
	return 0;
}

RDP_TEST(unit, hello_read_depth_is_what_we_issue_capped_by_what_the_peer_serves)
{
	struct rdp_hello local = good_hello(), peer = good_hello();
	struct rdp_hello_agreed ag;
	char why[256] = "";

	local.rd_init = 8;
	peer.rd_dest = 4;
	RDP_ASSERT_EQ(rdp_hello_negotiate(&local, &peer, &ag, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(ag.rd_depth, 4);
	peer.rd_dest = 16;
	RDP_ASSERT_EQ(rdp_hello_negotiate(&local, &peer, &ag, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(ag.rd_depth, 8);
	peer.rd_dest = 0; /* a peer that serves no READ: the endpoint cannot read */
	RDP_ASSERT_EQ(rdp_hello_negotiate(&local, &peer, &ag, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(ag.rd_depth, 0);
	return 0;
}

/*
 * A REJECT's reason has 63 bytes on the wire. A longer one is cut where a
 * clause ends (outside parentheses), or else at a word, and says so with
 * " ...": the peer reads a whole statement, never a sentence cut mid-word.
 */
RDP_TEST(unit, hello_reject_reason_is_cut_at_a_clause_and_says_so)
{
	struct rdp_hello h = { .type = RDP_HELLO_REJECT }, out;
	uint8_t buf[RDP_HELLO_LEN];
	char why[256], fit[RDP_HELLO_REASON_LEN];

	static const struct { const char *why, *sent; } cases[] = {
		{ "shared secret required (config key 'secret')",
		  "shared secret required (config key 'secret')" },
		{ "srq_size=40: 2 credits free, an endpoint needs 3 (srq_floor=2 + a reserve of 1 "
		  "for its peer's pure acks; 12 endpoints hold 36)",
		  "srq_size=40: 2 credits free, an endpoint needs 3 ..." },
		/* a comma inside the parentheses is no clause of the sentence */
		{ "field 'max_msg_size': 1048576 is beyond what we hold (so, chunks, floor and "
		  "buffer size agree on 65536)",
		  "field 'max_msg_size': 1048576 is beyond what we hold ..." },
		/* a clause that ends early keeps too little: the last whole word */
		{ "cannot connect the QP: verbs: ibv_modify_qp(QP 83 INIT -> RTR): Network is "
		  "unreachable",
		  "cannot connect the QP: verbs: ibv_modify_qp(QP 83 INIT -> ..." },
		/* no clause ends in reach: the last whole word */
		{ "every word of this reason is a word and the sentence goes on and on without a "
		  "single comma",
		  "every word of this reason is a word and the sentence goes ..." },
	};
	unsigned int i;

	for (i = 0; i < RTE_DIM(cases); i++) {
		rdp_hello_reason_set(&h, cases[i].why);
		RDP_ASSERT_STR_EQ(h.reason, cases[i].sent);
		RDP_ASSERT(strlen(h.reason) <= RDP_HELLO_REASON_LEN - 1);
		RDP_ASSERT_EQ(rdp_hello_reason_is_cut(&h), strcmp(cases[i].why, cases[i].sent) != 0);
	}

	/* not even a word: the bytes that fit */
	memset(why, 'a', 100);
	why[100] = '\0';
	rdp_hello_reason_set(&h, why);
	RDP_ASSERT_EQ(strlen(h.reason), RDP_HELLO_REASON_LEN - 1);
	RDP_ASSERT_STR_EQ(h.reason + RDP_HELLO_REASON_LEN - 5, " ...");
	RDP_ASSERT(rdp_hello_reason_is_cut(&h));

	/* 63 bytes fit whole, 64 do not */
	memset(fit, 'b', sizeof(fit) - 1);
	fit[sizeof(fit) - 1] = '\0';
	rdp_hello_reason_set(&h, fit);
	RDP_ASSERT_STR_EQ(h.reason, fit);
	snprintf(why, sizeof(why), "%s; x", fit);
	rdp_hello_reason_set(&h, why);
	RDP_ASSERT_STR_EQ(h.reason + RDP_HELLO_REASON_LEN - 5, " ...");

	/* and it travels as it was cut */
	rdp_hello_reason_set(&h, "srq_size=40: 2 credits free, an endpoint needs 3 (srq_floor=2 "
			     "+ a reserve of 1 for its peer's pure acks)");
	rdp_hello_encode(&h, buf);
	RDP_ASSERT_EQ(rdp_hello_decode(buf, sizeof(buf), &out, why, sizeof(why)), 0);
	RDP_ASSERT_STR_EQ(out.reason, "srq_size=40: 2 credits free, an endpoint needs 3 ...");
	return 0;
}
