/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_FUZZ_H
#define RDP_FUZZ_H

/*
 * Shared by the libFuzzer targets and their replay driver (replay.c). A
 * target defines LLVMFuzzerTestOneInput() and checks its properties with
 * FUZZ_ASSERT(), which aborts: libFuzzer saves the input as a crash, the
 * replay driver fails its test.
 */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FUZZ_ASSERT(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: property broken: %s\n", __FILE__, __LINE__, #cond); \
		abort(); \
	} \
} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#endif /* RDP_FUZZ_H */
