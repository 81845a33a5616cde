/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdp-blk end to end: the server and the loader are processes of the
 * rdp-blk binary ($RDP_BLK_BIN), on the driver under test. Verified runs in
 * one process and across processes; a --sync server killed mid-run keeps
 * every acknowledged write; the check names a lost or corrupted block; bad
 * requests from this process get the right error reply and the server
 * keeps serving; one-sided requests move their blocks by RDMA, and a bad
 * descriptor gets EFAULT or fails only its endpoint; bad arguments exit 2
 * naming the option.
 *
 * Without EAL options rdp-blk pins a server's poller to the second CPU and
 * a loader's to the first, so the two never share a CPU. Servers run on
 * $RDP_TEST_PEER_DRIVER when it is set (two hosts in the rxe lane).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "blk_proto.h"
#include "rdp_cfg.h"
#include "rdp_ep.h"
#include "rdp_rdma.h"
#include "rdp_test.h"

#define MAX_ARGS 48

/* $RDP_BLK_BIN (set by apps/test/meson.build), else rdp-blk on the PATH (the rxe lane). */
static const char *
blk_bin(void)
{
	static char found[4096];
	const char *b = getenv("RDP_BLK_BIN"), *path = getenv("PATH");

	if (b != NULL && b[0] != '\0') {
		RDP_ASSERT_MSG(access(b, X_OK) == 0, "RDP_BLK_BIN=%s: %s", b, strerror(errno));
		return b;
	}
	if (found[0] != '\0')
		return found;
	while (path != NULL && *path != '\0') {
		size_t n = strcspn(path, ":");

		snprintf(found, sizeof(found), "%.*s/rdp-blk", (int)n, path);
		if (n > 0 && access(found, X_OK) == 0)
			return found;
		path += n + (path[n] == ':');
	}
	found[0] = '\0';
	rdp_test_fail(__FILE__, __LINE__, "no rdp-blk binary: set RDP_BLK_BIN or put it on the PATH");
}

/* The driver of a process: $RDP_TEST_PEER_DRIVER for servers when set (two hosts). */
static const char *
driver_of(const char *cmd)
{
	const char *peer = getenv("RDP_TEST_PEER_DRIVER");

	if (strcmp(cmd, "serve") == 0 && peer != NULL && peer[0] != '\0')
		return peer;
	return rdp_test_driver();
}

/* ---------------------------------------------------------------------- */
/* Scratch directory and files                                            */
/* ---------------------------------------------------------------------- */

static char scratch[256];

static void
scratch_init(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(scratch, sizeof(scratch), "%s/rdp-blk-test-XXXXXX",
		 tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
	RDP_ASSERT_MSG(mkdtemp(scratch) != NULL, "mkdtemp: %s", strerror(errno));
}

static int
rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	RTE_SET_USED(sb);
	RTE_SET_USED(flag);
	RTE_SET_USED(ftw);
	return remove(path);
}

