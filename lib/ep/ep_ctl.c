/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control thread: the only thread that blocks. It owns the TCP control
 * sockets (listeners, handshakes, and one socket per endpoint kept open to
 * notice a dead peer), the device's asynchronous events, QP creation and
 * destruction. Pollers never see an endpoint before its QP can send, and
 * hand it back here for destruction.
 *
 * Handshake (all messages RDP_HELLO_LEN bytes, see rdp_hello.h):
 *   client: QP to INIT, receives posted, HELLO ->
 *   server: checks, QP to RTS, receives posted, <- HELLO_ACK
 *   client: checks, QP to RTS, READY ->   (client admitted to its poller)
 *   server: admitted to its poller on READY, so it never sends to a QP
 *           that is not ready to receive.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rte_lcore.h>

#include <sodium.h>

#include "rdp_clock.h"
#include "ep_private.h"

/* epoll data: pointers tagged in their low bits */
enum ctl_obj {
	OBJ_EP = 0,
	OBJ_LISTENER = 1,
	OBJ_WAKE = 2,
	OBJ_DEVICE = 3,
};

/* control inbox items (tagged endpoint or listener pointers) */
enum ctl_req {
	REQ_CONNECT = 0,
	REQ_CLOSE = 1,
	REQ_RETIRE = 2,
	REQ_RELEASE = 3,
	REQ_LISTEN = 4,
	REQ_HS_QP_ERR = 5,
	REQ_UNLISTEN = 6,
};

struct listener {
	TAILQ_ENTRY(listener) next;
	int fd;
	int port;
	struct rdp_ep_params prm;
	char addr[128];
} __rte_aligned(8);

/* rdp_listen_close(): the caller waits on it until the control thread is done */
struct unlisten_req {
	int port;
	unsigned int closed;  /* listeners closed */
	bool done;
} __rte_aligned(8);

#define CTL_TICK_MS 10
#define CTL_INBOX 4096

static struct {
	pthread_t thread;
	bool running;
	bool stop;
	int epfd;
	int wake_fd;
	int dev_fd;
	struct rte_ring *inbox;
	size_t inbox_mem;
	TAILQ_HEAD(, rdp_ep) handshakes;
	TAILQ_HEAD(, rdp_ep) established;
	TAILQ_HEAD(, rdp_ep) drains;  /* closed while established, by deadline */
	TAILQ_HEAD(, listener) listeners;
	unsigned int nb_server_handshakes;
	bool accept_paused;   /* at max_handshakes: listeners not watched */
} ctl;

static void
ctl_push(void *obj, enum ctl_req req, bool wake)
{
	void *item = (void *)((uintptr_t)obj | req);
	uint64_t one = 1;

	RDP_HANDOFF_RELEASE(ctl.inbox);
	while (rte_ring_mp_enqueue(ctl.inbox, item) != 0)
		usleep(100);
	if (wake && write(ctl.wake_fd, &one, sizeof(one)) < 0)
		EP_LOG(WARNING, "cannot wake the control thread: %s", strerror(errno));
}

static void
poller_push(struct rdp_ep *ep, enum inbox_tag tag)
{
	void *item = tag_ptr(ep, tag);

	while (rdp_poller_inbox_put(ep->lc->poller, &item, 1) != 1)
		usleep(10);
}

/*
 * Hand an established endpoint's failure (ctl_err) to its poller. The
 * queued item holds a reference until the poller took it: in the meantime
 * the poller may drop every other one, and the endpoint must not be freed
 * under the item.
 */
static void
poller_push_fail(struct rdp_ep *ep)
{
	atomic_fetch_add(&ep->refs, 1);
	poller_push(ep, TAG_FAIL);
}

void
ctl_retire(struct rdp_ep *ep)
{
	ctl_push(ep, REQ_RETIRE, false);
}

void
ctl_release(struct rdp_ep *ep)
{
	ctl_push(ep, REQ_RELEASE, false);
}

void
ctl_handshake_qp_failed(struct rdp_ep *ep)
{
	ctl_push(ep, REQ_HS_QP_ERR, true);
}

/* ---------------------------------------------------------------------- */
/* Addresses                                                              */
/* ---------------------------------------------------------------------- */

