/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_BLK_VERIFY_H
#define RDP_BLK_VERIFY_H

/**
 * @file
 * What `rdp-blk load --verify` writes, what it accepts back, and the state
 * file that carries this knowledge from one run to the next.
 *
 * - **Self-describing blocks.** Every block written is eight-byte
 *   little-endian words: 0 BLK_VERIFY_MAGIC, 1 run id, 2 block number,
 *   3 generation, 4 checksum of words 0-3 and 5-511, 5-511 a payload
 *   derived from (run, block, generation). A block can be checked alone:
 *   torn, corrupted, misdirected or foreign content is recognised without
 *   knowing what was written.
 * - **Generations.** The loader numbers the writes of each block 1, 2, ...
 *   and keeps, per block, the highest generation acknowledged (`acked`)
 *   and the highest ever sent (`issued`). A request holds its blocks for
 *   its whole life (reads too), so no two requests touch a block at once
 *   and a read must return a generation in [acked, issued]: exactly
 *   `acked`, unless a write whose fate is unknown (its endpoint failed
 *   before the reply) may have landed. A block never acknowledged may
 *   hold anything that is not a newer write of this run.
 * - **Run id.** Random per state; it tells this run's blocks from older
 *   content of the same device.
 * - **State file.** The table and run id, saved at the end of a run
 *   (also when the server was lost) and loaded by the next run or by
 *   `--check`, which reads every block back after a server restart.
 *
 * The table is shared by every poller lcore of the loader and updated
 * with atomics, never locks.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <rte_byteorder.h>

#include "rdp_mem.h"

/** Word 0 of a verify block: the bytes "rdpblkV1". */
#define BLK_VERIFY_MAGIC 0x31566b6c62706472ull
/** Words per block. */
#define BLK_VERIFY_WORDS 64u

/** A read position in a message, across its segments. */
struct blk_cur {
	struct rdp_msg *seg; /**< current segment */
	uint32_t off;        /**< offset in it */
};

/**
 * Point a cursor at byte @p off of a message.
 *
 * @param c
 *   The cursor.
 * @param m
 *   The message (first segment).
 * @param off
 *   Offset, at most pkt_len.
 */
static inline void
blk_cur_init(struct blk_cur *c, struct rdp_msg *m, uint32_t off)
{
	while (m != NULL && off >= m->data_len && m->next != NULL) {
		off -= m->data_len;
		m = m->next;
	}
	c->seg = m;
	c->off = off;
}

/** Step over one byte that was just moved. */
static inline void
blk_cur_byte(struct blk_cur *c)
{
	if (++c->off == c->seg->data_len && c->seg->next != NULL) {
		c->seg = c->seg->next;
		c->off = 0;
	}
}

/**
 * Store a little-endian word and advance.
 *
 * @param c
 *   The cursor; at least 8 bytes must remain.
 * @param v
 *   The word.
 */
static inline void
blk_cur_put64(struct blk_cur *c, uint64_t v)
{
	unsigned int i;

	v = rte_cpu_to_le_64(v);
	if (likely(c->off + 8 < c->seg->data_len)) {
		memcpy((uint8_t *)c->seg->data + c->off, &v, 8);
		c->off += 8;
		return;
	}
	/* the end of a segment: byte by byte */
	for (i = 0; i < 8; i++) {
		((uint8_t *)c->seg->data)[c->off] = ((const uint8_t *)&v)[i];
		blk_cur_byte(c);
	}
}

/**
 * Load a little-endian word and advance.
 *
 * @param c
 *   The cursor; at least 8 bytes must remain.
 * @return
 *   The word.
 */
static inline uint64_t
blk_cur_get64(struct blk_cur *c)
{
	uint64_t v;
	unsigned int i;

	if (likely(c->off + 8 < c->seg->data_len)) {
		memcpy(&v, (const uint8_t *)c->seg->data + c->off, 8);
		c->off += 8;
		return rte_le_to_cpu_64(v);
	}
	for (i = 0; i < 8; i++) {
		((uint8_t *)&v)[i] = ((const uint8_t *)c->seg->data)[c->off];
		blk_cur_byte(c);
	}
	return rte_le_to_cpu_64(v);
}

/**
 * Write one self-describing block at the cursor and advance past it.
 *
 * @param c
 *   The cursor; BLK_BLOCK_SIZE bytes must remain.
 * @param run
 *   Run id.
 * @param block
 *   Block number.
 * @param gen
 *   Generation (>= 1).
 */
