/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sessions (rdp_session.h): a client connection that reconnects by itself.
 *
 * A session lives on its poller lcore: the endpoints it connects report to
 * it (its own rdp_ep_ops), its timers run in the poller's hook, and other
 * threads reach it through the poller's inbox. Its moves are one table,
 * session_next[][], and session_input() is the only place that changes its
 * state (docs/architecture.md, "Sessions: reconnecting clients").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_pause.h>

#include "ep_ctl.h"
#include "ep_private.h"

#define SESS_DELAY_MS 100u
#define SESS_DELAY_MAX_MS 5000u
#define SESS_JITTER_PCT 25u
#define SESS_NONE UINT64_MAX

/* What moves a session. */
enum sess_input {
	IN_START = 0,  /* its first attempt (rdp_session_open()) */
	IN_UP,         /* the attempt's endpoint is established */
	IN_DOWN,       /* its endpoint (connecting or established) ended, or could not start */
	IN_TIMER,      /* the wait before the next attempt is over */
	IN_LOST,       /* not connected for loss_tmo_ms */
	IN_CLOSE,      /* rdp_session_close() */
	IN_COUNT
};

#define S_NONE ((uint8_t)0xff)

/*
 * session_next[state][input]: the state a session moves to (S_NONE: the
 * input does not move it). IN_DOWN from CONNECTING or CONNECTED goes to
 * BACKOFF; session_input() turns it into GAVE_UP when the loss timeout
 * has passed by then.
 */
static const uint8_t session_next[][IN_COUNT] = {
	[RDP_SESSION_CONNECTING] = {
		[IN_START] = S_NONE, [IN_UP] = RDP_SESSION_CONNECTED,
		[IN_DOWN] = RDP_SESSION_BACKOFF, [IN_TIMER] = S_NONE,
		[IN_LOST] = S_NONE, [IN_CLOSE] = RDP_SESSION_CLOSING,
	},
	[RDP_SESSION_CONNECTED] = {
		[IN_START] = S_NONE, [IN_UP] = S_NONE, [IN_DOWN] = RDP_SESSION_BACKOFF,
		[IN_TIMER] = S_NONE, [IN_LOST] = S_NONE, [IN_CLOSE] = RDP_SESSION_CLOSING,
	},
	[RDP_SESSION_BACKOFF] = {
		[IN_START] = RDP_SESSION_CONNECTING, [IN_UP] = S_NONE, [IN_DOWN] = S_NONE,
		[IN_TIMER] = RDP_SESSION_CONNECTING, [IN_LOST] = RDP_SESSION_GAVE_UP,
		[IN_CLOSE] = RDP_SESSION_CLOSING,
	},
	[RDP_SESSION_GAVE_UP] = {
		[IN_START] = S_NONE, [IN_UP] = S_NONE, [IN_DOWN] = S_NONE, [IN_TIMER] = S_NONE,
		[IN_LOST] = S_NONE, [IN_CLOSE] = RDP_SESSION_CLOSING,
	},
	[RDP_SESSION_CLOSING] = {
		[IN_START] = S_NONE, [IN_UP] = S_NONE, [IN_DOWN] = S_NONE, [IN_TIMER] = S_NONE,
		[IN_LOST] = S_NONE, [IN_CLOSE] = S_NONE,
	},
};

struct rdp_session {
	TAILQ_ENTRY(rdp_session) lc_next;  /* lc->sessions (the poller) */
	TAILQ_ENTRY(rdp_session) all_next; /* rdp_rt.sessions (rdp_rt.lock) */
	struct ep_lcore *lc;
	struct rdp_session_params prm;
	char hostport[(RDP_CFG_VALUE_MAX + 1)];
	char device[EP_DEV_NAME_MAX];   /* prm.device points here, or is NULL */
	uint8_t state;             /* enum rdp_session_state (atomic: any thread reads it) */
	bool close_pushed;         /* rdp_session_close() was called (rdp_rt.lock) */
	bool ever_connected;
	struct rdp_ep *ep;         /* the attempt's or the established endpoint, or NULL */
	struct rdp_ep *prev;       /* the last one that ended: allocations until the next */
	uint32_t eps_open;         /* endpoints connected and not yet CLOSED */
	uint32_t attempt;          /* attempts since the last connection (or the open) */
	int last_err;
	uint64_t next_attempt;     /* TSC (BACKOFF) */
	uint64_t lost_at;          /* TSC the connection was lost (or the open); 0: connected */
	uint64_t rng;
	/* messages waiting for an endpoint, oldest first */
	struct rdp_msg **wq;
	uint64_t *wq_since;        /* TSC each was offered */
	uint32_t wq_head, wq_n;
};

