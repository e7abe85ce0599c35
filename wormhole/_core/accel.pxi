# The accelerator (the Wormhole method), included by kernel.pyx.
#
# Partitions: connected components of the bipartite graph of active flows and
# the directed ports they use (data and ACK paths), kept incrementally: a flow
# that becomes active merges the partitions it touches; a flow that goes idle
# or finishes triggers a split check of its own partition only.
#
# Steady test: per flow, a window of the last l rate samples (one per ACK) with
# monotonic deques: steady when (max - min) / mean < theta.  A partition is
# steady when all its flows are, and each flow's goodput, measured since a
# flow sharing one of its ports (or itself) last joined, left, went idle or
# resumed (over at least l/4 samples), agrees between the two halves of that
# span within theta.
#
# Fast-forward: a steady partition jumps to its next interrupt (the earliest
# time one of its flows would reach the end of its current message at its
# steady goodput, less a margin, or a known flow start touching its ports).
# Its pending events leave the heap; at the end (planned, or earlier when an
# unplanned event touches it: skip-back) they return shifted by the skipped
# time, every flow has advanced by its goodput times that time at sender,
# receiver and in flight, queues keep their occupancy, port byte counters
# (INT) advance by what the ports would have sent.
#
# Memo skips (memo_start) replay a stored convergence, then fast-forward at
# the stored goodputs (memo_follow).  Mirrors (mirror_start) hold a partition
# that formed together with an identical twin and advance it as the twin
# advances, until the twin converges (mirror_finish) or changes (mirrors_end).

from libc.math cimport fabs
from libc.stdlib cimport qsort

cdef int _ev_cmp(const void* a, const void* b) noexcept nogil:
    cdef Event* x = <Event*>a
    cdef Event* y = <Event*>b
    if x.t != y.t:
        return -1 if x.t < y.t else 1
    if x.seq != y.seq:
        return -1 if x.seq < y.seq else 1
    return 0


cdef void heap_rebuild(Sim* s) noexcept nogil:
    """Restore the heap property of s.heap[0:heap_n] (bottom-up)."""
    cdef int64_t n = s.heap_n, i, j, child
    cdef Event e
    cdef Event* h = s.heap
    i = n // 2 - 1
    while i >= 0:
        e = h[i]
        j = i
        while True:
            child = 2 * j + 1
            if child >= n:
                break
            if child + 1 < n and (h[child + 1].t < h[child].t or
                                  (h[child + 1].t == h[child].t and h[child + 1].seq < h[child].seq)):
                child += 1
            if h[child].t < e.t or (h[child].t == e.t and h[child].seq < e.seq):
                h[j] = h[child]
                j = child
            else:
                break
        h[j] = e
        i -= 1


# ---------------------------------------------------------------- windows

cdef int win_alloc(Sim* s, int32_t fi) noexcept nogil:
    cdef FlowWin* w = &s.acc.win[fi]
    cdef int64_t L = s.acc.l
    cdef int64_t* buf
    if w.val == NULL:
        if s.acc.n_pool > 0:
            s.acc.n_pool -= 1
            buf = s.acc.pool[s.acc.n_pool]
        else:
            buf = <int64_t*>malloc(6 * L * sizeof(int64_t))
            if buf == NULL:
                s.fail = 1
                return -1
        w.val = buf
        w.t = buf + L
        w.una = buf + 2 * L
        w.qmax = buf + 3 * L
        w.qmin = buf + 4 * L
        w.idl = buf + 5 * L
    w.n = 0
    w.sum = 0
    w.act_t = s.now
    w.act_una = s.flows[fi].snd_una
    w.act_n = 0
    w.act_idl = 0
    w.need = 0
    w.last_dec = -1
    w.ep_t = s.now
    w.idle_total = 0
    w.idle_since = -1
    w.maxh = 0
    w.maxt = 0
    w.minh = 0
    w.mint = 0
    w.steady = 0
    w.gp_steady = 0
    return 0


cdef void win_free(Sim* s, int32_t fi) noexcept nogil:
    """Return the window's buffer to the pool (one allocation holds its 5 rings)."""
    cdef FlowWin* w = &s.acc.win[fi]
    cdef Accel* a = &s.acc
    cdef int64_t** np_
    if w.val != NULL:
        if a.n_pool == a.pool_cap:
            np_ = <int64_t**>realloc(a.pool, (a.pool_cap * 2 + 16) * sizeof(int64_t*))
            if np_ == NULL:
                free(w.val)
            else:
                a.pool = np_
                a.pool_cap = a.pool_cap * 2 + 16
        if a.n_pool < a.pool_cap:
            a.pool[a.n_pool] = w.val
            a.n_pool += 1
    w.val = NULL
    w.t = NULL
    w.una = NULL
    w.qmax = NULL
    w.qmin = NULL
    w.n = 0
    w.steady = 0


cdef void win_push(Sim* s, int32_t fi, int64_t rate) noexcept nogil:
    """One rate sample; O(1).  May start a fast-forward of the flow's partition."""
    cdef Accel* a = &s.acc
    cdef FlowWin* w = &a.win[fi]
    cdef int64_t L = a.l, k = w.n, pos = k % L, mx, mn
    cdef bint steady, flip = False
    if w.val == NULL:
        return
    if k >= L:
        w.sum -= w.val[pos]
        if w.maxt > w.maxh and w.qmax[w.maxh % L] <= k - L:
            w.maxh += 1
        if w.mint > w.minh and w.qmin[w.minh % L] <= k - L:
            w.minh += 1
    if k > 0 and rate < w.val[(k - 1) % L]:
        w.last_dec = k
    w.val[pos] = rate
    w.t[pos] = s.now
    w.una[pos] = s.flows[fi].snd_una
    w.idl[pos] = w.idle_total
    w.sum += rate
    while w.maxt > w.maxh and w.val[w.qmax[(w.maxt - 1) % L] % L] <= rate:
        w.maxt -= 1
    w.qmax[w.maxt % L] = k
    w.maxt += 1
    while w.mint > w.minh and w.val[w.qmin[(w.mint - 1) % L] % L] >= rate:
        w.mint -= 1
    w.qmin[w.mint % L] = k
    w.mint += 1
    w.n = k + 1
    if w.n < L:
        return
    mx = w.val[w.qmax[w.maxh % L] % L]
    mn = w.val[w.qmin[w.minh % L] % L]
    steady = <double>(mx - mn) < a.theta * (<double>w.sum / <double>L)
    if not steady and a.quarters:
        if w.n % a.check_every == 0:
            w.gp_steady = _quarters_steady(s, fi)
        steady = w.gp_steady
    else:
        w.gp_steady = 0
    if steady and not w.steady:
        a.steady_periods += 1
        flip = True
    w.steady = steady
    if steady and (flip or w.n % a.check_every == 0):
        skip_try(s, a.part_of[fi])


