/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-sided operations (rdp_rdma.h): regions (application memory, or
 * memory the device allocates) and their remote descriptors, and RDMA WRITE and READ queued on an endpoint.
 * An operation travels as a header from the endpoint's send pool whose
 * buffer holds what the WR needs (struct ep_rdma): in the send queue, in
 * order with the messages, tracked by its WR's sequence number, and back
 * to the application as its event. So it completes, or fails in a flush,
 * exactly as a message does, once. lib/credit decides when it may go.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>

#include "ep_private.h"
#include "rdp_rdma.h"
#include "rdp_why.h"

struct rdp_region {
	struct rdp_mr *mr[EP_MAX_DEVS]; /* one per device; mr[0] owns the memory of
					 * rdp_region_alloc() */
	void *addr;
	size_t len;
	unsigned int access;   /* enum rdp_region_access */
	atomic_uint inflight;  /* operations queued on it and not reported yet */
};

#define REGION_ACCESS_ALL (RDP_REGION_REMOTE_WRITE | RDP_REGION_REMOTE_READ)

/* ---------------------------------------------------------------------- */
/* Regions and descriptors                                                */
/* ---------------------------------------------------------------------- */

/* The device access a region asks for: local write, and what it grants its peers. */
static unsigned int
region_dev_access(unsigned int access)
{
	unsigned int dev_access = RDP_ACCESS_LOCAL_WRITE;

	if (access & RDP_REGION_REMOTE_WRITE)
		dev_access |= RDP_ACCESS_REMOTE_WRITE;
	if (access & RDP_REGION_REMOTE_READ)
		dev_access |= RDP_ACCESS_REMOTE_READ;
	return dev_access;
}

/* The arguments every region takes; 0, or a negative errno with its message set. */
static int
region_args_check(const char *fn, size_t len, unsigned int access)
{
	if (!rdp_rt.up)
		return rdp_err_set(ENODEV, "%s: rdmaplane is not initialised", fn);
	if (len == 0)
		return rdp_err_set(EINVAL, "%s: zero length", fn);
	if ((access & ~REGION_ACCESS_ALL) != 0)
		return rdp_err_set(EINVAL, "%s: unknown access flags 0x%x", fn, access);
	return 0;
}

/*
 * A region around MR @p mr of the first device, registered with every other
 * device too; NULL (rte_errno set) when @p mr is NULL, memory is short or
 * a device refuses: every MR is freed then.
 */
static struct rdp_region *
region_new(const char *fn, struct rdp_mr *mr, unsigned int access)
{
	struct rdp_region *r;
	unsigned int d;

	if (mr == NULL)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		(void)rdp_mr_free(mr);
		rdp_err_set(ENOMEM, "%s: out of memory", fn);
		return NULL;
	}
	r->mr[0] = mr;
	r->addr = mr->addr;
	r->len = mr->length;    /* what was asked: a driver rounds only the mapping */
	r->access = access;
	atomic_init(&r->inflight, 0);
	for (d = 1; d < rdp_rt.nb_devs; d++) {
		r->mr[d] = rdp_mr_reg(rdp_rt.devs[d].pd, r->addr, r->len,
				      region_dev_access(access));
		if (r->mr[d] == NULL) {
			int err = rte_errno;
			char why[RDP_ERR_MSG_MAX];

			snprintf(why, sizeof(why), "device %s: %s", rdp_rt.devs[d].attr.name,
				 rdp_err_msg());
			while (d-- > 0)
				(void)rdp_mr_free(r->mr[d]);
			free(r);
			rdp_err_set(err, "%s: %s", fn, why);
			return NULL;
		}
	}
	return r;
}

struct rdp_region *
rdp_region_register(void *addr, size_t len, unsigned int access)
{
	static const char fn[] = "rdp_region_register";

	if (addr == NULL) {
		rdp_err_set(EINVAL, "%s: NULL address", fn);
		return NULL;
	}
	if (region_args_check(fn, len, access) < 0)
		return NULL;
	return region_new(fn, rdp_mr_reg(rdp_rt.devs[0].pd, addr, len, region_dev_access(access)),
			  access);
}

