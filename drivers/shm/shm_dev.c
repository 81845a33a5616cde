/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shm device: driver arguments, memory regions (memfds), asynchronous
 * events, and the monitor thread that plays the NIC firmware: it accepts
 * rendezvous messages from peers, maps what they share and attaches it to
 * the target QP, and watches the peer sockets so that a peer process that
 * exits or is killed moves the survivor's QP to error within milliseconds.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <numa.h>

#include "shm_private.h"

RTE_LOG_REGISTER(shm_logtype, rdp.shm, INFO);

static unsigned int shm_instances;

/* ---------------------------------------------------------------------- */
/* Addressing: the GID names the device's abstract Unix socket            */
/* ---------------------------------------------------------------------- */

static socklen_t
gid_sockaddr(const uint8_t gid[RDP_GID_LEN], struct sockaddr_un *sa)
{
	static const char hex[] = "0123456789abcdef";
	char *p;
	int i;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	p = sa->sun_path + 1; /* abstract namespace: leading NUL */
	p += sprintf(p, "rdmaplane-shm-");
	for (i = 0; i < RDP_GID_LEN; i++) {
		*p++ = hex[gid[i] >> 4];
		*p++ = hex[gid[i] & 15];
	}
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (p - sa->sun_path));
}

/* ---------------------------------------------------------------------- */
/* Events                                                                 */
/* ---------------------------------------------------------------------- */

void
shm_event_push(struct shm_dev *sd, enum rdp_event_type type, struct rdp_qp *qp,
	       struct rdp_cq *cq)
{
	uint64_t one = 1;

