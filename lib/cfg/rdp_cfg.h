/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_CFG_H
#define RDP_CFG_H

/**
 * @file
 * Per-core configuration: INI files read with rte_cfgfile, validated, with
 * built-in defaults and command-line overrides.
 *
 * - **Sections.** `[global]` sets every lcore's values; `[lcore.N]` (N an
 *   EAL lcore id) overrides some of them for lcore N. A key missing from
 *   both takes its built-in default. Keys marked global-only (`secret`)
 *   are refused in `[lcore.N]`.
 * - **Syntax.** `key = value` lines, `[section]` lines, blank lines and
 *   `#` comments (to the end of a line). Values cannot hold `#`, `\` or
 *   control characters; whitespace around names and values is dropped.
 * - **Strict.** Unknown sections and keys (with a suggestion for typos),
 *   repeated sections and keys, bad numbers, bad ranges, bad host:port
 *   and driver specs, over-long lines and values are all refused.
 * - **Relations** are checked on each lcore's resolved values: the credit
 *   rules of rdp_credit_params_check() (`sq_size >= 2*signal_interval`,
 *   `rq_size > ack_reserve`, `1 <= ack_threshold <= rq_size-ack_reserve`,
 *   `ack_reserve >= ceil((rq_size-ack_reserve)/ack_threshold)`), `cq_size`
 *   0 or `>= sq_size+rq_size` (`sq_size+1+srq_size` with `srq = on`), a
 *   pipeline `app_lcore` other than the
 *   lcore itself, and with `srq = on` `srq_floor <= srq_lease_max`,
 *   `srq_floor <= srq_size` and `rndv_threshold <= srq_floor*buf_size`
 *   (`max_msg_size` when `read_depth = 0`). A `rndv_threshold` no section
 *   sets follows that rule: with `srq = on` it is `srq_floor*buf_size`
 *   when that is below its default.
 * - **Messages** say where and why, in one shape:
 *   `WHERE: [SECTION] KEY = VALUE: RULE`, where WHERE is `FILE:LINE` for a
 *   value read from a file, the origin given to rdp_cfg_set() for an
 *   override, or `default`. Errors about a whole line or section drop the
 *   parts that do not apply (`FILE:LINE: RULE`, `FILE:LINE: [SECTION]: RULE`,
 *   `FILE: RULE`). A secret is never echoed. Examples:
 *
 *       server.ini:7: [lcore.1] sq_size = 12: need sq_size >= 2*signal_interval (signal_interval=8)
 *       server.ini:3: [global] sq_sise = 64: unknown key (did you mean sq_size?)
 *       --ring-size: [global] ring_size = 1000: must be a power of two in [64, 1048576]
 *
 * - Loading does not need EAL. Log type: `rdp.cfg`.
 *
 * See docs/configuration.md for every key with its meaning.
 *
 * CONCURRENCY: a struct rdp_cfg is not locked. Build it on one thread;
 * once built, any number of threads may read it.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "rdp_common.h"
#include "rdp_credit.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Longest value in a file, in characters (rte_cfgfile keeps 255). */
#define RDP_CFG_VALUE_MAX 255
/** Longest section or key name, in characters (rte_cfgfile keeps 63). */
#define RDP_CFG_NAME_MAX 63
/** The `lcore_id` that means `[global]`. */
#define RDP_CFG_GLOBAL (-1)

/** Value of a switch key (`srq`). */
enum rdp_cfg_switch {
	RDP_CFG_OFF = 0, /**< `off` */
	RDP_CFG_ON,      /**< `on` */
};

/** Where an lcore's pools and registered regions get their pages (`hugepages`). */
enum rdp_cfg_hugepages {
	RDP_CFG_HUGE_AUTO = 0, /**< `auto`: hugepages when EAL has them, else base pages */
	RDP_CFG_HUGE_ON,       /**< `on`: hugepages or an error */
	RDP_CFG_HUGE_OFF,      /**< `off`: base pages */
};

/** How an lcore hands received messages to the application (`mode`). */
enum rdp_cfg_mode {
	RDP_CFG_MODE_RTC = 0,  /**< `rtc`: the poller runs the handlers itself */
	RDP_CFG_MODE_PIPELINE, /**< `pipeline`: events go through a ring to `app_lcore` */
};

