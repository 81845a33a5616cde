/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rxe-retry-dup: a raw-verbs reproducer for a Soft-RoCE retransmission bug,
 * without rdmaplane (docs/rxe-lane.md, "rxe retransmits a SEND it had
 * acknowledged").
 *
 *   rxe-retry-dup [-s DEV_A] [-r DEV_B] [-n MESSAGES] [-b BYTES] [-t TIMEOUT] [-o]
 *
 * One RC queue pair on DEV_A (default rxe1) and one on DEV_B (rxe0),
 * connected to each other across the wire, stream MESSAGES sends with
 * immediate data each way (-o: only A to B), BYTES each (default 4096:
 * four packets at rxe's MTU of 1024) and every 16th of 8 bytes (one
 * packet, as a pure ack is), with the transport timeout TIMEOUT (the verbs
 * exponent, 4.096 us << TIMEOUT; default 14, 67 ms). RC delivers every
 * send exactly once and in order; each receiver checks that it does:
 *   - each receive carries the next number in its immediate data, and its
 *     payload starts with that number and is as long as it was sent;
 *   - the senders see only successful completions.
 * The first violation of each kind is printed (message number, what came,
 * how long), and the program goes on until every message arrived or a
 * queue pair failed.
 *
 * Exit status: 0 when every message arrived once and in order, 1 when RC
 * was violated (the bug reproduced), 2 on a setup error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define DEPTH 256       /* send and receive queue depth */
#define WINDOW 192      /* messages between the sender and the receiver */
#define SIGNAL_EVERY 16

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "rxe-retry-dup: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

struct side {
	const char *name;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;      /* send completions */
	struct ibv_cq *rcq;     /* receive completions */
	struct ibv_qp *qp;
	struct ibv_mr *mr, *rmr;
	uint8_t *buf, *rbuf;
	int gid_index;
	union ibv_gid gid;
	uint32_t psn;
};

/* The IPv4-mapped RoCE v2 GID of port 1: the one that crosses the wire. */
static void
pick_gid(struct side *s)
{
	static const uint8_t v4[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	struct ibv_port_attr pa;
	struct ibv_gid_entry e;
	int i;

	if (ibv_query_port(s->ctx, 1, &pa) != 0)
		die("%s: ibv_query_port failed", s->name);
	for (i = 0; i < pa.gid_tbl_len; i++) {
		if (ibv_query_gid_ex(s->ctx, 1, i, &e, 0) != 0)
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 && memcmp(e.gid.raw, v4, sizeof(v4)) == 0) {
			s->gid_index = i;
			s->gid = e.gid;
			return;
		}
	}
	die("%s: no IPv4-mapped RoCE v2 GID on port 1", s->name);
}

static void
open_side(struct side *s, size_t buf_len)
{
	struct ibv_device **list;
	struct ibv_qp_init_attr ia = { 0 };
	struct ibv_qp_attr a = { 0 };
	int n, i;

	list = ibv_get_device_list(&n);
	if (list == NULL)
		die("no verbs devices");
	for (i = 0; i < n && strcmp(ibv_get_device_name(list[i]), s->name) != 0; i++)
		;
	if (i == n)
		die("device %s not found", s->name);
	s->ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (s->ctx == NULL)
		die("%s: ibv_open_device: %s", s->name, strerror(errno));
	pick_gid(s);
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, 2 * DEPTH, NULL, NULL, 0);
	s->rcq = ibv_create_cq(s->ctx, 2 * DEPTH, NULL, NULL, 0);
	s->buf = aligned_alloc(4096, buf_len);
	s->rbuf = aligned_alloc(4096, buf_len);
	if (s->pd == NULL || s->cq == NULL || s->rcq == NULL || s->buf == NULL || s->rbuf == NULL)
		die("%s: out of resources", s->name);
	memset(s->buf, 0, buf_len);
	memset(s->rbuf, 0, buf_len);
	s->mr = ibv_reg_mr(s->pd, s->buf, buf_len, IBV_ACCESS_LOCAL_WRITE);
	s->rmr = ibv_reg_mr(s->pd, s->rbuf, buf_len, IBV_ACCESS_LOCAL_WRITE);
	if (s->mr == NULL || s->rmr == NULL)
		die("%s: ibv_reg_mr: %s", s->name, strerror(errno));
	ia.send_cq = s->cq;
	ia.recv_cq = s->rcq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = DEPTH;
	ia.cap.max_recv_wr = DEPTH;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	s->qp = ibv_create_qp(s->pd, &ia);
	if (s->qp == NULL)
		die("%s: ibv_create_qp: %s", s->name, strerror(errno));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS) != 0)
		die("%s: QP to INIT failed", s->name);
	s->psn = (uint32_t)rand() & 0xffffff;
}