	pthread_mutex_lock(&sd->ev_lock);
	if (sd->ev_tail - sd->ev_head < SHM_MAX_EVENTS) {
		sd->ev[sd->ev_tail++ % SHM_MAX_EVENTS] =
			(struct rdp_event){ .type = type, .qp = qp, .cq = cq };
	} else {
		sd->ev_lost++;
	}
	pthread_mutex_unlock(&sd->ev_lock);
	if (write(sd->ev_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		SHM_LOG(ERR, "event fd write: %s", strerror(errno));
}

void
shm_event_push_srq(struct shm_dev *sd, struct rdp_srq *srq)
{
	uint64_t one = 1;

	pthread_mutex_lock(&sd->ev_lock);
	if (sd->ev_tail - sd->ev_head < SHM_MAX_EVENTS)
		sd->ev[sd->ev_tail++ % SHM_MAX_EVENTS] =
			(struct rdp_event){ .type = RDP_EVENT_SRQ_LIMIT, .srq = srq };
	else
		sd->ev_lost++;
	pthread_mutex_unlock(&sd->ev_lock);
	if (write(sd->ev_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		SHM_LOG(ERR, "event fd write: %s", strerror(errno));
}

void
shm_event_forget_srq(struct shm_dev *sd, const struct rdp_srq *srq)
{
	uint64_t i;

	pthread_mutex_lock(&sd->ev_lock);
	for (i = sd->ev_head; i != sd->ev_tail; i++)
		if (sd->ev[i % SHM_MAX_EVENTS].srq == srq)
			sd->ev[i % SHM_MAX_EVENTS].srq = NULL;
	pthread_mutex_unlock(&sd->ev_lock);
}

void
shm_event_forget(struct shm_dev *sd, const struct rdp_qp *qp, const struct rdp_cq *cq)
{
	uint64_t i;

	/* an event read after its object is gone must not name it */
	pthread_mutex_lock(&sd->ev_lock);
	for (i = sd->ev_head; i != sd->ev_tail; i++) {
		struct rdp_event *ev = &sd->ev[i % SHM_MAX_EVENTS];

		if (qp != NULL && ev->qp == qp)
			ev->qp = NULL;
		if (cq != NULL && ev->cq == cq)
			ev->cq = NULL;
	}
	pthread_mutex_unlock(&sd->ev_lock);
}

static int
shm_event_fd(struct rdp_dev *dev)
{
	return to_sdev(dev)->ev_fd;
}

static int
shm_event_get(struct rdp_dev *dev, struct rdp_event *ev)
{
	struct shm_dev *sd = to_sdev(dev);
	uint64_t v;
	int ret = -EAGAIN;

	pthread_mutex_lock(&sd->ev_lock);
	if (sd->ev_head != sd->ev_tail) {
		*ev = sd->ev[sd->ev_head++ % SHM_MAX_EVENTS];
		ret = 0;
	}
	if (sd->ev_head == sd->ev_tail) {
		/* drain the eventfd so it polls readable only while events wait */
		if (read(sd->ev_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			SHM_LOG(ERR, "event fd read: %s", strerror(errno));
	}
	pthread_mutex_unlock(&sd->ev_lock);
	return ret;
}

/* ---------------------------------------------------------------------- */
/* Device                                                                 */
/* ---------------------------------------------------------------------- */

static const char *const shm_keys[] = {
	"cqe_order", "send_cqe_delay", "fail_after", "drop_peer", "grant_extra", "dup_send",
	"max_cqe", "device", "addr", "copy", NULL,
};

static int
parse_order(struct shm_dev *sd, const char *v)
{
	char *end;

	if (strcmp(v, "fifo") == 0) {
		sd->order = SHM_ORDER_FIFO;
	} else if (strcmp(v, "recv_first") == 0) {
		sd->order = SHM_ORDER_RECV_FIRST;
	} else if (strncmp(v, "random:", 7) == 0 && v[7] != '\0' && v[7] != '-') {
		errno = 0;
		sd->seed = strtoull(v + 7, &end, 0);
		if (*end != '\0' || errno != 0)
			goto bad;
		sd->order = SHM_ORDER_RANDOM;
	} else {
		goto bad;
	}
	return 0;
bad:
	return rdp_err_set(EINVAL, "driver shm: argument cqe_order=%s: expected fifo, "
			   "recv_first or random:<seed>", v);
}

/* addr=IP: the address the device's "interface" holds (rdp_dev_owns_addr()). */
static int
parse_addr(struct shm_dev *sd, const char *v)
{
	struct sockaddr_in *in = (struct sockaddr_in *)&sd->addr;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&sd->addr;

	memset(&sd->addr, 0, sizeof(sd->addr));
	if (inet_pton(AF_INET, v, &in->sin_addr) == 1)
		in->sin_family = AF_INET;
	else if (inet_pton(AF_INET6, v, &in6->sin6_addr) == 1)
		in6->sin6_family = AF_INET6;
	else
		return rdp_err_set(EINVAL, "driver shm: argument addr=%s: expected an IPv4 or "
				   "IPv6 address", v);
	sd->has_addr = true;
	return 0;
}

static int
shm_owns_addr(struct rdp_dev *dev, const struct sockaddr *sa)
{
	const struct shm_dev *sd = to_sdev(dev);

	if (!sd->has_addr)
		return -ENOTSUP;
	if (sa->sa_family != sd->addr.ss_family)
		return 0;
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)&sd->addr)->sin_addr.s_addr;
	return memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr,
		      &((const struct sockaddr_in6 *)&sd->addr)->sin6_addr,
		      sizeof(struct in6_addr)) == 0;
}

static int
parse_args(struct shm_dev *sd, const char *args)
{
	struct rte_kvargs *kv = rdp_drv_args_parse("shm", args, shm_keys);
	char order[64] = "fifo", addr[64] = "", copy[16] = "auto";
	uint64_t delay = 0, extra = 0, dup = 0, max_cqe = SHM_MAX_CQE;
	int ret;

	if (kv == NULL)
		return -EINVAL;
	ret = rdp_drv_arg_str("shm", kv, "cqe_order", order, sizeof(order));
	if (ret == 0)
		ret = parse_order(sd, order);
	if (ret == 0)
		ret = rdp_drv_arg_u64("shm", kv, "send_cqe_delay", &delay, 0, 1000000);
	if (ret == 0)
		ret = rdp_drv_arg_u64("shm", kv, "fail_after", &sd->fail_after, 1, UINT64_MAX);
	if (ret == 0)
		ret = rdp_drv_arg_u64("shm", kv, "drop_peer", &sd->drop_peer, 1, UINT64_MAX);
	if (ret == 0)
		ret = rdp_drv_arg_u64("shm", kv, "grant_extra", &extra, 0, 4096);
	if (ret == 0)
		ret = rdp_drv_arg_u64("shm", kv, "dup_send", &dup, 1, UINT32_MAX);
	if (ret == 0)
		ret = rdp_drv_arg_u64("shm", kv, "max_cqe", &max_cqe, 1, SHM_MAX_CQE);
	if (ret == 0)
		ret = rdp_drv_arg_str("shm", kv, "device", sd->name, sizeof(sd->name));
	if (ret == 0)
		ret = rdp_drv_arg_str("shm", kv, "addr", addr, sizeof(addr));
	if (ret == 0 && addr[0] != '\0')
		ret = parse_addr(sd, addr);
	if (ret == 0)
		ret = rdp_drv_arg_str("shm", kv, "copy", copy, sizeof(copy));
	if (ret == 0)
		ret = shm_copy_choose(sd, copy);
	rte_kvargs_free(kv);
	sd->dup_send = (uint32_t)dup;
	sd->delay = (uint32_t)delay;
	sd->grant_extra = (uint32_t)extra;
	sd->max_cqe = (uint32_t)max_cqe;
	return ret;
}

static void
keys_free(struct shm_dev *sd)
{
	if (sd->keys != NULL)
		munmap(sd->keys, shm_key_seg_size());
	if (sd->keys_fd >= 0)
		close(sd->keys_fd);
	sd->keys = NULL;
	sd->keys_fd = -1;
}

static int
shm_dev_open(struct rdp_dev *dev, const char *args)
{
	struct shm_dev *sd = to_sdev(dev);
	struct sockaddr_un sa;
	uint32_t pid = (uint32_t)getpid();
	socklen_t salen;
	unsigned int i;
	int ret;

	sd->dev = dev;
	sd->lfd = sd->epfd = sd->ctl_fd = sd->ev_fd = sd->keys_fd = sd->spare_fd = -1;
	/* an empty link has no descriptor: 0 is one (stdin, or anything once it is closed) */
	for (i = 0; i < SHM_MAX_LINKS; i++)
		sd->links[i].fd = -1;
	ret = parse_args(sd, args);
	if (ret < 0)
		return ret;
	sd->instance = __atomic_fetch_add(&shm_instances, 1, __ATOMIC_RELAXED);
	pthread_mutex_init(&sd->lock, NULL);
	pthread_mutex_init(&sd->ev_lock, NULL);
	pthread_mutex_init(&sd->map_lock, NULL);
	for (i = 0; i < SHM_MAP_BUCKETS; i++)
		TAILQ_INIT(&sd->maps[i]);
	TAILQ_INIT(&sd->qps);
	TAILQ_INIT(&sd->cqs);
	TAILQ_INIT(&sd->srqs);
	sd->next_qpn = 1;
	memcpy(&sd->gid[0], &pid, 4);
	memcpy(&sd->gid[4], &sd->instance, 4);
	if (getrandom(&sd->gid[8], 8, 0) != 8)
		return rdp_err_set(EIO, "driver shm: getrandom: %s", strerror(errno));
	sd->ev_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (sd->ev_fd < 0)
		return rdp_err_set(ENOMEM, "driver shm: eventfd: %s", strerror(errno));
	sd->keys = shm_seg_create("rdp-shm-keys", shm_key_seg_size(), &sd->keys_fd);
	if (sd->keys == NULL) {
		ret = rdp_err_set(ENOMEM, "driver shm: key table: %s", strerror(errno));
		goto fail;
	}
	sd->keys->magic = SHM_KEYS_MAGIC;
	sd->keys->version = SHM_VERSION;
	sd->keys->pid = (int32_t)pid;
	sd->keys->nb_keys = SHM_MAX_MR;
	sd->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	sd->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (sd->lfd < 0) {
		ret = rdp_err_set(ENODEV, "driver shm: socket: %s", strerror(errno));
		goto fail;
	}
	salen = gid_sockaddr(sd->gid, &sa);
	if (bind(sd->lfd, (struct sockaddr *)&sa, salen) < 0 || listen(sd->lfd, 64) < 0) {
		ret = rdp_err_set(ENODEV, "driver shm: cannot listen on its rendezvous socket: %s",
				  strerror(errno));
		goto fail;
	}
	ret = shm_monitor_start(sd);
	if (ret < 0)
		goto fail;
	return 0;
fail:
	if (sd->lfd >= 0)
		close(sd->lfd);
	if (sd->spare_fd >= 0)
		close(sd->spare_fd);
	keys_free(sd);
	close(sd->ev_fd);
	return ret;
}

static void
shm_dev_close(struct rdp_dev *dev)
{
	struct shm_dev *sd = to_sdev(dev);
	unsigned int i;

	shm_monitor_stop(sd);
	for (i = 0; i < SHM_MAX_LINKS; i++)
		if (sd->links[i].fd >= 0)
			close(sd->links[i].fd);
	close(sd->lfd);
	if (sd->spare_fd >= 0)
		close(sd->spare_fd);
	keys_free(sd);
	close(sd->ev_fd);
	pthread_mutex_destroy(&sd->lock);
	pthread_mutex_destroy(&sd->ev_lock);
	pthread_mutex_destroy(&sd->map_lock);
}

static int
shm_dev_query(struct rdp_dev *dev, struct rdp_dev_attr *attr)
{
	struct shm_dev *sd = to_sdev(dev);

	snprintf(attr->driver, sizeof(attr->driver), "shm");
	if (sd->name[0] != '\0')
		snprintf(attr->name, sizeof(attr->name), "%s", sd->name);
	else
		snprintf(attr->name, sizeof(attr->name), "shm%u", sd->instance);
	attr->max_qp_wr = SHM_MAX_WR;
	attr->max_sge = SHM_MAX_SGE;
	attr->max_cqe = sd->max_cqe;
	attr->max_inline_data = SHM_MAX_INLINE;
	attr->max_qp_rd_atom = SHM_MAX_RD_ATOM;
	attr->max_qp_init_rd_atom = SHM_MAX_RD_ATOM;
	attr->port = 1;
	attr->link_layer = RDP_LINK_SHM;
	attr->port_active = !__atomic_load_n(&sd->link_down, __ATOMIC_RELAXED);
	attr->gid_index = 0;
	memcpy(attr->gid, sd->gid, RDP_GID_LEN);
	attr->active_mtu = SHM_MTU;
	attr->numa_node = -1;
	attr->fds_per_qp = SHM_FDS_PER_QP;
	attr->max_srq_wr = SHM_MAX_WR;
	attr->max_srq_sge = SHM_MAX_SGE;
	attr->onesided_by_cpu = 1;
	return 0;
}

static void
add_qp_stats(struct rdp_dev_stats *s, const struct shm_qp *qp)
{
	s->send_posted += RDP_STAT_READ(qp->st_send_posted);
	s->recv_posted += RDP_STAT_READ(qp->st_recv_posted);
	s->enomem += RDP_STAT_READ(qp->st_enomem);
	s->rnr += RDP_STAT_READ(qp->st_rnr);
	s->rdma_syscalls += RDP_STAT_READ(qp->st_rdma_syscalls);
}

static void
add_cq_stats(struct rdp_dev_stats *s, const struct shm_cq *cq)
{
	s->completions += RDP_STAT_READ(cq->st_completions);
	s->flushed += RDP_STAT_READ(cq->st_flushed);
	s->errors += RDP_STAT_READ(cq->st_errors);
	s->cq_overruns += RDP_STAT_READ(cq->st_overruns);
}

void
shm_stats_retire_qp(struct shm_dev *sd, const struct shm_qp *qp)
{
	add_qp_stats(&sd->retired, qp);
}

void
shm_stats_retire_cq(struct shm_dev *sd, const struct shm_cq *cq)
{
	add_cq_stats(&sd->retired, cq);
}

void
shm_stats_retire_srq(struct shm_dev *sd, const struct shm_srq *srq)
{
	sd->retired.recv_posted += RDP_STAT_READ(srq->st_recv_posted);
}

static int
shm_stats_get(struct rdp_dev *dev, struct rdp_dev_stats *st)
{
	struct shm_dev *sd = to_sdev(dev);
	const struct shm_qp *qp;
	const struct shm_cq *cq;
	const struct shm_srq *srq;

	pthread_mutex_lock(&sd->lock);
	*st = sd->retired;
	TAILQ_FOREACH(srq, &sd->srqs, next)
		st->recv_posted += RDP_STAT_READ(srq->st_recv_posted);
	TAILQ_FOREACH(qp, &sd->qps, next)
		add_qp_stats(st, qp);
	TAILQ_FOREACH(cq, &sd->cqs, next)
		add_cq_stats(st, cq);
	pthread_mutex_unlock(&sd->lock);
	return 0;
}

static int
shm_probe(char *spec, size_t len, char *why, size_t why_len)
{
	snprintf(spec, len, "shm");
	snprintf(why, why_len, "using the shm driver (shared memory, this host only)");
	return 0;
}

/* ---------------------------------------------------------------------- */
/* PD and MR                                                              */
/* ---------------------------------------------------------------------- */

static struct rdp_pd *
shm_pd_alloc(struct rdp_dev *dev)
{
	struct rdp_pd *pd = calloc(1, sizeof(*pd));

	if (pd == NULL) {
		rdp_err_set(ENOMEM, "driver shm: out of memory");
		return NULL;
	}
	pd->dev = dev;
	return pd;
}

static int
shm_pd_free(struct rdp_pd *pd)
{
	free(pd);
	return 0;
}

static struct shm_mr *
mr_new(struct rdp_pd *pd, unsigned int access)
{
	struct shm_mr *mr = calloc(1, sizeof(*mr));

	if (mr == NULL) {
		rdp_err_set(ENOMEM, "driver shm: out of memory");
		return NULL;
	}
	mr->memfd = -1;
	mr->head.pd = pd;
	mr->head.access = access;
	return mr;
}

/*
 * Give @p mr an id and its key. The ids of allocated MRs are never reused:
 * a peer maps them by id when it connects, and a receive names its buffer
 * by id. Memory the application registers (@p reg) is never mapped by a
 * peer, which reaches it through the key table, so its ids are taken again
 * once freed, under a key of the next generation: a peer's WR with the old
 * key fails the key check as any stale key does.
 */
static int
mr_publish(struct shm_dev *sd, struct shm_mr *mr, bool reg)
{
	static const uint32_t none = UINT32_MAX;
	uint32_t id = none, key = 0;

	pthread_mutex_lock(&sd->lock);
	if (reg && sd->nb_reg_free > 0) {
		id = sd->reg_free[--sd->nb_reg_free];
		do	/* 0 is no key */
			key = shm_key(id, ++sd->mr_gen[id]);
		while (key == 0);
	} else if (sd->next_mr_id < SHM_MAX_MR) {
		id = sd->next_mr_id++;
		key = shm_lkey(id);
	}
	if (id != none) {
		mr->id = id;
		mr->head.lkey = mr->head.rkey = key;
		__atomic_store_n(&sd->mrs[id], mr, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&sd->lock);
	if (id == none)
		return rdp_err_set(ENOMEM, "driver shm: device %s has given out its %u MR ids (an "
				   "rdp_mr_alloc() MR does not give its id back)", sd->dev->spec,
				   SHM_MAX_MR);
	return 0;
}

/*
 * An MR with remote access goes into the key table, whatever memory it is:
 * the table is how every peer checks that the MR still exists, and how a
 * peer that has no mapping of it (rdp_mr_reg() memory, or a memfd made
 * after the peer connected) reaches it with process_vm_readv/writev.
 */
static void
key_publish(struct shm_dev *sd, const struct shm_mr *mr)
{
	struct shm_key *k = &sd->keys->key[mr->id];

	if (!shm_mr_remote(mr))
		return;
	/*
	 * The slot's key was cleared when its last MR went (shm_mr_free()): a
	 * peer that reads any of the new fields then reads that cleared key,
	 * or this one, when it looks at the key again (exec_foreign()).
	 */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&k->access, mr->head.access, __ATOMIC_RELAXED);
	__atomic_store_n(&k->addr, (uintptr_t)mr->head.addr, __ATOMIC_RELAXED);
	__atomic_store_n(&k->length, mr->head.length, __ATOMIC_RELAXED);
	__atomic_store_n(&k->rkey, mr->head.rkey, __ATOMIC_RELEASE);
}

/*
 * Memory a peer maps: a memfd, on hugetlbfs when @p page_size is a
 * hugepage (the reservation is taken at mmap, so a shortage is ENOMEM here
 * and never a SIGBUS later; peers mapping it take no more pages).
 */
static struct rdp_mr *
shm_mr_alloc(struct rdp_pd *pd, size_t len, int socket, unsigned int access,
	     size_t page_size)
{
	struct shm_dev *sd = to_sdev(pd->dev);
	size_t map_len = RTE_ALIGN_CEIL(len, page_size);
	bool huge = page_size > (size_t)sysconf(_SC_PAGESIZE);
	struct shm_mr *mr;
	void *p;

	mr = mr_new(pd, access);
	if (mr == NULL)
		return NULL;
	mr->memfd = memfd_create(huge ? "rdp-shm-mr-huge" : "rdp-shm-mr", MFD_CLOEXEC |
				 MFD_ALLOW_SEALING | (huge ? MFD_HUGETLB : 0));
	if (mr->memfd < 0) {
		rdp_err_set(ENOMEM, "driver shm: memfd_create%s: %s", huge ? " (hugetlb)" : "",
			    strerror(errno));
		goto fail;
	}
	if (ftruncate(mr->memfd, (off_t)map_len) < 0 || shm_seal(mr->memfd) < 0) {
		rdp_err_set(ENOMEM, "driver shm: cannot size a %zu-byte MR: %s", map_len,
			    strerror(errno));
		goto fail;
	}
	p = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, mr->memfd, 0);
	if (p == MAP_FAILED) {
		rdp_err_set(ENOMEM, "driver shm: cannot map a %zu-byte MR%s: %s", map_len,
			    huge ? " on hugepages" : "", strerror(errno));
		goto fail;
	}
	if (socket >= 0 && numa_available() >= 0 && socket <= numa_max_node())
		numa_tonode_memory(p, map_len, socket);
	mr->map_len = map_len;
	mr->head.addr = p;
	mr->head.length = len;
	mr->head.page_size = page_size;
	if (mr_publish(sd, mr, false) < 0) {
		munmap(p, map_len);
		goto fail;
	}
	key_publish(sd, mr);
	return &mr->head;
fail:
	if (mr->memfd >= 0)
		close(mr->memfd);
	free(mr);
	return NULL;
}

/*
 * Memory the application owns: reached by peers through the key table
 * (process_vm_readv/writev), any address, any alignment. It can be a
 * WRITE target or a READ source; a SEND cannot land in it (a receive needs
 * memory the peer maps).
 */
static struct rdp_mr *
shm_mr_reg(struct rdp_pd *pd, void *addr, size_t len, unsigned int access)
{
	struct shm_dev *sd = to_sdev(pd->dev);
	struct shm_mr *mr;

	mr = mr_new(pd, access);
	if (mr == NULL)
		return NULL;
	mr->head.addr = addr;
	mr->head.length = len;
	if (mr_publish(sd, mr, true) < 0) {
		free(mr);
		return NULL;
	}
	key_publish(sd, mr);
	return &mr->head;
}

static int
shm_mr_free(struct rdp_mr *m)
{
	struct shm_mr *mr = to_smr(m);
	struct shm_dev *sd = to_sdev(m->pd->dev);

	/* peers stop finding it before it goes */
	__atomic_store_n(&sd->keys->key[mr->id].rkey, 0, __ATOMIC_RELEASE);
	pthread_mutex_lock(&sd->lock);
	__atomic_store_n(&sd->mrs[mr->id], NULL, __ATOMIC_RELEASE);
	if (mr->memfd < 0)	/* rdp_mr_reg() memory: its id may serve again (mr_publish()) */
		sd->reg_free[sd->nb_reg_free++] = mr->id;
	pthread_mutex_unlock(&sd->lock);
	if (mr->memfd >= 0) {
		munmap(m->addr, mr->map_len);
		close(mr->memfd);
	}
	free(mr);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Rendezvous: connect side                                               */
/* ---------------------------------------------------------------------- */

static int
link_add_locked(struct shm_dev *sd, int fd, struct shm_qp *qp)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
	unsigned int i;

	for (i = 0; i < SHM_MAX_LINKS; i++)
		if (sd->links[i].fd < 0)
			break;
	if (i == SHM_MAX_LINKS)
		return -ENOSPC;
	sd->links[i].fd = fd;
	sd->links[i].qp = qp;
	sd->links[i].gen++;
	ev.data.u64 = (uint64_t)sd->links[i].gen << 32 | i;
	if (epoll_ctl(sd->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		sd->links[i].fd = -1;
		return -errno;
	}
	return 0;
}

static void
link_drop_locked(struct shm_dev *sd, unsigned int i)
{
	epoll_ctl(sd->epfd, EPOLL_CTL_DEL, sd->links[i].fd, NULL);
	close(sd->links[i].fd);
	sd->links[i].fd = -1;
	sd->links[i].qp = NULL;
	sd->links[i].gen++;
}

void
shm_links_close(struct shm_dev *sd, struct shm_qp *qp)
{
	unsigned int i;

	pthread_mutex_lock(&sd->lock);
	for (i = 0; i < SHM_MAX_LINKS; i++)
		if (sd->links[i].fd >= 0 && sd->links[i].qp == qp)
			link_drop_locked(sd, i);
	pthread_mutex_unlock(&sd->lock);
}

/*
 * What the peer of @p qp maps at the rendezvous, memfds of the QP's PD
 * only. HELLO_RECV: the QP's peer_mrs (or every receive MR when it has no
 * list), which receives need. HELLO_REMOTE: the other MRs with remote
 * access, which their owner opened to all its peers (the key table names
 * them anyway), so that a WRITE or a READ into one is a memcpy; as many
 * as a rendezvous carries, the rest reached through the key table.
 */
enum hello_pass { HELLO_RECV, HELLO_REMOTE };

static bool
hello_shares(const struct shm_qp *qp, const struct shm_mr *mr, enum hello_pass pass)
{
	bool recv;

	if (mr == NULL || mr->memfd < 0 || mr->head.pd != qp->head.pd)
		return false;
	recv = shm_peer_mr_ok(qp, mr->id);
	return pass == HELLO_RECV ? recv : !recv && shm_mr_remote(mr);
}

/* Add the MRs of one pass to a hello (device lock held); -E2BIG when receive MRs do not fit. */
static int
hello_add_mrs(const struct shm_qp *qp, enum hello_pass pass, uint32_t limit,
	      struct shm_hello *h, int *fds, uint32_t *nfd)
{
	const struct shm_dev *sd = qp->sd;
	uint32_t i;

	for (i = 0; i < limit; i++) {
		const struct shm_mr *mr = sd->mrs[i];

		if (!hello_shares(qp, mr, pass))
			continue;
		if (*nfd == SHM_MAX_FDS) {
			if (pass == HELLO_REMOTE)
				return 0;
			return rdp_err_set(E2BIG, "driver shm: QP %u: more than %u receive MRs "
					   "in its PD", qp->head.qp_num, SHM_MAX_FDS - 3);
		}
		h->mr[h->nb_mr++] = (struct shm_hello_mr){
			.id = mr->id, .rkey = mr->head.rkey, .access = mr->head.access,
			.addr = (uintptr_t)mr->head.addr, .length = mr->head.length,
		};
		fds[(*nfd)++] = mr->memfd;
	}
	return 0;
}

/* The refusal waiting on rendezvous socket @p fd: -errno, its reason set; else 0. */
static int
refusal_read(int fd, const struct shm_qp *qp, uint32_t dst)
{
	struct shm_reply reply;

	memset(&reply, 0, sizeof(reply));
	if (recv(fd, &reply, sizeof(reply), MSG_DONTWAIT) != (ssize_t)sizeof(reply) ||
	    reply.magic != SHM_HELLO_MAGIC || reply.status == 0)
		return 0;
	reply.msg[sizeof(reply.msg) - 1] = '\0';
	return rdp_err_set(reply.status < 0 && reply.status > -4096 ? -reply.status : EPROTO,
			   "driver shm: QP %u -> peer QP %u refused: %s", qp->head.qp_num, dst,
			   reply.msg);
}

/*
 * Send our receive side to the peer's device: its monitor attaches it and
 * answers, with the MRs hello_shares() names that exist now (later ones
 * the peer reaches through the key table). The answer comes on the socket
 * left in qp->connect_fd (shm_connect_poll()).
 */
int
shm_connect_start(struct shm_qp *qp, const struct rdp_qp_addr *remote)
{
	struct shm_dev *sd = qp->sd;
	union {
		char buf[CMSG_SPACE(sizeof(int) * SHM_MAX_FDS)];
		struct cmsghdr align;
	} cbuf;
	size_t hlen = sizeof(struct shm_hello) + SHM_MAX_FDS * sizeof(struct shm_hello_mr);
	struct shm_hello *h = calloc(1, hlen);
	int *fds = calloc(SHM_MAX_FDS, sizeof(int));
	struct sockaddr_un sa;
	struct msghdr msg = { 0 };
	struct cmsghdr *cm;
	struct iovec iov;
	uint32_t nfd = 0, limit;
	socklen_t salen;
	int fd = -1, ret, err = 0;
	ssize_t sent;

	if (h == NULL || fds == NULL) {
		ret = rdp_err_set(ENOMEM, "driver shm: out of memory");
		goto out;
	}
	h->magic = SHM_HELLO_MAGIC;
	h->version = SHM_VERSION;
	h->src_qpn = qp->head.qp_num;
	h->dst_qpn = remote->qpn;
	h->bell_word = qp->rslot;
	fds[nfd++] = qp->memfd;
	fds[nfd++] = qp->rcq->memfd;
	fds[nfd++] = sd->keys_fd;
	if (qp->srq != NULL) {
		h->srq = 1;
		fds[nfd++] = qp->srq->memfd;
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = rdp_err_set(errno == EMFILE || errno == ENFILE ? EMFILE : EIO,
				  "driver shm: socket: %s", strerror(errno));
		goto out;
	}
	salen = gid_sockaddr(remote->gid, &sa);
	if (connect(fd, (struct sockaddr *)&sa, salen) < 0) {
		ret = rdp_err_set(ECONNREFUSED, "driver shm: QP %u: no shm device answers at the "
				  "peer address (qpn %u): %s", qp->head.qp_num, remote->qpn,
				  strerror(errno));
		goto out;
	}
	/*
	 * The MRs are named and sent under the device lock: an MR freed
	 * meanwhile (its descriptor closed, the number free for reuse) would
	 * otherwise go out as a closed descriptor or as another file. The send
	 * never waits: one message into a fresh connection.
	 */
	pthread_mutex_lock(&sd->lock);
	limit = sd->next_mr_id;
	/* what the SRQ may hold from now on: MRs this peer maps */
	if (qp->srq != NULL)
		shm_srq_mr_limit(qp->srq, limit);
	ret = hello_add_mrs(qp, HELLO_RECV, limit, h, fds, &nfd);
	if (ret == 0)
		ret = hello_add_mrs(qp, HELLO_REMOTE, limit, h, fds, &nfd);
	if (ret == 0) {
		iov.iov_base = h;
		iov.iov_len = sizeof(*h) + h->nb_mr * sizeof(h->mr[0]);
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		/* CMSG_SPACE pads to 8 bytes: an odd fd count leaves padding to clear */
		memset(&cbuf, 0, sizeof(cbuf));
		msg.msg_control = cbuf.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfd);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfd);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfd);
		sent = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		err = sent < 0 ? errno : 0;
	}
	pthread_mutex_unlock(&sd->lock);
	if (ret < 0)
		goto out;
	qp->mr_limit = limit;
	if (err != 0) {
		/* a device that refused us before the hello came said why */
		ret = refusal_read(fd, qp, remote->qpn);
		if (ret == 0)
			ret = rdp_err_set(EIO, "driver shm: QP %u: rendezvous send: %s",
					  qp->head.qp_num, strerror(err));
		goto out;
	}
	qp->connect_fd = fd;
	qp->connect_dst = remote->qpn;
	fd = -1;
	ret = -EINPROGRESS;
out:
	if (fd >= 0)
		close(fd);
	free(h);
	free(fds);
	return ret;
}

