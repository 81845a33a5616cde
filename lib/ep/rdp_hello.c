/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Handshake encoding. Offsets are spelled out so the format does not depend
 * on a compiler's struct layout; every field a peer sends is checked.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "rdp_hello.h"
#include "rdp_why.h"

enum {
	OFF_MAGIC = 0,
	OFF_VERSION = 4,
	OFF_TYPE = 6,
	OFF_FLAGS = 7,
	OFF_LENGTH = 8,
	OFF_RD_DEST = 10,
	OFF_RD_INIT = 11,
	OFF_SQ_SIZE = 12,
	OFF_RQ_SIZE = 16,
	OFF_ACK_RESERVE = 20,
	OFF_ACK_THRESHOLD = 24,
	OFF_SIGNAL_INTERVAL = 28,
	OFF_BUF_SIZE = 32,
	OFF_MAX_MSG = 36,
	OFF_QPN = 40,
	OFF_PSN = 44,
	OFF_GID = 48,
	OFF_LID = 64,
	OFF_LINK = 66,
	OFF_RSVD1 = 67,
	OFF_MTU = 68,
	OFF_DRIVER = 72,
	OFF_LEASE_FLOOR = 88,
	OFF_LEASE_MAX = 92,
	OFF_NONCE = 96,
	OFF_MAC = 112,
	OFF_REASON = 144,
	OFF_END = 208,
};

_Static_assert(OFF_END == RDP_HELLO_LEN, "hello layout and length disagree");
_Static_assert(OFF_REASON + RDP_HELLO_REASON_LEN == OFF_END, "reason field size");
_Static_assert(OFF_MAC + RDP_HELLO_MAC_LEN == OFF_REASON, "mac field size");
_Static_assert(OFF_MAC == RDP_HELLO_MAC_OFFSET, "mac offset");
_Static_assert(OFF_NONCE < OFF_MAC, "the MAC must cover the nonce");
_Static_assert(RDP_HELLO_MAC_LEN == crypto_auth_hmacsha256_BYTES, "mac size");
_Static_assert(RDP_HELLO_KEY_LEN == crypto_auth_hmacsha256_KEYBYTES, "key size");

/* Largest sizes a sane peer announces; beyond them the bytes are garbage. */
#define HELLO_MAX_QUEUE (1u << 20)
#define HELLO_MAX_BUF (1u << 24)
#define HELLO_MAX_MSG (1u << 30)

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void
rdp_hello_encode(const struct rdp_hello *h, uint8_t buf[RDP_HELLO_LEN])
{
	memset(buf, 0, RDP_HELLO_LEN);
	put32(buf + OFF_MAGIC, RDP_HELLO_MAGIC);
	put16(buf + OFF_VERSION, RDP_HELLO_VERSION);
	buf[OFF_TYPE] = h->type;
	buf[OFF_FLAGS] = h->flags;
	put16(buf + OFF_LENGTH, RDP_HELLO_LEN);
	if (h->type == RDP_HELLO_HELLO || h->type == RDP_HELLO_ACK) {
		buf[OFF_RD_DEST] = h->rd_dest;
		buf[OFF_RD_INIT] = h->rd_init;
	}
	put32(buf + OFF_SQ_SIZE, h->credit.sq_size);
	put32(buf + OFF_RQ_SIZE, h->credit.rq_size);
	put32(buf + OFF_ACK_RESERVE, h->credit.ack_reserve);
	put32(buf + OFF_ACK_THRESHOLD, h->credit.ack_threshold);
	put32(buf + OFF_SIGNAL_INTERVAL, h->credit.signal_interval);
	put32(buf + OFF_BUF_SIZE, h->buf_size);
	put32(buf + OFF_MAX_MSG, h->max_msg_size);
	put32(buf + OFF_QPN, h->qp.qpn);
	put32(buf + OFF_PSN, h->qp.psn);
	memcpy(buf + OFF_GID, h->qp.gid, RDP_GID_LEN);
	put16(buf + OFF_LID, h->qp.lid);
	buf[OFF_LINK] = h->link_layer;
	put32(buf + OFF_MTU, h->qp.mtu);
	memcpy(buf + OFF_DRIVER, h->driver, strnlen(h->driver, RDP_HELLO_DRIVER_LEN - 1));
	if (h->flags & RDP_HELLO_F_LEASE) {
		put32(buf + OFF_LEASE_FLOOR, h->lease.floor);
		put32(buf + OFF_LEASE_MAX, h->lease.lease_max);
	}
	memcpy(buf + OFF_NONCE, h->nonce, RDP_HELLO_NONCE_LEN);
	memcpy(buf + OFF_MAC, h->mac, RDP_HELLO_MAC_LEN);
	if (h->type == RDP_HELLO_REJECT)
		memcpy(buf + OFF_REASON, h->reason, strnlen(h->reason, RDP_HELLO_REASON_LEN - 1));
}

