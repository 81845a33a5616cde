/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdp-perf: message latency and rate over rdmaplane endpoints.
 *
 *   rdp-perf [EAL args] -- [options]
 *
 * A server echoes ('E') or swallows ('S') what it receives; a client
 * measures ping-pong latency, windowed message rate one way, and echo
 * streams both ways, and RDMA WRITE and READ into a region the server
 * allocates (as perftest's ib_write_bw, ib_read_bw, ib_write_lat and
 * ib_read_lat do). Without --server or --connect it runs both sides on
 * this machine: it starts the server as a second process, pinned to the
 * other CPU. Everything the client measures is counted on its poller
 * lcores (run-to-completion) or its main lcore (pipeline).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include "rdp_clock.h"
#include "rdp_common.h"
#include "app_launch.h"
#include "perf_hist.h"
#include "perf_wire.h"
#include "rdp_build_config.h"
#include "rdp_cfg.h"
#include "rdp_ep.h"
#include "rdp_rdma.h"

#define MAX_SIZES 16
#define MAX_EPS 4096
/* Once an endpoint failed, how long without news from the others ends the run, s. */
#define FAIL_SETTLE_S 1.0

enum perf_mode {
	MODE_LAT = 0, MODE_BW, MODE_BIDIR, MODE_WRITE, MODE_READ, MODE_WRITE_LAT, MODE_READ_LAT,
	MODE_MAX
};
static const char *const mode_names[] = {
	"lat", "bw", "bidir", "write", "read", "write_lat", "read_lat",
};

/* One-sided modes: RDMA WRITE or READ into the server's region, no messages. */
static inline bool
mode_rdma(enum perf_mode m)
{
	return m >= MODE_WRITE;
}

/* Modes with one operation or message in flight, timed each. */
static inline bool
mode_pingpong(enum perf_mode m)
{
	return m == MODE_LAT || m == MODE_WRITE_LAT || m == MODE_READ_LAT;
}

/* Modes whose samples are timed from send to answer (or completion). */
static inline bool
mode_timed(enum perf_mode m)
{
	return m == MODE_LAT || m == MODE_BIDIR || m == MODE_WRITE_LAT || m == MODE_READ_LAT;
}

/* The region both sides allocate for the one-sided modes: the largest -s. */
#define PERF_REGION_BYTES (16u << 20)
static struct rdp_region *region;

static struct {
	bool server;
	bool loopback;
	char connect[128];
	char listen[128];
	const char *config;
	const char *driver;
	bool modes[MODE_MAX];
	uint32_t sizes[MAX_SIZES];
	unsigned int nb_sizes;
	double duration;
	uint64_t iters;
	unsigned int endpoints;
	unsigned int busy;      /* endpoints that carry traffic: the first ones */
	unsigned int window;
	bool pipeline;
	const char *json;
	int port_fd;
	const char *server_lcores;
	uint32_t max_msg;       /* server: largest message to accept (0: the config's) */
	double stall_s;         /* a phase's end: longest wait with nothing completing */
	bool quiet;
} opt = {
	.listen = "127.0.0.1:18515",
	.duration = 2.0,
	.endpoints = 1,
	.window = 64,
	.port_fd = -1,
	.stall_s = 10.0,
};

/* set by a signal handler, which may run on any thread: a lock-free atomic */
static bool force_quit;

static void
on_signal(int sig)
{
	(void)sig;
	__atomic_store_n(&force_quit, true, __ATOMIC_RELAXED);
}