int
shm_connect_poll(struct shm_qp *qp)
{
	struct shm_dev *sd = qp->sd;
	struct shm_reply reply;
	ssize_t r;
	int ret;

	memset(&reply, 0, sizeof(reply));
	r = recv(qp->connect_fd, &reply, sizeof(reply), MSG_DONTWAIT);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return -EINPROGRESS;
	/* closed before it read our hello, the device may have said why first */
	if (r < 0 && errno == ECONNRESET) {
		ret = refusal_read(qp->connect_fd, qp, qp->connect_dst);
		if (ret < 0)
			goto fail;
	}
	if (r != (ssize_t)sizeof(reply) || reply.magic != SHM_HELLO_MAGIC) {
		ret = rdp_err_set(ECONNRESET, "driver shm: QP %u: the peer device closed the "
				  "rendezvous", qp->head.qp_num);
		goto fail;
	}
	if (reply.status != 0) {
		reply.msg[sizeof(reply.msg) - 1] = '\0';
		ret = rdp_err_set(reply.status < 0 && reply.status > -4096 ? -reply.status : EPROTO,
				  "driver shm: QP %u -> peer QP %u refused: %s", qp->head.qp_num,
				  qp->connect_dst, reply.msg);
		goto fail;
	}
	/* watch the socket: if the peer goes away, so does this QP */
	pthread_mutex_lock(&sd->lock);
	ret = link_add_locked(sd, qp->connect_fd, qp);
	pthread_mutex_unlock(&sd->lock);
	if (ret < 0) {
		ret = rdp_err_set(-ret, "driver shm: cannot watch the peer link: %s",
				  strerror(-ret));
		goto fail;
	}
	qp->connect_fd = -1;
	return 0;
fail:
	shm_connect_abort(qp);
	return ret;
}

