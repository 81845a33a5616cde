/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_EP_H
#define RDP_EP_H

/**
 * @file
 * Endpoints: what a storage backend embeds.
 *
 * - rdp_init() after rte_eal_init(): opens the devices, creates one poller
 *   per configured lcore (one CQ per device, busy-polled), registered buffer
 *   pools on each poller's NUMA node, and the control thread that listens,
 *   connects and runs handshakes. rdp_fini() drains and frees everything.
 * - An endpoint is one RC queue pair to one peer, owned by one poller
 *   lcore. Messages of up to `rndv_threshold` bytes travel as chunks of
 *   `buf_size` bytes and are reassembled in order; longer ones, up to
 *   `max_msg_size`, go by rendezvous (the receiver RDMA READs them into
 *   one contiguous buffer of its lcore's receive arena; docs/architecture.md,
 *   "Rendezvous"); larger ones are refused with EMSGSIZE. Either way
 *   messages are delivered in the order they were sent.
 * - Zero copy: rdp_msg_alloc() takes registered buffers, the application
 *   fills them and hands them to rdp_ep_send_burst(); received messages
 *   point into receive buffers, and rdp_msg_free() is what returns their
 *   credits to the peer.
 * - Two ways to run: run-to-completion (callbacks of struct rdp_ep_ops run
 *   on the poller lcore) or pipeline (events go to an rte_ring the
 *   application dequeues with rdp_event_dequeue_burst(); sends from any
 *   lcore go through the poller's inbox).
 * - Back-pressure, never drops: a message the application does not accept
 *   keeps its receive buffer, so its credit is not returned and the peer
 *   slows down. An accepted message may be held as long as the application
 *   likes, a request until its reply is done for one: the FIN that
 *   completes a reply sent by rendezvous spends a credit its descriptor
 *   brought, not one the held requests keep.
 * - Every message accepted by rdp_ep_send_burst() comes back exactly once:
 *   as RDP_EV_SEND_DONE (when `notify_send_ok` is set; otherwise it is
 *   freed) or as RDP_EV_SEND_FAILED with `status` < 0. Failures come from
 *   error completions, device events, the control socket (peer death) or
 *   a protocol violation by the peer; they move the endpoint to
 *   RDP_EP_FAILED after its queue pair has been drained.
 * - A close is not a failure: rdp_ep_close() drains, then sends the peer a
 *   close notice behind everything it sent. The peer delivers every
 *   message before the notice and then moves to RDP_EP_PEER_CLOSED; a
 *   crash or a lost connection stays RDP_EP_FAILED.
 *
 * CONCURRENCY: rdp_msg_alloc(), rdp_ep_send_burst() and rdp_msg_free() may
 * be called from any lcore or thread (the owner lcore takes a direct path).
 * Callbacks run on the owner lcore and may call them. rdp_connect(),
 * rdp_listen() and rdp_ep_close() are slow-path calls from any thread.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <rte_ring.h>

#include "rdp_common.h"
#include "rdp_mem.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rdp_cfg;
struct rdp_ep;

/** Endpoint states. */
enum rdp_ep_state {
	RDP_EP_CONNECTING = 0, /**< handshake in progress on the control thread */
	RDP_EP_ESTABLISHED,    /**< QP ready to send, owned by its poller */
	RDP_EP_DRAINING,       /**< closing: no new sends; finishing the accepted ones */
	RDP_EP_FAILED,         /**< error seen; QP drained; undelivered sends reported failed */
	RDP_EP_CLOSED,         /**< closed by the application; resources released */
	RDP_EP_PEER_CLOSED,    /**< the peer closed it: every message it sent before
				* its close was delivered first; the QP is drained
				* and sends not delivered are reported failed with
				* -ESHUTDOWN. Not a failure: call rdp_ep_close() */
};

