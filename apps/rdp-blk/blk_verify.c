/* SPDX-License-Identifier: BSD-3-Clause */
/* Self-describing blocks, the generation table and the state file (see blk_verify.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "app_hash.h"
#include "blk_proto.h"
#include "blk_verify.h"

_Static_assert(BLK_VERIFY_WORDS * 8 == BLK_BLOCK_SIZE, "a verify block is one block");

/* State file: a 32-byte header, then (acked, issued) as two u32 per block. */
#define STATE_MAGIC 0x31536b6c62706472ull /* "rdpblkS1" */
#define STATE_HDR 32u

static inline uint64_t
sum_step(uint64_t h, uint64_t w)
{
	h ^= w * 0x9e3779b97f4a7c15ull;
	return (h << 27 | h >> 37) * 0x94d049bb133111ebull;
}

static inline uint64_t
payload_seed(uint64_t run, uint64_t block, uint32_t gen)
{
	return app_mix64(run ^ app_mix64(block * 0xd6e8feb86659fd93ull + gen));
}

void
blk_vblock_fill(struct blk_cur *c, uint64_t run, uint64_t block, uint32_t gen)
{
	uint64_t seed = payload_seed(run, block, gen), h = 0;
	struct blk_cur sum_at;
	unsigned int i;

	h = sum_step(h, BLK_VERIFY_MAGIC);
	h = sum_step(h, run);
	h = sum_step(h, block);
	h = sum_step(h, gen);
	blk_cur_put64(c, BLK_VERIFY_MAGIC);
	blk_cur_put64(c, run);
	blk_cur_put64(c, block);
	blk_cur_put64(c, gen);
	sum_at = *c;
	blk_cur_put64(c, 0);
	for (i = 5; i < BLK_VERIFY_WORDS; i++) {
		uint64_t w = app_mix64(seed + i);

		h = sum_step(h, w);
		blk_cur_put64(c, w);
	}
	blk_cur_put64(&sum_at, app_mix64(h));
}

int
blk_vblock_check(struct blk_cur *c, uint64_t run, uint64_t block, uint32_t acked,
		 uint32_t issued, struct blk_vresult *res, char *why, size_t len)
{
	uint64_t w[5], h = 0, any = 0;
	bool valid;
	unsigned int i;

	for (i = 0; i < 5; i++) {
		w[i] = blk_cur_get64(c);
		any |= w[i];
		if (i != 4)
			h = sum_step(h, w[i]);
	}
	for (i = 5; i < BLK_VERIFY_WORDS; i++) {
		uint64_t x = blk_cur_get64(c);

		any |= x;
		h = sum_step(h, x);
	}
	valid = w[0] == BLK_VERIFY_MAGIC && w[4] == app_mix64(h);
	res->ours = valid && w[1] == run;
	res->gen = res->ours ? (uint32_t)w[3] : 0;
	if (acked == 0 && !res->ours)
		return 0; /* never acknowledged: older content of any kind is fine */
	if (!valid) {
		if (any == 0)
			snprintf(why, len, "block %" PRIu64 " reads as zeros, but generation %u "
				 "was acknowledged (a write was lost)", block, acked);
		else if (w[0] != BLK_VERIFY_MAGIC)
			snprintf(why, len, "block %" PRIu64 " is not a verify block (word 0 is "
				 "%#" PRIx64 "; generation %u was acknowledged)", block, w[0], acked);
		else
			snprintf(why, len, "block %" PRIu64 " fails its checksum (torn or "
				 "corrupted; generation %" PRIu64 " by its header)", block, w[3]);
		return -1;
	}
	if (!res->ours) {
		snprintf(why, len, "block %" PRIu64 " was written by run %#" PRIx64 ", not this "
			 "run %#" PRIx64 " (generation %u was acknowledged)", block, w[1], run, acked);
		return -1;
	}
	if (w[2] != block) {
		snprintf(why, len, "block %" PRIu64 " holds block %" PRIu64 " (a misdirected "
			 "write)", block, w[2]);
		return -1;
	}
	if (w[3] < acked || w[3] == 0) {
		snprintf(why, len, "block %" PRIu64 " holds generation %" PRIu64 ", but %u was "
			 "acknowledged (stale data: an acknowledged write was lost)", block, w[3],
			 acked);
		return -1;
	}
	if (w[3] > issued) {
		snprintf(why, len, "block %" PRIu64 " holds generation %" PRIu64 ", which was "
			 "never written (the last one sent was %u)", block, w[3], issued);
		return -1;
	}
	return 0;
}

bool
blk_gens_take(struct blk_gens *g, uint64_t first, unsigned int n, bool write)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		uint64_t *p = &g->word[first + i];
		uint64_t old = __atomic_load_n(p, __ATOMIC_RELAXED), new;

		do {
			if (old & BLK_GEN_BUSY) {
				blk_gens_release(g, first, i, write ? BLK_GEN_UNSENT : BLK_GEN_READ);
				return false;
			}
			new = old | BLK_GEN_BUSY;
			if (write)
				new += 1ull << 32;
		} while (!__atomic_compare_exchange_n(p, &old, new, false, __ATOMIC_ACQUIRE,
						      __ATOMIC_RELAXED));
	}
	return true;
}

