/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The autotest runner. meson runs one test per process (`rdp-test NAME`);
 * the VM lane and humans run whole suites (`rdp-test --suite S`), each test
 * in a forked child with a deadline.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_log.h>

#include "rdp_test.h"

#define MAX_TESTS 1024

struct test_case {
	const char *suite;
	const char *name;
	rdp_test_fn fn;
};

static struct test_case tests[MAX_TESTS];
static unsigned int nb_tests;
static const char *driver_spec;
static char self_path[4096];

void
rdp_test_register(const char *suite, const char *name, rdp_test_fn fn)
{
	unsigned int i;

	for (i = 0; i < nb_tests; i++) {
		if (strcmp(tests[i].name, name) == 0) {
			fprintf(stderr, "rdp-test: test %s registered twice\n", name);
			abort();
		}
	}
	if (nb_tests == MAX_TESTS) {
		fprintf(stderr, "rdp-test: more than %d tests\n", MAX_TESTS);
		abort();
	}
	tests[nb_tests++] = (struct test_case){ suite, name, fn };
}

int
rdp_test_skip(const char *fmt, ...)
{
	va_list ap;

	printf("SKIP: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	return RDP_TEST_SKIPPED;
}

static void (*on_fail[4])(void);
static unsigned int nb_on_fail;

void
rdp_test_on_fail(void (*fn)(void))
{
	if (nb_on_fail == RTE_DIM(on_fail))
		rdp_test_fail(__FILE__, __LINE__, "more than %zu rdp_test_on_fail() hooks",
			      RTE_DIM(on_fail));
	on_fail[nb_on_fail++] = fn;
}

void
rdp_test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "FAIL %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	fflush(stderr);
	/* a hook that fails in turn ends here, once */
	while (nb_on_fail > 0)
		on_fail[--nb_on_fail]();
	_exit(1);
}

const char *
rdp_test_driver(void)
{
	const char *env = getenv("RDP_TEST_DRIVER");

	if (driver_spec != NULL)
		return driver_spec;
	return env != NULL && env[0] != '\0' ? env : "shm";
}

const char *
rdp_test_driver_or(const char *dflt)
{
	const char *env = getenv("RDP_TEST_DRIVER");

	if (driver_spec != NULL)
		return driver_spec;
	return env != NULL && env[0] != '\0' ? env : dflt;
}

char rdp_test_log[RDP_TEST_LOG_SIZE];
static FILE *log_capture;

void
rdp_test_log_capture(void)
{
	memset(rdp_test_log, 0, sizeof(rdp_test_log));
	if (log_capture != NULL) {
		rewind(log_capture);
		return;
	}
	log_capture = fmemopen(rdp_test_log, sizeof(rdp_test_log) - 1, "w");
	RDP_ASSERT(log_capture != NULL);
	setvbuf(log_capture, NULL, _IONBF, 0);
	rte_openlog_stream(log_capture);
}

void
rdp_test_log_release(void)
{
	rte_openlog_stream(NULL);
	if (log_capture != NULL)
		fclose(log_capture);
	log_capture = NULL;
}

const char *
rdp_test_self(void)
{
	return self_path;
}

