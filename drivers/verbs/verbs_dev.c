/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs driver's device: choosing device, port and GID, attributes,
 * counters, asynchronous events and the registration of the driver.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs_private.h"

RTE_LOG_REGISTER(rdp_verbs_logtype, rdp.verbs, INFO);

/* GID index value meaning "choose one". */
#define GID_AUTO 256

int
verbs_err(int err, const char *fmt, ...)
{
	char msg[RDP_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (err <= 0)
		err = EIO;
	return rdp_err_set(err, "verbs: %s: %s", msg, strerror(err));
}

enum ibv_mtu
verbs_mtu_enum(uint32_t bytes)
{
	enum ibv_mtu m;

	for (m = IBV_MTU_4096; m > IBV_MTU_256; m--)
		if (bytes >= verbs_mtu_bytes(m))
			return m;
	return IBV_MTU_256;
}

static const char *
port_state_str(enum ibv_port_state s)
{
	switch (s) {
	case IBV_PORT_DOWN: return "DOWN";
	case IBV_PORT_INIT: return "INIT";
	case IBV_PORT_ARMED: return "ARMED";
	case IBV_PORT_ACTIVE: return "ACTIVE";
	case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
	default: return "NOP";
	}
}

static const char *
gid_type_str(unsigned int type)
{
	switch (type) {
	case IBV_GID_TYPE_IB: return "IB";
	case IBV_GID_TYPE_ROCE_V1: return "RoCE v1";
	case IBV_GID_TYPE_ROCE_V2: return "RoCE v2";
	default: return "unknown";
	}
}

static void
gid_str(const union ibv_gid *gid, char *buf, size_t len)
{
	if (inet_ntop(AF_INET6, gid->raw, buf, len) == NULL)
		snprintf(buf, len, "?");
}

static bool
gid_is_zero(const union ibv_gid *gid)
{
	static const uint8_t zero[sizeof(gid->raw)];

	return memcmp(gid->raw, zero, sizeof(zero)) == 0;
}

static bool
gid_is_v4_mapped(const union ibv_gid *gid)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	return memcmp(gid->raw, prefix, sizeof(prefix)) == 0;
}

/* What was chosen: one port of one opened device, and the GID to use. */
struct pick {
	struct ibv_context *ctx;
	uint8_t port;
	uint8_t link_layer;
	uint16_t gid_index;
	unsigned int gid_type;
	union ibv_gid gid;
	struct ibv_port_attr pa;
};

/*
 * RoCE: the best GID of the port, RoCE v2 over v1 and IPv4-mapped over the
 * rest (an IPv4 address routes on any network; a link-local IPv6 one does
 * not leave its segment). InfiniBand: index 0, addressing is by LID.
 */
static int
gid_choose(struct pick *p, unsigned int want, const char *dev, char *why, size_t len)
{
	struct ibv_gid_entry e;
	int best = -1, best_score = 0, i, ret;

	if (want != GID_AUTO) {
		ret = ibv_query_gid_ex(p->ctx, p->port, want, &e, 0);
		if (ret != 0 || gid_is_zero(&e.gid)) {
			snprintf(why, len, "device %s port %u has no GID at index %u",
				 dev, p->port, want);
			return -EINVAL;
		}
		p->gid_index = want;
		p->gid_type = e.gid_type;
		p->gid = e.gid;
		return 0;
	}
	if (p->link_layer == RDP_LINK_INFINIBAND) {
		if (p->pa.lid == 0) {
			snprintf(why, len, "device %s port %u is InfiniBand without a LID "
				 "(is a subnet manager running?)", dev, p->port);
			return -ENODEV;
		}
		if (ibv_query_gid_ex(p->ctx, p->port, 0, &e, 0) != 0) {
			memset(&e, 0, sizeof(e));
			e.gid_type = IBV_GID_TYPE_IB;
		}
		p->gid_index = 0;
		p->gid_type = e.gid_type;
		p->gid = e.gid;
		return 0;
	}
	for (i = 0; i < p->pa.gid_tbl_len && i < GID_AUTO; i++) {
		int score;

		if (ibv_query_gid_ex(p->ctx, p->port, i, &e, 0) != 0 || gid_is_zero(&e.gid))
			continue;
		score = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? 2 :
			e.gid_type == IBV_GID_TYPE_ROCE_V1 ? 1 : 0;
		if (score == 0)
			continue;
		score = score * 2 + gid_is_v4_mapped(&e.gid);
		if (score > best_score) {
			best_score = score;
			best = i;
			p->gid_type = e.gid_type;
			p->gid = e.gid;
		}
	}
	if (best < 0) {
		snprintf(why, len, "device %s port %u has no RoCE GID (is an IP address "
			 "configured on its network device?)", dev, p->port);
		return -ENODEV;
	}
	p->gid_index = best;
	return 0;
}

