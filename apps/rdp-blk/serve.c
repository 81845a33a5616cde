/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdp-blk serve: files, block devices or memory devices exported as
 * 512-byte blocks over rdmaplane endpoints (one listening port each).
 *
 * Run-to-completion: requests arrive in on_recv on the poller lcore that
 * owns the endpoint.
 *
 * - A memory device (a memfd) is read and written there and then, straight
 *   between the file and the message segments, and answered at once.
 * - A file or block device goes through io_uring, one ring per poller
 *   lcore: on_recv checks the request, takes an I/O context (its 4 KiB-
 *   aligned bounce buffer and the reply message, allocated before the I/O
 *   starts) and queues an SQE. The poll hook (rdp_poll_hook_set) submits
 *   what was queued once per poll and reaps with io_uring_peek_batch_cqe():
 *   the poller never waits in a system call on the disk. A request's reply
 *   leaves when its CQE arrived; until then the context holds its buffers.
 *   Files are opened with O_DIRECT unless --no-direct; with O_DIRECT a
 *   request's offset and length must be multiples of the file's direct-I/O
 *   alignment (statx STATX_DIOALIGN), else the reply is EINVAL.
 *
 * One-sided requests (BLK_F_RDMA) carry a descriptor of the client's
 * registered buffer instead of data. A read's blocks go to it by RDMA
 * WRITE and the reply follows on the same endpoint (RC ordering puts the
 * data first): from the memory device's mapping itself (registered once),
 * or from an I/O context's buffer once the file read is done. A write's
 * blocks come by RDMA READ into a context's buffer, and are written from
 * there when the READ completes. A context's buffer is registered the
 * first time it serves a one-sided request and stays registered. A
 * context that RDMA-WRITEs a read's blocks is free again when that WRITE
 * completes, after its reply left. A descriptor that is malformed, too
 * short or without the access needed is answered with EFAULT; a wrong key
 * fails the endpoint as an RC queue pair fails (the client's endpoint
 * alone), and is counted.
 *
 * Durability (--sync, and FUA writes): a write whose CQE arrived waits for
 * the next fdatasync SQE of its device on that lcore; one fdatasync is in
 * flight at a time and covers every write completed before it was queued
 * (group commit). FLUSH joins the same queue. Without --sync a write is
 * acknowledged once its CQE arrived (in the page cache without O_DIRECT).
 *
 * Back-pressure: when no I/O context or send buffer is left, on_recv
 * accepts fewer requests; the rest stay in their receive buffers, so their
 * credits do not return and the client slows down. Nothing is dropped:
 * every accepted request gets exactly one reply, done or failed.
 *
 * Test hooks (environment, file devices only): RDP_BLK_INJECT_DELAY_MS=N
 * delays every read and write by N ms with an IORING_OP_TIMEOUT linked
 * before it; RDP_BLK_INJECT_EIO=read|write|sync fails those operations
 * with EIO in the completion path; RDP_BLK_DIO_ALIGN=N takes N as the
 * direct-I/O alignment.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sched.h>
#include <sys/queue.h>
#include <unistd.h>

#include <liburing.h>
#include <rte_lcore.h>

#include "rdp_clock.h"
#include "blk.h"
#include "blk_proto.h"
#include "rdp_ep.h"
#include "rdp_rdma.h"

/* The status codes are errno values with their Linux numbers. */
_Static_assert(BLK_S_EIO == EIO && BLK_S_E2BIG == E2BIG && BLK_S_EINVAL == EINVAL &&
	       BLK_S_ENOSPC == ENOSPC && BLK_S_ERANGE == ERANGE && BLK_S_EPROTO == EPROTO &&
	       BLK_S_EBADMSG == EBADMSG && BLK_S_EOPNOTSUPP == EOPNOTSUPP,
	       "the protocol's status codes are Linux errno numbers");
_Static_assert(BLK_S_EFAULT == EFAULT, "the protocol's status codes are Linux errno numbers");
_Static_assert(BLK_DESC_LEN == RDP_RDESC_LEN, "a request carries one encoded remote descriptor");

/* Requests handled per on_recv call (the rest are offered again). */
#define SRV_BURST 32
/* iovecs per preadv/pwritev call (memory devices). */
#define IOV_BATCH 64
/* I/O contexts per poller lcore: file requests in flight there. */
#define SRV_IOS 256
/* SQEs per ring: a delayed I/O takes two, each device one fdatasync. */
#define RING_ENTRIES 1024
/* Without IORING_SETUP_TASKRUN_FLAG: quiet polls between two task-work runs. */
#define TASKRUN_POLLS 16
/* CQEs reaped per peek. */
#define CQE_BATCH 64
/* Bounce buffers' alignment (any direct-I/O alignment up to a page). */
#define BUF_ALIGN 4096u

/* user_data: a pointer with its kind in the low bits. */
#define UD_IO 0u
#define UD_SYNC 1u
#define UD_DELAY 2u
#define UD_KIND 3u

/* user_data of a memory device's one-sided read (no I/O context; contexts are aligned). */
#define OS_MEM 1u

/* Counters of one poller lcore: written by it alone, read by the main lcore. */
struct srv_stats {
	uint64_t ops[BLK_OP_INFO + 1]; /* served, by opcode */
	uint64_t refused;              /* bad requests answered with an error */
	uint64_t beyond;               /* ... of them beyond the end of the device */
	uint64_t misaligned;           /* ... of them not aligned for O_DIRECT */
	uint64_t io_errors;            /* requests the device failed */
	uint64_t syncs;                /* fdatasync calls */
	uint64_t submits;              /* io_uring_submit calls */
	uint64_t bytes_read;
	uint64_t bytes_written;
	uint64_t bad_desc;             /* refused: a one-sided request's descriptor */
	uint64_t rdma_writes;          /* one-sided reads' RDMA WRITEs done */
	uint64_t rdma_reads;           /* one-sided writes' RDMA READs done */
	uint64_t rdma_failed;          /* ... failed (a wrong key, the endpoint failing) */
} __rte_cache_aligned;

struct blk_io;

/* The fdatasync queue of one device on one lcore. */
struct blk_sync {
	struct blk_io *wait, **wait_tail; /* for the next fdatasync */
	struct blk_io *syncing;           /* covered by the one in flight */
	bool inflight;
};

struct blk_dev {
	int fd;
	bool file;        /* a file or block device; false: a memory device */
	bool psync;       /* --ioengine psync: the file's I/O blocks the poller */
	bool direct;      /* O_DIRECT */
	uint32_t align;   /* O_DIRECT: offsets and lengths a multiple of this */
	uint64_t nblocks;
	void *map;                /* a memory device's mapping ... */
	struct rdp_region *reg;   /* ... registered: one-sided reads come from it */
	unsigned int index;
	char what[512];
	struct blk_sync sync[RTE_MAX_LCORE];
};

/* One endpoint of the server. */
struct srv_conn {
	TAILQ_ENTRY(srv_conn) next; /* on its poller lcore's list */
	struct rdp_ep *ep;
	struct blk_dev *dev;
	unsigned int inflight; /* I/O contexts holding a reply for it */
	bool failed;           /* close once inflight is 0 */
	bool closed;           /* CLOSED came first: free once inflight is 0 */
};

/* A file request in flight. */
struct blk_io {
	struct blk_io *next;
	struct srv_conn *conn;
	struct rdp_msg *rep;      /* the reply, allocated before the I/O started */
	void *buf;                /* BUF_ALIGN-aligned bounce buffer of cap bytes */
	uint32_t cap;
	struct rdp_region *reg;   /* buf registered (its first one-sided request), or NULL */
	struct rdp_rdesc rdesc;   /* a one-sided request's: the client's buffer */
	bool onesided;
	bool rdma_busy;           /* its RDMA WRITE is out: free once that completes */
	uint32_t len;
	uint64_t pos;
	struct blk_rep hdr;
	struct __kernel_timespec delay;
	unsigned int lcore;
	bool wait_sync;           /* a write that replies after the next fdatasync */
};

/* The io_uring of one poller lcore. */
struct blk_lcore {
	struct io_uring ring;
	bool has_ring;          /* some device is a file with --ioengine io_uring */
	bool taskrun_flag;      /* the kernel says when task work waits (IORING_SQ_TASKRUN) */
	unsigned int quiet_polls; /* polls with I/O in flight and nothing reaped */
	unsigned int inflight;  /* contexts in use (atomic: the main lcore drains) */
	struct blk_io *free;
	struct blk_io *retry;   /* failed reads waiting for a header-only reply buffer */
	struct blk_io *rdma_wait; /* reads whose RDMA WRITE found no event buffer */
	TAILQ_HEAD(, srv_conn) conns; /* its endpoints' connections */
	bool closed_all;        /* blk_server_quiesce(): its endpoints were closed */
	struct blk_io ios[SRV_IOS];
};

