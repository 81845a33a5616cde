/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The model suite: spin checks lib/credit/model/credit.pml.
 *
 * Each run copies the model from the source tree ($RDP_SOURCE_ROOT, set by
 * meson test) into a fresh temporary directory, generates the verifier
 * (spin -a), compiles and runs it there, then the test asserts the outcome: our policy
 * verifies with no error and a complete search; the legacy policy and the
 * mutants produce the violation they must produce. Every run prints its
 * state count and time.
 */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "rdp_test.h"

/* the parameter points checked (see the model's header for their meaning) */
#define P1 "-DS=4 -DTSIG=2 -DR=4 -DARQ=2 -DTACK=1"	/* acks carry 1: two acks in flight */
#define P2 "-DS=4 -DTSIG=2 -DR=3 -DARQ=1 -DTACK=2"	/* acks carry 2 */
#define P3 "-DS=6 -DTSIG=3 -DR=4 -DARQ=2 -DTACK=1"	/* longer unsignaled runs */

#define SAFETY_AND_LIVENESS "-a"
#define UNDER_WEAK_FAIRNESS "-a -f"

struct spin_result {
	long states;		/**< states stored */
	int errors;		/**< pan's error count, -1 if not reported */
	bool complete;		/**< the search covered the whole state space */
	char violation[1024];	/**< pan's first error line */
	char trail[16384];	/**< the counterexample, as the model's printf lines */
};

static bool
in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char dir[4096];

	while (path != NULL && *path != '\0') {
		size_t n = strcspn(path, ":");

		if (n > 0 && n < sizeof(dir) - strlen(prog) - 2) {
			memcpy(dir, path, n);
			snprintf(dir + n, sizeof(dir) - n, "/%s", prog);
			if (access(dir, X_OK) == 0)
				return true;
		}
		path += n;
		if (*path == ':')
			path++;
	}
	return false;
}

/* Run spin on lib/credit/model/@p model.pml with @p defines and pan with @p pan_args. */
static void
spin_run(const char *model, const char *defines, const char *pan_args,
	 struct spin_result *res)
{
	const char *root = getenv("RDP_SOURCE_ROOT");
	char cmd[8192], line[1024];
	bool in_trail = false;
	double t0 = rdp_clock_s();
	FILE *out;

	RDP_ASSERT_MSG(root != NULL && root[0] != '\0',
		       "RDP_SOURCE_ROOT is not set: run the test through meson test");
	RDP_ASSERT_MSG(strchr(root, '\'') == NULL, "source path has a quote: %s", root);
	/* the trail is written next to the model, so work on a copy */
	snprintf(cmd, sizeof(cmd),
		 "set -e; d=$(mktemp -d); trap 'rm -rf \"$d\"' EXIT; cd \"$d\"; "
		 "cp '%s/lib/credit/model/%s.pml' m.pml; "
		 "spin -a %s m.pml >/dev/null; "
		 "cc -O2 -w -DNFAIR=4 -DMEMLIM=3072 -o pan pan.c; "
		 "./pan -m400000 %s 2>&1 || true; "
		 "if [ -f m.pml.trail ]; then echo '@trail'; "
		 "spin -t %s m.pml 2>&1 | sed -n 's/^[ \\t]*\\(side [01] .*\\)$/\\1/p'; fi",
		 root, model, defines, pan_args, defines);
	memset(res, 0, sizeof(*res));
	res->errors = -1;
	res->complete = true;
	out = popen(cmd, "r");
	RDP_ASSERT_MSG(out != NULL, "popen failed");
	while (fgets(line, sizeof(line), out) != NULL) {
		const char *s;

		if (strcmp(line, "@trail\n") == 0) {
			in_trail = true;
			continue;
		}
		if (in_trail) {
			strncat(res->trail, line, sizeof(res->trail) - strlen(res->trail) - 1);
			continue;
		}
		if (strncmp(line, "pan:1:", 6) == 0 && res->violation[0] == '\0')
			snprintf(res->violation, sizeof(res->violation), "%s", line);
		if (strstr(line, "Search not completed") != NULL ||
		    strstr(line, "max search depth too small") != NULL ||
		    strstr(line, "out of memory") != NULL)
			res->complete = false;
		s = strstr(line, "errors: ");
		if (s != NULL)
			res->errors = atoi(s + 8);
		s = strstr(line, " states, stored");
		if (s != NULL)
			res->states = atol(line);
		if (strncmp(line, "spin:", 5) == 0 || strstr(line, "error") != NULL)
			fputs(line, stdout);
	}
	RDP_ASSERT_EQ(pclose(out), 0);
	printf("spin %s.pml %s | pan %s: %ld states stored, %d errors, %.1f s%s%s", model,
	       defines, pan_args,
	       res->states, res->errors, rdp_clock_s() - t0,
	       res->violation[0] != '\0' ? "\n  " : "\n", res->violation);
	fflush(stdout);
}