void
shm_connect_abort(struct shm_qp *qp)
{
	if (qp->connect_fd >= 0)
		close(qp->connect_fd);
	qp->connect_fd = -1;
}

/* The blocking rendezvous (rdp_qp_modify()): start it, wait up to 5 s for the answer. */
int
shm_connect(struct shm_qp *qp, const struct rdp_qp_addr *remote)
{
	struct pollfd pfd;
	int ret = shm_connect_start(qp, remote);

	if (ret != -EINPROGRESS)
		return ret;
	pfd = (struct pollfd){ .fd = qp->connect_fd, .events = POLLIN };
	if (poll(&pfd, 1, 5000) <= 0) {
		shm_connect_abort(qp);
		return rdp_err_set(ETIMEDOUT, "driver shm: QP %u: the peer device did not answer "
				   "the rendezvous within 5 s", qp->head.qp_num);
	}
	return shm_connect_poll(qp);
}

/* ---------------------------------------------------------------------- */
/* Rendezvous: monitor side                                               */
/* ---------------------------------------------------------------------- */

/* Let go of a mapping map_fd() gave (the last user unmaps it). */
static void
map_put(struct shm_dev *sd, struct shm_map *m)
{
	if (m == NULL)
		return;
	pthread_mutex_lock(&sd->map_lock);
	if (--m->refs == 0) {
		TAILQ_REMOVE(&sd->maps[m->ino % SHM_MAP_BUCKETS], m, next);
		munmap(m->addr, m->len);
		free(m);
	}
	pthread_mutex_unlock(&sd->map_lock);
}

