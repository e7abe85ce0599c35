# Rate windows (included by accel.pyx).  Contract: per active flow a FlowWin (defs.pxd) of
# its last Accel.l rate samples, one per ACK (win_push, O(1) with monotonic deques), with
# the time, snd_una and idle total at each; FlowWin.steady says whether the window is
# steady (spread below theta, or its quarter goodputs agree), and a sample that finds it
# steady asks for a skip of the flow's partition (skip_try).  Buffers are pooled.


cdef int win_alloc(Sim* s, int32_t fi) noexcept nogil:
    cdef FlowWin* w = &s.acc.win[fi]
    cdef int64_t C = s.acc.lmask + 1
    cdef int64_t* buf
    if w.val == NULL:
        if s.acc.n_pool > 0:
            s.acc.n_pool -= 1
            buf = s.acc.pool[s.acc.n_pool]
        else:
            buf = <int64_t*>malloc(6 * C * sizeof(int64_t))
            if buf == NULL:
                s.fail = 1
                return -1
        w.val = buf
        w.t = buf + C
        w.una = buf + 2 * C
        w.qmax = buf + 3 * C
        w.qmin = buf + 4 * C
        w.idl = buf + 5 * C
    w.n = 0
    w.sum = 0
    w.hsum = 0
    w.act_t = s.now
    w.act_una = s.flows[fi].snd_una
    w.act_n = 0
    w.act_idl = 0
    w.need = 0
    w.last_dec = -1
    w.ep_t = s.now
    w.idle_total = 0
    w.idle_since = -1
    w.gap = -1
    w.anc_n = 0
    w.maxh = 0
    w.maxt = 0
    w.minh = 0
    w.mint = 0
    w.steady = 0
    w.gp_steady = 0
    return 0


