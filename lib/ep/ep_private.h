/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_EP_PRIVATE_H
#define RDP_EP_PRIVATE_H

/*
 * Endpoint internals shared by the datapath (ep_data.c, poller lcores), the
 * control thread (ep_ctl.c) and the runtime (ep_runtime.c).
 *
 * Ownership: an endpoint belongs to the control thread until it is admitted
 * to its poller through the inbox; from then on only the poller touches its
 * datapath fields. The poller hands it back for teardown through the
 * control thread's inbox. The state field is the only one read anywhere.
 */

#include <pthread.h>
#include <stdatomic.h>
#include <sys/queue.h>

#include "rdp_cfg.h"
#include "rdp_credit.h"
#include "ep_frame.h"
#include "rdp_ep.h"
#include "rdp_hello.h"
#include "rdp_mem.h"
#include "rdp_poll.h"

extern int rdp_ep_logtype;
#define EP_LOG(level, fmt, ...) RDP_LOG(level, rdp_ep_logtype, "ep", fmt, ##__VA_ARGS__)

_Static_assert(IMM_CREDITS == RDP_CREDIT_IMM_MAX, "credit field width");

/*
 * Endpoint counters have one writer, the owning poller, and readers on any
 * thread (rdp_ep_stats_get(), telemetry): relaxed atomic loads and stores,
 * plain moves on x86, keep every value whole.
 */
#define EP_STAT_ADD(ep, field, n) \
	__atomic_store_n(&(ep)->stats.field, \
			 __atomic_load_n(&(ep)->stats.field, __ATOMIC_RELAXED) + (n), __ATOMIC_RELAXED)
#define EP_STAT_READ(ep, field) __atomic_load_n(&(ep)->stats.field, __ATOMIC_RELAXED)

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

/* Runtime of one poller lcore. */
struct ep_lcore {
	unsigned int lcore_id;
	int socket;
	struct rdp_poller *poller;
	struct rdp_pool *send_pool;
	struct rdp_cfg_lcore conf;        /* resolved configuration */
	struct rdp_credit_params credit;  /* from conf */
	struct rdp_qp_conn_params conn;   /* from conf */
	uint32_t max_inline;              /* min(config, device) */
};

/* Handshake progress (control thread only). */
enum hs_step {
	HS_NONE = 0,
	HS_TCP_CONNECT,  /* client: waiting for connect() */
	HS_SEND,         /* sending out_buf, then next_step */
	HS_RECV_ACK,     /* client: waiting for HELLO_ACK */
	HS_RECV_HELLO,   /* server: waiting for HELLO */
	HS_RECV_READY,   /* server: waiting for READY */
	HS_DONE,         /* admitted; the socket watches for peer death */
};

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

struct rdp_ep {
	struct rdp_poll_busy busy;      /* poller busy-list hook */
	struct ep_lcore *lc;            /* owning lcore */
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
	bool closing;                   /* application closed it */
	bool retired;                   /* handed back to the control thread */
	bool app_visible;               /* (atomic) the application knows it: events flow */
	bool release_pending;           /* free it when it leaves the busy list */
	bool admitted;                  /* the poller took it over: its events may flow */
	bool held_ref;                  /* they hold a reference (kept until retired) */
	bool backpressured;
	bool drain_posted;
	bool drain_done;
	bool handed;                    /* the control thread handed it over (TAG_ADMIT) */
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
	uint32_t max_send_msg;          /* largest message we send */
	uint32_t max_inline;
	uint32_t track_mask;
	struct ep_track *track;         /* [seq & track_mask] */
	struct rdp_msg *tx_seg;         /* next chunk of the first to post, NULL: start */
	struct ep_txq txq;              /* accepted messages, in order */
	/* failures, teardown, handover */
	uint64_t err_seq;               /* lowest sequence with an error completion */
	uint64_t drain_seq;             /* sequence of the drain marker */
	int early_err;                  /* first error before the handover; the control
					 * thread, which still owns the handshake, is told */
	struct rdp_msg *early_head;     /* messages completed before that, in order */
	struct rdp_msg *early_tail;

	/* --- control thread --- */
	TAILQ_ENTRY(rdp_ep) ctl_next;   /* handshakes / established */
	TAILQ_ENTRY(rdp_ep) all_next;   /* registry for telemetry */
	int fd;
	int ctl_err;                    /* why the control side failed it */
	bool is_server;
	bool qp_made;                   /* its QP exists: its poller sees its completions,
					 * may retire it at any time and alone ends it */
	enum hs_step hs;
	enum hs_step hs_after_send;
	uint64_t deadline_ns;           /* the handshake's, then the drain's */
	TAILQ_ENTRY(rdp_ep) drain_next; /* closed while established: drain deadlines */
	bool drain_listed;              /* on that list */
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

/* ---- datapath (ep_data.c), poller thread ---- */
extern const struct rdp_poll_ops ep_poll_ops;
/* Post the initial receives (control thread, before the QP is handed over). */
int ep_post_initial_recvs(struct rdp_ep *ep);
/* The last reference is gone; called on the owning poller's thread. */
void ep_release_on_poller(struct rdp_ep *ep);

/* ---- control thread (ep_ctl.c) ---- */
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
	struct rdp_dev *dev;
	struct rdp_pd *pd;
	struct rdp_dev_attr attr;
	char driver_info[512];
	struct ep_lcore *lcores[RTE_MAX_LCORE];
	unsigned int order[RTE_MAX_LCORE]; /* poller lcores, for round robin */
	unsigned int nb_lcores;
	unsigned int rr;
	pthread_mutex_t lock;              /* registry and rr */
	TAILQ_HEAD(, rdp_ep) all;
	uint32_t next_id;
	bool auth;                         /* a shared secret is configured */
	uint8_t auth_key[RDP_HELLO_KEY_LEN];
};
extern struct ep_runtime rdp_rt;

/* Pick the poller for a new endpoint. */
struct ep_lcore *rt_pick_lcore(int lcore);
/* A new endpoint object (refs: engine + application when app_visible). */
struct rdp_ep *ep_new(struct ep_lcore *lc, const struct rdp_ep_params *prm, bool app_visible);
/* Drop a reference; the last one releases through the control thread. */
void ep_unref(struct rdp_ep *ep);
/* Free an endpoint's memory and resources (control thread). */
void ep_free(struct rdp_ep *ep);

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

/* Per-QP CQ entries: S + R, plus the drain marker's slot. */
static inline uint32_t
ep_cq_budget(const struct ep_lcore *lc)
{
	return rdp_credit_cq_budget(&lc->credit) + 1;
}

#endif /* RDP_EP_PRIVATE_H */
