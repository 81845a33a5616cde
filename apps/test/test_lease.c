/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Leased SRQ credits (lib/credit/rdp_lease.h): the rules one at a time,
 * then a randomized simulator of many endpoints sharing one SRQ.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "rdp_lease.h"
#include "rdp_test.h"

#define WQ_MAX 256

static struct rdp_lease *wq[WQ_MAX];

static void
pool_init(struct rdp_lease_pool *p, uint32_t size, uint32_t floor, uint32_t lmax,
	  uint32_t grant, uint32_t members)
{
	char why[256];

	RDP_ASSERT_MSG(rdp_lease_pool_init(p, size, floor, lmax, grant, wq, members, why,
					   sizeof(why)) == 0, "%s", why);
}

RDP_TEST(unit, lease_pool_rejects_a_floor_of_zero_and_a_max_below_it)
{
	struct rdp_lease_pool p;
	char why[256];

	RDP_ASSERT_EQ(rdp_lease_pool_init(&p, 8, 0, 4, 1, wq, 4, why, sizeof(why)), -EINVAL);
	RDP_ASSERT(strstr(why, "srq_floor=0") != NULL);
	RDP_ASSERT_EQ(rdp_lease_pool_init(&p, 8, 2, 1, 1, wq, 4, why, sizeof(why)), -EINVAL);
	RDP_ASSERT(strstr(why, "srq_lease_max=1") != NULL);
	RDP_ASSERT_EQ(rdp_lease_pool_init(&p, 1, 2, 4, 1, wq, 4, why, sizeof(why)), -EINVAL);
	RDP_ASSERT(strstr(why, "srq_size=1") != NULL);
	return 0;
}

RDP_TEST(unit, lease_admission_refuses_a_floor_the_pool_lacks_and_names_the_numbers)
{
	struct rdp_lease_pool p;
	struct rdp_lease l[3];
	char why[256];

	pool_init(&p, 5, 2, 4, 1, 3);
	RDP_ASSERT_EQ(rdp_lease_admit(&p, &l[0], why, sizeof(why)), 0);
	RDP_ASSERT_EQ(rdp_lease_admit(&p, &l[1], why, sizeof(why)), 0);
	RDP_ASSERT_EQ(l[0].lease, 2u);
	RDP_ASSERT_EQ(l[0].out, 2u);
	RDP_ASSERT_EQ(rdp_lease_admit(&p, &l[2], why, sizeof(why)), -ENOSPC);
	RDP_ASSERT_MSG(strstr(why, "srq_size=5: 1 credits free") != NULL &&
		       strstr(why, "srq_floor=2") != NULL, "%s", why);
	rdp_lease_leave(&p, &l[1]);
	RDP_ASSERT_EQ(p.free, 3u);
	RDP_ASSERT_EQ(rdp_lease_admit(&p, &l[2], why, sizeof(why)), 0);
	return 0;
}

RDP_TEST(unit, lease_reserve_leaves_the_pool_at_admission_and_is_never_lent)
{
	struct rdp_lease_pool p;
	struct rdp_lease a, b;
	char why[256];

	pool_init(&p, 10, 2, 8, 8, 2);
	RDP_ASSERT_EQ(rdp_lease_admit_reserve(&p, &a, 3, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(p.free, 5u);
	RDP_ASSERT_EQ(p.reserved, 3u);
	RDP_ASSERT_EQ(a.lease, 2u);
	/* floor 2 + reserve 4 = 6 of the 5 free */
	RDP_ASSERT_EQ(rdp_lease_admit_reserve(&p, &b, 4, why, sizeof(why)), -ENOSPC);
	RDP_ASSERT_MSG(strstr(why, "srq_size=10: 5 credits free, an endpoint needs 6") != NULL,
		       "%s", why);
	/* a grant takes what is free, never the reserve */
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &a, true), 0);
	RDP_ASSERT_EQ(p.free, 0u);
	RDP_ASSERT_EQ(a.lease, 7u);
	RDP_ASSERT_EQ(p.free + a.lease + p.reserved, p.size);
	rdp_lease_leave(&p, &a);
	RDP_ASSERT_EQ(p.free, 10u);
	RDP_ASSERT_EQ(p.reserved, 0u);
	RDP_ASSERT_EQ(p.members, 0u);
	return 0;
}

