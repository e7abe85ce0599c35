# Steady skips (included by accel.pyx).  Contract: goodput measurement over a flow's
# window (_measure_from, _goodput, _steady_goodput), the horizon of a partition at given
# goodputs (_horizon), the steady test of a whole partition (skip_try), which begins a
# fast-forward (skip_begin, over the shared step of accel_skip.pxi) and counts every
# refusal by its reason (Accel.rejects).  A skip never moves a flow faster than its
# measured goodput (a cycle member, steady_cycle: than (1 + theta) times its own last cycle's).


cdef int64_t _measure_from(Sim* s, int32_t fi, int64_t* ta, int64_t* ua, int64_t* ia) noexcept nogil:
    """Where the flow's goodput is measured from: its oldest sample, or the
    moment it last started sending, or the first sample since its epoch (w.ep_t:
    a change on one of its ports), whichever is latest.  Sets (time, snd_una, idle
    total) there and returns the number of the first sample after it (w.n if
    there is none)."""
    cdef Accel* a = &s.acc
    cdef FlowWin* w = &a.win[fi]
    cdef int64_t L = a.l, M = a.lmask, k0 = w.n - L if w.n > L else 0, lo, hi, mid, ep
    ta[0] = w.t[k0 & M]
    ua[0] = w.una[k0 & M]
    ia[0] = w.idl[k0 & M]
    if w.n == 0 or w.act_t > ta[0]:
        k0 = w.act_n
        ta[0] = w.act_t
        ua[0] = w.act_una
        ia[0] = w.act_idl
    ep = w.ep_t
    if ep > ta[0]:
        lo = k0                     # first sample at or after the change (times are monotonic)
        hi = w.n
        while lo < hi:
            mid = (lo + hi) // 2
            if w.t[mid & M] >= ep:
                hi = mid
            else:
                lo = mid + 1
        k0 = lo
        if k0 < w.n:
            ta[0] = w.t[k0 & M]
            ua[0] = w.una[k0 & M]
            ia[0] = w.idl[k0 & M]
        else:
            ta[0] = s.now
            ua[0] = s.flows[fi].snd_una
            ia[0] = w.idle_total
    return k0


cdef double _goodput(Sim* s, int32_t fi) noexcept nogil:
    """Acknowledged bytes per ps over the window, or since the flow last started
    sending, or since its epoch (a change on one of its ports)."""
    cdef FlowWin* w = &s.acc.win[fi]
    cdef int64_t ta, ua, ia
    _measure_from(s, fi, &ta, &ua, &ia)
    return _rate_between(ta, ua, ia, s.now, s.flows[fi].snd_una, w.idle_total)


cdef double _steady_goodput(Sim* s, int32_t fi) noexcept nogil:
    """The flow's goodput (see _goodput) if it is measured over at least a
    quarter of a window and the goodputs of the two halves agree within theta
    of it (a flow whose rate is steady but whose throughput still moves, e.g.
    one that shares its NIC with a newcomer or is held back by a window while
    queues fill, is not steady); else 0."""
    cdef Accel* a = &s.acc
    cdef FlowWin* w = &a.win[fi]
    cdef int64_t L = a.l, k0, km, m, ta, ua, ia
    cdef double g, g1, g2
    k0 = _measure_from(s, fi, &ta, &ua, &ia)
    if w.n - k0 < L // 4 or w.n - k0 < 2:
        a.gp_why = 10
        return 0.0                  # too few samples to tell
    km = (k0 + w.n) // 2
    m = km & a.lmask
    g = _rate_between(ta, ua, ia, s.now, s.flows[fi].snd_una, w.idle_total)
    g1 = _rate_between(ta, ua, ia, w.t[m], w.una[m], w.idl[m])
    g2 = _rate_between(w.t[m], w.una[m], w.idl[m], s.now, s.flows[fi].snd_una, w.idle_total)
    if g <= 0 or g1 <= 0 or g2 <= 0 or fabs(g1 - g2) > a.theta * g:
        a.gp_why = 2
        return 0.0
    return g