int
rdp_test_run_helper(const char *name, char *out, size_t len)
{
	size_t got = 0;
	int fds[2], status;
	char sink[4096];
	ssize_t n;
	pid_t pid;

	RDP_ASSERT(len > 0 && pipe(fds) == 0);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	RDP_ASSERT(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		close(fds[1]);
		execl(self_path, self_path, name, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	/* read to the end, past a full buffer: a child blocked on the pipe never exits */
	for (;;) {
		char *dst = got < len - 1 ? out + got : sink;
		size_t room = got < len - 1 ? len - 1 - got : sizeof(sink);

		n = read(fds[0], dst, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (dst != sink)
			got += (size_t)n;
	}
	out[got] = '\0';
	close(fds[0]);
	RDP_ASSERT(waitpid(pid, &status, 0) == pid);
	return status;
}

uint64_t
rdp_test_env_u64(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);

	return v != NULL && v[0] != '\0' ? strtoull(v, NULL, 0) : dflt;
}

int
rdp_test_eal_init_telemetry(const char *lcores, const char *prefix)
{
	char own_prefix[64], lc[128];
	char *argv[] = {
		(char *)"rdp-test", (char *)"--lcores", lc, (char *)"--no-huge",
		(char *)"--no-pci", (char *)"--no-shconf", (char *)"-m", (char *)"512",
		(char *)"--log-level=lib.eal:error", (char *)"--file-prefix", own_prefix,
		(char *)"--no-telemetry", NULL,
	};
	int argc = RTE_DIM(argv) - 1;

	snprintf(lc, sizeof(lc), "%s", lcores);
	if (prefix != NULL) {
		snprintf(own_prefix, sizeof(own_prefix), "%s", prefix);
		argc--; /* keep telemetry */
	} else {
		snprintf(own_prefix, sizeof(own_prefix), "rdp-test-%d", (int)getpid());
	}
	if (rte_eal_init(argc, argv) < 0)
		rdp_test_fail(__FILE__, __LINE__, "rte_eal_init(--lcores %s) failed: %s",
			      lcores, rte_strerror(rte_errno));
	return 0;
}

int
rdp_test_eal_init(const char *lcores)
{
	return rdp_test_eal_init_telemetry(lcores, NULL);
}

static const struct test_case *
find_test(const char *name)
{
	unsigned int i;

	for (i = 0; i < nb_tests; i++)
		if (strcmp(tests[i].name, name) == 0)
			return &tests[i];
	return NULL;
}

/* Run one test in a child; returns its exit status, or 1 on a signal or timeout. */
static int
run_forked(const struct test_case *t, int timeout_s)
{
	double deadline = rdp_clock_s() + timeout_s;
	pid_t pid;
	int status;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0)
		_exit(t->fn());
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			break;
		if (rdp_clock_s() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			printf("TIMEOUT after %d s\n", timeout_s);
			return 1;
		}
		usleep(10000);
	}
	if (WIFSIGNALED(status)) {
		printf("killed by signal %d\n", WTERMSIG(status));
		return 1;
	}
	return WEXITSTATUS(status);
}

static int
run_suite(const char *suite, int timeout_s)
{
	unsigned int i, passed = 0, failed = 0, skipped = 0, n = 0;

	for (i = 0; i < nb_tests; i++) {
		const struct test_case *t = &tests[i];
		double t0;
		int rc;

		if (strcmp(t->suite, suite) != 0)
			continue;
		n++;
		t0 = rdp_clock_s();
		printf("# %s/%s\n", suite, t->name);
		rc = run_forked(t, timeout_s);
		if (rc == 0)
			passed++;
		else if (rc == RDP_TEST_SKIPPED)
			skipped++;
		else
			failed++;
		printf("%s %u - %s (%.1f s)\n", rc == 0 ? "ok" :
		       rc == RDP_TEST_SKIPPED ? "skip" : "not ok", n, t->name, rdp_clock_s() - t0);
		fflush(stdout);
	}
	if (n == 0) {
		fprintf(stderr, "rdp-test: no test in suite '%s'\n", suite);
		return 1;
	}
	if (skipped > 0)
		printf("%u passed, %u failed, %u skipped\n", passed, failed, skipped);
	else
		printf("%u passed, %u failed\n", passed, failed);
	return failed > 0;
}

static void
usage(void)
{
	printf("usage: rdp-test [--driver SPEC] NAME          run one test\n"
	       "       rdp-test [--driver SPEC] --suite SUITE [--timeout S]\n"
	       "                                              run a suite, one child per test\n"
	       "       rdp-test --list [--suite SUITE]        list tests as 'suite name'\n");
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "driver", required_argument, NULL, 'd' },
		{ "suite", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 't' },
		{ "list", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *suite = NULL;
	int list = 0, timeout_s = 300, c;
	const struct test_case *t;
	unsigned int i;

	if (readlink("/proc/self/exe", self_path, sizeof(self_path) - 1) < 0)
		snprintf(self_path, sizeof(self_path), "%s", argv[0]);
	while ((c = getopt_long(argc, argv, "+d:s:t:lh", opts, NULL)) != -1) {
		switch (c) {
		case 'd': driver_spec = optarg; break;
		case 's': suite = optarg; break;
		case 't': timeout_s = atoi(optarg); break;
		case 'l': list = 1; break;
		case 'h': usage(); return 0;
		default: usage(); return 2;
		}
	}
	if (list) {
		for (i = 0; i < nb_tests; i++)
			if (suite == NULL || strcmp(suite, tests[i].suite) == 0)
				printf("%s %s\n", tests[i].suite, tests[i].name);
		return 0;
	}
	if (suite != NULL)
		return run_suite(suite, timeout_s);
	if (optind != argc - 1) {
		usage();
		return 2;
	}
	t = find_test(argv[optind]);
	if (t == NULL) {
		fprintf(stderr, "rdp-test: no test named '%s' (try --list)\n", argv[optind]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	return t->fn();
}
