/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Driver conformance, shared receive queues (suite `conf`, so on shm in
 * all three conformance runs and on rxe in the VM lane): one SRQ on the
 * driver under test with several QPs taking their receives from it, each
 * QP connected to a peer of its own (conf_pair_open_srq(): another process
 * with RDP_TEST_CONF_PEER=process). The peers send; the SRQ's side checks
 * order, the QP each completion names, RNR, what an error or a destroyed
 * QP does to the SRQ's receives, the limit event and the refusals.
 *
 * A driver without SRQs (max_srq_wr 0, or rdp_srq_create() -ENOTSUP) makes
 * every test here skip, saying so.
 */
#include <errno.h>
#include <unistd.h>

#include <rte_errno.h>

#include <pthread.h>

#include "conf_pair.h"
#include "rdp_test.h"
#include "shm_private.h"

#define T_MS 5000 /* deadline for completions that must come */
#define Q_MS 30   /* window in which nothing may come */
#define MAX_QPS 3
#define SLOT 256  /* bytes of the SRQ's buffer per receive */

/* One SRQ and the QPs on it, each with a peer. */
struct srq_host {
	struct rdp_dev *dev;
	struct rdp_pd *pd;
	struct rdp_cq *cq;   /* send and recv CQ of every QP on the SRQ */
	struct rdp_srq *srq;
	struct rdp_mr *buf;  /* the SRQ's receive buffers */
	struct conf_pair pair[MAX_QPS];
	int nb;
};

