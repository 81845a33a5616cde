/* SPDX-License-Identifier: BSD-3-Clause */
/* rdp-perf, the main job: a short loopback run and its JSON. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
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
static int three(unsigned long long v) { return v == 3; }

/*
 * Run rdp-perf with @p args and --json into a fresh directory; its output
 * goes to @p out, the JSON (checked to parse) to @p text. The test fails
 * when rdp-perf fails or writes no valid JSON.
 */
static void
run_perf_json(const char *args, char *out, size_t outlen, char *text, size_t textlen)
{
	char dir[256], json[512], cmd[1024];
	const char *tmp = getenv("TMPDIR");
	FILE *f;
	size_t n;
	int rc;

	snprintf(dir, sizeof(dir), "%s/rdp-perf-XXXXXX", tmp != NULL && *tmp != '\0' ? tmp : P_tmpdir);
	RDP_ASSERT(mkdtemp(dir) != NULL);
	snprintf(json, sizeof(json), "%s/out.json", dir);
	snprintf(cmd, sizeof(cmd), "%s -- %s --json %s 2>&1", perf_bin(), args, json);
	rc = run(cmd, out, outlen);
	printf("%s", out);
	RDP_ASSERT_EQ(rc, 0);
	f = fopen(json, "r");
	RDP_ASSERT_MSG(f != NULL, "no JSON written: %s", strerror(errno));
	n = fread(text, 1, textlen - 1, f);
	text[n] = '\0';
	fclose(f);
	snprintf(cmd, sizeof(cmd), "python3 -m json.tool %s >/dev/null 2>&1", json);
	RDP_ASSERT_MSG(system(cmd) == 0, "not valid JSON:\n%s", text);
	unlink(json);
	rmdir(dir);
}

RDP_TEST(perf, rdp_perf_loopback_reports_rates_and_zero_enomem_rnr)
{
	static char out[1 << 16], text[1 << 16];
	char bad[128] = "";

	run_perf_json("-n 300 -s 64,4096,65536 -m lat,bw,bidir -q --driver shm:cqe_order=recv_first",
		      out, sizeof(out), text, sizeof(text));
	RDP_ASSERT(strstr(out, "ENOMEM") != NULL);
	RDP_ASSERT_MSG(strstr(text, "\"driver\": \"shm") != NULL, "%s", text);
	RDP_ASSERT_EQ(each_number(text, "messages", positive, bad, sizeof(bad)), 9);
	RDP_ASSERT_EQ(each_number(text, "enomem", zero, bad, sizeof(bad)), 9);
	RDP_ASSERT_EQ(each_number(text, "rnr", zero, bad, sizeof(bad)), 9);
	RDP_ASSERT_MSG(bad[0] == '\0', "%s in\n%s", bad, text);
	RDP_ASSERT_EQ(each_number(text, "lat_p50_ns", positive, bad, sizeof(bad)), 9);
	RDP_ASSERT_MSG(strstr(bad, "lat_p50_ns") != NULL, "bw rows carry no latency: %s", text);
	return 0;
}

static int four(unsigned long long v) { return v == 4; }

/*
 * The one-sided modes, in both run modes and on several endpoints: every
 * operation completes (the phases drain and the server's counts agree),
 * nothing fails, and the latency modes carry samples.
 */
RDP_TEST(perf, rdp_perf_write_and_read_modes_complete_every_operation)
{
	static char out[1 << 16], text[1 << 16];
	char bad[128] = "";
	int pipeline;

	for (pipeline = 0; pipeline < 2; pipeline++) {
		run_perf_json(pipeline ? "-n 2000 -s 64,65536 -m write,read,write_lat,read_lat -e 4 -q "
			      "--pipeline" : "-n 2000 -s 64,65536 -m write,read,write_lat,read_lat -e 4 -q",
			      out, sizeof(out), text, sizeof(text));
		RDP_ASSERT_EQ(each_number(text, "messages", positive, bad, sizeof(bad)), 8);
		RDP_ASSERT_EQ(each_number(text, "seq_errors", zero, bad, sizeof(bad)), 9);
		RDP_ASSERT_EQ(each_number(text, "enomem", zero, bad, sizeof(bad)), 8);
		RDP_ASSERT_EQ(each_number(text, "endpoints_active", four, bad, sizeof(bad)), 8);
		RDP_ASSERT_MSG(bad[0] == '\0', "%s in\n%s", bad, text);
		RDP_ASSERT_MSG(strstr(text, "\"mode\": \"read_lat\"") != NULL, "%s", text);
		/* the bandwidth rows carry no latency, the latency rows do */
		each_number(text, "lat_p50_ns", positive, bad, sizeof(bad));
		RDP_ASSERT_MSG(strstr(bad, "lat_p50_ns = 0") != NULL, "%s", text);
		bad[0] = '\0';
	}
	/* a size beyond the region is refused before anything runs */
	{
		char cmd[512];

		snprintf(cmd, sizeof(cmd), "%s -- -m write -s 33554432 2>&1", perf_bin());
		RDP_ASSERT_EQ(run(cmd, out, sizeof(out)), 2);
		RDP_ASSERT_MSG(strstr(out, "--sizes 33554432: larger than the 16 MiB region") != NULL,
			       "%s", out);
	}
	return 0;
}