/** Why a message reached the application (rdp_msg.event). */
enum rdp_msg_event {
	RDP_EV_NONE = 0,
	RDP_EV_RECV,        /**< a received message; free it to return its credit */
	RDP_EV_SEND_DONE,   /**< a sent message reached the peer's receive queue */
	RDP_EV_SEND_FAILED, /**< a sent message was not delivered; `status` < 0 says why */
	RDP_EV_STATE,       /**< the endpoint changed state: `user_data` is the new
			     * enum rdp_ep_state, `status` its errno (0 or < 0);
			     * free it with rdp_msg_free(): `ep` stays valid until
			     * the CLOSED event is freed */
	RDP_EV_RDMA_DONE,   /**< a one-sided operation completed (rdp_rdma.h):
			     * `user_data` is the operation's; free it */
	RDP_EV_RDMA_FAILED, /**< a one-sided operation failed: `status` < 0 says why
			     * (-EACCES: the peer refused the access; -ECONNABORTED:
			     * flushed with its endpoint; -ETIMEDOUT: the transport
			     * gave up); free it */
};

/** Run-to-completion callbacks (all on the endpoint's poller lcore). */
struct rdp_ep_ops {
	/**
	 * Received messages, in order. Return how many are accepted: the rest
	 * are offered again later (back-pressure). Accepted messages belong to
	 * the application until rdp_msg_free().
	 */
	uint16_t (*on_recv)(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg);
	/**
	 * Send events (RDP_EV_SEND_DONE / RDP_EV_SEND_FAILED) and one-sided
	 * completions (RDP_EV_RDMA_DONE / RDP_EV_RDMA_FAILED), in the order the
	 * messages and operations were queued. The messages belong to the
	 * application again: free or resend them; free the operations' events.
	 */
	void (*on_send)(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg);
	/** State changes. @p err is 0 or a negative errno. */
	void (*on_state)(struct rdp_ep *ep, enum rdp_ep_state state, int err, void *arg);
};

/** How an endpoint talks to the application. */
struct rdp_ep_params {
	const struct rdp_ep_ops *ops; /**< run-to-completion, or NULL for pipeline */
	void *arg;                    /**< passed to the callbacks */
	struct rte_ring *events;      /**< pipeline: events go here (multi-producer) */
	int lcore;                    /**< poller lcore, or -1 for round robin */
	bool notify_send_ok;          /**< report successful sends too */
	/**
	 * Device name (rdp_device_name()), or NULL: the device whose interface
	 * holds the local address of the route to the peer (of the connection,
	 * for a listener's endpoints) when the process has several, else the
	 * lcore's (its section's `device`). Read by rdp_connect() and
	 * rdp_listen() only.
	 */
	const char *device;
};

/** Per-endpoint counters (telemetry and tests). */
struct rdp_ep_stats {
	uint64_t msgs_sent;       /**< messages fully completed */
	uint64_t msgs_failed;     /**< messages reported failed */
	uint64_t msgs_received;   /**< messages delivered to the application */
	uint64_t bytes_sent;      /**< payload bytes of msgs_sent */
	uint64_t bytes_received;  /**< payload bytes of msgs_received */
	uint64_t backpressure;    /**< deliveries the application refused for now */
	uint64_t enomem;          /**< post_send refusals: must stay 0 */
	uint64_t rnr;             /**< RNR errors: must stay 0 */
	uint64_t dups_dropped;    /**< SENDs the transport delivered twice, dropped (see
				   *   docs/architecture.md, "Immediate data") */
	uint64_t rdma_done;       /**< one-sided operations completed */
	uint64_t rdma_failed;     /**< one-sided operations reported failed */
	uint64_t rdma_bytes;      /**< bytes of rdma_done */
	uint32_t sq_inflight;     /**< WRs outstanding */
	uint32_t remote_credits;  /**< data WRs the peer can still take */
	uint32_t owed;            /**< credits we owe the peer */
	uint32_t recv_posted;     /**< receive entries posted */
	uint64_t acks;            /**< pure acks sent */
	uint64_t reclaims;        /**< reclaims sent */
	uint64_t sq_stalls;       /**< waits for SQ credit */
	uint64_t remote_stalls;   /**< waits for remote credit */
};

/**
 * Start rdmaplane (after rte_eal_init()).
 *
 * @param cfg
 *   Loaded and validated configuration (see rdp_cfg.h). Its `[lcore.N]`
 *   sections name the poller lcores; without any, every worker lcore polls
 *   with the `[global]` values.
 * @return
 *   0, or a negative errno with a detail in rdp_err_msg(): -EALREADY,
 *   -EBUSY (an earlier rdp_fini() returned -EBUSY), -EINVAL (no worker
 *   lcore, bad lcore), -ENODEV (no driver), or the device's errno.
 */
int rdp_init(const struct rdp_cfg *cfg);

