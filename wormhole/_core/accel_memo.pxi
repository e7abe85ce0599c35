# Memo replays (included by accel.pyx).  Contract: memo notices to Python (memo_note:
# a partition formed or converged), a stored convergence replayed as a skip of fixed
# length with fixed bytes per flow (memo_start), its end state set (memo_set_state), and
# the steady skip at the stored goodputs that follows it (memo_follow).


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


cdef void memo_set_state(Sim* s, int32_t fi, double* v) noexcept nogil:
    """End of an applied memo entry: the flow takes the stored converged rate and
    congestion-control state; its window is full of that rate (steady)."""
    cdef Flow* f = &s.flows[fi]
    cdef FlowWin* w = &s.acc.win[fi]
    cdef int64_t L = s.acc.l, k, rate = <int64_t>v[0]
    if rate <= 0:
        return
    f.rate = rate
    s.acc.k.cc[f.cc].set_vec(s, fi, v)
    if w.val != NULL:
        for k in range(L):
            w.val[k] = rate
            w.t[k] = s.now
            w.una[k] = f.snd_una
            w.idl[k] = w.idle_total
        w.n = L
        w.sum = rate * L
        w.hsum = rate * (L // 2)
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
    partition or the room left does not allow it, or if an event of the partition
    is still due at this moment (_moment_open): twins part way through it, e.g. one
    NIC's transmission end of this picosecond taken and the others' not, would take
    the same stored bytes and state from different starts."""
    cdef int32_t i, j, slot
    cdef Skip* sk
    if dt <= 0 or not _members(s, P, flows, n) or _moment_open(s, P):
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
