/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_RDMA_H
#define RDP_RDMA_H

/**
 * @file
 * Moving data one-sided: registered regions of application memory, the
 * descriptors a peer needs to reach them, and RDMA WRITE and READ on an
 * endpoint.
 * - A region is memory registered with the device once, after rdp_init():
 *   memory the application owns (rdp_region_register(): any address and
 *   alignment, hugepage or not), or memory the library allocates for it
 *   (rdp_region_alloc()), which is what peers reach fastest: on shm a
 *   peer maps it and a WRITE or READ into it is a memcpy, where memory the
 *   application owns costs the peer a system call per operation
 *   (docs/performance.md).
 *   rdp_region_rdesc() gives its remote descriptor: the application puts
 *   it in its own messages (rdp_rdesc_encode()) and the peer decodes it
 *   (rdp_rdesc_decode(), which checks it).
 * - rdp_ep_rdma_burst() queues WRITEs (local region to a remote
 *   descriptor) and READs (remote descriptor to a local region) on an
 *   endpoint, in order with its messages. Each completes exactly once as
 *   an event: RDP_EV_RDMA_DONE, or RDP_EV_RDMA_FAILED with `status` < 0,
 *   carrying the operation's `user_data`, through on_send()
 *   (run-to-completion) or the event ring (pipeline); free it with
 *   rdp_msg_free().
 * - Ordering: a message sent after a WRITE on the same endpoint reaches
 *   the peer after the WRITE's data is in place ("data, then response";
 *   the WRITE need not be waited for). A READ is only ordered before what
 *   is posted after its completion: send what depends on a READ's data
 *   from its RDP_EV_RDMA_DONE.
 * - Flow control: a WRITE takes an SQ slot and no receive at the peer; a
 *   READ takes an SQ slot and one of the endpoint's read slots, agreed in
 *   the handshake (`read_depth` of both sides, capped by the devices).
 *   Operations beyond them wait in the endpoint's queue: none is refused
 *   by the device. As for messages, the device reports every
 *   `signal_interval`-th WR, and one report covers those before it: an
 *   operation's event may come with a later WR's, and never later than
 *   the report of the last WR queued or of the READ that takes the last
 *   read slot, both always reported.
 * - A remote access error (bad key, outside the region, no permission)
 *   fails the endpoint, as an RC queue pair fails: that operation and
 *   every one and every message not yet complete are reported failed,
 *   each once.
 * CONCURRENCY: as rdp_ep_send_burst(). Regions may be registered and
 * deregistered from any thread.
 */

#include <stddef.h>
#include <stdint.h>

#include "rdp_ep.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A registered region of application memory. Opaque. */
struct rdp_region;

/** Access a region grants its peers (local access is always granted). */
enum rdp_region_access {
	RDP_REGION_REMOTE_WRITE = 1u << 0, /**< peers may RDMA WRITE into it */
	RDP_REGION_REMOTE_READ = 1u << 1,  /**< peers may RDMA READ from it */
};

/** What a peer needs to reach a region: where, how much, with which key. */
struct rdp_rdesc {
	uint64_t addr;   /**< first byte, as the owner's device names it */
	uint64_t len;    /**< bytes */
	uint32_t rkey;   /**< the owner's remote key */
	uint32_t access; /**< enum rdp_region_access the owner granted */
};

/** Bytes of an encoded remote descriptor. */
#define RDP_RDESC_LEN 28

/**
 * Register application memory with the device.
 *
 * @param addr
 *   First byte (any alignment).
 * @param len
 *   Bytes, at least 1.
 * @param access
 *   enum rdp_region_access flags.
 * @return
 *   The region (deregister it before rdp_fini()), or NULL with rte_errno:
 *   ENODEV (before rdp_init()),
 *   EINVAL (NULL address, zero length, unknown flags), ENOMEM, or the
 *   device's errno; rdp_err_msg() says more.
 */
struct rdp_region *rdp_region_register(void *addr, size_t len, unsigned int access);

/**
 * Allocate memory and register it as a region, on the device the endpoints
 * use. On shm the memory is a memfd: a peer that connects after this call
 * maps it at the rendezvous and reaches it with a memcpy; a peer that was
 * connected before reaches it too, through a system call per operation
 * (connect after allocating for speed). On verbs it is the driver's
 * NUMA-local memory.
 *
 * @param len
 *   Bytes, at least 1 (the mapping is rounded up to a page; the region
 *   and its descriptor are @p len bytes).
 * @param access
 *   enum rdp_region_access flags.
 * @param socket
 *   NUMA node of the memory, or -1 for any.
 * @return
 *   The region, zero-filled, at rdp_region_addr() (deregister it before
 *   rdp_fini(): that frees the memory), or NULL with rte_errno:
 *   ENODEV (before rdp_init()), EINVAL (zero length, unknown flags, a
 *   socket out of range), ENOMEM, or the device's errno; rdp_err_msg()
 *   says more.
 */
