/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The handshake, on the control thread (all messages RDP_HELLO_LEN bytes,
 * see rdp_hello.h):
 *   client: QP to INIT, receives posted, HELLO ->
 *   server: checks, QP to RTS, receives posted, <- HELLO_ACK
 *   client: checks, QP to RTS, READY ->   (client handed to its poller)
 *   server: handed to its poller on READY, so it never sends to a QP
 *           that is not ready to receive.
 * Every step waits on a socket the control loop watches, never blocks: a
 * driver whose QP connect waits on the network (shm's rendezvous) gives a
 * descriptor to watch too (HS_QP_CONNECT). A handshake ends handed to its
 * poller (EP_PH_HANDOVER), or freed when nothing of it exists yet.
 *
 * A server handshake takes a slot (max_handshakes, at most
 * handshakes_per_peer of them for one peer address) only once its whole
 * HELLO is in: until then it holds a socket and this struct, in the
 * waiting room (as many as the lcores' max_endpoints), and has
 * hello_timeout_ms from its accept to send the HELLO. A HELLO that finds
 * no slot free waits in the room, unread further, until one frees
 * (hs_promote()). See docs/architecture.md, "Fair handshakes".
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sodium.h>

#include "rdp_clock.h"
#include "ep_ctl.h"

/*
 * The CQ refused this endpoint's budget of @p budget entries (ENOSPC from
 * rdp_poller_reserve()). When the lcore's endpoints on this device already
 * fill what max_endpoints allows, say so: that is the key to raise. When
 * the CQ's limit is below that, it is the device's max_cqe (rxe's is
 * 32767; a cq_size above it fails rdp_init()): name it, the endpoint needs
 * another lcore or smaller queues. Else the CQ could not grow, and
 * rdp_poller_reserve()'s message stands.
 */
static int
cq_refused(const struct rdp_ep *ep, uint32_t budget)
{
	const struct ep_lcore *lc = ep->lc;
	uint32_t srq = lc->conf.srq == RDP_CFG_ON ? lc->conf.srq_size : 0, used = 0, held;
	uint32_t limit = rdp_poller_cq_limit(lc->poller, ep->ld->idx);
	uint64_t most = ep_cq_most(lc);
	const char *each = srq > 0 ? "sq_size+1" : "sq_size+1+rq_size";
	const char *beside = srq > 0 ? ", beside the SRQ's srq_size" : "";

	rdp_poller_cq_usage(lc->poller, ep->ld->idx, &used, NULL);
	held = used - RTE_MIN(used, srq);
	if ((uint64_t)used + budget > most)
		return rdp_err_set(ENOSPC, "lcore %u: max_endpoints (%u) reached on device %s: "
				   "%u endpoints hold %u CQ entries, %u each (%s)%s", lc->lcore_id,
				   lc->conf.max_endpoints, ep->ld->dv->attr.name, held / budget,
				   held, budget, each, beside);
	if ((uint64_t)used + budget <= limit)
		return -ENOSPC; /* the CQ could not grow: rdp_poller_reserve() says why */
	return rdp_err_set(ENOSPC, "lcore %u: the CQ of device %s holds at most %u entries (the "
			   "device's max_cqe): %u endpoints hold %u, %u each (%s)%s; max_endpoints "
			   "(%u) would need %" PRIu64 ": give the endpoints more lcores, or smaller "
			   "queues", lc->lcore_id, ep->ld->dv->attr.name, limit, held / budget, held,
			   budget, each, beside, lc->conf.max_endpoints, most);
}

/* Reserve the CQ, a slot, receive buffers and a QP; post the receives. */
static int
setup_qp(struct rdp_ep *ep)
{
	const struct ep_lcore *lc = ep->lc;
	struct rdp_qp_init_attr ia = { 0 };
	struct rdp_qp_attr init = { .state = RDP_QPS_INIT };
	char name[32];
	uint32_t budget = ep_cq_budget(lc), tracks;
	int ret;

	ret = rdp_poller_reserve(ep->lc->poller, ep->ld->idx, budget);
	if (ret == -ENOSPC)
		return cq_refused(ep, budget);
	if (ret < 0)
		return ret;
	ep->cq_reserved = budget;
	ret = rdp_poller_slot_alloc(ep->lc->poller, ep);
	if (ret < 0)
		return ret;
	ep->slot = (uint32_t)ret;
	if (ep->ld->srq != NULL) {
		/* receives from the poller's SRQ, into its buffers */
		ep->recv_pool = ep->ld->srq->pool;
	} else {
		snprintf(name, sizeof(name), "rx_ep%u", ep->id);
		ep->recv_pool = rdp_pool_create(name, ep->ld->dv->pd, lc->credit.rq_size,
						lc->conf.buf_size, ep->lc->socket,
						RDP_ACCESS_LOCAL_WRITE | lc->pages);
		if (ep->recv_pool == NULL)
			return -rte_errno;
	}
	tracks = rte_align32pow2(lc->credit.sq_size + 1);
	ep->track = calloc(tracks, sizeof(*ep->track));
	if (ep->track == NULL)
		return rdp_err_set(ENOMEM, "endpoint %u: out of memory", ep->id);
	ep->track_mask = tracks - 1;
	ia.send_cq = ia.recv_cq = rdp_poller_cq(ep->lc->poller, ep->ld->idx);
	/* S for the protocol, one more for the flush marker that ends the QP */
	ia.cap.max_send_wr = lc->credit.sq_size + 1;
	ia.cap.max_recv_wr = ep->ld->srq != NULL ? 0 : lc->credit.rq_size;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = ep->ld->max_inline;
	ia.user_ctx = ep;
	/* the peer sends into this endpoint's receive buffers and nothing else
	 * (what it may READ, the lcore's send arena, has remote access) */
	if (ep->ld->srq != NULL) {
		/* an SRQ QP's peer sends into the SRQ's buffers (the PD's MRs) */
		ia.srq = ep->ld->srq->srq;
	} else {
		ia.peer_mrs = &ep->recv_pool->mr;
		ia.nb_peer_mrs = 1;
	}
	ep->qp = rdp_qp_create(ep->ld->dv->pd, &ia);
	if (ep->qp == NULL)
		return -rte_errno;
	ep->qp_made = true;
	ret = rdp_qp_modify(ep->qp, &init, RDP_QP_ATTR_STATE);
	if (ret < 0)
		return ret;
	ret = ep_post_initial_recvs(ep);
	if (ret < 0)
		return ret;
	ep->max_inline = ep->ld->max_inline;
	ep->err_seq = UINT64_MAX;
	return rdp_qp_local_addr(ep->qp, &ep->local_hello.qp);
}

/*
 * Does an endpoint keep a FIN reserve (rdp_credit_keep_fin_reserve())? Not
 * where it sends no descriptor (no send arena, its peer cannot READ from
 * it, or every message goes in chunks) nor where it receives on an SRQ
 * (the SRQ keeps the FIN reserve, ep_srq.c). Returns the chunks of the longest message
 * its window must still carry whole, 0 for no reserve.
 */
static uint64_t
fin_reserve_chunks(const struct ep_lcore *lc, const struct rdp_hello *h, bool srq, bool rndv)
{
	uint64_t chunked = RTE_MIN(lc->conf.rndv_threshold, lc->conf.max_msg_size);

	if (srq || !rndv || h->rd_dest == 0 || lc->conf.max_msg_size <= lc->conf.rndv_threshold)
		return 0;
	return (chunked + lc->conf.buf_size - 1) / lc->conf.buf_size;
}

/* What we announce, before any resource exists (the QP address comes later). */
static void
hello_local(struct rdp_ep *ep)
{
	const struct ep_lcore *lc = ep->lc;
	struct rdp_hello *h = &ep->local_hello;
	uint64_t chunks;

	memset(h, 0, sizeof(*h));
	h->credit = lc->credit;
	h->rd_dest = ep->ld->conn.max_dest_rd_atomic;
	h->rd_init = ep->ld->rd_init;
	h->buf_size = lc->conf.buf_size;
	h->max_msg_size = lc->conf.max_msg_size;
	h->link_layer = ep->ld->dv->attr.link_layer;
	h->qp.mtu = ep->ld->dv->attr.active_mtu;
	snprintf(h->driver, sizeof(h->driver), "%s", ep->ld->dv->attr.driver);
	/* the peer's window leaves the FIN reserve out */
	chunks = fin_reserve_chunks(lc, h, ep->ld->srq != NULL, ep->ld->rv_send != NULL);
	ep->fin_reserve = chunks > 0 ? rdp_credit_keep_fin_reserve(&h->credit, chunks) : 0;
	ep->fin_credits = ep->fin_reserve;
	if (ep->ld->srq != NULL) {
		h->flags |= RDP_HELLO_F_LEASE;
		h->lease.floor = lc->conf.srq_floor;
		h->lease.lease_max = lc->conf.srq_lease_max;
	}
	if (rdp_rt.auth) {
		h->flags |= RDP_HELLO_F_AUTH;
		randombytes_buf(h->nonce, sizeof(h->nonce));
	}
}

/* The counters rdp_hs_stats_get() reads: written by this thread only, each whole. */
static void
count(uint64_t *c)
{
	__atomic_store_n(c, *c + 1, __ATOMIC_RELAXED);
}

static void
set_count(unsigned int *c, unsigned int v)
{
	__atomic_store_n(c, v, __ATOMIC_RELAXED);
}

/*
 * The HELLO field a refusal names: "field 'NAME' ..." (the decoder), else
 * the first "NAME=" (the credit rules: "peer ack_reserve=1 ..."), else @p dflt.
 */
static void
refused_field(const char *why, const char *dflt, char *name, size_t len)
{
	const char *p = strstr(why, "field '"), *q;

	snprintf(name, len, "%s", dflt);
	if (p != NULL) {
		p += strlen("field '");
		q = strchr(p, '\'');
	} else {
		q = strchr(why, '=');
		for (p = q; p != NULL && p > why && (isalnum((unsigned char)p[-1]) ||
						       p[-1] == '_'); p--)
			;
	}
	if (p != NULL && q != NULL && q > p && (size_t)(q - p) < len)
		snprintf(name, len, "%.*s", (int)(q - p), p);
}

static unsigned int
find_field(const char *name, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (strcmp(rdp_ctl.rej_field[i].field, name) == 0)
			break;
	return i;
}

/* Count a handshake the listener refused (a REJECT goes back), and authentication failures. */
static void
count_refusal(const struct rdp_ep *ep, int err, const char *why)
{
	char name[sizeof(rdp_ctl.rej_field[0].field)];
	unsigned int i, n = rdp_ctl.nb_rej_fields;

	if (err == -EACCES)
		count(&rdp_ctl.nb_auth_failures);
	if (!ep->is_server || (err != -EPROTO && err != -EACCES))
		return;
	count(&rdp_ctl.nb_rejected);
	refused_field(why, err == -EACCES ? "secret" : "other", name, sizeof(name));
	i = find_field(name, n);
	if (i == n && n >= RDP_HS_REJECT_FIELDS - 1) {
		/* the last entry is kept for "other" */
		snprintf(name, sizeof(name), "other");
		i = find_field(name, n);
	}
	if (i == n) {
		snprintf(rdp_ctl.rej_field[i].field, sizeof(name), "%s", name);
		__atomic_store_n(&rdp_ctl.nb_rej_fields, n + 1, __ATOMIC_RELEASE);
	}
	count(&rdp_ctl.rej_field[i].count);
}

static bool
same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			      &((const struct sockaddr_in6 *)b)->sin6_addr,
			      sizeof(struct in6_addr)) == 0;
	return false;
}