#define MAX_DEVS 8

static struct {
	struct blk_dev *dev[MAX_DEVS];
	unsigned int nb_devs;
	bool sync;
	bool quiet;
	unsigned int delay_ms;    /* RDP_BLK_INJECT_DELAY_MS */
	bool eio[BLK_OP_INFO + 1]; /* RDP_BLK_INJECT_EIO, by opcode (FLUSH: sync) */
	unsigned int endpoints;   /* connected now */
	unsigned int accepted;    /* since start */
	bool closing;             /* blk_server_quiesce(): pollers close their endpoints */
	int ports[MAX_DEVS];
	struct srv_stats st[RTE_MAX_LCORE];
	struct blk_lcore *lc[RTE_MAX_LCORE];
	void *bounce[RTE_MAX_LCORE]; /* psync with O_DIRECT: one aligned buffer per lcore */
	struct srv_stats last;    /* totals at the last progress line */
} srv;

static inline void
cnt_add(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, *c + v, __ATOMIC_RELAXED);
}

static void
stats_sum(struct srv_stats *t)
{
	unsigned int l, i;

	memset(t, 0, sizeof(*t));
	for (l = 0; l < RTE_MAX_LCORE; l++) {
		const struct srv_stats *s = &srv.st[l];

		for (i = 0; i < RTE_DIM(s->ops); i++)
			t->ops[i] += __atomic_load_n(&s->ops[i], __ATOMIC_RELAXED);
		t->refused += __atomic_load_n(&s->refused, __ATOMIC_RELAXED);
		t->beyond += __atomic_load_n(&s->beyond, __ATOMIC_RELAXED);
		t->misaligned += __atomic_load_n(&s->misaligned, __ATOMIC_RELAXED);
		t->io_errors += __atomic_load_n(&s->io_errors, __ATOMIC_RELAXED);
		t->syncs += __atomic_load_n(&s->syncs, __ATOMIC_RELAXED);
		t->submits += __atomic_load_n(&s->submits, __ATOMIC_RELAXED);
		t->bytes_read += __atomic_load_n(&s->bytes_read, __ATOMIC_RELAXED);
		t->bytes_written += __atomic_load_n(&s->bytes_written, __ATOMIC_RELAXED);
		t->bad_desc += __atomic_load_n(&s->bad_desc, __ATOMIC_RELAXED);
		t->rdma_writes += __atomic_load_n(&s->rdma_writes, __ATOMIC_RELAXED);
		t->rdma_reads += __atomic_load_n(&s->rdma_reads, __ATOMIC_RELAXED);
		t->rdma_failed += __atomic_load_n(&s->rdma_failed, __ATOMIC_RELAXED);
	}
}

/* ---------------------------------------------------------------------- */
/* Datapath (poller lcores)                                               */
/* ---------------------------------------------------------------------- */

/*
 * Memory devices: move @p len bytes between the memfd at @p pos and message
 * @p m from its byte @p off, with the segments as iovecs. Returns 0 or an errno.
 */
static uint32_t
mem_io(int fd, struct rdp_msg *m, uint32_t off, uint64_t pos, uint32_t len, bool write)
{
	struct iovec iov[IOV_BATCH];

	while (len > 0) {
		uint32_t batch = 0;
		unsigned int n = 0;
		ssize_t r;

		for (; m != NULL && n < IOV_BATCH && batch < len; m = m->next) {
			uint32_t l;

			if (off >= m->data_len) {
				off -= m->data_len;
				continue;
			}
			l = RTE_MIN(m->data_len - off, len - batch);
			iov[n].iov_base = (uint8_t *)m->data + off;
			iov[n].iov_len = l;
			n++;
			batch += l;
			off = 0;
		}
		if (batch == 0)
			return BLK_S_EIO; /* the message is shorter than checked: cannot happen */
		do {
			r = write ? pwritev(fd, iov, n, (off_t)pos) : preadv(fd, iov, n, (off_t)pos);
		} while (r < 0 && errno == EINTR);
		if (r < 0)
			return (uint32_t)errno;
		if ((uint32_t)r != batch)
			return BLK_S_EIO;
		pos += batch;
		len -= batch;
	}
	return 0;
}

/*
 * --ioengine psync on an O_DIRECT file: pread/pwrite through the lcore's
 * aligned bounce buffer, blocking the poller (the comparison's baseline).
 */
static uint32_t
psync_io(struct blk_dev *d, struct rdp_msg *m, uint64_t pos, uint32_t len, bool write)
{
	unsigned int lcore = rte_lcore_id();
	ssize_t r;

	if (!d->direct)
		return mem_io(d->fd, m, BLK_HDR_SIZE, pos, len, write);
	if (srv.bounce[lcore] == NULL &&
	    posix_memalign(&srv.bounce[lcore], BUF_ALIGN, (size_t)BLK_MAX_COUNT * BLK_BLOCK_SIZE) != 0) {
		srv.bounce[lcore] = NULL;
		return ENOMEM;
	}
	if (write)
		rdp_msg_read(m, BLK_HDR_SIZE, srv.bounce[lcore], len);
	do {
		r = write ? pwrite(d->fd, srv.bounce[lcore], len, (off_t)pos) :
			    pread(d->fd, srv.bounce[lcore], len, (off_t)pos);
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		return (uint32_t)errno;
	if ((uint32_t)r != len)
		return BLK_S_EIO;
	if (!write && rdp_msg_write(m, BLK_HDR_SIZE, srv.bounce[lcore], len) != 0)
		return BLK_S_EIO;
	return 0;
}

/* Largest request this endpoint's message size carries. */
static uint32_t
srv_max_count(const struct rdp_ep *ep)
{
	uint32_t max = rdp_ep_max_msg_size(ep);

	return max < BLK_HDR_SIZE ? 0 : RTE_MIN(BLK_MAX_COUNT, (max - BLK_HDR_SIZE) / BLK_BLOCK_SIZE);
}

static void
conn_put(struct srv_conn *c)
{
	if (--c->inflight > 0 || !c->failed)
		return;
	if (c->closed)
		free(c);
	else
		rdp_ep_close(c->ep);
}

/* Send a reply whose header is in io->hdr (or free it: the endpoint failed). */
static void
io_reply(struct blk_io *io)
{
	struct srv_conn *c = io->conn;
	struct rdp_msg *r = io->rep;

	blk_rep_encode(&io->hdr, r->data); /* a segment holds >= 64 bytes */
	if (c->failed || rdp_ep_send_burst(c->ep, &r, 1) != 1)
		rdp_msg_free(r);
	io->rep = NULL;
	conn_put(c);
}

static void
io_release(struct blk_lcore *L, struct blk_io *io)
{
	io->conn = NULL;
	io->next = L->free;
	L->free = io;
	__atomic_store_n(&L->inflight, L->inflight - 1, __ATOMIC_RELAXED);
}

/* A request's I/O ended with @p status: count it and reply. */
static void
io_done(struct blk_lcore *L, struct blk_io *io, uint32_t status)
{
	struct srv_stats *st = &srv.st[io->lcore];

	io->hdr.status = status;
	if (status != BLK_S_OK) {
		cnt_add(&st->io_errors, 1);
		if (io->hdr.opcode == BLK_OP_READ && !io->onesided && !io->conn->failed) {
			/* an error reply carries no data */
			struct rdp_msg *r = rdp_msg_alloc(io->conn->ep, BLK_HDR_SIZE);

			if (r == NULL) {
				io->next = L->retry; /* a send buffer comes back with completions */
				L->retry = io;
				return;
			}
			rdp_msg_free(io->rep);
			io->rep = r;
		}
	} else {
		cnt_add(&st->ops[io->hdr.opcode], 1);
		if (io->hdr.opcode == BLK_OP_READ)
			cnt_add(&st->bytes_read, io->len);
		else if (io->hdr.opcode == BLK_OP_WRITE)
			cnt_add(&st->bytes_written, io->len);
	}
	io_reply(io);
	if (!io->rdma_busy)
		io_release(L, io);
}

/*
 * A one-sided request that cannot go on (its RDMA operation failed, or its
 * endpoint is going away): no reply can reach the client; let it go.
 */
static void
io_drop(struct blk_lcore *L, struct blk_io *io)
{
	io->hdr.status = BLK_S_EIO;
	io_reply(io);
	io_release(L, io);
}

/* Queue @p io's one-sided operation: true if accepted, else rte_errno. */
static bool
io_rdma(struct blk_io *io, uint8_t opcode)
{
	const struct rdp_rdma_op op = {
		.opcode = opcode, .region = io->reg, .offset = 0, .len = io->len,
		.remote = io->rdesc, .remote_offset = 0, .user_data = (uint64_t)(uintptr_t)io,
	};

	return rdp_ep_rdma_burst(io->conn->ep, &op, 1) == 1;
}

/*
 * A one-sided read's blocks are in the context's buffer: RDMA WRITE them
 * to the client, and the reply after them. False when no event buffer was
 * free (retry later).
 */
static bool
io_read_out(struct blk_lcore *L, struct blk_io *io)
{
	if (io->conn->failed) {
		io_drop(L, io);
		return true;
	}
	if (!io_rdma(io, RDP_RDMA_WRITE)) {
		if (rte_errno == ENOBUFS)
			return false;
		io_drop(L, io); /* not established any more */
		return true;
	}
	io->rdma_busy = true;
	io_done(L, io, BLK_S_OK);
	return true;
}

/* A read's blocks are in the buffer (@p status OK) or not: on to the reply. */
static void
io_read_ready(struct blk_lcore *L, struct blk_io *io, uint32_t status)
{
	if (status != BLK_S_OK || !io->onesided) {
		if (status == BLK_S_OK && rdp_msg_write(io->rep, BLK_HDR_SIZE, io->buf, io->len) != 0)
			status = BLK_S_EIO;
		io_done(L, io, status);
		return;
	}
	if (!io_read_out(L, io)) {
		io->next = L->rdma_wait;
		L->rdma_wait = io;
	}
}

/* Reads whose RDMA WRITE found no event buffer: try again. */
static unsigned int
rdma_retry(struct blk_lcore *L)
{
	struct blk_io *io = L->rdma_wait, *keep = NULL;
	unsigned int work = 0;

	L->rdma_wait = NULL;
	while (io != NULL) {
		struct blk_io *next = io->next;

		if (io_read_out(L, io)) {
			work++;
		} else {
			io->next = keep;
			keep = io;
		}
		io = next;
	}
	L->rdma_wait = keep;
	return work;
}

static struct io_uring_sqe *
get_sqe(struct blk_lcore *L)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&L->ring);

	if (sqe == NULL) {
		/* the SQ is full (cannot happen with RING_ENTRIES): submit early */
		io_uring_submit(&L->ring);
		cnt_add(&srv.st[rte_lcore_id()].submits, 1);
		sqe = io_uring_get_sqe(&L->ring);
	}
	return sqe;
}

