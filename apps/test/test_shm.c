/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What only the shm driver has: its knobs (completion order, send completion
 * delay, link failure, peer drop), peer death across processes, garbage in
 * shared memory, flush races under real concurrency, strict CQ overrun,
 * counters. The common verbs semantics live in test_conf.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conf_pair.h"
#include "rdp_test.h"
#include "shm_private.h"
#include "stream.h"

#define T_MS 2000

static int
post_write0(struct conf_side *s, uint64_t wr_id, uint8_t flags)
{
	return conf_post_send(s, RDP_WR_RDMA_WRITE, flags, wr_id, 0, 0, 0, 0, 0);
}

static bool
wait_event(struct rdp_dev *dev, enum rdp_event_type type, struct rdp_event *out, int ms)
{
	double deadline = rdp_clock_s() + ms / 1000.0;
	struct rdp_event ev;

	while (rdp_clock_s() < deadline) {
		if (rdp_dev_event_get(dev, &ev) == 0 && ev.type == type) {
			if (out != NULL)
				*out = ev;
			return true;
		}
		usleep(200);
	}
	return false;
}

static unsigned int
qp_state(struct rdp_qp *qp)
{
	struct rdp_qp_attr attr;

	RDP_ASSERT_EQ(rdp_qp_query(qp, &attr), 0);
	return attr.state;
}

static void
set_err(struct rdp_qp *qp)
{
	RDP_ASSERT_EQ(rdp_qp_modify(qp, &(struct rdp_qp_attr){ .state = RDP_QPS_ERR },
				    RDP_QP_ATTR_STATE), 0);
}

RDP_TEST(shm, shm_args_are_checked_with_a_message_naming_the_key)
{
	RDP_ASSERT(rdp_dev_open("shm:bogus=1") == NULL);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	RDP_ASSERT_MSG(strstr(rdp_err_msg(), "unknown argument 'bogus'") != NULL, "%s",
		       rdp_err_msg());
	RDP_ASSERT(rdp_dev_open("shm:cqe_order=sideways") == NULL);
	RDP_ASSERT_MSG(strstr(rdp_err_msg(), "cqe_order=sideways") != NULL, "%s", rdp_err_msg());
	RDP_ASSERT(rdp_dev_open("shm:cqe_order=random:") == NULL);
	RDP_ASSERT(rdp_dev_open("shm:send_cqe_delay=-1") == NULL);
	RDP_ASSERT_MSG(strstr(rdp_err_msg(), "send_cqe_delay") != NULL, "%s", rdp_err_msg());
	RDP_ASSERT(rdp_dev_open("shm:fail_after=0") == NULL);
	RDP_ASSERT(rdp_dev_open("shm:copy=fast") == NULL);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	RDP_ASSERT_MSG(strstr(rdp_err_msg(), "copy=fast: expected auto, libc or vector") != NULL,
		       "%s", rdp_err_msg());
	return 0;
}

/*
 * copy=vector: every one-sided copy takes the engine's vector loop, so its
 * 64-byte steps and the tail after them meet every length from 1 to 200
 * at offsets that are neither 32- nor 8-aligned, then lengths of 32 KiB
 * and more, where copy=auto uses it. copy=libc runs the same.
 */
static int
copy_engine_round_trips(const char *spec)
{
	static const uint32_t big[] = { 32767, 32768, 32769, 32768 + 64, 65536 - 128 };
	struct conf_opts o;
	struct conf_pair p;
	uint32_t len, i;

	conf_opts_default(&o);
	conf_pair_open(&p, spec, &o);
	for (len = 1; len <= 200; len++)
		conf_rdma_round_trip(&p, len % 37, 4096 + len % 61, len, 8192 + len % 29,
				     (uint8_t)len);
	for (i = 0; i < RTE_DIM(big); i++)
		conf_rdma_round_trip(&p, i, 65536 - big[i] - i, big[i], 1 + i, (uint8_t)(i + 7));
	conf_pair_close(&p);
	return 0;
}

RDP_TEST(shm, shm_copy_engine_vector_loop_moves_every_length_and_offset_exactly)
{
	struct rdp_dev *d = rdp_dev_open("shm:copy=vector");

	if (d == NULL) {
		RDP_ASSERT_EQ(rte_errno, ENOTSUP);
		RDP_ASSERT_MSG(strstr(rdp_err_msg(), "copy=vector: this CPU has no AVX2") != NULL,
			       "%s", rdp_err_msg());
		return rdp_test_skip("%s", rdp_err_msg());
	}
	RDP_ASSERT_EQ(rdp_dev_close(d), 0);
	return copy_engine_round_trips("shm:copy=vector");
}

RDP_TEST(shm, shm_copy_engine_libc_moves_every_length_and_offset_exactly)
{
	return copy_engine_round_trips("shm:copy=libc");
}

RDP_TEST(shm, shm_default_spec_falls_back_to_shm_when_nothing_else_runs)
{
	char spec[64], why[256];

	RDP_ASSERT_EQ(rdp_dev_default_spec(spec, sizeof(spec), why, sizeof(why)), 0);
	/* verbs wins where a device is active; here the answer is shm or verbs */
	RDP_ASSERT_MSG(strncmp(spec, "shm", 3) == 0 || strncmp(spec, "verbs", 5) == 0, "%s",
		       spec);
	RDP_ASSERT(why[0] != '\0');
	return 0;
}

/* A's CQ holds one send completion (older) and one receive completion. */
static void
send_then_recv(struct conf_pair *p, struct rdp_wc wc[2])
{
	RDP_ASSERT_EQ(conf_post_recv(&p->a, 100, 0, 64), 0);
	RDP_ASSERT_EQ(conf_post_recv(&p->b, 200, 0, 64), 0);
	RDP_ASSERT_EQ(conf_post_send(&p->a, RDP_WR_SEND, RDP_SEND_SIGNALED, 1, 0, 8, 0, 0, 0), 0);
	RDP_ASSERT_EQ(conf_post_send(&p->b, RDP_WR_SEND_WITH_IMM, 0, 2, 0, 8, 5, 0, 0), 0);
	RDP_ASSERT_EQ(rdp_poll_cq(p->a.cq, wc, 2), 2);
}

RDP_TEST(shm, shm_recv_first_returns_a_recv_before_an_older_send_completion)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc[2];

	conf_opts_default(&o);
	conf_pair_open(&p, "shm:cqe_order=recv_first", &o);
	send_then_recv(&p, wc);
	RDP_ASSERT_EQ(wc[0].wr_id, 100);
	RDP_ASSERT_EQ(wc[1].wr_id, 1);
	conf_pair_close(&p);

	conf_pair_open(&p, "shm:cqe_order=fifo", &o);
	send_then_recv(&p, wc);
	RDP_ASSERT_EQ(wc[0].wr_id, 1);
	RDP_ASSERT_EQ(wc[1].wr_id, 100);
	conf_pair_close(&p);
	return 0;
}

RDP_TEST(shm, shm_send_cqe_delay_shows_a_send_completion_on_the_nth_poll)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc;
	int i;

	conf_opts_default(&o);
	conf_pair_open(&p, "shm:send_cqe_delay=4", &o);
	RDP_ASSERT_EQ(post_write0(&p.a, 1, RDP_SEND_SIGNALED), 0);
	for (i = 1; i < 4; i++)
		RDP_ASSERT_MSG(rdp_poll_cq(p.a.cq, &wc, 1) == 0, "visible at poll %d", i);
	RDP_ASSERT_EQ(rdp_poll_cq(p.a.cq, &wc, 1), 1);
	RDP_ASSERT_EQ(wc.wr_id, 1);
	/* and the SQ slot stayed taken until then */
	conf_pair_close(&p);
	return 0;
}

/* Poll one at a time; return the sequence of wr_ids. */
static int
random_order_run(const char *spec, uint64_t *seq, int n)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc;
	int i, got = 0;

	conf_opts_default(&o);
	o.sq = 32;
	o.rq = 32;
	conf_pair_open(&p, spec, &o);
	for (i = 0; i < n / 2; i++) {
		RDP_ASSERT_EQ(conf_post_recv(&p.a, 1000 + i, 0, 64), 0);
		RDP_ASSERT_EQ(conf_post_recv(&p.b, 2000 + i, 0, 64), 0);
	}
	for (i = 0; i < n / 2; i++) {
		RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_SEND, RDP_SEND_SIGNALED, i, 0, 8, 0, 0, 0),
			      0);
		RDP_ASSERT_EQ(conf_post_send(&p.b, RDP_WR_SEND, 0, i, 0, 8, 0, 0, 0), 0);
	}
	while (got < n) {
		int r = rdp_poll_cq(p.a.cq, &wc, 1);

		RDP_ASSERT(r >= 0);
		if (r == 1)
			seq[got++] = wc.wr_id;
	}
	conf_pair_close(&p);
	return got;
}

RDP_TEST(shm, shm_random_order_mixes_work_queues_keeps_each_fifo_and_is_reproducible)
{
	uint64_t s1[40], s2[40], s3[40];
	uint64_t last_send = 0, last_recv = 0;
	int i, switches = 0;
	bool first_send = true, first_recv = true;

	random_order_run("shm:cqe_order=random:3", s1, 40);
	random_order_run("shm:cqe_order=random:3", s2, 40);
	random_order_run("shm:cqe_order=random:4", s3, 40);
	for (i = 0; i < 40; i++) {
		bool recv = s1[i] >= 1000;

		if (recv) {
			RDP_ASSERT(first_recv || s1[i] > last_recv);
			last_recv = s1[i];
			first_recv = false;
		} else {
			RDP_ASSERT(first_send || s1[i] > last_send);
			last_send = s1[i];
			first_send = false;
		}
		if (i > 0 && recv != (s1[i - 1] >= 1000))
			switches++;
	}
	RDP_ASSERT_MSG(switches >= 4, "only %d switches between send and receive", switches);
	RDP_ASSERT_MSG(memcmp(s1, s2, sizeof(s1)) == 0, "same seed, different order");
	RDP_ASSERT_MSG(memcmp(s1, s3, sizeof(s1)) != 0, "different seeds, same order");
	return 0;
}

RDP_TEST(shm, shm_fail_after_takes_the_link_down_flushes_and_raises_port_err)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_dev_attr attr;
	struct rdp_wc wc[16];
	int i, n;

	conf_opts_default(&o);
	conf_pair_open(&p, "shm:fail_after=5", &o);
	for (i = 0; i < 3; i++)
		RDP_ASSERT_EQ(conf_post_recv(&p.a, 100 + i, 0, 64), 0);
	for (i = 0; i < 4; i++)
		RDP_ASSERT_EQ(conf_post_recv(&p.b, 200 + i, 0, 64), 0);
	for (i = 1; i <= 8; i++)
		RDP_ASSERT_EQ(post_write0(&p.a, i, 0), 0);
	RDP_ASSERT(wait_event(p.dev, RDP_EVENT_PORT_ERR, NULL, T_MS));
	RDP_ASSERT_EQ(rdp_dev_query(p.dev, &attr), 0);
	RDP_ASSERT_EQ(attr.port_active, 0);
	/* 5 executed unsignaled: nothing; 6..8 flushed; every receive flushed */
	n = conf_poll(&p.a, wc, 16, 50);
	RDP_ASSERT_EQ(n, 6);
	for (i = 0; i < n; i++) {
		RDP_ASSERT_EQ(wc[i].status, RDP_WC_WR_FLUSH_ERR);
		RDP_ASSERT((wc[i].wr_id >= 6 && wc[i].wr_id <= 8) ||
			   (wc[i].wr_id >= 100 && wc[i].wr_id < 103));
	}
	RDP_ASSERT_EQ(conf_poll(&p.b, wc, 16, 50), 4);
	RDP_ASSERT_EQ(conf_qp_state(&p.a), RDP_QPS_ERR);
	RDP_ASSERT_EQ(conf_qp_state(&p.b), RDP_QPS_ERR);
	conf_pair_close(&p);
	return 0;
}

/*
 * A QP connected on a device whose link went down is no way round it: what
 * it is asked to send fails, as on a port that stays down. (Before, each
 * run of the send engine executed one WR over the dead link, successfully,
 * and the CQ's poll ran the rest the same way.)
 */
RDP_TEST(shm, shm_qp_connected_after_the_link_went_down_fails_every_send)
{
	struct conf_opts o;
	struct conf_pair p, q;
	struct rdp_send_wr burst[4];
	struct rdp_wc wc[16];
	int i, n, err, ok = 0;

	conf_opts_default(&o);
	conf_pair_open(&p, "shm:fail_after=1", &o);
	RDP_ASSERT_EQ(post_write0(&p.a, 1, 0), 0);
	RDP_ASSERT(wait_event(p.dev, RDP_EVENT_PORT_ERR, NULL, T_MS));
	conf_pair_open_more(&q, &p, &o);
	/* two WRs one by one, then a burst of four */
	for (i = 1; i <= 2; i++)
		RDP_ASSERT_EQ(post_write0(&q.a, i, RDP_SEND_SIGNALED), 0);
	for (i = 0; i < 4; i++)
		burst[i] = (struct rdp_send_wr){ .wr_id = 3 + i, .opcode = RDP_WR_RDMA_WRITE,
						 .flags = RDP_SEND_SIGNALED };
	RDP_ASSERT_EQ(rdp_post_send(q.a.qp, burst, 4, &err), 4);
	n = conf_poll(&q.a, wc, 16, 200);
	RDP_ASSERT_MSG(n == 6, "%d of 6 sends completed", n);
	for (i = 0; i < n; i++) {
		RDP_ASSERT_EQ(wc[i].wr_id, (uint64_t)i + 1);
		ok += wc[i].status == RDP_WC_SUCCESS;
	}
	RDP_ASSERT_MSG(ok == 0, "%d sends succeeded over a link that is down", ok);
	RDP_ASSERT_EQ(conf_qp_state(&q.a), RDP_QPS_ERR);
	conf_pair_close_more(&q);
	conf_pair_close(&p);
	return 0;
}

RDP_TEST(shm, shm_drop_peer_moves_the_qp_to_err_with_a_qp_fatal_event)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_event ev;
	struct rdp_wc wc[8];
	int i, n;

	conf_opts_default(&o);
	conf_pair_open(&p, "shm:drop_peer=3", &o);
	RDP_ASSERT_EQ(conf_post_recv(&p.a, 100, 0, 64), 0);
	for (i = 1; i <= 5; i++)
		RDP_ASSERT_EQ(post_write0(&p.a, i, 0), 0);
	RDP_ASSERT(wait_event(p.dev, RDP_EVENT_QP_FATAL, &ev, T_MS));
	RDP_ASSERT(ev.qp == p.a.qp);
	n = conf_poll(&p.a, wc, 8, 50);
	RDP_ASSERT_EQ(n, 3);
	RDP_ASSERT_EQ(wc[0].wr_id, 4);
	RDP_ASSERT_EQ(wc[1].wr_id, 5);
	RDP_ASSERT_EQ(wc[2].wr_id, 100);
	RDP_ASSERT_EQ(conf_qp_state(&p.a), RDP_QPS_ERR);
	RDP_ASSERT_EQ(conf_qp_state(&p.b), RDP_QPS_RTS);
	conf_pair_close(&p);
	return 0;
}

