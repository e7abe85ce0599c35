# The partitioned kernel: full packet mode on N native threads (included by kernel.pyx).
#
# The fabric is cut into logical processes (LPs), each a set of nodes with every port
# of those nodes; a link between two LPs is a cut link, and the smallest delay of a cut
# link is the lookahead L.  An LP is a Sim of its own that shares the Kernel's fabric,
# flow and CC arrays (each port, switch and side of a flow is written only by the LP of
# its node) and owns its heap, packet pool, completions, PFC log and statistics.
#
# Conservative rounds: every LP processes its events of [T0, T0 + L) (T0: the earliest
# pending event of all), then the arrivals sent over cut links in the round (each due at
# T0 + L or later, as a link's delay is at least L) are copied into the receiving LPs'
# pools and heaps, and the next round starts.  LPs run in parallel within a round
# (OpenMP, without the GIL): each thread takes its own LPs first (LP j is thread
# j % threads', so an LP's working set stays in one core's caches from round to round),
# then any not yet taken, each in decreasing order of their recent load: the
# assignment follows the load where the own LPs are unequal.  Each LP's
# pending events are in a calendar in front of its heap when the sequential run's would be
# (heap.pxd: the same order under either key, so only the cost differs).
#
# Determinism, KEY_RANK (the default): the LPs order same-time events as the sequential
# kernel does, by insertion: an event's key is (rank of the event that scheduled it, that
# event's own push counter), the rank being the event's place in the sequential order of
# processing (heap.pxd).  During a round an LP keys what it schedules by the slot of the
# scheduling event, whose value is provisional: the round's base plus its place among the
# LP's events of the round.  That is enough within the round: an event meets in an LP's heap
# only events scheduled by the same LP in the round (ordered by slot) or by anyone in an
# earlier round (ranked, and below the base).  At the round's end every LP's events of the
# round are ranked in the sequential order (rank_slice: the round cut by time into slices,
# taken by the threads as they come; a slice's events, from every LP, merged in that order,
# an event's rank being the round's base, the events of every LP due before the slice and its
# place in the slice), and each slot's value becomes its rank; the values keep the order of
# the LP's own events, so its heap stays ordered.  The arrivals sent over cut links then enter the
# receiving LPs with their scheduling event's rank: they meet the receiver's events as in
# the sequential run.  Random draws of the one stream (ECN marks, the reference's PFC
# frame ids) are deferred to the round's end and taken in rank order (draws.pxd); a round
# is no longer than the smallest delay of a link from a switch to a host, so no mark is
# read before it is decided.  Completions and PFC records are merged by the rank of the
# event that made them, statistics are summed: the output is the sequential run's.
#
# KEY_LOCAL (tie_order='local'): same-time events ordered by a key the scheduling node
# computes alone, so the run is the same for any partition and thread count, equal to the
# sequential kernel under KEY_LOCAL (not the default order), with no merge; random draws
# must then come from per-port streams (ecn_rng='port').  Either way the driver takes no
# accelerator, callbacks or user events (backend_packet checks).

from cython.parallel cimport parallel
cimport openmp

cdef extern from "wh_omp.h":
    void wh_omp_barrier() nogil
    int64_t wh_ticket(int64_t* counter) nogil
    int wh_claim(int64_t* flag, int64_t frm, int64_t to) nogil

ctypedef struct Xfer:
    # A packet sent over a cut link in this round.
    int64_t t           # its arrival time at the receiving port, ps
    int64_t ts          # tie key (ts, seq) of its arrival event, taken by the sender (KEY_LOCAL)
    uint64_t seq
    int32_t port        # the receiving port (in the target LP)
    int32_t pk          # its slot in the sending LP's pool (freed at the end of the sender's round)
    Packet pkt          # the packet as sent
    IntHop ints[5]      # its INT hop records (INT_HOPS; the first min(nhop, INT_MAX_HOP), the only ones read)

ctypedef struct Lp:
    # One logical process.
    Sim* s              # its Sim (see lp_enter for what it owns and what it shares)
    int32_t id          # its index in Par.lps
    int32_t* lp_of_port # Par.lp_of_port (the target of a packet sent over a cut link)
    int32_t n_lp        # Par.n_lp
    uint8_t started     # it has entered a run once (its clock and random streams are its own since)
    Xfer** out          # per target LP: the arrivals sent there in this round
    int64_t* n_out      # per target LP: entries of out
    int64_t* cap_out    # per target LP: capacity of out
    int64_t load        # events per round, smoothed (the threads take LPs in decreasing load); written
                        # in the import phase only, as every thread sorts by it at the start of a round
    int64_t load_next   # the same, with the round just run (lp_round writes it, lp_import copies it)
    int64_t pops0       # heap pops before the round
    int64_t draws0      # ns-3 draws when the run began (the Kernel's ns3_draws statistic adds the difference)
    int64_t sent        # packets it sent over cut links
    int32_t done0       # KEY_RANK: completions and PFC records before the round (the round's are ranked
    int64_t pfc0        # at its end)
    int64_t head        # KEY_RANK, draws_resolve: its next draw
    int64_t ev_total    # events it processed, over every run (Kernel.parallel_stats: per_process)
    int64_t sent_total  # packets it sent over cut links, over every run (sent, added at each run's end)
    double busy_s       # wall-clock seconds its rounds took (lp_round), over every run

