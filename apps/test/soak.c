/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The soak: checked message streams over the shm driver, in one process
 * and across two, while faults are injected at random; then a ledger that
 * must balance.
 *
 * Streams (each one endpoint pair at a time, reconnected whenever it ends;
 * one endpoint pair from connect to both CLOSED is an *incarnation*):
 *   0: in process,  connecting side run-to-completion, accepting side pipeline
 *   1: in process,  connecting side pipeline, accepting side run-to-completion
 *   2: two processes, connecting side (here) run-to-completion, accepting
 *      side (the peer process) pipeline
 *   3: two processes, pipeline here, run-to-completion in the peer
 * Both sides of every incarnation send; see "The ledger" in
 * docs/reliability.md for what is checked.
 *
 * Faults: the peer process killed (SIGKILL) and restarted; a QP forced to
 * error; an endpoint closed by its application mid-stream; an event ring
 * full (a pipeline application that stops dequeuing, a run-to-completion
 * one that refuses deliveries) for a while; the CQ resized under load; and,
 * in every driver spec, random completion orders, send-completion delays
 * and a link that goes down after a random number of work requests
 * (fail_after), after which that process restarts its stack.
 *
 * RDP_SOAK_SECONDS (default 60) and RDP_SOAK_SEED (default: the clock) set
 * the run; the seed is printed and replays the same choices (timing still
 * varies). devtools/soak.sh runs it longer. A second test runs it on a
 * shared receive queue per poller for half as long. On real verbs (the rxe
 * lane), RDP_SOAK_DRIVER and RDP_SOAK_PEER_DRIVER fix the two processes'
 * driver specs (no knobs drawn, no fail_after), and RDP_SOAK_LINK_DOWN /
 * RDP_SOAK_LINK_UP, shell commands, take this process's link down and up
 * every few seconds instead (link_flap(); RDP_SOAK_LINK_FIRST_MS sets
 * when the first goes down), and bring it back at the end.
 * RDP_SOAK_MIN_CROSS=N runs on past the length until the peer process has
 * delivered N messages here (at most SOAK_MIN_CROSS_STRETCH times the
 * length, then a violation): the lane's floor on what crossed the wire.
 * Running on, it neither kills the peer nor takes the link down (the
 * other faults go on): a restart or a link every few seconds could keep a
 * slow guest from crossing at all.
 * RDP_SOAK_TRACE=1
 * prints each incarnation's endpoint, each fault and the library's log
 * lines with a timestamp, to follow a violation back to its cause.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>

#include "app_hash.h"
#include "ep_private.h"
#include "ep_stream.h"
#include "rdp_test.h"

/* ---------------------------------------------------------------------- */
/* Tunables                                                               */
/* ---------------------------------------------------------------------- */

#define SOAK_MAX_MSG 16384      /* 4 chunks of 4096 */
#define SOAK_WINDOW 32          /* messages in flight per side */
#define SOAK_STREAMS 4
#define SOAK_RECS 4096          /* ledger records, two per incarnation, reused */
#define SOAK_MAX_SIDES 64
#define CHECK_TIMEOUT_S 20.0    /* how long a receiver may take to finish */
#define FAIL_AFTER_MIN 4000000  /* link down after this many WRs, at least */
#define FAIL_AFTER_MAX 10000000
/* with RDP_SOAK_MIN_CROSS, a run goes on until the peer process delivered
 * that many here, up to this many times its length */
#define SOAK_MIN_CROSS_STRETCH 3
#define EARLY_CLOSE_EVERY 5     /* accepted rtc sides closed before their first delivery */
#define EARLY_HOLD_MS 200       /* how long such a side holds its first deliveries */
#define EARLY_CLOSE_AFTER_MS 30 /* when, in that time, it is closed */
#define PEER_FAIL_DIV 4         /* the peer is killed now and then: its link fails sooner */

/* ---------------------------------------------------------------------- */
/* The ledger in shared memory                                            */
/* ---------------------------------------------------------------------- */

enum soak_flags {
	SF_USED = 1u << 0,     /* the record belongs to `inc` */
	SF_ESTAB = 1u << 1,    /* the endpoint reached ESTABLISHED */
	SF_FAILED = 1u << 2,   /* it reported FAILED */
	SF_CLOSED = 1u << 3,   /* CLOSED seen: the record is final */
	SF_DECLINED = 1u << 4, /* its application closed it before FAILED */
	SF_DOOMED = 1u << 5,   /* a fault was injected that ends it */
	SF_LINK = 1u << 6,     /* its link went down */
	SF_PEER_CLOSED = 1u << 7, /* it reported PEER_CLOSED: the other side closed */
};

/* One side of one incarnation; one writer at a time. */
struct soak_rec {
	uint64_t inc;
	uint64_t flags;     /* enum soak_flags, atomic OR */
	uint64_t accepted;  /* counted before rdp_ep_send_burst(), undone if refused */
	uint64_t done;      /* SEND_DONE events */
	uint64_t failed;    /* SEND_FAILED events */
	uint64_t delivered; /* received and checked, in order */
	uint64_t bytes;
	uint64_t bad;       /* checks that failed */
	int64_t err;        /* errno of FAILED */
	uint64_t enomem;    /* endpoint counters at CLOSED */
	uint64_t rnr;
	uint64_t conn;      /* connecting side: its connection (conn_key()), once ESTABLISHED */
	char error[192];    /* the first check that failed */
};

struct soak_shared {
	uint64_t helper_gen;   /* the peer's stack: odd while up, even while it restarts */
	uint64_t port_rtc;     /* its listeners, valid while helper_gen is odd */
	uint64_t port_pipe;
	uint64_t stop;         /* the main process asks the peer to finish */
	uint64_t helper_done;  /* 1: finished clean, 2: with problems */
	uint64_t helper_link_downs;
	uint64_t helper_anomalies;
	uint64_t early_closes;  /* F_EARLY_CLOSE, in either process */
	char helper_error[256];
	char helper_spec[128];
	struct soak_rec rec[SOAK_RECS];
};

static struct soak_shared *sh;

#define LD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

static struct soak_rec *
rec_of(uint64_t inc, unsigned int role)
{
	return &sh->rec[(inc * 2 + role) % SOAK_RECS];
}

/*
 * Take a record slot for incarnation @p inc. The slot may have served an
 * older incarnation that the checker (another thread) still reads with
 * atomics, so it is cleared with atomic stores: unused first, used last.
 */
static void
rec_init(struct soak_rec *r, uint64_t inc)
{
	ST(r->flags, 0);
	__atomic_store_n(&r->accepted, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&r->done, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&r->failed, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&r->delivered, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&r->bytes, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&r->bad, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&r->err, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&r->enomem, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&r->rnr, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&r->conn, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&r->error[0], '\0', __ATOMIC_RELAXED);
	__atomic_store_n(&r->inc, inc, __ATOMIC_RELAXED);
	__atomic_fetch_or(&r->flags, SF_USED, __ATOMIC_RELEASE);
}

static void
rec_flag(struct soak_rec *r, uint64_t f)
{
	if (r != NULL)
		__atomic_fetch_or(&r->flags, f, __ATOMIC_RELEASE);
}

static bool
rec_valid(const struct soak_rec *r, uint64_t inc)
{
	return (LD(r->flags) & SF_USED) && LD(r->inc) == inc;
}

/*
 * What names one connection on both its sides: the HELLO and HELLO_ACK
 * as they travelled (their nonces make it unique). Never 0.
 */
static uint64_t
conn_key(const struct rdp_ep *ep)
{
	uint64_t h = 0;
	unsigned int i;

	for (i = 0; i < RDP_HELLO_LEN; i++)
		h = app_mix64(h ^ ((uint64_t)ep->hello_c[i] << 8 | ep->hello_s[i]));
	return h | 1;
}

/*
 * The incarnation whose connecting side holds connection @p conn and whose
 * accepting side has no record yet; 0 if none. For an accepting side that
 * ended before its first delivery, which names the incarnation otherwise.
 */