RDP_TEST(shm, shm_event_of_a_destroyed_qp_never_names_it)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_event ev;
	struct pollfd pfd;
	struct rdp_qp *gone;
	int i;

	conf_opts_default(&o);
	conf_pair_open(&p, "shm:drop_peer=3", &o);
	for (i = 1; i <= 5; i++)
		RDP_ASSERT_EQ(post_write0(&p.a, i, 0), 0);
	/* the QP_FATAL event is queued; destroy its QP before reading it */
	pfd = (struct pollfd){ .fd = rdp_dev_event_fd(p.dev), .events = POLLIN };
	RDP_ASSERT_EQ(poll(&pfd, 1, T_MS), 1);
	gone = p.a.qp;
	RDP_ASSERT_EQ(rdp_qp_destroy(p.a.qp), 0);
	p.a.qp = NULL;
	while (rdp_dev_event_get(p.dev, &ev) == 0)
		RDP_ASSERT_MSG(ev.qp != gone, "event %d names a destroyed QP", ev.type);
	conf_pair_close(&p);
	return 0;
}

RDP_TEST(shm, shm_cq_overrun_fails_poll_raises_cq_err_and_counts)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_dev_stats st;
	struct rdp_event ev;
	struct rdp_wc wc[8];
	int i;

	conf_opts_default(&o);
	o.cqe = 4;
	conf_pair_open(&p, NULL, &o);
	for (i = 1; i <= 4; i++)
		RDP_ASSERT_EQ(post_write0(&p.a, i, RDP_SEND_SIGNALED), 0);
	RDP_ASSERT_EQ(rdp_poll_cq(p.a.cq, wc, 8), 4); /* exactly full is fine */
	for (i = 1; i <= 5; i++)
		RDP_ASSERT_EQ(post_write0(&p.a, i, RDP_SEND_SIGNALED), 0);
	RDP_ASSERT_EQ(rdp_poll_cq(p.a.cq, wc, 8), -EIO);
	RDP_ASSERT_EQ(rdp_poll_cq(p.a.cq, wc, 8), -EIO);
	RDP_ASSERT(wait_event(p.dev, RDP_EVENT_CQ_ERR, &ev, T_MS));
	RDP_ASSERT(ev.cq == p.a.cq);
	RDP_ASSERT_EQ(rdp_dev_stats_get(p.dev, &st), 0);
	RDP_ASSERT_EQ(st.cq_overruns, 1);
	/* a receive completion written by the peer counts too */
	RDP_ASSERT_EQ(conf_post_recv(&p.a, 1, 0, 64), 0);
	conf_pair_close(&p);
	return 0;
}

RDP_TEST(shm, shm_cq_overrun_by_peer_receive_completions_is_detected)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc[8];
	int i;

	conf_opts_default(&o);
	o.cqe = 3;
	conf_pair_open(&p, NULL, &o);
	for (i = 0; i < 4; i++)
		RDP_ASSERT_EQ(conf_post_recv(&p.b, 10 + i, 0, 64), 0);
	for (i = 0; i < 4; i++)
		RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_SEND, 0, i, 0, 8, 0, 0, 0), 0);
	RDP_ASSERT_EQ(rdp_poll_cq(p.b.cq, wc, 8), -EIO);
	conf_pair_close(&p);
	return 0;
}

static int
post_read(struct conf_side *s, const struct conf_side *peer, uint64_t wr_id, uint8_t flags)
{
	return conf_post_send(s, RDP_WR_RDMA_READ, flags, wr_id, (uint32_t)wr_id * 64, 64, 0,
			      peer->rx_addr, peer->rx_rkey);
}

/*
 * shm holds a READ against its responder's slots until its completion, or
 * a later one of its SQ, is polled, and fails the READ beyond them as a
 * responder NAKs it: an initiator that does not count its READs is caught.
 */
RDP_TEST(shm, shm_read_beyond_the_responders_read_slots_is_remote_invalid_request)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc[4];

	conf_opts_default(&o);
	o.rd_atomic = 2;
	conf_pair_open(&p, "shm", &o);
	/* two READs, polled: their slots come back */
	RDP_ASSERT_EQ(post_read(&p.a, &p.b, 1, RDP_SEND_SIGNALED), 0);
	RDP_ASSERT_EQ(post_read(&p.a, &p.b, 2, RDP_SEND_SIGNALED), 0);
	RDP_ASSERT_EQ(conf_poll(&p.a, wc, 2, T_MS), 2);
	RDP_ASSERT(wc[0].status == RDP_WC_SUCCESS && wc[1].status == RDP_WC_SUCCESS);
	/* an unsignaled READ is retired by the signaled WR after it */
	RDP_ASSERT_EQ(post_read(&p.a, &p.b, 3, 0), 0);
	RDP_ASSERT_EQ(post_write0(&p.a, 4, RDP_SEND_SIGNALED), 0);
	RDP_ASSERT_EQ(conf_poll(&p.a, wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc[0].wr_id, 4);
	/* now three at once: the third finds no slot */
	RDP_ASSERT_EQ(post_read(&p.a, &p.b, 5, RDP_SEND_SIGNALED), 0);
	RDP_ASSERT_EQ(post_read(&p.a, &p.b, 6, RDP_SEND_SIGNALED), 0);
	RDP_ASSERT_EQ(post_read(&p.a, &p.b, 7, RDP_SEND_SIGNALED), 0);
	RDP_ASSERT_EQ(conf_poll(&p.a, wc, 3, T_MS), 3);
	RDP_ASSERT_EQ(wc[0].wr_id, 5);
	RDP_ASSERT_EQ(wc[0].status, RDP_WC_SUCCESS);
	RDP_ASSERT_EQ(wc[1].wr_id, 6);
	RDP_ASSERT_EQ(wc[1].status, RDP_WC_SUCCESS);
	RDP_ASSERT_EQ(wc[2].wr_id, 7);
	RDP_ASSERT_EQ(wc[2].status, RDP_WC_REM_INV_REQ_ERR);
	RDP_ASSERT_EQ(conf_qp_state(&p.a), RDP_QPS_ERR);
	conf_pair_close(&p);

	/* a responder that grants no slots refuses every READ */
	o.rd_atomic = 0;
	conf_pair_open(&p, "shm", &o);
	RDP_ASSERT_EQ(post_read(&p.a, &p.b, 1, RDP_SEND_SIGNALED), 0);
	RDP_ASSERT_EQ(conf_poll(&p.a, wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc[0].status, RDP_WC_REM_INV_REQ_ERR);
	conf_pair_close(&p);
	return 0;
}

/*
 * Post wr[0..n) in one burst on @p p's side a: the WRs before @p at succeed,
 * wr[at] fails with @p status, the rest flush; each completes once, in order.
 */
static void
burst_fails_at(struct conf_pair *p, const struct rdp_send_wr *wr, uint16_t n, uint16_t at,
	       uint8_t status)
{
	struct rdp_wc wc[8];
	uint16_t i;
	int err;

	RDP_ASSERT(n <= RTE_DIM(wc));
	RDP_ASSERT_EQ(rdp_post_send(p->a.qp, wr, n, &err), n);
	RDP_ASSERT_EQ(conf_poll(&p->a, wc, n, T_MS), n);
	for (i = 0; i < n; i++) {
		RDP_ASSERT_EQ(wc[i].wr_id, wr[i].wr_id);
		RDP_ASSERT_EQ(wc[i].status, i < at ? RDP_WC_SUCCESS :
			      i == at ? status : RDP_WC_WR_FLUSH_ERR);
	}
	RDP_ASSERT_EQ(conf_qp_state(&p->a), RDP_QPS_ERR);
}

/*
 * One-sided WRs posted on an idle SQ run from the caller's WR: a READ and a
 * WRITE land before rdp_post_send() returns, a READ whose scatter list is
 * memory without local write fails LOC_PROT_ERR as a queued one would, and
 * what follows it flushes.
 */
RDP_TEST(shm, shm_onesided_wrs_on_an_idle_sq_run_at_post_and_a_read_needs_local_write)
{
	static uint8_t ro[64], rw[64];
	struct rdp_mr *mr_ro, *mr_rw;
	struct rdp_sge sge[3];
	struct rdp_send_wr wr[3];
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc[3];
	uint32_t i;
	int err;

	conf_opts_default(&o);
	conf_pair_open(&p, "shm", &o);
	mr_ro = rdp_mr_reg(p.pd, ro, sizeof(ro), 0);
	mr_rw = rdp_mr_reg(p.pd, rw, sizeof(rw), RDP_ACCESS_LOCAL_WRITE);
	RDP_ASSERT_MSG(mr_ro != NULL && mr_rw != NULL, "rdp_mr_reg: %s", rdp_err_msg());
	for (i = 0; i < sizeof(ro); i++)
		ro[i] = (uint8_t)(0xa0 + i);
	/* a WRITE from read-only memory, then a READ of it back into rw */
	sge[0] = (struct rdp_sge){ (uintptr_t)ro, sizeof(ro), mr_ro->lkey };
	sge[1] = (struct rdp_sge){ (uintptr_t)rw, sizeof(rw), mr_rw->lkey };
	wr[0] = (struct rdp_send_wr){ .wr_id = 1, .sg_list = &sge[0], .num_sge = 1,
				      .opcode = RDP_WR_RDMA_WRITE, .remote_addr = p.b.rx_addr,
				      .rkey = p.b.rx_rkey };
	wr[1] = (struct rdp_send_wr){ .wr_id = 2, .sg_list = &sge[1], .num_sge = 1,
				      .opcode = RDP_WR_RDMA_READ, .flags = RDP_SEND_SIGNALED,
				      .remote_addr = p.b.rx_addr, .rkey = p.b.rx_rkey };
	RDP_ASSERT_EQ(rdp_post_send(p.a.qp, wr, 2, &err), 2);
	RDP_ASSERT_EQ(err, 0);
	RDP_ASSERT(memcmp(rw, ro, sizeof(ro)) == 0); /* before any poll */
	RDP_ASSERT_EQ(conf_poll(&p.a, wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc[0].wr_id, 2);
	RDP_ASSERT_EQ(wc[0].status, RDP_WC_SUCCESS);
	RDP_ASSERT_EQ(wc[0].opcode, RDP_WC_RDMA_READ);

	/* a READ into read-only memory: LOC_PROT_ERR, nothing written; the WRITE after it flushes */
	memset(rw, 0, sizeof(rw));
	wr[0].wr_id = 3;
	wr[0].flags = RDP_SEND_SIGNALED;
	wr[1].wr_id = 4;
	wr[1].sg_list = &sge[2];
	sge[2] = (struct rdp_sge){ (uintptr_t)ro, sizeof(ro), mr_ro->lkey };
	wr[2] = wr[0];
	wr[2].wr_id = 5;
	wr[2].remote_addr = p.b.rx_addr + 64;
	memset(ro, 0x5c, sizeof(ro));
	burst_fails_at(&p, wr, 3, 1, RDP_WC_LOC_PROT_ERR);
	for (i = 0; i < sizeof(ro); i++)
		RDP_ASSERT_EQ(ro[i], 0x5c);
	/* the flushed WRITE left the peer alone */
	RDP_ASSERT(memcmp((uint8_t *)p.b.rx->addr + 64, ro, sizeof(ro)) != 0);
	RDP_ASSERT_EQ(rdp_mr_free(mr_ro), 0);
	RDP_ASSERT_EQ(rdp_mr_free(mr_rw), 0);
	conf_pair_close(&p);
	return 0;
}

/*
 * Open @p p and make wr[0..n) one-sided WRs of @p opcode, signaled, 64 bytes
 * each between side a's tx and side b's rx at the same offsets: the source
 * side's block i holds @p fill + i, the destination side is zeroed. Returns
 * the destination memory.
 */
static uint8_t *
onesided_burst_open(struct conf_pair *p, const struct conf_opts *o, uint8_t opcode,
		    uint8_t fill, struct rdp_send_wr *wr, struct rdp_sge *sge, uint32_t n)
{
	uint8_t *tx, *rx, *src, *dst;
	uint32_t i;

	conf_pair_open(p, "shm", o);
	tx = p->a.tx->addr;
	rx = p->b.rx->addr;
	src = opcode == RDP_WR_RDMA_WRITE ? tx : rx;
	dst = opcode == RDP_WR_RDMA_WRITE ? rx : tx;
	memset(dst, 0, n * 64);
	for (i = 0; i < n; i++) {
		memset(src + i * 64, fill + i, 64);
		sge[i] = (struct rdp_sge){ (uintptr_t)(tx + i * 64), 64, p->a.tx->lkey };
		wr[i] = (struct rdp_send_wr){ .wr_id = 10 + i, .sg_list = &sge[i], .num_sge = 1,
					      .opcode = opcode, .flags = RDP_SEND_SIGNALED,
					      .remote_addr = p->b.rx_addr + i * 64,
					      .rkey = p->b.rx_rkey };
	}
	return dst;
}

/*
 * A burst of one-sided WRs on an idle SQ is checked whole before any byte
 * moves: a WR in its middle that fails (a bad rkey, a READ beyond the
 * responder's slots) still lets the ones before it land and complete, fails
 * itself, and what follows it flushes without touching memory.
 */
RDP_TEST(shm, shm_onesided_burst_failing_in_its_middle_lands_what_precedes_it_only)
{
	struct rdp_send_wr wr[4];
	struct rdp_sge sge[4];
	struct conf_opts o;
	struct conf_pair p;
	uint8_t *dst;
	uint32_t i;

	conf_opts_default(&o);
	o.rd_atomic = 2;
	dst = onesided_burst_open(&p, &o, RDP_WR_RDMA_WRITE, 0x10, wr, sge, 4);
	wr[2].rkey ^= 0x100u; /* another key id: a remote access error */
	burst_fails_at(&p, wr, 4, 2, RDP_WC_REM_ACCESS_ERR);
	for (i = 0; i < 4 * 64; i++)
		RDP_ASSERT_EQ(dst[i], i < 2 * 64 ? 0x10 + i / 64 : 0);
	conf_pair_close(&p);

	/* four READs in one burst against two read slots: the third fails, the rest is read */
	dst = onesided_burst_open(&p, &o, RDP_WR_RDMA_READ, 0x20, wr, sge, 4);
	burst_fails_at(&p, wr, 4, 2, RDP_WC_REM_INV_REQ_ERR);
	for (i = 0; i < 4 * 64; i++)
		RDP_ASSERT_EQ(dst[i], i < 2 * 64 ? 0x20 + i / 64 : 0);
	conf_pair_close(&p);
	return 0;
}

RDP_TEST(shm, shm_read_depth_above_the_devices_limit_is_refused_at_connect)
{
	struct rdp_dev *dev = rdp_dev_open("shm");
	struct rdp_dev_attr da;
	struct rdp_qp_attr a = { .state = RDP_QPS_RTS };

	RDP_ASSERT(dev != NULL);
	RDP_ASSERT_EQ(rdp_dev_query(dev, &da), 0);
	RDP_ASSERT_EQ(da.max_qp_rd_atom, SHM_MAX_RD_ATOM);
	RDP_ASSERT_EQ(da.max_qp_init_rd_atom, SHM_MAX_RD_ATOM);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	{
		struct conf_opts o;
		struct conf_pair p;

		conf_opts_default(&o);
		conf_pair_open(&p, "shm", &o);
		a.conn.max_rd_atomic = SHM_MAX_RD_ATOM + 1;
		RDP_ASSERT_EQ(rdp_qp_modify(p.a.qp, &a, RDP_QP_ATTR_STATE | RDP_QP_ATTR_CONN),
			      -EINVAL);
		RDP_ASSERT(strstr(rdp_err_msg(), "max_rd_atomic=17") != NULL);
		RDP_ASSERT_EQ(conf_qp_state(&p.a), RDP_QPS_RTS);
		conf_pair_close(&p);
	}
	return 0;
}

RDP_TEST(shm, shm_stats_count_posts_completions_enomem_rnr_and_flushes)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_dev_stats st;
	struct rdp_wc wc[8];

	conf_opts_default(&o);
	o.sq = 2;
	conf_pair_open(&p, NULL, &o);
	RDP_ASSERT_EQ(post_write0(&p.a, 1, RDP_SEND_SIGNALED), 0);
	RDP_ASSERT_EQ(post_write0(&p.a, 2, RDP_SEND_SIGNALED), 0);
	RDP_ASSERT_EQ(post_write0(&p.a, 3, 0), -ENOMEM);
	RDP_ASSERT_EQ(rdp_poll_cq(p.a.cq, wc, 8), 2);
	RDP_ASSERT_EQ(conf_post_recv(&p.a, 50, 0, 64), 0);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_SEND, 0, 4, 0, 8, 0, 0, 0), 0); /* RNR */
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_SEND, 0, 5, 0, 8, 0, 0, 0), 0); /* flushed */
	RDP_ASSERT_EQ(conf_poll(&p.a, wc, 3, T_MS), 3);
	RDP_ASSERT_EQ(rdp_dev_stats_get(p.dev, &st), 0);
	RDP_ASSERT_EQ(st.send_posted, 4);
	RDP_ASSERT_EQ(st.recv_posted, 1);
	RDP_ASSERT_EQ(st.enomem, 1);
	RDP_ASSERT_EQ(st.rnr, 1);
	RDP_ASSERT_EQ(st.completions, 5);
	RDP_ASSERT_EQ(st.flushed, 2);
	RDP_ASSERT_EQ(st.errors, 1);
	RDP_ASSERT_EQ(st.cq_overruns, 0);
	conf_pair_close(&p);
	return 0;
}

