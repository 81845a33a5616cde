/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What an operator reads of the endpoints: DPDK telemetry commands
 * (/rdp/lcores, /rdp/endpoints, /rdp/endpoint,ID) and rdp_endpoints_dump().
 */
#include <inttypes.h>
#include <stdio.h>

#include <rte_telemetry.h>

#include "ep_private.h"

/*
 * One endpoint's line of rdp_endpoints_dump(). Poller-owned fields read from
 * here are the racy snapshot the API promises; the credit state comes
 * through rdp_ep_stats_get() (see credit_snapshot()).
 */
__attribute__((no_sanitize("thread")))
void
ep_dump_one(FILE *f, const struct rdp_ep *ep)
{
	struct rdp_ep_stats s;

	rdp_ep_stats_get(ep, &s);
	fprintf(f, "endpoint %u peer %s lcore %u state %s phase %s err %d: app_visible %d "
		"announced %d closing %d | recv_posted %u sq_inflight %u remote_credits %u "
		"owed %u txq %s | held %u held_ref %d refs %u busy %d | control: %s, qp_made %d, "
		"handshake step %d\n",
		ep->id, ep->peer, ep->lc->lcore_id, rdp_ep_state_str(ep_get_state(ep)),
		ep_phase_name(ep_phase_get(ep)), ep->err, ep->app_visible, ep->announced,
		ep->closing, s.recv_posted, s.sq_inflight, s.remote_credits, s.owed,
		txq_empty(&ep->txq) ? "empty" : "queued", ep->held, ep->held_ref,
		atomic_load(&ep->refs), ep->busy.queued,
		ep->ctl_list == CTL_ESTABLISHED ? "its socket watched" :
		ep->ctl_list == CTL_HANDSHAKE ? "in its handshake" : "let go", ep->qp_made,
		(int)ep->hs);
	if (ep->srq_member || ep->peer_leases)
		fprintf(f, "  leased: member %d lease %u owed %u out %u reserve %u wanting %d "
			"queued %d | peer leases %d, floor %u\n", ep->srq_member, ep->lease.lease,
			ep->lease.owed, ep->lease.out, ep->lease.reserve, ep->lease.wanting,
			ep->lease.queued, ep->peer_leases, ep->peer_floor);
}

unsigned int
rdp_endpoints_dump(FILE *f)
{
	struct rdp_ep *ep;
	unsigned int n = 0;

	pthread_mutex_lock(&rdp_rt.lock);
	TAILQ_FOREACH(ep, &rdp_rt.all, all_next) {
		ep_dump_one(f, ep);
		n++;
	}
	pthread_mutex_unlock(&rdp_rt.lock);
	fflush(f);
	return n;
}

/* ---------------------------------------------------------------------- */
/* Endpoint counters                                                      */
/* ---------------------------------------------------------------------- */

/* The fields of struct rdp_ep_counters, for telemetry and the sums. */
#define EP_COUNTER_FIELDS(X) \
	X(opened) X(closed) X(peer_closed) X(failed) X(failed_peer_gone) X(failed_flushed) \
	X(failed_retry_exceeded) X(failed_rnr) X(failed_remote_access) X(failed_remote_error) \
	X(failed_device) X(failed_link_down) X(failed_protocol) X(failed_other) \
	X(drain_timeouts) X(handshake_failed) X(reconnect_attempts) X(reconnects) \
	X(sessions_gave_up) X(enomem) X(rnr)

/* Add lcore @p lc's counters, and the ENOMEM and RNR of its live endpoints, to @p c. */
static void
counters_add(const struct ep_lcore *lc, struct rdp_ep_counters *c)
{
	const struct rdp_ep *ep;

#define ADD_ONE(f) c->f += RDP_STAT_READ(lc->counters.f);
	EP_COUNTER_FIELDS(ADD_ONE)
#undef ADD_ONE
	pthread_mutex_lock(&rdp_rt.lock);
	TAILQ_FOREACH(ep, &rdp_rt.all, all_next) {
		/* the retired ones are in the counters already */
		if (ep->lc == lc && ep_phase_get(ep) < EP_PH_RETIRED) {
			c->enomem += RDP_STAT_READ(ep->stats.enomem);
			c->rnr += RDP_STAT_READ(ep->stats.rnr);
		}
	}
	pthread_mutex_unlock(&rdp_rt.lock);
}

