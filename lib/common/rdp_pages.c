/* SPDX-License-Identifier: BSD-3-Clause */
/* Page sizes as the kernel reports them in /proc/meminfo and /proc/self/smaps. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <rte_common.h>

#include "rdp_pages.h"

/* The value of "NAME: value [kB]" in /proc/meminfo, or -1. */
static long
meminfo_value(const char *name)
{
	size_t n = strlen(name);
	char line[128];
	long v = -1;
	FILE *f;

	f = fopen("/proc/meminfo", "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, name, n) == 0 && line[n] == ':') {
			if (sscanf(line + n + 1, "%ld", &v) != 1)
				v = -1;
			break;
		}
	}
	fclose(f);
	return v;
}

size_t
rdp_hugepage_size(void)
{
	long kb = meminfo_value("Hugepagesize");

	return kb > 0 ? (size_t)kb << 10 : 0;
}

long
rdp_hugepages_free(void)
{
	long free_pages = meminfo_value("HugePages_Free");
	long reserved = meminfo_value("HugePages_Rsvd");

	/* a mapping reserves its pages at mmap and takes them from Free at fault */
	return free_pages < 0 || reserved < 0 ? -1 : RTE_MAX(free_pages - reserved, 0L);
}

size_t
rdp_page_size_at(const void *addr)
{
	uintptr_t a = (uintptr_t)addr, lo, hi;
	bool inside = false;
	size_t size = 0;
	char line[512];
	FILE *f;

	f = fopen("/proc/self/smaps", "r");
	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long kb;

		/* a mapping starts with "lo-hi perms ..."; its fields follow */
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			inside = a >= lo && a < hi;
			continue;
		}
		if (inside && sscanf(line, "KernelPageSize: %lu kB", &kb) == 1) {
			size = (size_t)kb << 10;
			break;
		}
	}
	fclose(f);
	return size;
}
