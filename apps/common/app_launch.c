/* SPDX-License-Identifier: BSD-3-Clause */
/* Starting rdmaplane's apps: default EAL options and the loopback server. */
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app_launch.h"

void
app_two_cpus(int *a, int *b)
{
	cpu_set_t set;
	int i, n = 0;

	*a = *b = 0;
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return;
	for (i = 0; i < CPU_SETSIZE && n < 2; i++) {
		if (!CPU_ISSET(i, &set))
			continue;
		if (n++ == 0)
			*a = *b = i;
		else
			*b = i;
	}
}

void
app_eal_defaults(struct app_eal_args *e, const char *prog, const char *lcores,
		 const char *prefix, bool telemetry)
{
	int a, b;

	app_two_cpus(&a, &b);
	if (lcores != NULL)
		snprintf(e->lcores, sizeof(e->lcores), "%s", lcores);
	else
		snprintf(e->lcores, sizeof(e->lcores), "0@%d,1@%d", b, a);
	snprintf(e->prefix, sizeof(e->prefix), "%s-%d", prefix, (int)getpid());
	e->argc = 0;
	e->argv[e->argc++] = (char *)prog;
	e->argv[e->argc++] = (char *)"--lcores";
	e->argv[e->argc++] = e->lcores;
	e->argv[e->argc++] = (char *)"--no-huge";
	e->argv[e->argc++] = (char *)"--no-pci";
	e->argv[e->argc++] = (char *)"--no-shconf";
	e->argv[e->argc++] = (char *)"-m";
	e->argv[e->argc++] = (char *)"512";
	e->argv[e->argc++] = (char *)"--file-prefix";
	e->argv[e->argc++] = e->prefix;
	e->argv[e->argc++] = (char *)"--log-level=lib.eal:error";
	e->argv[e->argc++] = telemetry ? (char *)"--log-level=lib.telemetry:warning" :
			     (char *)"--no-telemetry";
	e->argv[e->argc] = NULL;
}

bool
app_eal_args_huge(int argc, char *const argv[])
{
	int i;

	if (argc <= 1)
		return false; /* app_eal_defaults(): no hugepages */
	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "--no-huge") == 0)
			return false;
	return true;
}

pid_t
app_spawn_server(const char *server_lcores, const char *prefix, bool huge,
		 const char *const app_args[], int *port)
{
	char fdstr[16], lc[64];
	struct app_eal_args e;
	char *argv[APP_EAL_ARGS_MAX + 48];
	int fds[2], a, b, n, i;
	pid_t pid;

	app_two_cpus(&a, &b);
	snprintf(lc, sizeof(lc), "0@%d,1@%d", a, b);
	app_eal_defaults(&e, "rdp-server", server_lcores != NULL ? server_lcores : lc, prefix,
			 false);
	if (pipe(fds) != 0)
		return -1;
	snprintf(fdstr, sizeof(fdstr), "%d", fds[1]);
	for (i = n = 0; i < e.argc; i++) {
		/* on hugepages as the client is: no files, memory as it is needed */
		if (huge && strcmp(e.argv[i], "-m") == 0)
			i++;
		else if (huge && strcmp(e.argv[i], "--no-huge") == 0)
			argv[n++] = (char *)"--in-memory";
		else if (!huge || strcmp(e.argv[i], "--no-shconf") != 0)
			argv[n++] = e.argv[i];
	}
	/* the client reports; the server keeps quiet about clients leaving */
	argv[n++] = (char *)"--log-level=rdp.ep:warning";
	argv[n++] = (char *)"--";
	for (i = 0; app_args[i] != NULL && n < (int)(sizeof(argv) / sizeof(argv[0])) - 3; i++)
		argv[n++] = (char *)app_args[i];
	argv[n++] = (char *)"--port-fd";
	argv[n++] = fdstr;
	argv[n] = NULL;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		prctl(PR_SET_PDEATHSIG, SIGTERM); /* do not outlive the client */
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	close(fds[1]);
	if (pid < 0 || read(fds[0], port, sizeof(*port)) != sizeof(*port)) {
		close(fds[0]);
		if (pid > 0)
			waitpid(pid, NULL, 0);
		return -1;
	}
	close(fds[0]);
	return pid;
}