void
shm_peer_unmap(struct shm_dev *sd, struct shm_peer *p)
{
	uint32_t i;

	if (p == NULL)
		return;
	map_put(sd, p->qseg_map);
	map_put(sd, p->cseg_map);
	map_put(sd, p->sseg_map);
	map_put(sd, p->keys_map);
	for (i = 0; p->mr_map != NULL && i < p->nb_mr; i++)
		map_put(sd, p->mr_map[i]);
	free(p->mr_map);
	free(p->mr);
	free(p);
}

/*
 * Map a peer's sealed memfd of at least @p min bytes, or take the mapping
 * of it this device has already (the same file, of the same size: a live
 * file's inode is not reused while we map it); *h is what map_put() lets
 * go. NULL when it is not sealed against shrinking, too small, or cannot
 * be mapped.
 */
static void *
map_fd(struct shm_dev *sd, int fd, size_t min, size_t *len, struct shm_map **h)
{
	struct shm_map *m;
	struct stat st;
	void *p;

	/* unsealed, the peer could shrink it under our mapping (SIGBUS) */
	if ((fcntl(fd, F_GET_SEALS) & (F_SEAL_SHRINK | F_SEAL_SEAL)) !=
	    (F_SEAL_SHRINK | F_SEAL_SEAL))
		return NULL;
	if (fstat(fd, &st) < 0 || (size_t)st.st_size < min || st.st_size <= 0)
		return NULL;
	pthread_mutex_lock(&sd->map_lock);
	TAILQ_FOREACH(m, &sd->maps[st.st_ino % SHM_MAP_BUCKETS], next) {
		if (m->dev == st.st_dev && m->ino == st.st_ino && m->len == (size_t)st.st_size) {
			m->refs++;
			pthread_mutex_unlock(&sd->map_lock);
			*len = m->len;
			*h = m;
			return m->addr;
		}
	}
	m = calloc(1, sizeof(*m));
	p = m == NULL ? MAP_FAILED :
		mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		pthread_mutex_unlock(&sd->map_lock);
		free(m);
		return NULL;
	}
	*m = (struct shm_map){ .dev = st.st_dev, .ino = st.st_ino, .len = (size_t)st.st_size,
			       .addr = p, .refs = 1 };
	TAILQ_INSERT_HEAD(&sd->maps[st.st_ino % SHM_MAP_BUCKETS], m, next);
	pthread_mutex_unlock(&sd->map_lock);
	*len = (size_t)st.st_size;
	*h = m;
	return p;
}

