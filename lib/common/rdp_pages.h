/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_PAGES_H
#define RDP_PAGES_H

/**
 * @file
 * What the kernel says about pages: the default hugepage size, how many
 * hugepages are free, and the page size behind an address. Slow path: each
 * call reads a file under /proc.
 */

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The system's default hugepage size (`Hugepagesize` in /proc/meminfo).
 *
 * @return
 *   Bytes, or 0 when the kernel has no hugepages.
 */
size_t rdp_hugepage_size(void);

/**
 * Hugepages of the default size a new mapping can have: `HugePages_Free`
 * less `HugePages_Rsvd` in /proc/meminfo (pages that mappings reserved and
 * have not touched yet still count as free there).
 *
 * @return
 *   Count, or -1 when /proc/meminfo cannot be read.
 */
long rdp_hugepages_free(void);

/**
 * Page size of the mapping that holds @p addr in the calling process
 * (`KernelPageSize` in /proc/self/smaps).
 *
 * @param addr
 *   Any address.
 * @return
 *   Bytes, or 0 when no mapping holds @p addr or smaps cannot be read.
 */
size_t rdp_page_size_at(const void *addr);

#ifdef __cplusplus
}
#endif

#endif /* RDP_PAGES_H */
