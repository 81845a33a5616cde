/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Configuration files: values, inheritance, overrides, and the exact message
 * of every way a file can be wrong. No EAL.
 *
 * Files are written into a fresh directory that the test enters, so that
 * messages name them as a user would type them ("bad.ini:3: ...").
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rdp_cfg.h"
#include "rdp_ep.h"
#include "rdp_test.h"

extern char **environ;

static char tmp_dir[256];

/* Enter a new empty directory; tmp_leave() checks it is empty again and removes it. */
static void
tmp_enter(void)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmp_dir, sizeof(tmp_dir), "%s/rdp-cfg-XXXXXX",
		 base != NULL && base[0] != '\0' ? base : "/tmp");
	RDP_ASSERT_MSG(mkdtemp(tmp_dir) != NULL, "mkdtemp(%s): %s", tmp_dir, strerror(errno));
	RDP_ASSERT(chdir(tmp_dir) == 0);
}

static void
tmp_leave(void)
{
	RDP_ASSERT(chdir("/") == 0);
	RDP_ASSERT_MSG(rmdir(tmp_dir) == 0, "rmdir(%s): %s", tmp_dir, strerror(errno));
}

static void
write_bytes(const char *name, const char *data, size_t len)
{
	FILE *f = fopen(name, "w");

	RDP_ASSERT_MSG(f != NULL, "fopen(%s): %s", name, strerror(errno));
	RDP_ASSERT(fwrite(data, 1, len, f) == len);
	RDP_ASSERT(fclose(f) == 0);
}

static void
write_text(const char *name, const char *text)
{
	write_bytes(name, text, strlen(text));
}

/* Load @p text as file @p name, then delete the file (keeping rte_errno). */
static struct rdp_cfg *
load_text(const char *name, const char *text)
{
	struct rdp_cfg *cfg;
	int err;

	write_text(name, text);
	cfg = rdp_cfg_load(name);
	err = rte_errno;
	RDP_ASSERT(unlink(name) == 0);
	rte_errno = err;
	return cfg;
}