RDP_TEST(unit, lease_grants_go_to_wanting_endpoints_in_order_within_the_pool)
{
	struct rdp_lease_pool p;
	struct rdp_lease a, b;
	char why[256];

	pool_init(&p, 5, 1, 4, 2, 2);	/* 3 credits to lend */
	RDP_ASSERT_EQ(rdp_lease_admit(&p, &a, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(rdp_lease_admit(&p, &b, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &a, true), 0);
	RDP_ASSERT_EQ(a.lease, 3u);	/* floor + one grant of 2 */
	RDP_ASSERT_EQ(a.owed, 2u);
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &b, true), 0);
	RDP_ASSERT_EQ(b.lease, 2u);	/* the last credit of the pool */
	RDP_ASSERT_EQ(p.free, 0u);
	/* no credit left: a second WANT waits */
	RDP_ASSERT_EQ(rdp_lease_take_owed(&a, 1), 2u);
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &a, true), 0);
	RDP_ASSERT(a.queued);
	RDP_ASSERT_EQ(p.grants, 2u);
	return 0;
}

RDP_TEST(unit, lease_freed_credits_above_the_floor_go_to_a_waiter)
{
	struct rdp_lease_pool p;
	struct rdp_lease a, b;
	char why[256];

	pool_init(&p, 4, 1, 3, 2, 2);
	RDP_ASSERT_EQ(rdp_lease_admit(&p, &a, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(rdp_lease_admit(&p, &b, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &a, true), 0);	/* a takes both spare credits */
	RDP_ASSERT_EQ(a.lease, 3u);
	RDP_ASSERT_EQ(rdp_lease_take_owed(&a, 1), 2u);
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &b, true), 0);	/* b waits */
	RDP_ASSERT(b.queued);
	/* a is still wanting, but b waits: a's freed credit goes to b */
	RDP_ASSERT(rdp_lease_on_free(&p, &a));
	RDP_ASSERT_EQ(a.lease, 2u);
	RDP_ASSERT_EQ(b.lease, 2u);
	RDP_ASSERT_EQ(b.owed, 1u);
	/* at the floor, a freed credit stays with its endpoint */
	RDP_ASSERT_EQ(rdp_lease_take_owed(&b, 1), 1u);
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &b, false), 0);
	RDP_ASSERT(rdp_lease_on_free(&p, &b));	/* b not wanting, above its floor */
	RDP_ASSERT_EQ(b.lease, 1u);
	RDP_ASSERT(!rdp_lease_on_free(&p, &b));	/* b's first message */
	RDP_ASSERT_EQ(b.lease, 1u);
	RDP_ASSERT_EQ(b.owed, 1u);
	return 0;
}

/*
 * An endpoint at lease_max that says WANT is not queued: a grant could give
 * it nothing, and while it waited there the others' frees would go to the
 * pool. Once its lease is below lease_max, its next WANT queues it.
 */