static uint64_t
ms_to_tsc(uint32_t ms)
{
	return (uint64_t)ms * (rte_get_tsc_hz() / 1000);
}

const char *
rdp_session_state_str(unsigned int state)
{
	static const char *const names[] = {
		[RDP_SESSION_CONNECTING] = "CONNECTING", [RDP_SESSION_CONNECTED] = "CONNECTED",
		[RDP_SESSION_BACKOFF] = "BACKOFF", [RDP_SESSION_GAVE_UP] = "GAVE_UP",
		[RDP_SESSION_CLOSING] = "CLOSING",
	};

	return state < RTE_DIM(names) ? names[state] : "?";
}

const char *
rdp_session_event_str(unsigned int kind)
{
	static const char *const names[] = {
		[RDP_SESSION_EV_ATTEMPT] = "ATTEMPT", [RDP_SESSION_EV_CONNECTED] = "CONNECTED",
		[RDP_SESSION_EV_ATTEMPT_FAILED] = "ATTEMPT_FAILED",
		[RDP_SESSION_EV_DISCONNECTED] = "DISCONNECTED",
		[RDP_SESSION_EV_GAVE_UP] = "GAVE_UP", [RDP_SESSION_EV_CLOSED] = "CLOSED",
	};

	return kind < RTE_DIM(names) ? names[kind] : "?";
}

enum rdp_session_state
rdp_session_state(const struct rdp_session *s)
{
	return (enum rdp_session_state)__atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
}

struct rdp_ep *
rdp_session_ep(const struct rdp_session *s)
{
	return s->state == RDP_SESSION_CONNECTED ? s->ep : NULL;
}

uint32_t
rdp_session_waiting(const struct rdp_session *s)
{
	return s->wq_n;
}

static void
emit(struct rdp_session *s, enum rdp_session_event_kind kind, int err, uint32_t delay_ms,
     struct rdp_ep *ep)
{
	struct rdp_session_event ev = {
		.kind = kind, .attempt = s->attempt, .err = err, .delay_ms = delay_ms, .ep = ep,
	};

	s->prm.on_event(s, &ev, s->prm.arg);
}

/* The session's earliest timer, for the lcore's hook. */
static uint64_t
session_due(const struct rdp_session *s)
{
	const struct rdp_reconnect_policy *p = &s->prm.policy;
	uint64_t due = SESS_NONE;

	if (s->state == RDP_SESSION_BACKOFF)
		due = s->next_attempt;
	if (s->lost_at != 0 && p->loss_tmo_ms != 0 && s->state == RDP_SESSION_BACKOFF)
		due = RTE_MIN(due, s->lost_at + ms_to_tsc(p->loss_tmo_ms));
	if (s->wq_n > 0 && p->queue_tmo_ms != 0)
		due = RTE_MIN(due, s->wq_since[s->wq_head] + ms_to_tsc(p->queue_tmo_ms));
	return due;
}

static void
arm(struct rdp_session *s)
{
	s->lc->session_due = RTE_MIN(s->lc->session_due, session_due(s));
}

/* Hand messages the session fails back to the application. */
static void
fail_msgs(struct rdp_session *s, struct rdp_msg **msgs, uint16_t n, int err)
{
	uint16_t i;

	for (i = 0; i < n; i++) {
		msgs[i]->event = RDP_EV_SEND_FAILED;
		msgs[i]->status = err;
	}
	if (s->prm.ops->on_send != NULL)
		s->prm.ops->on_send(NULL, msgs, n, s->prm.arg);
	else
		rdp_msg_free_bulk(msgs, n);
}

