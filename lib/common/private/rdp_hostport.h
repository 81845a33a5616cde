/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_HOSTPORT_H
#define RDP_HOSTPORT_H

/**
 * @file
 * "HOST:PORT": HOST an IPv4 address, a bracketed IPv6 address
 * ("[::1]:18515") or a host name (letters, digits, '-', '.'); PORT decimal.
 * The one parser of rdmaplane: configuration keys (`listen`, `connect`)
 * and rdp_listen()/rdp_connect() read addresses with it.
 */

#include <stddef.h>
#include <stdint.h>

#include "rdp_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An address to listen on: PORT may be 0 (any) and HOST empty (any address). */
#define RDP_HOSTPORT_LISTEN (1u << 0)

/**
 * Split @p s into host and port.
 *
 * @param s
 *   The text.
 * @param flags
 *   0 or RDP_HOSTPORT_LISTEN.
 * @param host
 *   Receives HOST without brackets (NULL: only check).
 * @param host_len
 *   Size of @p host.
 * @param port
 *   Receives PORT (NULL: only check).
 * @param why
 *   Receives the rule broken (the configuration's error messages).
 * @param why_len
 *   Size of @p why.
 * @return
 *   0, -EINVAL (@p why says why) or -ENOSPC (HOST longer than @p host_len - 1).
 */
int rdp_hostport_split(const char *s, unsigned int flags, char *host, size_t host_len,
		       uint16_t *port, char *why, size_t why_len);

/**
 * rdp_hostport_split() that says what is wrong with rdp_err_set():
 * "'SPEC': RULE".
 *
 * @return
 *   0, -EINVAL (a bad address or a NULL argument) or -ENOSPC.
 */
int rdp_hostport_parse(const char *s, unsigned int flags, char *host, size_t host_len,
		       uint16_t *port);

#ifdef __cplusplus
}
#endif

#endif /* RDP_HOSTPORT_H */
