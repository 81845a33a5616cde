/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Replay driver: runs a fuzz target over files without libFuzzer, with any
 * compiler. `fuzz-replay-T DIR|FILE...` feeds every file (directories are
 * read one level deep) to LLVMFuzzerTestOneInput(): the committed seed
 * corpus and every crash ever found (apps/fuzz/regress/T/) stay tests in
 * every lane. A broken property aborts the process, naming the file.
 */
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static unsigned int runs;

static void
run_file(const char *path)
{
	uint8_t *buf;
	long len;
	FILE *f = fopen(path, "rb");

	if (f == NULL) {
		perror(path);
		exit(1);
	}
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc(len > 0 ? (size_t)len : 1);
	if (buf == NULL || (len > 0 && fread(buf, 1, (size_t)len, f) != (size_t)len)) {
		fprintf(stderr, "%s: cannot read\n", path);
		exit(1);
	}
	fclose(f);
	fprintf(stderr, "replay %s (%ld bytes)\n", path, len);
	LLVMFuzzerTestOneInput(buf, (size_t)len);
	free(buf);
	runs++;
}

static int
by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int
main(int argc, char **argv)
{
	int i;

	if (LLVMFuzzerInitialize != NULL)
		LLVMFuzzerInitialize(&argc, &argv);
	for (i = 1; i < argc; i++) {
		struct dirent **names;
		struct stat st;
		int n, j;

		if (stat(argv[i], &st) != 0) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			run_file(argv[i]);
			continue;
		}
		n = scandir(argv[i], &names, NULL, by_name);
		for (j = 0; j < n; j++) {
			char path[4096];

			if (names[j]->d_name[0] != '.') {
				snprintf(path, sizeof(path), "%s/%s", argv[i], names[j]->d_name);
				run_file(path);
			}
			free(names[j]);
		}
		free(names);
	}
	printf("%u inputs replayed, every property held\n", runs);
	return runs > 0 ? 0 : 1;
}
