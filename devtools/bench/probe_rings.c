/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Many rings between two pinned CPUs, one per connection, laid out as the
 * shm driver lays out one receive queue per QP: the ceiling of the
 * connection-scaling test (rdp-perf -e N), and the way to tell whether
 * per-connection memory as such costs message rate on this machine.
 *
 * Each ring is a mapping of its own: 32 entries of 128 B (a line with the
 * sequence number, a line of payload) and the consumer's tail on a line of
 * its own. Beside it, in another mapping, is what a receiver keeps for each
 * entry: a 256 B receive buffer, a 128 B buffer header and a post record.
 * So a ring's lines come round again only every 32 of its own messages.
 *
 * The producer visits the rings in turn and writes up to --window messages
 * into each ring with room. The consumer visits the rings in turn and takes
 * every message that is ready: it checks the sequence number, copies the
 * payload into the entry's buffer, writes the buffer's header (both of its
 * lines) and the post record, and publishes the ring's tail once a visit.
 * --work N adds N dependent multiply-adds a message (--work 40: about 115
 * TSC cycles), standing in for a stack's own instructions.
 *
 *   probe-rings [--rings N] [--window W] [--work N] [--duration SEC]
 *               [--cpu-a N] [--cpu-b N]
 */
#include "probe_common.h"

#include <sys/mman.h>

#define RING_ENTRIES 32
#define PAYLOAD 64

struct ring_ent {
	_Alignas(PROBE_LINE) uint64_t seq; /* one past the message's number: complete */
	uint32_t len;
	_Alignas(PROBE_LINE) uint8_t payload[PAYLOAD];
};

struct ring {
	struct ring_ent ent[RING_ENTRIES];
	_Alignas(PROBE_LINE) uint64_t tail; /* consumer: messages taken */
};

/* What a receiver keeps per posted entry, in a mapping of its own. */
struct ring_side {
	uint8_t buf[RING_ENTRIES][256];
	struct {
		_Alignas(PROBE_LINE) uint64_t msg_no;
		uint32_t len;
		_Alignas(PROBE_LINE) uint64_t uses;
	} hdr[RING_ENTRIES];
	uint64_t posts[RING_ENTRIES];
};

struct ring_set {
	struct ring **ring;
	struct ring_side **side;
	uint32_t nb_rings;
	uint32_t window;
	uint32_t work;
	int cpu_a;
	_Alignas(PROBE_LINE) uint32_t stop; /* consumer asks the producer to stop */
};

static void *
map_or_die(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		fprintf(stderr, "probe-rings: mmap of %zu bytes: %s\n", len, strerror(errno));
		exit(1);
	}
	return p;
}

static void *
producer(void *arg)
{
	struct ring_set *rs = arg;
	uint64_t *head = calloc(rs->nb_rings, sizeof(*head));
	uint8_t src[PAYLOAD];
	uint32_t i;

	if (head == NULL)
		exit(1);
	memset(src, 0xa5, sizeof(src));
	if (probe_pin(rs->cpu_a) != 0)
		fprintf(stderr, "probe-rings: cannot pin to CPU %d\n", rs->cpu_a);
	while (!__atomic_load_n(&rs->stop, __ATOMIC_RELAXED)) {
		for (i = 0; i < rs->nb_rings; i++) {
			struct ring *r = rs->ring[i];
			uint64_t h = head[i], tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
			uint32_t n;

			for (n = 0; n < rs->window && h - tail < RING_ENTRIES; n++, h++) {
				struct ring_ent *e = &r->ent[h % RING_ENTRIES];

				memcpy(e->payload, src, sizeof(src));
				memcpy(e->payload, &h, sizeof(h));
				e->len = PAYLOAD;
				__atomic_store_n(&e->seq, h + 1, __ATOMIC_RELEASE);
			}
			head[i] = h;
		}
	}
	free(head);
	return NULL;
}