/*
 * Messages beyond the default max_msg_size (1 MiB) in every message mode,
 * both run modes, two endpoints: -s raises max_msg_size, they go by
 * rendezvous, each arrives once and in order (rdp-perf's own sequence
 * check), nothing fails.
 */
RDP_TEST(perf, rdp_perf_large_messages_go_by_rendezvous_in_every_message_mode)
{
	static char out[1 << 16], text[1 << 16];
	char bad[128] = "", cmd[512];
	int pipeline;

	for (pipeline = 0; pipeline < 2; pipeline++) {
		run_perf_json(pipeline ? "-n 100 -s 1048576,4194304 -m lat,bw,bidir -e 2 -q --pipeline" :
			      "-n 100 -s 1048576,4194304 -m lat,bw,bidir -e 2 -q",
			      out, sizeof(out), text, sizeof(text));
		RDP_ASSERT_EQ(each_number(text, "messages", positive, bad, sizeof(bad)), 6);
		RDP_ASSERT_EQ(each_number(text, "enomem", zero, bad, sizeof(bad)), 6);
		RDP_ASSERT_EQ(each_number(text, "rnr", zero, bad, sizeof(bad)), 6);
		RDP_ASSERT_EQ(each_number(text, "seq_errors", zero, bad, sizeof(bad)), 7);
		RDP_ASSERT_MSG(bad[0] == '\0', "%s in\n%s", bad, text);
	}
	/* --max-msg is the server's: a client's largest -s sets its own */
	snprintf(cmd, sizeof(cmd), "%s -- --max-msg 4194304 -m bw 2>&1", perf_bin());
	RDP_ASSERT_EQ(run(cmd, out, sizeof(out)), 2);
	RDP_ASSERT_MSG(strstr(out, "--max-msg 4194304: only with --server") != NULL, "%s", out);
	/* how long a phase's end waits for a slow link is bounded and checked */
	snprintf(cmd, sizeof(cmd), "%s -- --stall-timeout 0.5 -m bw 2>&1", perf_bin());
	RDP_ASSERT_EQ(run(cmd, out, sizeof(out)), 2);
	RDP_ASSERT_MSG(strstr(out, "--stall-timeout 0.5: expected 1..3600 seconds") != NULL, "%s",
		       out);
	return 0;
}

/*
 * Eight endpoints of one lcore streaming 1 MiB messages share its send
 * arena (on shm one message by default), so most of them find it full;
 * each still gets its turn (an endpoint with nothing in flight gets no
 * completion to try again from): all eight complete messages, in both run
 * modes.
 */
RDP_TEST(perf, rdp_perf_endpoints_sharing_a_full_send_arena_all_get_their_turn)
{
	static char out[1 << 16], text[1 << 16];
	int pipeline;

	for (pipeline = 0; pipeline < 2; pipeline++) {
		run_perf_json(pipeline ? "-e 8 -m bw -s 1048576 -n 400 -q --pipeline" :
			      "-e 8 -m bw -s 1048576 -n 400 -q", out, sizeof(out), text,
			      sizeof(text));
		RDP_ASSERT_MSG(strstr(text, "\"endpoints_active\": 8,") != NULL, "%s mode:\n%s",
			       pipeline ? "pipeline" : "run-to-completion", text);
	}
	return 0;
}

/*
 * --busy K streams on the first K endpoints only: the others stay connected
 * and idle on the same pollers (how much the connections alone cost).
 */