RDP_TEST(unit, lease_wanting_endpoint_at_lease_max_is_not_queued_until_it_is_below)
{
	struct rdp_lease_pool p;
	struct rdp_lease a, b;
	char why[256];
	uint64_t served;

	pool_init(&p, 5, 1, 3, 2, 2);
	RDP_ASSERT_EQ(rdp_lease_admit(&p, &a, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(rdp_lease_admit(&p, &b, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &a, true), 0);	/* a: lease 3, the most */
	RDP_ASSERT_EQ(a.lease, 3u);
	RDP_ASSERT_EQ(rdp_lease_take_owed(&a, 1), 2u);		/* a's peer holds 3 */
	served = p.served;
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &a, true), 0);
	RDP_ASSERT(!a.queued && p.wq_len == 0 && p.served == served);
	/* b takes the pool's last credit and waits for more */
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &b, true), 0);
	RDP_ASSERT_EQ(b.lease, 2u);
	RDP_ASSERT_EQ(rdp_lease_take_owed(&b, 1), 1u);
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &b, true), 0);
	RDP_ASSERT(b.queued);
	RDP_ASSERT_EQ(p.free, 0u);
	/* a at its most, the pool empty: a does not join b in the queue */
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &a, true), 0);
	RDP_ASSERT(!a.queued && p.wq_len == 1);
	/* b waits: a's freed credit goes to b, and a is below its most */
	RDP_ASSERT(rdp_lease_on_free(&p, &a));
	RDP_ASSERT_EQ(a.lease, 2u);
	RDP_ASSERT_EQ(b.lease, 3u);
	RDP_ASSERT(!b.queued);
	/* nobody waits: a's next freed credit is owed to its peer, which spends it */
	RDP_ASSERT(!rdp_lease_on_free(&p, &a));
	RDP_ASSERT_EQ(rdp_lease_take_owed(&a, 1), 1u);
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &a, true), 0);
	RDP_ASSERT(a.queued && p.wq_len == 1);
	return 0;
}

/*
 * A descriptor's FIN credit comes from the FIN reserve, kept out of the
 * pool: an empty pool and a lease at lease_max still leave it, and it
 * never counts in a lease. Out, the next descriptor waits; a FIN brings it
 * back.
 */
RDP_TEST(unit, lease_fin_credit_comes_from_the_fin_reserve_not_the_pool)
{
	struct rdp_lease_pool p;
	struct rdp_lease a;
	char why[256];

	pool_init(&p, 6, 1, 3, 2, 1);
	RDP_ASSERT_EQ(rdp_lease_pool_fin_reserve(&p, 2, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(p.free, 4u);
	RDP_ASSERT_EQ(rdp_lease_admit(&p, &a, why, sizeof(why)), 0);
	/* the lease grows to lease_max and the pool runs dry */
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &a, true), 0);
	RDP_ASSERT_EQ(a.lease, 3u);
	p.free = 0;
	RDP_ASSERT(rdp_lease_fin_take(&p, &a));
	RDP_ASSERT(rdp_lease_fin_take(&p, &a));
	RDP_ASSERT(!rdp_lease_fin_take(&p, &a));	/* the next descriptor waits */
	RDP_ASSERT_EQ(a.fins, 2u);
	RDP_ASSERT_EQ(a.lease, 3u);
	RDP_ASSERT_EQ(a.owed, 2u);			/* the grant's, nothing more */
	RDP_ASSERT_EQ(rdp_lease_on_fin(&p, &a), 0);
	RDP_ASSERT_EQ(p.fin_free, 1u);
	RDP_ASSERT(rdp_lease_fin_take(&p, &a));
	/* its QP gone, the FINs never come: the credits go back */
	rdp_lease_fins_back(&p, &a);
	RDP_ASSERT_EQ(p.fin_free, 2u);
	RDP_ASSERT_EQ(a.fins, 0u);
	return 0;
}

/*
 * The peer's data never spends a FIN credit: a data SEND when it holds
 * none of the lease, only FIN credits, breaks the rules and changes
 * nothing; the FIN then spends its own. A FIN with no FIN credit out is a
 * violation too.
 */
