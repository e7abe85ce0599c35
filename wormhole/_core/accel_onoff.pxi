# On/off members of a steady skip (included by accel.pyx).  Contract: a flow of a
# partition whose data path shares no port with another of its flows' data (a ring's
# connection whose only coupling to the others is ACKs) may run out of posted data and
# resume inside the skip instead of ending it (_data_alone, accel_steady.pxi; chosen by skip_try).  Its
# bytes move at its measured goodput while it has data and stop when it has moved all of
# it; data posted to it after that starts a new run at the moment of the post
# (onoff_resume), so it never moves faster than its goodput.  At the skip's end it is
# placed at most at the tail of its posted data with the packets it had in flight at the
# start still in flight (skip_bytes): the part of a run beyond that is given back, never
# taken in advance.


cdef void _onoff_mark(Sim* s, int32_t P) noexcept nogil:
    """s.acc.oo (partition order): the on/off members of a skip of P begun now.  Only
    when no two sending flows of P share a data port (each flow's rate is set by its own
    path, the others couple to it only through ACKs) and every sending flow has a goodput
    over a steady cycle of the ring (cycle_goodput: the others' goodputs move with the
    members' idle spells, through the queues their ACKs share), its connections that were
    idle in their own last cycle (cycle_idle, into s.acc.lim: how long each may stay out of
    data in the skip) and are not steady by their quarter goodputs alone (FlowWin.gp_steady);
    their goodputs (s.acc.gp) are then those cycles'.  Else none, and
    the goodputs stay as measured."""
    cdef Accel* a = &s.acc
    cdef int32_t i, fi, nf = a.part_nf[P]
    cdef bint any_
    for i in range(nf):
        a.oo[i] = 0
        a.lim[i] = 0
    for i in range(nf):
        fi = a.part_flows[P][i]
        if not _idle_conn(&s.flows[fi]) and not _data_alone(s, P, fi):
            return
    any_ = False
    for i in range(nf):
        fi = a.part_flows[P][i]
        any_ = any_ or (a.win[fi].gap > 0 and not _idle_conn(&s.flows[fi]))
    if not any_:
        return
    a.onoff_tests += 1
    for i in range(nf):             # every sending flow's goodput over a steady cycle of the ring
        fi = a.part_flows[P][i]
        if a.cycle and a.cm[i]:
            a.cg[i] = a.gp[i]           # (a cycle member's own, from skip_try)
        elif not _idle_conn(&s.flows[fi]) and not cycle_goodput(s, fi, a.theta, &a.cg[i]):
            return
    for i in range(nf):
        fi = a.part_flows[P][i]
        a.lim[i] = cycle_idle(s, fi)
        # a flow steady by its quarter goodputs (its rate swings around a share) is not carried
        # through idle spells: its goodput is an average over its swing while it sends
        a.oo[i] = a.lim[i] > 0 and not _idle_conn(&s.flows[fi]) and not a.win[fi].gp_steady
        if a.oo[i]:
            a.gp[i] = _first_run_rate(s, fi, a.cg[i])
        elif not _idle_conn(&s.flows[fi]):
            a.gp[i] = a.cg[i]


cdef double _first_run_rate(Sim* s, int32_t fi, double gc) noexcept nogil:
    """The goodput of an on/off member's run under way when its skip begins.  Its cycle
    goodput ``gc`` is a whole run's (bytes over busy time, from the resume, its ramp
    included), so the run moves its bytes at the pace that ends it when a run of that
    cycle begun at its resume would end: the rest of its posted data over what remains of
    that time (moving the rest at gc from now would count the run's first part, ramp and
    all, twice).  Never below gc, never above its first port's line rate; gc itself
    unless the flow has been sending since its last resume (its latest own anchor).
    Anchors keep real time and bytes through skips (_shift_window), so a run that a
    skip interrupted counts the skip's part."""
    cdef FlowWin* w = &s.acc.win[fi]
    cdef Flow* f = &s.flows[fi]
    cdef int64_t rem = f.size - f.snd_una
    cdef int64_t idx[1]
    cdef double t_end, r, line
    if w.val == NULL or w.idle_since >= 0 or rem <= 0 or gc <= 0 or _last_anchors(w, fi, 1, idx) < 1:
        return gc
    if w.anc_i[idx[0]] != w.idle_total:
        return gc                       # idle since its last resume (no run under way from it)
    t_end = <double>w.anc_t[idx[0]] + <double>(f.snd_una - w.anc_u[idx[0]] + rem) / gc
    line = <double>s.ports[s.paths[f.path_off]].rate_bps / 8e12
    r = line if t_end <= <double>s.now else <double>rem / (t_end - <double>s.now)
    if r > line:
        r = line
    return r if r > gc else gc