/* what is kept of a reason that is cut, before RDP_HELLO_REASON_CUT */
#define REASON_CUT_MAX (RDP_HELLO_REASON_LEN - 1 - (sizeof(RDP_HELLO_REASON_CUT) - 1))

void
rdp_hello_reason_set(struct rdp_hello *h, const char *why)
{
	size_t len = strlen(why), clause = 0, word = 0, i;
	int depth = 0;

	if (len < RDP_HELLO_REASON_LEN) {
		memcpy(h->reason, why, len + 1);
		return;
	}
	for (i = 1; i <= REASON_CUT_MAX; i++) {
		/* why[0, i) is a candidate when why[i] starts a separator */
		if (why[i] == ' ') {
			word = i;
			if (depth == 0 && why[i + 1] == '(')
				clause = i;
		} else if (depth == 0 && (why[i] == ';' || why[i] == ',' || why[i] == ':') &&
			   why[i + 1] == ' ') {
			clause = i;
		}
		if (why[i] == '(')
			depth++;
		else if (why[i] == ')' && depth > 0)
			depth--;
	}
	/* a clause that keeps too little gives way to the last word */
	i = clause >= REASON_CUT_MAX * 3 / 4 ? clause : word > 0 ? word : REASON_CUT_MAX;
	memcpy(h->reason, why, i);
	memcpy(h->reason + i, RDP_HELLO_REASON_CUT, sizeof(RDP_HELLO_REASON_CUT));
}

bool
rdp_hello_reason_is_cut(const struct rdp_hello *h)
{
	size_t n = strnlen(h->reason, RDP_HELLO_REASON_LEN), m = sizeof(RDP_HELLO_REASON_CUT) - 1;

	return n >= m && memcmp(h->reason + n - m, RDP_HELLO_REASON_CUT, m) == 0;
}

static bool
all_zero(const uint8_t *p, size_t n)
{
	while (n-- > 0)
		if (*p++ != 0)
			return false;
	return true;
}

/* A NUL-terminated field of allowed characters; empty allowed when may_be_empty. */
static int
check_text(const uint8_t *p, size_t n, const char *field, bool name_chars, bool may_be_empty,
	   char *why, size_t len)
{
	size_t i;

	for (i = 0; i < n && p[i] != '\0'; i++) {
		bool ok = name_chars ? ((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= '0' && p[i] <= '9') ||
					p[i] == '_') : (p[i] >= 0x20 && p[i] < 0x7f);
		if (!ok)
			return rdp_why(why, len, EPROTO, "field '%s' has byte 0x%02x at %zu", field, p[i], i);
	}
	if (i == n)
		return rdp_why(why, len, EPROTO, "field '%s' is not NUL-terminated", field);
	if (i == 0 && !may_be_empty)
		return rdp_why(why, len, EPROTO, "field '%s' is empty", field);
	if (!all_zero(p + i, n - i))
		return rdp_why(why, len, EPROTO, "field '%s' has bytes after its NUL", field);
	return 0;
}

static int
check_range(uint32_t v, const char *field, uint32_t min, uint32_t max, char *why, size_t len)
{
	if (v < min || v > max)
		return rdp_why(why, len, EPROTO, "field '%s' = %u, expected %u..%u", field, v, min, max);
	return 0;
}

