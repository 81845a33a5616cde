/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A connected pair of QPs on the driver under test (see conf_pair.h).
 *
 * A remote side is served by an agent: a forked child that owns the side's
 * objects on its own device and runs each request of the parent with the
 * same local code, so both kinds of side behave the same.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conf_pair.h"
#include "rdp_test.h"

#define SG_MAX 8
#define DATA_MAX 4096

enum agent_op {
	OP_RECV = 1, OP_SEND, OP_RECV_SG, OP_SEND_SG, OP_POLL, OP_STATE, OP_ERR, OP_RESIZE,
	OP_FILL, OP_READ, OP_DESTROY_QP, OP_CLOSE, OP_APP_DEREG,
};

struct agent_req {
	uint32_t op;
	uint32_t n;
	uint64_t v[8];
	uint32_t r[SG_MAX][2];
};

struct agent_rsp {
	int64_t ret;
	uint32_t n;
	uint8_t data[DATA_MAX] __rte_aligned(8); /* completions are copied here */
};

struct agent_hello {
	struct rdp_qp_addr addr;
	uint64_t rx_addr;
	uint32_t rx_rkey;
	uint32_t qp_num;
	uint64_t tx_addr;
	uint32_t tx_rkey;
	uint64_t app_addr;
	uint32_t app_rkey;
};

void
conf_opts_default(struct conf_opts *o)
{
	*o = (struct conf_opts){
		.sq = 16, .rq = 16, .cqe = 64, .send_sge = 1, .recv_sge = 1,
		.rnr_retry = 0, .min_rnr_timer = 1, .rd_atomic = 4,
	};
}

/* ---------------------------------------------------------------------- */
/* Local sides                                                            */
/* ---------------------------------------------------------------------- */

/* A side; with @p cq, on that CQ (not its own) and receiving from @p srq. */
static void
side_open_on(struct rdp_dev *dev, struct rdp_pd *pd, struct conf_side *s,
	     const struct conf_opts *o, struct rdp_cq *cq, struct rdp_srq *srq)
{
	struct rdp_qp_init_attr ia = { 0 };

	s->agent = -1;
	s->cq_borrowed = cq != NULL;
	s->cq = cq != NULL ? cq : rdp_cq_create(dev, o->cqe, -1);
	RDP_ASSERT_MSG(s->cq != NULL, "rdp_cq_create: %s", rdp_err_msg());
	s->rx = rdp_mr_alloc(pd, CONF_BUF_SIZE, -1,
			     RDP_ACCESS_LOCAL_WRITE | RDP_ACCESS_REMOTE_WRITE | RDP_ACCESS_REMOTE_READ);
	RDP_ASSERT_MSG(s->rx != NULL, "rdp_mr_alloc(rx): %s", rdp_err_msg());
	s->tx = rdp_mr_alloc(pd, CONF_BUF_SIZE, -1, RDP_ACCESS_LOCAL_WRITE);
	RDP_ASSERT_MSG(s->tx != NULL, "rdp_mr_alloc(tx): %s", rdp_err_msg());
	ia.send_cq = s->cq;
	ia.recv_cq = s->cq;
	ia.cap.max_send_wr = o->sq;
	ia.cap.max_recv_wr = o->rq;
	ia.cap.max_send_sge = o->send_sge;
	ia.cap.max_recv_sge = o->recv_sge;
	ia.srq = srq;
	s->qp = rdp_qp_create(pd, &ia);
	RDP_ASSERT_MSG(s->qp != NULL, "rdp_qp_create: %s", rdp_err_msg());
	s->rx_addr = (uintptr_t)s->rx->addr;
	s->rx_rkey = s->rx->rkey;
	s->tx_addr = (uintptr_t)s->tx->addr;
	s->tx_rkey = s->tx->rkey;
	s->app_mem = calloc(1, CONF_BUF_SIZE + 64);
	RDP_ASSERT(s->app_mem != NULL);
	s->app = rdp_mr_reg(pd, (uint8_t *)s->app_mem + 3, CONF_BUF_SIZE,
			    RDP_ACCESS_LOCAL_WRITE | RDP_ACCESS_REMOTE_WRITE | RDP_ACCESS_REMOTE_READ);
	RDP_ASSERT_MSG(s->app != NULL, "rdp_mr_reg(app): %s", rdp_err_msg());
	s->app_addr = (uintptr_t)s->app->addr;
	s->app_rkey = s->app->rkey;
	s->qp_num = s->qp->qp_num;
}