/* The whole dump of @p cfg, into @p buf. */
static void
dump_text(const struct rdp_cfg *cfg, char *buf, size_t len)
{
	FILE *f = tmpfile();
	size_t n;

	RDP_ASSERT(f != NULL);
	RDP_ASSERT_EQ(rdp_cfg_dump(cfg, f), 0);
	rewind(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

static void
expect_rejected(int line, const char *text, const char *msg)
{
	struct rdp_cfg *cfg = load_text("bad.ini", text);

	if (cfg != NULL)
		rdp_test_fail(__FILE__, line, "loaded, but should fail with:\n  %s", msg);
	if (rte_errno != EINVAL)
		rdp_test_fail(__FILE__, line, "rte_errno %d, want EINVAL (%s)", rte_errno,
			      rdp_err_msg());
	if (strcmp(rdp_err_msg(), msg) != 0)
		rdp_test_fail(__FILE__, line, "message:\n  got:  %s\n  want: %s",
			      rdp_err_msg(), msg);
}

/* The file @p text is refused by rdp_cfg_load() with exactly @p msg and EINVAL. */
#define EXPECT_REJECTED(text, msg) expect_rejected(__LINE__, text, msg)

static const char *
env_path(const char *var)
{
	const char *v = getenv(var);

	RDP_ASSERT_MSG(v != NULL && v[0] != '\0',
		       "%s is not set: run the test through meson test", var);
	return v;
}

RDP_TEST(unit, cfg_defaults_are_the_documented_values)
{
	struct rdp_cfg *cfg = rdp_cfg_default();
	const struct rdp_cfg_lcore *g;

	RDP_ASSERT(cfg != NULL);
	g = rdp_cfg_lcore(cfg, RDP_CFG_GLOBAL);
	RDP_ASSERT(g != NULL);
	RDP_ASSERT_EQ(g->lcore_id, RDP_CFG_GLOBAL);
	RDP_ASSERT(!g->from_section);
	RDP_ASSERT_STR_EQ(g->driver, "auto");
	RDP_ASSERT_STR_EQ(g->device, "");
	RDP_ASSERT_EQ(g->port, 0);
	RDP_ASSERT_EQ(g->gid_index, -1);
	RDP_ASSERT_EQ(g->sq_size, 256);
	RDP_ASSERT_EQ(g->rq_size, 256);
	RDP_ASSERT_EQ(g->cq_size, 0);
	RDP_ASSERT_EQ(g->buf_size, 8192);
	RDP_ASSERT_EQ(g->max_msg_size, 1048576);
	RDP_ASSERT_EQ(g->rndv_threshold, 65536);
	RDP_ASSERT_EQ(g->rndv_pool_size, 0);
	RDP_ASSERT_EQ(g->signal_interval, 16);
	RDP_ASSERT_EQ(g->ack_threshold, 16);
	RDP_ASSERT_EQ(g->ack_reserve, 16);
	RDP_ASSERT_EQ(g->poll_burst, 32);
	RDP_ASSERT_EQ(g->ring_size, 1024);
	RDP_ASSERT_EQ(g->numa_node, -1);
	RDP_ASSERT_EQ(g->max_endpoints, 64);
	RDP_ASSERT_EQ(g->send_bufs, 4096);
	RDP_ASSERT_EQ(g->mode, RDP_CFG_MODE_RTC);
	RDP_ASSERT_EQ(g->app_lcore, -1);
	RDP_ASSERT_EQ(g->rnr_retry, 7);
	RDP_ASSERT_EQ(g->retry_cnt, 7);
	RDP_ASSERT_EQ(g->timeout, 14);
	RDP_ASSERT_EQ(g->min_rnr_timer, 12);
	RDP_ASSERT_EQ(g->max_inline, 64);
	RDP_ASSERT_EQ(g->read_depth, 16);
	RDP_ASSERT_STR_EQ(g->listen, "127.0.0.1:18515");
	RDP_ASSERT_STR_EQ(g->connect, "");
	RDP_ASSERT_EQ(g->connect_timeout_ms, 5000);
	RDP_ASSERT_EQ(g->handshake_timeout_ms, 5000);
	RDP_ASSERT_EQ(g->max_handshakes, 16);
	RDP_ASSERT_EQ(g->hello_timeout_ms, 1000);
	RDP_ASSERT_EQ(g->handshakes_per_peer, 4);
	RDP_ASSERT_STR_EQ(g->secret, "");
	RDP_ASSERT_EQ(rdp_cfg_lcores(cfg, NULL, 0), 0);
	RDP_ASSERT(rdp_cfg_lcore(cfg, 7) == g);
	RDP_ASSERT_EQ(rdp_cfg_validate(cfg), 0);
	rdp_cfg_free(cfg);
	return 0;
}

RDP_TEST(unit, cfg_lcore_sections_override_global_and_inherit_the_rest)
{
	static const char text[] =
		"# a comment line\n"
		"[global]\n"
		"driver = shm:cqe_order=recv_first\n"
		"sq_size = 128\n"
		"mode = pipeline\n"
		"app_lcore = 0\n"
		"listen = [::1]:9000\n"
		"connect = peer-1.example.org:18515\n"
		"secret = s3cret words\n"
		"\n"
		"[lcore.3]\n"
		"sq_size = 64\n"
		"signal_interval = 8\n"
		"numa_node = 1\n"
		"\n"
		"[lcore.1]\n";
	const struct rdp_cfg_lcore *g, *l1, *l3;
	unsigned int ids[4] = { 0 };
	struct rdp_cfg *cfg;

	tmp_enter();
	cfg = load_text("good.ini", text);
	RDP_ASSERT_MSG(cfg != NULL, "%s", rdp_err_msg());
	g = rdp_cfg_lcore(cfg, RDP_CFG_GLOBAL);
	l1 = rdp_cfg_lcore(cfg, 1);
	l3 = rdp_cfg_lcore(cfg, 3);

	RDP_ASSERT_EQ(g->sq_size, 128);
	RDP_ASSERT_EQ(g->signal_interval, 16);
	RDP_ASSERT_EQ(g->mode, RDP_CFG_MODE_PIPELINE);
	RDP_ASSERT_STR_EQ(g->listen, "[::1]:9000");
	RDP_ASSERT_STR_EQ(g->connect, "peer-1.example.org:18515");
	RDP_ASSERT_STR_EQ(g->secret, "s3cret words");

	/* own values win, the others come from [global], then from the defaults */
	RDP_ASSERT_EQ(l3->lcore_id, 3);
	RDP_ASSERT(l3->from_section);
	RDP_ASSERT_EQ(l3->sq_size, 64);
	RDP_ASSERT_EQ(l3->signal_interval, 8);
	RDP_ASSERT_EQ(l3->numa_node, 1);
	RDP_ASSERT_STR_EQ(l3->driver, "shm:cqe_order=recv_first");
	RDP_ASSERT_EQ(l3->app_lcore, 0);
	RDP_ASSERT_STR_EQ(l3->secret, "s3cret words");
	RDP_ASSERT_EQ(l3->rq_size, 256);

	/* an empty section is all inheritance */
	RDP_ASSERT_EQ(l1->lcore_id, 1);
	RDP_ASSERT(l1->from_section);
	RDP_ASSERT_EQ(l1->sq_size, 128);
	RDP_ASSERT_EQ(l1->numa_node, -1);

	/* lcores without a section run with [global] */
	RDP_ASSERT(rdp_cfg_lcore(cfg, 2) == g);
	RDP_ASSERT(rdp_cfg_lcore(cfg, RTE_MAX_LCORE) == NULL);
	RDP_ASSERT_EQ(rte_errno, EINVAL);

	/* in increasing order, whatever the file order; the count even past max */
	RDP_ASSERT_EQ(rdp_cfg_lcores(cfg, ids, 4), 2);
	RDP_ASSERT_EQ(ids[0], 1);
	RDP_ASSERT_EQ(ids[1], 3);
	RDP_ASSERT_EQ(rdp_cfg_lcores(cfg, ids, 1), 2);
	rdp_cfg_free(cfg);
	tmp_leave();
	return 0;
}

RDP_TEST(unit, cfg_accepts_comments_blank_lines_crlf_and_spacing)
{
	static const char text[] =
		"   # indented comment\r\n"
		"\r\n"
		"[ global ]   # trailing comment\r\n"
		"\tsq_size\t=\t512   # half of the default budget\r\n"
		"device =\r\n"
		"max_msg_size=4096\r\n"
		"[lcore.0]\n"
		"poll_burst = 8";
	const struct rdp_cfg_lcore *g, *l0;
	struct rdp_cfg *cfg;

	tmp_enter();
	cfg = load_text("spaced.ini", text);
	RDP_ASSERT_MSG(cfg != NULL, "%s", rdp_err_msg());
	g = rdp_cfg_lcore(cfg, RDP_CFG_GLOBAL);
	l0 = rdp_cfg_lcore(cfg, 0);
	RDP_ASSERT_EQ(g->sq_size, 512);
	RDP_ASSERT_STR_EQ(g->device, "");
	RDP_ASSERT_EQ(g->max_msg_size, 4096);
	RDP_ASSERT_EQ(l0->lcore_id, 0);
	RDP_ASSERT_EQ(l0->poll_burst, 8);
	rdp_cfg_free(cfg);

	/* an empty file is all defaults */
	cfg = load_text("empty.ini", "");
	RDP_ASSERT_MSG(cfg != NULL, "%s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_cfg_lcore(cfg, RDP_CFG_GLOBAL)->sq_size, 256);
	rdp_cfg_free(cfg);
	tmp_leave();
	return 0;
}

RDP_TEST(unit, cfg_missing_or_unreadable_file_is_named)
{
	tmp_enter();
	RDP_ASSERT(rdp_cfg_load("nosuch.ini") == NULL);
	RDP_ASSERT_EQ(rte_errno, ENOENT);
	RDP_ASSERT_STR_EQ(rdp_err_msg(), "nosuch.ini: cannot open: No such file or directory");

	RDP_ASSERT(mkdir("adir.ini", 0700) == 0);
	RDP_ASSERT(rdp_cfg_load("adir.ini") == NULL);
	RDP_ASSERT_EQ(rte_errno, EISDIR);
	RDP_ASSERT_STR_EQ(rdp_err_msg(), "adir.ini: cannot read: Is a directory");
	RDP_ASSERT(rmdir("adir.ini") == 0);

	RDP_ASSERT(rdp_cfg_load(NULL) == NULL);
	RDP_ASSERT_EQ(rte_errno, EINVAL);
	tmp_leave();
	return 0;
}

RDP_TEST(unit, cfg_rejects_lines_that_are_not_key_value_section_or_comment)
{
	static const char nul_line[] = "[global]\nsq_size = 1\0002\n";
	char long_line[400], long_value[400];

	tmp_enter();
	/* rte_cfgfile would skip this line silently */
	EXPECT_REJECTED("[global]\nsq_size 128\n",
			"bad.ini:2: expected 'key = value', '[section]' or a '#' comment, "
			"got 'sq_size 128'");
	EXPECT_REJECTED("; ini comment\n",
			"bad.ini:1: expected 'key = value', '[section]' or a '#' comment, "
			"got '; ini comment'");
	EXPECT_REJECTED("\n[global\n", "bad.ini:2: section header without ']': '[global'");
	EXPECT_REJECTED("[global] sq_size = 64\n",
			"bad.ini:1: text after ']' in section header: '[global] sq_size = 64'");
	EXPECT_REJECTED("[ ]\n", "bad.ini:1: empty section name");
	EXPECT_REJECTED("sq_size = 64\n[global]\n",
			"bad.ini:1: key 'sq_size' comes before any section "
			"(put it under [global] or [lcore.N])");
	EXPECT_REJECTED("[global]\n = 64\n", "bad.ini:2: missing key before '='");
	EXPECT_REJECTED("[global]\nsecret = a\\#b\n",
			"bad.ini:2: '\\' is not allowed (there are no escapes; "
			"'#' always starts a comment)");

	write_bytes("bad.ini", nul_line, sizeof(nul_line) - 1);
	RDP_ASSERT(rdp_cfg_load("bad.ini") == NULL);
	RDP_ASSERT_STR_EQ(rdp_err_msg(), "bad.ini:2: NUL byte in line (not a text file?)");
	RDP_ASSERT(unlink("bad.ini") == 0);

	/* rte_cfgfile fails on a line of 323 characters without saying where */
	snprintf(long_line, sizeof(long_line), "[global]\n\ndriver = shm:x=%0310d\n", 0);
	EXPECT_REJECTED(long_line, "bad.ini:3: line longer than 322 characters");
	snprintf(long_value, sizeof(long_value), "[global]\nsq_%0300d = 1\n", 0);
	EXPECT_REJECTED(long_value, "bad.ini:2: key name longer than 63 characters");
	tmp_leave();
	return 0;
}

RDP_TEST(unit, cfg_rejects_unknown_sections_and_bad_lcore_ids)
{
	tmp_enter();
	EXPECT_REJECTED("[globl]\n",
			"bad.ini:1: [globl]: unknown section (did you mean [global]?)");
	EXPECT_REJECTED("[Global]\n",
			"bad.ini:1: [Global]: unknown section (did you mean [global]?)");
	EXPECT_REJECTED("[lcore1]\n",
			"bad.ini:1: [lcore1]: unknown section (did you mean [lcore.1]?)");
	EXPECT_REJECTED("[core.12]\n",
			"bad.ini:1: [core.12]: unknown section (did you mean [lcore.12]?)");
	EXPECT_REJECTED("[global]\n[network]\n",
			"bad.ini:2: [network]: unknown section "
			"(sections are [global] and [lcore.N])");
	EXPECT_REJECTED("[lcore.x]\n",
			"bad.ini:1: [lcore.x]: lcore id must be an integer in [0, 127] "
			"(RTE_MAX_LCORE is 128)");
	EXPECT_REJECTED("[lcore.99999]\n",
			"bad.ini:1: [lcore.99999]: lcore id must be an integer in [0, 127] "
			"(RTE_MAX_LCORE is 128)");
	EXPECT_REJECTED("[lcore.128]\n",
			"bad.ini:1: [lcore.128]: lcore id must be an integer in [0, 127] "
			"(RTE_MAX_LCORE is 128)");
	EXPECT_REJECTED("[lcore.-1]\n",
			"bad.ini:1: [lcore.-1]: lcore id must be an integer in [0, 127] "
			"(RTE_MAX_LCORE is 128)");
	EXPECT_REJECTED("[lcore.]\n",
			"bad.ini:1: [lcore.]: lcore id must be an integer in [0, 127] "
			"(RTE_MAX_LCORE is 128)");
	EXPECT_REJECTED("[lcore.01]\n",
			"bad.ini:1: [lcore.01]: write the lcore id without leading zeros");
	tmp_leave();
	return 0;
}

RDP_TEST(unit, cfg_rejects_unknown_keys_suggesting_the_nearest)
{
	tmp_enter();
	EXPECT_REJECTED("[global]\nsq_sise = 64\n",
			"bad.ini:2: [global] sq_sise = 64: unknown key (did you mean sq_size?)");
	EXPECT_REJECTED("[lcore.2]\nSIGNAL_INTERVAL = 8\n",
			"bad.ini:2: [lcore.2] SIGNAL_INTERVAL = 8: unknown key "
			"(did you mean signal_interval?)");
	EXPECT_REJECTED("[global]\nconnect-timeout-ms = 10\n",
			"bad.ini:2: [global] connect-timeout-ms = 10: unknown key "
			"(did you mean connect_timeout_ms?)");
	EXPECT_REJECTED("[global]\nturbo = 1\n",
			"bad.ini:2: [global] turbo = 1: unknown key");
	EXPECT_REJECTED("[global]\nhugepages = 1\n",
			"bad.ini:2: [global] hugepages = 1: must be auto, on or off");
	/* a misspelt secret is still a secret */
	EXPECT_REJECTED("[global]\nsecert = hunter2\n",
			"bad.ini:2: [global] secert = (hidden): "
			"unknown key (did you mean secret?)");
	tmp_leave();
	return 0;
}

RDP_TEST(unit, cfg_rejects_duplicate_keys_and_sections)
{
	tmp_enter();
	EXPECT_REJECTED("[global]\nsq_size = 64\nrq_size = 64\nsq_size = 128\n",
			"bad.ini:4: [global] sq_size = 128: duplicate key (first at line 2)");
	/* the same key in two sections is an override, not a duplicate */
	EXPECT_REJECTED("[global]\nsq_size = 64\n[lcore.1]\nsq_size = 64\nsq_size = 32\n",
			"bad.ini:5: [lcore.1] sq_size = 32: duplicate key (first at line 4)");
	EXPECT_REJECTED("[lcore.1]\n[global]\n\n[lcore.1]\n",
			"bad.ini:4: [lcore.1]: duplicate section (first at line 1)");
	EXPECT_REJECTED("[global]\n[global]\n",
			"bad.ini:2: [global]: duplicate section (first at line 1)");
	tmp_leave();
	return 0;
}

RDP_TEST(unit, cfg_rejects_values_longer_than_their_maximum)
{
	char text[400];

	tmp_enter();
	snprintf(text, sizeof(text), "[global]\ndevice = mlx5_%059d\n", 0);
	EXPECT_REJECTED(text, "bad.ini:2: [global] device = mlx5_000000000000000000000000000...: "
			"longer than 63 characters");
	/* 296 characters: the line fits rte_cfgfile, which would cut the value at 255 */
	snprintf(text, sizeof(text), "[global]\ndriver = shm:x=%0290d\n", 0);
	EXPECT_REJECTED(text, "bad.ini:2: [global] driver = shm:x=00000000000000000000000000...: "
			"longer than 255 characters");
	snprintf(text, sizeof(text), "[global]\nsecret = %0256d\n", 0);
	EXPECT_REJECTED(text, "bad.ini:2: [global] secret = (hidden): longer than 255 characters");
	tmp_leave();
	return 0;
}

RDP_TEST(unit, cfg_hello_deadline_and_per_peer_cap_are_checked_naming_file_line_and_key)
{
	const struct rdp_cfg_lcore *g;
	struct rdp_cfg *cfg;

	tmp_enter();
	EXPECT_REJECTED("[global]\nhello_timeout_ms = 0\n",
			"bad.ini:2: [global] hello_timeout_ms = 0: must be an integer in [1, 600000]");
	EXPECT_REJECTED("[global]\n\nhello_timeout_ms = 200ms\n",
			"bad.ini:3: [global] hello_timeout_ms = 200ms: "
			"must be an integer in [1, 600000]");
	EXPECT_REJECTED("[global]\nhandshakes_per_peer = 0\n",
			"bad.ini:2: [global] handshakes_per_peer = 0: must be an integer in [1, 4096]");
	EXPECT_REJECTED("[lcore.2]\nhandshakes_per_peer = 4097\n",
			"bad.ini:2: [lcore.2] handshakes_per_peer = 4097: "
			"must be an integer in [1, 4096]");
	cfg = load_text("good.ini", "[global]\nhello_timeout_ms = 50\nhandshakes_per_peer = 1\n");
	RDP_ASSERT_MSG(cfg != NULL, "%s", rdp_err_msg());
	g = rdp_cfg_lcore(cfg, RDP_CFG_GLOBAL);
	RDP_ASSERT_EQ(g->hello_timeout_ms, 50);
	RDP_ASSERT_EQ(g->handshakes_per_peer, 1);
	rdp_cfg_free(cfg);
	tmp_leave();
	return 0;
}

RDP_TEST(unit, cfg_rejects_bad_numbers_ranges_and_choices)
{
	tmp_enter();
	EXPECT_REJECTED("[global]\nsq_size = 12k\n",
			"bad.ini:2: [global] sq_size = 12k: must be an integer in [2, 4096]");
	EXPECT_REJECTED("[global]\nsq_size =\n",
			"bad.ini:2: [global] sq_size = \"\": must be an integer in [2, 4096]");
	EXPECT_REJECTED("[global]\nsq_size = 0x100\n",
			"bad.ini:2: [global] sq_size = 0x100: must be an integer in [2, 4096]");
	EXPECT_REJECTED("[global]\nsq_size = -4\n",
			"bad.ini:2: [global] sq_size = -4: must be an integer in [2, 4096]");
	EXPECT_REJECTED("[global]\nsq_size = 1\n",
			"bad.ini:2: [global] sq_size = 1: must be an integer in [2, 4096]");
	EXPECT_REJECTED("[lcore.4]\nrq_size = 32769\n",
			"bad.ini:2: [lcore.4] rq_size = 32769: must be an integer in [2, 32768]");
	EXPECT_REJECTED("[global]\nmax_msg_size = 99999999999999999999999\n",
			"bad.ini:2: [global] max_msg_size = 99999999999999999999999: "
			"must be an integer in [1, 1073741824]");
	EXPECT_REJECTED("[global]\nring_size = 1000\n",
			"bad.ini:2: [global] ring_size = 1000: must be a "
			"power of two in [64, 1048576]");
	EXPECT_REJECTED("[global]\nring_size = 32\n",
			"bad.ini:2: [global] ring_size = 32: must be a "
			"power of two in [64, 1048576]");
	EXPECT_REJECTED("[global]\nbuf_size = 1000\n",
			"bad.ini:2: [global] buf_size = 1000: must be a "
			"multiple of 64 in [64, 1048576]");
	EXPECT_REJECTED("[global]\ngid_index = -2\n",
			"bad.ini:2: [global] gid_index = -2: must be -1 or an integer in [0, 255]");
	EXPECT_REJECTED("[global]\nnuma_node = 32\n",
			"bad.ini:2: [global] numa_node = 32: must be -1 or an integer in [0, 31]");
	EXPECT_REJECTED("[global]\nrnr_retry = 8\n",
			"bad.ini:2: [global] rnr_retry = 8: must be an integer in [0, 7]");
	EXPECT_REJECTED("[global]\nmode = fast\n",
			"bad.ini:2: [global] mode = fast: must be rtc or pipeline");
	tmp_leave();
	return 0;
}

RDP_TEST(unit, cfg_rejects_bad_host_port)
{
	tmp_enter();
	EXPECT_REJECTED("[global]\nlisten = 127.0.0.1\n",
			"bad.ini:2: [global] listen = 127.0.0.1: expected HOST:PORT");
	EXPECT_REJECTED("[global]\nlisten = ::1:18515\n",
			"bad.ini:2: [global] listen = ::1:18515: an IPv6 address needs brackets, "
			"as in [::1]:18515");
	EXPECT_REJECTED("[global]\nlisten = [::g]:18515\n",
			"bad.ini:2: [global] listen = [::g]:18515: '::g' is not an IPv6 address");
	EXPECT_REJECTED("[global]\nlisten = [::1]18515\n",
			"bad.ini:2: [global] listen = [::1]18515: expected [IPv6]:PORT");
	EXPECT_REJECTED("[global]\nconnect = 10.0.0.256:18515\n",
			"bad.ini:2: [global] connect = 10.0.0.256:18515: "
			"'10.0.0.256' is not an IPv4 address");
	EXPECT_REJECTED("[global]\nconnect = bad_host:18515\n",
			"bad.ini:2: [global] connect = bad_host:18515: "
			"'bad_host' is not a host name (letters, digits, '-', '.')");
	EXPECT_REJECTED("[global]\nconnect = :18515\n",
			"bad.ini:2: [global] connect = :18515: missing host before ':'");
	EXPECT_REJECTED("[lcore.1]\nconnect = server:0\n",
			"bad.ini:2: [lcore.1] connect = server:0: port "
			"must be an integer in [1, 65535]");
	EXPECT_REJECTED("[global]\nconnect = server:65536\n",
			"bad.ini:2: [global] connect = server:65536: port "
			"must be an integer in [1, 65535]");
	EXPECT_REJECTED("[global]\nconnect = server:http\n",
			"bad.ini:2: [global] connect = server:http: port "
			"must be an integer in [1, 65535]");
	tmp_leave();
	return 0;
}

RDP_TEST(unit, cfg_rejects_bad_driver_specs)
{
	tmp_enter();
	EXPECT_REJECTED("[global]\ndriver =\n",
			"bad.ini:2: [global] driver = \"\": must be auto or NAME[:key=value,...]");
	EXPECT_REJECTED("[global]\ndriver = Verbs\n",
			"bad.ini:2: [global] driver = Verbs: driver name 'Verbs' may only use "
			"a-z, 0-9 and '_'");
	EXPECT_REJECTED("[global]\ndriver = auto:device=rxe0\n",
			"bad.ini:2: [global] driver = auto:device=rxe0: auto takes no arguments");
	EXPECT_REJECTED("[global]\ndriver = shm:\n",
			"bad.ini:2: [global] driver = shm:: empty driver argument");
	EXPECT_REJECTED("[global]\ndriver = shm:cqe_order=fifo,,fail_after=3\n",
			"bad.ini:2: [global] driver = shm:cqe_order=fifo,,fail_after=3: "
			"empty driver argument");
	EXPECT_REJECTED("[global]\ndriver = shm:cqe_order=\n",
			"bad.ini:2: [global] driver = shm:cqe_order=: driver argument 'cqe_order=' "
			"has an empty value");
	EXPECT_REJECTED("[global]\ndriver = verbs:Device=rxe0\n",
			"bad.ini:2: [global] driver = verbs:Device=rxe0: driver argument "
			"'Device=rxe0': the key may only use a-z, 0-9 and '_'");
	EXPECT_REJECTED("[global]\ndriver = shm:fail_after=1,fail_after=2\n",
			"bad.ini:2: [global] driver = shm:fail_after=1,fail_after=2: "
			"driver argument 'fail_after' given twice");
	tmp_leave();
	return 0;
}

RDP_TEST(unit, cfg_accepts_driver_specs_with_flags_and_colons_in_values)
{
	struct rdp_cfg *cfg;

	tmp_enter();
	cfg = load_text("good.ini", "[global]\n"
			"driver = shm:cqe_order=random:42,drop_peer,send_cqe_delay=3\n");
	RDP_ASSERT_MSG(cfg != NULL, "%s", rdp_err_msg());
	RDP_ASSERT_STR_EQ(rdp_cfg_lcore(cfg, RDP_CFG_GLOBAL)->driver,
			  "shm:cqe_order=random:42,drop_peer,send_cqe_delay=3");
	rdp_cfg_free(cfg);
	tmp_leave();
	return 0;
}

RDP_TEST(unit, cfg_rejects_global_only_key_in_lcore_section_without_echoing_it)
{
	tmp_enter();
	EXPECT_REJECTED("[global]\n[lcore.1]\nsecret = hunter2\n",
			"bad.ini:3: [lcore.1] secret = (hidden): only allowed in [global]");
	tmp_leave();
	return 0;
}

RDP_TEST(unit, cfg_relations_blame_the_value_set_in_the_failing_section)
{
	tmp_enter();
	/* the example of the issue: lcore 1 sets sq_size, [global] signal_interval */
	EXPECT_REJECTED("[global]\nsignal_interval = 8\n\n[lcore.1]\nsq_size = 12\n",
			"bad.ini:5: [lcore.1] sq_size = 12: need sq_size >= 2*signal_interval "
			"(signal_interval=8)");
	/* lcore 2 breaks the same rule through its own signal_interval */
	EXPECT_REJECTED("[global]\nsq_size = 64\n[lcore.2]\nsignal_interval = 40\n",
			"bad.ini:4: [lcore.2] signal_interval = 40: need sq_size >= "
			"2*signal_interval (sq_size=64)");
	EXPECT_REJECTED("[global]\nrq_size = 16\nack_threshold = 1\n",
			"bad.ini:2: [global] rq_size = 16: need rq_size > ack_reserve "
			"(ack_reserve=16)");
	EXPECT_REJECTED("[global]\nrq_size = 20\n",
			"bad.ini:2: [global] rq_size = 20: need 1 <= ack_threshold <= "
			"rq_size-ack_reserve (4) (ack_threshold=16)");
	EXPECT_REJECTED("[global]\nack_reserve = 2\n",
			"bad.ini:2: [global] ack_reserve = 2: need ack_reserve >= "
			"ceil((rq_size-ack_reserve)/ack_threshold) = 16 "
			"(rq_size=256, ack_threshold=16)");
	EXPECT_REJECTED("[global]\nsq_size = 128\n[lcore.6]\ncq_size = 300\n",
			"bad.ini:4: [lcore.6] cq_size = 300: must be 0 (automatic) or "
			">= sq_size+rq_size = 384 (sq_size=128, rq_size=256)");
	/* with an SRQ the QPs have no receive queue; the SRQ's receives share the CQ */
	EXPECT_REJECTED("[global]\nsrq = on\nsrq_size = 64\nrndv_threshold = 4096\n"
			"cq_size = 320\n",
			"bad.ini:5: [global] cq_size = 320: must be 0 (automatic) or >= "
			"sq_size+1+srq_size = 321 (the SRQ's receives complete on the lcore's CQ) "
			"(sq_size=256, srq_size=64, srq=on)");
	/* a whole chunked message must fit in the receive window, or reassembly stalls */
	EXPECT_REJECTED("[global]\nbuf_size = 1024\nmax_msg_size = 1048576\n"
			"rndv_threshold = 1048576\n",
			"bad.ini:3: [global] max_msg_size = 1048576: a chunked message of 1048576 "
			"bytes (up to rndv_threshold when read_depth > 0) needs 1024 chunks of "
			"buf_size, more than the 225 a receiver can hold and still ack "
			"(rq_size-ack_reserve-ack_threshold+1) (buf_size=1024, rq_size=256, "
			"ack_reserve=16, ack_threshold=16)");
	/* without READs every message goes in chunks */
	EXPECT_REJECTED("[global]\nbuf_size = 1024\nread_depth = 0\n",
			"bad.ini:2: [global] buf_size = 1024: a chunked message of 1048576 "
			"bytes (up to rndv_threshold when read_depth > 0) needs 1024 chunks of "
			"buf_size, more than the 225 a receiver can hold and still ack "
			"(rq_size-ack_reserve-ack_threshold+1) (max_msg_size=1048576, "
			"rq_size=256, ack_reserve=16, ack_threshold=16)");
	/* a rendezvous message must fit in the rendezvous pool given */
	EXPECT_REJECTED("[global]\nrndv_pool_size = 4194304\nmax_msg_size = 16777216\n",
			"bad.ini:3: [global] max_msg_size = 16777216: a message of max_msg_size "
			"goes by rendezvous into a buffer of the rendezvous pool, which must hold "
			"at least one (rndv_threshold=65536, rndv_pool_size=4194304)");
	EXPECT_REJECTED("[global]\nrndv_pool_size = 4095\n",
			"bad.ini:2: [global] rndv_pool_size = 4095: must be 0 (automatic, sized "
			"from max_msg_size and the device) or at least 4096 (one arena page)");
	/* a leased receiver is sure of its floor only: chunked messages fit in it */
	EXPECT_REJECTED("[global]\nsrq = on\nrndv_threshold = 65536\n",
			"bad.ini:3: [global] rndv_threshold = 65536: with srq = on a chunked "
			"message has at most srq_floor chunks, so rndv_threshold must be at most "
			"srq_floor*buf_size = 8192 (srq_floor=1, buf_size=8192, srq=on)");
	EXPECT_REJECTED("[global]\nsrq = on\nrndv_threshold = 8192\nsrq_floor = 2\n"
			"srq_lease_max = 1\n",
			"bad.ini:4: [global] srq_floor = 2: an endpoint's floor must fit in the "
			"SRQ and under its lease_max (srq_size=4096, srq_lease_max=1)");
	EXPECT_REJECTED("[global]\nsrq = on\nrndv_threshold = 8192\nread_depth = 0\n",
			"bad.ini:4: [global] read_depth = 0: with srq = on and no rendezvous a "
			"message has at most srq_floor chunks, so max_msg_size must be at most 8192 "
			"(max_msg_size=1048576, srq_floor=1, buf_size=8192, srq=on)");
	EXPECT_REJECTED("[global]\nmode = pipeline\napp_lcore = 3\n[lcore.3]\n",
			"bad.ini:3: [global] app_lcore = 3 (as inherited by [lcore.3]): must name "
			"another lcore than the poller itself (mode=pipeline)");
	tmp_leave();
	return 0;
}

/*
 * rndv_threshold left at its default follows srq = on: at most
 * srq_floor*buf_size, in each section from that section's values; one set
 * in a file stays as set (and is refused when too large).
 */
RDP_TEST(unit, cfg_srq_on_derives_the_default_rndv_threshold_from_the_floor)
{
	struct rdp_cfg *cfg;
	static char out[32768];

	tmp_enter();
	cfg = load_text("srq.ini", "[global]\nsrq = on\n[lcore.2]\nsrq_floor = 2\n"
			"srq_lease_max = 64\n[lcore.3]\nbuf_size = 65536\n[lcore.4]\n"
			"rndv_threshold = 4096\n");
	RDP_ASSERT_MSG(cfg != NULL, "%s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_cfg_lcore(cfg, RDP_CFG_GLOBAL)->rndv_threshold, 8192);
	RDP_ASSERT_EQ(rdp_cfg_lcore(cfg, 2)->rndv_threshold, 16384);
	/* never above the default */
	RDP_ASSERT_EQ(rdp_cfg_lcore(cfg, 3)->rndv_threshold, 65536);
	RDP_ASSERT_EQ(rdp_cfg_lcore(cfg, 4)->rndv_threshold, 4096);

	/* later overrides move it, in the sections that inherit them */
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "buf_size", "4096", "--buf"), 0);
	RDP_ASSERT_EQ(rdp_cfg_lcore(cfg, RDP_CFG_GLOBAL)->rndv_threshold, 4096);
	RDP_ASSERT_EQ(rdp_cfg_lcore(cfg, 2)->rndv_threshold, 8192);
	RDP_ASSERT_EQ(rdp_cfg_lcore(cfg, 3)->rndv_threshold, 65536);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "read_depth", "0", "--rd"), 0);
	RDP_ASSERT_EQ(rdp_cfg_lcore(cfg, 2)->rndv_threshold, 65536); /* no rendezvous */
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "read_depth", "16", "--rd"), 0);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, 2, "srq", "off", "--srq"), 0);
	RDP_ASSERT_EQ(rdp_cfg_lcore(cfg, 2)->rndv_threshold, 65536);
	RDP_ASSERT_MSG(rdp_cfg_validate(cfg) == 0, "%s", rdp_err_msg());

	/* the dump says where the value comes from */
	dump_text(cfg, out, sizeof(out));
	RDP_ASSERT_MSG(strstr(out, "\nrndv_threshold       = 4096                   # default "
				   "(srq_floor*buf_size with srq = on)\n") != NULL,
		       "dump:\n%.2000s", out);
	rdp_cfg_free(cfg);

	/* with the default floor, srq = on alone is a valid configuration */
	cfg = load_text("alone.ini", "[global]\nsrq = on\n");
	RDP_ASSERT_MSG(cfg != NULL, "%s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_cfg_lcore(cfg, RDP_CFG_GLOBAL)->rndv_threshold, 8192);
	rdp_cfg_free(cfg);
	tmp_leave();
	return 0;
}