static void
connect_side(struct side *s, const struct side *peer, int timeout)
{
	struct ibv_qp_attr a = { 0 };

	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qp->qp_num;
	a.rq_psn = peer->psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer->gid;
	a.ah_attr.grh.sgid_index = (uint8_t)s->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0)
		die("%s: QP to RTR failed", s->name);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = (uint8_t)timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = s->psn;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) != 0)
		die("%s: QP to RTS failed", s->name);
}

static void
post_recv(struct side *r, uint32_t slot, uint32_t bytes)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(r->rbuf + (size_t)slot * bytes),
		.length = bytes,
		.lkey = r->rmr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(r->qp, &wr, &bad) != 0)
		die("%s: ibv_post_recv failed", r->name);
}

/* Send message @p seq: its number in the immediate data and in its first bytes. */
static void
post_send(struct side *s, uint64_t seq, uint32_t bytes, uint32_t stride)
{
	uint8_t *p = s->buf + (size_t)(seq % DEPTH) * stride;
	struct ibv_sge sge = { .addr = (uintptr_t)p, .length = bytes, .lkey = s->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = seq,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND_WITH_IMM,
		.send_flags = seq % SIGNAL_EVERY == SIGNAL_EVERY - 1 ? IBV_SEND_SIGNALED : 0,
		.imm_data = htonl((uint32_t)seq),
	}, *bad;

	memset(p, 0, bytes);
	memcpy(p, &seq, bytes < sizeof(seq) ? bytes : sizeof(seq));
	if (ibv_post_send(s->qp, &wr, &bad) != 0)
		die("%s: ibv_post_send failed", s->name);
}

static void
usage(void)
{
	fprintf(stderr, "usage: rxe-retry-dup [-s DEV_A] [-r DEV_B] [-n MESSAGES] [-b BYTES] "
		"[-t TIMEOUT] [-o]\n");
	exit(2);
}

/* One direction: what a side sent, what its peer received and checked. */
struct flow {
	struct side *from, *to;
	uint64_t sent, received, acked;
	uint64_t dups, wrong, send_errors, recv_errors;
};

/* Bytes of message @p seq: every 16th one packet of 8 bytes, as an ack would be. */
static uint32_t
msg_bytes(uint64_t seq, uint32_t bytes)
{
	return seq % 16 == 5 ? 8 : bytes;
}

static void
flow_step(struct flow *f, uint64_t count, uint32_t bytes)
{
	struct ibv_wc wc[32];
	int n, i;

	/* keep the window full: at most WINDOW in flight, SQ slots freed by
	 * signaled completions (every SIGNAL_EVERY-th send) */
	while (f->sent < count && f->sent - f->received < WINDOW &&
	       f->sent - f->acked < DEPTH - SIGNAL_EVERY && f->send_errors == 0) {
		post_send(f->from, f->sent, msg_bytes(f->sent, bytes), bytes);
		f->sent++;
	}
	n = ibv_poll_cq(f->from->cq, 32, wc);
	for (i = 0; i < n; i++) {
		if (wc[i].opcode & IBV_WC_RECV) {
			fprintf(stderr, "rxe-retry-dup: unexpected receive completion\n");
			continue;
		}
		if (wc[i].status != IBV_WC_SUCCESS) {
			if (f->send_errors++ == 0)
				printf("%s: send %" PRIu64 " completed with %s: the QP failed\n",
				       f->from->name, (uint64_t)wc[i].wr_id,
				       ibv_wc_status_str(wc[i].status));
			continue;
		}
		f->acked = wc[i].wr_id + 1;
	}
	n = ibv_poll_cq(f->to->rcq, 32, wc);
	for (i = 0; i < n; i++) {
		uint32_t slot = (uint32_t)wc[i].wr_id, imm = ntohl(wc[i].imm_data);
		uint32_t want = msg_bytes(f->received, bytes);
		uint64_t head = 0;

		if (wc[i].status != IBV_WC_SUCCESS) {
			/* the first is why the QP failed; flushes follow it */
			if (f->recv_errors++ == 0)
				printf("%s: receive %" PRIu64 " completed with %s\n", f->to->name,
				       f->received, ibv_wc_status_str(wc[i].status));
			continue;
		}
		memcpy(&head, f->to->rbuf + (size_t)slot * bytes,
		       wc[i].byte_len < sizeof(head) ? wc[i].byte_len : sizeof(head));
		if (imm == (uint32_t)f->received && wc[i].byte_len == want && head == f->received) {
			f->received++;
		} else if (imm < (uint32_t)f->received) {
			/* a send that already arrived, again */
			if (f->dups++ == 0)
				printf("%s -> %s: message %" PRIu64 " expected, message %u arrived "
				       "again, %u bytes (sent as %u)\n", f->from->name, f->to->name,
				       f->received, imm, wc[i].byte_len, msg_bytes(imm, bytes));
		} else {
			if (f->wrong++ == 0)
				printf("%s -> %s: message %" PRIu64 " expected, got imm %u with %u "
				       "bytes starting with %" PRIu64 "\n", f->from->name, f->to->name,
				       f->received, imm, wc[i].byte_len, head);
			f->received = imm + 1;
		}
		post_recv(f->to, slot, bytes);
	}
}

