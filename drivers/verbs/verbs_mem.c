/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs driver's memory: protection domains, memory regions, and the
 * NUMA-local pages behind rdp_mr_alloc() and the driver's own rings.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <numa.h>

#include "verbs_private.h"

static size_t
page_round(size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (len + pg - 1) & ~(pg - 1);
}

/* Zeroed pages on @p socket (-1: the calling thread's node). */
void *
verbs_zalloc(size_t len, int socket)
{
	void *p;

	len = page_round(len);
	if (numa_available() < 0) {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		return p == MAP_FAILED ? NULL : p;
	}
	/* numa_alloc_* maps fresh anonymous pages: they read as zero */
	return socket >= 0 ? numa_alloc_onnode(len, socket) : numa_alloc_local(len);
}

void
verbs_free(void *p, size_t len)
{
	if (p == NULL)
		return;
	len = page_round(len);
	if (numa_available() < 0)
		munmap(p, len);
	else
		numa_free(p, len);
}

struct rdp_pd *
verbs_pd_alloc(struct rdp_dev *dev)
{
	struct verbs_dev *vd = verbs_dev(dev);
	struct verbs_pd *pd;

	pd = calloc(1, sizeof(*pd));
	if (pd == NULL) {
		rdp_err_set(ENOMEM, "verbs: out of memory for a PD");
		return NULL;
	}
	pd->pd = ibv_alloc_pd(vd->ctx);
	if (pd->pd == NULL) {
		verbs_err(errno ? errno : ENOMEM, "ibv_alloc_pd(%s)", vd->name);
		free(pd);
		return NULL;
	}
	pd->head.dev = dev;
	return &pd->head;
}

int
verbs_pd_free(struct rdp_pd *rpd)
{
	struct verbs_pd *pd = to_vpd(rpd);
	int ret;

	if (pd->nb_users > 0)
		return rdp_err_set(EBUSY, "verbs: PD still has %u MRs or QPs", pd->nb_users);
	ret = ibv_dealloc_pd(pd->pd);
	if (ret != 0)
		return verbs_err(ret, "ibv_dealloc_pd");
	free(pd);
	return 0;
}

/* The narrowest verbs access: remote write needs local write, nothing else is added. */
static int
access_flags(unsigned int access)
{
	int fl = 0;

	if (access & RDP_ACCESS_LOCAL_WRITE)
		fl |= IBV_ACCESS_LOCAL_WRITE;
	if (access & RDP_ACCESS_REMOTE_WRITE)
		fl |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	if (access & RDP_ACCESS_REMOTE_READ)
		fl |= IBV_ACCESS_REMOTE_READ;
	return fl;
}

static struct rdp_mr *
mr_register(struct rdp_pd *rpd, void *addr, size_t len, unsigned int access, size_t alloc_len)
{
	struct verbs_pd *pd = to_vpd(rpd);
	struct verbs_mr *mr;

	if (access & ~(unsigned int)(RDP_ACCESS_LOCAL_WRITE | RDP_ACCESS_REMOTE_WRITE |
				     RDP_ACCESS_REMOTE_READ)) {
		rdp_err_set(EINVAL, "verbs: unknown MR access bits 0x%x", access);
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (mr == NULL) {
		rdp_err_set(ENOMEM, "verbs: out of memory for an MR");
		return NULL;
	}
	mr->mr = ibv_reg_mr(pd->pd, addr, len, access_flags(access));
	if (mr->mr == NULL) {
		verbs_err(errno ? errno : ENOMEM, "ibv_reg_mr(%zu bytes, access 0x%x)", len, access);
		free(mr);
		return NULL;
	}
	mr->alloc_len = alloc_len;
	mr->head.addr = addr;
	mr->head.length = len;
	mr->head.lkey = mr->mr->lkey;
	mr->head.rkey = mr->mr->rkey;
	mr->head.access = access;
	mr->head.pd = rpd;
	pd->nb_users++;
	return &mr->head;
}

/* Zeroed hugepages on @p socket: the reservation is taken here, never a SIGBUS later. */
static void *
huge_zalloc(size_t len, int socket)
{
	void *p;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
		 -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (socket >= 0 && numa_available() >= 0 && socket <= numa_max_node())
		numa_tonode_memory(p, len, socket);
	return p;
}

struct rdp_mr *
verbs_mr_alloc(struct rdp_pd *pd, size_t len, int socket, unsigned int access, size_t page_size)
{
	struct verbs_dev *vd = verbs_dev(pd->dev);
	bool huge = page_size > (size_t)sysconf(_SC_PAGESIZE);
	struct verbs_mr *vmr;
	struct rdp_mr *mr;
	void *mem;

	if (socket < 0)
		socket = vd->numa_node;
	len = huge ? RTE_ALIGN_CEIL(len, page_size) : page_round(len);
	mem = huge ? huge_zalloc(len, socket) : verbs_zalloc(len, socket);
	if (mem == NULL) {
		rdp_err_set(ENOMEM, "verbs: cannot allocate %zu bytes on NUMA node %d%s", len,
			    socket, huge ? " on hugepages" : "");
		return NULL;
	}
	mr = mr_register(pd, mem, len, access, len);
	if (mr == NULL) {
		if (huge)
			munmap(mem, len);
		else
			verbs_free(mem, len);
		return NULL;
	}
	vmr = to_vmr(mr);
	vmr->huge = huge;
	mr->page_size = page_size;
	return mr;
}

struct rdp_mr *
verbs_mr_reg(struct rdp_pd *pd, void *addr, size_t len, unsigned int access)
{
	return mr_register(pd, addr, len, access, 0);
}

int
verbs_mr_free(struct rdp_mr *rmr)
{
	struct verbs_mr *mr = to_vmr(rmr);
	int ret;

	ret = ibv_dereg_mr(mr->mr);
	if (ret != 0)
		return verbs_err(ret, "ibv_dereg_mr");
	to_vpd(rmr->pd)->nb_users--;
	if (mr->huge)
		munmap(rmr->addr, mr->alloc_len);
	else if (mr->alloc_len > 0)
		verbs_free(rmr->addr, mr->alloc_len);
	free(mr);
	return 0;
}