/**
 * Stop rdmaplane: close every endpoint (draining what can be sent and
 * reporting the rest failed), stop the pollers, free everything. It waits
 * up to the largest `drain_timeout_ms` plus 5 s for the endpoints to go.
 *
 * rdp_fini() closes the listeners first, but nobody serves the pipeline
 * rings while it waits. An application that streams into them should close
 * its listeners (rdp_listen_close()), close its endpoints and serve its
 * rings until rdp_endpoint_count() is 0, then call rdp_fini(): otherwise a
 * peer admitted at the last moment can leave received messages in a ring,
 * held, and rdp_fini() fails.
 *
 * @return
 *   0, or -EBUSY when messages are still held by the application (they are
 *   leaked, and counted in the log); a pipeline CLOSED event not yet freed
 *   is one. Events left in a ring of an endpoint rdp_fini() closed name a
 *   released endpoint: only free them.
 */
int rdp_fini(void);

/**
 * The driver in use and why it was chosen (one line).
 *
 * @return
 *   The driver's name first, then its device and why it was chosen, e.g.
 *   "shm on shm0 (no RDMA device with an active port)"; with several
 *   devices one such part each, separated by "; ". Empty before rdp_init().
 */
const char *rdp_driver_info(void);

/**
 * The devices the process uses (docs/configuration.md, "Several devices"):
 * every poller polls one CQ on each.
 *
 * @return
 *   How many (0 before rdp_init()).
 */
unsigned int rdp_device_count(void);

/**
 * A device's name, as rdp_ep_params.device takes it.
 *
 * @param idx
 *   Below rdp_device_count(); 0 is [global]'s first device.
 * @return
 *   The name ("rxe0", "shm0"), or NULL for an index past the last.
 */
const char *rdp_device_name(unsigned int idx);

/**
 * The device an endpoint uses (chosen when it was made, see
 * rdp_ep_params.device).
 *
 * @param ep
 *   The endpoint.
 * @return
 *   Its device's name.
 */
const char *rdp_ep_device(const struct rdp_ep *ep);

/**
 * Accept endpoints on a TCP address.
 *
 * @param hostport
 *   "host:port"; NULL uses the `listen` key of the configuration.
 * @param prm
 *   How accepted endpoints talk to the application; they are announced by
 *   on_state(RDP_EP_ESTABLISHED) or an RDP_EV_STATE event.
 * @return
 *   The bound port (> 0), or a negative errno (-EINVAL address, -EADDRINUSE...).
 */
int rdp_listen(const char *hostport, const struct rdp_ep_params *prm);

/**
 * Stop accepting on a port: close every listener rdp_listen() bound to it.
 *
 * New connections to the port are refused by the kernel from the return
 * on, and the port can be listened on again. Endpoints already accepted,
 * established or still in their handshake, are not affected. Slow path,
 * from any thread but a poller lcore's (it waits for the control thread).
 *
 * @param port
 *   A port rdp_listen() returned.
 * @return
 *   0, or a negative errno: -ENOENT (no listener on the port), -EINVAL
 *   (not a port), -EDEADLK (called on a poller lcore), -ENODEV (before
 *   rdp_init()).
 */
int rdp_listen_close(int port);

/**
 * Connect to a peer (asynchronous).
 *
 * @param hostport
 *   "host:port"; NULL uses the `connect` key.
 * @param prm
 *   How the endpoint talks to the application.
 * @return
 *   The endpoint in RDP_EP_CONNECTING; it reports RDP_EP_ESTABLISHED or
 *   RDP_EP_FAILED (ETIMEDOUT, ECONNREFUSED, EPROTO...) later. NULL with
 *   rte_errno when it cannot even start (EINVAL address, ENOMEM).
 */
struct rdp_ep *rdp_connect(const char *hostport, const struct rdp_ep_params *prm);

/**
 * Wait until an endpoint leaves RDP_EP_CONNECTING (convenience for
 * applications and tests; polls the state, never the CQ).
 *
 * @param ep
 *   The endpoint.
 * @param timeout_ms
 *   Longest wait.
 * @return
 *   0 once established, the endpoint's error when it failed, or -ETIMEDOUT.
 */
int rdp_ep_wait_established(struct rdp_ep *ep, unsigned int timeout_ms);

