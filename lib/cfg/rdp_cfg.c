/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-core configuration files.
 *
 * A file is read in three passes:
 *  1. scan: our own line reader. rte_cfgfile returns NULL on a malformed
 *     file without saying where, silently skips a line that has no '=',
 *     and cuts long names and values, so the scan refuses all of that with
 *     a line number, and records every section and key with its line.
 *  2. rte_cfgfile reads the file; its sections and entries come back in
 *     file order and are paired by index with the scan's records.
 *  3. section names, keys and values are checked in file order, then the
 *     relations of each lcore's resolved values.
 *
 * Every key is one line of keys[]; nothing else in this file names a key,
 * except the relation checks.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cfgfile.h>

#include "rdp_cfg.h"
#include "rdp_hostport.h"
#include "rdp_why.h"

RTE_LOG_REGISTER(rdp_cfg_logtype, rdp.cfg, INFO);
#define CFG_LOG(level, fmt, ...) RDP_LOG(level, rdp_cfg_logtype, "cfg", fmt, ##__VA_ARGS__)

/*
 * rte_cfgfile reads a line into CFG_NAME_LEN + CFG_VALUE_LEN + 4 bytes and
 * fails when the newline does not fit with the NUL after it.
 */
#define LINE_MAX_CHARS (CFG_NAME_LEN + CFG_VALUE_LEN + 2)
#define COMMENT_CHAR '#'
/* Longest origin text of an override kept for messages. */
#define ORIGIN_MAX 48
/* Values longer than this are shortened when echoed in a message. */
#define ECHO_MAX 48

static_assert(RDP_CFG_VALUE_MAX == CFG_VALUE_LEN - 1, "rte_cfgfile value length");
static_assert(RDP_CFG_NAME_MAX == CFG_NAME_LEN - 1, "rte_cfgfile name length");
static_assert(sizeof(enum rdp_cfg_mode) == sizeof(unsigned int),
	      "enum keys are stored as unsigned int");

enum key_type {
	T_U32,  /* uint32_t in [min, max] */
	T_I32,  /* int32_t in [min, max]; min -1 means "automatic" */
	T_STR,  /* char[], at most sizeof - 1 characters */
	T_ENUM, /* enum, the index of the value in choices[] */
};

enum key_flags {
	F_POW2 = 1u << 0,     /* a power of two */
	F_ALIGN64 = 1u << 1,  /* a multiple of 64 */
	F_GLOBAL = 1u << 2,   /* only in [global] */
	F_SECRET = 1u << 3,   /* never echoed */
	F_DRIVER = 1u << 4,   /* driver spec syntax */
	F_HOSTPORT = 1u << 5, /* host:port, or empty */
	F_CREDIT = 1u << 6,   /* a parameter of rdp_credit_params_check() */
};

struct key {
	const char *name;
	enum key_type type;
	uint16_t off;
	uint16_t size;
	const char *def; /* as written in a file, so defaults take the same checks */
	int64_t min;
	int64_t max;     /* T_STR: longest length */
	unsigned int flags;
	const char *const *choices;
};

#define FIELD_SIZE(f) sizeof(((struct rdp_cfg_lcore *)0)->f)
/* offsetof(f), refusing to compile when field f is not of type T */
#define FIELD_OFF(f, T) (offsetof(struct rdp_cfg_lcore, f) + 0 * sizeof(char[ \
	__builtin_types_compatible_p(__typeof__(((struct rdp_cfg_lcore *)0)->f), T) ? 1 : -1]))