int
rdp_ep_counters_get(int lcore, struct rdp_ep_counters *c)
{
	unsigned int i;

	memset(c, 0, sizeof(*c));
	if (rdp_rt.nb_lcores == 0)
		return -ENODEV;
	if (lcore < 0) {
		for (i = 0; i < rdp_rt.nb_lcores; i++)
			counters_add(rdp_rt.lcores[rdp_rt.order[i]], c);
		return 0;
	}
	if (lcore >= RTE_MAX_LCORE || rdp_rt.lcores[lcore] == NULL)
		return -ENODEV;
	counters_add(rdp_rt.lcores[lcore], c);
	return 0;
}

static void
counters_tel(struct rte_tel_data *o, const struct rdp_ep_counters *c)
{
#define TEL_ONE(f) rte_tel_data_add_dict_u64(o, #f, c->f);
	EP_COUNTER_FIELDS(TEL_ONE)
#undef TEL_ONE
}

/* ---------------------------------------------------------------------- */
/* Telemetry                                                              */
/* ---------------------------------------------------------------------- */

/* The key of device @p d's @p what: the first device's is @p what, the others' what_DEVICE. */
static void
dev_key(char *key, size_t len, const char *what, unsigned int d, const struct ep_lcore_dev *ld)
{
	if (d == 0)
		snprintf(key, len, "%s", what);
	else
		snprintf(key, len, "%s_%s", what, ld->dv->attr.name);
}

/*
 * A rendezvous arena of an lcore's device into @p o as @p what (the first
 * device's) or "@p what_DEVICE"; nothing when the device has none.
 */
static int
tel_arena(struct rte_tel_data *o, struct rdp_arena *a, const char *what, unsigned int d,
	  const struct ep_lcore_dev *ld)
{
	char key[RTE_TEL_MAX_STRING_LEN];
	struct rdp_arena_stats st;
	struct rte_tel_data *t;

	if (a == NULL)
		return 0;
	t = rte_tel_data_alloc();
	if (t == NULL)
		return -ENOMEM;
	rdp_arena_stats_get(a, &st);
	rte_tel_data_start_dict(t);
	rte_tel_data_add_dict_u64(t, "size", st.size);
	rte_tel_data_add_dict_u64(t, "avail", st.avail);
	rte_tel_data_add_dict_u64(t, "waiting", st.waiting);
	rte_tel_data_add_dict_u64(t, "refused", st.refused);
	rte_tel_data_add_dict_u64(t, "lapsed", st.lapsed);
	dev_key(key, sizeof(key), what, d, ld);
	rte_tel_data_add_dict_container(o, key, t, 0);
	return 0;
}