/**
 * Close an endpoint: no new sends; accepted messages are sent or reported
 * failed; then a close notice goes to the peer behind them, and the QP is
 * released once the notice's completion says it arrived. The peer
 * delivers every message sent before the notice, then moves to
 * RDP_EP_PEER_CLOSED (or, if it is closing too, reports what it had not
 * sent yet failed with -ESHUTDOWN and reaches RDP_EP_CLOSED). Call it once
 * for every endpoint the application was given; the pointer is invalid
 * afterwards. Messages that arrive after the close are not delivered;
 * while accepted ones are left to send, their buffers still return
 * credits to the peer, so that two endpoints closed at once both finish
 * their drains. A drain that has not ended
 * after `drain_timeout_ms` (the peer gives no credit) gives up: the rest is
 * reported failed with -ETIMEDOUT, the peer sees its endpoint fail, and
 * the endpoint reaches RDP_EP_CLOSED.
 *
 * @param ep
 *   The endpoint.
 * @return
 *   0.
 */
int rdp_ep_close(struct rdp_ep *ep);

/**
 * Allocate a message for an endpoint from its poller's send pool.
 *
 * @param ep
 *   The endpoint.
 * @param len
 *   Payload bytes.
 * @return
 *   The message (segments of chunk size, `pkt_len` = @p len; above
 *   `rndv_threshold`, one contiguous segment of the send arena), or NULL
 *   with rte_errno: EMSGSIZE (larger than the endpoint's max message size),
 *   ENOBUFS (pool or arena empty, or other endpoints were refused
 *   the arena first and wait for it: retry later). The send pool and the
 *   send arena are the poller's, shared by all its endpoints; the arena's
 *   room goes to them in the order they were refused (an endpoint that
 *   does not retry within two passes of its poller once its room is free
 *   loses its place). An
 *   endpoint with nothing in flight gets no completion to retry from, so
 *   retry from the lcore's poll hook (rdp_poll_hook_set()) or the
 *   application's own loop, and take turns between endpoints, as rdp-perf
 *   does.
 */
struct rdp_msg *rdp_msg_alloc(struct rdp_ep *ep, uint32_t len);

/**
 * Allocate @p n messages of @p len bytes each, all or none: the burst form
 * of rdp_msg_alloc(), as rte_pktmbuf_alloc_bulk() is of rte_pktmbuf_alloc().
 * On the endpoint's poller lcore, messages of one segment come from the
 * poller's private cache of the send pool without any atomic operation.
 *
 * @param ep
 *   The endpoint.
 * @param msgs
 *   Receives @p n messages.
 * @param n
 *   How many.
 * @param len
 *   Payload bytes of each.
 * @return
 *   0, or with nothing allocated (and rte_errno set to the same value):
 *   -EMSGSIZE (larger than the endpoint's max message size), -ENOBUFS
 *   (pool empty: retry after completions).
 */
int rdp_msg_alloc_bulk(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, uint32_t len);

/**
 * Hand messages over for sending, in order.
 *
 * On the endpoint's poller lcore (in a callback, or in a function given to
 * rdp_ep_call()), when nothing is queued for the endpoint, the messages are
 * posted before the call returns, as far as credits allow; the rest, and
 * the calls of other threads, go out in the poller's next pass. A reply
 * sent from on_recv thus leaves before the poll ends.
 *
 * @param ep
 *   The endpoint.
 * @param msgs
 *   Messages from rdp_msg_alloc() for this endpoint.
 * @param n
 *   How many.
 * @return
 *   How many were accepted (each will come back exactly once as a send
 *   event or be freed). Fewer than @p n with rte_errno: ENOTCONN (not
 *   established), ENOBUFS (inbox full: retry), EINVAL (a message of another
 *   endpoint or larger than allowed).
 */
uint16_t rdp_ep_send_burst(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n);

/**
 * Free a message: a received one returns its receive credit to the peer; a
 * state event is released (a CLOSED one releases its endpoint too); any
 * other goes back to its pool.
 *
 * @param m
 *   The message (first segment), or NULL.
 */
void rdp_msg_free(struct rdp_msg *m);

/**
 * Free @p n messages, as rdp_msg_free() does each; runs of sent messages
 * of one segment go back to their pool in one operation.
 *
 * @param msgs
 *   The messages (NULL entries are skipped).
 * @param n
 *   How many.
 */