RDP_TEST(unit, lease_data_that_would_spend_a_fin_credit_is_refused)
{
	struct rdp_lease_pool p;
	struct rdp_lease a, before;
	char why[256];

	pool_init(&p, 8, 2, 2, 1, 1);
	RDP_ASSERT_EQ(rdp_lease_pool_fin_reserve(&p, 1, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(rdp_lease_admit(&p, &a, why, sizeof(why)), 0);
	RDP_ASSERT(rdp_lease_fin_take(&p, &a));
	/* the floor's two credits: two data SENDs, not three */
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &a, false), 0);
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &a, false), 0);
	RDP_ASSERT_EQ(a.out, 0u);
	before = a;
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &a, false), -EPROTO);
	RDP_ASSERT(memcmp(&a, &before, sizeof(a)) == 0);
	RDP_ASSERT_EQ(a.fins, 1u);
	RDP_ASSERT_EQ(a.lease, 2u);
	/* the FIN spends the FIN credit: the reserve has it again */
	RDP_ASSERT_EQ(rdp_lease_on_fin(&p, &a), 0);
	RDP_ASSERT_EQ(a.fins, 0u);
	RDP_ASSERT_EQ(p.fin_free, 1u);
	RDP_ASSERT_EQ(rdp_lease_on_fin(&p, &a), -EPROTO);	/* no FIN due */
	RDP_ASSERT(!rdp_lease_on_free(&p, &a));
	RDP_ASSERT(!rdp_lease_on_free(&p, &a));
	RDP_ASSERT_EQ(a.owed, 2u);
	RDP_ASSERT_EQ(p.free + a.lease + p.fin_size, p.size);
	return 0;
}

/* A FIN reserve that would leave the pool short of one floor is refused, naming it. */
RDP_TEST(unit, lease_fin_reserve_that_leaves_no_floor_is_refused)
{
	struct rdp_lease_pool p;
	char why[256];

	pool_init(&p, 5, 4, 4, 1, 1);
	RDP_ASSERT_EQ(rdp_lease_pool_fin_reserve(&p, 2, why, sizeof(why)), -EINVAL);
	RDP_ASSERT_MSG(strstr(why, "srq_size=5 cannot hold srq_floor=4 beside a FIN reserve "
			      "of 2") != NULL, "%s", why);
	RDP_ASSERT_EQ(p.free, 5u);
	RDP_ASSERT_EQ(rdp_lease_pool_fin_reserve(&p, 1, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(p.free, 4u);
	return 0;
}

RDP_TEST(unit, lease_give_back_beyond_what_the_peer_holds_is_a_protocol_violation)
{
	struct rdp_lease_pool p;
	struct rdp_lease a;
	char why[256];

	pool_init(&p, 8, 1, 4, 3, 1);
	RDP_ASSERT_EQ(rdp_lease_admit(&p, &a, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &a, true), 0);	/* lease 4, 3 owed */
	RDP_ASSERT_EQ(rdp_lease_take_owed(&a, 1), 3u);		/* out = 3 */
	RDP_ASSERT_EQ(rdp_lease_on_give_back(&p, &a, 3), -EPROTO);	/* 4 > out */
	RDP_ASSERT_EQ(rdp_lease_on_give_back(&p, &a, UINT32_MAX), -EPROTO);
	RDP_ASSERT_EQ(rdp_lease_on_give_back(&p, &a, 2), 0);	/* all 3 back */
	RDP_ASSERT_EQ(a.lease, 1u);
	RDP_ASSERT_EQ(p.free, 7u);
	RDP_ASSERT_EQ(rdp_lease_on_give_back(&p, &a, 0), -EPROTO);	/* below the floor */
	/* and data with no credit out */
	RDP_ASSERT_EQ(a.out, 0u);
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &a, false), -EPROTO);
	return 0;
}

RDP_TEST(unit, lease_owed_credits_wait_for_the_threshold_unless_the_peer_holds_none)
{
	struct rdp_lease_pool p;
	struct rdp_lease a;
	char why[256];

	pool_init(&p, 8, 3, 3, 1, 1);
	RDP_ASSERT_EQ(rdp_lease_admit(&p, &a, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &a, false), 0);
	RDP_ASSERT(!rdp_lease_on_free(&p, &a));
	RDP_ASSERT_EQ(rdp_lease_take_owed(&a, 2), 0u);	/* 1 owed, the peer holds 2 */
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &a, false), 0);
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &a, false), 0);
	RDP_ASSERT_EQ(rdp_lease_take_owed(&a, 2), 1u);	/* out == 0: at once */
	RDP_ASSERT_EQ(a.out, 1u);
	return 0;
}

/*
 * Buffers that came back may wait to be posted while owed credits leave
 * only as long as the pool's free credits cover every one of them: a grant
 * that empties the pool ends that, a free that goes to the pool extends it.
 */
