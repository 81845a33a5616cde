/* SPDX-License-Identifier: BSD-3-Clause */
/* The policy-driven message stream (see stream.h). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conf_pair.h"
#include "rdp_test.h"
#include "stream.h"

#define KIND_SHIFT 56
#define KIND_DATA UINT64_C(1)
#define KIND_ACK UINT64_C(2)
#define KIND_RECLAIM UINT64_C(3)
#define KIND_RECV UINT64_C(4)
#define MAGIC UINT64_C(0x5244505354524d31)

#define BURST 32

/* audit states */
#define AU_NONE 0
#define AU_POSTED 1
#define AU_DONE 2

void
stream_cfg_default(struct stream_cfg *cfg, uint64_t count)
{
	*cfg = (struct stream_cfg){
		.count = count, .expect = count, .msg_size = 64, .policy = STREAM_CREDIT,
		.cp = { .sq_size = 128, .signal_interval = 16, .rq_size = 128,
			.ack_reserve = 16, .ack_threshold = 8 },
	};
}

static inline uint64_t
wr_id(uint64_t kind, uint64_t v)
{
	return kind << KIND_SHIFT | (v & RDP_CREDIT_SEQ_MASK);
}

void
stream_ep_open(struct stream_ep *ep, struct rdp_dev *dev, const struct stream_cfg *cfg)
{
	struct rdp_qp_init_attr ia = { 0 };
	char why[256];
	uint32_t i;

	memset(ep, 0, sizeof(*ep));
	ep->cfg = *cfg;
	ep->dev = dev;
	RDP_ASSERT(cfg->msg_size >= 16);
	RDP_ASSERT_MSG(rdp_credit_params_check(&cfg->cp, why, sizeof(why)) == 0 ||
		       cfg->policy == STREAM_LEGACY, "credit params: %s", why);
	ep->pd = rdp_pd_alloc(dev);
	RDP_ASSERT_MSG(ep->pd != NULL, "pd: %s", rdp_err_msg());
	ep->cq = rdp_cq_create(dev, rdp_credit_cq_budget(&cfg->cp), -1);
	RDP_ASSERT_MSG(ep->cq != NULL, "cq: %s", rdp_err_msg());
	ep->nb_slots = cfg->cp.rq_size;
	ep->rx = rdp_mr_alloc(ep->pd, (size_t)ep->nb_slots * cfg->msg_size, -1,
			      RDP_ACCESS_LOCAL_WRITE);
	RDP_ASSERT_MSG(ep->rx != NULL, "rx mr: %s", rdp_err_msg());
	ep->tx = rdp_mr_alloc(ep->pd, (size_t)cfg->cp.sq_size * cfg->msg_size, -1,
			      RDP_ACCESS_LOCAL_WRITE);
	RDP_ASSERT_MSG(ep->tx != NULL, "tx mr: %s", rdp_err_msg());
	ia.send_cq = ep->cq;
	ia.recv_cq = ep->cq;
	ia.cap = (struct rdp_qp_cap){ .max_send_wr = cfg->cp.sq_size,
				      .max_recv_wr = cfg->cp.rq_size,
				      .max_send_sge = 1, .max_recv_sge = 1 };
	ep->qp = rdp_qp_create(ep->pd, &ia);
	RDP_ASSERT_MSG(ep->qp != NULL, "qp: %s", rdp_err_msg());
	ep->repost = calloc(ep->nb_slots, sizeof(uint32_t));
	RDP_ASSERT(ep->repost != NULL);
	if (cfg->audit) {
		ep->sq_cap = 4 * (cfg->count + 64) + 4 * cfg->cp.sq_size;
		ep->sq_state = calloc(ep->sq_cap, 1);
		ep->rq_state = calloc(ep->nb_slots, 1);
		RDP_ASSERT(ep->sq_state != NULL && ep->rq_state != NULL);
		ep->first_err_seq = UINT64_MAX;
	}
	for (i = 0; i < ep->nb_slots; i++)
		ep->repost[ep->nb_repost++] = i;
}