/**
 * The resolved values of one lcore (or of `[global]`).
 *
 * Each field is the key of the same name; docs/configuration.md gives the
 * meaning, default and range of each.
 */
struct rdp_cfg_lcore {
	int lcore_id;       /**< EAL lcore id, or RDP_CFG_GLOBAL */
	bool from_section;  /**< lcore has an `[lcore.N]` section (or an lcore override) */

	char driver[RDP_CFG_VALUE_MAX + 1]; /**< `auto` or `NAME[:key[=value],...]` */
	char device[64];       /**< device or list of devices ("rxe0, rxe1"), the first the
				*   default; empty: the driver picks */
	uint32_t port;         /**< 0: first active port, else 1..255 */
	int32_t gid_index;     /**< -1: automatic (RoCE v2, IPv4-mapped first) */

	uint32_t sq_size;      /**< S: send queue slots accounted */
	uint32_t rq_size;      /**< R: receive entries kept posted */
	uint32_t cq_size;      /**< 0: automatic budget (S+R per endpoint) */
	uint32_t buf_size;     /**< receive buffer bytes (multiple of 64) */
	uint32_t max_msg_size; /**< largest message in bytes */
	uint32_t rndv_threshold; /**< larger messages go by rendezvous (RDMA READ) */
	uint32_t rndv_pool_size; /**< bytes of each rendezvous arena (send, receive) per lcore;
				  *   0: automatic (ep_rndv_arena_size()) */
	uint32_t signal_interval; /**< T_sig */
	uint32_t ack_threshold;   /**< T_ack */
	uint32_t ack_reserve;     /**< A_rq */

	enum rdp_cfg_switch srq; /**< one shared receive queue per poller, credits leased */
	uint32_t srq_size;     /**< buffers of the poller's SRQ */
	uint32_t srq_floor;    /**< credits every endpoint keeps on the SRQ */
	uint32_t srq_lease_max; /**< most credits one endpoint may lease */
	uint32_t srq_grant;    /**< most credits one grant gives */
	uint32_t srq_give_back_us; /**< to a leasing peer: idle time before credits above
				    *   its floor go back, 0 = at once */

	uint32_t poll_burst;   /**< completions per poll */
	uint32_t idle_sleep_us; /**< sleep after a run of idle polls; 0: always spin */
	uint32_t ring_size;    /**< handoff ring entries (power of two) */
	int32_t numa_node;     /**< -1: the lcore's own node */
	uint32_t max_endpoints; /**< endpoints on this lcore */
	uint32_t send_bufs;    /**< send buffers on this lcore */
	enum rdp_cfg_hugepages hugepages; /**< pages of pools and regions */
	enum rdp_cfg_mode mode; /**< run-to-completion or pipeline */
	int32_t app_lcore;     /**< pipeline: lcore receiving events; -1: main lcore */

	uint32_t rnr_retry;    /**< 0..7, 7 = retry forever */
	uint32_t retry_cnt;    /**< 0..7 */
	uint32_t timeout;      /**< local ACK timeout, 4.096 us * 2^timeout */
	uint32_t min_rnr_timer; /**< RNR NAK timer code, 0..31 */
	uint32_t max_inline;   /**< inline send bytes */
	uint32_t read_depth;   /**< RDMA READs served and issued at once, per endpoint */

	char listen[RDP_CFG_VALUE_MAX + 1];  /**< `host:port`; empty: do not listen */
	char connect[RDP_CFG_VALUE_MAX + 1]; /**< `host:port`; empty: no peer */
	uint32_t connect_timeout_ms;   /**< TCP connect deadline */
	uint32_t handshake_timeout_ms; /**< hello exchange deadline */
	uint32_t max_handshakes;       /**< handshakes past their HELLO at once */
	uint32_t hello_timeout_ms;     /**< a whole HELLO within this of the accept */
	uint32_t handshakes_per_peer;  /**< handshakes of one peer address at once */
	uint32_t drain_timeout_ms;     /**< a closed endpoint's drain deadline; 0: none */
	char secret[RDP_CFG_VALUE_MAX + 1]; /**< handshake secret; global-only */
};

/** A loaded configuration: `[global]` and the lcores with a section. Opaque. */
struct rdp_cfg;