/* Open the device, the SRQ and @p nb QPs on it; RDP_TEST_SKIPPED without SRQs. */
static int
host_open(struct srq_host *h, uint32_t max_wr, int nb, const struct conf_opts *o)
{
	struct rdp_srq_init_attr sa = { .max_wr = max_wr, .max_sge = 1, .socket = -1 };
	struct rdp_dev_attr attr;
	int i;

	memset(h, 0, sizeof(*h));
	for (i = 0; i < nb; i++)
		conf_pair_prepare_srq(&h->pair[i], o);
	h->dev = rdp_dev_open(rdp_test_driver());
	RDP_ASSERT_MSG(h->dev != NULL, "rdp_dev_open: %s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_dev_query(h->dev, &attr), 0);
	if (attr.max_srq_wr == 0) {
		for (i = 0; i < nb; i++)
			conf_pair_unprepare_srq(&h->pair[i]);
		RDP_ASSERT_EQ(rdp_dev_close(h->dev), 0);
		return rdp_test_skip("driver %s has no shared receive queue (max_srq_wr 0)",
				     rdp_test_driver());
	}
	h->pd = rdp_pd_alloc(h->dev);
	RDP_ASSERT(h->pd != NULL);
	h->cq = rdp_cq_create(h->dev, 256, -1);
	RDP_ASSERT_MSG(h->cq != NULL, "rdp_cq_create: %s", rdp_err_msg());
	/* before any QP connects: every peer maps it */
	h->buf = rdp_mr_alloc(h->pd, CONF_BUF_SIZE, -1, RDP_ACCESS_LOCAL_WRITE);
	RDP_ASSERT_MSG(h->buf != NULL, "rdp_mr_alloc: %s", rdp_err_msg());
	h->srq = rdp_srq_create(h->pd, &sa);
	RDP_ASSERT_MSG(h->srq != NULL, "rdp_srq_create: %s", rdp_err_msg());
	for (i = 0; i < nb; i++)
		conf_pair_open_srq(&h->pair[i], h->dev, h->pd, h->cq, h->srq, o);
	h->nb = nb;
	return 0;
}

static void
host_close(struct srq_host *h)
{
	int i;

	for (i = 0; i < h->nb; i++)
		conf_pair_close_srq(&h->pair[i]);
	RDP_ASSERT_MSG(rdp_srq_destroy(h->srq) == 0, "rdp_srq_destroy: %s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_mr_free(h->buf), 0);
	RDP_ASSERT_EQ(rdp_cq_destroy(h->cq), 0);
	RDP_ASSERT_EQ(rdp_pd_free(h->pd), 0);
	RDP_ASSERT_MSG(rdp_dev_close(h->dev) == 0, "rdp_dev_close: %s", rdp_err_msg());
}

/* Post receive @p wr_id on the SRQ into slot @p slot of its buffer; the post error. */
static int
srq_post(struct srq_host *h, uint64_t wr_id, uint32_t slot)
{
	struct rdp_sge sge = { .addr = (uintptr_t)h->buf->addr + slot * SLOT, .length = SLOT,
			       .lkey = h->buf->lkey };
	struct rdp_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };
	int err;

	rdp_post_srq_recv(h->srq, &wr, 1, &err);
	return err;
}

/* Poll the SRQ side's CQ until @p want completions or @p ms passed. */
static int
host_poll(struct srq_host *h, struct rdp_wc *wc, int want, int ms)
{
	double deadline = rdp_clock_s() + ms / 1000.0;
	int got = 0;

	while (got < want) {
		int r = rdp_poll_cq(h->cq, wc + got, (uint16_t)(want - got));

		RDP_ASSERT_MSG(r >= 0, "rdp_poll_cq failed: %d", r);
		got += r;
		if (r == 0 && rdp_clock_s() > deadline)
			break;
	}
	return got;
}

static void
host_quiet(struct srq_host *h, int ms)
{
	struct rdp_wc wc;

	RDP_ASSERT_MSG(host_poll(h, &wc, 1, ms) == 0, "unexpected completion: wr_id %" PRIu64
		       " status %s qp %u", wc.wr_id, rdp_wc_status_str(wc.status), wc.qp_num);
}

/* Peer of QP @p q sends @p len bytes with immediate @p imm, signaled; asserts it completes. */
static void
peer_send(struct srq_host *h, int q, uint32_t len, uint32_t imm)
{
	struct rdp_wc wc;

	conf_tx_fill(&h->pair[q].b, 0, len, (uint8_t)imm);
	RDP_ASSERT_EQ(conf_post_send(&h->pair[q].b, RDP_WR_SEND_WITH_IMM, RDP_SEND_SIGNALED,
				     imm, 0, len, imm, 0, 0), 0);
	RDP_ASSERT_EQ(conf_poll(&h->pair[q].b, &wc, 1, T_MS), 1);
	RDP_ASSERT_MSG(wc.status == RDP_WC_SUCCESS, "peer %d: send %u: %s", q, imm,
		       rdp_wc_status_str(wc.status));
}

/* The next completion on the SRQ side: receive @p wr_id on QP @p q, with @p imm. */
static void
expect_recv(struct srq_host *h, int q, uint64_t wr_id, uint32_t imm, uint32_t len)
{
	struct rdp_wc wc;

	RDP_ASSERT_MSG(host_poll(h, &wc, 1, T_MS) == 1, "receive %" PRIu64 " never came", wr_id);
	RDP_ASSERT_MSG(wc.status == RDP_WC_SUCCESS, "receive %" PRIu64 ": %s", wc.wr_id,
		       rdp_wc_status_str(wc.status));
	RDP_ASSERT_EQ(wc.opcode, RDP_WC_RECV);
	RDP_ASSERT_MSG(wc.wr_id == wr_id, "SEND %u took receive %" PRIu64 ", the SRQ's next is %"
		       PRIu64, imm, wc.wr_id, wr_id);
	RDP_ASSERT_MSG(wc.qp_num == h->pair[q].a.qp_num, "receive %" PRIu64 " names QP %u, it "
		       "arrived on QP %u", wr_id, wc.qp_num, h->pair[q].a.qp_num);
	RDP_ASSERT(wc.wc_flags & RDP_WC_WITH_IMM);
	RDP_ASSERT_EQ(wc.imm, imm);
	RDP_ASSERT_EQ(wc.byte_len, len);
}

/* Does slot @p slot of the SRQ's buffer hold what peer @p q sent from its tx? */
static bool
slot_holds(struct srq_host *h, uint32_t slot, int q, uint32_t len)
{
	uint8_t sent[SLOT];

	conf_read(&h->pair[q].b, CONF_TX, 0, sent, len);
	return memcmp((uint8_t *)h->buf->addr + slot * SLOT, sent, len) == 0;
}

RDP_TEST(conf, conf_srq_receives_of_three_qps_complete_in_srq_posting_order_naming_their_qp)
{
	static const int from[] = { 0, 1, 2, 2, 1, 0, 1, 0, 2 };
	struct srq_host h;
	struct conf_opts o;
	uint32_t k;
	int ret;

	conf_opts_default(&o);
	ret = host_open(&h, 16, 3, &o);
	if (ret != 0)
		return ret;
	for (k = 0; k < RTE_DIM(from); k++)
		RDP_ASSERT_EQ(srq_post(&h, 1000 + k, k), 0);
	/* one at a time, so that the order of arrival is the order of sending */
	for (k = 0; k < RTE_DIM(from); k++) {
		uint32_t len = 40 + 7 * k;

		peer_send(&h, from[k], len, k);
		expect_recv(&h, from[k], 1000 + k, k, len);
		RDP_ASSERT_MSG(slot_holds(&h, k, from[k], len), "receive %u holds other bytes", k);
	}
	host_quiet(&h, Q_MS);
	host_close(&h);
	return 0;
}

RDP_TEST(conf, conf_srq_empty_is_rnr_as_an_empty_rq_and_other_qps_go_on)
{
	struct rdp_dev_stats st;
	struct srq_host h;
	struct conf_opts o;
	struct rdp_wc wc;
	int ret;

	conf_opts_default(&o); /* rnr_retry 0: an RNR is fatal to the sender */
	ret = host_open(&h, 8, 2, &o);
	if (ret != 0)
		return ret;
	RDP_ASSERT_EQ(conf_post_send(&h.pair[0].b, RDP_WR_SEND, RDP_SEND_SIGNALED, 1, 0, 8, 0, 0,
				     0), 0);
	RDP_ASSERT_EQ(conf_poll(&h.pair[0].b, &wc, 1, T_MS), 1);
	RDP_ASSERT_MSG(wc.status == RDP_WC_RNR_RETRY_EXC_ERR, "a SEND into an empty SRQ: %s",
		       rdp_wc_status_str(wc.status));
	RDP_ASSERT_EQ(conf_qp_state(&h.pair[0].b), RDP_QPS_ERR);
	/* the receiver is not hurt, and nothing was consumed */
	RDP_ASSERT_EQ(conf_qp_state(&h.pair[0].a), RDP_QPS_RTS);
	host_quiet(&h, Q_MS);
	if (h.pair[0].b.agent < 0) {
		RDP_ASSERT_EQ(rdp_dev_stats_get(h.dev, &st), 0);
		RDP_ASSERT_MSG(st.rnr >= 1, "the RNR was not counted");
	}
	RDP_ASSERT_EQ(srq_post(&h, 77, 0), 0);
	peer_send(&h, 1, 16, 5);
	expect_recv(&h, 1, 77, 5, 16);
	host_close(&h);
	return 0;
}

RDP_TEST(conf, conf_srq_empty_with_rnr_retry_waits_for_a_posted_receive)
{
	struct srq_host h;
	struct conf_opts o;
	struct rdp_wc wc;
	int ret;

	conf_opts_default(&o);
	o.rnr_retry = 7; /* retry forever */
	ret = host_open(&h, 8, 2, &o);
	if (ret != 0)
		return ret;
	conf_tx_fill(&h.pair[1].b, 0, 24, 9);
	RDP_ASSERT_EQ(conf_post_send(&h.pair[1].b, RDP_WR_SEND_WITH_IMM, RDP_SEND_SIGNALED, 1, 0,
				     24, 42, 0, 0), 0);
	conf_quiet(&h.pair[1].b, Q_MS);
	host_quiet(&h, Q_MS);
	RDP_ASSERT_EQ(srq_post(&h, 500, 3), 0);
	/* the sender's retries run on its own calls: poll it first */
	RDP_ASSERT_EQ(conf_poll(&h.pair[1].b, &wc, 1, T_MS), 1);
	RDP_ASSERT_MSG(wc.status == RDP_WC_SUCCESS, "the retried SEND: %s",
		       rdp_wc_status_str(wc.status));
	expect_recv(&h, 1, 500, 42, 24);
	RDP_ASSERT(slot_holds(&h, 3, 1, 24));
	host_close(&h);
	return 0;
}

RDP_TEST(conf, conf_srq_qp_error_flushes_its_sends_and_none_of_the_srq_receives)
{
	struct srq_host h;
	struct conf_opts o;
	struct rdp_wc wc;
	int ret, k;

	conf_opts_default(&o);
	o.rnr_retry = 7; /* QP 0's SEND to its peer's empty RQ waits */
	ret = host_open(&h, 16, 3, &o);
	if (ret != 0)
		return ret;
	for (k = 0; k < 6; k++)
		RDP_ASSERT_EQ(srq_post(&h, 100 + k, k), 0);
	peer_send(&h, 0, 10, 0);
	expect_recv(&h, 0, 100, 0, 10);
	/* an outstanding send of QP 0, which its error must flush */
	RDP_ASSERT_EQ(conf_post_send(&h.pair[0].a, RDP_WR_SEND, RDP_SEND_SIGNALED, 9, 0, 8, 0, 0,
				     0), 0);
	host_quiet(&h, Q_MS);
	conf_qp_err(&h.pair[0].a);
	RDP_ASSERT_EQ(host_poll(&h, &wc, 1, T_MS), 1);
	RDP_ASSERT_MSG(wc.wr_id == 9 && wc.status == RDP_WC_WR_FLUSH_ERR,
		       "QP 0's error: wr_id %" PRIu64 " %s, want its send 9 flushed", wc.wr_id,
		       rdp_wc_status_str(wc.status));
	RDP_ASSERT_EQ(wc.qp_num, h.pair[0].a.qp_num);
	/* and not one of the five receives still on the SRQ */
	host_quiet(&h, 3 * Q_MS);
	RDP_ASSERT_EQ(conf_qp_state(&h.pair[0].a), RDP_QPS_ERR);
	for (k = 1; k < 6; k++) {
		int q = 1 + k % 2;

		peer_send(&h, q, 20 + k, k);
		expect_recv(&h, q, 100 + k, k, 20 + k);
	}
	host_quiet(&h, Q_MS);
	host_close(&h);
	return 0;
}

RDP_TEST(conf, conf_srq_destroying_a_qp_whose_peer_keeps_sending_loses_no_receive)
{
	enum { POSTED = 12, BURST = 4 };
	bool seen[POSTED] = { false };
	struct srq_host h;
	struct conf_opts o;
	struct rdp_wc wc[POSTED];
	int ret, k, n, got = 0, left;

	conf_opts_default(&o); /* rnr_retry 0: one SEND too many is an RNR */
	ret = host_open(&h, 32, 3, &o);
	if (ret != 0)
		return ret;
	for (k = 0; k < POSTED; k++)
		RDP_ASSERT_EQ(srq_post(&h, k, k), 0);
	/* QP 0's peer sends a burst, and QP 0 is destroyed behind it */
	for (k = 0; k < BURST; k++)
		RDP_ASSERT_EQ(conf_post_send(&h.pair[0].b, RDP_WR_SEND, 0, k, 0, 8, 0, 0, 0), 0);
	conf_qp_destroy(&h.pair[0].a);
	/* ... and keeps sending into the QP that is gone */
	for (k = 0; k < 2; k++)
		conf_post_send(&h.pair[0].b, RDP_WR_SEND, 0, BURST + k, 0, 8, 0, 0, 0);
	/* whatever QP 0 took completes, once each */
	while ((n = host_poll(&h, wc + got, POSTED - got, 300)) > 0)
		got += n;
	for (k = 0; k < got; k++) {
		RDP_ASSERT_MSG(wc[k].wr_id < POSTED && !seen[wc[k].wr_id],
			       "receive %" PRIu64 " completed twice or was never posted",
			       wc[k].wr_id);
		seen[wc[k].wr_id] = true;
		RDP_ASSERT_MSG(wc[k].qp_num == h.pair[0].a.qp_num, "receive %" PRIu64 " names QP "
			       "%u, not the destroyed QP %u", wc[k].wr_id, wc[k].qp_num,
			       h.pair[0].a.qp_num);
		RDP_ASSERT_EQ(wc[k].status, RDP_WC_SUCCESS);
	}
	RDP_ASSERT_MSG(got <= BURST, "%d receives completed for %d SENDs", got, BURST);
	/* the rest are still posted: exactly that many SENDs find one */
	left = POSTED - got;
	printf("QP 0 completed %d receives before it went; %d left on the SRQ\n", got, left);
	for (k = 0; k < left; k++) {
		struct rdp_wc w;

		peer_send(&h, 1, 12, 100 + k);
		RDP_ASSERT_MSG(host_poll(&h, &w, 1, T_MS) == 1, "receive %d of %d left is lost", k,
			       left);
		RDP_ASSERT_EQ(w.status, RDP_WC_SUCCESS);
		RDP_ASSERT_EQ(w.qp_num, h.pair[1].a.qp_num);
		RDP_ASSERT_MSG(w.wr_id < POSTED && !seen[w.wr_id], "receive %" PRIu64
			       " completed twice", w.wr_id);
		seen[w.wr_id] = true;
	}
	RDP_ASSERT_EQ(conf_post_send(&h.pair[1].b, RDP_WR_SEND, RDP_SEND_SIGNALED, 999, 0, 8, 0,
				     0, 0), 0);
	RDP_ASSERT_EQ(conf_poll(&h.pair[1].b, wc, 1, T_MS), 1);
	RDP_ASSERT_MSG(wc[0].status == RDP_WC_RNR_RETRY_EXC_ERR, "a SEND beyond the %d receives "
		       "posted: %s", POSTED, rdp_wc_status_str(wc[0].status));
	host_quiet(&h, Q_MS);
	host_close(&h);
	return 0;
}

/* Wait up to @p ms for an SRQ limit event; other events are not expected. */
static bool
limit_event(struct srq_host *h, int ms)
{
	double deadline = rdp_clock_s() + ms / 1000.0;
	struct rdp_event ev;

	do {
		int r = rdp_dev_event_get(h->dev, &ev);

		if (r == 0) {
			RDP_ASSERT_MSG(ev.type == RDP_EVENT_SRQ_LIMIT, "unexpected event %u", ev.type);
			RDP_ASSERT(ev.srq == h->srq);
			return true;
		}
		RDP_ASSERT_EQ(r, -EAGAIN);
		usleep(1000);
	} while (rdp_clock_s() < deadline);
	return false;
}

static uint32_t
armed(struct srq_host *h)
{
	struct rdp_srq_attr a;

	RDP_ASSERT_EQ(rdp_srq_query(h->srq, &a), 0);
	RDP_ASSERT_EQ(a.max_wr, 16);
	return a.srq_limit;
}

RDP_TEST(conf, conf_srq_limit_event_fires_once_when_the_receives_left_drop_below_it)
{
	struct srq_host h;
	struct conf_opts o;
	int ret, k;

	conf_opts_default(&o);
	ret = host_open(&h, 16, 2, &o);
	if (ret != 0)
		return ret;
	RDP_ASSERT_EQ(rdp_srq_modify_limit(h.srq, 17), -EINVAL);
	for (k = 0; k < 8; k++)
		RDP_ASSERT_EQ(srq_post(&h, k, k), 0);
	RDP_ASSERT_EQ(rdp_srq_modify_limit(h.srq, 4), 0);
	RDP_ASSERT_EQ(armed(&h), 4);
	/* 4 left: not below the limit */
	for (k = 0; k < 4; k++) {
		peer_send(&h, k % 2, 8, k);
		expect_recv(&h, k % 2, k, k, 8);
	}
	RDP_ASSERT_MSG(!limit_event(&h, Q_MS), "limit event with 4 receives left, limit 4");
	peer_send(&h, 0, 8, 4);
	expect_recv(&h, 0, 4, 4, 8);
	RDP_ASSERT_MSG(limit_event(&h, T_MS), "no limit event with 3 receives left, limit 4");
	RDP_ASSERT_MSG(armed(&h) == 0, "the limit stays armed after its event");
	for (k = 5; k < 7; k++) {
		peer_send(&h, 1, 8, k);
		expect_recv(&h, 1, k, k, 8);
	}
	RDP_ASSERT_MSG(!limit_event(&h, Q_MS), "a second limit event without re-arming");
	/* armed again: the next receive taken below it fires */
	RDP_ASSERT_EQ(rdp_srq_modify_limit(h.srq, 2), 0);
	peer_send(&h, 0, 8, 7);
	expect_recv(&h, 0, 7, 7, 8);
	RDP_ASSERT_MSG(limit_event(&h, T_MS), "no limit event once re-armed");
	host_close(&h);
	return 0;
}

RDP_TEST(conf, conf_srq_post_recv_on_a_qp_with_an_srq_is_refused)
{
	struct rdp_sge sge;
	struct rdp_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
	struct srq_host h;
	struct conf_opts o;
	int ret, err;

	conf_opts_default(&o);
	ret = host_open(&h, 8, 1, &o);
	if (ret != 0)
		return ret;
	sge = (struct rdp_sge){ .addr = (uintptr_t)h.buf->addr, .length = 64,
				.lkey = h.buf->lkey };
	RDP_ASSERT_EQ(rdp_post_recv(h.pair[0].a.qp, &wr, 1, &err), 0);
	RDP_ASSERT_EQ(err, -EINVAL);
	RDP_ASSERT(h.pair[0].a.qp->srq == h.srq);
	/* the SRQ takes it, and the QP receives into it */
	RDP_ASSERT_EQ(rdp_post_srq_recv(h.srq, &wr, 1, &err), 1);
	RDP_ASSERT_EQ(err, 0);
	peer_send(&h, 0, 8, 3);
	expect_recv(&h, 0, 1, 3, 8);
	host_close(&h);
	return 0;
}

RDP_TEST(conf, conf_srq_post_beyond_max_wr_is_enomem_until_a_receive_completes)
{
	struct rdp_sge sge[6];
	struct rdp_recv_wr wr[6];
	struct srq_host h;
	struct conf_opts o;
	int ret, err, k;

	conf_opts_default(&o);
	ret = host_open(&h, 4, 1, &o);
	if (ret != 0)
		return ret;
	for (k = 0; k < 6; k++) {
		sge[k] = (struct rdp_sge){ .addr = (uintptr_t)h.buf->addr + k * SLOT,
					   .length = SLOT, .lkey = h.buf->lkey };
		wr[k] = (struct rdp_recv_wr){ .wr_id = k, .sg_list = &sge[k], .num_sge = 1 };
	}
	RDP_ASSERT_EQ(rdp_post_srq_recv(h.srq, wr, 6, &err), 4);
	RDP_ASSERT_EQ(err, -ENOMEM);
	RDP_ASSERT_EQ(rdp_post_srq_recv(h.srq, &wr[4], 1, &err), 0);
	RDP_ASSERT_EQ(err, -ENOMEM);
	peer_send(&h, 0, 8, 1);
	expect_recv(&h, 0, 0, 1, 8);
	RDP_ASSERT_EQ(rdp_post_srq_recv(h.srq, &wr[4], 2, &err), 1);
	RDP_ASSERT_EQ(err, -ENOMEM);
	host_close(&h);
	return 0;
}

RDP_TEST(conf, conf_srq_destroy_while_a_qp_uses_it_is_busy)
{
	struct srq_host h;
	struct conf_opts o;
	int ret;

	conf_opts_default(&o);
	ret = host_open(&h, 8, 2, &o);
	if (ret != 0)
		return ret;
	RDP_ASSERT_EQ(rdp_srq_destroy(h.srq), -EBUSY);
	conf_pair_close_srq(&h.pair[1]);
	h.nb = 1;
	RDP_ASSERT_EQ(rdp_srq_destroy(h.srq), -EBUSY);
	/* the SRQ still works for the QP left */
	RDP_ASSERT_EQ(srq_post(&h, 5, 0), 0);
	peer_send(&h, 0, 8, 2);
	expect_recv(&h, 0, 5, 2, 8);
	conf_pair_close_srq(&h.pair[0]);
	h.nb = 0;
	/* an object of its device until destroyed */
	RDP_ASSERT_EQ(rdp_dev_close(h.dev), -EBUSY);
	host_close(&h);
	return 0;
}

RDP_TEST(conf, conf_srq_create_refuses_zero_and_beyond_the_device_limits)
{
	struct rdp_srq_init_attr sa = { .max_wr = 0, .max_sge = 1, .socket = -1 };
	struct rdp_dev_attr attr;
	struct rdp_dev *dev;
	struct rdp_pd *pd;
	struct rdp_srq *srq;

	dev = rdp_dev_open(rdp_test_driver());
	RDP_ASSERT_MSG(dev != NULL, "rdp_dev_open: %s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_dev_query(dev, &attr), 0);
	if (attr.max_srq_wr == 0) {
		RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
		return rdp_test_skip("driver %s has no shared receive queue (max_srq_wr 0)",
				     rdp_test_driver());
	}
	pd = rdp_pd_alloc(dev);
	RDP_ASSERT(pd != NULL);
	RDP_ASSERT(rdp_srq_create(pd, &sa) == NULL);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	sa.max_wr = attr.max_srq_wr + 1;
	RDP_ASSERT(rdp_srq_create(pd, &sa) == NULL);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	sa.max_wr = 8;
	sa.max_sge = attr.max_srq_sge + 1;
	RDP_ASSERT(rdp_srq_create(pd, &sa) == NULL);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	sa.max_sge = 1;
	sa.srq_limit = 9;
	RDP_ASSERT(rdp_srq_create(pd, &sa) == NULL);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	/* the largest the device allows is fine */
	sa.srq_limit = 0;
	sa.max_wr = attr.max_srq_wr;
	srq = rdp_srq_create(pd, &sa);
	RDP_ASSERT_MSG(srq != NULL, "rdp_srq_create(max_srq_wr %u): %s", attr.max_srq_wr,
		       rdp_err_msg());
	RDP_ASSERT_EQ(rdp_srq_destroy(srq), 0);
	RDP_ASSERT_EQ(rdp_pd_free(pd), 0);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	return 0;
}

/* One peer's sender thread: @p n signaled SENDs, one at a time; the first failure. */
struct racer {
	struct srq_host *h;
	int q;
	uint32_t n;
	uint32_t done;
	uint8_t status;    /* the first send that failed, RDP_WC_SUCCESS if none */
};

static void *
racer_main(void *arg)
{
	struct racer *r = arg;
	struct conf_side *s = &r->h->pair[r->q].b;
	uint32_t i;

	conf_tx_fill(s, 0, 64, (uint8_t)r->q);
	for (i = 0; i < r->n; i++) {
		struct rdp_wc wc;

		if (conf_post_send(s, RDP_WR_SEND_WITH_IMM, RDP_SEND_SIGNALED, i, 0, 64, i, 0, 0) != 0 ||
		    conf_poll(s, &wc, 1, T_MS) != 1) {
			r->status = RDP_WC_GENERAL_ERR;
			break;
		}
		if (wc.status != RDP_WC_SUCCESS) {
			r->status = wc.status;
			break;
		}
		__atomic_store_n(&r->done, i + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/*
 * Two senders on two threads claim entries of one SRQ at once while its
 * owner keeps it full, reposting every receive as it completes. The claim
 * index they share moves under each of them; a sender that read it before
 * the owner posted again must not take the SRQ for garbage (a remote
 * operation error that failed the QP: seen in the soak with srq = on).
 */
RDP_TEST(shm, shm_srq_two_senders_at_once_into_a_full_srq_see_no_remote_error)
{
	enum { N = 200000, DEPTH = 16 };
	struct racer r[2];
	pthread_t t[2];
	struct srq_host h;
	struct conf_opts o;
	uint64_t received = 0;
	double deadline;
	uint32_t k;
	int i, ret;

	conf_opts_default(&o);
	o.rnr_retry = 7; /* a sender faster than the owner waits for its next receive */
	ret = host_open(&h, DEPTH, 2, &o);
	if (ret != 0)
		return ret;
	for (k = 0; k < DEPTH; k++)
		RDP_ASSERT_EQ(srq_post(&h, k, k), 0);
	for (i = 0; i < 2; i++) {
		r[i] = (struct racer){ .h = &h, .q = i, .n = N, .status = RDP_WC_SUCCESS };
		RDP_ASSERT(pthread_create(&t[i], NULL, racer_main, &r[i]) == 0);
	}
	deadline = rdp_clock_s() + 120;
	while (received < 2u * N && rdp_clock_s() < deadline &&
	       r[0].status == RDP_WC_SUCCESS && r[1].status == RDP_WC_SUCCESS) {
		struct rdp_wc wc[DEPTH];
		int n = rdp_poll_cq(h.cq, wc, DEPTH), j;

		RDP_ASSERT(n >= 0);
		for (j = 0; j < n; j++) {
			RDP_ASSERT_MSG(wc[j].status == RDP_WC_SUCCESS, "receive %" PRIu64 ": %s",
				       wc[j].wr_id, rdp_wc_status_str(wc[j].status));
			/* the same slot again, at the tail: the SRQ stays full */
			RDP_ASSERT_EQ(srq_post(&h, wc[j].wr_id, (uint32_t)wc[j].wr_id), 0);
		}
		received += (uint64_t)n;
	}
	for (i = 0; i < 2; i++)
		RDP_ASSERT(pthread_join(t[i], NULL) == 0);
	for (i = 0; i < 2; i++)
		RDP_ASSERT_MSG(r[i].status == RDP_WC_SUCCESS, "sender %d failed after %u sends: %s",
			       i, r[i].done, rdp_wc_status_str(r[i].status));
	RDP_ASSERT_EQ(received, 2u * N);
	host_close(&h);
	return 0;
}

/*
 * An SRQ of @p max_wr with @p nb QPs whose peers are in this process, on
 * the shm driver: what its shared memory holds can be read and written here.
 * Receives 0 to @p posted - 1 are posted, receive k into slot k.
 */
static int
shm_host_open(struct srq_host *h, uint32_t max_wr, int nb, uint32_t posted)
{
	struct conf_opts o;
	uint32_t k;
	int ret;

	if (strncmp(rdp_test_driver(), "shm", 3) != 0)
		return rdp_test_skip("driver %s: the shm driver's shared memory", rdp_test_driver());
	conf_opts_default(&o);
	ret = host_open(h, max_wr, nb, &o);
	if (ret != 0)
		return ret;
	if (h->pair[0].b.qp == NULL) {
		host_close(h);
		return rdp_test_skip("its peers live in another process (RDP_TEST_CONF_PEER)");
	}
	for (k = 0; k < posted; k++)
		RDP_ASSERT_EQ(srq_post(h, k, k), 0);
	return 0;
}

/*
 * A sender in another process killed between its claim of an SRQ entry and
 * the entry's completion leaves that entry claimed for ever, and the SRQ
 * completes its entries in order: every QP on it would wait behind the
 * dead one (the soak with srq = on lost every message of that poller from
 * there on). Here by hand, what such a sender leaves: the SRQ's next
 * entry claimed in QP 0's name, nothing completed.
 * While its peer lives, the entry is its peer's to complete and nothing
 * behind it comes; once the peer is gone, the entry completes flushed on
 * QP 0 and the SRQ goes on.
 */
RDP_TEST(shm, shm_srq_entry_claimed_by_a_sender_that_died_is_flushed_and_the_srq_goes_on)
{
	struct shm_qp_seg *qseg, *sseg;
	struct srq_host h;
	struct rdp_wc wc;
	int ret;

	ret = shm_host_open(&h, 16, 2, 4);
	if (ret != 0)
		return ret;
	qseg = to_sqp(h.pair[0].a.qp)->seg;
	sseg = to_ssrq(h.srq)->seg;
	__atomic_store_n(&qseg->srq_claim_n, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&qseg->srq_claim_at, __atomic_load_n(&sseg->rq_claim, __ATOMIC_ACQUIRE),
			 __ATOMIC_RELEASE);
	__atomic_fetch_add(&sseg->rq_claim, 1, __ATOMIC_ACQ_REL);
	/* QP 1's SEND takes the entry behind it; a live sender's claim is not taken */
	peer_send(&h, 1, 12, 7);
	host_quiet(&h, 50);
	/* the sender dies: its QP goes */
	conf_qp_destroy(&h.pair[0].b);
	RDP_ASSERT_MSG(host_poll(&h, &wc, 1, T_MS) == 1, "the SRQ stopped behind the entry a "
		       "dead sender claimed");
	RDP_ASSERT_MSG(wc.wr_id == 0 && wc.status == RDP_WC_WR_FLUSH_ERR &&
		       wc.qp_num == h.pair[0].a.qp_num, "the dead sender's entry completed as "
		       "receive %" PRIu64 " %s on QP %u, expected 0 WR_FLUSH_ERR on QP %u",
		       wc.wr_id, rdp_wc_status_str(wc.status), wc.qp_num, h.pair[0].a.qp_num);
	expect_recv(&h, 1, 1, 7, 12);
	peer_send(&h, 1, 20, 8);
	expect_recv(&h, 1, 2, 8, 20);
	host_quiet(&h, Q_MS);
	host_close(&h);
	return 0;
}

/*
 * The SRQ's next entry to be claimed (its index into @p idx), named as
 * arrived on a QP that no sender names, so that a test sees whether a
 * sender wrote it.
 */
static struct shm_rq_ent *
srq_next_ent_marked(struct shm_srq *srq, uint64_t *idx)
{
	struct shm_rq_ent *ent;

	*idx = __atomic_load_n(&srq->seg->rq_claim, __ATOMIC_ACQUIRE);
	ent = shm_rq_ent(srq->ents, srq->rq_mask, srq->rq_stride, *idx);
	ent->src_slot = 0xdead;
	ent->src_qpn = 0xbeef;
	return ent;
}

/*
 * The same, for a sender killed just after it took the entry: the claim
 * word says FILLING and nothing else of the entry was written yet (its QP
 * is named only after the claim word, on the line the poller polls). The
 * owner finds the dead sender by its claim, as for an entry not taken
 * yet, and completes the entry flushed on QP 0 once the peer is gone.
 */
RDP_TEST(shm, shm_srq_entry_a_sender_died_filling_is_flushed_on_its_qp)
{
	struct shm_qp_seg *qseg, *sseg;
	struct shm_rq_ent *ent;
	struct shm_srq *srq;
	struct srq_host h;
	struct rdp_wc wc;
	uint64_t idx;
	int ret;

	ret = shm_host_open(&h, 16, 2, 4);
	if (ret != 0)
		return ret;
	srq = to_ssrq(h.srq);
	qseg = to_sqp(h.pair[0].a.qp)->seg;
	sseg = srq->seg;
	ent = srq_next_ent_marked(srq, &idx);
	__atomic_store_n(&qseg->srq_claim_n, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&qseg->srq_claim_at, idx, __ATOMIC_RELEASE);
	__atomic_fetch_add(&sseg->rq_claim, 1, __ATOMIC_ACQ_REL);
	__atomic_store_n(&shm_srq_ent_tail(ent, srq->rq_stride)->claim, shm_srq_seq_filling(idx),
			 __ATOMIC_RELEASE);
	peer_send(&h, 1, 12, 7);
	host_quiet(&h, 50);
	conf_qp_destroy(&h.pair[0].b);
	RDP_ASSERT_MSG(host_poll(&h, &wc, 1, T_MS) == 1, "the SRQ stopped behind the entry a "
		       "dead sender was filling");
	RDP_ASSERT_MSG(wc.wr_id == idx && wc.status == RDP_WC_WR_FLUSH_ERR &&
		       wc.qp_num == h.pair[0].a.qp_num, "the dead sender's entry completed as "
		       "receive %" PRIu64 " %s on QP %u, expected %" PRIu64 " WR_FLUSH_ERR on QP %u",
		       wc.wr_id, rdp_wc_status_str(wc.status), wc.qp_num, idx, h.pair[0].a.qp_num);
	expect_recv(&h, 1, idx + 1, 7, 12);
	host_quiet(&h, Q_MS);
	host_close(&h);
	return 0;
}

/*
 * A sender that finds the entry it claimed taken back by the owner (its
 * claim word TAKEN, as srq_take_back() leaves it) writes nothing into it:
 * its SEND fails RETRY_EXC_ERR, the entry keeps the owner's seq and names
 * no QP, and its result is not written.
 */
RDP_TEST(shm, shm_srq_sender_finding_its_entry_taken_back_writes_nothing)
{
	struct shm_rq_ent *ent;
	struct shm_srq *srq;
	struct srq_host h;
	struct rdp_wc wc;
	uint64_t idx;
	int ret;

	ret = shm_host_open(&h, 16, 2, 4);
	if (ret != 0)
		return ret;
	srq = to_ssrq(h.srq);
	ent = srq_next_ent_marked(srq, &idx);
	ent->byte_len = 0xabcd;
	ent->imm = 0xabcd;
	__atomic_store_n(&shm_srq_ent_tail(ent, srq->rq_stride)->claim, shm_srq_seq_taken(idx),
			 __ATOMIC_RELEASE);
	conf_tx_fill(&h.pair[1].b, 0, 12, 0x5a);
	RDP_ASSERT_EQ(conf_post_send(&h.pair[1].b, RDP_WR_SEND_WITH_IMM, RDP_SEND_SIGNALED, 7, 0,
				     12, 7, 0, 0), 0);
	RDP_ASSERT_EQ(conf_poll(&h.pair[1].b, &wc, 1, T_MS), 1);
	RDP_ASSERT_MSG(wc.status == RDP_WC_RETRY_EXC_ERR, "a SEND into an entry its owner took "
		       "back completed %s, expected RETRY_EXC_ERR", rdp_wc_status_str(wc.status));
	RDP_ASSERT_MSG(__atomic_load_n(&ent->seq, __ATOMIC_ACQUIRE) == shm_srq_seq_posted(idx),
		       "the entry taken back was completed by its sender");
	RDP_ASSERT_MSG(ent->src_slot == 0xdead && ent->src_qpn == 0xbeef,
		       "the sender named its QP in an entry taken back");
	RDP_ASSERT_EQ(__atomic_load_n(&shm_srq_ent_tail(ent, srq->rq_stride)->claim,
				      __ATOMIC_ACQUIRE), shm_srq_seq_taken(idx));
	RDP_ASSERT_MSG(ent->byte_len == 0xabcd && ent->imm == 0xabcd,
		       "the sender wrote its result into an entry taken back");
	host_close(&h);
	return 0;
}

/*
 * A SEND to a QP on an SRQ that its owner has put in error claims nothing
 * of the SRQ: it fails RETRY_EXC_ERR (nobody acks it), the SRQ's claim
 * index stays, no entry completes flushed in the closed QP's name, and the
 * next SEND of another QP takes the receive that was next.
 */
RDP_TEST(shm, shm_srq_send_to_a_qp_closed_before_it_claims_no_receive)
{
	struct shm_srq *srq;
	struct srq_host h;
	struct rdp_wc wc;
	uint64_t claim;
	int ret;

	ret = shm_host_open(&h, 16, 2, 4);
	if (ret != 0)
		return ret;
	srq = to_ssrq(h.srq);
	peer_send(&h, 0, 8, 1);
	expect_recv(&h, 0, 0, 1, 8);
	conf_qp_err(&h.pair[0].a);
	host_quiet(&h, Q_MS);
	claim = __atomic_load_n(&srq->seg->rq_claim, __ATOMIC_ACQUIRE);
	conf_tx_fill(&h.pair[0].b, 0, 8, 2);
	RDP_ASSERT_EQ(conf_post_send(&h.pair[0].b, RDP_WR_SEND_WITH_IMM, RDP_SEND_SIGNALED, 2, 0,
				     8, 2, 0, 0), 0);
	RDP_ASSERT_EQ(conf_poll(&h.pair[0].b, &wc, 1, T_MS), 1);
	RDP_ASSERT_MSG(wc.status == RDP_WC_RETRY_EXC_ERR, "a SEND to a QP in error completed %s, "
		       "expected RETRY_EXC_ERR", rdp_wc_status_str(wc.status));
	RDP_ASSERT_MSG(__atomic_load_n(&srq->seg->rq_claim, __ATOMIC_ACQUIRE) == claim,
		       "the SEND to a QP in error claimed %" PRIu64 " of the SRQ's receives",
		       __atomic_load_n(&srq->seg->rq_claim, __ATOMIC_ACQUIRE) - claim);
	peer_send(&h, 1, 12, 3);
	expect_recv(&h, 1, 1, 3, 12);
	host_close(&h);
	return 0;
}

/* A poller thread that starts on a relaxed flag: nothing orders it after the main thread. */
struct late_poller {
	struct srq_host *h;
	int go;                 /* (atomic, relaxed) */
	struct rdp_wc wc[4];
	int got;
};

static void *
late_poller_main(void *arg)
{
	struct late_poller *lp = arg;
	double deadline = rdp_clock_s() + 10;

	while (!__atomic_load_n(&lp->go, __ATOMIC_RELAXED))
		;
	while (lp->got < 2 && rdp_clock_s() < deadline) {
		int r = rdp_poll_cq(lp->h->cq, lp->wc + lp->got, (uint16_t)(2 - lp->got));

		if (r > 0)
			lp->got += r;
	}
	return NULL;
}

/*
 * Receives a QP completed on the SRQ are reaped after the QP is gone and a
 * new QP took its CQ slot: the poller looks up the slot's QP to see whose
 * they are, on its own thread, ordered after the new QP's creation only by
 * the slot (the ThreadSanitizer lane sees a field the new QP sets after
 * its slot is published). They still name the QP gone.
 */
RDP_TEST(shm, shm_srq_receives_of_a_gone_qp_reaped_after_its_slot_is_taken_again_name_it)
{
	struct late_poller lp = { 0 };
	struct rdp_qp_init_attr ia = { 0 };
	struct rdp_qp *taker;
	struct conf_opts o;
	struct srq_host h;
	uint32_t gone_qpn, gone_slot, k;
	pthread_t t;
	int ret;

	ret = shm_host_open(&h, 16, 2, 4);
	if (ret != 0)
		return ret;
	lp.h = &h;
	RDP_ASSERT(pthread_create(&t, NULL, late_poller_main, &lp) == 0);
	peer_send(&h, 0, 12, 1);
	peer_send(&h, 0, 12, 2);
	gone_qpn = h.pair[0].a.qp_num;
	gone_slot = to_sqp(h.pair[0].a.qp)->rslot;
	conf_qp_destroy(&h.pair[0].a);
	/* a new QP on the SRQ takes the lowest free slot, its: created, not connected */
	conf_opts_default(&o);
	ia.send_cq = h.cq;
	ia.recv_cq = h.cq;
	ia.cap.max_send_wr = o.sq;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.srq = h.srq;
	taker = rdp_qp_create(h.pd, &ia);
	RDP_ASSERT_MSG(taker != NULL, "rdp_qp_create: %s", rdp_err_msg());
	RDP_ASSERT_EQ(to_sqp(taker)->rslot, gone_slot);
	__atomic_store_n(&lp.go, 1, __ATOMIC_RELAXED);
	RDP_ASSERT(pthread_join(t, NULL) == 0);
	RDP_ASSERT_EQ(rdp_qp_destroy(taker), 0);
	RDP_ASSERT_MSG(lp.got == 2, "%d of the gone QP's 2 receives reaped", lp.got);
	for (k = 0; k < 2; k++) {
		RDP_ASSERT_MSG(lp.wc[k].wr_id == k && lp.wc[k].status == RDP_WC_SUCCESS &&
			       lp.wc[k].qp_num == gone_qpn, "receive %" PRIu64 " %s on QP %u, "
			       "expected %u SUCCESS on the gone QP %u", lp.wc[k].wr_id,
			       rdp_wc_status_str(lp.wc[k].status), lp.wc[k].qp_num, k, gone_qpn);
	}
	host_close(&h);
	return 0;
}

/*
 * A QP on the SRQ whose peer went away after sending: what the peer
 * completed is in the SRQ, not yet polled. The QP's flush must still come
 * after those receives, even when the poller takes one completion at a
 * time (a peer gone lands nothing more, but what it landed is there): an
 * endpoint retires at its flush, and a receive polled after it is dropped
 * (the soak with srq = on lost messages reported done when the peer's
 * stack stopped).
 */
RDP_TEST(shm, shm_srq_receives_a_gone_peer_landed_complete_before_its_qps_flush)
{
	enum { N = 6 };
	struct srq_host h;
	struct rdp_wc wc;
	double deadline;
	int k, ret;

	ret = shm_host_open(&h, 16, 2, N);
	if (ret != 0)
		return ret;
	for (k = 0; k < N; k++)
		peer_send(&h, 0, 8, 10 + k);
	conf_qp_destroy(&h.pair[0].b);
	deadline = rdp_clock_s() + T_MS / 1000.0;
	while (conf_qp_state(&h.pair[0].a) != RDP_QPS_ERR)
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "QP 0 did not go to error with its peer");
	/* a send of QP 0's own, to flush */
	RDP_ASSERT_EQ(conf_post_send(&h.pair[0].a, RDP_WR_SEND, RDP_SEND_SIGNALED, 99, 0, 8, 0, 0,
				     0), 0);
	for (k = 0; k < N; k++) {
		RDP_ASSERT_MSG(host_poll(&h, &wc, 1, T_MS) == 1, "completion %d never came", k);
		RDP_ASSERT_MSG(wc.opcode == RDP_WC_RECV && wc.status == RDP_WC_SUCCESS &&
			       wc.wr_id == (uint64_t)k, "completion %d is %s %s wr_id %" PRIu64
			       ", expected receive %d: the QP's flush came before what its peer "
			       "landed", k, wc.opcode == RDP_WC_RECV ? "receive" : "send",
			       rdp_wc_status_str(wc.status), wc.wr_id, k);
	}
	RDP_ASSERT_MSG(host_poll(&h, &wc, 1, T_MS) == 1, "QP 0's flush never came");
	RDP_ASSERT(wc.wr_id == 99 && wc.status == RDP_WC_WR_FLUSH_ERR);
	host_quiet(&h, Q_MS);
	host_close(&h);
	return 0;
}

/* Post @p n SENDs of @p len bytes from side b of pair @p q in one call (wr_id = imm = i). */
static uint16_t
burst_send(struct srq_host *h, int q, const struct rdp_sge *sge, uint16_t n)
{
	struct rdp_send_wr wr[16];
	uint16_t i, k;
	int err;

	RDP_ASSERT(n <= RTE_DIM(wr));
	for (i = 0; i < n; i++)
		wr[i] = (struct rdp_send_wr){ .wr_id = i, .sg_list = (struct rdp_sge *)&sge[i],
					      .num_sge = 1, .opcode = RDP_WR_SEND_WITH_IMM,
					      .flags = RDP_SEND_SIGNALED, .imm = i };
	k = rdp_post_send(h->pair[q].b.qp, wr, n, &err);
	RDP_ASSERT_MSG(k == n, "post_send took %u of %u WRs: %d", k, n, err);
	return k;
}

/*
 * A sender claims the SRQ entries of a burst of SENDs with one claim, and
 * what other senders claim next lies behind them: an entry claimed and not
 * filled cannot go back. A burst whose fifth SEND has a bad lkey runs four
 * and queues the rest, which fail on the sender alone (a local error
 * consumes no receive): the SRQ completes four receives, no flushed one,
 * and the next SEND of another QP takes the fifth receive posted.
 */
RDP_TEST(shm, shm_srq_burst_with_a_bad_send_claims_only_the_receives_its_sends_take)
{
	enum { N = 8, BAD = 4 };
	struct rdp_sge sge[N];
	struct srq_host h;
	struct rdp_wc wc[N];
	int k, ret;

	ret = shm_host_open(&h, 16, 2, 12);
	if (ret != 0)
		return ret;
	conf_tx_fill(&h.pair[0].b, 0, N * 32, 3);
	for (k = 0; k < N; k++)
		sge[k] = (struct rdp_sge){ .addr = (uintptr_t)h.pair[0].b.tx->addr + k * 32,
					   .length = 32, .lkey = h.pair[0].b.tx->lkey };
	sge[BAD].lkey ^= 0x5a5a00;
	burst_send(&h, 0, sge, N);
	RDP_ASSERT_EQ(conf_poll(&h.pair[0].b, wc, N, T_MS), N);
	for (k = 0; k < N; k++) {
		uint8_t want = k < BAD ? RDP_WC_SUCCESS :
			       k == BAD ? RDP_WC_LOC_PROT_ERR : RDP_WC_WR_FLUSH_ERR;

		RDP_ASSERT_MSG(wc[k].wr_id == (uint64_t)k && wc[k].status == want,
			       "sender's completion %d: wr_id %" PRIu64 " %s, expected %s", k,
			       wc[k].wr_id, rdp_wc_status_str(wc[k].status),
			       rdp_wc_status_str(want));
	}
	for (k = 0; k < BAD; k++)
		expect_recv(&h, 0, k, k, 32);
	/* no receive flushed for the SENDs that never ran */
	host_quiet(&h, 3 * Q_MS);
	peer_send(&h, 1, 16, 77);
	expect_recv(&h, 1, BAD, 77, 16);
	host_quiet(&h, Q_MS);
	host_close(&h);
	return 0;
}

/*
 * A burst longer than what the SRQ has posted takes what there is; the
 * rest waits for receives (rnr_retry 7) and lands once they are posted,
 * every SEND once, in order, the SRQ's receives in posting order.
 */
RDP_TEST(shm, shm_srq_burst_beyond_the_receives_posted_lands_the_rest_once_more_are_posted)
{
	enum { N = 10, FIRST = 4 };
	struct rdp_sge sge[N];
	struct srq_host h;
	struct conf_opts o;
	struct rdp_wc wc[N];
	int k, ret, got = 0;

	if (strncmp(rdp_test_driver(), "shm", 3) != 0)
		return rdp_test_skip("driver %s: bursts posted from this process",
				     rdp_test_driver());
	conf_opts_default(&o);
	o.rnr_retry = 7;
	ret = host_open(&h, 16, 2, &o);
	if (ret != 0)
		return ret;
	if (h.pair[0].b.qp == NULL) {
		host_close(&h);
		return rdp_test_skip("its peers live in another process (RDP_TEST_CONF_PEER)");
	}
	for (k = 0; k < FIRST; k++)
		RDP_ASSERT_EQ(srq_post(&h, k, k), 0);
	conf_tx_fill(&h.pair[0].b, 0, N * 24, 5);
	for (k = 0; k < N; k++)
		sge[k] = (struct rdp_sge){ .addr = (uintptr_t)h.pair[0].b.tx->addr + k * 24,
					   .length = 24, .lkey = h.pair[0].b.tx->lkey };
	burst_send(&h, 0, sge, N);
	RDP_ASSERT_EQ(conf_poll(&h.pair[0].b, wc, FIRST, T_MS), FIRST);
	for (k = 0; k < FIRST; k++)
		expect_recv(&h, 0, k, k, 24);
	host_quiet(&h, Q_MS);
	conf_quiet(&h.pair[0].b, Q_MS);
	for (k = FIRST; k < N; k++)
		RDP_ASSERT_EQ(srq_post(&h, k, k), 0);
	/* the sender's retries run on its own calls */
	while (got < N - FIRST) {
		int r = conf_poll(&h.pair[0].b, wc + got, N - FIRST - got, T_MS);

		RDP_ASSERT_MSG(r > 0, "%d of the %d SENDs that waited completed", got, N - FIRST);
		got += r;
	}
	for (k = 0; k < N - FIRST; k++)
		RDP_ASSERT_MSG(wc[k].wr_id == (uint64_t)(FIRST + k) &&
			       wc[k].status == RDP_WC_SUCCESS, "waiting SEND %d: wr_id %" PRIu64
			       " %s", FIRST + k, wc[k].wr_id, rdp_wc_status_str(wc[k].status));
	for (k = FIRST; k < N; k++) {
		expect_recv(&h, 0, k, k, 24);
		RDP_ASSERT_MSG(memcmp((uint8_t *)h.buf->addr + k * SLOT,
				      (uint8_t *)h.pair[0].b.tx->addr + k * 24, 24) == 0,
			       "receive %d holds other bytes than SEND %d", k, k);
	}
	host_quiet(&h, Q_MS);
	host_close(&h);
	return 0;
}

/*
 * The poller of an SRQ looks at its next entry on every poll, as it does at
 * an announced RQ, so senders to any QP on it ring no doorbell: SENDs from
 * three QPs, none polled yet, leave the CQ's doorbell words clear, and one
 * poll returns all three, in the SRQ's order, naming their QPs. Once its
 * last QP is gone the SRQ is no longer looked at, and says so.
 */
RDP_TEST(shm, shm_srq_peeked_by_its_poller_takes_sends_without_a_doorbell)
{
	struct shm_qp *snd[MAX_QPS];
	uint64_t skipped[MAX_QPS];
	struct rdp_wc wc[8];
	struct srq_host h;
	struct shm_srq *srq;
	struct shm_cq *cq;
	uint32_t w;
	int k, got = 0, ret;

	ret = shm_host_open(&h, 16, MAX_QPS, 0);
	if (ret != 0)
		return ret;
	srq = to_ssrq(h.srq);
	cq = to_scq(h.cq);
	RDP_ASSERT_EQ(srq->seg->peeked, 1);
	for (k = 0; k < 6; k++)
		RDP_ASSERT_EQ(srq_post(&h, 500 + k, k), 0);
	/* the QPs' own connects rang: poll them away */
	host_quiet(&h, Q_MS);
	for (k = 0; k < MAX_QPS; k++) {
		struct rdp_wc swc;

		snd[k] = to_sqp(h.pair[k].b.qp);
		skipped[k] = snd[k]->bells_skipped;
		conf_tx_fill(&h.pair[k].b, 0, 32, (uint8_t)k);
		RDP_ASSERT_EQ(conf_post_send(&h.pair[k].b, RDP_WR_SEND_WITH_IMM, RDP_SEND_SIGNALED,
					     k, 0, 32, k, 0, 0), 0);
		RDP_ASSERT_EQ(conf_poll(&h.pair[k].b, &swc, 1, T_MS), 1);
		RDP_ASSERT_EQ(swc.status, RDP_WC_SUCCESS);
		RDP_ASSERT_MSG(snd[k]->bells_skipped == skipped[k] + 1, "the sender of QP %d rang "
			       "the doorbell of a peeked SRQ", k);
	}
	for (w = 0; w < SHM_BELL_WORDS; w++)
		RDP_ASSERT_MSG(cq->seg->bell[w] == 0, "doorbell word %u is set", w);
	/* one poll: every completed entry, not one a poll */
	got = rdp_poll_cq(h.cq, wc, RTE_DIM(wc));
	RDP_ASSERT_MSG(got == MAX_QPS, "one poll returned %d of the %d receives", got, MAX_QPS);
	for (k = 0; k < MAX_QPS; k++) {
		RDP_ASSERT_EQ(wc[k].status, RDP_WC_SUCCESS);
		RDP_ASSERT_EQ(wc[k].wr_id, (uint64_t)(500 + k));
		RDP_ASSERT_EQ(wc[k].qp_num, h.pair[k].a.qp_num);
		RDP_ASSERT_EQ(wc[k].imm, (uint32_t)k);
	}
	host_quiet(&h, Q_MS);
	for (k = 0; k < MAX_QPS; k++)
		conf_pair_close_srq(&h.pair[k]);
	h.nb = 0;
	RDP_ASSERT_MSG(srq->seg->peeked == 0, "an SRQ without QPs still says it is looked at");
	host_close(&h);
	return 0;
}

/*
 * A peeked SRQ that one QP fills is reaped on while its next entry is
 * complete: the poller reads that entry at every poll anyway, and not the
 * line of the sender's count (`srq_filled`), which the sender writes at
 * every run. Six SENDs of one QP whose count still says none: one poll
 * returns all six, in order.
 */
RDP_TEST(shm, shm_srq_peeked_one_sender_is_reaped_in_one_poll_without_its_count)
{
	struct rdp_wc wc[8];
	struct srq_host h;
	struct shm_qp_seg *qseg;
	uint64_t filled;
	int k, got, ret;

	ret = shm_host_open(&h, 16, 1, 0);
	if (ret != 0)
		return ret;
	RDP_ASSERT_EQ(to_ssrq(h.srq)->seg->peeked, 1);
	for (k = 0; k < 6; k++)
		RDP_ASSERT_EQ(srq_post(&h, 700 + k, k), 0);
	host_quiet(&h, Q_MS);
	qseg = to_sqp(h.pair[0].a.qp)->seg;
	filled = __atomic_load_n(&qseg->srq_filled, __ATOMIC_ACQUIRE);
	conf_tx_fill(&h.pair[0].b, 0, 32, 7);
	for (k = 0; k < 6; k++) {
		struct rdp_wc swc;

		RDP_ASSERT_EQ(conf_post_send(&h.pair[0].b, RDP_WR_SEND_WITH_IMM, RDP_SEND_SIGNALED,
					     k, 0, 32, k, 0, 0), 0);
		RDP_ASSERT_EQ(conf_poll(&h.pair[0].b, &swc, 1, T_MS), 1);
		RDP_ASSERT_EQ(swc.status, RDP_WC_SUCCESS);
	}
	RDP_ASSERT_EQ(__atomic_load_n(&qseg->srq_filled, __ATOMIC_ACQUIRE), filled + 6);
	/* as if the sender had not said so yet */
	__atomic_store_n(&qseg->srq_filled, filled, __ATOMIC_RELEASE);
	got = rdp_poll_cq(h.cq, wc, RTE_DIM(wc));
	RDP_ASSERT_MSG(got == 6, "one poll returned %d of the 6 receives", got);
	for (k = 0; k < 6; k++) {
		RDP_ASSERT_EQ(wc[k].status, RDP_WC_SUCCESS);
		RDP_ASSERT_EQ(wc[k].wr_id, (uint64_t)(700 + k));
		RDP_ASSERT_EQ(wc[k].imm, (uint32_t)k);
	}
	host_quiet(&h, Q_MS);
	host_close(&h);
	return 0;
}

/*
 * A sender claims an SRQ entry with a CAS on the entry's claim word, not
 * on its seq: while the SRQ waits for that entry its poller reads the
 * seq's line at every poll, and a CAS there waits for the line to come
 * back from the poller on every SEND. The claim word sits in the entry's
 * tail, on another line, which the largest inline payload does not reach,
 * and takes none of the 80 bytes an entry of one SGE holds inline:
 * posted, it says POSTED; after a SEND of rq_inline bytes, FILLING, the
 * entry naming the QP, with every byte of the payload in its receive.
 */
RDP_TEST(shm, shm_srq_sender_claims_an_entry_away_from_the_line_its_poller_reads)
{
	struct shm_srq_tail *tail;
	struct shm_rq_ent *ent;
	struct shm_srq *srq;
	struct srq_host h;
	int ret;

	ret = shm_host_open(&h, 16, 1, 0);
	if (ret != 0)
		return ret;
	srq = to_ssrq(h.srq);
	/* one SGE: 24 bytes of header, 16 of SGE, 80 of payload, 8 of tail */
	RDP_ASSERT_EQ(srq->max_sge, 1);
	RDP_ASSERT_EQ(srq->rq_stride, 128);
	RDP_ASSERT_EQ(srq->rq_inline, 80);
	ent = shm_rq_ent(srq->ents, srq->rq_mask, srq->rq_stride, 0);
	tail = shm_srq_ent_tail(ent, srq->rq_stride);
	RDP_ASSERT_MSG((uintptr_t)tail / 64 != (uintptr_t)&ent->seq / 64 &&
		       (uintptr_t)(tail + 1) - 1 == (uintptr_t)ent + srq->rq_stride - 1,
		       "the tail shares the seq's line or leaves the entry");
	RDP_ASSERT(shm_rq_ent_data(ent, srq->max_sge) + srq->rq_inline <= (uint8_t *)tail);
	RDP_ASSERT_EQ(srq_post(&h, 40, 0), 0);
	RDP_ASSERT_EQ(__atomic_load_n(&tail->claim, __ATOMIC_ACQUIRE), shm_srq_seq_posted(0));
	RDP_ASSERT_EQ(__atomic_load_n(&ent->seq, __ATOMIC_ACQUIRE), shm_srq_seq_posted(0));
	host_quiet(&h, Q_MS);
	peer_send(&h, 0, srq->rq_inline, 3);
	expect_recv(&h, 0, 40, 3, srq->rq_inline);
	RDP_ASSERT(slot_holds(&h, 0, 0, srq->rq_inline));
	RDP_ASSERT_EQ(__atomic_load_n(&tail->claim, __ATOMIC_ACQUIRE), shm_srq_seq_filling(0));
	RDP_ASSERT_EQ(ent->src_qpn, to_sqp(h.pair[0].a.qp)->head.qp_num);
	RDP_ASSERT_EQ(ent->src_slot, to_sqp(h.pair[0].a.qp)->rslot);
	host_close(&h);
	return 0;
}

/*
 * A peeked SRQ that one QP fills is reaped on while its next entry is
 * complete; what it returns must change where its sender's entries stop.
 * QP 0 sends four, QP 1 one, QP 0 four more and then one longer than a
 * receive, and QP 1 one more; polls of at most three completions (reaps
 * cut by the caller's array) return all eleven in the SRQ's order, each
 * naming its QP, with its bytes in its receive: the long one failed on
 * QP 0 alone.
 */
RDP_TEST(shm, shm_srq_peeked_reap_of_one_sender_names_each_qp_and_fails_only_the_long_send)
{
	static const int from[] = { 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1 };
	enum { N = RTE_DIM(from), LONG = 9 };
	uint8_t sent[SLOT];
	struct rdp_wc wc[N], swc;
	struct srq_host h;
	int k, got = 0, ret;

	ret = shm_host_open(&h, 32, 2, 0);
	if (ret != 0)
		return ret;
	RDP_ASSERT_EQ(to_ssrq(h.srq)->peeking, 1);
	for (k = 0; k < N; k++)
		RDP_ASSERT_EQ(srq_post(&h, 900 + k, (uint32_t)k), 0);
	host_quiet(&h, Q_MS);
	for (k = 0; k < N; k++) {
		struct conf_side *b = &h.pair[from[k]].b;
		uint32_t len = k == LONG ? SLOT + 8 : 16 + (uint32_t)k;

		/* each from its own place in tx, checked against its receive below */
		conf_tx_fill(b, (uint32_t)k * 2 * SLOT, len, (uint8_t)(k + 1));
		RDP_ASSERT_EQ(conf_post_send(b, RDP_WR_SEND_WITH_IMM, RDP_SEND_SIGNALED, k,
					     (uint32_t)k * 2 * SLOT, len, (uint32_t)k, 0, 0), 0);
		RDP_ASSERT_EQ(conf_poll(b, &swc, 1, T_MS), 1);
		RDP_ASSERT_MSG((swc.status == RDP_WC_SUCCESS) == (k != LONG), "send %d: %s", k,
			       rdp_wc_status_str(swc.status));
	}
	/* polls of three at most: the caller's array cuts the runs */
	while (got < N) {
		int r = rdp_poll_cq(h.cq, wc + got, (uint16_t)RTE_MIN(3, N - got));

		RDP_ASSERT(r >= 0 && r <= 3);
		if (r == 0)
			break;
		got += r;
	}
	got += host_poll(&h, wc + got, N - got, T_MS);
	RDP_ASSERT_MSG(got == N, "%d of the %d receives came", got, N);
	for (k = 0; k < N; k++) {
		RDP_ASSERT_MSG(wc[k].wr_id == (uint64_t)(900 + k), "completion %d took receive %"
			       PRIu64, k, wc[k].wr_id);
		RDP_ASSERT_MSG(wc[k].qp_num == h.pair[from[k]].a.qp_num, "receive %d names QP %u, "
			       "it arrived on QP %u", k, wc[k].qp_num, h.pair[from[k]].a.qp_num);
		if (k == LONG) {
			RDP_ASSERT_MSG(wc[k].status == RDP_WC_LOC_LEN_ERR, "the long SEND's receive: %s",
				       rdp_wc_status_str(wc[k].status));
			continue;
		}
		RDP_ASSERT_MSG(wc[k].status == RDP_WC_SUCCESS, "receive %d: %s", k,
			       rdp_wc_status_str(wc[k].status));
		RDP_ASSERT_EQ(wc[k].imm, (uint32_t)k);
		RDP_ASSERT_EQ(wc[k].byte_len, 16 + (uint32_t)k);
		conf_read(&h.pair[from[k]].b, CONF_TX, (uint32_t)k * 2 * SLOT, sent, 16 + k);
		RDP_ASSERT_MSG(memcmp((uint8_t *)h.buf->addr + k * SLOT, sent, 16 + k) == 0,
			       "receive %d does not hold what QP %d sent", k, from[k]);
	}
	RDP_ASSERT_EQ(conf_qp_state(&h.pair[0].a), RDP_QPS_ERR);
	RDP_ASSERT_EQ(conf_qp_state(&h.pair[1].a), RDP_QPS_RTS);
	host_close(&h);
	return 0;
}

/*
 * Who fills the SRQ decides whether its poller peeks it: SENDs from three
 * QPs in turn withdraw the peek after SHM_ANNOUNCE_AFTER entries in a row
 * (their senders ring again), and SENDs from one QP announce it again (its
 * sender stops ringing). Every receive comes once, in the SRQ's order.
 */
RDP_TEST(shm, shm_srq_peek_withdrawn_while_many_qps_fill_it_and_announced_for_one)
{
	struct srq_host h;
	struct shm_srq *srq;
	uint64_t skipped;
	uint32_t k, next = 0;
	int ret;

	ret = shm_host_open(&h, 128, MAX_QPS, 0);
	if (ret != 0)
		return ret;
	srq = to_ssrq(h.srq);
	for (k = 0; k < 128; k++)
		RDP_ASSERT_EQ(srq_post(&h, k, k % 64), 0);
	RDP_ASSERT_EQ(srq->peeking, 1);
	/* three QPs in turn */
	for (k = 0; k < SHM_ANNOUNCE_AFTER + 2; k++, next++) {
		peer_send(&h, (int)(k % MAX_QPS), 16, next);
		expect_recv(&h, (int)(k % MAX_QPS), next, next, 16);
	}
	RDP_ASSERT_MSG(srq->peeking == 0 && srq->seg->peeked == 0, "an SRQ that three QPs "
		       "fill in turn is still peeked");
	skipped = to_sqp(h.pair[1].b.qp)->bells_skipped;
	peer_send(&h, 1, 16, next);
	expect_recv(&h, 1, next, next, 16);
	next++;
	RDP_ASSERT_MSG(to_sqp(h.pair[1].b.qp)->bells_skipped == skipped, "a sender to a "
		       "withdrawn SRQ rang no doorbell");
	/* one QP alone */
	for (k = 0; k < SHM_ANNOUNCE_AFTER + 1; k++, next++) {
		peer_send(&h, 2, 24, next);
		expect_recv(&h, 2, next, next, 24);
	}
	RDP_ASSERT_MSG(srq->peeking == 1 && srq->seg->peeked == 1, "an SRQ that one QP fills "
		       "is not peeked again");
	skipped = to_sqp(h.pair[2].b.qp)->bells_skipped;
	peer_send(&h, 2, 24, next);
	expect_recv(&h, 2, next, next, 24);
	RDP_ASSERT_EQ(to_sqp(h.pair[2].b.qp)->bells_skipped, skipped + 1);
	host_quiet(&h, Q_MS);
	host_close(&h);
	return 0;
}

/*
 * A withdrawal of the peek must not strand an entry completed without a
 * doorbell behind one that was still being filled: QP 0's sender claims
 * the next entry and is slow to fill it, QP 1's SEND completes the entry
 * behind it without ringing (the SRQ is peeked), then QP 0's entry
 * completes, also without ringing, and reaping it withdraws the peek (the
 * sixteenth entry in a row from another QP than the one before). Nothing
 * will ring for QP 1's entry and nothing peeks any more: the reap must
 * look on up to the claim index read at the withdrawal, or it is never
 * polled.
 */
RDP_TEST(shm, shm_srq_withdrawn_peek_still_reaps_an_entry_completed_without_a_doorbell)
{
	struct shm_qp_seg *qseg, *sseg;
	struct shm_rq_ent *ent;
	struct rdp_wc wc[4];
	struct srq_host h;
	struct shm_srq *srq;
	struct shm_qp *a0;
	uint64_t j, skipped;
	uint32_t k;
	int got, ret;

	ret = shm_host_open(&h, 64, MAX_QPS, 0);
	if (ret != 0)
		return ret;
	srq = to_ssrq(h.srq);
	for (k = 0; k < 40; k++)
		RDP_ASSERT_EQ(srq_post(&h, k, k), 0);
	/* a streak one short of the withdrawal */
	for (k = 0; k < SHM_ANNOUNCE_AFTER - 1; k++) {
		peer_send(&h, (int)(k % MAX_QPS), 16, k);
		expect_recv(&h, (int)(k % MAX_QPS), k, k, 16);
	}
	RDP_ASSERT_EQ(srq->peeking, 1);
	/* no QP left flagged: nothing looks at the SRQ but the peek */
	host_quiet(&h, Q_MS);
	RDP_ASSERT_EQ(srq->stuck_at, 0);
	/* QP 0's sender claims the next entry, as a live sender does, and is slow */
	a0 = to_sqp(h.pair[0].a.qp);
	qseg = a0->seg;
	sseg = srq->seg;
	j = __atomic_load_n(&sseg->rq_claim, __ATOMIC_ACQUIRE);
	RDP_ASSERT_EQ(j, (uint64_t)(SHM_ANNOUNCE_AFTER - 1));
	__atomic_store_n(&qseg->srq_claim_n, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&qseg->srq_claim_at, j, __ATOMIC_RELEASE);
	__atomic_fetch_add(&sseg->rq_claim, 1, __ATOMIC_ACQ_REL);
	/* QP 1's SEND completes the entry behind it, without a doorbell */
	skipped = to_sqp(h.pair[1].b.qp)->bells_skipped;
	peer_send(&h, 1, 16, 100);
	RDP_ASSERT_EQ(to_sqp(h.pair[1].b.qp)->bells_skipped, skipped + 1);
	host_quiet(&h, Q_MS);
	/* QP 0's sender completes its entry as the burst's end does, without a doorbell */
	ent = shm_rq_ent(srq->ents, srq->rq_mask, srq->rq_stride, j);
	ent->byte_len = 0;
	ent->imm = 99;
	ent->status = RDP_WC_SUCCESS;
	ent->wc_flags = RDP_WC_WITH_IMM;
	ent->src_slot = (uint16_t)a0->rslot;
	ent->src_qpn = a0->head.qp_num;
	__atomic_store_n(&ent->seq, shm_rq_seq(j), __ATOMIC_RELEASE);
	__atomic_fetch_add(&qseg->srq_filled, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&qseg->srq_claim_n, 0, __ATOMIC_RELEASE);
	__atomic_fetch_add(&to_scq(h.cq)->seg->added, 1, __ATOMIC_RELAXED);
	got = host_poll(&h, wc, 2, T_MS);
	RDP_ASSERT_MSG(got == 2, "%d of the 2 receives completed without a doorbell were "
		       "polled", got);
	RDP_ASSERT_MSG(srq->peeking == 0 && sseg->peeked == 0, "the peek was not withdrawn");
	RDP_ASSERT_MSG(wc[0].status == RDP_WC_SUCCESS && wc[0].wr_id == j &&
		       wc[0].qp_num == h.pair[0].a.qp_num && wc[0].imm == 99 &&
		       wc[0].byte_len == 0, "receive %" PRIu64 " on QP %u imm %u: not QP 0's",
		       wc[0].wr_id, wc[0].qp_num, wc[0].imm);
	RDP_ASSERT_MSG(wc[1].status == RDP_WC_SUCCESS && wc[1].wr_id == j + 1 &&
		       wc[1].qp_num == h.pair[1].a.qp_num && wc[1].imm == 100 &&
		       wc[1].byte_len == 16, "receive %" PRIu64 " on QP %u imm %u: not QP 1's",
		       wc[1].wr_id, wc[1].qp_num, wc[1].imm);
	host_quiet(&h, Q_MS);
	host_close(&h);
	return 0;
}