RDP_TEST(unit, lease_buffers_may_wait_to_be_posted_while_the_pool_covers_them)
{
	struct rdp_lease_pool p;
	struct rdp_lease a, b;
	char why[256];

	pool_init(&p, 8, 2, 4, 2, 2);
	RDP_ASSERT_EQ(rdp_lease_admit(&p, &a, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(rdp_lease_admit(&p, &b, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(p.free, 4u);
	RDP_ASSERT(rdp_lease_covers(&p, 0));
	RDP_ASSERT(rdp_lease_covers(&p, 4));
	RDP_ASSERT(!rdp_lease_covers(&p, 5));
	/* two grants of 2 empty the pool: nothing that waits is covered */
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &a, true), 0);
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &b, true), 0);
	RDP_ASSERT_EQ(p.free, 0u);
	RDP_ASSERT(rdp_lease_covers(&p, 0));
	RDP_ASSERT(!rdp_lease_covers(&p, 1));
	/* a's free goes to the pool (above its floor, not wanting): one is covered */
	a.wanting = false;
	RDP_ASSERT(rdp_lease_on_free(&p, &a));
	RDP_ASSERT(rdp_lease_covers(&p, 1));
	RDP_ASSERT(!rdp_lease_covers(&p, 2));
	return 0;
}

/*
 * An admission leaves the pool the credits kept for buffers waiting to be
 * posted (rdp_lease_pool_keep()): whatever it takes, what waits stays
 * covered, and a refusal names what is kept.
 */
RDP_TEST(unit, lease_admission_leaves_the_pool_what_covers_the_waiting_buffers)
{
	struct rdp_lease_pool p;
	struct rdp_lease l[3];
	char why[256];

	pool_init(&p, 10, 2, 4, 1, 3);
	rdp_lease_pool_keep(&p, 3);
	RDP_ASSERT_EQ(rdp_lease_admit(&p, &l[0], why, sizeof(why)), 0);
	RDP_ASSERT_EQ(rdp_lease_admit(&p, &l[1], why, sizeof(why)), 0);
	RDP_ASSERT_EQ(p.free, 6u);
	RDP_ASSERT(rdp_lease_covers(&p, 3));
	/* 2 more would leave 4 >= 3 */
	RDP_ASSERT_EQ(rdp_lease_admit(&p, &l[2], why, sizeof(why)), 0);
	RDP_ASSERT_EQ(p.free, 4u);
	rdp_lease_leave(&p, &l[2]);
	/* a reserve of 2 beside the floor would leave 2, below the 3 kept */
	RDP_ASSERT_EQ(rdp_lease_admit_reserve(&p, &l[2], 2, why, sizeof(why)), -ENOSPC);
	RDP_ASSERT_MSG(strstr(why, "srq_size=10: 6 credits free, an endpoint needs 4") != NULL &&
		       strstr(why, "3 of the free kept") != NULL, "%s", why);
	RDP_ASSERT(rdp_lease_covers(&p, 3));
	/* the poller's grants may still take them: a grant is not an admission */
	RDP_ASSERT_EQ(rdp_lease_on_data(&p, &l[0], true), 0);
	RDP_ASSERT_EQ(l[0].lease, 3u);
	RDP_ASSERT_EQ(p.free, 5u);
	return 0;
}

RDP_TEST(unit, lease_peer_rules_want_and_give_back)
{
	RDP_ASSERT(rdp_lease_want(3, 2));
	RDP_ASSERT(!rdp_lease_want(2, 2));
	RDP_ASSERT_EQ(rdp_lease_give_back_due(0, 5, 2), 3u);
	RDP_ASSERT_EQ(rdp_lease_give_back_due(1, 5, 2), 0u);
	RDP_ASSERT_EQ(rdp_lease_give_back_due(0, 2, 2), 0u);
	return 0;
}

/* ---- the simulator: many endpoints, one SRQ, random order ---- */

enum { SIM_DATA, SIM_GB };

