/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: the configuration loader (rdp_cfg_load(), which scans the
 * file itself and then reads it with rte_cfgfile).
 *
 * The input is written to a memfd and loaded through /proc/self/fd, as a
 * file on disk would be. Properties:
 * - a refused file leaves an error that names the file and ends in a NUL;
 * - an accepted file is valid (rdp_cfg_validate()) and every lcore it
 *   names has values;
 * - an accepted file dumps (rdp_cfg_dump()) to a file that loads back to
 *   the same values, the secret aside (it is never printed).
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rte_log.h>

#include "fuzz.h"
#include "rdp_cfg.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* refusals are the common case: keep them off the fuzzer's output */
	rte_log_set_global_level(RTE_LOG_EMERG);
	return 0;
}

/* Write @p len bytes to a new memfd; returns the fd and its path. */
static int
memfd_with(const void *data, size_t len, char *path, size_t path_len)
{
	int fd = memfd_create("rdp-fuzz-cfg", MFD_CLOEXEC);

	FUZZ_ASSERT(fd >= 0);
	FUZZ_ASSERT(len == 0 || write(fd, data, len) == (ssize_t)len);
	snprintf(path, path_len, "/proc/self/fd/%d", fd);
	return fd;
}

/* Only what a string field holds counts, not the bytes after its NUL. */
#define CANON_STR(f) memset((f) + strnlen((f), sizeof(f)), 0, sizeof(f) - strnlen((f), sizeof(f)))

static void
canonical(struct rdp_cfg_lcore *l)
{
	CANON_STR(l->driver);
	CANON_STR(l->device);
	CANON_STR(l->listen);
	CANON_STR(l->connect);
	memset(l->secret, 0, sizeof(l->secret)); /* never printed */
}

static void
same_values(const struct rdp_cfg *a, const struct rdp_cfg *b)
{
	unsigned int ida[RTE_MAX_LCORE], idb[RTE_MAX_LCORE], n, i;
	struct rdp_cfg_lcore la, lb;

	n = rdp_cfg_lcores(a, ida, RTE_DIM(ida));
	FUZZ_ASSERT(rdp_cfg_lcores(b, idb, RTE_DIM(idb)) == n);
	for (i = 0; i <= n; i++) {
		int id = i < n ? (int)ida[i] : RDP_CFG_GLOBAL;

		if (i < n)
			FUZZ_ASSERT(ida[i] == idb[i]);
		FUZZ_ASSERT(rdp_cfg_lcore(a, id) != NULL && rdp_cfg_lcore(b, id) != NULL);
		la = *rdp_cfg_lcore(a, id);
		lb = *rdp_cfg_lcore(b, id);
		canonical(&la);
		canonical(&lb);
		FUZZ_ASSERT(memcmp(&la, &lb, sizeof(la)) == 0);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], path2[64];
	struct rdp_cfg *cfg, *again;
	char *dump = NULL;
	size_t dump_len = 0;
	FILE *out;
	int fd, fd2;

	fd = memfd_with(data, size, path, sizeof(path));
	cfg = rdp_cfg_load(path);
	if (cfg == NULL) {
		const char *msg = rdp_err_msg();

		FUZZ_ASSERT(rte_errno != 0);
		FUZZ_ASSERT(msg != NULL && msg[0] != '\0');
		close(fd);
		return 0;
	}
	FUZZ_ASSERT(rdp_cfg_validate(cfg) == 0);
	out = open_memstream(&dump, &dump_len);
	FUZZ_ASSERT(out != NULL);
	FUZZ_ASSERT(rdp_cfg_dump(cfg, out) == 0);
	FUZZ_ASSERT(fclose(out) == 0);
	fd2 = memfd_with(dump, dump_len, path2, sizeof(path2));
	again = rdp_cfg_load(path2);
	if (again == NULL)
		fprintf(stderr, "the dump does not load back: %s\n%s", rdp_err_msg(), dump);
	FUZZ_ASSERT(again != NULL);
	same_values(cfg, again);
	rdp_cfg_free(again);
	rdp_cfg_free(cfg);
	free(dump);
	close(fd2);
	close(fd);
	return 0;
}
