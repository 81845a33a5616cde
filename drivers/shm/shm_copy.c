/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shm device's copy engine: what a NIC's DMA does for a one-sided
 * transfer is one copy by the initiating core here (docs/drivers.md, "The
 * copy engine"). libc's memcpy (on x86 with ERMS, rep movsb) is fastest
 * while source and destination fit in L1 together, and again once they
 * overflow L2, where its stores need not read the lines they fill. In
 * between the copy runs out of L2, and a loop of 32-byte loads and stores
 * keeps more of L2's bandwidth: copy=auto takes it there, by the cache
 * sizes the CPU reports.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "shm_private.h"

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx2"))) void
shm_copy_vector(void *dst, const void *src, size_t len)
{
	uint8_t *d = dst;
	const uint8_t *s = src;
	size_t i;

	for (i = 0; i + 64 <= len; i += 64) {
		__m256i lo = _mm256_loadu_si256((const __m256i_u *)(const void *)(s + i));
		__m256i hi = _mm256_loadu_si256((const __m256i_u *)(const void *)(s + i + 32));

		_mm256_storeu_si256((__m256i_u *)(void *)(d + i), lo);
		_mm256_storeu_si256((__m256i_u *)(void *)(d + i + 32), hi);
	}
	if (i < len)
		memcpy(d + i, s + i, len - i);
}

bool
shm_copy_vector_runs(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2");
}
#else
void
shm_copy_vector(void *dst, const void *src, size_t len)
{
	memcpy(dst, src, len);
}

bool
shm_copy_vector_runs(void)
{
	return false;
}
#endif

/* A cache's size as the CPU reports it, or @p dflt when it does not. */
static size_t
cache_size(int name, size_t dflt)
{
	long v = sysconf(name);

	return v > 0 ? (size_t)v : dflt;
}

int
shm_copy_choose(struct shm_dev *sd, const char *how)
{
	bool vec = shm_copy_vector_runs();

	sd->copy_min = SIZE_MAX; /* libc */
	sd->copy_max = 0;
	if (strcmp(how, "auto") == 0) {
		size_t l1 = cache_size(_SC_LEVEL1_DCACHE_SIZE, SHM_COPY_L1_DEFAULT);
		size_t l2 = cache_size(_SC_LEVEL2_CACHE_SIZE, SHM_COPY_L2_DEFAULT);

		if (vec && l1 / 2 + l1 / 16 <= l2 / 4) {
			/* source and destination overflow L1 by an eighth... */
			sd->copy_min = l1 / 2 + l1 / 16;
			/* ...and fit in half of L2 */
			sd->copy_max = l2 / 4;
		}
		return 0;
	}
	if (strcmp(how, "libc") == 0)
		return 0;
	if (strcmp(how, "vector") == 0) {
		if (!vec)
			return rdp_err_set(ENOTSUP, "driver shm: argument copy=vector: this "
					   "CPU has no AVX2 (use auto or libc)");
		sd->copy_min = 0;
		sd->copy_max = SIZE_MAX;
		return 0;
	}
	return rdp_err_set(EINVAL, "driver shm: argument copy=%s: expected auto, libc or "
			   "vector", how);
}