/* Port @p want (or the first active one) of an opened device. */
static int
port_choose(struct pick *p, unsigned int want, const char *dev, char *why, size_t len)
{
	struct ibv_device_attr da;
	char states[128] = "";
	size_t off = 0;
	unsigned int i;

	if (ibv_query_device(p->ctx, &da) != 0) {
		snprintf(why, len, "cannot query device %s", dev);
		return -ENODEV;
	}
	for (i = 1; i <= da.phys_port_cnt; i++) {
		if (want != 0 && i != want)
			continue;
		if (ibv_query_port(p->ctx, i, &p->pa) != 0)
			continue;
		if (p->pa.state == IBV_PORT_ACTIVE || want != 0) {
			p->port = i;
			p->link_layer = p->pa.link_layer == IBV_LINK_LAYER_ETHERNET ?
				RDP_LINK_ETHERNET : RDP_LINK_INFINIBAND;
			return 0;
		}
		off += snprintf(states + off, sizeof(states) - off, "%sport %u %s",
				off ? ", " : "", i, port_state_str(p->pa.state));
		if (off >= sizeof(states))
			off = sizeof(states) - 1;
	}
	if (want != 0)
		snprintf(why, len, "device %s has no port %u (it has %u)", dev, want,
			 da.phys_port_cnt);
	else
		snprintf(why, len, "device %s has no active port (%s)", dev,
			 off ? states : "no ports");
	return -ENODEV;
}

/*
 * Open the device named @p dev (or the first with an active port) and choose
 * port and GID. On success p->ctx is open and owned by the caller.
 */
static int
dev_choose(const char *dev, unsigned int port, unsigned int gid, struct pick *p,
	   char *name, size_t name_len, char *why, size_t len)
{
	struct ibv_device **list;
	char names[128] = "";
	size_t off = 0;
	int n, i, ret = -ENODEV;

	memset(p, 0, sizeof(*p));
	list = ibv_get_device_list(&n);
	if (list == NULL || n == 0) {
		if (dev[0] != '\0')
			snprintf(why, len, "no RDMA device named '%s' (libibverbs found none)", dev);
		else
			snprintf(why, len, "no RDMA device (libibverbs found none)");
		if (list != NULL)
			ibv_free_device_list(list);
		return -ENODEV;
	}
	snprintf(why, len, "no RDMA device with an active port");
	for (i = 0; i < n; i++) {
		const char *nm = ibv_get_device_name(list[i]);

		off += snprintf(names + off, sizeof(names) - off, "%s%s", off ? ", " : "", nm);
		if (off >= sizeof(names))
			off = sizeof(names) - 1;
		if (dev[0] != '\0' && strcmp(dev, nm) != 0)
			continue;
		p->ctx = ibv_open_device(list[i]);
		if (p->ctx == NULL) {
			snprintf(why, len, "cannot open device %s: %s", nm, strerror(errno));
			ret = -ENODEV;
			continue;
		}
		ret = port_choose(p, port, nm, why, len);
		if (ret == 0)
			ret = gid_choose(p, gid, nm, why, len);
		if (ret == 0) {
			snprintf(name, name_len, "%s", nm);
			break;
		}
		ibv_close_device(p->ctx);
		p->ctx = NULL;
		if (dev[0] != '\0')
			break;
	}
	if (dev[0] != '\0' && i == n) {
		snprintf(why, len, "no RDMA device named '%s' (devices: %s)", dev, names);
		ret = -ENOENT;
	}
	ibv_free_device_list(list);
	return ret;
}

