/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: the credit leases of a shared receive queue (rdp_lease.h),
 * driven by members that join and leave and by peers that break the rules
 * as freely as the wire lets them (SENDs without credit, give-backs of
 * credits they do not hold, WANT at any time).
 *
 * Input: the pool (4 bytes: SRQ size, floor, lease_max above the floor,
 * grant and FIN reserve), then records of 2 bytes: the operation and the member (byte 0),
 * its argument (byte 1). A plain account of each member beside the pool
 * (what its peer holds, what it is owed, what its application holds)
 * checks, after every operation:
 * - credits are conserved: free + every lease + the reserves + the FIN
 *   reserve = SRQ size, the FIN reserve's credits are free or at exactly
 *   one member's peer (a descriptor took it, its FIN has not come), and
 *   each lease = what the peer holds + what it is owed + what the
 *   application holds (the model counts the first and the last itself);
 * - no RNR: what the peers may still send (their credits, the reserves
 *   for their pure acks, the FIN credits of descriptors) never exceeds
 *   the receives posted (the SRQ less the buffers applications hold);
 * - every lease stays within [floor, lease_max];
 * - a refused operation (data from a peer without a credit of its lease,
 *   FIN credits aside, a give-back beyond its lease or under its floor, an
 *   admission that does not fit, a descriptor when the FIN reserve is out,
 *   a FIN none was due for) is refused exactly when the rules say so, and
 *   changes nothing;
 * - the waiters' FIFO holds each wanting member at most once.
 */
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"
#include "rdp_lease.h"

#define MEMBERS 8

/* What the model knows of one member. */
struct member {
	bool in;
	uint32_t out;    /* credits its peer holds, of the lease and FIN credits alike */
	uint32_t held;   /* messages its application holds */
	uint32_t reserve;
	uint32_t due;    /* descriptors whose FIN has not come */
};

enum op { OP_ADMIT, OP_LEAVE, OP_DATA, OP_FREE, OP_GIVE_BACK, OP_TAKE_OWED, OP_FIN_TAKE,
	  OP_FIN_RETURN, OP_MAX };

static void
check(const struct rdp_lease_pool *p, const struct rdp_lease *l, const struct member *m)
{
	uint64_t leased = 0, reserved = 0, spendable = 0, held = 0, fins = 0;
	uint32_t i, j, queued = 0, members = 0;

	for (i = 0; i < MEMBERS; i++) {
		if (!m[i].in)
			continue;
		members++;
		/* grants and diversions move lease and owed together: the rest
		 * is the peer's and the application's, which the model counts */
		FUZZ_ASSERT(l[i].out + l[i].fins == m[i].out && l[i].reserve == m[i].reserve);
		FUZZ_ASSERT(l[i].fins == m[i].due);
		FUZZ_ASSERT(l[i].lease == l[i].out + l[i].owed + m[i].held);
		FUZZ_ASSERT(l[i].lease >= p->floor && l[i].lease <= p->lease_max);
		leased += l[i].lease;
		reserved += l[i].reserve;
		spendable += m[i].out + l[i].reserve;
		fins += m[i].due;
		held += m[i].held;
		queued += l[i].queued;
	}
	FUZZ_ASSERT(members == p->members);
	FUZZ_ASSERT(reserved == p->reserved);
	FUZZ_ASSERT(p->free + leased + reserved + p->fin_size == p->size);
	FUZZ_ASSERT(p->fin_free + fins == p->fin_size);
	FUZZ_ASSERT(spendable <= p->size - held);
	FUZZ_ASSERT(queued == p->wq_len && p->wq_len <= p->members);
	for (i = 0; i < p->wq_len; i++) {
		const struct rdp_lease *w = p->wq[(p->wq_head + i) % p->wq_cap];

		FUZZ_ASSERT(w >= l && w < l + MEMBERS && m[w - l].in && w->queued);
		for (j = i + 1; j < p->wq_len; j++)
			FUZZ_ASSERT(p->wq[(p->wq_head + j) % p->wq_cap] != w);
	}
}

