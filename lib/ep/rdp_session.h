/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_SESSION_H
#define RDP_SESSION_H

/**
 * @file
 * Sessions: a client connection that reconnects by itself.
 *
 * A session is what rdp_connect() is with a reconnect policy. It holds one
 * endpoint at a time to its peer; when that endpoint fails or the peer
 * closes it, the session connects a new one after a delay that doubles at
 * each failed attempt up to a cap, with random jitter, until it is
 * connected again or the connection has been lost for longer than the
 * loss timeout (NVMe-oF's `reconnect_delay` and `ctrl_loss_tmo`). Every
 * attempt and its outcome is an event for the application.
 *
 * Messages go through the session: while it has no established endpoint,
 * they either wait in a bounded queue, each for at most `queue_tmo_ms`, and
 * go out on the next endpoint in the order they were offered; or, with
 * `queue_max` = 0, they are refused at once (fail fast) and stay the
 * application's. Messages in flight when an endpoint ends come back failed
 * through on_send, as with a plain endpoint: whether they reached the peer
 * is unknown, and resending them (rdp_session_send_burst() takes them back)
 * is the application's call. Every message the session accepts comes back
 * exactly once.
 *
 * CONCURRENCY: a session runs to completion on one poller lcore: its
 * callbacks, its endpoints' callbacks and its timers run there, and
 * rdp_session_msg_alloc(), rdp_session_send_burst(), rdp_session_ep() and
 * rdp_session_waiting() are called there (in a callback, a function given
 * to rdp_session_call(), or a poll hook). rdp_session_open(),
 * rdp_session_close(), rdp_session_call() and rdp_session_state() may be
 * called from any thread.
 *
 * The session's states and their moves are in docs/architecture.md,
 * "Sessions: reconnecting clients".
 */

#include <stdint.h>

#include "rdp_ep.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rdp_session;

/** When to reconnect, and what waits meanwhile. Zero fields take the defaults. */
struct rdp_reconnect_policy {
	uint32_t delay_ms;     /**< wait before the first new attempt (100) */
	uint32_t delay_max_ms; /**< cap of the doubling wait (5000) */
	uint32_t jitter_pct;   /**< each wait is drawn from [w * (100 - j) / 100, w]
				*   (25; at most 100) */
	uint32_t loss_tmo_ms;  /**< give up once not connected for this long; 0: never */
	uint32_t queue_max;    /**< messages that may wait for an endpoint; 0: refuse them */
	uint32_t queue_tmo_ms; /**< a waiting message fails with -ETIMEDOUT after this
				*   (0: it waits until the session gives up) */
};

/** Session states (rdp_session_state()). */
enum rdp_session_state {
	RDP_SESSION_CONNECTING = 0, /**< an attempt's handshake is under way */
	RDP_SESSION_CONNECTED,      /**< its endpoint is established */
	RDP_SESSION_BACKOFF,        /**< waiting before the next attempt */
	RDP_SESSION_GAVE_UP,        /**< lost for longer than loss_tmo_ms: nothing more */
	RDP_SESSION_CLOSING,        /**< rdp_session_close(): its endpoints are closing */
};

/** What a session event reports (struct rdp_session_event.kind). */
enum rdp_session_event_kind {
	RDP_SESSION_EV_ATTEMPT = 0,   /**< attempt `attempt` started on endpoint `ep` */
	RDP_SESSION_EV_CONNECTED,     /**< attempt `attempt` succeeded: `ep` is established */
	RDP_SESSION_EV_ATTEMPT_FAILED,/**< attempt `attempt` failed with `err`; the next in
				       *   `delay_ms` */
	RDP_SESSION_EV_DISCONNECTED,  /**< the established `ep` ended with `err`
				       *   (-ESHUTDOWN: the peer closed it); its messages in
				       *   flight came back failed before this event; the
				       *   next attempt in `delay_ms` */
	RDP_SESSION_EV_GAVE_UP,       /**< not connected for loss_tmo_ms: waiting messages
				       *   failed with -ENOTCONN; `err` the last failure */
	RDP_SESSION_EV_CLOSED,        /**< the last event after rdp_session_close(): the
				       *   session is freed when the callback returns */
};

/** A session event. */
struct rdp_session_event {
	enum rdp_session_event_kind kind;
	uint32_t attempt;  /**< 1 for the first attempt after a connection (or the open) */
	int err;           /**< 0 or a negative errno */
	uint32_t delay_ms; /**< the wait before the next attempt, jitter included */
	struct rdp_ep *ep; /**< the endpoint concerned, or NULL; valid during the callback */
};