int
main(int argc, char **argv)
{
	struct side a = { .name = "rxe1" }, b = { .name = "rxe0" };
	struct flow flows[2] = { { .from = &a, .to = &b }, { .from = &b, .to = &a } };
	uint64_t count = 100000;
	uint32_t bytes = 4096;
	unsigned int nb_flows = 2, k;
	int timeout = 14, c, i;
	time_t start = time(NULL), last_report = start;
	bool bad = false;

	while ((c = getopt(argc, argv, "s:r:n:b:t:oh")) != -1) {
		switch (c) {
		case 's': a.name = optarg; break;
		case 'r': b.name = optarg; break;
		case 'n': count = strtoull(optarg, NULL, 10); break;
		case 'b': bytes = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 't': timeout = atoi(optarg); break;
		case 'o': nb_flows = 1; break;
		default: usage();
		}
	}
	if (count == 0 || bytes < sizeof(uint64_t) || bytes > 65536 || timeout < 1 || timeout > 31)
		usage();
	srand((unsigned int)time(NULL) ^ (unsigned int)getpid());
	open_side(&a, (size_t)DEPTH * bytes);
	open_side(&b, (size_t)DEPTH * bytes);
	connect_side(&a, &b, timeout);
	connect_side(&b, &a, timeout);
	for (i = 0; i < DEPTH; i++) {
		post_recv(&a, (uint32_t)i, bytes);
		post_recv(&b, (uint32_t)i, bytes);
	}
	printf("rxe-retry-dup: %" PRIu64 " sends of %u bytes (every 16th of 8) %s, %s qp %u and "
	       "%s qp %u, timeout %d\n", count, bytes, nb_flows == 2 ? "each way" : "one way",
	       a.name, a.qp->qp_num, b.name, b.qp->qp_num, timeout);
	for (;;) {
		bool done = true, failed = false;

		for (k = 0; k < nb_flows; k++) {
			flow_step(&flows[k], count, bytes);
			done = done && flows[k].received >= count;
			failed = failed || flows[k].send_errors > 0;
		}
		if (done)
			break;
		if (failed && time(NULL) - last_report >= 2)
			break; /* the QP failed: what was flushed has been polled */
		if (!failed && time(NULL) - last_report >= 10) {
			last_report = time(NULL);
			for (k = 0; k < nb_flows; k++)
				printf("  %s -> %s: %" PRIu64 " received, %" PRIu64 " duplicates\n",
				       flows[k].from->name, flows[k].to->name, flows[k].received,
				       flows[k].dups);
			fflush(stdout);
		}
	}
	for (k = 0; k < nb_flows; k++) {
		struct flow *f = &flows[k];

		printf("rxe-retry-dup: %s -> %s: %" PRIu64 " of %" PRIu64 " received in order in "
		       "%ld s; %" PRIu64 " duplicate(s), %" PRIu64 " out of order, %" PRIu64
		       " send error(s)\n", f->from->name, f->to->name, f->received, count,
		       (long)(time(NULL) - start), f->dups, f->wrong, f->send_errors);
		bad = bad || f->dups + f->wrong + f->send_errors > 0;
	}
	return bad ? 1 : 0;
}
