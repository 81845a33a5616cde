/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Registered buffer pools. Buffers come from the driver (rdp_mr_alloc) so
 * that the shm driver can share receive memory with peers; headers and the
 * free ring are ordinary NUMA-local memory the peer never sees.
 */
#include <errno.h>
#include <numa.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "rdp_mem.h"
#include "rdp_pages.h"

RTE_LOG_REGISTER(rdp_mem_logtype, rdp.mem, INFO);
#define MEM_LOG(level, fmt, ...) RDP_LOG(level, rdp_mem_logtype, "mem", fmt, ##__VA_ARGS__)

struct rdp_mr *
rdp_mem_mr_alloc(const char *what, struct rdp_pd *pd, size_t len, int socket,
		 unsigned int access)
{
	size_t huge = rdp_hugepage_size();
	struct rdp_mr *mr;

	mr = rdp_mr_alloc(pd, len, socket, access);
	if (mr != NULL && (access & RDP_ALLOC_HUGE_TRY) && huge > 0 && len >= huge / 2 &&
	    mr->page_size < huge)
		MEM_LOG(WARNING, "%s: %zu bytes on base pages: hugepages short, it needs %zu x "
			"%zu KiB, %ld free", what, len, (len + huge - 1) / huge, huge >> 10,
			rdp_hugepages_free());
	return mr;
}

void *
rdp_mem_zalloc(size_t size, int socket)
{
	void *p;

	/* mmap is page aligned and zeroed; bind it when a node is asked for */
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		rte_errno = ENOMEM;
		return NULL;
	}
	if (socket >= 0 && numa_available() >= 0 && socket <= numa_max_node())
		numa_tonode_memory(p, size, socket);
	return p;
}

void
rdp_mem_free(void *ptr, size_t size)
{
	if (ptr != NULL)
		munmap(ptr, size);
}

static size_t
hdrs_size(uint32_t nb)
{
	return (size_t)nb * sizeof(struct rdp_msg);
}

struct rdp_pool *
rdp_pool_create(const char *name, struct rdp_pd *pd, uint32_t nb_bufs, uint32_t buf_size,
		int socket, unsigned int access)
{
	uint32_t ring_count = rte_align32pow2(nb_bufs + 1);
	ssize_t ring_size = rte_ring_get_memsize(ring_count);
	struct rdp_pool *pool;
	char what[48];
	uint32_t i;

	if (nb_bufs == 0 || buf_size < 64 || buf_size % 64 != 0 || ring_size < 0) {
		rdp_err_set(EINVAL, "pool %s: %u buffers of %u bytes: need >= 1 buffer of a "
			    "multiple of 64 bytes", name, nb_bufs, buf_size);
		return NULL;
	}
	pool = calloc(1, sizeof(*pool));
	if (pool == NULL) {
		rdp_err_set(ENOMEM, "pool %s: out of memory", name);
		return NULL;
	}
	snprintf(pool->name, sizeof(pool->name), "%s", name);
	pool->buf_size = buf_size;
	pool->nb_bufs = nb_bufs;
	pool->socket = socket;
	pool->hdrs = rdp_mem_zalloc(hdrs_size(nb_bufs), socket);
	pool->free = rdp_mem_zalloc(ring_size, socket);
	if (pool->hdrs == NULL || pool->free == NULL) {
		rdp_err_set(ENOMEM, "pool %s: cannot allocate %u headers", name, nb_bufs);
		goto fail;
	}
	if (rte_ring_init(pool->free, pool->name, ring_count, 0) != 0) {
		rdp_err_set(EINVAL, "pool %s: cannot initialise its free ring", name);
		goto fail;
	}
	snprintf(what, sizeof(what), "pool %s", name);
	pool->mr = rdp_mem_mr_alloc(what, pd, (size_t)nb_bufs * buf_size, socket, access);
	if (pool->mr == NULL) {
		rdp_err_set(rte_errno, "pool %s: cannot register %u x %u bytes: %s",
			    name, nb_bufs, buf_size, rdp_err_msg());
		goto fail;
	}
	pool->base = pool->mr->addr;
	pool->lkey = pool->mr->lkey;
	for (i = 0; i < nb_bufs; i++) {
		struct rdp_msg *m = &pool->hdrs[i];

		m->pool = pool;
		rte_ring_enqueue(pool->free, m);
	}
	return pool;
fail:
	rdp_mem_free(pool->free, ring_size);
	rdp_mem_free(pool->hdrs, hdrs_size(nb_bufs));
	free(pool);
	return NULL;
}