/* Queue a read or write SQE (after a linked timeout when delays are injected). */
static void
queue_rw(struct blk_lcore *L, struct blk_dev *d, struct blk_io *io, bool write)
{
	struct io_uring_sqe *sqe;

	if (srv.delay_ms > 0) {
		io->delay.tv_sec = srv.delay_ms / 1000;
		io->delay.tv_nsec = (long long)(srv.delay_ms % 1000) * 1000000;
		sqe = get_sqe(L);
		io_uring_prep_timeout(sqe, &io->delay, 0, IORING_TIMEOUT_ETIME_SUCCESS);
		sqe->flags |= IOSQE_IO_LINK;
		io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)io | UD_DELAY);
	}
	sqe = get_sqe(L);
	if (write)
		io_uring_prep_write(sqe, d->fd, io->buf, io->len, io->pos);
	else
		io_uring_prep_read(sqe, d->fd, io->buf, io->len, io->pos);
	io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)io | UD_IO);
}

static void
sync_wait(struct blk_dev *d, struct blk_io *io)
{
	struct blk_sync *s = &d->sync[io->lcore];

	io->next = NULL;
	*s->wait_tail = io;
	s->wait_tail = &io->next;
}

/*
 * A memory device's or a --ioengine psync file's I/O, between its file and
 * the context's buffer, on the poller. Returns 0 or an errno.
 */
