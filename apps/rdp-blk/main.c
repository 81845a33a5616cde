/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdp-blk: the storage backend demo of rdmaplane.
 *
 *   rdp-blk [EAL options] -- serve ...   export files or memory as 512-byte blocks
 *   rdp-blk [EAL options] -- load ...    drive a server: IOPS, latency, --verify
 *
 * EAL options come before "--", the command and its options after. Without
 * EAL options rdp-blk needs no hugepages and pins one poller lcore: the
 * server's on the second CPU, the loader's on the first. A loader without
 * --connect starts its server as a second process of this binary (exec,
 * since EAL initialises once per process).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include "app_launch.h"
#include "blk.h"
#include "blk_proto.h"
#include "rdp_build_config.h"
#include "rdp_ep.h"

/* A local server's device when neither --size nor --file says otherwise. */
#define LOCAL_DEVICE_SIZE (256ull << 20)
/* The library's default max_msg_size, and what rdp-blk takes instead: a
 * 1 MiB block and its header (BLK_HDR_SIZE) in one message. */
#define BLK_DEFAULT_MAX_MSG 1048576u
#define BLK_MAX_MSG_STR "1048640"
_Static_assert(1048640 >= BLK_HDR_SIZE + BLK_MAX_COUNT * BLK_BLOCK_SIZE, "a 1 MiB request fits");

volatile sig_atomic_t blk_force_quit;

static void
on_signal(int sig)
{
	RTE_SET_USED(sig);
	blk_force_quit = 1;
}

int
blk_bad_option(const char *cmd, const char *name, const char *value, const char *rule)
{
	fprintf(stderr, "rdp-blk %s: %s%s%s: %s (see rdp-blk %s --help)\n", cmd, name,
		value[0] != '\0' ? " " : "", value, rule, cmd);
	return -1;
}

int
blk_parse_size(const char *s, uint64_t *bytes)
{
	unsigned int shift = 0;
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	switch (toupper((unsigned char)*end)) {
	case 'K': shift = 10; break;
	case 'M': shift = 20; break;
	case 'G': shift = 30; break;
	case 'T': shift = 40; break;
	case '\0': break;
	default: return -1;
	}
	if (shift != 0)
		end++;
	if (*end != '\0' || v > (UINT64_MAX >> shift))
		return -1;
	*bytes = (uint64_t)v << shift;
	return 0;
}

unsigned int
blk_poller_lcores(const struct rdp_cfg *cfg, unsigned int *ids, unsigned int max)
{
	unsigned int n = rdp_cfg_lcores(cfg, ids, max), l;

	if (n > 0)
		return RTE_MIN(n, max);
	RTE_LCORE_FOREACH_WORKER(l) {
		if (n < max)
			ids[n++] = l;
	}
	return n;
}

static void
usage(FILE *f)
{
	fprintf(f,
"usage: rdp-blk [EAL options] -- serve|load [options]\n"
"\n"
"The storage backend demo of rdmaplane: 512-byte blocks, read, write and\n"
"flush requests of 512 B to 1 MiB carried by rdmaplane endpoints, handled\n"
"on the poller lcores (file I/O by io_uring, never waited for there).\n"
"\n"
"Commands:\n"
"  serve    export files, block devices or memory (rdp-blk serve --help)\n"
"  load     drive a server and report IOPS and latency percentiles; --verify\n"
"           checks every block read (rdp-blk load --help)\n"
"\n"
"EAL options come before '--'. Without them rdp-blk needs no hugepages: a\n"
"server polls on the second CPU, a loader on the first.\n"
"\n"
"Examples:\n"
"  rdp-blk -- load                      loopback: a memory server in a second\n"
"                                       process, 4 KiB random reads for 5 s\n"
"  rdp-blk -- serve --memory 1G         serve on 127.0.0.1:18515\n"
"  rdp-blk -- load --connect 127.0.0.1:18515 --rw randwrite --verify\n"
"\n"
"See docs/rdp-blk.md for the protocol and the durability promise.\n");
}

/* Loopback: start `serve` as a second process; returns its pid and port. */
static pid_t
spawn_server(const struct load_opts *o, const char *config, const char *driver, bool huge,
	     int *port)
{
	const char *args[24] = { "serve", "--quiet", "--listen", "127.0.0.1:0" };
	char size[32];
	int n = 4;

	snprintf(size, sizeof(size), "%" PRIu64, o->size != 0 ? o->size : (uint64_t)LOCAL_DEVICE_SIZE);
	if (o->file != NULL) {
		args[n++] = "--file";
		args[n++] = o->file;
		if (o->size != 0) {
			args[n++] = "--size";
			args[n++] = size;
		}
	} else {
		args[n++] = "--memory";
		args[n++] = size;
	}
	if (o->sync)
		args[n++] = "--sync";
	if (o->no_direct)
		args[n++] = "--no-direct";
	if (driver != NULL) {
		args[n++] = "--driver";
		args[n++] = driver;
	}
	if (config != NULL) {
		args[n++] = "--config";
		args[n++] = config;
	}
	args[n] = NULL;
	return app_spawn_server(o->server_lcores, "rdp-blk-srv", huge, args, port);
}