static struct rdp_msg *
wq_pop(struct rdp_session *s)
{
	struct rdp_msg *m = s->wq[s->wq_head];

	s->wq_head = (s->wq_head + 1) % s->prm.policy.queue_max;
	s->wq_n--;
	return m;
}

static void
wq_fail_all(struct rdp_session *s, int err)
{
	while (s->wq_n > 0) {
		struct rdp_msg *m = wq_pop(s);

		fail_msgs(s, &m, 1, err);
	}
}

/* Send on the established endpoint: messages of an earlier one are taken over. */
static uint16_t
send_on_ep(struct rdp_session *s, struct rdp_msg **msgs, uint16_t n)
{
	uint16_t i;

	for (i = 0; i < n; i++)
		msgs[i]->ep = s->ep;
	return rdp_ep_send_burst(s->ep, msgs, n);
}

/* Connected again: what waited goes out in order; what the endpoint refuses fails. */
static void
wq_flush(struct rdp_session *s)
{
	while (s->wq_n > 0 && s->state == RDP_SESSION_CONNECTED) {
		struct rdp_msg *m = s->wq[s->wq_head];

		if (send_on_ep(s, &m, 1) == 1) {
			wq_pop(s);
		} else if (rte_errno == EINVAL) {
			wq_pop(s);
			fail_msgs(s, &m, 1, -EMSGSIZE);
		} else {
			break; /* inbox full (not on this lcore) or no longer established */
		}
	}
}

static void close_ep(struct rdp_ep **epp);

/* The wait before attempt s->attempt + 1: doubled per attempt, capped, jittered. */
static uint32_t
draw_delay(struct rdp_session *s)
{
	const struct rdp_reconnect_policy *p = &s->prm.policy;
	uint32_t shift = RTE_MIN(s->attempt, 20u);
	uint64_t w = RTE_MIN((uint64_t)p->delay_ms << shift, (uint64_t)p->delay_max_ms);
	uint64_t spread = w * p->jitter_pct / 100;
	uint64_t x = s->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	s->rng = x;
	return (uint32_t)(w - (spread > 0 ? (x * 0x2545f4914f6cdd1dull) % (spread + 1) : 0));
}

static const struct rdp_ep_ops sess_ep_ops;

/* Connect the next endpoint; false when it cannot even start. */
static bool
start_attempt(struct rdp_session *s)
{
	struct rdp_ep_params eprm = {
		.ops = &sess_ep_ops, .arg = s, .lcore = (int)s->lc->lcore_id,
		.notify_send_ok = s->prm.notify_send_ok, .device = s->prm.device,
	};

	if (s->attempt > 0 || s->ever_connected)
		RDP_STAT_ADD(s->lc->counters.reconnect_attempts, 1);
	s->attempt++;
	s->ep = rdp_connect(s->hostport, &eprm);
	if (s->ep == NULL) {
		s->last_err = -rte_errno;
		return false;
	}
	s->eps_open++;
	emit(s, RDP_SESSION_EV_ATTEMPT, 0, 0, s->ep);
	return true;
}

static void
set_state(struct rdp_session *s, uint8_t st)
{
	__atomic_store_n(&s->state, st, __ATOMIC_RELEASE);
}

static void session_input(struct rdp_session *s, enum sess_input in, struct rdp_ep *ep, int err);

/* Past the loss timeout? */
static bool
lost_too_long(const struct rdp_session *s, uint64_t now)
{
	uint32_t tmo = s->prm.policy.loss_tmo_ms;

	return tmo != 0 && s->lost_at != 0 && now - s->lost_at >= ms_to_tsc(tmo);
}

