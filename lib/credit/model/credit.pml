/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The credit protocol of lib/credit, model-checked with spin.
 *
 * Two endpoints, side 0 and side 1, joined by one RC connection. Per side:
 *
 *   - An SQ of S slots. The NIC executes WRs in order. A slot is freed only
 *     when a signaled send completion for it, or for a later WR, is polled
 *     (strict, mlx5-like semantics). Unsignaled WRs make no completion.
 *   - An RQ of R entries. A SEND (data or pure ack) that finds it empty is
 *     an RNR.
 *   - One CQ of S + R entries shared by that side's SQ and RQ. Completions
 *     are ordered only within one work queue: the poller takes the oldest
 *     send completion or the oldest receive completion, in any interleaving.
 *     With -DOOO_SEND it may also take a newer send completion before older
 *     ones of the same SQ; the older ones are then polled later and free
 *     nothing ("stale").
 *   - Immediate data carries credits: the piggyback field of a data message,
 *     or a pure ack.
 *   - The reclaim: a signaled zero-length RDMA WRITE with no remote effect.
 *   - The application hands messages over whenever it likes (bursts,
 *     pauses) and frees received messages whenever it likes (possibly late).
 *
 * Every process step is one d_step, so each step is one transition of the
 * real system; the interleaving of the processes is the adversary.
 *
 * The endpoint's decisions are transcribed from lib/credit/rdp_credit.h
 * (POLICY_OURS) or from apps/test/legacy_window.h (POLICY_LEGACY: a single
 * window refilled by acks, as in brpc before its fix).
 *
 * Checked (see docs/credit-protocol.md):
 *   I1  the SQ never overflows: assertion at every post, on the NIC's own
 *       count of occupied slots, never the policy's.
 *   I2  no RNR: assertion at every SEND arrival.
 *   I3  the CQ never overruns: assertion that the completions in the CQ fit
 *       S + R. Unless -DNO_FLUSH_BOUND, also that they still fit if the QP
 *       failed now, when every unfreed SQ WR and every posted receive could
 *       add a flush completion.
 *   I4  liveness, the LTL property `live`:
 *       - finite streams (the default, N messages per stream): <> DONE,
 *         where DONE says every message of every stream was delivered and
 *         freed. No fairness is assumed. A deadlock is a finite run that
 *         stops before DONE; a livelock is an infinite run that never gets
 *         there; spin reports either as a violation (pan -a).
 *       - endless streams (-DINF): every stream delivers infinitely often,
 *         under weak fairness (pan -a -f): a process that stays able to move
 *         moves eventually, so no completion, transmission, free or post is
 *         withheld forever.
 *
 * Closing (-DCLOSE, with POLICY_OURS and finite streams): each application
 * may close its side at any moment (rdp_ep_close()). A closing side hands
 * over nothing new, still sends what was handed over, no longer delivers
 * what arrives (the entry is reposted at once and owed), acks only while
 * it has data left to send, and then posts the reclaim that makes its last
 * WRs' success visible (rdp_credit_flush_due()). Its drain is over when
 * nothing is left to send and its SQ is idle; the teardown that follows
 * ends the peer's endpoint too (its QP then fails what it has left). So
 * `live` is then <> (one drain is over).
 *
 * One-sided WRs (-DRDMA, finite streams): the application also hands over
 * NOPS one-sided operations per streaming side, each an RDMA WRITE or an
 * RDMA READ (chosen by the adversary), in order with its messages. Neither
 * takes a receive or a remote credit; both follow the data's signaling
 * rule, and a READ takes one of RDEPTH read slots (rdp_credit_rdma_check()),
 * signaled when it takes the last free one. The responder's
 * NIC holds a READ from its execution until a polled completion covers it
 * (as the shm driver does: the most an initiator can know), and
 *   I6  asserts that it never holds more than RDEPTH;
 * `live` then also waits for every operation to be covered by a polled
 * completion (each reported once). The last WR of a side's stream is
 * signaled (the library signals the last of what is queued, which is at
 * least that often).
 *
 * Mutants, each a check that the model can fail:
 *   -DMUTANT_ACK_NO_RECLAIM  acks ignore the signal interval, no reclaim
 *   -DMUTANT_NO_ACK_RESERVE  the sender may fill the peer's whole RQ
 *   -DMUTANT_DRAIN_NO_ACK    (with -DCLOSE) a closing side never acks, as
 *                            lib/ep did before 2026-11-30
 *   -DMUTANT_READ_NO_DEPTH   (with -DRDMA) READs ignore the read depth
 *   -DMUTANT_READ_UNSIGNALED (with -DRDMA) READs follow the data's
 *                            signaling rule only, the last free slot's too
 *
 * Build one configuration: spin -a -DTRAFFIC=TWOWAY -DN=3 credit.pml
 */