static void
scratch_remove(void)
{
	nftw(scratch, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

/* Paths given by path_of(). */
static struct {
	char name[64];
	char path[512];
} paths[64];
static unsigned int nb_paths;

/*
 * A path in the scratch directory, made on first use. The same name gives
 * the same string, never overwritten: a test may hold any number of them.
 */
static const char *
path_of(const char *name)
{
	unsigned int i;

	if (scratch[0] == '\0')
		scratch_init();
	for (i = 0; i < nb_paths; i++)
		if (strcmp(paths[i].name, name) == 0)
			return paths[i].path;
	RDP_ASSERT_MSG(nb_paths < RTE_DIM(paths) && strlen(name) < sizeof(paths[0].name),
		       "path_of(%s): too many names or too long", name);
	snprintf(paths[nb_paths].name, sizeof(paths[0].name), "%s", name);
	snprintf(paths[nb_paths].path, sizeof(paths[0].path), "%s/%s", scratch, name);
	return paths[nb_paths++].path;
}

/* The whole of a (log) file, NUL-terminated; static until the next call. */
static const char *
slurp(const char *path)
{
	static char buf[1 << 16];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	RDP_ASSERT_MSG(fd >= 0, "open %s: %s", path, strerror(errno));
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* Value of "key": N inside the JSON object "obj" (NULL: top level). */
static uint64_t
json_u64(const char *json, const char *obj, const char *key)
{
	char pat[64];
	const char *p = json;

	if (obj != NULL) {
		snprintf(pat, sizeof(pat), "\"%s\": {", obj);
		p = strstr(p, pat);
		RDP_ASSERT_MSG(p != NULL, "no object %s in:\n%s", obj, json);
	}
	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = strstr(p, pat);
	RDP_ASSERT_MSG(p != NULL, "no key %s in:\n%s", key, json);
	return strtoull(p + strlen(pat), NULL, 10);
}

/* ---------------------------------------------------------------------- */
/* rdp-blk processes                                                      */
/* ---------------------------------------------------------------------- */

/*
 * Start `rdp-blk -- CMD --driver D ARGS...` with stdout and stderr in
 * @p log. Descriptors without close-on-exec (the server's --port-fd) are
 * inherited.
 */
static pid_t
spawn_blk(const char *log, const char *cmd, const char *const *args)
{
	char *argv[MAX_ARGS];
	unsigned int n = 0;
	pid_t pid;
	int fd;

	argv[n++] = (char *)blk_bin();
	argv[n++] = (char *)"--";
	argv[n++] = (char *)cmd;
	argv[n++] = (char *)"--driver";
	argv[n++] = (char *)driver_of(cmd);
	/* a configuration for both sides, e.g. the rxe lane's longer timeout */
	if (getenv("RDP_TEST_CONFIG") != NULL) {
		argv[n++] = (char *)"-c";
		argv[n++] = getenv("RDP_TEST_CONFIG");
	}
	while (*args != NULL && n < MAX_ARGS - 1)
		argv[n++] = (char *)*args++;
	argv[n] = NULL;
	fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	RDP_ASSERT_MSG(fd >= 0, "open %s: %s", log, strerror(errno));
	fflush(stdout);
	pid = fork();
	RDP_ASSERT(pid >= 0);
	if (pid == 0) {
		/* dup2 clears close-on-exec on the copies */
		if (dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test */
		execv(argv[0], argv);
		_exit(127);
	}
	close(fd);
	return pid;
}

/* Wait for a process; its exit status, or 128 + signal. Fails after the deadline. */
static int
reap(pid_t pid, double timeout_s, const char *what, const char *log)
{
	double deadline = rdp_clock_s() + timeout_s;
	int status;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			break;
		RDP_ASSERT(r == 0);
		if (rdp_clock_s() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			rdp_test_fail(__FILE__, __LINE__, "%s still running after %.0f s; its "
				      "output:\n%s", what, timeout_s, slurp(log));
		}
		usleep(10000);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Run `rdp-blk -- CMD ...` to its end; returns its exit status. */
static int
run_blk(const char *log, double timeout_s, const char *cmd, ...)
{
	const char *args[MAX_ARGS];
	unsigned int n = 0;
	va_list ap;
	double t0 = rdp_clock_s();
	int rc;

	va_start(ap, cmd);
	while ((args[n] = va_arg(ap, const char *)) != NULL && n < MAX_ARGS - 1)
		n++;
	va_end(ap);
	args[n] = NULL;
	rc = reap(spawn_blk(log, cmd, args), timeout_s, cmd, log);
	printf("rdp-blk %s: exit %d after %.1f s\n", cmd, rc, rdp_clock_s() - t0);
	return rc;
}

/* Start a server (`serve ARGS... --listen 127.0.0.1:0`) of @p n devices; its pid and ports. */
static pid_t
start_server_v(const char *log, const char *listen, int *ports, unsigned int n, va_list ap)
{
	const char *args[MAX_ARGS];
	unsigned int k = 0, i;
	char fdstr[16];
	int fds[2];
	pid_t pid;

	RDP_ASSERT(pipe(fds) == 0);
	snprintf(fdstr, sizeof(fdstr), "%d", fds[1]);
	while ((args[k] = va_arg(ap, const char *)) != NULL && k < MAX_ARGS - 5)
		k++;
	args[k++] = "--listen";
	args[k++] = listen;
	args[k++] = "--port-fd";
	args[k++] = fdstr;
	args[k] = NULL;
	pid = spawn_blk(log, "serve", args);
	close(fds[1]);
	for (i = 0; i < n; i++) {
		if (read(fds[0], &ports[i], sizeof(ports[i])) != sizeof(ports[i])) {
			close(fds[0]);
			reap(pid, 5, "serve", log);
			rdp_test_fail(__FILE__, __LINE__, "the server did not start:\n%s", slurp(log));
		}
	}
	close(fds[0]);
	return pid;
}

/* Start a server of one device; returns its pid and port. */
static pid_t
start_server(const char *log, int *port, ...)
{
	va_list ap;
	pid_t pid;

	va_start(ap, port);
	pid = start_server_v(log, "127.0.0.1:0", port, 1, ap);
	va_end(ap);
	return pid;
}

/* Start a server of one device on 127.0.0.1:@p port (a restart); returns its pid. */
static pid_t
start_server_on(const char *log, int port, ...)
{
	char listen[32];
	int got = 0;
	va_list ap;
	pid_t pid;

	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	va_start(ap, port);
	pid = start_server_v(log, listen, &got, 1, ap);
	va_end(ap);
	RDP_ASSERT_EQ(got, port);
	return pid;
}

/* Start a server of two devices (ports[0], ports[1]). */
static pid_t
start_server2(const char *log, int ports[2], ...)
{
	va_list ap;
	pid_t pid;

	va_start(ap, ports);
	pid = start_server_v(log, "127.0.0.1:0", ports, 2, ap);
	va_end(ap);
	return pid;
}

/* SIGTERM a server and expect a clean exit. */
static void
stop_server(pid_t pid, const char *log)
{
	int rc;

	RDP_ASSERT(kill(pid, SIGTERM) == 0);
	rc = reap(pid, 10, "serve", log);
	RDP_ASSERT_MSG(rc == 0, "the server exited with %d:\n%s", rc, slurp(log));
}

static void
assert_output(const char *log, const char *what)
{
	const char *out = slurp(log);

	RDP_ASSERT_MSG(strstr(out, what) != NULL, "%s lacks \"%s\":\n%s", log, what, out);
}

static void
assert_exit(int rc, int want, const char *log)
{
	RDP_ASSERT_MSG(rc == want, "exit status %d, expected %d; output:\n%s", rc, want,
		       slurp(log));
}

/* A verified run's JSON: reads and writes happened, everything checked out. */
static void
assert_verified(const char *json_path, bool reads, bool writes)
{
	const char *j = slurp(json_path);

	RDP_ASSERT_MSG(strstr(j, "\"ok\": true") != NULL, "%s", j);
	RDP_ASSERT_EQ(json_u64(j, NULL, "mismatches"), 0);
	RDP_ASSERT_EQ(json_u64(j, NULL, "error_replies"), 0);
	if (reads) {
		RDP_ASSERT_MSG(json_u64(j, "read", "total_ios") > 0, "no reads:\n%s", j);
		RDP_ASSERT_EQ(json_u64(j, NULL, "verified_blocks"),
			      json_u64(j, "read", "io_bytes") / BLK_BLOCK_SIZE);
	}
	if (writes)
		RDP_ASSERT_MSG(json_u64(j, "write", "total_ios") > 0, "no writes:\n%s", j);
}

/* The syncs per second of a server's last progress line, -1 without one. */
static double
syncs_per_s(const char *log)
{
	const char *p = NULL, *q = log;

	while ((q = strstr(q, " syncs/s")) != NULL)
		p = q++;
	if (p == NULL)
		return -1;
	while (p > log && p[-1] != ' ')
		p--;
	return strtod(p, NULL);
}

/* ---------------------------------------------------------------------- */
/* Verified runs                                                          */
/* ---------------------------------------------------------------------- */

RDP_TEST(e2e, blk_verify_randrw_in_one_process_checks_every_read)
{
	const char *log = path_of("load.log"), *json = path_of("load.json");
	const char *j;

	assert_exit(run_blk(log, 60, "load", "--in-process", "--rw", "randrw", "--verify",
			    "--size", "1M", "--runtime", "2", "--output-format=json", "--output", json, NULL), 0, log);
	assert_output(log, ", 0 mismatches");
	assert_verified(json, true, true);
	j = slurp(json);
	/* the range is small, so reads find what this run wrote */
	RDP_ASSERT_MSG(json_u64(j, NULL, "verified_acknowledged") > 0, "%s", j);
	scratch_remove();
	return 0;
}

RDP_TEST(e2e, blk_verify_across_processes_resumes_from_the_state_file)
{
	const char *slog = path_of("serve.log"), *log = path_of("load.log");
	const char *json = path_of("load.json"), *state = path_of("state.bin");
	char port_s[16], addr[64];
	pid_t srv;
	int port;

	/* 4 MiB: the check reads all of it back, across rxe under emulation too */
	srv = start_server(slog, &port, "--memory", "4M", NULL);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	snprintf(port_s, sizeof(port_s), "%d", port);
	/* sequential multi-block writes, then random reads and writes from two
	 * endpoints that must find the first run's data */
	assert_exit(run_blk(log, 60, "load", "--connect", addr, "--rw", "write", "--bs", "16K",
			    "--verify", "--state", state, "--runtime", "1.5", "--output-format=json", "--output", json,
			    NULL), 0, log);
	assert_verified(json, false, true);
	assert_exit(run_blk(log, 60, "load", "--connect", addr, "--rw", "randrw", "--numjobs",
			    "2", "--iodepth", "16", "--verify", "--state", state, "--runtime", "1.5",
			    "--output-format=json", "--output", json, NULL), 0, log);
	assert_verified(json, true, true);
	assert_exit(run_blk(log, 60, "load", "--connect", addr, "--check", "--state", state,
			    "--output-format=json", "--output", json, NULL), 0, log);
	assert_output(log, "check: 8192 blocks read back and verified");
	assert_verified(json, true, false);
	RDP_ASSERT_MSG(json_u64(slurp(json), NULL, "verified_acknowledged") > 0, "%s",
		       slurp(json));
	stop_server(srv, slog);
	assert_output(slog, "0 refused, 0 I/O errors");
	scratch_remove();
	return 0;
}

/* 512-byte and 1 MiB requests (above rndv_threshold: rendezvous), verified. */
RDP_TEST(e2e, blk_verify_512_byte_and_1_mib_blocks)
{
	static const char *const sizes[] = { "512", "1m" };
	const char *log = path_of("load.log"), *json = path_of("load.json");
	unsigned int i;

	for (i = 0; i < RTE_DIM(sizes); i++) {
		const char *j;

		assert_exit(run_blk(log, 60, "load", "--in-process", "--rw", "randrw", "--bs",
				    sizes[i], "--iodepth", "4", "--verify", "--size", "16M",
				    "--runtime", "1", "--output-format=json", "--output", json, NULL),
			    0, log);
		assert_verified(json, true, true);
		j = slurp(json);
		RDP_ASSERT_MSG(strstr(j, i == 0 ? "\"bs\": \"512\"" : "\"bs\": \"1048576\"") != NULL,
			       "%s", j);
		/* fio's fields: bytes, KiB/s, clat percentiles in ns */
		RDP_ASSERT_MSG(json_u64(j, "read", "io_bytes") ==
			       json_u64(j, "read", "total_ios") * (i == 0 ? 512 : 1048576), "%s", j);
		RDP_ASSERT_MSG(json_u64(j, "read", "bw") > 0 && json_u64(j, "read", "99.000000") > 0 &&
			       json_u64(j, "read", "min") <= json_u64(j, "read", "max"), "%s", j);
		printf("ok: --bs %s verified, %" PRIu64 " reads, %" PRIu64 " writes\n", sizes[i],
		       json_u64(j, "read", "total_ios"), json_u64(j, "write", "total_ios"));
	}
	scratch_remove();
	return 0;
}

/*
 * Reads of 128 KiB go back by rendezvous, out of the server's send arena,
 * and the server holds the requests it has no reply buffer for. With more
 * requests in flight than the loader has credits (300 against a receive
 * queue of 256; 16 against an SRQ floor of 8), every credit can sit in a
 * held request while the arena waits for FINs, which need credits: the
 * FINs must go first and keep credits set aside for them, or the run
 * stops dead. Against a lease held at srq_lease_max (4 endpoints of 16
 * requests against a lease_max of 16, writes of 1 MiB both ways), the
 * credit a descriptor brings for its FIN comes beyond lease_max.
 */
RDP_TEST(e2e, blk_rendezvous_replies_beyond_the_loaders_credits_keep_flowing)
{
	static const struct {
		const char *conf, *rw, *bs, *numjobs, *iodepth, *what;
		uint64_t min_ios;
	} runs[] = {
		{ "[global]\n", "randread", "128k", "1", "300", "RQ", 1000 },
		{ "[global]\nsrq = on\nsrq_floor = 8\nsrq_lease_max = 64\n", "randread", "128k",
		  "1", "16", "SRQ", 1000 },
		{ "[global]\nsrq = on\nsrq_floor = 8\nsrq_lease_max = 16\n", "randrw", "1m", "4",
		  "16", "SRQ at lease_max", 200 },
	};
	const char *log = path_of("load.log"), *json = path_of("load.json");
	const char *cfg = path_of("rv.conf");
	unsigned int i;

	for (i = 0; i < RTE_DIM(runs); i++) {
		FILE *f = fopen(cfg, "w");
		uint64_t ios;

		RDP_ASSERT(f != NULL);
		fputs(runs[i].conf, f);
		RDP_ASSERT(fclose(f) == 0);
		assert_exit(run_blk(log, 60, "load", "--in-process", "-c", cfg, "--rw", runs[i].rw,
				    "--bs", runs[i].bs, "--numjobs", runs[i].numjobs, "--iodepth",
				    runs[i].iodepth, "--size", "64M", "--runtime", "1",
				    "--output-format=json", "--output", json, NULL),
			    0, log);
		ios = json_u64(slurp(json), "read", "total_ios") +
		      json_u64(slurp(json), "write", "total_ios");
		/* a stall completes one window at most */
		RDP_ASSERT_MSG(ios > runs[i].min_ios, "%s, %s %s x%s iodepth %s: %" PRIu64 " I/Os\n%s",
			       runs[i].what, runs[i].rw, runs[i].bs, runs[i].numjobs, runs[i].iodepth,
			       ios, slurp(log));
		printf("ok: %s, %s %s x%s iodepth %s: %" PRIu64 " I/Os\n", runs[i].what, runs[i].rw,
		       runs[i].bs, runs[i].numjobs, runs[i].iodepth, ios);
	}
	scratch_remove();
	return 0;
}

/*
 * `load --in-process` of 1 MiB requests from two endpoints, @p iodepth
 * each, for @p runtime seconds: its JSON (the log in load.log).
 */
static const char *
two_loaders_of_1m(const char *rw, const char *iodepth, const char *runtime)
{
	const char *log = path_of("load.log"), *json = path_of("load.json");

	assert_exit(run_blk(log, 60, "load", "--in-process", "--rw", rw, "--bs", "1m",
			    "--numjobs", "2", "--iodepth", iodepth, "--size", "64M", "--runtime",
			    runtime, "--output-format=json", "--output", json, NULL),
		    0, log);
	return slurp(json);
}

/*
 * The send arena is the poller's, shared by its endpoints. A reply of
 * 1 MiB on shm takes the whole of its in-use budget: when a FIN frees it,
 * the endpoint that FIN arrived on is offered its held requests first and
 * would take the room again at once, every time, while the other waits
 * the whole run. Freed room goes to the endpoints in the order they
 * waited, so no read waits anywhere near half the run.
 */
RDP_TEST(e2e, blk_arena_room_goes_to_the_endpoints_in_the_order_they_waited)
{
	const char *j = two_loaders_of_1m("randread", "64", "2");
	const char *log = path_of("load.log");
	uint64_t max_ns;

	max_ns = json_u64(j, "read", "max");
	printf("%" PRIu64 " reads of 1 MiB from 2 endpoints in 2 s, the longest %.1f ms\n",
	       json_u64(j, "read", "total_ios"), (double)max_ns / 1e6);
	RDP_ASSERT_MSG(json_u64(j, "read", "total_ios") > 100, "barely moved:\n%s", slurp(log));
	RDP_ASSERT_MSG(max_ns < 1000000000ull, "a read waited %.1f ms of a 2 s run:\n%s",
		       (double)max_ns / 1e6, slurp(log));
	scratch_remove();
	return 0;
}

/*
 * --rwmixread is the mix of requests issued, as fio's: a request that
 * waits for a send buffer keeps its operation. Writes of 1 MiB wait for
 * the loader's send arena, reads do not; a slot that chose again at each
 * retry would turn most waiting writes into reads (1 in 8 writes at 50).
 */
RDP_TEST(e2e, blk_rwmix_holds_when_writes_wait_for_send_buffers)
{
	const char *j = two_loaders_of_1m("randrw", "16", "1");
	const char *log = path_of("load.log");
	uint64_t reads, writes;

	reads = json_u64(j, "read", "total_ios");
	writes = json_u64(j, "write", "total_ios");
	printf("%" PRIu64 " reads, %" PRIu64 " writes of 1 MiB at --rwmixread 50\n", reads, writes);
	RDP_ASSERT_MSG(reads + writes > 50, "barely moved:\n%s", slurp(log));
	RDP_ASSERT_MSG(writes * 10 >= (reads + writes) * 3 && reads * 10 >= (reads + writes) * 3,
		       "%" PRIu64 " reads against %" PRIu64 " writes at --rwmixread 50:\n%s", reads,
		       writes, slurp(log));
	scratch_remove();
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Durability across a server crash                                       */
/* ---------------------------------------------------------------------- */

/* Wait (up to 90 s) for the loader's first progress line and the server's first fdatasync. */
static void
await_synced_progress(const char *log, const char *slog)
{
	double deadline = rdp_clock_s() + 90; /* generous: the CI machine may be crowded */

	while (strstr(slurp(log), " IOPS (read ") == NULL) {
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "no progress from the loader:\n%s", slurp(log));
		usleep(20000);
	}
	while (syncs_per_s(slurp(slog)) <= 0) {
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "no fdatasync in the server's progress:\n%s",
			       slurp(slog));
		usleep(20000);
	}
}

RDP_TEST(e2e, blk_sync_server_killed_mid_run_keeps_every_acknowledged_write)
{
	const char *slog = path_of("serve.log"), *log = path_of("load.log");
	const char *state = path_of("state.bin"), *disk = path_of("disk.img");
	const char *json = path_of("check.json");
	const char *args[] = { "--connect", NULL, "--rw", "randwrite", "--verify", "--state",
			       state, "--runtime", "240", NULL };
	char addr[64];
	pid_t srv, ld;
	int port, rc;

	srv = start_server(slog, &port, "--file", disk, "--size", "16M", "--sync", NULL);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	args[1] = addr;
	ld = spawn_blk(log, "load", args);
	/* let writes be acknowledged and synced, then crash */
	await_synced_progress(log, slog);
	RDP_ASSERT(kill(srv, SIGKILL) == 0);
	RDP_ASSERT_EQ(reap(srv, 10, "serve", slog), 128 + SIGKILL);
	/* the loader notices, saves what was acknowledged and fails */
	rc = reap(ld, 60, "load", log);
	assert_exit(rc, 1, log);
	assert_output(log, "(the server is gone?)");
	assert_output(log, "generations saved to");
	assert_output(log, ", 0 mismatches");

	/* a new server on the same file; every acknowledged write must be there */
	srv = start_server(slog, &port, "--file", disk, "--sync", NULL);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	assert_exit(run_blk(log, 60, "load", "--connect", addr, "--check", "--state", state,
			    "--output-format=json", "--output", json, NULL), 0, log);
	assert_output(log, "check: 32768 blocks read back and verified");
	assert_verified(json, true, false);
	RDP_ASSERT_MSG(json_u64(slurp(json), NULL, "verified_acknowledged") > 0,
		       "no acknowledged write was checked:\n%s", slurp(json));
	printf("%s", slurp(log));
	stop_server(srv, slog);
	scratch_remove();
	return 0;
}

/*
 * With --reconnect the loader outlives its server: killed mid-run (kill -9)
 * and started again on the same file and port, the server gets the
 * loader's endpoints back, and the run ends well, every block read
 * verified: 0 mismatches, the requests lost with the first server counted.
 */
RDP_TEST(e2e, blk_load_reconnects_to_a_server_killed_and_restarted_with_0_mismatches)
{
	const char *slog = path_of("serve.log"), *slog2 = path_of("serve2.log");
	const char *log = path_of("load.log"), *disk = path_of("disk.img");
	const char *json = path_of("load.json");
	const char *args[] = { "--connect", NULL, "--rw", "randrw", "--verify", "--iodepth", "8",
			       "--runtime", NULL, "--reconnect", "60", "--reconnect-delay", "50",
			       "--output-format=json", "--output", json, NULL };
	char addr[64], runtime[24];
	const char *j;
	pid_t srv, ld;
	int port, rc;

	/* through the page cache, which outlives the process: tmpfs (the rxe
	 * guest's) refuses O_DIRECT */
	srv = start_server(slog, &port, "--file", disk, "--size", "16M", "--sync", "--no-direct",
			   NULL);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	args[1] = addr;
	/* the loader's run must outlast the kill (after its second progress
	 * line) and the restart: 8 s here, more where a restart is slow (the
	 * rxe lane's emulated guest sets RDP_BLK_RECONNECT_RUNTIME) */
	snprintf(runtime, sizeof(runtime), "%" PRIu64,
		 rdp_test_env_u64("RDP_BLK_RECONNECT_RUNTIME", 8));
	args[8] = runtime;
	ld = spawn_blk(log, "load", args);
	await_synced_progress(log, slog);
	RDP_ASSERT(kill(srv, SIGKILL) == 0);
	RDP_ASSERT_EQ(reap(srv, 10, "serve", slog), 128 + SIGKILL);
	/* the loader waits for it (its attempts are refused meanwhile) */
	usleep(300000);
	srv = start_server_on(slog2, port, "--file", disk, "--sync", "--no-direct", NULL);
	rc = reap(ld, 120, "load", log);
	assert_exit(rc, 0, log);
	assert_output(log, "reconnecting in");
	assert_output(log, "connected again");
	assert_output(log, ", 0 mismatches");
	j = slurp(json);
	assert_verified(json, true, true);
	RDP_ASSERT_MSG(json_u64(j, NULL, "reconnects") == 1, "%s", j);
	printf("%s", slurp(log));
	stop_server(srv, slog2);
	scratch_remove();
	return 0;
}

/* Overwrite 4096 bytes of block @p b of a file; the old bytes go to @p save. */
static void
poke_block(const char *file, uint64_t b, const uint8_t *data, uint8_t *save)
{
	int fd = open(file, O_RDWR);

	RDP_ASSERT(fd >= 0);
	if (save != NULL)
		RDP_ASSERT(pread(fd, save, BLK_BLOCK_SIZE, b * BLK_BLOCK_SIZE) == BLK_BLOCK_SIZE);
	RDP_ASSERT(pwrite(fd, data, BLK_BLOCK_SIZE, b * BLK_BLOCK_SIZE) == BLK_BLOCK_SIZE);
	close(fd);
}

RDP_TEST(e2e, blk_check_names_a_lost_or_corrupted_block)
{
	static uint8_t zeros[BLK_BLOCK_SIZE], saved[BLK_BLOCK_SIZE], bad[BLK_BLOCK_SIZE];
	const char *slog = path_of("serve.log"), *log = path_of("load.log");
	const char *state = path_of("state.bin"), *disk = path_of("disk.img");
	unsigned int i;
	char addr[64];
	pid_t srv;
	int port;

	/* 256 blocks written sequentially (many times over) and acknowledged */
	srv = start_server(slog, &port, "--file", disk, "--size", "1M", NULL);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	for (i = 0; i == 0 || strstr(slurp(log), "2048 of 2048 blocks written and acknowledged") ==
	     NULL; i++) {
		/* one run is enough unless the machine is crowded: each resumes the state */
		RDP_ASSERT_MSG(i < 10, "256 blocks not written in 10 runs:\n%s", slurp(log));
		assert_exit(run_blk(log, 60, "load", "--connect", addr, "--rw", "write",
				    "--verify", "--state", state, "--runtime", "1", NULL), 0, log);
	}
	stop_server(srv, slog);

	/* a lost write: block 100 back to zeros */
	poke_block(disk, 100, zeros, saved);
	srv = start_server(slog, &port, "--file", disk, NULL);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	assert_exit(run_blk(log, 60, "load", "--connect", addr, "--check", "--state", state,
			    NULL), 1, log);
	assert_output(log, "verify: block 100 reads as zeros, but generation");
	assert_output(log, "1 mismatches");
	stop_server(srv, slog);

	/* a flipped bit in block 37 */
	poke_block(disk, 100, saved, NULL);
	{
		int fd = open(disk, O_RDONLY);

		RDP_ASSERT(pread(fd, bad, BLK_BLOCK_SIZE, 37 * BLK_BLOCK_SIZE) == BLK_BLOCK_SIZE);
		close(fd);
	}
	bad[200] ^= 0x10;
	poke_block(disk, 37, bad, saved);
	srv = start_server(slog, &port, "--file", disk, NULL);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	assert_exit(run_blk(log, 60, "load", "--connect", addr, "--check", "--state", state,
			    NULL), 1, log);
	assert_output(log, "verify: block 37 fails its checksum");

	/* restored: the same check passes */
	poke_block(disk, 37, saved, NULL);
	assert_exit(run_blk(log, 60, "load", "--connect", addr, "--check", "--state", state,
			    NULL), 0, log);
	assert_output(log, "check: 2048 blocks read back and verified, 2048 of them hold "
		      "acknowledged writes, 0 mismatches");
	stop_server(srv, slog);
	scratch_remove();
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Bad requests                                                           */
/* ---------------------------------------------------------------------- */

#define NBLOCKS 2048 /* the server of these tests: --memory 1M */

static struct rte_ring *events;

/* The next received message; fails on a state change or after 30 s (rxe under emulation). */
static struct rdp_msg *
next_reply(void)
{
	double deadline = rdp_clock_s() + 30;
	struct rdp_msg *m;

	for (;;) {
		if (rdp_event_dequeue_burst(events, &m, 1) == 1) {
			if (m->event == RDP_EV_RECV)
				return m;
			RDP_ASSERT_MSG(m->event != RDP_EV_STATE ||
				       m->user_data == RDP_EP_ESTABLISHED,
				       "the endpoint went %s (%d) while waiting for a reply",
				       rdp_ep_state_str((unsigned int)m->user_data), m->status);
			rdp_msg_free(m);
			continue;
		}
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "no reply within 30 s");
		usleep(50);
	}
}

/*
 * Pipeline mode: the state of the next state event other than ESTABLISHED,
 * by @p deadline; the events before it are freed (a received message fails
 * the test with @p no_recv).
 */
static unsigned int
next_state(double deadline, const char *waiting_for, bool no_recv)
{
	struct rdp_msg *m;

	for (;;) {
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "still waiting for %s", waiting_for);
		if (rdp_event_dequeue_burst(events, &m, 1) == 0) {
			usleep(100);
			continue;
		}
		if (m->event == RDP_EV_STATE && m->user_data != RDP_EP_ESTABLISHED) {
			unsigned int st = (unsigned int)m->user_data;

			rdp_msg_free(m);
			return st;
		}
		RDP_ASSERT_MSG(!no_recv || m->event != RDP_EV_RECV, "a message while waiting for %s",
			       waiting_for);
		rdp_msg_free(m);
	}
}

/* Pipeline mode: take events until CLOSED, the last one. */
static void
wait_closed(void)
{
	double deadline = rdp_clock_s() + 30;

	while (next_state(deadline, "the CLOSED event (30 s)", false) != RDP_EP_CLOSED)
		;
}

static void
send_bytes(struct rdp_ep *ep, const void *buf, uint32_t len)
{
	struct rdp_msg *m = rdp_msg_alloc(ep, len);

	RDP_ASSERT(m != NULL);
	if (len > 0)
		RDP_ASSERT_EQ(rdp_msg_write(m, 0, buf, len), 0);
	RDP_ASSERT_EQ(rdp_ep_send_burst(ep, &m, 1), 1);
}

/* A request header followed by @p payload bytes of @p fill. */
static void
send_req(struct rdp_ep *ep, const struct blk_req *q, uint32_t payload, uint8_t fill)
{
	static uint8_t buf[BLK_HDR_SIZE + (BLK_MAX_COUNT + 2) * BLK_BLOCK_SIZE];

	blk_req_encode(q, buf);
	memset(buf + BLK_HDR_SIZE, fill, payload);
	send_bytes(ep, buf, BLK_HDR_SIZE + payload);
}

/* Expect the reply to @p q: its status, and no data unless a read succeeded. */
static struct rdp_msg *
expect_reply(const struct blk_req *q, uint64_t tag, uint32_t status, const char *what)
{
	struct rdp_msg *m = next_reply();
	uint8_t raw[BLK_HDR_SIZE];
	struct blk_rep p;

	RDP_ASSERT_MSG(m->pkt_len >= BLK_HDR_SIZE, "%s: a reply of %u bytes", what, m->pkt_len);
	rdp_msg_read(m, 0, raw, sizeof(raw));
	blk_rep_decode(&p, raw);
	RDP_ASSERT_MSG(p.magic == BLK_REP_MAGIC, "%s: reply magic %#x", what, p.magic);
	RDP_ASSERT_MSG(p.status == status, "%s: status %u (%s), expected %u (%s)", what,
		       p.status, blk_status_str(p.status), status, blk_status_str(status));
	RDP_ASSERT_MSG(p.tag == tag, "%s: tag %#" PRIx64 ", expected %#" PRIx64, what, p.tag,
		       tag);
	RDP_ASSERT_MSG(p.nblocks == NBLOCKS && p.max_count == BLK_MAX_COUNT,
		       "%s: geometry %" PRIu64 " blocks, max %u", what, p.nblocks, p.max_count);
	if (q != NULL)
		RDP_ASSERT_MSG(p.opcode == q->opcode && p.count == q->count,
			       "%s: opcode %u count %u echoed as %u %u", what, q->opcode,
			       q->count, p.opcode, p.count);
	RDP_ASSERT_EQ(m->pkt_len, status == BLK_S_OK && q != NULL ?
		      blk_rep_len(q->opcode, q->count, q->flags) : BLK_HDR_SIZE);
	printf("ok: %-44s -> %s\n", what, blk_status_str(p.status));
	return m;
}

/*
 * This process as a client of the servers: its poller on CPU 0 (a server's
 * is on CPU 1), messages as rdp-blk's (a 1 MiB request and its header fit),
 * events on the ring `events` (pipeline mode).
 */
static struct rdp_cfg *
client_init(void)
{
	struct rdp_cfg *cfg;

	rdp_test_eal_init("0@1,1@0");
	cfg = rdp_cfg_default();
	RDP_ASSERT(cfg != NULL);
	RDP_ASSERT_MSG(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "driver", rdp_test_driver(), "test") == 0 &&
		       rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "max_msg_size", "1048640", "test") == 0 &&
		       rdp_cfg_validate(cfg) == 0, "%s", rdp_err_msg());
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	events = rte_ring_create("blk_events", 1024, SOCKET_ID_ANY, RING_F_SC_DEQ);
	RDP_ASSERT(events != NULL);
	return cfg;
}

struct bad_case {
	const char *what;
	struct blk_req q;
	uint32_t payload;  /* data bytes after the header */
	uint32_t status;
};

RDP_TEST(e2e, blk_bad_requests_get_error_replies_and_the_server_keeps_serving)
{
	const struct bad_case cases[] = {
		{ "read one block past the end",
		  { .opcode = BLK_OP_READ, .count = 1, .block = NBLOCKS }, 0, BLK_S_ERANGE },
		{ "read across the end",
		  { .opcode = BLK_OP_READ, .count = 2, .block = NBLOCKS - 1 }, 0, BLK_S_ERANGE },
		{ "write at a block number that wraps",
		  { .opcode = BLK_OP_WRITE, .count = 2, .block = UINT64_MAX },
		  2 * BLK_BLOCK_SIZE, BLK_S_ERANGE },
		{ "unknown opcode 9", { .opcode = 9 }, 0, BLK_S_EOPNOTSUPP },
		{ "opcode 0", { .opcode = 0, .count = 1 }, 0, BLK_S_EOPNOTSUPP },
		{ "read of 0 blocks", { .opcode = BLK_OP_READ, .count = 0 }, 0, BLK_S_EINVAL },
		{ "read of 2049 blocks",
		  { .opcode = BLK_OP_READ, .count = BLK_MAX_COUNT + 1 }, 0, BLK_S_E2BIG },
		{ "write of 2049 blocks, with one",
		  { .opcode = BLK_OP_WRITE, .count = BLK_MAX_COUNT + 1 }, BLK_BLOCK_SIZE,
		  BLK_S_E2BIG },
		{ "write of 2 blocks with 1 block of data",
		  { .opcode = BLK_OP_WRITE, .count = 2 }, BLK_BLOCK_SIZE, BLK_S_EBADMSG },
		{ "write of 1 block with 1 byte too many",
		  { .opcode = BLK_OP_WRITE, .count = 1 }, BLK_BLOCK_SIZE + 1, BLK_S_EBADMSG },
		{ "read with data attached",
		  { .opcode = BLK_OP_READ, .count = 1 }, BLK_BLOCK_SIZE, BLK_S_EBADMSG },
		{ "bad magic", { .magic = 0x12345678, .opcode = BLK_OP_READ, .count = 1 }, 0,
		  BLK_S_EPROTO },
		{ "unknown flag",
		  { .opcode = BLK_OP_READ, .count = 1, .flags = 0x80 }, 0, BLK_S_EINVAL },
		{ "FUA on a read",
		  { .opcode = BLK_OP_READ, .count = 1, .flags = BLK_F_FUA }, 0, BLK_S_EINVAL },
		{ "reserved field set",
		  { .opcode = BLK_OP_READ, .count = 1, .reserved = { 0, 1 } }, 0, BLK_S_EINVAL },
		{ "flush with a count", { .opcode = BLK_OP_FLUSH, .count = 1 }, 0, BLK_S_EINVAL },
		{ "info with a block number", { .opcode = BLK_OP_INFO, .block = 3 }, 0,
		  BLK_S_EINVAL },
	};
	const char *slog = path_of("serve.log");
	uint8_t raw[BLK_HDR_SIZE], data[2 * BLK_BLOCK_SIZE];
	struct rdp_ep_params prm = { .lcore = -1 };
	struct blk_req q;
	struct rdp_cfg *cfg;
	struct rdp_ep *ep;
	struct rdp_msg *m;
	char addr[64];
	unsigned int i;
	pid_t srv;
	int port;

	srv = start_server(slog, &port, "--memory", "1M", NULL);
	cfg = client_init();
	prm.events = events;
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	ep = rdp_connect(addr, &prm);
	RDP_ASSERT(ep != NULL);
	RDP_ASSERT_EQ(rdp_ep_wait_established(ep, 5000), 0);

	for (i = 0; i < RTE_DIM(cases); i++) {
		q = cases[i].q;
		if (q.magic == 0)
			q.magic = BLK_REQ_MAGIC;
		q.tag = 0x7a60000000000000ull + i;
		send_req(ep, &q, cases[i].payload, 0xab);
		rdp_msg_free(expect_reply(&q, q.tag, cases[i].status, cases[i].what));
	}

	/* short messages: the tag is echoed as far as it came, zero-filled */
	q = (struct blk_req){ .magic = BLK_REQ_MAGIC, .opcode = BLK_OP_READ, .count = 1,
			      .tag = 0x1122334455667788ull };
	blk_req_encode(&q, raw);
	send_bytes(ep, raw, 10);
	rdp_msg_free(expect_reply(NULL, 0x7788, BLK_S_EBADMSG, "10-byte request"));
	send_bytes(ep, raw, BLK_HDR_SIZE - 1);
	rdp_msg_free(expect_reply(NULL, q.tag, BLK_S_EBADMSG, "31-byte request"));
	send_bytes(ep, raw, 0);
	rdp_msg_free(expect_reply(NULL, 0, BLK_S_EBADMSG, "empty message"));

	/* garbage: every message gets exactly one reply, in order */
	for (i = 0; i < 200; i++) {
		uint32_t len = (i * 7919u) % (3 * BLK_BLOCK_SIZE), k;
		uint8_t *g = data;

		for (k = 0; k < RTE_MIN(len, (uint32_t)sizeof(data)); k++)
			g[k] = (uint8_t)((i + 1) * 131 + k * 29 + (k >> 8));
		if (len > sizeof(data))
			len = sizeof(data);
		send_bytes(ep, g, len);
		m = next_reply();
		RDP_ASSERT_EQ(m->pkt_len, BLK_HDR_SIZE);
		rdp_msg_read(m, 0, raw, sizeof(raw));
		RDP_ASSERT_EQ(blk_get32(raw), BLK_REP_MAGIC);
		RDP_ASSERT(blk_get32(raw + 16) != BLK_S_OK);
		rdp_msg_free(m);
	}
	printf("ok: 200 garbage messages, 200 error replies\n");

	/* still serving: write two blocks, flush, read them back, ask the geometry */
	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 3);
	q = (struct blk_req){ .magic = BLK_REQ_MAGIC, .opcode = BLK_OP_WRITE, .count = 2,
			      .flags = BLK_F_FUA, .tag = 1, .block = NBLOCKS - 2 };
	blk_req_encode(&q, raw);
	m = rdp_msg_alloc(ep, blk_req_len(q.opcode, q.count, q.flags));
	RDP_ASSERT(m != NULL);
	RDP_ASSERT_EQ(rdp_msg_write(m, 0, raw, BLK_HDR_SIZE), 0);
	RDP_ASSERT_EQ(rdp_msg_write(m, BLK_HDR_SIZE, data, sizeof(data)), 0);
	RDP_ASSERT_EQ(rdp_ep_send_burst(ep, &m, 1), 1);
	rdp_msg_free(expect_reply(&q, 1, BLK_S_OK, "write of the last 2 blocks (FUA)"));
	q = (struct blk_req){ .magic = BLK_REQ_MAGIC, .opcode = BLK_OP_FLUSH, .tag = 2 };
	send_req(ep, &q, 0, 0);
	rdp_msg_free(expect_reply(&q, 2, BLK_S_OK, "flush"));
	q = (struct blk_req){ .magic = BLK_REQ_MAGIC, .opcode = BLK_OP_READ, .count = 2,
			      .tag = 3, .block = NBLOCKS - 2 };
	send_req(ep, &q, 0, 0);
	m = expect_reply(&q, 3, BLK_S_OK, "read of the last 2 blocks");
	{
		static uint8_t back[sizeof(data)];

		RDP_ASSERT_EQ(rdp_msg_read(m, BLK_HDR_SIZE, back, sizeof(back)), 0);
		RDP_ASSERT_MSG(memcmp(back, data, sizeof(data)) == 0, "read back differs");
	}
	rdp_msg_free(m);
	q = (struct blk_req){ .magic = BLK_REQ_MAGIC, .opcode = BLK_OP_INFO, .tag = 4 };
	send_req(ep, &q, 0, 0);
	rdp_msg_free(expect_reply(&q, 4, BLK_S_OK, "info"));

	rdp_ep_close(ep);
	wait_closed();
	RDP_ASSERT_EQ(waitpid(srv, NULL, WNOHANG), 0); /* alive */
	stop_server(srv, slog);
	assert_output(slog, "1 reads, 1 writes, 1 flushes, 1 infos, 220 refused, 0 I/O errors");
	assert_output(slog, "(refused: 3 beyond the device, 0 misaligned");
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rte_ring_free(events);
	rdp_cfg_free(cfg);
	scratch_remove();
	return 0;
}