static void
enter_backoff(struct rdp_session *s, bool was_connected, struct rdp_ep *ended, int err)
{
	uint64_t now = rte_get_tsc_cycles();
	uint32_t delay;

	bool give_up;

	s->last_err = err;
	if (s->lost_at == 0)
		s->lost_at = now;
	give_up = lost_too_long(s, now);
	delay = give_up ? 0 : draw_delay(s);
	s->next_attempt = now + ms_to_tsc(delay);
	set_state(s, RDP_SESSION_BACKOFF);
	emit(s, was_connected ? RDP_SESSION_EV_DISCONNECTED : RDP_SESSION_EV_ATTEMPT_FAILED, err,
	     delay, ended);
	if (give_up)
		session_input(s, IN_LOST, NULL, err);
	else
		arm(s);
}

static void
finish(struct rdp_session *s)
{
	struct ep_lcore *lc = s->lc;

	emit(s, RDP_SESSION_EV_CLOSED, 0, 0, NULL);
	TAILQ_REMOVE(&lc->sessions, s, lc_next);
	lc->nb_sessions--;
	pthread_mutex_lock(&rdp_rt.lock);
	TAILQ_REMOVE(&rdp_rt.sessions, s, all_next);
	rdp_rt.nb_sessions--;
	pthread_mutex_unlock(&rdp_rt.lock);
	free(s->wq);
	free(s->wq_since);
	free(s);
}

/*
 * The one place a session moves. @p ep is the endpoint an IN_UP or IN_DOWN
 * is about, @p err why it went down.
 */
static void
session_input(struct rdp_session *s, enum sess_input in, struct rdp_ep *ep, int err)
{
	uint8_t from = s->state, to = session_next[from][in];
	bool was_connected = from == RDP_SESSION_CONNECTED;

	if (to == S_NONE)
		return;
	switch (in) {
	case IN_START:
	case IN_TIMER:
		set_state(s, to);
		if (!start_attempt(s))
			session_input(s, IN_DOWN, NULL, s->last_err);
		return;
	case IN_UP:
		set_state(s, to);
		if (s->ever_connected && s->lost_at != 0)
			RDP_STAT_ADD(s->lc->counters.reconnects, 1);
		s->ever_connected = true;
		s->lost_at = 0;
		close_ep(&s->prev);
		emit(s, RDP_SESSION_EV_CONNECTED, 0, 0, s->ep);
		s->attempt = 0;
		wq_flush(s);
		return;
	case IN_DOWN:
		/* keep the endpoint for allocations until the next one is up */
		if (ep != NULL) {
			close_ep(&s->prev);
			s->prev = ep;
		}
		s->ep = NULL;
		enter_backoff(s, was_connected, ep, err);
		return;
	case IN_LOST:
		set_state(s, to);
		RDP_STAT_ADD(s->lc->counters.sessions_gave_up, 1);
		close_ep(&s->prev);
		wq_fail_all(s, -ENOTCONN);
		emit(s, RDP_SESSION_EV_GAVE_UP, s->last_err, 0, NULL);
		return;
	case IN_CLOSE:
		set_state(s, to);
		wq_fail_all(s, -ESHUTDOWN);
		close_ep(&s->ep);
		close_ep(&s->prev);
		if (s->eps_open == 0)
			finish(s);
		return;
	case IN_COUNT:
		break;
	}
}

/* Close *@p epp, if any, and forget it (its CLOSED event still comes). */
static void
close_ep(struct rdp_ep **epp)
{
	if (*epp != NULL) {
		rdp_ep_close(*epp);
		*epp = NULL;
	}
}

/* ---------------------------------------------------------------------- */
/* The endpoints' callbacks                                               */
/* ---------------------------------------------------------------------- */

static uint16_t
sess_on_recv(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	struct rdp_session *s = arg;

	return s->prm.ops->on_recv(ep, msgs, n, s->prm.arg);
}

static void
sess_on_send(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	struct rdp_session *s = arg;

	if (s->prm.ops->on_send != NULL)
		s->prm.ops->on_send(ep, msgs, n, s->prm.arg);
	else
		rdp_msg_free_bulk(msgs, n);
}