static uint32_t
sync_rw(struct blk_dev *d, struct blk_io *io, bool write)
{
	ssize_t r;

	do {
		r = write ? pwrite(d->fd, io->buf, io->len, (off_t)io->pos) :
			    pread(d->fd, io->buf, io->len, (off_t)io->pos);
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		return (uint32_t)errno;
	if ((uint32_t)r != io->len)
		return BLK_S_EIO;
	if (write && d->psync && io->wait_sync) {
		/* psync: one fdatasync per durable request, on the poller */
		cnt_add(&srv.st[io->lcore].syncs, 1);
		if (fdatasync(d->fd) < 0)
			return (uint32_t)errno;
	}
	return BLK_S_OK;
}

/* A write's blocks are in the context's buffer: write them out. */
static void
io_write_in(struct blk_lcore *L, struct blk_io *io)
{
	struct blk_dev *d = io->conn->dev;

	if (d->file && !d->psync)
		queue_rw(L, d, io, true);
	else
		io_done(L, io, sync_rw(d, io, true));
}

/*
 * Make the context's buffer hold @p len bytes, registered when @p onesided.
 * Returns 0, -1 when no memory is left (back-pressure), or the status to
 * answer (the registration failed).
 */
static int
io_buf(struct blk_io *io, uint32_t len, bool onesided)
{
	if (len > io->cap) {
		void *b;

		/* grows once to the largest request seen; kept for the next ones */
		if (posix_memalign(&b, BUF_ALIGN, RTE_ALIGN_CEIL(len, BUF_ALIGN)) != 0)
			return -1;
		if (io->reg != NULL && rdp_region_deregister(io->reg) != 0) {
			free(b); /* cannot happen: nothing uses a free context's buffer */
			return EBUSY;
		}
		io->reg = NULL;
		free(io->buf);
		io->buf = b;
		io->cap = RTE_ALIGN_CEIL(len, BUF_ALIGN);
	}
	if (onesided && io->reg == NULL) {
		io->reg = rdp_region_register(io->buf, io->cap, 0);
		if (io->reg == NULL) {
			fprintf(stderr, "rdp-blk serve: registering an I/O buffer of %u bytes: %s\n",
				io->cap, rdp_err_msg());
			return ENOMEM;
		}
	}
	return 0;
}

/*
 * Start a request that needs an I/O context: a file's (io_uring), or a
 * one-sided one (@p rd, the client's descriptor) on any device. False when
 * no context, send buffer or event buffer is left (back-pressure: the
 * request is offered again).
 */
static bool
io_start(struct blk_lcore *L, struct srv_conn *c, struct rdp_msg *m, const struct blk_rep *hdr,
	 uint64_t pos, uint32_t len, bool fua, const struct rdp_rdesc *rd)
{
	struct blk_io *io = L->free;
	struct blk_dev *d = c->dev;
	uint32_t err;
	int ret;

	if (io == NULL)
		return false;
	io->rep = rdp_msg_alloc(c->ep, hdr->opcode == BLK_OP_READ && rd == NULL ?
				BLK_HDR_SIZE + len : BLK_HDR_SIZE);
	if (io->rep == NULL)
		return false;
	ret = io_buf(io, len, rd != NULL);
	if (ret < 0) {
		rdp_msg_free(io->rep);
		io->rep = NULL;
		return false;
	}
	err = (uint32_t)ret;
	io->conn = c;
	io->hdr = *hdr;
	io->len = len;
	io->pos = pos;
	io->lcore = rte_lcore_id();
	io->onesided = rd != NULL;
	io->rdma_busy = false;
	io->wait_sync = hdr->opcode == BLK_OP_WRITE && (srv.sync || fua);
	if (rd != NULL)
		io->rdesc = *rd;
	if (err == 0 && io->onesided && hdr->opcode == BLK_OP_WRITE &&
	    !io_rdma(io, RDP_RDMA_READ)) {
		if (rte_errno == ENOBUFS) {
			rdp_msg_free(io->rep);
			io->rep = NULL;
			io->conn = NULL;
			return false;
		}
		err = rte_errno == ENOTSUP ? BLK_S_EOPNOTSUPP : BLK_S_EIO;
	}
	L->free = io->next;
	__atomic_store_n(&L->inflight, L->inflight + 1, __ATOMIC_RELAXED);
	c->inflight++;
	io->next = NULL;
	if (err != 0) {
		io_done(L, io, err);
		return true;
	}
	switch (hdr->opcode) {
	case BLK_OP_READ:
		if (d->file && !d->psync)
			queue_rw(L, d, io, false);
		else
			io_read_ready(L, io, sync_rw(d, io, false));
		break;
	case BLK_OP_WRITE:
		if (!io->onesided) {
			rdp_msg_read(m, BLK_HDR_SIZE, io->buf, len);
			io_write_in(L, io);
		} /* else when its RDMA READ completes (srv_on_send) */
		break;
	default: /* FLUSH */
		sync_wait(d, io);
		break;
	}
	return true;
}

/*
 * Rule 9, for a one-sided request: its descriptor decodes, covers @p len
 * bytes and grants what the transfer needs. Returns BLK_S_OK or
 * BLK_S_EFAULT.
 */
static uint32_t
desc_check(struct rdp_msg *m, uint8_t opcode, uint32_t len, struct rdp_rdesc *rd)
{
	uint8_t raw[BLK_DESC_LEN];
	char why[128];

	if (rdp_msg_read(m, BLK_HDR_SIZE, raw, sizeof(raw)) != 0 ||
	    rdp_rdesc_decode(raw, sizeof(raw), rd, why, sizeof(why)) != 0 || rd->len < len ||
	    !(rd->access & (opcode == BLK_OP_READ ? RDP_REGION_REMOTE_WRITE :
			    RDP_REGION_REMOTE_READ)))
		return BLK_S_EFAULT;
	return BLK_S_OK;
}

/*
 * A memory device's one-sided read: RDMA WRITE from its mapping, the reply
 * behind it. False when no send or event buffer is left (offered again).
 */
static bool
mem_read_out(struct rdp_ep *ep, struct blk_dev *d, struct blk_rep *hdr, uint64_t pos,
	     uint32_t len, const struct rdp_rdesc *rd)
{
	struct srv_stats *st = &srv.st[rte_lcore_id()];
	const struct rdp_rdma_op op = {
		.opcode = RDP_RDMA_WRITE, .region = d->reg, .offset = pos, .len = len,
		.remote = *rd, .remote_offset = 0, .user_data = OS_MEM,
	};
	struct rdp_msg *r = rdp_msg_alloc(ep, BLK_HDR_SIZE);

	if (r == NULL)
		return false;
	if (rdp_ep_rdma_burst(ep, &op, 1) != 1) {
		rdp_msg_free(r);
		/* else not established any more: no reply can reach the client */
		return rte_errno != ENOBUFS;
	}
	cnt_add(&st->ops[BLK_OP_READ], 1);
	cnt_add(&st->bytes_read, len);
	blk_rep_encode(hdr, r->data);
	if (rdp_ep_send_burst(ep, &r, 1) != 1)
		rdp_msg_free(r);
	return true;
}

static uint16_t
srv_on_recv(struct rdp_ep *ep, struct rdp_msg **reqs, uint16_t n, void *arg)
{
	unsigned int lcore = rte_lcore_id();
	struct srv_stats *st = &srv.st[lcore];
	struct srv_conn *c = rdp_ep_get_ctx(ep);
	struct blk_dev *d = arg;
	struct blk_lcore *L = srv.lc[lcore];
	uint32_t max_count = srv_max_count(ep);
	uint16_t i;

	n = RTE_MIN(n, (uint16_t)SRV_BURST);
	for (i = 0; i < n; i++) {
		struct rdp_msg *m = reqs[i], *r;
		uint8_t raw[BLK_HDR_SIZE] = { 0 };
		struct blk_rep hdr;
		struct blk_req q;
		struct rdp_rdesc rd;
		uint32_t status, len = 0;
		bool misaligned = false, onesided;
		uint64_t pos = 0;

		rdp_msg_read(m, 0, raw, RTE_MIN(m->pkt_len, BLK_HDR_SIZE));
		blk_req_decode(&q, raw);
		status = blk_req_check(&q, m->pkt_len, d->nblocks, max_count);
		if (status == BLK_S_OK && (q.opcode == BLK_OP_READ || q.opcode == BLK_OP_WRITE)) {
			pos = q.block << BLK_BLOCK_SHIFT;
			len = (uint32_t)q.count * BLK_BLOCK_SIZE;
			misaligned = d->direct && (pos % d->align != 0 || len % d->align != 0);
			if (misaligned)
				status = BLK_S_EINVAL;
		}
		hdr = (struct blk_rep){
			.magic = BLK_REP_MAGIC, .opcode = q.opcode, .count = q.count, .tag = q.tag,
			.status = status, .max_count = max_count, .nblocks = d->nblocks,
		};
		onesided = status == BLK_S_OK && (q.flags & BLK_F_RDMA);
		if (onesided) {
			status = desc_check(m, q.opcode, len, &rd);
			if (status != BLK_S_OK)
				cnt_add(&st->bad_desc, 1);
			else if (q.opcode == BLK_OP_WRITE && rdp_ep_read_depth(ep) == 0)
				status = BLK_S_EOPNOTSUPP; /* the endpoint has no RDMA READ */
			hdr.status = status;
		}
		if (status == BLK_S_OK && q.opcode != BLK_OP_INFO &&
		    ((d->file && !d->psync) || (onesided && (d->file || q.opcode == BLK_OP_WRITE)))) {
			if (c == NULL || L == NULL) {
				status = ENOMEM; /* no connection state (calloc failed): answer so */
			} else {
				if (!io_start(L, c, m, &hdr, pos, len, q.flags & BLK_F_FUA,
					      onesided ? &rd : NULL))
					break; /* no context or buffer: back-pressure, offered again */
				rdp_msg_free(m);
				continue;
			}
		}
		if (status == BLK_S_OK && onesided) {
			/* a memory device's read: straight from its mapping */
			if (!mem_read_out(ep, d, &hdr, pos, len, &rd))
				break;
			rdp_msg_free(m);
			continue;
		}
		r = rdp_msg_alloc(ep, status == BLK_S_OK ? blk_rep_len(q.opcode, q.count, q.flags) :
				  BLK_HDR_SIZE);
		if (r == NULL)
			break;
		if (status == ENOMEM) {
			cnt_add(&st->io_errors, 1);
			hdr.status = status;
		} else if (status != BLK_S_OK) {
			cnt_add(&st->refused, 1);
			if (status == BLK_S_ERANGE)
				cnt_add(&st->beyond, 1);
			else if (misaligned)
				cnt_add(&st->misaligned, 1);
		} else {
			if ((q.opcode == BLK_OP_READ || q.opcode == BLK_OP_WRITE) && d->psync)
				status = psync_io(d, q.opcode == BLK_OP_READ ? r : m, pos, len,
						  q.opcode == BLK_OP_WRITE);
			else if (q.opcode == BLK_OP_READ || q.opcode == BLK_OP_WRITE)
				status = mem_io(d->fd, q.opcode == BLK_OP_READ ? r : m,
						BLK_HDR_SIZE, pos, len, q.opcode == BLK_OP_WRITE);
			if (status == BLK_S_OK && d->psync && (q.opcode == BLK_OP_FLUSH ||
			    (q.opcode == BLK_OP_WRITE && (srv.sync || (q.flags & BLK_F_FUA))))) {
				/* psync: one fdatasync per durable request, on the poller */
				status = fdatasync(d->fd) < 0 ? (uint32_t)errno : BLK_S_OK;
				cnt_add(&st->syncs, 1);
			}
			if (status != BLK_S_OK && q.opcode == BLK_OP_READ) {
				/* an error reply carries no data */
				rdp_msg_free(r);
				r = rdp_msg_alloc(ep, BLK_HDR_SIZE);
				if (r == NULL)
					break; /* retried when a buffer is back */
			}
			if (status != BLK_S_OK) {
				cnt_add(&st->io_errors, 1);
			} else {
				cnt_add(&st->ops[q.opcode], 1);
				if (q.opcode == BLK_OP_READ)
					cnt_add(&st->bytes_read, len);
				else if (q.opcode == BLK_OP_WRITE)
					cnt_add(&st->bytes_written, len);
			}
			hdr.status = status;
		}
		blk_rep_encode(&hdr, r->data); /* a segment holds >= 64 bytes */
		if (rdp_ep_send_burst(ep, &r, 1) != 1)
			rdp_msg_free(r); /* the endpoint is going away */
		rdp_msg_free(m);
	}
	return i;
}

/* The fdatasync of @p s ended with @p res: answer what it covered. */
static void
sync_done(struct blk_lcore *L, struct blk_sync *s, int res)
{
	struct blk_io *io = s->syncing;

	s->syncing = NULL;
	s->inflight = false;
	while (io != NULL) {
		struct blk_io *next = io->next;

		io_done(L, io, res < 0 ? (uint32_t)-res : BLK_S_OK);
		io = next;
	}
}

static void
cqe_io(struct blk_lcore *L, struct blk_io *io, int res)
{
	uint8_t op = io->hdr.opcode;
	uint32_t status = BLK_S_OK;

	if (srv.eio[op])
		res = -EIO; /* test hook: the device failed */
	if (res < 0)
		status = (uint32_t)-res;
	else if ((uint32_t)res != io->len)
		status = BLK_S_EIO; /* short: the file shrank under us, or the disk is full */
	if (op == BLK_OP_READ) {
		io_read_ready(L, io, status);
		return;
	}
	if (status == BLK_S_OK && op == BLK_OP_WRITE && io->wait_sync) {
		io->wait_sync = false;
		sync_wait(io->conn->dev, io);
		return;
	}
	io->wait_sync = false;
	io_done(L, io, status);
}

/* Once per poll: reap, start the fdatasyncs due, submit. */
static unsigned int
srv_poll(void *arg)
{
	struct blk_lcore *L = arg;
	unsigned int lcore = rte_lcore_id(), work = 0, n, i;
	struct io_uring_cqe *cqes[CQE_BATCH];

	if (L->rdma_wait != NULL)
		work += rdma_retry(L);
	if (__atomic_load_n(&srv.closing, __ATOMIC_ACQUIRE) && !L->closed_all) {
		struct srv_conn *c;

		/* one waiting for its I/O closes itself once that is back (conn_put) */
		TAILQ_FOREACH(c, &L->conns, next)
			if (!c->failed)
				rdp_ep_close(c->ep);
		L->closed_all = true;
	}
	if (!L->has_ring)
		return work;
	while (L->retry != NULL) {
		struct blk_io *io = L->retry;
		struct rdp_msg *r = io->conn->failed ? NULL : rdp_msg_alloc(io->conn->ep, BLK_HDR_SIZE);

		if (r == NULL && !io->conn->failed)
			break;
		L->retry = io->next;
		if (r != NULL) {
			rdp_msg_free(io->rep);
			io->rep = r;
		}
		io_reply(io);
		io_release(L, io);
		work++;
	}
	/*
	 * Completions the kernel still has to post run as task work of this
	 * thread, which a poller that makes no system call never runs: enter
	 * the kernel without waiting when the ring says some is pending (or,
	 * without IORING_SETUP_TASKRUN_FLAG, every TASKRUN_POLLS quiet polls).
	 */
	if (L->inflight > 0) {
		if (L->taskrun_flag && (__atomic_load_n(L->ring.sq.kflags, __ATOMIC_ACQUIRE) &
					IORING_SQ_TASKRUN) != 0)
			io_uring_get_events(&L->ring);
		else if (!L->taskrun_flag && ++L->quiet_polls >= TASKRUN_POLLS) {
			io_uring_get_events(&L->ring);
			L->quiet_polls = 0;
		}
	}
	while ((n = io_uring_peek_batch_cqe(&L->ring, cqes, CQE_BATCH)) > 0) {
		for (i = 0; i < n; i++) {
			uint64_t ud = io_uring_cqe_get_data64(cqes[i]);
			void *p = (void *)(uintptr_t)(ud & ~(uint64_t)UD_KIND);

			switch (ud & UD_KIND) {
			case UD_IO:
				cqe_io(L, p, cqes[i]->res);
				break;
			case UD_SYNC:
				sync_done(L, p, srv.eio[BLK_OP_FLUSH] ? -EIO : cqes[i]->res);
				break;
			default: /* UD_DELAY: the timeout before an I/O */
				break;
			}
		}
		io_uring_cq_advance(&L->ring, n);
		work += n;
	}
	for (i = 0; i < srv.nb_devs; i++) {
		struct blk_dev *d = srv.dev[i];
		struct blk_sync *s = &d->sync[lcore];
		struct io_uring_sqe *sqe;

		if (!d->file || s->inflight || s->wait == NULL)
			continue;
		sqe = get_sqe(L);
		io_uring_prep_fsync(sqe, d->fd, IORING_FSYNC_DATASYNC);
		io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)s | UD_SYNC);
		s->syncing = s->wait;
		s->wait = NULL;
		s->wait_tail = &s->wait;
		s->inflight = true;
		cnt_add(&srv.st[lcore].syncs, 1);
	}
	if (io_uring_sq_ready(&L->ring) > 0) {
		/* one system call for the poll's SQEs; it does not wait for them. What
		 * it could not take (EAGAIN, EBUSY) stays queued for the next poll. */
		int ret = io_uring_submit(&L->ring);

		cnt_add(&srv.st[lcore].submits, 1);
		if (ret > 0)
			work += (unsigned int)ret;
	}
	return work;
}

