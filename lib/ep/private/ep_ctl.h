/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_EP_CTL_H
#define RDP_EP_CTL_H

/*
 * The control thread's state, shared by its loop (ep_ctl.c), the
 * handshake (ep_hs.c) and the listeners (ep_listen.c). Everything here is touched by the control thread
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
	int dev;                   /* the device its endpoints use, -1: each picks */
	struct rdp_ep_params prm;  /* (its device NULL: the name was the application's) */
	char addr[128];
} __rte_aligned(8);

struct ep_ctl {
	pthread_t thread;
	bool running;
	bool stop;
	int epfd;
	int wake_fd;
	struct rte_ring *inbox;
	size_t inbox_mem;
	TAILQ_HEAD(, rdp_ep) handshakes;
	TAILQ_HEAD(, rdp_ep) established;
	TAILQ_HEAD(, rdp_ep) drains;  /* closed while established, by deadline */
	uint32_t fatal_waits;         /* established endpoints with fatal_by set */
	TAILQ_HEAD(, listener) listeners;
	unsigned int nb_server_handshakes; /* holding a slot (past their HELLO) */
	unsigned int nb_waiting;           /* accepted, holding no slot */
	bool accept_paused;   /* the waiting room is full: listeners not watched */
	bool promoting;       /* hs_promote() runs: a handshake it ends does not recurse */
	/* counters (written here, read by rdp_hs_stats_get() and telemetry) */
	uint64_t nb_accepted;
	uint64_t nb_hello_timeouts;
	uint64_t nb_refused_per_peer;
	uint64_t nb_waited_for_slot;
	uint64_t nb_rejected;      /* server handshakes refused (a REJECT went back) */
	uint64_t nb_auth_failures; /* handshakes failed on the shared secret, both sides */
	/* the rejections by the HELLO field that was refused (names written once,
	 * before nb_rej_fields counts them) */
	struct rdp_hs_reject rej_field[RDP_HS_REJECT_FIELDS];
	unsigned int nb_rej_fields;
};

extern struct ep_ctl rdp_ctl;

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

/* rdp_listen_close(): the caller waits on it until the control thread is done */
struct unlisten_req {
	int port;
	unsigned int closed;  /* listeners closed */
	bool done;
} __rte_aligned(8);

/* Queue a request for the control thread; @p wake: rouse it now. */
void ctl_push(void *obj, enum ctl_req req, bool wake);

/* Watch an endpoint's control socket for @p events (EPOLLIN, EPOLLOUT...). */
void ctl_watch(struct rdp_ep *ep, uint32_t events);
/* Stop watching and close an endpoint's control socket. */
void ctl_close_fd(struct rdp_ep *ep);
/* Hand an endpoint to its poller (TAG_ADMIT, TAG_CLOSE). */
void ctl_poller_push(struct rdp_ep *ep, enum inbox_tag tag);
/* Stop or resume watching the listeners (the handshake limit). */
void ctl_listeners_watch(bool on);

/* ---- listeners and addresses (ep_listen.c) ---- */
/* Split "host:port" and resolve it. */
int ctl_resolve(const char *hostport, bool passive, struct sockaddr_storage *ss,
		socklen_t *len);
/* A new listener (REQ_LISTEN): watched from now on, unless accepting is paused. */
void ctl_listener_add(struct listener *l);
/* Close the listeners of a port (REQ_UNLISTEN) and say so to the waiting caller. */
void ctl_unlisten_serve(struct unlisten_req *req);
/* A listener is readable: accept one connection into a server handshake. */
void ctl_accept(struct listener *l);

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
/* Past its deadlines (the HELLO's, the handshake's): fail it (expire_handshakes()). */
void hs_expire(struct rdp_ep *ep, uint64_t now);
/* The waiting room's size: the lcores' max_endpoints, summed. */
unsigned int hs_waiting_max(void);
/* Server handshakes of @p ep's peer address: holding a slot, and stalled before their
 * HELLO for longer than @p stalled_ns. */
void hs_peer_count(const struct sockaddr_storage *ss, uint64_t now, uint64_t stalled_ns,
		   unsigned int *slotted, unsigned int *stalled);

#endif /* RDP_EP_CTL_H */