/* Split "host:port" or "[v6]:port"; resolve with getaddrinfo. */
static int
resolve(const char *hostport, bool passive, struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	char host[128];
	const char *colon, *port;
	size_t hl;
	int ret;

	if (hostport == NULL || hostport[0] == '\0')
		return rdp_err_set(EINVAL, "empty address (expected host:port)");
	if (hostport[0] == '[') {
		const char *end = strchr(hostport, ']');

		if (end == NULL || end[1] != ':')
			return rdp_err_set(EINVAL, "address '%s': expected [ipv6]:port", hostport);
		hl = end - hostport - 1;
		if (hl >= sizeof(host))
			return rdp_err_set(EINVAL, "address '%s': host too long", hostport);
		memcpy(host, hostport + 1, hl);
		port = end + 2;
	} else {
		colon = strrchr(hostport, ':');
		if (colon == NULL)
			return rdp_err_set(EINVAL, "address '%s': expected host:port", hostport);
		hl = colon - hostport;
		if (hl >= sizeof(host))
			return rdp_err_set(EINVAL, "address '%s': host too long", hostport);
		memcpy(host, hostport, hl);
		port = colon + 1;
	}
	host[hl] = '\0';
	if (passive)
		hints.ai_flags = AI_PASSIVE;
	ret = getaddrinfo(hl > 0 ? host : NULL, port, &hints, &res);
	if (ret != 0)
		return rdp_err_set(EINVAL, "address '%s': %s", hostport, gai_strerror(ret));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static void
peer_name(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned int port = 0;

	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *in = (struct sockaddr_in *)&ss;

			inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
			port = ntohs(in->sin_port);
		} else if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

			inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
			port = ntohs(in6->sin6_port);
		}
	}
	snprintf(buf, len, ss.ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", host, port);
}

/* ---------------------------------------------------------------------- */
/* Endpoint setup and teardown (control thread)                           */
/* ---------------------------------------------------------------------- */

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

	ret = rdp_poller_reserve(ep->lc->poller, budget);
	if (ret < 0)
		return ret;
	ep->cq_reserved = budget;
	ret = rdp_poller_slot_alloc(ep->lc->poller, ep);
	if (ret < 0)
		return ret;
	ep->slot = (uint32_t)ret;
	snprintf(name, sizeof(name), "rx_ep%u", ep->id);
	ep->recv_pool = rdp_pool_create(name, rdp_rt.pd, lc->credit.rq_size, lc->conf.buf_size,
					ep->lc->socket, RDP_ACCESS_LOCAL_WRITE);
	if (ep->recv_pool == NULL)
		return -rte_errno;
	tracks = rte_align32pow2(lc->credit.sq_size + 1);
	ep->track = calloc(tracks, sizeof(*ep->track));
	if (ep->track == NULL)
		return rdp_err_set(ENOMEM, "endpoint %u: out of memory", ep->id);
	ep->track_mask = tracks - 1;
	ia.send_cq = ia.recv_cq = rdp_poller_cq(ep->lc->poller);
	/* S for the protocol, one more for the drain marker of a teardown */
	ia.cap.max_send_wr = lc->credit.sq_size + 1;
	ia.cap.max_recv_wr = lc->credit.rq_size;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = ep->lc->max_inline;
	ia.user_ctx = ep;
	/* the peer writes into this endpoint's receive buffers and nothing else */
	ia.peer_mrs = &ep->recv_pool->mr;
	ia.nb_peer_mrs = 1;
	ep->qp = rdp_qp_create(rdp_rt.pd, &ia);
	if (ep->qp == NULL)
		return -rte_errno;
	ep->qp_made = true;
	ret = rdp_qp_modify(ep->qp, &init, RDP_QP_ATTR_STATE);
	if (ret < 0)
		return ret;
	ret = ep_post_initial_recvs(ep);
	if (ret < 0)
		return ret;
	ep->max_inline = ep->lc->max_inline;
	ep->err_seq = UINT64_MAX;
	return rdp_qp_local_addr(ep->qp, &ep->local_hello.qp);
}

/* What we announce, before any resource exists (the QP address comes later). */
static void
hello_local(struct rdp_ep *ep)
{
	const struct ep_lcore *lc = ep->lc;
	struct rdp_hello *h = &ep->local_hello;

	memset(h, 0, sizeof(*h));
	h->credit = lc->credit;
	h->buf_size = lc->conf.buf_size;
	h->max_msg_size = lc->conf.max_msg_size;
	h->link_layer = rdp_rt.attr.link_layer;
	h->qp.mtu = rdp_rt.attr.active_mtu;
	snprintf(h->driver, sizeof(h->driver), "%s", rdp_rt.attr.driver);
	if (rdp_rt.auth) {
		h->flags |= RDP_HELLO_F_AUTH;
		randombytes_buf(h->nonce, sizeof(h->nonce));
	}
}