cdef bint _paused(Sim* s, int32_t fi) noexcept nogil:
    """A port of the flow's paths is paused by PFC or has sent a pause."""
    cdef int32_t* ports
    cdef int32_t n, j, q
    _flow_ports(s, fi, &ports, &n)
    for j in range(n):
        for q in range(NQ):
            if s.ports[ports[j]].paused[q] or s.mmu[ports[j]].pause_sent[q]:
                return True
    return False


cdef bint _data_alone(Sim* s, int32_t P, int32_t fi) noexcept nogil:
    """No other flow of P sends data through a port of fi's data path (its ACK path and
    the ACKs of others may share its ports: they carry no data another flow could
    take the capacity of when fi idles, nor a share of a bottleneck still being split).
    Such a flow may be an on/off member of a skip (accel_onoff.pxi) and may be called
    steady by its quarter goodputs (steady_goodput_alone, accel_window.pxi)."""
    cdef Accel* a = &s.acc
    cdef Flow* f = &s.flows[fi]
    cdef Flow* g
    cdef int32_t j, k, q, m, port
    for j in range(f.path_len):
        port = s.paths[f.path_off + j]
        for k in range(a.port_nf[port]):
            q = a.port_flows[port][k]
            if q == fi or a.part_of[q] != P:
                continue
            g = &s.flows[q]
            for m in range(g.path_len):
                if s.paths[g.path_off + m] == port:
                    return False
    return True


cdef inline bint _idle_conn(Flow* f) noexcept nogil:
    """A connection with everything acknowledged: nothing in flight, it just waits."""
    return f.persistent and f.snd_una >= f.size


cdef double _horizon(Sim* s, int32_t P, bint onoff=False) noexcept nogil:
    """With goodputs s.acc.gp (partition order; idle connections get 0): the
    time until the first sending flow of P runs short of posted data, or -1 if
    a port is paused by PFC, a sending flow has no goodput or no room.  With
    ``onoff``, an on/off member (s.acc.oo, accel_onoff.pxi) bounds it not when it
    runs short but when it has stayed out of data for as long as it was idle in
    its last cycle (s.acc.lim)."""
    cdef Accel* a = &s.acc
    cdef int32_t i, fi
    cdef Flow* f
    cdef int64_t room, need
    cdef double best = 1e300, t
    for i in range(a.part_nf[P]):
        fi = a.part_flows[P][i]
        f = &s.flows[fi]
        if _paused(s, fi):
            _reject(a, 0, P)
            return -1
        if _idle_conn(f):
            a.gp[i] = 0.0
            if onoff:
                a.oo[i] = 0
            continue
        if a.gp[i] <= 0:
            _reject(a, 12, P)
            return -1
        if onoff and a.oo[i]:
            need = (f.size - f.snd_una + s.p.mtu - 1) // s.p.mtu * s.p.mtu
            t = <double>need / a.gp[i] + 1 + <double>a.lim[i]
        else:
            # nothing may be sent beyond what was posted (message ends inside the skip
            # are reported at their virtual times: note_plan)
            room = _room(s, f)
            if room <= 0:
                _reject(a, 3, P)
                return -1
            t = <double>room / a.gp[i]
        if t < best:
            best = t
    return best


cdef inline void _reject(Accel* a, int k, int32_t P) noexcept nogil:
    """Count a partition not fast-forwarded, by the test that blocked it (REJECT_NAMES)."""
    a.rejects[k] += 1
    a.rej_flows += a.part_nf[P]
    a.part_why[P] = (<int64_t>a.part_ver[P] << 8) | k


cdef void _reject_flow(Sim* s, int k, int32_t P) noexcept nogil:
    """A partition refused by one of its flows' own tests (reason k): besides
    the count, how many of its sending flows had a steady rate window, and
    whether all but one did (Accel.rej_tested, rej_steady, rej_one_short: a
    large partition whose flows settle at different moments never all agree)."""
    cdef Accel* a = &s.acc
    cdef int32_t i, fi, n = 0, st = 0
    cdef FlowWin* w
    _reject(a, k, P)
    for i in range(a.part_nf[P]):
        fi = a.part_flows[P][i]
        if _idle_conn(&s.flows[fi]):
            continue
        w = &a.win[fi]
        n += 1
        if w.val != NULL and w.n >= a.l and w.steady:
            st += 1
    a.rej_tested += n
    a.rej_steady += st
    if n > 1 and st >= n - 1:
        a.rej_one_short += 1


