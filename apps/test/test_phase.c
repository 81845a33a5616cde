/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The endpoint lifecycle's table of moves (lib/ep/ep_phase.c) and the one
 * docs/architecture.md shows ("Endpoint lifecycle") are the same: a move
 * added to one and not to the other fails here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ep_private.h"
#include "rdp_test.h"

/* The phase named @p name (its cell of a table row, spaces trimmed), or EP_PH_COUNT. */
static enum ep_phase
phase_by_name(const char *cell, size_t len)
{
	unsigned int p;

	while (len > 0 && cell[0] == ' ') {
		cell++;
		len--;
	}
	while (len > 0 && cell[len - 1] == ' ')
		len--;
	for (p = 0; p < EP_PH_COUNT; p++) {
		const char *name = ep_phase_name((enum ep_phase)p);

		if (strlen(name) == len && strncmp(name, cell, len) == 0)
			return (enum ep_phase)p;
	}
	return EP_PH_COUNT;
}

/*
 * The rows of the table under the header line @p header of
 * docs/architecture.md's "Endpoint lifecycle": the first two cells of each
 * as phases, in @p from and @p to (up to @p max). Returns the rows read.
 */
static unsigned int
doc_rows(const char *header, enum ep_phase *from, enum ep_phase *to, unsigned int max)
{
	const char *root = getenv("RDP_SOURCE_ROOT");
	char path[1024], line[1024];
	bool in_section = false, in_table = false;
	unsigned int n = 0;
	FILE *f;

	RDP_ASSERT_MSG(root != NULL, "RDP_SOURCE_ROOT is not set (run through meson test)");
	snprintf(path, sizeof(path), "%s/docs/architecture.md", root);
	f = fopen(path, "r");
	RDP_ASSERT_MSG(f != NULL, "%s: cannot open", path);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "## ", 3) == 0) {
			in_section = strcmp(line, "## Endpoint lifecycle\n") == 0;
			in_table = false;
			continue;
		}
		if (!in_section)
			continue;
		if (!in_table) {
			in_table = strcmp(line, header) == 0;
			continue;
		}
		if (line[0] != '|')
			break;
		if (strncmp(line, "|---", 4) == 0)
			continue;
		{
			char *c1 = line + 1, *c2 = strchr(c1, '|'), *c3;

			RDP_ASSERT_MSG(c2 != NULL && (c3 = strchr(c2 + 1, '|')) != NULL,
				       "architecture.md: a row without two cells: %s", line);
			RDP_ASSERT(n < max);
			from[n] = phase_by_name(c1, (size_t)(c2 - c1));
			to[n] = phase_by_name(c2 + 1, (size_t)(c3 - c2 - 1));
			n++;
		}
	}
	fclose(f);
	RDP_ASSERT_MSG(n > 0, "architecture.md has no table under \"%.*s\" in \"Endpoint "
		       "lifecycle\"", (int)strlen(header) - 1, header);
	return n;
}

RDP_TEST(unit, ep_phase_moves_are_the_ones_architecture_md_shows)
{
	enum ep_phase from[64], to[64];
	bool doc[EP_PH_COUNT][EP_PH_COUNT] = { { false } };
	unsigned int n = doc_rows("| from | to | when |\n", from, to, 64), i, a, b, moves = 0;

	for (i = 0; i < n; i++) {
		RDP_ASSERT_MSG(from[i] < EP_PH_COUNT && to[i] < EP_PH_COUNT,
			       "architecture.md, row %u of the moves: a phase the code does not "
			       "have", i + 1);
		RDP_ASSERT_MSG(!doc[from[i]][to[i]], "architecture.md lists %s -> %s twice",
			       ep_phase_name(from[i]), ep_phase_name(to[i]));
		doc[from[i]][to[i]] = true;
	}
	for (a = 0; a < EP_PH_COUNT; a++) {
		for (b = 0; b < EP_PH_COUNT; b++) {
			bool code = ep_phase_allowed((enum ep_phase)a, (enum ep_phase)b);

			RDP_ASSERT_MSG(code == doc[a][b], "%s -> %s: %s, but %s",
				       ep_phase_name((enum ep_phase)a),
				       ep_phase_name((enum ep_phase)b),
				       code ? "the code allows it" : "the code refuses it",
				       doc[a][b] ? "architecture.md lists it" :
				       "architecture.md does not list it");
			moves += code;
		}
	}
	printf("%u moves between %u phases, the same in the code and in architecture.md\n",
	       moves, EP_PH_COUNT);
	return 0;
}

RDP_TEST(unit, ep_phase_table_of_architecture_md_names_every_phase_once)
{
	enum ep_phase ph[64], unused[64];
	bool seen[EP_PH_COUNT] = { false };
	unsigned int n = doc_rows("| phase | owner | what holds |\n", ph, unused, 64), i;

	for (i = 0; i < n; i++) {
		RDP_ASSERT_MSG(ph[i] < EP_PH_COUNT, "architecture.md, row %u of the phases: not a "
			       "phase of the code", i + 1);
		RDP_ASSERT_MSG(!seen[ph[i]], "architecture.md names %s twice",
			       ep_phase_name(ph[i]));
		seen[ph[i]] = true;
	}
	for (i = 0; i < EP_PH_COUNT; i++)
		RDP_ASSERT_MSG(seen[i], "architecture.md does not name phase %s",
			       ep_phase_name((enum ep_phase)i));
	return 0;
}