static inline bool
quitting(void)
{
	return __atomic_load_n(&force_quit, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------------- */
/* Client state                                                           */
/* ---------------------------------------------------------------------- */

/*
 * The main thread sets mode, size and window between phases, then running
 * (release); pollers read them (atomic, relaxed) once they saw running.
 */
struct perf_phase {
	enum perf_mode mode;
	uint32_t size;
	uint32_t window;
	bool running;   /* send more (atomic) */
	bool measuring; /* record latencies (atomic) */
};

struct perf_ep {
	struct rdp_ep *ep;
	struct perf_phase *ph;
	uint64_t *ts;           /* send timestamps of echo modes, in order */
	uint32_t ts_mask;
	uint64_t ts_head;
	uint64_t ts_tail;
	uint32_t inflight;      /* awaiting completion (bw) or echo (lat, bidir) */
	uint64_t completed;     /* messages completed */
	uint64_t completed_before; /* completed when the phase began (main thread) */
	uint64_t bytes;         /* their payload */
	uint64_t failed;        /* sends reported failed */
	uint64_t extra;         /* completions with nothing in flight */
	struct perf_seq seq;    /* what we send, and the server's echoes */
	uint8_t query;          /* this phase's QUERY: enum query_state (atomic) */
	uint64_t query_seq;     /* its number */
	bool answered;          /* its ANSWER came (atomic, release) */
	bool have_rdesc;        /* the server's region came (atomic, release) */
	struct rdp_rdesc rdesc; /* ... and here it is */
	uint64_t answer[PERF_ANS_WORDS];
	bool established;
	int err;
	bool waiting;           /* in its lcore's turn queue (struct turn_queue) */
	struct perf_ep *next_waiting;
	struct perf_hist hist;
} __rte_cache_aligned;

static struct perf_ep peps[MAX_EPS];
static struct perf_phase phase;
static struct rte_ring *events;   /* pipeline mode */

static inline bool
ph_running(void)
{
	return __atomic_load_n(&phase.running, __ATOMIC_ACQUIRE);
}

/* A message's kind; an empty one has none (0). */
static inline uint8_t
msg_kind(const struct rdp_msg *m)
{
	return m->data_len > 0 ? *(const uint8_t *)m->data : 0;
}

/* Most messages fill() allocates and hands over in one burst. */
#define FILL_BURST 32

/* fill() for the one-sided modes: WRITEs or READs of @p size bytes at offset 0. */
static void
fill_rdma(struct perf_ep *pe, enum perf_mode mode, uint32_t size, uint32_t window, uint64_t now)
{
	struct rdp_rdma_op ops[FILL_BURST];
	bool write = mode == MODE_WRITE || mode == MODE_WRITE_LAT;

	while (pe->inflight < window && ph_running()) {
		uint16_t n = (uint16_t)RTE_MIN(window - pe->inflight, (uint32_t)FILL_BURST);
		uint16_t i, k;

		if (mode_timed(mode) && now == 0)
			now = rte_rdtsc();
		for (i = 0; i < n; i++) {
			ops[i] = (struct rdp_rdma_op){
				.opcode = write ? RDP_RDMA_WRITE : RDP_RDMA_READ, .region = region,
				.len = size, .remote = pe->rdesc,
			};
			if (mode_timed(mode))
				pe->ts[pe->ts_head++ & pe->ts_mask] = now;
		}
		k = rdp_ep_rdma_burst(pe->ep, ops, n);
		if (mode_timed(mode))
			pe->ts_head -= n - k;
		__atomic_store_n(&pe->inflight, pe->inflight + k, __ATOMIC_RELAXED);
		if (k < n)
			return; /* no event buffer or inbox room: completions come back */
	}
}

/*
 * Endpoints that found no send buffer, in the order they asked, one queue
 * per lcore that handles events (each poller lcore, or the main lcore in
 * pipeline mode). The send pool and the rendezvous send arena are the
 * poller's, shared by its endpoints: an endpoint with nothing in flight
 * gets no completion to try again from. So an endpoint that is refused
 * waits here, and serve_turns() (the poll hook, or the pipeline's event
 * loop) fills them in turn with what the others free. An endpoint whose
 * own completions freed buffers refills at once, in the bursts they freed:
 * queued behind the waiters, every endpoint would send a message or two
 * at a time once the pool runs short, as thousands of endpoints make it.
 * A waiting endpoint's own completion serves the queue at once too: the
 * library hands reports over before it starts reading received rendezvous
 * messages, and a message sent from the report goes before that copy.
 */
struct turn_queue {
	struct perf_ep *head, *tail;
} __rte_cache_aligned;

static struct turn_queue turns[RTE_MAX_LCORE];

static struct turn_queue *
my_turns(void)
{
	unsigned int lc = rte_lcore_id();

	return lc < RTE_MAX_LCORE ? &turns[lc] : NULL;
}

static void
turn_wait(struct turn_queue *q, struct perf_ep *pe)
{
	pe->waiting = true;
	pe->next_waiting = NULL;
	if (q->tail != NULL)
		q->tail->next_waiting = pe;
	else
		q->head = pe;
	q->tail = pe;
}

/*
 * Send messages up to the window, in bursts; false when no send buffer was
 * left for the next one (*@p sent says how many went before). @p now is
 * when the echo that made room arrived (0: no echo, read the clock): a
 * message's latency sample starts there, so that a sample covers a whole
 * iteration, the client's turnaround included, with one clock read per
 * echo (as ucx_perftest times its iterations). An endpoint filled in its
 * turn (serve_turns()) starts its samples when it sends.
 */
static bool
fill_window(struct perf_ep *pe, enum perf_mode mode, uint32_t size, uint32_t window, uint64_t now,
	    uint32_t *sent)
{
	struct rdp_msg *m[FILL_BURST];

	*sent = 0;
	while (pe->inflight < window && ph_running()) {
		uint16_t n = (uint16_t)RTE_MIN(window - pe->inflight, (uint32_t)FILL_BURST);
		uint16_t i, k;

		if (rdp_msg_alloc_bulk(pe->ep, m, n, size) < 0) {
			n = 1;
			if (rdp_msg_alloc_bulk(pe->ep, m, n, size) < 0)
				return false;
		}
		if (mode != MODE_BW && now == 0)
			now = rte_rdtsc();
		for (i = 0; i < n; i++) {
			perf_stamp(m[i]->data, m[i]->data_len,
				   mode == MODE_BW ? PERF_SINK : PERF_ECHO, pe->seq.next_tx++);
			if (mode != MODE_BW)
				pe->ts[pe->ts_head++ & pe->ts_mask] = now;
		}
		k = rdp_ep_send_burst(pe->ep, m, n);
		/* the refused ones give their numbers back */
		pe->seq.next_tx -= n - k;
		if (mode != MODE_BW)
			pe->ts_head -= n - k;
		__atomic_store_n(&pe->inflight, pe->inflight + k, __ATOMIC_RELAXED);
		*sent += k;
		if (k < n) {
			rdp_msg_free_bulk(&m[k], n - k);
			break; /* refused: its completions bring it back */
		}
	}
	return true;
}

static unsigned int serve_turns(void);

/* Keep the window full; runs where the endpoint's events are handled. */
static void
fill(struct perf_ep *pe, uint64_t now)
{
	struct perf_phase *ph = pe->ph;
	struct turn_queue *q;
	enum perf_mode mode;
	uint32_t size, window, sent;

	if (!ph_running())
		return;
	mode = __atomic_load_n(&ph->mode, __ATOMIC_RELAXED);
	size = __atomic_load_n(&ph->size, __ATOMIC_RELAXED);
	window = __atomic_load_n(&ph->window, __ATOMIC_RELAXED);
	if (mode_rdma(mode)) {
		fill_rdma(pe, mode, size, window, now);
		return;
	}
	q = my_turns();
	if (q == NULL) {
		fill_window(pe, mode, size, window, now, &sent);
		return;
	}
	if (pe->waiting) {
		/* its own message came back: what it freed goes to the queue's head now */
		serve_turns();
		return;
	}
	if (pe->inflight >= window)
		return;
	if (!fill_window(pe, mode, size, window, now, &sent))
		turn_wait(q, pe);
}

/*
 * Fill the waiting endpoints of this lcore in turn, until one is refused
 * again: refused before it sent anything, it keeps the head of the queue;
 * after, it waits at the tail for its next turn. Returns how many sent.
 */
static unsigned int
serve_turns(void)
{
	struct turn_queue *q = my_turns();
	struct perf_ep *pe;
	unsigned int served = 0;

	while (q != NULL && (pe = q->head) != NULL) {
		struct perf_phase *ph = pe->ph;
		uint32_t sent;
		bool filled;

		filled = fill_window(pe, __atomic_load_n(&ph->mode, __ATOMIC_RELAXED),
				     __atomic_load_n(&ph->size, __ATOMIC_RELAXED),
				     __atomic_load_n(&ph->window, __ATOMIC_RELAXED), 0, &sent);
		if (!filled && sent == 0)
			break;
		q->head = pe->next_waiting;
		if (q->head == NULL)
			q->tail = NULL;
		pe->waiting = false;
		served++;
		if (!filled) {
			turn_wait(q, pe);
			break;
		}
	}
	return served;
}

static unsigned int
turns_hook(void *arg)
{
	RTE_SET_USED(arg);
	return serve_turns();
}

static void
kick(struct rdp_ep *ep, void *arg)
{
	RTE_SET_USED(ep);
	fill(arg, 0);
}

/* The end-of-phase QUERY of an endpoint (sync_phase()). */
enum query_state {
	QUERY_TO_SEND = 0, /* the main thread asks for it */
	QUERY_ASKED,       /* send_query() is on its way to the poller */
	QUERY_SENT,
};

/* Send this phase's QUERY, where the endpoint's sends are made. */
static void
send_query(struct rdp_ep *ep, void *arg)
{
	struct perf_ep *pe = arg;
	struct rdp_msg *q = rdp_msg_alloc(ep, PERF_ANSWER_LEN);

	if (q != NULL) {
		pe->query_seq = pe->seq.next_tx;
		perf_stamp(q->data, q->data_len, PERF_QUERY, pe->seq.next_tx++);
		if (rdp_ep_send_burst(ep, &q, 1) == 1) {
			__atomic_store_n(&pe->query, QUERY_SENT, __ATOMIC_RELAXED);
			return;
		}
		pe->seq.next_tx--;
		rdp_msg_free(q);
	}
	/* pool or inbox full: the main thread asks again */
	__atomic_store_n(&pe->query, QUERY_TO_SEND, __ATOMIC_RELAXED);
}

/* Ask the server for its region (one-sided modes), where the endpoint's sends are made. */
static void
send_region_request(struct rdp_ep *ep, void *arg)
{
	struct perf_ep *pe = arg;
	struct rdp_msg *q = rdp_msg_alloc(ep, PERF_SEQ_OFF + PERF_SEQ_BYTES);

	if (q == NULL)
		return; /* the caller asks again */
	perf_stamp(q->data, q->data_len, PERF_REGION, pe->seq.next_tx++);
	if (rdp_ep_send_burst(ep, &q, 1) != 1) {
		pe->seq.next_tx--;
		rdp_msg_free(q);
	}
}

/*
 * This side's region for the one-sided modes (client and server), memory
 * the library allocates: on shm the server's is mapped by each client at
 * connect, so a WRITE or READ into it is a memcpy.
 */
static int
region_setup(void)
{
	region = rdp_region_alloc(PERF_REGION_BYTES,
				  RDP_REGION_REMOTE_WRITE | RDP_REGION_REMOTE_READ, -1);
	if (region == NULL) {
		fprintf(stderr, "rdp-perf: rdp_region_alloc: %s\n", rdp_err_msg());
		return -1;
	}
	return 0;
}

static void
region_teardown(void)
{
	if (region != NULL && rdp_region_deregister(region) < 0)
		fprintf(stderr, "rdp-perf: rdp_region_deregister: %s\n", rdp_err_msg());
	region = NULL;
}

/*
 * One message left the window. The count in flight goes last, with
 * release: drain() acquires it, and the main thread then reads the
 * histogram and the counts. A completion with nothing in flight would be
 * a message completed twice: it is counted, never wrapped around.
 */
static void
inflight_sub(struct perf_ep *pe)
{
	if (unlikely(pe->inflight == 0)) {
		if (pe->extra == 0)
			fprintf(stderr, "rdp-perf: endpoint %u: a message completed with none in "
				"flight (completed twice?)\n", rdp_ep_id(pe->ep));
		__atomic_store_n(&pe->extra, pe->extra + 1, __ATOMIC_RELAXED);
		return;
	}
	__atomic_store_n(&pe->inflight, pe->inflight - 1, __ATOMIC_RELEASE);
}

static void
complete(struct perf_ep *pe, uint32_t len)
{
	__atomic_store_n(&pe->completed, pe->completed + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&pe->bytes, pe->bytes + len, __ATOMIC_RELAXED);
	inflight_sub(pe);
}

static void
client_sent(struct perf_ep *pe, struct rdp_msg **msgs, uint16_t n)
{
	uint16_t i;

	for (i = 0; i < n; i++) {
		uint8_t kind = msg_kind(msgs[i]);

		if (msgs[i]->event == RDP_EV_RDMA_DONE) {
			if (mode_timed(__atomic_load_n(&pe->ph->mode, __ATOMIC_RELAXED))) {
				uint64_t sent = pe->ts[pe->ts_tail++ & pe->ts_mask];

				if (__atomic_load_n(&pe->ph->measuring, __ATOMIC_RELAXED))
					hist_add(&pe->hist, rte_rdtsc() - sent);
			}
			complete(pe, msgs[i]->pkt_len);
		} else if (msgs[i]->event == RDP_EV_RDMA_FAILED) {
			__atomic_store_n(&pe->failed, pe->failed + 1, __ATOMIC_RELAXED);
			inflight_sub(pe);
		} else if (msgs[i]->event == RDP_EV_SEND_FAILED) {
			__atomic_store_n(&pe->failed, pe->failed + 1, __ATOMIC_RELAXED);
			if (kind != PERF_QUERY && kind != PERF_REGION)
				inflight_sub(pe);
		} else if (kind == PERF_SINK) {
			/*
			 * A stream's message is done when its send is. Ask the
			 * message, not the phase: a ping-pong's send completion
			 * can come after its echo, in the next phase.
			 */
			complete(pe, msgs[i]->pkt_len);
		}
	}
	rdp_msg_free_bulk(msgs, n);
	fill(pe, 0);
}

/* The server's ANSWER to this phase's QUERY. */
static void
client_answered(struct perf_ep *pe, const struct rdp_msg *m)
{
	unsigned int w;

	if (m->data_len < PERF_ANSWER_LEN) {
		fprintf(stderr, "rdp-perf: endpoint %u: an answer of %u bytes, expected %u\n",
			rdp_ep_id(pe->ep), m->data_len, PERF_ANSWER_LEN);
		pe->answer[PERF_ANS_RECEIVED] = UINT64_MAX;
	} else {
		for (w = 0; w < PERF_ANS_WORDS; w++)
			pe->answer[w] = perf_get_u64((const uint8_t *)m->data + PERF_ANS_OFF + 8 * w, 8);
	}
	__atomic_store_n(&pe->answered, true, __ATOMIC_RELEASE);
}

/* The server's region for the one-sided modes; checked as a peer's descriptor must be. */
static void
client_got_rdesc(struct perf_ep *pe, const struct rdp_msg *m)
{
	char why[160];

	if (m->data_len < PERF_ANS_OFF + RDP_RDESC_LEN ||
	    rdp_rdesc_decode((const uint8_t *)m->data + PERF_ANS_OFF, RDP_RDESC_LEN, &pe->rdesc,
			     why, sizeof(why)) < 0) {
		fprintf(stderr, "rdp-perf: endpoint %u: the server's region: %s\n",
			rdp_ep_id(pe->ep), m->data_len < PERF_ANS_OFF + RDP_RDESC_LEN ?
			"message too short" : why);
		__atomic_store_n(&pe->err, -EPROTO, __ATOMIC_RELEASE);
		return;
	}
	__atomic_store_n(&pe->have_rdesc, true, __ATOMIC_RELEASE);
}

static void
client_received(struct perf_ep *pe, struct rdp_msg **msgs, uint16_t n)
{
	uint64_t now = rte_rdtsc();
	bool measuring = __atomic_load_n(&pe->ph->measuring, __ATOMIC_RELAXED);
	uint16_t i;

	for (i = 0; i < n; i++) {
		const uint8_t *data = msgs[i]->data;
		uint64_t sent, expected, seen;

		if (!perf_seq_check(&pe->seq, data, msgs[i]->data_len, &expected, &seen))
			fprintf(stderr, "rdp-perf: endpoint %u: exactly-once broken: the server's "
				"message %" PRIu64 " came where %" PRIu64 " was expected (%s)\n",
				rdp_ep_id(pe->ep), seen, expected,
				seen < expected ? "a duplicate or an old one" : "messages lost");
		if (msg_kind(msgs[i]) == PERF_ANSWER) {
			client_answered(pe, msgs[i]);
			continue;
		}
		if (msg_kind(msgs[i]) == PERF_RDESC) {
			client_got_rdesc(pe, msgs[i]);
			continue;
		}
		sent = pe->ts[pe->ts_tail++ & pe->ts_mask];
		if (measuring)
			hist_add(&pe->hist, now - sent);
		complete(pe, msgs[i]->pkt_len);
	}
	/* the next requests first: freeing the echoes is not their latency */
	fill(pe, now);
	rdp_msg_free_bulk(msgs, n);
}

static uint16_t
c_on_recv(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	RTE_SET_USED(ep);
	client_received(arg, msgs, n);
	return n;
}

static void
c_on_send(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	RTE_SET_USED(ep);
	client_sent(arg, msgs, n);
}

static void
c_on_state(struct rdp_ep *ep, enum rdp_ep_state st, int err, void *arg)
{
	struct perf_ep *pe = arg;

	RTE_SET_USED(ep);
	if (st == RDP_EP_ESTABLISHED)
		__atomic_store_n(&pe->established, true, __ATOMIC_RELEASE);
	else if (st == RDP_EP_FAILED)
		__atomic_store_n(&pe->err, err != 0 ? err : -ECONNRESET, __ATOMIC_RELEASE);
	else if (st == RDP_EP_PEER_CLOSED)
		__atomic_store_n(&pe->err, -ESHUTDOWN, __ATOMIC_RELEASE); /* the server went first */
}

static const struct rdp_ep_ops client_ops = {
	.on_recv = c_on_recv,
	.on_send = c_on_send,
	.on_state = c_on_state,
};

/* Pipeline mode: the main lcore handles every event. */
static unsigned int
pump_events(void)
{
	struct rdp_msg *ev[64];
	uint16_t n, i;

	n = rdp_event_dequeue_burst(events, ev, RTE_DIM(ev));
	for (i = 0; i < n; i++) {
		struct perf_ep *pe = rdp_ep_get_ctx(ev[i]->ep);

		switch (ev[i]->event) {
		case RDP_EV_RECV:
			client_received(pe, &ev[i], 1);
			break;
		case RDP_EV_SEND_DONE:
		case RDP_EV_SEND_FAILED:
		case RDP_EV_RDMA_DONE:
		case RDP_EV_RDMA_FAILED:
			client_sent(pe, &ev[i], 1);
			break;
		case RDP_EV_STATE:
			c_on_state(ev[i]->ep, (enum rdp_ep_state)ev[i]->user_data,
				   ev[i]->status, pe);
			rdp_msg_free(ev[i]);
			break;
		}
	}
	return n + serve_turns();
}

/* ---------------------------------------------------------------------- */
/* Server                                                                 */
/* ---------------------------------------------------------------------- */

static uint64_t srv_eps, srv_seq_errors;

/*
 * Messages received, per poller lcore: one writer each, so a plain store;
 * a locked add on every delivery would wait for the poller's stores before
 * it (the payloads just copied) to leave the store buffer. Other threads
 * (none that receive, but the count stays right) add atomically to the
 * last slot.
 */
static struct {
	uint64_t n;
} __rte_cache_aligned srv_msgs[RTE_MAX_LCORE + 1];

static void
srv_msgs_add(uint64_t n)
{
	unsigned int lc = rte_lcore_id();

	if (lc < RTE_MAX_LCORE)
		RDP_STAT_ADD(srv_msgs[lc].n, n);
	else
		__atomic_fetch_add(&srv_msgs[RTE_MAX_LCORE].n, n, __ATOMIC_RELAXED);
}

static uint64_t
srv_msgs_total(void)
{
	uint64_t sum = 0;
	unsigned int i;

	for (i = 0; i < RTE_DIM(srv_msgs); i++)
		sum += __atomic_load_n(&srv_msgs[i].n, __ATOMIC_RELAXED);
	return sum;
}

/* A server endpoint's own state (its ctx). */
struct srv_ep {
	struct perf_seq seq;
};

/*
 * What answers a message: an echo of the same length, an ANSWER with the
 * counts (the query included, as @p seq already holds it), or nothing.
 */
static struct rdp_msg *
srv_reply(struct rdp_ep *ep, const struct rdp_msg *m, struct perf_seq *seq)
{
	uint8_t kind = msg_kind(m);
	struct rdp_msg *r;

	if (kind == PERF_REGION) {
		struct rdp_rdesc d;

		r = rdp_msg_alloc(ep, PERF_ANS_OFF + RDP_RDESC_LEN);
		if (r == NULL)
			return NULL;
		perf_stamp(r->data, r->data_len, PERF_RDESC, seq->next_tx++);
		rdp_ep_region_rdesc(ep, region, &d);
		rdp_rdesc_encode(&d, (uint8_t *)r->data + PERF_ANS_OFF);
		return r;
	}
	if (kind != PERF_ECHO && kind != PERF_QUERY)
		return NULL;
	r = rdp_msg_alloc(ep, kind == PERF_ECHO ? m->pkt_len : PERF_ANSWER_LEN);
	if (r == NULL)
		return NULL;
	perf_stamp(r->data, r->data_len, kind == PERF_ECHO ? PERF_ECHO : PERF_ANSWER,
		   seq->next_tx++);
	if (kind == PERF_QUERY) {
		uint8_t *w = (uint8_t *)r->data + PERF_ANS_OFF;

		perf_put_u64(w + 8 * PERF_ANS_RECEIVED, 8, seq->next_rx);
		perf_put_u64(w + 8 * PERF_ANS_ERRORS, 8, seq->errors);
		perf_put_u64(w + 8 * PERF_ANS_EXPECTED, 8, seq->first_expected);
		perf_put_u64(w + 8 * PERF_ANS_SEEN, 8, seq->first_seen);
	}
	return r;
}

static uint16_t
s_on_recv(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	struct srv_ep *se = rdp_ep_get_ctx(ep);
	uint16_t i;

	RTE_SET_USED(arg);
	for (i = 0; i < n; i++) {
		struct rdp_msg *m = msgs[i], *r;
		uint8_t kind = msg_kind(m);
		/* checked on a copy: a message refused for now is offered again */
		struct perf_seq seq = se->seq;
		uint64_t expected, seen;
		bool in_order = perf_seq_check(&seq, m->data, m->data_len, &expected, &seen);

		r = srv_reply(ep, m, &seq);
		if (r == NULL && (kind == PERF_ECHO || kind == PERF_QUERY || kind == PERF_REGION))
			break; /* no send buffer: refuse the rest for now */
		if (r != NULL && rdp_ep_send_burst(ep, &r, 1) != 1) {
			rdp_msg_free(r);
			break;
		}
		se->seq = seq;
		if (!in_order) {
			__atomic_fetch_add(&srv_seq_errors, 1, __ATOMIC_RELAXED);
			fprintf(stderr, "rdp-perf server: endpoint %u from %s: exactly-once broken: "
				"message %" PRIu64 " came where %" PRIu64 " was expected (%s)\n",
				rdp_ep_id(ep), rdp_ep_peer(ep), seen, expected,
				seen < expected ? "a duplicate or an old one" : "messages lost");
		}
		rdp_msg_free(m);
	}
	srv_msgs_add(i);
	return i;
}

static void
s_on_send(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	RTE_SET_USED(ep);
	RTE_SET_USED(arg);
	rdp_msg_free_bulk(msgs, n);
}

static void
s_on_state(struct rdp_ep *ep, enum rdp_ep_state st, int err, void *arg)
{
	RTE_SET_USED(arg);
	RTE_SET_USED(err);
	if (st == RDP_EP_ESTABLISHED) {
		struct srv_ep *se = calloc(1, sizeof(*se));

		if (se == NULL) {
			fprintf(stderr, "rdp-perf server: endpoint %u: out of memory\n", rdp_ep_id(ep));
			rdp_ep_close(ep);
			return;
		}
		rdp_ep_set_ctx(ep, se);
		__atomic_fetch_add(&srv_eps, 1, __ATOMIC_RELAXED);
	} else if (st == RDP_EP_FAILED || st == RDP_EP_PEER_CLOSED) {
		rdp_ep_close(ep); /* the client left (or crashed): let it go */
	} else if (st == RDP_EP_CLOSED) {
		free(rdp_ep_get_ctx(ep));
	}
}

static const struct rdp_ep_ops server_ops = {
	.on_recv = s_on_recv,
	.on_send = s_on_send,
	.on_state = s_on_state,
};

static int
run_server(void)
{
	struct rdp_ep_params prm = { .ops = &server_ops, .lcore = -1 };
	int port;

	/* the one-sided modes' target, whether or not a client asks for it */
	if (region_setup() < 0)
		return 1;
	port = rdp_listen(opt.listen, &prm);
	if (port < 0) {
		fprintf(stderr, "rdp-perf: %s\n", rdp_err_msg());
		return 1;
	}
	if (opt.port_fd >= 0) {
		if (write(opt.port_fd, &port, sizeof(port)) != sizeof(port))
			return 1;
		close(opt.port_fd);
	}
	if (!opt.quiet)
		printf("rdp-perf server: listening on port %d (Ctrl-C to stop)\n", port);
	fflush(stdout);
	while (!quitting())
		usleep(10000);
	if (!opt.quiet)
		printf("rdp-perf server: %" PRIu64 " endpoints, %" PRIu64 " messages, %" PRIu64
		       " out of sequence\n", srv_eps, srv_msgs_total(), srv_seq_errors);
	return srv_seq_errors == 0 ? 0 : 1;
}

/* ---------------------------------------------------------------------- */
/* Client                                                                 */
/* ---------------------------------------------------------------------- */

struct perf_result {
	enum perf_mode mode;
	uint32_t size;
	uint64_t messages;
	double seconds;
	double msg_rate;
	double gbps;
	double cpu_ns_per_msg;
	uint64_t p50, p99, p999, max;
	double mean;                /* one-way, of the same samples */
	unsigned int active;        /* endpoints that completed a message in the phase */
	uint64_t seq_errors;        /* exactly-once violations seen in the phase, both sides */
	struct rdp_ep_stats credit; /* deltas over the measurement */
};

static double
cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void
sum_stats(struct rdp_ep_stats *s)
{
	unsigned int i;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < opt.endpoints; i++) {
		struct rdp_ep_stats e;

		rdp_ep_stats_get(peps[i].ep, &e);
		s->enomem += e.enomem;
		s->rnr += e.rnr;
		s->sq_stalls += e.sq_stalls;
		s->remote_stalls += e.remote_stalls;
		s->acks += e.acks;
		s->reclaims += e.reclaims;
		s->dups_dropped += e.dups_dropped;
	}
}

static void
sum_counts(uint64_t *msgs, uint64_t *bytes, uint64_t *failed)
{
	unsigned int i;

	*msgs = *bytes = *failed = 0;
	for (i = 0; i < opt.endpoints; i++) {
		*msgs += __atomic_load_n(&peps[i].completed, __ATOMIC_RELAXED);
		*bytes += __atomic_load_n(&peps[i].bytes, __ATOMIC_RELAXED);
		*failed += __atomic_load_n(&peps[i].failed, __ATOMIC_RELAXED);
	}
}

/* Endpoints failed so far. */
static unsigned int
failed_count(void)
{
	unsigned int i, n = 0;

	for (i = 0; i < opt.endpoints; i++)
		n += __atomic_load_n(&peps[i].err, __ATOMIC_ACQUIRE) != 0;
	return n;
}

/*
 * Has an endpoint failed? Then every endpoint that fails with it is
 * reported: when the server goes, each endpoint hears of it in its own time
 * (its control connection, its QP), and the run ends only once no more
 * news has come for FAIL_SETTLE_S (or all have failed), each failed one
 * said.
 */
static bool
any_failed(void)
{
	unsigned int i, n = failed_count(), now;
	double quiet_until;

	if (n == 0)
		return false;
	quiet_until = rdp_clock_s() + FAIL_SETTLE_S;
	while (n < opt.endpoints && rdp_clock_s() < quiet_until) {
		if (opt.pipeline)
			pump_events();
		else
			usleep(1000);
		now = failed_count();
		if (now != n) {
			n = now;
			quiet_until = rdp_clock_s() + FAIL_SETTLE_S;
		}
	}
	for (i = 0; i < opt.endpoints; i++) {
		int err = __atomic_load_n(&peps[i].err, __ATOMIC_ACQUIRE);

		if (err != 0)
			fprintf(stderr, "rdp-perf: endpoint %u (peer %s) failed: %s\n",
				rdp_ep_id(peps[i].ep), rdp_ep_peer(peps[i].ep), strerror(-err));
	}
	return true;
}

/* The largest of the -s sizes. */
static uint32_t
sizes_largest(void)
{
	uint32_t largest = 0;
	unsigned int i;

	for (i = 0; i < opt.nb_sizes; i++)
		largest = RTE_MAX(largest, opt.sizes[i]);
	return largest;
}

/*
 * -e fits the poller lcores: each holds max_endpoints, and an endpoint over
 * the sum would fail its handshake. Said before any is made.
 */
static bool
endpoints_fit(void)
{
	struct rdp_hs_stats hs;

	if (rdp_hs_stats_get(&hs) < 0 || opt.endpoints <= hs.waiting_max)
		return true;
	fprintf(stderr, "rdp-perf: -e %u: above the %u endpoints the poller lcores hold "
		"(max_endpoints, summed over them): raise max_endpoints in a configuration "
		"(-c FILE), or give EAL more lcores\n", opt.endpoints, hs.waiting_max);
	return false;
}

/*
 * Every size of the message modes fits what each endpoint carries: the
 * smaller of both sides' max_msg_size, agreed in the handshake. A server
 * started without --max-msg takes its configuration's (1 MiB by default),
 * and a larger message would be refused at every allocation (EMSGSIZE):
 * said before anything is measured.
 */
static bool
sizes_carried(void)
{
	uint32_t largest = 0;
	unsigned int i, m;

	for (m = 0; m < MODE_WRITE; m++)
		if (opt.modes[m])
			largest = sizes_largest();
	for (i = 0; i < opt.endpoints; i++) {
		uint32_t most = rdp_ep_max_msg_size(peps[i].ep);

		if (largest > most) {
			fprintf(stderr, "rdp-perf: endpoint %u to %s: -s %u is above the %u bytes "
				"it carries (the smaller max_msg_size of the two sides): start the "
				"server with --max-msg %u\n", rdp_ep_id(peps[i].ep), opt.connect, largest,
				most, largest);
			return false;
		}
	}
	return true;
}

/* Every endpoint learns the server's region; asks again until it came. */
static bool
regions_fetch(double timeout_s)
{
	double deadline = rdp_clock_s() + timeout_s, next_ask = 0;
	unsigned int i, left;

	do {
		bool ask = rdp_clock_s() >= next_ask;

		left = 0;
		for (i = 0; i < opt.endpoints; i++) {
			struct perf_ep *pe = &peps[i];

			if (__atomic_load_n(&pe->have_rdesc, __ATOMIC_ACQUIRE))
				continue;
			left++;
			if (!ask)
				continue;
			if (opt.pipeline)
				send_region_request(pe->ep, pe);
			else
				(void)rdp_ep_call(pe->ep, send_region_request, pe);
		}
		if (ask)
			next_ask = rdp_clock_s() + 1;
		if (opt.pipeline)
			pump_events();
		else if (left > 0)
			usleep(200);
		if (any_failed())
			return false;
	} while (left > 0 && rdp_clock_s() < deadline);
	if (left > 0)
		fprintf(stderr, "rdp-perf: %u endpoint(s) got no region from the server in %.0f s\n",
			left, timeout_s);
	return left == 0;
}

/*
 * Wait (pumping events in pipeline mode) until nothing is in flight; false
 * when nothing completed for timeout_s, or an endpoint failed.
 */
static bool
drain(double timeout_s)
{
	double deadline = rdp_clock_s() + timeout_s;
	uint64_t last = UINT64_MAX;
	unsigned int i;

	for (;;) {
		uint64_t left = 0;

		if (opt.pipeline)
			pump_events();
		for (i = 0; i < opt.endpoints; i++)
			left += __atomic_load_n(&peps[i].inflight, __ATOMIC_ACQUIRE);
		if (left == 0)
			return true;
		/* a slow link drains as long as messages keep completing */
		if (left < last) {
			last = left;
			deadline = rdp_clock_s() + timeout_s;
		}
		if (rdp_clock_s() > deadline || any_failed())
			return false;
		if (!opt.pipeline)
			usleep(100);
	}
}

static void
sleep_or_pump(double until)
{
	while (rdp_clock_s() < until && !quitting()) {
		if (opt.pipeline) {
			if (pump_events() == 0)
				rte_pause();
		} else {
			usleep(2000);
		}
	}
}

/* After a phase that did not drain: what each endpoint still waits for. */
static void
dump_stuck(void)
{
	unsigned int i, shown = 0;

	for (i = 0; i < opt.endpoints && shown < 8; i++) {
		uint32_t left = __atomic_load_n(&peps[i].inflight, __ATOMIC_RELAXED);
		struct rdp_ep_stats st;

		if (left == 0)
			continue;
		shown++;
		rdp_ep_stats_get(peps[i].ep, &st);
		fprintf(stderr, "rdp-perf: endpoint %u (%s): %d in flight; sent %" PRIu64
			", failed %" PRIu64 ", received %" PRIu64 "; SQ WRs outstanding %u, "
			"remote credits %u, owed %u, receives posted %u, acks %" PRIu64
			", reclaims %" PRIu64 ", SQ stalls %" PRIu64 ", remote stalls %" PRIu64 "\n",
			rdp_ep_id(peps[i].ep), rdp_ep_state_str(rdp_ep_state(peps[i].ep)), (int)left,
			st.msgs_sent, st.msgs_failed, st.msgs_received, st.sq_inflight,
			st.remote_credits, st.owed, st.recv_posted, st.acks, st.reclaims,
			st.sq_stalls, st.remote_stalls);
	}
}

/*
 * The end of a phase: a QUERY on every endpoint, and the server's ANSWER
 * says how many messages it received there and what its check saw. Any
 * difference from what this side sent, and anything this side's check
 * saw, is an exactly-once violation: counted in @p errors (cumulative per
 * endpoint, so the caller takes differences) and said on stderr. Returns
 * false when an endpoint did not answer.
 */
static bool
sync_phase(uint64_t *errors, double timeout_s)
{
	double deadline = rdp_clock_s() + timeout_s;
	unsigned int i, left;

	for (i = 0; i < opt.endpoints; i++) {
		__atomic_store_n(&peps[i].answered, false, __ATOMIC_RELAXED);
		__atomic_store_n(&peps[i].query, QUERY_TO_SEND, __ATOMIC_RELAXED);
	}
	do {
		left = 0;
		for (i = 0; i < opt.endpoints; i++) {
			struct perf_ep *pe = &peps[i];

			if (__atomic_load_n(&pe->answered, __ATOMIC_ACQUIRE))
				continue;
			left++;
			if (__atomic_load_n(&pe->query, __ATOMIC_RELAXED) != QUERY_TO_SEND)
				continue;
			__atomic_store_n(&pe->query, QUERY_ASKED, __ATOMIC_RELAXED);
			if (opt.pipeline)
				send_query(pe->ep, pe);
			else if (rdp_ep_call(pe->ep, send_query, pe) < 0)
				__atomic_store_n(&pe->query, QUERY_TO_SEND, __ATOMIC_RELAXED);
		}
		if (opt.pipeline)
			pump_events();
		else if (left > 0)
			usleep(200);
		if (any_failed())
			return false;
	} while (left > 0 && rdp_clock_s() < deadline);
	if (left > 0) {
		fprintf(stderr, "rdp-perf: %u endpoint(s) did not answer the end-of-phase query "
			"in %.0f s\n", left, timeout_s);
		return false;
	}
	*errors = 0;
	for (i = 0; i < opt.endpoints; i++) {
		struct perf_ep *pe = &peps[i];
		const uint64_t *a = pe->answer;
		uint32_t id = rdp_ep_id(pe->ep);

		*errors += pe->seq.errors + pe->extra + a[PERF_ANS_ERRORS];
		if (a[PERF_ANS_ERRORS] > 0)
			fprintf(stderr, "rdp-perf: endpoint %u: the server saw %" PRIu64 " message(s) "
				"out of sequence, the first %" PRIu64 " where %" PRIu64 " was expected\n",
				id, a[PERF_ANS_ERRORS], a[PERF_ANS_SEEN], a[PERF_ANS_EXPECTED]);
		if (a[PERF_ANS_RECEIVED] != pe->query_seq + 1) {
			/* the next phase starts from here: count the difference once */
			fprintf(stderr, "rdp-perf: endpoint %u: exactly-once broken: sent %" PRIu64
				" messages, the server received %" PRIu64 "\n", id, pe->query_seq + 1,
				a[PERF_ANS_RECEIVED]);
			*errors += 1;
		}
	}
	return true;
}

/* Violations counted by the phases before (sync_phase() counts from the start). */
static uint64_t seq_errors_before;

static int
run_phase(enum perf_mode mode, uint32_t size, struct perf_result *r)
{
	uint64_t m0, b0, f0, m1, b1, f1, last_m, last_b, seq_errors;
	struct rdp_ep_stats s0, s1, sp;
	struct perf_hist all;
	double t0, t1, c0, c1, tick, end, warm;
	unsigned int i;

	__atomic_store_n(&phase.mode, mode, __ATOMIC_RELAXED);
	__atomic_store_n(&phase.size, size, __ATOMIC_RELAXED);
	__atomic_store_n(&phase.window, mode_pingpong(mode) ? 1 : opt.window, __ATOMIC_RELAXED);
	memset(&all, 0, sizeof(all));
	for (i = 0; i < opt.endpoints; i++) {
		memset(&peps[i].hist, 0, sizeof(peps[i].hist));
		peps[i].completed_before = __atomic_load_n(&peps[i].completed, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&phase.measuring, false, __ATOMIC_RELEASE);
	__atomic_store_n(&phase.running, true, __ATOMIC_RELEASE);
	/* the first window goes where the endpoint's events are handled;
	 * completions keep it full from then on; endpoints past --busy are
	 * never started and stay idle */
	for (i = 0; i < opt.busy; i++) {
		if (opt.pipeline)
			fill(&peps[i], 0);
		else
			while (rdp_ep_call(peps[i].ep, kick, &peps[i]) < 0)
				usleep(100);
	}
	warm = rdp_clock_s() + RTE_MIN(0.5, opt.duration / 4);
	sleep_or_pump(warm);
	sum_counts(&m0, &b0, &f0);
	sum_stats(&s0);
	__atomic_store_n(&phase.measuring, true, __ATOMIC_RELEASE);
	t0 = rdp_clock_s();
	c0 = cpu_s();
	end = t0 + opt.duration;
	last_m = m0;
	last_b = b0;
	tick = t0 + 1;
	while (!quitting()) {
		double now = rdp_clock_s();

		/* look every 10 ms: --iters ends a phase as soon as it is reached */
		sleep_or_pump(now < end ? RTE_MIN(now + 0.01, end) : now + 0.001);
		sum_counts(&m1, &b1, &f1);
		if (opt.iters > 0 && m1 - m0 >= opt.iters)
			break;
		now = rdp_clock_s();
		/* a timed phase measures one message at least, however long it takes */
		if (opt.iters == 0 && now >= end && m1 != m0)
			break;
		if (opt.iters == 0 && now >= end + opt.stall_s) {
			fprintf(stderr, "rdp-perf: %s %u B: no message completed in the %.3f s "
				"measured nor %.0f s after (--stall-timeout)\n", mode_names[mode], size,
				opt.duration, opt.stall_s);
			dump_stuck();
			return -1;
		}
		if (any_failed())
			return -1;
		if (rdp_clock_s() < tick)
			continue;
		tick += 1;
		sum_stats(&sp);
		if (!opt.quiet)
			printf("  %-9s %7u B  %10.0f msg/s  %8.3f Gb/s  stalls sq %" PRIu64
			       " remote %" PRIu64 "\n", mode_names[mode], size,
			       (double)(m1 - last_m), (b1 - last_b) * 8 / 1e9,
			       sp.sq_stalls - s0.sq_stalls, sp.remote_stalls - s0.remote_stalls);
		fflush(stdout);
		last_m = m1;
		last_b = b1;
	}
	sum_counts(&m1, &b1, &f1);
	t1 = rdp_clock_s();
	c1 = cpu_s();
	__atomic_store_n(&phase.measuring, false, __ATOMIC_RELEASE);
	__atomic_store_n(&phase.running, false, __ATOMIC_RELEASE);
	if (!drain(opt.stall_s) || f1 != f0) {
		if (f1 != f0)
			fprintf(stderr, "rdp-perf: %s %u B: sends failed\n", mode_names[mode], size);
		else
			fprintf(stderr, "rdp-perf: %s %u B: messages still in flight, none completed "
				"for %.0f s (--stall-timeout)\n", mode_names[mode], size, opt.stall_s);
		dump_stuck();
		return -1;
	}
	if (!sync_phase(&seq_errors, opt.stall_s))
		return -1;
	sum_stats(&s1);
	memset(r, 0, sizeof(*r));
	for (i = 0; i < opt.endpoints; i++) {
		hist_merge(&all, &peps[i].hist);
		/* drain() acquired every count in flight: these are final */
		if (__atomic_load_n(&peps[i].completed, __ATOMIC_RELAXED) != peps[i].completed_before)
			r->active++;
	}
	r->mode = mode;
	r->size = size;
	r->seq_errors = seq_errors - seq_errors_before;
	seq_errors_before = seq_errors;
	r->messages = m1 - m0;
	r->seconds = t1 - t0;
	r->msg_rate = r->messages / r->seconds;
	r->gbps = (b1 - b0) * 8 / r->seconds / 1e9;
	r->cpu_ns_per_msg = r->messages ? (c1 - c0) * 1e9 / r->messages : 0;
	if (all.count > 0) {
		/*
		 * one-way latency: half the round trip of a ping-pong, an echo or
		 * a WRITE (its completion comes with the peer's acknowledgement);
		 * a READ's is its round trip (perftest's conventions)
		 */
		double ns = 1e9 / rte_get_tsc_hz() / (mode == MODE_READ_LAT ? 1 : 2);

		r->p50 = hist_quantile(&all, 0.50) * ns;
		r->p99 = hist_quantile(&all, 0.99) * ns;
		r->p999 = hist_quantile(&all, 0.999) * ns;
		r->max = all.max * ns;
		r->mean = (double)all.sum / (double)all.count * ns;
	}
	r->credit.enomem = s1.enomem - s0.enomem;
	r->credit.rnr = s1.rnr - s0.rnr;
	r->credit.sq_stalls = s1.sq_stalls - s0.sq_stalls;
	r->credit.remote_stalls = s1.remote_stalls - s0.remote_stalls;
	r->credit.acks = s1.acks - s0.acks;
	r->credit.reclaims = s1.reclaims - s0.reclaims;
	r->credit.dups_dropped = s1.dups_dropped - s0.dups_dropped;
	if (r->seq_errors > 0) {
		fprintf(stderr, "rdp-perf: %s %u B: %" PRIu64 " exactly-once violation(s)\n",
			mode_names[mode], size, r->seq_errors);
		return 1;
	}
	return 0;
}

/*
 * The process's memory, KiB: its proportional set size (Pss of
 * /proc/self/smaps_rollup), in which a page mapped twice counts once, as
 * the shm driver's peer segments are (once per QP); VmRSS counts them
 * per mapping. 0 when /proc says neither.
 */
static uint64_t
pss_kib(void)
{
	char line[128];
	uint64_t kib = 0;
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	const char *fmt = "Pss: %" SCNu64;

	if (f == NULL) {
		f = fopen("/proc/self/status", "r");
		fmt = "VmRSS: %" SCNu64;
	}
	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, fmt, &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static void
print_table(const struct perf_result *r, unsigned int n)
{
	unsigned int i;

	printf("\n%-9s %8s %10s %12s %9s %9s %9s %9s %9s %8s %6s %4s %9s %9s %8s %8s\n",
	       "mode", "size", "messages", "msg/s", "Gb/s", "p50 ns", "p99 ns", "p99.9 ns",
	       "max ns", "cpu ns", "ENOMEM", "RNR", "sq stall", "rem stall", "acks",
	       "reclaims");
	for (i = 0; i < n; i++)
		printf("%-9s %8u %10" PRIu64 " %12.0f %9.3f %9" PRIu64 " %9" PRIu64 " %9" PRIu64
		       " %9" PRIu64 " %8.0f %6" PRIu64 " %4" PRIu64 " %9" PRIu64 " %9" PRIu64
		       " %8" PRIu64 " %8" PRIu64 "\n",
		       mode_names[r[i].mode], r[i].size, r[i].messages, r[i].msg_rate, r[i].gbps,
		       r[i].p50, r[i].p99, r[i].p999, r[i].max, r[i].cpu_ns_per_msg,
		       r[i].credit.enomem, r[i].credit.rnr, r[i].credit.sq_stalls,
		       r[i].credit.remote_stalls, r[i].credit.acks, r[i].credit.reclaims);
	printf("\nlatency is one-way (half a round trip) for lat, bidir and write_lat, the round "
	       "trip for read_lat, and not measured otherwise; write and read count operations as "
	       "messages; cpu ns is process CPU time per message, busy polling included; ENOMEM "
	       "and RNR must be 0\n");
	printf("client memory (proportional set size): %.1f MiB with %u endpoints\n",
	       pss_kib() / 1024.0, opt.endpoints);
}

static int
write_json(const struct perf_result *r, unsigned int n)
{
	FILE *f = fopen(opt.json, "w");
	uint64_t all_msgs, all_bytes, all_failed;
	unsigned int i;

	if (f == NULL) {
		fprintf(stderr, "rdp-perf: --json %s: %s\n", opt.json, strerror(errno));
		return -1;
	}
	fprintf(f, "{\n  \"driver\": \"%s\",\n  \"endpoints\": %u,\n  \"window\": %u,\n"
		"  \"busy\": %u,\n  \"run_mode\": \"%s\",\n  \"results\": [\n",
		rdp_driver_info(), opt.endpoints, opt.window, opt.busy,
		opt.pipeline ? "pipeline" : "rtc");
	for (i = 0; i < n; i++)
		fprintf(f, "    {\"mode\": \"%s\", \"size\": %u, \"endpoints_active\": %u, "
			"\"messages\": %" PRIu64
			", \"seconds\": %.3f, \"msg_rate\": %.1f, \"gbps\": %.4f, \"lat_p50_ns\": %"
			PRIu64 ", \"lat_p99_ns\": %" PRIu64 ", \"lat_p999_ns\": %" PRIu64
			", \"lat_max_ns\": %" PRIu64 ", \"lat_mean_ns\": %.1f, \"cpu_ns_per_msg\": %.1f, "
			"\"seq_errors\": %" PRIu64 ", \"credit\": "
			"{\"enomem\": %" PRIu64 ", \"rnr\": %" PRIu64 ", \"sq_stalls\": %" PRIu64
			", \"remote_stalls\": %" PRIu64 ", \"acks\": %" PRIu64 ", \"reclaims\": %"
			PRIu64 ", \"dups_dropped\": %" PRIu64 "}}%s\n", mode_names[r[i].mode], r[i].size, r[i].active,
			r[i].messages, r[i].seconds, r[i].msg_rate, r[i].gbps, r[i].p50, r[i].p99,
			r[i].p999, r[i].max, r[i].mean, r[i].cpu_ns_per_msg, r[i].seq_errors,
			r[i].credit.enomem, r[i].credit.rnr,
			r[i].credit.sq_stalls, r[i].credit.remote_stalls, r[i].credit.acks,
			r[i].credit.reclaims, r[i].credit.dups_dropped, i + 1 < n ? "," : "");
	/* every message of the run, warm-ups and drains included (profiles divide by it) */
	sum_counts(&all_msgs, &all_bytes, &all_failed);
	fprintf(f, "  ],\n  \"messages_completed\": %" PRIu64 ",\n  \"seq_errors\": %" PRIu64
		",\n  \"pss_kib\": %" PRIu64 "\n}\n", all_msgs, seq_errors_before, pss_kib());
	return fclose(f) == 0 ? 0 : -1;
}

/* Seconds without an endpoint established before the client gives up waiting. */
#define ESTABLISH_STALL_S 300u

static int
run_client(void)
{
	static struct perf_result results[MAX_SIZES * MODE_MAX];
	struct rdp_ep_params prm = { .lcore = -1, .notify_send_ok = true };
	unsigned int i, m, nr = 0;
	uint32_t ts_size = rte_align32pow2(opt.window + 1);
	double deadline;
	int ret = 0;

	if (opt.pipeline) {
		events = rte_ring_create("perf_events", 65536, rte_socket_id(), RING_F_SC_DEQ);
		if (events == NULL) {
			fprintf(stderr, "rdp-perf: event ring: %s\n", rte_strerror(rte_errno));
			return 1;
		}
		prm.events = events;
	} else {
		unsigned int lc;

		prm.ops = &client_ops;
		/* endpoints refused a send buffer are filled in turn (fill()) */
		RTE_LCORE_FOREACH_WORKER(lc) {
			int r = rdp_poll_hook_set(lc, turns_hook, NULL);

			if (r < 0 && r != -ENODEV) {
				fprintf(stderr, "rdp-perf: poll hook on lcore %u: %s\n", lc,
					strerror(-r));
				return 1;
			}
		}
	}
	if (!endpoints_fit())
		return 1;
	for (i = 0; i < opt.endpoints; i++) {
		struct perf_ep *pe = &peps[i];

		pe->ph = &phase;
		pe->ts = calloc(ts_size, sizeof(*pe->ts));
		pe->ts_mask = ts_size - 1;
		prm.arg = pe;
		pe->ep = rdp_connect(opt.connect, &prm);
		if (pe->ts == NULL || pe->ep == NULL) {
			fprintf(stderr, "rdp-perf: connect %s: %s\n", opt.connect, rdp_err_msg());
			return 1;
		}
		rdp_ep_set_ctx(pe->ep, pe);
	}
	/*
	 * Every endpoint ends up established or failed: the library's deadlines
	 * (connect_timeout_ms, handshake_timeout_ms, each step of a handshake)
	 * see to it, however many handshakes wait their turn. The stall limit
	 * only catches a library that broke that promise.
	 */
	deadline = rdp_clock_s() + ESTABLISH_STALL_S;
	for (i = 0; i < opt.endpoints; i++) {
		while (!__atomic_load_n(&peps[i].established, __ATOMIC_ACQUIRE)) {
			if (opt.pipeline)
				pump_events();
			if (any_failed())
				return 1;
			if (rdp_clock_s() > deadline) {
				fprintf(stderr, "rdp-perf: endpoint %u to %s: neither established nor "
					"failed after %u s without progress\n", rdp_ep_id(peps[i].ep), opt.connect,
					ESTABLISH_STALL_S);
				return 1;
			}
			usleep(100);
		}
		deadline = rdp_clock_s() + ESTABLISH_STALL_S;
	}
	if (!sizes_carried())
		return 1;
	for (m = MODE_WRITE; m < MODE_MAX; m++)
		if (opt.modes[m])
			break;
	if (m < MODE_MAX && (region_setup() < 0 || !regions_fetch(10)))
		return 1;
	if (!opt.quiet)
		printf("rdp-perf: %u endpoint(s) to %s, %s mode, window %u\n", opt.endpoints,
		       opt.connect, opt.pipeline ? "pipeline" : "run-to-completion", opt.window);
	if (!opt.quiet && opt.busy < opt.endpoints)
		printf("rdp-perf: only the first %u carry traffic (--busy), the others stay idle\n",
		       opt.busy);
	if (!opt.quiet && rdp_device_count() > 1) {
		/* with several devices, each endpoint's choice (config, route or lcore) */
		printf("rdp-perf: devices of the endpoints:");
		for (i = 0; i < opt.endpoints; i++)
			printf(" %u %s", i, rdp_ep_device(peps[i].ep));
		printf("\n");
	}
	for (m = 0; m < MODE_MAX && ret == 0; m++) {
		for (i = 0; i < opt.nb_sizes && opt.modes[m] && !quitting(); i++) {
			int rc = run_phase((enum perf_mode)m, opt.sizes[i], &results[nr]);

			if (rc >= 0)
				nr++; /* measured; rc 1: and exactly-once broken */
			if (rc != 0) {
				ret = 1;
				break;
			}
		}
	}
	if (nr > 0)
		print_table(results, nr);
	if (opt.json != NULL && write_json(results, nr) < 0)
		ret = 1;
	for (i = 0; i < opt.endpoints; i++)
		rdp_ep_close(peps[i].ep);
	if (opt.pipeline) {
		deadline = rdp_clock_s() + 2;
		while (rdp_clock_s() < deadline && rdp_endpoint_count() > 0)
			pump_events();
	}
	return ret;
}

/* ---------------------------------------------------------------------- */
/* Options                                                                */
/* ---------------------------------------------------------------------- */

static void
usage(FILE *f)
{
	fprintf(f,
"usage: rdp-perf [EAL options] -- [options]\n"
"\n"
"Measure message latency and rate over rdmaplane. Without --server or\n"
"--connect, both sides run on this machine (loopback): the server is\n"
"started as a second process on the other CPU.\n"
"\n"
"Roles:\n"
"  --server               serve: echo 'E' messages, swallow 'S' messages\n"
"  --connect HOST:PORT    measure against a server\n"
"  --listen HOST:PORT     server address (default 127.0.0.1:18515; port 0: any)\n"
"\n"
"What to measure:\n"
"  -m, --mode LIST        lat (ping-pong), bw (windowed one-way stream),\n"
"                         bidir (windowed echo, both ways); write, read (RDMA\n"
"                         WRITE or READ bandwidth into a region the server\n"
"                         allocates, windowed), write_lat, read_lat (one at a\n"
"                         time: a WRITE's latency is half its round trip, a\n"
"                         READ's its round trip); default lat,bw\n"
"  -s, --sizes LIST       message sizes in bytes, e.g. 64,4096,65536 (default);\n"
"                         max_msg_size grows to the largest (rendezvous above\n"
"                         rndv_threshold); a remote server needs --max-msg\n"
"  -d, --duration SEC     measured time per size and mode, until one message at\n"
"                         least has completed (default 2)\n"
"  -n, --iters N          stop after N messages instead\n"
"  -e, --endpoints N      endpoints (default 1), spread over poller lcores\n"
"  -w, --window N         messages in flight per endpoint in bw/bidir (default 64)\n"
"  --busy N               only the first N endpoints carry traffic; the others\n"
"                         stay connected and idle (default: all)\n"
"\n"
"How:\n"
"  -c, --config FILE      per-core configuration (see docs/configuration.md)\n"
"  --driver NAME[:ARGS]   driver, e.g. shm:cqe_order=recv_first (default: auto,\n"
"                         verbs with an active RDMA port, else shm)\n"
"  --pipeline             events through a ring to the main lcore, sends through\n"
"                         the poller's inbox (default: run-to-completion; also\n"
"                         mode = pipeline in the configuration)\n"
"  --server-lcores LIST   loopback: EAL --lcores of the server process\n"
"  --max-msg BYTES        server: accept messages up to BYTES (max_msg_size grows\n"
"                         to it; a loopback run passes its largest -s)\n"
"  --stall-timeout SEC    a phase fails when, after its end, nothing in flight\n"
"                         completes for SEC seconds (default 10)\n"
"  --json FILE            write the results as JSON\n"
"  -q, --quiet            no progress lines\n"
"  -h, --help             this text\n"
"\n"
"Examples:\n"
"  rdp-perf                                    loopback, default sizes\n"
"  rdp-perf -- -m lat -s 64 -d 5               64 B ping-pong for 5 s\n"
"  rdp-perf -l 0-1 -- --server --listen 0.0.0.0:18515\n"
"  rdp-perf -l 0-1 -- --connect 10.0.0.1:18515 -m bw -s 4096 -e 4\n"
"  rdp-perf -- --driver shm:cqe_order=recv_first -m bidir --json out.json\n"
"  rdp-perf -- -m write,read_lat -s 65536,1048576   one-sided, loopback\n");
}

static int
parse_list(const char *s, uint32_t *out, unsigned int max, unsigned int *n)
{
	char *end;

	*n = 0;
	while (*s != '\0') {
		unsigned long v = strtoul(s, &end, 10);

		if (end == s || v == 0 || v > (1ul << 30) || *n == max)
			return -1;
		out[(*n)++] = (uint32_t)v;
		s = *end == ',' ? end + 1 : end;
		if (*end != ',' && *end != '\0')
			return -1;
	}
	return *n > 0 ? 0 : -1;
}

static int
parse_modes(const char *s)
{
	char buf[64], *tok, *save;
	unsigned int m;

	snprintf(buf, sizeof(buf), "%s", s);
	memset(opt.modes, 0, sizeof(opt.modes));
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		for (m = 0; m < MODE_MAX && strcmp(tok, mode_names[m]) != 0; m++)
			;
		if (m == MODE_MAX)
			return -1;
		opt.modes[m] = true;
	}
	return 0;
}

static int
bad_option(const char *name, const char *value, const char *rule)
{
	fprintf(stderr, "rdp-perf: %s %s: %s (see --help)\n", name, value, rule);
	return -1;
}

/* What a client measures with: a server takes it from the client, not from its own options. */
static const struct {
	int c;
	const char *name;
} client_opts[] = {
	{ 'm', "--mode" }, { 's', "--sizes" }, { 'd', "--duration" }, { 'n', "--iters" },
	{ 'e', "--endpoints" }, { 'w', "--window" }, { 'B', "--busy" }, { 'J', "--json" },
};

/*
 * An option the chosen role would ignore is an error. @p given holds each
 * option's argument by its letter ("" for a flag), NULL when not given.
 */
static int
check_roles(const char *const given[UCHAR_MAX + 1])
{
	size_t i;

	if (opt.server && opt.connect[0] != '\0')
		return bad_option("--server", "--connect", "choose one role");
	if (opt.server) {
		for (i = 0; i < RTE_DIM(client_opts); i++)
			if (given[client_opts[i].c] != NULL)
				return bad_option(client_opts[i].name, given[client_opts[i].c],
						  "not with --server (the client sets the load)");
	}
	if ((opt.server || opt.connect[0] != '\0') && given['R'] != NULL) {
		char rule[80];

		snprintf(rule, sizeof(rule), "not with %s (only a loopback run starts a server)",
			 opt.server ? "--server" : "--connect");
		return bad_option("--server-lcores", given['R'], rule);
	}
	if (!opt.server && given['M'] != NULL)
		return bad_option("--max-msg", given['M'], "only with --server (a client's "
				  "largest -s sets its own)");
	if (opt.connect[0] != '\0' && given['L'] != NULL)
		return bad_option("--listen", given['L'],
				  "not with --connect (that is the server's address)");
	return 0;
}

static int
parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "server", no_argument, NULL, 'S' },
		{ "connect", required_argument, NULL, 'C' },
		{ "listen", required_argument, NULL, 'L' },
		{ "mode", required_argument, NULL, 'm' },
		{ "sizes", required_argument, NULL, 's' },
		{ "duration", required_argument, NULL, 'd' },
		{ "iters", required_argument, NULL, 'n' },
		{ "endpoints", required_argument, NULL, 'e' },
		{ "window", required_argument, NULL, 'w' },
		{ "busy", required_argument, NULL, 'B' },
		{ "config", required_argument, NULL, 'c' },
		{ "driver", required_argument, NULL, 'D' },
		{ "pipeline", no_argument, NULL, 'P' },
		{ "json", required_argument, NULL, 'J' },
		{ "port-fd", required_argument, NULL, 'F' },
		{ "server-lcores", required_argument, NULL, 'R' },
		{ "max-msg", required_argument, NULL, 'M' },
		{ "stall-timeout", required_argument, NULL, 'T' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *given[UCHAR_MAX + 1] = { NULL };
	const char *busy_arg = NULL;
	char *end;
	int c;

	opt.modes[MODE_LAT] = opt.modes[MODE_BW] = true;
	opt.sizes[0] = 64;
	opt.sizes[1] = 4096;
	opt.sizes[2] = 65536;
	opt.nb_sizes = 3;
	optind = 1;
	while ((c = getopt_long(argc, argv, "m:s:d:n:e:w:c:qh", opts, NULL)) != -1) {
		if (c > 0 && c <= UCHAR_MAX)
			given[c] = optarg != NULL ? optarg : "";
		switch (c) {
		case 'S': opt.server = true; break;
		case 'C': snprintf(opt.connect, sizeof(opt.connect), "%s", optarg); break;
		case 'L': snprintf(opt.listen, sizeof(opt.listen), "%s", optarg); break;
		case 'm':
			if (parse_modes(optarg) < 0)
				return bad_option("--mode", optarg, "expected a list of lat, bw, bidir, "
						  "write, read, write_lat, read_lat");
			break;
		case 's':
			if (parse_list(optarg, opt.sizes, MAX_SIZES, &opt.nb_sizes) < 0)
				return bad_option("--sizes", optarg, "expected up to 16 sizes in "
						  "1..1073741824, comma separated");
			break;
		case 'd':
			opt.duration = strtod(optarg, &end);
			if (*end != '\0' || !(opt.duration > 0 && opt.duration <= 3600))
				return bad_option("--duration", optarg, "expected seconds in (0, 3600]");
			break;
		case 'n':
			opt.iters = strtoull(optarg, &end, 10);
			if (*end != '\0' || opt.iters == 0)
				return bad_option("--iters", optarg, "expected a positive count");
			opt.duration = 3600;
			break;
		case 'e':
			opt.endpoints = strtoul(optarg, &end, 10);
			if (*end != '\0' || opt.endpoints < 1 || opt.endpoints > MAX_EPS)
				return bad_option("--endpoints", optarg, "expected 1..4096");
			break;
		case 'B':
			busy_arg = optarg;
			break;
		case 'w':
			opt.window = strtoul(optarg, &end, 10);
			if (*end != '\0' || opt.window < 1 || opt.window > 65536)
				return bad_option("--window", optarg, "expected 1..65536");
			break;
		case 'c': opt.config = optarg; break;
		case 'D': opt.driver = optarg; break;
		case 'P': opt.pipeline = true; break;
		case 'J': opt.json = optarg; break;
		case 'F': opt.port_fd = atoi(optarg); break;
		case 'R': opt.server_lcores = optarg; break;
		case 'M':
			opt.max_msg = (uint32_t)strtoul(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || opt.max_msg < 1 ||
			    opt.max_msg > (1u << 30))
				return bad_option("--max-msg", optarg, "expected 1..1073741824 bytes");
			break;
		case 'T':
			opt.stall_s = strtod(optarg, &end);
			if (*optarg == '\0' || *end != '\0' || !(opt.stall_s >= 1 && opt.stall_s <= 3600))
				return bad_option("--stall-timeout", optarg, "expected 1..3600 seconds");
			break;
		case 'q': opt.quiet = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (optind < argc)
		return bad_option("argument", argv[optind], "unexpected");
	opt.busy = opt.endpoints;
	if (busy_arg != NULL) {
		char rule[64];

		opt.busy = strtoul(busy_arg, &end, 10);
		snprintf(rule, sizeof(rule), "expected 1..%u (the endpoints)", opt.endpoints);
		if (*busy_arg == '\0' || *end != '\0' || opt.busy < 1 || opt.busy > opt.endpoints)
			return bad_option("--busy", busy_arg, rule);
	}
	if (check_roles(given) < 0)
		return -1;
	for (unsigned int m = MODE_WRITE; m < MODE_MAX; m++) {
		for (unsigned int i = 0; opt.modes[m] && i < opt.nb_sizes; i++) {
			char v[16];

			snprintf(v, sizeof(v), "%u", opt.sizes[i]);
			if (opt.sizes[i] > PERF_REGION_BYTES)
				return bad_option("--sizes", v, "larger than the 16 MiB region of the "
						  "write and read modes");
		}
	}
	opt.loopback = !opt.server && opt.connect[0] == '\0';
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Loopback: the server process and EAL arguments                         */
/* ---------------------------------------------------------------------- */

/*
 * Messages of the largest -s must be allowed: max_msg_size grows to it
 * (they go by rendezvous above rndv_threshold). The library sizes its
 * rendezvous arenas from max_msg_size (rndv_pool_size = 0); one given in
 * the config grows to two of them at least. A server needs the same -s
 * (loopback passes it).
 */
static int
sizes_fit(struct rdp_cfg *cfg)
{
	const struct rdp_cfg_lcore *g = rdp_cfg_lcore(cfg, RDP_CFG_GLOBAL);
	uint32_t largest = opt.server ? opt.max_msg : sizes_largest();
	char v[16];

	if (g == NULL || largest <= g->max_msg_size)
		return 0;
	if (g->rndv_pool_size != 0 && (uint64_t)2 * largest > g->rndv_pool_size) {
		snprintf(v, sizeof(v), "%llu", RTE_MIN(2ull * largest, 2147483648ull));
		if (rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "rndv_pool_size", v, "--sizes") < 0)
			return -1;
	}
	snprintf(v, sizeof(v), "%u", largest);
	return rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "max_msg_size", v, "--sizes");
}

/* Loopback: this binary again as the server, with our driver, config, sizes and run mode. */
static pid_t
spawn_server(char **app_argv, int app_argc, bool huge, int *port)
{
	const char *args[40] = { "--server", "--quiet", "--listen", "127.0.0.1:0" };
	static char max_msg[16];
	int n = 4, i;

	for (i = 1; i < app_argc && n < 36; i++) {
		if (strcmp(app_argv[i], "--driver") == 0 || strcmp(app_argv[i], "-c") == 0 ||
		    strcmp(app_argv[i], "--config") == 0) {
			args[n++] = app_argv[i];
			if (i + 1 < app_argc)
				args[n++] = app_argv[++i];
		} else if (strcmp(app_argv[i], "--pipeline") == 0) {
			args[n++] = app_argv[i];
		}
	}
	snprintf(max_msg, sizeof(max_msg), "%u", sizes_largest());
	args[n++] = "--max-msg";
	args[n++] = max_msg;
	args[n] = NULL;
	return app_spawn_server(opt.server_lcores, "rdp-perf-srv", huge, args, port);
}

/*
 * The configuration's `mode` and `app_lcore`: `mode = pipeline` runs as
 * --pipeline does, its events on the EAL main lcore. One mode for every
 * endpoint, so the keys belong in [global].
 */
static int
mode_from_config(const struct rdp_cfg *cfg)
{
	const struct rdp_cfg_lcore *g = rdp_cfg_lcore(cfg, RDP_CFG_GLOBAL);
	unsigned int ids[RTE_MAX_LCORE], n = rdp_cfg_lcores(cfg, ids, RTE_DIM(ids)), i;
	unsigned int main_lcore = rte_get_main_lcore();

	for (i = 0; i < n; i++) {
		const struct rdp_cfg_lcore *c = rdp_cfg_lcore(cfg, (int)ids[i]);

		if (c->mode != g->mode || c->app_lcore != g->app_lcore)
			return rdp_cfg_key_error(cfg, (int)ids[i], c->mode != g->mode ? "mode" :
						 "app_lcore", EINVAL, "rdp-perf runs every "
						 "endpoint in one mode: set it in [global]");
	}
	if (g->mode == RDP_CFG_MODE_PIPELINE)
		opt.pipeline = true;
	if (opt.pipeline && g->app_lcore >= 0 && (unsigned int)g->app_lcore != main_lcore)
		return rdp_cfg_key_error(cfg, RDP_CFG_GLOBAL, "app_lcore", EINVAL, "rdp-perf takes "
					 "pipeline events on the EAL main lcore: -1 or %u",
					 main_lcore);
	return 0;
}

int
main(int argc, char **argv)
{
	struct app_eal_args dflt;
	char **eal_argv, **app_argv;
	int eal_argc, app_argc, ret, i, port;
	struct rdp_cfg *cfg;
	pid_t srv = -1;
	bool default_lcores;

	/* EAL options come before "--", ours after */
	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		;
	app_argc = argc - i;
	app_argv = argv + i;
	if (i == argc) {
		app_argc = 1;
		app_argv = argv + argc - 1;
	}
	if (parse_args(app_argc, app_argv) < 0)
		return 2;
	default_lcores = i == 1;
	if (i == 1) {
		/* no EAL options: no hugepages, no PCI, one poller on the other CPU */
		app_eal_defaults(&dflt, argv[0], NULL, "rdp-perf", true);
		eal_argc = dflt.argc;
		eal_argv = dflt.argv;
	} else {
		eal_argc = i;
		eal_argv = argv;
	}
	if (opt.loopback) {
		srv = spawn_server(app_argv, app_argc, app_eal_args_huge(i, argv), &port);
		if (srv < 0) {
			fprintf(stderr, "rdp-perf: the loopback server did not start\n");
			return 1;
		}
		snprintf(opt.connect, sizeof(opt.connect), "127.0.0.1:%d", port);
	}
	ret = rte_eal_init(eal_argc, eal_argv);
	if (ret < 0) {
		fprintf(stderr, "rdp-perf: EAL: %s (EAL options go before '--')\n",
			rte_strerror(rte_errno));
		ret = 1;
		goto out;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	cfg = opt.config != NULL ? rdp_cfg_load(opt.config) : rdp_cfg_default();
	if (cfg == NULL || (opt.driver != NULL &&
			    rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "driver", opt.driver, "--driver") < 0) ||
	    sizes_fit(cfg) < 0 || rdp_cfg_validate(cfg) < 0 || mode_from_config(cfg) < 0) {
		fprintf(stderr, "rdp-perf: %s\n", rdp_err_msg());
		ret = 1;
		goto out;
	}
	if (rdp_init(cfg) < 0) {
		fprintf(stderr, "rdp-perf: %s\n", rdp_err_msg());
		ret = 1;
		goto out;
	}
	if (!opt.quiet)
		printf("rdp-perf %s: driver %s\n", RDP_VERSION, rdp_driver_info());
	if (opt.pipeline && opt.loopback && default_lcores && opt.server_lcores == NULL)
		fprintf(stderr, "rdp-perf: --pipeline on the default lcores: the client's event "
			"loop shares a CPU with the loopback server's poller, both spinning, and "
			"each hop waits for a scheduler time slice; give it a CPU of its own "
			"(EAL --lcores, and --server-lcores; docs/performance.md)\n");
	ret = opt.server ? run_server() : run_client();
	region_teardown();
	rdp_fini();
	rdp_cfg_free(cfg);
	rte_eal_cleanup();
out:
	if (srv > 0) {
		kill(srv, SIGTERM);
		waitpid(srv, NULL, 0);
	}
	return ret;
}