cdef void skip_try(Sim* s, int32_t P) noexcept nogil:
    """Fast-forward partition P if it is steady: every sending flow's window is,
    is not ramping and has a steady goodput (into s.acc.gp, partition order), or
    (steady_cycle) the flow is steady by its own cycles and joins as an on/off member
    (_cycle_member), and the horizon allows it (_horizon)."""
    cdef Accel* a = &s.acc
    cdef int32_t i, fi, nf, why, ncm = 0
    cdef Flow* f
    cdef FlowWin* w
    cdef int64_t L = a.l
    cdef double best
    if P < 0 or a.part_skip[P] >= 0:
        return
    if a.part_dirty[P]:
        _reject(a, 5, P)            # (stamped with the version the split then leaves behind: untried)
        part_split(s, P)
        return                      # partitions changed: the next sample re-checks
    nf = a.part_nf[P]
    if nf == 0 or _gp_reserve(s, nf) != 0:
        return
    for i in range(nf):
        fi = a.part_flows[P][i]
        f = &s.flows[fi]
        w = &a.win[fi]
        a.gp[i] = 0.0
        if a.cycle:
            a.cm[i] = 0
        if _idle_conn(f):
            continue
        why = -1
        if w.val == NULL or w.n < L or not w.steady or w.n - w.act_n < w.need:
            why = 8 if w.val == NULL else (7 if w.n < L else (1 if not w.steady else 9))
        elif (w.last_dec <= w.n - L and w.val[(w.n - 1) & a.lmask] > w.val[(w.n - L) & a.lmask]
                and s.acc.k.cc[f.cc].send_rate(s, fi) < f.max_rate):
            # a rate that only rose over the whole window and is below line rate is
            # ramping up (e.g. DCQCN's timer-driven recovery, steps far below theta):
            # a skip would freeze it half way
            _reject_flow(s, 6, P)
            return
        else:
            a.gp[i] = _steady_goodput(s, fi)
            if a.gp[i] <= 0:
                why = a.gp_why
        if why >= 0:
            if _cycle_member(s, P, fi, &a.gp[i]):
                a.cm[i] = 1         # an on/off member by its own steady cycles (steady_cycle)
                ncm += 1
                continue
            _reject_flow(s, why, P)
            return
    if a.onoff:                     # connections that may idle and resume inside the skip
        _onoff_mark(s, P)
        if ncm > 0:
            for i in range(nf):
                if a.cm[i] and not a.oo[i]:
                    _reject(a, 14, P)   # a cycle member is carried only as an on/off member (cycle_unmarked)
                    return
    _lockstep_goodputs(s, P)
    best = _horizon(s, P, a.onoff)
    if best < 0:
        return
    if _same_moment_pending(s, P):
        _reject(a, 13, P)
        return                      # the moment's other events first: a later sample re-checks
    if a.part_watch[P] and ncm == 0:
        # the partition has converged: Python stores the memo entry (not with cycle members:
        # their goodputs are paces of a run under way and their states mid-ramp)
        a.part_watch[P] = 0
        memo_note(s, 1, P)
    if skip_begin(s, P, best, a.onoff):
        a.onoff_cycle += ncm


cdef inline bint _lockstep(Sim* s, int32_t fi, int32_t fj) noexcept nogil:
    """Flows fi and fj move in lockstep: the same bytes acknowledged and sent now, the same
    at their windows' oldest samples, and the same latest rate sample (a symmetric fabric's
    twins inside one partition, e.g. a ring's connections that cross the spines)."""
    cdef FlowWin* wi = &s.acc.win[fi]
    cdef FlowWin* wj = &s.acc.win[fj]
    cdef int64_t L = s.acc.l, M = s.acc.lmask
    return (s.flows[fi].snd_una == s.flows[fj].snd_una and s.flows[fi].snd_nxt == s.flows[fj].snd_nxt
            and wi.n >= L and wj.n >= L and wi.una[(wi.n - L) & M] == wj.una[(wj.n - L) & M]
            and wi.val[(wi.n - 1) & M] == wj.val[(wj.n - 1) & M])