struct sim_msg {
	uint8_t kind;
	bool want;
	uint32_t val;	/* data: sequence number; give-back: extra */
};

struct sim_ep {
	struct rdp_lease l;
	/* the peer */
	uint32_t rc;
	uint64_t backlog, to_hand, tx_seq;
	uint32_t back_credits;	/* credits in immediate data towards the peer */
	/* the wire and the CQ: [0, arrived) consumed a buffer and wait for the poller */
	struct sim_msg *q;
	uint32_t q_head, q_len, arrived, q_cap;
	/* the poller's application */
	uint32_t held;
	uint64_t rx_seq;
};

static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void
sim_check(const struct rdp_lease_pool *p, const struct sim_ep *e, uint32_t n)
{
	uint64_t sum = p->free;
	uint32_t i;

	for (i = 0; i < n; i++) {
		RDP_ASSERT_MSG(e[i].l.lease >= p->floor && e[i].l.lease <= p->lease_max,
			       "endpoint %u leases %u", i, e[i].l.lease);
		sum += e[i].l.lease;
	}
	RDP_ASSERT_MSG(sum == p->size, "%" PRIu64 " credits for %u buffers", sum, p->size);
}

RDP_TEST(unit, lease_sim_many_endpoints_share_one_srq_without_rnr)
{
	const uint32_t n = 160, size = 640, floor = 1, lmax = 32, grant = 4;
	const uint64_t per_ep = 8000;
	struct rdp_lease_pool p;
	struct sim_ep *e = calloc(n, sizeof(*e));
	uint64_t seed = 0x9e3779b97f4a7c15ull, rounds = 0, delivered = 0;
	uint32_t posted = size, unposted = 0, i, quiet_rounds = 0;
	char why[256];

	RDP_ASSERT(e != NULL);
	if (getenv("RDP_SEED") != NULL)
		seed = strtoull(getenv("RDP_SEED"), NULL, 0) | 1;
	printf("seed %" PRIu64 "\n", seed);
	RDP_ASSERT(n <= WQ_MAX);
	pool_init(&p, size, floor, lmax, grant, n);
	for (i = 0; i < n; i++) {
		RDP_ASSERT_EQ(rdp_lease_admit(&p, &e[i].l, why, sizeof(why)), 0);
		e[i].rc = floor;
		e[i].to_hand = per_ep;
		e[i].q_cap = lmax + 1;
		e[i].q = calloc(e[i].q_cap, sizeof(*e[i].q));
		RDP_ASSERT(e[i].q != NULL);
	}
	while (quiet_rounds < 4 * n * 16) {
		struct sim_ep *x = &e[rnd(&seed) % n];
		uint32_t step = (uint32_t)(rnd(&seed) % 7), extra;
		struct sim_msg *m;

		rounds++;
		RDP_ASSERT_MSG(rounds < 400000000ull, "no end after %" PRIu64 " rounds", rounds);
		switch (step) {
		case 0:	/* the peer's application hands over a burst */
			if (x->to_hand > 0 && rnd(&seed) % 4 == 0) {
				uint64_t b = 1 + rnd(&seed) % 16;

				b = b > x->to_hand ? x->to_hand : b;
				x->to_hand -= b;
				x->backlog += b;
			}
			break;
		case 1:	/* the peer sends, or gives back */
			if (x->q_len == x->q_cap)
				break;
			m = &x->q[(x->q_head + x->q_len) % x->q_cap];
			if (x->backlog > 0 && x->rc > 0) {
				x->rc--;
				x->backlog--;
				*m = (struct sim_msg){ SIM_DATA, rdp_lease_want(x->backlog, x->rc),
						       (uint32_t)x->tx_seq++ };
				x->q_len++;
			} else if ((extra = rdp_lease_give_back_due(x->backlog, x->rc, floor)) > 0) {
				*m = (struct sim_msg){ SIM_GB, false, extra - 1 };
				x->rc -= extra;
				x->q_len++;
			}
			break;
		case 2:	/* a SEND arrives: it takes a buffer of the SRQ */
			if (x->arrived < x->q_len) {
				RDP_ASSERT_MSG(posted > 0, "RNR: endpoint %u's SEND found the SRQ "
					       "empty (seed %" PRIu64 ")", (unsigned)(x - e), seed);
				posted--;
				x->arrived++;
			}
			break;
		case 3:	/* the poller takes a completion */
			if (x->arrived == 0)
				break;
			m = &x->q[x->q_head];
			x->q_head = (x->q_head + 1) % x->q_cap;
			x->q_len--;
			x->arrived--;
			if (m->kind == SIM_DATA) {
				RDP_ASSERT_EQ(m->val, (uint32_t)x->rx_seq);
				x->rx_seq++;
				x->held++;
				RDP_ASSERT_EQ(rdp_lease_on_data(&p, &x->l, m->want), 0);
			} else {
				unposted++;
				RDP_ASSERT_EQ(rdp_lease_on_give_back(&p, &x->l, m->val), 0);
			}
			sim_check(&p, e, n);
			break;
		case 4:	/* the poller's application frees, slowly or at once */
			if (x->held > 0 && rnd(&seed) % 3 == 0) {
				x->held--;
				unposted++;
				delivered++;
				rdp_lease_on_free(&p, &x->l);
				sim_check(&p, e, n);
			}
			break;
		case 5:	/* credits go back (the buffers first unless the pool covers them) */
			if (x->l.owed > 0 && !rdp_lease_covers(&p, unposted)) {
				posted += unposted;
				unposted = 0;
			}
			x->back_credits += rdp_lease_take_owed(&x->l, 4);
			if (x->back_credits > 0 && rnd(&seed) % 2 == 0) {
				x->rc += x->back_credits;
				x->back_credits = 0;
			}
			break;
		case 6:	/* the buffers that came back are posted, rarely: case 5's rule alone
			 * keeps the SRQ from running dry */
			if (rnd(&seed) % 1024 == 0) {
				posted += unposted;
				unposted = 0;
			}
			break;
		}
		if (delivered == n * per_ep)
			quiet_rounds++;
	}
	RDP_ASSERT_EQ(delivered, n * per_ep);
	for (i = 0; i < n; i++) {
		RDP_ASSERT_EQ(e[i].rx_seq, per_ep);
		RDP_ASSERT_MSG(e[i].l.lease == floor, "endpoint %u kept %u credits when quiet", i,
			       e[i].l.lease);
		free(e[i].q);
	}
	RDP_ASSERT_EQ(posted + unposted, size);
	printf("%u endpoints on an SRQ of %u: %" PRIu64 " messages, %" PRIu64 " grants, %"
	       PRIu64 " credits diverted, %" PRIu64 " given back, %" PRIu64 " rounds\n", n, size,
	       delivered, p.grants, p.diverted, p.given_back, rounds);
	RDP_ASSERT_MSG(p.grants > 0 && p.diverted > 0 && p.given_back > 0,
		       "the run never granted, diverted or gave back");
	free(e);
	return 0;
}