ctypedef struct Par:
    # The parallel driver of a Kernel (Sim.par).
    int32_t n_lp        # logical processes
    int32_t threads     # OpenMP threads in a round
    int64_t lookahead   # ps: the smallest delay of a cut link (one round's length)
    Lp* lps             # per LP
    int32_t* lp_of_port # per port: its LP
    uint8_t* port_cut   # per port: its peer is in another LP (shared by every LP's Sim)
    int32_t* order      # LPs in decreasing load (the order the threads take them in)
    int64_t* heads      # per LP: its earliest event after the last import (INT64_MAX: none)
    uint8_t* fails      # per LP: its Sim.fail after the last import
    int64_t* claimed    # per LP: the last round a thread took it in (round r takes it from r - 1: wh_claim)
    int64_t rtickets[3] # round r's time slices ranked (KEY_RANK, rank_slice) are handed out by
                        # rtickets[r % 3] (reset two rounds ahead)
    int32_t n_slices    # KEY_RANK: time slices a round's ranking is cut into (1 on one thread)
    int32_t tree_k      # KEY_RANK: leaves of rank_slice's loser tree (the least power of two >= n_lp)
    int64_t* slice_ties # per slice: rank_slice's comparisons of two LPs' events due at the same picosecond
    int64_t rounds      # rounds run
    int64_t xfers       # packets that crossed a cut link
    int64_t round_len   # ps: one round's length (the lookahead; KEY_RANK deferring draws: at most the
                        # smallest delay of a switch-to-host link)
    Sim* m              # the Kernel's Sim (its random streams take the deferred draws)
    int64_t base        # KEY_RANK: ranks given so far (the next round's start here)
    int64_t deferred    # draws deferred to rounds' ends
    int64_t ties_across # rank_slice's comparisons of two LPs' events due at the same picosecond
    double merge_s      # wall-clock seconds of thread 0 from a round's end to the imports (ranks, draws)
    double* wait_s      # per thread and barrier of a round (WAIT_SITES each): seconds spent waiting there
    uint8_t calendar    # 1: each LP has a calendar in front of its heap (heap.pxd; where the sequential run has)


cdef void stats_zero(Sim* s) noexcept nogil:
    """An LP's statistics start from zero in each run (lp_exit adds them to the Kernel's)."""
    cdef int k
    for k in range(<int>N_EVENT_KINDS):
        s.events[k] = 0
        s.pops[k] = 0
        s.stale_by[k] = 0
    s.stale_events = 0
    s.tx_ctrl = 0
    s.tx_unsched = 0
    s.wake_unsched = 0
    s.arrive_ctrl = 0
    s.txdone_idle = 0
    s.wake_idle = 0
    s.wake_busy = 0
    s.data_pkts = 0
    s.ctrl_pkts = 0
    s.drops = 0
    s.corrupt = 0
    s.pfc_pauses = 0
    s.pfc_resumes = 0
    s.ecn_marks = 0
    s.nacks = 0
    s.timeouts = 0


cdef void stats_add(Sim* m, Sim* s) noexcept nogil:
    cdef int k
    for k in range(<int>N_EVENT_KINDS):
        m.events[k] += s.events[k]
        m.pops[k] += s.pops[k]
        m.stale_by[k] += s.stale_by[k]
    m.stale_events += s.stale_events
    m.tx_ctrl += s.tx_ctrl
    m.tx_unsched += s.tx_unsched
    m.wake_unsched += s.wake_unsched
    m.arrive_ctrl += s.arrive_ctrl
    m.txdone_idle += s.txdone_idle
    m.wake_idle += s.wake_idle
    m.wake_busy += s.wake_busy
    m.data_pkts += s.data_pkts
    m.ctrl_pkts += s.ctrl_pkts
    m.drops += s.drops
    m.corrupt += s.corrupt
    m.pfc_pauses += s.pfc_pauses
    m.pfc_resumes += s.pfc_resumes
    m.ecn_marks += s.ecn_marks
    m.nacks += s.nacks
    m.timeouts += s.timeouts
    if s.max_qbytes > m.max_qbytes:
        m.max_qbytes = s.max_qbytes
    if s.max_buffer > m.max_buffer:
        m.max_buffer = s.max_buffer


cdef int lp_enter(Sim* m, Par* P, Lp* L) noexcept nogil:
    """Start a run of the LP: take the Kernel's shared state (fabric, flows, CC arrays,
    parameters: they may have grown since), keep what the LP owns (clock, tie-key
    counter, heap and calendar, pool, random streams), with empty completions and PFC log, zero
    statistics.  Returns -1 if memory ran out."""
    cdef Sim* s = L.s
    cdef Sim own = s[0]
    cdef int32_t* d
    cdef int64_t* dk
    s[0] = m[0]
    if L.started:
        s.now = own.now
        s.cur_ts = own.cur_ts
        s.cur_seq = own.cur_seq
        s.seq = own.seq
        s.rng = own.rng
        s.ns3rng = own.ns3rng
    if m.now > s.now:               # the Kernel's clock was moved on (set_now): every key so far passed
        s.now = m.now
        s.cur_ts = m.cur_ts
        s.cur_seq = m.cur_seq
    L.started = 1
    L.draws0 = s.ns3rng.draws
    s.heap = own.heap
    s.heap_n = own.heap_n
    s.heap_cap = own.heap_cap
    s.cal = own.cal                     # its calendar (the Kernel's is off: par_new)
    s.wire_n = own.wire_n
    s.pkts = own.pkts
    s.ints = own.ints
    s.pkt_cap = own.pkt_cap
    s.free_head = own.free_head
    s.pkts_live = own.pkts_live
    s.pkts_peak = own.pkts_peak
    d = <int32_t*>realloc(own.done, (m.flow_cap + 1) * sizeof(int32_t))
    dk = <int64_t*>realloc(own.done_key, 2 * (m.flow_cap + 1) * sizeof(int64_t))
    if d != NULL:
        own.done = d
    if dk != NULL:
        own.done_key = dk
    s.done = own.done
    s.done_key = own.done_key
    if d == NULL or dk == NULL:
        return -1
    s.n_done = 0
    s.n_done_cb = 0
    s.notes = NULL
    s.n_notes = 0
    s.notes_cap = 0
    s.rnotes = NULL
    s.n_rnotes = 0
    s.rnotes_cap = 0
    s.pfc_log = own.pfc_log
    s.pfc_n = 0
    s.pfc_cap = own.pfc_cap
    s.rank_val = own.rank_val           # KEY_RANK: its slots (none in use between runs) and draws
    s.n_slot = 0
    s.cap_slot = own.cap_slot
    s.slot0 = 0
    s.log_t = own.log_t
    s.log_pv = own.log_pv
    s.log_seq = own.log_seq
    s.rank_log = L.n_lp > 1             # (rank_slice reads the log only to merge LPs)
    s.draws = own.draws
    s.n_draws = 0
    s.cap_draws = own.cap_draws
    s.defer_draws = own.defer_draws
    L.done0 = 0
    L.pfc0 = 0
    s.samples = NULL
    s.n_samples = 0
    s.samples_cap = 0
    s.sample_interval = 0
    s.budget = -1
    s.fail = 0
    s.port_cut = P.port_cut
    s.lp = L
    s.par = NULL
    stats_zero(s)
    return 0