RDP_TEST(shm, shm_receive_needs_memory_shared_before_connecting)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_mr *late, *local;
	struct rdp_sge sge;
	struct rdp_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
	static uint8_t buf[256];
	int err;

	conf_opts_default(&o);
	conf_pair_open(&p, NULL, &o);
	late = rdp_mr_alloc(p.pd, 4096, -1, RDP_ACCESS_LOCAL_WRITE);
	RDP_ASSERT(late != NULL);
	sge = (struct rdp_sge){ (uintptr_t)late->addr, 64, late->lkey };
	RDP_ASSERT_EQ(rdp_post_recv(p.b.qp, &wr, 1, &err), 0);
	RDP_ASSERT_EQ(err, -EINVAL);
	local = rdp_mr_reg(p.pd, buf, sizeof(buf), RDP_ACCESS_LOCAL_WRITE);
	RDP_ASSERT(local != NULL);
	sge = (struct rdp_sge){ (uintptr_t)buf, 64, local->lkey };
	RDP_ASSERT_EQ(rdp_post_recv(p.b.qp, &wr, 1, &err), 0);
	RDP_ASSERT_EQ(err, -EINVAL);
	/* remote access to it goes through the key table: still no receive into it */
	RDP_ASSERT_EQ(rdp_mr_free(local), 0);
	local = rdp_mr_reg(p.pd, buf, sizeof(buf),
			   RDP_ACCESS_LOCAL_WRITE | RDP_ACCESS_REMOTE_WRITE);
	RDP_ASSERT_MSG(local != NULL, "rdp_mr_reg(remote write): %s", rdp_err_msg());
	sge = (struct rdp_sge){ (uintptr_t)buf, 64, local->lkey };
	RDP_ASSERT_EQ(rdp_post_recv(p.b.qp, &wr, 1, &err), 0);
	RDP_ASSERT_EQ(err, -EINVAL);
	RDP_ASSERT_EQ(rdp_mr_free(late), 0);
	RDP_ASSERT_EQ(rdp_mr_free(local), 0);
	conf_pair_close(&p);
	return 0;
}

/*
 * A burst of receives is checked SGE by SGE, whatever the ones before it
 * passed (the post remembers the MR it last checked): after a good receive
 * of the rx MR, one of an MR the peer never mapped, and one of the rx MR's
 * lkey outside that MR, each stop the burst at its place with -EINVAL.
 */
RDP_TEST(shm, shm_receive_burst_checks_every_sge_after_one_that_passed)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_mr *late;
	struct rdp_sge sge[3];
	struct rdp_recv_wr wr[3];
	int k, err;

	conf_opts_default(&o);
	conf_pair_open(&p, NULL, &o);
	late = rdp_mr_alloc(p.pd, 4096, -1, RDP_ACCESS_LOCAL_WRITE);
	RDP_ASSERT(late != NULL);
	for (k = 0; k < 3; k++) {
		sge[k] = (struct rdp_sge){ (uintptr_t)p.b.rx->addr + 64 * k, 64, p.b.rx->lkey };
		wr[k] = (struct rdp_recv_wr){ .wr_id = 10 + k, .sg_list = &sge[k], .num_sge = 1 };
	}
	sge[1] = (struct rdp_sge){ (uintptr_t)late->addr, 64, late->lkey };
	RDP_ASSERT_EQ(rdp_post_recv(p.b.qp, wr, 3, &err), 1);
	RDP_ASSERT_EQ(err, -EINVAL);
	/* the rx MR's lkey, one byte past its end */
	sge[1] = (struct rdp_sge){ (uintptr_t)p.b.rx->addr + p.b.rx->length - 63, 64,
				   p.b.rx->lkey };
	RDP_ASSERT_EQ(rdp_post_recv(p.b.qp, wr, 3, &err), 1);
	RDP_ASSERT_EQ(err, -EINVAL);
	/* and an lkey that names nothing */
	sge[1] = (struct rdp_sge){ (uintptr_t)p.b.rx->addr, 64, p.b.rx->lkey ^ 0x5a5a0000u };
	RDP_ASSERT_EQ(rdp_post_recv(p.b.qp, wr, 3, &err), 1);
	RDP_ASSERT_EQ(err, -EINVAL);
	/* all three good: all three posted */
	sge[1] = (struct rdp_sge){ (uintptr_t)p.b.rx->addr + 64, 64, p.b.rx->lkey };
	RDP_ASSERT_EQ(rdp_post_recv(p.b.qp, wr, 3, &err), 3);
	RDP_ASSERT_EQ(err, 0);
	RDP_ASSERT_EQ(rdp_mr_free(late), 0);
	conf_pair_close(&p);
	return 0;
}

/*
 * Application memory registered and deregistered over and over (an MR per
 * I/O, as some storage applications do) never runs the device out of MR
 * ids: a freed rdp_mr_reg() id is taken again under a new key, and a WRITE
 * with the key of an earlier registration of that id is a remote access
 * error that leaves the memory alone.
 */
RDP_TEST(shm, shm_application_memory_registered_again_and_again_reuses_ids_under_new_keys)
{
	static uint8_t buf[4096], before[64], after[64];
	struct rdp_mr *mr, *other;
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc[2];
	uint32_t first_key, i;

	conf_opts_default(&o);
	conf_pair_open(&p, NULL, &o);
	mr = rdp_mr_reg(p.pd, buf, sizeof(buf), RDP_ACCESS_LOCAL_WRITE | RDP_ACCESS_REMOTE_WRITE);
	RDP_ASSERT_MSG(mr != NULL, "rdp_mr_reg: %s", rdp_err_msg());
	first_key = mr->rkey;
	RDP_ASSERT_EQ(rdp_mr_free(mr), 0);
	for (i = 0; i < 2 * SHM_MAX_MR; i++) {
		mr = rdp_mr_reg(p.pd, buf, sizeof(buf),
				RDP_ACCESS_LOCAL_WRITE | RDP_ACCESS_REMOTE_WRITE);
		RDP_ASSERT_MSG(mr != NULL, "registration %u: %s", i + 2, rdp_err_msg());
		RDP_ASSERT_MSG(mr->rkey != first_key, "registration %u took key %#x again", i + 2,
			       first_key);
		RDP_ASSERT_EQ(rdp_mr_free(mr), 0);
	}
	/* the same id under a new key: the first registration's key is refused */
	mr = rdp_mr_reg(p.pd, buf, sizeof(buf), RDP_ACCESS_LOCAL_WRITE | RDP_ACCESS_REMOTE_WRITE);
	RDP_ASSERT(mr != NULL);
	RDP_ASSERT_EQ(shm_key_id(mr->rkey), shm_key_id(first_key));
	RDP_ASSERT(mr->rkey != first_key);
	/* memory the peer maps, as allocated MRs are, is not given a reused id */
	other = rdp_mr_alloc(p.pd, 4096, -1, RDP_ACCESS_LOCAL_WRITE);
	RDP_ASSERT(other != NULL);
	RDP_ASSERT(shm_key_id(other->lkey) != shm_key_id(first_key));
	RDP_ASSERT_EQ(rdp_mr_free(other), 0);
	memcpy(before, buf, sizeof(before));
	conf_tx_fill(&p.a, 0, sizeof(before), 55);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_RDMA_WRITE, RDP_SEND_SIGNALED, 1, 0,
				     sizeof(before), 0, (uintptr_t)buf, first_key), 0);
	RDP_ASSERT_EQ(conf_poll(&p.a, wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc[0].wr_id, 1);
	RDP_ASSERT_EQ(wc[0].status, RDP_WC_REM_ACCESS_ERR);
	memcpy(after, buf, sizeof(after));
	RDP_ASSERT(memcmp(before, after, sizeof(after)) == 0);
	RDP_ASSERT_EQ(rdp_mr_free(mr), 0);
	conf_pair_close(&p);
	return 0;
}

RDP_TEST(shm, shm_peer_qp_destroy_moves_the_survivor_to_err_within_100ms)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_event ev;
	struct rdp_wc wc[4];
	double t0, dt;

	conf_opts_default(&o);
	conf_pair_open(&p, NULL, &o);
	RDP_ASSERT_EQ(conf_post_recv(&p.a, 7, 0, 64), 0);
	t0 = rdp_clock_s();
	conf_qp_destroy(&p.b);
	while (conf_qp_state(&p.a) != RDP_QPS_ERR && rdp_clock_s() - t0 < 1.0)
		;
	dt = rdp_clock_s() - t0;
	printf("survivor in ERR after %.2f ms\n", dt * 1e3);
	RDP_ASSERT_EQ(conf_qp_state(&p.a), RDP_QPS_ERR);
	RDP_ASSERT_MSG(dt < 0.1, "took %.1f ms", dt * 1e3);
	RDP_ASSERT(wait_event(p.dev, RDP_EVENT_QP_FATAL, &ev, T_MS));
	RDP_ASSERT(ev.qp == p.a.qp);
	RDP_ASSERT_EQ(conf_poll(&p.a, wc, 4, 50), 1);
	RDP_ASSERT_EQ(wc[0].wr_id, 7);
	RDP_ASSERT_EQ(wc[0].status, RDP_WC_WR_FLUSH_ERR);
	conf_pair_close(&p);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Garbage in shared memory                                               */
/* ---------------------------------------------------------------------- */

static struct shm_qp *
sqp(struct rdp_qp *qp)
{
	return container_of(qp, struct shm_qp, head);
}

/* A send too big for a receive entry's payload area: it goes by the entry's SGEs. */
#define BIG_SEND (SHM_RQ_INLINE + 136u)

static unsigned int
send_one_status_len(struct conf_pair *p, uint32_t len)
{
	struct rdp_wc wc[4];
	int n;

	RDP_ASSERT_EQ(conf_post_send(&p->a, RDP_WR_SEND, RDP_SEND_SIGNALED, 1, 0, len, 0, 0, 0), 0);
	n = conf_poll(&p->a, wc, 1, T_MS);
	RDP_ASSERT_EQ(n, 1);
	return wc[0].status;
}

static unsigned int
send_one_status(struct conf_pair *p)
{
	return send_one_status_len(p, 32);
}