/* ---------------------------------------------------------------------- */
/* One-sided requests                                                     */
/* ---------------------------------------------------------------------- */

#define OS_BUF (64 * 1024)

/* A BLK_F_RDMA request whose descriptor is @p d, as encoded (or @p raw_desc). */
static void
send_rdma_req(struct rdp_ep *ep, const struct blk_req *q, const struct rdp_rdesc *d,
	      const uint8_t *raw_desc)
{
	uint8_t buf[BLK_HDR_SIZE + BLK_DESC_LEN];

	blk_req_encode(q, buf);
	if (raw_desc != NULL)
		memcpy(buf + BLK_HDR_SIZE, raw_desc, BLK_DESC_LEN);
	else
		rdp_rdesc_encode(d, buf + BLK_HDR_SIZE);
	send_bytes(ep, buf, sizeof(buf));
}

/* The descriptor of @p len bytes at @p off of region @p r. */
static struct rdp_rdesc
sub_desc(struct rdp_region *r, uint64_t off, uint64_t len)
{
	struct rdp_rdesc d;

	rdp_region_rdesc(r, &d);
	d.addr += off;
	d.len = len;
	return d;
}

/*
 * Against one server: a one-sided WRITE then a message READ of the same
 * blocks, a message WRITE then a one-sided READ, the bad descriptors, and
 * a descriptor with a wrong key, which fails that endpoint alone.
 */