/*
 * Is @p len bytes the file of a peer MR of @p length bytes? Its owner sizes
 * it to whole pages of the file's own: base pages, or hugepages on
 * hugetlbfs (st_blksize), so an MR of part of a hugepage has a longer file.
 */
static bool
mr_file_fits(int fd, uint64_t length, size_t len)
{
	struct stat st;

	if (len == RTE_ALIGN_CEIL(length, (uint64_t)4096))
		return true;
	return fstat(fd, &st) == 0 && st.st_blksize > 4096 &&
	       rte_is_power_of_2((uint64_t)st.st_blksize) &&
	       len == RTE_ALIGN_CEIL(length, (uint64_t)st.st_blksize);
}

static int
reply_send(int fd, int status, const char *fmt, ...) __rte_format_printf(3, 4);

static int
reply_send(int fd, int status, const char *fmt, ...)
{
	struct shm_reply r = { .magic = SHM_HELLO_MAGIC, .status = status };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r.msg, sizeof(r.msg), fmt, ap);
	va_end(ap);
	if (send(fd, &r, sizeof(r), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		return -errno;
	return status;
}

/*
 * Map and check the SRQ segment of a peer QP that receives from one: a
 * receive queue header as a QP segment's (read once; the peer and the
 * SRQ's other senders may change it while we look).
 */
static int
peer_srq_map(struct shm_dev *sd, struct shm_peer *p, int fd)
{
	struct shm_qp_seg *s = map_fd(sd, fd, sizeof(*s), &p->sseg_len, &p->sseg_map);
	uint32_t size;
	uint64_t ent_off;

	p->sseg = s;
	if (s == NULL)
		return -EINVAL;
	size = __atomic_load_n(&s->rq_size, __ATOMIC_RELAXED);
	ent_off = __atomic_load_n(&s->ent_off, __ATOMIC_RELAXED);
	p->srq_stride = __atomic_load_n(&s->rq_stride, __ATOMIC_RELAXED);
	p->srq_max_sge = __atomic_load_n(&s->max_sge, __ATOMIC_RELAXED);
	if (s->magic != SHM_SRQ_MAGIC || s->version != SHM_VERSION || size == 0 ||
	    size > SHM_MAX_WR || (size & (size - 1)) != 0 || p->srq_max_sge > SHM_MAX_SGE ||
	    p->srq_max_sge == 0 || p->srq_stride < shm_srq_stride(p->srq_max_sge) ||
	    p->srq_stride % 64 != 0 || ent_off < sizeof(*s) || ent_off % 64 != 0 ||
	    ent_off > p->sseg_len || (p->sseg_len - ent_off) / p->srq_stride < size)
		return -EINVAL;
	p->srq_mask = size - 1;
	p->srq_inline = shm_srq_inline(p->srq_stride, p->srq_max_sge);
	p->sents = (uint8_t *)s + ent_off;
	return 0;
}

/* Map and check what a hello shares; everything in it is untrusted. */
static struct shm_peer *
peer_build(struct shm_dev *sd, const struct shm_hello *h, size_t hlen, const int *fds, unsigned int nfd,
	   char *why, size_t why_len)
{
	struct shm_peer *p = calloc(1, sizeof(*p));
	struct shm_qp_seg *q;
	struct shm_cq_seg *c;
	uint32_t i, max_id = 0, rq_size, nb_words, nsrq;
	uint64_t ent_off;

	if (p == NULL) {
		snprintf(why, why_len, "out of memory");
		return NULL;
	}
	nsrq = hlen >= sizeof(*h) && h->srq == 1;
	if (hlen < sizeof(*h) || h->srq > 1 || h->nb_mr > SHM_MAX_FDS - 3 - nsrq ||
	    hlen != sizeof(*h) + h->nb_mr * sizeof(h->mr[0]) || nfd != 3 + nsrq + h->nb_mr) {
		snprintf(why, why_len, "malformed rendezvous message");
		goto fail;
	}
	p->qseg = map_fd(sd, fds[0], sizeof(*q), &p->qseg_len, &p->qseg_map);
	p->cseg = map_fd(sd, fds[1], sizeof(*c), &p->cseg_len, &p->cseg_map);
	if (p->qseg == NULL || p->cseg == NULL) {
		snprintf(why, why_len, "cannot map the peer's queue segments");
		goto fail;
	}
	q = p->qseg;
	c = p->cseg;
	/* read each field once: the peer may change them while we look */
	rq_size = __atomic_load_n(&q->rq_size, __ATOMIC_RELAXED);
	ent_off = __atomic_load_n(&q->ent_off, __ATOMIC_RELAXED);
	p->rq_stride = __atomic_load_n(&q->rq_stride, __ATOMIC_RELAXED);
	p->max_sge = __atomic_load_n(&q->max_sge, __ATOMIC_RELAXED);
	nb_words = __atomic_load_n(&c->nb_words, __ATOMIC_RELAXED);
	if (q->magic != SHM_QP_MAGIC || q->version != SHM_VERSION || rq_size == 0 ||
	    rq_size > SHM_MAX_WR || (rq_size & (rq_size - 1)) != 0 ||
	    p->max_sge > SHM_MAX_SGE || p->rq_stride < shm_rq_stride(p->max_sge) ||
	    p->rq_stride % 64 != 0 || ent_off < sizeof(*q) || ent_off % 64 != 0 ||
	    ent_off > p->qseg_len || (p->qseg_len - ent_off) / p->rq_stride < rq_size) {
		snprintf(why, why_len, "the peer's receive queue header is invalid");
		goto fail;
	}
	p->rq_mask = rq_size - 1;
	p->rq_inline = p->rq_stride - shm_rq_ent_hdr(p->max_sge);
	p->ents = (uint8_t *)q + ent_off;
	if (c->magic != SHM_CQ_MAGIC || c->version != SHM_VERSION ||
	    nb_words == 0 || nb_words > SHM_BELL_WORDS ||
	    p->cseg_len < shm_cq_seg_size(nb_words) || h->bell_word / 64 >= nb_words) {
		snprintf(why, why_len, "the peer's completion queue header is invalid");
		goto fail;
	}
	p->keys = map_fd(sd, fds[2], shm_key_seg_size(), &p->keys_len, &p->keys_map);
	if (p->keys == NULL || p->keys->magic != SHM_KEYS_MAGIC ||
	    p->keys->version != SHM_VERSION || p->keys->nb_keys != SHM_MAX_MR) {
		snprintf(why, why_len, "the peer's key table is invalid");
		goto fail;
	}
	p->pid = __atomic_load_n(&p->keys->pid, __ATOMIC_RELAXED);
	if (nsrq && peer_srq_map(sd, p, fds[3]) < 0) {
		snprintf(why, why_len, "the peer's shared receive queue is invalid");
		goto fail;
	}
	p->bell_slot = h->bell_word;
	p->bell_word = h->bell_word / 64;
	p->bell_bit = UINT64_C(1) << (h->bell_word % 64);
	p->qpn = h->src_qpn;
	for (i = 0; i < h->nb_mr; i++) {
		if (h->mr[i].id >= SHM_MAX_MR) {
			snprintf(why, why_len, "peer MR id %u out of range", h->mr[i].id);
			goto fail;
		}
		max_id = RTE_MAX(max_id, h->mr[i].id + 1);
	}
	p->nb_mr = max_id;
	p->mr = calloc(max_id ? max_id : 1, sizeof(p->mr[0]));
	p->mr_map = calloc(max_id ? max_id : 1, sizeof(p->mr_map[0]));
	if (p->mr == NULL || p->mr_map == NULL) {
		snprintf(why, why_len, "out of memory");
		goto fail;
	}
	for (i = 0; i < h->nb_mr; i++) {
		const struct shm_hello_mr *hm = &h->mr[i];
		struct shm_peer_mr *m = &p->mr[hm->id];
		size_t len;

		if (m->base != NULL || hm->length == 0 || hm->rkey != shm_lkey(hm->id)) {
			snprintf(why, why_len, "peer MR %u is invalid", hm->id);
			goto fail;
		}
		m->base = map_fd(sd, fds[3 + nsrq + i], hm->length, &len, &p->mr_map[hm->id]);
		if (m->base == NULL) {
			snprintf(why, why_len, "cannot map peer MR %u (%" PRIu64 " bytes)", hm->id,
				 hm->length);
			goto fail;
		}
		if (!mr_file_fits(fds[3 + nsrq + i], hm->length, len)) {
			map_put(sd, p->mr_map[hm->id]);
			p->mr_map[hm->id] = NULL;
			m->base = NULL;
			snprintf(why, why_len, "peer MR %u has the wrong size", hm->id);
			goto fail;
		}
		m->addr = hm->addr;
		m->length = hm->length;
		m->rkey = hm->rkey;
		m->access = hm->access;
	}
	return p;
fail:
	shm_peer_unmap(sd, p);
	return NULL;
}

static void
handle_hello(struct shm_dev *sd, unsigned int li)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * SHM_MAX_FDS)];
		struct cmsghdr align;
	} cbuf;
	size_t hmax = sizeof(struct shm_hello) + SHM_MAX_FDS * sizeof(struct shm_hello_mr);
	struct shm_hello *h = calloc(1, hmax);
	int fd = sd->links[li].fd, fds[SHM_MAX_FDS];
	struct msghdr msg = { 0 };
	struct iovec iov = { .iov_base = h, .iov_len = hmax };
	struct shm_peer *peer = NULL;
	struct shm_qp *qp = NULL;
	struct cmsghdr *cm;
	unsigned int nfd = 0, i;
	char why[160] = "";
	ssize_t r;

	if (h == NULL)
		return;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf.buf;
	msg.msg_controllen = sizeof(cbuf.buf);
	r = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (r <= 0) {
		if (r == 0 || (errno != EAGAIN && errno != EINTR))
			link_drop_locked(sd, li);
		free(h);
		return;
	}
	for (cm = CMSG_FIRSTHDR(&msg); cm != NULL; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
			unsigned int k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			for (i = 0; i < k && nfd < SHM_MAX_FDS; i++)
				memcpy(&fds[nfd++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
		}
	}
	if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || (size_t)r < sizeof(*h) ||
	    h->magic != SHM_HELLO_MAGIC || h->version != SHM_VERSION) {
		reply_send(fd, -EPROTO, "not an rdmaplane shm rendezvous (version %u)",
			   SHM_VERSION);
		goto drop;
	}
	TAILQ_FOREACH(qp, &sd->qps, next)
		if (qp->head.qp_num == h->dst_qpn)
			break;
	if (qp == NULL) {
		reply_send(fd, -ENOENT, "no QP %u on this device", h->dst_qpn);
		goto drop;
	}
	if (__atomic_load_n(&qp->peer, __ATOMIC_RELAXED) != NULL ||
	    __atomic_load_n(&qp->state, __ATOMIC_RELAXED) == RDP_QPS_ERR) {
		reply_send(fd, -EBUSY, "QP %u is already connected or in error", h->dst_qpn);
		goto drop;
	}
	peer = peer_build(sd, h, (size_t)r, fds, nfd, why, sizeof(why));
	if (peer == NULL) {
		reply_send(fd, -EPROTO, "%s", why);
		goto drop;
	}
	/* publish: the owner's engine reads the peer with acquire */
	__atomic_store_n(&qp->peer, peer, __ATOMIC_RELEASE);
	sd->links[li].qp = qp;
	shm_bell_self(qp->scq, qp->sslot);
	reply_send(fd, 0, "ok");
	for (i = 0; i < nfd; i++)
		close(fds[i]);
	free(h);
	return;