cdef void win_free(Sim* s, int32_t fi) noexcept nogil:
    """Return the window's buffer to the pool (one allocation holds its six rings)."""
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
    """One rate sample; O(1).  May start a fast-forward of the flow's partition.  (accel.pxd's
    window_prefetch loads the lines this reads and writes, as the ACK reaches the sender.)"""
    cdef Accel* a = &s.acc
    cdef FlowWin* w = &a.win[fi]
    cdef int64_t L = a.l, M = a.lmask, k = w.n, pos = k & M, mx, mn
    cdef bint steady, flip = False
    cdef double g
    if w.val == NULL:
        return
    if k >= L:
        w.sum -= w.val[(k - L) & M]             # the sample leaving the window
        if w.maxt > w.maxh and w.qmax[w.maxh & M] <= k - L:
            w.maxh += 1
        if w.mint > w.minh and w.qmin[w.minh & M] <= k - L:
            w.minh += 1
    if k > 0 and rate < w.val[(k - 1) & M]:
        w.last_dec = k
    if k >= L // 2:
        w.hsum -= w.val[(k - L // 2) & M]       # that sample passes to the older half
    w.val[pos] = rate
    w.t[pos] = s.now
    w.una[pos] = s.flows[fi].snd_una
    w.idl[pos] = w.idle_total
    w.sum += rate
    w.hsum += rate
    while w.maxt > w.maxh and w.val[w.qmax[(w.maxt - 1) & M] & M] <= rate:
        w.maxt -= 1
    w.qmax[w.maxt & M] = k
    w.maxt += 1
    while w.mint > w.minh and w.val[w.qmin[(w.mint - 1) & M] & M] >= rate:
        w.mint -= 1
    w.qmin[w.mint & M] = k
    w.mint += 1
    w.n = k + 1
    if w.n < L:
        return
    mx = w.val[w.qmax[w.maxh & M] & M]
    mn = w.val[w.qmin[w.minh & M] & M]
    steady = <double>(mx - mn) < a.theta * (<double>w.sum / <double>L) and not _drifting(w, L, a.theta)
    if not steady and a.quarters:
        if w.n % a.check_every == 0:
            w.gp_steady = _quarters_steady(s, fi) and (a.quarters == 2 or _data_alone(s, a.part_of[fi], fi))
        steady = w.gp_steady
    else:
        w.gp_steady = 0
    if steady and not w.steady:
        a.steady_periods += 1
        flip = True
    w.steady = steady
    if steady and (flip or w.n % a.check_every == 0):
        skip_try(s, a.part_of[fi])
    elif not steady and a.cycle and w.n % a.check_every == 0 and _cycle_member(s, a.part_of[fi], fi, &g):
        skip_try(s, a.part_of[fi])      # a ring connection steady by its cycles (steady_cycle)


cdef inline bint _drifting(FlowWin* w, int64_t L, double theta) noexcept nogil:
    """The rates of the window's two halves differ in mean by more than a quarter of
    theta of the window's mean: a trend (carried over one more window, more than half
    of theta) within a spread below theta, i.e. a convergence still under way, not a
    steady state (HPCC's Rc moving towards a fair share among ECMP-collided flows
    spreads less than theta over a window while the share still moves)."""
    cdef int64_t h = L // 2
    cdef double new_mean, old_mean
    if h < 1 or L - h < 1:
        return False
    new_mean = <double>w.hsum / <double>h
    old_mean = <double>(w.sum - w.hsum) / <double>(L - h)
    return fabs(new_mean - old_mean) > 0.25 * theta * (<double>w.sum / <double>L)


cdef bint _quarters_steady(Sim* s, int32_t fi) noexcept nogil:
    """The window's goodput is steady: the acknowledged bytes per busy ps of each
    quarter of the window (by sample) agree within theta of their mean.  Under
    contention, rates oscillate around a share (HPCC's and DCQCN's sawtooth,
    TIMELY's gradient steps) by more than theta between samples while the
    throughput over each quarter, many periods long, stays put; the skip then
    moves the flow at its measured goodput (_steady_goodput), never faster."""
    cdef FlowWin* w = &s.acc.win[fi]
    cdef int64_t L = s.acc.l, M = s.acc.lmask, q, a0, b0
    cdef double g, prev = 0.0, lo = 1e300, hi = 0.0, tot = 0.0, slope = 0.0
    cdef int up = 0, down = 0
    if L < 8 or w.n < L:
        return False
    # each quarter must hold at least two periods of the CC's slowest control
    # loop (gp_span is eight), or its goodput reflects the phase of the cycle it
    # caught (DCQCN's rate-increase timer outlasts a window: measured 7% too fast on a 2-flow bottleneck)
    if w.t[(w.n - 1) & M] - w.t[(w.n - L) & M] < s.acc.gp_span:
        return False
    for q in range(4):
        a0 = (w.n - L + q * L // 4) & M
        b0 = (w.n - L + (q + 1) * L // 4) & M if q < 3 else (w.n - 1) & M
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
    if hi - lo >= s.acc.theta * tot / 4:
        return False
    # a rate that has settled within theta over the window's later half is not oscillating
    # around a share: it is leaving a transient (e.g. a ring flow's first 40 us after a
    # message starts), which the spread test waits out, where the goodput of a window
    # still holding its tail is off by it (0.9% faster: rail-local gpt13b HPCC ended 0.19%
    # early on it)
    return not _half_settled(w, L, M, s.acc.theta)


cdef inline int64_t _from(int64_t* q, int64_t h, int64_t t, int64_t M, int64_t lo) noexcept nogil:
    """The first position of a monotonic deque q[h:t] (a ring of M + 1) holding a sample
    number at or after lo: its value is the extreme of the samples from lo on."""
    cdef int64_t mid
    while h < t:
        mid = (h + t) // 2
        if q[mid & M] >= lo:
            t = mid
        else:
            h = mid + 1
    return h


cdef bint _half_settled(FlowWin* w, int64_t L, int64_t M, double theta) noexcept nogil:
    """The rate samples of the window's later half spread less than theta of their mean
    (its extremes from the window's deques, its sum w.hsum)."""
    cdef int64_t h = L // 2, lo = w.n - L // 2
    cdef int64_t mx, mn
    if h < 1:
        return False
    mx = w.val[w.qmax[_from(w.qmax, w.maxh, w.maxt, M, lo) & M] & M]
    mn = w.val[w.qmin[_from(w.qmin, w.minh, w.mint, M, lo) & M] & M]
    return <double>(mx - mn) < theta * <double>w.hsum / <double>h