/**
 * Load and validate a configuration file.
 *
 * The file is scanned line by line first (so that every error has a line
 * number), then read with rte_cfgfile, then every value and every lcore's
 * relations are checked. The first error is kept in rdp_err_msg().
 *
 * @param path
 *   File to read; messages name it as given.
 * @return
 *   The configuration, or NULL with rte_errno: EINVAL (bad content, or
 *   NULL @p path), ENOENT, EACCES, EISDIR or another errno of open/read,
 *   EIO (the file changed while it was read), ENOMEM.
 */
struct rdp_cfg *rdp_cfg_load(const char *path);

/**
 * A configuration of built-in defaults only: `[global]`, no lcore section.
 *
 * @return
 *   The configuration, or NULL with rte_errno ENOMEM.
 */
struct rdp_cfg *rdp_cfg_default(void);

/**
 * Override one value, as an application does for a command-line option.
 *
 * The value goes through the same checks as a file value. A `[global]`
 * override reaches every lcore that does not set the key itself; an lcore
 * override gives that lcore a section if it had none. Relations are not
 * checked here, since one override may need another; call
 * rdp_cfg_validate() once all are applied.
 *
 * @param cfg
 *   Configuration.
 * @param lcore_id
 *   RDP_CFG_GLOBAL, or an lcore id below RTE_MAX_LCORE.
 * @param key
 *   Key name, as in a file.
 * @param value
 *   Value, as in a file (surrounding whitespace is dropped).
 * @param origin
 *   Where the value comes from, named in messages and rdp_cfg_dump(), for
 *   example "--driver"; NULL means "override".
 * @return
 *   0, or -EINVAL (NULL argument, bad lcore id, unknown or global-only key,
 *   bad value), or -ENOMEM.
 */
int rdp_cfg_set(struct rdp_cfg *cfg, int lcore_id, const char *key, const char *value,
		const char *origin);

/**
 * Check the relations between keys on `[global]` and on every lcore.
 *
 * rdp_cfg_load() already did; call it again after rdp_cfg_set().
 *
 * @param cfg
 *   Configuration.
 * @return
 *   0, or -EINVAL with the first broken relation in rdp_err_msg(),
 *   blaming the most specific value involved.
 */
int rdp_cfg_validate(const struct rdp_cfg *cfg);

/**
 * The values an lcore runs with.
 *
 * @param cfg
 *   Configuration.
 * @param lcore_id
 *   RDP_CFG_GLOBAL, or an lcore id below RTE_MAX_LCORE.
 * @return
 *   The lcore's values if it has a section, else those of `[global]`
 *   (with `lcore_id` RDP_CFG_GLOBAL); NULL with rte_errno EINVAL for a
 *   NULL @p cfg or a bad lcore id. Valid until rdp_cfg_set() or
 *   rdp_cfg_free().
 */
const struct rdp_cfg_lcore *rdp_cfg_lcore(const struct rdp_cfg *cfg, int lcore_id);

/**
 * The lcores with a section, in increasing order.
 *
 * @param cfg
 *   Configuration.
 * @param ids
 *   Receives up to @p max lcore ids; may be NULL when @p max is 0.
 * @param max
 *   Capacity of @p ids.
 * @return
 *   How many lcores have a section (may exceed @p max).
 */
unsigned int rdp_cfg_lcores(const struct rdp_cfg *cfg, unsigned int *ids, unsigned int max);

/**
 * Report a rule that one key's value breaks and that only its user can
 * check (the device a `device` key names, say), in the configuration's
 * message shape: `WHERE: [SECTION] KEY = VALUE: RULE`, WHERE the file and
 * line the value came from (or its override's origin, or `default`).
 *
 * @param cfg
 *   The configuration.
 * @param lcore_id
 *   RDP_CFG_GLOBAL, or an lcore whose value is meant (an inherited value
 *   names [global] and says which lcore inherited it).
 * @param key
 *   The key's name.
 * @param err
 *   The errno to report (positive).
 * @param fmt
 *   printf-style RULE.
 * @return
 *   -@p err, with the message in rdp_err_msg().
 */