static void
flush_reposts(struct stream_ep *ep)
{
	struct rdp_recv_wr wr[BURST];
	struct rdp_sge sge[BURST];
	uint32_t done = 0;

	while (done < ep->nb_repost) {
		uint32_t n = RTE_MIN(ep->nb_repost - done, (uint32_t)BURST), i;
		uint16_t k;
		int err;

		for (i = 0; i < n; i++) {
			uint32_t slot = ep->repost[done + i];

			sge[i] = (struct rdp_sge){
				.addr = (uintptr_t)ep->rx->addr + (uint64_t)slot * ep->cfg.msg_size,
				.length = ep->cfg.msg_size, .lkey = ep->rx->lkey };
			wr[i] = (struct rdp_recv_wr){ .wr_id = wr_id(KIND_RECV, slot),
						      .sg_list = &sge[i], .num_sge = 1 };
			if (ep->rq_state != NULL) {
				if (ep->rq_state[slot] == AU_POSTED)
					ep->st.audit_errors++;
				ep->rq_state[slot] = AU_POSTED;
			}
		}
		k = rdp_post_recv(ep->qp, wr, (uint16_t)n, &err);
		if (k != n) {
			ep->st.post_errors++;
			ep->failed = true;
			break;
		}
		done += n;
	}
	ep->nb_repost = 0;
}

void
stream_ep_connect(struct stream_ep *ep, const struct rdp_qp_addr *peer,
		  const struct rdp_credit_params *peer_cp)
{
	struct rdp_qp_conn_params conn = { .rnr_retry = 0, .retry_cnt = 7, .timeout = 14,
					   .min_rnr_timer = 1 };
	char why[256];

	if (ep->cfg.policy == STREAM_CREDIT)
		RDP_ASSERT_MSG(rdp_credit_init(&ep->cr, &ep->cfg.cp, peer_cp, why, sizeof(why)) == 0,
			       "credit init: %s", why);
	else
		legacy_window_init(&ep->lw, ep->cfg.legacy_window, ep->cfg.cp.signal_interval);
	/* receives first: the peer may send as soon as it is connected */
	flush_reposts(ep);
	RDP_ASSERT_MSG(rdp_qp_connect(ep->qp, peer, &conn) == 0, "connect: %s", rdp_err_msg());
}

static void
audit_send(struct stream_ep *ep, uint64_t seq, bool ok)
{
	if (ep->sq_state == NULL)
		return;
	if (seq >= ep->sq_cap || ep->sq_state[seq] != AU_POSTED) {
		ep->st.audit_errors++;
		return;
	}
	ep->sq_state[seq] = AU_DONE;
	if (!ok && seq < ep->first_err_seq)
		ep->first_err_seq = seq;
}