/* The member's lease and the pool as they were: a refusal changes neither. */
static bool
same(const struct rdp_lease_pool *a, const struct rdp_lease_pool *b,
     const struct rdp_lease *la, const struct rdp_lease *lb)
{
	return a->free == b->free && a->members == b->members && a->reserved == b->reserved &&
	       a->fin_free == b->fin_free &&
	       a->wq_len == b->wq_len && memcmp(la, lb, sizeof(*la)) == 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rdp_lease *wq[MEMBERS];
	struct rdp_lease l[MEMBERS];
	struct member m[MEMBERS];
	struct rdp_lease_pool p;
	uint32_t floor, lease_max;
	char why[256];
	size_t off;

	if (size < 4)
		return 0;
	floor = 1 + data[1] % 4;
	lease_max = floor + data[2] % 16;
	if (rdp_lease_pool_init(&p, 1 + data[0] % 96, floor, lease_max, 1 + data[3] % 8, wq,
				MEMBERS, why, sizeof(why)) != 0 ||
	    rdp_lease_pool_fin_reserve(&p, (uint32_t)(data[3] >> 3) % 5, why, sizeof(why)) != 0)
		return 0; /* an SRQ too small for one floor: refused at setup */
	memset(l, 0, sizeof(l));
	memset(m, 0, sizeof(m));
	for (off = 4; off + 2 <= size; off += 2) {
		enum op op = (enum op)(data[off] % OP_MAX);
		uint32_t i = (data[off] >> 4) % MEMBERS, arg = data[off + 1], n;
		struct rdp_lease_pool before = p;
		struct rdp_lease lb = l[i];
		bool fits, refused;
		int ret;

		switch (op) {
		case OP_ADMIT:
			if (m[i].in)
				break;
			fits = p.free >= p.floor + arg % 4;
			ret = rdp_lease_admit_reserve(&p, &l[i], arg % 4, why, sizeof(why));
			FUZZ_ASSERT((ret == 0) == fits && (ret == 0 || ret == -ENOSPC));
			if (ret != 0) {
				FUZZ_ASSERT(same(&p, &before, &l[i], &lb) && why[0] != '\0');
				break;
			}
			m[i] = (struct member){ .in = true, .out = floor, .reserve = arg % 4 };
			break;
		case OP_LEAVE:
			/* its QP is gone and its application freed all it held */
			if (!m[i].in || m[i].held > 0)
				break;
			if (arg & 1) /* the QP went before: its FIN credits first */
				rdp_lease_fins_back(&p, &l[i]);
			rdp_lease_leave(&p, &l[i]);
			FUZZ_ASSERT(p.free == before.free + lb.lease + lb.reserve);
			FUZZ_ASSERT(p.fin_free == before.fin_free + m[i].due);
			memset(&m[i], 0, sizeof(m[i]));
			break;
		case OP_DATA:
			if (!m[i].in)
				break;
			/* refused unless the peer holds a credit of the lease: its
			 * FIN credits are for its FINs */
			ret = rdp_lease_on_data(&p, &l[i], arg & 1);
			FUZZ_ASSERT((ret != 0) == (m[i].out == m[i].due));
			if (ret != 0) {
				FUZZ_ASSERT(ret == -EPROTO && same(&p, &before, &l[i], &lb));
				break;
			}
			m[i].out--;
			m[i].held++;
			break;
		case OP_FREE:
			if (!m[i].in || m[i].held == 0)
				break;
			m[i].held--;
			rdp_lease_on_free(&p, &l[i]);
			break;
		case OP_GIVE_BACK:
			if (!m[i].in)
				break;
			n = 1 + arg % 8;
			refused = n > lb.out || n > lb.lease || lb.lease - n < p.floor;
			ret = rdp_lease_on_give_back(&p, &l[i], n - 1);
			FUZZ_ASSERT((ret != 0) == refused);
			if (ret != 0) {
				FUZZ_ASSERT(ret == -EPROTO && same(&p, &before, &l[i], &lb));
				break;
			}
			m[i].out -= n;
			break;
		case OP_TAKE_OWED:
			if (!m[i].in)
				break;
			n = rdp_lease_take_owed(&l[i], 1 + arg % 4);
			FUZZ_ASSERT(n == 0 || (n == lb.owed && l[i].owed == 0));
			m[i].out += n;
			break;
		case OP_FIN_TAKE:
			/* a descriptor of the member goes, with a FIN credit */
			if (!m[i].in)
				break;
			if (!rdp_lease_fin_take(&p, &l[i])) {
				FUZZ_ASSERT(before.fin_free == 0 && same(&p, &before, &l[i], &lb));
				break;
			}
			FUZZ_ASSERT(p.fin_free == before.fin_free - 1);
			m[i].out++;
			m[i].due++;
			break;
		case OP_FIN_RETURN:
			/* a FIN came: its buffer goes back, a credit to the reserve;
			 * refused unless one was due (the peer then held its credit) */
			if (!m[i].in)
				break;
			ret = rdp_lease_on_fin(&p, &l[i]);
			FUZZ_ASSERT((ret != 0) == (m[i].due == 0));
			if (ret != 0) {
				FUZZ_ASSERT(ret == -EPROTO && same(&p, &before, &l[i], &lb));
				break;
			}
			FUZZ_ASSERT(p.fin_free == before.fin_free + 1);
			m[i].out--;
			m[i].due--;
			break;
		default:
			break;
		}
		check(&p, l, m);
	}
	return 0;
}
