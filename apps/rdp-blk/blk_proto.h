/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_BLK_PROTO_H
#define RDP_BLK_PROTO_H

/**
 * @file
 * The rdp-blk wire protocol: block requests and their replies, one per
 * rdmaplane message.
 *
 * - A device is `nblocks` blocks of BLK_BLOCK_SIZE (512) bytes, numbered
 *   from 0; a request moves 1 to BLK_MAX_COUNT blocks (512 B to 1 MiB).
 * - A request is a BLK_HDR_SIZE-byte header (struct blk_req) followed, for
 *   a WRITE, by exactly `count` blocks of data. A reply is a BLK_HDR_SIZE-
 *   byte header (struct blk_rep) followed, for a successful READ, by
 *   exactly `count` blocks.
 * - **One-sided data** (BLK_F_RDMA on a READ or WRITE): the request is the
 *   header followed by the remote descriptor (BLK_DESC_LEN bytes,
 *   rdp_rdesc_encode()) of the client's registered buffer instead of data.
 *   The server RDMA-WRITEs a read's blocks into that buffer and sends the
 *   reply after them on the same endpoint (RC ordering: the data is in
 *   place when the reply arrives); it RDMA-READs a write's blocks from the
 *   buffer before it writes them. The reply then carries no data.
 *   Nothing else ever follows a header.
 * - **Byte order.** Every field is little-endian on the wire (the native
 *   order of the hosts rdmaplane targets, so encoding is a copy there);
 *   blk_req_encode() and friends convert on big-endian hosts.
 * - **Matching.** A reply carries the request's `tag`, and clients match
 *   replies by tag only: the reference server answers a memory device's
 *   requests in order and a file's as their I/O completes, in any order.
 * - **Validation.** The server checks every field of every request, in
 *   the order of blk_req_check(), and answers a bad one with an error
 *   reply whose `status` says what is wrong; it never drops a request and
 *   never trusts one.
 * - **Status codes** are errno values with their Linux numbers, fixed by
 *   this protocol whatever the host (BLK_S_*).
 * - **Geometry.** Every reply carries the device size and the largest
 *   request the server takes on that endpoint; BLK_OP_INFO asks for
 *   nothing else.
 */

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <rte_byteorder.h>

/** Bytes per block (a sector). */
#define BLK_BLOCK_SIZE 512u
/** log2(BLK_BLOCK_SIZE). */
#define BLK_BLOCK_SHIFT 9
/** Bytes of a request or reply header. */
#define BLK_HDR_SIZE 32u
/**
 * Most blocks in one READ or WRITE (1 MiB). A server may announce less
 * (blk_rep.max_count) when the endpoint's message size is smaller.
 */
#define BLK_MAX_COUNT 2048u

/** Request magic: the bytes 'R' 'K' 'Q' '2' (protocol version 2: 512-byte blocks). */
#define BLK_REQ_MAGIC 0x32514b52u
/** Reply magic: the bytes 'R' 'K' 'P' '2'. */
#define BLK_REP_MAGIC 0x32504b52u

/** Operations (blk_req.opcode). */
enum blk_op {
	BLK_OP_READ = 1,  /**< read `count` blocks from `block` */
	BLK_OP_WRITE = 2, /**< write `count` blocks at `block`, data follows */
	BLK_OP_FLUSH = 3, /**< make every acknowledged write durable (fdatasync) */
	BLK_OP_INFO = 4,  /**< nothing but the geometry every reply carries */
};

/** Request flags (blk_req.flags); unknown bits are refused. */
#define BLK_F_FUA 0x01u  /**< WRITE: durable before the reply, as in --sync mode */
#define BLK_F_RDMA 0x02u /**< READ/WRITE: the data moves one-sided (a descriptor follows) */
#define BLK_F_KNOWN (BLK_F_FUA | BLK_F_RDMA)

/** Bytes of the remote descriptor a BLK_F_RDMA request carries (RDP_RDESC_LEN). */
#define BLK_DESC_LEN 28u