static void
onesided_against(const char *what, int port, struct rdp_region *reg)
{
	uint8_t *buf = rdp_region_addr(reg), data[4 * BLK_BLOCK_SIZE], back[sizeof(data)];
	uint8_t garbage[BLK_DESC_LEN];
	struct rdp_ep_params prm = { .lcore = -1, .events = events };
	struct rdp_rdesc d;
	struct blk_req q;
	struct rdp_msg *m;
	struct rdp_ep *ep;
	char addr[64], name[96];
	unsigned int i, st;

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	ep = rdp_connect(addr, &prm);
	RDP_ASSERT(ep != NULL);
	RDP_ASSERT_EQ(rdp_ep_wait_established(ep, 30000), 0);

	/* one-sided WRITE of 4 blocks from the buffer's second KiB ... */
	for (i = 0; i < sizeof(data); i++)
		buf[1024 + i] = (uint8_t)(i * 13 + 5);
	q = (struct blk_req){ .magic = BLK_REQ_MAGIC, .opcode = BLK_OP_WRITE, .count = 4,
			      .flags = BLK_F_RDMA, .tag = 10, .block = 100 };
	d = sub_desc(reg, 1024, sizeof(data));
	send_rdma_req(ep, &q, &d, NULL);
	snprintf(name, sizeof(name), "%s: one-sided write of 4 blocks", what);
	rdp_msg_free(expect_reply(&q, 10, BLK_S_OK, name));
	/* ... read back in a message */
	q = (struct blk_req){ .magic = BLK_REQ_MAGIC, .opcode = BLK_OP_READ, .count = 4,
			      .tag = 11, .block = 100 };
	send_req(ep, &q, 0, 0);
	m = expect_reply(&q, 11, BLK_S_OK, "read of them in a message");
	RDP_ASSERT_EQ(rdp_msg_read(m, BLK_HDR_SIZE, back, sizeof(back)), 0);
	RDP_ASSERT_MSG(memcmp(back, buf + 1024, sizeof(back)) == 0,
		       "%s: the one-sided write did not land", what);
	rdp_msg_free(m);

	/* a message WRITE, then a one-sided READ into the buffer at 32 KiB */
	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 1);
	memset(buf + 32768, 0xee, sizeof(data) + 1);
	q = (struct blk_req){ .magic = BLK_REQ_MAGIC, .opcode = BLK_OP_WRITE, .count = 4,
			      .tag = 12, .block = 200 };
	m = rdp_msg_alloc(ep, blk_req_len(q.opcode, q.count, q.flags));
	RDP_ASSERT(m != NULL);
	blk_req_encode(&q, m->data);
	RDP_ASSERT_EQ(rdp_msg_write(m, BLK_HDR_SIZE, data, sizeof(data)), 0);
	RDP_ASSERT_EQ(rdp_ep_send_burst(ep, &m, 1), 1);
	rdp_msg_free(expect_reply(&q, 12, BLK_S_OK, "write of 4 blocks in a message"));
	q = (struct blk_req){ .magic = BLK_REQ_MAGIC, .opcode = BLK_OP_READ, .count = 4,
			      .flags = BLK_F_RDMA, .tag = 13, .block = 200 };
	d = sub_desc(reg, 32768, sizeof(data));
	send_rdma_req(ep, &q, &d, NULL);
	snprintf(name, sizeof(name), "%s: one-sided read of them", what);
	/* the reply comes after the data: it is in place now */
	rdp_msg_free(expect_reply(&q, 13, BLK_S_OK, name));
	RDP_ASSERT_MSG(memcmp(buf + 32768, data, sizeof(data)) == 0,
		       "%s: the one-sided read did not land before its reply", what);
	RDP_ASSERT_MSG(buf[32768 + sizeof(data)] == 0xee, "%s: written past the blocks", what);
	/* (the server counts this read when its reply leaves, the wrong key's too: 3 reads) */

	/* bad descriptors: EFAULT, nothing moved, the endpoint stays */
	memset(buf + 32768, 0xee, sizeof(data));
	q = (struct blk_req){ .magic = BLK_REQ_MAGIC, .opcode = BLK_OP_READ, .count = 4,
			      .flags = BLK_F_RDMA, .tag = 20, .block = 200 };
	d = sub_desc(reg, 32768, sizeof(data) - 1);
	send_rdma_req(ep, &q, &d, NULL);
	rdp_msg_free(expect_reply(&q, 20, BLK_S_EFAULT, "descriptor one byte short"));
	q.tag = 21;
	d = sub_desc(reg, 32768, sizeof(data));
	d.access = RDP_REGION_REMOTE_READ;
	send_rdma_req(ep, &q, &d, NULL);
	rdp_msg_free(expect_reply(&q, 21, BLK_S_EFAULT, "read into a descriptor not writable"));
	q = (struct blk_req){ .magic = BLK_REQ_MAGIC, .opcode = BLK_OP_WRITE, .count = 4,
			      .flags = BLK_F_RDMA, .tag = 22, .block = 200 };
	d = sub_desc(reg, 32768, sizeof(data));
	d.access = RDP_REGION_REMOTE_WRITE;
	send_rdma_req(ep, &q, &d, NULL);
	rdp_msg_free(expect_reply(&q, 22, BLK_S_EFAULT, "write from a descriptor not readable"));
	q.tag = 23;
	for (i = 0; i < sizeof(garbage); i++)
		garbage[i] = (uint8_t)(i * 31 + 7);
	send_rdma_req(ep, &q, NULL, garbage);
	rdp_msg_free(expect_reply(&q, 23, BLK_S_EFAULT, "garbage descriptor"));
	q = (struct blk_req){ .magic = BLK_REQ_MAGIC, .opcode = BLK_OP_FLUSH, .flags = BLK_F_RDMA,
			      .tag = 24 };
	send_req(ep, &q, BLK_DESC_LEN, 0);
	rdp_msg_free(expect_reply(&q, 24, BLK_S_EINVAL, "one-sided flush"));
	q = (struct blk_req){ .magic = BLK_REQ_MAGIC, .opcode = BLK_OP_READ, .count = 1,
			      .flags = BLK_F_RDMA, .tag = 25, .block = 200 };
	send_req(ep, &q, 0, 0);
	rdp_msg_free(expect_reply(&q, 25, BLK_S_EBADMSG, "one-sided read without a descriptor"));
	q = (struct blk_req){ .magic = BLK_REQ_MAGIC, .opcode = BLK_OP_WRITE, .count = 1,
			      .flags = BLK_F_RDMA, .tag = 26, .block = 200 };
	send_req(ep, &q, BLK_BLOCK_SIZE, 0);
	rdp_msg_free(expect_reply(&q, 26, BLK_S_EBADMSG, "one-sided write with its data"));
	for (i = 0; i < sizeof(data); i++)
		RDP_ASSERT_MSG(buf[32768 + i] == 0xee, "%s: a refused request moved data", what);

	/* a wrong key: the server's RDMA WRITE fails, and so does this endpoint alone */
	q = (struct blk_req){ .magic = BLK_REQ_MAGIC, .opcode = BLK_OP_READ, .count = 4,
			      .flags = BLK_F_RDMA, .tag = 30, .block = 200 };
	d = sub_desc(reg, 32768, sizeof(data));
	d.rkey ^= 0x5a5a00;
	send_rdma_req(ep, &q, &d, NULL);
	st = next_state(rdp_clock_s() + 30, "the endpoint to fail (30 s)", true);
	printf("ok: %s: a wrong key: the endpoint went %s\n", what, rdp_ep_state_str(st));
	rdp_ep_close(ep);
	wait_closed();
}