void rdp_msg_free_bulk(struct rdp_msg **msgs, uint16_t n);

/** A function run on an endpoint's poller lcore by rdp_ep_call(). */
typedef void (*rdp_ep_call_fn)(struct rdp_ep *ep, void *arg);

/**
 * Run a function on the endpoint's poller lcore, in order with its events.
 *
 * Run-to-completion applications use it to start work where their
 * callbacks run, so that their per-endpoint state has a single writer.
 * Called from the poller lcore itself, @p fn runs at once.
 *
 * @param ep
 *   The endpoint (any state until it is closed).
 * @param fn
 *   The function.
 * @param arg
 *   Its argument.
 * @return
 *   0, -ENOMEM, or -ENOBUFS (inbox full: retry).
 */
int rdp_ep_call(struct rdp_ep *ep, rdp_ep_call_fn fn, void *arg);

/**
 * Run @p fn(@p arg) on a poller lcore once per poll, after its completions,
 * inbox and busy endpoints: for a run-to-completion application that
 * completes work of its own on that lcore (an io_uring it submits to and
 * reaps without waiting, as rdp-blk does). The hook may do what a callback
 * does: allocate, send and free messages of that lcore's endpoints, call
 * rdp_ep_close(); it must not wait. One hook per lcore; it stays until
 * rdp_fini().
 *
 * @param lcore
 *   A poller lcore of rdp_init().
 * @param fn
 *   The hook.
 * @param arg
 *   Its argument.
 * @return
 *   0, -ENODEV (not a poller lcore), -EBUSY (a hook is already set), or
 *   -EINVAL (@p fn NULL).
 */
int rdp_poll_hook_set(unsigned int lcore, rdp_poll_hook_fn fn, void *arg);

/**
 * Pipeline mode: take events from a ring.
 *
 * @param r
 *   The ring given in rdp_ep_params.events.
 * @param ev
 *   Receives messages whose `event` says what happened.
 * @param n
 *   Room in @p ev.
 * @return
 *   Events taken.
 */
static inline uint16_t
rdp_event_dequeue_burst(struct rte_ring *r, struct rdp_msg **ev, uint16_t n)
{
	uint16_t k = (uint16_t)rte_ring_dequeue_burst(r, (void **)ev, n, NULL);

	if (k > 0)
		RDP_HANDOFF_ACQUIRE(r);
	return k;
}

/** Current state (any thread). */
enum rdp_ep_state rdp_ep_state(const struct rdp_ep *ep);

/** The errno that failed the endpoint, -ESHUTDOWN once the peer closed it, 0 if neither. */
int rdp_ep_error(const struct rdp_ep *ep);

/** Endpoint id, unique in the process (telemetry `/rdp/endpoint,<id>`). */
uint32_t rdp_ep_id(const struct rdp_ep *ep);

/** The peer as "host:port". */
const char *rdp_ep_peer(const struct rdp_ep *ep);

/** The poller lcore owning the endpoint. */
unsigned int rdp_ep_lcore(const struct rdp_ep *ep);

/**
 * Largest message rdp_msg_alloc() accepts: once established, the larger of
 * what goes in chunks and what goes by rendezvous, as agreed with the peer;
 * before, the configuration's max_msg_size.
 */
uint32_t rdp_ep_max_msg_size(const struct rdp_ep *ep);

/** Application context pointer. */
void rdp_ep_set_ctx(struct rdp_ep *ep, void *ctx);
/** Application context pointer. */
void *rdp_ep_get_ctx(const struct rdp_ep *ep);

/**
 * Read an endpoint's counters (racy snapshot from any thread).
 *
 * @param ep
 *   The endpoint.
 * @param stats
 *   Filled.
 */
void rdp_ep_stats_get(const struct rdp_ep *ep, struct rdp_ep_stats *stats);

/**
 * Endpoints alive in the process (any state, including those in a
 * handshake and those waiting for their received messages to be freed).
 *
 * @return
 *   Count.
 */
unsigned int rdp_endpoint_count(void);