RDP_TEST(unit, cfg_set_overrides_reach_lcores_that_inherit)
{
	struct rdp_cfg *cfg;
	unsigned int ids[4];

	tmp_enter();
	cfg = load_text("good.ini",
			"[global]\nsq_size = 128\n[lcore.1]\nsq_size = 64\n[lcore.2]\n");
	RDP_ASSERT_MSG(cfg != NULL, "%s", rdp_err_msg());

	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "sq_size", " 512 ", "--sq-size"), 0);
	RDP_ASSERT_EQ(rdp_cfg_lcore(cfg, RDP_CFG_GLOBAL)->sq_size, 512);
	RDP_ASSERT_EQ(rdp_cfg_lcore(cfg, 1)->sq_size, 64);  /* its own value stays */
	RDP_ASSERT_EQ(rdp_cfg_lcore(cfg, 2)->sq_size, 512); /* inherited: follows */

	RDP_ASSERT_EQ(rdp_cfg_set(cfg, 1, "driver", "verbs:device=rxe0", "--driver"), 0);
	RDP_ASSERT_STR_EQ(rdp_cfg_lcore(cfg, 1)->driver, "verbs:device=rxe0");
	RDP_ASSERT_STR_EQ(rdp_cfg_lcore(cfg, 2)->driver, "auto");

	/* an override on an lcore without a section gives it one */
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, 5, "mode", "pipeline", NULL), 0);
	RDP_ASSERT_EQ(rdp_cfg_lcores(cfg, ids, 4), 3);
	RDP_ASSERT_EQ(ids[2], 5);
	RDP_ASSERT_EQ(rdp_cfg_lcore(cfg, 5)->mode, RDP_CFG_MODE_PIPELINE);
	RDP_ASSERT_EQ(rdp_cfg_lcore(cfg, 5)->sq_size, 512);
	RDP_ASSERT(rdp_cfg_lcore(cfg, 5)->from_section);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "secret", "k3y", "RDP_SECRET"), 0);
	RDP_ASSERT_STR_EQ(rdp_cfg_lcore(cfg, 5)->secret, "k3y");
	RDP_ASSERT_EQ(rdp_cfg_validate(cfg), 0);
	rdp_cfg_free(cfg);
	tmp_leave();
	return 0;
}