RDP_TEST(e2e, blk_onesided_requests_move_blocks_by_rdma_and_bad_descriptors_get_efault)
{
	const char *slog = path_of("serve.log"), *flog = path_of("serve-file.log");
	const char *disk = path_of("os.img");
	struct rdp_region *reg;
	struct rdp_cfg *cfg;
	pid_t srv, fsrv;
	int port, fport;

	cfg = client_init();
	/* before connecting: a peer maps it at the rendezvous (shm) */
	reg = rdp_region_alloc(OS_BUF, RDP_REGION_REMOTE_WRITE | RDP_REGION_REMOTE_READ, -1);
	RDP_ASSERT_MSG(reg != NULL, "rdp_region_alloc: %s", rdp_err_msg());

	/* one server at a time: a server's poller takes the second CPU */
	srv = start_server(slog, &port, "--memory", "1M", NULL);
	onesided_against("memory", port, reg);
	RDP_ASSERT_EQ(waitpid(srv, NULL, WNOHANG), 0); /* alive */
	stop_server(srv, slog);
	/* through the page cache: the rxe guest's tmpfs refuses O_DIRECT */
	fsrv = start_server(flog, &fport, "--file", disk, "--size", "1M", "--no-direct", NULL);
	onesided_against("file", fport, reg);
	RDP_ASSERT_EQ(waitpid(fsrv, NULL, WNOHANG), 0);
	stop_server(fsrv, flog);
	assert_output(slog, "3 reads, 2 writes, 0 flushes, 0 infos, 7 refused, 0 I/O errors");
	assert_output(slog, "4 bad descriptors");
	assert_output(slog, "one-sided: 1 RDMA WRITEs and 1 RDMA READs done, 1 failed");
	assert_output(flog, "3 reads, 2 writes, 0 flushes, 0 infos, 7 refused, 0 I/O errors");
	assert_output(flog, "one-sided: 1 RDMA WRITEs and 1 RDMA READs done, 1 failed");
	RDP_ASSERT_EQ(rdp_region_deregister(reg), 0);
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rte_ring_free(events);
	rdp_cfg_free(cfg);
	scratch_remove();
	return 0;
}