cdef inline void _anchor(Sim* s, int32_t q, int32_t cause) noexcept nogil:
    cdef FlowWin* w = &s.acc.win[q]
    cdef int64_t k
    if w.val == NULL:
        return
    if w.anc_n > 0:
        k = (w.anc_n - 1) % ANC_N
        if w.anc_c[k] == cause and w.anc_t[k] == s.now:
            return                  # (one anchor per resume, however many ports they share)
    k = w.anc_n % ANC_N
    w.anc_t[k] = s.now
    w.anc_u[k] = s.flows[q].snd_una
    w.anc_i[k] = w.idle_total
    w.anc_c[k] = cause
    w.anc_n += 1


cdef void anchor_near(Sim* s, int32_t fi) noexcept nogil:
    """Connection fi resumes after an idle spell: every flow sharing one of its ports
    (and fi) takes a cycle anchor (its time, snd_una, idle total, and fi)."""
    cdef Accel* a = &s.acc
    cdef int32_t* ports
    cdef int32_t n, i, k
    _flow_ports(s, fi, &ports, &n)
    _anchor(s, fi, fi)
    for i in range(n):
        for k in range(a.port_nf[ports[i]]):
            _anchor(s, a.port_flows[ports[i]][k], fi)


cdef inline int32_t _last_anchors(FlowWin* w, int32_t cause, int32_t want, int64_t* idx) noexcept nogil:
    """The ring positions of the flow's latest ``want`` anchors given by resumes of
    connection ``cause``, newest first, in idx; how many were found."""
    cdef int64_t j = w.anc_n - 1, lo = w.anc_n - ANC_N if w.anc_n > ANC_N else 0
    cdef int32_t found = 0
    while j >= lo and found < want:
        if w.anc_c[j % ANC_N] == cause:
            idx[found] = j % ANC_N
            found += 1
        j -= 1
    return found


cdef int64_t cycle_idle(Sim* s, int32_t fi) noexcept nogil:
    """How long connection fi was idle in its own last cycle (between its last two
    resumes, from its own anchors), ps; 0 if it has not resumed twice within them."""
    cdef FlowWin* w = &s.acc.win[fi]
    cdef int64_t idx[2]
    if w.val == NULL or _last_anchors(w, fi, 2, idx) < 2:
        return 0
    return w.anc_i[idx[0]] - w.anc_i[idx[1]]


cdef bint cycle_goodput(Sim* s, int32_t q, double theta, double* g) noexcept nogil:
    """The flow's goodput over the last whole cycle of the connection whose resume gave
    its latest anchor (between that connection's last two resumes), if the cycle before
    agrees within theta (a steady cycle); False if there are not three such anchors."""
    cdef FlowWin* w = &s.acc.win[q]
    cdef int64_t idx[3]
    cdef double g1, g0
    if w.val == NULL or w.anc_n < 3 or _last_anchors(w, w.anc_c[(w.anc_n - 1) % ANC_N], 3, idx) < 3:
        s.acc.onoff_no_cycle += 1
        return False
    if not _two_cycles(w, idx, theta, g):
        s.acc.onoff_unsteady += 1
        return False
    return True


cdef inline bint _two_cycles(FlowWin* w, int64_t* idx, double theta, double* g) noexcept nogil:
    """The goodput between anchors idx[1] and idx[0] (newest first) into g, if the one
    between idx[2] and idx[1] agrees with it within theta."""
    cdef double g1, g0
    g1 = _rate_between(w.anc_t[idx[1]], w.anc_u[idx[1]], w.anc_i[idx[1]],
                       w.anc_t[idx[0]], w.anc_u[idx[0]], w.anc_i[idx[0]])
    g0 = _rate_between(w.anc_t[idx[2]], w.anc_u[idx[2]], w.anc_i[idx[2]],
                       w.anc_t[idx[1]], w.anc_u[idx[1]], w.anc_i[idx[1]])
    if g1 <= 0 or g0 <= 0 or fabs(g1 - g0) > theta * g1:
        return False
    g[0] = g1
    return True