static int
verbs_probe(char *spec, size_t len, char *why, size_t why_len)
{
	char name[64], gs[INET6_ADDRSTRLEN];
	struct pick p;
	int ret;

	ret = dev_choose("", 0, GID_AUTO, &p, name, sizeof(name), why, why_len);
	if (ret < 0)
		return ret;
	gid_str(&p.gid, gs, sizeof(gs));
	snprintf(spec, len, "verbs:device=%s,port=%u", name, p.port);
	snprintf(why, why_len, "RDMA device %s port %u is active (GID %u %s); using the "
		 "verbs driver", name, p.port, p.gid_index, gs);
	ibv_close_device(p.ctx);
	return 0;
}

static int
numa_node_of(struct ibv_context *ctx)
{
	char path[512];
	FILE *f;
	int node = -1;

	snprintf(path, sizeof(path), "%s/device/numa_node", ctx->device->ibdev_path);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	if (fscanf(f, "%d", &node) != 1)
		node = -1;
	fclose(f);
	return node;
}

/* Inline bytes the device grants an RC QP that asks for @p want (0: none). */
static uint32_t
inline_probe(struct ibv_context *ctx, uint32_t want)
{
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = want },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 2, NULL, NULL, 0);
	struct ibv_qp *qp = NULL;
	uint32_t got = 0;

	if (pd != NULL && cq != NULL && want > 0) {
		ia.send_cq = cq;
		ia.recv_cq = cq;
		qp = ibv_create_qp(pd, &ia);
	}
	if (qp != NULL) {
		got = RTE_MIN(ia.cap.max_inline_data, want);
		ibv_destroy_qp(qp);
	}
	if (cq != NULL)
		ibv_destroy_cq(cq);
	if (pd != NULL)
		ibv_dealloc_pd(pd);
	return got;
}

