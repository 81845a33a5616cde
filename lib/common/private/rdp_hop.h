/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_HOP_H
#define RDP_HOP_H

/**
 * @file
 * Where a message's hop spends its time: time stamps (the TSC) at each
 * stage a message passes between one side's send and the other side's
 * reply, in benchmark-only builds (`-Dhop_trace=true`). Other builds
 * compile the marks to nothing. Internal to the project; not installed.
 *
 * The two ends of the transfer, PUBLISH and REAPED, are marked only for
 * entries that carry data (not pure acks), so that the k-th entry one side
 * publishes is the k-th the other reaps; the other points are marked for
 * every poll that returned completions, every endpoint's batch and every
 * call, and are lined up by time, which holds for one endpoint per
 * process (what hops.sh runs). The stamps stay in
 * memory (a fixed array per point, RDP_HOP_MAX stamps each) and are
 * written at exit to the file named by the environment variable
 * RDP_HOP_TRACE_FILE, if set. devtools/bench/hops.sh runs a 64 B
 * ping-pong on shm with this build and devtools/bench/hops.py lines the
 * two processes' stamps up (docs/performance.md, "Where the time goes").
 *
 * One poller per process: the arrays are not shared safely between
 * threads. The marks cost a TSC read and a store each, and the VISIBLE
 * mark a full fence, so the traced hop is slower than an untraced one;
 * the stages' proportions are what it is for.
 */

#include <stdint.h>

/** The stages of a hop, in the order a message passes them. */
enum rdp_hop_point {
	RDP_HOP_REAPED = 0,  /**< shm: a receive entry with data found complete */
	RDP_HOP_POLLED,      /**< poller: the driver's poll returned it */
	RDP_HOP_DISPATCHED,  /**< endpoint: it processed its batch of completions */
	RDP_HOP_DELIVER,     /**< endpoint: received messages go to the application */
	RDP_HOP_APP_SEND,    /**< rdp_ep_send_burst() entered (the reply) */
	RDP_HOP_PUBLISH,     /**< shm: a SEND's entry about to be published (seq store) */
	RDP_HOP_VISIBLE,     /**< shm: after a full fence: the entry's stores are visible */
	RDP_HOP_NB_POINTS
};

/** Stamps kept per point (16 MiB each, touched only as they fill). */
#define RDP_HOP_MAX (UINT32_C(1) << 21)

#ifdef RDP_HOP_TRACE
/**
 * Record the TSC for @p point (hop-trace builds only); for RDP_HOP_VISIBLE,
 * after a full fence.
 */
void rdp_hop_mark(enum rdp_hop_point point);
/** Mark @p point. */
#define RDP_HOP_MARK(point) rdp_hop_mark(point)
/** Mark @p point when @p cond holds; other builds do not evaluate @p cond. */
#define RDP_HOP_MARK_IF(cond, point) do { if (cond) rdp_hop_mark(point); } while (0)
#else
#define RDP_HOP_MARK(point) do { } while (0)
#define RDP_HOP_MARK_IF(cond, point) do { } while (0)
#endif

#endif /* RDP_HOP_H */
