/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_EP_PRIVATE_H
#define RDP_EP_PRIVATE_H

/*
 * Endpoint internals shared by lib/ep's files:
 *   ep_phase.c     the lifecycle: phases and the moves between them
 *   ep_life.c      admission, failure, the flush that ends a QP, release
 *   ep_rx.c        completions, receive, reassembly, reposts
 *   ep_tx.c        the send queue, posting, send completions
 *   ep_deliver.c   events to the application
 *   ep_poller.c    what the poller calls: progress, inbox, look-ahead
 *   ep_hs.c        the handshake (control thread)
 *   ep_ctl.c       the control thread's loop, requests and deadlines
 *   ep_runtime.c   rdp_init/rdp_fini, the registry, the API's getters
 *   ep_telemetry.c telemetry and the endpoint dump
 *   ep_srq.c       the poller's shared receive queue and its leased credits
 *
 * Ownership: an endpoint belongs to the control thread until it is handed
 * to its poller through the inbox (EP_PH_HANDOVER); from then on only the
 * poller touches its datapath fields and moves its phase on. The control
 * thread keeps the control socket of an established endpoint until the
 * poller says it retired (REQ_RETIRE). The state and the phase are the
 * only fields read by other threads (atomics).
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include "rdp_arena.h"
#include "rdp_cfg.h"
#include "rdp_credit.h"
#include "ep_frame.h"
#include "rdp_ep.h"
#include "rdp_hello.h"
#include "rdp_lease.h"
#include "rdp_mem.h"
#include "rdp_poll.h"
#include "rdp_rdma.h"
#include "rdp_session.h"

extern int rdp_ep_logtype;
#define EP_LOG(level, fmt, ...) RDP_LOG(level, rdp_ep_logtype, "ep", fmt, ##__VA_ARGS__)
#define EP_LOG_AT(lvl, fmt, ...) RDP_LOG_AT(lvl, rdp_ep_logtype, "ep", fmt, ##__VA_ARGS__)

_Static_assert(IMM_CREDITS == RDP_CREDIT_IMM_MAX, "credit field width");

/* ---- inbox items: pointers (64-byte aligned) tagged in their low bits ---- */
enum inbox_tag {
	TAG_SEND = 0,  /* struct rdp_msg *: send it */
	TAG_FREE = 1,  /* struct rdp_msg *: a received message was freed */
	TAG_ADMIT = 2, /* struct rdp_ep *: take ownership */
	TAG_FAIL = 3,  /* struct rdp_ep *: the control side saw it fail (holds a reference) */
	TAG_CLOSE = 4, /* struct rdp_ep *: the application closed it */
	TAG_RELEASE = 5, /* struct rdp_ep *: its last reference is gone */
	TAG_CALL = 6,  /* struct ep_call *: run a function (rdp_ep_call) */
};

/* A function to run on a poller (rdp_ep_call). */
struct ep_call {
	rdp_ep_call_fn fn;
	void *arg;
	struct rdp_ep *ep;
} __rte_aligned(8);
#define TAG_MASK 7u

static inline void *
tag_ptr(const void *p, enum inbox_tag t)
{
	return (void *)((uintptr_t)p | t);
}

static inline enum inbox_tag
ptr_tag(const void *v)
{
	return (enum inbox_tag)((uintptr_t)v & TAG_MASK);
}

static inline void *
untag_ptr(const void *v)
{
	return (void *)((uintptr_t)v & ~(uintptr_t)TAG_MASK);
}

/* ---- rdp_msg.flags ---- */
#define MSG_F_RECV (1u << 0)   /* a received message (its free reposts) */
#define MSG_F_EVENT (1u << 1)  /* a state event (heap, not pool) */
#define MSG_F_APP_REF (1u << 2) /* a pipeline CLOSED event: freeing it drops the
				 * application's reference to its endpoint */
