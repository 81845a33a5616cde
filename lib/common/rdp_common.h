/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_COMMON_H
#define RDP_COMMON_H

/**
 * @file
 * Conventions shared by every rdmaplane library.
 *
 * - **One error convention.** Functions returning `int` return 0 or a
 *   negative errno. Constructors return NULL and set `rte_errno`. Burst
 *   functions return how many items they handled and never log. A failing
 *   slow-path call also records a sentence a person can act on (which file,
 *   line, key, peer or field, and which rule) with rdp_err_set(); read it
 *   back with rdp_err_msg() on the same thread.
 * - **One log macro shape.** Each library registers one log type
 *   (`rdp.<lib>`) and defines `<LIB>_LOG(level, fmt, ...)` on top of
 *   RDP_LOG(). Datapath code never logs.
 * - Branch hints and cache-line helpers come from DPDK.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_common.h>
#include <rte_errno.h>
#include <rte_log.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Add @p n to a counter with one writer thread that other threads read
 * (statistics, telemetry): relaxed atomic loads and stores, plain moves on
 * x86, keep every value whole for the readers.
 */
#define RDP_STAT_ADD(ctr, n) \
	__atomic_store_n(&(ctr), __atomic_load_n(&(ctr), __ATOMIC_RELAXED) + (n), \
			 __ATOMIC_RELAXED)

/** Read a counter that another thread writes (RDP_STAT_ADD()). */
#define RDP_STAT_READ(ctr) __atomic_load_n(&(ctr), __ATOMIC_RELAXED)

/**
 * Read a run of counters that another thread writes (RDP_STAT_ADD()):
 * @p len bytes of consecutive uint64_t fields from @p src into the same
 * layout at @p dst, each read whole.
 */
static inline void
rdp_stats_read(void *dst, const void *src, size_t len)
{
	const uint64_t *from = (const uint64_t *)src;
	uint64_t *to = (uint64_t *)dst;
	size_t i;

	for (i = 0; i < len / sizeof(uint64_t); i++)
		to[i] = __atomic_load_n(&from[i], __ATOMIC_RELAXED);
}

/**
 * Append @p elem to a singly linked list kept as @p head and @p tail
 * pointers, linked through @p elem's field @p link.
 */
#define RDP_LIST_APPEND(head, tail, elem, link) \
	do { \
		(elem)->link = NULL; \
		if ((tail) != NULL) \
			(tail)->link = (elem); \
		else \
			(head) = (elem); \
		(tail) = (elem); \
	} while (0)

/** Longest error detail kept by rdp_err_set(), including the NUL. */
#define RDP_ERR_MSG_MAX 512

/**
 * Record why the calling slow-path function fails.
 *
 * Sets `rte_errno` to @p err and keeps a formatted detail for this thread.
 *
 * @param err
 *   Positive errno value (EINVAL, ENOMEM, ...).
 * @param fmt
 *   printf-style format of the detail, without a trailing newline.
 * @return
 *   `-err`, so that a function can `return rdp_err_set(EINVAL, ...);`.
 */
int rdp_err_set(int err, const char *fmt, ...) __rte_format_printf(2, 3);

/**
 * Same as rdp_err_set() with a va_list.
 *
 * @param err
 *   Positive errno value.
 * @param fmt
 *   printf-style format.
 * @param ap
 *   Arguments for @p fmt.
 * @return
 *   `-err`.
 */
int rdp_err_vset(int err, const char *fmt, va_list ap);

/**
 * The detail recorded by the last rdp_err_set() on this thread.
 *
 * @return
 *   A NUL-terminated sentence; the empty string when nothing was recorded
 *   since the last rdp_err_clear(). Valid until the next rdp_err_set() on
 *   this thread.
 */
const char *rdp_err_msg(void);

/** Forget the recorded detail of this thread. */
void rdp_err_clear(void);

/** @internal One byte per thread: its address is rdp_thread_self(). */
extern __thread char rdp_thread_anchor_ __attribute__((tls_model("initial-exec")));

/**
 * The calling thread, as a number no other live thread of the process
 * has: the address of a thread-local byte. Owner checks on the hot path
 * compare it in an instruction or two, where pthread_self() is a call into
 * libc. Like a pthread_t, a number may come back for a thread created after
 * its first one ended. Never 0.
 */
static inline uintptr_t
rdp_thread_self(void)
{
	return (uintptr_t)&rdp_thread_anchor_;
}

/**
 * Log through the DPDK logger with a library prefix.
 *
 * @param level
 *   DPDK level name without prefix: ERR, WARNING, NOTICE, INFO, DEBUG.
 * @param type
 *   Log type registered with RTE_LOG_REGISTER().
 * @param lib
 *   Short library name printed as prefix.
 */
#define RDP_LOG(level, type, lib, fmt, ...) \
	RDP_LOG_AT(RTE_LOG_ ## level, type, lib, fmt, ##__VA_ARGS__)
/* RDP_LOG() at a level chosen at run time (an RTE_LOG_* value). */
#define RDP_LOG_AT(lvl, type, lib, fmt, ...) \
	rte_log(lvl, type, "rdp." lib ": " fmt "\n", ##__VA_ARGS__)

/*
 * Ownership handed over through a multi-producer rte_ring (or through a
 * peer, see connect_qp()), made visible to ThreadSanitizer. DPDK's ring
 * orders a producer after earlier producers with a relaxed wait, so in the
 * C11 model a consumer synchronises with the last producer only (x86 is
 * TSO: the ring is correct there). Producers release the ring before they
 * enqueue, consumers acquire it after they dequeue. Compiled out unless
 * built with ThreadSanitizer.
 */
#if defined(__SANITIZE_THREAD__)
#define RDP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RDP_TSAN 1
#endif
#endif
#ifdef RDP_TSAN
#include <sanitizer/tsan_interface.h>
/** The calling thread hands what it wrote over through ring @p r. */
#define RDP_HANDOFF_RELEASE(r) __tsan_release((void *)(r))
/** The calling thread takes over what went through ring @p r. */
#define RDP_HANDOFF_ACQUIRE(r) __tsan_acquire((void *)(r))
#else
#define RDP_HANDOFF_RELEASE(r) do { } while (0)
#define RDP_HANDOFF_ACQUIRE(r) do { } while (0)
#endif

/**
 * An application's function run once per poll on a poller lcore
 * (rdp_poll_hook_set() in rdp_ep.h); returns the work it did (0: none), as
 * the poller counts idle polls.
 */
typedef unsigned int (*rdp_poll_hook_fn)(void *arg);

#ifdef __cplusplus
}
#endif

#endif /* RDP_COMMON_H */