static void
side_open(struct rdp_dev *dev, struct rdp_pd *pd, struct conf_side *s, const struct conf_opts *o)
{
	side_open_on(dev, pd, s, o, NULL, NULL);
}

/* Byte @p off of a local side's region (app memory outlives its registration). */
static uint8_t *
region_at(struct conf_side *s, unsigned int region, uint32_t off)
{
	if (region == CONF_APP)
		return (uint8_t *)s->app_mem + 3 + off;
	return (uint8_t *)(region == CONF_TX ? s->tx : s->rx)->addr + off;
}

static void
side_close(struct conf_side *s)
{
	if (s->qp != NULL)
		RDP_ASSERT_EQ(rdp_qp_destroy(s->qp), 0);
	if (!s->cq_borrowed)
		RDP_ASSERT_EQ(rdp_cq_destroy(s->cq), 0);
	RDP_ASSERT_EQ(rdp_mr_free(s->rx), 0);
	RDP_ASSERT_EQ(rdp_mr_free(s->tx), 0);
	if (s->app != NULL)
		RDP_ASSERT_EQ(rdp_mr_free(s->app), 0);
	free(s->app_mem);
}

static int
l_post_recv_sg(struct conf_side *s, uint64_t wr_id, const uint32_t (*r)[2], uint32_t n)
{
	struct rdp_sge sge[SG_MAX];
	struct rdp_recv_wr wr = { .wr_id = wr_id, .sg_list = sge, .num_sge = n };
	uint32_t i;
	int err;

	RDP_ASSERT(n <= SG_MAX);
	for (i = 0; i < n; i++)
		sge[i] = (struct rdp_sge){ .addr = (uintptr_t)s->rx->addr + r[i][0],
					   .length = r[i][1], .lkey = s->rx->lkey };
	rdp_post_recv(s->qp, &wr, 1, &err);
	return err;
}

static int
l_post_send(struct conf_side *s, const struct agent_req *q)
{
	struct rdp_sge sge[SG_MAX];
	struct rdp_send_wr wr = {
		.wr_id = q->v[0], .sg_list = q->n ? sge : NULL, .num_sge = q->n,
		.opcode = (uint8_t)q->v[1], .flags = (uint8_t)q->v[2], .imm = (uint32_t)q->v[3],
		.remote_addr = q->v[4], .rkey = (uint32_t)q->v[5],
	};
	uint32_t i;
	int err;

	RDP_ASSERT(q->n <= SG_MAX);
	for (i = 0; i < q->n; i++)
		sge[i] = (struct rdp_sge){ .addr = (uintptr_t)s->tx->addr + q->r[i][0],
					   .length = q->r[i][1], .lkey = s->tx->lkey };
	rdp_post_send(s->qp, &wr, 1, &err);
	return err;
}

static int
l_poll(struct conf_side *s, struct rdp_wc *wc, int want, int ms)
{
	double deadline = rdp_clock_s() + ms / 1000.0;
	int got = 0;

	while (got < want) {
		int r = rdp_poll_cq(s->cq, wc + got, (uint16_t)(want - got));

		RDP_ASSERT_MSG(r >= 0, "rdp_poll_cq failed: %d", r);
		got += r;
		if (r == 0 && rdp_clock_s() > deadline)
			break;
	}
	return got;
}

static unsigned int
l_state(struct conf_side *s)
{
	struct rdp_qp_attr attr;

	RDP_ASSERT_EQ(rdp_qp_query(s->qp, &attr), 0);
	return attr.state;
}

static void
l_err(struct conf_side *s)
{
	RDP_ASSERT_EQ(rdp_qp_modify(s->qp, &(struct rdp_qp_attr){ .state = RDP_QPS_ERR },
				    RDP_QP_ATTR_STATE), 0);
}

