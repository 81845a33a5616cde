/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_HELLO_H
#define RDP_HELLO_H

/**
 * @file
 * The handshake wire format, its parser and the compatibility rules.
 *
 * - Three messages on the TCP control socket: the client's HELLO, the
 *   server's HELLO_ACK, the client's READY (sent once its QP is RTS, so the
 *   server never sends to a QP that cannot receive yet). Either side may
 *   answer with REJECT, which carries a reason for the peer's log.
 * - Every message has the same fixed size (RDP_HELLO_LEN bytes), integers
 *   in network byte order, reserved bytes zero.
 * - rdp_hello_decode() checks every field and names the first bad one;
 *   rdp_hello_negotiate() checks that two sides can talk and derives the
 *   connection's values. Both are pure functions: fuzzed directly.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdp_credit.h"
#include "rdp_dev.h"

#ifdef __cplusplus
extern "C" {
#endif

/** "RDPH" */
#define RDP_HELLO_MAGIC 0x52445048u
/** Protocol version spoken by this build. */
#define RDP_HELLO_VERSION 6
/** Bytes of every handshake message. */
#define RDP_HELLO_LEN 208
/** Bytes of a nonce. */
#define RDP_HELLO_NONCE_LEN 16
/** Bytes of a MAC. */
#define RDP_HELLO_MAC_LEN 32
/** Bytes of the driver name field. */
#define RDP_HELLO_DRIVER_LEN 16
/** Bytes of the reject reason field, including its NUL. */
#define RDP_HELLO_REASON_LEN 64
/** Offset of the MAC in an encoded message: the MAC covers the bytes before it. */
#define RDP_HELLO_MAC_OFFSET 112
/** Bytes of a key derived by rdp_hello_key(). */
#define RDP_HELLO_KEY_LEN 32

/** Handshake message types. */
enum rdp_hello_type {
	RDP_HELLO_HELLO = 1,  /**< client -> server: parameters and QP address */
	RDP_HELLO_ACK = 2,    /**< server -> client: the same, server side */
	RDP_HELLO_READY = 3,  /**< client -> server: client QP is RTS */
	RDP_HELLO_REJECT = 4, /**< either way: refused, reason given */
};

/** Flags. */
enum rdp_hello_flags {
	RDP_HELLO_F_AUTH = 1u << 0, /**< sender requires a shared-secret MAC */
	RDP_HELLO_F_LEASE = 1u << 1, /**< sender receives on an SRQ and leases its credits */
};

/** A decoded handshake message. */
struct rdp_hello {
	uint8_t type;                         /**< enum rdp_hello_type */
	uint8_t flags;                        /**< enum rdp_hello_flags */
	uint8_t rd_dest;                      /**< RDMA READs it serves at once (0: none) */
	uint8_t rd_init;                      /**< RDMA READs it may issue at once */
	struct rdp_credit_params credit;      /**< S, T_sig, R, A_rq, T_ack */
	struct rdp_credit_lease lease;        /**< floor and lease_max with RDP_HELLO_F_LEASE,
						   else zero */
	uint32_t buf_size;                    /**< receive buffer bytes */
	uint32_t max_msg_size;                /**< largest message it accepts */
	struct rdp_qp_addr qp;                /**< QP number, PSN, GID, LID, MTU */
	uint8_t link_layer;                   /**< enum rdp_link_layer */
	char driver[RDP_HELLO_DRIVER_LEN];    /**< driver name, NUL-terminated */
	uint8_t nonce[RDP_HELLO_NONCE_LEN];   /**< random, for authentication */
	uint8_t mac[RDP_HELLO_MAC_LEN];       /**< MAC over the nonces, or zero */
	char reason[RDP_HELLO_REASON_LEN];    /**< REJECT only, NUL-terminated */
};

/** What both sides agreed on. */
struct rdp_hello_agreed {
	uint32_t chunk_size;   /**< bytes per SEND: min of both buf_size */
	uint32_t max_msg_size; /**< largest message we may send: min of both limits and
				    of chunk_size * (R - A_rq - T_ack + 1) of the peer,
				    so that a partial message never stops its acks
				    (chunk_size * floor of a leasing peer) */
	bool lease_conn;       /**< a side leases: credits are 15 bits, bit 15 is WANT */
	uint32_t path_mtu;     /**< min of both active MTUs */
	uint8_t rd_depth;      /**< RDMA READs we may have outstanding: min of our
				    rd_init and the peer's rd_dest */
	uint32_t rndv_max;     /**< largest message we may send by rendezvous (the
				    peer READs it): min of both max_msg_size when
				    the peer's rd_init and our rd_dest allow a READ,
				    else 0 */
};

