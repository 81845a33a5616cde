/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Leased credits on a shared receive queue, model-checked with spin.
 *
 * One poller owns an SRQ of NSRQ receive buffers shared by K endpoints.
 * Each endpoint k has a peer, sender k, that streams messages to it over its
 * own RC connection (FIFO, in order). The receive side is what is new, so
 * that is what is modelled; the send queues follow the per-endpoint rules
 * of credit.pml and are left out.
 *
 * The poller's credits are in exactly one place:
 *   - pool: free, the poller's own;
 *   - lease[k]: endpoint k's. It is never below FLOOR and never above LMAX,
 *     and is split into the sender's rc, data and give-backs on the wire or
 *     waiting in the CQ, messages the application holds, owed credits, and
 *     credits on their way back in immediate data.
 * NSRQ = pool + sum(lease). Every buffer a message consumes was posted.
 *
 * A buffer that comes back (freed by the application, or a give-back's or
 * pure ack's, at once) waits to be posted again: the poller posts such
 * buffers in batches, whenever it likes (Repost). Before a SEND of the
 * poller (owed credits; with -DYACKS its data too, which the peer's pure
 * acks answer), the waiting buffers are posted, unless the pool's free
 * credits cover them all (pool >= unposted): then the posted buffers
 * cover every credit leased and every reserve without them.
 *
 * The rules (docs/credit-protocol.md, "Leased credits on a shared receive
 * queue"):
 *   - A sender spends one credit per data SEND and sets WANT on it when its
 *     backlog is larger than its credits after the send.
 *   - The poller marks an endpoint wanting on a WANT, and unmarks it on a
 *     data SEND without WANT. A wanting endpoint waits in a FIFO for one
 *     grant of up to GRANT credits from the pool (never above LMAX).
 *   - A freed message's credit goes back to its endpoint (owed), unless the
 *     lease is above FLOOR and the endpoint is not wanting or others wait:
 *     then it goes to the pool (the lease shrinks where the poller is). A
 *     data SEND without WANT also sends the owed credits above FLOOR there.
 *   - A sender with no backlog and rc above FLOOR gives the excess back:
 *     one SEND that spends one credit and carries rc - FLOOR - 1 more. The
 *     poller gives its buffer back at once and puts all rc - FLOOR into the
 *     pool (the lease shrinks where the sender is).
 *   - Owed credits travel in immediate data once owed >= TACK, or at once
 *     when the sender holds none and none are on the wire (out == 0).
 *
 * Checked:
 *   L1  no RNR: assertion at every arrival, on the SRQ's own count of
 *       posted buffers;
 *   L2  conservation and bounds: pool + sum(lease) == NSRQ and
 *       FLOOR <= lease <= LMAX after every step;
 *   L3  liveness, finite streams (default): <> DONE, every message of every
 *       sender delivered and freed, every lease back at FLOOR (no credit
 *       stranded on a quiet sender or at the poller), nothing on the wire;
 *       no fairness assumed. Endless streams (-DINF, under weak fairness):
 *       every sender delivers infinitely often, and a wanting endpoint is
 *       granted or stops wanting (no starvation).
 *
 * Pure acks (-DYACKS): the poller also streams NX messages to each peer,
 * into the peer's own RQ of CY data credits and AY entries for the
 * poller's pure acks, and each peer returns those credits piggybacked on
 * its data or in pure acks (at least TACKY each) that land in the SRQ.
 * The SRQ keeps AX = ceil(CY / TACKY) buffers per endpoint for them, the
 * I2 bound of credit.pml; the poller's own credits go back in pure acks
 * only (the worst case for the peer). L1 then covers the peer's RQ too.
 *
 * Admission mid-stream (-DLATE): endpoint K-1 is admitted by another
 * thread (Admit) at any step while the others stream, its floor (and
 * reserve) taken from the pool only if KEEP credits stay there; its peer
 * may send as soon as it is admitted, before the poller has seen
 * anything of it. The poller posts the waiting buffers once KEEP of them
 * are back (its batch holds fewer), so the pool's cover of them survives
 * any admission.
 *
 * Mutants, each a check that the model can fail:
 *   -DMUTANT_OVERCOMMIT   grants do not wait for the pool (the SRQ is lent
 *                         beyond its buffers, as RNR-retry designs do): L1
 *   -DMUTANT_NO_GIVEBACK  a quiet sender keeps its excess: L3 (stranded)
 *   -DMUTANT_UNPOSTED_CREDIT  owed credits leave while their buffers wait
 *                         to be posted, whatever the pool holds: L1
 *   -DMUTANT_ADMIT_NO_KEEP  (with -DLATE) the admission takes the pool's
 *                         last credits, the waiting buffers' cover: L1
 *   -DMUTANT_SHORT_AY     (with -DYACKS) the peer keeps one entry fewer
 *                         for the poller's pure acks: L1 at the peer
 *   -DMUTANT_NO_DIVERT    freed credits always go back to their endpoint:
 *                         a wanting endpoint can starve, which only the
 *                         endless streams can show (finite streams end,
 *                         and give-backs then return everything); that
 *                         search under weak fairness does not finish in
 *                         minutes at K = 3, so the suite leaves it out.
 */

#ifndef K
#define K 3		/* endpoints on the SRQ */
#endif
#ifndef FLOOR
#define FLOOR 1		/* credits each endpoint keeps */
#endif
#ifndef LMAX
#define LMAX 3		/* most credits one endpoint may lease */
#endif
#ifndef GRANT
#define GRANT 2		/* most credits one grant gives */
#endif
#ifndef TACK
#define TACK 1		/* smallest count a pure ack returns (unless out == 0) */
#endif
#ifndef NSRQ
#define NSRQ 5		/* SRQ buffers: K * FLOOR plus what can be lent */
#endif
#ifndef N
#define N 3		/* messages per sender (finite streams) */
#endif

#ifdef YACKS
#ifndef CY
#define CY 2		/* data credits of each peer's own RQ, for the poller's data */
#endif
#ifndef TACKY
#define TACKY 1		/* the peer's ack threshold */
#endif
#ifndef NX
#define NX 2		/* messages the poller sends each peer */
#endif
/* the SRQ's reserve for one peer's pure acks: its I2 bound */
#ifdef MUTANT_SHORT_AX
#define AX ((CY + TACKY - 1) / TACKY - 1)
#else
#define AX ((CY + TACKY - 1) / TACKY)
#endif
/*
 * The peer's reserve for the poller's pure acks. Each carries at least TACK
 * of at most LMAX credits, except one sent at out == 0, which is alone on
 * the wire and in the peer's CQ (out == 0 says nothing is there): so
 * max(1, LMAX / TACK), never more than today's ceil(C / T_ack).
 */
#if LMAX / TACK > 0
#define AY_NEED (LMAX / TACK)
#else
#define AY_NEED 1
#endif
#ifdef MUTANT_SHORT_AY
#define AY (AY_NEED - 1)
#else
#define AY AY_NEED
#endif
#define XCAP (CY + AY)
#else
#define AX 0
#endif

#define DATA 0
#define GB 1
#define ACK 2
#define CAP (LMAX + AX + 1)

hidden byte L1_no_rnr = 1;
hidden byte L2_credits_conserved = 1;

/* ---- the poller ---- */
byte posted = NSRQ;	/* SRQ buffers posted */
byte unposted;		/* buffers back, waiting to be posted again */
#ifdef LATE
byte pool = NSRQ - (K - 1) * (FLOOR + AX);
#else
byte pool = NSRQ - K * (FLOOR + AX);
#endif
byte lease[K];
byte owed[K];		/* freed, reposted, not yet sent back */
byte held[K];		/* received messages the application holds */
byte out[K];		/* credits sent to sender k minus what its SENDs spent or gave back */
bit wanting[K];
bit queued[K];		/* in the FIFO of wanting endpoints */
chan wq = [K] of { byte };
chan wire[K] = [CAP] of { byte, byte, byte };	/* peer k to the poller: kind, value, credits */
chan cq[K] = [CAP] of { byte, byte, byte };	/* arrived, consumed a buffer, not polled */
#ifdef YACKS
/* the poller's own stream to peer k, into the peer's RQ: kind, value */
chan back[K] = [XCAP] of { byte, byte };
chan ycq[K] = [XCAP] of { byte, byte };
byte xrc[K];		/* the poller's credits for peer k's RQ */
byte xleft[K];		/* messages still to send to peer k */
byte yposted[K];	/* peer k's RQ entries posted */
byte yheld[K];		/* messages of the poller peer k's application holds */
byte yowed[K];		/* credits peer k owes the poller */
byte xdlv[K];		/* messages of the poller delivered and freed at peer k */
#else
chan back[K] = [CAP] of { byte };	/* credits on their way to sender k */
#endif

/* ---- the senders ---- */
byte rc[K];
byte backlog[K];	/* handed over, not sent */
#ifdef INF
bit par[K];		/* flips at each delivery of stream k */
#else
byte left[K];		/* still to hand over */
byte dlv[K];		/* delivered and freed */
#endif

hidden byte k, g, v, w, x;	/* scratch, dead between steps */

#ifdef LATE
#ifndef KEEP
#define KEEP 2		/* the batch posts at KEEP buffers; an admission leaves KEEP */
#endif
#ifdef MUTANT_ADMIT_NO_KEEP
#define ADMIT_LEAVES 0
#else
#define ADMIT_LEAVES KEEP
#endif
bit admitted[K];	/* endpoint K-1 waits for Admit; the others are admitted at start */
#define MEMBER(k) admitted[k]
#define MEMBERS (K - 1 + admitted[K - 1])
#else
#define MEMBER(k) true
#define MEMBERS K
#endif

/* an overcommitting design conserves nothing: leave it to L1 to catch it */
#ifdef MUTANT_OVERCOMMIT
#define CONSERVED() skip
#else
#define CONSERVED() assert(L2_credits_conserved && x + pool + MEMBERS * AX == NSRQ)
#endif
#define CHECK_L2() \
	x = 0; w = 0; \
	do \
	:: w < K -> assert(L2_credits_conserved && \
			  (!MEMBER(w) || (lease[w] >= FLOOR && lease[w] <= LMAX))); \
		x = x + lease[w]; w++ \
	:: else -> break \
	od; \
	CONSERVED(); \
	x = 0; w = 0

/* a buffer back waits to be posted; with -DLATE the batch posts at KEEP */
#ifdef LATE
#define QUEUE_BUF() \
	unposted++; \
	if \
	:: unposted >= KEEP -> posted = posted + unposted; unposted = 0 \
	:: else -> skip \
	fi
#else
#define QUEUE_BUF() unposted++
#endif

/* one grant to the oldest waiter, while the pool has credit */
#ifdef MUTANT_OVERCOMMIT
#define POOL_HAS (true)
#else
#define POOL_HAS (pool > 0)
#endif
inline serve()
{
	do
	:: nempty(wq) && POOL_HAS ->
		wq?v;
		queued[v] = 0;
		if
		:: wanting[v] ->
			g = LMAX - lease[v];
			if
			:: g > GRANT -> g = GRANT
			:: else -> skip
			fi;
#ifndef MUTANT_OVERCOMMIT
			if
			:: g > pool -> g = pool
			:: else -> skip
			fi;
			pool = pool - g;
#else
			if
			:: g > pool -> pool = 0
			:: else -> pool = pool - g
			fi;
#endif
			lease[v] = lease[v] + g;
			owed[v] = owed[v] + g
		:: else -> skip
		fi;
		v = 0; g = 0
	:: empty(wq) || !POOL_HAS -> break
	od
}

#ifdef MUTANT_NO_DIVERT
#define DIVERT(k) (false)
#else
#define DIVERT(k) (lease[k] > FLOOR && (!wanting[k] || len(wq) > 0))
#endif

init {
	atomic {
		k = 0;
		do
		:: k < K ->
#ifdef LATE
			if
			:: k < K - 1 ->
				admitted[k] = 1;
#endif
				lease[k] = FLOOR;
				rc[k] = FLOOR;
				out[k] = FLOOR;
#ifdef LATE
			:: else -> skip
			fi;
#endif
#ifndef INF
			left[k] = N;
#endif
#ifdef YACKS
			xrc[k] = CY;
			xleft[k] = NX;
			yposted[k] = CY + AY;
			run Peer(k);
#endif
			run Sender(k);
			run Arrive(k);
			run Poll(k);
			run Free(k);
			run Credit(k);
			k++
		:: else -> break
		od;
		run Repost();
#ifdef LATE
		run Admit();
#endif
		k = 0
	}
}

#ifdef YACKS
#define PIGGY(i) yowed[i]
#define TAKE_PIGGY(i) yowed[i] = 0
#else
#define PIGGY(i) 0
#define TAKE_PIGGY(i) skip
#endif

/* sender i: its application, its data SENDs, its give-backs, its credits */
proctype Sender(byte i)
{
	do
	/* the application hands a message over */
#ifdef INF
	:: d_step { backlog[i] < 2 -> backlog[i]++ }
#else
	:: d_step { left[i] > 0 -> left[i]--; backlog[i]++ }
#endif
	/* a data SEND, WANT when the backlog outlasts the credits */
	:: d_step { backlog[i] > 0 && rc[i] > 0 && nfull(wire[i]) ->
		rc[i]--; backlog[i]--;
		wire[i]!DATA,(backlog[i] > rc[i]),PIGGY(i);
		TAKE_PIGGY(i) }
#ifndef MUTANT_NO_GIVEBACK
	/* a quiet sender gives its excess back */
	:: d_step { backlog[i] == 0 && rc[i] > FLOOR && nfull(wire[i]) ->
		wire[i]!GB,(rc[i] - FLOOR - 1),0;
		rc[i] = FLOOR }
#endif
#ifdef YACKS
	/* a pure ack for the poller's messages, into the SRQ's reserve */
	:: d_step { yowed[i] >= TACKY && nfull(wire[i]) -> wire[i]!ACK,0,yowed[i]; yowed[i] = 0 }
#else
	/* credits arrive in immediate data */
	:: d_step { nempty(back[i]) -> back[i]?g; rc[i] = rc[i] + g; g = 0 }
#endif
	od
}

#ifdef YACKS
/* peer i's RQ: the poller's SENDs arrive, are polled, and freed */
proctype Peer(byte i)
{
	do
	:: d_step { nempty(back[i]) && nfull(ycq[i]) ->
		assert(L1_no_rnr && yposted[i] > 0);
		yposted[i]--;
		back[i]?v,g; ycq[i]!v,g;
		v = 0; g = 0 }
	:: d_step { nempty(ycq[i]) ->
		ycq[i]?v,g;
		if
		:: v == ACK -> rc[i] = rc[i] + g; yposted[i]++
		:: else -> yheld[i]++
		fi;
		v = 0; g = 0 }
	:: d_step { yheld[i] > 0 -> yheld[i]--; yposted[i]++; yowed[i]++; xdlv[i]++ }
	od
}
#endif

/* a SEND of sender i arrives and takes the oldest posted buffer of the SRQ */
proctype Arrive(byte i)
{
	do
	:: d_step { nempty(wire[i]) && nfull(cq[i]) ->
		assert(L1_no_rnr && posted > 0);
		posted--;
		wire[i]?v,g,w; cq[i]!v,g,w;
		v = 0; g = 0; w = 0 }
	od
}

/* the poller takes a receive completion of endpoint i */
proctype Poll(byte i)
{
	do
	:: d_step { nempty(cq[i]) ->
		cq[i]?v,g,x;
#ifdef YACKS
		xrc[i] = xrc[i] + x;
#endif
		x = 0;
		if
		:: v == DATA ->
			held[i]++;
			out[i]--;
			wanting[i] = g;
			if
			:: g && !queued[i] && lease[i] < LMAX -> queued[i] = 1; wq!i
			:: !g ->
				/* no longer wanting: owed credits above the floor go to the pool */
				w = lease[i] - FLOOR;
				if
				:: w > owed[i] -> w = owed[i]
				:: else -> skip
				fi;
				owed[i] = owed[i] - w;
				lease[i] = lease[i] - w;
				pool = pool + w;
				w = 0
			:: else -> skip
			fi
		:: v == GB ->	/* a give-back: its buffer goes back at once */
			QUEUE_BUF();
			out[i] = out[i] - g - 1;
			lease[i] = lease[i] - g - 1;
			pool = pool + g + 1
		:: v == ACK ->	/* the peer's pure ack: its buffer goes back at once */
			QUEUE_BUF()
		fi;
		serve();
		CHECK_L2();
		v = 0; g = 0 }
	od
}

/* the application frees a message of endpoint i; its buffer waits to be posted */
proctype Free(byte i)
{
	do
	:: d_step { held[i] > 0 ->
		held[i]--;
		QUEUE_BUF();
#ifdef INF
		par[i] = !par[i];
#else
		dlv[i]++;
#endif
		if
		:: DIVERT(i) -> lease[i]--; pool++
		:: else -> owed[i]++
		fi;
		serve();
		CHECK_L2() }
	od
}

/* the poller posts the buffers that wait, at any time */
proctype Repost()
{
	do
	:: d_step { unposted > 0 -> posted = posted + unposted; unposted = 0 }
	od
}

#ifdef LATE
/*
 * The control thread admits endpoint K-1 while the others stream: its
 * floor and reserve leave the pool if ADMIT_LEAVES credits stay, and its
 * peer holds the floor at once.
 */
proctype Admit()
{
	d_step { pool >= FLOOR + AX + ADMIT_LEAVES ->
		pool = pool - FLOOR - AX;
		lease[K - 1] = FLOOR;
		out[K - 1] = FLOOR;
		admitted[K - 1] = 1;
		rc[K - 1] = FLOOR }
}
#endif

/* before owed credits leave: the waiting buffers posted, unless the pool covers them */
#ifdef MUTANT_UNPOSTED_CREDIT
#define POST_FIRST() skip
#else
#define POST_FIRST() \
	if \
	:: unposted > pool -> posted = posted + unposted; unposted = 0 \
	:: else -> skip \
	fi
#endif

/*
 * Owed credits go back in immediate data (a pure ack here, the worst case
 * for the peer's RQ); with -DYACKS the poller also streams to the peer.
 */
proctype Credit(byte i)
{
	do
	:: d_step { owed[i] > 0 && (owed[i] >= TACK || out[i] == 0) && nfull(back[i]) ->
		POST_FIRST();
#ifdef YACKS
		back[i]!ACK,owed[i];
#else
		back[i]!owed[i];
#endif
		out[i] = out[i] + owed[i];
		owed[i] = 0 }
#ifdef YACKS
	:: d_step { xleft[i] > 0 && xrc[i] > 0 && MEMBER(i) && nfull(back[i]) ->
		POST_FIRST();
		xleft[i]--; xrc[i]--; back[i]!DATA,0 }
#endif
	od
}

#ifdef INF
ltl live { []<> par[0] && []<> !par[0] && [] (queued[0] -> <> !queued[0]) }
#else
#ifdef YACKS
#define XQUIET(k) (xdlv[k] == NX && len(back[k]) == 0)
#else
#define XQUIET(k) true
#endif
#define QUIET(k) (dlv[k] == N && lease[k] == FLOOR && len(wire[k]) == 0 && len(cq[k]) == 0 && \
		  XQUIET(k))
#if K == 2
ltl live { <> (QUIET(0) && QUIET(1)) }
#else
ltl live { <> (QUIET(0) && QUIET(1) && QUIET(2)) }
#endif
#endif