static void
l_fill(struct conf_side *s, uint32_t off, uint32_t len, uint8_t seed)
{
	uint8_t *p = (uint8_t *)s->tx->addr + off;
	uint32_t i;

	RDP_ASSERT((uint64_t)off + len <= CONF_BUF_SIZE);
	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

/* ---------------------------------------------------------------------- */
/* Remote sides: the agent and its client                                 */
/* ---------------------------------------------------------------------- */

static void
rpc(struct conf_side *s, const struct agent_req *q, struct agent_rsp *r)
{
	ssize_t n;

	RDP_ASSERT_MSG(send(s->agent, q, sizeof(*q), MSG_NOSIGNAL) == (ssize_t)sizeof(*q),
		       "the peer process is gone (send: %s)", strerror(errno));
	n = recv(s->agent, r, sizeof(*r), 0);
	RDP_ASSERT_MSG(n >= (ssize_t)offsetof(struct agent_rsp, data),
		       "the peer process failed (see its message above)");
}

static int64_t
rpc_simple(struct conf_side *s, uint32_t op, uint64_t v0, uint64_t v1, uint64_t v2)
{
	struct agent_req q = { .op = op, .v = { v0, v1, v2 } };
	struct agent_rsp *r = malloc(sizeof(*r));
	int64_t ret;

	RDP_ASSERT(r != NULL);
	rpc(s, &q, r);
	ret = r->ret;
	free(r);
	return ret;
}

static void
agent_serve(int fd, struct conf_side *s, struct rdp_dev *dev, struct rdp_pd *pd)
{
	struct agent_req q;
	struct agent_rsp *r = malloc(sizeof(*r));

	RDP_ASSERT(r != NULL);
	for (;;) {
		ssize_t n = recv(fd, &q, sizeof(q), 0);
		size_t len = offsetof(struct agent_rsp, data);

		if (n != (ssize_t)sizeof(q))
			_exit(n == 0 ? 0 : 1); /* the parent is gone */
		memset(r, 0, len);
		switch (q.op) {
		case OP_RECV_SG:
			r->ret = l_post_recv_sg(s, q.v[0], (const uint32_t(*)[2])q.r, q.n);
			break;
		case OP_SEND_SG:
			r->ret = l_post_send(s, &q);
			break;
		case OP_POLL:
			RDP_ASSERT(q.v[0] * sizeof(struct rdp_wc) <= DATA_MAX);
			r->ret = l_poll(s, (struct rdp_wc *)r->data, (int)q.v[0], (int)q.v[1]);
			len += r->ret * sizeof(struct rdp_wc);
			break;
		case OP_STATE:
			r->ret = l_state(s);
			break;
		case OP_ERR:
			l_err(s);
			break;
		case OP_RESIZE:
			r->ret = rdp_cq_resize(s->cq, (uint32_t)q.v[0]);
			break;
		case OP_FILL:
			l_fill(s, (uint32_t)q.v[0], (uint32_t)q.v[1], (uint8_t)q.v[2]);
			break;
		case OP_READ:
			RDP_ASSERT(q.v[2] <= DATA_MAX && q.v[1] + q.v[2] <= CONF_BUF_SIZE);
			memcpy(r->data, region_at(s, (unsigned int)q.v[0], (uint32_t)q.v[1]), q.v[2]);
			len += q.v[2];
			break;
		case OP_APP_DEREG:
			r->ret = rdp_mr_free(s->app);
			s->app = NULL;
			break;
		case OP_DESTROY_QP:
			r->ret = rdp_qp_destroy(s->qp);
			s->qp = NULL;
			break;
		case OP_CLOSE:
			side_close(s);
			RDP_ASSERT_EQ(rdp_pd_free(pd), 0);
			RDP_ASSERT_MSG(rdp_dev_close(dev) == 0, "rdp_dev_close: %s", rdp_err_msg());
			RDP_ASSERT(send(fd, r, len, 0) == (ssize_t)len);
			_exit(0);
		default:
			RDP_ASSERT_MSG(false, "agent: unknown request %u", q.op);
		}
		RDP_ASSERT(send(fd, r, len, MSG_NOSIGNAL) == (ssize_t)len);
	}
}

static void
agent_main(int fd, const char *spec, const struct conf_opts *o,
	   const struct rdp_qp_conn_params *conn)
{
	struct rdp_dev *dev = rdp_dev_open(spec);
	struct agent_hello h = { 0 };
	struct rdp_qp_addr peer;
	struct conf_side s;
	struct rdp_pd *pd;
	int ret;

	RDP_ASSERT_MSG(dev != NULL, "peer process: rdp_dev_open(%s): %s", spec, rdp_err_msg());
	pd = rdp_pd_alloc(dev);
	RDP_ASSERT(pd != NULL);
	side_open(dev, pd, &s, o);
	RDP_ASSERT_EQ(rdp_qp_local_addr(s.qp, &h.addr), 0);
	h.rx_addr = s.rx_addr;
	h.rx_rkey = s.rx_rkey;
	h.tx_addr = s.tx_addr;
	h.tx_rkey = s.tx_rkey;
	h.app_addr = s.app_addr;
	h.app_rkey = s.app_rkey;
	h.qp_num = s.qp_num;
	RDP_ASSERT(send(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h));
	RDP_ASSERT(recv(fd, &peer, sizeof(peer), 0) == (ssize_t)sizeof(peer));
	ret = rdp_qp_connect(s.qp, &peer, conn);
	RDP_ASSERT_MSG(ret == 0, "peer process: connect: %s", rdp_err_msg());
	RDP_ASSERT(send(fd, &ret, sizeof(ret), 0) == (ssize_t)sizeof(ret));
	agent_serve(fd, &s, dev, pd);
}

static bool
peer_in_process(void)
{
	const char *e = getenv("RDP_TEST_CONF_PEER");

	return e != NULL && strcmp(e, "process") == 0;
}

/* The connection parameters a pair's QPs are connected with. */
static struct rdp_qp_conn_params
conn_params(const struct conf_opts *o)
{
	return (struct rdp_qp_conn_params){
		.rnr_retry = o->rnr_retry, .retry_cnt = 7, .timeout = 14,
		.min_rnr_timer = o->min_rnr_timer, .max_rd_atomic = o->rd_atomic,
		.max_dest_rd_atomic = o->rd_atomic,
	};
}

/*
 * Open a pair; side a on @p dev and @p pd when given (else a device of
 * @p spec is opened), on @p cq and receiving from @p srq when given.
 */
/* Fork the process that holds side b; it opens its own device. */
static void
spawn_agent(struct conf_pair *p, const char *spec, const struct conf_opts *o)
{
	struct rdp_qp_conn_params conn = conn_params(o);
	int sv[2];

	RDP_ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	fflush(stdout);
	p->b.pid = fork();
	RDP_ASSERT(p->b.pid >= 0);
	if (p->b.pid == 0) {
		close(sv[0]);
		agent_main(sv[1], spec, o, &conn);
	}
	close(sv[1]);
	p->b.agent = sv[0];
}

/* Open a pair; @p spawned: conf_pair_prepare_srq() already forked side b's process, if any. */
static void
pair_open(struct conf_pair *p, const char *spec, const struct conf_opts *o,
	  struct rdp_dev *dev, struct rdp_pd *pd, struct rdp_cq *cq, struct rdp_srq *srq,
	  bool spawned)
{
	struct rdp_qp_conn_params conn = conn_params(o);
	bool remote = spawned ? p->b.agent >= 0 : spec == NULL && peer_in_process();
	struct rdp_qp_addr aa, ba;
	struct agent_hello h;
	int ret;

	if (spec == NULL)
		spec = rdp_test_driver();
	if (!spawned) {
		memset(p, 0, sizeof(*p));
		if (remote)
			spawn_agent(p, spec, o);
	}
	p->dev = dev != NULL ? dev : rdp_dev_open(spec);
	RDP_ASSERT_MSG(p->dev != NULL, "rdp_dev_open(%s): %s", spec, rdp_err_msg());
	p->pd = pd != NULL ? pd : rdp_pd_alloc(p->dev);
	RDP_ASSERT_MSG(p->pd != NULL, "rdp_pd_alloc: %s", rdp_err_msg());
	side_open_on(p->dev, p->pd, &p->a, o, cq, srq);
	RDP_ASSERT_EQ(rdp_qp_local_addr(p->a.qp, &aa), 0);
	if (remote) {
		RDP_ASSERT_MSG(recv(p->b.agent, &h, sizeof(h), 0) == (ssize_t)sizeof(h),
			       "the peer process failed to start");
		ba = h.addr;
		p->b.rx_addr = h.rx_addr;
		p->b.rx_rkey = h.rx_rkey;
		p->b.tx_addr = h.tx_addr;
		p->b.tx_rkey = h.tx_rkey;
		p->b.app_addr = h.app_addr;
		p->b.app_rkey = h.app_rkey;
		p->b.qp_num = h.qp_num;
		RDP_ASSERT(send(p->b.agent, &aa, sizeof(aa), 0) == (ssize_t)sizeof(aa));
	} else {
		side_open(p->dev, p->pd, &p->b, o);
		RDP_ASSERT_EQ(rdp_qp_local_addr(p->b.qp, &ba), 0);
	}
	RDP_ASSERT_MSG(rdp_qp_connect(p->a.qp, &ba, &conn) == 0, "connect a: %s", rdp_err_msg());
	if (remote)
		RDP_ASSERT_MSG(recv(p->b.agent, &ret, sizeof(ret), 0) == (ssize_t)sizeof(ret) &&
			       ret == 0, "the peer process failed to connect");
	else
		RDP_ASSERT_MSG(rdp_qp_connect(p->b.qp, &aa, &conn) == 0, "connect b: %s",
			       rdp_err_msg());
}

void
conf_pair_open(struct conf_pair *p, const char *spec, const struct conf_opts *o)
{
	pair_open(p, spec, o, NULL, NULL, NULL, NULL, false);
}

void
conf_pair_open_srq(struct conf_pair *p, struct rdp_dev *dev, struct rdp_pd *pd,
		   struct rdp_cq *cq, struct rdp_srq *srq, const struct conf_opts *o)
{
	pair_open(p, NULL, o, dev, pd, cq, srq, true);
}

void
conf_pair_prepare_srq(struct conf_pair *p, const struct conf_opts *o)
{
	memset(p, 0, sizeof(*p));
	p->b.agent = -1;
	if (peer_in_process())
		spawn_agent(p, rdp_test_driver(), o);
}

void
conf_pair_unprepare_srq(struct conf_pair *p)
{
	int status;

	if (p->b.agent < 0)
		return;
	close(p->b.agent);
	p->b.agent = -1;
	RDP_ASSERT_EQ(waitpid(p->b.pid, &status, 0), p->b.pid);
}

/* Close side b, wherever it lives. */
static void
side_b_close(struct conf_pair *p)
{
	int status;

	if (p->b.agent >= 0) {
		rpc_simple(&p->b, OP_CLOSE, 0, 0, 0);
		close(p->b.agent);
		RDP_ASSERT_EQ(waitpid(p->b.pid, &status, 0), p->b.pid);
		RDP_ASSERT_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			       "the peer process failed");
	} else {
		side_close(&p->b);
	}
}