/* A one-sided operation completed (@p ok) or failed. */
static void
rdma_event(struct blk_lcore *L, uint64_t ud, bool ok)
{
	struct srv_stats *st = &srv.st[rte_lcore_id()];
	struct blk_io *io = (struct blk_io *)(uintptr_t)ud;

	if (!ok)
		cnt_add(&st->rdma_failed, 1);
	if (ud == OS_MEM) {
		if (ok)
			cnt_add(&st->rdma_writes, 1);
		return;
	}
	if (io->hdr.opcode == BLK_OP_READ) {
		/* the read's blocks left; its reply went behind them */
		if (ok)
			cnt_add(&st->rdma_writes, 1);
		io->rdma_busy = false;
		if (io->rep == NULL)
			io_release(L, io);
		return;
	}
	if (!ok) {
		io_drop(L, io); /* the endpoint fails: no reply can reach the client */
		return;
	}
	cnt_add(&st->rdma_reads, 1);
	io_write_in(L, io);
}

static void
srv_on_send(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	struct blk_lcore *L = srv.lc[rte_lcore_id()];
	uint16_t i;

	RTE_SET_USED(ep);
	RTE_SET_USED(arg);
	for (i = 0; i < n; i++) {
		struct rdp_msg *m = msgs[i];

		if (m->event == RDP_EV_RDMA_DONE || m->event == RDP_EV_RDMA_FAILED)
			rdma_event(L, m->user_data, m->event == RDP_EV_RDMA_DONE);
		rdp_msg_free(m);
	}
	if (L != NULL && L->rdma_wait != NULL)
		rdma_retry(L);
}

static void
srv_on_state(struct rdp_ep *ep, enum rdp_ep_state state, int err, void *arg)
{
	struct srv_conn *c = rdp_ep_get_ctx(ep);
	struct blk_lcore *L = srv.lc[rte_lcore_id()];

	RTE_SET_USED(err);
	if (state == RDP_EP_ESTABLISHED) {
		c = calloc(1, sizeof(*c));
		if (c != NULL) {
			c->ep = ep;
			c->dev = arg;
			rdp_ep_set_ctx(ep, c);
			if (L != NULL)
				TAILQ_INSERT_TAIL(&L->conns, c, next);
		}
		__atomic_fetch_add(&srv.endpoints, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&srv.accepted, 1, __ATOMIC_RELAXED);
	} else if (state == RDP_EP_FAILED || state == RDP_EP_PEER_CLOSED) {
		/* the client left (or crashed): let it go once its I/O is back */
		if (c != NULL && c->inflight > 0)
			c->failed = true;
		else
			rdp_ep_close(ep);
	} else if (state == RDP_EP_CLOSED) {
		__atomic_fetch_sub(&srv.endpoints, 1, __ATOMIC_RELEASE);
		rdp_ep_set_ctx(ep, NULL);
		if (c != NULL && L != NULL)
			TAILQ_REMOVE(&L->conns, c, next);
		if (c != NULL && c->inflight > 0) {
			/* closed under I/O in flight (rdp_fini): its replies are freed */
			c->failed = true;
			c->closed = true;
		} else {
			free(c);
		}
	}
}

static const struct rdp_ep_ops srv_ops = {
	.on_recv = srv_on_recv,
	.on_send = srv_on_send,
	.on_state = srv_on_state,
};

/* ---------------------------------------------------------------------- */
/* Devices and control                                                    */
/* ---------------------------------------------------------------------- */

static void
human(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned int u = 0;

	while (u + 1 < RTE_DIM(unit) && bytes >= 1024 && bytes % 1024 == 0) {
		bytes /= 1024;
		u++;
	}
	snprintf(buf, len, "%" PRIu64 " %s", bytes, unit[u]);
}

/* The direct-I/O alignment of an open file: statx, else its logical block size. */
static uint32_t
dio_align(int fd, bool blkdev)
{
	const char *env = getenv("RDP_BLK_DIO_ALIGN");
	struct statx sx;
	int ssz;

	if (env != NULL && atoi(env) > 0)
		return (uint32_t)atoi(env);
	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 &&
	    (sx.stx_mask & STATX_DIOALIGN) && sx.stx_dio_offset_align > 0)
		return RTE_MAX(sx.stx_dio_offset_align, BLK_BLOCK_SIZE);
	if (blkdev && ioctl(fd, BLKSSZGET, &ssz) == 0 && ssz > 0)
		return RTE_MAX((uint32_t)ssz, BLK_BLOCK_SIZE);
	return BUF_ALIGN;
}