cdef bint own_cycle(Sim* s, int32_t fi, double theta, double* g) noexcept nogil:
    """Connection fi's goodput over its own last cycle (from its last resume but one to its
    last: bytes over busy time, the ramp after the resume included) into g, when it has
    been sending since its last resume, was idle in that cycle (cycle_idle), the cycle
    before it agrees within theta, the two
    cycles and the run under way carry the same bytes to within a packet (a periodic
    state: a ring's equal chunks, each sent after an idle wait for the predecessor's), and
    the run under way is on that cycle's schedule: what it has left, moved so that it ends
    when a run of the cycle begun at its resume would (_first_run_rate), moves at most
    (1 + theta) times the cycle's goodput (a run behind it would be moved faster than
    anything measured of it)."""
    cdef FlowWin* w = &s.acc.win[fi]
    cdef Flow* f = &s.flows[fi]
    cdef int64_t idx[3]
    cdef int64_t b0, b1, b2
    cdef double t_end
    if (w.val == NULL or w.idle_since >= 0 or _last_anchors(w, fi, 3, idx) < 3
            or w.anc_i[idx[0]] != w.idle_total or w.anc_i[idx[0]] <= w.anc_i[idx[1]]):
        return False                # (not sending, no two cycles, idle since its resume, or no idle spell)
    b2 = f.size - w.anc_u[idx[0]]
    b1 = w.anc_u[idx[0]] - w.anc_u[idx[1]]
    b0 = w.anc_u[idx[1]] - w.anc_u[idx[2]]
    if b1 <= 0 or llabs(b1 - b0) > s.p.mtu or llabs(b2 - b1) > s.p.mtu or not _two_cycles(w, idx, theta, g):
        return False
    t_end = <double>w.anc_t[idx[0]] + <double>b2 / g[0]
    return t_end > <double>s.now and <double>(f.size - f.snd_una) <= (1.0 + theta) * g[0] * (t_end - <double>s.now)


cdef bint _cycle_member(Sim* s, int32_t P, int32_t fi, double* g) noexcept nogil:
    """Connection fi, its rate window or window goodput not steady, may join a skip of P as
    an on/off member at its own cycle goodput g (steady_cycle): it cycles, its own last two
    cycles agree and its run under way keeps to them (own_cycle),
    its data shares no port with another flow's of P, and P leads no mirror.  A mirrored
    leader's mirrors end exactly in its state only when it goes quiet; a member carried
    through its idle spells keeps the leader's skip going, so its mirrors still follow it
    when unrelated posts come, and part there (measured: moe --gpus 128 processed 1.11 G
    events instead of 70.6 M, its iteration 0.9% long; ending the leader's skip when such a
    member runs dry instead: 250 M events, 2.2% long)."""
    return (s.acc.cycle and s.flows[fi].persistent and own_cycle(s, fi, s.acc.theta, g)
            and _data_alone(s, P, fi) and not _led(s, P))


cdef int _oo_reserve(Sim* s, Skip* sk, int32_t n) noexcept nogil:
    """The skip's on/off arrays hold n flows; -1 if memory ran out."""
    cdef int32_t m = n if n > 0 else 1
    if sk.cap_oo < m:
        if (_grow(<void**>&sk.onoff, m * sizeof(uint8_t)) != 0 or _grow(<void**>&sk.run_t, m * sizeof(int64_t)) != 0
                or _grow(<void**>&sk.run_b, m * sizeof(int64_t)) != 0
                or _grow(<void**>&sk.run_r, m * sizeof(int64_t)) != 0
                or _grow(<void**>&sk.dry_lim, m * sizeof(int64_t)) != 0
                or _grow(<void**>&sk.cyc_g, m * sizeof(double)) != 0):
            s.fail = 1
            return -1
        sk.cap_oo = m
    return 0


cdef inline bint _is_onoff(Skip* sk, int32_t i) noexcept nogil:
    return sk.has_onoff and not sk.memo and not sk.mirror and sk.onoff[i]


cdef inline int64_t _run_moved(Sim* s, Skip* sk, int32_t i, int64_t t) noexcept nogil:
    """Whole packets an on/off member has moved since its current run began, by time t."""
    if t <= sk.run_t[i]:
        return 0
    return <int64_t>(sk.goodput[i] * <double>(t - sk.run_t[i])) // s.p.mtu * s.p.mtu


