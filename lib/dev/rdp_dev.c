/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The generic device layer: driver registry, spec parsing, and the checks
 * every driver call shares (NULL op -> -ENOTSUP, object counting, fast-path
 * pointers present).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdp_driver.h"
#include "rdp_pages.h"

RTE_LOG_REGISTER(rdp_dev_logtype, rdp.dev, INFO);
#define DEV_LOG(level, fmt, ...) RDP_LOG(level, rdp_dev_logtype, "dev", fmt, ##__VA_ARGS__)

static TAILQ_HEAD(, rdp_driver) driver_list = TAILQ_HEAD_INITIALIZER(driver_list);

void
rdp_driver_register(struct rdp_driver *drv)
{
	struct rdp_driver *d;

	/* keep the list sorted by preference so default selection walks it */
	TAILQ_FOREACH(d, &driver_list, next) {
		if (drv->preference < d->preference) {
			TAILQ_INSERT_BEFORE(d, drv, next);
			return;
		}
	}
	TAILQ_INSERT_TAIL(&driver_list, drv, next);
}

static const struct rdp_driver *
driver_find(const char *name, size_t len)
{
	const struct rdp_driver *d;

	TAILQ_FOREACH(d, &driver_list, next)
		if (strlen(d->name) == len && strncmp(d->name, name, len) == 0)
			return d;
	return NULL;
}

static void
driver_names(char *buf, size_t len)
{
	const struct rdp_driver *d;
	size_t off = 0;

	buf[0] = '\0';
	TAILQ_FOREACH(d, &driver_list, next) {
		int n = snprintf(buf + off, len - off, "%s%s", off ? ", " : "", d->name);

		if (n < 0 || (size_t)n >= len - off)
			break;
		off += n;
	}
}

int
rdp_dev_default_spec(char *spec, size_t len, char *why, size_t why_len)
{
	const struct rdp_driver *d;
	char reasons[RDP_ERR_MSG_MAX] = "";
	size_t off = 0;

	TAILQ_FOREACH(d, &driver_list, next) {
		char r[256] = "";

		if (d->ops->probe == NULL)
			continue;
		if (d->ops->probe(spec, len, r, sizeof(r)) == 0) {
			if (off > 0)
				snprintf(why, why_len, "%s; %s", reasons, r);
			else
				snprintf(why, why_len, "%s", r);
			return 0;
		}
		off += snprintf(reasons + off, sizeof(reasons) - off, "%s%s: %s",
				off ? "; " : "", d->name, r);
		if (off >= sizeof(reasons))
			off = sizeof(reasons) - 1;
	}
	snprintf(why, why_len, "no usable driver (%s)", reasons);
	return rdp_err_set(ENODEV, "%s", why);
}

struct rdp_dev *
rdp_dev_open(const char *spec)
{
	const struct rdp_driver *drv;
	const char *colon, *args;
	struct rdp_dev *dev;
	size_t name_len;
	char names[128];
	int ret;

	if (spec == NULL || spec[0] == '\0') {
		rdp_err_set(EINVAL, "driver spec is empty");
		return NULL;
	}
	if (strlen(spec) >= RDP_DEV_SPEC_MAX) {
		rdp_err_set(EINVAL, "driver spec '%.32s...' is longer than %d characters",
			    spec, RDP_DEV_SPEC_MAX - 1);
		return NULL;
	}
	colon = strchr(spec, ':');
	name_len = colon != NULL ? (size_t)(colon - spec) : strlen(spec);
	args = colon != NULL ? colon + 1 : "";
	drv = driver_find(spec, name_len);
	if (drv == NULL) {
		driver_names(names, sizeof(names));
		rdp_err_set(ENOENT, "unknown driver '%.*s' (built-in drivers: %s)",
			    (int)name_len, spec, names);
		return NULL;
	}
	dev = calloc(1, sizeof(*dev) + drv->dev_priv_size);
	if (dev == NULL) {
		rdp_err_set(ENOMEM, "driver %s: out of memory", drv->name);
		return NULL;
	}
	dev->drv = drv;
	snprintf(dev->spec, sizeof(dev->spec), "%s", spec);
	dev->priv = drv->dev_priv_size ? (void *)(dev + 1) : NULL;
	ret = drv->ops->dev_open(dev, args);
	if (ret < 0) {
		free(dev);
		rte_errno = -ret;
		return NULL;
	}
	return dev;
}