/**
 * Encode a message.
 *
 * @param h
 *   The message.
 * @param buf
 *   RDP_HELLO_LEN bytes.
 */
void rdp_hello_encode(const struct rdp_hello *h, uint8_t buf[RDP_HELLO_LEN]);

/**
 * Set a REJECT's reason, which has RDP_HELLO_REASON_LEN - 1 bytes on the
 * wire. A longer @p why is cut where its last clause in reach ends (before
 * " (", "; ", ", " or ": " outside parentheses) if that keeps three
 * quarters of the room, else after its last whole word, else at the bytes
 * that fit, and ends in RDP_HELLO_REASON_CUT so that the peer reads a
 * whole statement and knows there is more (in this side's log).
 *
 * @param h
 *   The REJECT.
 * @param why
 *   The reason, NUL-terminated.
 */
void rdp_hello_reason_set(struct rdp_hello *h, const char *why);

/** What ends a reason rdp_hello_reason_set() cut. */
#define RDP_HELLO_REASON_CUT " ..."

/**
 * Was a REJECT's reason cut (rdp_hello_reason_set())?
 *
 * @param h
 *   A decoded REJECT.
 * @return
 *   True when its reason ends in RDP_HELLO_REASON_CUT.
 */
bool rdp_hello_reason_is_cut(const struct rdp_hello *h);

/**
 * Decode and check a message from a peer.
 *
 * @param buf
 *   Bytes received.
 * @param len
 *   How many (a short read is refused).
 * @param h
 *   Filled on success.
 * @param why
 *   Receives the first bad field, e.g. "field 'magic' = 0x12345678, expected
 *   0x52445048 (not an rdmaplane peer)".
 * @param why_len
 *   Size of @p why.
 * @return
 *   0, -EPROTO (bad field or length), -EPROTONOSUPPORT (other version).
 */
int rdp_hello_decode(const uint8_t *buf, size_t len, struct rdp_hello *h,
		     char *why, size_t why_len);

/**
 * Check that two sides can talk and derive the connection's values.
 *
 * Rules: same driver and link layer; both credit parameter sets valid and
 * compatible with the leasing terms (rdp_credit_init_lease()); a chunk of
 * at least 64 bytes.
 *
 * @param local
 *   Our message.
 * @param peer
 *   The peer's decoded message.
 * @param agreed
 *   Filled on success.
 * @param why
 *   Receives the rule broken, naming the fields.
 * @param why_len
 *   Size of @p why.
 * @return
 *   0 or -EINVAL.
 */
int rdp_hello_negotiate(const struct rdp_hello *local, const struct rdp_hello *peer,
			struct rdp_hello_agreed *agreed, char *why, size_t why_len);

/**
 * Derive the handshake key from a shared secret (BLAKE2b-256, libsodium).
 *
 * @param secret
 *   The configured secret (non-empty).
 * @param key
 *   Receives RDP_HELLO_KEY_LEN bytes.
 */
void rdp_hello_key(const char *secret, uint8_t key[RDP_HELLO_KEY_LEN]);

/**
 * Authenticate a handshake: HMAC-SHA-256 (libsodium) over a label and the
 * first RDP_HELLO_MAC_OFFSET bytes of both encoded messages, which include
 * both random nonces and every parameter. The server signs its HELLO_ACK
 * with label "rdp-ack"; the client answers with READY signed "rdp-ready".
 * Each side proves it knows the secret and that it saw this very exchange.
 *
 * @param key
 *   From rdp_hello_key().
 * @param label
 *   "rdp-ack" or "rdp-ready".
 * @param client_hello
 *   The client's HELLO as sent.
 * @param server_ack
 *   The server's HELLO_ACK as sent (its MAC bytes are not covered).
 * @param mac
 *   Receives RDP_HELLO_MAC_LEN bytes.
 */
void rdp_hello_auth(const uint8_t key[RDP_HELLO_KEY_LEN], const char *label,
		    const uint8_t client_hello[RDP_HELLO_LEN],
		    const uint8_t server_ack[RDP_HELLO_LEN], uint8_t mac[RDP_HELLO_MAC_LEN]);

/**
 * Compare two MACs in constant time.
 *
 * @return
 *   true when equal.
 */
bool rdp_hello_mac_equal(const uint8_t a[RDP_HELLO_MAC_LEN], const uint8_t b[RDP_HELLO_MAC_LEN]);

#ifdef __cplusplus
}
#endif

#endif /* RDP_HELLO_H */