/** What the listeners' handshakes came to (docs/architecture.md, "Fair handshakes"). */
struct rdp_hs_stats {
	uint64_t accepted;          /**< connections the listeners accepted */
	uint64_t hello_timeouts;    /**< closed: no whole HELLO within hello_timeout_ms */
	uint64_t refused_per_peer;  /**< refused at accept: their address had
				     *   handshakes_per_peer connections stalled before
				     *   their HELLO */
	uint64_t waited_for_slot;   /**< had their HELLO, then waited for a slot
				     *   (max_handshakes or handshakes_per_peer) */
	uint64_t rejected;          /**< refused with a REJECT: a bad or incompatible
				     *   HELLO field, or authentication (by field:
				     *   rdp_hs_rejects_get()) */
	uint64_t auth_failures;     /**< handshakes of either side that failed on the
				     *   shared secret (missing, or another one) */
	uint32_t in_progress;       /**< now: handshakes holding a slot */
	uint32_t waiting;           /**< now: accepted, holding no slot (before or
				     *   after their HELLO) */
	uint32_t waiting_max;       /**< the most that may wait: the lcores'
				     *   max_endpoints, summed */
};

/**
 * The listeners' handshake counters, cumulative since rdp_init(). Also in
 * telemetry, `/rdp/handshakes`. Each field is read whole; together they are
 * a racy snapshot.
 *
 * @param st
 *   Filled.
 * @return
 *   0, or -EINVAL for a NULL @p st.
 */
int rdp_hs_stats_get(struct rdp_hs_stats *st);

/** Distinct fields rdp_hs_rejects_get() tells apart; later ones count as "other". */
#define RDP_HS_REJECT_FIELDS 32

/** How often the listeners refused a HELLO for one field (rdp_hs_rejects_get()). */
struct rdp_hs_reject {
	char field[24];   /**< the HELLO field named by the refusal ("version",
			   *   "driver", "secret" for authentication, "other") */
	uint64_t count;   /**< handshakes refused for it since rdp_init() */
};

/**
 * The listeners' refusals by HELLO field, cumulative since rdp_init(), in
 * the order the fields were first refused (also in telemetry,
 * `/rdp/handshakes`, as `rejected_by_field`). Their counts add up to
 * rdp_hs_stats.rejected.
 *
 * @param r
 *   Filled with up to @p max entries.
 * @param max
 *   Room in @p r.
 * @return
 *   The number of entries filled, or -EINVAL for a NULL @p r with @p max > 0.
 */
int rdp_hs_rejects_get(struct rdp_hs_reject *r, unsigned int max);

/**
 * Print every endpoint alive in the process, one line each, with what its
 * release waits for: its state, the teardown's progress (drain marker
 * posted and completed, receives still posted), the received messages the
 * application holds, the references left and the control thread's
 * handshake step. For a program that finds rdp_endpoint_count() stuck
 * above 0 after closing everything.
 *
 * The fields are read without stopping the pollers: a racy snapshot, each
 * field whole, not consistent with one another.
 *
 * @param f
 *   Where to print.
 * @return
 *   The number of endpoints printed.
 */
unsigned int rdp_endpoints_dump(FILE *f);

/** A poller's shared receive queue (srq = on), as rdp_lcore_srq_stats_get() reads it. */
struct rdp_srq_stats {
	uint32_t size;        /**< buffers of the SRQ, all its credits (srq_size) */
	uint32_t posted;      /**< receives posted on it now */
	uint32_t free;        /**< credits in the pool, lent to no endpoint */
	uint32_t leased;      /**< credits leased to endpoints (floors included) */
	uint32_t reserved;    /**< credits kept for the peers' pure acks */
	uint32_t fin_reserve; /**< credits kept for the FINs of rendezvous descriptors */
	uint32_t fin_free;    /**< of those, credits no descriptor took */
	uint32_t members;     /**< endpoints leasing */
	uint32_t floor;       /**< srq_floor */
	uint32_t lease_max;   /**< srq_lease_max */
	uint64_t grants;      /**< grants given to wanting endpoints */
	uint64_t diverted;    /**< freed credits sent to the pool instead of their endpoint */
	uint64_t given_back;  /**< credits peers gave back */
	uint64_t refused;     /**< endpoints refused: floor and reserve not free */
	uint64_t strays;      /**< receives of a QP gone, posted again undelivered */
	uint64_t fin_waits;   /**< times an endpoint's descriptor waited for a FIN credit */
};