void
conf_pair_close_srq(struct conf_pair *p)
{
	side_close(&p->a);
	side_b_close(p);
}

void
conf_pair_close(struct conf_pair *p)
{
	int status;

	side_close(&p->a);
	if (p->b.agent >= 0) {
		rpc_simple(&p->b, OP_CLOSE, 0, 0, 0);
		close(p->b.agent);
		RDP_ASSERT_EQ(waitpid(p->b.pid, &status, 0), p->b.pid);
		RDP_ASSERT_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			       "the peer process failed");
	} else {
		side_close(&p->b);
	}
	RDP_ASSERT_EQ(rdp_pd_free(p->pd), 0);
	RDP_ASSERT_MSG(rdp_dev_close(p->dev) == 0, "rdp_dev_close: %s", rdp_err_msg());
}

void
conf_pair_open_more(struct conf_pair *p, const struct conf_pair *on, const struct conf_opts *o)
{
	struct rdp_qp_conn_params conn = conn_params(o);
	struct rdp_qp_addr aa, ba;

	memset(p, 0, sizeof(*p));
	p->dev = on->dev;
	p->pd = on->pd;
	side_open(p->dev, p->pd, &p->a, o);
	side_open(p->dev, p->pd, &p->b, o);
	RDP_ASSERT_EQ(rdp_qp_local_addr(p->a.qp, &aa), 0);
	RDP_ASSERT_EQ(rdp_qp_local_addr(p->b.qp, &ba), 0);
	RDP_ASSERT_MSG(rdp_qp_connect(p->a.qp, &ba, &conn) == 0, "connect a: %s", rdp_err_msg());
	RDP_ASSERT_MSG(rdp_qp_connect(p->b.qp, &aa, &conn) == 0, "connect b: %s", rdp_err_msg());
}

