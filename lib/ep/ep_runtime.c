/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The runtime: device, pollers and their pools, the endpoint registry,
 * endpoint lifetime, and telemetry. Everything here is slow path.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_string_fns.h>
#include <rte_telemetry.h>

#include <sodium.h>

#include "rdp_clock.h"
#include "ep_ctl.h"
#include "ep_private.h"

RTE_LOG_REGISTER(rdp_ep_logtype, rdp.ep, NOTICE);

struct ep_runtime rdp_rt = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

/* ---------------------------------------------------------------------- */
/* Pollers                                                                */
/* ---------------------------------------------------------------------- */

struct ep_lcore *
rt_pick_lcore(int lcore)
{
	struct ep_lcore *lc;

	if (lcore >= 0 && lcore < RTE_MAX_LCORE && rdp_rt.lcores[lcore] != NULL)
		return rdp_rt.lcores[lcore];
	pthread_mutex_lock(&rdp_rt.lock);
	lc = rdp_rt.lcores[rdp_rt.order[rdp_rt.rr++ % rdp_rt.nb_lcores]];
	pthread_mutex_unlock(&rdp_rt.lock);
	return lc;
}

_Static_assert(sizeof(((struct rdp_dev_attr *)0)->name) == EP_DEV_NAME_MAX,
	       "a device name fits EP_DEV_NAME_MAX");

int
rt_device_check(const char *name)
{
	if (name == NULL || name[0] == '\0')
		return 0;
	return rt_device_by_name(name) < 0 ? -ENODEV : 0;
}

/* The device named @p name, or -ENODEV naming the devices there are. */
int
rt_device_by_name(const char *name)
{
	char names[256];
	unsigned int i;
	size_t off = 0;

	for (i = 0; i < rdp_rt.nb_devs; i++)
		if (strcmp(rdp_rt.devs[i].attr.name, name) == 0)
			return (int)i;
	names[0] = '\0';
	for (i = 0; i < rdp_rt.nb_devs && off < sizeof(names); i++)
		off += snprintf(names + off, sizeof(names) - off, "%s%s", i ? ", " : "",
				rdp_rt.devs[i].attr.name);
	return rdp_err_set(ENODEV, "no device named '%s' in this process (devices: %s)", name,
			   names);
}

int
rt_pick_device(const struct ep_lcore *lc, const char *name, const struct sockaddr *local)
{
	unsigned int i;

	if (name != NULL && name[0] != '\0')
		return rt_device_by_name(name);
	if (local != NULL && rdp_rt.nb_devs > 1)
		for (i = 0; i < rdp_rt.nb_devs; i++)
			if (rdp_dev_owns_addr(rdp_rt.devs[i].dev, local) == 1)
				return (int)i;
	return (int)lc->dflt;
}

/*
 * The local address the kernel's route to @p hostport leaves from (a UDP
 * socket connected there sends nothing), 0 or -errno.
 */
static int
route_local(const char *hostport, struct sockaddr_storage *local)
{
	struct sockaddr_storage ss;
	socklen_t sl, ll = sizeof(*local);
	int fd, ret;

	ret = ctl_resolve(hostport, false, &ss, &sl);
	if (ret < 0)
		return ret;
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	ret = connect(fd, (struct sockaddr *)&ss, sl) == 0 &&
	      getsockname(fd, (struct sockaddr *)local, &ll) == 0 ? 0 : -errno;
	close(fd);
	return ret;
}

/* The device of an endpoint @p lc connects to @p hostport with (rdp_connect()). */
static int
connect_device(const struct ep_lcore *lc, const struct rdp_ep_params *prm,
	       const char *hostport)
{
	struct sockaddr_storage local;

	if ((prm->device == NULL || prm->device[0] == '\0') && rdp_rt.nb_devs > 1 &&
	    route_local(hostport, &local) == 0)
		return rt_pick_device(lc, NULL, (struct sockaddr *)&local);
	return rt_pick_device(lc, prm->device, NULL);
}

/* ---------------------------------------------------------------------- */
/* Application API                                                        */
/* ---------------------------------------------------------------------- */