static int
decode_params(const uint8_t *buf, struct rdp_hello *h, char *why, size_t len)
{
	static const struct { const char *name; unsigned int off; } sizes[] = {
		{ "sq_size", OFF_SQ_SIZE }, { "rq_size", OFF_RQ_SIZE },
		{ "ack_reserve", OFF_ACK_RESERVE }, { "ack_threshold", OFF_ACK_THRESHOLD },
		{ "signal_interval", OFF_SIGNAL_INTERVAL },
	};
	unsigned int i;
	int ret;

	for (i = 0; i < RTE_DIM(sizes); i++) {
		ret = check_range(get32(buf + sizes[i].off), sizes[i].name, 1, HELLO_MAX_QUEUE,
				  why, len);
		if (ret < 0)
			return ret;
	}
	h->rd_dest = buf[OFF_RD_DEST];
	h->rd_init = buf[OFF_RD_INIT];
	h->credit.sq_size = get32(buf + OFF_SQ_SIZE);
	h->credit.rq_size = get32(buf + OFF_RQ_SIZE);
	h->credit.ack_reserve = get32(buf + OFF_ACK_RESERVE);
	h->credit.ack_threshold = get32(buf + OFF_ACK_THRESHOLD);
	h->credit.signal_interval = get32(buf + OFF_SIGNAL_INTERVAL);
	h->buf_size = get32(buf + OFF_BUF_SIZE);
	if (h->buf_size < 64 || h->buf_size > HELLO_MAX_BUF || h->buf_size % 64 != 0)
		return rdp_why(why, len, EPROTO, "field 'buf_size' = %u, expected a multiple of 64 "
			   "in 64..%u", h->buf_size, HELLO_MAX_BUF);
	h->max_msg_size = get32(buf + OFF_MAX_MSG);
	ret = check_range(h->max_msg_size, "max_msg_size", 1, HELLO_MAX_MSG, why, len);
	if (ret < 0)
		return ret;
	h->qp.qpn = get32(buf + OFF_QPN);
	if (h->qp.qpn > 0xffffff)
		return rdp_why(why, len, EPROTO, "field 'qpn' = %u, expected 24 bits", h->qp.qpn);
	h->qp.psn = get32(buf + OFF_PSN);
	if (h->qp.psn > 0xffffff)
		return rdp_why(why, len, EPROTO, "field 'psn' = %u, expected 24 bits", h->qp.psn);
	memcpy(h->qp.gid, buf + OFF_GID, RDP_GID_LEN);
	h->qp.lid = get16(buf + OFF_LID);
	h->link_layer = buf[OFF_LINK];
	if (h->link_layer > RDP_LINK_INFINIBAND)
		return rdp_why(why, len, EPROTO, "field 'link_layer' = %u, expected 0..%d",
			   h->link_layer, RDP_LINK_INFINIBAND);
	if (buf[OFF_RSVD1] != 0)
		return rdp_why(why, len, EPROTO, "reserved byte at offset %d is not zero", OFF_RSVD1);
	h->qp.mtu = get32(buf + OFF_MTU);
	if (h->qp.mtu < 256 || h->qp.mtu > (1u << 20) || (h->qp.mtu & (h->qp.mtu - 1)) != 0)
		return rdp_why(why, len, EPROTO, "field 'mtu' = %u, expected a power of two in "
			   "256..1048576", h->qp.mtu);
	ret = check_text(buf + OFF_DRIVER, RDP_HELLO_DRIVER_LEN, "driver", true, false, why, len);
	if (ret < 0)
		return ret;
	memcpy(h->driver, buf + OFF_DRIVER, RDP_HELLO_DRIVER_LEN);
	if (!(h->flags & RDP_HELLO_F_LEASE)) {
		if (!all_zero(buf + OFF_LEASE_FLOOR, OFF_NONCE - OFF_LEASE_FLOOR))
			return rdp_why(why, len, EPROTO, "fields 'lease_floor' and 'lease_max' are "
				       "set without the lease flag");
		return 0;
	}
	h->lease.floor = get32(buf + OFF_LEASE_FLOOR);
	h->lease.lease_max = get32(buf + OFF_LEASE_MAX);
	ret = check_range(h->lease.lease_max, "lease_max", 1, RDP_CREDIT_IMM_LEASE_MAX, why, len);
	if (ret == 0)
		ret = check_range(h->lease.floor, "lease_floor", 1, h->lease.lease_max, why, len);
	return ret;
}

int
rdp_hello_decode(const uint8_t *buf, size_t len, struct rdp_hello *h, char *why,
		 size_t why_len)
{
	uint32_t magic;
	uint16_t version;
	int ret;

	memset(h, 0, sizeof(*h));
	if (len < RDP_HELLO_LEN)
		return rdp_why(why, why_len, EPROTO, "truncated handshake: %zu of %d bytes",
			   len, RDP_HELLO_LEN);
	if (len > RDP_HELLO_LEN)
		return rdp_why(why, why_len, EPROTO, "handshake of %zu bytes, expected %d",
			   len, RDP_HELLO_LEN);
	magic = get32(buf + OFF_MAGIC);
	if (magic != RDP_HELLO_MAGIC)
		return rdp_why(why, why_len, EPROTO, "field 'magic' = 0x%08x, expected 0x%08x "
			   "(not an rdmaplane peer)", magic, RDP_HELLO_MAGIC);
	version = get16(buf + OFF_VERSION);
	if (version != RDP_HELLO_VERSION)
		return rdp_why(why, why_len, EPROTONOSUPPORT, "field 'version' = %u, this build "
			   "speaks version %d", version, RDP_HELLO_VERSION);
	h->type = buf[OFF_TYPE];
	if (h->type < RDP_HELLO_HELLO || h->type > RDP_HELLO_REJECT)
		return rdp_why(why, why_len, EPROTO, "field 'type' = %u, expected 1..4", h->type);
	h->flags = buf[OFF_FLAGS];
	if ((h->flags & ~(RDP_HELLO_F_AUTH | RDP_HELLO_F_LEASE)) != 0)
		return rdp_why(why, why_len, EPROTO, "field 'flags' = 0x%02x has unknown bits",
			   h->flags);
	if (get16(buf + OFF_LENGTH) != RDP_HELLO_LEN)
		return rdp_why(why, why_len, EPROTO, "field 'length' = %u, expected %d",
			   get16(buf + OFF_LENGTH), RDP_HELLO_LEN);
	if ((h->type == RDP_HELLO_READY || h->type == RDP_HELLO_REJECT) &&
	    get16(buf + OFF_RD_DEST) != 0)
		return rdp_why(why, why_len, EPROTO, "reserved bytes at offset %d are not zero",
			   OFF_RD_DEST);
	memcpy(h->nonce, buf + OFF_NONCE, RDP_HELLO_NONCE_LEN);
	memcpy(h->mac, buf + OFF_MAC, RDP_HELLO_MAC_LEN);
	if (h->type == RDP_HELLO_REJECT) {
		ret = check_text(buf + OFF_REASON, RDP_HELLO_REASON_LEN, "reason", false, true,
				 why, why_len);
		if (ret == 0)
			memcpy(h->reason, buf + OFF_REASON, RDP_HELLO_REASON_LEN);
		return ret;
	}
	if (!all_zero(buf + OFF_REASON, RDP_HELLO_REASON_LEN))
		return rdp_why(why, why_len, EPROTO, "field 'reason' is set in a message that is not "
			   "a reject");
	if (h->type == RDP_HELLO_READY)
		return 0;
	return decode_params(buf, h, why, why_len);
}

