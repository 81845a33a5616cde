/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The driver conformance suite: the verbs semantics every driver keeps
 * (rdp_dev.h), checked on the driver given with `--driver` (shm by default;
 * verbs on Soft-RoCE in the VM lane: `rdp-test --suite conf --driver verbs:...`).
 *
 * Each test opens a fresh connected pair (conf_pair.h) and checks one
 * property; with RDP_TEST_CONF_PEER=process the pair's side b is another
 * process. Completions may arrive asynchronously (real NICs): tests poll
 * with deadlines and never assume a completion is there at once.
 *
 * Notes for drivers over real hardware:
 * - SQ slots are outstanding until a *polled* signaled completion covers
 *   them (mlx5). rxe frees them earlier and grants more than asked, so a
 *   verbs driver keeps this accounting itself against the asked max_send_wr.
 * - CQ overrun: rxe drops silently and raises CQ_ERR; the overrun test
 *   accepts a poll error or an RDP_EVENT_CQ_ERR event.
 */
#include <errno.h>
#include <unistd.h>

#include "conf_pair.h"
#include "rdp_test.h"

#define T_MS 5000 /* deadline for completions that must come */
#define Q_MS 30   /* window in which nothing may come */

/* The completion for @p wr_id among @p n, asserting it appears exactly once. */
static const struct rdp_wc *
find_once(const struct rdp_wc *wc, int n, uint64_t wr_id)
{
	const struct rdp_wc *found = NULL;
	int i;

	for (i = 0; i < n; i++) {
		if (wc[i].wr_id != wr_id)
			continue;
		RDP_ASSERT_MSG(found == NULL, "wr_id %" PRIu64 " completed twice", wr_id);
		found = &wc[i];
	}
	RDP_ASSERT_MSG(found != NULL, "wr_id %" PRIu64 " never completed", wr_id);
	return found;
}

static void
expect(const struct rdp_wc *wc, int n, uint64_t wr_id, unsigned int status)
{
	const struct rdp_wc *w = find_once(wc, n, wr_id);

	RDP_ASSERT_MSG(w->status == status, "wr_id %" PRIu64 ": status %s, want %s", wr_id,
		       rdp_wc_status_str(w->status), rdp_wc_status_str(status));
}

/* Do [xoff, +len) of x's tx and [yoff, +len) of y's rx hold the same bytes? */
static bool
same(struct conf_side *x, uint32_t xoff, struct conf_side *y, uint32_t yoff, uint32_t len)
{
	uint8_t bx[4096], by[4096];

	conf_read(x, true, xoff, bx, len);
	conf_read(y, false, yoff, by, len);
	return memcmp(bx, by, len) == 0;
}

static int
post_write0(struct conf_side *s, uint64_t wr_id, uint8_t flags)
{
	return conf_post_send(s, RDP_WR_RDMA_WRITE, flags, wr_id, 0, 0, 0, 0, 0);
}