/* ---- parameters (override with -D) ---- */
#ifndef S
#define S 4		/* SQ slots */
#endif
#ifndef TSIG
#define TSIG 2		/* signal interval */
#endif
#ifndef R
#define R 4		/* RQ entries */
#endif
#ifndef ARQ
#define ARQ 2		/* RQ entries kept for the peer's pure acks */
#endif
#ifndef TACK
#define TACK 1		/* smallest credit count of a pure ack */
#endif
#ifndef N
#define N 4		/* messages per stream (finite streams) */
#endif
#ifndef QDEPTH
#define QDEPTH 2	/* request/response: requests outstanding at most */
#endif
#ifndef RDEPTH
#define RDEPTH 1	/* read slots (with -DRDMA) */
#endif
#ifndef NOPS
#define NOPS 3		/* one-sided operations per streaming side (with -DRDMA) */
#endif
#define C (R - ARQ)	/* data credits of one side's RQ */

#define POLICY_OURS 0
#define POLICY_LEGACY 1
#ifndef POLICY
#define POLICY POLICY_OURS
#endif

#define ONEWAY 0	/* side 0 streams to side 1, which only acks */
#define TWOWAY 1	/* both sides stream */
#define REQRESP 2	/* side 0 requests, side 1 answers each request */
#ifndef TRAFFIC
#define TRAFFIC ONEWAY
#endif
/* one-sided operations each side hands over (-DRDMA: the streaming sides) */
#ifdef RDMA
#define OPS0 NOPS
#if TRAFFIC == TWOWAY
#define OPS1 NOPS
#else
#define OPS1 0
#endif
#else
#define OPS0 0
#define OPS1 0
#endif

/* ---- a work request in one byte: kind | signaled << 3 | imm << 4 ---- */
#define DATA 0
#define ACK 1
#define RCL 2
#define WRT 3		/* RDMA WRITE: no remote receive, no remote completion */
#define RD 4		/* RDMA READ: the same, and a read slot at the responder */
#define WR(k, s, imm) ((k) | ((s) << 3) | ((imm) << 4))
#define KIND(w) ((w) & 7)
#define SIG(w) (((w) >> 3) & 1)
#define IMM(w) ((w) >> 4)

/* named so that spin's error line says which invariant broke */
hidden byte I1_sq_never_overflows = 1;
hidden byte I2_no_rnr = 1;
hidden byte I3_cq_never_overruns = 1;
hidden byte I3_cq_holds_flush_after_qp_error = 1;
hidden byte I6_read_depth_never_exceeded = 1;

/* ---- the NICs and their queues ---- */
byte sq[2 * S];		/* per side; slot 0 holds the oldest unfreed WR */
byte occ[2];		/* WRs in the SQ: posted and not freed */
byte txd[2];		/* of those, executed by the NIC */
byte sigpend[2];	/* executed signaled WRs whose completion is unpolled */
byte stale[2];		/* completions of WRs a newer completion already freed */
byte rq_posted[2];	/* receive entries posted */
byte rdheld[2];		/* READs of side i its peer's NIC holds: executed, not covered */
chan rcq[2] = [R] of { byte, byte };	/* receive completions: kind, imm */