static int
check_params(const struct rdp_ep_params *prm)
{
	if (prm == NULL || (prm->ops == NULL) == (prm->events == NULL))
		return rdp_err_set(EINVAL, "endpoint parameters need exactly one of ops "
				   "(run-to-completion) or events (pipeline)");
	if (prm->ops != NULL && prm->ops->on_recv == NULL)
		return rdp_err_set(EINVAL, "run-to-completion endpoints need ops->on_recv");
	if (prm->lcore >= 0 && (prm->lcore >= RTE_MAX_LCORE || rdp_rt.lcores[prm->lcore] == NULL))
		return rdp_err_set(EINVAL, "lcore %d does not poll (not in the configuration)",
				   prm->lcore);
	return rt_device_check(prm->device);
}

int
rdp_listen(const char *hostport, const struct rdp_ep_params *prm)
{
	int ret;

	if (!rdp_rt.up)
		return rdp_err_set(ENODEV, "rdp_listen before rdp_init");
	ret = check_params(prm);
	if (ret < 0)
		return ret;
	if (hostport == NULL)
		hostport = rdp_rt.lcores[rdp_rt.order[0]]->conf.listen;
	return ctl_listen(hostport, prm);
}

int
rdp_listen_close(int port)
{
	unsigned int i;

	if (!rdp_rt.up)
		return rdp_err_set(ENODEV, "rdp_listen_close before rdp_init");
	if (port <= 0 || port > 65535)
		return rdp_err_set(EINVAL, "rdp_listen_close: port %d is not one rdp_listen() "
				   "returns", port);
	/* the control thread may be waiting for room in this poller's inbox */
	for (i = 0; i < rdp_rt.nb_lcores; i++)
		if (rdp_poller_is_self(rdp_rt.lcores[rdp_rt.order[i]]->poller))
			return rdp_err_set(EDEADLK, "rdp_listen_close on poller lcore %u: it "
					   "waits for the control thread", rte_lcore_id());
	return ctl_unlisten(port);
}

struct rdp_ep *
rdp_connect(const char *hostport, const struct rdp_ep_params *prm)
{
	struct ep_lcore *lc;
	struct rdp_ep *ep;
	int ret, dev;

	if (!rdp_rt.up) {
		rdp_err_set(ENODEV, "rdp_connect before rdp_init");
		return NULL;
	}
	if (check_params(prm) < 0)
		return NULL;
	if (hostport == NULL)
		hostport = rdp_rt.lcores[rdp_rt.order[0]]->conf.connect;
	lc = rt_pick_lcore(prm->lcore);
	dev = connect_device(lc, prm, hostport);
	if (dev < 0)
		return NULL;
	ep = ep_new(lc, (unsigned int)dev, prm, true);
	if (ep == NULL)
		return NULL;
	ret = ctl_connect(ep, hostport);
	if (ret < 0) {
		pthread_mutex_lock(&rdp_rt.lock);
		TAILQ_REMOVE(&rdp_rt.all, ep, all_next);
		pthread_mutex_unlock(&rdp_rt.lock);
		free(ep);
		rte_errno = -ret;
		return NULL;
	}
	return ep;
}

int
rdp_ep_wait_established(struct rdp_ep *ep, unsigned int timeout_ms)
{
	uint64_t deadline = rdp_clock_ns() + (uint64_t)timeout_ms * 1000000u;
	enum rdp_ep_state s;

	while ((s = ep_get_state(ep)) == RDP_EP_CONNECTING) {
		if (rdp_clock_ns() > deadline)
			return -ETIMEDOUT;
		usleep(200);
	}
	if (s == RDP_EP_ESTABLISHED)
		return 0;
	return ep->err != 0 ? ep->err : -ECONNABORTED;
}

int
rdp_ep_close(struct rdp_ep *ep)
{
	/* once: rdp_fini() may race with the application to close it */
	if (!__atomic_exchange_n(&ep->app_closed, true, __ATOMIC_ACQ_REL))
		ctl_close(ep);
	return 0;
}

enum rdp_ep_state
rdp_ep_state(const struct rdp_ep *ep)
{
	return ep_get_state(ep);
}

int
rdp_ep_error(const struct rdp_ep *ep)
{
	return ep->err;
}

uint32_t
rdp_ep_id(const struct rdp_ep *ep)
{
	return ep->id;
}

const char *
rdp_ep_peer(const struct rdp_ep *ep)
{
	return ep->peer;
}

