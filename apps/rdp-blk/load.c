/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdp-blk load: a block load generator over rdmaplane endpoints.
 *
 * Every endpoint keeps `qd` requests in flight from its poller lcore
 * (run-to-completion): a reply is checked, timed and counted in on_recv,
 * which starts the next request in the same slot. The main lcore only
 * starts the work (rdp_session_call), prints a progress line per second and
 * the final table.
 *
 * With --verify every written block describes itself (blk_verify.h) and
 * every block read is checked against the generations acknowledged so far;
 * a request holds its blocks until its reply, so the expected content is
 * exact. The first mismatch stops the run and names the block.
 *
 * Nothing is allocated per request: slots, tags and histograms are set up
 * before the run, messages come from the poller's registered pool.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_lcore.h>

#include "rdp_clock.h"
#include "blk.h"
#include "blk_proto.h"
#include "blk_verify.h"
#include "perf_hist.h"
#include "rdp_build_config.h"
#include "rdp_ep.h"
#include "rdp_rdma.h"
#include "rdp_session.h"

#define MAX_LOAD_EPS 1024
#define MAX_QD 4096
/* A tag is (sequence << TAG_SLOT_BITS) | slot. */
#define TAG_SLOT_BITS 16
/*
 * --rdma-min auto (the default): on shm the blocks stay in the messages,
 * which measured faster (devtools/bench/blk-rdma-min.sh); on verbs they
 * move one-sided from RDMA_MIN_VERBS up (docs/rdp-blk.md, "Performance").
 */
#define RDMA_MIN_AUTO (UINT32_MAX - 1)
#define RDMA_MIN_VERBS (64u * 1024)
/* Registered buffers of one-sided requests, at most, in all endpoints. */
#define RDMA_BUF_MAX (4ull << 30)
/* Blocks tried before a request waits for a held one to be let go. */
#define PICK_TRIES 8

_Static_assert(MAX_QD < (1u << TAG_SLOT_BITS), "slot numbers fit in a tag");

enum { DIR_READ = 0, DIR_WRITE = 1 };

static const char *const rw_names[RW_MAX] = {
	[RW_RANDREAD] = "randread", [RW_RANDWRITE] = "randwrite", [RW_READ] = "read",
	[RW_WRITE] = "write", [RW_RANDRW] = "randrw",
};

/* One request in flight. */
struct load_slot {
	uint64_t tag;
	uint64_t block;
	uint64_t t0;     /* TSC when sent */
	uint16_t count;
	uint8_t op;      /* enum blk_op */
	bool busy;
	bool waiting;    /* offered while not connected: goes out on the next endpoint */
};

/* One endpoint: written by its poller lcore; counters read by the main lcore. */
struct load_ep {
	struct rdp_session *sess;
	struct rdp_ep *ep;    /* established, or NULL (its poller lcore) */
	unsigned int index;
	unsigned int lcore;
	struct load_slot *slots;
	struct rdp_region *reg; /* one-sided: each slot's buffer of bs bytes, in slot order */
	uint32_t *idle;       /* stack of idle slot numbers */
	uint32_t nb_idle;
	uint64_t seq;
	uint64_t rng;
	bool starved;         /* a request could not start: retry on the next event */
	bool op_kept;         /* next_op is what that request was: retried as it was */
	uint8_t next_op;
	bool stopped;         /* its lcore saw the run end: it starts no request (release) */
	bool established;     /* connected once */
	bool closed;
	int err;
	uint64_t reconnects;  /* connected again after a loss */
	uint64_t lost;        /* requests in flight when a connection was lost */
	uint32_t max_msg;     /* the endpoint's message size (set before `established`) */
	bool info;            /* the geometry came */
	uint64_t nblocks;
	uint32_t max_count;
	uint32_t inflight;
	uint64_t ios[2];
	uint64_t bytes[2];
	uint64_t onesided;      /* of them, requests whose data moved one-sided */
	uint64_t checked;       /* blocks verified */
	uint64_t checked_acked; /* ... that held an acknowledged write */
	struct perf_hist hist[2];
} __rte_cache_aligned;

/* The endpoints of one poller lcore. */
struct load_lcore {
	struct load_ep **eps;
	unsigned int n;
	bool starved;
};

static struct {
	const struct load_opts *o;
	struct load_ep *eps;
	unsigned int n;
	struct load_lcore lc[RTE_MAX_LCORE];
	uint16_t count;       /* blocks per request */
	uint32_t rdma_min;    /* --rdma-min resolved (auto: by driver); UINT32_MAX: off */
	bool onesided;        /* READ/WRITE data moves one-sided (bs >= rdma_min) */
	uint64_t nreq;        /* request positions in the range */
	bool verify;
	struct blk_gens gens;
	bool running;         /* start new requests */
	uint64_t seq_next;    /* next sequential position */
	int failed;           /* 0, 1 while `why` is written, 2 once written */
	char why[512];
	uint64_t mismatches;
	uint64_t error_replies;
	uint32_t err_status;   /* the first error reply: errno, op, blocks */
	uint8_t err_op;
	uint16_t err_count;
	uint64_t err_block;
	uint64_t reconnects;   /* report(): summed over the endpoints */
	uint64_t lost;
	uint64_t onesided_ios;
} ld;

static inline void
cnt_add(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, *c + v, __ATOMIC_RELAXED);
}