int
rdp_pool_destroy(struct rdp_pool *pool)
{
	int missing, ret;

	if (pool == NULL)
		return 0;
	missing = pool->nb_bufs - rdp_pool_avail(pool);
	ret = rdp_mr_free(pool->mr);
	rdp_mem_free(pool->free, rte_ring_get_memsize(rte_ring_get_size(pool->free)));
	rdp_mem_free(pool->hdrs, hdrs_size(pool->nb_bufs));
	free(pool);
	return ret < 0 ? ret : missing;
}

int
rdp_pool_claim(struct rdp_pool *pool)
{
	if (__atomic_load_n(&pool->owner, __ATOMIC_ACQUIRE) != 0)
		return rdp_err_set(EBUSY, "pool %s already has an owner thread", pool->name);
	__atomic_store_n(&pool->owner, rdp_thread_self(), __ATOMIC_RELEASE);
	return 0;
}

struct rdp_msg *
rdp_pool_alloc_msg(struct rdp_pool *pool, uint32_t len, uint32_t seg_size)
{
	struct rdp_msg *segs[64], *head = NULL, *tail = NULL;
	uint32_t left = len, nb;

	if (seg_size == 0 || seg_size > pool->buf_size) {
		rte_errno = EINVAL;
		return NULL;
	}
	nb = len == 0 ? 1 : (len + seg_size - 1) / seg_size;
	if (likely(nb == 1)) {
		if (unlikely(rdp_pool_get_bulk(pool, &head, 1) < 0)) {
			rte_errno = ENOBUFS;
			return NULL;
		}
		head->data_len = len;
		head->pkt_len = len;
		return head;
	}
	while (nb > 0) {
		uint32_t n = RTE_MIN(nb, (uint32_t)RTE_DIM(segs)), i;

		if (rdp_pool_get_bulk(pool, segs, n) < 0) {
			if (head != NULL)
				rdp_pool_put_chain(head);
			rte_errno = ENOBUFS;
			return NULL;
		}
		for (i = 0; i < n; i++) {
			segs[i]->data_len = RTE_MIN(left, seg_size);
			left -= segs[i]->data_len;
			if (tail != NULL)
				tail->next = segs[i];
			else
				head = segs[i];
			tail = segs[i];
		}
		nb -= n;
	}
	head->pkt_len = len;
	head->nb_segs = len == 0 ? 1 : (len + seg_size - 1) / seg_size;
	return head;
}

/* Copy between buf and the chain from offset off; to_msg gives the direction. */
static int
msg_copy(const struct rdp_msg *m, uint32_t off, uint8_t *buf, uint32_t len, bool to_msg)
{
	if ((uint64_t)off + len > m->pkt_len)
		return -ERANGE;
	for (; m != NULL && len > 0; m = m->next) {
		uint32_t n;

		if (off >= m->data_len) {
			off -= m->data_len;
			continue;
		}
		n = RTE_MIN(len, m->data_len - off);
		if (to_msg)
			memcpy((uint8_t *)m->data + off, buf, n);
		else
			memcpy(buf, (const uint8_t *)m->data + off, n);
		buf += n;
		len -= n;
		off = 0;
	}
	return 0;
}

int
rdp_msg_write(struct rdp_msg *m, uint32_t off, const void *src, uint32_t len)
{
	return msg_copy(m, off, (uint8_t *)(uintptr_t)src, len, true);
}

int
rdp_msg_read(const struct rdp_msg *m, uint32_t off, void *dst, uint32_t len)
{
	return msg_copy(m, off, dst, len, false);
}