/*
 * The loader's one-sided requests (--rdma-min 0: all of them), verified,
 * against a memory device and an io_uring file, 4 KiB and 1 MiB; and a
 * threshold that splits a run between both paths.
 */
RDP_TEST(e2e, blk_verify_one_sided_requests_on_memory_and_file_devices)
{
	static const char *const bs[] = { "4k", "1m" };
	const char *slog = path_of("serve.log"), *log = path_of("load.log");
	const char *json = path_of("load.json"), *disk = path_of("os.img");
	char addr[64];
	pid_t srv;
	int port;
	unsigned int i, k;

	/* one server at a time: a server's poller takes the second CPU */
	for (k = 0; k < 2; k++) {
		srv = k == 0 ? start_server(slog, &port, "--memory", "64M", NULL) :
			       start_server(slog, &port, "--file", disk, "--size", "64M", NULL);
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
		for (i = 0; i < RTE_DIM(bs); i++) {
			const char *j;

			assert_exit(run_blk(log, 60, "load", "--connect", addr, "--rw", "randrw",
					    "--bs", bs[i], "--iodepth", "4", "--numjobs", "2",
					    "--verify", "--rdma-min", "0", "--runtime", "1",
					    "--output-format=json", "--output", json, NULL), 0, log);
			assert_verified(json, true, true);
			j = slurp(json);
			RDP_ASSERT_MSG(json_u64(j, NULL, "onesided_ios") ==
				       json_u64(j, "read", "total_ios") +
				       json_u64(j, "write", "total_ios"), "%s", j);
			printf("ok: %s, --bs %s, all one-sided: %" PRIu64 " reads, %" PRIu64
			       " writes verified\n", k == 0 ? "memory" : "file", bs[i],
			       json_u64(j, "read", "total_ios"), json_u64(j, "write", "total_ios"));
		}
		if (k == 0) {
			/* a threshold above the block size: the blocks go in the messages */
			assert_exit(run_blk(log, 60, "load", "--connect", addr, "--rw", "randrw",
					    "--bs", "64k", "--verify", "--rdma-min", "128k",
					    "--runtime", "0.5", "--output-format=json", "--output",
					    json, NULL), 0, log);
			RDP_ASSERT_EQ(json_u64(slurp(json), NULL, "onesided_ios"), 0);
			assert_verified(json, true, true);
		}
		stop_server(srv, slog);
		assert_output(slog, "0 refused, 0 I/O errors");
		assert_output(slog, " RDMA READs done, 0 failed");
	}
	scratch_remove();
	return 0;
}