static int
tel_lcores(const char *cmd, const char *params, struct rte_tel_data *d)
{
	unsigned int i;

	RTE_SET_USED(cmd);
	RTE_SET_USED(params);
	rte_tel_data_start_dict(d);
	for (i = 0; i < rdp_rt.nb_lcores; i++) {
		struct ep_lcore *lc = rdp_rt.lcores[rdp_rt.order[i]];
		struct rte_tel_data *o = rte_tel_data_alloc();
		struct rdp_poll_stats ps;
		uint32_t used, size, slots;
		char key[16];

		if (o == NULL)
			return -ENOMEM;
		rdp_poller_stats(lc->poller, &ps, &used, &size, &slots);
		rte_tel_data_start_dict(o);
		rte_tel_data_add_dict_u64(o, "polls", ps.polls);
		rte_tel_data_add_dict_u64(o, "idle_polls", ps.idle_polls);
		rte_tel_data_add_dict_u64(o, "completions", ps.completions);
		rte_tel_data_add_dict_u64(o, "inbox_items", ps.inbox_items);
		rte_tel_data_add_dict_u64(o, "stray_completions", ps.stray_wc);
		rte_tel_data_add_dict_u64(o, "cq_errors", ps.cq_errors);
		rte_tel_data_add_dict_u64(o, "cq_resizes", ps.cq_resizes);
		rte_tel_data_add_dict_u64(o, "cq_reserved", used);
		rte_tel_data_add_dict_u64(o, "cq_size", size);
		rte_tel_data_add_dict_u64(o, "endpoints", slots);
		{
			uint64_t free_bufs = 0;
			unsigned int d;

			for (d = 0; d < rdp_rt.nb_devs; d++)
				free_bufs += rdp_pool_avail(lc->dev[d].send_pool);
			rte_tel_data_add_dict_u64(o, "send_bufs_free", free_bufs);
			rte_tel_data_add_dict_u64(o, "devices", rdp_rt.nb_devs);
			rte_tel_data_add_dict_string(o, "default_device",
						     lc->dev[lc->dflt].dv->attr.name);
		}
		{
			struct rte_tel_data *e = rte_tel_data_alloc();
			struct rdp_ep_counters c = { 0 };

			if (e == NULL) {
				rte_tel_data_free(o);
				return -ENOMEM;
			}
			counters_add(lc, &c);
			rte_tel_data_start_dict(e);
			counters_tel(e, &c);
			rte_tel_data_add_dict_container(o, "endpoint_counters", e, 0);
		}
		for (unsigned int d = 0; d < rdp_rt.nb_devs; d++) {
			const struct ep_lcore_dev *ld = &lc->dev[d];
			struct rte_tel_data *q;
			struct rdp_srq_stats ss;
			char qkey[RTE_TEL_MAX_STRING_LEN];

			if (tel_arena(o, ld->rv_send, "rndv_send", d, ld) < 0 ||
			    tel_arena(o, ld->rv_recv, "rndv_recv", d, ld) < 0) {
				rte_tel_data_free(o);
				return -ENOMEM;
			}
			if (ld->srq == NULL)
				continue;
			q = rte_tel_data_alloc();
			if (q == NULL) {
				rte_tel_data_free(o);
				return -ENOMEM;
			}
			ep_srq_snapshot(ld, &ss);
			rte_tel_data_start_dict(q);
			rte_tel_data_add_dict_u64(q, "size", ss.size);
			rte_tel_data_add_dict_u64(q, "posted", ss.posted);
			rte_tel_data_add_dict_u64(q, "free", ss.free);
			rte_tel_data_add_dict_u64(q, "leased", ss.leased);
			rte_tel_data_add_dict_u64(q, "reserved", ss.reserved);
			rte_tel_data_add_dict_u64(q, "fin_reserve", ss.fin_reserve);
			rte_tel_data_add_dict_u64(q, "fin_free", ss.fin_free);
			rte_tel_data_add_dict_u64(q, "members", ss.members);
			rte_tel_data_add_dict_u64(q, "floor", ss.floor);
			rte_tel_data_add_dict_u64(q, "lease_max", ss.lease_max);
			rte_tel_data_add_dict_u64(q, "grants", ss.grants);
			rte_tel_data_add_dict_u64(q, "diverted", ss.diverted);
			rte_tel_data_add_dict_u64(q, "given_back", ss.given_back);
			rte_tel_data_add_dict_u64(q, "refused", ss.refused);
			rte_tel_data_add_dict_u64(q, "strays", ss.strays);
			rte_tel_data_add_dict_u64(q, "fin_waits", ss.fin_waits);
			dev_key(qkey, sizeof(qkey), "srq", d, ld);
			rte_tel_data_add_dict_container(o, qkey, q, 0);
		}
		snprintf(key, sizeof(key), "%u", lc->lcore_id);
		rte_tel_data_add_dict_container(d, key, o, 0);
	}
	return 0;
}

static int
tel_counters(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct rdp_ep_counters c;

	RTE_SET_USED(cmd);
	RTE_SET_USED(params);
	rdp_ep_counters_get(-1, &c);
	rte_tel_data_start_dict(d);
	counters_tel(d, &c);
	return 0;
}

static int
tel_endpoints(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct rdp_ep *ep;

	RTE_SET_USED(cmd);
	RTE_SET_USED(params);
	rte_tel_data_start_array(d, RTE_TEL_INT_VAL);
	pthread_mutex_lock(&rdp_rt.lock);
	TAILQ_FOREACH(ep, &rdp_rt.all, all_next)
		rte_tel_data_add_array_int(d, (int)ep->id);
	pthread_mutex_unlock(&rdp_rt.lock);
	return 0;
}