cdef void lp_exit(Sim* m, Lp* L) noexcept nogil:
    """End of a run: the LP's statistics go to the Kernel's."""
    cdef Sim* s = L.s
    cdef int k
    for k in range(<int>N_EVENT_KINDS):
        L.ev_total += s.events[k]
    stats_add(m, s)
    m.ns3rng.draws += s.ns3rng.draws - L.draws0
    if s.fail and not m.fail:
        m.fail = s.fail


cdef inline int64_t _int_recs(Packet* p) noexcept nogil:
    """The INT records a packet carries that anything reads: the first min(nhop,
    INT_MAX_HOP) (a hop writes record nhop % INT_MAX_HOP; hpcc_on_ack and int_hops_shift
    read no further, and an ACK, which copies all five of its data packet's, has its
    nhop), so a cut link copies those alone."""
    return p.nhop if p.nhop < INT_MAX_HOP else INT_MAX_HOP


cdef void lp_send(Sim* s, int32_t port, int32_t pk, int64_t t) noexcept nogil:
    """A packet leaves on a cut link: its arrival at ``t`` goes to the receiving LP at
    the round's end, under the tie key it takes now."""
    cdef Lp* L = <Lp*>s.lp
    cdef int32_t peer = s.ports[port].peer
    cdef int32_t j = L.lp_of_port[peer]
    cdef Xfer* x
    cdef Xfer* nb
    cdef int32_t d
    if L.n_out[j] == L.cap_out[j]:
        nb = <Xfer*>realloc(L.out[j], (L.cap_out[j] * 2 + 256) * sizeof(Xfer))
        if nb == NULL:
            s.fail = 1
            pkt_free(s, pk)
            return
        L.out[j] = nb
        L.cap_out[j] = L.cap_out[j] * 2 + 256
    x = &L.out[j][L.n_out[j]]
    L.n_out[j] += 1
    x.t = t
    key_next(s, &x.ts, &x.seq)
    x.port = peer
    x.pk = pk
    if s.pkts[pk].draw != 0:            # its pending draws now mark the copy sent
        d = s.pkts[pk].draw - 1
        while d >= 0:
            s.draws[d].pk = -1
            s.draws[d].xlp = j
            s.draws[d].xk = L.n_out[j] - 1
            d = s.draws[d].prev
        s.pkts[pk].draw = 0
    x.pkt = s.pkts[pk]
    if s.p.int_mode == INT_HOPS:
        memcpy(&x.ints[0], &s.ints[<int64_t>pk * INT_MAX_HOP], _int_recs(&x.pkt) * sizeof(IntHop))


cdef void lp_round(Lp* L, int64_t end, int64_t base) noexcept nogil:
    """The LP's events up to ``end`` (inclusive), their provisional ranks from ``base``
    (KEY_RANK); the packets it sent over cut links in the round (copied into its
    outboxes) leave its pool."""
    cdef Sim* s = L.s
    cdef int32_t user = -1, j
    cdef int64_t pops = 0, k
    cdef int kk
    cdef double w0 = openmp.omp_get_wtime()
    for j in range(L.n_lp):             # the targets imported last round's
        L.sent += L.n_out[j]
        L.n_out[j] = 0
    s.slot0 = s.n_slot
    s.rank_base = base
    L.done0 = s.n_done
    L.pfc0 = s.pfc_n
    run_loop(s, end, &user)
    for j in range(L.n_lp):
        for k in range(L.n_out[j]):
            pkt_free(s, L.out[j][k].pk)
    for kk in range(<int>N_EVENT_KINDS):
        pops += s.pops[kk]
    L.load_next = (L.load * 3 + (pops - L.pops0) * 1024) // 4    # (x1024: integer smoothing)
    L.pops0 = pops
    L.busy_s += openmp.omp_get_wtime() - w0


cdef void lp_import(Par* P, int32_t j) noexcept nogil:
    """Copy the arrivals sent to LP j in this round into its pool and pending events (its
    calendar or heap, by the rank of the sending event); note its earliest event and
    whether it failed."""
    cdef Sim* s = P.lps[j].s
    cdef Lp* L
    cdef int32_t i, pk, nxt
    cdef int64_t k
    cdef Xfer* x
    for i in range(P.n_lp):
        L = &P.lps[i]
        for k in range(L.n_out[j]):
            x = &L.out[j][k]
            pk = pkt_alloc(s)
            if pk == NO_PKT:
                s.fail = 1
                break
            nxt = s.pkts[pk].next
            s.pkts[pk] = x.pkt
            s.pkts[pk].next = nxt
            s.pkts[pk].draw = 0
            if s.p.int_mode == INT_HOPS:
                memcpy(&s.ints[<int64_t>pk * INT_MAX_HOP], &x.ints[0], _int_recs(&x.pkt) * sizeof(IntHop))
            # (KEY_RANK: the sending event's slot, ranked by now, becomes its rank)
            if heap_push_seq(s, x.t, key_rank(L.s, x.ts), x.seq, EV_ARRIVE, x.port, pk) != 0:
                s.fail = 1
                break
    if s.key_mode == KEY_RANK:
        rank_settle(P, j)
    P.heads[j] = _lp_head(s)
    P.fails[j] = <uint8_t>s.fail
    P.lps[j].load = P.lps[j].load_next