struct rdp_region *
rdp_region_alloc(size_t len, unsigned int access, int socket)
{
	static const char fn[] = "rdp_region_alloc";

	if (region_args_check(fn, len, access) < 0)
		return NULL;
	if (socket < -1 || socket >= RTE_MAX_NUMA_NODES) {
		rdp_err_set(EINVAL, "%s: socket %d, expected -1 or 0..%d", fn, socket,
			    RTE_MAX_NUMA_NODES - 1);
		return NULL;
	}
	return region_new(fn, rdp_mem_mr_alloc(fn, rdp_rt.devs[0].pd, len, socket,
					       region_dev_access(access) | rdp_rt.pages),
			  access);
}

void *
rdp_region_addr(const struct rdp_region *r)
{
	return r->addr;
}

int
rdp_region_deregister(struct rdp_region *r)
{
	unsigned int d;
	int ret;

	if (r == NULL)
		return 0;
	if (atomic_load(&r->inflight) != 0)
		return rdp_err_set(EBUSY, "rdp_region_deregister: %u operations still use the "
				   "region", atomic_load(&r->inflight));
	/* the other devices' first: rdp_mr_free() of mr[0] frees the memory of
	 * an MR rdp_mr_alloc() made */
	for (d = EP_MAX_DEVS; d-- > 0;) {
		if (r->mr[d] == NULL)
			continue;
		ret = rdp_mr_free(r->mr[d]);
		if (ret < 0)
			return ret;
		r->mr[d] = NULL;
	}
	free(r);
	return 0;
}

void
rdp_region_rdesc(const struct rdp_region *r, struct rdp_rdesc *d)
{
	d->addr = (uintptr_t)r->addr;
	d->len = r->len;
	d->rkey = r->mr[0]->rkey;
	d->access = r->access;
}

void
rdp_ep_region_rdesc(const struct rdp_ep *ep, const struct rdp_region *r, struct rdp_rdesc *d)
{
	rdp_region_rdesc(r, d);
	d->rkey = r->mr[ep->ld->idx]->rkey;
}

/* Wire layout: addr 8, len 8, rkey 4, access 4, check 4 (all little-endian). */
enum { RD_ADDR = 0, RD_LEN = 8, RD_RKEY = 16, RD_ACCESS = 20, RD_CHECK = 24 };
_Static_assert(RD_CHECK + 4 == RDP_RDESC_LEN, "descriptor layout and length disagree");

/* Catches a descriptor taken from the wrong bytes, not a forged one. */
static uint32_t
rdesc_check(const uint8_t *buf)
{
	uint32_t h = 0x9e3779b9u;
	unsigned int i;

	for (i = 0; i < RD_CHECK; i++)
		h = (h ^ buf[i]) * 0x01000193u;
	return h;
}

static void
put64le(uint8_t *p, uint64_t v)
{
	v = rte_cpu_to_le_64(v);
	memcpy(p, &v, 8);
}

static void
put32le(uint8_t *p, uint32_t v)
{
	v = rte_cpu_to_le_32(v);
	memcpy(p, &v, 4);
}

static uint64_t
get64le(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return rte_le_to_cpu_64(v);
}

static uint32_t
get32le(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return rte_le_to_cpu_32(v);
}

void
rdp_rdesc_encode(const struct rdp_rdesc *d, uint8_t buf[RDP_RDESC_LEN])
{
	put64le(buf + RD_ADDR, d->addr);
	put64le(buf + RD_LEN, d->len);
	put32le(buf + RD_RKEY, d->rkey);
	put32le(buf + RD_ACCESS, d->access);
	put32le(buf + RD_CHECK, rdesc_check(buf));
}