static int
verbs_dev_open(struct rdp_dev *dev, const char *args)
{
	static const char *const keys[] = {
		"device", "port", "gid_index", "sl", "traffic_class", "hop_limit",
		"max_inline", NULL,
	};
	struct verbs_dev *vd = verbs_dev(dev);
	uint64_t port = 0, gid = GID_AUTO, sl = 0, tclass = 0, hop = 64, inl = 64;
	char want[64] = "", why[256], gs[INET6_ADDRSTRLEN];
	struct rte_kvargs *kv;
	struct pick p;
	int ret, fl;

	kv = rdp_drv_args_parse("verbs", args, keys);
	if (kv == NULL)
		return -rte_errno;
	ret = rdp_drv_arg_str("verbs", kv, "device", want, sizeof(want));
	if (ret == 0)
		ret = rdp_drv_arg_u64("verbs", kv, "port", &port, 1, 255);
	if (ret == 0)
		ret = rdp_drv_arg_u64("verbs", kv, "gid_index", &gid, 0, GID_AUTO - 1);
	if (ret == 0)
		ret = rdp_drv_arg_u64("verbs", kv, "sl", &sl, 0, 15);
	if (ret == 0)
		ret = rdp_drv_arg_u64("verbs", kv, "traffic_class", &tclass, 0, 255);
	if (ret == 0)
		ret = rdp_drv_arg_u64("verbs", kv, "hop_limit", &hop, 1, 255);
	if (ret == 0)
		ret = rdp_drv_arg_u64("verbs", kv, "max_inline", &inl, 0, 4096);
	rte_kvargs_free(kv);
	if (ret < 0)
		return ret;

	ret = dev_choose(want, port, gid, &p, vd->name, sizeof(vd->name), why, sizeof(why));
	if (ret < 0)
		return rdp_err_set(-ret, "verbs: %s", why);
	if (ibv_query_device(p.ctx, &vd->dev_attr) != 0) {
		ret = verbs_err(errno, "ibv_query_device(%s)", vd->name);
		ibv_close_device(p.ctx);
		return ret;
	}
	/* the control side drains events without blocking */
	fl = fcntl(p.ctx->async_fd, F_GETFL);
	if (fl < 0 || fcntl(p.ctx->async_fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		ret = verbs_err(errno, "cannot make the async fd of %s non-blocking", vd->name);
		ibv_close_device(p.ctx);
		return ret;
	}
	vd->ctx = p.ctx;
	vd->port_attr = p.pa;
	vd->port = p.port;
	vd->gid_index = p.gid_index;
	vd->gid = p.gid;
	vd->link_layer = p.link_layer;
	vd->sl = sl;
	vd->traffic_class = tclass;
	vd->hop_limit = hop;
	vd->max_inline = inline_probe(p.ctx, inl);
	vd->numa_node = numa_node_of(p.ctx);
	pthread_mutex_init(&vd->lock, NULL);
	TAILQ_INIT(&vd->cqs);
	TAILQ_INIT(&vd->qps);
	TAILQ_INIT(&vd->zombies);
	TAILQ_INIT(&vd->srqs);
	TAILQ_INIT(&vd->srq_zombies);

	gid_str(&p.gid, gs, sizeof(gs));
	if (p.link_layer == RDP_LINK_INFINIBAND)
		VERBS_LOG(INFO, "%s port %u: InfiniBand LID %u, port %s, active MTU %u, "
			  "GID %u %s", vd->name, p.port, p.pa.lid, port_state_str(p.pa.state),
			  verbs_mtu_bytes(p.pa.active_mtu), p.gid_index, gs);
	else
		VERBS_LOG(INFO, "%s port %u: Ethernet (RoCE), port %s, active MTU %u, "
			  "GID %u %s (%s)", vd->name, p.port, port_state_str(p.pa.state),
			  verbs_mtu_bytes(p.pa.active_mtu), p.gid_index, gs,
			  gid_type_str(p.gid_type));
	if (vd->max_inline < inl)
		VERBS_LOG(INFO, "%s: inline sends up to %u bytes (%" PRIu64 " asked)",
			  vd->name, vd->max_inline, inl);
	if (p.pa.state != IBV_PORT_ACTIVE)
		VERBS_LOG(WARNING, "%s port %u is %s: QPs will not connect until it is active",
			  vd->name, p.port, port_state_str(p.pa.state));
	return 0;
}

static void
verbs_dev_close(struct rdp_dev *dev)
{
	struct verbs_dev *vd = verbs_dev(dev);
	struct verbs_srq *srq;

	while ((srq = TAILQ_FIRST(&vd->srq_zombies)) != NULL) {
		TAILQ_REMOVE(&vd->srq_zombies, srq, next);
		verbs_srq_release(srq);
	}
	ibv_close_device(vd->ctx);
	pthread_mutex_destroy(&vd->lock);
}

static int
verbs_dev_query(struct rdp_dev *dev, struct rdp_dev_attr *attr)
{
	struct verbs_dev *vd = verbs_dev(dev);
	struct ibv_port_attr pa;

	if (ibv_query_port(vd->ctx, vd->port, &pa) != 0)
		return verbs_err(errno, "ibv_query_port(%s, %u)", vd->name, vd->port);
	snprintf(attr->driver, sizeof(attr->driver), "verbs");
	snprintf(attr->name, sizeof(attr->name), "%s", vd->name);
	attr->max_qp_wr = vd->dev_attr.max_qp_wr;
	attr->max_sge = vd->dev_attr.max_sge;
	attr->max_cqe = vd->dev_attr.max_cqe;
	attr->max_inline_data = vd->max_inline;
	attr->max_qp_rd_atom = (uint32_t)vd->dev_attr.max_qp_rd_atom;
	attr->max_qp_init_rd_atom = (uint32_t)vd->dev_attr.max_qp_init_rd_atom;
	attr->port = vd->port;
	attr->link_layer = vd->link_layer;
	attr->port_active = pa.state == IBV_PORT_ACTIVE;
	attr->gid_index = vd->gid_index;
	memcpy(attr->gid, vd->gid.raw, RDP_GID_LEN);
	attr->lid = pa.lid;
	attr->active_mtu = verbs_mtu_bytes(pa.active_mtu);
	attr->numa_node = vd->numa_node;
	attr->max_srq_wr = vd->dev_attr.max_srq > 0 ? (uint32_t)vd->dev_attr.max_srq_wr : 0;
	attr->max_srq_sge = vd->dev_attr.max_srq > 0 ? (uint32_t)vd->dev_attr.max_srq_sge : 0;
	return 0;
}

static void
cq_stats_add(struct verbs_cq_stats *to, const struct verbs_cq_stats *s)
{
	to->completions += RDP_STAT_READ(s->completions);
	to->flushed += RDP_STAT_READ(s->flushed);
	to->rnr += RDP_STAT_READ(s->rnr);
	to->errors += RDP_STAT_READ(s->errors);
}

static void
qp_stats_add(struct verbs_qp_stats *to, const struct verbs_qp_stats *s)
{
	to->send_posted += RDP_STAT_READ(s->send_posted);
	to->recv_posted += RDP_STAT_READ(s->recv_posted);
	to->enomem += RDP_STAT_READ(s->enomem);
}

static int
verbs_stats_get(struct rdp_dev *dev, struct rdp_dev_stats *st)
{
	struct verbs_dev *vd = verbs_dev(dev);
	struct verbs_cq_stats cs;
	struct verbs_qp_stats qs;
	struct verbs_cq *cq;
	struct verbs_qp *qp;
	struct verbs_srq *srq;

	pthread_mutex_lock(&vd->lock);
	cs = vd->dead_cq_stats;
	qs = vd->dead_qp_stats;
	qs.recv_posted += vd->dead_srq_posted;
	TAILQ_FOREACH(srq, &vd->srqs, next)
		qs.recv_posted += RDP_STAT_READ(srq->recv_posted);
	TAILQ_FOREACH(cq, &vd->cqs, next)
		cq_stats_add(&cs, &cq->stats);
	TAILQ_FOREACH(qp, &vd->qps, next)
		qp_stats_add(&qs, &qp->stats);
	st->cq_overruns = vd->cq_overruns;
	pthread_mutex_unlock(&vd->lock);
	st->send_posted = qs.send_posted;
	st->recv_posted = qs.recv_posted;
	st->enomem = qs.enomem;
	st->completions = cs.completions;
	st->flushed = cs.flushed;
	st->rnr = cs.rnr;
	st->errors = cs.errors;
	return 0;
}

void
verbs_dev_cq_add(struct verbs_dev *vd, struct verbs_cq *cq)
{
	pthread_mutex_lock(&vd->lock);
	TAILQ_INSERT_TAIL(&vd->cqs, cq, next);
	pthread_mutex_unlock(&vd->lock);
}

/* A CQ is gone: no completion of a destroyed QP can be polled from it any more. */
void
verbs_dev_cq_del(struct verbs_dev *vd, struct verbs_cq *cq)
{
	struct verbs_qp *z, *tmp;

	pthread_mutex_lock(&vd->lock);
	TAILQ_REMOVE(&vd->cqs, cq, next);
	cq_stats_add(&vd->dead_cq_stats, &cq->stats);
	for (z = TAILQ_FIRST(&vd->zombies); z != NULL; z = tmp) {
		tmp = TAILQ_NEXT(z, next);
		if (z->head.send_cq == &cq->head) {
			z->head.send_cq = NULL;
			z->zombie_refs--;
		}
		if (z->head.recv_cq == &cq->head) {
			z->head.recv_cq = NULL;
			z->zombie_refs--;
		}
		if (z->zombie_refs == 0) {
			TAILQ_REMOVE(&vd->zombies, z, next);
			verbs_qp_release(z);
		}
	}
	pthread_mutex_unlock(&vd->lock);
}

void
verbs_dev_qp_add(struct verbs_dev *vd, struct verbs_qp *qp)
{
	pthread_mutex_lock(&vd->lock);
	TAILQ_INSERT_TAIL(&vd->qps, qp, next);
	pthread_mutex_unlock(&vd->lock);
}

/* A QP is destroyed; keep its slots while its CQs may still return its WRs. */
void
verbs_dev_qp_bury(struct verbs_dev *vd, struct verbs_qp *qp)
{
	pthread_mutex_lock(&vd->lock);
	TAILQ_REMOVE(&vd->qps, qp, next);
	qp_stats_add(&vd->dead_qp_stats, &qp->stats);
	qp->zombie_refs = qp->head.send_cq == qp->head.recv_cq ? 1 : 2;
	if (qp->head.send_cq == qp->head.recv_cq)
		qp->head.recv_cq = NULL;
	TAILQ_INSERT_TAIL(&vd->zombies, qp, next);
	pthread_mutex_unlock(&vd->lock);
}

/* A GID of the port in use is @p sa's address (IPv4-mapped for IPv4). */
static int
verbs_owns_addr(struct rdp_dev *dev, const struct sockaddr *sa)
{
	const struct verbs_dev *vd = verbs_dev(dev);
	union ibv_gid want = { .raw = { 0 } };
	struct ibv_gid_entry e;
	uint32_t i;

	if (sa->sa_family == AF_INET) {
		want.raw[10] = want.raw[11] = 0xff;
		memcpy(&want.raw[12], &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else {
		memcpy(want.raw, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	}
	for (i = 0; (int)i < vd->port_attr.gid_tbl_len; i++) {
		if (ibv_query_gid_ex(vd->ctx, vd->port, i, &e, 0) != 0 || gid_is_zero(&e.gid))
			continue;
		if (memcmp(e.gid.raw, want.raw, sizeof(want.raw)) == 0)
			return 1;
	}
	return 0;
}

static int
verbs_event_fd(struct rdp_dev *dev)
{
	return verbs_dev(dev)->ctx->async_fd;
}

/* Turn one verbs event into ours; false for events nobody above needs. */
static bool
event_map(struct verbs_dev *vd, const struct ibv_async_event *e, struct rdp_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	switch (e->event_type) {
	case IBV_EVENT_CQ_ERR: {
		struct verbs_cq *cq = e->element.cq->cq_context;

		/* the poller sees it at its next poll and fails with -EIO */
		__atomic_store_n(&cq->failed, 1, __ATOMIC_RELEASE);
		pthread_mutex_lock(&vd->lock);
		vd->cq_overruns++;
		pthread_mutex_unlock(&vd->lock);
		ev->type = RDP_EVENT_CQ_ERR;
		ev->cq = &cq->head;
		return true;
	}
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
		ev->type = RDP_EVENT_QP_FATAL;
		ev->qp = &((struct verbs_qp *)e->element.qp->qp_context)->head;
		return true;
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		ev->type = RDP_EVENT_SRQ_LIMIT;
		ev->srq = &((struct verbs_srq *)e->element.srq->srq_context)->head;
		return true;
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_PORT_ACTIVE:
		if (e->element.port_num != vd->port)
			return false;
		ev->type = e->event_type == IBV_EVENT_PORT_ERR ?
			RDP_EVENT_PORT_ERR : RDP_EVENT_PORT_ACTIVE;
		return true;
	case IBV_EVENT_DEVICE_FATAL:
		ev->type = RDP_EVENT_DEVICE_FATAL;
		return true;
	default:
		return false;
	}
}

static int
verbs_event_get(struct rdp_dev *dev, struct rdp_event *ev)
{
	struct verbs_dev *vd = verbs_dev(dev);
	struct ibv_async_event e;
	bool mapped;

	for (;;) {
		if (ibv_get_async_event(vd->ctx, &e) != 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return -EAGAIN;
			return verbs_err(errno, "ibv_get_async_event(%s)", vd->name);
		}
		mapped = event_map(vd, &e, ev);
		if (mapped)
			VERBS_LOG(NOTICE, "%s: async event %s", vd->name,
				  ibv_event_type_str(e.event_type));
		/* ack at once: destroying a QP or CQ waits for its events' acks */
		ibv_ack_async_event(&e);
		if (mapped)
			return 0;
	}
}

static const struct rdp_driver_ops verbs_ops = {
	.probe = verbs_probe,
	.dev_open = verbs_dev_open,
	.dev_close = verbs_dev_close,
	.dev_query = verbs_dev_query,
	.stats_get = verbs_stats_get,
	.owns_addr = verbs_owns_addr,
	.event_fd = verbs_event_fd,
	.event_get = verbs_event_get,
	.pd_alloc = verbs_pd_alloc,
	.pd_free = verbs_pd_free,
	.mr_alloc = verbs_mr_alloc,
	.mr_reg = verbs_mr_reg,
	.mr_free = verbs_mr_free,
	.cq_create = verbs_cq_create,
	.cq_resize = verbs_cq_resize,
	.cq_destroy = verbs_cq_destroy,
	.qp_create = verbs_qp_create,
	.qp_modify = verbs_qp_modify,
	.qp_query = verbs_qp_query,
	.qp_local_addr = verbs_qp_local_addr,
	.qp_destroy = verbs_qp_destroy,
	.srq_create = verbs_srq_create,
	.srq_destroy = verbs_srq_destroy,
	.srq_modify_limit = verbs_srq_modify_limit,
	.srq_query = verbs_srq_query,
};

/* Hardware first: rdp_dev_default_spec() falls back to shm without a device. */
static struct rdp_driver verbs_driver = {
	.preference = 10,
	.dev_priv_size = sizeof(struct verbs_dev),
	.ops = &verbs_ops,
};

RDP_DRIVER_REGISTER(verbs, verbs_driver);