cdef inline bint _one_group(Sim* s, int32_t P, int32_t i, int32_t j) noexcept nogil:
    """Flows i and j of P (partition order) skip at one goodput: both sending, the same
    on/off role, in lockstep."""
    cdef Accel* a = &s.acc
    return (a.gp[i] > 0 and a.gp[j] > 0 and (not a.onoff or a.oo[i] == a.oo[j])
            and _lockstep(s, a.part_flows[P][i], a.part_flows[P][j]))


cdef void _lockstep_goodputs(Sim* s, int32_t P) noexcept nogil:
    """Flows of P in lockstep (_lockstep) move at one goodput in the skip, the lowest of
    theirs (and on/off members at the lowest cycle goodput): a full run keeps them in
    lockstep, while goodputs measured over windows that begin at different moments (their
    ports' last changes differ) differ by a few parts in 10^4, which over a skip of
    milliseconds puts them packets apart; out of lockstep they do not fall back into it
    (measured: gpt13b 64 GPUs on 2:1 rail segments, HPCC: the four spine-crossing
    connections of a ring 17 KB apart after a 5 ms skip, then 75 instead of 80 Gb/s for the
    rest of the iteration, messages up to 9% late)."""
    cdef Accel* a = &s.acc
    cdef int32_t i, j, nf = a.part_nf[P]
    cdef double g, c
    for i in range(nf):
        if a.gp[i] <= 0:            # (idle connections too: skip_try gave them none)
            continue
        g = a.gp[i]
        c = a.cg[i] if a.onoff and a.oo[i] else 0.0
        for j in range(i + 1, nf):      # the lowest of the group
            if _one_group(s, P, i, j):
                g = a.gp[j] if a.gp[j] < g else g
                c = a.cg[j] if c > 0 and a.cg[j] < c else c
        for j in range(i, nf):          # then everyone in it (a later member finds the same)
            if j == i or _one_group(s, P, i, j):
                a.gp[j] = g
                if c > 0:
                    a.cg[j] = c


cdef bint _same_moment_pending(Sim* s, int32_t P) noexcept nogil:
    """An ACK (or NACK) of one of P's flows still reaches its sender at this very
    moment (in the heap or the calendar): a skip begun now would measure that flow
    one sample short of its twins, e.g. one of several flows that run in lockstep
    measured after its ACK of this picosecond and the others before theirs, so their
    goodputs (and the whole packets each moves in the skip) differ and the lockstep
    a full run keeps is broken (measured: gpt13b 64 GPUs in 2:1 rail segments, HPCC,
    four spine flows settling 5% below the full run's rate after one such skip).
    Other events of the moment (a transmission end, a packet at a switch) change no
    flow's measurement."""
    return _due_now(s, P, True)


cdef bint _moment_open(Sim* s, int32_t P) noexcept nogil:
    """Any event of partition P (_owned: a transmission end, a packet, a timer) is
    still due at this very moment, in the heap or the calendar."""
    return _due_now(s, P, False)


cdef bint _due_now(Sim* s, int32_t P, bint acks_only) noexcept nogil:
    """An event of P due at this very moment is still pending: with ``acks_only``, an
    ACK or NACK of one of P's flows reaching its sender; else any event P owns.  Only
    the events due now are looked at: the heap's top subtree of them (a child is never
    earlier than its parent) and the calendar's bucket of this moment."""
    cdef int32_t c = cal_bucket(s, s.now)
    while c >= 0:
        if s.cal.ev[c].t == s.now and _due_event(s, &s.cal.ev[c], P, acks_only):
            return True
        c = s.cal.next[c]
    return _heap_due(s, 0, P, acks_only)


cdef bint _heap_due(Sim* s, int64_t i, int32_t P, bint acks_only) noexcept nogil:
    """_due_now over the heap's subtree at i, pruned where an event is later than now."""
    if i >= s.heap_n or s.heap[i].t != s.now:
        return False
    return (_due_event(s, &s.heap[i], P, acks_only) or _heap_due(s, 2 * i + 1, P, acks_only)
            or _heap_due(s, 2 * i + 2, P, acks_only))


