/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Listeners and addresses, on the control thread: the application's
 * rdp_listen() binds and hands the socket over, the control thread watches
 * it (or stops, with the waiting room full) and accepts into a server handshake;
 * rdp_listen_close() closes them there and waits until it has.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_tailq.h>

#include "ep_ctl.h"
#include "rdp_clock.h"
#include "rdp_hostport.h"

/* ---------------------------------------------------------------------- */
/* Addresses                                                              */
/* ---------------------------------------------------------------------- */

int
ctl_resolve(const char *hostport, bool passive, struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	char host[128], port[8];
	uint16_t p;
	int ret;

	if (hostport == NULL || hostport[0] == '\0')
		return rdp_err_set(EINVAL, "empty address (expected host:port)");
	ret = rdp_hostport_parse(hostport, passive ? RDP_HOSTPORT_LISTEN : 0, host, sizeof(host),
				 &p);
	if (ret < 0)
		return ret;
	snprintf(port, sizeof(port), "%u", p);
	if (passive)
		hints.ai_flags = AI_PASSIVE;
	ret = getaddrinfo(host[0] != '\0' ? host : NULL, port, &hints, &res);
	if (ret != 0)
		return rdp_err_set(EINVAL, "address '%s': %s", hostport, gai_strerror(ret));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* "host" of an address (no port). */
static void
addr_name(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, host, sizeof(host));
	else if (ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, host,
			  sizeof(host));
	snprintf(buf, len, ss->ss_family == AF_INET6 ? "[%s]" : "%s", host);
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
/* Listeners                                                              */
/* ---------------------------------------------------------------------- */

/* Watch one listener for connections, or stop. */
static void
listener_watch(struct listener *l, bool on)
{
	struct epoll_event ev = {
		.events = on ? EPOLLIN : 0,
		.data.ptr = (void *)((uintptr_t)l | OBJ_LISTENER),
	};

	epoll_ctl(rdp_ctl.epfd, EPOLL_CTL_MOD, l->fd, &ev);
}

/*
 * Stop or resume watching the listeners. With the waiting room full (as
 * many connections without a handshake slot as the lcores' max_endpoints),
 * new connections wait in the kernel's backlog instead of being accepted:
 * a burst of clients is served in turn, and a flood holds no more than the
 * limit of our resources.
 */
void
ctl_listeners_watch(bool on)
{
	struct listener *l;

	if (rdp_ctl.accept_paused == !on)
		return;
	rdp_ctl.accept_paused = !on;
	TAILQ_FOREACH(l, &rdp_ctl.listeners, next)
		listener_watch(l, on);
}

/* A new listener: watched from now on, unless accepting is paused. */
void
ctl_listener_add(struct listener *l)
{
	TAILQ_INSERT_TAIL(&rdp_ctl.listeners, l, next);
	if (!rdp_ctl.accept_paused)
		listener_watch(l, true);
}

/*
 * Close every listener bound to the port (port 0: every listener); peers
 * still in their handshakes go on.
 */
void
ctl_unlisten_serve(struct unlisten_req *req)
{
	struct listener *l, *next;

	RTE_TAILQ_FOREACH_SAFE(l, &rdp_ctl.listeners, next, next) {
		if (req->port != 0 && l->port != req->port)
			continue;
		TAILQ_REMOVE(&rdp_ctl.listeners, l, next);
		epoll_ctl(rdp_ctl.epfd, EPOLL_CTL_DEL, l->fd, NULL);
		close(l->fd);
		EP_LOG(INFO, "listener %s closed", l->addr);
		free(l);
		req->closed++;
	}
	__atomic_store_n(&req->done, true, __ATOMIC_RELEASE);
}

/*
 * Whether @p ss may have another connection: not when handshakes_per_peer
 * of its connections have stalled before their HELLO (past half of
 * hello_timeout_ms: a client sends its HELLO as soon as it is connected).
 * Counted, and said at most once a second.
 */
static bool
peer_admitted(const struct listener *l, const struct ep_lcore *lc,
	      const struct sockaddr_storage *ss)
{
	static uint64_t said_ns;
	uint64_t now = rdp_clock_ns();
	unsigned int slotted, stalled;
	char who[INET6_ADDRSTRLEN + 8];

	hs_peer_count(ss, now, lc->conf.hello_timeout_ms * 1000000ull / 2, &slotted, &stalled);
	if (stalled < lc->conf.handshakes_per_peer)
		return true;
	__atomic_store_n(&rdp_ctl.nb_refused_per_peer, rdp_ctl.nb_refused_per_peer + 1,
			 __ATOMIC_RELAXED);
	if (said_ns == 0 || now - said_ns >= 1000000000ull) {
		said_ns = now;
		addr_name(ss, who, sizeof(who));
		EP_LOG(WARNING, "listener %s: refused a connection from %s: %u of its connections "
		       "have sent no whole HELLO (handshakes_per_peer = %u); %" PRIu64 " refused "
		       "so far", l->addr, who, stalled, lc->conf.handshakes_per_peer,
		       rdp_ctl.nb_refused_per_peer);
	}
	return false;
}

/*
 * The device of a connection accepted on @p fd: the listener's, else the
 * one whose interface holds the address the peer reached (several
 * devices), else the lcore's.
 */
static int
accepted_device(const struct listener *l, const struct ep_lcore *lc, int fd)
{
	struct sockaddr_storage local;
	socklen_t ll = sizeof(local);

	if (l->dev >= 0)
		return l->dev;
	if (rdp_rt.nb_devs > 1 && getsockname(fd, (struct sockaddr *)&local, &ll) == 0)
		return rt_pick_device(lc, NULL, (struct sockaddr *)&local);
	return (int)lc->dflt;
}

void
ctl_accept(struct listener *l)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct ep_lcore *lc;
	struct rdp_ep *ep;
	int fd;

	lc = rt_pick_lcore(l->prm.lcore);
	/* the waiting room is full: the rest wait in the kernel's backlog */
	if (rdp_ctl.nb_waiting >= hs_waiting_max()) {
		ctl_listeners_watch(false);
		return;
	}
	fd = accept4(l->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	__atomic_store_n(&rdp_ctl.nb_accepted, rdp_ctl.nb_accepted + 1, __ATOMIC_RELAXED);
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = 0;
	else if (ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&ss)->sin6_port = 0;
	if (!peer_admitted(l, lc, &ss)) {
		close(fd);
		return;
	}
	ep = ep_new(lc, (unsigned int)accepted_device(l, lc, fd), &l->prm, false);
	if (ep == NULL) {
		EP_LOG(ERR, "listener %s: cannot accept: %s", l->addr, rdp_err_msg());
		close(fd);
		return;
	}
	peer_name(fd, ep->peer, sizeof(ep->peer));
	ep->peer_ss = ss;
	hs_start_accept(ep, fd);
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

	ret = ctl_resolve(hostport, true, &ss, &sl);
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
	/* the name is the application's: keep the index it names */
	l->dev = prm->device != NULL && prm->device[0] != '\0' ?
		 rt_pick_device(rdp_rt.lcores[rdp_rt.order[0]], prm->device, NULL) : -1;
	l->prm.device = NULL;
	snprintf(l->addr, sizeof(l->addr), "%s", hostport);
	ev.data.ptr = (void *)((uintptr_t)l | OBJ_LISTENER);
	if (epoll_ctl(rdp_ctl.epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
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