void
conf_pair_close_more(struct conf_pair *p)
{
	side_close(&p->a);
	side_close(&p->b);
}

/* ---------------------------------------------------------------------- */
/* Side operations                                                        */
/* ---------------------------------------------------------------------- */

int
conf_post_recv_sg(struct conf_side *s, uint64_t wr_id, const uint32_t (*r)[2], uint32_t n)
{
	struct agent_req q = { .op = OP_RECV_SG, .n = n, .v = { wr_id } };
	struct agent_rsp *rsp;
	int ret;

	if (s->agent < 0)
		return l_post_recv_sg(s, wr_id, r, n);
	RDP_ASSERT(n <= SG_MAX);
	memcpy(q.r, r, n * sizeof(r[0]));
	rsp = malloc(sizeof(*rsp));
	RDP_ASSERT(rsp != NULL);
	rpc(s, &q, rsp);
	ret = (int)rsp->ret;
	free(rsp);
	return ret;
}

int
conf_post_recv(struct conf_side *s, uint64_t wr_id, uint32_t off, uint32_t len)
{
	const uint32_t r[1][2] = { { off, len } };

	return conf_post_recv_sg(s, wr_id, r, 1);
}

static int
post_send_req(struct conf_side *s, const struct agent_req *q)
{
	struct agent_rsp *rsp;
	int ret;

	if (s->agent < 0)
		return l_post_send(s, q);
	rsp = malloc(sizeof(*rsp));
	RDP_ASSERT(rsp != NULL);
	rpc(s, q, rsp);
	ret = (int)rsp->ret;
	free(rsp);
	return ret;
}