static int
file_open(struct blk_dev *d, const char *file, uint64_t size, bool direct, bool psync)
{
	char hs[32];
	struct stat sb;

	d->fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC | (direct ? O_DIRECT : 0), 0644);
	if (d->fd < 0 && direct && errno == EINVAL) {
		fprintf(stderr, "rdp-blk serve: --file %s: its file system refuses O_DIRECT "
			"(EINVAL): give --no-direct to go through the page cache\n", file);
		return -1;
	}
	if (d->fd < 0 || fstat(d->fd, &sb) < 0) {
		fprintf(stderr, "rdp-blk serve: --file %s: %s\n", file, strerror(errno));
		return -1;
	}
	if (S_ISBLK(sb.st_mode)) {
		uint64_t dev_size;

		if (ioctl(d->fd, BLKGETSIZE64, &dev_size) < 0) {
			fprintf(stderr, "rdp-blk serve: --file %s: BLKGETSIZE64: %s\n", file,
				strerror(errno));
			return -1;
		}
		if (size > dev_size) {
			fprintf(stderr, "rdp-blk serve: --size %" PRIu64 ": the device %s has only %"
				PRIu64 " bytes\n", size, file, dev_size);
			return -1;
		}
		if (size == 0)
			size = dev_size & ~(uint64_t)(BLK_BLOCK_SIZE - 1);
	} else if (S_ISREG(sb.st_mode)) {
		if (size == 0) {
			size = (uint64_t)sb.st_size;
			if (size == 0 || size % BLK_BLOCK_SIZE != 0) {
				fprintf(stderr, "rdp-blk serve: --file %s has %" PRIu64 " bytes, not "
					"a positive multiple of %u: give --size\n", file, size,
					BLK_BLOCK_SIZE);
				return -1;
			}
		} else if ((uint64_t)sb.st_size < size && ftruncate(d->fd, (off_t)size) < 0) {
			fprintf(stderr, "rdp-blk serve: --file %s: cannot grow it to %" PRIu64
				" bytes: %s\n", file, size, strerror(errno));
			return -1;
		}
	} else {
		fprintf(stderr, "rdp-blk serve: --file %s: not a regular file or a block device\n",
			file);
		return -1;
	}
	d->file = true;
	d->direct = direct;
	d->psync = psync;
	d->align = direct ? dio_align(d->fd, S_ISBLK(sb.st_mode)) : BLK_BLOCK_SIZE;
	if (d->align > BUF_ALIGN) {
		fprintf(stderr, "rdp-blk serve: --file %s: direct I/O needs %u-byte alignment, "
			"more than the %u rdp-blk gives: give --no-direct\n", file, d->align,
			BUF_ALIGN);
		return -1;
	}
	human(size, hs, sizeof(hs));
	snprintf(d->what, sizeof(d->what), "%s (%s, %s)", file, hs,
		 direct ? "O_DIRECT" : "page cache");
	d->nblocks = size / BLK_BLOCK_SIZE;
	return 0;
}

static int
dev_open(struct blk_dev *d, const struct blk_export *e, const struct serve_opts *o)
{
	unsigned int l;
	char hs[32];

	d->fd = -1;
	for (l = 0; l < RTE_MAX_LCORE; l++)
		d->sync[l].wait_tail = &d->sync[l].wait;
	if (e->file != NULL)
		return file_open(d, e->file, o->size, !o->no_direct, o->psync);
	d->fd = memfd_create("rdp-blk", MFD_CLOEXEC);
	if (d->fd < 0 || ftruncate(d->fd, (off_t)e->size) < 0) {
		fprintf(stderr, "rdp-blk serve: --memory: %s\n", strerror(errno));
		return -1;
	}
	human(e->size, hs, sizeof(hs));
	snprintf(d->what, sizeof(d->what), "memory device of %s", hs);
	d->nblocks = e->size / BLK_BLOCK_SIZE;
	return 0;
}

/* The test hooks of the file backend (see the top of this file). */
static void
read_hooks(void)
{
	const char *delay = getenv("RDP_BLK_INJECT_DELAY_MS"), *eio = getenv("RDP_BLK_INJECT_EIO");

	srv.delay_ms = delay != NULL ? (unsigned int)atoi(delay) : 0;
	if (eio != NULL) {
		srv.eio[BLK_OP_READ] = strstr(eio, "read") != NULL;
		srv.eio[BLK_OP_WRITE] = strstr(eio, "write") != NULL;
		srv.eio[BLK_OP_FLUSH] = strstr(eio, "sync") != NULL;
	}
	if (!srv.quiet && (srv.delay_ms > 0 || eio != NULL))
		printf("rdp-blk serve: test hooks: every file I/O delayed %u ms, EIO injected "
		       "on: %s\n", srv.delay_ms, eio != NULL ? eio : "nothing");
}

/*
 * The kernel's io-wq workers of a ring (the I/O it could not start without
 * blocking: most O_DIRECT writes on ext4, say) run on the CPUs the process
 * may use other than the poller's: pinned beside a busy-polling thread
 * they would wait for it for seconds.
 */
static void
iowq_affinity(struct blk_lcore *L, unsigned int lcore)
{
	rte_cpuset_t cpus = rte_lcore_cpuset(lcore);
	cpu_set_t mask;
	unsigned int c;
	int n = 0;

	if (sched_getaffinity(0, sizeof(mask), &mask) != 0)
		return;
	for (c = 0; c < CPU_SETSIZE; c++) {
		if (CPU_ISSET(c, &cpus))
			CPU_CLR(c, &mask);
		else if (CPU_ISSET(c, &mask))
			n++;
	}
	if (n == 0)
		return; /* nowhere else to go */
	io_uring_register_iowq_aff(&L->ring, sizeof(mask), &mask);
}

/* One io_uring per poller lcore that may serve a file device. */
/*
 * The I/O contexts of each poller lcore, and with @p ring an io_uring
 * (files with --ioengine io_uring); the poll hook runs both.
 */
static int
rings_init(int lcore, bool ring)
{
	unsigned int ids[RTE_MAX_LCORE], n = 0, i, k;

	if (lcore >= 0) {
		ids[n++] = (unsigned int)lcore;
	} else {
		RTE_LCORE_FOREACH_WORKER(i)
			ids[n++] = i;
	}
	for (i = 0; i < n; i++) {
		struct blk_lcore *L;
		int ret;

		if (srv.lc[ids[i]] != NULL)
			continue;
		L = calloc(1, sizeof(*L));
		if (L == NULL) {
			fprintf(stderr, "rdp-blk serve: no memory for the I/O contexts\n");
			return -1;
		}
		if (ring) {
			ret = io_uring_queue_init(RING_ENTRIES, &L->ring, IORING_SETUP_COOP_TASKRUN |
						  IORING_SETUP_TASKRUN_FLAG);
			L->taskrun_flag = ret == 0;
			if (ret == -EINVAL) /* before Linux 5.19 */
				ret = io_uring_queue_init(RING_ENTRIES, &L->ring, 0);
			if (ret < 0) {
				fprintf(stderr, "rdp-blk serve: io_uring_queue_init(%u): %s\n",
					RING_ENTRIES, strerror(-ret));
				free(L);
				return -1;
			}
			L->has_ring = true;
			iowq_affinity(L, ids[i]);
		}
		for (k = 0; k < SRV_IOS; k++) {
			L->ios[k].next = L->free;
			L->free = &L->ios[k];
		}
		TAILQ_INIT(&L->conns);
		ret = rdp_poll_hook_set(ids[i], srv_poll, L);
		if (ret < 0) {
			if (ret != -ENODEV)
				fprintf(stderr, "rdp-blk serve: %s\n", rdp_err_msg());
			if (L->has_ring)
				io_uring_queue_exit(&L->ring);
			free(L);
			/* -ENODEV: not a poller lcore (the loader's main lcore, say) */
			if (ret == -ENODEV)
				continue;
			return -1;
		}
		srv.lc[ids[i]] = L;
	}
	return 0;
}

/*
 * A memory device's mapping, registered: one-sided reads leave from it.
 * Populated at once: a read of a page never written would otherwise
 * allocate and clear it in the poller's copy.
 */