RDP_TEST(conf, conf_sq_full_returns_enomem_until_signaled_completion_is_polled)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc;
	int i;

	conf_opts_default(&o);
	o.sq = 4;
	conf_pair_open(&p, NULL, &o);
	for (i = 1; i <= 3; i++)
		RDP_ASSERT_EQ(post_write0(&p.a, i, 0), 0);
	RDP_ASSERT_EQ(post_write0(&p.a, 4, RDP_SEND_SIGNALED), 0);
	RDP_ASSERT_EQ(post_write0(&p.a, 5, 0), -ENOMEM);
	/* executed is not enough: the slot comes back only when polled */
	usleep(50 * 1000);
	RDP_ASSERT_EQ(post_write0(&p.a, 5, 0), -ENOMEM);
	RDP_ASSERT_EQ(conf_poll(&p.a, &wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc.wr_id, 4);
	RDP_ASSERT_EQ(wc.status, RDP_WC_SUCCESS);
	RDP_ASSERT_EQ(wc.opcode, RDP_WC_RDMA_WRITE);
	for (i = 5; i <= 7; i++)
		RDP_ASSERT_EQ(post_write0(&p.a, i, 0), 0);
	RDP_ASSERT_EQ(post_write0(&p.a, 8, RDP_SEND_SIGNALED), 0);
	RDP_ASSERT_EQ(post_write0(&p.a, 9, 0), -ENOMEM);
	RDP_ASSERT_EQ(conf_poll(&p.a, &wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc.wr_id, 8);
	RDP_ASSERT_EQ(post_write0(&p.a, 9, RDP_SEND_SIGNALED), 0);
	RDP_ASSERT_EQ(conf_poll(&p.a, &wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc.wr_id, 9);
	conf_pair_close(&p);
	return 0;
}

RDP_TEST(conf, conf_unsignaled_success_makes_no_completion)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc[4];

	conf_opts_default(&o);
	conf_pair_open(&p, NULL, &o);
	RDP_ASSERT_EQ(conf_post_recv(&p.b, 100, 0, 64), 0);
	RDP_ASSERT_EQ(conf_post_recv(&p.b, 101, 64, 64), 0);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_SEND, 0, 1, 0, 8, 0, 0, 0), 0);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_SEND, RDP_SEND_SIGNALED, 2, 8, 8, 0, 0, 0), 0);
	RDP_ASSERT_EQ(conf_poll(&p.a, wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc[0].wr_id, 2);
	RDP_ASSERT_EQ(wc[0].status, RDP_WC_SUCCESS);
	RDP_ASSERT_EQ(wc[0].opcode, RDP_WC_SEND);
	conf_quiet(&p.a, Q_MS);
	RDP_ASSERT_EQ(conf_poll(&p.b, wc, 2, T_MS), 2);
	RDP_ASSERT_EQ(wc[0].wr_id, 100);
	RDP_ASSERT_EQ(wc[1].wr_id, 101);
	RDP_ASSERT_EQ(wc[0].status, RDP_WC_SUCCESS);
	RDP_ASSERT_EQ(wc[1].status, RDP_WC_SUCCESS);
	conf_pair_close(&p);
	return 0;
}

RDP_TEST(conf, conf_send_with_imm_carries_immediate_and_payload)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc;

	conf_opts_default(&o);
	conf_pair_open(&p, NULL, &o);
	conf_tx_fill(&p.a, 0, 48, 3);
	RDP_ASSERT_EQ(conf_post_recv(&p.b, 7, 256, 64), 0);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_SEND_WITH_IMM, 0, 1, 0, 48, 0xdeadbeef, 0, 0),
		      0);
	RDP_ASSERT_EQ(conf_poll(&p.b, &wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc.wr_id, 7);
	RDP_ASSERT_EQ(wc.status, RDP_WC_SUCCESS);
	RDP_ASSERT_EQ(wc.opcode, RDP_WC_RECV);
	RDP_ASSERT(wc.wc_flags & RDP_WC_WITH_IMM);
	RDP_ASSERT_EQ(wc.imm, 0xdeadbeef);
	RDP_ASSERT_EQ(wc.byte_len, 48);
	RDP_ASSERT_EQ(wc.qp_num, p.b.qp_num);
	RDP_ASSERT(same(&p.a, 0, &p.b, 256, 48));
	/* a plain SEND carries no immediate */
	RDP_ASSERT_EQ(conf_post_recv(&p.b, 8, 0, 64), 0);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_SEND, 0, 2, 0, 4, 0, 0, 0), 0);
	RDP_ASSERT_EQ(conf_poll(&p.b, &wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc.wr_id, 8);
	RDP_ASSERT(!(wc.wc_flags & RDP_WC_WITH_IMM));
	conf_pair_close(&p);
	return 0;
}