unsigned int
rdp_ep_lcore(const struct rdp_ep *ep)
{
	return ep->lc->lcore_id;
}

uint32_t
rdp_ep_max_msg_size(const struct rdp_ep *ep)
{
	return ep_send_limit(ep);
}

void
rdp_ep_set_ctx(struct rdp_ep *ep, void *ctx)
{
	ep->ctx = ctx;
}

void *
rdp_ep_get_ctx(const struct rdp_ep *ep)
{
	return ep->ctx;
}

/*
 * The credit state is plain data of lib/credit (pure code, shared with the
 * model), written by the owning poller only. Read from another thread it
 * is the racy snapshot rdp_ep_stats_get() promises: aligned words, each
 * whole, not consistent with one another. Not instrumented by
 * ThreadSanitizer for that reason; the counters above are atomics.
 */
__attribute__((no_sanitize("thread")))
static void
credit_snapshot(const struct rdp_ep *ep, struct rdp_ep_stats *s)
{
	const struct rdp_credit *c = &ep->credit;

	/* rdp_credit_sq_inflight(), spelt out: an inline callee would be instrumented */
	s->sq_inflight = (uint32_t)(c->sq_pi - c->sq_ci);
	s->remote_credits = c->rc;
	s->owed = c->owed;
	s->recv_posted = ep->recv_posted;
	s->acks = c->stats.acks_posted;
	s->reclaims = c->stats.reclaims_posted;
	s->sq_stalls = c->stats.sq_stalls;
	s->remote_stalls = c->stats.remote_stalls;
}

void
rdp_ep_stats_get(const struct rdp_ep *ep, struct rdp_ep_stats *s)
{
	memset(s, 0, sizeof(*s));
	/* the counters up to sq_inflight; the credit state after them */
	rdp_stats_read(s, &ep->stats, offsetof(struct rdp_ep_stats, sq_inflight));
	credit_snapshot(ep, s);
}

int
rdp_poll_hook_set(unsigned int lcore, rdp_poll_hook_fn fn, void *arg)
{
	struct ep_lcore *lc;
	int ret = 0;

	if (fn == NULL)
		return rdp_err_set(EINVAL, "rdp_poll_hook_set: no function");
	if (lcore >= RTE_MAX_LCORE || rdp_rt.lcores[lcore] == NULL)
		return rdp_err_set(ENODEV, "rdp_poll_hook_set: lcore %u is not a poller lcore",
				   lcore);
	lc = rdp_rt.lcores[lcore];
	pthread_mutex_lock(&rdp_rt.lock);
	if (lc->hook_set)
		ret = rdp_err_set(EBUSY, "rdp_poll_hook_set: lcore %u has a hook already", lcore);
	else
		lc->hook_set = true;
	pthread_mutex_unlock(&rdp_rt.lock);
	if (ret == 0) {
		/* ep_lcore_hook() runs it after the session timers */
		lc->app_hook_arg = arg;
		__atomic_store_n(&lc->app_hook, fn, __ATOMIC_RELEASE);
	}
	return ret;
}

unsigned int
rdp_endpoint_count(void)
{
	struct rdp_ep *ep;
	unsigned int n = 0;

	pthread_mutex_lock(&rdp_rt.lock);
	TAILQ_FOREACH(ep, &rdp_rt.all, all_next)
		n++;
	pthread_mutex_unlock(&rdp_rt.lock);
	return n;
}

const char *
rdp_ep_state_str(unsigned int state)
{
	static const char *const names[] = {
		[RDP_EP_CONNECTING] = "CONNECTING", [RDP_EP_ESTABLISHED] = "ESTABLISHED",
		[RDP_EP_DRAINING] = "DRAINING", [RDP_EP_FAILED] = "FAILED",
		[RDP_EP_CLOSED] = "CLOSED", [RDP_EP_PEER_CLOSED] = "PEER_CLOSED",
	};

	return state < RTE_DIM(names) ? names[state] : "UNKNOWN";
}

const char *
rdp_driver_info(void)
{
	return rdp_rt.driver_info;
}

unsigned int
rdp_device_count(void)
{
	return rdp_rt.nb_devs;
}

const char *
rdp_device_name(unsigned int idx)
{
	return idx < rdp_rt.nb_devs ? rdp_rt.devs[idx].attr.name : NULL;
}