static void
handle(struct stream_ep *ep, const struct rdp_wc *wc)
{
	uint64_t kind = wc->wr_id >> KIND_SHIFT, low = wc->wr_id & RDP_CREDIT_SEQ_MASK;

	if (unlikely(wc->status != RDP_WC_SUCCESS)) {
		ep->failed = true;
		if (wc->status == RDP_WC_WR_FLUSH_ERR)
			ep->st.flushed++;
		else if (wc->status == RDP_WC_RNR_RETRY_EXC_ERR)
			ep->st.rnr++;
		else
			ep->st.wc_errors++;
		/* classify by wr_id, never by opcode */
		if (kind == KIND_RECV) {
			if (ep->rq_state != NULL) {
				if (low >= ep->nb_slots || ep->rq_state[low] != AU_POSTED)
					ep->st.audit_errors++;
				else
					ep->rq_state[low] = AU_DONE;
			}
		} else if (ep->cfg.policy == STREAM_CREDIT) {
			audit_send(ep, rdp_credit_seq_expand(&ep->cr, low), false);
		}
		return;
	}
	if (kind == KIND_RECV) {
		const uint8_t *p;
		uint64_t seq, chk;

		if (low >= ep->nb_slots) {
			ep->st.bad_data++;
			return;
		}
		if (ep->rq_state != NULL) {
			if (ep->rq_state[low] != AU_POSTED)
				ep->st.audit_errors++;
			ep->rq_state[low] = AU_DONE;
		}
		if (wc->byte_len == 0) {
			/* a pure ack: its entry goes back at once and is not owed */
			if (ep->cfg.policy == STREAM_CREDIT)
				rdp_credit_granted(&ep->cr, wc->imm);
			else
				legacy_window_acked(&ep->lw, wc->imm);
			ep->repost[ep->nb_repost++] = (uint32_t)low;
			return;
		}
		p = (const uint8_t *)ep->rx->addr + low * ep->cfg.msg_size;
		memcpy(&seq, p, 8);
		memcpy(&chk, p + 8, 8);
		if (wc->byte_len != ep->cfg.msg_size || seq != ep->rx_next || chk != (MAGIC ^ seq))
			ep->st.bad_data++;
		else
			ep->st.received++;
		ep->rx_next++;
		if (ep->cfg.policy == STREAM_CREDIT) {
			if (wc->wc_flags & RDP_WC_WITH_IMM)
				rdp_credit_granted(&ep->cr, wc->imm);
			rdp_credit_recv_reposted(&ep->cr, 1);
		}
		ep->repost[ep->nb_repost++] = (uint32_t)low;
		return;
	}
	if (ep->cfg.policy != STREAM_CREDIT)
		return; /* the legacy window ignores send completions: that is its bug */
	if (kind == KIND_DATA || kind == KIND_RECLAIM) {
		uint64_t seq = rdp_credit_seq_expand(&ep->cr, low);

		audit_send(ep, seq, true);
		rdp_credit_send_completed(&ep->cr, seq);
	} else {
		ep->st.audit_errors++; /* acks are never signaled */
	}
}

static void
audit_posted(struct stream_ep *ep, uint64_t seq)
{
	if (ep->sq_state == NULL)
		return;
	if (seq >= ep->sq_cap)
		ep->st.audit_errors++;
	else
		ep->sq_state[seq] = AU_POSTED;
}

/* Post a burst; count what the driver refused. */
static int
post_burst(struct stream_ep *ep, struct rdp_send_wr *wr, uint16_t n)
{
	uint16_t k;
	int err;

	if (n == 0)
		return 0;
	k = rdp_post_send(ep->qp, wr, n, &err);
	if (k != n) {
		if (err == -ENOMEM) {
			if (ep->st.enomem == 0)
				ep->st.first_enomem_at = ep->st.sent;
			ep->st.enomem++;
		} else {
			ep->st.post_errors++;
		}
		ep->failed = true;
	}
	return k;
}

static void
data_wr(struct stream_ep *ep, struct rdp_send_wr *wr, struct rdp_sge *sge, uint64_t seq,
	uint8_t flags, uint32_t imm, uint64_t id)
{
	uint8_t *p = (uint8_t *)ep->tx->addr + (seq % ep->cfg.cp.sq_size) * ep->cfg.msg_size;
	uint64_t chk = MAGIC ^ seq;

	memcpy(p, &seq, 8);
	memcpy(p + 8, &chk, 8);
	*sge = (struct rdp_sge){ .addr = (uintptr_t)p, .length = ep->cfg.msg_size,
				 .lkey = ep->tx->lkey };
	*wr = (struct rdp_send_wr){ .wr_id = id, .sg_list = sge, .num_sge = 1,
				    .opcode = RDP_WR_SEND_WITH_IMM, .flags = flags, .imm = imm };
}

static int
pump_legacy(struct stream_ep *ep)
{
	struct rdp_send_wr wr[BURST];
	struct rdp_sge sge[BURST];
	uint16_t n = 0;

	while (ep->st.sent + n < ep->cfg.count && n < BURST && legacy_window_can_send(&ep->lw)) {
		uint64_t seq = ep->st.sent + n;
		bool sig = legacy_window_posted(&ep->lw);

		data_wr(ep, &wr[n], &sge[n], seq, sig ? RDP_SEND_SIGNALED : 0, 0,
			wr_id(KIND_DATA, seq));
		n++;
	}
	/* post one at a time so the first refused WR is pinned exactly */
	for (uint16_t i = 0; i < n; i++) {
		if (post_burst(ep, &wr[i], 1) != 1)
			return i;
		ep->st.sent++;
	}
	return n;
}