static inline uint64_t
cnt(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

/* The first failure stops the run; the main lcore prints it. */
static void load_fail(const char *fmt, ...) __rte_format_printf(1, 2);

static void
load_fail(const char *fmt, ...)
{
	int zero = 0;
	va_list ap;

	__atomic_store_n(&ld.running, false, __ATOMIC_RELEASE);
	if (!__atomic_compare_exchange_n(&ld.failed, &zero, 1, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		return;
	va_start(ap, fmt);
	vsnprintf(ld.why, sizeof(ld.why), fmt, ap);
	va_end(ap);
	__atomic_store_n(&ld.failed, 2, __ATOMIC_RELEASE);
}

static inline uint64_t
rnd(struct load_ep *le)
{
	uint64_t x = le->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	le->rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* ---------------------------------------------------------------------- */
/* Datapath (poller lcores)                                               */
/* ---------------------------------------------------------------------- */

static bool
sequential(void)
{
	return ld.o->check || ld.o->rw == RW_READ || ld.o->rw == RW_WRITE;
}

static uint8_t
pick_op(struct load_ep *le)
{
	switch (ld.o->rw) {
	case RW_RANDREAD:
	case RW_READ:
		return BLK_OP_READ;
	case RW_RANDRW:
		return rnd(le) % 100 < ld.o->rwmixread ? BLK_OP_READ : BLK_OP_WRITE;
	default:
		return ld.o->check ? BLK_OP_READ : BLK_OP_WRITE;
	}
}

enum pick { PICK_OK, PICK_BUSY, PICK_DONE };

/* Choose the blocks of a request and, with --verify, hold them. */
static enum pick
pick_block(struct load_ep *le, uint8_t op, uint64_t *block)
{
	unsigned int t;

	for (t = 0; t < PICK_TRIES; t++) {
		uint64_t pos;

		if (sequential()) {
			pos = __atomic_fetch_add(&ld.seq_next, 1, __ATOMIC_RELAXED);
			if (ld.o->check && pos >= ld.nreq)
				return PICK_DONE; /* one pass only */
			pos %= ld.nreq;
		} else {
			pos = rnd(le) % ld.nreq;
		}
		*block = pos * ld.count;
		if (!ld.verify || blk_gens_take(&ld.gens, *block, ld.count, op == BLK_OP_WRITE))
			return PICK_OK;
		if (ld.o->check) {
			/* a check reads each block once and nothing else holds them */
			load_fail("check: block %" PRIu64 " is held by another request", *block);
			return PICK_DONE;
		}
	}
	return PICK_BUSY;
}

static void
mark_starved(struct load_ep *le)
{
	__atomic_store_n(&le->starved, true, __ATOMIC_RELAXED); /* read by kick_starved() */
	ld.lc[le->lcore].starved = true;
}

/* A one-segment view of slot @p si's one-sided buffer, for the block cursors. */
static struct rdp_msg *
slot_view(struct rdp_msg *view, const struct load_ep *le, uint32_t si)
{
	memset(view, 0, sizeof(*view));
	view->data = (uint8_t *)rdp_region_addr(le->reg) + (size_t)si * ld.o->bs;
	view->data_len = ld.o->bs;
	view->pkt_len = ld.o->bs;
	view->nb_segs = 1;
	return view;
}

/* A request ended (or never left): let its blocks and slot go. */
static void
slot_end(struct load_ep *le, struct load_slot *s, enum blk_gen_end how)
{
	if (ld.verify && (s->op == BLK_OP_READ || s->op == BLK_OP_WRITE))
		blk_gens_release(&ld.gens, s->block, s->count,
				 s->op == BLK_OP_READ ? BLK_GEN_READ : how);
	s->busy = false;
	le->idle[le->nb_idle++] = (uint32_t)(s - le->slots);
}

/* Send one request in an idle slot; false when it could not start. */
static bool
send_req(struct load_ep *le, uint8_t op)
{
	uint16_t count = op == BLK_OP_READ || op == BLK_OP_WRITE ? ld.count : 0;
	uint8_t flags = count > 0 && ld.onesided ? BLK_F_RDMA : 0;
	struct load_slot *s;
	struct rdp_msg *m;
	struct blk_req q;
	uint64_t block = 0;
	uint32_t si;
	enum pick p;

	m = rdp_session_msg_alloc(le->sess, blk_req_len(op, count, flags));
	if (m == NULL) {
		if (rte_errno == ENOBUFS)
			mark_starved(le); /* pool empty: buffers come back with completions */
		return false;
	}
	if (count > 0) {
		p = pick_block(le, op, &block);
		if (p != PICK_OK) {
			rdp_msg_free(m);
			if (p == PICK_BUSY)
				mark_starved(le);
			return false;
		}
	}
	si = le->idle[--le->nb_idle];
	s = &le->slots[si];
	s->tag = (++le->seq << TAG_SLOT_BITS) | si;
	s->block = block;
	s->count = count;
	s->op = op;
	s->busy = true;
	s->waiting = le->ep == NULL;
	q = (struct blk_req){ .magic = BLK_REQ_MAGIC, .opcode = op, .count = count,
			      .flags = flags, .tag = s->tag, .block = block };
	blk_req_encode(&q, m->data); /* a segment holds >= 64 bytes */
	if (flags & BLK_F_RDMA) {
		struct rdp_rdesc d;
		uint8_t raw[RDP_RDESC_LEN];

		/* the key of the device the request leaves on */
		if (m->ep != NULL)
			rdp_ep_region_rdesc(m->ep, le->reg, &d);
		else
			rdp_region_rdesc(le->reg, &d);
		d.addr += (uint64_t)si * ld.o->bs;
		d.len = (uint64_t)count * BLK_BLOCK_SIZE;
		rdp_rdesc_encode(&d, raw);
		rdp_msg_write(m, BLK_HDR_SIZE, raw, sizeof(raw));
	}
	if (op == BLK_OP_WRITE && ld.verify) {
		struct rdp_msg view;
		struct blk_cur c;
		uint16_t i;

		if (flags & BLK_F_RDMA)
			blk_cur_init(&c, slot_view(&view, le, si), 0);
		else
			blk_cur_init(&c, m, BLK_HDR_SIZE);
		for (i = 0; i < count; i++) {
			uint64_t w = __atomic_load_n(&ld.gens.word[block + i], __ATOMIC_RELAXED);

			blk_vblock_fill(&c, ld.gens.run, block + i, blk_gen_issued(w));
		}
	}
	s->t0 = rte_rdtsc();
	if (rdp_session_send_burst(le->sess, &m, 1) != 1) {
		rdp_msg_free(m);
		slot_end(le, s, BLK_GEN_UNSENT);
		return false;
	}
	__atomic_store_n(&le->inflight, le->inflight + 1, __ATOMIC_RELAXED);
	return true;
}

static void
fill(struct load_ep *le)
{
	while (le->nb_idle > 0 && __atomic_load_n(&ld.running, __ATOMIC_ACQUIRE)) {
		/* a request that could not start keeps its operation, so that the
		 * mix is what was asked however long one kind waits (as fio) */
		uint8_t op = le->op_kept ? le->next_op : pick_op(le);

		le->op_kept = !send_req(le, op);
		if (le->op_kept) {
			le->next_op = op;
			break;
		}
	}
}

/* Requests of this lcore's endpoints that could not start: try again. */
static void
retry_starved(unsigned int lcore)
{
	struct load_lcore *lc = &ld.lc[lcore];
	unsigned int i;

	if (!lc->starved)
		return;
	lc->starved = false;
	for (i = 0; i < lc->n; i++) {
		if (lc->eps[i]->starved) {
			__atomic_store_n(&lc->eps[i]->starved, false, __ATOMIC_RELAXED);
			fill(lc->eps[i]);
		}
	}
}

static void
verify_read(struct load_ep *le, struct rdp_msg *m, const struct load_slot *s)
{
	struct rdp_msg view;
	struct blk_cur c;
	uint16_t i;

	if (ld.onesided) /* the blocks are in the slot's buffer, the reply is a header */
		blk_cur_init(&c, slot_view(&view, le, (uint32_t)(s - le->slots)), 0);
	else
		blk_cur_init(&c, m, BLK_HDR_SIZE);
	for (i = 0; i < s->count; i++) {
		uint64_t b = s->block + i;
		uint64_t w = __atomic_load_n(&ld.gens.word[b], __ATOMIC_ACQUIRE);
		struct blk_vresult res;
		char why[256];

		if (blk_vblock_check(&c, ld.gens.run, b, blk_gen_acked(w), blk_gen_issued(w),
				     &res, why, sizeof(why)) < 0) {
			__atomic_fetch_add(&ld.mismatches, 1, __ATOMIC_RELAXED);
			load_fail("verify: %s", why);
		}
		cnt_add(&le->checked, 1);
		if (blk_gen_acked(w) > 0)
			cnt_add(&le->checked_acked, 1);
	}
}

static void
on_reply(struct load_ep *le, struct rdp_msg *m, uint64_t now)
{
	uint8_t raw[BLK_HDR_SIZE];
	enum blk_gen_end how;
	struct load_slot *s;
	struct blk_rep p;
	uint32_t si;

	if (m->pkt_len < BLK_HDR_SIZE) {
		load_fail("endpoint %u: a reply of %u bytes", le->index, m->pkt_len);
		return;
	}
	rdp_msg_read(m, 0, raw, BLK_HDR_SIZE);
	blk_rep_decode(&p, raw);
	si = (uint32_t)(p.tag & ((1u << TAG_SLOT_BITS) - 1));
	if (p.magic != BLK_REP_MAGIC || si >= ld.o->qd || !le->slots[si].busy ||
	    le->slots[si].tag != p.tag) {
		load_fail("endpoint %u: a reply with magic %#x and tag %#" PRIx64 " answers no "
			  "request in flight", le->index, p.magic, p.tag);
		return;
	}
	s = &le->slots[si];
	how = BLK_GEN_ACKED;
	if (p.status != BLK_S_OK) {
		if (__atomic_fetch_add(&ld.error_replies, 1, __ATOMIC_RELAXED) == 0) {
			ld.err_op = s->op; /* read by the main lcore after drain() */
			ld.err_count = s->count;
			ld.err_block = s->block;
			ld.err_status = p.status;
		}
		load_fail("%s of %u block(s) at block %" PRIu64 " failed: errno %u, %s",
			  blk_op_str(s->op), s->count, s->block, p.status,
			  blk_status_str(p.status));
		how = BLK_GEN_UNKNOWN;
	} else if (p.opcode != s->op || p.count != s->count ||
		   m->pkt_len != blk_rep_len(s->op, s->count, ld.onesided ? BLK_F_RDMA : 0)) {
		load_fail("endpoint %u: a reply of %u bytes to a %s of %u block(s) says %s of %u",
			  le->index, m->pkt_len, blk_op_str(s->op), s->count,
			  blk_op_str(p.opcode), p.count);
		how = BLK_GEN_UNKNOWN;
	} else if (s->op == BLK_OP_INFO) {
		le->nblocks = p.nblocks;
		le->max_count = p.max_count;
		__atomic_store_n(&le->info, true, __ATOMIC_RELEASE);
	} else {
		int dir = s->op == BLK_OP_READ ? DIR_READ : DIR_WRITE;

		if (dir == DIR_READ && ld.verify)
			verify_read(le, m, s);
		hist_add(&le->hist[dir], now - s->t0);
		cnt_add(&le->ios[dir], 1);
		cnt_add(&le->bytes[dir], (uint64_t)s->count * BLK_BLOCK_SIZE);
		if (ld.onesided)
			cnt_add(&le->onesided, 1);
	}
	slot_end(le, s, how);
	/* release: drain() acquires it, then report() reads the histograms */
	__atomic_store_n(&le->inflight, le->inflight - 1, __ATOMIC_RELEASE);
}

static uint16_t
cli_on_recv(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	struct load_ep *le = arg;
	uint64_t now = rte_rdtsc();
	uint16_t i;

	RTE_SET_USED(ep);
	for (i = 0; i < n; i++) {
		on_reply(le, msgs[i], now);
		rdp_msg_free(msgs[i]);
	}
	fill(le);
	retry_starved(le->lcore);
	return n;
}

/* The slot of a request message (its tag is in the header). */
static struct load_slot *
req_slot(struct load_ep *le, const struct rdp_msg *m)
{
	uint8_t raw[BLK_HDR_SIZE];
	struct blk_req q;
	uint32_t si;

	if (m->pkt_len < BLK_HDR_SIZE)
		return NULL;
	rdp_msg_read(m, 0, raw, BLK_HDR_SIZE);
	blk_req_decode(&q, raw);
	si = (uint32_t)(q.tag & ((1u << TAG_SLOT_BITS) - 1));
	return si < ld.o->qd && le->slots[si].busy && le->slots[si].tag == q.tag ?
	       &le->slots[si] : NULL;
}

static void
cli_on_send(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	struct load_ep *le = arg;
	uint16_t i;

	for (i = 0; i < n; i++) {
		/*
		 * A request the session failed before it left (ep NULL: its wait
		 * ran out, the session gave up or closed) ends here; one an
		 * endpoint failed may have reached the server, and ends with the
		 * DISCONNECTED event.
		 */
		if (ep == NULL && msgs[i]->event == RDP_EV_SEND_FAILED) {
			struct load_slot *s = req_slot(le, msgs[i]);

			if (s != NULL) {
				slot_end(le, s, BLK_GEN_UNSENT);
				__atomic_store_n(&le->inflight, le->inflight - 1,
						 __ATOMIC_RELEASE);
			}
		}
		rdp_msg_free(msgs[i]);
	}
	retry_starved(le->lcore);
}

/* The connection went: no reply comes for what was sent on it. */
static void
lose_inflight(struct load_ep *le)
{
	uint32_t i, lost = 0;

	for (i = 0; i < ld.o->qd; i++) {
		struct load_slot *s = &le->slots[i];

		/* what was written may or may not have landed */
		if (s->busy && !s->waiting) {
			slot_end(le, s, BLK_GEN_UNKNOWN);
			lost++;
		}
	}
	cnt_add(&le->lost, lost);
	__atomic_store_n(&le->inflight, le->inflight - lost, __ATOMIC_RELEASE);
}

static void
cli_on_event(struct rdp_session *sess, const struct rdp_session_event *ev, void *arg)
{
	struct load_ep *le = arg;
	bool reconnect = ld.o->reconnect > 0;
	uint32_t i;

	RTE_SET_USED(sess);
	switch (ev->kind) {
	case RDP_SESSION_EV_ATTEMPT:
		break;
	case RDP_SESSION_EV_CONNECTED:
		le->ep = ev->ep;
		le->max_msg = rdp_ep_max_msg_size(ev->ep);
		/* what waited is on its way */
		for (i = 0; i < ld.o->qd; i++)
			le->slots[i].waiting = false;
		if (__atomic_load_n(&le->established, __ATOMIC_RELAXED)) {
			cnt_add(&le->reconnects, 1);
			fprintf(stderr, "rdp-blk load: endpoint %u: connected again to %s "
				"(attempt %u)\n", le->index, ld.o->connect, ev->attempt);
		}
		__atomic_store_n(&le->established, true, __ATOMIC_RELEASE);
		fill(le);
		break;
	case RDP_SESSION_EV_DISCONNECTED:
		le->ep = NULL;
		lose_inflight(le);
		if (!reconnect) {
			load_fail("endpoint %u to %s %s%s%s", le->index, ld.o->connect,
				  ev->err == -ESHUTDOWN ? "closed by the server" : "failed: ",
				  ev->err == -ESHUTDOWN ? "" : strerror(-ev->err),
				  ev->err == -ESHUTDOWN ? "" : " (the server is gone?)");
			__atomic_store_n(&le->err, ev->err, __ATOMIC_RELEASE);
		} else {
			fprintf(stderr, "rdp-blk load: endpoint %u: %s (%s); reconnecting in %u ms\n",
				le->index, ev->err == -ESHUTDOWN ? "closed by the server" :
				"connection lost", strerror(-ev->err), ev->delay_ms);
		}
		break;
	case RDP_SESSION_EV_ATTEMPT_FAILED:
		if (!reconnect) {
			load_fail("endpoint %u: cannot connect to %s: %s", le->index,
				  ld.o->connect, strerror(-ev->err));
			__atomic_store_n(&le->err, ev->err, __ATOMIC_RELEASE);
		}
		break;
	case RDP_SESSION_EV_GAVE_UP:
		load_fail("endpoint %u: no connection to %s for %.1f s (--reconnect): %s",
			  le->index, ld.o->connect, ld.o->reconnect, strerror(-ev->err));
		__atomic_store_n(&le->err, ev->err, __ATOMIC_RELEASE);
		break;
	case RDP_SESSION_EV_CLOSED:
		__atomic_store_n(&le->closed, true, __ATOMIC_RELEASE);
		break;
	}
}

static const struct rdp_ep_ops cli_ops = {
	.on_recv = cli_on_recv,
	.on_send = cli_on_send,
};

static void
kick(struct rdp_session *sess, void *arg)
{
	struct load_ep *le = arg;

	RTE_SET_USED(sess);
	__atomic_store_n(&le->starved, false, __ATOMIC_RELAXED);
	fill(le);
}

/* On the endpoint's lcore, after the run ended: no fill() is under way, none will start. */
static void
stop_ack(struct rdp_session *sess, void *arg)
{
	struct load_ep *le = arg;

	RTE_SET_USED(sess);
	/* release: what its fills did to the generations is report()'s now */
	__atomic_store_n(&le->stopped, true, __ATOMIC_RELEASE);
}

static void
ask_info(struct rdp_session *sess, void *arg)
{
	RTE_SET_USED(sess);
	send_req(arg, BLK_OP_INFO);
}

/* ---------------------------------------------------------------------- */
/* Control (main lcore)                                                   */
/* ---------------------------------------------------------------------- */

struct dir_result {
	uint64_t ios;
	double iops;
	double mbps;
	double mean_us, p50_us, p99_us, p999_us, max_us;
};

static void
dir_result(const struct perf_hist *h, uint64_t bytes, double secs, struct dir_result *r)
{
	double us = 1e6 / rte_get_tsc_hz();

	r->ios = h->count;
	r->iops = h->count / secs;
	r->mbps = bytes / secs / 1e6;
	r->mean_us = h->count > 0 ? (double)h->sum / h->count * us : 0;
	r->p50_us = hist_quantile(h, 0.50) * us;
	r->p99_us = hist_quantile(h, 0.99) * us;
	r->p999_us = hist_quantile(h, 0.999) * us;
	r->max_us = h->max * us;
}

static void
sums(uint64_t ios[2], uint64_t bytes[2], uint32_t *inflight)
{
	unsigned int i, d;

	ios[0] = ios[1] = bytes[0] = bytes[1] = 0;
	*inflight = 0;
	for (i = 0; i < ld.n; i++) {
		for (d = 0; d < 2; d++) {
			ios[d] += cnt(&ld.eps[i].ios[d]);
			bytes[d] += cnt(&ld.eps[i].bytes[d]);
		}
		*inflight += __atomic_load_n(&ld.eps[i].inflight, __ATOMIC_ACQUIRE);
	}
}

static bool
check_failed(void)
{
	return __atomic_load_n(&ld.failed, __ATOMIC_ACQUIRE) != 0;
}

/* Wait for every endpoint to be established; false (with a message) if one fails. */
static bool
wait_connected(void)
{
	double deadline = rdp_clock_s() + 10 + ld.o->reconnect;
	unsigned int i;

	for (i = 0; i < ld.n; i++) {
		while (!__atomic_load_n(&ld.eps[i].established, __ATOMIC_ACQUIRE)) {
			if (check_failed()) {
				fprintf(stderr, "rdp-blk load: %s\n", ld.why);
				return false;
			}
			if (rdp_clock_s() > deadline) {
				fprintf(stderr, "rdp-blk load: endpoint %u to %s: not connected "
					"after %.0f s\n", i, ld.o->connect, 10 + ld.o->reconnect);
				return false;
			}
			usleep(1000);
		}
	}
	return true;
}

static bool
wait_info(void)
{
	double deadline = rdp_clock_s() + 10;
	unsigned int i;

	for (i = 0; i < ld.n; i++) {
		while (rdp_session_call(ld.eps[i].sess, ask_info, &ld.eps[i]) < 0)
			usleep(100);
	}
	for (i = 0; i < ld.n; i++) {
		while (!__atomic_load_n(&ld.eps[i].info, __ATOMIC_ACQUIRE)) {
			if (check_failed() || __atomic_load_n(&ld.eps[i].err, __ATOMIC_ACQUIRE) ||
			    rdp_clock_s() > deadline) {
				fprintf(stderr, "rdp-blk load: endpoint %u: no geometry from the "
					"server%s%s\n", i, check_failed() ? ": " : "",
					check_failed() ? ld.why : "");
				return false;
			}
			usleep(100);
		}
		if (ld.eps[i].nblocks != ld.eps[0].nblocks) {
			fprintf(stderr, "rdp-blk load: the endpoints disagree on the device size\n");
			return false;
		}
	}
	return true;
}

static uint64_t
run_id(void)
{
	uint64_t x = rte_rdtsc() ^ ((uint64_t)getpid() << 32) ^ ld.o->seed;

	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ull;
	x ^= x >> 27;
	return x != 0 ? x : 1;
}

/* Geometry known: size the run and set up --verify. */
static int
setup_range(uint64_t *range)
{
	const struct load_opts *o = ld.o;
	uint64_t nblocks = ld.eps[0].nblocks;
	uint32_t inflight_blocks = ld.n * o->qd * ld.count;
	char err[512];
	int ret;

	if (ld.count > ld.eps[0].max_count) {
		fprintf(stderr, "rdp-blk load: --bs %u: the server takes at most %u blocks (%u "
			"bytes) per request on this endpoint\n", o->bs, ld.eps[0].max_count,
			ld.eps[0].max_count * BLK_BLOCK_SIZE);
		return -1;
	}
	if (o->rw != RW_RANDREAD && o->rw != RW_READ && !o->check && !ld.onesided &&
	    blk_req_len(BLK_OP_WRITE, ld.count, 0) > ld.eps[0].max_msg) {
		fprintf(stderr, "rdp-blk load: --bs %u: a write request of %u bytes exceeds the "
			"endpoint's message size (%u)\n", o->bs, blk_req_len(BLK_OP_WRITE, ld.count, 0),
			ld.eps[0].max_msg);
		return -1;
	}
	*range = o->size != 0 ? o->size / BLK_BLOCK_SIZE : nblocks;
	if (*range > nblocks) {
		fprintf(stderr, "rdp-blk load: --size %" PRIu64 ": the device has %" PRIu64
			" blocks (%" PRIu64 " bytes)\n", o->size, nblocks, nblocks * BLK_BLOCK_SIZE);
		return -1;
	}
	ld.nreq = *range / ld.count;
	if (ld.nreq == 0) {
		fprintf(stderr, "rdp-blk load: --bs %u is larger than the range of %" PRIu64
			" blocks\n", o->bs, *range);
		return -1;
	}
	*range = ld.nreq * ld.count;
	if (!ld.verify)
		return 0;
	if (!o->check && ld.nreq * ld.count < 2ull * inflight_blocks) {
		fprintf(stderr, "rdp-blk load: --verify: a range of %" PRIu64 " blocks is too "
			"small for %u blocks in flight (qd x endpoints x blocks per request); give "
			"at least twice as many\n", *range, inflight_blocks);
		return -1;
	}
	if (o->state != NULL) {
		ret = blk_state_load(&ld.gens, o->state, err, sizeof(err));
		if (ret == 0) {
			if (ld.gens.nblocks != *range) {
				fprintf(stderr, "rdp-blk load: --state %s covers %" PRIu64 " blocks, "
					"this run %" PRIu64 " (give the same --size and --bs)\n",
					o->state, ld.gens.nblocks, *range);
				return -1;
			}
			return 0;
		}
		if (ret != -ENOENT || o->check) {
			fprintf(stderr, "rdp-blk load: %s\n", err);
			return -1;
		}
	}
	if (blk_gens_init(&ld.gens, *range, run_id()) < 0) {
		fprintf(stderr, "rdp-blk load: --verify: no memory for %" PRIu64 " blocks\n",
			*range);
		return -1;
	}
	return 0;
}

static void
progress(double t, double dt, uint64_t ios[2], uint64_t bytes[2], uint64_t last_ios[2],
	 uint64_t last_bytes[2])
{
	uint64_t r = ios[0] - last_ios[0], w = ios[1] - last_ios[1];

	printf("[%4.0f s] %9.0f IOPS (read %.0f, write %.0f)  %8.1f MB/s\n", t, (r + w) / dt,
	       r / dt, w / dt, (bytes[0] + bytes[1] - last_bytes[0] - last_bytes[1]) / dt / 1e6);
	fflush(stdout);
}

/* fio's percentiles of clat_ns. */
static const double fio_pcts[] = { 1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5,
				   99.9, 99.95, 99.99 };

static void
print_json_lat(FILE *f, const char *name, const struct perf_hist *h)
{
	double ns = 1e9 / rte_get_tsc_hz();
	unsigned int i;

	fprintf(f, "        \"%s\": {\n          \"min\": %.0f,\n          \"max\": %.0f,\n"
		"          \"mean\": %.3f,\n          \"N\": %" PRIu64 ",\n          \"percentile\": {",
		name, h->count > 0 ? h->min * ns : 0, h->max * ns,
		h->count > 0 ? (double)h->sum / h->count * ns : 0, h->count);
	for (i = 0; i < RTE_DIM(fio_pcts); i++)
		fprintf(f, "%s\n            \"%f\": %.0f", i > 0 ? "," : "", fio_pcts[i],
			hist_quantile(h, fio_pcts[i] / 100) * ns);
	fprintf(f, "\n          }\n        }");
}

/* One direction as fio writes it (bw in KiB/s, runtime in ms, latencies in ns). */
static void
print_json_dir(FILE *f, const char *name, const struct perf_hist *h, uint64_t bytes, double secs)
{
	fprintf(f, "      \"%s\": {\n        \"io_bytes\": %" PRIu64 ",\n        \"io_kbytes\": %"
		PRIu64 ",\n        \"bw_bytes\": %.0f,\n        \"bw\": %.0f,\n        \"iops\": %.6f,\n"
		"        \"runtime\": %.0f,\n        \"total_ios\": %" PRIu64 ",\n", name, bytes,
		bytes / 1024, bytes / secs, bytes / secs / 1024, h->count / secs, secs * 1000,
		h->count);
	print_json_lat(f, "clat_ns", h);
	fprintf(f, ",\n");
	print_json_lat(f, "lat_ns", h); /* no submission latency apart: the same */
	fprintf(f, "\n      }");
}

static int
write_json(const struct perf_hist h[2], const uint64_t bytes[2], double secs, uint64_t checked,
	   uint64_t acked, bool ok)
{
	const struct load_opts *o = ld.o;
	FILE *f = o->output != NULL ? fopen(o->output, "w") : stdout;

	if (f == NULL) {
		fprintf(stderr, "rdp-blk load: --output %s: %s\n", o->output, strerror(errno));
		return -1;
	}
	fprintf(f, "{\n  \"fio version\": \"rdp-blk-%s\",\n  \"timestamp\": %ld,\n"
		"  \"global options\": {\n    \"ioengine\": \"rdmaplane\",\n    \"rw\": \"%s\",\n"
		"    \"bs\": \"%u\",\n    \"iodepth\": \"%u\",\n    \"numjobs\": \"%u\",\n"
		"    \"rwmixread\": \"%u\",\n    \"runtime\": \"%.3f\",\n    \"size\": \"%" PRIu64 "\"\n"
		"  },\n  \"jobs\": [\n    {\n      \"jobname\": \"rdp-blk\",\n      \"groupid\": 0,\n"
		"      \"error\": %d,\n      \"job_runtime\": %.0f,\n", RDP_VERSION, (long)time(NULL),
		o->check ? "check" : rw_names[o->rw], o->bs, o->qd, ld.n, o->rwmixread, o->duration,
		ld.nreq * ld.count * (uint64_t)BLK_BLOCK_SIZE, ok ? 0 : 1, secs * 1000);
	print_json_dir(f, "read", &h[0], bytes[0], secs);
	fprintf(f, ",\n");
	print_json_dir(f, "write", &h[1], bytes[1], secs);
	fprintf(f, "\n    }\n  ],\n  \"rdp-blk\": {\n    \"driver\": \"%s\",\n    \"endpoints\": %u,\n"
		"    \"verify\": %s,\n    \"check\": %s,\n    \"verified_blocks\": %" PRIu64 ",\n"
		"    \"verified_acknowledged\": %" PRIu64 ",\n    \"mismatches\": %" PRIu64 ",\n"
		"    \"error_replies\": %" PRIu64 ",\n    \"reconnects\": %" PRIu64 ",\n"
		"    \"requests_lost\": %" PRIu64 ",\n    \"rdma_min\": %" PRIu64 ",\n"
		"    \"onesided_ios\": %" PRIu64 ",\n    \"first_error\": ", rdp_driver_info(), ld.n,
		ld.verify ? "true" : "false", o->check ? "true" : "false", checked, acked,
		cnt(&ld.mismatches), cnt(&ld.error_replies), ld.reconnects, ld.lost,
		ld.rdma_min == UINT32_MAX ? (uint64_t)-1 : (uint64_t)ld.rdma_min, ld.onesided_ios);
	if (ld.err_status != 0)
		fprintf(f, "{\"op\": \"%s\", \"block\": %" PRIu64 ", \"blocks\": %u, \"errno\": %u}",
			blk_op_str(ld.err_op), ld.err_block, ld.err_count, ld.err_status);
	else
		fprintf(f, "null");
	fprintf(f, ",\n    \"ok\": %s\n  }\n}\n", ok ? "true" : "false");
	if (f == stdout)
		return fflush(f) == 0 ? 0 : -1;
	return fclose(f) == 0 ? 0 : -1;
}

static void
report(double secs, bool ok)
{
	static const char *const names[3] = { "read", "write", "total" };
	struct perf_hist *h = calloc(3, sizeof(*h));
	struct dir_result res[3];
	uint64_t bytes[3] = { 0 }, checked = 0, acked = 0, written = 0;
	unsigned int i, d;

	if (h == NULL)
		return;
	for (i = 0; i < ld.n; i++) {
		for (d = 0; d < 2; d++) {
			hist_merge(&h[d], &ld.eps[i].hist[d]);
			hist_merge(&h[2], &ld.eps[i].hist[d]);
			bytes[d] += ld.eps[i].bytes[d];
			bytes[2] += ld.eps[i].bytes[d];
		}
		checked += ld.eps[i].checked;
		acked += ld.eps[i].checked_acked;
		ld.reconnects += cnt(&ld.eps[i].reconnects);
		ld.lost += cnt(&ld.eps[i].lost);
		ld.onesided_ios += cnt(&ld.eps[i].onesided);
	}
	for (d = 0; d < 3; d++)
		dir_result(&h[d], bytes[d], secs, &res[d]);
	if (ld.o->json && ld.o->output == NULL)
		goto json; /* stdout holds the JSON alone, as fio's */
	printf("\n%-6s %10s %11s %9s %9s %9s %9s %9s %9s\n", "op", "ios", "IOPS", "MB/s",
	       "mean us", "p50 us", "p99 us", "p99.9 us", "max us");
	for (d = 0; d < 3; d++)
		printf("%-6s %10" PRIu64 " %11.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f\n", names[d],
		       res[d].ios, res[d].iops, res[d].mbps, res[d].mean_us, res[d].p50_us,
		       res[d].p99_us, res[d].p999_us, res[d].max_us);
	printf("data: %s\n", ld.onesided ? "one-sided (the server RDMA-WRITEs reads into and "
	       "RDMA-READs writes from this process's registered buffers)" : "in the messages");
	if (ld.o->reconnect > 0 || ld.reconnects > 0 || ld.lost > 0)
		printf("connection: %" PRIu64 " reconnects, %" PRIu64 " requests lost in flight\n",
		       ld.reconnects, ld.lost);
	if (ld.verify) {
		for (i = 0; i < ld.gens.nblocks; i++)
			written += blk_gen_acked(ld.gens.word[i]) > 0;
		if (ld.o->check)
			printf("check: %" PRIu64 " blocks read back and verified, %" PRIu64 " of them "
			       "hold acknowledged writes, %" PRIu64 " mismatches\n", checked, acked,
			       cnt(&ld.mismatches));
		else
			printf("verify: %" PRIu64 " blocks read and checked (%" PRIu64 " holding "
			       "acknowledged writes), %" PRIu64 " mismatches; %" PRIu64 " of %" PRIu64
			       " blocks written and acknowledged\n", checked, acked,
			       cnt(&ld.mismatches), written, ld.gens.nblocks);
	}
json:
	if (ld.o->json)
		write_json(h, bytes, secs, checked, acked, ok);
	free(h);
}

static uint64_t
mix_seed(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* Endpoints (o->endpoints per lcore of @p lcores), connecting. */
static int
setup_eps(const unsigned int *lcores, unsigned int nb_lcores)
{
	const struct load_opts *o = ld.o;
	struct rdp_session_params prm = {
		.ops = &cli_ops, .on_event = cli_on_event, .notify_send_ok = true,
		.policy = {
			.delay_ms = o->reconnect_delay_ms,
			.loss_tmo_ms = (uint32_t)(o->reconnect * 1000),
			/* a request offered while the server is away waits for it */
			.queue_max = o->qd,
		},
	};
	unsigned int l, j, i, k = 0;
	void *mem;

	ld.n = nb_lcores * o->endpoints;
	if (ld.n > MAX_LOAD_EPS) {
		fprintf(stderr, "rdp-blk load: --numjobs %u on %u poller lcores: at most %u "
			"endpoints in all\n", o->endpoints, nb_lcores, MAX_LOAD_EPS);
		return -1;
	}
	ld.onesided = o->bs >= ld.rdma_min;
	if (ld.onesided && (uint64_t)ld.n * o->qd * o->bs > RDMA_BUF_MAX) {
		fprintf(stderr, "rdp-blk load: one-sided buffers of %u endpoints x --iodepth %u x "
			"--bs %u would take %" PRIu64 " MiB, more than %llu MiB: lower them, or "
			"raise --rdma-min above --bs to move the data in messages\n", ld.n, o->qd,
			o->bs, (uint64_t)ld.n * o->qd * o->bs >> 20, RDMA_BUF_MAX >> 20);
		return -1;
	}
	if (posix_memalign(&mem, RTE_CACHE_LINE_SIZE, ld.n * sizeof(*ld.eps)) != 0)
		goto nomem;
	memset(mem, 0, ld.n * sizeof(*ld.eps));
	ld.eps = mem;
	for (l = 0; l < nb_lcores; l++) {
		struct load_lcore *lc = &ld.lc[lcores[l]];

		lc->eps = calloc(o->endpoints, sizeof(*lc->eps));
		if (lc->eps == NULL)
			goto nomem;
		for (j = 0; j < o->endpoints; j++, k++) {
			struct load_ep *le = &ld.eps[k];

			le->index = k;
			le->lcore = lcores[l];
			le->slots = calloc(o->qd, sizeof(*le->slots));
			le->idle = calloc(o->qd, sizeof(*le->idle));
			if (le->slots == NULL || le->idle == NULL)
				goto nomem;
			for (i = 0; i < o->qd; i++)
				le->idle[i] = o->qd - 1 - i;
			le->nb_idle = o->qd;
			le->rng = mix_seed(o->seed * 0x9e3779b97f4a7c15ull + k + 1) | 1;
			/* before connecting: on shm a peer maps it at the rendezvous */
			if (ld.onesided) {
				le->reg = rdp_region_alloc((size_t)o->qd * o->bs,
							   RDP_REGION_REMOTE_WRITE |
							   RDP_REGION_REMOTE_READ,
							   rte_lcore_to_socket_id(lcores[l]));
				if (le->reg == NULL) {
					fprintf(stderr, "rdp-blk load: the one-sided buffers of "
						"endpoint %u (%u x %u bytes): %s\n", k, o->qd, o->bs,
						rdp_err_msg());
					return -1;
				}
			}
			lc->eps[lc->n++] = le;
			prm.arg = le;
			prm.lcore = (int)lcores[l];
			le->sess = rdp_session_open(o->connect, &prm);
			if (le->sess == NULL) {
				fprintf(stderr, "rdp-blk load: --connect %s: %s\n", o->connect,
					rdp_err_msg());
				return -1;
			}
		}
	}
	return 0;
nomem:
	fprintf(stderr, "rdp-blk load: no memory for %u endpoints of depth %u\n", ld.n, o->qd);
	return -1;
}

static void
teardown(void)
{
	double deadline = rdp_clock_s() + 5;
	unsigned int i;

	for (i = 0; i < ld.n; i++)
		if (ld.eps[i].sess != NULL)
			while (rdp_session_close(ld.eps[i].sess) == -ENOBUFS)
				usleep(100);
	for (i = 0; i < ld.n; i++)
		while (ld.eps[i].sess != NULL &&
		       !__atomic_load_n(&ld.eps[i].closed, __ATOMIC_ACQUIRE)
		       && rdp_clock_s() < deadline)
			usleep(1000);
	for (i = 0; i < ld.n; i++) {
		if (ld.eps[i].reg != NULL && rdp_region_deregister(ld.eps[i].reg) != 0)
			fprintf(stderr, "rdp-blk load: endpoint %u's one-sided buffers: %s\n", i,
				rdp_err_msg());
		free(ld.eps[i].slots);
		free(ld.eps[i].idle);
	}
	for (i = 0; i < RTE_MAX_LCORE; i++)
		free(ld.lc[i].eps);
	free(ld.eps);
	blk_gens_free(&ld.gens);
}

static void
kick_starved(void)
{
	unsigned int i;

	/* a request that waits for blocks held on another lcore hears nothing here */
	for (i = 0; i < ld.n; i++)
		if (__atomic_load_n(&ld.eps[i].starved, __ATOMIC_RELAXED))
			rdp_session_call(ld.eps[i].sess, kick, &ld.eps[i]);
}

/* Wait for the requests in flight; false after 10 s. */
static bool
drain(void)
{
	double deadline = rdp_clock_s() + 10;
	uint64_t ios[2], bytes[2];
	uint32_t inflight;
	unsigned int i, stopped;

	/*
	 * A poller that read `running` just before it went false may still
	 * take blocks for a request: each lcore says it has passed that point
	 * (a closed session runs nothing any more).
	 */
	for (i = 0; i < ld.n; i++)
		while (!__atomic_load_n(&ld.eps[i].closed, __ATOMIC_ACQUIRE) &&
		       rdp_session_call(ld.eps[i].sess, stop_ack, &ld.eps[i]) == -ENOBUFS)
			usleep(100);
	for (;;) {
		sums(ios, bytes, &inflight);
		for (i = 0, stopped = 0; i < ld.n; i++)
			stopped += __atomic_load_n(&ld.eps[i].stopped, __ATOMIC_ACQUIRE) ||
				   __atomic_load_n(&ld.eps[i].closed, __ATOMIC_ACQUIRE);
		if (inflight == 0 && stopped == ld.n)
			return true;
		if (rdp_clock_s() > deadline) {
			fprintf(stderr, "rdp-blk load: %u requests still in flight after 10 s\n",
				inflight);
			return false;
		}
		usleep(1000);
	}
}

int
load_run(const struct load_opts *o, const struct rdp_cfg *cfg, const unsigned int *lcores,
	 unsigned int nb_lcores)
{
	uint64_t range = 0, ios[2], bytes[2], last_ios[2] = { 0 }, last_bytes[2] = { 0 };
	double t0, secs, last;
	uint32_t inflight;
	char err[512];
	bool ok = false;
	unsigned int i;

	RTE_SET_USED(cfg);
	memset(&ld, 0, sizeof(ld));
	ld.o = o;
	ld.count = (uint16_t)(o->bs / BLK_BLOCK_SIZE);
	ld.verify = o->verify || o->check;
	ld.rdma_min = o->rdma_min;
	if (ld.rdma_min == RDMA_MIN_AUTO) /* the driver's name leads its line */
		ld.rdma_min = strncmp(rdp_driver_info(), "shm", 3) == 0 ? UINT32_MAX : RDMA_MIN_VERBS;
	if (setup_eps(lcores, nb_lcores) < 0 || !wait_connected() || !wait_info() ||
	    setup_range(&range) < 0)
		goto out;
	if (!o->c.quiet) {
		char mix[32] = "";

		if (o->rw == RW_RANDRW)
			snprintf(mix, sizeof(mix), " %u%% read", o->rwmixread);
		if (o->check)
			printf("rdp-blk load: checking %" PRIu64 " blocks against --state %s "
			       "(run %#" PRIx64 "), %u endpoint(s) to %s, bs %u, qd %u\n", range,
			       o->state, ld.gens.run, ld.n, o->connect, o->bs, o->qd);
		else
			printf("rdp-blk load: %u endpoint(s) to %s on %u lcore(s), %s%s, bs %u, "
			       "qd %u, %.1f s, %" PRIu64 " of %" PRIu64 " blocks%s\n", ld.n,
			       o->connect, nb_lcores, rw_names[o->rw], mix, o->bs, o->qd,
			       o->duration, range, ld.eps[0].nblocks, ld.verify ? ", verify" : "");
		fflush(stdout);
	}
	__atomic_store_n(&ld.running, true, __ATOMIC_RELEASE);
	t0 = rdp_clock_s();
	last = t0;
	for (i = 0; i < ld.n; i++)
		while (rdp_session_call(ld.eps[i].sess, kick, &ld.eps[i]) < 0)
			usleep(100);
	while (!blk_force_quit && !check_failed()) {
		double now;

		usleep(1000);
		now = rdp_clock_s();
		if (!o->check && now - t0 >= o->duration)
			break;
		if (o->check) {
			sums(ios, bytes, &inflight);
			if (__atomic_load_n(&ld.seq_next, __ATOMIC_RELAXED) >= ld.nreq && inflight == 0)
				break;
		}
		if (now - last >= 1.0) {
			sums(ios, bytes, &inflight);
			if (!o->c.quiet)
				progress(now - t0, now - last, ios, bytes, last_ios, last_bytes);
			memcpy(last_ios, ios, sizeof(ios));
			memcpy(last_bytes, bytes, sizeof(bytes));
			last = now;
			kick_starved();
		}
	}
	__atomic_store_n(&ld.running, false, __ATOMIC_RELEASE);
	ok = drain();
	secs = rdp_clock_s() - t0;
	if (check_failed()) {
		fprintf(stderr, "rdp-blk load: %s\n", ld.why);
		ok = false;
	}
	report(secs, ok);
	if (ld.verify && o->state != NULL && !o->check) {
		if (blk_state_save(&ld.gens, o->state, err, sizeof(err)) < 0) {
			fprintf(stderr, "rdp-blk load: %s\n", err);
			ok = false;
		} else if (!o->c.quiet) {
			printf("rdp-blk load: generations saved to %s\n", o->state);
		}
	}
out:
	teardown();
	return ok ? BLK_EXIT_OK : BLK_EXIT_FAIL;
}

/* ---------------------------------------------------------------------- */
/* Options                                                                */
/* ---------------------------------------------------------------------- */

void
load_usage(FILE *f)
{
	fprintf(f,
"usage: rdp-blk [EAL options] -- load [--connect HOST:PORT | --in-process] [options]\n"
"\n"
"Drive an rdp-blk server with a block workload and report IOPS and latency\n"
"percentiles, with a progress line per second; the workload options are\n"
"fio's. Every endpoint keeps --iodepth requests in flight from its poller\n"
"lcore (run-to-completion). Without --connect, a server is started on this\n"
"machine: a second process pinned to the other CPU (loopback), or with\n"
"--in-process a server in this process.\n"
"\n"
"Server:\n"
"  --connect HOST:PORT  the server (default: the configuration's `connect`;\n"
"                       none: loopback)\n"
"  --in-process         run the server in this process, on the last poller lcore\n"
"  --file PATH          loopback/in-process: export this file (default: memory)\n"
"  --no-direct          loopback/in-process: the server's --no-direct\n"
"  --sync               loopback/in-process: the server's --sync\n"
"  --server-lcores LIST loopback: EAL --lcores of the server process\n"
"\n"
"Workload:\n"
"  --rw PATTERN         randread (default), randwrite, read, write (sequential),\n"
"                       randrw (random mix, see --rwmixread)\n"
"  --rwmixread PCT      randrw: percentage of reads, 0..100 (default 50)\n"
"  --bs SIZE            bytes per request, 512 up to 1m, a multiple of 512, in\n"
"                       fio's syntax: 512, 4k (default), 128k, 1m\n"
"  --rdma-min SIZE      requests of at least SIZE move their blocks one-sided:\n"
"                       the server RDMA-WRITEs a read into, and RDMA-READs a\n"
"                       write from, this process's registered buffers, and the\n"
"                       messages carry a header and a descriptor; smaller ones\n"
"                       carry the blocks in the messages. 0: all, off: none;\n"
"                       auto (default): off on shm, 64k on verbs\n"
"  --iodepth N          requests in flight per endpoint, 1..4096 (default 32)\n"
"  --numjobs N          endpoints per poller lcore, 1..256 (default 1)\n"
"  --runtime SEC        run time in seconds, e.g. 10 or 2.5s (default 5)\n"
"  --size SIZE          bytes of the device used, from block 0 (default: all of\n"
"                       it; a local server's device has this size, default 256M)\n"
"  --seed N             random seed of the block choice (default 1)\n"
"\n"
"Checking:\n"
"  --verify             write self-describing blocks (block number, generation,\n"
"                       checksum) and check every block read against what was\n"
"                       acknowledged; the first mismatch names the block and\n"
"                       fails the run (exit 1)\n"
"  --state FILE         with --verify: start from the generations saved in FILE\n"
"                       (when it exists) and save them there at the end, also\n"
"                       when the server was lost\n"
"  --check              read every block of --state FILE once, sequentially,\n"
"                       and verify it: acknowledged writes must be there (for a\n"
"                       server restarted on the same file)\n"
"\n"
"Output and runtime:\n"
"  --output-format FMT  normal (default: progress lines and a table) or json\n"
"                       (fio's layout: jobs[0].read/.write with io_bytes, bw in\n"
"                       KiB/s, iops, clat_ns percentiles; on stdout alone unless\n"
"                       --output)\n"
"  --output FILE        with --output-format=json: write the JSON to FILE and\n"
"                       print the normal output too\n"
"  --reconnect SEC      when the server is lost, reconnect (doubling waits from\n"
"                       --reconnect-delay, up to 5 s, with jitter) until it has\n"
"                       been away SEC seconds; requests offered meanwhile wait,\n"
"                       those in flight are counted lost (with --verify, a lost\n"
"                       write's blocks may hold either generation). Default 0:\n"
"                       a lost server fails the run\n"
"  --reconnect-delay MS the first wait before reconnecting (default 100)\n"
"  -c, --config FILE    per-core configuration (see docs/configuration.md)\n"
"  --driver NAME[:ARGS] driver (default: auto, verbs with an active RDMA port,\n"
"                       else shm)\n"
"  -q, --quiet          no banner or progress lines\n"
"  -h, --help           this text\n"
"\n"
"An error reply stops the run and is printed with its operation, first block\n"
"and errno.\n"
"\n"
"Exit status: 0 success, 1 the run failed (verify mismatch, error reply,\n"
"server lost beyond --reconnect), 2 bad arguments.\n"
"\n"
"Examples:\n"
"  rdp-blk -- load                                  loopback, 4 KiB randread\n"
"  rdp-blk -- load --rw randrw --rwmixread 70 --verify --runtime 10\n"
"  rdp-blk -- load --in-process --rw randwrite --file /var/tmp/d.img --sync\n"
"  rdp-blk -l 0-2 -- load --connect 10.0.0.1:18515 --rw randwrite --iodepth 64 --numjobs 2\n"
"  rdp-blk -- load --connect 127.0.0.1:18515 --bs 1m --rw read --output-format=json\n"
"  rdp-blk -- load --connect 127.0.0.1:18515 --rw randwrite --verify --state s.bin\n"
"  rdp-blk -- load --connect 127.0.0.1:18515 --check --state s.bin\n"
"  rdp-blk -- load --connect 127.0.0.1:18515 --rw randrw --verify --reconnect 30\n");
}

/* fio's block size syntax: N, Nk or Nm (powers of 1024), 512 B to 1 MiB by 512. */
static int
parse_bs(const char *s, uint64_t *bs)
{
	unsigned int shift = 0;
	unsigned long long v;
	char *end;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	if (*end == 'k' || *end == 'K')
		shift = 10;
	else if (*end == 'm' || *end == 'M')
		shift = 20;
	if (shift != 0)
		end++;
	if (*end != '\0' || v > (1ull << 20) >> shift)
		return -1;
	*bs = v << shift;
	return *bs >= BLK_BLOCK_SIZE && *bs <= (uint64_t)BLK_MAX_COUNT * BLK_BLOCK_SIZE &&
	       *bs % BLK_BLOCK_SIZE == 0 ? 0 : -1;
}

static int
parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 10);
	return errno != 0 || end == s || *end != '\0' || *v < min || *v > max || s[0] == '-' ?
	       -1 : 0;
}

int
load_parse(int argc, char **argv, struct load_opts *o)
{
	static const struct option opts[] = {
		{ "connect", required_argument, NULL, 'C' },
		{ "in-process", no_argument, NULL, 'I' },
		{ "file", required_argument, NULL, 'f' },
		{ "sync", no_argument, NULL, 'S' },
		{ "no-direct", no_argument, NULL, 'N' },
		{ "server-lcores", required_argument, NULL, 'R' },
		{ "rw", required_argument, NULL, 'w' },
		{ "rwmixread", required_argument, NULL, 'x' },
		{ "bs", required_argument, NULL, 'b' },
		{ "rdma-min", required_argument, NULL, 'M' },
		{ "iodepth", required_argument, NULL, 'Q' },
		{ "numjobs", required_argument, NULL, 'e' },
		{ "runtime", required_argument, NULL, 'd' },
		{ "size", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, 'z' },
		{ "verify", no_argument, NULL, 'V' },
		{ "state", required_argument, NULL, 'T' },
		{ "check", no_argument, NULL, 'K' },
		{ "output-format", required_argument, NULL, 'J' },
		{ "output", required_argument, NULL, 'O' },
		{ "reconnect", required_argument, NULL, 'r' },
		{ "reconnect-delay", required_argument, NULL, 'y' },
		{ "config", required_argument, NULL, 'c' },
		{ "driver", required_argument, NULL, 'D' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *rw_arg = NULL, *mix_arg = NULL, *delay_arg = NULL;
	unsigned long v;
	uint64_t bs;
	char *end;
	int c, r;

	memset(o, 0, sizeof(*o));
	o->rw = RW_RANDREAD;
	o->rwmixread = 50;
	o->bs = 4096;
	o->rdma_min = RDMA_MIN_AUTO;
	o->qd = 32;
	o->endpoints = 1;
	o->duration = 5;
	o->seed = 1;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'C': o->connect = optarg; break;
		case 'I': o->in_process = true; break;
		case 'f': o->file = optarg; break;
		case 'S': o->sync = true; break;
		case 'N': o->no_direct = true; break;
		case 'R': o->server_lcores = optarg; break;
		case 'w':
			rw_arg = optarg;
			for (r = 0; r < RW_MAX && strcmp(optarg, rw_names[r]) != 0; r++)
				;
			if (r == RW_MAX)
				return blk_bad_option("load", "--rw", optarg, "expected randread, "
						      "randwrite, read, write or randrw");
			o->rw = (enum load_rw)r;
			break;
		case 'x':
			mix_arg = optarg;
			if (parse_uint(optarg, 0, 100, &v) < 0)
				return blk_bad_option("load", "--rwmixread", optarg,
						      "expected a percentage, 0..100");
			o->rwmixread = (unsigned int)v;
			break;
		case 'b':
			if (parse_bs(optarg, &bs) < 0)
				return blk_bad_option("load", "--bs", optarg, "expected 512 bytes to 1 "
						      "MiB, a multiple of 512, in fio's syntax (512, "
						      "4k, 128k, 1m)");
			o->bs = (uint32_t)bs;
			break;
		case 'M':
			if (strcmp(optarg, "auto") == 0)
				o->rdma_min = RDMA_MIN_AUTO;
			else if (strcmp(optarg, "off") == 0)
				o->rdma_min = UINT32_MAX;
			else if (strcmp(optarg, "0") == 0)
				o->rdma_min = 0;
			else if (parse_bs(optarg, &bs) == 0)
				o->rdma_min = (uint32_t)bs;
			else
				return blk_bad_option("load", "--rdma-min", optarg, "expected a size "
						      "in fio's syntax, 0 or 512 bytes to 1 MiB by 512 "
						      "(0, 4k, 64k, 1m), off or auto");
			break;
		case 'Q':
			if (parse_uint(optarg, 1, MAX_QD, &v) < 0)
				return blk_bad_option("load", "--iodepth", optarg, "expected 1..4096");
			o->qd = (unsigned int)v;
			break;
		case 'e':
			if (parse_uint(optarg, 1, 256, &v) < 0)
				return blk_bad_option("load", "--numjobs", optarg, "expected 1..256");
			o->endpoints = (unsigned int)v;
			break;
		case 'd':
			o->duration = strtod(optarg, &end);
			if (end != optarg && strcmp(end, "s") == 0)
				end++;
			if (end == optarg || *end != '\0' || !(o->duration > 0 && o->duration <= 86400))
				return blk_bad_option("load", "--runtime", optarg,
						      "expected seconds in (0, 86400], e.g. 10 or 2.5s");
			break;
		case 's':
			if (blk_parse_size(optarg, &o->size) < 0 || o->size == 0 ||
			    o->size % BLK_BLOCK_SIZE != 0)
				return blk_bad_option("load", "--size", optarg, "expected a positive "
						      "multiple of 512 bytes, e.g. 64M");
			break;
		case 'z':
			errno = 0;
			o->seed = strtoull(optarg, &end, 0);
			if (errno != 0 || end == optarg || *end != '\0')
				return blk_bad_option("load", "--seed", optarg, "expected an integer");
			break;
		case 'V': o->verify = true; break;
		case 'T': o->state = optarg; break;
		case 'K': o->check = true; break;
		case 'J':
			if (strcmp(optarg, "json") != 0 && strcmp(optarg, "normal") != 0)
				return blk_bad_option("load", "--output-format", optarg,
						      "expected normal or json");
			o->json = strcmp(optarg, "json") == 0;
			break;
		case 'O': o->output = optarg; break;
		case 'r':
			o->reconnect = strtod(optarg, &end);
			if (end != optarg && strcmp(end, "s") == 0)
				end++;
			if (end == optarg || *end != '\0' || !(o->reconnect >= 0 &&
								o->reconnect <= 86400))
				return blk_bad_option("load", "--reconnect", optarg,
						      "expected seconds in [0, 86400], e.g. 30");
			break;
		case 'y':
			if (parse_uint(optarg, 1, 60000, &v) < 0)
				return blk_bad_option("load", "--reconnect-delay", optarg,
						      "expected milliseconds, 1..60000");
			o->reconnect_delay_ms = (uint32_t)v;
			delay_arg = optarg;
			break;
		case 'c': o->c.config = optarg; break;
		case 'D': o->c.driver = optarg; break;
		case 'q': o->c.quiet = true; break;
		case 'h': load_usage(stdout); exit(BLK_EXIT_OK);
		case ':':
			return blk_bad_option("load", argv[optind - 1], "", "needs a value");
		default:
			return blk_bad_option("load", argv[optind - 1], "", "unknown option");
		}
	}
	if (optind < argc)
		return blk_bad_option("load", "argument", argv[optind], "unexpected");
	if (mix_arg != NULL && o->rw != RW_RANDRW)
		return blk_bad_option("load", "--rwmixread", mix_arg, "only with --rw randrw");
	if (o->state != NULL && !o->verify && !o->check)
		return blk_bad_option("load", "--state", o->state, "only with --verify or --check");
	if (o->check && o->state == NULL)
		return blk_bad_option("load", "--check", "", "needs --state FILE (what to expect)");
	if (o->check && rw_arg != NULL)
		return blk_bad_option("load", "--rw", rw_arg, "--check only reads");
	if (o->connect != NULL && o->in_process)
		return blk_bad_option("load", "--in-process", "", "not with --connect");
	if (o->connect != NULL && (o->file != NULL || o->sync || o->no_direct ||
				   o->server_lcores != NULL))
		return blk_bad_option("load", o->file != NULL ? "--file" : o->sync ? "--sync" :
				      o->no_direct ? "--no-direct" : "--server-lcores",
				      o->file != NULL ? o->file : "",
				      "only for a local server (without --connect)");
	if (delay_arg != NULL && o->reconnect == 0)
		return blk_bad_option("load", "--reconnect-delay", delay_arg,
				      "only with --reconnect SEC");
	if (o->output != NULL && !o->json)
		return blk_bad_option("load", "--output", o->output,
				      "only with --output-format=json");
	if (o->json && o->output == NULL)
		o->c.quiet = true; /* stdout holds the JSON alone */
	if (o->in_process && o->server_lcores != NULL)
		return blk_bad_option("load", "--server-lcores", o->server_lcores,
				      "only for a loopback server process");
	return 0;
}