int
rdp_dev_close(struct rdp_dev *dev)
{
	if (dev == NULL)
		return 0;
	if (__atomic_load_n(&dev->nb_objects, __ATOMIC_ACQUIRE) > 0)
		return rdp_err_set(EBUSY, "device %s still has %u objects",
				   dev->spec, __atomic_load_n(&dev->nb_objects, __ATOMIC_RELAXED));
	if (dev->drv->ops->dev_close != NULL)
		dev->drv->ops->dev_close(dev);
	free(dev);
	return 0;
}

static int
not_supported(const struct rdp_dev *dev, const char *op)
{
	return rdp_err_set(ENOTSUP, "driver %s does not support %s", dev->drv->name, op);
}

/* Call a slow-path op returning int, or -ENOTSUP when the driver lacks it. */
#define CALL_OP(dev, op, ...) \
	((dev)->drv->ops->op != NULL ? (dev)->drv->ops->op(__VA_ARGS__) : \
	 not_supported((dev), #op))

int
rdp_dev_query(struct rdp_dev *dev, struct rdp_dev_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	return CALL_OP(dev, dev_query, dev, attr);
}

int
rdp_dev_stats_get(struct rdp_dev *dev, struct rdp_dev_stats *stats)
{
	memset(stats, 0, sizeof(*stats));
	return CALL_OP(dev, stats_get, dev, stats);
}

int
rdp_dev_owns_addr(struct rdp_dev *dev, const struct sockaddr *addr)
{
	if (addr == NULL || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return 0;
	return CALL_OP(dev, owns_addr, dev, addr);
}

int
rdp_dev_event_fd(struct rdp_dev *dev)
{
	return CALL_OP(dev, event_fd, dev);
}

int
rdp_dev_event_get(struct rdp_dev *dev, struct rdp_event *ev)
{
	return CALL_OP(dev, event_get, dev, ev);
}

/* Constructors: NULL op -> NULL with rte_errno ENOTSUP; count what lives. */
/* Objects of one device are made and destroyed on several threads. */
static void *
created(struct rdp_dev *dev, void *obj)
{
	if (obj != NULL)
		__atomic_fetch_add(&dev->nb_objects, 1, __ATOMIC_RELAXED);
	return obj;
}

static int
destroyed(struct rdp_dev *dev, int ret)
{
	if (ret == 0)
		__atomic_fetch_sub(&dev->nb_objects, 1, __ATOMIC_RELAXED);
	return ret;
}

/* A constructor: NULL with the -ENOTSUP detail when the driver lacks op. */
#define CREATE_OP(dev, op, ...) \
	((dev)->drv->ops->op != NULL ? created((dev), (dev)->drv->ops->op(__VA_ARGS__)) : \
	 (not_supported((dev), #op), NULL))

/* A destructor, whose op frees obj (so its device is read first); NULL is a no-op. */
#define DESTROY_OP(obj, dev_of_obj, op) \
	__extension__({ \
		int ret_ = 0; \
		if ((obj) != NULL) { \
			struct rdp_dev *dev_ = (dev_of_obj); \
			ret_ = destroyed(dev_, CALL_OP(dev_, op, (obj))); \
		} \
		ret_; \
	})

/* A driver made an object without its fast path (already destroyed): refuse it. */
static void *
no_fast_path(const struct rdp_dev *dev, const char *what)
{
	DEV_LOG(ERR, "driver %s created a %s without fast path", dev->drv->name, what);
	rdp_err_set(EFAULT, "driver %s: %s without fast path", dev->drv->name, what);
	return NULL;
}

struct rdp_pd *
rdp_pd_alloc(struct rdp_dev *dev)
{
	return CREATE_OP(dev, pd_alloc, dev);
}

int
rdp_pd_free(struct rdp_pd *pd)
{
	return DESTROY_OP(pd, pd->dev, pd_free);
}

struct rdp_mr *
rdp_mr_alloc(struct rdp_pd *pd, size_t len, int socket, unsigned int access)
{
	const unsigned int pages = RDP_ALLOC_HUGE_TRY | RDP_ALLOC_HUGE_ONLY;
	size_t base = (size_t)sysconf(_SC_PAGESIZE), huge;
	unsigned int flags = access & pages;
	struct rdp_dev *dev = pd->dev;
	struct rdp_mr *mr;

	access &= ~pages;
	if (len == 0 || flags == pages) {
		rdp_err_set(EINVAL, "rdp_mr_alloc: %s", len == 0 ? "length 0" :
			    "RDP_ALLOC_HUGE_TRY and RDP_ALLOC_HUGE_ONLY together");
		return NULL;
	}
	if (flags == 0)
		return CREATE_OP(dev, mr_alloc, pd, len, socket, access, base);
	huge = rdp_hugepage_size();
	if (huge == 0 || (flags == RDP_ALLOC_HUGE_TRY && len < huge / 2)) {
		if (flags == RDP_ALLOC_HUGE_TRY)
			return CREATE_OP(dev, mr_alloc, pd, len, socket, access, base);
		rdp_err_set(ENOMEM, "rdp_mr_alloc: %zu bytes on hugepages: this kernel has "
			    "no hugepages", len);
		return NULL;
	}
	mr = CREATE_OP(dev, mr_alloc, pd, len, socket, access, huge);
	if (mr != NULL || rte_errno != ENOMEM)
		return mr;
	if (flags == RDP_ALLOC_HUGE_ONLY) {
		rdp_err_set(ENOMEM, "%zu bytes on hugepages: it needs %zu x %zu KiB, %ld free "
			    "(/proc/sys/vm/nr_hugepages reserves more): %s", len,
			    (len + huge - 1) / huge, huge >> 10, rdp_hugepages_free(), rdp_err_msg());
		return NULL;
	}
	return CREATE_OP(dev, mr_alloc, pd, len, socket, access, base);
}

struct rdp_mr *
rdp_mr_reg(struct rdp_pd *pd, void *addr, size_t len, unsigned int access)
{
	struct rdp_dev *dev = pd->dev;

	if (addr == NULL || len == 0) {
		rdp_err_set(EINVAL, "rdp_mr_reg: empty region");
		return NULL;
	}
	return CREATE_OP(dev, mr_reg, pd, addr, len, access);
}

int
rdp_mr_free(struct rdp_mr *mr)
{
	return DESTROY_OP(mr, mr->pd->dev, mr_free);
}

struct rdp_cq *
rdp_cq_create(struct rdp_dev *dev, uint32_t cqe, int socket)
{
	struct rdp_cq *cq;

	if (cqe == 0) {
		rdp_err_set(EINVAL, "rdp_cq_create: capacity 0");
		return NULL;
	}
	cq = CREATE_OP(dev, cq_create, dev, cqe, socket);
	if (cq != NULL && cq->poll == NULL) {
		DESTROY_OP(cq, dev, cq_destroy);
		return no_fast_path(dev, "CQ");
	}
	return cq;
}

int
rdp_cq_resize(struct rdp_cq *cq, uint32_t cqe)
{
	if (cqe == 0)
		return rdp_err_set(EINVAL, "rdp_cq_resize: capacity 0");
	return CALL_OP(cq->dev, cq_resize, cq, cqe);
}

int
rdp_cq_destroy(struct rdp_cq *cq)
{
	return DESTROY_OP(cq, cq->dev, cq_destroy);
}

/* rdp_post_recv() on a QP that receives from an SRQ. */
static uint16_t
srq_qp_post_recv(struct rdp_qp *qp, const struct rdp_recv_wr *wr, uint16_t n, int *err)
{
	RTE_SET_USED(qp);
	RTE_SET_USED(wr);
	RTE_SET_USED(n);
	*err = -EINVAL;
	return 0;
}

/* A QP made with an SRQ: it counts as a user of it, and has no RQ to post to. */
static void
srq_attach(struct rdp_qp *qp, struct rdp_srq *srq)
{
	qp->srq = srq;
	qp->post_recv = srq_qp_post_recv;
	__atomic_fetch_add(&srq->nb_qps, 1, __ATOMIC_RELAXED);
}

struct rdp_qp *
rdp_qp_create(struct rdp_pd *pd, const struct rdp_qp_init_attr *attr)
{
	struct rdp_dev *dev = pd->dev;
	struct rdp_qp *qp;

	if (attr->send_cq == NULL || attr->recv_cq == NULL) {
		rdp_err_set(EINVAL, "rdp_qp_create: send_cq and recv_cq are required");
		return NULL;
	}
	if (attr->cap.max_send_wr == 0 || (attr->cap.max_recv_wr == 0 && attr->srq == NULL)) {
		rdp_err_set(EINVAL, "rdp_qp_create: max_send_wr and max_recv_wr must be >= 1");
		return NULL;
	}
	if (attr->srq != NULL && attr->srq->dev != dev) {
		rdp_err_set(EINVAL, "rdp_qp_create: the SRQ belongs to another device");
		return NULL;
	}
	qp = CREATE_OP(dev, qp_create, pd, attr);
	if (qp != NULL && (qp->post_send == NULL || qp->post_recv == NULL)) {
		DESTROY_OP(qp, dev, qp_destroy);
		return no_fast_path(dev, "QP");
	}
	if (qp != NULL && attr->srq != NULL)
		srq_attach(qp, attr->srq);
	return qp;
}

int
rdp_qp_modify(struct rdp_qp *qp, const struct rdp_qp_attr *attr, unsigned int mask)
{
	return CALL_OP(qp->dev, qp_modify, qp, attr, mask);
}

int
rdp_qp_modify_start(struct rdp_qp *qp, const struct rdp_qp_attr *attr, unsigned int mask,
		    int *fd)
{
	*fd = -1;
	if (qp->dev->drv->ops->qp_modify_start == NULL)
		return rdp_qp_modify(qp, attr, mask);
	return qp->dev->drv->ops->qp_modify_start(qp, attr, mask, fd);
}

int
rdp_qp_modify_poll(struct rdp_qp *qp)
{
	return CALL_OP(qp->dev, qp_modify_poll, qp);
}

void
rdp_qp_modify_abort(struct rdp_qp *qp)
{
	if (qp->dev->drv->ops->qp_modify_abort != NULL)
		qp->dev->drv->ops->qp_modify_abort(qp);
}

int
rdp_qp_query(struct rdp_qp *qp, struct rdp_qp_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	return CALL_OP(qp->dev, qp_query, qp, attr);
}

int
rdp_qp_local_addr(struct rdp_qp *qp, struct rdp_qp_addr *addr)
{
	memset(addr, 0, sizeof(*addr));
	return CALL_OP(qp->dev, qp_local_addr, qp, addr);
}

int
rdp_qp_connect(struct rdp_qp *qp, const struct rdp_qp_addr *remote,
	       const struct rdp_qp_conn_params *conn)
{
	struct rdp_qp_attr attr = { .remote = *remote, .conn = *conn };
	static const enum rdp_qp_state steps[] = { RDP_QPS_INIT, RDP_QPS_RTR, RDP_QPS_RTS };
	unsigned int i;
	int ret;

	for (i = 0; i < RTE_DIM(steps); i++) {
		unsigned int mask = RDP_QP_ATTR_STATE;

		attr.state = steps[i];
		if (steps[i] != RDP_QPS_INIT)
			mask |= RDP_QP_ATTR_REMOTE | RDP_QP_ATTR_CONN;
		ret = rdp_qp_modify(qp, &attr, mask);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int
rdp_qp_destroy(struct rdp_qp *qp)
{
	struct rdp_srq *srq = qp != NULL ? qp->srq : NULL;
	int ret = DESTROY_OP(qp, qp->dev, qp_destroy);

	if (ret == 0 && srq != NULL)
		__atomic_fetch_sub(&srq->nb_qps, 1, __ATOMIC_RELAXED);
	return ret;
}

struct rdp_srq *
rdp_srq_create(struct rdp_pd *pd, const struct rdp_srq_init_attr *attr)
{
	struct rdp_dev *dev = pd->dev;
	struct rdp_srq *srq;

	if (attr->max_wr == 0) {
		rdp_err_set(EINVAL, "rdp_srq_create: max_wr must be >= 1");
		return NULL;
	}
	if (attr->srq_limit > attr->max_wr) {
		rdp_err_set(EINVAL, "rdp_srq_create: srq_limit %u is above max_wr %u",
			    attr->srq_limit, attr->max_wr);
		return NULL;
	}
	srq = CREATE_OP(dev, srq_create, pd, attr);
	if (srq != NULL && srq->post_recv == NULL) {
		DESTROY_OP(srq, dev, srq_destroy);
		return no_fast_path(dev, "SRQ");
	}
	return srq;
}

int
rdp_srq_destroy(struct rdp_srq *srq)
{
	uint32_t users;

	if (srq == NULL)
		return 0;
	users = __atomic_load_n(&srq->nb_qps, __ATOMIC_ACQUIRE);
	if (users > 0)
		return rdp_err_set(EBUSY, "rdp_srq_destroy: %u QPs still receive from the SRQ",
				   users);
	return DESTROY_OP(srq, srq->dev, srq_destroy);
}

int
rdp_srq_modify_limit(struct rdp_srq *srq, uint32_t limit)
{
	if (limit > srq->max_wr)
		return rdp_err_set(EINVAL, "rdp_srq_modify_limit: limit %u is above max_wr %u",
				   limit, srq->max_wr);
	return CALL_OP(srq->dev, srq_modify_limit, srq, limit);
}

int
rdp_srq_query(struct rdp_srq *srq, struct rdp_srq_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	return CALL_OP(srq->dev, srq_query, srq, attr);
}

const char *
rdp_qp_state_str(unsigned int state)
{
	static const char *const names[] = {
		[RDP_QPS_RESET] = "RESET", [RDP_QPS_INIT] = "INIT", [RDP_QPS_RTR] = "RTR",
		[RDP_QPS_RTS] = "RTS", [RDP_QPS_ERR] = "ERR",
	};

	return state < RTE_DIM(names) ? names[state] : "UNKNOWN";
}

const char *
rdp_wc_status_str(unsigned int status)
{
	static const char *const names[] = {
		[RDP_WC_SUCCESS] = "SUCCESS",
		[RDP_WC_LOC_LEN_ERR] = "LOC_LEN_ERR",
		[RDP_WC_LOC_QP_OP_ERR] = "LOC_QP_OP_ERR",
		[RDP_WC_LOC_PROT_ERR] = "LOC_PROT_ERR",
		[RDP_WC_WR_FLUSH_ERR] = "WR_FLUSH_ERR",
		[RDP_WC_REM_INV_REQ_ERR] = "REM_INV_REQ_ERR",
		[RDP_WC_REM_ACCESS_ERR] = "REM_ACCESS_ERR",
		[RDP_WC_REM_OP_ERR] = "REM_OP_ERR",
		[RDP_WC_RETRY_EXC_ERR] = "RETRY_EXC_ERR",
		[RDP_WC_RNR_RETRY_EXC_ERR] = "RNR_RETRY_EXC_ERR",
		[RDP_WC_GENERAL_ERR] = "GENERAL_ERR",
	};

	return status < RTE_DIM(names) ? names[status] : "UNKNOWN";
}

/* ---------------------------------------------------------------------- */
/* Driver argument helpers                                                */
/* ---------------------------------------------------------------------- */

struct rte_kvargs *
rdp_drv_args_parse(const char *drv, const char *args, const char *const valid[])
{
	struct rte_kvargs *kv;
	char list[256] = "";
	size_t off = 0;
	unsigned int i, j;

	for (i = 0; valid[i] != NULL && off < sizeof(list); i++)
		off += snprintf(list + off, sizeof(list) - off, "%s%s", i ? ", " : "", valid[i]);
	kv = rte_kvargs_parse(args != NULL ? args : "", NULL);
	if (kv == NULL) {
		rdp_err_set(EINVAL, "driver %s: cannot parse arguments '%s' "
			    "(expected key=value,...; keys: %s)", drv, args, list);
		return NULL;
	}
	for (i = 0; i < kv->count; i++) {
		const char *key = kv->pairs[i].key;
		bool known = false;

		for (j = 0; valid[j] != NULL; j++)
			known = known || strcmp(valid[j], key) == 0;
		if (!known) {
			rdp_err_set(EINVAL, "driver %s: unknown argument '%s' (valid: %s)",
				    drv, key, list);
			rte_kvargs_free(kv);
			return NULL;
		}
		for (j = 0; j < i; j++) {
			if (strcmp(kv->pairs[j].key, key) == 0) {
				rdp_err_set(EINVAL, "driver %s: argument '%s' given twice", drv, key);
				rte_kvargs_free(kv);
				return NULL;
			}
		}
	}
	return kv;
}

static const char *
arg_value(struct rte_kvargs *kv, const char *key)
{
	unsigned int i;

	for (i = 0; kv != NULL && i < kv->count; i++)
		if (strcmp(kv->pairs[i].key, key) == 0)
			return kv->pairs[i].value != NULL ? kv->pairs[i].value : "";
	return NULL;
}

int
rdp_drv_arg_u64(const char *drv, struct rte_kvargs *kv, const char *key,
		uint64_t *val, uint64_t min, uint64_t max)
{
	const char *s = arg_value(kv, key);
	unsigned long long v;
	char *end;

	if (s == NULL)
		return 0;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (s[0] == '\0' || s[0] == '-' || *end != '\0' || errno != 0 || v < min || v > max)
		return rdp_err_set(EINVAL, "driver %s: argument %s=%s: expected an integer "
				   "in [%" PRIu64 ", %" PRIu64 "]", drv, key, s, min, max);
	*val = v;
	return 0;
}

int
rdp_drv_arg_str(const char *drv, struct rte_kvargs *kv, const char *key, char *val,
		size_t len)
{
	const char *s = arg_value(kv, key);

	if (s == NULL)
		return 0;
	if (strlen(s) >= len)
		return rdp_err_set(EINVAL, "driver %s: argument %s is longer than %zu characters",
				   drv, key, len - 1);
	memcpy(val, s, strlen(s) + 1);
	return 0;
}