cdef inline int64_t _lp_head(Sim* s) noexcept nogil:
    """The time of an LP's earliest pending event (calendar or heap), INT64_MAX if none."""
    cdef Event* e = pending_first(s)
    return e.t if e != NULL else INT64_MAX


cdef enum:
    WAIT_SITES = 4              # a round's barriers: after the LPs' events, the ranks, the draws, the imports
    SLICES_PER_THREAD = 4       # a round's ranking is cut into this many time slices per thread (taken as they
                                # come, so a thread that finished its LPs early takes more)
    COMPACT_SLOTS = 1 << 14     # an LP's slots are compacted away (rank_compact) past this many and four
                                # per key it holds: a compaction costs at most a quarter key per slot (1.8% of
                                # a 1-thread paper benchmark, 5% at 16 K fixed), and rank_val, written once per
                                # event, stays a few times the pending set (16 per key was not measurably
                                # faster on this noisy host)


ctypedef struct RankRun:
    # rank_slice's view of one LP's round: its logs from the round's first slot (scratch)
    int64_t* t          # log_t
    int64_t* pv         # log_pv
    uint64_t* seq       # log_seq
    int64_t* rv         # rank_val
    int64_t cur         # its next event of the slice (its place in the round)
    int64_t stop        # its first event after the slice
    int64_t ht          # the time of its next event (INT64_MAX: none left in the slice)


cdef inline bint _prec_tied(RankRun* y, int64_t f, RankRun* x, int64_t e) noexcept nogil:
    """rank_slice: event f of LP y's round (its place in the round) came before event e of
    another LP x's round, both due at the same picosecond, in the sequential order: by
    the events that scheduled them: ranked ones (an earlier round) by rank and then by
    push counter; one of this round comes after every ranked one; two of this round
    (each in its child's LP: only arrivals cross LPs, and they cross to a later round)
    by time, then as those two came, the same question one step back (it ends: each
    step goes to earlier events)."""
    cdef int64_t vf, ve
    while True:
        vf = y.pv[f]
        ve = x.pv[e]
        if (vf | ve) >= 0:
            if vf != ve:
                return vf < ve
            return y.seq[f] < x.seq[e]
        if (vf < 0) != (ve < 0):
            return ve < 0               # the one scheduled by an event of this round comes second
        f = -1 - vf
        e = -1 - ve
        if y.t[f] != x.t[e]:
            return y.t[f] < x.t[e]


cdef inline int64_t _first_at(int64_t* lt, int64_t n, int64_t t) noexcept nogil:
    """The first of the n times lt (in increasing order: a round's events) at or after t."""
    cdef int64_t lo = 0, hi = n, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if lt[mid] < t:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline bint _event_before(RankRun* a, int64_t ia, int64_t ta, RankRun* b, int64_t ib, int64_t tb,
                               int64_t* ties) noexcept nogil:
    """Event ia of run a (due at ta) came before event ib of another LP's run b (due at tb):
    by time, and at the same picosecond as _prec_tied puts them (counted in ties)."""
    if ta != tb:
        return ta < tb
    ties[0] += 1
    return _prec_tied(a, ia, b, ib)


cdef inline bint _run_before(RankRun* run, int32_t a, int32_t b, int64_t* ties) noexcept nogil:
    """rank_slice's loser tree: run a's next event comes before run b's (an exhausted run,
    INT64_MAX, after any other; two exhausted ones by index)."""
    if run[a].ht == INT64_MAX and run[b].ht == INT64_MAX:
        return a < b
    return _event_before(&run[a], run[a].cur, run[a].ht, &run[b], run[b].cur, run[b].ht, ties)


cdef int32_t _tree_build(RankRun* run, int32_t* tree, int32_t node, int32_t K, int64_t* ties) noexcept nogil:
    """The winner of the subtree at ``node`` (leaves K..2K-1 are the runs); each inner node
    keeps the loser of its match."""
    cdef int32_t a, b
    if node >= K:
        return node - K
    a = _tree_build(run, tree, 2 * node, K, ties)
    b = _tree_build(run, tree, 2 * node + 1, K, ties)
    if _run_before(run, b, a, ties):
        tree[node] = a
        return b
    tree[node] = b
    return a


cdef void _merge_two(RankRun* a, RankRun* b, int64_t r, int64_t* ties) noexcept nogil:
    """rank_slice with two processes: their events of the slice merged, ranks from r."""
    cdef int64_t ia = a.cur, ib = b.cur, ea = a.stop, eb = b.stop
    while ia < ea and ib < eb:
        if not _event_before(b, ib, b.t[ib], a, ia, a.t[ia], ties):
            a.rv[ia] = r
            ia += 1
        else:
            b.rv[ib] = r
            ib += 1
        r += 1
    while ia < ea:
        a.rv[ia] = r
        ia += 1
        r += 1
    while ib < eb:
        b.rv[ib] = r
        ib += 1
        r += 1