/**
 * @name Status codes (blk_rep.status): 0 or an errno, Linux numbering.
 * @{
 */
#define BLK_S_OK 0u
#define BLK_S_EIO 5u          /**< the device failed (read, write or sync) */
#define BLK_S_E2BIG 7u        /**< `count` above the announced max_count */
#define BLK_S_EFAULT 14u      /**< BLK_F_RDMA: the descriptor is malformed, does not
				* cover `count` blocks, or lacks the access the
				* transfer needs (remote write for a READ, remote
				* read for a WRITE) */
#define BLK_S_ENOSPC 28u      /**< the file system is full */
#define BLK_S_EINVAL 22u      /**< reserved field or unknown flag set, `count` 0 for
				* READ/WRITE, `count`/`block` set for FLUSH/INFO, or
				* a READ/WRITE not aligned for the server's O_DIRECT */
#define BLK_S_ERANGE 34u      /**< blocks beyond the end of the device */
#define BLK_S_EPROTO 71u      /**< bad magic: not this protocol or version */
#define BLK_S_EBADMSG 74u     /**< message length does not match the header */
#define BLK_S_EOPNOTSUPP 95u  /**< unknown opcode, or a BLK_F_RDMA WRITE on an endpoint
				* that has no RDMA READ */
/** @} */

/** A request header, in host order (wire layout in blk_req_encode()). */
struct blk_req {
	uint32_t magic;   /**< BLK_REQ_MAGIC */
	uint8_t opcode;   /**< enum blk_op */
	uint8_t flags;    /**< BLK_F_*; others must be 0 */
	uint16_t count;   /**< blocks: 1..max_count for READ/WRITE, 0 otherwise */
	uint64_t tag;     /**< chosen by the client, echoed in the reply */
	uint64_t block;   /**< first block for READ/WRITE, 0 otherwise */
	uint32_t reserved[2]; /**< must be 0 */
};

/** A reply header, in host order (wire layout in blk_rep_encode()). */
struct blk_rep {
	uint32_t magic;     /**< BLK_REP_MAGIC */
	uint8_t opcode;     /**< the request's opcode (0 if the message was too short) */
	uint8_t reserved;   /**< 0 */
	uint16_t count;     /**< the request's count */
	uint64_t tag;       /**< the request's tag; the bytes of a request too short
			     * to carry them read as zeros */
	uint32_t status;    /**< BLK_S_OK or an error status */
	uint32_t max_count; /**< largest `count` this endpoint takes */
	uint64_t nblocks;   /**< device size in blocks */
};

/*
 * Wire layout of both headers (byte offsets, little-endian fields):
 *
 *   request  0 magic(4) 4 opcode(1) 5 flags(1) 6 count(2) 8 tag(8)
 *           16 block(8) 24 reserved(4) 28 reserved(4)
 *   reply    0 magic(4) 4 opcode(1) 5 reserved(1) 6 count(2) 8 tag(8)
 *           16 status(4) 20 max_count(4) 24 nblocks(8)
 */

static inline void
blk_put16(uint8_t *p, uint16_t v)
{
	v = rte_cpu_to_le_16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void
blk_put32(uint8_t *p, uint32_t v)
{
	v = rte_cpu_to_le_32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void
blk_put64(uint8_t *p, uint64_t v)
{
	v = rte_cpu_to_le_64(v);
	memcpy(p, &v, sizeof(v));
}

static inline uint16_t
blk_get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return rte_le_to_cpu_16(v);
}

static inline uint32_t
blk_get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return rte_le_to_cpu_32(v);
}

static inline uint64_t
blk_get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return rte_le_to_cpu_64(v);
}

/**
 * Write a request header in wire format.
 *
 * @param r
 *   The header.
 * @param buf
 *   BLK_HDR_SIZE bytes.
 */
static inline void
blk_req_encode(const struct blk_req *r, void *buf)
{
	uint8_t *p = buf;

	blk_put32(p, r->magic);
	p[4] = r->opcode;
	p[5] = r->flags;
	blk_put16(p + 6, r->count);
	blk_put64(p + 8, r->tag);
	blk_put64(p + 16, r->block);
	blk_put32(p + 24, r->reserved[0]);
	blk_put32(p + 28, r->reserved[1]);
}