void
hs_peer_count(const struct sockaddr_storage *ss, uint64_t now, uint64_t stalled_ns,
	      unsigned int *slotted, unsigned int *stalled)
{
	const struct rdp_ep *ep;

	*slotted = 0;
	*stalled = 0;
	TAILQ_FOREACH(ep, &rdp_ctl.handshakes, ctl_next) {
		if (!ep->is_server || !same_addr(&ep->peer_ss, ss))
			continue;
		if (ep->hs_slotted)
			(*slotted)++;
		else if (ep->hs == HS_RECV_HELLO && now - ep->accepted_ns > stalled_ns)
			(*stalled)++;
	}
}

/* The waiting room has a place again: resume accepting, if that was paused. */
static void
room_check(void)
{
	if (rdp_ctl.accept_paused && rdp_ctl.nb_waiting < hs_waiting_max())
		ctl_listeners_watch(true);
}

/* Take a slot for a server handshake whose HELLO is in, if one is free for its address. */
static bool
slot_take(struct rdp_ep *ep)
{
	const struct rdp_cfg_lcore *conf = &ep->lc->conf;
	unsigned int slotted, stalled;

	if (rdp_ctl.nb_server_handshakes >= conf->max_handshakes)
		return false;
	hs_peer_count(&ep->peer_ss, 0, UINT64_MAX, &slotted, &stalled);
	if (slotted >= conf->handshakes_per_peer)
		return false;
	ep->hs_slotted = true;
	set_count(&rdp_ctl.nb_server_handshakes, rdp_ctl.nb_server_handshakes + 1);
	set_count(&rdp_ctl.nb_waiting, rdp_ctl.nb_waiting - 1);
	/* the rest of the handshake has its whole deadline from here */
	ep->deadline_ns = rdp_clock_ns() + conf->handshake_timeout_ms * 1000000ull;
	room_check();
	return true;
}