const char *
rdp_ep_device(const struct rdp_ep *ep)
{
	return ep->ld->dv->attr.name;
}

/* ---------------------------------------------------------------------- */
/* Init and fini                                                          */
/* ---------------------------------------------------------------------- */

/* Open device @p i of the configuration's list and its PD. */
static int
open_device(const struct rdp_cfg *cfg, const struct rdp_cfg_device *c, unsigned int i)
{
	struct ep_dev *dv = &rdp_rt.devs[i];
	char spec[RDP_DEV_SPEC_MAX];
	int ret;

	dv->idx = i;
	if (c->spec[0] == '\0') {
		ret = rdp_dev_default_spec(spec, sizeof(spec), dv->why, sizeof(dv->why));
		if (ret < 0)
			return ret;
	} else {
		rte_strscpy(spec, c->spec, sizeof(spec));
		snprintf(dv->why, sizeof(dv->why), c->key != NULL ? "configured by %s" :
			 "configured", c->key);
	}
	dv->dev = rdp_dev_open(spec);
	if (dv->dev == NULL) {
		ret = rte_errno;
		/*
		 * The device the keys name is not there (or lacks that port, that
		 * GID); without device keys, the driver key named the spec, and
		 * its driver refused it (an argument, or no device of its kind).
		 */
		if (c->spec[0] == '\0')
			return -ret;
		return rdp_cfg_key_error(cfg, c->key != NULL ? c->section : RDP_CFG_GLOBAL,
					 c->key != NULL ? c->key : "driver", ret, "%s",
					 rdp_err_msg());
	}
	ret = rdp_dev_query(dv->dev, &dv->attr);
	if (ret < 0)
		return ret;
	dv->pd = rdp_pd_alloc(dv->dev);
	if (dv->pd == NULL)
		return -rte_errno;
	rdp_rt.nb_devs = i + 1;
	return 0;
}

/* Open every device the configuration names; rdp_driver_info() says which. */
static int
open_devices(const struct rdp_cfg *cfg, uint8_t *lcore_dev)
{
	struct rdp_cfg_device devs[EP_MAX_DEVS];
	unsigned int i;
	size_t off = 0;
	int n, ret;

	n = rdp_cfg_devices(cfg, devs, EP_MAX_DEVS, lcore_dev);
	if (n < 0)
		return n;
	for (i = 0; i < (unsigned int)n; i++) {
		ret = open_device(cfg, &devs[i], i);
		if (ret < 0)
			return ret;
	}
	for (i = 0; i < rdp_rt.nb_devs && off < sizeof(rdp_rt.driver_info); i++)
		off += snprintf(rdp_rt.driver_info + off, sizeof(rdp_rt.driver_info) - off,
				"%s%s on %s (%s)", i ? "; " : "", rdp_rt.devs[i].attr.driver,
				rdp_rt.devs[i].attr.name, rdp_rt.devs[i].why);
	return 0;
}

/*
 * The rendezvous arenas of an lcore: one its peers READ messages from
 * when it serves READs, one it READs messages into when it issues them
 * (ep_rndv.c). Without READs, none: every message goes in chunks.
 */
static int
rndv_arenas_create(struct ep_lcore_dev *ld)
{
	const struct ep_lcore *lc = ld->lc;
	char name[32];

	if (ld->conn.max_dest_rd_atomic > 0) {
		ep_pool_name(name, sizeof(name), "rv_tx", lc->lcore_id, ld->idx);
		ld->rv_send = rdp_arena_create(name, ld->dv->pd, ep_rndv_arena_size(ld, true),
					       lc->socket, RDP_ACCESS_REMOTE_READ | lc->pages);
		if (ld->rv_send == NULL)
			return -rte_errno;
		rdp_arena_limit(ld->rv_send, ep_rndv_send_limit(ld));
		rdp_arena_turn_clock(ld->rv_send, &lc->hook_polls, EP_ARENA_LAPSE_POLLS);
	}
	if (ld->rd_init > 0) {
		ep_pool_name(name, sizeof(name), "rv_rx", lc->lcore_id, ld->idx);
		ld->rv_recv = rdp_arena_create(name, ld->dv->pd, ep_rndv_arena_size(ld, false),
					       lc->socket, RDP_ACCESS_LOCAL_WRITE | lc->pages);
		if (ld->rv_recv == NULL)
			return -rte_errno;
		rdp_arena_turn_clock(ld->rv_recv, &lc->hook_polls, EP_ARENA_LAPSE_POLLS);
	}
	return 0;
}