int rdp_cfg_key_error(const struct rdp_cfg *cfg, int lcore_id, const char *key, int err,
		      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/**
 * The first device key that [global] sets: "device", "port" or
 * "gid_index", or NULL when none is (the driver picks).
 *
 * @param cfg
 *   The configuration.
 * @return
 *   The key's name, or NULL.
 */
const char *rdp_cfg_device_key(const struct rdp_cfg *cfg);

/** Room of a driver spec (RDP_DEV_SPEC_MAX of rdp_dev.h). */
#define RDP_CFG_SPEC_MAX 256

/** A device the configuration opens (rdp_cfg_devices()). */
struct rdp_cfg_device {
	char spec[RDP_CFG_SPEC_MAX]; /**< driver spec; "": probe (rdp_dev_default_spec()) */
	int section;                 /**< first section naming it: RDP_CFG_GLOBAL or an lcore */
	const char *key;             /**< its device key there, NULL when none (the driver
				      *   picks) */
};

/**
 * The devices the configuration opens, [global]'s first. `device` holds
 * one name or a list ("rxe0, rxe1"); each name, with its section's `port`
 * and `gid_index`, is one device (the same triple in two sections is one
 * device). A section's first device is the default of its endpoints.
 * With driver = shm, `device` names the shm devices the process makes
 * (`port` and `gid_index` are refused); with auto or verbs it names RDMA
 * devices.
 *
 * @param cfg
 *   The configuration.
 * @param devs
 *   Receives the devices.
 * @param max
 *   Room in @p devs.
 * @param lcore_dev
 *   NULL, or RTE_MAX_LCORE entries: for each [lcore.N] section, the index
 *   in @p devs of its default device (0 for lcores without a section).
 * @return
 *   How many devices (at least 1), or -EINVAL with the message naming the
 *   file, line and key (more than @p max devices, a key the driver cannot
 *   take, a key also given in the driver's arguments).
 */
int rdp_cfg_devices(const struct rdp_cfg *cfg, struct rdp_cfg_device *devs, unsigned int max,
		    uint8_t *lcore_dev);

/**
 * The driver spec of [global]'s first device (rdp_cfg_devices()): the
 * `driver` key, with the device keys (`device`, `port`, `gid_index`) added
 * as the driver's arguments; `driver = auto` with a device key means verbs.
 * A device key with a driver that has no devices to choose, or a key also
 * given in the driver's arguments, is refused.
 *
 * @param cfg
 *   The configuration.
 * @param spec
 *   Receives the spec, or "" for `driver = auto` without device keys (the
 *   caller probes the drivers: rdp_dev_default_spec()).
 * @param len
 *   Room in @p spec.
 * @return
 *   0, or -EINVAL with the message naming the file, line and key.
 */
int rdp_cfg_driver_spec(const struct rdp_cfg *cfg, char *spec, size_t len);

/**
 * Print the resolved values as an INI file: `[global]`, then each
 * `[lcore.N]` with all of its values; a comment on each line says where the
 * value came from. A set secret is printed as a comment, never in clear.
 * Loading the output gives the same values, except the secret.
 *
 * @param cfg
 *   Configuration.
 * @param out
 *   Stream.
 * @return
 *   0, or -EINVAL (NULL argument), or -EIO (write error).
 */
int rdp_cfg_dump(const struct rdp_cfg *cfg, FILE *out);

/**
 * Free a configuration.
 *
 * @param cfg
 *   Configuration, or NULL.
 */
void rdp_cfg_free(struct rdp_cfg *cfg);

/**
 * Split a `host:port` value (`listen`, `connect`).
 *
 * @param spec
 *   `HOST:PORT`, where HOST is an IPv4 address, `[IPv6]` or a host name.
 * @param host
 *   Receives HOST without brackets.
 * @param len
 *   Size of @p host.
 * @param port
 *   Receives PORT.
 * @return
 *   0, or -EINVAL (malformed, with the reason in rdp_err_msg()), or
 *   -ENOSPC (@p host too small).
 */
int rdp_cfg_hostport(const char *spec, char *host, size_t len, uint16_t *port);

/**
 * The credit parameters of an lcore's values, for rdp_credit_init().
 *
 * @param lc
 *   Values of an lcore.
 * @param p
 *   Receives sq_size, signal_interval, rq_size, ack_reserve, ack_threshold.
 */
static inline void
rdp_cfg_credit_params(const struct rdp_cfg_lcore *lc, struct rdp_credit_params *p)
{
	p->sq_size = lc->sq_size;
	p->signal_interval = lc->signal_interval;
	p->rq_size = lc->rq_size;
	p->ack_reserve = lc->ack_reserve;
	p->ack_threshold = lc->ack_threshold;
}

#ifdef __cplusplus
}
#endif

#endif /* RDP_CFG_H */