RDP_TEST(shm, shm_garbage_from_the_peer_ends_in_errors_never_in_a_crash)
{
	struct conf_opts o;
	struct conf_pair p;
	struct shm_rq_ent *ent;
	struct rdp_wc wc[8];
	unsigned int st;
	uint32_t w, n;

	conf_opts_default(&o);

	/* the receiver's posted index runs past its ring */
	conf_pair_open(&p, NULL, &o);
	sqp(p.b.qp)->seg->rq_posted = UINT64_C(1) << 40;
	st = send_one_status(&p);
	RDP_ASSERT_MSG(st == RDP_WC_REM_OP_ERR, "%s", rdp_wc_status_str(st));
	RDP_ASSERT_EQ(conf_qp_state(&p.a), RDP_QPS_ERR);
	conf_pair_close(&p);

	/* a receive entry with too many SGEs, then one naming no MR (a send
	 * too big for the entry's payload area, so that the sender reads them) */
	conf_pair_open(&p, NULL, &o);
	RDP_ASSERT_EQ(conf_post_recv(&p.b, 9, 0, 1024), 0);
	ent = shm_rq_ent(sqp(p.b.qp)->ents, sqp(p.b.qp)->rq_mask, sqp(p.b.qp)->rq_stride, 0);
	ent->num_sge = UINT8_MAX; /* more than any entry holds */
	RDP_ASSERT_EQ(send_one_status_len(&p, BIG_SEND), RDP_WC_REM_OP_ERR);
	RDP_ASSERT_EQ(conf_poll(&p.b, wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc[0].status, RDP_WC_LOC_QP_OP_ERR);
	conf_pair_close(&p);
	conf_pair_open(&p, NULL, &o);
	RDP_ASSERT_EQ(conf_post_recv(&p.b, 9, 0, 1024), 0);
	ent = shm_rq_ent(sqp(p.b.qp)->ents, sqp(p.b.qp)->rq_mask, sqp(p.b.qp)->rq_stride, 0);
	ent->sge[0].off = UINT64_MAX - 8;
	RDP_ASSERT_EQ(send_one_status_len(&p, BIG_SEND), RDP_WC_REM_OP_ERR);
	conf_pair_close(&p);
	conf_pair_open(&p, NULL, &o);
	RDP_ASSERT_EQ(conf_post_recv(&p.b, 9, 0, 1024), 0);
	ent = shm_rq_ent(sqp(p.b.qp)->ents, sqp(p.b.qp)->rq_mask, sqp(p.b.qp)->rq_stride, 0);
	ent->sge[0].mr_id = 0xfffffff0u;
	RDP_ASSERT_EQ(send_one_status_len(&p, BIG_SEND), RDP_WC_REM_OP_ERR);
	conf_pair_close(&p);

	/* a small send goes into the entry and never reads its SGEs: the
	 * receiver copies into the buffer it remembers posting */
	conf_pair_open(&p, NULL, &o);
	RDP_ASSERT_EQ(conf_post_recv(&p.b, 9, 0, 1024), 0);
	ent = shm_rq_ent(sqp(p.b.qp)->ents, sqp(p.b.qp)->rq_mask, sqp(p.b.qp)->rq_stride, 0);
	ent->sge[0].mr_id = 0xfffffff0u;
	ent->sge[0].off = UINT64_MAX - 8;
	RDP_ASSERT_EQ(send_one_status(&p), RDP_WC_SUCCESS);
	RDP_ASSERT_EQ(conf_poll(&p.b, wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc[0].status, RDP_WC_SUCCESS);
	RDP_ASSERT_EQ(wc[0].byte_len, 32);
	conf_pair_close(&p);

	/* an entry's payload length past its payload area, or past what was
	 * posted: an error completion, no copy out of bounds */
	for (w = 0; w < 2; w++) {
		uint32_t bad = w == 0 ? SHM_RQ_INLINE + 4096 : 1024 + 1;

		conf_pair_open(&p, NULL, &o);
		RDP_ASSERT_EQ(conf_post_recv(&p.b, 9, 0, w == 0 ? 8192 : 1024), 0);
		RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_SEND, 0, 1, 0, 32, 0, 0, 0), 0);
		ent = shm_rq_ent(sqp(p.b.qp)->ents, sqp(p.b.qp)->rq_mask, sqp(p.b.qp)->rq_stride, 0);
		for (n = 0; n < 5000 && __atomic_load_n(&ent->seq, __ATOMIC_ACQUIRE) != 1; n++)
			usleep(1000);
		RDP_ASSERT_EQ(__atomic_load_n(&ent->seq, __ATOMIC_ACQUIRE), 1);
		RDP_ASSERT(ent->wc_flags & SHM_ENT_INLINE);
		ent->byte_len = bad;
		RDP_ASSERT_EQ(conf_poll(&p.b, wc, 1, T_MS), 1);
		RDP_ASSERT_EQ(wc[0].status, RDP_WC_GENERAL_ERR);
		conf_pair_close(&p);
	}

	/* the claim index moved under us: the peer is treated as gone */
	conf_pair_open(&p, NULL, &o);
	RDP_ASSERT_EQ(conf_post_recv(&p.b, 9, 0, 64), 0);
	sqp(p.b.qp)->seg->rq_claim = 12345;
	RDP_ASSERT_EQ(send_one_status(&p), RDP_WC_RETRY_EXC_ERR);
	conf_pair_close(&p);

	/* our own RQ's completion index, written by the peer, is impossible */
	conf_pair_open(&p, NULL, &o);
	RDP_ASSERT_EQ(conf_post_recv(&p.a, 1, 0, 64), 0);
	RDP_ASSERT_EQ(conf_post_recv(&p.a, 2, 64, 64), 0);
	sqp(p.a.qp)->seg->rq_done = UINT64_C(1) << 50;
	shm_bell_self(sqp(p.a.qp)->rcq, sqp(p.a.qp)->rslot);
	RDP_ASSERT_EQ(conf_poll(&p.a, wc, 2, T_MS), 2);
	RDP_ASSERT_EQ(wc[0].status, RDP_WC_WR_FLUSH_ERR);
	RDP_ASSERT_EQ(wc[1].status, RDP_WC_WR_FLUSH_ERR);
	RDP_ASSERT_EQ(conf_qp_state(&p.a), RDP_QPS_ERR);
	conf_pair_close(&p);

	/* a completion status and length out of range; every doorbell rung */
	conf_pair_open(&p, NULL, &o);
	RDP_ASSERT_EQ(conf_post_recv(&p.b, 9, 0, 64), 0);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_SEND, 0, 1, 0, 32, 0, 0, 0), 0);
	ent = shm_rq_ent(sqp(p.b.qp)->ents, sqp(p.b.qp)->rq_mask, sqp(p.b.qp)->rq_stride, 0);
	ent->status = 200;
	for (w = 0; w < SHM_BELL_WORDS; w++)
		sqp(p.b.qp)->rcq->seg->bell[w] = ~UINT64_C(0);
	RDP_ASSERT_EQ(conf_poll(&p.b, wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc[0].status, RDP_WC_GENERAL_ERR);
	conf_pair_close(&p);
	return 0;
}

/*
 * One post_send of SENDs with an RDMA WRITE and a bad lkey among them: the
 * SENDs before run as posted, with receive entries claimed for the whole
 * burst; the rest are queued. The entries claimed and not used go back, so
 * the queued SENDs take the next ones: every SEND lands once, in order.
 */