static void
rndv_arena_destroy(const struct ep_lcore *lc, struct rdp_arena *a)
{
	size_t leaked = rdp_arena_destroy(a);

	if (leaked > 0)
		EP_LOG(ERR, "lcore %u: %zu bytes of rendezvous buffers were not returned",
		       lc->lcore_id, leaked);
}

/*
 * The page flag of rdp_mr_alloc() that key `hugepages` of @p lcore_id
 * (RDP_CFG_GLOBAL: rdp_region_alloc()) asks for, or an error naming it.
 */
static int
rt_pages(const struct rdp_cfg *cfg, int lcore_id, unsigned int *pages)
{
	switch (rdp_cfg_lcore(cfg, lcore_id)->hugepages) {
	case RDP_CFG_HUGE_AUTO:
		*pages = rte_eal_has_hugepages() ? RDP_ALLOC_HUGE_TRY : 0;
		return 0;
	case RDP_CFG_HUGE_ON:
		*pages = RDP_ALLOC_HUGE_ONLY;
		if (!rte_eal_has_hugepages())
			return rdp_cfg_key_error(cfg, lcore_id, "hugepages", EINVAL, "EAL runs "
						 "without hugepages (--no-huge): give EAL hugepages, "
						 "or set auto or off");
		return 0;
	case RDP_CFG_HUGE_OFF:
		break;
	}
	*pages = 0;
	return 0;
}

/* An lcore's main loop: its poller, which owns the lcore's send pool. */
static int
lcore_main(void *arg)
{
	struct ep_lcore *lc = arg;

	unsigned int d;

	for (d = 0; d < rdp_rt.nb_devs; d++)
		if (rdp_pool_claim(lc->dev[d].send_pool) < 0)
			EP_LOG(WARNING, "lcore %u: %s", lc->lcore_id, rdp_err_msg());
	return rdp_poller_run(lc->poller);
}

/* What lcore @p lc holds for device @p d: limits, send pool, arenas, SRQ. */
static int
lcore_dev_start(struct ep_lcore *lc, unsigned int d)
{
	const struct rdp_cfg_lcore *c = &lc->conf;
	struct ep_lcore_dev *ld = &lc->dev[d];
	const struct rdp_dev_attr *a;
	char name[32];

	ld->lc = lc;
	ld->dv = &rdp_rt.devs[d];
	ld->idx = d;
	a = &ld->dv->attr;
	ld->conn.rnr_retry = c->rnr_retry;
	ld->conn.retry_cnt = c->retry_cnt;
	ld->conn.timeout = c->timeout;
	ld->conn.min_rnr_timer = c->min_rnr_timer;
	/* READs served (RTR) and issued (the hello; RTS takes what the peer serves) */
	ld->conn.max_dest_rd_atomic = (uint8_t)RTE_MIN(c->read_depth, a->max_qp_rd_atom);
	ld->rd_init = (uint8_t)RTE_MIN(c->read_depth, a->max_qp_init_rd_atom);
	ld->max_inline = RTE_MIN(c->max_inline, a->max_inline_data);
	ep_pool_name(name, sizeof(name), "tx", lc->lcore_id, d);
	ld->send_pool = rdp_pool_create(name, ld->dv->pd, c->send_bufs, c->buf_size, lc->socket,
					lc->pages);
	if (ld->send_pool == NULL)
		return -rte_errno;
	if (c->srq == RDP_CFG_ON) {
		int ret = ep_srq_create(ld);

		if (ret < 0)
			return ret;
	}
	return rndv_arenas_create(ld);
}

