/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_EP_CTL_H
#define RDP_EP_CTL_H

/*
 * The control thread's state, shared by its loop (ep_ctl.c) and the
 * handshake (ep_hs.c). Everything here is touched by the control thread
 * only, except the inbox (a multi-producer ring) and the wake-up eventfd.
 */

#include <sys/queue.h>

#include "ep_private.h"

/* epoll data: pointers tagged in their low bits */
enum ctl_obj {
	OBJ_EP = 0,       /* an endpoint's control socket */
	OBJ_LISTENER = 1,
	OBJ_WAKE = 2,
	OBJ_DEVICE = 3,
	OBJ_QP_CONNECT = 4, /* an endpoint's QP connecting (the driver's descriptor) */
};

struct listener {
	TAILQ_ENTRY(listener) next;
	int fd;
	int port;
	struct rdp_ep_params prm;
	char addr[128];
} __rte_aligned(8);

struct ep_ctl {
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
};

extern struct ep_ctl rdp_ctl;

/* Watch an endpoint's control socket for @p events (EPOLLIN, EPOLLOUT...). */
void ctl_watch(struct rdp_ep *ep, uint32_t events);
/* Stop watching and close an endpoint's control socket. */
void ctl_close_fd(struct rdp_ep *ep);
/* Hand an endpoint to its poller (TAG_ADMIT, TAG_CLOSE). */
void ctl_poller_push(struct rdp_ep *ep, enum inbox_tag tag);
/* Stop or resume watching the listeners (the handshake limit). */
void ctl_listeners_watch(bool on);
/* Split "host:port" and resolve it. */
int ctl_resolve(const char *hostport, bool passive, struct sockaddr_storage *ss,
		socklen_t *len);

/* ---- the handshake (ep_hs.c) ---- */
/* Start a client's handshake (REQ_CONNECT). */
void hs_start_connect(struct rdp_ep *ep);
/* Start a server's handshake on an accepted socket. */
void hs_start_accept(struct rdp_ep *ep, int fd);
/* An event on a handshake's socket. */
void hs_event(struct rdp_ep *ep, uint32_t events);
/* The driver's QP connect has news (OBJ_QP_CONNECT). */
void hs_qp_connect_event(struct rdp_ep *ep);
/* The handshake failed: tell the peer if it can, then hand it over or free it. */
void hs_fail(struct rdp_ep *ep, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* What a handshake waits for, for the timeout's message. */
const char *hs_waiting_for(const struct rdp_ep *ep);

#endif /* RDP_EP_CTL_H */