static void
sess_on_state(struct rdp_ep *ep, enum rdp_ep_state state, int err, void *arg)
{
	struct rdp_session *s = arg;

	switch (state) {
	case RDP_EP_ESTABLISHED:
		if (ep == s->ep)
			session_input(s, IN_UP, ep, 0);
		break;
	case RDP_EP_FAILED:
	case RDP_EP_PEER_CLOSED:
		if (ep == s->ep)
			session_input(s, IN_DOWN, ep, state == RDP_EP_PEER_CLOSED ? -ESHUTDOWN :
				      err < 0 ? err : -ECONNRESET);
		break;
	case RDP_EP_CLOSED:
		s->eps_open--;
		if (s->state == RDP_SESSION_CLOSING && s->eps_open == 0)
			finish(s);
		break;
	default:
		break;
	}
}

static const struct rdp_ep_ops sess_ep_ops = {
	.on_recv = sess_on_recv,
	.on_send = sess_on_send,
	.on_state = sess_on_state,
};

/* ---------------------------------------------------------------------- */
/* Timers: the poller's hook                                              */
/* ---------------------------------------------------------------------- */

static unsigned int
session_timers(struct rdp_session *s, uint64_t now)
{
	const struct rdp_reconnect_policy *p = &s->prm.policy;
	unsigned int work = 0;

	while (s->wq_n > 0 && p->queue_tmo_ms != 0 &&
	       now - s->wq_since[s->wq_head] >= ms_to_tsc(p->queue_tmo_ms)) {
		struct rdp_msg *m = wq_pop(s);

		fail_msgs(s, &m, 1, -ETIMEDOUT);
		work++;
	}
	if (s->state == RDP_SESSION_BACKOFF) {
		if (lost_too_long(s, now)) {
			session_input(s, IN_LOST, NULL, s->last_err);
			work++;
		} else if (now >= s->next_attempt) {
			session_input(s, IN_TIMER, NULL, 0);
			work++;
		}
	}
	return work;
}

unsigned int
ep_lcore_hook(void *arg)
{
	struct ep_lcore *lc = arg;
	rdp_poll_hook_fn app = __atomic_load_n(&lc->app_hook, __ATOMIC_ACQUIRE);
	unsigned int work = 0;

	if (unlikely(lc->nb_sessions > 0)) {
		uint64_t now = rte_get_tsc_cycles();

		if (now >= lc->session_due) {
			struct rdp_session *s, *next;

			lc->session_due = SESS_NONE;
			/* a session may go while its timers run (not through them today) */
			for (s = TAILQ_FIRST(&lc->sessions); s != NULL; s = next) {
				next = TAILQ_NEXT(s, lc_next);
				work += session_timers(s, now);
				arm(s);
			}
		}
	}
	/* atomic: the arenas read it on any thread (their line's lapse) */
	__atomic_store_n(&lc->hook_polls, lc->hook_polls + 1, __ATOMIC_RELAXED);
	if (unlikely((lc->hook_polls & (EP_SRQ_LOOK_POLLS - 1)) == 0))
		work += ep_srq_age(lc);
	if (app != NULL)
		work += app(lc->app_hook_arg);
	return work;
}

/* ---------------------------------------------------------------------- */
/* The application's calls                                                */
/* ---------------------------------------------------------------------- */

static bool
on_own_lcore(const struct rdp_session *s)
{
	return rdp_poller_is_self(s->lc->poller);
}

static void
start_here(struct rdp_ep *unused, void *arg)
{
	struct rdp_session *s = arg;

	RTE_SET_USED(unused);
	TAILQ_INSERT_TAIL(&s->lc->sessions, s, lc_next);
	s->lc->nb_sessions++;
	s->lost_at = rte_get_tsc_cycles();
	session_input(s, IN_START, NULL, 0);
}