static int
pump_credit(struct stream_ep *ep)
{
	struct rdp_send_wr wr[BURST];
	struct rdp_sge sge[BURST];
	struct rdp_credit *c = &ep->cr;
	uint16_t n = 0, k;
	uint64_t data_seq = ep->st.sent;
	int work = 0;

	while (n < BURST - 1) {
		enum rdp_credit_verdict v = RDP_CREDIT_WAIT_REMOTE;
		uint32_t imm;
		uint64_t seq;

		if (data_seq < ep->cfg.count)
			v = rdp_credit_data_check(c);
		if (v == RDP_CREDIT_GO_SIGNALED || v == RDP_CREDIT_GO_UNSIGNALED) {
			bool sig = v == RDP_CREDIT_GO_SIGNALED;

			seq = rdp_credit_data_posted(c, sig, &imm);
			audit_posted(ep, seq);
			ep->last_data_wr = seq + 1;
			data_wr(ep, &wr[n], &sge[n], data_seq++, sig ? RDP_SEND_SIGNALED : 0, imm,
				wr_id(KIND_DATA, seq));
			n++;
			continue;
		}
		v = rdp_credit_ack_check(c);
		if (v == RDP_CREDIT_RECLAIM_FIRST) {
			seq = rdp_credit_reclaim_posted(c);
			audit_posted(ep, seq);
			wr[n++] = (struct rdp_send_wr){ .wr_id = wr_id(KIND_RECLAIM, seq),
							.opcode = RDP_WR_RDMA_WRITE,
							.flags = RDP_SEND_SIGNALED };
			continue;
		}
		if (v == RDP_CREDIT_GO_UNSIGNALED) {
			seq = rdp_credit_ack_posted(c, &imm);
			audit_posted(ep, seq);
			wr[n++] = (struct rdp_send_wr){ .wr_id = wr_id(KIND_ACK, seq),
							.opcode = RDP_WR_SEND_WITH_IMM, .imm = imm };
			continue;
		}
		break;
	}
	/* all data out: one closing reclaim so that every data WR is covered */
	if (data_seq == ep->cfg.count && !ep->reclaim_final && c->sq_ci < ep->last_data_wr &&
	    rdp_credit_sq_inflight(c) < c->sq_size) {
		uint64_t seq = rdp_credit_reclaim_posted(c);

		audit_posted(ep, seq);
		wr[n++] = (struct rdp_send_wr){ .wr_id = wr_id(KIND_RECLAIM, seq),
						.opcode = RDP_WR_RDMA_WRITE,
						.flags = RDP_SEND_SIGNALED };
		ep->reclaim_final = true;
	}
	k = (uint16_t)post_burst(ep, wr, n);
	ep->st.sent = data_seq;
	work += k;
	return work;
}

int
stream_ep_progress(struct stream_ep *ep)
{
	struct rdp_wc wc[BURST];
	int n = rdp_poll_cq(ep->cq, wc, BURST), i, work;

	if (unlikely(n < 0)) {
		ep->st.cq_errors++;
		ep->failed = true;
		return 0;
	}
	for (i = 0; i < n; i++)
		handle(ep, &wc[i]);
	work = n;
	if (ep->failed)
		return work;
	if (ep->nb_repost > 0)
		flush_reposts(ep);
	if (ep->cfg.policy == STREAM_CREDIT)
		work += pump_credit(ep);
	else
		work += pump_legacy(ep);
	return work;
}

bool
stream_ep_done(const struct stream_ep *ep)
{
	if (ep->st.sent != ep->cfg.count || ep->rx_next < ep->cfg.expect)
		return false;
	/* acks may follow; they need no completion */
	if (ep->cfg.policy == STREAM_CREDIT)
		return ep->cr.sq_ci >= ep->last_data_wr;
	return true;
}