struct rdp_region *rdp_region_alloc(size_t len, unsigned int access, int socket);

/**
 * The first byte of a region: the memory rdp_region_alloc() made, or the
 * address given to rdp_region_register().
 *
 * @param r
 *   The region.
 * @return
 *   Its address (never NULL).
 */
void *rdp_region_addr(const struct rdp_region *r);

/**
 * Deregister a region. Memory given to rdp_region_register() stays the
 * application's; memory from rdp_region_alloc() is freed.
 *
 * @param r
 *   The region, or NULL (nothing is done).
 * No operation may be queued on it while this runs.
 * @return
 *   0; -EBUSY while an operation queued by rdp_ep_rdma_burst() uses it
 *   (nothing is changed, the memory stays valid: retry after its event),
 *   or the device's errno.
 */
int rdp_region_deregister(struct rdp_region *r);

/**
 * The remote descriptor of a region, with its key on the process's first
 * device: what the peer of any endpoint uses when the process has one
 * device. With several (docs/configuration.md, "Several devices") a key
 * holds on one device only: use rdp_ep_region_rdesc().
 *
 * @param r
 *   The region.
 * @param d
 *   Filled.
 */
void rdp_region_rdesc(const struct rdp_region *r, struct rdp_rdesc *d);

/**
 * The remote descriptor of a region for the peer of @p ep: its key on the
 * endpoint's device (a region is registered with every device of the
 * process).
 *
 * @param ep
 *   The endpoint whose peer will use the descriptor.
 * @param r
 *   The region.
 * @param d
 *   Filled.
 */
void rdp_ep_region_rdesc(const struct rdp_ep *ep, const struct rdp_region *r,
			 struct rdp_rdesc *d);

/**
 * Encode a remote descriptor for a message (little-endian, fixed size).
 *
 * @param d
 *   The descriptor.
 * @param buf
 *   RDP_RDESC_LEN bytes.
 */
void rdp_rdesc_encode(const struct rdp_rdesc *d, uint8_t buf[RDP_RDESC_LEN]);

/**
 * Decode and check a remote descriptor a peer sent.
 *
 * @param buf
 *   Bytes received.
 * @param len
 *   How many (exactly RDP_RDESC_LEN).
 * @param d
 *   Filled on success.
 * @param why
 *   Receives the first bad field, e.g. "field 'len' = 0, expected at least 1".
 * @param why_len
 *   Size of @p why.
 * @return
 *   0, or -EPROTO (bad length or field).
 */
int rdp_rdesc_decode(const uint8_t *buf, size_t len, struct rdp_rdesc *d, char *why,
		     size_t why_len);

/** One-sided operations. */
enum rdp_rdma_opcode {
	RDP_RDMA_WRITE = 1, /**< local region -> remote descriptor */
	RDP_RDMA_READ = 2,  /**< remote descriptor -> local region */
};

/** One operation for rdp_ep_rdma_burst(). */
struct rdp_rdma_op {
	uint8_t opcode;             /**< enum rdp_rdma_opcode */
	struct rdp_region *region;  /**< local memory */
	uint64_t offset;            /**< into the region */
	uint32_t len;               /**< bytes, at least 1 */
	struct rdp_rdesc remote;    /**< the peer's region */
	uint64_t remote_offset;     /**< into it */
	uint64_t user_data;         /**< returned in the event */
};

/**
 * Queue one-sided operations on an endpoint, in order with its messages.
 *
 * @param ep
 *   The endpoint.
 * @param ops
 *   The operations.
 * @param n
 *   How many.
 * @return
 *   How many were accepted (each comes back exactly once as an event).
 *   Fewer than @p n with rte_errno: ENOTCONN (not established), EINVAL
 *   (unknown opcode, no region, a range outside the local region or the
 *   remote descriptor, a remote descriptor without the access the
 *   operation needs), ENOTSUP (a READ on an endpoint whose peer serves no
 *   READ), ENOBUFS (no event buffer free, or the inbox full: retry).
 */
uint16_t rdp_ep_rdma_burst(struct rdp_ep *ep, const struct rdp_rdma_op *ops, uint16_t n);

/**
 * READs the endpoint may have outstanding at once, agreed in the
 * handshake (known once established).
 */
uint32_t rdp_ep_read_depth(const struct rdp_ep *ep);

#ifdef __cplusplus
}
#endif

#endif /* RDP_RDMA_H */
