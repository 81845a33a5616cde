/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Parameter checks of the credit protocol: every relation the proof in
 * docs/credit-protocol.md relies on is refused here, naming the parameters.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rdp_credit.h"

static int
broken(char *why, size_t len, const char *side, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int
broken(char *why, size_t len, const char *side, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(why, len, "%s", side);
	if (n < 0 || (size_t)n >= len)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(why + n, len - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static uint32_t
div_ceil(uint32_t a, uint32_t b)
{
	return (a + b - 1) / b;
}

static int
check_side(const struct rdp_credit_params *p, const char *side, char *why, size_t len)
{
	uint32_t c;

	if (p->signal_interval < 2)
		return broken(why, len, side, "signal_interval=%u: must be >= 2 "
			      "(an unsignaled ack needs a run of at least one)",
			      p->signal_interval);
	/* 64-bit: 2 * T_sig wraps in 32 bits and would let T_sig >= 2^31 pass */
	if (p->sq_size < UINT64_C(2) * p->signal_interval)
		return broken(why, len, side, "sq_size=%u, signal_interval=%u: need "
			      "sq_size >= 2*signal_interval", p->sq_size, p->signal_interval);
	if ((uint64_t)p->sq_size + p->rq_size > UINT32_MAX)
		return broken(why, len, side, "sq_size=%u, rq_size=%u: the CQ budget "
			      "sq_size+rq_size must be <= %u", p->sq_size, p->rq_size, UINT32_MAX);
	if (p->rq_size <= p->ack_reserve)
		return broken(why, len, side, "rq_size=%u, ack_reserve=%u: need "
			      "rq_size > ack_reserve", p->rq_size, p->ack_reserve);
	c = p->rq_size - p->ack_reserve;
	if (c > RDP_CREDIT_IMM_MAX)
		return broken(why, len, side, "rq_size=%u, ack_reserve=%u: rq_size-ack_reserve "
			      "must be <= %u", p->rq_size, p->ack_reserve, RDP_CREDIT_IMM_MAX);
	if (p->ack_threshold < 1 || p->ack_threshold > c)
		return broken(why, len, side, "ack_threshold=%u: need 1 <= ack_threshold <= "
			      "rq_size-ack_reserve (%u)", p->ack_threshold, c);
	if (p->ack_reserve < div_ceil(c, p->ack_threshold))
		return broken(why, len, side, "ack_reserve=%u, rq_size=%u, ack_threshold=%u: need "
			      "ack_reserve >= ceil((rq_size-ack_reserve)/ack_threshold) = %u",
			      p->ack_reserve, p->rq_size, p->ack_threshold,
			      div_ceil(c, p->ack_threshold));
	return 0;
}

int
rdp_credit_params_check(const struct rdp_credit_params *p, char *why, size_t len)
{
	return check_side(p, "", why, len);
}

/* Our reserve must hold every pure ack the other side can have in flight. */
static int
check_reserve(const struct rdp_credit_params *holder, const struct rdp_credit_params *acker,
	      const char *holder_name, const char *acker_name, char *why, size_t len)
{
	uint32_t acks = div_ceil(acker->rq_size - acker->ack_reserve, acker->ack_threshold);

	if (holder->ack_reserve < acks)
		return broken(why, len, "", "%s ack_reserve=%u cannot hold the %u pure acks the "
			      "%s may have in flight (ceil((rq_size=%u - ack_reserve=%u) / "
			      "ack_threshold=%u))", holder_name, holder->ack_reserve, acks,
			      acker_name, acker->rq_size, acker->ack_reserve,
			      acker->ack_threshold);
	return 0;
}

int
rdp_credit_init(struct rdp_credit *c, const struct rdp_credit_params *local,
		const struct rdp_credit_params *peer, char *why, size_t len)
{
	int ret;

	ret = check_side(local, "local ", why, len);
	if (ret == 0)
		ret = check_side(peer, "peer ", why, len);
	if (ret == 0)
		ret = check_reserve(local, peer, "local", "peer", why, len);
	if (ret == 0)
		ret = check_reserve(peer, local, "peer", "local", why, len);
	if (ret < 0)
		return ret;
	memset(c, 0, sizeof(*c));
	c->sq_size = local->sq_size;
	c->signal_interval = local->signal_interval;
	c->ack_threshold = local->ack_threshold;
	c->rc = peer->rq_size - peer->ack_reserve;
	c->rc_max = c->rc;
	return 0;
}

static uint32_t
window(const struct rdp_credit_params *p, const struct rdp_credit_lease *l)
{
	return l->lease_max != 0 ? l->lease_max : p->rq_size - p->ack_reserve;
}

/*
 * Pure acks a leasing side can have in flight towards a window of @p w:
 * each carries at least @p t_ack credits, but one sent when none of the
 * lease is lent out, and that one is alone.
 */
static uint32_t
leasing_acks(uint32_t w, uint32_t t_ack)
{
	return w / t_ack > 0 ? w / t_ack : 1;
}

uint32_t
rdp_credit_lease_reserve(const struct rdp_credit_params *peer,
			 const struct rdp_credit_lease *peer_lease)
{
	uint32_t w = window(peer, peer_lease);

	if (peer_lease->lease_max != 0)
		return leasing_acks(w, peer->ack_threshold);
	return w / peer->ack_threshold + 1;
}

/* A side that does not lease holds the other's pure acks in its A_rq. */
static int
check_reserve_lease(const struct rdp_credit_params *holder, const struct rdp_credit_lease *hl,
		    const struct rdp_credit_params *acker, const struct rdp_credit_lease *al,
		    const char *holder_name, const char *acker_name, char *why, size_t len)
{
	uint32_t w = window(acker, al), acks;

	if (hl->lease_max != 0)
		return 0; /* on the SRQ, taken at admission */
	if (al->lease_max == 0)
		return check_reserve(holder, acker, holder_name, acker_name, why, len);
	acks = leasing_acks(w, acker->ack_threshold);
	if (holder->ack_reserve < acks)
		return broken(why, len, "", "%s ack_reserve=%u cannot hold the %u pure acks the "
			      "leasing %s may have in flight (max(1, floor(lease_max=%u / "
			      "ack_threshold=%u)))", holder_name, holder->ack_reserve, acks,
			      acker_name, w, acker->ack_threshold);
	return 0;
}

static int
check_lease_terms(const struct rdp_credit_params *p, const struct rdp_credit_lease *l,
		  const char *side, char *why, size_t len)
{
	if (l->lease_max != 0 && (l->floor < 1 || l->floor > l->lease_max))
		return broken(why, len, side, "srq_floor=%u, srq_lease_max=%u: need 1 <= "
			      "srq_floor <= srq_lease_max", l->floor, l->lease_max);
	if (window(p, l) > RDP_CREDIT_IMM_LEASE_MAX)
		return l->lease_max != 0 ?
			broken(why, len, side, "srq_lease_max=%u: must be <= %u (credits are 15 "
			       "bits where a side leases)", l->lease_max, RDP_CREDIT_IMM_LEASE_MAX) :
			broken(why, len, side, "rq_size=%u, ack_reserve=%u: rq_size-ack_reserve must "
			       "be <= %u towards a leasing peer (credits are 15 bits there)",
			       p->rq_size, p->ack_reserve, RDP_CREDIT_IMM_LEASE_MAX);
	return 0;
}

int
rdp_credit_init_lease(struct rdp_credit *c, const struct rdp_credit_params *local,
		      const struct rdp_credit_lease *local_lease,
		      const struct rdp_credit_params *peer,
		      const struct rdp_credit_lease *peer_lease, char *why, size_t len)
{
	int ret;

	if (local_lease->lease_max == 0 && peer_lease->lease_max == 0)
		return rdp_credit_init(c, local, peer, why, len);
	ret = check_side(local, "local ", why, len);
	if (ret == 0)
		ret = check_side(peer, "peer ", why, len);
	if (ret == 0)
		ret = check_lease_terms(local, local_lease, "local ", why, len);
	if (ret == 0)
		ret = check_lease_terms(peer, peer_lease, "peer ", why, len);
	if (ret == 0)
		ret = check_reserve_lease(local, local_lease, peer, peer_lease, "local", "peer",
					  why, len);
	if (ret == 0)
		ret = check_reserve_lease(peer, peer_lease, local, local_lease, "peer", "local",
					  why, len);
	if (ret < 0)
		return ret;
	memset(c, 0, sizeof(*c));
	c->sq_size = local->sq_size;
	c->signal_interval = local->signal_interval;
	c->ack_threshold = local->ack_threshold;
	c->rc = peer_lease->lease_max != 0 ? peer_lease->floor : peer->rq_size - peer->ack_reserve;
	c->rc_max = window(peer, peer_lease);
	c->peer_lease_tack = peer_lease->lease_max != 0 ? peer->ack_threshold : 0;
	return 0;
}
