/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A program outside the tree, built by devtools/test_install.sh against an
 * installed rdmaplane with nothing but `pkg-config librdmaplane`, linked
 * to librdmaplane.so and (`pkg-config --static`) to librdmaplane.a.
 * Usage: install_consumer GOOD.ini BAD.ini
 */
#define _GNU_SOURCE /* dladdr() */
#include <dlfcn.h>
#include <stdio.h>

#include <rdp_build_config.h>
#include <rdp_cfg.h>
#include <rdp_credit.h>
#include <rdp_dev.h>

int
main(int argc, char **argv)
{
	const struct rdp_cfg_lcore *lc;
	struct rdp_credit_params p;
	struct rdp_cfg *cfg;
	char why[256];
	Dl_info info;

	if (argc != 3) {
		fprintf(stderr, "usage: %s GOOD.ini BAD.ini\n", argv[0]);
		return 2;
	}
	/* which librdmaplane the dynamic linker chose */
	if (dladdr((void *)rdp_cfg_load, &info) == 0 || info.dli_fname == NULL)
		return 1;
	printf("library: %s\n", info.dli_fname);
	printf("version: %s\n", RDP_VERSION);

	cfg = rdp_cfg_load(argv[1]);
	if (cfg == NULL) {
		printf("unexpected error: %s\n", rdp_err_msg());
		return 1;
	}
	lc = rdp_cfg_lcore(cfg, 1);
	rdp_cfg_credit_params(lc, &p);
	printf("lcore 1: sq_size=%u rq_size=%u credit check %d\n", p.sq_size, p.rq_size,
	       rdp_credit_params_check(&p, why, sizeof(why)));
	rdp_cfg_free(cfg);

	if (rdp_cfg_load(argv[2]) != NULL)
		return 1;
	printf("%s\n", rdp_err_msg());

	/* the drivers register from constructors: a static link must keep them */
	if (rdp_dev_open("nosuch") != NULL)
		return 1;
	printf("%s\n", rdp_err_msg());
	return 0;
}