static void hs_promote(void);

static void
hs_remove(struct rdp_ep *ep)
{
	TAILQ_REMOVE(&rdp_ctl.handshakes, ep, ctl_next);
	ep->ctl_list = CTL_NONE;
	if (!ep->is_server)
		return;
	if (ep->hs_slotted) {
		ep->hs_slotted = false;
		set_count(&rdp_ctl.nb_server_handshakes, rdp_ctl.nb_server_handshakes - 1);
		hs_promote(); /* a slot is free: a HELLO waiting for it goes on */
	} else {
		set_count(&rdp_ctl.nb_waiting, rdp_ctl.nb_waiting - 1);
	}
	room_check();
}

/* Stop waiting for the driver's QP connect, if the handshake was. */
static void
qp_connect_abort(struct rdp_ep *ep)
{
	if (ep->qp_connect_fd < 0)
		return;
	epoll_ctl(rdp_ctl.epfd, EPOLL_CTL_DEL, ep->qp_connect_fd, NULL);
	ep->qp_connect_fd = -1;
	rdp_qp_modify_abort(ep->qp);
}

/*
 * Whether to keep quiet about a server handshake that failed before its
 * HELLO was in, timed out or closed: what a flood of trickling or silent
 * sockets makes by the hundred a second. One line in each 100 ms says so
 * (with how many went unsaid); a log written to a slow pipe would
 * otherwise hold up the control thread, and every handshake with it.
 */