/*
 * Does this process serve a file? Then its pollers sleep after idle polls
 * (idle_sleep_us, unless the configuration sets it): the kernel completes
 * O_DIRECT writes (ext4's, XFS's when they convert extents) in a worker
 * thread on the CPU that took the disk's interrupt, and a poller spinning
 * there starves it for seconds.
 */
#define BLK_IDLE_SLEEP_US "10"

static bool
serve_files(const struct serve_opts *so, const struct load_opts *lo)
{
	unsigned int i;

	if (lo != NULL)
		return lo->in_process && lo->file != NULL;
	for (i = 0; i < so->nb_exports; i++)
		if (so->exports[i].file != NULL)
			return true;
	return false;
}

/* The configuration with the command line applied; NULL after a message. */
static struct rdp_cfg *
load_cfg(const char *cmd, const struct blk_common *c)
{
	unsigned int ids[RTE_MAX_LCORE], n, i;
	struct rdp_cfg *cfg = c->config != NULL ? rdp_cfg_load(c->config) : rdp_cfg_default();

	if (cfg == NULL || (c->driver != NULL &&
			    rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "driver", c->driver, "--driver") < 0) ||
	    rdp_cfg_validate(cfg) < 0) {
		fprintf(stderr, "rdp-blk %s: %s\n", cmd, rdp_err_msg());
		rdp_cfg_free(cfg);
		return NULL;
	}
	/* a 1 MiB block and its header in one message, unless the configuration says */
	if (rdp_cfg_lcore(cfg, RDP_CFG_GLOBAL)->max_msg_size == BLK_DEFAULT_MAX_MSG &&
	    (rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "max_msg_size", BLK_MAX_MSG_STR, "rdp-blk") < 0 ||
	     rdp_cfg_validate(cfg) < 0)) {
		fprintf(stderr, "rdp-blk %s: %s\n", cmd, rdp_err_msg());
		rdp_cfg_free(cfg);
		return NULL;
	}
	n = rdp_cfg_lcores(cfg, ids, RTE_DIM(ids));
	for (i = 0; i <= n; i++) {
		const struct rdp_cfg_lcore *lc = rdp_cfg_lcore(cfg, i < n ? (int)ids[i] :
							       RDP_CFG_GLOBAL);

		if (lc->mode != RDP_CFG_MODE_RTC && (i < n || n == 0)) {
			fprintf(stderr, "rdp-blk %s: %s: mode = pipeline%s: rdp-blk runs to "
				"completion on its poller lcores (mode = rtc)\n", cmd, c->config != NULL ? c->config : "configuration",
				i < n ? " in an [lcore.N] section" : "");
			rdp_cfg_free(cfg);
			return NULL;
		}
	}
	return cfg;
}