/* Agree with the peer, then move the QP to RTS towards it. */
static int
connect_qp(struct rdp_ep *ep, const struct rdp_hello *peer, char *why, size_t len)
{
	const struct ep_lcore *lc = ep->lc;
	struct rdp_hello_agreed agreed;
	struct rdp_qp_attr attr = { .remote = peer->qp, .conn = lc->conn };
	int ret;

	ret = rdp_hello_negotiate(&ep->local_hello, peer, &agreed, why, len);
	if (ret < 0)
		return ret;
	ret = rdp_credit_init(&ep->credit, &lc->credit, &peer->credit, why, len);
	if (ret < 0)
		return ret;
	ep->chunk_size = agreed.chunk_size;
	ep->max_send_msg = agreed.max_msg_size;
	ep->frame = (struct ep_frame){ .chunk_size = agreed.chunk_size,
				       .max_msg = lc->conf.max_msg_size };
	attr.conn.path_mtu = agreed.path_mtu;
	attr.state = RDP_QPS_RTR;
	ret = rdp_qp_modify(ep->qp, &attr, RDP_QP_ATTR_STATE | RDP_QP_ATTR_REMOTE |
			    RDP_QP_ATTR_CONN);
	if (ret == 0) {
		attr.state = RDP_QPS_RTS;
		ret = rdp_qp_modify(ep->qp, &attr, RDP_QP_ATTR_STATE | RDP_QP_ATTR_CONN);
	}
	if (ret < 0) {
		snprintf(why, len, "cannot connect the QP: %s", rdp_err_msg());
		return ret;
	}
	/*
	 * The poller may reap this QP's first completions before the
	 * handover, and reads the state set above. The peer sends nothing
	 * before our next handshake message, so the order holds, but it runs
	 * through the peer, often another process, where ThreadSanitizer
	 * cannot follow it: say it here (ep_complete() acquires).
	 */
	RDP_HANDOFF_RELEASE(ep);
	return 0;
}

static void
watch(struct rdp_ep *ep, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = ep };

	if (epoll_ctl(ctl.epfd, EPOLL_CTL_MOD, ep->fd, &ev) < 0)
		epoll_ctl(ctl.epfd, EPOLL_CTL_ADD, ep->fd, &ev);
}

static void
close_fd(struct rdp_ep *ep)
{
	if (ep->fd >= 0) {
		epoll_ctl(ctl.epfd, EPOLL_CTL_DEL, ep->fd, NULL);
		close(ep->fd);
		ep->fd = -1;
	}
}

/* Off the drain deadlines' list (closed while established), if on it. */
static void
drain_unlist(struct rdp_ep *ep)
{
	if (ep->drain_listed) {
		TAILQ_REMOVE(&ctl.drains, ep, drain_next);
		ep->drain_listed = false;
	}
}

/*
 * An established endpoint's failure seen by the control thread (@p err:
 * its control connection, a device event, its drain deadline): the control
 * side lets it go and its poller tears it down. A failed endpoint has no
 * drain left to time.
 */
static void
fail_established(struct rdp_ep *ep, int err)
{
	drain_unlist(ep);
	close_fd(ep);
	TAILQ_REMOVE(&ctl.established, ep, ctl_next);
	ep->hs = HS_NONE;
	ep->ctl_err = err;
	poller_push_fail(ep);
}

static void listeners_watch(bool on);

static void
hs_remove(struct rdp_ep *ep)
{
	TAILQ_REMOVE(&ctl.handshakes, ep, ctl_next);
	if (ep->is_server) {
		ctl.nb_server_handshakes--;
		listeners_watch(true); /* a slot is free: waiting peers go on */
	}
}