static int
lcore_start(const struct rdp_cfg *cfg, unsigned int id, unsigned int dflt)
{
	const struct rdp_cfg_lcore *c = rdp_cfg_lcore(cfg, (int)id);
	struct rdp_poller_params pp = { 0 };
	struct ep_lcore *lc;
	unsigned int d;
	uint32_t need;
	int ret;

	if (!rte_lcore_is_enabled(id) || id == rte_get_main_lcore())
		return rdp_err_set(EINVAL, "lcore %u is configured to poll but is %s", id,
				   id == rte_get_main_lcore() ? "the EAL main lcore" :
				   "not in the EAL core list (-l)");
	lc = calloc(1, sizeof(*lc));
	if (lc == NULL)
		return rdp_err_set(ENOMEM, "out of memory");
	rdp_rt.lcores[id] = lc;
	rdp_rt.order[rdp_rt.nb_lcores++] = id;
	lc->lcore_id = id;
	lc->conf = *c;
	lc->dflt = dflt;
	rdp_cfg_credit_params(c, &lc->credit);
	lc->socket = c->numa_node >= 0 ? c->numa_node : (int)rte_lcore_to_socket_id(id);
	lc->give_back_tsc = (uint64_t)c->srq_give_back_us * rte_get_tsc_hz() / 1000000;
	if (rt_pages(cfg, (int)id, &lc->pages) < 0)
		return -rte_errno;
	/* with an SRQ, its receives once for the poller (ep_srq_create() reserves them) */
	need = (uint32_t)ep_cq_most(lc);
	pp.lcore_id = id;
	/* one CQ per device: the device may not hold every endpoint's budget at
	 * once: start there and let admission refuse what does not fit */
	for (d = 0; d < rdp_rt.nb_devs; d++) {
		uint32_t max_cqe = rdp_rt.devs[d].attr.max_cqe;

		pp.cq[d].dev = rdp_rt.devs[d].dev;
		pp.cq[d].cq_size = c->cq_size != 0 ? c->cq_size : RTE_MIN(need, max_cqe);
		pp.cq[d].max_cq_size = RTE_MAX(pp.cq[d].cq_size, RTE_MIN(need, max_cqe));
	}
	pp.nb_cqs = rdp_rt.nb_devs;
	pp.poll_burst = c->poll_burst;
	pp.idle_sleep_us = c->idle_sleep_us;
	/* the endpoints, and each device's SRQ receives */
	pp.max_slots = c->max_endpoints + (c->srq == RDP_CFG_ON ? rdp_rt.nb_devs : 0);
	pp.inbox_size = c->ring_size;
	pp.socket = lc->socket;
	pp.ops = &ep_poll_ops;
	lc->poller = rdp_poller_create(&pp);
	if (lc->poller == NULL)
		return -rte_errno;
	TAILQ_INIT(&lc->sessions);
	lc->session_due = UINT64_MAX;
	rdp_poller_set_hook(lc->poller, ep_lcore_hook, lc);
	for (d = 0; d < rdp_rt.nb_devs; d++) {
		ret = lcore_dev_start(lc, d);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static void
teardown(void)
{
	unsigned int i, d;

	for (i = 0; i < rdp_rt.nb_lcores; i++) {
		struct ep_lcore *lc = rdp_rt.lcores[rdp_rt.order[i]];

		/* the loop has returned (rdp_fini() waited for the lcore): what it did
		 * happens before the SRQs, which its hook looks at, go */
		if (lc->poller != NULL && rdp_poller_running(lc->poller))
			EP_LOG(ERR, "lcore %u: torn down while its poller runs", lc->lcore_id);
		for (d = 0; d < EP_MAX_DEVS; d++)
			ep_srq_destroy(&lc->dev[d]);
		if (lc->poller != NULL && rdp_poller_destroy(lc->poller) < 0)
			EP_LOG(ERR, "%s", rdp_err_msg());
		for (d = 0; d < EP_MAX_DEVS; d++) {
			struct ep_lcore_dev *ld = &lc->dev[d];
			int missing;

			rndv_arena_destroy(lc, ld->rv_send);
			rndv_arena_destroy(lc, ld->rv_recv);
			missing = rdp_pool_destroy(ld->send_pool);
			if (missing > 0)
				EP_LOG(ERR, "lcore %u: %d send buffers of device %u were not "
				       "returned", lc->lcore_id, missing, d);
		}
		rdp_rt.lcores[lc->lcore_id] = NULL;
		free(lc);
	}
	rdp_rt.nb_lcores = 0;
	for (d = rdp_rt.nb_devs; d-- > 0;) {
		rdp_pd_free(rdp_rt.devs[d].pd);
		rdp_dev_close(rdp_rt.devs[d].dev);
		memset(&rdp_rt.devs[d], 0, sizeof(rdp_rt.devs[d]));
	}
	rdp_rt.nb_devs = 0;
}

/*
 * Each endpoint holds a few descriptors (its control socket, and for the
 * shm driver its rendezvous sockets and shared segments): use the hard
 * limit, as servers do, so that max_endpoints is what limits endpoints.
 */
static void
raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			EP_LOG(WARNING, "cannot raise the file descriptor limit: %s",
			       strerror(errno));
	}
}