RDP_TEST(unit, cfg_set_rejects_bad_overrides_naming_their_origin)
{
	struct rdp_cfg *cfg = rdp_cfg_default();

	RDP_ASSERT(cfg != NULL);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "ring_size", "1000", "--ring-size"),
		      -EINVAL);
	RDP_ASSERT_STR_EQ(rdp_err_msg(), "--ring-size: [global] ring_size = 1000: "
			  "must be a power of two in [64, 1048576]");
	RDP_ASSERT_EQ(rdp_cfg_lcore(cfg, RDP_CFG_GLOBAL)->ring_size, 1024);

	RDP_ASSERT_EQ(rdp_cfg_set(cfg, 2, "driver", "shm:x=", "--driver"), -EINVAL);
	RDP_ASSERT_STR_EQ(rdp_err_msg(), "--driver: [lcore.2] driver = shm:x=: "
			  "driver argument 'x=' has an empty value");
	/* a refused lcore override does not create a section */
	RDP_ASSERT_EQ(rdp_cfg_lcores(cfg, NULL, 0), 0);

	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "sq-size", "64", NULL), -EINVAL);
	RDP_ASSERT_STR_EQ(rdp_err_msg(), "override: [global] sq-size = 64: unknown key "
			  "(did you mean sq_size?)");
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, 3, "secret", "x", "-s"), -EINVAL);
	RDP_ASSERT_STR_EQ(rdp_err_msg(),
			  "-s: [lcore.3] secret = (hidden): only allowed in [global]");
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RTE_MAX_LCORE, "sq_size", "64", "--lcore"), -EINVAL);
	RDP_ASSERT_STR_EQ(rdp_err_msg(), "--lcore: [lcore.128]: lcore id must be an integer "
			  "in [0, 127] (RTE_MAX_LCORE is 128)");
	/* values a file could not hold are refused too, so that a dump loads back */
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "secret", "a#b", "--secret"), -EINVAL);
	RDP_ASSERT_STR_EQ(rdp_err_msg(), "--secret: [global] secret = (hidden): "
			  "contains '#', which a file cannot hold");
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "device", "rx\te0", "--device"), -EINVAL);
	RDP_ASSERT_STR_EQ(rdp_err_msg(), "--device: [global] device = rx\te0: "
			  "contains a control character");
	RDP_ASSERT_EQ(rdp_cfg_set(NULL, RDP_CFG_GLOBAL, "sq_size", "64", NULL), -EINVAL);
	rdp_cfg_free(cfg);
	return 0;
}