cdef void rank_slice(Par* P, int64_t k, int64_t t_lo, int64_t t_hi, RankRun* run, int32_t* tree) noexcept nogil:
    """KEY_RANK, at a round's end: the round's events due in [t_lo, t_hi), of every LP,
    take their ranks: the round's base, plus the events of every LP due before t_lo, plus
    their place in the slice's merge into the sequential order (each LP's events are in
    it already; a loser tree over the LPs' next events, by time and, at the same
    picosecond, as _prec_tied puts them: log2 of the LPs' count comparisons per event).
    Slices write disjoint slots and read only the round's logs, so they run in parallel.
    run, tree: scratch of P.tree_k (a power of two at least n_lp) each."""
    cdef int32_t n = P.n_lp, K = P.tree_k, i, w, node, q
    cdef int64_t r = P.base, ties = 0, m
    cdef Sim* x
    cdef RankRun* b
    for i in range(K):
        b = &run[i]
        if i >= n:
            b.cur = 0
            b.stop = 0
            b.ht = INT64_MAX
            continue
        x = P.lps[i].s
        m = x.n_slot - x.slot0
        b.t = x.log_t + x.slot0
        b.pv = x.log_pv + x.slot0
        b.seq = x.log_seq + x.slot0
        b.rv = x.rank_val + x.slot0
        b.cur = _first_at(b.t, m, t_lo)
        b.stop = b.cur + _first_at(b.t + b.cur, m - b.cur, t_hi)
        b.ht = b.t[b.cur] if b.cur < b.stop else INT64_MAX
        r += b.cur
    if n == 2:                          # two processes: a plain two-way merge (the tree's one match, inline)
        _merge_two(&run[0], &run[1], r, &ties)
        P.slice_ties[k] = ties
        return
    w = _tree_build(run, tree, 1, K, &ties) if K > 1 else 0
    while run[w].ht != INT64_MAX:
        b = &run[w]
        b.rv[b.cur] = r
        r += 1
        b.cur += 1
        b.ht = b.t[b.cur] if b.cur < b.stop else INT64_MAX
        node = (w + K) >> 1
        while node >= 1:                # the winner's path replayed against the losers kept there
            q = tree[node]
            if _run_before(run, q, w, &ties):
                tree[node] = w
                w = q
            node >>= 1
    P.slice_ties[k] = ties


cdef void draws_resolve(Par* P) noexcept nogil:
    """KEY_RANK deferring draws, after the ranks: the round's draws of every LP, in the
    order of the ranks of the events that made them, from the Kernel's one stream; each
    that marks sets its packet's CE bit (in the pool, or in the copy sent over a cut)."""
    cdef Sim* m = P.m
    cdef int32_t n = P.n_lp, i, best
    cdef int64_t total = 0, k, r, rb = 0
    cdef Sim* s
    cdef DrawRec* d
    cdef Packet* pkt
    cdef double v
    for i in range(n):
        total += P.lps[i].s.n_draws
        P.lps[i].head = 0
    P.deferred += total
    for k in range(total):
        best = -1
        for i in range(n):
            s = P.lps[i].s
            if P.lps[i].head < s.n_draws:
                r = key_rank(s, s.draws[P.lps[i].head].ref)
                if best < 0 or r < rb:
                    best = i
                    rb = r
        s = P.lps[best].s
        d = &s.draws[P.lps[best].head]
        P.lps[best].head += 1
        if m.p.ns3_rng:
            v = wh_ns3_draw(&m.ns3rng)
        else:
            v = wh_rng_uniform(&m.rng)
        if d.p >= 0.0 and v < d.p:
            pkt = NULL
            if d.pk >= 0:
                pkt = &s.pkts[d.pk]
            elif d.xlp >= 0:
                pkt = &P.lps[best].out[d.xlp][d.xk].pkt
            if pkt != NULL:
                if not pkt.ecn:
                    s.ecn_marks += 1
                pkt.ecn = 1
    for i in range(n):
        s = P.lps[i].s
        for k in range(s.n_draws):
            if s.draws[k].pk >= 0:
                s.pkts[s.draws[k].pk].draw = 0
        s.n_draws = 0


cdef void rank_compact(Par* P, int32_t j) noexcept nogil:
    """KEY_RANK: every key LP j holds that names a slot (its heap and calendar, its ports'
    unscheduled ends and wake-ups, the arrivals on their wires, its clock) takes that
    slot's rank, and the slots are free again (their round ranked).  The values do not
    change, so the heap and the calendar's buckets keep their order."""
    cdef Sim* s = P.lps[j].s
    cdef int64_t i, cslot = -1
    cdef int32_t p, pk, c = -1
    cdef Port* pt
    for i in range(s.heap_n):
        s.heap[i].ts = key_rank(s, s.heap[i].ts)
    while True:
        c = cal_next_entry(s, &cslot, c)
        if c < 0:
            break
        s.cal.ev[c].ts = key_rank(s, s.cal.ev[c].ts)
        if s.cal.next[c] < 0:           # a bucket's last: its cached key too
            s.cal.ts[cslot] = s.cal.ev[c].ts
    for p in range(s.n_ports):
        if P.lp_of_port[p] != j:
            continue
        pt = &s.ports[p]
        pt.tx_ts = key_rank(s, pt.tx_ts)
        pt.wake_ts = key_rank(s, pt.wake_ts)
        pk = pt.wire_head
        while pk != NO_PKT:
            s.pkts[pk].arr_ts = key_rank(s, s.pkts[pk].arr_ts)
            pk = s.pkts[pk].next
    s.cur_ts = key_rank(s, s.cur_ts)
    s.cur_ref = key_rank(s, s.cur_ref)
    s.n_slot = 0
    s.slot0 = 0