static int
check_session_params(const char *hostport, const struct rdp_session_params *prm)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int ret;

	if (!rdp_rt.up)
		return rdp_err_set(ENODEV, "rdp_session_open before rdp_init");
	if (prm == NULL || prm->ops == NULL || prm->ops->on_recv == NULL || prm->on_event == NULL)
		return rdp_err_set(EINVAL, "a session needs ops->on_recv and on_event");
	if (prm->ops->on_state != NULL)
		return rdp_err_set(EINVAL, "a session reports states through on_event: "
				   "ops->on_state must be NULL");
	if (prm->lcore < 0 || prm->lcore >= RTE_MAX_LCORE || rdp_rt.lcores[prm->lcore] == NULL)
		return rdp_err_set(EINVAL, "session lcore %d does not poll (not in the "
				   "configuration)", prm->lcore);
	if (prm->policy.jitter_pct > 100)
		return rdp_err_set(EINVAL, "reconnect jitter_pct %u is above 100",
				   prm->policy.jitter_pct);
	if (strlen(hostport) >= (RDP_CFG_VALUE_MAX + 1))
		return rdp_err_set(EINVAL, "session address \"%.32s...\" is too long", hostport);
	ret = rt_device_check(prm->device);
	if (ret < 0)
		return ret;
	return ctl_resolve(hostport, false, &ss, &sl);
}

