/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_DRIVER_H
#define RDP_DRIVER_H

/**
 * @file
 * What a driver implements and how it registers (driver writers only).
 *
 * - A driver fills a const `struct rdp_driver_ops` with designated
 *   initializers and registers with RDP_DRIVER_REGISTER(). A NULL slow-path
 *   op makes the generic call fail with -ENOTSUP.
 * - Objects: the driver allocates its own CQ, QP and MR structs with the
 *   generic head (struct rdp_cq, rdp_qp, rdp_mr) embedded first, fills the
 *   head, and gets back to its struct with container_of(). The fast-path
 *   pointers in the heads must be set; the generic layer refuses an object
 *   whose fast path is NULL.
 * - Driver arguments arrive as the text after the colon of the spec; parse
 *   them with rdp_drv_args_parse() so every driver rejects unknown keys and
 *   bad values the same way.
 * - Counters on the fast path are single-writer: bump them with
 *   RDP_STAT_ADD() so readers on other threads see whole values.
 */

#include <sys/queue.h>

#include <rte_kvargs.h>

#include "rdp_dev.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Slow-path operations of a driver. */
struct rdp_driver_ops {
	/**
	 * Say whether the driver can run on this machine.
	 * Fill @p spec with the spec to open and @p why with one sentence.
	 * Return 0 when usable, a negative errno otherwise (with @p why).
	 */
	int (*probe)(char *spec, size_t len, char *why, size_t why_len);
	/** Open: parse @p args, set up dev->priv (dev_priv_size bytes, zeroed). */
	int (*dev_open)(struct rdp_dev *dev, const char *args);
	/** Close: release what dev_open took. */
	void (*dev_close)(struct rdp_dev *dev);
	int (*dev_query)(struct rdp_dev *dev, struct rdp_dev_attr *attr);
	int (*stats_get)(struct rdp_dev *dev, struct rdp_dev_stats *stats);
	/** 1 when the device's interface holds @p addr, 0 when not (optional). */
	int (*owns_addr)(struct rdp_dev *dev, const struct sockaddr *addr);
	int (*event_fd)(struct rdp_dev *dev);
	int (*event_get)(struct rdp_dev *dev, struct rdp_event *ev);
	struct rdp_pd *(*pd_alloc)(struct rdp_dev *dev);
	int (*pd_free)(struct rdp_pd *pd);
	/* page_size: the system's base page or its hugepage size */
	struct rdp_mr *(*mr_alloc)(struct rdp_pd *pd, size_t len, int socket,
				   unsigned int access, size_t page_size);
	struct rdp_mr *(*mr_reg)(struct rdp_pd *pd, void *addr, size_t len,
				 unsigned int access);
	int (*mr_free)(struct rdp_mr *mr);
	struct rdp_cq *(*cq_create)(struct rdp_dev *dev, uint32_t cqe, int socket);
	int (*cq_resize)(struct rdp_cq *cq, uint32_t cqe);
	int (*cq_destroy)(struct rdp_cq *cq);
	struct rdp_qp *(*qp_create)(struct rdp_pd *pd, const struct rdp_qp_init_attr *attr);
	int (*qp_modify)(struct rdp_qp *qp, const struct rdp_qp_attr *attr,
			 unsigned int mask);
	/**
	 * Optional (NULL: qp_modify() at once). qp_modify() that returns
	 * -EINPROGRESS and a descriptor to watch instead of waiting on the
	 * network; qp_modify_poll() goes on with it, qp_modify_abort() gives
	 * it up. A driver that has qp_modify_start has all three.
	 */
	int (*qp_modify_start)(struct rdp_qp *qp, const struct rdp_qp_attr *attr,
			       unsigned int mask, int *fd);
	int (*qp_modify_poll)(struct rdp_qp *qp);
	void (*qp_modify_abort)(struct rdp_qp *qp);
	int (*qp_query)(struct rdp_qp *qp, struct rdp_qp_attr *attr);
	int (*qp_local_addr)(struct rdp_qp *qp, struct rdp_qp_addr *addr);
	int (*qp_destroy)(struct rdp_qp *qp);
	/**
	 * Shared receive queues (all four, or none: -ENOTSUP). srq_destroy
	 * is only called while no QP uses the SRQ (the generic layer counts).
	 */
	struct rdp_srq *(*srq_create)(struct rdp_pd *pd, const struct rdp_srq_init_attr *attr);
	int (*srq_destroy)(struct rdp_srq *srq);
	int (*srq_modify_limit)(struct rdp_srq *srq, uint32_t limit);
	int (*srq_query)(struct rdp_srq *srq, struct rdp_srq_attr *attr);
};

/** A registered driver. */
struct rdp_driver {
	TAILQ_ENTRY(rdp_driver) next;
	const char *name;                /**< set by RDP_DRIVER_REGISTER() */
	int preference;                  /**< lower is tried first by rdp_dev_default_spec() */
	size_t dev_priv_size;            /**< bytes of dev->priv */
	const struct rdp_driver_ops *ops;
};

/** Generic device. */
struct rdp_dev {
	const struct rdp_driver *drv;
	char spec[RDP_DEV_SPEC_MAX];     /**< as opened */
	uint32_t nb_objects;             /**< PDs, MRs, CQs, QPs and SRQs alive */
	void *priv;                      /**< driver state, dev_priv_size bytes */
};

/** Generic protection domain; drivers may embed it first in their own. */
struct rdp_pd {
	struct rdp_dev *dev;
};

/**
 * Add a driver to the registry (called by RDP_DRIVER_REGISTER()).
 *
 * @param drv
 *   The driver; must live for the whole process.
 */
void rdp_driver_register(struct rdp_driver *drv);

/** Register driver struct @p drv under @p nm from a constructor. */
#define RDP_DRIVER_REGISTER(nm, drv) \
	RTE_INIT(rdp_driver_reg_ ## nm) \
	{ \
		(drv).name = RTE_STR(nm); \
		rdp_driver_register(&(drv)); \
	}

/**
 * Parse driver arguments, refusing unknown keys.
 *
 * @param drv
 *   Driver name, for messages.
 * @param args
 *   `key=value,...` or "" / NULL.
 * @param valid
 *   NULL-terminated list of accepted keys.
 * @return
 *   The parsed list (free with rte_kvargs_free()), or NULL with rte_errno
 *   EINVAL and a detail naming the driver and key.
 */
struct rte_kvargs *rdp_drv_args_parse(const char *drv, const char *args,
				      const char *const valid[]);

/**
 * Read an unsigned argument in [min, max]; keep @p val when absent.
 *
 * @param drv
 *   Driver name, for messages.
 * @param kv
 *   Parsed arguments.
 * @param key
 *   Key to read.
 * @param val
 *   In: default. Out: value.
 * @param min
 *   Smallest accepted value.
 * @param max
 *   Largest accepted value.
 * @return
 *   0, or -EINVAL with a detail naming driver, key, value and range.
 */
int rdp_drv_arg_u64(const char *drv, struct rte_kvargs *kv, const char *key,
		    uint64_t *val, uint64_t min, uint64_t max);

/**
 * Read a string argument; keep @p val when absent.
 *
 * @param drv
 *   Driver name, for messages.
 * @param kv
 *   Parsed arguments.
 * @param key
 *   Key to read.
 * @param val
 *   Buffer; in: default, out: value.
 * @param len
 *   Size of @p val.
 * @return
 *   0, or -EINVAL when the value does not fit.
 */
int rdp_drv_arg_str(const char *drv, struct rte_kvargs *kv, const char *key,
		    char *val, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* RDP_DRIVER_H */