static int
skip_without_spin(void)
{
	if (!in_path("spin"))
		return rdp_test_skip("spin is not installed (Debian package spin)");
	RDP_ASSERT_MSG(in_path("cc"), "spin needs a C compiler named cc in PATH");
	return 0;
}

/* The model verifies: no assertion fails, `live` holds, the search is complete. */
static void
model_verifies(const char *model, const char *defines, const char *pan_args)
{
	struct spin_result res;

	spin_run(model, defines, pan_args, &res);
	RDP_ASSERT_MSG(res.errors == 0, "spin found an error in %s:\n%s%s", defines,
		       res.violation, res.trail);
	RDP_ASSERT_MSG(res.complete, "the search of %s was incomplete", defines);
	/* a model that cannot move would verify trivially */
	RDP_ASSERT_MSG(res.states > 100, "only %ld states in %s", res.states, defines);
}

/* The model fails with @p what in pan's first error line. */
static void
model_finds(const char *model, const char *defines, const char *pan_args, const char *what,
	    struct spin_result *res)
{
	spin_run(model, defines, pan_args, res);
	RDP_ASSERT_MSG(res->errors >= 1, "spin found no error in %s", defines);
	RDP_ASSERT_MSG(strstr(res->violation, what) != NULL,
		       "spin found another error than %s: %s", what, res->violation);
}

/* credit.pml, the protocol of one endpoint */
#define verifies(defines, pan_args) model_verifies("credit", defines, pan_args)
#define finds(defines, pan_args, what, res) model_finds("credit", defines, pan_args, what, res)

RDP_TEST(model, model_ours_one_way_keeps_i1_to_i3_and_delivers_everything)
{
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	verifies(P1 " -DTRAFFIC=ONEWAY -DN=8", SAFETY_AND_LIVENESS);
	verifies(P2 " -DTRAFFIC=ONEWAY -DN=8", SAFETY_AND_LIVENESS);
	verifies(P3 " -DTRAFFIC=ONEWAY -DN=8", SAFETY_AND_LIVENESS);
	return 0;
}

RDP_TEST(model, model_ours_two_way_keeps_i1_to_i3_and_delivers_everything)
{
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	verifies(P1 " -DTRAFFIC=TWOWAY -DN=3", SAFETY_AND_LIVENESS);
	verifies(P2 " -DTRAFFIC=TWOWAY -DN=4", SAFETY_AND_LIVENESS);
	return 0;
}

RDP_TEST(model, model_ours_request_response_keeps_i1_to_i3_and_delivers_everything)
{
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	verifies(P1 " -DTRAFFIC=REQRESP -DN=4", SAFETY_AND_LIVENESS);
	verifies(P2 " -DTRAFFIC=REQRESP -DN=4", SAFETY_AND_LIVENESS);
	return 0;
}

RDP_TEST(model, model_ours_endless_one_way_delivers_forever_under_weak_fairness)
{
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	verifies(P1 " -DTRAFFIC=ONEWAY -DINF", UNDER_WEAK_FAIRNESS);
	verifies(P2 " -DTRAFFIC=ONEWAY -DINF", UNDER_WEAK_FAIRNESS);
	verifies(P3 " -DTRAFFIC=ONEWAY -DINF", UNDER_WEAK_FAIRNESS);
	return 0;
}