cdef bint _quarters_steady(Sim* s, int32_t fi) noexcept nogil:
    """The window's goodput is steady: the acknowledged bytes per busy ps of each
    quarter of the window (by sample) agree within theta of their mean.  Under
    contention, rates oscillate around a share (HPCC's and DCQCN's sawtooth,
    TIMELY's gradient steps) by more than theta between samples while the
    throughput over each quarter, many periods long, stays put; the skip then
    moves the flow at its measured goodput (_steady_goodput), never faster."""
    cdef FlowWin* w = &s.acc.win[fi]
    cdef int64_t L = s.acc.l, q, a0, b0
    cdef double g, prev = 0.0, lo = 1e300, hi = 0.0, tot = 0.0, slope = 0.0
    cdef int up = 0, down = 0
    if L < 8 or w.n < L:
        return False
    # each quarter must hold at least two periods of the CC's slowest control
    # loop (gp_span is eight), or its goodput reflects the phase of the cycle it
    # caught (DCQCN's rate-increase timer outlasts a window: measured 7% too fast on a 2-flow bottleneck)
    if w.t[(w.n - 1) % L] - w.t[w.n % L] < s.acc.gp_span:
        return False
    for q in range(4):
        a0 = (w.n - L + q * L // 4) % L
        b0 = (w.n - L + (q + 1) * L // 4) % L if q < 3 else (w.n - 1) % L
        g = _rate_between(w.t[a0], w.una[a0], w.idl[a0], w.t[b0], w.una[b0], w.idl[b0])
        if g <= 0:
            return False
        if q > 0:
            up += g > prev
            down += g < prev
        prev = g
        slope += (2 * q - 3) * g            # least-squares slope over q = 0..3, times 10 per quarter
        lo = g if g < lo else lo
        hi = g if g > hi else hi
        tot += g
    # quarters that only rise or only fall are a convergence still under way
    # (a drift within theta), not an oscillation around a share
    # nor a drift slower than that: the goodput's least-squares trend over the
    # window, carried over one more window, stays within a quarter of theta
    # (HPCC's slow convergence to fairness between flows sharing a bottleneck
    # moves each share by less than theta per window, yet a skip of many windows
    # would freeze an unfair split)
    if up == 3 or down == 3 or fabs(4.0 * slope / 10.0) > 0.25 * s.acc.theta * tot / 4:
        return False
    return hi - lo < s.acc.theta * tot / 4


# ---------------------------------------------------------------- partitions

cdef int _append(int32_t** arr, int32_t* n, int32_t* cap, int32_t v) noexcept nogil:
    cdef int32_t* p
    if n[0] == cap[0]:
        p = <int32_t*>realloc(arr[0], (cap[0] * 2 + 4) * sizeof(int32_t))
        if p == NULL:
            return -1
        arr[0] = p
        cap[0] = cap[0] * 2 + 4
    arr[0][n[0]] = v
    n[0] += 1
    return 0


cdef void _remove(int32_t* arr, int32_t* n, int32_t v) noexcept nogil:
    cdef int32_t i
    for i in range(n[0]):
        if arr[i] == v:
            arr[i] = arr[n[0] - 1]
            n[0] -= 1
            return


cdef void memo_note(Sim* s, int kind, int32_t P) noexcept nogil:
    cdef Accel* a = &s.acc
    cdef int64_t* n
    if a.n_mnotes == a.mnotes_cap:
        n = <int64_t*>realloc(a.mnotes, (a.mnotes_cap * 2 + 16) * 3 * sizeof(int64_t))
        if n == NULL:
            s.fail = 1
            return
        a.mnotes = n
        a.mnotes_cap = a.mnotes_cap * 2 + 16
    a.mnotes[3 * a.n_mnotes] = kind
    a.mnotes[3 * a.n_mnotes + 1] = P
    a.mnotes[3 * a.n_mnotes + 2] = a.part_ver[P]
    a.n_mnotes += 1


cdef int32_t part_new(Sim* s) noexcept nogil:
    cdef Accel* a = &s.acc
    cdef int32_t p, cap
    if a.n_free > 0:
        a.n_free -= 1
        a.part_dirty[a.free_parts[a.n_free]] = 0
        return a.free_parts[a.n_free]
    if a.n_parts == a.parts_cap:
        cap = a.parts_cap * 2 + 16
        a.part_flows = <int32_t**>realloc(a.part_flows, cap * sizeof(int32_t*))
        a.part_nf = <int32_t*>realloc(a.part_nf, cap * sizeof(int32_t))
        a.part_cap = <int32_t*>realloc(a.part_cap, cap * sizeof(int32_t))
        a.part_skip = <int32_t*>realloc(a.part_skip, cap * sizeof(int32_t))
        a.part_dirty = <uint8_t*>realloc(a.part_dirty, cap * sizeof(uint8_t))
        a.part_ver = <int32_t*>realloc(a.part_ver, cap * sizeof(int32_t))
        a.part_watch = <uint8_t*>realloc(a.part_watch, cap * sizeof(uint8_t))
        a.free_parts = <int32_t*>realloc(a.free_parts, cap * sizeof(int32_t))
        if (a.part_flows == NULL or a.part_nf == NULL or a.part_cap == NULL or a.part_skip == NULL
                or a.free_parts == NULL or a.part_dirty == NULL or a.part_ver == NULL or a.part_watch == NULL):
            s.fail = 1
            return -1
        for p in range(a.parts_cap, cap):
            a.part_flows[p] = NULL
            a.part_nf[p] = 0
            a.part_cap[p] = 0
            a.part_skip[p] = -1
            a.part_dirty[p] = 0
            a.part_ver[p] = 0
            a.part_watch[p] = 0
        a.parts_cap = cap
    p = a.n_parts
    a.n_parts += 1
    return p


cdef inline void _flow_ports(Sim* s, int32_t fi, int32_t** out, int32_t* n) noexcept nogil:
    """The flow's data ports then its ACK ports are contiguous in s.paths."""
    cdef Flow* f = &s.flows[fi]
    out[0] = &s.paths[f.path_off]
    n[0] = f.path_len + f.rpath_len


cdef void _relabel(Sim* s, int32_t fi, int32_t part) noexcept nogil:
    cdef Accel* a = &s.acc
    cdef int32_t* ports
    cdef int32_t n, i
    a.part_of[fi] = part
    _flow_ports(s, fi, &ports, &n)
    for i in range(n):
        a.port_part[ports[i]] = part


cdef void epoch_near(Sim* s, int32_t fi) noexcept nogil:
    """Flow fi joins, leaves, goes idle or resumes: the goodput of every flow
    that shares one of its ports (and its own) is measured afresh from now on
    (their rate windows keep their samples).  Flows further away in the
    partition keep their span: a change reaches them only through a neighbour,
    whose own fresh span then blocks the partition's skip (l/4 samples) while
    the change travels, and a goodput that moved shows in their halves test."""
    cdef Accel* a = &s.acc
    cdef int32_t* ports
    cdef int32_t n, i, k, q
    _flow_ports(s, fi, &ports, &n)
    if a.win[fi].val != NULL:
        a.win[fi].ep_t = s.now
    for i in range(n):
        for k in range(a.port_nf[ports[i]]):
            q = a.port_flows[ports[i]][k]
            if a.win[q].val != NULL:
                a.win[q].ep_t = s.now


cdef void part_activate(Sim* s, int32_t fi) noexcept nogil:
    """A flow starts sending: merge the partitions its ports touch."""
    cdef Accel* a = &s.acc
    cdef int32_t* ports
    cdef int32_t n, i, j, p, best = -1, other, g
    if a.active[fi]:
        return
    _flow_ports(s, fi, &ports, &n)
    for i in range(n):                       # an unplanned event for a skipping partition: skip back
        p = a.port_part[ports[i]]
        if p >= 0 and a.part_skip[p] >= 0:
            a.back_why = 0
            skip_end(s, a.part_skip[p], False)
            a.back_why = 3
        if p >= 0:
            mirrors_end(s, p)
    for i in range(n):
        p = a.port_part[ports[i]]
        if p >= 0 and (best < 0 or a.part_nf[p] > a.part_nf[best]):
            best = p
    if best < 0:
        best = part_new(s)
        if best < 0:
            return
    for i in range(n):
        other = a.port_part[ports[i]]
        if other >= 0 and other != best:
            a.merges += 1
            if a.part_dirty[other]:
                a.part_dirty[best] = 1
            for j in range(a.part_nf[other]):
                g = a.part_flows[other][j]
                _append(&a.part_flows[best], &a.part_nf[best], &a.part_cap[best], g)
                _relabel(s, g, best)
            a.part_nf[other] = 0
            a.free_parts[a.n_free] = other
            a.n_free += 1
    if _append(&a.part_flows[best], &a.part_nf[best], &a.part_cap[best], fi) != 0:
        s.fail = 1
        return
    for i in range(n):
        if _append(&a.port_flows[ports[i]], &a.port_nf[ports[i]], &a.port_cap[ports[i]], fi) != 0:
            s.fail = 1
            return
    _relabel(s, fi, best)
    a.active[fi] = 1
    a.part_ver[best] += 1
    a.part_watch[best] = 0
    if a.memo:
        memo_note(s, 0, best)
    # a flow too short to fill a window (one sample per ACK, at most one ACK per
    # packet) can never be steady: it keeps no window and costs nothing per ACK
    if s.flows[fi].persistent or s.flows[fi].size >= a.l * <int64_t>s.p.mtu:
        if a.win[fi].val == NULL or s.flows[fi].persistent:
            win_alloc(s, fi)
    epoch_near(s, fi)


cdef void part_deactivate(Sim* s, int32_t fi) noexcept nogil:
    """A flow stops sending: it leaves its partition, which is marked for a
    split check of its own flows."""
    cdef Accel* a = &s.acc
    cdef int32_t* ports
    cdef int32_t n, i, P
    if not a.active[fi]:
        return
    P = a.part_of[fi]
    mirrors_end(s, P)
    epoch_near(s, fi)
    _flow_ports(s, fi, &ports, &n)
    for i in range(n):
        _remove(a.port_flows[ports[i]], &a.port_nf[ports[i]], fi)
        if a.port_nf[ports[i]] == 0:
            a.port_part[ports[i]] = -1
    _remove(a.part_flows[P], &a.part_nf[P], fi)
    a.part_of[fi] = -1
    a.active[fi] = 0
    if not s.flows[fi].persistent:
        win_free(s, fi)
    if a.part_nf[P] == 0:
        a.part_dirty[P] = 0
        a.free_parts[a.n_free] = P
        a.n_free += 1
        return
    a.part_dirty[P] = 1          # split check deferred until the partition is looked at
    a.part_ver[P] += 1
    a.part_watch[P] = 0


cdef void part_split(Sim* s, int32_t P) noexcept nogil:
    """Split check of one partition: its remaining flows' components (BFS over
    its own flows only)."""
    cdef Accel* a = &s.acc
    cdef int32_t* ports
    cdef int32_t n, i, j, k, head, tail, g, h, q, comp, first = 1
    cdef int32_t* pp
    cdef int32_t np_
    a.part_dirty[P] = 0
    a.splits += 1
    mirrors_end(s, P)
    if a.part_nf[P] == 0:
        return
    if a.scratch_cap < a.part_nf[P]:
        a.scratch = <int32_t*>realloc(a.scratch, (a.part_nf[P] + 16) * sizeof(int32_t))
        a.scratch_cap = a.part_nf[P] + 16
        if a.scratch == NULL:
            s.fail = 1
            return
    # copy members, clear marks
    np_ = a.part_nf[P]
    pp = <int32_t*>malloc(np_ * sizeof(int32_t))
    if pp == NULL:
        s.fail = 1
        return
    for i in range(np_):
        pp[i] = a.part_flows[P][i]
        a.mark[pp[i]] = 0
    a.part_nf[P] = 0
    for i in range(np_):
        g = pp[i]
        if a.mark[g]:
            continue
        comp = P if first else part_new(s)
        a.part_ver[comp] += 1
        a.part_watch[comp] = 0
        first = 0
        head = 0
        tail = 0
        a.scratch[tail] = g
        tail += 1
        a.mark[g] = 1
        while head < tail:
            h = a.scratch[head]
            head += 1
            _append(&a.part_flows[comp], &a.part_nf[comp], &a.part_cap[comp], h)
            _relabel(s, h, comp)
            _flow_ports(s, h, &ports, &n)
            for j in range(n):
                for k in range(a.port_nf[ports[j]]):
                    q = a.port_flows[ports[j]][k]
                    if not a.mark[q]:
                        a.mark[q] = 1
                        a.scratch[tail] = q
                        tail += 1
    free(pp)


# ---------------------------------------------------------------- fast-forward

cdef bint _owned(Sim* s, Event* e, int32_t P) noexcept nogil:
    """Events that belong to partition P: its ports' transmissions and wake-ups,
    its flows' packets in flight and timers."""
    cdef Accel* a = &s.acc
    cdef int32_t fl
    if e.kind == EV_TX_DONE or e.kind == EV_NIC_WAKE:
        return a.port_part[e.a] == P
    if e.kind == EV_ARRIVE:
        fl = s.pkts[e.b].flow
        return fl >= 0 and a.active[fl] and a.part_of[fl] == P
    if e.kind == EV_CC_TIMER and (CC_TABLE[s.flows[e.a].cc].fixed_timers >> (e.b & 3)) & 1:
        return False                # keeps its absolute time (DCQCN's increase: see increase_in_skip)
    if e.kind == EV_RTO or e.kind == EV_CC_TIMER:
        return a.active[e.a] and a.part_of[e.a] == P
    return False


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


cdef inline double _rate_between(int64_t ta, int64_t ua, int64_t ia, int64_t tb, int64_t ub,
                                 int64_t ib) noexcept nogil:
    """Acknowledged bytes per ps from (time, snd_una, idle total) a to b; 0 if none."""
    cdef int64_t busy = (tb - ta) - (ib - ia)       # idle gaps between messages do not count
    if busy <= 0 or ub <= ua:
        return 0.0
    return <double>(ub - ua) / <double>busy


cdef int64_t _measure_from(Sim* s, int32_t fi, int64_t* ta, int64_t* ua, int64_t* ia) noexcept nogil:
    """Where the flow's goodput is measured from: its oldest sample, or the
    moment it last started sending, or the first sample since its epoch (w.ep_t:
    a change on one of its ports), whichever is latest.  Sets (time, snd_una, idle
    total) there and returns the number of the first sample after it (w.n if
    there is none)."""
    cdef Accel* a = &s.acc
    cdef FlowWin* w = &a.win[fi]
    cdef int64_t L = a.l, k0 = w.n - L if w.n > L else 0, lo, hi, mid, ep
    ta[0] = w.t[k0 % L]
    ua[0] = w.una[k0 % L]
    ia[0] = w.idl[k0 % L]
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
            if w.t[mid % L] >= ep:
                hi = mid
            else:
                lo = mid + 1
        k0 = lo
        if k0 < w.n:
            ta[0] = w.t[k0 % L]
            ua[0] = w.una[k0 % L]
            ia[0] = w.idl[k0 % L]
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
    m = km % L
    g = _rate_between(ta, ua, ia, s.now, s.flows[fi].snd_una, w.idle_total)
    g1 = _rate_between(ta, ua, ia, w.t[m], w.una[m], w.idl[m])
    g2 = _rate_between(w.t[m], w.una[m], w.idl[m], s.now, s.flows[fi].snd_una, w.idle_total)
    if g <= 0 or g1 <= 0 or g2 <= 0 or fabs(g1 - g2) > a.theta * g:
        a.gp_why = 2
        return 0.0
    return g


cdef int32_t skip_slot(Sim* s) noexcept nogil:
    """A free skip slot (the table grows as needed); -1 if memory ran out."""
    cdef Accel* a = &s.acc
    cdef int32_t i, slot
    for i in range(a.n_skips):
        if a.skips[i].part < 0:
            return i
    a.skips = <Skip*>realloc(a.skips, (a.n_skips * 2 + 4) * sizeof(Skip))
    if a.skips == NULL:
        s.fail = 1
        return -1
    for i in range(a.n_skips, a.n_skips * 2 + 4):
        memset(&a.skips[i], 0, sizeof(Skip))
        a.skips[i].part = -1
    slot = a.n_skips
    a.n_skips = a.n_skips * 2 + 4
    return slot


cdef int64_t INT64_MAX_ACC = 0x7fffffffffffffff


cdef int _gp_reserve(Sim* s, int32_t n) noexcept nogil:
    cdef double* p
    if s.acc.gp_cap < n:
        p = <double*>realloc(s.acc.gp, (n + 16) * sizeof(double))
        if p == NULL:
            s.fail = 1
            return -1
        s.acc.gp = p
        s.acc.gp_cap = n + 16
    return 0


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


cdef inline bint _idle_conn(Flow* f) noexcept nogil:
    """A connection with everything acknowledged: nothing in flight, it just waits."""
    return f.persistent and f.snd_una >= f.size


cdef double _horizon(Sim* s, int32_t P) noexcept nogil:
    """With goodputs s.acc.gp (partition order; idle connections get 0): the
    time until the first sending flow of P runs short of posted data, or -1 if
    a port is paused by PFC, a sending flow has no goodput or no room."""
    cdef Accel* a = &s.acc
    cdef int32_t i, fi
    cdef Flow* f
    cdef int64_t room
    cdef double best = 1e300
    for i in range(a.part_nf[P]):
        fi = a.part_flows[P][i]
        f = &s.flows[fi]
        if _paused(s, fi):
            _reject(a, 0, P)
            return -1
        if _idle_conn(f):
            a.gp[i] = 0.0
            continue
        if a.gp[i] <= 0:
            _reject(a, 12, P)
            return -1
        # nothing may be sent beyond what was posted (message ends inside the skip
        # are reported at their virtual times: note_plan)
        room = _room(s, f)
        if room <= 0:
            _reject(a, 3, P)
            return -1
        if <double>room / a.gp[i] < best:
            best = <double>room / a.gp[i]
    return best


cdef inline void _reject(Accel* a, int k, int32_t P) noexcept nogil:
    """Count a partition not fast-forwarded, by the test that blocked it (REJECT_NAMES)."""
    a.rejects[k] += 1
    a.rej_flows += a.part_nf[P]


cdef void skip_try(Sim* s, int32_t P) noexcept nogil:
    """Fast-forward partition P if it is steady: every sending flow's window is,
    is not ramping and has a steady goodput (into s.acc.gp, partition order),
    and the horizon allows it (_horizon)."""
    cdef Accel* a = &s.acc
    cdef int32_t i, fi, nf
    cdef Flow* f
    cdef FlowWin* w
    cdef int64_t L = a.l
    cdef double best
    if P < 0 or a.part_skip[P] >= 0:
        return
    if a.part_dirty[P]:
        part_split(s, P)
        _reject(a, 5, P)
        return                      # partitions changed: the next sample re-checks
    nf = a.part_nf[P]
    if nf == 0 or _gp_reserve(s, nf) != 0:
        return
    for i in range(nf):
        fi = a.part_flows[P][i]
        f = &s.flows[fi]
        w = &a.win[fi]
        a.gp[i] = 0.0
        if _idle_conn(f):
            continue
        if w.val == NULL or w.n < L or not w.steady or w.n - w.act_n < w.need:
            _reject(a, 8 if w.val == NULL else (7 if w.n < L else (1 if not w.steady else 9)), P)
            return
        # a rate that only rose over the whole window and is below line rate is
        # ramping up (e.g. DCQCN's timer-driven recovery, steps far below theta):
        # a skip would freeze it half way
        if (w.last_dec <= w.n - L and w.val[(w.n - 1) % L] > w.val[w.n % L]
                and CC_TABLE[f.cc].send_rate(s, fi) < f.max_rate):
            _reject(a, 6, P)
            return
        a.gp[i] = _steady_goodput(s, fi)
        if a.gp[i] <= 0:
            _reject(a, a.gp_why, P)
            return
    best = _horizon(s, P)
    if best < 0:
        return
    if a.part_watch[P]:
        a.part_watch[P] = 0
        memo_note(s, 1, P)          # the partition has converged: Python stores the memo entry
    skip_begin(s, P, best)


cdef void memo_follow(Sim* s, int32_t P) noexcept nogil:
    """A memoized convergence of P has ended in its stored state: fast-forward
    at once at the stored steady goodputs (in s.acc.gp, partition order)."""
    cdef Accel* a = &s.acc
    cdef int32_t i
    cdef double best = _horizon(s, P)
    if best >= 0 and skip_begin(s, P, best):
        a.memo_follows += 1
        a.skips[a.part_skip[P]].follow = 1
        for i in range(a.part_nf[P]):
            a.win[a.part_flows[P][i]].need = 0     # the stored goodput stood for a measured one


cdef int32_t _take_events(Sim* s, int32_t P, Skip* sk) noexcept nogil:
    """Move the partition's events from the heap to the skip; -1 if memory ran out."""
    cdef int64_t k, j = 0
    cdef int32_t* ports
    cdef int32_t n, i
    sk.n_ev = 0
    for k in range(s.n_ports):              # its ports' transmission ends and wake-ups, all in the heap
        if s.acc.port_part[k] != P:
            continue
        wake_settle(s, &s.ports[k])
        if s.ports[k].wake_lazy:
            wake_schedule(s, <int32_t>k)
        if port_busy(s, <int32_t>k) and s.ports[k].tx_lazy:
            tx_schedule(s, <int32_t>k)
    for k in range(s.acc.part_nf[P]):       # the partition's packets in flight, all in the heap
        _flow_ports(s, s.acc.part_flows[P][k], &ports, &n)
        for i in range(n):
            wire_flush(s, ports[i])
    for k in range(s.heap_n):
        if _owned(s, &s.heap[k], P):
            if sk.n_ev == sk.cap_ev:
                sk.ev = <Event*>realloc(sk.ev, (sk.cap_ev * 2 + 64) * sizeof(Event))
                if sk.ev == NULL:
                    s.fail = 1
                    return -1
                sk.cap_ev = sk.cap_ev * 2 + 64
            sk.ev[sk.n_ev] = s.heap[k]
            sk.n_ev += 1
        else:
            s.heap[j] = s.heap[k]
            j += 1
    s.heap_n = j
    heap_rebuild(s)
    return 0


cdef inline int64_t _room(Sim* s, Flow* f) noexcept nogil:
    """Bytes a flow may still send packet-free: what was posted, less the margin
    it simulates packet by packet before an interrupt."""
    return f.size - f.snd_nxt - s.acc.margin


cdef bint _members(Sim* s, int32_t P, int32_t* flows, int32_t n) noexcept nogil:
    """flows[0:n] are exactly the flows of partition P, which is not skipping."""
    cdef Accel* a = &s.acc
    cdef int32_t i, fi
    if P < 0 or P >= a.n_parts or a.part_skip[P] >= 0 or a.part_nf[P] != n or a.part_dirty[P]:
        return False
    for i in range(n):
        fi = flows[i]
        if fi < 0 or fi >= s.n_flows or not a.active[fi] or a.part_of[fi] != P:
            return False
    return True


cdef Skip* _skip_alloc(Sim* s, int32_t n, bint memo, int32_t* slot) noexcept nogil:
    """A free skip slot with room for n flows (and, for a memo skip, their
    stored state); NULL if memory ran out."""
    cdef Skip* sk
    cdef int32_t m = n if n > 0 else 1
    slot[0] = skip_slot(s)
    if slot[0] < 0:
        return NULL
    sk = &s.acc.skips[slot[0]]
    if sk.cap_flows < m:
        sk.flows = <int32_t*>realloc(sk.flows, m * sizeof(int32_t))
        sk.goodput = <double*>realloc(sk.goodput, m * sizeof(double))
        sk.cap_flows = m
    if memo:
        sk.memo_cc = <double*>realloc(sk.memo_cc, 4 * m * sizeof(double))
        sk.memo_gp = <double*>realloc(sk.memo_gp, m * sizeof(double))
    if sk.flows == NULL or sk.goodput == NULL or (memo and (sk.memo_cc == NULL or sk.memo_gp == NULL)):
        s.fail = 1
        return NULL
    sk.n_flows = n
    sk.memo = memo
    return sk


cdef int _skip_start(Sim* s, int32_t slot, int32_t P, int64_t t1, int64_t t_limit) noexcept nogil:
    """Start the skip in ``slot`` (flows and goodputs filled): P's events leave
    the heap, its planned end (none if t1 is INT64_MAX) and the message ends
    its flows reach inside it are scheduled.  -1 if memory ran out."""
    cdef Accel* a = &s.acc
    cdef Skip* sk = &a.skips[slot]
    cdef int32_t i
    if _take_events(s, P, sk) != 0:
        return -1
    sk.part = P
    sk.t0 = s.now
    sk.t1 = t1
    sk.t_limit = t_limit
    sk.token += 1
    a.part_skip[P] = slot
    a.skips_started += 1
    sk.note_token = a.skips_started
    if t1 < INT64_MAX_ACC and heap_push(s, t1, EV_SKIP_END, slot, sk.token) != 0:
        s.fail = 1
    for i in range(sk.n_flows):
        note_plan(s, sk.flows[i])
        rcv_plan(s, sk.flows[i])
    return 0


cdef bint skip_begin(Sim* s, int32_t P, double best) noexcept nogil:
    """Fast-forward P with its flows at goodputs s.acc.gp (partition order) until
    ``best`` ps from now (the first flow to run short of posted data) or a known
    flow start touching its ports.  False if that is too close."""
    cdef Accel* a = &s.acc
    cdef int32_t i, j, n, nf = a.part_nf[P], slot
    cdef int32_t* ports
    cdef int64_t t_end = s.now + <int64_t>best, t_limit, k
    cdef Skip* sk
    cdef Event* e
    for k in range(s.heap_n):
        e = &s.heap[k]
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
    sk.follow = 0
    a.skip_flows += nf
    return _skip_start(s, slot, P, t_end, t_limit) == 0


cdef int32_t skip_find(Sim* s, int32_t fi, Skip** out) noexcept nogil:
    """Index of flow fi in the fast-forward of its partition (and the skip), or -1."""
    cdef Accel* a = &s.acc
    cdef int32_t P, i
    cdef Skip* sk
    if not a.on or fi < 0 or fi >= s.n_flows or not a.active[fi]:
        return -1
    P = a.part_of[fi]
    if P < 0 or a.part_skip[P] < 0:
        return -1
    sk = &a.skips[a.part_skip[P]]
    for i in range(sk.n_flows):
        if sk.flows[i] == fi:
            out[0] = sk
            return i
    return -1


cdef int64_t skip_bytes(Sim* s, Skip* sk, int32_t i, int64_t dt) noexcept nogil:
    """Whole packets flow sk.flows[i] has advanced after ``dt`` of its skip (in
    a mirror: what the leader's flow has advanced since the mirror began)."""
    cdef Flow* f = &s.flows[sk.flows[i]]
    cdef int64_t B
    if sk.mirror:
        B = 0 if sk.lead_flows[i] < 0 else (virt_una(s, sk.lead_flows[i]) - sk.lead_una0[i]) // s.p.mtu * s.p.mtu
    else:
        B = <int64_t>(sk.goodput[i] * <double>dt) // s.p.mtu * s.p.mtu
    if B > f.size - f.snd_nxt:
        B = (f.size - f.snd_nxt) // s.p.mtu * s.p.mtu
    return B if B > 0 else 0


cdef int64_t virt_una(Sim* s, int32_t fi) noexcept nogil:
    """snd_una, or inside a fast-forward what it is at the current time."""
    cdef Skip* sk = NULL
    cdef int32_t i = skip_find(s, fi, &sk)
    if i < 0:
        return s.flows[fi].snd_una
    return s.flows[fi].snd_una + skip_bytes(s, sk, i, s.now - sk.t0)


cdef bint note_plan(Sim* s, int32_t fi, int64_t after=-1) noexcept nogil:
    """A skipping connection's pending message end: report it now if passed,
    else plan an EV_MSG_NOTE at the virtual time it is acknowledged if that is
    within the skip (and not before ``after``: a skip that was extended plans
    only the notes its old end left out).  False if the flow is not in a skip."""
    cdef Skip* sk = NULL
    cdef int32_t i = skip_find(s, fi, &sk)
    cdef Flow* f = &s.flows[fi]
    cdef int64_t need, dt
    if i < 0:
        return False
    if not f.persistent or f.msg_end < 0:
        return True
    need = f.msg_end - f.snd_una
    if need <= skip_bytes(s, sk, i, s.now - sk.t0):
        if after < 0:
            note_message(s, fi)
        return True
    if sk.goodput[i] <= 0 or need > f.size - f.snd_nxt:
        return True                 # not before the skip ends: the ACKs after it will tell
    need = (need + s.p.mtu - 1) // s.p.mtu * s.p.mtu
    dt = <int64_t>(<double>need / sk.goodput[i]) + 1
    if sk.t0 + dt < sk.t1 and sk.t0 + dt >= after:
        if heap_push(s, sk.t0 + dt, EV_MSG_NOTE, fi, sk.note_token) != 0:
            s.fail = 1
    return True


cdef int64_t virt_rcv(Sim* s, int32_t fi) noexcept nogil:
    """rcv_nxt, or inside a fast-forward what it is at the current time."""
    cdef Skip* sk = NULL
    cdef int32_t i = skip_find(s, fi, &sk)
    if i < 0:
        return s.flows[fi].rcv_nxt
    return s.flows[fi].rcv_nxt + skip_bytes(s, sk, i, s.now - sk.t0)


cdef bint rcv_plan(Sim* s, int32_t fi, int64_t after=-1) noexcept nogil:
    """note_plan at the receiver: a skipping flow's rcv_end is reported now if passed,
    else an EV_MSG_NOTE (b = -1 - note token) is planned at the virtual time the
    steady goodput delivers it, if within the skip.  False if not in a skip."""
    cdef Skip* sk = NULL
    cdef int32_t i = skip_find(s, fi, &sk)
    cdef Flow* f = &s.flows[fi]
    cdef int64_t need, dt
    if i < 0:
        return False
    if f.rcv_end < 0:
        return True
    need = f.rcv_end - f.rcv_nxt
    if need <= skip_bytes(s, sk, i, s.now - sk.t0):
        if after < 0:
            note_delivered(s, fi)
        return True
    if sk.goodput[i] <= 0 or need > f.size - f.snd_nxt:
        return True                 # not before the skip ends: the packets after it will tell
    need = (need + s.p.mtu - 1) // s.p.mtu * s.p.mtu
    dt = <int64_t>(<double>need / sk.goodput[i]) + 1
    if sk.t0 + dt < sk.t1 and sk.t0 + dt >= after:
        if heap_push(s, sk.t0 + dt, EV_MSG_NOTE, fi, -1 - sk.note_token) != 0:
            s.fail = 1
    return True


cdef bint rcv_note_due(Sim* s, int32_t fi, int64_t token) noexcept nogil:
    """A planned delivery: report it if its skip still runs and the receiver has the bytes."""
    cdef Skip* sk = NULL
    cdef int32_t i = skip_find(s, fi, &sk)
    cdef Flow* f = &s.flows[fi]
    if i < 0 or sk.note_token != token or f.rcv_end < 0:
        return False
    if f.rcv_nxt + skip_bytes(s, sk, i, s.now - sk.t0) < f.rcv_end:
        return False
    note_delivered(s, fi)
    return True


cdef bint msg_note_due(Sim* s, int32_t fi, int64_t token) noexcept nogil:
    """EV_MSG_NOTE: report the message if its skip still runs and it is acknowledged."""
    cdef Skip* sk = NULL
    cdef int32_t i = skip_find(s, fi, &sk)
    cdef Flow* f = &s.flows[fi]
    if i < 0 or sk.note_token != token or f.msg_end < 0:
        return False
    if f.snd_una + skip_bytes(s, sk, i, s.now - sk.t0) < f.msg_end:
        return False
    note_message(s, fi)
    return True


cdef bint skip_extend(Sim* s, int32_t fi, int64_t nbytes) noexcept nogil:
    """Data posted to a connection that is sending through a (non-memo) skip:
    it joins the flow's stream and the skip may last longer (until the data of
    some flow runs short, or a known flow start).  False if the flow is not
    sending through a skip (then the caller skips back)."""
    cdef Skip* sk = NULL
    cdef int32_t i = skip_find(s, fi, &sk), j, slot
    cdef Flow* f
    cdef int64_t t_end, t
    if i < 0 or sk.memo or sk.goodput[i] <= 0:
        return False
    s.flows[fi].size += nbytes
    t_end = sk.t_limit
    for j in range(sk.n_flows):
        if sk.goodput[j] <= 0:
            continue
        f = &s.flows[sk.flows[j]]
        t = sk.t0 + <int64_t>(<double>_room(s, f) / sk.goodput[j])
        if t < t_end:
            t_end = t
    if t_end > sk.t1:
        slot = s.acc.part_skip[sk.part]
        t = sk.t1
        sk.t1 = t_end
        sk.token += 1
        s.acc.skip_extends += 1
        if heap_push(s, t_end, EV_SKIP_END, slot, sk.token) != 0:
            s.fail = 1
        for j in range(sk.n_flows):     # message ends the old end left to the ACKs
            note_plan(s, sk.flows[j], t)
            rcv_plan(s, sk.flows[j], t)
    return True


cdef inline void _shift_packet(Sim* s, Packet* pkt, int64_t dt) noexcept nogil:
    if pkt.kind != PK_PFC and pkt.flow >= 0:
        pkt.seq += s.flows[pkt.flow].skip_shift
        pkt.ts += dt


cdef void skip_end(Sim* s, int32_t slot, bint planned) noexcept nogil:
    cdef Accel* a = &s.acc
    cdef Skip* sk = &a.skips[slot]
    cdef int32_t P = sk.part, i, j, fi, n, q, pk
    cdef int32_t* ports
    cdef int64_t dt = s.now - sk.t0, B, npk, L = a.l, k
    cdef double per
    cdef Flow* f
    cdef FlowWin* w
    cdef Port* pt
    cdef Event e
    cdef bint follow
    if P < 0:
        return
    if sk.mirror:
        _mirror_state(s, sk)        # however it ends, a mirror takes its leader's state
    for i in range(sk.n_flows):
        fi = sk.flows[i]
        f = &s.flows[fi]
        B = skip_bytes(s, sk, i, dt)
        f.skip_shift = B
        f.snd_nxt += B
        f.snd_una += B
        f.max_sent += B
        f.rcv_nxt += B
        f.rcv_bytes += B
        if f.last_nack > 0:
            f.last_nack += B
        if f.nack_timer > 0:
            f.nack_timer += dt
        f.next_avail += dt
        f.rto_mark += B
        CC_TABLE[f.cc].shift(s, fi, B, dt)
        w = &a.win[fi]
        if w.val != NULL:
            for k in range(L if w.n >= L else w.n):
                w.t[k] += dt
                w.una[k] += B
            w.act_t += dt
            w.act_una += B
            if w.ep_t <= sk.t0:
                w.ep_t += dt        # measured in the partition's own (shifted) time
            if w.idle_since >= 0:
                w.idle_since += dt
        npk = B // s.p.mtu
        per = s.ports[s.paths[f.path_off]].wake_per_pkt
        for j in range(f.path_len):
            s.ports[s.paths[f.path_off + j]].tx_bytes += npk * (s.p.mtu + s.p.hdr_bytes)
            s.ports[s.paths[f.path_off + j]].tx_packets += npk
            per += 1.0 + s.ports[s.paths[f.path_off + j]].txd_per_pkt
        for j in range(f.rpath_len):
            s.ports[s.paths[f.rpath_off + j]].tx_bytes += npk * s.p.ack_bytes
            s.ports[s.paths[f.rpath_off + j]].tx_packets += npk
            per += 1.0 + s.ports[s.paths[f.rpath_off + j]].txd_per_pkt
        # each packet: an arrival per hop of data and ACK, the transmission ends that
        # were events there (txd_per_pkt), and the NIC wake-ups that pacing cost per
        # packet before the skip
        npk = <int64_t>(<double>npk * per + 0.5)
        a.events_skipped += npk
        a.skipped_by[3 if sk.mirror else (1 if sk.memo else (2 if sk.follow else 0))] += npk
        a.bytes_skipped += B
    # packets waiting in the partition's queues, then its held events
    for i in range(s.n_ports):
        if a.port_part[i] != P:
            continue
        pt = &s.ports[i]
        if pt.wake_t >= 0:
            pt.wake_t += dt
        for q in range(NQ):
            pk = pt.qhead[q]
            while pk != NO_PKT:
                _shift_packet(s, &s.pkts[pk], dt)
                pk = s.pkts[pk].next
    qsort(sk.ev, sk.n_ev, sizeof(Event), _ev_cmp)
    for k in range(sk.n_ev):
        e = sk.ev[k]
        if e.kind == EV_ARRIVE:
            _shift_packet(s, &s.pkts[e.b], dt)
        if heap_push(s, e.t + dt, e.kind, e.a, e.b) != 0:
            s.fail = 1
    follow = sk.memo and planned and _gp_reserve(s, a.part_nf[P]) == 0
    for i in range(sk.n_flows):
        f = &s.flows[sk.flows[i]]
        f.skip_shift = 0
        if f.persistent and f.msg_end >= 0 and f.snd_una >= f.msg_end:
            note_message(s, sk.flows[i])
        if f.rcv_end >= 0 and f.rcv_nxt >= f.rcv_end:
            note_delivered(s, sk.flows[i])
        if sk.memo and (planned or sk.mirror):
            memo_set_state(s, sk.flows[i], &sk.memo_cc[4 * i])
    if follow:                      # the stored steady goodputs, in partition order
        for j in range(a.part_nf[P]):
            fi = a.part_flows[P][j]
            a.gp[j] = -1.0
            for i in range(sk.n_flows):
                if sk.flows[i] == fi:
                    a.gp[j] = sk.memo_gp[i]
            if a.gp[j] < 0:
                follow = False
    sk.memo = 0
    if sk.mirror:
        sk.mirror = 0
        a.n_mirroring -= 1
    sk.n_ev = 0
    sk.part = -1
    sk.token += 1
    a.part_skip[P] = -1
    # ports that received something while frozen may need a kick
    for i in range(s.n_ports):
        if a.port_part[i] == P and not port_busy(s, i):
            if s.is_switch[s.ports[i].node]:
                switch_try_send(s, i)
            else:
                nic_try_send(s, i)
    a.time_skipped += dt
    if not planned and not sk.parted:
        a.skip_backs += 1
        a.backs_by[a.back_why] += 1
    sk.parted = 0
    sk.follow = 0
    if follow:
        memo_follow(s, P)


cdef inline bint port_frozen(Sim* s, int32_t port) noexcept nogil:
    cdef int32_t p
    if not s.acc.on:
        return False
    p = s.acc.port_part[port]
    return p >= 0 and s.acc.part_skip[p] >= 0


cdef void skip_back_flow(Sim* s, int32_t fi) noexcept nogil:
    """End every fast-forward whose partition uses one of the flow's ports."""
    cdef int32_t* ports
    cdef int32_t n, i, p
    if not s.acc.on:
        return
    _flow_ports(s, fi, &ports, &n)
    for i in range(n):
        p = s.acc.port_part[ports[i]]
        if p >= 0 and s.acc.part_skip[p] >= 0:
            s.acc.back_why = 1
            skip_end(s, s.acc.part_skip[p], False)
            s.acc.back_why = 3


cdef void conn_resume(Sim* s, int32_t fi) noexcept nogil:
    """A connection gets data again: its idle time is left out of its goodput,
    and its partition, which has one more sending flow, is looked up in the
    memo like a newly formed one."""
    cdef Accel* a = &s.acc
    cdef FlowWin* w = &a.win[fi]
    cdef int32_t P = a.part_of[fi]
    if w.idle_since >= 0:
        w.idle_total += s.now - w.idle_since
        w.idle_since = -1
    if P >= 0:
        mirrors_end(s, P)
        a.part_ver[P] += 1
        a.part_watch[P] = 0
        epoch_near(s, fi)
        if a.memo:
            memo_note(s, 0, P)


cdef void memo_set_state(Sim* s, int32_t fi, double* v) noexcept nogil:
    """End of an applied memo entry: the flow takes the stored converged rate and
    congestion-control state; its window is full of that rate (steady)."""
    cdef Flow* f = &s.flows[fi]
    cdef FlowWin* w = &s.acc.win[fi]
    cdef int64_t L = s.acc.l, k, rate = <int64_t>v[0]
    if rate <= 0:
        return
    f.rate = rate
    CC_TABLE[f.cc].set_vec(s, fi, v)
    if w.val != NULL:
        for k in range(L):
            w.val[k] = rate
            w.t[k] = s.now
            w.una[k] = f.snd_una
            w.idl[k] = w.idle_total
        w.n = L
        w.sum = rate * L
        w.qmax[0] = L - 1
        w.qmin[0] = L - 1
        w.maxh = 0
        w.maxt = 1
        w.minh = 0
        w.mint = 1
        w.steady = 1
        w.act_t = s.now
        w.act_una = f.snd_una
        w.act_idl = w.idle_total
        w.act_n = w.n           # goodput is measured afresh, over a whole window, before the next skip
        w.need = L


cdef int memo_start(Sim* s, int32_t P, int64_t dt, int32_t* flows, int64_t* nbytes, double* cc, double* gp,
                    int32_t n) noexcept nogil:
    """Apply a memoized convergence to partition P: a skip of ``dt`` in which
    flow flows[i] advances nbytes[i], ending in the stored state (cc) and then
    fast-forwarding at the stored steady goodputs (gp).  Returns 0, or -1 if the
    partition or the room left does not allow it."""
    cdef int32_t i, j, slot
    cdef Skip* sk
    if dt <= 0 or not _members(s, P, flows, n):
        return -1
    for i in range(n):
        if nbytes[i] > 0 and nbytes[i] > _room(s, &s.flows[flows[i]]):
            return -1
    sk = _skip_alloc(s, n, True, &slot)
    if sk == NULL:
        return -1
    for i in range(n):
        sk.flows[i] = flows[i]
        sk.goodput[i] = (<double>nbytes[i] + 0.5) / <double>dt
        sk.memo_gp[i] = gp[i]
        for j in range(4):
            sk.memo_cc[4 * i + j] = cc[4 * i + j]
    if _skip_start(s, slot, P, s.now + dt, s.now + dt) != 0:
        return -1
    s.acc.memo_applied += 1
    return 0


cdef inline void conn_idle(Sim* s, int32_t fi) noexcept nogil:
    """A connection has nothing left to send (everything acknowledged)."""
    cdef FlowWin* w = &s.acc.win[fi]
    if w.val != NULL and w.idle_since < 0:
        w.idle_since = s.now
        epoch_near(s, fi)
        mirrors_end(s, s.acc.part_of[fi])


# ---------------------------------------------------------------- mirrors

cdef int mirror_start(Sim* s, int32_t P, int32_t lead, int32_t* flows, int32_t* lead_flows,
                      int32_t n) noexcept nogil:
    """Partition P formed at the same moment as partition ``lead``, with an
    isomorphic graph and flows in the same state (flows[i] like lead_flows[i];
    -1 for an idle connection): P is held as a skip whose flows advance as the
    leader's do, until the leader converges (mirror_finish) or changes
    (mirrors_end).  Returns 0, or -1 if the partitions do not allow it."""
    cdef Accel* a = &s.acc
    cdef int32_t i, slot, fi
    cdef Skip* sk
    if lead < 0 or lead >= a.n_parts or P == lead or a.part_dirty[lead] or not _members(s, P, flows, n):
        return -1
    for i in range(n):
        fi = lead_flows[i]
        if fi >= s.n_flows or (fi >= 0 and (not a.active[fi] or a.part_of[fi] != lead)):
            return -1
    sk = _skip_alloc(s, n, True, &slot)
    if sk == NULL:
        return -1
    sk.lead_flows = <int32_t*>realloc(sk.lead_flows, (n if n > 0 else 1) * sizeof(int32_t))
    sk.lead_una0 = <int64_t*>realloc(sk.lead_una0, (n if n > 0 else 1) * sizeof(int64_t))
    if sk.lead_flows == NULL or sk.lead_una0 == NULL:
        s.fail = 1
        return -1
    for i in range(n):
        sk.flows[i] = flows[i]
        sk.goodput[i] = 0.0             # no planned message notes: the leader's tell (mirrors_end)
        sk.lead_flows[i] = lead_flows[i]
        sk.lead_una0[i] = virt_una(s, lead_flows[i]) if lead_flows[i] >= 0 else 0
    sk.mirror = 1
    sk.lead_part = lead
    sk.lead_ver = a.part_ver[lead]
    if _skip_start(s, slot, P, INT64_MAX_ACC, INT64_MAX_ACC) != 0:
        sk.mirror = 0
        return -1
    a.mirrors += 1
    a.n_mirroring += 1
    return 0


cdef void _mirror_state(Sim* s, Skip* sk) noexcept nogil:
    """The state a mirror ends in: its leader's flows' congestion-control state
    (and their NICs' pacing record, which counts the skipped wake-ups)."""
    cdef int32_t i, k
    cdef Flow* f
    cdef Flow* g
    for i in range(sk.n_flows):
        if sk.lead_flows[i] >= 0:
            cc_vector(s, sk.lead_flows[i], &sk.memo_cc[4 * i])
            f = &s.flows[sk.flows[i]]
            g = &s.flows[sk.lead_flows[i]]
            s.ports[s.paths[f.path_off]].wake_per_pkt = s.ports[s.paths[g.path_off]].wake_per_pkt
            s.ports[s.paths[f.path_off]].wake_samples = s.ports[s.paths[g.path_off]].wake_samples
        else:
            for k in range(4):
                sk.memo_cc[4 * i + k] = 0.0


cdef void mirrors_end(Sim* s, int32_t P) noexcept nogil:
    """Partition P is about to change (its flows, or a message of theirs ends):
    the partitions mirroring it end now, in its current state."""
    cdef Accel* a = &s.acc
    cdef int32_t i
    if a.n_mirroring == 0 or P < 0:
        return
    for i in range(a.n_skips):
        if a.skips[i].part >= 0 and a.skips[i].mirror and a.skips[i].lead_part == P:
            a.skips[i].parted = 1
            skip_end(s, i, False)


cdef int32_t mirror_finish(Sim* s, int32_t lead) noexcept nogil:
    """The leader has converged: its mirrors end as a replayed convergence would
    (its state), then fast-forward at its steady goodputs.  Returns how many."""
    cdef Accel* a = &s.acc
    cdef int32_t i, j, k, lf, done = 0
    cdef Skip* sk
    cdef Skip* lsk = NULL
    if a.n_mirroring == 0 or lead < 0:
        return 0
    for i in range(a.n_skips):
        sk = &a.skips[i]
        if sk.part < 0 or not sk.mirror or sk.lead_part != lead:
            continue
        for j in range(sk.n_flows):
            lf = sk.lead_flows[j]
            sk.memo_gp[j] = 0.0
            if lf >= 0:
                k = skip_find(s, lf, &lsk)
                sk.memo_gp[j] = lsk.goodput[k] if k >= 0 else _steady_goodput(s, lf)
        a.mirrors_done += 1
        done += 1
        skip_end(s, i, True)
    return done