int
conf_post_send(struct conf_side *s, uint8_t opcode, uint8_t flags, uint64_t wr_id,
	       uint32_t off, uint32_t len, uint32_t imm, uint64_t raddr, uint32_t rkey)
{
	struct agent_req q = {
		.op = OP_SEND_SG, .n = len ? 1 : 0,
		.v = { wr_id, opcode, flags, imm, raddr, rkey },
		.r = { { off, len } },
	};

	return post_send_req(s, &q);
}

int
conf_post_send_sg(struct conf_side *s, uint64_t wr_id, const uint32_t (*r)[2], uint32_t n)
{
	struct agent_req q = {
		.op = OP_SEND_SG, .n = n, .v = { wr_id, RDP_WR_SEND, RDP_SEND_SIGNALED },
	};

	RDP_ASSERT(n <= SG_MAX);
	memcpy(q.r, r, n * sizeof(r[0]));
	return post_send_req(s, &q);
}

int
conf_poll(struct conf_side *s, struct rdp_wc *wc, int want, int ms)
{
	struct agent_req q = { .op = OP_POLL, .v = { (uint64_t)want, (uint64_t)ms } };
	struct agent_rsp *r;
	int got;

	if (s->agent < 0)
		return l_poll(s, wc, want, ms);
	r = malloc(sizeof(*r));
	RDP_ASSERT(r != NULL);
	rpc(s, &q, r);
	got = (int)r->ret;
	memcpy(wc, r->data, got * sizeof(*wc));
	free(r);
	return got;
}

void
conf_quiet(struct conf_side *s, int ms)
{
	struct rdp_wc wc;
	int r = conf_poll(s, &wc, 1, ms);

	RDP_ASSERT_MSG(r == 0, "unexpected completion: wr_id %" PRIu64 " status %s opcode %u",
		       wc.wr_id, rdp_wc_status_str(wc.status), wc.opcode);
}

unsigned int
conf_qp_state(struct conf_side *s)
{
	return s->agent < 0 ? l_state(s) : (unsigned int)rpc_simple(s, OP_STATE, 0, 0, 0);
}

void
conf_qp_err(struct conf_side *s)
{
	if (s->agent < 0)
		l_err(s);
	else
		rpc_simple(s, OP_ERR, 0, 0, 0);
}

int
conf_cq_resize(struct conf_side *s, uint32_t cqe)
{
	return s->agent < 0 ? rdp_cq_resize(s->cq, cqe) : (int)rpc_simple(s, OP_RESIZE, cqe, 0, 0);
}

void
conf_tx_fill(struct conf_side *s, uint32_t off, uint32_t len, uint8_t seed)
{
	if (s->agent < 0)
		l_fill(s, off, len, seed);
	else
		rpc_simple(s, OP_FILL, off, len, seed);
}