struct rdp_session *
rdp_session_open(const char *hostport, const struct rdp_session_params *prm)
{
	struct rdp_reconnect_policy *p;
	struct rdp_session *s;
	int ret;

	if (rdp_rt.up && hostport == NULL)
		hostport = rdp_rt.lcores[rdp_rt.order[0]]->conf.connect;
	ret = check_session_params(hostport != NULL ? hostport : "", prm);
	if (ret < 0) {
		rte_errno = -ret;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		goto nomem;
	s->prm = *prm;
	p = &s->prm.policy;
	if (p->delay_ms == 0)
		p->delay_ms = SESS_DELAY_MS;
	if (p->delay_max_ms == 0)
		p->delay_max_ms = RTE_MAX(SESS_DELAY_MAX_MS, p->delay_ms);
	p->delay_max_ms = RTE_MAX(p->delay_max_ms, p->delay_ms);
	if (p->jitter_pct == 0)
		p->jitter_pct = SESS_JITTER_PCT;
	if (p->queue_max > 0) {
		s->wq = calloc(p->queue_max, sizeof(*s->wq));
		s->wq_since = calloc(p->queue_max, sizeof(*s->wq_since));
		if (s->wq == NULL || s->wq_since == NULL)
			goto nomem;
	}
	snprintf(s->hostport, sizeof(s->hostport), "%s", hostport);
	if (prm->device != NULL && prm->device[0] != '\0') {
		snprintf(s->device, sizeof(s->device), "%s", prm->device);
		s->prm.device = s->device;
	} else {
		s->prm.device = NULL;
	}
	s->lc = rdp_rt.lcores[prm->lcore];
	s->rng = (rte_get_tsc_cycles() ^ (uintptr_t)s) | 1;
	set_state(s, RDP_SESSION_BACKOFF);
	pthread_mutex_lock(&rdp_rt.lock);
	TAILQ_INSERT_TAIL(&rdp_rt.sessions, s, all_next);
	rdp_rt.nb_sessions++;
	pthread_mutex_unlock(&rdp_rt.lock);
	if (on_own_lcore(s)) {
		start_here(NULL, s);
		return s;
	}
	while ((ret = ep_lcore_call(s->lc, start_here, s)) == -ENOBUFS)
		rte_pause();
	if (ret == 0)
		return s;
	pthread_mutex_lock(&rdp_rt.lock);
	TAILQ_REMOVE(&rdp_rt.sessions, s, all_next);
	rdp_rt.nb_sessions--;
	pthread_mutex_unlock(&rdp_rt.lock);
nomem:
	if (s != NULL) {
		free(s->wq);
		free(s->wq_since);
	}
	free(s);
	rdp_err_set(ENOMEM, "out of memory for a session");
	rte_errno = ENOMEM;
	return NULL;
}

static void
close_here(struct rdp_ep *unused, void *arg)
{
	RTE_SET_USED(unused);
	session_input(arg, IN_CLOSE, NULL, 0);
}

/* Push the close once; false when it was pushed already. */
static bool
take_close(struct rdp_session *s)
{
	bool first;

	pthread_mutex_lock(&rdp_rt.lock);
	first = !s->close_pushed;
	s->close_pushed = true;
	pthread_mutex_unlock(&rdp_rt.lock);
	return first;
}

int
rdp_session_close(struct rdp_session *s)
{
	int ret;

	if (!take_close(s))
		return 0;
	/*
	 * Through the inbox even on the session's lcore: called from one of
	 * its callbacks, the close must not free the session under the code
	 * that runs the callback.
	 */
	ret = ep_lcore_call(s->lc, close_here, s);
	if (ret < 0) {
		pthread_mutex_lock(&rdp_rt.lock);
		s->close_pushed = false;
		pthread_mutex_unlock(&rdp_rt.lock);
	}
	return ret;
}

int
ep_sessions_close_all(unsigned int wait_ms)
{
	uint64_t deadline = rte_get_tsc_cycles() + ms_to_tsc(wait_ms);
	struct rdp_session *s;
	uint32_t left;

	for (;;) {
		pthread_mutex_lock(&rdp_rt.lock);
		TAILQ_FOREACH(s, &rdp_rt.sessions, all_next)
			if (!s->close_pushed && ep_lcore_call(s->lc, close_here, s) == 0)
				s->close_pushed = true;
		left = rdp_rt.nb_sessions;
		pthread_mutex_unlock(&rdp_rt.lock);
		if (left == 0)
			return 0;
		if (rte_get_tsc_cycles() > deadline)
			return -EBUSY;
		rte_delay_us_sleep(1000);
	}
}

struct sess_call {
	rdp_session_call_fn fn;
	void *arg;
	struct rdp_session *s;
};

static void
call_here(struct rdp_ep *unused, void *arg)
{
	struct sess_call c = *(struct sess_call *)arg;

	RTE_SET_USED(unused);
	free(arg);
	c.fn(c.s, c.arg);
}

int
rdp_session_call(struct rdp_session *s, rdp_session_call_fn fn, void *arg)
{
	struct sess_call *c;
	int ret;

	if (on_own_lcore(s)) {
		fn(s, arg);
		return 0;
	}
	c = malloc(sizeof(*c));
	if (c == NULL)
		return -ENOMEM;
	*c = (struct sess_call){ .fn = fn, .arg = arg, .s = s };
	ret = ep_lcore_call(s->lc, call_here, c);
	if (ret < 0)
		free(c);
	return ret;
}

struct rdp_msg *
rdp_session_msg_alloc(struct rdp_session *s, uint32_t len)
{
	struct rdp_ep *ep = s->ep != NULL ? s->ep : s->prev;

	if (ep == NULL || s->state >= RDP_SESSION_GAVE_UP) {
		rte_errno = ENOTCONN;
		return NULL;
	}
	return rdp_msg_alloc(ep, len);
}

uint16_t
rdp_session_send_burst(struct rdp_session *s, struct rdp_msg **msgs, uint16_t n)
{
	const struct rdp_reconnect_policy *p = &s->prm.policy;
	uint64_t now;
	uint16_t i;

	if (s->state == RDP_SESSION_CONNECTED && s->wq_n == 0)
		return send_on_ep(s, msgs, n);
	if (s->state >= RDP_SESSION_GAVE_UP || p->queue_max == 0) {
		rte_errno = ENOTCONN;
		return 0;
	}
	/* behind the ones waiting already, whatever the state */
	now = rte_get_tsc_cycles();
	for (i = 0; i < n && s->wq_n < p->queue_max; i++) {
		uint32_t at = (s->wq_head + s->wq_n) % p->queue_max;

		s->wq[at] = msgs[i];
		s->wq_since[at] = now;
		s->wq_n++;
	}
	arm(s);
	if (s->state == RDP_SESSION_CONNECTED)
		wq_flush(s);
	if (i < n)
		rte_errno = ENOBUFS;
	return i;
}