int
rdp_hello_negotiate(const struct rdp_hello *local, const struct rdp_hello *peer,
		    struct rdp_hello_agreed *agreed, char *why, size_t why_len)
{
	struct rdp_credit scratch;
	int ret;

	if (strncmp(local->driver, peer->driver, RDP_HELLO_DRIVER_LEN) != 0)
		return rdp_why(why, why_len, EINVAL, "field 'driver': peer uses '%s', we use '%s'",
			   peer->driver, local->driver);
	if (local->link_layer != peer->link_layer)
		return rdp_why(why, why_len, EINVAL, "field 'link_layer': peer %u, we %u",
			   peer->link_layer, local->link_layer);
	ret = rdp_credit_init_lease(&scratch, &local->credit, &local->lease, &peer->credit,
				    &peer->lease, why, why_len);
	if (ret < 0)
		return ret;
	agreed->lease_conn = local->lease.lease_max != 0 || peer->lease.lease_max != 0;
	agreed->chunk_size = RTE_MIN(local->buf_size, peer->buf_size);
	/*
	 * The peer holds every chunk of a message until its last one arrives.
	 * While it holds k chunks it can return at most C - k credits, and it
	 * acks only from T_ack on: so k may reach C - T_ack at most, and a
	 * message may have C - T_ack + 1 chunks (C = R - A_rq of the peer).
	 */
	agreed->max_msg_size = RTE_MIN(local->max_msg_size, peer->max_msg_size);
	agreed->max_msg_size = RTE_MIN((uint64_t)agreed->max_msg_size,
				       (uint64_t)agreed->chunk_size *
				       (peer->lease.lease_max != 0 ? peer->lease.floor :
					peer->credit.rq_size - peer->credit.ack_reserve -
					peer->credit.ack_threshold + 1));
	agreed->path_mtu = RTE_MIN(local->qp.mtu, peer->qp.mtu);
	agreed->rd_depth = RTE_MIN(local->rd_init, peer->rd_dest);
	agreed->rndv_max = RTE_MIN(peer->rd_init, local->rd_dest) > 0 ?
		RTE_MIN(local->max_msg_size, peer->max_msg_size) : 0;
	return 0;
}

void
rdp_hello_key(const char *secret, uint8_t key[RDP_HELLO_KEY_LEN])
{
	crypto_generichash(key, RDP_HELLO_KEY_LEN, (const unsigned char *)secret,
			   strlen(secret), NULL, 0);
}

void
rdp_hello_auth(const uint8_t key[RDP_HELLO_KEY_LEN], const char *label,
	       const uint8_t client_hello[RDP_HELLO_LEN], const uint8_t server_ack[RDP_HELLO_LEN],
	       uint8_t mac[RDP_HELLO_MAC_LEN])
{
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, key, RDP_HELLO_KEY_LEN);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)label, strlen(label) + 1);
	crypto_auth_hmacsha256_update(&st, client_hello, OFF_MAC);
	crypto_auth_hmacsha256_update(&st, server_ack, OFF_MAC);
	crypto_auth_hmacsha256_final(&st, mac);
}

bool
rdp_hello_mac_equal(const uint8_t a[RDP_HELLO_MAC_LEN], const uint8_t b[RDP_HELLO_MAC_LEN])
{
	return sodium_memcmp(a, b, RDP_HELLO_MAC_LEN) == 0;
}