RDP_TEST(shm, shm_burst_mixing_direct_and_queued_wrs_lands_every_send_once_in_order)
{
	static const char pattern[] = "0123456789abcdef";
	struct rdp_send_wr wr[6];
	struct rdp_sge sge[6];
	struct rdp_wc wc[8];
	struct conf_opts o;
	struct conf_pair p;
	uint32_t i;
	int err, n;

	conf_opts_default(&o);
	conf_pair_open(&p, NULL, &o);
	for (i = 0; i < 6; i++)
		RDP_ASSERT_EQ(conf_post_recv(&p.b, 100 + i, i * 64, 64), 0);
	for (i = 0; i < 6; i++) {
		memcpy((uint8_t *)p.a.tx->addr + i * 64, pattern + i, 8);
		sge[i] = (struct rdp_sge){ .addr = (uintptr_t)p.a.tx->addr + i * 64, .length = 8,
					   .lkey = p.a.tx->lkey };
		wr[i] = (struct rdp_send_wr){ .wr_id = i, .sg_list = &sge[i], .num_sge = 1,
					      .opcode = RDP_WR_SEND, .flags = RDP_SEND_SIGNALED };
	}
	/* SEND, SEND, WRITE, SEND, SEND, SEND: four receive entries used of six claimed */
	wr[2].opcode = RDP_WR_RDMA_WRITE;
	wr[2].remote_addr = p.b.rx_addr + 4096;
	wr[2].rkey = p.b.rx_rkey;
	RDP_ASSERT_EQ(rdp_post_send(p.a.qp, wr, 6, &err), 6);
	RDP_ASSERT_EQ(err, 0);
	RDP_ASSERT_EQ(conf_poll(&p.a, wc, 6, T_MS), 6);
	for (i = 0; i < 6; i++) {
		RDP_ASSERT_EQ(wc[i].wr_id, i);
		RDP_ASSERT_EQ(wc[i].status, RDP_WC_SUCCESS);
	}
	n = conf_poll(&p.b, wc, 5, T_MS);
	RDP_ASSERT_EQ(n, 5);
	for (i = 0; i < 5; i++) {
		uint32_t sent = i < 2 ? i : i + 1;

		RDP_ASSERT_EQ(wc[i].status, RDP_WC_SUCCESS);
		RDP_ASSERT_EQ(wc[i].wr_id, 100 + i);
		RDP_ASSERT_EQ(wc[i].byte_len, 8);
		RDP_ASSERT(memcmp((uint8_t *)p.b.rx->addr + i * 64, pattern + sent, 8) == 0);
	}
	RDP_ASSERT(memcmp((uint8_t *)p.b.rx->addr + 4096, pattern + 2, 8) == 0);
	RDP_ASSERT_EQ(sqp(p.b.qp)->seg->rq_claim, 5);

	/* a bad lkey mid-burst: the SEND before it lands, it and the rest fail */
	sge[1].lkey = 0xdead00u;
	wr[2].opcode = RDP_WR_SEND;
	RDP_ASSERT_EQ(rdp_post_send(p.a.qp, wr, 3, &err), 3);
	RDP_ASSERT_EQ(conf_poll(&p.a, wc, 3, T_MS), 3);
	RDP_ASSERT_EQ(wc[0].status, RDP_WC_SUCCESS);
	RDP_ASSERT_EQ(wc[1].status, RDP_WC_LOC_PROT_ERR);
	RDP_ASSERT_EQ(wc[2].status, RDP_WC_WR_FLUSH_ERR);
	RDP_ASSERT_EQ(conf_poll(&p.b, wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc[0].status, RDP_WC_SUCCESS);
	RDP_ASSERT_EQ(wc[0].wr_id, 105);
	RDP_ASSERT_EQ(sqp(p.b.qp)->seg->rq_claim, 6);
	conf_pair_close(&p);
	return 0;
}

/*
 * A CQ looks at the QP that received last before its doorbells (the hot
 * QP). A QP destroyed without its flushes being polled must not leave that
 * hint behind: the next QP given its slot is still being set up by another
 * thread while the CQ's poller runs.
 */
RDP_TEST(shm, shm_destroyed_qp_leaves_no_hot_hint_to_the_next_qp_in_its_slot)
{
	struct rdp_qp_init_attr ia = { 0 };
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc[2];

	conf_opts_default(&o);
	conf_pair_open(&p, NULL, &o);
	RDP_ASSERT_EQ(conf_post_recv(&p.b, 9, 0, 64), 0);
	RDP_ASSERT_EQ(conf_post_recv(&p.b, 10, 64, 64), 0);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_SEND, 0, 1, 0, 32, 0, 0, 0), 0);
	RDP_ASSERT_EQ(conf_poll(&p.b, wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(to_scq(p.b.cq)->hot, sqp(p.b.qp)->rslot);

	/* destroyed with a receive still posted, nothing of it polled */
	RDP_ASSERT_EQ(rdp_qp_destroy(p.b.qp), 0);
	RDP_ASSERT_EQ(to_scq(p.b.cq)->hot, SHM_NO_SLOT);

	/* a new QP takes the slot; conf_pair_close destroys it */
	ia.send_cq = p.b.cq;
	ia.recv_cq = p.b.cq;
	ia.cap.max_send_wr = o.sq;
	ia.cap.max_recv_wr = o.rq;
	ia.cap.max_send_sge = o.send_sge;
	ia.cap.max_recv_sge = o.recv_sge;
	p.b.qp = rdp_qp_create(p.pd, &ia);
	RDP_ASSERT_MSG(p.b.qp != NULL, "rdp_qp_create: %s", rdp_err_msg());
	RDP_ASSERT_EQ(to_scq(p.b.cq)->hot, SHM_NO_SLOT);
	conf_pair_close(&p);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Announced RQs: senders that ring no doorbell                           */
/* ---------------------------------------------------------------------- */

#define ANN_QPS 2
#define ANN_RQ 32
#define ANN_MSGS 150000u

/* One sender thread: its own QP and CQ, bursts and pauses of random length. */
struct ann_sender {
	struct rdp_qp *qp;
	struct rdp_cq *cq;
	struct rdp_mr *tx;
	uint64_t sent;                 /* this thread only */
	uint64_t received;             /* (atomic) written by the receiver */
	uint64_t seed;
	int err;                       /* (atomic) */
};

static void *
ann_send_main(void *arg)
{
	struct ann_sender *s = arg;
	double deadline = rdp_clock_s() + 60.0;
	uint64_t done = 0;

	while (s->sent < ANN_MSGS && rdp_clock_s() < deadline) {
		uint64_t rcvd = __atomic_load_n(&s->received, __ATOMIC_ACQUIRE);
		struct rdp_send_wr wr[8];
		struct rdp_sge sge[8];
		struct rdp_wc wc[16];
		uint32_t burst, j;
		int n, err;

		s->seed = s->seed * 6364136223846793005ull + 1442695040888963407ull;
		burst = (uint32_t)RTE_MIN(1 + (s->seed >> 61), ANN_MSGS - s->sent);
		/*
		 * Stop and wait: the next burst only once the receiver has this
		 * one. A burst published without a doorbell and then lost by the
		 * receiver would stall the stream here, with no later doorbell of
		 * ours to rescue it.
		 */
		if (rcvd != s->sent || s->sent - done >= ANN_RQ)
			burst = 0;
		for (j = 0; j < burst; j++) {
			uint64_t *slot = (uint64_t *)((uint8_t *)s->tx->addr + (s->sent + j) % ANN_RQ * 64);

			*slot = s->sent + j;
			sge[j] = (struct rdp_sge){ (uintptr_t)slot, 8, s->tx->lkey };
			wr[j] = (struct rdp_send_wr){ .wr_id = s->sent + j, .sg_list = &sge[j],
						      .num_sge = 1, .opcode = RDP_WR_SEND,
						      .flags = RDP_SEND_SIGNALED | RDP_SEND_INLINE };
		}
		if (burst > 0) {
			if (rdp_post_send(s->qp, wr, (uint16_t)burst, &err) != burst) {
				__atomic_store_n(&s->err, err ? err : -EIO, __ATOMIC_RELEASE);
				break;
			}
			s->sent += burst;
		}
		while ((n = rdp_poll_cq(s->cq, wc, 16)) > 0)
			for (j = 0; j < (uint32_t)n; j++, done++)
				if (wc[j].status != RDP_WC_SUCCESS)
					__atomic_store_n(&s->err, -EIO, __ATOMIC_RELEASE);
		/* now and then a pause: the other QP gets the receiver for a while */
		if ((s->seed >> 40) % 64 == 0)
			usleep((useconds_t)((s->seed >> 20) % 200));
	}
	return NULL;
}

/* Two senders, each with its QP and CQ, into two QPs on one receiving CQ. */
struct ann_rig {
	struct rdp_dev *dev;
	struct rdp_pd *pd;
	struct rdp_cq *cqb;
	struct rdp_mr *rx;
	struct ann_sender snd[ANN_QPS];
	struct rdp_qp *b[ANN_QPS];
};

static void
ann_post_recv(struct ann_rig *g, uint32_t q, uint32_t k)
{
	struct rdp_sge sge = { (uintptr_t)g->rx->addr + ((uint64_t)q * ANN_RQ + k) * 64, 64,
			       g->rx->lkey };
	struct rdp_recv_wr rw = { .wr_id = (uint64_t)q << 32 | k, .sg_list = &sge, .num_sge = 1 };
	int err;

	RDP_ASSERT_EQ(rdp_post_recv(g->b[q], &rw, 1, &err), 1);
}

static void
ann_open(struct ann_rig *g)
{
	struct rdp_qp_init_attr ia = { 0 };
	struct rdp_qp_conn_params conn = { .rnr_retry = 7 };
	uint32_t i, j;

	memset(g, 0, sizeof(*g));
	g->dev = rdp_dev_open("shm");
	RDP_ASSERT(g->dev != NULL);
	g->pd = rdp_pd_alloc(g->dev);
	g->cqb = rdp_cq_create(g->dev, 4 * ANN_RQ, -1);
	g->rx = rdp_mr_alloc(g->pd, ANN_QPS * ANN_RQ * 64, -1, RDP_ACCESS_LOCAL_WRITE);
	RDP_ASSERT(g->pd != NULL && g->cqb != NULL && g->rx != NULL);
	ia.cap = (struct rdp_qp_cap){ .max_send_wr = ANN_RQ, .max_recv_wr = ANN_RQ,
				      .max_send_sge = 1, .max_recv_sge = 1, .max_inline_data = 64 };
	for (i = 0; i < ANN_QPS; i++) {
		struct ann_sender *s = &g->snd[i];
		struct rdp_qp_addr aa, ba;

		s->seed = 0x9e3779b97f4a7c15ull * (i + 1);
		s->cq = rdp_cq_create(g->dev, 2 * ANN_RQ, -1);
		s->tx = rdp_mr_alloc(g->pd, ANN_RQ * 64, -1, RDP_ACCESS_LOCAL_WRITE);
		RDP_ASSERT(s->cq != NULL && s->tx != NULL);
		ia.send_cq = ia.recv_cq = s->cq;
		s->qp = rdp_qp_create(g->pd, &ia);
		ia.send_cq = ia.recv_cq = g->cqb;
		g->b[i] = rdp_qp_create(g->pd, &ia);
		RDP_ASSERT_MSG(s->qp != NULL && g->b[i] != NULL, "qp %u: %s", i, rdp_err_msg());
		RDP_ASSERT_EQ(rdp_qp_local_addr(s->qp, &aa), 0);
		RDP_ASSERT_EQ(rdp_qp_local_addr(g->b[i], &ba), 0);
		RDP_ASSERT_MSG(rdp_qp_connect(s->qp, &ba, &conn) == 0, "%s", rdp_err_msg());
		RDP_ASSERT_MSG(rdp_qp_connect(g->b[i], &aa, &conn) == 0, "%s", rdp_err_msg());
		for (j = 0; j < ANN_RQ; j++)
			ann_post_recv(g, i, j);
	}
}

static void
ann_close(struct ann_rig *g)
{
	uint32_t i;

	for (i = 0; i < ANN_QPS; i++) {
		RDP_ASSERT_EQ(rdp_qp_destroy(g->snd[i].qp), 0);
		RDP_ASSERT_EQ(rdp_qp_destroy(g->b[i]), 0);
		RDP_ASSERT_EQ(rdp_cq_destroy(g->snd[i].cq), 0);
		RDP_ASSERT_EQ(rdp_mr_free(g->snd[i].tx), 0);
	}
	RDP_ASSERT_EQ(rdp_cq_destroy(g->cqb), 0);
	RDP_ASSERT_EQ(rdp_mr_free(g->rx), 0);
	RDP_ASSERT_EQ(rdp_pd_free(g->pd), 0);
	RDP_ASSERT_EQ(rdp_dev_close(g->dev), 0);
}

/* Post one inline 8-byte SEND from sender @p q, carrying its sequence. */
static void
ann_post_send_one(struct ann_rig *g, uint32_t q)
{
	struct ann_sender *s = &g->snd[q];
	uint64_t *slot = (uint64_t *)s->tx->addr;
	struct rdp_sge sge = { (uintptr_t)slot, 8, s->tx->lkey };
	struct rdp_send_wr wr = { .wr_id = s->sent, .sg_list = &sge, .num_sge = 1,
				  .opcode = RDP_WR_SEND,
				  .flags = RDP_SEND_SIGNALED | RDP_SEND_INLINE };
	int err;

	*slot = s->sent;
	RDP_ASSERT_EQ(rdp_post_send(s->qp, &wr, 1, &err), 1);
	s->sent++;
}

/* One inline 8-byte SEND from sender @p q, its completion polled at once. */
static void
ann_send_one(struct ann_rig *g, uint32_t q)
{
	struct rdp_wc wc;

	ann_post_send_one(g, q);
	RDP_ASSERT_EQ(rdp_poll_cq(g->snd[q].cq, &wc, 1), 1);
	RDP_ASSERT_EQ(wc.status, RDP_WC_SUCCESS);
}

/* Poll the receiving CQ for one message of @p q (within T_MS); repost its buffer. */
static bool
ann_recv_one(struct ann_rig *g, uint32_t q)
{
	double deadline = rdp_clock_s() + T_MS / 1e3;
	struct rdp_wc wc[4];
	int n;

	/* room for more than one: a poll that fills its array leaves the QP flagged */
	while ((n = rdp_poll_cq(g->cqb, wc, 4)) == 0 && rdp_clock_s() < deadline)
		;
	if (n == 0)
		return false;
	RDP_ASSERT_EQ(n, 1);
	RDP_ASSERT_EQ(wc[0].status, RDP_WC_SUCCESS);
	RDP_ASSERT_EQ((uint32_t)(wc[0].wr_id >> 32), q);
	ann_post_recv(g, q, (uint32_t)wc[0].wr_id);
	return true;
}

/*
 * A SEND published to an announced RQ rings no doorbell. When the
 * announcement moves to another RQ just after (as it does once the other
 * QP has been the hot one for a while), the withdrawn RQ is looked at once
 * more, so that message is still found: nothing else would flag it.
 */
RDP_TEST(shm, shm_announced_rq_withdrawn_after_a_doorbell_less_send_still_delivers_it)
{
	struct ann_rig g;
	struct shm_cq *cq;
	struct shm_qp *b0, *b1;
	uint64_t skipped;
	uint32_t i;

	ann_open(&g);
	cq = to_scq(g.cqb);
	b0 = sqp(g.b[0]);
	b1 = sqp(g.b[1]);
	for (i = 0; i <= SHM_ANNOUNCE_AFTER + 1; i++) {
		ann_send_one(&g, 0);
		RDP_ASSERT_MSG(ann_recv_one(&g, 0), "message %u of QP 0 not polled", i);
	}
	RDP_ASSERT_EQ(cq->announced, b0->rslot);
	RDP_ASSERT_EQ(b0->seg->peeked, 1);

	/* published without a doorbell, not polled yet */
	skipped = sqp(g.snd[0].qp)->bells_skipped;
	ann_send_one(&g, 0);
	RDP_ASSERT_EQ(sqp(g.snd[0].qp)->bells_skipped, skipped + 1);
	RDP_ASSERT_EQ(cq->seg->bell[b0->rslot / 64] & (UINT64_C(1) << (b0->rslot % 64)), 0);

	/* QP 1 is the hot one now, and becomes the announced one */
	__atomic_store_n(&cq->hot, b1->rslot, __ATOMIC_RELAXED);
	shm_cq_announce(cq, b1);
	RDP_ASSERT_EQ(b0->seg->peeked, 0);
	RDP_ASSERT_EQ(b1->seg->peeked, 1);
	RDP_ASSERT_MSG(ann_recv_one(&g, 0), "the message sent without a doorbell to the "
		       "withdrawn RQ was never found");

	/* and QP 0's sender rings again */
	ann_send_one(&g, 0);
	RDP_ASSERT_EQ(sqp(g.snd[0].qp)->bells_skipped, skipped + 1);
	RDP_ASSERT(ann_recv_one(&g, 0));
	ann_close(&g);
	return 0;
}

/*
 * A closed RQ that was announced: senders that claimed entries before the
 * close may complete them after the poller's look, without a doorbell if
 * they saw the announcement. Withdrawing it flags the QP, and that flag
 * must outlive the look that withdrew it, or the QP is never drained.
 */
RDP_TEST(shm, shm_closed_announced_rq_stays_flagged_after_the_look_that_withdraws_it)
{
	struct rdp_wc wc[2 * ANN_RQ];
	struct ann_rig g;
	struct shm_cq *cq;
	struct shm_qp *b0;
	uint32_t i;
	int n, flushed = 0;

	ann_open(&g);
	cq = to_scq(g.cqb);
	b0 = sqp(g.b[0]);
	for (i = 0; i <= SHM_ANNOUNCE_AFTER + 1; i++) {
		ann_send_one(&g, 0);
		RDP_ASSERT(ann_recv_one(&g, 0));
	}
	RDP_ASSERT_EQ(cq->announced, b0->rslot);
	set_err(g.b[0]);
	/* the look that finds it closed: flushes (with room to spare, so that a
	 * full array does not keep the flag on its own), and withdraws the
	 * announcement */
	n = rdp_poll_cq(g.cqb, wc, 2 * ANN_RQ);
	RDP_ASSERT(n > 0);
	flushed += n;
	RDP_ASSERT_EQ(cq->announced, SHM_NO_SLOT);
	RDP_ASSERT_EQ(b0->seg->peeked, 0);
	RDP_ASSERT_MSG(cq->pend[b0->rslot / 64] & (UINT64_C(1) << (b0->rslot % 64)),
		       "the withdrawn, closed QP is no longer flagged");
	while ((n = rdp_poll_cq(g.cqb, wc, 2 * ANN_RQ)) > 0)
		flushed += n;
	RDP_ASSERT_EQ(flushed, ANN_RQ);
	ann_close(&g);
	return 0;
}

/*
 * Two senders take turns at random, each waiting for its burst to arrive
 * before the next, while the announcement moves between their QPs: every
 * message arrives, once and in order, and the stream never stalls. The
 * counters show the path was taken.
 */
RDP_TEST(shm, shm_announced_rq_loses_no_message_when_the_announcement_moves)
{
	struct ann_rig g;
	uint64_t next[ANN_QPS] = { 0 }, skipped = 0, got = 0;
	pthread_t th[ANN_QPS];
	double last_progress;
	uint32_t i, j;
	int n;

	ann_open(&g);
	for (i = 0; i < ANN_QPS; i++)
		RDP_ASSERT_EQ(pthread_create(&th[i], NULL, ann_send_main, &g.snd[i]), 0);
	last_progress = rdp_clock_s();
	while (got < (uint64_t)ANN_QPS * ANN_MSGS) {
		struct rdp_wc wc[32];

		n = rdp_poll_cq(g.cqb, wc, 32);
		RDP_ASSERT_MSG(n >= 0, "poll_cq: %d", n);
		for (j = 0; j < (uint32_t)n; j++) {
			uint32_t q = (uint32_t)(wc[j].wr_id >> 32), k = (uint32_t)wc[j].wr_id;
			uint64_t seq;

			RDP_ASSERT_MSG(wc[j].status == RDP_WC_SUCCESS && q < ANN_QPS,
				       "status %u qp %u", wc[j].status, q);
			memcpy(&seq, (uint8_t *)g.rx->addr + ((uint64_t)q * ANN_RQ + k) * 64,
			       sizeof(seq));
			RDP_ASSERT_MSG(seq == next[q], "QP %u: message %" PRIu64 " where %" PRIu64
				       " was due", q, seq, next[q]);
			next[q]++;
			__atomic_store_n(&g.snd[q].received, next[q], __ATOMIC_RELEASE);
			ann_post_recv(&g, q, k);
		}
		got += (uint64_t)n;
		if (n > 0)
			last_progress = rdp_clock_s();
		for (i = 0; i < ANN_QPS; i++)
			RDP_ASSERT_MSG(__atomic_load_n(&g.snd[i].err, __ATOMIC_ACQUIRE) == 0,
				       "sender %u: %d", i, g.snd[i].err);
		RDP_ASSERT_MSG(rdp_clock_s() - last_progress < 5.0,
			       "no message for 5 s: %" PRIu64 " and %" PRIu64 " of %u arrived "
			       "(a message published without a doorbell was never looked at)",
			       next[0], next[1], ANN_MSGS);
	}
	for (i = 0; i < ANN_QPS; i++) {
		pthread_join(th[i], NULL);
		RDP_ASSERT_EQ(g.snd[i].sent, ANN_MSGS);
		skipped += sqp(g.snd[i].qp)->bells_skipped;
	}
	printf("%" PRIu64 " messages on %u QPs; %" PRIu64 " announcements, %" PRIu64
	       " bursts without a doorbell\n", got, ANN_QPS, to_scq(g.cqb)->announces, skipped);
	RDP_ASSERT_MSG(to_scq(g.cqb)->announces >= 2, "the announcement never moved");
	RDP_ASSERT_MSG(skipped > 0, "no burst was published without a doorbell");
	ann_close(&g);
	return 0;
}

/*
 * A CQ's poll budget goes round its flagged QPs. A QP whose backlog
 * outlasts every poll (its sender refills it as fast as it is reaped, as a
 * busy endpoint's peer does) must not keep the CQ from another QP's
 * messages: a poll that fills its array with one QP's receives starts the
 * next at the QP after it.
 */
RDP_TEST(shm, shm_poll_budget_goes_round_the_qps_when_one_never_drains)
{
	struct ann_rig g;
	uint32_t i, polls, other = 0;

	ann_open(&g);
	for (i = 0; i < ANN_RQ; i++)
		ann_send_one(&g, 0);
	for (i = 0; i < 4; i++)
		ann_send_one(&g, 1);
	for (polls = 0; polls < 16 && other < 4; polls++) {
		struct rdp_wc wc[4];
		int n = rdp_poll_cq(g.cqb, wc, 4), j;

		RDP_ASSERT_MSG(n >= 0, "poll_cq: %d", n);
		for (j = 0; j < n; j++) {
			uint32_t q = (uint32_t)(wc[j].wr_id >> 32);

			RDP_ASSERT_EQ(wc[j].status, RDP_WC_SUCCESS);
			ann_post_recv(&g, q, (uint32_t)wc[j].wr_id);
			if (q == 0)
				ann_send_one(&g, 0); /* QP 0 never drains */
			else
				other++;
		}
	}
	RDP_ASSERT_MSG(other == 4, "after %u polls of 4, QP 1 had %u of its 4 messages taken: "
		       "QP 0's backlog kept the CQ to itself", polls, other);
	ann_close(&g);
	return 0;
}

/* Reposts on another thread: what the receiving CQ's poller consumed. */
struct repost_thread {
	struct ann_rig *g;
	uint64_t consumed;  /* (atomic) messages the poller took, in order */
	uint64_t total;
};

static void *
repost_main(void *arg)
{
	struct repost_thread *r = arg;
	uint64_t reposted = 0;

	while (reposted < r->total) {
		uint64_t c = __atomic_load_n(&r->consumed, __ATOMIC_ACQUIRE);

		for (; reposted < c; reposted++)
			ann_post_recv(r->g, 0, (uint32_t)(reposted % ANN_RQ));
	}
	return NULL;
}

/*
 * As verbs allows, and as lib/ep does with the initial receives of a new
 * endpoint: one thread posts receives on a QP while another polls the CQ
 * that QP's receives complete to. Every message arrives once, in order,
 * and the ThreadSanitizer lane sees no race between the two.
 */
RDP_TEST(shm, shm_receives_posted_on_one_thread_while_another_polls_their_cq)
{
	struct repost_thread r = { .total = 20000 };
	struct ann_rig g;
	uint64_t got = 0;
	pthread_t th;

	ann_open(&g);
	r.g = &g;
	RDP_ASSERT_EQ(pthread_create(&th, NULL, repost_main, &r), 0);
	while (got < r.total) {
		double deadline = rdp_clock_s() + T_MS / 1e3;
		struct rdp_wc wc[4];
		uint64_t seq;
		int n;

		ann_post_send_one(&g, 0);
		/* its completion comes once the other thread reposted (RNR retries) */
		while ((n = rdp_poll_cq(g.snd[0].cq, wc, 1)) == 0 && rdp_clock_s() < deadline)
			;
		RDP_ASSERT_MSG(n == 1 && wc[0].status == RDP_WC_SUCCESS, "send %" PRIu64, got);
		while ((n = rdp_poll_cq(g.cqb, wc, 4)) == 0 && rdp_clock_s() < deadline)
			;
		RDP_ASSERT_MSG(n == 1, "message %" PRIu64 ": %d completions", got, n);
		RDP_ASSERT_EQ(wc[0].status, RDP_WC_SUCCESS);
		RDP_ASSERT_EQ(wc[0].wr_id, got % ANN_RQ);
		memcpy(&seq, (uint8_t *)g.rx->addr + (got % ANN_RQ) * 64, sizeof(seq));
		RDP_ASSERT_EQ(seq, got);
		got++;
		__atomic_store_n(&r.consumed, got, __ATOMIC_RELEASE);
	}
	pthread_join(th, NULL);
	ann_close(&g);
	return 0;
}

/* Connect to the rendezvous socket of the device that owns @p qp. */
static int
dev_socket(struct rdp_qp *qp)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct rdp_qp_addr addr;
	socklen_t len;
	int fd, i;

	RDP_ASSERT_EQ(rdp_qp_local_addr(qp, &addr), 0);
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			  sprintf(sa.sun_path + 1, "rdmaplane-shm-"));
	for (i = 0; i < RDP_GID_LEN; i++)
		len += (socklen_t)sprintf(sa.sun_path + len - offsetof(struct sockaddr_un, sun_path),
					  "%02x", addr.gid[i]);
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	RDP_ASSERT(fd >= 0);
	RDP_ASSERT_MSG(connect(fd, (struct sockaddr *)&sa, len) == 0, "connect: %s",
		       strerror(errno));
	return fd;
}