/* One visit to ring @p i: every message ready, in order; returns how many, or -1 (corrupt). */
static int
take(struct ring_set *rs, uint64_t *tails, uint32_t i, uint64_t *sink)
{
	struct ring *r = rs->ring[i];
	struct ring_side *s = rs->side[i];
	uint64_t t = tails[i], acc = *sink, no;
	int n = 0;

	for (;;) {
		struct ring_ent *e = &r->ent[t % RING_ENTRIES];
		uint32_t x = (uint32_t)(t % RING_ENTRIES), w;

		if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) != t + 1)
			break;
		memcpy(s->buf[x], e->payload, e->len);
		memcpy(&no, s->buf[x], sizeof(no));
		if (no != t) {
			fprintf(stderr, "probe-rings: ring %u entry %" PRIu64 " holds message %" PRIu64 "\n",
				i, t, no);
			return -1;
		}
		s->hdr[x].msg_no = no;
		s->hdr[x].len = e->len;
		s->hdr[x].uses++;
		s->posts[x] = t + RING_ENTRIES;
		for (w = 0; w < rs->work; w++)
			acc = acc * 6364136223846793005ull + no;
		t++;
		n++;
	}
	if (n > 0) {
		tails[i] = t;
		__atomic_store_n(&r->tail, t, __ATOMIC_RELEASE);
	}
	*sink = acc;
	return n;
}

int
main(int argc, char **argv)
{
	static struct ring_set rs;
	double duration = probe_opt(argc, argv, "--duration", 1.0);
	int cpu_b = (int)probe_opt(argc, argv, "--cpu-b", 1);
	uint64_t count = 0, sink = 0;
	struct probe_window win;
	uint64_t *tails;
	uint32_t i;
	pthread_t th;

	rs.nb_rings = (uint32_t)probe_opt(argc, argv, "--rings", 1024);
	rs.window = (uint32_t)probe_opt(argc, argv, "--window", 16);
	rs.work = (uint32_t)probe_opt(argc, argv, "--work", 0);
	rs.cpu_a = (int)probe_opt(argc, argv, "--cpu-a", 0);
	if (rs.nb_rings < 1 || rs.nb_rings > 65536 || rs.window < 1 ||
	    rs.window > RING_ENTRIES || rs.work > 100000) {
		fprintf(stderr, "probe-rings: need 1 <= --rings <= 65536, 1 <= --window <= %d "
			"and --work <= 100000\n", RING_ENTRIES);
		return 2;
	}
	rs.ring = calloc(rs.nb_rings, sizeof(*rs.ring));
	rs.side = calloc(rs.nb_rings, sizeof(*rs.side));
	tails = calloc(rs.nb_rings, sizeof(*tails));
	if (rs.ring == NULL || rs.side == NULL || tails == NULL)
		return 1;
	for (i = 0; i < rs.nb_rings; i++) {
		rs.ring[i] = map_or_die(sizeof(struct ring));
		rs.side[i] = map_or_die(sizeof(struct ring_side));
	}
	if (probe_pin(cpu_b) != 0)
		fprintf(stderr, "probe-rings: cannot pin to CPU %d\n", cpu_b);
	probe_spawn(&th, producer, &rs);
	probe_window_init(&win, duration);
	for (;;) {
		for (i = 0; i < rs.nb_rings; i++) {
			int n = take(&rs, tails, i, &sink);

			if (n < 0)
				return 1;
			count += (uint64_t)n;
		}
		if (probe_window_done(&win, rdp_clock_ns(), count))
			break;
	}
	__atomic_store_n(&rs.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	{
		double secs = probe_window_secs(&win);
		double rate = secs > 0 ? probe_window_count(&win) / secs : 0;

		printf("{\"probe\": \"rings\", \"cpu_a\": %d, \"cpu_b\": %d, \"rings\": %u, "
		       "\"window\": %u, \"work\": %u, \"messages\": %" PRIu64 ", \"seconds\": %.3f, "
		       "\"msg_rate\": %.1f, \"sink\": %" PRIu64 "}\n", rs.cpu_a, cpu_b, rs.nb_rings,
		       rs.window, rs.work, probe_window_count(&win), secs, rate, sink & 1);
	}
	for (i = 0; i < rs.nb_rings; i++) {
		munmap(rs.ring[i], sizeof(struct ring));
		munmap(rs.side[i], sizeof(struct ring_side));
	}
	free(rs.ring);
	free(rs.side);
	free(tails);
	return 0;
}