#define U32(f, def, lo, hi, fl) \
	{ #f, T_U32, FIELD_OFF(f, uint32_t), FIELD_SIZE(f), def, lo, hi, fl, NULL }
#define I32(f, def, lo, hi, fl) \
	{ #f, T_I32, FIELD_OFF(f, int32_t), FIELD_SIZE(f), def, lo, hi, fl, NULL }
#define STR(f, def, fl) \
	{ #f, T_STR, FIELD_OFF(f, char[FIELD_SIZE(f)]), FIELD_SIZE(f), def, 0, \
	  FIELD_SIZE(f) - 1, fl, NULL }
#define ENUM(f, E, names, def, fl) \
	{ #f, T_ENUM, FIELD_OFF(f, E), FIELD_SIZE(f), def, 0, RTE_DIM(names) - 1, fl, names }

/* The smallest rendezvous arena given: one page of an arena (rdp_arena.h). */
#define RNDV_POOL_MIN 4096u

static const char *const mode_names[] = { "rtc", "pipeline" };
static const char *const switch_names[] = { "off", "on" };
static const char *const hugepages_names[] = { "auto", "on", "off" };

/* One line per key: name, default, range, flags. */
static const struct key keys[] = {
	STR(driver,               "auto",                      F_DRIVER),
	STR(device,               "",                          0),
	U32(port,                 "0",       0, 255,           0),
	I32(gid_index,            "-1",     -1, 255,           0),
	U32(sq_size,              "256",     2, 4096,          F_CREDIT),
	U32(rq_size,              "256",     2, 32768,         F_CREDIT),
	U32(cq_size,              "0",       0, 4194304,       0),
	U32(buf_size,             "8192",    64, 1048576,      F_ALIGN64),
	U32(max_msg_size,         "1048576", 1, 1073741824,    0),
	U32(rndv_threshold,       "65536",   1, 1073741824,    0),
	U32(rndv_pool_size,       "0",       0, 2147483648u,   0),
	U32(signal_interval,      "16",      2, 16384,         F_CREDIT),
	U32(ack_threshold,        "16",      1, 32768,         F_CREDIT),
	U32(ack_reserve,          "16",      1, 32768,         F_CREDIT),
	ENUM(srq, enum rdp_cfg_switch, switch_names, "off",    0),
	U32(srq_size,             "4096",    1, 1048576,       0),
	U32(srq_floor,            "1",       1, 32767,         0),
	U32(srq_lease_max,        "64",      1, 32767,         0),
	U32(srq_grant,            "8",       1, 32767,         0),
	U32(srq_give_back_us,     "200",     0, 1000000,       0),
	U32(poll_burst,           "32",      1, 256,           0),
	U32(idle_sleep_us,        "0",       0, 100000,        0),
	U32(ring_size,            "1024",    64, 1048576,      F_POW2),
	I32(numa_node,            "-1",     -1, RTE_MAX_NUMA_NODES - 1, 0),
	U32(max_endpoints,        "64",      1, 4096,          0),
	U32(send_bufs,            "4096",    64, 1048576,      0),
	ENUM(hugepages, enum rdp_cfg_hugepages, hugepages_names, "auto", 0),
	ENUM(mode, enum rdp_cfg_mode, mode_names, "rtc",       0),
	I32(app_lcore,            "-1",     -1, RTE_MAX_LCORE - 1, 0),
	U32(rnr_retry,            "7",       0, 7,             0),
	U32(retry_cnt,            "7",       0, 7,             0),
	U32(timeout,              "14",      0, 31,            0),
	U32(min_rnr_timer,        "12",      0, 31,            0),
	U32(max_inline,           "64",      0, 1024,          0),
	U32(read_depth,           "16",      0, 255,           0),
	STR(listen,               "127.0.0.1:18515",           F_HOSTPORT),
	STR(connect,              "",                          F_HOSTPORT),
	U32(connect_timeout_ms,   "5000",    1, 600000,        0),
	U32(handshake_timeout_ms, "5000",    1, 600000,        0),
	U32(max_handshakes,       "16",      1, 4096,          0),
	U32(hello_timeout_ms,     "1000",     1, 600000,        0),
	U32(handshakes_per_peer,  "4",       1, 4096,          0),
	U32(drain_timeout_ms,     "3000",    0, 600000,        0),
	STR(secret,               "",                          F_GLOBAL | F_SECRET),
};
#define NB_KEYS RTE_DIM(keys)

enum origin_kind {
	ORIGIN_DEFAULT = 0,
	ORIGIN_FILE,
	ORIGIN_OVERRIDE,
};

/* Where a value came from. */
struct origin {
	enum origin_kind kind;
	unsigned int line;      /* ORIGIN_FILE */
	char what[ORIGIN_MAX];  /* ORIGIN_OVERRIDE */
};

/* [global] or one [lcore.N]: resolved values and where each came from. */
struct scope {
	struct rdp_cfg_lcore v;
	bool set[NB_KEYS];           /* set in this scope, not inherited */
	struct origin org[NB_KEYS];  /* an inherited value keeps the global origin */
	unsigned int line;           /* of the section header; 0 when none */
};

struct rdp_cfg {
	char *path;                  /* NULL when not loaded from a file */
	struct scope global;
	struct scope *lcore[RTE_MAX_LCORE];
};

/* ---------------------------------------------------------------------- */
/* Names and messages                                                     */
/* ---------------------------------------------------------------------- */

static const struct key *
key_find(const char *name)
{
	unsigned int i;

	for (i = 0; i < NB_KEYS; i++)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

static unsigned int
key_index(const struct key *k)
{
	return (unsigned int)(k - keys);
}

/* Edit distance, case-insensitive; names are short, so a small table will do. */
static unsigned int
distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	unsigned int row[CFG_NAME_LEN + 1];

	if (la > CFG_NAME_LEN || lb > CFG_NAME_LEN)
		return UINT32_MAX;
	for (j = 0; j <= lb; j++)
		row[j] = (unsigned int)j;
	for (i = 1; i <= la; i++) {
		unsigned int diag = row[0];

		row[0] = (unsigned int)i;
		for (j = 1; j <= lb; j++) {
			unsigned int up = row[j];
			unsigned int cost = tolower((unsigned char)a[i - 1]) !=
					    tolower((unsigned char)b[j - 1]);

			row[j] = RTE_MIN(RTE_MIN(row[j] + 1, row[j - 1] + 1), diag + cost);
			diag = up;
		}
	}
	return row[lb];
}

/* The known key nearest to @p name, or NULL when none is near. */
static const struct key *
key_suggest(const char *name)
{
	unsigned int i, best = UINT32_MAX, d;
	const struct key *found = NULL;

	for (i = 0; i < NB_KEYS; i++) {
		d = distance(name, keys[i].name);
		if (d < best) {
			best = d;
			found = &keys[i];
		}
	}
	return best <= (strlen(name) >= 10 ? 3u : 2u) ? found : NULL;
}

static void
section_name(int lcore_id, char *buf, size_t len)
{
	if (lcore_id == RDP_CFG_GLOBAL)
		snprintf(buf, len, "global");
	else
		snprintf(buf, len, "lcore.%d", lcore_id);
}

static void
origin_text(const struct rdp_cfg *cfg, const struct origin *o, char *buf, size_t len)
{
	switch (o->kind) {
	case ORIGIN_FILE:
		snprintf(buf, len, "%s:%u", cfg->path, o->line);
		break;
	case ORIGIN_OVERRIDE:
		snprintf(buf, len, "%s", o->what);
		break;
	default:
		snprintf(buf, len, "default");
		break;
	}
}

/* A value as echoed in a message: secrets hidden, empties quoted, long ones cut. */
static void
echo_value(const struct key *k, const char *value, char *buf, size_t len)
{
	if (k != NULL && (k->flags & F_SECRET))
		snprintf(buf, len, "(hidden)");
	else if (value[0] == '\0')
		snprintf(buf, len, "\"\"");
	else if (strlen(value) > ECHO_MAX)
		snprintf(buf, len, "%.*s...", ECHO_MAX - 16, value);
	else
		snprintf(buf, len, "%s", value);
}

/* "WHERE: [SECTION] KEY = VALUE: RULE" */
static int
key_error(const char *where, int lcore_id, const char *key, const struct key *k,
	  const char *value, const char *fmt, ...) __rte_format_printf(6, 7);

static int
key_error(const char *where, int lcore_id, const char *key, const struct key *k,
	  const char *value, const char *fmt, ...)
{
	char sec[32], shown[ECHO_MAX + 8], rule[RDP_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rule, sizeof(rule), fmt, ap);
	va_end(ap);
	section_name(lcore_id, sec, sizeof(sec));
	echo_value(k, value, shown, sizeof(shown));
	return rdp_err_set(EINVAL, "%s: [%s] %s = %s: %s", where, sec, key, shown, rule);
}

/*
 * Refuse unknown key @p name, suggesting the nearest known one; the value
 * of a misspelt secret stays hidden.
 */
static int
unknown_key(const char *where, int lcore_id, const char *name, const char *value)
{
	const struct key *near = key_suggest(name);
	char hint[CFG_NAME_LEN + 32] = "";

	if (near != NULL)
		snprintf(hint, sizeof(hint), " (did you mean %s?)", near->name);
	return key_error(where, lcore_id, name, near, value, "unknown key%s", hint);
}

/* ---------------------------------------------------------------------- */
/* Values                                                                 */
/* ---------------------------------------------------------------------- */

static bool
is_name_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

static int
parse_int(const char *s, int64_t *out)
{
	bool neg = false;
	int64_t v = 0;

	if (*s == '-') {
		neg = true;
		s++;
	}
	if (*s == '\0')
		return -EINVAL;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9' || v > INT64_C(1) << 40)
			return -EINVAL;
		v = v * 10 + (*s - '0');
	}
	*out = neg ? -v : v;
	return 0;
}

/* NAME[:key[=value],...] with NAME and keys in [a-z0-9_]+, or "auto". */
static int
driver_check(const char *s, char *why, size_t len)
{
	const char *colon = strchr(s, ':'), *arg, *end;
	size_t name_len = colon != NULL ? (size_t)(colon - s) : strlen(s);
	size_t i;

	if (name_len == 0)
		return rdp_why(why, len, EINVAL, "must be auto or NAME[:key=value,...]");
	for (i = 0; i < name_len; i++)
		if (!is_name_char((unsigned char)s[i]))
			return rdp_why(why, len, EINVAL, "driver name '%.*s' may only use a-z, 0-9 and '_'",
				    (int)name_len, s);
	if (colon == NULL)
		return 0;
	if (name_len == 4 && strncmp(s, "auto", 4) == 0)
		return rdp_why(why, len, EINVAL, "auto takes no arguments");
	for (arg = colon + 1;; arg = end + 1) {
		const char *eq, *prev;
		size_t arg_len, key_len;

		end = strchr(arg, ',');
		if (end == NULL)
			end = arg + strlen(arg);
		arg_len = (size_t)(end - arg);
		if (arg_len == 0)
			return rdp_why(why, len, EINVAL, "empty driver argument");
		eq = memchr(arg, '=', arg_len);
		key_len = eq != NULL ? (size_t)(eq - arg) : arg_len;
		for (i = 0; i < key_len; i++)
			if (!is_name_char((unsigned char)arg[i]))
				break;
		if (key_len == 0 || i < key_len)
			return rdp_why(why, len, EINVAL, "driver argument '%.*s': the key may only use "
				    "a-z, 0-9 and '_'", (int)arg_len, arg);
		if (eq != NULL && eq + 1 == end)
			return rdp_why(why, len, EINVAL, "driver argument '%.*s' has an empty value",
				    (int)arg_len, arg);
		if (eq != NULL && memchr(eq + 1, '=', (size_t)(end - eq - 1)) != NULL)
			return rdp_why(why, len, EINVAL, "driver argument '%.*s' has more than one '='",
				    (int)arg_len, arg);
		for (i = 0; i < arg_len; i++)
			if (isspace((unsigned char)arg[i]))
				return rdp_why(why, len, EINVAL, "driver argument '%.*s' contains a space",
					    (int)arg_len, arg);
		/* a repeated key: look for it at the start of every earlier argument */
		for (prev = colon + 1; prev < arg; prev = strchr(prev, ',') + 1)
			if (strncmp(prev, arg, key_len) == 0 &&
			    (prev[key_len] == '=' || prev[key_len] == ','))
				return rdp_why(why, len, EINVAL, "driver argument '%.*s' given twice",
					    (int)key_len, arg);
		if (*end == '\0')
			return 0;
	}
}

static int
range_rule(const struct key *k, char *why, size_t len)
{
	const char *what = (k->flags & F_POW2) ? "a power of two" :
		(k->flags & F_ALIGN64) ? "a multiple of 64" : "an integer";

	if (k->min == -1)
		return rdp_why(why, len, EINVAL, "must be -1 or %s in [0, %" PRId64 "]", what, k->max);
	return rdp_why(why, len, EINVAL, "must be %s in [%" PRId64 ", %" PRId64 "]", what, k->min, k->max);
}

static int
enum_rule(const struct key *k, char *why, size_t len)
{
	size_t off = (size_t)snprintf(why, len, "must be");
	int64_t i;

	for (i = 0; i <= k->max && off < len; i++)
		off += (size_t)snprintf(why + off, len - off, "%s %s",
					i == 0 ? "" : i == k->max ? " or" : ",", k->choices[i]);
	return -EINVAL;
}

/*
 * Check @p s (@p raw_len characters before any cut) for key @p k and store
 * it in @p dst. On error, @p why receives the rule broken.
 */
static int
value_parse(const struct key *k, const char *s, size_t raw_len, struct rdp_cfg_lcore *dst,
	    char *why, size_t len)
{
	char *field = (char *)dst + k->off;
	int64_t v;
	size_t i;

	if (raw_len > (size_t)(k->type == T_STR ? k->max : RDP_CFG_VALUE_MAX))
		return rdp_why(why, len, EINVAL, "longer than %" PRId64 " characters",
			    k->type == T_STR ? k->max : (int64_t)RDP_CFG_VALUE_MAX);
	for (i = 0; s[i] != '\0'; i++) {
		if (iscntrl((unsigned char)s[i]))
			return rdp_why(why, len, EINVAL, "contains a control character");
		if (s[i] == COMMENT_CHAR || s[i] == '\\')
			return rdp_why(why, len, EINVAL, "contains '%c', which a file cannot hold", s[i]);
	}
	switch (k->type) {
	case T_U32:
	case T_I32:
		if (parse_int(s, &v) < 0 || v < k->min || v > k->max ||
		    ((k->flags & F_POW2) && !rte_is_power_of_2((uint32_t)v)) ||
		    ((k->flags & F_ALIGN64) && v % 64 != 0))
			return range_rule(k, why, len);
		if (k->type == T_U32)
			*(uint32_t *)field = (uint32_t)v;
		else
			*(int32_t *)field = (int32_t)v;
		return 0;
	case T_ENUM:
		for (v = 0; v <= k->max; v++) {
			if (strcmp(s, k->choices[v]) == 0) {
				*(unsigned int *)field = (unsigned int)v;
				return 0;
			}
		}
		return enum_rule(k, why, len);
	case T_STR:
		if ((k->flags & F_DRIVER) && driver_check(s, why, len) < 0)
			return -EINVAL;
		if ((k->flags & F_HOSTPORT) && s[0] != '\0' &&
		    rdp_hostport_split(s, 0, NULL, 0, NULL, why, len) < 0)
			return -EINVAL;
		snprintf(field, k->size, "%s", s);
		return 0;
	}
	return rdp_why(why, len, EINVAL, "unknown key type");
}

static void
value_format(const struct key *k, const struct rdp_cfg_lcore *lc, char *buf, size_t len)
{
	const char *field = (const char *)lc + k->off;

	switch (k->type) {
	case T_U32:
		snprintf(buf, len, "%" PRIu32, *(const uint32_t *)field);
		break;
	case T_I32:
		snprintf(buf, len, "%" PRId32, *(const int32_t *)field);
		break;
	case T_ENUM:
		snprintf(buf, len, "%s", k->choices[*(const unsigned int *)field]);
		break;
	case T_STR:
		snprintf(buf, len, "%s", field);
		break;
	}
}

/* ---------------------------------------------------------------------- */
/* Scopes                                                                 */
/* ---------------------------------------------------------------------- */

/* Give lcore scope @p s the global value of key @p i. */
static void
scope_inherit(struct scope *s, const struct scope *g, unsigned int i)
{
	memcpy((char *)&s->v + keys[i].off, (const char *)&g->v + keys[i].off, keys[i].size);
	s->org[i] = g->org[i];
	s->set[i] = false;
}

static struct scope *
scope_lcore(struct rdp_cfg *cfg, unsigned int lcore_id, unsigned int line)
{
	struct scope *s = cfg->lcore[lcore_id];
	unsigned int i;

	if (s != NULL)
		return s;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	for (i = 0; i < NB_KEYS; i++)
		scope_inherit(s, &cfg->global, i);
	s->v.lcore_id = (int)lcore_id;
	s->v.from_section = true;
	s->line = line;
	cfg->lcore[lcore_id] = s;
	return s;
}

/*
 * Defaults that follow other keys. rndv_threshold: with srq = on a leased
 * receiver is sure of its floor only, so a chunked message has at most
 * srq_floor chunks (srq_check()); left at its default, the threshold is
 * then srq_floor*buf_size when that is smaller. Each section from its own
 * values; a value set anywhere stays as set.
 */
static const char *
derived_note(const struct key *k, const struct rdp_cfg_lcore *v)
{
	if (strcmp(k->name, "rndv_threshold") == 0 && v->srq == RDP_CFG_ON && v->read_depth > 0 &&
	    (uint64_t)v->srq_floor * v->buf_size < strtoull(k->def, NULL, 10))
		return "srq_floor*buf_size with srq = on";
	return NULL;
}

static void
scope_derive(struct scope *s)
{
	const struct key *k = key_find("rndv_threshold");
	struct rdp_cfg_lcore *v = &s->v;

	if (s->org[key_index(k)].kind != ORIGIN_DEFAULT)
		return;
	v->rndv_threshold = derived_note(k, v) != NULL ? v->srq_floor * v->buf_size :
							 (uint32_t)strtoul(k->def, NULL, 10);
}

/* Set key @p k of scope @p s from text; a global value reaches lcores that do not set it. */
static int
scope_set(struct rdp_cfg *cfg, struct scope *s, const struct key *k, const char *value,
	  size_t raw_len, const struct origin *o)
{
	unsigned int i = key_index(k), l;
	struct rdp_cfg_lcore scratch = s->v;
	char where[PATH_MAX + 16], why[256];

	if (value_parse(k, value, raw_len, &scratch, why, sizeof(why)) < 0) {
		origin_text(cfg, o, where, sizeof(where));
		return key_error(where, s->v.lcore_id, k->name, k, value, "%s", why);
	}
	memcpy((char *)&s->v + k->off, (char *)&scratch + k->off, k->size);
	s->set[i] = true;
	s->org[i] = *o;
	scope_derive(s);
	if (s == &cfg->global)
		for (l = 0; l < RTE_MAX_LCORE; l++)
			if (cfg->lcore[l] != NULL) {
				if (!cfg->lcore[l]->set[i])
					scope_inherit(cfg->lcore[l], s, i);
				scope_derive(cfg->lcore[l]);
			}
	return 0;
}

static struct rdp_cfg *
cfg_new(const char *path)
{
	static const struct origin def = { .kind = ORIGIN_DEFAULT };
	struct rdp_cfg *cfg = calloc(1, sizeof(*cfg));
	unsigned int i;

	if (cfg == NULL || (path != NULL && (cfg->path = strdup(path)) == NULL)) {
		free(cfg);
		rdp_err_set(ENOMEM, "%s: out of memory", path != NULL ? path : "configuration");
		return NULL;
	}
	cfg->global.v.lcore_id = RDP_CFG_GLOBAL;
	for (i = 0; i < NB_KEYS; i++) {
		if (scope_set(cfg, &cfg->global, &keys[i], keys[i].def, strlen(keys[i].def),
			      &def) < 0) {
			rdp_cfg_free(cfg);
			return NULL;
		}
		cfg->global.set[i] = false;
	}
	return cfg;
}

struct rdp_cfg *
rdp_cfg_default(void)
{
	return cfg_new(NULL);
}

void
rdp_cfg_free(struct rdp_cfg *cfg)
{
	unsigned int l;

	if (cfg == NULL)
		return;
	for (l = 0; l < RTE_MAX_LCORE; l++)
		free(cfg->lcore[l]);
	free(cfg->path);
	free(cfg);
}

/* ---------------------------------------------------------------------- */
/* Relations                                                              */
/* ---------------------------------------------------------------------- */

/*
 * Which value to blame for a broken relation: the first key named by the
 * rule that this scope sets itself, else any key of the relation it sets,
 * else the first named key set anywhere (so inherited from [global]).
 */
static const struct key *
blame_pick(const struct scope *s, const struct key *const named[], unsigned int n_named,
	   const struct key *const involved[], unsigned int n_inv)
{
	unsigned int i;

	for (i = 0; i < n_named; i++)
		if (s->set[key_index(named[i])])
			return named[i];
	for (i = 0; i < n_inv; i++)
		if (s->set[key_index(involved[i])])
			return involved[i];
	for (i = 0; i < n_named; i++)
		if (s->org[key_index(named[i])].kind != ORIGIN_DEFAULT)
			return named[i];
	for (i = 0; i < n_inv; i++)
		if (s->org[key_index(involved[i])].kind != ORIGIN_DEFAULT)
			return involved[i];
	return n_named > 0 ? named[0] : involved[0];
}

/* The keys named in "k1=v1, k2=v2", the part of a relation text before @p end. */
static unsigned int
named_keys(const char *text, const char *end, const struct key *named[NB_KEYS])
{
	const char *p = text, *eq, *comma;
	char name[CFG_NAME_LEN];
	unsigned int n = 0;

	while (n < NB_KEYS) {
		eq = memchr(p, '=', (size_t)(end - p));
		if (eq == NULL || (size_t)(eq - p) >= sizeof(name))
			break;
		snprintf(name, sizeof(name), "%.*s", (int)(eq - p), p);
		named[n] = key_find(name);
		if (named[n] != NULL)
			n++;
		comma = memchr(eq, ',', (size_t)(end - eq));
		if (comma == NULL)
			break;
		p = comma + 1;
		while (p < end && *p == ' ')
			p++;
	}
	return n;
}

/*
 * Report relation @p text, shaped "k1=v1, k2=v2: RULE" like the messages of
 * rdp_credit_params_check(), on the value blame_pick() chooses:
 * "WHERE: [SECTION] KEY = VALUE: RULE (other values)".
 */
static int
relation_error(const struct rdp_cfg *cfg, const struct scope *s, const char *text,
	       const struct key *const involved[], unsigned int n_inv)
{
	const struct key *named[NB_KEYS], *k;
	const char *sep = strstr(text, ": "), *rule_text = text;
	char where[PATH_MAX + 16], value[RDP_CFG_VALUE_MAX + 1], sec[32], shown[ECHO_MAX + 8];
	char others[256] = "", inherited[64] = "";
	unsigned int n_named = 0, i;
	size_t off = 0;
	int owner;

	if (sep != NULL) {
		rule_text = sep + 2;
		n_named = named_keys(text, sep, named);
	}
	k = blame_pick(s, named, n_named, involved, n_inv);
	for (i = 0; i < n_named; i++) {
		if (named[i] == k)
			continue;
		value_format(named[i], &s->v, value, sizeof(value));
		off += snprintf(others + off, sizeof(others) - off, "%s%s=%s",
				off > 0 ? ", " : " (", named[i]->name, value);
		if (off >= sizeof(others))
			off = sizeof(others) - 1;
	}
	if (off > 0 && off < sizeof(others) - 1)
		snprintf(others + off, sizeof(others) - off, ")");

	owner = s->set[key_index(k)] ? s->v.lcore_id : RDP_CFG_GLOBAL;
	if (owner != s->v.lcore_id)
		snprintf(inherited, sizeof(inherited), " (as inherited by [lcore.%d])",
			 s->v.lcore_id);
	origin_text(cfg, &s->org[key_index(k)], where, sizeof(where));
	section_name(owner, sec, sizeof(sec));
	value_format(k, &s->v, value, sizeof(value));
	echo_value(k, value, shown, sizeof(shown));
	return rdp_err_set(EINVAL, "%s: [%s] %s = %s%s: %s%s", where, sec, k->name, shown,
			   inherited, rule_text, others);
}

/* srq = on: the pool's parameters and the chunk rule of a leased receiver. */
static int
srq_check(const struct rdp_cfg *cfg, const struct scope *s)
{
	const struct key *lease_keys[] = { key_find("srq_size"), key_find("srq_floor"),
					   key_find("srq_lease_max") };
	const struct key *chunk_keys[] = { key_find("rndv_threshold"), key_find("srq_floor"),
					   key_find("buf_size"), key_find("srq") };
	const struct key *nordv_keys[] = { key_find("max_msg_size"), key_find("srq_floor"),
					   key_find("buf_size"), key_find("read_depth"),
					   key_find("srq") };
	const struct rdp_cfg_lcore *v = &s->v;
	uint64_t whole = (uint64_t)v->srq_floor * v->buf_size;
	char why[384];

	if (v->srq_lease_max < v->srq_floor || v->srq_size < v->srq_floor) {
		snprintf(why, sizeof(why), "srq_size=%u, srq_floor=%u, srq_lease_max=%u: an "
			 "endpoint's floor must fit in the SRQ and under its lease_max",
			 v->srq_size, v->srq_floor, v->srq_lease_max);
		return relation_error(cfg, s, why, lease_keys, RTE_DIM(lease_keys));
	}
	/*
	 * A leased receiver holds every chunk of a message until its last one
	 * arrives and is sure of its floor only: a chunked message has at most
	 * srq_floor chunks, longer ones go by rendezvous.
	 */
	if (v->read_depth > 0 && v->rndv_threshold > whole) {
		snprintf(why, sizeof(why), "rndv_threshold=%u, srq_floor=%u, buf_size=%u, srq=on: "
			 "with srq = on a chunked message has at most srq_floor chunks, so "
			 "rndv_threshold must be at most srq_floor*buf_size = %" PRIu64,
			 v->rndv_threshold, v->srq_floor, v->buf_size, whole);
		return relation_error(cfg, s, why, chunk_keys, RTE_DIM(chunk_keys));
	}
	if (v->read_depth == 0 && v->max_msg_size > whole) {
		snprintf(why, sizeof(why), "max_msg_size=%u, srq_floor=%u, buf_size=%u, "
			 "read_depth=0, srq=on: with srq = on and no rendezvous a message has at most "
			 "srq_floor chunks, so max_msg_size must be at most %" PRIu64,
			 v->max_msg_size, v->srq_floor, v->buf_size, whole);
		return relation_error(cfg, s, why, nordv_keys, RTE_DIM(nordv_keys));
	}
	return 0;
}

static int
scope_check(const struct rdp_cfg *cfg, const struct scope *s)
{
	const struct key *credit_keys[NB_KEYS];
	unsigned int n_credit = 0;
	const struct key *cq_keys[] = { key_find("cq_size"), key_find("sq_size"),
					key_find("rq_size") };
	const struct key *cq_srq_keys[] = { key_find("cq_size"), key_find("sq_size"),
					    key_find("srq_size"), key_find("srq") };
	const struct key *mode_keys[] = { key_find("app_lcore"), key_find("mode") };
	const struct key *msg_keys[] = { key_find("max_msg_size"), key_find("buf_size"),
					 key_find("rq_size"), key_find("ack_reserve"),
					 key_find("ack_threshold") };
	const struct key *rndv_keys[] = { key_find("max_msg_size"), key_find("rndv_threshold"),
					  key_find("rndv_pool_size") };
	const struct key *pool_keys[] = { key_find("rndv_pool_size") };
	const struct rdp_cfg_lcore *v = &s->v;
	uint32_t chunked;
	uint64_t chunks;
	struct rdp_credit_params p;
	char why[384];
	unsigned int i;
	int ret;

	for (i = 0; i < NB_KEYS; i++)
			if (keys[i].flags & F_CREDIT)
			credit_keys[n_credit++] = &keys[i];
	rdp_cfg_credit_params(v, &p);
	if (rdp_credit_params_check(&p, why, sizeof(why)) < 0)
		return relation_error(cfg, s, why, credit_keys, n_credit);
	if (v->srq == RDP_CFG_ON && v->cq_size != 0 &&
	    (uint64_t)v->cq_size < (uint64_t)v->sq_size + 1 + v->srq_size) {
		/* with an SRQ a QP has no receive queue; the SRQ's receives share the CQ */
		snprintf(why, sizeof(why), "cq_size=%u, sq_size=%u, srq_size=%u, srq=on: must be 0 "
			 "(automatic) or >= sq_size+1+srq_size = %" PRIu64 " (the SRQ's receives "
			 "complete on the lcore's CQ)", v->cq_size, v->sq_size, v->srq_size,
			 (uint64_t)v->sq_size + 1 + v->srq_size);
		return relation_error(cfg, s, why, cq_srq_keys, RTE_DIM(cq_srq_keys));
	}
	if (v->srq != RDP_CFG_ON && v->cq_size != 0 && v->cq_size < rdp_credit_cq_budget(&p)) {
		snprintf(why, sizeof(why), "cq_size=%u, sq_size=%u, rq_size=%u: must be 0 "
			 "(automatic) or >= sq_size+rq_size = %u", v->cq_size, v->sq_size,
			 v->rq_size, rdp_credit_cq_budget(&p));
		return relation_error(cfg, s, why, cq_keys, RTE_DIM(cq_keys));
	}
	if (v->rndv_pool_size != 0 && v->rndv_pool_size < RNDV_POOL_MIN) {
		snprintf(why, sizeof(why), "rndv_pool_size=%u: must be 0 (automatic, sized from "
			 "max_msg_size and the device) or at least %u (one arena page)",
			 v->rndv_pool_size, RNDV_POOL_MIN);
		return relation_error(cfg, s, why, pool_keys, RTE_DIM(pool_keys));
	}
	if (v->read_depth > 0 && v->max_msg_size > v->rndv_threshold && v->rndv_pool_size != 0 &&
	    v->rndv_pool_size < v->max_msg_size) {
		snprintf(why, sizeof(why), "max_msg_size=%u, rndv_threshold=%u, rndv_pool_size=%u: "
			 "a message of max_msg_size goes by rendezvous into a buffer of the "
			 "rendezvous pool, which must hold at least one", v->max_msg_size,
			 v->rndv_threshold, v->rndv_pool_size);
		return relation_error(cfg, s, why, rndv_keys, RTE_DIM(rndv_keys));
	}
	/* messages up to the threshold go in chunks (all of them without READs) */
	chunked = v->read_depth > 0 ? RTE_MIN(v->max_msg_size, v->rndv_threshold) :
		v->max_msg_size;
	chunks = ((uint64_t)chunked + v->buf_size - 1) / v->buf_size;
	if (chunks > (uint64_t)p.rq_size - p.ack_reserve - p.ack_threshold + 1) {
		/*
		 * The receiver holds every chunk until the last; holding k of
		 * them it can still return C - k credits, and acks from T_ack on.
		 */
		snprintf(why, sizeof(why), "max_msg_size=%u, buf_size=%u, rq_size=%u, "
			 "ack_reserve=%u, ack_threshold=%u: a chunked message of %u bytes "
			 "(up to rndv_threshold when read_depth > 0) needs %"
			 PRIu64 " chunks of buf_size, more than the %u a receiver can hold and "
			 "still ack (rq_size-ack_reserve-ack_threshold+1)", v->max_msg_size,
			 v->buf_size, v->rq_size, v->ack_reserve, v->ack_threshold, chunked, chunks,
			 p.rq_size - p.ack_reserve - p.ack_threshold + 1);
		return relation_error(cfg, s, why, msg_keys, RTE_DIM(msg_keys));
	}
	if (v->srq == RDP_CFG_ON) {
		ret = srq_check(cfg, s);
		if (ret < 0)
			return ret;
	}
	if (v->mode == RDP_CFG_MODE_PIPELINE && v->lcore_id >= 0 && v->app_lcore == v->lcore_id) {
		snprintf(why, sizeof(why), "app_lcore=%d, mode=pipeline: must name another "
			 "lcore than the poller itself", v->app_lcore);
		return relation_error(cfg, s, why, mode_keys, RTE_DIM(mode_keys));
	}
	return 0;
}

int
rdp_cfg_validate(const struct rdp_cfg *cfg)
{
	unsigned int l;
	int ret;

	if (cfg == NULL)
		return rdp_err_set(EINVAL, "rdp_cfg_validate: no configuration");
	ret = scope_check(cfg, &cfg->global);
	for (l = 0; ret == 0 && l < RTE_MAX_LCORE; l++)
		if (cfg->lcore[l] != NULL)
			ret = scope_check(cfg, cfg->lcore[l]);
	return ret;
}

/* ---------------------------------------------------------------------- */
/* Pass 1: the line scan                                                  */
/* ---------------------------------------------------------------------- */

struct scan_section {
	char name[CFG_NAME_LEN];
	unsigned int line;
	unsigned int first;   /* index of its first entry */
	unsigned int count;
};

struct scan_entry {
	char key[CFG_NAME_LEN];
	unsigned int line;
	size_t value_len;     /* before rte_cfgfile cuts it */
};

struct scan {
	struct scan_section *sec;
	struct scan_entry *ent;
	unsigned int nb_sec, nb_ent, cap_sec, cap_ent;
};

static void
scan_free(struct scan *sc)
{
	free(sc->sec);
	free(sc->ent);
}

static bool
grow(void **arr, unsigned int *cap, unsigned int need, size_t elem)
{
	void *n;

	if (need <= *cap)
		return true;
	n = realloc(*arr, (size_t)(*cap * 2 + 16) * elem);
	if (n == NULL)
		return false;
	*arr = n;
	*cap = *cap * 2 + 16;
	return true;
}

/* Drop surrounding white space, as rte_cfgfile does. */
static char *
strip(char *s, size_t *len)
{
	while (*len > 0 && isspace((unsigned char)s[*len - 1]))
		s[--*len] = '\0';
	while (*len > 0 && isspace((unsigned char)*s)) {
		s++;
		--*len;
	}
	return s;
}

static int
scan_line(const char *path, unsigned int lineno, char *line, size_t len, struct scan *sc)
{
	char *hash = memchr(line, COMMENT_CHAR, len), *s, *eq, *key;
	size_t key_len;

	if (memchr(line, '\0', len) != NULL)
		return rdp_err_set(EINVAL, "%s:%u: NUL byte in line (not a text file?)",
				   path, lineno);
	if (len > LINE_MAX_CHARS)
		return rdp_err_set(EINVAL, "%s:%u: line longer than %d characters",
				   path, lineno, LINE_MAX_CHARS);
	if (hash != NULL) {
		*hash = '\0';
		len = (size_t)(hash - line);
	}
	if (memchr(line, '\\', len) != NULL)
		return rdp_err_set(EINVAL, "%s:%u: '\\' is not allowed (there are no escapes; "
				   "'#' always starts a comment)", path, lineno);
	s = strip(line, &len);
	if (len == 0)
		return 0;
	if (s[0] == '[') {
		char *close = memchr(s, ']', len);
		struct scan_section *ss;
		size_t name_len;

		if (close == NULL)
			return rdp_err_set(EINVAL, "%s:%u: section header without ']': '%.*s'",
					   path, lineno, ECHO_MAX, s);
		if (close[1] != '\0')
			return rdp_err_set(EINVAL, "%s:%u: text after ']' in section header: "
					   "'%.*s'", path, lineno, ECHO_MAX, s);
		*close = '\0';
		name_len = (size_t)(close - s - 1);
		s = strip(s + 1, &name_len);
		if (name_len == 0)
			return rdp_err_set(EINVAL, "%s:%u: empty section name", path, lineno);
		if (name_len > RDP_CFG_NAME_MAX)
			return rdp_err_set(EINVAL, "%s:%u: section name longer than %d characters",
					   path, lineno, RDP_CFG_NAME_MAX);
		if (!grow((void **)&sc->sec, &sc->cap_sec, sc->nb_sec + 1, sizeof(*sc->sec)))
			return rdp_err_set(ENOMEM, "%s: out of memory", path);
		ss = &sc->sec[sc->nb_sec++];
		snprintf(ss->name, sizeof(ss->name), "%s", s);
		ss->line = lineno;
		ss->first = sc->nb_ent;
		ss->count = 0;
		return 0;
	}
	eq = memchr(s, '=', len);
	if (eq == NULL)
		return rdp_err_set(EINVAL, "%s:%u: expected 'key = value', '[section]' or a "
				   "'#' comment, got '%.*s'", path, lineno, ECHO_MAX, s);
	*eq = '\0';
	key_len = (size_t)(eq - s);
	key = strip(s, &key_len);
	if (key_len == 0)
		return rdp_err_set(EINVAL, "%s:%u: missing key before '='", path, lineno);
	if (key_len > RDP_CFG_NAME_MAX)
		return rdp_err_set(EINVAL, "%s:%u: key name longer than %d characters",
				   path, lineno, RDP_CFG_NAME_MAX);
	if (sc->nb_sec == 0)
		return rdp_err_set(EINVAL, "%s:%u: key '%s' comes before any section "
				   "(put it under [global] or [lcore.N])", path, lineno, key);
	if (!grow((void **)&sc->ent, &sc->cap_ent, sc->nb_ent + 1, sizeof(*sc->ent)))
		return rdp_err_set(ENOMEM, "%s: out of memory", path);
	snprintf(sc->ent[sc->nb_ent].key, CFG_NAME_LEN, "%s", key);
	sc->ent[sc->nb_ent].line = lineno;
	len -= (size_t)(eq + 1 - s);
	strip(eq + 1, &len);
	sc->ent[sc->nb_ent].value_len = len;
	sc->nb_ent++;
	sc->sec[sc->nb_sec - 1].count++;
	return 0;
}

static int
scan_file(const char *path, struct scan *sc)
{
	unsigned int lineno = 0;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int ret = 0;
	FILE *f;

	f = fopen(path, "r");
	if (f == NULL)
		return rdp_err_set(errno, "%s: cannot open: %s", path, strerror(errno));
	while (ret == 0 && (n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (n > 0 && line[n - 1] == '\n')
			line[--n] = '\0';
		ret = scan_line(path, lineno, line, (size_t)n, sc);
	}
	if (ret == 0 && ferror(f))
		ret = rdp_err_set(errno, "%s: cannot read: %s", path, strerror(errno));
	free(line);
	fclose(f);
	return ret;
}

/* ---------------------------------------------------------------------- */
/* Passes 2 and 3: rte_cfgfile, then names and values                     */
/* ---------------------------------------------------------------------- */

/* "[lcore.N]" -> N, or -1 with the rule broken in @p why. */
static int
lcore_id_parse(const char *name, char *why, size_t len)
{
	const char *digits = name + strlen("lcore.");
	int64_t id;

	if (digits[0] == '0' && digits[1] != '\0') {
		rdp_why(why, len, EINVAL, "write the lcore id without leading zeros");
		return -1;
	}
	if (digits[0] == '-' || parse_int(digits, &id) < 0 || id >= RTE_MAX_LCORE) {
		rdp_why(why, len, EINVAL, "lcore id must be an integer in [0, %d] (RTE_MAX_LCORE is %d)",
		     RTE_MAX_LCORE - 1, RTE_MAX_LCORE);
		return -1;
	}
	return (int)id;
}

static void
section_suggest(const char *name, char *buf, size_t len)
{
	size_t n = strlen(name), d = n;
	char prefix[CFG_NAME_LEN];

	/* "lcore1", "core.1", "LCORE.1": a word near "lcore" and a number */
	while (d > 0 && isdigit((unsigned char)name[d - 1]))
		d--;
	snprintf(prefix, sizeof(prefix), "%.*s", (int)d, name);
	while (d > 0 && !isalpha((unsigned char)prefix[d - 1]))
		prefix[--d] = '\0';
	if (name[n - 1] >= '0' && name[n - 1] <= '9' && distance(prefix, "lcore") <= 2)
		snprintf(buf, len, "did you mean [lcore.%s]?", name + strlen(prefix) +
			 strspn(name + strlen(prefix), ".-_ "));
	else if (distance(name, "global") <= 2)
		snprintf(buf, len, "did you mean [global]?");
	else
		snprintf(buf, len, "sections are [global] and [lcore.N]");
}

static struct scope *
section_scope(struct rdp_cfg *cfg, const struct scan_section *ss)
{
	struct scope *s;
	char why[128];
	int id;

	if (strcmp(ss->name, "global") == 0) {
		if (cfg->global.line != 0) {
			rdp_err_set(EINVAL, "%s:%u: [global]: duplicate section (first at line %u)",
				    cfg->path, ss->line, cfg->global.line);
			return NULL;
		}
		cfg->global.line = ss->line;
		return &cfg->global;
	}
	if (strncmp(ss->name, "lcore.", strlen("lcore.")) != 0) {
		section_suggest(ss->name, why, sizeof(why));
		rdp_err_set(EINVAL, "%s:%u: [%s]: unknown section (%s)", cfg->path, ss->line,
			    ss->name, why);
		return NULL;
	}
	id = lcore_id_parse(ss->name, why, sizeof(why));
	if (id < 0) {
		rdp_err_set(EINVAL, "%s:%u: [%s]: %s", cfg->path, ss->line, ss->name, why);
		return NULL;
	}
	if (cfg->lcore[id] != NULL) {
		rdp_err_set(EINVAL, "%s:%u: [%s]: duplicate section (first at line %u)",
			    cfg->path, ss->line, ss->name, cfg->lcore[id]->line);
		return NULL;
	}
	s = scope_lcore(cfg, (unsigned int)id, ss->line);
	if (s == NULL)
		rdp_err_set(ENOMEM, "%s: out of memory", cfg->path);
	return s;
}

static int
entry_apply(struct rdp_cfg *cfg, struct scope *s, const struct scan *sc,
	    const struct scan_section *ss, unsigned int j, const char *value)
{
	const struct scan_entry *e = &sc->ent[ss->first + j];
	struct origin o = { .kind = ORIGIN_FILE, .line = e->line };
	const struct key *k = key_find(e->key);
	char where[PATH_MAX + 16];
	unsigned int i;

	snprintf(where, sizeof(where), "%s:%u", cfg->path, e->line);
	if (k == NULL)
		return unknown_key(where, s->v.lcore_id, e->key, value);
	for (i = ss->first; i < ss->first + j; i++)
		if (strcmp(sc->ent[i].key, e->key) == 0)
			return key_error(where, s->v.lcore_id, e->key, k, value,
					 "duplicate key (first at line %u)", sc->ent[i].line);
	if ((k->flags & F_GLOBAL) && s != &cfg->global)
		return key_error(where, s->v.lcore_id, e->key, k, value,
				 "only allowed in [global]");
	return scope_set(cfg, s, k, value, e->value_len, &o);
}

/* rte_cfgfile read something else than the scan: the file was replaced meanwhile. */
static int
file_changed(const struct rdp_cfg *cfg)
{
	return rdp_err_set(EIO, "%s: the file changed while it was read", cfg->path);
}

static int
file_apply(struct rdp_cfg *cfg, struct rte_cfgfile *cf, const struct scan *sc)
{
	struct rte_cfgfile_entry *ents = NULL;
	unsigned int i, j, most = 0;
	int ret = 0;

	if (rte_cfgfile_num_sections(cf, NULL, 0) != (int)sc->nb_sec)
		return file_changed(cfg);
	for (i = 0; i < sc->nb_sec; i++)
		most = RTE_MAX(most, sc->sec[i].count);
	if (most > 0 && (ents = calloc(most, sizeof(*ents))) == NULL)
		return rdp_err_set(ENOMEM, "%s: out of memory", cfg->path);
	for (i = 0; ret == 0 && i < sc->nb_sec; i++) {
		const struct scan_section *ss = &sc->sec[i];
		char name[CFG_NAME_LEN];
		struct scope *s;

		if (rte_cfgfile_section_entries_by_index(cf, (int)i, name, ents, (int)most) !=
		    (int)ss->count || strcmp(name, ss->name) != 0) {
			ret = file_changed(cfg);
			break;
		}
		s = section_scope(cfg, ss);
		if (s == NULL) {
			ret = -rte_errno;
			break;
		}
		for (j = 0; ret == 0 && j < ss->count; j++) {
			if (strcmp(ents[j].name, sc->ent[ss->first + j].key) != 0)
				ret = file_changed(cfg);
			else
				ret = entry_apply(cfg, s, sc, ss, j, ents[j].value);
		}
	}
	free(ents);
	return ret;
}

struct rdp_cfg *
rdp_cfg_load(const char *path)
{
	static const struct rte_cfgfile_parameters params = {
		.comment_character = COMMENT_CHAR,
	};
	struct scan sc = { 0 };
	struct rte_cfgfile *cf = NULL;
	struct rdp_cfg *cfg;
	int ret;

	if (path == NULL) {
		rdp_err_set(EINVAL, "rdp_cfg_load: no file name");
		return NULL;
	}
	cfg = cfg_new(path);
	if (cfg == NULL)
		return NULL;
	ret = scan_file(path, &sc);
	if (ret == 0) {
		cf = rte_cfgfile_load_with_params(path, CFG_FLAG_EMPTY_VALUES, &params);
		if (cf == NULL)
			ret = rdp_err_set(EIO, "%s: rte_cfgfile cannot read the file after the "
					  "scan did (did it change, or memory run out?)", path);
		else
			ret = file_apply(cfg, cf, &sc);
	}
	if (ret == 0)
		ret = rdp_cfg_validate(cfg);
	if (cf != NULL)
		rte_cfgfile_close(cf);
	scan_free(&sc);
	if (ret < 0) {
		rdp_cfg_free(cfg);
		rte_errno = -ret;
		return NULL;
	}
	CFG_LOG(DEBUG, "%s: [global] and %u lcore sections", path, rdp_cfg_lcores(cfg, NULL, 0));
	return cfg;
}

/* ---------------------------------------------------------------------- */
/* Overrides, lookups, dump                                               */
/* ---------------------------------------------------------------------- */

int
rdp_cfg_set(struct rdp_cfg *cfg, int lcore_id, const char *key, const char *value,
	    const char *origin)
{
	struct origin o = { .kind = ORIGIN_OVERRIDE };
	char buf[RDP_CFG_VALUE_MAX + 2], shown[ECHO_MAX + 8], sec[32];
	const struct key *k;
	struct scope *s;
	size_t len;
	char *v;
	int ret;

	if (cfg == NULL || key == NULL || value == NULL)
		return rdp_err_set(EINVAL, "rdp_cfg_set: NULL argument");
	snprintf(o.what, sizeof(o.what), "%s", origin != NULL ? origin : "override");
	if (lcore_id != RDP_CFG_GLOBAL && (lcore_id < 0 || lcore_id >= RTE_MAX_LCORE))
		return rdp_err_set(EINVAL, "%s: [lcore.%d]: lcore id must be an integer in "
				   "[0, %d] (RTE_MAX_LCORE is %d)", o.what, lcore_id,
				   RTE_MAX_LCORE - 1, RTE_MAX_LCORE);
	/* the same text a file would give: stripped, and cut where rte_cfgfile cuts */
	len = strlen(value);
	while (len > 0 && isspace((unsigned char)*value)) {
		value++;
		len--;
	}
	while (len > 0 && isspace((unsigned char)value[len - 1]))
		len--;
	snprintf(buf, sizeof(buf), "%.*s", (int)RTE_MIN(len, (size_t)RDP_CFG_VALUE_MAX), value);
	v = buf;
	k = key_find(key);
	if (k == NULL)
		return unknown_key(o.what, lcore_id, key, v);
	if ((k->flags & F_GLOBAL) && lcore_id != RDP_CFG_GLOBAL)
		return key_error(o.what, lcore_id, key, k, v, "only allowed in [global]");
	if (lcore_id == RDP_CFG_GLOBAL) {
		s = &cfg->global;
	} else {
		/* check first, so that a bad value does not create a section */
		struct rdp_cfg_lcore scratch = cfg->global.v;
		char why[256];

		if (value_parse(k, v, len, &scratch, why, sizeof(why)) < 0)
			return key_error(o.what, lcore_id, key, k, v, "%s", why);
		s = scope_lcore(cfg, (unsigned int)lcore_id, 0);
		if (s == NULL)
			return rdp_err_set(ENOMEM, "%s: out of memory", o.what);
	}
	ret = scope_set(cfg, s, k, v, len, &o);
	if (ret == 0) {
		section_name(lcore_id, sec, sizeof(sec));
		echo_value(k, v, shown, sizeof(shown));
		CFG_LOG(DEBUG, "%s: [%s] %s = %s", o.what, sec, key, shown);
	}
	return ret;
}

const struct rdp_cfg_lcore *
rdp_cfg_lcore(const struct rdp_cfg *cfg, int lcore_id)
{
	if (cfg == NULL || lcore_id < RDP_CFG_GLOBAL || lcore_id >= RTE_MAX_LCORE) {
		rte_errno = EINVAL;
		return NULL;
	}
	if (lcore_id != RDP_CFG_GLOBAL && cfg->lcore[lcore_id] != NULL)
		return &cfg->lcore[lcore_id]->v;
	return &cfg->global.v;
}

unsigned int
rdp_cfg_lcores(const struct rdp_cfg *cfg, unsigned int *ids, unsigned int max)
{
	unsigned int l, n = 0;

	if (cfg == NULL)
		return 0;
	for (l = 0; l < RTE_MAX_LCORE; l++) {
		if (cfg->lcore[l] == NULL)
			continue;
		if (n < max)
			ids[n] = l;
		n++;
	}
	return n;
}

static void
scope_dump(const struct rdp_cfg *cfg, const struct scope *s, FILE *out)
{
	char sec[32], value[RDP_CFG_VALUE_MAX + 1], where[PATH_MAX + 16];
	unsigned int i;

	section_name(s->v.lcore_id, sec, sizeof(sec));
	fprintf(out, "[%s]\n", sec);
	for (i = 0; i < NB_KEYS; i++) {
		const struct key *k = &keys[i];
		const char *from = "";

		if ((k->flags & F_GLOBAL) && s != &cfg->global)
			continue;
		if (s != &cfg->global && !s->set[i] && s->org[i].kind != ORIGIN_DEFAULT)
			from = "[global] ";
		origin_text(cfg, &s->org[i], where, sizeof(where));
		if (s->org[i].kind == ORIGIN_DEFAULT && derived_note(k, &s->v) != NULL)
			snprintf(where, sizeof(where), "default (%s)", derived_note(k, &s->v));
		value_format(k, &s->v, value, sizeof(value));
		if ((k->flags & F_SECRET) && value[0] != '\0')
			fprintf(out, "# %s is set (%zu characters, not shown)  # %s%s\n",
				k->name, strlen(value), from, where);
		else
			fprintf(out, "%-20s = %-22s # %s%s\n", k->name, value, from, where);
	}
}

int
rdp_cfg_dump(const struct rdp_cfg *cfg, FILE *out)
{
	unsigned int l;

	if (cfg == NULL || out == NULL)
		return rdp_err_set(EINVAL, "rdp_cfg_dump: NULL argument");
	if (cfg->path != NULL)
		fprintf(out, "# resolved configuration of %s\n", cfg->path);
	else
		fprintf(out, "# resolved configuration (no file)\n");
	scope_dump(cfg, &cfg->global, out);
	for (l = 0; l < RTE_MAX_LCORE; l++) {
		if (cfg->lcore[l] == NULL)
			continue;
		fprintf(out, "\n");
		scope_dump(cfg, cfg->lcore[l], out);
	}
	if (fflush(out) != 0 || ferror(out))
		return rdp_err_set(EIO, "rdp_cfg_dump: write error: %s", strerror(errno));
	return 0;
}

int
rdp_cfg_hostport(const char *spec, char *host, size_t len, uint16_t *port)
{
	return rdp_hostport_parse(spec, 0, host, len, port);
}

int
rdp_cfg_key_error(const struct rdp_cfg *cfg, int lcore_id, const char *key, int err,
		  const char *fmt, ...)
{
	const struct scope *s;
	const struct key *k = key_find(key);
	char where[PATH_MAX + 16], value[RDP_CFG_VALUE_MAX + 1], sec[32], shown[ECHO_MAX + 8];
	char rule[RDP_ERR_MSG_MAX], inherited[64] = "";
	va_list ap;
	int owner;

	va_start(ap, fmt);
	vsnprintf(rule, sizeof(rule), fmt, ap);
	va_end(ap);
	if (cfg == NULL || k == NULL || lcore_id < RDP_CFG_GLOBAL || lcore_id >= RTE_MAX_LCORE)
		return rdp_err_set(err, "%s: %s", key, rule);
	s = lcore_id != RDP_CFG_GLOBAL && cfg->lcore[lcore_id] != NULL ? cfg->lcore[lcore_id] :
		&cfg->global;
	owner = s != &cfg->global && s->set[key_index(k)] ? lcore_id : RDP_CFG_GLOBAL;
	if (s != &cfg->global && owner != lcore_id)
		snprintf(inherited, sizeof(inherited), " (as inherited by [lcore.%d])", lcore_id);
	origin_text(cfg, &s->org[key_index(k)], where, sizeof(where));
	section_name(owner, sec, sizeof(sec));
	value_format(k, &s->v, value, sizeof(value));
	echo_value(k, value, shown, sizeof(shown));
	return rdp_err_set(err, "%s: [%s] %s = %s%s: %s", where, sec, k->name, shown, inherited,
			   rule);
}


/* The first device key section @p c sets (or inherits), or NULL. */
static const char *
section_device_key(const struct rdp_cfg_lcore *c)
{
	return c->device[0] != '\0' ? "device" : c->port != 0 ? "port" :
		c->gid_index >= 0 ? "gid_index" : NULL;
}

/* Next name of a device list ("rxe0, rxe1"): its length, 0 at the end. */
static size_t
device_name_next(const char **p)
{
	const char *s = *p;
	size_t n;

	while (*s == ' ' || *s == '\t' || *s == ',')
		s++;
	for (n = 0; s[n] != '\0' && s[n] != ',' && s[n] != ' ' && s[n] != '\t'; n++)
		;
	*p = s;
	return n;
}

/*
 * The spec of device @p name (@p name_len bytes, 0: the section names none)
 * with section @p sec's port and gid_index: "" for driver = auto without
 * device keys (the caller probes).
 */
static int
section_spec(const struct rdp_cfg *cfg, int sec, const char *name, size_t name_len,
	     char *spec, size_t len)
{
	const struct rdp_cfg_lcore *g = rdp_cfg_lcore(cfg, RDP_CFG_GLOBAL);
	const struct rdp_cfg_lcore *c = rdp_cfg_lcore(cfg, sec);
	const char *key = section_device_key(c), *args;
	bool shm;
	size_t off;

	spec[0] = '\0';
	if (strcmp(g->driver, "auto") == 0) {
		if (key == NULL)
			return 0; /* the caller probes */
		snprintf(spec, len, "verbs"); /* a device key picks an RDMA device */
	} else {
		snprintf(spec, len, "%s", g->driver);
		if (key == NULL)
			return 0;
		shm = strncmp(spec, "shm", 3) == 0 && (spec[3] == '\0' || spec[3] == ':');
		if (shm && (c->port != 0 || c->gid_index >= 0))
			return rdp_cfg_key_error(cfg, sec, c->port != 0 ? "port" : "gid_index",
						 EINVAL, "a key of RDMA devices, but driver = %s has "
						 "none to choose (driver = auto or verbs; shm takes "
						 "device, a name for each device it makes)", g->driver);
		if (!shm && (strncmp(spec, "verbs", 5) != 0 || (spec[5] != '\0' && spec[5] != ':')))
			return rdp_cfg_key_error(cfg, sec, key, EINVAL, "a key of RDMA devices, but "
						 "driver = %s has none to choose (driver = auto or "
						 "verbs)", g->driver);
	}
	args = strchr(spec, ':');
	if (args != NULL && ((name_len > 0 && strstr(args, "device=") != NULL) ||
			     (c->port != 0 && strstr(args, "port=") != NULL) ||
			     (c->gid_index >= 0 && strstr(args, "gid_index=") != NULL)))
		return rdp_cfg_key_error(cfg, sec, key, EINVAL, "given twice: also in driver = %s",
					 g->driver);
	off = strlen(spec);
	if (name_len > 0 && off < len)
		off += snprintf(spec + off, len - off, "%cdevice=%.*s", args != NULL ? ',' : ':',
				(int)name_len, name);
	if (c->port != 0 && off < len)
		off += snprintf(spec + off, len - off, "%cport=%u",
				args != NULL || strchr(spec, ':') != NULL ? ',' : ':', c->port);
	if (c->gid_index >= 0 && off < len)
		off += snprintf(spec + off, len - off, "%cgid_index=%d",
				args != NULL || strchr(spec, ':') != NULL ? ',' : ':', c->gid_index);
	if (off >= len)
		return rdp_err_set(EINVAL, "driver spec too long for %s", g->driver);
	return 0;
}

/* Add the devices section @p sec names to @p devs; its default's index in @p first. */
static int
section_devices(const struct rdp_cfg *cfg, int sec, struct rdp_cfg_device *devs,
		unsigned int max, unsigned int *nb, unsigned int *first)
{
	const struct rdp_cfg_lcore *c = rdp_cfg_lcore(cfg, sec);
	const char *p = c->device;
	bool one = true;
	size_t n;

	*first = UINT_MAX;
	while ((n = device_name_next(&p)) > 0 || one) {
		char spec[RDP_CFG_SPEC_MAX];
		unsigned int i;
		int ret;

		one = false;
		ret = section_spec(cfg, sec, p, n, spec, sizeof(spec));
		if (ret < 0)
			return ret;
		for (i = 0; i < *nb && strcmp(devs[i].spec, spec) != 0; i++)
			;
		if (i == *nb) {
			if (*nb == max)
				return rdp_cfg_key_error(cfg, sec, section_device_key(c), EINVAL,
							 "more than %u devices in one process", max);
			snprintf(devs[i].spec, sizeof(devs[i].spec), "%s", spec);
			devs[i].section = sec;
			devs[i].key = section_device_key(c);
			(*nb)++;
		}
		if (*first == UINT_MAX)
			*first = i;
		p += n;
	}
	return 0;
}

const char *
rdp_cfg_device_key(const struct rdp_cfg *cfg)
{
	const struct rdp_cfg_lcore *g = rdp_cfg_lcore(cfg, RDP_CFG_GLOBAL);

	return g == NULL ? NULL : section_device_key(g);
}

int
rdp_cfg_devices(const struct rdp_cfg *cfg, struct rdp_cfg_device *devs, unsigned int max,
		uint8_t *lcore_dev)
{
	unsigned int nb = 0, first, i;
	int ret;

	if (cfg == NULL || devs == NULL || max == 0)
		return rdp_err_set(EINVAL, "rdp_cfg_devices: no configuration or no room");
	ret = section_devices(cfg, RDP_CFG_GLOBAL, devs, max, &nb, &first);
	if (ret < 0)
		return ret;
	if (lcore_dev != NULL)
		memset(lcore_dev, 0, RTE_MAX_LCORE);
	for (i = 0; i < RTE_MAX_LCORE; i++) {
		if (cfg->lcore[i] == NULL)
			continue;
		ret = section_devices(cfg, (int)i, devs, max, &nb, &first);
		if (ret < 0)
			return ret;
		if (lcore_dev != NULL)
			lcore_dev[i] = (uint8_t)first;
	}
	return (int)nb;
}

int
rdp_cfg_driver_spec(const struct rdp_cfg *cfg, char *spec, size_t len)
{
	const struct rdp_cfg_lcore *g = rdp_cfg_lcore(cfg, RDP_CFG_GLOBAL);
	const char *p;
	size_t n;

	if (g == NULL || spec == NULL || len == 0)
		return rdp_err_set(EINVAL, "rdp_cfg_driver_spec: no configuration or no room");
	p = g->device;
	n = device_name_next(&p);
	return section_spec(cfg, RDP_CFG_GLOBAL, p, n, spec, len);
}
