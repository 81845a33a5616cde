/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rdp_lease.h"

/*
 * The fields admission shares with the poller (free, reserved, members),
 * atomically: admission may run on another thread (rdp_lease.h). The
 * counters only the poller writes are stored whole, for readers elsewhere.
 */
static inline uint32_t
ld32(const uint32_t *v)
{
	return __atomic_load_n(v, __ATOMIC_RELAXED);
}

static inline void
add32(uint32_t *v, uint32_t n)
{
	__atomic_fetch_add(v, n, __ATOMIC_RELAXED);
}

static inline void
sub32(uint32_t *v, uint32_t n)
{
	__atomic_fetch_sub(v, n, __ATOMIC_RELAXED);
}

static inline void
count(uint64_t *v, uint64_t n)
{
	__atomic_store_n(v, *v + n, __ATOMIC_RELAXED);
}

/* Take up to @p want credits from the pool; what it took. */
static inline uint32_t
free_take(struct rdp_lease_pool *p, uint32_t want)
{
	uint32_t f = ld32(&p->free), n;

	do {
		n = want < f ? want : f;
		if (n == 0)
			return 0;
	} while (!__atomic_compare_exchange_n(&p->free, &f, f - n, false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return n;
}

int
rdp_lease_pool_init(struct rdp_lease_pool *p, uint32_t size, uint32_t floor,
		    uint32_t lease_max, uint32_t grant, struct rdp_lease **wq,
		    uint32_t max_members, char *why, size_t len)
{
	if (floor == 0) {
		snprintf(why, len, "srq_floor=0: every endpoint needs at least one credit");
		return -EINVAL;
	}
	if (lease_max < floor) {
		snprintf(why, len, "srq_lease_max=%u is below srq_floor=%u", lease_max, floor);
		return -EINVAL;
	}
	if (grant == 0) {
		snprintf(why, len, "srq_grant=0: a grant must give at least one credit");
		return -EINVAL;
	}
	if (size < floor) {
		snprintf(why, len, "srq_size=%u cannot hold one endpoint's srq_floor=%u", size,
			 floor);
		return -EINVAL;
	}
	if (wq == NULL || max_members == 0) {
		snprintf(why, len, "no room for members");
		return -EINVAL;
	}
	memset(p, 0, sizeof(*p));
	p->size = size;
	p->free = size;
	p->floor = floor;
	p->lease_max = lease_max;
	p->grant = grant;
	p->wq = wq;
	p->wq_cap = max_members;
	return 0;
}

void
rdp_lease_pool_keep(struct rdp_lease_pool *p, uint32_t keep)
{
	p->keep = keep;
}

int
rdp_lease_pool_fin_reserve(struct rdp_lease_pool *p, uint32_t n, char *why, size_t len)
{
	if ((uint64_t)n + p->floor > p->free) {
		snprintf(why, len, "srq_size=%u cannot hold srq_floor=%u beside a FIN reserve of %u",
			 p->size, p->floor, n);
		return -EINVAL;
	}
	sub32(&p->free, n);
	p->fin_size = n;
	p->fin_free = n;
	return 0;
}

int
rdp_lease_admit_reserve(struct rdp_lease_pool *p, struct rdp_lease *l, uint32_t reserve,
			char *why, size_t len)
{
	uint64_t need = (uint64_t)p->floor + reserve;
	uint32_t f = ld32(&p->free);

	if (ld32(&p->members) == p->wq_cap) {
		snprintf(why, len, "the SRQ has its most endpoints (%u)", p->wq_cap);
		return -EUSERS;
	}
	do {
		if (f < need + p->keep) {
			char kept[64] = "", fins[64] = "";

			if (p->keep > 0)
				snprintf(kept, sizeof(kept), "; %u of the free kept for receives waiting "
					 "to be posted", p->keep);
			if (p->fin_size > 0)
				snprintf(fins, sizeof(fins), "; %u kept for rendezvous FINs",
					 p->fin_size);
			snprintf(why, len, "srq_size=%u: %u credits free, an endpoint needs %u "
				 "(srq_floor=%u + a reserve of %u for its peer's pure acks; %u "
				 "endpoints hold %u%s%s)", p->size, f, p->floor + reserve,
				 p->floor, reserve, ld32(&p->members), p->size - f - p->fin_size,
				 fins, kept);
			return -ENOSPC;
		}
	} while (!__atomic_compare_exchange_n(&p->free, &f, f - (uint32_t)need, false,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	memset(l, 0, sizeof(*l));
	add32(&p->reserved, reserve);
	add32(&p->members, 1);
	l->lease = p->floor;
	l->out = p->floor;
	l->reserve = reserve;
	return 0;
}

int
rdp_lease_admit(struct rdp_lease_pool *p, struct rdp_lease *l, char *why, size_t len)
{
	return rdp_lease_admit_reserve(p, l, 0, why, len);
}

static void
wq_remove(struct rdp_lease_pool *p, struct rdp_lease *l)
{
	uint32_t i, n = p->wq_len, kept = 0;

	for (i = 0; i < n; i++) {
		struct rdp_lease *w = p->wq[(p->wq_head + i) % p->wq_cap];

		if (w != l)
			p->wq[(p->wq_head + kept++) % p->wq_cap] = w;
	}
	p->wq_len = kept;
	l->queued = false;
}

void
rdp_lease_leave(struct rdp_lease_pool *p, struct rdp_lease *l)
{
	if (l->queued)
		wq_remove(p, l);
	add32(&p->free, l->lease + l->reserve);
	rdp_lease_fin_set_(p, p->fin_free + l->fins);
	sub32(&p->reserved, l->reserve);
	sub32(&p->members, 1);
	memset(l, 0, sizeof(*l));
}

/*
 * Grants to the oldest waiters while the pool has credit. A waiter whose
 * grant finds the pool emptied meanwhile (an admission took the rest)
 * keeps its place.
 */
void
rdp_lease_serve_(struct rdp_lease_pool *p)
{
	while (p->wq_len > 0 && ld32(&p->free) > 0) {
		struct rdp_lease *l = p->wq[p->wq_head];
		uint32_t g = p->lease_max - l->lease;

		if (l->wanting && g > 0) {
			g = free_take(p, g > p->grant ? p->grant : g);
			if (g == 0)
				break;
			l->lease += g;
			l->owed += g;
			count(&p->grants, 1);
		}
		p->wq_head = (p->wq_head + 1) % p->wq_cap;
		p->wq_len--;
		p->served++;
		l->queued = false;
	}
}

void
rdp_lease_divert_(struct rdp_lease_pool *p, uint32_t n)
{
	add32(&p->free, n);
	count(&p->diverted, n);
}

void
rdp_lease_enqueue_(struct rdp_lease_pool *p, struct rdp_lease *l)
{
	p->wq[(p->wq_head + p->wq_len) % p->wq_cap] = l;
	p->wq_len++;
	l->queued = true;
}

int
rdp_lease_on_fin(struct rdp_lease_pool *p, struct rdp_lease *l)
{
	if (l->fins == 0)
		return -EPROTO;
	l->fins--;
	rdp_lease_fin_set_(p, p->fin_free + 1);
	return 0;
}

int
rdp_lease_on_give_back(struct rdp_lease_pool *p, struct rdp_lease *l, uint32_t extra)
{
	uint64_t n = (uint64_t)extra + 1;

	if (n > l->out || n > l->lease || l->lease - n < p->floor)
		return -EPROTO;
	l->out -= (uint32_t)n;
	l->lease -= (uint32_t)n;
	add32(&p->free, (uint32_t)n);
	count(&p->given_back, n);
	rdp_lease_serve_(p);
	return 0;
}