RDP_TEST(unit, cfg_validate_after_overrides_blames_the_override)
{
	struct rdp_cfg *cfg = rdp_cfg_default();

	RDP_ASSERT(cfg != NULL);
	/* one override alone may break a relation that the next one restores */
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "signal_interval", "200", "--sig"), 0);
	RDP_ASSERT_EQ(rdp_cfg_validate(cfg), -EINVAL);
	RDP_ASSERT_STR_EQ(rdp_err_msg(), "--sig: [global] signal_interval = 200: need sq_size >= "
			  "2*signal_interval (sq_size=256)");
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "sq_size", "400", "--sq"), 0);
	RDP_ASSERT_EQ(rdp_cfg_validate(cfg), 0);

	RDP_ASSERT_EQ(rdp_cfg_set(cfg, 4, "rq_size", "20", "--rq"), 0);
	RDP_ASSERT_EQ(rdp_cfg_validate(cfg), -EINVAL);
	RDP_ASSERT_STR_EQ(rdp_err_msg(), "--rq: [lcore.4] rq_size = 20: need 1 <= ack_threshold "
			  "<= rq_size-ack_reserve (4) (ack_threshold=16)");
	rdp_cfg_free(cfg);
	return 0;
}

/* The value lines of the dump of @p cfg, without their origin comments. */
static void
dump_values(const struct rdp_cfg *cfg, char *buf, size_t len)
{
	char line[512];
	size_t off = 0;
	FILE *f = tmpfile();

	RDP_ASSERT(f != NULL);
	RDP_ASSERT_EQ(rdp_cfg_dump(cfg, f), 0);
	rewind(f);
	buf[0] = '\0';
	while (fgets(line, sizeof(line), f) != NULL) {
		char *hash = strchr(line, '#');

		if (hash == line || line[0] == '\n')
			continue;
		if (hash != NULL)
			strcpy(hash, "\n");
		off += snprintf(buf + off, len - off, "%s", line);
		RDP_ASSERT(off < len);
	}
	fclose(f);
}