static uint64_t
inc_of_conn(uint64_t conn)
{
	unsigned int i;

	for (i = 0; i < SOAK_RECS; i += 2) {
		const struct soak_rec *c = &sh->rec[i];
		uint64_t inc = LD(c->inc);

		if ((LD(c->flags) & SF_USED) && LD(c->conn) == conn &&
		    !rec_valid(rec_of(inc, 1), inc))
			return inc;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Messages: (inc, role, seq) and bytes derived from them                 */
/* ---------------------------------------------------------------------- */

static inline uint64_t
msg_key(uint64_t inc, unsigned int role, uint64_t seq)
{
	return app_mix64(inc * 0x9e3779b97f4a7c15ull ^ (uint64_t)role << 62 ^ seq);
}

/* 16 bytes to SOAK_MAX_MSG, mostly small, 1% exactly the largest. */
static uint32_t
msg_len(uint64_t inc, unsigned int role, uint64_t seq)
{
	uint64_t r = app_mix64(msg_key(inc, role, seq) + 1);
	unsigned int bits = 4 + (unsigned int)((r >> 8) % 11);

	if (r % 100 == 7)
		return SOAK_MAX_MSG;
	return RTE_MIN(16 + (uint32_t)((r >> 20) % (1u << bits)), (uint32_t)SOAK_MAX_MSG);
}

/* The first 16 bytes of every message (the smallest is 16 bytes). */
struct msg_hdr {
	uint64_t inc_role; /* inc << 1 | sender role */
	uint64_t seq;
};
_Static_assert(sizeof(struct msg_hdr) == 16, "header of the smallest message");

static inline uint8_t
body_byte(uint64_t key, uint32_t off)
{
	return (uint8_t)(app_mix64(key + off / 8) >> ((off & 7) * 8));
}

static void
msg_fill(struct rdp_msg *m, uint64_t inc, unsigned int role, uint64_t seq)
{
	struct msg_hdr h = { .inc_role = inc << 1 | role, .seq = seq };
	uint64_t key = msg_key(inc, role, seq);
	uint32_t off = 0;

	for (; m != NULL; m = m->next) {
		uint8_t *p = m->data;
		uint32_t i = 0;

		for (; i < m->data_len; i++, off++) {
			if (off < sizeof(h))
				p[i] = ((const uint8_t *)&h)[off];
			else if ((off & 7) == 0 && i + 8 <= m->data_len)
				break;
			else
				p[i] = body_byte(key, off);
		}
		for (; i + 8 <= m->data_len; i += 8, off += 8) {
			uint64_t w = app_mix64(key + off / 8);

			memcpy(p + i, &w, 8);
		}
		for (; i < m->data_len; i++, off++)
			p[i] = body_byte(key, off);
	}
}

/* The first byte that differs, or -1. */
static int64_t
msg_check(const struct rdp_msg *m, uint64_t inc, unsigned int role, uint64_t seq)
{
	struct msg_hdr h = { .inc_role = inc << 1 | role, .seq = seq };
	uint64_t key = msg_key(inc, role, seq);
	uint32_t off = 0;

	for (; m != NULL; m = m->next) {
		const uint8_t *p = m->data;
		uint32_t i = 0;

		for (; i < m->data_len; i++, off++) {
			if (off < sizeof(h)) {
				if (p[i] != ((const uint8_t *)&h)[off])
					return off;
			} else if ((off & 7) == 0 && i + 8 <= m->data_len) {
				break;
			} else if (p[i] != body_byte(key, off)) {
				return off;
			}
		}
		for (; i + 8 <= m->data_len; i += 8, off += 8) {
			uint64_t w;

			memcpy(&w, p + i, 8);
			if (w != app_mix64(key + off / 8))
				return off;
		}
		for (; i < m->data_len; i++, off++)
			if (p[i] != body_byte(key, off))
				return off;
	}
	return -1;
}

/* ---------------------------------------------------------------------- */
/* Log watch: what must never be logged                                   */
/* ---------------------------------------------------------------------- */

static const char *const anomaly_patterns[] = {
	"receive buffers missing", "send buffers were not returned", "CQ overran",
	"CQ in error", "flow-control invariant is broken", "drain marker refused",
	"cannot move its QP to error", "QP destroy failed", "still held",
	"no memory to report state", "for empty slot", "freed twice",
	"retired by its poller during its handshake",
};

#define LOG_KEEP 64
static struct {
	pthread_mutex_t lock;
	char line[LOG_KEEP][256];
	unsigned int next;
	uint64_t anomalies;
	char first_anomaly[256];
} logw = { .lock = PTHREAD_MUTEX_INITIALIZER };

static ssize_t
log_write(void *cookie, const char *buf, size_t len)
{
	char l[256];
	unsigned int i;

	RTE_SET_USED(cookie);
	snprintf(l, sizeof(l), "%.*s", (int)RTE_MIN(len, sizeof(l) - 1), buf);
	if (getenv("RDP_SOAK_TRACE") != NULL)
		fprintf(stderr, "[%.6f] %s", rdp_clock_s(), l);
	pthread_mutex_lock(&logw.lock);
	snprintf(logw.line[logw.next++ % LOG_KEEP], sizeof(logw.line[0]), "%s", l);
	for (i = 0; i < RTE_DIM(anomaly_patterns); i++) {
		if (strstr(l, anomaly_patterns[i]) != NULL) {
			if (logw.anomalies++ == 0)
				snprintf(logw.first_anomaly, sizeof(logw.first_anomaly), "%s", l);
		}
	}
	pthread_mutex_unlock(&logw.lock);
	return (ssize_t)len;
}

static void
log_watch(void)
{
	cookie_io_functions_t io = { .write = log_write };
	FILE *f = fopencookie(NULL, "w", io);

	RDP_ASSERT(f != NULL);
	setvbuf(f, NULL, _IOLBF, 0);
	rte_openlog_stream(f);
}

static void
log_dump(void)
{
	unsigned int i;

	pthread_mutex_lock(&logw.lock);
	fprintf(stderr, "--- last log lines\n");
	for (i = 0; i < LOG_KEEP; i++) {
		const char *l = logw.line[(logw.next + i) % LOG_KEEP];

		if (l[0] != '\0')
			fprintf(stderr, "%s%s", l, strchr(l, '\n') ? "" : "\n");
	}
	pthread_mutex_unlock(&logw.lock);
}

/* ---------------------------------------------------------------------- */
/* Sides: one endpoint's application                                      */
/* ---------------------------------------------------------------------- */

struct ring_info {
	struct rte_ring *r;
	struct side *client;    /* its one connecting side, or NULL: a listener's ring */
	uint64_t pause_until;   /* ns: the application does not dequeue until then */
};

struct side {
	uint64_t inc;           /* 0 until the accepting side learns it */
	unsigned int role;      /* 0 connecting, 1 accepting */
	bool pipeline;
	struct ring_info *ring; /* pipeline */
	struct rdp_ep *ep;      /* (atomic) */
	struct soak_rec *rec;   /* (atomic) NULL until inc is known */
	uint64_t accepted, done, failed, delivered, bytes; /* owner thread */
	uint64_t refuse_until;  /* (atomic) ns: run-to-completion refuses deliveries */
	bool established;       /* (atomic) */
	bool close_asked;       /* (atomic) rdp_ep_close() called, by the main thread only */
	bool failed_seen;       /* (atomic) FAILED or PEER_CLOSED seen: to be closed */
	uint64_t early_flags;   /* (atomic) flags for the record it does not have yet */
	bool early_close;       /* (atomic) accepting: closed before its first delivery
				 * (F_EARLY_CLOSE) */
	int64_t early_err;      /* (atomic) errno of FAILED, for the record it does not have yet */
	bool dead;              /* (atomic) CLOSED seen: nothing more will come */
};

static bool port_down(void);

/* Errors that cannot go to a record (before the accepting side knows inc). */
static uint64_t orphan_errors;
static char orphan_error[256];

static void note(struct side *s, const char *fmt, ...) __rte_format_printf(2, 3);

static void
note(struct side *s, const char *fmt, ...)
{
	struct soak_rec *r = LD(s->rec);
	char buf[192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (r == NULL) {
		if (__atomic_fetch_add(&orphan_errors, 1, __ATOMIC_RELAXED) == 0)
			snprintf(orphan_error, sizeof(orphan_error), "%s", buf);
		return;
	}
	if (__atomic_fetch_add(&r->bad, 1, __ATOMIC_RELAXED) == 0)
		snprintf(r->error, sizeof(r->error), "%s", buf);
}

/* The process's sides (the accepting ones appear on the poller thread). */
static struct {
	pthread_mutex_t lock;
	struct side *s[SOAK_MAX_SIDES];
	unsigned int n;
} reg = { .lock = PTHREAD_MUTEX_INITIALIZER };

static struct side *
side_new(uint64_t inc, unsigned int role, bool pipeline, struct ring_info *ring)
{
	struct side *s = calloc(1, sizeof(*s));

	RDP_ASSERT(s != NULL);
	s->inc = inc;
	s->role = role;
	s->pipeline = pipeline;
	s->ring = ring;
	if (role == 0) {
		rec_init(rec_of(inc, 0), inc);
		s->rec = rec_of(inc, 0);
	}
	pthread_mutex_lock(&reg.lock);
	RDP_ASSERT_MSG(reg.n < SOAK_MAX_SIDES, "more than %d sides", SOAK_MAX_SIDES);
	reg.s[reg.n++] = s;
	pthread_mutex_unlock(&reg.lock);
	return s;
}

/* Forget sides that saw CLOSED (main thread); returns how many are left. */
static unsigned int
sides_reap(void (*on_dead)(struct side *s))
{
	unsigned int i, left;

	pthread_mutex_lock(&reg.lock);
	for (i = 0; i < reg.n;) {
		struct side *s = reg.s[i];

		if (LD(s->dead)) {
			reg.s[i] = reg.s[--reg.n];
			pthread_mutex_unlock(&reg.lock);
			if (on_dead != NULL)
				on_dead(s);
			free(s);
			pthread_mutex_lock(&reg.lock);
		} else {
			i++;
		}
	}
	left = reg.n;
	pthread_mutex_unlock(&reg.lock);
	return left;
}

/* Mark a side's record, or the record it will have once it learns its inc. */
static void
side_flag(struct side *s, uint64_t f)
{
	__atomic_fetch_or(&s->early_flags, f, __ATOMIC_ACQ_REL);
	rec_flag(LD(s->rec), f);
}

static void
rec_store(uint64_t *field, uint64_t v)
{
	__atomic_store_n(field, v, __ATOMIC_RELEASE);
}

/* Send up to the window (the side's owner thread). */
static void
send_more(struct side *s)
{
	struct soak_rec *r = LD(s->rec);
	struct rdp_ep *ep = LD(s->ep);

	if (r == NULL || ep == NULL || !LD(s->established) || LD(s->close_asked))
		return;
	while (s->accepted - s->done - s->failed < SOAK_WINDOW) {
		uint64_t seq = s->accepted;
		struct rdp_msg *m = rdp_msg_alloc(ep, msg_len(s->inc, s->role, seq));

		if (m == NULL) {
			if (rte_errno != ENOBUFS)
				note(s, "rdp_msg_alloc: errno %d", rte_errno);
			return;
		}
		msg_fill(m, s->inc, s->role, seq);
		m->user_data = seq;
		rec_store(&r->accepted, ++s->accepted); /* before: it may be delivered at once */
		if (rdp_ep_send_burst(ep, &m, 1) != 1) {
			rec_store(&r->accepted, --s->accepted);
			rdp_msg_free(m);
			return;
		}
	}
}

static void
on_delivered(struct side *s, struct rdp_msg *m)
{
	struct soak_rec *r = LD(s->rec);
	uint64_t seq = s->delivered;
	int64_t bad;

	if (r == NULL && LD(s->early_close) && LD(s->close_asked)) {
		/* closed before its first delivery (F_EARLY_CLOSE): it declines */
		rdp_msg_free(m);
		return;
	}
	if (r == NULL) {
		/* the accepting side learns its incarnation from the first message */
		struct msg_hdr h = { 0 };

		if (m->pkt_len < sizeof(h) || rdp_msg_read(m, 0, &h, sizeof(h)) != 0 ||
		    (h.inc_role & 1) != 0 || h.seq != 0 || h.inc_role == 0) {
			note(s, "first message is not the start of a stream (%u bytes: inc %" PRIu64
			     " role %u seq %" PRIu64 ")", m->pkt_len, h.inc_role >> 1,
			     (unsigned int)(h.inc_role & 1), h.seq);
			rdp_msg_free(m);
			return;
		}
		s->inc = h.inc_role >> 1;
		r = rec_of(s->inc, 1);
		rec_init(r, s->inc);
		ST(s->rec, r);
		rec_flag(r, SF_ESTAB | LD(s->early_flags));
	}
	if (m->pkt_len != msg_len(s->inc, 1 - s->role, seq))
		note(s, "message %" PRIu64 " has %u bytes, expected %u", seq, m->pkt_len,
		     msg_len(s->inc, 1 - s->role, seq));
	else if ((bad = msg_check(m, s->inc, 1 - s->role, seq)) >= 0)
		note(s, "message %" PRIu64 " differs at byte %" PRId64 " (a gap, a duplicate or "
		     "corruption)", seq, bad);
	s->bytes += m->pkt_len;
	rec_store(&r->bytes, s->bytes);
	rec_store(&r->delivered, ++s->delivered);
	rdp_msg_free(m);
}

static void
on_send_event(struct side *s, struct rdp_msg *m)
{
	struct soak_rec *r = LD(s->rec);

	if (r == NULL) {
		note(s, "a send event before the side sent anything");
		rdp_msg_free(m);
		return;
	}
	if (m->user_data != s->done + s->failed)
		note(s, "send event for message %" PRIu64 " arrived as number %" PRIu64,
		     m->user_data, s->done + s->failed);
	if (m->event == RDP_EV_SEND_DONE) {
		if (s->failed > 0)
			note(s, "SEND_DONE for message %" PRIu64 " after a SEND_FAILED",
			     m->user_data);
		rec_store(&r->done, ++s->done);
	} else {
		if (m->status >= 0)
			note(s, "SEND_FAILED with status %d", m->status);
		rec_store(&r->failed, ++s->failed);
	}
	rdp_msg_free(m);
}

/*
 * An accepting side that reaches CLOSED before its first delivery, which
 * would have named its incarnation: the record of the incarnation whose
 * connecting side holds the same connection, with what happened to it
 * (declined, failed, nothing delivered), so that the ledger judges what
 * its peer had done. NULL if none (never ESTABLISHED, or its incarnation
 * is already judged).
 */
static struct soak_rec *
rec_at_close(struct side *s, struct rdp_ep *ep)
{
	uint64_t inc;
	struct soak_rec *r;

	if (!LD(s->established) || (inc = inc_of_conn(conn_key(ep))) == 0)
		return NULL;
	r = rec_of(inc, 1);
	rec_init(r, inc);
	__atomic_store_n(&r->err, LD(s->early_err), __ATOMIC_RELAXED);
	rec_flag(r, SF_ESTAB | LD(s->early_flags));
	s->inc = inc;
	ST(s->rec, r);
	return r;
}

static void
on_state(struct side *s, struct rdp_ep *ep, enum rdp_ep_state st, int err)
{
	struct soak_rec *r = LD(s->rec);
	struct rdp_ep_stats stats;

	switch (st) {
	case RDP_EP_ESTABLISHED:
		ST(s->ep, ep);
		if (s->role == 0)
			ST(r->conn, conn_key(ep));
		ST(s->established, true);
		rec_flag(r, SF_ESTAB);
		break;
	case RDP_EP_FAILED:
		/* a link stays down until its process restarts the stack */
		ST(s->early_err, err);
		side_flag(s, SF_FAILED | (err == -ENETDOWN || port_down() ? SF_LINK : 0));
		if (r != NULL)
			__atomic_store_n(&r->err, err, __ATOMIC_RELAXED);
		/* every delivery came before this event: the main thread, the
		 * only one that closes, lets it go */
		ST(s->failed_seen, true);
		break;
	case RDP_EP_PEER_CLOSED:
		/* the other side closed: everything it sent was delivered first */
		if (r != NULL)
			rec_flag(r, SF_PEER_CLOSED);
		ST(s->failed_seen, true);
		break;
	case RDP_EP_CLOSED:
		/* closed by nobody here: rdp_fini() stopped the stack under it */
		if (!LD(s->failed_seen) && !LD(s->close_asked))
			side_flag(s, SF_DECLINED | SF_DOOMED);
		r = LD(s->rec);
		if (r == NULL && s->role == 1)
			r = rec_at_close(s, ep);
		rdp_ep_stats_get(ep, &stats);
		if (r != NULL) {
			rec_store(&r->enomem, stats.enomem);
			rec_store(&r->rnr, stats.rnr);
			if (s->accepted != s->done + s->failed)
				note(s, "%" PRIu64 " messages accepted, %" PRIu64 " came back",
				     s->accepted, s->done + s->failed);
			rec_flag(r, SF_CLOSED);
		}
		ST(s->dead, true);
		break;
	default:
		break;
	}
}

/* ---- run-to-completion ---- */

static struct side *
rtc_side(struct rdp_ep *ep, void *arg)
{
	struct side *s = arg != NULL ? arg : rdp_ep_get_ctx(ep);

	if (s == NULL) {
		/* an endpoint accepted by the run-to-completion listener */
		s = side_new(0, 1, false, NULL);
		/*
		 * One in EARLY_CLOSE_EVERY holds its first deliveries, and the
		 * main thread closes it meanwhile (early_close_due()): what its
		 * peer sent is done there, and declined here before this side
		 * learned its incarnation.
		 */
		if (rdp_ep_id(ep) % EARLY_CLOSE_EVERY == 0) {
			ST(s->early_close, true);
			ST(s->refuse_until, rdp_clock_ns() + EARLY_HOLD_MS * 1000000ull);
		}
		rdp_ep_set_ctx(ep, s);
	}
	return s;
}

static uint16_t
rtc_recv(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	struct side *s = rtc_side(ep, arg);
	bool learned = LD(s->rec) != NULL;
	uint16_t i;

	if (rdp_clock_ns() < LD(s->refuse_until))
		return 0; /* the application's ring is full */
	for (i = 0; i < n; i++)
		on_delivered(s, msgs[i]);
	if (!learned)
		send_more(s);
	return n;
}

static void
rtc_send(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	struct side *s = rtc_side(ep, arg);
	uint16_t i;

	for (i = 0; i < n; i++)
		on_send_event(s, msgs[i]);
	send_more(s);
}

static void
rtc_state(struct rdp_ep *ep, enum rdp_ep_state st, int err, void *arg)
{
	struct side *s = rtc_side(ep, arg);

	on_state(s, ep, st, err);
	if (st == RDP_EP_ESTABLISHED)
		send_more(s);
}

static const struct rdp_ep_ops soak_rtc_ops = {
	.on_recv = rtc_recv,
	.on_send = rtc_send,
	.on_state = rtc_state,
};

/* ---- pipeline (the process's main thread) ---- */

static unsigned int
pump_ring(struct ring_info *ri)
{
	struct rdp_msg *ev[64];
	uint16_t k, i;

	if (rdp_clock_ns() < ri->pause_until)
		return 0;
	k = rdp_event_dequeue_burst(ri->r, ev, RTE_DIM(ev));
	for (i = 0; i < k; i++) {
		struct rdp_msg *m = ev[i];
		struct side *s = ri->client != NULL ? ri->client : rdp_ep_get_ctx(m->ep);

		if (s == NULL) {
			/* an endpoint accepted by the pipeline listener */
			s = side_new(0, 1, true, ri);
			rdp_ep_set_ctx(m->ep, s);
		}
		switch (m->event) {
		case RDP_EV_RECV:
			on_delivered(s, m);
			break;
		case RDP_EV_SEND_DONE:
		case RDP_EV_SEND_FAILED:
			on_send_event(s, m);
			break;
		case RDP_EV_STATE:
			if (LD(s->dead))
				note(s, "an event after CLOSED");
			on_state(s, m->ep, (enum rdp_ep_state)m->user_data, m->status);
			rdp_msg_free(m);
			break;
		default:
			note(s, "unknown event %u", m->event);
			break;
		}
	}
	return k;
}

/* The main thread's rounds: pipeline sides send, failed sides are closed. */
static void
pump_sends(void)
{
	unsigned int i;

	pthread_mutex_lock(&reg.lock);
	for (i = 0; i < reg.n; i++) {
		struct side *s = reg.s[i];

		if (LD(s->dead))
			continue; /* after CLOSED its endpoint is gone */
		if (LD(s->failed_seen) && !__atomic_exchange_n(&s->close_asked, true,
								__ATOMIC_ACQ_REL))
			rdp_ep_close(LD(s->ep));
		else if (s->pipeline)
			send_more(s);
	}
	pthread_mutex_unlock(&reg.lock);
}

/* ---------------------------------------------------------------------- */
/* A process's stack: rdp_init with a driver spec, two listeners          */
/* ---------------------------------------------------------------------- */

struct rng {
	uint64_t s;
};

static uint64_t
rng_next(struct rng *r)
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	return r->s;
}

/* Uniform in [lo, hi]. */
static uint64_t
rng_range(struct rng *r, uint64_t lo, uint64_t hi)
{
	return lo + rng_next(r) % (hi - lo + 1);
}

/* Driver knobs drawn at random: completion order, send-completion delay,
 * and the work request after which the link goes down. */
static void
random_spec(struct rng *r, char *spec, size_t len, uint64_t *orders, uint64_t fail_div)
{
	static const char *const order[] = { "fifo", "recv_first", "random" };
	unsigned int o = (unsigned int)rng_range(r, 0, 2);
	unsigned int delay = (unsigned int)rng_range(r, 0, 3);
	char ord[48];

	if (o == 2)
		snprintf(ord, sizeof(ord), "random:%u", (unsigned int)rng_range(r, 1, 1u << 30));
	else
		snprintf(ord, sizeof(ord), "%s", order[o]);
	snprintf(spec, len, "shm:cqe_order=%s%s%.0u,fail_after=%" PRIu64, ord,
		 delay > 0 ? ",send_cqe_delay=" : "", delay,
		 rng_range(r, FAIL_AFTER_MIN, FAIL_AFTER_MAX) / fail_div);
	if (orders != NULL)
		orders[o * 4 + delay]++;
}

/*
 * The driver spec of a stack: $RDP_SOAK_DRIVER (this process) or
 * $RDP_SOAK_PEER_DRIVER (the peer) when set, as the rxe lane runs the soak
 * on verbs (whose link goes down by command instead: see link_bounce());
 * else shm with knobs drawn at random.
 */
static void
stack_spec(struct rng *r, char *spec, size_t len, uint64_t *orders, bool peer)
{
	const char *fixed = getenv(peer ? "RDP_SOAK_PEER_DRIVER" : "RDP_SOAK_DRIVER");

	if (fixed != NULL && fixed[0] != '\0') {
		snprintf(spec, len, "%s", fixed);
		return;
	}
	random_spec(r, spec, len, orders, peer ? PEER_FAIL_DIV : 1);
}

struct stack {
	struct rdp_cfg *cfg;
	char spec[128];
	int port_rtc, port_pipe;
	struct ring_info lring;  /* the pipeline listener's ring */
	bool listening;          /* its listeners are open */
	uint64_t anomalies;      /* found at stack_stop() */
	char anomaly[256];
};

static void
stack_start(struct stack *k, const char *spec)
{
	struct rdp_ep_params prtc = { .ops = &soak_rtc_ops, .lcore = -1, .notify_send_ok = true };
	struct rdp_ep_params ppipe = { .events = k->lring.r, .lcore = -1, .notify_send_ok = true };

	snprintf(k->spec, sizeof(k->spec), "%s", spec);
	k->cfg = stream_cfg(spec, SOAK_MAX_MSG);
	/* one endpoint's budget: the CQ grows (admission) as endpoints come (with
	 * srq = on from $RDP_TEST_CFG, the SRQ's receives are in it from the start) */
	if (rdp_cfg_lcore(k->cfg, RDP_CFG_GLOBAL)->srq != RDP_CFG_ON)
		RDP_ASSERT_EQ(rdp_cfg_set(k->cfg, RDP_CFG_GLOBAL, "cq_size", "129", "soak"), 0);
	RDP_ASSERT_MSG(rdp_cfg_validate(k->cfg) == 0, "%s", rdp_err_msg());
	RDP_ASSERT_MSG(rdp_init(k->cfg) == 0, "rdp_init(%s): %s", spec, rdp_err_msg());
	k->port_rtc = rdp_listen("127.0.0.1:0", &prtc);
	k->port_pipe = rdp_listen("127.0.0.1:0", &ppipe);
	RDP_ASSERT_MSG(k->port_rtc > 0 && k->port_pipe > 0, "rdp_listen: %s", rdp_err_msg());
	k->listening = true;
}

static void
stack_anomaly(struct stack *k, const char *fmt, ...) __rte_format_printf(2, 3);

static void
stack_anomaly(struct stack *k, const char *fmt, ...)
{
	va_list ap;

	if (k->anomalies++ == 0) {
		va_start(ap, fmt);
		vsnprintf(k->anomaly, sizeof(k->anomaly), fmt, ap);
		va_end(ap);
	}
}

static bool
port_down(void)
{
	struct rdp_dev_attr a;

	return rdp_rt.devs[0].dev != NULL && rdp_dev_query(rdp_rt.devs[0].dev, &a) == 0 && !a.port_active;
}

/*
 * An orderly stop refuses new peers first: from then on, only handshakes
 * already running can still admit an endpoint (close_all closes those too).
 */
static void
stack_unlisten(struct stack *k)
{
	if (rdp_listen_close(k->port_rtc) != 0 || rdp_listen_close(k->port_pipe) != 0)
		stack_anomaly(k, "rdp_listen_close: %s", rdp_err_msg());
	k->listening = false;
}

/*
 * Close every endpoint the application holds, and those handshakes still
 * admit, and wait until all are released, serving the pipeline rings
 * meanwhile; @p flags marks their records (a side not yet FAILED declines
 * what its peer still sends).
 */
static void
close_all(struct stack *k, struct ring_info *const *rings, unsigned int nb_rings,
	  uint64_t flags, void (*on_dead)(struct side *s))
{
	uint64_t deadline = rdp_clock_ns() + 10000000000ull;
	unsigned int i;

	/*
	 * With a listener open, a peer admitted after the last pass below
	 * would have its messages delivered to a ring nobody serves during
	 * rdp_fini(): they stay held, and rdp_fini() fails.
	 */
	if (k->listening)
		rdp_test_fail(__FILE__, __LINE__, "close_all() with the listeners still open");

	for (;;) {
		unsigned int work = 0;

		/* also those accepted meanwhile */
		pthread_mutex_lock(&reg.lock);
		for (i = 0; i < reg.n; i++) {
			struct side *s = reg.s[i];
			struct rdp_ep *ep = LD(s->ep);

			/* sides that failed keep their own story */
			if (ep != NULL && !LD(s->dead) &&
			    !__atomic_exchange_n(&s->close_asked, true, __ATOMIC_ACQ_REL)) {
				if (!LD(s->failed_seen))
					side_flag(s, flags | SF_DECLINED);
				rdp_ep_close(ep);
			}
		}
		pthread_mutex_unlock(&reg.lock);

		for (i = 0; i < nb_rings; i++) {
			uint64_t pause = rings[i]->pause_until;

			rings[i]->pause_until = 0;
			work += pump_ring(rings[i]);
			rings[i]->pause_until = pause;
		}
		/* handshakes in progress end too: what they admit is closed above */
		if (sides_reap(on_dead) == 0 && rdp_endpoint_count() == 0)
			return;
		if (rdp_clock_ns() > deadline) {
			log_dump();
			fprintf(stderr, "--- endpoints alive\n");
			rdp_endpoints_dump(stderr);
			rdp_test_fail(__FILE__, __LINE__, "%u endpoints not released 10 s after "
				      "close", rdp_endpoint_count());
		}
		if (work == 0)
			usleep(100);
	}
}

/* Everything closed: check what must be back, then rdp_fini(). */
static void
stack_stop(struct stack *k)
{
	unsigned int i;

	for (i = 0; i < rdp_rt.nb_lcores; i++) {
		struct ep_lcore *lc = rdp_rt.lcores[rdp_rt.order[i]];
		struct rdp_poll_stats st;

		for (unsigned int d = 0; d < rdp_rt.nb_devs; d++) {
			const struct rdp_pool *sp = lc->dev[d].send_pool;

			if (rdp_pool_avail(sp) != sp->nb_bufs)
				stack_anomaly(k, "lcore %u: %u of %u send buffers of device %u free "
					      "after every endpoint closed (leaked or freed twice)",
					      lc->lcore_id, rdp_pool_avail(sp), sp->nb_bufs, d);
		}
		rdp_poller_stats(lc->poller, &st, NULL, NULL, NULL);
		if (st.stray_wc != 0 || st.cq_errors != 0) {
			log_dump();
			stack_anomaly(k, "lcore %u: %" PRIu64 " stray completions, %" PRIu64
				      " CQ errors", lc->lcore_id, st.stray_wc, st.cq_errors);
		}
	}
	/* every endpoint that ran ended once, in one way, and none saw ENOMEM or RNR */
	{
		struct rdp_ep_counters c;

		if (rdp_ep_counters_get(-1, &c) != 0)
			stack_anomaly(k, "rdp_ep_counters_get() refused a running stack");
		else if (c.opened != c.closed + c.peer_closed + c.failed || c.enomem != 0 ||
			 c.rnr != 0 || c.failed_rnr != 0 ||
			 c.failed != c.failed_peer_gone + c.failed_flushed +
			 c.failed_retry_exceeded + c.failed_rnr + c.failed_remote_access +
			 c.failed_remote_error + c.failed_device + c.failed_link_down +
			 c.failed_protocol + c.failed_other)
			stack_anomaly(k, "endpoint counters do not add up: opened %" PRIu64
				      ", closed %" PRIu64 ", peer_closed %" PRIu64 ", failed %" PRIu64
				      ", ENOMEM %" PRIu64 ", RNR %" PRIu64, c.opened, c.closed,
				      c.peer_closed, c.failed, c.enomem, c.rnr);
	}
	/* rdmaplane cannot start again after an rdp_fini() that failed */
	if (rdp_fini() != 0) {
		log_dump();
		rdp_test_fail(__FILE__, __LINE__, "rdp_fini: %s", rdp_err_msg());
	}
	rdp_cfg_free(k->cfg);
	k->cfg = NULL;
}

/* ---------------------------------------------------------------------- */
/* The peer process                                                       */
/* ---------------------------------------------------------------------- */

RDP_TEST(helper, soak_peer)
{
	struct rng rng = { .s = strtoull(getenv("RDP_SOAK_PEER_SEED"), NULL, 0) | 1 };
	int fd = atoi(getenv("RDP_SOAK_SHM_FD"));
	struct stack k = { 0 };
	struct ring_info *rings[1];
	char spec[128];
	uint64_t next_check = 0;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	RDP_ASSERT(sh != MAP_FAILED);
	rdp_test_eal_init("0@0,1@1");
	log_watch();
	k.lring.r = rte_ring_create("soak_peer_ev", 4096, SOCKET_ID_ANY, RING_F_SC_DEQ);
	RDP_ASSERT(k.lring.r != NULL);
	rings[0] = &k.lring;
	snprintf(spec, sizeof(spec), "%s", getenv("RDP_SOAK_PEER_SPEC"));
	for (;;) {
		stack_start(&k, spec);
		snprintf(sh->helper_spec, sizeof(sh->helper_spec), "%s", spec);
		ST(sh->port_rtc, (uint64_t)k.port_rtc);
		ST(sh->port_pipe, (uint64_t)k.port_pipe);
		__atomic_fetch_add(&sh->helper_gen, 1, __ATOMIC_ACQ_REL);
		for (;;) {
			unsigned int work = pump_ring(&k.lring);

			pump_sends();
			sides_reap(NULL);
			if (LD(sh->stop))
				break;
			if (rdp_clock_ns() > next_check) {
				next_check = rdp_clock_ns() + 5000000;
				if (port_down())
					break;
			}
			if (work == 0)
				usleep(50);
		}
		if (LD(sh->stop)) {
			stack_unlisten(&k);
			close_all(&k, rings, 1, 0, NULL);
			stack_stop(&k);
			break;
		}
		/* the link went down: every endpoint fails; restart the stack */
		__atomic_fetch_add(&sh->helper_gen, 1, __ATOMIC_ACQ_REL);
		__atomic_fetch_add(&sh->helper_link_downs, 1, __ATOMIC_RELAXED);
		stack_unlisten(&k);
		close_all(&k, rings, 1, SF_DOOMED | SF_LINK, NULL);
		stack_stop(&k);
		stack_spec(&rng, spec, sizeof(spec), NULL, true);
	}
	k.anomalies += logw.anomalies + orphan_errors;
	if (k.anomalies > 0)
		snprintf(sh->helper_error, sizeof(sh->helper_error), "%s",
			 k.anomaly[0] ? k.anomaly : logw.anomalies ? logw.first_anomaly : orphan_error);
	ST(sh->helper_anomalies, k.anomalies);
	ST(sh->helper_done, k.anomalies == 0 ? 1 : 2);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* The main process: streams, faults, the ledger                          */
/* ---------------------------------------------------------------------- */

enum fault {
	F_KILL,        /* the peer process killed, then restarted */
	F_QP_ERR,      /* a QP forced to error */
	F_APP_CLOSE,   /* an endpoint closed by its application mid-stream */
	F_RING_FULL,   /* an event ring full for a while */
	F_CQ_RESIZE,   /* the CQ grown and shrunk under load */
	F_LINK_HERE,   /* this process's link went down (fail_after) */
	F_LINK_PEER,   /* the peer's link went down */
	F_LINK_FLAP,   /* this process's link taken down, then up, by command */
	F_EARLY_CLOSE, /* an accepting side closed before its first delivery */
	F_MAX,
};

static const char *const fault_names[F_MAX] = {
	[F_KILL] = "peer killed+restarted", [F_QP_ERR] = "QP forced to error",
	[F_APP_CLOSE] = "closed mid-stream", [F_RING_FULL] = "ring full",
	[F_CQ_RESIZE] = "CQ resized", [F_LINK_HERE] = "link down (here)",
	[F_LINK_PEER] = "link down (peer)", [F_LINK_FLAP] = "link down+up (command)",
	[F_EARLY_CLOSE] = "closed before its first delivery",
};

struct inc {
	uint64_t id;
	unsigned int stream;
	bool cross;
	bool doomed;            /* a fault was aimed at it */
	bool peer_died;         /* the peer process holding its other side was killed */
	uint64_t peer_gen;      /* the peer's stack it connected to */
	bool here_stopped;      /* this process stopped its stack while it was open */
	bool peer_stopped;      /* the peer stopped its stack while it was open */
	bool closed;            /* our connecting side saw CLOSED */
	uint64_t closed_at;
	char peer_spec[128];    /* the peer's spec when it connected */
	char here_spec[128];
	TAILQ_ENTRY(inc) next;
};

struct stream {
	bool cross;
	bool pipeline;          /* how the connecting side (here) runs */
	struct ring_info ring;  /* its events, when pipeline */
	struct inc *cur;
	uint64_t retry_at;
};

struct ledger {
	uint64_t incs[2];       /* in process, across */
	uint64_t handshake_failures;
	uint64_t handshake_errno[5]; /* ECONNREFUSED, ETIMEDOUT, ECANCELED, other, closed */
	int handshake_other;         /* the last other errno */
	uint64_t accepted, done, failed, delivered, bytes;
	uint64_t lost_with_peer, declined;
	uint64_t failed_delivered;  /* reported failed, delivered all the same (real NICs) */
	uint64_t delivered_from_killed; /* sent by a peer process later killed */
	uint64_t cross_delivered;   /* delivered here by incarnations across processes */
	uint64_t unexplained;
	uint64_t violations;
	uint64_t faults[F_MAX];
	uint64_t cq_resize_ok, cq_resize_refused;
	uint64_t orders[12];    /* cqe_order x send_cqe_delay, over every spec used */
};

static struct {
	struct rng rng;
	struct stack k;
	struct stream st[SOAK_STREAMS];
	TAILQ_HEAD(, inc) incs;      /* not yet checked */
	uint64_t next_inc;
	pid_t peer;
	int shm_fd;
	struct ledger l;
} m;

static void
violation(const char *fmt, ...) __rte_format_printf(1, 2);

static void
violation(const char *fmt, ...)
{
	va_list ap;

	if (m.l.violations++ < 20) {
		fprintf(stderr, "LEDGER: ");
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fprintf(stderr, "\n");
	}
}

static pid_t
spawn_peer(void)
{
	char spec[128], v[32];
	pid_t pid;

	uint64_t seed = rng_next(&m.rng);

	stack_spec(&m.rng, spec, sizeof(spec), m.l.orders, true);
	fflush(stdout);
	pid = fork();
	RDP_ASSERT(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the soak */
		setenv("RDP_SOAK_PEER_SPEC", spec, 1);
		snprintf(v, sizeof(v), "%d", m.shm_fd);
		setenv("RDP_SOAK_SHM_FD", v, 1);
		snprintf(v, sizeof(v), "%" PRIu64, seed);
		setenv("RDP_SOAK_PEER_SEED", v, 1);
		execl(rdp_test_self(), rdp_test_self(), "soak_peer", (char *)NULL);
		_exit(127);
	}
	return pid;
}

static struct inc *
find_inc(uint64_t id)
{
	struct inc *i;

	TAILQ_FOREACH(i, &m.incs, next)
		if (i->id == id)
			return i;
	return NULL;
}

/* A connecting side saw CLOSED: its stream may connect again. */
static void
on_side_dead(struct side *s)
{
	struct inc *i;

	if (s->role != 0)
		return;
	i = find_inc(s->inc);
	RDP_ASSERT(i != NULL);
	i->closed = true;
	i->closed_at = rdp_clock_ns();
	m.st[i->stream].cur = NULL;
	m.st[i->stream].retry_at = rdp_clock_ns() + 1000000;
}

static void
connect_stream(unsigned int idx)
{
	struct stream *st = &m.st[idx];
	struct rdp_ep_params prm = { .lcore = -1, .notify_send_ok = true };
	struct rdp_ep *ep;
	char addr[64];
	struct side *s;
	struct inc *i;
	uint64_t port;

	if (st->cross) {
		if (m.peer <= 0 || (LD(sh->helper_gen) & 1) == 0)
			return; /* the peer's stack is (re)starting */
		port = st->pipeline ? LD(sh->port_rtc) : LD(sh->port_pipe);
	} else {
		port = (uint64_t)(st->pipeline ? m.k.port_rtc : m.k.port_pipe);
	}
	i = calloc(1, sizeof(*i));
	RDP_ASSERT(i != NULL);
	i->id = ++m.next_inc;
	i->stream = idx;
	i->cross = st->cross;
	snprintf(i->here_spec, sizeof(i->here_spec), "%s", m.k.spec);
	if (st->cross) {
		i->peer_gen = LD(sh->helper_gen);
		snprintf(i->peer_spec, sizeof(i->peer_spec), "%s", sh->helper_spec);
	}
	s = side_new(i->id, 0, st->pipeline, st->pipeline ? &st->ring : NULL);
	if (st->pipeline) {
		st->ring.client = s;
		prm.events = st->ring.r;
	} else {
		prm.ops = &soak_rtc_ops;
		prm.arg = s;
	}
	snprintf(addr, sizeof(addr), "127.0.0.1:%" PRIu64, port);
	TAILQ_INSERT_TAIL(&m.incs, i, next);
	st->cur = i;
	m.l.incs[st->cross]++;
	ep = rdp_connect(addr, &prm);
	if (ep == NULL) {
		/* never started: nothing to account */
		violation("inc %" PRIu64 ": rdp_connect: %s", i->id, rdp_err_msg());
		rec_flag(s->rec, SF_CLOSED);
		ST(s->dead, true);
		return;
	}
	/* known at once, so that a close can reach it while it connects */
	ST(s->ep, ep);
	if (getenv("RDP_SOAK_TRACE") != NULL)
		fprintf(stderr, "[%.6f] inc %" PRIu64 " stream %u: endpoint %u to %s\n",
			rdp_clock_s(), i->id, idx, rdp_ep_id(ep), addr);
}

/* ---- faults ---- */

static void
qp_error_call(struct rdp_ep *ep, void *arg)
{
	struct rdp_qp_attr a = { .state = RDP_QPS_ERR };

	RTE_SET_USED(arg);
	/* on the poller, in order with its events: the QP is still ours */
	if (ep_phase_get(ep) < EP_PH_RETIRED && ep->qp != NULL)
		rdp_qp_modify(ep->qp, &a, RDP_QP_ATTR_STATE);
}

static void
cq_resize_call(struct rdp_ep *ep, void *arg)
{
	struct rdp_poller *p = ep->lc->poller;
	struct rdp_cq *cq = rdp_poller_cq(p, ep->ld->idx);
	uint32_t size, grow;

	/* on the poller, the CQ's owner: grow it under load, then back */
	rdp_poller_cq_usage(p, ep->ld->idx, NULL, &size);
	grow = size + 1 + (uint32_t)((uintptr_t)arg % size);
	if (rdp_cq_resize(cq, grow) == 0 && rdp_cq_resize(cq, size) == 0)
		__atomic_fetch_add(&m.l.cq_resize_ok, 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&m.l.cq_resize_refused, 1, __ATOMIC_RELAXED);
}

/* A random established side of this process, or NULL. */
static struct side *
pick_side(void)
{
	struct side *c[SOAK_MAX_SIDES], *s = NULL;
	unsigned int n = 0, i;

	pthread_mutex_lock(&reg.lock);
	for (i = 0; i < reg.n; i++) {
		struct side *x = reg.s[i];

		if (LD(x->established) && !LD(x->close_asked) && !LD(x->dead) &&
		    LD(x->rec) != NULL)
			c[n++] = x;
	}
	if (n > 0)
		s = c[rng_next(&m.rng) % n];
	pthread_mutex_unlock(&reg.lock);
	return s;
}

/* A fault that ends every incarnation here whose connecting side is open. */
static void
doom_open(void)
{
	struct inc *i;

	TAILQ_FOREACH(i, &m.incs, next)
		if (!i->closed)
			i->doomed = true;
}

/* This process stops its stack: what it did not deliver yet, it declines. */
static void
stop_here(void)
{
	struct inc *i;

	doom_open();
	TAILQ_FOREACH(i, &m.incs, next)
		i->here_stopped |= !i->closed || !i->cross;
}

/* The peer's stack went down: every incarnation that reached it ends. */
static void
doom_peer_gen(void)
{
	uint64_t gen = LD(sh->helper_gen);
	struct inc *i;

	TAILQ_FOREACH(i, &m.incs, next) {
		if (i->cross && i->peer_gen != gen) {
			i->doomed = true;
			i->peer_stopped = true;
		}
	}
}

static void
doom(uint64_t inc_id)
{
	struct inc *i = find_inc(inc_id);

	if (i != NULL)
		i->doomed = true;
}

/* The peer process is gone (killed, or it died): its sides with it. */
static void
peer_gone(void)
{
	struct inc *i;

	TAILQ_FOREACH(i, &m.incs, next) {
		if (i->cross) {
			i->doomed |= !i->closed;
			i->peer_died = true;
		}
	}
	ST(sh->helper_gen, (LD(sh->helper_gen) | 1) + 1);
	m.peer = spawn_peer();
}

/*
 * F_EARLY_CLOSE: close the accepting sides of this process that hold their
 * first deliveries to be closed meanwhile (rtc_side()), once they held them
 * EARLY_CLOSE_AFTER_MS. They do not know their incarnation: none is doomed.
 */
static void
early_close_due(void)
{
	uint64_t now = rdp_clock_ns();
	unsigned int i;

	pthread_mutex_lock(&reg.lock);
	for (i = 0; i < reg.n; i++) {
		struct side *x = reg.s[i];
		uint64_t until = LD(x->refuse_until);

		/* within its hold only: past it, it delivers and is a side as any */
		if (!LD(x->early_close) || !LD(x->established) || LD(x->dead) || now >= until ||
		    now + (EARLY_HOLD_MS - EARLY_CLOSE_AFTER_MS) * 1000000ull < until ||
		    __atomic_exchange_n(&x->close_asked, true, __ATOMIC_ACQ_REL))
			continue;
		side_flag(x, SF_DECLINED | SF_DOOMED);
		rdp_ep_close(LD(x->ep));
		__atomic_fetch_add(&sh->early_closes, 1, __ATOMIC_RELAXED);
		if (getenv("RDP_SOAK_TRACE") != NULL)
			fprintf(stderr, "[%.6f] fault %d on endpoint %u\n", rdp_clock_s(),
				(int)F_EARLY_CLOSE, rdp_ep_id(LD(x->ep)));
	}
	pthread_mutex_unlock(&reg.lock);
}

/* A fault; past the run's length (@p run_on) the peer process is not killed. */
static void
inject(bool run_on)
{
	static const enum fault weights[] = {
		F_KILL, F_QP_ERR, F_QP_ERR, F_QP_ERR, F_APP_CLOSE, F_APP_CLOSE,
		F_RING_FULL, F_RING_FULL, F_RING_FULL, F_CQ_RESIZE, F_CQ_RESIZE,
	};
	enum fault f = weights[rng_next(&m.rng) % RTE_DIM(weights)];
	struct side *s = f == F_KILL ? NULL : pick_side();

	if (f == F_KILL && run_on)
		return;

	switch (f) {
	case F_KILL:
		if (m.peer <= 0)
			return;
		kill(m.peer, SIGKILL);
		RDP_ASSERT(waitpid(m.peer, NULL, 0) == m.peer);
		peer_gone();
		break;
	case F_QP_ERR:
		if (s == NULL || rdp_ep_call(LD(s->ep), qp_error_call, NULL) != 0)
			return;
		doom(s->inc);
		break;
	case F_APP_CLOSE:
		if (s == NULL || __atomic_exchange_n(&s->close_asked, true, __ATOMIC_ACQ_REL))
			return;
		side_flag(s, SF_DECLINED | SF_DOOMED);
		doom(s->inc);
		rdp_ep_close(LD(s->ep));
		break;
	case F_RING_FULL:
		if (s == NULL)
			return;
		if (s->pipeline) {
			s->ring->pause_until = rdp_clock_ns() + rng_range(&m.rng, 20, 300) * 1000000;
		} else {
			ST(s->refuse_until, rdp_clock_ns() + rng_range(&m.rng, 20, 300) * 1000000);
		}
		break;
	case F_CQ_RESIZE:
		if (s == NULL ||
		    rdp_ep_call(LD(s->ep), cq_resize_call, (void *)(uintptr_t)rng_next(&m.rng)) != 0)
			return;
		break;
	default:
		return;
	}
	if (getenv("RDP_SOAK_TRACE") != NULL)
		fprintf(stderr, "[%.6f] fault %d on inc %" PRIu64 "\n", rdp_clock_s(), (int)f,
			s != NULL ? s->inc : 0);
	m.l.faults[f]++;
}

/*
 * On a real wire ($RDP_SOAK_LINK_DOWN and $RDP_SOAK_LINK_UP, shell commands
 * that take this process's link down and bring it back): the link goes
 * down for 100-1500 ms during traffic, then up, and the stack stays. What
 * is open when it goes down or comes back may fail (a port event fails
 * every endpoint of the device, ENETDOWN) or ride it out on RC
 * retransmission; either way nothing reported done may be lost.
 * Called from the main loop: schedules itself, returns at once.
 */
static bool
link_by_command(void)
{
	const char *down = getenv("RDP_SOAK_LINK_DOWN"), *up = getenv("RDP_SOAK_LINK_UP");

	return down != NULL && up != NULL && down[0] != '\0' && up[0] != '\0';
}

/* When the link taken down by command comes back (0: it is up). */
static uint64_t link_up_at;

/* Bring the link back now if a command took it down. */
static void
link_up_now(void)
{
	const char *up = getenv("RDP_SOAK_LINK_UP");

	if (system(up) != 0)
		violation("RDP_SOAK_LINK_UP failed: %s", up);
	doom_open();
	m.l.faults[F_LINK_FLAP]++;
	link_up_at = 0;
	if (getenv("RDP_SOAK_TRACE") != NULL)
		fprintf(stderr, "[%.6f] link up\n", rdp_clock_s());
}

/*
 * Take the link down every few seconds and bring it back; past the run's
 * length (@p run_on) only bring it back.
 */
static void
link_flap(uint64_t now, bool run_on)
{
	static uint64_t next_down;
	const char *down = getenv("RDP_SOAK_LINK_DOWN");

	if (!link_by_command())
		return;
	if (next_down == 0)
		next_down = now + rdp_test_env_u64("RDP_SOAK_LINK_FIRST_MS",
						   rng_range(&m.rng, 2000, 5000)) * 1000000;
	if (link_up_at == 0 && now >= next_down && !run_on) {
		doom_open();
		if (system(down) != 0)
			violation("RDP_SOAK_LINK_DOWN failed: %s", down);
		link_up_at = now + rng_range(&m.rng, 100, 1500) * 1000000;
		if (getenv("RDP_SOAK_TRACE") != NULL)
			fprintf(stderr, "[%.6f] link down\n", rdp_clock_s());
	} else if (link_up_at != 0 && now >= link_up_at) {
		link_up_now();
		next_down = now + rng_range(&m.rng, 2000, 5000) * 1000000;
	}
}

/* This process's link went down: every endpoint fails; restart the stack. */
static void
restart_here(void)
{
	struct ring_info *rings[SOAK_STREAMS + 1];
	unsigned int n = 0, i;
	char spec[128];

	m.l.faults[F_LINK_HERE]++;
	stop_here();
	rings[n++] = &m.k.lring;
	for (i = 0; i < SOAK_STREAMS; i++)
		if (m.st[i].pipeline)
			rings[n++] = &m.st[i].ring;
	stack_unlisten(&m.k);
	close_all(&m.k, rings, n, SF_DOOMED | SF_LINK, on_side_dead);
	stack_stop(&m.k);
	stack_spec(&m.rng, spec, sizeof(spec), m.l.orders, false);
	stack_start(&m.k, spec);
}

/* ---- the ledger ---- */

/*
 * shm's completions are exact: a SEND that failed did not land. On a real
 * NIC an acknowledgement can be lost with the link, so a message reported
 * failed may have been delivered (counted, not a violation).
 */
static bool
exact_completions(void)
{
	const char *here = getenv("RDP_SOAK_DRIVER"), *peer = getenv("RDP_SOAK_PEER_DRIVER");

	return (here == NULL || here[0] == '\0' || strncmp(here, "shm", 3) == 0) &&
	       (peer == NULL || peer[0] == '\0' || strncmp(peer, "shm", 3) == 0);
}

/* One direction of one incarnation; see docs/reliability.md. */
static void
check_direction(const struct inc *i, const char *dir, const struct soak_rec *snd, bool snd_valid,
		bool snd_dead, const struct soak_rec *rcv, bool rcv_valid, bool rcv_dead,
		bool rcv_stopped)
{
	uint64_t acc = snd_valid ? LD(snd->accepted) : 0, done = snd_valid ? LD(snd->done) : 0;
	uint64_t failed = snd_valid ? LD(snd->failed) : 0;
	uint64_t got = rcv_valid ? LD(rcv->delivered) : 0;
	/* its application closed it first, or stopped the whole stack under it */
	bool declined = rcv_stopped || (rcv_valid && (LD(rcv->flags) & SF_DECLINED));

	if (!snd_dead) {
		if (acc != done + failed)
			violation("inc %" PRIu64 " %s: %" PRIu64 " accepted, %" PRIu64 " done + %"
				  PRIu64 " failed", i->id, dir, acc, done, failed);
		if (got > acc)
			violation("inc %" PRIu64 " %s: %" PRIu64 " delivered, %" PRIu64 " accepted",
				  i->id, dir, got, acc);
		else if (got > done && exact_completions())
			violation("inc %" PRIu64 " %s: %" PRIu64 " delivered, only %" PRIu64
				  " reported done (a failed message was delivered)", i->id, dir,
				  got, done);
		else if (got > done)
			m.l.failed_delivered += got - done;
		if (!rcv_dead && !declined && got < done)
			violation("inc %" PRIu64 " %s: %" PRIu64 " reported done, %" PRIu64
				  " delivered by a receiver that lived on", i->id, dir, done, got);
	} else if (got > acc) {
		violation("inc %" PRIu64 " %s: %" PRIu64 " delivered, %" PRIu64 " accepted",
			  i->id, dir, got, acc);
	}
	if (!snd_dead) {
		m.l.accepted += acc;
		m.l.done += done;
		m.l.failed += failed;
		if (rcv_dead && done > got)
			m.l.lost_with_peer += done - got;
		else if (declined && done > got)
			m.l.declined += done - got;
		m.l.delivered += got;
	} else {
		m.l.delivered_from_killed += got;
	}
	if (rcv_valid)
		m.l.bytes += LD(rcv->bytes);
}

static void
check_rec_clean(const struct inc *i, const struct soak_rec *r, bool valid, const char *who)
{
	if (!valid)
		return;
	if (LD(r->bad) > 0)
		violation("inc %" PRIu64 " %s: %" PRIu64 " checks failed, first: %s", i->id, who,
			  LD(r->bad), r->error);
	if (LD(r->enomem) != 0 || LD(r->rnr) != 0)
		violation("inc %" PRIu64 " %s: ENOMEM %" PRIu64 ", RNR %" PRIu64
			  " (flow control broken)", i->id, who, LD(r->enomem), LD(r->rnr));
}

/* Check an incarnation once both sides are final; false: not yet. */
static bool
check_inc(struct inc *i)
{
	struct soak_rec *c = rec_of(i->id, 0), *a = rec_of(i->id, 1);
	bool a_valid = rec_valid(a, i->id), a_dead = i->cross && i->peer_died;
	bool a_stopped = i->cross ? i->peer_stopped : i->here_stopped;
	uint64_t cf, af, violations_before = m.l.violations;

	/* a little time for the peer to publish what it saw */
	if (!i->closed || rdp_clock_ns() - i->closed_at < 200000000ull)
		return false;
	if (!a_valid && LD(c->done) > 0 && !a_dead && !a_stopped &&
	    rdp_clock_ns() - i->closed_at < (uint64_t)(CHECK_TIMEOUT_S * 1e9))
		return false; /* the accepting side has not delivered its first message yet */
	if (a_valid && !(LD(a->flags) & SF_CLOSED) && !a_dead) {
		if (rdp_clock_ns() - i->closed_at < (uint64_t)(CHECK_TIMEOUT_S * 1e9))
			return false;
		violation("inc %" PRIu64 ": the accepting side did not close within %.0f s",
			  i->id, CHECK_TIMEOUT_S);
	}
	if (!a_valid && LD(c->done) > 0 && !a_dead && !a_stopped)
		violation("inc %" PRIu64 ": %" PRIu64 " messages reported done, the accepting "
			  "side never delivered one", i->id, LD(c->done));
	check_direction(i, "connecting->accepting", c, true, false, a, a_valid, a_dead,
			a_stopped);
	check_direction(i, "accepting->connecting", a, a_valid, a_dead, c, true, false,
			i->here_stopped);
	check_rec_clean(i, c, true, "connecting side");
	check_rec_clean(i, a, a_valid && !a_dead, "accepting side");
	if (i->cross)
		m.l.cross_delivered += LD(c->delivered);
	cf = LD(c->flags);
	af = a_valid ? LD(a->flags) : 0;
	if (m.l.violations != violations_before)
		fprintf(stderr, "LEDGER: inc %" PRIu64 " was stream %u, %s, %s; connecting side "
			"flags %#" PRIx64 " err %" PRId64 ", accepting side flags %#" PRIx64
			" err %" PRId64 "; doomed %d peer_died %d here_stopped %d peer_stopped %d;"
			" here %s, peer %s\n", i->id, i->stream, i->cross ? "two processes" :
			"in process", m.st[i->stream].pipeline ? "pipeline" : "run to completion",
			cf, LD(c->err), af, a_valid ? LD(a->err) : 0, i->doomed, i->peer_died,
			i->here_stopped, i->peer_stopped, i->here_spec,
			i->cross ? i->peer_spec : "-");
	if (!(cf & SF_ESTAB)) {
		int e = (int)-LD(c->err);

		m.l.handshake_failures++;
		m.l.handshake_errno[e == 0 ? 4 : e == ECONNREFUSED ? 0 : e == ETIMEDOUT ? 1 :
				    e == ECANCELED ? 2 : 3]++;
		if (e != 0 && e != ECONNREFUSED && e != ETIMEDOUT && e != ECANCELED)
			m.l.handshake_other = e;
	}
	if (((cf | af) & SF_FAILED) && !i->doomed && !((cf | af) & (SF_DOOMED | SF_LINK)) &&
	    (cf & SF_ESTAB)) {
		m.l.unexplained++;
		fprintf(stderr, "UNEXPLAINED: inc %" PRIu64 " (stream %u, %s) failed with no fault "
			"injected: connecting side err %" PRId64 " (%s), accepting side err %" PRId64
			"; here %s, peer %s\n", i->id, i->stream, i->cross ? "two processes" :
			"in process", LD(c->err), strerror((int)-LD(c->err)), a_valid ? LD(a->err) : 0,
			i->here_spec, i->cross ? i->peer_spec : "-");
		log_dump();
	}
	return true;
}

/* Messages the peer process delivered here so far, checked or not. */
static uint64_t
cross_delivered(void)
{
	uint64_t n = m.l.cross_delivered;
	const struct inc *i;

	TAILQ_FOREACH(i, &m.incs, next)
		if (i->cross)
			n += LD(rec_of(i->id, 0)->delivered);
	return n;
}

static void
check_incs(void)
{
	struct inc *i, *next;

	for (i = TAILQ_FIRST(&m.incs); i != NULL; i = next) {
		next = TAILQ_NEXT(i, next);
		if (check_inc(i)) {
			TAILQ_REMOVE(&m.incs, i, next);
			free(i);
		}
	}
}

static void
print_ledger(double secs, uint64_t seed, uint64_t min_cross)
{
	static const char *const order[] = { "fifo", "recv_first", "random" };
	unsigned int f, o;

	printf("soak: %.0f s, seed %" PRIu64 " (RDP_SOAK_SEED=%" PRIu64 " replays the choices)\n",
	       secs, seed, seed);
	printf("soak: incarnations %" PRIu64 " in process + %" PRIu64 " across processes, "
	       "%" PRIu64 " ended in their handshake (closed by a stack restart %" PRIu64
	       ", refused %" PRIu64 ", timed out %" PRIu64 ", cancelled %" PRIu64 ", other %"
	       PRIu64 "%s%s)\n", m.l.incs[0], m.l.incs[1], m.l.handshake_failures,
	       m.l.handshake_errno[4], m.l.handshake_errno[0], m.l.handshake_errno[1],
	       m.l.handshake_errno[2], m.l.handshake_errno[3],
	       m.l.handshake_other ? ": " : "",
	       m.l.handshake_other ? strerror(m.l.handshake_other) : "");
	printf("soak ledger: accepted %" PRIu64 " = done %" PRIu64 " + failed %" PRIu64
	       "; delivered %" PRIu64 " = done - lost with a killed receiver %" PRIu64
	       " - declined by a closing receiver %" PRIu64 "; also delivered %" PRIu64
	       " from senders later killed (%.1f GB in all)\n", m.l.accepted, m.l.done,
	       m.l.failed, m.l.delivered, m.l.lost_with_peer, m.l.declined,
	       m.l.delivered_from_killed, m.l.bytes / 1e9);
	if (!exact_completions())
		printf("soak ledger: %" PRIu64 " of the failed were delivered all the same (their "
		       "acknowledgement was lost: real NICs only); delivered = done + those - lost"
		       " - declined\n", m.l.failed_delivered);
	printf("soak faults:");
	for (f = 0; f < F_MAX; f++)
		printf("%s %s %" PRIu64, f ? "," : "", fault_names[f],
		       f == F_LINK_PEER ? LD(sh->helper_link_downs) :
		       f == F_EARLY_CLOSE ? LD(sh->early_closes) : m.l.faults[f]);
	printf(" (CQ resizes done %" PRIu64 ", refused %" PRIu64 ")\n", m.l.cq_resize_ok,
	       m.l.cq_resize_refused);
	if (exact_completions()) {
		printf("soak driver specs (cqe_order x send_cqe_delay 0-3):");
		for (o = 0; o < 3; o++)
			printf(" %s %" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64, order[o],
			       m.l.orders[o * 4], m.l.orders[o * 4 + 1], m.l.orders[o * 4 + 2],
			       m.l.orders[o * 4 + 3]);
		printf("\n");
	} else {
		printf("soak drivers: here %s, peer %s\n", getenv("RDP_SOAK_DRIVER"),
		       getenv("RDP_SOAK_PEER_DRIVER"));
	}
	printf("soak: %" PRIu64 " messages delivered here from the peer process (at least %"
	       PRIu64 " asked)\n", m.l.cross_delivered, min_cross);
	printf("soak: violations %" PRIu64 ", unexplained failures %" PRIu64
	       ", anomalies here %" PRIu64 ", in the peer %" PRIu64 "\n", m.l.violations,
	       m.l.unexplained, m.k.anomalies + logw.anomalies + orphan_errors,
	       LD(sh->helper_anomalies));
}

/* The soak for @p secs seconds, both processes configured by $RDP_TEST_CFG. */
static int
soak_run(uint64_t secs)
{
	uint64_t seed = rdp_test_env_u64("RDP_SOAK_SEED", rdp_clock_ns() % 1000000007);
	uint64_t min_cross = rdp_test_env_u64("RDP_SOAK_MIN_CROSS", 0);
	uint64_t t0, end, end_max, t_end, next_fault, next_link = 0;
	struct ring_info *rings[SOAK_STREAMS + 1];
	unsigned int i, nr = 0;
	char spec[128];
	int status;

	m.rng.s = seed * 0x9e3779b97f4a7c15ull | 1;
	TAILQ_INIT(&m.incs);
	printf("soak: %" PRIu64 " s, seed %" PRIu64 "\n", secs, seed);
	m.shm_fd = memfd_create("rdp-soak", 0);
	RDP_ASSERT(m.shm_fd >= 0 && ftruncate(m.shm_fd, sizeof(*sh)) == 0);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED, m.shm_fd, 0);
	RDP_ASSERT(sh != MAP_FAILED);
	m.peer = spawn_peer();
	rdp_test_eal_init("0@1,1@0");
	log_watch();
	m.k.lring.r = rte_ring_create("soak_ev_l", 4096, SOCKET_ID_ANY, RING_F_SC_DEQ);
	RDP_ASSERT(m.k.lring.r != NULL);
	rings[nr++] = &m.k.lring;
	for (i = 0; i < SOAK_STREAMS; i++) {
		char name[32];

		m.st[i].cross = i >= 2;
		m.st[i].pipeline = i % 2 == 1;
		if (m.st[i].pipeline) {
			snprintf(name, sizeof(name), "soak_ev_%u", i);
			m.st[i].ring.r = rte_ring_create(name, 1024, SOCKET_ID_ANY, RING_F_SC_DEQ);
			RDP_ASSERT(m.st[i].ring.r != NULL);
			rings[nr++] = &m.st[i].ring;
		}
	}
	stack_spec(&m.rng, spec, sizeof(spec), m.l.orders, false);
	stack_start(&m.k, spec);

	t0 = rdp_clock_ns();
	end = t0 + secs * 1000000000ull;
	end_max = t0 + SOAK_MIN_CROSS_STRETCH * secs * 1000000000ull;
	next_fault = t0 + 500000000ull;
	for (;;) {
		unsigned int work = 0;
		uint64_t now = rdp_clock_ns();

		if (now >= end && (now >= end_max || cross_delivered() >= min_cross))
			break;
		for (i = 0; i < nr; i++)
			work += pump_ring(rings[i]);
		pump_sends();
		sides_reap(on_side_dead);
		now = rdp_clock_ns();
		for (i = 0; i < SOAK_STREAMS; i++)
			if (m.st[i].cur == NULL && now >= m.st[i].retry_at)
				connect_stream(i);
		if (now >= next_fault) {
			inject(now >= end);
			next_fault = now + rng_range(&m.rng, 150, 700) * 1000000;
		}
		link_flap(now, now >= end);
		early_close_due();
		if (now >= next_link) {
			next_link = now + 5000000;
			/* a link that fail_after took down stays down: start again; one
			 * taken down by command comes back, and the stack stays */
			if (!link_by_command() && port_down())
				restart_here();
			doom_peer_gen();
			if (m.peer > 0 && waitpid(m.peer, &status, WNOHANG) == m.peer) {
				violation("the peer process ended by itself (status 0x%x)", status);
				peer_gone();
			}
			check_incs();
		}
		if (work == 0)
			usleep(50);
	}

	if (cross_delivered() < min_cross)
		violation("the peer process delivered %" PRIu64 " messages here in %.1f s, fewer "
			  "than RDP_SOAK_MIN_CROSS = %" PRIu64 ": the run crossed the wire too "
			  "little to prove anything", cross_delivered(), (rdp_clock_ns() - t0) / 1e9,
			  min_cross);
	/* the end: a link still down comes back (whatever runs next needs it),
	 * then close everything here (declining what is still coming) */
	if (link_up_at != 0)
		link_up_now();
	doom_open();
	stack_unlisten(&m.k);
	close_all(&m.k, rings, nr, SF_DOOMED, on_side_dead);
	while (!TAILQ_EMPTY(&m.incs)) {
		check_incs();
		usleep(1000);
	}
	ST(sh->stop, 1);
	t_end = rdp_clock_ns() + 30000000000ull;
	while (waitpid(m.peer, &status, WNOHANG) != m.peer) {
		if (rdp_clock_ns() > t_end) {
			kill(m.peer, SIGKILL);
			RDP_ASSERT(waitpid(m.peer, &status, 0) == m.peer);
			violation("the peer process did not finish within 30 s");
			break;
		}
		usleep(1000);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		violation("the peer process ended with status 0x%x", status);
	else if (LD(sh->helper_done) != 1)
		violation("the peer process found a problem: %s", sh->helper_error);
	stack_stop(&m.k);
	print_ledger((rdp_clock_ns() - t0) / 1e9, seed, min_cross);
	RDP_ASSERT_MSG(m.k.anomalies == 0, "%s", m.k.anomaly);
	RDP_ASSERT_MSG(logw.anomalies == 0, "logged: %s", logw.first_anomaly);
	RDP_ASSERT_MSG(orphan_errors == 0, "%s", orphan_error);
	RDP_ASSERT_EQ(m.l.violations, 0);
	RDP_ASSERT_EQ(m.l.unexplained, 0);
	RDP_ASSERT(m.l.accepted > 0 && m.l.delivered > 0);
	for (i = 0; i < SOAK_STREAMS; i++)
		if (m.st[i].pipeline)
			rte_ring_free(m.st[i].ring.r);
	rte_ring_free(m.k.lring.r);
	return 0;
}

/*
 * A link the soak took down by command comes back when the soak ends, even
 * when the end falls while it is down: the commands after the soak (the
 * rxe lane's) find it up. The commands here only write the link's state
 * to a file; the first goes down 1.7 s into a 2 s run, for at least 0.1 s.
 */
RDP_TEST(soak, soak_brings_a_link_it_took_down_back_up_when_it_ends)
{
	char state[64], down[128], up[128], got[16] = "";
	FILE *f;

	snprintf(state, sizeof(state), "soak-link-%d.state", (int)getpid());
	snprintf(down, sizeof(down), "echo down > %s", state);
	snprintf(up, sizeof(up), "echo up > %s", state);
	RDP_ASSERT(setenv("RDP_SOAK_LINK_DOWN", down, 1) == 0);
	RDP_ASSERT(setenv("RDP_SOAK_LINK_UP", up, 1) == 0);
	RDP_ASSERT(setenv("RDP_SOAK_LINK_FIRST_MS", "1700", 1) == 0);
	RDP_ASSERT(setenv("RDP_SOAK_DRIVER", "shm", 1) == 0);
	RDP_ASSERT(setenv("RDP_SOAK_PEER_DRIVER", "shm", 1) == 0);
	RDP_ASSERT_EQ(soak_run(2), 0);
	f = fopen(state, "r");
	RDP_ASSERT_MSG(f != NULL, "the link was never taken down");
	RDP_ASSERT(fgets(got, sizeof(got), f) != NULL);
	fclose(f);
	RDP_ASSERT(unlink(state) == 0);
	RDP_ASSERT_MSG(strcmp(got, "up\n") == 0, "the soak ended with the link '%.4s'", got);
	return 0;
}

RDP_TEST(soak, soak_under_faults_every_message_delivered_once_or_reported_failed)
{
	return soak_run(rdp_test_env_u64("RDP_SOAK_SECONDS", 60));
}

/*
 * The same on a shared receive queue per poller, with leases small enough
 * that endpoints wait for credit, and messages long enough to go by
 * rendezvous: for half as long.
 */
RDP_TEST(soak, soak_on_a_shared_receive_queue_every_message_delivered_once_or_reported_failed)
{
	const char *lane = getenv("RDP_TEST_CFG");
	char cfg[512];

	/* the lane's own overrides after these (the peer process inherits both) */
	snprintf(cfg, sizeof(cfg), "srq=on,srq_size=1024,srq_floor=4,srq_lease_max=64,"
		 "rndv_threshold=16384%s%s", lane != NULL ? "," : "", lane != NULL ? lane : "");
	RDP_ASSERT(setenv("RDP_TEST_CFG", cfg, 1) == 0);
	return soak_run((rdp_test_env_u64("RDP_SOAK_SECONDS", 60) + 1) / 2);
}

/* soak_run() for a second under $RDP_SOAK_MIN_CROSS, in a process of its own */
RDP_TEST(helper, soak_min_cross_run)
{
	return soak_run(1);
}

/*
 * A run whose peer process delivers fewer messages here than
 * RDP_SOAK_MIN_CROSS asks (the rxe lane's guard against a run that barely
 * crossed the wire) goes on past its length, up to SOAK_MIN_CROSS_STRETCH
 * times it, and then fails with a violation that names the minimum.
 */
RDP_TEST(soak, soak_that_crossed_too_little_runs_on_and_then_fails_naming_the_minimum)
{
	static char out[65536];
	uint64_t t0 = rdp_clock_ns();
	double secs;
	int status;

	RDP_ASSERT(setenv("RDP_SOAK_MIN_CROSS", "1000000000000", 1) == 0);
	status = rdp_test_run_helper("soak_min_cross_run", out, sizeof(out));
	RDP_ASSERT(unsetenv("RDP_SOAK_MIN_CROSS") == 0);
	secs = (rdp_clock_ns() - t0) / 1e9;
	RDP_ASSERT_MSG(WIFEXITED(status) && WEXITSTATUS(status) != 0,
		       "the run passed (status 0x%x): %s", status, out);
	RDP_ASSERT_MSG(strstr(out, "fewer than RDP_SOAK_MIN_CROSS = 1000000000000") != NULL,
		       "no violation names the minimum: %s", out);
	RDP_ASSERT_MSG(secs >= SOAK_MIN_CROSS_STRETCH, "the run ended after %.1f s", secs);
	return 0;
}