/**
 * Read a request header from wire format.
 *
 * @param r
 *   Filled.
 * @param buf
 *   BLK_HDR_SIZE bytes (zero-fill what a short message lacks).
 */
static inline void
blk_req_decode(struct blk_req *r, const void *buf)
{
	const uint8_t *p = buf;

	r->magic = blk_get32(p);
	r->opcode = p[4];
	r->flags = p[5];
	r->count = blk_get16(p + 6);
	r->tag = blk_get64(p + 8);
	r->block = blk_get64(p + 16);
	r->reserved[0] = blk_get32(p + 24);
	r->reserved[1] = blk_get32(p + 28);
}

/**
 * Write a reply header in wire format.
 *
 * @param r
 *   The header.
 * @param buf
 *   BLK_HDR_SIZE bytes.
 */
static inline void
blk_rep_encode(const struct blk_rep *r, void *buf)
{
	uint8_t *p = buf;

	blk_put32(p, r->magic);
	p[4] = r->opcode;
	p[5] = r->reserved;
	blk_put16(p + 6, r->count);
	blk_put64(p + 8, r->tag);
	blk_put32(p + 16, r->status);
	blk_put32(p + 20, r->max_count);
	blk_put64(p + 24, r->nblocks);
}

/**
 * Read a reply header from wire format.
 *
 * @param r
 *   Filled.
 * @param buf
 *   BLK_HDR_SIZE bytes.
 */
static inline void
blk_rep_decode(struct blk_rep *r, const void *buf)
{
	const uint8_t *p = buf;

	r->magic = blk_get32(p);
	r->opcode = p[4];
	r->reserved = p[5];
	r->count = blk_get16(p + 6);
	r->tag = blk_get64(p + 8);
	r->status = blk_get32(p + 16);
	r->max_count = blk_get32(p + 20);
	r->nblocks = blk_get64(p + 24);
}

/**
 * Bytes of the message that carries a request.
 *
 * @param opcode
 *   enum blk_op.
 * @param count
 *   Blocks.
 * @param flags
 *   BLK_F_* of the request.
 * @return
 *   BLK_HDR_SIZE, plus the descriptor with BLK_F_RDMA, else the data for
 *   a WRITE.
 */
static inline uint32_t
blk_req_len(uint8_t opcode, uint16_t count, uint8_t flags)
{
	if (flags & BLK_F_RDMA)
		return BLK_HDR_SIZE + BLK_DESC_LEN;
	return BLK_HDR_SIZE + (opcode == BLK_OP_WRITE ? (uint32_t)count * BLK_BLOCK_SIZE : 0);
}

/**
 * Bytes of the message that carries a successful reply.
 *
 * @param opcode
 *   enum blk_op.
 * @param count
 *   Blocks.
 * @param flags
 *   BLK_F_* of the request.
 * @return
 *   BLK_HDR_SIZE, plus the data for a READ without BLK_F_RDMA.
 */
static inline uint32_t
blk_rep_len(uint8_t opcode, uint16_t count, uint8_t flags)
{
	if (flags & BLK_F_RDMA)
		return BLK_HDR_SIZE;
	return BLK_HDR_SIZE + (opcode == BLK_OP_READ ? (uint32_t)count * BLK_BLOCK_SIZE : 0);
}

