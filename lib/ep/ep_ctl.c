/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control thread: the only thread that makes system calls on behalf of
 * endpoints, and it never waits on one peer. It owns the TCP control
 * sockets (listeners, handshakes, and one socket per established endpoint,
 * kept open to notice a dead peer), the device's asynchronous events, QP
 * creation, and the deadlines of handshakes and drains; it frees
 * endpoints. The handshake itself is in ep_hs.c, the listeners in
 * ep_listen.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_lcore.h>
#include <rte_tailq.h>

#include "rdp_clock.h"
#include "ep_ctl.h"

#define CTL_TICK_MS 10
#define CTL_INBOX 4096

struct ep_ctl rdp_ctl;

void
ctl_push(void *obj, enum ctl_req req, bool wake)
{
	void *item = (void *)((uintptr_t)obj | req);
	uint64_t one = 1;

	RDP_HANDOFF_RELEASE(rdp_ctl.inbox);
	while (rte_ring_mp_enqueue(rdp_ctl.inbox, item) != 0)
		usleep(100);
	if (wake && write(rdp_ctl.wake_fd, &one, sizeof(one)) < 0)
		EP_LOG(WARNING, "cannot wake the control thread: %s", strerror(errno));
}

void
ctl_poller_push(struct rdp_ep *ep, enum inbox_tag tag)
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
	ctl_poller_push(ep, TAG_FAIL);
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
/* Sockets and lists                                                      */
/* ---------------------------------------------------------------------- */

void
ctl_watch(struct rdp_ep *ep, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = ep };

	if (epoll_ctl(rdp_ctl.epfd, EPOLL_CTL_MOD, ep->fd, &ev) < 0)
		epoll_ctl(rdp_ctl.epfd, EPOLL_CTL_ADD, ep->fd, &ev);
}

void
ctl_close_fd(struct rdp_ep *ep)
{
	if (ep->fd >= 0) {
		epoll_ctl(rdp_ctl.epfd, EPOLL_CTL_DEL, ep->fd, NULL);
		close(ep->fd);
		ep->fd = -1;
	}
}

/* Its QP's error event no longer waits for the socket's end. */
static void
fatal_unwait(struct rdp_ep *ep)
{
	if (ep->fatal_by != 0) {
		ep->fatal_by = 0;
		rdp_ctl.fatal_waits--;
	}
}