drop:
	for (i = 0; i < nfd; i++)
		close(fds[i]);
	free(h);
	link_drop_locked(sd, li);
}

/* The peer of a linked QP is gone: it can write nothing any more. */
static void
peer_gone_locked(struct shm_dev *sd, unsigned int li)
{
	struct shm_qp *qp = sd->links[li].qp;

	link_drop_locked(sd, li);
	if (qp == NULL)
		return;
	__atomic_store_n(&qp->peer_dead, 1, __ATOMIC_RELEASE);
	if (shm_qp_set_error(qp))
		shm_event_push(sd, RDP_EVENT_QP_FATAL, &qp->head, NULL);
	else
		shm_bell_self(qp->rcq, qp->rslot); /* already in error: re-check the RQ */
}

#define MON_LISTEN UINT64_MAX
#define MON_CTL (UINT64_MAX - 1)

/*
 * A peer's connection to our listening socket. One that is not accepted
 * stays in the backlog: nobody answers its rendezvous, and its QP connect
 * waits until its handshake gives up, while the listening socket stays
 * readable and the monitor spins. So a connection this process has no
 * descriptor for (RLIMIT_NOFILE, or the system's) is accepted with the
 * spare one and refused, and one the link table cannot hold is refused:
 * the peer hears why at once.
 */