bool
stream_ep_audit_drained(const struct stream_ep *ep)
{
	uint64_t s;
	uint32_t i;

	for (i = 0; i < ep->nb_slots; i++)
		if (ep->rq_state[i] == AU_POSTED)
			return false;
	/* no send failed: the unsignaled ones that ran before the error made
	 * no completion, and never will */
	if (ep->first_err_seq == UINT64_MAX)
		return true;
	for (s = ep->first_err_seq; s < ep->cr.sq_pi; s++)
		if (ep->sq_state[s] != AU_DONE)
			return false;
	return true;
}

void
stream_ep_close(struct stream_ep *ep)
{
	RDP_ASSERT_EQ(rdp_qp_destroy(ep->qp), 0);
	RDP_ASSERT_EQ(rdp_cq_destroy(ep->cq), 0);
	RDP_ASSERT_EQ(rdp_mr_free(ep->rx), 0);
	RDP_ASSERT_EQ(rdp_mr_free(ep->tx), 0);
	RDP_ASSERT_EQ(rdp_pd_free(ep->pd), 0);
	free(ep->repost);
	free(ep->sq_state);
	free(ep->rq_state);
}

/* ---------------------------------------------------------------------- */
/* Runners                                                                */
/* ---------------------------------------------------------------------- */

/* Stall detection that reads the clock rarely: it is slow on some VMs. */
struct idle {
	uint32_t polls;
	double since;
};

static bool
stalled(int work, struct idle *i)
{
	if (work > 0) {
		i->polls = 0;
		i->since = 0;
		return false;
	}
	if (++i->polls % 4096 != 0)
		return false;
	if (i->since == 0) {
		i->since = rdp_clock_s();
		return false;
	}
	return rdp_clock_s() - i->since > 30.0;
}

int
stream_run_pair(const char *spec, const struct stream_cfg *ca, const struct stream_cfg *cb,
		struct stream_result *res)
{
	struct rdp_dev *dev = rdp_dev_open(spec);
	struct stream_ep *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct rdp_qp_addr aa, ba;
	struct idle idle = { 0 };
	double t0;
	int ret = 0;

	RDP_ASSERT_MSG(dev != NULL, "rdp_dev_open(%s): %s", spec, rdp_err_msg());
	RDP_ASSERT(a != NULL && b != NULL);
	stream_ep_open(a, dev, ca);
	stream_ep_open(b, dev, cb);
	RDP_ASSERT_EQ(rdp_qp_local_addr(a->qp, &aa), 0);
	RDP_ASSERT_EQ(rdp_qp_local_addr(b->qp, &ba), 0);
	stream_ep_connect(a, &ba, &cb->cp);
	stream_ep_connect(b, &aa, &ca->cp);
	t0 = rdp_clock_s();
	while (!(stream_ep_done(a) && stream_ep_done(b))) {
		int w = stream_ep_progress(a) + stream_ep_progress(b);

		if (a->failed || b->failed) {
			ret = -EIO;
			break;
		}
		if (stalled(w, &idle)) {
			ret = -ETIMEDOUT;
			break;
		}
	}
	res->secs = rdp_clock_s() - t0;
	res->a = a->st;
	res->b = b->st;
	stream_ep_close(a);
	stream_ep_close(b);
	free(a);
	free(b);
	RDP_ASSERT_MSG(rdp_dev_close(dev) == 0, "dev close: %s", rdp_err_msg());
	return ret;
}

struct xmsg {
	struct rdp_qp_addr addr;
	struct rdp_credit_params cp;
};

static void
xsend(int fd, const void *p, size_t len)
{
	RDP_ASSERT_MSG(write(fd, p, len) == (ssize_t)len, "socketpair write: %s", strerror(errno));
}

static void
xrecv(int fd, void *p, size_t len)
{
	RDP_ASSERT_MSG(read(fd, p, len) == (ssize_t)len, "socketpair read: %s", strerror(errno));
}