static int
mem_register(struct blk_dev *d)
{
	size_t len = d->nblocks * BLK_BLOCK_SIZE;

	d->map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, d->fd, 0);
	if (d->map == MAP_FAILED) {
		d->map = NULL;
		fprintf(stderr, "rdp-blk serve: --memory: mmap: %s\n", strerror(errno));
		return -1;
	}
	d->reg = rdp_region_register(d->map, len, 0);
	if (d->reg == NULL) {
		fprintf(stderr, "rdp-blk serve: --memory: registering its %zu bytes: %s\n", len,
			rdp_err_msg());
		return -1;
	}
	return 0;
}

int
blk_server_start(const struct serve_opts *o, int lcore, int *ports)
{
	bool any_file = false;
	unsigned int i;

	srv.quiet = o->c.quiet;
	srv.sync = o->sync;
	read_hooks();
	for (i = 0; i < o->nb_exports; i++) {
		struct blk_dev *d = calloc(1, sizeof(*d));

		if (d == NULL) {
			fprintf(stderr, "rdp-blk serve: no memory\n");
			return -1;
		}
		d->index = i;
		srv.dev[srv.nb_devs++] = d;
		if (dev_open(d, &o->exports[i], o) < 0 || (!d->file && mem_register(d) < 0))
			return -1;
		any_file |= d->file && !d->psync;
	}
	if (rings_init(lcore, any_file) < 0)
		return -1;
	for (i = 0; i < srv.nb_devs; i++) {
		struct blk_dev *d = srv.dev[i];
		struct rdp_ep_params prm = { .ops = &srv_ops, .lcore = lcore, .arg = d };
		char addr[300];
		const char *listen = o->listen;

		if (i > 0 && listen != NULL) {
			/* device i listens on the first one's port + i (0: a free port) */
			const char *colon = strrchr(listen, ':');
			int base = colon != NULL ? atoi(colon + 1) : 0;

			snprintf(addr, sizeof(addr), "%.*s:%d", colon != NULL ? (int)(colon - listen) :
				 (int)strlen(listen), listen, base != 0 ? base + (int)i : 0);
			listen = addr;
		}
		ports[i] = rdp_listen(listen, &prm);
		srv.ports[i] = ports[i];
		if (ports[i] < 0) {
			fprintf(stderr, "rdp-blk serve: %s\n", rdp_err_msg());
			return -1;
		}
		if (!srv.quiet)
			printf("rdp-blk serve: %s, %" PRIu64 " blocks of %u B, listening on port %d\n",
			       d->what, d->nblocks, BLK_BLOCK_SIZE, ports[i]);
	}
	if (!srv.quiet) {
		printf("rdp-blk serve: writes acknowledged %s; %s\n",
		       srv.sync ? "after fdatasync (--sync)" : "once written (durable after a FLUSH)",
		       o->psync ? "file I/O by pread/pwrite on the pollers (--ioengine psync, "
		       "blocking)" : "file I/O by io_uring, submitted and reaped by the pollers "
		       "without waiting");
		fflush(stdout);
	}
	return 0;
}

void
blk_server_progress(double dt)
{
	struct srv_stats t;
	uint64_t ops, last;

	stats_sum(&t);
	ops = t.ops[BLK_OP_READ] + t.ops[BLK_OP_WRITE] + t.ops[BLK_OP_FLUSH];
	last = srv.last.ops[BLK_OP_READ] + srv.last.ops[BLK_OP_WRITE] + srv.last.ops[BLK_OP_FLUSH];
	if (!srv.quiet && (ops != last || t.refused != srv.last.refused ||
			   t.io_errors != srv.last.io_errors)) {
		printf("rdp-blk serve: %u endpoint(s)  %8.0f IOPS (read %.0f, write %.0f, flush "
		       "%.0f)  %7.1f MB/s  %.0f syncs/s  refused %" PRIu64 "  I/O errors %"
		       PRIu64 "\n", __atomic_load_n(&srv.endpoints, __ATOMIC_RELAXED),
		       (ops - last) / dt, (t.ops[BLK_OP_READ] - srv.last.ops[BLK_OP_READ]) / dt,
		       (t.ops[BLK_OP_WRITE] - srv.last.ops[BLK_OP_WRITE]) / dt,
		       (t.ops[BLK_OP_FLUSH] - srv.last.ops[BLK_OP_FLUSH]) / dt,
		       (t.bytes_read + t.bytes_written - srv.last.bytes_read -
			srv.last.bytes_written) / dt / 1e6, (t.syncs - srv.last.syncs) / dt,
		       t.refused, t.io_errors);
		fflush(stdout);
	}
	srv.last = t;
}

/* Wait (up to 5 s) for the file I/O in flight, while the pollers still run. */
static void
srv_drain(void)
{
	double deadline = rdp_clock_s() + 5;
	unsigned int l, busy;

	do {
		busy = 0;
		for (l = 0; l < RTE_MAX_LCORE; l++)
			if (srv.lc[l] != NULL)
				busy += __atomic_load_n(&srv.lc[l]->inflight, __ATOMIC_RELAXED);
		if (busy == 0)
			return;
		usleep(1000);
	} while (rdp_clock_s() < deadline);
	fprintf(stderr, "rdp-blk serve: %u file I/O(s) still in flight at exit\n", busy);
}

void
blk_server_quiesce(void)
{
	double deadline = rdp_clock_s() + 5;
	unsigned int i, k;

	for (i = 0; i < srv.nb_devs; i++)
		if (srv.ports[i] > 0)
			rdp_listen_close(srv.ports[i]);
	__atomic_store_n(&srv.closing, true, __ATOMIC_RELEASE);
	while (__atomic_load_n(&srv.endpoints, __ATOMIC_ACQUIRE) > 0 && rdp_clock_s() < deadline)
		usleep(1000);
	if (__atomic_load_n(&srv.endpoints, __ATOMIC_ACQUIRE) > 0) {
		/* rdp_fini() closes them; their buffers stay registered until it is done */
		fprintf(stderr, "rdp-blk serve: %u endpoint(s) still open after 5 s\n",
			__atomic_load_n(&srv.endpoints, __ATOMIC_RELAXED));
		return;
	}
	for (i = 0; i < RTE_MAX_LCORE; i++) {
		struct blk_lcore *L = srv.lc[i];

		for (k = 0; L != NULL && k < SRV_IOS; k++) {
			if (L->ios[k].reg != NULL && rdp_region_deregister(L->ios[k].reg) != 0)
				fprintf(stderr, "rdp-blk serve: an I/O buffer: %s\n", rdp_err_msg());
			L->ios[k].reg = NULL;
		}
	}
	for (i = 0; i < srv.nb_devs; i++) {
		struct blk_dev *d = srv.dev[i];

		if (d->reg != NULL && rdp_region_deregister(d->reg) != 0)
			fprintf(stderr, "rdp-blk serve: %s: %s\n", d->what, rdp_err_msg());
		d->reg = NULL;
	}
}

void
blk_server_stop(void)
{
	struct srv_stats t;
	unsigned int i, k;

	stats_sum(&t);
	for (i = 0; i < RTE_MAX_LCORE; i++) {
		struct blk_lcore *L = srv.lc[i];

		if (L == NULL)
			continue;
		if (L->has_ring)
			io_uring_queue_exit(&L->ring);
		for (k = 0; k < SRV_IOS; k++)
			free(L->ios[k].buf);
		free(L);
		srv.lc[i] = NULL;
	}
	for (i = 0; i < RTE_MAX_LCORE; i++) {
		free(srv.bounce[i]);
		srv.bounce[i] = NULL;
	}
	for (i = 0; i < srv.nb_devs; i++) {
		struct blk_dev *d = srv.dev[i];

		if (d->map != NULL)
			munmap(d->map, d->nblocks * BLK_BLOCK_SIZE);
		if (d->fd >= 0) {
			if (d->file && fdatasync(d->fd) < 0)
				fprintf(stderr, "rdp-blk serve: %s: fdatasync at exit: %s\n", d->what,
					strerror(errno));
			close(d->fd);
		}
		free(d);
		srv.dev[i] = NULL;
	}
	if (srv.nb_devs == 0)
		return;
	srv.nb_devs = 0;
	if (!srv.quiet)
		printf("rdp-blk serve: %u endpoint(s) served: %" PRIu64 " reads, %" PRIu64
		       " writes, %" PRIu64 " flushes, %" PRIu64 " infos, %" PRIu64 " refused, %"
		       PRIu64 " I/O errors, %" PRIu64 " syncs (refused: %" PRIu64 " beyond the "
		       "device, %" PRIu64 " misaligned for O_DIRECT, %" PRIu64 " bad descriptors; %"
		       PRIu64 " io_uring submits)\n"
		       "rdp-blk serve: one-sided: %" PRIu64 " RDMA WRITEs and %" PRIu64
		       " RDMA READs done, %" PRIu64 " failed\n",
		       __atomic_load_n(&srv.accepted, __ATOMIC_RELAXED), t.ops[BLK_OP_READ],
		       t.ops[BLK_OP_WRITE], t.ops[BLK_OP_FLUSH], t.ops[BLK_OP_INFO], t.refused,
		       t.io_errors, t.syncs, t.beyond, t.misaligned, t.bad_desc, t.submits,
		       t.rdma_writes, t.rdma_reads, t.rdma_failed);
}