RDP_TEST(unit, cfg_dump_loads_back_to_the_same_values)
{
	static char before[32768], after[32768];
	struct rdp_cfg *cfg, *again;
	FILE *f;

	tmp_enter();
	cfg = load_text("orig.ini", "[global]\nsq_size = 128\nlisten = [::]:7000\n"
			"[lcore.9]\nmode = pipeline\napp_lcore = 2\n[lcore.2]\nconnect = a.b:1\n");
	RDP_ASSERT_MSG(cfg != NULL, "%s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, 9, "poll_burst", "7", "--burst"), 0);
	f = fopen("dump.ini", "w");
	RDP_ASSERT(f != NULL);
	RDP_ASSERT_EQ(rdp_cfg_dump(cfg, f), 0);
	RDP_ASSERT(fclose(f) == 0);
	again = rdp_cfg_load("dump.ini");
	RDP_ASSERT_MSG(again != NULL, "%s", rdp_err_msg());
	RDP_ASSERT(unlink("dump.ini") == 0);

	dump_values(cfg, before, sizeof(before));
	dump_values(again, after, sizeof(after));
	RDP_ASSERT_STR_EQ(after, before);
	RDP_ASSERT(strstr(before, "[lcore.2]\n") != NULL);
	RDP_ASSERT(strstr(before, "\nconnect              = a.b:1") != NULL);
	RDP_ASSERT_EQ(rdp_cfg_lcore(again, 9)->poll_burst, 7);
	rdp_cfg_free(again);
	rdp_cfg_free(cfg);
	tmp_leave();
	return 0;
}

RDP_TEST(unit, cfg_dump_says_where_each_value_comes_from)
{
	static char out[32768];
	struct rdp_cfg *cfg;

	tmp_enter();
	cfg = load_text("src.ini", "[global]\nsq_size = 128\n[lcore.1]\nrq_size = 512\n"
			"ack_reserve = 32\n");
	RDP_ASSERT_MSG(cfg != NULL, "%s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "driver", "shm", "--driver"), 0);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "secret", "abcd", "--secret"), 0);
	dump_text(cfg, out, sizeof(out));
	RDP_ASSERT_MSG(strncmp(out, "# resolved configuration of src.ini\n[global]\n", 45) == 0,
		       "dump starts with:\n%.300s", out);
	RDP_ASSERT(strstr(out, "\ndriver               = shm                    # --driver\n"));
	RDP_ASSERT(strstr(out, "\nsq_size              = 128                    # src.ini:2\n"));
	RDP_ASSERT(strstr(out, "\nrq_size              = 256                    # default\n"));
	RDP_ASSERT(strstr(out, "\n# secret is set (4 characters, not shown)  # --secret\n"));
	RDP_ASSERT(strstr(out, "\n\n[lcore.1]\n"));
	RDP_ASSERT(strstr(out, "\nrq_size              = 512                    # src.ini:4\n"));
	RDP_ASSERT(strstr(out, "\nsq_size              = 128                    "
			  "# [global] src.ini:2\n"));
	RDP_ASSERT(strstr(out, "abcd") == NULL);
	rdp_cfg_free(cfg);
	tmp_leave();
	return 0;
}

RDP_TEST(unit, cfg_hostport_splits_ipv4_ipv6_and_names)
{
	char host[64];
	uint16_t port = 0;

	RDP_ASSERT_EQ(rdp_cfg_hostport("127.0.0.1:18515", host, sizeof(host), &port), 0);
	RDP_ASSERT_STR_EQ(host, "127.0.0.1");
	RDP_ASSERT_EQ(port, 18515);
	RDP_ASSERT_EQ(rdp_cfg_hostport("[fe80::1]:1", host, sizeof(host), &port), 0);
	RDP_ASSERT_STR_EQ(host, "fe80::1");
	RDP_ASSERT_EQ(port, 1);
	RDP_ASSERT_EQ(rdp_cfg_hostport("storage-7.lab:65535", host, sizeof(host), &port), 0);
	RDP_ASSERT_STR_EQ(host, "storage-7.lab");
	RDP_ASSERT_EQ(port, 65535);
	RDP_ASSERT_EQ(rdp_cfg_hostport("storage-7.lab:80", host, 8, &port), -ENOSPC);
	RDP_ASSERT_EQ(rdp_cfg_hostport("-bad:80", host, sizeof(host), &port), -EINVAL);
	RDP_ASSERT_STR_EQ(rdp_err_msg(), "'-bad:80': '-bad' is not a host name "
			  "(letters, digits, '-', '.')");
	return 0;
}

RDP_TEST(unit, cfg_lcore_values_make_valid_credit_params)
{
	const struct rdp_cfg_lcore *lc;
	struct rdp_credit_params p;
	struct rdp_credit c;
	struct rdp_cfg *cfg = rdp_cfg_default();
	char why[256];

	RDP_ASSERT(cfg != NULL);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, 1, "rq_size", "512", NULL), 0);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, 1, "ack_reserve", "32", NULL), 0);
	RDP_ASSERT_EQ(rdp_cfg_validate(cfg), 0);
	lc = rdp_cfg_lcore(cfg, 1);
	rdp_cfg_credit_params(lc, &p);
	RDP_ASSERT_EQ(p.sq_size, 256);
	RDP_ASSERT_EQ(p.rq_size, 512);
	RDP_ASSERT_EQ(p.ack_reserve, 32);
	RDP_ASSERT_EQ(p.signal_interval, 16);
	RDP_ASSERT_EQ(p.ack_threshold, 16);
	RDP_ASSERT_MSG(rdp_credit_init(&c, &p, &p, why, sizeof(why)) == 0, "%s", why);
	RDP_ASSERT_EQ(c.rc, 480);
	rdp_cfg_free(cfg);
	return 0;
}