cdef int64_t onoff_acked(Sim* s, Skip* sk, int32_t i, int64_t t) noexcept nogil:
    """Bytes an on/off member has had acknowledged in the skip by time t: its runs at its
    goodput, up to all its posted data."""
    cdef Flow* f = &s.flows[sk.flows[i]]
    cdef int64_t B = sk.run_b[i] + _run_moved(s, sk, i, t)
    if B > f.size - f.snd_una:
        B = f.size - f.snd_una
    return B if B > 0 else 0


cdef int64_t onoff_delivered(Sim* s, Skip* sk, int32_t i, int64_t t) noexcept nogil:
    """Bytes an on/off member's receiver has got in the skip by time t (ahead of the
    sender by what was in flight at the start; after a resume, from what it held)."""
    cdef Flow* f = &s.flows[sk.flows[i]]
    cdef int64_t B = sk.run_r[i] + _run_moved(s, sk, i, t)
    if B > f.size - f.rcv_nxt:
        B = f.size - f.rcv_nxt
    return B if B > 0 else 0


cdef int64_t onoff_note_time(Sim* s, Skip* sk, int32_t i, int64_t need, bint rcv) noexcept nogil:
    """When an on/off member (sender, or receiver if rcv) reaches ``need`` bytes of the
    skip in its current run (-1: it had them when the run began)."""
    cdef int64_t base = sk.run_r[i] if rcv else sk.run_b[i]
    need -= base
    if need <= 0:
        return -1
    need = (need + s.p.mtu - 1) // s.p.mtu * s.p.mtu
    return sk.run_t[i] + <int64_t>(<double>need / sk.goodput[i]) + 1


cdef void onoff_resume(Sim* s, Skip* sk, int32_t i) noexcept nogil:
    """Data is posted to an on/off member (before its size grows): if it has moved all
    it had, a new run begins now from there."""
    cdef Flow* f = &s.flows[sk.flows[i]]
    cdef int64_t moved = _run_moved(s, sk, i, s.now)
    if sk.run_b[i] + moved < f.size - f.snd_una:
        if sk.goodput[i] != sk.cyc_g[i]:    # still sending its first run, paced for the data it had:
            sk.run_b[i] += moved            # the rest of it and the new data go on at the cycle goodput
            sk.run_r[i] += moved
            sk.run_t[i] = s.now
            sk.goodput[i] = sk.cyc_g[i]
        return                              # still sending: the data joins its stream
    sk.run_b[i] = f.size - f.snd_una
    sk.run_r[i] = f.size - f.rcv_nxt
    sk.run_t[i] = s.now
    sk.goodput[i] = sk.cyc_g[i]
    s.acc.onoff_resumes += 1


cdef int64_t onoff_dry_time(Sim* s, Skip* sk, int32_t i) noexcept nogil:
    """When an on/off member will have had all its posted data acknowledged (its dry
    spell begins), at its goodput in its current run."""
    cdef Flow* f = &s.flows[sk.flows[i]]
    cdef int64_t need = f.size - f.snd_una - sk.run_b[i]
    if need <= 0:
        return sk.run_t[i]
    need = (need + s.p.mtu - 1) // s.p.mtu * s.p.mtu
    return sk.run_t[i] + <int64_t>(<double>need / sk.goodput[i]) + 1


cdef int64_t onoff_bound(Sim* s, Skip* sk, int64_t t_end) noexcept nogil:
    """The skip's planned end given its flows' posted data (at most t_end): the first
    flow that is no on/off member running short (as without on/off members), or an
    on/off member staying out of data longer than it was idle in its last cycle before the
    skip (dry_lim: its neighbours' goodputs stand for the cycle they were measured in; a
    connection that stops cycling, e.g. after a collective's last message, ends it)."""
    cdef int32_t j
    cdef Flow* f
    cdef int64_t t
    for j in range(sk.n_flows):
        if sk.goodput[j] <= 0:
            continue
        f = &s.flows[sk.flows[j]]
        if _is_onoff(sk, j):
            t = onoff_dry_time(s, sk, j) + sk.dry_lim[j]
        else:
            t = sk.t0 + <int64_t>(<double>_room(s, f) / sk.goodput[j])
        if t < t_end:
            t_end = t
    return t_end