RDP_TEST(conf, conf_zero_length_write_consumes_no_receive_and_makes_no_remote_completion)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc;

	conf_opts_default(&o);
	conf_pair_open(&p, NULL, &o);
	/* no receive posted at all: still no RNR */
	RDP_ASSERT_EQ(post_write0(&p.a, 1, RDP_SEND_SIGNALED), 0);
	RDP_ASSERT_EQ(conf_poll(&p.a, &wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc.wr_id, 1);
	RDP_ASSERT_EQ(wc.status, RDP_WC_SUCCESS);
	RDP_ASSERT_EQ(wc.opcode, RDP_WC_RDMA_WRITE);
	conf_quiet(&p.b, Q_MS);
	RDP_ASSERT_EQ(conf_qp_state(&p.a), RDP_QPS_RTS);
	/* with a receive posted, it stays posted for the next SEND */
	RDP_ASSERT_EQ(conf_post_recv(&p.b, 50, 0, 64), 0);
	RDP_ASSERT_EQ(post_write0(&p.a, 2, RDP_SEND_SIGNALED), 0);
	RDP_ASSERT_EQ(conf_poll(&p.a, &wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc.wr_id, 2);
	conf_quiet(&p.b, Q_MS);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_SEND_WITH_IMM, 0, 3, 0, 0, 9, 0, 0), 0);
	RDP_ASSERT_EQ(conf_poll(&p.b, &wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc.wr_id, 50);
	RDP_ASSERT_EQ(wc.imm, 9);
	RDP_ASSERT_EQ(wc.byte_len, 0);
	conf_pair_close(&p);
	return 0;
}

RDP_TEST(conf, conf_rdma_write_places_data_without_remote_completion)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc;
	uint64_t raddr;

	conf_opts_default(&o);
	conf_pair_open(&p, NULL, &o);
	conf_tx_fill(&p.a, 0, 32, 11);
	raddr = p.b.rx_addr + 100;
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_RDMA_WRITE, RDP_SEND_SIGNALED, 1, 0, 32, 0,
				     raddr, p.b.rx_rkey), 0);
	RDP_ASSERT_EQ(conf_poll(&p.a, &wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc.status, RDP_WC_SUCCESS);
	RDP_ASSERT(same(&p.a, 0, &p.b, 100, 32));
	conf_quiet(&p.b, Q_MS);
	conf_pair_close(&p);
	return 0;
}

/* A one-sided WR that its responder refuses: the error, the QP to error, the receive flushed. */
static int
remote_refusal(uint8_t opcode, bool tx_key, uint32_t key_xor, uint32_t off, uint32_t len)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc[2];
	uint64_t addr;
	uint32_t rkey;

	conf_opts_default(&o);
	conf_pair_open(&p, NULL, &o);
	addr = (tx_key ? p.b.tx_addr : p.b.rx_addr) + off;
	rkey = (tx_key ? p.b.tx_rkey : p.b.rx_rkey) ^ key_xor;
	RDP_ASSERT_EQ(conf_post_recv(&p.a, 70, 0, 64), 0);
	RDP_ASSERT_EQ(conf_post_send(&p.a, opcode, 0, 1, 0, len, 0, addr, rkey), 0);
	RDP_ASSERT_EQ(conf_poll(&p.a, wc, 2, T_MS), 2);
	expect(wc, 2, 1, RDP_WC_REM_ACCESS_ERR);
	expect(wc, 2, 70, RDP_WC_WR_FLUSH_ERR);
	RDP_ASSERT_EQ(conf_qp_state(&p.a), RDP_QPS_ERR);
	conf_pair_close(&p);
	return 0;
}

RDP_TEST(conf, conf_rdma_write_with_bad_rkey_is_remote_access_error)
{
	return remote_refusal(RDP_WR_RDMA_WRITE, false, 0x5500u, 0, 16);
}