/**
 * Read the counters of a poller lcore's shared receive queue on its
 * default device (a snapshot from any thread; the lease fields are
 * consistent with one another). With several devices, each has its own
 * SRQ on the poller; telemetry's /rdp/lcores shows them all.
 *
 * @param lcore
 *   A poller lcore.
 * @param stats
 *   Filled.
 * @return
 *   0; -ENODEV when @p lcore polls nothing (or before rdp_init()); -ENOTSUP
 *   when its `srq` is off.
 */
int rdp_lcore_srq_stats_get(unsigned int lcore, struct rdp_srq_stats *stats);

/**
 * Read the counters of the shared receive queue a poller lcore has on one
 * of the process's devices (each device has its own SRQ on each poller),
 * as rdp_lcore_srq_stats_get() does for the default device.
 *
 * @param lcore
 *   A poller lcore.
 * @param device
 *   A device name (rdp_device_name()), or NULL for the lcore's default
 *   device.
 * @param stats
 *   Filled.
 * @return
 *   0; -ENODEV when @p lcore polls nothing (or before rdp_init()), or when
 *   the process has no device named @p device (rdp_err_msg() names those it
 *   has); -ENOTSUP when the lcore's `srq` is off.
 */
int rdp_lcore_device_srq_stats_get(unsigned int lcore, const char *device,
				   struct rdp_srq_stats *stats);

/**
 * How the endpoints of a poller lcore ended, counted since rdp_init()
 * (cumulative: an endpoint that is gone still counts). An endpoint counts
 * once in `opened` when it reaches RDP_EP_ESTABLISHED, and once in one of
 * `closed`, `peer_closed` or `failed` when it retires; `failed` is the sum
 * of the `failed_*` reasons.
 */
struct rdp_ep_counters {
	uint64_t opened;            /**< reached ESTABLISHED */
	uint64_t closed;            /**< closed by the application (rdp_fini() included) */
	uint64_t peer_closed;       /**< ended by the peer's close notice (PEER_CLOSED) */
	uint64_t failed;            /**< ended FAILED after ESTABLISHED */
	uint64_t failed_peer_gone;  /**< ... the control connection closed (-ECONNRESET) */
	uint64_t failed_flushed;    /**< ... the QP went to error under it (-ECONNABORTED) */
	uint64_t failed_retry_exceeded; /**< ... the transport gave up (-ETIMEDOUT) */
	uint64_t failed_rnr;        /**< ... an RNR retry exceeded (-ENOBUFS): must stay 0 */
	uint64_t failed_remote_access; /**< ... a one-sided access the peer refused (-EACCES) */
	uint64_t failed_remote_error;  /**< ... the peer's NAK (-EREMOTEIO) */
	uint64_t failed_device;     /**< ... a device event or other completion error (-EIO) */
	uint64_t failed_link_down;  /**< ... the port went down (-ENETDOWN) */
	uint64_t failed_protocol;   /**< ... the peer broke the protocol (-EPROTO) */
	uint64_t failed_other;      /**< ... any other errno (a refused post: -ENOMEM) */
	uint64_t drain_timeouts;    /**< closes whose drain passed drain_timeout_ms (in `closed`) */
	uint64_t handshake_failed;  /**< handed to the poller but ended before ESTABLISHED
				     *   (its handshake failed, or it was closed during it) */
	uint64_t reconnect_attempts; /**< sessions' attempts after their first (rdp_session.h) */
	uint64_t reconnects;        /**< ... that connected again after a lost connection */
	uint64_t sessions_gave_up;  /**< sessions not connected within their loss_tmo_ms */
	uint64_t enomem;            /**< post_send refusals of every endpoint: must stay 0 */
	uint64_t rnr;               /**< RNR errors of every endpoint: must stay 0 */
};

/**
 * Read the endpoint counters of one poller lcore, or of the whole process
 * (any thread; each counter is exact, the set a snapshot). `enomem` and
 * `rnr` include the endpoints still running.
 *
 * @param lcore
 *   A poller lcore, or -1 for the sum over every poller.
 * @param c
 *   Filled.
 * @return
 *   0; -ENODEV when @p lcore polls nothing (or before rdp_init()).
 */
int rdp_ep_counters_get(int lcore, struct rdp_ep_counters *c);

/** Name of a state ("ESTABLISHED", ...). */
const char *rdp_ep_state_str(unsigned int state);

#ifdef __cplusplus
}
#endif

#endif /* RDP_EP_H */
