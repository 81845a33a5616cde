/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An endpoint's lifecycle as one table: its phases and the moves between
 * them (docs/architecture.md, "Endpoint lifecycle", shows the same table;
 * test_lifecycle.c holds the two together). Every move goes through
 * ep_phase_set(), which refuses one the table does not list.
 */
#include <rte_debug.h>

#include "ep_private.h"

static const char *const phase_names[EP_PH_COUNT] = {
	[EP_PH_HANDSHAKE] = "HANDSHAKE",
	[EP_PH_HANDOVER] = "HANDOVER",
	[EP_PH_ESTABLISHED] = "ESTABLISHED",
	[EP_PH_DRAINING] = "DRAINING",
	[EP_PH_FLUSHING] = "FLUSHING",
	[EP_PH_FLUSHED] = "FLUSHED",
	[EP_PH_RETIRED] = "RETIRED",
	[EP_PH_RELEASING] = "RELEASING",
	[EP_PH_RELEASED] = "RELEASED",
};

#define TO(p) (1u << (p))

/* The phases each phase may move to, and why. */
static const uint16_t phase_next[EP_PH_COUNT] = {
	/* the handshake ended, well or not, and the poller takes over; or a
	 * server's handshake failed before anything existed: freed */
	[EP_PH_HANDSHAKE] = TO(EP_PH_HANDOVER) | TO(EP_PH_RELEASED),
	/* admitted; or the handshake failed (or was closed) with receives
	 * posted, which the flush brings back; or it failed with no QP */
	[EP_PH_HANDOVER] = TO(EP_PH_ESTABLISHED) | TO(EP_PH_FLUSHING) | TO(EP_PH_RETIRED),
	/* closed by the application; or failed */
	[EP_PH_ESTABLISHED] = TO(EP_PH_DRAINING) | TO(EP_PH_FLUSHING),
	/* what it accepted is out (or it failed meanwhile) */
	[EP_PH_DRAINING] = TO(EP_PH_FLUSHING),
	/* the flush marker completed, or could not be posted */
	[EP_PH_FLUSHING] = TO(EP_PH_FLUSHED),
	/* every posted receive came back: QP destroyed, messages reported */
	[EP_PH_FLUSHED] = TO(EP_PH_RETIRED),
	/* the last reference went: at once, or once off the busy list */
	[EP_PH_RETIRED] = TO(EP_PH_RELEASING) | TO(EP_PH_RELEASED),
	[EP_PH_RELEASING] = TO(EP_PH_RELEASED),
	[EP_PH_RELEASED] = 0,
};

bool
ep_phase_allowed(enum ep_phase from, enum ep_phase to)
{
	return from < EP_PH_COUNT && to < EP_PH_COUNT && (phase_next[from] & TO(to)) != 0;
}

const char *
ep_phase_name(enum ep_phase p)
{
	return p < EP_PH_COUNT ? phase_names[p] : "UNKNOWN";
}

void
ep_phase_set(struct rdp_ep *ep, enum ep_phase to)
{
	enum ep_phase from = ep_phase_get(ep);

	if (unlikely(!ep_phase_allowed(from, to)))
		rte_panic("endpoint %u: phase %s -> %s is not a move of the lifecycle\n", ep->id,
			  ep_phase_name(from), ep_phase_name(to));
	atomic_store_explicit(&ep->phase, (uint8_t)to, memory_order_release);
}
