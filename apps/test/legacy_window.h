/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_TEST_LEGACY_WINDOW_H
#define RDP_TEST_LEGACY_WINDOW_H

/**
 * @file
 * TEST FIXTURE ONLY: the flow control rdmaplane exists to replace.
 *
 * brpc's RDMA endpoint (before brpc PR #3145) kept one sliding window: a
 * data send needs `window > 0`; the window is refilled by the ack count
 * carried in the immediate data of a RECV completion. The SQ is sized
 * `window + reserve` and its slots are freed only by polled signaled SEND
 * completions, but the window never looks at them. When the ack's RECV
 * completion is polled before the SEND completion it implies (legal: a CQ
 * shared by SQ and RQ orders completions only within one work queue),
 * the window says "go" while the SQ is full and post_send fails with ENOMEM.
 *
 * Tests drive this policy over the simulator and the shm driver to show the
 * failure is real, next to rdmaplane's policy which cannot fail that way.
 */

#include <stdbool.h>
#include <stdint.h>

/** The legacy sender state. */
struct legacy_window {
	uint32_t window;          /**< sends allowed before the next ack */
	uint32_t signal_interval; /**< every n-th data WR is signaled */
	uint32_t unsig_run;       /**< data WRs since the last signaled one */
	uint64_t posted;          /**< data WRs posted */
};

/**
 * Start with the peer's whole receive window.
 *
 * @param l
 *   State.
 * @param window
 *   The peer's receive entries.
 * @param signal_interval
 *   Signal every n-th data WR.
 */
static inline void
legacy_window_init(struct legacy_window *l, uint32_t window, uint32_t signal_interval)
{
	l->window = window;
	l->signal_interval = signal_interval;
	l->unsig_run = 0;
	l->posted = 0;
}

/** May a data WR be posted? Only the window is consulted: that is the bug. */
static inline bool
legacy_window_can_send(const struct legacy_window *l)
{
	return l->window > 0;
}

/**
 * Account a data WR about to be posted.
 *
 * @param l
 *   State.
 * @return
 *   Whether to signal it.
 */
static inline bool
legacy_window_posted(struct legacy_window *l)
{
	l->window--;
	l->posted++;
	if (++l->unsig_run >= l->signal_interval) {
		l->unsig_run = 0;
		return true;
	}
	return false;
}

/**
 * Refill the window from an ack's immediate data.
 *
 * @param l
 *   State.
 * @param acked
 *   Messages the peer acknowledged.
 */
static inline void
legacy_window_acked(struct legacy_window *l, uint32_t acked)
{
	l->window += acked;
}

#endif /* RDP_TEST_LEGACY_WINDOW_H */