/* One side of a cross-process run; returns 0, -EIO or -ETIMEDOUT. */
static int
xside(int fd, const char *spec, const struct stream_cfg *cfg, struct stream_stats *st,
      double *secs)
{
	struct rdp_dev *dev = rdp_dev_open(spec);
	struct stream_ep *ep = calloc(1, sizeof(*ep));
	struct xmsg mine, peer;
	struct idle idle = { 0 };
	double t0;
	char done = 'D';
	int ret = 0;

	RDP_ASSERT_MSG(dev != NULL, "rdp_dev_open(%s): %s", spec, rdp_err_msg());
	RDP_ASSERT(ep != NULL);
	stream_ep_open(ep, dev, cfg);
	RDP_ASSERT_EQ(rdp_qp_local_addr(ep->qp, &mine.addr), 0);
	mine.cp = cfg->cp;
	xsend(fd, &mine, sizeof(mine));
	xrecv(fd, &peer, sizeof(peer));
	stream_ep_connect(ep, &peer.addr, &peer.cp);
	/* both connected before anyone sends */
	xsend(fd, &done, 1);
	xrecv(fd, &done, 1);
	t0 = rdp_clock_s();
	while (!stream_ep_done(ep)) {
		int w = stream_ep_progress(ep);

		if (ep->failed) {
			ret = -EIO;
			break;
		}
		if (stalled(w, &idle)) {
			ret = -ETIMEDOUT;
			break;
		}
		/* a peer that failed says so at once: no need to wait for a stall */
		if (w == 0 && idle.polls % 1024 == 0 &&
		    recv(fd, &done, 1, MSG_PEEK | MSG_DONTWAIT) == 1 && done == 'F') {
			ret = -EIO;
			break;
		}
	}
	*secs = rdp_clock_s() - t0;
	*st = ep->st;
	/* tear down only when the peer is done too: a closed QP fails its sends */
	done = ret == 0 ? 'D' : 'F';
	xsend(fd, &done, 1);
	xrecv(fd, &done, 1);
	stream_ep_close(ep);
	free(ep);
	RDP_ASSERT_MSG(rdp_dev_close(dev) == 0, "dev close: %s", rdp_err_msg());
	return ret;
}

int
stream_run_xproc(const char *spec_a, const char *spec_b, const struct stream_cfg *ca,
		 const struct stream_cfg *cb, struct stream_result *res)
{
	int sv[2], status, ret;
	double secs_b;
	pid_t pid;

	RDP_ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	fflush(stdout);
	pid = fork();
	RDP_ASSERT(pid >= 0);
	if (pid == 0) {
		struct stream_stats st;

		close(sv[0]);
		ret = xside(sv[1], spec_b, cb, &st, &secs_b);
		xsend(sv[1], &st, sizeof(st));
		_exit(ret == 0 ? 0 : 3);
	}
	close(sv[1]);
	ret = xside(sv[0], spec_a, ca, &res->a, &res->secs);
	xrecv(sv[0], &res->b, sizeof(res->b));
	close(sv[0]);
	RDP_ASSERT_EQ(waitpid(pid, &status, 0), pid);
	RDP_ASSERT_MSG(WIFEXITED(status), "the peer process died (signal %d)",
		       WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	if (ret == 0 && WEXITSTATUS(status) != 0)
		ret = -EIO;
	return ret;
}

void
stream_result_print(const char *what, const struct stream_result *res)
{
	uint64_t msgs = res->a.received + res->b.received;

	printf("%s: %" PRIu64 " messages (%" PRIu64 " + %" PRIu64 ") in %.2f s: %.2f M msgs/s\n",
	       what, msgs, res->a.received, res->b.received, res->secs,
	       res->secs > 0 ? msgs / res->secs / 1e6 : 0.0);
}

void
stream_assert_clean(const struct stream_stats *s, const char *side)
{
	RDP_ASSERT_MSG(s->enomem == 0 && s->post_errors == 0 && s->rnr == 0 &&
		       s->wc_errors == 0 && s->flushed == 0 && s->bad_data == 0 &&
		       s->cq_errors == 0 && s->audit_errors == 0,
		       "side %s: enomem %" PRIu64 " post_errors %" PRIu64 " rnr %" PRIu64
		       " wc_errors %" PRIu64 " flushed %" PRIu64 " bad_data %" PRIu64
		       " cq_errors %" PRIu64 " audit_errors %" PRIu64, side, s->enomem,
		       s->post_errors, s->rnr, s->wc_errors, s->flushed, s->bad_data,
		       s->cq_errors, s->audit_errors);
}