cdef void rank_settle(Par* P, int32_t j) noexcept nogil:
    """KEY_RANK, after the round's ranks: LP j's completions and PFC records of the round
    take the rank of the event that made them; its slots are compacted when many."""
    cdef Lp* L = &P.lps[j]
    cdef Sim* s = L.s
    cdef int64_t k
    for k in range(L.done0, s.n_done):
        s.done_key[2 * k] = key_rank(s, s.done_key[2 * k])
    for k in range(L.pfc0, s.pfc_n):
        s.pfc_log[k].ts = key_rank(s, s.pfc_log[k].ts)
    L.done0 = s.n_done
    L.pfc0 = s.pfc_n
    if s.n_slot >= COMPACT_SLOTS and s.n_slot >= 4 * (pending_n(s) + s.wire_n + s.n_ports):
        rank_compact(P, j)


cdef void par_fresh_rank(Sim* m, Par* P) noexcept nogil:
    """KEY_RANK between runs (set_now): the clock's key after every event so far."""
    m.cur_ts = P.base
    m.cur_seq = 0
    m.cur_ref = P.base + 1
    m.kid = 0
    P.base += 2


cdef inline void _wait(Par* P, int32_t tid, int32_t site) noexcept nogil:
    """A round's barrier, the time this thread waits there counted (Par.wait_s)."""
    cdef double w = openmp.omp_get_wtime()
    wh_omp_barrier()
    P.wait_s[tid * WAIT_SITES + site] += openmp.omp_get_wtime() - w


cdef void par_rounds(Par* P, int64_t until, int32_t tid, int32_t nt) noexcept nogil:
    """One thread's part of the rounds (every thread of the team runs it; nt = 1: alone).
    Between barriers every thread takes the same decisions from what the last import
    phase wrote (heads, fails, loads)."""
    cdef int32_t n = P.n_lp, i, j, x, own
    cdef int64_t t0, end, c, r = 0
    cdef bint failed
    cdef bint rank = P.m.key_mode == KEY_RANK
    cdef double w0 = 0.0
    cdef Sim* s
    cdef int64_t width
    cdef int32_t* order = <int32_t*>malloc(n * sizeof(int32_t))
    cdef RankRun* scratch = <RankRun*>malloc(P.tree_k * sizeof(RankRun))       # rank_slice's
    cdef int32_t* tree = <int32_t*>malloc(P.tree_k * sizeof(int32_t))
    if order == NULL or scratch == NULL or tree == NULL:    # (only when no thread got them: each stops at once)
        P.fails[0] = 1
    for i in range(n):
        if order != NULL:
            order[i] = i
    while True:
        t0 = INT64_MAX
        failed = order == NULL or scratch == NULL or tree == NULL
        for i in range(n):
            if P.heads[i] < t0:
                t0 = P.heads[i]
            if P.fails[i]:
                failed = True
        if failed or t0 == INT64_MAX or t0 > until:
            break
        if P.round_len > until - t0:
            end = until
        else:
            end = t0 + P.round_len - 1          # every arrival sent in the round is due after it
        for i in range(1, n):                   # LPs by decreasing recent load (insertion sort: it changes little)
            x = order[i]
            j = i - 1
            while j >= 0 and P.lps[order[j]].load < P.lps[x].load:
                order[j + 1] = order[j]
                j -= 1
            order[j + 1] = x
        for own in range(1, -1, -1):            # its own LPs, then any left, the heaviest first
            for i in range(n):
                j = order[i]
                if (not own or j % nt == tid) and wh_claim(&P.claimed[j], r - 1, r):
                    lp_round(&P.lps[j], end, P.base)
        if tid == 0:
            P.rounds += 1
        _wait(P, tid, 0)
        if rank:
            if tid == 0:
                w0 = openmp.omp_get_wtime()
            if n > 1:                           # (the provisional values of a single LP are its ranks)
                width = (end - t0) // P.n_slices + 1
                while True:                     # the round's time slices ranked, one at a time
                    c = wh_ticket(&P.rtickets[r % 3])
                    if c >= P.n_slices:
                        break
                    rank_slice(P, c, INT64_MIN if c == 0 else t0 + c * width,
                               INT64_MAX if c == P.n_slices - 1 else t0 + (c + 1) * width, scratch, tree)
                _wait(P, tid, 1)
            if tid == 0:
                P.rtickets[(r + 1) % 3] = 0
                for i in range(n):
                    s = P.lps[i].s
                    P.base += s.n_slot - s.slot0
                for i in range(P.n_slices):
                    P.ties_across += P.slice_ties[i]
                    P.slice_ties[i] = 0
                if P.lps[0].s.defer_draws:
                    draws_resolve(P)
                P.merge_s += openmp.omp_get_wtime() - w0
            _wait(P, tid, 2)
        j = tid
        while j < n:
            lp_import(P, j)
            j += nt
        _wait(P, tid, 3)
        r += 1
    free(order)
    free(scratch)
    free(tree)


cdef inline bint _key_lt(int64_t t1, int64_t ts1, uint64_t q1, int64_t t2, int64_t ts2, uint64_t q2) noexcept nogil:
    return t1 < t2 or (t1 == t2 and (ts1 < ts2 or (ts1 == ts2 and q1 < q2)))


