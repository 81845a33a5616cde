/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdp-config: check a configuration file before deploying it, the way
 * `nginx -t` does. Prints the resolved values of [global] and of every
 * [lcore.N] on stdout, or the first error on stderr.
 */
#include <stdio.h>
#include <string.h>

#include "rdp_cfg.h"

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
		"Exit status: 0 valid, 1 invalid (the error is printed as\n"
		"FILE:LINE: [SECTION] KEY = VALUE: RULE), 2 bad usage.\n"
		"Keys and rules: docs/configuration.md.\n");
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
