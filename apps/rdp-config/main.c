/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdp-config: check a configuration file before deploying it, the way
 * `nginx -t` does. Prints the resolved values of [global] and of every
 * [lcore.N] on stdout, or the first error on stderr. A device the keys
 * name (device, port, gid_index) is looked for on this machine.
 */
#include <stdio.h>
#include <string.h>

#include <rte_errno.h>

#include "rdp_cfg.h"
#include "rdp_dev.h"

enum exit_status {
	EXIT_VALID = 0,
	EXIT_INVALID = 1,
	EXIT_USAGE = 2,
};

static void
usage(FILE *out)
{
	fprintf(out,
		"usage: rdp-config check FILE   validate FILE and print the values each lcore\n"
		"                               runs with ([global] first, then [lcore.N])\n"
		"       rdp-config --help       show this help\n"
		"\n"
		"A device that device, port and gid_index name must be on this\n"
		"machine (the error lists the devices there).\n"
		"Exit status: 0 valid, 1 invalid (the error is printed as\n"
		"FILE:LINE: [SECTION] KEY = VALUE: RULE), 2 bad usage.\n"
		"Keys and rules: docs/configuration.md.\n");
}

/* Every device the keys name must be on this machine, with that port and GID. */
static int
check_devices(const struct rdp_cfg *cfg)
{
	struct rdp_cfg_device devs[4];
	struct rdp_dev *dev;
	int n, i;

	n = rdp_cfg_devices(cfg, devs, RTE_DIM(devs), NULL);
	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		if (devs[i].key == NULL)
			continue; /* the driver picks at start */
		dev = rdp_dev_open(devs[i].spec);
		if (dev == NULL)
			return rdp_cfg_key_error(cfg, devs[i].section, devs[i].key, rte_errno, "%s",
						 rdp_err_msg());
		rdp_dev_close(dev);
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct rdp_cfg *cfg;
	unsigned int n;
	int ret;

	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		usage(stdout);
		return EXIT_VALID;
	}
	if (argc != 3 || strcmp(argv[1], "check") != 0) {
		usage(stderr);
		return EXIT_USAGE;
	}
	cfg = rdp_cfg_load(argv[2]);
	if (cfg == NULL) {
		fprintf(stderr, "%s\n", rdp_err_msg());
		return EXIT_INVALID;
	}
	ret = check_devices(cfg);
	if (ret < 0) {
		fprintf(stderr, "%s\n", rdp_err_msg());
		rdp_cfg_free(cfg);
		return EXIT_INVALID;
	}
	ret = rdp_cfg_dump(cfg, stdout);
	n = rdp_cfg_lcores(cfg, NULL, 0);
	rdp_cfg_free(cfg);
	if (ret < 0) {
		fprintf(stderr, "rdp-config: %s\n", rdp_err_msg());
		return EXIT_INVALID;
	}
	fprintf(stderr, "rdp-config: %s is valid ([global] and %u lcore section%s)\n",
		argv[2], n, n == 1 ? "" : "s");
	return EXIT_VALID;
}