RDP_TEST(model, model_ours_survives_out_of_order_send_completions)
{
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	verifies(P1 " -DOOO_SEND -DNO_FLUSH_BOUND -DTRAFFIC=ONEWAY -DN=8", SAFETY_AND_LIVENESS);
	verifies(P1 " -DOOO_SEND -DNO_FLUSH_BOUND -DTRAFFIC=TWOWAY -DN=3", SAFETY_AND_LIVENESS);
	verifies(P1 " -DOOO_SEND -DNO_FLUSH_BOUND -DTRAFFIC=REQRESP -DN=3", SAFETY_AND_LIVENESS);
	return 0;
}

/*
 * The S + R budget counts one completion per unfreed SQ WR. When a newer
 * send completion frees older WRs before their own completions are polled,
 * those completions are still due: a QP error at that moment could flush
 * S + R + (stale) completions. The budget is exact only for in-order send
 * completions within one SQ, which the InfiniBand spec guarantees.
 */
RDP_TEST(model, model_flush_cq_bound_needs_in_order_send_completions)
{
	struct spin_result res;
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	finds(P1 " -DOOO_SEND -DTRAFFIC=ONEWAY -DN=8", SAFETY_AND_LIVENESS,
	      "I3_cq_holds_flush_after_qp_error", &res);
	return 0;
}

/*
 * The seed bug, found by spin: the legacy window is refilled by an ack polled
 * before the send completion that would free the SQ slots behind it.
 */
RDP_TEST(model, model_legacy_window_overflows_sq)
{
	struct spin_result res;
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	finds(P1 " -DPOLICY=POLICY_LEGACY -DTRAFFIC=ONEWAY -DN=5", SAFETY_AND_LIVENESS,
	      "I1_sq_never_overflows", &res);
	printf("counterexample:\n%s", res.trail);
	RDP_ASSERT_MSG(strstr(res.trail, "side 0 polls ACK") != NULL,
		       "the trail shows no ack refilling the window");
	RDP_ASSERT_MSG(strstr(res.trail, "SQ 5/4") != NULL,
		       "the trail does not end in a fifth WR on a 4-slot SQ");
	return 0;
}

/* Without the reclaim, a side that only acks fills its SQ with unsignaled acks. */
RDP_TEST(model, model_acks_without_reclaim_deadlock)
{
	struct spin_result res;
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	finds(P1 " -DMUTANT_ACK_NO_RECLAIM -DTRAFFIC=ONEWAY -DN=8", SAFETY_AND_LIVENESS,
	      "acceptance cycle", &res);
	printf("counterexample:\n%s", res.trail);
	return 0;
}

/* Without the ack reserve, a pure ack can reach an RQ full of data. */
RDP_TEST(model, model_without_ack_reserve_pure_ack_hits_rnr)
{
	struct spin_result res;
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	finds(P2 " -DMUTANT_NO_ACK_RESERVE -DTRAFFIC=TWOWAY -DN=3", SAFETY_AND_LIVENESS,
	      "I2_no_rnr", &res);
	return 0;
}

/*
 * Both applications may close at any moment, each with a message handed
 * over: every run ends a drain (the first one over ends the other side).
 */
RDP_TEST(model, model_ours_both_sides_closing_at_once_end_a_drain)
{
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	verifies(P1 " -DCLOSE -DTRAFFIC=TWOWAY -DN=3", SAFETY_AND_LIVENESS);
	verifies(P2 " -DCLOSE -DTRAFFIC=TWOWAY -DN=3", SAFETY_AND_LIVENESS);
	return 0;
}

