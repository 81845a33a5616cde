/* SPDX-License-Identifier: BSD-3-Clause */
/* rdp-perf, the main job: a short loopback run and its JSON. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rdp_test.h"

static const char *
perf_bin(void)
{
	const char *bin = getenv("RDP_PERF_BIN");

	RDP_ASSERT_MSG(bin != NULL, "RDP_PERF_BIN is not set (run through meson test)");
	return bin;
}

/* Run a command line; return its exit status and its output in @p out. */
static int
run(const char *cmd, char *out, size_t len)
{
	FILE *p = popen(cmd, "r");
	size_t n;
	int status;

	RDP_ASSERT(p != NULL);
	n = fread(out, 1, len - 1, p);
	out[n] = '\0';
	status = pclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* Every occurrence of "key": N must satisfy the check; returns how many. */
static unsigned int
each_number(const char *json, const char *key, int (*ok)(unsigned long long), char *bad,
	    size_t badlen)
{
	char pat[64];
	const char *p = json;
	unsigned int n = 0;

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	while ((p = strstr(p, pat)) != NULL) {
		unsigned long long v;

		p += strlen(pat);
		v = strtoull(p, NULL, 10);
		if (!ok(v))
			snprintf(bad, badlen, "%s = %llu", key, v);
		n++;
	}
	return n;
}

static int positive(unsigned long long v) { return v > 0; }
static int zero(unsigned long long v) { return v == 0; }

RDP_TEST(perf, rdp_perf_loopback_reports_rates_and_zero_enomem_rnr)
{
	char dir[256], json[512], cmd[1024], bad[128] = "";
	static char out[1 << 16], text[1 << 16];
	const char *tmp = getenv("TMPDIR");
	FILE *f;
	size_t n;
	int rc;

	snprintf(dir, sizeof(dir), "%s/rdp-perf-XXXXXX", tmp != NULL && *tmp != '\0' ? tmp : P_tmpdir);
	RDP_ASSERT(mkdtemp(dir) != NULL);
	snprintf(json, sizeof(json), "%s/out.json", dir);
	snprintf(cmd, sizeof(cmd), "%s -- -n 300 -s 64,4096,65536 -m lat,bw,bidir -q "
		 "--driver shm:cqe_order=recv_first --json %s 2>&1", perf_bin(), json);
	rc = run(cmd, out, sizeof(out));
	printf("%s", out);
	RDP_ASSERT_EQ(rc, 0);
	RDP_ASSERT(strstr(out, "ENOMEM") != NULL);
	f = fopen(json, "r");
	RDP_ASSERT_MSG(f != NULL, "no JSON written: %s", strerror(errno));
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	snprintf(cmd, sizeof(cmd), "python3 -m json.tool %s >/dev/null 2>&1", json);
	RDP_ASSERT_MSG(system(cmd) == 0, "not valid JSON:\n%s", text);
	RDP_ASSERT_MSG(strstr(text, "\"driver\": \"shm") != NULL, "%s", text);
	RDP_ASSERT_EQ(each_number(text, "messages", positive, bad, sizeof(bad)), 9);
	RDP_ASSERT_EQ(each_number(text, "enomem", zero, bad, sizeof(bad)), 9);
	RDP_ASSERT_EQ(each_number(text, "rnr", zero, bad, sizeof(bad)), 9);
	RDP_ASSERT_MSG(bad[0] == '\0', "%s in\n%s", bad, text);
	RDP_ASSERT_EQ(each_number(text, "lat_p50_ns", positive, bad, sizeof(bad)), 9);
	RDP_ASSERT_MSG(strstr(bad, "lat_p50_ns") != NULL, "bw rows carry no latency: %s", text);
	unlink(json);
	rmdir(dir);
	return 0;
}

RDP_TEST(perf, rdp_perf_refuses_bad_arguments_naming_the_option)
{
	static char out[8192];
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "%s -- --sizes 64,x 2>&1", perf_bin());
	RDP_ASSERT_EQ(run(cmd, out, sizeof(out)), 2);
	RDP_ASSERT_MSG(strstr(out, "--sizes 64,x: expected") != NULL, "%s", out);
	snprintf(cmd, sizeof(cmd), "%s -- --mode fast 2>&1", perf_bin());
	RDP_ASSERT_EQ(run(cmd, out, sizeof(out)), 2);
	RDP_ASSERT_MSG(strstr(out, "--mode fast: expected a list of lat, bw, bidir") != NULL,
		       "%s", out);
	snprintf(cmd, sizeof(cmd), "%s -- --driver nosuch -d 0.1 2>&1", perf_bin());
	RDP_ASSERT_EQ(run(cmd, out, sizeof(out)), 1);
	RDP_ASSERT_MSG(strstr(out, "unknown driver 'nosuch'") != NULL, "%s", out);
	snprintf(cmd, sizeof(cmd), "%s -- --help 2>&1", perf_bin());
	RDP_ASSERT_EQ(run(cmd, out, sizeof(out)), 0);
	RDP_ASSERT(strstr(out, "--connect HOST:PORT") != NULL);
	return 0;
}