/* An endpoint holds its control socket and what its device's QP holds. */
#define EP_FDS_OWN 1u
#define EP_FDS_SPARE 512u

/*
 * Grow the fd table now, to what @p endpoints will hold, while no poller
 * spins. Linux grows it when a descriptor is first taken past its end
 * (expand_files()), and if the process has several threads it first waits
 * for an RCU grace period. With a poller busy on every CPU that wait
 * lasted for ever on this project's VM: the shm device's monitor, taking
 * the descriptors of the thousandth rendezvous, hung there, and every
 * later connection to the device timed out (docs/reliability.md). The
 * table never shrinks, so once is enough.
 */
static void
grow_fd_table(unsigned int endpoints)
{
	struct rlimit rl;
	uint64_t each = EP_FDS_OWN;
	unsigned int d;

	for (d = 0; d < rdp_rt.nb_devs; d++)
		each = RTE_MAX(each, EP_FDS_OWN + rdp_rt.devs[d].attr.fds_per_qp);
	uint64_t want = (uint64_t)endpoints * each + EP_FDS_SPARE;
	int base, high;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	if (rl.rlim_cur != RLIM_INFINITY && want > rl.rlim_cur)
		want = rl.rlim_cur;
	if (want == 0)
		return;
	base = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (base < 0)
		return;
	/* the lowest free descriptor at or above want - 1: the table covers it */
	high = fcntl(base, F_DUPFD_CLOEXEC, (int)(want - 1));
	if (high < 0)
		EP_LOG(WARNING, "cannot grow the fd table to %" PRIu64 " entries: %s", want,
		       strerror(errno));
	else
		close(high);
	close(base);
}

int
rdp_init(const struct rdp_cfg *cfg)
{
	unsigned int ids[RTE_MAX_LCORE], n, i, id, endpoints = 0;
	uint8_t lcore_dev[RTE_MAX_LCORE];
	int ret;

	if (rdp_rt.up)
		return rdp_err_set(EALREADY, "rdp_init called twice");
	if (rdp_rt.nb_lcores > 0)
		/* pollers, pools and endpoints the application still holds remain */
		return rdp_err_set(EBUSY, "the last rdp_fini() could not release every endpoint "
				   "(-EBUSY): rdmaplane cannot start again in this process");
	TAILQ_INIT(&rdp_rt.all);
	TAILQ_INIT(&rdp_rt.sessions);
	rdp_rt.nb_sessions = 0;
	if (sodium_init() < 0) {
		ret = rdp_err_set(EIO, "libsodium cannot initialise");
		goto fail;
	}
	raise_fd_limit();
	rdp_rt.auth = rdp_cfg_lcore(cfg, RDP_CFG_GLOBAL)->secret[0] != '\0';
	if (rdp_rt.auth)
		rdp_hello_key(rdp_cfg_lcore(cfg, RDP_CFG_GLOBAL)->secret, rdp_rt.auth_key);
	ret = rt_pages(cfg, RDP_CFG_GLOBAL, &rdp_rt.pages);
	if (ret < 0)
		goto fail;
	ret = open_devices(cfg, lcore_dev);
	if (ret < 0)
		goto fail;
	n = rdp_cfg_lcores(cfg, ids, RTE_DIM(ids));
	if (n == 0)
		RTE_LCORE_FOREACH_WORKER(id)
			ids[n++] = id;
	if (n == 0) {
		ret = rdp_err_set(EINVAL, "no poller lcore: give EAL a worker lcore (-l 0-1) "
				  "or an [lcore.N] section");
		goto fail;
	}
	for (i = 0; i < n; i++) {
		ret = lcore_start(cfg, ids[i], lcore_dev[ids[i]]);
		if (ret < 0)
			goto fail;
		endpoints += rdp_cfg_lcore(cfg, ids[i])->max_endpoints;
	}
	grow_fd_table(endpoints);
	ret = ctl_start();
	if (ret < 0)
		goto fail;
	for (i = 0; i < rdp_rt.nb_lcores; i++) {
		struct ep_lcore *lc = rdp_rt.lcores[rdp_rt.order[i]];

		ret = rte_eal_remote_launch(lcore_main, lc, lc->lcore_id);
		if (ret != 0) {
			ret = rdp_err_set(EBUSY, "lcore %u is busy: cannot start its poller",
					  lc->lcore_id);
			goto fail_launched;
		}
	}
	ep_telemetry_register();
	rdp_rt.up = true;
	EP_LOG(INFO, "driver: %s; %u poller lcore(s)", rdp_rt.driver_info, rdp_rt.nb_lcores);
	return 0;
fail_launched:
	while (i-- > 0) {
		rdp_poller_stop(rdp_rt.lcores[rdp_rt.order[i]]->poller);
		rte_eal_wait_lcore(rdp_rt.order[i]);
	}
	ctl_stop();
fail:
	teardown();
	return ret;
}