int
main(int argc, char **argv)
{
	static char connect[128];
	struct app_eal_args dflt;
	char lc[64], **eal_argv;
	int eal_argc, app_argc, i, a, b, ret, port;
	unsigned int pollers[RTE_MAX_LCORE], nb_pollers;
	const struct blk_common *common;
	struct serve_opts so;
	struct load_opts lo;
	struct rdp_cfg *cfg;
	char **app_argv;
	bool serve;
	pid_t srv = -1;

	/* EAL options come before "--"; without "--" everything is ours */
	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		;
	if (i < argc) {
		app_argc = argc - i - 1;
		app_argv = argv + i + 1;
	} else {
		app_argc = argc - 1;
		app_argv = argv + 1;
		i = 1;
	}
	if (app_argc == 0) {
		usage(stderr);
		return BLK_EXIT_USAGE;
	}
	if (strcmp(app_argv[0], "-h") == 0 || strcmp(app_argv[0], "--help") == 0) {
		usage(stdout);
		return BLK_EXIT_OK;
	}
	serve = strcmp(app_argv[0], "serve") == 0;
	if (!serve && strcmp(app_argv[0], "load") != 0) {
		fprintf(stderr, "rdp-blk: %s: unknown command: expected serve or load (EAL options "
			"go before '--'; see rdp-blk --help)\n", app_argv[0]);
		return BLK_EXIT_USAGE;
	}
	if (serve ? serve_parse(app_argc, app_argv, &so) < 0 : load_parse(app_argc, app_argv, &lo) < 0)
		return BLK_EXIT_USAGE;
	common = serve ? &so.c : &lo.c;
	cfg = load_cfg(app_argv[0], common);
	if (cfg == NULL)
		return BLK_EXIT_USAGE;
	if (serve_files(serve ? &so : NULL, serve ? NULL : &lo) &&
	    rdp_cfg_lcore(cfg, RDP_CFG_GLOBAL)->idle_sleep_us == 0 &&
	    rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "idle_sleep_us", BLK_IDLE_SLEEP_US, "rdp-blk") < 0) {
		fprintf(stderr, "rdp-blk: %s\n", rdp_err_msg());
		rdp_cfg_free(cfg);
		return BLK_EXIT_USAGE;
	}
	if (!serve && lo.connect == NULL && !lo.in_process) {
		const char *c = rdp_cfg_lcore(cfg, RDP_CFG_GLOBAL)->connect;

		if (c[0] != '\0') {
			lo.connect = c;
		} else {
			srv = spawn_server(&lo, common->config, common->driver,
					   app_eal_args_huge(i, argv), &port);
			if (srv < 0) {
				fprintf(stderr, "rdp-blk load: the loopback server did not start\n");
				rdp_cfg_free(cfg);
				return BLK_EXIT_FAIL;
			}
			snprintf(connect, sizeof(connect), "127.0.0.1:%d", port);
			lo.connect = connect;
		}
	}
	if (i == 1) {
		/* no EAL options: no hugepages, no PCI, pollers pinned */
		app_two_cpus(&a, &b);
		if (serve)
			snprintf(lc, sizeof(lc), "0@%d,1@%d", a, b);
		else if (lo.in_process)
			snprintf(lc, sizeof(lc), "0@%d,1@%d,2@%d", b, a, b);
		else
			snprintf(lc, sizeof(lc), "0@%d,1@%d", b, a);
		app_eal_defaults(&dflt, argv[0], lc, "rdp-blk", serve);
		eal_argc = dflt.argc;
		eal_argv = dflt.argv;
	} else {
		eal_argc = i;
		eal_argv = argv;
	}
	ret = BLK_EXIT_FAIL;
	if (rte_eal_init(eal_argc, eal_argv) < 0) {
		fprintf(stderr, "rdp-blk: EAL: %s (EAL options go before '--')\n",
			rte_strerror(rte_errno));
		goto out;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (rdp_init(cfg) < 0) {
		fprintf(stderr, "rdp-blk %s: %s\n", app_argv[0], rdp_err_msg());
		goto eal;
	}
	if (!common->quiet)
		printf("rdp-blk %s %s: driver %s\n", app_argv[0], RDP_VERSION, rdp_driver_info());
	nb_pollers = blk_poller_lcores(cfg, pollers, RTE_DIM(pollers));
	if (serve) {
		ret = serve_run(&so);
	} else if (lo.in_process) {
		/* the server takes the last poller, the loader the others (or shares it) */
		memset(&so, 0, sizeof(so));
		so.c = lo.c;
		so.exports[0].file = lo.file;
		so.exports[0].size = lo.size != 0 ? lo.size : LOCAL_DEVICE_SIZE;
		so.nb_exports = 1;
		so.size = lo.file != NULL ? lo.size : 0;
		so.no_direct = lo.no_direct;
		so.sync = lo.sync;
		so.listen = "127.0.0.1:0";
		so.port_fd = -1;
		if (blk_server_start(&so, (int)pollers[nb_pollers - 1], &port) == 0) {
			snprintf(connect, sizeof(connect), "127.0.0.1:%d", port);
			lo.connect = connect;
			ret = load_run(&lo, cfg, pollers, nb_pollers > 1 ? nb_pollers - 1 : 1);
		}
	} else {
		ret = load_run(&lo, cfg, pollers, nb_pollers);
	}
	if (serve || lo.in_process)
		blk_server_quiesce();
	if (rdp_fini() < 0) {
		fprintf(stderr, "rdp-blk %s: %s\n", app_argv[0], rdp_err_msg());
		ret = BLK_EXIT_FAIL;
	}
	if (serve || lo.in_process)
		blk_server_stop();
eal:
	rte_eal_cleanup();
out:
	rdp_cfg_free(cfg);
	if (srv > 0) {
		int status;

		kill(srv, SIGTERM);
		waitpid(srv, &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "rdp-blk load: the loopback server ended with status %#x\n",
				status);
			ret = BLK_EXIT_FAIL;
		}
	}
	return ret;
}