/** How a session talks to the application (all on its lcore). */
struct rdp_session_params {
	/**
	 * on_recv and on_send as for an endpoint (rdp_ep_ops); on_state must
	 * be NULL (on_event reports the session's moves). A message the
	 * session itself fails (a wait that ran out, a give-up, a close) comes
	 * to on_send with a NULL endpoint.
	 */
	const struct rdp_ep_ops *ops;
	/** Session events, in order. */
	void (*on_event)(struct rdp_session *s, const struct rdp_session_event *ev, void *arg);
	void *arg;             /**< passed to every callback */
	int lcore;             /**< the poller lcore of the session and its endpoints */
	bool notify_send_ok;   /**< report successful sends too */
	/**
	 * Device name (rdp_device_name()) of every endpoint, or NULL to pick
	 * each as rdp_connect() does (rdp_ep_params.device). Copied at the open.
	 */
	const char *device;
	struct rdp_reconnect_policy policy;
};

/**
 * Open a session: its first attempt starts on its lcore at once.
 *
 * @param hostport
 *   "host:port"; NULL uses the `connect` key.
 * @param prm
 *   Callbacks, lcore and policy (copied).
 * @return
 *   The session, or NULL with rte_errno: EINVAL (no on_recv or on_event,
 *   on_state set, an lcore that does not poll, a jitter above 100, a bad
 *   address), ENODEV (before rdp_init(), or a device the process does not
 *   have: rdp_err_msg() lists those it has), ENOMEM.
 */
struct rdp_session *rdp_session_open(const char *hostport, const struct rdp_session_params *prm);

/**
 * Close a session (any thread, its callbacks included: the close runs in
 * the lcore's next poll): its endpoint is closed as rdp_ep_close()
 * closes one (accepted messages are sent or reported failed, then the peer
 * gets a close notice), messages still waiting fail with -ESHUTDOWN, and
 * RDP_SESSION_EV_CLOSED is the last event. Call it once; the session is
 * invalid after that event.
 *
 * @param s
 *   The session.
 * @return
 *   0, or -ENOBUFS (the lcore's inbox is full: retry).
 */
int rdp_session_close(struct rdp_session *s);

/**
 * Allocate a message for the session's next send (its lcore only), from
 * its endpoint, or from the last one it had while it has none.
 *
 * @param s
 *   The session.
 * @param len
 *   Payload bytes.
 * @return
 *   The message, or NULL with rte_errno as rdp_msg_alloc() sets it.
 */
struct rdp_msg *rdp_session_msg_alloc(struct rdp_session *s, uint32_t len);

/**
 * Send messages on the session's endpoint (its lcore only), or have them
 * wait for the next one. A message may come from any endpoint the session
 * had (one that came back failed is resent this way).
 *
 * @param s
 *   The session.
 * @param msgs
 *   Messages from rdp_session_msg_alloc() (or back from on_send).
 * @param n
 *   How many.
 * @return
 *   How many were accepted, each to come back exactly once. Fewer than
 *   @p n with rte_errno: ENOTCONN (not connected and queue_max is 0, or the
 *   session gave up or is closing), ENOBUFS (the wait queue or the
 *   endpoint's inbox is full), EINVAL (a message the endpoint refuses: see
 *   rdp_ep_send_burst()).
 */
uint16_t rdp_session_send_burst(struct rdp_session *s, struct rdp_msg **msgs, uint16_t n);

/** A function run on a session's lcore by rdp_session_call(). */
typedef void (*rdp_session_call_fn)(struct rdp_session *s, void *arg);

/**
 * Run @p fn on the session's lcore, in order with its events (once the
 * session has started there).
 *
 * @param s
 *   The session, until its CLOSED event.
 * @param fn
 *   The function.
 * @param arg
 *   Its argument.
 * @return
 *   0, -ENOMEM, or -ENOBUFS (inbox full: retry).
 */
int rdp_session_call(struct rdp_session *s, rdp_session_call_fn fn, void *arg);

/** Current state (any thread). */
enum rdp_session_state rdp_session_state(const struct rdp_session *s);

/** The established endpoint, or NULL (its lcore only). */
struct rdp_ep *rdp_session_ep(const struct rdp_session *s);

/** Messages waiting for an endpoint now (its lcore only). */
uint32_t rdp_session_waiting(const struct rdp_session *s);

/** Name of a session state ("CONNECTED", ...). */
const char *rdp_session_state_str(unsigned int state);

/** Name of a session event kind ("ATTEMPT_FAILED", ...). */
const char *rdp_session_event_str(unsigned int kind);

#ifdef __cplusplus
}
#endif

#endif /* RDP_SESSION_H */