/* ---- the endpoints' credit state ---- */
byte infl[2];		/* ours: sq_pi - sq_ci */
byte unsig[2];		/* the unsignaled run (legacy: data WRs since a signaled one) */
byte rc[2];		/* ours: remote credits; legacy: the window */
byte owed[2];		/* credits owed to the peer */
byte rdinfl[2];		/* ours: READs posted that no polled completion covers */

/* ---- the applications ---- */
byte backlog[2];	/* messages handed over and not posted yet */
byte held[2];		/* received messages not freed yet */
byte bkind[2];		/* what the waiting hand-over is: DATA, WRT or RD */
byte oleft[2];		/* one-sided operations still to hand over */
byte odone[2];		/* one-sided operations covered by a polled completion */
#ifdef INF
bit par[2];		/* flips at each delivery of stream k (sent by side k) */
#else
byte left[2];		/* messages still to hand over */
byte dlv[2];		/* messages of stream k delivered */
#endif
#if TRAFFIC == REQRESP
byte due;		/* requests side 1 received and has not answered yet */
byte outq;		/* requests side 0 sent and got no answer for yet */
#endif

#ifdef CLOSE
bit closing[2];		/* the application closed its side */
#define DRAINED(i) (closing[i] && backlog[i] == 0 && infl[i] == 0)
#ifdef MUTANT_DRAIN_NO_ACK
#define MAY_ACK(i) (!closing[i])
#else
#define MAY_ACK(i) (!closing[i] || backlog[i] > 0)
#endif
/* rdp_credit_flush_due(), asked once nothing is left to send */
#define FLUSH_DUE(i) (closing[i] && backlog[i] == 0 && infl[i] > 0 && unsig[i] > 0 && infl[i] < S)
#else
#define MAY_ACK(i) true
#define FLUSH_DUE(i) false
#endif

hidden byte p, q, w, k;	/* scratch, dead between steps */

#ifdef NO_FLUSH_BOUND
#define FLUSH_CHECK(i) skip
#else
#define FLUSH_CHECK(i) \
	assert(I3_cq_holds_flush_after_qp_error && \
	       stale[i] + occ[i] + len(rcq[i]) + rq_posted[i] <= S + R)
#endif
#define CQ_CHECK(i) \
	assert(I3_cq_never_overruns && stale[i] + sigpend[i] + len(rcq[i]) <= S + R); \
	FLUSH_CHECK(i)

/* the NIC takes a WR; a full SQ would fail the post with ENOMEM */
inline nic_post(i, wr)
{
	assert(I1_sq_never_overflows && occ[i] < S);
	sq[i * S + occ[i]] = wr;
	occ[i]++;
	CQ_CHECK(i)
}

/* ---- the policies, transcribed ---- */
#if POLICY == POLICY_OURS
/* rdp_credit_data_check() says GO, signaled or not */
#define DATA_GO(i) (rc[i] > 0 && infl[i] + 1 <= S - 1)
#define DATA_SIGNALED(i) (unsig[i] + 1 >= TSIG || infl[i] + 1 >= S - 1)
#ifdef MUTANT_ACK_NO_RECLAIM
#define ACK_GO(i) (owed[i] >= TACK && infl[i] + 1 <= S - 1)
#define RECLAIM_FIRST(i) false
#else
/* rdp_credit_ack_check() says GO_UNSIGNALED, or RECLAIM_FIRST */
#define ACK_GO(i) (owed[i] >= TACK && unsig[i] + 1 < TSIG && infl[i] + 1 <= S - 1)
#define RECLAIM_FIRST(i) (owed[i] >= TACK && unsig[i] + 1 >= TSIG && infl[i] < S)
#endif
#else
/* legacy_window_can_send(); brpc's SendImm ack took a reserved slot unchecked */
#define DATA_GO(i) (rc[i] > 0)
#define ACK_GO(i) (owed[i] >= TACK)
#define RECLAIM_FIRST(i) false
#endif
#define SEND_DATA(i) (backlog[i] > 0 && bkind[i] == DATA && DATA_GO(i))