void
conf_read(struct conf_side *s, unsigned int region, uint32_t off, void *buf, uint32_t len)
{
	struct agent_req q = { .op = OP_READ, .v = { region, off, len } };
	struct agent_rsp *r;

	RDP_ASSERT(len <= DATA_MAX && (uint64_t)off + len <= CONF_BUF_SIZE);
	if (s->agent < 0) {
		memcpy(buf, region_at(s, region, off), len);
		return;
	}
	r = malloc(sizeof(*r));
	RDP_ASSERT(r != NULL);
	rpc(s, &q, r);
	memcpy(buf, r->data, len);
	free(r);
}

void
conf_qp_destroy(struct conf_side *s)
{
	if (s->agent < 0)
		RDP_ASSERT_EQ(rdp_qp_destroy(s->qp), 0);
	else
		RDP_ASSERT_EQ(rpc_simple(s, OP_DESTROY_QP, 0, 0, 0), 0);
	s->qp = NULL;
}

int
conf_app_dereg(struct conf_side *s)
{
	int ret;

	if (s->agent >= 0)
		return (int)rpc_simple(s, OP_APP_DEREG, 0, 0, 0);
	ret = rdp_mr_free(s->app);
	s->app = NULL;
	return ret;
}

/* All CONF_BUF_SIZE bytes of a region of side @p s into @p buf. */
static void
region_read(struct conf_side *s, unsigned int region, uint8_t *buf)
{
	uint32_t off;

	for (off = 0; off < CONF_BUF_SIZE; off += 4096)
		conf_read(s, region, off, buf + off, 4096);
}

/* One signaled WRITE or READ between a's tx at @p tx_off and b's rx at @p rx_off; asserts it. */
static void
one_sided(struct conf_pair *p, uint8_t opcode, uint32_t tx_off, uint32_t rx_off, uint32_t len)
{
	struct rdp_wc wc;

	RDP_ASSERT_EQ(conf_post_send(&p->a, opcode, RDP_SEND_SIGNALED, opcode, tx_off, len, 0,
				     p->b.rx_addr + rx_off, p->b.rx_rkey), 0);
	RDP_ASSERT_EQ(conf_poll(&p->a, &wc, 1, 5000), 1);
	RDP_ASSERT_MSG(wc.wr_id == opcode && wc.status == RDP_WC_SUCCESS,
		       "%s of %u bytes, tx+%u and rx+%u: wr_id %" PRIu64 ", status %u",
		       opcode == RDP_WR_RDMA_READ ? "READ" : "WRITE", len, tx_off, rx_off,
		       wc.wr_id, wc.status);
}

void
conf_rdma_round_trip(struct conf_pair *p, uint32_t src_off, uint32_t dst_off, uint32_t len,
		     uint32_t back_off, uint8_t seed)
{
	static uint8_t tx[CONF_BUF_SIZE], rx_before[CONF_BUF_SIZE], got[CONF_BUF_SIZE];

	RDP_ASSERT(len > 0 && (uint64_t)src_off + len <= CONF_BUF_SIZE &&
		   (uint64_t)dst_off + len <= CONF_BUF_SIZE &&
		   (uint64_t)back_off + len <= CONF_BUF_SIZE);
	conf_tx_fill(&p->a, 0, CONF_BUF_SIZE, seed);
	region_read(&p->a, CONF_TX, tx);
	region_read(&p->b, CONF_RX, rx_before);
	one_sided(p, RDP_WR_RDMA_WRITE, src_off, dst_off, len);
	one_sided(p, RDP_WR_RDMA_READ, back_off, dst_off, len);
	/* the WRITE's bytes at their place in rx, and not one byte around them */
	region_read(&p->b, CONF_RX, got);
	memcpy(rx_before + dst_off, tx + src_off, len);
	RDP_ASSERT_MSG(memcmp(got, rx_before, CONF_BUF_SIZE) == 0,
		       "WRITE of %u bytes from tx+%u to rx+%u: rx differs", len, src_off, dst_off);
	/* the READ brought them back into tx, and changed nothing else there */
	region_read(&p->a, CONF_TX, got);
	memmove(tx + back_off, rx_before + dst_off, len);
	RDP_ASSERT_MSG(memcmp(got, tx, CONF_BUF_SIZE) == 0,
		       "READ of %u bytes from rx+%u to tx+%u: tx differs", len, dst_off, back_off);
}