static struct rdp_cfg *
load_example(const char *name)
{
	char path[1024];
	struct rdp_cfg *cfg;

	snprintf(path, sizeof(path), "%s/config/%s", env_path("RDP_SOURCE_ROOT"), name);
	cfg = rdp_cfg_load(path);
	RDP_ASSERT_MSG(cfg != NULL, "%s", rdp_err_msg());
	return cfg;
}

RDP_TEST(unit, cfg_example_default_ini_is_valid_with_lcore_1_polling)
{
	struct rdp_cfg *cfg = load_example("default.ini");
	unsigned int ids[2];

	RDP_ASSERT_EQ(rdp_cfg_lcores(cfg, ids, 2), 1);
	RDP_ASSERT_EQ(ids[0], 1);
	RDP_ASSERT_STR_EQ(rdp_cfg_lcore(cfg, 1)->driver, "auto");
	RDP_ASSERT_EQ(rdp_cfg_lcore(cfg, 1)->mode, RDP_CFG_MODE_RTC);
	RDP_ASSERT_STR_EQ(rdp_cfg_lcore(cfg, 1)->listen, "127.0.0.1:18515");
	rdp_cfg_free(cfg);
	return 0;
}

RDP_TEST(unit, cfg_example_server_ini_is_valid_with_two_pollers_and_an_app_lcore)
{
	struct rdp_cfg *cfg = load_example("server.ini");
	unsigned int ids[3];

	RDP_ASSERT_EQ(rdp_cfg_lcores(cfg, ids, 3), 2);
	RDP_ASSERT_EQ(ids[0], 1);
	RDP_ASSERT_EQ(ids[1], 2);
	RDP_ASSERT_EQ(rdp_cfg_lcore(cfg, 2)->mode, RDP_CFG_MODE_PIPELINE);
	RDP_ASSERT_EQ(rdp_cfg_lcore(cfg, 2)->app_lcore, 3);
	RDP_ASSERT_EQ(rdp_cfg_lcore(cfg, 2)->poll_burst, 64);
	RDP_ASSERT_STR_EQ(rdp_cfg_lcore(cfg, 1)->listen, "0.0.0.0:18515");
	rdp_cfg_free(cfg);
	return 0;
}

RDP_TEST(unit, cfg_example_client_ini_is_valid_and_pairs_with_server_ini)
{
	struct rdp_cfg *client = load_example("client.ini");
	struct rdp_cfg *server = load_example("server.ini");
	struct rdp_credit_params cp, sp;
	struct rdp_credit c;
	char why[256];

	RDP_ASSERT_STR_EQ(rdp_cfg_lcore(client, 1)->connect, "127.0.0.1:18515");
	RDP_ASSERT_STR_EQ(rdp_cfg_lcore(client, 1)->listen, "");
	/* each side's ack reserve holds the other's pure acks in flight */
	rdp_cfg_credit_params(rdp_cfg_lcore(client, 1), &cp);
	rdp_cfg_credit_params(rdp_cfg_lcore(server, 1), &sp);
	RDP_ASSERT_MSG(rdp_credit_init(&c, &cp, &sp, why, sizeof(why)) == 0, "%s", why);
	RDP_ASSERT_MSG(rdp_credit_init(&c, &sp, &cp, why, sizeof(why)) == 0, "%s", why);
	rdp_cfg_free(server);
	rdp_cfg_free(client);
	return 0;
}

RDP_TEST(unit, cfg_docs_describe_every_key)
{
	static char docs[65536], dump[32768];
	char path[1024], *line, *save = NULL;
	struct rdp_cfg *cfg = rdp_cfg_default();
	unsigned int n = 0;
	size_t len;
	FILE *f;

	snprintf(path, sizeof(path), "%s/docs/configuration.md", env_path("RDP_SOURCE_ROOT"));
	f = fopen(path, "r");
	RDP_ASSERT_MSG(f != NULL, "%s: %s", path, strerror(errno));
	len = fread(docs, 1, sizeof(docs) - 1, f);
	docs[len] = '\0';
	fclose(f);
	/* every key of a dump has a row "| `key` |" in the table of keys */
	dump_values(cfg, dump, sizeof(dump));
	for (line = strtok_r(dump, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		char key[64], row[80];

		if (sscanf(line, "%63[a-z_] =", key) != 1)
			continue;
		snprintf(row, sizeof(row), "| `%s` |", key);
		RDP_ASSERT_MSG(strstr(docs, row) != NULL, "docs/configuration.md: no row %s",
			       row);
		n++;
	}
	RDP_ASSERT_EQ(n, 44);
	rdp_cfg_free(cfg);
	return 0;
}

/* Run @p argv with stdout and stderr in files; returns the exit status. */
static int
run_tool(char *const argv[], char *out, size_t out_len, char *err, size_t err_len)
{
	posix_spawn_file_actions_t fa;
	FILE *f;
	pid_t pid;
	int status;
	size_t n;

	RDP_ASSERT(posix_spawn_file_actions_init(&fa) == 0);
	RDP_ASSERT(posix_spawn_file_actions_addopen(&fa, 1, "tool.out",
						    O_WRONLY | O_CREAT | O_TRUNC, 0600) == 0);
	RDP_ASSERT(posix_spawn_file_actions_addopen(&fa, 2, "tool.err",
						    O_WRONLY | O_CREAT | O_TRUNC, 0600) == 0);
	RDP_ASSERT_MSG(posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) == 0,
		       "cannot run %s", argv[0]);
	posix_spawn_file_actions_destroy(&fa);
	RDP_ASSERT(waitpid(pid, &status, 0) == pid);
	RDP_ASSERT_MSG(WIFEXITED(status), "%s died (status 0x%x)", argv[0], status);

	f = fopen("tool.out", "r");
	RDP_ASSERT(f != NULL);
	n = fread(out, 1, out_len - 1, f);
	out[n] = '\0';
	fclose(f);
	f = fopen("tool.err", "r");
	RDP_ASSERT(f != NULL);
	n = fread(err, 1, err_len - 1, f);
	err[n] = '\0';
	fclose(f);
	RDP_ASSERT(unlink("tool.out") == 0 && unlink("tool.err") == 0);
	return WEXITSTATUS(status);
}

RDP_TEST(unit, rdp_config_check_exits_0_on_valid_1_on_invalid_2_on_bad_usage)
{
	static char out[65536], err[4096];
	char *bin = (char *)(uintptr_t)env_path("RDP_CONFIG_BIN");

	tmp_enter();
	write_text("good.ini", "[global]\nsq_size = 128\n[lcore.1]\nrq_size = 512\n"
		   "ack_reserve = 32\n");
	write_text("bad.ini", "[global]\n\n[lcore.1]\nsq_sise = 64\n");

	RDP_ASSERT_EQ(run_tool((char *[]){ bin, (char *)"check", (char *)"good.ini", NULL },
			       out, sizeof(out), err, sizeof(err)), 0);
	RDP_ASSERT_STR_EQ(err, "rdp-config: good.ini is valid ([global] and 1 lcore section)\n");
	RDP_ASSERT_MSG(strncmp(out, "# resolved configuration of good.ini\n[global]\n", 46) == 0,
		       "stdout starts with:\n%.200s", out);
	RDP_ASSERT(strstr(out, "\nsq_size              = 128                    # good.ini:2\n"));
	RDP_ASSERT(strstr(out, "\n\n[lcore.1]\n"));
	RDP_ASSERT(strstr(out, "\nrq_size              = 512                    # good.ini:4\n"));

	RDP_ASSERT_EQ(run_tool((char *[]){ bin, (char *)"check", (char *)"bad.ini", NULL },
			       out, sizeof(out), err, sizeof(err)), 1);
	RDP_ASSERT_STR_EQ(err, "bad.ini:4: [lcore.1] sq_sise = 64: unknown key "
			  "(did you mean sq_size?)\n");
	RDP_ASSERT_STR_EQ(out, "");

	RDP_ASSERT_EQ(run_tool((char *[]){ bin, (char *)"check", (char *)"nosuch.ini", NULL },
			       out, sizeof(out), err, sizeof(err)), 1);
	RDP_ASSERT_STR_EQ(err, "nosuch.ini: cannot open: No such file or directory\n");

	RDP_ASSERT_EQ(run_tool((char *[]){ bin, NULL }, out, sizeof(out), err, sizeof(err)), 2);
	RDP_ASSERT(strncmp(err, "usage: rdp-config check FILE", 28) == 0);
	RDP_ASSERT_EQ(run_tool((char *[]){ bin, (char *)"verify", (char *)"good.ini", NULL },
			       out, sizeof(out), err, sizeof(err)), 2);
	RDP_ASSERT_EQ(run_tool((char *[]){ bin, (char *)"check", NULL },
			       out, sizeof(out), err, sizeof(err)), 2);
	RDP_ASSERT_EQ(run_tool((char *[]){ bin, (char *)"--help", NULL },
			       out, sizeof(out), err, sizeof(err)), 0);
	RDP_ASSERT(strncmp(out, "usage: rdp-config check FILE", 28) == 0);
	RDP_ASSERT_STR_EQ(err, "");

	/* a device that is not on this machine: the error lists what is */
	write_text("dev.ini", "[global]\nsq_size = 128\ndevice = mlx5_9\n");
	RDP_ASSERT_EQ(run_tool((char *[]){ bin, (char *)"check", (char *)"dev.ini", NULL },
			       out, sizeof(out), err, sizeof(err)), 1);
	RDP_ASSERT_MSG(strncmp(err, "dev.ini:3: [global] device = mlx5_9: verbs: no RDMA device "
			       "named 'mlx5_9' (", 67) == 0, "%s", err);
	RDP_ASSERT_STR_EQ(out, "");
	write_text("dev.ini", "[global]\ndriver = shm\ngid_index = 1\n");
	RDP_ASSERT_EQ(run_tool((char *[]){ bin, (char *)"check", (char *)"dev.ini", NULL },
			       out, sizeof(out), err, sizeof(err)), 1);
	RDP_ASSERT_STR_EQ(err, "dev.ini:3: [global] gid_index = 1: a key of RDMA devices, but "
			  "driver = shm has none to choose (driver = auto or verbs; shm takes "
			  "device, a name for each device it makes)\n");

	RDP_ASSERT(unlink("good.ini") == 0 && unlink("bad.ini") == 0 && unlink("dev.ini") == 0);
	tmp_leave();
	return 0;
}

