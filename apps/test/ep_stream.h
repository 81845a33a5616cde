/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_TEST_EP_STREAM_H
#define RDP_TEST_EP_STREAM_H

/**
 * @file
 * A checked message stream over endpoints, for the end-to-end tests.
 *
 * Each side sends `count` messages whose size and every byte derive from
 * their sequence number, keeping `window` in flight, and checks that what
 * it receives is exactly the peer's sequence, in order, byte for byte.
 * Run-to-completion sides send from their callbacks on the poller lcore;
 * pipeline sides do everything from an application thread.
 *
 * Threads: one thread handles a side's events and is the only writer of its
 * counters, which it stores with release. Other threads read the side
 * through stream_finished() and stream_ep() (acquire) before they read the
 * rest of it, so the ThreadSanitizer lane can check these streams too.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "rdp_cfg.h"
#include "rdp_ep.h"

/** One side of a stream. */
struct stream_side {
	const char *name;        /**< for messages */
	uint64_t salt;           /**< sizes and bytes of what this side sends */
	uint64_t peer_salt;      /**< ... and of what it receives */
	uint64_t count;          /**< messages to send */
	uint64_t expect;         /**< messages to receive */
	uint32_t max_size;       /**< largest message */
	uint32_t window;         /**< messages in flight */
	bool pipeline;           /**< events through a ring */
	struct rte_ring *events; /**< pipeline ring */
	struct rdp_ep *ep;       /**< set when established */
	uint64_t next_send;      /**< next sequence to send */
	uint64_t done;           /**< sends completed */
	uint64_t failed;         /**< sends reported failed */
	uint64_t received;       /**< messages received and checked */
	uint64_t bytes;          /**< payload bytes received */
	bool established;        /**< ESTABLISHED seen (on the poller, before any retry) */
	bool kick_pending;       /**< run-to-completion: a send_more() is on its way to the poller */
	bool closed;             /**< CLOSED seen */
	int state_err;           /**< error of a FAILED event */
	char error[256];         /**< first check that failed, empty if none */
};

/** Set up side @p s: what it sends and expects, its largest message and window. */
void stream_side_init(struct stream_side *s, const char *name, uint64_t salt,
		      uint64_t peer_salt, uint64_t count, uint32_t max_size, uint32_t window,
		      bool pipeline);

/** Stop sending and pump (pipeline) or wait until @p s sees CLOSED (fails after 10 s). */
void stream_wait_closed(struct stream_side *s);

/** Sizes spread over [1, max]: log-uniform with 1% exactly max. */
uint32_t stream_size(uint64_t salt, uint64_t seq, uint32_t max);

/**
 * Parameters for rdp_connect()/rdp_listen() driving @p s.
 *
 * @param s
 *   The side.
 * @param prm
 *   Filled.
 */
void stream_params(struct stream_side *s, struct rdp_ep_params *prm);

/**
 * Pipeline sides: process events until @p stop returns true (application thread).
 *
 * @param s
 *   Sides to serve.
 * @param n
 *   How many.
 * @param timeout_s
 *   Give up after this long.
 * @return
 *   0 when every side finished, -ETIMEDOUT otherwise.
 */
int stream_pump(struct stream_side **s, unsigned int n, double timeout_s);

/**
 * Start sending (call once the side's endpoint is established; any thread).
 *
 * @param s
 *   The side.
 */
void stream_kick(struct stream_side *s);

/** Print where a side stands and its endpoint's counters (for failures). */
void stream_dump(const struct stream_side *s);

/**
 * True when the side sent, received and checked everything. Any thread: it
 * reads the counters with acquire, so a caller that sees true may then read
 * the whole side (its error text included).
 */
bool stream_finished(const struct stream_side *s);

/** The side's endpoint once it is established, NULL before (any thread). */
struct rdp_ep *stream_ep(const struct stream_side *s);

/** Send nothing more: the side counts as sent once what is in flight completes. */
void stream_stop_sending(struct stream_side *s);

/**
 * A test configuration: small queues, the given driver, rnr_retry 0, every
 * credit relation tight enough to be exercised.
 *
 * @param driver
 *   Driver spec.
 * @param max_msg
 *   max_msg_size.
 * @return
 *   The configuration (the test fails if it is refused).
 */
struct rdp_cfg *stream_cfg(const char *driver, uint32_t max_msg);

/**
 * Apply the overrides of `$RDP_TEST_CFG` ("key=value,key=value") to @p cfg:
 * how a lane tunes the tests' configuration (the test fails on a bad one).
 *
 * @param cfg
 *   The configuration.
 */
void stream_cfg_env(struct rdp_cfg *cfg);

/**
 * A plain TCP connection to 127.0.0.1:@p port, for tests that play a peer
 * by hand (garbage handshakes, hand-built wire frames).
 *
 * @param port
 *   The listener's port.
 * @return
 *   The connected socket (the test fails if it cannot connect).
 */
int stream_raw_connect(int port);

/**
 * A TCP connect to 127.0.0.1:@p port that may fail.
 *
 * @param port
 *   The port.
 * @param fd
 *   The connected socket, or -1.
 * @return
 *   0, or the connect's errno (ECONNREFUSED when nothing listens).
 */
int stream_tcp_connect(int port, int *fd);

/**
 * Listen on 127.0.0.1 (any port) with @p srv, connect to it with @p cli and
 * wait until the client endpoint is established (the test fails if not
 * within 5 s). rdp_init() must have run.
 *
 * @return
 *   The client endpoint.
 */
struct rdp_ep *stream_loopback_connect(const struct rdp_ep_params *srv,
				       const struct rdp_ep_params *cli);

/**
 * An `on_recv` callback that frees every message it is given and accepts
 * them all: for tests whose endpoints must keep receiving but check
 * nothing in what arrives.
 */
uint16_t stream_recv_free_all(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg);

#endif /* RDP_TEST_EP_STREAM_H */