/*
 * Admission runs on the control thread while the poller leases on: the
 * two change the pool's free credits at once, and none may be lost or
 * made. The poller keeps one member busy (data with and without WANT,
 * frees that go to the member or to the pool, give-backs, owed credits
 * sent) and lets go of the members the control thread admits; at the end
 * the pool's free and reserved credits and the leases still held add up
 * to the SRQ's size.
 */
enum { RACE_NEW = 64, RACE_ADMISSIONS = 50000 };

struct lease_race {
	struct rdp_lease_pool p;
	struct rdp_lease l[RACE_NEW];
	uint8_t state[RACE_NEW];	/* (atomic) 0: the admitter's, 1: admitted, 2: refused */
	uint8_t stop;			/* (atomic) */
	uint64_t admissions, refused;
};

/* The control thread: admits into every slot the poller handed back, until told to stop. */
static void *
race_admitter(void *arg)
{
	struct lease_race *r = arg;
	char why[256];
	uint32_t i = 0;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		if (__atomic_load_n(&r->state[i], __ATOMIC_ACQUIRE) == 0) {
			int ret = rdp_lease_admit_reserve(&r->p, &r->l[i], 1 + i % 3, why,
							  sizeof(why));

			__atomic_store_n(&r->admissions, r->admissions + 1, __ATOMIC_RELAXED);
			r->refused += ret < 0;
			__atomic_store_n(&r->state[i], ret == 0 ? 1 : 2, __ATOMIC_RELEASE);
		}
		i = (i + 1) % RACE_NEW;
	}
	return NULL;
}