/* rdp_init() with the configuration in @p text: its errno, the message in rdp_err_msg(). */
static int
init_text(const char *text)
{
	struct rdp_cfg *cfg = load_text("dev.ini", text);
	int ret;

	RDP_ASSERT_MSG(cfg != NULL, "%s", rdp_err_msg());
	ret = rdp_init(cfg);
	if (ret == 0)
		RDP_ASSERT_EQ(rdp_fini(), 0);
	rdp_cfg_free(cfg);
	return ret;
}

static void
expect_init_error(int line, const char *text, int err, const char *msg)
{
	int ret = init_text(text);

	/* err 0: any failure (the errno depends on the devices the machine has) */
	if (err != 0 ? ret != -err : ret >= 0)
		rdp_test_fail(__FILE__, line, "rdp_init: %d, want %d (%s)", ret, -err,
			      rdp_err_msg());
	if (strstr(rdp_err_msg(), msg) == NULL)
		rdp_test_fail(__FILE__, line, "message:\n  got:  %s\n  want: ...%s...",
			      rdp_err_msg(), msg);
}

/*
 * The device keys pick the RDMA device (device, port, gid_index become the
 * verbs driver's arguments): a device that is not there fails rdp_init()
 * naming the file, line and key and what the machine has; a port or GID
 * index with the shm driver, a key given twice, or more devices than a
 * process holds is refused, never ignored.
 */
RDP_TEST(eal, cfg_device_keys_pick_the_rdma_device_or_fail_naming_file_line_and_key)
{
	rdp_test_eal_init("0-1");
	expect_init_error(__LINE__, "[global]\ndevice = mlx5_9\n", 0,
			  "dev.ini:2: [global] device = mlx5_9: verbs: no RDMA device named 'mlx5_9' (");
	expect_init_error(__LINE__, "[global]\ndriver = auto\n\nport = 2\n", 0,
			  "dev.ini:4: [global] port = 2: ");
	expect_init_error(__LINE__, "[global]\ndriver = shm\nport = 2\n", EINVAL,
			  "dev.ini:3: [global] port = 2: a key of RDMA devices, but driver = "
			  "shm has none to choose (driver = auto or verbs; shm takes device, a "
			  "name for each device it makes)");
	expect_init_error(__LINE__, "[global]\ndriver = verbs:device=rxe0\ndevice = rxe1\n",
			  EINVAL, "dev.ini:3: [global] device = rxe1: given twice: also in "
			  "driver = verbs:device=rxe0");
	expect_init_error(__LINE__, "[global]\ndriver = shm\n[lcore.1]\ngid_index = 3\n",
			  EINVAL, "dev.ini:4: [lcore.1] gid_index = 3: a key of RDMA devices, but "
			  "driver = shm has none to choose");
	expect_init_error(__LINE__, "[global]\ndriver = verbs\ndevice = a, b, c, d, e\n", EINVAL,
			  "dev.ini:3: [global] device = a, b, c, d, e: more than 4 devices in one "
			  "process");
	/* and without device keys the driver key alone still decides */
	RDP_ASSERT_MSG(init_text("[global]\ndriver = shm\n") == 0, "%s", rdp_err_msg());
	/* an argument the driver refuses names the driver key's file and line */
	expect_init_error(__LINE__, "[global]\nmax_endpoints = 8\ndriver = shm:copy=fast\n",
			  EINVAL, "dev.ini:3: [global] driver = shm:copy=fast: driver shm: "
			  "argument copy=fast: expected auto, libc or vector");
	return 0;
}

/*
 * hugepages = on asks for every pool on hugepages: with EAL on --no-huge
 * (as rdp-test runs it) rdp_init() refuses it naming the file, line and
 * key; auto and off start on base pages.
 */
RDP_TEST(eal, cfg_hugepages_on_without_eal_hugepages_fails_naming_file_line_and_key)
{
	rdp_test_eal_init("0-1");
	RDP_ASSERT(!rte_eal_has_hugepages());
	expect_init_error(__LINE__, "[global]\ndriver = shm\n[lcore.1]\nhugepages = on\n",
			  EINVAL, "dev.ini:4: [lcore.1] hugepages = on: EAL runs without "
			  "hugepages (--no-huge): give EAL hugepages, or set auto or off");
	RDP_ASSERT_MSG(init_text("[global]\ndriver = shm\nhugepages = off\n") == 0, "%s",
		       rdp_err_msg());
	RDP_ASSERT_MSG(init_text("[global]\ndriver = shm\nhugepages = auto\n") == 0, "%s",
		       rdp_err_msg());
	return 0;
}

/*
 * On a machine with RDMA devices (the rxe lane: rxe0 and rxe1), the device
 * key picks the named one and the others are left alone; a device that is
 * not there is refused with the list of those that are, and a port the
 * device lacks names the port key.
 */
RDP_TEST(rxe, cfg_device_key_picks_the_named_rdma_device_and_lists_the_others)
{
	struct rdp_cfg *cfg;

	rdp_test_eal_init("0-1");
	cfg = load_text("dev.ini", "[global]\ndevice = rxe1\n");
	RDP_ASSERT_MSG(cfg != NULL, "%s", rdp_err_msg());
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	RDP_ASSERT_MSG(strstr(rdp_driver_info(), "verbs on rxe1 (configured by device)") != NULL,
		       "%s", rdp_driver_info());
	RDP_ASSERT_EQ(rdp_fini(), 0);
	rdp_cfg_free(cfg);
	expect_init_error(__LINE__, "[global]\ndevice = mlx5_9\n", ENOENT,
			  "dev.ini:2: [global] device = mlx5_9: verbs: no RDMA device named "
			  "'mlx5_9' (devices: rxe0, rxe1)");
	cfg = load_text("dev.ini", "[global]\ndevice = rxe0\nport = 2\n");
	RDP_ASSERT_MSG(cfg != NULL, "%s", rdp_err_msg());
	RDP_ASSERT(rdp_init(cfg) < 0);
	RDP_ASSERT_MSG(strncmp(rdp_err_msg(), "dev.ini:2: [global] device = rxe0: verbs: ", 42) == 0,
		       "%s", rdp_err_msg());
	RDP_ASSERT_MSG(strstr(rdp_err_msg(), "port 2") != NULL, "%s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}