/* RDMA READ: the data, where it lands, and what the responder refuses. */
RDP_TEST(conf, conf_rdma_read_fetches_what_an_earlier_write_placed_with_no_remote_completion)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc[2];

	conf_opts_default(&o);
	conf_pair_open(&p, NULL, &o);
	conf_tx_fill(&p.a, 0, 48, 21);
	/* the WRITE unsignaled: the READ behind it on the same QP sees its data */
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_RDMA_WRITE, 0, 1, 0, 48, 0,
				     p.b.rx_addr + 300, p.b.rx_rkey), 0);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_RDMA_READ, RDP_SEND_SIGNALED, 2, 1024, 48, 0,
				     p.b.rx_addr + 300, p.b.rx_rkey), 0);
	RDP_ASSERT_EQ(conf_poll(&p.a, wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc[0].wr_id, 2);
	RDP_ASSERT_EQ(wc[0].status, RDP_WC_SUCCESS);
	RDP_ASSERT_EQ(wc[0].opcode, RDP_WC_RDMA_READ); /* byte_len: receives only (rxe: 0) */
	RDP_ASSERT(same(&p.a, 0, &p.b, 300, 48));
	{
		uint8_t wrote[48], read[48];

		conf_read(&p.a, true, 0, wrote, sizeof(wrote));
		conf_read(&p.a, true, 1024, read, sizeof(read));
		RDP_ASSERT(memcmp(wrote, read, sizeof(read)) == 0);
	}
	conf_quiet(&p.b, Q_MS);
	conf_pair_close(&p);
	return 0;
}

/*
 * Transfers of tens of KiB at odd offsets and lengths (shm copies them with
 * its vector loop, docs/drivers.md): every byte at its place, none around it.
 */
RDP_TEST(conf, conf_rdma_large_write_and_read_at_odd_offsets_move_every_byte_and_no_other)
{
	struct conf_opts o;
	struct conf_pair p;

	conf_opts_default(&o);
	conf_pair_open(&p, NULL, &o);
	conf_rdma_round_trip(&p, 7, 1005, 40013, 3, 61);
	conf_rdma_round_trip(&p, 0, 0, CONF_BUF_SIZE, 0, 62);
	conf_rdma_round_trip(&p, 33, 31, 32768 + 63, 65, 63);
	conf_quiet(&p.b, Q_MS);
	conf_pair_close(&p);
	return 0;
}

/* Memory the application allocated itself, at any alignment, registered with rdp_mr_reg(). */
RDP_TEST(conf, conf_rdma_write_and_read_reach_misaligned_application_memory)
{
	uint8_t sent[200], landed[200], back[200];
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc[2];

	conf_opts_default(&o);
	conf_pair_open(&p, NULL, &o);
	conf_tx_fill(&p.a, 0, sizeof(sent), 33);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_RDMA_WRITE, 0, 1, 0, sizeof(sent), 0,
				     p.b.app_addr + 5, p.b.app_rkey), 0);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_RDMA_READ, RDP_SEND_SIGNALED, 2, 4096 + 1,
				     sizeof(back), 0, p.b.app_addr + 5, p.b.app_rkey), 0);
	RDP_ASSERT_EQ(conf_poll(&p.a, wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc[0].wr_id, 2);
	RDP_ASSERT_EQ(wc[0].status, RDP_WC_SUCCESS);
	conf_read(&p.a, CONF_TX, 0, sent, sizeof(sent));
	conf_read(&p.b, CONF_APP, 5, landed, sizeof(landed));
	conf_read(&p.a, CONF_TX, 4096 + 1, back, sizeof(back));
	RDP_ASSERT(memcmp(sent, landed, sizeof(sent)) == 0);
	RDP_ASSERT(memcmp(sent, back, sizeof(sent)) == 0);
	conf_quiet(&p.b, Q_MS);
	conf_pair_close(&p);
	return 0;
}