/* A closing side that never acks: two sides closed at once wait for each other. */
RDP_TEST(model, model_drain_without_acks_deadlocks_when_both_sides_close)
{
	struct spin_result res;
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	finds(P2 " -DCLOSE -DMUTANT_DRAIN_NO_ACK -DTRAFFIC=TWOWAY -DN=3", SAFETY_AND_LIVENESS,
	      "acceptance cycle", &res);
	RDP_ASSERT_MSG(strstr(res.trail, "side 0 closes") != NULL &&
		       strstr(res.trail, "side 1 closes") != NULL,
		       "the counterexample does not close both sides:\n%s", res.trail);
	printf("counterexample:\n%s", res.trail);
	return 0;
}

/*
 * One-sided WRs mixed with the messages: WRITEs and READs (the adversary
 * picks which) take SQ slots and, for READs, read slots; the SQ, the RQ
 * and the CQ keep their bounds, no responder holds more READs than it
 * serves (I6), and every operation is covered by a polled completion.
 */
RDP_TEST(model, model_ours_one_sided_keeps_i1_to_i3_and_i6_and_completes_every_operation)
{
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	verifies(P1 " -DRDMA -DTRAFFIC=ONEWAY -DN=3", SAFETY_AND_LIVENESS);
	verifies(P2 " -DRDMA -DTRAFFIC=ONEWAY -DN=3", SAFETY_AND_LIVENESS);
	verifies(P3 " -DRDMA -DRDEPTH=2 -DNOPS=4 -DTRAFFIC=ONEWAY -DN=3", SAFETY_AND_LIVENESS);
	verifies(P1 " -DRDMA -DNOPS=2 -DTRAFFIC=TWOWAY -DN=1", SAFETY_AND_LIVENESS);
	verifies(P1 " -DRDMA -DOOO_SEND -DNO_FLUSH_BOUND -DTRAFFIC=ONEWAY -DN=3",
		 SAFETY_AND_LIVENESS);
	return 0;
}

/* READs that ignore the read depth: a responder holds more than it serves. */
RDP_TEST(model, model_reads_ignoring_the_depth_exceed_the_responders_slots)
{
	struct spin_result res;
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	finds(P1 " -DRDMA -DMUTANT_READ_NO_DEPTH -DTRAFFIC=ONEWAY -DN=3", SAFETY_AND_LIVENESS,
	      "I6_read_depth_never_exceeded", &res);
	return 0;
}

/*
 * READs signaled as data is, the one that takes the last free slot too: a
 * READ waiting for a slot that an unsignaled READ holds waits for ever, as
 * nothing after it can be posted. At a depth of 1 every READ takes the last
 * slot; at 2 the first of two goes unsignaled in ours, and still completes.
 */
RDP_TEST(model, model_unsignaled_reads_deadlock_waiting_for_a_read_slot)
{
	struct spin_result res;
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	finds(P1 " -DRDMA -DMUTANT_READ_UNSIGNALED -DTRAFFIC=ONEWAY -DN=3", SAFETY_AND_LIVENESS,
	      "acceptance cycle", &res);
	printf("counterexample:\n%s", res.trail);
	finds(P3 " -DRDMA -DRDEPTH=2 -DNOPS=4 -DMUTANT_READ_UNSIGNALED -DTRAFFIC=ONEWAY -DN=3",
	      SAFETY_AND_LIVENESS, "acceptance cycle", &res);
	return 0;
}

/*
 * lease.pml: three endpoints on one shared receive queue, their credits
 * leased from the poller's pool (docs/credit-protocol.md, "Leased credits
 * on a shared receive queue").
 */
#define LEASE1 "-DK=3 -DFLOOR=1 -DLMAX=3 -DGRANT=2 -DTACK=1 -DNSRQ=5 -DN=2"
#define LEASE2 "-DK=3 -DFLOOR=1 -DLMAX=2 -DGRANT=1 -DTACK=2 -DNSRQ=4 -DN=2"
/* the peers' pure acks in the SRQ's reserve, the poller's in each peer's RQ */
#define LEASE_ACKS "-DK=2 -DN=2 -DNX=2 -DYACKS -DCY=1 -DTACKY=1 -DGRANT=1"

