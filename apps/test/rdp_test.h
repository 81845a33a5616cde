/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_TEST_H
#define RDP_TEST_H

/**
 * @file
 * The autotest harness: one binary, tests registered with RDP_TEST().
 *
 * - `RDP_TEST(suite, name)` defines and registers a test. It must start a
 *   line: apps/test/meson.build reads these lines to give each test its own
 *   `meson test` entry (one process per test, so EAL can initialise once).
 * - A test returns 0 when it passed or rdp_test_skip() when it cannot run
 *   here. A failed assertion prints where and why and ends the process with
 *   status 1.
 * - `rdp-test NAME` runs one test; `rdp-test --suite S` runs every test of a
 *   suite, each in a forked child, and prints `N passed, N failed[, N skipped]`.
 */

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_common.h>

#include "rdp_clock.h"

/** Exit status meaning "skipped" (the automake and meson convention). */
#define RDP_TEST_SKIPPED 77

/** A test body: 0 when it passed, RDP_TEST_SKIPPED when it could not run. */
typedef int (*rdp_test_fn)(void);

/**
 * Register a test; called by RDP_TEST() from a constructor.
 *
 * @param suite
 *   Suite name (unit, model, shm, eal, e2e, rxe, ...).
 * @param name
 *   Test name, unique in the binary; it states the property checked.
 * @param fn
 *   The test body.
 */
void rdp_test_register(const char *suite, const char *name, rdp_test_fn fn);

/** Define and register test @p name in @p suite. */
#define RDP_TEST(suite, name) \
	static int name(void); \
	RTE_INIT(rdp_test_reg_ ## name) { rdp_test_register(#suite, #name, name); } \
	static int name(void)

/**
 * Report why the test cannot run here and return the skip status.
 *
 * @param fmt
 *   printf-style reason, printed as `SKIP: <reason>`.
 * @return
 *   RDP_TEST_SKIPPED.
 */
int rdp_test_skip(const char *fmt, ...) __rte_format_printf(1, 2);

/**
 * Have @p fn run when an assertion fails: rdp_test_fail() leaves with
 * _exit(), past atexit(), so a test that changes the machine (reserves
 * hugepages) gives it back here too. Up to 4, run last registered first.
 */
void rdp_test_on_fail(void (*fn)(void));

/** Print a failure with its location and end the process with status 1. */
__rte_noreturn void rdp_test_fail(const char *file, int line, const char *fmt, ...)
	__rte_format_printf(3, 4);

/**
 * The driver under test: `--driver SPEC` or `$RDP_TEST_DRIVER`, else "shm".
 *
 * @return
 *   A driver spec such as `shm` or `verbs:device=rxe0`.
 */
const char *rdp_test_driver(void);

/**
 * The driver given with `--driver` or `$RDP_TEST_DRIVER`, else @p dflt:
 * for tests that pick an adversarial spec unless told to run elsewhere.
 *
 * @param dflt
 *   The test's own choice.
 * @return
 *   A driver spec.
 */
const char *rdp_test_driver_or(const char *dflt);

/**
 * Initialise EAL for a test process: no hugepages, no PCI, no shared
 * config, no telemetry, a file prefix of its own.
 *
 * @param lcores
 *   EAL `--lcores` list, for example "0-1" or "0@0,1@1".
 * @return
 *   0, or the test fails.
 */
int rdp_test_eal_init(const char *lcores);

/**
 * Same as rdp_test_eal_init() with the telemetry socket on, under
 * /var/run/dpdk/@p prefix/.
 *
 * @param lcores
 *   EAL `--lcores` list.
 * @param prefix
 *   EAL file prefix, or NULL for no telemetry.
 * @return
 *   0, or the test fails.
 */
int rdp_test_eal_init_telemetry(const char *lcores, const char *prefix);

/** The path of the running test binary (for tests that spawn helpers). */
const char *rdp_test_self(void);

/**
 * Run helper test @p name of this binary in a child process and wait for
 * it; the child inherits the environment.
 *
 * @param name
 *   The helper's name (RDP_TEST(helper, name)).
 * @param out
 *   Receives what the child wrote to stdout and stderr, NUL-terminated
 *   (cut at @p len - 1 bytes).
 * @param len
 *   Size of @p out.
 * @return
 *   The child's wait status (waitpid()), or the test fails.
 */
int rdp_test_run_helper(const char *name, char *out, size_t len);

/**
 * A count or a duration a lane may set in the environment.
 *
 * @param name
 *   The variable.
 * @param dflt
 *   Its value when unset or empty.
 * @return
 *   The variable read as an unsigned number (strtoull, base 0), or @p dflt.
 */
uint64_t rdp_test_env_u64(const char *name, uint64_t dflt);

/** Size of rdp_test_log, its last byte always NUL. */
#define RDP_TEST_LOG_SIZE (1 << 16)

/** What the library logged since the last rdp_test_log_capture() (NUL-terminated). */
extern char rdp_test_log[RDP_TEST_LOG_SIZE];

/**
 * Send the library's log to rdp_test_log, unbuffered, starting empty; a
 * capture already running starts again from empty.
 */
void rdp_test_log_capture(void);

/** Give the library's log back to stderr. */
void rdp_test_log_release(void);

#define RDP_ASSERT(cond) do { \
	if (unlikely(!(cond))) \
		rdp_test_fail(__FILE__, __LINE__, "assertion failed: %s", #cond); \
} while (0)

#define RDP_ASSERT_MSG(cond, ...) do { \
	if (unlikely(!(cond))) \
		rdp_test_fail(__FILE__, __LINE__, __VA_ARGS__); \
} while (0)

#define RDP_ASSERT_EQ(a, b) do { \
	long long a_ = (long long)(a), b_ = (long long)(b); \
	if (unlikely(a_ != b_)) \
		rdp_test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", \
			      #a, #b, a_, b_); \
} while (0)

#define RDP_ASSERT_STR_EQ(a, b) do { \
	const char *a_ = (a), *b_ = (b); \
	if (unlikely(a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0)) \
		rdp_test_fail(__FILE__, __LINE__, "%s == %s:\n  got:  \"%s\"\n  want: \"%s\"", \
			      #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
} while (0)

#endif /* RDP_TEST_H */
