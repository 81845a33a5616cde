/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdp-blk serve: a file, a block device or a memory device exported as
 * 4 KiB blocks over rdmaplane endpoints.
 *
 * Run-to-completion: requests are handled in on_recv on the poller lcore
 * that owns the endpoint. A read is pread straight into the segments of
 * the reply message (registered send buffers), a write is pwrite from the
 * segments of the received message: the data is never copied in user
 * space. The file I/O blocks the poller; that is the demo's simplification
 * (a production backend would hand it to io_uring or SPDK and answer on
 * completion).
 *
 * Durability (--sync): the writes and flushes of one received burst are
 * followed by one fdatasync (group commit), and their replies leave only
 * after it returned. Without --sync a write is acknowledged once pwrite
 * returned (it is in the page cache) and FLUSH makes it durable.
 *
 * Back-pressure: when no send buffer is left for a reply, on_recv accepts
 * fewer requests; the rest stay in their receive buffers, so their credits
 * do not return and the client slows down. Nothing is dropped.
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
#include <unistd.h>

#include <rte_lcore.h>

#include "rdp_clock.h"
#include "blk.h"
#include "blk_proto.h"
#include "rdp_ep.h"

/* The status codes are errno values with their Linux numbers. */
_Static_assert(BLK_S_EIO == EIO && BLK_S_E2BIG == E2BIG && BLK_S_EINVAL == EINVAL &&
	       BLK_S_ENOSPC == ENOSPC && BLK_S_ERANGE == ERANGE && BLK_S_EPROTO == EPROTO &&
	       BLK_S_EBADMSG == EBADMSG && BLK_S_EOPNOTSUPP == EOPNOTSUPP,
	       "the protocol's status codes are Linux errno numbers");

/* Requests handled per on_recv call (the rest are offered again). */
#define SRV_BURST 32
/* iovecs per preadv/pwritev call. */
#define IOV_BATCH 64

/* Counters of one poller lcore: written by it alone, read by the main lcore. */
struct srv_stats {
	uint64_t ops[BLK_OP_INFO + 1]; /* served, by opcode */
	uint64_t refused;              /* bad requests answered with an error */
	uint64_t io_errors;            /* requests the device failed */
	uint64_t syncs;                /* fdatasync calls */
	uint64_t bytes_read;
	uint64_t bytes_written;
} __rte_cache_aligned;

static struct {
	int fd;
	uint64_t nblocks;
	bool sync;
	bool quiet;
	char what[512];
	unsigned int endpoints;   /* connected now */
	unsigned int accepted;    /* since start */
	struct srv_stats st[RTE_MAX_LCORE];
	struct srv_stats last;    /* totals at the last progress line */
} srv = { .fd = -1 };

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
		t->io_errors += __atomic_load_n(&s->io_errors, __ATOMIC_RELAXED);
		t->syncs += __atomic_load_n(&s->syncs, __ATOMIC_RELAXED);
		t->bytes_read += __atomic_load_n(&s->bytes_read, __ATOMIC_RELAXED);
		t->bytes_written += __atomic_load_n(&s->bytes_written, __ATOMIC_RELAXED);
	}
}

/* ---------------------------------------------------------------------- */
/* Datapath (poller lcores)                                               */
/* ---------------------------------------------------------------------- */

/*
 * Move @p len bytes between the file at @p pos and message @p m from its
 * byte @p off, with the segments as iovecs. Returns 0 or an errno.
 */
static uint32_t
file_io(struct rdp_msg *m, uint32_t off, uint64_t pos, uint32_t len, bool write)
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
			r = write ? pwritev(srv.fd, iov, n, (off_t)pos) :
				    preadv(srv.fd, iov, n, (off_t)pos);
		} while (r < 0 && errno == EINTR);
		if (r < 0)
			return (uint32_t)errno;
		if ((uint32_t)r != batch)
			return BLK_S_EIO; /* short: the file shrank under us, or the disk is full */
		pos += batch;
		len -= batch;
	}
	return 0;
}

/* Largest request this endpoint's message size carries. */
static uint32_t
srv_max_count(const struct rdp_ep *ep)
{
	uint32_t max = rdp_ep_max_msg_size(ep);

	return max < BLK_HDR_SIZE ? 0 : RTE_MIN(BLK_MAX_COUNT, (max - BLK_HDR_SIZE) / BLK_BLOCK_SIZE);
}

