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
#include <stdbool.h>
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

/*
 * The measured window of a streaming probe: a tenth of the duration to
 * warm up, then the duration. A probe counts what it took and calls
 * probe_window_done() with the time and its count now and then.
 */
struct probe_window {
	uint64_t warm;        /* measuring starts at this time */
	uint64_t end;         /* and ends at this one */
	uint64_t t_start;     /* when it started (0: not yet) */
	uint64_t start_count; /* the count then */
	uint64_t t_last;      /* time of the last call */
	uint64_t count;       /* count at the last call */
};

static inline void
probe_window_init(struct probe_window *w, double duration)
{
	uint64_t now = rdp_clock_ns();

	memset(w, 0, sizeof(*w));
	w->warm = now + (uint64_t)(duration * 1e9 / 10);
	w->end = w->warm + (uint64_t)(duration * 1e9);
}

/*
 * Is the window over? It ends once something was measured, or 10 s late
 * when a loaded machine starved the probe.
 */
static inline bool
probe_window_done(struct probe_window *w, uint64_t now, uint64_t count)
{
	w->t_last = now;
	w->count = count;
	if (w->t_start == 0 && now >= w->warm) {
		w->t_start = now;
		w->start_count = count;
	}
	return now >= w->end && ((w->t_start != 0 && count > w->start_count && now > w->t_start) ||
				 now >= w->end + 10 * 1000000000ull);
}

/* Seconds measured and what was counted in them. */
static inline double
probe_window_secs(const struct probe_window *w)
{
	return w->t_start != 0 ? (w->t_last - w->t_start) / 1e9 : 0;
}

static inline uint64_t
probe_window_count(const struct probe_window *w)
{
	return w->count - w->start_count;
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