/* ---------------------------------------------------------------------- */
/* No head-of-line blocking                                               */
/* ---------------------------------------------------------------------- */

/* A configuration for a loader that mostly waits: its poller sleeps when idle. */
static const char *
sleepy_config(void)
{
	const char *cfg = path_of("sleepy.conf");
	FILE *f = fopen(cfg, "w");

	RDP_ASSERT(f != NULL);
	fprintf(f, "[global]\nidle_sleep_us = 1000\n");
	RDP_ASSERT(fclose(f) == 0);
	return cfg;
}

/* `load --connect 127.0.0.1:PORT` of 4 KiB random reads to its JSON; returns its log. */
static void
load_b(int port, const char *json, const char *runtime, const char *iodepth)
{
	const char *log = path_of("b.log");
	char addr[64];

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	assert_exit(run_blk(log, 60, "load", "--connect", addr, "--rw", "randread", "--iodepth",
			    iodepth, "--runtime", runtime, "--output-format=json", "--output", json,
			    NULL), 0, log);
}

/* A's loader: reads on the slow file, in the background, its poller mostly asleep. */
static pid_t
start_load_a(int port, const char *log, const char *runtime)
{
	static char addr[64];
	const char *args[] = { "-c", sleepy_config(), "--connect", addr, "--rw", "randread",
			       "--iodepth", "8", "--runtime", runtime, NULL };

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	return spawn_blk(log, "load", args);
}

/* Wait for A's loader's first progress line: its requests are in flight. */
static void
wait_progress(const char *log)
{
	double deadline = rdp_clock_s() + 30;

	while (strstr(slurp(log), "[   1 s]") == NULL) {
		RDP_ASSERT_MSG(rdp_clock_s() < deadline, "no progress from A's loader:\n%s",
			       slurp(log));
		usleep(20000);
	}
}

/*
 * One server poller serves endpoint A on a file whose every I/O takes
 * 20 ms (an IORING_OP_TIMEOUT linked before it) and endpoint B on a memory
 * device. B's p99 beside A may not exceed twice B's p99 alone, measured in
 * the same run; a crowded machine gets three attempts (a poller that
 * waited for A's disk would put B's p99 at 20 ms, a hundred times over).
 */
RDP_TEST(e2e, blk_slow_file_endpoint_does_not_raise_memory_endpoint_p99)
{
	const char *slog = path_of("serve.log"), *alog = path_of("a.log");
	const char *disk = path_of("slow.img"), *j1 = path_of("alone.json");
	const char *j2 = path_of("beside.json");
	unsigned int attempt;
	int ports[2], rc;
	bool ok = false;
	pid_t srv, la;

	setenv("RDP_BLK_INJECT_DELAY_MS", "20", 1);
	srv = start_server2(slog, ports, "--file", disk, "--size", "16M", "--memory", "64M", NULL);
	unsetenv("RDP_BLK_INJECT_DELAY_MS");
	assert_output(slog, "every file I/O delayed 20 ms");
	for (attempt = 0; attempt < 3 && !ok; attempt++) {
		uint64_t alone, beside, n1, n2;

		load_b(ports[1], j1, "2", "8");
		la = start_load_a(ports[0], alog, "5");
		wait_progress(alog);
		load_b(ports[1], j2, "2", "8");
		rc = reap(la, 30, "load A", alog);
		assert_exit(rc, 0, alog);
		RDP_ASSERT_MSG(json_u64(slurp(j1), "read", "total_ios") > 0, "%s", slurp(j1));
		alone = json_u64(slurp(j1), "read", "99.000000");
		n1 = json_u64(slurp(j1), "read", "total_ios");
		beside = json_u64(slurp(j2), "read", "99.000000");
		n2 = json_u64(slurp(j2), "read", "total_ios");
		printf("attempt %u: B p99 alone %" PRIu64 " ns (%" PRIu64 " reads), beside slow A %"
		       PRIu64 " ns (%" PRIu64 " reads), ratio %.2f; A: %s", attempt, alone, n1,
		       beside, n2, (double)beside / (double)alone, strstr(slurp(alog), "\nread"));
		ok = n2 > 10000 && beside <= 2 * alone;
	}
	RDP_ASSERT_MSG(ok, "B's p99 beside slow A is above twice B's p99 alone in 3 attempts");
	stop_server(srv, slog);
	scratch_remove();
	return 0;
}

