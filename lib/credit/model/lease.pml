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
 * Rendezvous replies (-DRNDV): each peer's messages are requests of MC
 * chunks, and the poller's application holds every request until its
 * reply is done: a descriptor it sends to the peer, done when the peer's
 * FIN arrives in the SRQ (the reply's READ is left out: it needs no
 * credit). A descriptor takes a credit of the SRQ's FIN reserve of FR,
 * kept out of the pool and never lent, and brings it to the peer; with
 * the reserve all out, descriptors wait. The peer's data never spends a
 * FIN's credit: a chunk goes only while its credits exceed its FINs due,
 * and a FIN goes whenever it has a credit, between two chunks of a request
 * too. It counts FINs due as queued SENDs for WANT and gives nothing back
 * while FINs are due. A data SEND that finds the lease spent (out == 0)
 * breaks the rules (L2). L2 also counts the reserve: pool + sum(lease) +
 * fin_free + sum(fins) == NSRQ; L3 needs every reply done and the reserve
 * whole. (Not combined with -DYACKS, -DLATE, -DINF.)
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
 *   -DMUTANT_NO_FIN_RESERVE  (with -DRNDV) no FIN reserve: a FIN spends a
 *                         credit of the lease, which requests held until
 *                         their replies are done may all hold: L3
 *                         (deadlock)
 *   -DMUTANT_FIN_AFTER_REQUEST  (with -DRNDV) a FIN only between requests:
 *                         a request starts on one credit (on all its chunks
 *                         and the FINs due when FINs are due) and its chunks
 *                         go on with any credit, the FIN's too, which the
 *                         poller then counts in the lease (swapped) until a
 *                         FIN spends a lease credit. Once every lease credit
 *                         is in requests held for their replies, the FIN has
 *                         none: L3 (deadlock)
 *   -DMUTANT_START_ON_ALL_CHUNKS  (with -DRNDV) as the one above, but a
 *                         request starts only when its credits cover all its
 *                         chunks and the FINs due, so a FIN keeps its credit:
 *                         with TACK > 1 a request can then wait for credits
 *                         the poller owes below TACK while the peer still
 *                         holds some of its lease: L3 (deadlock)
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

#ifdef RNDV
#if defined(YACKS) || defined(LATE) || defined(INF)
#error "-DRNDV is modelled alone"
#endif
#if defined(MUTANT_FIN_AFTER_REQUEST) || defined(MUTANT_START_ON_ALL_CHUNKS)
#define SWAPS		/* data may spend a FIN's credit */
#endif
#ifndef MC
#define MC 2		/* chunks of a request (FLOOR >= MC: a request fits the floor) */
#endif
#ifndef FR
#define FR 1		/* the SRQ's FIN reserve */
#endif
#ifdef MUTANT_NO_FIN_RESERVE
#define FRES 0
#else
#define FRES FR
#endif
#else
#define FRES 0
#endif

#define DATA 0
#define GB 1
#define ACK 2
#define FIN 3
#define DESC 4
#ifdef RNDV
#define CAP (LMAX + FR + 1)
#define BCAP (LMAX + N + 1)
#else
#define CAP (LMAX + AX + 1)
#endif

hidden byte L1_no_rnr = 1;
hidden byte L2_credits_conserved = 1;

/* ---- the poller ---- */
byte posted = NSRQ;	/* SRQ buffers posted */
byte unposted;		/* buffers back, waiting to be posted again */
#ifdef LATE
byte pool = NSRQ - (K - 1) * (FLOOR + AX);
#else
byte pool = NSRQ - K * (FLOOR + AX) - FRES;
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
#elif defined(RNDV)
chan back[K] = [BCAP] of { byte, byte };	/* to sender k: ACK or DESC, credits */
#else
chan back[K] = [CAP] of { byte };	/* credits on their way to sender k */
#endif

#ifdef RNDV
/* the poller */
byte fin_free = FRES;	/* the FIN reserve's credits not out */
byte fins[K];		/* FIN credits out with descriptors, their FIN not here */
byte swapped[K];	/* (the mutant's) FIN credits a data SEND spent, in the lease */
byte part[K];		/* chunks here of the request coming in */
byte reqs[K];		/* whole requests held, no reply begun */
byte replying[K];	/* requests held, their descriptor out */
/* the senders */
byte mid[K];		/* chunks still to send of the request begun */
byte fdue[K];		/* descriptors here, their FIN not sent */
#define SW(k) swapped[k]
#else
#define SW(k) 0
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