RDP_TEST(conf, conf_rdma_into_deregistered_application_memory_is_remote_access_error)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc[2];
	uint8_t before[64], after[64];

	conf_opts_default(&o);
	conf_pair_open(&p, NULL, &o);
	conf_tx_fill(&p.a, 0, sizeof(before), 44);
	conf_read(&p.b, CONF_APP, 0, before, sizeof(before));
	RDP_ASSERT_EQ(conf_app_dereg(&p.b), 0);
	RDP_ASSERT_EQ(conf_post_recv(&p.a, 70, 0, 64), 0);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_RDMA_WRITE, 0, 1, 0, sizeof(before), 0,
				     p.b.app_addr, p.b.app_rkey), 0);
	RDP_ASSERT_EQ(conf_poll(&p.a, wc, 2, T_MS), 2);
	expect(wc, 2, 1, RDP_WC_REM_ACCESS_ERR);
	expect(wc, 2, 70, RDP_WC_WR_FLUSH_ERR);
	conf_read(&p.b, CONF_APP, 0, after, sizeof(after));
	RDP_ASSERT(memcmp(before, after, sizeof(after)) == 0);
	conf_pair_close(&p);
	return 0;
}


RDP_TEST(conf, conf_rdma_read_with_bad_rkey_is_remote_access_error)
{
	return remote_refusal(RDP_WR_RDMA_READ, false, 0x5500u, 0, 16);
}

RDP_TEST(conf, conf_rdma_read_past_the_end_of_its_region_is_remote_access_error)
{
	return remote_refusal(RDP_WR_RDMA_READ, false, 0, CONF_BUF_SIZE - 8, 16);
}

RDP_TEST(conf, conf_rdma_read_of_memory_without_remote_read_is_remote_access_error)
{
	return remote_refusal(RDP_WR_RDMA_READ, true, 0, 0, 16);
}

RDP_TEST(conf, conf_rdma_write_into_memory_without_remote_write_is_remote_access_error)
{
	return remote_refusal(RDP_WR_RDMA_WRITE, true, 0, 0, 16);
}

RDP_TEST(conf, conf_rdma_write_past_the_end_of_its_region_is_remote_access_error)
{
	return remote_refusal(RDP_WR_RDMA_WRITE, false, 0, CONF_BUF_SIZE - 8, 16);
}

RDP_TEST(conf, conf_rdma_read_inline_is_refused_at_post)
{
	struct conf_opts o;
	struct conf_pair p;

	conf_opts_default(&o);
	conf_pair_open(&p, NULL, &o);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_RDMA_READ, RDP_SEND_SIGNALED | RDP_SEND_INLINE,
				     1, 0, 16, 0, p.b.rx_addr, p.b.rx_rkey), -EINVAL);
	RDP_ASSERT_EQ(conf_qp_state(&p.a), RDP_QPS_RTS);
	conf_quiet(&p.a, Q_MS);
	conf_pair_close(&p);
	return 0;
}

RDP_TEST(conf, conf_rnr_with_zero_retry_fails_sender_and_flushes_all_outstanding)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc[16];
	int i, n;

	conf_opts_default(&o);
	conf_pair_open(&p, NULL, &o);
	for (i = 0; i < 3; i++)
		RDP_ASSERT_EQ(conf_post_recv(&p.a, 100 + i, i * 64, 64), 0);
	/* the peer posted nothing: the first SEND is RNR; it is unsignaled and
	 * still completes, with the error */
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_SEND, 0, 1, 0, 8, 0, 0, 0), 0);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_SEND, 0, 2, 0, 8, 0, 0, 0), 0);
	RDP_ASSERT_EQ(post_write0(&p.a, 3, 0), 0);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_SEND, RDP_SEND_SIGNALED, 4, 0, 8, 0, 0, 0), 0);
	n = conf_poll(&p.a, wc, 7, T_MS);
	RDP_ASSERT_EQ(n, 7);
	expect(wc, n, 1, RDP_WC_RNR_RETRY_EXC_ERR);
	for (i = 2; i <= 4; i++)
		expect(wc, n, i, RDP_WC_WR_FLUSH_ERR);
	for (i = 0; i < 3; i++)
		expect(wc, n, 100 + i, RDP_WC_WR_FLUSH_ERR);
	/* within each work queue, in order */
	for (i = 1; i < n; i++) {
		int j;

		for (j = 0; j < i; j++)
			if ((wc[i].wr_id >= 100) == (wc[j].wr_id >= 100))
				RDP_ASSERT_MSG(wc[j].wr_id < wc[i].wr_id,
					       "wr %" PRIu64 " completed before wr %" PRIu64,
					       wc[j].wr_id, wc[i].wr_id);
	}
	RDP_ASSERT_EQ(conf_qp_state(&p.a), RDP_QPS_ERR);
	conf_quiet(&p.a, Q_MS);
	conf_quiet(&p.b, Q_MS);
	conf_pair_close(&p);
	return 0;
}