static uint16_t
srv_on_recv(struct rdp_ep *ep, struct rdp_msg **reqs, uint16_t n, void *arg)
{
	struct srv_stats *st = &srv.st[rte_lcore_id()];
	struct rdp_msg *reps[SRV_BURST];
	struct blk_rep hdr[SRV_BURST];
	bool wait_sync[SRV_BURST];
	uint32_t max_count = srv_max_count(ep);
	bool sync = false;
	uint16_t i, k;

	RTE_SET_USED(arg);
	n = RTE_MIN(n, (uint16_t)SRV_BURST);
	for (i = 0; i < n; i++) {
		struct rdp_msg *m = reqs[i], *r;
		uint8_t raw[BLK_HDR_SIZE] = { 0 };
		struct blk_req q;
		uint32_t status;

		rdp_msg_read(m, 0, raw, RTE_MIN(m->pkt_len, BLK_HDR_SIZE));
		blk_req_decode(&q, raw);
		status = blk_req_check(&q, m->pkt_len, srv.nblocks, max_count);
		r = rdp_msg_alloc(ep, status == BLK_S_OK ? blk_rep_len(q.opcode, q.count) :
				  BLK_HDR_SIZE);
		if (r == NULL)
			break; /* no send buffer: back-pressure, offered again */
		wait_sync[i] = false;
		if (status != BLK_S_OK) {
			cnt_add(&st->refused, 1);
		} else {
			uint64_t pos = q.block << BLK_BLOCK_SHIFT;
			uint32_t len = (uint32_t)q.count * BLK_BLOCK_SIZE;

			switch (q.opcode) {
			case BLK_OP_READ:
				status = file_io(r, BLK_HDR_SIZE, pos, len, false);
				if (status == BLK_S_OK) {
					cnt_add(&st->bytes_read, len);
					break;
				}
				/* an error reply carries no data */
				rdp_msg_free(r);
				r = rdp_msg_alloc(ep, BLK_HDR_SIZE);
				break;
			case BLK_OP_WRITE:
				status = file_io(m, BLK_HDR_SIZE, pos, len, true);
				if (status == BLK_S_OK) {
					cnt_add(&st->bytes_written, len);
					wait_sync[i] = srv.sync || (q.flags & BLK_F_FUA);
				}
				break;
			case BLK_OP_FLUSH:
				wait_sync[i] = true;
				break;
			default: /* INFO: the geometry every reply carries */
				break;
			}
			if (r == NULL)
				break; /* a failed read is retried when a buffer is back */
			if (status != BLK_S_OK)
				cnt_add(&st->io_errors, 1);
			else
				cnt_add(&st->ops[q.opcode], 1);
		}
		sync |= wait_sync[i];
		reps[i] = r;
		hdr[i] = (struct blk_rep){
			.magic = BLK_REP_MAGIC, .opcode = q.opcode, .count = q.count, .tag = q.tag,
			.status = status, .max_count = max_count, .nblocks = srv.nblocks,
		};
		rdp_msg_free(m);
	}
	if (sync) {
		/* group commit: one fdatasync for every write and flush of the burst */
		int ret = fdatasync(srv.fd);
		uint32_t err = ret < 0 ? (uint32_t)errno : 0;

		cnt_add(&st->syncs, 1);
		for (k = 0; k < i && err != 0; k++)
			if (wait_sync[k])
				hdr[k].status = err;
	}
	for (k = 0; k < i; k++)
		blk_rep_encode(&hdr[k], reps[k]->data); /* a segment holds >= 64 bytes */
	k = rdp_ep_send_burst(ep, reps, i);
	for (; k < i; k++)
		rdp_msg_free(reps[k]); /* the endpoint is going away */
	return i;
}

static void
srv_on_send(struct rdp_ep *ep, struct rdp_msg **msgs, uint16_t n, void *arg)
{
	RTE_SET_USED(ep);
	RTE_SET_USED(arg);
	rdp_msg_free_bulk(msgs, n);
}

static void
srv_on_state(struct rdp_ep *ep, enum rdp_ep_state state, int err, void *arg)
{
	RTE_SET_USED(err);
	RTE_SET_USED(arg);
	if (state == RDP_EP_ESTABLISHED) {
		__atomic_fetch_add(&srv.endpoints, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&srv.accepted, 1, __ATOMIC_RELAXED);
	} else if (state == RDP_EP_FAILED) {
		rdp_ep_close(ep); /* the client left: let it go */
	} else if (state == RDP_EP_CLOSED) {
		__atomic_fetch_sub(&srv.endpoints, 1, __ATOMIC_RELAXED);
	}
}