/* Off the drain deadlines' list (closed while established), if on it. */
static void
drain_unlist(struct rdp_ep *ep)
{
	if (ep->drain_listed) {
		TAILQ_REMOVE(&rdp_ctl.drains, ep, drain_next);
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
	fatal_unwait(ep);
	drain_unlist(ep);
	ctl_close_fd(ep);
	TAILQ_REMOVE(&rdp_ctl.established, ep, ctl_next);
	ep->ctl_list = CTL_NONE;
	ep->ctl_err = err;
	poller_push_fail(ep);
}

/* Has the peer ended socket @p fd (end of file or an error waiting)? */
static bool
socket_ended(int fd)
{
	uint8_t b;
	ssize_t n = recv(fd, &b, 1, MSG_DONTWAIT | MSG_PEEK);

	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* An established endpoint's socket: any event means the peer is gone or broken. */
static void
est_event(struct rdp_ep *ep)
{
	uint8_t b;
	ssize_t n = recv(ep->fd, &b, 1, MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	/*
	 * Closed by the peer is how either side's close ends; the poller logs
	 * the failure it makes unless a close notice turns it into a close
	 * (ep_fail_ctl(), ep_peer_closed()). Bytes or an error are news.
	 */
	EP_LOG_AT(n == 0 ? RTE_LOG_INFO : RTE_LOG_NOTICE,
		  "endpoint %u: control connection to %s %s", ep->id, ep->peer,
		  n == 0 ? "closed by the peer" : n > 0 ? "carried unexpected bytes" :
		  strerror(errno));
	fail_established(ep, n > 0 ? -EPROTO : -ECONNRESET);
}

/* ---------------------------------------------------------------------- */
/* Requests                                                               */
/* ---------------------------------------------------------------------- */

static void
close_request(struct rdp_ep *ep)
{
	ep->ctl_closing = true;
	if (ep->ctl_list == CTL_HANDSHAKE) {
		ep->closing = true;
		hs_fail(ep, -ECANCELED, "closed by the application");
		return;
	}
	/* the poller owns it (or it failed): it marks it closing, drains and
	 * says CLOSED; its fields are not ours to write any more */
	if (ep->ctl_list == CTL_ESTABLISHED && ep->lc->conf.drain_timeout_ms > 0 &&
	    !ep->drain_listed) {
		/* constant per lcore, not across lcores: the list is scanned */
		ep->deadline_ns = rdp_clock_ns() + ep->lc->conf.drain_timeout_ms * 1000000ull;
		TAILQ_INSERT_TAIL(&rdp_ctl.drains, ep, drain_next);
		ep->drain_listed = true;
	}
	ctl_poller_push(ep, TAG_CLOSE);
}

/* Its poller retired it: the control thread lets go of its socket. */
static void
retire(struct rdp_ep *ep)
{
	fatal_unwait(ep);
	drain_unlist(ep);
	if (ep->ctl_list == CTL_ESTABLISHED) {
		TAILQ_REMOVE(&rdp_ctl.established, ep, ctl_next);
	} else if (ep->ctl_list == CTL_HANDSHAKE) {
		/* the poller retires an endpoint only after its handover, which
		 * ends the handshake: a bug, but no deadline may find it freed */
		EP_LOG(ERR, "endpoint %u retired by its poller during its handshake", ep->id);
		TAILQ_REMOVE(&rdp_ctl.handshakes, ep, ctl_next);
	}
	ep->ctl_list = CTL_NONE;
	ctl_close_fd(ep);
	/* its poller destroyed the QP: it owns the QP's CQ */
	if (ep->cq_reserved > 0)
		rdp_poller_unreserve(ep->lc->poller, ep->ld->idx, ep->cq_reserved);
	ep->cq_reserved = 0;
	ep_unref(ep); /* the engine's reference */
}

/*
 * Its poller saw its QP fail before the handover. If the handshake still
 * runs, it fails now (and hands the endpoint over for the flush); if it
 * ended meanwhile, the handover already queued carries the error.
 */
static void
handshake_qp_failed(struct rdp_ep *ep)
{
	if (ep->ctl_list != CTL_HANDSHAKE)
		return;
	hs_fail(ep, ep->early_err, "its QP went to error during the handshake");
}

/*
 * One burst of requests; true when there may be more. A burst is short so
 * that the sockets are served between bursts: an application's burst of
 * rdp_connect() calls (each creating its QP first) sends each HELLO soon
 * after its connect, as a server's hello_timeout_ms expects, instead of
 * after the last connect.
 */
static bool
serve_inbox(void)
{
	void *items[8];
	unsigned int n, i;

	n = rte_ring_sc_dequeue_burst(rdp_ctl.inbox, items, RTE_DIM(items), NULL);
	if (n > 0) {
		RDP_HANDOFF_ACQUIRE(rdp_ctl.inbox);
		for (i = 0; i < n; i++) {
			void *obj = (void *)((uintptr_t)items[i] & ~(uintptr_t)7);

			switch ((enum ctl_req)((uintptr_t)items[i] & 7)) {
			case REQ_CONNECT:
				hs_start_connect(obj);
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
				ctl_listener_add(obj);
				break;
			case REQ_UNLISTEN:
				ctl_unlisten_serve(obj);
				break;
			case REQ_HS_QP_ERR:
				handshake_qp_failed(obj);
				break;
			}
		}
	}
	return n == RTE_DIM(items);
}

static void
expire_handshakes(void)
{
	uint64_t now = rdp_clock_ns();
	struct rdp_ep *ep;

	/*
	 * One at a time from the start: a handshake that ends can start one
	 * that waited for its slot, or end another, so no saved next is safe.
	 */
again:
	TAILQ_FOREACH(ep, &rdp_ctl.handshakes, ctl_next)
		if (now > ep->deadline_ns || (ep->is_server && ep->hs == HS_RECV_HELLO &&
					      now > ep->hello_deadline_ns)) {
			hs_expire(ep, now);
			goto again;
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

	RTE_TAILQ_FOREACH_SAFE(ep, &rdp_ctl.drains, drain_next, next) {
		if (now <= ep->deadline_ns)
			continue;
		EP_LOG(WARNING, "endpoint %u (peer %s, lcore %u): its drain did not end within "
		       "drain_timeout_ms = %u (the peer returned no credit): giving up, what "
		       "was not sent is reported failed", ep->id, ep->peer, ep->lc->lcore_id,
		       ep->lc->conf.drain_timeout_ms);
		fail_established(ep, -ETIMEDOUT);
	}
}

/* Established endpoints whose QP's error event came and whose socket stayed up. */
static void
expire_fatals(void)
{
	uint64_t now;
	struct rdp_ep *ep, *next;

	if (rdp_ctl.fatal_waits == 0)
		return;
	now = rdp_clock_ns();
	RTE_TAILQ_FOREACH_SAFE(ep, &rdp_ctl.established, ctl_next, next) {
		if (ep->fatal_by == 0 || now <= ep->fatal_by)
			continue;
		/*
		 * At INFO: the peer's QP goes when its close ends, which may be
		 * before this endpoint's poller has delivered the close notice,
		 * and the poller logs the failure this makes if no close notice
		 * turns it into a close
		 */
		EP_LOG(INFO, "endpoint %u: its QP went to error (device event)", ep->id);
		fail_established(ep, -EIO);
	}
}

/* Events of device @p dv: a port that goes down fails its endpoints only. */
static void
device_events(const struct ep_dev *dv)
{
	struct rdp_event ev;
	struct rdp_ep *ep, *next;

	while (rdp_dev_event_get(dv->dev, &ev) == 0) {
		switch (ev.type) {
		case RDP_EVENT_QP_FATAL:
			/* the event may name a QP destroyed since it was queued: never
			 * dereference it, look for the established endpoint that has it */
			TAILQ_FOREACH(ep, &rdp_ctl.established, ctl_next)
				if (ev.qp != NULL &&
				    __atomic_load_n(&ep->qp, __ATOMIC_ACQUIRE) == ev.qp)
					break;
			if (ep != NULL && ep->fatal_by == 0) {
				/*
				 * A peer that died closed its socket as its QP went:
				 * what ends the socket says so (est_event()); a QP
				 * error with the socket alive fails the endpoint after
				 * EP_FATAL_WAIT_MS (expire_fatals()).
				 */
				if (socket_ended(ep->fd)) {
					est_event(ep);
					break;
				}
				ep->fatal_by = rdp_clock_ns() + EP_FATAL_WAIT_MS * 1000000ull;
				rdp_ctl.fatal_waits++;
			}
			break;
		case RDP_EVENT_CQ_ERR:
			EP_LOG(ERR, "a CQ overran: completions were lost (a budget bug)");
			break;
		case RDP_EVENT_PORT_ERR:
		case RDP_EVENT_DEVICE_FATAL:
			EP_LOG(ERR, "device %s: %s: failing its endpoints", dv->attr.name,
			       ev.type == RDP_EVENT_PORT_ERR ? "port down" : "device fatal");
			for (ep = TAILQ_FIRST(&rdp_ctl.established); ep != NULL; ep = next) {
				next = TAILQ_NEXT(ep, ctl_next);
				if (ep->ld->dv == dv)
					fail_established(ep, -ENETDOWN);
			}
			break;
		case RDP_EVENT_PORT_ACTIVE:
			EP_LOG(NOTICE, "device %s: port active", dv->attr.name);
			break;
		case RDP_EVENT_SRQ_LIMIT:
			break; /* the endpoints make no SRQ (yet) */
		}
	}
}

static void *
ctl_main(void *arg)
{
	struct epoll_event evs[64];
	bool more = false;
	int n, i;

	RTE_SET_USED(arg);
	while (!__atomic_load_n(&rdp_ctl.stop, __ATOMIC_ACQUIRE)) {
		/* requests left in the inbox: look at the sockets, do not sleep */
		n = epoll_wait(rdp_ctl.epfd, evs, RTE_DIM(evs), more ? 0 : CTL_TICK_MS);
		for (i = 0; i < n; i++) {
			void *obj = (void *)((uintptr_t)evs[i].data.ptr & ~(uintptr_t)7);
			uint64_t v;

			switch ((enum ctl_obj)((uintptr_t)evs[i].data.ptr & 7)) {
			case OBJ_WAKE:
				if (read(rdp_ctl.wake_fd, &v, sizeof(v)) < 0)
					break;
				break;
			case OBJ_LISTENER:
				ctl_accept(obj);
				break;
			case OBJ_DEVICE:
				device_events(obj);
				break;
			case OBJ_QP_CONNECT:
				hs_qp_connect_event(obj);
				break;
			case OBJ_EP: {
				struct rdp_ep *ep = obj;

				if (ep->fd < 0 || ep->ctl_list == CTL_NONE)
					break; /* closed earlier in this batch */
				if (ep->ctl_list == CTL_ESTABLISHED)
					est_event(ep);
				else
					hs_event(ep, evs[i].events);
				break;
			}
			}
		}
		more = serve_inbox();
		expire_handshakes();
		expire_drains();
		expire_fatals();
	}
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* Entry points                                                           */
/* ---------------------------------------------------------------------- */

int
ctl_connect(struct rdp_ep *ep, const char *hostport)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int ret;

	/* check the address now so the caller hears about typos directly */
	ret = ctl_resolve(hostport, false, &ss, &sl);
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
	unsigned int d;
	int ret;

	memset(&rdp_ctl, 0, sizeof(rdp_ctl));
	TAILQ_INIT(&rdp_ctl.handshakes);
	TAILQ_INIT(&rdp_ctl.established);
	TAILQ_INIT(&rdp_ctl.drains);
	TAILQ_INIT(&rdp_ctl.listeners);
	rdp_ctl.inbox = rdp_mem_zalloc(sz, -1);
	if (rdp_ctl.inbox == NULL || rte_ring_init(rdp_ctl.inbox, name, CTL_INBOX, RING_F_SC_DEQ) != 0)
		return rdp_err_set(ENOMEM, "control thread: cannot create its inbox");
	rdp_ctl.inbox_mem = sz;
	rdp_ctl.epfd = epoll_create1(EPOLL_CLOEXEC);
	rdp_ctl.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (rdp_ctl.epfd < 0 || rdp_ctl.wake_fd < 0)
		return rdp_err_set(errno, "control thread: %s", strerror(errno));
	ev.data.ptr = (void *)(uintptr_t)OBJ_WAKE;
	epoll_ctl(rdp_ctl.epfd, EPOLL_CTL_ADD, rdp_ctl.wake_fd, &ev);
	for (d = 0; d < rdp_rt.nb_devs; d++) {
		int fd = rdp_dev_event_fd(rdp_rt.devs[d].dev);

		if (fd < 0)
			continue;
		ev.data.ptr = (void *)((uintptr_t)&rdp_rt.devs[d] | OBJ_DEVICE);
		epoll_ctl(rdp_ctl.epfd, EPOLL_CTL_ADD, fd, &ev);
	}
	ret = rte_ctrl_thread_create(&rdp_ctl.thread, "rdp-ctl", NULL, ctl_main, NULL);
	if (ret != 0)
		return rdp_err_set(ret, "cannot start the control thread: %s", strerror(ret));
	rdp_ctl.running = true;
	return 0;
}

void
ctl_stop(void)
{
	struct listener *l;

	if (!rdp_ctl.running)
		return;
	__atomic_store_n(&rdp_ctl.stop, true, __ATOMIC_RELEASE);
	pthread_join(rdp_ctl.thread, NULL);
	rdp_ctl.running = false;
	while (serve_inbox())
		;
	while ((l = TAILQ_FIRST(&rdp_ctl.listeners)) != NULL) {
		TAILQ_REMOVE(&rdp_ctl.listeners, l, next);
		close(l->fd);
		free(l);
	}
	close(rdp_ctl.wake_fd);
	close(rdp_ctl.epfd);
	rdp_mem_free(rdp_ctl.inbox, rdp_ctl.inbox_mem);
}