RDP_TEST(conf, conf_modify_to_err_flushes_each_outstanding_wr_once)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc[16];
	int n;

	conf_opts_default(&o);
	o.rnr_retry = 7; /* sends to an empty RQ wait forever */
	conf_pair_open(&p, NULL, &o);
	/* one exchange that completes: it must not be flushed later */
	RDP_ASSERT_EQ(conf_post_recv(&p.b, 500, 0, 64), 0);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_SEND, RDP_SEND_SIGNALED, 50, 0, 8, 0, 0, 0), 0);
	RDP_ASSERT_EQ(conf_poll(&p.a, wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc[0].wr_id, 50);
	RDP_ASSERT_EQ(conf_poll(&p.b, wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc[0].wr_id, 500);

	RDP_ASSERT_EQ(conf_post_recv(&p.a, 200, 0, 64), 0);
	RDP_ASSERT_EQ(conf_post_recv(&p.a, 201, 64, 64), 0);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_SEND, RDP_SEND_SIGNALED, 1, 0, 8, 0, 0, 0), 0);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_SEND, 0, 2, 0, 8, 0, 0, 0), 0);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_SEND, 0, 3, 0, 8, 0, 0, 0), 0);
	conf_quiet(&p.a, Q_MS);
	RDP_ASSERT_EQ(conf_qp_state(&p.a), RDP_QPS_RTS);

	conf_qp_err(&p.a);
	n = conf_poll(&p.a, wc, 5, T_MS);
	RDP_ASSERT_EQ(n, 5);
	expect(wc, n, 1, RDP_WC_WR_FLUSH_ERR);
	expect(wc, n, 2, RDP_WC_WR_FLUSH_ERR);
	expect(wc, n, 3, RDP_WC_WR_FLUSH_ERR);
	expect(wc, n, 200, RDP_WC_WR_FLUSH_ERR);
	expect(wc, n, 201, RDP_WC_WR_FLUSH_ERR);
	conf_quiet(&p.a, Q_MS);
	RDP_ASSERT_EQ(conf_qp_state(&p.a), RDP_QPS_ERR);
	conf_pair_close(&p);
	return 0;
}

RDP_TEST(conf, conf_cq_resize_keeps_pending_completions)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc[8];
	int i;

	conf_opts_default(&o);
	o.cqe = 8;
	conf_pair_open(&p, NULL, &o);
	for (i = 1; i <= 3; i++)
		RDP_ASSERT_EQ(post_write0(&p.a, i, RDP_SEND_SIGNALED), 0);
	usleep(50 * 1000); /* let a real device write them */
	RDP_ASSERT_MSG(conf_cq_resize(&p.a, 1) == -EINVAL,
		       "shrinking below the pending completions must fail");
	RDP_ASSERT_MSG(conf_cq_resize(&p.a, 32) == 0, "resize: %s", rdp_err_msg());
	RDP_ASSERT_EQ(conf_poll(&p.a, wc, 3, T_MS), 3);
	for (i = 0; i < 3; i++) {
		RDP_ASSERT_EQ(wc[i].wr_id, i + 1);
		RDP_ASSERT_EQ(wc[i].status, RDP_WC_SUCCESS);
	}
	conf_quiet(&p.a, Q_MS);
	/* and the resized CQ keeps working */
	RDP_ASSERT_EQ(post_write0(&p.a, 4, RDP_SEND_SIGNALED), 0);
	RDP_ASSERT_EQ(conf_poll(&p.a, wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc[0].wr_id, 4);
	conf_pair_close(&p);
	return 0;
}