static const struct rdp_ep_ops srv_ops = {
	.on_recv = srv_on_recv,
	.on_send = srv_on_send,
	.on_state = srv_on_state,
};

/* ---------------------------------------------------------------------- */
/* Device and control                                                     */
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

static int
dev_open(const struct serve_opts *o)
{
	uint64_t size = o->size;
	char hs[32];
	struct stat sb;

	if (o->file == NULL) {
		srv.fd = memfd_create("rdp-blk", MFD_CLOEXEC);
		if (srv.fd < 0 || ftruncate(srv.fd, (off_t)size) < 0) {
			fprintf(stderr, "rdp-blk serve: --memory: %s\n", strerror(errno));
			return -1;
		}
		human(size, hs, sizeof(hs));
		snprintf(srv.what, sizeof(srv.what), "memory device of %s", hs);
	} else {
		srv.fd = open(o->file, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (srv.fd < 0 || fstat(srv.fd, &sb) < 0) {
			fprintf(stderr, "rdp-blk serve: --file %s: %s\n", o->file, strerror(errno));
			return -1;
		}
		if (S_ISBLK(sb.st_mode)) {
			uint64_t dev_size;

			if (ioctl(srv.fd, BLKGETSIZE64, &dev_size) < 0) {
				fprintf(stderr, "rdp-blk serve: --file %s: BLKGETSIZE64: %s\n",
					o->file, strerror(errno));
				return -1;
			}
			if (size > dev_size) {
				fprintf(stderr, "rdp-blk serve: --size %" PRIu64 ": the device %s has "
					"only %" PRIu64 " bytes\n", size, o->file, dev_size);
				return -1;
			}
			if (size == 0)
				size = dev_size & ~(uint64_t)(BLK_BLOCK_SIZE - 1);
		} else if (S_ISREG(sb.st_mode)) {
			if (size == 0) {
				size = (uint64_t)sb.st_size;
				if (size == 0 || size % BLK_BLOCK_SIZE != 0) {
					fprintf(stderr, "rdp-blk serve: --file %s has %" PRIu64 " bytes, "
						"not a positive multiple of %u: give --size\n", o->file,
						size, BLK_BLOCK_SIZE);
					return -1;
				}
			} else if ((uint64_t)sb.st_size < size &&
				   ftruncate(srv.fd, (off_t)size) < 0) {
				fprintf(stderr, "rdp-blk serve: --file %s: cannot grow it to %" PRIu64
					" bytes: %s\n", o->file, size, strerror(errno));
				return -1;
			}
		} else {
			fprintf(stderr, "rdp-blk serve: --file %s: not a regular file or a block "
				"device\n", o->file);
			return -1;
		}
		human(size, hs, sizeof(hs));
		snprintf(srv.what, sizeof(srv.what), "%s (%s)", o->file, hs);
	}
	srv.nblocks = size / BLK_BLOCK_SIZE;
	srv.sync = o->sync;
	return 0;
}

int
blk_server_start(const struct serve_opts *o, int lcore, int *port)
{
	struct rdp_ep_params prm = { .ops = &srv_ops, .lcore = lcore };

	srv.quiet = o->c.quiet;
	if (dev_open(o) < 0)
		return -1;
	*port = rdp_listen(o->listen, &prm);
	if (*port < 0) {
		fprintf(stderr, "rdp-blk serve: %s\n", rdp_err_msg());
		return -1;
	}
	if (!srv.quiet) {
		printf("rdp-blk serve: %s, %" PRIu64 " blocks of %u B, listening on port %d\n",
		       srv.what, srv.nblocks, BLK_BLOCK_SIZE, *port);
		printf("rdp-blk serve: writes acknowledged %s; file I/O runs on the poller "
		       "lcores (blocking)\n", srv.sync ? "after fdatasync (--sync, one per burst)" :
		       "once pwrite returned (durable after a FLUSH)");
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

void
blk_server_stop(void)
{
	struct srv_stats t;

	if (srv.fd < 0)
		return;
	stats_sum(&t);
	if (fdatasync(srv.fd) < 0)
		fprintf(stderr, "rdp-blk serve: fdatasync at exit: %s\n", strerror(errno));
	close(srv.fd);
	srv.fd = -1;
	if (!srv.quiet)
		printf("rdp-blk serve: %u endpoint(s) served: %" PRIu64 " reads, %" PRIu64
		       " writes, %" PRIu64 " flushes, %" PRIu64 " infos, %" PRIu64 " refused, %"
		       PRIu64 " I/O errors, %" PRIu64 " syncs\n",
		       __atomic_load_n(&srv.accepted, __ATOMIC_RELAXED), t.ops[BLK_OP_READ],
		       t.ops[BLK_OP_WRITE], t.ops[BLK_OP_FLUSH], t.ops[BLK_OP_INFO], t.refused,
		       t.io_errors, t.syncs);
}

int
serve_run(const struct serve_opts *o)
{
	double last;
	int port;

	if (blk_server_start(o, -1, &port) < 0)
		return BLK_EXIT_FAIL;
	if (o->port_fd >= 0) {
		if (write(o->port_fd, &port, sizeof(port)) != sizeof(port)) {
			fprintf(stderr, "rdp-blk serve: --port-fd %d: %s\n", o->port_fd,
				strerror(errno));
			return BLK_EXIT_FAIL;
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
	return BLK_EXIT_OK;
}

/* ---------------------------------------------------------------------- */
/* Options                                                                */
/* ---------------------------------------------------------------------- */

void
serve_usage(FILE *f)
{
	fprintf(f,
"usage: rdp-blk [EAL options] -- serve (--file PATH [--size SIZE] | --memory SIZE)\n"
"                                      [options]\n"
"\n"
"Export a file, a block device or a memory device as 4096-byte blocks to any\n"
"number of rdp-blk clients. Requests run to completion on the poller lcores:\n"
"the file I/O (pread/pwrite, blocking) happens there, straight into and out of\n"
"the registered message buffers. Stop with Ctrl-C (SIGINT) or SIGTERM.\n"
"\n"
"Device:\n"
"  --file PATH          a regular file (created if missing) or a block device\n"
"  --size SIZE          bytes exported from --file: a multiple of 4096, with an\n"
"                       optional K, M, G or T suffix (powers of 1024); a shorter\n"
"                       file is extended. Default: the file's size\n"
"  --memory SIZE        a memory device of SIZE bytes instead (lost at exit)\n"
"  --sync               acknowledge a write only once it is durable: one\n"
"                       fdatasync after the writes of each received burst.\n"
"                       Without it a write is acknowledged when pwrite returned\n"
"                       and a FLUSH request makes the writes before it durable\n"
"\n"
"Network and runtime:\n"
"  --listen HOST:PORT   control-plane address (default: the configuration's\n"
"                       `listen`, 127.0.0.1:18515; port 0 picks a free port)\n"
"  -c, --config FILE    per-core configuration (see docs/configuration.md)\n"
"  --driver NAME[:ARGS] driver (default: auto, verbs with an active RDMA port,\n"
"                       else shm)\n"
"  --port-fd FD         write the bound port (a native int) to file descriptor\n"
"                       FD once listening, then close it (for scripts, tests)\n"
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
	uint64_t mem = 0;
	char *end;
	int c;

	memset(o, 0, sizeof(*o));
	o->port_fd = -1;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'f': o->file = optarg; break;
		case 's':
			size_arg = optarg;
			if (blk_parse_size(optarg, &o->size) < 0 || o->size == 0 ||
			    o->size % BLK_BLOCK_SIZE != 0)
				return blk_bad_option("serve", "--size", optarg,
						      "expected a positive multiple of 4096 bytes, "
						      "e.g. 64M");
			break;
		case 'm':
			mem_arg = optarg;
			if (blk_parse_size(optarg, &mem) < 0 || mem == 0 ||
			    mem % BLK_BLOCK_SIZE != 0)
				return blk_bad_option("serve", "--memory", optarg,
						      "expected a positive multiple of 4096 bytes, "
						      "e.g. 1G");
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
	if (o->file != NULL && mem_arg != NULL)
		return blk_bad_option("serve", "--memory", mem_arg, "choose --file or --memory");
	if (o->file == NULL && mem_arg == NULL)
		return blk_bad_option("serve", "--file/--memory", "(missing)",
				      "say what to export, e.g. --memory 1G");
	if (mem_arg != NULL) {
		if (size_arg != NULL)
			return blk_bad_option("serve", "--size", size_arg,
					      "only with --file (--memory takes the size)");
		if (o->sync)
			return blk_bad_option("serve", "--sync", "with --memory",
					      "a memory device keeps nothing across a restart");
		o->size = mem;
	}
	return 0;
}
