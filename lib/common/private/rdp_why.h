/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A reason for the caller's buffer: the validators (configuration values,
 * host:port, handshake bytes) say why they refuse something without
 * touching the thread's error detail, which their caller then sets with
 * the file and line or the peer in front.
 */
#ifndef RDP_WHY_H
#define RDP_WHY_H

#include <stddef.h>

#include <rte_common.h>

/**
 * Format the reason into @p why.
 *
 * @param why
 *   The caller's buffer; NULL when @p len is 0.
 * @param len
 *   Its size.
 * @param err
 *   The positive errno to return, negated.
 * @return
 *   -@p err.
 */
int rdp_why(char *why, size_t len, int err, const char *fmt, ...) __rte_format_printf(4, 5);

#endif