RDP_TEST(conf, conf_cq_overrun_is_reported_by_poll_error_or_event)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc[32];
	struct rdp_event ev;
	bool poll_err = false, event = false;
	double deadline;
	int i;

	conf_opts_default(&o);
	o.cqe = 4;
	o.sq = 32;
	conf_pair_open(&p, NULL, &o);
	/* more signaled completions than the CQ holds (a device may round 4 up
	 * to 7), none polled */
	for (i = 1; i <= 24; i++)
		RDP_ASSERT_EQ(post_write0(&p.a, i, RDP_SEND_SIGNALED), 0);
	deadline = rdp_clock_s() + 2.0;
	while (!(poll_err || event) && rdp_clock_s() < deadline) {
		if (rdp_dev_event_get(p.dev, &ev) == 0 && ev.type == RDP_EVENT_CQ_ERR) {
			RDP_ASSERT(ev.cq == p.a.cq);
			event = true;
		}
		usleep(1000);
		if (rdp_poll_cq(p.a.cq, wc, 32) < 0)
			poll_err = true;
	}
	RDP_ASSERT_MSG(poll_err || event, "24 completions on a 4-entry CQ and nothing said so");
	printf("overrun reported by:%s%s\n", poll_err ? " poll error" : "",
	       event ? " CQ_ERR event" : "");
	conf_pair_close(&p);
	return 0;
}

RDP_TEST(conf, conf_scatter_gather_send_fills_receive_sges_in_order)
{
	static const uint32_t ss[3][2] = { { 0, 10 }, { 100, 20 }, { 200, 30 } };
	static const uint32_t rs[2][2] = { { 0, 25 }, { 1000, 64 } };
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc;
	uint8_t tx[300], rx[1100], want[60];

	conf_opts_default(&o);
	o.send_sge = 3;
	o.recv_sge = 2;
	conf_pair_open(&p, NULL, &o);
	conf_tx_fill(&p.a, 0, 300, 1);
	conf_read(&p.a, true, 0, tx, sizeof(tx));
	memcpy(want, tx + 0, 10);
	memcpy(want + 10, tx + 100, 20);
	memcpy(want + 30, tx + 200, 30);
	RDP_ASSERT_EQ(conf_post_recv_sg(&p.b, 9, rs, 2), 0);
	RDP_ASSERT_EQ(conf_post_send_sg(&p.a, 1, ss, 3), 0);
	RDP_ASSERT_EQ(conf_poll(&p.b, &wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc.status, RDP_WC_SUCCESS);
	RDP_ASSERT_EQ(wc.byte_len, 60);
	conf_read(&p.b, false, 0, rx, sizeof(rx));
	RDP_ASSERT(memcmp(rx, want, 25) == 0);
	RDP_ASSERT(memcmp(rx + 1000, want + 25, 35) == 0);
	RDP_ASSERT_EQ(conf_poll(&p.a, &wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc.status, RDP_WC_SUCCESS);
	conf_pair_close(&p);
	return 0;
}

RDP_TEST(conf, conf_message_longer_than_receive_buffer_is_loc_len_err)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc[4];
	int n;

	conf_opts_default(&o);
	conf_pair_open(&p, NULL, &o);
	RDP_ASSERT_EQ(conf_post_recv(&p.b, 7, 0, 16), 0);
	RDP_ASSERT_EQ(conf_post_recv(&p.b, 8, 64, 16), 0);
	RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_SEND, RDP_SEND_SIGNALED, 1, 0, 64, 0, 0, 0), 0);
	n = conf_poll(&p.b, wc, 2, T_MS);
	RDP_ASSERT_EQ(n, 2);
	RDP_ASSERT_EQ(wc[0].wr_id, 7);
	/* the spec and mlx5 say LOC_LEN_ERR; rxe (kernel 6.1) says LOC_QP_OP_ERR */
	RDP_ASSERT_MSG(wc[0].status == RDP_WC_LOC_LEN_ERR || wc[0].status == RDP_WC_LOC_QP_OP_ERR,
		       "receiver status %s", rdp_wc_status_str(wc[0].status));
	/* the receiver's QP went to error: its next receive is flushed */
	expect(wc, n, 8, RDP_WC_WR_FLUSH_ERR);
	RDP_ASSERT_EQ(conf_qp_state(&p.b), RDP_QPS_ERR);
	RDP_ASSERT_EQ(conf_poll(&p.a, wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc[0].wr_id, 1);
	RDP_ASSERT_MSG(wc[0].status == RDP_WC_REM_INV_REQ_ERR || wc[0].status == RDP_WC_REM_OP_ERR,
		       "sender status %s", rdp_wc_status_str(wc[0].status));
	conf_pair_close(&p);
	return 0;
}