int
serve_run(const struct serve_opts *o)
{
	int ports[MAX_DEVS];
	unsigned int i;
	double last;

	if (blk_server_start(o, -1, ports) < 0)
		return BLK_EXIT_FAIL;
	if (o->port_fd >= 0) {
		for (i = 0; i < o->nb_exports; i++) {
			if (write(o->port_fd, &ports[i], sizeof(ports[i])) != sizeof(ports[i])) {
				fprintf(stderr, "rdp-blk serve: --port-fd %d: %s\n", o->port_fd,
					strerror(errno));
				return BLK_EXIT_FAIL;
			}
		}
		close(o->port_fd);
	}
	last = rdp_clock_s();
	while (!blk_force_quit) {
		double now;

		usleep(10000);
		now = rdp_clock_s();
		if (now - last >= 1.0) {
			blk_server_progress(now - last);
			last = now;
		}
	}
	srv_drain();
	return BLK_EXIT_OK;
}

/* ---------------------------------------------------------------------- */
/* Options                                                                */
/* ---------------------------------------------------------------------- */

void
serve_usage(FILE *f)
{
	fprintf(f,
"usage: rdp-blk [EAL options] -- serve (--file PATH | --memory SIZE)... [options]\n"
"\n"
"Export files, block devices or memory devices as 512-byte blocks to any\n"
"number of rdp-blk clients, one listening port each. Requests run to\n"
"completion on the poller lcores; file I/O goes through one io_uring per\n"
"poller, submitted once per poll and reaped without waiting, so a slow disk\n"
"never stalls the other endpoints of its poller. Stop with Ctrl-C (SIGINT)\n"
"or SIGTERM.\n"
"\n"
"Devices (each --file and --memory is one, in order; device i listens on\n"
"the --listen port + i, or on a free port of its own with port 0):\n"
"  --file PATH          a regular file (created if missing) or a block device,\n"
"                       opened with O_DIRECT\n"
"  --size SIZE          bytes exported from each --file: a multiple of 512,\n"
"                       with an optional K, M, G or T suffix (powers of 1024); a\n"
"                       shorter file is extended. Default: the file's size\n"
"  --memory SIZE        a memory device of SIZE bytes (lost at exit)\n"
"  --no-direct          open files without O_DIRECT (through the page cache):\n"
"                       for a file system that refuses O_DIRECT, or requests\n"
"                       below its direct-I/O alignment\n"
"  --ioengine ENGINE    io_uring (default) or psync: pread/pwrite on the\n"
"                       poller, which waits for the disk (a baseline to\n"
"                       compare with; a durable request syncs alone)\n"
"  --sync               acknowledge a write only once it is durable: one\n"
"                       fdatasync (an io_uring operation) after each group of\n"
"                       completed writes. Without it a write is acknowledged\n"
"                       when it completed and a FLUSH request makes the writes\n"
"                       before it durable\n"
"\n"
"Network and runtime:\n"
"  --listen HOST:PORT   control-plane address of the first device (default: the\n"
"                       configuration's `listen`, 127.0.0.1:18515; port 0 picks\n"
"                       free ports)\n"
"  -c, --config FILE    per-core configuration (see docs/configuration.md)\n"
"  --driver NAME[:ARGS] driver (default: auto, verbs with an active RDMA port,\n"
"                       else shm)\n"
"  --port-fd FD         write the bound ports (a native int per device, in\n"
"                       order) to file descriptor FD once listening, then close\n"
"                       it (for scripts, tests)\n"
"  -q, --quiet          no banner, progress or totals\n"
"  -h, --help           this text\n"
"\n"
"Without EAL options, the main lcore runs on the first CPU and one poller on\n"
"the second (a loader started the same way polls on the first).\n"
"\n"
"Examples:\n"
"  rdp-blk -- serve --memory 1G\n"
"  rdp-blk -- serve --file /var/tmp/disk.img --size 4G --sync\n"
"  rdp-blk -l 0-2 -- serve --file /dev/nvme0n1 --listen 0.0.0.0:18515\n");
}

int
serve_parse(int argc, char **argv, struct serve_opts *o)
{
	static const struct option opts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "size", required_argument, NULL, 's' },
		{ "memory", required_argument, NULL, 'm' },
		{ "no-direct", no_argument, NULL, 'N' },
		{ "ioengine", required_argument, NULL, 'E' },
		{ "sync", no_argument, NULL, 'S' },
		{ "listen", required_argument, NULL, 'L' },
		{ "config", required_argument, NULL, 'c' },
		{ "driver", required_argument, NULL, 'D' },
		{ "port-fd", required_argument, NULL, 'F' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *size_arg = NULL, *mem_arg = NULL;
	bool any_file = false;
	uint64_t mem = 0;
	unsigned int i;
	char *end;
	int c;

	memset(o, 0, sizeof(*o));
	o->port_fd = -1;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
		case 'm':
			if (o->nb_exports == BLK_MAX_EXPORTS)
				return blk_bad_option("serve", c == 'f' ? "--file" : "--memory", optarg,
						      "at most 8 devices");
			if (c == 'm') {
				mem_arg = optarg;
				if (blk_parse_size(optarg, &mem) < 0 || mem == 0 ||
				    mem % BLK_BLOCK_SIZE != 0)
					return blk_bad_option("serve", "--memory", optarg,
							      "expected a positive multiple of 512 "
							      "bytes, e.g. 1G");
			}
			o->exports[o->nb_exports].file = c == 'f' ? optarg : NULL;
			o->exports[o->nb_exports].size = c == 'm' ? mem : 0;
			o->nb_exports++;
			any_file |= c == 'f';
			break;
		case 's':
			size_arg = optarg;
			if (blk_parse_size(optarg, &o->size) < 0 || o->size == 0 ||
			    o->size % BLK_BLOCK_SIZE != 0)
				return blk_bad_option("serve", "--size", optarg,
						      "expected a positive multiple of 512 bytes, "
						      "e.g. 64M");
			break;
		case 'N': o->no_direct = true; break;
		case 'E':
			if (strcmp(optarg, "io_uring") != 0 && strcmp(optarg, "psync") != 0)
				return blk_bad_option("serve", "--ioengine", optarg,
						      "expected io_uring or psync");
			o->psync = strcmp(optarg, "psync") == 0;
			break;
		case 'S': o->sync = true; break;
		case 'L': o->listen = optarg; break;
		case 'c': o->c.config = optarg; break;
		case 'D': o->c.driver = optarg; break;
		case 'F':
			o->port_fd = (int)strtol(optarg, &end, 10);
			if (*end != '\0' || end == optarg || o->port_fd < 0)
				return blk_bad_option("serve", "--port-fd", optarg,
						      "expected a file descriptor number");
			break;
		case 'q': o->c.quiet = true; break;
		case 'h': serve_usage(stdout); exit(BLK_EXIT_OK);
		case ':':
			return blk_bad_option("serve", argv[optind - 1], "", "needs a value");
		default:
			return blk_bad_option("serve", argv[optind - 1], "", "unknown option");
		}
	}
	if (optind < argc)
		return blk_bad_option("serve", "argument", argv[optind], "unexpected");
	if (o->nb_exports == 0)
		return blk_bad_option("serve", "--file/--memory", "(missing)",
				      "say what to export, e.g. --memory 1G");
	if (!any_file) {
		if (size_arg != NULL)
			return blk_bad_option("serve", "--size", size_arg,
					      "only with --file (--memory takes the size)");
		if (o->sync)
			return blk_bad_option("serve", "--sync", "with --memory",
					      "a memory device keeps nothing across a restart");
		if (o->no_direct)
			return blk_bad_option("serve", "--no-direct", "", "only with --file");
		if (o->psync)
			return blk_bad_option("serve", "--ioengine", "psync", "only with --file");
	}
	for (i = 0; i < o->nb_exports; i++)
		if (o->exports[i].file != NULL && o->exports[i].file[0] == '\0')
			return blk_bad_option("serve", "--file", "''", "expected a path");
	RTE_SET_USED(mem_arg);
	return 0;
}