#ifdef RNDV
#define FIN_FREE fin_free
#define FINS(k) fins[k]
#else
#define FIN_FREE 0
#define FINS(k) 0
#endif

/* an overcommitting design conserves nothing: leave it to L1 to catch it */
#ifdef MUTANT_OVERCOMMIT
#define CONSERVED() skip
#else
#define CONSERVED() assert(L2_credits_conserved && x + pool + MEMBERS * AX + FIN_FREE == NSRQ)
#endif
#define CHECK_L2() \
	x = 0; w = 0; \
	do \
	:: w < K -> assert(L2_credits_conserved && \
			  (!MEMBER(w) || (lease[w] >= FLOOR + SW(w) && \
					   lease[w] <= LMAX + SW(w)))); \
		x = x + lease[w] + FINS(w); w++ \
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
			g = LMAX + SW(v) - lease[v];
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
#define DIVERT(k) (lease[k] - SW(k) > FLOOR && (!wanting[k] || len(wq) > 0))
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
#ifdef RNDV
			run Reply(k);
#else
			run Free(k);
#endif
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
#ifdef MUTANT_FIN_AFTER_REQUEST
#define MAY_START(i) (rc[i] > 0 && (fdue[i] == 0 || rc[i] >= fdue[i] + MC))
#define MAY_GO_ON(i) (rc[i] > 0)
#define FIN_MAY_GO(i) (mid[i] == 0)
#elif defined(MUTANT_START_ON_ALL_CHUNKS)
#define MAY_START(i) (rc[i] >= fdue[i] + MC)
#define MAY_GO_ON(i) (rc[i] > 0)
#define FIN_MAY_GO(i) (mid[i] == 0)
#else
#define MAY_START(i) (rc[i] > fdue[i])
#define MAY_GO_ON(i) (rc[i] > fdue[i])
#define FIN_MAY_GO(i) true
#endif
proctype Sender(byte i)
{
	do
	/* the application hands a message over */
#ifdef INF
	:: d_step { backlog[i] < 2 -> backlog[i]++ }
#else
	:: d_step { left[i] > 0 -> left[i]--; backlog[i]++ }
#endif
#ifdef RNDV
	/*
	 * A request's chunks spend credits beyond the FINs due, never a FIN's.
	 * WANT when the SENDs queued (FINs due among them) outlast the credits.
	 */
	:: d_step { backlog[i] > 0 && mid[i] == 0 && MAY_START(i) && nfull(wire[i]) ->
		rc[i]--; backlog[i]--; mid[i] = MC - 1;
		wire[i]!DATA,(backlog[i] * MC + mid[i] + fdue[i] > rc[i]),0 }
	:: d_step { mid[i] > 0 && MAY_GO_ON(i) && nfull(wire[i]) ->
		rc[i]--; mid[i]--;
		wire[i]!DATA,(backlog[i] * MC + mid[i] + fdue[i] > rc[i]),0 }
	/* a FIN, on any credit, between two chunks of a request too */
	:: d_step { FIN_MAY_GO(i) && fdue[i] > 0 && rc[i] > 0 && nfull(wire[i]) ->
		rc[i]--; fdue[i]--;
		wire[i]!FIN,0,0 }
#define QUIET_SENDER(i) (mid[i] == 0 && fdue[i] == 0)
#else
	/* a data SEND, WANT when the backlog outlasts the credits */
	:: d_step { backlog[i] > 0 && rc[i] > 0 && nfull(wire[i]) ->
		rc[i]--; backlog[i]--;
		wire[i]!DATA,(backlog[i] > rc[i]),PIGGY(i);
		TAKE_PIGGY(i) }
#define QUIET_SENDER(i) true
#endif
#ifndef MUTANT_NO_GIVEBACK
	/* a quiet sender gives its excess back (none while FINs are due) */
	:: d_step { backlog[i] == 0 && QUIET_SENDER(i) && rc[i] > FLOOR && nfull(wire[i]) ->
		wire[i]!GB,(rc[i] - FLOOR - 1),0;
		rc[i] = FLOOR }
#endif
#ifdef YACKS
	/* a pure ack for the poller's messages, into the SRQ's reserve */
	:: d_step { yowed[i] >= TACKY && nfull(wire[i]) -> wire[i]!ACK,0,yowed[i]; yowed[i] = 0 }
#elif defined(RNDV)
	/* credits arrive in immediate data; a descriptor's brings its FIN's */
	:: d_step { nempty(back[i]) -> back[i]?v,g;
		rc[i] = rc[i] + g;
		if
		:: v == DESC -> fdue[i]++
		:: else -> skip
		fi;
		v = 0; g = 0 }
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
#ifdef RNDV
			part[i]++;
			if
			:: part[i] == MC -> part[i] = 0; reqs[i]++
			:: else -> skip
			fi;
#ifdef SWAPS
			if
			:: out[i] > 0 -> out[i]--
			:: else ->
				/* the lease is spent: the SEND spent a FIN credit */
				assert(L2_credits_conserved && fins[i] > 0);
				fins[i]--; swapped[i]++; lease[i]++
			fi;
#else
			/* data spends a credit of the lease */
			assert(L2_credits_conserved && out[i] > 0);
			out[i]--;
#endif
#else
			out[i]--;
#endif
			wanting[i] = g;
			if
			:: g && !queued[i] && lease[i] - SW(i) < LMAX -> queued[i] = 1; wq!i
			:: !g ->
				/* no longer wanting: owed credits above the floor go to the pool */
				w = lease[i] - FLOOR - SW(i);
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
			assert(L2_credits_conserved && lease[i] >= g + 1 + FLOOR + SW(i));
			QUEUE_BUF();
			out[i] = out[i] - g - 1;
			lease[i] = lease[i] - g - 1;
			pool = pool + g + 1
		:: v == ACK ->	/* the peer's pure ack: its buffer goes back at once */
			QUEUE_BUF()
#ifdef RNDV
		:: v == FIN ->
			/* its buffer goes back at once, its credit to the reserve */
			QUEUE_BUF();
#ifdef MUTANT_NO_FIN_RESERVE
			out[i]--;
#else
#ifdef SWAPS
			if
			:: fins[i] > 0 -> fins[i]--
			:: else ->
				/* a FIN credit spent on data: the FIN spends a lease credit */
				assert(L2_credits_conserved && swapped[i] > 0 && out[i] > 0);
				swapped[i]--; out[i]--; lease[i]--
			fi;
#else
			/* the FIN spends the credit its descriptor brought */
			assert(L2_credits_conserved && fins[i] > 0);
			fins[i]--;
#endif
			fin_free++;
#endif
			/* the reply is done: the application frees its request */
			replying[i]--;
			w = MC;
			do
			:: w > 0 ->
				held[i]--;
				QUEUE_BUF();
				if
				:: DIVERT(i) -> lease[i]--; pool++
				:: else -> owed[i]++
				fi;
				w--
			:: else -> break
			od;
			dlv[i]++
#endif
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
#if defined(YACKS) || defined(RNDV)
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

#ifdef RNDV
/*
 * The application answers a whole request with a rendezvous reply: its
 * descriptor takes a credit of the FIN reserve and brings it to the peer;
 * with the reserve all out, it waits.
 */
#ifdef MUTANT_NO_FIN_RESERVE
#define FIN_TAKE() back[i]!DESC,0
#define FIN_CAN (true)
#else
#define FIN_TAKE() fin_free--; fins[i]++; back[i]!DESC,1
#define FIN_CAN (fin_free > 0)
#endif
proctype Reply(byte i)
{
	do
	:: d_step { reqs[i] > 0 && FIN_CAN && nfull(back[i]) ->
		reqs[i]--; replying[i]++;
		POST_FIRST();
		FIN_TAKE() }
	od
}
#define RQUIET(k) (fins[k] == 0 && swapped[k] == 0 && replying[k] == 0 && fdue[k] == 0 && \
		   fin_free == FRES)
#else
#define RQUIET(k) true
#endif

#ifdef INF
ltl live { []<> par[0] && []<> !par[0] && [] (queued[0] -> <> !queued[0]) }
#else
#ifdef YACKS
#define XQUIET(k) (xdlv[k] == NX && len(back[k]) == 0)
#else
#define XQUIET(k) true
#endif
#define QUIET(k) (dlv[k] == N && lease[k] == FLOOR && len(wire[k]) == 0 && len(cq[k]) == 0 && \
		  XQUIET(k) && RQUIET(k))
#if K == 2
ltl live { <> (QUIET(0) && QUIET(1)) }
#else
ltl live { <> (QUIET(0) && QUIET(1) && QUIET(2)) }
#endif
#endif