/**
 * Check a request as the server does; the first failing rule decides.
 *
 * 1. the message holds a whole header, else EBADMSG;
 * 2. magic, else EPROTO;
 * 3. a known opcode, else EOPNOTSUPP;
 * 4. no unknown flag (FUA only on WRITE, RDMA only on READ and WRITE),
 *    reserved fields zero, else EINVAL;
 * 5. READ/WRITE: count >= 1 (else EINVAL) and <= @p max_count (else
 *    E2BIG); FLUSH/INFO: count and block 0, else EINVAL;
 * 6. the message length is exactly blk_req_len(), else EBADMSG;
 * 7. READ/WRITE: block + count <= @p nblocks (no overflow), else ERANGE.
 *
 * The server checks a BLK_F_RDMA request's descriptor after these
 * (EFAULT), since decoding it takes the library (rdp_rdesc_decode()).
 *
 * @param r
 *   The decoded header (zero-filled where the message ended).
 * @param len
 *   Bytes of the whole message.
 * @param nblocks
 *   Device size in blocks.
 * @param max_count
 *   Largest count taken.
 * @return
 *   BLK_S_OK or the status of the error reply.
 */
static inline uint32_t
blk_req_check(const struct blk_req *r, uint32_t len, uint64_t nblocks, uint32_t max_count)
{
	bool rw;

	if (len < BLK_HDR_SIZE)
		return BLK_S_EBADMSG;
	if (r->magic != BLK_REQ_MAGIC)
		return BLK_S_EPROTO;
	if (r->opcode < BLK_OP_READ || r->opcode > BLK_OP_INFO)
		return BLK_S_EOPNOTSUPP;
	rw = r->opcode == BLK_OP_READ || r->opcode == BLK_OP_WRITE;
	if ((r->flags & ~BLK_F_KNOWN) != 0 ||
	    ((r->flags & BLK_F_FUA) && r->opcode != BLK_OP_WRITE) ||
	    ((r->flags & BLK_F_RDMA) && !rw) ||
	    r->reserved[0] != 0 || r->reserved[1] != 0)
		return BLK_S_EINVAL;
	if (rw) {
		if (r->count == 0)
			return BLK_S_EINVAL;
		if (r->count > max_count)
			return BLK_S_E2BIG;
	} else if (r->count != 0 || r->block != 0) {
		return BLK_S_EINVAL;
	}
	if (len != blk_req_len(r->opcode, r->count, r->flags))
		return BLK_S_EBADMSG;
	if (rw && (r->block >= nblocks || r->count > nblocks - r->block))
		return BLK_S_ERANGE;
	return BLK_S_OK;
}

/**
 * Name and meaning of a status, for messages.
 *
 * @param status
 *   blk_rep.status.
 * @return
 *   A static string such as "ERANGE (blocks beyond the end of the device)".
 */
static inline const char *
blk_status_str(uint32_t status)
{
	switch (status) {
	case BLK_S_OK: return "OK";
	case BLK_S_EIO: return "EIO (the device failed)";
	case BLK_S_E2BIG: return "E2BIG (more blocks than the server takes at once)";
	case BLK_S_EFAULT: return "EFAULT (the remote descriptor is malformed, too short for "
				  "the blocks, or lacks the access the transfer needs)";
	case BLK_S_ENOSPC: return "ENOSPC (no space left on the server's file system)";
	case BLK_S_EINVAL: return "EINVAL (a reserved field, flag or count is wrong, or "
				  "the blocks are not aligned for the server's O_DIRECT)";
	case BLK_S_ERANGE: return "ERANGE (blocks beyond the end of the device)";
	case BLK_S_EPROTO: return "EPROTO (bad magic: not rdp-blk protocol version 2)";
	case BLK_S_EBADMSG: return "EBADMSG (message length does not match the header)";
	case BLK_S_EOPNOTSUPP: return "EOPNOTSUPP (unknown opcode, or a one-sided write on an "
				      "endpoint without RDMA READ)";
	default: return "an errno of the server's device";
	}
}

/**
 * Name of an opcode, for messages.
 *
 * @param op
 *   enum blk_op.
 * @return
 *   "read", "write", "flush", "info" or "opcode?".
 */
static inline const char *
blk_op_str(uint8_t op)
{
	switch (op) {
	case BLK_OP_READ: return "read";
	case BLK_OP_WRITE: return "write";
	case BLK_OP_FLUSH: return "flush";
	case BLK_OP_INFO: return "info";
	default: return "opcode?";
	}
}

#endif /* RDP_BLK_PROTO_H */