cdef int par_merge(Sim* m, Par* P) noexcept nogil:
    """Completions and PFC records of the LPs into the Kernel's lists, in the order of
    the tie keys of the events that made them (the order a sequential run under
    KEY_LOCAL makes them in).  Returns -1 if memory ran out."""
    cdef int32_t n = P.n_lp, i, best
    cdef int64_t* pos = <int64_t*>calloc(n, sizeof(int64_t))
    cdef Sim* s
    cdef Sim* b
    cdef int64_t total = 0, k
    cdef PfcRecord* rec
    cdef PfcRecord* r
    cdef PfcRecord* rb
    cdef int32_t fi, fb
    if pos == NULL:
        return -1
    while True:                                 # completions
        best = -1
        for i in range(n):
            s = P.lps[i].s
            if pos[i] < s.n_done:
                if best < 0:
                    best = i
                else:
                    b = P.lps[best].s
                    fi = s.done[pos[i]]
                    fb = b.done[pos[best]]
                    if _key_lt(s.flows[fi].finish, s.done_key[2 * pos[i]], <uint64_t>s.done_key[2 * pos[i] + 1],
                               b.flows[fb].finish, b.done_key[2 * pos[best]], <uint64_t>b.done_key[2 * pos[best] + 1]):
                        best = i
        if best < 0:
            break
        s = P.lps[best].s
        m.done[m.n_done] = s.done[pos[best]]
        m.n_done += 1
        pos[best] += 1
    for i in range(n):
        pos[i] = 0
        total += P.lps[i].s.pfc_n
    if total > 0 and m.pfc_n + total > m.pfc_cap:
        rec = <PfcRecord*>realloc(m.pfc_log, (m.pfc_n + total + 64) * sizeof(PfcRecord))
        if rec == NULL:
            free(pos)
            return -1
        m.pfc_log = rec
        m.pfc_cap = m.pfc_n + total + 64
    for k in range(total):                      # PFC records
        best = -1
        for i in range(n):
            s = P.lps[i].s
            if pos[i] < s.pfc_n:
                r = &s.pfc_log[pos[i]]
                if best < 0:
                    best = i
                else:
                    rb = &P.lps[best].s.pfc_log[pos[best]]
                    if _key_lt(r.t, r.ts, r.seq, rb.t, rb.ts, rb.seq):
                        best = i
        m.pfc_log[m.pfc_n] = P.lps[best].s.pfc_log[pos[best]]
        m.pfc_n += 1
        pos[best] += 1
    free(pos)
    return 0


cdef int32_t event_lp(Sim* m, Par* P, Event* e) noexcept nogil:
    """The LP of an event scheduled from Python (-1: none can take it)."""
    if e.kind == EV_TX_DONE or e.kind == EV_ARRIVE or e.kind == EV_NIC_WAKE:
        return P.lp_of_port[e.a]
    if e.kind == EV_FLOW_START or e.kind == EV_RTO or e.kind == EV_CC_TIMER:
        return P.lp_of_port[m.flows[e.a].src_port]
    return -1


cdef int par_run(Sim* m, Par* P, int64_t until) noexcept nogil:
    """Run the LPs in conservative rounds up to ``until``; RUN_IDLE, or RUN_LIMIT when
    memory ran out (the parallel driver takes no callbacks or user events)."""
    cdef int32_t i, j, n = P.n_lp, nt = P.threads
    cdef int64_t t0, end, k
    cdef Event e
    cdef Sim* s
    cdef int64_t best_t
    cdef int64_t best_ts
    cdef uint64_t best_q
    P.m = m
    for i in range(n):
        if lp_enter(m, P, &P.lps[i]) != 0:
            m.fail = 1
            return RUN_LIMIT
    while pending_n(m) > 0:                     # what Python scheduled goes to its LP
        e = heap_pop(m)
        i = event_lp(m, P, &e)
        if i < 0 or heap_push_seq(P.lps[i].s, e.t, e.ts, e.seq, e.kind, e.a, e.b) != 0:
            m.fail = 1
            return RUN_LIMIT
    for j in range(n):
        P.heads[j] = _lp_head(P.lps[j].s)
        P.fails[j] = 0
    for j in range(n):
        P.claimed[j] = -1
    P.rtickets[0] = 0
    P.rtickets[1] = 0
    P.rtickets[2] = 0
    if nt > 1:
        with parallel(num_threads=nt):
            par_rounds(P, until, openmp.omp_get_thread_num(), openmp.omp_get_num_threads())
    else:
        par_rounds(P, until, 0, 1)
    for i in range(n):
        for j in range(n):                      # the last round's, imported
            P.lps[i].sent += P.lps[i].n_out[j]
            P.lps[i].n_out[j] = 0
        P.xfers += P.lps[i].sent
        P.lps[i].sent_total += P.lps[i].sent
        P.lps[i].sent = 0
        if P.lps[i].s.fail:
            m.fail = P.lps[i].s.fail
        if m.key_mode == KEY_RANK:      # every key the LP holds becomes a rank (the Kernel compares them)
            rank_compact(P, i)
    # the Kernel's clock: the last event of any LP, then what tx_settle adds over every port
    best_t = m.now
    best_ts = m.cur_ts
    best_q = m.cur_seq
    m.pkts_live = 0
    k = 0
    for i in range(n):
        s = P.lps[i].s
        if _key_lt(best_t, best_ts, best_q, s.now, s.cur_ts, s.cur_seq):
            best_t = s.now
            best_ts = s.cur_ts
            best_q = s.cur_seq
        lp_exit(m, &P.lps[i])
        m.pkts_live += s.pkts_live
        k += s.pkts_peak
    if k > m.pkts_peak:
        m.pkts_peak = k                         # (the sum of the LPs' peaks: a bound on the run's)
    m.now = best_t
    m.cur_ts = best_ts
    m.cur_seq = best_q
    if m.key_mode == KEY_RANK:          # what Python schedules next comes after everything so far
        m.cur_ref = P.base
        m.kid = 0
        P.base += 1
    if par_merge(m, P) != 0:
        m.fail = 1
    if m.fail:
        return RUN_LIMIT
    tx_settle(m, until)
    return RUN_IDLE


cdef int64_t par_pending(Sim* m, Par* P, int64_t* first) noexcept nogil:
    """Events the LPs hold (their calendars, heaps and wires), and the earliest (first[0],
    if earlier)."""
    cdef int32_t i
    cdef int64_t n = 0
    cdef Sim* s
    cdef Event* e
    for i in range(P.n_lp):
        s = P.lps[i].s
        n += pending_n(s) + s.wire_n
        e = pending_first(s)
        if e != NULL and (first[0] < 0 or e.t < first[0]):
            first[0] = e.t
    return n