/* rdp_credit_rdma_check() says GO, signaled or not */
#ifdef MUTANT_READ_NO_DEPTH
#define READ_SLOT(i) true
#else
#define READ_SLOT(i) (rdinfl[i] < RDEPTH)
#endif
#ifdef MUTANT_READ_UNSIGNALED
#define READ_SIGNALED(i) false
#else
#define READ_SIGNALED(i) (bkind[i] == RD && rdinfl[i] + 1 == RDEPTH)
#endif
#define RDMA_GO(i) (infl[i] + 1 <= S - 1 && (bkind[i] != RD || READ_SLOT(i)))
#ifdef RDMA
#define SEND_RDMA(i) (backlog[i] > 0 && bkind[i] != DATA && RDMA_GO(i))
#ifdef INF
#error "-DRDMA needs finite streams"
#endif
#if POLICY != POLICY_OURS
#error "-DRDMA models our policy only"
#endif
/* the last WR of the side's stream: nothing after it would cover it */
#define STREAM_LAST(i) (left[i] == 0 && oleft[i] == 0)
#else
#define SEND_RDMA(i) false
#define STREAM_LAST(i) false
#endif

inline post_data(i)
{
#if POLICY == POLICY_OURS
	k = (DATA_SIGNALED(i) || STREAM_LAST(i));
	unsig[i] = (k -> 0 : unsig[i] + 1);
	infl[i]++;
#else
	/* legacy_window_posted() */
	unsig[i]++;
	k = (unsig[i] >= TSIG);
	unsig[i] = (k -> 0 : unsig[i]);
#endif
	printf("side %d posts DATA signaled=%d imm=%d: SQ %d/%d, window %d\n",
	       i, k, owed[i], occ[i] + 1, S, rc[i] - 1);
	nic_post(i, WR(DATA, k, owed[i]));
	owed[i] = 0;
	rc[i]--;
	backlog[i]--
}

/* a pure ack: ours never signals it; brpc's SendImm was signaled */
inline post_ack(i)
{
#if POLICY == POLICY_OURS
	k = 0;
	unsig[i]++;
	infl[i]++;
#else
	k = 1;
#endif
	printf("side %d posts ACK imm=%d: SQ %d/%d\n", i, owed[i], occ[i] + 1, S);
	nic_post(i, WR(ACK, k, owed[i]));
	owed[i] = 0
}

inline post_rdma(i)
{
#if POLICY == POLICY_OURS
	k = (READ_SIGNALED(i) || DATA_SIGNALED(i) || STREAM_LAST(i));
#else
	k = 1;	/* never posted: -DRDMA models our policy only */
#endif
	unsig[i] = (k -> 0 : unsig[i] + 1);
	infl[i]++;
	rdinfl[i] = rdinfl[i] + (bkind[i] == RD);
	printf("side %d posts RDMA kind=%d signaled=%d: SQ %d/%d, reads %d\n", i, bkind[i],
	       k, occ[i] + 1, S, rdinfl[i]);
	nic_post(i, WR(bkind[i], k, 0));
	backlog[i]--
}

inline post_reclaim(i)
{
	printf("side %d posts RECLAIM: SQ %d/%d\n", i, occ[i] + 1, S);
	nic_post(i, WR(RCL, 1, 0));
	unsig[i] = 0;
	infl[i]++
}

/* the endpoint: data first; a pure ack only when no data can carry it */
proctype Ep(byte i)
{
	do
	:: d_step { SEND_DATA(i) -> post_data(i) }
	:: d_step { SEND_RDMA(i) -> post_rdma(i) }
	:: d_step { !SEND_DATA(i) && MAY_ACK(i) && ACK_GO(i) -> post_ack(i) }
	:: d_step { !SEND_DATA(i) && MAY_ACK(i) && RECLAIM_FIRST(i) -> post_reclaim(i) }
	:: d_step { !SEND_DATA(i) && !MAY_ACK(i) && FLUSH_DUE(i) -> post_reclaim(i) }
	od
}