int
rdp_rdesc_decode(const uint8_t *buf, size_t len, struct rdp_rdesc *d, char *why, size_t why_len)
{
	uint32_t check;

	memset(d, 0, sizeof(*d));
	if (len != RDP_RDESC_LEN)
		return rdp_why(why, why_len, EPROTO, "remote descriptor of %zu bytes, expected %d",
			       len, RDP_RDESC_LEN);
	check = get32le(buf + RD_CHECK);
	if (check != rdesc_check(buf))
		return rdp_why(why, why_len, EPROTO, "field 'check' = 0x%08x, expected 0x%08x "
			       "(not a remote descriptor)", check, rdesc_check(buf));
	d->addr = get64le(buf + RD_ADDR);
	d->len = get64le(buf + RD_LEN);
	d->rkey = get32le(buf + RD_RKEY);
	d->access = get32le(buf + RD_ACCESS);
	if (d->len == 0)
		return rdp_why(why, why_len, EPROTO, "field 'len' = 0, expected at least 1");
	if (d->addr + d->len < d->addr)
		return rdp_why(why, why_len, EPROTO, "fields 'addr' = 0x%" PRIx64 " and 'len' = %"
			       PRIu64 " wrap around the address space", d->addr, d->len);
	if ((d->access & ~REGION_ACCESS_ALL) != 0 || d->access == 0)
		return rdp_why(why, why_len, EPROTO, "field 'access' = 0x%x, expected 1..3",
			       d->access);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Operations on an endpoint                                              */
/* ---------------------------------------------------------------------- */

/* Is [off, off + len) inside [0, size)? */
static inline bool
range_ok(uint64_t off, uint64_t len, uint64_t size)
{
	return len <= size && off <= size - len;
}

/* A carrier from the send pool made into an operation (no region, no owner, no user_data). */
static void
carrier_fill(struct rdp_ep *ep, struct rdp_msg *c, uint8_t opcode, uint64_t laddr,
	     uint32_t lkey, uint64_t raddr, uint32_t rkey, uint32_t len)
{
	struct ep_rdma *d = rdma_of(c);

	*d = (struct ep_rdma){ .laddr = laddr, .raddr = raddr, .len = len, .lkey = lkey,
			       .rkey = rkey, .opcode = opcode };
	c->flags = MSG_F_RDMA;
	c->pkt_len = len;
	c->user_data = 0;
	c->ep = ep;
}

/* Check an operation before it is accepted; 0 or a positive errno. */
static int
op_check(const struct rdp_ep *ep, const struct rdp_rdma_op *op)
{
	unsigned int need;

	if (op->opcode != RDP_RDMA_WRITE && op->opcode != RDP_RDMA_READ)
		return EINVAL;
	if (op->region == NULL || op->len == 0 || !range_ok(op->offset, op->len, op->region->len) ||
	    !range_ok(op->remote_offset, op->len, op->remote.len) ||
	    op->remote.addr + op->remote.len < op->remote.addr)
		return EINVAL;
	need = op->opcode == RDP_RDMA_WRITE ? RDP_REGION_REMOTE_WRITE : RDP_REGION_REMOTE_READ;
	if (!(op->remote.access & need))
		return EINVAL;
	if (op->opcode == RDP_RDMA_READ && ep->credit.rd_depth == 0)
		return ENOTSUP;
	return 0;
}

/* Count @p n operations on their regions before they are queued: one add per run on a region. */
static void
region_hold(const struct rdp_rdma_op *ops, uint16_t n)
{
	uint16_t i = 0;

	while (i < n) {
		uint16_t j = i + 1;

		while (j < n && ops[j].region == ops[i].region)
			j++;
		atomic_fetch_add(&ops[i].region->inflight, j - i);
		i = j;
	}
}

uint16_t
rdp_ep_rdma_burst(struct rdp_ep *ep, const struct rdp_rdma_op *ops, uint16_t n)
{
	struct rdp_msg *carriers[64];
	uint16_t done = 0;

	if (unlikely(ep_get_state(ep) != RDP_EP_ESTABLISHED)) {
		rte_errno = ENOTCONN;
		return 0;
	}
	while (done < n) {
		uint16_t chunk = RTE_MIN((uint16_t)RTE_DIM(carriers), (uint16_t)(n - done));
		uint16_t i, k;
		int err = 0;

		for (i = 0; i < chunk; i++) {
			err = op_check(ep, &ops[done + i]);
			if (err != 0)
				break;
		}
		chunk = i;
		if (chunk > 0 && rdp_pool_get_bulk(ep->ld->send_pool, carriers, chunk) < 0) {
			rte_errno = ENOBUFS;
			return done;
		}
		for (i = 0; i < chunk; i++) {
			const struct rdp_rdma_op *op = &ops[done + i];

			carrier_fill(ep, carriers[i], op->opcode,
				     (uintptr_t)op->region->addr + op->offset,
				     op->region->mr[ep->ld->idx]->lkey,
				     op->remote.addr + op->remote_offset, op->remote.rkey, op->len);
			rdma_of(carriers[i])->region = op->region;
			carriers[i]->user_data = op->user_data;
		}
		region_hold(&ops[done], chunk);
		k = ep_queue_sends(ep, carriers, chunk);
		for (i = k; i < chunk; i++) {
			/* not accepted: as if never asked */
			atomic_fetch_sub(&rdma_of(carriers[i])->region->inflight, 1);
			rdp_pool_put_bulk(ep->ld->send_pool, &carriers[i], 1);
		}
		done += k;
		if (k < chunk || err != 0) {
			rte_errno = k < chunk ? ENOBUFS : err;
			return done;
		}
	}
	return done;
}

uint32_t
rdp_ep_read_depth(const struct rdp_ep *ep)
{
	return ep->credit.rd_depth;
}

void
ep_rdma_queue_internal(struct rdp_ep *ep, struct rdp_msg *c, struct rdp_msg *owner,
		       uint64_t laddr, uint32_t lkey, uint64_t raddr, uint32_t rkey, uint32_t len)
{
	carrier_fill(ep, c, RDP_RDMA_READ, laddr, lkey, raddr, rkey, len);
	rdma_of(c)->owner = owner;
	/*
	 * A receiver's READs go before its sends: its data may wait for
	 * credits the peer returns only once these READs and their FINs free
	 * the peer's send arena (ep_rndv.c).
	 */
	ep_q_push(&ep->rd_head, &ep->rd_tail, c);
	ep_busy(ep);
}

void
ep_rdma_done(struct rdp_ep *ep, struct rdp_msg *m, int status)
{
	struct ep_rdma *d = rdma_of(m);

	if (d->owner != NULL) {
		ep_rndv_read_done(ep, m, d->owner, status);
		return;
	}
	m->status = status;
	if (status == 0) {
		RDP_STAT_ADD(ep->stats.rdma_done, 1);
		RDP_STAT_ADD(ep->stats.rdma_bytes, d->len);
		m->event = RDP_EV_RDMA_DONE;
	} else {
		RDP_STAT_ADD(ep->stats.rdma_failed, 1);
		m->event = RDP_EV_RDMA_FAILED;
	}
	/* the region may go once its last operation is reported */
	atomic_fetch_sub_explicit(&d->region->inflight, 1, memory_order_release);
	ep_report_push(ep, m);
}

const char *
ep_rdma_describe(const struct rdp_msg *m, char *buf, size_t len)
{
	const struct ep_rdma *d = rdma_of(m);

	snprintf(buf, len, "RDMA %s of %u bytes %s remote 0x%" PRIx64 " (rkey 0x%x, user_data %"
		 PRIu64 ")", d->opcode == RDP_RDMA_READ ? "READ" : "WRITE", d->len,
		 d->opcode == RDP_RDMA_READ ? "from" : "to", d->raddr, d->rkey, m->user_data);
	return buf;
}
