/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef APP_HASH_H
#define APP_HASH_H

/*
 * A 64-bit mixing function (the finaliser of MurmurHash3): every input bit
 * changes about half of the output bits. The apps and tests derive payload
 * bytes, keys and seeds from (stream, sequence) with it, so that a receiver
 * can check what it got without a copy of what was sent.
 */

#include <stdint.h>

static inline uint64_t
app_mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

#endif /* APP_HASH_H */