/* the NIC executes the oldest unexecuted WR of side i's SQ */
proctype Nic(byte i)
{
	do
	:: d_step {
		txd[i] < occ[i] ->
		w = sq[i * S + txd[i]];
		if
		:: KIND(w) == DATA || KIND(w) == ACK ->
			assert(I2_no_rnr && rq_posted[1 - i] > 0);
			rq_posted[1 - i]--;
			rcq[1 - i]!KIND(w),IMM(w)
		:: KIND(w) == RD ->
			/* the peer's NIC answers it: one of its read slots */
			assert(I6_read_depth_never_exceeded && rdheld[i] < RDEPTH);
			rdheld[i]++
		:: else -> skip
		fi;
		sigpend[i] = sigpend[i] + SIG(w);
		txd[i]++;
		CQ_CHECK(i);
		CQ_CHECK(1 - i)
	}
	od
}

/* free slots 0..p of side i's SQ: the completion of the WR in slot p */
inline sq_free(i)
{
#if POLICY == POLICY_OURS
	/* rdp_credit_send_completed(): sq_ci = max(sq_ci, seq + 1) */
	infl[i] = (infl[i] < occ[i] - p - 1 -> infl[i] : occ[i] - p - 1);
#endif
	printf("side %d polls a send completion: SQ %d/%d\n", i, occ[i] - p - 1, S);
	/* the one-sided WRs it covers are complete: READs give their slots back */
	q = 0;
	do
	:: q <= p ->
		if
		:: KIND(sq[i * S + q]) == RD ->
			rdheld[i]--;
			rdinfl[i]--;
			odone[i]++
		:: KIND(sq[i * S + q]) == WRT -> odone[i]++
		:: else -> skip
		fi;
		q++
	:: else -> break
	od;
	q = 0;
	do
	:: q + p + 1 < occ[i] -> sq[i * S + q] = sq[i * S + q + p + 1]; q++
	:: else -> break
	od;
	do
	:: q < occ[i] -> sq[i * S + q] = 0; q++
	:: else -> break
	od;
	occ[i] = occ[i] - p - 1;
	txd[i] = txd[i] - p - 1
}

/* slot of the r-th (from 0) executed signaled WR of side i, into p */
inline find_signaled(i, r)
{
	p = 0;
	q = 0;
	do
	:: !SIG(sq[i * S + p]) -> p++
	:: SIG(sq[i * S + p]) && q < r -> q++; p++
	:: SIG(sq[i * S + p]) && q == r -> break
	od
}

/* poll a send completion of side i */
proctype PollSend(byte i)
{
	byte r;

	do
	:: d_step {
		/* in order within the SQ: the oldest executed signaled WR */
		sigpend[i] > 0 ->
		find_signaled(i, 0);
		sigpend[i]--;
		sq_free(i)
	}
#ifdef OOO_SEND
	:: atomic {
		/* a newer one first: the r older ones become stale */
		sigpend[i] > 1 ->
		r = 1;
		do
		:: r + 1 < sigpend[i] -> r++
		:: break
		od;
		d_step {
			find_signaled(i, r);
			stale[i] = stale[i] + r;
			sigpend[i] = sigpend[i] - r - 1;
			sq_free(i);
			r = 0
		}
	}
	:: d_step {
		/* an older completion after a newer one frees nothing */
		stale[i] > 0 -> stale[i]--
	}
#endif
	od
}

/* poll a receive completion of side i: credits, then deliver or repost */
proctype PollRecv(byte i)
{
	do
	:: d_step {
		rcq[i]?k,w ->
		rc[i] = rc[i] + w;
		if
		:: k == ACK ->
			printf("side %d polls ACK imm=%d: window %d\n", i, w, rc[i]);
			/* an entry a pure ack used goes back at once, never owed */
			rq_posted[i]++
#ifdef CLOSE
		:: k != ACK && closing[i] ->
			/* closed: not delivered, the entry goes back and is owed */
			printf("side %d polls DATA imm=%d after its close: window %d\n", i, w,
			       rc[i]);
			rq_posted[i]++;
			owed[i]++;
			CQ_CHECK(i)
#endif
		:: else ->
			printf("side %d polls DATA imm=%d: window %d\n", i, w, rc[i]);
			held[i]++;
#ifdef INF
			par[1 - i] = 1 - par[1 - i];
#else
			dlv[1 - i]++;
#endif
#if TRAFFIC == REQRESP
			if
			:: i == 1 -> due++
			:: else -> outq--
			fi
#endif
		fi
	}
	od
}