RDP_TEST(model, model_leased_srq_credits_never_rnr_and_come_back_to_the_floor)
{
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	model_verifies("lease", LEASE1, SAFETY_AND_LIVENESS);
	model_verifies("lease", LEASE2, SAFETY_AND_LIVENESS);
	return 0;
}

/* Grants that do not wait for the pool lend the SRQ beyond its buffers. */
RDP_TEST(model, model_leases_beyond_the_srq_find_it_empty)
{
	struct spin_result res;
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	model_finds("lease", LEASE1 " -DMUTANT_OVERCOMMIT", SAFETY_AND_LIVENESS, "L1_no_rnr",
		    &res);
	return 0;
}

/*
 * Owed credits that leave while their buffers wait to be posted, though the
 * pool does not cover those buffers, lend the SRQ beyond what is posted:
 * both with the peers' data alone and with pure acks both ways.
 */
RDP_TEST(model, model_leased_credits_named_before_their_buffers_are_posted_find_the_srq_empty)
{
	struct spin_result res;
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	model_finds("lease", LEASE1 " -DMUTANT_UNPOSTED_CREDIT", SAFETY_AND_LIVENESS,
		    "L1_no_rnr", &res);
	model_finds("lease", LEASE_ACKS " -DLMAX=2 -DTACK=1 -DNSRQ=5 -DMUTANT_UNPOSTED_CREDIT",
		    SAFETY_AND_LIVENESS, "L1_no_rnr", &res);
	return 0;
}

/*
 * An endpoint admitted while the others stream (-DLATE: the last one, by
 * another thread, at any step), the waiting buffers posted once KEEP of
 * them are back: the admission leaves KEEP credits in the pool, and no
 * SEND finds the SRQ empty. An admission that takes the pool's last
 * credits takes the cover of buffers that wait, whose credits have left
 * already: the late endpoint's first SENDs find the SRQ empty.
 */
#define LEASE_LATE "-DK=2 -DFLOOR=1 -DLMAX=3 -DGRANT=2 -DTACK=1 -DNSRQ=4 -DN=4 -DLATE -DKEEP=2"

RDP_TEST(model, model_an_endpoint_admitted_mid_stream_leaves_the_pool_the_waiting_buffers_cover)
{
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	model_verifies("lease", LEASE_LATE, SAFETY_AND_LIVENESS);
	model_verifies("lease", LEASE1 " -DLATE -DKEEP=2", SAFETY_AND_LIVENESS);
	model_verifies("lease", LEASE_ACKS " -DLMAX=2 -DTACK=1 -DNSRQ=6 -DLATE -DKEEP=2",
		       SAFETY_AND_LIVENESS);
	return 0;
}

RDP_TEST(model, model_an_admission_that_takes_the_cover_of_waiting_buffers_finds_the_srq_empty)
{
	struct spin_result res;
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	model_finds("lease", LEASE_LATE " -DMUTANT_ADMIT_NO_KEEP", SAFETY_AND_LIVENESS,
		    "L1_no_rnr", &res);
	return 0;
}

/* A quiet sender that keeps its excess strands the credits it was lent. */
RDP_TEST(model, model_leases_without_give_back_strand_on_a_quiet_sender)
{
	struct spin_result res;
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	model_finds("lease", LEASE1 " -DMUTANT_NO_GIVEBACK", SAFETY_AND_LIVENESS,
		    "acceptance cycle", &res);
	return 0;
}

/*
 * The peers' pure acks land in the SRQ's reserve, the poller's in each
 * peer's RQ: two endpoints that stream both ways.
 */
RDP_TEST(model, model_leased_srq_pure_acks_fit_both_reserves)
{
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	/* the poller's acks carry 1: the peer keeps 2 entries for them */
	model_verifies("lease", LEASE_ACKS " -DLMAX=2 -DTACK=1 -DNSRQ=5", SAFETY_AND_LIVENESS);
	/* acks carry 2 or go alone at out == 0: 1 entry, below ceil(3 / 2) */
	model_verifies("lease", LEASE_ACKS " -DLMAX=3 -DTACK=2 -DGRANT=2 -DNSRQ=6",
		       SAFETY_AND_LIVENESS);
	return 0;
}