/* With 200 ms per file I/O, B's requests on the same poller complete during A's waits. */
RDP_TEST(e2e, blk_poller_never_waits_for_the_disk)
{
	const char *slog = path_of("serve.log"), *alog = path_of("a.log");
	const char *disk = path_of("slow.img"), *json = path_of("b.json");
	const char *j;
	int ports[2];
	pid_t srv, la;

	setenv("RDP_BLK_INJECT_DELAY_MS", "200", 1);
	srv = start_server2(slog, ports, "--file", disk, "--size", "16M", "--memory", "16M", NULL);
	unsetenv("RDP_BLK_INJECT_DELAY_MS");
	la = start_load_a(ports[0], alog, "4");
	wait_progress(alog);
	/* one request at a time: each must come back well inside A's 200 ms */
	load_b(ports[1], json, "1", "1");
	j = slurp(json);
	printf("B: %" PRIu64 " reads in 1 s beside A, max %" PRIu64 " ns\n",
	       json_u64(j, "read", "total_ios"), json_u64(j, "read", "max"));
	RDP_ASSERT_MSG(json_u64(j, "read", "total_ios") > 50, "B barely moved:\n%s", j);
	RDP_ASSERT_MSG(json_u64(j, "read", "max") < 100000000ull,
		       "a B read waited %" PRIu64 " ns, as long as A's disk:\n%s",
		       json_u64(j, "read", "max"), j);
	assert_exit(reap(la, 30, "load A", alog), 0, alog);
	{
		/* A's reads themselves took the 200 ms: its table's "read" line */
		const char *line = strstr(slurp(alog), "\nread ");
		double ios, iops, mbs, mean_us = 0;

		RDP_ASSERT_MSG(line != NULL && sscanf(line + 5, "%lf %lf %lf %lf", &ios, &iops, &mbs,
						      &mean_us) == 4 && mean_us >= 200000,
			       "A's reads did not wait 200 ms:\n%s", slurp(alog));
	}
	stop_server(srv, slog);
	scratch_remove();
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Device errors                                                          */
/* ---------------------------------------------------------------------- */

/* A read the kernel fails: the loader prints block, op and errno; the server counts it. */
RDP_TEST(e2e, blk_kernel_io_error_is_a_reply_the_loader_prints)
{
	const char *slog = path_of("serve.log"), *log = path_of("load.log");
	const char *disk = path_of("eio.img");
	char addr[64];
	pid_t srv;
	int port;

	setenv("RDP_BLK_INJECT_EIO", "read", 1);
	srv = start_server(slog, &port, "--file", disk, "--size", "4M", NULL);
	unsetenv("RDP_BLK_INJECT_EIO");
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	assert_exit(run_blk(log, 60, "load", "--connect", addr, "--rw", "randread", "--runtime",
			    "1", NULL), 1, log);
	assert_output(log, "read of 8 block(s) at block ");
	assert_output(log, "failed: errno 5, EIO (the device failed)");
	/* the server still serves: writes succeed */
	assert_exit(run_blk(log, 60, "load", "--connect", addr, "--rw", "write", "--runtime",
			    "0.5", NULL), 0, log);
	stop_server(srv, slog);
	assert_output(slog, "0 refused, ");
	RDP_ASSERT_MSG(strstr(slurp(slog), " 0 I/O errors") == NULL, "no I/O error counted:\n%s",
		       slurp(slog));
	scratch_remove();
	return 0;
}

/* Requests not aligned for the server's O_DIRECT get EINVAL, counted as misaligned. */
RDP_TEST(e2e, blk_misaligned_direct_io_is_refused_with_einval)
{
	const char *slog = path_of("serve.log"), *log = path_of("load.log");
	const char *disk = path_of("align.img");
	char addr[64];
	pid_t srv;
	int port;

	setenv("RDP_BLK_DIO_ALIGN", "4096", 1); /* as a disk of 4 KiB sectors */
	srv = start_server(slog, &port, "--file", disk, "--size", "4M", NULL);
	unsetenv("RDP_BLK_DIO_ALIGN");
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	/* 4 KiB-aligned requests pass */
	assert_exit(run_blk(log, 60, "load", "--connect", addr, "--rw", "randrw", "--bs", "8k",
			    "--verify", "--runtime", "0.5", NULL), 0, log);
	/* 512-byte ones fail: their length is not a multiple of 4 KiB */
	assert_exit(run_blk(log, 60, "load", "--connect", addr, "--rw", "read", "--bs", "512",
			    "--iodepth", "1", "--runtime", "1", NULL), 1, log);
	assert_output(log, "read of 1 block(s) at block 0 failed: errno 22, EINVAL");
	stop_server(srv, slog);
	assert_output(slog, "0 I/O errors");
	assert_output(slog, "0 beyond the device, 1 misaligned for O_DIRECT");
	scratch_remove();
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Arguments                                                              */
/* ---------------------------------------------------------------------- */

RDP_TEST(e2e, blk_bad_arguments_exit_2_naming_the_option)
{
	static const struct {
		const char *cmd;
		const char *args[4];
		const char *msg;
	} cases[] = {
		{ "load", { "--iodepth", "0" }, "rdp-blk load: --iodepth 0: expected 1..4096" },
		{ "load", { "--rw", "randomwrite" }, "--rw randomwrite: expected randread" },
		{ "load", { "--bs", "1000" }, "--bs 1000: expected 512 bytes to 1 MiB" },
		{ "load", { "--bs", "2m" }, "--bs 2m: expected 512 bytes to 1 MiB" },
		{ "load", { "--bs", "256" }, "--bs 256: expected 512 bytes to 1 MiB" },
		{ "load", { "--bs", "4kb" }, "--bs 4kb: expected 512 bytes to 1 MiB" },
		{ "load", { "--numjobs", "0" }, "--numjobs 0: expected 1..256" },
		{ "load", { "--runtime", "1m" }, "--runtime 1m: expected seconds" },
		{ "load", { "--output-format", "xml" }, "--output-format xml: expected normal or json" },
		{ "load", { "--output", "x.json" }, "--output x.json: only with --output-format=json" },
		{ "serve", { "--memory", "1M", "--no-direct" }, "--no-direct: only with --file" },
		{ "serve", { "--file", "x", "--ioengine", "libaio" },
		  "--ioengine libaio: expected io_uring or psync" },
		{ "load", { "--rwmixread", "70" }, "--rwmixread 70: only with --rw randrw" },
		{ "load", { "--check" }, "--check: needs --state FILE" },
		{ "load", { "--rdma-min", "1000" }, "--rdma-min 1000: expected a size" },
		{ "load", { "--rdma-min", "-1" }, "--rdma-min -1: expected a size" },
		{ "load", { "--runtime", "-1" }, "--runtime -1: expected seconds" },
		{ "load", { "--connect", "127.0.0.1:1", "--sync" }, "--sync: only for a local" },
		{ "load", { "--frobnicate" }, "--frobnicate: unknown option" },
		{ "serve", { "--size", "1M" }, "--file/--memory (missing)" },
		{ "serve", { "--memory", "12345" }, "--memory 12345: expected a positive multiple" },
		{ "serve", { "--memory", "1M", "--sync" }, "--sync with --memory: a memory device" },
		{ "serve", { "--memory", "1M", "--driver", "no such" },
		  "--driver: [global] driver = no such: driver name" },
	};
	const char *log = path_of("args.log");
	unsigned int i;

	for (i = 0; i < RTE_DIM(cases); i++) {
		const char *a[8] = { NULL };
		unsigned int k;

		for (k = 0; k < 4 && cases[i].args[k] != NULL; k++)
			a[k] = cases[i].args[k];
		assert_exit(reap(spawn_blk(log, cases[i].cmd, a), 10, cases[i].cmd, log), 2,
			    log);
		assert_output(log, cases[i].msg);
		printf("ok: %s\n", cases[i].msg);
	}
	assert_exit(run_blk(log, 10, "load", "--help", NULL), 0, log);
	assert_output(log, "Examples:");
	assert_exit(run_blk(log, 10, "serve", "--help", NULL), 0, log);
	assert_output(log, "--sync");
	scratch_remove();
	return 0;
}