void blk_vblock_fill(struct blk_cur *c, uint64_t run, uint64_t block, uint32_t gen);

/** What a checked block held. */
struct blk_vresult {
	bool ours;     /**< a valid block of this run */
	uint32_t gen;  /**< its generation when ours */
};

/**
 * Check the block at the cursor against what may be there, and advance.
 *
 * @param c
 *   The cursor; BLK_BLOCK_SIZE bytes must remain.
 * @param run
 *   Run id.
 * @param block
 *   The block number read.
 * @param acked
 *   Highest acknowledged generation (0: none).
 * @param issued
 *   Highest generation ever sent.
 * @param res
 *   Filled.
 * @param why
 *   Receives the reason of a mismatch (starts with the block number).
 * @param len
 *   Size of @p why.
 * @return
 *   0 when the content is allowed, -1 on a mismatch.
 */
int blk_vblock_check(struct blk_cur *c, uint64_t run, uint64_t block, uint32_t acked,
		     uint32_t issued, struct blk_vresult *res, char *why, size_t len);

/** Generations of every block of a range (see the file comment). */
struct blk_gens {
	uint64_t nblocks; /**< blocks tracked, from 0 */
	uint64_t run;     /**< run id */
	uint64_t *word;   /**< per block: busy (bit 63), issued (32-62), acked (0-31) */
};

#define BLK_GEN_BUSY (1ull << 63)

/** Highest acknowledged generation of a table word. */
static inline uint32_t
blk_gen_acked(uint64_t w)
{
	return (uint32_t)w;
}

/** Highest issued generation of a table word. */
static inline uint32_t
blk_gen_issued(uint64_t w)
{
	return (uint32_t)(w >> 32) & 0x7fffffffu;
}

/** How a request let go of its blocks. */
enum blk_gen_end {
	BLK_GEN_READ = 0, /**< a read ended */
	BLK_GEN_ACKED,    /**< a write was acknowledged: acked = issued */
	BLK_GEN_UNKNOWN,  /**< a write's fate is unknown: it may have landed */
	BLK_GEN_UNSENT,   /**< a write never left: forget its generation */
};

/**
 * Hold blocks [@p first, @p first + @p n) for one request, all or none; a
 * write gives each the next generation.
 *
 * @param g
 *   Table.
 * @param first
 *   First block (the range must be inside the table).
 * @param n
 *   Blocks.
 * @param write
 *   For a write.
 * @return
 *   false when a block is held by another request (nothing is held then).
 */
bool blk_gens_take(struct blk_gens *g, uint64_t first, unsigned int n, bool write);

/**
 * Let go of blocks held by blk_gens_take().
 *
 * @param g
 *   Table.
 * @param first
 *   First block.
 * @param n
 *   Blocks.
 * @param how
 *   How the request ended.
 */
void blk_gens_release(struct blk_gens *g, uint64_t first, unsigned int n,
		      enum blk_gen_end how);

/**
 * A table of @p nblocks never-written blocks.
 *
 * @param g
 *   Filled.
 * @param nblocks
 *   Blocks.
 * @param run
 *   Run id.
 * @return
 *   0 or -ENOMEM.
 */
int blk_gens_init(struct blk_gens *g, uint64_t nblocks, uint64_t run);

/** Free a table. */
void blk_gens_free(struct blk_gens *g);

/**
 * Save a table (atomically: a temporary file renamed over @p path, after
 * fsync).
 *
 * @param g
 *   Table (no request may hold a block).
 * @param path
 *   State file.
 * @param err
 *   Receives a sentence on failure.
 * @param len
 *   Size of @p err.
 * @return
 *   0 or a negative errno.
 */
int blk_state_save(const struct blk_gens *g, const char *path, char *err, size_t len);

/**
 * Load a table saved by blk_state_save().
 *
 * @param g
 *   Filled (free with blk_gens_free()).
 * @param path
 *   State file.
 * @param err
 *   Receives a sentence on failure.
 * @param len
 *   Size of @p err.
 * @return
 *   0, -ENOENT (no such file), or another negative errno (bad file).
 */
int blk_state_load(struct blk_gens *g, const char *path, char *err, size_t len);

#endif /* RDP_BLK_VERIFY_H */
