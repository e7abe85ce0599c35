# Mirrors (included by accel.pyx).  Contract: a partition that formed at the same moment
# as an isomorphic twin in the same state is held as a skip whose flows advance as the
# twin's do (mirror_start, skip_bytes); it ends in the twin's state when the twin
# converges (mirror_finish, then a steady skip at its goodputs) or changes (mirrors_end).


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
            s.acc.k.cc_vector(s, sk.lead_flows[i], &sk.memo_cc[4 * i])
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