/* Send a hello carrying three memfds (queue, CQ, key table) of @p size bytes (sealed or not). */
static struct shm_reply
hello_with(struct rdp_qp *target, bool sealed, size_t size)
{
	union {
		char buf[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct shm_hello h = { .magic = SHM_HELLO_MAGIC, .version = SHM_VERSION,
			       .src_qpn = 999, .dst_qpn = target->qp_num };
	struct iovec iov = { .iov_base = &h, .iov_len = sizeof(h) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.buf,
			      .msg_controllen = sizeof(cbuf.buf) };
	struct shm_reply reply = { 0 };
	struct cmsghdr *cm;
	int fds[3], fd = dev_socket(target), i;

	for (i = 0; i < 3; i++) {
		fds[i] = memfd_create("garbage", MFD_ALLOW_SEALING);
		RDP_ASSERT(fds[i] >= 0 && ftruncate(fds[i], (off_t)size) == 0);
		if (sealed)
			RDP_ASSERT_EQ(shm_seal(fds[i]), 0);
	}
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	RDP_ASSERT_EQ(sendmsg(fd, &msg, 0), (ssize_t)sizeof(h));
	RDP_ASSERT_EQ(recv(fd, &reply, sizeof(reply), 0), (ssize_t)sizeof(reply));
	reply.msg[sizeof(reply.msg) - 1] = '\0';
	close(fd);
	for (i = 0; i < 3; i++)
		close(fds[i]);
	return reply;
}

RDP_TEST(shm, shm_malformed_or_unsealed_rendezvous_is_refused_and_the_device_lives_on)
{
	static const char junk[] = "not a hello at all, just bytes";
	struct rdp_qp_init_attr ia = { 0 };
	struct conf_opts o;
	struct conf_pair p;
	struct shm_reply reply;
	struct rdp_qp *fresh;
	struct rdp_wc wc;
	int fd;

	conf_opts_default(&o);
	conf_pair_open(&p, NULL, &o);
	fd = dev_socket(p.a.qp);
	RDP_ASSERT_EQ(send(fd, junk, sizeof(junk), 0), (ssize_t)sizeof(junk));
	RDP_ASSERT_EQ(recv(fd, &reply, sizeof(reply), 0), (ssize_t)sizeof(reply));
	RDP_ASSERT(reply.status < 0);
	close(fd);
	/* a QP that is not connected yet, offered memory we must not trust */
	ia.send_cq = ia.recv_cq = p.a.cq;
	ia.cap = (struct rdp_qp_cap){ .max_send_wr = 4, .max_recv_wr = 4 };
	fresh = rdp_qp_create(p.pd, &ia);
	RDP_ASSERT(fresh != NULL);
	reply = hello_with(fresh, false, 1 << 16);
	RDP_ASSERT_MSG(reply.status < 0 && strstr(reply.msg, "cannot map") != NULL,
		       "unsealed memory: %d %s", reply.status, reply.msg);
	reply = hello_with(fresh, true, 1 << 16);
	RDP_ASSERT_MSG(reply.status < 0 && strstr(reply.msg, "header is invalid") != NULL,
		       "zeroed headers: %d %s", reply.status, reply.msg);
	RDP_ASSERT_EQ(rdp_qp_destroy(fresh), 0);
	/* the pair still works */
	RDP_ASSERT_EQ(conf_post_recv(&p.b, 1, 0, 64), 0);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_SEND, 0, 1, 0, 8, 0, 0, 0), 0);
	RDP_ASSERT_EQ(conf_poll(&p.b, &wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc.status, RDP_WC_SUCCESS);
	conf_pair_close(&p);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Flush races and peer death                                             */
/* ---------------------------------------------------------------------- */

struct racer {
	struct stream_ep *ep;
	int result; /* (atomic) 0 done, 1 failed and drained, -1 running or timed out */
};

static void *
racer_main(void *arg)
{
	struct racer *r = arg;
	double deadline = rdp_clock_s() + 20.0;
	uint32_t i = 0;

	for (;;) {
		stream_ep_progress(r->ep);
		if (stream_ep_done(r->ep)) {
			__atomic_store_n(&r->result, 0, __ATOMIC_RELEASE);
			break;
		}
		if (r->ep->failed && stream_ep_audit_drained(r->ep)) {
			__atomic_store_n(&r->result, 1, __ATOMIC_RELEASE);
			break;
		}
		if (++i % 65536 == 0 && rdp_clock_s() > deadline)
			break;
	}
	return NULL;
}

static void
wait_result(struct racer *r)
{
	double deadline = rdp_clock_s() + 10.0;

	while (__atomic_load_n(&r->result, __ATOMIC_ACQUIRE) == -1 && rdp_clock_s() < deadline)
		usleep(1000);
}

static void
dump(const struct stream_ep *ep, const char *side)
{
	struct shm_qp *q = container_of(ep->qp, struct shm_qp, head);
	uint32_t i, posted = 0;
	uint64_t s, missing = 0, first_missing = 0;

	for (i = 0; i < ep->nb_slots; i++)
		posted += ep->rq_state[i] == 1;
	for (s = ep->first_err_seq; ep->first_err_seq != UINT64_MAX && s < ep->cr.sq_pi; s++)
		if (ep->sq_state[s] != 2 && missing++ == 0)
			first_missing = s;
	printf("%s: failed %d first_err %" PRIu64 " sq_pi %" PRIu64 " sq_ci %" PRIu64
	       " missing %" PRIu64 " (first %" PRIu64 ") rq posted-not-done %u | drv: state %d "
	       "sq_exec %" PRIu64 " sq_pi %" PRIu64 " rq_posted %" PRIu64 " reaped %" PRIu64
	       " done %" PRIu64 " final %" PRIu64 " closed %d dead %d\n", side, ep->failed,
	       ep->first_err_seq, ep->cr.sq_pi, ep->cr.sq_ci, missing, first_missing, posted,
	       q->state, q->sq_exec, q->sq_pi, q->rq_posted, q->rq_reaped, q->seg->rq_done,
	       q->rq_final, q->rq_closed, q->peer_dead);
}

static void
check_audit(const struct stream_ep *ep, const char *side)
{
	if (ep->st.audit_errors || ep->st.bad_data || (ep->failed && !stream_ep_audit_drained(ep)))
		dump(ep, side);
	RDP_ASSERT_MSG(ep->st.audit_errors == 0 && ep->st.bad_data == 0 && ep->st.enomem == 0 &&
		       ep->st.rnr == 0 && ep->st.cq_errors == 0,
		       "side %s: audit %" PRIu64 " bad_data %" PRIu64 " enomem %" PRIu64
		       " rnr %" PRIu64 " cq %" PRIu64, side, ep->st.audit_errors,
		       ep->st.bad_data, ep->st.enomem, ep->st.rnr, ep->st.cq_errors);
}

RDP_TEST(shm, shm_err_mid_stream_completes_every_wr_exactly_once_under_concurrency)
{
	int round;

	for (round = 0; round < 20; round++) {
		struct rdp_dev *dev = rdp_dev_open("shm:cqe_order=random:5");
		struct stream_ep *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
		struct racer ra = { .ep = a, .result = -1 }, rb = { .ep = b, .result = -1 };
		struct racer *rx = round % 2 ? &ra : &rb, *ry = round % 2 ? &rb : &ra;
		struct stream_cfg cfg;
		struct rdp_qp_addr aa, ba;
		pthread_t ta, tb;

		RDP_ASSERT(dev != NULL && a != NULL && b != NULL);
		stream_cfg_default(&cfg, 2000000);
		cfg.audit = true;
		stream_ep_open(a, dev, &cfg);
		stream_ep_open(b, dev, &cfg);
		RDP_ASSERT_EQ(rdp_qp_local_addr(a->qp, &aa), 0);
		RDP_ASSERT_EQ(rdp_qp_local_addr(b->qp, &ba), 0);
		stream_ep_connect(a, &ba, &cfg.cp);
		stream_ep_connect(b, &aa, &cfg.cp);
		RDP_ASSERT_EQ(pthread_create(&ta, NULL, racer_main, &ra), 0);
		RDP_ASSERT_EQ(pthread_create(&tb, NULL, racer_main, &rb), 0);
		usleep(200 + (useconds_t)(round * 397 % 3000));
		/* from a third thread, while both owners post and poll */
		set_err(rx->ep->qp);
		wait_result(rx);
		/* the survivor learns only if it sends: an application that saw
		 * its peer fail moves it to error itself */
		set_err(ry->ep->qp);
		wait_result(ry);
		pthread_join(ta, NULL);
		pthread_join(tb, NULL);
		check_audit(a, "a");
		check_audit(b, "b");
		RDP_ASSERT_MSG(ra.result >= 0 && rb.result >= 0,
			       "round %d: not drained (a %d, b %d)", round, ra.result, rb.result);
		RDP_ASSERT(a->failed || b->failed);
		/* what one side delivered the other received, no more, no less */
		RDP_ASSERT(a->st.received <= b->st.sent && b->st.received <= a->st.sent);
		stream_ep_close(a);
		stream_ep_close(b);
		free(a);
		free(b);
		RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	}
	return 0;
}

RDP_TEST(shm, shm_peer_process_killed_mid_stream_fails_survivor_fast_and_exactly_once)
{
	struct stream_cfg cfg;
	struct stream_ep *ep = calloc(1, sizeof(*ep));
	struct rdp_qp_addr mine, peer;
	struct rdp_dev *dev;
	struct rdp_event ev;
	double t_kill = 0, t_err = 0, deadline;
	int sv[2], status;
	char go = 'G';
	pid_t pid;

	RDP_ASSERT(ep != NULL);
	stream_cfg_default(&cfg, 1000000);
	RDP_ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	fflush(stdout);
	pid = fork();
	RDP_ASSERT(pid >= 0);
	if (pid == 0) {
		/* the victim streams until it is killed */
		close(sv[0]);
		cfg.count = cfg.expect = UINT64_C(1) << 40;
		dev = rdp_dev_open("shm");
		RDP_ASSERT(dev != NULL);
		stream_ep_open(ep, dev, &cfg);
		RDP_ASSERT_EQ(rdp_qp_local_addr(ep->qp, &mine), 0);
		RDP_ASSERT_EQ(write(sv[1], &mine, sizeof(mine)), (ssize_t)sizeof(mine));
		RDP_ASSERT_EQ(read(sv[1], &peer, sizeof(peer)), (ssize_t)sizeof(peer));
		stream_ep_connect(ep, &peer, &cfg.cp);
		RDP_ASSERT_EQ(write(sv[1], &go, 1), 1);
		for (;;)
			stream_ep_progress(ep);
	}
	close(sv[1]);
	cfg.audit = true;
	cfg.expect = UINT64_C(1) << 40;
	dev = rdp_dev_open("shm:cqe_order=recv_first");
	RDP_ASSERT(dev != NULL);
	stream_ep_open(ep, dev, &cfg);
	RDP_ASSERT_EQ(rdp_qp_local_addr(ep->qp, &mine), 0);
	RDP_ASSERT_EQ(read(sv[0], &peer, sizeof(peer)), (ssize_t)sizeof(peer));
	RDP_ASSERT_EQ(write(sv[0], &mine, sizeof(mine)), (ssize_t)sizeof(mine));
	stream_ep_connect(ep, &peer, &cfg.cp);
	RDP_ASSERT_EQ(read(sv[0], &go, 1), 1);
	deadline = rdp_clock_s() + 30.0;
	while (ep->st.received < 50000 && rdp_clock_s() < deadline)
		stream_ep_progress(ep);
	RDP_ASSERT_MSG(ep->st.received >= 50000, "the stream did not run");
	t_kill = rdp_clock_s();
	RDP_ASSERT_EQ(kill(pid, SIGKILL), 0);
	deadline = t_kill + 5.0;
	while (!(ep->failed && stream_ep_audit_drained(ep)) && rdp_clock_s() < deadline) {
		stream_ep_progress(ep);
		if (t_err == 0 && qp_state(ep->qp) == RDP_QPS_ERR)
			t_err = rdp_clock_s();
	}
	RDP_ASSERT_EQ(waitpid(pid, &status, 0), pid);
	RDP_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	printf("survivor: %" PRIu64 " received, %" PRIu64 " sent, %" PRIu64 " flushed; "
	       "QP in ERR %.2f ms after SIGKILL\n", ep->st.received, ep->st.sent,
	       ep->st.flushed, (t_err - t_kill) * 1e3);
	RDP_ASSERT_MSG(t_err > 0, "the survivor's QP never went to ERR");
	RDP_ASSERT_MSG(t_err - t_kill < 0.1, "peer death took %.1f ms to notice",
		       (t_err - t_kill) * 1e3);
	if (!stream_ep_audit_drained(ep))
		dump(ep, "survivor");
	RDP_ASSERT_MSG(stream_ep_audit_drained(ep), "some outstanding WR never completed");
	check_audit(ep, "survivor");
	RDP_ASSERT(ep->st.flushed > 0);
	RDP_ASSERT(wait_event(dev, RDP_EVENT_QP_FATAL, &ev, T_MS));
	RDP_ASSERT(ev.qp == ep->qp);
	stream_ep_close(ep);
	free(ep);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	close(sv[0]);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Scaling: one CQ serving many QPs                                       */
/* ---------------------------------------------------------------------- */

/* Messages per second through nqp QPs sharing one sending and one receiving CQ. */
static double
fan_in_rate(uint32_t nqp, uint64_t msgs)
{
	enum { R = 8, BURST = 4, MSG = 64 };
	struct rdp_dev *dev = rdp_dev_open("shm");
	struct rdp_pd *pd;
	struct rdp_cq *cqa, *cqb;
	struct rdp_mr *rx, *tx;
	struct rdp_qp **a = calloc(nqp, sizeof(*a)), **b = calloc(nqp, sizeof(*b));
	struct rdp_qp_conn_params conn = { .retry_cnt = 7, .timeout = 14, .min_rnr_timer = 1 };
	struct rdp_qp_init_attr ia = { 0 };
	struct rdp_wc wc[32];
	uint64_t sent = 0, got = 0;
	double t0, dt;
	uint32_t i, j;
	int err, n;

	RDP_ASSERT(dev != NULL && a != NULL && b != NULL);
	pd = rdp_pd_alloc(dev);
	cqa = rdp_cq_create(dev, nqp * (BURST + 1), -1);
	cqb = rdp_cq_create(dev, nqp * R, -1);
	rx = rdp_mr_alloc(pd, (size_t)nqp * R * MSG, -1, RDP_ACCESS_LOCAL_WRITE);
	tx = rdp_mr_alloc(pd, MSG, -1, RDP_ACCESS_LOCAL_WRITE);
	RDP_ASSERT(pd != NULL && cqa != NULL && cqb != NULL && rx != NULL && tx != NULL);
	ia.cap = (struct rdp_qp_cap){ .max_send_wr = 2 * BURST, .max_recv_wr = R,
				      .max_send_sge = 1, .max_recv_sge = 1 };
	for (i = 0; i < nqp; i++) {
		struct rdp_qp_addr aa, ba;

		ia.send_cq = ia.recv_cq = cqa;
		a[i] = rdp_qp_create(pd, &ia);
		ia.send_cq = ia.recv_cq = cqb;
		b[i] = rdp_qp_create(pd, &ia);
		RDP_ASSERT_MSG(a[i] != NULL && b[i] != NULL, "qp %u: %s", i, rdp_err_msg());
		RDP_ASSERT_EQ(rdp_qp_local_addr(a[i], &aa), 0);
		RDP_ASSERT_EQ(rdp_qp_local_addr(b[i], &ba), 0);
		RDP_ASSERT_MSG(rdp_qp_connect(a[i], &ba, &conn) == 0, "%s", rdp_err_msg());
		RDP_ASSERT_MSG(rdp_qp_connect(b[i], &aa, &conn) == 0, "%s", rdp_err_msg());
		for (j = 0; j < R; j++) {
			struct rdp_sge sge = { (uintptr_t)rx->addr + ((uint64_t)i * R + j) * MSG, MSG,
					       rx->lkey };
			struct rdp_recv_wr rw = { .wr_id = (uint64_t)i << 32 | j, .sg_list = &sge,
						  .num_sge = 1 };

			RDP_ASSERT_EQ(rdp_post_recv(b[i], &rw, 1, &err), 1);
		}
	}
	t0 = rdp_clock_s();
	while (got < msgs) {
		for (i = 0; i < nqp; i++) {
			struct rdp_sge sge = { (uintptr_t)tx->addr, MSG, tx->lkey };
			struct rdp_send_wr sw[BURST];

			for (j = 0; j < BURST; j++)
				sw[j] = (struct rdp_send_wr){ .wr_id = j, .sg_list = &sge, .num_sge = 1,
							      .opcode = RDP_WR_SEND,
							      .flags = j == BURST - 1 ?
								       RDP_SEND_SIGNALED : 0 };
			RDP_ASSERT_EQ(rdp_post_send(a[i], sw, BURST, &err), BURST);
			sent += BURST;
		}
		while ((n = rdp_poll_cq(cqb, wc, 32)) > 0) {
			for (j = 0; j < (uint32_t)n; j++) {
				uint32_t q = (uint32_t)(wc[j].wr_id >> 32), slot = (uint32_t)wc[j].wr_id;
				struct rdp_sge sge = { (uintptr_t)rx->addr + ((uint64_t)q * R + slot) * MSG,
						       MSG, rx->lkey };
				struct rdp_recv_wr rw = { .wr_id = wc[j].wr_id, .sg_list = &sge,
							  .num_sge = 1 };

				RDP_ASSERT_EQ(wc[j].status, RDP_WC_SUCCESS);
				RDP_ASSERT_EQ(rdp_post_recv(b[q], &rw, 1, &err), 1);
			}
			got += n;
		}
		RDP_ASSERT(n == 0);
		while ((n = rdp_poll_cq(cqa, wc, 32)) > 0)
			;
		RDP_ASSERT(n == 0);
	}
	dt = rdp_clock_s() - t0;
	RDP_ASSERT_EQ(got, sent);
	for (i = 0; i < nqp; i++) {
		RDP_ASSERT_EQ(rdp_qp_destroy(a[i]), 0);
		RDP_ASSERT_EQ(rdp_qp_destroy(b[i]), 0);
	}
	free(a);
	free(b);
	RDP_ASSERT_EQ(rdp_cq_destroy(cqa), 0);
	RDP_ASSERT_EQ(rdp_cq_destroy(cqb), 0);
	RDP_ASSERT_EQ(rdp_mr_free(rx), 0);
	RDP_ASSERT_EQ(rdp_mr_free(tx), 0);
	RDP_ASSERT_EQ(rdp_pd_free(pd), 0);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	return got / dt;
}

RDP_TEST(shm, shm_one_cq_serving_1024_qps_keeps_most_of_the_single_qp_rate)
{
	double best = 0;
	int round;

	/* The benchmark lane asks 0.8x on a quiet machine. Here, on shared
	 * cores, the ratio moves between 0.55x and 0.75x with cache misses over
	 * 1024 QPs' state; a poll that scanned every attached QP would lose
	 * more than 10x, and that is what this bound catches. The best of three
	 * side-by-side pairs, so that another lane's burst on these cores does
	 * not count as that regression. */
	for (round = 0; round < 3 && best < 0.35; round++) {
		double one = fan_in_rate(1, 4000000), many = fan_in_rate(1024, 4000000);

		printf("one CQ: 1 QP %.2f M msgs/s, 1024 QPs %.2f M msgs/s (%.2fx)\n", one / 1e6,
		       many / 1e6, many / one);
		best = RTE_MAX(best, many / one);
	}
	RDP_ASSERT_MSG(best >= 0.35, "1024 QPs run at %.2fx the rate of one at best", best);
	return 0;
}

RDP_TEST(shm, shm_qp_shares_only_its_peer_mrs_and_receives_only_into_them)
{
	struct rdp_dev *dev = rdp_dev_open("shm");
	struct rdp_pd *pd = rdp_pd_alloc(dev);
	struct rdp_mr *mine = rdp_mr_alloc(pd, 4096, -1, RDP_ACCESS_LOCAL_WRITE);
	struct rdp_mr *other = rdp_mr_alloc(pd, 4096, -1, RDP_ACCESS_LOCAL_WRITE);
	struct rdp_cq *cq = rdp_cq_create(dev, 64, -1);
	struct rdp_mr *peer_mrs[] = { mine };
	struct rdp_qp_init_attr ia = {
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
		.peer_mrs = peer_mrs, .nb_peer_mrs = 1,
	};
	struct rdp_sge sge = { .length = 64 };
	struct rdp_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
	struct rdp_qp_attr init = { .state = RDP_QPS_INIT };
	struct rdp_qp *qp;
	int err;

	RDP_ASSERT(dev != NULL && pd != NULL && mine != NULL && other != NULL && cq != NULL);
	ia.send_cq = ia.recv_cq = cq;
	qp = rdp_qp_create(pd, &ia);
	RDP_ASSERT_MSG(qp != NULL, "%s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_qp_modify(qp, &init, RDP_QP_ATTR_STATE), 0);
	/* another MR of the same PD is not the peer's to write into */
	sge.addr = (uintptr_t)other->addr;
	sge.lkey = other->lkey;
	RDP_ASSERT_EQ(rdp_post_recv(qp, &wr, 1, &err), 0);
	RDP_ASSERT_EQ(err, -EINVAL);
	sge.addr = (uintptr_t)mine->addr;
	sge.lkey = mine->lkey;
	RDP_ASSERT_EQ(rdp_post_recv(qp, &wr, 1, &err), 1);
	/* memory the peer cannot map is refused up front */
	peer_mrs[0] = rdp_mr_reg(pd, &err, sizeof(err), 0);
	RDP_ASSERT(peer_mrs[0] != NULL);
	RDP_ASSERT(rdp_qp_create(pd, &ia) == NULL);
	RDP_ASSERT_MSG(strstr(rdp_err_msg(), "peer_mrs[0] is not shareable memory") != NULL, "%s",
		       rdp_err_msg());
	RDP_ASSERT_EQ(rdp_mr_free(peer_mrs[0]), 0);
	RDP_ASSERT_EQ(rdp_qp_destroy(qp), 0);
	RDP_ASSERT_EQ(rdp_cq_destroy(cq), 0);
	RDP_ASSERT_EQ(rdp_mr_free(mine), 0);
	RDP_ASSERT_EQ(rdp_mr_free(other), 0);
	RDP_ASSERT_EQ(rdp_pd_free(pd), 0);
	RDP_ASSERT_EQ(rdp_dev_close(dev), 0);
	return 0;
}

/* Receives posted on a QP in error, on another thread: what their flushes left. */
struct flush_thread {
	struct ann_rig *g;
	uint64_t flushed;   /* (atomic) QP 1's flush completions the poller took */
	uint64_t posted;    /* QP 1's receives, ann_open()'s included */
	uint64_t total;
};

static void *
flush_main(void *arg)
{
	struct flush_thread *f = arg;

	while (f->posted < f->total) {
		uint64_t room = __atomic_load_n(&f->flushed, __ATOMIC_ACQUIRE) + ANN_RQ - f->posted;

		for (; room > 0 && f->posted < f->total; room--, f->posted++)
			ann_post_recv(f->g, 1, (uint32_t)(f->posted % ANN_RQ));
	}
	return NULL;
}

/*
 * One poll of the receiving CQ: QP 1's flushes are counted (the thread
 * posts as they come), QP 0's message @p seq, if any, must be the next.
 * Returns whether it came.
 */
static bool
take_flushes_and(struct ann_rig *g, struct flush_thread *f, uint64_t seq)
{
	struct rdp_wc wc[8];
	bool arrived = false;
	int n, i;

	n = rdp_poll_cq(g->cqb, wc, RTE_DIM(wc));
	for (i = 0; i < n; i++) {
		if (wc[i].qp_num == g->b[1]->qp_num) {
			RDP_ASSERT_EQ(wc[i].status, RDP_WC_WR_FLUSH_ERR);
			__atomic_store_n(&f->flushed, f->flushed + 1, __ATOMIC_RELEASE);
			continue;
		}
		RDP_ASSERT_EQ(wc[i].status, RDP_WC_SUCCESS);
		RDP_ASSERT_EQ(wc[i].wr_id, seq % ANN_RQ);
		RDP_ASSERT_MSG(!arrived, "message %" PRIu64 " twice", seq);
		arrived = true;
	}
	return arrived;
}

/*
 * A receive posted on a QP in error completes as flushed at once, so its
 * post flags the QP for the CQ's poller; lib/ep posts a new endpoint's
 * receives on the control thread, and a link that went down put its QP in
 * error. Such a post from another thread must not touch what the poller
 * alone owns: a flag lost there leaves another QP's messages unseen. Here
 * one thread posts receives on a QP in error while the poller streams a
 * ping-pong over another QP of the same CQ: every message arrives, every
 * flush is seen, and the ThreadSanitizer lane sees no race.
 */
RDP_TEST(shm, shm_receives_flushed_on_another_thread_leave_the_pollers_flags_alone)
{
	struct flush_thread f = { .posted = ANN_RQ, .total = ANN_RQ + 20000 };
	struct rdp_qp_attr attr = { .state = RDP_QPS_ERR };
	uint64_t got = 0;
	double deadline;
	struct ann_rig g;
	pthread_t th;

	ann_open(&g);
	f.g = &g;
	/* QP 1's receives posted by ann_open() flush now, its new ones on the thread */
	RDP_ASSERT_EQ(rdp_qp_modify(g.b[1], &attr, RDP_QP_ATTR_STATE), 0);
	RDP_ASSERT_EQ(pthread_create(&th, NULL, flush_main, &f), 0);
	while (got < 20000) {
		struct rdp_wc wc;
		int n;

		deadline = rdp_clock_s() + T_MS / 1e3;
		ann_post_send_one(&g, 0);
		while ((n = rdp_poll_cq(g.snd[0].cq, &wc, 1)) == 0 && rdp_clock_s() < deadline)
			;
		RDP_ASSERT_MSG(n == 1 && wc.status == RDP_WC_SUCCESS, "send %" PRIu64, got);
		while (!take_flushes_and(&g, &f, got))
			RDP_ASSERT_MSG(rdp_clock_s() < deadline, "message %" PRIu64 " never seen", got);
		ann_post_recv(&g, 0, (uint32_t)(got % ANN_RQ));
		got++;
	}
	/* the rest of the thread's flushes: each must come, however slowly it posts */
	deadline = rdp_clock_s() + T_MS / 1e3;
	while (__atomic_load_n(&f.flushed, __ATOMIC_RELAXED) < f.total && rdp_clock_s() < deadline) {
		uint64_t before = f.flushed;

		RDP_ASSERT_MSG(!take_flushes_and(&g, &f, got), "a message nobody sent");
		if (f.flushed != before)
			deadline = rdp_clock_s() + T_MS / 1e3;
	}
	RDP_ASSERT_EQ(f.flushed, f.total);
	pthread_join(th, NULL);
	printf("%" PRIu64 " messages, %" PRIu64 " receives flushed, %" PRIu64
	       " of them posted on the other thread\n", got, f.flushed, f.total - ANN_RQ);
	ann_close(&g);
	return 0;
}

/*
 * A rendezvous the peer device cannot accept, its process out of file
 * descriptors (RLIMIT_NOFILE), is refused at once, saying so. Left in the
 * listener's backlog, it was never answered: the QP connect waited until the
 * handshake's deadline ("no progress ... (the QP connecting to its peer)")
 * while the monitor spun on the listening socket.
 */
RDP_TEST(shm, shm_rendezvous_the_peer_cannot_accept_for_lack_of_descriptors_is_refused_at_once)
{
	struct rdp_qp_init_attr ia = { 0 };
	struct rdp_qp_attr rtr = { .state = RDP_QPS_RTR };
	struct rlimit old, lim;
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_qp *x, *y;
	int *filler, nfill = 0, base, fd, ret;
	double deadline;
	struct rdp_wc wc;

	conf_opts_default(&o);
	conf_pair_open(&p, "shm", &o);
	ia.send_cq = ia.recv_cq = p.a.cq;
	ia.cap = (struct rdp_qp_cap){ .max_send_wr = 4, .max_recv_wr = 4 };
	x = rdp_qp_create(p.pd, &ia);
	y = rdp_qp_create(p.pd, &ia);
	RDP_ASSERT(x != NULL && y != NULL);
	RDP_ASSERT_EQ(rdp_qp_modify(x, &(struct rdp_qp_attr){ .state = RDP_QPS_INIT },
				    RDP_QP_ATTR_STATE), 0);
	RDP_ASSERT_EQ(rdp_qp_local_addr(y, &rtr.remote), 0);
	/* every descriptor below a low limit taken but one: the connecting socket's */
	RDP_ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
	base = open("/dev/null", O_RDONLY | O_CLOEXEC);
	RDP_ASSERT(base >= 0);
	lim = (struct rlimit){ .rlim_cur = (rlim_t)base + 64, .rlim_max = old.rlim_max };
	filler = calloc(lim.rlim_cur, sizeof(*filler));
	RDP_ASSERT(filler != NULL);
	RDP_ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lim), 0);
	while ((fd = fcntl(base, F_DUPFD_CLOEXEC, 0)) >= 0)
		filler[nfill++] = fd;
	RDP_ASSERT(nfill > 0);
	close(filler[--nfill]);
	ret = rdp_qp_modify_start(x, &rtr, RDP_QP_ATTR_STATE | RDP_QP_ATTR_REMOTE, &fd);
	if (ret == -EINPROGRESS) {
		deadline = rdp_clock_s() + T_MS / 1e3;
		while ((ret = rdp_qp_modify_poll(x)) == -EINPROGRESS && rdp_clock_s() < deadline)
			usleep(1000);
		if (ret == -EINPROGRESS)
			rdp_qp_modify_abort(x);
	}
	while (nfill > 0)
		close(filler[--nfill]);
	free(filler);
	close(base);
	RDP_ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
	RDP_ASSERT_MSG(ret != -EINPROGRESS, "the rendezvous stayed unanswered for %d ms: the "
		       "peer device could not accept it", T_MS);
	RDP_ASSERT_MSG(ret == -EMFILE && strstr(rdp_err_msg(), "file descriptor") != NULL,
		       "%d: %s", ret, rdp_err_msg());
	printf("%s\n", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_qp_destroy(x), 0);
	RDP_ASSERT_EQ(rdp_qp_destroy(y), 0);
	/* the device accepts again once descriptors are free */
	RDP_ASSERT_EQ(conf_post_recv(&p.b, 1, 0, 64), 0);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_SEND, 0, 1, 0, 8, 0, 0, 0), 0);
	RDP_ASSERT_EQ(conf_poll(&p.b, &wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc.status, RDP_WC_SUCCESS);
	{
		struct conf_pair q;

		conf_pair_open_more(&q, &p, &o);
		conf_pair_close_more(&q);
	}
	conf_pair_close(&p);
	return 0;
}

/*
 * A rendezvous connection the device accepts on descriptor 0 (free when
 * the process's stdin was closed) is answered like any other: the link
 * table once took 0 for an empty slot, skipped that link's events, and the
 * QP connect waited until its handshake's deadline.
 */
RDP_TEST(shm, shm_rendezvous_accepted_on_descriptor_0_is_answered)
{
	struct rdp_qp_init_attr ia = { 0 };
	struct rdp_qp_attr rtr = { .state = RDP_QPS_RTR };
	struct rdp_dev *dev_b;
	struct rdp_pd *pd_b;
	struct rdp_cq *cq_b;
	struct rdp_qp *x, *y;
	struct shm_dev *sd_b;
	struct conf_opts o;
	struct conf_pair p;
	int saved, fd, ret;
	double deadline;

	conf_opts_default(&o);
	conf_pair_open(&p, "shm", &o);
	dev_b = rdp_dev_open("shm");
	RDP_ASSERT(dev_b != NULL);
	pd_b = rdp_pd_alloc(dev_b);
	cq_b = rdp_cq_create(dev_b, 64, -1);
	RDP_ASSERT(pd_b != NULL && cq_b != NULL);
	ia.cap = (struct rdp_qp_cap){ .max_send_wr = 4, .max_recv_wr = 4 };
	ia.send_cq = ia.recv_cq = p.a.cq;
	x = rdp_qp_create(p.pd, &ia);
	ia.send_cq = ia.recv_cq = cq_b;
	y = rdp_qp_create(pd_b, &ia);
	RDP_ASSERT(x != NULL && y != NULL);
	RDP_ASSERT_EQ(rdp_qp_modify(x, &(struct rdp_qp_attr){ .state = RDP_QPS_INIT },
				    RDP_QP_ATTR_STATE), 0);
	RDP_ASSERT_EQ(rdp_qp_local_addr(y, &rtr.remote), 0);
	/* y's monitor accepts only once descriptor 0 is the lowest free one */
	sd_b = container_of(y, struct shm_qp, head)->sd;
	saved = fcntl(0, F_DUPFD_CLOEXEC, 3);
	RDP_ASSERT(saved >= 0);
	pthread_mutex_lock(&sd_b->lock);
	ret = rdp_qp_modify_start(x, &rtr, RDP_QP_ATTR_STATE | RDP_QP_ATTR_REMOTE, &fd);
	close(0);
	pthread_mutex_unlock(&sd_b->lock);
	RDP_ASSERT_MSG(ret == -EINPROGRESS, "%d: %s", ret, rdp_err_msg());
	deadline = rdp_clock_s() + T_MS / 1e3;
	while ((ret = rdp_qp_modify_poll(x)) == -EINPROGRESS && rdp_clock_s() < deadline)
		usleep(1000);
	if (ret == -EINPROGRESS)
		rdp_qp_modify_abort(x);
	RDP_ASSERT_EQ(rdp_qp_destroy(x), 0);
	RDP_ASSERT_EQ(rdp_qp_destroy(y), 0);
	RDP_ASSERT_EQ(rdp_cq_destroy(cq_b), 0);
	RDP_ASSERT_EQ(rdp_pd_free(pd_b), 0);
	RDP_ASSERT_EQ(rdp_dev_close(dev_b), 0);
	RDP_ASSERT_EQ(dup2(saved, 0), 0);
	close(saved);
	RDP_ASSERT_MSG(ret != -EINPROGRESS, "the rendezvous accepted on descriptor 0 stayed "
		       "unanswered for %d ms", T_MS);
	RDP_ASSERT_MSG(ret == 0, "%d: %s", ret, rdp_err_msg());
	conf_pair_close(&p);
	return 0;
}

/* MRs with remote access made and freed on another thread until told to stop. */
struct mr_churn {
	struct rdp_pd *pd;
	bool stop;        /* (atomic) */
	unsigned int made; /* (atomic) */
};

static void *
mr_churn_main(void *arg)
{
	struct mr_churn *c = arg;

	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
		struct rdp_mr *mr = rdp_mr_alloc(c->pd, 4096, -1, RDP_ACCESS_LOCAL_WRITE |
						 RDP_ACCESS_REMOTE_WRITE | RDP_ACCESS_REMOTE_READ);

		if (mr == NULL)
			continue;
		rdp_mr_free(mr);
		__atomic_fetch_add(&c->made, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/*
 * A rendezvous passes the peer the descriptors of the MRs it names (the
 * receive and remote-access MRs of the QP's PD). While another thread
 * frees such MRs, every rendezvous still carries descriptors that are
 * open, and the ones it named: each connect succeeds. (The descriptors
 * were once collected under the device lock and sent after it: an MR
 * freed between closed one, and the send failed with EBADF, or a
 * descriptor reused meanwhile went to the peer as that MR.)
 */
RDP_TEST(shm, shm_rendezvous_while_another_thread_frees_mrs_sends_open_descriptors)
{
	struct rdp_qp_init_attr ia = { 0 };
	struct mr_churn churn = { 0 };
	struct conf_opts o;
	struct conf_pair p;
	pthread_t th;
	unsigned int i, n = (unsigned int)rdp_test_env_u64("RDP_MR_CHURN_CONNECTS", 400);

	conf_opts_default(&o);
	conf_pair_open(&p, "shm", &o);
	churn.pd = p.pd;
	RDP_ASSERT_EQ(pthread_create(&th, NULL, mr_churn_main, &churn), 0);
	ia.send_cq = ia.recv_cq = p.a.cq;
	ia.cap = (struct rdp_qp_cap){ .max_send_wr = 4, .max_recv_wr = 4 };
	for (i = 0; i < n; i++) {
		struct rdp_qp_attr rtr = { .state = RDP_QPS_RTR };
		struct rdp_qp *x = rdp_qp_create(p.pd, &ia), *y = rdp_qp_create(p.pd, &ia);
		int ret;

		RDP_ASSERT(x != NULL && y != NULL);
		RDP_ASSERT_EQ(rdp_qp_modify(x, &(struct rdp_qp_attr){ .state = RDP_QPS_INIT },
					    RDP_QP_ATTR_STATE), 0);
		RDP_ASSERT_EQ(rdp_qp_local_addr(y, &rtr.remote), 0);
		ret = rdp_qp_modify(x, &rtr, RDP_QP_ATTR_STATE | RDP_QP_ATTR_REMOTE);
		RDP_ASSERT_MSG(ret == 0, "connect %u (with %u MRs made and freed meanwhile): %s",
			       i, __atomic_load_n(&churn.made, __ATOMIC_RELAXED), rdp_err_msg());
		RDP_ASSERT_EQ(rdp_qp_destroy(x), 0);
		RDP_ASSERT_EQ(rdp_qp_destroy(y), 0);
	}
	__atomic_store_n(&churn.stop, true, __ATOMIC_RELEASE);
	RDP_ASSERT_EQ(pthread_join(th, NULL), 0);
	printf("%u rendezvous while %u MRs were made and freed\n", n, churn.made);
	RDP_ASSERT(churn.made > 0);
	conf_pair_close(&p);
	return 0;
}

/* Mappings of peers' memfds the device holds, and the users of them all. */
static void
count_maps(struct rdp_dev *dev, unsigned int *maps, unsigned int *refs)
{
	struct shm_dev *sd = to_sdev(dev);
	const struct shm_map *m;
	uint32_t b;

	*maps = *refs = 0;

	pthread_mutex_lock(&sd->map_lock);
	for (b = 0; b < SHM_MAP_BUCKETS; b++) {
		TAILQ_FOREACH(m, &sd->maps[b], next) {
			(*maps)++;
			*refs += m->refs;
		}
	}
	pthread_mutex_unlock(&sd->map_lock);
}

/*
 * Every QP to a peer device maps that device's shared memory: its key
 * table, its CQ and SRQ segments, its MRs. Mapped once per QP, 4096 QPs
 * to one poller faulted the same pages in 4096 times and ran at half the
 * rate. They share one mapping of each file, which goes with the last QP
 * that uses it.
 */
RDP_TEST(shm, shm_qps_to_one_peer_device_share_its_mappings)
{
	struct conf_opts o;
	struct conf_pair p, q;
	unsigned int maps0, refs0, maps1, refs1, maps2, refs2;
	struct rdp_wc wc;

	conf_opts_default(&o);
	conf_pair_open(&p, NULL, &o);
	count_maps(p.dev, &maps0, &refs0);
	conf_pair_open_more(&q, &p, &o);
	count_maps(p.dev, &maps1, &refs1);
	RDP_ASSERT_MSG(to_sqp(q.a.qp)->peer->keys == to_sqp(p.a.qp)->peer->keys,
		       "two QPs to one device map its key table twice");
	RDP_ASSERT_MSG(refs1 > refs0 && maps1 - maps0 < refs1 - refs0,
		       "a second pair took %u mappings for %u uses", maps1 - maps0, refs1 - refs0);
	printf("one pair: %u mappings for %u uses; two: %u for %u\n", maps0, refs0, maps1, refs1);
	/* the second pair goes; the first still reaches what they shared */
	conf_pair_close_more(&q);
	count_maps(p.dev, &maps2, &refs2);
	RDP_ASSERT_EQ(maps2, maps0);
	RDP_ASSERT_EQ(refs2, refs0);
	conf_tx_fill(&p.a, 0, 64, 9);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_RDMA_WRITE, RDP_SEND_SIGNALED, 1, 0, 64, 0,
				     p.b.rx_addr, p.b.rx_rkey), 0);
	RDP_ASSERT_EQ(conf_poll(&p.a, &wc, 1, T_MS), 1);
	RDP_ASSERT_MSG(wc.status == RDP_WC_SUCCESS, "WRITE after the other pair went: %s",
		       rdp_wc_status_str(wc.status));
	conf_pair_close(&p);
	return 0;
}