/*
 * Close what the application left open (accepted sends drain or fail),
 * also what a handshake admits meanwhile, until every endpoint is gone or
 * the deadline passes.
 */
static unsigned int
close_and_wait_endpoints(unsigned int ms)
{
	unsigned int left = 0, waited;
	struct rdp_ep *ep;

	for (waited = 0; waited <= ms; waited += 10) {
		pthread_mutex_lock(&rdp_rt.lock);
		TAILQ_FOREACH(ep, &rdp_rt.all, all_next) {
			/* the registry lock keeps it alive while we look */
			if (__atomic_load_n(&ep->app_visible, __ATOMIC_ACQUIRE) &&
			    ep_get_state(ep) != RDP_EP_CLOSED &&
			    !__atomic_exchange_n(&ep->app_closed, true, __ATOMIC_ACQ_REL)) {
				ep->fini_closed = true;
				ctl_close(ep);
			}
		}
		left = TAILQ_EMPTY(&rdp_rt.all) ? 0 : 1;
		pthread_mutex_unlock(&rdp_rt.lock);
		if (left == 0)
			return 0;
		usleep(10000);
	}
	return left;
}

int
rdp_fini(void)
{
	unsigned int i, wait_ms = 0;
	struct rdp_ep *ep;
	int ret = 0;

	if (!rdp_rt.up)
		return 0;
	/* nothing new is accepted while the endpoints go */
	ctl_unlisten(0);
	/* the longest drain may run out its deadline, then the teardowns */
	for (i = 0; i < rdp_rt.nb_lcores; i++)
		wait_ms = RTE_MAX(wait_ms, rdp_rt.lcores[rdp_rt.order[i]]->conf.drain_timeout_ms);
	/* sessions first: a session would reconnect what is closed under it */
	if (ep_sessions_close_all(wait_ms + 5000) != 0)
		EP_LOG(ERR, "rdp_fini: sessions still open after their close");
	if (close_and_wait_endpoints(wait_ms + 5000) != 0) {
		unsigned int n = 0;

		pthread_mutex_lock(&rdp_rt.lock);
		TAILQ_FOREACH(ep, &rdp_rt.all, all_next) {
			EP_LOG(ERR, "rdp_fini: endpoint %u (%s) still held: state %s, %u received "
			       "messages not freed", ep->id, ep->peer,
			       rdp_ep_state_str(ep_get_state(ep)), ep->held);
			ep_dump_one(stderr, ep);
			n++;
		}
		pthread_mutex_unlock(&rdp_rt.lock);
		ret = rdp_err_set(EBUSY, "%u endpoints could not be released", n);
	}
	ctl_stop();
	for (i = 0; i < rdp_rt.nb_lcores; i++) {
		rdp_poller_stop(rdp_rt.lcores[rdp_rt.order[i]]->poller);
		rte_eal_wait_lcore(rdp_rt.order[i]);
	}
	if (ret == 0)
		teardown();
	sodium_memzero(rdp_rt.auth_key, sizeof(rdp_rt.auth_key));
	rdp_rt.up = false;
	return ret;
}