RDP_TEST(perf, rdp_perf_busy_streams_on_that_many_endpoints_the_rest_stay_idle)
{
	static char out[1 << 16], text[1 << 16];
	char bad[128] = "";

	run_perf_json("-e 8 --busy 3 -m bw,bidir -s 64 -w 4 -n 3000 -q", out, sizeof(out), text,
		      sizeof(text));
	RDP_ASSERT_MSG(strstr(text, "\"endpoints\": 8,") != NULL, "%s", text);
	RDP_ASSERT_MSG(strstr(text, "\"busy\": 3,") != NULL, "%s", text);
	RDP_ASSERT_EQ(each_number(text, "messages", positive, bad, sizeof(bad)), 2);
	RDP_ASSERT_MSG(bad[0] == '\0', "%s in\n%s", bad, text);
	RDP_ASSERT_EQ(each_number(text, "endpoints_active", three, bad, sizeof(bad)), 2);
	RDP_ASSERT_MSG(bad[0] == '\0', "%s in\n%s", bad, text);
	/* without it, every endpoint streams */
	run_perf_json("-e 8 -m bw -s 64 -w 4 -n 3000 -q", out, sizeof(out), text, sizeof(text));
	RDP_ASSERT_MSG(strstr(text, "\"busy\": 8,") != NULL, "%s", text);
	RDP_ASSERT_MSG(strstr(text, "\"endpoints_active\": 8,") != NULL, "%s", text);
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
	snprintf(cmd, sizeof(cmd), "%s -- --endpoints 4 --busy 5 2>&1", perf_bin());
	RDP_ASSERT_EQ(run(cmd, out, sizeof(out)), 2);
	RDP_ASSERT_MSG(strstr(out, "--busy 5: expected 1..4 (the endpoints)") != NULL, "%s", out);
	snprintf(cmd, sizeof(cmd), "%s -- --busy 0 2>&1", perf_bin());
	RDP_ASSERT_EQ(run(cmd, out, sizeof(out)), 2);
	RDP_ASSERT_MSG(strstr(out, "--busy 0: expected 1..1 (the endpoints)") != NULL, "%s", out);
	snprintf(cmd, sizeof(cmd), "%s -- --help 2>&1", perf_bin());
	RDP_ASSERT_EQ(run(cmd, out, sizeof(out)), 0);
	RDP_ASSERT(strstr(out, "--connect HOST:PORT") != NULL);
	return 0;
}

/*
 * An option of the other role is refused, not ignored: a server takes its
 * load from the client, a client does not listen, and only a loopback run
 * starts a server process. (The old binary served on with --window given
 * to --server: the timeout bounds that case.)
 */
RDP_TEST(perf, rdp_perf_refuses_an_option_of_the_other_role)
{
	static const char *const server_only_not[][2] = {
		{ "--mode", "bw" }, { "--sizes", "64" }, { "--duration", "1" },
		{ "--iters", "10" }, { "--endpoints", "2" }, { "--window", "8" },
		{ "--busy", "1" }, { "--json", "out.json" }, { "--server-lcores", "1" },
	};
	static char out[8192];
	char cmd[512], want[128];
	size_t i;

	for (i = 0; i < sizeof(server_only_not) / sizeof(server_only_not[0]); i++) {
		snprintf(cmd, sizeof(cmd), "timeout 10 %s -- --server --listen 127.0.0.1:0 %s %s 2>&1",
			 perf_bin(), server_only_not[i][0], server_only_not[i][1]);
		RDP_ASSERT_MSG(run(cmd, out, sizeof(out)) == 2, "%s: %s", cmd, out);
		snprintf(want, sizeof(want), "%s %s: not with --server", server_only_not[i][0],
			 server_only_not[i][1]);
		RDP_ASSERT_MSG(strstr(out, want) != NULL, "%s: %s", cmd, out);
	}
	snprintf(cmd, sizeof(cmd), "timeout 10 %s -- --connect 127.0.0.1:1 --listen 0.0.0.0:5 2>&1",
		 perf_bin());
	RDP_ASSERT_EQ(run(cmd, out, sizeof(out)), 2);
	RDP_ASSERT_MSG(strstr(out, "--listen 0.0.0.0:5: not with --connect") != NULL, "%s", out);
	snprintf(cmd, sizeof(cmd), "timeout 10 %s -- --connect 127.0.0.1:1 --server-lcores 1 2>&1",
		 perf_bin());
	RDP_ASSERT_EQ(run(cmd, out, sizeof(out)), 2);
	RDP_ASSERT_MSG(strstr(out, "--server-lcores 1: not with --connect") != NULL, "%s", out);
	return 0;
}