/* The handshake failed: tell the peer if we can, then tear down. */
static void
hs_fail(struct rdp_ep *ep, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
hs_fail(struct rdp_ep *ep, int err, const char *fmt, ...)
{
	struct rdp_hello rej = { .type = RDP_HELLO_REJECT };
	uint8_t buf[RDP_HELLO_LEN];
	char why[RDP_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (err != -ECANCELED)
		EP_LOG(WARNING, "handshake %s peer %s failed: %s",
		       ep->is_server ? "from" : "to", ep->peer, why);
	if (ep->fd >= 0 && (err == -EPROTO || err == -EACCES)) {
		/* best effort: a peer that speaks our protocol learns why */
		memcpy(rej.reason, why, RTE_MIN(strlen(why), sizeof(rej.reason) - 1));
		rdp_hello_encode(&rej, buf);
		if (send(ep->fd, buf, sizeof(buf), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			EP_LOG(DEBUG, "reject to %s not sent: %s", ep->peer, strerror(errno));
	}
	close_fd(ep);
	hs_remove(ep);
	ep->hs = HS_NONE;
	ep->err = err;
	/*
	 * Not ep->qp: the poller clears it when it retires the endpoint, which
	 * it may have done already (an error completion) without our knowing.
	 */
	if (ep->qp_made || ep->app_visible) {
		/* the poller drains posted receives and reports to the application */
		poller_push(ep, TAG_ADMIT);
		return;
	}
	/* a server endpoint nobody knew about, with nothing posted */
	if (ep->slot != UINT32_MAX)
		rdp_poller_slot_free(ep->lc->poller, ep->slot);
	ep_unref(ep);
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
	watch(ep, EPOLLOUT);
}

static void
admit(struct rdp_ep *ep)
{
	hs_remove(ep);
	ep->hs = HS_DONE;
	TAILQ_INSERT_TAIL(&ctl.established, ep, ctl_next);
	/* from now on the socket only tells us when the peer goes away */
	watch(ep, EPOLLIN | EPOLLRDHUP);
	poller_push(ep, TAG_ADMIT);
}

static void
after_send(struct rdp_ep *ep)
{
	ep->hs = ep->hs_after_send;
	if (ep->hs == HS_DONE) {
		admit(ep);
		return;
	}
	ep->in_len = 0;
	watch(ep, EPOLLIN | EPOLLRDHUP);
}

static void
on_hello(struct rdp_ep *ep, const struct rdp_hello *peer)
{
	struct rdp_hello ack;
	char why[RDP_ERR_MSG_MAX];
	int ret;

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
	ret = setup_qp(ep);
	if (ret < 0) {
		hs_fail(ep, -EPROTO, "%s", rdp_err_msg());
		return;
	}
	ret = connect_qp(ep, peer, why, sizeof(why));
	if (ret < 0) {
		hs_fail(ep, -EPROTO, "%s", why);
		return;
	}
	ack = ep->local_hello;
	ack.type = RDP_HELLO_ACK;
	hs_send(ep, &ack, HS_RECV_READY, ep->hello_s);
	if (rdp_rt.auth)
		rdp_hello_auth(rdp_rt.auth_key, "rdp-ack", ep->hello_c, ep->hello_s,
			       ep->out_buf + RDP_HELLO_MAC_OFFSET);
}

static void
on_ack(struct rdp_ep *ep, const struct rdp_hello *peer)
{
	struct rdp_hello ready = { .type = RDP_HELLO_READY };
	char why[RDP_ERR_MSG_MAX];

	if (peer->type == RDP_HELLO_REJECT) {
		hs_fail(ep, -ECONNREFUSED, "peer refused: %s", peer->reason);
		return;
	}
	if (peer->type != RDP_HELLO_ACK) {
		hs_fail(ep, -EPROTO, "expected HELLO_ACK, got message type %u", peer->type);
		return;
	}
	if (rdp_rt.auth) {
		uint8_t mac[RDP_HELLO_MAC_LEN];

		if (!(peer->flags & RDP_HELLO_F_AUTH)) {
			hs_fail(ep, -EACCES, "the server did not authenticate (it has no "
				"shared secret)");
			return;
		}
		rdp_hello_auth(rdp_rt.auth_key, "rdp-ack", ep->hello_c, ep->in_buf, mac);
		if (!rdp_hello_mac_equal(mac, peer->mac)) {
			hs_fail(ep, -EACCES, "the server failed authentication (another "
				"shared secret)");
			return;
		}
		rdp_hello_auth(rdp_rt.auth_key, "rdp-ready", ep->hello_c, ep->in_buf,
			       ready.mac);
	}
	if (connect_qp(ep, peer, why, sizeof(why)) < 0) {
		hs_fail(ep, -EPROTO, "%s", why);
		return;
	}
	hs_send(ep, &ready, HS_DONE, NULL);
}

/* Bytes arrived on a handshake socket. */
static void
hs_readable(struct rdp_ep *ep)
{
	struct rdp_hello peer;
	char why[RDP_ERR_MSG_MAX];
	ssize_t n;
	int ret;

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
	ret = rdp_hello_decode(ep->in_buf, ep->in_len, &peer, why, sizeof(why));
	if (ret < 0) {
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
		if (peer.type == RDP_HELLO_REJECT) {
			/* the client could not finish its side: its reason is the news */
			hs_fail(ep, -ECONNREFUSED, "peer refused: %s", peer.reason);
		} else if (peer.type != RDP_HELLO_READY) {
			hs_fail(ep, -EPROTO, "expected READY, got message type %u", peer.type);
		} else if (rdp_rt.auth) {
			uint8_t mac[RDP_HELLO_MAC_LEN];

			rdp_hello_auth(rdp_rt.auth_key, "rdp-ready", ep->hello_c, ep->hello_s, mac);
			if (rdp_hello_mac_equal(mac, peer.mac))
				admit(ep);
			else
				hs_fail(ep, -EACCES, "the client failed authentication (another "
					"shared secret)");
		} else {
			admit(ep);
		}
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

/* An established endpoint's socket: any event means the peer is gone or broken. */
static void
est_event(struct rdp_ep *ep)
{
	uint8_t b;
	ssize_t n = recv(ep->fd, &b, 1, MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	EP_LOG(NOTICE, "endpoint %u: control connection to %s %s", ep->id, ep->peer,
	       n == 0 ? "closed by the peer" : n > 0 ? "carried unexpected bytes" :
	       strerror(errno));
	fail_established(ep, n > 0 ? -EPROTO : -ECONNRESET);
}

/* ---------------------------------------------------------------------- */
/* Requests                                                               */
/* ---------------------------------------------------------------------- */

static void
start_connect(struct rdp_ep *ep)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int ret, one = 1;

	TAILQ_INSERT_TAIL(&ctl.handshakes, ep, ctl_next);
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
	ret = resolve(ep->peer, false, &ss, &sl);
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
	watch(ep, EPOLLOUT);
}

/* Watch one listener for connections, or stop. */
static void
listener_watch(struct listener *l, bool on)
{
	struct epoll_event ev = {
		.events = on ? EPOLLIN : 0,
		.data.ptr = (void *)((uintptr_t)l | OBJ_LISTENER),
	};

	epoll_ctl(ctl.epfd, EPOLL_CTL_MOD, l->fd, &ev);
}

/*
 * Stop or resume watching the listeners. At max_handshakes, new
 * connections wait in the kernel's backlog instead of being accepted: a
 * burst of clients is served in turn, and a flood holds no more than the
 * limit of our resources.
 */
static void
listeners_watch(bool on)
{
	struct listener *l;

	if (ctl.accept_paused == !on)
		return;
	ctl.accept_paused = !on;
	TAILQ_FOREACH(l, &ctl.listeners, next)
		listener_watch(l, on);
}

/* A new listener: watched from now on, unless accepting is paused. */
static void
listener_add(struct listener *l)
{
	TAILQ_INSERT_TAIL(&ctl.listeners, l, next);
	if (!ctl.accept_paused)
		listener_watch(l, true);
}

/*
 * Close every listener bound to the port (port 0: every listener); peers
 * still in their handshakes go on.
 */
static void
unlisten(struct unlisten_req *req)
{
	struct listener *l, *next;

	for (l = TAILQ_FIRST(&ctl.listeners); l != NULL; l = next) {
		next = TAILQ_NEXT(l, next);
		if (req->port != 0 && l->port != req->port)
			continue;
		TAILQ_REMOVE(&ctl.listeners, l, next);
		epoll_ctl(ctl.epfd, EPOLL_CTL_DEL, l->fd, NULL);
		close(l->fd);
		EP_LOG(INFO, "listener %s closed", l->addr);
		free(l);
		req->closed++;
	}
	__atomic_store_n(&req->done, true, __ATOMIC_RELEASE);
}

static void
accept_one(struct listener *l)
{
	struct ep_lcore *lc;
	struct rdp_ep *ep;
	int fd, one = 1;

	lc = rt_pick_lcore(l->prm.lcore);
	if (ctl.nb_server_handshakes >= lc->conf.max_handshakes) {
		listeners_watch(false);
		return;
	}
	fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	ep = ep_new(lc, &l->prm, false);
	if (ep == NULL) {
		EP_LOG(ERR, "listener %s: cannot accept: %s", l->addr, rdp_err_msg());
		close(fd);
		return;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	ep->fd = fd;
	ep->is_server = true;
	peer_name(fd, ep->peer, sizeof(ep->peer));
	ep->hs = HS_RECV_HELLO;
	ep->in_len = 0;
	ep->deadline_ns = rdp_clock_ns() + lc->conf.handshake_timeout_ms * 1000000ull;
	TAILQ_INSERT_TAIL(&ctl.handshakes, ep, ctl_next);
	ctl.nb_server_handshakes++;
	watch(ep, EPOLLIN | EPOLLRDHUP);
}

static void
close_request(struct rdp_ep *ep)
{
	if (ep->hs == HS_DONE || ep->hs == HS_NONE) {
		uint32_t ms = ep->lc->conf.drain_timeout_ms;

		/* the poller owns it (or it failed): it marks it closing, drains
		 * and says CLOSED; its fields are not ours to write any more */
		if (ep->hs == HS_DONE && ms > 0 && !ep->drain_listed) {
			/* constant per lcore, not across lcores: the list is scanned */
			ep->deadline_ns = rdp_clock_ns() + ms * 1000000ull;
			TAILQ_INSERT_TAIL(&ctl.drains, ep, drain_next);
			ep->drain_listed = true;
		}
		poller_push(ep, TAG_CLOSE);
		return;
	}
	ep->closing = true;
	hs_fail(ep, -ECANCELED, "closed by the application");
}

static void
retire(struct rdp_ep *ep)
{
	drain_unlist(ep);
	if (ep->hs == HS_DONE) {
		TAILQ_REMOVE(&ctl.established, ep, ctl_next);
	} else if (ep->hs != HS_NONE) {
		/* the poller retires an endpoint only after its handover, which
		 * ends the handshake: a bug, but no deadline may find it freed */
		EP_LOG(ERR, "endpoint %u retired by its poller during its handshake", ep->id);
		hs_remove(ep);
	}
	ep->hs = HS_NONE;
	close_fd(ep);
	/* its poller destroyed the QP: it owns the QP's CQ */
	if (ep->cq_reserved > 0)
		rdp_poller_unreserve(ep->lc->poller, ep->cq_reserved);
	ep->cq_reserved = 0;
	ep_unref(ep); /* the engine's reference */
}

/*
 * Its poller saw its QP fail before the handover. If the handshake still
 * runs, it fails now (and hands the endpoint over for the teardown); if it
 * ended meanwhile, the handover already queued carries the error.
 */
static void
handshake_qp_failed(struct rdp_ep *ep)
{
	if (ep->hs == HS_NONE || ep->hs == HS_DONE)
		return;
	hs_fail(ep, ep->early_err, "its QP went to error during the handshake");
}

static void
serve_inbox(void)
{
	void *items[64];
	unsigned int n, i;

	while ((n = rte_ring_sc_dequeue_burst(ctl.inbox, items, RTE_DIM(items), NULL)) > 0) {
		RDP_HANDOFF_ACQUIRE(ctl.inbox);
		for (i = 0; i < n; i++) {
			void *obj = (void *)((uintptr_t)items[i] & ~(uintptr_t)7);

			switch ((enum ctl_req)((uintptr_t)items[i] & 7)) {
			case REQ_CONNECT:
				start_connect(obj);
				break;
			case REQ_CLOSE:
				close_request(obj);
				break;
			case REQ_RETIRE:
				retire(obj);
				break;
			case REQ_RELEASE:
				ep_free(obj);
				break;
			case REQ_LISTEN:
				listener_add(obj);
				break;
			case REQ_UNLISTEN:
				unlisten(obj);
				break;
			case REQ_HS_QP_ERR:
				handshake_qp_failed(obj);
				break;
			}
		}
	}
}

static void
expire_handshakes(void)
{
	uint64_t now = rdp_clock_ns();
	struct rdp_ep *ep, *next;

	for (ep = TAILQ_FIRST(&ctl.handshakes); ep != NULL; ep = next) {
		next = TAILQ_NEXT(ep, ctl_next);
		if (now > ep->deadline_ns)
			hs_fail(ep, -ETIMEDOUT, "no progress within %u ms (%s)",
				ep->hs == HS_TCP_CONNECT ? ep->lc->conf.connect_timeout_ms :
				ep->lc->conf.handshake_timeout_ms,
				ep->hs == HS_TCP_CONNECT ? "TCP connect" :
				ep->hs == HS_RECV_HELLO ? "waiting for HELLO" :
				ep->hs == HS_RECV_ACK ? "waiting for HELLO_ACK" :
				ep->hs == HS_RECV_READY ? "waiting for READY" : "sending");
	}
}

/*
 * A drain waits for the peer's credits to send what the application
 * queued before its close. A peer that is alive but takes nothing gives
 * none, and the drain would last for ever: past drain_timeout_ms the
 * endpoint fails like one whose peer went away, and what it still holds is
 * reported failed with -ETIMEDOUT.
 */
static void
expire_drains(void)
{
	uint64_t now = rdp_clock_ns();
	struct rdp_ep *ep, *next;

	for (ep = TAILQ_FIRST(&ctl.drains); ep != NULL; ep = next) {
		next = TAILQ_NEXT(ep, drain_next);
		if (now <= ep->deadline_ns)
			continue;
		EP_LOG(WARNING, "endpoint %u (peer %s, lcore %u): its drain did not end within "
		       "drain_timeout_ms = %u (the peer returned no credit): giving up, what "
		       "was not sent is reported failed", ep->id, ep->peer, ep->lc->lcore_id,
		       ep->lc->conf.drain_timeout_ms);
		fail_established(ep, -ETIMEDOUT);
	}
}

static void
device_events(void)
{
	struct rdp_event ev;
	struct rdp_ep *ep;

	while (rdp_dev_event_get(rdp_rt.dev, &ev) == 0) {
		switch (ev.type) {
		case RDP_EVENT_QP_FATAL:
			/* the event may name a QP destroyed since it was queued: never
			 * dereference it, look for the established endpoint that has it */
			TAILQ_FOREACH(ep, &ctl.established, ctl_next)
				if (ev.qp != NULL &&
				    __atomic_load_n(&ep->qp, __ATOMIC_ACQUIRE) == ev.qp)
					break;
			if (ep != NULL) {
				EP_LOG(NOTICE, "endpoint %u: its QP went to error (device event)",
				       ep->id);
				fail_established(ep, -EIO);
			}
			break;
		case RDP_EVENT_CQ_ERR:
			EP_LOG(ERR, "a CQ overran: completions were lost (a budget bug)");
			break;
		case RDP_EVENT_PORT_ERR:
		case RDP_EVENT_DEVICE_FATAL:
			EP_LOG(ERR, "device %s: %s: failing every endpoint", rdp_rt.attr.name,
			       ev.type == RDP_EVENT_PORT_ERR ? "port down" : "device fatal");
			while ((ep = TAILQ_FIRST(&ctl.established)) != NULL)
				fail_established(ep, -ENETDOWN);
			break;
		case RDP_EVENT_PORT_ACTIVE:
			EP_LOG(NOTICE, "device %s: port active", rdp_rt.attr.name);
			break;
		}
	}
}

static void *
ctl_main(void *arg)
{
	struct epoll_event evs[64];
	int n, i;

	RTE_SET_USED(arg);
	while (!__atomic_load_n(&ctl.stop, __ATOMIC_ACQUIRE)) {
		n = epoll_wait(ctl.epfd, evs, RTE_DIM(evs), CTL_TICK_MS);
		for (i = 0; i < n; i++) {
			void *obj = (void *)((uintptr_t)evs[i].data.ptr & ~(uintptr_t)7);
			uint64_t v;

			switch ((enum ctl_obj)((uintptr_t)evs[i].data.ptr & 7)) {
			case OBJ_WAKE:
				if (read(ctl.wake_fd, &v, sizeof(v)) < 0)
					break;
				break;
			case OBJ_LISTENER:
				accept_one(obj);
				break;
			case OBJ_DEVICE:
				device_events();
				break;
			case OBJ_EP: {
				struct rdp_ep *ep = obj;

				if (ep->fd < 0 || ep->hs == HS_NONE)
					break; /* closed earlier in this batch */
				if (ep->hs == HS_DONE)
					est_event(ep);
				else if (evs[i].events & EPOLLOUT)
					hs_writable(ep);
				else
					hs_readable(ep);
				break;
			}
			}
		}
		serve_inbox();
		expire_handshakes();
		expire_drains();
	}
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* Entry points                                                           */
/* ---------------------------------------------------------------------- */

int
ctl_listen(const char *hostport, const struct rdp_ep_params *prm)
{
	struct sockaddr_storage ss;
	struct epoll_event ev = { .events = 0 }; /* watched once the control thread has it */
	struct listener *l;
	socklen_t sl;
	int fd, ret, one = 1, port;

	ret = resolve(hostport, true, &ss, &sl);
	if (ret < 0)
		return ret;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return rdp_err_set(errno, "listen %s: socket: %s", hostport, strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 128) < 0) {
		ret = rdp_err_set(errno, "listen %s: %s", hostport, strerror(errno));
		close(fd);
		return ret;
	}
	sl = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port :
		     ((struct sockaddr_in *)&ss)->sin_port);
	l = calloc(1, sizeof(*l));
	if (l == NULL) {
		close(fd);
		return rdp_err_set(ENOMEM, "listen %s: out of memory", hostport);
	}
	l->fd = fd;
	l->port = port;
	l->prm = *prm;
	snprintf(l->addr, sizeof(l->addr), "%s", hostport);
	ev.data.ptr = (void *)((uintptr_t)l | OBJ_LISTENER);
	if (epoll_ctl(ctl.epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		ret = rdp_err_set(errno, "listen %s: epoll: %s", hostport, strerror(errno));
		close(fd);
		free(l);
		return ret;
	}
	ctl_push(l, REQ_LISTEN, true);
	return port;
}

int
ctl_unlisten(int port)
{
	struct unlisten_req req = { .port = port };

	ctl_push(&req, REQ_UNLISTEN, true);
	while (!__atomic_load_n(&req.done, __ATOMIC_ACQUIRE))
		usleep(100);
	if (req.closed == 0 && port != 0)
		return rdp_err_set(ENOENT, "rdp_listen_close: no listener on port %d", port);
	return 0;
}

int
ctl_connect(struct rdp_ep *ep, const char *hostport)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int ret;

	/* check the address now so the caller hears about typos directly */
	ret = resolve(hostport, false, &ss, &sl);
	if (ret < 0)
		return ret;
	snprintf(ep->peer, sizeof(ep->peer), "%s", hostport);
	ctl_push(ep, REQ_CONNECT, true);
	return 0;
}

void
ctl_close(struct rdp_ep *ep)
{
	ctl_push(ep, REQ_CLOSE, true);
}

int
ctl_start(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	char name[RTE_RING_NAMESIZE] = "rdp_ctl";
	ssize_t sz = rte_ring_get_memsize(CTL_INBOX);
	int ret;

	memset(&ctl, 0, sizeof(ctl));
	TAILQ_INIT(&ctl.handshakes);
	TAILQ_INIT(&ctl.established);
	TAILQ_INIT(&ctl.drains);
	TAILQ_INIT(&ctl.listeners);
	ctl.inbox = rdp_mem_zalloc(sz, -1);
	if (ctl.inbox == NULL || rte_ring_init(ctl.inbox, name, CTL_INBOX, RING_F_SC_DEQ) != 0)
		return rdp_err_set(ENOMEM, "control thread: cannot create its inbox");
	ctl.inbox_mem = sz;
	ctl.epfd = epoll_create1(EPOLL_CLOEXEC);
	ctl.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ctl.epfd < 0 || ctl.wake_fd < 0)
		return rdp_err_set(errno, "control thread: %s", strerror(errno));
	ev.data.ptr = (void *)(uintptr_t)OBJ_WAKE;
	epoll_ctl(ctl.epfd, EPOLL_CTL_ADD, ctl.wake_fd, &ev);
	ctl.dev_fd = rdp_dev_event_fd(rdp_rt.dev);
	if (ctl.dev_fd >= 0) {
		ev.data.ptr = (void *)(uintptr_t)OBJ_DEVICE;
		epoll_ctl(ctl.epfd, EPOLL_CTL_ADD, ctl.dev_fd, &ev);
	}
	ret = rte_ctrl_thread_create(&ctl.thread, "rdp-ctl", NULL, ctl_main, NULL);
	if (ret != 0)
		return rdp_err_set(ret, "cannot start the control thread: %s", strerror(ret));
	ctl.running = true;
	return 0;
}

void
ctl_stop(void)
{
	struct listener *l;

	if (!ctl.running)
		return;
	__atomic_store_n(&ctl.stop, true, __ATOMIC_RELEASE);
	pthread_join(ctl.thread, NULL);
	ctl.running = false;
	serve_inbox();
	while ((l = TAILQ_FIRST(&ctl.listeners)) != NULL) {
		TAILQ_REMOVE(&ctl.listeners, l, next);
		close(l->fd);
		free(l);
	}
	close(ctl.wake_fd);
	close(ctl.epfd);
	rdp_mem_free(ctl.inbox, ctl.inbox_mem);
}