RDP_TEST(conf, conf_receives_complete_in_post_order_with_their_payloads)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_wc wc[8];
	int i;

	conf_opts_default(&o);
	conf_pair_open(&p, NULL, &o);
	for (i = 0; i < 8; i++)
		RDP_ASSERT_EQ(conf_post_recv(&p.b, 300 + i, i * 128, 128), 0);
	for (i = 0; i < 8; i++) {
		conf_tx_fill(&p.a, i * 128, 100, (uint8_t)i);
		RDP_ASSERT_EQ(conf_post_send(&p.a, RDP_WR_SEND_WITH_IMM,
					     i == 7 ? RDP_SEND_SIGNALED : 0, i, i * 128, 100 - i,
					     i, 0, 0), 0);
	}
	RDP_ASSERT_EQ(conf_poll(&p.b, wc, 8, T_MS), 8);
	for (i = 0; i < 8; i++) {
		RDP_ASSERT_EQ(wc[i].wr_id, 300 + i);
		RDP_ASSERT_EQ(wc[i].imm, i);
		RDP_ASSERT_EQ(wc[i].byte_len, 100 - i);
		RDP_ASSERT(same(&p.a, i * 128, &p.b, i * 128, 100 - i));
	}
	RDP_ASSERT_EQ(conf_poll(&p.a, wc, 1, T_MS), 1);
	RDP_ASSERT_EQ(wc[0].wr_id, 7);
	conf_pair_close(&p);
	return 0;
}

RDP_TEST(conf, conf_post_send_before_rts_is_refused)
{
	struct conf_opts o;
	struct conf_pair p;
	struct rdp_qp_init_attr ia = { 0 };
	struct rdp_qp *qp;
	struct rdp_send_wr wr = { .wr_id = 1, .opcode = RDP_WR_RDMA_WRITE };
	int err;

	conf_opts_default(&o);
	conf_pair_open(&p, NULL, &o);
	ia.send_cq = p.a.cq;
	ia.recv_cq = p.a.cq;
	ia.cap = (struct rdp_qp_cap){ .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
				      .max_recv_sge = 1 };
	qp = rdp_qp_create(p.pd, &ia);
	RDP_ASSERT_MSG(qp != NULL, "rdp_qp_create: %s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_post_send(qp, &wr, 1, &err), 0);
	RDP_ASSERT_EQ(err, -EPERM);
	RDP_ASSERT_EQ(rdp_qp_destroy(qp), 0);
	conf_quiet(&p.a, Q_MS);
	conf_pair_close(&p);
	return 0;
}
