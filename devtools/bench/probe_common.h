/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef BENCH_PROBE_COMMON_H
#define BENCH_PROBE_COMMON_H

/*
 * Shared helpers of the physical-limit probes: pinning, argument parsing
 * and a median (the clock is the project's, rdp_clock.h). Each probe runs two threads, each pinned
 * to one CPU, and prints one JSON object on stdout.
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rdp_clock.h"

#define PROBE_LINE 64

static inline int
probe_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static inline void
probe_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static int
probe_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median of n values (sorts them). */
static inline double
probe_median(double *v, size_t n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), probe_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* "--name value" options: returns the value of @name, or @def. */
static inline double
probe_opt(int argc, char **argv, const char *name, double def)
{
	int i;

	for (i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], name) == 0) {
			char *end;
			double v = strtod(argv[i + 1], &end);

			if (*end != '\0') {
				fprintf(stderr, "%s: bad value for %s: %s\n", argv[0], name, argv[i + 1]);
				exit(2);
			}
			return v;
		}
	return def;
}

/* Start @fn on a new thread (it pins itself). */
static inline void
probe_spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
	int ret = pthread_create(t, NULL, fn, arg);

	if (ret != 0) {
		fprintf(stderr, "probe: pthread_create: %s\n", strerror(ret));
		exit(1);
	}
}

#endif /* BENCH_PROBE_COMMON_H */