#define MSG_F_OWED (1u << 3)   /* a receive buffer waiting to go back whose
				 * repost owes the peer a credit (not a pure ack's) */
#define MSG_F_RDMA (1u << 4)   /* a one-sided operation (ep_rdma.c), not a message */
#define MSG_F_RNDV (1u << 5)   /* a rendezvous message (ep_rndv.c): its data is in
				* a buffer of the lcore's send or receive arena */
#define MSG_F_CTRL (1u << 6)   /* a rendezvous control message the library sends
				* (a FIN), not the application's */
#define MSG_F_PENDING (1u << 7) /* a received rendezvous message whose data is still
				 * being read: deliveries stop at it */

/* Control message kinds (byte 0 of an ack|first|last SEND's payload). */
enum ep_cm_kind {
	EP_CM_RTS = 1,      /* rendezvous descriptor (ep_rndv.c) */
	EP_CM_FIN = 2,      /* rendezvous FIN (ep_rndv.c) */
	EP_CM_GIVEBACK = 3, /* leased credits given back (ep_srq.c) */
	EP_CM_CLOSE = 4,    /* close notice: the sender closed, all it sent is before it */
};
/* A close notice: kind and 3 zero bytes. */
#define EP_CM_CLOSE_LEN 4u
/* A give-back: kind, 3 zero bytes, extra (u32, little-endian). */
#define EP_CM_GIVEBACK_LEN 8u

/* Counters of a poller's SRQ, one writer (the poller; refusals the control thread). */
struct ep_srq_stats {
	uint64_t posted;       /* receives on the SRQ now */
	uint64_t reposted;     /* receives posted again */
	uint64_t strays;       /* receives of a QP gone, posted again undelivered */
	uint64_t refused;      /* endpoints refused for want of floor and reserve */
	uint64_t post_errors;  /* receives the SRQ refused */
	uint64_t fin_waits;    /* endpoints that joined the line for a FIN credit */
};

#define EP_SRQ_BURST 32
/*
 * Buffers that wait to be posted go after at most EP_SRQ_WAIT_LOOKS looks,
 * full batch or not; ep_srq_age() looks once every EP_SRQ_LOOK_POLLS polls.
 */
#define EP_SRQ_LOOK_POLLS 64u
#define EP_SRQ_WAIT_LOOKS 8u

/*
 * The poller's shared receive queue (srq = on). The poller owns the SRQ,
 * its buffers and the repost batch; the lease pool and the QP map are
 * also touched by the control thread (admission), under the lock.
 */
struct ep_srq {
	struct rdp_srq *srq;
	struct rdp_pool *pool;          /* srq_size buffers of buf_size */
	uint32_t slot;                  /* poller slot in its receives' wr_id */
	uint16_t rp_n;                  /* buffers waiting to be posted again */
	uint16_t rp_cap;                /* most that wait at once; the lease pool keeps as
					 * many credits from admissions to cover them */
	uint32_t rp_looks;              /* looks the batch has waited (ep_srq_age()) */
	struct rdp_msg *rp[EP_SRQ_BURST];
	pthread_spinlock_t lock;        /* lease and map (a pthread lock: ThreadSanitizer
					 * sees it) */
	bool lock_made;
	struct rdp_lease_pool lease;
	struct rdp_lease **wq;          /* the lease pool's FIFO */
	uint32_t *map_qpn;              /* QP number -> endpoint, open addressing */
	struct rdp_ep **map_ep;
	uint32_t map_mask;
	/*
	 * The poller's last lookup: only the poller deletes from the map
	 * (ep_srq_unmap()), so the endpoint it found stays there until it
	 * clears this itself, and a run of one QP's receives takes no lock.
	 */
	uint32_t last_qpn;
	struct rdp_ep *last_ep;
	/* endpoints whose descriptor waits for a credit of the FIN reserve, in
	 * order (ep_srq_fin_wait()): the first is woken when one comes back */
	TAILQ_HEAD(, rdp_ep) fin_waiters;
	struct ep_srq_stats stats;
};

/* Devices one process can use at once (distinct device, port, GID index). */
#define EP_MAX_DEVS 4

/* One device of the process: opened by rdp_init(), closed by rdp_fini(). */
struct ep_dev {
	unsigned int idx;                 /* in rdp_rt.devs[], and the poller's CQ index */
	struct rdp_dev *dev;
	struct rdp_pd *pd;
	struct rdp_dev_attr attr;
	char why[256];                    /* how it was chosen ("configured by device") */
};

struct ep_lcore;

/*
 * What a poller lcore holds for one device: a CQ on its poller (index idx),
 * and its pools, arenas and SRQ registered with that device's PD. An
 * endpoint uses the one of its device (ep->ld).
 */
struct ep_lcore_dev {
	struct ep_lcore *lc;
	const struct ep_dev *dv;
	unsigned int idx;                 /* = dv->idx */
	struct rdp_pool *send_pool;
	struct rdp_qp_conn_params conn;   /* the lcore's, READs served within the device's */
	uint32_t max_inline;              /* min(config, device) */
	uint8_t rd_init;                  /* READs an endpoint may issue: min(config, device) */
	struct rdp_arena *rv_send;        /* rendezvous messages to send (peers READ them) */
	struct rdp_arena *rv_recv;        /* rendezvous messages received (READ into) */
	struct ep_srq *srq;               /* srq = on: the poller's SRQ on it, else NULL */
};

/*
 * The name of an lcore's pool or arena on device @p dev: "PREFIX_lcoreN",
 * and "_D" after it on devices other than the first.
 */
static inline void
ep_pool_name(char *buf, size_t len, const char *prefix, unsigned int lcore, unsigned int dev)
{
	if (dev == 0)
		snprintf(buf, len, "%s_lcore%u", prefix, lcore);
	else
		snprintf(buf, len, "%s_lcore%u_%u", prefix, lcore, dev);
}

/* Runtime of one poller lcore. */
struct ep_lcore {
	unsigned int lcore_id;
	int socket;
	struct rdp_poller *poller;
	struct rdp_cfg_lcore conf;        /* resolved configuration */
	struct rdp_credit_params credit;  /* from conf */
	uint64_t give_back_tsc;           /* srq_give_back_us in TSC cycles */
	unsigned int pages;               /* RDP_ALLOC_* of its pools and arenas (hugepages) */
	struct ep_lcore_dev dev[EP_MAX_DEVS]; /* one per device of the process */
	unsigned int hook_polls;          /* ep_lcore_hook() calls: its passes, for
					   * ep_srq_age() and the arenas' lapse */
	unsigned int dflt;                /* its endpoints' device when nothing else picks */
	bool hook_set;                    /* rdp_poll_hook_set() was called (rdp_rt.lock) */
	struct rdp_ep_counters counters;  /* how its endpoints ended (the poller writes) */
	/* the poller's hook (ep_lcore_hook()): session timers, then the application's */
	rdp_poll_hook_fn app_hook;        /* rdp_poll_hook_set() (atomic), or NULL */
	void *app_hook_arg;
	TAILQ_HEAD(, rdp_session) sessions; /* sessions of this lcore (the poller only) */
	uint32_t nb_sessions;             /* on the list (the poller only) */
	uint64_t session_due;             /* TSC of the earliest session timer (the poller) */
};

/* Handshake steps (control thread only), while ctl_list is CTL_HANDSHAKE. */
enum hs_step {
	HS_TCP_CONNECT = 0, /* client: waiting for connect() */
	HS_SEND,            /* sending out_buf, then hs_after_send */
	HS_RECV_ACK,        /* client: waiting for HELLO_ACK */
	HS_RECV_HELLO,      /* server: waiting for HELLO */
	HS_RECV_READY,      /* server: waiting for READY */
	HS_QP_CONNECT,      /* waiting for the driver to connect the QP (a shm
			     * rendezvous), then the next message goes out */
	HS_ADMIT,           /* (as hs_after_send only) the client's READY is out: admit */
	HS_WAIT_SLOT,       /* server: its HELLO is in, waiting for a slot
			     * (max_handshakes, handshakes_per_peer) */
};

/* What the control thread holds of an endpoint (control thread only). */
enum ctl_list {
	CTL_NONE = 0,    /* nothing: not started, failed or retired */
	CTL_HANDSHAKE,   /* a handshake, on the handshakes list, with its deadline */
	CTL_ESTABLISHED, /* its control socket, watched for peer death, on the established list */
};

/*
 * The phases of an endpoint's life (docs/architecture.md, "Endpoint
 * lifecycle", has the table of moves; a test holds the two together). A
 * phase has one owner, the only thread that moves the endpoint out of it:
 * the control thread for HANDSHAKE and RELEASED, the poller for the rest
 * (HANDOVER is left by the poller that takes the endpoint). ep_phase_set()
 * refuses a move the table does not list.
 */
enum ep_phase {
	EP_PH_HANDSHAKE = 0, /* TCP connect and hello exchange; its QP may exist */
	EP_PH_HANDOVER,      /* in its poller's inbox: the handshake ended, well or not */
	EP_PH_ESTABLISHED,   /* messages flow */
	EP_PH_DRAINING,      /* closed by the application: what it accepted goes out */
	EP_PH_FLUSHING,      /* QP in error, flush marker posted: every WR comes back */
	EP_PH_FLUSHED,       /* the flush marker is back: the last receives come back */
	EP_PH_RETIRED,       /* QP destroyed, every message reported; references keep it */
	EP_PH_RELEASING,     /* the last reference went while it was on the busy list */
	EP_PH_RELEASED,      /* freed */
	EP_PH_COUNT
};

/* May an endpoint move from phase @p from to phase @p to? */
bool ep_phase_allowed(enum ep_phase from, enum ep_phase to);
/* A phase's name, as docs/architecture.md writes it. */
const char *ep_phase_name(enum ep_phase p);

/* Per-WR record of the send queue, indexed by sequence. */
struct ep_track {
	struct rdp_msg *msg;  /* message whose last chunk this WR carries, else NULL */
};

/*
 * The send queue: a ring of pointers first, a list through the headers
 * when the ring is full. The ring's addresses are known without a load of
 * the headers, so post_sends() asks for a burst's headers all at once; a
 * list would make each one wait for the previous (docs/performance.md,
 * "The send queue is a ring before it is a list"). Once the list holds
 * anything, new messages go to it too, so the order stays the order of
 * acceptance.
 */
#define EP_TXQ_RING 32u
struct ep_txq {
	uint32_t head;                  /* ring: next to pop */
	uint32_t tail;                  /* ring: next free */
	struct rdp_msg *ov_head;        /* the list after the ring */
	struct rdp_msg *ov_tail;
	struct rdp_msg *ring[EP_TXQ_RING];
};

/* Nothing queued to send. */
static inline bool
txq_empty(const struct ep_txq *q)
{
	return q->head == q->tail && q->ov_head == NULL;
}

static inline struct rdp_msg *
txq_first(const struct ep_txq *q)
{
	return q->head != q->tail ? q->ring[q->head % EP_TXQ_RING] : q->ov_head;
}

/* The message queued after the first one, or NULL. */
static inline struct rdp_msg *
txq_second(const struct ep_txq *q)
{
	uint32_t in_ring = q->tail - q->head;

	if (in_ring >= 2)
		return q->ring[(q->head + 1) % EP_TXQ_RING];
	if (in_ring == 1)
		return q->ov_head;
	return q->ov_head != NULL ? q->ov_head->link : NULL;
}

static inline void
txq_push(struct ep_txq *q, struct rdp_msg *m)
{
	if (q->ov_head == NULL && q->tail - q->head < EP_TXQ_RING)
		q->ring[q->tail++ % EP_TXQ_RING] = m;
	else
		RDP_LIST_APPEND(q->ov_head, q->ov_tail, m, link);
}

static inline struct rdp_msg *
txq_pop(struct ep_txq *q)
{
	struct rdp_msg *m;

	if (q->head != q->tail)
		return q->ring[q->head++ % EP_TXQ_RING];
	m = q->ov_head;
	q->ov_head = m->link;
	if (q->ov_head == NULL)
		q->ov_tail = NULL;
	m->link = NULL;
	return m;
}

struct rdp_ep {
	struct rdp_poll_busy busy;      /* poller busy-list hook */
	struct ep_lcore *lc;            /* owning lcore */
	struct ep_lcore_dev *ld;        /* ... and what it holds of the endpoint's device */
	struct rdp_qp *qp;
	uint32_t slot;
	_Atomic uint8_t state;          /* enum rdp_ep_state */
	int err;                        /* errno (negative) that failed it */

	/*
	 * --- poller-owned datapath ---
	 * Ordered by use: what every visit of the poller reads first (the
	 * credit state), then what a receive touches, then the send queue,
	 * then what only failures, teardown and the handover read. With many
	 * endpoints every visit finds these lines cold, so a receive-only visit
	 * should touch as few of them as the fields allow.
	 */
	struct rdp_credit credit;
	/* receive side */
	struct rdp_pool *recv_pool;     /* this endpoint's receive buffers */
	uint32_t recv_posted;           /* entries in the RQ */
	_Atomic uint8_t phase;          /* enum ep_phase (ep_phase_get/set) */
	bool closing;                   /* the application closed it */
	bool close_sent;                /* closing: our close notice is posted */
	bool peer_closed;               /* the peer's close notice came */
	bool announced;                 /* ESTABLISHED went to the application: messages
					 * that arrive are delivered, not dropped */
	bool app_visible;               /* (atomic) the application knows it: events flow */
	bool held_ref;                  /* they hold a reference (kept until retired) */
	bool backpressured;
	struct ep_frame frame;          /* receive framing state */
	uint32_t held;                  /* received messages the application holds */
	uint32_t rp_acks;               /* of which owe nothing: pure acks' buffers
					 * (and the initial receives, before the handover) */
	struct rdp_msg *rx_head;        /* message being reassembled */
	struct rdp_msg *rx_tail;
	struct rdp_msg *rp_head;        /* buffers to post again */
	struct rdp_msg *rp_tail;
	struct rdp_msg *ev_head;        /* events waiting for the application */
	struct rdp_msg *ev_tail;

	/* --- application (read by every delivery) --- */
	struct rdp_ep_params prm;
	void *ctx;
	struct rdp_ep_stats stats;

	/* send side */
	uint32_t send_seq;              /* SENDs posted: the next one's number (ep_frame.h) */
	uint32_t chunk_size;
	uint32_t max_send_msg;          /* largest message we send in chunks */
	uint32_t rndv_above;            /* longer messages go by rendezvous (UINT32_MAX: never) */
	uint32_t rndv_max;              /* largest message we send by rendezvous (0: none) */
	uint32_t max_inline;
	uint32_t track_mask;
	struct ep_track *track;         /* [seq & track_mask] */
	struct rdp_msg *tx_seg;         /* next chunk of the first to post, NULL: start */
	struct ep_txq txq;              /* accepted messages, in order */
	/* failures, the flush, handover */
	uint64_t err_seq;               /* lowest sequence with an error completion */
	uint64_t flush_seq;             /* sequence of the flush marker */
	uint64_t close_seq;             /* sequence of our close notice (close_sent): below
					 * err_seq once flushed, it reached the peer */
	const char *fail_why;           /* a failure the control side saw, logged when
					 * the endpoint retires: the peer's close notice
					 * may still be in the CQ, and then it closed; or,
					 * closing, our own notice's completion, and then
					 * the close finished */
	bool flush_only;                /* failed on flushed completions alone: the cause
					 * (the control thread's, ep_fail_ctl()) may
					 * follow until cause_by (ep_fail_flushed()) */
	uint64_t cause_by;              /* TSC */
	bool ctl_keeps;                 /* at the handover: the control thread keeps its
					 * socket and must hear of its retirement */
	int early_err;                  /* first error before the handover; the control
					 * thread, which still owns the handshake, is told */
	struct rdp_msg *early_head;     /* messages completed before that, in order */
	struct rdp_msg *early_tail;
	/* rendezvous (ep_rndv.c) */
	struct rdp_msg *rv_out_head;    /* messages whose descriptor went, waiting for the
					 * peer's FIN, in order (through link) */
	struct rdp_msg *rv_out_tail;
	struct rdp_msg *rv_in_head;     /* received descriptors being read, in order
					 * (through next) */
	struct rdp_msg *rv_in_tail;
	uint32_t rv_out_seq;            /* the next descriptor's number */
	uint32_t rv_fin_seq;            /* the number the next FIN must carry */
	uint32_t rv_in_seq;             /* the number the next descriptor must carry */
	uint32_t rv_reads;              /* READs of received descriptors in the queue */
	uint64_t rv_read_bytes;         /* the bytes they move */
	uint32_t rv_fin_early;          /* FINs that came before their descriptor's completion */
	struct rdp_msg *rd_head;        /* internal READs, posted before the send queue
					 * (through link) */
	struct rdp_msg *rd_tail;
	struct rdp_msg *fin_head;       /* FINs to send, in order, before the send queue
					 * and between its messages (through link) */
	struct rdp_msg *fin_tail;
	uint32_t fins_due;              /* descriptors received whose FIN is not posted:
					 * the send queue leaves that many credits */
	uint32_t fin_reserve;           /* receives kept beyond the peer's credits for
					 * the FINs of our descriptors (RQ only; 0: none,
					 * hello_local()) */
	uint32_t fin_credits;           /* of those, the FIN credits a descriptor may
					 * still bring: one descriptor waits at 0 */
	struct rdp_arena_turn rv_send_turn; /* its place in the send arena's line */
	struct rdp_arena_turn rv_recv_turn; /* and in the receive arena's */
	/* leased credits (ep_srq.c) */
	struct rdp_lease lease;         /* we lease: our peer's credits on the SRQ */
	bool srq_member;                /* admitted to the SRQ's lease pool, not left yet */
	bool srq_mapped;                /* its QP number is in the SRQ's map */
	bool srq_fin_waiting;           /* in the SRQ's fin_waiters */
	TAILQ_ENTRY(rdp_ep) srq_fin_next; /* in the SRQ's fin_waiters */
	bool peer_leases;               /* the peer leases: WANT and give-backs go to it */
	uint32_t peer_floor;            /* its floor */
	uint32_t lease_tack;            /* our T_ack for leased credits owed */
	uint64_t idle_since;            /* TSC since when nothing was queued with credits of a
					 * leasing peer above its floor held, 0: not so */

	/* --- control thread --- */
	TAILQ_ENTRY(rdp_ep) ctl_next;   /* handshakes / established */
	TAILQ_ENTRY(rdp_ep) all_next;   /* registry for telemetry */
	int fd;
	int ctl_err;                    /* why the control side failed it */
	uint64_t fatal_by;              /* its QP's error event came: failed at this time
					 * (ns) unless its socket ends first, 0: none */
	bool is_server;
	bool qp_made;                   /* its QP exists: its poller sees its completions,
					 * may retire it at any time and alone ends it */
	enum ctl_list ctl_list;
	enum hs_step hs;
	enum hs_step hs_after_send;
	int qp_connect_fd;              /* HS_QP_CONNECT: the driver's descriptor to watch */
	uint32_t path_mtu;              /* agreed in the handshake */
	uint64_t deadline_ns;           /* the handshake's, then the drain's */
	uint64_t hello_deadline_ns;     /* server: its whole HELLO by then (from accept) */
	uint64_t accepted_ns;           /* server: when accepted */
	struct sockaddr_storage peer_ss; /* server: the peer's address (its port zeroed) */
	bool hs_slotted;                /* server: holds a handshake slot */
	TAILQ_ENTRY(rdp_ep) drain_next; /* closed while established: drain deadlines */
	bool drain_listed;              /* on that list */
	bool ctl_closing;               /* the application asked to close it */
	uint8_t in_buf[RDP_HELLO_LEN];
	uint32_t in_len;
	uint8_t out_buf[RDP_HELLO_LEN];
	uint32_t out_len;
	uint32_t out_off;
	uint8_t hello_c[RDP_HELLO_LEN];   /* the client's HELLO as it travelled */
	uint8_t hello_s[RDP_HELLO_LEN];   /* the server's HELLO_ACK as it travelled */
	struct rdp_hello local_hello;
	uint32_t cq_reserved;
	char peer[80];
	uint32_t id;
	atomic_uint refs;               /* engine + application + held messages */
	bool app_closed;                /* (atomic) closed once, by the application or
					 * by rdp_fini() */
	bool fini_closed;               /* rdp_fini() closed it (under rdp_rt.lock; the
					 * poller reads it after the close request) */
};

/* ---- the lifecycle (ep_phase.c, ep_life.c) ---- */
static inline enum ep_phase
ep_phase_get(const struct rdp_ep *ep)
{
	return (enum ep_phase)atomic_load_explicit(&ep->phase, memory_order_acquire);
}

/* Move @p ep to phase @p to (its owner thread); a move the table lacks panics. */
void ep_phase_set(struct rdp_ep *ep, enum ep_phase to);

/* Its QP is being flushed or is gone: no post, no new message. */
static inline bool
ep_tearing_down(const struct rdp_ep *ep)
{
	return ep_phase_get(ep) >= EP_PH_FLUSHING;
}

/* Take over an endpoint the control thread handed over (TAG_ADMIT). */
void ep_admit(struct rdp_ep *ep);
/* The application closed it (TAG_CLOSE). */
void ep_close_local(struct rdp_ep *ep);
/* Fail it: its QP is flushed and every message it holds reported. */
void ep_fail(struct rdp_ep *ep, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * Fail it for what the control side saw (@p why, a constant): as ep_fail(),
 * but logged only when it retires, unless the peer's close notice comes first.
 */
void ep_fail_ctl(struct rdp_ep *ep, int err, const char *why);
/*
 * How long a failure seen only as flushed completions waits for its cause
 * from the control thread (ep_fail_flushed()); the control thread itself
 * waits EP_FATAL_WAIT_MS after a QP error event for the socket's end.
 */
#define EP_CAUSE_WAIT_MS 250
#define EP_FATAL_WAIT_MS 50
/*
 * Fail it for a completion flushed (WR_FLUSH_ERR) with no error of its own
 * (@p why, a constant): the QP went to error for a cause seen elsewhere,
 * the peer's end or a device event. The endpoint fails now; its log line,
 * errno, counters and FAILED event wait up to EP_CAUSE_WAIT_MS for the
 * control thread to name the cause (ep_fail_ctl()).
 */
void ep_fail_flushed(struct rdp_ep *ep, const char *why);
/* What a failure seen as flushed completions only says when no cause came. */
#define EP_FLUSHED_WHY "its completions were flushed (WR_FLUSH_ERR) and no cause was reported"
/* The peer's close notice came: deliver what came before it, then flush. */
void ep_peer_closed(struct rdp_ep *ep);
/* Errno for a completion status. */
int ep_wc_errno(uint8_t status);
/* Move its QP to error and post the flush marker behind everything. */
void ep_flush_qp(struct rdp_ep *ep);
/* Everything came back: report, destroy the QP, retire (from ep_progress()). */
void ep_finalize(struct rdp_ep *ep);
/* The last reference is gone; called on the owning poller's thread. */
void ep_release_on_poller(struct rdp_ep *ep);

/* ---- completions and receive (ep_rx.c), poller thread ---- */
void ep_complete(void *client, const struct rdp_wc *wc, uint16_t n);
/* Post every buffer waiting to go back; returns how many. */
unsigned int ep_post_recvs(struct rdp_ep *ep);
/* Post the initial receives (control thread, before the QP is handed over). */
int ep_post_initial_recvs(struct rdp_ep *ep);
/* Buffers to post again go back to their pool (the QP is in error). */
void ep_recv_drop_reposts(struct rdp_ep *ep);
/* A received message freed on another thread, handed over (TAG_FREE). */
void ep_recv_freed(struct rdp_msg *m);
/* A receive buffer the library consumed: back to the queue, its credit owed. */
void ep_recv_return(struct rdp_ep *ep, struct rdp_msg *m);
/*
 * A receive buffer of a reserve beyond the peer's window (a FIN's): back to
 * the queue, posted before the next send, no credit owed.
 */
void ep_recv_return_reserved(struct rdp_ep *ep, struct rdp_msg *m);
/* A receive completion of the endpoint, into buffer @p m of its receive pool. */
void ep_recv_one(struct rdp_ep *ep, const struct rdp_wc *wc, struct rdp_msg *m);

/* ---- send (ep_tx.c), poller thread ---- */
/* Post what the credits allow of the send queue, then an ack or reclaim due. */
unsigned int ep_post_sends(struct rdp_ep *ep);
void ep_send_complete(struct rdp_ep *ep, const struct rdp_wc *wc);
/* A send handed over from another thread (TAG_SEND). */
void ep_accept_send(struct rdp_ep *ep, struct rdp_msg *m);
/* Queue accepted messages or operations for sending, from any thread; returns how many. */
uint16_t ep_queue_sends(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n);

/* ---- one-sided operations (ep_rdma.c) ---- */
/* What a queued operation's WR needs, in its carrier's buffer. */
struct ep_rdma {
	uint64_t laddr;
	uint64_t raddr;
	struct rdp_region *region;  /* the application's, or NULL (internal) */
	struct rdp_msg *owner;      /* internal: the rendezvous message it reads */
	uint32_t len;
	uint32_t lkey;
	uint32_t rkey;
	uint8_t opcode;        /* enum rdp_rdma_opcode */
};
/* a send buffer is at least 64 bytes (lib/cfg's lower bound of buf_size) */
_Static_assert(sizeof(struct ep_rdma) <= 64, "an operation must fit the smallest send buffer");

static inline struct ep_rdma *
rdma_of(const struct rdp_msg *m)
{
	return (struct ep_rdma *)m->data;
}

/* Is the queued operation an RDMA READ? */
static inline bool
ep_rdma_is_read(const struct rdp_msg *m)
{
	return rdma_of(m)->opcode == RDP_RDMA_READ;
}

/*
 * Build the WR of a queued operation after a GO verdict; returns its
 * sequence. A rendezvous READ (one with an owner) is signaled whatever
 * @p signaled says: the peer's credits may come back only once it frees
 * the descriptor it reads, so no later WR may be needed to make its
 * completion visible.
 */
static inline uint64_t
ep_wr_rdma(struct rdp_ep *ep, struct rdp_send_wr *wr, struct rdp_sge *sge,
	   const struct rdp_msg *m, bool signaled)
{
	const struct ep_rdma *d = rdma_of(m);
	bool read = d->opcode == RDP_RDMA_READ;
	uint64_t seq;

	signaled = signaled || d->owner != NULL;
	seq = rdp_credit_rdma_posted(&ep->credit, read, signaled);

	sge->addr = d->laddr;
	sge->length = d->len;
	sge->lkey = d->lkey;
	wr->wr_id = rdp_wrid(RDP_WRK_DATA, ep->slot, seq);
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = read ? RDP_WR_RDMA_READ : RDP_WR_RDMA_WRITE;
	wr->flags = signaled ? RDP_SEND_SIGNALED : 0;
	wr->imm = 0;
	wr->remote_addr = d->raddr;
	wr->rkey = d->rkey;
	return seq;
}
/* "RDMA WRITE of N bytes to ADDR (rkey K) ..." for a failure's message; returns @p buf. */
const char *ep_rdma_describe(const struct rdp_msg *m, char *buf, size_t len);
/* Report an operation to the application, done (0) or failed. */
void ep_rdma_done(struct rdp_ep *ep, struct rdp_msg *m, int status);
/* Queue an internal READ of a rendezvous (ep_rndv.c) on carrier @p c; @p owner is reported. */
void ep_rdma_queue_internal(struct rdp_ep *ep, struct rdp_msg *c, struct rdp_msg *owner,
			    uint64_t laddr, uint32_t lkey, uint64_t raddr, uint32_t rkey,
			    uint32_t len);

/* ---- rendezvous (ep_rndv.c) ---- */
/* Bytes of the send (@p send) or receive arena of @p ld: rndv_pool_size, or when 0 automatic. */
size_t ep_rndv_arena_size(const struct ep_lcore_dev *ld, bool send);
/* Bytes the send arena of @p ld holds in use at once (rdp_arena_limit()), 0: no limit. */
size_t ep_rndv_send_limit(const struct ep_lcore_dev *ld);
/* @p n messages of @p len bytes each in the send arena, all or none; 0 or -errno. */
int ep_rndv_alloc(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, uint32_t len);
/* Give a rendezvous message's arena buffer back (any thread). */
void ep_rndv_release(struct rdp_msg *m);
/* What the SEND of a queued descriptor or FIN carries: filled in, returns its bytes. */
uint32_t ep_rndv_payload(struct rdp_ep *ep, struct rdp_msg *m, uint64_t *addr, uint32_t *lkey);
/* The SEND of a descriptor or a FIN completed (or failed). */
void ep_rndv_sent(struct rdp_ep *ep, struct rdp_msg *m, int status);
/* A rendezvous control message arrived in receive buffer @p m. */
void ep_rndv_recv(struct rdp_ep *ep, struct rdp_msg *m, uint32_t byte_len);
/* A READ of a received descriptor completed (carrier @p c, for @p owner). */
void ep_rndv_read_done(struct rdp_ep *ep, struct rdp_msg *c, struct rdp_msg *owner, int status);
/* Buffers, READs and FINs for the received descriptors; returns work done. */
unsigned int ep_rndv_progress(struct rdp_ep *ep);
/* Nothing of a rendezvous is left to finish (a drain may end). */
static inline bool
ep_rndv_idle(const struct rdp_ep *ep)
{
	return ep->rv_out_head == NULL && ep->rv_in_head == NULL && ep->fin_head == NULL;
}
/*
 * Passes of its poller the head of an arena's line keeps its place once
 * another taker finds its room free: an endpoint offered its held
 * requests again (the busy pass) or retried from the poll hook asks in
 * that pass or the next. A longer wait costs every taker behind it.
 */
#define EP_ARENA_LAPSE_POLLS 2u
/* The endpoint is done: waiting messages failed, pending ones dropped. */
void ep_rndv_finalize(struct rdp_ep *ep, int err);
/* It takes nothing more from the arenas: out of their lines (finalize, release). */
void ep_rndv_leave_lines(struct rdp_ep *ep);

/* ---- the shared receive queue (ep_srq.c) ---- */
/* Create the lcore's SRQ on a device, its pool and slot; post every buffer (rdp_init). */
int ep_srq_create(struct ep_lcore_dev *ld);
/* Destroy it (teardown, every endpoint gone; NULL srq: nothing). */
void ep_srq_destroy(struct ep_lcore_dev *ld);
/* Admit @p ep with its peer's terms, its QP number mapped (control thread); 0 or -errno
 * with the reason in rdp_err_msg(). */
int ep_srq_admit(struct rdp_ep *ep, const struct rdp_hello *peer);
/* Its QP is gone (poller): unmap it; its lease goes once it holds no message. */
void ep_srq_unmap(struct rdp_ep *ep);
/* Leave the lease pool if admitted and nothing of the lease is held any more. */
void ep_srq_settle(struct rdp_ep *ep);
/* Completions of the SRQ's receives (from ep_complete(), tagged client). */
void ep_srq_complete(struct ep_srq *q, const struct rdp_wc *wc, uint16_t n);
/* Post the buffers waiting to go back to the SRQ. */
void ep_srq_flush(struct ep_srq *q);
/* Post the batch waiting unless the pool's free credits cover it (the posting rule). */
static inline void
ep_srq_flush_uncovered(struct ep_srq *q)
{
	if (q->rp_n > 0 && !rdp_lease_covers(&q->lease, q->rp_n))
		ep_srq_flush(q);
}
/* A buffer goes back to the SRQ; with @p freed its credit goes by rdp_lease_on_free(). */
static inline void ep_srq_repost(struct rdp_ep *ep, struct rdp_msg *m, bool freed);
/* The endpoints the lease pool served since @p served (its FIFO at @p head then) may owe. */
void ep_srq_kick(struct ep_srq *q, uint32_t head, uint64_t served);
/* A received message carried by a send buffer (ep_rndv.c) goes back to its pool: no credit. */
void ep_srq_repost_foreign(struct rdp_msg *m);
/* The peer sent with no credit of its lease: the endpoint fails, naming the rule; false. */
bool ep_srq_beyond_grant(struct rdp_ep *ep);
/* A give-back arrived in @p m (@p byte_len bytes): accounted, buffer back. */
void ep_srq_give_back_recv(struct rdp_ep *ep, struct rdp_msg *m, uint32_t byte_len);
/* A FIN arrived in @p m: its buffer goes back to the SRQ, its credit to the FIN reserve;
 * false when the peer had no FIN credit (the endpoint failed). */
bool ep_srq_fin_recv(struct rdp_ep *ep, struct rdp_msg *m);
/* Set whether @p ep's next descriptor waits for a credit of the FIN reserve (FIFO). */
void ep_srq_fin_wait(struct rdp_ep *ep, bool waiting);

/*
 * A credit of the SRQ's FIN reserve for a descriptor of @p ep: false when
 * it must wait (the reserve is out, or endpoints waiting before it).
 */
static inline bool
ep_srq_fin_take(struct rdp_ep *ep)
{
	struct ep_srq *q = ep->ld->srq;
	const struct rdp_ep *first = TAILQ_FIRST(&q->fin_waiters);

	return (first == NULL || first == ep) && rdp_lease_fin_take(&q->lease, &ep->lease);
}

/*
 * Owed leased credits to send now (into ep->credit.owed): with @p data any
 * count, for the SEND being built carries them; else T_ack or more, or all
 * when none is lent out (a pure ack).
 */
static inline void
ep_srq_take_owed(struct rdp_ep *ep, bool data)
{
	uint32_t n;

	if (ep->lease.owed == 0)
		return;
	n = rdp_lease_take_owed(&ep->lease, data ? 1 : ep->lease_tack);
	if (n > 0)
		rdp_credit_recv_reposted(&ep->credit, n);
}

/*
 * Before a SEND of @p ep (on an SRQ) names credits: the buffers waiting to
 * go back on the SRQ go first unless the pool covers them
 * (rdp_lease_covers()), then the leased credits owed are taken; each only
 * when there is something to do. A reply from a receive callback so
 * leaves before the buffer of the message it answers is posted.
 */
static inline void
ep_srq_before_send(struct rdp_ep *ep)
{
	struct ep_srq *q = ep->ld->srq;

	ep_srq_flush_uncovered(q);
	if (ep->lease.owed != 0)
		ep_srq_take_owed(ep, false);
}
/* Post the batches that waited EP_SRQ_WAIT_LOOKS looks; every EP_SRQ_LOOK_POLLS polls. */
unsigned int ep_srq_age(struct ep_lcore *lc);
/* Telemetry (any thread). */
void ep_srq_snapshot(const struct ep_lcore_dev *ld, struct rdp_srq_stats *s);

/* A client pointer of the poller that is the lcore's SRQ, not an endpoint. */
#define EP_SRQ_CLIENT_TAG 1u
static inline bool
ep_client_is_srq(const void *client)
{
	return ((uintptr_t)client & EP_SRQ_CLIENT_TAG) != 0;
}

/* A receive buffer the endpoint does not keep: back to the SRQ, or to its pool. */
static inline void
ep_recv_drop(struct rdp_ep *ep, struct rdp_msg *m)
{
	if (ep->ld->srq != NULL)
		ep_srq_repost(ep, m, false);
	else
		rdp_pool_put_bulk(ep->recv_pool, &m, 1);
}

/*
 * Post what waits, receives first: a pure ack's buffer must be back before
 * data that spends the credits the ack brought leaves, or the peer's next
 * ack could find the reserve short (docs/credit-protocol.md). With
 * @p all_reposts the buffers that only owe credits go too (the poller's
 * pass); a send made from a callback leaves before those. The SRQ's
 * buffers go in the pass only where the pool does not cover them, as
 * before a send (ep_srq_before_send()); else they wait for a full batch
 * or a few hundred polls (ep_srq_age()).
 */
static inline unsigned int
ep_flush(struct rdp_ep *ep, bool all_reposts)
{
	unsigned int work = 0;

	if (ep->rp_head != NULL && (all_reposts || ep->rp_acks > 0))
		work += ep_post_recvs(ep);
	if (all_reposts && ep->ld->srq != NULL)
		ep_srq_flush_uncovered(ep->ld->srq);
	if (!ep_tearing_down(ep))
		work += ep_post_sends(ep);
	return work;
}

/* ---- events to the application (ep_deliver.c), poller thread ---- */
static inline void
ep_busy(struct rdp_ep *ep)
{
	rdp_poller_busy(ep->lc->poller, &ep->busy);
}

/* ---- the shared receive queue's per-message rules (ep_srq.c), poller thread ---- */
/* A buffer waits to go back on the SRQ (ep_srq_flush() posts a burst). */
static inline void
ep_srq_queue(struct ep_srq *q, struct rdp_msg *m)
{
	m->flags = 0;
	m->next = NULL;
	q->rp[q->rp_n++] = m;
	if (q->rp_n >= q->rp_cap)
		ep_srq_flush(q);
}

static inline void
ep_srq_repost(struct rdp_ep *ep, struct rdp_msg *m, bool freed)
{
	struct ep_srq *q = ep->ld->srq;

	if (unlikely(m->pool != q->pool)) {
		ep_srq_repost_foreign(m);
		return;
	}
	if (freed && ep->srq_member && !ep_tearing_down(ep)) {
		uint32_t head = q->lease.wq_head;
		uint64_t served = q->lease.served;

		if (!rdp_lease_on_free(&q->lease, &ep->lease))
			ep_busy(ep); /* owed to its peer */
		if (unlikely(q->lease.served != served))
			ep_srq_kick(q, head, served);
	}
	ep_srq_queue(q, m);
}

/* A data SEND or control message of the peer took a lease credit; false: the endpoint failed. */
static inline bool
ep_srq_on_data(struct rdp_ep *ep, bool want)
{
	struct ep_srq *q = ep->ld->srq;
	uint32_t head = q->lease.wq_head;
	uint64_t served = q->lease.served;

	if (unlikely(rdp_lease_on_data(&q->lease, &ep->lease, want) < 0))
		return ep_srq_beyond_grant(ep);
	if (unlikely(q->lease.served != served))
		ep_srq_kick(q, head, served);
	if (ep->lease.owed > 0)
		ep_busy(ep);
	return true;
}

static inline void
ep_q_push(struct rdp_msg **head, struct rdp_msg **tail, struct rdp_msg *m)
{
	m->link = NULL;
	if (*tail != NULL)
		(*tail)->link = m;
	else
		*head = m;
	*tail = m;
}

static inline struct rdp_msg *
ep_q_pop(struct rdp_msg **head, struct rdp_msg **tail)
{
	struct rdp_msg *m = *head;

	*head = m->link;
	if (*head == NULL)
		*tail = NULL;
	m->link = NULL;
	return m;
}

static inline void
ep_ev_push(struct rdp_ep *ep, struct rdp_msg *m)
{
	ep_q_push(&ep->ev_head, &ep->ev_tail, m);
	ep_busy(ep);
}

/* Queue a state event. */
void ep_ev_state(struct rdp_ep *ep, enum rdp_ep_state state, int err);
/* A WR's message or operation left the send queue: on to its report. */
void ep_send_done(struct rdp_ep *ep, struct rdp_msg *m, int status);
/* A message is done or failed: report it (or free it when nobody asked). */
void ep_msg_report(struct rdp_ep *ep, struct rdp_msg *m, int status);
/* Count a message done or failed and set its event; false when it was freed. */
bool ep_msg_account(struct rdp_ep *ep, struct rdp_msg *m, int status);
/*
 * Queue a send report for the application in the order of the sends: behind
 * a rendezvous message still waiting for its FIN, it waits too (ep_rndv.c).
 */
static inline void
ep_report_push(struct rdp_ep *ep, struct rdp_msg *m)
{
	if (unlikely(ep->rv_out_head != NULL))
		ep_q_push(&ep->rv_out_head, &ep->rv_out_tail, m);
	else
		ep_ev_push(ep, m);
}
/* Hand queued events over; with @p recv_only only received messages. */
unsigned int ep_deliver(struct rdp_ep *ep, bool recv_only);
/* Received messages the application holds: one more, @p n fewer. */
void ep_held_inc(struct rdp_ep *ep, unsigned int n);
void ep_held_sub(struct rdp_ep *ep, unsigned int n);
/* The messages' reference goes once none is held and the endpoint is retired. */
void ep_held_ref_settle(struct rdp_ep *ep);

/* ---- what the poller calls (ep_poller.c) ---- */
extern const struct rdp_poll_ops ep_poll_ops;

/* ---- control thread (ep_ctl.c, ep_hs.c) ---- */
int ctl_start(void);
void ctl_stop(void);
/* Hand a retired endpoint back (poller thread). */
void ctl_retire(struct rdp_ep *ep);
/* Its QP failed before the handover: the control thread ends the handshake (poller thread). */
void ctl_handshake_qp_failed(struct rdp_ep *ep);
/* Ask the control thread to free an endpoint (any thread, refs reached 0). */
void ctl_release(struct rdp_ep *ep);
int ctl_listen(const char *hostport, const struct rdp_ep_params *prm);
/* Close the listeners of a port (0: all of them); waits for the control thread. */
int ctl_unlisten(int port);
int ctl_connect(struct rdp_ep *ep, const char *hostport);
void ctl_close(struct rdp_ep *ep);

/* ---- runtime (ep_runtime.c) ---- */
struct ep_runtime {
	bool up;
	struct ep_dev devs[EP_MAX_DEVS];   /* devs[0]: [global]'s, the default */
	unsigned int nb_devs;
	char driver_info[1024];
	struct ep_lcore *lcores[RTE_MAX_LCORE];
	unsigned int order[RTE_MAX_LCORE]; /* poller lcores, for round robin */
	unsigned int nb_lcores;
	unsigned int rr;
	pthread_mutex_t lock;              /* registry and rr */
	TAILQ_HEAD(, rdp_ep) all;
	uint32_t next_id;
	TAILQ_HEAD(, rdp_session) sessions; /* open sessions (lock) */
	uint32_t nb_sessions;              /* ... how many (lock) */
	bool auth;                         /* a shared secret is configured */
	uint8_t auth_key[RDP_HELLO_KEY_LEN];
	unsigned int pages;                /* RDP_ALLOC_* of rdp_region_alloc() ([global]) */
};
extern struct ep_runtime rdp_rt;

/* Pick the poller for a new endpoint. */
struct ep_lcore *rt_pick_lcore(int lcore);
/*
 * Pick the device of a new endpoint of @p lc: the one @p name names, else
 * the one whose network interface holds @p local (the local address of its
 * route to the peer; NULL: unknown), else the lcore's. Its index, or
 * -ENODEV when @p name names none (rdp_err_msg() lists the devices).
 */
int rt_pick_device(const struct ep_lcore *lc, const char *name, const struct sockaddr *local);
/* The index of the device named @p name, or -ENODEV (rdp_err_msg() lists the devices). */
int rt_device_by_name(const char *name);
/* 0 when @p name is NULL, empty or a device's name; else -ENODEV as above. */
int rt_device_check(const char *name);
/* Room for a device name (struct rdp_dev_attr.name). */
#define EP_DEV_NAME_MAX 64
/* A new endpoint object on device @p dev (refs: engine + application when app_visible). */
struct rdp_ep *ep_new(struct ep_lcore *lc, unsigned int dev, const struct rdp_ep_params *prm,
		      bool app_visible);
/* Drop a reference; the last one releases through the control thread. */
void ep_unref(struct rdp_ep *ep);
/* Free an endpoint's memory and resources (control thread). */
void ep_free(struct rdp_ep *ep);
/* Run fn(NULL, arg) on a poller lcore (TAG_CALL): 0, -ENOMEM or -ENOBUFS. */
int ep_lcore_call(struct ep_lcore *lc, rdp_ep_call_fn fn, void *arg);
/* The hook every poller runs (ep_session.c): session timers, then the application's. */
unsigned int ep_lcore_hook(void *arg);
/* rdp_fini(): close every session and wait until they are gone; 0 or -EBUSY. */
int ep_sessions_close_all(unsigned int wait_ms);
/* One endpoint's line of rdp_endpoints_dump() (ep_telemetry.c). */
void ep_dump_one(FILE *f, const struct rdp_ep *ep);
/* Register the telemetry commands, once (ep_telemetry.c). */
void ep_telemetry_register(void);

static inline void
ep_set_state(struct rdp_ep *ep, enum rdp_ep_state s)
{
	atomic_store_explicit(&ep->state, (uint8_t)s, memory_order_release);
}

static inline enum rdp_ep_state
ep_get_state(const struct rdp_ep *ep)
{
	return (enum rdp_ep_state)atomic_load_explicit(&ep->state, memory_order_acquire);
}

/*
 * Per-QP CQ entries: S + R, plus the flush marker's slot. With an SRQ a
 * QP has no receive queue: S + 1, and the SRQ's srq_size once per poller.
 */
static inline uint32_t
ep_cq_budget(const struct ep_lcore *lc)
{
	return lc->conf.srq == RDP_CFG_ON ? lc->credit.sq_size + 1 :
		rdp_credit_cq_budget(&lc->credit) + 1;
}

/*
 * The most CQ entries an lcore's CQ on one device is reserved for: every
 * endpoint max_endpoints allows at ep_cq_budget(), and the SRQ's receives
 * once. The CQ grows towards it as endpoints are admitted.
 */
static inline uint64_t
ep_cq_most(const struct ep_lcore *lc)
{
	return (uint64_t)lc->conf.max_endpoints * ep_cq_budget(lc) +
	       (lc->conf.srq == RDP_CFG_ON ? lc->conf.srq_size : 0);
}

/*
 * The largest message the endpoint sends: in chunks or by rendezvous, as
 * its handshake agreed; before its handshake, the configuration's.
 */
static inline uint32_t
ep_send_limit(const struct rdp_ep *ep)
{
	return ep->max_send_msg != 0 ? RTE_MAX(ep->max_send_msg, ep->rndv_max) :
		ep->lc->conf.max_msg_size;
}

#endif /* RDP_EP_PRIVATE_H */