/* the application frees a received message: its entry is reposted and owed */
proctype AppFree(byte i)
{
	do
	:: d_step {
		held[i] > 0 ->
		printf("side %d frees a message\n", i);
		held[i]--;
		rq_posted[i]++;
		owed[i]++;
		CQ_CHECK(i)
	}
	od
}

/*
 * The application hands a message over. One waiting message at most is
 * enough: the endpoint only asks whether one is waiting, and handing the next
 * over right after a post gives every burst.
 */
#ifdef INF
#define MAY_HAND_OVER(i) (backlog[i] == 0)
#define HAND_OVER(i) backlog[i]++; bkind[i] = DATA
#else
#ifdef CLOSE
#define MAY_HAND_OVER(i) (left[i] > 0 && backlog[i] == 0 && !closing[i])
#else
#define MAY_HAND_OVER(i) (left[i] > 0 && backlog[i] == 0)
#endif
#define HAND_OVER(i) left[i]--; backlog[i]++; bkind[i] = DATA
#endif

proctype AppSend(byte i)
{
	do
#ifdef RDMA
	:: d_step { oleft[i] > 0 && backlog[i] == 0 -> oleft[i]--; backlog[i]++; bkind[i] = WRT }
	:: d_step { oleft[i] > 0 && backlog[i] == 0 -> oleft[i]--; backlog[i]++; bkind[i] = RD }
#endif
#if TRAFFIC == REQRESP
	:: d_step { i == 0 && outq < QDEPTH && MAY_HAND_OVER(0) -> HAND_OVER(0); outq++ }
	:: d_step { i == 1 && due > 0 && backlog[1] == 0 -> due--; backlog[1]++ }
#else
	:: d_step { MAY_HAND_OVER(i) -> HAND_OVER(i) }
#endif
#ifdef CLOSE
	:: d_step { !closing[i] -> closing[i] = 1; printf("side %d closes\n", i) }
#endif
	od
}

#ifdef INF
#if TRAFFIC == ONEWAY
ltl live { []<> par[0] && []<> !par[0] }
#else
ltl live { []<> par[0] && []<> !par[0] && []<> par[1] && []<> !par[1] }
#endif
#else
#if defined(CLOSE)
#define DONE (DRAINED(0) || DRAINED(1))
#elif TRAFFIC == ONEWAY
#define DONE (dlv[0] == N && held[1] == 0 && odone[0] == OPS0)
#else
#define DONE (dlv[0] == N && dlv[1] == N && held[0] == 0 && held[1] == 0 && \
	      odone[0] == OPS0 && odone[1] == OPS1)
#endif
ltl live { <> DONE }
#endif

init
{
	atomic {
		rq_posted[0] = R;
		rq_posted[1] = R;
#ifdef MUTANT_NO_ACK_RESERVE
		rc[0] = R;
		rc[1] = R;
#else
		rc[0] = C;
		rc[1] = C;
#endif
#ifndef INF
		left[0] = N;
#if TRAFFIC == TWOWAY
		left[1] = N;
#endif
#endif
#ifdef RDMA
		oleft[0] = NOPS;
#if TRAFFIC == TWOWAY
		oleft[1] = NOPS;
#endif
#endif
		run Ep(0); run Ep(1);
		run Nic(0); run Nic(1);
		run PollSend(0); run PollSend(1);
		run PollRecv(0); run PollRecv(1);
		run AppFree(0); run AppFree(1);
		run AppSend(0);
#if TRAFFIC != ONEWAY
		run AppSend(1)
#endif
	}
}