static int
tel_endpoint(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct rdp_ep_stats s;
	struct rdp_ep *ep;
	unsigned long id;
	char *end;
	int ret = -ENOENT;

	RTE_SET_USED(cmd);
	if (params == NULL || params[0] == '\0')
		return -EINVAL;
	id = strtoul(params, &end, 10);
	if (*end != '\0')
		return -EINVAL;
	pthread_mutex_lock(&rdp_rt.lock);
	TAILQ_FOREACH(ep, &rdp_rt.all, all_next) {
		if (ep->id != id)
			continue;
		rdp_ep_stats_get(ep, &s);
		rte_tel_data_start_dict(d);
		rte_tel_data_add_dict_u64(d, "id", ep->id);
		rte_tel_data_add_dict_string(d, "state", rdp_ep_state_str(ep_get_state(ep)));
		rte_tel_data_add_dict_string(d, "peer", ep->peer);
		rte_tel_data_add_dict_u64(d, "lcore", ep->lc->lcore_id);
		rte_tel_data_add_dict_string(d, "device", ep->ld->dv->attr.name);
		rte_tel_data_add_dict_u64(d, "msgs_sent", s.msgs_sent);
		rte_tel_data_add_dict_u64(d, "msgs_failed", s.msgs_failed);
		rte_tel_data_add_dict_u64(d, "msgs_received", s.msgs_received);
		rte_tel_data_add_dict_u64(d, "bytes_sent", s.bytes_sent);
		rte_tel_data_add_dict_u64(d, "bytes_received", s.bytes_received);
		rte_tel_data_add_dict_u64(d, "sq_inflight", s.sq_inflight);
		rte_tel_data_add_dict_u64(d, "remote_credits", s.remote_credits);
		rte_tel_data_add_dict_u64(d, "owed", s.owed);
		rte_tel_data_add_dict_u64(d, "recv_posted", s.recv_posted);
		rte_tel_data_add_dict_u64(d, "acks", s.acks);
		rte_tel_data_add_dict_u64(d, "reclaims", s.reclaims);
		rte_tel_data_add_dict_u64(d, "sq_stalls", s.sq_stalls);
		rte_tel_data_add_dict_u64(d, "remote_stalls", s.remote_stalls);
		rte_tel_data_add_dict_u64(d, "backpressure", s.backpressure);
		rte_tel_data_add_dict_u64(d, "enomem", s.enomem);
		rte_tel_data_add_dict_u64(d, "rnr", s.rnr);
		rte_tel_data_add_dict_u64(d, "dups_dropped", s.dups_dropped);
		rte_tel_data_add_dict_u64(d, "rdma_done", s.rdma_done);
		rte_tel_data_add_dict_u64(d, "rdma_failed", s.rdma_failed);
		rte_tel_data_add_dict_u64(d, "rdma_bytes", s.rdma_bytes);
		rte_tel_data_add_dict_u64(d, "read_depth", ep->credit.rd_depth);
		ret = 0;
		break;
	}
	pthread_mutex_unlock(&rdp_rt.lock);
	return ret;
}

static int
tel_handshakes(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct rdp_hs_stats st;

	RTE_SET_USED(cmd);
	RTE_SET_USED(params);
	rdp_hs_stats_get(&st);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "accepted", st.accepted);
	rte_tel_data_add_dict_u64(d, "hello_timeouts", st.hello_timeouts);
	rte_tel_data_add_dict_u64(d, "refused_per_peer", st.refused_per_peer);
	rte_tel_data_add_dict_u64(d, "waited_for_slot", st.waited_for_slot);
	rte_tel_data_add_dict_u64(d, "rejected", st.rejected);
	rte_tel_data_add_dict_u64(d, "auth_failures", st.auth_failures);
	{
		struct rdp_hs_reject r[RDP_HS_REJECT_FIELDS];
		struct rte_tel_data *f = rte_tel_data_alloc();
		int i, n = rdp_hs_rejects_get(r, RTE_DIM(r));

		if (f != NULL) {
			rte_tel_data_start_dict(f);
			for (i = 0; i < n; i++)
				rte_tel_data_add_dict_u64(f, r[i].field, r[i].count);
			rte_tel_data_add_dict_container(d, "rejected_by_field", f, 0);
		}
	}
	rte_tel_data_add_dict_u64(d, "in_progress", st.in_progress);
	rte_tel_data_add_dict_u64(d, "waiting", st.waiting);
	rte_tel_data_add_dict_u64(d, "waiting_max", st.waiting_max);
	return 0;
}

void
ep_telemetry_register(void)
{
	static bool done;

	if (done)
		return;
	done = true;
	rte_telemetry_register_cmd("/rdp/counters", tel_counters,
				   "How the process's endpoints ended, since rdp_init(): opened, "
				   "closed, peer_closed, failed by reason, ENOMEM, RNR. No parameters");
	rte_telemetry_register_cmd("/rdp/lcores", tel_lcores,
				   "Poller lcores: polls, idle polls, completions, CQ budget. No parameters");
	rte_telemetry_register_cmd("/rdp/endpoints", tel_endpoints,
				   "Ids of live endpoints. No parameters");
	rte_telemetry_register_cmd("/rdp/endpoint", tel_endpoint,
				   "One endpoint: state, credits, stalls, ENOMEM, RNR. Parameter: id");
	rte_telemetry_register_cmd("/rdp/handshakes", tel_handshakes,
				   "Listeners' handshakes: accepted, HELLO timeouts, refused per peer, "
				   "waiting. No parameters");
}