void
blk_gens_release(struct blk_gens *g, uint64_t first, unsigned int n, enum blk_gen_end how)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		uint64_t *p = &g->word[first + i];
		/* held: nobody else changes it */
		uint64_t w = __atomic_load_n(p, __ATOMIC_RELAXED) & ~BLK_GEN_BUSY;

		if (how == BLK_GEN_ACKED)
			w = (w & ~0xffffffffull) | blk_gen_issued(w);
		else if (how == BLK_GEN_UNSENT)
			w -= 1ull << 32;
		__atomic_store_n(p, w, __ATOMIC_RELEASE);
	}
}

int
blk_gens_init(struct blk_gens *g, uint64_t nblocks, uint64_t run)
{
	g->nblocks = nblocks;
	g->run = run;
	g->word = calloc(nblocks, sizeof(*g->word));
	return g->word != NULL ? 0 : -ENOMEM;
}

void
blk_gens_free(struct blk_gens *g)
{
	free(g->word);
	g->word = NULL;
}

static int
write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

int
blk_state_save(const struct blk_gens *g, const char *path, char *err, size_t len)
{
	uint8_t hdr[STATE_HDR] = { 0 }, buf[8 * 512];
	char tmp[4096];
	uint64_t b;
	size_t n = 0;
	int fd, ret;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, len, "--state %s: cannot create %s: %s", path, tmp, strerror(errno));
		return ret;
	}
	blk_put64(hdr, STATE_MAGIC);
	blk_put64(hdr + 8, g->run);
	blk_put64(hdr + 16, g->nblocks);
	blk_put32(hdr + 24, BLK_BLOCK_SIZE);
	ret = write_all(fd, hdr, sizeof(hdr));
	for (b = 0; b < g->nblocks && ret == 0; b++) {
		uint64_t w = __atomic_load_n(&g->word[b], __ATOMIC_ACQUIRE);

		blk_put32(buf + n, blk_gen_acked(w));
		blk_put32(buf + n + 4, blk_gen_issued(w));
		n += 8;
		if (n == sizeof(buf) || b + 1 == g->nblocks) {
			ret = write_all(fd, buf, n);
			n = 0;
		}
	}
	if (ret == 0)
		ret = fsync(fd);
	if (close(fd) != 0 || ret != 0 || rename(tmp, path) != 0) {
		ret = -errno;
		snprintf(err, len, "--state %s: cannot write it: %s", path, strerror(errno));
		unlink(tmp);
		return ret;
	}
	return 0;
}

int
blk_state_load(struct blk_gens *g, const char *path, char *err, size_t len)
{
	uint8_t hdr[STATE_HDR], buf[8 * 512];
	uint64_t nblocks, b = 0;
	int fd, ret = 0;
	FILE *f;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, len, "--state %s: %s", path, strerror(errno));
		return ret;
	}
	f = fdopen(fd, "r");
	if (f == NULL || fread(hdr, sizeof(hdr), 1, f) != 1 || blk_get64(hdr) != STATE_MAGIC ||
	    blk_get32(hdr + 24) != BLK_BLOCK_SIZE) {
		snprintf(err, len, "--state %s: not an rdp-blk state file", path);
		ret = -EINVAL;
		goto out;
	}
	nblocks = blk_get64(hdr + 16);
	if (nblocks == 0 || nblocks > (1ull << 40) ||
	    blk_gens_init(g, nblocks, blk_get64(hdr + 8)) < 0) {
		snprintf(err, len, "--state %s: cannot hold %" PRIu64 " blocks", path, nblocks);
		ret = -EINVAL;
		goto out;
	}
	while (b < nblocks) {
		size_t want = RTE_MIN((uint64_t)sizeof(buf) / 8, nblocks - b), i;

		if (fread(buf, 8, want, f) != want) {
			snprintf(err, len, "--state %s: truncated at block %" PRIu64, path, b);
			blk_gens_free(g);
			ret = -EINVAL;
			goto out;
		}
		for (i = 0; i < want; i++, b++) {
			uint32_t acked = blk_get32(buf + 8 * i), issued = blk_get32(buf + 8 * i + 4);

			if (acked > issued || issued > 0x7fffffffu) {
				snprintf(err, len, "--state %s: block %" PRIu64 ": generations %u/%u "
					 "are impossible", path, b, acked, issued);
				blk_gens_free(g);
				ret = -EINVAL;
				goto out;
			}
			g->word[b] = (uint64_t)issued << 32 | acked;
		}
	}
out:
	if (f != NULL)
		fclose(f);
	else
		close(fd);
	return ret;
}