RDP_TEST(unit, lease_admission_on_another_thread_while_the_poller_leases_loses_no_credit)
{
	static struct rdp_lease *race_wq[RACE_NEW + 1];
	struct lease_race *r = calloc(1, sizeof(*r));
	struct rdp_lease a;
	uint64_t seed = 0x2545f4914f6cdd1dull, sum;
	uint32_t held = 0, i, k;
	double deadline = rdp_clock_s() + 60;
	pthread_t t;
	char why[256];

	RDP_ASSERT(r != NULL);
	RDP_ASSERT_MSG(rdp_lease_pool_init(&r->p, 300, 2, 64, 8, race_wq, RACE_NEW + 1, why,
					   sizeof(why)) == 0, "%s", why);
	RDP_ASSERT_EQ(rdp_lease_admit_reserve(&r->p, &a, 2, why, sizeof(why)), 0);
	RDP_ASSERT_EQ(pthread_create(&t, NULL, race_admitter, r), 0);
	for (k = 0; __atomic_load_n(&r->admissions, __ATOMIC_RELAXED) < RACE_ADMISSIONS; k++) {
		uint32_t step = (uint32_t)(rnd(&seed) % 4);
		uint8_t *st = &r->state[k % RACE_NEW];

		RDP_ASSERT_MSG(k % 4096 != 0 || rdp_clock_s() < deadline, "%" PRIu64 " admissions "
			       "in 60 s", __atomic_load_n(&r->admissions, __ATOMIC_RELAXED));

		if (step == 0 && a.out > 0) {
			RDP_ASSERT_EQ(rdp_lease_on_data(&r->p, &a, rnd(&seed) % 3 != 0), 0);
			held++;
		} else if (step == 1 && held > 0) {
			rdp_lease_on_free(&r->p, &a);
			held--;
		} else if (step == 2 && a.out > 1 && a.lease > r->p.floor + 1) {
			/* a give-back of two: one spent on it, one more */
			RDP_ASSERT_EQ(rdp_lease_on_give_back(&r->p, &a, 1), 0);
		} else {
			rdp_lease_take_owed(&a, 4);
		}
		/* a member admitted meanwhile leaves again, on this thread */
		switch (__atomic_load_n(st, __ATOMIC_ACQUIRE)) {
		case 1:
			rdp_lease_leave(&r->p, &r->l[k % RACE_NEW]);
			/* fall through */
		case 2:
			__atomic_store_n(st, 0, __ATOMIC_RELEASE);
			break;
		default:
			break;
		}
	}
	__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
	RDP_ASSERT_EQ(pthread_join(t, NULL), 0);
	for (i = 0; i < RACE_NEW; i++)
		if (r->state[i] == 1)
			rdp_lease_leave(&r->p, &r->l[i]);
	printf("%" PRIu64 " admissions, %" PRIu64 " refused, %" PRIu64 " grants\n",
	       r->admissions, r->refused, r->p.grants);
	RDP_ASSERT_EQ(r->p.members, 1u);
	RDP_ASSERT_EQ(r->p.reserved, a.reserve);
	sum = (uint64_t)r->p.free + r->p.reserved + a.lease;
	RDP_ASSERT_MSG(sum == r->p.size, "free %u + reserved %u + lease %u = %" PRIu64
		       " credits for an SRQ of %u", r->p.free, r->p.reserved, a.lease, sum,
		       r->p.size);
	free(r);
	return 0;
}
