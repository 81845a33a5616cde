/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_CLOCK_H
#define RDP_CLOCK_H

/**
 * @file
 * The monotonic clock, for deadlines, timeouts and rates. Internal to the
 * project (libraries, drivers, apps, tests); not installed.
 */

#include <stdint.h>
#include <time.h>

/** The monotonic clock in nanoseconds (a vDSO call: no system call). */
static inline uint64_t
rdp_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/** The monotonic clock in seconds, for deadlines and rates off the datapath. */
static inline double
rdp_clock_s(void)
{
	return (double)rdp_clock_ns() * 1e-9;
}

#endif /* RDP_CLOCK_H */