/*
 * A server that takes the TCP connection and never answers the HELLO: the
 * client waits as long as its configuration's handshake deadline says
 * (12 s here, past the 10 s rdp-perf used to allow itself), then says why
 * the endpoint failed. It used to give up at 10 s with "not established:
 * Success".
 */
RDP_TEST(perf, rdp_perf_waits_out_the_configured_handshake_deadline_and_says_why)
{
	static const char ini[] = "perf_silent_server.ini";
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	static char out[1 << 16];
	char cmd[768];
	double t0, waited;
	FILE *f;
	int fd, rc;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	RDP_ASSERT(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	RDP_ASSERT_EQ(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	RDP_ASSERT_EQ(listen(fd, 4), 0); /* the kernel completes the connect; nobody reads */
	RDP_ASSERT_EQ(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	f = fopen(ini, "w");
	RDP_ASSERT_MSG(f != NULL, "fopen(%s): %s", ini, strerror(errno));
	fprintf(f, "[global]\nhandshake_timeout_ms = 12000\n");
	RDP_ASSERT_EQ(fclose(f), 0);
	snprintf(cmd, sizeof(cmd), "%s -- --connect 127.0.0.1:%u -c %s -m lat -d 0.1 -q 2>&1",
		 perf_bin(), ntohs(sa.sin_port), ini);
	t0 = rdp_clock_s();
	rc = run(cmd, out, sizeof(out));
	waited = rdp_clock_s() - t0;
	close(fd);
	printf("exit %d after %.1f s:\n%s", rc, waited, out);
	RDP_ASSERT_EQ(rc, 1);
	RDP_ASSERT_MSG(strstr(out, "Success") == NULL, "%s", out);
	RDP_ASSERT_MSG(strstr(out, "no progress within 12000 ms") != NULL, "%s", out);
	RDP_ASSERT_MSG(strstr(out, "Connection timed out") != NULL, "%s", out);
	RDP_ASSERT_MSG(waited >= 11.5, "gave up after %.1f s, before the configured 12 s", waited);
	return 0;
}

/* The value after "key": in a JSON text, from the first occurrence on. */
static double
json_number(const char *json, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = strstr(json, pat);
	RDP_ASSERT_MSG(p != NULL, "no %s in\n%s", key, json);
	return strtod(p + strlen(pat), NULL);
}

/*
 * A ping-pong's latency samples cover whole iterations, as ucx_perftest's
 * do (one clock read per iteration, each sample the time since the one
 * before): the client's turnaround between an echo and the next request
 * belongs to the round trip. Samples that tile the run that way add up to
 * its duration, so their mean is the one-way time the rate implies.
 */
RDP_TEST(perf, rdp_perf_latency_samples_cover_whole_iterations_as_the_rate_does)
{
	static char out[1 << 16], text[1 << 14];
	double rate, mean, implied, seconds, max_ns, cut;
	int attempt;

	/*
	 * The identity holds up to the iterations cut by the window's two
	 * ends: the samples' sum misses at most two round trips, each at most
	 * twice the largest one-way sample. That bounds the relative error by
	 * cut = 4 x max / window, on top of 1 % for everything else. A machine
	 * that stalls the run (the window overran by half, or the bound passes
	 * 5 %, near the 8 % error this test was written for) cuts too much to
	 * tell: run again with a longer window, and say so.
	 */
	for (attempt = 1;; attempt++) {
		static const double window[] = { 0.3, 1, 2 };
		char args[64];

		snprintf(args, sizeof(args), "-d %.1f -s 64 -m lat -q", window[attempt - 1]);
		run_perf_json(args, out, sizeof(out), text, sizeof(text));
		seconds = json_number(text, "seconds");
		max_ns = json_number(text, "lat_max_ns");
		cut = seconds > 0 ? 4 * max_ns / (seconds * 1e9) : 1;
		if (seconds < window[attempt - 1] * 1.5 && cut < 0.05)
			break;
		printf("attempt %d: the %.1f s window took %.2f s, its longest one-way sample "
		       "%.0f us (a busy machine); a longer window next\n", attempt,
		       window[attempt - 1], seconds, max_ns / 1e3);
		if (attempt == 3)
			return rdp_test_skip("the machine stalled every run (%.2f s for 2 s, "
					     "one-way samples up to %.0f us)", seconds, max_ns / 1e3);
	}
	rate = json_number(text, "msg_rate");
	mean = json_number(text, "lat_mean_ns");
	RDP_ASSERT_MSG(rate > 0 && mean > 0, "%s", text);
	implied = 1e9 / rate / 2;
	printf("mean of the samples %.1f ns, one-way time the rate implies %.1f ns, "
	       "allowed %.2f %%\n", mean, implied, (0.01 + cut) * 100);
	RDP_ASSERT_MSG(fabs(mean / implied - 1) <= 0.01 + cut,
		       "samples average %.1f ns one-way, the rate implies %.1f ns (%.2f %% apart, "
		       "allowed %.2f %%)", mean, implied, fabs(mean / implied - 1) * 100,
		       (0.01 + cut) * 100);
	return 0;
}

/*
 * A timed phase measures at least one message: one whose --duration passes
 * before any completes (16 MiB messages in a window of 1 ms, or a short
 * phase on a machine busy with other work) goes on until one does, and
 * reports the rate over the time it took, never a rate of 0.
 */
RDP_TEST(perf, rdp_perf_a_timed_phase_too_short_for_one_message_waits_for_one)
{
	static char out[1 << 16], text[1 << 14];
	char bad[128] = "";

	run_perf_json("-d 0.001 -s 16777216 -m lat,bw -q", out, sizeof(out), text, sizeof(text));
	RDP_ASSERT_EQ(each_number(text, "messages", positive, bad, sizeof(bad)), 2);
	RDP_ASSERT_EQ(each_number(text, "msg_rate", positive, bad, sizeof(bad)), 2);
	RDP_ASSERT_MSG(bad[0] == '\0', "%s in\n%s", bad, text);
	/* the first row, the ping-pong's, has latency samples */
	RDP_ASSERT_MSG(json_number(text, "lat_p50_ns") > 0, "%s", text);
	RDP_ASSERT_MSG(json_number(text, "seconds") >= 0.001, "%s", text);
	return 0;
}

/*
 * A ping-pong's send completions may come after the echoes they belong to
 * (recv_first order), and here long after: 10^6 polls. The last ones
 * reach the client in the stream phase that follows; they belong to the
 * ping-pong and must not be counted as the stream's (that made rdp-perf
 * wait for -1 messages in flight, about once in 5 runs on a loaded host).
 */
RDP_TEST(perf, rdp_perf_counts_a_late_send_completion_in_the_phase_that_sent_it)
{
	static char out[1 << 16], text[1 << 14];
	const char *bw;

	run_perf_json("-n 300 -s 64 -m lat,bw -q --driver shm:cqe_order=recv_first,"
		      "send_cqe_delay=1000000", out, sizeof(out), text, sizeof(text));
	RDP_ASSERT_MSG(strstr(out, "in flight") == NULL, "%s", out);
	bw = strstr(text, "\"mode\": \"bw\"");
	RDP_ASSERT_MSG(bw != NULL, "no bw result in\n%s", text);
	RDP_ASSERT_MSG(json_number(bw, "messages") >= 300, "%s", text);
	return 0;
}

/*
 * The shared receive queue through rdp-perf's configuration file (both
 * loopback processes read it): several endpoints lease from each side's
 * SRQ, chunked and rendezvous sizes, every message counted, no ENOMEM and
 * no RNR with rnr_retry = 0.
 */
/* Write @p text to the file @p ini. */
static void
rewrite_ini(const char *ini, const char *text)
{
	FILE *f = fopen(ini, "w");

	RDP_ASSERT(f != NULL);
	RDP_ASSERT(fputs(text, f) >= 0);
	RDP_ASSERT(fclose(f) == 0);
}

/* A fresh directory @p dir holding the configuration @p text as @p ini. */
static void
write_ini(char *dir, size_t dir_len, char *ini, size_t ini_len, const char *text)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, dir_len, "%s/rdp-perf-ini-XXXXXX", tmp != NULL && *tmp != '\0' ? tmp :
		 P_tmpdir);
	RDP_ASSERT(mkdtemp(dir) != NULL);
	snprintf(ini, ini_len, "%s/test.ini", dir);
	rewrite_ini(ini, text);
}

RDP_TEST(perf, rdp_perf_srq_on_many_endpoints_zero_enomem_rnr)
{
	static char out[1 << 16], text[1 << 16];
	char dir[256], ini[512], args[1024], bad[128] = "";

	write_ini(dir, sizeof(dir), ini, sizeof(ini), "[global]\nsrq = on\nsrq_size = 1024\n"
		  "srq_floor = 8\nsrq_lease_max = 64\nrndv_threshold = 65536\nrnr_retry = 0\n");
	snprintf(args, sizeof(args), "-c %s -e 8 -m bw,bidir -s 64,4096,262144 -w 16 -n 2000 -q",
		 ini);
	run_perf_json(args, out, sizeof(out), text, sizeof(text));
	RDP_ASSERT_MSG(strstr(text, "\"endpoints\": 8,") != NULL, "%s", text);
	RDP_ASSERT_EQ(each_number(text, "messages", positive, bad, sizeof(bad)), 6);
	RDP_ASSERT_EQ(each_number(text, "enomem", zero, bad, sizeof(bad)), 6);
	RDP_ASSERT_EQ(each_number(text, "rnr", zero, bad, sizeof(bad)), 6);
	RDP_ASSERT_MSG(bad[0] == '\0', "%s in\n%s", bad, text);
	unlink(ini);
	rmdir(dir);
	return 0;
}

/*
 * The configuration's mode drives rdp-perf as --pipeline does (run_mode in
 * its JSON); an app_lcore other than the main lcore, or a mode set in an
 * [lcore.N] section, is refused naming the file, line and key.
 */
RDP_TEST(perf, rdp_perf_runs_the_mode_its_configuration_names)
{
	static char out[1 << 16], text[1 << 16];
	char dir[256], ini[512], args[1024], cmd[1200];

	write_ini(dir, sizeof(dir), ini, sizeof(ini), "[global]\nmode = pipeline\n");
	snprintf(args, sizeof(args), "-c %s -m bw -s 64 -n 2000 -q", ini);
	run_perf_json(args, out, sizeof(out), text, sizeof(text));
	RDP_ASSERT_MSG(strstr(text, "\"run_mode\": \"pipeline\"") != NULL, "%s", text);

	rewrite_ini(ini, "[global]\nmode = pipeline\napp_lcore = 5\n");
	snprintf(cmd, sizeof(cmd), "%s -- -c %s -m bw -s 64 -n 100 -q 2>&1", perf_bin(), ini);
	RDP_ASSERT_EQ(run(cmd, out, sizeof(out)), 1);
	RDP_ASSERT_MSG(strstr(out, "test.ini:3: [global] app_lcore = 5: rdp-perf takes pipeline "
			      "events on the EAL main lcore: -1 or 0") != NULL, "%s", out);

	rewrite_ini(ini, "[global]\n[lcore.1]\nmode = pipeline\n");
	RDP_ASSERT_EQ(run(cmd, out, sizeof(out)), 1);
	RDP_ASSERT_MSG(strstr(out, "test.ini:3: [lcore.1] mode = pipeline: rdp-perf runs every "
			      "endpoint in one mode: set it in [global]") != NULL, "%s", out);
	unlink(ini);
	rmdir(dir);
	return 0;
}

/*
 * A separate rdp-perf server on a free port of 127.0.0.1 (in @p addr),
 * started as a user would, with default configuration and @p extra (NULL:
 * none) after its "--listen"; its output goes to @p log_path. Returns once
 * it listens; the test kills it.
 */
static pid_t
server_start(char *addr, size_t addrlen, const char *log_path, const char *extra)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	static char log[1 << 16];
	double deadline;
	size_t n;
	pid_t srv;
	FILE *f;
	int fd;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	RDP_ASSERT(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	RDP_ASSERT_EQ(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	RDP_ASSERT_EQ(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	close(fd);
	snprintf(addr, addrlen, "127.0.0.1:%u", ntohs(sa.sin_port));
	fflush(stdout);
	srv = fork();
	RDP_ASSERT(srv >= 0);
	if (srv == 0) {
		int out_fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		/* a failed assertion ends the test before its kill(): not this server */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (out_fd < 0)
			_exit(126);
		dup2(out_fd, STDOUT_FILENO);
		dup2(out_fd, STDERR_FILENO);
		execl(perf_bin(), perf_bin(), "-l", "0-1", "--no-huge", "--no-pci",
		      "--no-shconf", "--", "--server", "--listen", addr, extra, (char *)NULL);
		_exit(127);
	}
	deadline = rdp_clock_s() + 20;
	for (;;) {
		f = fopen(log_path, "r");
		if (f != NULL) {
			n = fread(log, 1, sizeof(log) - 1, f);
			log[n] = '\0';
			fclose(f);
			if (strstr(log, "listening on port") != NULL)
				return srv;
		}
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "the server did not listen:\n%s", log);
		usleep(20000);
	}
}

/*
 * A client's clean close seen from a server in a process of its own: the
 * server logs each endpoint "closed by the peer" and nothing that reads as
 * a failure, though the client's QPs and control connections go (with its
 * process) before the server's application closes its side. Its control
 * thread used to log each such QP "went to error (device event)" at NOTICE.
 */
RDP_TEST(perf, rdp_perf_server_logs_a_clients_clean_close_as_a_close_only)
{
	static char out[1 << 16], log[1 << 16];
	char log_path[64], port[32], cmd[1024];
	const char *p;
	unsigned int closes = 0;
	int rc, status;
	size_t n = 0;
	pid_t srv;
	FILE *f;

	snprintf(log_path, sizeof(log_path), "perf_close_server_%d.log", (int)getpid());
	srv = server_start(port, sizeof(port), log_path, NULL);
	snprintf(cmd, sizeof(cmd), "%s -l 0-1 --main-lcore 1 --no-huge --no-pci --no-shconf -- "
		 "--connect %s -e 4 -m bw -s 64 -n 20000 -q 2>&1", perf_bin(), port);
	rc = run(cmd, out, sizeof(out));
	printf("client: exit %d\n%s", rc, out);
	RDP_ASSERT_EQ(rc, 0);
	usleep(500000); /* what the client's end raised at the server has come */
	RDP_ASSERT_EQ(kill(srv, SIGINT), 0);
	RDP_ASSERT(waitpid(srv, &status, 0) == srv);
	f = fopen(log_path, "r");
	RDP_ASSERT(f != NULL);
	n = fread(log, 1, sizeof(log) - 1, f);
	log[n] = '\0';
	fclose(f);
	unlink(log_path);
	printf("server: status 0x%x\n%s", status, log);
	for (p = log; (p = strstr(p, "closed by the peer")) != NULL; p++)
		closes++;
	RDP_ASSERT_MSG(closes == 4, "%u closes logged:\n%s", closes, log);
	RDP_ASSERT_MSG(strstr(log, "went to error") == NULL && strstr(log, "failed") == NULL &&
		       strstr(log, "control connection") == NULL,
		       "a clean close logged as a failure:\n%s", log);
	return 0;
}

/*
 * A server killed (SIGKILL) under a client's stream of 8 endpoints: each
 * endpoint fails as one whose peer is gone, whatever the client heard of
 * first, the control connection's end, its QP's error (the shm driver
 * sees the peer's process go and moves the QP to error) or its flushed
 * completions.
 */
RDP_TEST(perf, rdp_perf_client_of_a_killed_server_says_each_endpoints_peer_is_gone)
{
	static char out[1 << 16];
	char log_path[64], port[32], cmd[1024];
	unsigned int gone = 0;
	const char *p;
	int status;
	pid_t srv;

	snprintf(log_path, sizeof(log_path), "perf_killed_server_%d.log", (int)getpid());
	srv = server_start(port, sizeof(port), log_path, NULL);
	snprintf(cmd, sizeof(cmd), "(sleep 2; kill -KILL %d) & timeout 60 %s -l 0-1 --main-lcore 1 "
		 "--no-huge --no-pci --no-shconf -- --connect %s -e 8 -m bw -s 64 -d 20 -q 2>&1; "
		 "wait", (int)srv, perf_bin(), port);
	(void)run(cmd, out, sizeof(out));
	RDP_ASSERT(waitpid(srv, &status, 0) == srv);
	unlink(log_path);
	printf("client:\n%s", out);
	RDP_ASSERT_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		       "the server was not killed (status 0x%x)", status);
	for (p = out; (p = strstr(p, "(peer gone)")) != NULL; p++)
		gone++;
	RDP_ASSERT_MSG(gone == 8 && strstr(out, "went to error") == NULL &&
		       strstr(out, "WR_FLUSH_ERR") == NULL,
		       "%u of 8 endpoints said their peer is gone:\n%s", gone, out);
	return 0;
}

/*
 * A client whose -s is above what a separate server accepts (started
 * without --max-msg: max_msg_size 1 MiB) says so, with both numbers and
 * the option that fixes it, and fails before it measures. It used to
 * report 0 msg/s and exit 0: every allocation failed with EMSGSIZE, which
 * it took for a full pool to wait out.
 */
RDP_TEST(perf, rdp_perf_says_when_a_size_is_above_what_the_server_accepts)
{
	static char out[1 << 16];
	char log_path[64], port[32], cmd[1024];
	int rc, status;
	pid_t srv;

	snprintf(log_path, sizeof(log_path), "perf_msgsize_server_%d.log", (int)getpid());
	srv = server_start(port, sizeof(port), log_path, NULL);
	snprintf(cmd, sizeof(cmd), "timeout 60 %s -l 0-1 --main-lcore 1 --no-huge --no-pci "
		 "--no-shconf -- --connect %s -e 2 -m bw -s 64,2097152 -d 0.2 -q 2>&1",
		 perf_bin(), port);
	rc = run(cmd, out, sizeof(out));
	RDP_ASSERT_EQ(kill(srv, SIGINT), 0);
	RDP_ASSERT(waitpid(srv, &status, 0) == srv);
	unlink(log_path);
	printf("client: exit %d\n%s", rc, out);
	RDP_ASSERT_EQ(rc, 1);
	RDP_ASSERT_MSG(strstr(out, "-s 2097152 is above the 1048576 bytes") != NULL, "%s", out);
	RDP_ASSERT_MSG(strstr(out, "--max-msg 2097152") != NULL, "%s", out);
	RDP_ASSERT_MSG(strstr(out, "msg/s") == NULL, "measured anyway:\n%s", out);
	return 0;
}

/*
 * rdp-perf with @p args after its "--", bounded to 60 s; its output (also
 * printed) in @p out. Returns its exit status.
 */
static int
run_perf(const char *args, char *out, size_t len)
{
	char cmd[512];
	int rc;

	snprintf(cmd, sizeof(cmd), "timeout 60 %s -- %s 2>&1", perf_bin(), args);
	rc = run(cmd, out, len);
	printf("%s: exit %d\n%s", cmd, rc, out);
	return rc;
}

/*
 * More endpoints than the poller lcores hold (-e 100, max_endpoints 64 on
 * the one poller) is refused before any handshake, naming the option and
 * the key. It used to connect them all and log a failed handshake for
 * each one over the limit, then end on "No space left on device".
 */
RDP_TEST(perf, rdp_perf_refuses_more_endpoints_than_its_lcores_hold)
{
	static char out[1 << 16];

	RDP_ASSERT_EQ(run_perf("-e 100 -m lat -s 64 -d 0.1 -q", out, sizeof(out)), 1);
	RDP_ASSERT_MSG(strstr(out, "-e 100: above the 64 endpoints the poller lcores hold "
			      "(max_endpoints") != NULL, "%s", out);
	RDP_ASSERT_MSG(strstr(out, "handshake") == NULL, "handshakes were made:\n%s", out);
	return 0;
}

/*
 * A loopback run in pipeline mode on the default lcores puts the client's
 * event loop, which spins, on the CPU of the server's poller, which spins
 * too: every hop of a ping-pong then waits for a scheduler time slice (a
 * 64 B round trip of milliseconds). rdp-perf says so, and how to place
 * the lcores instead; it used to report the figures without a word.
 */
RDP_TEST(perf, rdp_perf_says_a_pipeline_on_the_default_lcores_shares_a_cpu)
{
	static char out[1 << 16];

	RDP_ASSERT_EQ(run_perf("--pipeline -m lat -s 64 -n 50 -q", out, sizeof(out)), 0);
	RDP_ASSERT_MSG(strstr(out, "--pipeline on the default lcores: the client's event loop "
			      "shares a CPU with the loopback server's poller") != NULL, "%s", out);
	RDP_ASSERT_EQ(run_perf("-m lat -s 64 -n 50 -q", out, sizeof(out)), 0);
	RDP_ASSERT_MSG(strstr(out, "shares a CPU") == NULL, "said in run-to-completion:\n%s", out);
	return 0;
}