static void
monitor_accept(struct shm_dev *sd)
{
	struct rlimit rl;
	int fd;

	if (sd->spare_fd < 0)
		sd->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	fd = accept4(sd->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0 && (errno == EMFILE || errno == ENFILE) && sd->spare_fd >= 0) {
		close(sd->spare_fd);
		fd = accept4(sd->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd >= 0) {
			if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
				rl.rlim_cur = 0;
			reply_send(fd, -EMFILE, "the peer device's process has no file descriptor "
				   "left (RLIMIT_NOFILE %llu)", (unsigned long long)rl.rlim_cur);
			close(fd);
		}
		sd->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		return;
	}
	if (fd >= 0 && link_add_locked(sd, fd, NULL) < 0) {
		reply_send(fd, -ENOSPC, "the peer device watches %u rendezvous links at most",
			   SHM_MAX_LINKS);
		close(fd);
	}
}

static void *
monitor(void *arg)
{
	struct shm_dev *sd = arg;
	struct epoll_event evs[32];

	for (;;) {
		int n = epoll_wait(sd->epfd, evs, RTE_DIM(evs), -1), i;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		pthread_mutex_lock(&sd->lock);
		for (i = 0; i < n; i++) {
			uint64_t d = evs[i].data.u64;
			unsigned int li = (uint32_t)d;

			if (d == MON_CTL) {
				pthread_mutex_unlock(&sd->lock);
				return NULL;
			}
			if (d == MON_LISTEN) {
				monitor_accept(sd);
				continue;
			}
			if (li >= SHM_MAX_LINKS || sd->links[li].fd < 0 ||
			    sd->links[li].gen != (uint32_t)(d >> 32))
				continue; /* dropped since epoll_wait returned */
			if (evs[i].events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR))
				peer_gone_locked(sd, li);
			else if (sd->links[li].qp == NULL)
				handle_hello(sd, li);
			else
				peer_gone_locked(sd, li); /* a linked peer never talks again */
		}
		pthread_mutex_unlock(&sd->lock);
	}
	return NULL;
}

int
shm_monitor_start(struct shm_dev *sd)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int ret;

	sd->epfd = epoll_create1(EPOLL_CLOEXEC);
	sd->ctl_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (sd->epfd < 0 || sd->ctl_fd < 0)
		goto fail;
	ev.data.u64 = MON_LISTEN;
	if (epoll_ctl(sd->epfd, EPOLL_CTL_ADD, sd->lfd, &ev) < 0)
		goto fail;
	ev.data.u64 = MON_CTL;
	if (epoll_ctl(sd->epfd, EPOLL_CTL_ADD, sd->ctl_fd, &ev) < 0)
		goto fail;
	ret = pthread_create(&sd->mon, NULL, monitor, sd);
	if (ret != 0) {
		errno = ret;
		goto fail;
	}
	pthread_setname_np(sd->mon, "rdp-shm-mon");
	sd->mon_running = true;
	return 0;
fail:
	ret = rdp_err_set(ENODEV, "driver shm: cannot start the device monitor: %s",
			  strerror(errno));
	if (sd->epfd >= 0)
		close(sd->epfd);
	if (sd->ctl_fd >= 0)
		close(sd->ctl_fd);
	return ret;
}

void
shm_monitor_stop(struct shm_dev *sd)
{
	uint64_t one = 1;

	if (!sd->mon_running)
		return;
	if (write(sd->ctl_fd, &one, sizeof(one)) < 0)
		SHM_LOG(ERR, "cannot stop the monitor: %s", strerror(errno));
	pthread_join(sd->mon, NULL);
	sd->mon_running = false;
	close(sd->epfd);
	close(sd->ctl_fd);
}

static const struct rdp_driver_ops shm_ops = {
	.probe = shm_probe,
	.dev_open = shm_dev_open,
	.dev_close = shm_dev_close,
	.dev_query = shm_dev_query,
	.owns_addr = shm_owns_addr,
	.stats_get = shm_stats_get,
	.event_fd = shm_event_fd,
	.event_get = shm_event_get,
	.pd_alloc = shm_pd_alloc,
	.pd_free = shm_pd_free,
	.mr_alloc = shm_mr_alloc,
	.mr_reg = shm_mr_reg,
	.mr_free = shm_mr_free,
	.cq_create = shm_cq_create,
	.cq_resize = shm_cq_resize,
	.cq_destroy = shm_cq_destroy,
	.qp_create = shm_qp_create,
	.qp_modify = shm_qp_modify,
	.qp_modify_start = shm_qp_modify_start,
	.qp_modify_poll = shm_qp_modify_poll,
	.qp_modify_abort = shm_qp_modify_abort,
	.qp_query = shm_qp_query,
	.qp_local_addr = shm_qp_local_addr,
	.qp_destroy = shm_qp_destroy,
	.srq_create = shm_srq_create,
	.srq_destroy = shm_srq_destroy,
	.srq_modify_limit = shm_srq_modify_limit,
	.srq_query = shm_srq_query,
};

/* Tried after verbs: real RDMA hardware wins when it is there. */
static struct rdp_driver shm_driver = {
	.preference = 100,
	.dev_priv_size = sizeof(struct shm_dev),
	.ops = &shm_ops,
};

RDP_DRIVER_REGISTER(shm, shm_driver);