/* One entry fewer at the peer for the poller's pure acks: an RNR there. */
RDP_TEST(model, model_leased_srq_peer_short_of_ack_entries_finds_its_rq_empty)
{
	struct spin_result res;
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	model_finds("lease", LEASE_ACKS " -DLMAX=2 -DTACK=1 -DNSRQ=5 -DMUTANT_SHORT_AY",
		    SAFETY_AND_LIVENESS, "L1_no_rnr", &res);
	return 0;
}

/*
 * lease.pml with rendezvous replies (-DRNDV): each peer sends requests of
 * MC chunks, the poller's application holds every request until its reply
 * is done, that is until the peer's FIN comes back into the SRQ; each
 * descriptor brings a credit of the SRQ's FIN reserve.
 */
#define LEASE_RNDV "-DRNDV -DK=2 -DFLOOR=2 -DMC=2 -DLMAX=3 -DGRANT=1 -DN=3"
/* a FIN reserve of one credit, two of the SRQ's six lent beyond the floors */
#define FR1 " -DFR=1 -DNSRQ=6"

RDP_TEST(model, model_rendezvous_replies_to_requests_held_on_a_leased_srq_all_finish)
{
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	model_verifies("lease", LEASE_RNDV FR1 " -DTACK=1", SAFETY_AND_LIVENESS);
	model_verifies("lease", LEASE_RNDV FR1 " -DTACK=2", SAFETY_AND_LIVENESS);
	/* two FIN credits; requests of three chunks */
	model_verifies("lease", LEASE_RNDV " -DTACK=1 -DFR=2 -DNSRQ=7", SAFETY_AND_LIVENESS);
	model_verifies("lease", "-DRNDV -DK=2 -DFLOOR=3 -DMC=3 -DLMAX=4 -DGRANT=1 -DTACK=2 -DFR=1 "
		       "-DNSRQ=8 -DN=2", SAFETY_AND_LIVENESS);
	/* three endpoints whose floors and the reserve take the whole SRQ */
	model_verifies("lease", "-DRNDV -DK=3 -DFLOOR=2 -DMC=2 -DLMAX=3 -DGRANT=1 -DTACK=2 -DFR=1 "
		       "-DNSRQ=7 -DN=2", SAFETY_AND_LIVENESS);
	return 0;
}

/* Without a FIN reserve every lease credit can sit in requests held for their replies. */
RDP_TEST(model, model_rendezvous_without_a_fin_reserve_deadlocks_requests_held_for_replies)
{
	struct spin_result res;
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	model_finds("lease", LEASE_RNDV FR1 " -DTACK=1 -DMUTANT_NO_FIN_RESERVE", SAFETY_AND_LIVENESS,
		    "acceptance cycle", &res);
	return 0;
}

/*
 * A FIN only between requests: a request begun on one credit spends the
 * FIN's on its next chunk and the FIN then has none. Starting only on all
 * the chunks' credits keeps it, but waits for credits owed below TACK.
 */
RDP_TEST(model, model_fin_credit_spent_on_a_requests_chunk_deadlocks_the_replies)
{
	struct spin_result res;
	int skip = skip_without_spin();

	if (skip != 0)
		return skip;
	model_finds("lease", LEASE_RNDV FR1 " -DTACK=1 -DMUTANT_FIN_AFTER_REQUEST",
		    SAFETY_AND_LIVENESS, "acceptance cycle", &res);
	model_finds("lease", LEASE_RNDV FR1 " -DTACK=2 -DMUTANT_START_ON_ALL_CHUNKS",
		    SAFETY_AND_LIVENESS, "acceptance cycle", &res);
	/* with TACK = 1 the same rule holds: the mutant needs the threshold */
	model_verifies("lease", LEASE_RNDV FR1 " -DTACK=1 -DMUTANT_START_ON_ALL_CHUNKS",
		       SAFETY_AND_LIVENESS);
	return 0;
}