cdef inline bint _due_event(Sim* s, Event* e, int32_t P, bint acks_only) noexcept nogil:
    cdef Packet* pk
    cdef int32_t fl
    if not acks_only:
        return _owned(s, e, P)
    if e.kind != EV_ARRIVE:
        return False
    pk = &s.pkts[e.b]
    fl = pk.flow
    return ((pk.kind == PK_ACK or pk.kind == PK_NACK) and fl >= 0 and s.acc.active[fl]
            and s.acc.part_of[fl] == P and e.a == s.paths[s.flows[fl].path_off])


cdef bint skip_begin(Sim* s, int32_t P, double best, bint onoff=False) noexcept nogil:
    """Fast-forward P with its flows at goodputs s.acc.gp (partition order) until
    ``best`` ps from now (the first flow to run short of posted data) or a known
    flow start touching its ports.  False if that is too close.  With ``onoff``,
    the flows marked in s.acc.oo are on/off members (accel_onoff.pxi)."""
    cdef Accel* a = &s.acc
    cdef int32_t i, j, n, nf = a.part_nf[P], slot
    cdef int32_t* ports
    cdef int64_t t_end = s.now + <int64_t>best, t_limit, k, cslot = -1
    cdef int32_t c = -1
    cdef Skip* sk
    cdef Event* e
    for k in range(s.heap_n + s.cal.n):     # flow starts coming, in the heap or the calendar (heap.pxd)
        if k < s.heap_n:
            e = &s.heap[k]
        else:
            c = cal_next_entry(s, &cslot, c)
            e = &s.cal.ev[c]
        if e.kind == EV_FLOW_START and e.t < t_end:
            _flow_ports(s, e.a, &ports, &n)
            for j in range(n):
                if a.port_part[ports[j]] == P:
                    t_end = e.t
                    break
    if t_end - s.now < a.min_skip:
        _reject(a, 4 if t_end == s.now + <int64_t>best else 11, P)
        return False
    t_limit = t_end if t_end < s.now + <int64_t>best else INT64_MAX_ACC
    sk = _skip_alloc(s, nf, False, &slot)
    if sk == NULL:
        return False
    for i in range(nf):
        sk.flows[i] = a.part_flows[P][i]
        sk.goodput[i] = a.gp[i]
    if onoff:
        if _oo_reserve(s, sk, nf) != 0:
            return False
        for i in range(nf):
            sk.onoff[i] = a.oo[i]
            sk.run_t[i] = s.now
            sk.run_b[i] = 0
            sk.run_r[i] = 0
            sk.dry_lim[i] = a.lim[i] if a.oo[i] else 0
            sk.cyc_g[i] = a.cg[i] if a.oo[i] else sk.goodput[i]
            sk.has_onoff |= a.oo[i]
            a.onoff_flows += a.oo[i]
    sk.follow = 0
    a.skip_flows += nf
    return _skip_start(s, slot, P, t_end, t_limit) == 0


cdef bint increase_in_skip(Sim* s, int32_t fi) noexcept nogil:
    """DCQCN's rate-increase timer (rp_timer, 1.5 ms by default, re-armed by
    every rate cut) of a flow whose partition is fast-forwarding fires: the
    skip stands for the steady state, so if the flow's window shows cuts the
    timer would have been re-armed before firing (re-arm it, True); if firing
    would raise the rate, it is a known interrupt: the skip ends here and the
    timer fires as in a full run (False); at line rate it fires without
    changing the rate (False)."""
    cdef Skip* sk = NULL
    cdef FlowWin* w = &s.acc.win[fi]
    cdef Flow* f = &s.flows[fi]
    if skip_find(s, fi, &sk) < 0:
        return False
    if w.val != NULL and w.n >= s.acc.l and w.last_dec > w.n - s.acc.l:
        return True
    if f.rate < f.max_rate:
        skip_end(s, s.acc.part_skip[s.acc.part_of[fi]], True)
        s.acc.backs_by[2] += 1      # counted with the skip-backs' causes (a planned end)
    return False