static bool
hs_quiet(const struct rdp_ep *ep, int err)
{
	static uint64_t said_ns, unsaid;
	uint64_t now;

	if (!ep->is_server || ep->hs != HS_RECV_HELLO || ep->in_len >= RDP_HELLO_LEN ||
	    (err != -ETIMEDOUT && err != -ECONNRESET))
		return false;
	now = rdp_clock_ns();
	if (said_ns != 0 && now - said_ns < 100000000ull) {
		unsaid++;
		return true;
	}
	if (unsaid > 0)
		EP_LOG(WARNING, "%" PRIu64 " more connections closed before their HELLO were "
		       "not logged (see /rdp/handshakes)", unsaid);
	said_ns = now;
	unsaid = 0;
	return false;
}

void
hs_fail(struct rdp_ep *ep, int err, const char *fmt, ...)
{
	struct rdp_hello rej = { .type = RDP_HELLO_REJECT };
	uint8_t buf[RDP_HELLO_LEN];
	char why[RDP_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (err != -ECANCELED && !hs_quiet(ep, err))
		EP_LOG(WARNING, "handshake %s peer %s failed: %s",
		       ep->is_server ? "from" : "to", ep->peer, why);
	count_refusal(ep, err, why);
	if (ep->fd >= 0 && (err == -EPROTO || err == -EACCES)) {
		/* best effort: a peer that speaks our protocol learns why */
		rdp_hello_reason_set(&rej, why);
		rdp_hello_encode(&rej, buf);
		if (send(ep->fd, buf, sizeof(buf), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			EP_LOG(DEBUG, "reject to %s not sent: %s", ep->peer, strerror(errno));
	}
	qp_connect_abort(ep);
	ctl_close_fd(ep);
	hs_remove(ep);
	ep->err = err;
	/*
	 * Not ep->qp: the poller clears it when it destroys the QP. Once it
	 * exists its poller sees its completions and alone destroys it; an
	 * endpoint the application knows is reported to it there too.
	 */
	if (ep->qp_made || ep->app_visible) {
		/* the control thread keeps nothing of it: the poller ends it alone */
		ep->ctl_keeps = false;
		ep_phase_set(ep, EP_PH_HANDOVER);
		ctl_poller_push(ep, TAG_ADMIT);
		return;
	}
	/* a server endpoint nobody knew about, with nothing posted */
	if (ep->slot != UINT32_MAX)
		rdp_poller_slot_free(ep->lc->poller, ep->slot);
	ep_free(ep);
}

/* Encode @p h for sending; @p copy keeps the bytes a MAC will cover. */
static void
hs_send(struct rdp_ep *ep, const struct rdp_hello *h, enum hs_step after, uint8_t *copy)
{
	rdp_hello_encode(h, ep->out_buf);
	if (copy != NULL)
		memcpy(copy, ep->out_buf, RDP_HELLO_LEN);
	ep->out_len = RDP_HELLO_LEN;
	ep->out_off = 0;
	ep->hs = HS_SEND;
	ep->hs_after_send = after;
	ctl_watch(ep, EPOLLOUT);
}

/* The handshake succeeded: the control thread keeps the socket, the poller the rest. */
static void
admit(struct rdp_ep *ep)
{
	hs_remove(ep);
	ep->ctl_list = CTL_ESTABLISHED;
	TAILQ_INSERT_TAIL(&rdp_ctl.established, ep, ctl_next);
	/* from now on the socket only tells us when the peer goes away */
	ctl_watch(ep, EPOLLIN | EPOLLRDHUP);
	ep->ctl_keeps = true;
	ep_phase_set(ep, EP_PH_HANDOVER);
	ctl_poller_push(ep, TAG_ADMIT);
}

static void
after_send(struct rdp_ep *ep)
{
	if (ep->hs_after_send == HS_ADMIT) {
		admit(ep);
		return;
	}
	ep->hs = ep->hs_after_send;
	ep->in_len = 0;
	ctl_watch(ep, EPOLLIN | EPOLLRDHUP);
}

/* The QP is in RTR: to RTS, then the handshake's next message. */
static void
qp_connected(struct rdp_ep *ep)
{
	struct rdp_qp_attr attr = { .state = RDP_QPS_RTS, .conn = ep->ld->conn };

	attr.conn.path_mtu = ep->path_mtu;
	attr.conn.max_rd_atomic = (uint8_t)ep->credit.rd_depth;
	if (rdp_qp_modify(ep->qp, &attr, RDP_QP_ATTR_STATE | RDP_QP_ATTR_CONN) < 0) {
		hs_fail(ep, -EPROTO, "cannot connect the QP: %s", rdp_err_msg());
		return;
	}
	/*
	 * The poller may reap this QP's first completions before the
	 * handover, and reads the state set before. The peer sends nothing
	 * before our next handshake message, so the order holds, but it runs
	 * through the peer, often another process, where ThreadSanitizer
	 * cannot follow it: say it here (ep_complete() acquires).
	 */
	RDP_HANDOFF_RELEASE(ep);
	if (ep->is_server) {
		struct rdp_hello ack = ep->local_hello;

		ack.type = RDP_HELLO_ACK;
		hs_send(ep, &ack, HS_RECV_READY, ep->hello_s);
		if (rdp_rt.auth)
			rdp_hello_auth(rdp_rt.auth_key, "rdp-ack", ep->hello_c, ep->hello_s,
				       ep->out_buf + RDP_HELLO_MAC_OFFSET);
	} else {
		struct rdp_hello ready = { .type = RDP_HELLO_READY };

		if (rdp_rt.auth)
			rdp_hello_auth(rdp_rt.auth_key, "rdp-ready", ep->hello_c, ep->hello_s,
				       ready.mac);
		hs_send(ep, &ready, HS_ADMIT, NULL);
	}
}

/*
 * Agree with the peer, then connect the QP towards it (RTR, then RTS in
 * qp_connected()). A driver that connects over the network without
 * blocking leaves it in progress: the handshake waits for its descriptor.
 */
static void
connect_qp(struct rdp_ep *ep, const struct rdp_hello *peer)
{
	const struct ep_lcore *lc = ep->lc;
	struct rdp_hello_agreed agreed;
	struct rdp_qp_attr attr = { .remote = peer->qp, .conn = ep->ld->conn };
	struct epoll_event ev = { .events = EPOLLIN };
	char why[RDP_ERR_MSG_MAX];
	int ret, fd = -1;

	ret = rdp_hello_negotiate(&ep->local_hello, peer, &agreed, why, sizeof(why));
	if (ret == 0)
		ret = rdp_credit_init_lease(&ep->credit, &ep->local_hello.credit,
					    &ep->local_hello.lease,
					    &peer->credit, &peer->lease, why, sizeof(why));
	if (ret < 0) {
		hs_fail(ep, -EPROTO, "%s", why);
		return;
	}
	ep->peer_leases = peer->lease.lease_max != 0;
	ep->peer_floor = peer->lease.floor;
	if (ep->ld->srq != NULL) {
		/* leased credits owed go back by rdp_lease_take_owed() and T_ack; what
		 * it lets go, the credit state sends at once */
		ep->lease_tack = lc->credit.ack_threshold;
		ep->credit.ack_threshold = 1;
	}
	rdp_credit_read_depth_set(&ep->credit, agreed.rd_depth);
	ep->chunk_size = agreed.chunk_size;
	ep->max_send_msg = agreed.max_msg_size;
	ep->rndv_max = ep->ld->rv_send != NULL ? agreed.rndv_max : 0;
	/* longer messages by rendezvous when the peer READs them, else none */
	ep->rndv_above = ep->rndv_max != 0 ? RTE_MIN(lc->conf.rndv_threshold,
						     agreed.max_msg_size) : UINT32_MAX;
	ep->frame = (struct ep_frame){ .chunk_size = agreed.chunk_size,
				       .max_msg = lc->conf.max_msg_size,
				       .lease_conn = agreed.lease_conn,
				       .leasing = ep->ld->srq != NULL };
	/* the SRQ admits it (floor and ack reserve) before the QP can receive */
	if (ep->ld->srq != NULL && ep_srq_admit(ep, peer) < 0) {
		hs_fail(ep, -EPROTO, "%s", rdp_err_msg());
		return;
	}
	/* RTS takes it too (qp_connected()) */
	ep->path_mtu = agreed.path_mtu;
	attr.conn.path_mtu = agreed.path_mtu;
	attr.state = RDP_QPS_RTR;
	ret = rdp_qp_modify_start(ep->qp, &attr, RDP_QP_ATTR_STATE | RDP_QP_ATTR_REMOTE |
				  RDP_QP_ATTR_CONN, &fd);
	if (ret == -EINPROGRESS) {
		ep->hs = HS_QP_CONNECT;
		ep->qp_connect_fd = fd;
		ev.data.ptr = (void *)((uintptr_t)ep | OBJ_QP_CONNECT);
		if (epoll_ctl(rdp_ctl.epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			hs_fail(ep, -EPROTO, "cannot watch the QP's connect: %s", strerror(errno));
			return;
		}
		/* nothing to read on the control socket meanwhile */
		ctl_watch(ep, EPOLLRDHUP);
		return;
	}
	if (ret < 0) {
		hs_fail(ep, -EPROTO, "cannot connect the QP: %s", rdp_err_msg());
		return;
	}
	qp_connected(ep);
}

void
hs_qp_connect_event(struct rdp_ep *ep)
{
	int ret;

	struct epoll_event ev = { .events = EPOLLIN };

	if (ep->ctl_list != CTL_HANDSHAKE || ep->hs != HS_QP_CONNECT)
		return; /* ended earlier in this batch */
	/* unwatched first: once the poll ends the change, the descriptor is the
	 * driver's again, and its own thread may close it at any moment */
	epoll_ctl(rdp_ctl.epfd, EPOLL_CTL_DEL, ep->qp_connect_fd, NULL);
	ret = rdp_qp_modify_poll(ep->qp);
	if (ret == -EINPROGRESS) {
		ev.data.ptr = (void *)((uintptr_t)ep | OBJ_QP_CONNECT);
		if (epoll_ctl(rdp_ctl.epfd, EPOLL_CTL_ADD, ep->qp_connect_fd, &ev) == 0)
			return;
		ep->qp_connect_fd = -1;
		rdp_qp_modify_abort(ep->qp);
		hs_fail(ep, -EPROTO, "cannot watch the QP's connect: %s", strerror(errno));
		return;
	}
	ep->qp_connect_fd = -1;
	if (ret < 0) {
		hs_fail(ep, -EPROTO, "cannot connect the QP: %s", rdp_err_msg());
		return;
	}
	qp_connected(ep);
}

/* The HELLO has its slot: take the resources, connect the QP. */
static void
hello_slotted(struct rdp_ep *ep, const struct rdp_hello *peer)
{
	int ret = setup_qp(ep);

	if (ret < 0) {
		hs_fail(ep, -EPROTO, "%s", rdp_err_msg());
		return;
	}
	connect_qp(ep, peer);
}

static void
on_hello(struct rdp_ep *ep, const struct rdp_hello *peer)
{
	char why[RDP_ERR_MSG_MAX];

	if (peer->type != RDP_HELLO_HELLO) {
		hs_fail(ep, -EPROTO, "expected HELLO, got message type %u", peer->type);
		return;
	}
	if (rdp_rt.auth != !!(peer->flags & RDP_HELLO_F_AUTH)) {
		/* short: the reason travels in a 64-byte REJECT */
		hs_fail(ep, -EACCES, rdp_rt.auth ? "shared secret required (config key 'secret')" :
			"this server has no shared secret");
		return;
	}
	memcpy(ep->hello_c, ep->in_buf, RDP_HELLO_LEN);
	/* refuse an incompatible peer before taking any resource for it */
	hello_local(ep);
	if (rdp_hello_negotiate(&ep->local_hello, peer, &(struct rdp_hello_agreed){ 0 },
				why, sizeof(why)) < 0) {
		hs_fail(ep, -EPROTO, "%s", why);
		return;
	}
	if (!slot_take(ep)) {
		/* wait for a slot, reading nothing more: only its going away counts */
		ep->hs = HS_WAIT_SLOT;
		ctl_watch(ep, EPOLLRDHUP);
		count(&rdp_ctl.nb_waited_for_slot);
		return;
	}
	hello_slotted(ep, peer);
}

/*
 * A slot freed: the oldest HELLOs waiting for one take it, unless their
 * address holds its share. hs_fail() on the way frees a slot again and
 * calls here: the loop that runs takes it.
 */
static void
hs_promote(void)
{
	struct rdp_ep *ep;
	bool again = true;

	if (rdp_ctl.promoting)
		return;
	rdp_ctl.promoting = true;
	while (again) {
		again = false;
		TAILQ_FOREACH(ep, &rdp_ctl.handshakes, ctl_next) {
			struct rdp_hello peer;
			char why[RDP_ERR_MSG_MAX];

			if (!ep->is_server || ep->hs != HS_WAIT_SLOT || !slot_take(ep))
				continue;
			/* decoded and checked once already: the bytes are the same */
			if (rdp_hello_decode(ep->in_buf, RDP_HELLO_LEN, &peer, why, sizeof(why)) < 0)
				hs_fail(ep, -EPROTO, "%s", why);
			else
				hello_slotted(ep, &peer);
			again = true; /* the list changed under us: from the start */
			break;
		}
	}
	rdp_ctl.promoting = false;
}

/*
 * The peer's message is the one this step waits for; else the handshake
 * fails, and a REJECT's reason is the news (the peer could not finish its
 * side).
 */
static bool
hs_expect(struct rdp_ep *ep, const struct rdp_hello *peer, uint8_t type, const char *name)
{
	if (peer->type == RDP_HELLO_REJECT) {
		hs_fail(ep, -ECONNREFUSED, "peer refused: %s%s", peer->reason,
			rdp_hello_reason_is_cut(peer) ? " (the peer's log has the whole reason)" :
			"");
		return false;
	}
	if (peer->type != type) {
		hs_fail(ep, -EPROTO, "expected %s, got message type %u", name, peer->type);
		return false;
	}
	return true;
}

static void
on_ack(struct rdp_ep *ep, const struct rdp_hello *peer)
{
	if (!hs_expect(ep, peer, RDP_HELLO_ACK, "HELLO_ACK"))
		return;
	memcpy(ep->hello_s, ep->in_buf, RDP_HELLO_LEN);
	if (rdp_rt.auth) {
		uint8_t mac[RDP_HELLO_MAC_LEN];

		if (!(peer->flags & RDP_HELLO_F_AUTH)) {
			hs_fail(ep, -EACCES, "the server did not authenticate (it has no "
				"shared secret)");
			return;
		}
		rdp_hello_auth(rdp_rt.auth_key, "rdp-ack", ep->hello_c, ep->hello_s, mac);
		if (!rdp_hello_mac_equal(mac, peer->mac)) {
			hs_fail(ep, -EACCES, "the server failed authentication (another "
				"shared secret)");
			return;
		}
	}
	connect_qp(ep, peer);
}

static void
on_ready(struct rdp_ep *ep, const struct rdp_hello *peer)
{
	uint8_t mac[RDP_HELLO_MAC_LEN];

	if (!hs_expect(ep, peer, RDP_HELLO_READY, "READY"))
		return;
	if (rdp_rt.auth) {
		rdp_hello_auth(rdp_rt.auth_key, "rdp-ready", ep->hello_c, ep->hello_s, mac);
		if (!rdp_hello_mac_equal(mac, peer->mac)) {
			hs_fail(ep, -EACCES, "the client failed authentication (another shared "
				"secret)");
			return;
		}
	}
	admit(ep);
}

/* Bytes arrived on a handshake socket. */
static void
hs_readable(struct rdp_ep *ep)
{
	struct rdp_hello peer;
	char why[RDP_ERR_MSG_MAX];
	ssize_t n;

	n = recv(ep->fd, ep->in_buf + ep->in_len, RDP_HELLO_LEN - ep->in_len, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		hs_fail(ep, n == 0 ? -ECONNRESET : -errno, "connection closed after %u of %d "
			"bytes of the handshake", ep->in_len, RDP_HELLO_LEN);
		return;
	}
	ep->in_len += n;
	if (ep->in_len < RDP_HELLO_LEN)
		return;
	if (rdp_hello_decode(ep->in_buf, ep->in_len, &peer, why, sizeof(why)) < 0) {
		hs_fail(ep, -EPROTO, "%s", why);
		return;
	}
	switch (ep->hs) {
	case HS_RECV_HELLO:
		on_hello(ep, &peer);
		break;
	case HS_RECV_ACK:
		on_ack(ep, &peer);
		break;
	case HS_RECV_READY:
		on_ready(ep, &peer);
		break;
	default:
		hs_fail(ep, -EPROTO, "unexpected bytes");
		break;
	}
}

static void
hs_writable(struct rdp_ep *ep)
{
	struct rdp_hello hello;
	ssize_t n;
	int soerr = 0;
	socklen_t sl = sizeof(soerr);

	if (ep->hs == HS_TCP_CONNECT) {
		getsockopt(ep->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
		if (soerr != 0) {
			hs_fail(ep, -soerr, "connect: %s", strerror(soerr));
			return;
		}
		ep->deadline_ns = rdp_clock_ns() + ep->lc->conf.handshake_timeout_ms * 1000000ull;
		hello = ep->local_hello;
		hello.type = RDP_HELLO_HELLO;
		hs_send(ep, &hello, HS_RECV_ACK, ep->hello_c);
		return;
	}
	n = send(ep->fd, ep->out_buf + ep->out_off, ep->out_len - ep->out_off,
		 MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0) {
		hs_fail(ep, -errno, "send: %s", strerror(errno));
		return;
	}
	ep->out_off += n;
	if (ep->out_off == ep->out_len)
		after_send(ep);
}

void
hs_event(struct rdp_ep *ep, uint32_t events)
{
	if (ep->hs == HS_WAIT_SLOT) {
		hs_fail(ep, -ECONNRESET, "the peer closed the connection while its HELLO "
			"waited for a handshake slot");
		return;
	}
	if (ep->hs == HS_QP_CONNECT) {
		/* only the peer's going away can come on the socket meanwhile */
		hs_fail(ep, -ECONNRESET, "the peer closed the connection while its QP "
			"connected");
		return;
	}
	if (events & EPOLLOUT)
		hs_writable(ep);
	else
		hs_readable(ep);
}

const char *
hs_waiting_for(const struct rdp_ep *ep)
{
	switch (ep->hs) {
	case HS_TCP_CONNECT: return "TCP connect";
	case HS_RECV_HELLO: return "waiting for HELLO";
	case HS_RECV_ACK: return "waiting for HELLO_ACK";
	case HS_RECV_READY: return "waiting for READY";
	case HS_QP_CONNECT: return "the QP connecting to its peer";
	case HS_WAIT_SLOT: return "its HELLO waiting for a handshake slot";
	default: return "sending";
	}
}

void
hs_start_connect(struct rdp_ep *ep)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int ret, one = 1;

	TAILQ_INSERT_TAIL(&rdp_ctl.handshakes, ep, ctl_next);
	ep->ctl_list = CTL_HANDSHAKE;
	ep->qp_connect_fd = -1;
	ep->deadline_ns = rdp_clock_ns() + ep->lc->conf.connect_timeout_ms * 1000000ull;
	if (ep->closing) {
		hs_fail(ep, -ECANCELED, "closed before connecting");
		return;
	}
	hello_local(ep);
	ret = setup_qp(ep);
	if (ret < 0) {
		hs_fail(ep, ret, "%s", rdp_err_msg());
		return;
	}
	ret = ctl_resolve(ep->peer, false, &ss, &sl);
	if (ret < 0) {
		hs_fail(ep, ret, "%s", rdp_err_msg());
		return;
	}
	ep->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ep->fd < 0) {
		hs_fail(ep, -errno, "socket: %s", strerror(errno));
		return;
	}
	setsockopt(ep->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	ep->hs = HS_TCP_CONNECT;
	if (connect(ep->fd, (struct sockaddr *)&ss, sl) < 0 && errno != EINPROGRESS) {
		hs_fail(ep, -errno, "connect: %s", strerror(errno));
		return;
	}
	ctl_watch(ep, EPOLLOUT);
}

void
hs_start_accept(struct rdp_ep *ep, int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	ep->fd = fd;
	ep->is_server = true;
	ep->qp_connect_fd = -1;
	ep->hs = HS_RECV_HELLO;
	ep->in_len = 0;
	ep->accepted_ns = rdp_clock_ns();
	/* both from the accept: bytes that trickle in push neither back */
	ep->hello_deadline_ns = ep->accepted_ns + ep->lc->conf.hello_timeout_ms * 1000000ull;
	ep->deadline_ns = ep->accepted_ns + ep->lc->conf.handshake_timeout_ms * 1000000ull;
	TAILQ_INSERT_TAIL(&rdp_ctl.handshakes, ep, ctl_next);
	ep->ctl_list = CTL_HANDSHAKE;
	set_count(&rdp_ctl.nb_waiting, rdp_ctl.nb_waiting + 1);
	ctl_watch(ep, EPOLLIN | EPOLLRDHUP);
}

void
hs_expire(struct rdp_ep *ep, uint64_t now)
{
	const struct rdp_cfg_lcore *conf = &ep->lc->conf;

	if (ep->is_server && ep->hs == HS_RECV_HELLO && now > ep->hello_deadline_ns) {
		count(&rdp_ctl.nb_hello_timeouts);
		hs_fail(ep, -ETIMEDOUT, "no whole HELLO within hello_timeout_ms = %u ms of the "
			"accept (%u of %d bytes)", conf->hello_timeout_ms, ep->in_len,
			RDP_HELLO_LEN);
		return;
	}
	if (now > ep->deadline_ns)
		hs_fail(ep, -ETIMEDOUT, "no progress within %u ms (%s)",
			ep->hs == HS_TCP_CONNECT ? conf->connect_timeout_ms :
			conf->handshake_timeout_ms, hs_waiting_for(ep));
}

unsigned int
hs_waiting_max(void)
{
	unsigned int i, n = 0;

	for (i = 0; i < rdp_rt.nb_lcores; i++)
		n += rdp_rt.lcores[rdp_rt.order[i]]->conf.max_endpoints;
	return n;
}

int
rdp_hs_stats_get(struct rdp_hs_stats *st)
{
	if (st == NULL)
		return rdp_err_set(EINVAL, "rdp_hs_stats_get: NULL stats");
	st->accepted = __atomic_load_n(&rdp_ctl.nb_accepted, __ATOMIC_RELAXED);
	st->hello_timeouts = __atomic_load_n(&rdp_ctl.nb_hello_timeouts, __ATOMIC_RELAXED);
	st->refused_per_peer = __atomic_load_n(&rdp_ctl.nb_refused_per_peer, __ATOMIC_RELAXED);
	st->waited_for_slot = __atomic_load_n(&rdp_ctl.nb_waited_for_slot, __ATOMIC_RELAXED);
	st->rejected = __atomic_load_n(&rdp_ctl.nb_rejected, __ATOMIC_RELAXED);
	st->auth_failures = __atomic_load_n(&rdp_ctl.nb_auth_failures, __ATOMIC_RELAXED);
	st->in_progress = __atomic_load_n(&rdp_ctl.nb_server_handshakes, __ATOMIC_RELAXED);
	st->waiting = __atomic_load_n(&rdp_ctl.nb_waiting, __ATOMIC_RELAXED);
	st->waiting_max = hs_waiting_max();
	return 0;
}

int
rdp_hs_rejects_get(struct rdp_hs_reject *r, unsigned int max)
{
	unsigned int n = __atomic_load_n(&rdp_ctl.nb_rej_fields, __ATOMIC_ACQUIRE), i;

	if (r == NULL && max > 0)
		return rdp_err_set(EINVAL, "rdp_hs_rejects_get: NULL array");
	n = RTE_MIN(n, max);
	for (i = 0; i < n; i++) {
		memcpy(r[i].field, rdp_ctl.rej_field[i].field, sizeof(r[i].field));
		r[i].count = __atomic_load_n(&rdp_ctl.rej_field[i].count, __ATOMIC_RELAXED);
	}
	return (int)n;
}