cdef void par_free(Par* P) noexcept nogil:
    cdef int32_t i, j
    cdef Lp* L
    if P == NULL:
        return
    if P.lps != NULL:
        for i in range(P.n_lp):
            L = &P.lps[i]
            if L.s != NULL:
                free(L.s.heap); cal_release(L.s); free(L.s.pkts); free(L.s.ints); free(L.s.done); free(L.s.done_key)
                free(L.s.pfc_log); free(L.s.rank_val); free(L.s.log_t); free(L.s.log_pv); free(L.s.log_seq)
                free(L.s.draws)
                free(L.s)
            if L.out != NULL:
                for j in range(P.n_lp):
                    free(L.out[j])
            free(L.out); free(L.n_out); free(L.cap_out)
    free(P.slice_ties)
    free(P.wait_s)
    free(P.lps); free(P.lp_of_port); free(P.port_cut); free(P.order); free(P.heads); free(P.fails); free(P.claimed)
    free(P)


cdef Par* par_new(Sim* m, const int32_t[::1] lp_of_node, int32_t n_lp, int32_t threads, bint calendar) except NULL:
    """The driver for LPs given by node (each 0..n_lp-1); the lookahead is the smallest
    delay of a link between two of them (which must be positive).  ``calendar``: each LP
    has a calendar in front of its heap (the Kernel's own is off from now on).  Under KEY_RANK (the
    Kernel's key mode) without per-port streams, the draws of the one stream are deferred
    and a round lasts at most the smallest delay of a switch-to-host link (positive)."""
    cdef Par* P = <Par*>calloc(1, sizeof(Par))
    cdef int32_t i, a, b
    cdef Lp* L
    cdef bint defer = m.key_mode == KEY_RANK and m.port_rng == NULL and (m.p.ecn or m.p.ns3_rng)
    cdef int64_t horizon = INT64_MAX
    if P == NULL:
        raise MemoryError()
    P.n_lp = n_lp
    P.threads = threads if threads < n_lp else n_lp     # (a thread more than LPs would only wait)
    P.lookahead = INT64_MAX
    P.lps = <Lp*>calloc(n_lp, sizeof(Lp))
    P.lp_of_port = <int32_t*>calloc(m.n_ports if m.n_ports > 0 else 1, sizeof(int32_t))
    P.port_cut = <uint8_t*>calloc(m.n_ports if m.n_ports > 0 else 1, sizeof(uint8_t))
    P.order = <int32_t*>calloc(n_lp, sizeof(int32_t))
    P.heads = <int64_t*>calloc(n_lp, sizeof(int64_t))
    P.claimed = <int64_t*>calloc(n_lp, sizeof(int64_t))
    P.fails = <uint8_t*>calloc(n_lp, sizeof(uint8_t))
    P.base = 1                          # (rank 0: Python's pushes before the first run)
    P.calendar = calendar
    P.m = m
    P.n_slices = 1 if P.threads <= 1 else SLICES_PER_THREAD * P.threads
    P.tree_k = 1
    while P.tree_k < n_lp:
        P.tree_k *= 2
    P.slice_ties = <int64_t*>calloc(P.n_slices, sizeof(int64_t))
    P.wait_s = <double*>calloc(P.threads * WAIT_SITES, sizeof(double))
    if P.slice_ties == NULL or P.wait_s == NULL or P.heads == NULL or P.claimed == NULL or P.fails == NULL or P.lps == NULL or P.lp_of_port == NULL or P.port_cut == NULL or P.order == NULL:
        par_free(P)
        raise MemoryError()
    for i in range(m.n_ports):
        a = lp_of_node[m.ports[i].node]
        b = lp_of_node[m.ports[m.ports[i].peer].node]
        P.lp_of_port[i] = a
        if a != b:
            P.port_cut[i] = 1
            if m.ports[i].delay_ps <= 0:
                par_free(P)
                raise ValueError("a link between two logical processes has no delay (port %d): no lookahead" % i)
            if m.ports[i].delay_ps < P.lookahead:
                P.lookahead = m.ports[i].delay_ps
        if defer and m.p.ecn and m.is_switch[m.ports[i].node] and not m.is_switch[m.ports[m.ports[i].peer].node]:
            if m.ports[i].delay_ps <= 0:
                par_free(P)
                raise ValueError("ECN marks drawn in the sequential order need a delay on every link from a switch "
                                 "to a host (port %d has none): give ecn_rng='port'" % i)
            if m.ports[i].delay_ps < horizon:
                horizon = m.ports[i].delay_ps
    P.round_len = P.lookahead if P.lookahead < horizon else horizon
    for i in range(n_lp):
        P.order[i] = i
        L = &P.lps[i]
        L.id = i
        L.lp_of_port = P.lp_of_port
        L.n_lp = n_lp
        L.s = <Sim*>calloc_lines(1, sizeof(Sim))          # (each on lines of its own: two threads write
        L.out = <Xfer**>calloc_lines(n_lp, sizeof(Xfer*)) # two LPs' on every event or crossing packet)
        L.n_out = <int64_t*>calloc_lines(n_lp, sizeof(int64_t))
        L.cap_out = <int64_t*>calloc_lines(n_lp, sizeof(int64_t))
        if L.s == NULL or L.out == NULL or L.n_out == NULL or L.cap_out == NULL:
            par_free(P)
            raise MemoryError()
        L.s.free_head = NO_PKT
        L.s.budget = -1
        L.s.defer_draws = defer
        if calendar and cal_setup(L.s, CAL_BUCKETS) != 0:
            par_free(P)
            raise MemoryError()
    return P
